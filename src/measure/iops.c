/* SPDX-License-Identifier: MIT */
/*
 * Random-read service time and IOPS over a span (stroke width, short-stroking).
 *
 * A random QD1 read costs overhead + move + a rotational wait uniform in [0, T) + transfer
 * (Ruemmler & Wilkes 1994), so its mean is E[K] + T/2 with K = overhead + move + transfer over
 * uniformly random pairs of places in the span. E[K] is measured on pairs drawn on a jittered
 * m x m grid over span x span (stratified sampling: the pair-to-pair spread of the move, which
 * dominates plain random reads together with the T^2/12 of the wait, averages out far faster),
 * each pair's K by the phase bisection of seek_legs.c. With a seek curve measured, it serves as
 * a control variate (the pairs' K minus the curve at their distance, plus the curve's exact mean
 * over the span's distance density 2 (L - D) / L^2): what is left to sample is only how the
 * span differs from the device-wide curve. The wait's T/2 is exact for independent
 * random reads; T is measured. On a device that does not rotate K is the mean access itself.
 * A span can take further grids (seek_span_more, seek.c decides from seek_span_rel_se); the mean
 * is then over every pair, each grid an unbiased stratified estimate of its own.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "seek_priv.h"

/* how far a pair moves when one of its reads failed: past a defect range and the read-ahead */
#define MOVE_BYTES (8ull << 20)

struct cell {
	uint64_t first, second;
	unsigned at; /* its place in the grid: row * m + column */
};

static int cmp_cell(const void *a, const void *b)
{
	const struct cell *x = a, *y = b;

	return (x->first > y->first) - (x->first < y->first);
}

/* The mean of the curve over the distance of uniformly random pairs in a span of L bytes. */
static double curve_span_mean(const struct dg_seek_result *r, uint64_t L)
{
	const int steps = 4096;
	double sum = 0;

	for (int i = 0; i < steps; i++) {
		double u = (i + 0.5) / steps;
		sum += dg_seek_curve_at(r->points, r->npoints, (uint64_t)(u * (double)L)) * 2 *
		       (1 - u);
	}
	return sum / steps;
}

static uint64_t align_down(uint64_t v, uint64_t a)
{
	return v - v % a;
}

/* The pairs of places on a jittered m x m grid over [lo, hi) x [lo, hi), sorted by their first
 * place (going from one to the next is a short move); *seek_sum gets the curve's seek summed
 * over their distances (0 without a curve). Returns how many. */
static size_t make_cells(struct seek_ctx *s, const struct dg_seek_result *r, uint64_t lo,
			 uint64_t hi, unsigned m, struct cell *cells, double *seek_sum)
{
	uint64_t b = s->block_bytes, walk = (uint64_t)SEEK_WALK_BLOCKS * b;
	double range = (double)(hi - lo);
	size_t n = 0;

	*seek_sum = 0;
	for (unsigned i = 0; i < m; i++) {
		for (unsigned j = 0; j < m; j++) {
			uint64_t p, q;
			unsigned tries = 0;
			p = lo + align_down((uint64_t)(((i + seek_rand01(s)) / m) * range), b);
			do {
				q = lo +
				    align_down((uint64_t)(((j + seek_rand01(s)) / m) * range), b);
			} while ((p > q ? p - q : q - p) < 2 * walk && ++tries < 16);
			if ((p > q ? p - q : q - p) < 2 * walk)
				continue; /* a tiny span's diagonal cell */
			cells[n].at = i * m + j;
			cells[n].first = p > q ? p : q;
			cells[n].second = p > q ? q : p;
			*seek_sum += r->npoints ? dg_seek_curve_at(r->points, r->npoints,
								   cells[n].first - cells[n].second)
						: 0.0;
			n++;
		}
	}
	qsort(cells, n, sizeof(*cells), cmp_cell);
	return n;
}

/* The relative standard error of the span's mean from its grids' collapsed strata (Cochran,
 * Sampling Techniques, 1977, 5A.12): each grid's cells are taken in neighbouring pairs, whose
 * residuals' (K minus the curve at the pair's distance) squared difference over 2 estimates the
 * spread within a stratum; its mean over the pairs, over the count of pairs measured, is the
 * variance of the mean. Neighbouring strata differ a little, so it errs on the safe side. */
double seek_span_rel_se(const struct seek_span_acc *a, const struct dg_seek_span *out)
{
	if (a->npairs < 2 || !(out->mean_ms > 0))
		return INFINITY;
	return sqrt(a->diff_sq / (2.0 * a->npairs) / a->done) / out->mean_ms;
}

/* The collapsed strata of one m x m grid's residuals (NAN where no pair was measured) into a:
 * cells (i, 2k) with (i, 2k + 1), and down the last column of an odd m, (2k, m - 1) with
 * (2k + 1, m - 1). */
