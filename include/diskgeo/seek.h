/* SPDX-License-Identifier: MIT */
/*
 * The seek profile (seek time against LBA distance, with a Ruemmler-Wilkes fit), the rotation
 * speed, and random-read IOPS by stroke width ("spans": how far to short-stroke), measured at
 * queue depth 1 through the engine alone.
 *
 * Model of one access (Ruemmler & Wilkes 1994): overhead + move + rotational wait in [0, T) +
 * transfer. The run first measures T (two reads of one fresh track, the second behind what the
 * drive can have cached, a revolution apart; see rotation.c) and the overhead (cache hits), then
 * estimates, for each pair of places, K = overhead + move + transfer
 * by bisecting the rotational phase: a read whose target's phase is known is submitted so that
 * the head would arrive just in time if K were a chosen threshold t; it then completes t after
 * submission when K <= t and a revolution later otherwise (the minimum over rotational phases,
 * Wong 2019 / hdubench's minimum over nearby targets; the phase trick of Worthington, Ganger,
 * Patt & Wilkes 1995). seek = K - K0, K0 = overhead + transfer. No read aims at what the drive
 * may hold (read-ahead, look-behind); a read that completes like a cache hit or off its predicted
 * phase is not used (seek_legs.c).
 */
#ifndef DISKGEO_SEEK_H
#define DISKGEO_SEEK_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "device.h"
#include "diskgeo.h"

struct dg_engine;

#define DG_SEEK_DEFAULT_DISTANCES 24u
#define DG_SEEK_DEFAULT_SAMPLES	  24u
#define DG_SEEK_DEFAULT_BUDGET_NS (60ull * DG_NS_PER_S)
#define DG_SEEK_MIN_DISTANCES	  4u
#define DG_SEEK_MAX_DISTANCES	  1000u
#define DG_SEEK_MAX_SAMPLES	  10000u

/* The smallest device the seek measurement runs on (dg_seek_params_check() refuses smaller). */
#define DG_SEEK_MIN_DEVICE_BYTES (64ull << 20)

struct dg_seek_params {
	unsigned distances;	 /* seek-curve distances (log-spaced, then linear); default 24 */
	unsigned samples;	 /* start offsets per distance; fewer when the budget is short */
	uint64_t time_budget_ns; /* device time for the seek curve and full stroke; the rotation
				    (~100 reads) and the spans (6 x 49 pairs, more where they
				    spread, within 1.45 x it for the phase) come on top */
	uint32_t block_bytes;	 /* bytes per read; 0 = 4096 or the physical sector if larger */
	uint64_t seed;		 /* start offsets and pairs (default 1): same seed, same places */
	bool curve;		 /* seek curve, track-to-track, average, full stroke (default on) */
	bool rotation;		 /* report "rotation" (default on; T is measured anyway when the
				    curve or spans need it) */
	bool spans;		 /* iops.spans[] (default on) */
};

/* Fills `p` with the defaults above. */
void dg_seek_params_default(struct dg_seek_params *p);

/*
 * Checks `p` against the device: distances in [4, 1000], samples in [1, 10000], a non-zero
 * budget, a block size that is a multiple of the logical and physical sector and at most 1 MiB,
 * a device of at least 64 MiB, at least one part asked for. Returns 0 or -EINVAL with one line
 * in `err`.
 */
int dg_seek_params_check(const struct dg_seek_params *p, const struct dg_device_info *info,
			 char *err, size_t errlen);

/* Every option of `p` as the profile's run.parameters members (new object; NULL on ENOMEM). */
json_t *dg_seek_params_json(const struct dg_seek_params *p);

struct dg_seek_point {
	uint64_t distance_bytes;
	unsigned samples; /* start offsets measured */
	double min_ms;	  /* plain QD1 access time (the first, undelayed read of each sample): */
	double median_ms; /*   overhead + seek + rotational wait + transfer */
	double mean_ms;
	double seek_ms; /* mean over start offsets of the move time (K - K0) */
};

/* Ruemmler-Wilkes over u = distance / capacity: a + b*sqrt(u) for u < boundary, c + e*u beyond,
 * continuous with a continuous slope (c = a + b*sqrt(B)/2, e = b/(2*sqrt(B))). */
struct dg_seek_fit {
	bool valid;
	double a_ms, b_ms, c_ms, e_ms;
	double boundary_fraction;
	double rms_ms;		     /* residual of the fit over the points it used */
	uint64_t min_distance_bytes; /* the shortest distance it used */
};

/* The spans of the random-read IOPS (issue 5), as fractions of the capacity: 1 %, 10 %, 25 %,
 * 50 %, 100 % from the outer edge, and the inner 10 %. `diskgeo seek` measures them and
 * `diskgeo model` gives their truth, so that a profile can be checked span by span. */
struct dg_seek_span_def {
	const char *label; /* "first 1%", ..., "whole drive", "inner 10%" */
	double start, span;
};
#define DG_SEEK_NSPANS 6
extern const struct dg_seek_span_def dg_seek_spans[DG_SEEK_NSPANS];

