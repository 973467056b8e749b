/* SPDX-License-Identifier: MIT */
/*
 * The serpentine zone search's zone read (geometry_zserp.c): zone B from its first sector, its
 * surfaces where its first band puts them, each size predicted from the zones before and held
 * where the next surface's run begins where it puts it, else one track end measures it.
 * Method: zone search on the serpentine band grid after Gim & Won 2010; track boundaries by
 * phase (angular position by completion time modulo the period), Wong 2019.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "geometry_zserp.h"

/* Surface h's size in zone B predicted from A's surfaces' ratios to their first (its first
 * surface's size B0 measured): the size the ratio puts B0's (B0 + 1/2, a size is a whole part)
 * at, and in *dir the side of the likelier neighbour (+1 or -1). */
static uint32_t predict_size(const struct geo_sz *A, uint32_t B0, unsigned h, int *dir)
{
	double q = A->qn ? A->q[h] : (A->spt[h] + 0.5) / (A->spt[0] + 0.5);
	double x = q * (B0 + 0.5);

	*dir = x - floor(x) >= 0.5 ? 1 : -1;
	return (uint32_t)x;
}

/* B's ratios: A's averaged with B's own sizes (the last 8 zones weigh most). */
static void update_ratios(const struct geo_sz *A, struct geo_sz *B)
{
	unsigned n = A->qn ? (A->qn < 8 ? A->qn : 8) : 1;

	for (unsigned h = 0; h < B->H; h++) {
		double qa = A->qn ? A->q[h] : (A->spt[h] + 0.5) / (A->spt[0] + 0.5);
		B->q[h] = (qa * n + (B->spt[h] + 0.5) / (B->spt[0] + 0.5)) / (n + 1);
	}
	B->qn = n + 1;
}

/* B's last surface measured by one track end (no next surface's run tells it), whose size a
 * late probe can put a sector off: the zone's end is then a cylinder's K sectors off and every
 * later step from B fails on it. Where B's second band does not begin at p (after K tracks of
 * it) but does K sectors to one side, the size that puts it there. 0 (checked, or nothing to
 * tell: a zone of one band), 2 or -errno. Only where the size measured is not the one predicted
 * from the zones before (where the two agree, the check's probes are spared). */
static int last_checked(struct geo *g, struct geo_sz *B, uint64_t K, uint64_t p)
{
	int rc = geo_grid_ok(g, p, B->spt[0]);

	for (int d = -1; rc == 3 && d <= 1 && p > K; d += 2) {
		rc = geo_grid_ok(g, d < 0 ? p - K : p + K, B->spt[0]);
		if (rc == 0)
			B->spt[B->H - 1] += d;
	}
	return rc == 2 || rc < 0 ? rc : 0;
}

/* Surfaces 1.. of zone B (its first sector B->base, its first surface's size known) where a
 * first band of K cylinders puts them, each predicted from A's scaled alike: a prediction holds
 * when the next surface's run begins where it puts it (a phase jump: two phases), else the
 * surface's track is measured. A surface whose track is not read (unusable probes: a cache
 * that holds what a bisection read) is taken as predicted when the next surface is found where
 * that puts it (the last one: B's second band). 0, 3 (not there), 2 or -errno. */
static int read_surfaces(struct geo *g, const struct geo_sz *A, struct geo_sz *B, uint64_t K)
{
	uint64_t p = B->base + K * B->spt[0];
	bool guessed = false;

	B->p1 = p;
	for (unsigned h = 1; h < B->H; h++) {
		int dir, dn;
		uint32_t pred = predict_size(A, B->spt[0], h, &dir);
		uint32_t next = h + 1 < B->H ? predict_size(A, B->spt[0], h + 1, &dn) : 0;
		int rc = 3;
		/* the prediction and its neighbours (the likelier first), where the next run's
		 * start tells them */
		for (unsigned i = 0; i < 3 && rc == 3 && next; i++) {
			uint32_t c = i == 0 ? pred : i == 1 ? pred + dir : pred - dir;
			rc = geo_boundary_alias(K, c, next) ? 3 : geo_starts_at(g, p + K * c, c);
			/* not the prediction: its run's last track begins there too */
			if (rc == 0 && i)
				rc = geo_starts_at(g, p + K * c - c, c);
			pred = rc == 0 ? c : pred;
		}
		if (rc == 0) {
			B->spt[h] = pred;
			guessed = false;
			p += K * pred;
			continue;
		}
		rc = rc == 3 ? geo_run_track(g, p, pred, true, &B->spt[h]) : rc;
		/* after a surface taken as predicted: a track of pred here confirms it */
		if (rc == 0 && guessed && B->spt[h] == pred)
			rc = geo_grid_ok(g, p + pred, pred);
		if (rc == 2 || rc < 0 || (rc && guessed))
			return rc;
		guessed = rc != 0;
		if (guessed)
			B->spt[h] = pred;
		p += K * B->spt[h];
	}
	/* the last surface measured off its prediction: checked by B's second band */
	uint32_t last = B->spt[B->H - 1];
	int dl;
	if (guessed)
		return geo_grid_ok(g, p, B->spt[0]);
	return last != predict_size(A, B->spt[0], B->H - 1, &dl) ? last_checked(g, B, K, p) : 0;
}

