/* SPDX-License-Identifier: MIT */
/*
 * The cylinder zone search's cheap and robust parts on drives whose surfaces have sizes of
 * their own (adaptive formatting): a new zone's cylinder sized track by track with each track's
 * end predicted from a known zone's sizes; a walked track assigned to a zone only by a pair of
 * sizes in that zone's walk order (one size is shared by zones many zones apart); probes per
 * phase set by the jump a track boundary shows rather than by one sector, never below what the
 * median noise of the search's calibrations asks for (robust statistics over many places).
 *
 * Prediction: a surface's track holds about the same share of every zone's capacity (its
 * recording quality scales the zone's size), so the sizes of a cylinder walked in a new zone are
 * a known zone's sizes, in the same cyclic walk order, times one factor. Each walk-order
 * alignment of the known zone that fits the tracks found so far (every one within PRED_TOL of
 * its scaled size) predicts the next track's end; the first tracks (every alignment fits) and a
 * zone that fits none fall back to the boundary bisection. Method: boundary bisection of
 * Wong 2019; the zone search of Gim & Won 2010 (geometry_zsearch.c).
 */
#include <math.h>
#include <string.h>

#include "util.h"

#include "geometry_zcyl.h"

#define PRED_TOL    2.0	 /* sectors: a scaled size rounds to within this of the true one */
#define PRED_MAX    3u	 /* alignments still fitting that may propose candidates */
#define SKEW_ERR    0.25 /* sectors: a zone-change skew's phase error at most */
#define SKEW_MULT   4.0	 /* geo_bound_skew()'s probes per phase, in repeats */
#define SKEW_MAX    64.0 /* geo_skew()'s most */
#define MAX_REPEATS 9u	 /* geo_calibrate()'s most */
#define JUMP_SIDE   3.0	 /* a threshold of at most a third of the smallest jump */

/* The factor that scales model m (n sizes, cyclic, starting at alignment a) onto sizes[0..k),
 * or NAN when one of them falls further than PRED_TOL from its scaled size. */
static double fit(const uint32_t *m, unsigned n, unsigned a, const uint32_t *sizes, unsigned k)
{
	double sm = 0, ss = 0;

	for (unsigned i = 0; i < k; i++) {
		sm += m[(a + i) % n];
		ss += sizes[i];
	}
	double c = ss / sm;
	if (!(c > 0.25 && c < 4)) /* zones of a drive span less than 4:1 */
		return NAN;
	for (unsigned i = 0; i < k; i++)
		if (fabs(sizes[i] - c * m[(a + i) % n]) > PRED_TOL)
			return NAN;
	return c;
}

/* Adds v to cand[0..*nc) unless there or full. */
static void cand_add(uint32_t *cand, unsigned *nc, unsigned max, uint32_t v)
{
	for (unsigned i = 0; i < *nc; i++)
		if (cand[i] == v)
			return;
	if (*nc < max)
		cand[(*nc)++] = v;
}

/* The candidates for track k (sizes[0..k) known): the scaled sizes of the alignments that fit,
 * nearest first, when at most PRED_MAX fit; none otherwise. */
static unsigned predict(const uint32_t *m, unsigned n, const uint32_t *sizes, unsigned k,
			uint32_t *cand, unsigned max)
{
	double p[DG_GEOMETRY_MAX_HEADS];
	unsigned np = 0, nc = 0;

	for (unsigned a = 0; a < n; a++) {
		double c = fit(m, n, a, sizes, k);
		if (isnan(c))
			continue;
		if (np == PRED_MAX)
			return 0;
		p[np++] = c * m[(a + k) % n];
	}
	for (int d = 0; d <= (int)PRED_TOL; d++)
		for (unsigned i = 0; i < np; i++) {
			long v = lround(p[i]);
			if (v - d > 0)
				cand_add(cand, &nc, max, (uint32_t)(v - d));
			if (d)
				cand_add(cand, &nc, max, (uint32_t)(v + d));
		}
	return nc;
}

