/* SPDX-License-Identifier: MIT */
/*
 * Tests of the bandwidth curve and zones on sim: drives (virtual time, deterministic), asserted
 * against the truth of model.h: every sample within 2% of dg_truth_rate_mb_per_s over its bytes,
 * median error <= 1%, one zone per recording zone, boundaries within 1% of the zone's length
 * (within one sample window unrefined), <= 90 s of device time for the default run on the 4 TB
 * 5400 rpm drives; I/O errors, slow spots, interruption, bad input (API and CLI), output.
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "diskgeo/bandwidth.h"
#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "diskgeo/model.h"
#include "engine_priv.h"
#include "t_helpers.h"
#include "util.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Asserts every sample against the truth; returns the median |error|. */
static double check_samples(const struct t_rig *g, const struct dg_bandwidth_result *r,
			    double max_err)
{
	double *e = calloc(r->nsamples, sizeof(*e)), med;

	assert_non_null(e);
	assert_true(r->nsamples > 0);
	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &r->samples[i];
		double t = dg_truth_rate_mb_per_s(g->spec, s->offset_bytes, s->length_bytes);

		e[i] = fabs(s->mb_per_s - t) / t;
		if (e[i] > max_err)
			fail_msg("sample at %llu: %.3f MB/s, truth %.3f (%.2f%%)",
				 (unsigned long long)s->offset_bytes, s->mb_per_s, t, 100 * e[i]);
		if (i > 0)
			assert_true(s->offset_bytes >= r->samples[i - 1].offset_bytes);
	}
	qsort(e, r->nsamples, sizeof(*e), cmp_double);
	med = e[r->nsamples / 2];
	free(e);
	return med;
}

/* Asserts one zone per recording zone, each boundary within `frac` of its zone's length. */
static void check_zones(const struct t_rig *g, const struct dg_bandwidth_result *r, double frac)
{
	const struct dg_truth *t = g->truth;

	assert_int_equal(r->nzones, t->nrecording);
	assert_int_equal(r->zones[0].start_bytes, 0);
	assert_int_equal(r->zones[r->nzones - 1].end_bytes, t->capacity_bytes);
	for (size_t z = 0; z + 1 < r->nzones; z++) {
		double len = (double)(t->recording[z].end_bytes - t->recording[z].start_bytes);
		double off =
		    fabs((double)r->zones[z].end_bytes - (double)t->recording[z].end_bytes);

		if (off > frac * len)
			fail_msg("boundary %zu at %llu, truth %llu (%.3f%% of the zone)", z,
				 (unsigned long long)r->zones[z].end_bytes,
				 (unsigned long long)t->recording[z].end_bytes, 100 * off / len);
		assert_int_equal(r->zones[z].end_bytes, r->zones[z + 1].start_bytes);
		assert_true(fabs(r->zones[z].mb_per_s - t->recording[z].mb_per_s) <
			    0.01 * t->recording[z].mb_per_s);
	}
	assert_true(fabs(r->outer_mb_per_s - t->recording[0].mb_per_s) <
		    0.01 * t->recording[0].mb_per_s);
	assert_true(fabs(r->inner_mb_per_s - t->recording[t->nrecording - 1].mb_per_s) <
		    0.01 * t->recording[t->nrecording - 1].mb_per_s);
	assert_string_equal(r->flat_reason, "");
}

/* The default run on a preset: the accuracy targets. */
static void default_run(const char *sim, double max_device_s)
{
	struct dg_bandwidth_params p;
	struct dg_bandwidth_result *r = NULL;
	struct t_rig g;
	double med;

	t_rig_open(&g, sim, 0, DG_ENGINE_SIM, 4, true);
	dg_bandwidth_params_default(&p);
	assert_int_equal(
	    dg_bandwidth_run(g.e, dg_device_info(g.dev), &p, &g.errors, NULL, NULL, NULL, &r), 0);
	assert_true(r->complete);
	assert_true(r->params.samples >= DG_BANDWIDTH_MIN_SAMPLES);
	med = check_samples(&g, r, 0.02);
	assert_true(med <= 0.01);
	check_zones(&g, r, 0.01);
	assert_true(r->refine_samples > 0);
	assert_true((double)r->device_time_ns / 1e9 <= max_device_s);
	print_message("%s: %zu samples, median error %.3f%%, %zu zones, %.1f s device time\n", sim,
		      r->nsamples, 100 * med, r->nzones, (double)r->device_time_ns / 1e9);
	assert_int_equal(g.errors.n, 0);
	dg_bandwidth_result_free(r);
	t_rig_close(&g);
}

