/* SPDX-License-Identifier: MIT */
/*
 * The seek curve's samples: the plan (how many start offsets per distance the budget holds, from
 * a cost model re-fitted to what the reads really cost) and one distance's measurement. Split out
 * of seek.c.
 *
 * A distance's start offsets x lie on a jittered grid over [0, capacity - D] (the truth is the
 * mean of move(x, x + D) over x uniform, drive-spec.md). On a serpentine drive the cylinders
 * between x and x + D swing with the band phase of both ends (a head's pass forward, the next
 * one back), so the moves at one distance spread over several ms and a dozen offsets can leave
 * the mean a few tenths of a ms off; no grid of a dozen phases averages that out. Where the
 * first samples of a distance at 1 % of the capacity or more spread that wide, more offsets are
 * measured on a fresh jittered grid until the standard error is a third of the allowance, paid
 * from a reserve of the curve's budget (stratified sampling with the samples allotted where the
 * spread is: Neyman 1934).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seek_priv.h"
#include "util.h"

#define CURVE_MAX_LEGS 8u
#define MAX_MOVES      8u /* failed samples re-measured elsewhere, per distance */
/* a sample whose interval stayed wider than this many times the width asked for is measured
 * again at a fresh place, for at most a quarter of a distance's samples, and only while the
 * budget holds every distance (fewer points cost the average more than a loose sample) */
#define UNSETTLED_WIDTHS 2.0
/* extra samples: a standard error of a third of the allowance; at most EXTRA_MAX times the
 * planned ones more */
#define EXTRA_STD_ERRORS 3.0
#define EXTRA_MAX	 3u
/* the planned samples' shares per distance (dist_weight) */
#define WEIGHT_SHORT  1.0
#define WEIGHT_MIN    0.5
#define WEIGHT_MAX    1.5
#define WEIGHT_TOL_MS 0.3

/* A count from a floating-point plan, clamped to [lo, hi]; NAN and negative plans give lo (a
 * float-to-integer conversion out of range is undefined behaviour). */
static unsigned count_in(double v, unsigned lo, unsigned hi)
{
	if (!(v >= (double)lo))
		return lo;
	if (v >= (double)hi)
		return hi;
	return (unsigned)v;
}

/* A first guess of seek(D) for planning: full (0.04 + 0.96 sqrt(D / C)), the shape of the
 * presets' curves within a few tens of percent. */
static double seek_guess(const struct dg_seek_result *r, uint64_t d)
{
	double full = isfinite(r->full_stroke_ms) ? r->full_stroke_ms : 10.0;

	return full * (0.04 + 0.96 * sqrt((double)d / (double)r->capacity_bytes));
}

/* The precision a distance's mean needs: 3 % or 0.2 ms (issue 5; 0.3 ms below 1 % of the
 * capacity, where the points only shape the fit's short end), with 3.5 standard errors of n
 * samples whose errors are uniform over the final interval. */
static double width_for(const struct dg_seek_result *r, uint64_t d, double seek_ms, unsigned n)
{
	double floor_ms = d >= r->capacity_bytes / 100 ? 0.2 : 0.3;
	double tol = 0.03 * seek_ms > floor_ms ? 0.03 * seek_ms : floor_ms;

	return tol / 3.5 * sqrt(12.0 * n);
}

/* Device time (ms) of one read at a seek of `seek_ms`: K0 + seek + half a turn on average. */
static double read_cost(const struct seek_ctx *s, double seek_ms)
{
	return s->k0_ms + seek_ms + (s->rotating ? s->period_ns / 2e6 : 0.0);
}

/* Device time (ms) of one sample at distance d: the jump from the previous one, the first
 * measured leg, the bisection's legs (each after a positioning read when d is short). */
double seek_sample_cost(const struct seek_ctx *s, const struct dg_seek_result *r, uint64_t d,
			unsigned n)
{
	double sg = seek_guess(r, d), legs = 1;
	uint64_t jump = (r->capacity_bytes - d) / (n ? n : 1);

	if (s->rotating) {
		legs = log2(s->period_ns / 1e6 / width_for(r, d, sg, n));
		if (legs < 1)
			legs = 1;
	}
	/* short distances: every leg is a positioning read and a measured read (a few reads tell
	 * nothing: another track, a cache hit); long ones measure both ways and pay more misses
	 * than half. Calibrated on the presets. */
	double reads = d < SEEK_STREAM_BYTES ? 1 + 2 * 1.1 * legs : 1 + 1.15 * legs;
	return read_cost(s, seek_guess(r, jump)) + reads * read_cost(s, sg);
}

/*
 * Keeps as many of dist[from..nd) as `avail_ms` of device time holds at SEEK_MIN_SAMPLES each (by
 * the cost model), spread evenly over them (the first and the last kept); moves the kept ones to
 * dist[from..) and returns their count (0 when not even one fits).
 */
