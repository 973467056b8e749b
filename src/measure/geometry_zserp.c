/* SPDX-License-Identifier: MIT */
/*
 * The zone search on a serpentine drive: band grid stepping. Inside a zone every band but the
 * last holds K cylinders, so its bands start at base + m P (P = K C, C a cylinder's sectors
 * over all surfaces) and a zone's first band starts at the zone's first sector. From a zone
 * known on its grid (a full place found one band's start, its surfaces in order and K):
 *   - its last band is the largest m whose grid point still holds a track of its first surface
 *     (bisection on m, the band phase kept: the probe reads the same surface in every band, so a
 *     failed test is a zone change, never a surface change);
 *   - that band's first surface's run ends after kb tracks (the run's phase predicted from its
 *     size and cylinder step, bisection on the track), so the zone ends at its last band's
 *     start + kb C, to the sector (surfaces of one size whose head switch costs the cylinder
 *     step look like one run: a kb tracks);
 *   - the next zone begins there with its first band: its surface h's first track starts at
 *     K times the sizes of the surfaces before it, so its sizes are read at known band phases,
 *     not searched: each is predicted from the last zone's (the surfaces scale alike) and holds
 *     when the next surface's run begins where it puts it (a phase jump), else one track end
 *     measures it.
 * A zone's length predicts the next one's (zones of equal cylinders: two tests a step); a step
 * that fails is tried again, then a full place further on seeds the search again; the zone
 * before the first place gets a full place of its own. The skews (cylinder step, head switch,
 * zone change) are measured when the steps are done, while the time lasts.
 * Method: zone search from one zone to the next on the serpentine band grid, after Gim & Won
 * 2010; run ends by phase prediction and track boundaries by bisection, Wong 2019.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "geometry_zserp.h"

/* The search's state: where it adds bounds and places, what it counted, and the head switch
 * skews left for the end (each zone's into its second surface, when time remains). */
#define CAL_KEEP 5u  /* calibrations before the pooled figures are used */
#define CAL_RING 15u /* the last calibrations pooled */
/* tries of a step, each with more probes a phase than the last (a full place costs more) */
#define STEP_TRIES 3u

/* A zone place whose skews are measured at the end. */
struct serp_todo {
	size_t place;
	uint64_t p1; /* its second surface's first track */
};

struct serp {
	struct geo_bounds *bs;
	geo_add_place_fn add;
	void *arg;
	unsigned nread, seeds;
	struct serp_todo *todo;
	size_t ntodo;
	unsigned ncal; /* calibrations seen (the last CAL_RING kept) */
	double cal_sd[CAL_RING], cal_tail[CAL_RING]; /* their spread and tail (rev) */
};

/* Probes per phase for a probe spread `sd` and tail `tail` (rev, pooled over calibrations): the
 * earliest of n, n growing with the spread (so that a spread near a step of the scale does not
 * flip the cost of every later step between one calibration and the next). */
static unsigned pooled_repeats(double sd, double tail)
{
	if (sd < 0.0015 && tail < 1e-4)
		return 1;
	unsigned n = sd < 0.004 ? 3 : sd < 0.0055 ? 4 : sd < 0.008 ? 5 : 9;
	return tail > 4 * sd && n < 5 ? 5 : n;
}

/* geo_settle, then the probe settings from the medians of the last CAL_RING calibrations' spread
 * and tail: 9 probes estimate a spread to a third or so, so one calibration's figures flip the
 * probes per phase (3 or 5 on one drive from one seed to the next) where the pooled ones hold.
 * Until CAL_KEEP calibrations, each one's own figures (a tail below a ten-thousandth of a turn is
 * the reference fit's rounding, not a host's hiccups: a probe per phase then). 0, 1, 2 or
 * -errno. */
