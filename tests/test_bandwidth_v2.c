/* SPDX-License-Identifier: MIT */
/*
 * The bandwidth curve on version 2 drives (virtual time, deterministic), asserted against truth
 * v2 (drive-spec.md): every sample clear of the spec's defects within 3% of the truth of its own
 * bytes (dg_truth_rate_mb_per_s; a sample across a zone boundary anywhere between its rate with
 * and without the one-off rotational wait), the median within 1%; on zoo drives with jitter,
 * background work, NCQ, look-behind, serpentines and per-surface formats, every zone step of 2%
 * or more found and no boundary where the spec has none (within 1% of the shorter zone or
 * 64 MiB, as bench/zoo judges); a slow spot only where the spec has a slow or failing range, and a
 * background busy period re-measured away.
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

#include "diskgeo/bandwidth.h"
#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "diskgeo/model.h"
#include "util.h"
#include "t_helpers.h"

#define MAX_DEFECTS 16

struct run {
	struct dg_device *dev;
	struct dg_engine *e;
	struct dg_errors errors;
	const struct dg_spec *spec;
	struct dg_truth *truth;
	struct dg_bandwidth_result *r;
	uint64_t defect_lo[MAX_DEFECTS], defect_hi[MAX_DEFECTS]; /* bytes */
	size_t ndefects;
	char path[64];
};

/* The spec's defect ranges (any kind) from its JSON text. */
static void load_defects(struct run *g, const char *text)
{
	json_t *doc = json_loads(text, 0, NULL), *e;
	uint32_t sector = dg_spec_sector_bytes(g->spec);
	size_t i;

	assert_non_null(doc);
	json_array_foreach(json_object_get(doc, "defects"), i, e)
	{
		uint64_t lba = (uint64_t)json_integer_value(json_object_get(e, "lba"));
		uint64_t n = (uint64_t)json_integer_value(json_object_get(e, "count"));

		assert_true(g->ndefects < MAX_DEFECTS);
		g->defect_lo[g->ndefects] = lba * sector;
		g->defect_hi[g->ndefects++] = (lba + n) * sector;
	}
	json_decref(doc);
}

/* Runs the default curve on sim:WHAT (a preset), or on zoo drive `seed` when WHAT is NULL. */
/* Measures `what` (a spec), or zoo drive `seed` when NULL, with the default parameters at
 * measurement seed `mseed`. */
static void run_open_seeded(struct run *g, const char *what, uint64_t seed, uint64_t mseed)
{
	struct dg_engine_config cfg = {.kind = DG_ENGINE_SIM, .qd = 4, .max_io_bytes = 1u << 20};
	struct dg_bandwidth_params p;
	char err[DG_ERRLEN], sim[128], *text = NULL;

	memset(g, 0, sizeof(*g));
	if (what) {
		snprintf(sim, sizeof(sim), "sim:%s", what);
	} else {
		FILE *f;
		int fd;

		assert_int_equal(dg_spec_random(seed, &text), 0);
		snprintf(g->path, sizeof(g->path), "/tmp/diskgeo-bw2-XXXXXX");
		fd = mkstemp(g->path);
		assert_true(fd >= 0);
		f = fdopen(fd, "w");
		assert_non_null(f);
		assert_int_equal(fputs(text, f) >= 0, 1);
		assert_int_equal(fclose(f), 0);
		snprintf(sim, sizeof(sim), "sim:%s", g->path);
	}
	assert_int_equal(dg_device_open(sim, 0, &g->dev, NULL, err, sizeof(err)), 0);
	assert_int_equal(dg_engine_open(g->dev, &cfg, &g->e, NULL, err, sizeof(err)), 0);
	g->spec = dg_device_spec(g->dev);
	assert_int_equal(dg_truth_compute(g->spec, &g->truth), 0);
	if (text)
		load_defects(g, text);
	free(text);
	dg_bandwidth_params_default(&p);
	p.seed = mseed;
	assert_int_equal(
	    dg_bandwidth_run(g->e, dg_device_info(g->dev), &p, &g->errors, NULL, NULL, NULL, &g->r),
	    0);
}

