/* SPDX-License-Identifier: MIT */
/*
 * Zones of a per-surface serpentine curve whose surface runs are longer than the curve's sample
 * spacing. In a serpentine band head 0 reads its tracks, then head 1 the same cylinders, and so
 * on; each head reads at its own rate (adaptive formatting), a fixed part of its zone's rate, and
 * a zone starts with head 0 of a new band (drive-spec.md; Wong 2019 measures such layouts). The
 * curve is then a sequence of runs of constant rate whose steps repeat with the period of the
 * surfaces H: the runs' rates are cut (runs of samples within a few noises of their mean), the
 * smallest period of their steps found, the cycle's phase chosen by the least squared residual of
 * the model rate = cycle level x surface level, and each cycle's level corrected for its surfaces.
 * Zone boundaries sit at the starts of the cycles whose corrected level drops. The path is taken
 * only when the runs are clearly periodic (every run explained by its cycle and surface within
 * the noise); otherwise the joint fit of bandwidth_levels.c decides, and always on a cylinder
 * layout, whose samples mix every surface and show no runs.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bandwidth_zones_priv.h"
#include "util.h"

#define RUN_MAX_NOISE  0.003 /* the path needs samples this quiet (sigma of ln MB/s) ... */
#define RUN_TOL_SIGMA  4.0   /* ... a sample belongs to a run within this x sigma ... */
#define RUN_MIN_TOL    0.003 /* ... and at least this (ln) */
#define RUN_NEAR       2.0   /* runs closer than this x that are one (their cut is unsure) */
#define RUN_MAX_H      18u   /* surfaces looked for, at most */
#define RUN_MIN_CYCLES 3u    /* full cycles needed to call the runs periodic */
#define RUN_MATCH      0.9   /* a step repeats a period later in this share of the cycles */
#define RUN_MIN_GAP    0.02  /* the surfaces' levels spread this far (ln), else no need */
#define RUN_PHASE_WIN  0.5   /* the best phase's residual is at most this x the next best's */
#define RUN_STEP_SIGMA 5.0   /* a zone step stands out by this x sigma (and MIN_STEP) */
#define RUN_MIN_LEN    3u    /* runs hold this many samples (the median run) ... */
#define RUN_MAX_SINGLE 0.15  /* ... and runs of one sample are at most this share of them */
#define RUN_SLOT_GAP   0.3   /* runs are counted in slots when samples are this x a slot apart */
#define RUN_SLOT_TOL   0.3   /* ... and a run lasts a whole number of slots within this */
#define RUN_MAX_PARTS  3u    /* a run lasts this many slots at most */

/* A run of samples at one rate: usable samples [first, last] (positions in idx), mean ln rate. */
struct run {
	size_t first, last;
	double y;
	/* a run that lasts several slots (neighbouring surfaces that read alike) is split in as
	 * many parts; lo and hi are the part's estimated bytes */
	unsigned part, parts;
	uint64_t lo, hi;
	double unsure; /* bytes either end may be off: half the gaps between the runs' samples */
};

struct runs {
	size_t m, *idx; /* usable samples: their indices in the curve */
	double *y;	/* their ln rates */
	struct run *run;
	size_t nrun, H, phase, singles; /* singles: runs of one sample left out */
	double sigma, tol, g[RUN_MAX_H];
	double *z; /* each cycle's level, corrected for its surfaces */
	size_t ncycle;
};

/* The noise of one sample from the steps between neighbours (most are inside a run). */
static double runs_noise(const double *y, size_t m, double *tmp)
{
	for (size_t i = 1; i < m; i++)
		tmp[i - 1] = fabs(y[i] - y[i - 1]);
	return fmax(NOISE_FLOOR, 1.4826 * dg_median(tmp, m - 1) / sqrt(2.0));
}

/* Mean ln rate of the usable samples [a, b] (positions in idx). */
static double mean_y(const struct runs *rs, size_t a, size_t b)
{
	double sum = 0;

	for (size_t i = a; i <= b; i++)
		sum += rs->y[i];
	return sum / (double)(b - a + 1);
}

/* Moves the cut between runs p and u (neighbours) to where it leaves the least squared error:
 * the first cut follows a running mean, and a small step after a drift is cut a few samples off
 * its place, which makes the runs' lengths no whole number of slots. */
