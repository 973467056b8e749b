/* SPDX-License-Identifier: MIT */
/*
 * Refinement of the zone boundaries of the bandwidth curve: bisection of each boundary's bracket
 * (the bisection method, Press et al., Numerical Recipes, 3rd ed. 2007, section 9.1) with extra
 * samples, each classed by the nearer of the two sides' rates; the samples' sizes chosen from the
 * curve's own noise, the largest steps first within the budget. A boundary is placed only where
 * the samples around it show a step (bandwidth_step.c), else bisection starts over; small steps
 * that could not be placed are merged away.
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

int bw_refine_sample(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, uint64_t mid,
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
	s.mb_per_s_waited = m->waited_mb_per_s;
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
	int rc = bw_refine_sample(c, r, cap, at, b->span, ma);

	if (!rc)
		rc = bw_refine_sample(c, r, cap, bt, b->span, mb);
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
		b->unconfirmed = !rc && !tell_apart(b, &ma, &mb);
		if (rc || b->unconfirmed)
			return rc;
	}
	b->ra = ma.mb_per_s;
	b->rb = mb.mb_per_s;
	b->referenced = true;
	b->measured = fabs(log(b->ra / b->rb));
	return 0;
}

/* Whether a refining sample's rate lies between the sides' rates, farther than REFINE_Z sigma
 * from both. */
static bool reads_between(const struct boundary *b, double rate)
{
	double x = log(rate), la = log(b->ra), lb = log(b->rb);

	return (x - la) * (x - lb) < 0 && fmin(fabs(x - la), fabs(x - lb)) > REFINE_Z * b->sigma;
}

#define MERGED_SPANS 32u /* a bracket this many samples wide: one inside it straddles rarely */

/* Whether bisection is done: the bracket within `target`, or two refining samples wide (as far
 * as samples can tell; closer ones would also read what the drive still caches from the last). */
static bool bracket_done(const struct boundary *b, uint64_t target)
{
	return b->hi <= b->lo || b->hi - b->lo <= target || b->hi - b->lo <= 2 * b->span;
}

/* The bisection's state for one boundary: its target, start and allowance, and the samples
 * taken (the references count among them). */
struct bisection {
	uint64_t target, t0;
	double allowance_ns;
	unsigned used;
};

/* Bisects b's bracket until it is done, the allowance or REFINE_MAX_STEPS samples are spent, or
 * samples cannot tell the sides apart. Each sample is classed by the nearer rate (robust to
 * noise up to half the step) and moves one end of the bracket. */
static int bisect(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct boundary *b,
		  const struct levels *L, struct bisection *z)
{
	/* where in the bracket to probe after 0, 1, 2, 3 samples in a row that could not tell */
	static const double at[] = {0.5, 0.25, 0.75, 0.375};
	unsigned unsure = 0;
	bool sided = false; /* samples that cannot tell go to bw_surface_side at once */

	for (; z->used < REFINE_MAX_STEPS; z->used++) {
		uint64_t mid, start;
		struct meas m;
		double rate, got;
		int rc;

		if (bracket_done(b, z->target) || bw_stopped(c) ||
		    (double)(dg_engine_device_time_ns(c->e) - z->t0) >= z->allowance_ns)
			break;
		/* Nor may its timed bytes have been read lately, by any sample: a drive with a
		 * large cache keeps several streams, whatever moved its head since. */
		mid = b->lo + (unsure ? (uint64_t)(at[unsure] * (double)(b->hi - b->lo))
				      : (b->hi - b->lo) / 2);
		start = refine_start(c, mid, b->span);
		if (bw_recently_read(c, start + bw_positioning_bytes(c, b->span), start + b->span))
			break;
		rc = bw_refine_sample(c, r, cap, mid, b->span, &m);
		bw_report(c, 1);
		if (rc)
			return rc;
		if (!m.ok)
			break;
		/* a sample of whole cylinders reads the zone's rate end to end (cylinder_spans) */
		got = b->cyl && m.e2e_mb_per_s > 0 ? m.e2e_mb_per_s : m.mb_per_s;
		if (!bw_level_rate(L, b, got, &rate) || bw_surface_overlap(c, L, b, got)) {
			struct composite cp;

			if (++unsure < ARRAY_SIZE(at) && !sided)
				continue;
			/* none told the side: a composite, or the sample's band neighbours */
			rc = bw_surface_side(c, r, b, mid, z->target, &m, &cp);
			if (rc || !cp.valid)
				return rc;
			sided = true;
			unsure = 0;
			bw_narrow(b, cp.off, cp.len, cp.mb_per_s);
			continue;
		}
		unsure = 0;
		/*
		 * A sample of whole cylinders that reads a rate between the sides, a quarter of
		 * the step from either, in a bracket too wide for it to straddle the boundary but
		 * by chance, reads a zone between them: the fit merged two steps (zoo 30: 1.9% and
		 * 1.9%, 8.6 GB apart). The larger of the two is bisected on, which keeps every
		 * sample classed so far on its side (each was classed by the nearer rate, and the
		 * level is nearer the smaller step's far side). The step stays the curve's: what
		 * must be found is still there, and a sample that did straddle (zoo 66 at 567 GB)
		 * only moves the side's rate toward the other's.
		 */
		if (b->cyl && b->hi - b->lo > MERGED_SPANS * b->span && reads_between(b, rate) &&
		    fmin(fabs(log(rate / b->ra)), fabs(log(rate / b->rb))) > b->step / 4) {
			if (fabs(log(b->ra / rate)) >= fabs(log(rate / b->rb)))
				b->rb = rate;
			else
				b->ra = rate;
		}
		bw_narrow(b, m.off, m.len, rate);
	}
	return 0;
}

