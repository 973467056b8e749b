/* SPDX-License-Identifier: MIT */
/*
 * Comparing profiles (compare.h). Figures are extracted from each document on the layout of one
 * of them (its zones, spans and sweep cells), so that every document yields the same list in the
 * same order; a difference is significant when it exceeds `sigmas` times the two documents'
 * combined uncertainty (each figure's own: for a bandwidth figure the standard error of the
 * zone rates it rests on, from their own samples and their count, with the method's resolution
 * as a floor), and it "differs" when it is also larger than the tolerance.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/compare.h"
#include "diskgeo/diskgeo.h"
#include "util.h"

/* Noise assumed where a document gives no scatter of its own (one sigma, %):
 * - rpm: a timed rotation is good to about 0.1 %;
 * - seek figures without a fit: 2 %;
 * - span IOPS: the access time of a random read varies by about 35 % of its mean (a uniform
 *   rotational wait dominates), so a mean over N reads is good to 35/sqrt(N) %;
 * - sweep cells: 2 %. */
#define RPM_NOISE_PCT  0.1
#define SEEK_NOISE_PCT 2.0
#define ACCESS_CV_PCT  35.0
#define CELL_NOISE_PCT 2.0
/* The resolution of the bandwidth method (one sigma, %): a zone's rate is never known better
 * than this, however many samples agree. bandwidth.c assumes no sample noise below 0.1 %
 * (its NOISE_FLOOR); a zone's rate also rests on where its edges were placed, on samples that
 * straddle an edge by a little, and on the rotational positioning a sample's time line removes,
 * none of which the scatter of a drive that repeats itself exactly (a simulated one) shows. */
#define BW_RESOLUTION_PCT 0.1
/* A bandwidth sample is weak only when it is also this much below what is expected: sample to
 * sample, real drives vary by about 1 % without anything being wrong. */
#define WEAK_FLOOR_PCT 2.0
/* Zone figures use the middle of a zone, so that boundaries found a little apart by two runs do
 * not count as a difference. */
#define ZONE_EDGE_TRIM 0.05
/* How far apart (a fraction of the capacity) two runs may place the same zone boundary. */
#define BOUNDARY_SLACK 0.002

void dg_compare_defaults(struct dg_compare_params *p)
{
	p->tolerance_percent = 5.0;
	p->sigmas = 3.0;
}

struct fig {
	char figure[40], detail[48];
	uint64_t start, end;
	double v, noise;
};

double dg_profile_bandwidth_noise_percent(const struct dg_profile_data *p)
{
	if (p->is_model)
		return 0;
	double *dev = p->nsamples ? malloc(p->nsamples * sizeof(*dev)) : NULL;
	size_t n = 0;

	if (p->nsamples && !dev)
		return NAN; /* ENOMEM */
	for (size_t i = 0; dev && i < p->nsamples; i++) {
		const struct dg_pr_sample *s = &p->samples[i];
		const struct dg_pr_zone *z = dg_profile_zone_at(p, s->offset_bytes);

		if (z && s->offset_bytes + s->length_bytes <= z->end_bytes)
			dev[n++] = fabs(s->mb_per_s / z->mb_per_s - 1) * 100;
	}
	double mad = n >= 8 ? dg_median(dev, n) * 1.4826 : NAN;
	free(dev);
	if (!isnan(mad))
		return mad;
	return isnan(p->noise_percent) ? 1.0 : p->noise_percent;
}

double dg_profile_read_time_s(const struct dg_profile_data *p)
{
	double secs = 0;
	uint64_t x = 0;

	if (!p->nzones)
		return NAN;
	/* zones, and between or beyond them the rate of the nearest zone */
	for (size_t i = 0; i < p->nzones; i++) {
		const struct dg_pr_zone *z = &p->zones[i];
		uint64_t end = i + 1 < p->nzones ? p->zones[i + 1].start_bytes : p->size_bytes;

		secs += (double)(end - x) / (z->mb_per_s * DG_MB);
		x = end;
	}
	return secs;
}

