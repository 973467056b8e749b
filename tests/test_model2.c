/* SPDX-License-Identifier: MIT */
/*
 * Drive model v2 (issue 12) against hand-computed cases and against truth v2, in virtual time:
 * per-surface mapping in both layouts, read-modify-write (+T exactly), look-behind, SPTF order
 * on a hand-built queue, held commands decoded from their own hold time, background work (a busy
 * period ends the read-ahead), jitter (mean within 5%, media time line unchanged); the zoo (500
 * seeds load and round-trip); and the request-level model vs the truth on the new presets and five
 * zoo drives: sequential rates within 0.5%, random 4 KiB IOPS at QD 1, 4, 16, 32 through the sim
 * engine within 3% of the reference simulation.
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

#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "diskgeo/model.h"
#include "model_priv.h"
#include "seqrate.h"

static struct dg_spec *parse(const char *json)
{
	struct dg_spec *s = NULL;
	char err[DG_ERRLEN] = "";
	int rc = dg_spec_parse(json, strlen(json), "test", &s, NULL, err, sizeof(err));
	if (rc)
		print_message("parse: %s\n", err);
	assert_int_equal(rc, 0);
	return s;
}

/* T = 10 ms (6000 rpm); seek(d) = 1 + 1*sqrt(d)-ish; head switch 0.5 ms */
#define BASE                                                                                       \
	"\"rpm\":6000,\"seek\":{\"a\":1,\"b\":1,\"c\":1,\"e\":1,\"boundary_cylinders\":1000},"     \
	"\"head_switch_ms\":0.5,\"read_ahead_bytes\":0,"

