/* SPDX-License-Identifier: MIT */
/*
 * Parsing of command-line sizes and times (contract.md). Numbers are read digit by digit into
 * exact integers (a whole part and a decimal fraction), never through floating point, so that
 * "1.5k" is exactly 1536 and "0.1k" is refused (102.4 bytes) rather than rounded.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "diskgeo/diskgeo.h"
#include "diskgeo/parse.h"
#include "util.h"

/* At most this many digits after the point: 10^18 still fits the 128-bit arithmetic below. */
#define MAX_FRAC_DIGITS 18

/* A decimal number as read: value = whole + frac / 10^frac_digits. */
struct decimal {
	uint64_t whole;
	uint64_t frac;
	unsigned frac_digits;
};

/* Reads "DIGITS[.DIGITS]" at *s, advancing *s past it. A leading digit is required and a point
 * must be followed by a digit. Returns 0, -EINVAL (no number) or -ERANGE (too many digits). */
static int read_decimal(const char **s, struct decimal *d)
{
	const char *p = *s;
	bool overflow = false;

	memset(d, 0, sizeof(*d));
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned digit = (unsigned)(*p - '0');
		if (d->whole > (UINT64_MAX - digit) / 10)
			overflow = true;
		else
			d->whole = d->whole * 10 + digit;
	}
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (d->frac_digits == MAX_FRAC_DIGITS) {
				if (*p != '0') /* only trailing zeros may pass the limit */
					overflow = true;
				continue;
			}
			d->frac = d->frac * 10 + (uint64_t)(*p - '0');
			d->frac_digits++;
		}
	}
	*s = p;
	return overflow ? -ERANGE : 0;
}

static unsigned __int128 pow10_u128(unsigned n)
{
	unsigned __int128 r = 1;

	while (n--)
		r *= 10;
	return r;
}

/*
 * value * mult exactly. With `whole_only`, a result that is not an integer is -EINVAL; otherwise
 * it is rounded to the nearest integer. -ERANGE when the result exceeds UINT64_MAX.
 */
static int scale(const struct decimal *d, uint64_t mult, bool whole_only, uint64_t *out)
{
	unsigned __int128 den = pow10_u128(d->frac_digits);
	unsigned __int128 whole = (unsigned __int128)d->whole * mult;
	unsigned __int128 num = (unsigned __int128)d->frac * mult; /* < 10^18 * 2^64 < 2^124 */
	unsigned __int128 q = num / den, r = num % den;

	if (r) {
		if (whole_only)
			return -EINVAL;
		if (r * 2 >= den)
			q++;
	}
	whole += q;
	if (whole > UINT64_MAX)
		return -ERANGE;
	*out = (uint64_t)whole;
	return 0;
}

/*
 * Size suffixes, as util-linux's strtosize() reads them: the letter alone or with "iB" is a power
 * of 1024 (K = KiB = 2^10 ... E = EiB = 2^60), the letter with "B" a power of 1000 (KB = kB =
 * 10^3 ... EB = 10^18). Letters are case-insensitive; "B" alone is bytes, "s" logical sectors.
 */
static const char size_letters[] = "kmgtpe";

/* base^power (fits 64 bits up to E = 1024^6). */
static uint64_t power_of(uint64_t base, unsigned power)
{
	uint64_t r = 1;

	while (power--)
		r *= base;
	return r;
}

/* The multiplier a size suffix stands for; *rc = -EINVAL when `suffix` is not one. */
static uint64_t size_multiplier(const char *suffix, uint32_t sector_bytes, int *rc)
{
	const char *letter;

	*rc = 0;
	if (!*suffix || !strcasecmp(suffix, "b"))
		return 1;
	if (!strcasecmp(suffix, "s")) {
		if (!sector_bytes) /* the device, and so its sector, is not known here */
			*rc = -EINVAL;
		return sector_bytes;
	}
	letter = strchr(size_letters, suffix[0] | 0x20);
	if (letter && *letter) {
		unsigned power = (unsigned)(letter - size_letters) + 1;
		const char *tail = suffix + 1;
		if (!*tail || !strcasecmp(tail, "ib"))
			return power_of(1024, power);
		if (!strcasecmp(tail, "b"))
			return power_of(1000, power);
	}
	*rc = -EINVAL;
	return 0;
}

int dg_parse_size(const char *text, uint32_t sector_bytes, uint64_t *bytes)
{
	struct decimal d;
	const char *p = text;
	int rc;

	if (!text || !bytes)
		return -EINVAL;
	rc = read_decimal(&p, &d);
	if (rc == -EINVAL)
		return rc;
	int urc;
	uint64_t mult = size_multiplier(p, sector_bytes, &urc);
	if (urc)
		return urc;
	if (rc)
		return rc;
	return scale(&d, mult, true, bytes);
}

/* Time suffixes in ns; matched whole and case-insensitively. No suffix means seconds. */
static const struct {
	const char *suffix;
	uint64_t ns;
} time_units[] = {
    {"", DG_NS_PER_S},	       /* no suffix: seconds */
    {"ms", DG_NS_PER_MS},      /* milliseconds */
    {"s", DG_NS_PER_S},	       /* seconds */
    {"m", 60 * DG_NS_PER_S},   /* minutes */
    {"h", 3600 * DG_NS_PER_S}, /* hours */
};

int dg_parse_time(const char *text, uint64_t *ns)
{
	struct decimal d;
	const char *p = text;
	int rc;

	if (!text || !ns)
		return -EINVAL;
	rc = read_decimal(&p, &d);
	if (rc == -EINVAL)
		return rc;
	for (size_t i = 0; i < ARRAY_SIZE(time_units); i++) {
		if (strcasecmp(p, time_units[i].suffix))
			continue;
		if (rc)
			return rc;
		/* Below a nanosecond nothing is measured: round rather than refuse. */
		return scale(&d, time_units[i].ns, false, ns);
	}
	return -EINVAL;
}

int dg_parse_uint(const char *text, uint64_t min, uint64_t max, uint64_t *value)
{
	struct decimal d;
	const char *p = text;
	int rc;

	if (!text || !value)
		return -EINVAL;
	rc = read_decimal(&p, &d);
	if (rc == -EINVAL || *p || d.frac_digits)
		return -EINVAL;
	if (rc)
		return rc;
	if (d.whole < min || d.whole > max)
		return -ERANGE;
	*value = d.whole;
	return 0;
}

int dg_parse_range(const char *text, uint32_t sector_bytes, uint64_t *start_bytes,
		   uint64_t *end_bytes)
{
	char buf[128];
	uint64_t start = 0, end = UINT64_MAX;
	int rc;

	if (!text || !start_bytes || !end_bytes)
		return -EINVAL;
	if (strlen(text) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, text);
	char *colon = strchr(buf, ':');
	if (!colon || strchr(colon + 1, ':'))
		return -EINVAL;
	*colon = '\0';
	if (buf[0] && (rc = dg_parse_size(buf, sector_bytes, &start)))
		return rc;
	if (colon[1] && (rc = dg_parse_size(colon + 1, sector_bytes, &end)))
		return rc;
	if (end <= start) /* an empty or backwards range measures nothing */
		return -EINVAL;
	*start_bytes = start;
	*end_bytes = end;
	return 0;
}
