/* SPDX-License-Identifier: MIT */
/*
 * One place of the geometry measurement: the tracks walked there read as a cylinder layout
 * (sizes and moves repeat with the period of the heads: H - 1 head switches, then one cylinder
 * step) or as a serpentine run (one surface's tracks, cylinder steps only), see geometry.h.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "geometry_place.h"

/* Classes of the moves: 0 or 1 (the longer), split at the widest gap when it is wide enough
 * (phase noise `noise`, rev); all 0 when the moves agree. */
static void classify(const struct geo_track *t, unsigned n, double T_ms, double noise, int *cls)
{
	double v[GEO_MAX_WALK], gap = 0, cut = INFINITY;
	unsigned m = 0;

	for (unsigned i = 1; i < n; i++)
		v[m++] = t[i].tau_ms;
	(void)dg_median(v, m); /* sorts v */
	for (unsigned i = 1; i < m; i++)
		if (v[i] - v[i - 1] > gap) {
			gap = v[i] - v[i - 1];
			cut = (v[i] + v[i - 1]) / 2;
		}
	/* two moves differ when their skews imply moves 3 sectors apart at the smallest size */
	uint32_t smin = UINT32_MAX;
	for (unsigned i = 0; i < n; i++)
		smin = t[i].size < smin ? t[i].size : smin;
	/* ... or one sector apart on small tracks where the phases resolve a sector (a head switch
	 * one sector longer than a cylinder step) */
	bool two =
	    gap > fmax(fmin(3.0, fmax(0.7, 5 * noise * smin)), 5 * noise * smin) * T_ms / smin &&
	    gap > 0.02;
	cls[0] = -1;
	for (unsigned i = 1; i < n; i++)
		cls[i] = two && t[i].tau_ms > cut;
}

/* The smallest period of (size, class) over tracks 1..n-1 seen at least twice over, or 0. */
static unsigned period_of(const struct geo_track *t, const int *cls, unsigned n)
{
	for (unsigned p = 1; p <= GEO_MAX_PERIOD && 2 * p + 1 <= n; p++) {
		bool ok = true;
		for (unsigned i = 1 + p; i < n && ok; i++)
			ok = t[i].size == t[i - p].size && cls[i] == cls[i - p];
		if (ok)
			return p;
	}
	return 0;
}

double geo_median(double *v, unsigned n)
{
	return dg_median(v, n);
}

void geo_move_add(const struct geo *g, double skew, uint32_t size, struct geo_moves *m)
{
	double K = (double)lround(skew) * g->u, S = (double)size * g->u;

	if (m->n < sizeof(m->v) / sizeof(m->v[0]) && isfinite(skew))
		m->v[m->n++] = (K - 1 - g->u / 2.0) * g->T_ns / 1e6 / S;
}

int geo_place_read(const struct geo *g, const struct geo_track *t, unsigned n,
		   struct geo_place_shape *sh)
{
	int cls[GEO_MAX_WALK];
	double T_ms = g->T_ns / 1e6;

	memset(sh, 0, sizeof(*sh));
	sh->track_skew = sh->cylinder_skew = NAN;
	if (n < 3)
		return 1;
	classify(t, n, T_ms, g->noise, cls);
	unsigned p = period_of(t, cls, n), run = 1;
	/* no period, but a run first (a serpentine band shorter than the walk): tracks 1..run */
	while (!p && run + 1 < n && t[run + 1].size == t[1].size && cls[run + 1] == cls[1])
		run++;
	if (!p && run >= RUN_MIN)
		p = 1;
	else
		run = n - 1;
	sh->period = p;
	sh->run = run;
	if (p == 1) {
		/* one kind of track and move: a serpentine run (or one surface) */
		sh->kind = GEO_SHAPE_RUN;
		sh->nsurfaces = 1;
		sh->spt[0] = t[1].size;
		/* the steps inside the run: into its tracks 2..run (track 1 may be the first of the
		 * run, entered from another) */
		double v[GEO_MAX_WALK];
		for (unsigned i = 2; i <= run; i++) {
			v[i - 2] = t[i].skew;
			geo_move_add(g, t[i].skew, t[i].size, &sh->step);
		}
		sh->cylinder_skew = geo_median(v, run - 1);
		sh->tr_cyl = 2;
		return 0;
	}
	if (p == 0)
		return 1;
	/* cylinder: the move that comes once per period is the cylinder step; head 0 follows it */
	unsigned ones = 0, first1 = 0;
	for (unsigned i = 1; i <= p; i++)
		if (cls[i] == 1) {
			ones++;
			first1 = i;
		}
	unsigned zeros = p - ones, h0 = 1;
	int cyl = -1;
	if (p == 2 && ones == 1) {
		/* two surfaces, two moves once each: which is the head switch is not told by
		 * the walk; sizes in walk order, the skews left out */
		sh->ambiguous = true;
	} else if (ones == 1) {
		cyl = 1;
		h0 = first1;
	} else if (zeros == 1) {
		cyl = 0;
		for (unsigned i = 1; i <= p; i++)
			if (cls[i] == 0)
				h0 = i;
	}
	sh->kind = GEO_SHAPE_CYLINDER;
	sh->aligned = cyl >= 0;
	sh->nsurfaces = p;
	for (unsigned h = 0; h < p; h++)
		sh->spt[h] = t[h0 + h].size;
	double vt[GEO_MAX_WALK], vc[GEO_MAX_WALK];
	unsigned nt = 0, ncy = 0;
	for (unsigned i = 1; i < n; i++) {
		if (cyl >= 0 && cls[i] == cyl) {
			vc[ncy++] = t[i].skew;
			geo_move_add(g, t[i].skew, t[i].size, &sh->step);
		} else {
			vt[nt++] = t[i].skew;
			/* every move one: the head switch costs what the cylinder step costs */
			if (cyl >= 0 || (ones == 0 && p > 1))
				geo_move_add(g, t[i].skew, t[i].size, &sh->hs);
		}
	}
	sh->tr_cyl = cyl >= 0 ? h0 : 0;
	sh->tr_track = cyl >= 0 && p > 1 ? h0 + 1 : 0;
	sh->track_skew = sh->ambiguous ? NAN : geo_median(vt, nt);
	sh->cylinder_skew = geo_median(vc, ncy);
	return 0;
}
