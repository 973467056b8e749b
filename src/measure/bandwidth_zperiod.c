/* SPDX-License-Identifier: MIT */
/*
 * Zones of a per-surface serpentine curve whose zones are shorter than one band group: each zone
 * is then H runs, head 0's first, each run the same time (the zone's cylinders, one revolution
 * each) at its surface's rate (drive-spec.md, per-surface formats). The curve repeats a pattern
 * with the zone as its period, in the zone's own byte phase, scaled by each zone's rate; where
 * the zones hold one number of cylinders each zone takes the same time. So the zones are first
 * fitted as a period in time from the outer edge: for each count of zones and a fine grid of
 * periods, each sample's zone and phase, and a two-way fit ln rate = zone level + pattern(phase)
 * (a period by least squares against a repeated pattern, as an average magnitude difference
 * function searches it: Ross et al. 1974, "Average magnitude difference function pitch
 * extractor"). The fit places a boundary to within about half a surface run only, so none is
 * published from it: a chain of refining samples from the inner end finds each one where the
 * run order starts over (the last head's run of one zone, then head 0's of the next): the last
 * zone ends at the range's end, and each boundary is looked for where the one after it and the
 * zones' fitted lengths put it, inside half a pattern bin (less than half a run, so one run edge
 * at most), its two runs reading as the link before predicts. A link that cannot tell its two
 * runs apart is left out, and the chain ends after a few of them in a row.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bandwidth_zones_priv.h"
#include "util.h"

#define ZP_BINS	       24u  /* pattern bins per zone */
#define ZP_ITERS       8u   /* rounds of the two-way fit */
#define ZP_MAX_ZONES   200u /* zone counts tried, at most */
#define ZP_MIN_PER     4u   /* samples per zone, at least, on average */
#define ZP_MIN_N       64u  /* curve samples needed */
#define ZP_WINDOW      10u  /* running mean of ln rate over +-this many samples */
#define ZP_GRID	       10   /* period grid: +-this many steps of ZP_GRID_STEP around total/N */
#define ZP_GRID_STEP   0.002
#define ZP_MAX_MULT    3u  /* the best period / this many (and fewer) tried too ... */
#define ZP_MULT_SAME   1.5 /* ... and taken at this x the best's residual variance */
#define ZP_FINE	       10  /* then +-this many steps of ZP_FINE_STEP, zone rates from the fit */
#define ZP_FINE_STEP   0.0005
#define ZP_ROUNDS      4u
#define ZP_EXPLAIN     0.75  /* the fit's residual at most this x the curve's own scatter */
#define ZP_MIN_STEP    0.012 /* a placed boundary is kept where the fitted step is this */
#define ZP_TELL_SIGMA  4.0   /* the two runs either side differ by this x a sample's noise */
#define ZP_REACH_BINS  0.5   /* the bracket: this many bins either side of the fitted boundary */
#define ZP_MATCH_SIGMA 4.0   /* a run's rate read within this x noise ... */
#define ZP_LEVEL_ERR   0.012 /* ... or this (ln): the fitted levels' error between two zones */
#define ZP_SMOOTH      3u    /* boundaries each side whose fitted steps are averaged */
#define ZP_BASE_ERR    0.02  /* pb's error where no link before it was placed (ln) */
#define ZP_CHAIN_ERR   0.02  /* pa's and pb's error from the link before (ln), per link */
#define ZP_MISSES      2u    /* links in a row not placed that end the chain */
#define ZP_SCAN	       5u    /* the first link: this many samples either side of the fit's */
#define ZP_STRADDLE    0.01  /* a refining sample across the boundary may read this much slower */
#define ZP_PAIR_BETTER 0.5   /* the scan's best pair costs at most this x the next best */
#define ZP_THIRD       0.008 /* a refining sample beyond both runs by this (ln) reads a third */
#define ZP_MAX_READS   12u   /* refining samples per boundary, at most */