static void wd_red(void **state)
{
	default_run("sim:wd-red-4tb", 90.0);
}

static void seagate(void **state)
{
	default_run("sim:seagate-st4000vn006", 90.0);
}

static void hgst(void **state)
{
	default_run("sim:hgst-7k1000", 90.0);
}

static void cheetah(void **state)
{
	default_run("sim:cheetah-15k", 90.0);
}

/* Without refinement each boundary lies within one sample window (spacing plus a sample). */
static void unrefined_within_a_window(void **state)
{
	struct dg_bandwidth_params p;
	struct dg_bandwidth_result *r = NULL;
	struct t_rig g;
	double window;

	t_rig_open(&g, "sim:hgst-7k1000", 0, DG_ENGINE_SIM, 4, true);
	dg_bandwidth_params_default(&p);
	p.samples = 300;
	p.refine = false;
	assert_int_equal(
	    dg_bandwidth_run(g.e, dg_device_info(g.dev), &p, &g.errors, NULL, NULL, NULL, &r), 0);
	assert_int_equal(r->refine_samples, 0);
	assert_int_equal(r->nzones, g.truth->nrecording);
	window = (double)g.truth->capacity_bytes / (p.samples - 1) + (double)r->params.sample_bytes;
	for (size_t z = 0; z + 1 < r->nzones; z++)
		assert_true(fabs((double)r->zones[z].end_bytes -
				 (double)g.truth->recording[z].end_bytes) <= window);
	dg_bandwidth_result_free(r);
	t_rig_close(&g);
}

/* A quick run of 20 samples over 16 zones (issue 13): steps lie closer than three samples, so
 * nothing may be set aside as an outlier; every sample within 3% of the truth of its bytes, and
 * outer and inner within 2.5% (curve_ends: END_TOL) of the truth's first and last zones. */
static void sparse_run_keeps_every_sample(void **state)
{
	static const char *const sims[] = {"sim:hgst-7k1000", "sim:wd-red-4tb", "sim:cheetah-15k"};

	for (size_t i = 0; i < ARRAY_SIZE(sims); i++) {
		struct dg_bandwidth_params p;
		struct dg_bandwidth_result *r = NULL;
		const struct dg_truth_zone *last;
		struct t_rig g;

		t_rig_open(&g, sims[i], 0, DG_ENGINE_SIM, 4, true);
		last = &g.truth->recording[g.truth->nrecording - 1];
		dg_bandwidth_params_default(&p);
		p.samples = 20;
		assert_int_equal(dg_bandwidth_run(g.e, dg_device_info(g.dev), &p, &g.errors, NULL,
						  NULL, NULL, &r),
				 0);
		check_samples(&g, r, 0.03);
		for (size_t k = 0; k < r->nsamples; k++)
			if (r->samples[k].excluded)
				fail_msg("%s: sample at %llu set aside", sims[i],
					 (unsigned long long)r->samples[k].offset_bytes);
		assert_true(r->nzones > 1);
		if (fabs(r->outer_mb_per_s / g.truth->recording[0].mb_per_s - 1) > 0.025 ||
		    fabs(r->inner_mb_per_s / last->mb_per_s - 1) > 0.025)
			fail_msg("%s: outer %.2f inner %.2f, truth %.2f and %.2f", sims[i],
				 r->outer_mb_per_s, r->inner_mb_per_s,
				 g.truth->recording[0].mb_per_s, last->mb_per_s);
		dg_bandwidth_result_free(r);
		t_rig_close(&g);
	}
}

/* Several passes: each sample is their median; on a deterministic drive they agree. */
static void passes_and_range(void **state)
{
	struct dg_bandwidth_params p;
	struct dg_bandwidth_result *r = NULL;
	struct t_rig g;
	uint64_t start = 250ull << 30, end = 300ull << 30;

	t_rig_open(&g, "sim:wd-red-4tb", 0, DG_ENGINE_SIM, 4, true);
	dg_bandwidth_params_default(&p);
	p.samples = 40;
	p.passes = 3;
	p.range_start_bytes = start;
	p.range_end_bytes = end;
	assert_int_equal(
	    dg_bandwidth_run(g.e, dg_device_info(g.dev), &p, &g.errors, NULL, NULL, NULL, &r), 0);
	check_samples(&g, r, 0.02);
	for (size_t i = 0; i < r->nsamples; i++) {
		assert_true(r->samples[i].offset_bytes >= start);
		assert_true(r->samples[i].offset_bytes + r->samples[i].length_bytes <= end);
	}
	assert_int_equal(r->zones[0].start_bytes, start);
	assert_int_equal(r->zones[r->nzones - 1].end_bytes, end);
	/* [250 GiB, 300 GiB) crosses the first zone boundary (276.4 GB) only. */
	assert_int_equal(r->nzones, 2);
	dg_bandwidth_result_free(r);
	t_rig_close(&g);
}

