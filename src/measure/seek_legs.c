/* SPDX-License-Identifier: MIT */
/*
 * QD1 reads and the phase-controlled measurement of K = overhead + move + transfer between two
 * places (see seek_priv.h and the method note in diskgeo/seek.h).
 *
 * Why it works: a read completes when the end of its block passes under the head, so its
 * completion time modulo T is the block's phase, whatever the head did before. The block one
 * below a block just read has that phase minus one block's media time (the "drift"), which the
 * rotation step measured. Knowing the target's phase, a submission at s completes at the first
 * time >= s + K with that phase; submitting so that s + t has the phase makes the access t when
 * K <= t and t + T otherwise: one bit about K per read, a bisection instead of the 1/(n+1)
 * excess of a minimum over n random phases (Worthington, Ganger, Patt & Wilkes 1995 place
 * requests by rotational phase the same way).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seek_priv.h"
#include "util.h"

uint64_t seek_ctx_used_ns(const struct seek_ctx *s)
{
	return dg_engine_device_time_ns(s->e) - s->dt0_ns;
}

bool seek_ctx_stopping(struct seek_ctx *s)
{
	if ((s->stop && *s->stop) || s->failing)
		s->stopped = true;
	return s->stopped;
}

uint64_t seek_rand(struct seek_ctx *s)
{
	return dg_splitmix64(&s->rng);
}

double seek_rand01(struct seek_ctx *s)
{
	return (double)(seek_rand(s) >> 11) * 0x1.0p-53;
}

int seek_read(struct seek_ctx *s, uint64_t offset, uint64_t at_ns, struct dg_completion *c,
	      bool *failed)
{
	struct dg_io io = {
	    .offset_bytes = offset, .length_bytes = s->block_bytes, .op = DG_IO_READ};
	int rc;

	*failed = false;
	if (seek_ctx_stopping(s))
		return -ECANCELED;
	if (at_ns && at_ns > dg_engine_now_ns(s->e)) {
		rc = dg_engine_idle_until(s->e, at_ns);
		if (rc == -EINTR && seek_ctx_stopping(s))
			return -ECANCELED;
	}
	s->last_offset = offset;
	rc = dg_engine_submit(s->e, &io, 1);
	if (rc < 0)
		return rc;
	if (rc != 1)
		return -EBUSY;
	do {
		rc = dg_engine_reap(s->e, c, 1, 1);
	} while (rc == -EINTR || rc == 0);
	if (rc == -ECANCELED && seek_ctx_stopping(s))
		return rc; /* stopped while the device did not answer; the read stays in flight */
	if (rc < 0)
		return rc;
	if (c->result != (int64_t)s->block_bytes) {
		int err = c->result < 0 ? (int)-c->result : EIO;
		if (++s->failed_in_a_row >= SEEK_MAX_FAILED_IN_A_ROW)
			s->failing = true;
		*failed = true;
		rc = dg_errors_add(s->errors, offset, s->block_bytes, err);
		return rc < 0 ? rc : 0;
	}
	s->failed_in_a_row = 0;
	return 0;
}

void kint_init(struct kint *k)
{
	k->lo = -INFINITY;
	k->hi = INFINITY;
	k->sum = 0.0;
	k->n = 0;
}

void kint_add(struct kint *k, double a_ms, double period_ms)
{
	k->n++;
	k->sum += a_ms;
	if (period_ms <= 0)
		return;
	if (a_ms - period_ms > k->lo)
		k->lo = a_ms - period_ms;
	if (a_ms < k->hi)
		k->hi = a_ms;
}

double kint_threshold(const struct kint *k)
{
	return (k->lo + k->hi) / 2;
}

double kint_estimate(const struct kint *k, double period_ms)
{
	if (k->n == 0)
		return NAN;
	if (period_ms <= 0)
		return k->sum / k->n;
	return (k->lo + k->hi) / 2;
}