static int settle_care(struct geo *g, struct serp *c, uint64_t x, unsigned care)
{
	int rc = geo_settle(g, x);

	if (rc)
		return rc;
	c->cal_sd[c->ncal % CAL_RING] = g->sd;
	c->cal_tail[c->ncal % CAL_RING] = g->tail;
	c->ncal++;
	double sd = g->sd, tail = g->tail;
	if (c->ncal >= CAL_KEEP) {
		unsigned n = c->ncal < CAL_RING ? c->ncal : CAL_RING;
		double v[CAL_RING];
		memcpy(v, c->cal_sd, n * sizeof(*v));
		sd = geo_median(v, n);
		memcpy(v, c->cal_tail, n * sizeof(*v));
		tail = geo_median(v, n);
	} else if (!(g->sd < 0.0015 && g->tail < 1e-4) && !care) {
		return 0; /* geo_calibrate's own settings */
	}
	g->repeats = pooled_repeats(sd, tail);
	/* a step tried again after a failure: more probes a phase (one noisy phase failed it) */
	if (care && g->repeats > 1)
		g->repeats = g->repeats + 2 * care < 9 ? g->repeats + 2 * care : 9;
	g->noise = sd * 1.5 / g->repeats;
	g->thr = fmax(fmax(0.008, 6 * g->noise), 0.5 * tail);
	return 0;
}

static int settle(struct geo *g, struct serp *c, uint64_t x)
{
	return settle_care(g, c, x, 0);
}

/* Appends zone B as a place (at its first sector) and the boundary into it after place `a`
 * (found to the sector; GEO_NO_PLACE: none, B begins the range). 0 or -ENOMEM. */
