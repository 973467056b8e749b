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
 * Coarse: the intervals I = T - g*t at one g form groups (a Q that fell on another track is a
 * skew away); each large group is a candidate for P's own track. Fine: Q is read n revolutions
 * later instead (the drive idles), so I = n*T - g*t and the block-time error is divided by n;
 * the median of the highest group of fine samples that agree.
 * Rotating or not: the fine samples must agree with one period (phase lock) at even and odd n
 * when there are several candidates (a wrong one can lock at even n alone); a candidate that
 * does not lock gives way to the next; a flat device's Q reads look like hits or scatter, and
 * no rpm is made up.
 * Overhead: re-reading the block just read is a cache hit (overhead + interface transfer): the
 * median of a few. K0 = overhead + a block's media time.
 * A failed read moves the sample to the next place; it never becomes a figure.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rotation_priv.h"
#include "seek_priv.h"
#include "util.h"

#define HITS		  9u
#define JITTER_HITS	  25u		/* hits that size the host's jitter, after the period */
#define STRIDE_BYTES	  (16ull << 20) /* between sample places: beyond a track and a read-ahead */
#define PLACES		  640u		/* places tried at most */
#define WARMUP		  24u		/* P reads that set the spread of access times first */
#define COARSE_EACH	  9u		/* coarse samples at g0, k = 1 and 2 */
#define STAGE_GROUP	  4u		/* samples in the agreeing group at least */
#define MAX_FAILS	  16u		/* failed reads in a row before giving up */
#define LOW_FRACTION	  20u		/* the robust try's bound: the 1-in-20 low end */
#define STREAM_IOS	  12u		/* reads in the media-rate estimate */
#define STREAM_READ_BYTES (1u << 20)	/* bytes per read there */

struct rot {
	struct seek_ctx *s;
	uint64_t stride, top;
	unsigned next_place, fails;
	double hit_ms;		  /* a cache hit: overhead + interface transfer */
	double amin_ms, amax_ms;  /* the spread of P's access times */
	unsigned nP;		  /* P reads seen */
	bool robust;		  /* the second try (see seek_rotation_measure()) */
	bool capped;		  /* fine groups capped a quarter turn above the prediction */
	double pa[PLACES];	  /* P's access times, ascending */
	double tb_ms;		  /* a block's media time (estimate) */
	double tb_stream_ms;	  /* the stream's figure */
	unsigned q_hits;	  /* Q reads that were cache hits (in this coarse try) */
	unsigned g0;		  /* Q's distance back from P, in blocks */
	double m0;		  /* the coarse median interval at g0 (k = 1) */
	double cand[MAX_CAND];	  /* the coarse groups' medians, highest first */
	unsigned csize[MAX_CAND]; /* their sizes */
	unsigned ncand, ci;	  /* how many; the one tried */
	double T;		  /* the period so far (NAN: none found) */
};

/* Reads one block; *failed when the read failed (recorded and counted: the caller moves to a
 * fresh place). Returns 0, -ECANCELED (stopped), -EIO after MAX_FAILS failures in a row, or
 * the engine's -errno. */
static int rd(struct rot *r, uint64_t off, uint64_t at_ns, struct dg_completion *c, bool *failed)
{
	int rc = seek_read(r->s, off, at_ns, c, failed);

	if (rc)
		return rc;
	if (!*failed) {
		r->fails = 0;
		return 0;
	}
	r->s->moved++;
	return ++r->fails >= MAX_FAILS ? -EIO : 0;
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
 * completion to the last (large reads: the media, not the command overhead, sets the pace).
 * *out stays NAN when a read failed (recorded; every read is reaped before returning). Returns 0,
 * -ECANCELED or -errno. */
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
	bool failed = false;
	while (got < STREAM_IOS) {
		if (seek_ctx_stopping(s))
			return -ECANCELED;
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
			t[got + (unsigned)i] = c[i].complete_ns;
			if (c[i].result == (int64_t)len)
				continue;
			failed = true; /* no estimate here */
			int e = dg_errors_add(s->errors, c[i].offset_bytes, len,
					      c[i].result < 0 ? (int)-c[i].result : EIO);
			if (e < 0)
				return e;
		}
		got += (unsigned)rc;
	}
	if (failed || t[STREAM_IOS - 1] <= t[2]) {
		s->moved += failed;
		return 0;
	}
	*out = ms_of(t[STREAM_IOS - 1] - t[2]) / (STREAM_IOS - 3.0) * s->block_bytes / len;
	return 0;
}

