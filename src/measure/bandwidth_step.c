/* SPDX-License-Identifier: MIT */
/*
 * Whether a refined zone boundary is a step the samples show: a jump between two flat runs of
 * samples, not a cut through a slope or through a zone whose rate lies between the two sides'
 * (where the segments the fit merged from several small steps meet, bisection classes by a rate
 * that may be no zone's and converges anywhere). The runs are the usable samples nearest the
 * boundary on each side, curve and refining alike; their jump must be most of the boundary's
 * step, stand out by Welch's t from the runs' own spread, and leave the runs apart (no sample
 * of one side reads like the other side's). Where the samples nearest the cut on either side
 * read one level between the sides' rates, the bracket holds that level, and the bisection
 * starts over against it. Once refinement is over, a small step placed so must also stand
 * against its sides' whole zones (bw_step_stands): a sample's rate moves with how many track
 * switches its fitted reads hold (zoo 110: 28 or 29, 0.97% of the time end to end; one zone's
 * samples read 93.0 or down to 91.7 MB/s by where in a track they start), and the three nearest
 * the cut on each side can all fall on one side of that scatter.
 * (The runs' difference judged by Welch's t with unequal variances: Welch 1947.)
 */
#include <math.h>

#include "bandwidth_zones_priv.h"
#include "util.h"

#define RUN_SAMPLES 3	 /* samples of each side's run, nearest first */
#define RUN_MIN	    2	 /* ... of which at least this many */
#define STEP_T	    4.0	 /* the runs' jump in standard errors (Welch) */
#define RESTART_T   6.0	 /* ... once bisection started over (the samples chose where it went) */
#define JUMP_SHARE  0.75 /* ... and this share of the boundary's step at least */

/* One side's run: ln rates of the samples nearest the cut. */
struct run {
	double x[RUN_SAMPLES], dist[RUN_SAMPLES], var[RUN_SAMPLES];
	size_t n;
};

/* Adds a sample of ln rate x at distance d from the cut to the run, keeping the nearest. */
static void run_add(struct run *u, double x, double d, double var)
{
	size_t at = u->n < RUN_SAMPLES ? u->n++ : RUN_SAMPLES;

	if (at == RUN_SAMPLES) {
		at = RUN_SAMPLES - 1;
		if (d >= u->dist[at])
			return;
	}
	while (at > 0 && u->dist[at - 1] > d) {
		u->x[at] = u->x[at - 1];
		u->dist[at] = u->dist[at - 1];
		u->var[at] = u->var[at - 1];
		at--;
	}
	u->x[at] = x;
	u->dist[at] = d;
	u->var[at] = var;
}

/* A run's mean, the variance of that mean (from the run's spread, never below what its samples'
 * own noise gives), and its lowest and highest values. `weighted`: each sample weighted by its
 * own noise (inverse-variance weights, Aitken 1935), so that the curve's noisier samples next to
 * a must-find step's larger refining ones do not drown them (zoo 68: two hidden steps of 2.1 and
 * 2.2%, placed within 0.25% of their zones, stood at 3.8 and 4.0 standard errors by the plain
 * spread); a smaller step keeps the plain mean, with which its wider brackets are judged (zoo
 * 31). With equal noise both are the plain mean and spread. */
static void run_stats(const struct run *u, bool weighted, double *mean, double *var, double *lo,
		      double *hi)
{
	double s = 0, ss = 0, w = 0, own = 0, n = (double)u->n;

	*lo = INFINITY;
	*hi = -INFINITY;
	for (size_t i = 0; i < u->n; i++) {
		double wi = weighted ? 1 / u->var[i] : 1;

		s += u->x[i] * wi;
		w += wi;
		own += u->var[i];
		*lo = fmin(*lo, u->x[i]);
		*hi = fmax(*hi, u->x[i]);
	}
	*mean = s / w;
	for (size_t i = 0; i < u->n; i++)
		ss += (u->x[i] - *mean) * (u->x[i] - *mean) * (weighted ? 1 / u->var[i] : 1);
	/* weighted: 1 / w is the mean's variance from the samples' own noise */
	*var = weighted ? fmax(u->n > 1 ? ss / w / (n - 1) : 0, 1 / w)
			: fmax(u->n > 1 ? ss / (n - 1) / n : 0, own / (n * n));
}

/* The runs either side of `cut`: usable samples within `reach` of it, wholly on one side but for
 * an eighth of their bytes (rates corrected for their surface level). */
static void runs_at(const struct ctx *c, const struct dg_bandwidth_result *r,
		    const struct levels *L, const struct boundary *b, uint64_t cut, uint64_t reach,
		    double noise, struct run *left, struct run *right)
{
	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &r->samples[i];
		uint64_t slack = s->length_bytes / 8, end = s->offset_bytes + s->length_bytes;
		double rate, sig = bw_noise_at(c, noise, s->length_bytes);

		if (s->excluded || s->stalls || !(s->mb_per_s > 0) ||
		    !bw_level_rate(L, b, s->mb_per_s, &rate))
			continue;
		if (end <= cut + slack) {
			uint64_t d = end < cut ? cut - end : 0;

			if (d < reach)
				run_add(left, log(rate), (double)d, sig * sig);
		} else if (s->offset_bytes + slack >= cut) {
			uint64_t d = s->offset_bytes > cut ? s->offset_bytes - cut : 0;

			if (d < reach)
				run_add(right, log(rate), (double)d, sig * sig);
		}
	}
}