static void runs_recut(const struct runs *rs, struct run *p, struct run *u)
{
	double best = INFINITY;
	size_t cut = u->first;

	for (size_t c = p->first + 1; c <= u->last; c++) {
		double ma = mean_y(rs, p->first, c - 1), mb = mean_y(rs, c, u->last), e = 0;

		for (size_t i = p->first; i <= u->last; i++)
			e += pow(rs->y[i] - (i < c ? ma : mb), 2);
		if (e < best) {
			best = e;
			cut = c;
		}
	}
	p->last = cut - 1;
	u->first = cut;
	p->y = mean_y(rs, p->first, p->last);
	u->y = mean_y(rs, u->first, u->last);
}

/* Whether y lies between a and b (within tol): a sample that straddles two runs reads there. */
static bool between(double y, double a, double b, double tol)
{
	return y >= fmin(a, b) - tol && y <= fmax(a, b) + tol;
}

/* Cuts the samples into runs within tol of their mean; a run of one sample that reads between its
 * neighbours (one straddling two runs) is left out, and the runs either side joined when they
 * read alike; each cut between neighbouring runs is then moved to where it leaves the least
 * squared error (a straddler is never moved into a run). */
static void runs_cut(struct runs *rs)
{
	size_t n = 0, k = 0;

	for (size_t i = 0; i < rs->m; i++) {
		struct run *u = n ? &rs->run[n - 1] : NULL;
		double cnt = u ? (double)(u->last - u->first + 1) : 0;

		if (u && fabs(rs->y[i] - u->y) <= rs->tol) {
			u->y = (u->y * cnt + rs->y[i]) / (cnt + 1);
			u->last = i;
			continue;
		}
		rs->run[n++] = (struct run){.first = i, .last = i, .y = rs->y[i]};
	}
	for (size_t j = 0; j < n; j++) {
		struct run *u = &rs->run[j];
		double cu = (double)(u->last - u->first + 1);

		if (u->last == u->first && j > 0 && j + 1 < n &&
		    between(u->y, rs->run[j - 1].y, rs->run[j + 1].y, rs->tol)) {
			rs->singles++;
			continue;
		}
		if (k && fabs(rs->run[k - 1].y - u->y) <= rs->tol) {
			struct run *p = &rs->run[k - 1];
			double cp = (double)(p->last - p->first + 1);

			p->y = (p->y * cp + u->y * cu) / (cp + cu);
			p->last = u->last;
			continue;
		}
		rs->run[k++] = *u;
	}
	rs->nrun = k;
	for (size_t j = 1; j < k; j++)
		if (rs->run[j - 1].last + 1 == rs->run[j].first)
			runs_recut(rs, &rs->run[j - 1], &rs->run[j]);
}

/* The estimated start of run k in bytes: between its first sample and the last of the run before
 * it (the curve's start for the first). */
static uint64_t run_edge(const struct runs *rs, const struct curve *cv, size_t k)
{
	const struct dg_bandwidth_sample *a, *b;

	if (k == 0)
		return cv->v[rs->idx[0]].offset_bytes;
	if (k == rs->nrun)
		return cv->v[rs->idx[rs->m - 1]].offset_bytes +
		       cv->v[rs->idx[rs->m - 1]].length_bytes;
	a = &cv->v[rs->idx[rs->run[k - 1].last]];
	b = &cv->v[rs->idx[rs->run[k].first]];
	return (a->offset_bytes + a->length_bytes + b->offset_bytes) / 2;
}

/* The bytes between run k's first sample and the last of the run before it (0 at the curve's
 * ends). */
static uint64_t edge_gap(const struct runs *rs, const struct curve *cv, size_t k)
{
	const struct dg_bandwidth_sample *a, *b;

	if (k == 0 || k == rs->nrun)
		return 0;
	a = &cv->v[rs->idx[rs->run[k - 1].last]];
	b = &cv->v[rs->idx[rs->run[k].first]];
	return b->offset_bytes > a->offset_bytes + a->length_bytes
		   ? b->offset_bytes - a->offset_bytes - a->length_bytes
		   : 0;
}

/* How many slots run u lasts (its estimated bytes at its rate). */
static double run_slots(const struct run *u, double slot)
{
	return (double)(u->hi - u->lo) / exp(u->y) / slot;
}

/* Whether run u lasts a whole number of slots, within RUN_SLOT_TOL or what its ends may be off
 * by (less than half a slot). */
