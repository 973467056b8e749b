/* SPDX-License-Identifier: MIT */
/*
 * Rotation period, command overhead and K0 (an access with no move and no rotational wait),
 * measured so that no cache can fake them.
 *
 * A read completes when the end of its block passes under the head, so completion times carry
 * the block's phase (Wong 2019: angular position by completion time modulo the period). Two
 * reads of the same track, Q = P - g blocks read right after P, complete T - g*t apart (t: a
 * block's media time) -- but only if the drive does not already hold Q. Drives keep what passed
 * under the head: read-ahead holds what follows P, and look-behind holds the sectors of P's track
 * that passed while the drive waited for P (Schindler & Ganger 2000 test for both). So:
 *   - every sample starts on a fresh track (places 16 MiB apart, walked downwards: no read-ahead
 *     of an earlier sample reaches them);
 *   - Q sits further back than the wait before P can have reached: g*t > wait(P), with wait(P)
 *     bounded by P's access time minus the shortest access seen at these places; samples whose
 *     wait was long (more than a sixth of the access-time spread) are skipped, so that Q stays
 *     on P's track (mostly) and within one revolution;
 *   - a Q that completes like a cache hit is thrown away, never used.
 *   - places get a random offset inside their stride, so P's wait is random and a third of
 *     the samples have short waits.
 * Coarse: a robust line I = T - g*t through the samples (Theil-Sen: a Q that fell on the
 * previous track is an outlier). Fine: Q is read n revolutions later instead (the drive idles),
 * so I = n*T - g*t and the block-time error is divided by n; the median of the largest group
 * of fine samples that agree.
 * Rotating or not: the fine samples must agree with one period (phase lock); a flat device's
 * Q reads look like hits or scatter, and no rpm is made up.
 * Overhead: re-reading the block just read is a cache hit (overhead + interface transfer): the
 * median of a few. K0 = overhead + a block's media time.
 * A failed read moves the sample to the next place; it never becomes a figure.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seek_priv.h"

#define HITS		  9u
#define STRIDE_BYTES	  (16ull << 20) /* between sample places: beyond a track and a read-ahead */
#define PLACES		  480u		/* places tried at most */
#define COARSE		  20u		/* coarse samples wanted */
#define FINE		  9u		/* fine samples wanted */
#define FIRST_REVS	  3u		/* revolutions between P and Q in a first fine sample */
#define FINE_REVS	  16u		/* revolutions between P and Q in a fine sample */
#define MAX_FAILS	  16u		/* failed reads in a row before giving up */
#define STREAM_IOS	  12u		/* reads in the media-rate estimate */
#define STREAM_READ_BYTES (1u << 20)	/* bytes per read there */

struct rot {
	struct seek_ctx *s;
	uint64_t stride, top;
	unsigned next_place, fails;
	double hit_ms;		 /* a cache hit: overhead + interface transfer */
	double amin_ms, amax_ms; /* the spread of P's access times */
	unsigned nP;		 /* P reads seen */
	double tb_ms;		 /* a block's media time (estimate) */
	double tb_stream_ms;	 /* the stream's figure: the estimate's ceiling */
};

/* Reads one block; counts failures. Returns 0, 1 (failed, counted), 2 (stopped) or -errno. */
static int rd(struct rot *r, uint64_t off, uint64_t at_ns, struct dg_completion *c)
{
	int rc = seek_read(r->s, off, at_ns, c);

	if (rc == 1 && ++r->fails >= MAX_FAILS)
		return -EIO;
	if (rc == 0)
		r->fails = 0;
	return rc;
}

static double ms_of(uint64_t ns)
{
	return (double)ns / 1e6;
}

/* The next fresh place (a block-aligned offset), or UINT64_MAX when none is left. */
static uint64_t next_place(struct rot *r)
{
	if (r->next_place >= PLACES)
		return UINT64_MAX;
	/* a random offset inside the stride makes the arrival phase random (a regular pattern of
	 * places would give every P the same rotational wait) */
	uint64_t jitter = (uint64_t)(seek_rand01(r->s) * (double)(r->stride / 2));
	jitter -= jitter % r->s->block_bytes;
	return r->top - (uint64_t)(r->next_place++) * r->stride - jitter;
}

/* A block's media time as a sequential stream delivers it at `at` (track switches included,
 * so a little long): STREAM_IOS reads of STREAM_BLOCKS blocks at QD 4, timed from the third
 * completion to the last (large reads: the media, not the command overhead, sets the pace). */
