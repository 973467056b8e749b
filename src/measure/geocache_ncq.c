/* SPDX-License-Identifier: MIT */
/*
 * Command queueing: the random 4 KiB read rate at QD 1, 2, 4, ... 32 (the engine's qd at most)
 * over one span, with the same random offsets at every depth (so that the rates differ by the
 * queue, not by the draw).
 *
 * Reordering (the QD 1 vs QD n test of Wong 2019 and Diskbench): a drive that serves its queue
 * in arrival order gains from a deeper queue only the command overhead that overlaps the media
 * work, a factor s1 / (s1 - overhead) with s1 the QD 1 service time; a gain clearly beyond that
 * (x 1.1, and at least 10 %) means it reorders. Depth: from the completion order at the
 * deepest QD (see ncq_depth()) rather than from where the gain stops growing: on the zoo the
 * gain from 16 to 32 held commands is often under the rate's noise, and a drive of depth d
 * reaches its plateau only at QD d + 1, so the plateau put 8 % of the zoo's depths wrong.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "diskgeo/engine.h"
#include "geocache_priv.h"

#define NCQ_IOS	       400u /* completions timed at each depth */
#define NCQ_SPAN_SHARE 0.01 /* the span: 1 % of the range (at least 1 GiB) */
#define NCQ_RANK_SEEN  3u   /* a completion rank counts when seen this often */
#define NCQ_BEYOND     1.10 /* reorders: gain beyond what the overlap explains, by this */
#define NCQ_MAX_FAILS  (NCQ_IOS / 4)

struct ncq_run {
	uint64_t lo, span, rng;
	unsigned qd;
	uint64_t out[DG_GEOCACHE_MAX_QD]; /* tags in flight */
	unsigned nout;
	unsigned rank_n[DG_GEOCACHE_MAX_QD]; /* completions by rank among those in flight */
};

/* Files a completion: its rank is the number of reads in flight submitted before it. */
static void ncq_rank(struct ncq_run *n, uint64_t tag)
{
	unsigned rank = 0, at = 0;

	for (unsigned i = 0; i < n->nout; i++) {
		rank += n->out[i] < tag;
		if (n->out[i] == tag)
			at = i;
	}
	n->out[at] = n->out[--n->nout];
	n->rank_n[rank]++;
}

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

	memset(n->rank_n, 0, sizeof(n->rank_n));
	n->nout = 0;
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
			n->out[n->nout++] = sent;
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
			ncq_rank(n, c[i].tag);
			if (++got == n->qd)
				t0 = c[i].complete_ns;
		}
	}
	*iops = NCQ_IOS / ((double)(dg_engine_now_ns(g->s.e) - t0) / 1e9);

	return 0;
}

/* Measures the rate at `qd` (deeper than every point so far) and appends it. A rate below the
 * last point's by 10 % (a deeper queue is never slower: a busy period of the drive's own work
 * fell into it) is measured again, and the faster kept. Returns as ncq_rate. */
static int ncq_point(struct gc *g, struct ncq_run *n, unsigned qd)
{
	struct dg_geocache *r = g->out;
	uint64_t seed = n->rng;
	double v, again;
	int rc;

	n->qd = qd;
	rc = ncq_rate(g, n, &v);
	if (rc == 0 && r->ncq_points && v < 0.9 * r->ncq_iops[r->ncq_points - 1]) {
		n->rng = seed;
		rc = ncq_rate(g, n, &again);
		v = fmax(v, again);
	}
	n->rng = seed;
	if (rc)
		return rc;
	r->ncq_qd[r->ncq_points] = qd;
	r->ncq_iops[r->ncq_points++] = v;
	return 0;
}

/*
 * Depth from the completion order at the deepest QD: the drive picks among the commands it
 * holds, so a completion overtakes at most depth - 1 older reads (its rank). The read the host
 * hands over at a completion is decoded only after the drive has chosen the next one, so when
 * the drive holds everything we send the ranks stop at QD - 2: then the depth is at least the
 * QD tried, and that is what is reported ("the largest it accepts"). A rank counts when seen
 * NCQ_RANK_SEEN times (two completions a jitter apart cannot fake it).
 */
static void ncq_depth(struct dg_geocache *r, const struct ncq_run *n)
{
	unsigned top = 0;

	for (unsigned k = 0; k < n->qd; k++)
		if (n->rank_n[k] >= NCQ_RANK_SEEN)
			top = k;
	r->ncq_max_rank = (int)top;
	r->ncq_depth = top + 2 >= n->qd ? (int)n->qd : (int)top + 1;
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
	r->ncq_start_bytes = n.lo;
	r->ncq_span_bytes = n.span;
	for (unsigned qd = 1; qd <= maxqd && rc == 0; qd *= 2) {
		if (qd > 1 && gc_left_ms(g) <= 0) {
			gc_note(g,
				"command queueing measured up to QD %u: the time budget is spent",
				qd / 2);
			break;
		}
		rc = ncq_point(g, &n, qd);
	}
	if (rc == 0) {
		double s1 = 1000.0 / r->ncq_iops[0];
		/* the hit time bounds the command overhead from above */
		r->ncq_gain_explained = s1 > r->hit_ms ? s1 / (s1 - r->hit_ms) : INFINITY;
		for (unsigned i = 1; i < r->ncq_points; i++)
			best = fmax(best, r->ncq_iops[i] / r->ncq_iops[0]);
		r->ncq_reorders = best > fmax(r->ncq_gain_explained * NCQ_BEYOND, 1.1);
		ncq_depth(r, &n);
		if (r->ncq_reorders != (r->ncq_max_rank > 0))
			gc_note(g, "the QD gain and the completion order disagree on reordering");
		if (!r->ncq_reorders)
			r->ncq_depth = 1;
	}
	if (rc == 1) {
		r->ncq_reorders = r->ncq_depth = -1;
		gc_note(g, "command queueing not measured: reads failed");
		return 0;
	}
	return rc;
}
