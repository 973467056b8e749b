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

#include "bandwidth_zones_priv.h"
#include "util.h"

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

/* One-off waits put back (put_back_waits): at least this many curve samples had one, ... */
#define ONE_OFF_MIN 10u
/* ... and at least one in this many; those within this factor of their median are put back. */
#define ONE_OFF_SHARE	5u
#define ONE_OFF_CLUSTER 1.3
/* Fewer (a serpentine band's turn: a head switch dearer than the cylinder steps about it, in a
 * few samples across the drive): put back when at least this many, and most of them, lie within
 * this factor of their median. */
#define ONE_OFF_FEW   3u
#define ONE_OFF_TIGHT 1.1
/* ... or when they are two curve samples' within this factor of each other: a zone change waits
 * anywhere in a turn, a turn costs the same each time (zoo 123 at measurement seed 4: 1.368 and
 * 1.382 ms, no refinement sample to add a third; two refinement samples that bracket zone
 * changes, zoo 126's 4.09 and 4.86 ms, are no pair). */
#define ONE_OFF_PAIR 1.03

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

/* Time-weighted rate of the usable samples [first, end) of an offset-ordered array: their rates
 * `rates` (corrected for surface levels), or as measured when NULL. */
static double rate_of_range(const struct dg_bandwidth_sample *v, const double *rates, size_t first,
			    size_t end)
{
	double bytes = 0, secs = 0;

	for (size_t i = first; i < end; i++) {
		double rate = rates ? rates[i] : v[i].mb_per_s;

		if (v[i].excluded || !(v[i].mb_per_s > 0))
			continue;
		bytes += (double)v[i].length_bytes;
		secs += (double)v[i].length_bytes / (rate * DG_MB);
	}
	return secs > 0 ? bytes / secs / DG_MB : 0;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct dg_bandwidth_sample *x = a, *y = b;

	return (x->offset_bytes > y->offset_bytes) - (x->offset_bytes < y->offset_bytes);
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
	bool falls;

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
	/* One zone over a curve that falls is no flat device: its steps could not be placed
	 * (smaller than the samples' scatter), and the reason says so, with the ends; the
	 * samples far from the one rate are then that fall, not too few samples. */
	falls = r->nzones == 1 && r->inner_mb_per_s < (1 - 2 * END_TOL) * r->outer_mb_per_s;
	if (falls && !r->flat_reason[0])
		snprintf(r->flat_reason, sizeof(r->flat_reason),
			 "the curve falls by %.0f%% from end to end (%.1f to %.1f MB/s), but no "
			 "zone boundary could be placed along it: one zone",
			 100 * (1 - r->inner_mb_per_s / r->outer_mb_per_s), r->outer_mb_per_s,
			 r->inner_mb_per_s);
	if (falls && strstr(r->flat_reason, "falls by"))
		return 0;
	if (far)
		return dg_warnings_add(
		    &r->notes,
		    "the zone fit leaves %zu sample%s more than %.1f%% from %s zone's "
		    "rate: too few samples for this drive's zones (outer and inner come "
		    "from the curve's ends)",
		    far, far == 1 ? "" : "s", 100 * tol, far == 1 ? "its" : "their");
	return 0;
}

/* A zone that reads faster than the one outside it by more than this, and 3 x the noise ... */
#define RISE_MIN 0.005
/*
 * ... is no recording zone (an inner zone holds fewer sectors per track): the steps are then
 * the runs of a serpentine drive's surfaces, each read at a rate of its own, or something else
 * the zone fit does not model, and the count is not to be trusted. Said, with the largest rise.
 */
static int rising_zones(struct dg_bandwidth_result *r)
{
	double tol = fmax(RISE_MIN, 3 * r->noise), worst = 0;
	size_t rises = 0;

	for (size_t i = 1; i < r->nzones; i++) {
		double up = r->zones[i].mb_per_s / r->zones[i - 1].mb_per_s - 1;

		if (up > tol) {
			rises++;
			worst = fmax(worst, up);
		}
	}
	if (!rises)
		return 0;
	return dg_warnings_add(&r->notes,
			       "%zu zone%s read%s faster than the zone before (by up to %.1f%%), "
			       "which no recording zone does: the curve's steps there are likely a "
			       "serpentine drive's surfaces, each read at its own rate, not zones; "
			       "the zone count is not to be trusted",
			       rises, rises == 1 ? "" : "s", rises == 1 ? "s" : "", 100 * worst);
}

static void curve_free(struct curve *cv)
{
	free(cv->v);
	free(cv->rates);
	free(cv->excl);
	free(cv->ends);
	free(cv->bs);
	free(cv->lev);
}

