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

#include "bandwidth_priv.h"

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
uint32_t bw_align_of(const struct dg_device_info *info)
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
	uint32_t a = bw_align_of(info);
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
void bw_pattern_stamp(unsigned char *buf, size_t len, uint64_t offset_bytes)
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
	bw_pattern_stamp(b, len, offset_bytes);
}

/* ---- the result ---- */

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

/* A sample's jitter from (seed, index), whatever the order the samples are taken in. */
static uint64_t mix(uint64_t x)
{
	return dg_splitmix64(&x);
}

/*
 * Offset of curve sample i of n: spread evenly, the first at the range's start and the last
 * ending at its end, the others moved by a seeded random amount within their share of the gap.
 * The jitter matters: evenly spaced samples alias with the track and band structure (a sample
 * spans a fractional number of tracks, and the fraction drifts slowly along the curve), which
 * shows as smooth waves of a few 0.1% that a change-point method would take for steps; random
 * phases turn them into noise that the noise estimate sees.
 */
uint64_t bw_sample_offset(const struct ctx *c, size_t i, size_t n)
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

/* Notes that [off, off + len) was written: extends the last range when they touch. */
void bw_note_written(struct ctx *c, uint64_t off, uint64_t len)
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
void bw_finish_written(struct ctx *c, struct dg_bandwidth_result *r)
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

/* The run's scratch: the sample buffers (bw_reads_for the sample size) and the write pattern. */
static int ctx_alloc(struct ctx *c)
{
	/* refining samples may be up to REFINE_MAX_SPAN x the curve's (bandwidth_zones.c) */
	c->maxreads = bw_reads_for(c, c->p.sample_bytes * (c->p.refine ? REFINE_MAX_SPAN : 1));
	c->ios = calloc(c->qd, sizeof(*c->ios));
	c->comps = calloc(c->qd, sizeof(*c->comps));
	c->done_ns = calloc(c->maxreads, sizeof(*c->done_ns));
	c->len = calloc(c->maxreads, sizeof(*c->len));
	c->order = calloc(c->maxreads, sizeof(*c->order));
	c->tpb = calloc(2 * c->maxreads, sizeof(*c->tpb));
	c->cum_b = calloc(c->maxreads + 1, sizeof(*c->cum_b));
	c->cum_t = calloc(c->maxreads + 1, sizeof(*c->cum_t));
	c->kb = calloc(c->maxreads, sizeof(*c->kb));
	c->kt = calloc(c->maxreads, sizeof(*c->kt));
	if (!c->ios || !c->comps || !c->done_ns || !c->len || !c->order || !c->tpb || !c->cum_b ||
	    !c->cum_t || !c->kb || !c->kt)
		return -ENOMEM;
	if (c->p.write && !dg_engine_is_virtual(c->e)) {
		c->wbuf = malloc(c->p.block_bytes);
		if (!c->wbuf)
			return -ENOMEM;
		dg_bandwidth_write_pattern(c->wbuf, c->p.block_bytes, 0);
	}
	return 0;
}

static void ctx_free(struct ctx *c)
{
	free(c->ios);
	free(c->comps);
	free(c->done_ns);
	free(c->len);
	free(c->order);
	free(c->tpb);
	free(c->cum_b);
	free(c->cum_t);
	free(c->kb);
	free(c->kt);
	free(c->wbuf);
	free(c->written);
}

/* How many curve samples: asked for, or what the budget buys at the pilot's cost (*n). */
static int pilot_count(struct ctx *c, struct dg_bandwidth_result *r, size_t *n)
{
	uint64_t pilot0 = dg_engine_device_time_ns(c->e), spent;
	unsigned taken = 0;
	double need;

	*n = c->p.samples;
	if (*n > 0)
		return 0;
	for (unsigned i = 0; i < PILOT_SAMPLES && !bw_stopped(c); i++) {
		struct meas m;
		int rc =
		    bw_measure(c, bw_sample_offset(c, i * (PILOT_SAMPLES - 1) / 2, PILOT_SAMPLES),
			       c->p.sample_bytes, &m);

		if (rc)
			return rc;
		taken++;
	}
	if (taken == 0) {
		r->complete = false;
		*n = 2;
		return 0;
	}
	spent = dg_engine_device_time_ns(c->e) - pilot0;
	*n = count_from_budget(c, (double)spent / taken, spent);
	/* The minimum count overrides a budget too small for it: said, not hidden. */
	need = (double)spent + (double)spent / taken * c->p.passes * (double)*n;
	if (need > 1.05 * (double)c->p.time_budget_ns &&
	    dg_warnings_add(&r->notes,
			    "the time budget (%.1f s) cannot hold the minimum of %u "
			    "samples of %" PRIu64 " bytes (about %.0f ms each): the "
			    "curve takes about %.1f s; a smaller --sample-size or "
			    "--samples buys a shorter run",
			    (double)c->p.time_budget_ns / 1e9, (unsigned)*n, c->p.sample_bytes,
			    (double)spent / taken / 1e6, need / 1e9))
		return -ENOMEM;
	return 0;
}

