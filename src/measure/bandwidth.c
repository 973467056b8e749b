/* SPDX-License-Identifier: MIT */
/*
 * The bandwidth curve and the recording zones (include/diskgeo/bandwidth.h has the method).
 *
 * Sources: zoned bit recording and its per-zone sustained rate, Ruemmler & Wilkes 1994; the
 * sampled-curve method of zcav (bonnie++) and of Worthington et al. 1995 "On-line extraction of
 * SCSI disk drive parameters", improved here by excluding positioning from every sample's timing,
 * shuffling the order against drift, detecting steps statistically and bisecting each boundary.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/bandwidth.h"
#include "diskgeo/engine.h"

#define DEFAULT_BUDGET_NS   (60ull * DG_NS_PER_S)
#define DEFAULT_QD	    4u
#define DEFAULT_BLOCK_BYTES (1u << 20)
#define MAX_BLOCK_BYTES	    (64u << 20)
#define MAX_PASSES	    1000u
#define PILOT_SAMPLES	    3u
#define STALL_FACTOR	    2.5	   /* a read slower than this x the stream's median stalled */
#define STALL_MIN_READS	    4u	   /* stall detection needs this many timed reads */
#define MIN_TIMED_READS	    16u	   /* reads are made smaller until a sample has this many */
#define JUMP_FRACTION	    0.015  /* a one-off wait this part of a stream's time is left out */
#define JUMP_UNIQUE	    2.0	   /* a wait stands out: this x any other unit's excess */
#define MIN_FIT_POINTS	    4u	   /* the fit leaves out the clock's start from this many */
#define CATCH_UP_FRACTION   0.5	   /* a wait the next units make up this much of: the host's */
#define CATCH_UP_UNITS	    8u	   /* ... looked for in this many units after it */
#define TRUST_FACTOR	    1.15   /* a rate above this x what the reads' times allow: dropped */
#define E2E_MARGIN	    1.01   /* a rate above end to end by more than this: the host's */
#define TRUST_SPREAD	    0.3	   /* ... and one whose halves differ by this part of it */
#define NOISE_FLOOR	    0.001  /* sigma of ln MB/s never assumed below 0.1% */
#define MIN_STEP	    0.005  /* zones differ by at least 0.5% (and 3 sigma) */
#define REFINE_TARGET	    0.0025 /* bisect until the bracket is this part of the zone */
#define REFINE_MAX_STEPS    DG_BANDWIDTH_REFINE_MAX_STEPS
#define REFINE_STEPS_GUESS  5u /* for the progress estimate only */

void dg_bandwidth_params_default(struct dg_bandwidth_params *p)
{
	memset(p, 0, sizeof(*p));
	p->samples = 0;
	p->sample_bytes = 0;
	p->range_start_bytes = 0;
	p->range_end_bytes = UINT64_MAX;
	p->passes = 1;
	p->time_budget_ns = DEFAULT_BUDGET_NS;
	p->qd = DEFAULT_QD;
	p->block_bytes = DEFAULT_BLOCK_BYTES;
	p->seed = 1;
	p->refine = true;
}

/* The unit every offset and size is a multiple of: the physical sector (at least the logical). */
static uint32_t align_of(const struct dg_device_info *info)
{
	uint32_t a = info->physical_sector_bytes;

	if (a < info->logical_sector_bytes)
		a = info->logical_sector_bytes;
	return a ? a : 512;
}

int dg_bandwidth_params_check(const struct dg_bandwidth_params *p,
			      const struct dg_device_info *info,
			      struct dg_bandwidth_params *resolved, char *err, size_t errlen)
{
	struct dg_bandwidth_params r = *p;
	uint32_t a = align_of(info);
	uint64_t range, want;

	if (r.samples == 1) {
		snprintf(err, errlen, "a curve needs at least 2 samples (got 1)");
		return -EINVAL;
	}
	/* Writes: the count is fixed before the first write, so the caller can say what goes. */
	if (r.write && r.samples == 0)
		r.samples = DG_BANDWIDTH_MIN_SAMPLES;
	if (r.passes < 1 || r.passes > MAX_PASSES) {
		snprintf(err, errlen, "passes must be in 1..%u (got %u)", MAX_PASSES, r.passes);
		return -EINVAL;
	}
	if (r.qd < 1 || r.qd > 256) {
		snprintf(err, errlen, "queue depth must be in 1..256 (got %u)", r.qd);
		return -EINVAL;
	}
	if (r.samples == 0 && r.time_budget_ns == 0) {
		snprintf(err, errlen, "the time budget must be more than 0");
		return -EINVAL;
	}
	if (r.block_bytes == 0 || r.block_bytes % 4096 || r.block_bytes % a ||
	    r.block_bytes > MAX_BLOCK_BYTES) {
		snprintf(err, errlen,
			 "block size %" PRIu32 " must be a multiple of 4096 and of the %" PRIu32
			 "-byte sector, at most %u MiB",
			 r.block_bytes, a, MAX_BLOCK_BYTES >> 20);
		return -EINVAL;
	}
	if (r.range_end_bytes == UINT64_MAX) {
		/* No range given: the whole device, down to a whole physical sector (a file's
		 * size need not be one; the run says what was left out). */
		r.range_end_bytes = info->size_bytes - info->size_bytes % a;
		if (r.range_end_bytes == 0) {
			snprintf(err, errlen,
				 "the device holds %" PRIu64 " bytes, less than one %" PRIu32
				 "-byte physical sector",
				 info->size_bytes, a);
			return -EINVAL;
		}
	}
	if (r.range_start_bytes >= info->size_bytes || r.range_end_bytes > info->size_bytes) {
		snprintf(err, errlen,
			 "range %" PRIu64 ":%" PRIu64 " is outside the device (%" PRIu64 " bytes)",
			 r.range_start_bytes, r.range_end_bytes, info->size_bytes);
		return -EINVAL;
	}
	if (r.range_end_bytes <= r.range_start_bytes) {
		snprintf(err, errlen, "range %" PRIu64 ":%" PRIu64 " is reversed or empty",
			 r.range_start_bytes, r.range_end_bytes);
		return -EINVAL;
	}
	if (r.range_start_bytes % a || r.range_end_bytes % a) {
		snprintf(err, errlen,
			 "range %" PRIu64 ":%" PRIu64 " is not aligned to the %" PRIu32
			 "-byte physical sector",
			 r.range_start_bytes, r.range_end_bytes, a);
		return -EINVAL;
	}
	range = r.range_end_bytes - r.range_start_bytes;
	if (r.sample_bytes == 0) {
		/* 16 MiB, or less so that the least count of samples still fits side by side. */
		want = range / (r.samples ? r.samples : DG_BANDWIDTH_MIN_SAMPLES);
		want -= want % a;
		r.sample_bytes =
		    want < DG_BANDWIDTH_SAMPLE_BYTES ? want : DG_BANDWIDTH_SAMPLE_BYTES;
		if (r.sample_bytes < 2ull * a)
			r.sample_bytes = 2ull * a;
	}
	if (r.sample_bytes % a) {
		snprintf(err, errlen,
			 "sample size %" PRIu64 " is not a multiple of the %" PRIu32
			 "-byte physical sector",
			 r.sample_bytes, a);
		return -EINVAL;
	}
	if (r.sample_bytes > range) {
		snprintf(err, errlen,
			 "sample size %" PRIu64 " is larger than the range (%" PRIu64 " bytes)",
			 r.sample_bytes, range);
		return -EINVAL;
	}
	if (r.sample_bytes < 2ull * a) {
		snprintf(err, errlen,
			 "sample size %" PRIu64 " is less than two %" PRIu32 "-byte sectors",
			 r.sample_bytes, a);
		return -EINVAL;
	}
	if (resolved)
		*resolved = r;
	return 0;
}

/* ---- the write pattern ---- */

static const char PATTERN_TEXT[] = "diskgeo write-curve ";
#define PATTERN_TEXT_LEN (sizeof(PATTERN_TEXT) - 1)
#define PATTERN_HEX_AT	 PATTERN_TEXT_LEN /* the unit's offset, 16 hex digits, then '\n' */

/* Writes the 16 hex digits of each unit's offset: all that differs between units. */
static void pattern_stamp(unsigned char *buf, size_t len, uint64_t offset_bytes)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t u = 0; u < len; u += DG_BANDWIDTH_PATTERN_UNIT) {
		uint64_t o = offset_bytes + u;

		for (int d = 15; d >= 0; d--, o >>= 4)
			buf[u + PATTERN_HEX_AT + (size_t)d] = (unsigned char)hex[o & 15];
	}
}

void dg_bandwidth_write_pattern(void *buf, size_t len, uint64_t offset_bytes)
{
	unsigned char *b = buf;

	for (size_t u = 0; u < len; u += DG_BANDWIDTH_PATTERN_UNIT) {
		unsigned char *unit = b + u;
		size_t at = PATTERN_HEX_AT + 17;

		memcpy(unit, PATTERN_TEXT, PATTERN_TEXT_LEN);
		unit[PATTERN_HEX_AT + 16] = '\n';
		while (at < DG_BANDWIDTH_PATTERN_UNIT) {
			size_t k = DG_BANDWIDTH_PATTERN_UNIT - at;

			if (k > PATTERN_TEXT_LEN)
				k = PATTERN_TEXT_LEN;
			memcpy(unit + at, PATTERN_TEXT, k);
			at += k;
		}
	}
	pattern_stamp(b, len, offset_bytes);
}

/* ---- one sample ---- */

