/* SPDX-License-Identifier: MIT */
/*
 * Zones from the bandwidth curve: the change points of src/zones.c (Killick et al. 2012), each
 * boundary then bisected (the largest steps first) with samples whose noise lets them class by
 * the nearer side's rate, small steps that could not be placed merged away, and outer and inner
 * from the curve's ends.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bandwidth_priv.h"
#include "util.h"

#define LOCAL_SAMPLES 3	  /* a boundary's sides: rates of this many samples next to it */
#define REFINE_Z      3.0 /* refining samples class by the nearer rate at this x noise */
/* A step of 2% (ln) or more is a recording zone that must be found (drive-spec.md): kept
 * however far refinement placed it; smaller ones only when placed. */
#define KEEP_STEP 0.0198

int bw_add_sample(struct dg_bandwidth_result *r, size_t *cap, const struct dg_bandwidth_sample *s)
{
	if (r->nsamples == *cap) {
		size_t ncap = *cap ? 2 * *cap : 64;
		struct dg_bandwidth_sample *v = realloc(r->samples, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->samples = v;
		*cap = ncap;
	}
	r->samples[r->nsamples++] = *s;
	return 0;
}

/* Fraction of a sample's bytes that lie in zone A, from its rate: the time-weighted mix
 * 1/r = f/rA + (1-f)/rB. */
static double fraction_in_a(double r, double ra, double rb)
{
	double f = (1.0 / r - 1.0 / rb) / (1.0 / ra - 1.0 / rb);

	/* NAN (equal rates) counts as 0: the caller converts f * len to an integer */
	return !(f > 0) ? 0 : f > 1 ? 1 : f;
}

/* Time-weighted rate of the usable samples wholly inside [start, end); 0 when none. */
static double rate_inside(const struct dg_bandwidth_result *r, uint64_t start, uint64_t end,
			  size_t *count)
{
	double bytes = 0, secs = 0;

	*count = 0;
	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &r->samples[i];

		if (s->excluded || !(s->mb_per_s > 0) || s->offset_bytes < start ||
		    s->offset_bytes + s->length_bytes > end)
			continue;
		bytes += (double)s->length_bytes;
		secs += (double)s->length_bytes / (s->mb_per_s * DG_MB);
		(*count)++;
	}
	return secs > 0 ? bytes / secs / DG_MB : 0;
}

/* A zone's rate when none of its samples is usable (all set aside): the median of its measured
 * samples, else of every measured sample; never 0 while anything was measured. */
static double any_rate(const struct dg_bandwidth_sample *v, size_t first, size_t end, size_t n)
{
	double *x = malloc((n ? n : 1) * sizeof(*x)), med = 0;
	size_t k = 0;

	if (!x)
		return 0;
	for (size_t i = first; i < end; i++)
		if (v[i].mb_per_s > 0)
			x[k++] = v[i].mb_per_s;
	for (size_t i = 0; k == 0 && i < n; i++)
		if (v[i].mb_per_s > 0)
			x[k++] = v[i].mb_per_s;
	if (k > 0)
		med = dg_median(x, k);
	free(x);
	return med;
}

/* Time-weighted rate of the usable samples [first, last] of an offset-ordered array. */
static double rate_of_range(const struct dg_bandwidth_sample *v, size_t first, size_t end)
{
	double bytes = 0, secs = 0;

	for (size_t i = first; i < end; i++) {
		if (v[i].excluded || !(v[i].mb_per_s > 0))
			continue;
		bytes += (double)v[i].length_bytes;
		secs += (double)v[i].length_bytes / (v[i].mb_per_s * DG_MB);
	}
	return secs > 0 ? bytes / secs / DG_MB : 0;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct dg_bandwidth_sample *x = a, *y = b;

	return (x->offset_bytes > y->offset_bytes) - (x->offset_bytes < y->offset_bytes);
}