static void run_open(struct run *g, const char *what, uint64_t seed)
{
	run_open_seeded(g, what, seed, 1);
}

static void run_close(struct run *g)
{
	dg_bandwidth_result_free(g->r);
	dg_truth_free(g->truth);
	dg_engine_close(g->e);
	dg_device_close(g->dev);
	dg_errors_free(&g->errors);
	if (g->path[0])
		unlink(g->path);
}

static bool touches_defect(const struct run *g, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < g->ndefects; i++)
		if (lo < g->defect_hi[i] && g->defect_lo[i] < hi)
			return true;
	return false;
}

/* A sample's error against the truth of its bytes (drive-spec.md, "The truth of version 2"). */
static double sample_error(const struct run *g, const struct dg_bandwidth_sample *s)
{
	double t = dg_truth_rate_mb_per_s(g->spec, s->offset_bytes, s->length_bytes), lo = t;

	for (size_t z = 0; z + 1 < g->truth->nzones; z++) {
		uint64_t x = g->truth->zones[z].end_bytes;

		if (x > s->offset_bytes && x < s->offset_bytes + s->length_bytes)
			lo = (double)s->length_bytes /
			     ((double)s->length_bytes / (t * 1e6) + g->truth->period_ms / 1e3) /
			     1e6;
	}
	if (s->mb_per_s < lo)
		return 1 - s->mb_per_s / lo;
	return s->mb_per_s > t ? s->mb_per_s / t - 1 : 0;
}

/* Every sample clear of defects within 3%, their median within 1%. */
static void check_samples(const char *name, const struct run *g)
{
	double *e = calloc(g->r->nsamples + 1, sizeof(*e));
	size_t n = 0;

	assert_non_null(e);
	for (size_t i = 0; i < g->r->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &g->r->samples[i];

		if (touches_defect(g, s->offset_bytes, s->offset_bytes + s->length_bytes))
			continue;
		e[n] = sample_error(g, s);
		if (e[n] > 0.03)
			fail_msg("%s: sample at %llu: %.3f MB/s, %.2f%% off the truth", name,
				 (unsigned long long)s->offset_bytes, s->mb_per_s, 100 * e[n]);
		n++;
	}
	assert_true(n > 0);
	qsort(e, n, sizeof(*e), dg_cmp_double);
	if (e[n / 2] > 0.01)
		fail_msg("%s: median error %.3f%%", name, 100 * e[n / 2]);
	free(e);
}

/* The tolerance of a boundary between spec zones z and z + 1. */
static double boundary_tol(const struct dg_truth *t, size_t z)
{
	double a = (double)(t->zones[z].end_bytes - t->zones[z].start_bytes);
	double b = (double)(t->zones[z + 1].end_bytes - t->zones[z + 1].start_bytes);

	return fmax(0.01 * fmin(a, b), (double)(64u << 20));
}

/* Every spec zone step of 2% or more found; every boundary found at a spec zone change; at most
 * `allowed` misses (each listed) before the test fails. */