#define MAX_STALL_NOTES 6u /* slow spots named in the warning; the rest are counted */
/* A stall named in the warning as a slow spot waited longer than this: more than a revolution
 * of any drive of 4200 rpm or more, so not a zone change inside the sample nor a revolution
 * lost while the host was late (those still count in the sample's stalls and stall_ms). */
#define SLOW_SPOT_MS	  15.0
#define RECENT_EXTENTS	  16u	     /* samples remembered as possibly still in the drive's cache */
#define READ_AHEAD_MARGIN (4u << 20) /* how far past a read the drive may have read ahead */
#define FLUSH_BYTES	  4096u	     /* the read that moves the drive's stream elsewhere */

/* A slow spot: the bytes of reads that stalled, and how long they waited beyond the pace. */
struct stall_note {
	uint64_t lo, hi;
	double ms;
};

struct ctx {
	struct dg_engine *e;
	const struct dg_device_info *info;
	struct dg_bandwidth_params p; /* resolved */
	uint32_t align;
	uint32_t rb; /* bytes per timed read: block_bytes, or less for MIN_TIMED_READS */
	unsigned qd;
	struct dg_errors *errors;
	volatile sig_atomic_t *stop;
	unsigned failed_in_a_row; /* samples whose reads failed, back to back */
	bool failing;		  /* MAX_FAILED_SAMPLES_IN_A_ROW of them: the run ends */
	dg_progress_fn progress;
	void *progress_arg;
	struct dg_io *ios;
	struct dg_completion *comps;
	uint64_t *done_ns; /* per read of a stream */
	uint32_t *len;	   /* per read of a stream */
	size_t *order;	   /* timed reads by completion */
	double *tpb;	   /* scratch: ns per byte of each timed read */
	double *cum_b;	   /* cumulative MiB of the timed reads that did not stall */
	double *cum_t;	   /* their cumulative ms */
	double *kb, *kt;   /* MiB and ms of each timed read that did not stall */
	size_t maxreads;
	/* write mode: the pattern buffer (NULL on a virtual drive, which stores nothing) and every
	 * range written so far */
	unsigned char *wbuf;
	struct dg_bandwidth_extent *written;
	size_t nwritten, capwritten;
	bool nomem;
	/* progress */
	uint64_t t0_ns;
	double units_done, units_total;
	const char *phase;
	/* notes */
	unsigned failed_samples, untimed_samples, untrusted_samples, hiccups;
	struct stall_note stall_notes[MAX_STALL_NOTES];
	unsigned nstall_notes, stall_notes_more;
	/* the last RECENT_EXTENTS ranges read (a ring), each reaching READ_AHEAD_MARGIN past its
	 * end: what the drive may still cache */
	struct dg_bandwidth_extent recent[RECENT_EXTENTS];
	unsigned nrecent, recent_next;
	unsigned flushes;
};

struct meas {
	uint64_t off, len; /* the timed part */
	double mb_per_s;
	double half_spread;
	unsigned stalls;
	double stall_ms;
	bool ok;
};

/* Samples whose reads failed, back to back, that end a run (a truncated file, a dead device):
 * the rest would fail too, each adding errors and costing timeouts. */
#define MAX_FAILED_SAMPLES_IN_A_ROW 8u

