/* SPDX-License-Identifier: MIT */
/*
 * Surface classes of a bandwidth curve. On a drive whose heads are formatted each to its own
 * density (adaptive formatting) and laid out in serpentine bands, a sample reads one surface's
 * rate: the curve scatters by a few percent around its zone's rate, in as many levels as the
 * drive has distinct surfaces, and that scatter hides zone steps of 2% from a change-point fit.
 * The levels are clusters of the samples' distances from their zone's rate: one-dimensional
 * k-means solved exactly (Wang & Song 2011), the count of levels by BIC (Schwarz 1978), kept only
 * when the levels stand apart from their own spread. The zone rate under them is fitted jointly
 * (the Potts functional solved on a grid, below): a first guess of the levels from a running mean,
 * then rounds of the zone path under the levels and the levels of the residuals from it. Where the
 * surfaces' levels are as far apart as the zone steps, a local trend cannot tell a surface from
 * a step; the joint fit can, as each sample's surface is the one its zone's rate explains.
 * Levels that do not interleave inside the zones are a staircase the levels mimic: none then.
 * Where the joint fit finds none (bands longer than zones), the older classification from a
 * local trend (a running median, two rounds) with stricter separations.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/bandwidth.h"
#include "util.h"

#define TREND_HALF	  7	/* the running median spans 2 * TREND_HALF + 1 samples */
#define MIN_SHARE	  0.04	/* a level holds at least this part of the samples ... */
#define MIN_MEMBERS	  4u	/* ... and at least this many */
#define LEVEL_SEP	  3.0	/* neighbouring levels differ by this x their pooled spread */
#define BIC_FACTOR	  3.0	/* penalty per level, x ln n */
#define TREND_MIN_SEP	  0.04	/* the local trend's levels: at least this far apart (ln), ... */
#define TREND_SEP	  5.0	/* ... this x their spread, ... */
#define TREND_MAX_SPREAD  0.005 /* ... and their samples this close to them (ln) */
#define MIN_TURNS	  4	/* levels are surfaces when the samples of a zone go both up ... */
#define MIN_TURN_SHARE	  0.2	/* ... and down from level to level, each this part of the turns */
#define MIN_ZONE_SAMPLES  8u	/* ... in this part of the zones of this many samples or more */
#define MIN_TURNING_ZONES 0.5
#define JOINT_ROUNDS	  3	 /* joint fits of the zone path and the levels */
#define JOINT_CAP	  16.0	 /* a sample costs at most this x sigma^2 in the joint fit */
#define JOINT_GRID_STEP	  0.0005 /* the joint fit's grid of zone rates (ln), at least ... */
#define JOINT_GRID_MAX	  8192u	 /* ... and at most this many points */
#define JOINT_MIN_SIGMA	  0.001	 /* the noise the joint fit assumes, at least */

/* Running mean of y[0..m) over 2 * TREND_HALF + 1 samples (fewer at the ends) into t: the
 * first trend. A mean, not a median: the median of a mixture of two levels jumps between them. */
static void running_mean(const double *y, size_t m, double *t)
{
	double sum = 0;
	size_t a = 0, b = 0;

	for (size_t i = 0; i < m; i++) {
		size_t lo = i > TREND_HALF ? i - TREND_HALF : 0;
		size_t hi = i + TREND_HALF + 1 < m ? i + TREND_HALF + 1 : m;

		while (b < hi)
			sum += y[b++];
		while (a < lo)
			sum -= y[a++];
		t[i] = sum / (double)(b - a);
	}
}

/* The sum of squares of e[a..b) about its mean, from the prefix sums s1, s2. */
static double range_sse(const double *s1, const double *s2, size_t a, size_t b)
{
	double n = (double)(b - a), d = s1[b] - s1[a];

	return b > a ? fmax(0, s2[b] - s2[a] - d * d / n) : 0;
}

/* One row of the k-means recurrence, d[i] = min_t prev[t] + sse(t, i) for i in [lo, hi], the
 * best t searched in [tlo, thi]: the best t does not decrease with i (the clusters of sorted
 * values are contiguous), so the rows are filled by divide and conquer. */
static void kmeans_row(const double *s1, const double *s2, const double *prev, double *d,
		       size_t *arg, size_t lo, size_t hi, size_t tlo, size_t thi)
{
	size_t mid = lo + (hi - lo) / 2, best = tlo;
	double bd = INFINITY;

	for (size_t t = tlo; t <= thi && t < mid; t++) {
		double v = prev[t] + range_sse(s1, s2, t, mid);

		if (v < bd) {
			bd = v;
			best = t;
		}
	}
	d[mid] = bd;
	arg[mid] = best;
	if (mid > lo)
		kmeans_row(s1, s2, prev, d, arg, lo, mid - 1, tlo, best);
	if (mid < hi)
		kmeans_row(s1, s2, prev, d, arg, mid + 1, hi, best, thi);
}

