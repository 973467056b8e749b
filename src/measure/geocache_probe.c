/* SPDX-License-Identifier: MIT */
/*
 * The cache tests: look-behind, read-ahead size, segment count and cache size (see
 * diskgeo/geocache.h). Each decision is taken from several trials at fresh random places (so
 * that no earlier trial's data can be in any segment), and a trial is a hit when it completes
 * under the hit threshold of geocache.c (the hit's median plus T/8). A probe that may be a miss
 * is submitted after a random idle in [0, T) (gc_random_phase): otherwise its rotational wait
 * would be set by the probe's distance and the fixed waits before it, the same in every trial,
 * and a distance whose miss happens to find its sector coming round would pass for a hit every
 * time; with it a miss looks like a hit with probability 1/8 at most, independently per trial.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "geocache_priv.h"
#include "util.h"

#define LB_TRIALS   7u
#define RA_MAX	    (64ull << 20) /* read-ahead searched up to this */
#define RA_FIRST    (16u << 10)	  /* the first step of the read-ahead gallop */
#define SEG_MAX	    64u		  /* segments tried up to this */
#define SIZE_FIRST  (32ull << 20) /* the first stream of the cache-size scan */
#define SIZE_STEP   1.25	  /* the coarse scan's growth per probe */
#define SIZE_FINE   1.02	  /* the fine scan's */
#define SIZE_RUNS   3u
#define PLACE_TRIES 8u /* places tried when reads fail */

/*
 * Look-behind (DIXtrac, Schindler & Ganger 2000): read A, then at once the block two before it.
 * A drive that keeps what passed under the head while it waited for A has it (a hit); one that
 * does not must wait almost a revolution for it. Whole-track buffering answers the same way, so
 * "look_behind" covers both. The majority of LB_TRIALS trials decides.
 */
int gc_look_behind(struct gc *g)
{
	struct dg_geocache *r = g->out;
	unsigned hits = 0, n = 0, fails = 0;
	double a;
	int rc;

	while (n < LB_TRIALS) {
		uint64_t p = gc_place(g, 1u << 20) + 2ull * g->b;
		rc = gc_read(g, p, g->b, 0, &a);
		if (rc == 0)
			rc = gc_read(g, p - 2ull * g->b, g->b, 0, &a);
		if (rc == 1 && ++fails < PLACE_TRIES)
			continue;
		if (rc == 1) {
			gc_note(g, "look-behind not measured: reads failed");
			return 0;
		}
		if (rc)
			return rc;
		hits += a < g->hit_thr;
		n++;
	}
	r->look_behind = hits * 2 > n;
	r->look_behind_hits = hits;
	r->look_behind_trials = n;
	return 0;
}

/* One read-ahead trial: A (a positioned read), an idle wait long enough for a read-ahead to pass
 * A's end + d + a probe at half the media rate seen, then the probe (g->ra_b bytes) at A's
 * end + d. */
static int ra_trial(struct gc *g, uint64_t d, bool *hit)
{
	uint64_t p = gc_place(g, d + (2u << 20));
	double a;
	int rc = gc_read(g, p, g->b, 0, &a);

	if (rc)
		return rc;
	rc = gc_idle(g, (double)(d + g->ra_b) / (0.5 * g->rate_mb * 1e3) + 2 * g->T);
	if (rc)
		return rc;
	rc = gc_read(g, p + g->b + d, g->ra_b, gc_random_phase(g), &a);
	*hit = rc == 0 && a < g->hit_thr;
	return rc;
}

/* A decision from trials: three hits of three is a hit, one or none a miss; two of three takes
 * three more and needs five of six (a slow hit from background work, a miss that found its
 * sector just coming round: each needs two flukes to change the answer). */
static int decide(struct gc *g, int (*trial)(struct gc *, uint64_t, bool *), uint64_t arg,
		  bool *hit, unsigned *trials)
{
	unsigned hits = 0, n = 0, fails = 0;
	int rc;

	while (n < 6) {
		bool h;
		rc = trial(g, arg, &h);
		if (rc == 1 && ++fails < PLACE_TRIES)
			continue;
		if (rc)
			return rc;
		hits += h;
		n++;
		if (n == 3 && hits != 2)
			break;
	}
	*trials += n;
	*hit = n == 3 ? hits == 3 : hits >= 5;
	return 0;
}

/* A trial of a search at argument x (see decide()). */
typedef int (*trial_fn)(struct gc *g, uint64_t x, bool *hit);