struct zfit {
	size_t n;	   /* usable samples */
	double *x, *y;	   /* centre (bytes) and ln rate of each */
	double *rm;	   /* running mean rate (MB/s) at each */
	double start, end; /* the range */
	double *B;	   /* boundaries: B[0] = start .. B[nz] = end */
	size_t nz;
	double *a, g[ZP_BINS];
	size_t *k, *bin;
	double rss;
};

/* The rate of the bytes at x: the running mean (fitted levels NULL) or the zone's fitted level. */
static double rate_at(const struct zfit *f, const double *B, const double *a, size_t nz, double x)
{
	size_t lo = 0, hi;

	if (a) {
		hi = nz;
		while (hi - lo > 1) {
			size_t m = (lo + hi) / 2;

			if (B[m] <= x)
				lo = m;
			else
				hi = m;
		}
		return exp(a[lo]);
	}
	hi = f->n;
	while (hi - lo > 1) {
		size_t m = (lo + hi) / 2;

		if (f->x[m] <= x)
			lo = m;
		else
			hi = m;
	}
	return f->rm[lo];
}

/* Boundaries of zones that each take P seconds at the rate rate_at gives; their count (0: more
 * than ZP_MAX_ZONES). A last piece under a third of a zone joins the one before. */
static size_t zones_of(const struct zfit *f, const double *Bp, const double *ap, size_t nzp,
		       double P, double *B)
{
	size_t nz = 0;

	B[0] = f->start;
	while (B[nz] < f->end - 1) {
		double L = P * rate_at(f, Bp, ap, nzp, B[nz]) * 1e6;

		L = P * rate_at(f, Bp, ap, nzp, B[nz] + L / 2) * 1e6;
		if (nz + 1 > ZP_MAX_ZONES || !(L > 0))
			return 0;
		B[nz + 1] = fmin(f->end, B[nz] + L);
		nz++;
	}
	if (nz >= 2 && B[nz] - B[nz - 1] < (B[nz - 1] - B[nz - 2]) / 3) {
		B[nz - 1] = f->end;
		nz--;
	}
	return nz;
}

/* The two-way fit ln rate = a[zone] + g[bin] for boundaries B (nz zones): f->a, g, rss. */
static double fit(struct zfit *f, const double *B, size_t nz)
{
	size_t j = 0, cnt[ZP_BINS];
	double *a = f->a, rss = 0;

	for (size_t i = 0; i < f->n; i++) {
		double ph;

		while (j + 1 < nz && f->x[i] >= B[j + 1])
			j++;
		ph = (f->x[i] - B[j]) / (B[j + 1] - B[j]);
		f->k[i] = j;
		f->bin[i] = ph <= 0 ? 0 : ph >= 1 ? ZP_BINS - 1 : (size_t)(ph * ZP_BINS);
	}
	memset(f->g, 0, sizeof(f->g));
	for (unsigned it = 0; it < ZP_ITERS; it++) {
		double m = 0;

		memset(cnt, 0, sizeof(cnt));
		for (size_t z = 0; z < nz; z++)
			a[z] = 0;
		for (size_t i = 0; i < f->n; i++)
			a[f->k[i]] += f->y[i] - f->g[f->bin[i]];
		for (size_t z = 0, i = 0; z < nz; z++) {
			size_t c = 0;

			while (i < f->n && f->k[i] == z) {
				c++;
				i++;
			}
			a[z] = c ? a[z] / (double)c : z ? a[z - 1] : 0;
		}
		memset(f->g, 0, sizeof(f->g));
		for (size_t i = 0; i < f->n; i++) {
			f->g[f->bin[i]] += f->y[i] - a[f->k[i]];
			cnt[f->bin[i]]++;
		}
		for (size_t q = 0; q < ZP_BINS; q++) {
			f->g[q] = cnt[q] ? f->g[q] / (double)cnt[q] : 0;
			m += f->g[q];
		}
		for (size_t q = 0; q < ZP_BINS; q++)
			f->g[q] -= m / ZP_BINS;
	}
	for (size_t i = 0; i < f->n; i++) {
		double e = f->y[i] - a[f->k[i]] - f->g[f->bin[i]];

		rss += e * e;
	}
	return rss;
}

