/* SPDX-License-Identifier: MIT */
/*
 * Zone boundaries of a per-surface serpentine drive whose curve is left with one zone because its
 * surface levels were rejected (more surfaces, and closer, than its samples tell apart: their
 * scatter, 5-14%, hides the 2-3% zone steps). Inside a band of K cylinders head 0 walks the K
 * cylinders, then head 1 the same K, ...: a band group of every head takes one time T on a drive
 * (K x heads revolutions), and starts afresh at each zone start (drive-spec.md). So inside a zone
 * a read at x and one a band group G = T x the zone's rate later read the same surface, at the
 * same rate; a read just before a zone's start and its partner one group of that zone later read
 * the last head of two zones, apart by the zone step, and further before it two different
 * surfaces. A zone's start is where that strobe starts to match (systematic sampling with the
 * band group as its period, Cochran 1977, ch. 8); it is published only when strobes over most of a
 * group right of it all match and those just left of it do not, walked from the inner end (where
 * the steps are largest) zone by zone while they vouch and time is left. T comes from the curve
 * (the AMDF of its samples in a time coordinate, Ross et al. 1974), each zone's G in bytes from
 * one surface change found again one group later.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bandwidth_zones_priv.h"
#include "util.h"

#define STROBE_MATCH	 0.01	/* two reads of one surface agree within this (ln) */
#define PERIOD_TOL	 0.02	/* curve pairs this part of T from a multiple of it */
#define PERIOD_MULT	 4	/* ... up to this many periods apart */
#define PERIOD_STEP	 0.0025 /* periods tried: this ratio apart */
#define PERIOD_PAIRS	 12u	/* a period compared over at least this many pairs */
#define PERIOD_CLEAR	 0.5	/* the period's AMDF at most this x the median period's */
#define PERIOD_TREND	 10u	/* the time coordinate's rate: this many samples each way */
#define EDGE_STEP	 32.0	/* zone starts bisected to G / this, ... */
#define EDGE_FIND	 32.0	/* surface changes looked for in steps of G / this */
#define ZONE_TOL	 0.006	/* ... or this part of the zone when less */
#define EDGE_SCAN	 3	/* ... one group later, this many steps each way */
#define WALK_FROM	 2.0	/* a zone's strobes start this many groups before its end */
#define GROUP_AT	 2.3	/* ... and its group is measured this many before it */
#define VOUCH_LEFT	 2u	/* strobes left of it that must not */
#define STROBE_MAX_ZONES 64u	/* zone starts looked for, at most */
/* The next zone start is looked for first this part of the last zone's length about where the
 * last two zones' lengths put it (zones' lengths change slowly from one to the next). */
#define PRED_REACH  0.015
#define STROBE_SEEN 16u	  /* reads remembered */
#define G_SLACK	    0.008 /* a strobe that does not match is tried this part of g either side */

struct strobe {
	struct ctx *c;
	uint64_t span;	      /* bytes of one strobe read: the curve's samples' (shorter ones
			       * read the head switches inside them: 2% off, not 0.2%) */
	uint64_t deadline_ns; /* device time */
	unsigned reads;
	/* the last reads, by offset: a vouch's first strobes are the bisection's last match */
	uint64_t seen_at[STROBE_SEEN];
	double seen_y[STROBE_SEEN];
	unsigned nseen;
	int failed; /* vouched(): the strobe that failed (right ones first), -1 none */
};

static bool strobe_done(const struct strobe *s)
{
	return bw_stopped(s->c) || dg_engine_device_time_ns(s->c->e) >= s->deadline_ns;
}

/* One strobe read at `at`: its ln rate into *y (NAN when it could not be read or is out of the
 * range). 0 or the engine's -errno. */
static int sread(struct strobe *s, double at, double *y)
{
	struct ctx *c = s->c;
	uint64_t first = c->p.range_start_bytes, end = c->p.range_end_bytes, off;
	struct meas m;
	int rc;

	*y = NAN;
	if (at < (double)first || at + (double)s->span > (double)end || strobe_done(s))
		return 0;
	off = (uint64_t)at;
	off -= off % c->align;
	for (unsigned k = 0; k < s->nseen && k < STROBE_SEEN; k++)
		if (s->seen_at[k] == off) {
			*y = s->seen_y[k];
			return 0;
		}
	rc = bw_measure(c, off, s->span, &m);
	s->reads++;
	if (!rc && m.ok && m.mb_per_s > 0)
		*y = log(m.mb_per_s);
	if (!rc && !isnan(*y)) {
		s->seen_at[s->nseen % STROBE_SEEN] = off;
		s->seen_y[s->nseen++ % STROBE_SEEN] = *y;
	}
	return rc;
}

