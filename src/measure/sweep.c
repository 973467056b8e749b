/* SPDX-License-Identifier: MIT */
/*
 * Workload sweeps (include/diskgeo/sweep.h has the method). Measurement through engine.h only.
 *
 * Latency percentiles come from the bounded log-linear histogram of src/histogram.c (within
 * 1/128 of the exact value, memory flat in the cell's length), as `diskgeo read`'s do.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/histogram.h"
#include "diskgeo/sweep.h"

#define CELL_GAP_BYTES (16ull << 20) /* between sequential cells: beyond any read-ahead */

static const char *const kind_names[] = {"seq", "rand"};
static const char *const where_names[] = {"outer", "inner", "full", "first10"};

const char *dg_sweep_kind_name(enum dg_sweep_kind k)
{
	return kind_names[k];
}

const char *dg_sweep_where_name(enum dg_sweep_where w)
{
	return where_names[w];
}

void dg_sweep_params_default(struct dg_sweep_params *p, const struct dg_device_info *info)
{
	static const unsigned qds[] = {1, 2, 4, 8, 16, 32};
	uint32_t lsec = info && info->logical_sector_bytes ? info->logical_sector_bytes : 512;

	memset(p, 0, sizeof(*p));
	for (uint32_t b = 4096; b <= (16u << 20); b *= 4)
		if (b % lsec == 0)
			p->seq_blocks[p->nseq_blocks++] = b;
	if (lsec < 4096)
		p->rand_blocks[p->nrand_blocks++] = lsec;
	for (uint32_t b = 4096; b <= (1u << 20); b *= 4)
		p->rand_blocks[p->nrand_blocks++] = b;
	for (size_t i = 0; i < sizeof(qds) / sizeof(qds[0]); i++)
		p->qds[p->nqds++] = qds[i];
	p->range_end_bytes = UINT64_MAX;
	p->time_budget_ns = DG_SWEEP_DEFAULT_BUDGET_NS;
	p->seq_bytes = DG_SWEEP_DEFAULT_SEQ_BYTES;
	p->rand_ios = DG_SWEEP_DEFAULT_RAND_IOS;
	p->rmw_ios = DG_SWEEP_DEFAULT_RMW_IOS;
	p->seed = 1;
}

static int check_blocks(const uint32_t *b, unsigned n, const char *what, uint32_t lsec, char *err,
			size_t errlen)
{
	for (unsigned i = 0; i < n; i++) {
		if (b[i] == 0 || b[i] > DG_SWEEP_MAX_BLOCK_BYTES) {
			snprintf(err, errlen, "%s block size %" PRIu32 " is out of 1..%u bytes",
				 what, b[i], DG_SWEEP_MAX_BLOCK_BYTES);
			return -EINVAL;
		}
		if (b[i] % lsec) {
			snprintf(err, errlen,
				 "%s block size %" PRIu32
				 " bytes is not a multiple of the logical sector (%" PRIu32
				 " bytes)",
				 what, b[i], lsec);
			return -EINVAL;
		}
	}
	return 0;
}

static uint32_t max_block(const uint32_t *b, unsigned n)
{
	uint32_t m = 0;

	for (unsigned i = 0; i < n; i++)
		m = b[i] > m ? b[i] : m;
	return m;
}

int dg_sweep_params_check(const struct dg_sweep_params *p, const struct dg_device_info *info,
			  struct dg_sweep_params *resolved, char *err, size_t errlen)
{
	struct dg_sweep_params r = *p;
	uint32_t lsec = info->logical_sector_bytes ? info->logical_sector_bytes : 512;
	int rc;

