/* SPDX-License-Identifier: MIT */
/*
 * The probes of the serpentine zone search (src/geometry_zserp.c) on a zone's band grid: a band
 * that still exists (bisection on the band index), the length of a surface's run (its phases
 * predicted from its size and cylinder step: Wong 2019's run end, as geometry_band.c), a track
 * size read against a prediction, a run's start told by its phase jump, and skews reported
 * only where repeated measurements agree.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "geometry_zserp.h"

/* A track of S sectors at p: p and p + S - 1 on one track of slope 1/S, a track boundary at
 * p + S (a cylinder step: its skew shows). 0 yes, 3 no, else as geo_phase. */
int geo_grid_ok(struct geo *g, uint64_t p, uint32_t S)
{
	double a, b, c;
	int rc;

	if (p < g->lo_psec || p + S + 1 >= g->npsec)
		return 3;
	rc = geo_phase(g, p, &a);
	if (!rc)
		rc = geo_phase(g, p + S - 1, &b);
	if (!rc)
		rc = geo_phase(g, p + S, &c);
	if (rc)
		return rc;
	double d = geo_wrap(c - b - 1.0 / S);
#ifdef GEO_TRACE
	fprintf(stderr, "  grid %llu S %u: same %.4f jump %.4f thr %.4f\n", (unsigned long long)p,
		S, geo_wrap(b - a - (double)(S - 1) / S), d, g->thr);
#endif
	/* the two ends of a track are the noisiest pair: a size 3 thr S off is told apart */
	if (fabs(geo_wrap(b - a - (double)(S - 1) / S)) >= 3 * g->thr)
		return 3;
	return d > g->thr || d < -fmax(3 * g->thr, 0.05) ? 0 : 3;
}

/* Band m of zone A exists: its first surface's first track (else, where the probes there are
 * unusable, its second). 0 yes, 3 no, 2 or -errno. */
int geo_band_test(struct geo *g, const struct geo_sz *A, int64_t m)
{
	int64_t p = (int64_t)A->base + m * (int64_t)(A->K * A->C);
	int rc = 3;

	if (p >= (int64_t)g->lo_psec)
		rc = geo_grid_ok(g, (uint64_t)p, A->spt[0]);

	if (rc == 1)
		rc = geo_grid_ok(g, (uint64_t)p + A->spt[0], A->spt[0]);
	return rc == 1 ? 3 : rc;
}

/* The largest m in [0, max] whose band exists (band 0 does), `dir` +1 (on) or -1 (back); `pred`
 * (0 = none) tried first. 0, 2 or -errno. */
int geo_last_band(struct geo *g, const struct geo_sz *A, int dir, uint64_t max, uint64_t pred,
		  uint64_t *m)
{
	uint64_t lo = 0, hi = max + 1;
	int rc;

	for (unsigned i = 0; pred && i < 2 && pred + i <= max && hi > lo + 1; i++) {
		rc = geo_band_test(g, A, dir * (int64_t)(pred + i));
		if (rc == 2 || rc < 0)
			return rc;
		if (rc == 0)
			lo = pred + i;
		else
			hi = pred + i;
	}
	/* galloping from lo, then bisection */
	for (uint64_t d = 1; hi == max + 1 && lo + d <= max; d *= 2) {
		rc = geo_band_test(g, A, dir * (int64_t)(lo + d));
		if (rc == 2 || rc < 0)
			return rc;
		if (rc)
			hi = lo + d;
		else
			lo += d;
	}
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		rc = geo_band_test(g, A, dir * (int64_t)mid);
		if (rc == 2 || rc < 0)
			return rc;
		if (rc)
			hi = mid;
		else
			lo = mid;
	}
	*m = lo;
	return 0;
}

/* The next test of a bisection in (lo, hi) at its i-th step: a guess `pred` first (its last
 * track in, the next out), then the middle. */
