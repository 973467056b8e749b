/* SPDX-License-Identifier: MIT */
/* Tests of drive-spec parsing, validation, derived geometry and mapping (src/model/spec*.c). */
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

/* A tiny drive: T = 10 ms, zone 0 = 3 cylinders x 2 heads x 100 sectors, zone 1 = 2 x 2 x 50;
 * seek(d) = 1.5 + 0.5 sqrt(d) (2.0 ms for one cylinder), head switch 0.5 ms. */
#define HEAD "\"heads\":2,\"rpm\":6000,\"head_switch_ms\":0.5,"
#define ZONES                                                                                      \
	"\"zones\":[{\"cylinders\":3,\"sectors_per_track\":100},{\"cylinders\":2,\"sectors_per_"   \
	"track\":50}],"
#define SEEK "\"seek\":{\"a\":1.5,\"b\":0.5,\"c\":0,\"e\":0,\"boundary_cylinders\":1000}"
#define TINY "{" HEAD ZONES SEEK "}"

static struct dg_spec *parse(const char *text)
{
	struct dg_spec *s = NULL;
	char err[DG_ERRLEN] = "";
	int rc = dg_spec_parse(text, strlen(text), "t.json", &s, NULL, err, sizeof(err));
	if (rc)
		fail_msg("parse failed: %s", err);
	return s;
}

struct bad_case {
	const char *json;
	int rc;
	const char *needle; /* must appear in err */
};

static const struct bad_case bad_cases[] = {
    {"{" HEAD ZONES SEEK ",\"bogus\":1}", -EINVAL, "unknown key 'bogus'"},
    {"{" HEAD SEEK ",\"zones\":[{\"cylinders\":3,\"sectors_per_track\":100,\"spt\":3}]}", -EINVAL,
     "zones[0].spt"},
    {"{" HEAD ZONES
     "\"seek\":{\"a\":1.5,\"b\":0.5,\"c\":0,\"e\":0,\"boundary_cylinders\":9,\"f\":1}}",
     -EINVAL, "seek.f"},
    {"{" HEAD ZONES SEEK ",\"defects\":[{\"lba\":1,\"count\":1,\"kind\":\"slow\","
     "\"extra_ms\":1,\"where\":2}]}",
     -EINVAL, "defects[0].where"},
    {"{\"heads\":0,\"rpm\":6000,\"head_switch_ms\":0.5," ZONES SEEK "}", -EINVAL,
     "t.json: heads: must be a positive integer (got 0)"},
    {"{" HEAD SEEK ",\"zones\":[{\"cylinders\":3,\"sectors_per_track\":100},"
     "{\"cylinders\":2,\"sectors_per_track\":-5}]}",
     -EINVAL, "t.json: zones[1].sectors_per_track: must be a positive integer (got -5)"},
    {"{" HEAD SEEK ",\"zones\":[{\"cylinders\":0,\"sectors_per_track\":100}]}", -EINVAL,
     "zones[0].cylinders: must be a positive integer (got 0)"},
    {"{" HEAD SEEK ",\"zones\":[]}", -EINVAL, "zones"},
    {"{" HEAD ZONES SEEK ",\"layout\":\"spiral\"}", -EINVAL, "layout"},
    {"{" HEAD ZONES SEEK ",\"layout\":\"serpentine\"}", -EINVAL, "band_cylinders: missing"},
    {"{" HEAD ZONES SEEK ",\"band_cylinders\":4}", -EINVAL, "band_cylinders"},
    {"{" HEAD ZONES "\"seek\":{\"track_to_track_ms\":5,\"average_ms\":6,\"full_stroke_ms\":4}}",
     -EINVAL, "seek"},
    {"{" HEAD ZONES "\"seek\":{\"track_to_track_ms\":1,\"average_ms\":9,\"full_stroke_ms\":8}}",
     -EINVAL, "average_ms"},
    {"{" HEAD ZONES "\"seek\":{\"track_to_track_ms\":-1,\"average_ms\":5,\"full_stroke_ms\":8}}",
     -EINVAL, "seek.track_to_track_ms"},
    {"{" HEAD ZONES "\"seek\":{\"track_to_track_ms\":1,\"average_ms\":5}}", -EINVAL,
     "seek.full_stroke_ms: missing"},
    {"{" HEAD ZONES "\"seek\":{\"a\":1,\"b\":1,\"c\":1,\"e\":1,\"boundary_cylinders\":9,"
     "\"average_ms\":5}}",
     -EINVAL, "either"},
    {"{\"heads\":2,\"rpm\":6000,\"head_switch_ms\":-0.5," ZONES SEEK "}", -EINVAL,
     "head_switch_ms"},
    {"{" HEAD ZONES SEEK ",\"capacity_sectors\":801}", -EINVAL, "capacity_sectors"},
    {"{" HEAD ZONES SEEK ",\"capacity_sectors\":700,\"defects\":[{\"lba\":699,\"count\":2,"
     "\"kind\":\"error\",\"extra_ms\":1}]}",
     -EINVAL, "defects[0]"},
    {"{" HEAD ZONES SEEK ",\"defects\":[{\"lba\":1,\"count\":2,\"kind\":\"bad\","
     "\"extra_ms\":1}]}",
     -EINVAL, "defects[0].kind"},
    {"{" HEAD ZONES SEEK ",\"defects\":[{\"lba\":1,\"count\":2,\"kind\":\"slow\","
     "\"extra_ms\":-1}]}",
     -EINVAL, "defects[0].extra_ms"},
    {"{" HEAD ZONES SEEK ",\"defects\":[{\"lba\":1,\"count\":5,\"kind\":\"slow\",\"extra_ms\":1},"
     "{\"lba\":3,\"count\":5,\"kind\":\"slow\",\"extra_ms\":1}]}",
     -EINVAL, "overlap"},
    {"{" HEAD ZONES SEEK ",\"logical_sector_bytes\":1000}", -EINVAL, "logical_sector_bytes"},
    {"{" HEAD ZONES SEEK ",\"cache_bytes\":1000,\"read_ahead_bytes\":2000}", -EINVAL,
     "read_ahead_bytes"},
    {"{" HEAD ZONES SEEK ",\"heads\":3}", -EINVAL, "duplicate"},
    {"{\"heads\":2,\"rpm\":\"fast\",\"head_switch_ms\":0.5," ZONES SEEK "}", -EINVAL, "rpm"},
    {"{" HEAD ZONES "\"name\":\"x\"}", -EINVAL, "seek: missing"},
    {"{heads: 2}", -EINVAL, "line 1"},
    {"[1,2]", -EINVAL, "object"},
};

