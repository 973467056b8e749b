/* SPDX-License-Identifier: MIT */
/*
 * End-to-end tests of `diskgeo read` on a simulated drive (virtual time, so every number is
 * deterministic): the measured rate and access time against the model's truth, the JSON "read"
 * section's arithmetic, the seed's reproducibility, sector-suffixed sizes, and the refusals
 * (unaligned sizes, ranges past the end, bad options) with their exit codes.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "t_helpers.h"
#include "diskgeo/diskgeo.h"
#include "diskgeo/model.h"
#include "util.h"

#define DRIVE "hgst-7k1000"

static const char *binary = DG_BINARY_DIR "/diskgeo";
static char dir[] = "/tmp/dg_test_cli_read.XXXXXX";
static char json_path[128], out_path[128], err_path[128];

/* Runs `diskgeo read ARGS...` (NULL-terminated) with stdout and stderr in files; returns the
 * exit status (-1 when killed). */
static int run_read(const char *first, ...)
{
	const char *argv[32] = {"diskgeo", "read"};
	size_t n = 2;
	va_list ap;

	va_start(ap, first);
	for (const char *a = first; a && n < 31; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	unlink(json_path);
	return t_exec_files(binary, argv, out_path, err_path);
}

/* Asserts stderr holds exactly one "diskgeo: " line containing `needle`. */
static void assert_one_error_line(const char *needle)
{
	char err[4096];
	const char *nl;

	t_slurp(err_path, err, sizeof(err));
	assert_true(strncmp(err, "diskgeo: ", 9) == 0);
	nl = strchr(err, '\n');
	assert_non_null(nl);
	assert_int_equal(nl[1], '\0');
	if (!strstr(err, needle))
		fail_msg("stderr '%s' lacks '%s'", err, needle);
}

static json_t *load_read(json_t **doc)
{
	json_error_t jerr;

	*doc = json_load_file(json_path, 0, &jerr);
	if (!*doc)
		fail_msg("%s: %s", json_path, jerr.text);
	json_t *r = json_object_get(*doc, "read");
	assert_non_null(r);
	return r;
}

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_number(v))
		fail_msg("'%s' is missing or not a number", key);
	return json_number_value(v);
}

/* The arithmetic every "read" section must satisfy. */
static void check_section(json_t *r, double want_bytes, double want_ios)
{
	json_t *lat = json_object_get(r, "latency_ms");

	assert_true(num(r, "bytes") == want_bytes);
	assert_true(num(r, "ios") == want_ios);
	assert_true(num(r, "failed_ios") == 0);
	assert_true(fabs(num(r, "mb_per_s") - want_bytes / 1e6 / num(r, "elapsed_s")) <
		    1e-9 * num(r, "mb_per_s"));
	assert_true(fabs(num(r, "iops") - want_ios / num(r, "elapsed_s")) < 1e-9 * num(r, "iops"));
	assert_non_null(lat);
	assert_true(num(lat, "min") > 0);
	assert_true(num(lat, "min") <= num(lat, "p50"));
	assert_true(num(lat, "p50") <= num(lat, "p99"));
	assert_true(num(lat, "p99") <= num(lat, "max"));
	assert_true(num(lat, "min") <= num(lat, "mean") && num(lat, "mean") <= num(lat, "max"));
}

static struct dg_spec *spec;