	if (r.nseq_blocks > DG_SWEEP_MAX_SIZES || r.nrand_blocks > DG_SWEEP_MAX_SIZES ||
	    r.nqds > DG_SWEEP_MAX_QDS) {
		snprintf(err, errlen, "at most %u block sizes and %u queue depths",
			 DG_SWEEP_MAX_SIZES, DG_SWEEP_MAX_QDS);
		return -EINVAL;
	}
	if ((rc = check_blocks(r.seq_blocks, r.nseq_blocks, "sequential", lsec, err, errlen)) ||
	    (rc = check_blocks(r.rand_blocks, r.nrand_blocks, "random", lsec, err, errlen)))
		return rc;
	if (r.nqds == 0 && (r.nseq_blocks || r.nrand_blocks)) {
		snprintf(err, errlen, "no queue depth to sweep");
		return -EINVAL;
	}
	for (unsigned i = 0; i < r.nqds; i++) {
		if (r.qds[i] == 0 || r.qds[i] > DG_SWEEP_MAX_QD) {
			snprintf(err, errlen, "queue depth %u is out of 1..%u", r.qds[i],
				 DG_SWEEP_MAX_QD);
			return -EINVAL;
		}
	}
	if (r.write && r.range_start_bytes == 0 && r.range_end_bytes == UINT64_MAX) {
		snprintf(err, errlen,
			 "a write sweep needs a scratch range named with --range START:END");
		return -EINVAL;
	}
	if (r.range_end_bytes == UINT64_MAX)
		r.range_end_bytes = info->size_bytes - info->size_bytes % lsec;
	if (r.range_start_bytes % lsec || r.range_end_bytes % lsec) {
		snprintf(err, errlen, "the range is not on logical sectors (%" PRIu32 " bytes)",
			 lsec);
		return -EINVAL;
	}
	if (r.range_end_bytes > info->size_bytes || r.range_start_bytes >= r.range_end_bytes) {
		snprintf(err, errlen,
			 "the range [%" PRIu64 ", %" PRIu64 ") is empty, reversed or outside the "
			 "device (%" PRIu64 " bytes)",
			 r.range_start_bytes, r.range_end_bytes, info->size_bytes);
		return -EINVAL;
	}
	uint64_t span = r.range_end_bytes - r.range_start_bytes;
	uint32_t big = max_block(r.seq_blocks, r.nseq_blocks);
	uint32_t rbig = max_block(r.rand_blocks, r.nrand_blocks);
	if (rbig > big)
		big = rbig;
	if (span < 2ull * big || span / 10 < rbig) {
		snprintf(err, errlen,
			 "the range (%" PRIu64 " bytes) is smaller than the largest block allows "
			 "(twice %" PRIu32 " bytes, and its first 10%% at least %" PRIu32 " bytes)",
			 span, big, rbig);
		return -EINVAL;
	}
	if (r.time_budget_ns == 0) {
		snprintf(err, errlen, "the time budget is 0");
		return -EINVAL;
	}
	if (r.seq_bytes == 0)
		r.seq_bytes = DG_SWEEP_DEFAULT_SEQ_BYTES;
	if (r.rand_ios == 0)
		r.rand_ios = DG_SWEEP_DEFAULT_RAND_IOS;
	*resolved = r;
	return 0;
}

/* ---- small helpers ---- */

struct run {
	const struct dg_device_info *info;
	const struct dg_sweep_params *p;
	struct dg_sweep_result *r;
	dg_sweep_open_fn open_engine;
	void *open_arg;
	struct dg_engine *e;
	uint32_t e_block; /* the engine's max I/O */
	unsigned e_qd;
	uint64_t dev_ns_closed; /* device time of engines already closed */
	struct dg_errors *errors;
	volatile sig_atomic_t *stop;
	uint64_t rng;
	struct dg_histogram *lat;   /* the current cell's latencies, ns */
	struct dg_sweep_cell *cell; /* the cell being measured (its error count) */
	struct dg_completion comp[DG_SWEEP_MAX_QD];
	struct dg_io ios[DG_SWEEP_MAX_QD];
};

static uint64_t dev_ns(const struct run *u)
{
	return u->dev_ns_closed + (u->e ? dg_engine_device_time_ns(u->e) : 0);
}

static void close_engine(struct run *u)
{
	if (u->e) {
		u->dev_ns_closed += dg_engine_device_time_ns(u->e);
		dg_engine_close(u->e);
		u->e = NULL;
	}
}

/* An engine for `qd` I/Os of `block` bytes, reusing the open one when it fits. */
static int want_engine(struct run *u, unsigned qd, uint32_t block)
{
	unsigned want_qd = 1;
	int rc;

	if (u->e && u->e_block == block && u->e_qd >= qd)
		return 0;
	close_engine(u);
	/* deepest this block may go: the whole list, capped by the in-flight limit */
	for (unsigned i = 0; i < u->p->nqds; i++)
		if (u->p->qds[i] > want_qd &&
		    (uint64_t)u->p->qds[i] * block <= DG_SWEEP_MAX_INFLIGHT_BYTES)
			want_qd = u->p->qds[i];
	if (want_qd < qd)
		want_qd = qd;
	/* engines take whole pages */
	rc = u->open_engine(u->open_arg, want_qd, (block + 4095u) / 4096u * 4096u, &u->e);
	if (rc)
		return rc;
	u->e_block = block;
	u->e_qd = dg_engine_qd(u->e);
	return 0;
}