static void add(struct fig *f, size_t *n, const char *figure, const char *detail, uint64_t start,
		uint64_t end, double v, double noise)
{
	struct fig *x = &f[(*n)++];

	snprintf(x->figure, sizeof(x->figure), "%s", figure);
	snprintf(x->detail, sizeof(x->detail), "%s", detail ? detail : "");
	x->start = start;
	x->end = end;
	x->v = v;
	x->noise = noise;
}

static size_t nfigures(const struct dg_profile_data *layout)
{
	return 8 + layout->nzones + layout->nspans + 2 * layout->ncells;
}

static double seek_noise(const struct dg_profile_data *p, double v)
{
	if (p->is_model)
		return 0;
	if (isnan(p->seek_rms_ms) || !(v > 0))
		return SEEK_NOISE_PCT;
	return p->seek_rms_ms / v * 100;
}

static const struct dg_pr_span *match_span(const struct dg_profile_data *p,
					   const struct dg_pr_span *want, uint64_t size)
{
	uint64_t slack = size / 100 + (1u << 20);

	for (size_t i = 0; i < p->nspans; i++) {
		const struct dg_pr_span *s = &p->spans[i];
		uint64_t ds = s->start_bytes > want->start_bytes
				  ? s->start_bytes - want->start_bytes
				  : want->start_bytes - s->start_bytes;
		uint64_t dl = s->span_bytes > want->span_bytes ? s->span_bytes - want->span_bytes
							       : want->span_bytes - s->span_bytes;

		if (s->block_bytes == want->block_bytes && ds <= slack && dl <= slack)
			return s;
	}
	return NULL;
}

static const struct dg_pr_cell *match_cell(const struct dg_profile_data *p,
					   const struct dg_pr_cell *want)
{
	for (size_t i = 0; i < p->ncells; i++) {
		const struct dg_pr_cell *c = &p->cells[i];

		if (!strcmp(c->kind, want->kind) && !strcmp(c->op, want->op) &&
		    !strcmp(c->where, want->where) && c->block_bytes == want->block_bytes &&
		    c->qd == want->qd)
			return c;
	}
	return NULL;
}

/*
 * The standard error (one sigma, %, without the resolution floor) of each of p's zone rates,
 * from the samples that lie wholly inside the zone: their scatter about the zone's rate (which
 * also catches a partial sample or a misplaced edge that pulled the rate) over the square root
 * of their count. The scatter is taken no smaller than the curve's per-sample noise `sample`
 * (two samples that happen to agree prove little), and a zone without a whole sample of its
 * own counts as measured by one. A new array of p->nzones values, or NULL on ENOMEM.
 */
static double *zone_errors(const struct dg_profile_data *p, double sample)
{
	double *sq = calloc(p->nzones ? p->nzones : 1, sizeof(*sq));
	size_t *cnt = calloc(p->nzones ? p->nzones : 1, sizeof(*cnt));

	if (!sq || !cnt) {
		free(sq);
		free(cnt);
		return NULL;
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct dg_pr_sample *s = &p->samples[i];
		const struct dg_pr_zone *z = dg_profile_zone_at(p, s->offset_bytes);

		if (z && s->offset_bytes + s->length_bytes <= z->end_bytes && z->mb_per_s > 0) {
			double d = (s->mb_per_s / z->mb_per_s - 1) * 100;

			sq[z - p->zones] += d * d;
			cnt[z - p->zones]++;
		}
	}
	for (size_t i = 0; i < p->nzones; i++) {
		double sd = cnt[i] > 1 ? sqrt(sq[i] / (double)(cnt[i] - 1)) : 0;

		if (!(sd >= sample))
			sd = sample;
		sq[i] = sd / sqrt(cnt[i] ? (double)cnt[i] : 1);
	}
	free(cnt);
	return sq;
}

/* Adds the method's resolution to a standard error (%), in quadrature. */
static double with_floor(double se)
{
	return sqrt(se * se + BW_RESOLUTION_PCT * BW_RESOLUTION_PCT);
}