static int stream_block_ms(struct rot *r, uint64_t at, double *out)
{
	struct seek_ctx *s = r->s;
	uint32_t len = s->block_bytes >= STREAM_READ_BYTES
			   ? s->block_bytes
			   : STREAM_READ_BYTES / s->block_bytes * s->block_bytes;
	struct dg_io io[STREAM_IOS];
	struct dg_completion c[STREAM_IOS];
	uint64_t t[STREAM_IOS];
	unsigned sent = 0, got = 0, qd = dg_engine_qd(s->e) < 4 ? dg_engine_qd(s->e) : 4;
	int rc;

	*out = NAN;
	for (unsigned i = 0; i < STREAM_IOS; i++)
		io[i] = (struct dg_io){
		    .offset_bytes = at + (uint64_t)i * len, .length_bytes = len, .op = DG_IO_READ};
	while (got < STREAM_IOS) {
		if (seek_ctx_stopping(s))
			return 2;
		unsigned room = qd - (sent - got);
		if (room && sent < STREAM_IOS) {
			unsigned n = STREAM_IOS - sent < room ? STREAM_IOS - sent : room;
			rc = dg_engine_submit(s->e, io + sent, n);
			if (rc < 0)
				return rc;
			sent += (unsigned)rc;
		}
		rc = dg_engine_reap(s->e, c, 1, STREAM_IOS);
		if (rc == -EINTR)
			continue;
		if (rc < 0)
			return rc;
		for (int i = 0; i < rc; i++) {
			if (c[i].result != (int64_t)len)
				return 1; /* a failed read: no estimate here */
			t[got + (unsigned)i] = c[i].complete_ns;
		}
		got += (unsigned)rc;
	}
	if (t[STREAM_IOS - 1] <= t[2])
		return 1;
	*out = ms_of(t[STREAM_IOS - 1] - t[2]) / (STREAM_IOS - 3.0) * s->block_bytes / len;
	return 0;
}

/* Overhead: hits on a block just read. The first place that reads without error is used. */
static int measure_hits(struct rot *r)
{
	struct dg_completion c;
	double v[HITS];
	size_t nv = 0;
	int rc;

	for (;;) {
		uint64_t p = next_place(r);
		if (p == UINT64_MAX)
			return 1;
		rc = rd(r, p, 0, &c);
		if (rc == 1)
			continue;
		if (rc)
			return rc;
		for (unsigned i = 0; i < HITS; i++) {
			rc = rd(r, p, 0, &c);
			if (rc < 0 || rc == 2)
				return rc;
			if (rc == 0)
				v[nv++] = ms_of(c.complete_ns - c.submit_ns);
		}
		if (nv == 0)
			continue;
		r->hit_ms = seek_median(v, nv);
		r->s->overhead_ms = r->hit_ms;
		r->s->k0_ms = r->hit_ms;
		/* the media rate right after the hits, at the next place */
		p = next_place(r);
		if (p == UINT64_MAX)
			return 1;
		rc = stream_block_ms(r, p, &r->tb_ms);
		if (rc == 1)
			continue;
		r->tb_stream_ms = r->tb_ms;
		return rc;
	}
}

/* One sample: P at a fresh place, then Q = P - g blocks, submitted `revs` - 1 revolutions of
 * `T_ms` after P completed (revs 1: at once). *g_out and *iv_ms (Q's completion - P's) are set
 * when the sample counts; returns 0 with *ok, 2 stopped, -errno. */
static int sample(struct rot *r, unsigned revs, double T_ms, bool *ok, unsigned *g_out,
		  double *iv_ms)
{
	struct seek_ctx *s = r->s;
	struct dg_completion cp, cq;
	uint64_t p = next_place(r);
	int rc;

	*ok = false;
	if (p == UINT64_MAX)
		return -ENOSPC;
	rc = rd(r, p, 0, &cp);
	if (rc)
		return rc == 1 ? 0 : rc;
	double a = ms_of(cp.complete_ns - cp.submit_ns);
	if (a <= r->hit_ms * 1.5)
		return 0; /* P was cached (a read-ahead reached it): not a positioned read */
	if (r->nP++ == 0 || a < r->amin_ms)
		r->amin_ms = a;
	if (a > r->amax_ms)
		r->amax_ms = a;
	/* the wait before P is at most a - amin; keep short waits only */
	double wmax = a - r->amin_ms;
	if (r->nP < 8 || wmax > (r->amax_ms - r->amin_ms) / 6)
		return 0;
	unsigned g = (unsigned)ceil((wmax + 0.05) * 1.15 / r->tb_ms) + 2;
	if ((uint64_t)g * s->block_bytes > p)
		return 0;
	uint64_t q = p - (uint64_t)g * s->block_bytes;
	uint64_t at = 0;
	if (revs > 1)
		at = cp.complete_ns + (uint64_t)llround((double)(revs - 1) * T_ms * 1e6);
	rc = rd(r, q, at, &cq);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (ms_of(cq.complete_ns - cq.submit_ns) <= r->hit_ms * 1.5) {
		/* Q was cached: the sample says nothing, and the block time was guessed long (a
		 * stream slowed by lost revolutions): guess shorter, so that g reaches further */
		r->tb_ms *= 0.8;
		return 0;
	}
	/* a Q that was not a hit lets a shortened block-time guess grow back */
	r->tb_ms = r->tb_ms * 1.05 < r->tb_stream_ms ? r->tb_ms * 1.05 : r->tb_stream_ms;
	*ok = true;
	*g_out = g;
	*iv_ms = ms_of(cq.complete_ns - cp.complete_ns);
	return 0;
}