/*
 * The places of a pair and what the drive may hold of them. A drive keeps what passed under
 * the head: the sectors of a target's track that passed while it waited for the target
 * (look-behind) and what it read past the target until the next command took the head away
 * (read-ahead; Schindler & Ganger 2000 test for both). A read inside such a range is a cache hit
 * and says nothing, so each side remembers its dirty ranges and never aims into one:
 *   - the measured side (`second`) walks forward from its start, just past the read-ahead that
 *     the next command (the positioning read, sent at once) left it; its blocks stay on one track
 *     mostly, so their phases follow from the last one read (a block's media time apart);
 *   - the positioning side (`first`) aims at the measured block + the pair's distance, moved out
 *     of its own dirty ranges; its phase is never used, it only has to be read from the media.
 * A measured read whose completion is off the predicted phase went to another track (a skew
 * away): its phase is learnt, its time not used.
 */
#define DIRTY_MAX 48u
/* room the measured side may walk up through in one pair */
#define WALK_ROOM_BYTES (64ull << 20)

struct range {
	uint64_t lo, hi; /* [lo, hi) bytes */
};

struct side {
	uint64_t next;		      /* offset of its next read */
	uint64_t ref_off;	      /* the block last read from the media here (measured side) */
	uint64_t ref_ns;	      /* its completion: its end's phase */
	bool known;		      /* ref_* hold */
	uint64_t last_off, last_c_ns; /* the last read here: its read-ahead runs until the next
					 command */
	bool open;		      /* that read-ahead is not yet bounded */
	double drift_ns;	      /* a block's media time here (the zone's, learnt) */
	int dir;		      /* +1: walks up, -1: down (at the device's top end) */
};

/* What the drive may hold (one cache for both sides: near places share tracks). */
struct dirty {
	struct range r[DIRTY_MAX];
	unsigned n, i;
};

static uint64_t blocks_for(const struct seek_ctx *s, double ms)
{
	if (!(ms > 0) || s->drift_ns <= 0)
		return 0;
	double b = ceil(ms * 1e6 / s->drift_ns);
	return b > 1e6 ? 1000000u : (uint64_t)b;
}

static void dirty_add(struct dirty *d, uint64_t lo, uint64_t hi)
{
	d->r[d->i] = (struct range){lo, hi};
	d->i = (d->i + 1) % DIRTY_MAX;
	if (d->n < DIRTY_MAX)
		d->n++;
}

/* The read-ahead of the side's last read ran from its completion until a command sent at
 * `send_ns` reached the drive: mark it (plus the overhead and a margin for the host). */
static void close_readahead(const struct seek_ctx *s, struct dirty *d, struct side *sd,
			    uint64_t send_ns)
{
	if (!sd->open || !s->rotating)
		return;
	double ms =
	    (double)(send_ns > sd->last_c_ns ? send_ns - sd->last_c_ns : 0) / 1e6 + s->hit_ms + 0.3;
	uint64_t end = sd->last_off + (blocks_for(s, ms) + 2) * s->block_bytes;
	dirty_add(d, sd->last_off, end);
	sd->open = false;
}

/* The first block at or above `want` (direction +1) or at or below it (-1) outside the dirty
 * ranges. */
static uint64_t clean_from(const struct seek_ctx *s, const struct dirty *d, uint64_t want, int dir)
{
	for (unsigned pass = 0; pass < DIRTY_MAX + 1; pass++) {
		bool moved = false;
		for (unsigned i = 0; i < d->n; i++) {
			const struct range *r = &d->r[i];
			if (want < r->lo || want >= r->hi)
				continue;
			if (dir > 0)
				want = r->hi;
			else
				want = r->lo >= s->block_bytes ? r->lo - s->block_bytes : 0;
			moved = true;
		}
		if (!moved)
			break;
	}
	return want - want % s->block_bytes;
}

/* The nearest clean block to `want`, either way. */
static uint64_t clean_near(const struct seek_ctx *s, const struct dirty *d, uint64_t want)
{
	uint64_t up = clean_from(s, d, want, 1), down = clean_from(s, d, want, -1);

	return up - want <= want - down ? up : down;
}

/* The predicted completion (ns, modulo T) of the block at sd->next: on the reference's track,
 * its end passes one block's media time later for every block above the reference. */
static double phase_of_next(const struct seek_ctx *s, const struct side *sd)
{
	double blocks = ((double)sd->next - (double)sd->ref_off) / s->block_bytes;

	return (double)sd->ref_ns + blocks * sd->drift_ns;
}

