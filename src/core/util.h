/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by the library, the command line, simdisk and the tests: the monotonic
 * clock, the median, human-readable byte counts and the element count of an array. Nothing here
 * allocates or keeps state. (splitmix64, the one random sequence, is dg_splitmix64 in diskgeo.h.)
 */
#ifndef DISKGEO_UTIL_H
#define DISKGEO_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The number of elements of an array (not of a pointer). */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t dg_monotonic_ns(void);

/* qsort's comparison of two doubles, ascending. */
int dg_cmp_double(const void *a, const void *b);

/* The median of v[0..n): the middle value, or the mean of the two middle ones. Sorts v in place;
 * NaN when n == 0. */
double dg_median(double *v, size_t n);

/* `bytes` in decimal units ("4.00 TB", "512 B": two decimals from kB up) into buf; returns buf. */
const char *dg_fmt_bytes(char *buf, size_t len, uint64_t bytes);

/* `bytes` in binary units into buf; whole figures stay short ("256 KiB", "1 GiB"), others get two
 * decimals ("4.40 MiB"). Returns buf. */
const char *dg_fmt_ibytes(char *buf, size_t len, uint64_t bytes);

/* `bytes` in binary units, always with two decimals ("3.64 TiB", "1.00 GiB"); returns buf. */
const char *dg_fmt_ibytes2(char *buf, size_t len, uint64_t bytes);

/* One CSV field: v with printf format fmt (e.g. "%.6f") then sep, or only sep when v was not
 * measured (NaN), like a JSON key left out. fprintf's return: negative on a write error. */
int dg_csv_num(FILE *f, const char *fmt, double v, const char *sep);

#endif