static int zone_place(const struct geo *g, struct dg_geometry_result *r, struct serp *c, size_t a,
		      struct geo_sz *B, unsigned probes)
{
	struct dg_geometry_place *v = realloc(r->places, (r->nplaces + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	r->places = v;
	struct dg_geometry_place *p = &v[r->nplaces];
	memset(p, 0, sizeof(*p));
	p->offset_bytes = B->base * g->psec;
	p->ok = p->aligned = true;
	p->nsurfaces = B->H;
	for (unsigned h = 0; h < B->H; h++)
		p->spt[h] = B->spt[h] * g->u;
	p->track_skew = isnan(B->ks) ? NAN : (double)(lround(B->ks) * g->u);
	p->cylinder_skew = NAN; /* measured at the end (skews_left) */
	p->layout = DG_GEO_LAYOUT_SERPENTINE;
	p->band_tracks = (unsigned)B->K;
	p->hs_ms = p->step_ms = NAN;
	p->tracks = B->H + 1;
	p->probes = probes;
	B->place = r->nplaces++;
	{
		struct serp_todo *t = realloc(c->todo, (c->ntodo + 1) * sizeof(*t));
		if (!t)
			return -ENOMEM;
		c->todo = t;
		c->todo[c->ntodo].place = B->place;
		c->todo[c->ntodo++].p1 = B->p1;
	}
	if (a == GEO_NO_PLACE)
		return 0; /* the range's first zone: no boundary into it */
	struct geo_bound b = {.lo = B->base,
			      .hi = B->base,
			      .a = a,
			      .b = B->place,
			      .first = B->spt[0],
			      .skew = NAN,
			      .top = B->base};
	return geo_bound_add(c->bs, r, &b);
}

/* Where zone A ends: its last band before `limit`, then its first surface's run there. The
 * first `a` surfaces of one size look alike to the run's phase when the head switch's skew is
 * the cylinder step's (within 2 sectors): the run then walks all of them, a kb tracks; which
 * one holds is told by the skews, else by the zone read there (E[1]: the other reading, 0 =
 * none). 0 with E[0], 1, 2 or -errno. */
static int zone_end(struct geo *g, struct geo_sz *A, uint64_t limit, uint64_t E[2])
{
	uint64_t P = A->K * A->C, m, len = 0, kb[2] = {0, 0};
	uint64_t max = limit > A->base + P ? (limit - A->base) / P : 0;
	int rc = geo_last_band(g, A, 1, max, A->pbands, &m);

	if (rc)
		return rc;
	/* kept when the run's end fails too: the search seeds again past this band (search) */
	A->bands = m;
	uint64_t L = A->base + m * P;
	unsigned a = 1;
	while (a < A->H && A->spt[a] == A->spt[0])
		a++;
	bool alike = a > 1 && A->hs_like;
	int kx = A->kx;
	rc = geo_run_len(g, L, A->spt[0], A->k, A->kx, (alike ? a : 1) * A->pkb, a * A->K, &len,
			 &A->kx);
	if (rc)
		return rc;
	if (A->kx != kx)
		A->kf = NAN; /* measured: another skew than the scaled one */
	kb[!alike] = a > 1 && len % a == 0 ? len / a : 0;
	kb[alike] = len <= A->K ? len : 0;
	if (!kb[0]) {
		kb[0] = kb[1];
		kb[1] = 0;
	}
	if (!kb[0]) /* not whole runs: by the track sizes (a walk each) */
		rc = geo_band_len(g, A, L, A->pkb, &kb[0]);
	if (rc)
		return rc;
	A->bands = m;
	A->kb = kb[0];
	E[0] = L + kb[0] * A->C;
	E[1] = kb[1] && kb[1] != kb[0] ? L + kb[1] * A->C : 0;
#ifdef GEO_TRACE
	fprintf(stderr, "ZONE END base %llu P %llu m %llu kb %llu (%llu) -> E %llu (t %.1f s)\n",
		(unsigned long long)A->base, (unsigned long long)P, (unsigned long long)m,
		(unsigned long long)kb[0], (unsigned long long)kb[1], (unsigned long long)E[0],
		seek_ctx_used_ns(&g->s) / 1e9);
#endif
	return 0;
}

/* A track of a (A's last surface's size) begins at e: whether it is not A's last surface going
 * on (0: it is, 3: another zone's first surface of that size), from the jump into it against
 * the jump `step` into the track before (a cylinder step of that surface: a zone change has no
 * skew, so its jump is another as a rule; a band of A after it would begin with A's first
 * surface, of another size). Else as geo_phase. */
static int next_is_other(struct geo *g, uint64_t e, uint32_t a, double step)
{
	double p2, p3;
	int rc = geo_phase(g, e - 1, &p2);

	if (!rc)
		rc = geo_phase(g, e, &p3);
	if (rc)
		return rc;
	return fabs(geo_wrap(p3 - p2 - step)) > g->thr + 1.5 / a ? 3 : 0;
}

/* Zone A's end where the zone before's length puts it (zones of equal cylinders: Gim & Won
 * 2010's prediction of the next zone from the last), confirmed by A's last track there: a
 * track of A's last surface's size begins a track before it (a phase jump: the skew of the
 * move into it) and holds up to it (one track's slope), and the track that begins there is of
 * another size or one its last surface's cylinder step does not enter (a cylinder early, A's
 * last surface would still begin a track there), unless the range ends there. A zone change
 * has no skew: its jump tells a change where it is not the step's, never that there is none.
 * 0 with *E (A's bands and last band those of the zone before), 3 not there, 2 or -errno. */
static int predicted_end(struct geo *g, struct geo_sz *A, uint64_t limit, uint64_t *E)
{
	uint32_t a = A->spt[A->H - 1];
	uint64_t e = A->base + (A->pbands * A->K + A->pkb) * A->C;
	double p0, p1, p2;

	/* only where the zone's cylinder step is known (kx: the next zone's is scaled from it,
	 * not measured again) */
	if (!A->first || !A->plen || !A->pkb || A->kx < 2 || e <= A->base + a || e > limit)
		return 3;
	int rc = geo_phase(g, e - a - 1, &p0);
	if (!rc)
		rc = geo_phase(g, e - a, &p1);
	if (!rc)
		rc = geo_phase(g, e - 1, &p2);
	if (rc)
		return rc == 1 ? 3 : rc;
	double d = geo_wrap(p1 - p0 - 1.0 / a);
	if (!(d > g->thr || d < -fmax(3 * g->thr, 0.05)) ||
	    fabs(geo_wrap(p2 - p1 - (double)(a - 1) / a)) >= 3 * g->thr)
		return 3;
	/* the range's last zone: nothing follows to tell (the step ends there) */
	rc = e + 2 * (uint64_t)A->spt[0] >= limit ? 3 : geo_grid_ok(g, e, a);
	if (rc == 0 && A->pkb >= 2 && A->spt[0] != a)
		rc = next_is_other(g, e, a, geo_wrap(p1 - p0));
	rc = rc == 0 ? 3 : rc == 3 ? 0 : rc;
#ifdef GEO_TRACE
	fprintf(stderr, "PREDICTED END %llu: %d (t %.1f s)\n", (unsigned long long)e, rc,
		seek_ctx_used_ns(&g->s) / 1e9);
#endif
	if (rc)
		return rc == 1 ? 3 : rc;
	A->bands = A->pbands;
	A->kb = A->pkb;
	*E = e;
	return 0;
}

/* Where a step sets its reference: at the end the zone before's length predicts for A, where
 * the step's probes (A's end, the next zone's first band) lie a band or so from it (a probe
 * costs two moves and their rotational waits: moves of a zone's length cost a turn more a probe
 * than moves of a band's), else at A's first sector. */
static uint64_t settle_at(const struct geo_sz *A, uint64_t limit)
{
	uint64_t e = A->base + (A->pbands * A->K + A->pkb) * A->C;

	return A->first && A->plen && A->pkb && e < limit ? e : A->base;
}

/* One step from zone A (before `limit`): its end in *E, the next zone read there into *B.
 * 0, 4 (A reaches `limit`, or `next`'s first sector: *E says which), 3 (the step failed), 2
 * or -errno. */
static int step_reads(struct geo *g, struct serp *c, struct geo_sz *A, uint64_t limit,
		      const struct geo_sz *next, unsigned care, uint64_t *E, struct geo_sz *B)
{
	uint64_t Es[2];
#ifdef GEO_TRACE
	unsigned q0 = g->probes;
#endif
	int rc = settle_care(g, c, settle_at(A, limit), care);
#ifdef GEO_TRACE
	fprintf(stderr, "STEP settle %u probes (rep %u)\n", g->probes - q0, g->repeats);
	q0 = g->probes;
#endif

	Es[1] = 0;
	if (rc == 0)
		rc = predicted_end(g, A, limit, &Es[0]);
	if (rc == 3)
		rc = zone_end(g, A, limit, Es);
#ifdef GEO_TRACE
	fprintf(stderr, "STEP zone end %u probes\n", g->probes - q0);
	q0 = g->probes;
#endif
	if (rc)
		return rc == 1 ? 3 : rc;
	*E = Es[0];
	if ((next && *E == next->base) || *E + 2 * (uint64_t)A->spt[0] >= limit)
		return 4;
	rc = geo_read_zone(g, *E, A, B);
	if ((rc == 1 || rc == 3) && Es[1] && Es[1] + 2 * (uint64_t)A->spt[0] < limit) {
		*E = Es[1]; /* the other reading of the run */
		A->kb = (*E - A->base - A->bands * A->K * A->C) / A->C;
		rc = geo_read_zone(g, *E, A, B);
	}
#ifdef GEO_TRACE
	fprintf(stderr, "STEP read %u probes\n", g->probes - q0);
#endif
	return rc == 1 ? 3 : rc;
}

/* step_reads() with probes that may read away from the reference (geometry_probe.c): a
 * step's probes are where the probe cost matters most (a zone a few seconds, the budget's
 * rest), and the places keep the probes they were proven with. */
static int step(struct geo *g, struct serp *c, struct geo_sz *A, uint64_t limit,
		const struct geo_sz *next, unsigned care, uint64_t *E, struct geo_sz *B)
{
	g->away_ok = true;
	int rc = step_reads(g, c, A, limit, next, care, E, B);
	g->away_ok = false;
	return rc;
}

/* Steps from zone *A to the zones after it until `limit` (or `next`'s first sector, joined with a
 * boundary) or the time ends; a failed step is tried again up to STEP_TRIES - 1 times (its tests
 * again, the noise measured afresh, two more probes a phase each time: a step costs a few
 * seconds, the full place that seeds the search again tens). *A is the last zone read. 0, 3 (a step
 * failed), 2 or -errno. */
static int chain(struct geo *g, struct dg_geometry_result *r, struct serp *c, struct geo_sz *A,
		 uint64_t limit, const struct geo_sz *next)
{
	while (!geo_out_of_time(g)) {
		unsigned p0 = g->probes;
		uint64_t E = 0;
		struct geo_sz B;
		int rc = 3;
		for (unsigned care = 0; care < STEP_TRIES && rc == 3; care++)
			rc = step(g, c, A, limit, next, care, &E, &B);
		if (rc == 4 && next && E == next->base) {
			struct geo_bound b = {.lo = E,
					      .hi = E,
					      .a = A->place,
					      .b = next->place,
					      .first = next->spt[0],
					      .skew = NAN,
					      .top = E};
			return geo_bound_add(c->bs, r, &b);
		}
		if (rc)
			return rc == 4 ? 0 : rc;
		B.pbands = A->first ? A->bands : 0;
		B.pkb = A->kb;
		B.plen = A->first;
		rc = zone_place(g, r, c, A->place, &B, g->probes - p0);
		if (rc)
			return rc;
		*A = B;
		c->nread++;
	}
	return 2;
}

/* Zone A from place i when it found a band's start; its cylinder step's skew measured when the
 * place has none. 0, 1 (not such a place), 2 or -errno. */
static int from_place(struct geo *g, const struct dg_geometry_result *r, size_t i, struct geo_sz *A)
{
	const struct dg_geometry_place *p = &r->places[i];

	if (!p->ok || p->layout != DG_GEO_LAYOUT_SERPENTINE || !p->aligned || !p->nsurfaces ||
	    p->band_tracks < RUN_MIN)
		return 1;
	*A = (struct geo_sz){
	    .base = p->offset_bytes / g->psec,
	    .H = p->nsurfaces,
	    .K = p->band_tracks,
	    .k = p->cylinder_skew / g->u,
	    .ks = p->track_skew / g->u,
	    .hs_like = !(fabs(p->track_skew - p->cylinder_skew) >= (g->sub ? 1.0 : 2.0) * g->u),
	    .kx = -1,
	    .kf = NAN,
	    .place = i};
	for (unsigned h = 0; h < A->H; h++) {
		A->spt[h] = p->spt[h] / g->u;
		A->C += A->spt[h];
	}
	int rc = isnan(A->k) ? geo_skew_at(g, A->base + A->spt[0], A->spt[0], 4, &A->k) : 0;
	return rc ? rc : isnan(A->k) ? 1 : 0;
}

/* Zone A's first sector: its band grid followed back while it holds (A->first when a band
 * before it fails inside the range). 0, 2 or -errno. */
static int zone_start(struct geo *g, struct geo_sz *A)
{
	uint64_t P = A->K * A->C, m;
	uint64_t max = (A->base - g->lo_psec) / P;
	int rc = geo_last_band(g, A, -1, max, 0, &m);

	if (rc)
		return rc;
	A->base -= m * P;
	A->first = m < max || A->base == g->lo_psec;
#ifdef GEO_TRACE
	fprintf(stderr, "ZONE START m %llu of %llu -> %llu first %d (t %.1f s)\n",
		(unsigned long long)m, (unsigned long long)max, (unsigned long long)A->base,
		A->first, seek_ctx_used_ns(&g->s) / 1e9);
#endif
	return 0;
}

/* A full place at sector x (`add`) that seeds the search: its zone in *A, its first sector
 * found. 0, 1 (the place failed or found no band's start), 2 or -errno. */
static int seed_at(struct geo *g, struct dg_geometry_result *r, struct serp *c, uint64_t x,
		   struct geo_sz *A)
{
	int rc = c->add(g, r, x, c->arg);

	if (rc)
		return rc;
	rc = from_place(g, r, r->nplaces - 1, A);
	if (rc == 0)
		rc = settle(g, c, A->base);
	return rc ? rc : zone_start(g, A);
}

/* The device's first zone read where it begins (sector 0: its first band's first surface's first
 * track, as every zone's), its sizes predicted from zone F's (a zone after it: the surfaces scale
 * alike either way) as a step reads the next zone: a read instead of the full place the zone
 * before F costs else (a place walks a band's runs: 30 s and more on zoo 29, where the steps
 * that follow need the budget). Tried as a failed step is (STEP_TRIES, more probes a phase
 * each time). 0 with *W (a place of its own), 1 (not read: the caller seeds a place), 2 or
 * -errno. */
static int first_zone(struct geo *g, struct dg_geometry_result *r, struct serp *c,
		      const struct geo_sz *F, struct geo_sz *W)
{
	unsigned p0 = g->probes;
	int rc = 3;

	g->away_ok = true;
	for (unsigned care = 0; care < STEP_TRIES && rc == 3; care++) {
		rc = settle_care(g, c, 0, care);
		if (rc == 0)
			rc = geo_read_zone(g, 0, F, W);
		rc = rc == 1 ? 3 : rc;
	}
	g->away_ok = false;
#ifdef GEO_TRACE
	fprintf(stderr, "FIRST ZONE rc %d (t %.1f s)\n", rc, seek_ctx_used_ns(&g->s) / 1e9);
#endif
	if (rc)
		return rc == 3 ? 1 : rc;
	rc = zone_place(g, r, c, GEO_NO_PLACE, W, g->probes - p0);
	if (rc == 0)
		c->nread++;
	return rc;
}

/* The zone-change skew at b three times (geo_bound_skew: each the median of three); kept when
 * all three agree within half a sector (two medians agree by chance where the probes scatter
 * by sectors), else absent. 0, 2 or -errno. */
static int bound_skew_firm(struct geo *g, struct geo_bound *b)
{
	double v[3] = {NAN, NAN, NAN};
	int rc = 0;

	for (unsigned i = 0; i < 3 && rc == 0; i++) {
		b->skew = NAN;
		rc = geo_bound_skew(g, b);
		v[i] = b->skew;
		if (rc == 0 && i && !(fabs(geo_wrap((v[i] - v[0]) / b->first)) * b->first <= 0.5))
			v[i] = NAN;
		if (isnan(v[i]))
			break;
	}
#ifdef GEO_TRACE
	fprintf(stderr, "BOUND SKEW %llu: %.2f %.2f %.2f\n", (unsigned long long)b->hi, v[0], v[1],
		v[2]);
#endif
	b->skew = rc == 0 && !isnan(v[0]) && !isnan(v[1]) && !isnan(v[2]) ? v[2] : NAN;
	return rc;
}

/* What time remains after the steps: each zone's head switch skew (into its second surface's
 * first track), then the zone-change skews (not on a 512e drive: they are wanted in logical
 * sectors, eighths of the physical sector a phase resolves). 0, 2 or -errno. */
static int skews_left(struct geo *g, struct dg_geometry_result *r, struct serp *c)
{
	int rc = 0;

	for (size_t i = 0; i < c->ntodo && !geo_out_of_time(g); i++) {
		struct dg_geometry_place *p = &r->places[c->todo[i].place];
		uint64_t x = p->offset_bytes / g->psec, S0 = p->spt[0] / g->u;
		double k = NAN, ks = NAN;
		rc = settle(g, c, x);
		if (rc == 0 && isnan(p->cylinder_skew))
			rc = geo_skew_firm(g, x + S0, (uint32_t)S0, &k);
		if (rc == 0 && isnan(p->track_skew) && p->nsurfaces > 1)
			rc = geo_skew_firm(g, c->todo[i].p1, p->spt[1] / g->u, &ks);
		if (rc == 2 || rc < 0)
			return rc;
		p->cylinder_skew = isnan(k) ? p->cylinder_skew : (double)(lround(k) * g->u);
		p->track_skew = isnan(ks) ? p->track_skew : (double)(lround(ks) * g->u);
	}
	for (size_t k = 0; g->u == 1 && k < c->bs->n && !geo_out_of_time(g); k++) {
		const struct geo_bound *b = &c->bs->v[k];
		if (b->lo != b->hi || !b->first || !isnan(b->skew))
			continue;
		rc = settle(g, c, b->lo); /* the reference's fit settled: a skew is a phase pair */
		rc = rc ? rc : bound_skew_firm(g, &c->bs->v[k]);
		if (rc == 2 || rc < 0)
			return rc;
	}
	if (g->u > 1)
		dg_warnings_add(
		    &r->notes,
		    "geometry: the zone-change skews of a serpentine 512e drive are "
		    "absent (wanted in logical sectors, an eighth of the physical sector "
		    "a phase resolves)");
	return 0;
}

/* From the first place that found a band's start: its zone's start, the zone before it (a place
 * of its own), then zone after zone to the range's end; a failed step: a full place 1% of the
 * range past the failed zone's last band (the zones after it are read again from there). 0, 2
 * or -errno. */
static int search(struct geo *g, struct dg_geometry_result *r, struct serp *c)
{
	uint64_t far = GEO_FAR_BYTES / g->psec, span = g->npsec - g->lo_psec;
	struct geo_sz A, W, F;
	size_t i = 0;
	int rc = 1;

	while (i < r->nplaces && rc == 1)
		rc = from_place(g, r, i++, &A);
	if (rc == 0)
		rc = settle(g, c, A.base);
	if (rc == 0)
		rc = zone_start(g, &A);
	if (rc)
		return rc == 1 ? 0 : rc;
	F = A;
	for (;;) {
		rc = chain(g, r, c, &A, g->npsec, NULL);
		if (rc != 3 || geo_out_of_time(g))
			break;
		/* a quarter band past A's last band when its bands were counted (A ends inside
		 * it), else past its first: in the next zone's first band as a rule. Not in a
		 * zone's short last band: a place there walks into the zone after it, and
		 * reads its band from there at the cost of a place or two */
		uint64_t x = A.base + (A.bands + 1) * A.K * A.C + A.K * A.C / 4;
		for (rc = 1; rc == 1 && x + 2 * far < g->npsec && !geo_out_of_time(g);
		     x += span / 100) {
			rc = seed_at(g, r, c, x, &W);
			c->seeds++;
		}
		if (rc)
			break;
		/* W's zone begins in the band after A's last one: A ends at W's first sector */
		uint64_t L = A.base + A.bands * A.K * A.C;
		if (A.bands && W.first && W.base > L && W.base <= L + A.K * A.C) {
			struct geo_bound b = {.lo = W.base,
					      .hi = W.base,
					      .a = A.place,
					      .b = W.place,
					      .first = W.spt[0],
					      .skew = NAN,
					      .top = W.base};
			rc = geo_bound_add(c->bs, r, &b);
			if (rc)
				break;
		}
		A = W;
	}
	if (rc == 2)
		dg_warnings_add(
		    &r->notes,
		    "geometry: serpentine layout: the steps stopped (the time budget or a "
		    "signal) in the zone from byte %llu, %.0f%% into the range; the zones "
		    "beyond are absent (the last zone's boundary uncertainty covers them)",
		    (unsigned long long)(A.base * g->psec),
		    100.0 * (double)(A.base - g->lo_psec) / (double)span);
	if (rc == 2 || rc < 0)
		return rc;
	/* the zone before the first place's, when time remains: a place of its own, then its
	 * steps up to that zone */
	if (F.first && F.base > g->lo_psec + 2 * far && !geo_out_of_time(g)) {
		rc = g->lo_psec == 0 ? first_zone(g, r, c, &F, &W) : 1;
		if (rc == 1)
			rc = seed_at(g, r, c, g->lo_psec + far, &W);
		if (rc == 0 && W.base < F.base)
			rc = chain(g, r, c, &W, F.base, &F);
		if (rc == 2 || rc < 0)
			return rc;
	}
	return skews_left(g, r, c);
}

int geo_serp_search(struct geo *g, struct dg_geometry_result *r, geo_add_place_fn add, void *arg,
		    struct geo_bounds *bs)
{
	struct serp c = {.bs = bs, .add = add, .arg = arg};
	int rc = search(g, r, &c);

	free(c.todo);
	if (c.nread || c.seeds)
		dg_warnings_add(
		    &r->notes,
		    "geometry: serpentine layout: %u zones read from their neighbours' "
		    "band grids (each surface's first track where the band puts it), %u "
		    "more places where a step failed",
		    c.nread, c.seeds);
	geo_places_sort(r);
	return rc;
}