static void per_surface_mapping(void **state)
{
	(void)state;
	/* cylinder layout, heads of 100 and 80 sectors: a cylinder holds 180 */
	struct dg_spec *s = parse("{\"heads\":2," BASE "\"zones\":[{\"cylinders\":4,"
				  "\"sectors_per_track\":[100,80]}]}");
	struct dg_chs c;
	assert_int_equal(s->capacity_sectors, 4 * 180);
	assert_int_equal(dg_spec_map(s, 99, &c), 0);
	assert_int_equal(c.cylinder, 0);
	assert_int_equal(c.head, 0);
	assert_int_equal(c.sector, 99);
	assert_int_equal(dg_spec_map(s, 100, &c), 0);
	assert_int_equal(c.head, 1);
	assert_int_equal(c.sector, 0);
	assert_int_equal(dg_spec_map(s, 180 + 105, &c), 0);
	assert_int_equal(c.cylinder, 1);
	assert_int_equal(c.head, 1);
	assert_int_equal(c.sector, 5);
	/* angle skews: head switch 0.5 ms on head 1 (80 sectors, T 10 ms): k = ceil(4)+1 = 5, so
	 * track 1 starts at 5/80 of a turn; the cylinder step seek(1) = 2 ms onto head 0 (100
	 * sectors): k = 21, so track 2 starts at 5/80 + 21/100 */
	const struct dg_zone *z = &s->zones[0];
	assert_true(fabs(dg_zone_sector_angle(s, z, 1, 0) - 5.0 / 80) < 1e-12);
	assert_true(fabs(dg_zone_sector_angle(s, z, 2, 0) - (5.0 / 80 + 21.0 / 100)) < 1e-12);
	assert_true(fabs(dg_zone_sector_angle(s, z, 2, 10) - (5.0 / 80 + 31.0 / 100)) < 1e-12);
	/* the truth's moves over per-surface tracks: seek at an LBA distance and the mean over
	 * random LBA pairs, against brute force over dg_spec_move_ms */
	for (uint64_t D = 50; D < 720; D += 170) {
		double sum = 0;
		for (uint64_t x = 0; x + D < 720; x++)
			sum += dg_spec_move_ms(s, x, x + D);
		assert_true(fabs(dg_truth_seek_at_ms(s, D * 512) - sum / (double)(720 - D)) < 1e-9);
	}
	double all = 0;
	for (uint64_t x = 0; x < 720; x++)
		for (uint64_t y = 0; y < 720; y++)
			all += dg_spec_move_ms(s, x, y);
	struct dg_truth *t = NULL;
	assert_int_equal(dg_truth_compute(s, &t), 0);
	assert_true(fabs(t->average_ms - all / (720.0 * 720.0)) < 1e-9);
	/* surface rates: 100 and 80 sectors per turn, less the cylinder step's skew time
	 * (seek(1) = 2 ms onto skews 21 and 17 sectors: 2.1 and 2.125 ms) */
	assert_true(fabs(t->zones[0].surface_mb_per_s[0] - 100 * 512 / 1e6 / (12.1e-3)) < 1e-9);
	assert_true(fabs(t->zones[0].surface_mb_per_s[1] - 80 * 512 / 1e6 / (12.125e-3)) < 1e-9);
	dg_truth_free(t);
	dg_spec_free(s);
	/* the same in a serpentine layout with whole bands and a short last one */
	s = parse("{\"heads\":2," BASE "\"layout\":\"serpentine\",\"band_cylinders\":2,"
		  "\"zones\":[{\"cylinders\":7,\"sectors_per_track\":[10,8]},"
		  "{\"cylinders\":4,\"sectors_per_track\":[8,6]}]}");
	uint64_t cap = s->capacity_sectors;
	for (uint64_t D = 1; D < cap; D++) {
		double sum = 0;
		for (uint64_t x = 0; x + D < cap; x++)
			sum += dg_spec_move_ms(s, x, x + D);
		assert_true(fabs(dg_truth_seek_at_ms(s, D * 512) - sum / (double)(cap - D)) < 1e-9);
	}
	dg_spec_free(s);
	/* serpentine, bands of 2 cylinders, 3 cylinders: band 0 = head 0 (cyl 0,1), head 1 (cyl
	 * 1,0); band 1 (1 cylinder) = head 0 cyl 2, head 1 cyl 2. Prefix sums: band 0 holds 2*180
	 */
	s = parse("{\"heads\":2," BASE "\"layout\":\"serpentine\",\"band_cylinders\":2,"
		  "\"zones\":[{\"cylinders\":3,\"sectors_per_track\":[100,80]}]}");
	assert_int_equal(dg_spec_map(s, 150, &c), 0); /* head 0, second track: cyl 1 */
	assert_int_equal(c.cylinder, 1);
	assert_int_equal(c.head, 0);
	assert_int_equal(c.sector, 50);
	assert_int_equal(dg_spec_map(s, 200 + 85, &c), 0); /* head 1, second track: cyl 0 */
	assert_int_equal(c.cylinder, 0);
	assert_int_equal(c.head, 1);
	assert_int_equal(c.sector, 5);
	assert_int_equal(dg_spec_map(s, 360 + 100, &c), 0); /* band 1: head 1, cyl 2 */
	assert_int_equal(c.cylinder, 2);
	assert_int_equal(c.head, 1);
	assert_int_equal(c.sector, 0);
	dg_spec_free(s);
}

/* A 512e drive: a write inside one physical sector costs exactly T more than the aligned
 * write of that physical sector. */
static void rmw_plus_t(void **state)
{
	(void)state;
	struct dg_spec *s = parse("{\"heads\":2," BASE "\"physical_sector_bytes\":4096,"
				  "\"zones\":[{\"cylinders\":40,\"sectors_per_track\":800}]}");
	struct dg_drive *a, *b;
	uint64_t da, db;
	assert_int_equal(dg_drive_new(s, &a), 0);
	assert_int_equal(dg_drive_new(s, &b), 0);
	assert_int_equal(dg_drive_access(a, 0, true, 8000, 8, &da), 4096);
	assert_int_equal(dg_drive_access(b, 0, true, 8001, 1, &db), 512);
	assert_int_equal((int64_t)db - (int64_t)da, 10000000); /* T = 10 ms */
	/* a misaligned read covers the physical sectors: same time as the aligned one */
	dg_drive_free(a);
	dg_drive_free(b);
	assert_int_equal(dg_drive_new(s, &a), 0);
	assert_int_equal(dg_drive_access(a, 0, false, 8001, 1, &db), 512);
	assert_int_equal(db, da);
	dg_drive_free(a);
	dg_spec_free(s);
}

