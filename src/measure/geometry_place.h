/* SPDX-License-Identifier: MIT */
/* The shape of one place's walk (src/geometry_place.c). Not a public interface. */
#ifndef DISKGEO_GEOMETRY_PLACE_H
#define DISKGEO_GEOMETRY_PLACE_H

#include "geometry_priv.h"

#define GEO_MAX_PERIOD 24u
#define RUN_MIN	       4u /* tracks of one size and move that make a run */

/* Moves implied by skews: the drive formats a skew as the move rounded up to whole sectors plus
 * one (whole physical sectors on a 512e drive), so a skew of K logical sectors into a track of
 * S means a move in ((K - u - 1) T/S, (K - 1) T/S]: its middle is kept. */
struct geo_moves {
	double v[GEO_MAX_WALK + GEO_MAX_RUNS];
	unsigned n;
};

enum geo_shape_kind {
	GEO_SHAPE_NONE = 0,
	GEO_SHAPE_CYLINDER, /* sizes and moves repeat with a period: the heads */
	GEO_SHAPE_RUN,	    /* one size, one move: a serpentine run */
};

struct geo_place_shape {
	enum geo_shape_kind kind;
	unsigned period;
	bool aligned;	/* head 0 identified (the cylinder step stands out) */
	bool ambiguous; /* cylinder: two surfaces whose two moves cannot be told apart (skews left
			 * out); serpentine: surfaces from the sizes, head 0 not known */
	unsigned nsurfaces;
	uint32_t spt[DG_GEOMETRY_MAX_HEADS]; /* physical sectors */
	double track_skew, cylinder_skew;    /* physical sectors, NAN when not seen */
	unsigned band_tracks;		     /* serpentine: tracks per surface per band */
	struct geo_moves hs, step;	     /* the moves the skews imply (ms) */
	unsigned run; /* a run shape: the walk's tracks 1..run are the run (it ends inside the
			 walk when run < the walk) */
	unsigned tr_track, tr_cyl; /* a walked track entered by a head switch / a cylinder step
				      (0 = none) */
	unsigned hs_run;     /* serpentine: a run entered by a head switch (geometry_band.c) */
	uint64_t band_start; /* serpentine: the first sector of the band the sizes are from */
	double hs_tau;	     /* serpentine: the head switch the runs show (ms) */
	unsigned heads_known;
	unsigned band_known;
	/* in: the band an earlier place found */ /* in: the surfaces an earlier place found */
};

/* Reads the walk t[0..n) (sizes known). Returns 0, or 1 when it shows no consistent shape. */
int geo_place_read(const struct geo *g, const struct geo_track *t, unsigned n,
		   struct geo_place_shape *sh);

/* Adds the move a skew of `skew` physical sectors into a track of `size` implies. */
void geo_move_add(const struct geo *g, double skew, uint32_t size, struct geo_moves *m);
/* Median of v[0..n) (sorts v); NAN when n == 0. */
double geo_median(double *v, unsigned n);

/* Candidate skews of a run's cylinder step (physical sectors). */
#define KSPAN 6 /* integer skews tried around an estimate */
struct geo_kset {
	int k[4 * KSPAN + 1]; /* a run's end tries two estimates' KSPAN (geometry_band.c) */
	unsigned n;
};

/* Keeps the candidate skews of ks that predict phase `ph` at track j (base phase b, size S)
 * within `tol` (rev) in *keep (src/geometry_runs.c). */
void geo_kset_filter(struct geo_kset *ks, double b, uint32_t S, uint64_t j, double ph, double tol,
		     struct geo_kset *keep);

/* 0 when track j of the run of tracks of S from t0 is still the run's: its sector c where the
 * skews put it (b: the fine phase of t0 + c; ks keeps the skews that agree), its end where the
 * size puts it; 3 when not, else as geo_phase (src/geometry_band.c). */
int geo_in_run(struct geo *g, uint64_t t0, uint32_t S, uint64_t c, double b, uint64_t j,
	       struct geo_kset *ks);

/* Whether the probes resolve a sector on tracks of S (paired phases, geo_phase_delta): then,
 * once g->sub is set (a run's phases drift where no move differs by more than a sector), runs
 * are told apart by moves a sector apart (src/geometry_runs.c). */
bool geo_subsector(const struct geo *g, uint32_t S);

/* With g->sub: whether the move into the track at e differs from the move into the one before
 * (both of S) by a sector or more: 0 yes, 3 no, else as geo_phase. */
int geo_moves_differ(struct geo *g, uint64_t e, uint32_t S);

/* A run shape (serpentine): finds the run ends that follow and reads the band, the surfaces and
 * their sizes into `sh` (src/geometry_band.c). 0 (any other shape: nothing to do), 1 (not
 * found), 2 or -errno. */
int geo_band_place(struct geo *g, const struct geo_track *t, unsigned n,
		   struct geo_place_shape *sh);

#endif