/* cheetah-15k's error defect: the run completes, errors[] lists it with EIO, the sample is
 * dropped; its slow range: the stall is left out of the rate and noted. */
static void cheetah_defects(void **state)
{
	struct dg_bandwidth_params p;
	struct dg_bandwidth_result *r = NULL;
	struct t_rig g;
	uint64_t bad = 150000000ull * 512, slow = 300000000ull * 512;

	t_rig_open(&g, "sim:cheetah-15k", 0, DG_ENGINE_SIM, 4, true);
	dg_bandwidth_params_default(&p);
	/* Samples side by side over the error range. */
	p.range_start_bytes = 76000000000ull;
	p.range_end_bytes = 78000000000ull;
	p.samples = 119;
	assert_int_equal(
	    dg_bandwidth_run(g.e, dg_device_info(g.dev), &p, &g.errors, NULL, NULL, NULL, &r), 0);
	assert_true(r->complete);
	assert_true(g.errors.n >= 1);
	assert_int_equal(g.errors.v[0].errno_value, EIO);
	assert_true(g.errors.v[0].offset_bytes <= bad);
	assert_true(g.errors.v[0].offset_bytes + g.errors.v[0].length_bytes > bad);
	assert_int_equal(r->nsamples, 118);
	check_samples(&g, r, 0.02);
	assert_int_equal(r->nzones, 1);
	dg_bandwidth_result_free(r);

	dg_bandwidth_params_default(&p);
	p.range_start_bytes = 153000000000ull;
	p.range_end_bytes = 154000000000ull;
	p.samples = 59;
	assert_int_equal(
	    dg_bandwidth_run(g.e, dg_device_info(g.dev), &p, &g.errors, NULL, NULL, NULL, &r), 0);
	check_samples(&g, r, 0.02);
	{
		unsigned stalls = 0;
		for (size_t i = 0; i < r->nsamples; i++) {
			const struct dg_bandwidth_sample *s = &r->samples[i];
			if (s->stalls)
				assert_true(s->offset_bytes <= slow + (1u << 20) &&
					    s->offset_bytes + s->length_bytes + (1u << 20) >= slow);
			stalls += s->stalls;
		}
		assert_int_equal(stalls, 1);
	}
	assert_int_equal(r->notes.n, 1);
	assert_non_null(strstr(r->notes.v[0], "stalled"));
	dg_bandwidth_result_free(r);
	t_rig_close(&g);
}

/* A drive with one zone: one zone and why; a zoned drive that says it is not rotational: its
 * zones. */
