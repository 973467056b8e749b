/* SPDX-License-Identifier: MIT */
/*
 * The cache and command-queueing figures (src/geocache*.c) against the truth of the drive spec
 * (dg_truth_geocache), on sim: drives in virtual time (deterministic): every preset, the test
 * variants in tests/data/geocache-*.json (look-behind, NCQ depth 2, 4, 8, 16, no read-ahead,
 * a small read-ahead, one shorter than the probe block, the zoo's worst jitter with background
 * work, 2.5 times that jitter with background work every 2 s) and 14 zoo drives. Bounds (issue 17):
 * read-ahead within 10 % (exactly 0 when the drive has none), look-behind exact, cache size within
 * 25 %, one segment (our model's), hit time within 0.02 ms, NCQ reorders and depth exact (depth 1
 * when it does not reorder; 32, the engine's depth, is the largest that can be seen), and at most
 * 60 s of device time. Also: bad options, a stop request, an engine of queue depth 1, a budget too
 * small, and the JSON shape.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "diskgeo/geocache.h"
#include "diskgeo/model.h"
#include "util.h"
#include "t_helpers.h"

struct rig {
	struct dg_device *dev;
	struct dg_engine *e;
	struct dg_spec *spec;
	struct dg_errors errors;
	struct dg_geocache_opts o;
};

/* Opens `what` (a preset name or a spec file) as sim: with an engine of depth `qd`. */
static void rig_open(struct rig *g, const char *what, unsigned qd)
{
	struct dg_engine_config cfg = {.kind = DG_ENGINE_SIM, .qd = qd, .max_io_bytes = 1u << 20};
	char err[DG_ERRLEN] = "", path[4200];

	memset(g, 0, sizeof(*g));
	snprintf(path, sizeof(path), "sim:%s", what);
	int rc = dg_spec_load(what, &g->spec, NULL, err, sizeof(err));
	if (rc == 0)
		rc = dg_device_open(path, 0, &g->dev, NULL, err, sizeof(err));
	if (rc == 0)
		rc = dg_engine_open(g->dev, &cfg, &g->e, NULL, err, sizeof(err));
	if (rc)
		print_message("%s: %s\n", what, err);
	assert_int_equal(rc, 0);
	dg_geocache_opts_default(&g->o, dg_device_info(g->dev)->size_bytes,
				 dg_device_info(g->dev)->logical_sector_bytes);
	g->o.errors = &g->errors;
	g->o.nominal_rpm = dg_device_nominal_rpm(g->dev);
}

static void rig_close(struct rig *g)
{
	dg_engine_close(g->e);
	dg_device_close(g->dev);
	dg_spec_free(g->spec);
	dg_errors_free(&g->errors);
}

/* Every bound of the file comment; prints the figures first so that a failure says why. */
static void check(const char *name, const struct dg_spec *spec, const struct dg_geocache *r,
		  unsigned engine_qd)
{
	struct dg_truth_geocache t;

	dg_truth_geocache(spec, r->block_bytes, &t);
	print_message("%-22s ra %.0f/%llu lb %d/%d size %.0f/%llu seg %d hit %.3f/%.3f ncq %d:%d/%u"
		      " device %.1f s\n",
		      name, r->read_ahead_bytes, (unsigned long long)t.read_ahead_bytes,
		      r->look_behind, t.look_behind, r->size_bytes,
		      (unsigned long long)t.cache_bytes, r->segments, r->hit_ms, t.hit_ms,
		      r->ncq_reorders, r->ncq_depth, t.ncq_depth, (double)r->device_time_ns / 1e9);
	if (t.read_ahead_bytes == 0)
		assert_true(r->read_ahead_bytes == 0);
	else
		assert_true(fabs(r->read_ahead_bytes / (double)t.read_ahead_bytes - 1) <= 0.10);
	assert_int_equal(r->look_behind, t.look_behind);
	assert_true(fabs(r->size_bytes / (double)t.cache_bytes - 1) <= 0.25);
	assert_int_equal(r->segments, (int)t.segments);
	assert_true(fabs(r->hit_ms - t.hit_ms) <= 0.02);
	assert_int_equal(r->ncq_reorders, t.ncq_depth > 1);
	assert_int_equal(r->ncq_depth, (int)(t.ncq_depth < engine_qd ? t.ncq_depth : engine_qd));
	assert_true(r->device_time_ns <= 60ull * 1000000000ull);
}

static void measure(const char *what, const char *name)
{
	struct rig g;
	struct dg_geocache r;

	rig_open(&g, what, DG_GEOCACHE_MAX_QD);
	assert_int_equal(dg_geocache_run(g.e, &g.o, &r), 0);
	check(name ? name : what, g.spec, &r, DG_GEOCACHE_MAX_QD);
	rig_close(&g);
}

static void test_presets(void **state)
{
	const char *const *names;
	size_t n = dg_spec_presets(&names);

	(void)state;
	assert_true(n >= 6);
	for (size_t i = 0; i < t_drives(n, 2); i++)
		measure(names[i], NULL);
}

static void test_variants(void **state)
{
	static const char *const files[] = {
	    "geocache-lb-ncq4", "geocache-ncq8-ra0", "geocache-noisy", "geocache-small-ra",
	    "geocache-stress",	"geocache-tiny-ra",  "geocache-seg8"};
	char path[4096];

	(void)state;
	for (size_t i = 0; i < t_drives(ARRAY_SIZE(files), 2); i++) {
		snprintf(path, sizeof(path), "%s/tests/data/%s.json", DG_SOURCE_DIR, files[i]);
		measure(path, files[i]);
	}
}

