/* SPDX-License-Identifier: MIT */
/*
 * The read benchmark (include/diskgeo/read.h): qd reads in flight, MB/s and IOPS over the span
 * from the first submission to the last completion, latency percentiles from a bounded
 * histogram (fio's bw and clat, fio(1) OUTPUT; nearest rank, Hyndman & Fan 1996).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/histogram.h"
#include "diskgeo/read.h"

#define BATCH 256u /* the engine's largest queue depth */

/* What the loop counts while it runs. */
struct stats {
	uint64_t bytes, ios, failed_ios;
	uint64_t first_submit_ns, last_complete_ns;
	uint64_t failed_in_a_row;
	struct dg_histogram *lat; /* ns, one count per completed I/O */
};

/* Uniform in [0, n) by multiply-shift (Lemire 2019); the bias is below 2^-40 for n < 2^24. */
static uint64_t random_below(uint64_t *state, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)dg_splitmix64(state) * n) >> 64);
}

/* Accounts one completion; failures and short transfers go to `errors`. Returns 0 or -ENOMEM. */
static int account(struct stats *st, struct dg_errors *errors, const struct dg_completion *c)
{
	if (c->submit_ns < st->first_submit_ns)
		st->first_submit_ns = c->submit_ns;
	if (c->complete_ns > st->last_complete_ns)
		st->last_complete_ns = c->complete_ns;
	if (c->result < 0) {
		st->failed_ios++;
		st->failed_in_a_row++;
		int rc = dg_errors_add(errors, c->offset_bytes, c->length_bytes, (int)-c->result);
		return rc < 0 ? rc : 0;
	}
	st->ios++;
	st->bytes += (uint64_t)c->result;
	/* past a truncated file's end every read comes back short: failing too */
	st->failed_in_a_row = (uint64_t)c->result < c->length_bytes ? st->failed_in_a_row + 1 : 0;
	if ((uint64_t)c->result < c->length_bytes) {
		/* Inside the device a short read means the rest could not be read. */
		int rc = dg_errors_add(errors, c->offset_bytes + (uint64_t)c->result,
				       c->length_bytes - (uint64_t)c->result, EIO);
		if (rc == 0)
			snprintf(errors->v[errors->n - 1].message,
				 sizeof(errors->v[errors->n - 1].message),
				 "short read: %" PRId64 " of %" PRIu32 " bytes", c->result,
				 c->length_bytes);
		if (rc < 0)
			return rc;
	}
	dg_histogram_add(st->lat, c->complete_ns - c->submit_ns);
	return 0;
}

/* Fills up to `room` I/Os from *submitted on; returns how many. */
static unsigned plan_ios(const struct dg_read_params *p, struct dg_io *ios, unsigned room,
			 uint64_t *submitted, uint64_t *rng, uint64_t *next_tag)
{
	uint64_t nblocks = p->span_bytes / p->block_bytes;
	unsigned n = 0;

	while (n < room && *submitted < p->length_bytes) {
		uint64_t left = p->length_bytes - *submitted;
		struct dg_io *io = &ios[n++];

		io->length_bytes = left < p->block_bytes ? (uint32_t)left : p->block_bytes;
		if (p->random)
			io->offset_bytes =
			    p->offset_bytes + random_below(rng, nblocks) * p->block_bytes;
		else
			io->offset_bytes = p->offset_bytes + *submitted;
		io->op = DG_IO_READ;
		io->tag = (*next_tag)++;
		*submitted += io->length_bytes;
	}
	return n;
}

/* The share submitted, to `progress`, with the device time it projects. */
static void report(dg_progress_fn progress, void *arg, const struct dg_read_params *p,
		   const struct stats *st, uint64_t submitted)
{
	double f = (double)submitted / (double)p->length_bytes, eta = 0;

	if (!progress)
		return;
	if (f > 0 && st->last_complete_ns > st->first_submit_ns)
		eta = (double)(st->last_complete_ns - st->first_submit_ns) / 1e9 * (1 - f) / f;
	progress(arg, "read", f, eta);
}