/* The bracket a boundary's bisection aims at: REFINE_TARGET of the smaller zone, or of the
 * curve's shortest segment when that is shorter (one the fit merged from several zones is longer
 * than each: twice the target let zoo 87's boundaries land 150 MB off, 1.2% of its zones). For a
 * step that must be found when the budget cannot hold them all (`loose`), twice that: its place
 * is the bracket's middle, within half the bracket of the truth, and the 2% step classes its
 * samples far from their noise (a small step's brackets are off by a good part of their width:
 * zoo 87). Finer, their bisections take the time the boundaries after them need; with time
 * enough, the 1% bracket keeps two runs of one drive close (test_compare: hgst-7k1000 seed 7
 * put its first boundary 222 MB off at 2%, and a curve sample inside its zone read the next
 * one's rate). */
static uint64_t target_of(const struct ctx *c, const struct boundary *b, uint64_t shortest)
{
	uint64_t t = (uint64_t)((b->loose ? 2 : 1) * REFINE_TARGET *
				(double)(b->near_len < shortest ? b->near_len : shortest));

	return t < c->align ? c->align : t;
}

/* The device time a boundary's bisection takes: a sample for each halving of its bracket down
 * to the target, one more, and its references when its samples are larger than the curve's. */
static double bisection_ns(const struct ctx *c, const struct boundary *b, uint64_t target)
{
	double each = (double)b->span / (fmin(b->ra, b->rb) * DG_MB) * 1e9, halvings = 0;

	if (b->hi > b->lo + target)
		halvings = ceil(log2((double)(b->hi - b->lo) / (double)target));
	return (halvings + 1 + (b->span > c->p.sample_bytes && !b->referenced ? 2 : 0)) * each;
}

/*
 * The end of the last curve sample before the one that ends at `at` (the first bracket's end it
 * set), `first` when none; and the start of the first curve sample after the one that starts at
 * `at`, `end` when none. Refining samples are left out: those of the bisection that closed on
 * that end lie inside the first bracket.
 */
static uint64_t curve_before(const struct dg_bandwidth_result *r, const struct boundary *b,
			     uint64_t at, uint64_t first)
{
	uint64_t best = first;

	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &r->samples[i];
		uint64_t e = s->offset_bytes + s->length_bytes;

		if (!s->refine && e + b->span <= at && e > best)
			best = e;
	}
	return best;
}

static uint64_t curve_after(const struct dg_bandwidth_result *r, const struct boundary *b,
			    uint64_t at, uint64_t end)
{
	uint64_t best = end;

	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &r->samples[i];

		if (!s->refine && s->offset_bytes >= at + b->span && s->offset_bytes < best)
			best = s->offset_bytes;
	}
	return best;
}

