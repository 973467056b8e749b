/* SPDX-License-Identifier: MIT */
/* Tests of the truth a spec implies (src/model/truth.c): hand computations on tiny drives,
 * brute-force enumerations, and cross-checks with the drive model (src/model/drive.c). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "diskgeo/model.h"
#include "model_priv.h"
#include "util.h"

/* T = 10 ms, 2 heads; zone 0 = 3 cylinders x 100 sectors (600), zone 1 = 2 x 50 (200);
 * seek(d) = 1.5 + 0.5 sqrt(d); head switch 0.5 ms; overhead 0.1 ms. Default skews: zone 0
 * head 6 / cylinder 21 sectors (0.6 / 2.1 ms), zone 1 head 4 / cylinder 11 (0.8 / 2.2 ms). */
#define HEAD "\"heads\":2,\"rpm\":6000,\"head_switch_ms\":0.5,\"command_overhead_ms\":0.1,"
#define ZONES                                                                                      \
	"\"zones\":[{\"cylinders\":3,\"sectors_per_track\":100},{\"cylinders\":2,\"sectors_per_"   \
	"track\":50}],"
#define HEAD3 "\"heads\":3,\"rpm\":6000,\"head_switch_ms\":0.5,"
#define SEEK  "\"seek\":{\"a\":1.5,\"b\":0.5,\"c\":0,\"e\":0,\"boundary_cylinders\":1000}"

static struct dg_spec *parse(const char *text)
{
	struct dg_spec *s = NULL;
	char err[DG_ERRLEN] = "";
	if (dg_spec_parse(text, strlen(text), "t.json", &s, NULL, err, sizeof(err)))
		fail_msg("parse failed: %s", err);
	return s;
}

static double seek_hand(double d)
{
	return d == 0 ? 0.0 : 1.5 + 0.5 * sqrt(d);
}

/* Mean of dg_spec_move_ms over all ordered LBA pairs in [lo, hi): the definition, enumerated. */
static double brute_average(const struct dg_spec *s, uint64_t lo, uint64_t hi)
{
	double sum = 0.0;
	for (uint64_t a = lo; a < hi; a++)
		for (uint64_t b = lo; b < hi; b++)
			sum += dg_spec_move_ms(s, a, b);
	return sum / (double)((hi - lo) * (hi - lo));
}

static double brute_seek_at(const struct dg_spec *s, uint64_t D)
{
	uint64_t cap = s->capacity_sectors;
	double sum = 0.0;
	for (uint64_t x = 0; x + D < cap; x++)
		sum += dg_spec_move_ms(s, x, x + D);
	return sum / (double)(cap - D);
}

