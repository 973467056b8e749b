/* SPDX-License-Identifier: MIT */
/*
 * Zone detection on a bandwidth curve: a piecewise-constant fit of ln(MB/s) along the offsets.
 *
 * Optimal partitioning (Jackson et al. 2005) with PELT pruning (Killick, Fearnhead & Eckley 2012)
 * minimises sum(SSE of each segment) + beta * (segments) exactly, in about O(n) for curves with
 * many changes. beta = 3 sigma^2 ln n, a BIC-type penalty for a change in mean (Yao 1988), with
 * sigma the noise of one sample estimated as MAD(successive differences) / sqrt(2) (robust to
 * the few steps, Fryzlewicz 2014 uses the same estimate), raised to what the noisiest stretches
 * of the curve show (noise_of()). Working in ln(MB/s) makes the noise
 * relative, which is how drives behave. A sample that straddles a boundary or an outlier shows
 * up as a one- or two-sample segment: it is set aside and the partition redone, so every zone
 * rests on at least three samples and no boundary is counted twice. At the end, steps smaller
 * than max(min_step, 3 sigma), than 6 standard errors by Welch's t or than 2.5 standard
 * deviations of the noisier side (each zone with its own variance: the noise differs from zone
 * to zone) are merged away. Each side's spread comes from its successive differences, blind to
 * a trend, so that merging does not cascade; and a curve whose first and last tenths differ by
 * more than a step must is never merged into one zone (the partition stands).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/bandwidth.h"
#include "util.h"

#define PENALTY_FACTOR 3.0
#define MAX_ROUNDS     16
#define MIN_SEGMENT    3   /* samples a zone rests on */
#define LOCAL_WINDOW   16  /* differences per local noise estimate */
#define STEP_Z	       6.0 /* a boundary's step in standard errors (Welch) */
#define STEP_SPREAD    2.5 /* ... and in standard deviations of the noisier zone */
#define NOISE_ROUNDS   6   /* noise re-estimated inside the segments found, at most */
#define NOISE_SHRINK   0.9 /* ... while it falls by more than this factor */
#define SPARSE_SHARE   3.0 /* more than 1/3 of the samples set aside: a sparse curve */

/*
 * sigma of one sample from the successive differences d (whose spread is sigma * sqrt 2), the
 * largest of three views: 1.4826 * MAD(d); the RMS of the 90% smallest |d| (corrected for the
 * trim, 0.79 for a normal law), which sees heavy tails the MAD misses; and the 80th percentile
 * of local estimates over windows of LOCAL_WINDOW differences (each the RMS without its largest
 * |d|, which may be a step). The last one matters on drives: the noise differs from zone to zone
 * (a sample spans a fractional number of skew periods, and how much that costs depends on the
 * zone's track size), and a penalty set by the quiet zones cuts the noisy ones into pieces.
 * `tmp` holds 2n.
 */
static double noise_of(const double *y, size_t n, const size_t *cps, size_t k, double *tmp)
{
	double med, mad, ss = 0, local = 0, *loc = tmp + n;
	size_t keep, nd = 0, nloc = 0, s = 0;

	if (n < 3)
		return 0.0;
	/* Differences inside the segments ends cps[0..k) only (all of them for k = 0). */
	for (size_t i = 0; i + 1 < n; i++) {
		while (s < k && cps[s] <= i)
			s++;
		if (s < k && cps[s] == i + 1 && i + 1 < n)
			continue;
		tmp[nd++] = y[i + 1] - y[i];
	}
	if (nd < 2)
		return 0.0;
	for (size_t w = 0; w + LOCAL_WINDOW <= nd; w += LOCAL_WINDOW / 2) {
		double sum = 0, big = 0;

		for (size_t i = w; i < w + LOCAL_WINDOW; i++) {
			sum += tmp[i] * tmp[i];
			big = fmax(big, tmp[i] * tmp[i]);
		}
		loc[nloc++] = sqrt((sum - big) / (LOCAL_WINDOW - 1));
	}
	if (nloc > 0) {
		qsort(loc, nloc, sizeof(*loc), dg_cmp_double);
		local = loc[(size_t)(0.8 * (double)(nloc - 1))];
	}
	med = dg_median(tmp, nd);
	for (size_t i = 0; i < nd; i++)
		tmp[i] = fabs(tmp[i] - med);
	mad = 1.4826 * dg_median(tmp, nd); /* sorted ascending now */
	keep = (size_t)(0.9 * (double)nd);
	if (keep < 1)
		keep = 1;
	for (size_t i = 0; i < keep; i++)
		ss += tmp[i] * tmp[i];
	return fmax(fmax(mad, sqrt(ss / (double)keep) / 0.79), local) / sqrt(2.0);
}