/* The strobe at x: 1 when the reads at x and x + g agree, 0 when they do not, -1 when either
 * failed. */
static int strobe(struct strobe *s, double x, double g, bool slack, int *match)
{
	double a, b;
	int rc = sread(s, x, &a);

	*match = -1;
	if (!rc && !isnan(a))
		rc = sread(s, x + g, &b);
	if (!rc && !isnan(a) && !isnan(b))
		*match = fabs(a - b) < STROBE_MATCH;
	/* g is known to a fraction of a percent: x + g may have crossed into the next surface
	 * where x is near one's end, and a little less or more does not */
	for (int k = -1; slack && !rc && *match == 0 && k <= 1; k += 2) {
		double c;

		rc = sread(s, x + g * (1 + k * G_SLACK), &c);
		if (!rc && !isnan(c) && fabs(a - c) < STROBE_MATCH)
			*match = 1;
	}
	return rc;
}

/* The band group's time in the curve's time coordinate (bytes over a running mean of the rates):
 * the lag whose sample pairs read most alike, the smallest of those about as good (a multiple of
 * the period is as good as the period); 0 when none stands out. */
static double curve_period(const struct curve *cv)
{
	size_t n = 0, nt = 0, m = cv->n ? cv->n : 1;
	double *tau = malloc(m * sizeof(*tau)), *y = malloc(m * sizeof(*y));
	double *rate = malloc(m * sizeof(*rate)), *d = NULL, best = INFINITY, med, out = 0;
	double lo, hi, *gaps = NULL;

	if (!tau || !y || !rate)
		goto done;
	for (size_t i = 0; i < cv->n; i++) {
		const struct dg_bandwidth_sample *v = &cv->v[i];

		if (v->refine || !(v->mb_per_s > 0))
			continue;
		tau[n] = (double)v->offset_bytes + (double)v->length_bytes / 2;
		rate[n] = v->mb_per_s;
		y[n++] = log(v->mb_per_s);
	}
	if (n < 8 * PERIOD_TREND)
		goto done;
	/* tau: seconds at the running mean rate, so that one period is one lag everywhere */
	for (size_t i = n; i-- > 1;) {
		size_t a = i > PERIOD_TREND ? i - PERIOD_TREND : 0;
		size_t b = i + PERIOD_TREND + 1 < n ? i + PERIOD_TREND + 1 : n;
		double sum = 0;

		for (size_t j = a; j < b; j++)
			sum += rate[j];
		tau[i] = (tau[i] - tau[i - 1]) / (sum / (double)(b - a) * 1e6);
	}
	tau[0] = 0;
	for (size_t i = 1; i < n; i++)
		tau[i] += tau[i - 1];
	gaps = malloc(n * sizeof(*gaps));
	if (!gaps)
		goto done;
	for (size_t i = 1; i < n; i++)
		gaps[i - 1] = tau[i] - tau[i - 1];
	lo = dg_median(gaps, n - 1); /* shorter lags pair neighbours: no period shows there */
	hi = tau[n - 1] / (2 * PERIOD_MULT);
	if (!(hi > lo))
		goto done;
	d = malloc((size_t)(log(hi / lo) / log1p(PERIOD_STEP) + 2) * 2 * sizeof(*d));
	if (!d)
		goto done;
	for (double T = lo; T <= hi; T *= 1 + PERIOD_STEP) {
		double sum = 0, tol = PERIOD_TOL * T;
		size_t pairs = 0;

		for (size_t i = 0; i < n; i++)
			for (size_t j = i + 1; j < n && tau[j] - tau[i] <= PERIOD_MULT * T + tol;
			     j++) {
				double k = round((tau[j] - tau[i]) / T);

				if (k >= 1 && fabs(tau[j] - tau[i] - k * T) < tol) {
					sum += fabs(y[j] - y[i]);
					pairs++;
				}
			}
		d[nt++] = pairs >= PERIOD_PAIRS ? sum / (double)pairs : NAN;
		if (d[nt - 1] < best)
			best = d[nt - 1];
	}
	m = 0;
	for (size_t k = 0; k < nt; k++)
		if (!isnan(d[k]))
			d[nt + m++] = d[k];
	if (m < 16)
		goto done;
	med = dg_median(d + nt, m);
	if (!(best <= PERIOD_CLEAR * med))
		goto done;
	for (size_t k = 0; k < nt; k++)
		if (d[k] <= best + (med - best) * 0.1) {
			out = lo * pow(1 + PERIOD_STEP, (double)k);
			break;
		}
done:
	free(tau);
	free(y);
	free(rate);
	free(gaps);
	free(d);
	return out;
}