/*
 * k-means of the sorted values e[0..m) into k levels (contiguous runs of e), solved exactly by
 * dynamic programming (Wang & Song 2011, Ckmeans.1d.dp): Lloyd's iterations from quantiles may
 * stop in a local optimum where the levels hold unequal shares (two surfaces of one rate), with
 * two centres in one full level and one between two others. Returns the SSE and the levels' centres
 * c[0..k) and first members first[0..k] (first[k] = m); NAN when out of memory.
 */
static double kmeans_sorted(const double *e, size_t m, size_t k, double *c, size_t *first)
{
	size_t w = m + 1, *arg = malloc(k * w * sizeof(*arg));
	double *s1 = malloc((2 + k) * w * sizeof(*s1)), *s2, *d, sse;

	if (!arg || !s1) {
		free(arg);
		free(s1);
		return NAN;
	}
	s2 = s1 + w;
	d = s2 + w;
	s1[0] = s2[0] = 0;
	for (size_t i = 0; i < m; i++) {
		s1[i + 1] = s1[i] + e[i];
		s2[i + 1] = s2[i] + e[i] * e[i];
	}
	for (size_t i = 0; i <= m; i++) {
		d[i] = range_sse(s1, s2, 0, i);
		arg[i] = 0;
	}
	for (size_t j = 1; j < k; j++) {
		for (size_t i = 0; i <= j && i <= m; i++) {
			d[j * w + i] = INFINITY; /* fewer values than levels */
			arg[j * w + i] = 0;
		}
		if (j < m)
			kmeans_row(s1, s2, d + (j - 1) * w, d + j * w, arg + j * w, j + 1, m, j,
				   m - 1);
	}
	sse = d[(k - 1) * w + m];
	first[k] = m;
	for (size_t j = k, i = m; j-- > 0;) {
		first[j] = j ? arg[j * w + i] : 0;
		c[j] = first[j] < i ? (s1[i] - s1[first[j]]) / (double)(i - first[j]) : 0;
		i = first[j];
	}
	free(arg);
	free(s1);
	return sse;
}

/* Whether the k levels hold enough samples each and stand apart from their pooled spread. */
static bool levels_stand_apart(const double *c, const size_t *first, size_t k, size_t m, double sse,
			       double min_sep, double sep)
{
	double sd = sqrt(sse / (double)(m > k ? m - k : 1));

	for (size_t j = 0; j < k; j++) {
		size_t members = first[j + 1] - first[j];

		if (members < MIN_MEMBERS || (double)members < MIN_SHARE * (double)m)
			return false;
		if (j > 0 && (c[j] - c[j - 1] < sep * sd || c[j] - c[j - 1] < min_sep))
			return false;
	}
	return true;
}

/* The best count of levels of the residuals e[0..m) (sorted in place) and their centres; 0 when
 * out of memory. */
