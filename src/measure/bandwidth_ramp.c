/* SPDX-License-Identifier: MIT */
/*
 * Boundaries the curve does not show where they were put. A curve that falls in steps smaller
 * than the scatter of its samples (a serpentine drive's surfaces, each sample on one of them,
 * read ±5% about a zone whose steps are 1%) falls like a ramp: the segmentation cuts it where its
 * penalty says, and the segments' means differ by much, but no step lies at the cut. Each
 * boundary is tested where it is: a line with a step at the boundary, fitted by least squares
 * to the samples on both sides of it (a change-point test on a regression, Chow 1960), the
 * step read robustly from the residuals' medians. When the segments' means differ by three zone
 * steps or more and the step there is under a third of that (by a standard error), the
 * boundary is made up: merged, with a note. A boundary with fewer than RAMP_MIN samples on a side
 * is never tested. Nor is a curve whose samples scatter by less than a zone step and show no
 * surface levels (none found, none rejected): there a cut lies at a step, and segments long
 * enough to differ by three zone steps are a staircase of steps near 2% that the segmentation
 * merged, whose line fit takes in its risers (zoo 53, per-surface on the cylinder layout, 1.7%
 * noise over 6.7 GB zones of 2.1 to 2.5% steps: all 9 of its boundaries merged, 10 steps missed).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bandwidth_zones_priv.h"
#include "util.h"

#define RAMP_MIN 8  /* samples a side, at least, to test a boundary */
#define RAMP_MAX 32 /* ... and at most (the nearest) */
/* Only segments whose means differ by this much (ln) are looked at: three zone steps of 2%. A
 * staircase of smaller steps that the segmentation split into a few zones each has boundaries
 * at true steps whose neighbours' means differ by a little more than their own step. */
#define RAMP_MEANS 0.06

static double det3(double m[3][3])
{
	return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
	       m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
	       m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
}

/* Least squares of y = a + b x + d [x at or after the boundary] over n points: the
 * coefficients into coef[3]. false when the fit is singular. */
static bool step_fit(const double *x, const double *y, const bool *after, size_t n, double coef[3])
{
	double m[3][3] = {{0}}, v[3] = {0}, det;

	for (size_t i = 0; i < n; i++) {
		double row[3] = {1, x[i], after[i] ? 1 : 0};

		for (int j = 0; j < 3; j++) {
			v[j] += row[j] * y[i];
			for (int k = 0; k < 3; k++)
				m[j][k] += row[j] * row[k];
		}
	}
	det = det3(m);
	if (!(fabs(det) > 1e-12) || n < 4)
		return false;
	for (int c = 0; c < 3; c++) { /* Cramer's rule */
		double t[3][3];

		memcpy(t, m, sizeof(t));
		for (int j = 0; j < 3; j++)
			t[j][c] = v[j];
		coef[c] = det3(t) / det;
	}
	return true;
}

/* The step at the boundary, robustly: the median residual about the fitted line (its step left
 * out) after the boundary less the median before, and its standard error from the residuals'
 * MAD (Hampel 1974; a median's error 1.25 sigma / sqrt n). A run of samples that all fell on
 * one slow surface next to the boundary (the sampling grid aliases a serpentine's bands) moves a
 * mean step, not a median one. */
static void robust_step(const double *x, const double *y, size_t na, size_t nb,
			const double coef[3], double *d, double *se)
{
	double res[2 * RAMP_MAX], dev[2 * RAMP_MAX], ma, mb, sigma;
	size_t n = na + nb;

	for (size_t i = 0; i < n; i++)
		res[i] = y[i] - coef[0] - coef[1] * x[i];
	memcpy(dev, res, n * sizeof(*dev));
	ma = dg_median(dev, na);
	mb = dg_median(dev + na, nb);
	for (size_t i = 0; i < n; i++)
		dev[i] = fabs(res[i] - (i < na ? ma : mb));
	sigma = 1.4826 * dg_median(dev, n);
	*d = mb - ma;
	*se = 1.2533 * sigma * sqrt(1.0 / (double)na + 1.0 / (double)nb);
}

/* Mean ln rate of the usable samples [a, b); NAN when none. */
static double seg_mean(const struct curve *cv, size_t a, size_t b)
{
	double s = 0;
	size_t k = 0;

	for (size_t i = a; i < b; i++)
		if (!cv->excl[i]) {
			s += log(cv->rates[i]);
			k++;
		}
	return k ? s / (double)k : NAN;
}

/* Collects up to RAMP_MAX usable samples of [a, b) nearest to `edge` (walking with `dir`) into
 * x (GB from `x0`), y (ln rate) and after; how many. */
static size_t side(const struct curve *cv, size_t from, size_t stop, int dir, bool is_after,
		   double x0, double *x, double *y, bool *after)
{
	size_t k = 0;

	for (size_t i = from; i != stop && k < RAMP_MAX; i = (size_t)((long)i + dir)) {
		if (cv->excl[i])
			continue;
		x[k] = ((double)cv->v[i].offset_bytes - x0) / 1e9;
		y[k] = log(cv->rates[i]);
		after[k++] = is_after;
	}
	return k;
}

/* Whether the boundary between segments [a, mid) and [mid, b) is made up (see above). */
static bool made_up(const struct curve *cv, size_t a, size_t mid, size_t b)
{
	double x[2 * RAMP_MAX], y[2 * RAMP_MAX], coef[3], d, se, D;
	bool after[2 * RAMP_MAX];
	double x0 = (double)cv->v[mid].offset_bytes;
	size_t na = side(cv, mid - 1, a - 1, -1, false, x0, x, y, after);
	size_t nb = side(cv, mid, b, 1, true, x0, x + na, y + na, after + na);

	if (na < RAMP_MIN || nb < RAMP_MIN || !step_fit(x, y, after, na + nb, coef))
		return false;
	robust_step(x, y, na, nb, coef, &d, &se);
	D = fabs(seg_mean(cv, a, mid) - seg_mean(cv, mid, b));
	return D >= RAMP_MEANS && fabs(d) + se < D / 3;
}

int bw_ramp_merge(struct curve *cv, struct dg_bandwidth_result *r)
{
	size_t merged = 0, kept = 0;
	bool *drop;

	if (cv->L.n < 2 && !cv->L.rejected && cv->noise < KEEP_STEP)
		return 0;
	drop = calloc(cv->nseg ? cv->nseg : 1, sizeof(*drop));
	if (!drop)
		return -ENOMEM;
	/* Every boundary against the segmentation as it stands, then again once merged: a
	 * staircase of true steps never gets there (its neighbours' means differ by less than
	 * RAMP_MEANS), a ramp cut in several places merges down to its ends. */
	do {
		for (size_t s = 0; s + 1 < cv->nseg; s++)
			drop[s] =
			    made_up(cv, s ? cv->ends[s - 1] : 0, cv->ends[s], cv->ends[s + 1]);
		kept = 0;
		for (size_t s = 0; s < cv->nseg; s++) {
			if (s + 1 < cv->nseg && drop[s]) {
				merged++;
				continue;
			}
			cv->ends[kept++] = cv->ends[s];
		}
	} while (kept < cv->nseg && (cv->nseg = kept) > 1);
	free(drop);
	if (!merged)
		return 0;
	/* One zone left: curve_ends() gives the reason, how far the curve falls between its ends.
	 */
	return dg_warnings_add(&r->notes,
			       "%zu zone boundar%s put where the curve shows no step (it falls "
			       "there like a ramp, in steps smaller than its samples' scatter): "
			       "merged",
			       merged, merged == 1 ? "y" : "ies")
		   ? -ENOMEM
		   : 0;
}
