/* SPDX-License-Identifier: MIT */
/*
 * The zone search. Between two places whose track sizes differ, the boundary of their zones is
 * found by bisection on the size of the track found near a sector, down to the inner zone's first
 * track; a size of neither zone is a zone between them, which gets a place of its own and two
 * boundaries to search; a size that is a multiple (or near multiple) of a known one is a missed
 * or slipped boundary until a second walk elsewhere confirms it. At a boundary found to the
 * sector, the zone-change skew is the phase jump into the inner zone's first track. The widest
 * bound is narrowed first until all are below 1/256 of the range (a zone hidden between two
 * places is met before any bound is narrowed further), then each in turn down to the sector.
 * Edge bounds (the range's start to the first place, the last place to the end) take one walk
 * at that end: the known zone reaches it, or a zone lies there.
 * Method: zone search by track size with the slipped-sector-multiple guard, Gim & Won 2010;
 * each track from Wong 2019's boundary bisection (geometry_probe.c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "geometry_place.h"
#include "geometry_zcyl.h"
#include "geometry_zones.h"

#define TEST_FAILS 8u /* unusable or contradictory tests before a boundary is left as it is */
#define NO_PLACE   GEO_NO_PLACE
#define PAIRS_WALK 6u /* tracks walked at most where one size is no evidence (pairs are) */

/* The distinct track sizes of a zone, in physical sectors. */
struct zs_set {
	unsigned n;
	uint32_t v[DG_GEOMETRY_MAX_HEADS];
};

struct zs_pair {
	struct zs_set A, B;
	uint32_t cycle[2 * DG_GEOMETRY_MAX_HEADS]; /* both, the candidates of every track's end */
	unsigned ncycle;
	unsigned walk; /* tracks a walk may need to meet a size of one zone only */
	bool uniform;  /* every place measured shows one size on all its surfaces */
	size_t model;  /* A's place, else B's: the shape of a zone sized from its tracks */
	/* a wide bound where surfaces differ on a cylinder layout: a track is A's or B's only
	 * with a neighbour in that zone's walk order (sa, sb; geometry_zcyl.c) */
	bool pairs;
	unsigned run; /* tracks in walk order that tell (geo_cyl_of()) */
	struct geo_cyl_seq sa, sb;
};

/* The breadth-first search's width: zones narrower than 1/256 of the range are not looked for
 * first (drives have up to ~60). */
static uint64_t zone_width(const struct geo *g)
{
	return (g->npsec - g->lo_psec) / 256;
}

static bool in_set(const struct zs_set *s, uint32_t x)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->v[i] == x)
			return true;
	return false;
}

/* The sizes of place i; none for NO_PLACE (the range's end side of an edge bound). */
static void set_of(const struct geo *g, const struct dg_geometry_result *r, size_t i,
		   struct zs_set *s)
{
	s->n = 0;
	for (unsigned h = 0; i != NO_PLACE && h < r->places[i].nsurfaces; h++)
		if (!in_set(s, r->places[i].spt[h] / g->u))
			s->v[s->n++] = r->places[i].spt[h] / g->u;
}

static unsigned surfaces_of(const struct dg_geometry_result *r, size_t i)
{
	return i == NO_PLACE ? 0 : r->places[i].nsurfaces;
}

