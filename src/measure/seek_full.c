/* SPDX-License-Identifier: MIT */
/*
 * The full stroke and the test that tells a cache hit from a seek (seek.c runs both): the move
 * from the first block to the last, measured as one pair at the device's ends by the phase
 * bisection of seek_legs.c, again at fresh places when a drive's cache served a leg.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>

#include "seek_priv.h"
#include "util.h"

/* where the full stroke moves after a failed read: past a bad range, a fraction of a percent of
 * the stroke on any disk */
#define FULL_MOVE_BYTES (8ull << 20)
/* ... and after an attempt that read a cache hit (at most 1/64 of the capacity): past where the
 * attempt's reads walked (the positioning side a track a leg) and their read-ahead, at places
 * that no cache segment can hold */
#define FULL_FRESH_BYTES (96ull << 20)
#define FULL_ATTEMPTS	 3u /* the full stroke's attempts, and as many again after hits */
/* a full stroke known to a revolution / this is settled */
#define FULL_SETTLED_TURNS 64.0
/* a seek across cylinders takes more than this part of a turn */
#define IMPLAUSIBLE_TURNS 64.0

/*
 * A sample at a distance that crosses cylinders (SEEK_STREAM_BYTES or more) whose first leg, sent
 * without delay, took within 1/IMPLAUSIBLE_TURNS of a turn of K0 moved nothing: the drive's cache
 * served it (a segment kept from an earlier pair, whatever moved the head since), and a hit
 * threshold at the median hit misses it when the host's jitter delays it. Its K says nothing
 * (Schindler & Ganger 2000 tell hits from media accesses by such a floor). The K of a sample
 * is not tested: the middle of a wide interval may lie anywhere in it.
 */
bool seek_implausible(const struct seek_ctx *s, uint64_t d, const struct pair_out *po)
{
	return po->ok && s->rotating && d >= SEEK_STREAM_BYTES &&
	       po->access_ms - s->k0_ms < s->period_ns / 1e6 / IMPLAUSIBLE_TURNS;
}

/*
 * The full stroke: the first block to the last, measured as one pair at the device's ends. An
 * attempt that left a wide interval (legs that kept missing their phase), failed, or read a
 * full stroke no drive has (less than a quarter turn: a leg the drive's cache served, which a
 * cache with several segments does long after the place was read; Schindler & Ganger 2000
 * tell a hit from a media access by such a bound) is made again further in: a walk, past the
 * bad range, or after a hit FULL_FRESH_BYTES, at places that no read before has touched (a
 * walk in, the next attempt would read what the last one left in the cache); the narrowest
 * plausible interval is kept.
 */
int seek_full_stroke_measure(struct seek_ctx *s, struct dg_seek_result *r)
{
	uint64_t b = s->block_bytes, walk = (uint64_t)SEEK_WALK_BLOCKS * b;
	uint64_t fresh = r->capacity_bytes / 64 / b * b;
	double T = s->rotating ? s->period_ns / 1e6 : 0;
	unsigned hits = 0;

	if (fresh > FULL_FRESH_BYTES)
		fresh = FULL_FRESH_BYTES;
	if (fresh < walk)
		fresh = walk;
	uint64_t in = 0; /* how far in from the ends */
	double best_width = INFINITY;
	for (unsigned attempt = 0; attempt < FULL_ATTEMPTS + hits && hits <= FULL_ATTEMPTS;
	     attempt++) {
		struct pair_req req = {
		    .first = r->capacity_bytes - b - in,
		    .second = walk + in,
		    /* one pair, a tight width: measured one way, where every leg is aimed */
		    .fwd_measured = false,
		    .width_ms = T > 0 ? T / 512 : 0,
		    .max_legs = s->rotating ? SEEK_MAX_LEGS : 4,
		};
		struct pair_out po;
		int rc = seek_pair_measure(s, &req, &po);
		if (rc)
			return rc == -ECANCELED ? 0 : rc;
		s->moved += po.failed; /* the next attempt is at fresh places */
		double full = po.k_ms - s->k0_ms;
		uint64_t at = in; /* this attempt's pair */
		bool hit = po.ok && T > 0 && full < T / 4;
		in += po.failed ? FULL_MOVE_BYTES : hit ? fresh : walk;
		if (hit) {
			hits++;
			s->cache_hits++;
			continue;
		}
		if (po.ok && po.width_ms < best_width) {
			best_width = po.width_ms;
			r->full_stroke_ms = full > 0 ? full : 0;
			s->full_in = at;
		}
		/* settled: done; legs that kept missing their phase leave a wide interval, whose
		 * middle is no estimate: the next attempt further in, the narrowest kept */
		if (best_width <= T / FULL_SETTLED_TURNS)
			break;
	}
	return 0;
}

/*
 * The curve's longest distance leaves room for one start offset: its pair is the full stroke's
 * (the first block past the walk to the last one), which the full stroke measured to T/512 with
 * attempts at fresh places, where a curve sample stops at the width its tolerance asks for and
 * repeats the same pair. That point's move is then the full stroke's figure, kept when that
 * attempt's pair lay at most FULL_FRESH_BYTES further in from the ends than the point's (a few
 * cylinders of a full stroke).
 */
void seek_full_as_point(const struct seek_ctx *s, struct dg_seek_result *r)
{
	uint64_t walk = (uint64_t)SEEK_WALK_BLOCKS * s->block_bytes;

	if (r->npoints == 0 || !isfinite(r->full_stroke_ms))
		return;
	struct dg_seek_point *pt = &r->points[r->npoints - 1];
	/* a second start offset needs two walks of room (seek_measure_distance's spacing) */
	if (pt->distance_bytes + s->block_bytes + 3 * walk <= r->capacity_bytes)
		return;
	if (s->full_in > FULL_FRESH_BYTES)
		return; /* the full stroke moved far in: not the same pair */
	pt->seek_ms = r->full_stroke_ms;
}
