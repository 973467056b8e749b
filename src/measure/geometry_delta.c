/* SPDX-License-Identifier: MIT */
/*
 * The phase delta and the skew of the geometry measurement (see include/diskgeo/geometry.h):
 * two sectors probed in turn, each from its earliest probe (Wong 2019: angular position by
 * completion time modulo the period; a late host only delays a completion), read against one
 * line of the reference's fit whose slope is the period of every place's fit. A skew is the
 * phase jump into a track's first sector (Wong 2019: a read across a track boundary costs the
 * skew), in sectors.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "geometry_priv.h"

/* The phase of a probe that completed at cx_ns, `rev` revolutions of the reference's fit on,
 * against the fit's line now, its slope the period of every place's fit: a place's fit alone
 * (a few hundred points) errs by 50-200 ns a turn where the host's jitter is 50 us, and the
 * earliest probes of a delta's two sectors lie tens of turns apart: a sector or two. */
static double phase_pooled(const struct geo *g, double cx_ns, int64_t rev)
{
	double T = g->T0_ns + g->fpd, tf = g->fpa + (double)rev * T,
	       ph = fmod((cx_ns - tf) / T, 1.0);

	return ph < 0 ? ph + 1 : ph;
}

/* Probes of two sectors in turn (geo_phase_delta): each probe's completion and the reference's
 * revolution it counted from, and its phase as probed. */
struct geo_pairs {
	double cx[GEO_DELTA_MAX], cy[GEO_DELTA_MAX], va[GEO_DELTA_MAX], vb[GEO_DELTA_MAX];
	int64_t rx[GEO_DELTA_MAX], ry[GEO_DELTA_MAX];
	unsigned n;
};

/* Probes x and y in turn until p holds n pairs. Returns as geo_phase. */
static int probe_pairs(struct geo *g, uint64_t x, uint64_t y, unsigned n, struct geo_pairs *p)
{
	unsigned tries = 0, want = n - p->n;
	double wa = NAN, wb = NAN; /* the phases expected: the earliest so far */
	int rc;

	for (unsigned i = 0; i < p->n; i++) {
		wa = geo_earliest(wa, p->va[i]);
		wb = geo_earliest(wb, p->vb[i]);
	}
	while (p->n < n) {
		unsigned i = p->n;
		if (++tries > 2 * want + 2)
			return geo_fail(g, "the probes there were unusable (cache hits or failed "
					   "reads)");
		rc = geo_probe_once(g, x, wa, &p->va[i]);
		p->cx[i] = g->last_cx_ns;
		p->rx[i] = g->last_rev;
		if (!rc)
			rc = geo_probe_once(g, y, wb, &p->vb[i]);
		p->cy[i] = g->last_cx_ns;
		p->ry[i] = g->last_rev;
		g->bad += rc == 1;
		if (rc == 1)
			continue;
		if (rc)
			return rc;
		wa = geo_earliest(wa, p->va[i]);
		wb = geo_earliest(wb, p->vb[i]);
		p->n++;
	}
	return 0;
}

/* The pairs' phases against the fit's line now (as probed while the fit is too young) into va
 * and vb; returns the host's mean delay of one probe, from the phases above their earliest
 * (the median of an exponential delay is its mean times ln 2), in rev. */
static double pairs_read(const struct geo *g, const struct geo_pairs *p, double *va, double *vb)
{
	double e[2 * GEO_DELTA_MAX];

	for (unsigned i = 0; i < p->n; i++) {
		va[i] = g->fn >= 8 ? phase_pooled(g, p->cx[i], p->rx[i]) : p->va[i];
		vb[i] = g->fn >= 8 ? phase_pooled(g, p->cy[i], p->ry[i]) : p->vb[i];
		e[i] = va[i];
		e[p->n + i] = vb[i];
	}
	for (unsigned s = 0; s < 2; s++) {
		double *v = e + s * p->n, m = geo_circ_pick(v, p->n, false);
		for (unsigned i = 0; i < p->n; i++)
			v[i] = geo_wrap(v[i] - m);
	}
	return dg_median(e, 2 * p->n) / M_LN2;
}

/* The phase of y less that of x from n pairs at least, more (GEO_DELTA_MAX at most) until the
 * earliest probes' error, the host's mean delay over the probes, is `res` rev or less (0: n
 * pairs). Returns as geo_phase. */
static int phase_delta(struct geo *g, uint64_t x, uint64_t y, unsigned n, double res, double *d)
{
	struct geo_pairs *p = malloc(sizeof(*p));
	double va[GEO_DELTA_MAX], vb[GEO_DELTA_MAX];
	int rc = p ? 0 : -ENOMEM;

	if (!rc && (x < g->lo_psec || x >= g->npsec || y < g->lo_psec || y >= g->npsec))
		rc = geo_fail(g, "a probe fell outside the range");
	if (p)
		p->n = 0;
	/* the two sectors probed in turn, each probe's phase read against the fit's line after
	 * the last one (phase_pooled; Wong 2019's phase by completion time modulo the period): the
	 * earliest probe of x and that of y fall at different probes, and a line that moved between
	 * them (a 512-point fit moves a little with each point: a sector or two over a delta's
	 * probes where the host's jitter is 20 sectors) shifts one against the other */
	while (!rc) {
		rc = probe_pairs(g, x, y, n, p);
		if (rc)
			break;
		/* the earliest of n exponential delays errs by their mean over n, the difference of
		 * two such as much each way (a Laplace spread) */
		double mean = pairs_read(g, p, va, vb), need = res > 0 ? ceil(mean / res) : 0;
		if (need <= n || n == GEO_DELTA_MAX) {
			*d = geo_wrap(geo_circ_pick(vb, n, false) - geo_circ_pick(va, n, false));
			break;
		}
		n = need < GEO_DELTA_MAX ? (unsigned)need : GEO_DELTA_MAX;
	}
	free(p);
	return rc;
}

/* Pairs of `mult` times the repeats, 64 at most. */
static unsigned pairs_of(const struct geo *g, unsigned mult)
{
	return mult * g->repeats < 64 ? mult * g->repeats : 64;
}

int geo_phase_delta(struct geo *g, uint64_t x, uint64_t y, unsigned mult, double *d)
{
	return phase_delta(g, x, y, pairs_of(g, mult), 0, d);
}

int geo_skew(struct geo *g, const struct geo_track *t, unsigned mult, double *skew)
{
	double j;

	if (t->start <= g->lo_psec)
		return geo_fail(g, "a probe fell outside the range");
	/* a skew reported is a whole number of physical sectors, right when the error is under
	 * 1.5 sectors (0.5 where a physical sector holds several logical ones): a Laplace spread
	 * of a fifth of that errs once in 150 */
	double res = mult == GEO_SKEW_FINE ? (g->u > 1 ? 0.5 : 1.5) / 5 / t->size : 0;
	int rc = phase_delta(g, t->start - 1, t->start, pairs_of(g, mult), res, &j);
	if (rc)
		return rc;
	*skew = (j + (j < 0)) * t->size - 1;
	return 0;
}