static void tiny_by_hand(void **state)
{
	struct dg_spec *s = parse("{" HEAD ZONES SEEK "}");
	struct dg_truth *t;

	assert_int_equal(dg_truth_compute(s, &t), 0);
	assert_int_equal(t->capacity_bytes, 800 * 512);
	assert_int_equal(t->sector_bytes, 512);
	assert_float_equal(t->rpm, 6000, 1e-12);
	assert_float_equal(t->period_ms, 10, 1e-12);
	assert_int_equal(t->nzones, 2);
	/* zone 0: 600 sectors * 0.1 ms + 3 head switches * 0.6 + 2 cylinder steps * 2.1 = 66 ms */
	assert_int_equal(t->zones[0].start_bytes, 0);
	assert_int_equal(t->zones[0].end_bytes, 600 * 512);
	assert_int_equal(t->zones[0].sectors_per_track, 100);
	assert_int_equal(t->zones[0].cylinders, 3);
	assert_float_equal(t->zones[0].mb_per_s, 600 * 512 / 66e-3 / 1e6, 1e-9);
	/* zone 1: 200 * 0.2 + 2 * 0.8 + 1 * 2.2 = 43.8 ms */
	assert_int_equal(t->zones[1].start_bytes, 600 * 512);
	assert_int_equal(t->zones[1].end_bytes, 800 * 512);
	assert_float_equal(t->zones[1].mb_per_s, 200 * 512 / 43.8e-3 / 1e6, 1e-9);
	assert_int_equal(t->nrecording, 2);
	/* seek figures */
	assert_int_equal(t->cylinders, 5);
	assert_float_equal(t->track_to_track_ms, 2.0, 1e-12);
	assert_float_equal(t->full_stroke_ms, seek_hand(4), 1e-12); /* LBA 799: cylinder 4 */
	double avg_cyl = 0.0;					    /* P(D = d) = 2(5-d)/20 */
	for (int d = 1; d < 5; d++)
		avg_cyl += 2.0 * (5 - d) / 20.0 * seek_hand(d);
	assert_float_equal(t->average_cylinder_ms, avg_cyl, 1e-12);
	/* cylinders hold 200, 200, 200, 100, 100 sectors; one head each half: the mean over LBA
	 * pairs, by hand from the cylinder weights */
	double p[5] = {0.25, 0.25, 0.25, 0.125, 0.125}, avg = 0.0;
	for (int a = 0; a < 5; a++)
		for (int b = 0; b < 5; b++)
			avg += p[a] * p[b] * seek_hand(abs(a - b));
	for (int c = 0; c < 5; c++)
		avg += (p[c] * p[c] - 2 * (p[c] / 2) * (p[c] / 2)) * 0.5; /* other head */
	assert_float_equal(t->average_ms, avg, 1e-12);
	assert_float_equal(t->average_ms, brute_average(s, 0, 800), 1e-9);
	assert_float_equal(t->seek_a_ms, 1.5, 1e-12);
	assert_float_equal(t->head_switch_ms, 0.5, 1e-12);
	assert_float_equal(t->command_overhead_ms, 0.1, 1e-12);

	/* rates over ranges: time-weighted across zones */
	assert_float_equal(dg_truth_rate_mb_per_s(s, 0, 800 * 512), 800 * 512 / 109.8e-3 / 1e6,
			   1e-9);
	assert_float_equal(dg_truth_rate_mb_per_s(s, 1024, 4096), t->zones[0].mb_per_s, 1e-9);
	/* random 4 KiB over everything: overhead + mean move + T/2 + transfer at the zone rate
	 * (0.88 ms in zone 0, 1.752 ms in zone 1, weighted 3:1) */
	assert_float_equal(dg_truth_random_ms(s, 0, 800 * 512, 4096),
			   0.1 + avg + 5.0 + 0.75 * 0.88 + 0.25 * 1.752, 1e-9);
	/* over zone 1 only */
	assert_float_equal(dg_truth_random_ms(s, 600 * 512, 200 * 512, 4096),
			   0.1 + brute_average(s, 600, 800) + 5.0 + 1.752, 1e-9);
	dg_truth_free(t);
	dg_spec_free(s);
}

