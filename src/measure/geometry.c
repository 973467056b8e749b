/* SPDX-License-Identifier: MIT */
/*
 * The geometry run (method in include/diskgeo/geometry.h): the rotation period from rotation.c,
 * then places spread over the range, each walked track by track (geometry_probe.c) and read as
 * a cylinder or a serpentine shape (geometry_place.c, geometry_band.c); places that agree form
 * the zones (geometry_zones.c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "geometry_order.h"
#include "geometry_place.h"
#include "geometry_zones.h"

#define FIRST_WALK 40u /* tracks walked at the first place: periods up to 19 seen twice */
/* the places' share of the budget; the zone search has the rest (and what they leave) */
#define PLACES_SHARE 0.25
/* where surfaces differ on a cylinder layout: the zone search sizes a zone for a fraction of a
 * place's cost (geometry_zcyl.c), and a place there costs the most */
#define PLACES_SHARE_SURFACES 0.1

void dg_geometry_params_default(struct dg_geometry_params *p)
{
	memset(p, 0, sizeof(*p));
	p->places = DG_GEOMETRY_DEFAULT_PLACES;
	p->range_end_bytes = UINT64_MAX;
	p->seed = 1;
}

uint64_t dg_geometry_default_budget_ns(uint64_t capacity_bytes)
{
	double tb = (double)capacity_bytes / 1e12, min = 5;

	if (tb > 4)
		min = tb >= 20 ? 8 : 5 + 3 * (tb - 4) / 16;
	return (uint64_t)(min * 60 * 1e9);
}

int dg_geometry_params_check(const struct dg_geometry_params *p, const struct dg_device_info *info,
			     char *err, size_t errlen)
{
	uint64_t end = p->range_end_bytes == UINT64_MAX ? info->size_bytes : p->range_end_bytes;

	if (end > info->size_bytes || p->range_start_bytes >= end) {
		snprintf(err, errlen, "the range is outside the device or empty");
		return -EINVAL;
	}
	if (end - p->range_start_bytes < DG_GEOMETRY_MIN_RANGE_BYTES) {
		snprintf(err, errlen,
			 "the range is too small for one track and its reference (%llu MiB at "
			 "least)",
			 (unsigned long long)(DG_GEOMETRY_MIN_RANGE_BYTES >> 20));
		return -EINVAL;
	}
	if (p->time_budget_ns && p->time_budget_ns < DG_GEOMETRY_MIN_BUDGET_NS) {
		snprintf(err, errlen,
			 "a time budget of %.3g s is below the minimum for one zone (%llu s)",
			 (double)p->time_budget_ns / 1e9,
			 (unsigned long long)(DG_GEOMETRY_MIN_BUDGET_NS / DG_NS_PER_S));
		return -EINVAL;
	}
	if (p->places < 1 || p->places > DG_GEOMETRY_MAX_PLACES) {
		snprintf(err, errlen, "places must be in 1..%u", DG_GEOMETRY_MAX_PLACES);
		return -EINVAL;
	}
	return 0;
}

const char *dg_geometry_layout_name(enum dg_geometry_layout l)
{
	return l == DG_GEO_LAYOUT_CYLINDER     ? "cylinder"
	       : l == DG_GEO_LAYOUT_SERPENTINE ? "serpentine"
					       : NULL;
}

void dg_geometry_result_free(struct dg_geometry_result *r)
{
	if (!r)
		return;
	free(r->places);
	free(r->zones);
	dg_warnings_free(&r->notes);
	free(r);
}