/* Look-behind: a read of a sector that passed under the head during the wait is a hit. */
static void look_behind_hit(void **state)
{
	(void)state;
	for (int lb = 0; lb < 2; lb++) {
		char json[512];
		snprintf(json, sizeof(json),
			 "{\"heads\":1," BASE "\"look_behind\":%s,\"zones\":[{\"cylinders\":10,"
			 "\"sectors_per_track\":100}]}",
			 lb ? "true" : "false");
		struct dg_spec *s = parse(json);
		struct dg_drive *d;
		uint64_t done, done2;
		assert_int_equal(dg_drive_new(s, &d), 0);
		/* at t = 0 the head is at angle 0 on track 0: LBA 80 is 8 ms away; sectors 0..79
		 * pass during the wait */
		assert_int_equal(dg_drive_access(d, 0, false, 80, 1, &done), 512);
		assert_int_equal(done, 8100000);
		assert_int_equal(dg_drive_access(d, done, false, 40, 1, &done2), 512);
		if (lb) /* a hit: one sector over the 550 MB/s link */
			assert_true(done2 - done < 2000);
		else /* back round the track */
			assert_true(done2 - done > 5000000);
		dg_drive_free(d);
		dg_spec_free(s);
	}
}

/* One 8-sector read at t; returns how long it took (ns) and advances t. */
static uint64_t read8(struct dg_drive *d, uint64_t *t, uint64_t lba)
{
	uint64_t t0 = *t;

	assert_int_equal(dg_drive_access(d, t0, false, lba, 8, t), 4096);
	return *t - t0;
}

/* cache_segments (diskgeo's extension): a place read before a far one is still a hit with 2
 * segments, not with 1 (the far read took the only segment: a seek back and a wait); the least
 * recently used kept segment is dropped first, and a hit makes its segment the most recent. */
static void cache_segments_kept(void **state)
{
	(void)state;
	for (int nseg = 1; nseg <= 3; nseg++) {
		char json[512];
		snprintf(json, sizeof(json),
			 "{\"heads\":1," BASE "\"cache_segments\":%d,\"zones\":[{\"cylinders\":"
			 "100,\"sectors_per_track\":100}]}",
			 nseg);
		struct dg_spec *s = parse(json);
		struct dg_drive *d;
		uint64_t t = 0, hit = 10000, miss = 1000000; /* ns: 8 sectors over the link */
		/* places A, B, C, D on tracks 5, 50, 90, 70 (read-ahead 0) */
		enum { A = 500, B = 5000, C = 9000, D = 7000 };

		assert_int_equal(dg_drive_new(s, &d), 0);
		read8(d, &t, A);
		read8(d, &t, B);
		read8(d, &t, C); /* kept: none (1), B (2: A dropped), A and B (3) */
		if (nseg == 3) {
			assert_true(read8(d, &t, A) < hit); /* A is now the most recent */
			read8(d, &t, D); /* C kept, B (the least recent) dropped */
			assert_true(read8(d, &t, A) < hit);
			assert_true(read8(d, &t, C) < hit);
			assert_true(read8(d, &t, B) > miss);
		} else {
			assert_true((read8(d, &t, B) < hit) == (nseg == 2));
			assert_true(read8(d, &t, A) > miss);
		}
		dg_drive_free(d);
		dg_spec_free(s);
	}
}

/* SPTF on a hand-built queue: with the head at LBA 0's track, of a far LBA, a near-later LBA
 * and a near-earlier one, the drive serves the nearest first, then by positioning time. */
