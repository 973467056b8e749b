/* SPDX-License-Identifier: MIT */
/*
 * From places to figures: neighbouring places with the same track sizes are one zone (its
 * boundaries lie between the last place of one and the first of the next, and say how far they
 * may be off); the surfaces, layout and band are what most places agree on; the head switch and
 * the one-cylinder step are the intersection of what every place's skews allow.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "geometry_place.h"
#include "geometry_zones.h"

bool geo_same_sizes(const struct dg_geometry_place *a, const struct dg_geometry_place *b)
{
	return a->nsurfaces == b->nsurfaces &&
	       !memcmp(a->spt, b->spt, a->nsurfaces * sizeof(a->spt[0]));
}

/* True when two places show one zone: the same sizes, or, where one of them lists its sizes in
 * walk order (head 0 not identified), the same sizes in another cyclic order. */
static bool same_zone(const struct dg_geometry_place *a, const struct dg_geometry_place *b)
{
	unsigned n = a->nsurfaces;

	if (geo_same_sizes(a, b))
		return true;
	if ((a->aligned && b->aligned) || n != b->nsurfaces)
		return false;
	for (unsigned rot = 1; rot < n; rot++) {
		unsigned h = 0;
		while (h < n && a->spt[h] == b->spt[(h + rot) % n])
			h++;
		if (h == n)
			return true;
	}
	return false;
}

/* The median over the places of their head switch (hs) or cylinder step; NAN when none. */
static double move_median(const struct dg_geometry_result *r, bool hs)
{
	double v[DG_GEOMETRY_MAX_PLACES];
	unsigned n = 0;

	for (size_t i = 0; i < r->nplaces; i++) {
		double x = hs ? r->places[i].hs_ms : r->places[i].step_ms;
		if (r->places[i].ok && isfinite(x))
			v[n++] = x;
	}
	return geo_median(v, n);
}

/* The sustained rate the geometry implies: a cylinder (or a band's runs) walked with its skews
 * (track size x rpm / (1 + skew / track size), summed over the surfaces). */
static double model_rate(const struct dg_geometry_result *r, const struct dg_geometry_zone *z)
{
	double bytes = 0, revs = 0;
	bool cyl = r->layout == DG_GEO_LAYOUT_CYLINDER;

	if (!z->nsurfaces || isnan(z->cylinder_skew_sectors))
		return NAN;
	if (cyl && z->nsurfaces > 1 && isnan(z->track_skew_sectors))
		return NAN;
	for (unsigned h = 0; h < z->nsurfaces; h++) {
		double k = cyl && h ? z->track_skew_sectors : z->cylinder_skew_sectors;
		bytes += (double)z->spt[h] * r->sector_bytes;
		revs += 1 + k / z->spt[h];
	}
	return bytes / (revs * r->period_ms / 1e3) / DG_MB;
}

/* The median skew over places a..b that show place rep's sizes in its order. */
static double median_field(const struct dg_geometry_result *r, size_t a, size_t b, size_t rep,
			   bool track)
{
	double v[DG_GEOMETRY_MAX_PLACES];
	unsigned n = 0;

	for (size_t i = a; i < b; i++) {
		const struct dg_geometry_place *p = &r->places[i];
		double x = track ? p->track_skew : p->cylinder_skew;
		if (p->ok && geo_same_sizes(p, &r->places[rep]) && !isnan(x))
			v[n++] = x;
	}
	return geo_median(v, n);
}

/* The figure most ok places agree on (heads, layout, band). */
static unsigned mode_of(const struct dg_geometry_result *r,
			unsigned (*f)(const struct dg_geometry_place *))
{
	unsigned best = 0, bestn = 0;

	for (size_t i = 0; i < r->nplaces; i++) {
		unsigned v = f(&r->places[i]), n = 0;
		if (!r->places[i].ok || !v)
			continue;
		for (size_t j = 0; j < r->nplaces; j++)
			n += r->places[j].ok && f(&r->places[j]) == v;
		if (n > bestn) {
			best = v;
			bestn = n;
		}
	}
	return best;
}

static unsigned f_heads(const struct dg_geometry_place *p)
{
	return p->nsurfaces;
}
static unsigned f_layout(const struct dg_geometry_place *p)
{
	return (unsigned)p->layout;
}
static unsigned f_band(const struct dg_geometry_place *p)
{
	return p->band_tracks;
}

