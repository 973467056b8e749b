/* SPDX-License-Identifier: MIT */
/*
 * The drive's cache and command queueing, from timing alone (read-only): read-ahead size,
 * look-behind, the number of cache segments, the cache size, the time of a cache hit, and
 * whether (and how deep) the drive reorders queued commands. Part of `diskgeo geometry`
 * (issue 17); the methods are those of DIXtrac (Schindler & Ganger 2000) and Diskbench, each
 * cited where it is used (src/geocache*.c).
 *
 * A hit is a read that completes in under an eighth of a revolution on top of the hit time
 * (DIXtrac uses a quarter), and every decision is taken from several trials at fresh places,
 * with a random phase before each probe that may miss, so jitter and the drive's background
 * work cannot turn one slow hit or one lucky miss into a figure. Command queueing: the QD 1 vs
 * QD n random rate says whether the drive reorders, the completion order at the deepest QD
 * says how many commands it holds (src/geocache_ncq.c). A figure that was not measured (no time
 * left, no rotation, a range too small, too many failed reads) is NAN or -1 and has a note saying
 * why; it is never guessed.
 */
#ifndef DISKGEO_GEOCACHE_H
#define DISKGEO_GEOCACHE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "diskgeo.h"

struct dg_engine;

struct dg_geocache_opts {
	uint64_t start_bytes; /* the range to work in (places are drawn from its first half) */
	uint64_t end_bytes;   /* exclusive: the device size for the whole device */
	uint32_t
	    sector_bytes;     /* the logical sector (0 = 512): a short read-ahead is probed by it */
	uint32_t block_bytes; /* small probe reads, a multiple of the sector; 0 = 4096 */
	uint32_t max_io_bytes;	 /* the engine's max_io_bytes (0 = 1 MiB, the engine default) */
	uint64_t time_budget_ns; /* device time; 0 = DG_GEOCACHE_DEFAULT_BUDGET_NS */
	double period_ms;	 /* the rotation period when known; 0 or NAN = measure it */
	unsigned nominal_rpm; /* the rpm the drive states (dg_device_nominal_rpm), 0 = unknown: used
			       * only when the period is not given and cannot be measured */
	uint64_t seed;	      /* places and random offsets */
	struct dg_errors *errors;    /* failed reads are listed here (may be NULL) */
	volatile sig_atomic_t *stop; /* a signal handler's flag (may be NULL) */
};

/* 60 s: a fifth of geometry's 5-minute budget for a 4 TB drive. */
#define DG_GEOCACHE_DEFAULT_BUDGET_NS (60ull * 1000000000ull)
/* Deepest queue tried (NCQ allows 32); fewer when the engine's qd is smaller. */
#define DG_GEOCACHE_MAX_QD 32u

#define DG_GEOCACHE_NOTES 8u

struct dg_geocache {
	double period_ms; /* the rotation period used (given or measured); NAN: none */
	/* cache: NAN / -1 when not measured */
	double hit_ms;		 /* a cache hit of block_bytes: overhead + interface transfer */
	uint32_t block_bytes;	 /* the probe size of hit_ms */
	double read_ahead_bytes; /* 0 = none */
	unsigned read_ahead_trials;
	int look_behind;	   /* 1 yes, 0 no, -1 not measured */
	unsigned look_behind_hits; /* of look_behind_trials */
	unsigned look_behind_trials;
	int segments; /* -1 not measured */
	unsigned segments_trials;
	double size_bytes;    /* cache size (segments x segment_bytes); NAN not measured */
	double segment_bytes; /* what one stream keeps; NAN not measured */
	unsigned size_runs;
	/* command queueing */
	int ncq_reorders;   /* 1 yes, 0 no, -1 not measured */
	int ncq_depth;	    /* 1 when it does not reorder; -1 not measured */
	unsigned ncq_qd[8]; /* queue depths tried ... */
	double ncq_iops[8]; /* ... and the random 4 KiB read rate at each */
	unsigned ncq_points;
	uint64_t ncq_start_bytes, ncq_span_bytes; /* where the random reads went */
	int ncq_max_rank; /* the most older reads in flight a completion overtook (deepest QD) */
	double ncq_gain_explained; /* the QD n gain that overlapped command overhead explains */
	uint64_t device_time_ns;
	unsigned notes_n;
	char notes[DG_GEOCACHE_NOTES][128];
};

/* Fills *o with the defaults (budget, block, seed 1) for the range [0, size_bytes) of a device
 * of logical sectors of `sector_bytes`. */
void dg_geocache_opts_default(struct dg_geocache_opts *o, uint64_t size_bytes,
			      uint32_t sector_bytes);

/*
 * Measures on `e` within the options' range and budget, reads only. The engine's qd sets the
 * deepest queue tried (open it with DG_GEOCACHE_MAX_QD to see NCQ's 32; with 1 there is no NCQ
 * figure) and its max_io_bytes must be opts->max_io_bytes (at least 256 KiB). Returns 0 (see
 * the NAN / -1 figures and the notes for what could not be measured), -EINVAL for bad options
 * (a range below 1 GiB, a block that is not a multiple of the sector or above 256 KiB), -EINTR
 * when *stop was set (the figures so far are kept), or the engine's -errno.
 */
int dg_geocache_run(struct dg_engine *e, const struct dg_geocache_opts *opts,
		    struct dg_geocache *out);

/*
 * The JSON of issue 17 (contract.md geometry.cache and geometry.ncq, with their evidence):
 * {"cache": {read_ahead_bytes, read_ahead_trials, look_behind, look_behind_hits,
 * look_behind_trials, segments, segments_trials, size_bytes, size_runs, hit_ms,
 * hit_block_bytes}, "ncq": {reorders, depth, max_rank, gain_explained, qd[], iops[],
 * block_bytes, start_bytes, span_bytes}, "period_ms", "device_time_s", "notes"[]}. Figures that
 * were not measured are absent. New reference (the caller owns it), or NULL on ENOMEM.
 */
json_t *dg_geocache_json(const struct dg_geocache *g);

/* ---- truth (src/truth_geocache.c): what a drive spec implies, for tests and bench/ ---- */
struct dg_spec;
struct dg_truth_geocache {
	uint64_t read_ahead_bytes;
	uint64_t cache_bytes;
	bool look_behind;
	unsigned segments; /* the spec's cache_segments (1 unless it says) */
	double hit_ms;	   /* command overhead + block_bytes at the interface rate */
	unsigned ncq_depth;
};
void dg_truth_geocache(const struct dg_spec *spec, uint32_t block_bytes,
		       struct dg_truth_geocache *t);

#endif