/*
 * Where bisection ended on no step, how it starts over (false: it cannot). Samples that read one
 * level between the sides' rates there: the bracket holds more than one step (the fit merged
 * them), and the larger of the two around that level is bisected again from the first bracket
 * [*lo0, *hi0] with the samples taken so far. A bracket that closed on an end of the first one:
 * a sample was put on the wrong side of it, and the step lies beyond; the first bracket reaches
 * its width further that way, and at least to the curve sample before the one that set that end
 * (that one was the sample on the wrong side: zoo 28 at measurement seed 2, a curve sample 11 GB
 * past a 2.6% step read 1.1% fast, and the bracket widened twice by its own 4.7 GB before its
 * time ran out, the step 2.3 GB further), and bisection goes on with fresh samples. Not when this
 * bisection took no sample (`sampled` false): the bracket came done from refine_rounds, and an end
 * it shares with the first one says nothing of a sample's side (zoo 81: a bracket of 118 MB holding
 * its 2.1% step was moved 150 MB off, 1.1 x the tolerance, where no step showed).
 */
static bool start_over(const struct ctx *c, const struct dg_bandwidth_result *r,
		       const struct levels *L, struct boundary *b, double level, bool sampled,
		       uint64_t *lo0, uint64_t *hi0)
{
	uint64_t w = *hi0 - *lo0, first = c->p.range_start_bytes, end = c->p.range_end_bytes;

	if (level > 0 && reads_between(b, level)) {
		if (fabs(log(b->ra / level)) >= fabs(log(level / b->rb)))
			b->rb = level;
		else
			b->ra = level;
		b->step = fabs(log(b->ra / b->rb));
		bw_renarrow(r, L, b, *lo0, *hi0);
		return true;
	}
	if (!sampled)
		return false;
	if (b->lo == *lo0 && *lo0 > first) {
		uint64_t prev = curve_before(r, b, *lo0, first);

		*lo0 = *lo0 - first > w ? *lo0 - w : first;
		*lo0 = prev < *lo0 ? prev : *lo0;
		b->lo = *lo0;
		return true;
	}
	if (b->hi == *hi0 && *hi0 < end) {
		uint64_t next = curve_after(r, b, *hi0, end);

		*hi0 = end - *hi0 > w ? *hi0 + w : end;
		*hi0 = next > *hi0 ? next : *hi0;
		b->hi = *hi0;
		return true;
	}
	return false;
}

#define RELEVELS 2 /* bisections started over (start_over) where one ended on no step */

/*
 * Where bisection ended with one side's run too short for bw_step_shown to judge (its samples
 * all but one on the other side: each moved the same end of the bracket), one refining sample on
 * that side, clear of the bracket by a sample's length (the sample that set that end lies next
 * to it, and what it read may still be cached); the step is judged again with it. Started over
 * instead, bisection widened the bracket and took it again, a sample or two each time: zoo 113
 * (per-surface cylinder, 5 heads, 25 must-find steps) did so for 11 boundaries and left a 2.05%
 * step it then had no time for. *more when the sample was measured.
 */
static int side_sample(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap,
		       struct boundary *b, const struct levels *L, uint64_t reach, double noise,
		       struct bisection *z, bool *more)
{
	int side = bw_step_short_side(c, r, L, b, reach, noise);
	uint64_t mid, start;
	struct meas m;
	int rc;

	*more = false;
	if (side == 0 || z->used >= REFINE_MAX_STEPS || bw_stopped(c) ||
	    (double)(dg_engine_device_time_ns(c->e) - z->t0) >= z->allowance_ns)
		return 0;
	if (side > 0)
		mid = b->hi + b->span + b->span / 2;
	else if (b->lo > 2 * b->span)
		mid = b->lo - b->span - b->span / 2;
	else
		return 0;
	start = refine_start(c, mid, b->span);
	if (bw_recently_read(c, start + bw_positioning_bytes(c, b->span), start + b->span))
		return 0;
	rc = bw_refine_sample(c, r, cap, mid, b->span, &m);
	bw_report(c, 1);
	z->used++;
	*more = !rc && m.ok;
	return rc;
}

/* The device time left of REFINE_TOTAL x the budget (none when the curve took more). */
static double refine_total_left_ns(const struct ctx *c)
{
	double spent = (double)(dg_engine_device_time_ns(c->e) - c->dev0_ns);

	return fmax(0, REFINE_TOTAL * (double)c->p.time_budget_ns - spent);
}

/*
 * Bisection of one boundary with samples of the curve's size (the noise of a refining sample is
 * the curve's), until the bracket is its target (target_of); then the samples around
 * it must show a step there (bw_step_shown), else bisection starts over (start_over). A bracket
 * that start_over widened is a bisection the allowance did not hold: its cost is added, from what
 * is left of the refinement's time (zoo 28 at measurement seed 2: a widened bracket holding its
 * 2.6% step stopped 0.74 GB wide for want of one sample, and the step was dropped).
 */