static bool whole(const struct run *u, double slot)
{
	double d = run_slots(u, slot), off = u->unsure / exp(u->y) / slot;

	return lround(d) >= 1 && off < 0.5 &&
	       fabs(d - (double)lround(d)) <= fmax(RUN_SLOT_TOL, off);
}

/* Joins each interior run that lasts no whole number of slots with the next when the two read
 * within RUN_NEAR x the tolerance and together last a whole number: their cut is unsure (a few
 * samples of one read like the other), not their sum. */
static void runs_join(struct runs *rs, double slot)
{
	size_t o = 0;

	for (size_t k = 0; k < rs->nrun; k++) {
		struct run u = rs->run[k];

		if (k > 0 && k + 2 < rs->nrun && !whole(&u, slot) &&
		    fabs(rs->run[k + 1].y - u.y) <= RUN_NEAR * rs->tol) {
			struct run j = u;

			j.last = rs->run[k + 1].last;
			j.hi = rs->run[k + 1].hi;
			j.y = mean_y(rs, j.first, j.last);
			j.unsure = (u.unsure + rs->run[k + 1].unsure) / 2;
			if (whole(&j, slot)) {
				u = j;
				k++;
			}
		}
		rs->run[o++] = u;
	}
	rs->nrun = o;
}

/* A part's own rate: the mean of the run's samples inside its bytes (the surfaces of a run of
 * several slots read alike, not the same); the run's when none is. */
static void part_rate(const struct runs *rs, const struct curve *cv, struct run *q)
{
	double sum = 0;
	size_t n = 0;

	for (size_t i = q->first; i <= q->last; i++) {
		const struct dg_bandwidth_sample *v = &cv->v[rs->idx[i]];
		uint64_t mid = v->offset_bytes + v->length_bytes / 2;

		if (mid >= q->lo && mid < q->hi) {
			sum += rs->y[i];
			n++;
		}
	}
	if (n)
		q->y = sum / (double)n;
}

/* The slot: in a serpentine band every surface takes the same time (the band's cylinders' worth
 * of revolutions), so runs last a whole number of slots; one that lasts two or three is that many
 * surfaces that read alike, split here into parts. The slot is the median run's time, and runs
 * are counted only when the samples lie close enough for that. False when a run lasts no whole
 * number of slots. */
static bool runs_slots(struct runs *rs, const struct curve *cv, double *tmp)
{
	size_t n = rs->nrun, nd = 0, total = 0;
	double slot, gap;

	for (size_t k = 0; k < n; k++) {
		rs->run[k].lo = run_edge(rs, cv, k);
		rs->run[k].hi = run_edge(rs, cv, k + 1);
		rs->run[k].unsure = (double)(edge_gap(rs, cv, k) + edge_gap(rs, cv, k + 1)) / 2;
		rs->run[k].part = 0;
		rs->run[k].parts = 1;
		if (k > 0 && k + 1 < n)
			tmp[nd++] = (double)(rs->run[k].hi - rs->run[k].lo) / exp(rs->run[k].y);
	}
	if (nd < 2)
		return true;
	slot = dg_median(tmp, nd);
	for (size_t i = 1; i < rs->m; i++)
		tmp[i - 1] =
		    (double)(cv->v[rs->idx[i]].offset_bytes - cv->v[rs->idx[i - 1]].offset_bytes) /
		    exp(rs->y[i]);
	gap = dg_median(tmp, rs->m - 1);
	if (gap > RUN_SLOT_GAP * slot)
		return true;
	runs_join(rs, slot);
	for (size_t k = 0; k < rs->nrun; k++) {
		long w = lround(run_slots(&rs->run[k], slot));

		if (k == 0 || k + 1 == rs->nrun || w < 2)
			w = 1;
		else if (w > (long)RUN_MAX_PARTS || !whole(&rs->run[k], slot))
			return false;
		rs->run[k].parts = (unsigned)w;
		total += (size_t)w;
	}
	for (size_t k = rs->nrun, o = total; k-- > 0;) {
		struct run u = rs->run[k];

		for (unsigned j = u.parts; j-- > 0;) {
			struct run *q = &rs->run[--o];

			*q = u;
			q->part = j;
			q->lo = u.lo + (u.hi - u.lo) / u.parts * j;
			q->hi = j + 1 == u.parts ? u.hi : u.lo + (u.hi - u.lo) / u.parts * (j + 1);
			if (u.parts > 1)
				part_rate(rs, cv, q);
		}
	}
	rs->nrun = total;
	return true;
}

