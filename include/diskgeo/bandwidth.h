/* SPDX-License-Identifier: MIT */
/*
 * The bandwidth curve and the recording zones: sequential read throughput sampled across the
 * LBA range (or a part of it), then change-point detection on the curve and a refinement of
 * each zone boundary by bisection with extra samples.
 *
 * Method, per sample: a positioning read, alone, then one stream of reads kept `qd` deep
 * through the engine: `block_bytes` each, or less (halved) so that the timed part spans at
 * least 16 reads. The positioning read is never timed: the clock starts at its completion, so
 * the seek and the rotational wait never count. It completes before the stream is submitted,
 * so that the host or the drive cannot serve a timed read first. Completions seen within a
 * quarter of the mean interval of each other (one reap; requests merged below the block layer)
 * are one unit. Units slower per byte than 2.5 times the stream's median stalled (slow sectors,
 * retries, a zone change): counted per sample with their wait beyond the pace (`stalls`,
 * `stall_ms`), named in a warning when longer than 15 ms (a slow spot), and kept out of the
 * rate; unless the units after it run ahead of the pace and make up half its wait or more: then
 * the host was late (a busy core), the drive streamed on, and the sample is timed end to end
 * between points on the pace (a host hiccup, counted in a note, not a stall). Samples are taken in
 * a seeded shuffled order, so drift shows up as noise instead of as a slope; with several passes
 * each sample is the median of its passes. A sample whose bytes were read lately (the pilot's, the
 * last few samples' and what the drive read ahead of them) is preceded by a small read far away
 * that moves the drive's stream, and refinement never places a sample there: the drive's cache
 * would answer at the interface's speed.
 *
 * The rate is the least-squares slope of the stream's cumulative bytes against completion time
 * (less biased by where the track skews fall than the end points), leaving out the clock's start
 * and the first unit (late by the host's turnaround), with a new intercept after each stall
 * (its wait taken out exactly; a late host's catching up stays on the line) or, without
 * stalls, after one unit that waited far longer than any other; never more than 1% faster than
 * end to end with the drive's own waits taken out. A read-mode measurement whose rate its
 * completion times cannot support (too few units, faster by 15% than its time less every wait
 * allows, halves 30% apart without a stall) is dropped with a note, never reported. Curve samples
 * are jittered within their share of the range, so that they do not alias with the track and
 * band structure.
 *
 * Zones: optimal partitioning of the log-rate curve with PELT pruning (Killick, Fearnhead &
 * Eckley 2012), penalty 3 sigma^2 ln n with sigma the noise of the curve (MAD and trimmed RMS of
 * successive differences, raised to the noisiest stretches; a BIC-type penalty, Yao 1988);
 * segments of fewer than three samples (samples that straddle a boundary, outliers) are set
 * aside and the partition redone; steps below 0.5%, 3 sigma, 6 standard errors (Welch) or 2.5
 * standard deviations of the noisier side are merged (each side's spread from its successive
 * differences, so that merging does not cascade), and a curve whose first and last tenths
 * differ by more than that is never merged into one zone. Each boundary is then bisected with extra
 * samples, each classed by the nearer of the rates of the three curve samples either side of it,
 * until the bracket is 1% of the smaller zone or two samples wide; a straddling sample places the
 * cut by time-weighted interpolation between the two rates. Refining samples are 1, 2 or 4 x the
 * curve's size, the smallest whose noise classes with 3 sigma to spare (larger ones measure the
 * sides' rates at their own size first); steps of 2% or more are refined first, and a smaller
 * step that could not be placed is merged away.
 *
 * Write mode (the disk-fill curve reviewers publish; DESTROYS data): the same samples, each
 * positioned by a read as above, and its timed part written instead of read, with the pattern of
 * dg_bandwidth_write_pattern(). Nothing outside the samples' timed bytes is ever written: the
 * result lists every range written (`written`), a failed sample's included. The count of samples
 * is fixed before the first write (no pilot, no time budget), so that the caller can say exactly
 * what will be overwritten; refinement samples (when on) write too, at most
 * DG_BANDWIDTH_REFINE_MAX_STEPS per zone boundary, inside the range.
 */