static void passes_free(struct passes *ps)
{
	free(ps->rates);
	free(ps->spreads);
	free(ps->stall_ms);
	free(ps->waited);
	free(ps->stalls);
	free(ps->perm);
}

/* Measures the n curve samples p.passes times, each pass in a fresh shuffled order. */
static int measure_passes(struct ctx *c, struct dg_bandwidth_result *r, size_t n, struct passes *ps)
{
	uint64_t rng = c->p.seed;

	ps->rates = malloc(n * c->p.passes * sizeof(*ps->rates));
	ps->spreads = calloc(n, sizeof(*ps->spreads));
	ps->stalls = calloc(n, sizeof(*ps->stalls));
	ps->stall_ms = calloc(n, sizeof(*ps->stall_ms));
	ps->waited = calloc(n * c->p.passes, sizeof(*ps->waited));
	ps->perm = malloc(n * sizeof(*ps->perm));
	if (!ps->rates || !ps->spreads || !ps->stalls || !ps->stall_ms || !ps->waited || !ps->perm)
		return -ENOMEM;
	for (size_t i = 0; i < n * c->p.passes; i++)
		ps->rates[i] = NAN;
	c->units_total = (double)n * c->p.passes;
	for (unsigned pass = 0; pass < c->p.passes && r->complete; pass++) {
		for (size_t i = 0; i < n; i++)
			ps->perm[i] = i;
		shuffle(ps->perm, n, &rng);
		for (size_t j = 0; j < n; j++) {
			size_t i = ps->perm[j];
			struct meas m;
			int rc;

			if (bw_stopped(c)) {
				r->complete = false;
				break;
			}
			rc = bw_measure(c, bw_sample_offset(c, i, n), c->p.sample_bytes, &m);
			if (!rc && c->nomem)
				rc = -ENOMEM;
			if (rc)
				return rc;
			if (m.ok) {
				ps->rates[i * c->p.passes + pass] = m.mb_per_s;
				ps->waited[i * c->p.passes + pass] = m.waited_mb_per_s;
				ps->stalls[i] += m.stalls;
				ps->stall_ms[i] += m.stall_ms;
				if (c->p.passes == 1)
					ps->spreads[i] = m.half_spread;
			}
			bw_report(c, 1);
		}
	}
	return 0;
}

/* The curve: each sample's median over its passes; samples never measured are left out. */
static int curve_samples(const struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, size_t n,
			 const struct passes *ps)
{
	for (size_t i = 0; i < n; i++) {
		double v[MAX_PASSES], w[MAX_PASSES];
		size_t k = 0;
		bool waited = false;
		struct dg_bandwidth_sample s = {0};
		uint64_t off = bw_sample_offset(c, i, n);
		uint64_t pos = bw_positioning_bytes(c, c->p.sample_bytes);
		int rc;

		for (unsigned pass = 0; pass < c->p.passes; pass++) {
			double x = ps->rates[i * c->p.passes + pass];
			double y = ps->waited[i * c->p.passes + pass];

			if (x > 0) {
				waited |= y > 0;
				w[k] = y > 0 ? y : x;
				v[k++] = x;
			}
		}
		if (k == 0)
			continue;
		s.offset_bytes = off + pos;
		s.length_bytes = c->p.sample_bytes - pos;
		s.mb_per_s = dg_median(v, k);
		s.mb_per_s_waited = waited ? dg_median(w, k) : 0;
		s.spread_mb_per_s = c->p.passes == 1 ? ps->spreads[i] : v[k - 1] - v[0];
		s.stalls = ps->stalls[i];
		s.stall_ms = ps->stall_ms[i];
		rc = bw_add_sample(r, cap, &s);
		if (rc)
			return rc;
	}
	return 0;
}