/* The smallest period H of the runs' steps: every step but one of a cycle (the wrap to head 0,
 * which carries the zone steps) repeats H runs later within the noise (the lag at which the
 * steps' differences vanish: the average magnitude difference function, Ross et al. 1974). */
static size_t runs_period(const struct runs *rs)
{
	double tol = sqrt(2.0) * rs->tol;

	for (size_t H = 2; H <= RUN_MAX_H && (RUN_MIN_CYCLES + 1) * H <= rs->nrun; H++) {
		size_t good = 0;

		for (size_t q = 0; q < H; q++) {
			size_t pairs = 0, match = 0;

			for (size_t k = q; k + H + 1 < rs->nrun; k += H) {
				double d0 = rs->run[k + 1].y - rs->run[k].y;
				double d1 = rs->run[k + H + 1].y - rs->run[k + H].y;

				pairs++;
				match += fabs(d0 - d1) <= tol;
			}
			good += pairs && (double)match >= RUN_MATCH * (double)pairs;
		}
		if (good + 1 >= H)
			return H;
	}
	return 0;
}

/* The surface levels g[0..H) (their mean 0) of cycles starting at runs p, p + H, ...: the median
 * of each surface's distance from its full cycles' mean. Returns the squared residual of the full
 * cycles about cycle mean + level, and the count of full cycles in *full. */
static double runs_levels(const struct runs *rs, size_t H, size_t p, double *g, size_t *full,
			  double *tmp)
{
	double ssr = 0, mean = 0;

	*full = 0;
	for (size_t h = 0; h < H; h++) {
		size_t n = 0;

		for (size_t k = p; k + H <= rs->nrun; k += H) {
			double cm = 0;

			for (size_t j = 0; j < H; j++)
				cm += rs->run[k + j].y / (double)H;
			tmp[n++] = rs->run[k + h].y - cm;
		}
		g[h] = n ? dg_median(tmp, n) : 0;
		mean += g[h] / (double)H;
		*full = n;
	}
	for (size_t h = 0; h < H; h++)
		g[h] -= mean;
	for (size_t k = p; k + H <= rs->nrun; k += H) {
		double cm = 0;

		for (size_t j = 0; j < H; j++)
			cm += (rs->run[k + j].y - g[j]) / (double)H;
		for (size_t j = 0; j < H; j++)
			ssr += pow(rs->run[k + j].y - g[j] - cm, 2);
	}
	return ssr;
}

/* The phase of the cycles: the one whose model explains the runs best, by a clear margin. */
static bool runs_phase(struct runs *rs, double *tmp)
{
	double best = INFINITY, next = INFINITY, g[RUN_MAX_H];
	size_t full;

	for (size_t p = 0; p < rs->H; p++) {
		double ssr = runs_levels(rs, rs->H, p, g, &full, tmp);

		if (full < RUN_MIN_CYCLES)
			return false;
		if (ssr < best) {
			next = best;
			best = ssr;
			rs->phase = p;
		} else if (ssr < next) {
			next = ssr;
		}
	}
	if (!(best <= RUN_PHASE_WIN * next))
		return false;
	runs_levels(rs, rs->H, rs->phase, rs->g, &full, tmp);
	return true;
}

/* The first run of cycle c. */
static size_t cycle_start(const struct runs *rs, size_t c)
{
	return c == 0 ? 0 : rs->phase + (c - (rs->phase ? 1 : 0)) * rs->H;
}

/* Each cycle's corrected level (partial cycles at the curve's ends too); false when a run lies
 * off its cycle's level by more than the runs' tolerance: the model does not explain it. */
static bool runs_cycles(struct runs *rs)
{
	size_t H = rs->H;

	rs->ncycle = 0;
	for (size_t c = 0; cycle_start(rs, c) < rs->nrun; c++) {
		size_t a = cycle_start(rs, c), b = cycle_start(rs, c + 1);
		double sum = 0;

		b = b > rs->nrun ? rs->nrun : b;
		for (size_t k = a; k < b; k++)
			sum += rs->run[k].y - rs->g[(k + H - rs->phase) % H];
		rs->z[c] = sum / (double)(b - a);
		for (size_t k = a; k < b; k++)
			if (fabs(rs->run[k].y - rs->g[(k + H - rs->phase) % H] - rs->z[c]) >
			    rs->tol)
				return false;
		rs->ncycle = c + 1;
	}
	return true;
}

