/* SPDX-License-Identifier: MIT */
/*
 * The side of a boundary a refining sample lies on, from the period of the surface runs, on a
 * per-surface serpentine drive whose runs are longer than the curve's sample spacing. There a
 * sample reads one surface, and a surface of one zone may read like another of the next (zoo 16:
 * the last head of a zone at 221.7 MB/s, the third of the next at 221.7 too), so its rate cannot
 * tell the side. But inside a zone the surfaces repeat with the band: a sample of zone A reads
 * what the curve read one band earlier, one of zone B what it reads one band of B later. The
 * band's length in A is the lag at which the curve's samples before the boundary read most like
 * the samples that lag before them (the average magnitude difference function, Ross et al.
 * 1974); B's band takes the same time (band cylinders x heads revolutions), so its length is A's
 * scaled by the zones' rates.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "bandwidth_zones_priv.h"
#include "util.h"

#define BAND_MIN_PAIRS 6u  /* lags compared over at least this many pairs of samples */
#define BAND_GRID      4.0 /* lags tried: this many per sample spacing */
#define BAND_CLEAR     0.5 /* the band's AMDF is at most this x the median lag's */
#define BAND_MIN_LAG   3.0 /* the band is at least this many sample spacings */
#define BAND_MATCH     2.0 /* a sample matches its band neighbour within this x its step */
#define BAND_NEAR_BEST 0.1 /* a smaller lag within this part of (median - best) is the band */

/* The usable curve samples (not refining ones) in [lo, hi), by offset: their centres and ln
 * rates into x and y; how many. */
static size_t curve_in(const struct dg_bandwidth_result *r, uint64_t lo, uint64_t hi, double *x,
		       double *y)
{
	size_t n = 0;

	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &r->samples[i];
		uint64_t mid = s->offset_bytes + s->length_bytes / 2;

		if (s->refine || s->excluded || !(s->mb_per_s > 0) || mid < lo || mid >= hi)
			continue;
		x[n] = (double)mid;
		y[n++] = log(s->mb_per_s);
	}
	return n;
}

/* The index of the sample (x sorted) nearest to at, or SIZE_MAX when none lies within tol. */
static size_t nearest(const double *x, size_t n, double at, double tol)
{
	size_t a = 0, b = n;

	while (a < b) {
		size_t m = (a + b) / 2;

		if (x[m] < at)
			a = m + 1;
		else
			b = m;
	}
	if (a < n && (a == 0 || x[a] - at < at - x[a - 1]))
		return fabs(x[a] - at) <= tol ? a : SIZE_MAX;
	return a > 0 && fabs(x[a - 1] - at) <= tol ? a - 1 : SIZE_MAX;
}

/* Mean |y_i - y_j| over the samples i and their nearest j at x_i - lag (within tol); NAN when
 * fewer than BAND_MIN_PAIRS pairs. */
static double amdf(const double *x, const double *y, size_t n, double lag, double tol)
{
	double sum = 0;
	size_t pairs = 0;

	for (size_t i = 0; i < n; i++) {
		size_t j = nearest(x, n, x[i] - lag, tol);

		if (j == SIZE_MAX)
			continue;
		sum += fabs(y[i] - y[j]);
		pairs++;
	}
	return pairs >= BAND_MIN_PAIRS ? sum / (double)pairs : NAN;
}

static int cmp_xy(const void *a, const void *b)
{
	const double *p = a, *q = b;

	return (p[0] > q[0]) - (p[0] < q[0]);
}

/* Sorts the samples by offset (x, y interleaved in xy, split into x and y). */
static void sort_samples(double *xy, double *x, double *y, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		xy[2 * i] = x[i];
		xy[2 * i + 1] = y[i];
	}
	qsort(xy, n, 2 * sizeof(*xy), cmp_xy);
	for (size_t i = 0; i < n; i++) {
		x[i] = xy[2 * i];
		y[i] = xy[2 * i + 1];
	}
}