struct dg_seek_span {
	uint64_t start_bytes;
	uint64_t span_bytes;
	uint32_t block_bytes;
	unsigned samples; /* pairs of places measured */
	double mean_ms;	  /* expected service time of a random QD1 read in the span */
	double iops;	  /* 1000 / mean_ms */
};

/* A finished (or, when stopped, partial) run. Values not measured are NAN (and absent from the
 * JSON). Read-only for callers; free with dg_seek_result_free(). */
struct dg_seek_result {
	struct dg_seek_params params; /* as run (block_bytes resolved) */
	uint64_t capacity_bytes;
	bool rotating; /* periodic structure found (then rpm and period are set) */
	double rpm, period_ms;
	double overhead_ms;	      /* command overhead: the median cache-hit time */
	double transfer_ms;	      /* media time of one block at the outer edge */
	uint64_t track_bytes;	      /* outer track size implied by the sawtooth (0 = unknown) */
	struct dg_seek_point *points; /* by distance */
	size_t npoints;
	struct dg_seek_fit fit;
	double track_to_track_ms, average_ms, full_stroke_ms;
	struct dg_seek_span *spans;
	size_t nspans;
	unsigned samples_planned; /* start offsets per distance after the budget (the first
				     pass; extra ones go where the means are least certain) */
	uint64_t device_time_ns;  /* device time the run cost */
	bool complete;		  /* false when `stop` cut it short */
	/* Device time of the full stroke and the curve: what the time budget covers. */
	uint64_t curve_device_time_ns;
	/* Conditions worth a warning (a budget that held fewer distances, failing reads). */
	struct dg_warnings notes;
};

/*
 * Measures through `e` (queue depth 1 is used whatever the engine allows; its max I/O must hold
 * one block). A failed read is added to `errors` and its sample dropped; the run goes on.
 * `stop` (may be NULL) is polled between reads: when set, the run ends with a partial result
 * (complete = false). `progress` (may be NULL) gets phases "rotation", "seek", "spans".
 * Returns 0 with *out set, -EINVAL for parameters dg_seek_params_check() refuses, -ENOMEM, or
 * the engine's -errno when submitting fails.
 */
int dg_seek_run(struct dg_engine *e, const struct dg_device_info *info,
		const struct dg_seek_params *p, struct dg_errors *errors,
		volatile sig_atomic_t *stop, dg_progress_fn progress, void *progress_arg,
		struct dg_seek_result **out);

void dg_seek_result_free(struct dg_seek_result *r);

/* A new object holding the contract's members "seek", "iops" and, on a rotating device whose
 * rotation was asked for, "rotation" (each only when measured). NULL on ENOMEM. */
json_t *dg_seek_json(const struct dg_seek_result *r);

/* The seek points as CSV (header: the JSON keys of seek.points). `result` is a
 * struct dg_seek_result; fits dg_file_write(). Returns 0 or -EIO. */
int dg_seek_csv(FILE *f, void *result);

/* The span IOPS as CSV (header: the JSON keys of iops.spans). Fits dg_file_write(). */
int dg_seek_iops_csv(FILE *f, void *result);

/* Short-stroke advice: for each span that starts at the outer edge and is narrower than the
 * widest such span (the whole drive, as `seek` measures it), the random IOPS it gives and the
 * gain over the widest span, in %. */
struct dg_short_stroke {
	uint64_t span_bytes;
	double span_percent; /* of the capacity */
	double iops, gain_percent;
};
/* Fills up to `max` entries, narrowest first; returns how many (0 without spans). In the JSON
 * as iops.short_stroke[]. */
size_t dg_seek_short_stroke(const struct dg_seek_result *r, struct dg_short_stroke *out,
			    size_t max);

/* ---- pure helpers (exposed for tests) ---- */

/* Fits Ruemmler-Wilkes to the points with distance >= min_distance_bytes (least squares, the
 * boundary scanned on a log grid). Returns 0, or -EINVAL with fewer than 3 usable points. */
int dg_seek_fit_rw(const struct dg_seek_point *pts, size_t n, uint64_t capacity_bytes,
		   uint64_t min_distance_bytes, struct dg_seek_fit *fit);
/* The fitted seek time (ms) at `distance_bytes`. */
double dg_seek_fit_at(const struct dg_seek_fit *fit, uint64_t capacity_bytes,
		      uint64_t distance_bytes);
/* The seek curve at `distance_bytes`, interpolated linearly between the points (0 at 0; the
 * last point's value beyond it). */
double dg_seek_curve_at(const struct dg_seek_point *pts, size_t n, uint64_t distance_bytes);
/* The mean of the curve over uniformly random pairs of places in [0, capacity): the integral
 * of seek(D) * 2 (C - D) / C^2, the curve linear between points, with (capacity, full_ms)
 * appended as the last knot when full_ms is a number. */
double dg_seek_average_ms(const struct dg_seek_point *pts, size_t n, uint64_t capacity_bytes,
			  double full_ms);

#endif