int geo_cyl_size(struct geo *g, const uint32_t *model, unsigned n, uint64_t x, uint32_t s,
		 uint32_t *spt)
{
	uint32_t sizes[2 * DG_GEOMETRY_MAX_HEADS + 2], cand[3 * PRED_MAX * (2 * 2 + 1)];
	uint64_t b = x + s;

	if (n < 2 || n > DG_GEOMETRY_MAX_HEADS)
		return 1;
	sizes[0] = s;
	/* one cylinder and the first track of the next: its size repeats the first */
	for (unsigned k = 1; k <= n; k++) {
		unsigned nc = predict(model, n, sizes, k, cand, ARRAY_SIZE(cand));
		uint64_t e;
		int rc = geo_track_end(g, b, sizes[k - 1], cand, nc, &e);
		if (rc)
			return rc;
		sizes[k] = (uint32_t)(e - b);
		b = e;
	}
	if (sizes[n] != sizes[0])
		return 1;
	/* and the known zone's sizes, scaled, fit them all (a noisy track that the period
	 * happened to hide does not) */
	unsigned a = 0;
	while (a < n && isnan(fit(model, n, a, sizes, n)))
		a++;
	if (a == n)
		return 1;
	memcpy(spt, sizes, n * sizeof(*spt));
	return 0;
}

double geo_cyl_min_move_ms(const struct dg_geometry_result *r)
{
	double m = INFINITY;

	for (size_t i = 0; i < r->nplaces; i++) {
		const struct dg_geometry_place *p = &r->places[i];
		if (p->ok && p->hs_ms < m)
			m = p->hs_ms;
		if (p->ok && p->step_ms < m)
			m = p->step_ms;
	}
	return isfinite(m) && m > 0 ? m : NAN;
}

void geo_cyl_repeats(struct geo *g, double move_ms, uint32_t size, struct geo_cyl_noise *nz)
{
	/* the smallest jump a boundary shows: the move's share of a turn, and the sector */
	double jump = move_ms * 1e6 / g->T_ns + 1.0 / size, v[GEO_SD_KEEP];
	double here = g->noise * g->repeats / 1.5; /* one probe's spread (geo_calibrate()) */

	nz->sd[nz->n++ % GEO_SD_KEEP] = here;
	unsigned n = nz->n < GEO_SD_KEEP ? nz->n : GEO_SD_KEEP;
	memcpy(v, nz->sd, n * sizeof(*v));
	/* nine probes estimate the spread roughly: not below the median of the search's (the
	 * probes geo_calibrate() would have chosen for it) */
	double sd = fmax(here, dg_median(v, n));
	if (sd > here && g->repeats < MAX_REPEATS) {
		g->repeats = sd < 0.0015 ? 1 : sd < 0.004 ? 3 : sd < 0.008 ? 5 : MAX_REPEATS;
		g->noise = sd * 1.5 / g->repeats;
		g->thr = fmax(g->thr, 6 * g->noise);
	}
	nz->repeats = g->repeats;
	nz->noise = g->noise;
	nz->thr = g->thr;
	for (unsigned k = 1; !isnan(jump) && k < g->repeats; k++) {
		/* the earliest of k probes: the threshold (10 x the noise) below a third of
		 * the jump */
		double noise = sd * 1.5 / k, thr = fmax(g->thr, 10 * noise);
		if (thr <= jump / JUMP_SIDE) {
			g->repeats = k;
			g->noise = noise;
			g->thr = thr;
			return;
		}
	}
}

void geo_cyl_restore(struct geo *g, const struct geo_cyl_noise *nz)
{
	if (!nz->repeats)
		return;
	g->repeats = nz->repeats;
	g->noise = nz->noise;
	g->thr = nz->thr;
}