static void flat_devices(void **state)
{
	static const char spec[] =
	    "{\"name\": \"flat\", \"logical_sector_bytes\": 512, \"heads\": 2, \"rpm\": 7200,"
	    " \"zones\": [{\"cylinders\": 20000, \"sectors_per_track\": 1000}],"
	    " \"seek\": {\"track_to_track_ms\": 1, \"average_ms\": 9, \"full_stroke_ms\": 18},"
	    " \"head_switch_ms\": 0.5, \"command_overhead_ms\": 0.1, \"cache_bytes\": 8388608,"
	    " \"read_ahead_bytes\": 1048576}";
	char path[] = "/tmp/diskgeo-flat-XXXXXX.json", sim[64];
	struct dg_bandwidth_params p;
	struct dg_bandwidth_result *r = NULL;
	struct dg_device_info info;
	struct t_rig g;
	int fd = mkstemps(path, 5);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, spec, sizeof(spec) - 1), (ssize_t)(sizeof(spec) - 1));
	close(fd);
	snprintf(sim, sizeof(sim), "sim:%s", path);
	t_rig_open(&g, sim, 0, DG_ENGINE_SIM, 4, true);
	unlink(path);
	dg_bandwidth_params_default(&p);
	p.samples = 64;
	assert_int_equal(
	    dg_bandwidth_run(g.e, dg_device_info(g.dev), &p, &g.errors, NULL, NULL, NULL, &r), 0);
	assert_int_equal(r->nzones, 1);
	assert_non_null(strstr(r->flat_reason, "noise"));
	check_samples(&g, r, 0.02);
	assert_int_equal(r->refine_samples, 0);
	dg_bandwidth_result_free(r);
	t_rig_close(&g);

	/* Timing decides: a zoned drive that reports itself non-rotational (a loop, dm or USB
	 * layer in between) keeps the zones its curve shows, with a note. The same run with the
	 * flag set finds the same zones. */
	t_rig_open(&g, "sim:hgst-7k1000", 0, DG_ENGINE_SIM, 4, true);
	info = *dg_device_info(g.dev);
	dg_bandwidth_params_default(&p);
	p.samples = 64;
	assert_int_equal(dg_bandwidth_run(g.e, &info, &p, &g.errors, NULL, NULL, NULL, &r), 0);
	size_t zones_flagged = r->nzones;
	assert_true(zones_flagged >= 8);
	dg_bandwidth_result_free(r);
	t_rig_close(&g);
	t_rig_open(&g, "sim:hgst-7k1000", 0, DG_ENGINE_SIM, 4, true);
	info.rotational = 0;
	assert_int_equal(dg_bandwidth_run(g.e, &info, &p, &g.errors, NULL, NULL, NULL, &r), 0);
	assert_int_equal(r->nzones, zones_flagged);
	assert_int_equal(r->flat_reason[0], '\0');
	bool noted = false;
	for (size_t i = 0; i < r->notes.n; i++)
		noted |=
		    strstr(r->notes.v[i], "non-rotational, but its sequential rate falls") != NULL;
	assert_true(noted);
	dg_bandwidth_result_free(r);
	t_rig_close(&g);
}

struct stopper {
	volatile sig_atomic_t flag;
	int calls;
};

static void stop_at_a_third(void *arg, const char *phase, double fraction, double eta_s)
{
	struct stopper *s = arg;

	assert_true(fraction >= 0 && fraction <= 1);
	s->calls++;
	if (fraction > 0.33)
		s->flag = 1;
}

/* Interrupted: a partial result, complete = false, fewer samples than planned. */
static void interrupted(void **state)
{
	struct dg_bandwidth_params p;
	struct dg_bandwidth_result *r = NULL;
	struct stopper st = {0};
	struct t_rig g;

	t_rig_open(&g, "sim:hgst-7k1000", 0, DG_ENGINE_SIM, 4, true);
	dg_bandwidth_params_default(&p);
	p.samples = 300;
	assert_int_equal(dg_bandwidth_run(g.e, dg_device_info(g.dev), &p, &g.errors, &st.flag,
					  stop_at_a_third, &st, &r),
			 0);
	assert_false(r->complete);
	assert_true(st.calls > 50);
	assert_true(r->nsamples > 50 && r->nsamples < 200);
	assert_int_equal(r->refine_samples, 0);
	check_samples(&g, r, 0.02);
	dg_bandwidth_result_free(r);

	/* Stopped before it began: no samples, no zones, still a result. */
	st.flag = 1;
	assert_int_equal(
	    dg_bandwidth_run(g.e, dg_device_info(g.dev), &p, &g.errors, &st.flag, NULL, NULL, &r),
	    0);
	assert_false(r->complete);
	assert_int_equal(r->nsamples, 0);
	assert_int_equal(r->nzones, 0);
	dg_bandwidth_result_free(r);
	t_rig_close(&g);
}

struct stop_after {
	volatile sig_atomic_t flag;
	int calls, after;
};

static void stop_after_n(void *arg, const char *phase, double fraction, double eta_s)
{
	struct stop_after *s = arg;

	if (++s->calls >= s->after)
		s->flag = 1;
}

/*
 * Stopped after only a few samples, taken in shuffled order across several zones (what a SIGINT
 * a second or two into a run on a real-time device leaves): still a partial result, never
 * -EINVAL, with zones that cover the range when anything was measured. A handful of samples at
 * different rates used to be set aside as too-short segments one and all, and the zone step
 * then found no usable sample.
 */
