/* SPDX-License-Identifier: MIT */
/* Zones, heads, layout and moves from the measured places (src/geometry_zones.c). */
#ifndef DISKGEO_GEOMETRY_ZONES_H
#define DISKGEO_GEOMETRY_ZONES_H

#include "geometry_priv.h"

/* Fills r->zones, heads, layout, band_tracks, head_switch_ms, track_to_track_ms from r->places.
 * Returns 0 or -ENOMEM. */
int geo_zones_build(const struct geo *g, struct dg_geometry_result *r);

#endif
