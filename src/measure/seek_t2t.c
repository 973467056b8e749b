/* SPDX-License-Identifier: MIT */
/*
 * Track-to-track: the seek between adjacent tracks of one surface, measured where the layout
 * shows which LBA step that is (Worthington, Ganger, Patt & Wilkes 1995: the layout from the
 * rotational positions of the tracks' sectors, the seek by minimum-time extraction).
 *
 * A drive starts each track a skew after the previous one, the skew covering the move that
 * the transition costs (a head switch or a cylinder step). The same block of consecutive LBA
 * tracks (x + j x track) is read from the media, top down (nothing it reads can be in the
 * cache: the read-ahead runs forward, the look-behind stays on its own track), a few times
 * over; its completion phase, the earliest of the passes (the host's jitter only delays), gives
 * the phase step of each transition. On a drive that walks one surface across cylinders (a
 * serpentine band) the steps stay the same over a longer run than any drive has heads; on a
 * cylinder layout a head switch and a cylinder step alternate every H tracks or less, and
 * surfaces of their own formats scatter the steps. Only a long run is taken as one surface:
 * the seek one track up inside it is then measured with a tight phase bisection at a few
 * places (the median). Anything else (a run too short, a failed read, a cache hit) leaves the
 * figure to the curve's fit.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seek_priv.h"
#include "util.h"

#define T2T_TRACKS   48u /* transitions looked at: more than twice the heads of any drive */
#define T2T_PASSES   5u	 /* reads of each block; the median step is kept */
#define T2T_RUN	     24u /* equal steps in a row that only one surface gives */
#define T2T_SAME_MS  0.1 /* steps this close are the same move */
#define T2T_PLACES   5u	 /* places the one-track seek is measured at */
#define T2T_LEGS     10u /* phase-aimed reads per place at most */
#define T2T_DETOUR   (1ull << 20)  /* apart, the detours' blocks (none is a cache hit) */
#define T2T_AT_BYTES (32ull << 20) /* where (and the step to the next try): the outer zone */
#define T2T_TRIES    3u		   /* places for the sweep (failed reads, cached blocks) */

/* The phase step (ns, in [0, T)) from block x + j x track to the one a track below, for
 * j = 0..T2T_TRACKS - 1: per pass from two consecutive completions (the period's small error
 * then stays small), the median over the passes. A read served by the cache (a segment that
 * kept an earlier pass, or the look-behind of a block on the same track when the track size is
 * a little off) gives no step (NAN). Returns 0 with *ok false when a read failed or too few
 * steps were seen. */
static int track_steps(struct seek_ctx *s, uint64_t x, uint64_t track, double *step, bool *ok)
{
	double T = s->period_ns, hit = s->hit_ms + s->drift_ns / 2e6;
	double st[T2T_TRACKS][T2T_PASSES];
	unsigned n[T2T_TRACKS] = {0};

	*ok = false;
	for (unsigned p = 0; p < T2T_PASSES; p++) {
		double prev = NAN; /* the completion one track up, this pass */
		for (int j = (int)T2T_TRACKS; j >= 0; j--) {
			struct dg_completion c;
			bool failed;
			int rc = seek_read(s, x + (uint64_t)j * track, 0, &c, &failed);
			if (rc || failed) {
				s->moved += failed; /* the next try is at a fresh place */
				return rc;
			}
			double now = (double)c.complete_ns;
			if ((double)(c.complete_ns - c.submit_ns) / 1e6 < hit)
				now = NAN; /* a hit: not the block's phase */
			if (j < (int)T2T_TRACKS && isfinite(prev) && isfinite(now))
				st[j][n[j]++] = fmod(fmod(prev - now, T) + T, T);
			prev = now;
		}
	}
	unsigned seen = 0;
	for (unsigned j = 0; j < T2T_TRACKS; j++) {
		step[j] =
		    n[j] >= T2T_PASSES / 2 + 1 ? dg_median(st[j], n[j]) : NAN; /* ends a run */
		seen += isfinite(step[j]);
	}
	*ok = seen >= T2T_RUN;
	return 0;
}

/* The longest run of consecutive phase steps within T2T_SAME_MS (and half the host's jitter)
 * of the steps' median; *at gets the index of its first transition. */
static unsigned longest_run(const struct seek_ctx *s, const double *step, unsigned *at)
{
	double T = s->period_ns, sorted[T2T_TRACKS];
	double tol = (T2T_SAME_MS + s->jitter_ms / 2) * 1e6;
	unsigned best = 0, len = 0;

	size_t ns = 0;
	for (unsigned j = 0; j < T2T_TRACKS; j++)
		if (isfinite(step[j]))
			sorted[ns++] = step[j];
	double m = dg_median(sorted, ns);
	for (unsigned j = 0; j < T2T_TRACKS; j++) {
		double d = fabs(step[j] - m);
		len = isfinite(step[j]) && (d < T / 2 ? d : T - d) <= tol ? len + 1 : 0;
		if (len > best) {
			best = len;
			*at = j + 1 - len;
		}
	}
	return best;
}