int bw_refine_boundary(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap,
		       struct boundary *b, const struct curve *cv, uint64_t shortest,
		       double allowance_ns)
{
	struct bisection z = {.t0 = dg_engine_device_time_ns(c->e), .allowance_ns = allowance_ns};
	uint64_t lo0 = b->lo, hi0 = b->hi, reach, w0;
	struct boundary prev = *b;
	double noise;

	z.target = target_of(c, b, shortest);
	/* Samples larger than the curve's first measure their own reference rates: worth it only
	 * when the allowance holds those and a few bisection steps. */
	if (b->span > c->p.sample_bytes && !b->referenced) {
		double each_ns = (double)b->span / (fmin(b->ra, b->rb) * DG_MB) * 1e9;
		int rc;

		if (allowance_ns < (2 + REFINE_MIN_STEPS) * each_ns)
			return 0;
		rc = reference_rates(c, r, cap, b, &z.used);
		if (rc)
			return rc;
	}
	reach = 2 * (hi0 - lo0 > b->span ? hi0 - lo0 : b->span);
	/* the noise of a curve sample next to b (its own refining samples' sized by it) */
	noise =
	    b->span ? b->sigma * pow((double)b->span / (double)c->p.sample_bytes, 1.5) : cv->noise;
	for (unsigned round = 0;; round++) {
		double level = 0, jump[2];
		unsigned used0 = z.used;
		int rc = bisect(c, r, cap, b, &cv->L, &z);
		bool done = bracket_done(b, z.target);

		if (rc)
			return rc;
		/* A bisection started over and left unfinished: its bracket stands where the
		 * samples show a step in it, else the last one. */
		if (!done && round > 0 &&
		    !bw_step_shown(c, r, &cv->L, b, reach, noise, true, &level, jump))
			*b = prev;
		b->placed =
		    done && bw_step_shown(c, r, &cv->L, b, reach, noise, round > 0, &level, jump);
		if (done && !b->placed && level == 0) {
			bool more = false;

			rc = side_sample(c, r, cap, b, &cv->L, reach, noise, &z, &more);
			if (rc)
				return rc;
			if (more)
				b->placed = bw_step_shown(c, r, &cv->L, b, reach, noise, round > 0,
							  &level, jump);
			/* not a bisection sample: start_over's `sampled` asks of those */
			used0 += more;
		}
		b->cut_jump = done ? jump[0] : NAN;
		b->cut_se = done ? jump[1] : NAN;
		if (b->placed || !done || round == RELEVELS)
			return 0;
		prev = *b;
		w0 = hi0 - lo0;
		if (!start_over(c, r, &cv->L, b, level, z.used > used0, &lo0, &hi0))
			return 0;
		if (hi0 - lo0 > w0)
			z.allowance_ns +=
			    fmin(bisection_ns(c, b, z.target), refine_total_left_ns(c));
	}
}

/* The noise (sigma of ln MB/s) of a sample of `span` bytes, from the curve's at its own size:
 * a sample's error is a few positions' worth of time over its whole time, and a longer sample
 * also averages more of them, so it falls about as the 1.5th power of the size (measured on the
 * zoo's drives between 8 and 32 MiB). */
double bw_noise_at(const struct ctx *c, double noise, uint64_t span)
{
	return noise * pow((double)c->p.sample_bytes / (double)span, 1.5);
}

/* The size of a boundary's refining samples: the smallest of one, two or four times the curve's
 * size whose noise lets a sample class by the nearer rate with REFINE_Z sigma to spare (the
 * curve's size for a boundary not refined). 0 when even the largest cannot. */
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

#define NONE_T 2.0 /* a jump at the cut under this many standard errors: none shown */