/*
 * Optimal partition of y[0..m) under penalty beta. On return cps[0..*k) are the exclusive ends
 * of the segments (the last is m). s1, s2 hold m + 1; f holds m + 1; last and cand hold m + 1.
 */
static void partition(const double *y, size_t m, double beta, double *s1, double *s2, double *f,
		      size_t *last, size_t *cand, size_t *cps, size_t *k)
{
	size_t ncand = 0, t, nk = 0;

	s1[0] = s2[0] = 0.0;
	for (t = 0; t < m; t++) {
		s1[t + 1] = s1[t] + y[t];
		s2[t + 1] = s2[t] + y[t] * y[t];
	}
	f[0] = -beta;
	cand[ncand++] = 0;
	for (t = 1; t <= m; t++) {
		double best = INFINITY;
		size_t arg = 0, keep = 0;

		for (size_t j = 0; j < ncand; j++) {
			size_t s = cand[j];
			double d = s1[t] - s1[s];
			double cost = s2[t] - s2[s] - d * d / (double)(t - s);
			double v = f[s] + (cost > 0 ? cost : 0.0) + beta;

			if (v < best) {
				best = v;
				arg = s;
			}
		}
		f[t] = best;
		last[t] = arg;
		/* PELT: a start that cannot beat f[t] now never will (the SSE cost only grows). */
		for (size_t j = 0; j < ncand; j++) {
			size_t s = cand[j];
			double d = s1[t] - s1[s];
			double cost = s2[t] - s2[s] - d * d / (double)(t - s);

			if (f[s] + (cost > 0 ? cost : 0.0) <= f[t])
				cand[keep++] = s;
		}
		ncand = keep;
		cand[ncand++] = t;
	}
	for (t = m; t > 0; t = last[t])
		cps[nk++] = t;
	for (size_t i = 0; i < nk / 2; i++) {
		size_t x = cps[i];
		cps[i] = cps[nk - 1 - i];
		cps[nk - 1 - i] = x;
	}
	*k = nk;
}

/* Variance of one sample over [a, b) from its successive differences (half their mean square):
 * blind to a slow trend inside the segment, so that a segment merged from several small steps
 * does not look noisy, and the merging does not cascade (a merged segment's spread around its
 * mean grows with every step it swallows, and soon no neighbour stands out from it). 0 for
 * fewer than two samples. */
static double diff_var(const double *y, size_t a, size_t b)
{
	double ss = 0;

	if (b - a < 2)
		return 0;
	for (size_t i = a + 1; i < b; i++)
		ss += (y[i] - y[i - 1]) * (y[i] - y[i - 1]);
	return ss / (double)(b - a - 1) / 2.0;
}

/* Mean and variance (n - 1) of y over [a, b). */
static void moments(const double *y, size_t a, size_t b, double *mean, double *var)
{
	double sum = 0, ss = 0;
	size_t n = b - a;

	for (size_t i = a; i < b; i++)
		sum += y[i];
	*mean = sum / (double)n;
	for (size_t i = a; i < b; i++)
		ss += (y[i] - *mean) * (y[i] - *mean);
	*var = n > 1 ? ss / (double)(n - 1) : 0;
}

/*
 * Merges adjacent segments (ends cps[0..*k)) whose step is too small to be a zone boundary: less
 * than `min_step`, or less than STEP_Z standard errors by Welch's t with each segment's own
 * variance (never below sigma^2). The global penalty assumes one noise level; on a drive the
 * noise differs from zone to zone (a sample spans a fractional number of skew periods, and the
 * fraction depends on the zone's track size), and this test catches steps cut in a noisy zone.
 * The weakest pair is merged first, then the scores are recomputed.
 */
