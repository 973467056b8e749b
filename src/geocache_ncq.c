/* SPDX-License-Identifier: MIT */
/*
 * Command queueing: the random 4 KiB read rate at QD 1, 2, 4, ... 32 (the engine's qd at most)
 * over one span, with the same random offsets at every depth (so that the rates differ by the
 * queue, not by the draw).
 *
 * Reordering (the QD 1 vs QD n test of Wong 2019 and Diskbench): a drive that serves its queue
 * in arrival order gains from a deeper queue only the command overhead that overlaps the media
 * work, a factor s1 / (s1 - overhead) with s1 the QD 1 service time; a gain clearly beyond that
 * (x 1.1, and at least 10 %) means it reorders. Depth: the smallest QD whose doubling gains
 * less than 4 % (the drive holds no more), or the deepest tried when the gain keeps growing.
 */
#include <errno.h>
#include <math.h>

#include "diskgeo/engine.h"
#include "geocache_priv.h"

#define NCQ_IOS	       400u /* completions timed at each depth */
#define NCQ_SPAN_SHARE 0.01 /* the span: 1 % of the range (at least 1 GiB) */
#define NCQ_GROW       1.04 /* a doubling that gains less: the drive holds no more */
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

/* Reorders and depth from the rates at the depths tried (see the file comment). */
static void ncq_decide(struct gc *g)
{
	struct dg_geocache *r = g->out;
	double s1 = 1000.0 / r->ncq_iops[0], best = 0;

	/* the hit time bounds the command overhead from above */
	r->ncq_gain_explained = s1 > r->hit_ms ? s1 / (s1 - r->hit_ms) : INFINITY;
	for (unsigned i = 1; i < r->ncq_points; i++)
		best = fmax(best, r->ncq_iops[i] / r->ncq_iops[0]);
	r->ncq_reorders = best > fmax(r->ncq_gain_explained * NCQ_BEYOND, 1.1);
	r->ncq_depth = 1;
	if (!r->ncq_reorders)
		return;
	r->ncq_depth = (int)r->ncq_qd[r->ncq_points - 1];
	for (unsigned i = 1; i + 1 < r->ncq_points; i++)
		if (r->ncq_iops[i + 1] < r->ncq_iops[i] * NCQ_GROW) {
			r->ncq_depth = (int)r->ncq_qd[i];
			break;
		}
}

int gc_ncq(struct gc *g)
{
	struct dg_geocache *r = g->out;
	unsigned maxqd = dg_engine_qd(g->s.e);
	uint64_t range = g->o->end_bytes - g->o->start_bytes;
	uint64_t span = (uint64_t)((double)range * NCQ_SPAN_SHARE);
	uint64_t seed = dg_splitmix64(&g->s.rng);
	int rc;

	if (maxqd > DG_GEOCACHE_MAX_QD)
		maxqd = DG_GEOCACHE_MAX_QD;
	if (maxqd < 2) {
		gc_note(g, "command queueing not measured: the engine's queue depth is 1");
		return 0;
	}
	if (span < (1ull << 30))
		span = 1ull << 30;
	span = span / g->b * g->b;
	for (unsigned qd = 1; qd <= maxqd; qd *= 2) {
		struct ncq_run n = {.lo = g->o->start_bytes, .span = span, .rng = seed, .qd = qd};
		rc = ncq_rate(g, &n, &r->ncq_iops[r->ncq_points]);
		if (rc == 1) {
			gc_note(g, "command queueing not measured: reads failed");
			return 0;
		}
		if (rc)
			return rc;
		r->ncq_qd[r->ncq_points++] = qd;
	}
	ncq_decide(g);
	return 0;
}
