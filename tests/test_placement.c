/* SPDX-License-Identifier: MIT */
/*
 * The answers derived from a profile, against the truth of the simulated drive it measured:
 * - the full-surface read time (bandwidth.read_time_s, and dg_profile_read_time_s() of the
 *   profile read back) within 1 % of the truth, the sum of zone bytes over zone rates;
 * - the short-stroke advice (iops.short_stroke[]): each gain within 5 points of the truth's
 *   (random 4 KiB QD1 IOPS of the first X % over the whole drive's);
 * - the place of a range (dg_placement_compute): its % of the surface exactly, its sequential
 *   rate within 1 % of the truth's rate over that range and its random read time within 2 % of
 *   the truth's (from the seek curve where no span matches); refusals of ranges outside the
 *   disk and of a profile with no curve.
 * Profiles sim:hgst-7k1000 and sim:wd-red-4tb with the built binary (virtual time).
 */
#include <errno.h>
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

#include "diskgeo/compare.h"
#include "diskgeo/diskgeo.h"
#include "diskgeo/model.h"
#include "diskgeo/placement.h"
#include "diskgeo/profile_read.h"
#include "t_helpers.h"
#include "util.h"

static const char *binary = DG_BINARY_DIR "/diskgeo";
static char dir[] = "/tmp/dg_test_placement.XXXXXX";

struct drive {
	const char *name;
	struct dg_spec *spec;
	struct dg_truth *truth;
	struct dg_profile_data *p;
	json_t *doc;
};
static struct drive drives[] = {{.name = "hgst-7k1000"}, {.name = "wd-red-4tb"}};

static int setup(void **state)
{
	char err[DG_ERRLEN], json[200], out[200], errp[200], dev[64];

	if (!mkdtemp(dir))
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(drives); i++) {
		struct drive *d = &drives[i];

		snprintf(json, sizeof(json), "%s/%s.json", dir, d->name);
		snprintf(out, sizeof(out), "%s/out", dir);
		snprintf(errp, sizeof(errp), "%s/err", dir);
		snprintf(dev, sizeof(dev), "sim:%s", d->name);
		const char *argv[] = {"diskgeo", "profile", dev, "--json", json, NULL};
		if (t_exec_files(binary, argv, out, errp) != 0)
			return -1;
		if (dg_spec_load(d->name, &d->spec, NULL, err, sizeof(err)) ||
		    dg_truth_compute(d->spec, &d->truth) ||
		    dg_profile_read(json, &d->p, err, sizeof(err)))
			return -1;
		d->doc = json_load_file(json, 0, NULL);
		if (!d->doc)
			return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	char cmd[256];

	for (size_t i = 0; i < ARRAY_SIZE(drives); i++) {
		dg_profile_data_free(drives[i].p);
		dg_truth_free(drives[i].truth);
		dg_spec_free(drives[i].spec);
		json_decref(drives[i].doc);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static double rel(double got, double want)
{
	return fabs(got / want - 1);
}

static void test_read_time(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(drives); i++) {
		const struct drive *d = &drives[i];
		double truth = 0;

		for (size_t z = 0; z < d->truth->nzones; z++)
			truth += (double)(d->truth->zones[z].end_bytes -
					  d->truth->zones[z].start_bytes) /
				 (d->truth->zones[z].mb_per_s * DG_MB);
		json_t *v = json_object_get(json_object_get(d->doc, "bandwidth"), "read_time_s");
		assert_true(json_is_number(v));
		double got = json_number_value(v);
		printf("# %s: read_time_s %.1f s, truth %.1f s (%+.3f %%)\n", d->name, got, truth,
		       100 * (got / truth - 1));
		assert_true(rel(got, truth) < 0.01);
		assert_true(rel(dg_profile_read_time_s(d->p), truth) < 0.01);
	}
}

static void test_short_stroke(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(drives); i++) {
		const struct drive *d = &drives[i];
		json_t *ss = json_object_get(json_object_get(d->doc, "iops"), "short_stroke");
		uint64_t cap = d->truth->capacity_bytes;
		double whole = 1e3 / dg_truth_random_ms(d->spec, 0, cap / 4096 * 4096, 4096);
		size_t k;
		json_t *e;

		assert_true(json_is_array(ss));
		assert_int_equal(json_array_size(ss), 4); /* 1, 10, 25, 50 % */
		json_array_foreach(ss, k, e)
		{
			uint64_t span =
			    (uint64_t)json_integer_value(json_object_get(e, "span_bytes"));
			double gain = json_number_value(json_object_get(e, "gain_percent"));
			double pct = json_number_value(json_object_get(e, "span_percent"));
			double tgain =
			    100 * (1e3 / dg_truth_random_ms(d->spec, 0, span, 4096) / whole - 1);

			printf("# %s: first %.0f %%: %+.1f %% IOPS, truth %+.1f %%\n", d->name, pct,
			       gain, tgain);
			assert_true(fabs(pct - 100.0 * (double)span / (double)cap) < 1e-3);
			assert_true(fabs(gain - tgain) < 5);
			if (k)
				assert_true(gain < json_number_value(json_object_get(
						       json_array_get(ss, k - 1), "gain_percent")));
		}
	}
}

