/* SPDX-License-Identifier: MIT */
/* Tests of the shared error and warning lists. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "diskgeo/diskgeo.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(errors_merge_contiguous),
	    cmocka_unit_test(errors_capped),
	    cmocka_unit_test(warnings_said_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
