/* SPDX-License-Identifier: MIT */
/*
 * Two surfaces on a cylinder layout: the walk alternates two moves, the head switch (into head
 * 1) and the one-cylinder step (into head 0 of the next cylinder), with the period 2 of the
 * heads, and their skews alone never say which is which. A seek test does: track j + 2 lies on
 * track j's surface, one cylinder on, so the move between them is the cylinder step alone,
 * while between neighbouring tracks one move is the head switch and the other the cylinder step
 * (the pairs of accesses that tell the head switch from the one-cylinder seek: Worthington et
 * al. 1995). The cost of each move (command overhead and move, geo_move_cost(): the second of
 * two reads loses a turn when the move outlasts the angle between them) is measured backwards,
 * from the later track to the earlier one (the drive's read-ahead holds the later ones): the
 * neighbouring move that costs what the move two tracks on costs is the cylinder step.
 */
#include <math.h>
#include <stdio.h>

#include "geometry_move.h"
#include "geometry_order.h"

#define ORDER_SAME (1.5 / 128) /* turns: two costs of one move differ by this at most */
#define ORDER_GAP  (3.0 / 128) /* turns: the two moves' costs differ by this at least */

/* The walk index (1 or 2) of the first track entered by the longer of the two moves. */
static unsigned longer_first(const struct geo_track *t, unsigned n)
{
	double m[2] = {0, 0};
	unsigned c[2] = {0, 0};

	for (unsigned i = 1; i < n; i++) {
		m[i % 2] += t[i].tau_ms;
		c[i % 2]++;
	}
	return c[0] && m[0] / c[0] > m[1] / c[1] ? 2 : 1;
}

/* The seek test on tracks t[0..2]: *into1_cyl = 1 when the move into t[1] is the cylinder step
 * (the move t[2] -> t[0] costs what t[1] -> t[0] does, and t[2] -> t[1] stands apart), 0 when
 * the move into t[2] is, -1 when the costs do not tell. 0, 2 or -errno (unusable probes: -1). */
static int seek_test(struct geo *g, const struct geo_track *t, int *into1_cyl)
{
	double c1, c2, cc;
	int rc = geo_move_cost(g, t[1].start, t[0].start, t[0].size, &c1);

	if (!rc)
		rc = geo_move_cost(g, t[2].start, t[1].start, t[1].size, &c2);
	if (!rc)
		rc = geo_move_cost(g, t[2].start, t[0].start, t[0].size, &cc);
	*into1_cyl = -1;
	if (rc == 1)
		return 0;
	if (rc)
		return rc;
#ifdef GEO_TRACE
	fprintf(stderr, "ORDER costs into t1 %.4f into t2 %.4f two on %.4f (turns)\n", c1, c2, cc);
#endif
	if (fabs(c1 - c2) < ORDER_GAP)
		return 0;
	if (fabs(c1 - cc) <= ORDER_SAME && fabs(c2 - cc) > ORDER_SAME)
		*into1_cyl = 1;
	else if (fabs(c2 - cc) <= ORDER_SAME && fabs(c1 - cc) > ORDER_SAME)
		*into1_cyl = 0;
	return 0;
}

/* The shape with walk index h0 (1 or 2) as head 0: sizes, skews and moves by kind; `known`:
 * the kinds are measured (else the skews in walk order and no move). */
static void assign(const struct geo *g, const struct geo_track *t, unsigned n, unsigned h0,
		   bool known, struct geo_place_shape *sh)
{
	double vt[GEO_MAX_WALK], vc[GEO_MAX_WALK];
	unsigned nt = 0, nc = 0;

	sh->spt[0] = t[h0].size;
	sh->spt[1] = t[3 - h0].size; /* the other surface (period 2) */
	sh->hs.n = sh->step.n = 0;
	for (unsigned i = 1; i < n; i++) {
		bool cyl = (i + 2 - h0) % 2 == 0;
		if (cyl)
			vc[nc++] = t[i].skew;
		else
			vt[nt++] = t[i].skew;
		if (known)
			geo_move_add(g, t[i].skew, t[i].size, cyl ? &sh->step : &sh->hs);
	}
	sh->track_skew = geo_median(vt, nt);
	sh->cylinder_skew = geo_median(vc, nc);
	sh->tr_cyl = h0;
	sh->tr_track = 3 - h0;
	sh->aligned = known;
	sh->ambiguous = !known;
}

int geo_order_two(struct geo *g, const struct geo_track *t, unsigned n, struct geo_order *o,
		  struct geo_place_shape *sh)
{
	if (sh->kind != GEO_SHAPE_CYLINDER || !sh->ambiguous || sh->nsurfaces != 2 || n < 3)
		return 0;
	unsigned lf = longer_first(t, n);
	/* the tests on the first such place's tracks, one triple after another: the order is
	 * then known (or not) for every place alike */
	for (unsigned k = 0; o->cyl_longer < 0 && o->tests < GEO_ORDER_TESTS && k + 3 <= n; k++) {
		int into1;
		int rc = seek_test(g, t + k, &into1);
		if (rc)
			return rc;
		o->tests++;
		/* the move into t[k + 1]: the longer one when k + 1 is of lf's parity */
		bool first_longer = (k + 1) % 2 == lf % 2;
		if (into1 >= 0)
			o->cyl_longer = first_longer == (into1 == 1);
	}
	bool known = o->cyl_longer >= 0;
	/* unknown: the surface entered by the longer move first (every place alike) */
	unsigned h0 = !known || o->cyl_longer ? lf : 3 - lf;
	assign(g, t, n, h0, known, sh);
	o->unknown += !known;
	return 0;
}