static int setup(void **state)
{
	char err[DG_ERRLEN];

	if (!mkdtemp(dir))
		return -1;
	snprintf(json_path, sizeof(json_path), "%s/read.json", dir);
	snprintf(out_path, sizeof(out_path), "%s/stdout", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	return dg_spec_load(DRIVE, &spec, NULL, err, sizeof(err)) ? -1 : 0;
}

static int teardown(void **state)
{
	unlink(json_path);
	unlink(out_path);
	unlink(err_path);
	rmdir(dir);
	dg_spec_free(spec);
	return 0;
}

/* Streaming the outer 256 MiB at QD 8 runs at the outer zone's true rate; the first access
 * (seek + rotation) is under 1% of the time. */
static void test_sequential_rate(void **state)
{
	json_t *doc, *r;
	double truth = dg_truth_rate_mb_per_s(spec, 0, 256u << 20);

	assert_int_equal(run_read("sim:" DRIVE, "--length", "256M", "--json", json_path, NULL), 0);
	r = load_read(&doc);
	check_section(r, 256.0 * 1048576, 256);
	assert_string_equal(json_string_value(json_object_get(r, "pattern")), "sequential");
	assert_string_equal(json_string_value(json_object_get(r, "engine")), "sim");
	assert_true(num(r, "qd") == 8 && num(r, "block_bytes") == 1048576);
	if (fabs(num(r, "mb_per_s") / truth - 1) > 0.02)
		fail_msg("measured %.2f MB/s, truth %.2f MB/s", num(r, "mb_per_s"), truth);
	json_t *run = json_object_get(doc, "run");
	assert_true(json_is_true(json_object_get(run, "complete")));
	assert_true(num(json_object_get(run, "parameters"), "length_bytes") == 256.0 * 1048576);
	json_decref(doc);
}

/* Random 4 KiB reads at QD 1 over the whole drive: the mean latency is the model's expected
 * random access time (overhead + mean move + half a turn + transfer), within sampling error
 * of 2000 draws. The same seed gives the same run; another seed another. */
static void test_random_access_and_seed(void **state)
{
	json_t *doc, *r;
	double truth = dg_truth_random_ms(spec, 0, dg_spec_capacity_bytes(spec), 4096);
	char *first;

	assert_int_equal(
	    run_read("sim:" DRIVE, "--random", "--length", "8000k", "--json", json_path, NULL), 0);
	r = load_read(&doc);
	check_section(r, 8000.0 * 1024, 2000);
	assert_true(num(r, "qd") == 1 && num(r, "block_bytes") == 4096);
	double mean = num(json_object_get(r, "latency_ms"), "mean");
	if (fabs(mean / truth - 1) > 0.05)
		fail_msg("mean access %.3f ms, truth %.3f ms", mean, truth);
	first = json_dumps(r, JSON_SORT_KEYS);
	json_decref(doc);

	assert_int_equal(run_read("sim:" DRIVE, "--random", "--length", "8000k", "--seed", "1",
				  "--json", json_path, NULL),
			 0);
	r = load_read(&doc);
	char *again = json_dumps(r, JSON_SORT_KEYS);
	assert_string_equal(first, again); /* default seed is 1; virtual time is exact */
	free(again);
	json_decref(doc);

	assert_int_equal(run_read("sim:" DRIVE, "--random", "--length", "8000k", "--seed", "2",
				  "--json", json_path, NULL),
			 0);
	r = load_read(&doc);
	again = json_dumps(r, JSON_SORT_KEYS);
	assert_string_not_equal(first, again);
	free(again);
	free(first);
	json_decref(doc);
}

/* "s" means the device's logical sector; an odd-sized last block is read short of a block. */
static void test_sector_sizes(void **state)
{
	json_t *doc, *r;
	uint32_t sector = dg_spec_sector_bytes(spec);

	assert_int_equal(run_read("sim:" DRIVE, "--offset", "8s", "--length", "20s", "--block-size",
				  "8s", "--qd", "2", "--json", json_path, NULL),
			 0);
	r = load_read(&doc);
	check_section(r, 20.0 * sector, 3);
	assert_true(num(r, "offset_bytes") == 8.0 * sector);
	assert_true(num(r, "block_bytes") == 8.0 * sector);
	json_decref(doc);
}

/* A drive whose LBAs 20480..20495 fail: the 1 MiB read over them fails with EIO, is listed in
 * errors[] and counted, the rest is read, and the exit status is 3. */
static void test_io_error(void **state)
{
	char spec_path[160];
	json_error_t jerr;
	json_t *doc, *r, *defects, *errors;

	snprintf(spec_path, sizeof(spec_path), "%s/bad.json", dir);
	doc = json_load_file(DG_SOURCE_DIR "/presets/" DRIVE ".json", 0, &jerr);
	assert_non_null(doc);
	defects = json_pack("[{s:i, s:i, s:s, s:f}]", "lba", 20480, "count", 16, "kind", "error",
			    "extra_ms", 100.0);
	assert_int_equal(json_object_set_new(doc, "defects", defects), 0);
	assert_int_equal(json_object_set_new(doc, "name", json_string("bad")), 0);
	assert_int_equal(json_dump_file(doc, spec_path, 0), 0);
	json_decref(doc);

	char dev[200];
	snprintf(dev, sizeof(dev), "sim:%s", spec_path);
	assert_int_equal(run_read(dev, "--length", "32M", "--json", json_path, NULL), DG_EXIT_IO);
	r = load_read(&doc);
	assert_true(num(r, "failed_ios") == 1);
	assert_true(num(r, "ios") == 31);
	assert_true(num(r, "bytes") == 31.0 * 1048576);
	errors = json_object_get(doc, "errors");
	assert_int_equal(json_array_size(errors), 1);
	assert_true(num(json_array_get(errors, 0), "offset_bytes") == 10.0 * 1048576);
	assert_true(num(json_array_get(errors, 0), "length_bytes") == 1048576);
	assert_true(num(json_array_get(errors, 0), "errno") == EIO);
	json_decref(doc);
	unlink(spec_path);
}

/* Human report on stdout when no JSON goes there. */
static void test_text_report(void **state)
{
	char out[4096];

	assert_int_equal(run_read("sim:" DRIVE, "--length", "16M", NULL), 0);
	t_slurp(out_path, out, sizeof(out));
	assert_non_null(strstr(out, "MB/s"));
	assert_non_null(strstr(out, "IOPS"));
	assert_non_null(strstr(out, "p99"));
}

static const struct {
	const char *args[8];
	int status;
	const char *needle;
} refusals[] = {
    {{"sim:" DRIVE, "--offset", "1000", NULL}, DG_EXIT_USAGE, "not a multiple"},
    {{"sim:" DRIVE, "--length", "1001", NULL}, DG_EXIT_USAGE, "not a multiple"},
    {{"sim:" DRIVE, "--block-size", "3000", NULL}, DG_EXIT_USAGE, "not a multiple"},
    {{"sim:" DRIVE, "--block-size", "65M", NULL}, DG_EXIT_USAGE, "--block-size"},
    {{"sim:" DRIVE, "--offset", "2T", NULL}, DG_EXIT_USAGE, "past the end"},
    {{"sim:" DRIVE, "--offset", "931G", "--length", "1G", NULL}, DG_EXIT_USAGE, "past the end"},
    {{"sim:" DRIVE, "--random", "--span", "2T", NULL}, DG_EXIT_USAGE, "past the end"},
    {{"sim:" DRIVE, "--span", "1G", NULL}, DG_EXIT_USAGE, "--random"},
    {{"sim:" DRIVE, "--length", "0", NULL}, DG_EXIT_USAGE, "at least one sector"},
    {{"sim:" DRIVE, "--length", "ten", NULL}, DG_EXIT_USAGE, "not a size"},
    {{"sim:" DRIVE, "--qd", "0", NULL}, DG_EXIT_USAGE, "--qd"},
    {{"sim:" DRIVE, "--qd", "257", NULL}, DG_EXIT_USAGE, "--qd"},
    {{"sim:" DRIVE, "--engine", "io_uring", NULL}, DG_EXIT_USAGE, "cannot run"},
    {{"sim:" DRIVE, "--engine", "aio", NULL}, DG_EXIT_USAGE, "unknown engine"},
    {{"sim:" DRIVE, "--frobnicate", NULL}, DG_EXIT_USAGE, "unknown option"},
    {{"sim:" DRIVE, "--offset", NULL}, DG_EXIT_USAGE, "needs an argument"},
    {{NULL}, DG_EXIT_USAGE, "DEVICE is missing"},
    {{"sim:" DRIVE, "sim:" DRIVE, NULL}, DG_EXIT_USAGE, "one DEVICE"},
    {{"/nonexistent/disk", NULL}, DG_EXIT_DEVICE, "/nonexistent/disk"},
    {{"sim:" DRIVE, "--json", "/nonexistent/dir/x.json", NULL}, DG_EXIT_USAGE, "/nonexistent"},
};

static void test_refusals(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(refusals); i++) {
		const char *const *a = refusals[i].args;
		int st = run_read(a[0], a[1], a[2], a[3], a[4], a[5], a[6], NULL);
		if (st != refusals[i].status)
			fail_msg("case %zu (%s %s): exit %d, want %d", i, a[0] ? a[0] : "",
				 a[1] ? a[1] : "", st, refusals[i].status);
		assert_one_error_line(refusals[i].needle);
		assert_int_equal(access(json_path, F_OK), -1); /* nothing written */
	}
}

static void test_help(void **state)
{
	char out[8192];

	assert_int_equal(run_read("--help", NULL), 0);
	t_slurp(out_path, out, sizeof(out));
	assert_non_null(strstr(out, "--block-size"));
	assert_non_null(strstr(out, "--random"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sequential_rate),
	    cmocka_unit_test(test_random_access_and_seed),
	    cmocka_unit_test(test_sector_sizes),
	    cmocka_unit_test(test_text_report),
	    cmocka_unit_test(test_io_error),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_help),
	};

	if (access(binary, X_OK)) {
		fprintf(stderr, "%s not built\n", binary);
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
