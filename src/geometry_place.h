/* SPDX-License-Identifier: MIT */
/* The shape of one place's walk (src/geometry_place.c). Not a public interface. */
#ifndef DISKGEO_GEOMETRY_PLACE_H
#define DISKGEO_GEOMETRY_PLACE_H

#include "geometry_priv.h"

#define GEO_MAX_PERIOD 24u

enum geo_shape_kind {
	GEO_SHAPE_NONE = 0,
	GEO_SHAPE_CYLINDER, /* sizes and moves repeat with a period: the heads */
	GEO_SHAPE_RUN,	    /* one size, one move: a serpentine run */
};

struct geo_place_shape {
	enum geo_shape_kind kind;
	unsigned period;
	bool aligned; /* head 0 identified (the cylinder step stands out) */
	unsigned nsurfaces;
	uint32_t spt[DG_GEOMETRY_MAX_HEADS];   /* physical sectors */
	double track_skew, cylinder_skew;      /* physical sectors, NAN when not seen */
	unsigned band_tracks;		       /* serpentine: tracks per surface per band */
	double hs_lo, hs_hi, step_lo, step_hi; /* move intervals (ms), NAN when not seen */
	unsigned heads_known;		       /* in: the surfaces an earlier place found */
};

/* Reads the walk t[0..n) (sizes known). Returns 0, or 1 when it shows no consistent shape. */
int geo_place_read(const struct geo *g, const struct geo_track *t, unsigned n,
		   struct geo_place_shape *sh);

/* Narrows the move interval (lo, hi] (ms; NAN = open) by a skew of `skew` physical sectors into
 * a track of `size` physical sectors; geo_check_interval() sets an empty one to NAN. */
void geo_narrow(const struct geo *g, double skew, uint32_t size, double *lo, double *hi);
void geo_check_interval(double *lo, double *hi);
/* Median of v[0..n) (sorts v); NAN when n == 0. */
double geo_median(double *v, unsigned n);

/* A run shape (serpentine): finds the run ends that follow and reads the band, the surfaces and
 * their sizes into `sh` (src/geometry_band.c). 0 (any other shape: nothing to do), 1 (not
 * found), 2 or -errno. */
int geo_band_place(struct geo *g, const struct geo_track *t, unsigned n,
		   struct geo_place_shape *sh);

#endif