static uint64_t bisect_at(uint64_t lo, uint64_t hi, uint64_t pred, unsigned i)
{
	uint64_t j = pred - 1 + i;

	return i < 2 && pred && j > lo && j < hi ? j : lo + (hi - lo) / 2;
}

/* The tracks of the run of S from t0 (its cylinder step's skew k measured, `prior` the one the
 * zone before implies, -1 = none), at most `max`; `pred` (0 = none) tried first. 0 with *len
 * and *kx (the skew the run's phases agreed on, -1 = not one), 1 (probes unusable), 2 or
 * -errno. */
int geo_run_len(struct geo *g, uint64_t t0, uint32_t S, double k, int prior, uint64_t pred,
		uint64_t max, uint64_t *len, int *kx)
{
	struct geo_kset ks = {0};
	uint64_t c = 3 * (uint64_t)S / 4, lo = 0, hi = max;
	double b;
	int rc = geo_phase_fine(g, t0 + c, &b);

	if (rc)
		return rc;
	/* a prior from the zone before (the same move: its skew scales with the size) within
	 * two sectors of the measured one: it and its neighbours */
	int span = prior >= 0 && fabs(prior - k) <= 2 ? 1 : KSPAN;
	long k0 = span == 1 ? prior : lround(k);
	for (int d = -span; d <= span; d++)
		if (k0 + d >= 0)
			ks.k[ks.n++] = (int)k0 + d;
	/* the skew first, from near tracks (a skew a few sectors off predicts a far track of
	 * another surface as often as not): tracks 2, 8, 32 while they lie well inside */
	uint64_t near = pred ? pred : max;
	for (uint64_t j = 2; span > 1 && ks.n > 1 && 2 * j < near && lo == 0; j *= 4) {
		rc = t0 + (j + 2) * S < g->npsec ? geo_in_run(g, t0, S, c, b, j, &ks) : 3;
		if (rc == 1 || rc == 2 || rc < 0)
			return rc;
		if (rc)
			hi = j;
		else if (ks.n == 1)
			lo = j;
	}
	for (unsigned again = 0;; again++) {
		for (unsigned i = 0; hi - lo > 1; i++) {
			uint64_t j = bisect_at(lo, hi, pred, i);
			rc = t0 + (j + 2) * S < g->npsec ? geo_in_run(g, t0, S, c, b, j, &ks) : 3;
#ifdef GEO_TRACE
			fprintf(stderr, "  in_run t0 %llu S %u j %llu: %d (k %d.., %u left)\n",
				(unsigned long long)t0, S, (unsigned long long)j, rc, ks.k[0],
				ks.n);
#endif
			if (rc == 1 || rc == 2 || rc < 0)
				return rc;
			if (rc)
				hi = j;
			else
				lo = j;
		}
		if (g->sub || hi >= max || t0 + (hi + 2) * S >= g->npsec || again == 2)
			break;
		/* the end found tested again against the first track's phase read again now:
		 * the period's error grows with the time between two probes, and hundreds of
		 * probes after it the prediction can drift past the tolerance (zoo 36, a
		 * zone's run of 1026 tracks ended at 1022); paired phases need no such test */
		uint64_t was = hi;
		rc = geo_phase_fine(g, t0 + c, &b);
		if (!rc)
			rc = geo_in_run(g, t0, S, c, b, hi, &ks);
#ifdef GEO_TRACE
		fprintf(stderr, "  run end again t0 %llu S %u j %llu: %d\n", (unsigned long long)t0,
			S, (unsigned long long)hi, rc);
#endif
		if (rc == 1 || rc == 2 || rc < 0)
			return rc;
		if (rc)
			break;
		lo = was;
		hi = max;
		pred = 0;
	}
	*len = hi;
	*kx = ks.n == 1 ? ks.k[0] : -1;
	return 0;
}

/* Whether the first track after y - 1 is one of zone A's sizes: 0 yes, 3 no (another zone's),
 * else as geo_walk. */