static void seek_at_distance(void **state)
{
	static const char *const specs[] = {
	    "{" HEAD ZONES SEEK "}",
	    "{" HEAD ZONES SEEK ",\"capacity_sectors\":750}",
	    "{" HEAD SEEK ",\"layout\":\"serpentine\",\"band_cylinders\":2,\"zones\":["
	    "{\"cylinders\":5,\"sectors_per_track\":10},{\"cylinders\":3,\"sectors_per_track\":8}]"
	    "}",
	    /* the walk's shortcuts: whole periods of a zone skipped (several full bands, then a
	     * short one; odd heads; bands of one cylinder; a capacity inside a zone) */
	    "{" HEAD3 SEEK ",\"layout\":\"serpentine\",\"band_cylinders\":3,\"zones\":["
	    "{\"cylinders\":11,\"sectors_per_track\":7},{\"cylinders\":7,\"sectors_per_track\":5}]"
	    "}",
	    "{" HEAD SEEK ",\"layout\":\"serpentine\",\"band_cylinders\":1,\"zones\":["
	    "{\"cylinders\":20,\"sectors_per_track\":9},{\"cylinders\":9,\"sectors_per_track\":6}]"
	    "}",
	    "{" HEAD3 SEEK ",\"capacity_sectors\":700,\"zones\":["
	    "{\"cylinders\":12,\"sectors_per_track\":11},{\"cylinders\":4,\"sectors_per_track\":11}"
	    ","
	    "{\"cylinders\":9,\"sectors_per_track\":8}]}",
	};
	static const uint64_t dists[] = {1, 7, 37, 49, 50, 99, 100, 101, 150, 250, 599, 600, 700};

	for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
		struct dg_spec *s = parse(specs[i]);
		for (size_t k = 0; k < ARRAY_SIZE(dists); k++) {
			if (dists[k] >= s->capacity_sectors)
				continue;
			double want = brute_seek_at(s, dists[k]);
			double got = dg_truth_seek_at_ms(s, dists[k] * 512);
			if (fabs(got - want) > 1e-9)
				fail_msg("spec %zu D %llu: %.12f, want %.12f", i,
					 (unsigned long long)dists[k], got, want);
		}
		assert_float_equal(dg_truth_seek_at_ms(s, 0), 0.0, 1e-12);
		/* the whole capacity: only x = 0, the full stroke */
		assert_float_equal(dg_truth_seek_at_ms(s, dg_spec_capacity_bytes(s)),
				   dg_spec_move_ms(s, 0, s->capacity_sectors - 1), 1e-12);
		struct dg_truth *t;
		assert_int_equal(dg_truth_compute(s, &t), 0);
		assert_float_equal(t->average_ms, brute_average(s, 0, s->capacity_sectors), 1e-9);
		dg_truth_free(t);
		dg_spec_free(s);
	}
}

/* A capacity that ends inside a zone: the zone is cut, its rate counts only what is used. */
static void truncated_capacity(void **state)
{
	struct dg_spec *s = parse("{" HEAD ZONES SEEK ",\"capacity_sectors\":750}");
	struct dg_truth *t;

	assert_int_equal(dg_truth_compute(s, &t), 0);
	assert_int_equal(t->capacity_bytes, 750 * 512);
	assert_int_equal(t->zones[1].end_bytes, 750 * 512);
	/* 150 sectors over tracks 0..2 of zone 1: 150 * 0.2 + head 0.8 + cylinder 2.2 = 33 ms */
	assert_float_equal(t->zones[1].mb_per_s, 150 * 512 / 33e-3 / 1e6, 1e-9);
	assert_float_equal(t->full_stroke_ms, seek_hand(4), 1e-12); /* LBA 749: cylinder 4 */
	dg_truth_free(t);
	dg_spec_free(s);
}

/* Serpentine: 10 tracks of 10 sectors (1 ms each); skews head 2, cylinder 3, band 4 sectors;
 * the zone's walk crosses 4 cylinder steps, 3 head switches and 2 band changes. */
static void serpentine_rate_and_drive(void **state)
{
	struct dg_spec *s = parse("{\"heads\":2,\"rpm\":6000,\"head_switch_ms\":0.5,"
				  "\"layout\":\"serpentine\",\"band_cylinders\":2,\"zones\":["
				  "{\"cylinders\":5,\"sectors_per_track\":10},"
				  "{\"cylinders\":3,\"sectors_per_track\":8}]," SEEK "}");
	struct dg_truth *t;
	struct dg_drive *d;
	uint64_t done;

	assert_int_equal(dg_truth_compute(s, &t), 0);
	double ms = 100 + 4 * 3 + 3 * 2 + 2 * 4;
	assert_float_equal(t->zones[0].mb_per_s, 100 * 512 / (ms / 1e3) / 1e6, 1e-9);
	/* the drive reading the whole zone in one command from angle 0 takes exactly that */
	assert_int_equal(dg_drive_new(s, &d), 0);
	assert_int_equal(dg_drive_access(d, 0, false, 0, 100, &done), 100 * 512);
	assert_int_equal(done, (uint64_t)llround(ms * 1e6));
	dg_drive_free(d);
	dg_truth_free(t);
	dg_spec_free(s);
}