/* Reaps at least `min`; records errors. Returns the count or -errno. */
static int reap(struct run *u, unsigned min)
{
	struct dg_sweep_cell *cell = u->cell;
	int n;

	do
		n = dg_engine_reap(u->e, u->comp, min, DG_SWEEP_MAX_QD);
	while (n == -EINTR && !*u->stop);
	if (n == -EINTR)
		return 0; /* stopping: the caller stops submitting and reaps what is in flight */
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		const struct dg_completion *c = &u->comp[i];
		if (cell && (c->result < 0 || (uint64_t)c->result < c->length_bytes))
			cell->errors++;
		if (c->result < 0)
			dg_errors_add(u->errors, c->offset_bytes, c->length_bytes, (int)-c->result);
		else if ((uint64_t)c->result < c->length_bytes)
			dg_errors_add(u->errors, c->offset_bytes + (uint64_t)c->result,
				      c->length_bytes - (uint64_t)c->result, EIO);
		if (c->op == DG_IO_WRITE && c->result > 0)
			u->r->written_bytes += (uint64_t)c->result;
	}
	return n;
}

static int drain(struct run *u)
{
	while (dg_engine_inflight(u->e)) {
		int n = reap(u, 1);
		if (n < 0)
			return n;
	}
	return 0;
}

static int submit1(struct run *u, uint64_t off, uint32_t len, bool write, uint64_t tag)
{
	struct dg_io io = {.offset_bytes = off,
			   .length_bytes = len,
			   .op = write ? DG_IO_WRITE : DG_IO_READ,
			   .tag = tag};
	int rc = dg_engine_submit(u->e, &io, 1);

	return rc == 1 ? 0 : rc < 0 ? rc : -EAGAIN;
}

static void lat_reset(struct run *u)
{
	dg_histogram_reset(u->lat);
}

static void cell_finish_lat(struct run *u, struct dg_sweep_cell *c)
{
	bool any = dg_histogram_count(u->lat) > 0;

	c->mean_ms = any ? dg_histogram_mean(u->lat) / 1e6 : NAN;
	c->p50_ms = any ? (double)dg_histogram_percentile(u->lat, 50) / 1e6 : NAN;
	c->p99_ms = any ? (double)dg_histogram_percentile(u->lat, 99) / 1e6 : NAN;
}

/* Sequential cell at [start, start + n*b): positioning I/O alone, then the timed stream. */
static int seq_cell(struct run *u, struct dg_sweep_cell *c, uint64_t share_ns)
{
	uint32_t b = c->block_bytes;
	uint64_t nblocks = c->span_bytes / b - 1, submitted = 0, done = 0, bytes = 0;
	uint64_t t0, t_last = 0, min_blocks = (1u << 20) / b > 8 ? (1u << 20) / b : 8;
	int rc, n;

	if (min_blocks > nblocks)
		min_blocks = nblocks;
	lat_reset(u);
	/* the positioning I/O is a read in both modes: nothing outside the timed bytes changes */
	if ((rc = submit1(u, c->start_bytes, b, false, 0)) || (rc = drain(u)))
		return rc;
	t0 = dg_engine_now_ns(u->e);
	uint64_t off = c->start_bytes + b;
	uint64_t dt0 = dg_engine_device_time_ns(u->e);
	while (done < submitted || submitted == 0) {
		bool more =
		    submitted < nblocks && !*u->stop &&
		    (submitted < min_blocks || dg_engine_device_time_ns(u->e) - dt0 < share_ns);
		while (more && dg_engine_inflight(u->e) < c->qd) {
			if ((rc = submit1(u, off, b, c->write, off)))
				return rc;
			off += b;
			submitted++;
			more = submitted < nblocks;
		}
		if (!dg_engine_inflight(u->e))
			break;
		if ((n = reap(u, 1)) < 0)
			return n;
		for (int i = 0; i < n; i++) {
			const struct dg_completion *k = &u->comp[i];
			done++;
			if (k->result > 0)
				bytes += (uint64_t)k->result;
			if (k->complete_ns > t_last)
				t_last = k->complete_ns;
			dg_histogram_add(u->lat, k->complete_ns - k->submit_ns);
		}
	}
	c->device_time_ns = dg_engine_device_time_ns(u->e) - dt0;
	if (done == 0 || t_last <= t0)
		return 0;
	c->measured = true;
	c->ios = (unsigned)done;
	c->mb_per_s = (double)bytes / ((double)(t_last - t0) / 1e9) / DG_MB;
	c->iops = (double)done / ((double)(t_last - t0) / 1e9);
	cell_finish_lat(u, c);
	return 0;
}

static uint64_t rand_offset(struct run *u, uint64_t start, uint64_t span, uint32_t b)
{
	uint64_t slots = span / b;

	return start + dg_splitmix64(&u->rng) % slots * b;
}

