/* SPDX-License-Identifier: MIT */
/* Tests of the shared error and warning lists. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "diskgeo/diskgeo.h"
#include "util.h"

static void errors_merge_contiguous(void **state)
{
	struct dg_errors e = {0};
	assert_int_equal(dg_errors_add(&e, 0, 4096, EIO), 0);
	assert_int_equal(dg_errors_add(&e, 4096, 4096, EIO), 0);   /* merges */
	assert_int_equal(dg_errors_add(&e, 16384, 512, EIO), 0);   /* gap: new entry */
	assert_int_equal(dg_errors_add(&e, 16896, 512, ENXIO), 0); /* other errno: new entry */
	assert_int_equal(e.n, 3);
	assert_int_equal(e.v[0].length_bytes, 8192);
	assert_int_equal(e.v[1].offset_bytes, 16384);
	assert_int_equal(e.v[2].errno_value, ENXIO);
	assert_string_equal(e.v[0].message, "Input/output error");
	dg_errors_free(&e);
	assert_int_equal(e.n, 0);
	dg_errors_free(NULL);
}

/* The list keeps the first DG_ERRORS_LISTED_MAX ranges and counts every range and byte. */
static void errors_capped(void **state)
{
	struct dg_errors e = {0};
	for (uint64_t i = 0; i < 163111; i++) /* every other block of a truncated file */
		assert_int_equal(dg_errors_add(&e, i * 8192, 4096, EIO),
				 i < DG_ERRORS_LISTED_MAX ? 0 : 1);
	assert_int_equal(e.n, DG_ERRORS_LISTED_MAX);
	assert_int_equal(e.total, 163111);
	assert_int_equal(e.total_bytes, 163111ull * 4096);
	assert_true(e.cap <= 2 * DG_ERRORS_LISTED_MAX);
	/* contiguous beyond the cap: merged into the uncounted range, not a new one */
	assert_int_equal(dg_errors_add(&e, 163110ull * 8192 + 4096, 4096, EIO), 1);
	assert_int_equal(e.total, 163111);
	assert_int_equal(e.total_bytes, 163112ull * 4096);
	dg_errors_free(&e);
	assert_int_equal(e.total, 0);
}

static void warnings_said_once(void **state)
{
	struct dg_warnings w = {0};
	assert_int_equal(dg_warnings_add(&w, "partition %d", 1), 0);
	assert_int_equal(dg_warnings_add(&w, "partition %d", 1), 0);
	assert_int_equal(dg_warnings_add(&w, "partition %d", 2), 0);
	assert_int_equal(w.n, 2);
	assert_string_equal(w.v[1], "partition 2");
	dg_warnings_free(&w);
	dg_warnings_free(NULL);
}

/* Each warning sentence the code writes (as the code writes it today) maps to its stable code;
 * an unknown sentence is "other". */
static void warning_codes(void **state)
{
	static const struct {
		const char *message, *code;
	} cases[] = {
	    {"/tmp/x is a regular file: a file system sits between diskgeo and the disk, so its "
	     "layout and caching shape what is measured",
	     "device-file"},
	    {"/tmp/x: the file system refused O_DIRECT; reads go through the page cache",
	     "page-cache"},
	    {"/dev/sdb1 is a partition of sdb starting at byte 1048576: offsets are relative",
	     "partition"},
	    {"non-rotational device: the bandwidth curve will be flat and there is no seek curve",
	     "non-rotational"},
	    {"zoned device (host-managed): sequential-write zones", "zoned"},
	    {"a rotational disk that accepts discard may be drive-managed SMR: its rates can "
	     "change",
	     "smr-suspect"},
	    {"USB transport: the bridge may cap the outer-zone rate", "usb-bridge"},
	    {"/dev/sdb is mounted (or one of its partitions is): file system I/O can disturb",
	     "mounted"},
	    {"/dev/sdb has holders (device-mapper, RAID, ...): their I/O", "holders"},
	    {"/dev/sdb: the write cache is on (write back): the first MiBs", "write-cache-on"},
	    {"/dev/sdb: the write cache is off (write through): every write", "write-cache-off"},
	    {"the device says it rotates, but access times show no rotation (a cache or a layer "
	     "in between?)",
	     "rotation-hidden"},
	    {"the device says it does not rotate, but its access times show a 7200 rpm rotation: a "
	     "layer in between (loop, dm, md, a USB bridge, a VM) hides a spinning disk",
	     "rotation-found"},
	    {"the device reports itself non-rotational, but its sequential rate falls in 19 steps, "
	     "as a spinning disk's recording zones do",
	     "zones-found"},
	    {"the device holds 33554432 bytes, less than the 64 MiB the seek phase needs: seek, "
	     "rotation and spans were skipped",
	     "seek-skipped"},
	    {"the time budget (1.0 s) cannot hold the minimum of 256 samples", "budget-short"},
	    {"1 slow spot: reads stalled for more than 30 ms", "slow-spots"},
	    {"3 slow spots: reads stalled for more than 30 ms", "slow-spots"},
	    {"1 read came late from the host (a burst of completions", "host-hiccups"},
	    {"2 sample measurements were dropped: too few timed units", "samples-dropped"},
	    {"1 sample measurement was dropped: too few timed units", "samples-dropped"},
	    {"1 sample could not be timed (no read completed", "samples-untimed"},
	    {"13 of 16 curve samples were set aside as outliers or boundary straddlers",
	     "curve-noisy"},
	    {"x.json: seek.average_ms 1 is below the feasible range (2..3 ms): using a linear",
	     "spec-adjusted"},
	    {"/dev/sdb1 starts at byte 32256, not aligned to the physical sector of 4096 bytes: "
	     "I/O aligned to the partition is misaligned",
	     "partition-misaligned"},
	    {"sweep: 40 of 156 cells not measured (time budget, queue depth or in-flight limit)",
	     "sweep-thinned"},
	    {"something new", "other"},
	    {"", "other"},
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		assert_string_equal(dg_warning_code(cases[i].message), cases[i].code);
	assert_string_equal(dg_warning_code(NULL), "other");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(errors_merge_contiguous),
	    cmocka_unit_test(errors_capped),
	    cmocka_unit_test(warnings_said_once),
	    cmocka_unit_test(warning_codes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