static void test_place(void **state)
{
	static const double ranges[][2] = {{0.0, 0.10}, {0.10, 1.0},  {0.40, 0.45},
					   {0.90, 1.0}, {0.33, 0.34}, {0.05, 0.55}};

	for (size_t i = 0; i < ARRAY_SIZE(drives); i++) {
		const struct drive *d = &drives[i];
		uint64_t cap = d->truth->capacity_bytes;

		for (size_t r = 0; r < ARRAY_SIZE(ranges); r++) {
			uint64_t start = (uint64_t)(ranges[r][0] * (double)cap) / 4096 * 4096;
			uint64_t end = (uint64_t)(ranges[r][1] * (double)cap) / 4096 * 4096;
			struct dg_placement pl;
			char err[DG_ERRLEN];

			if (!start && ranges[r][0] == 0)
				start = 1 << 20; /* a partition's usual first byte */
			assert_int_equal(dg_placement_compute(d->p, start, end - start, 4096, &pl,
							      err, sizeof(err)),
					 0);
			double seq = dg_truth_rate_mb_per_s(d->spec, start, end - start);
			double rnd = dg_truth_random_ms(d->spec, start, end - start, 4096);
			printf("# %s %4.0f-%3.0f %%: %.1f MB/s (truth %.1f), %.3f ms from %s "
			       "(truth %.3f)\n",
			       d->name, pl.start_percent, pl.end_percent, pl.seq_mb_per_s, seq,
			       pl.random_ms, pl.random_from, rnd);
			assert_true(fabs(pl.start_percent - 100.0 * (double)start / (double)cap) <
				    1e-9);
			assert_true(fabs(pl.end_percent - 100.0 * (double)end / (double)cap) <
				    1e-9);
			assert_true(rel(pl.seq_mb_per_s, seq) < 0.01);
			assert_true(rel(pl.random_ms, rnd) < 0.02);
			assert_true(rel(pl.read_time_s, (double)(end - start) / (seq * DG_MB)) <
				    0.01);
		}
	}
}

static void test_refusals(void **state)
{
	const struct drive *d = &drives[0];
	struct dg_placement pl;
	char err[DG_ERRLEN];
	struct dg_profile_data *bare = NULL;
	static const char doc[] = "{\"schema\":\"diskgeo.profile/1\",\"device\":{\"size_bytes\":"
				  "1000000}}";

	assert_int_equal(
	    dg_placement_compute(d->p, d->p->size_bytes - 4096, 8192, 4096, &pl, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "is not inside its 1000204886016-byte device"));
	assert_int_equal(dg_placement_compute(d->p, 0, 0, 4096, &pl, err, sizeof(err)), -EINVAL);
	assert_int_equal(
	    dg_profile_read_buffer("bare.json", doc, sizeof(doc) - 1, &bare, err, sizeof(err)), 0);
	assert_int_equal(dg_placement_compute(bare, 0, 4096, 4096, &pl, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "bare.json: has no bandwidth curve (bandwidth.zones)");
	assert_true(isnan(dg_profile_read_time_s(bare)));
	dg_profile_data_free(bare);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_time),
	    cmocka_unit_test(test_short_stroke),
	    cmocka_unit_test(test_place),
	    cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