/* Which of two rates y reads: 0 (ya), 1 (yb), -1 neither. */
static int side(double y, double ya, double yb)
{
	double da = fabs(y - ya), db = fabs(y - yb);

	if (isnan(y) || (da >= STROBE_MATCH && db >= STROBE_MATCH))
		return -1;
	return da <= db ? 0 : 1;
}

/* The surface change between a read at lo of rate ya and one at hi of rate yb, bisected to a few
 * reads' length: into *at. 0 (*at 0 when the reads in between read neither) or -errno. */
static int change_between(struct strobe *s, double lo, double hi, double ya, double yb, double *at)
{
	*at = 0;
	while (hi - lo > (double)s->span / 2) {
		double m = lo + (hi - lo) / 2, y;
		int rc = sread(s, m, &y), k;

		if (rc)
			return rc;
		k = side(y, ya, yb);
		if (isnan(y) ||
		    (k < 0 && fabs(y - ya) + fabs(y - yb) > fabs(ya - yb) + STROBE_MATCH))
			return 0; /* neither, nor a mix of both: another surface in between */
		if (k == 0)
			lo = m;
		else
			hi = m; /* a read of yb, or one across the change */
	}
	*at = lo + (hi - lo) / 2; /* the same offset from the change each time */
	return 0;
}

/* The band group's length in bytes at x0 (g0 a guess within a few percent): a surface change
 * after x0, and the same change (the same rates either side) one group later. *g 0 when they are
 * not found. 0 or -errno. */
static int group_at(struct strobe *s, double x0, double g0, double *g)
{
	double step = g0 / EDGE_FIND, y0, y1 = NAN, e1 = 0, e2 = 0, ys[2 * EDGE_SCAN + 1];
	int rc = sread(s, x0, &y0), k = 1, cls[2 * EDGE_SCAN + 1];

	*g = 0;
	if (rc || isnan(y0))
		return rc;
	for (; k <= (int)EDGE_FIND / 2 && !rc; k++) {
		rc = sread(s, x0 + k * step, &y1);
		if (isnan(y1))
			return rc;
		if (fabs(y1 - y0) >= 2 * STROBE_MATCH) {
			double y2;

			/* a read across the change reads a mix: the next one reads what follows */
			rc = sread(s, x0 + k * step + (double)s->span, &y2);
			if (!rc && !isnan(y2) && fabs(y2 - y1) >= STROBE_MATCH)
				y1 = y2;
			break;
		}
		if (fabs(y1 - y0) >= STROBE_MATCH)
			return rc; /* a change too small to find again */
	}
	if (rc || k > (int)EDGE_FIND / 2)
		return rc;
	rc = change_between(s, x0 + (k - 1) * step, x0 + k * step, y0, y1, &e1);
	if (rc || e1 == 0)
		return rc;
	/* the same change one group later: reads outward from the guess until one of y0 is next
	 * to one of y1 */
	for (int j = 0; j <= 2 * EDGE_SCAN; j++)
		cls[j] = -2;
	for (int t = 0; t <= 2 * EDGE_SCAN && !rc && e2 == 0; t++) {
		int j = EDGE_SCAN + (t % 2 ? (t + 1) / 2 : -(t / 2));

		rc = sread(s, e1 + g0 + (j - EDGE_SCAN) * step - (double)s->span / 2, &ys[j]);
		cls[j] = side(ys[j], y0, y1);
		for (int i = 0; i < 2 * EDGE_SCAN && !rc; i++)
			if (cls[i] == 0 && cls[i + 1] == 1) {
				double base = e1 + g0 - (double)s->span / 2;

				rc = change_between(s, base + (i - EDGE_SCAN) * step,
						    base + (i + 1 - EDGE_SCAN) * step, y0, y1, &e2);
				if (!rc && e2 == 0)
					return 0;
				break;
			}
	}
	if (!rc && e2 > 0 && fabs((e2 - e1) / g0 - 1) < (EDGE_SCAN + 1) / EDGE_FIND)
		*g = e2 - e1;
	return rc;
}