static void merge_weak_steps(const double *y, double min_step, double sigma, size_t *cps, size_t *k)
{
	while (*k > 1) {
		double worst = INFINITY;
		size_t at = 0;

		for (size_t s = 0; s + 1 < *k; s++) {
			size_t a = s ? cps[s - 1] : 0, mid = cps[s], b = cps[s + 1];
			double ma, va, mb, vb, d, z;

			moments(y, a, mid, &ma, &va);
			moments(y, mid, b, &mb, &vb);
			va = fmin(va, diff_var(y, a, mid));
			vb = fmin(vb, diff_var(y, mid, b));
			va = fmax(va, sigma * sigma);
			vb = fmax(vb, sigma * sigma);
			d = fabs(ma - mb);
			z = d / sqrt(va / (double)(mid - a) + vb / (double)(b - mid));
			/* Too small a step, or one inside either zone's own spread (a step must
			 * separate the zones, not only their means), scores below every z. */
			if (d < min_step || d < STEP_SPREAD * sqrt(fmax(va, vb)))
				z = -1.0 / (1.0 + d);
			if (z < worst) {
				worst = z;
				at = s;
			}
		}
		if (worst >= STEP_Z)
			break;
		/* Dropping end `at` joins segments at and at + 1. */
		memmove(cps + at, cps + at + 1, (*k - at - 1) * sizeof(*cps));
		(*k)--;
	}
}

/* Whether the first and the last tenth of y[0..m) (at least MIN_SEGMENT samples each) differ by
 * more than `min_step` and by more than STEP_Z standard errors (each sample's noise `sigma` or
 * more): a curve that falls that much from end to end is not one zone. */
static bool ends_differ(const double *y, size_t m, double min_step, double sigma)
{
	size_t w = m / 10;
	double ma, va, mb, vb, se;

	if (w < MIN_SEGMENT)
		w = MIN_SEGMENT;
	if (2 * w > m)
		return false;
	moments(y, 0, w, &ma, &va);
	moments(y, m - w, m, &mb, &vb);
	se = sqrt((fmax(va, sigma * sigma) + fmax(vb, sigma * sigma)) / (double)w);
	return fabs(ma - mb) > min_step && fabs(ma - mb) > STEP_Z * se;
}

/* Scratch of one segmentation (n samples). */
struct work {
	size_t *idx, *last, *cand, *cps, *pelt;
	double *y, *s1, *s2, *f, *tmp;
};

static void work_free(struct work *w)
{
	free(w->idx);
	free(w->last);
	free(w->cand);
	free(w->cps);
	free(w->pelt);
	free(w->y);
	free(w->s1);
	free(w->s2);
	free(w->f);
	free(w->tmp);
}

static int work_alloc(struct work *w, size_t n)
{
	memset(w, 0, sizeof(*w));
	w->idx = malloc(n * sizeof(*w->idx));
	w->last = malloc((n + 1) * sizeof(*w->last));
	w->cand = malloc((n + 1) * sizeof(*w->cand));
	w->cps = malloc((n + 1) * sizeof(*w->cps));
	w->pelt = malloc((n + 1) * sizeof(*w->pelt));
	w->y = malloc(n * sizeof(*w->y));
	w->s1 = malloc((n + 1) * sizeof(*w->s1));
	w->s2 = malloc((n + 1) * sizeof(*w->s2));
	w->f = malloc((n + 1) * sizeof(*w->f));
	w->tmp = malloc(2 * n * sizeof(*w->tmp));
	if (w->idx && w->last && w->cand && w->cps && w->pelt && w->y && w->s1 && w->s2 && w->f &&
	    w->tmp)
		return 0;
	work_free(w);
	return -ENOMEM;
}

/* The optimal partition of the samples not excluded (centred ln MB/s in w->y, their indices in
 * w->idx, *m of them), under the penalty of their measured noise *sigma (never below the
 * floor): segment ends in w->cps[0..*k). -EINVAL when none is usable. */