#ifndef DISKGEO_BANDWIDTH_H
#define DISKGEO_BANDWIDTH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "device.h"
#include "diskgeo.h"

struct dg_engine;

#define DG_BANDWIDTH_MIN_SAMPLES      256u	    /* the least a time-budgeted curve takes */
#define DG_BANDWIDTH_MAX_SAMPLES      16384u	    /* the most it takes */
#define DG_BANDWIDTH_SAMPLE_BYTES     (16ull << 20) /* default sample size, when the range allows */
#define DG_BANDWIDTH_REFINE_MAX_STEPS 16u  /* refinement samples per zone boundary, at most */
#define DG_BANDWIDTH_PATTERN_UNIT     512u /* the write pattern repeats per this many bytes */

/* Below this a sample is a few reads at most: too short to time (a device of less than
 * DG_BANDWIDTH_MIN_SAMPLES of them is too small for a curve). */
#define DG_BANDWIDTH_MIN_TIMED_SAMPLE_BYTES (256u << 10)

struct dg_bandwidth_params {
	unsigned samples;	    /* curve points; 0 = from the time budget (>= 256) */
	uint64_t sample_bytes;	    /* bytes per sample; 0 = 16 MiB, less when the range is small */
	uint64_t range_start_bytes; /* default 0 */
	uint64_t range_end_bytes;   /* exclusive; UINT64_MAX = the device's end */
	unsigned passes;	    /* measurements per sample, combined by their median; >= 1 */
	uint64_t time_budget_ns;    /* device time for the curve when samples == 0 (default 60 s) */
	unsigned qd;	      /* reads in flight per stream (default 4; capped by the engine) */
	uint32_t block_bytes; /* bytes per read (default 1 MiB; <= the engine's max I/O) */
	uint64_t seed;	      /* order of the samples (default 1): same seed, same order */
	bool refine;	      /* bisect each zone boundary with extra samples (default on) */
	bool write; /* time writes, not reads: DESTROYS the samples' data (default off); needs an
		       engine on a device opened with DG_DEVICE_WRITE; samples == 0 means 256 */
};

/* Fills `p` with the defaults above. */
void dg_bandwidth_params_default(struct dg_bandwidth_params *p);

/*
 * Checks `p` against the device and resolves what the defaults leave open: *resolved gets the
 * range end (when UINT64_MAX) and the sample size (when 0). Refused with -EINVAL and one line in
 * `err`: fewer than 2 samples, a range outside the device, a reversed or empty range, a range or
 * sample size that is not a whole number of physical sectors (refused, not rounded), a sample
 * size larger than the range or smaller than two physical sectors, a block size that is not a
 * multiple of 4096 bytes and of the logical sector, a zero time budget, passes or qd. In write
 * mode samples == 0 resolves to DG_BANDWIDTH_MIN_SAMPLES (the time budget does not apply).
 * `resolved` may be `p` itself.
 */
int dg_bandwidth_params_check(const struct dg_bandwidth_params *p,
			      const struct dg_device_info *info,
			      struct dg_bandwidth_params *resolved, char *err, size_t errlen);

/* Bytes of a sample of `p` (resolved) after its positioning read: what its rate covers and, in
 * write mode, what it overwrites. */
uint64_t dg_bandwidth_timed_bytes(const struct dg_bandwidth_params *p,
				  const struct dg_device_info *info);

/*
 * The bytes write mode puts at device offset `offset_bytes`: every DG_BANDWIDTH_PATTERN_UNIT
 * bytes start "diskgeo write-curve " and the unit's device offset in 16 hex digits and a newline;
 * the rest of the unit repeats "diskgeo write-curve ". `offset_bytes` and `len` are multiples of
 * DG_BANDWIDTH_PATTERN_UNIT. Recognisable in a hex dump, and a test can tell each unit's place.
 */
void dg_bandwidth_write_pattern(void *buf, size_t len, uint64_t offset_bytes);

