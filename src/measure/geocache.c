/* SPDX-License-Identifier: MIT */
/*
 * The cache and command-queueing figures of `diskgeo geometry` (see diskgeo/geocache.h): the
 * run, its shared reads (hits, streams, places) and the JSON. The tests themselves live in
 * geocache_probe.c (cache) and geocache_ncq.c (queueing).
 *
 * Order: the rotation period (given, or measured by rotation.c), the hit time of a small and a
 * large read, the media rate near the places, then look-behind, read-ahead, segments, command
 * queueing and the cache size (the costliest last), each only when the budget still holds it.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/engine.h"
#include "geocache_priv.h"
#include "util.h"

#define HIT_READS	  15u		/* re-reads of a block just read */
#define RATE_STREAM_BYTES (16ull << 20) /* the media-rate stream */
#define MIN_RANGE_BYTES	  (1ull << 30)
#define ROTATION_AT	  (16ull << 20) /* rotation.c's samples start here (above the range start) */

void dg_geocache_opts_default(struct dg_geocache_opts *o, uint64_t size_bytes,
			      uint32_t sector_bytes)
{
	memset(o, 0, sizeof(*o));
	o->end_bytes = size_bytes;
	o->sector_bytes = sector_bytes;
	o->block_bytes = 4096;
	o->max_io_bytes = 1u << 20;
	o->time_budget_ns = DG_GEOCACHE_DEFAULT_BUDGET_NS;
	o->seed = 1;
}

double gc_left_ms(const struct gc *g)
{
	double used = (double)seek_ctx_used_ns(&g->s) / 1e6;
	double budget = (double)g->s.budget_ns / 1e6;

	return used < budget ? budget - used : 0.0;
}

