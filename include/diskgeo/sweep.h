/* SPDX-License-Identifier: MIT */
/*
 * Workload sweeps: how fast the device is for a given I/O — block size x queue depth, sequential
 * at the outer and inner edge and random over the whole range and its first 10% — and the sector
 * format as timing sees it (aligned vs misaligned I/O, the physical sector inferred).
 *
 * Sequential cell (block b, queue depth q, where): a positioning read of b alone (its seek and
 * rotational wait never count, as in the bandwidth curve), then a stream of reads (writes in
 * write mode) of b kept q deep; the rate is the least-squares slope of bytes against completion
 * time over the completions after the stream's first quarter (dg_sweep_slope; the warm-up
 * drains what the positioning read left in the cache), a completion DG_SWEEP_STALL_S later than
 * the pace before it counted as that pace (the drive's own work, not the stream's). The stream
 * covers seq_bytes, and reads on (doubling, up to DG_SWEEP_SEQ_GROW times, inside its share of
 * the budget) while the relative standard error of its rate by batch means (dg_sweep_batch_se)
 * is above DG_SWEEP_SEQ_SE: with jitter a burst-paced stream is noisy over 32 MiB. Outer cells are
 * laid one after another from the range's start (each after what the one before read), inner
 * cells backwards from its end (each given the grown span), each on bytes
 * no earlier cell touched and 16 MiB apart, so that no cell is answered from what the drive read
 * ahead for another.
 *
 * Random cell: a closed loop keeping q I/Os of b outstanding at uniform b-aligned offsets over
 * the span (the whole range, or its first 10%); the first q completions warm the queue up and
 * are not counted; IOPS = counted completions / the time from the last warm-up completion to the
 * last counted one; latency = completion - submission of each counted I/O. NCQ gain = IOPS at
 * QD q / IOPS at QD 1 of the same span and block.
 *
 * Sector format (Intel/IDEMA 512e white papers; the drive reads a partial physical sector and
 * writes it a revolution later): QD1 random I/Os of size P, aligned to P and the same offsets
 * moved by one logical sector (paired, so that both see the same seeks), for P = 2 logical
 * sectors .. 16 KiB, stopping at the first that shows the penalty. The physical sector as timed is
 * the smallest P whose misaligned I/Os cost clearly more (a quarter of the aligned time and 4
 * standard errors) than its aligned ones; the logical sector when none does (512n, 4Kn, or reads,
 * which a 512e drive serves without RMW).
 *
 * Budget: cells are measured in order of priority (the QD 1 and deepest cells first, then the
 * depths between), each given an equal share of what is left of the time budget (after its
 * minimum of work); the budget is kept: an I/O is sent only while what is in flight ends inside
 * it at the cell's pace, and a cell it ends before its minimum of work is not measured. Cells the
 * budget does not reach, or that the engine cannot run (a queue depth above its own; more than
 * DG_SWEEP_MAX_INFLIGHT_BYTES in flight), are listed as not measured, with the reason: the grid is
 * thinned, never silently.
 */
#ifndef DISKGEO_SWEEP_H
#define DISKGEO_SWEEP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "device.h"
#include "diskgeo.h"
#include "engine.h"

#define DG_SWEEP_MAX_SIZES	    16u		   /* block sizes per list, at most */
#define DG_SWEEP_MAX_QDS	    16u		   /* queue depths in the list, at most */
#define DG_SWEEP_MAX_QD		    256u	   /* the deepest queue depth accepted */
#define DG_SWEEP_MAX_BLOCK_BYTES    (64u << 20)	   /* the largest block accepted */
#define DG_SWEEP_MAX_INFLIGHT_BYTES (128ull << 20) /* qd x block above this: not measured */
#define DG_SWEEP_RMW_MAX_BYTES	    (16u << 10)	   /* largest candidate physical sector */
#define DG_SWEEP_DEFAULT_BUDGET_NS  (60ull * DG_NS_PER_S)
#define DG_SWEEP_DEFAULT_SEQ_BYTES  (32ull << 20)
#define DG_SWEEP_DEFAULT_RAND_IOS   400u
#define DG_SWEEP_DEFAULT_RMW_IOS    32u
#define DG_SWEEP_STALL_S	    0.020 /* s later than the pace: a stall (seq) */
#define DG_SWEEP_SEQ_SE		    0.005 /* a seq cell reads on while its batch SE is above */
#define DG_SWEEP_SEQ_GROW	    8u	  /* ... up to this many times seq_bytes */
#define DG_SWEEP_SEQ_BATCHES	    8u	  /* batches of that standard error */

