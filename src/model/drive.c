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
 *
 * Version 2 (drive-spec.md "Version 2"): per-surface track sizes and angle skews come from the
 * mapping of spec.c; media work covers whole physical sectors and a partial physical write is
 * a read-modify-write (+T); look-behind keeps the sectors passed during the rotational wait;
 * background periods hold media work and end the read-ahead stream where it is when they begin
 * (read_by applies them before any use of the stream, cache hits included); jitter delays only the
 * host-visible completion. The host link caps every transfer at interface_mbps on every drive
 * (version 1 model timed only cached data at the link; the golden traces of tests/golden/v1 are
 * unchanged by the rule). On a v2 spec (any v2 key) a command's decoding also overlaps the media
 * work of the one before; a version 1 spec keeps the overhead serialised after the previous
 * command, as before, because that rule changes version 1 timings at QD > 1 (the golden traces).
 * Queueing (ncq_depth > 1): dg_drive_queue holds the commands, dg_drive_step serves the next
 * one by the spec's rule (cache hits, then the stream's continuation, then shortest positioning
 * time first, ties oldest) at the moment the media becomes free.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_priv.h"

struct cursor {
	uint64_t x; /* the stream has read [origin, x) ... */
	double t;   /* ... and begins reading sector x at t (when x == limit: it stopped at t) */
};

struct qcmd {
	double arrive, held; /* ms; held < 0: still in the host's queue */
	double jitter;	     /* ms, drawn in command order */
	bool write;
	uint64_t lba;
	uint32_t sectors;
	uint64_t tag;
};

struct dg_drive {
	const struct dg_spec *spec;
	/* version 2 */
	double t_last_start; /* the last command's media start (decode overlap) */
	uint64_t rng;
	double bg_phase_ms;
	struct qcmd *q;
	size_t nq, capq;
	double t_free;	   /* the controller is free from here (ms) */
	uint32_t head_cyl; /* where the head rests when there is no stream */
	uint32_t head_head;
	bool seg;	   /* a stream / cache segment exists */
	uint64_t origin;   /* the segment's first sector */
	uint64_t limit;	   /* the stream stops before this sector */
	uint64_t need;	   /* the end of the last command's media range (work in progress) */
	double bg_from;	   /* the first busy period at or after this ends the stream */
	bool cut;	   /* a busy period ended the stream: no read-ahead until a new access */
	struct cursor cur; /* stream progress, advanced lazily to the present */
	uint64_t cache_sectors; /* the stream's segment: cache_bytes / cache_segments */
	struct dg_kept_segments kept;
	uint64_t ra_sectors;
	double iface_bytes_per_ms;
};

/* splitmix64 -> [0, 1) */
static double unit_rand(uint64_t *st)
{
	return (double)(dg_splitmix64(st) >> 11) / 9007199254740992.0;
}

/* The next host-visible delay: exponential with mean jitter_ms, in command order. */
static double draw_jitter(struct dg_drive *d)
{
	if (d->spec->jitter_ms <= 0)
		return 0.0;
	return -d->spec->jitter_ms * log(1.0 - unit_rand(&d->rng));
}

int dg_drive_new(const struct dg_spec *spec, struct dg_drive **out)
{
	struct dg_drive *d = calloc(1, sizeof(*d));

	*out = NULL;
	if (!d)
		return -ENOMEM;
	d->spec = spec;
	d->cache_sectors = spec->cache_bytes / spec->sector_bytes / spec->cache_segments;
	d->kept.max = spec->cache_segments - 1;
	d->ra_sectors = spec->read_ahead_bytes / spec->sector_bytes;
	d->iface_bytes_per_ms = spec->interface_mbps * 1e3;
	d->rng = spec->seed;
	if (spec->bg_every_s > 0)
		d->bg_phase_ms = unit_rand(&d->rng) * spec->bg_every_s * 1e3;
	*out = d;
	return 0;
}

void dg_drive_free(struct dg_drive *drive)
{
	if (drive)
		free(drive->q);
	free(drive);
}

/* ---- geometry helpers ---- */

struct where {
	const struct dg_zone *z;
	uint64_t j;   /* track inside the zone */
	uint32_t s;   /* sector inside the track */
	uint32_t spt; /* that track's size (per surface) */
	uint32_t cyl, head;
};

