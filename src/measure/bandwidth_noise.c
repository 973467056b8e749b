/* SPDX-License-Identifier: MIT */
/*
 * The noise next to each zone boundary, and its refining samples sized by it. On a per-surface
 * drive with the cylinder layout a curve sample's rate depends on the surfaces it covers, and how
 * many whole cylinders it holds changes along the disk, so the curve's scatter changes along it
 * too: the whole curve's noise would size every boundary's samples for its noisiest part.
 */
#include <math.h>
#include <stdint.h>

#include "bandwidth_zones_priv.h"
#include "util.h"

#define LOCAL_NOISE_DIFFS    24 /* differences of curve samples that give a boundary's noise */
#define LOCAL_NOISE_SEGMENTS 3	/* ... from this many segments each side at most */

/* The successive differences of the ln rates of the usable curve samples [first, end), each
 * appended to d while *nd < cap. */
static void segment_diffs(const struct curve *cv, size_t first, size_t end, double *d, size_t *nd,
			  size_t cap)
{
	double prev = NAN;

	for (size_t i = first; i < end && *nd < cap; i++) {
		double x;

		if (cv->excl[i] || !(cv->v[i].mb_per_s > 0))
			continue;
		x = log(cv->rates[i]);
		if (!isnan(prev))
			d[(*nd)++] = fabs(x - prev);
		prev = x;
	}
}

/*
 * The curve's noise next to boundary i (between segments i and i + 1), never below the floor:
 * on a per-surface drive with the cylinder layout a sample's rate depends on the surfaces it
 * covers, and how many whole cylinders it holds changes along the disk, so its scatter does too
 * (zoo 54: 0.5% over the curve, 0.14% where its 2% steps are). From the successive differences
 * inside the segments nearest the boundary (LOCAL_NOISE_DIFFS of them), robustly: the median
 * absolute difference (Hampel 1974: 1.4826 x the MAD of a normal), over sqrt 2 for a difference
 * of two; a slope or a small step the fit merged moves one difference, not the median. 0 when
 * the segments around hold too few.
 */
static double local_noise(const struct curve *cv, size_t i)
{
	double d[LOCAL_NOISE_DIFFS];
	size_t nd = 0;

	for (size_t k = 0; k < LOCAL_NOISE_SEGMENTS && nd < LOCAL_NOISE_DIFFS; k++) {
		size_t a = i >= k ? i - k : SIZE_MAX, b = i + 1 + k;

		if (a != SIZE_MAX)
			segment_diffs(cv, a ? cv->ends[a - 1] : 0, cv->ends[a], d, &nd,
				      LOCAL_NOISE_DIFFS);
		if (b < cv->nseg)
			segment_diffs(cv, cv->ends[b - 1], cv->ends[b], d, &nd, LOCAL_NOISE_DIFFS);
	}
	if (nd < LOCAL_NOISE_DIFFS / 2)
		return 0;
	return fmax(NOISE_FLOOR, 1.4826 * dg_median(d, nd) / sqrt(2.0));
}

/*
 * Each must-find boundary's refining samples sized by the curve's noise next to it when that is
 * less than the whole curve's (smaller samples where the curve is quieter), on a curve without
 * surface levels; and where a curve sample classes by the nearer rate at that noise, its first
 * bracket narrowed to the segments' meeting samples (A's last, B's first): the bracket reaches
 * one sample further each way only for a noisy sample put on the wrong side. Its other samples
 * are not used: on zoo 155 and 198 a curve sample of a smaller step next to it, classed by the
 * nearer rate, cut the boundary out of its bracket. Steps under KEEP_STEP keep the curve's
 * noise: bisected with samples sized for less than it, they land off their place (zoo 125, 135).
 */
void bw_size_by_local_noise(const struct ctx *c, struct curve *cv)
{
	for (size_t i = 0; cv->L.n < 2 && i < cv->nb; i++) {
		struct boundary *b = &cv->bs[i];
		double noise = local_noise(cv, i);

		if (b->step < KEEP_STEP || !(noise > 0) || noise >= cv->noise)
			continue;
		b->span = bw_refine_span(c, b, noise);
		b->sigma = bw_noise_at(c, noise, b->span ? b->span : c->p.sample_bytes);
		if (b->step / 2 < REFINE_Z * noise)
			continue;
		if (b->lo_near > b->lo && b->lo_near < b->hi)
			b->lo = b->lo_near;
		if (b->hi_near < b->hi && b->hi_near > b->lo)
			b->hi = b->hi_near;
	}
}
