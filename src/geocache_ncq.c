/* SPDX-License-Identifier: MIT */
/*
 * Command queueing: the random 4 KiB read rate at QD 1, 2, 4, ... 32 (the engine's qd at most)
 * over one span, with the same random offsets at every depth (so that the rates differ by the
 * queue, not by the draw).
 *
 * Reordering (the QD 1 vs QD n test of Wong 2019 and Diskbench): a drive that serves its queue
 * in arrival order gains from a deeper queue only the command overhead that overlaps the media
 * work, a factor s1 / (s1 - overhead) with s1 the QD 1 service time; a gain clearly beyond that
 * (x 1.1, and at least 10 %) means it reorders. Depth: where the gain stops growing (see
 * ncq_depth()), or the deepest QD tried when it keeps growing.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "diskgeo/engine.h"
#include "geocache_priv.h"

#define NCQ_IOS	       400u /* completions timed at each depth */
#define NCQ_SPAN_SHARE 0.01 /* the span: 1 % of the range (at least 1 GiB) */
#define NCQ_GROW       1.04 /* a doubling that gains less: the drive holds no more */
#define NCQ_FLAT       0.01 /* on the plateau: within this of its rate */
#define NCQ_BEYOND     1.10 /* reorders: gain beyond what the overlap explains, by this */
#define NCQ_MAX_FAILS  (NCQ_IOS / 4)

struct ncq_run {
	uint64_t lo, span, rng;
	unsigned qd;
};

static uint64_t ncq_offset(struct gc *g, struct ncq_run *n)
{
	uint64_t x = dg_splitmix64(&n->rng) % (n->span / g->b);

	return n->lo + x * g->b;
}

/* The closed loop at one depth: qd reads outstanding, warm-up qd completions, then NCQ_IOS
 * timed. *iops gets their rate. Returns 0, 1 (too many failed reads), 2 stopped, or -errno. */
static int ncq_rate(struct gc *g, struct ncq_run *n, double *iops)
{
	struct dg_completion c[DG_GEOCACHE_MAX_QD];
	unsigned total = NCQ_IOS + n->qd, sent = 0, got = 0, failed = 0;
	uint64_t t0 = 0;
	int rc;

	while (got < total) {
		if (seek_ctx_stopping(&g->s))
			return 2;
		while (sent < total && sent - got < n->qd) {
			struct dg_io io = {.offset_bytes = ncq_offset(g, n),
					   .length_bytes = g->b,
					   .op = DG_IO_READ,
					   .tag = sent};
			rc = dg_engine_submit(g->s.e, &io, 1);
			if (rc < 0)
				return rc;
			sent++;
		}
		rc = dg_engine_reap(g->s.e, c, 1, DG_GEOCACHE_MAX_QD);
		if (rc == -EINTR)
			continue;
		if (rc < 0)
			return rc;
		for (int i = 0; i < rc; i++) {
			if (c[i].result != (int64_t)g->b) {
				int err = c[i].result < 0 ? (int)-c[i].result : EIO;
				if (g->s.errors &&
				    dg_errors_add(g->s.errors, c[i].offset_bytes, g->b, err) < 0)
					return -ENOMEM;
				if (++failed > NCQ_MAX_FAILS)
					return 1;
			}
			if (++got == n->qd)
				t0 = c[i].complete_ns;
		}
	}
	*iops = NCQ_IOS / ((double)(dg_engine_now_ns(g->s.e) - t0) / 1e9);
	return 0;
}

/* The rate measured at `qd`, NAN when none. */
static double rate_at(const struct dg_geocache *r, unsigned qd)
{
	for (unsigned i = 0; i < r->ncq_points; i++)
		if (r->ncq_qd[i] == qd)
			return r->ncq_iops[i];
	return NAN;
}

/* Measures the rate at `qd` and files it in order of qd. A rate below a shallower depth's by
 * 10 % (a deeper queue is never slower: a busy period of the drive's own work fell into it) is
 * measured again, and the faster kept. Returns as ncq_rate. */