/* The submission time that makes the head arrive with the target's phase if K = t_ms. */
static uint64_t submit_at(const struct seek_ctx *s, const struct side *sd, double t_ms)
{
	uint64_t now = dg_engine_now_ns(s->e);
	double r = fmod(phase_of_next(s, sd) - (double)now - t_ms * 1e6, s->period_ns);

	if (r < 0)
		r += s->period_ns;
	if (!(r >= 0 && r < s->period_ns)) /* no period known (NAN): no delay, never a wild cast */
		r = 0;
	return now + (uint64_t)llround(r);
}

/* How far (ns) a completion at c_ns is from the predicted phase, folded into (-T/2, T/2]. */
static double phase_error_ns(const struct seek_ctx *s, double pred_ns, uint64_t c_ns)
{
	double T = s->period_ns, e = fmod((double)c_ns - pred_ns, T);

	if (e > T / 2)
		e -= T;
	if (e <= -T / 2)
		e += T;
	return e;
}

/* A completion this far from the predicted phase is on the same track; a track or head change
 * shifts it by a skew (a head switch's worth or more). */
#define PHASE_TOL_NS 150000.0

enum leg_kind { LEG_MEDIA, LEG_OFF_TRACK, LEG_HIT, LEG_FAILED };

struct pair {
	struct seek_ctx *s;
	struct side a, b;  /* a: positioning (`first`), b: measured (`second`) */
	struct side *last; /* the side read last (its read-ahead is open) */
	struct dirty dirty;
	bool failed; /* a read failed: the pair is given up (the caller moves elsewhere) */
};

/* A media read at `target` completing at c_ns, on the side's reference track: the phase moved
 * by (blocks above the reference) x the zone's block time, which inner zones make longer than
 * the outer edge's (rotation.c's). Learns it (a read on another track gives a wrong one, which
 * the next read on this track corrects) from reads an eighth of a turn away at least: nearer,
 * the host's jitter on the two completions would swamp the few block times between them. */
static void learn_drift(const struct seek_ctx *s, struct side *sd, uint64_t target, uint64_t c_ns)
{
	if (!sd->known || target <= sd->ref_off)
		return;
	double k = (double)(target - sd->ref_off) / s->block_bytes;
	if (k * sd->drift_ns < s->period_ns / 8)
		return;
	double d = fmod((double)c_ns - (double)sd->ref_ns, s->period_ns);
	if (d < 0)
		d += s->period_ns;
	double v = d / k;
	if (k * v < 0.9 * s->period_ns && v > 0.3 * s->drift_ns && v < 3.5 * s->drift_ns)
		sd->drift_ns = v;
}

/*
 * Reads sd->next, sent at `at_ns` (0: now); pred_ns is the phase predicted for it (NAN: none).
 * *a_ms gets the access time, *kind what it was (see enum leg_kind): LEG_HIT when it completed
 * faster than any media access, LEG_OFF_TRACK when a prediction was made and missed, LEG_FAILED
 * (and p->failed) when the read failed. Marks what the read left in the cache. Returns
 * seek_read()'s code.
 */
