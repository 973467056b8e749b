/* SPDX-License-Identifier: MIT */
/*
 * The cylinder time of a per-surface drive of cylinder layout, for refining samples one cylinder
 * long. There each surface has its own track size and a sample that reads part of a cylinder
 * reads its surfaces' mix: refining samples shorter than the curve's scatter by it (zoo 54: 1.81%
 * between samples of 4 MiB inside one zone, 0.065% at 16 MiB), and the curve's size leaves too
 * little time to bisect every must-find step. A sample of whole cylinders reads every surface's
 * track once, whatever its start: the zone's own rate. A cylinder takes the same time in every
 * zone (heads revolutions and its switches, drive-spec.md), so its length is that time x the
 * zone's rate, and one probe measures it for the whole drive: a stream of small reads inside one
 * zone, whose bytes over time repeat with the cylinder's period; the period is the lag at which
 * the stream read the same bytes in the same time everywhere (the average magnitude difference
 * function, Ross et al. 1974). A drive whose stream repeats with a track's time (one surface per
 * band, or one format for all surfaces) has nothing to gain and is left alone.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "bandwidth_zones_priv.h"
#include "util.h"

#define CYL_READ_BYTES (64u << 10) /* ... in reads of this size */
#define CYL_LAG_MIN_S  0.003	   /* lags tried: from less than a track at 15000 rpm ... */
#define CYL_LAG_MAX_S  0.22	   /* ... to a cylinder of 18 heads at 5400 rpm */
#define CYL_LAG_STEP_S 0.00005	   /* ... on this grid, then refined to CYL_FINE_S */
#define CYL_FINE_S     0.000002
#define CYL_MIN_S      0.02 /* a period shorter than this is a track's: left alone */
#define CYL_CLEAR      0.15 /* the period's AMDF is at most this x the median lag's */
#define CYL_NEAR       2.0  /* the first lag within this x the best is the fundamental */
#define CYL_MIN_POINTS 64u  /* the lags compared over at least this many reads */
#define CYL_EARLY      6u   /* a track's period is looked for in this part of the stream */

/* The average magnitude difference of the bytes read over `lag` s from their mean along the
 * stream (bytes; not relative to the mean, which would favour a period's multiples): t[0..n)
 * completion times (s, non-decreasing), b[0..n) bytes read by then; d scratch for n differences.
 * INFINITY when too few reads reach that far. */
static double amdf(const double *t, const double *b, size_t n, double lag, double *d)
{
	double mean = 0, dev = 0;
	size_t j = 0, m = 0;

	for (size_t k = 0; k < n; k++) {
		double at = t[k] + lag;

		while (j + 1 < n && t[j + 1] <= at)
			j++;
		if (j + 1 >= n)
			break;
		d[m] = b[j] + (b[j + 1] - b[j]) * (at - t[j]) / (t[j + 1] - t[j]) - b[k];
		mean += d[m++];
	}
	if (m < CYL_MIN_POINTS || !(mean > 0))
		return INFINITY;
	mean /= (double)m;
	for (size_t i = 0; i < m; i++)
		dev += fabs(d[i] - mean);
	return dev / (double)m;
}

/* The lag of the local minimum of the AMDF from `lag` on, walking by `step` s while it falls. */
static double descend(const double *t, const double *b, size_t n, double *d, double lag,
		      double step, double *val)
{
	double v = amdf(t, b, n, lag, d);

	for (;;) {
		double up = amdf(t, b, n, lag + step, d), down = amdf(t, b, n, lag - step, d);

		if (up < v && up <= down) {
			lag += step;
			v = up;
		} else if (down < v) {
			lag -= step;
			v = down;
		} else {
			break;
		}
	}
	*val = v;
	return lag;
}

/* The stream's period from its completion times t and cumulative bytes b (n reads): 0 when it
 * shows none, or only a track's. */
static double period_of(const double *t, const double *b, size_t n, double *d)
{
	size_t nl = (size_t)((CYL_LAG_MAX_S - CYL_LAG_MIN_S) / CYL_LAG_STEP_S) + 1,
	       first = SIZE_MAX;
	double *v = malloc(nl * sizeof(*v)), *s = malloc(nl * sizeof(*s)), best = INFINITY, med;
	double lag, val;

	if (!v || !s) {
		free(v);
		free(s);
		return 0;
	}
	for (size_t i = 0; i < nl; i++) {
		v[i] = s[i] = amdf(t, b, n, CYL_LAG_MIN_S + (double)i * CYL_LAG_STEP_S, d);
		best = fmin(best, v[i]);
	}
	med = dg_median(s, nl);
	for (size_t i = 0; i < nl && first == SIZE_MAX; i++)
		if (v[i] <= CYL_NEAR * best)
			first = i;
	free(v);
	free(s);
	if (!(best < CYL_CLEAR * med) || first == SIZE_MAX)
		return 0;
	lag = descend(t, b, n, d, CYL_LAG_MIN_S + (double)first * CYL_LAG_STEP_S, CYL_LAG_STEP_S,
		      &val);
	lag = descend(t, b, n, d, lag, CYL_FINE_S, &val);
	return lag >= CYL_MIN_S ? lag : 0;
}