/* Drops the boundaries refinement could not place whose step is less than KEEP_STEP: a small
 * step bisected with samples as noisy as itself, or left for want of time, lies anywhere in its
 * bracket, and a boundary reported there would be no zone's. Their segments merge. So are those
 * whose step no refining samples showed: a hidden one (bandwidth_split.c), or one whose reference
 * rates could not tell its sides apart (zoo 68: a boundary the fit put between two steps of
 * 1.7%, 12 GB from either, bisected where the curve's samples scattered). A step the curve put
 * under KEEP_STEP whose reference rates measured KEEP_STEP or more is a zone step, kept as those
 * the curve shows are: between its references lies a step of 2%, or steps that add up to it, and
 * bisection classing by the nearer rate ends on one of them (zoo 1: a 2.15% step the curve put
 * at 1.82% and its references at 2.12%, bracketed to 430 MB around the truth, was dropped for a
 * jump of 3.9 standard errors where 4 are asked). Not on a curve with surface levels or runs: a
 * reference there reads one surface's rate, not its zone's. And a small step (by both measures)
 * placed where the runs nearest it jump but its sides' zones, all their samples, do not stand
 * apart (bw_step_stands): a sample's rate moves with where in a track it starts (how many track
 * switches its timed reads hold), by more than a small step on some drives (zoo 110: one zone's
 * samples read 93.0 or down to 91.7 MB/s, and a bisection whose last samples read low on one side
 * only placed a 0.67% step 19.5 tolerances from any; zoo 233 two, 31 and 36 tolerances off, around
 * a zone 0.9% faster than the one before). Only on a curve of one rate per zone: a per-surface
 * side's samples read several surfaces' rates (zoo 36 and 65 lost true steps). And on such a
 * curve a step of KEEP_STEP or more left unplaced where its bisection ended (bracket done) with
 * the runs of samples either side of the cut showing no step (bw_step_shown's jump under NONE_T
 * of its standard errors, and under half the step, measured to better than half the step): the
 * curve's step was smaller ones its segmentation merged, and none lies where bisection ended
 * (held-out zoo 133: steps of 1.22% and 1.50% 27 GB apart read as one of 2.07%, bisected to
 * 166.37 GB, 1.4 GB before the nearer, where the runs jumped 0.73% +- 0.49%). Kept, it is a
 * boundary made up; were it a zone step, it would be one missed either way. A jump that stands
 * out is a step, if a smaller one (a 20-sample curve merges many: test_bandwidth). Not with
 * samples of whole cylinders (b->cyl): they are classed by their rate end to end, which the runs
 * do not read. */
static void drop_unplaced(const struct ctx *c, const struct dg_bandwidth_result *r,
			  struct curve *cv)
{
	uint64_t from = c->p.range_start_bytes;
	bool flat = cv->L.n < 2 && !cv->by_runs; /* one rate per zone: no surface levels */
	size_t keep = 0;

	for (size_t i = 0; i < cv->nb; i++) {
		const struct boundary *b = &cv->bs[i];
		uint64_t to =
		    i + 1 < cv->nb ? bw_bracket_mid(&cv->bs[i + 1]) : c->p.range_end_bytes;
		bool small =
		    b->step < KEEP_STEP && (b->measured < KEEP_STEP || cv->L.n > 1 || cv->by_runs);
		bool none = flat && !small && !b->cyl && b->cut_jump < b->step / 2 &&
			    b->cut_se < b->step / 2 && b->cut_jump < NONE_T * b->cut_se;

		if (!b->placed && (small || none || b->hidden || b->unconfirmed)) {
			cv->ndropped++;
			continue;
		}
		if (flat && b->placed && small &&
		    !bw_step_stands(c, r, &cv->L, b, from, to, cv->noise)) {
			cv->ndropped++;
			continue;
		}
		from = bw_bracket_mid(b);
		cv->bs[keep] = cv->bs[i];
		cv->ends[keep++] = cv->ends[i];
	}
	cv->ends[keep] = cv->ends[cv->nb];
	cv->nb = keep;
	cv->nseg = keep + 1;
}

double bw_refine_left_ns(const struct ctx *c, const struct refine_run *u)
{
	return u->budget_ns - (double)(dg_engine_device_time_ns(c->e) - u->t0);
}

double bw_refine_cost_ns(const struct ctx *c, const struct boundary *b, const struct refine_run *u)
{
	return bisection_ns(c, b, target_of(c, b, u->shortest));
}

#define CYL_PROBE_S 0.6 /* the cylinder probe streams this long (bandwidth_cylinder.c) */

/*
 * Where the curve cannot hold the must-find steps' bisections (order[0..must)): on a drive of
 * cylinder layout with per-surface formats, refining samples of whole cylinders read each zone's
 * own rate, every surface once, and those shorter than a boundary's samples take their place
 * (zoo 54: cylinders of 9 to 13 MiB against samples of 16 and 32 MiB). The cylinder's time is
 * measured once (bw_cylinder_time), between two curve samples in the middle of the longest
 * segment; its length at a boundary is that time x the sides' mean rate, in as many cylinders as
 * hold MIN_TIMED_READS reads, and the sample is classed by its rate end to end (a line's slope
 * over one period is moved by where in it the slow surfaces lie: zoo 69's boundaries 0.8 and
 * 1.8 GB off). Not on a curve with surface levels or runs (a serpentine drive's sample reads one
 * surface), nor where the stream shows no cylinder's period.
 */
