/* SPDX-License-Identifier: MIT */
/*
 * The seek profile: rotation first (rotation.c: T, overhead, K0), then the full stroke, then
 * the seek curve at log-spaced and linear distances, its Ruemmler-Wilkes fit, and the span IOPS
 * (iops.c). Every K comes from the phase bisection of seek_legs.c; seek = K - K0.
 *
 * Curve: for each distance D, start offsets x spread over [0, capacity - D] on a jittered grid
 * (the truth is the mean of move(x, x + D) over x uniform, drive-spec.md), each measured from
 * x + D down to x (a backward leg, which no read-ahead serves) and back (seek_curve.c). The
 * start offsets are visited in ascending order so that going from one pair to the next is a
 * short seek. Budget: the time budget is the curve's (full stroke included); the rotation step
 * (about 400 reads) and the spans (6 x 49 pairs; 5 x 5 more for a span whose pairs spread more
 * than its 3 % allows, within 1.45 times the budget for the phase) come on top. After the full
 * stroke the samples per distance are planned from a cost model (each read costs K0 + seek +
 * about T/2 of device time) and re-planned after each distance from what the reads really cost;
 * where the budget allows, the first pass leaves a share of it for extra samples at the distances
 * whose mean is least certain (seek_curve.c). Average: the curve integrated over the distance of
 * uniformly random pairs, density 2 (C - D) / C^2 (the drive-spec truth). Full stroke: the first
 * block to the last, measured. Track-to-track: measured one track apart where the tracks' phases
 * show one surface walked across cylinders (seek_t2t.c, before the curve and out of its budget);
 * otherwise the fit at one track.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seek_priv.h"
#include "util.h"

#define ROTATION_AT_BYTES (16ull << 20)
#define MIN_DEVICE_BYTES  DG_SEEK_MIN_DEVICE_BYTES
#define LOG_MIN_DISTANCE  (256ull << 10)
#define MAX_BLOCK_BYTES	  (1u << 20)
#define SPAN_FIRST_M	  7u /* a 7 x 7 grid of pairs per span first */
#define SPAN_MORE_M	  5u /* a grid more for a span whose mean is not certain enough: 5 x 5 */
/* the standard error of a span's mean vouched for: the 3 % asked for is 4 of them (from its
 * grids' collapsed strata, iops.c, which err on the safe side) */
#define SPAN_SE_MAX 0.0075
/* the seek phase's device time (rotation, curve, spans) at most, over the curve's budget, that
 * the spans' extra grids may fill: the bandwidth phase's refinement ends at 1.5 times its
 * budget, and the two of them at the default budgets stay within 3 minutes */
#define PHASE_SHARE 1.45
#define MIN_SAMPLES 3u /* per distance: fewer cannot place a mean */
/* the share of the curve's budget left for the extra samples (seek_curve.c), where the first
 * pass still holds every distance at EXTRA_FROM samples or more with all of it */
#define EXTRA_SHARE 0.6
#define EXTRA_FROM  12u
/* The smallest curve a budget must hold, priced before any read: MIN_SAMPLES at each of
 * MIN_CURVE_DISTANCES distances (fewer points make the average seek tens of percent low) plus
 * the full stroke, at NOMINAL_SAMPLE_MS a sample (what one costs on a 7200 rpm disk: a jump and
 * 5 to 8 legs of about 15 ms). A slower disk is honoured at run time by measuring fewer
 * distances, with a warning. */
#define NOMINAL_SAMPLE_MS   100.0
#define MIN_CURVE_DISTANCES 8u
#define MIN_CURVE_MS	    ((MIN_CURVE_DISTANCES * MIN_SAMPLES + 3) * NOMINAL_SAMPLE_MS)

void dg_seek_params_default(struct dg_seek_params *p)
{
	memset(p, 0, sizeof(*p));
	p->distances = DG_SEEK_DEFAULT_DISTANCES;
	p->samples = DG_SEEK_DEFAULT_SAMPLES;
	p->time_budget_ns = DG_SEEK_DEFAULT_BUDGET_NS;
	p->block_bytes = 0;
	p->seed = 1;
	p->curve = p->rotation = p->spans = true;
}

static uint32_t resolve_block(const struct dg_seek_params *p, const struct dg_device_info *info)
{
	uint32_t b = p->block_bytes;

	if (b == 0) {
		b = 4096;
		if (info->physical_sector_bytes > b)
			b = info->physical_sector_bytes;
		if (info->logical_sector_bytes > b)
			b = info->logical_sector_bytes;
	}
	return b;
}

