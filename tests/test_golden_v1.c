/* SPDX-License-Identifier: MIT */
/*
 * Version 1 drives time exactly as before drive model v2 (issue 12): copies of the four presets
 * as they were before v2 (tests/golden/v1/NAME.json) are driven through a fixed, deterministic
 * sequence of requests — through dg_drive directly (sequential, queued arrivals, random QD1 and
 * QD8 batches, writes, cache hits and read-ahead continuations, idle gaps, single sectors,
 * defects) and through the sim engine at QD 1 and 8 — and every completion time (ns) and result
 * must equal the recorded one (NAME.trace); `diskgeo model --json` must give every recorded key
 * (NAME.model.json) the same value (numbers within 1e-9 relative).
 * DG_GOLDEN_WRITE=1 rewrites the golden files (only ever from the pre-v2 model).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "t_helpers.h"
#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "diskgeo/model.h"
#include "util.h"

static const char *const names[] = {"cheetah-15k", "hgst-7k1000", "seagate-st4000vn006",
				    "wd-red-4tb"};

struct trace {
	char *buf;
	size_t len, cap;
};

static void emit(struct trace *t, int64_t result, uint64_t ns)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "%" PRId64 " %" PRIu64 "\n", result, ns);

	if (t->len + (size_t)n + 1 > t->cap) {
		t->cap = t->cap ? t->cap * 2 : 65536;
		t->buf = realloc(t->buf, t->cap);
		assert_non_null(t->buf);
	}
	memcpy(t->buf + t->len, line, (size_t)n + 1);
	t->len += (size_t)n;
}

static void spec_path(const char *name, const char *ext, char *buf, size_t len)
{
	snprintf(buf, len, "%s/tests/golden/v1/%s%s", DG_SOURCE_DIR, name, ext);
}

/* One command through the drive at `arrive`; returns its completion. */
static uint64_t one(struct trace *tr, struct dg_drive *d, uint64_t arrive, bool write, uint64_t lba,
		    uint32_t n)
{
	uint64_t done = 0;
	int64_t r = dg_drive_access(d, arrive, write, lba, n, &done);

	emit(tr, r, done);
	return done;
}

