/* SPDX-License-Identifier: MIT */
/*
 * The truth of a drive spec: the seek at an LBA distance (shared/drive-spec.md), exact, piece by
 * piece over the pairs of tracks x and x+D meet, with the repeats multiplied (a cylinder, a band,
 * a head's pass) and closed forms where x and x+D lie on one pass, or in zones farther apart than
 * the seek curve's boundary; per-surface track sizes and pairs across zones at the end. Split out
 * of truth.c (issue 11); seek curve: Ruemmler & Wilkes 1994.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_priv.h"

/* Seek at an LBA distance on a spec with per-surface track sizes (at the end of this file). */
static double seek_at_surfaces(const struct dg_spec *spec, uint64_t D);
static bool has_surfaces(const struct dg_spec *spec);
/* The end of the stretch from x on where x stays in zone za and x+D in zone zb, at most m. */
static uint64_t zone_pair_end(const struct dg_spec *spec, size_t za, size_t zb, uint64_t D,
			      uint64_t m)
{
	const struct dg_zone *a = &spec->zones[za], *b = &spec->zones[zb];
	uint64_t xe = a->first_lba + a->sectors;

	if (b->first_lba + b->sectors - D < xe)
		xe = b->first_lba + b->sectors - D;
	return m < xe ? m : xe;
}

/* Sum of move(x, x+D) over x in [x0, x1) where x and x+D lie in two different zones. */
static double cross_zones(const struct dg_spec *spec, uint64_t D, uint64_t x0, uint64_t x1);

/* dg_spec_seek_ms and dg_spec_track_move_ms, the same arithmetic, inlined into the walks. */
static inline double seek_ms(const struct dg_spec *spec, uint32_t d)
{
	if (d == 0)
		return 0.0;
	if ((double)d < spec->seek_boundary)
		return spec->seek_a + spec->seek_b * sqrt((double)d);
	return spec->seek_c + spec->seek_e * (double)d;
}

static inline double track_move_ms(const struct dg_spec *spec, uint32_t cyl_a, uint32_t head_a,
				   uint32_t cyl_b, uint32_t head_b)
{
	if (cyl_a != cyl_b)
		return seek_ms(spec, cyl_a > cyl_b ? cyl_a - cyl_b : cyl_b - cyl_a);
	return head_a != head_b ? spec->head_switch_ms : 0.0;
}

/* ---- seek at an LBA distance ---- */

/*
 * Walks the LBA line in "units": runs of LBAs on one cylinder that the walk prices as one piece.
 * A unit is a whole cylinder where the layout puts a cylinder's tracks next to each other (the
 * cylinder layout, and a serpentine layout with bands of one cylinder, which maps the same way),
 * else one track. Walking cylinders instead of tracks divides the work by the head count.
 */
struct titer {
	const struct dg_spec *spec;
	size_t zi;
	uint64_t u;	     /* unit index inside the zone */
	uint64_t start, end; /* LBAs of the unit (end capped at the capacity) */
	uint32_t cyl;
	uint64_t pass_left; /* track units: tracks left in this head's pass of the band */
	int dir;	    /* track units: +1 or -1, the cylinder step along the pass */
};

static bool whole_cylinders(const struct dg_spec *spec)
{
	return spec->layout == DG_LAYOUT_CYLINDER || spec->band_cylinders == 1;
}

/* Sectors in one unit of zone z. */
static uint64_t unit_sectors(const struct dg_spec *spec, const struct dg_zone *z)
{
	return whole_cylinders(spec) ? (uint64_t)z->spt * spec->heads : z->spt;
}