static size_t thin_distances(const struct seek_ctx *s, const struct dg_seek_result *r,
			     uint64_t *dist, size_t from, size_t nd, double avail_ms)
{
	size_t have = nd - from;

	for (size_t k = have; k > 0; k--) {
		double cost = 0;
		for (size_t j = 0; j < k; j++) {
			size_t at = from + (k > 1 ? j * (have - 1) / (k - 1) : have - 1);
			cost +=
			    seek_sample_cost(s, r, dist[at], SEEK_MIN_SAMPLES) * SEEK_MIN_SAMPLES;
		}
		if (cost > avail_ms)
			continue;
		if (k < have)
			for (size_t j = 0; j < k; j++)
				dist[from + j] =
				    dist[from + (k > 1 ? j * (have - 1) / (k - 1) : have - 1)];
		return k;
	}
	return 0;
}

/* What the samples of one distance gathered. */
struct dist_acc {
	double *seek; /* per sample: K - K0 */
	double *acc;  /* per sample: the first measured leg */
	unsigned nseek, nacc, cap;
	double sg; /* the seek found so far: the precision asked for follows it */
};

/* n samples at distance d on a jittered grid over [walk, capacity - d) (re-measuring up to
 * `redos` unsettled ones elsewhere), each with the width that `width_n` samples need; stops
 * early, keeping what it has, when the next sample would end past `deadline_ns` of used device
 * time. */
static int sample_grid(struct seek_ctx *s, const struct dg_seek_result *r, uint64_t d, unsigned n,
		       unsigned width_n, uint64_t deadline_ns, unsigned redos, struct dist_acc *a)
{
	uint64_t b = s->block_bytes, walk = (uint64_t)SEEK_WALK_BLOCKS * b;
	uint64_t xmax = r->capacity_bytes - d - b;

	if (xmax < walk)
		xmax = walk;
	/* start offsets closer than two walks would re-read each other's blocks */
	if ((xmax - walk) / (2 * walk) + 1 < n) {
		n = (unsigned)((xmax - walk) / (2 * walk) + 1);
		width_n = n; /* the few there are carry the mean alone */
	}
	for (unsigned k = 0, moves = 0, redo = 0; k < n && a->nacc < a->cap; k++) {
		uint64_t x =
		    walk + seek_align_down(
			       (uint64_t)((k + seek_rand01(s)) / n * (double)(xmax - walk)), b);
		struct pair_req req = {
		    .first = x + d,
		    .second = x,
		    /* a lone pair (the longest distance) is measured one way, every leg aimed */
		    .fwd_measured = d >= SEEK_STREAM_BYTES && n > 1,
		    .k_min_ms = 0.9 * s->k0_ms,
		    .width_ms = width_for(r, d, a->sg, width_n),
		    .max_legs = s->rotating ? CURVE_MAX_LEGS : 2,
		};
		/* far apart, either way round is a seek: start on the side nearer the head */
		if (req.fwd_measured && s->last_offset < x + d / 2) {
			req.first = x;
			req.second = x + d;
		}
		struct pair_out po;
		if ((double)seek_ctx_used_ns(s) + seek_sample_cost(s, r, d, width_n) * 1e6 >
		    (double)deadline_ns)
			break; /* the budget is spent: keep what there is */
		int rc = seek_pair_measure(s, &req, &po);
		if (rc == -ECANCELED)
			return 0;
		if (rc < 0)
			return rc;
		if (po.failed && moves++ < MAX_MOVES) {
			s->moved++;
			k--; /* a failed read: the same sample at a fresh place */
			continue;
		}
		/* legs that kept missing their aimed phase left K unbisected: the middle of a wide
		 * interval is no estimate; the same sample at a fresh place in its stratum (dropped
		 * once the quota is spent) */
		bool unsettled =
		    po.ok && s->rotating && po.width_ms > UNSETTLED_WIDTHS * req.width_ms;
		if (unsettled && redo++ < redos) {
			k--;
			continue;
		}
		if (unsettled)
			po.ok = false; /* beyond the quota: dropped, not a figure either */
		if (isfinite(po.access_ms))
			a->acc[a->nacc++] = po.access_ms;
		if (!po.ok)
			continue;
		double seek = po.k_ms - s->k0_ms;
		a->seek[a->nseek++] = seek > 0 ? seek : 0;
		a->sg = seek;
	}
	return 0;
}

/* The samples that would bring the standard error of a distance's mean to a third of its
 * allowance (max(3 %, 0.2 ms)), from the spread of the first ones; at least the ones there. */
static unsigned samples_wanted(const struct dist_acc *a)
{
	double m = 0, v = 0;

	for (unsigned i = 0; i < a->nseek; i++)
		m += a->seek[i];
	m /= a->nseek;
	for (unsigned i = 0; i < a->nseek; i++)
		v += (a->seek[i] - m) * (a->seek[i] - m);
	v /= a->nseek - 1;
	double tol = fmax(0.03 * m, 0.2) / EXTRA_STD_ERRORS;
	return count_in(v / (tol * tol), a->nseek, a->cap / 2);
}