int geo_read_zone(struct geo *g, uint64_t E, const struct geo_sz *A, struct geo_sz *B)
{
	*B = (struct geo_sz){.base = E,
			     .first = true,
			     .H = A->H,
			     .K = A->K,
			     .k = NAN,
			     .ks = NAN,
			     .kx = -1,
			     .kf = NAN};
	/* its first size guessed from the change between the last two zones: the track's end is
	 * tried there first */
	uint32_t pred = A->r0 > 0 ? (uint32_t)lround(A->spt[0] * A->r0) : A->spt[0];
	int rc = geo_read_track(g, E, pred, &B->spt[0]);

	if (rc == 0 && fabs((double)B->spt[0] / A->spt[0] - 1) > 0.25)
		rc = 3;
	if (rc == 0)
		B->r0 = (double)B->spt[0] / A->spt[0];
	if (rc == 0) /* a second track of that size follows */
		rc = geo_grid_ok(g, E + B->spt[0], B->spt[0]);
	/* the cylinder step's skew: the zone before's scaled (ceil(tau / T S) + 1, the same
	 * move), else measured */
	if (A->kx >= 2) {
		double ka = isnan(A->kf) ? A->kx : A->kf;
		B->kf = (ka - 1.5) * B->spt[0] / A->spt[0] + 1.5;
		B->kx = (int)lround(B->kf);
	}
	B->k = B->kx;
	if (rc == 0 && B->kx < 0)
		rc = geo_skew_at(g, E + B->spt[0], B->spt[0], 4, &B->k);
	if (rc == 0 && isnan(B->k))
		rc = 1;
#ifdef GEO_TRACE
	fprintf(stderr, "  first track and skew (t %.1f s)\n", seek_ctx_used_ns(&g->s) / 1e9);
#endif
	if (rc)
		return rc;
	rc = read_surfaces(g, A, B, A->K);
#ifdef GEO_TRACE
	fprintf(stderr, "READ SURFACES at %llu rc %d s0 %u k %.2f\n", (unsigned long long)E, rc,
		B->spt[0], B->k);
#endif
	if (rc == 3) {
		uint64_t kb;
		int kx;
		rc = geo_run_len(g, E, B->spt[0], B->k, -1, 0, A->K, &kb, &kx);
		if (rc == 0 && kb >= A->K)
			rc = 3;
		if (rc == 0)
			rc = read_surfaces(g, A, B, kb);
	}
	B->hs_like = A->hs_like; /* the same moves (their skews are measured at the end) */
	if (rc)
		return rc;
#ifdef GEO_TRACE
	fprintf(stderr, "READ ZONE at %llu rc %d:", (unsigned long long)E, rc);
	for (unsigned h = 0; h < B->H; h++)
		fprintf(stderr, " %u", B->spt[h]);
	fprintf(stderr, " k %.2f ks %.2f (t %.1f s)\n", B->k, B->ks, seek_ctx_used_ns(&g->s) / 1e9);
#endif
	/* every surface scales alike from A's (within rounding): a zone read a cylinder off
	 * its start shows A's size on one surface and B's on the others */
	bool same = true;
	double rmin = INFINITY, rmax = 0, smin = INFINITY;
	for (unsigned h = 0; h < B->H; h++) {
		double q = (double)B->spt[h] / A->spt[h];
		B->C += B->spt[h];
		same = same && B->spt[h] == A->spt[h];
		rmin = fmin(rmin, q);
		rmax = fmax(rmax, q);
		smin = fmin(smin, B->spt[h]);
	}
	if (same || rmax - rmin > 0.005 + 2.5 / smin)
		return 3;
	update_ratios(A, B);
	return 0;
}