/*
 * The measuring loop: fill every free slot, wait for at least one completion, repeat until
 * `length_bytes` were submitted and everything came back. On *stop it stops submitting and
 * drains. Returns 0 (an engine failure is in r->failure and `errors`) or -ENOMEM.
 */
static int loop(struct dg_engine *e, struct dg_read_result *r, struct stats *st,
		struct dg_errors *errors, volatile sig_atomic_t *stop, dg_progress_fn progress,
		void *arg)
{
	const struct dg_read_params *p = &r->params;
	struct dg_io ios[BATCH];
	struct dg_completion done[BATCH];
	uint64_t submitted = 0, rng = p->seed, next_tag = 0;
	int rc;

	memset(ios, 0, sizeof(ios));
	while (true) {
		unsigned n = 0;

		if (st->failed_in_a_row >= DG_READ_MAX_FAILED_IN_A_ROW &&
		    submitted < p->length_bytes) {
			if (dg_warnings_add(&r->notes,
					    "read: %u reads in a row failed or came back short; "
					    "the rest of the range was not read",
					    DG_READ_MAX_FAILED_IN_A_ROW))
				return -ENOMEM;
			submitted = p->length_bytes; /* submit nothing more; drain */
		}
		if (!*stop)
			n = plan_ios(p, ios, dg_engine_free_slots(e), &submitted, &rng, &next_tag);
		if (n > 0) {
			rc = dg_engine_submit(e, ios, n);
			if (rc < 0 || (unsigned)rc != n) {
				/* The engine took fewer than it had room for: it is failing. */
				int err = rc < 0 ? -rc : EIO;
				unsigned taken = rc < 0 ? 0 : (unsigned)rc;
				snprintf(r->failure, sizeof(r->failure),
					 "cannot submit at offset %" PRIu64 ": %s",
					 ios[taken].offset_bytes, strerror(err));
				if (dg_errors_add(errors, ios[taken].offset_bytes,
						  ios[taken].length_bytes, err) < 0)
					return -ENOMEM;
				submitted = p->length_bytes; /* submit nothing more; drain */
				if (taken == 0 && dg_engine_inflight(e) == 0)
					return 0;
			}
		}
		if (dg_engine_inflight(e) == 0)
			return 0;
		rc = dg_engine_reap(e, done, 1, BATCH);
		if (rc == -EINTR)
			continue; /* a signal: the loop sees *stop and drains */
		if (rc == -ECANCELED && *stop)
			return 0; /* stopped on a device that does not answer: keep what we have */
		if (rc < 0) {
			snprintf(r->failure, sizeof(r->failure),
				 "waiting for completions failed: %s", strerror(-rc));
			return dg_errors_add(errors, 0, 0, -rc) < 0 ? -ENOMEM : 0;
		}
		for (int i = 0; i < rc; i++)
			if (account(st, errors, &done[i]))
				return -ENOMEM;
		report(progress, arg, p, st, submitted);
	}
}

static double ns_to_ms(uint64_t ns)
{
	return (double)ns / (double)DG_NS_PER_MS;
}

/* The figures of a run from what it counted. */
static void summarise(const struct stats *st, struct dg_read_result *r)
{
	r->bytes = st->bytes;
	r->ios = st->ios;
	r->failed_ios = st->failed_ios;
	if (dg_histogram_count(st->lat) == 0 || st->last_complete_ns <= st->first_submit_ns)
		return;
	r->measured = true;
	r->elapsed_s = (double)(st->last_complete_ns - st->first_submit_ns) / (double)DG_NS_PER_S;
	r->mb_per_s = (double)st->bytes / DG_MB / r->elapsed_s;
	r->iops = (double)st->ios / r->elapsed_s;
	r->min_ms = ns_to_ms(dg_histogram_min(st->lat));
	r->max_ms = ns_to_ms(dg_histogram_max(st->lat));
	r->p50_ms = ns_to_ms(dg_histogram_percentile(st->lat, 50));
	r->p99_ms = ns_to_ms(dg_histogram_percentile(st->lat, 99));
	r->mean_ms = dg_histogram_mean(st->lat) / (double)DG_NS_PER_MS;
}

