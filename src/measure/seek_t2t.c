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
 *
 * The track size comes from rotation.c (period over a block's time), a few percent off at
 * times: x + j x track then slips that much a track and crosses a track boundary every
 * S / slip tracks, which breaks a run sooner than T2T_RUN. Where the breaks sit and what the
 * steps there are (a skew lost, a look-behind hit or a skew gained) give the slip; the track
 * size corrected by it is swept once more, and only a long run there is taken.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seek_priv.h"
#include "util.h"

#define T2T_TRACKS    48u /* transitions looked at: more than twice the heads of any drive */
#define T2T_PASSES    3u  /* reads of each block at least; the earliest phase is kept */
#define T2T_MAXPASSES 5u  /* ... and at most, as the probe's share of the budget allows */
#define T2T_REPASSES  2u  /* the same after a track size correction (kept in that share) */
#define T2T_RUN	      24u /* equal steps in a row that only one surface gives */
#define T2T_SAME_MS   0.1 /* steps this close are the same move */
#define T2T_PLACES    5u  /* places the one-track seek is measured at */
#define T2T_LEGS      10u /* phase-aimed reads per place at most */
#define T2T_DETOUR    (1ull << 20)  /* apart, the detours' blocks (none is a cache hit) */
#define T2T_AT_BYTES  (32ull << 20) /* where (and the step to the next try): the outer zone */
#define T2T_TRIES     3u	    /* places for the sweep (failed reads, cached blocks) */

/* x wrapped into [-T/2, T/2). */
static double wrap_half(double x, double T)
{
	return fmod(fmod(x, T) + 1.5 * T, T) - T / 2;
}

/* Each block's phase (ns, against pass `ref`), the earliest over the passes: the host's jitter
 * only delays a completion. Pass p is first aligned on the reference pass by the medians of
 * its phase differences over each half of the blocks (a constant and a drift: the period's
 * small error grows over the passes). NAN where fewer than most passes saw the block. */
static void earliest_phases(double ph[][T2T_TRACKS + 1], unsigned passes, unsigned ref, double T,
			    double *out)
{
	const unsigned nb = T2T_TRACKS + 1, half = nb / 2;
	double off[T2T_MAXPASSES][2], d[T2T_TRACKS + 1];

	for (unsigned p = 0; p < passes; p++)
		for (unsigned h = 0; h < 2; h++) {
			size_t n = 0;
			for (unsigned j = h * half; j < (h ? nb : half); j++)
				if (isfinite(ph[p][j]) && isfinite(ph[ref][j]))
					d[n++] = wrap_half(ph[p][j] - ph[ref][j], T);
			off[p][h] = n ? dg_median(d, n) : NAN;
		}
	for (unsigned j = 0; j < nb; j++) {
		double lo = INFINITY;
		unsigned n = 0;
		for (unsigned p = 0; p < passes; p++) {
			double o = off[p][0] + (off[p][1] - off[p][0]) * ((double)j - half / 2.0) /
						   (double)half;
			double v = wrap_half(ph[p][j] - o - ph[ref][j], T); /* near 0 */
			if (isfinite(v) && isfinite(ph[ref][j])) {
				lo = fmin(lo, v);
				n++;
			}
		}
		out[j] = n >= passes / 2 + 1 ? ph[ref][j] + lo : NAN;
	}
}

/* The phase step (ns, in [0, T)) from block x + j x track to the one a track below, for
 * j = 0..T2T_TRACKS - 1, from the blocks' earliest phases over the passes (see
 * earliest_phases). A read served by the cache (a segment that kept an earlier pass, or the
 * look-behind of a block on the same track when the track size is a little off) gives no
 * phase (NAN). Returns 0 with *ok false when a read failed or too few steps were seen. */
static int track_steps(struct seek_ctx *s, uint64_t x, uint64_t track, unsigned passes,
		       double *step, bool *ok)
{
	double T = s->period_ns, hit = s->hit_ms + s->drift_ns / 2e6, t0 = NAN;
	double ph[T2T_MAXPASSES][T2T_TRACKS + 1], phase[T2T_TRACKS + 1];
	unsigned ref = 0, most = 0;

	*ok = false;
	for (unsigned p = 0; p < passes; p++) {
		unsigned n = 0;
		for (int j = (int)T2T_TRACKS; j >= 0; j--) {
			struct dg_completion c;
			bool failed;
			int rc = seek_read(s, x + (uint64_t)j * track, 0, &c, &failed);
			if (rc || failed) {
				s->moved += failed; /* the next try is at a fresh place */
				return rc;
			}
			if (isnan(t0))
				t0 = (double)c.complete_ns;
			ph[p][j] = (double)(c.complete_ns - c.submit_ns) / 1e6 < hit
				       ? NAN /* a hit: not the block's phase */
				       : fmod((double)c.complete_ns - t0, T);
			n += isfinite(ph[p][j]);
		}
		if (n > most) {
			most = n;
			ref = p;
		}
	}
	earliest_phases(ph, passes, ref, T, phase);
	unsigned seen = 0;
	for (unsigned j = 0; j < T2T_TRACKS; j++) {
		step[j] = fmod(fmod(phase[j + 1] - phase[j], T) + T, T); /* NAN ends a run */
		seen += isfinite(step[j]);
	}
	*ok = seen >= T2T_RUN;
	return 0;
}

/* The median of the finite steps (NAN when fewer than half the steps are). */
static double steps_median(const double *step)
{
	double sorted[T2T_TRACKS];
	size_t ns = 0;

	for (unsigned j = 0; j < T2T_TRACKS; j++)
		if (isfinite(step[j]))
			sorted[ns++] = step[j];
	return ns >= T2T_TRACKS / 2 ? dg_median(sorted, ns) : NAN;
}

/* The longest run of consecutive phase steps within T2T_SAME_MS (and half the host's jitter)
 * of the steps' median m; *at gets the index of its first transition. One block's phase off
 * (a read late in every pass) moves the steps on both sides of it by opposite amounts: two
 * such steps whose sum is within the same of 2 m, between steps within it, continue the run; a
 * move of its own (a cylinder step among head switches, or the two alternating) does not. */
static unsigned longest_run(const struct seek_ctx *s, const double *step, unsigned *at)
{
	double T = s->period_ns, m = steps_median(step);
	double tol = (T2T_SAME_MS + s->jitter_ms / 2) * 1e6;
	unsigned best = 0, len = 0;

	for (unsigned j = 0; j < T2T_TRACKS; j++) {
		if (fabs(wrap_half(step[j] - m, T)) <= tol) {
			len++;
		} else if (len > 0 && j + 2 < T2T_TRACKS &&
			   fabs(wrap_half(step[j + 2] - m, T)) <= tol &&
			   fabs(wrap_half(step[j] + step[j + 1] - 2 * m, T)) <= tol) {
			len += 2;
			j++;
		} else {
			len = 0; /* NAN too */
		}
		if (len > best) {
			best = len;
			*at = j + 1 - len;
		}
	}
	return best;
}

#define T2T_FRAC 8 /* the slip is looked for in eighths of a block (sectors of 512e) */

/* How well a track size `delta` / T2T_FRAC blocks too long explains the breaks in the steps
 * (NAN or off the run's step m by more than tol): x + j x track then slips that much a track,
 * so the blocks cross a track boundary every S / |delta| tracks (S = the true track, same
 * unit), the first at offset u. Where the track is too short, two blocks land on one track: the
 * step loses the skew (T - |delta| x the block time), or the look-behind serves the lower
 * block (NAN); too long, a track is skipped: the step gains a skew (2 m - delta x the block
 * time). A crossing seen where predicted scores, a break with another value, a step within tol
 * where a crossing is predicted or a break where none is count against. */
static double slip_score(const double *step, double m, double tol, double T, long S, long delta,
			 long u)
{
	double score = 0, tb = T / (double)S * T2T_FRAC;
	long ad = labs(delta);
	double want =
	    delta < 0 ? T - (double)ad / T2T_FRAC * tb : 2 * m - (double)ad / T2T_FRAC * tb;
	for (unsigned j = 0; j < T2T_TRACKS; j++) {
		bool pred = (u + (long)(j + 1) * ad) / S > (u + (long)j * ad) / S;
		bool next = j + 1 < T2T_TRACKS &&
			    (u + (long)(j + 2) * ad) / S > (u + (long)(j + 1) * ad) / S;
		bool brk = !isfinite(step[j]) || fabs(wrap_half(step[j] - m, T)) > tol;
		if (pred && brk)
			score += isnan(step[j]) ? (delta < 0 ? 1 : 0.5)
				 : fabs(wrap_half(step[j] - want, T)) <= 2 * tol ? 1.5
										 : -1;
		else if (pred)
			score -= 1;
		else if (brk && !(next && isnan(step[j]))) /* a hit also ends the step above */
			score -= 0.5;
	}
	return score;
}

/* The track size corrected from where the steps break (see slip_score): the best signed slip
 * of at most a sixth of a track that explains at least two crossings; 0 when none does. */
static uint64_t corrected_track(const struct seek_ctx *s, const double *step, uint64_t track)
{
	double T = s->period_ns, best = 2.4, m = steps_median(step);
	double tol = (T2T_SAME_MS + s->jitter_ms / 2) * 1e6;
	long units = (long)(track / s->block_bytes) * T2T_FRAC, fix = 0;

	if (isnan(m) || units < 12 * T2T_FRAC)
		return 0;
	for (long ad = T2T_FRAC / 2; ad <= units / 6; ad++)
		for (int sign = -1; sign <= 1; sign += 2) {
			long delta = sign * ad, S = units - delta;
			for (long u = 0; u < S; u += ad / T2T_FRAC + 1) {
				double sc = slip_score(step, m, tol, T, S, delta, u);
				if (sc > best + 1e-9) {
					best = sc;
					fix = delta;
				}
			}
		}
	/* the track rounded to whole blocks: a fraction left slips a block in many tracks */
	long blocks = (units - fix + T2T_FRAC / 2) / T2T_FRAC;
	return fix ? (uint64_t)blocks * s->block_bytes : 0;
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
	return (T2T_PASSES + T2T_REPASSES) * (T2T_TRACKS + 1) * s->period_ns / 1e6;
}

int seek_t2t_measure(struct seek_ctx *s, uint64_t track, double *t2t_ms)
{
	/* the first sweep's passes: what the share holds after a correction's sweep */
	double turns = (double)s->budget_ns * T2T_BUDGET_SHARE / (T2T_TRACKS + 1) / s->period_ns;
	unsigned passes = turns >= T2T_MAXPASSES + T2T_REPASSES ? T2T_MAXPASSES
			  : turns >= T2T_PASSES + T2T_REPASSES	? (unsigned)turns - T2T_REPASSES
								: T2T_PASSES;
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
		rc = track_steps(s, w.x, w.track, passes, w.step, &ok);
		if (rc)
			return rc;
	}
	if (!ok)
		return 0;
	w.run = longest_run(s, w.step, &w.at);
	/* a track size a few percent off breaks the run every S / slip tracks: corrected from
	 * where it breaks and swept once more, when that still fits the probe's share */
	if (w.run < T2T_RUN) {
		uint64_t fixed = corrected_track(s, w.step, w.track);
		if (!fixed || w.x + (T2T_TRACKS + 2) * fixed > s->capacity_bytes / 2)
			return 0;
		w.track = fixed;
		rc = track_steps(s, w.x, w.track, T2T_REPASSES, w.step, &ok);
		if (rc || !ok)
			return rc;
		w.run = longest_run(s, w.step, &w.at);
	}
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