static void interrupted_early(void **state)
{
	for (uint64_t seed = 1; seed <= 12; seed++) {
		for (int after = 1; after <= 9; after++) {
			struct dg_bandwidth_params p;
			struct dg_bandwidth_result *r = NULL;
			struct stop_after st = {.after = after};
			struct t_rig g;
			int rc;

			t_rig_open(&g, "sim:hgst-7k1000", 0, DG_ENGINE_SIM, 4,
				   true); /* a new run: nothing of it cached */
			dg_bandwidth_params_default(&p);
			p.samples = 64;
			p.seed = seed;
			rc = dg_bandwidth_run(g.e, dg_device_info(g.dev), &p, &g.errors, &st.flag,
					      stop_after_n, &st, &r);
			if (rc)
				fail_msg("seed %llu, stopped after %d samples: %s",
					 (unsigned long long)seed, after, strerror(-rc));
			assert_false(r->complete);
			assert_int_equal(r->nsamples, (size_t)after);
			assert_true(r->nzones >= 1);
			assert_int_equal(r->zones[0].start_bytes, 0);
			assert_int_equal(r->zones[r->nzones - 1].end_bytes,
					 g.truth->capacity_bytes);
			for (size_t z = 0; z < r->nzones; z++)
				assert_true(r->zones[z].mb_per_s > 0);
			check_samples(&g, r, 0.02);
			dg_bandwidth_result_free(r);
			t_rig_close(&g);
		}
	}
}

/*
 * tests/faults/defects.json (three zones, an 8 MiB cache, 1 MiB read-ahead, slow ranges): every
 * sample, of the curve and of the refinement, within 2% of the truth over its bytes, across both
 * zone boundaries, with small samples (4 MiB: about 7 tracks, so that where the track switches
 * fall moves a rate by less than 2%) and many seeds. Refinement samples bisect towards the
 * samples around them and must never time what the drive still caches (they once read at the
 * interface rate, 112-131 MB/s on this 51 MB/s drive); slow ranges are stalls, left out of the
 * rate and counted with their wait.
 */
static void faults_spec_every_sample(void **state)
{
	static const struct {
		uint64_t start, end, sample;
		unsigned samples;
		uint64_t seeds[5]; /* none: 1..8 */
	} cases[] = {
	    {310329344, 361181184, 4 << 20, 10, {0}}, /* the slow ranges, one zone */
	    {303005696, 344457216, 4 << 20, 10, {0}}, /* as tests/test_faults.sh */
	    {180000256, 230000128, 4 << 20, 10, {0}}, /* zone 0 | zone 1 */
	    {303005696, 419999744, 4 << 20, 24, {0}}, /* slow ranges, zone 1 | zone 2 */
	    {0, 552960000, 4 << 20, 40, {0}},	      /* the whole drive */
	    {0, 552960000, 6 << 20, 64, {0}},	      /* more samples */
	    {150000128, 450000384, 8 << 20, 16, {0}}, /* larger ones, both boundaries */
	    /* From the time budget: the pilot's samples lie where the curve's first and last
	     * do; with these seeds the curve begins with the one the pilot read last. */
	    {0, 200000000, 4 << 20, 0, {90, 106, 143, 170, 180}},
	};
	char path[4096], sim[4200];
	unsigned refined = 0, stalled = 0;

	snprintf(path, sizeof(path), "%s/tests/faults/defects.json", DG_SOURCE_DIR);
	snprintf(sim, sizeof(sim), "sim:%s", path);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		for (unsigned si = 0; si < 8; si++) {
			uint64_t seed = cases[i].seeds[0] ? cases[i].seeds[si % 5] : si + 1;
			struct dg_bandwidth_params p;
			struct dg_bandwidth_result *r = NULL;
			struct t_rig g;

			if (cases[i].seeds[0] && si >= 5)
				break;
			t_rig_open(&g, sim, 0, DG_ENGINE_SIM, 4, true);
			dg_bandwidth_params_default(&p);
			p.range_start_bytes = cases[i].start;
			p.range_end_bytes = cases[i].end;
			p.sample_bytes = cases[i].sample;
			p.samples = cases[i].samples;
			p.seed = seed;
			assert_int_equal(dg_bandwidth_run(g.e, dg_device_info(g.dev), &p, &g.errors,
							  NULL, NULL, NULL, &r),
					 0);
			/* The error range at byte 153600000 fails its samples; the rest count. */
			for (size_t k = 0; k < r->nsamples; k++) {
				const struct dg_bandwidth_sample *s = &r->samples[k];
				double t = dg_truth_rate_mb_per_s(g.spec, s->offset_bytes,
								  s->length_bytes);

				bool slow = false, straddles = false;
				double lo = t, hi = t;

				for (int d = 0; d < 8; d++) {
					uint64_t x = (600000ull + 9216ull * d) * 512;
					slow |= x >= s->offset_bytes &&
						x < s->offset_bytes + s->length_bytes;
				}
				for (int z = 0; z < 2; z++) {
					uint64_t x = z ? 389120000 : 204800000;

					if (x <= s->offset_bytes ||
					    x >= s->offset_bytes + s->length_bytes)
						continue;
					straddles = true;
					lo = dg_truth_rate_mb_per_s(g.spec, x, 512);
					hi = dg_truth_rate_mb_per_s(g.spec, x - 512, 512);
				}
				/* Within 2% of the truth over its bytes; a sample across a zone
				 * boundary (two rates in a few tracks, its mix uncertain by where
				 * the skews fall) between the two zones' rates. */
				if (s->mb_per_s < lo * 0.98 || s->mb_per_s > hi * 1.02)
					fail_msg("case %zu seed %llu: %ssample at %llu: %.3f MB/s, "
						 "truth %.3f",
						 i, (unsigned long long)seed,
						 s->refine ? "refining " : "",
						 (unsigned long long)s->offset_bytes, s->mb_per_s,
						 t);
				/* A slow range (4 revolutions, 33.3 ms) whose start falls in the
				 * timed bytes shows as a stall with its wait; elsewhere only a zone
				 * change inside the sample may stall, for less than a revolution.
				 */
				if (slow && !(s->stalls >= 1 && s->stall_ms > 25 &&
					      s->stall_ms < 45.0 * s->stalls))
					fail_msg("case %zu seed %llu: sample at %llu crosses a "
						 "slow range: "
						 "%u stalls, %.3f ms",
						 i, (unsigned long long)seed,
						 (unsigned long long)s->offset_bytes, s->stalls,
						 s->stall_ms);
				if (!slow && s->stalls &&
				    !(straddles && s->stall_ms < 8.34 * s->stalls))
					fail_msg(
					    "case %zu seed %llu: clean sample at %llu: %u stalls, "
					    "%.3f ms",
					    i, (unsigned long long)seed,
					    (unsigned long long)s->offset_bytes, s->stalls,
					    s->stall_ms);
				assert_true(s->stalls > 0 || s->stall_ms == 0);
				stalled += slow;
			}
			refined += r->refine_samples;
			dg_bandwidth_result_free(r);
			t_rig_close(&g);
		}
	}
	print_message("defects.json: %u refining samples, %u samples with a stall\n", refined,
		      stalled);
	assert_true(refined > 0);
	assert_true(stalled > 0);
}