/* Rotation (rotation.c, reused), then the probe's settings. 0, 1 (no rotation), 2, -errno. */
static int setup(struct geo *g, struct dg_geometry_result *r, uint32_t *hint)
{
	uint32_t blk = g->psec > 4096 ? g->psec : 4096;
	int rc;

	g->s.block_bytes = blk;
	/* where the seek phase measures it, else further in (a defect, a busy drive) */
	for (unsigned i = 0; i < 3 && !g->s.rotating; i++) {
		uint64_t span = (g->npsec - g->lo_psec) * g->psec;
		uint64_t at = g->lo_psec * g->psec + (i ? span / 4 * i : 16ull << 20);
		rc = geo_rotation(&g->s, at / blk * blk);
		if (rc < 0 || rc == 2)
			return rc;
	}
	if (!g->s.rotating && r->params.nominal_rpm > 1000) {
		/* noisy completions hid the period from rotation.c: start from the stated rpm;
		 * the reference fit of every place counts revolutions and refines it */
		struct dg_completion c;
		rc = geo_read(&g->s, (g->lo_psec * g->psec + (16ull << 20)) / blk * blk, 0, &c);
		if (!rc)
			rc = geo_read(&g->s, (g->lo_psec * g->psec + (16ull << 20)) / blk * blk, 0,
				      &c);
		if (rc)
			return rc;
		g->s.rotating = true;
		g->s.period_ns = 60e9 / r->params.nominal_rpm;
		g->s.overhead_ms = (double)(c.complete_ns - c.submit_ns) / 1e6;
		g->s.drift_ns = 0;
		dg_warnings_add(&r->notes,
				"geometry: the rotation measurement found no period; the stated "
				"%u rpm started the fit that every place refines",
				r->params.nominal_rpm);
	}
	if (!g->s.rotating)
		return 1;
	/* the period handed in (rotation.c's; scaled only by tests) starts each place's reference
	 * fit, which refines it from the place's own completions before a phase relies on it: the
	 * first calibration's first pass settles the fit (geo_calibrate) */
	g->T_ns = g->s.period_ns * g->period_scale;
	r->rotating = true;
	r->period_ms = g->T_ns / 1e6;
	g->hit_ms = g->s.overhead_ms + 0.1;
	double trk = g->s.drift_ns > 0 ? g->T_ns / g->s.drift_ns * blk / g->psec : 0;
	*hint = trk > 8 && trk < 1e6 ? (uint32_t)trk : 0;
	g->trk = *hint;
#ifdef GEO_TRACE
	fprintf(stderr, "SETUP hint %u (T %.4f ms drift %.1f ns)\n", *hint, g->T_ns / 1e6,
		g->s.drift_ns);
#endif
	g->s.block_bytes = g->psec;
	return 0;
}

/* The skews again, each from one transition measured with many probes (the walk's are noisy
 * where the host adds jitter). 0, 2 or -errno; an unusable probe keeps the walk's figure. */
static int exact_skews(struct geo *g, const struct geo_track *t, struct geo_place_shape *sh)
{
	double k;
	int rc;

	if (sh->tr_cyl) {
		rc = geo_skew(g, &t[sh->tr_cyl], GEO_SKEW_FINE, &k);
		if (rc == 2 || rc < 0)
			return rc;
		if (!rc)
			sh->cylinder_skew = (double)lround(k);
	}
	if (sh->tr_track) {
		rc = geo_skew(g, &t[sh->tr_track], GEO_SKEW_FINE, &k);
		if (rc == 2 || rc < 0)
			return rc;
		if (!rc)
			sh->track_skew = (double)lround(k);
	}
	return 0;
}

/* Reads the walk *t[0..*n) as a shape; a walk that begins at the end of a serpentine run (a
 * few tracks, then a run of another size or move) is read from the run that follows: *t and *n
 * then name that run's first track and the tracks from it. 0, or 1 when no shape fits. */
static int read_shape(const struct geo *g, struct geo_track **t, unsigned *n,
		      struct geo_place_shape *sh)
{
	if (geo_place_read(g, *t, *n, sh) == 0)
		return 0;
	for (unsigned i = 2; i <= RUN_MIN && i + RUN_MIN + 1 < *n; i++)
		if (geo_place_read(g, *t + i, *n - i, sh) == 0 && sh->kind == GEO_SHAPE_RUN) {
			*t += i;
			*n -= i;
			return 0;
		}
	return 1;
}

/* Measures one place; fills pl (and *sh). 0, 2 or -errno (a failed place is 0 with !pl->ok). */
static int measure_place(struct geo *g, struct dg_geometry_result *r, uint64_t x, uint32_t *hint,
			 const struct geo_place_shape *prev, struct geo_order *o,
			 struct dg_geometry_place *pl, struct geo_place_shape *sh)
{
	struct geo_track tw[GEO_MAX_WALK + 1], *t = tw;
	unsigned n = 0, walk = FIRST_WALK;
	const char *why = "";
	int rc;

