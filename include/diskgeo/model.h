/* SPDX-License-Identifier: MIT */
/*
 * The simulated hard disk of shared/drive-spec.md, in three parts:
 *  - dg_spec:  a parsed, validated drive spec with its derived geometry (zones, skews, seek curve);
 *  - dg_drive: the request-level timing model (pure: the caller passes time in; no globals);
 *  - dg_truth: what the spec implies, computed in closed form or by direct integration,
 *              independently of dg_drive, so that each checks the other.
 * Times are in ns (uint64) at the interface; internally the model may use doubles.
 */
#ifndef DISKGEO_MODEL_H
#define DISKGEO_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diskgeo.h"

struct dg_spec;

/* Built-in presets (the specs of shared/specs, compiled in). Returns the count; *names points to
 * a static array. */
size_t dg_spec_presets(const char *const **names);

/*
 * Loads a spec: `what` is a preset name ("wd-red-4tb") or a path to a JSON file. Unknown keys,
 * bad values, infeasible figures are errors: -EINVAL with one line in `err` naming the key or
 * value; a missing file is -ENOENT. Non-fatal adjustments (e.g. a clamped seek boundary) are
 * appended to `warnings` when not NULL.
 */
int dg_spec_load(const char *what, struct dg_spec **out, struct dg_warnings *warnings, char *err,
		 size_t errlen);
/* The same from JSON text; `origin` names it in messages. */
int dg_spec_parse(const char *json_text, size_t len, const char *origin, struct dg_spec **out,
		  struct dg_warnings *warnings, char *err, size_t errlen);
void dg_spec_free(struct dg_spec *spec);
/* The drive zoo: a random, plausible version 2 spec (JSON text, free() it) from `seed`; the
 * same seed gives the same text. Returns 0 or -ENOMEM. */
int dg_spec_random(uint64_t seed, char **json_text);

const char *dg_spec_name(const struct dg_spec *spec);
const char *dg_spec_description(const struct dg_spec *spec);
uint64_t dg_spec_capacity_bytes(const struct dg_spec *spec);
uint32_t dg_spec_sector_bytes(const struct dg_spec *spec);
double dg_spec_rpm(const struct dg_spec *spec);

/* Version 2: the emulated physical sector (>= the logical one) and the command queue depth. */
uint32_t dg_spec_physical_sector_bytes(const struct dg_spec *spec);
uint32_t dg_spec_ncq_depth(const struct dg_spec *spec);

/* What a spec says, as plain figures (what `diskgeo model` reports beside the truth). */
struct dg_spec_facts {
	uint64_t capacity_sectors;
	uint64_t outer_track_bytes; /* one track of the outermost zone (head 0's) */
	uint32_t heads;
	bool serpentine;	 /* else the cylinder layout */
	uint32_t band_cylinders; /* serpentine: cylinders per band */
	bool v2;		 /* any version 2 key given */
	bool look_behind;
	uint32_t ncq_depth;
	double jitter_ms;
	double bg_every_s, bg_busy_ms; /* background work; every_s 0 = none */
	uint64_t cache_bytes, read_ahead_bytes;
	uint32_t cache_segments; /* diskgeo's extension of the model: 1 unless the spec says */
	double interface_mb_per_s;
	size_t ndefects;
};
void dg_spec_facts(const struct dg_spec *spec, struct dg_spec_facts *out);

/* A defect of a spec (drive-spec.md "defects"). */
struct dg_spec_defect {
	uint64_t lba, count; /* logical sectors */
	bool error;	     /* else slow */
	double extra_ms;
};
/* The i-th defect, i < dg_spec_facts().ndefects, in LBA order. */
void dg_spec_defect(const struct dg_spec *spec, size_t i, struct dg_spec_defect *out);

/* Where an LBA lives (for tests and the truth). */
struct dg_chs {
	uint32_t zone;
	uint32_t cylinder; /* absolute */
	uint32_t head;
	uint32_t sector; /* within the track */
	uint64_t track;	 /* absolute track index in LBA order */
};
int dg_spec_map(const struct dg_spec *spec, uint64_t lba, struct dg_chs *out);
/* Seek time in ms for a move of `cylinders` (0 -> 0). */
double dg_spec_seek_ms(const struct dg_spec *spec, uint64_t cylinders);
/* The time in ms to move between the tracks of two LBAs: seek, or head switch, or 0. */
double dg_spec_move_ms(const struct dg_spec *spec, uint64_t lba_from, uint64_t lba_to);

/* ---- request-level timing ---- */

struct dg_drive;

/* Creates the timing state for `spec` (borrowed: keep it alive). Returns 0 or -ENOMEM. */
int dg_drive_new(const struct dg_spec *spec, struct dg_drive **out);
void dg_drive_free(struct dg_drive *drive);

/*
 * Serves one command that reaches the drive at `arrive_ns` (the drive serialises commands: it
 * starts when both the command has arrived and the previous one is done). `write` is timed like
 * a read. Sets *done_ns to the completion time. Returns the bytes served, or -EIO when the range
 * touches an error defect (the drive retried first; *done_ns includes that), or -EINVAL outside
 * the capacity.
 */
int64_t dg_drive_access(struct dg_drive *drive, uint64_t arrive_ns, bool write, uint64_t lba,
			uint32_t sectors, uint64_t *done_ns);