/* Bad parameters: -EINVAL with a message, from the check and from the run. */
static void bad_params(void **state)
{
	static const struct {
		uint64_t start, end, sample;
		unsigned samples, passes, qd;
		const char *says;
	} cases[] = {
	    {0, UINT64_MAX, 0, 1, 1, 4, "at least 2 samples"},
	    {0, 5000000000000ull, 0, 0, 1, 4, "outside the device"},
	    {5000000000000ull, UINT64_MAX, 0, 0, 1, 4, "outside the device"},
	    {1ull << 30, 1ull << 29, 0, 0, 1, 4, "reversed"},
	    {1ull << 30, 1ull << 30, 0, 0, 1, 4, "reversed or empty"},
	    {1000, 1ull << 30, 0, 0, 1, 4, "not aligned"},
	    {0, (1ull << 30) + 100, 0, 0, 1, 4, "not aligned"},
	    {0, 1ull << 30, 2ull << 30, 0, 1, 4, "larger than the range"},
	    {0, 1ull << 30, 1000, 0, 1, 4, "not a multiple"},
	    {0, 1ull << 30, 4096, 0, 1, 4, "less than two"},
	    {0, UINT64_MAX, 0, 0, 0, 4, "passes"},
	    {0, UINT64_MAX, 0, 0, 1, 0, "queue depth"},
	};
	struct t_rig g;

	t_rig_open(&g, "sim:seagate-st4000vn006", 0, DG_ENGINE_SIM, 4,
		   true); /* 4096-byte sectors */
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct dg_bandwidth_params p, out;
		struct dg_bandwidth_result *r = (void *)1;
		char err[DG_ERRLEN] = "";

		dg_bandwidth_params_default(&p);
		p.range_start_bytes = cases[i].start;
		p.range_end_bytes = cases[i].end;
		p.sample_bytes = cases[i].sample;
		p.samples = cases[i].samples;
		p.passes = cases[i].passes;
		p.qd = cases[i].qd;
		if (dg_bandwidth_params_check(&p, dg_device_info(g.dev), &out, err, sizeof(err)) !=
		    -EINVAL)
			fail_msg("case %zu ('%s') was accepted", i, cases[i].says);
		if (!strstr(err, cases[i].says))
			fail_msg("case %zu: '%s' does not say '%s'", i, err, cases[i].says);
		assert_int_equal(dg_bandwidth_run(g.e, dg_device_info(g.dev), &p, &g.errors, NULL,
						  NULL, NULL, &r),
				 -EINVAL);
		assert_null(r);
	}
	t_rig_close(&g);
}

