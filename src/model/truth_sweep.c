/* SPDX-License-Identifier: MIT */
/*
 * The truth of a sequential sweep cell: a reference of the stream written from drive-spec.md's
 * rules ("Read-ahead", "Command queueing", "The host link and command decoding"), apart from
 * drive.c (none of its code), as the random reference of truth.c is.
 *
 * A stream of `block` requests kept `qd` deep is paced by the slowest of the media (every
 * track's share of T and every transition's move and wait for the skewed sector 0), the link
 * and the commands. When the commands are the slower (small blocks, Rc < b), the read-ahead
 * stream runs ahead of the host until it reaches its limit (the last requested sector +
 * read_ahead_bytes) and stops; the host drains the cache, and the request that passes the limit
 * arrives after the platter has carried that sector away: it waits for it to come round. The
 * rate is then bursts at the commands' pace broken by those waits — a phase that no closed form
 * gives, so the reference walks the requests one by one:
 *  - a command is held from its arrival, or (the drive holding ncq_depth at most) from the start
 *    of the service that freed its place; version 1 drives decode only after the last service
 *    ended (drive-spec.md "The model": the overhead serialised); it is decoded command_overhead
 *    later; served in order when the media is free (a sequential stream is all cache hits and
 *    continuations, which the drive serves oldest first);
 *  - served: a cache hit leaves at the link's rate and, while the stream runs, moves its limit;
 *    a continuation of a running stream completes when the stream has read it (and the link
 *    carried it); a continuation of a stopped stream positions for the limit first;
 *  - the host sees each completion a jitter later and sends the next request then; with jitter
 *    the truth is the mean of 16 runs with their own draws (the waits' phase is random): the
 *    expectation of the sweep's estimator over the same window, that is the long-run rate the
 *    window gives (the sweep reads on until its own draw is within DG_SWEEP_SEQ_SE of it).
 * Left out: defects, background work (cells with errors are not compared), the cache size (at
 * least the read-ahead plus a block on every spec).
 */
#include <math.h>
#include <stdlib.h>

#include "diskgeo/model.h"
#include "diskgeo/sweep.h"
#include "model_priv.h"

struct pos {
	uint64_t x; /* the stream begins sector x ... */
	double t;   /* ... at t (ms) */
};

struct track {
	uint64_t first; /* absolute first sector */
	uint32_t spt, cyl, head;
	double theta0; /* the angle of its sector 0 */
};

static void track_of(const struct dg_spec *spec, uint64_t lba, struct track *k, uint32_t *s)
{
	const struct dg_zone *z = &spec->zones[dg_spec_zone_of(spec, lba)];
	uint64_t j;

	dg_zone_locate(spec, z, lba - z->first_lba, &j, s, &k->spt);
	k->first = lba - *s;
	k->theta0 = dg_zone_sector_angle(spec, z, j, 0);
	dg_zone_track_chs(spec, z, j, &k->cyl, &k->head);
}

/* When sector `s` of track `k` next comes under a head that reaches the track at t. */
static double come_round(const struct dg_spec *spec, const struct track *k, uint32_t s, double t)
{
	double w = k->theta0 + (double)s / k->spt - t / spec->period_ms;

	w -= floor(w);
	if (w > 1.0 - 1e-9)
		w = 0.0;
	return t + w * spec->period_ms;
}

/* The time the stream, at `c`, finishes sector y-1 (y > c.x); `keep` moves c to the start of
 * y-1's track (later questions ask further on). */
static double stream_to(const struct dg_spec *spec, struct pos *c, uint64_t y, bool keep)
{
	struct pos p = *c;
	struct track k;
	uint32_t s;

	for (;;) {
		track_of(spec, p.x, &k, &s);
		uint64_t end = k.first + k.spt;
		if (y <= end) {
			if (keep)
				*c = p;
			return p.t + (double)(y - p.x) * spec->period_ms / k.spt;
		}
		double e = p.t + (double)(end - p.x) * spec->period_ms / k.spt;
		struct track n;
		track_of(spec, end, &n, &s);
		e += dg_spec_track_move_ms(spec, k.cyl, k.head, n.cyl, n.head);
		p = (struct pos){end, come_round(spec, &n, 0, e)};
	}
}

struct stream {
	bool on; /* a stream exists */
	uint64_t origin, limit;
	struct pos cur; /* at or before the host's next request */
	double head_ms; /* the first sector's start: the head's arrival at it */
};

static uint64_t ra_limit(const struct dg_spec *spec, uint64_t end)
{
	uint64_t lim = end + spec->read_ahead_bytes / spec->sector_bytes;

	return lim < spec->capacity_sectors ? lim : spec->capacity_sectors;
}

