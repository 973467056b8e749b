/* SPDX-License-Identifier: MIT */
/*
 * The sim: backend in virtual time, against the truth of model.h: sequential 1 MiB reads at
 * QD 1 and 8 at three positions (within 0.5% of dg_truth_rate_mb_per_s), random 4 KiB QD1 reads
 * (mean service within 1% of dg_truth_random_ms), virtual and monotonic timestamps, device time,
 * the data pattern, the error defect of cheetah-15k (EIO), reads at and past the end.
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

#include <cmocka.h>
#include <jansson.h>

#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "enginetest.h"
#include "diskgeo/model.h"
#include "simpattern.h"
#include "util.h"

#define MiB (1024u * 1024u)

static struct dg_device *open_sim(const char *name)
{
	struct dg_device *dev = NULL;
	char err[DG_ERRLEN] = "";
	char path[256];

	snprintf(path, sizeof(path), "sim:%s", name);
	int rc = dg_device_open(path, 0, &dev, NULL, err, sizeof(err));
	if (rc)
		print_message("dg_device_open(%s): %s\n", path, err);
	assert_int_equal(rc, 0);
	return dev;
}

static struct dg_engine *open_engine(struct dg_device *dev, unsigned qd, uint32_t max_io)
{
	struct dg_engine_config cfg = {.kind = DG_ENGINE_SIM, .qd = qd, .max_io_bytes = max_io};
	struct dg_engine *e = NULL;
	char err[DG_ERRLEN] = "";

	int rc = dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err));
	if (rc)
		print_message("dg_engine_open: %s\n", err);
	assert_int_equal(rc, 0);
	return e;
}

/* splitmix64: a deterministic generator, so a run is reproducible. */
static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * Reads [offset, offset + length) in pieces of `piece` bytes at queue depth `qd`, submitting
 * `group` pieces at a time once that many slots are free. With `shuffle`, each group after the
 * first goes in a shuffled order (what a kernel that splits a sequential reader's requests and
 * reorders them does; the first group stays in order because it positions the head). Returns the
 * rate in MB/s from the first completion to the last, over the bytes completed after the first:
 * the first request's positioning is not part of the sustained rate. *first_end gets the end of
 * the first completed piece.
 */
static double seq_rate(struct dg_engine *e, uint64_t offset, uint64_t length, uint32_t piece,
		       unsigned group, bool shuffle, uint64_t *first_end)
{
	struct dg_completion c[256];
	struct dg_io io[256];
	uint64_t next = offset, end = offset + length, seed = 42;
	uint64_t t_first = 0, t_last = 0, bytes_after = 0, prev_complete = 0;
	bool have_first = false;

	*first_end = offset;
	while (next < end || dg_engine_inflight(e) > 0) {
		unsigned n = 0;
		while (dg_engine_free_slots(e) - n >= group && next < end) {
			unsigned g0 = n;
			bool first_group = next == offset;
			for (unsigned g = 0; g < group && next < end; g++) {
				io[n++] = (struct dg_io){.offset_bytes = next,
							 .length_bytes = piece,
							 .op = DG_IO_READ,
							 .tag = next};
				next += piece;
			}
			for (unsigned i = n - g0; shuffle && !first_group && i > 1; i--) {
				unsigned j = g0 + (unsigned)(next_rand(&seed) % i);
				struct dg_io t = io[g0 + i - 1];
				io[g0 + i - 1] = io[j];
				io[j] = t;
			}
		}
		if (n)
			assert_int_equal(dg_engine_submit(e, io, n), (int)n);
		int got = dg_engine_reap(e, c, 1, 256);
		assert_true(got >= 1);
		for (int i = 0; i < got; i++) {
			assert_int_equal(c[i].result, c[i].length_bytes);
			assert_true(c[i].complete_ns >= c[i].submit_ns);
			assert_true(c[i].complete_ns >= prev_complete);
			assert_int_equal(dg_simpattern_check(c[i].data, c[i].offset_bytes, 64), 64);
			prev_complete = c[i].complete_ns;
			if (!have_first) {
				have_first = true;
				t_first = c[i].complete_ns;
				*first_end = c[i].offset_bytes + c[i].length_bytes;
				continue;
			}
			bytes_after += c[i].length_bytes;
			t_last = c[i].complete_ns;
		}
	}
	assert_true(t_last > t_first);
	return (double)bytes_after / ((double)(t_last - t_first) / 1e9) / DG_MB;
}