static void drive_sequence(const char *path, struct trace *tr)
{
	struct dg_spec *spec = NULL;
	struct dg_drive *d = NULL;
	char err[DG_ERRLEN] = "";
	uint64_t seed = 12, t = 0;

	assert_int_equal(dg_spec_load(path, &spec, NULL, err, sizeof(err)), 0);
	assert_int_equal(dg_drive_new(spec, &d), 0);
	uint32_t sb = dg_spec_sector_bytes(spec);
	uint64_t cap = dg_spec_capacity_bytes(spec) / sb;
	uint32_t mib = (1u << 20) / sb, k4 = 4096 / sb ? 4096 / sb : 1;
	uint64_t places[3] = {0, cap / 2 / k4 * k4, (cap - 64 * (uint64_t)mib) / k4 * k4};

	/* sequential 1 MiB at QD1 at three places */
	for (int p = 0; p < 3; p++)
		for (uint32_t i = 0; i < 64; i++)
			t = one(tr, d, t, false, places[p] + (uint64_t)i * mib, mib);
	/* sequential 256 KiB pieces arriving four at a time, pairs swapped */
	uint64_t base = cap / 3 / k4 * k4, q = mib / 4;
	for (uint32_t g = 0; g < 8; g++) {
		uint64_t arrive = t, last = t;
		static const int order[4] = {0, 2, 1, 3};
		for (int i = 0; i < 4; i++) {
			uint64_t done =
			    one(tr, d, arrive, false, base + (g * 4 + order[i]) * q, (uint32_t)q);
			last = done > last ? done : last;
		}
		t = last;
	}
	/* random 4 KiB at QD1, then in batches of 8 arriving together */
	for (int i = 0; i < 300; i++)
		t = one(tr, d, t, false, dg_splitmix64(&seed) % (cap / k4) * k4, k4);
	for (int b = 0; b < 40; b++) {
		uint64_t last = t;
		for (int i = 0; i < 8; i++) {
			uint64_t done =
			    one(tr, d, t, false, dg_splitmix64(&seed) % (cap / k4) * k4, k4);
			last = done > last ? done : last;
		}
		t = last;
	}
	/* writes: random 4 KiB, then sequential 64 KiB */
	for (int i = 0; i < 50; i++)
		t = one(tr, d, t, true, dg_splitmix64(&seed) % (cap / k4) * k4, k4);
	for (uint32_t i = 0; i < 20; i++)
		t = one(tr, d, t, true, base + (uint64_t)i * 16 * k4, 16 * k4);
	/* cache hits, read-ahead reach, idle gaps, single sectors */
	uint64_t x = cap / 5 / k4 * k4;
	t = one(tr, d, t, false, x, 16 * k4);
	t = one(tr, d, t, false, x, 16 * k4);		  /* re-read: hit */
	t = one(tr, d, t, false, x + 8 * k4, 16 * k4);	  /* part hit */
	t = one(tr, d, t, false, x + mib / 2, k4);	  /* ahead, within reach */
	t = one(tr, d, t + 50000000, false, x + mib, k4); /* after an idle gap */
	t = one(tr, d, t + 3000000, false, x + 64 * (uint64_t)mib, k4);
	for (int i = 0; i < 40; i++)
		t = one(tr, d, t + (uint64_t)(dg_splitmix64(&seed) % 2000000), false,
			dg_splitmix64(&seed) % cap, 1);
	/* defects from the spec file: across, into, at */
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je), *dv;
	size_t i;
	assert_non_null(root);
	json_array_foreach(json_object_get(root, "defects"), i, dv)
	{
		uint64_t lba = (uint64_t)json_integer_value(json_object_get(dv, "lba"));
		uint64_t n = (uint64_t)json_integer_value(json_object_get(dv, "count"));
		uint64_t from = lba > 64 ? lba - 64 : 0;
		t = one(tr, d, t, false, from, (uint32_t)(lba - from + n + 64));
		t = one(tr, d, t, false, from, (uint32_t)(lba - from));
		t = one(tr, d, t, false, lba + n, 64);
		t = one(tr, d, t, false, lba, 1);
	}
	json_decref(root);
	dg_drive_free(d);
	dg_spec_free(spec);
}

static void engine_sequence(const char *path, unsigned qd, struct trace *tr)
{
	char dev_path[600], err[DG_ERRLEN] = "";
	struct dg_device *dev = NULL;
	struct dg_engine *e = NULL;
	struct dg_engine_config cfg = {.kind = DG_ENGINE_SIM, .qd = qd, .max_io_bytes = 1u << 20};
	struct dg_completion c[16];
	uint64_t seed = 99 + qd;

	snprintf(dev_path, sizeof(dev_path), "sim:%s", path);
	assert_int_equal(dg_device_open(dev_path, 0, &dev, NULL, err, sizeof(err)), 0);
	assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), 0);
	uint64_t cap = dg_device_info(dev)->size_bytes;
	/* 200 random 4 KiB reads, then 100 sequential 128 KiB, keeping qd in flight */
	for (int phase = 0; phase < 2; phase++) {
		int total = phase ? 100 : 200, sent = 0, got = 0;
		uint64_t seq = cap / 7 / 4096 * 4096;
		while (got < total) {
			while (sent < total && dg_engine_free_slots(e) > 0) {
				struct dg_io io = {.op = DG_IO_READ, .tag = (uint64_t)sent};
				if (phase) {
					io.offset_bytes = seq + (uint64_t)sent * 131072;
					io.length_bytes = 131072;
				} else {
					io.offset_bytes =
					    dg_splitmix64(&seed) % (cap / 4096) * 4096;
					io.length_bytes = 4096;
				}
				assert_int_equal(dg_engine_submit(e, &io, 1), 1);
				sent++;
			}
			int n = dg_engine_reap(e, c, 1, 16);
			assert_true(n > 0);
			for (int k = 0; k < n; k++)
				emit(tr, c[k].result, c[k].complete_ns);
			got += n;
		}
	}
	dg_engine_close(e);
	dg_device_close(dev);
}