/* The uncertainty (one sigma, %) of p's rate over [start, end): its zones' uncertainties
 * (standard error `se` and the floor), taken as independent and weighted by the share of the
 * range's read time each zone takes; over one zone that zone's. The zones are found by bisection
 * and walked; over the disjoint ranges of one layout every zone of p is visited at most once more
 * than it is overlapped, so the cost stays linear. */
static double range_error(const struct dg_profile_data *p, const double *se, uint64_t start,
			  uint64_t end)
{
	size_t lo = 0, hi = p->nzones;
	double secs = 0, var = 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->zones[mid].end_bytes <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < p->nzones && p->zones[i].start_bytes < end; i++) {
		const struct dg_pr_zone *z = &p->zones[i];
		uint64_t a = z->start_bytes > start ? z->start_bytes : start;
		uint64_t b = z->end_bytes < end ? z->end_bytes : end;
		double t = b > a && z->mb_per_s > 0 ? (double)(b - a) / z->mb_per_s : 0;

		double u = with_floor(se[i]);

		secs += t;
		var += t * u * t * u;
	}
	return secs > 0 ? sqrt(var) / secs : BW_RESOLUTION_PCT;
}

/* The uncertainty of an end rate (outer or inner): its zone's when it is that zone's rate,
 * else (the profile took the end sample itself) one sample's. */
static double end_error(const struct dg_profile_data *p, const double *se, size_t zone, double v,
			double sample)
{
	if (p->nzones && fabs(v / p->zones[zone].mb_per_s - 1) <= 1e-4)
		return with_floor(se[zone]);
	return with_floor(sample);
}

/* p's figures on the layout of `l`, nfigures(l) entries into f; a figure p lacks is NaN.
 * 0, or -ENOMEM. */
static int extract(const struct dg_profile_data *l, const struct dg_profile_data *p, struct fig *f)
{
	double bw = dg_profile_bandwidth_noise_percent(p);
	double *se = p->is_model || isnan(bw) ? NULL : zone_errors(p, bw);
	bool m = p->is_model;
	size_t n = 0;

	if (!m && !se)
		return -ENOMEM;
	add(f, &n, "bandwidth.outer_mb_per_s", NULL, 0, 0, p->outer_mb_per_s,
	    m ? 0 : end_error(p, se, 0, p->outer_mb_per_s, bw));
	add(f, &n, "bandwidth.inner_mb_per_s", NULL, 0, 0, p->inner_mb_per_s,
	    m ? 0 : end_error(p, se, p->nzones ? p->nzones - 1 : 0, p->inner_mb_per_s, bw));
	add(f, &n, "bandwidth.zone_count", NULL, 0, 0, p->nzones ? (double)p->nzones : NAN, 0);
	add(f, &n, "bandwidth.read_time_s", NULL, 0, 0, dg_profile_read_time_s(p),
	    m ? 0 : range_error(p, se, 0, p->size_bytes));
	for (size_t i = 0; i < l->nzones; i++) {
		const struct dg_pr_zone *z = &l->zones[i];
		uint64_t trim =
		    (uint64_t)((double)(z->end_bytes - z->start_bytes) * ZONE_EDGE_TRIM);
		char d[32];

		snprintf(d, sizeof(d), "zone %zu", i + 1);
		add(f, &n, "bandwidth.zones.mb_per_s", d, z->start_bytes, z->end_bytes,
		    dg_profile_rate_mb_per_s(p, z->start_bytes + trim, z->end_bytes - trim),
		    m ? 0 : range_error(p, se, z->start_bytes + trim, z->end_bytes - trim));
	}
	free(se);
	add(f, &n, "rotation.rpm", NULL, 0, 0, p->rpm, p->is_model ? 0 : RPM_NOISE_PCT);
	add(f, &n, "seek.track_to_track_ms", NULL, 0, 0, p->track_to_track_ms,
	    seek_noise(p, p->track_to_track_ms));
	add(f, &n, "seek.average_ms", NULL, 0, 0, p->average_ms, seek_noise(p, p->average_ms));
	add(f, &n, "seek.full_stroke_ms", NULL, 0, 0, p->full_stroke_ms,
	    seek_noise(p, p->full_stroke_ms));
	for (size_t i = 0; i < l->nspans; i++) {
		const struct dg_pr_span *s = match_span(p, &l->spans[i], l->size_bytes);
		double noise = !s || !s->samples ? 0 : ACCESS_CV_PCT / sqrt(s->samples);

		add(f, &n, "iops.spans.iops", NULL, l->spans[i].start_bytes,
		    l->spans[i].start_bytes + l->spans[i].span_bytes, s ? s->iops : NAN, noise);
	}
	for (size_t i = 0; i < l->ncells; i++) {
		const struct dg_pr_cell *w = &l->cells[i], *c = match_cell(p, w);
		char d[48];

		snprintf(d, sizeof(d), "%s %s %s %llu qd%u", w->kind, w->op, w->where,
			 (unsigned long long)w->block_bytes, w->qd);
		add(f, &n, "sweep.cells.mb_per_s", d, 0, 0, c ? c->mb_per_s : NAN,
		    p->is_model ? 0 : CELL_NOISE_PCT);
		add(f, &n, "sweep.cells.iops", d, 0, 0, c ? c->iops : NAN,
		    p->is_model ? 0 : CELL_NOISE_PCT);
	}
	return 0;
}