static bool stopped(const struct ctx *c)
{
	return (c->stop && *c->stop) || c->failing;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median_of(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static const uint64_t *sort_key_ns;
static int cmp_by_done(const void *a, const void *b)
{
	uint64_t x = sort_key_ns[*(const size_t *)a], y = sort_key_ns[*(const size_t *)b];

	return (x > y) - (x < y);
}

/* The positioning read's length for a sample of `len` bytes. */
static uint64_t positioning_bytes(const struct ctx *c, uint64_t len)
{
	uint64_t half = len / 2;

	half -= half % c->align;
	if (half == 0)
		half = c->align;
	return half < c->p.block_bytes ? half : c->p.block_bytes;
}

uint64_t dg_bandwidth_timed_bytes(const struct dg_bandwidth_params *p,
				  const struct dg_device_info *info)
{
	struct ctx c = {.p = *p, .align = align_of(info)};

	return p->sample_bytes - positioning_bytes(&c, p->sample_bytes);
}

/* Notes that [off, off + len) was written: extends the last range when they touch. */
static void note_written(struct ctx *c, uint64_t off, uint64_t len)
{
	struct dg_bandwidth_extent *last = c->nwritten ? &c->written[c->nwritten - 1] : NULL;

	if (last && off >= last->offset_bytes && off <= last->offset_bytes + last->length_bytes) {
		if (off + len > last->offset_bytes + last->length_bytes)
			last->length_bytes = off + len - last->offset_bytes;
		return;
	}
	if (c->nwritten == c->capwritten) {
		size_t ncap = c->capwritten ? 2 * c->capwritten : 64;
		struct dg_bandwidth_extent *v = realloc(c->written, ncap * sizeof(*v));

		if (!v) {
			c->nomem = true; /* the run fails with -ENOMEM once the sample is done */
			return;
		}
		c->written = v;
		c->capwritten = ncap;
	}
	c->written[c->nwritten++] = (struct dg_bandwidth_extent){off, len};
}

static int cmp_extent(const void *a, const void *b)
{
	const struct dg_bandwidth_extent *x = a, *y = b;

	return (x->offset_bytes > y->offset_bytes) - (x->offset_bytes < y->offset_bytes);
}

/* Hands the ranges written to `r`, sorted and merged. */
static void finish_written(struct ctx *c, struct dg_bandwidth_result *r)
{
	size_t n = 0;

	if (c->nwritten)
		qsort(c->written, c->nwritten, sizeof(*c->written), cmp_extent);
	for (size_t i = 0; i < c->nwritten; i++) {
		struct dg_bandwidth_extent *x = &c->written[i];

		if (n > 0 && x->offset_bytes <=
				 c->written[n - 1].offset_bytes + c->written[n - 1].length_bytes) {
			struct dg_bandwidth_extent *l = &c->written[n - 1];
			uint64_t end = x->offset_bytes + x->length_bytes;

			if (end > l->offset_bytes + l->length_bytes)
				l->length_bytes = end - l->offset_bytes;
			continue;
		}
		c->written[n++] = *x;
	}
	r->written = c->written;
	r->nwritten = n;
	r->written_bytes = 0;
	for (size_t i = 0; i < n; i++)
		r->written_bytes += r->written[i].length_bytes;
	c->written = NULL;
	c->nwritten = c->capwritten = 0;
}

static size_t reads_for(const struct ctx *c, uint64_t len)
{
	uint64_t pos = positioning_bytes(c, len);

	return 1 + (size_t)((len - pos + c->rb - 1) / c->rb);
}

/*
 * Bytes per timed read for samples of `len` bytes: block_bytes, halved (staying a multiple of
 * 4096 and of the sector) until the timed part spans MIN_TIMED_READS reads. A stream of three
 * or four reads leaves the slope to a few completion times, any of them moved by the host (a
 * late wakeup, a request split below the block layer and finished out of order), and too few
 * reads to tell a stalled one from the others; the drive streams smaller reads just as fast.
 */
static uint32_t timed_read_bytes(const struct ctx *c, uint64_t len)
{
	uint64_t timed = len - positioning_bytes(c, len);
	uint32_t b = c->p.block_bytes;

	while (timed / b < MIN_TIMED_READS && b / 2 >= 4096 && (b / 2) % 4096 == 0 &&
	       (b / 2) % c->align == 0)
		b /= 2;
	return b;
}

/* Least-squares fit of t on b over points [0, n) with one slope and a new intercept from each
 * point jumps[0..nj) on (increasing). Returns the slope (0 if undefined), *sse its residual. */
static double fit_line(const double *b, const double *t, size_t n, const size_t *jumps, size_t nj,
		       double *sse)
{
	double sbb = 0, sbt = 0, slope = 0;

	*sse = 0;
	for (int pass = 0; pass < 2; pass++) {
		size_t g = 0, i = 0;

		while (i < n) {
			size_t end = n;
			double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0;

			while (g < nj && jumps[g] <= i)
				g++;
			if (g < nj && jumps[g] < n)
				end = jumps[g];
			for (size_t k = i; k < end; k++) {
				s0 += 1;
				s1 += b[k];
				s2 += t[k];
				s3 += b[k] * b[k];
				s4 += b[k] * t[k];
			}
			if (pass == 0) {
				sbb += s3 - s1 * s1 / s0;
				sbt += s4 - s1 * s2 / s0;
			} else {
				double ic = (s2 - slope * s1) / s0;

				for (size_t k = i; k < end; k++)
					*sse +=
					    (t[k] - ic - slope * b[k]) * (t[k] - ic - slope * b[k]);
			}
			i = end;
		}
		if (pass == 0)
			slope = sbb > 0 ? sbt / sbb : 0;
	}
	return slope;
}

/*
 * ms per MiB of a stream from its cumulative points (b[i] MiB done at t[i] ms): the
 * least-squares slope, which the track-to-track skews bias far less than the end points do
 * (a sample spans a fractional number of tracks; the end points see where the skews fall).
 * Each stall is a wait before the point in `jumps[0..nj)` that ends it (a slow spot, a retry,
 * a zone change, a revolution lost while the host was late): a new intercept from there on
 * takes it out exactly, its own transfer and track switches still counted; the points after a
 * late host catching up stay on the line. Without stalls, one wait before point `cand` (the unit
 * that waited far longer beyond the pace than any other; 0 for none) is allowed for when its
 * jump is at least JUMP_FRACTION of the stream's time and it explains most of what the plain
 * line leaves. Returns 0 when there are fewer than 3 points.
 */
static double line_slope(const double *b, const double *t, size_t n, const size_t *jumps, size_t nj,
			 size_t cand)
{
	double sse_plain, sse, plain, slope, jump;

	if (n < 3)
		return 0;
	plain = fit_line(b, t, n, jumps, nj, &sse_plain);
	if (nj > 0 || cand == 0 || cand >= n)
		return plain;
	slope = fit_line(b, t, n, &cand, 1, &sse);
	/* The jump: the second intercept less the first, at the slope found. */
	jump = (t[cand] - slope * b[cand]) - (t[cand - 1] - slope * b[cand - 1]);
	if (slope > 0 && jump >= JUMP_FRACTION * (t[n - 1] - t[0]) && sse < 0.5 * sse_plain)
		return slope;
	return plain;
}

/* Keeps the bytes of a stalled unit (reads c->order[at .. at+n) of a stream whose timed part
 * starts at `timed_off`) for the warning when it waited SLOW_SPOT_MS or more; a spot already
 * kept (another pass) adds its wait. */
static void note_stall(struct ctx *c, uint64_t timed_off, size_t at, size_t n, double ms)
{
	uint64_t lo = UINT64_MAX, hi = 0;

	if (ms < SLOW_SPOT_MS)
		return;
	for (size_t i = at; i < at + n; i++) {
		size_t k = c->order[i];
		uint64_t o = timed_off + (uint64_t)(k - 1) * c->rb;

		if (o < lo)
			lo = o;
		if (o + c->len[k] > hi)
			hi = o + c->len[k];
	}
	for (unsigned j = 0; j < c->nstall_notes; j++) {
		if (c->stall_notes[j].lo == lo && c->stall_notes[j].hi == hi) {
			c->stall_notes[j].ms += ms;
			return;
		}
	}
	if (c->nstall_notes < MAX_STALL_NOTES)
		c->stall_notes[c->nstall_notes++] = (struct stall_note){lo, hi, ms};
	else
		c->stall_notes_more++;
}

/* Remembers [off, off + len) as read: the drive may cache it and what it read ahead. */
static void remember(struct ctx *c, uint64_t off, uint64_t len)
{
	c->recent[c->recent_next] = (struct dg_bandwidth_extent){off, len + READ_AHEAD_MARGIN};
	c->recent_next = (c->recent_next + 1) % RECENT_EXTENTS;
	if (c->nrecent < RECENT_EXTENTS)
		c->nrecent++;
}

/* True when [lo, hi) overlaps something read lately (or what the drive read ahead of it). */
static bool recently_read(const struct ctx *c, uint64_t lo, uint64_t hi)
{
	for (unsigned i = 0; i < c->nrecent; i++) {
		const struct dg_bandwidth_extent *x = &c->recent[i];

		if (lo < x->offset_bytes + x->length_bytes && x->offset_bytes < hi)
			return true;
	}
	return false;
}

/*
 * Moves the drive's read stream away before a sample whose bytes were read lately (the pilot's
 * samples are the curve's first and last; an interrupted boundary search): one small read far
 * from [lo, hi) and from everything read lately, so that the sample is read from the medium and
 * not from the drive's cache at the interface's speed. Returns 0 or the engine's -errno; a
 * failed read goes to c->errors.
 */
static int flush_stream(struct ctx *c, uint64_t lo, uint64_t hi)
{
	uint64_t size = c->info->size_bytes, unit = FLUSH_BYTES, at = UINT64_MAX;
	uint64_t cands[3] = {0, size / 2, size - FLUSH_BYTES};
	struct dg_io io = {.op = DG_IO_READ};
	int n;

	if (unit % c->align)
		unit = c->align;
	cands[2] = size - unit;
	for (int i = 0; i < 3 && at == UINT64_MAX; i++) {
		uint64_t x = cands[i] - cands[i] % c->align;

		if (x + unit <= size && !recently_read(c, x, x + unit) &&
		    (x + unit + READ_AHEAD_MARGIN <= lo || x >= hi + READ_AHEAD_MARGIN))
			at = x;
	}
	if (at == UINT64_MAX)
		return 0; /* a device too small to read elsewhere: nothing to gain */
	io.offset_bytes = at;
	io.length_bytes = (uint32_t)unit;
	n = dg_engine_submit(c->e, &io, 1);
	if (n < 0)
		return n;
	while (dg_engine_inflight(c->e) > 0) {
		n = dg_engine_reap(c->e, c->comps, 1, 1);
		if (n == -EINTR)
			continue;
		if (n < 0)
			return n;
		if (n == 1 && c->comps[0].result != (int64_t)unit)
			dg_errors_add(c->errors, at, unit,
				      c->comps[0].result < 0 ? (int)-c->comps[0].result : EIO);
	}
	remember(c, at, unit);
	c->flushes++;
	return 0;
}

/* Waits for every I/O still in flight (after a fatal submit error), ignoring results. */
static void drain(struct ctx *c)
{
	while (dg_engine_inflight(c->e) > 0) {
		int n = dg_engine_reap(c->e, c->comps, 1, c->qd);
		if (n < 0 && n != -EINTR)
			break;
	}
}

/*
 * Streams [off, off+len): read 0 positions (untimed), the rest are timed from its completion;
 * in write mode the rest are writes of the pattern (submitted one by one: the engine copies the
 * data at submission, so one buffer serves them all). Failed I/Os go to c->errors and leave
 * m->ok false. Returns 0, or -errno when the engine refuses a submission (fatal for the run).
 */
/*
 * Whether the wait of unit u (kb[u] MiB in kt[u] ms; `med` ms per MiB the stream's median pace)
 * was the host's: a reply delayed on the host (a busy core, a late wakeup) holds back the
 * completions behind it, which then come in a burst faster than the pace, while the drive
 * streamed on. A slow sector or a retry costs the stream the time: the units after it keep the
 * pace. The host's when the next units (up to CATCH_UP_UNITS, while they run ahead of the pace)
 * make up at least CATCH_UP_FRACTION of the wait.
 */
static bool host_hiccup(const double *kb, const double *kt, size_t nu, size_t u, double med)
{
	double wait = kt[u] - med * kb[u], back = 0;

	for (size_t v = u + 1; v < nu && v <= u + CATCH_UP_UNITS; v++) {
		double ahead = med * kb[v] - kt[v];

		if (ahead <= 0)
			break;
		back += ahead;
	}
	return wait > 0 && back >= CATCH_UP_FRACTION * wait;
}

/*
 * ms per MiB end to end over the units [first, nu) (cumulative points c->cum_b/cum_t, unit
 * sizes and times c->kb/kt, per MiB c->tpb; `med` the median pace): from the first point to
 * the last that no host hiccup holds late (a late reply's end and its burst lie off the pace,
 * up to the first unit that does not run ahead again), less the waits of the drive's own
 * stalls between them. `fallback` when fewer than half the units remain between the two.
 */
static double paced_slope(const struct ctx *c, size_t first, size_t nu, double med, double fallback)
{
	size_t a = first, b = nu;
	double ms;

	for (size_t u = 0; u < nu; u++) {
		size_t v = u + 1;

		if (!(c->tpb[u] > STALL_FACTOR * med) || !host_hiccup(c->kb, c->kt, nu, u, med))
			continue;
		while (v < nu && med * c->kb[v] - c->kt[v] > 0)
			v++;
		/* Points u + 1 .. v are late (the reply, then the burst catching up). */
		if (u + 1 <= a && a <= v)
			a = v + 1 <= nu ? v + 1 : nu;
		if (u + 1 <= b && b <= v)
			b = u;
	}
	if (b <= a || 2 * (b - a) < nu - first || !(c->cum_b[b] > c->cum_b[a]))
		return fallback;
	ms = c->cum_t[b] - c->cum_t[a];
	for (size_t j = a; j < b; j++)
		if (c->tpb[j] > STALL_FACTOR * med && !host_hiccup(c->kb, c->kt, nu, j, med))
			ms -= c->kt[j] - med * c->kb[j];
	return ms > 0 ? ms / (c->cum_b[b] - c->cum_b[a]) : fallback;
}

static int measure_io(struct ctx *c, uint64_t off, uint64_t len, struct meas *m)
{
	uint64_t pos = positioning_bytes(c, len);
	size_t nreads = reads_for(c, len), next = 0, ntimed, h;
	unsigned inflight = 0;
	bool failed = false;
	double med = 0, slope, *tmp;
	size_t nk, nu, first, at1 = 0, at1_u = 0, cand = 0, nj = 0, nfit = 0, hic = 0;
	double ex1 = 0, ex2 = 0;
	uint64_t prev, t0, tol;

	memset(m, 0, sizeof(*m));
	m->off = off + pos;
	m->len = len - pos;
	if (recently_read(c, off + pos, off + len)) {
		int rc = flush_stream(c, off, off + len);

		if (rc)
			return rc;
	}
	while (next < nreads || inflight > 0) {
		int n;

		/* The positioning read goes alone and completes before the stream is submitted:
		 * queued together, the host or the drive may serve a timed read first (FUSE workers
		 * race, NCQ reorders), and the positioning read would then start a second stream
		 * behind the first instead of starting the clock. */
		while (!failed && next < nreads && inflight < c->qd &&
		       !(next == 1 && inflight > 0)) {
			unsigned want = 0;

			/* Reads go in one batch; a write alone, its pattern in c->wbuf. */
			while (next + want < nreads && inflight + want < c->qd &&
			       !(c->p.write && want > 0) && !(next + want == 1 && want > 0)) {
				size_t k = next + want;
				uint64_t o = k == 0 ? off : off + pos + (uint64_t)(k - 1) * c->rb;
				uint64_t l = k == 0 ? pos : off + len - o;
				bool w = c->p.write && k > 0;

				if (l > (k == 0 ? c->p.block_bytes : c->rb))
					l = k == 0 ? c->p.block_bytes : c->rb;
				c->len[k] = (uint32_t)l;
				if (w && c->wbuf)
					pattern_stamp(c->wbuf, (size_t)l, o);
				c->ios[want] = (struct dg_io){.offset_bytes = o,
							      .length_bytes = (uint32_t)l,
							      .op = w ? DG_IO_WRITE : DG_IO_READ,
							      .tag = k,
							      .data = w ? c->wbuf : NULL};
				want++;
			}
			n = dg_engine_submit(c->e, c->ios, want);
			if (n < 0) {
				drain(c);
				return n;
			}
			for (int i = 0; i < n; i++) {
				if (c->ios[i].op == DG_IO_WRITE)
					note_written(c, c->ios[i].offset_bytes,
						     c->ios[i].length_bytes);
			}
			next += (size_t)n;
			inflight += (unsigned)n;
			if ((unsigned)n < want)
				break; /* the engine took fewer: reap first */
		}
		if (inflight == 0)
			break;
		n = dg_engine_reap(c->e, c->comps, 1, c->qd);
		if (n == -EINTR)
			continue;
		if (n < 0) {
			drain(c);
			return n;
		}
		for (int i = 0; i < n; i++) {
			const struct dg_completion *d = &c->comps[i];
			size_t k = (size_t)d->tag;

			inflight--;
			c->done_ns[k] = d->complete_ns;
			if (d->result == (int64_t)d->length_bytes)
				continue;
			failed = true;
			if (d->result < 0)
				dg_errors_add(c->errors, d->offset_bytes, d->length_bytes,
					      (int)-d->result);
			else
				dg_errors_add(c->errors, d->offset_bytes + (uint64_t)d->result,
					      d->length_bytes - (uint64_t)d->result, EIO);
		}
	}
	remember(c, off, len);
	if (failed || next < nreads) {
		c->failed_samples++;
		return 0;
	}

	/*
	 * Timed reads in completion order, grouped into units: reads whose completions were seen
	 * within a quarter of the stream's mean interval of each other form one unit (one reap,
	 * one timestamp; or requests merged below the block layer, which all finish when the
	 * merged one does), so that batching never makes a near-zero interval beside a double
	 * one. A read seen by the time the positioning read was had been read before the clock
	 * started: left out.
	 */
	ntimed = nreads - 1;
	for (size_t i = 0; i < ntimed; i++)
		c->order[i] = i + 1;
	sort_key_ns = c->done_ns;
	qsort(c->order, ntimed, sizeof(*c->order), cmp_by_done);
	t0 = c->done_ns[0];
	prev = t0;
	nu = 0;
	tol = ntimed ? (c->done_ns[c->order[ntimed - 1]] - t0) / ntimed / 4 : 0;
	for (size_t i = 0; i < ntimed; i++) {
		size_t k = c->order[i];

		if (c->done_ns[k] <= t0)
			continue;
		if (nu > 0 && c->done_ns[k] - prev <= tol) {
			c->kb[nu - 1] += (double)c->len[k] / (1 << 20);
			c->kt[nu - 1] += (double)(c->done_ns[k] - prev) / 1e6;
			c->cum_b[nu - 1] += 1; /* reads in the unit, until the sums below */
			prev = c->done_ns[k];
			continue;
		}
		c->kb[nu] = (double)c->len[k] / (1 << 20);
		c->kt[nu] = (double)(c->done_ns[k] - prev) / 1e6;
		c->cum_b[nu] = 1;
		c->cum_t[nu] = (double)i; /* where the unit starts in c->order, likewise */
		prev = c->done_ns[k];
		nu++;
	}
	/*
	 * Stalls: units far slower per byte than the stream's median; what they waited beyond the
	 * median pace is the stall time. The longest stays in the stream, where the line's one
	 * jump takes its wait out exactly (its own transfer and any track switch in it still
	 * count); any others are left out whole, bytes and time.
	 */
	tmp = c->tpb + ntimed;
	if (nu >= STALL_MIN_READS) {
		for (size_t u = 0; u < nu; u++)
			c->tpb[u] = tmp[u] = c->kt[u] / c->kb[u];
		med = median_of(tmp, nu);
	}
	nk = 0;
	for (size_t u = 0; u < nu; u++) {
		if (med > 0 && c->tpb[u] > STALL_FACTOR * med &&
		    host_hiccup(c->kb, c->kt, nu, u, med)) {
			/* The host was late, not the drive: the reads behind it came in a burst,
			 * and the line through both stays on the stream's pace. */
			c->hiccups++;
			hic++;
			c->kb[nk] = c->kb[u];
			c->kt[nk] = c->kt[u];
			nk++;
			continue;
		}
		if (med > 0 && c->tpb[u] > STALL_FACTOR * med) {
			m->stalls += (unsigned)c->cum_b[u];
			m->stall_ms += c->kt[u] - med * c->kb[u];
			note_stall(c, off + pos, (size_t)c->cum_t[u], (size_t)c->cum_b[u],
				   c->kt[u] - med * c->kb[u]);
			/* c->order is no longer needed up to this unit's reads */
			c->order[nj++] = nk + 1;
		}
		/* The unit that waited longest beyond the median pace, if it stands out: the
		 * wait may lie before the point it ends at. */
		if (med > 0) {
			double x = c->kt[u] - med * c->kb[u];

			if (x > ex1) {
				ex2 = ex1;
				ex1 = x;
				at1 = nk + 1;
				at1_u = u;
			} else if (x > ex2) {
				ex2 = x;
			}
		}
		c->kb[nk] = c->kb[u];
		c->kt[nk] = c->kt[u];
		nk++;
	}
	c->cum_b[0] = c->cum_t[0] = 0;
	for (size_t j = 0; j < nk; j++) {
		c->cum_b[j + 1] = c->cum_b[j] + c->kb[j];
		c->cum_t[j + 1] = c->cum_t[j] + c->kt[j];
	}
	/*
	 * The rate: a line through the cumulative (MiB, ms) of the units that did not stall, one
	 * one-off wait allowed for. With enough points the clock's start (0, 0) and the first
	 * unit's end are left out: the first timed request reaches the drive a host turnaround
	 * after the positioning read's completion, and while the drive's read-ahead streams on
	 * its completion comes late by that much; every later one is paced by the stream. The
	 * spread: the two halves' rates, end to end, on the same points.
	 */
	first = nk >= MIN_FIT_POINTS + 2 ? 2 : nk >= MIN_FIT_POINTS ? 1 : 0;
	/* A one-off wait stands out from the rest; the track switches recur, and a short
	 * sample's switches alone must not pass for one. */
	if (at1 > first && ex1 > JUMP_UNIQUE * (ex2 > 0 ? ex2 : 0) &&
	    !host_hiccup(c->kb, c->kt, nu, at1_u, med))
		cand = at1 - first;
	for (size_t j = 0; j < nj; j++) /* jumps in the fitted points' numbering */
		c->order[nfit++] = c->order[j] > first ? c->order[j] - first : 0;
	slope =
	    line_slope(c->cum_b + first, c->cum_t + first, nk + 1 - first, c->order, nfit, cand);
	/* A late host's burst drags the least-squares line (the late points sit off it on one
	 * side), but the points on the pace before the late reply and after its burst stay where
	 * the stream put them: end to end between two such points then, the drive's own stalls
	 * taken out. */
	if (hic > 0 && (nj > 0 || cand == 0))
		slope = paced_slope(c, first, nu, med, slope);
	/* Never faster than end to end (the drive's own waits taken out) by more than the skews
	 * can explain: whatever bent the line that way (a late reply whose burst went unseen)
	 * was the host's. */
	if (slope > 0 && med > 0 && nk > first && c->cum_b[nk] > c->cum_b[first]) {
		double ms = c->cum_t[nk] - c->cum_t[first];

		for (size_t j = first; j < nk; j++)
			if ((c->tpb[j] > STALL_FACTOR * med &&
			     !host_hiccup(c->kb, c->kt, nu, j, med)) ||
			    (cand > 0 && j == at1_u))
				ms -= c->kt[j] - med * c->kb[j];
		ms /= c->cum_b[nk] - c->cum_b[first];
		if (ms > 0 && slope < ms / E2E_MARGIN)
			slope = ms / E2E_MARGIN;
	}
	if (!(slope > 0) && c->cum_b[nk] > c->cum_b[first])
		slope = (c->cum_t[nk] - c->cum_t[first]) / (c->cum_b[nk] - c->cum_b[first]);
	if (!(slope > 0) || !isfinite(slope)) {
		/* Nothing completed measurably after the clock started: no rate, and no 0. */
		c->untimed_samples++;
		return 0;
	}
	/*
	 * What the reads' times allow: the fitted bytes over their time less every unit's wait
	 * beyond the median pace (whatever the line took out cannot be more). A line steeper than
	 * that (a few units, a burst after a late host mistaken for the pace) is no measurement.
	 * In write mode a sample is never dropped: its bytes were written, and every range
	 * written is a sample of the result.
	 */
	{
		double bytes = c->cum_b[nk] - c->cum_b[first], ms = c->cum_t[nk] - c->cum_t[first];

		for (size_t j = first; j < nk; j++)
			ms -= fmax(0.0, c->kt[j] - med * c->kb[j]);
		if (!c->p.write && (nk < first + MIN_FIT_POINTS || !(ms > 0) ||
				    ms > TRUST_FACTOR * slope * bytes)) {
			c->untrusted_samples++;
			return 0;
		}
	}
	m->mb_per_s = (1 << 20) / (slope * 1e-3) / DG_MB;
	h = first + (nk - first) / 2;
	if (h > first && nk > h && c->cum_t[h] > c->cum_t[first] && c->cum_t[nk] > c->cum_t[h]) {
		double r1 = (c->cum_b[h] - c->cum_b[first]) / (c->cum_t[h] - c->cum_t[first]);
		double r2 = (c->cum_b[nk] - c->cum_b[h]) / (c->cum_t[nk] - c->cum_t[h]);

		m->half_spread = fabs(r1 - r2) * (1 << 20) * 1e3 / DG_MB;
	}
	/* Halves that far apart without a stall to explain it: the completions' times do not
	 * pin a rate down (too short a sample for the host's timing), and a number from them
	 * would be noise. */
	if (!c->p.write && m->stalls == 0 && m->half_spread > TRUST_SPREAD * m->mb_per_s) {
		c->untrusted_samples++;
		return 0;
	}
	m->ok = true;
	return 0;
}

/* measure_io(), except that a stop request on a device that does not answer (the engine gives
 * up waiting: -ECANCELED) ends the sample unmeasured instead of failing the run. */
static int measure(struct ctx *c, uint64_t off, uint64_t len, struct meas *m)
{
	uint64_t failed0 = c->errors->total_bytes;
	int rc = measure_io(c, off, len, m);

	if (rc == -ECANCELED && stopped(c)) {
		m->ok = false;
		return 0;
	}
	if (rc == 0 && c->errors->total_bytes > failed0) {
		if (++c->failed_in_a_row >= MAX_FAILED_SAMPLES_IN_A_ROW)
			c->failing = true;
	} else if (rc == 0) {
		c->failed_in_a_row = 0;
	}
	return rc;
}

static void report(struct ctx *c, double units)
{
	double elapsed, eta = -1;

	c->units_done += units;
	if (!c->progress)
		return;
	elapsed = (double)(dg_engine_now_ns(c->e) - c->t0_ns) / 1e9;
	if (c->units_done > 0 && c->units_total > c->units_done)
		eta = elapsed / c->units_done * (c->units_total - c->units_done);
	else if (c->units_total <= c->units_done)
		eta = 0;
	c->progress(c->progress_arg, c->phase,
		    c->units_total > 0 ? fmin(1.0, c->units_done / c->units_total) : 0.0, eta);
}

/* ---- the result ---- */

static int add_sample(struct dg_bandwidth_result *r, size_t *cap,
		      const struct dg_bandwidth_sample *s)
{
	if (r->nsamples == *cap) {
		size_t ncap = *cap ? 2 * *cap : 64;
		struct dg_bandwidth_sample *v = realloc(r->samples, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->samples = v;
		*cap = ncap;
	}
	r->samples[r->nsamples++] = *s;
	return 0;
}

void dg_bandwidth_result_free(struct dg_bandwidth_result *r)
{
	if (!r)
		return;
	free(r->samples);
	free(r->zones);
	free(r->written);
	dg_warnings_free(&r->notes);
	free(r);
}

/* xorshift64*: the sample order's generator (Vigna 2016); seed 0 is mapped to a constant. */
static uint64_t next_random(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static void shuffle(size_t *v, size_t n, uint64_t *state)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)(next_random(state) % i);
		size_t t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

/* splitmix64 (Steele, Lea & Flood 2014): a sample's jitter from (seed, index), whatever the
 * order the samples are taken in. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * Offset of curve sample i of n: spread evenly, the first at the range's start and the last
 * ending at its end, the others moved by a seeded random amount within their share of the gap.
 * The jitter matters: evenly spaced samples alias with the track and band structure (a sample
 * spans a fractional number of tracks, and the fraction drifts slowly along the curve), which
 * shows as smooth waves of a few 0.1% that a change-point method would take for steps; random
 * phases turn them into noise that the noise estimate sees.
 */
static uint64_t sample_offset(const struct ctx *c, size_t i, size_t n)
{
	uint64_t span = c->p.range_end_bytes - c->p.range_start_bytes - c->p.sample_bytes;
	uint64_t o = n > 1 ? (uint64_t)((unsigned __int128)span * i / (n - 1)) : 0;
	uint64_t step = n > 1 ? span / (n - 1) : 0;

	if (i > 0 && i + 1 < n && step > c->p.sample_bytes + c->align) {
		uint64_t gap = step - c->p.sample_bytes;
		uint64_t j = mix(c->p.seed ^ mix(i)) % gap;

		o = o + j - gap / 2;
	}
	return c->p.range_start_bytes + o - o % c->align;
}

/* Fraction of a sample's bytes that lie in zone A, from its rate: the time-weighted mix
 * 1/r = f/rA + (1-f)/rB. */
static double fraction_in_a(double r, double ra, double rb)
{
	double f = (1.0 / r - 1.0 / rb) / (1.0 / ra - 1.0 / rb);

	/* NAN (equal rates) counts as 0: the caller converts f * len to an integer */
	return !(f > 0) ? 0 : f > 1 ? 1 : f;
}

/* Time-weighted rate of the usable samples wholly inside [start, end); 0 when none. */
static double rate_inside(const struct dg_bandwidth_result *r, uint64_t start, uint64_t end,
			  size_t *count)
{
	double bytes = 0, secs = 0;

	*count = 0;
	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &r->samples[i];

		if (s->excluded || !(s->mb_per_s > 0) || s->offset_bytes < start ||
		    s->offset_bytes + s->length_bytes > end)
			continue;
		bytes += (double)s->length_bytes;
		secs += (double)s->length_bytes / (s->mb_per_s * DG_MB);
		(*count)++;
	}
	return secs > 0 ? bytes / secs / DG_MB : 0;
}

/* A zone's rate when none of its samples is usable (all set aside): the median of its measured
 * samples, else of every measured sample; never 0 while anything was measured. */
static double any_rate(const struct dg_bandwidth_sample *v, size_t first, size_t end, size_t n)
{
	double *x = malloc((n ? n : 1) * sizeof(*x)), med = 0;
	size_t k = 0;

	if (!x)
		return 0;
	for (size_t i = first; i < end; i++)
		if (v[i].mb_per_s > 0)
			x[k++] = v[i].mb_per_s;
	for (size_t i = 0; k == 0 && i < n; i++)
		if (v[i].mb_per_s > 0)
			x[k++] = v[i].mb_per_s;
	if (k > 0)
		med = median_of(x, k);
	free(x);
	return med;
}

/* Time-weighted rate of the usable samples [first, last] of an offset-ordered array. */
static double rate_of_range(const struct dg_bandwidth_sample *v, size_t first, size_t end)
{
	double bytes = 0, secs = 0;

	for (size_t i = first; i < end; i++) {
		if (v[i].excluded || !(v[i].mb_per_s > 0))
			continue;
		bytes += (double)v[i].length_bytes;
		secs += (double)v[i].length_bytes / (v[i].mb_per_s * DG_MB);
	}
	return secs > 0 ? bytes / secs / DG_MB : 0;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct dg_bandwidth_sample *x = a, *y = b;

	return (x->offset_bytes > y->offset_bytes) - (x->offset_bytes < y->offset_bytes);
}

/* One boundary to place: between segment A (samples [a0, a1)) and segment B ([b0, b1)). */
struct boundary {
	double ra, rb;
	uint64_t lo, hi;       /* the boundary lies in [lo, hi] */
	uint64_t a_len, b_len; /* rough zone lengths */
	double estimate;       /* the bracket's middle, once refined */
};

/* Where a refinement sample of `span` bytes centred on `mid` starts: aligned, in the range. */
static uint64_t refine_start(const struct ctx *c, uint64_t mid, uint64_t span)
{
	uint64_t start = mid > span / 2 ? mid - span / 2 : 0;

	start -= start % c->align;
	if (start < c->p.range_start_bytes)
		start = c->p.range_start_bytes;
	if (start + span > c->p.range_end_bytes)
		start = c->p.range_end_bytes - span;
	return start - start % c->align;
}

/* Measures one refinement sample whose timed part is centred on `mid`. */
static int refine_sample(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, uint64_t mid,
			 uint64_t span, struct meas *m)
{
	uint64_t start = refine_start(c, mid, span);
	struct dg_bandwidth_sample s = {0};
	int rc;

	rc = measure(c, start, span, m);
	if (rc)
		return rc;
	r->refine_samples++;
	if (!m->ok)
		return 0;
	s.offset_bytes = m->off;
	s.length_bytes = m->len;
	s.mb_per_s = m->mb_per_s;
	s.spread_mb_per_s = m->half_spread;
	s.stalls = m->stalls;
	s.stall_ms = m->stall_ms;
	s.refine = true;
	return add_sample(r, cap, &s);
}

/* Narrows b's bracket with a sample at [off, off+len) of rate r: the bytes before
 * off + f * len are in A and those after it in B, f the fraction in A by its rate. A sample
 * nearer A's rate can only raise `lo`, one nearer B's only lower `hi`; noise moves the cut by
 * a fraction of the sample at most, and a sample that straddles places it where it is. */
static void narrow(struct boundary *b, uint64_t off, uint64_t len, double r)
{
	double f = fraction_in_a(r, b->ra, b->rb);
	uint64_t cut = off + (uint64_t)(f * (double)len);

	if (f >= 0.5 && cut > b->lo)
		b->lo = cut;
	else if (f < 0.5 && cut < b->hi)
		b->hi = cut;
}

/*
 * Bisection of one boundary with samples of the curve's size (the noise of a refining sample is
 * the curve's), until the bracket is REFINE_TARGET of the smaller zone. Each sample is classed
 * by the nearer rate (robust to noise up to half the step) and moves one end of the bracket.
 */
static int refine_boundary(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap,
			   struct boundary *b)
{
	uint64_t target =
	    (uint64_t)(REFINE_TARGET * (double)(b->a_len < b->b_len ? b->a_len : b->b_len));
	uint64_t span = c->p.sample_bytes, mid, start;

	if (target < c->align)
		target = c->align;
	for (unsigned step = 0; step < REFINE_MAX_STEPS; step++) {
		struct meas m;
		int rc;

		/* A bracket of two samples is as far as samples can tell; closer ones would also
		 * read what the drive still caches from the last. */
		if (b->hi <= b->lo || b->hi - b->lo <= target || b->hi - b->lo <= 2 * span ||
		    stopped(c))
			break;
		/* Nor may its timed bytes have been read lately, by any sample: a drive with a
		 * large cache keeps several streams, whatever moved its head since. */
		mid = b->lo + (b->hi - b->lo) / 2;
		start = refine_start(c, mid, span);
		if (recently_read(c, start + positioning_bytes(c, span), start + span))
			break;
		rc = refine_sample(c, r, cap, mid, span, &m);
		report(c, 1);
		if (rc)
			return rc;
		if (!m.ok)
			break;
		narrow(b, m.off, m.len, m.mb_per_s);
	}
	return 0;
}

/* The zone whose range holds the sample wholly, or NULL (it straddles a boundary). */
static const struct dg_bandwidth_zone *zone_of_sample(const struct dg_bandwidth_result *r,
						      const struct dg_bandwidth_sample *sm)
{
	for (size_t z = 0; z < r->nzones; z++)
		if (sm->offset_bytes >= r->zones[z].start_bytes &&
		    sm->offset_bytes + sm->length_bytes <= r->zones[z].end_bytes)
			return &r->zones[z];
	return NULL;
}

/*
 * Outer and inner rates come from the curve's ends: the first and last zones' rates when the
 * samples at the ends agree with them, else the end samples themselves (a quick curve of a few
 * samples can fit two zones to a drive of sixteen). A fit that leaves samples far from their
 * zone's rate says so in a note.
 */
#define END_TOL 0.025
static void curve_ends(struct dg_bandwidth_result *r)
{
	const struct dg_bandwidth_sample *first = NULL, *last = NULL;
	double tol = 3 * r->noise > 0.03 ? 3 * r->noise : 0.03;
	size_t far = 0;

	r->outer_mb_per_s = r->zones[0].mb_per_s;
	r->inner_mb_per_s = r->zones[r->nzones - 1].mb_per_s;
	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *sm = &r->samples[i];
		if (!(sm->mb_per_s > 0) || sm->stalls)
			continue;
		if (!first || sm->offset_bytes < first->offset_bytes)
			first = sm;
		if (!last || sm->offset_bytes > last->offset_bytes)
			last = sm;
		const struct dg_bandwidth_zone *z = zone_of_sample(r, sm);
		if (z && fabs(sm->mb_per_s / z->mb_per_s - 1) > tol)
			far++;
	}
	/* the ends are judged tighter than the fit: a zone rate 2.5% off its end sample is not
	 * that end's rate, whatever the curve's noise (inflated by steps the fit missed) */
	if (first && fabs(first->mb_per_s / r->outer_mb_per_s - 1) > END_TOL)
		r->outer_mb_per_s = first->mb_per_s;
	if (last && fabs(last->mb_per_s / r->inner_mb_per_s - 1) > END_TOL)
		r->inner_mb_per_s = last->mb_per_s;
	if (far)
		dg_warnings_add(
		    &r->notes,
		    "the zone fit leaves %zu sample%s more than %.1f%% from %s zone's "
		    "rate: too few samples for this drive's zones (outer and inner come "
		    "from the curve's ends)",
		    far, far == 1 ? "" : "s", 100 * tol, far == 1 ? "its" : "their");
}

/* Zones from the segments of the (offset-ordered) curve samples v[0..n), refined when asked. */
static int find_zones(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, size_t n)
{
	struct dg_bandwidth_sample *v = NULL;
	double *rates = NULL;
	bool *excl = NULL;
	size_t *ends = NULL, nseg = 0, nb = 0, zcount;
	struct boundary *bs = NULL;
	double noise = NOISE_FLOOR;
	int rc = -ENOMEM;

	/* Work on a copy: refinement appends to r->samples. */
	v = malloc((n ? n : 1) * sizeof(*v));
	rates = malloc((n ? n : 1) * sizeof(*rates));
	excl = malloc((n ? n : 1) * sizeof(*excl));
	ends = malloc((n ? n : 1) * sizeof(*ends));
	if (!v || !rates || !excl || !ends)
		goto out;
	if (n) /* r->samples is NULL when nothing was measured (an early stop) */
		memcpy(v, r->samples, n * sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		rates[i] = v[i].mb_per_s;
		excl[i] = !(v[i].mb_per_s > 0);
	}
	size_t usable = 0;
	for (size_t i = 0; i < n; i++)
		usable += !excl[i];
	if (usable == 0) {
		rc = 0;
		goto out; /* nothing measured: no zones */
	}
	rc = dg_zones_segment(rates, n, NOISE_FLOOR, MIN_STEP, excl, ends, &nseg, &noise);
	if (rc == -EINVAL) {
		/* A handful of usable samples at different rates (a run stopped early, a tiny
		 * --samples): each is a segment too short to be a zone, and all were set aside.
		 * Nothing tells zones apart: one zone over every usable sample. */
		for (size_t i = 0; i < n; i++)
			excl[i] = !(v[i].mb_per_s > 0);
		nseg = 1;
		ends[0] = n;
		noise = NOISE_FLOOR;
		snprintf(r->flat_reason, sizeof(r->flat_reason),
			 "%zu usable samples are too few to tell zones apart: one zone", usable);
		rc = 0;
	}
	if (rc)
		goto out;
	r->noise = noise;
	for (size_t i = 0; i < n; i++) {
		if (excl[i] && v[i].mb_per_s > 0)
			v[i].excluded = r->samples[i].excluded = true;
	}
	/* Timing decides, the kernel's flag only hints: loop, dm, md, virtio, iSCSI and many USB
	 * bridges call a spinning disk non-rotational. Steps that stand out from the noise are
	 * zones whatever the flag says; a disagreement is noted. */
	if (c->info->rotational == 0 && nseg > 1) {
		dg_warnings_add(
		    &r->notes,
		    "the device reports itself non-rotational, but its sequential rate "
		    "falls in %zu steps, as a spinning disk's recording zones do: a layer "
		    "in between (loop, dm, md, a USB bridge, a VM) hides the disk",
		    nseg - 1);
	} else if (nseg == 1 && !r->flat_reason[0]) {
		snprintf(r->flat_reason, sizeof(r->flat_reason),
			 "no step along the curve stands out from the measured noise (%.2f%% per "
			 "sample): one zone",
			 100.0 * noise);
	}

	/* Boundaries between consecutive segments. */
	bs = calloc(nseg > 1 ? nseg - 1 : 1, sizeof(*bs));
	if (!bs) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t s = 0; s + 1 < nseg; s++) {
		size_t a0 = s ? ends[s - 1] : 0, a1 = ends[s], b0 = ends[s], b1 = ends[s + 1];
		size_t la = a1, fb = b0;
		struct boundary *b = &bs[nb++];

		while (la > a0 && v[la - 1].excluded)
			la--;
		while (fb < b1 && v[fb].excluded)
			fb++;
		/* Both exist: every segment holds at least three usable samples. */
		la--;
		b->ra = rate_of_range(v, a0, a1);
		b->rb = rate_of_range(v, b0, b1);
		b->lo = v[la].offset_bytes;
		b->hi = v[fb].offset_bytes + v[fb].length_bytes;
		b->a_len = v[la].offset_bytes - v[a0].offset_bytes + v[la].length_bytes;
		b->b_len = v[b1 - 1].offset_bytes + v[b1 - 1].length_bytes - v[fb].offset_bytes;
		/* The bracket's own samples and any set aside between them narrow it at once. */
		for (size_t i = la; i <= fb; i++) {
			if (v[i].mb_per_s > 0)
				narrow(b, v[i].offset_bytes, v[i].length_bytes, v[i].mb_per_s);
		}
		if (b->lo > b->hi) {
			uint64_t t = b->lo;
			b->lo = b->hi;
			b->hi = t;
		}
	}
	if (c->p.refine && r->complete && nb > 0) {
		c->phase = "zones";
		c->units_done = 0;
		c->units_total = (double)nb * REFINE_STEPS_GUESS;
		for (size_t i = 0; i < nb; i++) {
			if (stopped(c)) {
				r->complete = false;
				break;
			}
			rc = refine_boundary(c, r, cap, &bs[i]);
			if (rc)
				goto out;
		}
		if (stopped(c))
			r->complete = false;
	}
	for (size_t i = 0; i < nb; i++)
		bs[i].estimate = (double)bs[i].lo + (double)(bs[i].hi - bs[i].lo) / 2;

	/* The zones: boundaries in order, aligned, each zone at least one sector. */
	zcount = nb + 1;
	r->zones = calloc(zcount, sizeof(*r->zones));
	if (!r->zones) {
		rc = -ENOMEM;
		goto out;
	}
	qsort(r->samples, r->nsamples, sizeof(*r->samples), cmp_sample);
	uint64_t prev = c->p.range_start_bytes;
	for (size_t z = 0; z < zcount; z++) {
		struct dg_bandwidth_zone *zone = &r->zones[z];
		uint64_t end = c->p.range_end_bytes;

		if (z < nb) {
			end = (uint64_t)llround(bs[z].estimate);
			end -= end % c->align;
			if (end <= prev)
				end = prev + c->align;
			if (end >= c->p.range_end_bytes)
				end = c->p.range_end_bytes - c->align;
		}
		zone->start_bytes = prev;
		zone->end_bytes = end;
		zone->mb_per_s =
		    rate_inside(r, zone->start_bytes, zone->end_bytes, &zone->nsamples);
		if (zone->nsamples == 0) {
			size_t a0 = z ? ends[z - 1] : 0;
			zone->mb_per_s = rate_of_range(v, a0, ends[z]);
		}
		if (!(zone->mb_per_s > 0))
			zone->mb_per_s = any_rate(v, z ? ends[z - 1] : 0, ends[z], n);
		prev = end;
	}
	r->nzones = zcount;
	curve_ends(r);
	rc = 0;
out:
	free(v);
	free(rates);
	free(excl);
	free(ends);
	free(bs);
	return rc;
}