/* A range of the device. */
struct dg_bandwidth_extent {
	uint64_t offset_bytes;
	uint64_t length_bytes;
};

struct dg_bandwidth_sample {
	uint64_t offset_bytes; /* the bytes its rate covers (after the positioning read) */
	uint64_t length_bytes;
	double mb_per_s;	/* MB = 10^6 bytes; the median over passes */
	double spread_mb_per_s; /* max - min over passes; one pass: |first half - second half| */
	unsigned stalls;	/* reads that stalled (all passes) */
	double stall_ms;	/* their wait beyond the stream's pace, kept out of the rate */
	/* the rate with the one-off wait the fit took out put back (a zone change's rotational
	 * wait, or a cylinder step's in a sample shorter than two cylinders); 0 when none was */
	double mb_per_s_waited;
	bool refine;   /* taken while refining a boundary */
	bool excluded; /* not used for zone rates: straddles a boundary, or an outlier */
};

#define DG_ZONES_MAX_SURFACES 6u /* surface levels told apart on a per-surface drive, at most */

struct dg_bandwidth_zone {
	uint64_t start_bytes;
	uint64_t end_bytes; /* exclusive */
	double mb_per_s;    /* time-weighted over the samples wholly inside it */
	size_t nsamples;    /* samples wholly inside it */
	/* per-surface drives: the distinct surface rates its curve samples read (time-weighted
	 * per surface level, slowest first); nsurfaces 0 when the curve shows no levels */
	double surface_mb_per_s[DG_ZONES_MAX_SURFACES];
	size_t nsurfaces;
};

/* A finished (or, when stopped, partial) curve. Read-only for callers; free with
 * dg_bandwidth_result_free(). */
struct dg_bandwidth_result {
	struct dg_bandwidth_sample *samples; /* by offset: the curve and the refinement samples */
	size_t nsamples;
	struct dg_bandwidth_zone *zones; /* outer (low LBA) to inner; cover the range */
	size_t nzones;
	double outer_mb_per_s;		   /* the first zone's rate */
	double inner_mb_per_s;		   /* the last zone's rate */
	double noise;			   /* relative noise of one sample (sigma of ln MB/s) */
	char flat_reason[192];		   /* why there is one zone, when there is one; else "" */
	bool complete;			   /* false when `stop` cut the run short */
	struct dg_bandwidth_params params; /* as resolved and run (samples = the curve's points) */
	uint64_t device_time_ns;	   /* device time this run cost */
	unsigned refine_samples;	   /* samples taken while refining */
	struct dg_warnings notes;	   /* conditions worth a warning (stalls, outliers, ...) */
	struct dg_bandwidth_extent
	    *written; /* write mode: every range written, merged, by offset */
	size_t nwritten;
	uint64_t written_bytes; /* their total */
};

/*
 * Measures the curve and the zones of `info`'s device through `e` (whose queue depth and max I/O
 * bound p->qd and p->block_bytes). A failed read is added to `errors` (offset, length, errno) and
 * its sample dropped; the run goes on. `stop` (may be NULL) is polled between samples: when it
 * is set the run ends early with a partial result (complete = false). `progress` (may be NULL)
 * is called now and then with phase "bandwidth" or "zones".
 * Returns 0 with *out set (free it with dg_bandwidth_result_free), -EINVAL for parameters that
 * dg_bandwidth_params_check() refuses, -ENOMEM, or the engine's -errno when submitting fails
 * (-EBADF for write mode on a device not opened for writing: nothing was written).
 */
int dg_bandwidth_run(struct dg_engine *e, const struct dg_device_info *info,
		     const struct dg_bandwidth_params *p, struct dg_errors *errors,
		     volatile sig_atomic_t *stop, dg_progress_fn progress, void *progress_arg,
		     struct dg_bandwidth_result **out);

/* The contract's "bandwidth" object (new reference, NULL on ENOMEM): mode ("read" or "write"),
 * samples[] (each with op "write" in write mode), zones[], outer_mb_per_s, inner_mb_per_s,
 * noise_percent, read_time_s (write mode: write_time_s), device_time_s, flat_reason when flat; in
 * write mode also written[] {offset_bytes, length_bytes} and written_bytes. */