/* What the sweep found: the blocks x + j x track and the phase steps between them. */
struct sweep {
	uint64_t x, track;
	double step[T2T_TRACKS];
	unsigned at, run; /* tracks at .. at + run are one surface's, in cylinder order */
};

/* One aimed leg: a detour to the middle of the device (it ends any read-ahead stream, so the
 * next reads are the media's), a positioning read one track up (track j + 1, whose completion
 * gives the phase of track j's block: one step before), then track j's block sent so that it
 * comes round t_ms after its submission: its access is t_ms (+ the host's delay) when
 * K <= t_ms, a revolution more otherwise. *a_ms is NAN when a read was served by the cache or
 * completed off the predicted phase (the assumption failed there); *failed when a read failed
 * (recorded; the probe ends, its places are not vouched for). */
static int aimed_leg(struct seek_ctx *s, const struct sweep *w, unsigned j, unsigned leg,
		     double t_ms, double *a_ms, bool *failed)
{
	double T = s->period_ns, hit = s->hit_ms + s->drift_ns / 2e6;
	uint64_t b = w->x + (uint64_t)j * w->track, detour = s->capacity_bytes / 2;
	struct dg_completion c;
	int rc;

	*a_ms = NAN;
	detour += (uint64_t)leg * T2T_DETOUR;
	detour -= detour % s->block_bytes;
	rc = seek_read(s, detour, 0, &c, failed);
	if (rc == 0 && !*failed)
		rc = seek_read(s, b + w->track, 0, &c, failed);
	if (rc || *failed || (double)(c.complete_ns - c.submit_ns) / 1e6 < hit)
		return rc;
	double pred = (double)c.complete_ns - w->step[j];
	uint64_t now = dg_engine_now_ns(s->e);
	double r = fmod(fmod(pred - (double)now - t_ms * 1e6, T) + T, T);
	if (!(r >= 0 && r < T)) /* never a wild cast */
		return 0;
	rc = seek_read(s, b, now + (uint64_t)llround(r), &c, failed);
	if (rc || *failed)
		return rc;
	double a = (double)(c.complete_ns - c.submit_ns) / 1e6;
	double e = fmod(fmod((double)c.complete_ns - pred, T) + 1.5 * T, T) - T / 2;
	if (a < hit || fabs(e) > 0.15e6 + 4e6 * s->jitter_ms)
		return 0; /* a hit, or another track: nothing about K */
	*a_ms = a;
	return 0;
}

/* The one-track move at one place: a phase bisection of K over (K0, K0 + T] (see kint). */
static int one_place(struct seek_ctx *s, const struct sweep *w, unsigned place, double *seek_ms,
		     bool *failed)
{
	double T = s->period_ns / 1e6;
	struct kint k;
	unsigned legs = 0;

	*seek_ms = NAN;
	kint_init(&k);
	k.lo = s->k0_ms;
	k.hi = s->k0_ms + T;
	for (unsigned i = 0; i < 2 * T2T_LEGS && legs < T2T_LEGS && k.hi - k.lo > T / 256; i++) {
		unsigned j = w->at + (place * 5 + i * 3) % w->run;
		double a;
		int rc =
		    aimed_leg(s, w, j, place * 2 * T2T_LEGS + i, kint_threshold(&k), &a, failed);
		if (rc || *failed)
			return rc;
		if (isnan(a))
			continue;
		kint_add(&k, a, T);
		legs++;
	}
	if (legs >= 4 && k.lo <= k.hi + 0.25)
		*seek_ms = fmax(kint_estimate(&k, T) - s->jitter_ms - s->k0_ms, 0.0);
	return 0;
}

double seek_t2t_cost_ms(const struct seek_ctx *s)
{
	/* the sweep: about a revolution a read (each block comes round after the one above) */
	return T2T_PASSES * (T2T_TRACKS + 1) * s->period_ns / 1e6;
}

int seek_t2t_measure(struct seek_ctx *s, uint64_t track, double *t2t_ms)
{
	struct sweep w = {.track = track - track % s->block_bytes}; /* a constant offset a step */
	double v[T2T_PLACES];
	unsigned nv = 0;
	bool ok = false;
	int rc = 0;

	*t2t_ms = NAN;
	for (unsigned tries = 0; tries < T2T_TRIES && !ok; tries++) {
		w.x = T2T_AT_BYTES * (tries + 1);
		w.x -= w.x % s->block_bytes;
		if (!s->rotating || w.track == 0 ||
		    w.x + (T2T_TRACKS + 2) * w.track > s->capacity_bytes / 2)
			return 0;
		rc = track_steps(s, w.x, w.track, w.step, &ok);
		if (rc)
			return rc;
	}
	if (!ok)
		return 0;
	w.run = longest_run(s, w.step, &w.at);
	if (w.run < T2T_RUN)
		return 0;
	for (unsigned i = 0; i < T2T_PLACES; i++) {
		bool failed = false;
		rc = one_place(s, &w, i, &v[nv], &failed);
		s->moved += failed; /* counted in the notes; the curve's fit gives the figure */
		if (rc || failed)
			return rc;
		nv += isfinite(v[nv]);
	}
	if (nv >= T2T_PLACES / 2 + 1)
		*t2t_ms = dg_median(v, nv);
	return 0;
}