static void pair_of(const struct geo *g, const struct dg_geometry_result *r,
		    const struct geo_bound *b, struct zs_pair *z)
{
	set_of(g, r, b->a, &z->A);
	set_of(g, r, b->b, &z->B);
	z->ncycle = 0;
	for (unsigned i = 0; i < z->A.n; i++)
		z->cycle[z->ncycle++] = z->A.v[i];
	for (unsigned i = 0; i < z->B.n; i++)
		if (!in_set(&z->A, z->B.v[i]))
			z->cycle[z->ncycle++] = z->B.v[i];
	unsigned h = surfaces_of(r, b->a) > surfaces_of(r, b->b) ? surfaces_of(r, b->a)
								 : surfaces_of(r, b->b);
	z->walk = h + 2 < GEO_MAX_WALK ? h + 2 : GEO_MAX_WALK;
	z->model = b->a != NO_PLACE ? b->a : b->b;
	z->uniform = true;
	for (size_t i = 0; i < r->nplaces; i++) {
		const struct dg_geometry_place *p = &r->places[i];
		for (unsigned j = 1; p->ok && j < p->nsurfaces; j++)
			z->uniform = z->uniform && p->spt[j] == p->spt[0];
	}
	z->sa.n = z->sb.n = 0;
	if (b->a != NO_PLACE)
		geo_cyl_seq_of(g, &r->places[b->a], &z->sa);
	if (b->b != NO_PLACE)
		geo_cyl_seq_of(g, &r->places[b->b], &z->sb);
	/* narrower than three cylinders: no zone fits between (one size tells) */
	uint64_t cyl = 0;
	for (unsigned i = 0; i < z->ncycle; i++)
		cyl = z->cycle[i] > cyl ? z->cycle[i] : cyl;
	cyl *= h;
	z->pairs = (z->A.n > 1 || z->B.n > 1) &&
		   r->places[z->model].layout == DG_GEO_LAYOUT_CYLINDER && b->hi - b->lo > 3 * cyl;
	/* three while a zone may lie between (wider than the breadth-first search's width): a
	 * pair of it often follows in A's or B's walk order too (zoo 35: 15 surfaces, ~10 sizes
	 * a zone, neighbours a sector or two apart), and the search would pass it by; two in
	 * the narrower bounds, whose walks cost the most */
	z->run = b->hi - b->lo > zone_width(g) ? 3 : 2;
}

/* A place for a zone the search found, sized from its tracks alone, in the shape of place m (no
 * skews): `aligned`: one size spt[0] on every surface (every place measured shows one size on
 * all its surfaces, so do the zones between them); else spt[] holds one cylinder's sizes in walk
 * order (head 0 not known). Appended to r->places. 0 or -ENOMEM. */