static void zone_fill(const struct geo *g, struct dg_geometry_result *r, size_t a, size_t b,
		      struct dg_geometry_zone *z)
{
	/* the sizes (and the skews of the places that show them) of the first place that knows
	 * head 0, else the first's */
	size_t rep = a;
	while (rep < b && !(r->places[rep].ok && r->places[rep].aligned))
		rep++;
	rep = rep < b ? rep : a;
	const struct dg_geometry_place *p = &r->places[rep];

	z->nsurfaces = p->nsurfaces;
	z->surface_order_known = p->aligned;
	memcpy(z->spt, p->spt, sizeof(z->spt));
	z->track_skew_sectors = median_field(r, a, b, rep, true);
	z->cylinder_skew_sectors = median_field(r, a, b, rep, false);
	double mean = 0;
	for (unsigned h = 0; h < z->nsurfaces; h++)
		mean += (double)z->spt[h] / z->nsurfaces;
	z->track_skew_degrees = z->track_skew_sectors / mean * 360;
	z->cylinder_skew_degrees = z->cylinder_skew_sectors / mean * 360;
	for (size_t i = a; i < b; i++)
		z->places += r->places[i].ok;
	z->model_mb_per_s = model_rate(r, z);
	(void)g;
}

/* The boundary between the zones whose last and first places are at `last` and `next`
 * (bytes): the bound searched between them, else halfway (the uncertainty: half the gap). The
 * zone-change skew into the inner zone goes to *z. */
static uint64_t boundary(const struct geo *g, const struct dg_geometry_result *r,
			 const struct geo_bounds *bs, uint64_t last, uint64_t next, uint64_t *unc,
			 struct dg_geometry_zone *z)
{
	uint64_t lo = last, hi = next;

	for (size_t k = 0; bs && k < bs->n; k++) {
		const struct geo_bound *b = &bs->v[k];
		/* (a serpentine zone's place lies at its first sector: the bound into it is not
		 * the one after it) */
		/* (a bound whose ends crossed joins two places of one zone, one of them in walk
		 * order: no boundary) */
		if (b->a == GEO_NO_PLACE || b->b == GEO_NO_PLACE || b->lo * g->psec < last ||
		    b->hi * g->psec > next || b->hi * g->psec == last || b->lo > b->hi)
			continue;
		lo = b->lo * g->psec;
		hi = b->hi * g->psec;
		if (lo == hi && !isnan(b->skew)) {
			z->zone_change_skew_sectors = b->skew * g->u;
			z->zone_change_skew_degrees = b->skew / b->first * 360;
		}
		break;
	}
	*unc = (hi - lo + 1) / 2;
	return (lo + hi) / 2 / r->sector_bytes * r->sector_bytes;
}

int geo_zones_build(const struct geo *g, struct dg_geometry_result *r, const struct geo_bounds *bs)
{
	size_t *ok = calloc(r->nplaces + 1, sizeof(*ok)), n = 0;

	if (!ok)
		return -ENOMEM;
	for (size_t i = 0; i < r->nplaces; i++)
		if (r->places[i].ok)
			ok[n++] = i;
	r->heads = mode_of(r, f_heads);
	r->layout = (enum dg_geometry_layout)mode_of(r, f_layout);
	r->band_tracks = r->layout == DG_GEO_LAYOUT_SERPENTINE ? mode_of(r, f_band) : 0;
	r->head_switch_ms = move_median(r, true);
	r->track_to_track_ms = move_median(r, false);
	r->zones = calloc(n ? n : 1, sizeof(*r->zones));
	if (!r->zones) {
		free(ok);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		r->zones[i].zone_change_skew_sectors = r->zones[i].zone_change_skew_degrees = NAN;
	uint64_t start = r->params.range_start_bytes, u0 = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && same_zone(&r->places[ok[i]], &r->places[ok[j]]))
			j++;
		struct dg_geometry_zone *z = &r->zones[r->nzones++];
		uint64_t last = r->places[ok[j - 1]].offset_bytes, u1 = 0, end;
		/* the range's ends are only known to lie before the first place, after the last */
		if (!i)
			u0 = r->places[ok[i]].offset_bytes - start;
		if (j < n) {
			end = boundary(g, r, bs, last, r->places[ok[j]].offset_bytes, &u1, z + 1);
		} else {
			end = r->params.range_end_bytes;
			u1 = end - last;
		}
		z->start_bytes = start;
		z->end_bytes = end;
		z->boundary_uncertainty_bytes = u0 > u1 ? u0 : u1;
		zone_fill(g, r, ok[i], ok[j - 1] + 1, z);
		start = end;
		u0 = u1;
		i = j;
	}
	free(ok);
	return 0;
}