/* One boundary to place: between segment A (samples [a0, a1)) and segment B ([b0, b1)). */
struct boundary {
	double ra, rb;
	uint64_t lo, hi;       /* the boundary lies in [lo, hi] */
	uint64_t a_len, b_len; /* rough zone lengths */
	uint64_t span;	       /* bytes of each refining sample */
	double sigma;	       /* the noise of one (sigma of ln MB/s) */
	double step;	       /* |ln ra/rb| */
	/* where the segments meet: A's last sample and B's first (their centres, and the bracket
	 * between them), when the first bracket reaches a sample further each way */
	uint64_t la_mid, fb_mid, lo_near, hi_near;
	bool placed; /* refined as far as asked (or as samples can tell) */
};

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

/* The curve's surface levels (dg_zones_surfaces): ln offset of each, how many, and the noise of
 * one sample once corrected for them. */
struct levels {
	double off[DG_ZONES_MAX_SURFACES];
	size_t n;
	double noise;
	double spread; /* of one corrected sample around its level: the corrected curve's noise */
};

/* A sample's rate corrected for its surface: of the levels that put its rate nearest the
 * interval between the zones' rates A and B (within the noise of the nearest), the nearest;
 * false when those levels disagree on the side (a surface of A reads like one of B: the sample
 * cannot tell where it lies). One level: the rate as measured. */
static bool level_rate(const struct levels *L, const struct boundary *b, double r, double *out)
{
	double la = log(b->ra), lb = log(b->rb), lo = fmin(la, lb), hi = fmax(la, lb);
	double dist[DG_ZONES_MAX_SURFACES], best = INFINITY, tol = fmax(3 * L->noise, 0.002);
	size_t arg = 0;
	int side = -1;

	*out = r;
	if (L->n < 2)
		return true;
	for (size_t k = 0; k < L->n; k++) {
		double x = log(r) - L->off[k];

		dist[k] = x < lo ? lo - x : x > hi ? x - hi : 0;
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
static void narrow(struct boundary *b, uint64_t off, uint64_t len, double r)
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
	uint64_t target =
	    (uint64_t)(REFINE_TARGET * (double)(b->a_len < b->b_len ? b->a_len : b->b_len));
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
		if (!level_rate(L, b, m.mb_per_s, &rate)) {
			if (++unsure == ARRAY_SIZE(at))
				break;
			continue;
		}
		unsure = 0;
		narrow(b, m.off, m.len, rate);
		between += L->n < 2 && reads_between(b, rate);
	}
	/* One sample may straddle the boundary; more that read neither side's rate say the
	 * bracket holds no clean step between these two rates (the segments' edge was misplaced
	 * by more than a sample, or the sides mix steps): not placed. */
	b->placed = bracket_done(b, target) && between < 2;
	return 0;
}

/* The zone whose range holds the sample wholly, or NULL (it straddles a boundary). */
static const struct dg_bandwidth_zone *zone_of_sample(const struct dg_bandwidth_result *r,
						      const struct dg_bandwidth_sample *sm)
{
	for (size_t z = 0; z < r->nzones; z++)
		if (sm->offset_bytes >= r->zones[z].start_bytes &&
		    sm->offset_bytes + sm->length_bytes <= r->zones[z].end_bytes)
			return &r->zones[z];
	return NULL;
}

/*
 * Outer and inner rates come from the curve's ends: the first and last zones' rates when the
 * samples at the ends agree with them, else the end samples themselves (a quick curve of a few
 * samples can fit two zones to a drive of sixteen). A fit that leaves samples far from their
 * zone's rate says so in a note.
 */
/* How far a rate lies from its zone's: from the zone's rate, or from the nearest of its surface
 * rates on a per-surface drive. */
static double off_zone(const struct dg_bandwidth_zone *z, double mb_per_s)
{
	double d = fabs(mb_per_s / z->mb_per_s - 1);

	for (size_t k = 0; k < z->nsurfaces; k++)
		d = fmin(d, fabs(mb_per_s / z->surface_mb_per_s[k] - 1));
	return d;
}