/* The curve's count of samples from the budget and the pilot's cost per sample. */
static unsigned count_from_budget(const struct ctx *c, double cost_ns, uint64_t spent_ns)
{
	double left = (double)c->p.time_budget_ns - (double)spent_ns, n;
	uint64_t fit = (c->p.range_end_bytes - c->p.range_start_bytes) / c->p.sample_bytes;

	n = cost_ns > 0 ? left / (cost_ns * c->p.passes) : DG_BANDWIDTH_MAX_SAMPLES;
	if (!(n >= DG_BANDWIDTH_MIN_SAMPLES))
		n = DG_BANDWIDTH_MIN_SAMPLES;
	if (n > DG_BANDWIDTH_MAX_SAMPLES)
		n = DG_BANDWIDTH_MAX_SAMPLES;
	/* Never more samples than fit side by side in the range (a small or fast device). */
	if (n > (double)fit)
		n = (double)fit;
	return n < 2 ? 2 : (unsigned)n;
}

int dg_bandwidth_run(struct dg_engine *e, const struct dg_device_info *info,
		     const struct dg_bandwidth_params *p, struct dg_errors *errors,
		     volatile sig_atomic_t *stop, dg_progress_fn progress, void *progress_arg,
		     struct dg_bandwidth_result **out)
{
	struct ctx c = {0};
	struct dg_bandwidth_result *r = NULL;
	double *rates = NULL, *spreads = NULL, *stall_ms = NULL;
	unsigned *stalls = NULL;
	size_t *perm = NULL, cap = 0, n;
	uint64_t dev0, rng;
	char err[DG_ERRLEN];
	int rc;