static void bad_specs(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad_cases); i++) {
		struct dg_spec *s = (struct dg_spec *)1;
		char err[DG_ERRLEN] = "";
		const struct bad_case *c = &bad_cases[i];
		int rc =
		    dg_spec_parse(c->json, strlen(c->json), "t.json", &s, NULL, err, sizeof(err));
		if (rc != c->rc || !strstr(err, c->needle) || s != NULL)
			fail_msg("case %zu: rc %d, err '%s' (want %d, '%s')", i, rc, err, c->rc,
				 c->needle);
		assert_null(strchr(err, '\n'));
	}
}

/* Every file of the shared bad-input corpus is refused with one line naming the file; good.json
 * loads. */
static void badinput_corpus(void **state)
{
	static const char *const files[] = {
	    "bad-layout",
	    "bad-sector-size",
	    "capacity-beyond-geometry",
	    "defect-bad-kind",
	    "defect-outside-capacity",
	    "defect-straddles-end",
	    "defect-zero-count",
	    "empty-zones",
	    "empty",
	    "fraction-heads",
	    "huge-sectors-per-track",
	    "missing-heads",
	    "missing-zones",
	    "negative-cylinders",
	    "negative-head-switch",
	    "negative-heads",
	    "negative-read-ahead",
	    "negative-rpm",
	    "not-json",
	    "seek-average-above-full",
	    "seek-full-below-t2t",
	    "seek-negative",
	    "serpentine-zero-band",
	    "string-heads",
	    "top-level-array",
	    "trailing-garbage",
	    "unknown-key-defect",
	    "unknown-key-seek",
	    "unknown-key-top",
	    "unknown-key-zone",
	    "zero-capacity",
	    "zero-cylinders",
	    "zero-heads",
	    "zero-rpm",
	    "zero-sectors-per-track",
	    "zone-not-object",
	    "absurd-rpm",
	    "negative-track-skew",
	    "overflow-geometry",
	    "overflow-sectors-per-track",
	};
	char path[512], err[DG_ERRLEN];
	struct dg_spec *s;

	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "%s/tests/badinput/%s.json", DG_SOURCE_DIR, files[i]);
		err[0] = 0;
		int rc = dg_spec_load(path, &s, NULL, err, sizeof(err));
		if (rc != -EINVAL || !strstr(err, files[i]))
			fail_msg("%s: rc %d err '%s'", files[i], rc, err);
	}
	snprintf(path, sizeof(path), "%s/tests/badinput/good.json", DG_SOURCE_DIR);
	assert_int_equal(dg_spec_load(path, &s, NULL, err, sizeof(err)), 0);
	dg_spec_free(s);
}