/* Random cell: closed loop, qd outstanding, the first qd completions not counted. */
static int rand_cell(struct run *u, struct dg_sweep_cell *c, uint64_t share_ns)
{
	uint32_t b = c->block_bytes;
	unsigned warm = c->qd, counted = 0, seen = 0, min_ios = 16;
	uint64_t t_begin = 0, t_end = 0, dt0 = dg_engine_device_time_ns(u->e);
	bool stopping = false;
	int rc, n;

	lat_reset(u);
	while (!stopping || dg_engine_inflight(u->e)) {
		while (!stopping && dg_engine_inflight(u->e) < c->qd) {
			uint64_t off = rand_offset(u, c->start_bytes, c->span_bytes, b);
			if ((rc = submit1(u, off, b, c->write, off)))
				return rc;
		}
		if ((n = reap(u, 1)) < 0)
			return n;
		for (int i = 0; i < n; i++) {
			const struct dg_completion *k = &u->comp[i];
			seen++;
			if (seen == warm) {
				t_begin = k->complete_ns;
				continue;
			}
			if (seen < warm || stopping)
				continue;
			counted++;
			t_end = k->complete_ns;
			dg_histogram_add(u->lat, k->complete_ns - k->submit_ns);
		}
		if (counted >= u->p->rand_ios || *u->stop ||
		    (counted >= min_ios && dg_engine_device_time_ns(u->e) - dt0 >= share_ns))
			stopping = true;
	}
	c->device_time_ns = dg_engine_device_time_ns(u->e) - dt0;
	if (!counted || t_end <= t_begin)
		return 0;
	c->measured = true;
	c->ios = counted;
	c->iops = counted / ((double)(t_end - t_begin) / 1e9);
	c->mb_per_s = c->iops * b / DG_MB;
	cell_finish_lat(u, c);
	return 0;
}

/* ---- the grid ---- */

/* QD list order of priority: the first (shallowest) and last, then bisection in between. */
static void qd_order(const struct dg_sweep_params *p, unsigned *order)
{
	bool used[DG_SWEEP_MAX_QDS] = {false};
	unsigned k = 0;

	if (!p->nqds)
		return;
	order[k++] = 0;
	used[0] = true;
	if (p->nqds > 1) {
		order[k++] = p->nqds - 1;
		used[p->nqds - 1] = true;
	}
	for (unsigned step = p->nqds; k<p->nqds; step = step> 1 ? step / 2 : 1)
		for (unsigned i = step / 2; i < p->nqds && k < p->nqds; i += step ? step : 1)
			if (!used[i]) {
				used[i] = true;
				order[k++] = i;
			}
}

static int build_cells(struct dg_sweep_result *r)
{
	const struct dg_sweep_params *p = &r->params;
	size_t n = (size_t)p->nqds * (2u * p->nseq_blocks + 2u * p->nrand_blocks), k = 0;
	unsigned order[DG_SWEEP_MAX_QDS];

	r->cells = calloc(n ? n : 1, sizeof(*r->cells));
	if (!r->cells)
		return -ENOMEM;
	qd_order(p, order);
	for (unsigned oi = 0; oi < p->nqds; oi++) {
		unsigned qd = p->qds[order[oi]];
		for (unsigned w = 0; w < 2; w++)
			for (unsigned i = 0; i < p->nrand_blocks; i++)
				r->cells[k++] = (struct dg_sweep_cell){
				    .kind = DG_SWEEP_RAND,
				    .where = w ? DG_SWEEP_FIRST10 : DG_SWEEP_FULL,
				    .write = p->write,
				    .block_bytes = p->rand_blocks[i],
				    .qd = qd,
				    .mb_per_s = NAN};
		for (unsigned w = 0; w < 2; w++)
			for (unsigned i = 0; i < p->nseq_blocks; i++)
				r->cells[k++] = (struct dg_sweep_cell){
				    .kind = DG_SWEEP_SEQ,
				    .where = w ? DG_SWEEP_INNER : DG_SWEEP_OUTER,
				    .write = p->write,
				    .block_bytes = p->seq_blocks[i],
				    .qd = qd,
				    .mb_per_s = NAN};
	}
	r->ncells = k;
	return 0;
}

/* Places each sequential cell on fresh bytes: outer cells forward from the range's start, inner
 * backwards from its end, wrapping inside the range when it is small. */
static void place_seq(struct run *u, struct dg_sweep_cell *c, uint64_t *outer_next,
		      uint64_t *inner_next)
{
	const struct dg_sweep_params *p = u->p;
	uint64_t range = p->range_end_bytes - p->range_start_bytes, b = c->block_bytes;
	uint64_t len = p->seq_bytes / b < 8 ? 8 * b : p->seq_bytes - p->seq_bytes % b;

	len += b; /* the positioning I/O */
	if (len > range / 2)
		len = (range / 2) - (range / 2) % b;
	if (len < 2 * b)
		len = 2 * b;
	if (c->where == DG_SWEEP_OUTER) {
		uint64_t s = *outer_next;
		s += (b - (s - p->range_start_bytes) % b) % b;
		if (s + len > p->range_start_bytes + range / 2)
			s = p->range_start_bytes;
		c->start_bytes = s;
		*outer_next = s + len + CELL_GAP_BYTES;
	} else {
		uint64_t e = *inner_next;
		if (e < p->range_start_bytes + range / 2 + len)
			e = p->range_end_bytes;
		uint64_t s = e - len;
		s -= (s - p->range_start_bytes) % b;
		c->start_bytes = s;
		*inner_next = s > CELL_GAP_BYTES ? s - CELL_GAP_BYTES : 0;
	}
	c->span_bytes = len;
}