#define END_TOL 0.025
static int curve_ends(struct dg_bandwidth_result *r)
{
	const struct dg_bandwidth_sample *first = NULL, *last = NULL;
	double tol = 3 * r->noise > 0.03 ? 3 * r->noise : 0.03;
	size_t far = 0;

	r->outer_mb_per_s = r->zones[0].mb_per_s;
	r->inner_mb_per_s = r->zones[r->nzones - 1].mb_per_s;
	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *sm = &r->samples[i];
		if (!(sm->mb_per_s > 0) || sm->stalls)
			continue;
		if (!first || sm->offset_bytes < first->offset_bytes)
			first = sm;
		if (!last || sm->offset_bytes > last->offset_bytes)
			last = sm;
		const struct dg_bandwidth_zone *z = zone_of_sample(r, sm);
		if (z && off_zone(z, sm->mb_per_s) > tol)
			far++;
	}
	/* the ends are judged tighter than the fit: a zone rate 2.5% off its end sample is not
	 * that end's rate, whatever the curve's noise (inflated by steps the fit missed) */
	if (first && fabs(first->mb_per_s / r->outer_mb_per_s - 1) > END_TOL)
		r->outer_mb_per_s = first->mb_per_s;
	if (last && fabs(last->mb_per_s / r->inner_mb_per_s - 1) > END_TOL)
		r->inner_mb_per_s = last->mb_per_s;
	if (far)
		return dg_warnings_add(
		    &r->notes,
		    "the zone fit leaves %zu sample%s more than %.1f%% from %s zone's "
		    "rate: too few samples for this drive's zones (outer and inner come "
		    "from the curve's ends)",
		    far, far == 1 ? "" : "s", 100 * tol, far == 1 ? "its" : "their");
	return 0;
}

/* The curve as the zone finder sees it: a copy of the n curve samples (refinement appends to
 * r->samples), their rates, which are set aside, the segments' ends and the boundaries. */
/* Surface levels closer than this (ln) are left alone: they could pass for zone steps (2%
 * counts) and a sample could not tell a surface of one zone from another of the next. */
#define LEVEL_MIN_SEP	 0.04
#define LEVEL_MAX_SPREAD 0.005 /* ... and kept when the samples lie this close to them (ln) */

struct curve {
	struct dg_bandwidth_sample *v;
	double *rates;
	bool *excl;
	size_t *ends, n, nseg;
	struct boundary *bs;
	size_t nb, ndropped;
	double noise;
	struct levels L; /* the surface levels, and each curve sample's */
	unsigned char *lev;
};

static void curve_free(struct curve *cv)
{
	free(cv->v);
	free(cv->rates);
	free(cv->excl);
	free(cv->ends);
	free(cv->bs);
	free(cv->lev);
}

/* The segments of the curve (src/zones.c), the samples set aside marked in r too, and the notes
 * on flatness and on a flag that hides the disk. 0, or -ENOMEM. */
static int segment(const struct ctx *c, struct dg_bandwidth_result *r, struct curve *cv,
		   size_t usable)
{
	/* Corrected for surface levels, the curve is no quieter than their own spread, and a
	 * step must stand out from it (a surface run is never a zone). */
	int rc = dg_zones_segment(cv->rates, cv->n, fmax(NOISE_FLOOR, cv->L.spread),
				  fmax(MIN_STEP, 3 * cv->L.spread), cv->excl, cv->ends, &cv->nseg,
				  &cv->noise);

	if (rc == -EINVAL) {
		/* A handful of usable samples at different rates (a run stopped early, a tiny
		 * --samples): each is a segment too short to be a zone, and all were set aside.
		 * Nothing tells zones apart: one zone over every usable sample. */
		for (size_t i = 0; i < cv->n; i++)
			cv->excl[i] = !(cv->v[i].mb_per_s > 0);
		cv->nseg = 1;
		cv->ends[0] = cv->n;
		cv->noise = NOISE_FLOOR;
		snprintf(r->flat_reason, sizeof(r->flat_reason),
			 "%zu usable samples are too few to tell zones apart: one zone", usable);
		rc = 0;
	}
	if (rc)
		return rc;
	r->noise = cv->L.noise = cv->noise;
	for (size_t i = 0; i < cv->n; i++) {
		if (cv->excl[i] && cv->v[i].mb_per_s > 0)
			cv->v[i].excluded = r->samples[i].excluded = true;
	}
	/* Timing decides, the kernel's flag only hints: loop, dm, md, virtio, iSCSI and many USB
	 * bridges call a spinning disk non-rotational. Steps that stand out from the noise are
	 * zones whatever the flag says; a disagreement is noted. */
	if (c->info->rotational == 0 && cv->nseg > 1)
		return dg_warnings_add(
		    &r->notes,
		    "the device reports itself non-rotational, but its sequential rate "
		    "falls in %zu steps, as a spinning disk's recording zones do: a layer "
		    "in between (loop, dm, md, a USB bridge, a VM) hides the disk",
		    cv->nseg - 1);
	if (cv->nseg == 1 && !r->flat_reason[0])
		snprintf(r->flat_reason, sizeof(r->flat_reason),
			 "no step along the curve stands out from the measured noise (%.2f%% per "
			 "sample): one zone",
			 100.0 * cv->noise);
	return 0;
}