static void sptf_order(void **state)
{
	(void)state;
	struct dg_spec *s = parse("{\"heads\":1," BASE "\"ncq_depth\":32,"
				  "\"zones\":[{\"cylinders\":1000,\"sectors_per_track\":100}]}");
	struct dg_drive *d;
	uint64_t tag, done, prev = 0;
	int64_t r;
	assert_int_equal(dg_drive_new(s, &d), 0);
	/* queued at 0 in this order: far (cyl 900), same track sector 50, cyl 1 sector 90 */
	assert_int_equal(dg_drive_queue(d, 0, false, 90000, 1, 0), 0);
	assert_int_equal(dg_drive_queue(d, 0, false, 50, 1, 1), 0);
	assert_int_equal(dg_drive_queue(d, 0, false, 190, 1, 2), 0);
	static const uint64_t want[3] = {1, 2, 0};
	for (int i = 0; i < 3; i++) {
		assert_int_equal(dg_drive_step(d, &tag, &r, &done), 1);
		assert_int_equal(tag, want[i]);
		assert_int_equal(r, 512);
		assert_true(done > prev);
		prev = done;
	}
	assert_int_equal(dg_drive_step(d, &tag, &r, &done), 0);
	/* the first: same track, sector 50 at 5 ms, read by 5.1 ms */
	dg_drive_free(d);
	dg_spec_free(s);
}

/* Queued commands are each decoded command_overhead after they are held (drive-spec.md "The
 * host link and command decoding", read as truth.c and truth_sweep.c read it): A (sector 60)
 * and B (sector 50) of track 0 held at 0, overhead 0.1 ms, T = 10 ms. At 0.1 both are decoded,
 * so the drive serves B first (sector 50 at 5 ms, done 5.1) and then A (sector 60 at 6 ms,
 * done 6.1). A decoder taking them in turn would serve A at 6.1 and B at 15.1. */
static void ncq_decodes_held(void **state)
{
	(void)state;
	struct dg_spec *s =
	    parse("{\"heads\":1," BASE "\"ncq_depth\":32,\"command_overhead_ms\":0.1,"
		  "\"zones\":[{\"cylinders\":10,\"sectors_per_track\":100}]}");
	struct dg_drive *d;
	uint64_t tag, done;
	int64_t r;
	assert_int_equal(dg_drive_new(s, &d), 0);
	assert_int_equal(dg_drive_queue(d, 0, false, 60, 1, 0), 0);
	assert_int_equal(dg_drive_queue(d, 0, false, 50, 1, 1), 0);
	assert_int_equal(dg_drive_next_ns(d), 100000);
	assert_int_equal(dg_drive_step(d, &tag, &r, &done), 1);
	assert_int_equal(tag, 1);
	assert_true(fabs((double)done / 1e6 - 5.1) < 1e-5);
	assert_int_equal(dg_drive_step(d, &tag, &r, &done), 1);
	assert_int_equal(tag, 0);
	assert_true(fabs((double)done / 1e6 - 6.1) < 1e-5);
	dg_drive_free(d);
	dg_spec_free(s);
}

/* Background: a command inside a busy period starts at its end. */
static void background_busy(void **state)
{
	(void)state;
	struct dg_spec *s = parse("{\"heads\":1," BASE "\"background\":{\"every_s\":1,"
				  "\"busy_ms\":100},\"zones\":[{\"cylinders\":10,"
				  "\"sectors_per_track\":100}]}");
	struct dg_drive *d;
	uint64_t done;
	assert_int_equal(dg_drive_new(s, &d), 0);
	/* the phase the drive drew from the seed: find it as the first busy start (the test
	 * reads the same splitmix64 draw the spec defines: seed 1) */
	uint64_t st = 1;
	double phase = (double)(dg_splitmix64(&st) >> 11) / 9007199254740992.0 * 1000.0;
	double inside = phase + 2000.0 + 30.0; /* 30 ms into the third busy period */
	assert_int_equal(dg_drive_access(d, (uint64_t)(inside * 1e6), false, 0, 1, &done), 512);
	/* starts at the period's end, then waits for sector 0 and reads it */
	double end = phase + 2100.0;
	double wait = fmod(10.0 - fmod(end, 10.0), 10.0);
	assert_true(fabs((double)done / 1e6 - (end + wait + 0.1)) < 1e-5);
	dg_drive_free(d);
	dg_spec_free(s);
}

