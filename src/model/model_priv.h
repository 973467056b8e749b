/* SPDX-License-Identifier: MIT */
/*
 * The parsed drive spec's derived geometry, shared by spec.c (parse, mapping), drive.c (request
 * timing) and truth.c (closed-form truth). Not a public interface.
 */
#ifndef DISKGEO_MODEL_PRIV_H
#define DISKGEO_MODEL_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diskgeo/model.h"

/* Defaults of the optional keys (documented in `diskgeo model` output and drive-spec.md). */
#define DG_SPEC_DEFAULT_SECTOR_BYTES	 512u
#define DG_SPEC_DEFAULT_INTERFACE_MBPS	 550.0
#define DG_SPEC_DEFAULT_CACHE_BYTES	 (16ull << 20) /* 16 MiB */
#define DG_SPEC_DEFAULT_READ_AHEAD_BYTES (1ull << 20)  /* 1 MiB, capped at cache_bytes */
#define DG_SPEC_DEFAULT_OVERHEAD_MS	 0.0
/*
 * Limits on a spec, checked before any work that grows with them, so that every spec loads and
 * its truth is computed in bounded time (documented in diskgeo(8), "Drive specs";
 * tests/test_spec_limits.sh measures the costliest shapes). The geometry limits are 4x the
 * cylinders and 1.8x the tracks of the largest preset (exos-x16-16tb, serpentine). The truth's
 * costliest part is the seek at an LBA distance on a serpentine drive, which walks tracks where
 * x and x+D lie on different heads' passes, or in different zones closer than the seek curve's
 * boundary: at these limits about 3 s for `diskgeo model`, the cylinder layout under 0.5 s.
 */
#define DG_SPEC_MAX_FILE_BYTES		  (1u << 20) /* the JSON text */
#define DG_SPEC_MAX_ZONES		  1024u
#define DG_SPEC_MAX_DEFECTS		  16384u
#define DG_SPEC_MAX_CYLINDERS		  (1u << 21)  /* all zones */
#define DG_SPEC_MAX_TRACKS		  (1u << 24)  /* all zones: cylinders x heads */
#define DG_SPEC_MAX_SERPENTINE_TRACKS	  (10u << 20) /* the 16 TB preset has 9.3M */
#define DG_SPEC_MAX_SERPENTINE_HEADS	  32u
#define DG_SPEC_MAX_SERPENTINE_ZONE_HEADS 1080u	     /* zones x heads (the zoo: 60 x 18) */
#define DG_SPEC_MAX_BAND_TRACKS		  (1u << 18) /* serpentine band_cylinders x heads */
#define DG_SPEC_MAX_SPT			  (1u << 20) /* sectors per track */
#define DG_SPEC_MAX_CACHE_SEGMENTS	  64u

enum dg_layout {
	DG_LAYOUT_CYLINDER,
	DG_LAYOUT_SERPENTINE,
};

/*
 * The kinds of track transition a zone's sequential walk crosses. Each kind has one skew (in
 * sectors) and one move time per zone:
 *  HEAD: same cylinder, next head (head switch);
 *  CYL:  next cylinder (|delta| = 1) — the cylinder layout's cylinder step, and the serpentine
 *        walk along a band;
 *  BAND: serpentine only: the last head of a band to head 0 of the next band (|delta| = K when
 *        the head count is even — the last head walked backwards —, 1 when it is odd).
 */
enum dg_trans {
	DG_TR_HEAD,
	DG_TR_CYL,
	DG_TR_BAND,
	DG_TR_N,
};

struct dg_zone {
	uint64_t first_lba;   /* in the geometry (the capacity may end inside or before it) */
	uint64_t sectors;     /* geometry sectors: cylinders * heads * spt */
	uint64_t first_track; /* absolute track index of its track 0 */
	uint64_t tracks;      /* cylinders * heads */
	uint32_t first_cyl;
	uint32_t cylinders;
	uint32_t spt;
	uint32_t skew[DG_TR_N];	 /* sectors, < spt (reduced modulo spt) */
	double move_ms[DG_TR_N]; /* the head's move time of each transition kind */
	/* Version 2 per-surface formats (drive-spec.md "Per-surface formats"). Always filled:
	 * with one size for all heads hspt[h] = spt and hskew[k][h] = skew[k]. `spt` is then
	 * head 0's size. Owned by the spec (one allocation, spec->zone_heads). */
	bool per_surface;
	uint64_t cyl_sectors; /* C = sum of hspt */
	uint32_t *hspt;	      /* [heads] sectors per track of each head */
	uint64_t *hpre;	      /* [heads + 1] prefix sums of hspt */
	uint32_t *hskew;      /* [DG_TR_N * heads]: skew of a transition of kind k into head h,
			       * in that head's sectors: hskew[k * heads + h] */
};

struct dg_defect {
	uint64_t lba;
	uint64_t count;
	bool error; /* else slow */
	double extra_ms;
};