/* The largest set of v[] (sorted in place) within a relative width `rel` of its own median;
 * *mid gets that median. Returns its size. */
static unsigned largest_cluster(double *v, size_t n, double rel, double *mid)
{
	size_t best = 0, at = 0;

	seek_median(v, n); /* sorts */
	for (size_t i = 0, j = 0; i < n; i++) {
		while (v[j] < v[i] - rel * v[i])
			j++;
		if (i - j + 1 > best) {
			best = i - j + 1;
			at = j;
		}
	}
	*mid = best ? seek_median(v + at, best) : NAN;
	return (unsigned)best;
}

/* Theil-Sen line iv = T - g*tb through the coarse samples. */
static int fit_coarse(const unsigned *g, const double *iv, size_t n, double *T, double *tb)
{
	double *v = malloc((n * (n - 1) / 2 + n) * sizeof(*v));
	size_t nv = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (g[i] != g[j])
				v[nv++] = -(iv[j] - iv[i]) / ((double)g[j] - (double)g[i]);
	*tb = seek_median(v, nv);
	nv = 0;
	for (size_t i = 0; i < n; i++)
		v[nv++] = iv[i] + (double)g[i] * *tb;
	*T = seek_median(v, nv);
	free(v);
	return 0;
}

/*
 * Samples with Q read `revs` - 1 idle turns of `T` after P; each gives T' = (interval + g*tb) /
 * turns. *out gets the median of the largest group that agrees within `rel` (phase lock: a Q
 * that fell on another track does not agree; a flat device's samples scatter). Returns 0, 1 when no
 * majority agrees (no rotation), 2 stopped, or -errno.
 */
static int fine_stage(struct rot *r, unsigned revs, double T, double tb, double rel, double *out)
{
	double Tf[FINE];
	size_t nf = 0;
	bool ok;
	int rc;

	while (nf < FINE) {
		unsigned gf;
		double ivf;
		rc = sample(r, revs, T, &ok, &gf, &ivf);
		if (rc == -ENOSPC)
			break;
		if (rc)
			return rc == -EIO ? 1 : rc;
		if (!ok)
			continue;
		double k = round((ivf + gf * tb) / T);
		if (k >= 1)
			Tf[nf++] = (ivf + gf * tb) / k;
	}
	if (nf < FINE / 2 + 1)
		return 1;
	unsigned locked = largest_cluster(Tf, nf, rel, out);
	return locked * 2 > nf ? 0 : 1;
}

int seek_rotation_measure(struct seek_ctx *s, uint64_t at)
{
	struct rot r = {.s = s};
	unsigned g[COARSE];
	double iv[COARSE];
	size_t n = 0;
	double T, tb;
	bool ok;
	int rc;

	s->rotating = false;
	s->period_ns = s->drift_ns = 0;
	s->overhead_ms = s->k0_ms = NAN;
	r.stride = STRIDE_BYTES;
	if (s->capacity_bytes / 4 < r.stride * PLACES)
		r.stride = (s->capacity_bytes / 4 / PLACES) / s->block_bytes * s->block_bytes;
	if (r.stride < (uint64_t)STREAM_READ_BYTES * STREAM_IOS)
		return 1; /* too small a device for fresh places */
	r.top = at + (uint64_t)PLACES * r.stride;
	if (r.top + r.stride > s->capacity_bytes)
		r.top = s->capacity_bytes - r.stride;
	rc = measure_hits(&r);
	if (rc)
		return rc == -EIO ? 1 : rc;
	if (!(r.tb_ms > 0))
		return 0;

	while (n < COARSE) {
		rc = sample(&r, 1, 0, &ok, &g[n], &iv[n]);
		if (rc == -ENOSPC)
			break;
		if (rc)
			return rc == -EIO ? 1 : rc;
		/* Q must come round within the revolution (Q positioned, not a hit) */
		if (ok && iv[n] > r.hit_ms)
			n++;
	}
	if (n < COARSE / 2)
		return 0;
	rc = fit_coarse(g, iv, n, &T, &tb);
	if (rc)
		return rc;
	/* 2400..24000 rpm, at least 16 blocks per track */
	if (!(T >= 2.5 && T <= 25 && tb > 0 && tb < T / 16))
		return 0;

	/* a few turns first (a coarse period a few percent off cannot be taken for a turn more or
	 * less), then many: the block-time error is divided by the turns */
	double Tm = T;
	for (unsigned stage = 0; stage < 2; stage++) {
		rc = fine_stage(&r, stage ? FINE_REVS : FIRST_REVS, Tm, tb, stage ? 1e-3 : 1e-2,
				&Tm);
		if (rc)
			return rc == 1 ? 0 : rc;
		if (fabs(Tm - T) > 0.05 * T)
			return 0;
	}
	s->rotating = true;
	s->period_ns = Tm * 1e6;
	s->drift_ns = tb * 1e6;
	s->k0_ms = s->overhead_ms + tb;
	return 0;
}