/* JSON and CSV carry the contract's keys. */
static void output(void **state)
{
	struct dg_bandwidth_params p;
	struct dg_bandwidth_result *r = NULL;
	struct t_rig g;
	json_t *j, *s, *z, *pj;
	char *buf = NULL, line[128];
	size_t len = 0;
	FILE *f;

	t_rig_open(&g, "sim:hgst-7k1000", 0, DG_ENGINE_SIM, 4, true);
	dg_bandwidth_params_default(&p);
	p.samples = 256;
	assert_int_equal(
	    dg_bandwidth_run(g.e, dg_device_info(g.dev), &p, &g.errors, NULL, NULL, NULL, &r), 0);
	j = dg_bandwidth_json(r);
	assert_non_null(j);
	s = json_object_get(j, "samples");
	z = json_object_get(j, "zones");
	assert_int_equal(json_array_size(s), r->nsamples);
	assert_int_equal(json_array_size(z), r->nzones);
	assert_non_null(json_object_get(json_array_get(s, 0), "offset_bytes"));
	assert_non_null(json_object_get(json_array_get(s, 0), "length_bytes"));
	assert_non_null(json_object_get(json_array_get(s, 0), "mb_per_s"));
	assert_non_null(json_object_get(json_array_get(z, 0), "start_bytes"));
	assert_non_null(json_object_get(json_array_get(z, 0), "end_bytes"));
	assert_true(json_real_value(json_object_get(j, "outer_mb_per_s")) > 140);
	assert_true(json_real_value(json_object_get(j, "inner_mb_per_s")) < 70);
	assert_null(json_object_get(j, "flat_reason"));
	json_decref(j);

	pj = dg_bandwidth_params_json(&r->params);
	assert_int_equal(json_integer_value(json_object_get(pj, "samples")), 256);
	assert_int_equal(json_integer_value(json_object_get(pj, "sample_bytes")), 16 << 20);
	assert_true(json_is_true(json_object_get(pj, "refine")));
	json_decref(pj);

	f = open_memstream(&buf, &len);
	assert_int_equal(dg_bandwidth_csv(f, r), 0);
	fclose(f);
	assert_int_equal(strncmp(buf, "offset_bytes,length_bytes,mb_per_s,spread_mb_per_s\n", 51),
			 0);
	{
		size_t rows = 0;
		for (char *c = buf; *c; c++)
			rows += *c == '\n';
		assert_int_equal(rows, r->nsamples + 1);
	}
	free(buf);
	f = open_memstream(&buf, &len);
	assert_int_equal(dg_bandwidth_zones_csv(f, r), 0);
	fclose(f);
	assert_int_equal(sscanf(buf, "%127s", line), 1);
	assert_string_equal(line, "start_bytes,end_bytes,mb_per_s");
	free(buf);
	dg_bandwidth_result_free(r);
	t_rig_close(&g);
}

