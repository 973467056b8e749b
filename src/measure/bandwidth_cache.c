/* SPDX-License-Identifier: MIT */
/*
 * What the drive's cache may still hold of a sample, and seeing through it. A drive keeps the
 * stream it reads in a cache segment, and a drive with several segments keeps the streams it
 * left, however far its head has moved since: a sample over bytes read lately can come back at
 * the link's rate (Schindler & Ganger 2000 count a drive's segments by exactly such re-reads).
 * The run remembers the last RECENT_EXTENTS ranges it read, each with the rate it read at. A
 * sample whose bytes were read within the last CACHE_SEGMENTS_MAX streams is checked once it is
 * measured: units far faster than the stream's own pace, or a rate far above what its bytes read
 * at before, come from the cache; then CACHE_SEGMENTS_MAX reads elsewhere push it out of every
 * segment and the sample is measured again. Few samples are read again (the pilot's first and
 * last, which are the curve's; a boundary search over a curve sample; a re-measure), and the
 * reads elsewhere are made only when a drive's cache did serve one.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>

#include "bandwidth_priv.h"
#include "util.h"

/* Remembers [off, off + len) as read at `mb_per_s` (NAN: unknown): the drive may cache it and
 * what it read ahead of it. */
void bw_remember(struct ctx *c, uint64_t off, uint64_t len, double mb_per_s)
{
	c->recent[c->recent_next] = (struct dg_bandwidth_extent){off, len + READ_AHEAD_MARGIN};
	c->recent_mbps[c->recent_next] = mb_per_s;
	c->recent_next = (c->recent_next + 1) % RECENT_EXTENTS;
	if (c->nrecent < RECENT_EXTENTS)
		c->nrecent++;
}

/* How many ranges were read after the ring's entry i. */
static unsigned age_of(const struct ctx *c, unsigned i)
{
	return (c->recent_next + RECENT_EXTENTS - 1 - i) % RECENT_EXTENTS;
}

static bool overlaps(const struct dg_bandwidth_extent *x, uint64_t lo, uint64_t hi)
{
	return lo < x->offset_bytes + x->length_bytes && x->offset_bytes < hi;
}

/* True when [lo, hi) overlaps one of the last RECENT_NEAR ranges read (or what the drive read
 * ahead of it): what the stream the drive reads now, or one it left just before, may hold. */
bool bw_recently_read(const struct ctx *c, uint64_t lo, uint64_t hi)
{
	for (unsigned i = 0; i < c->nrecent; i++)
		if (age_of(c, i) < RECENT_NEAR && overlaps(&c->recent[i], lo, hi))
			return true;
	return false;
}

/* The fewest ranges read since one whose bytes overlap [lo, hi), within CACHE_SEGMENTS_MAX
 * (UINT_MAX: none, no cache can hold it); *was the fastest rate those ranges read at (0: none
 * known). Their bytes as read, not what the drive may have read ahead: a segment keeps what its
 * stream read until the next command took the head away, little past the last request. */
unsigned bw_cached_age(const struct ctx *c, uint64_t lo, uint64_t hi, double *was)
{
	unsigned best = UINT_MAX;

	*was = 0;
	for (unsigned i = 0; i < c->nrecent; i++) {
		struct dg_bandwidth_extent x = c->recent[i];
		unsigned age = age_of(c, i);

		x.length_bytes -= READ_AHEAD_MARGIN;
		if (age >= CACHE_SEGMENTS_MAX || !overlaps(&x, lo, hi))
			continue;
		if (age < best)
			best = age;
		if (c->recent_mbps[i] > *was)
			*was = c->recent_mbps[i];
	}
	return best;
}

/* One read of `unit` bytes at `at`, alone, a failed one recorded in c->errors, remembered.
 * 0 or the engine's -errno. */
static int read_alone(struct ctx *c, uint64_t at, uint64_t unit)
{
	struct dg_io io = {.op = DG_IO_READ, .offset_bytes = at, .length_bytes = (uint32_t)unit};
	int n = dg_engine_submit(c->e, &io, 1);

	if (n < 0)
		return n;
	while (dg_engine_inflight(c->e) > 0) {
		n = dg_engine_reap(c->e, c->comps, 1, 1);
		if (n == -EINTR)
			continue;
		if (n < 0)
			return n;
		if (n == 1 && c->comps[0].result != (int64_t)unit &&
		    dg_errors_add(c->errors, at, unit,
				  c->comps[0].result < 0 ? (int)-c->comps[0].result : EIO) < 0)
			c->nomem = true;
	}
	bw_remember(c, at, unit, NAN);
	return 0;
}

/* The flush read's size: FLUSH_BYTES, or one sector when that is not a whole number of them. */
static uint64_t flush_unit(const struct ctx *c)
{
	return FLUSH_BYTES % c->align ? c->align : FLUSH_BYTES;
}

