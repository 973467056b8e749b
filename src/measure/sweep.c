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
#include "util.h"

#define CELL_GAP_BYTES (16ull << 20) /* between sequential cells: beyond any read-ahead */

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
	uint64_t per_max_ns;	/* the slowest pace (device time per I/O) of a cell so far */
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

/* Room in the time budget for one more I/O of the cell begun at device time dt0 with `done`
 * completions: what is in flight and it, at the cell's pace so far (before its first
 * completion: the slowest pace seen), end inside the budget. */
static bool budget_room(const struct run *u, uint64_t dt0, uint64_t done)
{
	uint64_t cell = dg_engine_device_time_ns(u->e) - dt0;
	uint64_t per = done ? cell / done : u->per_max_ns;

	return dev_ns(u) + per * (dg_engine_inflight(u->e) + 1) <= u->p->time_budget_ns;
}

/* After a cell of `n` I/Os that took `dt` of device time: the slowest pace so far. */
static void note_pace(struct run *u, uint64_t dt, uint64_t n)
{
	if (n && dt / n > u->per_max_ns)
		u->per_max_ns = dt / n;
}

/* The completions of a sequential cell so far: t[i] the time the i-th block completed (0 while
 * in flight), lat[i] its latency; `prefix` blocks all complete. */
struct seq_times {
	double *t;
	uint64_t *lat;
	uint64_t prefix;
};

/* At `want` blocks submitted: reads on (doubling, up to `most`) while the rate of the blocks
 * complete after the warm-up quarter has a batch standard error above DG_SWEEP_SEQ_SE — a
 * stream paced in bursts on a drive with jitter (the read-ahead drained, then a wait for the
 * platter in a random phase) needs more than seq_bytes to give its long-run rate. */
static uint64_t seq_grow(struct seq_times *s, uint64_t want, uint64_t most)
{
	while (s->prefix < want && s->t[s->prefix] > 0)
		s->prefix++;
	uint64_t w = s->prefix / 4;
	double se = dg_sweep_batch_se(s->t + w, s->prefix - w);
	if (want >= most || !(se > DG_SWEEP_SEQ_SE))
		return want;
	return 2 * want < most ? 2 * want : most;
}

/* The rate of the n first blocks of a cell: the stalls taken out, the slope after the warm-up;
 * the cell is measured unless the budget ended it before its minimum. */
static void seq_finish(struct run *u, struct dg_sweep_cell *c, struct seq_times *s, uint64_t n,
		       uint64_t min_blocks)
{
	uint64_t warm = n / 4;
	double *t = s->t;

	for (uint64_t i = warm; i < n; i++)
		dg_histogram_add(u->lat, s->lat[i]);
	/* a stall no stream has (the drive's own work: tens of ms more than the pace before, where
	 * a stream waits at most a revolution and a move) counts as that pace, and is counted */
	for (uint64_t i = warm + 2; i < n; i++) {
		double shift = (t[i] - t[i - 1]) - (t[i - 1] - t[i - 2]);
		if (shift > DG_SWEEP_STALL_S) {
			for (uint64_t j = i; j < n; j++)
				t[j] -= shift;
			c->stalls++;
		}
	}
	double per_s = dg_sweep_slope(t + warm, n - warm);
	if (!(per_s > 0) || n < min_blocks) { /* the budget ended it before its minimum */
		c->skipped = n < min_blocks && !*u->stop ? "time budget" : NULL;
		return;
	}
	c->span_bytes = (n + 1) * c->block_bytes;
	c->measured = true;
	c->ios = (unsigned)(n - warm);
	c->iops = per_s;
	c->mb_per_s = c->iops * c->block_bytes / DG_MB;
	cell_finish_lat(u, c);
}

/*
 * Sequential cell at [start, start + span): a positioning read of b alone, then the stream kept
 * qd deep over seq_bytes, read on while its rate is noisy (seq_grow) up to the span placed. The
 * rate is the least-squares slope of bytes against completion time over the completions after a
 * warm-up of the stream's first quarter, which drains whatever the positioning read left in the
 * cache (steady state only, as in Worthington et al. 1995's extraction of sustained rates). A
 * stream paced in bursts is priced by its mean; the slope, unlike the end points, moves smoothly
 * with where a wait falls in the window. A cell the budget cuts short keeps the span it covered.
 */