/* Residual variance per degree of freedom of the fit for boundaries B (HUGE_VAL: too few). */
static double score(struct zfit *f, const double *B, size_t nz)
{
	double dof = (double)f->n - (double)nz - ZP_BINS;

	if (nz < 2 || dof < 20 || f->n < ZP_MIN_PER * nz)
		return HUGE_VAL;
	return fit(f, B, nz) / dof;
}

/* The best period: zone counts 2.. with a grid about total time / count, then a fine grid with
 * the zones' fitted rates. f->B, nz and the fit; the residual variance. */
static double best_period(struct zfit *f, double *tmp)
{
	double T = 0, best = HUGE_VAL, P = 0;
	size_t nz;

	for (size_t i = 0; i < f->n; i++) {
		double lo = i ? (f->x[i - 1] + f->x[i]) / 2 : f->start;
		double hi = i + 1 < f->n ? (f->x[i] + f->x[i + 1]) / 2 : f->end;

		T += (hi - lo) / f->rm[i] / 1e6;
	}
	for (size_t N = 2; N <= ZP_MAX_ZONES && N * ZP_MIN_PER <= f->n; N++)
		for (int d = -ZP_GRID; d <= ZP_GRID; d++) {
			double p = T / (double)N * (1 + d * ZP_GRID_STEP), s;

			nz = zones_of(f, NULL, NULL, 0, p, tmp);
			s = nz ? score(f, tmp, nz) : HUGE_VAL;
			if (s < best) {
				best = s;
				P = p;
			}
		}
	if (!(best < HUGE_VAL))
		return best;
	/* a pattern of two zones (or three) repeats too: the shortest period that fits about as
	 * well is the zone's */
	for (unsigned m = ZP_MAX_MULT; m >= 2; m--) {
		double bm = HUGE_VAL, pm = 0;

		for (int d = -ZP_GRID; d <= ZP_GRID; d++) {
			double p = P / m * (1 + d * ZP_GRID_STEP), s;

			nz = zones_of(f, NULL, NULL, 0, p, tmp);
			s = nz ? score(f, tmp, nz) : HUGE_VAL;
			if (s < bm) {
				bm = s;
				pm = p;
			}
		}
		if (bm <= ZP_MULT_SAME * best) {
			P = pm;
			break;
		}
	}
	f->nz = zones_of(f, NULL, NULL, 0, P, f->B);
	for (unsigned round = 0; round < ZP_ROUNDS; round++) {
		double a[ZP_MAX_ZONES + 1], Bp[ZP_MAX_ZONES + 2], p0 = P;
		size_t nzp = f->nz;

		score(f, f->B, f->nz);
		memcpy(a, f->a, nzp * sizeof(*a));
		memcpy(Bp, f->B, (nzp + 1) * sizeof(*Bp));
		best = HUGE_VAL;
		for (int d = -ZP_FINE; d <= ZP_FINE; d++) {
			double p = p0 * (1 + d * ZP_FINE_STEP), s;

			nz = zones_of(f, Bp, a, nzp, p, tmp);
			s = nz ? score(f, tmp, nz) : HUGE_VAL;
			if (s < best) {
				best = s;
				P = p;
			}
		}
		f->nz = zones_of(f, Bp, a, nzp, P, f->B);
		if (!f->nz)
			return HUGE_VAL;
	}
	return score(f, f->B, f->nz);
}

/* The samples' scatter about their running mean (variance of ln rate). */
static double scatter(const struct zfit *f)
{
	double s = 0;

	for (size_t i = 0; i < f->n; i++) {
		double e = f->y[i] - log(f->rm[i]);

		s += e * e;
	}
	return s / (double)(f->n - 1);
}

/* Whether the fitted levels fall at (nearly) every boundary, as zones do: a period that is
 * some other run of the surfaces (a band group inside longer zones) falls only at some. */
