/* SPDX-License-Identifier: MIT */
/*
 * dg_read_run() as a library call on the sim: backend in virtual time, against the truth of
 * model.h: a sequential stream at QD 8 runs at the outer zone's rate (within 2%), random 4 KiB
 * QD 1 reads average the expected random access time (within 5% over 2000 draws), the same
 * seed gives the same figures, a stop before the start reads nothing, the progress callback
 * hears the share submitted up to 1, and the engine's queue depth caps the plan's.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "diskgeo/model.h"
#include "diskgeo/read.h"

#define DRIVE "hgst-7k1000"

struct rig {
	struct dg_device *dev;
	struct dg_engine *e;
	struct dg_errors errors;
};

static void rig_open(struct rig *r, unsigned qd, uint32_t max_io)
{
	struct dg_engine_config cfg = {.kind = DG_ENGINE_SIM, .qd = qd, .max_io_bytes = max_io};
	char err[DG_ERRLEN] = "";

	memset(r, 0, sizeof(*r));
	if (dg_device_open("sim:" DRIVE, 0, &r->dev, NULL, err, sizeof(err)))
		fail_msg("dg_device_open: %s", err);
	if (dg_engine_open(r->dev, &cfg, &r->e, NULL, err, sizeof(err)))
		fail_msg("dg_engine_open: %s", err);
}

static void rig_close(struct rig *r)
{
	dg_engine_close(r->e);
	dg_device_close(r->dev);
	dg_errors_free(&r->errors);
}

static struct dg_read_result *run(struct rig *r, const struct dg_read_params *p,
				  volatile sig_atomic_t *stop, dg_progress_fn fn, void *arg)
{
	struct dg_read_result *res = NULL;

	assert_int_equal(dg_read_run(r->e, p, &r->errors, stop, fn, arg, &res), 0);
	assert_non_null(res);
	return res;
}

struct heard {
	unsigned calls;
	double last;
	bool backwards;
};

static void hear(void *arg, const char *phase, double fraction, double eta_s)
{
	struct heard *h = arg;

	assert_string_equal(phase, "read");
	assert_true(eta_s >= 0);
	h->backwards |= fraction < h->last;
	h->last = fraction;
	h->calls++;
}

static void test_sequential_rate(void **state)
{
	const struct dg_spec *spec;
	struct dg_read_params p = {.length_bytes = 256u << 20,
				   .span_bytes = 256u << 20,
				   .block_bytes = 1u << 20,
				   .qd = 8,
				   .seed = 1};
	volatile sig_atomic_t stop = 0;
	struct heard h = {0};
	struct rig r;

	(void)state;
	rig_open(&r, 8, 1u << 20);
	spec = dg_device_spec(r.dev);
	double truth = dg_truth_rate_mb_per_s(spec, 0, p.length_bytes);
	struct dg_read_result *res = run(&r, &p, &stop, hear, &h);

	assert_true(res->measured);
	assert_int_equal(res->bytes, p.length_bytes);
	assert_int_equal(res->ios, 256);
	assert_int_equal(res->failed_ios, 0);
	assert_string_equal(res->engine, "sim");
	if (fabs(res->mb_per_s / truth - 1) > 0.02)
		fail_msg("measured %.2f MB/s, truth %.2f MB/s", res->mb_per_s, truth);
	assert_true(res->min_ms <= res->p50_ms && res->p50_ms <= res->p99_ms &&
		    res->p99_ms <= res->max_ms);
	assert_true(h.calls > 0 && !h.backwards && h.last == 1.0);
	dg_read_result_free(res);
	rig_close(&r);
}

static void test_random_access_and_seed(void **state)
{
	struct dg_read_params p = {.block_bytes = 4096, .qd = 1, .random = true, .seed = 1};
	volatile sig_atomic_t stop = 0;
	struct rig r;

	(void)state;
	rig_open(&r, 1, 4096);
	p.span_bytes = dg_device_info(r.dev)->size_bytes / 4096 * 4096;
	p.length_bytes = 2000ull * 4096;
	double truth = dg_truth_random_ms(dg_device_spec(r.dev), 0, p.span_bytes, 4096);
	struct dg_read_result *a = run(&r, &p, &stop, NULL, NULL);
	if (fabs(a->mean_ms / truth - 1) > 0.05)
		fail_msg("mean access %.3f ms, truth %.3f ms", a->mean_ms, truth);
	assert_int_equal(a->ios, 2000);
	rig_close(&r);

	rig_open(&r, 1, 4096); /* a fresh drive: the same seed, the same figures */
	struct dg_read_result *b = run(&r, &p, &stop, NULL, NULL);
	assert_true(a->mean_ms == b->mean_ms && a->p99_ms == b->p99_ms);
	dg_read_result_free(b);
	rig_close(&r);

	p.seed = 2;
	rig_open(&r, 1, 4096);
	b = run(&r, &p, &stop, NULL, NULL);
	assert_true(a->mean_ms != b->mean_ms);
	dg_read_result_free(b);
	dg_read_result_free(a);
	rig_close(&r);
}

/* A stop before the start: nothing submitted, nothing measured, no failure. */
static void test_stopped(void **state)
{
	struct dg_read_params p = {
	    .length_bytes = 1u << 20, .span_bytes = 1u << 20, .block_bytes = 1u << 20, .qd = 1};
	volatile sig_atomic_t stop = 1;
	struct rig r;

	(void)state;
	rig_open(&r, 1, 1u << 20);
	struct dg_read_result *res = run(&r, &p, &stop, NULL, NULL);
	assert_false(res->measured);
	assert_int_equal(res->ios, 0);
	assert_string_equal(res->failure, "");
	dg_read_result_free(res);
	rig_close(&r);
}

/* The engine's queue depth caps the plan's, and the result says what ran. */
static void test_qd_capped(void **state)
{
	struct dg_read_params p = {
	    .length_bytes = 16u << 20, .span_bytes = 16u << 20, .block_bytes = 1u << 20, .qd = 32};
	volatile sig_atomic_t stop = 0;
	struct rig r;

	(void)state;
	rig_open(&r, 4, 1u << 20);
	struct dg_read_result *res = run(&r, &p, &stop, NULL, NULL);
	assert_int_equal(res->params.qd, 4);
	assert_int_equal(res->bytes, 16u << 20);
	dg_read_result_free(res);
	rig_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sequential_rate),
	    cmocka_unit_test(test_random_access_and_seed),
	    cmocka_unit_test(test_stopped),
	    cmocka_unit_test(test_qd_capped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