enum dg_sweep_kind { DG_SWEEP_SEQ = 0, DG_SWEEP_RAND = 1 };
enum dg_sweep_where {
	DG_SWEEP_OUTER = 0,
	DG_SWEEP_INNER = 1,
	DG_SWEEP_FULL = 2,
	DG_SWEEP_FIRST10 = 3,
};
/* "seq"/"rand", "outer"/"inner"/"full"/"first10". */
const char *dg_sweep_kind_name(enum dg_sweep_kind k);
const char *dg_sweep_where_name(enum dg_sweep_where w);

struct dg_sweep_params {
	uint32_t seq_blocks[DG_SWEEP_MAX_SIZES]; /* sequential block sizes */
	unsigned nseq_blocks;			 /* 0 = no sequential cells */
	uint32_t rand_blocks[DG_SWEEP_MAX_SIZES];
	unsigned nrand_blocks; /* 0 = no random cells */
	unsigned qds[DG_SWEEP_MAX_QDS];
	unsigned nqds;
	uint64_t range_start_bytes; /* default 0 */
	uint64_t range_end_bytes;   /* exclusive; UINT64_MAX = the device's end */
	uint64_t time_budget_ns;    /* device time for the whole sweep (default 60 s) */
	uint64_t seq_bytes;	    /* bytes per sequential cell, at least 8 blocks (32 MiB) */
	unsigned rand_ios;	    /* counted completions per random cell (400) */
	unsigned rmw_ios;	    /* I/Os per aligned and per misaligned set (32); 0 = no test */
	uint64_t seed;		    /* random offsets (default 1) */
	bool write; /* time writes: DESTROYS data inside the range; needs an engine on a device
		       opened with DG_DEVICE_WRITE */
};

/* The defaults for `info`: sequential 4 KiB..16 MiB x4, random the logical sector, 4 KiB x4 ..
 * 1 MiB, QD 1 2 4 8 16 32, the whole device, 60 s. */
void dg_sweep_params_default(struct dg_sweep_params *p, const struct dg_device_info *info);

/*
 * Checks `p` against the device and resolves the range end. -EINVAL with one line in `err`: a
 * block size that is 0, above DG_SWEEP_MAX_BLOCK_BYTES or not a multiple of the logical sector; a
 * queue depth 0 or above DG_SWEEP_MAX_QD; a range outside the device, reversed, not on logical
 * sectors, or smaller than the largest block (or its first 10% smaller than the largest random
 * block); a write sweep over the whole device (a range must be named: range_end_bytes ==
 * UINT64_MAX and range_start_bytes == 0 refused); a zero budget. `resolved` may be `p`.
 */
int dg_sweep_params_check(const struct dg_sweep_params *p, const struct dg_device_info *info,
			  struct dg_sweep_params *resolved, char *err, size_t errlen);

struct dg_sweep_cell {
	enum dg_sweep_kind kind;
	enum dg_sweep_where where;
	bool write;
	uint32_t block_bytes;
	unsigned qd;
	uint64_t start_bytes, span_bytes; /* where its I/O went */
	bool measured;
	const char *skipped; /* why not measured (static text), NULL when measured */
	unsigned ios;	     /* counted I/Os */
	unsigned errors;     /* I/Os that failed or came back short (in errors[]) */
	unsigned stalls;     /* sequential: gaps above DG_SWEEP_STALL_S left out of the rate */
	double mb_per_s, iops;
	double mean_ms, p50_ms, p99_ms;
	uint64_t device_time_ns;
};

