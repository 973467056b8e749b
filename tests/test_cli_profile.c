/* SPDX-License-Identifier: MIT */
/*
 * End-to-end tests of `diskgeo profile` on simulated drives (virtual time: deterministic): the
 * one document it writes holds every section, and each figure agrees with the spec's truth —
 * zone count and rates, rpm, track-to-track / average / full-stroke seek, span IOPS — at the
 * accuracy the measurement issues promise; the default run of a 4 TB 5400 rpm drive stays within
 * its 180 s device-time budget; the CSV files carry the JSON keys as headers; refusals exit 1
 * before anything is measured or written.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "t_helpers.h"
#include "diskgeo/diskgeo.h"
#include "diskgeo/model.h"
#include "diskgeo/seek.h"
#include "util.h"

static const char *binary = DG_BINARY_DIR "/diskgeo";
static char dir[] = "/tmp/dg_test_cli_profile.XXXXXX";
static char json_path[160], out_path[160], err_path[160], csv_dir[160];

static int profile(const char *const *extra)
{
	const char *argv[40] = {"diskgeo", "profile"};
	size_t n = 2;

	for (; *extra && n < 39; extra++)
		argv[n++] = *extra;
	argv[n] = NULL;
	return t_exec_files(binary, argv, out_path, err_path);
}

static double num(json_t *doc, const char *path)
{
	json_t *v = json_object_get(doc, path);

	assert_non_null(v);
	assert_true(json_is_number(v));
	return json_number_value(v);
}

static double rel(double got, double want)
{
	return fabs(got - want) / want;
}

/* The CSV files of a profile of `spec` with `nspans` spans: header rows are the JSON keys, and
 * iops.csv holds one row per span, its rate against the truth as in the JSON. */
static void check_csvs(const struct dg_spec *spec, size_t nspans)
{
	/* CSV files: header rows are the JSON keys */
	static const struct {
		const char *file, *header;
	} csvs[] = {
	    {"bandwidth.csv", "offset_bytes,length_bytes,mb_per_s"},
	    {"zones.csv", "start_bytes,end_bytes,mb_per_s"},
	    {"seek.csv", "distance_bytes,samples,min_ms,median_ms,mean_ms,seek_ms"},
	    {"iops.csv", "start_bytes,span_bytes,block_bytes,iops,mean_ms,samples"},
	};
	for (size_t k = 0; k < ARRAY_SIZE(csvs); k++) {
		char path[256], text[256];

		snprintf(path, sizeof(path), "%s/%s", csv_dir, csvs[k].file);
		t_slurp(path, text, sizeof(text));
		assert_memory_equal(text, csvs[k].header, strlen(csvs[k].header));
	}

	/* iops.csv: one row per span, the rate against the truth as in the JSON */
	{
		char path[256], line[256];
		unsigned long long start, span;
		unsigned block, samples, rows = 0;
		double iops, mean_ms;
		FILE *f;

		snprintf(path, sizeof(path), "%s/iops.csv", csv_dir);
		f = fopen(path, "r");
		assert_non_null(f);
		assert_non_null(fgets(line, sizeof(line), f)); /* header, checked above */
		while (fgets(line, sizeof(line), f)) {
			assert_int_equal(sscanf(line, "%llu,%llu,%u,%lf,%lf,%u", &start, &span,
						&block, &iops, &mean_ms, &samples),
					 6);
			double truth_ms = dg_truth_random_ms(spec, start, span, block);
			assert_true(rel(iops, 1000.0 / truth_ms) <= 0.03);
			assert_true(rel(mean_ms, truth_ms) <= 0.03);
			assert_true(samples > 0);
			rows++;
		}
		fclose(f);
		assert_int_equal(rows, nspans);
	}
}