/*
 * Moves the drive's read stream away before a sample whose bytes were read lately (an
 * interrupted boundary search, a re-measure): one small read far from [lo, hi) and from
 * everything read lately, so that a drive with one segment reads the sample from the medium.
 * Returns 0 or the engine's -errno; a failed read goes to c->errors.
 */
int bw_flush_stream(struct ctx *c, uint64_t lo, uint64_t hi)
{
	uint64_t size = c->info->size_bytes, unit = flush_unit(c), at = UINT64_MAX;
	uint64_t cands[3] = {0, size / 2, size - unit};
	int rc;

	for (int i = 0; i < 3 && at == UINT64_MAX; i++) {
		uint64_t x = cands[i] - cands[i] % c->align;

		if (x + unit <= size && !bw_recently_read(c, x, x + unit) &&
		    (x + unit + READ_AHEAD_MARGIN <= lo || x >= hi + READ_AHEAD_MARGIN))
			at = x;
	}
	if (at == UINT64_MAX)
		return 0; /* a device too small to read elsewhere: nothing to gain */
	rc = read_alone(c, at, unit);
	if (!rc)
		c->flushes++;
	return rc;
}

/*
 * Pushes [lo, hi) out of every cache segment: CACHE_SEGMENTS_MAX small reads, each a stream of
 * its own (EVICT_STEP apart, beyond any read-ahead), in the half of the device away from the
 * sample, past everything read lately. A device too small for them gets fewer. 0 or -errno.
 */
static int evict(struct ctx *c, uint64_t lo, uint64_t hi)
{
	uint64_t size = c->info->size_bytes, unit = flush_unit(c);
	uint64_t at = lo < size / 2 ? size - size / 4 : size / 4, tries = 0;
	double was;

	if (size < 4 * EVICT_STEP)
		return 0;
	for (unsigned k = 0; k < CACHE_SEGMENTS_MAX && tries < 4ull * CACHE_SEGMENTS_MAX; tries++) {
		uint64_t x;
		int rc;

		at = (at + EVICT_STEP) % (size - unit);
		x = at - at % c->align;
		if ((x + unit + READ_AHEAD_MARGIN > lo && x < hi + READ_AHEAD_MARGIN) ||
		    bw_cached_age(c, x, x + unit, &was) != UINT_MAX)
			continue;
		rc = read_alone(c, x, unit);
		if (rc)
			return rc;
		k++;
	}
	return 0;
}

/*
 * Whether a sample's units (c->kb, c->kt: MiB and ms, nu of them, and c->cum_b their reads, from
 * group_units) show reads the cache served: runs of units in a row, each HIT_FAST times faster
 * than the stream's median pace, that hold FAST_RUN reads or more (hits come in bursts, which
 * one unit may hold), at least two reads' worth in all. The medium never runs that far
 * ahead of its own pace for long: units that cross a track switch are slower than the others
 * (by half on a fast drive with a slow switch), but whichever kind is the rarer comes alone,
 * since the other is the median. A host late with a reply makes a burst of fast ones after a
 * slow one, which does not count, nor do the first two units (what the drive read ahead while
 * the host sent the stream, bandwidth_sample.c).
 */
bool bw_fast_units(struct ctx *c, size_t nu)
{
	double *tmp = c->tpb + c->maxreads, med, fast = 0, run = 0;
	size_t last_slow = SIZE_MAX, len = 0;

	if (nu < STALL_MIN_READS)
		return false;
	for (size_t u = 0; u < nu; u++)
		tmp[u] = c->kt[u] / c->kb[u];
	med = dg_median(tmp, nu);
	for (size_t u = 0; u <= nu; u++) {
		double pace = u < nu ? c->kt[u] / c->kb[u] : med;

		if (pace > STALL_FACTOR * med)
			last_slow = u;
		if (u < nu && u >= 2 && pace * HIT_FAST < med &&
		    (last_slow == SIZE_MAX || u - last_slow > CATCH_UP_UNITS)) {
			run += c->kb[u];
			len += (size_t)c->cum_b[u]; /* its reads (group_units) */
			continue;
		}
		if (len >= FAST_RUN)
			fast += run;
		run = 0;
		len = 0;
	}
	return fast >= 2.0 * c->rb / (1 << 20);
}

/*
 * After a sample over [lo, hi), bytes read lately, was measured (m; `fast` from bw_fast_units();
 * `was` the fastest rate those bytes read at before): whether the cache served it, *served.
 * Then the bytes are pushed out of every segment (evict()) for the caller to measure them again.
 * 0 or -errno.
 */
int bw_cache_check(struct ctx *c, uint64_t lo, uint64_t hi, bool fast, double was,
		   const struct meas *m, bool *served)
{
	*served = fast || (m->ok && was > 0 && m->mb_per_s > HIT_FAST * was);
	if (!*served)
		return 0;
	c->cache_served++;
	return evict(c, lo, hi);
}