/* The command line: bad input is one line and exit 1, and nothing is written. */
static void cli_bad_input(void **state)
{
	static const char *const cases[] = {
	    "--samples 1",
	    "--range 0:10T",
	    "--range 200G:100G",
	    "--range 1000:2G",
	    "--range 0:1G --sample-size 2G",
	    "--sample-size 1000",
	    "--qd 0",
	    "--time-budget 0",
	    "--passes 0",
	    "--bogus",
	};
	char cmd[1024], out[] = "/tmp/diskgeo-bw-XXXXXX";
	int status;

	assert_non_null(mkdtemp(out));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		snprintf(cmd, sizeof(cmd),
			 "%s/diskgeo bandwidth sim:hgst-7k1000 %s --json %s/p.json --csv %s/p.csv "
			 "2>%s/err >/dev/null",
			 DG_BINARY_DIR, cases[i], out, out, out);
		status = system(cmd);
		assert_true(WIFEXITED(status));
		if (WEXITSTATUS(status) != 1)
			fail_msg("'%s' exited %d, not 1", cases[i], WEXITSTATUS(status));
		snprintf(cmd, sizeof(cmd), "test ! -e %s/p.json && test ! -e %s/p.csv", out, out);
		assert_int_equal(system(cmd), 0);
		/* One line: "diskgeo: ..." first. */
		snprintf(cmd, sizeof(cmd), "head -c 8 %s/err | grep -q '^diskgeo:'", out);
		assert_int_equal(system(cmd), 0);
	}
	/* The I/O error case: the run goes on, exit 3, the profile lists the error. */
	snprintf(cmd, sizeof(cmd),
		 "%s/diskgeo bandwidth sim:cheetah-15k --range 76000000000:78000000000 --samples "
		 "119 --json %s/p.json 2>/dev/null >/dev/null",
		 DG_BINARY_DIR, out);
	status = system(cmd);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 3);
	snprintf(cmd, sizeof(cmd), "grep -q '\"errno\": 5' %s/p.json", out);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", out);
	assert_int_equal(system(cmd), 0);
}

/*
 * Host hiccups emulated on sim: an engine whose reap passes the sim's completions on, except
 * that now and then a timed read's reply is held back HICCUP_NS (a busy core) and the
 * completions due meanwhile are seen in a burst when it comes, as on a real host. The drive
 * streamed on: the rate must not change, neither slower (the wait is not the drive's) nor
 * faster (the burst must not be kept while the wait is left out).
 */
#define HICCUP_NS    (8ull * 1000 * 1000)
#define HICCUP_EVERY 23u

static const struct dg_engine_ops *sim_ops;
static uint64_t hold_until;
static unsigned reaped;

static int hiccup_reap(struct dg_engine *e, struct dg_slot **done, unsigned min, unsigned max)
{
	int n = sim_ops->reap(e, done, min, max);

	for (int i = 0; i < n; i++) {
		struct dg_slot *s = done[i];

		if (s->complete_ns < hold_until) {
			s->complete_ns = hold_until + 800000; /* the burst, 0.8 ms apart */
			hold_until = s->complete_ns;
			continue;
		}
		if (++reaped % HICCUP_EVERY == 0 && s->io.tag >= 4) {
			s->complete_ns += HICCUP_NS;
			hold_until = s->complete_ns;
		}
	}
	return n;
}

static void host_hiccups(void **state)
{
	struct dg_engine_ops ops;
	struct dg_bandwidth_params p;
	struct dg_bandwidth_result *r = NULL;
	struct t_rig g;
	unsigned stalls = 0;

	t_rig_open(&g, "sim:cheetah-15k", 0, DG_ENGINE_SIM, 4, true);
	sim_ops = g.e->ops;
	ops = *sim_ops;
	ops.reap = hiccup_reap;
	g.e->ops = &ops;
	hold_until = 0;
	reaped = 0;
	dg_bandwidth_params_default(&p);
	p.samples = 256;
	p.refine = false;
	assert_int_equal(
	    dg_bandwidth_run(g.e, dg_device_info(g.dev), &p, &g.errors, NULL, NULL, NULL, &r), 0);
	assert_true(r->nsamples > 200);
	check_samples(&g, r, 0.015);
	/* The hiccups are the host's: no stall counted, but for those on a stream's last read
	 * (no burst follows; one in HICCUP_EVERY reads is held, about 180 in all). */
	for (size_t i = 0; i < r->nsamples; i++)
		stalls += r->samples[i].stalls;
	assert_true(stalls <= 16);
	assert_true(r->nzones > 1);
	dg_bandwidth_result_free(r);
	g.e->ops = sim_ops;
	t_rig_close(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(wd_red),
	    cmocka_unit_test(seagate),
	    cmocka_unit_test(hgst),
	    cmocka_unit_test(cheetah),
	    cmocka_unit_test(unrefined_within_a_window),
	    cmocka_unit_test(sparse_run_keeps_every_sample),
	    cmocka_unit_test(passes_and_range),
	    cmocka_unit_test(cheetah_defects),
	    cmocka_unit_test(flat_devices),
	    cmocka_unit_test(interrupted),
	    cmocka_unit_test(interrupted_early),
	    cmocka_unit_test(faults_spec_every_sample),
	    cmocka_unit_test(bad_params),
	    cmocka_unit_test(output),
	    cmocka_unit_test(cli_bad_input),
	    cmocka_unit_test(host_hiccups),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
