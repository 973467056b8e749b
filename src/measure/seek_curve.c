/* SPDX-License-Identifier: MIT */
/*
 * The seek curve's samples (seek.c plans the distances and the samples each). For each distance
 * D, start offsets x spread over [0, capacity - D] on a jittered grid (the truth is the mean of
 * move(x, x + D) over x uniform, drive-spec.md), each pair's K measured by the phase bisection
 * of seek_legs.c; seek = K - K0.
 *
 * Extra samples where the moves spread most: on a serpentine drive the cylinders between x and
 * x + D swing with the band phase of both ends, so the moves at one distance spread by a ms or
 * more and the mean of a few samples is tenths of a ms off; on a cylinder layout they hardly
 * spread. The first pass leaves a share of the budget; then, batch by batch, the distance whose
 * mean is least certain against its tolerance (the samples' standard error over max(3 %,
 * 0.2 ms)) gets more samples, on a jittered grid of their own over the whole range, until the
 * budget is spent or every mean is certain enough (Neyman 1934: samples where the spread is;
 * each batch is an unbiased stratified sample, so their pooled mean is too).
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
 * again at a fresh place: in the first pass for at most a quarter of a distance's samples, and
 * only while the budget holds every distance (fewer points cost the average more than a loose
 * sample); in the extra pass for half a batch */
#define UNSETTLED_WIDTHS 2.0
/* the extra pass: a mean whose standard error is below this share of its tolerance needs no
 * more samples; a batch adds half the samples a distance has (EXTRA_MIN_BATCH at least) */
#define EXTRA_SETTLED	0.2
#define EXTRA_MIN_BATCH 4u
#define THIN_SAMPLES	3u  /* a point needs this many samples for its mean ... */
#define SHORT_SLACK	2.0 /* see doubt() */

static uint64_t align_down(uint64_t v, uint64_t a)
{
	return v - v % a;
}

/* A first guess of seek(D) for planning: full (0.04 + 0.96 sqrt(D / C)), the shape of the
 * presets' curves within a few tens of percent. */
double seek_guess(const struct dg_seek_result *r, uint64_t d)
{
	double full = isfinite(r->full_stroke_ms) ? r->full_stroke_ms : 10.0;

	return full * (0.04 + 0.96 * sqrt((double)d / (double)r->capacity_bytes));
}

/* The tolerance of a distance's mean: 3 % or 0.2 ms (issue 5; 0.3 ms below 1 % of the
 * capacity, where the points only shape the fit's short end). */
static double tolerance(const struct dg_seek_result *r, uint64_t d, double seek_ms)
{
	double floor_ms = d >= r->capacity_bytes / 100 ? 0.2 : 0.3;

	return 0.03 * seek_ms > floor_ms ? 0.03 * seek_ms : floor_ms;
}

/* The precision a distance's mean needs: its tolerance with 3.5 standard errors of n samples
 * whose errors are uniform over the final interval. */
