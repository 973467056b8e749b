/* SPDX-License-Identifier: MIT */
/* The cylinder zone search's cheap parts (src/geometry_zcyl.c). Not a public interface. */
#ifndef DISKGEO_GEOMETRY_ZCYL_H
#define DISKGEO_GEOMETRY_ZCYL_H

#include "geometry_priv.h"

/* Sizes the cylinder of a new zone whose track of s sectors starts at x: the n tracks from x
 * (walk order), each end tried first where the known zone's sizes model[0..n) (cyclic walk
 * order), scaled, put it; the track after them must repeat the first. Fills spt[0..n). 0, 1 (no
 * cylinder of n tracks there: the caller measures a full place), 2 or -errno. */
int geo_cyl_size(struct geo *g, const uint32_t *model, unsigned n, uint64_t x, uint32_t s,
		 uint32_t *spt);

/* The smallest move (head switch or one-cylinder step, ms) the measured places show; NAN when
 * none shows one. */
double geo_cyl_min_move_ms(const struct dg_geometry_result *r);

/* The probe spreads (rev) of the zone search's calibrations, the last GEO_SD_KEEP, and the
 * probes per phase the last one chose (raised to their median). */
#define GEO_SD_KEEP 32u
struct geo_cyl_noise {
	double sd[GEO_SD_KEEP];
	unsigned n;
	unsigned repeats; /* 0 until the first */
	double noise, thr;
};

/* After geo_calibrate(): the probes per phase, raised where this calibration's spread lies below
 * the median of the search's (nine probes estimate it roughly), kept in *nz, then lowered where
 * a track boundary's jump (a move of move_ms into a track of `size`, plus its sector) stands far
 * above the noise: the zone search's tests tell boundaries apart, never a skew to the sector
 * (move_ms NAN: not lowered). */
void geo_cyl_repeats(struct geo *g, double move_ms, uint32_t size, struct geo_cyl_noise *nz);

/* The probes per phase of the last calibration again (raised as above): where the walks meet a
 * zone change, whose jump may be a sector only. Nothing before the first. */
void geo_cyl_restore(struct geo *g, const struct geo_cyl_noise *nz);

/* The probes per phase for a zone-change skew to the sector (geo_bound_skew()): those of the
 * last calibration (raised as above), more where its noise asks for them to resolve a quarter
 * of a sector of `sectors` per turn. False when even geo_skew()'s most cannot (the skew is then
 * left absent, never guessed). */
bool geo_cyl_skew_repeats(struct geo *g, const struct geo_cyl_noise *nz, uint32_t sectors);

/* A zone's sizes in the cyclic order a cylinder walk meets them (physical sectors). */
struct geo_cyl_seq {
	unsigned n;
	uint32_t v[DG_GEOMETRY_MAX_HEADS];
};

/* The walk order of place p's sizes (none for a place of no surfaces). */
void geo_cyl_seq_of(const struct geo *g, const struct dg_geometry_place *p, struct geo_cyl_seq *s);

/* True when walked track t[i] (of t[0..n)) belongs to the zone of walk order s by `run` (2 or
 * 3; fewer where the walk has fewer tracks) neighbouring tracks, it among them, whose sizes
 * follow each other in s. Where surfaces differ, one size is no evidence: a zone many zones
 * away has some size of it too; two in walk order are between the two zones they name, but a
 * zone between them often has a pair of one of theirs (neighbouring zones share most sizes,
 * each surface's a sector or two apart): three rarely. */
bool geo_cyl_of(const struct geo_cyl_seq *s, const struct geo_track *t, unsigned n, unsigned i,
		unsigned run);

/* A short walk of up to max - 1 tracks from the first boundary after y (hint: a size near),
 * each end after the first tried first where the walk orders sa and sb (either may be empty)
 * put the size after the last, then where sa's sizes scaled put it (a zone between). As
 * geo_walk(): the tracks in t[0..*n); 0, 1, 2 or -errno. */
int geo_cyl_walk(struct geo *g, const struct geo_cyl_seq *sa, const struct geo_cyl_seq *sb,
		 uint64_t y, uint32_t hint, struct geo_track *t, unsigned max, unsigned *n);

#endif