bool bw_step_shown(const struct ctx *c, const struct dg_bandwidth_result *r, const struct levels *L,
		   const struct boundary *b, uint64_t reach, double noise, bool restarted,
		   double *level, double jump_out[2])
{
	uint64_t cut = bw_bracket_mid(b);
	struct run left = {0}, right = {0};
	double ml, vl, lol, hil, mr, vr, lor, hir, jump, sign = b->ra > b->rb ? 1 : -1;

	*level = 0;
	jump_out[0] = jump_out[1] = NAN;
	runs_at(c, r, L, b, cut, reach, noise, &left, &right);
	/* each run starts next to the cut: samples far off tell nothing of a step there */
	if (left.n < RUN_MIN || right.n < RUN_MIN || left.dist[0] > (double)reach / 4 ||
	    right.dist[0] > (double)reach / 4)
		return false;
	run_stats(&left, b->step >= KEEP_STEP, &ml, &vl, &lol, &hil);
	run_stats(&right, b->step >= KEEP_STEP, &mr, &vr, &lor, &hir);
	jump = sign * (ml - mr);
	jump_out[0] = jump;
	jump_out[1] = sqrt(vl + vr);
	/* apart: the side that should read faster reads faster in every sample */
	if (jump >= JUMP_SHARE * b->step &&
	    jump >= (restarted ? RESTART_T : STEP_T) * sqrt(vl + vr) &&
	    (sign > 0 ? lol > hir : lor > hil))
		return true;
	/* No jump where bisection ended: when the samples nearest it on either side read one
	 * level, it is the level there. */
	if (fabs(left.x[0] - right.x[0]) < b->step / 4)
		*level = exp((left.x[0] + right.x[0]) / 2);
	return false;
}

int bw_step_short_side(const struct ctx *c, const struct dg_bandwidth_result *r,
		       const struct levels *L, const struct boundary *b, uint64_t reach,
		       double noise)
{
	struct run left = {0}, right = {0};
	bool lok, rok;

	runs_at(c, r, L, b, bw_bracket_mid(b), reach, noise, &left, &right);
	lok = left.n >= RUN_MIN && left.dist[0] <= (double)reach / 4;
	rok = right.n >= RUN_MIN && right.dist[0] <= (double)reach / 4;
	return lok == rok ? 0 : lok ? 1 : -1;
}

/* A side's samples: the sum, sum of squares and count of their ln rates, and the sum of their
 * own noise's variances. */
struct side {
	double s, ss, own;
	size_t n;
};

/* The mean of a side and the variance of that mean: from the side's spread, never below what its
 * samples' own noise gives. */
static double side_mean(const struct side *u, double *var)
{
	double n = (double)u->n, m = u->s / n;

	*var = fmax(u->n > 1 ? (u->ss - n * m * m) / (n - 1) / n : 0, u->own / (n * n));
	return m;
}

bool bw_step_stands(const struct ctx *c, const struct dg_bandwidth_result *r,
		    const struct levels *L, const struct boundary *b, uint64_t from, uint64_t to,
		    double noise)
{
	uint64_t cut = bw_bracket_mid(b);
	struct side u[2] = {{0}};
	double ml, vl, mr, vr, jump;

	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &r->samples[i];
		uint64_t slack = s->length_bytes / 8, end = s->offset_bytes + s->length_bytes;
		double rate, sig = bw_noise_at(c, noise, s->length_bytes);
		struct side *v;

		if (s->excluded || s->stalls || !(s->mb_per_s > 0) || s->offset_bytes < from ||
		    end > to || !bw_level_rate(L, b, s->mb_per_s, &rate))
			continue;
		if (end <= cut + slack)
			v = &u[0];
		else if (s->offset_bytes + slack >= cut)
			v = &u[1];
		else
			continue;
		v->s += log(rate);
		v->ss += log(rate) * log(rate);
		v->own += sig * sig;
		v->n++;
	}
	if (u[0].n == 0 || u[1].n == 0)
		return false;
	ml = side_mean(&u[0], &vl);
	mr = side_mean(&u[1], &vr);
	jump = (b->ra > b->rb ? 1 : -1) * (ml - mr);
	return jump >= JUMP_SHARE * b->step && jump >= STEP_T * sqrt(vl + vr);
}

void bw_renarrow(const struct dg_bandwidth_result *r, const struct levels *L, struct boundary *b,
		 uint64_t lo, uint64_t hi)
{
	b->lo = lo;
	b->hi = hi;
	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &r->samples[i];
		double rate;

		if (s->excluded || s->stalls || !(s->mb_per_s > 0) ||
		    s->offset_bytes + s->length_bytes <= lo || s->offset_bytes >= hi ||
		    !bw_level_rate(L, b, s->mb_per_s, &rate))
			continue;
		bw_narrow(b, s->offset_bytes, s->length_bytes, rate);
	}
	if (b->lo > b->hi) {
		uint64_t t = b->lo;

		b->lo = b->hi;
		b->hi = t;
	}
}