static int pair_read(struct pair *p, struct side *sd, uint64_t at_ns, double pred_ns,
		     double k_lo_ms, double *a_ms, enum leg_kind *kind)
{
	struct seek_ctx *s = p->s;
	struct dg_completion c;
	uint64_t target = sd->next;

	if (p->last)
		close_readahead(s, &p->dirty, p->last, at_ns ? at_ns : dg_engine_now_ns(s->e));
	bool failed;
	int rc = seek_read(s, target, at_ns, &c, &failed);
	if (rc)
		return rc;
	if (failed) {
		*kind = LEG_FAILED;
		p->failed = true;
		return 0;
	}
	*a_ms = (double)(c.complete_ns - c.submit_ns) / 1e6;
	*kind = LEG_MEDIA;
	p->last = sd;
	sd->last_off = target;
	sd->last_c_ns = c.complete_ns;
	sd->open = true;
	if (!s->rotating) {
		dirty_add(&p->dirty, target, target + s->block_bytes);
		return 0;
	}
	double drift_ms = s->drift_ns / 1e6, T_ms = s->period_ns / 1e6;
	if (*a_ms < s->hit_ms + 0.5 * drift_ms) {
		*kind = LEG_HIT; /* the head did not move: nothing about the media */
		dirty_add(&p->dirty, target, target + s->block_bytes);
		return 0;
	}
	if (isfinite(pred_ns) && fabs(phase_error_ns(s, pred_ns, c.complete_ns)) > PHASE_TOL_NS)
		*kind = LEG_OFF_TRACK;
	else if (isfinite(pred_ns))
		learn_drift(s, sd, target, c.complete_ns);
	sd->ref_off = target;
	sd->ref_ns = c.complete_ns;
	sd->known = true;
	/* look-behind: what passed during the wait (at most a revolution) */
	double wait_ms = *a_ms - k_lo_ms;
	if (wait_ms > T_ms)
		wait_ms = T_ms;
	uint64_t back = (blocks_for(s, wait_ms) + 1) * s->block_bytes;
	dirty_add(&p->dirty, target > back ? target - back : 0, target + s->block_bytes);
	return 0;
}

/* Puts the head at the positioning side: a media read near the measured block + distance.
 * *placed is false when every try was a cache hit (this place cannot be measured) or failed. */
static int position_a(struct pair *p, int64_t dist, double k_min_ms, bool *placed)
{
	struct seek_ctx *s = p->s;
	double a;
	enum leg_kind kind;

	for (unsigned tries = 0; tries < 4; tries++) {
		int64_t want = (int64_t)p->b.next + dist;
		if (want < 0)
			want = 0;
		p->a.next = clean_near(s, &p->dirty, (uint64_t)want);
		if (p->a.next + s->block_bytes > s->capacity_bytes)
			p->a.next =
			    clean_from(s, &p->dirty, s->capacity_bytes - s->block_bytes, -1);
		int rc = pair_read(p, &p->a, 0, NAN, k_min_ms, &a, &kind);
		*placed = kind != LEG_HIT && kind != LEG_FAILED;
		if (rc || kind != LEG_HIT)
			return rc;
	}
	return 0; /* always cached: this place cannot be measured */
}

/* Moves the measured side to its next clean block above the last. */
static void advance_b(struct pair *p)
{
	struct seek_ctx *s = p->s;

	p->b.next = clean_from(s, &p->dirty, p->b.next + s->block_bytes, 1);
}

/* A side's block time, measured where it is (inner zones have longer ones than the outer edge
 * where rotation.c measured it): right after a media read at X, X + j blocks completes j block
 * times later, modulo a revolution (a stream continuation, or a wait for the platter: the phase
 * is the same), j an eighth of a turn's worth (the host's jitter on the two completions is then
 * a small part of the phase step). The read also becomes the side's reference. */
#define DRIFT_STEP 8u
static int probe_drift(struct pair *p, struct side *sd)
{
	struct seek_ctx *s = p->s;
	uint64_t ref_off = sd->ref_off, ref_ns = sd->ref_ns;
	enum leg_kind kind;
	double a;

	if (!s->rotating || !sd->known)
		return 0;
	uint64_t step = (uint64_t)(s->period_ns / 8 / sd->drift_ns);
	if (step < DRIFT_STEP)
		step = DRIFT_STEP;
	sd->next = clean_from(s, &p->dirty, ref_off + step * s->block_bytes, 1);
	if (sd->next + s->block_bytes > s->capacity_bytes)
		return 0;
	uint64_t target = sd->next;
	int rc = pair_read(p, sd, 0, NAN, 0, &a, &kind);
	if (rc || kind == LEG_HIT || kind == LEG_FAILED)
		return rc;
	double j = (double)(target - ref_off) / s->block_bytes;
	double d = fmod((double)sd->ref_ns - (double)ref_ns, s->period_ns);
	if (d < 0)
		d += s->period_ns;
	double v = d / j;
	if (j * v >= 0.9 * s->period_ns)
		return 0; /* more than a track away: the phase says nothing */
	if (v > 0.3 * s->drift_ns && v < 3.5 * s->drift_ns)
		sd->drift_ns = v;
	return 0;
}