static void titer_load(struct titer *it)
{
	const struct dg_spec *spec = it->spec;
	const struct dg_zone *z = &spec->zones[it->zi];
	uint64_t us = unit_sectors(spec, z);
	uint32_t head;

	it->start = z->first_lba + it->u * us;
	it->end = it->start + us;
	if (it->end > spec->capacity_sectors)
		it->end = spec->capacity_sectors;
	if (whole_cylinders(spec)) {
		it->cyl = z->first_cyl + (uint32_t)it->u;
		return;
	}
	dg_zone_track_chs(spec, z, it->u, &it->cyl, &head);
	/* where this track sits in its head's pass (see dg_zone_track_chs) */
	uint64_t K = spec->band_cylinders, H = spec->heads;
	uint64_t band = it->u / (K * H);
	uint64_t kb = dg_zone_band_cylinders(spec, z, band);
	uint64_t i = it->u - band * K * H;
	it->pass_left = kb - 1 - i % kb;
	it->dir = head % 2 == 0 ? 1 : -1;
}

static void titer_seek(struct titer *it, const struct dg_spec *spec, uint64_t lba)
{
	it->spec = spec;
	it->zi = dg_spec_zone_of(spec, lba);
	it->u = (lba - spec->zones[it->zi].first_lba) / unit_sectors(spec, &spec->zones[it->zi]);
	titer_load(it);
}

/* The next unit; O(1) without divisions inside a cylinder run or a head's pass. */
static void titer_next(struct titer *it)
{
	const struct dg_spec *spec = it->spec;
	const struct dg_zone *z = &spec->zones[it->zi];
	uint64_t us = unit_sectors(spec, z);

	it->u++;
	if (it->end - z->first_lba == z->sectors) {
		it->zi++;
		it->u = 0;
		titer_load(it);
		return;
	}
	if (whole_cylinders(spec)) {
		it->cyl++;
	} else if (it->pass_left) {
		it->pass_left--;
		it->cyl = (uint32_t)((int64_t)it->cyl + it->dir);
	} else {
		titer_load(it);
		return;
	}
	it->start += us;
	it->end = it->start + us;
	if (it->end > spec->capacity_sectors)
		it->end = spec->capacity_sectors;
}

/* How many x in [u0, x) have x and x+D on different tracks of a cylinder unit starting at u0
 * with tracks of spt sectors (x+D inside the same unit). */
static uint64_t track_changes(uint64_t u0, uint32_t spt, uint64_t D, uint64_t x)
{
	uint64_t rel = x - u0;

	if (D >= spt)
		return rel;
	uint64_t in = rel % spt;
	return rel / spt * D + (in > spt - D ? in - (spt - D) : 0);
}

/* Sum of move(x, x+D) over x in [x, stop) where x lies in unit a and x+D in unit b. */
static double piece_ms(const struct dg_spec *spec, const struct titer *a, const struct titer *b,
		       uint64_t D, uint64_t x, uint64_t stop)
{
	if (a->zi == b->zi && a->u == b->u) {
		/* one unit: the same track (0), or a head switch inside a cylinder unit */
		if (!whole_cylinders(spec))
			return 0.0;
		uint32_t spt = spec->zones[a->zi].spt;
		return (double)(track_changes(a->start, spt, D, stop) -
				track_changes(a->start, spt, D, x)) *
		       spec->head_switch_ms;
	}
	if (a->cyl != b->cyl)
		return (double)(stop - x) *
		       seek_ms(spec, a->cyl > b->cyl ? a->cyl - b->cyl : b->cyl - a->cyl);
	return (double)(stop - x) * spec->head_switch_ms; /* another track of the same cylinder */
}

/*
 * Where x and x+D lie in one zone, the moves repeat with a period: one cylinder (whole-cylinder
 * units) or one band of K cylinders (serpentine), as long as both stay inside the zone's
 * regular part (every band K cylinders long). Returns the period in sectors when x starts one
 * and sets *reg_end to the end of the regular part; 0 when x does not start a period.
 */