/* The slow spots' warning: the first MAX_STALL_NOTES places, the count of the rest. */
static int note_slow_spots(const struct ctx *c, struct dg_bandwidth_result *r)
{
	char spots[MAX_STALL_NOTES * 64 + 64] = "";
	size_t at = 0;

	if (!c->nstall_notes)
		return 0;
	for (unsigned j = 0; j < c->nstall_notes && at < sizeof(spots); j++)
		at += (size_t)snprintf(spots + at, sizeof(spots) - at,
				       "%s[%" PRIu64 ", %" PRIu64 ") +%.1f ms", j ? ", " : "",
				       c->stall_notes[j].lo, c->stall_notes[j].hi,
				       c->stall_notes[j].ms);
	if (c->stall_notes_more && at < sizeof(spots))
		snprintf(spots + at, sizeof(spots) - at, " and %u more", c->stall_notes_more);
	return dg_warnings_add(&r->notes,
			       "%u slow spot%s: reads stalled for more than %.0f ms beyond their "
			       "stream's pace (slow sectors or retries?) at bytes %s; the waits "
			       "are left out of those samples' rates and listed per sample as "
			       "stall_ms",
			       c->nstall_notes + c->stall_notes_more,
			       c->nstall_notes + c->stall_notes_more == 1 ? "" : "s", SLOW_SPOT_MS,
			       spots);
}

/* The run's other notes: host hiccups, dropped, untimed and set-aside samples, failing reads.
 * 0 or -ENOMEM. */
static int add_notes(const struct ctx *c, struct dg_bandwidth_result *r)
{
	size_t set_aside = 0;
	int rc = note_slow_spots(c, r);

	if (c->hiccups)
		rc |= dg_warnings_add(
		    &r->notes,
		    "%u read%s came late from the host (a burst of completions made up "
		    "the wait after each): host hiccups, not the drive's, so not counted "
		    "as stalls; those samples are timed end to end",
		    c->hiccups, c->hiccups == 1 ? "" : "s");
	if (c->passing_stalls)
		rc |= dg_warnings_add(
		    &r->notes,
		    "%u stall%s of more than %.0f ms did not come back when the sample was "
		    "re-measured (the drive was busy with its own work, or the host was late): "
		    "passing, not a slow place on the medium; the re-measure counts",
		    c->passing_stalls, c->passing_stalls == 1 ? "" : "s", SLOW_SPOT_MS);
	if (c->uneven_samples)
		rc |=
		    dg_warnings_add(&r->notes,
				    "%u sample%s whose halves disagreed by %.0f%% or more with no "
				    "stall (a passing disturbance) %s re-measured; the re-measure "
				    "counts",
				    c->uneven_samples, c->uneven_samples == 1 ? "" : "s",
				    100.0 * UNEVEN, c->uneven_samples == 1 ? "was" : "were");
	if (c->untrusted_samples)
		rc |= dg_warnings_add(
		    &r->notes,
		    "%u sample measurement%s dropped: too few timed units, a rate faster "
		    "than their reads' completion times allow (%.0f%% margin), or halves "
		    "%.0f%% or more apart; a larger --sample-size times more reads per "
		    "sample",
		    c->untrusted_samples, c->untrusted_samples == 1 ? " was" : "s were",
		    100.0 * (TRUST_FACTOR - 1.0), 100.0 * TRUST_SPREAD);
	if (c->cache_served)
		rc |= dg_warnings_add(
		    &r->notes,
		    "%u sample%s over bytes read shortly before came from the drive's cache "
		    "(reads far faster than the medium's pace): measured again after %u reads "
		    "elsewhere pushed %s out of every cache segment",
		    c->cache_served, c->cache_served == 1 ? "" : "s", CACHE_SEGMENTS_MAX,
		    c->cache_served == 1 ? "it" : "them");
	if (c->untimed_samples)
		rc |=
		    dg_warnings_add(&r->notes,
				    "%u sample%s could not be timed (no read completed measurably "
				    "after the positioning read) and %s left out",
				    c->untimed_samples, c->untimed_samples == 1 ? "" : "s",
				    c->untimed_samples == 1 ? "was" : "were");
	for (size_t i = 0; i < r->nsamples; i++)
		set_aside += r->samples[i].excluded && !r->samples[i].refine;
	if (set_aside > 2 * (r->nzones > 0 ? r->nzones - 1 : 0) + 2)
		rc |= dg_warnings_add(&r->notes,
				      "%zu of %zu curve samples were set aside as outliers or "
				      "boundary straddlers; the curve may be noisy",
				      set_aside, r->nsamples - r->refine_samples);
	if (c->failing) {
		rc |= dg_warnings_add(&r->notes,
				      "the reads of %u samples in a row failed: the curve stopped "
				      "there, the rest would fail too",
				      MAX_FAILED_SAMPLES_IN_A_ROW);
		r->complete = !(c->stop && *c->stop); /* ended, not interrupted */
	}
	return rc ? -ENOMEM : 0;
}