struct dg_spec {
	char *name;
	char *description;
	uint32_t sector_bytes;
	uint32_t heads;
	double rpm;
	double period_ms; /* T */
	enum dg_layout layout;
	uint32_t band_cylinders; /* serpentine K */
	size_t nzones;
	struct dg_zone *zones;
	uint32_t cylinders; /* N, all zones */
	uint64_t geometry_sectors;
	uint64_t capacity_sectors;
	/* seek(d) = a + b*sqrt(d) for 0 < d < boundary, c + e*d otherwise */
	double seek_a, seek_b, seek_c, seek_e, seek_boundary;
	bool seek_friendly; /* derived from track_to_track/average/full_stroke */
	double head_switch_ms;
	double command_overhead_ms;
	double interface_mbps;
	uint64_t cache_bytes;
	uint64_t read_ahead_bytes;
	size_t ndefects;
	struct dg_defect *defects; /* sorted by lba, disjoint */
	/* ---- version 2 (drive-spec.md "Version 2"); defaults leave a v1 drive unchanged ---- */
	bool v2; /* any v2 key given: the host link and decode-overlap rules */
	uint32_t physical_sector_bytes; /* >= sector_bytes */
	uint32_t phys_ratio;		/* physical / logical sectors */
	bool look_behind;
	uint32_t ncq_depth;	       /* 1..32 */
	double jitter_ms;	       /* mean of the exponential host-visible delay */
	double bg_every_s, bg_busy_ms; /* background work; every_s 0 = none */
	uint64_t seed;
	uint32_t cache_segments; /* diskgeo's extension: 1..64, default 1 (drive_segments.c) */
	void *zone_heads;	 /* the per-zone per-head arrays */
};

/* Where a zone-relative sector lies: track j in the zone, sector s in it, that track's size. */
void dg_zone_locate(const struct dg_spec *spec, const struct dg_zone *z, uint64_t rel, uint64_t *j,
		    uint32_t *s, uint32_t *spt);
/* Cylinders in serpentine band `band` of zone z: band_cylinders, fewer in a zone's last band,
 * and band_cylinders again for the band one past a zone of whole bands (where a walk to the
 * zone's end lands: its first track is the zone's end, so no division by 0 follows). */
static inline uint64_t dg_zone_band_cylinders(const struct dg_spec *spec, const struct dg_zone *z,
					      uint64_t band)
{
	uint64_t K = spec->band_cylinders, left = z->cylinders - band * K;

	return left == 0 || left > K ? K : left;
}

/* Zone-relative first sector of track j, and its size. */
uint64_t dg_zone_track_first(const struct dg_spec *spec, const struct dg_zone *z, uint64_t j,
			     uint32_t *spt);
/* The angle (fraction of a turn, [0, 1)) of sector s of track j of zone z: frac(alpha_j + s/S_j).
 */
double dg_zone_sector_angle(const struct dg_spec *spec, const struct dg_zone *z, uint64_t j,
			    uint32_t s);
/* The kind of the transition into track j (j >= 1) of a zone's walk, and the head of track j. */
int dg_zone_transition_into(const struct dg_spec *spec, const struct dg_zone *z, uint64_t j,
			    uint32_t *head);

/* The zone holding geometry LBA `lba` (< geometry_sectors). */
size_t dg_spec_zone_of(const struct dg_spec *spec, uint64_t lba);

/* Cylinder (absolute) and head of track `j` (0-based inside zone `z`) under the spec's layout. */
void dg_zone_track_chs(const struct dg_spec *spec, const struct dg_zone *z, uint64_t j,
		       uint32_t *cyl, uint32_t *head);

/* How many transitions of each kind a sequential walk of zone `z` crosses from its track 0 up to
 * its track `j` (the transitions *into* tracks 1..j). */
void dg_zone_transitions(const struct dg_spec *spec, const struct dg_zone *z, uint64_t j,
			 uint64_t counts[DG_TR_N]);

/* off_track of drive-spec.md: the sum of the skews before track `j`, modulo spt (sectors). */
uint32_t dg_zone_track_offset(const struct dg_spec *spec, const struct dg_zone *z, uint64_t j);

/* The move time between two tracks: seek(|dcyl|), else the head switch, else 0. */
double dg_spec_track_move_ms(const struct dg_spec *spec, uint32_t cyl_a, uint32_t head_a,
			     uint32_t cyl_b, uint32_t head_b);

/* Generated from presets/ (*.json) (cmake/presets.cmake -> BUILD/src/presets.c). */
/* The cache segments a drive keeps besides its stream's (cache_segments > 1): the sector ranges
 * of streams it left, the least recently used dropped first (src/model/drive_segments.c). */
struct dg_kept_segments {
	uint64_t lo[DG_SPEC_MAX_CACHE_SEGMENTS], hi[DG_SPEC_MAX_CACHE_SEGMENTS];
	unsigned n, max; /* held; at most cache_segments - 1 */
};
/* Keeps [lo, hi) (a stream just left) as the most recently used segment. */
void dg_kept_push(struct dg_kept_segments *k, uint64_t lo, uint64_t hi);
/* True when [lba, end) lies wholly in a kept segment, which becomes the most recently used. */
bool dg_kept_hit(struct dg_kept_segments *k, uint64_t lba, uint64_t end, bool touch);

struct dg_preset {
	const char *name;
	const char *json;
	size_t len;
};
extern const struct dg_preset dg_preset_table[];
extern const char *const dg_preset_names[];
extern const size_t dg_preset_count;

#endif