static uint64_t period_at(const struct dg_spec *spec, const struct titer *a, const struct titer *b,
			  uint64_t x, uint64_t *reg_end)
{
	const struct dg_zone *z = &spec->zones[a->zi];

	if (a->zi != b->zi || x != a->start)
		return 0;
	if (whole_cylinders(spec)) {
		*reg_end = z->first_lba + z->sectors;
		return unit_sectors(spec, z);
	}
	uint64_t band_tracks = (uint64_t)spec->band_cylinders * spec->heads;
	if (a->u % band_tracks)
		return 0;
	*reg_end = z->first_lba + (z->cylinders / spec->band_cylinders) * band_tracks * z->spt;
	return band_tracks * z->spt;
}

/* Sums move(x, x+D) over x in [x, xend), piece by piece; advances the iterators. */
static double walk(const struct dg_spec *spec, struct titer *a, struct titer *b, uint64_t D,
		   uint64_t x, uint64_t xend)
{
	double sum = 0.0;

	while (x < xend) {
		while (a->end <= x)
			titer_next(a);
		while (b->end <= x + D)
			titer_next(b);
		uint64_t stop = a->end < b->end - D ? a->end : b->end - D;
		if (stop > xend)
			stop = xend;
		sum += piece_ms(spec, a, b, D, x, stop);
		x = stop;
	}
	return sum;
}

/*
 * Cost: one period per zone where x and x+D share a zone (a cylinder, a band, or a head's pass
 * while x+D stays in x's band); where they lie in different zones, a closed form where every
 * move is past the seek curve's boundary, else whole cylinders (cylinder layout) or tracks
 * (serpentine) one at a time.
 */
double dg_truth_seek_at_ms(const struct dg_spec *spec, uint64_t distance_bytes)
{
	uint64_t cap = spec->capacity_sectors;
	uint64_t D = distance_bytes / spec->sector_bytes;
	struct titer a, b;
	double sum = 0.0;

	if (D == 0)
		return 0.0;
	if (D > cap - 1)
		D = cap - 1;
	if (has_surfaces(spec))
		return seek_at_surfaces(spec, D);
	uint64_t m = cap - D; /* x in [0, m) */
	titer_seek(&a, spec, 0);
	titer_seek(&b, spec, D);
	uint64_t x = 0;
	while (x < m) {
		while (a.end <= x)
			titer_next(&a);
		while (b.end <= x + D)
			titer_next(&b);
		uint64_t reg_end = 0, P = period_at(spec, &a, &b, x, &reg_end);
		if (P) {
			/* R whole periods from x stay below m and keep x+D in the regular part */
			uint64_t r1 = (m - x) / P;
			uint64_t r2 = reg_end > x + D ? (reg_end - x - D) / P : 0;
			uint64_t R = r1 < r2 ? r1 : r2;
			if (R >= 2) {
				sum += (double)R * walk(spec, &a, &b, D, x, x + P);
				x += R * P;
				if (x < m) {
					titer_seek(&a, spec, x);
					titer_seek(&b, spec, x + D);
				}
				continue;
			}
		}
		if (!whole_cylinders(spec) && a.zi == b.zi && a.start == x) {
			/* x starts a head's pass and x+D lies in the same band: shifting both by
			 * one pass moves both to the next head, each cylinder mirrored inside the
			 * band, so every move repeats while x+D stays in the band */
			const struct dg_zone *z = &spec->zones[a.zi];
			uint64_t K = spec->band_cylinders, H = spec->heads, band = a.u / (K * H);
			uint64_t kb = dg_zone_band_cylinders(spec, z, band);
			uint64_t bend = z->first_lba + (band * K * H + kb * H) * z->spt;
			uint64_t Pp = kb * z->spt;
			if (bend > spec->capacity_sectors)
				bend = spec->capacity_sectors;
			if ((a.u - band * K * H) % kb == 0 && x + D < bend) {
				uint64_t r1 = (m - x) / Pp, r2 = (bend - D - x) / Pp;
				uint64_t R = r1 < r2 ? r1 : r2;
				if (R >= 2) {
					sum += (double)R * walk(spec, &a, &b, D, x, x + Pp);
					x += R * Pp;
					if (x < m) {
						titer_seek(&a, spec, x);
						titer_seek(&b, spec, x + D);
					}
					continue;
				}
			}
		}
		if (a.zi != b.zi) {
			uint64_t xe = zone_pair_end(spec, a.zi, b.zi, D, m);
			sum += cross_zones(spec, D, x, xe);
			x = xe;
			if (x < m) {
				titer_seek(&a, spec, x);
				titer_seek(&b, spec, x + D);
			}
			continue;
		}
		uint64_t xend = a.end < m ? a.end : m;
		sum += walk(spec, &a, &b, D, x, xend);
		x = xend;
	}
	return sum / (double)m;
}