static void check_seq(const char *name, unsigned qd, uint32_t piece, unsigned group, bool shuffle)
{
	struct dg_device *dev = open_sim(name);
	const struct dg_spec *spec = dg_device_spec(dev);
	uint64_t cap = dg_spec_capacity_bytes(spec), len = 256ull * MiB;
	uint64_t sector = dg_spec_sector_bytes(spec);
	uint64_t pos[3] = {0, (cap / 2) / sector * sector, (cap - len) / sector * sector};

	for (int p = 0; p < 3; p++) {
		struct dg_engine *e = open_engine(dev, qd, MiB);
		uint64_t first_end;
		double got = seq_rate(e, pos[p], len, piece, group, shuffle, &first_end);
		double truth = dg_truth_rate_mb_per_s(spec, first_end, pos[p] + len - first_end);
		double rel = fabs(got / truth - 1);
		print_message("%s qd %u piece %u%s @%llu: %.3f MB/s, truth %.3f (%.3f%%)\n", name,
			      qd, piece, shuffle ? " shuffled" : "", (unsigned long long)pos[p],
			      got, truth, rel * 100);
		assert_true(rel < 0.005);
		dg_engine_close(e);
	}
	dg_device_close(dev);
}

static void seq_qd1(void **state)
{
	check_seq("wd-red-4tb", 1, MiB, 1, false);
}

static void seq_qd8(void **state)
{
	check_seq("wd-red-4tb", 8, MiB, 1, false);
}

/* 1 MiB reads split into 128 KiB pieces and delivered shuffled, two reads deep, lose nothing
 * (read-ahead continues the stream; pieces behind it are cache hits). */
static void seq_split_shuffled(void **state)
{
	check_seq("wd-red-4tb", 16, 128u * 1024u, 8, true);
}

static void seq_other_presets(void **state)
{
	check_seq("hgst-7k1000", 8, MiB, 1, false);
	check_seq("seagate-st4000vn006", 1, MiB, 1, false);
	check_seq("cheetah-15k", 8, MiB, 1, false);
}

/* Random 4 KiB QD1 reads over the whole span: the mean service time is the truth's. */
static void random_qd1(void **state)
{
	struct dg_device *dev = open_sim("wd-red-4tb");
	const struct dg_spec *spec = dg_device_spec(dev);
	struct dg_engine *e = open_engine(dev, 1, MiB);
	uint64_t cap = dg_spec_capacity_bytes(spec), blocks = cap / 4096, seed = 7;
	const unsigned n = 20000;
	double sum_ms = 0;
	struct dg_completion c;

	for (unsigned i = 0; i < n; i++) {
		struct dg_io io = {.offset_bytes = (next_rand(&seed) % blocks) * 4096,
				   .length_bytes = 4096,
				   .op = DG_IO_READ};
		assert_int_equal(dg_engine_submit(e, &io, 1), 1);
		assert_int_equal(dg_engine_reap(e, &c, 1, 1), 1);
		assert_int_equal(c.result, 4096);
		sum_ms += (double)(c.complete_ns - c.submit_ns) / 1e6;
	}
	double mean = sum_ms / n, truth = dg_truth_random_ms(spec, 0, cap, 4096);
	print_message("random 4 KiB QD1: mean %.4f ms, truth %.4f ms (%.3f%%)\n", mean, truth,
		      fabs(mean / truth - 1) * 100);
	assert_true(fabs(mean / truth - 1) < 0.01);
	dg_engine_close(e);
	dg_device_close(dev);
}

/* The clock starts at 0, is virtual, never goes back; reap jumps it to the awaited completion;
 * idle_until moves it forward only; device time is the virtual time with I/O in flight. */
