/* SPDX-License-Identifier: MIT */
/* A sustained sequential rate through the engine: shared by test_simdisk and bench/simdisk. */
#ifndef DISKGEO_TESTS_SEQRATE_H
#define DISKGEO_TESTS_SEQRATE_H

#include <stdbool.h>
#include <stdint.h>

#include "diskgeo/engine.h"

/*
 * Reads [offset, offset + length) in 1 MiB pieces, as many in flight as the engine allows (up
 * to 16), and returns the sustained rate in MB/s: the least-squares slope of bytes completed
 * against completion time over the completions from the first on, so that the first request's
 * positioning is not part of it and a late completion at either end (a scheduling delay on a
 * busy machine) barely moves it, unlike first-to-last. *first_end gets the end of the first
 * completed piece. With `check`, every piece's first 4 KiB must hold diskgeo-simdisk's pattern.
 * Returns -1 on a failed submission, a short or failed read, a wrong pattern, or fewer than
 * three completions.
 */
double dg_test_seq_rate(struct dg_engine *e, uint64_t offset, uint64_t length, bool check,
			uint64_t *first_end);

#endif