static void check_zones(const char *name, const struct run *g, unsigned allowed)
{
	const struct dg_truth *t = g->truth;
	const struct dg_bandwidth_result *r = g->r;
	unsigned misses = 0;

	for (size_t z = 0; z + 1 < t->nzones; z++) {
		double at = (double)t->zones[z].end_bytes;
		bool found = false;

		if (fabs(t->zones[z].mb_per_s / t->zones[z + 1].mb_per_s - 1) < 0.02)
			continue;
		for (size_t k = 0; k + 1 < r->nzones; k++)
			found |= fabs((double)r->zones[k].end_bytes - at) <= boundary_tol(t, z);
		if (!found && ++misses)
			print_message("%s: the %.2f%% step at %.0f bytes was not found\n", name,
				      100 * (t->zones[z].mb_per_s / t->zones[z + 1].mb_per_s - 1),
				      at);
	}
	for (size_t k = 0; k + 1 < r->nzones; k++) {
		double at = (double)r->zones[k].end_bytes;
		bool real = false;

		for (size_t z = 0; z + 1 < t->nzones; z++)
			real |= fabs((double)t->zones[z].end_bytes - at) <= boundary_tol(t, z);
		if (!real && ++misses)
			print_message("%s: a boundary at %.0f bytes where the spec has none\n",
				      name, at);
	}
	if (misses > allowed)
		fail_msg("%s: %u zone boundaries missed or made up", name, misses);
}

/* Each surface rate a zone reports is one of the truth's surface rates of the spec zone under
 * the reported zone's middle (within 1%); `want` of them (the weak head's and the others', or
 * each surface's) in most zones. */
static void check_surface_rates(const char *name, const struct run *g, size_t want)
{
	size_t with_two = 0;

	for (size_t k = 0; k < g->r->nzones; k++) {
		const struct dg_bandwidth_zone *z = &g->r->zones[k];
		uint64_t mid = z->start_bytes + (z->end_bytes - z->start_bytes) / 2;
		const struct dg_truth_zone *tz = NULL;

		for (size_t j = 0; j < g->truth->nzones; j++)
			if (mid >= g->truth->zones[j].start_bytes &&
			    mid < g->truth->zones[j].end_bytes)
				tz = &g->truth->zones[j];
		assert_non_null(tz);
		with_two += z->nsurfaces == want;
		for (size_t s = 0; s < z->nsurfaces; s++) {
			double best = INFINITY;

			for (uint32_t h = 0; h < tz->nsurfaces; h++)
				best = fmin(
				    best,
				    fabs(z->surface_mb_per_s[s] / tz->surface_mb_per_s[h] - 1));
			if (best > 0.01)
				fail_msg(
				    "%s: zone %zu surface rate %.2f MB/s is no surface's (%.2f%%)",
				    name, k, z->surface_mb_per_s[s], 100 * best);
		}
	}
	if (2 * with_two < g->r->nzones)
		fail_msg("%s: %zu surface rates in only %zu of %zu zones", name, want, with_two,
			 g->r->nzones);
}

/* A slow spot only where a defect is: each named range overlaps one of the spec's. */
static unsigned check_slow_spots(const char *name, const struct run *g)
{
	unsigned spots = 0;

	for (size_t i = 0; i < g->r->notes.n; i++) {
		const char *w = strstr(g->r->notes.v[i], "slow spot");
		const char *at = w ? strstr(w, " at bytes ") : NULL;

		if (!at)
			continue;
		for (at += strlen(" at bytes "); *at == '[';) {
			unsigned long long lo, hi;

			assert_int_equal(sscanf(at, "[%llu, %llu)", &lo, &hi), 2);
			spots++;
			if (!touches_defect(g, lo, hi))
				fail_msg("%s: slow spot at [%llu, %llu) on no defect", name, lo,
					 hi);
			at = strstr(at, "), ");
			if (!at)
				break;
			at += 3;
		}
	}
	return spots;
}

/* The default curve of zoo drives seeds[0..n) (n_san under the sanitizers): every sample, the
 * zones, slow spots only on defects, at most 100 s of device time. */
static void check_zoo(const uint64_t *seeds, size_t n, size_t n_san)
{
	for (size_t i = 0; i < t_drives(n, n_san); i++) {
		char name[32];
		struct run g;

		snprintf(name, sizeof(name), "zoo %llu", (unsigned long long)seeds[i]);
		run_open(&g, NULL, seeds[i]);
		check_samples(name, &g);
		check_zones(name, &g, 0);
		check_slow_spots(name, &g);
		if (g.r->device_time_ns > 100ull * 1000000000ull)
			fail_msg("%s: %.1f s of device time", name,
				 (double)g.r->device_time_ns / 1e9);
		run_close(&g);
	}
}