int dg_seek_params_check(const struct dg_seek_params *p, const struct dg_device_info *info,
			 char *err, size_t errlen)
{
	uint32_t b = resolve_block(p, info);
	uint32_t ls = info->logical_sector_bytes ? info->logical_sector_bytes : 512;
	uint32_t ps = info->physical_sector_bytes ? info->physical_sector_bytes : ls;

	if (p->distances < DG_SEEK_MIN_DISTANCES || p->distances > DG_SEEK_MAX_DISTANCES) {
		snprintf(err, errlen, "distances must be %u..%u, not %u", DG_SEEK_MIN_DISTANCES,
			 DG_SEEK_MAX_DISTANCES, p->distances);
		return -EINVAL;
	}
	if (p->samples < 1 || p->samples > DG_SEEK_MAX_SAMPLES) {
		snprintf(err, errlen, "samples must be 1..%u, not %u", DG_SEEK_MAX_SAMPLES,
			 p->samples);
		return -EINVAL;
	}
	if (p->time_budget_ns == 0) {
		snprintf(err, errlen, "the time budget must be more than 0");
		return -EINVAL;
	}
	if (p->curve && (double)p->time_budget_ns < MIN_CURVE_MS * 1e6) {
		snprintf(
		    err, errlen,
		    "a time budget of %.3g s cannot hold the smallest seek curve (%u samples at "
		    "each of %u distances and the full stroke): it needs at least %.1f s",
		    (double)p->time_budget_ns / 1e9, MIN_SAMPLES, MIN_CURVE_DISTANCES,
		    MIN_CURVE_MS / 1e3);
		return -EINVAL;
	}
	if (b % ls || b % ps || b > MAX_BLOCK_BYTES) {
		snprintf(err, errlen,
			 "block size %" PRIu32 " must be a multiple of the logical (%" PRIu32
			 ") and physical (%" PRIu32 ") sector and at most 1 MiB",
			 b, ls, ps);
		return -EINVAL;
	}
	if (info->size_bytes < MIN_DEVICE_BYTES) {
		snprintf(err, errlen,
			 "the device holds %" PRIu64 " bytes; seek needs at least 64 MiB",
			 info->size_bytes);
		return -EINVAL;
	}
	if (!p->curve && !p->rotation && !p->spans) {
		snprintf(err, errlen, "nothing to measure: curve, rotation and spans are all off");
		return -EINVAL;
	}
	return 0;
}

json_t *dg_seek_params_json(const struct dg_seek_params *p)
{
	return json_pack("{s:I, s:I, s:f, s:I, s:I, s:b, s:b, s:b}", "distances",
			 (json_int_t)p->distances, "samples", (json_int_t)p->samples,
			 "time_budget_s", (double)p->time_budget_ns / 1e9, "block_bytes",
			 (json_int_t)p->block_bytes, "seed", (json_int_t)p->seed, "seek_curve",
			 p->curve, "rotation", p->rotation, "spans", p->spans);
}

void dg_seek_result_free(struct dg_seek_result *r)
{
	if (!r)
		return;
	dg_warnings_free(&r->notes);
	free(r->points);
	free(r->spans);
	free(r);
}

/* ---- the run ---- */

static uint64_t align_down(uint64_t v, uint64_t a)
{
	return v - v % a;
}

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

/* Log-spaced distances from 256 KiB to the first linear one, then linear ones to dmax. Returns
 * the count (strictly increasing, whole blocks). */
static size_t make_distances(uint64_t dmax, uint32_t b, unsigned n, uint64_t lo_bytes, uint64_t *d)
{
	unsigned nlin = n * 2 / 5, nlog;
	size_t k = 0;

	if (nlin < 2)
		nlin = 2;
	nlog = n - nlin;
	double top = (double)dmax / nlin, lo = (double)lo_bytes;
	for (unsigned i = 0; i < nlog && top > lo; i++) {
		uint64_t v = align_down((uint64_t)(lo * pow(top / lo, (double)i / nlog)), b);
		if (v >= b && (k == 0 || v > d[k - 1]))
			d[k++] = v;
	}
	for (unsigned i = 1; i <= nlin; i++) {
		uint64_t v = align_down(dmax / nlin * i, b);
		if (i == nlin)
			v = align_down(dmax, b);
		if (v >= b && (k == 0 || v > d[k - 1]))
			d[k++] = v;
	}
	return k;
}