struct state {
	const struct dg_compare_params *prm;
	struct dg_compare_result *r;
	size_t cap_diffs, cap_weak;
};

static int push_diff(struct state *st, size_t k, const struct fig *a, const struct fig *b)
{
	struct dg_compare_result *r = st->r;

	if (isnan(a->v) || isnan(b->v) || (a->v == 0 && b->v == 0))
		return 0;
	if (r->ndiffs == st->cap_diffs) {
		size_t cap = st->cap_diffs ? 2 * st->cap_diffs : 64;
		void *v = realloc(r->diffs, cap * sizeof(*r->diffs));
		if (!v)
			return -ENOMEM;
		r->diffs = v;
		st->cap_diffs = cap;
	}
	struct dg_compare_diff *d = &r->diffs[r->ndiffs++];
	memset(d, 0, sizeof(*d));
	d->profile = k;
	snprintf(d->figure, sizeof(d->figure), "%s", a->figure);
	snprintf(d->detail, sizeof(d->detail), "%s", a->detail);
	d->start_bytes = a->start;
	d->end_bytes = a->end;
	d->a = a->v;
	d->b = b->v;
	d->delta_percent = a->v != 0 ? (b->v - a->v) / fabs(a->v) * 100 : INFINITY;
	d->noise_percent = sqrt(a->noise * a->noise + b->noise * b->noise);
	d->significant = fabs(d->delta_percent) > st->prm->sigmas * d->noise_percent + 1e-9;
	d->beyond_tolerance = d->significant && fabs(d->delta_percent) > st->prm->tolerance_percent;
	return 0;
}

static int push_weak(struct state *st, const struct dg_weak_region *w)
{
	struct dg_compare_result *r = st->r;

	if (r->nweak == st->cap_weak) {
		size_t cap = st->cap_weak ? 2 * st->cap_weak : 16;
		void *v = realloc(r->weak, cap * sizeof(*r->weak));
		if (!v)
			return -ENOMEM;
		r->weak = v;
		st->cap_weak = cap;
	}
	r->weak[r->nweak++] = *w;
	return 0;
}

/* The slowest zone rate of q over [start, end) widened by `margin` on each side. */
static double slowest_rate(const struct dg_profile_data *q, uint64_t start, uint64_t end,
			   uint64_t margin)
{
	return dg_profile_slowest_mb_per_s(q, start > margin ? start - margin : 0, end + margin);
}

/* The expected rate of p's sample s from the others: the baseline's, or the median of the
 * sibling profiles'. Two runs place a zone boundary a little apart, so each other document
 * answers with its slowest zone near the sample (BOUNDARY_SLACK). NaN when nothing else knows
 * that range. */