static size_t best_levels(double *e, size_t m, double min_sep, double sep, double *centre,
			  size_t *first, double *sd)
{
	double best = INFINITY, c[DG_ZONES_MAX_SURFACES];
	size_t f[DG_ZONES_MAX_SURFACES + 1], kbest = 1;

	qsort(e, m, sizeof(*e), dg_cmp_double);
	for (size_t k = 1; k <= DG_ZONES_MAX_SURFACES && k * MIN_MEMBERS <= m; k++) {
		double sse = kmeans_sorted(e, m, k, c, f);
		double bic = (double)m * log(fmax(sse, 1e-300) / (double)m) +
			     BIC_FACTOR * (double)k * log((double)m);

		if (isnan(sse))
			return 0;
		if (k > 1 && !levels_stand_apart(c, f, k, m, sse, min_sep, sep))
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

/* The level nearest to each residual r[0..m) (centres c[0..k)) into level[]; returns the robust
 * spread of the residuals around their levels (1.4826 x their median absolute distance). */
static double assign_levels(const double *r, size_t m, const double *c, size_t k,
			    unsigned char *level, double *tmp)
{
	for (size_t i = 0; i < m; i++) {
		double best = INFINITY;

		level[i] = 0;
		for (size_t j = 0; j < k; j++) {
			if (fabs(r[i] - c[j]) < best) {
				best = fabs(r[i] - c[j]);
				level[i] = (unsigned char)j;
			}
		}
		tmp[i] = best;
	}
	return 1.4826 * dg_median(tmp, m);
}

/* The levels of the residuals r[0..m) (copied, r is kept) at least min_sep and sep x their
 * spread apart, each sample's, and their spread; 0 when out of memory. */
static size_t levels_of(const double *r, size_t m, double min_sep, double sep, double *centre,
			unsigned char *level, double *spread, double *tmp)
{
	size_t first[DG_ZONES_MAX_SURFACES + 1], k;
	double sd;

	memcpy(tmp, r, m * sizeof(*tmp));
	k = best_levels(tmp, m, min_sep, sep, centre, first, &sd);
	if (!k)
		return 0;
	*spread = assign_levels(r, m, centre, k, level, tmp);
	return k;
}

/*
 * The zone rate under each sample, fitted jointly with the levels (ln offsets off[0..k)): the
 * piecewise-constant path z[0..m) that minimises sum_i min_j (y_i - off_j - z_i)^2 (each term
 * capped at JOINT_CAP sigma^2: an outlier or a straddler costs no more) plus beta per change of
 * z, beta the change-point penalty of src/zones.c; each level's term carries its prior,
 * -2 sigma^2 ln(its share of the samples), so that a zone whose samples all read one surface is
 * put on the common one, not on a rare one a whole step away (the MAP of a mixture). Solved exactly
 * on a grid of z by dynamic programming (the Potts functional, Winkler & Liebscher 2002; Viterbi
 * 1967): a sample's surface is the one its zone's rate explains, not the one nearest a local trend,
 * so levels as far apart as zone steps are told apart. `tmp` holds 2 * JOINT_GRID_MAX. 0 or
 * -ENOMEM.
 */
static int joint_path(const double *y, size_t m, const double *off, const double *prior, size_t k,
		      double sigma, double *z, double *tmp)
{
	double lo = INFINITY, hi = -INFINITY, step = fmax(JOINT_GRID_STEP, sigma / 3), *cost = tmp;
	double *next = tmp + JOINT_GRID_MAX, beta = 3 * sigma * sigma * log((double)m);
	double cap = JOINT_CAP * sigma * sigma;
	size_t g, gn, *from = malloc(m * sizeof(*from));
	unsigned char *jump;

	for (size_t i = 0; i < m; i++) {
		lo = fmin(lo, y[i] - off[k - 1]);
		hi = fmax(hi, y[i] - off[0]);
	}
	gn = (size_t)((hi - lo) / step) + 2;
	if (gn > JOINT_GRID_MAX) {
		step = (hi - lo) / (JOINT_GRID_MAX - 2);
		gn = JOINT_GRID_MAX;
	}
	jump = calloc((m * gn + 7) / 8, 1);
	if (!from || !jump) {
		free(from);
		free(jump);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m; i++) {
		size_t best = 0;

		for (g = 1; i > 0 && g < gn; g++)
			best = cost[g] < cost[best] ? g : best;
		from[i] = best;
		for (g = 0; g < gn; g++) {
			double e = cap, zg = lo + (double)g * step, stay = i ? cost[g] : 0;

			for (size_t j = 0; j < k; j++)
				e = fmin(e, (y[i] - off[j] - zg) * (y[i] - off[j] - zg) +
						sigma * sigma * prior[j]);
			if (i > 0 && cost[best] + beta < stay) {
				stay = cost[best] + beta;
				jump[(i * gn + g) / 8] |= (unsigned char)(1u << ((i * gn + g) % 8));
			}
			next[g] = stay + e;
		}
		memcpy(cost, next, gn * sizeof(*cost));
	}
	g = 0;
	for (size_t h = 1; h < gn; h++)
		g = cost[h] < cost[g] ? h : g;
	for (size_t i = m; i-- > 0;) {
		z[i] = lo + (double)g * step;
		if (i > 0 && (jump[(i * gn + g) / 8] >> ((i * gn + g) % 8) & 1))
			g = from[i];
	}
	free(from);
	free(jump);
	return 0;
}

/*
 * Whether the levels are surfaces: inside a zone (a stretch of constant path z[0..m)) the samples
 * go from level to level both up and down, as the heads follow each other in a band and bands
 * repeat, and they do so in most zones. Levels that only ever go one way along the zones are a
 * staircase of zone steps that the levels mimic (a zone's samples on one level, the next zone's
 * on the next); levels that alternate in a few zones only are those zones' own, not surfaces.
 */
static bool levels_interleave(const double *z, const unsigned char *level, const double *off,
			      size_t m)
{
	size_t up = 0, down = 0, zones = 0, turning = 0;

	for (size_t a = 0, b; a < m; a = b) {
		size_t turns = 0;

		for (b = a + 1; b < m && z[b] == z[a]; b++) {
			if (level[b] == level[b - 1])
				continue;
			turns++;
			if (off[level[b]] > off[level[b - 1]])
				up++;
			else
				down++;
		}
		zones += b - a >= MIN_ZONE_SAMPLES;
		turning += b - a >= MIN_ZONE_SAMPLES && turns > 0;
	}
	return up >= MIN_TURNS && down >= MIN_TURNS &&
	       (double)(up < down ? up : down) >= MIN_TURN_SHARE * (double)(up + down) &&
	       (double)turning >= MIN_TURNING_ZONES * (double)zones;
}

/* Levels from the first trend (a running mean), then JOINT_ROUNDS of the joint fit: the zone
 * path under the levels, the levels of the residuals from it (their count chosen again), the
 * spread. *k levels in off[], each sample's in level[]; -ENOMEM. */
static int fit_levels(const double *y, size_t m, double min_sep, double *off, size_t *k,
		      unsigned char *level, double *spread, double *tmp)
{
	double *t = tmp, *r = tmp + m, *scratch = tmp + 2 * m;

	running_mean(y, m, t);
	for (size_t i = 0; i < m; i++)
		r[i] = y[i] - t[i];
	*k = levels_of(r, m, min_sep, LEVEL_SEP, off, level, spread, scratch);
	if (!*k)
		return -ENOMEM;
	/* the trend's own error (a window of a mixture, a step inside it) is in that spread */
	*spread /= 2;
	for (int round = 0; round < JOINT_ROUNDS && (*k > 1); round++) {
		double prior[DG_ZONES_MAX_SURFACES] = {0};
		int rc;

		for (size_t i = 0; i < m; i++)
			prior[level[i]] += 1.0;
		for (size_t j = 0; j < *k; j++)
			prior[j] = -2.0 * log(fmax(prior[j], 1.0) / (double)m);
		rc = joint_path(y, m, off, prior, *k, fmax(*spread, JOINT_MIN_SIGMA), t, scratch);

		if (rc)
			return rc;
		for (size_t i = 0; i < m; i++)
			r[i] = y[i] - t[i];
		*k = levels_of(r, m, min_sep, LEVEL_SEP, off, level, spread, scratch);
		if (!*k)
			return -ENOMEM;
	}
	if (*k > 1 && !levels_interleave(t, level, off, m))
		*k = 1;
	return 0;
}

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

/* Where the joint fit finds no levels (bands longer than zones: a run of samples on one surface
 * is as long as a zone, and the path follows it), the levels of the samples' distances from a
 * local trend (a running median), in two rounds (the second trend on the curve corrected by the
 * first round's levels), kept only when they stand far apart (TREND_MIN_SEP, TREND_SEP x their
 * spread) and the samples lie close to them. `tmp` holds 4m + 2 TREND_HALF + 1. */
static size_t local_trend_levels(const double *y, size_t m, double *off, unsigned char *level,
				 double *spread, double *tmp)
{
	double *t = tmp, *r = tmp + m, *win = tmp + 2 * m, *scratch = tmp + 3 * m;
	size_t k;

	scratch += 2 * TREND_HALF + 1;
	running_median(y, m, t, win);
	for (size_t i = 0; i < m; i++)
		r[i] = y[i] - t[i];
	k = levels_of(r, m, TREND_MIN_SEP, TREND_SEP, off, level, spread, scratch);
	if (k < 2)
		return k; /* 0: out of memory */
	for (size_t i = 0; i < m; i++)
		r[i] = y[i] - off[level[i]];
	running_median(r, m, t, win);
	for (size_t i = 0; i < m; i++)
		r[i] = y[i] - t[i];
	k = levels_of(r, m, TREND_MIN_SEP, TREND_SEP, off, level, spread, scratch);
	return *spread <= TREND_MAX_SPREAD || !k ? k : 1;
}

int dg_zones_surfaces(const double *mb_per_s, const bool *excluded, size_t n, double min_sep,
		      double *offset, size_t *nlevels, unsigned char *level_of, double *spread)
{
	bool from_trend;

	return dg_zones_surfaces_how(mb_per_s, excluded, n, min_sep, offset, nlevels, level_of,
				     spread, &from_trend);
}

int dg_zones_surfaces_how(const double *mb_per_s, const bool *excluded, size_t n, double min_sep,
			  double *offset, size_t *nlevels, unsigned char *level_of, double *spread,
			  bool *from_trend)
{
	size_t *idx = malloc((n ? n : 1) * sizeof(*idx)), m = 0, k = 1;
	double *y = malloc((n ? n : 1) * sizeof(*y));
	double *tmp = malloc((4 * n + 2 * JOINT_GRID_MAX + 2 * TREND_HALF + 1) * sizeof(*tmp));
	unsigned char *lv = malloc(n ? n : 1);
	double mean = 0;
	int rc = -ENOMEM;

	*nlevels = 1;
	*spread = 0;
	*from_trend = false;
	offset[0] = 0;
	memset(level_of, 0, n);
	if (!idx || !y || !tmp || !lv)
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
	rc = fit_levels(y, m, min_sep, offset, &k, lv, spread, tmp);
	*from_trend = !rc && k < 2;
	if (*from_trend && !(k = local_trend_levels(y, m, offset, lv, spread, tmp)))
		rc = -ENOMEM;
	if (rc || k < 2)
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
	free(tmp);
	free(lv);
	return rc;
}