static int sized_place(const struct geo *g, struct dg_geometry_result *r, size_t m, uint64_t x,
		       const uint32_t *spt, bool aligned, unsigned tracks, unsigned probes)
{
	struct dg_geometry_place p = r->places[m];
	struct dg_geometry_place *v = realloc(r->places, (r->nplaces + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	r->places = v;
	p.offset_bytes = x * g->psec;
	for (unsigned h = 0; h < p.nsurfaces; h++)
		p.spt[h] = spt[aligned ? 0 : h] * g->u;
	p.track_skew = p.cylinder_skew = p.hs_ms = p.step_ms = NAN;
	p.aligned = aligned;
	p.tracks = tracks;
	p.probes = probes;
	p.note[0] = 0;
	r->places[r->nplaces++] = p;
	return 0;
}

int geo_bound_add(struct geo_bounds *bs, const struct dg_geometry_result *r,
		  const struct geo_bound *b)
{
	if (bs->n == bs->cap) {
		size_t cap = bs->cap + r->nplaces + 16;
		struct geo_bound *v = realloc(bs->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		bs->v = v;
		bs->cap = cap;
	}
	bs->v[bs->n++] = *b;
	return 0;
}

/* A multiple or near multiple (2%) of a size of `s`, or a size of `s` one of it. */
static bool near_multiple(const struct zs_set *s, uint32_t x)
{
	for (unsigned i = 0; i < s->n; i++)
		for (unsigned k = 2; k <= 4; k++) {
			double a = s->v[i];
			if (fabs(x - k * a) <= 0.02 * k * a || fabs(k * (double)x - a) <= 0.02 * a)
				return true;
		}
	return false;
}

/* Reads walked tracks t[0..n) against A and B: narrows b, or sets *fresh to the first track of
 * neither. 0, or 1 when they contradict the bound (an A track after a B one, or outside it). */
static int classify(const struct zs_pair *z, const struct geo_track *t, unsigned n,
		    struct geo_bound *b, bool *moved, const struct geo_track **fresh)
{
	uint64_t lo = b->lo, hi = b->hi;
	uint32_t first = b->first;
	bool seen_b = false;

	for (unsigned i = 0; i < n; i++) {
		bool a = in_set(&z->A, t[i].size), bb = in_set(&z->B, t[i].size);
		uint64_t end = t[i].start + t[i].size;
		if (!a && !bb) {
			*fresh = &t[i];
			return 0;
		}
		if (z->pairs) {
			a = geo_cyl_of(&z->sa, t, n, i, z->run);
			bb = geo_cyl_of(&z->sb, t, n, i, z->run);
		} else if (a && bb && z->sa.n && z->sb.n) {
			/* a size of both zones (their surfaces' sizes overlap): a pair in one's
			 * walk order tells (no zone lies between in a narrow bound) */
			a = geo_cyl_of(&z->sa, t, n, i, 2);
			bb = geo_cyl_of(&z->sb, t, n, i, 2);
		}
		if (a && !bb && (seen_b || end > hi))
			return 1;
		if (a && !bb && end > lo)
			lo = end;
		if (!a && bb && !seen_b) {
			seen_b = true;
			if (t[i].start < lo)
				return 1;
			if (t[i].start < hi) {
				hi = t[i].start;
				first = t[i].size;
			}
		}
	}
	*moved = lo != b->lo || hi != b->hi;
	b->lo = lo;
	b->hi = hi;
	b->first = first;
	return 0;
}

/* Walks from the first boundary at or after y and narrows b (*moved), or finds a track of
 * neither zone (*fresh, its start; *fsize). 0, 1 (unusable), 2 or -errno. */
static int test_at(struct geo *g, const struct zs_pair *z, struct geo_bound *b, uint64_t y,
		   bool *moved, uint64_t *fresh, uint32_t *fsize)
{
	struct geo_track t[GEO_MAX_WALK + 1];
	const struct geo_track *f = NULL;
	const char *why;
	unsigned n = 0;

	*moved = false;
	*fresh = 0;
	/* a short walk first (z->run sizes where one is no evidence: geo_cyl_of()), then a
	 * cylinder */
	for (unsigned pass = 0; pass < 2; pass++) {
		unsigned max = pass ? z->walk + 1 : z->pairs ? z->run + 1 : 2;
		uint32_t hint = z->A.n ? z->A.v[0] : z->B.v[0];
		int rc = z->pairs ? geo_cyl_walk(g, &z->sa, &z->sb, y - 1, hint, t,
						 pass ? PAIRS_WALK : max, &n)
				  : geo_walk(g, y - 1, hint, z->cycle, z->ncycle, t, max, &n, &why);
		if (rc)
			return rc;
		rc = classify(z, t, n, b, moved, &f);
		if (rc || f) {
			*fresh = f ? f->start : 0;
			*fsize = f ? f->size : 0;
			return rc;
		}
		if (*moved)
			return 0;
	}
	/* a cylinder's worth of tracks, none of either zone by a pair: a zone of neither, whose
	 * sizes each are some surface's of theirs (cylinder_place() tells) */
	bool any = !z->pairs || n < 3;
	for (unsigned i = 0; i < n && !any; i++)
		any = geo_cyl_of(&z->sa, t, n, i, z->run) || geo_cyl_of(&z->sb, t, n, i, z->run);
	if (!any) {
		*fresh = t[0].start;
		*fsize = t[0].size;
	}
	return 0;
}

/* A zone of per-surface sizes on a cylinder layout, found at *x (a track of size *s): one
 * cylinder walked from there with each track's end predicted from the model place's sizes
 * (geometry_zcyl.c) is the zone's sizes in walk order (a full place costs twice the tracks and
 * the skews; *sized is set); when its sizes do not repeat (a noisy track, a boundary crossed),
 * once more a few cylinders on (*x and *s then name that cylinder's first track); else a full
 * place (`add`). 0, 2 or -errno. */
static int cylinder_place(struct geo *g, struct dg_geometry_result *r, const struct zs_pair *z,
			  uint64_t *x, uint32_t *s, geo_add_place_fn add, void *arg, bool *sized)
{
	const struct dg_geometry_place *m = &r->places[z->model];
	uint32_t spt[DG_GEOMETRY_MAX_HEADS], model[DG_GEOMETRY_MAX_HEADS];
	unsigned H = m->nsurfaces, p0 = g->probes, n;
	struct geo_track t[2];
	const char *why;

	if (m->layout != DG_GEO_LAYOUT_CYLINDER || H < 2)
		return add(g, r, *x, arg);
	for (unsigned h = 0; h < H; h++)
		model[h] = m->spt[h] / g->u;
	int rc = geo_cyl_size(g, model, H, *x, *s, spt);
	if (rc == 1 && (rc = geo_walk(g, *x + 3 * H * *s, *s, NULL, 0, t, 2, &n, &why)) == 0) {
		*x = t[0].start;
		*s = t[0].size;
		rc = geo_cyl_size(g, model, H, *x, *s, spt);
	}
	if (rc == 2 || rc < 0)
		return rc;
	if (rc)
		return add(g, r, *x, arg);
	*sized = true;
	return sized_place(g, r, z->model, *x, spt, false, H + 1, g->probes - p0);
}

/* A track of neither zone at `x` (size s): re-checked when it is a multiple of a known size,
 * then a place there; the bound splits in two when that place shows a third zone. *split is
 * set then. 0, 1 (not a zone: the test was wrong), 2 or -errno. */
static int new_zone(struct geo *g, struct dg_geometry_result *r, const struct zs_pair *z,
		    struct geo_bounds *bs, size_t k, uint64_t x, uint32_t s, geo_add_place_fn add,
		    void *arg)
{
	bool light = z->uniform && z->model != NO_PLACE;
	unsigned p0 = g->probes;
	if (light || near_multiple(&z->A, s) || near_multiple(&z->B, s)) {
		/* the next track must show it again (sized from tracks alone: the same size) */
		struct geo_bound c = bs->v[k];
		bool moved;
		uint64_t again = 0;
		uint32_t s2 = 0;
		int rc = test_at(g, z, &c, x + s / 3 + 1, &moved, &again, &s2);
		if (rc || !again || (light && s2 != s))
			return rc == 2 || rc < 0 ? rc : 1;
		x = light ? x : again;
		s = light ? s : s2;
	}
	bool sized = light;
	int rc = light ? sized_place(g, r, z->model, x, &s, true, 2, g->probes - p0)
		       : cylinder_place(g, r, z, &x, &s, add, arg, &sized);
	if (rc)
		return rc;
	if (sized) {
		uint64_t *v = realloc(bs->sized, (bs->nsized + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		bs->sized = v;
		bs->sized[bs->nsized++] = x * g->psec;
	}
	size_t c = r->nplaces - 1;
	struct dg_geometry_place *p = &r->places[c];
	struct geo_bound *b = &bs->v[k];
	struct zs_set sz;
	set_of(g, r, c, &sz);
	if (p->ok && !in_set(&sz, s)) {
		/* its walk left the zone (a narrow zone, a serpentine band across its end) */
		p->ok = false;
		snprintf(
		    p->note, sizeof(p->note),
		    "the zone search found a track of %u sectors here that this place does not "
		    "show",
		    s * g->u);
	}
	if (!p->ok || (b->a != NO_PLACE && geo_same_sizes(p, &r->places[b->a])) ||
	    (b->b != NO_PLACE && geo_same_sizes(p, &r->places[b->b])))
		return 1;
	struct geo_bound inner = {
	    .lo = x + s, .hi = b->hi, .a = c, .b = b->b, .skew = NAN, .top = b->hi};
	rc = geo_bound_add(bs, r, &inner);
	if (rc)
		return rc;
	b = &bs->v[k];
	*b = (struct geo_bound){.lo = b->lo, .hi = x, .a = b->a, .b = c, .skew = NAN, .top = x};
	return 0;
}

/* True when bound b is narrower than three cylinders of its zones: its walks meet the zone
 * change, whose phase jump may be as small as a sector (a zone's first track starts at angle
 * 0), not only the moves' jumps that the search's probes per phase are set for. */
static bool narrow(const struct geo *g, const struct dg_geometry_result *r,
		   const struct geo_bound *b)
{
	uint64_t cyl = 0;

	for (unsigned i = 0; i < 2; i++) {
		size_t m = i ? b->b : b->a;
		for (unsigned h = 0; m != NO_PLACE && h < r->places[m].nsurfaces; h++)
			cyl += r->places[m].spt[h] / g->u;
	}
	return b->hi - b->lo < 3 * cyl;
}

/* The reference near bound b's middle, the probe noise there, and the probes per phase that
 * tell its zones' track boundaries apart. 0, 1, 2, -errno. */
static int search_begin(struct geo *g, const struct dg_geometry_result *r, struct geo_bounds *bs,
			size_t k)
{
	const struct geo_bound *b = &bs->v[k];
	uint64_t y = b->lo + (b->hi - b->lo) / 2;
	size_t m = b->a != NO_PLACE ? b->a : b->b;

	geo_place_begin(g, y);
	int rc = geo_calibrate(g, y);
	if (rc == 0)
		geo_cyl_repeats(g, narrow(g, r, b) ? NAN : geo_cyl_min_move_ms(r),
				r->places[m].spt[0] / g->u, &bs->noise);
	return rc;
}

/* An edge bound (the range's start or end on one side): the track at that end is of the known
 * zone (the bound closes: no zone lies beyond the place) or of another (a zone there, which gets
 * a place and a bound to search). 0, 1, 2, -errno; *split as step(). */
static int edge_step(struct geo *g, struct dg_geometry_result *r, struct geo_bounds *bs, size_t k,
		     const struct zs_pair *z, geo_add_place_fn add, void *arg, bool *split)
{
	struct geo_bound *b = &bs->v[k];
	bool end = b->b == NO_PLACE;
	const struct zs_set *known = end ? &z->A : &z->B;
	struct geo_track t[4];
	const char *why;
	unsigned n = 0, i = 0;
	uint64_t y = (end ? b->hi : b->lo + 1) - 1;
	int rc = z->pairs ? geo_cyl_walk(g, &z->sa, &z->sb, y, known->v[0], t, z->run + 1, &n)
			  : geo_walk(g, y, known->v[0], z->cycle, z->ncycle, t, 2, &n, &why);

	if (rc == 0 && (z->pairs ? geo_cyl_of(end ? &z->sa : &z->sb, t, n, 0, z->run)
				 : in_set(known, t[0].size))) {
		b->lo = b->hi;
		return 0;
	}
	/* a size of the known zone out of its walk order: the next track is the other zone's */
	i = z->pairs && in_set(known, t[0].size);
	if (rc == 0 && (i >= n || in_set(known, t[i].size)))
		rc = 1;
	if (rc == 0)
		rc = new_zone(g, r, z, bs, k, t[i].start, t[i].size, add, arg);
	*split = rc == 0;
	bs->v[k].fails += rc == 1;
	return rc;
}

/* One bisection step on bound k (its reference begun near it). 0, 1 (the test failed), 2,
 * -errno; *split: a zone found inside it (bound k is to be searched again). */
static int step(struct geo *g, struct dg_geometry_result *r, struct geo_bounds *bs, size_t k,
		geo_add_place_fn add, void *arg, bool *split)
{
	struct geo_bound *b = &bs->v[k];
	struct zs_pair z;
	bool moved = false;
	uint64_t fresh = 0;
	uint32_t fs = 0;

	pair_of(g, r, b, &z);
	if (b->a == NO_PLACE || b->b == NO_PLACE)
		return edge_step(g, r, bs, k, &z, add, arg, split);
	if (b->top <= b->lo || b->top > b->hi)
		b->top = b->hi;
	uint64_t y = b->lo + (b->top - b->lo) / 2;
	/* at lo, the walk's first track would be the one after lo, whose size both zones may
	 * have and no pair places: from the outer zone's track that ends at lo instead */
	uint64_t at = y;
	if (y == b->lo && (z.A.n > 1 || z.B.n > 1) && z.sa.n && z.sb.n) {
		uint32_t big = 0;
		for (unsigned i = 0; i < z.A.n; i++)
			big = z.A.v[i] > big ? z.A.v[i] : big;
		at = b->lo > big ? b->lo - big : b->lo;
	}
	int rc = test_at(g, &z, b, at, &moved, &fresh, &fs);
	if (rc == 0 && fresh) {
		rc = new_zone(g, r, &z, bs, k, fresh, fs, add, arg);
		*split = rc == 0;
		if (rc != 1)
			return rc;
		b = &bs->v[k];
	}
	if (rc == 2 || rc < 0)
		return rc;
#ifdef GEO_ZTRACE
	fprintf(stderr, "step k=%zu y=%llu rc=%d moved=%d lo=%llu hi=%llu fails=%u t=%.1f\n", k,
		(unsigned long long)y, rc, moved, (unsigned long long)b->lo,
		(unsigned long long)b->hi, b->fails, seek_ctx_used_ns(&g->s) / 1e9);
#endif
	b->fails += rc == 1 || (!moved && y == b->lo);
	if (rc == 1 || !moved)
		b->top = y;
	return rc;
}

int geo_bound_skew(struct geo *g, struct geo_bound *b)
{
	struct geo_track t = {.start = b->hi, .size = b->first};
	double v[3];
	unsigned n = 0;

	if (b->hi != b->lo || !b->first || !isnan(b->skew))
		return 0;
	for (unsigned i = 0; i < 3; i++) {
		int rc = geo_skew(g, &t, 4, &v[n]);
		if (rc == 2 || rc < 0)
			return rc;
		n += rc == 0;
	}
	/* a skew near a whole turn may read as -1 + e on one side and S - 1 - e on the other */
	for (unsigned i = 1; i < n; i++)
		if (fabs(v[i] - v[0]) > b->first / 2.0)
			v[i] += v[i] < v[0] ? b->first : -(double)b->first;
	b->skew = n ? geo_median(v, n) : NAN;
	return 0;
}

static bool open_bound(const struct geo_bound *b)
{
	return b->hi > b->lo && b->fails < TEST_FAILS;
}

/* Narrows bound k until lo == hi, the time `end_ns` or TEST_FAILS failed tests; then its
 * skew. *split as step(). 0, 2 or -errno. */
static int search_one(struct geo *g, struct dg_geometry_result *r, struct geo_bounds *bs, size_t k,
		      uint64_t end_ns, geo_add_place_fn add, void *arg, bool *split)
{
	int rc = 1;

	*split = false;
	while (open_bound(&bs->v[k]) && seek_ctx_used_ns(&g->s) < end_ns) {
		if (rc == 1) { /* first, or a place or a failed test moved the reference */
			rc = search_begin(g, r, bs, k);
			bs->v[k].fails += rc == 1;
			if (rc == 1)
				continue;
		}
		if (rc == 2 || rc < 0)
			return rc;
		if (narrow(g, r, &bs->v[k]))
			geo_cyl_restore(g, &bs->noise);
		rc = step(g, r, bs, k, add, arg, split);
		if (*split || rc == 2 || rc < 0)
			return rc;
	}
	const struct geo_bound *b = &bs->v[k];
	if (b->hi != b->lo || !b->first || !isnan(b->skew))
		return 0;
	/* a skew to the sector: the probes per phase the noise asks for (the search's tests may
	 * have used fewer); on a 512e drive it is wanted in logical sectors, eighths of the
	 * physical sector a phase resolves: kept only when a second measurement agrees */
	if (!geo_cyl_skew_repeats(g, &bs->noise, b->first * g->u))
		return 0;
	rc = geo_bound_skew(g, &bs->v[k]);
	double once = bs->v[k].skew;
	if (rc || g->u == 1 || isnan(once))
		return rc;
	bs->v[k].skew = NAN;
	rc = geo_bound_skew(g, &bs->v[k]);
	struct geo_bound *c = &bs->v[k];
	if (fabs(geo_wrap((c->skew - once) / c->first)) * c->first * g->u > 0.5)
		c->skew = NAN;
	return rc;
}

/* Breadth first: one step on the widest bound while one is wider than `w` sectors (a zone
 * hidden between two places is met before any bound is narrowed further). 0, 2 or -errno. */
static int search_wide(struct geo *g, struct dg_geometry_result *r, struct geo_bounds *bs,
		       uint64_t w, geo_add_place_fn add, void *arg)
{
	while (!geo_out_of_time(g)) {
		size_t k = SIZE_MAX;
		for (size_t i = 0; i < bs->n; i++)
			if (open_bound(&bs->v[i]) && bs->v[i].hi - bs->v[i].lo > w &&
			    (k == SIZE_MAX ||
			     bs->v[i].hi - bs->v[i].lo > bs->v[k].hi - bs->v[k].lo))
				k = i;
		if (k == SIZE_MAX)
			return 0;
		bool split;
		int rc = search_begin(g, r, bs, k);
		if (rc == 1)
			bs->v[k].fails++; /* no phase lock there (step() counts its own) */
		if (rc == 0)
			rc = step(g, r, bs, k, add, arg, &split);
		if (rc == 2 || rc < 0)
			return rc;
	}
	return 0;
}

static int cmp_place(const void *x, const void *y)
{
	const struct dg_geometry_place *a = x, *b = y;

	return (a->offset_bytes > b->offset_bytes) - (a->offset_bytes < b->offset_bytes);
}

void geo_places_sort(struct dg_geometry_result *r)
{
	qsort(r->places, r->nplaces, sizeof(*r->places), cmp_place);
}

/* The places of bound b's zones again (r->places sorted since): the last ok place at or before
 * lo, the first at or after hi. */
static void bound_places(const struct geo *g, const struct dg_geometry_result *r,
			 struct geo_bound *b)
{
	bool has_a = b->a != NO_PLACE, has_b = b->b != NO_PLACE;

	for (size_t i = 0; i < r->nplaces; i++) {
		const struct dg_geometry_place *p = &r->places[i];
		if (has_a && p->ok && p->offset_bytes <= b->lo * g->psec)
			b->a = i;
		if (has_b && p->ok && p->offset_bytes >= b->hi * g->psec) {
			b->b = i;
			break;
		}
	}
}

/* The edge bounds: from the range's start (past the reference's distance, where places begin) to
 * the first ok place `first`, and from the last `last` to the range's end. 0 or -ENOMEM. */
static int edge_bounds(const struct geo *g, const struct dg_geometry_result *r,
		       struct geo_bounds *bs, size_t first, size_t last)
{
	uint64_t far = GEO_FAR_BYTES / g->psec;

	for (size_t k = 0; k < bs->n; k++)
		if (bs->v[k].a == NO_PLACE || bs->v[k].b == NO_PLACE)
			return 0; /* added by an earlier search */
	if (first == NO_PLACE || g->npsec - g->lo_psec < 4 * far)
		return 0;
	struct geo_bound e[2] = {
	    {.lo = g->lo_psec + far,
	     .hi = r->places[first].offset_bytes / g->psec,
	     .a = NO_PLACE,
	     .b = first},
	    {.lo = r->places[last].offset_bytes / g->psec,
	     .hi = g->npsec - far,
	     .a = last,
	     .b = NO_PLACE},
	};
	for (unsigned i = 0; i < 2; i++) {
		if (e[i].hi <= e[i].lo)
			continue;
		e[i].skew = NAN;
		e[i].top = e[i].hi;
		int rc = geo_bound_add(bs, r, &e[i]);
		if (rc)
			return rc;
	}
	return 0;
}

/* Adds a bound between neighbouring ok places of different sizes (r->places sorted) where
 * none lies between them yet, and the edge bounds. 0 or -ENOMEM. */
static int new_bounds(const struct geo *g, const struct dg_geometry_result *r,
		      struct geo_bounds *bs)
{
	size_t prev = NO_PLACE, first = NO_PLACE;

	for (size_t k = 0; k < bs->n; k++)
		bound_places(g, r, &bs->v[k]);
	for (size_t i = 0; i < r->nplaces; i++) {
		if (!r->places[i].ok)
			continue;
		first = first == NO_PLACE ? i : first;
		uint64_t lo = prev == NO_PLACE ? 0 : r->places[prev].offset_bytes / g->psec,
			 hi = r->places[i].offset_bytes / g->psec;
		bool have = false;
		for (size_t k = 0; k < bs->n && !have; k++)
			have = bs->v[k].lo >= lo && bs->v[k].hi <= hi;
		if (prev != NO_PLACE && !have && !geo_same_sizes(&r->places[prev], &r->places[i])) {
			struct geo_bound b = {
			    .lo = lo, .hi = hi, .a = prev, .b = i, .skew = NAN, .top = hi};
			int rc = geo_bound_add(bs, r, &b);
			if (rc)
				return rc;
		}
		prev = i;
	}
	return edge_bounds(g, r, bs, first, prev);
}

int geo_zone_search(struct geo *g, struct dg_geometry_result *r, geo_add_place_fn add, void *arg,
		    struct geo_bounds *bs)
{
	int rc;

	geo_places_sort(r);
	rc = new_bounds(g, r, bs);
	uint64_t w = zone_width(g);
	if (rc == 0)
		rc = search_wide(g, r, bs, w, add, arg);
	/* then depth first: a boundary found to the sector (and its skew) is worth more than all
	 * of them narrowed a little */
	for (size_t k = 0; rc == 0 && k < bs->n && !geo_out_of_time(g);) {
		bool split;
		rc = search_one(g, r, bs, k, g->budget_end_ns, add, arg, &split);
		k += !split;
	}
	geo_places_sort(r);
	return rc;
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return (a > b) - (a < b);
}

/* The same sizes in any order (a zone sized from one cylinder has them in walk order). */
static bool same_set(const struct dg_geometry_place *a, const struct dg_geometry_place *b)
{
	uint32_t x[DG_GEOMETRY_MAX_HEADS], y[DG_GEOMETRY_MAX_HEADS];

	if (a->nsurfaces != b->nsurfaces)
		return false;
	memcpy(x, a->spt, a->nsurfaces * sizeof(x[0]));
	memcpy(y, b->spt, b->nsurfaces * sizeof(y[0]));
	qsort(x, a->nsurfaces, sizeof(x[0]), cmp_u32);
	qsort(y, b->nsurfaces, sizeof(y[0]), cmp_u32);
	return !memcmp(x, y, a->nsurfaces * sizeof(x[0]));
}

int geo_zone_upgrade(struct geo *g, struct dg_geometry_result *r, geo_add_place_fn add, void *arg,
		     struct geo_bounds *bs, unsigned *left)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < bs->nsized && !geo_out_of_time(g); i++) {
		size_t j = 0;
		while (j < r->nplaces && r->places[j].offset_bytes != bs->sized[i])
			j++;
		if (j == r->nplaces)
			continue;
		rc = add(g, r, bs->sized[i] / g->psec, arg);
		if (rc)
			break;
		/* the full place replaces the sized one, or is dropped (the sized one stays) */
		const struct dg_geometry_place *p = &r->places[--r->nplaces];
		if (p->ok && same_set(p, &r->places[j])) {
			r->places[j] = *p;
			bs->sized[i] = UINT64_MAX;
		}
	}
	*left = 0;
	for (size_t i = 0; i < bs->nsized; i++)
		*left += bs->sized[i] != UINT64_MAX;
	return rc;
}