/* The host's jitter and the overhead without it, from JITTER_HITS hits on one block (after the
 * period, so that the rotation's own reads are as they were). A hit's service is the same every
 * time, so their spread is the jitter: its mean from the median's distance to the minimum
 * (exact for exponential delays, robust to a stall), the overhead the minimum less the
 * jitter's expected minimum (robust statistics over repeated identical commands; Worthington
 * et al. 1995 time the overhead on cache hits). The median stays the threshold that tells a
 * hit. Leaves the figures as they were when a place keeps failing. */
static int measure_jitter(struct rot *r)
{
	struct dg_completion c;
	double v[JITTER_HITS], lo = INFINITY;
	size_t nv = 0;
	bool failed;
	int rc;

	for (unsigned tries = 0; tries < 4 && nv < JITTER_HITS; tries++) {
		uint64_t p = next_place(r);
		if (p == UINT64_MAX)
			return 0;
		rc = rd(r, p, 0, &c, &failed);
		nv = 0;
		lo = INFINITY;
		while (rc == 0 && !failed && nv < JITTER_HITS) {
			rc = rd(r, p, 0, &c, &failed);
			if (rc == 0 && !failed) {
				v[nv] = ms_of(c.complete_ns - c.submit_ns);
				lo = v[nv] < lo ? v[nv] : lo;
				nv++;
			}
		}
		if (rc)
			return rc == -EIO ? 0
					  : rc; /* -EIO: reads keep failing, figures as they were */
	}
	if (nv < JITTER_HITS)
		return 0;
	double med = dg_median(v, nv);
	r->s->jitter_ms = (med - lo) / M_LN2;
	r->s->overhead_ms = fmax(lo - r->s->jitter_ms / (double)nv, 0.0);
	return 0;
}

/* Overhead: hits on a block just read. The first place that reads without error is used.
 * Returns 0, -ENOSPC (no place left), -ECANCELED, -EIO or -errno. */
static int measure_hits(struct rot *r)
{
	struct dg_completion c;
	double v[HITS];
	bool failed;
	int rc;

	for (;;) {
		size_t nv = 0;
		uint64_t p = next_place(r);
		if (p == UINT64_MAX)
			return -ENOSPC;
		rc = rd(r, p, 0, &c, &failed);
		if (rc)
			return rc;
		for (unsigned i = 0; i < HITS && !failed; i++) {
			rc = rd(r, p, 0, &c, &failed);
			if (rc)
				return rc;
			if (!failed)
				v[nv++] = ms_of(c.complete_ns - c.submit_ns);
		}
		if (nv < HITS / 2 + 1)
			continue;
		r->hit_ms = dg_median(v, nv);
		r->s->overhead_ms = r->s->hit_ms = r->hit_ms;
		r->s->k0_ms = r->hit_ms;
		/* the media rate right after the hits, at the next place */
		p = next_place(r);
		if (p == UINT64_MAX)
			return -ENOSPC;
		rc = stream_block_ms(r, p, &r->tb_ms);
		if (rc)
			return rc;
		if (isnan(r->tb_ms))
			continue; /* a failed read: the next places */
		r->tb_stream_ms = r->tb_ms;
		return 0;
	}
}

/* The access time that counts as no wait: the shortest, or on the robust try the 1-in-20 low
 * end (a few moves shorter than the rest, a head switch where most places need a seek, zoo 193,
 * or a short serpentine seek, zoo 29, set a shortest access that nearly every later P fails). */
static double low_ms(const struct rot *r)
{
	return r->robust ? r->pa[r->nP / LOW_FRACTION] : r->amin_ms;
}

/* The block offset of the Q reads: far enough back that P's wait cannot have reached it when P's
 * access was at most `spread`/6 above the shortest (look-behind holds no more than the wait).
 * The spread is a move and a wait of up to a turn, whose median lies about halfway: the highest
 * access counts up to 2.5 times the median's distance from the shortest, so that one the drive
 * delayed with its own work (zoo 64: 22.5 ms among 2-6 ms at 15000 rpm) cannot put Q a turn
 * back, where its interval wraps and the fine stages lock on a period twice as long. */