static void missing_file(void **state)
{
	struct dg_spec *s = (struct dg_spec *)1;
	char err[DG_ERRLEN] = "";

	assert_int_equal(dg_spec_load("/nonexistent/drive.json", &s, NULL, err, sizeof(err)),
			 -ENOENT);
	assert_null(s);
	assert_string_equal(err, "cannot open /nonexistent/drive.json: No such file or directory");
	assert_int_equal(dg_spec_load("no-such-drive", &s, NULL, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no-such-drive"));
	assert_non_null(strstr(err, "wd-red-4tb")); /* lists the built-ins */
}

/* Defects arrive in any order: they come out sorted by LBA (qsort, issue 15: the old insertion
 * sort was quadratic on a descending list), and an overlap is found whatever the order. The
 * limits on text size, zones and defects are checked before the work they bound. */
static void defects_sorted_and_limits(void **state)
{
	enum { N = 3000 };
	static char text[N * 64 + 512];
	struct dg_spec *s;
	char err[DG_ERRLEN] = "";
	size_t len;

	len = (size_t)snprintf(text, sizeof(text),
			       "{" HEAD
			       "\"zones\":[{\"cylinders\":100,\"sectors_per_track\":100}]," SEEK
			       ",\"defects\":[");
	for (int i = 0; i < N; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					"%s{\"lba\":%d,\"count\":1,\"kind\":\"%s\",\"extra_ms\":1}",
					i ? "," : "", (N - i) * 2, i % 2 ? "slow" : "error");
	snprintf(text + len, sizeof(text) - len, "]}");
	s = parse(text);
	assert_int_equal(s->ndefects, N);
	for (size_t i = 0; i < N; i++)
		assert_int_equal(s->defects[i].lba, 2 * (i + 1));
	dg_spec_free(s);

	/* an overlap given in reverse order */
	static const char overlap[] =
	    "{" HEAD ZONES SEEK ",\"defects\":[{\"lba\":105,\"count\":4,\"kind\":\"slow\","
	    "\"extra_ms\":1},{\"lba\":100,\"count\":6,\"kind\":\"slow\",\"extra_ms\":1}]}";
	assert_int_equal(
	    dg_spec_parse(overlap, strlen(overlap), "t.json", &s, NULL, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.json: defects: ranges overlap (at lba 105)");

	/* more text than the limit: refused before parsing (the text is not even JSON) */
	size_t big = DG_SPEC_MAX_FILE_BYTES + 1;
	char *junk = malloc(big);
	assert_non_null(junk);
	memset(junk, '[', big);
	assert_int_equal(dg_spec_parse(junk, big, "t.json", &s, NULL, err, sizeof(err)), -EINVAL);
	assert_string_equal(
	    err, "t.json: 1048577 bytes, more than the limit of 1048576 for a drive spec");
	free(junk);
}

static void presets_load(void **state)
{
	const char *const *names;
	size_t n = dg_spec_presets(&names);
	char err[DG_ERRLEN], path[512];

	assert_int_equal(n, 6);
	for (size_t i = 0; i < n; i++) {
		struct dg_spec *s, *f;
		struct dg_warnings w = {0};
		assert_int_equal(dg_spec_load(names[i], &s, &w, err, sizeof(err)), 0);
		assert_int_equal(w.n, 0); /* the published figures are feasible */
		assert_string_equal(dg_spec_name(s), names[i]);
		assert_true(dg_spec_capacity_bytes(s) > 100ull * 1000 * 1000 * 1000);
		/* the installed file is the same drive */
		snprintf(path, sizeof(path), "%s/presets/%s.json", DG_SOURCE_DIR, names[i]);
		assert_int_equal(dg_spec_load(path, &f, NULL, err, sizeof(err)), 0);
		assert_int_equal(dg_spec_capacity_bytes(f), dg_spec_capacity_bytes(s));
		dg_spec_free(f);
		dg_spec_free(s);
		dg_warnings_free(&w);
	}
	struct dg_spec *s;
	assert_int_equal(dg_spec_load("wd-red-4tb", &s, NULL, err, sizeof(err)), 0);
	assert_int_equal(dg_spec_capacity_bytes(s), 4000787030016ull);
	assert_int_equal(dg_spec_sector_bytes(s), 512);
	assert_true(dg_spec_rpm(s) == 5400.0);
	dg_spec_free(s);
}

static void expect_chs(const struct dg_spec *s, uint64_t lba, uint32_t zone, uint32_t cyl,
		       uint32_t head, uint32_t sector, uint64_t track)
{
	struct dg_chs c;

	assert_int_equal(dg_spec_map(s, lba, &c), 0);
	if (c.zone != zone || c.cylinder != cyl || c.head != head || c.sector != sector ||
	    c.track != track)
		fail_msg("lba %llu: got z%u c%u h%u s%u t%llu, want z%u c%u h%u s%u t%llu",
			 (unsigned long long)lba, c.zone, c.cylinder, c.head, c.sector,
			 (unsigned long long)c.track, zone, cyl, head, sector,
			 (unsigned long long)track);
}

static void map_cylinder(void **state)
{
	struct dg_spec *s = parse(TINY);
	struct dg_chs c;

	expect_chs(s, 0, 0, 0, 0, 0, 0);
	expect_chs(s, 99, 0, 0, 0, 99, 0);
	expect_chs(s, 100, 0, 0, 1, 0, 1);  /* next head, same cylinder */
	expect_chs(s, 200, 0, 1, 0, 0, 2);  /* next cylinder */
	expect_chs(s, 599, 0, 2, 1, 99, 5); /* last LBA of zone 0 */
	expect_chs(s, 600, 1, 3, 0, 0, 6);  /* first LBA of zone 1 */
	expect_chs(s, 649, 1, 3, 0, 49, 6);
	expect_chs(s, 650, 1, 3, 1, 0, 7);
	expect_chs(s, 799, 1, 4, 1, 49, 9); /* the last LBA */
	assert_int_equal(dg_spec_map(s, 800, &c), -EINVAL);
	assert_int_equal(dg_spec_capacity_bytes(s), 800 * 512);
	dg_spec_free(s);
}

/* Serpentine, K = 2 cylinders per band, 2 heads, a zone of 5 cylinders: bands {0,1}, {2,3},
 * {4}. Head 0 walks a band forward, head 1 backward. */
static void map_serpentine(void **state)
{
	struct dg_spec *s =
	    parse("{\"heads\":2,\"rpm\":6000,\"head_switch_ms\":0.5,\"layout\":\"serpentine\","
		  "\"band_cylinders\":2,\"zones\":[{\"cylinders\":5,\"sectors_per_track\":10},"
		  "{\"cylinders\":3,\"sectors_per_track\":8}]," SEEK "}");
	static const uint32_t want[][2] = {
	    /* zone 0: track -> (cylinder, head) */
	    {0, 0}, {1, 0}, {1, 1}, {0, 1}, /* band 0: h0 forward, h1 backward */
	    {2, 0}, {3, 0}, {3, 1}, {2, 1}, /* band 1 */
	    {4, 0}, {4, 1},		    /* band 2: one cylinder */
	};

	for (uint32_t j = 0; j < 10; j++) {
		expect_chs(s, j * 10, 0, want[j][0], want[j][1], 0, j);
		expect_chs(s, j * 10 + 9, 0, want[j][0], want[j][1], 9, j);
	}
	/* zone 1 starts at cylinder 5: bands {5,6}, {7} */
	expect_chs(s, 100, 1, 5, 0, 0, 10);
	expect_chs(s, 108, 1, 6, 0, 0, 11);
	expect_chs(s, 116, 1, 6, 1, 0, 12); /* reversal: head 1 starts at the band's end */
	expect_chs(s, 124, 1, 5, 1, 0, 13);
	expect_chs(s, 132, 1, 7, 0, 0, 14);
	expect_chs(s, 140, 1, 7, 1, 0, 15);
	expect_chs(s, 147, 1, 7, 1, 7, 15);

	/* transitions before a track and the skew offsets built from them */
	const struct dg_zone *z = &s->zones[0];
	uint64_t n[DG_TR_N];
	dg_zone_transitions(s, z, 5, n); /* into tracks 1..5: c h c | band | c */
	assert_int_equal(n[DG_TR_CYL], 3);
	assert_int_equal(n[DG_TR_HEAD], 1);
	assert_int_equal(n[DG_TR_BAND], 1);
	dg_zone_transitions(s, z, 9, n);
	assert_int_equal(n[DG_TR_CYL], 4);
	assert_int_equal(n[DG_TR_HEAD], 3);
	assert_int_equal(n[DG_TR_BAND], 2);
	/* defaults: T = 10 ms, S = 10: head ceil(0.5/10*10)+1 = 2; cylinder seek(1) = 2.0 ms ->
	 * 2+1 = 3; band: 2 heads (even), so the band change moves K = 2 cylinders: seek(2) =
	 * 1.5+0.5*sqrt(2) = 2.207 ms -> ceil(2.207)+1 = 4 */
	assert_int_equal(z->skew[DG_TR_HEAD], 2);
	assert_int_equal(z->skew[DG_TR_CYL], 3);
	assert_int_equal(z->skew[DG_TR_BAND], 4);
	assert_int_equal(dg_zone_track_offset(s, z, 5), (3 * 3 + 1 * 2 + 1 * 4) % 10);
	dg_spec_free(s);
}

static void default_skews(void **state)
{
	struct dg_spec *s = parse(TINY);

	/* zone 0: S = 100, T = 10 ms: head ceil(0.5/10*100)+1 = 6, cylinder ceil(2/10*100)+1 = 21
	 */
	assert_int_equal(s->zones[0].skew[DG_TR_HEAD], 6);
	assert_int_equal(s->zones[0].skew[DG_TR_CYL], 21);
	/* zone 1: S = 50: ceil(2.5)+1 = 4, ceil(10)+1 = 11 */
	assert_int_equal(s->zones[1].skew[DG_TR_HEAD], 4);
	assert_int_equal(s->zones[1].skew[DG_TR_CYL], 11);
	/* track 3 of zone 0 (cylinder 1, head 1): transitions h, c, h -> 6+21+6 */
	assert_int_equal(dg_zone_track_offset(s, &s->zones[0], 3), 33);
	dg_spec_free(s);

	/* overrides: top level, and per zone over top level */
	s = parse("{" HEAD SEEK ",\"track_skew\":7,\"cylinder_skew\":30,\"zones\":["
		  "{\"cylinders\":3,\"sectors_per_track\":100},"
		  "{\"cylinders\":2,\"sectors_per_track\":50,\"track_skew\":1}]}");
	assert_int_equal(s->zones[0].skew[DG_TR_HEAD], 7);
	assert_int_equal(s->zones[0].skew[DG_TR_CYL], 30);
	assert_int_equal(s->zones[1].skew[DG_TR_HEAD], 1);
	assert_int_equal(s->zones[1].skew[DG_TR_CYL], 30);
	dg_spec_free(s);
}

static void seek_and_moves(void **state)
{
	struct dg_spec *s = parse(TINY);

	assert_true(dg_spec_seek_ms(s, 0) == 0.0);
	assert_float_equal(dg_spec_seek_ms(s, 1), 2.0, 1e-12);
	assert_float_equal(dg_spec_seek_ms(s, 4), 2.5, 1e-12);
	assert_float_equal(dg_spec_move_ms(s, 0, 99), 0.0, 1e-12);  /* same track */
	assert_float_equal(dg_spec_move_ms(s, 0, 100), 0.5, 1e-12); /* head switch */
	assert_float_equal(dg_spec_move_ms(s, 0, 200), 2.0, 1e-12); /* one cylinder */
	assert_float_equal(dg_spec_move_ms(s, 0, 799), 2.5, 1e-12); /* four cylinders */
	assert_true(isnan(dg_spec_move_ms(s, 0, 800)));
	dg_spec_free(s);
}

/* The friendly figures are reproduced: seek(1) = t2t, seek(N-1) = full, and the mean over
 * pairs of distinct cylinders is the average (summed directly here). */
static void friendly_seek_reproduced(void **state)
{
	const char *const *names;
	size_t n = dg_spec_presets(&names);
	char err[DG_ERRLEN];
	static const double figures[][3] = {
	    /* t2t, average, full as in presets/ (in dg_spec_presets order) */
	    {0.2, 3.5, 7.0},  {0.6, 8.5, 17.0},	 {1.0, 11.0, 21.0},
	    {0.8, 9.5, 19.0}, {0.8, 11.0, 22.0}, {1.0, 12.0, 24.0},
	};

	for (size_t i = 0; i < n; i++) {
		struct dg_spec *s;
		assert_int_equal(dg_spec_load(names[i], &s, NULL, err, sizeof(err)), 0);
		double N = s->cylinders, acc = 0.0;
		for (uint64_t d = 1; d < s->cylinders; d++)
			acc += 2.0 * (N - (double)d) / (N * (N - 1.0)) * dg_spec_seek_ms(s, d);
		assert_float_equal(dg_spec_seek_ms(s, 1), figures[i][0], 1e-9);
		assert_float_equal(dg_spec_seek_ms(s, s->cylinders - 1), figures[i][2], 1e-9);
		if (fabs(acc / figures[i][1] - 1.0) > 1e-3)
			fail_msg("%s: mean over cylinder pairs %.5f, want %.5f", names[i], acc,
				 figures[i][1]);
		/* the two pieces meet with equal value and slope at the boundary */
		double B = s->seek_boundary;
		assert_float_equal(s->seek_a + s->seek_b * sqrt(B), s->seek_c + s->seek_e * B,
				   1e-9);
		assert_float_equal(s->seek_b / (2.0 * sqrt(B)), s->seek_e, 1e-12);
		dg_spec_free(s);
	}
}

/* An average outside the feasible band is clamped with a warning, not refused. */
static void friendly_seek_clamped(void **state)
{
	const char *text = "{" HEAD "\"zones\":[{\"cylinders\":1000,\"sectors_per_track\":100}],"
			   "\"seek\":{\"track_to_track_ms\":1,\"average_ms\":1.5,"
			   "\"full_stroke_ms\":20}}";
	struct dg_spec *s;
	struct dg_warnings w = {0};
	char err[DG_ERRLEN];

	assert_int_equal(dg_spec_parse(text, strlen(text), "c.json", &s, &w, err, sizeof(err)), 0);
	assert_int_equal(w.n, 1);
	assert_non_null(strstr(w.v[0], "average_ms"));
	assert_float_equal(s->seek_boundary, 1.0, 1e-12); /* linear */
	assert_float_equal(dg_spec_seek_ms(s, 1), 1.0, 1e-9);
	assert_float_equal(dg_spec_seek_ms(s, 999), 20.0, 1e-9);
	dg_spec_free(s);
	dg_warnings_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(bad_specs),
	    cmocka_unit_test(badinput_corpus),
	    cmocka_unit_test(missing_file),
	    cmocka_unit_test(presets_load),
	    cmocka_unit_test(defects_sorted_and_limits),
	    cmocka_unit_test(map_cylinder),
	    cmocka_unit_test(map_serpentine),
	    cmocka_unit_test(default_skews),
	    cmocka_unit_test(seek_and_moves),
	    cmocka_unit_test(friendly_seek_reproduced),
	    cmocka_unit_test(friendly_seek_clamped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
