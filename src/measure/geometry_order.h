/* SPDX-License-Identifier: MIT */
/* Two surfaces on a cylinder layout: which of the two moves the walk alternates is the head
 * switch (src/geometry_order.c). Not a public interface. */
#ifndef DISKGEO_GEOMETRY_ORDER_H
#define DISKGEO_GEOMETRY_ORDER_H

#include "geometry_place.h"

#define GEO_ORDER_TESTS 3u /* seek tests (track triples of the first place) at most */

/* What the run learnt about the order (one for the drive: a head switch and a one-cylinder
 * step cost what they cost in every zone, so the longer of the two skews is always the same
 * move's). Zeroed, then cyl_longer = -1. */
struct geo_order {
	int cyl_longer;	  /* -1 not known, 1 the cylinder step is the longer move, 0 the shorter */
	unsigned tests;	  /* seek tests run */
	unsigned unknown; /* places reported with the order unknown */
};

/* A cylinder shape of two surfaces whose two moves the walk t[0..n) alternates but does not
 * tell apart (sh->ambiguous): the seek test on the first such place's tracks (what it found is
 * in `o` for the later places) says which is the cylinder step; the sizes then go head 0
 * first, the skews and moves to their kind (as geo_place_read() does where the period tells).
 * Where no test tells, the sizes and both skews go in walk order from the surface entered by
 * the longer move (the cylinder skew its skew), no move, and o->unknown counts the place. Any
 * other shape: nothing. 0, 2 or -errno. */
int geo_order_two(struct geo *g, const struct geo_track *t, unsigned n, struct geo_order *o,
		  struct geo_place_shape *sh);

#endif
