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

/* The zone change into zone z (after zone p): the skew a read measures across it, in z's
 * logical sectors. The last physical sector of p's last track ends where that track's sector 0
 * sits (alpha_last), the first of z ends 1/S (physical) after angle 0: the jump between the two
 * ends, in z's first track's physical sectors, less one (Wong 2019's skew, as geo_skew reads
 * it), in logical sectors. */
static double zone_change_skew(const struct dg_spec *s, const struct dg_zone *p,
			       const struct dg_zone *z)
{
	double S = (double)z->hspt[0] / s->phys_ratio;
	double a = dg_zone_sector_angle(s, p, p->tracks - 1, 0);
	double jump = fmod(1 / S - a + 2, 1.0);

	return (jump * S - 1) * s->phys_ratio;
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
		tz->zone_change_skew = i ? zone_change_skew(s, &s->zones[i - 1], z) : NAN;
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
static int sizes_match(const uint32_t *spt, const struct dg_geometry_truth_zone *z, unsigned rot)
{
	int m = 2;

	for (unsigned h = 0; h < z->nsurfaces; h++) {
		double d = fabs((double)spt[h] - (double)z->spt[(h + rot) % z->nsurfaces]);
		m = d == 0 ? m : d <= 1 ? (m ? 1 : 0) : 0;
	}
	return m;
}

/* The best match of n sizes against z's: 2 exact, 1 within one sector, 0 not. Sizes not known
 * to start at head 0 (the head switch costs what a cylinder step costs) are in walk order: any
 * rotation of the truth's order. */
static int best_match(unsigned n, const uint32_t *spt, bool aligned,
		      const struct dg_geometry_truth_zone *z)
{
	int best = 0;

	for (unsigned rot = 0; n == z->nsurfaces && rot < z->nsurfaces; rot++) {
		int m = sizes_match(spt, z, rot);
		best = m > best ? m : best;
		if (aligned)
			break;
	}
	return best;
}

static void score_place(const struct dg_geometry_place *p, const struct dg_geometry_truth_zone *z,
			struct dg_geometry_score *s)
{
	int best = best_match(p->nsurfaces, p->spt, p->aligned, z);

	s->unaligned += !p->aligned;
	s->size_exact += best == 2;
	s->size_within1 += best >= 1;
	score_skew(p->track_skew, z->track_skew, z->nsurfaces, s);
	score_skew(p->cylinder_skew, z->cylinder_skew, z->nsurfaces, s);
}

static bool same_truth(const struct dg_geometry_truth_zone *a,
		       const struct dg_geometry_truth_zone *b)
{
	return a->nsurfaces == b->nsurfaces &&
	       !memcmp(a->spt, b->spt, a->nsurfaces * sizeof(a->spt[0]));
}

static uint64_t track_bytes(const struct dg_geometry_truth *t,
			    const struct dg_geometry_truth_zone *z)
{
	uint32_t m = 0;

	for (unsigned h = 0; h < z->nsurfaces; h++)
		m = z->spt[h] > m ? z->spt[h] : m;
	return (uint64_t)m * t->sector_bytes;
}

/* The truth's boundary into zone z (after p) against the reported zone starts: within one track,
 * within the reported uncertainty and a track; the zone-change skew within one sector (circular:
 * skews are angles) where the boundary is within a track. */
static void score_bound(const struct dg_geometry_result *r, const struct dg_geometry_truth *t,
			const struct dg_geometry_truth_zone *p,
			const struct dg_geometry_truth_zone *z, struct dg_geometry_score *s)
{
	const struct dg_geometry_zone *best = NULL;
	uint64_t d = UINT64_MAX, trk = track_bytes(t, p) > track_bytes(t, z) ? track_bytes(t, p)
									     : track_bytes(t, z);

	s->bounds++;
	for (size_t k = 1; k < r->nzones; k++) {
		uint64_t a = r->zones[k].start_bytes,
			 e = a > z->start_bytes ? a - z->start_bytes : z->start_bytes - a;
		if (e < d) {
			d = e;
			best = &r->zones[k];
		}
	}
	if (!best)
		return;
	s->bounds_track += d <= trk;
	s->bounds_reported += d <= best->boundary_uncertainty_bytes + trk;
	if (d > trk || isnan(best->zone_change_skew_sectors))
		return;
	double S = z->spt[0], e = fmod(best->zone_change_skew_sectors - z->zone_change_skew, S);
	e = e > S / 2 ? e - S : e < -S / 2 ? e + S : e;
	s->zskews++;
	s->zskews_within1 += fabs(e) <= 1.0 + 1e-6;
}

static const struct dg_geometry_zone *zone_at(const struct dg_geometry_result *r, uint64_t at)
{
	for (size_t k = 0; k < r->nzones; k++)
		if (at >= r->zones[k].start_bytes && at < r->zones[k].end_bytes)
			return &r->zones[k];
	return NULL;
}

/* Every truth zone (neighbours of the same sizes as one) against the reported zones. */
static void score_zones(const struct dg_geometry_result *r, const struct dg_geometry_truth *t,
			struct dg_geometry_score *s)
{
	for (size_t i = 0; i < t->nzones;) {
		size_t j = i + 1;
		while (j < t->nzones && same_truth(&t->zones[i], &t->zones[j]))
			j++;
		const struct dg_geometry_truth_zone *z = &t->zones[i];
		const struct dg_geometry_zone *m =
		    zone_at(r, z->start_bytes + (t->zones[j - 1].end_bytes - z->start_bytes) / 2);
		s->zones++;
		if (m && m->nsurfaces) {
			int b = best_match(m->nsurfaces, m->spt, m->surface_order_known, z);
			s->zones_sized++;
			s->zones_exact += b == 2;
			s->zones_within1 += b >= 1;
		}
		if (i)
			score_bound(r, t, &t->zones[i - 1], z, s);
		i = j;
	}
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
	score_zones(r, t, s);
	s->heads_ok = r->heads == t->heads;
	s->layout_ok =
	    r->layout == (t->serpentine ? DG_GEO_LAYOUT_SERPENTINE : DG_GEO_LAYOUT_CYLINDER);
	s->band_ok = t->serpentine ? abs((int)r->band_tracks - (int)t->band_tracks) <= 1 : -1;
	s->head_switch_err_ms = r->head_switch_ms - t->head_switch_ms;
	s->head_switch_ok = isnan(r->head_switch_ms) ? -1 : fabs(s->head_switch_err_ms) <= 0.1;
}