/* The rates either side of a boundary from the LOCAL_SAMPLES usable samples of each segment
 * nearest to it (A's last ending at index la, B's first at fb; the segments span [a0, b1)): where
 * the fit merged small steps into one segment, its mean is no zone's rate, and a refining sample
 * near the boundary is classed against the zones it lies between. */
static void local_rates(const struct curve *cv, size_t la, size_t fb, size_t a0, size_t b1,
			struct boundary *b)
{
	const struct dg_bandwidth_sample *v = cv->v;
	size_t ia = la + 1, ib = fb, na = 0, nb = 0;
	double ra, rb;

	while (ia > a0 && na < LOCAL_SAMPLES)
		na += !v[--ia].excluded && v[ia].mb_per_s > 0;
	while (ib < b1 && nb < LOCAL_SAMPLES)
		nb += !v[ib++].excluded && v[ib - 1].mb_per_s > 0;
	ra = rate_of_range(v, ia, la + 1);
	rb = rate_of_range(v, fb, ib);
	/* Kept only while they still tell the sides apart as the segments do. */
	if (ra > 0 && rb > 0 && (ra - rb) * (b->ra - b->rb) > 0) {
		b->ra = ra;
		b->rb = rb;
	}
}

/* The noise (sigma of ln MB/s) of a sample of `span` bytes, from the curve's at its own size:
 * a sample's error is a few positions' worth of time over its whole time, and a longer sample
 * also averages more of them, so it falls about as the 1.5th power of the size (measured on the
 * zoo's drives between 8 and 32 MiB). */
static double noise_at(const struct ctx *c, double noise, uint64_t span)
{
	return noise * pow((double)c->p.sample_bytes / (double)span, 1.5);
}

/* The size of a boundary's refining samples: the smallest of half, one, two or four times the
 * curve's size whose noise lets a sample class by the nearer rate with REFINE_Z sigma to spare
 * (the curve's size for a boundary not refined). 0 when even the largest cannot. */
static uint64_t refine_span(const struct ctx *c, const struct boundary *b, double noise)
{
	uint64_t range = c->p.range_end_bytes - c->p.range_start_bytes;

	for (uint64_t k = 1; k <= REFINE_MAX_SPAN; k *= 2) {
		uint64_t span = c->p.sample_bytes * k;

		if (k > 1 && span > range / 4)
			break;
		if (b->step / 2 >= REFINE_Z * noise_at(c, noise, span))
			return span;
	}
	return 0;
}

/* The first bracket of boundary b between segment A's last usable sample la and B's first fb
 * (the segments span [a0, b1)): a noisy sample may have been put on the wrong side, so the
 * bracket reaches one usable sample further each way; its samples then narrow it when they can
 * class by the nearer rate (REFINE_Z sigma to spare), else refinement's larger samples do. */