/* ---- sector format ---- */

/* Mean QD1 time of `n` I/Os of `b` at offsets from `seed` (multiples of `align` inside the range
 * less a margin), each moved by `shift`; the per-I/O times into `t`. */
static int rmw_set(struct run *u, uint32_t b, uint32_t align, uint32_t shift, uint64_t seed,
		   unsigned n, bool write, double *t, double *mean)
{
	const struct dg_sweep_params *p = u->p;
	uint64_t base = p->range_start_bytes + (align - p->range_start_bytes % align) % align;
	uint64_t s = seed, span = p->range_end_bytes - base - 2 * (uint64_t)align - b;
	double sum = 0;
	unsigned done = 0;
	int rc, k;

	for (unsigned i = 0; i < n && !*u->stop; i++) {
		uint64_t off = base + dg_splitmix64(&s) % (span / align) * align + shift;
		if ((rc = submit1(u, off, b, write, off)))
			return rc;
		if ((k = reap(u, 1)) < 0)
			return k;
		if (k == 0) /* interrupted: nothing timed; the set is left incomplete */
			return drain(u);
		t[i] = (double)(u->comp[0].complete_ns - u->comp[0].submit_ns) / 1e6;
		sum += t[i];
		done++;
	}
	*mean = done ? sum / done : NAN;
	return 0;
}

static int rmw_measure(struct run *u)
{
	struct dg_sweep_rmw *m = &u->r->rmw;
	uint32_t lsec = u->info->logical_sector_bytes ? u->info->logical_sector_bytes : 512;
	uint32_t phys = u->info->physical_sector_bytes ? u->info->physical_sector_bytes : lsec;
	unsigned n = u->p->rmw_ios;
	double *ta = NULL, *tm = NULL, ma, mm;
	int rc = 0;

	m->logical_sector_bytes = lsec;
	m->physical_sector_bytes_reported = phys;
	m->write = u->p->write;
	m->physical_sector_bytes_timed = lsec;
	ta = calloc(n, sizeof(double));
	tm = calloc(n, sizeof(double));
	if (!ta || !tm) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = want_engine(u, 1, DG_SWEEP_RMW_MAX_BYTES)))
		goto out;
	/* warm the head up: the first I/O after an open pays for an unknown position */
	if ((rc = rmw_set(u, lsec, lsec, 0, u->p->seed ^ 0x5eed, 1, false, ta, &ma)))
		goto out;
	for (uint32_t b = 2 * lsec; b <= DG_SWEEP_RMW_MAX_BYTES && m->nsizes < 8 && !*u->stop &&
				    m->physical_sector_bytes_timed == lsec;
	     b *= 2) {
		struct dg_sweep_rmw_size *z = &m->sizes[m->nsizes];
		uint64_t seed = u->p->seed * 1000003u + b;
		double d = 0, d2 = 0;
		if ((rc = rmw_set(u, b, b, 0, seed, n, u->p->write, ta, &ma)) ||
		    (rc = rmw_set(u, b, b, lsec, seed, n, u->p->write, tm, &mm)))
			goto out;
		if (*u->stop)
			break;
		for (unsigned i = 0; i < n; i++) {
			d += tm[i] - ta[i];
			d2 += (tm[i] - ta[i]) * (tm[i] - ta[i]);
		}
		d /= n;
		z->block_bytes = b;
		z->aligned_ms = ma;
		z->misaligned_ms = mm;
		z->penalty_se_ms = n > 1 ? sqrt(fmax(0, d2 / n - d * d) / (n - 1)) : NAN;
		m->nsizes++;
		if (m->physical_sector_bytes_timed == lsec && d > 0.25 * ma &&
		    d > 4 * z->penalty_se_ms)
			m->physical_sector_bytes_timed = b;
	}
	/* one logical sector at a physical boundary and moved by one */
	/* the figures are given at the timed size, else the reported one, else 4 KiB (or the
	 * smallest size tried) */
	uint32_t at = m->physical_sector_bytes_timed > lsec ? m->physical_sector_bytes_timed
		      : phys > lsec			    ? phys
		      : lsec < 4096			    ? 4096
							    : 2 * lsec;
	if (at > lsec && !*u->stop) {
		uint64_t seed = u->p->seed * 1000003u + 1;
		if ((rc = rmw_set(u, lsec, at, 0, seed, n, u->p->write, ta, &ma)) ||
		    (rc = rmw_set(u, lsec, at, lsec, seed, n, u->p->write, tm, &mm)))
			goto out;
		m->logical_aligned_ms = ma;
		m->logical_misaligned_ms = mm;
	} else {
		m->logical_aligned_ms = m->logical_misaligned_ms = NAN;
	}
	m->block_bytes = at;
	m->aligned_ms = m->misaligned_ms = m->penalty_ms = NAN;
	for (size_t i = 0; i < m->nsizes; i++)
		if (m->sizes[i].block_bytes == at) {
			m->aligned_ms = m->sizes[i].aligned_ms;
			m->misaligned_ms = m->sizes[i].misaligned_ms;
			m->penalty_ms = m->misaligned_ms - m->aligned_ms;
		}
	m->measured = m->nsizes > 0;