/*
 * Command queueing (ncq_depth > 1): the host queues commands (arrival times non-decreasing),
 * the drive holds up to ncq_depth of them and serves them in its own order. dg_drive_next_ns
 * is the moment it next chooses (UINT64_MAX when nothing is queued): a command queued later
 * than that cannot take part in that choice. dg_drive_step serves one command and returns 1
 * with its tag, result (as dg_drive_access) and host-visible completion, or 0 when nothing is
 * queued. dg_drive_queue returns 0 or -ENOMEM.
 */
int dg_drive_queue(struct dg_drive *drive, uint64_t arrive_ns, bool write, uint64_t lba,
		   uint32_t sectors, uint64_t tag);
uint64_t dg_drive_next_ns(const struct dg_drive *drive);
int dg_drive_step(struct dg_drive *drive, uint64_t *tag, int64_t *result, uint64_t *done_ns);

/* ---- truth ---- */

struct dg_truth_zone {
	uint64_t start_bytes;
	uint64_t end_bytes; /* exclusive */
	uint32_t sectors_per_track;
	uint32_t cylinders;
	double mb_per_s; /* sustained sequential rate, MB = 10^6 bytes */
	/* v2: per surface (head 0 first, `nsurfaces` = heads): the track size and the rate of a
	 * walk over that head's tracks of the zone alone (owned by the dg_truth) */
	uint32_t nsurfaces;
	const uint32_t *surface_sectors_per_track;
	const double *surface_mb_per_s;
};

struct dg_truth {
	uint64_t capacity_bytes;
	uint32_t sector_bytes;
	double rpm;
	double period_ms;
	size_t nzones; /* spec zones */
	struct dg_truth_zone *zones;
	size_t nrecording; /* recording zones: adjacent spec zones of equal rate merged */
	struct dg_truth_zone *recording;
	/* seek curve (Ruemmler & Wilkes): seek(d) = a + b*sqrt(d) for 0 < d < boundary, c + e*d */
	double seek_a_ms, seek_b_ms, seek_c_ms, seek_e_ms;
	double seek_boundary_cylinders;
	uint64_t cylinders;
	double head_switch_ms;
	double command_overhead_ms;
	double track_to_track_ms;   /* seek(1) */
	double average_ms;	    /* mean move over uniformly random pairs of LBAs */
	double average_cylinder_ms; /* mean seek over random pairs of distinct cylinders */
	double full_stroke_ms;	    /* move from LBA 0 to the last LBA */
	/* v2 */
	uint32_t physical_sector_bytes;
	double rmw_penalty_ms; /* a misaligned QD1 write on a 512e drive: T (else 0) */
	uint32_t ncq_depth;
	double interface_mb_per_s;
	bool per_surface; /* some zone has per-head track sizes */
	double *surface_buf;
};

/* Computes the truth; free with dg_truth_free(). Returns 0 or -ENOMEM. */
int dg_truth_compute(const struct dg_spec *spec, struct dg_truth **out);
void dg_truth_free(struct dg_truth *truth);

/* Seek at LBA distance D: the mean of move(x, x+D) in ms over x uniform in [0, capacity - D]. */
double dg_truth_seek_at_ms(const struct dg_spec *spec, uint64_t distance_bytes);

/* The true sequential rate (MB/s) over [offset, offset+length): bytes / time, the time summed
 * zone by zone (time-weighted where it straddles zones). */
double dg_truth_rate_mb_per_s(const struct dg_spec *spec, uint64_t offset_bytes,
			      uint64_t length_bytes);

/* Expected service time (ms) of a random QD1 read of `block_bytes` at offsets uniform over
 * [start, start+span): overhead + mean move over the span + T/2 + transfer. */
double dg_truth_random_ms(const struct dg_spec *spec, uint64_t start_bytes, uint64_t span_bytes,
			  uint32_t block_bytes);

/*
 * Random reads at queue depth `qd`: the long-run IOPS of a closed loop keeping qd reads of
 * `block_bytes` outstanding at uniform aligned offsets over [start, start+span), served by the
 * drive's rules (ncq_depth reordering by shortest positioning time, decode overlap) — a
 * reference simulation written apart from dg_drive, `completions` measured after a warm-up,
 * from `seed`. *mean_ms (optional) gets the mean time from submission to completion.
 */
double dg_truth_random_iops(const struct dg_spec *spec, uint64_t start_bytes, uint64_t span_bytes,
			    uint32_t block_bytes, unsigned qd, unsigned completions, uint64_t seed);

/*
 * Sweeps (src/truth_sweep.c): the sequential rate (MB/s) of a sweep cell at [offset,
 * offset+length): a positioning request of `block_bytes` at offset, then the rest in requests of
 * `block_bytes` kept `qd` deep — a reference of the stream by the spec's rules (media, link,
 * command decoding, read-ahead stopped at its limit and restarted a rotational wait later),
 * priced over the stream's requests after its first quarter (the sweep's window). NAN for fewer
 * than 3 blocks.
 */
double dg_truth_seq_block_mb_per_s(const struct dg_spec *spec, uint64_t offset_bytes,
				   uint64_t length_bytes, uint32_t block_bytes, unsigned qd);

#endif