static void check_trace(const char *name)
{
	char path[512], gpath[512];
	struct trace tr = {0};

	spec_path(name, ".json", path, sizeof(path));
	spec_path(name, ".trace", gpath, sizeof(gpath));
	drive_sequence(path, &tr);
	engine_sequence(path, 1, &tr);
	engine_sequence(path, 8, &tr);
	if (getenv("DG_GOLDEN_WRITE")) {
		FILE *f = fopen(gpath, "w");
		assert_non_null(f);
		fputs(tr.buf, f);
		fclose(f);
	}
	FILE *f = fopen(gpath, "r");
	assert_non_null(f);
	char *want = calloc(1, tr.len + 2);
	assert_non_null(want);
	size_t got = fread(want, 1, tr.len + 1, f);
	fclose(f);
	/* first differing line, for the message */
	if (got != tr.len || memcmp(want, tr.buf, tr.len)) {
		size_t line = 1;
		for (size_t k = 0; k < tr.len && k < got && want[k] == tr.buf[k]; k++)
			line += want[k] == '\n';
		print_message("%s: trace differs from %s at line %zu\n", name, gpath, line);
	}
	assert_int_equal(got, tr.len);
	assert_memory_equal(want, tr.buf, tr.len);
	free(want);
	free(tr.buf);
}

/* Every key of `want` is in `have` with the same value (numbers within 1e-9 relative). */
static int json_subset(const json_t *want, const json_t *have, const char *where)
{
	if (json_is_number(want)) {
		if (!json_is_number(have))
			goto differ;
		double a = json_number_value(want), b = json_number_value(have);
		if (fabs(a - b) > 1e-9 * fmax(fabs(a), fabs(b)))
			goto differ;
		return 0;
	}
	if (json_is_object(want)) {
		const char *k;
		json_t *v;
		if (!json_is_object(have))
			goto differ;
		json_object_foreach((json_t *)want, k, v)
		{
			if (!strcmp(k, "tool"))
				continue;
			if (json_subset(v, json_object_get(have, k), k))
				return -1;
		}
		return 0;
	}
	if (json_is_array(want)) {
		if (!json_is_array(have) || json_array_size(want) != json_array_size(have))
			goto differ;
		for (size_t i = 0; i < json_array_size(want); i++)
			if (json_subset(json_array_get(want, i), json_array_get(have, i), where))
				return -1;
		return 0;
	}
	if (json_equal((json_t *)want, (json_t *)have))
		return 0;
differ:
	print_message("model JSON differs at key '%s'\n", where);
	return -1;
}

static void check_model(const char *name)
{
	char path[512], gpath[512], out[] = "/tmp/dg-golden-XXXXXX";
	char bin[512], outf[600], errf[600];
	int fd = mkstemp(out);

	assert_true(fd >= 0);
	close(fd);
	snprintf(outf, sizeof(outf), "%s", out);
	snprintf(errf, sizeof(errf), "%s.err", out);
	snprintf(bin, sizeof(bin), "%s/diskgeo", DG_BINARY_DIR);
	spec_path(name, ".json", path, sizeof(path));
	spec_path(name, ".model.json", gpath, sizeof(gpath));
	const char *argv[] = {bin, "model", path, "--json", "-", NULL};
	assert_int_equal(t_exec_files(bin, argv, outf, errf), 0);
	json_error_t je;
	json_t *have = json_load_file(outf, 0, &je);
	assert_non_null(have);
	if (getenv("DG_GOLDEN_WRITE"))
		assert_int_equal(json_dump_file(have, gpath, JSON_INDENT(1) | JSON_SORT_KEYS), 0);
	json_t *want = json_load_file(gpath, 0, &je);
	assert_non_null(want);
	assert_int_equal(json_subset(want, have, "(top)"), 0);
	json_decref(want);
	json_decref(have);
	unlink(outf);
	unlink(errf);
}

static void test_traces(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		check_trace(names[i]);
}

static void test_model_json(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		check_model(names[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_traces),
	    cmocka_unit_test(test_model_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