/* The drive walks the zones at exactly the truth's rates. */
static void drive_cross_check(void **state)
{
	struct dg_spec *s = parse("{" HEAD ZONES SEEK "}");
	struct dg_truth *t;
	struct dg_drive *d;
	uint64_t d1, d2;

	assert_int_equal(dg_truth_compute(s, &t), 0);
	assert_int_equal(dg_drive_new(s, &d), 0);
	/* zone 0 in one command: after the 0.1 ms overhead sector 0 (angle 0) has just passed,
	 * so the drive waits 9.9 ms for it, then reads the zone in 66 ms */
	assert_int_equal(dg_drive_access(d, 0, false, 0, 600, &d1), 600 * 512);
	assert_int_equal(d1, 76000000);
	assert_float_equal(600 * 512 / ((double)(d1 - 10000000) / 1e9) / 1e6, t->zones[0].mb_per_s,
			   1e-6);
	dg_drive_free(d);
	/* zone 1: after its first sector, the stream reads the other 199 in 43.8 - 0.2 ms */
	assert_int_equal(dg_drive_new(s, &d), 0);
	assert_int_equal(dg_drive_access(d, 0, false, 600, 1, &d1), 512);
	assert_int_equal(dg_drive_access(d, d1, false, 601, 199, &d2), 199 * 512);
	assert_int_equal(d2 - d1, 43600000);
	dg_drive_free(d);
	dg_truth_free(t);
	dg_spec_free(s);
}

/* The old walk of a range, track by track (the definition: every track's share of T and every
 * transition crossed with its time), to check the closed-form counts of src/model/truth.c. */
static double brute_walk_ms(const struct dg_spec *s, const struct dg_zone *z, uint64_t a,
			    uint64_t b)
{
	uint64_t j, jl;
	uint32_t sa, sl, spt;
	double t = 0.0, T = s->period_ms;

	dg_zone_locate(s, z, a, &j, &sa, &spt);
	dg_zone_locate(s, z, b - 1, &jl, &sl, &spt);
	for (uint64_t k = j; k <= jl; k++) {
		uint32_t S, h;
		uint64_t first = dg_zone_track_first(s, z, k, &S);
		uint64_t lo = a > first ? a : first, hi = b < first + S ? b : first + S;
		t += (double)(hi - lo) * T / S;
		if (k > j) {
			int kind = dg_zone_transition_into(s, z, k, &h);
			double tau = z->move_ms[kind];
			uint32_t Sh = z->hspt[h];
			double w = fmod((double)z->hskew[kind * s->heads + h] * T / Sh - tau, T);
			if (w < 0)
				w += T;
			if (w > T * (1.0 - 1e-9))
				w = 0.0;
			t += tau + w;
		}
	}
	return t;
}

/*
 * The fast paths of the truth against brute force on drives big enough to take them: seek at
 * every LBA distance (across zones: the closed form where every move is past the seek curve's
 * boundary, the halving, the cylinder walk), the mean move over the whole drive and over spans
 * (per-cylinder weights from whole bands and passes), and sequential walks over ranges and zones
 * (per-head counts). Per-surface serpentine drives with short last bands, a one-size serpentine
 * drive with a capacity inside a zone, per-surface and one-size cylinder layouts.
 */