static int seq_cell(struct run *u, struct dg_sweep_cell *c, uint64_t share_ns)
{
	uint32_t b = c->block_bytes;
	uint64_t nblocks = c->span_bytes / b - 1, submitted = 0, done = 0;
	uint64_t min_blocks = (4u << 20) / b > 16 ? (4u << 20) / b : 16;
	uint64_t want = u->p->seq_bytes / b < 8 ? 8 : u->p->seq_bytes / b;
	struct seq_times s = {calloc(nblocks ? nblocks : 1, sizeof(double)),
			      calloc(nblocks ? nblocks : 1, sizeof(uint64_t)), 0};
	int rc = 0;

	if (!s.t || !s.lat) {
		rc = -ENOMEM;
		goto out;
	}
	want = want < nblocks ? want : nblocks;
	min_blocks = min_blocks < want ? min_blocks : want;
	lat_reset(u);
	if (!budget_room(u, dg_engine_device_time_ns(u->e), 0)) {
		c->skipped = "time budget";
		goto out;
	}
	/* the positioning I/O is a read in both modes: nothing outside the timed bytes changes */
	if ((rc = submit1(u, c->start_bytes, b, false, 0)) || (rc = drain(u)))
		goto out;
	uint64_t first = c->start_bytes + b, dt0 = dg_engine_device_time_ns(u->e);
	while (done < submitted || submitted < want) {
		while (
		    submitted < want && !*u->stop && dg_engine_inflight(u->e) < c->qd &&
		    (submitted < min_blocks || dg_engine_device_time_ns(u->e) - dt0 < share_ns) &&
		    budget_room(u, dt0, done)) {
			if ((rc = submit1(u, first + submitted * b, b, c->write, submitted)))
				goto out;
			if (++submitted == want)
				want = seq_grow(&s, want, nblocks);
		}
		if (!dg_engine_inflight(u->e))
			break;
		int n = reap(u, 1);
		if (n < 0) {
			rc = n;
			goto out;
		}
		for (int i = 0; i < n; i++) {
			const struct dg_completion *k = &u->comp[i];
			uint64_t idx = (k->offset_bytes - first) / b;
			s.t[idx] = (double)k->complete_ns / 1e9;
			s.lat[idx] = k->complete_ns - k->submit_ns;
			done++;
		}
	}
	c->device_time_ns = dg_engine_device_time_ns(u->e) - dt0;
	note_pace(u, c->device_time_ns, done);
	/* every submitted block completed (a stop submits no more): a prefix of the cell */
	seq_finish(u, c, &s, done, min_blocks);
out:
	free(s.t);
	free(s.lat);
	return rc;
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
	if (min_ios > u->p->rand_ios)
		min_ios = u->p->rand_ios;
	while (!stopping || dg_engine_inflight(u->e)) {
		while (!stopping && dg_engine_inflight(u->e) < c->qd) {
			if (!budget_room(u, dt0, seen)) {
				stopping = true; /* what is in flight ends inside the budget */
				c->skipped = "time budget"; /* unless it reached its minimum */
				break;
			}
			uint64_t off = rand_offset(u, c->start_bytes, c->span_bytes, b);
			if ((rc = submit1(u, off, b, c->write, off)))
				return rc;
		}
		if (!dg_engine_inflight(u->e))
			break;
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
	note_pace(u, c->device_time_ns, seen);
	if (counted < min_ios || t_end <= t_begin) /* the budget ended it before its minimum */
		return 0;
	c->skipped = NULL;
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

	uint64_t most = p->seq_bytes * DG_SWEEP_SEQ_GROW; /* read on while noisy: seq_grow */
	len = (len > most ? len : most - most % b) + b;	  /* and the positioning I/O */
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

/* Measures the cells in their order of priority, each placed, checked and given its share. */
static int run_cells(struct run *u, dg_progress_fn progress, void *progress_arg)
{
	uint64_t range = u->p->range_end_bytes - u->p->range_start_bytes;
	int rc;

	uint64_t outer_next = u->p->range_start_bytes, inner_next = u->p->range_end_bytes;
	for (size_t i = 0; i < u->r->ncells; i++) {
		struct dg_sweep_cell *c = &u->r->cells[i];
		uint64_t used = dev_ns(u);
		if (c->kind == DG_SWEEP_RAND) {
			c->start_bytes = u->p->range_start_bytes;
			c->span_bytes = c->where == DG_SWEEP_FULL ? range : range / 10;
			c->span_bytes -= c->span_bytes % c->block_bytes;
		} else {
			place_seq(u, c, &outer_next, &inner_next);
		}
		if (*u->stop) {
			c->skipped = "interrupted";
			u->r->interrupted = true;
			continue;
		}
		if ((uint64_t)c->qd * c->block_bytes > DG_SWEEP_MAX_INFLIGHT_BYTES) {
			c->skipped = "queue depth x block above the in-flight limit";
			continue;
		}
		if (used >= u->p->time_budget_ns) {
			c->skipped = "time budget";
			continue;
		}
		if ((rc = want_engine(u, c->qd, c->block_bytes)))
			return rc;
		if (u->e_qd < c->qd) {
			c->skipped = "the engine's queue depth is lower";
			continue;
		}
		size_t left = 0;
		for (size_t j = i; j < u->r->ncells; j++)
			left += (uint64_t)u->r->cells[j].qd * u->r->cells[j].block_bytes <=
				DG_SWEEP_MAX_INFLIGHT_BYTES;
		uint64_t share = (u->p->time_budget_ns - used) / (left ? left : 1);
		if (progress)
			progress(progress_arg, "sweep", (double)i / (double)u->r->ncells,
				 (double)(u->p->time_budget_ns - used) / 1e9);
		u->cell = c;
		rc = c->kind == DG_SWEEP_SEQ ? seq_cell(u, c, share) : rand_cell(u, c, share);
		u->cell = NULL;
		if (rc)
			return rc;
		if (c->kind == DG_SWEEP_SEQ && c->where == DG_SWEEP_OUTER && c->measured)
			outer_next =
			    c->start_bytes + c->span_bytes + CELL_GAP_BYTES; /* what it read */
		if (c->measured)
			u->r->nmeasured++;
		else if (*u->stop || !c->skipped)
			c->skipped = *u->stop ? "interrupted" : "no I/O completed";
	}
	return 0;
}

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

	if ((rc = run_cells(u, progress, progress_arg)))
		goto err;
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
