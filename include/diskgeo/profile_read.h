/* SPDX-License-Identifier: MIT */
/*
 * Reading diskgeo's own documents back: a profile ("diskgeo.profile/1") or the truth of a drive
 * spec ("diskgeo.model/1", `diskgeo model --json`), checked key by key, into plain arrays that
 * `compare`, the derived answers and the exporters use. A file that is not such a document, is
 * truncated, hostile or inconsistent (a sample past the end of the device, zones out of order,
 * a negative rate, a billion samples) is refused with one line in `err`; nothing it holds is
 * trusted before it is checked.
 */
#ifndef DISKGEO_PROFILE_READ_H
#define DISKGEO_PROFILE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest document read (bytes) and the most entries of each array: far beyond any real
 * profile (hundreds of samples, tens of zones, six spans), small enough that comparing
 * hostile documents stays quick. */
#define DG_PROFILE_READ_MAX_BYTES   (256u << 20)
#define DG_PROFILE_READ_MAX_SAMPLES 1000000u
#define DG_PROFILE_READ_MAX_ZONES   65536u
#define DG_PROFILE_READ_MAX_OTHER   4096u /* spans, sweep cells, seek points */

struct dg_pr_sample {
	uint64_t offset_bytes, length_bytes;
	double mb_per_s;
};
struct dg_pr_zone {
	uint64_t start_bytes, end_bytes;
	double mb_per_s;
};
struct dg_pr_span {
	uint64_t start_bytes, span_bytes, block_bytes;
	double iops;
	unsigned samples; /* 0 when the document does not say (a model) */
};
struct dg_pr_point {
	uint64_t distance_bytes;
	double seek_ms;
};
struct dg_pr_cell {
	char kind[8], op[8], where[16]; /* "seq"/"rand", "read"/"write", "outer"/... */
	uint64_t block_bytes;
	unsigned qd;
	double mb_per_s, iops; /* NaN when absent */
};

/* One document. Absent figures are NaN (numbers) or 0 entries (arrays). */
struct dg_profile_data {
	char *path;		 /* as given to dg_profile_read() */
	bool is_model;		 /* "diskgeo.model/1": the truth of a spec, no noise */
	char *model, *serial;	 /* device.model/serial (a model document: its name); may be NULL */
	char *firmware, *device; /* device.firmware, device.path; may be NULL */
	uint64_t size_bytes;	 /* device.size_bytes or capacity_bytes; > 0 */
	struct dg_pr_sample *samples; /* sorted by offset */
	size_t nsamples;
	struct dg_pr_zone *zones; /* sorted, non-overlapping (a model: its recording zones) */
	size_t nzones;
	double outer_mb_per_s, inner_mb_per_s;
	double noise_percent; /* bandwidth.noise_percent; 0 for a model */
	double rpm;
	double track_to_track_ms, average_ms, full_stroke_ms;
	double seek_rms_ms;	    /* seek.fit.rms_ms: the seek points' scatter about their fit */
	double period_ms;	    /* rotation.period_ms (a model: period_ms) */
	double command_overhead_ms; /* seek.command_overhead_ms (a model: command_overhead_ms) */
	struct dg_pr_point *points; /* seek.points[] by distance (those with a seek_ms) */
	size_t npoints;
	struct dg_pr_span *spans;
	size_t nspans;
	struct dg_pr_cell *cells;
	size_t ncells;
	struct dg_pr_index *index; /* private: prefix sums and minima over the zones */
};

/*
 * Reads and checks `path`. On success *out is a new document (free with dg_profile_data_free())
 * and 0 is returned; else -EINVAL (not a valid document), -ENOMEM or the -errno of opening or
 * reading it, with one line naming the file and the reason in `err`.
 */
int dg_profile_read(const char *path, struct dg_profile_data **out, char *err, size_t errlen);
/* The same from a buffer (the fuzzer's entry); `name` is used in messages. */
int dg_profile_read_buffer(const char *name, const char *buf, size_t len,
			   struct dg_profile_data **out, char *err, size_t errlen);
void dg_profile_data_free(struct dg_profile_data *p);

/* The document's sequential rate over [start, end) in MB/s: the bytes of its zones there over
 * the time they take to read; NaN when no zone covers any of it. O(log zones). */
double dg_profile_rate_mb_per_s(const struct dg_profile_data *p, uint64_t start, uint64_t end);

/* The slowest rate of the zones that overlap [start, end), MB/s; NaN when none does.
 * O(log zones). */
double dg_profile_slowest_mb_per_s(const struct dg_profile_data *p, uint64_t start, uint64_t end);

/* The zone of `p` holding byte `x`, or NULL. */
const struct dg_pr_zone *dg_profile_zone_at(const struct dg_profile_data *p, uint64_t x);

#endif
