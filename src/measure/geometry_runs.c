/* SPDX-License-Identifier: MIT */
/*
 * A serpentine run's tracks told apart by their phases (Wong 2019: angular position by
 * completion time modulo the period), for src/geometry_band.c and src/geometry_zgrid.c. Inside
 * a run every track has the same size S and every transition the same skew k, so the phase of
 * the sector c into track j is ph(t0 + c) + j k / S. A head switch whose skew is one sector more
 * than the cylinder step's shows only in that prediction being a sector off: where the probes
 * resolve it (geo_subsector), the phases are measured against each other, probed in turn, and
 * a sector tells (Schindler & Ganger 2000 extract the skews the same way, one transition at a
 * time).
 */
#include <math.h>

#include "geometry_place.h"

/* Paired phases of this many times the repeats (64 probes each at most) where a sector tells */
#define SUB_MULT 4u

void geo_kset_filter(struct geo_kset *ks, double b, uint32_t S, uint64_t j, double ph, double tol,
		     struct geo_kset *keep)
{
	keep->n = 0;
	for (unsigned i = 0; i < ks->n; i++) {
		double pred = b + fmod((double)j * ks->k[i], (double)S) / S;
		if (fabs(geo_wrap(ph - pred)) < tol)
			keep->k[keep->n++] = ks->k[i];
	}
}

bool geo_subsector(const struct geo *g, uint32_t S)
{
	/* the paired phases' spread is about a quarter of a plain phase's: half a sector is
	 * then twice it at least */
	return g->noise * S < 1.0;
}

int geo_in_run(struct geo *g, uint64_t t0, uint32_t S, uint64_t c, double b, uint64_t j,
	       struct geo_kset *ks)
{
	struct geo_kset keep;
	double ph, a, z;
	uint64_t e = t0 + (j + 1) * S;
	int rc;

	if (g->sub) {
		/* the phase against the run's first track's, probed in turn: a sector tells */
		rc = geo_phase_delta(g, t0 + c, t0 + j * S + c, SUB_MULT, &ph);
		if (rc)
			return rc;
		geo_kset_filter(ks, 0, S, j, ph, 0.5 / S, &keep);
	} else {
		/* fine phases: a head switch whose skew is a few sectors more than a cylinder
		 * step's differs from the run's prediction by those few sectors only */
		rc = geo_phase_fine(g, t0 + j * S + c, &ph);
		if (rc)
			return rc;
		geo_kset_filter(ks, b, S, j, ph, fmax(1.5 / S, 3 * g->noise), &keep);
	}
	if (!keep.n)
		return 3;
	rc = geo_phase(g, e - 1, &a);
	if (!rc)
		rc = geo_phase(g, e, &z);
	if (rc)
		return rc;
	if (fabs(geo_wrap(z - a - 1.0 / S)) < g->thr)
		return 3; /* no boundary there: another size */
	*ks = keep;
	return 0;
}

int geo_moves_differ(struct geo *g, uint64_t e, uint32_t S)
{
	struct geo_track t0 = {.start = e - S, .size = S}, t1 = {.start = e, .size = S};
	double k0, k1;
	int rc = geo_skew(g, &t0, SUB_MULT, &k0);

	if (!rc)
		rc = geo_skew(g, &t1, SUB_MULT, &k1);
	if (rc)
		return rc;
	return fabs(k1 - k0) > 0.5 ? 0 : 3;
}