static int fit_usable(const double *mb_per_s, size_t n, const bool *excluded, double noise_floor,
		      int rounds, struct work *w, size_t *m, double *sigma, size_t *k)
{
	double mean = 0.0, beta;

	*m = 0;
	for (size_t i = 0; i < n; i++) {
		if (excluded[i])
			continue;
		w->idx[*m] = i;
		w->y[*m] = log(mb_per_s[i]);
		mean += w->y[(*m)++];
	}
	if (*m == 0)
		return -EINVAL;
	/* Centred values keep the prefix sums' cancellation small. */
	mean /= (double)*m;
	for (size_t j = 0; j < *m; j++)
		w->y[j] -= mean;
	*sigma = noise_of(w->y, *m, NULL, 0, w->tmp);
	for (int round = 0; round < rounds; round++) {
		double inside;

		if (!(*sigma >= noise_floor))
			*sigma = noise_floor;
		beta = PENALTY_FACTOR * *sigma * *sigma * log((double)(*m > 3 ? *m : 3));
		partition(w->y, *m, beta, w->s1, w->s2, w->f, w->last, w->cand, w->cps, k);
		inside = noise_of(w->y, *m, w->cps, *k, w->tmp);
		if (round + 1 == rounds || !(inside < NOISE_SHRINK * *sigma))
			break;
		*sigma = inside;
	}
	return 0;
}

int dg_zones_segment(const double *mb_per_s, size_t n, double noise_floor, double min_step,
		     bool *excluded, size_t *ends, size_t *nseg, double *noise)
{
	struct work w;
	bool *given = malloc((n ? n : 1) * sizeof(*given));
	size_t m = 0, k = 0, pelt_k, usable = 0;
	double sigma = noise_floor;
	int rc = -ENOMEM;

	*nseg = 0;
	if (!given || work_alloc(&w, n ? n : 1)) {
		free(given);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (!excluded[i] && !(mb_per_s[i] > 0 && isfinite(mb_per_s[i])))
			excluded[i] = true;
		usable += !excluded[i];
		given[i] = excluded[i];
	}
	for (int round = 0; round < MAX_ROUNDS; round++) {
		bool changed = false;

		rc = fit_usable(mb_per_s, n, excluded, noise_floor, NOISE_ROUNDS, &w, &m, &sigma,
				&k);
		if (rc || k < 2 || m < 4 || round == MAX_ROUNDS - 1)
			break;
		/* Set short segments aside: straddlers or outliers, never a zone. */
		for (size_t s = 0, start = 0; s < k; start = w.cps[s], s++) {
			if (w.cps[s] - start < MIN_SEGMENT) {
				excluded[w.idx[start]] = true;
				changed = true;
			}
		}
		if (!changed)
			break;
	}
	/* A sparse curve (steps closer than MIN_SEGMENT samples, as in a quick run of a few dozen
	 * samples): what was set aside is most of the curve, not its outliers. Every sample counts
	 * then, and the partition is made over all of them. */
	if ((rc == 0 || (rc == -EINVAL && usable > 0)) &&
	    SPARSE_SHARE * (double)(usable - (rc ? 0 : m)) > (double)usable) {
		memcpy(excluded, given, n * sizeof(*excluded));
		rc = fit_usable(mb_per_s, n, excluded, noise_floor, 1, &w, &m, &sigma, &k);
	}
	if (rc)
		goto out;
	/* Steps too small or too uncertain to be zone boundaries are merged away; but a curve
	 * whose ends differ by far more than the noise has zones, whatever the merging says: then
	 * the partition stands as found. */
	memcpy(w.pelt, w.cps, k * sizeof(*w.cps));
	pelt_k = k;
	merge_weak_steps(w.y, fmax(min_step, 3.0 * sigma), sigma, w.cps, &k);
	if (k == 1 && pelt_k > 1 && ends_differ(w.y, m, fmax(min_step, 3.0 * sigma), sigma)) {
		memcpy(w.cps, w.pelt, pelt_k * sizeof(*w.cps));
		k = pelt_k;
	}
	/* Segment ends in full indices: a segment runs to the first sample of the next one. */
	for (size_t s = 0; s < k; s++)
		ends[s] = w.cps[s] < m ? w.idx[w.cps[s]] : n;
	*nseg = k;
	*noise = sigma;
out:
	work_free(&w);
	free(given);
	return rc;
}