/* The strobes right of a zone start that vouch for it: at these parts of a group after the
 * bisection's target (most surfaces). */
static const double vouch_right[] = {0, 0.125, 0.25, 0.45, 0.7};

/* Whether the zone start `at` is vouched for: the strobes over most of a group right of it (most
 * surfaces; the first at `right`, within the target right of it) match, those just before it do
 * not. */
static int vouched(struct strobe *s, double at, double g, double target, double right, bool *ok)
{
	int rc = 0, a;

	*ok = false;
	s->failed = -1;
	for (unsigned k = 0; k < ARRAY_SIZE(vouch_right); k++) {
		rc = strobe(s, right + vouch_right[k] * g, g, true, &a);
		s->failed = (int)k;
		if (rc || a != 1)
			return rc;
	}
	for (unsigned k = 0; k < VOUCH_LEFT; k++) {
		rc = strobe(s, at - target - k * target - (double)s->span, g, false, &a);
		s->failed = (int)(ARRAY_SIZE(vouch_right) + k);
		if (rc || a != 0)
			return rc;
	}
	s->failed = -1;
	*ok = true;
	return 0;
}

/* The start of the zone that ends at `end` with band group g: `pred` itself when it vouches
 * (reach PRED_REACH: the zones' lengths predicted it well before), else a bracket of `reach` of
 * the zone about it when its ends' strobes differ as they must, else strobes from WALK_FROM
 * groups before the end outward, a group apart, until one does not match; bisected to the lesser
 * of g / EDGE_STEP and ZONE_TOL of the zone, and vouched. *start 0 when none is vouched for. 0 or
 * -errno. */
static int zone_start(struct strobe *s, double end, double g, double pred, double reach,
		      double *start)
{
	double first = (double)s->c->p.range_start_bytes, x, hi = 0, lo = 0, at;
	double target = fmin(g / EDGE_STEP, ZONE_TOL * (end - pred));
	double w = fmax(reach * (end - pred), 2 * target);
	int rc = 0, a = -1, b = -1;
	bool ok;

	*start = 0;
	if (pred > first + w && pred + w < end - WALK_FROM * g) {
		double left = pred - w, right = pred + w;
		bool lo_known = false, hi_known = false;

		if (reach <= PRED_REACH) {
			/* where the zones' lengths change smoothly the prediction may be the
			 * start; if not, the strobe that failed tells on which side it lies */
			rc = vouched(s, pred, g, target, pred + target, &ok);
			if (rc || ok) {
				*start = ok ? pred : 0;
				return rc;
			}
			lo_known = s->failed == 0;
			hi_known = s->failed == (int)ARRAY_SIZE(vouch_right);
			left = lo_known ? pred + target : left;
			right = hi_known ? pred - target - (double)s->span : right;
		}
		a = 1;
		if (!hi_known)
			rc = strobe(s, right, g, false, &a);
		b = lo_known ? 0 : -1;
		if (!rc && a == 1 && !lo_known) {
			rc = strobe(s, left, g, false, &b);
			/* a match there may be two surfaces that read alike: a quarter group on */
			if (!rc && b == 1) {
				left -= g / 4;
				rc = strobe(s, left, g, false, &b);
			}
		}
		if (rc)
			return rc;
		if (a == 1 && b == 0) {
			lo = left;
			hi = right;
		}
	}
	for (x = end - WALK_FROM * g; hi == 0 || lo == 0; x -= g) {
		if (x < first)
			return 0;
		rc = strobe(s, x, g, false, &a);
		if (rc || a < 0)
			return rc;
		if (a == 1) {
			hi = x;
			continue;
		}
		if (hi == 0)
			return 0; /* no strobe matched: the zone is shorter than its walk */
		lo = x;
	}
	if (pred == 0)
		target = fmin(g / EDGE_STEP, ZONE_TOL * (end - hi));
	while (hi - lo > target) {
		double m = lo + (hi - lo) / 2;

		rc = strobe(s, m, g, false, &a);
		/* a match an eighth of a group on too (another surface): two surfaces of the
		 * zone before that read like their partners of this zone's group are rare */
		if (!rc && a == 1)
			rc = strobe(s, m + g / 8, g, false, &a);
		if (rc || a < 0)
			return rc;
		if (a)
			hi = m;
		else
			lo = m;
	}
	at = lo + (hi - lo) / 2;
	/* the bisection's last match (and its confirmation an eighth of a group on) is right of
	 * the start by at most half the target: the first right strobes */
	rc = vouched(s, at, g, target, hi, &ok);
	if (!rc && ok)
		*start = at;
	return rc;
}