	memset(sh, 0, sizeof(*sh));
	pl->offset_bytes = x * g->psec;
	pl->track_skew = pl->cylinder_skew = NAN;
	pl->hs_ms = pl->step_ms = NAN;
	unsigned p0 = g->probes;
	geo_place_begin(g, x);
	g->why = NULL;
	rc = geo_calibrate(g, x);
	if (rc == 0) {
		if (prev && prev->kind == GEO_SHAPE_CYLINDER)
			walk =
			    2 * prev->period + 2 < FIRST_WALK ? 2 * prev->period + 2 : FIRST_WALK;
		else if (prev && prev->kind == GEO_SHAPE_RUN)
			walk = 12;
		rc = geo_walk(g, x, *hint, prev ? prev->spt : NULL, prev ? prev->nsurfaces : 0, t,
			      walk + 1, &n, &why);
	} else {
		why = "no phase lock there (the probes scatter or hit a cache)";
	}
	pl->probes = g->probes - p0;
#ifdef GEO_TRACE
	fprintf(stderr, "PLACE %llu: %u probes, %.1f s device time, %.1f s in all\n",
		(unsigned long long)x, pl->probes,
		(double)(seek_ctx_used_ns(&g->s) - g->place_t0_ns) / 1e9,
		(double)seek_ctx_used_ns(&g->s) / 1e9);
#endif
	pl->tracks = n;
	if (rc == 2 || rc < 0)
		return rc;
	if (rc == 0 && read_shape(g, &t, &n, sh) == 0) {
		sh->heads_known = prev ? prev->nsurfaces : 0;
		sh->band_known = prev ? prev->band_tracks : 0;
		rc = geo_order_two(g, t, n, o, sh);
		if (rc == 0)
			rc = exact_skews(g, t, sh);
		if (rc == 2 || rc < 0)
			return rc;
		rc = geo_band_place(g, t, n, sh);
		if (rc == 2 || rc < 0)
			return rc;
		if (rc == 0) {
			pl->ok = true;
			pl->nsurfaces = sh->nsurfaces;
			for (unsigned h = 0; h < sh->nsurfaces; h++)
				pl->spt[h] = sh->spt[h] * g->u;
			pl->track_skew = sh->track_skew * g->u;
			pl->cylinder_skew = sh->cylinder_skew * g->u;
			pl->layout = sh->kind == GEO_SHAPE_RUN ? DG_GEO_LAYOUT_SERPENTINE
							       : DG_GEO_LAYOUT_CYLINDER;
			pl->band_tracks = sh->band_tracks;
			if (sh->band_start) /* the sizes are the band's (the place's zone or the
					       next) */
				pl->offset_bytes = sh->band_start * g->psec;
			pl->aligned = (sh->kind == GEO_SHAPE_RUN && !sh->ambiguous) || sh->aligned;
			pl->hs_ms = geo_median(sh->hs.v, sh->hs.n);
			pl->step_ms = geo_median(sh->step.v, sh->step.n);
			*hint = sh->spt[0];
			g->trk = sh->spt[0];
			for (unsigned i = 1; i < n && !g->nkeep_done && g->nkeep <= sh->nsurfaces;
			     i++)
				g->keep[g->nkeep++] = t[i];
			g->nkeep_done = true;
			return 0;
		}
		why = g->why ? g->why : "the serpentine run's end was not found";
	} else if (rc == 0) {
		why = "the tracks walked there show no consistent pattern (a zone change, noise)";
	}
	if (rc == 1 && g->why)
		why = g->why;
	snprintf(pl->note, sizeof(pl->note), "%s", why);
#ifdef GEO_TRACE
	fprintf(stderr, "PLACE %llu failed: %s (rc %d)\n", (unsigned long long)x, why, rc);
#endif
	return 0;
}