int dg_read_run(struct dg_engine *e, const struct dg_read_params *p, struct dg_errors *errors,
		volatile sig_atomic_t *stop, dg_progress_fn progress, void *progress_arg,
		struct dg_read_result **result)
{
	struct dg_read_result *r = calloc(1, sizeof(*r));
	struct stats st = {.first_submit_ns = UINT64_MAX};
	int rc = -ENOMEM;

	*result = NULL;
	if (!r)
		return -ENOMEM;
	st.lat = dg_histogram_new();
	if (!st.lat)
		goto err;
	r->params = *p;
	if (dg_engine_qd(e) < r->params.qd)
		r->params.qd = dg_engine_qd(e);
	snprintf(r->engine, sizeof(r->engine), "%s", dg_engine_name(e));
	rc = loop(e, r, &st, errors, stop, progress, progress_arg);
	if (rc)
		goto err;
	summarise(&st, r);
	r->device_time_ns = dg_engine_device_time_ns(e);
	dg_histogram_free(st.lat);
	*result = r;
	return 0;
err:
	dg_histogram_free(st.lat);
	dg_read_result_free(r);
	return rc;
}

void dg_read_result_free(struct dg_read_result *r)
{
	if (!r)
		return;
	dg_warnings_free(&r->notes);
	free(r);
}

/* Sets o.key to `v` (stolen); accumulates a failure in *rc. */
static void set(json_t *o, const char *key, json_t *v, int *rc)
{
	if (json_object_set_new(o, key, v))
		*rc = -ENOMEM;
}

static json_t *latency_json(const struct dg_read_result *r)
{
	json_t *lat = json_object();
	int rc = lat ? 0 : -ENOMEM;

	set(lat, "min", json_real(r->min_ms), &rc);
	set(lat, "p50", json_real(r->p50_ms), &rc);
	set(lat, "p99", json_real(r->p99_ms), &rc);
	set(lat, "max", json_real(r->max_ms), &rc);
	set(lat, "mean", json_real(r->mean_ms), &rc);
	if (rc) {
		json_decref(lat);
		return NULL;
	}
	return lat;
}

json_t *dg_read_json(const struct dg_read_result *r)
{
	const struct dg_read_params *p = &r->params;
	json_t *o = json_object();
	int rc = o ? 0 : -ENOMEM;

	set(o, "pattern", json_string(p->random ? "random" : "sequential"), &rc);
	set(o, "engine", json_string(r->engine), &rc);
	set(o, "offset_bytes", json_integer((json_int_t)p->offset_bytes), &rc);
	set(o, "span_bytes", json_integer((json_int_t)p->span_bytes), &rc);
	set(o, "block_bytes", json_integer((json_int_t)p->block_bytes), &rc);
	set(o, "qd", json_integer((json_int_t)p->qd), &rc);
	set(o, "bytes", json_integer((json_int_t)r->bytes), &rc);
	set(o, "ios", json_integer((json_int_t)r->ios), &rc);
	set(o, "failed_ios", json_integer((json_int_t)r->failed_ios), &rc);
	if (r->measured) {
		set(o, "elapsed_s", json_real(r->elapsed_s), &rc);
		set(o, "mb_per_s", json_real(r->mb_per_s), &rc);
		set(o, "iops", json_real(r->iops), &rc);
		set(o, "latency_ms", latency_json(r), &rc);
	}
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *dg_read_params_json(const struct dg_read_params *p)
{
	json_t *o = json_object();
	int rc = o ? 0 : -ENOMEM;

	set(o, "offset_bytes", json_integer((json_int_t)p->offset_bytes), &rc);
	set(o, "length_bytes", json_integer((json_int_t)p->length_bytes), &rc);
	set(o, "block_bytes", json_integer((json_int_t)p->block_bytes), &rc);
	set(o, "qd", json_integer((json_int_t)p->qd), &rc);
	set(o, "random", json_boolean(p->random), &rc);
	if (p->random) {
		set(o, "span_bytes", json_integer((json_int_t)p->span_bytes), &rc);
		set(o, "seed", json_integer((json_int_t)p->seed), &rc);
	}
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}
