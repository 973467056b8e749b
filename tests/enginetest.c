/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "enginetest.h"

struct dg_completion test_read_one(struct dg_engine *e, uint64_t off, uint32_t len)
{
	struct dg_io io = {.offset_bytes = off, .length_bytes = len, .op = DG_IO_READ};
	struct dg_completion c;
	int got;

	assert_int_equal(dg_engine_submit(e, &io, 1), 1);
	while ((got = dg_engine_reap(e, &c, 1, 1)) == -EINTR)
		;
	assert_int_equal(got, 1);
	return c;
}

void test_preset_defect(const char *name, const char *kind, uint64_t *lba, uint64_t *count,
			double *extra_ms)
{
	char path[512];
	json_error_t jerr;
	bool found = false;
	size_t i;
	json_t *root, *d;

	snprintf(path, sizeof(path), "%s/presets/%s.json", DG_SOURCE_DIR, name);
	root = json_load_file(path, 0, &jerr);
	assert_non_null(root);
	json_array_foreach(json_object_get(root, "defects"), i, d)
	{
		if (!found && !strcmp(json_string_value(json_object_get(d, "kind")), kind)) {
			*lba = (uint64_t)json_integer_value(json_object_get(d, "lba"));
			*count = (uint64_t)json_integer_value(json_object_get(d, "count"));
			*extra_ms = json_number_value(json_object_get(d, "extra_ms"));
			found = true;
		}
	}
	json_decref(root);
	assert_true(found);
}
