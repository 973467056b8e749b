/* SPDX-License-Identifier: MIT */
/*
 * The geometry a spec implies (drive-spec.md): per zone each surface's track size, the default
 * skew of a head switch and of a one-cylinder step into each surface (recomputed here from the
 * move times: ceil(move / T * S) + 1 sectors, up to whole physical sectors, unless the spec
 * gives the skew), the surfaces, the layout, the band, the head switch and seek(1).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/geometry.h"
#include "model_priv.h"

/* The default skew of a move into a track of S logical sectors (u logical per physical). */
static uint32_t default_skew(double move_ms, double T_ms, uint32_t S, uint32_t u)
{
	uint64_t k = (uint64_t)ceil(move_ms / T_ms * S - 1e-9) + 1;

	k = (k + u - 1) / u * u;
	return (uint32_t)(k % S);
}

/* The default skew of a transition of `kind` into surface h (a skew the spec sets explicitly is
 * not the default: the zoo and the presets set none). */
static uint32_t skew_of(const struct dg_spec *s, const struct dg_zone *z, int kind, uint32_t h)
{
	return default_skew(z->move_ms[kind], s->period_ms, z->hspt[h], s->phys_ratio);
}

int dg_geometry_truth_compute(const struct dg_spec *s, struct dg_geometry_truth **out)
{
	struct dg_geometry_truth *t = calloc(1, sizeof(*t));
	uint64_t cap = s->capacity_sectors * s->sector_bytes;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->zones = calloc(s->nzones, sizeof(*t->zones));
	if (!t->zones) {
		free(t);
		return -ENOMEM;
	}
	t->heads = s->heads;
	t->serpentine = s->layout == DG_LAYOUT_SERPENTINE;
	t->band_tracks = t->serpentine ? s->band_cylinders : 0;
	t->head_switch_ms = s->head_switch_ms;
	t->track_to_track_ms = dg_spec_seek_ms(s, 1);
	t->sector_bytes = s->sector_bytes;
	for (size_t i = 0; i < s->nzones && s->zones[i].first_lba * s->sector_bytes < cap; i++) {
		const struct dg_zone *z = &s->zones[i];
		struct dg_geometry_truth_zone *tz = &t->zones[t->nzones++];
		tz->start_bytes = z->first_lba * s->sector_bytes;
		tz->end_bytes = (z->first_lba + z->sectors) * s->sector_bytes;
		if (tz->end_bytes > cap)
			tz->end_bytes = cap;
		tz->nsurfaces = s->heads < DG_GEOMETRY_MAX_HEADS ? s->heads : DG_GEOMETRY_MAX_HEADS;
		for (uint32_t h = 0; h < tz->nsurfaces; h++) {
			tz->spt[h] = z->hspt[h];
			tz->track_skew[h] = skew_of(s, z, DG_TR_HEAD, h);
			tz->cylinder_skew[h] = skew_of(s, z, DG_TR_CYL, h);
		}
	}
	*out = t;
	return 0;
}

void dg_geometry_truth_free(struct dg_geometry_truth *t)
{
	if (t)
		free(t->zones);
	free(t);
}

const struct dg_geometry_truth_zone *dg_geometry_truth_zone_at(const struct dg_geometry_truth *t,
							       uint64_t at)
{
	for (size_t i = 0; i < t->nzones; i++)
		if (at >= t->zones[i].start_bytes && at < t->zones[i].end_bytes)
			return &t->zones[i];
	return NULL;
}

/* Skew figure x against the truth's per-surface skews: within 1 sector of one of them (a median
 * over surfaces of different sizes is one surface's skew). */
static void score_skew(double x, const uint32_t *v, unsigned n, struct dg_geometry_score *s)
{
	if (isnan(x))
		return;
	s->skews++;
	for (unsigned h = 0; h < n; h++)
		if (fabs(x - v[h]) <= 1.0 + 1e-6) {
			s->skews_within1++;
			return;
		}
}

/* Sizes against the truth's from surface `rot` on: exact (2), within 1 (1), or not (0). */
static int sizes_match(const struct dg_geometry_place *p, const struct dg_geometry_truth_zone *z,
		       unsigned rot)
{
	int m = 2;

	for (unsigned h = 0; h < z->nsurfaces; h++) {
		double d = fabs((double)p->spt[h] - (double)z->spt[(h + rot) % z->nsurfaces]);
		m = d == 0 ? m : d <= 1 ? (m ? 1 : 0) : 0;
	}
	return m;
}

static void score_place(const struct dg_geometry_place *p, const struct dg_geometry_truth_zone *z,
			struct dg_geometry_score *s)
{
	int best = 0;

	/* a place that could not tell where head 0 is (the head switch costs what a cylinder
	 * step costs) reports its surfaces in walk order: any rotation of the truth's order */
	for (unsigned rot = 0; p->nsurfaces == z->nsurfaces && rot < z->nsurfaces; rot++) {
		int m = sizes_match(p, z, rot);
		best = m > best ? m : best;
		if (p->aligned)
			break;
	}
	s->unaligned += !p->aligned;
	s->size_exact += best == 2;
	s->size_within1 += best >= 1;
	score_skew(p->track_skew, z->track_skew, z->nsurfaces, s);
	score_skew(p->cylinder_skew, z->cylinder_skew, z->nsurfaces, s);
}

void dg_geometry_score(const struct dg_geometry_result *r, const struct dg_geometry_truth *t,
		       struct dg_geometry_score *s)
{
	memset(s, 0, sizeof(*s));
	s->places = (unsigned)r->nplaces;
	for (size_t i = 0; i < r->nplaces; i++) {
		const struct dg_geometry_place *p = &r->places[i];
		const struct dg_geometry_truth_zone *z =
		    dg_geometry_truth_zone_at(t, p->offset_bytes);
		if (!p->ok || !z)
			continue;
		s->places_ok++;
		score_place(p, z, s);
	}
	s->heads_ok = r->heads == t->heads;
	s->layout_ok =
	    r->layout == (t->serpentine ? DG_GEO_LAYOUT_SERPENTINE : DG_GEO_LAYOUT_CYLINDER);
	s->band_ok = t->serpentine ? abs((int)r->band_tracks - (int)t->band_tracks) <= 1 : -1;
	s->head_switch_err_ms = r->head_switch_ms - t->head_switch_ms;
	s->head_switch_ok = isnan(r->head_switch_ms) ? -1 : fabs(s->head_switch_err_ms) <= 0.1;
}