int dg_bandwidth_run(struct dg_engine *e, const struct dg_device_info *info,
		     const struct dg_bandwidth_params *p, struct dg_errors *errors,
		     volatile sig_atomic_t *stop, dg_progress_fn progress, void *progress_arg,
		     struct dg_bandwidth_result **out)
{
	struct ctx c = {0};
	struct passes ps = {0};
	struct dg_bandwidth_result *r = NULL;
	size_t cap = 0, n;
	unsigned curve_spots = 0;
	char err[DG_ERRLEN];
	int rc;

	*out = NULL;
	rc = dg_bandwidth_params_check(p, info, &c.p, err, sizeof(err));
	if (rc)
		return rc;
	c.e = e;
	c.info = info;
	c.align = bw_align_of(info);
	c.rb = bw_timed_read_bytes(&c, c.p.sample_bytes);
	c.qd = p->qd < dg_engine_qd(e) ? p->qd : dg_engine_qd(e);
	c.errors = errors;
	c.stop = stop;
	c.progress = progress;
	c.progress_arg = progress_arg;
	c.phase = "bandwidth";
	c.t0_ns = dg_engine_now_ns(e);
	c.dev0_ns = dg_engine_device_time_ns(e);

	r = calloc(1, sizeof(*r));
	rc = r ? ctx_alloc(&c) : -ENOMEM;
	if (rc)
		goto err;
	r->complete = true;
	if (info->size_bytes % c.align && c.p.range_end_bytes > info->size_bytes - c.align &&
	    dg_warnings_add(&r->notes,
			    "the size (%" PRIu64 " bytes) is not a multiple of the %" PRIu32
			    "-byte physical sector: the curve covers bytes %" PRIu64 ":%" PRIu64
			    ", the last %" PRIu64 " bytes are left out",
			    info->size_bytes, c.align, c.p.range_start_bytes, c.p.range_end_bytes,
			    info->size_bytes - c.p.range_end_bytes)) {
		rc = -ENOMEM;
		goto err;
	}
	rc = pilot_count(&c, r, &n);
	if (rc)
		goto err;
	c.p.samples = (unsigned)n;
	r->params = c.p;
	rc = measure_passes(&c, r, n, &ps);
	if (!rc && r->complete)
		rc = bw_confirm_slow_spots(&c, n, &ps);
	if (!rc && r->complete)
		rc = bw_remeasure_uneven(&c, n, &ps);
	if (!rc)
		rc = curve_samples(&c, r, &cap, n, &ps);
	curve_spots = c.nstall_notes;
	if (!rc)
		rc = bw_find_zones(&c, r, &cap, r->nsamples);
	if (!rc && r->complete)
		rc = bw_confirm_refine_spots(&c, r, curve_spots);
	if (!rc && c.nomem)
		rc = -ENOMEM;
	if (rc)
		goto err;
	bw_finish_written(&c, r);
	rc = add_notes(&c, r);
	if (rc)
		goto err;
	r->device_time_ns = dg_engine_device_time_ns(e) - c.dev0_ns;
	*out = r;
	r = NULL;
err:
	dg_bandwidth_result_free(r);
	passes_free(&ps);
	ctx_free(&c);
	return rc;
}