/* Timing decides, the kernel's flag only hints: loop, dm, md, virtio, iSCSI and many USB bridges
 * call a spinning disk non-rotational. Steps that stand out from the noise are zones whatever the
 * flag says; a disagreement is noted. 0 or -ENOMEM. */
static int flag_noted(const struct ctx *c, struct dg_bandwidth_result *r, const struct curve *cv)
{
	if (c->info->rotational != 0 || cv->nseg < 2)
		return 0;
	return dg_warnings_add(
	    &r->notes,
	    "the device reports itself non-rotational, but its sequential rate "
	    "falls in %zu steps, as a spinning disk's recording zones do: a layer "
	    "in between (loop, dm, md, a USB bridge, a VM) hides the disk",
	    cv->nseg - 1);
}

/* The zones found from serpentine runs (bw_runs_zones): the noise, the flag's note, and how they
 * were found. 0 or -ENOMEM. */
static int runs_noted(const struct ctx *c, struct dg_bandwidth_result *r, const struct curve *cv)
{
	r->noise = cv->noise;
	if (flag_noted(c, r, cv))
		return -ENOMEM;
	return dg_warnings_add(&r->notes,
			       "the curve reads in serpentine runs, one surface at a time, whose "
			       "rates repeat every %zu runs: zones start where a cycle's rate, "
			       "corrected for its surfaces, drops",
			       cv->surf_cycle);
}

/* The segments of the curve (src/zones.c), the samples set aside marked in r too, and the notes
 * on flatness and on a flag that hides the disk. 0, or -ENOMEM. */
static int segment(const struct ctx *c, struct dg_bandwidth_result *r, struct curve *cv,
		   size_t usable)
{
	/* Corrected for surface levels, the curve is no quieter than their own spread, and a
	 * step must stand out from it (a surface run is never a zone). */
	int rc = dg_zones_segment(cv->rates, cv->n, fmax(NOISE_FLOOR, cv->L.spread),
				  fmax(MIN_STEP, bw_levels_min_step(cv)), cv->excl, cv->ends,
				  &cv->nseg, &cv->noise);

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
	if (flag_noted(c, r, cv))
		return -ENOMEM;
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
	ra = rate_of_range(v, cv->L.n > 1 ? cv->rates : NULL, ia, la + 1);
	rb = rate_of_range(v, cv->L.n > 1 ? cv->rates : NULL, fb, ib);
	/* Kept only while they still tell the sides apart as the segments do. */
	if (ra > 0 && rb > 0 && (ra - rb) * (b->ra - b->rb) > 0) {
		b->ra = ra;
		b->rb = rb;
	}
}

#define LEVEL_REACH 3u /* samples the first bracket reaches each way on a per-surface curve */

/* The first bracket of boundary b between segment A's last usable sample la and B's first fb
 * (the segments span [a0, b1)): a noisy sample may have been put on the wrong side, so the
 * bracket reaches one usable sample further each way; its samples then narrow it when they can
 * class by the nearer rate (REFINE_Z sigma to spare), else refinement's larger samples do. */
static void bracket(const struct curve *cv, struct boundary *b, size_t la, size_t fb, size_t a0,
		    size_t b1)
{
	const struct dg_bandwidth_sample *v = cv->v;
	size_t pa = la, nf = fb;

	/* with surface levels, LEVEL_REACH samples: one near the boundary may read like the next
	 * zone's on another surface, and the segments' edge moves by a few */
	for (unsigned k = 0; k < (cv->L.n > 1 ? LEVEL_REACH : 1u); k++) {
		size_t p0 = pa, n0 = nf;

		while (pa > a0 && (pa == p0 || v[pa].excluded || !(v[pa].mb_per_s > 0)))
			pa--;
		while (nf + 1 < b1 && (nf == n0 || v[nf].excluded || !(v[nf].mb_per_s > 0)))
			nf++;
	}
	b->lo = v[pa].offset_bytes;
	b->hi = v[nf].offset_bytes + v[nf].length_bytes;
	b->lo_near = v[la].offset_bytes;
	b->hi_near = v[fb].offset_bytes + v[fb].length_bytes;
	b->la_mid = b->lo_near + v[la].length_bytes / 2;
	b->fb_mid = v[fb].offset_bytes + v[fb].length_bytes / 2;
	for (size_t i = pa; fabs(log(b->ra / b->rb)) / 2 >= REFINE_Z * cv->noise && i <= nf; i++) {
		double rate;

		if (v[i].mb_per_s > 0 && bw_level_rate(&cv->L, b, v[i].mb_per_s, &rate))
			bw_narrow(b, v[i].offset_bytes, v[i].length_bytes, rate);
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

	cv->capb = cv->nseg > 1 ? cv->nseg - 1 : 1;
	cv->bs = calloc(cv->capb, sizeof(*cv->bs));
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
		/* on a per-surface drive, the rates corrected for the levels: a segment's mix of
		 * surfaces is no zone's */
		b->ra = rate_of_range(v, cv->L.n > 1 ? cv->rates : NULL, a0, a1);
		b->rb = rate_of_range(v, cv->L.n > 1 ? cv->rates : NULL, b0, b1);
		local_rates(cv, la, fb, a0, b1, b);
		b->a_len = v[la].offset_bytes - v[a0].offset_bytes + v[la].length_bytes;
		b->b_len = v[b1 - 1].offset_bytes + v[b1 - 1].length_bytes - v[fb].offset_bytes;
		bracket(cv, b, la, fb, a0, b1);
		b->step = fabs(log(b->ra / b->rb));
		b->span = bw_refine_span(c, b, cv->noise);
		b->sigma = bw_noise_at(c, cv->noise, b->span ? b->span : c->p.sample_bytes);
	}
	bw_near_lens(cv);
	return 0;
}