/* Boundary b between the run ending zone A (run ka) and the one starting zone B (run kb), the
 * zones spanning curve samples [a0, b1): bracketed by the runs' samples either side and classed
 * by the two runs' own rates (each sample reads one surface: corrected rates would let a surface
 * of one zone pass for another's). */
static void runs_boundary(const struct ctx *c, const struct curve *cv, const struct runs *rs,
			  size_t ka, size_t kb, size_t a0, size_t b1, struct boundary *b)
{
	const struct dg_bandwidth_sample *v = cv->v;
	size_t la = rs->idx[rs->run[ka].last], fb = rs->idx[rs->run[kb].first];

	*b = (struct boundary){.ra = exp(rs->run[ka].y), .rb = exp(rs->run[kb].y)};
	b->lo = b->lo_near = v[la].offset_bytes;
	b->hi = b->hi_near = v[fb].offset_bytes + v[fb].length_bytes;
	b->la_mid = b->lo_near + v[la].length_bytes / 2;
	b->fb_mid = v[fb].offset_bytes + v[fb].length_bytes / 2;
	b->a_len = b->hi_near - v[a0].offset_bytes;
	b->b_len = v[b1 - 1].offset_bytes + v[b1 - 1].length_bytes - v[fb].offset_bytes;
	b->step = fabs(log(b->ra / b->rb));
	if (b->step / 2 >= REFINE_Z * rs->sigma) {
		bw_narrow(b, v[la].offset_bytes, v[la].length_bytes, v[la].mb_per_s);
		bw_narrow(b, v[fb].offset_bytes, v[fb].length_bytes, v[fb].mb_per_s);
	}
	b->span = bw_refine_span(c, b, rs->sigma);
	b->sigma = bw_noise_at(c, rs->sigma, b->span ? b->span : c->p.sample_bytes);
	/* sides that read alike cannot be bisected: the boundary stays between the runs */
	b->placed = b->span == 0;
}

/* Bisects b now (bandwidth_refine.c), within twice the time its bisection takes, when the run
 * refines and b's sides can be told apart. 0, -ENOMEM or the engine's -errno. */
static int runs_bisect(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap,
		       const struct curve *cv, struct boundary *b)
{
	struct refine_run u = {.t0 = dg_engine_device_time_ns(c->e), .shortest = UINT64_MAX};

	if (!c->p.refine || !r->complete || bw_stopped(c) || !b->span)
		return 0;
	return bw_refine_boundary(c, r, cap, b, cv, UINT64_MAX, 2 * bw_refine_cost_ns(c, b, &u));
}

/*
 * A zone boundary inside a run of two or three slots (the zone's last surface reads like the next
 * zone's first): the run's ends, bisected as boundaries of their own, bracket it, and it lies
 * where the run's slots split it (each slot the same time, at one rate). b holds it placed; its
 * step is the run's own, none to bisect. 0, -ENOMEM or the engine's -errno.
 */
static int runs_merged(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap,
		       const struct curve *cv, const struct runs *rs, size_t kb, struct boundary *b)
{
	size_t k0 = kb - rs->run[kb].part, k1 = k0 + rs->run[kb].parts;
	double w = (double)rs->run[kb].part / (double)rs->run[kb].parts;
	struct boundary e[2];
	int rc = 0;

	runs_boundary(c, cv, rs, k0 - 1, k0, 0, cv->n, &e[0]);
	runs_boundary(c, cv, rs, k1 - 1, k1, 0, cv->n, &e[1]);
	for (int j = 0; j < 2 && !rc; j++) {
		e[j].near_len = b->near_len;
		rc = runs_bisect(c, r, cap, cv, &e[j]);
	}
	b->lo = e[0].lo + (uint64_t)(w * (double)(e[1].lo - e[0].lo));
	b->hi = e[0].hi + (uint64_t)(w * (double)(e[1].hi - e[0].hi));
	b->hi = b->hi < b->lo ? b->lo : b->hi;
	b->lo_near = b->lo;
	b->hi_near = b->hi;
	b->la_mid = b->fb_mid = b->lo + (b->hi - b->lo) / 2;
	b->ra = b->rb = exp(rs->run[kb].y);
	b->step = 0;
	b->span = 0;
	b->placed = true;
	return rc;
}