static bool steps_everywhere(const struct zfit *f)
{
	double d[ZP_MAX_ZONES];

	for (size_t z = 1; z < f->nz; z++)
		d[z - 1] = f->a[z - 1] - f->a[z];
	return dg_median(d, f->nz - 1) >= MIN_STEP;
}

/* The fitted step at boundary z (zone z-1 to z, ln), averaged over ZP_SMOOTH boundaries either
 * side: a zone's level is the mean of a few samples of many surfaces; steps change slowly. */
static double smooth_step(const struct zfit *f, size_t z)
{
	size_t lo = z > ZP_SMOOTH ? z - ZP_SMOOTH : 1;
	size_t hi = z + ZP_SMOOTH < f->nz ? z + ZP_SMOOTH : f->nz - 1;

	return (f->a[lo - 1] - f->a[hi]) / (double)(hi - lo + 1);
}

/* One link of the chain: the time limit, the two runs' rates it expects (ln), its noise. */
struct zlink {
	uint64_t limit;
	double pa, pb;	       /* the zone's last run, the next zone's first (ln MB/s) */
	double pa_err, pb_err; /* their errors (ln) */
	double sigma, tol;
};

/* Whether the run must stop looking: asked to, or the device time is spent. */
static bool out_of_time(const struct ctx *c, const struct zlink *k)
{
	return dg_engine_device_time_ns(c->e) - c->dev0_ns > k->limit || bw_stopped(c);
}

/* Whether ln rate x reads as the expected ln rate p of the zone's last run: within the noise or
 * the prediction's own error. */
static bool reads_as(const struct zlink *k, double x, double p)
{
	return fabs(x - p) <= fmax(ZP_MATCH_SIGMA * k->sigma, k->pa_err);
}

/*
 * Bisects one zone boundary expected at `at`, inside [at - w, at + w] (w under half a surface
 * run: the bracket holds one run edge at most). Its ends are read first: the left one must read
 * as the zone's last run (k->pa), the right one as the next zone's first (k->pb) and the two
 * must differ by ZP_TELL_SIGMA noises. Then each refining sample must read one of the two or
 * between (a third rate: the bracket is not what it seemed) and narrows it. *placed with b's
 * bracket and its runs' measured rates in b->ra, b->rb. 0, -ENOMEM or the engine's -errno.
 */
static int link_place(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, double at,
		      double w, const struct zlink *k, struct boundary *b, bool *placed)
{
	uint64_t span = c->p.sample_bytes;
	double rate[2];
	struct meas m;
	int rc;

	*placed = false;
	if (w < (double)span)
		return 0;
	for (int e = 0; e < 2; e++) {
		if (out_of_time(c, k))
			return 0;
		rc = bw_refine_sample(c, r, cap, (uint64_t)(e ? at + w : at - w), span, &m);
		if (rc || !m.ok)
			return rc;
		rate[e] = log(m.mb_per_s);
	}
	/* one run read at both ends (the next zone's first run reads as this one's last, or the
	 * edge is elsewhere): nothing to place. Never moved: a run edge further off is another
	 * surface's. */
	if (fabs(rate[0] - rate[1]) < ZP_TELL_SIGMA * k->sigma)
		return 0;
	if (!reads_as(k, rate[0], k->pa) ||
	    (!isnan(k->pb) && fabs(rate[1] - k->pb) > fmax(ZP_MATCH_SIGMA * k->sigma, k->pb_err)) ||
	    (!isnan(k->pb) && fabs(k->pa - k->pb) > k->pb_err &&
	     (rate[0] - rate[1]) * (k->pa - k->pb) < 0))
		return 0;
	b->ra = exp(rate[0]);
	b->rb = exp(rate[1]);
	b->lo = (uint64_t)(at - w);
	b->hi = (uint64_t)(at + w);
	for (unsigned i = 0; i < ZP_MAX_READS && (double)(b->hi - b->lo) > k->tol; i++) {
		double x, lo, hi;

		if (out_of_time(c, k))
			return 0;
		rc = bw_refine_sample(c, r, cap, bw_bracket_mid(b), span, &m);
		if (rc || !m.ok)
			return rc;
		x = log(m.mb_per_s);
		/* one across the zone change may have waited for the new zone's first sector */
		lo = fmin(rate[0], rate[1]) - fmax(ZP_MATCH_SIGMA * k->sigma, ZP_THIRD) -
		     ZP_STRADDLE;
		hi = fmax(rate[0], rate[1]) + fmax(ZP_MATCH_SIGMA * k->sigma, ZP_THIRD);
		if (x < lo || x > hi)
			return 0; /* a third run inside the bracket */
		bw_narrow(b, m.off, m.len, m.mb_per_s);
	}
	*placed = (double)(b->hi - b->lo) <= k->tol;
	return 0;
}