/* The shortest distance measured: two tracks when the rotation step found the track size. A
 * pair closer than a track shares it, so what the drive kept of one side (look-behind,
 * read-ahead) is where the other side reads: no phase-aimed read there can be vouched for. */
static uint64_t shortest_distance(const struct dg_seek_result *r)
{
	uint64_t two = 2 * r->track_bytes;

	return two > LOG_MIN_DISTANCE ? two : LOG_MIN_DISTANCE;
}

/*
 * Keeps as many of dist[from..nd) as `avail_ms` of device time holds at MIN_SAMPLES each (by the
 * cost model), spread evenly over them (the first and the last kept); moves the kept ones to
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
			cost += seek_sample_cost(s, r, dist[at], MIN_SAMPLES) * MIN_SAMPLES;
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

static void progress_call(struct seek_ctx *s, dg_progress_fn fn, void *arg, const char *phase)
{
	if (!fn)
		return;
	double f = (double)seek_ctx_used_ns(s) / (double)s->budget_ns;
	if (f > 1)
		f = 1;
	fn(arg, phase, f,
	   s->budget_ns > seek_ctx_used_ns(s) ? (double)(s->budget_ns - seek_ctx_used_ns(s)) / 1e9
					      : 0.0);
}

/* The spans of issue 5 (seek.h), shared with `diskgeo model`. */
const struct dg_seek_span_def dg_seek_spans[DG_SEEK_NSPANS] = {
    {"first 1%", 0, 0.01},  {"first 10%", 0, 0.10},  {"first 25%", 0, 0.25},
    {"first 50%", 0, 0.50}, {"whole drive", 0, 1.0}, {"inner 10%", 0.90, 0.10},
};
static const struct dg_seek_span_def *const span_table = dg_seek_spans;
#define NSPANS DG_SEEK_NSPANS

/* What the run reports besides the values: how it ended, and the places it moved from. */
struct run_io {
	dg_progress_fn progress;
	void *progress_arg;
};

/* 1. rotation, overhead, K0 (rotation.c) into the result. */
static int run_rotation(struct seek_ctx *s, struct dg_seek_result *r, const struct run_io *io)
{
	progress_call(s, io->progress, io->progress_arg, "rotation");
	int rc = seek_rotation_measure(s, ROTATION_AT_BYTES, true);
	if (rc)
		return rc;
	r->overhead_ms = s->overhead_ms;
	r->rotating = s->rotating;
	if (s->rotation_failing)
		dg_warnings_add(&r->notes, "rotation: reads kept failing at every place tried: no "
					   "rotation measured");
	if (!s->rotating)
		return 0;
	r->period_ms = s->period_ns / 1e6;
	r->rpm = 60000.0 / r->period_ms;
	r->transfer_ms = s->drift_ns / 1e6;
	double track = s->period_ns / s->drift_ns * s->block_bytes;
	/* bounded by the capacity before the conversion (drift can be tiny) */
	r->track_bytes =
	    track > 0 && track < (double)s->capacity_bytes ? (uint64_t)llround(track) : 0;
	return 0;
}

/* The samples per distance that fit `avail_ms` for distances [from, nd), with `ratio` (real cost
 * over the model's) applied; thins the distances first when even the minimum does not fit in
 * `keep_ms` (the whole curve's time left: a share kept back for extra samples gives way to
 * keeping a distance). Returns the new nd; *n gets the samples. */
static size_t plan(struct seek_ctx *s, const struct dg_seek_result *r, uint64_t *dist, size_t from,
		   size_t nd, double avail_ms, double keep_ms, double ratio, unsigned nmax,
		   unsigned *n)
{
	nd = from + thin_distances(s, r, dist, from, nd, fmax(avail_ms, keep_ms) / ratio);
	double rest = 0;
	for (size_t j = from; j < nd; j++)
		rest += seek_sample_cost(s, r, dist[j], *n) * ratio;
	if (rest > 0 && rest * *n > 1.05 * avail_ms) /* the model is good to a few percent */
		*n = count_in(avail_ms / rest, MIN_SAMPLES, nmax);
	else if (rest > 0 && from > 0)
		*n = count_in(avail_ms / rest, MIN_SAMPLES, nmax);
	if (*n < MIN_SAMPLES)
		*n = MIN_SAMPLES;
	return nd;
}