	*out = NULL;
	rc = dg_bandwidth_params_check(p, info, &c.p, err, sizeof(err));
	if (rc)
		return rc;
	c.e = e;
	c.info = info;
	c.align = align_of(info);
	c.rb = timed_read_bytes(&c, c.p.sample_bytes);
	c.qd = p->qd < dg_engine_qd(e) ? p->qd : dg_engine_qd(e);
	c.errors = errors;
	c.stop = stop;
	c.progress = progress;
	c.progress_arg = progress_arg;
	c.phase = "bandwidth";
	c.t0_ns = dg_engine_now_ns(e);
	dev0 = dg_engine_device_time_ns(e);
	rng = c.p.seed;

	rc = -ENOMEM;
	r = calloc(1, sizeof(*r));
	c.maxreads = reads_for(&c, c.p.sample_bytes);
	c.ios = calloc(c.qd, sizeof(*c.ios));
	c.comps = calloc(c.qd, sizeof(*c.comps));
	c.done_ns = calloc(c.maxreads, sizeof(*c.done_ns));
	c.len = calloc(c.maxreads, sizeof(*c.len));
	c.order = calloc(c.maxreads, sizeof(*c.order));
	c.tpb = calloc(2 * c.maxreads, sizeof(*c.tpb));
	c.cum_b = calloc(c.maxreads + 1, sizeof(*c.cum_b));
	c.cum_t = calloc(c.maxreads + 1, sizeof(*c.cum_t));
	c.kb = calloc(c.maxreads, sizeof(*c.kb));
	c.kt = calloc(c.maxreads, sizeof(*c.kt));
	if (!r || !c.ios || !c.comps || !c.done_ns || !c.len || !c.order || !c.tpb || !c.cum_b ||
	    !c.cum_t || !c.kb || !c.kt)
		goto err;
	if (c.p.write && !dg_engine_is_virtual(e)) {
		c.wbuf = malloc(c.p.block_bytes);
		if (!c.wbuf)
			goto err;
		dg_bandwidth_write_pattern(c.wbuf, c.p.block_bytes, 0);
	}
	r->complete = true;
	if (info->size_bytes % c.align && c.p.range_end_bytes > info->size_bytes - c.align)
		dg_warnings_add(&r->notes,
				"the size (%" PRIu64 " bytes) is not a multiple of the %" PRIu32
				"-byte physical sector: the curve covers bytes %" PRIu64 ":%" PRIu64
				", the last %" PRIu64 " bytes are left out",
				info->size_bytes, c.align, c.p.range_start_bytes,
				c.p.range_end_bytes, info->size_bytes - c.p.range_end_bytes);