static double sibling_rate(const struct dg_profile_data *const *pp, size_t n, size_t k,
			   const struct dg_profile_data *baseline, const struct dg_pr_sample *s,
			   double *buf)
{
	uint64_t end = s->offset_bytes + s->length_bytes;
	uint64_t margin = 2 * s->length_bytes;
	size_t m = 0;

	if (margin < (uint64_t)((double)pp[k]->size_bytes * BOUNDARY_SLACK))
		margin = (uint64_t)((double)pp[k]->size_bytes * BOUNDARY_SLACK);
	if (baseline)
		return slowest_rate(baseline, s->offset_bytes, end, margin);
	for (size_t j = 0; j < n; j++) {
		double v;

		if (j == k || isnan(v = slowest_rate(pp[j], s->offset_bytes, end, margin)))
			continue;
		buf[m++] = v;
	}
	return dg_median(buf, m);
}

/* The zone boundary of p in [lo, hi] nearest `near`, or `near` when there is none. */
static uint64_t boundary_in(const struct dg_profile_data *p, uint64_t lo, uint64_t hi,
			    uint64_t near)
{
	uint64_t best = near, bestd = UINT64_MAX;

	for (size_t i = 0; i < p->nzones; i++) {
		uint64_t b[2] = {p->zones[i].start_bytes, p->zones[i].end_bytes};

		for (int j = 0; j < 2; j++) {
			uint64_t d = b[j] > near ? b[j] - near : near - b[j];

			if (b[j] >= lo && b[j] <= hi && d < bestd) {
				best = b[j];
				bestd = d;
			}
		}
	}
	return best;
}

/* Weak regions of profile k: consecutive samples below their expected rate. */
static int weak_regions(struct state *st, const struct dg_profile_data *const *pp, size_t n,
			size_t k, const struct dg_profile_data *baseline)
{
	const struct dg_profile_data *p = pp[k];
	double sig = st->prm->sigmas * dg_profile_bandwidth_noise_percent(p);
	double thr = (sig > WEAK_FLOOR_PCT ? sig : WEAK_FLOOR_PCT) / 100;
	double *buf = malloc((n + 1) * sizeof(*buf));
	struct dg_weak_region cur = {0};
	double bytes = 0, secs = 0, esecs = 0;
	bool open = false;
	int rc = 0;

	if (!buf || isnan(sig)) {
		free(buf);
		return -ENOMEM;
	}
	for (size_t i = 0; i <= p->nsamples && !rc; i++) {
		const struct dg_pr_sample *s = i < p->nsamples ? &p->samples[i] : NULL;
		const char *against = NULL;
		double expect = NAN;

		if (s) {
			const struct dg_pr_zone *z = dg_profile_zone_at(p, s->offset_bytes);
			double sib =
			    (baseline || n > 1) ? sibling_rate(pp, n, k, baseline, s, buf) : NAN;

			if (!isnan(sib) && s->mb_per_s < sib * (1 - thr)) {
				against = baseline ? "baseline" : "siblings";
				expect = sib;
			} else if (z && s->offset_bytes + s->length_bytes <= z->end_bytes &&
				   s->mb_per_s < z->mb_per_s * (1 - thr)) {
				against = "zone";
				expect = z->mb_per_s;
			}
		}
		if (against && !open) {
			uint64_t prev_end =
			    i ? p->samples[i - 1].offset_bytes + p->samples[i - 1].length_bytes : 0;
			cur = (struct dg_weak_region){k, 0, 0, 0, 0, against};
			cur.start_bytes =
			    boundary_in(p, prev_end, s->offset_bytes, s->offset_bytes);
			bytes = secs = esecs = 0;
			open = true;
		}
		if (against) {
			bytes += (double)s->length_bytes;
			secs += (double)s->length_bytes / s->mb_per_s;
			esecs += (double)s->length_bytes / expect;
			cur.end_bytes = s->offset_bytes + s->length_bytes;
			continue;
		}
		if (open) {
			uint64_t next = s ? s->offset_bytes : p->size_bytes;

			cur.end_bytes = boundary_in(p, cur.end_bytes, next, cur.end_bytes);
			cur.mb_per_s = bytes / secs;
			cur.expected_mb_per_s = bytes / esecs;
			rc = push_weak(st, &cur);
			open = false;
		}
	}
	free(buf);
	return rc;
}