/* Profiles `drive` with the defaults and checks the document against the truth. */
static void check_drive(const char *drive)
{
	char device[64];
	struct dg_spec *spec;
	struct dg_truth *t;
	char err[DG_ERRLEN];
	json_error_t jerr;

	snprintf(device, sizeof(device), "sim:%s", drive);
	const char *args[] = {device, "--json", json_path, "--csv-dir", csv_dir, NULL};
	assert_int_equal(profile(args), DG_EXIT_OK);
	assert_int_equal(dg_spec_load(drive, &spec, NULL, err, sizeof(err)), 0);
	assert_int_equal(dg_truth_compute(spec, &t), 0);

	json_t *doc = json_load_file(json_path, 0, &jerr);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "schema")), DG_SCHEMA);
	json_t *run = json_object_get(doc, "run");
	assert_true(json_is_true(json_object_get(run, "complete")));
	double device_s = num(run, "device_time_s");
	if (t->capacity_bytes > 3000000000000ull) /* the 4 TB 5400 rpm presets: issue 5 budget */
		assert_true(device_s <= 180.0);
	assert_true(json_array_size(json_object_get(doc, "errors")) == 0 ||
		    strcmp(drive, "cheetah-15k") == 0);
	json_t *dev = json_object_get(doc, "device");
	assert_int_equal((uint64_t)num(dev, "size_bytes"), t->capacity_bytes);

	/* bandwidth: recording zones and the edge rates */
	json_t *bw = json_object_get(doc, "bandwidth");
	assert_non_null(bw);
	assert_int_equal(json_array_size(json_object_get(bw, "zones")), t->nrecording);
	assert_true(rel(num(bw, "outer_mb_per_s"), t->recording[0].mb_per_s) < 0.01);
	assert_true(rel(num(bw, "inner_mb_per_s"), t->recording[t->nrecording - 1].mb_per_s) <
		    0.01);

	/* rotation and seek */
	json_t *rot = json_object_get(doc, "rotation");
	assert_true(rel(num(rot, "rpm"), t->rpm) < 0.001);
	json_t *seek = json_object_get(doc, "seek");
	assert_true(fabs(num(seek, "track_to_track_ms") - t->track_to_track_ms) <= 0.3);
	assert_true(rel(num(seek, "average_ms"), t->average_ms) <= 0.03);
	assert_true(rel(num(seek, "full_stroke_ms"), t->full_stroke_ms) <= 0.03);
	/* every default distance kept: the budget holds them on these presets */
	assert_true(json_array_size(json_object_get(seek, "points")) >= DG_SEEK_DEFAULT_DISTANCES);

	/* span IOPS against the expected random QD1 service time */
	json_t *spans = json_object_get(json_object_get(doc, "iops"), "spans");
	assert_true(json_array_size(spans) >= 6);
	size_t i;
	json_t *sp;
	json_array_foreach(spans, i, sp)
	{
		double truth_ms = dg_truth_random_ms(spec, (uint64_t)num(sp, "start_bytes"),
						     (uint64_t)num(sp, "span_bytes"),
						     (uint32_t)num(sp, "block_bytes"));
		assert_true(rel(num(sp, "iops"), 1000.0 / truth_ms) <= 0.03);
	}

	check_csvs(spec, json_array_size(spans));
	json_decref(doc);
	dg_truth_free(t);
	dg_spec_free(spec);
}

static void wd_red_4tb(void **state)
{
	check_drive("wd-red-4tb");
}

static void hgst_7k1000(void **state)
{
	check_drive("hgst-7k1000");
}

static void seagate_serpentine(void **state)
{
	check_drive("seagate-st4000vn006");
}

/* Refusals: exit 1, one line on stderr that names what was refused, no output file. */
static void refusals(void **state)
{
	static const struct {
		const char *args[8];
		const char *needle; /* the refused option (and value) as the line names it */
	} cases[] = {
	    {{NULL}, "DEVICE is missing"},
	    {{"sim:hgst-7k1000", "--no-bandwidth", "--no-seek", NULL},
	     "--no-bandwidth and --no-seek leave nothing to measure"},
	    {{"sim:hgst-7k1000", "--samples", "1", NULL}, "--samples '1' must be a whole number"},
	    {{"sim:hgst-7k1000", "--distances", "0", NULL},
	     "--distances '0' must be a whole number"},
	    {{"sim:hgst-7k1000", "--seek-budget", "-5s", NULL},
	     "--seek-budget '-5s' is not a time"},
	    {{"sim:hgst-7k1000", "--range", "2G:1G", NULL}, "--range '2G:1G' is not START:END"},
	    {{"sim:hgst-7k1000", "--bogus", NULL}, "unknown option '--bogus'"},
	    {{"sim:hgst-7k1000", "--engine", "io_uring", NULL}, "engine 'io_uring' needs a block"},
	    {{"sim:hgst-7k1000", "--csv-dir", "/nonexistent/dir/x", NULL},
	     "cannot create --csv-dir /nonexistent/dir/x"},
	};
	char text[4096];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *args[12];
		size_t n = 0;

		for (const char *const *a = cases[i].args; *a; a++)
			args[n++] = *a;
		args[n++] = "--json";
		args[n++] = json_path;
		args[n] = NULL;
		unlink(json_path);
		assert_int_equal(profile(args), DG_EXIT_USAGE);
		t_slurp(err_path, text, sizeof(text));
		if (strncmp(text, "diskgeo: ", 9) || t_lines(text) != 1 ||
		    !strstr(text, cases[i].needle))
			fail_msg("case %zu: stderr \"%s\", want one line naming \"%s\"", i, text,
				 cases[i].needle);
		assert_int_not_equal(access(json_path, F_OK), 0);
	}
}

static int setup(void **state)
{
	if (!mkdtemp(dir))
		return -1;
	snprintf(json_path, sizeof(json_path), "%s/profile.json", dir);
	snprintf(out_path, sizeof(out_path), "%s/stdout", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	snprintf(csv_dir, sizeof(csv_dir), "%s/csv", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(wd_red_4tb),
	    cmocka_unit_test(hgst_7k1000),
	    cmocka_unit_test(seagate_serpentine),
	    cmocka_unit_test(refusals),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