/* What one place passes on to the next: the size hint and the last good place's shape. */
struct place_ctx {
	uint32_t hint;
	struct geo_place_shape prev;
	bool have_prev;
	uint64_t cap_ns; /* a later place's share of the budget */
	unsigned next;	 /* the next place of the spread */
	uint64_t rng;	 /* where the places fall */
	bool serpentine; /* a place found a serpentine layout: the serpentine zone search */
	bool seeded;	 /* a serpentine place found a band's start: the search starts there */
	struct geo_order order; /* two surfaces: which move is the head switch */
};

/* Measures the place at x into pl and passes on what it learnt. 0, 2 or -errno. */
static int next_place(struct geo *g, struct dg_geometry_result *r, struct place_ctx *c, uint64_t x,
		      struct dg_geometry_place *pl)
{
	struct geo_place_shape sh;

	/* until a place succeeds, one may take half the budget (it learns the heads and the band
	 * that make the others cheaper) */
	uint64_t end_ns = g->budget_end_ns, half_ns = r->params.time_budget_ns / 2;
	g->place_max_ns = c->have_prev ? c->cap_ns : half_ns;
	if (!c->have_prev && g->budget_end_ns < half_ns)
		g->budget_end_ns = half_ns; /* the places' share must not cut the first one short */
	int rc =
	    measure_place(g, r, x, &c->hint, c->have_prev ? &c->prev : NULL, &c->order, pl, &sh);
	g->budget_end_ns = end_ns;
	if (rc == 0 && pl->ok) {
		c->prev = sh;
		c->have_prev = true;
		/* a serpentine place walks a band's runs: once one found a band's start, the
		 * serpentine zone search steps from it over the whole range (the cylinder one's
		 * walk near a sector lands inside a run that outlasts it); until then the places
		 * take the whole budget */
		if (c->serpentine || pl->layout == DG_GEO_LAYOUT_SERPENTINE) {
			c->serpentine = true;
			c->seeded = c->seeded || (pl->aligned && pl->band_tracks >= RUN_MIN);
			g->budget_end_ns = r->params.time_budget_ns;
		}
	}
	return rc;
}