/* The fit and the figures from the curve's points. */
static void curve_figures(const struct seek_ctx *s, struct dg_seek_result *r)
{
	/* fit above a few tracks, where every start offset really seeks */
	uint64_t fit_min = r->track_bytes ? 8 * r->track_bytes : 16ull << 20;
	if (dg_seek_fit_rw(r->points, r->npoints, r->capacity_bytes, fit_min, &r->fit))
		dg_seek_fit_rw(r->points, r->npoints, r->capacity_bytes, 0, &r->fit);
	if (r->fit.valid) {
		uint64_t one = r->track_bytes ? r->track_bytes : 1ull << 20;
		r->track_to_track_ms = dg_seek_fit_at(&r->fit, r->capacity_bytes, one);
		if (r->track_to_track_ms < 0)
			r->track_to_track_ms = 0;
	}
	if (isfinite(s->t2t_ms)) /* measured on one surface: the fit's short end is a guess */
		r->track_to_track_ms = s->t2t_ms;
	r->average_ms =
	    dg_seek_average_ms(r->points, r->npoints, r->capacity_bytes, r->full_stroke_ms);
	/* No rotation found, the access time is flat (a cache, an SSD, a file): a fit of its
	 * microsecond noise is no seek curve, so no seek figure is reported. */
	if (!s->rotating) {
		r->fit.valid = false;
		r->track_to_track_ms = r->average_ms = r->full_stroke_ms = NAN;
	}
}

/* 2. full stroke, then the curve within the budget. */
static int run_curve(struct seek_ctx *s, struct dg_seek_result *r, const struct run_io *io)
{
	const struct dg_seek_params *p = &r->params;
	uint64_t walk = (uint64_t)SEEK_WALK_BLOCKS * s->block_bytes, t0 = seek_ctx_used_ns(s);
	unsigned n = p->samples, nmax = p->samples > MIN_SAMPLES ? p->samples : MIN_SAMPLES;
	int rc = seek_full_stroke_measure(s, r);
	if (rc < 0)
		return rc;
	/* a small budget keeps its curve: the probe only where it costs a few percent of it */
	if (s->rotating && r->track_bytes && !seek_ctx_stopping(s) &&
	    seek_t2t_cost_ms(s) * 1e6 < (double)s->budget_ns * T2T_BUDGET_SHARE) {
		rc = seek_t2t_measure(s, r->track_bytes, &s->t2t_ms);
		if (rc < 0)
			return rc;
	}
	if (s->rotating && isnan(r->full_stroke_ms) && !seek_ctx_stopping(s))
		dg_warnings_add(&r->notes,
				"full stroke: no pair of places at the device's ends "
				"could be measured (failed reads or cache hits): not reported");
	uint64_t *dist = calloc(p->distances, sizeof(*dist));
	struct seek_acc *acc = calloc(p->distances, sizeof(*acc));
	r->points = calloc(p->distances, sizeof(*r->points));
	if (!dist || !acc || !r->points) {
		free(dist);
		free(acc);
		return -ENOMEM;
	}
	size_t nd = make_distances(s->capacity_bytes - s->block_bytes - walk, s->block_bytes,
				   p->distances, shortest_distance(r), dist);
	size_t asked = nd;
	/* plan: the curve (with the full stroke) gets the budget; where it holds every distance
	 * at EXTRA_FROM samples, the first pass leaves EXTRA_SHARE of it for the extra samples
	 * where the moves spread most (seek_curve.c) */
	double curve_ms = (double)s->budget_ns / 1e6 - (double)(seek_ctx_used_ns(s) - t0) / 1e6;
	double whole_ms = curve_ms;
	nd = plan(s, r, dist, 0, nd, curve_ms, whole_ms, 1.0, nmax, &n);
	bool extra = nd == asked && n >= EXTRA_FROM;
	if (extra) {
		curve_ms *= 1 - EXTRA_SHARE;
		nd = plan(s, r, dist, 0, nd, curve_ms, whole_ms, 1.0, nmax, &n);
	}
	r->samples_planned = n;
	double est_done = 0;
	uint64_t t_curve0 = seek_ctx_used_ns(s);
	for (size_t i = 0; i < nd && !seek_ctx_stopping(s); i++) {
		struct dg_seek_point *pt = &r->points[r->npoints];
		progress_call(s, io->progress, io->progress_arg, "seek");
		rc = seek_measure_distance(s, r, dist[i], n, t0 + s->budget_ns,
					   nd == asked ? n / 4 : 0, &acc[r->npoints], pt);
		if (rc < 0)
			break;
		if (pt->samples > 0) /* a point without samples would be all NAN */
			r->npoints++;
		else
			seek_acc_clear(&acc[r->npoints]);
		/* re-plan from what the reads really cost */
		est_done += seek_sample_cost(s, r, dist[i], n) * n;
		double real_ms = (double)(seek_ctx_used_ns(s) - t_curve0) / 1e6;
		double ratio = est_done > 0 ? real_ms / est_done : 1;
		if (!(ratio > 0) || !isfinite(ratio))
			ratio = 1;
		nd = plan(s, r, dist, i + 1, nd, curve_ms - real_ms, whole_ms - real_ms, ratio,
			  nmax, &n);
	}
	if (rc >= 0 && extra)
		rc = seek_curve_extra(s, r, acc, t0 + s->budget_ns);
	size_t thin = rc >= 0 ? seek_curve_drop_thin(s, r, acc) : 0;
	if (rc >= 0)
		seek_full_as_point(s, r);
	if (thin)
		dg_warnings_add(&r->notes,
				"%zu seek distance%s kept fewer than 3 samples (%s reads failed, "
				"hit the cache or never settled): left out of the curve",
				thin, thin == 1 ? "" : "s", thin == 1 ? "its" : "their");
	for (size_t i = 0; i < p->distances; i++)
		seek_acc_clear(&acc[i]);
	free(acc);
	free(dist);
	r->curve_device_time_ns = seek_ctx_used_ns(s) - t0;
	if (rc < 0 || seek_ctx_stopping(s))
		return rc;
	if (nd < asked)
		dg_warnings_add(&r->notes,
				"the seek time budget (%.1f s) held %zu of the %zu distances "
				"at %u samples each; a larger budget or fewer distances give a "
				"finer curve",
				(double)s->budget_ns / 1e9, r->npoints, asked, MIN_SAMPLES);
	curve_figures(s, r);
	return 0;
}