int geo_in_zone(struct geo *g, const struct geo_sz *A, uint64_t y)
{
	struct geo_track t[3];
	const char *why;
	unsigned n = 0;
	int rc = y + 3ull * A->spt[0] < g->npsec
		     ? geo_walk(g, y - 1, A->spt[0], A->spt, A->H, t, 2, &n, &why)
		     : 3;

	for (unsigned h = 0; rc == 0 && h < A->H; h++)
		if (t[0].size == A->spt[h])
			return 0;
	return rc ? rc : 3;
}

/* The cylinders of zone A's last band from L, where its run's phase does not tell them (a
 * run of surfaces that look alike ended in no whole number of them): the smallest x
 * in [1, K] whose L + x C is no longer A's by the track size found there (bisection; `pred`
 * first). 0 with *kb, 1, 2 or -errno. */
int geo_band_len(struct geo *g, const struct geo_sz *A, uint64_t L, uint64_t pred, uint64_t *kb)
{
	uint64_t lo = 0, hi = A->K;

	for (unsigned i = 0; hi - lo > 1; i++) {
		uint64_t x = bisect_at(lo, hi, pred, i);
		int rc = geo_in_zone(g, A, L + x * A->C);
		if (rc == 1 || rc == 2 || rc < 0)
			return rc;
		*(rc ? &hi : &lo) = x;
	}
	*kb = hi;
	return 0;
}

/* The size of the track that starts at p, `pred` tried first. 0, 1, 2 or -errno. */
int geo_read_track(struct geo *g, uint64_t p, uint32_t pred, uint32_t *S)
{
	uint32_t cand[3] = {pred, pred + 1, pred > 1 ? pred - 1 : pred};
	uint64_t end;
	int rc = 1;

	if (p + 2ull * pred < g->npsec)
		rc = geo_track_end(g, p, pred, cand, 3, &end);

	if (rc == 0)
		*S = (uint32_t)(end - p);
	return rc;
}

/* The skew into the track of `size` at `start` (`mult` times a phase's probes), NAN when
 * unusable. */
int geo_skew_at(struct geo *g, uint64_t start, uint32_t size, unsigned mult, double *k)
{
	struct geo_track t = {.start = start, .size = size};
	int rc = geo_skew(g, &t, mult, k);

	if (rc == 1)
		*k = NAN;
	return rc == 1 ? 0 : rc;
}

/* The track at p (the start of a surface's run) measured against `pred`: 0 with *S when its size
 * is within 2% (and a sector) of pred and, unless it is pred or `check` is false, a second
 * track of that size follows (one noisy phase must not make a size); 3 when not, else as
 * geo_phase. */
int geo_run_track(struct geo *g, uint64_t p, uint32_t pred, bool check, uint32_t *S)
{
	int rc = geo_read_track(g, p, pred, S);

	if (rc == 0 && fabs((double)*S - pred) > 0.02 * pred + 1)
		rc = 3;
	if (rc == 0 && check && *S != pred)
		rc = geo_grid_ok(g, p + *S, *S);
#ifdef GEO_TRACE
	if (rc)
		fprintf(stderr, "  track at %llu: rc %d size %u, predicted %u\n",
			(unsigned long long)p, rc, *S, pred);
#endif
	return rc == 1 ? 3 : rc;
}

/* Whether a track begins at p (the track before it of size S): the phase jumps there by more
 * than a sector (the skew of the move into it). 0 yes, 3 no, else as geo_phase. */
#define COARSE_PROBES 3u /* probes a phase of a jump test read coarsely first */

/* The jump test of geo_starts_at on phases a, b (rev): 0 a jump, 3 none, 1 not clear by a margin
 * of `m` (rev) either way. */
