/* SPDX-License-Identifier: MIT */
/* Small shared helpers: see util.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "diskgeo/diskgeo.h"
#include "util.h"

uint64_t dg_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * DG_NS_PER_S + (uint64_t)ts.tv_nsec;
}

int dg_csv_num(FILE *f, const char *fmt, double v, const char *sep)
{
	if (!isfinite(v))
		return fprintf(f, "%s", sep);
	int n = fprintf(f, fmt, v);

	return n < 0 ? n : fprintf(f, "%s", sep);
}

int dg_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double dg_median(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), dg_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *const dec_unit[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
static const char *const bin_unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

/* bytes / base^u for the largest u that leaves at least 1 (u < nunits). */
static double scaled(uint64_t bytes, double base, size_t nunits, size_t *u)
{
	double v = (double)bytes;

	for (*u = 0; v >= base && *u + 1 < nunits; ++*u)
		v /= base;
	return v;
}

const char *dg_fmt_bytes(char *buf, size_t len, uint64_t bytes)
{
	size_t u;
	double v = scaled(bytes, 1000.0, ARRAY_SIZE(dec_unit), &u);

	snprintf(buf, len, u ? "%.2f %s" : "%.0f %s", v, dec_unit[u]);
	return buf;
}

const char *dg_fmt_ibytes(char *buf, size_t len, uint64_t bytes)
{
	uint64_t whole = bytes;
	size_t u = 0;

	while (whole >= 1024 && whole % 1024 == 0 && u + 1 < ARRAY_SIZE(bin_unit)) {
		whole /= 1024;
		u++;
	}
	if (whole < 1024) {
		snprintf(buf, len, "%llu %s", (unsigned long long)whole, bin_unit[u]);
		return buf;
	}
	return dg_fmt_ibytes2(buf, len, bytes);
}

const char *dg_fmt_ibytes2(char *buf, size_t len, uint64_t bytes)
{
	size_t u;
	double v = scaled(bytes, 1024.0, ARRAY_SIZE(bin_unit), &u);

	snprintf(buf, len, "%.2f %s", v, bin_unit[u]);
	return buf;
}