static unsigned g_for(const struct rot *r)
{
	double top = fmin(r->amax_ms, r->amin_ms + 2.5 * (r->pa[r->nP / 2] - r->amin_ms)),
	       wmax = (top - low_ms(r)) / 6;

	return (unsigned)ceil((wmax + 0.05) * 1.15 / r->tb_ms) + 2;
}

/* Reads P at a fresh place: 0 with *a_ms when P came from the media (not a cache hit) and its
 * wait was short enough for Q = P - g blocks to be uncached; 0 with *a_ms = NAN when not. */
static int read_p(struct rot *r, unsigned g, uint64_t *p, struct dg_completion *cp, double *a_ms)
{
	*a_ms = NAN;
	*p = next_place(r);
	if (*p == UINT64_MAX)
		return -ENOSPC;
	bool failed;
	int rc = rd(r, *p, 0, cp, &failed);
	if (rc || failed)
		return rc;
	double a = ms_of(cp->complete_ns - cp->submit_ns);
	if (a <= r->hit_ms * 1.5)
		return 0; /* P was cached (a read-ahead reached it): not a positioned read */
	if (r->nP == 0 || a < r->amin_ms)
		r->amin_ms = a;
	if (a > r->amax_ms)
		r->amax_ms = a;
	unsigned i = r->nP++;
	while (i > 0 && r->pa[i - 1] > a) {
		r->pa[i] = r->pa[i - 1];
		i--;
	}
	r->pa[i] = a;
	/* the wait before P is at most a - amin: Q must lie further back */
	if (r->nP < WARMUP || (a - low_ms(r) + 0.05) * 1.15 > (g - 2) * r->tb_ms)
		return 0;
	if ((uint64_t)g * r->s->block_bytes > *p)
		return 0;
	*a_ms = a;
	return 0;
}

/*
 * One sample: P at a fresh place, then Q = P - g blocks, submitted `k` - 1 revolutions of `T_ms`
 * after P completed (k 1: at once), so that Q completes k*T - g*tb after P. g is chosen by the
 * caller, never from P's own access time: P's completion carries the host's jitter, and a g
 * that grew with it would tie the jitter to g and bias the fit. Sets *iv_ms (Q's completion -
 * P's) when the sample counts, else NAN; returns 0, -ECANCELED, -ENOSPC (no place left), -EIO
 * (reads keep failing) or -errno.
 */
static int sample(struct rot *r, unsigned k, double T_ms, unsigned g, double *iv_ms,
		  double *delta_ms)
{
	struct dg_completion cp, cq;
	uint64_t p;
	double a;

	*iv_ms = NAN;
	int rc = read_p(r, g, &p, &cp, &a);
	if (rc || isnan(a))
		return rc;
	uint64_t at = 0;
	/* a random part of a quarter turn: the platter, not the submission, must set the
	 * completion (a flat device's intervals follow the submission) */
	*delta_ms = k > 1 ? seek_rand01(r->s) / 4 * T_ms : 0;
	if (k > 1)
		at = cp.complete_ns + (uint64_t)llround(((k - 1) * T_ms + *delta_ms) * 1e6);
	bool failed;
	rc = rd(r, p - (uint64_t)g * r->s->block_bytes, at, &cq, &failed);
	if (rc || failed)
		return rc;
	if (ms_of(cq.complete_ns - cq.submit_ns) <= r->hit_ms * 1.5) {
		/* Q was cached: the block time was guessed long (a stream slowed by lost
		 * revolutions); the caller may guess shorter, so that g reaches further. Not when
		 * P's wait may have passed Q (the robust try's P above the shortest access). */
		r->q_hits += (a - r->amin_ms + 0.05) * 1.15 <= (g - 2) * r->tb_ms;
		return 0;
	}
	*iv_ms = ms_of(cq.complete_ns - cp.complete_ns);
	return 0;
}

/* The period from the stage's samples (see stage()): 1 with *Tk set, 0 when the highest group
 * is too small to judge, or a lone sample lies above it (more samples may settle it; not when
 * `last`), -1 when the samples do not agree or follow the submission delays. */
