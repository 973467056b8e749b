/* SPDX-License-Identifier: MIT */
/*
 * Geometry from timing alone, read-only, with the drive's cache on: the track size per zone (per
 * surface where the surfaces differ), the surfaces (heads), the layout (cylinder or serpentine,
 * the serpentine band in tracks), the skews and the head switch time.
 *
 * Method. A read completes when the end of its last sector passes under the head, so the
 * completion time modulo the rotation period is that sector's angle (Wong 2019). Each probe reads
 * one physical sector right after a reference read of a fixed sector far away (which also moves
 * the drive's read stream away, so the probe is a positioned access); the probe's phase is its
 * completion minus the reference's, modulo T. Along a track the phase grows by 1/S per sector; a
 * track boundary adds the skew (Wong 2019: a read across a track boundary costs the skew). So:
 *   - two sectors lie on one track when their phase difference is their distance times the
 *     track's slope; a boundary is found by bisection on that test (Wong 2019's boundary
 *     bisection), and a track's size is the distance between two boundaries, exactly;
 *   - the next boundary is looked for first where the sizes seen so far predict it;
 *   - the skew into a track is its phase jump, in sectors;
 *   - transitions are told apart by the move their skew implies (skew = move rounded up to
 *     whole sectors, plus one): head switches and cylinder steps alternate with the period of
 *     the heads in a cylinder layout; a serpentine band is a run of cylinder steps on one
 *     surface that ends in a return seek, and its end is found by bisection on a prediction of
 *     the phase of every later sector from the run's size and skew.
 * A probe that completes like a cache hit, fails, or whose phase does not repeat is never used:
 * the place is left with a note. Places are spread over the range, and neighbouring places
 * with the same track sizes form one zone; the boundary between two zones is then bisected on
 * the size of the track found near a sector, down to the inner zone's first track, and a size of
 * neither zone gets a place of its own (the zone search of Gim & Won 2010, with its guard against
 * slipped-sector multiples; src/geometry_zsearch.c). On a serpentine layout the search steps
 * from zone to zone along the band grid instead: each zone's end from its last band and its
 * first surface's run there, the next zone's sizes where its first band puts each surface's
 * first track (src/geometry_zserp.c).
 */
#ifndef DISKGEO_GEOMETRY_H
#define DISKGEO_GEOMETRY_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "device.h"
#include "diskgeo.h"

struct dg_engine;

#define DG_GEOMETRY_MAX_HEADS	   32u
#define DG_GEOMETRY_DEFAULT_PLACES 64u
#define DG_GEOMETRY_MAX_PLACES	   4096u
/* The least budget: the rotation and one zone's place. */
#define DG_GEOMETRY_MIN_BUDGET_NS (5ull * DG_NS_PER_S)
/* The least range: a few tracks of the largest size plus the reference distance. */
#define DG_GEOMETRY_MIN_RANGE_BYTES (256ull << 20)

struct dg_geometry_params {
	uint64_t time_budget_ns; /* device time; 0 = from the capacity (5 min for 4 TB, 8 for 20) */
	unsigned places; /* places spread over the range (default 64); the zone search adds more */
	uint64_t range_start_bytes; /* default 0 */
	uint64_t range_end_bytes;   /* exclusive; UINT64_MAX = the device's end */
	uint64_t seed;		    /* default 1 */
	unsigned nominal_rpm; /* what the device states (dg_device_nominal_rpm), 0 = nothing: the
				 start of the period's fit when the rotation measurement finds
				 none (the fit counts revolutions and refines it) */
};

void dg_geometry_params_default(struct dg_geometry_params *p);
/* Checks `p` against the device: a range of at least DG_GEOMETRY_MIN_RANGE_BYTES inside the
 * device, a budget of at least DG_GEOMETRY_MIN_BUDGET_NS, places in 1..4096. Returns 0 or -EINVAL
 * with one line in `err`. */
int dg_geometry_params_check(const struct dg_geometry_params *p, const struct dg_device_info *info,
			     char *err, size_t errlen);
/* The default budget for a device of `capacity_bytes`: 5 minutes up to 4 TB, rising linearly to
 * 8 minutes at 20 TB, 8 beyond. */
