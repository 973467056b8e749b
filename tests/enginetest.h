/* SPDX-License-Identifier: MIT */
/* cmocka helpers for the tests that read through the engine (test_engine_sim, test_simdisk). */
#ifndef DISKGEO_TESTS_ENGINETEST_H
#define DISKGEO_TESTS_ENGINETEST_H

#include <stdint.h>

#include "diskgeo/engine.h"

/* One read of [off, off + len) at QD 1: submitted and reaped (EINTR retried), both asserted;
 * the completion, whatever its result. */
struct dg_completion test_read_one(struct dg_engine *e, uint64_t off, uint32_t len);

/* The first defect of `kind` ("error", "slow") in the preset file presets/NAME.json of the
 * source tree: the test's own reading of the truth, independent of the spec parser. Asserts
 * that there is one. */
void test_preset_defect(const char *name, const char *kind, uint64_t *lba, uint64_t *count,
			double *extra_ms);

#endif