/* The span to give a grid more: the one whose mean is least certain while it is above
 * SPAN_SE_MAX, if that grid (at what its pairs cost so far) fits in left_ns; -1 when none. */
static int span_worst(const struct seek_span_acc *acc, const struct dg_seek_span *spans, size_t n,
		      const double *pair_ns, double left_ns)
{
	int worst = -1;
	double worst_se = SPAN_SE_MAX;

	for (size_t i = 0; i < n; i++) {
		double se = seek_span_rel_se(&acc[i], &spans[i]);
		if (se > worst_se) {
			worst_se = se;
			worst = (int)i;
		}
	}
	if (worst >= 0 && SPAN_MORE_M * SPAN_MORE_M * pair_ns[worst] > left_ns)
		return -1;
	return worst;
}

/* 3. the spans' IOPS. Each span first gets a SPAN_FIRST_M x SPAN_FIRST_M grid of pairs. Then,
 * while the seek phase has used less than PHASE_SHARE of the curve's budget, grids of
 * SPAN_MORE_M x SPAN_MORE_M go one at a time to the span whose pairs show the largest standard
 * error, as long as it is above SPAN_SE_MAX: a serpentine's short spans (the move between two
 * random places swings with both ends' band phase) get them, a cylinder layout's spans mostly
 * do not need them. */
static int run_spans(struct seek_ctx *s, struct dg_seek_result *r, const struct run_io *io)
{
	struct seek_span_acc acc[NSPANS];
	double pair_ns[NSPANS];
	double cap_ns = PHASE_SHARE * (double)s->budget_ns;

	r->spans = calloc(NSPANS, sizeof(*r->spans));
	if (!r->spans)
		return -ENOMEM;
	for (size_t i = 0; i < NSPANS && !seek_ctx_stopping(s); i++) {
		uint64_t len = align_down(
		    (uint64_t)(span_table[i].span * (double)s->capacity_bytes), s->block_bytes);
		uint64_t start = align_down(
		    (uint64_t)(span_table[i].start * (double)s->capacity_bytes), s->block_bytes);
		uint64_t t0 = seek_ctx_used_ns(s);
		if (start + len > s->capacity_bytes)
			len = s->capacity_bytes - start;
		progress_call(s, io->progress, io->progress_arg, "spans");
		int rc = seek_span_measure(s, r, start, len, SPAN_FIRST_M, &acc[r->nspans],
					   &r->spans[r->nspans]);
		if (rc == -EINVAL)
			continue; /* a span too small for pairs (tiny devices) */
		if (rc < 0)
			return rc;
		if (!r->spans[r->nspans].samples)
			continue;
		pair_ns[r->nspans] = (double)(seek_ctx_used_ns(s) - t0) / acc[r->nspans].done;
		r->nspans++;
	}
	while (!seek_ctx_stopping(s)) {
		int w = span_worst(acc, r->spans, r->nspans, pair_ns,
				   cap_ns - (double)seek_ctx_used_ns(s));
		if (w < 0)
			break;
		unsigned before = acc[w].done;
		uint64_t t0 = seek_ctx_used_ns(s);
		int rc = seek_span_more(s, r, SPAN_MORE_M, &acc[w], &r->spans[w]);
		if (rc < 0)
			return rc;
		if (acc[w].done == before)
			break; /* no pair measured: more would not help */
		/* what this span's pairs really cost, for its next grid */
		pair_ns[w] =
		    (pair_ns[w] * before + (double)(seek_ctx_used_ns(s) - t0)) / acc[w].done;
	}
	return 0;
}