struct search {
	uint64_t lo;	/* a hit (given) ... */
	uint64_t hi;	/* ... and the first miss found; > max when none up to max */
	uint64_t first; /* the gallop's first step */
	uint64_t max;
	uint64_t unit; /* arguments are multiples of it; the bracket narrows to it at least */
	double rel;    /* or to this share of lo */
};

/* Where the hits stop: a gallop (x doubling from `first`) brackets it, a bisection narrows the
 * bracket. Returns 0, 1 (reads failed), 2 or -errno. */
static int search(struct gc *g, trial_fn trial, struct search *sr, unsigned *trials)
{
	bool hit;
	int rc;

	for (sr->hi = sr->first; sr->hi <= sr->max; sr->hi *= 2) {
		rc = decide(g, trial, sr->hi, &hit, trials);
		if (rc)
			return rc;
		if (!hit)
			break;
		sr->lo = sr->hi;
	}
	while (sr->hi <= sr->max && sr->hi - sr->lo > sr->unit &&
	       (double)(sr->hi - sr->lo) > sr->rel * (double)sr->lo) {
		uint64_t mid = (sr->lo + sr->hi) / 2 / sr->unit * sr->unit;
		rc = decide(g, trial, mid, &hit, trials);
		if (rc)
			return rc;
		*(hit ? &sr->lo : &sr->hi) = mid;
	}
	return 0;
}

/*
 * Read-ahead size (DIXtrac's prefetch test, Schindler & Ganger 2000; Diskbench's prefetch test):
 * read A, let the drive run, then read A + k: hits stop where the read-ahead stops. A gallop
 * (k doubling) brackets the limit, a bisection narrows it to 3 % (or to one probe: then the
 * last hit's end is the limit). None when a probe at A's end is not a hit, first of the block,
 * then of one sector (a read-ahead shorter than the block).
 */
int gc_read_ahead(struct gc *g)
{
	struct dg_geocache *r = g->out;
	bool hit;
	int rc;

	g->ra_b = g->b;
	rc = decide(g, ra_trial, 0, &hit, &r->read_ahead_trials);
	if (rc == 0 && !hit && g->sector < g->b) {
		g->ra_b = g->sector;
		rc = decide(g, ra_trial, 0, &hit, &r->read_ahead_trials);
	}
	struct search sr = {.lo = 0,
			    .first = g->ra_b < g->b ? g->ra_b : RA_FIRST,
			    .max = RA_MAX,
			    .unit = g->ra_b,
			    .rel = 0.03};
	if (rc == 0 && hit)
		rc = search(g, ra_trial, &sr, &r->read_ahead_trials);
	if (rc)
		return rc == 1 ? (gc_note(g, "read-ahead not measured: reads failed"), 0) : rc;
	if (!hit) {
		r->read_ahead_bytes = 0;
	} else if (sr.hi > RA_MAX) {
		gc_note(g, "read-ahead beyond %llu MiB not searched",
			(unsigned long long)(RA_MAX >> 20));
	} else {
		/* the stream stops in (lo + probe, hi + probe] past A's end */
		r->read_ahead_bytes =
		    (double)(sr.hi - sr.lo <= sr.unit ? sr.lo : (sr.lo + sr.hi) / 2) + g->ra_b;
	}
	return 0;
}

/* One segment trial: n fresh places read, then each read again in the same order; *ok when every
 * second read is a hit (the first place, read longest ago, goes first when segments run out). */
static int seg_trial(struct gc *g, uint64_t n, bool *ok)
{
	uint64_t p[SEG_MAX];
	double a;
	int rc;

	*ok = true;
	for (uint64_t i = 0; i < n; i++) {
		p[i] = gc_place(g, 1u << 20);
		rc = gc_read(g, p[i], g->b, 0, &a);
		if (rc)
			return rc;
	}
	for (uint64_t i = 0; i < n && *ok; i++) {
		rc = gc_read(g, p[i], g->b, gc_random_phase(g), &a);
		if (rc)
			return rc;
		*ok = a < g->hit_thr;
	}
	return 0;
}

/* Segments (DIXtrac's segment test, Schindler & Ganger 2000; Diskbench's segment test):
 * interleave n streams and find the n at which they stop hitting (n doubling, then bisected). */
int gc_segments(struct gc *g)
{
	struct dg_geocache *r = g->out;
	struct search sr = {.lo = 1, .first = 2, .max = SEG_MAX, .unit = 1, .rel = 0};
	int rc = search(g, seg_trial, &sr, &r->segments_trials);

	if (rc)
		return rc == 1 ? (gc_note(g, "segments not measured: reads failed"), 0) : rc;
	if (sr.hi > SEG_MAX)
		gc_note(g, "%u or more cache segments (not searched further)", SEG_MAX);
	r->segments = (int)sr.lo;
	return 0;
}

