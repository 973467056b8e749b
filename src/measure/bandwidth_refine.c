/* SPDX-License-Identifier: MIT */
/*
 * Refinement of the zone boundaries of the bandwidth curve: bisection of each boundary's bracket
 * (the bisection method, Press et al., Numerical Recipes, 3rd ed. 2007, section 9.1) with extra
 * samples, each classed by the nearer of the two sides' rates; the samples' sizes chosen from the
 * curve's own noise, the largest steps first within the budget, and small steps that could not be
 * placed merged away.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "bandwidth_zones_priv.h"
#include "util.h"

/* Fraction of a sample's bytes that lie in zone A, from its rate: the time-weighted mix
 * 1/r = f/rA + (1-f)/rB. */
static double fraction_in_a(double r, double ra, double rb)
{
	double f = (1.0 / r - 1.0 / rb) / (1.0 / ra - 1.0 / rb);

	/* NAN (equal rates) counts as 0: the caller converts f * len to an integer */
	return !(f > 0) ? 0 : f > 1 ? 1 : f;
}

/* Where a refinement sample of `span` bytes centred on `mid` starts: aligned, in the range. */
static uint64_t refine_start(const struct ctx *c, uint64_t mid, uint64_t span)
{
	uint64_t start = mid > span / 2 ? mid - span / 2 : 0;

	start -= start % c->align;
	if (start < c->p.range_start_bytes)
		start = c->p.range_start_bytes;
	if (start + span > c->p.range_end_bytes)
		start = c->p.range_end_bytes - span;
	return start - start % c->align;
}

/* Measures one refinement sample whose timed part is centred on `mid`. */
static int refine_sample(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, uint64_t mid,
			 uint64_t span, struct meas *m)
{
	uint64_t start = refine_start(c, mid, span);
	struct dg_bandwidth_sample s = {0};
	int rc;

	rc = bw_measure(c, start, span, m);
	if (rc)
		return rc;
	r->refine_samples++;
	if (!m->ok)
		return 0;
	s.offset_bytes = m->off;
	s.length_bytes = m->len;
	s.mb_per_s = m->mb_per_s;
	s.spread_mb_per_s = m->half_spread;
	s.stalls = m->stalls;
	s.stall_ms = m->stall_ms;
	s.refine = true;
	return bw_add_sample(r, cap, &s);
}

/* A sample's rate corrected for its surface: of the levels that put its rate nearest either
 * zone's rate A or B (within the noise of the nearest), the nearest; false when those levels
 * disagree on the side (a surface of A reads like another of B: the sample cannot tell where it
 * lies). A sample reads one zone's rate on one surface, so a level that puts it between A and B
 * explains it no better than one that puts it beyond. One level: the rate as measured. */
bool bw_level_rate(const struct levels *L, const struct boundary *b, double r, double *out)
{
	double la = log(b->ra), lb = log(b->rb);
	double dist[DG_ZONES_MAX_SURFACES], best = INFINITY, tol = fmax(3 * L->noise, 0.002);
	size_t arg = 0;
	int side = -1;

	*out = r;
	if (L->n < 2)
		return true;
	for (size_t k = 0; k < L->n; k++) {
		double x = log(r) - L->off[k];

		dist[k] = fmin(fabs(x - la), fabs(x - lb));
		if (dist[k] < best) {
			best = dist[k];
			arg = k;
		}
	}
	for (size_t k = 0; k < L->n; k++) {
		double x = log(r) - L->off[k];
		int s = fabs(x - la) <= fabs(x - lb);

		if (dist[k] > best + tol)
			continue;
		if (side >= 0 && s != side)
			return false;
		side = s;
	}
	*out = r / exp(L->off[arg]);
	return true;
}

/* Narrows b's bracket with a sample at [off, off+len) of rate r: the bytes before
 * off + f * len are in A and those after it in B, f the fraction in A by its rate. A sample
 * nearer A's rate can only raise `lo`, one nearer B's only lower `hi`; noise moves the cut by
 * a fraction of the sample at most, and a sample that straddles places it where it is. */
void bw_narrow(struct boundary *b, uint64_t off, uint64_t len, double r)
{
	double f = fraction_in_a(r, b->ra, b->rb);
	uint64_t cut = off + (uint64_t)(f * (double)len);

	if (f >= 0.5 && cut > b->lo)
		b->lo = cut;
	else if (f < 0.5 && cut < b->hi)
		b->hi = cut;
}

/* Measures two refining samples centred on `at` and `bt`; whether both were timed. */
static int two_samples(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap,
		       const struct boundary *b, uint64_t at, uint64_t bt, struct meas *ma,
		       struct meas *mb)
{
	int rc = refine_sample(c, r, cap, at, b->span, ma);

	if (!rc)
		rc = refine_sample(c, r, cap, bt, b->span, mb);
	bw_report(c, 2);
	return rc;
}

/* Whether rates a and b (A's side, B's) tell the sides apart as the curve does, by half its
 * step at least. */