static int cmp_desc(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a < b) - (a > b);
}

/* cv's segments and boundaries from the zone starts found (n of them, descending). */
static int take(struct curve *cv, const double *starts, size_t n)
{
	struct boundary *bs = calloc(n, sizeof(*bs));

	if (!bs)
		return -ENOMEM;
	free(cv->bs);
	cv->bs = bs;
	cv->capb = cv->nb = n;
	cv->nseg = n + 1;
	for (size_t k = 0; k < n; k++) {
		struct boundary *b = &cv->bs[k];

		b->lo = b->hi = (uint64_t)starts[n - 1 - k];
		b->placed = true;
	}
	bw_curve_ends(cv);
	return 0;
}

int bw_strobe_zones(struct ctx *c, struct dg_bandwidth_result *r, struct curve *cv)
{
	struct strobe s = {.c = c, .span = c->p.sample_bytes};
	double T, rate = 0, end = (double)c->p.range_end_bytes, g, starts[STROBE_MAX_ZONES];
	size_t n = 0, k = 0;
	double pred = 0, gprev = 0;
	bool half = false; /* the curve's period is half the group */
	int rc = 0;

	if (!cv->L.rejected || cv->nb > 0 || !c->p.refine || !r->complete || cv->n == 0)
		return 0;
	s.deadline_ns = c->dev0_ns + (uint64_t)(REFINE_TOTAL * (double)c->p.time_budget_ns);
	if (strobe_done(&s) || !((T = curve_period(cv)) > 0))
		return 0;
	/* the group at the inner end: T at the rate of the last curve samples */
	for (size_t i = cv->n; i-- > 0 && k < 2 * PERIOD_TREND + 1;)
		if (!cv->v[i].refine && cv->v[i].mb_per_s > 0) {
			rate += 1 / cv->v[i].mb_per_s;
			k++;
		}
	g = T * (double)k / rate * 1e6;
	c->phase = "zones";
	while (n < STROBE_MAX_ZONES && !strobe_done(&s)) {
		double gz = 0, at = 0, reach = n >= 2 ? PRED_REACH : 4 * PRED_REACH;

		/* the next zone's group from the last two (one T, rates changing slowly: 0.1% off
		 * on zoo 55), measured when its start does not vouch with that */
		if (n >= 2) {
			gz = g * g / gprev;
			rc = zone_start(&s, end, gz, pred, reach, &at);
			if (rc)
				break;
		}
		/* each zone's own group (the curve's period may be half of it: its AMDF); a strobe
		 * one period long that does not match tells which to measure first */
		if (n == 0 && at == 0) {
			int a;

			rc = strobe(&s, end - GROUP_AT * g, g, true, &a);
			if (rc)
				break;
			half = a == 0;
		}
		for (unsigned t = 0; at == 0 && t <= (n ? 0u : 1u); t++) {
			unsigned mult = n ? 1u : 1u + (t ^ (unsigned)half);

			rc = group_at(&s, end - GROUP_AT * g * mult, g * mult, &gz);
			if (rc || gz > 0)
				break;
		}
		if (!rc && at == 0 && gz > 0)
			rc = zone_start(&s, end, gz, pred, n >= 2 ? 2 * reach : reach, &at);
		if (rc || at == 0)
			break;
		starts[n++] = at;
		/* the first zone ends at the range's end: its length counts like the others' */
		pred = n >= 2 ? at - (starts[n - 2] - at) * (starts[n - 2] - at) /
					 (n >= 3 ? starts[n - 3] - starts[n - 2]
						 : (double)c->p.range_end_bytes - starts[0])
			      : 2 * at - (double)c->p.range_end_bytes;
		end = at;
		gprev = g;
		g = gz;
	}
	if (rc || n == 0)
		return rc;
	qsort(starts, n, sizeof(*starts), cmp_desc);
	r->flat_reason[0] = '\0';
	return take(cv, starts, n);
}
