/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the command-line parsers of parse.h: dg_parse_size, dg_parse_time,
 * dg_parse_uint and dg_parse_range. The input is one option value; its first byte picks the
 * sector size an "s" suffix stands for. Besides "no crash, no sanitizer report", it checks each
 * parser's contract: only 0, -EINVAL or -ERANGE come back; an accepted size prints back to the
 * same number; an accepted range is not empty; an accepted number lies within its bounds.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/parse.h"

static void check_rc(int rc)
{
	if (rc != 0 && rc != -EINVAL && rc != -ERANGE)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t sectors[] = {0, 512, 4096, 1};
	char text[512], again[32];
	uint64_t a, b, v;
	uint32_t sector;
	int rc;

	if (size < 1 || size > sizeof(text))
		return 0;
	sector = sectors[data[0] & 3];
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';

	rc = dg_parse_size(text, sector, &a);
	check_rc(rc);
	if (rc == 0) {
		/* A whole number of bytes written plainly must parse back to itself. */
		snprintf(again, sizeof(again), "%" PRIu64, a);
		if (dg_parse_size(again, 0, &b) != 0 || b != a)
			abort();
	}

	rc = dg_parse_time(text, &v);
	check_rc(rc);

	rc = dg_parse_uint(text, 1, 256, &v);
	check_rc(rc);
	if (rc == 0 && (v < 1 || v > 256))
		abort();

	rc = dg_parse_range(text, sector, &a, &b);
	check_rc(rc);
	if (rc == 0 && a >= b)
		abort();
	return 0;
}