/* The band length of the samples x, y (sorted, n of them) with `gap` their median spacing: the
 * smallest lag whose AMDF is clearly below the median over the lags tried; 0 when none is. */
static double band_of(const double *x, const double *y, size_t n, double gap, double *d)
{
	double step = gap / BAND_GRID, span = x[n - 1] - x[0], best = INFINITY, med;
	size_t nl = 0, arg = 0;

	for (double lag = BAND_MIN_LAG * gap; lag <= span / 2 && nl < 4 * n; lag += step) {
		d[nl] = amdf(x, y, n, lag, gap / 2);
		if (isnan(d[nl]))
			break;
		if (d[nl] < best) {
			best = d[nl];
			arg = nl;
		}
		nl++;
	}
	if (nl < 2 * BAND_GRID)
		return 0;
	for (size_t k = 0; k < nl; k++)
		d[nl + k] = d[k];
	med = dg_median(d + nl, nl);
	if (!(best <= BAND_CLEAR * med))
		return 0;
	/* the smallest lag about as good: a multiple of the band is as good as the band */
	for (size_t k = 0; k < arg; k++)
		if (d[k] <= best + (med - best) * BAND_NEAR_BEST)
			return BAND_MIN_LAG * gap + (double)k * step;
	return BAND_MIN_LAG * gap + (double)arg * step;
}

/* The side (1: A, 0: B) whose band neighbour of the sample centred on `mid` (the curve's sample
 * nearest a band away, within a sample spacing `tol`: closer, the irregular spacing leaves none
 * there too often) reads nearer its rate y, within BAND_MATCH x b's step; -1 when neither does. */
static int side_of(const struct boundary *b, double mid, double y, const double *xa,
		   const double *ya, size_t na, const double *xb, const double *yb, size_t nb,
		   double tol)
{
	size_t ia = nearest(xa, na, mid - b->band, tol);
	size_t ib = nearest(xb, nb, mid + b->band * b->rb / b->ra, tol);
	double da, db;

	if (ia == SIZE_MAX || ib == SIZE_MAX)
		return -1;
	da = fabs(y - ya[ia]);
	db = fabs(y - yb[ib]);
	if (da < db && da <= BAND_MATCH * b->step)
		return 1;
	if (db < da && db <= BAND_MATCH * b->step)
		return 0;
	return -1;
}

int bw_band_side(const struct dg_bandwidth_result *r, struct boundary *b, uint64_t off,
		 uint64_t len, double mb_per_s, int *side)
{
	uint64_t alo = b->lo > b->a_len ? b->lo - b->a_len : 0, bhi = b->hi + b->b_len;
	size_t cap = r->nsamples ? r->nsamples : 1, na, nb;
	double *xa = malloc(cap * sizeof(*xa)), *ya = malloc(cap * sizeof(*ya));
	double *xb = malloc(cap * sizeof(*xb)), *yb = malloc(cap * sizeof(*yb));
	double *d = malloc(8 * cap * sizeof(*d)), gap;
	int rc = -ENOMEM;

	*side = -1;
	if (!xa || !ya || !xb || !yb || !d)
		goto out;
	rc = 0;
	na = curve_in(r, alo, b->lo, xa, ya);
	nb = curve_in(r, b->hi, bhi, xb, yb);
	if (na < 4 * BAND_MIN_PAIRS || nb == 0)
		goto out;
	sort_samples(d, xa, ya, na);
	sort_samples(d, xb, yb, nb);
	for (size_t i = 1; i < na; i++)
		d[i - 1] = xa[i] - xa[i - 1];
	gap = dg_median(d, na - 1);
	if (b->band == 0) {
		b->band = band_of(xa, ya, na, gap, d);
		b->band = b->band > 0 ? b->band : -1;
	}
	if (b->band > 0)
		*side = side_of(b, (double)off + (double)len / 2, log(mb_per_s), xa, ya, na, xb, yb,
				nb, gap);
out:
	free(xa);
	free(ya);
	free(xb);
	free(yb);
	free(d);
	return rc;
}