void gc_note(struct gc *g, const char *fmt, ...)
{
	struct dg_geocache *r = g->out;
	va_list ap;

	if (r->notes_n >= DG_GEOCACHE_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(r->notes[r->notes_n++], sizeof(r->notes[0]), fmt, ap);
	va_end(ap);
}

int gc_read(struct gc *g, uint64_t off, uint32_t len, uint64_t at_ns, double *ms)
{
	struct dg_completion c;
	int rc;

	bool failed = false;

	g->s.block_bytes = len;
	rc = seek_read(&g->s, off, at_ns, &c, &failed);
	*ms = rc == 0 && !failed ? (double)(c.complete_ns - c.submit_ns) / 1e6 : NAN;
	if (rc == -ECANCELED)
		return 2; /* stopped: nothing read */
	return rc ? rc : failed ? 1 : 0;
}

int gc_stream(struct gc *g, uint64_t off, uint64_t len, double *ms)
{
	uint64_t t0 = 0, end = off + len;
	double a;
	int rc;

	for (uint64_t at = off; at < end; at += g->io) {
		uint32_t n = end - at < g->io ? (uint32_t)(end - at) : g->io;
		rc = gc_read(g, at, n, 0, &a);
		if (rc)
			return rc;
		if (at == off)
			t0 = dg_engine_now_ns(g->s.e);
	}
	if (ms)
		*ms = (double)(dg_engine_now_ns(g->s.e) - t0) / 1e6;
	return 0;
}

uint64_t gc_place(struct gc *g, uint64_t room)
{
	uint64_t span = g->hi - g->lo > room ? g->hi - g->lo - room : g->b;
	uint64_t p = g->lo + (uint64_t)(seek_rand01(&g->s) * (double)span);

	return p - p % g->b;
}

uint64_t gc_random_phase(struct gc *g)
{
	return dg_engine_now_ns(g->s.e) + (uint64_t)(seek_rand01(&g->s) * g->T * 1e6);
}

int gc_idle(struct gc *g, double ms)
{
	uint64_t at = dg_engine_now_ns(g->s.e) + (uint64_t)llround(ms * 1e6);
	int rc = dg_engine_idle_until(g->s.e, at);

	if (rc == -EINTR)
		return seek_ctx_stopping(&g->s) ? 2 : 0;
	return rc;
}

/*
 * The time of a hit on `len` bytes: a block read, then re-read HIT_READS times at once (it is
 * in the cache whatever the drive's policy; DIXtrac, Schindler & Ganger 2000). *min_ms gets the
 * least (jitter only adds) and *thr_ms the hit threshold: the median plus T/8 — a miss pays a
 * rotational wait, uniform in a revolution, so one trial in eight at most looks like a hit, and
 * every decision below takes several trials. Returns as gc_read.
 */
static int measure_hit(struct gc *g, uint32_t len, double *min_ms, double *thr_ms)
{
	double v[HIT_READS], a;
	unsigned tries = 0;
	int rc;

	for (;;) {
		uint64_t p = gc_place(g, len);
		rc = gc_read(g, p, len, 0, &a);
		if (rc == 1 && ++tries < 8)
			continue;
		if (rc)
			return rc;
		size_t n = 0;
		for (unsigned i = 0; i < HIT_READS; i++) {
			rc = gc_read(g, p, len, 0, &a);
			if (rc == 2 || rc < 0)
				return rc;
			if (rc == 0)
				v[n++] = a;
		}
		if (n < HIT_READS / 2 + 1) {
			if (++tries < 8)
				continue;
			return 1;
		}
		double med = dg_median(v, n); /* sorts */
		*min_ms = v[0];
		*thr_ms = med + g->T / 8;
		return 0;
	}
}

/* The period: given, or rotation.c's (phase-locked completion times, Wong 2019), or the drive's
 * stated rpm (T only sets the hit threshold and the idle waits, which a few percent do not
 * move). Returns 0 with g->T set (NAN when nothing says the device rotates), 2, or -errno. */
static int period(struct gc *g)
{
	if (g->o->period_ms > 0) {
		g->T = g->o->period_ms;
		return 0;
	}
	g->s.block_bytes = g->b;
	uint64_t at = g->o->start_bytes + ROTATION_AT;
	uint64_t cap = g->s.capacity_bytes;
	int rc = seek_rotation_measure(&g->s, at, true);
	g->s.capacity_bytes = cap;
	if (rc == -ECANCELED)
		return 2; /* stopped */
	if (rc < 0)
		return rc;
	g->T = rc == 0 && g->s.rotating ? g->s.period_ns / 1e6 : NAN;
	if (isnan(g->T) && g->o->nominal_rpm > 1) {
		g->T = 60000.0 / g->o->nominal_rpm;
		gc_note(g, "rotation not measured: the period is the drive's stated %u rpm",
			g->o->nominal_rpm);
	}
	return 0;
}

/* Hit times and the media rate near the places. Returns 0, 1 (reads failed), 2, -errno. */
static int basics(struct gc *g)
{
	struct dg_geocache *r = g->out;
	double ms, big_min;
	int rc;

	rc = measure_hit(g, g->b, &r->hit_ms, &g->hit_thr);
	if (rc)
		return rc;
	rc = measure_hit(g, GC_BIG_BYTES, &big_min, &g->big_hit_thr);
	if (rc)
		return rc;
	/* a stream's rate, its first read (positioning) left out */
	rc = gc_stream(g, gc_place(g, RATE_STREAM_BYTES), RATE_STREAM_BYTES, &ms);
	if (rc)
		return rc;
	g->rate_mb = (double)(RATE_STREAM_BYTES - g->io) / (ms * 1e3);
	return 0;
}

static void result_init(struct dg_geocache *r, uint32_t b)
{
	memset(r, 0, sizeof(*r));
	r->period_ms = r->hit_ms = r->read_ahead_bytes = r->size_bytes = NAN;
	r->segment_bytes = NAN;
	r->ncq_gain_explained = NAN;
	r->look_behind = r->segments = r->ncq_reorders = r->ncq_depth = -1;
	r->block_bytes = b;
}

static int check_opts(const struct dg_geocache_opts *o)
{
	if (o->end_bytes <= o->start_bytes || o->end_bytes - o->start_bytes < MIN_RANGE_BYTES)
		return -EINVAL;
	uint32_t sector = o->sector_bytes ? o->sector_bytes : 512;
	if (sector % 512 || o->block_bytes % sector || o->block_bytes > GC_BIG_BYTES)
		return -EINVAL;
	if (o->max_io_bytes % 4096 || (o->max_io_bytes && o->max_io_bytes < GC_BIG_BYTES))
		return -EINVAL;
	return 0;
}

/* The tests in order of cost; each runs when the budget still holds its rough cost (ms). */
static int run_tests(struct gc *g)
{
	static const struct {
		int (*fn)(struct gc *g);
		const char *what;
		double cost_ms;
	} steps[] = {
	    /* upper bounds of each step's device time over the presets, the test variants and 50
	     * zoo drives (at most 0.2, 0.8, 0.2, 19.6 and 18.7 s there) */
	    {gc_look_behind, "look-behind", 300}, {gc_read_ahead, "read-ahead", 1500},
	    {gc_segments, "segments", 500},	  {gc_ncq, "command queueing", 20000},
	    {gc_cache_size, "cache size", 20000},
	};
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		if (gc_left_ms(g) < steps[i].cost_ms) {
			gc_note(g, "%s not measured: the time budget is spent", steps[i].what);
			continue;
		}
		int rc = steps[i].fn(g);
		if (rc)
			return rc;
	}
	return 0;
}

int dg_geocache_run(struct dg_engine *e, const struct dg_geocache_opts *opts,
		    struct dg_geocache *out)
{
	struct gc g;
	int rc = check_opts(opts);

