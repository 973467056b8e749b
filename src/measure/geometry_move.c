/* SPDX-License-Identifier: MIT */
/*
 * The move-cost probe of the geometry measurement: what it costs the drive to go from one track
 * to another, where the skews cannot tell (a head switch, a one-cylinder step and a band's start
 * that cost alike). A read of sector a is followed at once by a read of a sector on the target
 * track chosen by its angle (Wong 2019: angular position by completion time modulo the period,
 * the phases of geometry_probe.c) to come round δ of a turn after a's: the second read loses a
 * revolution when the command and the move take longer than δ T. Bisection on δ finds the cost
 * (command overhead + move, in turns). The host's jitter only ever delays the first read's
 * completion (the second is submitted late), so a δ where any try kept the turn is above the
 * cost. Serpentine use: inside a band the next surface walks the band's cylinders back, so its
 * last track lies on the cylinder of this surface's first track (a head switch away); a band's
 * start walks on, its last track 2 K - 1 (or K) cylinders away. The unit whose last track is
 * dear to reach from the first track of the unit before is the band's start.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "geometry_move.h"

#define MOVE_STEPS 7u	/* bisection steps: the cost to 1/128 of a turn */
#define MOVE_GAP   0.03 /* a band's start costs this much more than every other unit's (turns) */
#define MOVE_MAXU  24u	/* unit boundaries measured at most */

/* One try: the reference (the drive positioned away from both), a, then at once sector y.
 * 0 with *lost (the second read lost a turn against the angle gap d, turns), 1 unusable (a cache
 * hit, a failed read), 2 or -errno. */
static int move_try(struct geo *g, uint64_t a, uint64_t y, double d, bool *lost)
{
	struct dg_completion cr, ca, cy;
	int rc;

	if (geo_out_of_time(g))
		return 2;
	rc = geo_read(&g->s, g->ref * g->psec, 0, &cr);
	if (!rc)
		rc = geo_read(&g->s, a * g->psec, 0, &ca);
	if (!rc)
		rc = geo_read(&g->s, y * g->psec, 0, &cy);
	if (rc)
		return rc;
	g->probes++;
	if ((double)(ca.complete_ns - ca.submit_ns) / 1e6 < g->hit_ms ||
	    (double)(cy.complete_ns - cy.submit_ns) / 1e6 < g->hit_ms)
		return 1;
	*lost = ((double)cy.complete_ns - (double)ca.complete_ns) / g->T_ns - d > 0.5;
	return 0;
}

/* Whether the move from a to the track [b, b + S) fits in about d turns: the sector of that
 * track whose end comes round d after a's (phases pa, pb of a and b), tried up to `tries`
 * times. 0 with *fits, 1 unusable, 2 or -errno. */
static int move_fits(struct geo *g, uint64_t a, double pa, uint64_t b, double pb, uint32_t S,
		     double d, unsigned tries, bool *fits)
{
	double f = fmod(d + pa - pb + 2.0, 1.0);
	uint64_t s = (uint64_t)llround(f * S) % S;
	double da = fmod(pb + (double)s / S - pa + 2.0, 1.0);
	unsigned bad = 0;

	*fits = false;
	for (unsigned i = 0; i < tries && !*fits;) {
		bool lost = true;
		int rc = move_try(g, a, b + s, da, &lost);
		if (rc == 1 && ++bad <= 2 * tries)
			continue;
		if (rc)
			return rc;
		*fits = !lost;
		i++;
	}
	return 0;
}

int geo_move_cost(struct geo *g, uint64_t a, uint64_t b, uint32_t S, double *cost)
{
	double pa, pb, lo = 0, hi = 1;
	unsigned tries = g->repeats > 1 ? 3 : 1;
	int rc = geo_phase(g, a, &pa);

	if (!rc)
		rc = geo_phase(g, b, &pb);
	for (unsigned i = 0; !rc && i < MOVE_STEPS; i++) {
		double mid = (lo + hi) / 2;
		bool fits;
		rc = move_fits(g, a, pa, b, pb, S, mid, tries, &fits);
		*(fits ? &hi : &lo) = mid;
	}
	if (rc)
		return rc;
	*cost = hi;
	return 0;
}

/* None of the units 1..n stands out, unit i entered at the cost c[i - 1] (turns). With h, an
 * even number of surfaces, a band's last surface walks back to the band's first cylinder, so the
 * next band's start is a seek of K cylinders: it costs what the head switches cost, or the units
 * hold no band's start and h is wrong (zoo 25, units of 125 123 125 123 sectors read as two
 * surfaces where there are eleven). That seek measured on unit 1's own surface (its first track
 * to its last, K - 1 cylinders). 1 (alike: the reading stands, its band's start unknown), 3
 * (the seek stands out: no band's start among the units), 2 or -errno. */
static int even_band_alike(struct geo *g, const uint64_t *uat, const uint32_t *usize, uint64_t K,
			   unsigned h, const double *c, unsigned n)
{
	double s, lo = c[0], hi = c[0];

	if (h % 2)
		return 1; /* the band's start a cylinder on: read_runs compares the skews */
	for (unsigned i = 1; i < n; i++) {
		lo = fmin(lo, c[i]);
		hi = fmax(hi, c[i]);
	}
	int rc = geo_move_cost(g, uat[1], uat[1] + (K - 1) * usize[1], usize[1], &s);
#ifdef GEO_TRACE
	fprintf(stderr, "MOVES seek K %llu: %.3f against %.3f..%.3f (rc %d)\n",
		(unsigned long long)K, rc ? NAN : s, lo, hi, rc);
#endif
	if (rc)
		return rc;
	return s > hi + MOVE_GAP || s + MOVE_GAP < lo ? 3 : 1;
}

int geo_band_start_by_moves(struct geo *g, const uint64_t *uat, const uint32_t *usize, unsigned nu,
			    uint64_t K, unsigned h, unsigned *b0)
{
	double c[MOVE_MAXU + 1];
	unsigned best = 0, n = h < nu ? h : nu - 1;

	if (n < 2 || n > MOVE_MAXU || K < 2)
		return 1;
	for (unsigned i = 1; i <= n; i++) {
		uint64_t last = uat[i] + (K - 1) * usize[i];
		int rc = geo_move_cost(g, last, uat[i - 1], usize[i - 1], &c[i]);
		if (rc)
			return rc;
		best = !best || c[i] > c[best] ? i : best;
	}
#ifdef GEO_TRACE
	fprintf(stderr, "MOVES K %llu:", (unsigned long long)K);
	for (unsigned i = 1; i <= n; i++)
		fprintf(stderr, " %.3f", c[i]);
	fprintf(stderr, " -> unit %u\n", best);
#endif
	/* one unit stands out; the others are head switches (one cost) */
	for (unsigned i = 1; i <= n; i++)
		if (i != best && c[i] + MOVE_GAP > c[best])
			return even_band_alike(g, uat, usize, K, h, c + 1, n);
	*b0 = best;
	return 0;
}