int seek_measure_distance(struct seek_ctx *s, struct dg_seek_result *r, uint64_t d, unsigned n,
			  uint64_t deadline_ns, unsigned redos, double extra_ms,
			  struct dg_seek_point *pt, double *extra_used_ms)
{
	unsigned cap = 2 * (n * (1 + EXTRA_MAX) + 1);
	struct dist_acc a = {.cap = cap, .sg = seek_guess(r, d)};
	int rc = -ENOMEM;

	*extra_used_ms = 0;
	memset(pt, 0, sizeof(*pt));
	pt->distance_bytes = d;
	pt->min_ms = pt->median_ms = pt->mean_ms = pt->seek_ms = NAN;
	a.seek = calloc(cap, sizeof(*a.seek));
	a.acc = calloc(cap, sizeof(*a.acc));
	if (!a.seek || !a.acc)
		goto out;
	rc = sample_grid(s, r, d, n, n, deadline_ns, redos, &a);
	/* a distance the judge of issue 13 looks at whose samples spread wide (the start offset's
	 * band phase on a serpentine drive decides the cylinders crossed): more start offsets on
	 * a fresh grid, as far as the reserve allows (Neyman 1934: samples where the spread is) */
	if (rc == 0 && s->rotating && d >= r->capacity_bytes / 100 && a.nseek >= SEEK_MIN_SAMPLES &&
	    !seek_ctx_stopping(s)) {
		unsigned want = samples_wanted(&a), more = want - a.nseek;
		/* as many as the reserve pays for in full: a grid cut short by the deadline would
		 * cover the outer start offsets only, whose moves are shorter */
		double fit = extra_ms / (1.2 * seek_sample_cost(s, r, d, n));
		if (more > EXTRA_MAX * n)
			more = EXTRA_MAX * n;
		if (more > fit)
			more = count_in(fit, 0, more);
		uint64_t t = seek_ctx_used_ns(s);
		if (more >= 2)
			rc = sample_grid(s, r, d, more, n, deadline_ns, 0, &a);
		*extra_used_ms = (double)(seek_ctx_used_ns(s) - t) / 1e6;
	}
	if (rc < 0)
		goto out;
	pt->samples = a.nseek;
	if (a.nseek) {
		double sum = 0;
		for (unsigned i = 0; i < a.nseek; i++)
			sum += a.seek[i];
		pt->seek_ms = sum / a.nseek;
	}
	if (a.nacc) {
		double sum = 0;
		for (unsigned i = 0; i < a.nacc; i++)
			sum += a.acc[i];
		pt->mean_ms = sum / a.nacc;
		pt->median_ms = dg_median(a.acc, a.nacc); /* sorts them */
		pt->min_ms = a.acc[0];
	}
out:
	free(a.seek);
	free(a.acc);
	return rc;
}

/* The share of the planned samples a distance gets: WEIGHT_SHORT below 1 % of the capacity
 * (the curve's short end: the fit and the spans' control variate), and above it in inverse
 * proportion to the allowance the issue gives its mean (0.2 ms near the short end, 3 % further
 * out), within [WEIGHT_MIN, WEIGHT_MAX]: the spread of the moves is much the same at every
 * distance. */
static double dist_weight(const struct dg_seek_result *r, uint64_t d)
{
	if (d < r->capacity_bytes / 100)
		return WEIGHT_SHORT;
	double w = WEIGHT_TOL_MS / fmax(0.03 * seek_guess(r, d), 0.2);
	return fmin(fmax(w, WEIGHT_MIN), WEIGHT_MAX);
}

unsigned seek_curve_samples(const struct dg_seek_result *r, uint64_t d, unsigned n, unsigned nmax)
{
	return count_in(dist_weight(r, d) * n + 0.5, SEEK_MIN_SAMPLES, nmax);
}

size_t seek_curve_plan(struct seek_ctx *s, const struct dg_seek_result *r, uint64_t *dist,
		       size_t from, size_t nd, double avail_ms, double ratio, unsigned nmax,
		       unsigned *n)
{
	nd = from + thin_distances(s, r, dist, from, nd, avail_ms / ratio);
	double rest = 0;
	for (size_t j = from; j < nd; j++)
		rest += seek_sample_cost(s, r, dist[j], seek_curve_samples(r, dist[j], *n, nmax)) *
			dist_weight(r, dist[j]) * ratio;
	if (rest > 0 && (rest * *n > 1.05 * avail_ms || from > 0))
		*n = count_in(avail_ms / rest, SEEK_MIN_SAMPLES, nmax); /* the model: a few % */
	if (*n < SEEK_MIN_SAMPLES)
		*n = SEEK_MIN_SAMPLES;
	return nd;
}