/* The notes on how the run went: stopped by failing reads, places moved from, stalls. */
static void run_notes(const struct seek_ctx *s, struct dg_seek_result *r)
{
	if (s->failing)
		dg_warnings_add(&r->notes,
				"%u reads in a row failed: the seek run stopped there, the rest "
				"would fail too",
				SEEK_MAX_FAILED_IN_A_ROW);
	if (s->moved)
		dg_warnings_add(&r->notes,
				"%u seek or rotation samples had a failed read and were measured "
				"again at fresh places (the failed reads are in the errors)",
				s->moved);
	if (s->cache_hits)
		dg_warnings_add(&r->notes,
				"%u seek sample%s read faster than any move across %s distance "
				"(the drive's cache served a leg, from a segment kept since an "
				"earlier read) and %s measured again at fresh places",
				s->cache_hits, s->cache_hits == 1 ? "" : "s",
				s->cache_hits == 1 ? "its" : "their",
				s->cache_hits == 1 ? "was" : "were");
	if (s->stalls)
		dg_warnings_add(
		    &r->notes,
		    "%u rotation samples were delayed by more than 1.5 revolutions "
		    "beyond what the rotation explains (a busy drive) and were measured "
		    "again at fresh places",
		    s->stalls);
}

static void seek_ctx_init(struct seek_ctx *s, struct dg_engine *e, const struct dg_seek_result *r,
			  struct dg_errors *errors, volatile sig_atomic_t *stop)
{
	memset(s, 0, sizeof(*s));
	s->e = e;
	s->block_bytes = r->params.block_bytes;
	s->capacity_bytes = r->capacity_bytes;
	s->errors = errors;
	s->stop = stop;
	s->dt0_ns = dg_engine_device_time_ns(e);
	s->budget_ns = r->params.time_budget_ns;
	s->rng = r->params.seed;
	s->t2t_ms = NAN;
}

int dg_seek_run(struct dg_engine *e, const struct dg_device_info *info,
		const struct dg_seek_params *p, struct dg_errors *errors,
		volatile sig_atomic_t *stop, dg_progress_fn progress, void *progress_arg,
		struct dg_seek_result **out)
{
	char err[DG_ERRLEN];
	struct run_io io = {progress, progress_arg};
	struct seek_ctx s;
	struct dg_seek_result *r;
	int rc;

	*out = NULL;
	rc = dg_seek_params_check(p, info, err, sizeof(err));
	if (rc)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->params = *p;
	r->params.block_bytes = resolve_block(p, info);
	r->rpm = r->period_ms = r->overhead_ms = r->transfer_ms = NAN;
	r->track_to_track_ms = r->average_ms = r->full_stroke_ms = NAN;
	r->capacity_bytes = align_down(info->size_bytes, r->params.block_bytes);
	seek_ctx_init(&s, e, r, errors, stop);

	rc = run_rotation(&s, r, &io);
	if (rc == 0 && p->curve && !seek_ctx_stopping(&s))
		rc = run_curve(&s, r, &io);
	if (rc == 0 && p->spans && !seek_ctx_stopping(&s))
		rc = run_spans(&s, r, &io);
	if (rc == -ECANCELED && seek_ctx_stopping(&s))
		rc = 0; /* stopped: a partial result */
	if (rc < 0) {
		dg_seek_result_free(r);
		return rc;
	}
	/* complete: not cut short by a stop request (failing reads end a run that is complete,
	 * with its errors listed) */
	r->complete = !seek_ctx_stopping(&s) || !(s.stop && *s.stop);
	run_notes(&s, r);
	r->device_time_ns = seek_ctx_used_ns(&s);
	*out = r;
	return 0;
}