/* Places the boundary b at the start of cycle k now where the later refinement could drop it: one
 * inside a run of several slots (runs_merged), and a zone step of 2% whose runs either side read
 * closer than that (the refinement drops such a step when its samples do not show it; a cycle's
 * corrected level has shown it). Both are kept where their bisection leaves them. */
static int runs_place(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap,
		      const struct curve *cv, const struct runs *rs, size_t k, struct boundary *b)
{
	size_t kb = cycle_start(rs, k);
	int rc;

	if (rs->run[kb].part)
		return runs_merged(c, r, cap, cv, rs, kb, b);
	if (!(rs->z[k - 1] - rs->z[k] >= KEEP_STEP && b->step < KEEP_STEP))
		return 0;
	rc = runs_bisect(c, r, cap, cv, b);
	b->placed = true;
	b->span = 0;
	return rc;
}

/* The surface levels for the zones' surface rates: each surface's (slowest first), or the
 * slowest and the fastest when there are more than a zone reports. */
static void runs_surfaces(struct curve *cv, const struct runs *rs)
{
	size_t H = rs->H, rank[RUN_MAX_H], lo = 0, hi = 0;

	for (size_t h = 0; h < H; h++) {
		rank[h] = 0;
		for (size_t j = 0; j < H; j++)
			rank[h] += rs->g[j] < rs->g[h] || (rs->g[j] == rs->g[h] && j < h);
		lo = rank[h] == 0 ? h : lo;
		hi = rank[h] == H - 1 ? h : hi;
	}
	cv->surf = (struct levels){.n = H <= DG_ZONES_MAX_SURFACES ? H : 2, .spread = rs->sigma};
	for (size_t h = 0; h < H; h++) {
		if (H <= DG_ZONES_MAX_SURFACES)
			cv->surf.off[rank[h]] = rs->g[h];
		else if (h == lo || h == hi)
			cv->surf.off[h == hi] = rs->g[h];
	}
	memset(cv->lev, 0xff, cv->n);
	for (size_t k = 0; k < rs->nrun; k++) {
		size_t h = (k + H - rs->phase) % H;
		unsigned char l = H <= DG_ZONES_MAX_SURFACES ? (unsigned char)rank[h]
				  : h == lo		     ? 0
				  : h == hi		     ? 1
							     : 0xff;

		for (size_t i = rs->run[k].first; i <= rs->run[k].last; i++) {
			const struct dg_bandwidth_sample *v = &cv->v[rs->idx[i]];
			uint64_t mid = v->offset_bytes + v->length_bytes / 2;

			if (rs->run[k].parts == 1 || (mid >= rs->run[k].lo && mid < rs->run[k].hi))
				cv->lev[rs->idx[i]] = l;
		}
	}
}

/* Whether the runs rise from one to the next about once a cycle or more: surfaces that go up and
 * down. Zones alone never rise, and a staircase of zone steps of about one size repeats with any
 * period (a cylinder layout's curve, one run a zone). */
static bool runs_rise(const struct runs *rs)
{
	size_t rises = 0;

	for (size_t k = 1; k < rs->nrun; k++)
		rises += rs->run[k].y - rs->run[k - 1].y > rs->tol;
	return (double)rises >= RUN_MATCH * (double)(rs->nrun - 1) / (double)rs->H;
}

/* Whether the runs are long: a median run of RUN_MIN_LEN samples, few left out. */
static bool runs_long(const struct runs *rs, double *tmp)
{
	for (size_t k = 0; k < rs->nrun; k++)
		tmp[k] = (double)(rs->run[k].last - rs->run[k].first + 1);
	return rs->nrun > 0 && dg_median(tmp, rs->nrun) >= RUN_MIN_LEN &&
	       (double)rs->singles <= RUN_MAX_SINGLE * (double)rs->nrun;
}

/* Whether the usable samples of cv fall in clearly periodic runs; rs then holds them, their
 * period, phase, surface levels and cycle levels. */