static int jump_clear(const struct geo *g, double a, double b, uint32_t S, double m)
{
	double d = geo_wrap(b - a - 1.0 / S), neg = fmax(3 * g->thr, 0.05);

	if (d > g->thr + m || d < -neg - m)
		return 0;
	return d < g->thr && d > -g->thr ? 3 : 1;
}

int geo_starts_at(struct geo *g, uint64_t p, uint32_t S)
{
	double a, b;
	int rc = 0;

	/* first from COARSE_PROBES probes a phase: a skew's jump (a head switch's: many times
	 * the noise) or none shows plainly; a jump near the threshold is read again with the
	 * full count (Wong 2019's boundary test, read adaptively) */
	if (g->repeats > COARSE_PROBES) {
		rc = geo_phase_coarse(g, p - 1, COARSE_PROBES, &a);
		if (!rc)
			rc = geo_phase_coarse(g, p, COARSE_PROBES, &b);
		double m = 6 * g->noise * g->repeats / COARSE_PROBES;
		int j = rc ? 1 : jump_clear(g, a, b, S, m);
#ifdef GEO_TRACE
		fprintf(stderr, "  starts_at %llu S %u: coarse jump %.4f m %.4f -> %d\n",
			(unsigned long long)p, S, rc ? NAN : geo_wrap(b - a - 1.0 / S), m, j);
#endif
		if (rc == 2 || rc < 0)
			return rc;
		if (j != 1)
			return j;
	}
	rc = geo_phase(g, p - 1, &a);
	if (!rc)
		rc = geo_phase(g, p, &b);
	if (rc)
		return rc == 1 ? 3 : rc;
	return jump_clear(g, a, b, S, 0) == 0 ? 0 : 3;
}

/* Whether a run start put K e sectors off (a size off by e, |e| <= 3) would still fall on a
 * track boundary: of the next surface's run (tracks of about `next`) or of this one's (`size`).
 * Then a phase jump there does not confirm the size. */
bool geo_boundary_alias(uint64_t K, uint32_t size, uint32_t next)
{
	for (uint64_t e = 1; e <= 3; e++) {
		uint64_t a = K * e % next, b = K * e % size;
		if (a <= 3 || a + 3 >= next || b <= 3 || b + 3 >= size)
			return true;
	}
	return false;
}

/* A skew reported: the one that two of up to three measurements (GEO_SKEW_FINE) round to, none
 * of them a sector or more from it, else NAN (the probes do not resolve a sector there: absent
 * rather than guessed). 0, 2 or -errno. */
int geo_skew_firm(struct geo *g, uint64_t start, uint32_t size, double *k)
{
	double v[3];

	*k = NAN;
	for (unsigned i = 0; i < 3; i++) {
		int rc = geo_skew_at(g, start, size, GEO_SKEW_FINE, &v[i]);
		if (rc)
			return rc;
#ifdef GEO_TRACE
		fprintf(stderr, "SKEW FIRM %llu size %u: %.2f\n", (unsigned long long)start, size,
			v[i]);
#endif
		for (unsigned j = 0; j < i; j++)
			if (lround(v[i]) == lround(v[j])) {
				/* and none of them a sector or more from it (a probe disturbed
				 * by the drive's own work) */
				bool near = true;
				for (unsigned m = 0; m <= i; m++)
					near = near && fabs(v[m] - (double)lround(v[i])) < 1;
				*k = near ? (double)lround(v[i]) : NAN;
				return 0;
			}
	}
	return 0;
}

/* A new reference near x (the zone stepped from: its tests seek no further than its length),
 * its fit settled and the noise measured there (geo_calibrate); where the probes there are
 * unusable, a band's length on. 0, 1, 2 or -errno. */
int geo_settle(struct geo *g, uint64_t x)
{
	int rc = 1;

	for (unsigned i = 0; i < 3 && rc == 1 && x < g->npsec; i++, x += g->npsec / 256) {
		geo_place_begin(g, x);
		rc = geo_calibrate(g, x);
	}
	return rc;
}
