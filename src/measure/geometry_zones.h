/* SPDX-License-Identifier: MIT */
/* Zones, heads, layout and moves from the measured places (src/geometry_zones.c), and the search
 * of the zone boundaries between them (src/geometry_zsearch.c). */
#ifndef DISKGEO_GEOMETRY_ZONES_H
#define DISKGEO_GEOMETRY_ZONES_H

#include <stddef.h>
#include <stdint.h>

#include "geometry_priv.h"
#include "geometry_zcyl.h"

/* One zone boundary searched between two places of different track sizes: the outer zone (A)
 * is known to reach `lo`, the inner one (B) to begin at or before `hi` (physical sectors), so
 * the boundary lies in [lo, hi]; lo == hi: found to the sector. */
#define GEO_NO_PLACE SIZE_MAX

struct geo_bound {
	uint64_t lo, hi;
	size_t a, b; /* the places of A and B (indices into r->places); GEO_NO_PLACE: an edge bound,
			the range's start (a) or end (b) on that side */
	uint32_t first; /* B's first track's size when lo == hi (physical sectors), else 0 */
	double skew;	/* the zone-change skew into it (physical sectors), NAN when not measured */
	uint64_t top;	/* the bisection's next upper end (<= hi) */
	unsigned fails; /* failed tests (TEST_FAILS: left as it is) */
};

struct geo_bounds {
	struct geo_bound *v;
	size_t n, cap;
	/* where the zones found by the search and sized from their tracks alone lie (their places'
	 * offsets, bytes); UINT64_MAX once measured in full */
	uint64_t *sized;
	size_t nsized;
	struct geo_cyl_noise noise; /* the search's calibrations (geometry_zcyl.c) */
};

/* Appends *b to bs. 0 or -ENOMEM. */
int geo_bound_add(struct geo_bounds *bs, const struct dg_geometry_result *r,
		  const struct geo_bound *b);
/* The zone-change skew at bound b once found to the sector (lo == hi, b->first known, skew
 * NAN): the median of three measurements (it is no whole number of sectors to round to, and a
 * 512e drive counts it in eighths of the physical sector a phase resolves). 0, 2 or -errno. */
int geo_bound_skew(struct geo *g, struct geo_bound *b);

/* Measures a new place at physical sector x and appends it to r->places (which may move).
 * Returns 0 (r->places[r->nplaces - 1] is it, ok or not), 2 (stopped) or -errno. */
typedef int (*geo_add_place_fn)(struct geo *g, struct dg_geometry_result *r, uint64_t x, void *arg);

/* Sorts r->places by offset, then finds the boundary between every two neighbouring places of
 * different track sizes, down to the sector where the time allows, measuring a place in every
 * zone found between them (`add`) and the skew at each boundary found (geometry_zsearch.c).
 * Adds to *b (zeroed at first; free b->v): called again after more places, it searches only
 * the pairs of places no bound lies between yet. Returns 0, 2 (stopped) or -errno. */
int geo_zone_search(struct geo *g, struct dg_geometry_result *r, geo_add_place_fn add, void *arg,
		    struct geo_bounds *b);

/* When time remains after the search: a full place (`add`) for each zone sized from its tracks
 * alone, which takes its place when it shows the same sizes (it adds the skews and the surface
 * order). Returns the zones left sized so in *left; 0, 2 or -errno. */
int geo_zone_upgrade(struct geo *g, struct dg_geometry_result *r, geo_add_place_fn add, void *arg,
		     struct geo_bounds *b, unsigned *left);

/* Sorts r->places by offset (the bounds' place indices are then stale). */
void geo_places_sort(struct dg_geometry_result *r);

/* The zone search on a serpentine drive (src/geometry_zserp.c): from the first place that found
 * a band's start, each zone's end on its band grid and the next zone's sizes where its first
 * band puts each surface's first track, zone after zone to the range's end (and the zone before
 * it); a full place (`add`) where a step fails. Adds the zones as places and their boundaries
 * to *b. Returns 0, 2 (stopped) or -errno. */
int geo_serp_search(struct geo *g, struct dg_geometry_result *r, geo_add_place_fn add, void *arg,
		    struct geo_bounds *b);

/* True when two places report the same track sizes. */
bool geo_same_sizes(const struct dg_geometry_place *a, const struct dg_geometry_place *b);

/* Fills r->zones, heads, layout, band_tracks, head_switch_ms, track_to_track_ms from r->places
 * (sorted by offset) and the boundaries searched (`b`, may be NULL). Returns 0 or -ENOMEM. */
int geo_zones_build(const struct geo *g, struct dg_geometry_result *r, const struct geo_bounds *b);

#endif