/* 14 zoo drives (seed 7 is one where rotation.c finds no period: the stated rpm serves). */
static void test_zoo(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= t_drives(14, 2); seed++) {
		char path[] = "/tmp/test-geocache-XXXXXX.json", name[32], *text = NULL;
		int fd = mkstemps(path, 5);
		assert_true(fd >= 0);
		assert_int_equal(dg_spec_random(seed, &text), 0);
		size_t len = strlen(text);
		assert_int_equal(write(fd, text, len), (ssize_t)len);
		close(fd);
		free(text);
		snprintf(name, sizeof(name), "zoo-%llu", (unsigned long long)seed);
		measure(path, name);
		unlink(path);
	}
}

static void test_bad_options(void **state)
{
	struct rig g;
	struct dg_geocache r;

	(void)state;
	rig_open(&g, "cheetah-15k", 4);
	struct dg_geocache_opts o = g.o;
	o.end_bytes = o.start_bytes + (512ull << 20); /* below 1 GiB */
	assert_int_equal(dg_geocache_run(g.e, &o, &r), -EINVAL);
	o = g.o;
	o.block_bytes = 1000;
	assert_int_equal(dg_geocache_run(g.e, &o, &r), -EINVAL);
	o = g.o;
	o.end_bytes = o.start_bytes;
	assert_int_equal(dg_geocache_run(g.e, &o, &r), -EINVAL);
	assert_true(isnan(r.read_ahead_bytes) && r.look_behind == -1 && r.ncq_depth == -1);
	rig_close(&g);
}

static void test_stop(void **state)
{
	volatile sig_atomic_t stop = 1;
	struct rig g;
	struct dg_geocache r;

	(void)state;
	rig_open(&g, "hgst-7k1000", 4);
	g.o.stop = &stop;
	assert_int_equal(dg_geocache_run(g.e, &g.o, &r), -EINTR);
	assert_true(isnan(r.size_bytes) && r.segments == -1);
	rig_close(&g);
}

/* Queue depth 1: no NCQ figure (a note), the cache figures still right. */
static void test_qd1(void **state)
{
	struct rig g;
	struct dg_geocache r;

	(void)state;
	rig_open(&g, "exos-x16-16tb", 1);
	assert_int_equal(dg_geocache_run(g.e, &g.o, &r), 0);
	assert_int_equal(r.ncq_reorders, -1);
	assert_int_equal(r.ncq_points, 0u);
	assert_true(r.notes_n >= 1 && strstr(r.notes[0], "queue depth is 1"));
	r.ncq_reorders = 1;
	r.ncq_depth = 32;
	check("exos-x16-16tb qd1", g.spec, &r, DG_GEOCACHE_MAX_QD);
	json_t *j = dg_geocache_json(&r);
	assert_non_null(j);
	assert_null(json_object_get(j, "ncq"));
	json_decref(j);
	rig_close(&g);
}

/* A budget too small for the later tests: they are absent with a note, never guessed. */
static void test_budget(void **state)
{
	struct rig g;
	struct dg_geocache r;

	(void)state;
	rig_open(&g, "wd-red-4tb", 32);
	g.o.time_budget_ns = 3ull * 1000000000ull;
	g.o.period_ms = 60000.0 / 5400;
	assert_int_equal(dg_geocache_run(g.e, &g.o, &r), 0);
	assert_true(isnan(r.size_bytes));
	assert_int_equal(r.ncq_reorders, -1);
	assert_true(r.notes_n >= 2);
	assert_true(strstr(r.notes[r.notes_n - 1], "cache size not measured") != NULL);
	/* what did run is right */
	assert_int_equal(r.look_behind, 0);
	json_t *j = dg_geocache_json(&r), *c = json_object_get(j, "cache");
	assert_non_null(c);
	assert_null(json_object_get(c, "size_bytes"));
	assert_true(json_is_boolean(json_object_get(c, "look_behind")));
	json_decref(j);
	rig_close(&g);
}

static void test_json(void **state)
{
	struct rig g;
	struct dg_geocache r;

	(void)state;
	rig_open(&g, "exos-x16-16tb", 32);
	assert_int_equal(dg_geocache_run(g.e, &g.o, &r), 0);
	json_t *j = dg_geocache_json(&r);
	assert_non_null(j);
	json_t *c = json_object_get(j, "cache"), *q = json_object_get(j, "ncq");
	assert_true(json_is_integer(json_object_get(c, "read_ahead_bytes")));
	assert_true(json_is_true(json_object_get(c, "look_behind")));
	assert_int_equal(json_integer_value(json_object_get(c, "segments")), 1);
	assert_true(json_is_integer(json_object_get(c, "size_bytes")));
	assert_true(json_is_real(json_object_get(c, "hit_ms")));
	assert_true(json_is_true(json_object_get(q, "reorders")));
	assert_int_equal(json_integer_value(json_object_get(q, "depth")), 32);
	assert_int_equal(json_array_size(json_object_get(q, "qd")),
			 json_array_size(json_object_get(q, "iops")));
	assert_true(json_is_real(json_object_get(j, "device_time_s")));
	assert_true(json_is_array(json_object_get(j, "notes")));
	json_decref(j);
	rig_close(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_presets), cmocka_unit_test(test_variants),
	    cmocka_unit_test(test_zoo),	    cmocka_unit_test(test_bad_options),
	    cmocka_unit_test(test_stop),    cmocka_unit_test(test_qd1),
	    cmocka_unit_test(test_budget),  cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