/* ---- seek at an LBA distance over per-surface tracks ---- */

static bool has_surfaces(const struct dg_spec *spec)
{
	for (size_t i = 0; i < spec->nzones; i++)
		if (spec->zones[i].per_surface)
			return true;
	return false;
}

/* Walks the tracks in LBA order, each with its own size. */
struct siter {
	const struct dg_spec *spec;
	size_t zi;
	uint64_t j;
	uint64_t start, end; /* LBAs of the track (end capped at the capacity) */
	uint32_t cyl, head, spt;
	/* tracks left in this run (a serpentine head's pass, a cylinder's heads), whose next
	 * track is found without a division: the next cylinder by dir, or the next head */
	uint64_t left;
	int dir;
};

static void siter_load(struct siter *it)
{
	const struct dg_spec *spec = it->spec;
	const struct dg_zone *z = &spec->zones[it->zi];
	uint64_t H = spec->heads;

	it->start = z->first_lba + dg_zone_track_first(spec, z, it->j, &it->spt);
	it->end = it->start + it->spt;
	if (it->end > spec->capacity_sectors)
		it->end = spec->capacity_sectors;
	dg_zone_track_chs(spec, z, it->j, &it->cyl, &it->head);
	if (spec->layout == DG_LAYOUT_CYLINDER) {
		it->left = H - 1 - it->head;
		it->dir = 0;
		return;
	}
	uint64_t K = spec->band_cylinders, band = it->j / (K * H);
	uint64_t kb = dg_zone_band_cylinders(spec, z, band);
	it->left = kb - 1 - (it->j - band * K * H) % kb;
	it->dir = it->head % 2 == 0 ? 1 : -1;
}

static void siter_seek(struct siter *it, const struct dg_spec *spec, uint64_t lba)
{
	uint32_t s, spt;

	it->spec = spec;
	it->zi = dg_spec_zone_of(spec, lba);
	dg_zone_locate(spec, &spec->zones[it->zi], lba - spec->zones[it->zi].first_lba, &it->j, &s,
		       &spt);
	siter_load(it);
}

static void siter_next(struct siter *it)
{
	const struct dg_spec *spec = it->spec;

	if (it->left && it->end == it->start + it->spt) {
		it->j++;
		it->left--;
		it->start = it->end;
		if (it->dir) {
			it->cyl = (uint32_t)((int64_t)it->cyl + it->dir);
		} else {
			it->head++;
			it->spt = spec->zones[it->zi].hspt[it->head];
		}
		it->end = it->start + it->spt;
		if (it->end > spec->capacity_sectors)
			it->end = spec->capacity_sectors;
		return;
	}
	if (++it->j == spec->zones[it->zi].tracks) {
		it->zi++;
		it->j = 0;
	}
	siter_load(it);
}

/* Sum of move(x', x'+D) over x' in [x, xend), piece by piece over the pairs of tracks that x'
 * and x'+D meet; advances the iterators. */
static double swalk(const struct dg_spec *spec, struct siter *a, struct siter *b, uint64_t D,
		    uint64_t x, uint64_t xend)
{
	double sum = 0.0;

	while (x < xend) {
		while (a->end <= x)
			siter_next(a);
		while (b->end <= x + D)
			siter_next(b);
		uint64_t stop = a->end < b->end - D ? a->end : b->end - D;
		if (stop > xend)
			stop = xend;
		sum += (double)(stop - x) * track_move_ms(spec, a->cyl, a->head, b->cyl, b->head);
		x = stop;
	}
	return sum;
}

