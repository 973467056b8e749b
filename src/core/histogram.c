/* SPDX-License-Identifier: MIT */
/*
 * Log-linear buckets (fio's stat.c plat buckets and HdrHistogram use the same layout): value v
 * below 2^(SUB_BITS+1) is its own bucket; otherwise, with m the index of v's top bit and
 * g = m - SUB_BITS, the bucket is (g + 1) * 2^SUB_BITS + (v >> g) - 2^SUB_BITS, holding the
 * 2^g values that share v's top SUB_BITS + 1 bits.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/histogram.h"

#define SUB (1u << DG_HISTOGRAM_SUB_BITS)

struct dg_histogram {
	uint64_t counts[DG_HISTOGRAM_BUCKETS];
	uint64_t n, min, max;
	long double sum;
};

struct dg_histogram *dg_histogram_new(void)
{
	struct dg_histogram *h = calloc(1, sizeof(*h));

	if (h)
		h->min = UINT64_MAX;
	return h;
}

void dg_histogram_free(struct dg_histogram *h)
{
	free(h);
}

void dg_histogram_reset(struct dg_histogram *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

static unsigned bucket_of(uint64_t v)
{
	if (v < 2 * SUB)
		return (unsigned)v;
	unsigned g = 63u - (unsigned)__builtin_clzll(v) - DG_HISTOGRAM_SUB_BITS;
	return (g + 1) * SUB + (unsigned)(v >> g) - SUB;
}

/* The first value of bucket i and its width. */
static void bucket_range(unsigned i, uint64_t *lo, uint64_t *width)
{
	if (i < 2 * SUB) {
		*lo = i;
		*width = 1;
		return;
	}
	unsigned g = i / SUB - 1;
	*lo = (uint64_t)(SUB + i % SUB) << g;
	*width = 1ull << g;
}

void dg_histogram_add(struct dg_histogram *h, uint64_t v)
{
	h->counts[bucket_of(v)]++;
	h->n++;
	h->sum += (long double)v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

uint64_t dg_histogram_count(const struct dg_histogram *h)
{
	return h->n;
}

uint64_t dg_histogram_min(const struct dg_histogram *h)
{
	return h->n ? h->min : 0;
}

uint64_t dg_histogram_max(const struct dg_histogram *h)
{
	return h->max;
}

double dg_histogram_mean(const struct dg_histogram *h)
{
	return h->n ? (double)(h->sum / (long double)h->n) : 0.0;
}

uint64_t dg_histogram_percentile(const struct dg_histogram *h, double pct)
{
	uint64_t rank, seen = 0, lo, width, v;

	if (h->n == 0)
		return 0;
	if (!(pct > 0))
		return h->min;
	if (pct >= 100)
		return h->max;
	/* ceil(pct / 100 * n) without a float-to-integer cast out of range: pct is in (0, 100) */
	rank = (uint64_t)ceill((long double)pct / 100 * (long double)h->n);
	if (rank < 1)
		rank = 1;
	if (rank > h->n)
		rank = h->n;
	for (unsigned i = 0; i < DG_HISTOGRAM_BUCKETS; i++) {
		seen += h->counts[i];
		if (seen < rank)
			continue;
		bucket_range(i, &lo, &width);
		v = lo + (width - 1) / 2;
		if (v < h->min)
			v = h->min;
		if (v > h->max)
			v = h->max;
		return v;
	}
	return h->max;
}