static void fast_paths_brute(void **state)
{
#define FAST                                                                                       \
	"\"rpm\":6000,\"head_switch_ms\":0.5,\"interface_mbps\":100000,"                           \
	"\"seek\":{\"a\":1.5,\"b\":0.5,\"c\":2,\"e\":0.25,\"boundary_cylinders\":4},"
	static const char *const specs[] = {
	    "{\"heads\":2," FAST "\"zones\":[{\"cylinders\":120,\"sectors_per_track\":[3,2]},"
	    "{\"cylinders\":90,\"sectors_per_track\":[2,2]},{\"cylinders\":150,"
	    "\"sectors_per_track\":[2,1]}]}",
	    "{\"heads\":3," FAST "\"layout\":\"serpentine\",\"band_cylinders\":7,\"zones\":["
	    "{\"cylinders\":40,\"sectors_per_track\":[3,2,2]},{\"cylinders\":33,"
	    "\"sectors_per_track\":[2,2,1]},{\"cylinders\":50,\"sectors_per_track\":[1,2,1]}]}",
	    /* zones of whole bands: the walk to a zone's end lands one band past its last */
	    "{\"heads\":3," FAST "\"layout\":\"serpentine\",\"band_cylinders\":5,\"zones\":["
	    "{\"cylinders\":40,\"sectors_per_track\":[3,2,2]},{\"cylinders\":35,"
	    "\"sectors_per_track\":[2,2,1]}]}",
	    "{\"heads\":2," FAST "\"layout\":\"serpentine\",\"band_cylinders\":6,\"zones\":["
	    "{\"cylinders\":100,\"sectors_per_track\":[2,3]},{\"cylinders\":45,"
	    "\"sectors_per_track\":[1,2]}]}",
	    "{\"heads\":2," FAST "\"layout\":\"serpentine\",\"band_cylinders\":5,"
	    "\"capacity_sectors\":500,\"zones\":[{\"cylinders\":60,\"sectors_per_track\":3},"
	    "{\"cylinders\":47,\"sectors_per_track\":2}]}",
	    "{\"heads\":2," FAST "\"zones\":[{\"cylinders\":100,\"sectors_per_track\":3},"
	    "{\"cylinders\":80,\"sectors_per_track\":2}]}",
	    /* one size, many heads: a head's pass repeats inside a band (bands shorter than
	     * their zone, and zones shorter than a band) */
	    "{\"heads\":4," FAST "\"layout\":\"serpentine\",\"band_cylinders\":9,\"zones\":["
	    "{\"cylinders\":20,\"sectors_per_track\":2},{\"cylinders\":6,\"sectors_per_track\":3},"
	    "{\"cylinders\":13,\"sectors_per_track\":1}]}",
	    "{\"heads\":5," FAST "\"layout\":\"serpentine\",\"band_cylinders\":50,"
	    "\"capacity_sectors\":370,\"zones\":[{\"cylinders\":30,\"sectors_per_track\":2},"
	    "{\"cylinders\":17,\"sectors_per_track\":1}]}",
	};
#undef FAST
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
		struct dg_spec *s = parse(specs[i]);
		uint64_t cap = s->capacity_sectors;
		for (uint64_t D = 1; D < cap; D++) {
			double want = brute_seek_at(s, D);
			double got = dg_truth_seek_at_ms(s, D * 512);
			if (fabs(got - want) > 1e-9 * want)
				fail_msg("spec %zu D %llu: seek at %.12f, want %.12f", i,
					 (unsigned long long)D, got, want);
		}
		struct dg_truth *t;
		assert_int_equal(dg_truth_compute(s, &t), 0);
		double avg = brute_average(s, 0, cap);
		if (fabs(t->average_ms - avg) > 1e-9 * avg)
			fail_msg("spec %zu: average %.12f, want %.12f", i, t->average_ms, avg);
		/* spans: the random read time less its other terms is the mean move */
		for (uint64_t lo = 0; lo < cap; lo += cap / 5 + 3) {
			uint64_t hi = lo + cap / 3 < cap ? lo + cap / 3 : cap;
			double xfer = 0.0;
			for (size_t k = 0; k < t->nzones; k++) {
				const struct dg_zone *z = &s->zones[k];
				uint64_t a = lo > z->first_lba ? lo : z->first_lba;
				uint64_t b =
				    hi < z->first_lba + z->sectors ? hi : z->first_lba + z->sectors;
				if (a < b)
					xfer += (double)(b - a) / (double)(hi - lo) * 512 / DG_MB /
						t->zones[k].mb_per_s * 1e3;
			}
			double move = dg_truth_random_ms(s, lo * 512, (hi - lo) * 512, 512) -
				      s->command_overhead_ms - s->period_ms / 2 - xfer;
			double want = brute_average(s, lo, hi);
			if (fabs(move - want) > 1e-9 * want)
				fail_msg("spec %zu span [%llu, %llu): mean move %.12f, want %.12f",
					 i, (unsigned long long)lo, (unsigned long long)hi, move,
					 want);
		}
		/* sequential walks: whole zones and ranges inside a zone */
		for (size_t k = 0; k < t->nzones; k++) {
			const struct dg_zone *z = &s->zones[k];
			uint64_t used =
			    z->first_lba + z->sectors < cap ? z->sectors : cap - z->first_lba;
			double want =
			    (double)used * 512 / DG_MB / (brute_walk_ms(s, z, 0, used) / 1e3);
			if (fabs(t->zones[k].mb_per_s - want) > 1e-9 * want)
				fail_msg("spec %zu zone %zu: %.12f MB/s, want %.12f", i, k,
					 t->zones[k].mb_per_s, want);
			if (!s->v2)
				continue;
			for (uint64_t a = 0; a < used; a += 5)
				for (uint64_t b = a + 1; b <= used; b += 7) {
					double r = dg_truth_rate_mb_per_s(
					    s, (z->first_lba + a) * 512, (b - a) * 512);
					double w = (double)(b - a) * 512 / DG_MB /
						   (brute_walk_ms(s, z, a, b) / 1e3);
					if (fabs(r - w) > 1e-9 * w)
						fail_msg(
						    "spec %zu zone %zu [%llu, %llu): %.12f, want "
						    "%.12f",
						    i, k, (unsigned long long)a,
						    (unsigned long long)b, r, w);
				}
		}
		dg_truth_free(t);
		dg_spec_free(s);
	}
}