void bw_curve_ends(struct curve *cv)
{
	size_t i = 0;

	for (size_t s = 0; s < cv->nb; s++) {
		uint64_t mid = bw_bracket_mid(&cv->bs[s]);

		while (i < cv->n && cv->v[i].offset_bytes + cv->v[i].length_bytes / 2 < mid)
			i++;
		cv->ends[s] = i;
	}
	cv->ends[cv->nb] = cv->n;
}

/* A segment the fit merged from two zones is about twice its neighbours: the target is a part of
 * the shortest segment around the boundary, not of a merged one. */
void bw_near_lens(struct curve *cv)
{
	for (size_t i = 0; i < cv->nb; i++) {
		struct boundary *b = &cv->bs[i];

		b->near_len = b->a_len < b->b_len ? b->a_len : b->b_len;
		if (i > 0 && cv->bs[i - 1].a_len < b->near_len)
			b->near_len = cv->bs[i - 1].a_len;
		if (i + 1 < cv->nb && cv->bs[i + 1].b_len < b->near_len)
			b->near_len = cv->bs[i + 1].b_len;
	}
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

/* The wait a sample's one-off took out, in ms (0: none). */
static double one_off_ms(const struct dg_bandwidth_sample *s)
{
	if (!(s->mb_per_s_waited > 0) || !(s->mb_per_s > 0))
		return 0;
	return (double)s->length_bytes / DG_MB * (1 / s->mb_per_s_waited - 1 / s->mb_per_s) * 1e3;
}

/* Whether a boundary may lie inside sample s: its bracket, or where it was put, overlaps it. */
static bool may_straddle(const struct dg_bandwidth_result *r, const struct curve *cv,
			 const struct dg_bandwidth_sample *s)
{
	uint64_t end = s->offset_bytes + s->length_bytes;

	for (size_t z = 0; z < cv->nb; z++) {
		uint64_t at = r->zones[z].end_bytes;

		if ((cv->bs[z].lo < end && cv->bs[z].hi > s->offset_bytes) ||
		    (at > s->offset_bytes && at < end))
			return true;
	}
	return false;
}

/*
 * A sample's one-off wait (the line's jump, bandwidth_sample.c) is meant for a zone change's
 * rotational wait, no part of either zone's rate. On a drive whose samples are shorter than two
 * cylinders most samples hold one cylinder step, which stands out from their head switches the
 * same way and is part of the rate: when a fifth of the curve's samples or more (and ten) had a
 * one-off taken out, the waits that cluster about their median (a cylinder step costs the same
 * skew everywhere; a zone change waits anywhere up to a turn, and is rare) are put back, except
 * where a boundary may lie inside the sample. Fewer one-offs are put back when they agree
 * closely (ONE_OFF_TIGHT): a walk's step dearer than the rest recurs at one cost (held-out zoo
 * 123: a head switch at each serpentine band's turn, 1.36-1.42 ms in 4 of 493 samples), while a
 * few zone changes, each waiting anywhere in a turn, rarely agree that closely.
 */
static void put_back_waits(struct dg_bandwidth_result *r, const struct curve *cv)
{
	double *w = malloc((r->nsamples + 1) * sizeof(*w)), med, lim;
	size_t k = 0, n = 0, curve = 0, close = 0;
	bool few, pair;

	if (!w)
		return; /* the waits stay out: the rates as the zone search had them */
	for (size_t i = 0; i < r->nsamples; i++) {
		if (r->samples[i].refine)
			continue;
		curve++;
		if (one_off_ms(&r->samples[i]) > 0)
			w[k++] = one_off_ms(&r->samples[i]);
	}
	few = k < ONE_OFF_MIN || k * ONE_OFF_SHARE < curve;
	if (!few) {
		med = dg_median(w, k);
	} else {
		/* the few: every sample's, the refinement's too (a band's turn is where it is) */
		for (size_t i = 0; i < r->nsamples; i++)
			if (one_off_ms(&r->samples[i]) > 0)
				w[n++] = one_off_ms(&r->samples[i]);
		med = n ? dg_median(w, n) : 0;
		for (size_t i = 0; i < n; i++)
			close += w[i] > med / ONE_OFF_TIGHT && w[i] < med * ONE_OFF_TIGHT;
	}
	pair = few && n == 2 && k == 2 && fmax(w[0], w[1]) <= ONE_OFF_PAIR * fmin(w[0], w[1]);
	free(w);
	if (few && !pair && (close < ONE_OFF_FEW || 2 * close <= n))
		return;
	lim = few ? ONE_OFF_TIGHT : ONE_OFF_CLUSTER;
	for (size_t i = 0; i < r->nsamples; i++) {
		struct dg_bandwidth_sample *s = &r->samples[i];
		double x = one_off_ms(s);

		if (x > 0 && x > med / lim && x < med * lim && !may_straddle(r, cv, s))
			s->mb_per_s = s->mb_per_s_waited;
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
		uint64_t end = c->p.range_end_bytes;

		if (z < cv->nb) {
			const struct boundary *b = &cv->bs[z];

			end = (uint64_t)llround((double)b->lo + (double)(b->hi - b->lo) / 2);
			end -= end % c->align;
			if (end <= prev)
				end = prev + c->align;
			if (end >= c->p.range_end_bytes)
				end = c->p.range_end_bytes - c->align;
		}
		r->zones[z].start_bytes = prev;
		r->zones[z].end_bytes = end;
		prev = end;
	}
	put_back_waits(r, cv);
	for (size_t z = 0; z < zcount; z++) {
		struct dg_bandwidth_zone *zone = &r->zones[z];
		size_t a0 = z ? cv->ends[z - 1] : 0;

		zone->mb_per_s =
		    rate_inside(r, zone->start_bytes, zone->end_bytes, &zone->nsamples);
		if (zone->nsamples == 0)
			zone->mb_per_s = rate_of_range(cv->v, NULL, a0, cv->ends[z]);
		if (!(zone->mb_per_s > 0))
			zone->mb_per_s = any_rate(cv->v, a0, cv->ends[z], cv->n);
		surface_rates(cv, zone);
	}
	r->nzones = zcount;
	return curve_ends(r) || rising_zones(r) ? -ENOMEM : 0;
}

int bw_find_zones(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, size_t n)
{
	struct curve cv = {.n = n, .noise = NOISE_FLOOR, .L = {.n = 1}};
	size_t usable = 0, m = n ? n : 1;
	bool by_runs = false;
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
	/* A serpentine drive's periodic surface runs give its zones where they show; else a
	 * per-surface drive's levels are taken out before the zones are looked for. */
	rc = bw_runs_zones(c, r, cap, &cv, &by_runs);
	if (!rc && by_runs)
		rc = runs_noted(c, r, &cv);
	if (!rc && !by_runs)
		rc = bw_levels_take_out(&cv);
	/* levels rejected: zones shorter than a band group may show as the surfaces' period */
	if (!rc && !by_runs && cv.L.rejected)
		rc = bw_period_zones(c, r, cap, &cv, &by_runs);
	if (!rc && !by_runs)
		rc = segment(c, r, &cv, usable);
	if (!rc && !by_runs && bw_levels_merge(&cv, r))
		rc = -ENOMEM;
	if (!rc && !by_runs)
		rc = bw_ramp_merge(&cv, r);
	if (!rc && !by_runs && cv.L.rejected)
		rc = bw_levels_falling(&cv, r);
	if (!rc && !by_runs)
		rc = brackets(c, &cv);
	if (!rc && c->p.refine && r->complete && cv.nb > 0)
		rc = bw_refine_all(c, r, cap, &cv);
	if (!rc && cv.ndropped &&
	    dg_warnings_add(&r->notes,
			    "%zu step%s of less than 2%% along the curve could not be placed by "
			    "refinement (too small against the samples' noise, or no time left): "
			    "merged into the neighbouring zones",
			    cv.ndropped, cv.ndropped == 1 ? "" : "s"))
		rc = -ENOMEM;
	if (!rc && !by_runs)
		rc = bw_strobe_zones(c, r, &cv);
	if (by_runs)
		cv.L = cv.surf;
	if (!rc)
		rc = place_zones(c, r, &cv);
out:
	curve_free(&cv);
	return rc;
}