static int stage_period(const struct rot *r, const double *iv_in, const double *dl_in,
			const double *t, size_t n, bool last, double *Tk)
{
	double iv[STAGE_MAX], dl[STAGE_MAX], ts[STAGE_MAX], iv_m[STAGE_MAX], dl_m[STAGE_MAX];
	double mid, lo, hi;
	size_t m = 0, g = 0;

	memcpy(ts, t, n * sizeof(*t));
	double turns = round(dg_median(ts, n));
	for (size_t i = 0; i < n; i++)
		if (t[i] == turns) {
			iv[m] = iv_in[i];
			dl[m++] = dl_in[i];
		}
	memcpy(iv_m, iv, m * sizeof(*iv));
	memcpy(dl_m, dl, m * sizeof(*dl));
	memcpy(ts, iv, m * sizeof(*iv));
	/* where asked (r->capped), only intervals up to a quarter turn above the one the period so
	 * far predicts: a Q on the track before P's that the drive reaches a turn later completes
	 * most of a turn above P's group (a serpentine band's long skew, zoo 42) */
	size_t below = m;
	if (r->capped) {
		dg_median(ts, m); /* sorts */
		while (below > 0 && ts[below - 1] > r->m0 + turns * r->T + r->T / 4)
			below--;
	}
	if (m * 2 <= n || !rot_upper_mode(ts, below, &mid, &lo, &hi))
		return -1; /* no agreement: no rotation */
	for (size_t top = below;;) {
		g = 0;
		for (size_t i = 0; i < m; i++)
			if (iv_m[i] >= lo && iv_m[i] <= hi) {
				iv[g] = iv_m[i];
				dl[g++] = dl_m[i];
			}
		if (g >= STAGE_GROUP || !last)
			break;
		/* the last try: a group above too small to judge (Q on another surface of a
		 * per-surface serpentine completes later, zoo 29) gives way to the next one down */
		while (top > 0 && ts[top - 1] >= lo)
			top--;
		if (!rot_upper_mode(ts, top, &mid, &lo, &hi))
			return -1;
	}
	if (g < STAGE_GROUP)
		return 0;
	/* a lone sample less than a turn above the group: Q on P's own track, the group's Qs on
	 * the previous one (a skew early), when P's track starts near P; or a late completion (the
	 * host's jitter). Another sample on P's track makes a group of its own. */
	for (size_t i = 0; i < below && !last; i++)
		if (ts[i] > hi + MODE_GAP_MS && ts[i] < hi + r->T / 2)
			return 0;
	if (rot_slope(dl, iv, g) > 0.5 && rot_follows_delays(iv_m, dl_m, m))
		return -1; /* the completions follow the submissions: a flat device */
	*Tk = (mid - r->m0) / turns;
	return 1;
}

/*
 * `want` samples of Q read k turns after P at the coarse stage's g0, each submitted a random
 * part of a quarter turn late. Each interval minus the coarse one (k = 1, the same g0) spans a
 * whole number of turns, counted (a submission that came a turn early or late counts its own);
 * the turns most samples agree on count. *Tk gets the highest group's median (see rot_upper_mode())
 * minus m0, over the turns; NAN when the intervals follow the submission delay (a flat device)
 * or no group of STAGE_GROUP forms (after more samples). A sample delayed by more than 1.5 turns
 * beyond what the period explains (a busy drive) is re-measured at the next place and counted in
 * the notes. Returns 0, -ECANCELED, -ENOSPC, -EIO or -errno.
 */
static int stage(struct rot *r, unsigned k, unsigned want, double *Tk)
{
	double iv[STAGE_MAX], dl[STAGE_MAX], T = r->T, t[STAGE_MAX];
	size_t n = 0;
	int rc;

	*Tk = NAN;
	for (;;) {
		while (n < want) {
			rc = sample(r, k, T, r->g0, &iv[n], &dl[n]);
			if (rc)
				return rc;
			if (isnan(iv[n]))
				continue;
			t[n] = round((iv[n] - r->m0) / T);
			if (t[n] < 1 || t[n] > k + 1) {
				r->s->stalls += t[n] > k + 1; /* a busy drive: later, elsewhere */
				continue;
			}
			n++;
		}
		rc = stage_period(r, iv, dl, t, n, n + 3 > STAGE_MAX, Tk);
		if (rc || n + 3 > STAGE_MAX)
			return 0;
		want = n + 3; /* too few agree to judge: more samples */
	}
}

