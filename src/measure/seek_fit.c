/* SPDX-License-Identifier: MIT */
/*
 * The seek curve's pure helpers: the Ruemmler-Wilkes fit (Ruemmler & Wilkes 1994), the curve
 * between measured points, and the average seek over uniformly random pairs of places.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seek_priv.h"

/* g_B(u): the shape of Ruemmler-Wilkes with value and slope continuous at B. */
static double rw_shape(double u, double B)
{
	return u < B ? sqrt(u) : sqrt(B) / 2 + u / (2 * sqrt(B));
}

int dg_seek_fit_rw(const struct dg_seek_point *pts, size_t n, uint64_t capacity_bytes,
		   uint64_t min_distance_bytes, struct dg_seek_fit *fit)
{
	double best = INFINITY;
	size_t used = 0;

	memset(fit, 0, sizeof(*fit));
	for (size_t i = 0; i < n; i++)
		if (pts[i].distance_bytes >= min_distance_bytes && isfinite(pts[i].seek_ms))
			used++;
	if (used < 3 || capacity_bytes == 0)
		return -EINVAL;
	/* the boundary on a log grid from 1e-5 of the capacity to all of it (pure sqrt) */
	for (int k = 0; k <= 100; k++) {
		double B = pow(10.0, -5.0 + 5.0 * k / 100);
		double sx = 0, sy = 0, sxx = 0, sxy = 0, m = 0;
		for (size_t i = 0; i < n; i++) {
			if (pts[i].distance_bytes < min_distance_bytes || !isfinite(pts[i].seek_ms))
				continue;
			double g = rw_shape((double)pts[i].distance_bytes / capacity_bytes, B);
			sx += g;
			sy += pts[i].seek_ms;
			sxx += g * g;
			sxy += g * pts[i].seek_ms;
			m++;
		}
		double det = m * sxx - sx * sx;
		if (fabs(det) < 1e-300)
			continue;
		double b = (m * sxy - sx * sy) / det, a = (sy - b * sx) / m;
		double sse = 0;
		for (size_t i = 0; i < n; i++) {
			if (pts[i].distance_bytes < min_distance_bytes || !isfinite(pts[i].seek_ms))
				continue;
			double g = rw_shape((double)pts[i].distance_bytes / capacity_bytes, B);
			double r = pts[i].seek_ms - (a + b * g);
			sse += r * r;
		}
		if (sse < best) {
			best = sse;
			fit->a_ms = a;
			fit->b_ms = b;
			fit->boundary_fraction = B;
		}
	}
	if (!isfinite(best))
		return -EINVAL;
	fit->c_ms = fit->a_ms + fit->b_ms * sqrt(fit->boundary_fraction) / 2;
	fit->e_ms = fit->b_ms / (2 * sqrt(fit->boundary_fraction));
	fit->rms_ms = sqrt(best / (double)used);
	fit->min_distance_bytes = min_distance_bytes;
	fit->valid = true;
	return 0;
}

double dg_seek_fit_at(const struct dg_seek_fit *fit, uint64_t capacity_bytes,
		      uint64_t distance_bytes)
{
	if (!fit->valid || capacity_bytes == 0)
		return NAN;
	double u = (double)distance_bytes / capacity_bytes;
	return fit->a_ms + fit->b_ms * rw_shape(u, fit->boundary_fraction);
}

double dg_seek_curve_at(const struct dg_seek_point *pts, size_t n, uint64_t distance_bytes)
{
	double x0 = 0, y0 = 0, x = (double)distance_bytes;

	for (size_t i = 0; i < n; i++) {
		if (!isfinite(pts[i].seek_ms))
			continue;
		double x1 = (double)pts[i].distance_bytes, y1 = pts[i].seek_ms;
		if (x <= x1)
			return x1 > x0 ? y0 + (y1 - y0) * (x - x0) / (x1 - x0) : y1;
		x0 = x1;
		y0 = y1;
	}
	return y0;
}

/* The integral of the linear piece through (u0, y0), (u1, y1) times 2 (1 - u): Simpson's rule,
 * exact for the quadratic integrand. */
static double piece(double u0, double y0, double u1, double y1)
{
	double um = (u0 + u1) / 2, ym = (y0 + y1) / 2;

	return (u1 - u0) / 6 * (y0 * 2 * (1 - u0) + 4 * ym * 2 * (1 - um) + y1 * 2 * (1 - u1));
}

double dg_seek_average_ms(const struct dg_seek_point *pts, size_t n, uint64_t capacity_bytes,
			  double full_ms)
{
	double u0 = 0, y0 = 0, sum = 0, C = (double)capacity_bytes;
	bool any = false;

	if (capacity_bytes == 0)
		return NAN;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(pts[i].seek_ms) || pts[i].distance_bytes >= capacity_bytes)
			continue;
		double u1 = pts[i].distance_bytes / C, y1 = pts[i].seek_ms;
		if (u1 <= u0)
			continue;
		sum += piece(u0, y0, u1, y1);
		u0 = u1;
		y0 = y1;
		any = true;
	}
	if (!any)
		return NAN;
	/* beyond the last point: up to the full stroke, or flat */
	sum += piece(u0, y0, 1.0, isfinite(full_ms) ? full_ms : y0);
	return sum;
}