/*
 * The mean of move(x, x+D) over x in [0, capacity - D) (D < capacity). Inside one zone the
 * moves repeat with a period — one cylinder (cylinder layout) or one band of K cylinders
 * (serpentine): shifting x by a period shifts both cylinders alike —, as long as x+D stays in
 * the zone's whole bands; such stretches are walked once and multiplied.
 */
static double seek_at_surfaces(const struct dg_spec *spec, uint64_t D)
{
	uint64_t m = spec->capacity_sectors - D, x = 0, H = spec->heads;
	struct siter a, b;
	double sum = 0.0;

	siter_seek(&a, spec, 0);
	siter_seek(&b, spec, D);
	while (x < m) {
		while (a.end <= x)
			siter_next(&a);
		while (b.end <= x + D)
			siter_next(&b);
		const struct dg_zone *z = &spec->zones[a.zi];
		uint64_t P = 0, reg_end = 0;
		if (a.zi == b.zi && a.start == x) {
			if (spec->layout == DG_LAYOUT_CYLINDER && a.j % H == 0) {
				P = z->cyl_sectors;
				reg_end = z->first_lba + z->sectors;
			} else if (spec->layout == DG_LAYOUT_SERPENTINE &&
				   a.j % (spec->band_cylinders * H) == 0) {
				uint64_t K = spec->band_cylinders;
				P = K * z->cyl_sectors;
				reg_end = z->first_lba + z->cylinders / K * K * z->cyl_sectors;
			}
		}
		if (P) {
			uint64_t r1 = (m - x) / P;
			uint64_t r2 = reg_end > x + D ? (reg_end - x - D) / P : 0;
			uint64_t R = r1 < r2 ? r1 : r2;
			if (R >= 2) {
				sum += (double)R * swalk(spec, &a, &b, D, x, x + P);
				x += R * P;
				siter_seek(&a, spec, x);
				siter_seek(&b, spec, x + D);
				continue;
			}
		}
		if (spec->layout == DG_LAYOUT_SERPENTINE && a.zi == b.zi && a.start == x &&
		    a.end == a.start + a.spt) {
			/* x starts a track and x+D lies further along the same head's pass: the
			 * pass steps by one cylinder per track of S sectors, so with D = qS + r
			 * the move is seek(q + 1) where x sits in the last r sectors of its track,
			 * else seek(q) (0: the same track) */
			uint64_t S = a.spt, pend = a.start + (a.left + 1) * S;
			if (x + D + 2 * S <= pend) {
				uint64_t xe = pend - D < m ? pend - D : m, q = D / S, r = D % S;
				uint64_t n = xe - x,
					 hi = n / S * r + (n % S > S - r ? n % S - (S - r) : 0);
				sum += (double)(n - hi) * seek_ms(spec, (uint32_t)q) +
				       (double)hi * seek_ms(spec, (uint32_t)(q + 1));
				x = xe;
				if (x < m) {
					siter_seek(&a, spec, x);
					siter_seek(&b, spec, x + D);
				}
				continue;
			}
		}
		if (a.zi != b.zi) {
			uint64_t xe = zone_pair_end(spec, a.zi, b.zi, D, m);
			sum += cross_zones(spec, D, x, xe);
			x = xe;
			if (x < m) {
				siter_seek(&a, spec, x);
				siter_seek(&b, spec, x + D);
			}
			continue;
		}
		uint64_t stop = a.end < b.end - D ? a.end : b.end - D;
		if (stop > m)
			stop = m;
		sum += swalk(spec, &a, &b, D, x, stop);
		x = stop;
	}
	return sum / (double)m;
}

/* ---- seek at an LBA distance where x and x+D lie in different zones ---- */

