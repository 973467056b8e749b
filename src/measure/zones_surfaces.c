/* SPDX-License-Identifier: MIT */
/*
 * Surface classes of a bandwidth curve. On a drive whose heads are formatted each to its own
 * density (adaptive formatting) and laid out in serpentine bands, a sample reads one surface's
 * rate: the curve scatters by a few percent around its zone's rate, in as many levels as the
 * drive has distinct surfaces, and that scatter hides zone steps of 2% from a change-point fit.
 * The levels are found as clusters of the samples' distances from the local trend of ln(MB/s)
 * (a running median): one-dimensional k-means (Lloyd 1982), the count of levels by BIC (Schwarz
 * 1978) and kept only when the levels stand apart from their own spread. Two rounds: the second
 * trend is taken on the curve corrected by the first round's levels, free of their scatter.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/bandwidth.h"
#include "util.h"

#define TREND_HALF    7	   /* the running median spans 2 * TREND_HALF + 1 samples */
#define KMEANS_ROUNDS 30   /* Lloyd iterations */
#define MIN_SHARE     0.04 /* a level holds at least this part of the samples ... */
#define MIN_MEMBERS   4u   /* ... and at least this many */
#define LEVEL_SEP     5.0  /* neighbouring levels differ by this x their pooled spread */
#define BIC_FACTOR    3.0  /* penalty per level, x ln n */

/* Running median of y[0..m) over 2 * TREND_HALF + 1 samples (fewer at the ends) into t. */
static void running_median(const double *y, size_t m, double *t, double *win)
{
	for (size_t i = 0; i < m; i++) {
		size_t a = i > TREND_HALF ? i - TREND_HALF : 0;
		size_t b = i + TREND_HALF + 1 < m ? i + TREND_HALF + 1 : m, w = b - a;

		memcpy(win, y + a, w * sizeof(*win));
		qsort(win, w, sizeof(*win), dg_cmp_double);
		t[i] = w % 2 ? win[w / 2] : 0.5 * (win[w / 2 - 1] + win[w / 2]);
	}
}

/* k-means of the sorted values e[0..m) into k levels (contiguous runs of e); returns the SSE and
 * the levels' centres c[0..k) and first members first[0..k] (first[k] = m). */
static double kmeans_sorted(const double *e, size_t m, size_t k, double *c, size_t *first)
{
	double sse = 0;

	for (size_t j = 0; j < k; j++)
		c[j] = e[(size_t)(((double)j + 0.5) / (double)k * (double)m)];
	for (int round = 0; round < KMEANS_ROUNDS; round++) {
		size_t i = 0;

		for (size_t j = 0; j < k; j++) {
			double cut = j + 1 < k ? 0.5 * (c[j] + c[j + 1]) : INFINITY, sum = 0;

			first[j] = i;
			while (i < m && e[i] < cut)
				sum += e[i++];
			if (i > first[j])
				c[j] = sum / (double)(i - first[j]);
		}
		first[k] = m;
	}
	for (size_t j = 0; j < k; j++)
		for (size_t i = first[j]; i < first[j + 1]; i++)
			sse += (e[i] - c[j]) * (e[i] - c[j]);
	return sse;
}

/* Whether the k levels hold enough samples each and stand apart from their pooled spread. */
static bool levels_stand_apart(const double *c, const size_t *first, size_t k, size_t m, double sse,
			       double min_sep)
{
	double sd = sqrt(sse / (double)(m > k ? m - k : 1));

	for (size_t j = 0; j < k; j++) {
		size_t members = first[j + 1] - first[j];

		if (members < MIN_MEMBERS || (double)members < MIN_SHARE * (double)m)
			return false;
		if (j > 0 && (c[j] - c[j - 1] < LEVEL_SEP * sd || c[j] - c[j - 1] < min_sep))
			return false;
	}
	return true;
}

