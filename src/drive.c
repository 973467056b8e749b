/* SPDX-License-Identifier: MIT */
/*
 * The request-level timing of a simulated drive (shared/drive-spec.md, "The model").
 *
 * Physics, not formulas: the platter angle at time t is frac(t/T); each sector sits at its own
 * angle (the track's skew offset plus its index); the head moves between tracks in the spec's
 * seek / head-switch time and then waits for the sector to come round. A sequential read
 * therefore pays the skews because the sectors are where they are, not because a formula says
 * so — which is what lets truth.c (closed form) check this file.
 *
 * One cache segment (documented choice): the drive keeps the data of its current read stream —
 * the last cache_bytes of it — and forgets it when it positions for a new stream. A stream
 * starts at a positioned media access and keeps reading until `limit` = the last requested
 * sector + read_ahead_bytes (never into an error defect, never past the capacity). A command
 * that starts inside the cached part of the stream or ahead of it up to `limit` continues the
 * stream: what is already read goes out at interface speed, the rest when the stream reaches it.
 * Writes are timed exactly like reads (write cache on: the medium is not waited for).
 *
 * Cost: each command walks the stream track by track (O(tracks crossed)), never sector by
 * sector. Time is kept in double milliseconds internally; the interface is in ns.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "model_priv.h"

struct cursor {
	uint64_t x; /* the stream has read [origin, x) ... */
	double t;   /* ... and begins reading sector x at t (when x == limit: it stopped at t) */
};

struct dg_drive {
	const struct dg_spec *spec;
	double t_free;	   /* the controller is free from here (ms) */
	uint32_t head_cyl; /* where the head rests when there is no stream */
	uint32_t head_head;
	bool seg;	   /* a stream / cache segment exists */
	uint64_t origin;   /* the segment's first sector */
	uint64_t limit;	   /* the stream stops before this sector */
	struct cursor cur; /* stream progress, advanced lazily to the present */
	uint64_t cache_sectors;
	uint64_t ra_sectors;
	double iface_bytes_per_ms;
};

int dg_drive_new(const struct dg_spec *spec, struct dg_drive **out)
{
	struct dg_drive *d = calloc(1, sizeof(*d));

	*out = NULL;
	if (!d)
		return -ENOMEM;
	d->spec = spec;
	d->cache_sectors = spec->cache_bytes / spec->sector_bytes;
	d->ra_sectors = spec->read_ahead_bytes / spec->sector_bytes;
	d->iface_bytes_per_ms = spec->interface_mbps * 1e3;
	*out = d;
	return 0;
}

void dg_drive_free(struct dg_drive *drive)
{
	free(drive);
}

/* ---- geometry helpers ---- */

struct where {
	const struct dg_zone *z;
	uint64_t j; /* track inside the zone */
	uint32_t s; /* sector inside the track */
	uint32_t cyl, head;
};

static void locate(const struct dg_spec *spec, uint64_t lba, struct where *w)
{
	w->z = &spec->zones[dg_spec_zone_of(spec, lba)];
	uint64_t rel = lba - w->z->first_lba;
	w->j = rel / w->z->spt;
	w->s = (uint32_t)(rel % w->z->spt);
	dg_zone_track_chs(spec, w->z, w->j, &w->cyl, &w->head);
}

/* Time until angle `theta` (fraction of a turn) passes under the head, from time t. A wait of
 * (almost) a full turn is a float artefact of an exact arrival: it is 0. */
static double rot_wait(double t, double theta, double period)
{
	double phase = t / period;
	double w = theta - (phase - floor(phase));

	w -= floor(w);
	if (w > 1.0 - 1e-9)
		w = 0.0;
	return w * period;
}

