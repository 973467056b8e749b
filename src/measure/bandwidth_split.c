/* SPDX-License-Identifier: MIT */
/*
 * Zone steps the curve's noise hides. On a per-surface drive with the cylinder layout a curve
 * sample reads part of a cylinder, so its rate depends on the surfaces it covers: the samples
 * scatter by about 1%, and the segmentation (src/zones.c) merges steps under three times that,
 * 2% zone steps among them. Each segment is split at its most likely change point (the maximum
 * of the standardised CUSUM of its ln rates: Page 1954, Hinkley 1971); where its sides differ by
 * most of a zone step and by many standard errors, two refining samples (whose noise is a
 * fraction of the curve's) on either side of the split must confirm the step before it is
 * bisected; one that bisection cannot place is dropped (bw_refine_all). A confirmed split is
 * searched again on both sides (three zones merged into one).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "bandwidth_zones_priv.h"
#include "util.h"

#define SPLIT_SIDE    4	   /* usable samples each side of a split, at least */
#define SPLIT_STEP    0.75 /* the sides differ by this share of a zone step (KEEP_STEP) ... */
#define SPLIT_T	      5.0  /* ... and by this many standard errors */
#define SPLIT_PROBE   3	   /* confirming samples centred this many samples from the split */
#define SPLIT_CONFIRM 0.5  /* they differ by this share of the sides' step and of a zone step */
/* The segmentation (src/zones.c) merges steps under 3 sigma of the curve's noise, and under 2.5
 * standard deviations of the noisier zone's samples: with noise over this share of a zone step,
 * 2% steps are merged as often as not. */
#define SPLIT_NOISE 0.25

/* The best split of n ln rates y: its index k (the right side's first; 0 when none), the sides'
 * difference d (left minus right) and its standard error. */
static void best_split(const double *y, size_t n, size_t *k, double *d, double *se)
{
	double total = 0, left = 0, best = -1, ss = 0, ml, mr;

	*k = 0;
	for (size_t j = 0; j < n; j++)
		total += y[j];
	for (size_t j = 0; j + SPLIT_SIDE <= n; j++) {
		double nl = (double)j, nr = (double)(n - j);

		if (j >= SPLIT_SIDE &&
		    fabs(left / nl - (total - left) / nr) * sqrt(nl * nr / (double)n) > best) {
			best = fabs(left / nl - (total - left) / nr) * sqrt(nl * nr / (double)n);
			*k = j;
		}
		left += y[j];
	}
	if (*k == 0)
		return;
	left = 0;
	for (size_t j = 0; j < *k; j++)
		left += y[j];
	ml = left / (double)*k;
	mr = (total - left) / (double)(n - *k);
	*d = ml - mr;
	for (size_t j = 0; j < n; j++)
		ss += (y[j] - (j < *k ? ml : mr)) * (y[j] - (j < *k ? ml : mr));
	*se = sqrt(ss / (double)(n - 2)) * sqrt(1.0 / (double)*k + 1.0 / (double)(n - *k));
}

/* Room for one more boundary in cv->bs. */
static int grow(struct curve *cv)
{
	struct boundary *bs;

	if (cv->nb < cv->capb)
		return 0;
	bs = realloc(cv->bs, 2 * cv->capb * sizeof(*bs));
	if (!bs)
		return -ENOMEM;
	cv->bs = bs;
	cv->capb *= 2;
	return 0;
}

/* The boundary a confirmed split makes, between the confirming samples ml and mr (whose rates
 * are the sides' at the refining size); the zones' lengths from the segment's samples idx[0..n)
 * either side of it. */
