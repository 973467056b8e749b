/* SPDX-License-Identifier: MIT */
/*
 * A bounded latency histogram: log-linear buckets over the whole uint64 range, as fio's clat
 * buckets and HdrHistogram (Tene) lay them out. Values below 128 are counted exactly; above,
 * each power of two is split into 64 equal buckets, so a percentile is reported within
 * DG_HISTOGRAM_REL_ERROR (1/128, 0.78 %) of the true sample at that rank. Memory is fixed
 * (DG_HISTOGRAM_BUCKETS counters, about 30 KB) whatever the number of samples.
 */
#ifndef DISKGEO_HISTOGRAM_H
#define DISKGEO_HISTOGRAM_H

#include <stdint.h>

#define DG_HISTOGRAM_SUB_BITS  6u /* 64 buckets per power of two */
#define DG_HISTOGRAM_BUCKETS   ((65u - DG_HISTOGRAM_SUB_BITS) << DG_HISTOGRAM_SUB_BITS)
#define DG_HISTOGRAM_REL_ERROR (1.0 / 128) /* half a bucket's width over its lower edge */

struct dg_histogram;

/* A new, empty histogram; NULL when out of memory. Free with dg_histogram_free() (accepts NULL). */
struct dg_histogram *dg_histogram_new(void);
void dg_histogram_free(struct dg_histogram *h);
/* Empties it (for the next cell or run). */
void dg_histogram_reset(struct dg_histogram *h);

/* Counts one value. */
void dg_histogram_add(struct dg_histogram *h, uint64_t v);

/* Values counted so far, their exact minimum, maximum and mean (0 when empty). */
uint64_t dg_histogram_count(const struct dg_histogram *h);
uint64_t dg_histogram_min(const struct dg_histogram *h);
uint64_t dg_histogram_max(const struct dg_histogram *h);
double dg_histogram_mean(const struct dg_histogram *h);

/*
 * The nearest-rank percentile (Hyndman & Fan 1996, definition 1: the smallest value with at
 * least pct percent of the values at or below it), pct in (0, 100]: the middle of the bucket
 * holding that rank, clamped to [min, max]; within DG_HISTOGRAM_REL_ERROR of the exact value
 * (exact below 128). 0 when empty.
 */
uint64_t dg_histogram_percentile(const struct dg_histogram *h, double pct);

#endif