static void clock_and_device_time(void **state)
{
	struct dg_device *dev = open_sim("hgst-7k1000");
	struct dg_engine *e = open_engine(dev, 8, MiB);
	struct dg_completion c[16];
	struct dg_io io[9];
	uint64_t busy = 0;

	assert_true(dg_engine_is_virtual(e));
	assert_string_equal(dg_engine_name(e), "sim");
	assert_int_equal(dg_engine_now_ns(e), 0);
	assert_int_equal(dg_engine_device_time_ns(e), 0);

	for (int round = 0; round < 3; round++) {
		uint64_t start = dg_engine_now_ns(e), last = start;
		for (unsigned i = 0; i < 9; i++)
			io[i] =
			    (struct dg_io){.offset_bytes = (uint64_t)(round * 100 + i) * MiB * 7,
					   .length_bytes = MiB,
					   .op = DG_IO_READ,
					   .tag = i};
		/* Queue depth 8: the ninth is not taken. */
		assert_int_equal(dg_engine_submit(e, io, 9), 8);
		assert_int_equal(dg_engine_inflight(e), 8);
		assert_int_equal(dg_engine_now_ns(e), start); /* submitting costs no time */
		unsigned done = 0;
		while (done < 8) {
			int got = dg_engine_reap(e, c, 1, 16);
			assert_true(got >= 1);
			for (int i = 0; i < got; i++) {
				assert_int_equal(c[i].submit_ns, start);
				assert_true(c[i].complete_ns > c[i].submit_ns);
				assert_true(c[i].complete_ns >= last);
				assert_true(c[i].complete_ns <= dg_engine_now_ns(e));
				/* Random offsets with no think time: one command at a time, FIFO.
				 */
				assert_int_equal(c[i].tag, done + (unsigned)i);
				last = c[i].complete_ns;
			}
			assert_int_equal(dg_engine_now_ns(e), last);
			done += (unsigned)got;
		}
		busy += last - start;
		assert_int_equal(dg_engine_device_time_ns(e), busy);
		/* A second of idling: virtual time moves, device time does not. */
		assert_int_equal(dg_engine_idle_until(e, last + DG_NS_PER_S), 0);
		assert_int_equal(dg_engine_now_ns(e), last + DG_NS_PER_S);
		assert_int_equal(dg_engine_idle_until(e, 5), 0); /* the past: no change */
		assert_int_equal(dg_engine_now_ns(e), last + DG_NS_PER_S);
		assert_int_equal(dg_engine_device_time_ns(e), busy);
	}
	/* Nothing in flight: reaping returns nothing and leaves the clock alone. */
	uint64_t now = dg_engine_now_ns(e);
	assert_int_equal(dg_engine_reap(e, c, 1, 16), 0);
	assert_int_equal(dg_engine_now_ns(e), now);
	dg_engine_close(e);
	dg_device_close(dev);
}

/* min = 0 polls: completions are handed back only once the clock has reached them. */
static void reap_min_zero_polls(void **state)
{
	struct dg_device *dev = open_sim("wd-red-4tb");
	struct dg_engine *e = open_engine(dev, 4, MiB);
	struct dg_io io = {.offset_bytes = 1000 * MiB, .length_bytes = 4096, .op = DG_IO_READ};
	struct dg_completion c;

	assert_int_equal(dg_engine_submit(e, &io, 1), 1);
	assert_int_equal(dg_engine_reap(e, &c, 0, 1), 0);
	assert_int_equal(dg_engine_now_ns(e), 0);
	assert_int_equal(dg_engine_idle_until(e, 100 * DG_NS_PER_MS), 0);
	assert_int_equal(dg_engine_reap(e, &c, 0, 1), 1);
	assert_true(c.complete_ns <= 100 * DG_NS_PER_MS);
	assert_int_equal(c.result, 4096);
	dg_engine_close(e);
	dg_device_close(dev);
}

static void data_pattern(void **state)
{
	struct dg_device *dev = open_sim("seagate-st4000vn006"); /* 4096-byte sectors */
	struct dg_engine *e = open_engine(dev, 4, MiB);
	uint64_t cap = dg_spec_capacity_bytes(dg_device_spec(dev));
	uint64_t offs[] = {0, 4096, 123 * MiB + 8192, cap / 2 / 4096 * 4096, cap - MiB};
	struct dg_completion c;

	for (size_t i = 0; i < ARRAY_SIZE(offs); i++) {
		struct dg_io io = {.offset_bytes = offs[i], .length_bytes = MiB, .op = DG_IO_READ};
		assert_int_equal(dg_engine_submit(e, &io, 1), 1);
		assert_int_equal(dg_engine_reap(e, &c, 1, 1), 1);
		assert_int_equal(c.result, MiB);
		assert_int_equal(dg_simpattern_check(c.data, offs[i], MiB), MiB);
		/* The pattern itself, pinned: word k holds its byte offset XOR the key. */
		uint64_t w;
		memcpy(&w, (const char *)c.data + 64, 8);
		assert_int_equal(w, (offs[i] + 64) ^ DG_SIMPATTERN_KEY);
	}
	/* Unaligned fills agree with the byte function. */
	unsigned char buf[64];
	dg_simpattern_fill(buf + 3, 1000003, 50);
	for (int i = 0; i < 50; i++)
		assert_int_equal(buf[3 + i], dg_simpattern_byte(1000003 + (uint64_t)i));
	dg_engine_close(e);
	dg_device_close(dev);
}