static struct boundary split_boundary(const struct ctx *c, const struct curve *cv,
				      const struct meas *ml, const struct meas *mr,
				      const size_t *idx, size_t n, uint64_t span)
{
	const struct dg_bandwidth_sample *first = &cv->v[idx[0]], *last = &cv->v[idx[n - 1]];
	struct boundary b = {.ra = ml->mb_per_s,
			     .rb = mr->mb_per_s,
			     .lo = ml->off + ml->len,
			     .hi = mr->off > ml->off + ml->len ? mr->off : ml->off + ml->len,
			     .span = span,
			     .referenced = true,
			     .hidden = true};
	uint64_t cut = b.lo / 2 + b.hi / 2;

	b.step = fabs(log(b.ra / b.rb));
	b.sigma = bw_noise_at(c, cv->noise, span);
	b.a_len = cut > first->offset_bytes ? cut - first->offset_bytes : span;
	b.b_len = last->offset_bytes + last->length_bytes > cut
		      ? last->offset_bytes + last->length_bytes - cut
		      : span;
	b.near_len = b.a_len < b.b_len ? b.a_len : b.b_len;
	return b;
}

/*
 * Confirms a split of segment s (its usable samples idx[0..n), split before idx[k], the sides'
 * step d) with a refining sample centred on each side's SPLIT_PROBE-th sample from it, when
 * what is left of u's budget holds them and the bisection that follows. A confirmed split
 * becomes a segment end and a boundary (appended, then bisected). *split tells which.
 */
static int confirm(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct curve *cv,
		   const struct refine_run *u, size_t s, const size_t *idx, size_t n, size_t k,
		   double d, bool *split)
{
	const struct dg_bandwidth_sample *sl = &cv->v[idx[k - SPLIT_PROBE]];
	const struct dg_bandwidth_sample *sr = &cv->v[idx[k + SPLIT_PROBE - 1]];
	struct boundary tb = {.step = fabs(d)}, nb;
	uint64_t span = bw_refine_span(c, &tb, cv->noise);
	struct meas ml, mr;
	double got, each;
	int rc;

	*split = false;
	if (span == 0)
		span = c->p.sample_bytes * REFINE_MAX_SPAN;
	each = (double)span / (exp(-fabs(d)) * (sl->mb_per_s + sr->mb_per_s) / 2 * DG_MB) * 1e9;
	if (bw_refine_left_ns(c, u) < 2 * each)
		return 0;
	rc = bw_refine_sample(c, r, cap, sl->offset_bytes + sl->length_bytes / 2, span, &ml);
	if (!rc)
		rc =
		    bw_refine_sample(c, r, cap, sr->offset_bytes + sr->length_bytes / 2, span, &mr);
	if (rc || !ml.ok || !mr.ok || ml.stalls || mr.stalls)
		return rc;
	got = log(ml.mb_per_s / mr.mb_per_s);
	if (got * d <= 0 || fabs(got) < SPLIT_CONFIRM * fabs(d) ||
	    fabs(got) < SPLIT_CONFIRM * KEEP_STEP ||
	    fabs(got) < REFINE_Z * sqrt(2.0) * bw_noise_at(c, cv->noise, span))
		return 0;
	nb = split_boundary(c, cv, &ml, &mr, idx, n, span);
	nb.cut_jump = NAN;
	if (bw_refine_cost_ns(c, &nb, u) > bw_refine_left_ns(c, u) || (rc = grow(cv)))
		return rc;
	for (size_t i = cv->nseg; i > s; i--)
		cv->ends[i] = cv->ends[i - 1];
	cv->ends[s] = idx[k];
	cv->nseg++;
	cv->bs[cv->nb++] = nb;
	*split = true;
	/* When what is left cannot hold every boundary, a step its confirming samples (SPLIT_PROBE
	 * samples from the split, clear of the step) put under KEEP_STEP waits for those that may
	 * be zone steps (zoo 10: splits confirmed at 1.46% took the time two of 2.2 and 2.5% then
	 * lacked). */
	if (u->triage && nb.step < KEEP_STEP) {
		cv->bs[cv->nb - 1].deferred = true;
		cv->bs[cv->nb - 1].measured = nb.step;
		return 0;
	}
	return bw_refine_boundary(c, r, cap, &cv->bs[cv->nb - 1], cv, u->shortest,
				  bw_refine_left_ns(c, u));
}