	/* How many samples: asked for, or what the budget buys at the pilot's cost. */
	n = c.p.samples;
	if (n == 0) {
		uint64_t pilot0 = dg_engine_device_time_ns(e);
		unsigned taken = 0;

		for (unsigned i = 0; i < PILOT_SAMPLES && !stopped(&c); i++) {
			struct meas m;

			rc = measure(&c,
				     sample_offset(&c, i * (PILOT_SAMPLES - 1) / 2, PILOT_SAMPLES),
				     c.p.sample_bytes, &m);
			if (rc)
				goto err;
			taken++;
		}
		if (taken == 0) {
			r->complete = false;
			n = 2;
		} else {
			uint64_t spent = dg_engine_device_time_ns(e) - pilot0;
			double need;

			n = count_from_budget(&c, (double)spent / taken, spent);
			/* The minimum count overrides a budget too small for it: said, not hidden.
			 */
			need = (double)spent + (double)spent / taken * c.p.passes * (double)n;
			if (need > 1.05 * (double)c.p.time_budget_ns)
				dg_warnings_add(
				    &r->notes,
				    "the time budget (%.1f s) cannot hold the minimum of %u "
				    "samples of %" PRIu64 " bytes (about %.0f ms each): the "
				    "curve takes about %.1f s; a smaller --sample-size or "
				    "--samples buys a shorter run",
				    (double)c.p.time_budget_ns / 1e9, (unsigned)n, c.p.sample_bytes,
				    (double)spent / taken / 1e6, need / 1e9);
		}
	}
	c.p.samples = (unsigned)n;
	r->params = c.p;

