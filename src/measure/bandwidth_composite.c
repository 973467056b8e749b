/* SPDX-License-Identifier: MIT */
/*
 * A composite refining sample for per-surface drives whose surface runs are short. On a
 * serpentine drive with per-surface formats a sample reads one surface's rate, and a surface of
 * one zone may read like another of the next: such a sample cannot tell on which side of a
 * boundary it lies (bw_level_rate). Where a band of every surface is shorter than a few samples,
 * sub-reads spread over a window much longer than a band read each surface for its share of the
 * band's time: their bytes over their time is the band's mean rate, which is the zone's rate
 * (each surface of a band takes the same time; drive-spec.md), and classes by the zones' rates
 * as measured (systematic sampling, Cochran 1977, ch. 8). The window must hold many bands: when
 * the sub-reads all read one rate (runs longer than the window) the composite tells nothing.
 */
#include <math.h>
#include <stdlib.h>

#include "bandwidth_zones_priv.h"
#include "util.h"

#define COMP_READS	  10u  /* sub-reads of a composite, each of the curve's sample size; ... */
#define COMP_CHANGES	  3u   /* ... valid when this many neighbours read apart (many runs), ... */
#define COMP_CHANGE_SIGMA 4.0  /* ... by this x the noise of one ... */
#define COMP_CHANGE_MIN	  0.01 /* ... and at least this (ln) */
/* Composites are no longer tried once this many more read one run than many: the drive's runs
 * are longer than their window (each costs COMP_READS samples). */
#define COMP_GIVE_UP 2u
#define COMP_EARLY   4u /* sub-reads after which a composite of one run so far stops */
/* The golden ratio's fraction: sub-read i sits at frac(i x this) of the window, so that no band
 * length aliases with a fixed spacing (a low-discrepancy sequence, Weyl 1916). */
#define COMP_WEYL 0.6180339887498949

/* The composite of COMP_READS sub-reads spread over `window` bytes centred on mid into *out
 * (valid when they read many runs); none once b's or the drive's runs proved longer than a
 * window. 0 or the engine's -errno. */
static int composite(struct ctx *c, struct boundary *b, uint64_t mid, uint64_t window,
		     struct composite *out)
{
	uint64_t span = c->p.sample_bytes, first = c->p.range_start_bytes;
	uint64_t end = c->p.range_end_bytes, lo;
	double bytes = 0, secs = 0, prev = NAN, pos[COMP_READS];
	double tol = fmax(COMP_CHANGE_MIN, COMP_CHANGE_SIGMA * b->sigma);
	unsigned n = 0, changes = 0;

	out->valid = false;
	if (b->long_runs || c->comp_invalid >= c->comp_valid + COMP_GIVE_UP ||
	    window < 2 * COMP_READS * span || end - first < window)
		return 0;
	lo = mid > first + window / 2 ? mid - window / 2 : first;
	lo = lo + window > end ? end - window : lo;
	for (unsigned i = 0; i < COMP_READS; i++)
		pos[i] = fmod((double)i * COMP_WEYL, 1.0);
	qsort(pos, COMP_READS, sizeof(*pos), dg_cmp_double);
	for (unsigned i = 0; i < COMP_READS && !bw_stopped(c); i++) {
		uint64_t at = lo + (uint64_t)(pos[i] * (double)(window - span));
		struct meas m;
		int rc;

		at -= at % c->align;
		rc = bw_measure(c, at, span, &m);
		if (rc)
			return rc;
		if (!m.ok || !(m.mb_per_s > 0))
			continue;
		bytes += (double)m.len;
		secs += (double)m.len / m.mb_per_s;
		changes += fabs(log(m.mb_per_s) - prev) > tol;
		prev = log(m.mb_per_s);
		if (++n == COMP_EARLY && changes == 0)
			break;
	}
	bw_report(c, 1);
	if (n < COMP_READS && !(n == COMP_EARLY && changes == 0))
		return 0; /* sub-reads failed or the run stopped: nothing learned */
	out->off = lo;
	out->len = window;
	out->mb_per_s = bytes / secs;
	out->valid = n == COMP_READS && changes >= COMP_CHANGES;
	b->long_runs = !out->valid;
	c->comp_valid += out->valid;
	c->comp_invalid += !out->valid;
	return 0;
}

int bw_surface_side(struct ctx *c, const struct dg_bandwidth_result *r, struct boundary *b,
		    uint64_t mid, uint64_t window, const struct meas *m, struct composite *out)
{
	int side, rc = composite(c, b, mid, window, out);

	if (rc || out->valid)
		return rc;
	rc = bw_band_side(r, b, m->off, m->len, m->mb_per_s, &side);
	if (rc || side < 0)
		return rc;
	*out = (struct composite){
	    .off = m->off, .len = m->len, .mb_per_s = side ? b->ra : b->rb, .valid = true};
	return 0;
}

bool bw_surface_overlap(const struct ctx *c, const struct levels *L, const struct boundary *b,
			double mb_per_s)
{
	double x = log(mb_per_s), la = log(b->ra), lb = log(b->rb);
	double lo = L->off[0], hi = L->off[L->n - 1], tol = fmax(3 * L->noise, 0.002);

	if (L->n < 2 || c->comp_valid <= c->comp_invalid)
		return false;
	return x >= la + lo - tol && x <= la + hi + tol && x >= lb + lo - tol && x <= lb + hi + tol;
}