	result_init(out, opts->block_bytes ? opts->block_bytes : 4096);
	if (rc)
		return rc;
	memset(&g, 0, sizeof(g));
	g.s.e = e;
	g.s.capacity_bytes = opts->end_bytes;
	g.s.errors = opts->errors;
	g.s.stop = opts->stop;
	g.s.dt0_ns = dg_engine_device_time_ns(e);
	g.s.budget_ns = opts->time_budget_ns ? opts->time_budget_ns : DG_GEOCACHE_DEFAULT_BUDGET_NS;
	g.s.rng = opts->seed;
	g.o = opts;
	g.out = out;
	g.b = out->block_bytes;
	g.sector = opts->sector_bytes ? opts->sector_bytes : 512;
	g.io = opts->max_io_bytes ? opts->max_io_bytes : 1u << 20;
	g.lo = opts->start_bytes + (64ull << 20);
	g.hi = opts->start_bytes + (opts->end_bytes - opts->start_bytes) / 2;

	rc = period(&g);
	if (rc == 0 && !(g.T > 0))
		gc_note(&g, "no rotation found: hits cannot be told from misses");
	if (rc == 0 && g.T > 0) {
		out->period_ms = g.T;
		rc = basics(&g);
		if (rc == 1)
			gc_note(&g, "reads failed too often near the range start");
		if (rc == 0)
			rc = run_tests(&g);
	}
	out->device_time_ns = seek_ctx_used_ns(&g.s);
	if (rc == 2 || (rc == 0 && g.s.stop && *g.s.stop))
		return -EINTR;
	return rc < 0 ? rc : 0;
}

/* Sets o[key] to a new value; a NULL value (ENOMEM) is counted in *bad. */
static void put(json_t *o, const char *key, json_t *v, int *bad)
{
	if (!v || json_object_set_new(o, key, v))
		(*bad)++;
}

static json_t *cache_json(const struct dg_geocache *g, int *bad)
{
	json_t *c = json_object();

	if (!c)
		return NULL;
	if (!isnan(g->hit_ms)) {
		put(c, "hit_ms", json_real(g->hit_ms), bad);
		put(c, "hit_block_bytes", json_integer(g->block_bytes), bad);
	}
	if (!isnan(g->read_ahead_bytes)) {
		put(c, "read_ahead_bytes", json_integer((json_int_t)llround(g->read_ahead_bytes)),
		    bad);
		put(c, "read_ahead_trials", json_integer(g->read_ahead_trials), bad);
	}
	if (g->look_behind >= 0) {
		put(c, "look_behind", json_boolean(g->look_behind), bad);
		put(c, "look_behind_hits", json_integer(g->look_behind_hits), bad);
		put(c, "look_behind_trials", json_integer(g->look_behind_trials), bad);
	}
	if (g->segments >= 0) {
		put(c, "segments", json_integer(g->segments), bad);
		put(c, "segments_trials", json_integer(g->segments_trials), bad);
	}
	if (!isnan(g->size_bytes)) {
		put(c, "size_bytes", json_integer((json_int_t)llround(g->size_bytes)), bad);
		put(c, "segment_bytes", json_integer((json_int_t)llround(g->segment_bytes)), bad);
		put(c, "size_runs", json_integer(g->size_runs), bad);
	}
	return c;
}

static json_t *ncq_json(const struct dg_geocache *g, int *bad)
{
	json_t *q = json_object(), *qd = json_array(), *iops = json_array();

	if (!q || !qd || !iops) {
		json_decref(q);
		json_decref(qd);
		json_decref(iops);
		return NULL;
	}
	for (unsigned i = 0; i < g->ncq_points; i++) {
		(*bad) += json_array_append_new(qd, json_integer(g->ncq_qd[i])) != 0;
		(*bad) += json_array_append_new(iops, json_real(g->ncq_iops[i])) != 0;
	}
	put(q, "qd", qd, bad);
	put(q, "block_bytes", json_integer(g->block_bytes), bad);
	put(q, "start_bytes", json_integer((json_int_t)g->ncq_start_bytes), bad);
	put(q, "span_bytes", json_integer((json_int_t)g->ncq_span_bytes), bad);
	put(q, "iops", iops, bad);
	if (g->ncq_reorders >= 0) {
		put(q, "reorders", json_boolean(g->ncq_reorders), bad);
		put(q, "depth", json_integer(g->ncq_depth), bad);
		put(q, "gain_explained", json_real(g->ncq_gain_explained), bad);
		put(q, "max_rank", json_integer(g->ncq_max_rank), bad);
	}
	return q;
}

json_t *dg_geocache_json(const struct dg_geocache *g)
{
	json_t *top = json_object(), *notes = json_array();
	int bad = 0;

	if (!top || !notes) {
		json_decref(top);
		json_decref(notes);
		return NULL;
	}
	put(top, "cache", cache_json(g, &bad), &bad);
	if (g->ncq_points)
		put(top, "ncq", ncq_json(g, &bad), &bad);
	if (!isnan(g->period_ms))
		put(top, "period_ms", json_real(g->period_ms), &bad);
	put(top, "device_time_s", json_real((double)g->device_time_ns / 1e9), &bad);
	for (unsigned i = 0; i < g->notes_n; i++)
		bad += json_array_append_new(notes, json_string(g->notes[i])) != 0;
	put(top, "notes", notes, &bad);
	if (bad) {
		json_decref(top);
		return NULL;
	}
	return top;
}