struct dg_sweep_rmw_size {
	uint32_t block_bytes;
	double aligned_ms, misaligned_ms; /* mean QD1 service times; NAN when not measured */
	double penalty_se_ms;		  /* standard error of the paired difference */
};

struct dg_sweep_rmw {
	bool measured;
	bool write;
	size_t nsizes;
	struct dg_sweep_rmw_size sizes[8];
	uint32_t physical_sector_bytes_timed;
	uint32_t physical_sector_bytes_reported;
	uint32_t logical_sector_bytes;
	double aligned_ms, misaligned_ms, penalty_ms; /* at the timed (or reported) physical size */
	uint32_t block_bytes;			      /* the size those three are of */
	double logical_aligned_ms, logical_misaligned_ms; /* one logical sector, aligned to the
							     physical size and moved by one */
};

struct dg_sweep_result {
	struct dg_sweep_params params; /* resolved */
	struct dg_sweep_cell *cells;
	size_t ncells;
	size_t nmeasured;
	struct dg_sweep_rmw rmw;
	uint64_t device_time_ns;
	bool thinned; /* some cell not measured */
	bool interrupted;
	uint64_t written_bytes; /* write mode: bytes written, all inside the range */
};

/* Opens an engine for `qd` I/Os of up to `max_io_bytes` (the CLI's, so that it can report a
 * fallback). Returns 0 or -errno. */
typedef int (*dg_sweep_open_fn)(void *arg, unsigned qd, uint32_t max_io_bytes,
				struct dg_engine **out);

/*
 * Runs the sweep of `p` (checked) on the device `info` describes, opening engines through
 * `open_engine` (one per block size in turn; closed before return). I/O errors go to `errors`;
 * the run stops early when *stop becomes non-zero (result->interrupted). Returns 0 with *out
 * (free with dg_sweep_result_free()), or -errno.
 */
int dg_sweep_run(const struct dg_device_info *info, const struct dg_sweep_params *p,
		 dg_sweep_open_fn open_engine, void *open_arg, struct dg_errors *errors,
		 volatile sig_atomic_t *stop, dg_progress_fn progress, void *progress_arg,
		 struct dg_sweep_result **out);
void dg_sweep_result_free(struct dg_sweep_result *r);

/* The NCQ gain of a random cell: its IOPS over the QD 1 cell's of the same span, block and op;
 * NAN when either is not measured. */
double dg_sweep_ncq_gain(const struct dg_sweep_result *r, const struct dg_sweep_cell *c);

/* The least-squares slope of completions against time: t[i] (s) when the i-th of n equal
 * blocks completed, in offset order; completions per second, NAN when n < 2 or all at once. The
 * sequential cells' estimator (and their truth's, dg_truth_seq_block_mb_per_s). */
double dg_sweep_slope(const double *t, size_t n);
/* The relative standard error of the rate of the same n completions by batch means: the slopes
 * of DG_SWEEP_SEQ_BATCHES equal batches; NAN when a batch has fewer than 2 or no slope. */
double dg_sweep_batch_se(const double *t, size_t n);

/* The profile's "sweep" section (new reference): cells[], ncq_gain[], rmw, budget figures. */
json_t *dg_sweep_json(const struct dg_sweep_result *r);
/* The parameters as run.parameters members (new reference). */
json_t *dg_sweep_params_json(const struct dg_sweep_params *p);
/* CSV of the cells for dg_file_write(): `arg` is a struct dg_sweep_result *. Header:
 * kind,op,where,block_bytes,qd,measured,mb_per_s,iops,latency_ms_mean,latency_ms_p50,
 * latency_ms_p99,ncq_gain. Returns 0 or -EIO. */
int dg_sweep_csv(FILE *f, void *arg);

#endif