/* Zoo drives of every kind (seeds of bench/zoo 100 that pass every bandwidth bound): per-surface
 * formats (8, 12, 32, 38), serpentines (27, 28, 32, 42, 63, 84), NCQ (12, 14, 21, 28, 38, 42,
 * 63), look-behind (3, 8, 12, 14, 28, 42, 84), jitter (all), background work (3, 12, 21, 27, 28,
 * 42, 63, 84), 512e (8, 21, 27, 38, 84), defects (8, 14, 21, 27). */
static void zoo_drives(void **state)
{
	static const uint64_t seeds[] = {3, 8, 12, 14, 21, 27, 28, 32, 38, 42, 63, 84};

	(void)state;
	check_zoo(seeds, ARRAY_SIZE(seeds), 3);
}

/* Zoo drives whose zones the boundary refinement places (bench/zoo 100 before it: 4 1 miss,
 * 9 11, 60 6, 88 8, 100 8): many small steps under jitter (4), per-surface formats on the
 * cylinder layout with NCQ and look-behind (9, 60, 100), a serpentine (88). Steps of 2% or more
 * are all found and placed within 1% of the shorter zone; smaller steps the samples cannot place
 * are merged, never reported off their place. */
static void zoo_refined_boundaries(void **state)
{
	static const uint64_t seeds[] = {4, 9, 60, 88, 100};

	(void)state;
	check_zoo(seeds, ARRAY_SIZE(seeds), 2);
}

/* Zoo drives on the cylinder layout whose zones step by small amounts, most by 1 to 2% (bench/zoo
 * 100 before bandwidth_step.c: 15 1 miss, 30 2, 31 1, 35 1, 39 1, 52 1, 64 1, 87 1, 90 2):
 * bisection between segments the fit merged from several steps classed by a rate no zone has and
 * cut flat zones (30, 39, 64), a sample misclassed by its noise closed the bracket a zone away
 * (31), a step of 2% went unplaced for want of time (35). Every reported boundary must be a
 * step the samples show; per-surface formats (31, 35, 52, 87, 90), NCQ (35, 39, 64, 90),
 * look-behind (15, 31, 35, 39), 512e (15, 30, 64, 90). */
static void zoo_small_steps(void **state)
{
	static const uint64_t seeds[] = {30, 15, 31, 35, 39, 52, 64, 87, 90};

	(void)state;
	check_zoo(seeds, ARRAY_SIZE(seeds), 2);
}

/* Zoo drives with per-surface formats on the cylinder layout whose curves scatter by 0.5 to 1%
 * (a sample reads part of a cylinder, so its rate depends on the surfaces it covers): the
 * segmentation merged a zone step of 2.06% (69 at 1646 GB: bench/zoo 100 before
 * bandwidth_split.c, 1 miss) into its neighbour; the split where the segment's sides differ,
 * confirmed by two refining samples and bisected, finds it. */
static void zoo_hidden_steps(void **state)
{
	static const uint64_t seeds[] = {69};

	(void)state;
	check_zoo(seeds, ARRAY_SIZE(seeds), 1);
}

/* Per-surface serpentine drives whose surface runs are longer than the curve's sample spacing,
 * zoned from their periodic runs (bandwidth_runs.c; bench/zoo 100 before it: 65 71 boundaries
 * missed or made up, 36 21): 65 has 4 surfaces whose band is a whole zone (runs of 7 GB at
 * levels 5.5% apart, zone steps of 2.2 to 4.6%; in most zones the last surface reads within
 * 0.5% of the next zone's first, one run of two slots split at its middle), 36 has 5 surfaces
 * 8% apart over zone steps of 1.5 to 2.3%. Every zone found, each zone's rates its surfaces'. */