out:
	free(ta);
	free(tm);
	return rc;
}

/* ---- the run ---- */

int dg_sweep_run(const struct dg_device_info *info, const struct dg_sweep_params *p,
		 dg_sweep_open_fn open_engine, void *open_arg, struct dg_errors *errors,
		 volatile sig_atomic_t *stop, dg_progress_fn progress, void *progress_arg,
		 struct dg_sweep_result **out)
{
	struct dg_sweep_result *r = calloc(1, sizeof(*r));
	struct run *u = calloc(1, sizeof(*u));
	static volatile sig_atomic_t never;
	int rc = -ENOMEM;

	if (!r || !u)
		goto err;
	u->lat = dg_histogram_new();
	if (!u->lat)
		goto err;
	r->params = *p;
	u->info = info;
	u->p = &r->params;
	u->r = r;
	u->open_engine = open_engine;
	u->open_arg = open_arg;
	u->errors = errors;
	u->stop = stop ? stop : &never;
	u->rng = p->seed;
	if ((rc = build_cells(r)))
		goto err;

	uint64_t range = p->range_end_bytes - p->range_start_bytes;
	if (p->rmw_ios && range > 4ull * DG_SWEEP_RMW_MAX_BYTES) {
		if (progress)
			progress(progress_arg, "sweep: sector format", 0.0, -1);
		if ((rc = rmw_measure(u)))
			goto err;
	}

	uint64_t outer_next = p->range_start_bytes, inner_next = p->range_end_bytes;
	for (size_t i = 0; i < r->ncells; i++) {
		struct dg_sweep_cell *c = &r->cells[i];
		uint64_t used = dev_ns(u);
		if (c->kind == DG_SWEEP_RAND) {
			c->start_bytes = p->range_start_bytes;
			c->span_bytes = c->where == DG_SWEEP_FULL ? range : range / 10;
			c->span_bytes -= c->span_bytes % c->block_bytes;
		} else {
			place_seq(u, c, &outer_next, &inner_next);
		}
		if (*u->stop) {
			c->skipped = "interrupted";
			r->interrupted = true;
			continue;
		}
		if ((uint64_t)c->qd * c->block_bytes > DG_SWEEP_MAX_INFLIGHT_BYTES) {
			c->skipped = "queue depth x block above the in-flight limit";
			continue;
		}
		if (used >= p->time_budget_ns) {
			c->skipped = "time budget";
			continue;
		}
		if ((rc = want_engine(u, c->qd, c->block_bytes)))
			goto err;
		if (u->e_qd < c->qd) {
			c->skipped = "the engine's queue depth is lower";
			continue;
		}
		size_t left = 0;
		for (size_t j = i; j < r->ncells; j++)
			left += (uint64_t)r->cells[j].qd * r->cells[j].block_bytes <=
				DG_SWEEP_MAX_INFLIGHT_BYTES;
		uint64_t share = (p->time_budget_ns - used) / (left ? left : 1);
		if (progress)
			progress(progress_arg, "sweep", (double)i / (double)r->ncells,
				 (double)(p->time_budget_ns - used) / 1e9);
		u->cell = c;
		rc = c->kind == DG_SWEEP_SEQ ? seq_cell(u, c, share) : rand_cell(u, c, share);
		u->cell = NULL;
		if (rc)
			goto err;
		if (!c->measured)
			c->skipped = *u->stop ? "interrupted" : "no I/O completed";
		else
			r->nmeasured++;
	}
	r->interrupted = r->interrupted || *u->stop;
	for (size_t i = 0; i < r->ncells; i++)
		if (!r->cells[i].measured)
			r->thinned = true;
	close_engine(u);
	r->device_time_ns = u->dev_ns_closed;
	dg_histogram_free(u->lat);
	free(u);
	*out = r;
	return 0;
err:
	if (u) {
		close_engine(u);
		dg_histogram_free(u->lat);
	}
	free(u);
	dg_sweep_result_free(r);
	return rc;
}

