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
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double seek_rand01(struct seek_ctx *s)
{
	return (double)(seek_rand(s) >> 11) * 0x1.0p-53;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double seek_median(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int seek_read(struct seek_ctx *s, uint64_t offset, uint64_t at_ns, struct dg_completion *c)
{
	struct dg_io io = {
	    .offset_bytes = offset, .length_bytes = s->block_bytes, .op = DG_IO_READ};
	int rc;

	if (seek_ctx_stopping(s))
		return 2;
	if (at_ns && at_ns > dg_engine_now_ns(s->e)) {
		rc = dg_engine_idle_until(s->e, at_ns);
		if (rc == -EINTR && seek_ctx_stopping(s))
			return 2;
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
		return 2; /* stopped while the device did not answer; the read stays in flight */
	if (rc < 0)
		return rc;
	if (c->result != (int64_t)s->block_bytes) {
		int err = c->result < 0 ? (int)-c->result : EIO;
		if (++s->failed_in_a_row >= SEEK_MAX_FAILED_IN_A_ROW)
			s->failing = true;
		rc = dg_errors_add(s->errors, offset, s->block_bytes, err);
		return rc < 0 ? rc : 1;
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

/* One side of a pair: where it reads next and the phase of its last completion. */
struct side {
	uint64_t next;	  /* offset of its next read */
	uint64_t last_ns; /* completion of its last read (its block's phase) */
	bool known;
};

/* The submission time that makes the head arrive with the target's phase if K = t_ms. */
static uint64_t submit_at(const struct seek_ctx *s, const struct side *sd, double t_ms)
{
	uint64_t now = dg_engine_now_ns(s->e);
	double T = s->period_ns;
	double r = (double)((int64_t)sd->last_ns - (int64_t)now) - s->drift_ns - t_ms * 1e6;

	r = fmod(r, T);
	if (r < 0)
		r += T;
	if (!(r >= 0 && r < T)) /* no period known (NAN): no delay, never a wild cast */
		r = 0;
	return now + (uint64_t)llround(r);
}

/* Reads the side's next block (delayed for threshold t_ms when `controlled`); *a_ms gets the
 * access time. Returns seek_read()'s code. */
static int leg(struct seek_ctx *s, struct side *sd, bool controlled, double t_ms, double *a_ms)
{
	struct dg_completion c;
	uint64_t at = controlled && sd->known && s->rotating ? submit_at(s, sd, t_ms) : 0;
	int rc = seek_read(s, sd->next, at, &c);

	if (rc)
		return rc;
	*a_ms = (double)(c.complete_ns - c.submit_ns) / 1e6;
	sd->last_ns = c.complete_ns;
	sd->known = true;
	sd->next -= s->block_bytes;
	return 0;
}

int seek_pair_measure(struct seek_ctx *s, const struct pair_req *r, struct pair_out *out)
{
	struct side first = {.next = r->first}, second = {.next = r->second};
	double T = s->rotating ? s->period_ns / 1e6 : 0.0;
	unsigned max_legs = r->max_legs < SEEK_MAX_LEGS ? r->max_legs : SEEK_MAX_LEGS;
	struct kint k;
	double a;
	int rc;

	memset(out, 0, sizeof(*out));
	out->k_ms = out->access_ms = out->width_ms = NAN;
	kint_init(&k);
	if (max_legs == 0)
		max_legs = 1;
	rc = leg(s, &first, false, 0, &a);
	if (rc)
		return rc == 1 ? 0 : rc;
	/* the first measured leg goes without delay: the plain access time */
	rc = leg(s, &second, false, 0, &a);
	if (rc)
		return rc == 1 ? 0 : rc;
	out->access_ms = a;
	kint_add(&k, a, T);
	bool on_first = true; /* the side of the next measured leg, when both count */
	for (;;) {
		if (k.n >= max_legs || (T > 0 && (k.hi - k.lo <= r->width_ms || k.lo > k.hi)))
			break;
		double t = kint_threshold(&k);
		if (T > 0 && t < r->k_min_ms) {
			k.lo = t; /* a known miss: the cut costs no read */
			continue;
		}
		if (r->fwd_measured && on_first) {
			rc = leg(s, &first, true, t, &a);
		} else {
			if (!r->fwd_measured) {
				rc = leg(s, &first, false, 0, &a);
				if (rc)
					return rc == 1 ? 0 : rc;
			}
			rc = leg(s, &second, true, t, &a);
		}
		if (rc)
			return rc == 1 ? 0 : rc;
		on_first = !on_first;
		kint_add(&k, a, T);
	}
	out->legs = k.n;
	out->k_ms = kint_estimate(&k, T);
	out->width_ms = T > 0 ? k.hi - k.lo : 0.0;
	/* Legs disagree by a little (the read-ahead moved the head a track, transfer times differ
	 * between zones); a contradiction larger than that is noise or a slow sector. */
	out->ok = !(T > 0 && k.lo > k.hi + 0.25);
	if (T > 0 && out->width_ms < 0)
		out->width_ms = 0;
	return 0;
}
