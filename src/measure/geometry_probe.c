/* SPDX-License-Identifier: MIT */
/*
 * The phase probe and the track walk of the geometry measurement (see include/diskgeo/geometry.h).
 *
 * Angular position by completion time modulo the period (Wong 2019): a probe reads the place's
 * reference sector, then the target sector; both are positioned accesses (the reference lies
 * GEO_FAR_BYTES away, beyond any read-ahead, and each read moves the drive's stream away from
 * the other), so the target completes when its sector's end passes under the head, and its
 * completion minus the reference's, modulo T, is its angle plus a constant. A read that
 * completes like a cache hit makes the probe unusable; it is never turned into a phase.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "geometry_priv.h"

#define CAL_PROBES     9u  /* probes of the noise measurement (twice) */
#define AWAY_REF_EVERY 4u  /* the reference is read at least every this many probes */
#define AWAY_MARGIN    0.1 /* a read's slack kept when its completion is predicted (turns) */
#define AWAY_FIT       64u /* reference points the fit has before a probe reads elsewhere */

void geo_place_begin(struct geo *g, uint64_t x)
{
	uint64_t far = GEO_FAR_BYTES / g->psec;

	/* behind the place: walks and runs go forward, away from it (places start far enough in) */
	g->ref = x >= g->lo_psec + far ? x - far : x + 64 * far;
	g->nmemo = 0;
	g->bad = 0;
	g->place_t0_ns = seek_ctx_used_ns(&g->s);
	/* a new reference: the period found so far becomes the fit's base; the last place's fit
	 * joins the earlier ones' period (least squares: one slope, an intercept a place) */
	if (g->fn >= 8) {
		g->Tp_ns = (g->pw * g->Tp_ns + g->fvar * (g->T0_ns + g->fd)) / (g->pw + g->fvar);
		g->pw += g->fvar;
	}
	g->T0_ns = g->T_ns;
	g->fn = 0;
	g->nrev = 0;
	/* the first reads a probe may take: the reference and sectors a quarter of a track apart
	 * after it (the same sector again where the track size is unknown or the range ends) */
	uint64_t q = g->trk >= 2 * GEO_AWAY ? g->trk / GEO_AWAY : 0;
	for (unsigned k = 0; k < GEO_AWAY; k++) {
		g->away[k] = g->ref + k * q < g->npsec ? g->ref + k * q : g->ref;
		g->away_seen[k] = false;
		g->away_ph[k] = 0;
	}
	g->lat_away_ns = g->lat_tgt_ns = INFINITY;
	g->since_ref = 0;
}

/* Least squares e = a + d x over the points whose residual from (a0, d0) is at most `cut`
 * (all with cut = INFINITY), the slope shared with points of slope dp spread by w (the sum of
 * their revolutions' squares about their mean; 0 = none). Returns the points' own spread. */
static double line_fit(const struct geo *g, unsigned n, double a0, double d0, double cut, double w,
		       double dp, double *a, double *d)
{
	double sx = 0, se = 0, sxx = 0, sxe = 0, m = 0;

	for (unsigned i = 0; i < n; i++) {
		double x = g->fx[i], e = g->fe[i];
		if (e - (a0 + d0 * x) > cut)
			continue;
		m++;
		sx += x;
		se += e;
		sxx += x * x;
		sxe += x * e;
	}
	double var = sxx - sx * sx / m;
	*d = m >= 3 && var + w > 0 ? (sxe - sx * se / m + w * dp) / (var + w) : 0;
	*a = (se - *d * sx) / m;
	return var;
}

/* Adds the reference's completion at `t` to the fit (its line: fa, fd; phase_now() reads it).
 * The host only ever delays a completion: a first fit, then again without the points far above
 * it (hiccups), so that neither the line nor the period follows them. */