static int cylinder_spans(struct ctx *c, struct curve *cv, const size_t *order, size_t must)
{
	size_t best = 0, longest = 0, i;
	uint64_t lo, hi, len;
	double tau, rate;
	int rc;

	if (c->p.write || must == 0 || cv->n < 4 || cv->L.n > 1 || cv->by_runs)
		return 0;
	for (size_t s = 0; s < cv->nseg; s++) {
		size_t a = s ? cv->ends[s - 1] : 0, n = cv->ends[s] - a;

		if (n > longest) {
			longest = n;
			best = s;
		}
	}
	i = (best ? cv->ends[best - 1] : 0) + longest / 2;
	if (longest < 3 || i + 1 >= cv->n)
		return 0;
	i = i > 0 ? i - 1 : i;
	rate = cv->v[i].mb_per_s;
	lo = cv->v[i].offset_bytes + cv->v[i].length_bytes + READ_AHEAD_MARGIN;
	lo += c->align - 1 - (lo + c->align - 1) % c->align;
	hi = cv->v[i + 1].offset_bytes;
	len = (uint64_t)(CYL_PROBE_S * rate * DG_MB);
	if (!(rate > 0) || hi < lo || hi - lo < len + (1u << 20))
		return 0;
	rc = bw_cylinder_time(c, lo, len, &tau);
	if (rc || !(tau > 0))
		return rc;
	for (size_t k = 0; k < must; k++) {
		struct boundary *b = &cv->bs[order[k]];
		double cyl = tau * sqrt(b->ra * b->rb) * DG_MB;
		uint64_t timed, pos = bw_positioning_bytes(c, b->span);
		double kc = fmax(1, ceil((double)MIN_TIMED_READS * c->rb / cyl));

		/* the fit leaves out the first two reads (fit_rate): the cylinders start after */
		timed = (uint64_t)(kc * cyl + 0.5 * c->align) + 2 * (uint64_t)c->rb;
		timed -= timed % c->align;
		if (timed >= b->span - pos || timed < c->p.block_bytes)
			continue;
		b->span = timed + c->p.block_bytes;
		b->cyl = true;
	}
	return 0;
}

#define COARSE_FIRST 8u /* the first round bisects to this x each boundary's target */

/*
 * Rounds of increasing precision over the steps that must be found (order[0..must), the largest
 * first), when what is left of the budget cannot hold their bisections: each round bisects every
 * bracket to `factor` x its target (from 8 x down to 2 x; the targets loosened to their bound),
 * sharing what is left, so that every boundary gets near its bound before any gets finer. Taken
 * in turn to the end instead, the first boundaries took the budget and the last were left at
 * their curve brackets (zoo 54, 66, 96).
 */