static void zoo_serpentine_runs(void **state)
{
	static const struct {
		uint64_t seed;
		size_t surfaces;
	} drives[] = {{65, 4}, {36, 5}};

	(void)state;
	for (size_t i = 0; i < t_drives(ARRAY_SIZE(drives), 1); i++) {
		char name[32];
		struct run g;

		snprintf(name, sizeof(name), "zoo %llu", (unsigned long long)drives[i].seed);
		run_open(&g, NULL, drives[i].seed);
		check_samples(name, &g);
		check_zones(name, &g, 0);
		assert_int_equal(g.r->nzones, g.truth->nzones);
		check_surface_rates(name, &g, drives[i].surfaces);
		run_close(&g);
	}
}

/* Cylinder drives whose refinement ran out of time (bench/zoo before the rounds of
 * bandwidth_refine.c and the local noise of bandwidth_noise.c: 66 3 misses, 96 2, 127 6): the
 * boundaries taken first had the budget and the last kept their curve brackets, or were left
 * unrefined for want of their reference samples. 66: per-surface formats, 15000 rpm, 21 steps of
 * 2% or more; 96: 105 to 45 MB/s, 29 steps of 2 to 4.6%; 127: per-surface formats, 24 steps. */
static void zoo_slow_cylinders(void **state)
{
	static const uint64_t seeds[] = {66, 96, 127};

	(void)state;
	check_zoo(seeds, ARRAY_SIZE(seeds), 1);
}

/* Zoo drive `seed`'s default curve (not under the sanitizers): every sample, and at most
 * `allowed` zone boundaries missed or made up (a drive's known misses, the count asserted). */
static void check_known_misses(uint64_t seed, unsigned allowed)
{
	char name[32];
	struct run g;

	if (t_drives(1, 0) == 0)
		skip();
	snprintf(name, sizeof(name), "zoo %llu", (unsigned long long)seed);
	run_open(&g, NULL, seed);
	check_samples(name, &g);
	check_zones(name, &g, allowed);
	run_close(&g);
}

/* A per-surface drive of cylinder layout whose must-find steps do not fit the refinement's budget
 * at the curve's sample size (zoo 54: 680 GB, 91 to 38 MB/s, 18 heads, 21 steps of 2 to 3.4%):
 * its refining samples are whole cylinders, the cylinder's time probed once
 * (bandwidth_cylinder.c), each classed by its rate end to end. 23 boundaries missed or made up
 * before (samples of 16 MiB, the brackets 0.2 to 0.9 GB when the budget ran out); 7 with them,
 * three steps 114 to 151 MB off where their tolerance is 108 to 139 MB and one 2.10% step the
 * curve shows as 1.88% (left to the rest of the budget, which is spent): known misses, the
 * count asserted. */
static void zoo_cylinder_samples(void **state)
{
	(void)state;
	check_known_misses(54, 7);
}

/* A per-surface serpentine drive whose surface levels are rejected (zoo 55: 7 heads 12.9% apart,
 * zones of about 5 band groups, 7 steps of 2% or more): the curve is left with one zone, and zone
 * starts come from band-group strobes walked from the inner end while time lasts
 * (bandwidth_strobe.c). 6 boundaries missed before it (every must-find step); 3 with it, none
 * made up: the count asserted, so that a strobe start placed off or made up fails. Zoo 86 (10
 * heads, the curve's period half the band group: the group measured at twice it): 6 missed
 * before, 4 since the period's multiple is told by a strobe. */
static void zoo_band_strobes(void **state)
{
	(void)state;
	check_known_misses(55, 3);
	check_known_misses(86, 4);
}

/* Per-surface serpentine drives where a refining sample reads a surface of one zone that reads
 * like another of the next, so that its rate cannot tell the side (bench/zoo 100 before
 * bandwidth_composite.c and bandwidth_period.c: 16 and 83 put two boundaries and one 8-11 GB
 * early, where bisection stopped). 16: 4 heads, bands of 9617 cylinders (surface runs of 20 GB,
 * longer than the curve's spacing: the side from the band's period on the curve); 83: 2 heads,
 * bands of 29 cylinders (runs of 80 MB: a composite of sub-reads over many bands reads the
 * zone's rate). */