/* The read-ahead stream ends at a busy period (drive-spec.md "Jitter and background work"):
 * T = 10 ms, 100 sectors a track (0.1 ms each), P = 1 s, B = 100 ms, no overhead. A reads
 * sectors 0-9 from a, a multiple of T, 3-7 ms before a busy period starts at bs; the stream has
 * read p = (bs - a) / 0.1 sectors when it starts. B (sectors 10-19, read before bs) is a cache
 * hit inside the busy period; C (from p) waits for its end, then for sector p to come round;
 * D (after C) continues the new stream. */
static void background_ends_stream(void **state)
{
	(void)state;
	char json[512];
	uint64_t seed = 0, st;
	double ph = 0, bs = 0, a = 0;
	for (;;) { /* a seed whose busy period starts well inside a track and a sector */
		st = ++seed;
		ph = (double)(dg_splitmix64(&st) >> 11) / 9007199254740992.0 * 1000.0;
		bs = ph + 1000.0;
		a = floor(bs / 10.0) * 10.0;
		double f = (bs - a) * 10.0 - floor((bs - a) * 10.0);
		if (bs - a > 3.0 && bs - a < 7.0 && f > 0.2 && f < 0.8)
			break;
	}
	snprintf(json, sizeof(json),
		 "{\"heads\":1,\"rpm\":6000,\"seek\":{\"a\":1,\"b\":1,\"c\":1,\"e\":1,"
		 "\"boundary_cylinders\":1000},\"head_switch_ms\":0.5,\"command_overhead_ms\":0,"
		 "\"interface_mbps\":1000,\"read_ahead_bytes\":1048576,\"cache_bytes\":8388608,"
		 "\"seed\":%llu,\"background\":{\"every_s\":1,\"busy_ms\":100},"
		 "\"zones\":[{\"cylinders\":10,\"sectors_per_track\":100}]}",
		 (unsigned long long)seed);
	struct dg_spec *s = parse(json);
	struct dg_drive *d;
	uint64_t done, p = (uint64_t)floor((bs - a) * 10.0);
	double link = 10 * 512 / 1e6; /* 10 sectors over the 1000 MB/s link, ms */
	assert_int_equal(dg_drive_new(s, &d), 0);
	assert_int_equal(dg_drive_access(d, llround(a * 1e6), false, 0, 10, &done), 5120);
	assert_true(fabs((double)done / 1e6 - (a + 1.0)) < 1e-5);
	/* read before bs: cached, served over the link while the media is busy */
	assert_int_equal(dg_drive_access(d, llround((bs + 50) * 1e6), false, 10, 10, &done), 5120);
	assert_true(fabs((double)done / 1e6 - (bs + 50 + link)) < 1e-5);
	/* not read ahead: sector p passes at a + 0.1 p + 10 k; the first such time after bs + B */
	double start = a + 0.1 * (double)p;
	start += ceil((bs + 100.0 - start) / 10.0) * 10.0;
	assert_int_equal(dg_drive_access(d, done, false, p, 10, &done), 5120);
	print_message("seed %llu: busy at %.3f ms, %llu sectors read ahead, C done %.4f (want "
		      "%.4f)\n",
		      (unsigned long long)seed, bs, (unsigned long long)p, (double)done / 1e6,
		      start + 1.0);
	assert_true(fabs((double)done / 1e6 - (start + 1.0)) < 1e-5);
	/* C started a new stream: D reads on with no rotational wait */
	assert_int_equal(dg_drive_access(d, done, false, p + 10, 10, &done), 5120);
	assert_true(fabs((double)done / 1e6 - (start + 2.0)) < 1e-5);
	dg_drive_free(d);
	dg_spec_free(s);
}