static void bracket(const struct curve *cv, struct boundary *b, size_t la, size_t fb, size_t a0,
		    size_t b1)
{
	const struct dg_bandwidth_sample *v = cv->v;
	size_t pa = la, nf = fb;

	while (pa > a0 && (pa == la || v[pa].excluded || !(v[pa].mb_per_s > 0)))
		pa--;
	while (nf + 1 < b1 && (nf == fb || v[nf].excluded || !(v[nf].mb_per_s > 0)))
		nf++;
	b->lo = v[pa].offset_bytes;
	b->hi = v[nf].offset_bytes + v[nf].length_bytes;
	b->lo_near = v[la].offset_bytes;
	b->hi_near = v[fb].offset_bytes + v[fb].length_bytes;
	b->la_mid = b->lo_near + v[la].length_bytes / 2;
	b->fb_mid = v[fb].offset_bytes + v[fb].length_bytes / 2;
	for (size_t i = pa; fabs(log(b->ra / b->rb)) / 2 >= REFINE_Z * cv->noise && i <= nf; i++) {
		double rate;

		if (v[i].mb_per_s > 0 && level_rate(&cv->L, b, v[i].mb_per_s, &rate))
			narrow(b, v[i].offset_bytes, v[i].length_bytes, rate);
	}
	if (b->lo > b->hi) {
		uint64_t t = b->lo;
		b->lo = b->hi;
		b->hi = t;
	}
}