/* Whether the stream (as period_of) repeats with a lag shorter than CYL_MIN_S: a dip of its
 * AMDF to CYL_CLEAR x the highest at the lags before it (at lags near 0 the AMDF is small on
 * every drive). One surface read track after track (a serpentine band, or one format for all
 * surfaces) repeats with a track's time, and the rest of the probe is not read. */
static bool track_period(const double *t, const double *b, size_t n, double *d)
{
	double top = 0;

	for (double lag = CYL_LAG_MIN_S; lag < CYL_MIN_S; lag += CYL_LAG_STEP_S) {
		double v = amdf(t, b, n, lag, d);

		if (!isfinite(v))
			return false;
		if (v <= CYL_CLEAR * top)
			return true;
		top = fmax(top, v);
	}
	return false;
}

/* Completion times from the first read's on (non-decreasing) and bytes read by then, for the
 * first n reads of the stream. */
static void stream_points(double *t, double *b, size_t n)
{
	b[0] = 0;
	for (size_t k = 1; k < n; k++) {
		t[k] = fmax(t[k], t[k - 1]);
		b[k] = (double)(k * CYL_READ_BYTES);
	}
}

int bw_cylinder_time(struct ctx *c, uint64_t off, uint64_t len, double *tau_s)
{
	size_t n = (size_t)(len / CYL_READ_BYTES), next = 0, done = 0, early = n / CYL_EARLY;
	size_t lead = 0; /* the reads completed before any still in flight */
	double *t = malloc(n * sizeof(*t)), *b = malloc(n * sizeof(*b)),
	       *d = malloc(n * sizeof(*d));
	struct dg_completion comps[8];
	unsigned inflight = 0, qd = c->qd < 8 ? c->qd : 8;
	bool failed = false;
	int rc = 0;

	*tau_s = 0;
	if (!t || !b || !d) {
		free(t);
		free(b);
		free(d);
		return -ENOMEM;
	}
	for (size_t k = 0; k < n; k++)
		t[k] = NAN;
	while (!failed && !bw_stopped(c) && (next < n || inflight > 0)) {
		int k;

		while (next < n && inflight < qd) {
			struct dg_io io = {.offset_bytes = off + (uint64_t)next * CYL_READ_BYTES,
					   .length_bytes = CYL_READ_BYTES,
					   .op = DG_IO_READ,
					   .tag = next};

			k = dg_engine_submit(c->e, &io, 1);
			if (k < 0)
				rc = k;
			if (k <= 0)
				break;
			next++;
			inflight++;
		}
		if (rc || inflight == 0)
			break;
		k = dg_engine_reap(c->e, comps, 1, qd);
		if (k == -EINTR)
			continue;
		if (k < 0) {
			/* a device that did not answer a stop: the probe ends, the run goes on */
			rc = k == -ECANCELED ? 0 : k;
			break;
		}
		for (int i = 0; i < k; i++) {
			const struct dg_completion *q = &comps[i];

			inflight--;
			t[q->tag] = (double)q->complete_ns / 1e9;
			done++;
			if (q->result == (int64_t)q->length_bytes)
				continue;
			failed = true;
			if (dg_errors_add(c->errors, q->offset_bytes, q->length_bytes,
					  q->result < 0 ? (int)-q->result : EIO) < 0)
				c->nomem = true;
		}
		while (lead < n && !isnan(t[lead]))
			lead++;
		/* looked at once, while the stream goes on (its reads stay queued) */
		if (early > CYL_MIN_POINTS && lead >= early && lead - k < early) {
			stream_points(t, b, early);
			if (track_period(t + 1, b + 1, early - 1, d))
				n = next; /* no more reads: the drive has no cylinder period */
		}
	}
	while (dg_engine_inflight(c->e) > 0) {
		int k = dg_engine_reap(c->e, comps, 1, qd);

		if (k < 0 && k != -EINTR)
			break;
	}
	bw_remember(c, off, (uint64_t)next * CYL_READ_BYTES, NAN);
	if (!failed && !rc && done == n && n == len / CYL_READ_BYTES && n > CYL_MIN_POINTS) {
		/* from the first read's completion: the clock starts where the stream does */
		stream_points(t, b, n);
		*tau_s = period_of(t + 1, b + 1, n - 1, d);
	}
	free(t);
	free(b);
	free(d);
	return rc;
}