/*
 * The coarse stage: Q read at once, g0 blocks back from P: the interval T - g0*tb. A Q that fell
 * on another track completes a skew away from the ones on P's track (earlier on the track before;
 * later on a per-surface serpentine), so the samples form groups, and which one is P's track is
 * not known here (zoo 15: the higher holds 4 of 9; zoo 29: the lower holds 7): every group of a
 * quarter of the samples is kept, highest first, for lock() to try (m0 + g0*tb with the stream's
 * block time, which carries the track switches and is a few percent long). Q reads that keep
 * hitting the cache mean the block-time guess was long: shorter, and start again. Returns 0
 * (r->g0 and r->cand set; no candidate when the samples do not agree), -ECANCELED, -ENOSPC, -EIO
 * or -errno.
 */
static int coarse(struct rot *r)
{
	double v[STAGE_MAX];
	size_t n;
	int rc;

	r->T = NAN;
	while (r->nP < WARMUP) { /* the spread of access times first: it sets g */
		uint64_t p;
		struct dg_completion c;
		double a;
		rc = read_p(r, 2, &p, &c, &a);
		if (rc)
			return rc;
	}
	for (;;) {
		r->g0 = g_for(r);
		r->q_hits = 0;
		n = 0;
		while (n < COARSE_EACH && r->q_hits < 3) {
			double iv, delta;
			rc = sample(r, 1, 0, r->g0, &iv, &delta);
			if (rc)
				return rc;
			if (!isnan(iv))
				v[n++] = iv;
		}
		if (r->q_hits < 3)
			break;
		r->tb_ms *= 0.8;
	}
	r->ncand = rot_modes(v, n, r->cand, r->csize); /* none: no interval that samples agree on */
	return 0;
}

/* Whether the coarse group tried is in doubt: a group before it failed, or another holds as
 * many samples. */
static bool disputed(const struct rot *r)
{
	if (r->ci > 0)
		return true;
	for (unsigned i = 0; i < r->ncand; i++)
		if (i != r->ci && r->csize[i] >= r->csize[r->ci])
			return true;
	return false;
}

/*
 * T from Q read k turns after P at the coarse stage's g0: the interval is k*T - g0*tb, so the
 * difference of its median from the coarse one (k = 1, the same g0) is (k - 1)*T whatever the
 * block time: no block-time error enters T, and the jitter is divided by k - 1. A few turns
 * first (a coarse T a few percent off cannot be taken for a turn more or less), then more.
 * When another coarse group is as large, a stage at odd k as well: m0 taken from a group off P's
 * track by half a turn (a per-surface serpentine's skew, zoo 29: 5.47 ms against 3.43 at 4.0 ms a
 * turn) fits a period of 1.5 turns at every even k, and at k = 3 misses it by a fifth. Leaves r->T
 * NAN when the stages do not lock.
 */
static int fine(struct rot *r)
{
	static const unsigned turns[] = {2, 3, 8, 40}, wants[] = {7, 5, 7, 9};
	double T0 = r->T;
	int rc;

	for (size_t i = 0; i < ARRAY_SIZE(turns); i++) {
		double Tk;
		if (turns[i] == 3 && !disputed(r))
			continue; /* the first and largest coarse group: no other to tell apart */
		rc = stage(r, turns[i], wants[i], &Tk);
		if (rc)
			return rc;
		if (!(fabs(Tk - T0) < 0.15 * T0)) {
			r->T = NAN; /* no lock (or no rotation): no figure */
			return 0;
		}
		r->T = Tk;
	}
	return 0;
}

/* The period: each coarse group in turn (highest first: a Q on the track before P's completes a
 * skew early) taken for P's own track, until the fine stages lock on one. Every interval of the
 * fine stages lies on the platter's lattice, m + j*T, so a group off P's track by part of a turn
 * can lock on a period a turn and a half or more long (zoo 42, measured 10008 rpm for 15000:
 * every stage's intervals fit j turns of the wrong period within the jitter): where the groups
 * are disputed, the next group is tried as well, and two locks that differ give no period at all
 * (the second try, or no figure, rather than one that cannot be vouched for). Returns 0 (r->T
 * NAN when none locks), -ECANCELED, -ENOSPC, -EIO or -errno. */