/* The block of the side's reference track whose end passes the head first at or after
 * `when_ns`: the one ahead of the reference or the one a track back (a track holds T / block
 * time blocks), the nearer first, outside the dirty ranges and inside the device. Returns
 * UINT64_MAX when neither is usable. */
static uint64_t block_at_phase(const struct pair *p, const struct side *sd, double when_ns)
{
	const struct seek_ctx *s = p->s;
	double per_track = s->period_ns / sd->drift_ns;
	double j = ceil(
	    fmod(fmod(when_ns - (double)sd->ref_ns, s->period_ns) + s->period_ns, s->period_ns) /
	    sd->drift_ns);
	double cand[2] = {j, round(j - per_track)};
	if (-cand[1] < cand[0]) {
		cand[0] = cand[1];
		cand[1] = j;
	}
	for (unsigned i = 0; i < 2; i++) {
		double off = (double)sd->ref_off + cand[i] * s->block_bytes;
		if (off < 0 || off + s->block_bytes > (double)s->capacity_bytes)
			continue;
		uint64_t o = (uint64_t)off;
		if (clean_from(s, &p->dirty, o, 1) == o)
			return o;
	}
	return UINT64_MAX;
}

/*
 * Far apart (no read-ahead stream joins the two places), every read is a measured leg, sent at
 * once: the phase is chosen by choosing the block, not by waiting (a wait would let the drive
 * read ahead at the other place and fill the cache there). A side with no usable block on its
 * track reads the next track unaimed and learns its phase; its access still bounds K.
 */
static int both_ways(struct pair *p, const struct pair_req *r, struct kint *k, unsigned max_legs)
{
	struct seek_ctx *s = p->s;
	double T = s->period_ns / 1e6;
	struct side *m;
	unsigned reads = 0;
	enum leg_kind kind;
	double a;
	int rc;

	/* each side's block time: b's at once (a stream), a's with a read that crosses the pair */
	rc = probe_drift(p, &p->b);
	if (rc == 0 && !p->failed)
		rc = probe_drift(p, &p->a);
	if (rc || p->failed)
		return rc;
	unsigned aimed = 0; /* legs that completed at the phase they were aimed at */
	while (reads < 2 * max_legs + 2) {
		m = p->last == &p->a ? &p->b : &p->a; /* the side the head is not at */
		if (aimed >= max_legs || k->hi - k->lo <= r->width_ms || k->lo > k->hi)
			break;
		double t = kint_threshold(k);
		if (t < r->k_min_ms) {
			k->lo = t; /* a known miss: the cut costs no read */
			continue;
		}
		double now = (double)dg_engine_now_ns(s->e), pred = NAN;
		uint64_t o = m->known ? block_at_phase(p, m, now + t * 1e6) : UINT64_MAX;
		if (o != UINT64_MAX) {
			m->next = o;
			pred = phase_of_next(s, m);
		} else {
			/* the next track up (down at the device's top end) */
			uint64_t from = m->known ? m->ref_off : m->next;
			uint64_t track = (uint64_t)(s->period_ns / m->drift_ns) * s->block_bytes;
			if (from + 2 * track + s->block_bytes <= s->capacity_bytes)
				m->next = clean_from(s, &p->dirty, from + track, 1);
			else if (from > 2 * track)
				m->next = clean_from(s, &p->dirty, from - track, -1);
			else
				break;
			if (m->next + s->block_bytes > s->capacity_bytes)
				break;
		}
		double k_lo = isfinite(k->lo) && k->lo > r->k_min_ms ? k->lo : r->k_min_ms;
		rc = pair_read(p, m, 0, pred, k_lo, &a, &kind);
		reads++;
		if (rc || kind == LEG_FAILED)
			return rc;
		if (kind == LEG_HIT)
			continue;
		/* the head moved across the pair: every media read bounds K; one off its aimed
		 * phase (another track) cut at a threshold of chance, so it does not count as a leg
		 */
		kint_add(k, a, T);
		aimed += kind == LEG_MEDIA;
	}
	return 0;
}

