/* SPDX-License-Identifier: MIT */
/*
 * Parsing of sizes and times given on the command line (contract.md):
 * sizes take the suffixes k M G T (powers of 1024, case-insensitive, optional trailing "iB"/"B")
 * and s (logical sectors); times take ms s m h (no suffix = seconds).
 */
#ifndef DISKGEO_PARSE_H
#define DISKGEO_PARSE_H

#include <stdint.h>

/*
 * Parses a size into bytes. `sector_bytes` is what one "s" means (0: the "s" suffix is refused,
 * because the device is not known yet). Refuses garbage, negatives, fractions that are not whole
 * bytes, and overflow. Returns 0 or -EINVAL / -ERANGE.
 */
int dg_parse_size(const char *text, uint32_t sector_bytes, uint64_t *bytes);

/* The longest time dg_parse_time() takes (about 584 years): -ERANGE beyond. */
#define DG_TIME_MAX_NS UINT64_MAX

/* Parses a time into nanoseconds ("250ms", "1.5s", "2m", "60"). Returns 0 or -EINVAL, or
 * -ERANGE above DG_TIME_MAX_NS. */
int dg_parse_time(const char *text, uint64_t *ns);

/* Parses a whole number in [min, max]. Returns 0 or -EINVAL / -ERANGE. */
int dg_parse_uint(const char *text, uint64_t min, uint64_t max, uint64_t *value);

/* Parses "START:END" (each a size; either may be empty: 0 and the device end). *end_bytes is
 * UINT64_MAX when END is empty. Returns 0 or -EINVAL / -ERANGE. */
int dg_parse_range(const char *text, uint32_t sector_bytes, uint64_t *start_bytes,
		   uint64_t *end_bytes);

#endif