/* The error defect fails with EIO after the drive's retries; its neighbours read fine. */
static void error_defect_eio(void **state)
{
	struct dg_device *dev = open_sim("cheetah-15k");
	struct dg_engine *e = open_engine(dev, 1, MiB);
	uint64_t lba, count;
	double extra_ms;
	struct dg_completion c;

	test_preset_defect("cheetah-15k", "error", &lba, &count, &extra_ms);
	c = test_read_one(e, lba * 512, 4096);
	assert_int_equal(c.result, -EIO);
	assert_true((double)(c.complete_ns - c.submit_ns) >= extra_ms * 1e6);
	c = test_read_one(e, (lba + count - 1) * 512, 512); /* the last bad sector */
	assert_int_equal(c.result, -EIO);
	c = test_read_one(e, lba * 512 - MiB / 2, MiB); /* straddles the start */
	assert_int_equal(c.result, -EIO);
	c = test_read_one(e, (lba - 8) * 512, 4096); /* just before */
	assert_int_equal(c.result, 4096);
	c = test_read_one(e, (lba + count) * 512, 4096); /* just after */
	assert_int_equal(c.result, 4096);
	assert_int_equal(dg_simpattern_check(c.data, (lba + count) * 512, 4096), 4096);
	dg_engine_close(e);
	dg_device_close(dev);
}

/* A read in the slow defect costs ceil(extra/T) revolutions more than the same read beside it. */
static void slow_defect(void **state)
{
	struct dg_device *dev = open_sim("cheetah-15k");
	const struct dg_spec *spec = dg_device_spec(dev);
	struct dg_engine *e = open_engine(dev, 1, MiB);
	uint64_t lba, count;
	double extra_ms, period_ms = 60000.0 / dg_spec_rpm(spec);
	double sum[2] = {0, 0};
	const int n = 64;

	test_preset_defect("cheetah-15k", "slow", &lba, &count, &extra_ms);
	/* Alternate a far anchor read with a 4 KiB read inside the defect (descending, so no
	 * read-ahead covers it) and, separately, the same pattern 16 MiB further on. */
	for (int k = 0; k < 2; k++) {
		uint64_t base = k == 0 ? lba : lba + 32768;
		for (int i = 0; i < n; i++) {
			test_read_one(e, (uint64_t)i * 64 * MiB, 4096);
			uint64_t target = base + count - 8 - (uint64_t)i * ((count - 8) / n);
			struct dg_completion c = test_read_one(e, target * 512, 4096);
			assert_int_equal(c.result, 4096);
			sum[k] += (double)(c.complete_ns - c.submit_ns) / 1e6;
		}
	}
	double diff = (sum[0] - sum[1]) / n, want = ceil(extra_ms / period_ms) * period_ms;
	print_message("slow defect: +%.3f ms per read, spec +%.3f ms\n", diff, want);
	/* The rotational wait is uniform over T in both sets: over 64 reads the means agree to
	 * well within T/2. */
	assert_true(fabs(diff - want) < period_ms / 2);
	dg_engine_close(e);
	dg_device_close(dev);
}