static bool tell_apart(const struct boundary *b, const struct meas *ma, const struct meas *mb)
{
	return ma->ok && mb->ok && (ma->mb_per_s - mb->mb_per_s) * (b->ra - b->rb) > 0 &&
	       fabs(log(ma->mb_per_s / mb->mb_per_s)) >= b->step / 2;
}

/* Refining samples larger than the curve's class against rates measured at their own size: a
 * sample's rate depends a little on its size (it covers a fraction of a skew period more or
 * less), by as much as a small step. They are measured where the segments meet; when those two
 * tell the sides apart, the boundary lies between them (the first bracket narrows to them),
 * else at the first bracket's ends. The curve's rates stay when neither pair tells. *used gets
 * the count of samples taken (they count among the boundary's REFINE_MAX_STEPS). */
static int reference_rates(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap,
			   struct boundary *b, unsigned *used)
{
	struct meas ma, mb;
	int rc = two_samples(c, r, cap, b, b->la_mid, b->fb_mid, &ma, &mb);

	*used = 2;
	if (rc)
		return rc;
	if (tell_apart(b, &ma, &mb)) {
		b->lo = b->lo_near > b->lo ? b->lo_near : b->lo;
		b->hi = b->hi_near < b->hi ? b->hi_near : b->hi;
	} else {
		rc = two_samples(c, r, cap, b, b->lo > b->span / 2 ? b->lo - b->span / 2 : 0,
				 b->hi + b->span / 2, &ma, &mb);
		*used = 4;
		if (rc || !tell_apart(b, &ma, &mb))
			return rc;
	}
	b->ra = ma.mb_per_s;
	b->rb = mb.mb_per_s;
	return 0;
}

/* Whether a refining sample's rate lies between the sides' rates, farther than REFINE_Z sigma
 * from both. */
static bool reads_between(const struct boundary *b, double rate)
{
	double x = log(rate), la = log(b->ra), lb = log(b->rb);

	return (x - la) * (x - lb) < 0 && fmin(fabs(x - la), fabs(x - lb)) > REFINE_Z * b->sigma;
}

/* Whether bisection is done: the bracket within `target`, or two refining samples wide (as far
 * as samples can tell; closer ones would also read what the drive still caches from the last). */
static bool bracket_done(const struct boundary *b, uint64_t target)
{
	return b->hi <= b->lo || b->hi - b->lo <= target || b->hi - b->lo <= 2 * b->span;
}

/*
 * Bisection of one boundary with samples of the curve's size (the noise of a refining sample is
 * the curve's), until the bracket is REFINE_TARGET of the smaller zone. Each sample is classed
 * by the nearer rate (robust to noise up to half the step) and moves one end of the bracket.
 */
static int refine_boundary(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap,
			   struct boundary *b, const struct levels *L, double allowance_ns)
{
	/* where in the bracket to probe after 0, 1, 2, 3 samples in a row that could not tell */
	static const double at[] = {0.5, 0.25, 0.75, 0.375};
	unsigned unsure = 0, between = 0, used = 0;
	uint64_t t0 = dg_engine_device_time_ns(c->e);
	uint64_t target = (uint64_t)(REFINE_TARGET * (double)b->near_len);
	uint64_t span = b->span, mid, start;

	if (target < c->align)
		target = c->align;
	/* Samples larger than the curve's first measure their own reference rates: worth it only
	 * when the allowance holds those and a few bisection steps. */
	if (span > c->p.sample_bytes) {
		double each_ns = (double)span / (fmin(b->ra, b->rb) * DG_MB) * 1e9;
		int rc;

		if (allowance_ns < (2 + REFINE_MIN_STEPS) * each_ns)
			return 0;
		rc = reference_rates(c, r, cap, b, &used);

		if (rc)
			return rc;
	}
	/* the references count among the boundary's REFINE_MAX_STEPS samples */
	for (unsigned step = used; step < REFINE_MAX_STEPS; step++) {
		struct meas m;
		double rate;
		int rc;

		if (bracket_done(b, target) || bw_stopped(c) ||
		    (double)(dg_engine_device_time_ns(c->e) - t0) >= allowance_ns)
			break;
		/* Nor may its timed bytes have been read lately, by any sample: a drive with a
		 * large cache keeps several streams, whatever moved its head since. */
		mid = b->lo + (unsure ? (uint64_t)(at[unsure] * (double)(b->hi - b->lo))
				      : (b->hi - b->lo) / 2);
		start = refine_start(c, mid, span);
		if (bw_recently_read(c, start + bw_positioning_bytes(c, span), start + span))
			break;
		rc = refine_sample(c, r, cap, mid, span, &m);
		bw_report(c, 1);
		if (rc)
			return rc;
		if (!m.ok)
			break;
		if (!bw_level_rate(L, b, m.mb_per_s, &rate)) {
			if (++unsure == ARRAY_SIZE(at))
				break;
			continue;
		}
		unsure = 0;
		bw_narrow(b, m.off, m.len, rate);
		between += L->n < 2 && reads_between(b, rate);
	}
	/* One sample may straddle the boundary; more that read neither side's rate say the
	 * bracket holds no clean step between these two rates (the segments' edge was misplaced
	 * by more than a sample, or the sides mix steps): not placed. */
	b->placed = bracket_done(b, target) && between < 2;
	return 0;
}