static bool runs_find(struct runs *rs, const struct curve *cv, double *tmp)
{
	double lo = INFINITY, hi = -INFINITY;

	for (size_t i = 0; i < cv->n; i++) {
		if (cv->excl[i] || !(cv->v[i].mb_per_s > 0))
			continue;
		rs->idx[rs->m] = i;
		rs->y[rs->m++] = log(cv->v[i].mb_per_s);
	}
	if (rs->m < 2 * RUN_MIN_CYCLES * 2)
		return false;
	rs->sigma = runs_noise(rs->y, rs->m, tmp);
	if (rs->sigma > RUN_MAX_NOISE)
		return false;
	rs->tol = fmax(RUN_TOL_SIGMA * rs->sigma, RUN_MIN_TOL);
	runs_cut(rs);
	if (!runs_long(rs, tmp) || !runs_slots(rs, cv, tmp))
		return false;
	rs->H = runs_period(rs);
	if (!rs->H || !runs_rise(rs) || !runs_phase(rs, tmp))
		return false;
	if (!runs_cycles(rs))
		return false;
	for (size_t h = 0; h < rs->H; h++) {
		lo = fmin(lo, rs->g[h]);
		hi = fmax(hi, rs->g[h]);
	}
	return hi - lo >= RUN_MIN_GAP;
}

/* The zones from the cycles' levels: a boundary at the start of each cycle whose level drops by
 * a step that stands out; none when a level rises as much (no recording zone does: the runs are
 * not what the model says). cv's segments, boundaries and surface levels; *taken. */
static int runs_apply(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct curve *cv,
		      const struct runs *rs, bool *taken, size_t *at)
{
	double thr = fmax(MIN_STEP, RUN_STEP_SIGMA * rs->sigma);
	size_t nb = 0;
	int rc = 0;

	for (size_t k = 1; k < rs->ncycle; k++) {
		size_t kb = cycle_start(rs, k), part = rs->run[kb].part;

		if (rs->z[k] - rs->z[k - 1] >= thr)
			return 0;
		if (!(rs->z[k - 1] - rs->z[k] >= thr))
			continue;
		/* a run split in slots needs both its ends to place the boundary */
		if (part && (kb == part || kb - part + rs->run[kb].parts >= rs->nrun))
			return 0;
		at[nb++] = k;
	}
	cv->capb = nb ? nb : 1;
	cv->bs = calloc(cv->capb, sizeof(*cv->bs));
	if (!cv->bs)
		return -ENOMEM;
	for (size_t s = 0; s < nb; s++)
		cv->ends[s] = rs->idx[rs->run[cycle_start(rs, at[s])].first];
	cv->ends[nb] = cv->n;
	for (size_t s = 0; s < nb; s++) {
		size_t kb = cycle_start(rs, at[s]);
		struct boundary *b = &cv->bs[s];

		runs_boundary(c, cv, rs, kb - 1, kb, s ? cv->ends[s - 1] : 0, cv->ends[s + 1], b);
	}
	cv->nb = nb;
	cv->nseg = nb + 1;
	cv->noise = rs->sigma;
	bw_near_lens(cv);
	for (size_t s = 0; s < nb && !rc; s++)
		rc = runs_place(c, r, cap, cv, rs, at[s], &cv->bs[s]);
	runs_surfaces(cv, rs);
	cv->surf_cycle = rs->H;
	cv->by_runs = *taken = true;
	return rc;
}

int bw_runs_zones(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct curve *cv,
		  bool *taken)
{
	size_t n = cv->n ? cv->n : 1;
	struct runs rs = {.idx = malloc(n * sizeof(*rs.idx)), .y = malloc(n * sizeof(*rs.y))};
	double *tmp = malloc(RUN_MAX_PARTS * n * sizeof(*tmp));
	size_t *at = malloc(RUN_MAX_PARTS * n * sizeof(*at));
	int rc = -ENOMEM;

	*taken = false;
	rs.run = malloc(RUN_MAX_PARTS * n * sizeof(*rs.run));
	rs.z = malloc(RUN_MAX_PARTS * n * sizeof(*rs.z));
	if (rs.idx && rs.y && rs.run && rs.z && tmp && at)
		rc = runs_find(&rs, cv, tmp) ? runs_apply(c, r, cap, cv, &rs, taken, at) : 0;
	free(rs.idx);
	free(rs.y);
	free(rs.run);
	free(rs.z);
	free(tmp);
	free(at);
	return rc;
}