static void zoo_surface_sides(void **state)
{
	static const uint64_t seeds[] = {16, 83};

	(void)state;
	check_zoo(seeds, ARRAY_SIZE(seeds), 1);
}

/* The per-surface presets: samples priced by their own bytes hold whatever surface they read
 * (the Exos's zones are not asserted: its surfaces, a few percent apart, still hide its steps). The
 * IronWolf's background scan (40 ms every 60 s) stalls one sample: re-measured, not a slow spot. */
static void per_surface_presets(void **state)
{
	static const char *const presets[] = {"ironwolf-8tb-weak-head", "exos-x16-16tb"};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(presets); i++) {
		struct run g;
		bool passing = false;

		run_open(&g, presets[i], 0);
		check_samples(presets[i], &g);
		/* The IronWolf's weak head is a surface level 10% below the others: taken out, its
		 * 24 zones show (the first boundary, at 452 GB, still lands 16 GB early). */
		if (i == 0) {
			assert_int_equal(g.r->nzones, g.truth->nrecording);
			check_zones(presets[i], &g, 2);
			check_surface_rates(presets[i], &g, 2);
		}
		assert_int_equal(check_slow_spots(presets[i], &g), 0);
		for (size_t k = 0; k < g.r->notes.n; k++)
			passing |= strstr(g.r->notes.v[k], "did not come back") != NULL;
		if (i == 0 && !passing)
			fail_msg("%s: the busy period's stall was not re-measured", presets[i]);
		run_close(&g);
	}
}

/* A slow range stays slow when re-measured: zoo 21's slow range at LBA 25640 (42 ms) is named. */
static void slow_spot_stays(void **state)
{
	struct run g;

	(void)state;
	run_open(&g, NULL, 21);
	assert_true(g.ndefects > 0);
	assert_true(check_slow_spots("zoo 21", &g) >= 1);
	run_close(&g);
}

/* How many of the measured zones read more than 0.5% faster than the zone before; whether the
 * run's notes say that such zones are no recording zones. */
static size_t rises(const struct run *g, bool *said)
{
	size_t n = 0;

	for (size_t i = 1; i < g->r->nzones; i++)
		n += g->r->zones[i].mb_per_s > 1.005 * g->r->zones[i - 1].mb_per_s;
	*said = false;
	for (size_t i = 0; i < g->r->notes.n; i++)
		*said |= strstr(g->r->notes.v[i], "faster than the zone before") != NULL;
	return n;
}

/* Zoo drive 110 with its sixth zone given 3% more sectors per track than its fifth: a zone that
 * reads faster than the one before, which the run must say. Into `path` (a mkstemp template). */
static void rising_spec(char *path)
{
	char *text = NULL;
	json_t *doc, *zones, *prev;
	int fd;

	assert_int_equal(dg_spec_random(110, &text), 0);
	doc = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(doc);
	zones = json_object_get(doc, "zones");
	prev = json_object_get(json_array_get(zones, 4), "sectors_per_track");
	assert_true(json_is_integer(prev));
	assert_int_equal(json_object_set_new(json_array_get(zones, 5), "sectors_per_track",
					     json_integer(json_integer_value(prev) * 103 / 100)),
			 0);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(close(fd), 0);
	assert_int_equal(json_dump_file(doc, path, 0), 0);
	json_decref(doc);
}