/*
 * The chain's first link, where nothing measured yet says where it lies within the fit's error:
 * 2 ZP_SCAN + 1 samples w apart about the fit's boundary; the one pair of neighbours that reads
 * as the zone's last run then the next zone's first (k->pa, k->pb) brackets it, and
 * link_place bisects it from its middle. Two such pairs or none: nothing placed.
 */
static int link_first(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, double at,
		      double w, const struct zlink *k, struct boundary *b, bool *placed)
{
	double x[2 * ZP_SCAN + 1];
	double best = HUGE_VAL, second = HUGE_VAL;
	size_t at_j = 0;
	struct meas m;
	int rc;

	*placed = false;
	if (w < 2.0 * (double)c->p.sample_bytes)
		return 0;
	for (int j = -(int)ZP_SCAN; j <= (int)ZP_SCAN; j++) {
		if (out_of_time(c, k))
			return 0;
		rc = bw_refine_sample(c, r, cap, (uint64_t)(at + j * w), c->p.sample_bytes, &m);
		if (rc)
			return rc;
		x[j + ZP_SCAN] = m.ok ? log(m.mb_per_s) : NAN;
	}
	for (size_t j = 0; j < 2 * ZP_SCAN; j++) {
		double cost = fabs(x[j] - k->pa) + fabs(x[j + 1] - k->pb);

		if (!(reads_as(k, x[j], k->pa) &&
		      fabs(x[j + 1] - k->pb) <= fmax(ZP_MATCH_SIGMA * k->sigma, k->pb_err) &&
		      fabs(x[j] - x[j + 1]) >= ZP_TELL_SIGMA * k->sigma))
			continue;
		if (cost < best) {
			second = best;
			best = cost;
			at_j = j;
		} else if (cost < second) {
			second = cost;
		}
	}
	/* one pair that reads as the two runs, far better than any other */
	if (!(best < HUGE_VAL) || best > ZP_PAIR_BETTER * second)
		return 0;
	return link_place(c, r, cap, at + ((double)at_j - ZP_SCAN + 0.5) * w, w / 2, k, b, placed);
}

/* The boundaries bisection placed become cv's segments and boundaries (placed, nothing left to
 * refine: their sides read surfaces, not zones). */
static int apply(struct curve *cv, struct boundary *bs, size_t nb)
{
	cv->capb = nb ? nb : 1;
	cv->bs = calloc(cv->capb, sizeof(*cv->bs));
	if (!cv->bs)
		return -ENOMEM;
	memcpy(cv->bs, bs, nb * sizeof(*bs));
	cv->nb = nb;
	cv->nseg = nb + 1;
	bw_curve_ends(cv);
	bw_near_lens(cv);
	cv->surf = (struct levels){.n = 1};
	cv->by_runs = true;
	return 0;
}

/* The curve's usable samples and their running mean into f (its arrays for n samples, freed by
 * zfit_free), and the best period fitted: whether it explains the curve (fit under ZP_EXPLAIN of
 * the curve's scatter, 3 zones or more, a step at most boundaries). 0 or -ENOMEM. */