void dg_compare_free(struct dg_compare_result *r)
{
	if (!r)
		return;
	free(r->diffs);
	free(r->weak);
	free(r->stands_apart);
	free(r);
}

int dg_compare(const struct dg_profile_data *const *pp, size_t n,
	       const struct dg_profile_data *baseline, const struct dg_compare_params *prm,
	       struct dg_compare_result **out, char *err, size_t errlen)
{
	struct state st = {prm, calloc(1, sizeof(struct dg_compare_result)), 0, 0};
	struct dg_compare_result *r = st.r;
	const struct dg_profile_data *layout;
	struct fig *ref = NULL, *mine = NULL, *all = NULL;
	double *buf = NULL;
	size_t nf;
	int rc = -ENOMEM;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	if (n < 1 || (!baseline && n < 2)) {
		snprintf(err, errlen, "compare needs two profiles, or one and a --baseline");
		free(r);
		return -EINVAL;
	}
	r->nprofiles = n;
	r->has_baseline = baseline != NULL;
	r->reference = baseline ? "baseline" : n == 2 ? "first" : "median";
	layout = baseline ? baseline : pp[0];
	nf = nfigures(layout);
	r->stands_apart = calloc(n, sizeof(*r->stands_apart));
	ref = calloc(nf, sizeof(*ref));
	mine = calloc(nf, sizeof(*mine));
	all = calloc(nf * n, sizeof(*all));
	buf = calloc(n, sizeof(*buf));
	if (!r->stands_apart || !ref || !mine || !all || !buf)
		goto out;
	for (size_t k = 0; k < n; k++)
		if ((rc = extract(layout, pp[k], &all[k * nf])))
			goto out;
	if (baseline && (rc = extract(layout, baseline, ref)))
		goto out;
	if (!baseline && n == 2) {
		memcpy(ref, all, nf * sizeof(*ref));
	} else if (!baseline) {
		/* the fleet's median, figure by figure: with three or more drives one that stands
		 * apart does not move it */
		for (size_t f = 0; f < nf; f++) {
			size_t m = 0;

			ref[f] = all[f];
			for (size_t j = 0; j < n; j++)
				if (!isnan(all[j * nf + f].v))
					buf[m++] = all[j * nf + f].v;
			ref[f].v = dg_median(buf, m);
			m = 0;
			for (size_t j = 0; j < n; j++)
				if (!isnan(all[j * nf + f].v))
					buf[m++] = all[j * nf + f].noise;
			ref[f].noise = dg_median(buf, m);
		}
	}
	for (size_t k = baseline || n > 2 ? 0 : 1; k < n; k++) {
		for (size_t f = 0; f < nf; f++)
			if ((rc = push_diff(&st, k, &ref[f], &all[k * nf + f])))
				goto out;
	}
	for (size_t k = 0; k < n; k++)
		if ((rc = weak_regions(&st, pp, n, k, baseline)))
			goto out;
	for (size_t i = 0; i < r->ndiffs; i++)
		if (r->diffs[i].beyond_tolerance)
			r->stands_apart[r->diffs[i].profile] = r->differs = true;
	for (size_t i = 0; i < r->nweak; i++) {
		r->differs = true;
		if (strcmp(r->weak[i].against, "zone"))
			r->stands_apart[r->weak[i].profile] = true;
	}
	rc = 0;
out:
	free(ref);
	free(mine);
	free(all);
	free(buf);
	if (rc) {
		dg_compare_free(r);
		if (rc == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		return rc;
	}
	*out = r;
	return 0;
}

static json_t *num(double v)
{
	return isfinite(v) ? json_real(round(v * 1e6) / 1e6) : json_null();
}

json_t *dg_compare_json(const struct dg_compare_result *r, const struct dg_profile_data *const *pp,
			const struct dg_profile_data *baseline, const struct dg_compare_params *prm)
{
	json_t *doc = json_object(), *profiles = json_array(), *diffs = json_array(),
	       *weak = json_array();
	int bad = !doc || !profiles || !diffs || !weak;

	for (size_t k = 0; !bad && k < r->nprofiles; k++) {
		const struct dg_profile_data *p = pp[k];
		json_t *dev = json_object(), *o = json_object();

		bad |= !dev || !o;
		if (!bad && p->model)
			bad |= json_object_set_new(dev, "model", json_string(p->model));
		if (!bad && p->serial)
			bad |= json_object_set_new(dev, "serial", json_string(p->serial));
		if (bad) {
			json_decref(dev);
			json_decref(o);
			break;
		}
		/* each call steals its value even when it fails: no short cut, no leak */
		bad |= json_object_set_new(o, "device", dev);
		bad |= json_object_set_new(o, "path", json_string(p->path));
		bad |= json_object_set_new(o, "stands_apart", json_boolean(r->stands_apart[k]));
		bad |= json_array_append_new(profiles, o);
	}
	for (size_t i = 0; !bad && i < r->ndiffs; i++) {
		const struct dg_compare_diff *d = &r->diffs[i];
		json_t *o = json_pack("{s:s,s:I,s:o,s:o,s:o,s:o,s:b,s:b}", "figure", d->figure,
				      "profile", (json_int_t)d->profile, "a", num(d->a), "b",
				      num(d->b), "delta_percent", num(d->delta_percent),
				      "noise_percent", num(d->noise_percent), "significant",
				      d->significant, "beyond_tolerance", d->beyond_tolerance);
		bad |= !o;
		if (!bad && d->detail[0])
			bad |= json_object_set_new(o, "detail", json_string(d->detail));
		if (!bad && d->end_bytes)
			bad |= json_object_set_new(o, "start_bytes",
						   json_integer((json_int_t)d->start_bytes)) |
			       json_object_set_new(o, "end_bytes",
						   json_integer((json_int_t)d->end_bytes));
		if (bad) {
			json_decref(o);
			break;
		}
		bad |= json_array_append_new(diffs, o);
	}
	for (size_t i = 0; !bad && i < r->nweak; i++) {
		const struct dg_weak_region *w = &r->weak[i];

		bad |= json_array_append_new(
		    weak,
		    json_pack("{s:I,s:s,s:I,s:I,s:o,s:o,s:s}", "profile", (json_int_t)w->profile,
			      "path", pp[w->profile]->path, "start_bytes",
			      (json_int_t)w->start_bytes, "end_bytes", (json_int_t)w->end_bytes,
			      "mb_per_s", num(w->mb_per_s), "expected_mb_per_s",
			      num(w->expected_mb_per_s), "against", w->against));
	}
	if (!bad)
		bad |= json_object_set_new(doc, "schema", json_string(DG_COMPARE_SCHEMA)) ||
		       json_object_set_new(
			   doc, "tool",
			   json_pack("{s:s,s:s}", "name", "diskgeo", "version", DG_VERSION)) ||
		       json_object_set_new(doc, "reference", json_string(r->reference)) ||
		       json_object_set_new(doc, "tolerance_percent",
					   json_real(prm->tolerance_percent)) ||
		       json_object_set_new(doc, "sigmas", json_real(prm->sigmas)) ||
		       json_object_set_new(doc, "differs", json_boolean(r->differs));
	if (!bad && baseline)
		bad |= json_object_set_new(doc, "baseline", json_string(baseline->path));
	if (!bad) {
		bad |= json_object_set_new(doc, "profiles", profiles);
		profiles = NULL;
		bad |= json_object_set_new(doc, "differences", diffs);
		diffs = NULL;
		bad |= json_object_set_new(doc, "weak_regions", weak);
		weak = NULL;
	}
	json_decref(profiles);
	json_decref(diffs);
	json_decref(weak);
	if (bad) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}