/* Jitter: the host sees a mean delay within 5% of jitter_ms; the media time line is unchanged
 * (the same commands without jitter finish at the same media times). */
static void jitter_mean(void **state)
{
	(void)state;
	struct dg_spec *a = parse("{\"heads\":2," BASE "\"seed\":7,\"zones\":[{\"cylinders\":200,"
				  "\"sectors_per_track\":100}]}");
	struct dg_spec *b = parse("{\"heads\":2," BASE "\"seed\":7,\"jitter_ms\":0.5,"
				  "\"zones\":[{\"cylinders\":200,\"sectors_per_track\":100}]}");
	struct dg_drive *da, *db;
	uint64_t seed = 3, t = 0;
	double sum = 0;
	assert_int_equal(dg_drive_new(a, &da), 0);
	assert_int_equal(dg_drive_new(b, &db), 0);
	uint64_t st = 7; /* the spec's seed: the draws in command order, by the spec's rule */
	for (int i = 0; i < 10000; i++) {
		uint64_t lba = dg_splitmix64(&seed) % (40000 - 8), x, y;
		dg_drive_access(da, t, false, lba, 8, &x);
		dg_drive_access(db, t, false, lba, 8, &y);
		double u = (double)(dg_splitmix64(&st) >> 11) / 9007199254740992.0;
		double draw_ns = -0.5 * log(1.0 - u) * 1e6;
		/* the media time line is unchanged: the host sees exactly the draw later */
		if (fabs((double)(y - x) - draw_ns) > 1.0)
			fail_msg("command %d: host %llu ns after the media, the draw %.1f ns", i,
				 (unsigned long long)(y - x), draw_ns);
		sum += (double)(y - x) / 1e6;
		t = y; /* the host sends the next after it sees the completion */
	}
	print_message("jitter mean %.4f ms (0.5 asked)\n", sum / 10000);
	assert_true(fabs(sum / 10000 - 0.5) < 0.025);
	dg_drive_free(da);
	dg_drive_free(db);
	dg_spec_free(a);
	dg_spec_free(b);
}

static void zoo_round_trip(void **state)
{
	(void)state;
	for (uint64_t seed = 0; seed < 500; seed++) {
		char *a = NULL, *b = NULL, err[DG_ERRLEN] = "";
		struct dg_spec *s = NULL;
		assert_int_equal(dg_spec_random(seed, &a), 0);
		assert_int_equal(dg_spec_random(seed, &b), 0);
		assert_string_equal(a, b);
		int rc = dg_spec_parse(a, strlen(a), "zoo", &s, NULL, err, sizeof(err));
		if (rc)
			print_message("seed %llu: %s\n", (unsigned long long)seed, err);
		assert_int_equal(rc, 0);
		assert_true(s->ncq_depth == 1 || s->ncq_depth == 32);
		assert_true(s->heads >= 2 && s->heads <= 18);
		dg_spec_free(s);
		free(a);
		free(b);
	}
}

/* ---- model vs truth ---- */

static const char *drive_of(int i, char *path, size_t len)
{
	static const char *const presets[] = {"exos-x16-16tb", "ironwolf-8tb-weak-head"};
	static const uint64_t zoo[] = {3, 11, 26, 42, 77};
	if (i < 2) {
		snprintf(path, len, "%s", presets[i]);
		return path;
	}
	char *text = NULL;
	assert_int_equal(dg_spec_random(zoo[i - 2], &text), 0);
	snprintf(path, len, "/tmp/dg-model2-zoo-%d-%llu.json", (int)getpid(),
		 (unsigned long long)zoo[i - 2]);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(text);
	return path;
}