/* Index of the first defect whose range ends after `lba` (ndefects if none). */
static size_t defect_after(const struct dg_spec *spec, uint64_t lba)
{
	size_t lo = 0, hi = spec->ndefects;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (spec->defects[mid].lba + spec->defects[mid].count > lba)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static double slow_penalty_ms(const struct dg_spec *spec, const struct dg_defect *df)
{
	return ceil(df->extra_ms / spec->period_ms - 1e-12) * spec->period_ms;
}

/* The first slow defect starting strictly after x, as an LBA (UINT64_MAX if none). */
static uint64_t next_slow_start(const struct dg_spec *spec, uint64_t x)
{
	for (size_t i = defect_after(spec, x); i < spec->ndefects; i++)
		if (!spec->defects[i].error && spec->defects[i].lba > x)
			return spec->defects[i].lba;
	return UINT64_MAX;
}

/* The first error defect starting at or after x (capacity if none). */
static uint64_t next_error_start(const struct dg_spec *spec, uint64_t x)
{
	for (size_t i = defect_after(spec, x); i < spec->ndefects; i++)
		if (spec->defects[i].error)
			return spec->defects[i].lba > x ? spec->defects[i].lba : x;
	return spec->capacity_sectors;
}

/* ---- the stream ---- */

/* The next point after x where reading stops being uniform: the end of x's track, the start
 * of a slow defect, or y. */
static uint64_t boundary(const struct dg_spec *spec, uint64_t x, uint64_t y, uint32_t *spt)
{
	struct where w;

	locate(spec, x, &w);
	*spt = w.z->spt;
	uint64_t b = x - w.s + w.z->spt; /* next track's first sector */
	if (y < b)
		b = y;
	uint64_t sl = next_slow_start(spec, x);
	return sl < b ? sl : b;
}

/* Given that the stream finished sector b-1 at time e, when does it begin sector b? A track
 * change moves the head and waits for sector 0 of the new track (at its skew offset); a slow
 * defect starting at b costs its extra revolutions. */
static double gap(const struct dg_spec *spec, uint64_t b, double e)
{
	struct where w;
	double t = e;

	locate(spec, b, &w);
	if (w.s == 0) {
		struct where p;
		locate(spec, b - 1, &p);
		t += dg_spec_track_move_ms(spec, p.cyl, p.head, w.cyl, w.head);
		double theta = (double)dg_zone_track_offset(spec, w.z, w.j) / w.z->spt;
		t += rot_wait(t, theta, spec->period_ms);
	}
	size_t i = defect_after(spec, b);
	if (i < spec->ndefects && spec->defects[i].lba == b && !spec->defects[i].error)
		t += slow_penalty_ms(spec, &spec->defects[i]);
	return t;
}

/* The time the stream at `c` finishes sector y-1 (y > c.x). Does not move the cursor. */
static double time_to(const struct dg_spec *spec, struct cursor c, uint64_t y)
{
	for (;;) {
		uint32_t spt;
		uint64_t b = boundary(spec, c.x, y, &spt);
		double e = c.t + (double)(b - c.x) * spec->period_ms / spt;
		if (b == y)
			return e;
		c.t = gap(spec, b, e);
		c.x = b;
	}
}

/* How many sectors the stream has read by time `t` (the largest x <= limit finished by then);
 * advances the cursor over whole uniform stretches finished by then. */
static uint64_t read_by(struct dg_drive *d, double t)
{
	const struct dg_spec *spec = d->spec;
	struct cursor *c = &d->cur;

	for (;;) {
		if (c->x == d->limit)
			return c->x;
		uint32_t spt;
		uint64_t b = boundary(spec, c->x, d->limit, &spt);
		double per = spec->period_ms / spt;
		double e = c->t + (double)(b - c->x) * per;
		if (e <= t) {
			c->t = b == d->limit ? e : gap(spec, b, e);
			c->x = b;
			continue;
		}
		double k = floor((t - c->t) / per + 1e-9);
		if (k <= 0)
			return c->x;
		return c->x + (uint64_t)k;
	}
}

/* A positioned access: the head, on track (cyl, head) at time t, moves to `lba` and waits for
 * it. Returns the time it begins reading `lba` (a slow defect holding lba adds its revolutions). */
static double position(const struct dg_spec *spec, uint32_t cyl, uint32_t head, double t,
		       uint64_t lba)
{
	struct where w;

	locate(spec, lba, &w);
	t += dg_spec_track_move_ms(spec, cyl, head, w.cyl, w.head);
	uint32_t off = dg_zone_track_offset(spec, w.z, w.j);
	double theta = (double)((off + (uint64_t)w.s) % w.z->spt) / w.z->spt;
	t += rot_wait(t, theta, spec->period_ms);
	size_t i = defect_after(spec, lba);
	if (i < spec->ndefects && spec->defects[i].lba <= lba && !spec->defects[i].error)
		t += slow_penalty_ms(spec, &spec->defects[i]);
	return t;
}

/* Where the read-ahead of a command ending at `end` stops. */
static uint64_t stream_limit(const struct dg_drive *d, uint64_t end)
{
	const struct dg_spec *spec = d->spec;
	uint64_t lim = end + d->ra_sectors;

	if (lim > spec->capacity_sectors)
		lim = spec->capacity_sectors;
	uint64_t er = next_error_start(spec, end);
	return er < lim ? er : lim;
}

int64_t dg_drive_access(struct dg_drive *d, uint64_t arrive_ns, bool write, uint64_t lba,
			uint32_t sectors, uint64_t *done_ns)
{
	const struct dg_spec *spec = d->spec;
	double arrive = (double)arrive_ns / (double)DG_NS_PER_MS;
	double done;
	uint32_t cyl = d->head_cyl, head = d->head_head;
	struct where w;

	(void)write; /* timed like a read: write cache on */
	*done_ns = arrive_ns;
	if (sectors == 0 || lba >= spec->capacity_sectors || sectors > spec->capacity_sectors - lba)
		return -EINVAL;
	uint64_t end = lba + sectors;
	double t = (arrive > d->t_free ? arrive : d->t_free) + spec->command_overhead_ms;

	/* where the head is now, and whether the command continues the stream */
	if (d->seg) {
		uint64_t p = read_by(d, t);
		bool running = p < d->limit;
		uint64_t lo = p > d->cache_sectors ? p - d->cache_sectors : 0;
		if (lo < d->origin)
			lo = d->origin;
		if (lba >= lo && end <= p) {
			/* all cached: interface speed; a running stream reads on */
			done = t + (double)sectors * spec->sector_bytes / d->iface_bytes_per_ms;
			if (running) {
				uint64_t lim = stream_limit(d, end);
				if (lim > d->limit)
					d->limit = lim;
			}
			goto out;
		}
		if (lba >= lo && lba <= d->limit && next_error_start(spec, lba) >= end) {
			double tc = t + (double)(p > lba ? p - lba : 0) * spec->sector_bytes /
					    d->iface_bytes_per_ms;
			if (!running) {
				/* stopped at limit: the head waits on limit-1's track */
				locate(spec, d->limit - 1, &w);
				d->cur.x = d->limit;
				d->cur.t = position(spec, w.cyl, w.head, t, d->limit);
			}
			uint64_t lim = stream_limit(d, end);
			if (lim > d->limit)
				d->limit = lim;
			double te = time_to(spec, d->cur, end);
			done = te > tc ? te : tc;
			goto out;
		}
		/* abandon the stream: the head is on the track it was reading */
		locate(spec, running ? p : d->limit - 1, &w);
		cyl = w.cyl;
		head = w.head;
	}

	uint64_t er = next_error_start(spec, lba);
	if (er < end) {
		/* read up to the bad range, retry there for extra_ms, give up */
		size_t i = defect_after(spec, er);
		double a = position(spec, cyl, head, t, lba);
		done = (er > lba ? time_to(spec, (struct cursor){lba, a}, er) : a) +
		       spec->defects[i].extra_ms;
		locate(spec, er, &w);
		d->head_cyl = w.cyl;
		d->head_head = w.head;
		d->seg = false;
		d->t_free = done;
		*done_ns = (uint64_t)llround(done * (double)DG_NS_PER_MS);
		return -EIO;
	}
	d->seg = true;
	d->origin = lba;
	d->limit = stream_limit(d, end);
	d->cur.x = lba;
	d->cur.t = position(spec, cyl, head, t, lba);
	done = time_to(spec, d->cur, end);
out:
	d->t_free = done;
	*done_ns = (uint64_t)llround(done * (double)DG_NS_PER_MS);
	return (int64_t)sectors * spec->sector_bytes;
}
