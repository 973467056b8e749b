/* SPDX-License-Identifier: MIT */
/*
 * Rotation period, command overhead and K0 (an access with no move and no rotational wait).
 *
 * Period: reading block after block *backwards* on one track, each read is positioned (below
 * the read-ahead stream, never cached) and completes when its block's end comes round: the
 * completions step by T (1 - g/S) for a step of g sectors on a track of S sectors, whatever the
 * overhead. Steps of one block (P1) and two blocks (P2) give T = 2 P1 - P2 and a block's media
 * time T - P1 (the sawtooth of single-sector steps, as in Talagala, Arpaci-Dusseau & Patterson
 * 2000 "skippy"; medians keep the odd track switch out).
 * Rotating or not: the device must be phase-locked: with an idle of P1/2 inserted before each
 * read, the completions of a spinning disk still step by P1 (mod T) — the wait absorbs the idle
 * —, while a flat-latency device's step grows by the idle. No lock, no rotation: never a made-up
 * rpm.
 * Overhead: re-reading the block just read is a cache hit (overhead + interface transfer): the
 * median of a few. K0 = overhead + the block's media time.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "seek_priv.h"

#define HITS	   9u
#define STEPS1	   33u
#define STEPS2	   33u
#define LOCK_STEPS 12u

/* Walks `n` reads backwards from *pos in steps of `step` bytes, idling `idle_ns` before each;
 * v[] gets the n - 1 completion intervals (ns). Returns seek_read()'s code. */
static int walk(struct seek_ctx *s, uint64_t *pos, uint64_t step, unsigned n, uint64_t idle_ns,
		double *v, size_t *nv)
{
	struct dg_completion c;
	uint64_t prev = 0;

	*nv = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t at = idle_ns ? dg_engine_now_ns(s->e) + idle_ns : 0;
		int rc = seek_read(s, *pos, at, &c);
		if (rc < 0 || rc == 2)
			return rc;
		*pos -= step;
		if (rc == 1) {
			prev = 0;
			continue;
		}
		if (prev)
			v[(*nv)++] = (double)(c.complete_ns - prev);
		prev = c.complete_ns;
	}
	return 0;
}

int seek_rotation_measure(struct seek_ctx *s, uint64_t at)
{
	double v[STEPS1 + STEPS2 + LOCK_STEPS];
	struct dg_completion c;
	uint64_t pos = at, b = s->block_bytes;
	size_t nv = 0;
	int rc;

	s->rotating = false;
	s->period_ns = s->drift_ns = 0;
	/* overhead: cache hits on a block just read */
	rc = seek_read(s, pos, 0, &c);
	if (rc)
		return rc;
	for (unsigned i = 0; i < HITS; i++) {
		rc = seek_read(s, pos, 0, &c);
		if (rc < 0 || rc == 2)
			return rc;
		if (rc == 0)
			v[nv++] = (double)(c.complete_ns - c.submit_ns);
	}
	if (nv == 0)
		return 1;
	s->overhead_ms = seek_median(v, nv) / 1e6;
	s->k0_ms = s->overhead_ms;

	pos -= b;
	rc = walk(s, &pos, b, STEPS1, 0, v, &nv);
	if (rc)
		return rc;
	double p1 = seek_median(v, nv);
	rc = walk(s, &pos, 2 * b, STEPS2, 0, v, &nv);
	if (rc)
		return rc;
	double p2 = seek_median(v, nv);
	double T = 2 * p1 - p2, d = p1 - p2;
	/* 2400..24000 rpm, at least 16 blocks per track */
	if (!(T >= 2.5e6 && T <= 25e6 && d > 0 && d < T / 16))
		return 0;
	rc = walk(s, &pos, b, LOCK_STEPS, (uint64_t)(p1 / 2), v, &nv);
	if (rc)
		return rc;
	unsigned locked = 0;
	for (size_t i = 0; i < nv; i++) {
		double f = (v[i] - p1) / T;
		if (fabs(f - round(f)) < 0.02)
			locked++;
	}
	if (nv == 0 || locked * 4 < nv * 3)
		return 0;
	s->rotating = true;
	s->period_ns = T;
	s->drift_ns = d;
	s->k0_ms = s->overhead_ms + d / 1e6;
	return 0;
}
