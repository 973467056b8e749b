/* SPDX-License-Identifier: MIT */
/* Tests of the bounded latency histogram: percentiles of known distributions within the stated
 * relative error, exact small values, the whole uint64 range, memory independent of the count. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "diskgeo/diskgeo.h"
#include "diskgeo/histogram.h"
#include "util.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Exact nearest-rank percentile of sorted v[0..n). */
static uint64_t exact(const uint64_t *v, size_t n, double pct)
{
	size_t rank = (size_t)ceil(pct / 100 * (double)n);

	return v[(rank < 1 ? 1 : rank) - 1];
}

static uint64_t rng_state = 12345;
static double rand01(void)
{
	return (double)(dg_splitmix64(&rng_state) >> 11) * 0x1.0p-53;
}

enum dist { UNIFORM, EXPONENTIAL, LOGNORMAL, BIMODAL };

static uint64_t draw(enum dist d)
{
	switch (d) {
	case UNIFORM: /* 4 KiB reads on a disk: 2..25 ms in ns */
		return 2000000 + (uint64_t)(rand01() * 23e6);
	case EXPONENTIAL: /* SSD-like: mean 80 us */
		return 1000 + (uint64_t)(-log(1 - rand01()) * 80e3);
	case LOGNORMAL: {
		double u1 = rand01(), u2 = rand01();
		double z = sqrt(-2 * log(1 - u1)) * cos(2 * M_PI * u2);
		return (uint64_t)exp(13.0 + 1.5 * z); /* median ~0.44 ms, long tail */
	}
	case BIMODAL: /* cache hits and misses */
		return rand01() < 0.7 ? 50000 + (uint64_t)(rand01() * 1000)
				      : 8000000 + (uint64_t)(rand01() * 9e6);
	}
	return 0;
}

static void known_distributions(void **state)
{
	static const double pcts[] = {0.1, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100};
	const size_t n = 200000;
	uint64_t *v = malloc(n * sizeof(*v));

	assert_non_null(v);
	for (enum dist d = UNIFORM; d <= BIMODAL; d++) {
		struct dg_histogram *h = dg_histogram_new();
		long double sum = 0;
		assert_non_null(h);
		for (size_t i = 0; i < n; i++) {
			v[i] = draw(d);
			sum += v[i];
			dg_histogram_add(h, v[i]);
		}
		qsort(v, n, sizeof(*v), cmp_u64);
		assert_int_equal(dg_histogram_count(h), n);
		assert_int_equal(dg_histogram_min(h), v[0]);
		assert_int_equal(dg_histogram_max(h), v[n - 1]);
		assert_true(fabs(dg_histogram_mean(h) - (double)(sum / n)) <
			    1e-6 * (double)v[n - 1]);
		for (size_t k = 0; k < ARRAY_SIZE(pcts); k++) {
			double want = (double)exact(v, n, pcts[k]);
			double got = (double)dg_histogram_percentile(h, pcts[k]);
			if (fabs(got - want) > DG_HISTOGRAM_REL_ERROR * want)
				fail_msg("distribution %d p%g: %.0f, exact %.0f (error %.3f%%)", d,
					 pcts[k], got, want, 100 * fabs(got - want) / want);
		}
		dg_histogram_free(h);
	}
	free(v);
}

/* Values below 128 are exact; every bucket edge up to 2^64 - 1 stays within the bound. */
static void small_exact_and_full_range(void **state)
{
	struct dg_histogram *h = dg_histogram_new();

	assert_int_equal(dg_histogram_percentile(h, 50), 0); /* empty */
	for (uint64_t x = 0; x < 128; x++)
		dg_histogram_add(h, x);
	for (uint64_t x = 1; x <= 128; x++)
		assert_int_equal(dg_histogram_percentile(h, 100.0 * (double)x / 128), x - 1);
	dg_histogram_free(h);
	for (unsigned bit = 7; bit < 64; bit++) {
		uint64_t vals[] = {1ull << bit, (1ull << bit) + (1ull << (bit - 7)) - 1,
				   (1ull << bit) | ((1ull << bit) - 1)};
		for (size_t k = 0; k < 3; k++) {
			struct dg_histogram *one = dg_histogram_new();
			/* two different values so that the clamp to [min, max] does not hide the
			 * bucket's own error */
			dg_histogram_add(one, vals[k]);
			dg_histogram_add(one, 0);
			dg_histogram_add(one, UINT64_MAX);
			double got = (double)dg_histogram_percentile(one, 50);
			assert_true(fabs(got - (double)vals[k]) <=
				    DG_HISTOGRAM_REL_ERROR * (double)vals[k]);
			dg_histogram_free(one);
		}
	}
}

/* Ten million samples need no more memory than one (the read command's 804 MB of issue 15). */
static void memory_flat(void **state)
{
	struct dg_histogram *h = dg_histogram_new();

	for (uint64_t i = 0; i < 10000000; i++)
		dg_histogram_add(h, 4000000 + (i * 7919) % 8000000);
	assert_int_equal(dg_histogram_count(h), 10000000);
	uint64_t p50 = dg_histogram_percentile(h, 50);
	assert_true(fabs((double)p50 - 8e6) <= DG_HISTOGRAM_REL_ERROR * 8e6);
	assert_true(DG_HISTOGRAM_BUCKETS * sizeof(uint64_t) < 32 * 1024);
	dg_histogram_free(h);
	dg_histogram_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(known_distributions),
	    cmocka_unit_test(small_exact_and_full_range),
	    cmocka_unit_test(memory_flat),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