/* At the end of the device: a read crossing it is short, one at or past it returns 0. */
static void end_of_device(void **state)
{
	struct dg_device *dev = open_sim("hgst-7k1000");
	uint64_t cap = dg_spec_capacity_bytes(dg_device_spec(dev));
	struct dg_engine *e = open_engine(dev, 2, MiB);
	struct dg_completion c;

	c = test_read_one(e, cap - 4096, MiB);
	assert_int_equal(c.result, 4096);
	assert_int_equal(dg_simpattern_check(c.data, cap - 4096, 4096), 4096);
	assert_true(c.complete_ns > c.submit_ns);
	c = test_read_one(e, cap, 4096);
	assert_int_equal(c.result, 0);
	c = test_read_one(e, cap + MiB, MiB);
	assert_int_equal(c.result, 0);

	/* A write crossing the end is short; one at the end has no room. */
	struct dg_io w = {.offset_bytes = cap - 512, .length_bytes = 4096, .op = DG_IO_WRITE};
	assert_int_equal(dg_engine_submit(e, &w, 1), 1);
	assert_int_equal(dg_engine_reap(e, &c, 1, 1), 1);
	assert_int_equal(c.result, 512);
	w.offset_bytes = cap;
	assert_int_equal(dg_engine_submit(e, &w, 1), 1);
	assert_int_equal(dg_engine_reap(e, &c, 1, 1), 1);
	assert_int_equal(c.result, -ENOSPC);

	/* Misaligned I/O is refused whole, nothing taken. */
	struct dg_io bad = {.offset_bytes = 100, .length_bytes = 4096, .op = DG_IO_READ};
	assert_int_equal(dg_engine_submit(e, &bad, 1), -EINVAL);
	assert_int_equal(dg_engine_inflight(e), 0);
	dg_engine_close(e);
	dg_device_close(dev);
}

/* Writes are timed like reads: a sequential write runs at the media rate too. */
static void writes_timed(void **state)
{
	struct dg_device *dev = open_sim("wd-red-4tb");
	const struct dg_spec *spec = dg_device_spec(dev);
	struct dg_engine *e = open_engine(dev, 4, MiB);
	struct dg_completion c[8];
	uint64_t next = 0, end = 128ull * MiB, t_first = 0, t_last = 0, first_end = 0, bytes = 0;

	while (next < end || dg_engine_inflight(e)) {
		struct dg_io io[8];
		unsigned n = 0;
		while (n < dg_engine_free_slots(e) && next < end) {
			io[n++] = (struct dg_io){
			    .offset_bytes = next, .length_bytes = MiB, .op = DG_IO_WRITE};
			next += MiB;
		}
		if (n)
			assert_int_equal(dg_engine_submit(e, io, n), (int)n);
		int got = dg_engine_reap(e, c, 1, 8);
		for (int i = 0; i < got; i++) {
			assert_int_equal(c[i].result, MiB);
			if (!t_first) {
				t_first = c[i].complete_ns;
				first_end = c[i].offset_bytes + MiB;
			} else {
				t_last = c[i].complete_ns;
				bytes += MiB;
			}
		}
	}
	double got = (double)bytes / ((double)(t_last - t_first) / 1e9) / DG_MB;
	double truth = dg_truth_rate_mb_per_s(spec, first_end, end - first_end);
	print_message("sequential write: %.3f MB/s, truth %.3f\n", got, truth);
	assert_true(fabs(got / truth - 1) < 0.005);
	dg_engine_close(e);
	dg_device_close(dev);
}

/* The sim engine refuses a device that is not sim:. */
static void refuses_real_device(void **state)
{
	struct dg_device *dev = NULL;
	struct dg_engine *e = NULL;
	char err[DG_ERRLEN] = "";
	char path[512];
	struct dg_engine_config cfg = {.kind = DG_ENGINE_SIM, .qd = 1, .max_io_bytes = MiB};

	snprintf(path, sizeof(path), "%s/presets/wd-red-4tb.json", DG_SOURCE_DIR);
	assert_int_equal(dg_device_open(path, 0, &dev, NULL, err, sizeof(err)), 0);
	assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), -EINVAL);
	assert_null(e);
	assert_true(err[0] != '\0');
	dg_device_close(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(seq_qd1),
	    cmocka_unit_test(seq_qd8),
	    cmocka_unit_test(seq_split_shuffled),
	    cmocka_unit_test(seq_other_presets),
	    cmocka_unit_test(random_qd1),
	    cmocka_unit_test(clock_and_device_time),
	    cmocka_unit_test(reap_min_zero_polls),
	    cmocka_unit_test(data_pattern),
	    cmocka_unit_test(error_defect_eio),
	    cmocka_unit_test(slow_defect),
	    cmocka_unit_test(end_of_device),
	    cmocka_unit_test(writes_timed),
	    cmocka_unit_test(refuses_real_device),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