static void locate(const struct dg_spec *spec, uint64_t lba, struct where *w)
{
	w->z = &spec->zones[dg_spec_zone_of(spec, lba)];
	dg_zone_locate(spec, w->z, lba - w->z->first_lba, &w->j, &w->s, &w->spt);
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
	*spt = w.spt;
	uint64_t b = x - w.s + w.spt; /* next track's first sector */
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
		double theta = dg_zone_sector_angle(spec, w.z, w.j, 0);
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
 * advances the cursor over whole uniform stretches finished by then. Busy periods are not
 * looked at: read_by below applies them first. */
static uint64_t stream_by(struct dg_drive *d, double t)
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

/* Background work: the first busy period's start at or after t (+inf if none). */
static double busy_next(const struct dg_drive *d, double t)
{
	double P = d->spec->bg_every_s * 1e3;

	if (P <= 0)
		return INFINITY;
	if (t <= d->bg_phase_ms)
		return d->bg_phase_ms;
	return d->bg_phase_ms + ceil((t - d->bg_phase_ms) / P - 1e-12) * P;
}

/* The stream at time t, ended by the first busy period that began while it ran (drive-spec.md
 * "Jitter and background work"): what it read before the period stays cached, the command in
 * progress is read to its end, and nothing more is read ahead until a new media access. */
static uint64_t read_by(struct dg_drive *d, double t)
{
	if (d->seg && !d->cut) {
		double bs = busy_next(d, d->bg_from);
		if (bs <= t) {
			uint64_t p = stream_by(d, bs);
			uint64_t lim = p > d->need ? p : d->need;
			if (lim < d->limit)
				d->limit = lim;
			d->cut = true;
		}
	}
	return stream_by(d, t);
}

/* A new media access at t starts a stream that ends at the next busy period; the command's
 * own media range [.., me) is the work in progress. */
static void stream_start(struct dg_drive *d, double t, uint64_t me)
{
	d->bg_from = t;
	d->cut = false;
	d->need = me;
}

/* A positioned access: the head, on track (cyl, head) at time t, moves to `lba` and waits for
 * it. Returns the time it begins reading `lba` (a slow defect holding lba adds its revolutions). */
static double position_w(const struct dg_spec *spec, uint32_t cyl, uint32_t head, double t,
			 uint64_t lba, double *wait)
{
	struct where w;

	locate(spec, lba, &w);
	t += dg_spec_track_move_ms(spec, cyl, head, w.cyl, w.head);
	double theta = dg_zone_sector_angle(spec, w.z, w.j, w.s);
	double rw = rot_wait(t, theta, spec->period_ms);
	if (wait)
		*wait = rw;
	t += rw;
	size_t i = defect_after(spec, lba);
	if (i < spec->ndefects && spec->defects[i].lba <= lba && !spec->defects[i].error)
		t += slow_penalty_ms(spec, &spec->defects[i]);
	return t;
}

static double position(const struct dg_spec *spec, uint32_t cyl, uint32_t head, double t,
		       uint64_t lba)
{
	return position_w(spec, cyl, head, t, lba, NULL);
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

/* The media range of [lba, end): whole physical sectors, inside the capacity. */
static void physical_range(const struct dg_spec *spec, uint64_t lba, uint64_t end, uint64_t *ml,
			   uint64_t *me)
{
	uint64_t r = spec->phys_ratio ? spec->phys_ratio : 1;

	*ml = lba / r * r;
	*me = (end + r - 1) / r * r;
	if (*me > spec->capacity_sectors)
		*me = spec->capacity_sectors;
}

/* The stream's segment at time t: [*lo, return value) is in the cache (advances the stream
 * cursor to t). Only while a stream exists (d->seg). */
static uint64_t stream_window(struct dg_drive *d, double t, uint64_t *lo)
{
	uint64_t p = read_by(d, t);

	*lo = p > d->cache_sectors ? p - d->cache_sectors : 0;
	if (*lo < d->origin)
		*lo = d->origin;
	return p;
}

/* True when [lba, end) is all in the cache at time t (advances the stream cursor to t). */
static bool cached(struct dg_drive *d, double t, uint64_t lba, uint64_t end)
{
	uint64_t lo, p;

	if (dg_kept_hit(&d->kept, lba, end, false))
		return true;
	if (!d->seg)
		return false;
	p = stream_window(d, t, &lo);
	return lba >= lo && end <= p;
}

/* Where the head is at time t (the stream's track, or where it rests). */
static void head_at(struct dg_drive *d, double t, uint32_t *cyl, uint32_t *head)
{
	struct where w;

	*cyl = d->head_cyl;
	*head = d->head_head;
	if (!d->seg)
		return;
	uint64_t p = read_by(d, t);
	locate(d->spec, p < d->limit ? p : d->limit - 1, &w);
	*cyl = w.cyl;
	*head = w.head;
}

/* Media work wanted at t starts, inside a busy period, at its end (the stream was already ended
 * by read_by). */
static double background(const struct dg_drive *d, double t)
{
	const struct dg_spec *spec = d->spec;
	double P = spec->bg_every_s * 1e3;

	if (P <= 0 || t < d->bg_phase_ms)
		return t;
	double bs = d->bg_phase_ms + floor((t - d->bg_phase_ms) / P) * P;
	return t < bs + spec->bg_busy_ms ? bs + spec->bg_busy_ms : t;
}

/* Look-behind: the sectors of ml's track that passed under the head during the `wait` before
 * ml (never before the track's first sector, never inside a defect) join the cache. */
static void look_behind(struct dg_drive *d, uint64_t ml, double wait)
{
	const struct dg_spec *spec = d->spec;
	struct where w;

	locate(spec, ml, &w);
	uint64_t nb = (uint64_t)floor(wait * w.spt / spec->period_ms + 1e-9);
	if (nb > w.s)
		nb = w.s;
	uint64_t from = ml - nb;
	size_t i = defect_after(spec, from);
	if (i < spec->ndefects && spec->defects[i].lba < ml)
		from = spec->defects[i].lba + spec->defects[i].count;
	if (from < ml)
		d->origin = from;
}

/* Serves [ml, me) from the stream when it is cached or continues it (*done set: true), else
 * false. bytes_ms: the command's time on the link. */
static bool from_stream(struct dg_drive *d, double t, uint64_t ml, uint64_t me, double bytes_ms,
			double *done)
{
	const struct dg_spec *spec = d->spec;
	uint64_t lo, p = stream_window(d, t, &lo);
	bool running = p < d->limit;
	struct where w;

	if (ml >= lo && me <= p) {
		/* all cached: interface speed; a running stream reads on */
		*done = t + bytes_ms;
		if (running && !d->cut) {
			uint64_t lim = stream_limit(d, me);
			if (lim > d->limit)
				d->limit = lim;
		}
		return true;
	}
	if (!(ml >= lo && ml <= d->limit && next_error_start(spec, ml) >= me))
		return false;
	double tc = t + bytes_ms; /* the link carries all of it */
	if (!running) {
		/* stopped at limit: the head waits on limit-1's track */
		locate(spec, d->limit - 1, &w);
		d->cur.x = d->limit;
		d->cur.t = position(spec, w.cyl, w.head, t, d->limit);
		stream_start(d, t, me);
	}
	/* a stream ended by a busy period reads no further ahead */
	uint64_t lim = d->cut ? me : stream_limit(d, me);
	if (me > d->need)
		d->need = me;
	if (lim > d->limit)
		d->limit = lim;
	double te = time_to(spec, d->cur, me);
	*done = te > tc ? te : tc;
	return true;
}

/* A positioned access ends the stream: the head is on the track it was reading (*cyl, *head),
 * and what the stream holds stays in the cache as a kept segment (cache_segments > 1). */
static void leave_stream(struct dg_drive *d, double t, uint32_t *cyl, uint32_t *head)
{
	uint64_t lo, p = stream_window(d, t, &lo);
	struct where w;

	dg_kept_push(&d->kept, lo, p);
	locate(d->spec, p < d->limit ? p : d->limit - 1, &w);
	*cyl = w.cyl;
	*head = w.head;
}

/* Serves [lba, lba+sectors) beginning at t (decoded, the media free). Sets *done (media and
 * link, before jitter). */
static int64_t serve(struct dg_drive *d, double t, bool write, uint64_t lba, uint32_t sectors,
		     double *done_out)
{
	const struct dg_spec *spec = d->spec;
	bool v2 = spec->v2;
	double done;
	uint32_t cyl = d->head_cyl, head = d->head_head;
	struct where w;
	uint64_t end = lba + sectors, ml = lba, me = end;
	double bytes_ms = (double)sectors * spec->sector_bytes / d->iface_bytes_per_ms;
	bool rmw = false;

	if (v2) {
		physical_range(spec, lba, end, &ml, &me);
		rmw = write && (ml != lba || me != end);
	}
	/* from the stream (a hit, or its continuation), else from a segment of an earlier stream
	 * (a hit: the stream reads on), else a positioned access that ends the stream */
	if (d->seg && from_stream(d, t, ml, me, bytes_ms, &done))
		goto out;
	if (dg_kept_hit(&d->kept, ml, me, true)) {
		done = t + bytes_ms;
		goto out;
	}
	if (d->seg)
		leave_stream(d, t, &cyl, &head);

	uint64_t er = next_error_start(spec, ml);
	if (er < me) {
		/* read up to the bad range, retry there for extra_ms, give up */
		size_t i = defect_after(spec, er);
		double a = position(spec, cyl, head, t, ml);
		done = (er > ml ? time_to(spec, (struct cursor){ml, a}, er) : a) +
		       spec->defects[i].extra_ms;
		locate(spec, er, &w);
		d->head_cyl = w.cyl;
		d->head_head = w.head;
		d->seg = false;
		d->t_free = done;
		*done_out = done;
		return -EIO;
	}
	double wait = 0.0;
	d->seg = true;
	stream_start(d, t, me);
	d->origin = ml;
	d->limit = stream_limit(d, me);
	d->cur.x = ml;
	d->cur.t = position_w(spec, cyl, head, t, ml, &wait);
	if (spec->look_behind)
		look_behind(d, ml, wait);
	done = time_to(spec, d->cur, me);
	if (d->cur.t + bytes_ms > done)
		done = d->cur.t + bytes_ms;
out:
	if (rmw)
		done += spec->period_ms; /* written when the sectors come round again */
	d->t_free = done;
	*done_out = done;
	return (int64_t)sectors * spec->sector_bytes;
}

static bool bad_range(const struct dg_spec *spec, uint64_t lba, uint32_t sectors)
{
	return sectors == 0 || lba >= spec->capacity_sectors ||
	       sectors > spec->capacity_sectors - lba;
}

int64_t dg_drive_access(struct dg_drive *d, uint64_t arrive_ns, bool write, uint64_t lba,
			uint32_t sectors, uint64_t *done_ns)
{
	const struct dg_spec *spec = d->spec;
	double arrive = (double)arrive_ns / (double)DG_NS_PER_MS;
	double t, done;

	*done_ns = arrive_ns;
	if (bad_range(spec, lba, sectors))
		return -EINVAL;
	if (!spec->v2) {
		t = (arrive > d->t_free ? arrive : d->t_free) + spec->command_overhead_ms;
	} else {
		/* decoded while the media served the command before (drive-spec.md, "The host
		 * link and command decoding") */
		double held = arrive > d->t_last_start ? arrive : d->t_last_start;
		t = held + spec->command_overhead_ms;
		if (t < d->t_free)
			t = d->t_free;
		uint64_t ml, me;
		physical_range(spec, lba, lba + sectors, &ml, &me);
		if (!cached(d, t, ml, me))
			t = background(d, t);
		d->t_last_start = t;
	}
	int64_t r = serve(d, t, write, lba, sectors, &done);
	done += draw_jitter(d);
	*done_ns = (uint64_t)llround(done * (double)DG_NS_PER_MS);
	return r;
}

/* ---- command queueing (ncq_depth > 1) ---- */

/* Decoding: every held command is decoded command_overhead after it is held, whatever else is
 * held (drive-spec.md "The host link and command decoding": the decoding overlaps the media
 * work). Read literally, "decodes the next held command" could mean one decoder taking the held
 * commands in turn; that is NOT the same timing: it caps the drive at one command per overhead
 * (zoo-21, 4 KiB sequential at QD 32: 17.5 MB/s against 169.6), and after a burst the first
 * choice would be among the decoded commands only. The two references written apart from this
 * file from the same document (truth.c's random reference, truth_sweep.c) decode every held
 * command from its own hold time, as here; the spec's wording is to be made explicit. */

int dg_drive_queue(struct dg_drive *d, uint64_t arrive_ns, bool write, uint64_t lba,
		   uint32_t sectors, uint64_t tag)
{
	if (d->nq == d->capq) {
		size_t cap = d->capq ? d->capq * 2 : 64;
		struct qcmd *q = realloc(d->q, cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		d->q = q;
		d->capq = cap;
	}
	double arrive = (double)arrive_ns / (double)DG_NS_PER_MS;
	struct qcmd *c = &d->q[d->nq];
	*c = (struct qcmd){.arrive = arrive,
			   .held = d->nq < d->spec->ncq_depth ? arrive : -1.0,
			   .jitter = draw_jitter(d),
			   .write = write,
			   .lba = lba,
			   .sectors = sectors,
			   .tag = tag};
	d->nq++;
	return 0;
}

/* The moment the drive next chooses among its held commands (ms). */
static double decision_ms(const struct dg_drive *d, size_t *nheld)
{
	size_t n = d->nq < d->spec->ncq_depth ? d->nq : d->spec->ncq_depth;
	double r = INFINITY;

	for (size_t i = 0; i < n; i++) {
		double ready = d->q[i].held + d->spec->command_overhead_ms;
		if (ready < r)
			r = ready;
	}
	*nheld = n;
	return r > d->t_free ? r : d->t_free;
}

uint64_t dg_drive_next_ns(const struct dg_drive *d)
{
	size_t n;

	if (!d->nq)
		return UINT64_MAX;
	return (uint64_t)llround(decision_ms(d, &n) * (double)DG_NS_PER_MS);
}

int dg_drive_step(struct dg_drive *d, uint64_t *tag, int64_t *result, uint64_t *done_ns)
{
	const struct dg_spec *spec = d->spec;
	size_t n, pick = SIZE_MAX;
	int cls = 3; /* 0 hit, 1 continuation, 2 positioned */
	double best = INFINITY;

	if (!d->nq)
		return 0;
	double td = decision_ms(d, &n);
	uint32_t cyl, head;
	head_at(d, td, &cyl, &head);
	for (size_t i = 0; i < n; i++) {
		const struct qcmd *c = &d->q[i];
		uint64_t ml, me;
		if (c->held + spec->command_overhead_ms > td)
			continue;
		if (bad_range(spec, c->lba, c->sectors)) {
			if (cls > 0) {
				pick = i;
				cls = 0;
			}
			continue;
		}
		physical_range(spec, c->lba, c->lba + c->sectors, &ml, &me);
		int k;
		double est = 0.0;
		if (cached(d, td, ml, me))
			k = 0;
		else if (d->seg && ml >= d->origin && ml <= d->limit &&
			 next_error_start(spec, ml) >= me)
			k = 1;
		else {
			k = 2;
			est = position(spec, cyl, head, td, ml) - td;
		}
		if (k < cls || (k == 2 && cls == 2 && est < best)) {
			cls = k;
			pick = i;
			best = est;
		}
	}
	struct qcmd c = d->q[pick];
	double done, t = td;
	int64_t r;
	if (bad_range(spec, c.lba, c.sectors)) {
		r = -EINVAL;
		done = td;
	} else {
		if (cls != 0)
			t = background(d, t);
		r = serve(d, t, c.write, c.lba, c.sectors, &done);
	}
	memmove(&d->q[pick], &d->q[pick + 1], (d->nq - pick - 1) * sizeof(*d->q));
	d->nq--;
	/* the host hands the next waiting command to the freed place */
	for (size_t i = 0; i < d->nq && i < spec->ncq_depth; i++)
		if (d->q[i].held < 0)
			d->q[i].held = d->q[i].arrive > td ? d->q[i].arrive : td;
	*tag = c.tag;
	*result = r;
	*done_ns = (uint64_t)llround((done + c.jitter) * (double)DG_NS_PER_MS);
	return 1;
}