/* The boundaries between consecutive segments, each bracketed by its segments' samples. */
static int brackets(const struct ctx *c, struct curve *cv)
{
	const struct dg_bandwidth_sample *v = cv->v;

	cv->bs = calloc(cv->nseg > 1 ? cv->nseg - 1 : 1, sizeof(*cv->bs));
	if (!cv->bs)
		return -ENOMEM;
	for (size_t s = 0; s + 1 < cv->nseg; s++) {
		size_t a0 = s ? cv->ends[s - 1] : 0, a1 = cv->ends[s], b0 = cv->ends[s];
		size_t b1 = cv->ends[s + 1], la = a1, fb = b0;
		struct boundary *b = &cv->bs[cv->nb++];

		while (la > a0 && v[la - 1].excluded)
			la--;
		while (fb < b1 && v[fb].excluded)
			fb++;
		/* Both exist: every segment holds at least three usable samples. */
		la--;
		b->ra = rate_of_range(v, a0, a1);
		b->rb = rate_of_range(v, b0, b1);
		if (cv->L.n < 2)
			local_rates(cv, la, fb, a0, b1, b);
		b->a_len = v[la].offset_bytes - v[a0].offset_bytes + v[la].length_bytes;
		b->b_len = v[b1 - 1].offset_bytes + v[b1 - 1].length_bytes - v[fb].offset_bytes;
		bracket(cv, b, la, fb, a0, b1);
		b->step = fabs(log(b->ra / b->rb));
		b->span = refine_span(c, b, cv->noise);
		b->sigma = noise_at(c, cv->noise, b->span ? b->span : c->p.sample_bytes);
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
		b->sigma = noise_at(c, noise, b->span);
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
static int refine_all(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct curve *cv)
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

/* A zone's surface rates: per level, the time-weighted rate of the usable curve samples of that
 * level wholly inside [start, end) (levels are in ascending order of rate). */
static void surface_rates(const struct curve *cv, struct dg_bandwidth_zone *zone)
{
	zone->nsurfaces = 0;
	for (size_t k = 0; cv->L.n > 1 && k < cv->L.n; k++) {
		double bytes = 0, secs = 0;

		for (size_t i = 0; i < cv->n; i++) {
			const struct dg_bandwidth_sample *s = &cv->v[i];

			if (cv->lev[i] != k || s->excluded || !(s->mb_per_s > 0) ||
			    s->offset_bytes < zone->start_bytes ||
			    s->offset_bytes + s->length_bytes > zone->end_bytes)
				continue;
			bytes += (double)s->length_bytes;
			secs += (double)s->length_bytes / (s->mb_per_s * DG_MB);
		}
		if (secs > 0)
			zone->surface_mb_per_s[zone->nsurfaces++] = bytes / secs / DG_MB;
	}
}

/* The zones: boundaries in order, aligned, each zone at least one sector; their rates. */
static int place_zones(const struct ctx *c, struct dg_bandwidth_result *r, const struct curve *cv)
{
	uint64_t prev = c->p.range_start_bytes;
	size_t zcount = cv->nb + 1;

	r->zones = calloc(zcount, sizeof(*r->zones));
	if (!r->zones)
		return -ENOMEM;
	qsort(r->samples, r->nsamples, sizeof(*r->samples), cmp_sample);
	for (size_t z = 0; z < zcount; z++) {
		struct dg_bandwidth_zone *zone = &r->zones[z];
		uint64_t end = c->p.range_end_bytes;
		size_t a0 = z ? cv->ends[z - 1] : 0;

		if (z < cv->nb) {
			const struct boundary *b = &cv->bs[z];

			end = (uint64_t)llround((double)b->lo + (double)(b->hi - b->lo) / 2);
			end -= end % c->align;
			if (end <= prev)
				end = prev + c->align;
			if (end >= c->p.range_end_bytes)
				end = c->p.range_end_bytes - c->align;
		}
		zone->start_bytes = prev;
		zone->end_bytes = end;
		zone->mb_per_s =
		    rate_inside(r, zone->start_bytes, zone->end_bytes, &zone->nsamples);
		if (zone->nsamples == 0)
			zone->mb_per_s = rate_of_range(cv->v, a0, cv->ends[z]);
		if (!(zone->mb_per_s > 0))
			zone->mb_per_s = any_rate(cv->v, a0, cv->ends[z], cv->n);
		surface_rates(cv, zone);
		prev = end;
	}
	r->nzones = zcount;
	return curve_ends(r) ? -ENOMEM : 0;
}

int bw_find_zones(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, size_t n)
{
	struct curve cv = {.n = n, .noise = NOISE_FLOOR, .L = {.n = 1}};
	size_t usable = 0, m = n ? n : 1;
	int rc = -ENOMEM;

	cv.v = malloc(m * sizeof(*cv.v));
	cv.rates = malloc(m * sizeof(*cv.rates));
	cv.excl = malloc(m * sizeof(*cv.excl));
	cv.ends = malloc(m * sizeof(*cv.ends));
	cv.lev = malloc(m);
	if (!cv.v || !cv.rates || !cv.excl || !cv.ends || !cv.lev)
		goto out;
	if (n) /* r->samples is NULL when nothing was measured (an early stop) */
		memcpy(cv.v, r->samples, n * sizeof(*cv.v));
	for (size_t i = 0; i < n; i++) {
		cv.rates[i] = cv.v[i].mb_per_s;
		cv.excl[i] = !(cv.v[i].mb_per_s > 0);
		usable += !cv.excl[i];
	}
	rc = 0;
	if (usable == 0)
		goto out; /* nothing measured: no zones */
	/* A per-surface drive's levels are taken out before the zones are looked for. */
	rc = dg_zones_surfaces(cv.rates, cv.excl, n, LEVEL_MIN_SEP, cv.L.off, &cv.L.n, cv.lev,
			       &cv.L.spread);
	/* Levels that leave the samples scattered about them (surfaces that differ among
	 * themselves by less than their separation, a level split in two) would hide 2% steps
	 * still: the curve is then taken as measured. */
	if (cv.L.n > 1 && cv.L.spread > LEVEL_MAX_SPREAD)
		cv.L = (struct levels){.n = 1};
	for (size_t i = 0; !rc && cv.L.n > 1 && i < n; i++)
		if (!cv.excl[i])
			cv.rates[i] /= exp(cv.L.off[cv.lev[i]]);
	if (!rc)
		rc = segment(c, r, &cv, usable);
	if (!rc)
		rc = brackets(c, &cv);
	if (!rc && c->p.refine && r->complete && cv.nb > 0)
		rc = refine_all(c, r, cap, &cv);
	if (!rc)
		rc = place_zones(c, r, &cv);
out:
	curve_free(&cv);
	return rc;
}