/* Serves sectors [a, e) decoded at td; returns the completion (media and link). */
static double serve(const struct dg_spec *spec, struct stream *st, uint64_t a, uint64_t e,
		    double td)
{
	double link = td + (double)(e - a) * spec->sector_bytes / (spec->interface_mbps * 1e3);
	uint32_t s;

	if (st->on && a >= st->origin && a <= st->limit) {
		bool running = stream_to(spec, &st->cur, st->limit, false) > td;
		if (e <= st->limit && stream_to(spec, &st->cur, e, false) <= td) {
			/* a cache hit */
			if (running && ra_limit(spec, e) > st->limit)
				st->limit = ra_limit(spec, e);
			return link;
		}
		if (!running) {
			/* stopped at the limit: the head, on limit-1's track, waits for it */
			struct track from, to;
			track_of(spec, st->limit - 1, &from, &s);
			track_of(spec, st->limit, &to, &s);
			double at =
			    td + dg_spec_track_move_ms(spec, from.cyl, from.head, to.cyl, to.head);
			st->cur = (struct pos){st->limit, come_round(spec, &to, s, at)};
		}
		if (ra_limit(spec, e) > st->limit)
			st->limit = ra_limit(spec, e);
		double m = stream_to(spec, &st->cur, e, true);
		return m > link ? m : link;
	}
	/* positioned: the head rests on the first sector's track (the cell's positioning read) */
	struct track k;
	track_of(spec, a, &k, &s);
	st->on = true;
	st->origin = a;
	st->limit = ra_limit(spec, e);
	st->cur = (struct pos){a, come_round(spec, &k, s, td)};
	double m = stream_to(spec, &st->cur, e, true);
	link += st->cur.t - td;
	return m > link ? m : link;
}

/* An exponential delay of mean m from `rng` (the jitter the host sees). */
static double exp_draw(uint64_t *rng, double m)
{
	return m > 0 ? -m * log(1.0 - (double)(dg_splitmix64(rng) >> 11) / 9007199254740992.0)
		     : 0.0;
}

/* A min-heap of the host-visible completions not yet answered by a new request. */
static void heap_push(double *h, unsigned *n, double v)
{
	unsigned i = (*n)++;

	for (; i && h[(i - 1) / 2] > v; i = (i - 1) / 2)
		h[i] = h[(i - 1) / 2];
	h[i] = v;
}

static double heap_pop(double *h, unsigned *n)
{
	double top = h[0], v = h[--*n];
	unsigned i = 0;

	for (;;) {
		unsigned c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= v)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = v;
	return top;
}

/* One run of the reference over nb requests of `per` sectors from `lo`, the jitter drawn from
 * `rng`; the rate over the window (MB/s). `arrive`, `td`, `seen` hold nb entries each, `heap`
 * qd + 1. */
static double stream_run(const struct dg_spec *spec, uint64_t lo, uint64_t nb, uint32_t per,
			 unsigned qd, uint64_t *rng, double *arrive, double *td, double *seen,
			 double *heap)
{
	uint32_t n_q = spec->ncq_depth > 1 ? spec->ncq_depth : 1;
	double ovh = spec->command_overhead_ms, t_free = 0.0, last_done = 0.0;
	struct stream st = {0};
	unsigned nh = 0;

	for (uint64_t k = 0; k < nb; k++) {
		/* request 0 positions alone; then the host keeps qd in flight, sending the next
		 * request when it sees a completion (jitter may show them out of order) */
		arrive[k] = k == 0 ? 0.0 : k <= qd ? seen[0] : heap_pop(heap, &nh);
		double held = arrive[k];
		if (k >= 1 && !spec->v2)
			held = fmax(held, last_done);
		else if (k >= n_q)
			held = fmax(held, td[k - n_q]);
		td[k] = fmax(held + ovh, t_free);
		last_done = t_free = serve(spec, &st, lo + k * per, lo + (k + 1) * per, td[k]);
		seen[k] = last_done + exp_draw(rng, spec->jitter_ms);
		if (k)
			heap_push(heap, &nh, seen[k]);
	}
	/* the sweep's window and estimator: the stream's requests (1..) after its first quarter,
	 * as the host saw them complete (seen[] in ms: the slope is per ms) */
	uint64_t w0 = 1 + (nb - 1) / 4;
	return dg_sweep_slope(seen + w0, nb - w0) * 1e3 * per * spec->sector_bytes / DG_MB;
}

double dg_truth_seq_block_mb_per_s(const struct dg_spec *spec, uint64_t offset_bytes,
				   uint64_t length_bytes, uint32_t block_bytes, unsigned qd)
{
	uint32_t sb = spec->sector_bytes, per = block_bytes / sb;
	uint64_t nb = length_bytes / block_bytes, lo = offset_bytes / sb, rng = 0x5e9;
	/* with jitter the restarts' phase is random: the mean of runs with their own draws */
	unsigned runs = spec->jitter_ms > 0 ? 16 : 1;
	double sum = 0.0;

	if (nb < 3 || !per || qd == 0 || lo + nb * per > spec->capacity_sectors)
		return NAN;
	double *arrive = calloc(3 * nb + qd + 1, sizeof(double));
	if (!arrive)
		return NAN;
	for (unsigned i = 0; i < runs; i++)
		sum += stream_run(spec, lo, nb, per, qd, &rng, arrive, arrive + nb, arrive + 2 * nb,
				  arrive + 3 * nb);
	free(arrive);
	return sum / runs;
}