static int fit_curve(const struct curve *cv, size_t n, struct zfit *f, bool *ok)
{
	double *tmp = malloc((ZP_MAX_ZONES + 2) * sizeof(*tmp)), s2;

	*ok = false;
	f->x = malloc(n * sizeof(*f->x));
	f->y = malloc(n * sizeof(*f->y));
	f->rm = malloc(n * sizeof(*f->rm));
	f->k = malloc(n * sizeof(*f->k));
	f->bin = malloc(n * sizeof(*f->bin));
	f->a = malloc((ZP_MAX_ZONES + 1) * sizeof(*f->a));
	f->B = malloc((ZP_MAX_ZONES + 2) * sizeof(*f->B));
	if (!tmp || !f->x || !f->y || !f->rm || !f->k || !f->bin || !f->a || !f->B) {
		free(tmp);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cv->n; i++) {
		if (cv->excl[i] || cv->v[i].refine)
			continue;
		f->x[f->n] = (double)cv->v[i].offset_bytes + (double)cv->v[i].length_bytes / 2;
		f->y[f->n++] = log(cv->v[i].mb_per_s);
	}
	if (f->n < ZP_MIN_N) {
		free(tmp);
		return 0;
	}
	for (size_t i = 0; i < f->n; i++) {
		size_t lo = i > ZP_WINDOW ? i - ZP_WINDOW : 0;
		size_t hi = i + ZP_WINDOW + 1 < f->n ? i + ZP_WINDOW + 1 : f->n;
		double sum = 0;

		for (size_t j = lo; j < hi; j++)
			sum += f->y[j];
		f->rm[i] = exp(sum / (double)(hi - lo));
	}
	s2 = best_period(f, tmp);
	free(tmp);
	*ok = s2 < ZP_EXPLAIN * ZP_EXPLAIN * scatter(f) && f->nz >= 3 && steps_everywhere(f);
	return 0;
}

static void zfit_free(struct zfit *f)
{
	free(f->x);
	free(f->y);
	free(f->rm);
	free(f->k);
	free(f->bin);
	free(f->a);
	free(f->B);
}

/*
 * A chain from the end: head 0's run starts zone 0 and the last head's run ends the last zone
 * (their rates, scaled by the zones' fitted levels, are the first link's runs'); each boundary is
 * looked for where the one after it and the zones' fitted lengths put it (a zone's length goes
 * with its rate: every zone takes the same time), within half a bin; a link that fails ends the
 * chain (the next would be a guess). The links into bs[0..*nb), backwards, their zones into zof;
 * *nb stays 0 when the range's ends cannot be read. 0 or the engine's -errno.
 */