/* The noise (sigma of ln MB/s) of a sample of `span` bytes, from the curve's at its own size:
 * a sample's error is a few positions' worth of time over its whole time, and a longer sample
 * also averages more of them, so it falls about as the 1.5th power of the size (measured on the
 * zoo's drives between 8 and 32 MiB). */
double bw_noise_at(const struct ctx *c, double noise, uint64_t span)
{
	return noise * pow((double)c->p.sample_bytes / (double)span, 1.5);
}

/* The size of a boundary's refining samples: the smallest of half, one, two or four times the
 * curve's size whose noise lets a sample class by the nearer rate with REFINE_Z sigma to spare
 * (the curve's size for a boundary not refined). 0 when even the largest cannot. */
uint64_t bw_refine_span(const struct ctx *c, const struct boundary *b, double noise)
{
	uint64_t range = c->p.range_end_bytes - c->p.range_start_bytes;

	for (uint64_t k = 1; k <= REFINE_MAX_SPAN; k *= 2) {
		uint64_t span = c->p.sample_bytes * k;

		if (k > 1 && span > range / 4)
			break;
		if (b->step / 2 >= REFINE_Z * bw_noise_at(c, noise, span))
			return span;
	}
	return 0;
}

/* Orders boundary indices by their step, the largest first (`arg`: the boundaries). */
static int cmp_step(const void *x, const void *y, void *arg)
{
	const struct boundary *bs = arg;
	double a = bs[*(const size_t *)x].step, b = bs[*(const size_t *)y].step;

	return (a < b) - (a > b);
}

/* Whether bisection can place a boundary: samples of some refining size class by the nearer
 * rate, or its step is a zone step that must be found (then refined with the largest). */
static bool placeable(const struct ctx *c, struct boundary *b, double noise)
{
	if (b->span == 0 && b->step >= KEEP_STEP) {
		b->span = c->p.sample_bytes * REFINE_MAX_SPAN;
		b->sigma = bw_noise_at(c, noise, b->span);
	}
	return b->span > 0;
}

/* Drops the boundaries refinement could not place whose step is less than KEEP_STEP: a small
 * step bisected with samples as noisy as itself, or left for want of time, lies anywhere in its
 * bracket, and a boundary reported there would be no zone's. Their segments merge. */
static void drop_unplaced(struct curve *cv)
{
	size_t keep = 0;

	for (size_t i = 0; i < cv->nb; i++) {
		if (!cv->bs[i].placed && cv->bs[i].step < KEEP_STEP) {
			cv->ndropped++;
			continue;
		}
		cv->bs[keep] = cv->bs[i];
		cv->ends[keep++] = cv->ends[i];
	}
	cv->ends[keep] = cv->ends[cv->nb];
	cv->nb = keep;
	cv->nseg = keep + 1;
}

/* Bisects every boundary that can be placed, the largest steps first, the whole run within
 * REFINE_TOTAL x the budget (a curve that took more than the budget, the minimum count of
 * samples, still refines for REFINE_MIN x it); then drops the small ones left unplaced. */
int bw_refine_all(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct curve *cv)
{
	uint64_t t0 = dg_engine_device_time_ns(c->e);
	double budget = fmax(REFINE_MIN, REFINE_TOTAL - (double)(t0 - c->dev0_ns) /
							    (double)c->p.time_budget_ns) *
			(double)c->p.time_budget_ns;
	size_t *order = malloc(cv->nb * sizeof(*order)), todo = 0, must = 0;

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < cv->nb; i++)
		if (placeable(c, &cv->bs[i], cv->noise))
			order[todo++] = i;
	qsort_r(order, todo, sizeof(*order), cmp_step, cv->bs);
	c->phase = "zones";
	c->units_done = 0;
	c->units_total = (double)todo * REFINE_STEPS_GUESS;
	for (size_t k = 0; k < todo; k++)
		must += cv->bs[order[k]].step >= KEEP_STEP;
	for (size_t k = 0; k < todo && !bw_stopped(c); k++) {
		/* What is left of the refinement's budget, shared by the boundaries left: the steps
		 * that must be found first, the others then share what they leave. */
		double left = budget - (double)(dg_engine_device_time_ns(c->e) - t0);
		int rc = refine_boundary(c, r, cap, &cv->bs[order[k]], &cv->L,
					 left / (double)(k < must ? must - k : todo - k));

		if (rc) {
			free(order);
			return rc;
		}
	}
	free(order);
	if (bw_stopped(c))
		r->complete = false;
	else
		drop_unplaced(cv);
	return 0;
}