static double width_for(const struct dg_seek_result *r, uint64_t d, double seek_ms, unsigned n)
{
	return tolerance(r, d, seek_ms) / 3.5 * sqrt(12.0 * n);
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

void seek_acc_clear(struct seek_acc *a)
{
	free(a->acc);
	memset(a, 0, sizeof(*a));
}

/* Room for n more access times. */
static int acc_reserve(struct seek_acc *a, unsigned n)
{
	if (a->nacc + n <= a->cap)
		return 0;
	unsigned cap = a->nacc + n > 2 * a->cap ? a->nacc + n : 2 * a->cap;
	double *v = realloc(a->acc, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	a->acc = v;
	a->cap = cap;
	return 0;
}

/* The point's figures from everything the accumulator holds. */
static void acc_point(struct seek_acc *a, uint64_t d, struct dg_seek_point *pt)
{
	memset(pt, 0, sizeof(*pt));
	pt->distance_bytes = d;
	pt->min_ms = pt->median_ms = pt->mean_ms = pt->seek_ms = NAN;
	pt->samples = a->ok;
	if (a->ok)
		pt->seek_ms = a->sum / a->ok;
	if (a->nacc) {
		double m = 0;
		for (unsigned i = 0; i < a->nacc; i++)
			m += a->acc[i];
		pt->mean_ms = m / a->nacc;
		pt->median_ms = dg_median(a->acc, a->nacc); /* sorts */
		pt->min_ms = a->acc[0];
	}
}

int seek_measure_distance(struct seek_ctx *s, struct dg_seek_result *r, uint64_t d, unsigned n,
			  uint64_t deadline_ns, unsigned redos, struct seek_acc *a,
			  struct dg_seek_point *pt)
{
	uint64_t b = s->block_bytes, walk = (uint64_t)SEEK_WALK_BLOCKS * b;
	uint64_t xmax = r->capacity_bytes - d - b;
	double sg = a->ok ? a->sum / a->ok : seek_guess(r, d);
	unsigned nall = a->ok + n; /* the samples the mean will pool: they set the width */
	int rc = acc_reserve(a, n);

	if (rc)
		return rc;
	if (xmax < walk)
		xmax = walk;
	/* start offsets closer than two walks would re-read each other's blocks */
	if ((xmax - walk) / (2 * walk) + 1 < n)
		n = (unsigned)((xmax - walk) / (2 * walk) + 1);
	for (unsigned k = 0, moves = 0, redo = 0; k < n; k++) {
		uint64_t x =
		    walk +
		    align_down((uint64_t)((k + seek_rand01(s)) / n * (double)(xmax - walk)), b);
		struct pair_req req = {
		    .first = x + d,
		    .second = x,
		    /* a lone pair (the longest distance) is measured one way, every leg aimed */
		    .fwd_measured = d >= SEEK_STREAM_BYTES && n > 1,
		    .k_min_ms = 0.9 * s->k0_ms,
		    .width_ms = width_for(r, d, sg, nall),
		    .max_legs = s->rotating ? CURVE_MAX_LEGS : 2,
		};
		/* far apart, either way round is a seek: start on the side nearer the head */
		if (req.fwd_measured && s->last_offset < x + d / 2) {
			req.first = x;
			req.second = x + d;
		}
		struct pair_out po;
		if ((double)seek_ctx_used_ns(s) + seek_sample_cost(s, r, d, nall) * 1e6 >
		    (double)deadline_ns)
			break; /* the budget is spent: keep what there is */
		rc = seek_pair_measure(s, &req, &po);
		if (rc == -ECANCELED) {
			rc = 0;
			break;
		}
		if (rc < 0)
			break;
		bool hit = seek_implausible(s, d, &po);
		if ((po.failed || hit) && moves++ < MAX_MOVES) {
			s->moved += po.failed;
			s->cache_hits += hit;
			k--; /* a failed read or a hit: the same sample at a fresh place */
			continue;
		}
		if (hit)
			po.ok = false;
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
		if (isfinite(po.access_ms) && acc_reserve(a, 1) == 0)
			a->acc[a->nacc++] = po.access_ms;
		if (!po.ok)
			continue;
		double seek = po.k_ms - s->k0_ms;
		seek = seek > 0 ? seek : 0;
		a->sum += seek;
		a->sum2 += seek * seek;
		a->ok++;
		/* the precision asked for follows the seek time found */
		sg = seek;
	}
	acc_point(a, d, pt);
	return rc;
}

/* The standard deviation of a distance's samples (NAN below three: they say nothing of the
 * spread). */
static double spread(const struct seek_acc *a)
{
	if (a->ok < 3)
		return NAN;
	double mean = a->sum / a->ok, var = (a->sum2 - a->ok * mean * mean) / (a->ok - 1);

	return sqrt(var > 0 ? var : 0);
}

/* How uncertain point i's mean is: its standard error over its tolerance. The spread is the
 * largest of its own and its neighbours' (the moves' spread changes slowly with the distance):
 * a few samples of a skewed spread (most moves alike, a few far longer) often miss the long
 * ones and look settled while their mean is off. 0 for a point that takes no more samples,
 * infinite for one with too few to tell. Where the track-to-track was measured on its own, the
 * points below 1 % of the capacity only shape the fit's short end (and a sliver of the average):
 * their tolerance counts SHORT_SLACK times, leaving the samples to the points that are figures. */
static double doubt(const struct seek_ctx *s, const struct dg_seek_result *r,
		    const struct seek_acc *acc, size_t i)
{
	const struct seek_acc *a = &acc[i];
	double sd = spread(a);

	if (a->stuck)
		return 0;
	if (a->ok < 3)
		return INFINITY; /* too few samples to place a mean (dropped, failed): first */
	for (size_t j = i ? i - 1 : 0; j <= i + 1 && j < r->npoints; j++)
		if (spread(&acc[j]) > sd)
			sd = spread(&acc[j]);
	uint64_t d = r->points[i].distance_bytes;
	double tol = tolerance(r, d, a->sum / a->ok);
	if (isfinite(s->t2t_ms) && d < r->capacity_bytes / 100)
		tol *= SHORT_SLACK;
	return sd / sqrt(a->ok) / tol;
}

int seek_curve_extra(struct seek_ctx *s, struct dg_seek_result *r, struct seek_acc *acc,
		     uint64_t deadline_ns)
{
	while (!seek_ctx_stopping(s)) {
		size_t best = SIZE_MAX;
		double worst = EXTRA_SETTLED;
		for (size_t i = 0; i < r->npoints; i++) {
			double e = doubt(s, r, acc, i);
			if (e > worst) {
				worst = e;
				best = i;
			}
		}
		if (best == SIZE_MAX)
			return 0; /* every mean is certain enough */
		struct seek_acc *a = &acc[best];
		uint64_t d = r->points[best].distance_bytes;
		unsigned batch = a->ok / 2 > EXTRA_MIN_BATCH ? a->ok / 2 : EXTRA_MIN_BATCH;
		double left_ms = ((double)deadline_ns - (double)seek_ctx_used_ns(s)) / 1e6;
		double each = seek_sample_cost(s, r, d, a->ok + batch);
		if (left_ms < each * EXTRA_MIN_BATCH)
			return 0; /* the budget is spent */
		if (left_ms < each * batch)
			batch = (unsigned)(left_ms / each);
		unsigned before = a->ok;
		/* an unsettled sample is taken again elsewhere, as in the first pass: dropped, it
		 * would leave its point a batch short, and a point that gains few samples stops */
		int rc = seek_measure_distance(s, r, d, batch, deadline_ns, batch / 2, a,
					       &r->points[best]);
		if (rc < 0)
			return rc;
		a->stuck = a->ok < before + batch / 4; /* failing places: no more tries there */
	}
	return 0;
}

size_t seek_curve_drop_thin(const struct seek_ctx *s, struct dg_seek_result *r,
			    struct seek_acc *acc)
{
	uint64_t b = s->block_bytes, walk = (uint64_t)SEEK_WALK_BLOCKS * b;
	size_t keep = 0;

	for (size_t i = 0; i < r->npoints; i++) {
		uint64_t d = r->points[i].distance_bytes, xmax = r->capacity_bytes - d - b;
		/* the start offsets a distance has room for (seek_measure_distance's spacing) */
		uint64_t room = xmax > walk ? (xmax - walk) / (2 * walk) + 1 : 1;

		if (acc[i].ok < THIN_SAMPLES && room >= THIN_SAMPLES) {
			seek_acc_clear(&acc[i]);
			continue;
		}
		if (keep != i) {
			r->points[keep] = r->points[i];
			acc[keep] = acc[i];
			memset(&acc[i], 0, sizeof(acc[i])); /* moved, not to be freed twice */
		}
		keep++;
	}
	size_t dropped = r->npoints - keep;
	r->npoints = keep;
	return dropped;
}