int seek_pair_measure(struct seek_ctx *s, const struct pair_req *r, struct pair_out *out)
{
	/* the measured side walks up: at the top end the sides change roles (the move is the
	 * same either way) */
	bool swap = r->second > s->capacity_bytes - WALK_ROOM_BYTES && r->first < r->second;
	struct pair p = {.s = s,
			 .a = {.next = swap ? r->second : r->first, .drift_ns = s->drift_ns},
			 .b = {.next = swap ? r->first : r->second, .drift_ns = s->drift_ns}};
	double T = s->rotating ? s->period_ns / 1e6 : 0.0;
	unsigned max_legs = r->max_legs < SEEK_MAX_LEGS ? r->max_legs : SEEK_MAX_LEGS;
	int64_t dist = (int64_t)p.a.next - (int64_t)p.b.next;
	p.a.dir = p.a.next + WALK_ROOM_BYTES > s->capacity_bytes ? -1 : 1;
	p.b.dir = p.b.next + WALK_ROOM_BYTES > s->capacity_bytes ? -1 : 1;
	unsigned reads = 0;
	enum leg_kind kind;
	struct kint k;
	double a;
	int rc;

	memset(out, 0, sizeof(*out));
	out->k_ms = out->access_ms = out->width_ms = NAN;
	kint_init(&k);
	if (max_legs == 0)
		max_legs = 1;
	rc = pair_read(&p, &p.a, 0, NAN, r->k_min_ms, &a, &kind);
	/* the first measured leg goes without delay: the plain access time */
	if (rc == 0 && !p.failed)
		rc = pair_read(&p, &p.b, 0, NAN, r->k_min_ms, &a, &kind);
	out->failed = p.failed;
	if (rc || p.failed || kind == LEG_HIT)
		return rc;
	out->access_ms = a;
	kint_add(&k, a, T);
	if (T > 0 && r->fwd_measured) {
		rc = both_ways(&p, r, &k, max_legs);
		out->failed = p.failed;
		if (rc || p.failed)
			return rc;
		goto done;
	}
	rc = probe_drift(&p, &p.b);
	out->failed = p.failed;
	if (rc || p.failed)
		return rc;
	/* reads that told nothing (hits, other tracks) may cost as many again as the legs */
	while (reads < 2 * max_legs + 2) {
		if (k.n >= max_legs || (T > 0 && (k.hi - k.lo <= r->width_ms || k.lo > k.hi)))
			break;
		double t = kint_threshold(&k);
		if (T > 0 && t < r->k_min_ms) {
			k.lo = t; /* a known miss: the cut costs no read */
			continue;
		}
		advance_b(&p);
		if (p.b.next + s->block_bytes > s->capacity_bytes)
			break;
		bool placed;
		rc = position_a(&p, dist, r->k_min_ms, &placed);
		reads++;
		out->failed = p.failed;
		if (rc || !placed)
			return rc;
		/* the measured side's read-ahead ended when the positioning read was sent */
		advance_b(&p);
		bool ctl = T > 0 && p.b.known;
		double pred = ctl ? phase_of_next(s, &p.b) : NAN;
		uint64_t at = ctl ? submit_at(s, &p.b, t) : 0;
		double k_lo = isfinite(k.lo) && k.lo > r->k_min_ms ? k.lo : r->k_min_ms;
		rc = pair_read(&p, &p.b, at, pred, k_lo, &a, &kind);
		reads++;
		out->failed = p.failed;
		if (rc || p.failed)
			return rc;
		if (kind != LEG_MEDIA)
			continue; /* the phase is learnt now; the next leg is controlled */
		kint_add(&k, a, T);
	}
done:
	out->legs = k.n;
	/* every access carries the host's jitter on top of the drive's time */
	out->k_ms = kint_estimate(&k, T) - s->jitter_ms;
	out->width_ms = T > 0 ? k.hi - k.lo : 0.0;
	/* Legs disagree by a little (the read-ahead moved the head a track, transfer times differ
	 * between zones); a contradiction larger than that is noise or a slow sector. */
	out->ok = !(T > 0 && k.lo > k.hi + 0.25);
	if (T > 0 && out->width_ms < 0)
		out->width_ms = 0;
	return 0;
}
