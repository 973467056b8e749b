/* SPDX-License-Identifier: MIT */
/*
 * Re-measures what a passing disturbance spoiled once the curve is done: a named stall (a slow
 * spot must stay slow) and a sample whose halves disagree with no stall to explain them.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "bandwidth_priv.h"

/* The curve sample (of n) whose bytes hold `at`; n when none does. */
static size_t sample_at(const struct ctx *c, size_t n, uint64_t at)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t o = bw_sample_offset(c, i, n);

		if (at >= o && at < o + c->p.sample_bytes)
			return i;
	}
	return n;
}

/*
 * A slow spot is a place that stays slow: each named one is re-measured once the curve is done
 * (a busy period of the drive's own work, a late host, has passed by then) and kept only when
 * the re-measure stalls as long again; otherwise the clean re-measure replaces the sample (one
 * pass) and the stall counts as passing. (Re-measuring outliers against transient
 * interference: Worthington et al. 1995, Schindler & Ganger 2000.)
 */
#define AGREE 0.1 /* a re-measure within this of the first measurement reads the medium */
int bw_confirm_slow_spots(struct ctx *c, size_t n, struct passes *ps)
{
	struct stall_note seen[MAX_STALL_NOTES];
	unsigned nseen = c->nstall_notes, more = c->stall_notes_more, nkept = 0;

	memcpy(seen, c->stall_notes, nseen * sizeof(*seen));
	for (unsigned j = 0; j < nseen; j++) {
		size_t i = sample_at(c, n, seen[j].lo);
		struct meas m;
		double was;
		int rc;

		if (i == n || bw_stopped(c)) {
			seen[nkept++] = seen[j];
			continue;
		}
		rc = bw_measure(c, bw_sample_offset(c, i, n), c->p.sample_bytes, &m);
		if (!rc && c->nomem)
			rc = -ENOMEM;
		if (rc)
			return rc;
		/* Still stalling, or not a fresh read of the medium (a rate far from the first
		 * measurement's, which had its wait taken out, came from the drive's cache):
		 * the spot stands. */
		was = ps->rates[i * c->p.passes];
		if (!m.ok || m.stall_ms > SLOW_SPOT_MS || !(fabs(m.mb_per_s / was - 1) < AGREE)) {
			seen[nkept++] = seen[j];
			continue;
		}
		c->passing_stalls++;
		if (c->p.passes == 1) {
			ps->rates[i] = m.mb_per_s;
			ps->waited[i] = m.waited_mb_per_s;
			ps->spreads[i] = m.half_spread;
			ps->stalls[i] = m.stalls;
			ps->stall_ms[i] = m.stall_ms;
		}
	}
	/* the re-measures' own notes are the kept spots again */
	memcpy(c->stall_notes, seen, nkept * sizeof(*seen));
	c->nstall_notes = nkept;
	c->stall_notes_more = more;
	return 0;
}

/*
 * A sample whose halves disagree by UNEVEN or more with no stall to explain it was disturbed
 * (a busy period or a late host inside it, not long enough to stand out as a stall): it is
 * re-measured once (one pass; at most one sample in UNEVEN_SHARE) and the re-measure kept when
 * its halves agree better and its rate is within AGREE of the first.
 */
#define UNEVEN_SHARE 20u
int bw_remeasure_uneven(struct ctx *c, size_t n, struct passes *ps)
{
	unsigned budget = (unsigned)(n / UNEVEN_SHARE) + 1;

	for (size_t i = 0; c->p.passes == 1 && i < n && budget > 0 && !bw_stopped(c); i++) {
		double was = ps->rates[i];
		struct meas m;
		int rc;

		if (!(was > 0) || ps->stalls[i] || !(ps->spreads[i] > UNEVEN * was))
			continue;
		budget--;
		rc = bw_measure(c, bw_sample_offset(c, i, n), c->p.sample_bytes, &m);
		if (!rc && c->nomem)
			rc = -ENOMEM;
		if (rc)
			return rc;
		if (!m.ok || m.stalls || !(m.half_spread < ps->spreads[i]) ||
		    !(fabs(m.mb_per_s / was - 1) < AGREE))
			continue;
		c->uneven_samples++;
		ps->rates[i] = m.mb_per_s;
		ps->waited[i] = m.waited_mb_per_s;
		ps->spreads[i] = m.half_spread;
	}
	return 0;
}

/* The refining sample of r whose timed bytes hold `at` and that stalled; NULL when none does. */
static struct dg_bandwidth_sample *stalled_refine_sample(struct dg_bandwidth_result *r, uint64_t at)
{
	for (size_t i = 0; i < r->nsamples; i++) {
		struct dg_bandwidth_sample *s = &r->samples[i];

		if (s->refine && s->stalls && at >= s->offset_bytes &&
		    at < s->offset_bytes + s->length_bytes)
			return s;
	}
	return NULL;
}

/*
 * The slow spots that refining samples named (stall notes [first, ...)) are confirmed as the
 * curve's are: each such sample is measured again, and a spot whose re-measure runs at the
 * sample's pace (within AGREE of its rate, which had the wait taken out) was a passing stall (a
 * busy period of the drive's own work: zoo 64's 23 ms every 106 s), not a slow place; the
 * re-measure replaces the sample. The first measurement's stall is kept otherwise.
 */
int bw_confirm_refine_spots(struct ctx *c, struct dg_bandwidth_result *r, unsigned first)
{
	struct stall_note seen[MAX_STALL_NOTES];
	unsigned nseen = c->nstall_notes, more = c->stall_notes_more, nkept = first;

	memcpy(seen, c->stall_notes, nseen * sizeof(*seen));
	for (unsigned j = first; j < nseen; j++) {
		struct dg_bandwidth_sample *s = stalled_refine_sample(r, seen[j].lo);
		uint64_t pos = c->p.block_bytes;
		struct meas m;
		int rc;

		/* the sample's positioning read ahead of its timed bytes, as first measured */
		if (!s || bw_stopped(c) || s->offset_bytes < pos ||
		    bw_positioning_bytes(c, s->length_bytes + pos) != pos) {
			seen[nkept++] = seen[j];
			continue;
		}
		rc = bw_measure(c, s->offset_bytes - pos, s->length_bytes + pos, &m);
		if (!rc && c->nomem)
			rc = -ENOMEM;
		if (rc)
			return rc;
		if (!m.ok || m.stall_ms > SLOW_SPOT_MS ||
		    !(fabs(m.mb_per_s / s->mb_per_s - 1) < AGREE)) {
			seen[nkept++] = seen[j];
			continue;
		}
		c->passing_stalls++;
		s->mb_per_s = m.mb_per_s;
		s->spread_mb_per_s = m.half_spread;
		s->stalls = m.stalls;
		s->stall_ms = m.stall_ms;
	}
	memcpy(c->stall_notes, seen, nkept * sizeof(*seen));
	c->nstall_notes = nkept;
	c->stall_notes_more = more;
	return 0;
}