/* Sum of the cylinders of the zone-relative sectors [0, r) of zone z (exact). */
static unsigned __int128 zone_cyl_sum(const struct dg_spec *spec, const struct dg_zone *z,
				      uint64_t r)
{
	typedef unsigned __int128 u128;
	uint64_t H = spec->heads, C = z->cyl_sectors, fc = z->first_cyl;

	if (spec->layout == DG_LAYOUT_CYLINDER) {
		uint64_t q = r / C, rr = r - q * C;
		/* C * (q fc + q (q - 1) / 2), then the rest on cylinder fc + q */
		return (u128)C * ((u128)q * fc + (u128)q * (q ? q - 1 : 0) / 2) +
		       (u128)rr * (fc + q);
	}
	uint64_t K = spec->band_cylinders, B = r / (K * C), rr = r - B * K * C;
	/* whole bands: each holds C sectors on each of its K cylinders */
	u128 sum = (u128)C * ((u128)K * fc * B + (u128)K * K * B * (B ? B - 1 : 0) / 2 +
			      (u128)B * K * (K - 1) / 2);
	if (!rr)
		return sum;
	uint64_t kb = dg_zone_band_cylinders(spec, z, B);
	uint64_t c0 = fc + B * K;
	for (uint64_t h = 0; h < H && rr; h++) {
		uint64_t S = z->hspt[h], pass = kb * S;
		if (rr >= pass) {
			sum += (u128)S * ((u128)kb * c0 + (u128)kb * (kb - 1) / 2);
			rr -= pass;
			continue;
		}
		uint64_t q = rr / S, rem = rr - q * S;
		if (h % 2 == 0) /* cylinders c0 .. c0+q-1, then c0+q */
			sum += (u128)S * ((u128)q * c0 + (u128)q * (q ? q - 1 : 0) / 2) +
			       (u128)rem * (c0 + q);
		else /* c0+kb-1 down to c0+kb-q, then c0+kb-1-q */
			sum += (u128)S * ((u128)q * (c0 + kb - 1) - (u128)q * (q ? q - 1 : 0) / 2) +
			       (u128)rem * (c0 + kb - 1 - q);
		rr = 0;
	}
	return sum;
}

/* Sum of the cylinders of LBAs [x0, x1) inside zone zi. */
static unsigned __int128 cyl_sum(const struct dg_spec *spec, size_t zi, uint64_t x0, uint64_t x1)
{
	const struct dg_zone *z = &spec->zones[zi];

	return zone_cyl_sum(spec, z, x1 - z->first_lba) - zone_cyl_sum(spec, z, x0 - z->first_lba);
}

/* The cylinders LBAs of zone zi in [x0, x1) can be on: the whole bands they touch. */
static void cyl_range(const struct dg_spec *spec, size_t zi, uint64_t x0, uint64_t x1, uint64_t *lo,
		      uint64_t *hi)
{
	const struct dg_zone *z = &spec->zones[zi];
	uint64_t K = spec->layout == DG_LAYOUT_CYLINDER ? 1 : spec->band_cylinders;
	uint64_t band = K * z->cyl_sectors;

	*lo = z->first_cyl + (x0 - z->first_lba) / band * K;
	*hi = z->first_cyl + (x1 - 1 - z->first_lba) / band * K + K - 1;
	if (*hi > (uint64_t)z->first_cyl + z->cylinders - 1)
		*hi = (uint64_t)z->first_cyl + z->cylinders - 1;
}

/* Sum of move(x, x+D) over x in [x0, x1), the piece by piece walk. x in zone za and x+D in
 * zone zb != za: the move is the seek between their cylinders, so the cylinder layout walks
 * whole cylinders. */