/* The usable samples of segment s: their indices idx[0..*n) and ln rates y. */
static void segment_samples(const struct curve *cv, size_t s, size_t *idx, double *y, size_t *n)
{
	*n = 0;
	for (size_t i = s ? cv->ends[s - 1] : 0; i < cv->ends[s]; i++)
		if (!cv->excl[i] && cv->v[i].mb_per_s > 0) {
			idx[*n] = i;
			y[(*n)++] = log(cv->rates[i]);
		}
}

/* The segment not looked at yet (its first sample not in ss->tried) whose best split differs
 * most, by SPLIT_STEP of a zone step and SPLIT_T standard errors: *seg and its step *d (0 when
 * there is none). */
static void next_candidate(const struct curve *cv, struct split_search *ss, size_t *seg, double *d)
{
	*d = 0;
	for (size_t s = 0; ss->on && ss->ntried < SPLIT_MAX && s < cv->nseg; s++) {
		size_t n, k = 0, first = s ? cv->ends[s - 1] : 0;
		double ds = 0, se = 0;
		bool seen = false;

		for (size_t t = 0; t < ss->ntried; t++)
			seen |= ss->tried[t] == first;
		segment_samples(cv, s, ss->idx, ss->y, &n);
		if (seen || n < 2 * SPLIT_SIDE)
			continue;
		best_split(ss->y, n, &k, &ds, &se);
		if (k > 0 && fabs(ds) >= SPLIT_STEP * KEEP_STEP && fabs(ds) >= SPLIT_T * se &&
		    fabs(ds) > fabs(*d)) {
			*seg = s;
			*d = ds;
		}
	}
}

int bw_split_init(struct split_search *ss, const struct curve *cv)
{
	*ss = (struct split_search){.on = cv->L.n < 2 && !cv->L.rejected &&
					  cv->noise >= SPLIT_NOISE * KEEP_STEP};
	if (!ss->on)
		return 0;
	ss->idx = malloc(cv->n * sizeof(*ss->idx));
	ss->y = malloc(cv->n * sizeof(*ss->y));
	return ss->idx && ss->y ? 0 : -ENOMEM;
}

void bw_split_free(struct split_search *ss)
{
	free(ss->idx);
	free(ss->y);
}

double bw_split_peek(const struct curve *cv, struct split_search *ss)
{
	size_t s = 0;
	double d;

	next_candidate(cv, ss, &s, &d);
	return fabs(d);
}

int bw_split_take(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct curve *cv,
		  const struct refine_run *u, struct split_search *ss)
{
	size_t s = 0, n, k = 0;
	double d, se = 0;
	bool split = false;
	int rc = 0;

	next_candidate(cv, ss, &s, &d);
	if (d == 0)
		return 0;
	segment_samples(cv, s, ss->idx, ss->y, &n);
	best_split(ss->y, n, &k, &d, &se);
	rc = confirm(c, r, cap, cv, u, s, ss->idx, n, k, d, &split);
	/* a segment split is looked at again on both sides */
	if (!split)
		ss->tried[ss->ntried++] = s ? cv->ends[s - 1] : 0;
	return rc;
}

/* Orders boundaries by the middle of their brackets (where place_zones puts them). */
static int cmp_boundary(const void *x, const void *y)
{
	const struct boundary *a = x, *b = y;
	uint64_t ma = a->lo / 2 + a->hi / 2, mb = b->lo / 2 + b->hi / 2;

	return (ma > mb) - (ma < mb);
}

static int cmp_index(const void *x, const void *y)
{
	size_t a = *(const size_t *)x, b = *(const size_t *)y;

	return (a > b) - (a < b);
}

void bw_sort_boundaries(struct curve *cv)
{
	qsort(cv->bs, cv->nb, sizeof(*cv->bs), cmp_boundary);
	qsort(cv->ends, cv->nseg, sizeof(*cv->ends), cmp_index);
}