static void collapse_strata(const double *res, unsigned m, struct seek_span_acc *a)
{
	for (unsigned i = 0; i < m; i++) {
		for (unsigned j = 0; j < m; j++) {
			unsigned other;
			if (j + 1 < m || m % 2 == 0) {
				if (j % 2)
					continue;
				other = i * m + j + 1;
			} else {
				if (i % 2 || i + 1 >= m)
					continue;
				other = (i + 1) * m + j;
			}
			double x = res[i * m + j], y = res[other];
			if (isnan(x) || isnan(y))
				continue;
			a->diff_sq += (x - y) * (x - y);
			a->npairs++;
		}
	}
}

/* Measure the n pairs of cells into a; a failed read moves its pair once past the bad range.
 * 0 (also when the run is stopped: what was measured stands) or -errno. */
static int measure_cells(struct seek_ctx *s, const struct dg_seek_result *r, struct cell *cells,
			 size_t n, uint64_t lo, uint64_t hi, double width, double T,
			 struct seek_span_acc *a, double *res)
{
	bool moved = false;

	for (size_t i = 0; i < n; i++) {
		uint64_t d = cells[i].first - cells[i].second;
		struct pair_req req = {
		    .first = cells[i].first,
		    .second = cells[i].second,
		    .fwd_measured = d >= SEEK_STREAM_BYTES,
		    .k_min_ms = 0.9 * s->k0_ms,
		    .width_ms = width,
		    .max_legs = T > 0 ? 6 : 2,
		};
		struct pair_out po;
		int rc = seek_pair_measure(s, &req, &po);
		if (rc == -ECANCELED)
			return 0; /* stopped: what was measured stands */
		if (rc < 0)
			return rc;
		if (po.failed && !moved) {
			/* a failed read: the same distance at fresh places, past the bad range */
			s->moved++;
			moved = true;
			bool up = cells[i].first + MOVE_BYTES <= hi;
			if (!up && cells[i].second < lo + MOVE_BYTES)
				continue;
			cells[i].first =
			    up ? cells[i].first + MOVE_BYTES : cells[i].first - MOVE_BYTES;
			cells[i].second =
			    up ? cells[i].second + MOVE_BYTES : cells[i].second - MOVE_BYTES;
			i--;
			continue;
		}
		moved = false;
		if (!po.ok)
			continue;
		double c = r->npoints ? dg_seek_curve_at(r->points, r->npoints, d) : 0.0;
		a->sum += po.k_ms;
		a->cv_sum += c;
		res[cells[i].at] = po.k_ms - c;
		a->done++;
	}
	return 0;
}

/* A jittered m x m grid of pairs more over a's span; out gets the mean of every pair so far. */
int seek_span_more(struct seek_ctx *s, const struct dg_seek_result *r, unsigned m,
		   struct seek_span_acc *a, struct dg_seek_span *out)
{
	struct cell *cells = calloc((size_t)m * m, sizeof(*cells));
	double *res = malloc((size_t)m * m * sizeof(*res));
	double seek_sum;
	int rc;

	if (!cells || !res) {
		free(cells);
		free(res);
		return -ENOMEM;
	}
	for (size_t k = 0; k < (size_t)m * m; k++)
		res[k] = NAN;
	size_t n = make_cells(s, r, a->lo, a->hi, m, cells, &seek_sum);
	if (!(a->width_ms > 0)) {
		/* the first grid: 3 % of the expected service time is the accuracy asked for; aim
		 * at a quarter of it for the mean of its n pairs, each estimate uniform over its
		 * interval (the grids more keep that precision) */
		double mean_guess = s->k0_ms + (n ? seek_sum / n : 0) + a->T_ms / 2;
		a->width_ms = 0.03 * mean_guess / 4 * sqrt(12.0 * (double)(n ? n : 1));
	}
	rc = measure_cells(s, r, cells, n, a->lo, a->hi, a->width_ms, a->T_ms, a, res);
	collapse_strata(res, m, a);
	free(cells);
	free(res);
	if (rc == 0 && a->done) {
		out->samples = a->done;
		out->mean_ms = a->sum / a->done + a->T_ms / 2;
		if (r->npoints)
			out->mean_ms += a->cv_mean - a->cv_sum / a->done;
		out->iops = 1000.0 / out->mean_ms;
	}
	return rc;
}

int seek_span_measure(struct seek_ctx *s, const struct dg_seek_result *r, uint64_t start,
		      uint64_t span, unsigned m, struct seek_span_acc *a, struct dg_seek_span *out)
{
	uint64_t b = s->block_bytes, walk = (uint64_t)SEEK_WALK_BLOCKS * b;
	double T = s->rotating ? s->period_ns / 1e6 : 0.0;

	*a = (struct seek_span_acc){.lo = start + walk, .hi = start + span - b, .T_ms = T};
	out->start_bytes = start;
	out->span_bytes = span;
	out->block_bytes = s->block_bytes;
	out->samples = 0;
	out->mean_ms = out->iops = NAN;
	if (m < 2)
		m = 2;
	if (a->hi <= a->lo + 4 * walk)
		return -EINVAL;
	a->cv_mean = r->npoints ? curve_span_mean(r, a->hi - a->lo) : 0.0;
	return seek_span_more(s, r, m, a, out);
}