/* A recording zone never reads faster than the one outside it (the truth's zones fall on every
 * zoo drive): a zone that reads faster is said, with the note that the zone count is not to be
 * trusted. Zoo 110 with a zone 3% faster than the one before (rising_spec) shows it and says
 * so. Zoo 233 (18 heads, cylinder layout, NCQ, background work) showed a zone 0.9% faster than
 * the one before, between two boundaries that no true step is near (408 and 418 GB, 31 and 36
 * tolerances off): small steps whose sides' samples do not stand apart, dropped since
 * (bw_step_stands), and its zones are now every true one. Zoo 123, a per-surface serpentine
 * drive, rose until zones_surfaces.c's k-means was made exact; zoo 65 (four surfaces whose band
 * is a whole zone: runs of 7 GB at levels 5.5% apart over zone steps of 2.2%, ten rises and
 * more before its zones came from its runs), zoo 8 (cylinder) and zoo 48 (per-surface
 * serpentine, levels fitted) show no rise and say nothing. */
static void rising_zones_said(void **state)
{
	const uint64_t seeds[] = {0, 233, 65, 8, 48};
	char path[] = "/tmp/diskgeo-bw2-rise-XXXXXX";

	(void)state;
	rising_spec(path);
	for (size_t k = 0; k < ARRAY_SIZE(seeds); k++) {
		struct run g;
		bool said;
		size_t n;

		run_open(&g, seeds[k] ? NULL : path, seeds[k]);
		for (size_t i = 1; seeds[k] && i < g.truth->nzones; i++)
			assert_true(g.truth->zones[i].mb_per_s < g.truth->zones[i - 1].mb_per_s);
		n = rises(&g, &said);
		if (seeds[k] == 0)
			assert_true(n >= 1);
		else
			assert_int_equal(n, 0);
		assert_int_equal(said, n > 0);
		if (seeds[k] == 233)
			check_zones("zoo 233", &g, 0);
		run_close(&g);
	}
	unlink(path);
}

/* Serpentine zoo drives whose zones step by 0.5 to 1.7% under surfaces that scatter the samples
 * by +-5%: the curve falls like a ramp, and the segmentation cut it into 2 to 5 zones at places
 * no step is (bench/zoo 100 before bandwidth_ramp.c: 40 1 made up, 80 1, 18 2). The cuts are
 * merged with a note: one zone, no boundary made up, every sample still priced right. */
static void zoo_ramps(void **state)
{
	static const uint64_t seeds[] = {40, 80, 18};

	(void)state;
	check_zoo(seeds, ARRAY_SIZE(seeds), 1);
	for (size_t k = 0; k < t_drives(ARRAY_SIZE(seeds), 1); k++) {
		struct run g;
		bool said = false;

		run_open(&g, NULL, seeds[k]);
		for (size_t i = 0; i < g.r->notes.n; i++)
			said |= strstr(g.r->notes.v[i], "like a ramp") != NULL;
		if (!said)
			fail_msg("zoo %llu: no note on the merged cuts",
				 (unsigned long long)seeds[k]);
		run_close(&g);
	}
}

/* A per-surface drive on the cylinder layout whose curve falls in a staircase of 2.1 to 2.5% steps
 * over zones of 6.7 GB, under 1.7% of scatter (zoo 53, 306 GB): the segmentation merges zones in
 * pairs, and the ramp test (bandwidth_ramp.c) merged all 9 of its cuts before it applied only to
 * curves that scatter by a zone step or show surface levels (10 steps missed, one zone). Its cuts
 * now stand and are refined: every boundary reported is a true step, and at most 5 of its 2%
 * steps are missed (the hidden-split search runs out of time; bench/zoo counts them). */
static void zoo_fine_staircase(void **state)
{
	struct run g;

	(void)state;
	run_open(&g, NULL, 53);
	check_samples("zoo 53", &g);
	assert_true(g.r->nzones >= 6);
	check_zones("zoo 53", &g, 5);
	run_close(&g);
}