static void ref_fit(struct geo *g, double t)
{
	double res[GEO_FIT], a, d;

	if (g->fn > 0)
		g->nrev += llround((t - g->flast_ns) / g->T_ns);
	g->flast_ns = t;
	double x = (double)g->nrev;
	g->fx[g->fn % GEO_FIT] = x;
	g->fe[g->fn % GEO_FIT] = t - x * g->T0_ns;
	g->fn++;
	unsigned n = g->fn < GEO_FIT ? g->fn : GEO_FIT;
	line_fit(g, n, 0, 0, INFINITY, 0, 0, &a, &d);
	for (unsigned i = 0; i < n; i++)
		res[i] = g->fe[i] - (a + d * g->fx[i]);
	double med = dg_median(res, n);
	for (unsigned i = 0; i < n; i++)
		res[i] = fabs(g->fe[i] - (a + d * g->fx[i]) - med);
	double mad = dg_median(res, n);
	double cut = med + 3 * 1.4826 * mad + 1e3;
	/* the line with the earlier places' period too, for phase deltas (phase_now) */
	line_fit(g, n, a, d, cut, g->pw, g->Tp_ns - g->T0_ns, &g->fpa, &g->fpd);
	g->fvar = line_fit(g, n, a, d, cut, 0, 0, &a, &d);
	if (g->fn >= 8)
		g->T_ns = g->T0_ns + d;
	g->fa = a;
	g->fd = d;
}

int geo_fail(struct geo *g, const char *why)
{
	g->why = why;
	return 1;
}

bool geo_place_overtime(struct geo *g)
{
	return seek_ctx_used_ns(&g->s) - g->place_t0_ns > g->place_max_ns;
}

bool geo_out_of_time(struct geo *g)
{
	return seek_ctx_used_ns(&g->s) >= g->budget_end_ns;
}

/* The phase at time t of the fit's line at revolution `rev` (any revolution: a phase is modulo
 * the period). */
static double phase_now(const struct geo *g, double t, int64_t rev)
{
	double tf = g->fa + (double)rev * (g->T0_ns + g->fd), ph = fmod((t - tf) / g->T_ns, 1.0);

	return ph < 0 ? ph + 1 : ph;
}

/* When a read issued at t0 of a sector whose completions fall at phase `ph` completes at the
 * soonest: its quickest completion at this place (lat_ns) plus a margin, then the wait for it. */
static double arrival(const struct geo *g, double t0, double lat_ns, double ph)
{
	double t = t0 + lat_ns + AWAY_MARGIN * g->T_ns;

	return t + fmod(ph - phase_now(g, t, g->nrev) + 1, 1.0) * g->T_ns;
}

/* The first read of a probe whose target's phase is `want` (NAN: unknown): the index of the away
 * sector (0: the reference) after which the target completes soonest. A probe costs two moves
 * and two rotational waits whose sum is a whole number of turns when the target is the last
 * one again; a fixed reference makes it a turn more than needed for a third of the targets. The
 * reference is taken for a new target, until the fit holds AWAY_FIT points, at least every
 * AWAY_REF_EVERY probes (the line is read a few turns from its last point at most: its slope's
 * error grows with the distance) and wherever it is within a twentieth of a turn of the best; an
 * away sector whose phase is unknown is taken once to learn it. */
static unsigned pick_away(struct geo *g, double want)
{
	double done[GEO_AWAY], t0 = (double)dg_engine_now_ns(g->s.e);
	unsigned best = 0;

	if (!g->away_ok || isnan(want) || g->fn < AWAY_FIT || g->since_ref >= AWAY_REF_EVERY ||
	    isinf(g->lat_tgt_ns))
		return 0;
	for (unsigned k = 1; k < GEO_AWAY; k++)
		if (!g->away_seen[k] && g->away[k] != g->ref)
			return k;
	for (unsigned k = 0; k < GEO_AWAY; k++) {
		done[k] = INFINITY;
		if (k && g->away[k] == g->ref)
			continue;
		double ta = arrival(g, t0, g->lat_away_ns, g->away_ph[k]);
		done[k] = arrival(g, ta, g->lat_tgt_ns, want);
		best = done[k] < done[best] ? k : best;
	}
	return done[0] <= done[best] + 0.05 * g->T_ns ? 0 : best;
}