/* The best count of levels of the residuals e[0..m) (sorted in place) and their centres. */
static size_t best_levels(double *e, size_t m, double min_sep, double *centre, size_t *first,
			  double *sd)
{
	double best = INFINITY, c[DG_ZONES_MAX_SURFACES];
	size_t f[DG_ZONES_MAX_SURFACES + 1], kbest = 1;

	qsort(e, m, sizeof(*e), dg_cmp_double);
	for (size_t k = 1; k <= DG_ZONES_MAX_SURFACES && k * MIN_MEMBERS <= m; k++) {
		double sse = kmeans_sorted(e, m, k, c, f);
		double bic = (double)m * log(fmax(sse, 1e-300) / (double)m) +
			     BIC_FACTOR * (double)k * log((double)m);

		if (k > 1 && !levels_stand_apart(c, f, k, m, sse, min_sep))
			continue;
		if (bic < best) {
			best = bic;
			kbest = k;
			*sd = sqrt(sse / (double)(m > k ? m - k : 1));
			memcpy(centre, c, k * sizeof(*c));
			memcpy(first, f, (k + 1) * sizeof(*f));
		}
	}
	return kbest;
}

/* One round: residuals of y from the trend of `smooth`, their levels, each sample's level. */
static size_t classify(const double *y, const double *smooth, size_t m, double min_sep, double *sd,
		       double *tmp, double *centre, unsigned char *level)
{
	double *t = tmp, *e = tmp + m, *win = tmp + 2 * m;
	size_t first[DG_ZONES_MAX_SURFACES + 1], k;

	running_median(smooth, m, t, win);
	for (size_t i = 0; i < m; i++)
		e[i] = y[i] - t[i];
	k = best_levels(e, m, min_sep, centre, first, sd);
	for (size_t i = 0; i < m; i++) {
		double r = y[i] - t[i], best = INFINITY;

		level[i] = 0;
		for (size_t j = 0; j < k; j++) {
			if (fabs(r - centre[j]) < best) {
				best = fabs(r - centre[j]);
				level[i] = (unsigned char)j;
			}
		}
	}
	return k;
}

int dg_zones_surfaces(const double *mb_per_s, const bool *excluded, size_t n, double min_sep,
		      double *offset, size_t *nlevels, unsigned char *level_of, double *spread)
{
	size_t *idx = malloc((n ? n : 1) * sizeof(*idx)), m = 0, k = 1;
	double *y = malloc((n ? n : 1) * sizeof(*y)), *z = malloc((n ? n : 1) * sizeof(*z));
	double *tmp = malloc((3 * n + 2 * TREND_HALF + 2) * sizeof(*tmp));
	unsigned char *lv = malloc(n ? n : 1);
	double mean = 0;
	int rc = -ENOMEM;

	*nlevels = 1;
	*spread = 0;
	offset[0] = 0;
	memset(level_of, 0, n);
	if (!idx || !y || !z || !tmp || !lv)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (excluded[i] || !(mb_per_s[i] > 0 && isfinite(mb_per_s[i])))
			continue;
		idx[m] = i;
		y[m++] = log(mb_per_s[i]);
	}
	rc = 0;
	if (m < 2 * (2 * TREND_HALF + 1))
		goto out; /* too few samples for a trend and its levels */
	k = classify(y, y, m, min_sep, spread, tmp, offset, lv);
	if (k > 1) {
		for (size_t i = 0; i < m; i++)
			z[i] = y[i] - offset[lv[i]];
		k = classify(y, z, m, min_sep, spread, tmp, offset, lv);
	}
	if (k < 2)
		goto out;
	/* Offsets from the samples' mean level, so that correcting keeps the curve's height. */
	for (size_t i = 0; i < m; i++)
		mean += offset[lv[i]];
	mean /= (double)m;
	for (size_t j = 0; j < k; j++)
		offset[j] -= mean;
	for (size_t i = 0; i < m; i++)
		level_of[idx[i]] = lv[i];
	*nlevels = k;
out:
	if (*nlevels == 1) {
		offset[0] = 0;
		*spread = 0;
	}
	free(idx);
	free(y);
	free(z);
	free(tmp);
	free(lv);
	return rc;
}