static int lock(struct rot *r)
{
	double T = NAN, m0 = NAN;

	for (unsigned i = 0; i < r->ncand; i++) {
		r->ci = i;
		r->m0 = r->cand[i];
		r->T = r->m0 + r->g0 * r->tb_ms;
		if (!(r->T >= 2.5 && r->T <= 25))
			continue; /* 2400..24000 rpm */
		int rc = fine(r);
		if (rc)
			return rc; /* the places ran out on the check too: no figure */
		if (!isfinite(r->T))
			continue;
		if (isfinite(T)) {
			r->T = fabs(r->T - T) < 0.01 * T ? T : NAN; /* agree, or no figure */
			r->m0 = m0;
			return 0;
		}
		T = r->T;
		m0 = r->m0;
		if (!disputed(r))
			return 0;
	}
	r->T = T;
	r->m0 = m0;
	return 0;
}

/* One try at the period (see seek_rotation_measure()): the hits, the coarse and the fine stages.
 * Returns 0 (r->T NAN when no period was found), -ENOSPC (the places ran out), -ECANCELED,
 * -EIO or -errno. */
static int try_period(struct rot *r)
{
	int rc = measure_hits(r);

	r->T = NAN;
	if (rc == 0 && r->tb_ms > 0)
		rc = coarse(r);
	if (rc == 0)
		rc = lock(r);
	if (rc || !isfinite(r->T))
		return rc;
	/* the block time from the coarse interval T - g0*tb: at least 16 blocks a track, near the
	 * stream's (which carries the track switches) */
	double tb = (r->T - r->m0) / r->g0;
	if (!(tb > 0.4 * r->tb_stream_ms && tb < 1.6 * r->tb_stream_ms && tb < r->T / 16))
		r->T = NAN;
	else
		r->tb_ms = tb;
	return 0;
}

/*
 * Two tries at most, each on places of its own: the first counts P's wait from the shortest
 * access and takes the highest fine group; where it finds no period, the second counts from the
 * 1-in-20 low end of the accesses and caps the fine groups a quarter turn above the interval
 * the period so far predicts (low_ms(), stage_period()). The second try alone would do on the
 * zoo, but the first is what holds in real time on diskgeo-simdisk (a noisy host lets a cached
 * Q pass for a media read when P's wait may have reached it), so it decides wherever it can.
 */
int seek_rotation_measure(struct seek_ctx *s, uint64_t at, bool second_try)
{
	struct rot r;
	uint64_t stride = STRIDE_BYTES;
	int rc = 0;

	s->rotating = false;
	s->period_ns = s->drift_ns = 0;
	s->overhead_ms = s->k0_ms = s->hit_ms = NAN;
	s->jitter_ms = 0;
	if (s->capacity_bytes / 4 < stride * PLACES)
		stride = (s->capacity_bytes / 4 / PLACES) / s->block_bytes * s->block_bytes;
	if (stride < (uint64_t)STREAM_READ_BYTES * STREAM_IOS)
		return 0; /* too small a device for fresh places */
	for (unsigned t = 0; t < 1u + second_try; t++) {
		r = (struct rot){.s = s, .stride = stride, .robust = t == 1, .capped = second_try};
		r.top = at + (t + 1ull) * PLACES * stride;
		if (r.top + stride > s->capacity_bytes)
			r.top = s->capacity_bytes - stride;
		rc = try_period(&r);
		if (rc == -EIO)
			s->rotation_failing = true;
		if (rc == -EIO || (rc && rc != -ENOSPC))
			return rc == -EIO ? 0 : rc; /* reads kept failing: no rotation found */
		if (rc == 0 && isfinite(r.T))
			break;
	}
	if (rc || !isfinite(r.T))
		return 0; /* places ran out, or no period: no rotation found */
	rc = measure_jitter(&r);
	if (rc)
		return rc;
	s->rotating = true;
	s->period_ns = r.T * 1e6;
	s->drift_ns = r.tb_ms * 1e6;
	s->k0_ms = s->overhead_ms + r.tb_ms;
	return 0;
}