/* What a probe's reads taught: the away sector's phase (its earliest; the host only delays a
 * completion) and the quickest reads. */
static void away_learn(struct geo *g, unsigned k, const struct dg_completion *ca,
		       const struct dg_completion *cx)
{
	double p = phase_now(g, (double)ca->complete_ns, g->nrev);

	if (!g->away_seen[k] || geo_wrap(p - g->away_ph[k]) < 0)
		g->away_ph[k] = p;
	g->away_seen[k] = true;
	/* the away sectors lie on one track: their moves cost alike */
	g->lat_away_ns = fmin(g->lat_away_ns, (double)(ca->complete_ns - ca->submit_ns));
	g->lat_tgt_ns = fmin(g->lat_tgt_ns, (double)(cx->complete_ns - cx->submit_ns));
	g->since_ref = k ? g->since_ref + 1 : 0;
}

/* One probe: an away read (the reference, or a sector after it: pick_away), the target read;
 * `want` is the target's phase expected (NAN: unknown). 0, 1 (unusable), 2 (stopped) or -errno. */
int geo_probe_once(struct geo *g, uint64_t x, double want, double *ph)
{
	struct dg_completion cf, cx;
	int rc;

	if (geo_out_of_time(g))
		return 2;
	unsigned k = pick_away(g, want);
	rc = geo_read(&g->s, g->away[k] * g->psec, 0, &cf);
	if (rc)
		return rc;
	rc = geo_read(&g->s, x * g->psec, 0, &cx);
	if (rc)
		return rc;
	g->probes++;
#ifdef GEO_TRACE
	fprintf(stderr, "  F %.3f x %.3f hit %.3f away %u %llu %llu\n",
		(double)(cf.complete_ns - cf.submit_ns) / 1e6,
		(double)(cx.complete_ns - cx.submit_ns) / 1e6, g->hit_ms, k,
		(unsigned long long)g->away[k], (unsigned long long)x);
#endif
	if ((double)(cf.complete_ns - cf.submit_ns) / 1e6 < g->hit_ms ||
	    (double)(cx.complete_ns - cx.submit_ns) / 1e6 < g->hit_ms)
		return 1;
	if (!k)
		ref_fit(g, (double)cf.complete_ns);
	if (g->fn >= 8)
		away_learn(g, k, &cf, &cx);
	g->last_cx_ns = (double)cx.complete_ns;
	g->last_rev = g->nrev;
	*ph = phase_now(g, (double)cx.complete_ns, g->nrev);
#ifdef GEO_TRACE
	fprintf(stderr, "  P %u %llu %.5f %lld %u %.4f %.4f\n", k, (unsigned long long)x, *ph,
		(long long)g->nrev, g->fn, ((double)cx.complete_ns - g->flast_ns) / g->T_ns, g->fd);
#endif
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double geo_circ_pick(double *v, unsigned n, bool median)
{
	for (unsigned i = 1; i < n; i++)
		v[i] = v[0] + geo_wrap(v[i] - v[0]);
	qsort(v, n, sizeof(*v), cmp_double);
	double m = median ? v[n / 2] : v[0];
	m = fmod(m, 1.0);
	return m < 0 ? m + 1 : m;
}

/* The earlier of phases a (NAN: none yet) and b: a target's phase expected for its next probe. */
double geo_earliest(double a, double b)
{
	return isnan(a) || geo_wrap(b - a) < 0 ? b : a;
}

/* n probes of x; the earliest (or the median) in *ph. Unusable probes are retried a few times. */
static int probe_median(struct geo *g, uint64_t x, unsigned n, double *ph, double *v, bool median)
{
	unsigned got = 0, tries = 0;
	double want = NAN;
	int rc;

	while (got < n) {
		if (++tries > 2 * n + 2) {
			g->why = "the probes there were unusable (cache hits or failed reads)";
			return 1;
		}
		rc = geo_probe_once(g, x, want, &v[got]);
		if (rc == 1) {
			g->bad++;
			continue;
		}
		if (rc)
			return rc;
		want = geo_earliest(want, v[got]);
		got++;
	}
	*ph = geo_circ_pick(v, n, median);
	return 0;
}

int geo_phase(struct geo *g, uint64_t x, double *ph)
{
	double v[2 * CAL_PROBES + 4];
	int rc;

	for (unsigned i = 0; i < g->nmemo; i++)
		if (g->memo[i].x == x) {
			*ph = g->memo[i].ph;
			return 0;
		}
	if (x >= g->npsec || x < g->lo_psec)
		return geo_fail(g, "a probe fell outside the range");
	rc = probe_median(g, x, g->repeats, ph, v, false);
#ifdef GEO_TRACE
	fprintf(stderr, "phase %llu -> rc %d %.5f\n", (unsigned long long)x, rc, rc ? -1 : *ph);
#endif
	if (rc)
		return rc;
	if (g->nmemo == GEO_MEMO)
		g->nmemo = 0; /* a long walk: the oldest phases are not needed again */
	g->memo[g->nmemo++] = (struct geo_memo){x, *ph};
	return 0;
}

int geo_phase_coarse(struct geo *g, uint64_t x, unsigned n, double *ph)
{
	double v[2 * CAL_PROBES + 4];

	for (unsigned i = 0; i < g->nmemo; i++)
		if (g->memo[i].x == x) {
			*ph = g->memo[i].ph;
			return 0;
		}
	if (x >= g->npsec || x < g->lo_psec)
		return geo_fail(g, "a probe fell outside the range");
	n = n < g->repeats ? n : g->repeats;
	return probe_median(g, x, n ? n : 1, ph, v, false);
}

int geo_phase_fine(struct geo *g, uint64_t x, double *ph)
{
	double v[64];
	unsigned n = 4 * g->repeats < 64 ? 4 * g->repeats : 64;

	if (x >= g->npsec || x < g->lo_psec)
		return geo_fail(g, "a probe fell outside the range");
	return probe_median(g, x, n, ph, v, false);
}

int geo_calibrate(struct geo *g, uint64_t x)
{
	double v[CAL_PROBES], m, dev[CAL_PROBES];
	int rc;

	/* twice: the first probes settle the reference's fit (the period) */
	for (unsigned pass = 0; pass < 2; pass++) {
		rc = probe_median(g, x, CAL_PROBES, &m, v, true);
		if (rc)
			return rc;
	}
	for (unsigned i = 0; i < CAL_PROBES; i++)
		dev[i] = fabs(geo_wrap(v[i] - m));
	qsort(dev, CAL_PROBES, sizeof(*dev), cmp_double);
	double sd = 1.4826 * dev[CAL_PROBES / 2]; /* one probe's spread (MAD) */
	double tail = dev[CAL_PROBES - 2];	  /* and its tail (a host's hiccups) */
#ifdef GEO_TRACE
	fprintf(stderr, "CALIBRATE %llu: sd %.5f tail %.5f\n", (unsigned long long)x, sd, tail);
#endif
	g->sd = sd;
	g->tail = tail;
	if (sd > 0.03)
		return 1; /* no phase lock at this place */
	g->repeats = sd < 0.0015 ? 1 : sd < 0.004 ? 3 : sd < 0.008 ? 5 : 9;
	if (tail > 4 * sd && g->repeats < 5)
		g->repeats = 5;		  /* a heavy tail: the earliest of more */
	g->noise = sd * 1.5 / g->repeats; /* the earliest of n: jitter / n */
	g->thr = fmax(fmax(0.008, 6 * g->noise), 0.5 * tail);
	return 0;
}

/* The deviation of y's phase from x's track of slope sl (rev per sector) in *d: 0, else rc. */
static int deviation(struct geo *g, uint64_t x, uint64_t y, double sl, double *d)
{
	double a, b;
	int rc = geo_phase(g, x, &a);

	if (!rc)
		rc = geo_phase(g, y, &b);
	if (!rc)
		*d = geo_wrap(b - a - ((double)y - (double)x) * sl);
	return rc;
}

/* 1 when x and y lie on one track of slope sl, 0 when not, else rc + 10. */
static int same(struct geo *g, uint64_t x, uint64_t y, double sl)
{
	double d;
	int rc = deviation(g, x, y, sl, &d);

	return rc ? rc + 10 : fabs(d) < g->thr;
}

/* Whether the step from sector x to x + 1 is a track boundary: 1 when it is, 0 when not, else
 * rc + 10. A skew only ever delays the next track's first sector, so a small negative
 * deviation is noise (an early probe), never a boundary; a skew of most of a turn wraps to a
 * large negative one. */
static int jump_at(struct geo *g, uint64_t x, double sl)
{
	double d;
	int rc = deviation(g, x, x + 1, sl, &d);

	return rc ? rc + 10 : d > g->thr || d < -fmax(3 * g->thr, 0.05);
}

/* The first sector of a new track in (lo, hi]: lo on the track of slope sl, hi not. Each step
 * compares with the nearest sector known on the track (lo); the last step's jump is checked
 * again, and a boundary that does not show one was a noisy step: the search goes on above it.
 * Boundary bisection (Wong 2019). 0 with *b, 3 when (lo, hi] holds no boundary after all (a
 * noisy step: the caller searches on), else as geo_phase. */
static int bisect(struct geo *g, double sl, uint64_t lo, uint64_t hi, uint64_t *b)
{
	uint64_t top = hi;

	for (unsigned again = 0; again < 4; again++) {
		while (hi - lo > 1) {
			uint64_t mid = lo + (hi - lo) / 2;
			int r = same(g, lo, mid, sl);
			if (r >= 10)
				return r - 10;
			if (r)
				lo = mid;
			else
				hi = mid;
		}
		int r = jump_at(g, lo, sl);
		if (r >= 10)
			return r - 10;
		if (r) {
			*b = hi;
			return 0;
		}
		if (hi == top)
			return 3;
		lo = hi;
		hi = top;
	}
	return 3;
}

/* The step d (sectors) of about an eighth of a turn from x: doubling from 1 until the phase
 * advances 0.08 of a turn (p0: the phase of x). 0, else as geo_phase. */
static int step_by_doubling(struct geo *g, uint64_t x, double p0, uint64_t *d)
{
	double p1;

	for (*d = 1;; *d *= 2) {
		if (*d > (1u << 16))
			return geo_fail(g, "the first track's phases do not advance");
		int rc = geo_phase(g, x + *d, &p1);
		if (rc)
			return rc;
		if (geo_wrap(p1 - p0) > 0.08)
			break;
	}
	*d = (uint64_t)((double)*d * 0.12 / geo_wrap(p1 - p0)) + 1;
	return 0;
}

/* The slope (rev per sector) from four steps of d from x: the median two of them in *sl (the
 * three that agree; a jump marks a boundary). 0, else as geo_phase. */
static int slope_of_steps(struct geo *g, uint64_t x, uint64_t d, double *sl)
{
	double ph[5], st[4];

	for (unsigned i = 0; i < 5; i++) {
		int rc = geo_phase(g, x + i * d, &ph[i]);
		if (rc)
			return rc;
		if (i)
			st[i - 1] = geo_wrap(ph[i] - ph[i - 1]);
	}
	qsort(st, 4, sizeof(*st), cmp_double);
	*sl = (st[1] + st[2]) / 2 / (double)d;
	return 0;
}

/* Whether a step d from x (phase p0) of slope sl holds a track's slope: its track within a
 * factor of two of `hint` and the phase half way where the slope puts it (a step over whole
 * tracks advances by their skews only, and half way by half a turn more; once that held, the
 * hints are not checked half way again). 0 yes, 3 no, else as geo_phase. */
static int step_holds(struct geo *g, uint64_t x, double p0, uint64_t d, double sl, uint32_t hint)
{
	double ph;

	if (!(sl * hint > 0.5 && sl * hint < 2) || d < 2)
		return 3;
	if (g->hint_ok)
		return 0;
	int rc = geo_phase(g, x + d / 2, &ph);
	if (rc)
		return rc;
	double dev = geo_wrap(ph - p0 - sl * (double)(d / 2));
	g->hint_ok = fabs(dev) < fmax(2 * g->thr, sl * (double)d / 4);
	return g->hint_ok ? 0 : 3;
}

/* The first track boundary after x (bisection of Wong 2019 on the track's slope). `hint` (0:
 * none) is a track size expected: a step of an eighth of it, kept where it holds a track's
 * slope (step_holds: a hint many times the track, from a rotation measurement gone wrong,
 * would step over whole tracks), else the step is found by doubling. */
static int first_boundary(struct geo *g, uint64_t x, uint32_t hint, uint64_t *b, double *sl)
{
	double p0;
	uint64_t d = hint / 8;
	int rc = geo_phase(g, x, &p0);

	if (!rc)
		rc = hint >= 8 ? slope_of_steps(g, x, d, sl) : 3;
	if (!rc)
		rc = step_holds(g, x, p0, d, *sl, hint);
	if (rc == 3) {
		rc = step_by_doubling(g, x, p0, &d);
		if (!rc)
			rc = slope_of_steps(g, x, d, sl);
	}
	if (rc)
		return rc;
	if (!(*sl > 0))
		return geo_fail(g, "the first track's phases do not advance");
	for (uint64_t i = 0; i < 64; i++) {
		uint64_t y0 = x + i * d, y1 = y0 + d;
		int r = same(g, y0, y1, *sl);
		if (r >= 10)
			return r - 10;
		if (r)
			continue;
		r = bisect(g, *sl, y0, y1, b);
		if (r != 3)
			return r; /* else a noisy step: the scan goes on */
	}
	return geo_fail(g, "no track boundary within 64 steps of the place");
}

/* Tries the end of the track at b (slope sl, known on the track up to `lo`) at b + c. */
static int try_end(struct geo *g, uint64_t lo, double sl, uint64_t e)
{
	int r = same(g, lo, e - 1, sl);

	if (r != 1)
		return r;
	return jump_at(g, e - 1, sl);
}

/* The end of the track that starts at b: candidates first, then bisection in a window. */
static int track_end(struct geo *g, uint64_t b, uint32_t ref, const uint32_t *cand, unsigned ncand,
		     uint64_t *end)
{
	uint64_t m = (uint64_t)(0.4 * ref) + 1;
	double p0, p1;
	int rc = geo_phase(g, b, &p0);

	if (!rc)
		rc = geo_phase(g, b + m, &p1);
	if (rc)
		return rc;
	double sl = geo_wrap(p1 - p0) / (double)m;
	if (!(sl > 0)) {
		/* b a sector or two early (a noisy boundary): the slope from further in */
		rc = geo_phase(g, b + m / 8, &p0);
		if (rc)
			return rc;
		sl = geo_wrap(p1 - p0) / (double)(m - m / 8);
	}
	if (!(sl > 0)) {
		g->why = "a track's phases do not advance (no phase lock)";
		return 1;
	}
	double est = 1 / sl;
	uint64_t w = (uint64_t)(0.02 * est + 12 * g->noise * est) + 2;
	for (unsigned i = 0; i < ncand; i++) {
		if (fabs((double)cand[i] - est) > (double)w || cand[i] <= m + 1)
			continue;
		int r = try_end(g, b + m, sl, b + cand[i]);
		if (r >= 10)
			return r - 10;
		if (r) {
			*end = b + cand[i];
			return 0;
		}
	}
	uint64_t lo = b + m, hi = b + (uint64_t)est + w;
	for (unsigned k = 0; k < 6; k++) {
		int r = same(g, lo, hi, sl);
		if (r >= 10)
			return r - 10;
		if (!r) {
			r = bisect(g, sl, lo, hi, end);
			if (r != 3)
				return r;
		}
		lo = hi; /* no boundary up to hi (or a noisy step): the window moves on */
		hi += w;
	}
	return geo_fail(g, "no track boundary where the track's slope put it");
}

int geo_track_end(struct geo *g, uint64_t b, uint32_t ref, const uint32_t *cand, unsigned ncand,
		  uint64_t *end)
{
	return track_end(g, b, ref, cand, ncand, end);
}

/* Adds `v` to the front of the recent sizes (distinct, most recent first). */
static void remember(uint32_t *cand, unsigned *n, unsigned max, uint32_t v)
{
	unsigned i, j;

	for (i = 0; i < *n && cand[i] != v; i++)
		;
	if (i == *n && *n < max)
		(*n)++;
	if (i == *n)
		i = *n - 1;
	for (j = i; j > 0; j--)
		cand[j] = cand[j - 1];
	cand[0] = v;
}

int geo_walk(struct geo *g, uint64_t x, uint32_t hint, const uint32_t *cycle, unsigned ncycle,
	     struct geo_track *t, unsigned max, unsigned *n, const char **why)
{
	uint32_t cand[DG_GEOMETRY_MAX_HEADS + 4];
	unsigned nc = 0;
	double sl = 0, a, b;
	uint64_t s = 0;
	int rc;

	*n = 0;
	*why = "the probes there were unusable (cache hits, failed reads or no phase lock)";
	for (unsigned i = 0; i < ncycle && i < DG_GEOMETRY_MAX_HEADS; i++)
		remember(cand, &nc, DG_GEOMETRY_MAX_HEADS + 4, cycle[ncycle - 1 - i]);
	rc = first_boundary(g, x, hint, &s, &sl);
	if (rc)
		return rc;
	t[0] = (struct geo_track){.start = s, .jump = NAN, .skew = NAN, .tau_ms = NAN};
	*n = 1;
	uint32_t ref = (uint32_t)(1 / sl);
	while (*n < max) {
		uint64_t e = 0;
		struct geo_track *c = &t[*n - 1];
		rc = track_end(g, c->start, ref, cand, nc, &e);
		if (rc)
			return rc;
		c->size = (uint32_t)(e - c->start);
		if (*n > 1)
			c->skew = c->jump * c->size - 1;
		if (*n > 1)
			c->tau_ms = (c->skew - 1) * g->T_ns / 1e6 / c->size;
		remember(cand, &nc, DG_GEOMETRY_MAX_HEADS + 4, c->size);
#ifdef GEO_TRACE
		fprintf(stderr, "TRACK %llu size %u skew %.2f jump %.4f\n",
			(unsigned long long)c->start, c->size, c->skew, c->jump);
#endif
		ref = c->size;
		rc = geo_phase(g, e - 1, &a);
		if (!rc)
			rc = geo_phase(g, e, &b);
		if (rc)
			return rc;
		t[*n] = (struct geo_track){
		    .start = e, .jump = geo_wrap(b - a), .skew = NAN, .tau_ms = NAN};
		if (t[*n].jump < 0)
			t[*n].jump += 1;
		(*n)++;
	}
	(*n)--; /* the last one's size is unknown */
	return 0;
}
