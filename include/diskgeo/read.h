/* SPDX-License-Identifier: MIT */
/*
 * A plain read benchmark: stream a range, or read random aligned blocks of it, and report MB/s,
 * IOPS and the latency distribution (`diskgeo read`; a sweep is a loop over it).
 *
 * Method: keep `qd` I/Os in flight through the engine (submit as soon as a slot frees); each
 * I/O's latency is complete_ns - submit_ns on the engine clock; throughput is the bytes read
 * over the time from the first submission to the last completion (fio's "bw" and "clat"
 * definitions, fio(1) OUTPUT). Percentiles are nearest-rank over every I/O (Hyndman & Fan 1996,
 * definition 1), read from a bounded log-linear histogram (src/histogram.c, fio's clat buckets)
 * within 0.78 % of the exact value: memory stays flat however long the run.
 */
#ifndef DISKGEO_READ_H
#define DISKGEO_READ_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "diskgeo/device.h"
#include "diskgeo/diskgeo.h"
#include "diskgeo/engine.h"

#define DG_READ_MAX_BLOCK_BYTES	     (64u << 20) /* the engine's largest I/O */
#define DG_READ_DEFAULT_SEQ_LENGTH   (1ull << 30)
#define DG_READ_DEFAULT_RANDOM_IOS   4096u /* about 40 s of 4 KiB reads on a 7200 rpm disk */
#define DG_READ_DEFAULT_SEQ_BLOCK    (1u << 20)
#define DG_READ_DEFAULT_RANDOM_BLOCK 4096u
#define DG_READ_DEFAULT_SEQ_QD	     8u
#define DG_READ_DEFAULT_RANDOM_QD    1u
#define DG_READ_DEFAULT_SEED	     1u
#define DG_READ_MAX_FAILED_IN_A_ROW                                                                \
	64u /* reads failing (or short) back to back: the rest would too */

/* What to read, all in bytes, aligned to the logical sector. */
struct dg_read_params {
	uint64_t offset_bytes;
	uint64_t length_bytes; /* total to read */
	uint64_t span_bytes;   /* random: the region read from offset; sequential: == length */
	uint32_t block_bytes;  /* bytes per I/O (the last sequential one may be shorter) */
	unsigned qd;	       /* I/Os in flight, 1..256 (capped by the engine) */
	bool random;	       /* blocks at random, aligned to block_bytes, within the span */
	uint64_t seed;	       /* the random offsets' seed: same seed, same offsets */
};

struct dg_read_result {
	struct dg_read_params params; /* as run (qd capped by the engine) */
	char engine[16];	      /* the engine's name */
	uint64_t bytes, ios, failed_ios;
	uint64_t device_time_ns;
	bool measured; /* at least one I/O completed: the figures below are set */
	double elapsed_s, mb_per_s, iops;
	double min_ms, p50_ms, p99_ms, max_ms, mean_ms;
	struct dg_warnings notes; /* conditions worth a warning (reads failing in a row) */
	/* Why the run stopped early when the engine failed (cannot submit, cannot reap), for the
	 * caller to print; the failure is in `errors` too. Empty otherwise. */
	char failure[DG_ERRLEN];
};

/*
 * Reads per `p` through `e` (qd slots, I/Os up to p->block_bytes) until p->length_bytes were
 * submitted and everything came back, or *stop is set (then it drains). A failed or short read
 * is added to `errors` (a short one as the bytes that were not read) and counted; after
 * DG_READ_MAX_FAILED_IN_A_ROW in a row it reads no more (a note says so). `progress` (may be
 * NULL) hears the share submitted. Returns 0 and *result (free with dg_read_result_free()), or
 * -ENOMEM.
 */
int dg_read_run(struct dg_engine *e, const struct dg_read_params *p, struct dg_errors *errors,
		volatile sig_atomic_t *stop, dg_progress_fn progress, void *progress_arg,
		struct dg_read_result **result);
void dg_read_result_free(struct dg_read_result *r);

/* The profile's "read" section (contract.md); the measured keys are absent when no I/O
 * completed. NULL on ENOMEM. */
json_t *dg_read_json(const struct dg_read_result *r);
/* run.parameters of a read: offset, length, block, qd, random (span and seed when random). */
json_t *dg_read_params_json(const struct dg_read_params *p);

#endif
