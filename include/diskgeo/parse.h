/* SPDX-License-Identifier: MIT */
/*
 * Parsing of sizes and times given on the command line (contract.md), with util-linux's
 * strtosize() conventions: K M G T P E and KiB MiB GiB TiB PiB EiB are powers of 1024, KB MB GB
 * TB PB EB (and kB) powers of 1000 (letters case-insensitive), B bytes and s logical sectors;
 * times take ms s m h (no suffix = seconds).
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

/* The accepted forms, for the CLI's messages ("'4x' is not a size: use ..."). */
#define DG_PARSE_SIZE_FORMS                                                                        \
	"bytes, K M G T (KiB MiB GiB TiB: powers of 1024), KB MB GB TB (powers of 1000) or s "     \
	"(logical sectors)"
#define DG_PARSE_TIME_FORMS "ms, s, m or h"

/* Parses a time into nanoseconds ("250ms", "1.5s", "2m", "1h", "60"). Returns 0 or -EINVAL, or
 * -ERANGE above DG_TIME_MAX_NS. */
int dg_parse_time(const char *text, uint64_t *ns);

/* Parses a whole number in [min, max]. Returns 0 or -EINVAL / -ERANGE. */
int dg_parse_uint(const char *text, uint64_t min, uint64_t max, uint64_t *value);

/* Parses "START:END" (each a size; either may be empty: 0 and the device end). *end_bytes is
 * UINT64_MAX when END is empty. Returns 0 or -EINVAL / -ERANGE. */
int dg_parse_range(const char *text, uint32_t sector_bytes, uint64_t *start_bytes,
		   uint64_t *end_bytes);

#endif