uint64_t dg_geometry_default_budget_ns(uint64_t capacity_bytes);

enum dg_geometry_layout {
	DG_GEO_LAYOUT_UNKNOWN = 0,
	DG_GEO_LAYOUT_CYLINDER,
	DG_GEO_LAYOUT_SERPENTINE,
};
const char *dg_geometry_layout_name(enum dg_geometry_layout l);

/* One measured place: the tracks walked there. Sizes and skews in logical sectors. */
struct dg_geometry_place {
	uint64_t offset_bytes; /* where the walk began */
	bool ok;	       /* a consistent set of tracks was measured */
	unsigned nsurfaces;    /* track sizes below (surface order: head 0 first), 0 = none */
	uint32_t spt[DG_GEOMETRY_MAX_HEADS];
	double track_skew;		/* head switch skew (cylinder layout), NAN when not seen */
	double cylinder_skew;		/* one-cylinder step skew, NAN when not seen */
	enum dg_geometry_layout layout; /* what the walk there showed */
	unsigned band_tracks;		/* serpentine: tracks per surface per band, 0 = not seen */
	bool aligned;			/* head 0 identified (the surface order starts there) */
	double hs_ms;			/* the head switch the skews imply; NAN when not seen */
	double step_ms;			/* the one-cylinder step, the same way */
	unsigned tracks;		/* track boundaries found */
	unsigned probes;		/* phase probes used */
	char note[128];			/* why not ok */
};

struct dg_geometry_zone {
	uint64_t start_bytes, end_bytes;     /* end exclusive */
	uint64_t boundary_uncertainty_bytes; /* each boundary lies within this of start/end */
	unsigned nsurfaces;
	uint32_t spt[DG_GEOMETRY_MAX_HEADS];		  /* logical sectors, head 0 first */
	double track_skew_sectors, cylinder_skew_sectors; /* NAN when not seen */
	double track_skew_degrees, cylinder_skew_degrees;
	double model_mb_per_s;	  /* sustained rate the geometry implies (MB = 10^6 bytes) */
	bool surface_order_known; /* false: sizes in walk order (head 0 not identified) */
	unsigned places;	  /* places that agree on it */
	/* the skew of its first track against the previous zone's last (logical sectors of its
	 * first track, and degrees); NAN for the first zone or when the boundary was not found */
	double zone_change_skew_sectors, zone_change_skew_degrees;
};

/* The track-aligned I/O recommendation (Schindler et al., FAST'02): requests of one track,
 * starting at a track boundary, never pay a track switch inside; measured as the mean time of
 * positioned one-track reads, aligned and shifted by half a track. */
struct dg_geometry_align {
	bool measured;
	uint64_t request_bytes;		 /* one track where it was measured */
	uint64_t boundary_bytes;	 /* a track boundary there (requests start at boundaries) */
	double aligned_ms, unaligned_ms; /* mean service time of each kind */
	double gain_percent;		 /* 100 * (unaligned - aligned) / unaligned */
	unsigned samples;		 /* reads of each kind */
};

struct dg_geometry_result {
	struct dg_geometry_params params; /* as run (budget resolved) */
	uint64_t capacity_bytes;
	uint32_t sector_bytes, physical_sector_bytes;
	bool rotating;
	double period_ms;
	unsigned heads; /* 0 = not determined */
	enum dg_geometry_layout layout;
	unsigned band_tracks;	  /* serpentine: tracks per surface per band (0 = not found) */
	double head_switch_ms;	  /* NAN when not found */
	double track_to_track_ms; /* one-cylinder step implied by the cylinder skew; NAN if not */
	struct dg_geometry_place *places;
	size_t nplaces;
	struct dg_geometry_zone *zones;
	size_t nzones;
	struct dg_geometry_align align;
	double noise_rev; /* phase noise of one probe, in revolutions */
	unsigned repeats; /* probes per phase (median) */
	unsigned probes;  /* phase probes in all */
	uint64_t device_time_ns;
	bool complete;
	struct dg_warnings notes;
};