json_t *dg_bandwidth_json(const struct dg_bandwidth_result *r);
/* Seconds to read (write mode: to write) the measured range sequentially: the integral of the
 * curve, each zone's bytes over its rate (the floor of a RAID rebuild or a scrub). NaN when no
 * zone was found. In the JSON as read_time_s (write mode: write_time_s). */
double dg_bandwidth_read_time_s(const struct dg_bandwidth_result *r);
/* The options in force, for run.parameters (new reference, NULL on ENOMEM). */
json_t *dg_bandwidth_params_json(const struct dg_bandwidth_params *p);
/* CSV of the samples for dg_file_write(): `result` is a struct dg_bandwidth_result *. Header
 * row: offset_bytes,length_bytes,mb_per_s,spread_mb_per_s (and op in write mode, each "write").
 * Returns 0 or -EIO. */
int dg_bandwidth_csv(FILE *f, void *result);
/* CSV of the zones, the same way: start_bytes,end_bytes,mb_per_s. */
int dg_bandwidth_zones_csv(FILE *f, void *result);
/* Accepts NULL. */
void dg_bandwidth_result_free(struct dg_bandwidth_result *r);

/*
 * Zone detection on a curve, on its own (src/zones.c): `mb_per_s[i]` for i < n in offset order.
 * `excluded[i]` on entry marks samples to ignore (failed); on return it also marks the
 * samples of segments shorter than three set aside (straddlers and outliers). Adjacent segments
 * whose rates differ by less than max(min_step, 3 sigma) (relative), or by less than 6 standard
 * errors (Welch's t, each segment with its own variance) or 2.5 standard deviations of the noisier
 * one (spreads from successive differences), are merged; when that would leave one segment while
 * the first and last tenths of the curve differ by as much, the partition is kept. On return
 * `ends[0..*nseg)` are the exclusive end indices of the segments (the last is n); every segment
 * holds at least three samples that are not excluded, unless the whole curve has fewer. *noise gets
 * sigma of ln MB/s as measured (never below `noise_floor`). `ends` holds n entries. Returns 0,
 * -EINVAL when no sample is usable, or -ENOMEM.
 */
int dg_zones_segment(const double *mb_per_s, size_t n, double noise_floor, double min_step,
		     bool *excluded, size_t *ends, size_t *nseg, double *noise);

/*
 * Surface levels of a curve (src/zones_surfaces.c): on a per-surface drive a sample reads one
 * surface's rate, and the curve scatters around its zones' rates in a few levels. Finds them from
 * the usable samples (not `excluded`, rate > 0) of `mb_per_s[0..n)` (offset order): *nlevels
 * (1 when the curve shows none; at most DG_ZONES_MAX_SURFACES), `offset[0..*nlevels)` the ln of
 * each level's rate relative to the samples' mean (0 for one level) and `level_of[i]` each
 * sample's level (0 for excluded ones). The levels are fitted jointly with a piecewise-constant
 * zone rate under them; neighbouring levels differ by at least `min_sep` (ln) and by three times
 * their own spread, and the samples of most zones go from level to level both up and down
 * (else, and where that fit finds none, the levels of the distances from a local trend, 4% and
 * five times their spread apart). *spread gets that spread (sigma of ln MB/s of one sample
 * around its level and its zone's rate; 0 for one level). Returns 0 or -ENOMEM.
 */
int dg_zones_surfaces(const double *mb_per_s, const bool *excluded, size_t n, double min_sep,
		      double *offset, size_t *nlevels, unsigned char *level_of, double *spread);
/* The same, and *from_trend: whether the levels come from the local trend (the joint fit found
 * none). */
int dg_zones_surfaces_how(const double *mb_per_s, const bool *excluded, size_t n, double min_sep,
			  double *offset, size_t *nlevels, unsigned char *level_of, double *spread,
			  bool *from_trend);

#endif