static int ncq_point(struct gc *g, struct ncq_run *n, unsigned qd)
{
	struct dg_geocache *r = g->out;
	uint64_t seed = n->rng;
	double v, again, below = 0;
	unsigned i;
	int rc;

	if (!isnan(rate_at(r, qd)) || r->ncq_points >= sizeof(r->ncq_qd) / sizeof(r->ncq_qd[0]))
		return 0;
	n->qd = qd;
	rc = ncq_rate(g, n, &v);
	for (i = 0; rc == 0 && i < r->ncq_points && r->ncq_qd[i] < qd; i++)
		below = fmax(below, r->ncq_iops[i]);
	if (rc == 0 && v < 0.9 * below) {
		n->rng = seed;
		rc = ncq_rate(g, n, &again);
		v = fmax(v, again);
	}
	n->rng = seed;
	if (rc)
		return rc;
	memmove(r->ncq_qd + i + 1, r->ncq_qd + i, (r->ncq_points - i) * sizeof(r->ncq_qd[0]));
	memmove(r->ncq_iops + i + 1, r->ncq_iops + i, (r->ncq_points - i) * sizeof(r->ncq_iops[0]));
	r->ncq_qd[i] = qd;
	r->ncq_iops[i] = v;
	r->ncq_points++;
	return 0;
}

/*
 * Depth, on a drive that reorders: the doublings find the first QD q whose doubling gains less
 * than NCQ_GROW (the drive's queue is full by then); the plateau starts in (q/2, q], at the
 * depth + 1 (at QD = depth the command the host has just handed back is not yet decoded when
 * the drive chooses, so it chooses among depth - 1), found by bisection as the smallest QD
 * within NCQ_FLAT of the plateau's rate. No plateau: the deepest QD tried.
 */
static int ncq_depth(struct gc *g, struct ncq_run *n, unsigned maxqd)
{
	struct dg_geocache *r = g->out;
	unsigned q = 0, lo, hi;
	double plateau = 0;
	int rc;

	for (unsigned d = 2; 2 * d <= maxqd && !q; d *= 2)
		if (rate_at(r, 2 * d) < NCQ_GROW * rate_at(r, d))
			q = d;
	r->ncq_depth = (int)r->ncq_qd[r->ncq_points - 1];
	if (!q)
		return 0;
	for (unsigned i = 0; i < r->ncq_points; i++)
		if (r->ncq_qd[i] >= q)
			plateau = fmax(plateau, r->ncq_iops[i]);
	for (lo = q / 2, hi = q; hi - lo > 1;) {
		unsigned mid = (lo + hi) / 2;
		rc = ncq_point(g, n, mid);
		if (rc)
			return rc;
		*(rate_at(r, mid) >= plateau * (1 - NCQ_FLAT) ? &hi : &lo) = mid;
	}
	r->ncq_depth = (int)hi - 1;
	return 0;
}

int gc_ncq(struct gc *g)
{
	struct dg_geocache *r = g->out;
	unsigned maxqd = dg_engine_qd(g->s.e);
	uint64_t range = g->o->end_bytes - g->o->start_bytes;
	uint64_t span = (uint64_t)((double)range * NCQ_SPAN_SHARE);
	struct ncq_run n = {.lo = g->o->start_bytes, .rng = dg_splitmix64(&g->s.rng)};
	double best = 0;
	int rc = 0;

	if (maxqd > DG_GEOCACHE_MAX_QD)
		maxqd = DG_GEOCACHE_MAX_QD;
	if (maxqd < 2) {
		gc_note(g, "command queueing not measured: the engine's queue depth is 1");
		return 0;
	}
	n.span = (span < (1ull << 30) ? 1ull << 30 : span) / g->b * g->b;
	for (unsigned qd = 1; qd <= maxqd && rc == 0; qd *= 2)
		rc = ncq_point(g, &n, qd);
	if (rc == 0) {
		double s1 = 1000.0 / r->ncq_iops[0];
		/* the hit time bounds the command overhead from above */
		r->ncq_gain_explained = s1 > r->hit_ms ? s1 / (s1 - r->hit_ms) : INFINITY;
		for (unsigned i = 1; i < r->ncq_points; i++)
			best = fmax(best, r->ncq_iops[i] / r->ncq_iops[0]);
		r->ncq_reorders = best > fmax(r->ncq_gain_explained * NCQ_BEYOND, 1.1);
		r->ncq_depth = 1;
		if (r->ncq_reorders)
			rc = ncq_depth(g, &n, maxqd);
	}
	if (rc == 1) {
		r->ncq_reorders = r->ncq_depth = -1;
		gc_note(g, "command queueing not measured: reads failed");
		return 0;
	}
	return rc;
}