static int refine_rounds(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap,
			 struct curve *cv, const size_t *order, size_t must, size_t todo,
			 const struct refine_run *u)
{
	double need = 0;
	int rc;

	/* the steps the curve puts near 2% may be zone steps too: their time counts */
	for (size_t k = 0; k < todo; k++)
		if (k < must || cv->bs[order[k]].step >= NEAR_KEEP * KEEP_STEP)
			need += bw_refine_cost_ns(c, &cv->bs[order[k]], u);
	if (need <= bw_refine_left_ns(c, u))
		return 0;
	for (size_t k = 0; k < must; k++)
		cv->bs[order[k]].loose = true;
	rc = cylinder_spans(c, cv, order, must);
	if (rc)
		return rc;
	for (uint64_t factor = COARSE_FIRST; factor > 1; factor /= 2) {
		size_t n = 0;

		for (size_t k = 0; k < must; k++) {
			const struct boundary *b = &cv->bs[order[k]];

			n += !b->unconfirmed &&
			     !bracket_done(b, factor * target_of(c, b, u->shortest));
		}
		for (size_t k = 0; k < must && n > 0 && !bw_stopped(c); k++) {
			struct boundary *b = &cv->bs[order[k]];
			struct bisection z = {.t0 = dg_engine_device_time_ns(c->e)};

			z.target = factor * target_of(c, b, u->shortest);
			if (b->unconfirmed || bracket_done(b, z.target))
				continue;
			z.allowance_ns = bw_refine_left_ns(c, u) / (double)n--;
			rc = 0;
			if (b->span > c->p.sample_bytes && !b->referenced)
				rc = reference_rates(c, r, cap, b, &z.used);
			if (!rc && !b->unconfirmed)
				rc = bisect(c, r, cap, b, &cv->L, &z);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* The steps that must be found (order[0..must), the largest first) share what is left of the
 * budget, each in turn (what one leaves goes to the next); those whose bisection was cut short
 * then share what the others left, going on from their brackets. One whose reference rates did
 * not tell its sides apart is not taken again: its references would be measured again, to the
 * same end (zoo 53: four samples of 64 MiB, 2.8 s, twice over). */
static int refine_must(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct curve *cv,
		       const size_t *order, size_t must, const struct refine_run *u)
{
	for (int pass = 0; pass < 2; pass++) {
		size_t n = 0;

		for (size_t k = 0; k < must; k++) {
			const struct boundary *b = &cv->bs[order[k]];

			n += !b->unconfirmed &&
			     (pass == 0 || !bracket_done(b, target_of(c, b, u->shortest)));
		}
		for (size_t k = 0; k < must && n > 0 && !bw_stopped(c); k++) {
			struct boundary *b = &cv->bs[order[k]];
			int rc;

			if (b->unconfirmed ||
			    (pass > 0 && bracket_done(b, target_of(c, b, u->shortest))))
				continue;
			rc = bw_refine_boundary(c, r, cap, b, cv, u->shortest,
						bw_refine_left_ns(c, u) / (double)n--);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/*
 * One of the boundaries the curve shows under KEEP_STEP, within `allowance_ns`. When what is
 * left cannot hold them all (u->triage), samples larger than the curve's measure its reference
 * rates first (when the allowance holds them and a few bisection steps), and a boundary whose
 * references put its step under NEAR_KEEP x KEEP_STEP, or do not tell its sides apart, is
 * deferred (refine_deferred): the curve's estimate of a step is as noisy as its samples, the
 * references' a fraction of that, and the time goes first to the steps that may be zone steps
 * (zoo 1: a 2.08% step the curve put at 1.62% was left for want of the time that steps of 1.1 to
 * 1.5% took). Not KEEP_STEP itself: the references are the segments' meeting samples, one of
 * which may straddle the boundary and read less than the step (zoo 133: 1.57% for 2.05%).
 */
static int refine_shown(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct curve *cv,
			struct boundary *b, const struct refine_run *u, double allowance_ns)
{
	double each_ns = (double)b->span / (fmin(b->ra, b->rb) * DG_MB) * 1e9;
	uint64_t t0 = dg_engine_device_time_ns(c->e);
	unsigned used = 0;
	int rc;

	if (u->triage && b->span > c->p.sample_bytes && !b->referenced &&
	    allowance_ns >= (2 + REFINE_MIN_STEPS) * each_ns) {
		rc = reference_rates(c, r, cap, b, &used);
		if (rc)
			return rc;
		/* reference_rates set b->measured when it could tell the sides apart */
		if (b->unconfirmed || (b->referenced && b->measured < NEAR_KEEP * KEEP_STEP)) {
			b->deferred = true;
			if (!b->referenced)
				b->measured = 0;
			return 0;
		}
		allowance_ns -= (double)(dg_engine_device_time_ns(c->e) - t0);
	}
	return bw_refine_boundary(c, r, cap, b, cv, u->shortest, allowance_ns);
}

/* The deferred boundaries (refine_shown, bw_split_take), the largest measured step first, each
 * with the time its bisection takes (twice that, at most what is left) and only while what is
 * left holds it. One left unplaced is dropped (drop_unplaced), as before when time ran out. */
static int refine_deferred(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap,
			   struct curve *cv, const struct refine_run *u)
{
	for (;;) {
		struct boundary *b = NULL;
		double cost, left;
		int rc;

		for (size_t i = 0; i < cv->nb; i++)
			if (cv->bs[i].deferred && (!b || cv->bs[i].measured > b->measured))
				b = &cv->bs[i];
		if (!b || bw_stopped(c))
			return 0;
		b->deferred = false;
		cost = bw_refine_cost_ns(c, b, u);
		left = bw_refine_left_ns(c, u);
		if (cost > left)
			continue;
		rc = bw_refine_boundary(c, r, cap, b, cv, u->shortest, fmin(left, 2 * cost));
		if (rc)
			return rc;
	}
}

/* The steps the curve's scatter hid (bandwidth_split.c), the largest first, then the boundaries
 * of the curve that need not be found (order[0..n), the largest step first), each with the time
 * its bisection takes (twice that, at most what is left) and only while what is left holds it;
 * then, when what is left could not hold them all, those deferred for a step their refining
 * samples measured too small to be a zone step (refine_shown, bw_split_take).
 * A hidden step of 2% must be found; one the curve shows is below 2% by its estimate (placing
 * them in the order of their steps lost zoo 69's 2.06% step to steps of 1.6 to 1.9%). */
static int refine_rest(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct curve *cv,
		       const size_t *order, size_t n, const struct refine_run *u)
{
	struct refine_run t = *u;
	struct split_search ss;
	int rc = bw_split_init(&ss, cv);
	double need = 0;

	/* deferred only when what is left cannot hold them all: else they are taken in turn */
	for (size_t k = 0; k < n; k++)
		need += bw_refine_cost_ns(c, &cv->bs[order[k]], u);
	t.triage = need > bw_refine_left_ns(c, u);
	u = &t;
	for (size_t k = 0; !rc && !bw_stopped(c);) {
		double hidden = bw_split_peek(cv, &ss), cost, left;
		struct boundary *b;

		if (k == n && hidden == 0)
			break;
		if (hidden > 0) {
			rc = bw_split_take(c, r, cap, cv, u, &ss);
			continue;
		}
		b = &cv->bs[order[k++]];
		cost = bw_refine_cost_ns(c, b, u);
		left = bw_refine_left_ns(c, u);
		if (cost <= left)
			rc = refine_shown(c, r, cap, cv, b, u, fmin(left, 2 * cost));
	}
	bw_split_free(&ss);
	return rc ? rc : refine_deferred(c, r, cap, cv, u);
}

/* The device time the refinement may take from now: REFINE_TOTAL of the budget in all, at least
 * REFINE_MIN of it. */
static double refine_budget_ns(const struct ctx *c)
{
	double spent = (double)(dg_engine_device_time_ns(c->e) - c->dev0_ns);

	return fmax(REFINE_MIN, REFINE_TOTAL - spent / (double)c->p.time_budget_ns) *
	       (double)c->p.time_budget_ns;
}

/* Bisects every boundary that can be placed within REFINE_TOTAL x the budget (a curve that took
 * more than the budget, the minimum count of samples, still refines for REFINE_MIN x it): the
 * steps that must be found first (refine_must); the others then in turn, the largest first,
 * each with the time its bisection takes (twice that, at most what is left) and only while what
 * is left holds it: a bisection cut short places nothing, and time shared among more boundaries
 * than the budget holds is lost. Then drops the small ones left unplaced. */
int bw_refine_all(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct curve *cv)
{
	struct refine_run u = {.t0 = dg_engine_device_time_ns(c->e), .shortest = UINT64_MAX};
	size_t *order = malloc(cv->nb * sizeof(*order)), todo = 0, must = 0;
	int rc;

	if (!order)
		return -ENOMEM;
	u.budget_ns = refine_budget_ns(c);
	for (size_t i = 0; i < cv->nb; i++)
		cv->bs[i].cut_jump = NAN;
	bw_size_by_local_noise(c, cv);
	for (size_t i = 0; i < cv->nb; i++) {
		if (placeable(c, &cv->bs[i], cv->noise))
			order[todo++] = i;
		if (cv->bs[i].a_len < u.shortest)
			u.shortest = cv->bs[i].a_len;
		if (cv->bs[i].b_len < u.shortest)
			u.shortest = cv->bs[i].b_len;
	}
	qsort_r(order, todo, sizeof(*order), cmp_step, cv->bs);
	c->phase = "zones";
	c->units_done = 0;
	c->units_total = (double)todo * REFINE_STEPS_GUESS;
	for (size_t k = 0; k < todo; k++)
		must += cv->bs[order[k]].step >= KEEP_STEP;
	rc = refine_rounds(c, r, cap, cv, order, must, todo, &u);
	if (!rc)
		rc = refine_must(c, r, cap, cv, order, must, &u);
	if (!rc)
		rc = refine_rest(c, r, cap, cv, order + must, todo - must, &u);
	free(order);
	bw_sort_boundaries(cv);
	if (rc)
		return rc;
	if (bw_stopped(c))
		r->complete = false;
	else
		drop_unplaced(c, r, cv);
	return 0;
}