bool geo_cyl_skew_repeats(struct geo *g, const struct geo_cyl_noise *nz, uint32_t sectors)
{
	if (!nz->repeats)
		return true;
	/* the earliest of n probes errs by about the spread x 1.5 / n (geo_calibrate()): a
	 * quarter of a sector of `sectors` at most, from geo_bound_skew()'s 4 x repeats probes
	 * (64 at most) */
	double sd = nz->noise * nz->repeats / 1.5;
	double need = ceil(sd * 1.5 * sectors / SKEW_ERR / SKEW_MULT);
	if (need > SKEW_MAX / SKEW_MULT)
		return false;
	g->repeats = need > nz->repeats ? (unsigned)need : nz->repeats;
	g->noise = sd * 1.5 / g->repeats;
	g->thr = nz->thr;
	return true;
}

void geo_cyl_seq_of(const struct geo *g, const struct dg_geometry_place *p, struct geo_cyl_seq *s)
{
	s->n = p->nsurfaces < DG_GEOMETRY_MAX_HEADS ? p->nsurfaces : DG_GEOMETRY_MAX_HEADS;
	for (unsigned h = 0; h < s->n; h++)
		s->v[h] = p->spt[h] / g->u;
}

/* True when y follows x in the cyclic walk order s (one head, then the next). */
static bool follows(const struct geo_cyl_seq *s, uint32_t x, uint32_t y)
{
	for (unsigned h = 0; h < s->n; h++)
		if (s->v[h] == x && s->v[(h + 1) % s->n] == y)
			return true;
	return false;
}

/* True when t[i..i+k) are k sizes that follow each other in walk order s. */
static bool in_order(const struct geo_cyl_seq *s, const struct geo_track *t, unsigned i, unsigned k)
{
	for (unsigned j = i; j + 1 < i + k; j++)
		if (!follows(s, t[j].size, t[j + 1].size))
			return false;
	return true;
}

bool geo_cyl_of(const struct geo_cyl_seq *s, const struct geo_track *t, unsigned n, unsigned i,
		unsigned run)
{
	unsigned k = n < run ? n : run;

	if (!s->n || k < 2)
		return false;
	for (unsigned j = i + 1 >= k ? i + 1 - k : 0; j <= i && j + k <= n; j++)
		if (in_order(s, t, j, k))
			return true;
	return false;
}

/* Adds the size that follows x in walk order s (each, where x is there more than once). */
static void successors(const struct geo_cyl_seq *s, uint32_t x, uint32_t *cand, unsigned *nc,
		       unsigned max)
{
	for (unsigned h = 0; h < s->n; h++)
		if (s->v[h] == x)
			cand_add(cand, nc, max, s->v[(h + 1) % s->n]);
}

int geo_cyl_walk(struct geo *g, const struct geo_cyl_seq *sa, const struct geo_cyl_seq *sb,
		 uint64_t y, uint32_t hint, struct geo_track *t, unsigned max, unsigned *n)
{
	uint32_t sizes[GEO_MAX_WALK], cand[2 * DG_GEOMETRY_MAX_HEADS + 3 * PRED_MAX * 5];
	const char *why;
	int rc = geo_walk(g, y, hint, NULL, 0, t, 2, n, &why);

	if (rc)
		return rc;
	for (unsigned k = 1; k + 1 < max && k < GEO_MAX_WALK; k++) {
		unsigned nc = 0;
		sizes[k - 1] = t[k - 1].size;
		successors(sa, sizes[k - 1], cand, &nc, ARRAY_SIZE(cand));
		successors(sb, sizes[k - 1], cand, &nc, ARRAY_SIZE(cand));
		if (sa->n)
			nc += predict(sa->v, sa->n, sizes, k, cand + nc, ARRAY_SIZE(cand) - nc);
		uint64_t b = t[k - 1].start + t[k - 1].size, e;
		rc = geo_track_end(g, b, sizes[k - 1], cand, nc, &e);
		if (rc)
			return rc;
		t[k] = (struct geo_track){
		    .start = b, .size = (uint32_t)(e - b), .jump = NAN, .skew = NAN, .tau_ms = NAN};
		*n = k + 1;
	}
	return 0;
}