void dg_sweep_result_free(struct dg_sweep_result *r)
{
	if (!r)
		return;
	free(r->cells);
	free(r);
}

double dg_sweep_ncq_gain(const struct dg_sweep_result *r, const struct dg_sweep_cell *c)
{
	if (c->kind != DG_SWEEP_RAND || !c->measured)
		return NAN;
	for (size_t i = 0; i < r->ncells; i++) {
		const struct dg_sweep_cell *b = &r->cells[i];
		if (b->kind == DG_SWEEP_RAND && b->qd == 1 && b->where == c->where &&
		    b->block_bytes == c->block_bytes && b->write == c->write && b->measured)
			return c->iops / b->iops;
	}
	return NAN;
}

/* ---- output ---- */

static void set_num(json_t *o, const char *key, double v)
{
	if (isfinite(v))
		json_object_set_new(o, key, json_real(v));
}

json_t *dg_sweep_params_json(const struct dg_sweep_params *p)
{
	json_t *o = json_object(), *a;

	a = json_array();
	for (unsigned i = 0; i < p->nseq_blocks; i++)
		json_array_append_new(a, json_integer(p->seq_blocks[i]));
	json_object_set_new(o, "sweep_seq_blocks_bytes", a);
	a = json_array();
	for (unsigned i = 0; i < p->nrand_blocks; i++)
		json_array_append_new(a, json_integer(p->rand_blocks[i]));
	json_object_set_new(o, "sweep_rand_blocks_bytes", a);
	a = json_array();
	for (unsigned i = 0; i < p->nqds; i++)
		json_array_append_new(a, json_integer(p->qds[i]));
	json_object_set_new(o, "sweep_qds", a);
	json_object_set_new(o, "sweep_range_start_bytes",
			    json_integer((json_int_t)p->range_start_bytes));
	json_object_set_new(o, "sweep_range_end_bytes",
			    json_integer((json_int_t)p->range_end_bytes));
	json_object_set_new(o, "sweep_time_budget_s", json_real((double)p->time_budget_ns / 1e9));
	json_object_set_new(o, "sweep_seq_bytes", json_integer((json_int_t)p->seq_bytes));
	json_object_set_new(o, "sweep_rand_ios", json_integer(p->rand_ios));
	json_object_set_new(o, "sweep_rmw_ios", json_integer(p->rmw_ios));
	json_object_set_new(o, "sweep_seed", json_integer((json_int_t)p->seed));
	json_object_set_new(o, "sweep_write", json_boolean(p->write));
	return o;
}

static json_t *cell_json(const struct dg_sweep_result *r, const struct dg_sweep_cell *c)
{
	json_t *o = json_object(), *l;

	json_object_set_new(o, "kind", json_string(dg_sweep_kind_name(c->kind)));
	json_object_set_new(o, "op", json_string(c->write ? "write" : "read"));
	json_object_set_new(o, "where", json_string(dg_sweep_where_name(c->where)));
	json_object_set_new(o, "block_bytes", json_integer(c->block_bytes));
	json_object_set_new(o, "qd", json_integer(c->qd));
	json_object_set_new(o, "measured", json_boolean(c->measured));
	if (!c->measured) {
		json_object_set_new(o, "skipped", json_string(c->skipped ? c->skipped : "unknown"));
		return o;
	}
	json_object_set_new(o, "start_bytes", json_integer((json_int_t)c->start_bytes));
	json_object_set_new(o, "span_bytes", json_integer((json_int_t)c->span_bytes));
	json_object_set_new(o, "ios", json_integer(c->ios));
	if (c->errors)
		json_object_set_new(o, "errors", json_integer(c->errors));
	json_object_set_new(o, "device_time_s", json_real((double)c->device_time_ns / 1e9));
	set_num(o, "mb_per_s", c->mb_per_s);
	set_num(o, "iops", c->iops);
	l = json_object();
	set_num(l, "mean", c->mean_ms);
	set_num(l, "p50", c->p50_ms);
	set_num(l, "p99", c->p99_ms);
	json_object_set_new(o, "latency_ms", l);
	set_num(o, "ncq_gain", dg_sweep_ncq_gain(r, c));
	return o;
}