/* On the presets: the closed-form average agrees with sampling dg_spec_move_ms, and the
 * truth's zones tile the capacity with falling rates. */
static void presets_consistent(void **state)
{
	const char *const *names;
	size_t n = dg_spec_presets(&names);
	char err[DG_ERRLEN];

	for (size_t i = 0; i < n; i++) {
		struct dg_spec *s;
		struct dg_truth *t;
		assert_int_equal(dg_spec_load(names[i], &s, NULL, err, sizeof(err)), 0);
		assert_int_equal(dg_truth_compute(s, &t), 0);
		assert_int_equal(t->zones[0].start_bytes, 0);
		assert_int_equal(t->zones[t->nzones - 1].end_bytes, t->capacity_bytes);
		for (size_t z = 1; z < t->nzones; z++) {
			assert_int_equal(t->zones[z].start_bytes, t->zones[z - 1].end_bytes);
			assert_true(t->zones[z].mb_per_s < t->zones[z - 1].mb_per_s);
		}
		/* deterministic sample of random LBA pairs */
		uint64_t st = 12345 + i, cap = s->capacity_sectors;
		double sum = 0.0;
		const int N = 400000;
		for (int k = 0; k < N; k++) {
			st = st * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t a = (st >> 11) % cap;
			st = st * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t b = (st >> 11) % cap;
			sum += dg_spec_move_ms(s, a, b);
		}
		double sampled = sum / N;
		print_message("%-20s average %.4f ms (sampled %.4f), t2t %.3f, full %.3f, outer "
			      "%.2f inner %.2f MB/s\n",
			      names[i], t->average_ms, sampled, t->track_to_track_ms,
			      t->full_stroke_ms, t->zones[0].mb_per_s,
			      t->zones[t->nzones - 1].mb_per_s);
		assert_true(fabs(sampled / t->average_ms - 1.0) < 0.01);
		/* seek at a distance grows towards the full stroke */
		double prev = 0.0;
		for (uint64_t D = 1ull << 30; D < t->capacity_bytes / 2; D *= 4) {
			double v = dg_truth_seek_at_ms(s, D);
			assert_true(v > prev);
			assert_true(v < t->full_stroke_ms);
			prev = v;
		}
		dg_truth_free(t);
		dg_spec_free(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(tiny_by_hand),	  cmocka_unit_test(seek_at_distance),
	    cmocka_unit_test(truncated_capacity), cmocka_unit_test(serpentine_rate_and_drive),
	    cmocka_unit_test(drive_cross_check),  cmocka_unit_test(presets_consistent),
	    cmocka_unit_test(fast_paths_brute),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