	rc = -ENOMEM;
	rates = malloc(n * c.p.passes * sizeof(*rates));
	spreads = calloc(n, sizeof(*spreads));
	stalls = calloc(n, sizeof(*stalls));
	stall_ms = calloc(n, sizeof(*stall_ms));
	perm = malloc(n * sizeof(*perm));
	if (!rates || !spreads || !stalls || !stall_ms || !perm)
		goto err;
	for (size_t i = 0; i < n * c.p.passes; i++)
		rates[i] = NAN;

	c.units_total = (double)n * c.p.passes;
	for (unsigned pass = 0; pass < c.p.passes && r->complete; pass++) {
		for (size_t i = 0; i < n; i++)
			perm[i] = i;
		shuffle(perm, n, &rng);
		for (size_t j = 0; j < n; j++) {
			size_t i = perm[j];
			struct meas m;

			if (stopped(&c)) {
				r->complete = false;
				break;
			}
			rc = measure(&c, sample_offset(&c, i, n), c.p.sample_bytes, &m);
			if (!rc && c.nomem)
				rc = -ENOMEM;
			if (rc)
				goto err;
			if (m.ok) {
				rates[i * c.p.passes + pass] = m.mb_per_s;
				stalls[i] += m.stalls;
				stall_ms[i] += m.stall_ms;
				if (c.p.passes == 1)
					spreads[i] = m.half_spread;
			}
			report(&c, 1);
		}
	}

	/* The curve: each sample's median over its passes; samples never measured are left out. */
	for (size_t i = 0; i < n; i++) {
		double v[MAX_PASSES];
		size_t k = 0;
		struct dg_bandwidth_sample s = {0};
		uint64_t off = sample_offset(&c, i, n);
		uint64_t pos = positioning_bytes(&c, c.p.sample_bytes);

		for (unsigned pass = 0; pass < c.p.passes; pass++) {
			double x = rates[i * c.p.passes + pass];
			if (x > 0)
				v[k++] = x;
		}
		if (k == 0)
			continue;
		s.offset_bytes = off + pos;
		s.length_bytes = c.p.sample_bytes - pos;
		s.mb_per_s = median_of(v, k);
		s.spread_mb_per_s = c.p.passes == 1 ? spreads[i] : v[k - 1] - v[0];
		s.stalls = stalls[i];
		s.stall_ms = stall_ms[i];
		rc = add_sample(r, &cap, &s);
		if (rc)
			goto err;
	}

	rc = find_zones(&c, r, &cap, r->nsamples);
	if (!rc && c.nomem)
		rc = -ENOMEM;
	if (rc)
		goto err;
	finish_written(&c, r);