static json_t *rmw_json(const struct dg_sweep_rmw *m)
{
	json_t *o = json_object(), *a = json_array();

	json_object_set_new(o, "op", json_string(m->write ? "write" : "read"));
	json_object_set_new(o, "logical_sector_bytes", json_integer(m->logical_sector_bytes));
	json_object_set_new(o, "physical_sector_bytes_reported",
			    json_integer(m->physical_sector_bytes_reported));
	json_object_set_new(o, "physical_sector_bytes_timed",
			    json_integer(m->physical_sector_bytes_timed));
	json_object_set_new(o, "block_bytes", json_integer(m->block_bytes));
	set_num(o, "aligned_ms", m->aligned_ms);
	set_num(o, "misaligned_ms", m->misaligned_ms);
	set_num(o, "penalty_ms", m->penalty_ms);
	set_num(o, "logical_aligned_ms", m->logical_aligned_ms);
	set_num(o, "logical_misaligned_ms", m->logical_misaligned_ms);
	for (size_t i = 0; i < m->nsizes; i++) {
		json_t *s = json_object();
		json_object_set_new(s, "block_bytes", json_integer(m->sizes[i].block_bytes));
		set_num(s, "aligned_ms", m->sizes[i].aligned_ms);
		set_num(s, "misaligned_ms", m->sizes[i].misaligned_ms);
		set_num(s, "penalty_ms", m->sizes[i].misaligned_ms - m->sizes[i].aligned_ms);
		set_num(s, "penalty_se_ms", m->sizes[i].penalty_se_ms);
		json_array_append_new(a, s);
	}
	json_object_set_new(o, "sizes", a);
	return o;
}

json_t *dg_sweep_json(const struct dg_sweep_result *r)
{
	json_t *o = json_object(), *cells = json_array(), *gains = json_array();

	if (!o || !cells || !gains) {
		json_decref(o);
		json_decref(cells);
		json_decref(gains);
		return NULL;
	}
	for (size_t i = 0; i < r->ncells; i++) {
		const struct dg_sweep_cell *c = &r->cells[i];
		json_array_append_new(cells, cell_json(r, c));
		double g = dg_sweep_ncq_gain(r, c);
		if (isfinite(g)) {
			json_t *e = json_object();
			json_object_set_new(e, "where", json_string(dg_sweep_where_name(c->where)));
			json_object_set_new(e, "op", json_string(c->write ? "write" : "read"));
			json_object_set_new(e, "block_bytes", json_integer(c->block_bytes));
			json_object_set_new(e, "qd", json_integer(c->qd));
			json_object_set_new(e, "gain", json_real(g));
			json_array_append_new(gains, e);
		}
	}
	json_object_set_new(o, "cells", cells);
	json_object_set_new(o, "ncq_gain", gains);
	json_object_set_new(o, "cells_total", json_integer((json_int_t)r->ncells));
	json_object_set_new(o, "cells_measured", json_integer((json_int_t)r->nmeasured));
	json_object_set_new(o, "thinned", json_boolean(r->thinned));
	json_object_set_new(o, "time_budget_s", json_real((double)r->params.time_budget_ns / 1e9));
	json_object_set_new(o, "device_time_s", json_real((double)r->device_time_ns / 1e9));
	json_object_set_new(o, "range_start_bytes",
			    json_integer((json_int_t)r->params.range_start_bytes));
	json_object_set_new(o, "range_end_bytes",
			    json_integer((json_int_t)r->params.range_end_bytes));
	if (r->params.write)
		json_object_set_new(o, "written_bytes", json_integer((json_int_t)r->written_bytes));
	if (r->rmw.measured)
		json_object_set_new(o, "rmw", rmw_json(&r->rmw));
	return o;
}

static void csv_num(FILE *f, double v, const char *sep)
{
	if (isfinite(v))
		fprintf(f, "%.6g%s", v, sep);
	else
		fputs(sep, f);
}

int dg_sweep_csv(FILE *f, void *arg)
{
	const struct dg_sweep_result *r = arg;

	fputs("kind,op,where,block_bytes,qd,measured,mb_per_s,iops,latency_ms_mean,latency_ms_p50,"
	      "latency_ms_p99,ncq_gain\n",
	      f);
	for (size_t i = 0; i < r->ncells; i++) {
		const struct dg_sweep_cell *c = &r->cells[i];
		fprintf(f, "%s,%s,%s,%" PRIu32 ",%u,%s,", dg_sweep_kind_name(c->kind),
			c->write ? "write" : "read", dg_sweep_where_name(c->where), c->block_bytes,
			c->qd, c->measured ? "true" : "false");
		if (c->measured) {
			csv_num(f, c->mb_per_s, ",");
			csv_num(f, c->iops, ",");
			csv_num(f, c->mean_ms, ",");
			csv_num(f, c->p50_ms, ",");
			csv_num(f, c->p99_ms, ",");
			csv_num(f, dg_sweep_ncq_gain(r, c), "\n");
		} else {
			fputs(",,,,,\n", f);
		}
	}
	return ferror(f) ? -EIO : 0;
}