static double walk_pieces(const struct dg_spec *spec, size_t za, size_t zb, uint64_t D, uint64_t x0,
			  uint64_t x1)
{
	if (spec->layout == DG_LAYOUT_CYLINDER) {
		const struct dg_zone *A = &spec->zones[za], *B = &spec->zones[zb];
		uint64_t ra = x0 - A->first_lba, rb = x0 + D - B->first_lba;
		uint64_t ia = ra / A->cyl_sectors, ib = rb / B->cyl_sectors;
		uint64_t ea = (ia + 1) * A->cyl_sectors - ra, eb = (ib + 1) * B->cyl_sectors - rb;
		uint64_t n = x1 - x0;
		double sum = 0.0;
		/* ea, eb: sectors left on the current cylinder of each */
		while (n) {
			uint64_t step = ea < eb ? ea : eb;
			if (step > n)
				step = n;
			uint64_t ca = A->first_cyl + ia, cb = B->first_cyl + ib;
			sum +=
			    (double)step * seek_ms(spec, (uint32_t)(ca > cb ? ca - cb : cb - ca));
			n -= step;
			ea -= step;
			eb -= step;
			if (!ea) {
				ia++;
				ea = A->cyl_sectors;
			}
			if (!eb) {
				ib++;
				eb = B->cyl_sectors;
			}
		}
		return sum;
	}
	if (has_surfaces(spec)) {
		struct siter a, b;
		siter_seek(&a, spec, x0);
		siter_seek(&b, spec, x0 + D);
		return swalk(spec, &a, &b, D, x0, x1);
	}
	struct titer a, b;
	titer_seek(&a, spec, x0);
	titer_seek(&b, spec, x0 + D);
	return walk(spec, &a, &b, D, x0, x1);
}

/*
 * x in zone za and x+D in zone zb != za for every x in [x0, x1): zones hold disjoint,
 * increasing cylinder ranges, so the move is always a seek of |cb - ca| cylinders. Where every
 * such distance is past the seek curve's boundary, seek(d) = c + e d is linear and the sum is
 * n c + e (sum of cb - sum of ca), in closed form; where none is, the walk prices every piece;
 * in between, the stretch is halved.
 */
static double cross_part(const struct dg_spec *spec, size_t za, size_t zb, uint64_t D, uint64_t x0,
			 uint64_t x1)
{
	typedef __int128 i128;
	double bound = spec->seek_boundary > 1.0 ? spec->seek_boundary : 1.0;
	uint64_t alo, ahi, blo, bhi;

	if (x1 <= x0)
		return 0.0;
	cyl_range(spec, za, x0, x1, &alo, &ahi);
	cyl_range(spec, zb, x0 + D, x1 + D, &blo, &bhi);
	/* the smallest and largest |cb - ca| */
	uint64_t dmin = blo > ahi ? blo - ahi : alo > bhi ? alo - bhi : 0;
	uint64_t dmax = (bhi > alo ? bhi - alo : 0) > (ahi > blo ? ahi - blo : 0)
			    ? (bhi > alo ? bhi - alo : 0)
			    : (ahi > blo ? ahi - blo : 0);
	if (dmin > 0 && (double)dmin >= bound) {
		i128 diff =
		    (i128)cyl_sum(spec, zb, x0 + D, x1 + D) - (i128)cyl_sum(spec, za, x0, x1);
		if (diff < 0)
			diff = -diff;
		return (double)(x1 - x0) * spec->seek_c + spec->seek_e * (double)diff;
	}
	uint64_t track = spec->zones[za].cyl_sectors / spec->heads + 1;
	if ((double)dmax < bound || x1 - x0 <= 64 * track)
		return walk_pieces(spec, za, zb, D, x0, x1);
	uint64_t mid = x0 + (x1 - x0) / 2;
	return cross_part(spec, za, zb, D, x0, mid) + cross_part(spec, za, zb, D, mid, x1);
}

static double cross_zones(const struct dg_spec *spec, uint64_t D, uint64_t x0, uint64_t x1)
{
	if (x1 <= x0)
		return 0.0;
	return cross_part(spec, dg_spec_zone_of(spec, x0), dg_spec_zone_of(spec, x0 + D), D, x0,
			  x1);
}