	if (c.nstall_notes) {
		char spots[MAX_STALL_NOTES * 64 + 64] = "";
		size_t at = 0;

		for (unsigned j = 0; j < c.nstall_notes && at < sizeof(spots); j++)
			at += (size_t)snprintf(spots + at, sizeof(spots) - at,
					       "%s[%" PRIu64 ", %" PRIu64 ") +%.1f ms",
					       j ? ", " : "", c.stall_notes[j].lo,
					       c.stall_notes[j].hi, c.stall_notes[j].ms);
		if (c.stall_notes_more && at < sizeof(spots))
			snprintf(spots + at, sizeof(spots) - at, " and %u more",
				 c.stall_notes_more);
		dg_warnings_add(&r->notes,
				"%u slow spot%s: reads stalled for more than %.0f ms beyond their "
				"stream's pace (slow sectors or retries?) at bytes %s; the waits "
				"are left out of those samples' rates and listed per sample as "
				"stall_ms",
				c.nstall_notes + c.stall_notes_more,
				c.nstall_notes + c.stall_notes_more == 1 ? "" : "s", SLOW_SPOT_MS,
				spots);
	}
	if (c.hiccups)
		dg_warnings_add(
		    &r->notes,
		    "%u read%s came late from the host (a burst of completions made up "
		    "the wait after each): host hiccups, not the drive's, so not counted "
		    "as stalls; those samples are timed end to end",
		    c.hiccups, c.hiccups == 1 ? "" : "s");
	if (c.untrusted_samples)
		dg_warnings_add(
		    &r->notes,
		    "%u sample measurement%s dropped: too few timed units, a rate faster "
		    "than their reads' completion times allow (%.0f%% margin), or halves "
		    "%.0f%% or more apart; a larger --sample-size times more reads per "
		    "sample",
		    c.untrusted_samples, c.untrusted_samples == 1 ? " was" : "s were",
		    100.0 * (TRUST_FACTOR - 1.0), 100.0 * TRUST_SPREAD);
	if (c.untimed_samples)
		dg_warnings_add(&r->notes,
				"%u sample%s could not be timed (no read completed measurably "
				"after the positioning read) and %s left out",
				c.untimed_samples, c.untimed_samples == 1 ? "" : "s",
				c.untimed_samples == 1 ? "was" : "were");
	{
		size_t set_aside = 0;
		for (size_t i = 0; i < r->nsamples; i++)
			set_aside += r->samples[i].excluded && !r->samples[i].refine;
		if (set_aside > 2 * (r->nzones > 0 ? r->nzones - 1 : 0) + 2)
			dg_warnings_add(&r->notes,
					"%zu of %zu curve samples were set aside as outliers or "
					"boundary straddlers; the curve may be noisy",
					set_aside, r->nsamples - r->refine_samples);
	}
	if (c.failing) {
		dg_warnings_add(&r->notes,
				"the reads of %u samples in a row failed: the curve stopped there, "
				"the rest would fail too",
				MAX_FAILED_SAMPLES_IN_A_ROW);
		r->complete = !(stop && *stop); /* ended, not interrupted */
	}
	r->device_time_ns = dg_engine_device_time_ns(e) - dev0;
	rc = 0;
	*out = r;
	r = NULL;
err:
	dg_bandwidth_result_free(r);
	free(rates);
	free(spreads);
	free(stalls);
	free(stall_ms);
	free(perm);
	free(c.ios);
	free(c.comps);
	free(c.done_ns);
	free(c.len);
	free(c.order);
	free(c.tpb);
	free(c.cum_b);
	free(c.cum_t);
	free(c.kb);
	free(c.kt);
	free(c.wbuf);
	free(c.written);
	return rc;
}

/* ---- output ---- */

json_t *dg_bandwidth_params_json(const struct dg_bandwidth_params *p)
{
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(
	    o, "samples", p->samples ? json_integer((json_int_t)p->samples) : json_string("auto"));
	rc |= json_object_set_new(o, "sample_bytes",
				  p->sample_bytes ? json_integer((json_int_t)p->sample_bytes)
						  : json_string("auto"));
	rc |= json_object_set_new(o, "range_start_bytes",
				  json_integer((json_int_t)p->range_start_bytes));
	rc |= json_object_set_new(o, "range_end_bytes",
				  p->range_end_bytes != UINT64_MAX
				      ? json_integer((json_int_t)p->range_end_bytes)
				      : json_string("end"));
	rc |= json_object_set_new(o, "passes", json_integer(p->passes));
	rc |= json_object_set_new(o, "time_budget_s", json_real((double)p->time_budget_ns / 1e9));
	rc |= json_object_set_new(o, "qd", json_integer(p->qd));
	rc |= json_object_set_new(o, "block_bytes", json_integer(p->block_bytes));
	rc |= json_object_set_new(o, "seed", json_integer((json_int_t)p->seed));
	rc |= json_object_set_new(o, "refine", json_boolean(p->refine));
	rc |= json_object_set_new(o, "write", json_boolean(p->write));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Rounds to 1e-3: rates are good to far less, and the JSON stays readable. */
static json_t *rate(double x)
{
	return json_real(round(x * 1000.0) / 1000.0);
}

double dg_bandwidth_read_time_s(const struct dg_bandwidth_result *r)
{
	double s = 0;

	if (!r->nzones)
		return NAN;
	for (size_t i = 0; i < r->nzones; i++)
		s += (double)(r->zones[i].end_bytes - r->zones[i].start_bytes) /
		     (r->zones[i].mb_per_s * DG_MB);
	return s;
}

json_t *dg_bandwidth_json(const struct dg_bandwidth_result *r)
{
	json_t *o = json_object(), *samples = json_array(), *zones = json_array();

	if (!o || !samples || !zones)
		goto err;
	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &r->samples[i];
		/* stalls, stall_ms: a slow spot inside the sample, its wait kept out of mb_per_s */
		json_t *j = json_pack("{s:I,s:I,s:o,s:o,s:I,s:o}", "offset_bytes",
				      (json_int_t)s->offset_bytes, "length_bytes",
				      (json_int_t)s->length_bytes, "mb_per_s", rate(s->mb_per_s),
				      "spread_mb_per_s", rate(s->spread_mb_per_s), "stalls",
				      (json_int_t)s->stalls, "stall_ms", rate(s->stall_ms));
		if (j && r->params.write && json_object_set_new(j, "op", json_string("write"))) {
			json_decref(j);
			j = NULL;
		}
		if (!j || json_array_append_new(samples, j))
			goto err;
	}
	for (size_t i = 0; i < r->nzones; i++) {
		const struct dg_bandwidth_zone *z = &r->zones[i];
		json_t *j =
		    json_pack("{s:I,s:I,s:o}", "start_bytes", (json_int_t)z->start_bytes,
			      "end_bytes", (json_int_t)z->end_bytes, "mb_per_s", rate(z->mb_per_s));
		if (!j || json_array_append_new(zones, j))
			goto err;
	}
	if (json_object_set_new(o, "samples", samples) || json_object_set_new(o, "zones", zones)) {
		samples = zones = NULL;
		goto err;
	}
	samples = zones = NULL;
	if (json_object_set_new(o, "mode", json_string(r->params.write ? "write" : "read")))
		goto err;
	if (r->params.write) {
		json_t *w = json_array();

		for (size_t i = 0; w && i < r->nwritten; i++) {
			json_t *j = json_pack(
			    "{s:I,s:I}", "offset_bytes", (json_int_t)r->written[i].offset_bytes,
			    "length_bytes", (json_int_t)r->written[i].length_bytes);
			if (!j || json_array_append_new(w, j)) {
				json_decref(w);
				w = NULL;
			}
		}
		if (!w || json_object_set_new(o, "written", w) ||
		    json_object_set_new(o, "written_bytes",
					json_integer((json_int_t)r->written_bytes)))
			goto err;
	}
	if (r->nzones > 0) {
		json_object_set_new(o, "outer_mb_per_s", rate(r->outer_mb_per_s));
		json_object_set_new(o, "inner_mb_per_s", rate(r->inner_mb_per_s));
		json_object_set_new(o, "noise_percent", json_real(round(r->noise * 1e5) / 1e3));
		json_object_set_new(o, r->params.write ? "write_time_s" : "read_time_s",
				    rate(dg_bandwidth_read_time_s(r)));
	}
	json_object_set_new(o, "device_time_s", json_real(round(r->device_time_ns / 1e6) / 1e3));
	if (r->flat_reason[0])
		json_object_set_new(o, "flat_reason", json_string(r->flat_reason));
	return o;
err:
	json_decref(samples);
	json_decref(zones);
	json_decref(o);
	return NULL;
}

int dg_bandwidth_csv(FILE *f, void *result)
{
	const struct dg_bandwidth_result *r = result;

	fprintf(f, "offset_bytes,length_bytes,mb_per_s,spread_mb_per_s%s\n",
		r->params.write ? ",op" : "");
	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &r->samples[i];
		fprintf(f, "%" PRIu64 ",%" PRIu64 ",%.3f,%.3f%s\n", s->offset_bytes,
			s->length_bytes, s->mb_per_s, s->spread_mb_per_s,
			r->params.write ? ",write" : "");
	}
	return ferror(f) ? -EIO : 0;
}

int dg_bandwidth_zones_csv(FILE *f, void *result)
{
	const struct dg_bandwidth_result *r = result;

	fprintf(f, "start_bytes,end_bytes,mb_per_s\n");
	for (size_t i = 0; i < r->nzones; i++) {
		const struct dg_bandwidth_zone *z = &r->zones[i];
		fprintf(f, "%" PRIu64 ",%" PRIu64 ",%.3f\n", z->start_bytes, z->end_bytes,
			z->mb_per_s);
	}
	return ferror(f) ? -EIO : 0;
}