/* Idle long enough for a read-ahead of `ra` bytes after a read of g->io bytes to finish. */
static int idle_read_ahead(struct gc *g, double ra)
{
	return gc_idle(g, (ra + g->io) / (0.5 * g->rate_mb * 1e3) + 2 * g->T);
}

/* A scan of the cache-size test: from x0 growing by `step`; *xh, *xm get the last hit and the
 * first miss (0 when none). */
struct scan {
	uint64_t x0;
	double step;
	uint64_t xh, xm;
};

/*
 * One cache-size run: stream L bytes from A, let the read-ahead finish, then probe backwards from
 * the stream's end, x growing by the scan's step: a probe hits while x <= cache - read-ahead (the
 * segment keeps the stream's last cache bytes) and a hit leaves the cache as it was, so one
 * stream serves the whole scan; when x passes A the stream is doubled. A miss ends the run.
 */
static int size_run(struct gc *g, double ra, struct scan *sc)
{
	uint64_t max_len = (g->hi - g->lo) / 2, len = SIZE_FIRST;
	double x = (double)sc->x0, ms;
	int rc;

	while (len < sc->x0 + (sc->x0 >> 3) && 2 * len <= max_len)
		len *= 2;
	uint64_t a = gc_place(g, max_len + (1u << 20));
	sc->xh = sc->xm = 0;
	rc = gc_stream(g, a, len, NULL);
	if (rc == 0)
		rc = idle_read_ahead(g, ra);
	while (rc == 0) {
		uint64_t xb = (uint64_t)x / g->b * g->b;
		if (xb > len) {
			if (2 * len > max_len)
				return 0;
			rc = gc_stream(g, a + len, len, NULL);
			len *= 2;
			if (rc == 0)
				rc = idle_read_ahead(g, ra);
			continue;
		}
		rc = gc_read(g, a + len - xb, GC_BIG_BYTES, gc_random_phase(g), &ms);
		if (rc == 0 && ms >= g->big_hit_thr) {
			sc->xm = xb;
			return 0;
		}
		sc->xh = xb;
		x *= sc->step;
	}
	return rc;
}

/*
 * Cache size (DIXtrac's cache-size test, Schindler & Ganger 2000): a coarse run (x from 256 KiB
 * by SIZE_STEP) brackets cache - read-ahead, a fine run (from the bracket's hit by SIZE_FINE)
 * narrows it. A fine run that disagrees with the bracket (a fluke in one of them) calls a third,
 * coarse, run and the median of the three estimates. Estimate: read-ahead + the geometric middle
 * of the last hit and the first miss.
 */
int gc_cache_size(struct gc *g)
{
	struct dg_geocache *r = g->out;
	double v[SIZE_RUNS], ra = r->read_ahead_bytes;
	struct scan sc[SIZE_RUNS] = {
	    {GC_BIG_BYTES, SIZE_STEP, 0, 0}, {0, SIZE_FINE, 0, 0}, {GC_BIG_BYTES, SIZE_STEP, 0, 0}};
	unsigned n = 0, fails = 0;
	int rc;

	if (isnan(ra)) {
		gc_note(g, "cache size not measured: it needs the read-ahead size");
		return 0;
	}
	while (n < SIZE_RUNS && gc_left_ms(g) > 0) {
		if (n == 1)
			sc[1].x0 = sc[0].xh;
		if (n == 2 && sc[1].xh >= sc[0].xh && sc[1].xm <= sc[0].xm)
			break;
		rc = size_run(g, ra, &sc[n]);
		if (rc == 1 && ++fails < PLACE_TRIES)
			continue;
		if (rc)
			return rc == 1 ? (gc_note(g, "cache size not measured: reads failed"), 0)
				       : rc;
		if (!sc[n].xh || !sc[n].xm) {
			gc_note(g,
				"cache size not measured: larger than the range allows, or no hit");
			return 0;
		}
		v[n] = ra + sqrt((double)sc[n].xh * (double)sc[n].xm);
		n++;
	}
	r->size_runs = n;
	r->segment_bytes = n == 2 ? v[1] : dg_median(v, n);
	/* the cache is its segments (DIXtrac: segment size x count, Schindler & Ganger 2000) */
	r->size_bytes = r->segment_bytes * (r->segments > 1 ? r->segments : 1);
	if (r->segments > 1)
		gc_note(g,
			"cache size = %d segments x what one stream keeps; a drive that sizes its "
			"segments to the streams (adaptive) may give one stream more",
			r->segments);
	return 0;
}