/* A sample shorter than two cylinders holds one cylinder step among its head switches, and its
 * wait stands out as the one-off the fit takes out for a zone change: held-out zoo 130 (14
 * heads, a 1.7 ms track-to-track at 5400 rpm: 2.7% of a sample) read samples 3.1% fast
 * (bench/zoo --first 101 before bandwidth_zones.c put the waits that cluster back). 126, a
 * serpentine whose one-offs are zone changes at boundaries too small to find, keeps them out.
 * Every sample within 3% of the truth of its own bytes. */
static void cylinder_steps_counted(void **state)
{
	static const uint64_t seeds[] = {130, 126};

	(void)state;
	for (size_t k = 0; k < t_drives(ARRAY_SIZE(seeds), 1); k++) {
		char name[32];
		struct run g;

		snprintf(name, sizeof(name), "zoo %llu", (unsigned long long)seeds[k]);
		run_open(&g, NULL, seeds[k]);
		check_samples(name, &g);
		run_close(&g);
	}
}

/* A serpentine band's turn: the head switch there costs more than the cylinder steps about it
 * and stands out as a one-off in the few samples (4 or 5 of 500) that hold one; held-out zoo 123
 * (12 heads, bands of 1203 cylinders, a 1.35 ms head switch against a 0.38 ms track-to-track)
 * read them up to 4.0% fast in `profile --seed 1..4` (3.09% here at seed 1) with the turns'
 * waits kept out as zone changes. They cost one wait each (1.36-1.42 ms), which zone changes
 * waiting anywhere in a turn do not: put back (bandwidth_zones.c). Every sample within 3% at
 * every seed. */
static void band_turns_counted(void **state)
{
	(void)state;
	for (uint64_t m = 1; m <= t_drives(4, 1); m++) {
		char name[32];
		struct run g;

		snprintf(name, sizeof(name), "zoo 123 seed %llu", (unsigned long long)m);
		run_open_seeded(&g, NULL, 123, m);
		check_samples(name, &g);
		run_close(&g);
	}
}

/* Per-surface serpentine drives whose zones are shorter than a band group (held-out zoo 123: 12
 * heads, a zone half a band; 160: 13 heads, a tenth): each zone holds one run per surface, the
 * zone step (2-5%) is as large as the gaps between surfaces, and the joint fit of the surface
 * levels put whole runs on the neighbouring level, its boundaries 4 to 25 tolerances off (40 and
 * 43 missed or made up). The levels are declined where a zone holds fewer than 2.5 runs of one
 * level per level (bandwidth_levels.c) and the surfaces' period places the zones
 * (bandwidth_zperiod.c): 13 and 4, none made up. */
static void short_zone_levels(void **state)
{
	static const struct {
		uint64_t seed;
		unsigned allowed;
	} d[] = {{123, 13}, {160, 4}};

	(void)state;
	for (size_t i = 0; i < t_drives(ARRAY_SIZE(d), 1); i++) {
		char name[32];
		struct run g;

		snprintf(name, sizeof(name), "zoo %llu", (unsigned long long)d[i].seed);
		run_open(&g, NULL, d[i].seed);
		check_zones(name, &g, d[i].allowed);
		run_close(&g);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(zoo_drives),
	    cmocka_unit_test(zoo_refined_boundaries),
	    cmocka_unit_test(zoo_small_steps),
	    cmocka_unit_test(zoo_hidden_steps),
	    cmocka_unit_test(zoo_slow_cylinders),
	    cmocka_unit_test(zoo_surface_sides),
	    cmocka_unit_test(zoo_cylinder_samples),
	    cmocka_unit_test(zoo_band_strobes),
	    cmocka_unit_test(per_surface_presets),
	    cmocka_unit_test(slow_spot_stays),
	    cmocka_unit_test(rising_zones_said),
	    cmocka_unit_test(cylinder_steps_counted),
	    cmocka_unit_test(zoo_ramps),
	    cmocka_unit_test(zoo_serpentine_runs),
	    cmocka_unit_test(zoo_fine_staircase),
	    cmocka_unit_test(band_turns_counted),
	    cmocka_unit_test(short_zone_levels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