/*
 * Runs the measurement through `e` (queue depth 1 is used). Failed reads go to `errors`. `stop`
 * is polled between probes. Returns 0 with *out set, -EINVAL for parameters that
 * dg_geometry_params_check() refuses, -ENOMEM, or the engine's -errno.
 */
int dg_geometry_run(struct dg_engine *e, const struct dg_device_info *info,
		    const struct dg_geometry_params *p, struct dg_errors *errors,
		    volatile sig_atomic_t *stop, dg_progress_fn progress, void *progress_arg,
		    struct dg_geometry_result **out);
void dg_geometry_result_free(struct dg_geometry_result *r);

/* The contract's "geometry" object (new reference, NULL on ENOMEM). */
json_t *dg_geometry_json(const struct dg_geometry_result *r);
json_t *dg_geometry_params_json(const struct dg_geometry_params *p);
/* CSV of the zones for dg_file_write(): start_bytes,end_bytes,surface,sectors_per_track,
 * track_skew_sectors,cylinder_skew_sectors,model_mb_per_s,places. Returns 0 or -EIO. */
int dg_geometry_csv(FILE *f, void *result);

/* ---- the truth (src/truth_geometry.c): what a drive spec implies, for tests and bench ---- */
struct dg_spec;

struct dg_geometry_truth_zone {
	uint64_t start_bytes, end_bytes;
	unsigned nsurfaces;
	uint32_t spt[DG_GEOMETRY_MAX_HEADS];	       /* logical sectors, head 0 first */
	uint32_t track_skew[DG_GEOMETRY_MAX_HEADS];    /* a head switch into surface h */
	uint32_t cylinder_skew[DG_GEOMETRY_MAX_HEADS]; /* a one-cylinder step into surface h */
	/* the zone change into its first track, in its logical sectors (the phase jump times the
	 * track size less one sector, as a read measures it); NAN for the first zone */
	double zone_change_skew;
};

struct dg_geometry_truth {
	unsigned heads;
	bool serpentine;
	unsigned band_tracks; /* serpentine: band_cylinders (tracks per surface per band) */
	double head_switch_ms, track_to_track_ms;
	uint32_t sector_bytes;
	size_t nzones;
	struct dg_geometry_truth_zone *zones;
};

/* Computes the truth of `spec`; free with dg_geometry_truth_free(). 0 or -ENOMEM. */
int dg_geometry_truth_compute(const struct dg_spec *spec, struct dg_geometry_truth **out);
void dg_geometry_truth_free(struct dg_geometry_truth *t);
/* The zone holding byte `at`, or NULL. */
const struct dg_geometry_truth_zone *dg_geometry_truth_zone_at(const struct dg_geometry_truth *t,
							       uint64_t at);

/* A measured geometry scored against the truth (the accuracy bounds of issue 17). A place is
 * one zone measured: its track sizes against the truth zone where its walk began. */
struct dg_geometry_score {
	unsigned places, places_ok;
	unsigned size_exact, size_within1; /* places whose every surface's size is exact / +-1 */
	unsigned unaligned; /* places that could not tell head 0 (sizes compared in walk order) */
	unsigned skews, skews_within1; /* skew figures compared / within 1 sector */
	bool heads_ok, layout_ok;
	int band_ok;	    /* -1 not serpentine, else within 1 track */
	int head_switch_ok; /* -1 absent, else within 0.1 ms */
	double head_switch_err_ms;
	/* Per zone: the truth's zones (neighbours of the same track sizes are one), those the
	 * geometry gives a track size (the reported zone at the zone's middle), exactly / within
	 * one sector on every surface; the truth's zone boundaries, those reported within one
	 * track (the larger of the two zones' tracks) and within the reported uncertainty plus a
	 * track; the zone-change skews compared (at boundaries found within a track) and those
	 * within one sector. */
	unsigned zones, zones_sized, zones_exact, zones_within1;
	unsigned bounds, bounds_track, bounds_reported;
	unsigned zskews, zskews_within1;
};
void dg_geometry_score(const struct dg_geometry_result *r, const struct dg_geometry_truth *t,
		       struct dg_geometry_score *s);

#endif