static double engine_iops(const char *what, unsigned qd, uint64_t cap, unsigned n)
{
	char dp[600], err[DG_ERRLEN] = "";
	struct dg_device *dev = NULL;
	struct dg_engine *e = NULL;
	struct dg_engine_config cfg = {.kind = DG_ENGINE_SIM, .qd = qd, .max_io_bytes = 1 << 20};
	struct dg_completion c[64];
	uint64_t seed = 5, t0 = 0, t1 = 0;
	unsigned got = 0, warm = 500;

	snprintf(dp, sizeof(dp), "sim:%s", what);
	assert_int_equal(dg_device_open(dp, 0, &dev, NULL, err, sizeof(err)), 0);
	assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), 0);
	while (got < warm + n) {
		while (dg_engine_free_slots(e) > 0) {
			struct dg_io io = {.op = DG_IO_READ,
					   .length_bytes = 4096,
					   .offset_bytes =
					       dg_splitmix64(&seed) % (cap / 4096) * 4096};
			assert_int_equal(dg_engine_submit(e, &io, 1), 1);
		}
		int k = dg_engine_reap(e, c, 1, 64);
		assert_true(k > 0);
		for (int i = 0; i < k; i++) {
			got++;
			if (got == warm)
				t0 = c[i].complete_ns;
			t1 = c[i].complete_ns;
		}
	}
	dg_engine_close(e);
	dg_device_close(dev);
	return (double)(got - warm) / ((double)(t1 - t0) / 1e9);
}

static void model_vs_truth(void **state)
{
	(void)state;
	static const unsigned qds[] = {1, 4, 16, 32};
	for (int i = 0; i < 7; i++) {
		char path[256], err[DG_ERRLEN] = "";
		struct dg_spec *s = NULL;
		drive_of(i, path, sizeof(path));
		assert_int_equal(dg_spec_load(path, &s, NULL, err, sizeof(err)), 0);
		uint64_t cap = dg_spec_capacity_bytes(s) / 4096 * 4096;
		/* an error defect would fail reads: measure over the span past the defects */
		print_message("%-24s ncq %2u", dg_spec_name(s), s->ncq_depth);
		for (size_t k = 0; k < 4; k++) {
			double want = dg_truth_random_iops(s, 0, cap, 4096, qds[k], 20000, 1);
			double have = engine_iops(path, qds[k], cap, 6000);
			print_message("  QD%-2u %7.1f/%7.1f", qds[k], have, want);
			assert_true(fabs(have / want - 1) < 0.03);
		}
		print_message("\n");
		if (i >= 2)
			unlink(path);
		dg_spec_free(s);
	}
}

/* Sequential rates through the sim engine (1 MiB pieces at QD 1) vs the true rate of the range
 * at three places (inside one surface's run or across surfaces, as the layout falls), within
 * 0.5%. QD 1: on an NCQ drive a burst of queued pieces may start mid-burst (shortest
 * positioning first), and the pieces behind the stream wait until it ends — a measurement's
 * problem (issue 13), not the model's. */