/* The zone search's new place (geo_add_place_fn): appended to r->places. */
static int add_place(struct geo *g, struct dg_geometry_result *r, uint64_t x, void *arg)
{
	struct dg_geometry_place *p;

	/* a place that failed here fails again (the same walk): not measured twice */
	for (size_t i = 0; i < r->nplaces; i++)
		if (!r->places[i].ok && r->places[i].offset_bytes == x * g->psec)
			return 0;
	p = realloc(r->places, (r->nplaces + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	r->places = p;
	memset(&p[r->nplaces], 0, sizeof(*p));
	r->nplaces++;
	return next_place(g, r, arg, x, &p[r->nplaces - 1]);
}

/* True when the places' first share is spent on a cylinder drive whose surfaces differ. */
static bool surfaces_done(struct geo *g, const struct dg_geometry_result *r)
{
	uint64_t share = (uint64_t)(PLACES_SHARE * (double)r->params.time_budget_ns);
	bool differ = false;

	for (size_t i = 0; i < r->nplaces && !differ; i++) {
		const struct dg_geometry_place *p = &r->places[i];
		for (unsigned h = 1;
		     p->ok && p->layout == DG_GEO_LAYOUT_CYLINDER && h < p->nsurfaces; h++)
			differ = differ || p->spt[h] != p->spt[0];
	}
	return differ && g->budget_end_ns <= share &&
	       seek_ctx_used_ns(&g->s) >=
		   (uint64_t)(PLACES_SHARE_SURFACES * (double)r->params.time_budget_ns);
}

/* Places c->next.. of the spread, appended to r->places, until the time ends. 0 or -errno. */
static int run_places(struct geo *g, struct dg_geometry_result *r, struct place_ctx *c,
		      dg_progress_fn progress, void *arg)
{
	uint64_t span = g->npsec - g->lo_psec - 2 * (GEO_FAR_BYTES / g->psec);
	int rc = 0;

	for (; c->next < r->params.places; c->next++) {
		unsigned i = c->next;
		uint64_t rng = c->rng; /* taken only by a place measured */
		double f = (i + 0.25 + 0.5 * (double)(dg_splitmix64(&rng) >> 11) * 0x1.0p-53) /
			   r->params.places;
		uint64_t x = g->lo_psec + GEO_FAR_BYTES / g->psec + (uint64_t)(f * (double)span);
		if (geo_out_of_time(g) || c->seeded || surfaces_done(g, r))
			break;
		c->rng = rng;
		if (progress)
			progress(arg, "geometry", (double)i / r->params.places, -1);
		rc = add_place(g, r, x, c);
		if (rc)
			break;
	}
	return rc == 2 ? 0 : rc;
}

/* The zone boundaries not found to the sector (the time ran out), in a note. */
static void search_note(struct dg_geometry_result *r, const struct geo_bounds *b, uint32_t psec,
			unsigned sized)
{
	uint64_t worst = 0;
	size_t open = 0;
	char w[32];

	/* the widest bound open: the sectors between the outer zone's last known and the inner
	 * zone's first known (a measured width, often two places' distance) */
	for (size_t k = 0; k < b->n; k++)
		if (b->v[k].hi > b->v[k].lo) {
			open++;
#ifdef GEO_TRACE
			fprintf(stderr, "BOUND open %llu..%llu (%llu sectors)\n",
				(unsigned long long)b->v[k].lo, (unsigned long long)b->v[k].hi,
				(unsigned long long)(b->v[k].hi - b->v[k].lo));
#endif
			if ((b->v[k].hi - b->v[k].lo) * psec > worst)
				worst = (b->v[k].hi - b->v[k].lo) * psec;
		}
	if (sized)
		dg_warnings_add(&r->notes,
				"geometry: %u zones found by the zone search are sized from their "
				"tracks alone (two of one size where every place shows one size on "
				"all its surfaces, else one cylinder in walk order); the time left "
				"measured no full place there, so their skews are absent",
				sized);
	if (open)
		dg_warnings_add(&r->notes,
				"geometry: %zu of %zu zone boundaries searched are known only to "
				"within %s (the time budget or the probes ran out); their "
				"zone-change skews are absent",
				open, b->n, dg_fmt_bytes(w, sizeof(w), worst));
}

/* Places (their share of the budget), the track-aligned recommendation, the zone search (the
 * rest), then the places left and the search between them if time remains. 0, 1, 2 or -errno. */
static int run_all(struct geo *g, struct dg_geometry_result *r, uint32_t hint, struct geo_bounds *b,
		   dg_progress_fn progress, void *arg)
{
	struct place_ctx c = {.hint = hint,
			      .cap_ns = g->place_max_ns,
			      .rng = r->params.seed,
			      .order = {.cyl_longer = -1}};
	int rc;

	g->budget_end_ns = (uint64_t)(PLACES_SHARE * (double)r->params.time_budget_ns);
	rc = run_places(g, r, &c, progress, arg);
	g->budget_end_ns = r->params.time_budget_ns;
	if (rc == 0 && g->nkeep)
		rc = geo_align_measure(g, r);
	for (unsigned pass = 0; rc == 0 && !c.serpentine && pass < 2; pass++) {
		if (progress)
			progress(arg, "zone search", 0, -1);
		rc = geo_zone_search(g, r, add_place, &c, b);
		if (rc == 0 && !pass && c.next < r->params.places && !geo_out_of_time(g))
			rc = run_places(g, r, &c, progress, arg);
	}
	if (rc == 0 && c.seeded) {
		if (progress)
			progress(arg, "zone search", 0, -1);
		rc = geo_serp_search(g, r, add_place, &c, b);
	}
	unsigned sized = 0;
	int ru = c.serpentine ? 0 : geo_zone_upgrade(g, r, add_place, &c, b, &sized);
	rc = rc ? rc : ru;
	if (c.next < r->params.places && !c.seeded)
		dg_warnings_add(&r->notes,
				"geometry: the time budget ended after %u of %u places; the rest "
				"of the range is covered by the zone search only",
				c.next, r->params.places);
	search_note(r, b, g->psec, sized);
	if (c.order.unknown)
		dg_warnings_add(
		    &r->notes,
		    "geometry: two surfaces whose walk alternates two moves that no seek "
		    "test told apart (%u tried): which is the head switch is not known, so "
		    "on %u place%s the sizes and both skews are in walk order from the "
		    "surface entered by the longer move (its skew as the cylinder skew), "
		    "and they give no head switch time",
		    c.order.tests, c.order.unknown, c.order.unknown == 1 ? "" : "s");
	return rc;
}

int dg_geometry_run(struct dg_engine *e, const struct dg_device_info *info,
		    const struct dg_geometry_params *p, struct dg_errors *errors,
		    volatile sig_atomic_t *stop, dg_progress_fn progress, void *progress_arg,
		    struct dg_geometry_result **out)
{
	return geo_run(e, info, p, errors, stop, progress, progress_arg, 1.0, out);
}

int geo_run(struct dg_engine *e, const struct dg_device_info *info,
	    const struct dg_geometry_params *p, struct dg_errors *errors,
	    volatile sig_atomic_t *stop, dg_progress_fn progress, void *progress_arg,
	    double period_scale, struct dg_geometry_result **out)
{
	char err[DG_ERRLEN];
	struct dg_geometry_result *r;
	struct geo *g;
	struct geo_bounds bounds = {0};
	uint32_t hint = 0;
	int rc;

	*out = NULL;
	rc = dg_geometry_params_check(p, info, err, sizeof(err));
	if (rc)
		return rc;
	r = calloc(1, sizeof(*r));
	g = calloc(1, sizeof(*g));
	if (!r || !g) {
		free(r);
		free(g);
		return -ENOMEM;
	}
	r->params = *p;
	if (r->params.range_end_bytes == UINT64_MAX)
		r->params.range_end_bytes = info->size_bytes;
	if (!r->params.time_budget_ns)
		r->params.time_budget_ns = dg_geometry_default_budget_ns(info->size_bytes);
	r->capacity_bytes = info->size_bytes;
	r->sector_bytes = info->logical_sector_bytes;
	r->physical_sector_bytes = info->physical_sector_bytes > info->logical_sector_bytes
				       ? info->physical_sector_bytes
				       : info->logical_sector_bytes;
	r->period_ms = r->head_switch_ms = r->track_to_track_ms = NAN;
	g->lsec = r->sector_bytes;
	g->psec = r->physical_sector_bytes;
	g->u = g->psec / g->lsec;
	g->lo_psec = (r->params.range_start_bytes + g->psec - 1) / g->psec;
	g->npsec = r->params.range_end_bytes / g->psec;
	g->s.e = e;
	g->s.capacity_bytes = r->params.range_end_bytes / 4096 * 4096;
	g->s.errors = errors;
	g->s.stop = stop;
	g->s.dt0_ns = dg_engine_device_time_ns(e);
	g->s.budget_ns = r->params.time_budget_ns;
	g->s.rng = p->seed;
	g->budget_end_ns = r->params.time_budget_ns;
	/* a place may take four times its share of the budget (the first walks the most), and
	 * at least a sixth of it (a serpentine place walks a band's runs) */
	g->place_max_ns = 4 * r->params.time_budget_ns / r->params.places;
	if (g->place_max_ns < r->params.time_budget_ns / 6)
		g->place_max_ns = r->params.time_budget_ns / 6;
	g->repeats = 1;
	g->thr = 0.01;
	g->period_scale = period_scale;

	if (progress)
		progress(progress_arg, "rotation", 0, -1);
	rc = setup(g, r, &hint);
	if (rc == 1)
		dg_warnings_add(&r->notes, "geometry: no rotation found (not a spinning disk, or "
					   "hidden behind a cache): no geometry");
	if (rc == 0)
		rc = run_all(g, r, hint, &bounds, progress, progress_arg);
	if (rc == 2)
		rc = 0;
	if (rc == 0 || rc == 1 || rc == 2) {
		r->complete = !g->s.stopped;
		r->probes = g->probes;
		r->repeats = g->repeats;
		r->noise_rev = g->noise;
		rc = r->rotating ? geo_zones_build(g, r, &bounds) : 0;
	}
	r->device_time_ns = seek_ctx_used_ns(&g->s);
	free(bounds.v);
	free(bounds.sized);
	free(g);
	if (rc < 0) {
		dg_geometry_result_free(r);
		return rc;
	}
	*out = r;
	return 0;
}
