/* SPDX-License-Identifier: MIT */
/*
 * The statistics of rotation.c's samples: the groups that intervals form (a Q on another track
 * completes a skew away from the ones on P's track), and whether a stage's intervals follow
 * its submission delays (a flat device) rather than whole turns. Split out of rotation.c;
 * angular position by completion time: Wong 2019.
 */
#include <math.h>
#include <stdlib.h>

#include "rotation_priv.h"
#include "util.h"

/*
 * The median of the highest group of v[] (sorted in place) that holds at least a quarter of
 * the samples (two at least), groups split where neighbours are more than MODE_GAP_MS apart:
 * a Q that fell on the previous track completes a skew (a head switch or more) earlier than
 * one on P's track, so P's track is the highest group; a lone high value is a jitter or a stall.
 * Returns the group's size (0: none); *lo and *hi (may be NULL) get its ends.
 */
unsigned rot_upper_mode(double *v, size_t n, double *med, double *lo, double *hi_v)
{
	size_t need = n / 4 > 2 ? n / 4 : 2, hi = n;

	dg_median(v, n); /* sorts */
	for (size_t i = n; i-- > 0;) {
		if (i > 0 && v[i] - v[i - 1] <= MODE_GAP_MS)
			continue;
		if (hi - i >= need) { /* the group v[i..hi) */
			if (lo && hi_v) {
				*lo = v[i];
				*hi_v = v[hi - 1];
			}
			*med = dg_median(v + i, hi - i);
			return (unsigned)(hi - i);
		}
		hi = i;
	}
	return 0;
}

/* The medians of the groups of v[] (sorted in place) that hold at least a quarter of the samples
 * (two at least), highest first, at most MAX_CAND (see rot_upper_mode()), and their sizes. Returns
 * their number. */
unsigned rot_modes(double *v, size_t n, double *med, unsigned *size)
{
	size_t need = n / 4 > 2 ? n / 4 : 2, hi = n;
	unsigned m = 0;

	dg_median(v, n); /* sorts */
	for (size_t i = n; i-- > 0 && m < MAX_CAND;) {
		if (i > 0 && v[i] - v[i - 1] <= MODE_GAP_MS)
			continue;
		if (hi - i >= need) {
			size[m] = (unsigned)(hi - i);
			med[m++] = dg_median(v + i, hi - i);
		}
		hi = i;
	}
	return m;
}

/* The slope of y over x by least squares (0 when x does not vary). */
double rot_slope(const double *x, const double *y, size_t n)
{
	double mx = 0, my = 0, sxx = 0, sxy = 0;

	for (size_t i = 0; i < n; i++) {
		mx += x[i] / n;
		my += y[i] / n;
	}
	for (size_t i = 0; i < n; i++) {
		sxx += (x[i] - mx) * (x[i] - mx);
		sxy += (x[i] - mx) * (y[i] - my);
	}
	return sxx > 0 ? sxy / sxx : 0;
}

/* The median absolute deviation of v[0..n) (reorders v). */
static double rot_mad(double *v, size_t n)
{
	double med = dg_median(v, n);

	for (size_t i = 0; i < n; i++)
		v[i] = fabs(v[i] - med);
	return dg_median(v, n);
}

/* Whether the intervals follow the submission delays over every sample of the stage's turn
 * count (the delays there span a quarter turn): on a flat device Q completes a fixed time after
 * it is sent, so the interval less its delay is steadier than the interval itself; on a platter
 * the interval keeps to whole turns whatever the delay. A group's few samples with nearly
 * equal delays can show a slope from the jitter alone (zoo 34), so both must say so. */
bool rot_follows_delays(const double *iv, const double *dl, size_t m)
{
	double a[STAGE_MAX], b[STAGE_MAX];

	for (size_t i = 0; i < m; i++) {
		a[i] = iv[i];
		b[i] = iv[i] - dl[i];
	}
	return rot_mad(b, m) < 0.5 * rot_mad(a, m);
}