static int walk_chain(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap,
		      const struct curve *cv, const struct zfit *f, struct boundary *bs,
		      size_t *zof, size_t *nb)
{
	double edge[2], len, at, prev, da = 0, db = 0;
	struct zlink k = {0};
	struct meas m;
	int rc = 0;

	*nb = 0;
	k.sigma = fmax(cv->noise, NOISE_FLOOR);
	k.limit = (uint64_t)(REFINE_TOTAL * (double)c->p.time_budget_ns);
	c->phase = "zones";
	for (int e = 0; e < 2; e++) {
		uint64_t mid = e ? c->p.range_end_bytes - c->p.sample_bytes / 2 - c->align
				 : c->p.range_start_bytes + c->p.sample_bytes / 2;

		rc = bw_refine_sample(c, r, cap, mid, c->p.sample_bytes, &m);
		if (rc || !m.ok)
			return rc;
		edge[e] = log(m.mb_per_s);
	}
	k.pa = edge[1] + smooth_step(f, f->nz - 1);
	k.pb = edge[0] + f->a[f->nz - 1] - f->a[0];
	k.pa_err = ZP_LEVEL_ERR;
	k.pb_err = ZP_BASE_ERR;
	at = f->B[f->nz - 1];
	len = f->end - at;
	prev = f->end;
	for (size_t z = f->nz - 1, misses = 0; z >= 1 && !rc; z--) {
		struct boundary *b = &bs[*nb];
		double w = ZP_REACH_BINS * fmin(f->B[z] - f->B[z - 1], len) / ZP_BINS;
		bool placed;

		k.tol = REFINE_TARGET * fmin(f->B[z] - f->B[z - 1], len);
		if (*nb)
			rc = link_place(c, r, cap, at, w, &k, b, &placed);
		else
			rc = link_first(c, r, cap, at, w, &k, b, &placed);
		if (rc || z < 2)
			break;
		if (placed) {
			b->placed = true;
			b->step = 0; /* nothing left to bisect */
			b->span = 0;
			b->sigma = k.sigma;
			/* the steps from the links themselves when the one after was placed too */
			if (*nb && zof[*nb - 1] == z + 1) {
				da = log(b->ra / bs[*nb - 1].ra);
				db = log(b->rb / bs[*nb - 1].rb);
			} else {
				da = smooth_step(f, z - 1);
				db = smooth_step(f, z);
			}
			zof[(*nb)++] = z;
			k.pa = log(b->ra);
			k.pb = log(b->rb);
			/* zone z's length as measured, when the link after it was placed too */
			if (misses == 0)
				len = prev - (double)bw_bracket_mid(b);
			at = (double)bw_bracket_mid(b);
			misses = 0;
		} else if (++misses > ZP_MISSES || !*nb) {
			break; /* the chain's predictions are only guesses now */
		}
		/* the next link back: zone z-1 ends here, its length from zone z's by their rates
		 * (each zone takes the same time); after a link not placed, from where it was
		 * expected, with wider errors */
		prev = at;
		len *= exp(smooth_step(f, z));
		at -= len;
		k.pa += da;
		k.pb += db;
		k.pa_err = k.pb_err = ZP_CHAIN_ERR * (double)(1 + misses);
	}
	return rc;
}

/* The links kept, in order of offset into `out` (the chain ran backwards): only links placed
 * next to each other (the zone between them then has the length the chain expects; a band
 * group's own restart inside a longer zone reads like a zone's, but the zone from it does not),
 * and not where the fit shows the step too small. How many. */
static size_t keep_linked(const struct zfit *f, const struct boundary *bs, const size_t *zof,
			  size_t nb, struct boundary *out)
{
	size_t keep = 0;

	for (size_t s = nb; s-- > 0;) {
		size_t z = zof[s];

		if (!(s > 0 && zof[s - 1] == z + 1) && !(s + 1 < nb && zof[s + 1] == z - 1))
			continue;
		if (smooth_step(f, z) >= ZP_MIN_STEP || f->a[z - 1] - f->a[z] >= ZP_MIN_STEP)
			out[keep++] = bs[s];
	}
	return keep;
}

int bw_period_zones(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct curve *cv,
		    bool *taken)
{
	struct zfit f = {.start = (double)c->p.range_start_bytes,
			 .end = (double)c->p.range_end_bytes};
	struct boundary *bs = NULL, *ordered = NULL;
	size_t *zof = NULL, nb = 0;
	bool ok;
	int rc = 0;

	*taken = false;
	/* the anchor: the last zone ends at the range's end only on a whole device; placing needs
	 * refining samples and a complete curve */
	if (c->p.range_start_bytes != 0 || c->p.range_end_bytes != c->info->size_bytes ||
	    !c->p.refine || !r->complete)
		return 0;
	rc = fit_curve(cv, cv->n ? cv->n : 1, &f, &ok);
	if (rc || !ok)
		goto out;
	bs = calloc(f.nz, sizeof(*bs));
	zof = malloc(f.nz * sizeof(*zof));
	ordered = malloc(f.nz * sizeof(*ordered));
	if (!bs || !zof || !ordered) {
		rc = -ENOMEM;
		goto out;
	}
	rc = walk_chain(c, r, cap, cv, &f, bs, zof, &nb);
	if (!rc && nb)
		nb = keep_linked(&f, bs, zof, nb, ordered);
	if (!rc && nb) {
		rc = apply(cv, ordered, nb);
		*taken = !rc;
	}
out:
	free(zof);
	free(ordered);
	free(bs);
	zfit_free(&f);
	return rc;
}