static void seq_vs_truth(void **state)
{
	(void)state;
	for (int i = 0; i < 7; i++) {
		char path[256], dp[300], err[DG_ERRLEN] = "";
		struct dg_spec *s = NULL;
		struct dg_device *dev = NULL;
		struct dg_engine *e = NULL;
		struct dg_engine_config cfg = {
		    .kind = DG_ENGINE_SIM, .qd = 1, .max_io_bytes = 1 << 20};
		drive_of(i, path, sizeof(path));
		assert_int_equal(dg_spec_load(path, &s, NULL, err, sizeof(err)), 0);
		snprintf(dp, sizeof(dp), "sim:%s", path);
		assert_int_equal(dg_device_open(dp, 0, &dev, NULL, err, sizeof(err)), 0);
		assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), 0);
		uint64_t cap = dg_spec_capacity_bytes(s);
		/* skip the defects of zoo drives: start past the first zone */
		uint64_t z1 = s->zones[1].first_lba * s->sector_bytes;
		/* the fourth: across surfaces — 32 MiB either side of zone 1's first change of
		 * head (a head switch in a cylinder layout, the end of head 0's run of the first
		 * band in a serpentine one) */
		uint32_t spt;
		const struct dg_zone *zn = &s->zones[1];
		uint64_t j =
		    s->layout == DG_LAYOUT_SERPENTINE
			? (s->band_cylinders < zn->cylinders ? s->band_cylinders : zn->cylinders)
			: 1;
		uint64_t change =
		    (zn->first_lba + dg_zone_track_first(s, zn, j, &spt)) * s->sector_bytes;
		uint64_t places[4] = {z1 + (4u << 20), cap / 2 / (1 << 20) * (1 << 20),
				      (cap - (200ull << 20)) / (1 << 20) * (1 << 20),
				      (change - (32u << 20)) / 4096 * 4096};
		if (places[3] < z1)
			places[3] = z1;
		print_message("%-24s", dg_spec_name(s));
		for (int k = 0; k < 4; k++) {
			uint64_t len = 64ull << 20, first_end = 0;
			double have = dg_test_seq_rate(e, places[k], len, false, &first_end);
			double want =
			    dg_truth_rate_mb_per_s(s, first_end, places[k] + len - first_end);
			print_message("  %7.2f/%7.2f", have, want);
			assert_true(fabs(have / want - 1) < 0.005);
		}
		print_message("\n");
		dg_engine_close(e);
		dg_device_close(dev);
		if (i >= 2)
			unlink(path);
		dg_spec_free(s);
	}
}

/* The 512e presets: physical 4096, whole physical tracks, and the outer and inner rates of
 * the pre-512e truth (tests/golden/v1/NAME.model.json) within 0.5%. */
static void presets_512e(void **state)
{
	(void)state;
	static const char *const names[] = {"wd-red-4tb", "hgst-7k1000"};
	for (int i = 0; i < 2; i++) {
		char path[512], err[DG_ERRLEN];
		struct dg_spec *s = NULL;
		struct dg_truth *t = NULL;
		assert_int_equal(dg_spec_load(names[i], &s, NULL, err, sizeof(err)), 0);
		assert_int_equal(dg_spec_physical_sector_bytes(s), 4096);
		assert_int_equal(dg_spec_sector_bytes(s), 512);
		for (size_t z = 0; z < s->nzones; z++)
			assert_int_equal(s->zones[z].spt % 8, 0);
		assert_int_equal(dg_truth_compute(s, &t), 0);
		snprintf(path, sizeof(path), "%s/tests/golden/v1/%s.model.json", DG_SOURCE_DIR,
			 names[i]);
		json_t *old = json_load_file(path, 0, NULL);
		assert_non_null(old);
		double outer = json_number_value(json_object_get(old, "outer_mb_per_s"));
		double inner = json_number_value(json_object_get(old, "inner_mb_per_s"));
		double o = t->zones[0].mb_per_s, in = t->zones[t->nzones - 1].mb_per_s;
		print_message("%s: outer %.3f (was %.3f), inner %.3f (was %.3f)\n", names[i], o,
			      outer, in, inner);
		assert_true(fabs(o / outer - 1) < 0.005);
		assert_true(fabs(in / inner - 1) < 0.005);
		assert_int_equal(t->capacity_bytes, (uint64_t)json_integer_value(
							json_object_get(old, "capacity_bytes")));
		assert_true(fabs(t->rmw_penalty_ms - t->period_ms) < 1e-12);
		json_decref(old);
		dg_truth_free(t);
		dg_spec_free(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(per_surface_mapping), cmocka_unit_test(rmw_plus_t),
	    cmocka_unit_test(look_behind_hit),	   cmocka_unit_test(cache_segments_kept),
	    cmocka_unit_test(sptf_order),	   cmocka_unit_test(ncq_decodes_held),
	    cmocka_unit_test(background_busy),	   cmocka_unit_test(background_ends_stream),
	    cmocka_unit_test(jitter_mean),	   cmocka_unit_test(zoo_round_trip),
	    cmocka_unit_test(model_vs_truth),	   cmocka_unit_test(seq_vs_truth),
	    cmocka_unit_test(presets_512e),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
