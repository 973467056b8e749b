/* SPDX-License-Identifier: MIT */
/*
 * Drive specs: LBA -> cylinder/head/sector mapping, move times and the accessors.
 *
 * Serpentine layout (our reading of drive-spec.md): inside each band of K cylinders, head 0 walks
 * the band's cylinders forward, head 1 walks them backward, head 2 forward, and so on; then the
 * next band. A zone's last band may be shorter than K.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "model_priv.h"

const char *dg_spec_name(const struct dg_spec *spec)
{
	return spec->name;
}

const char *dg_spec_description(const struct dg_spec *spec)
{
	return spec->description;
}

uint64_t dg_spec_capacity_bytes(const struct dg_spec *spec)
{
	return spec->capacity_sectors * spec->sector_bytes;
}

uint32_t dg_spec_sector_bytes(const struct dg_spec *spec)
{
	return spec->sector_bytes;
}

double dg_spec_rpm(const struct dg_spec *spec)
{
	return spec->rpm;
}

/* ---- mapping ---- */

size_t dg_spec_zone_of(const struct dg_spec *spec, uint64_t lba)
{
	size_t lo = 0, hi = spec->nzones; /* first_lba[lo] <= lba < first_lba[hi] */

	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (spec->zones[mid].first_lba <= lba)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

void dg_zone_track_chs(const struct dg_spec *spec, const struct dg_zone *z, uint64_t j,
		       uint32_t *cyl, uint32_t *head)
{
	uint64_t H = spec->heads;

	if (spec->layout == DG_LAYOUT_CYLINDER) {
		*cyl = z->first_cyl + (uint32_t)(j / H);
		*head = (uint32_t)(j % H);
		return;
	}
	uint64_t K = spec->band_cylinders;
	uint64_t band = j / (K * H);
	uint64_t kb = dg_zone_band_cylinders(spec, z, band);
	uint64_t i = j - band * K * H;
	uint64_t h = i / kb, step = i % kb;
	*head = (uint32_t)h;
	*cyl = z->first_cyl + (uint32_t)(band * K + ((h % 2 == 0) ? step : kb - 1 - step));
}

void dg_zone_transitions(const struct dg_spec *spec, const struct dg_zone *z, uint64_t j,
			 uint64_t counts[DG_TR_N])
{
	uint64_t H = spec->heads;

	if (spec->layout == DG_LAYOUT_CYLINDER) {
		counts[DG_TR_CYL] = j / H;
		counts[DG_TR_HEAD] = j - j / H;
		counts[DG_TR_BAND] = 0;
		return;
	}
	uint64_t K = spec->band_cylinders;
	uint64_t band = j / (K * H);
	uint64_t kb = dg_zone_band_cylinders(spec, z, band);
	uint64_t i = j - band * K * H;
	counts[DG_TR_BAND] = band;
	counts[DG_TR_HEAD] = band * (H - 1) + i / kb;
	counts[DG_TR_CYL] = band * H * (K - 1) + (i - i / kb);
}

uint32_t dg_zone_track_offset(const struct dg_spec *spec, const struct dg_zone *z, uint64_t j)
{
	uint64_t n[DG_TR_N], off = 0;

	dg_zone_transitions(spec, z, j, n);
	for (int k = 0; k < DG_TR_N; k++)
		off += (n[k] % z->spt) * z->skew[k];
	return (uint32_t)(off % z->spt);
}

int dg_spec_map(const struct dg_spec *spec, uint64_t lba, struct dg_chs *out)
{
	if (lba >= spec->capacity_sectors)
		return -EINVAL;
	size_t zi = dg_spec_zone_of(spec, lba);
	const struct dg_zone *z = &spec->zones[zi];
	uint64_t j;
	uint32_t spt;

	out->zone = (uint32_t)zi;
	dg_zone_locate(spec, z, lba - z->first_lba, &j, &out->sector, &spt);
	out->track = z->first_track + j;
	dg_zone_track_chs(spec, z, j, &out->cylinder, &out->head);
	return 0;
}

double dg_spec_track_move_ms(const struct dg_spec *spec, uint32_t cyl_a, uint32_t head_a,
			     uint32_t cyl_b, uint32_t head_b)
{
	if (cyl_a != cyl_b)
		return dg_spec_seek_ms(spec, cyl_a > cyl_b ? cyl_a - cyl_b : cyl_b - cyl_a);
	if (head_a != head_b)
		return spec->head_switch_ms;
	return 0.0;
}

double dg_spec_move_ms(const struct dg_spec *spec, uint64_t lba_from, uint64_t lba_to)
{
	struct dg_chs a, b;

	if (dg_spec_map(spec, lba_from, &a) || dg_spec_map(spec, lba_to, &b))
		return NAN;
	return dg_spec_track_move_ms(spec, a.cylinder, a.head, b.cylinder, b.head);
}

/* ---- version 2 mapping: per-surface track sizes, angle-based skews ---- */

/* The head whose run [base + mult*hpre[h], base + mult*hpre[h+1]) holds r (binary search). */
static uint32_t head_of(const struct dg_zone *z, uint32_t H, uint64_t r, uint64_t mult)
{
	uint32_t lo = 0, hi = H; /* mult*hpre[lo] <= r < mult*hpre[hi] */

	while (hi - lo > 1) {
		uint32_t mid = (lo + hi) / 2;
		if (mult * z->hpre[mid] <= r)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

void dg_zone_locate(const struct dg_spec *spec, const struct dg_zone *z, uint64_t rel, uint64_t *j,
		    uint32_t *s, uint32_t *spt)
{
	uint64_t H = spec->heads;

	if (!z->per_surface) {
		*j = rel / z->spt;
		*s = (uint32_t)(rel % z->spt);
		*spt = z->spt;
		return;
	}
	if (spec->layout == DG_LAYOUT_CYLINDER) {
		uint64_t c = rel / z->cyl_sectors, r = rel % z->cyl_sectors;
		uint32_t h = head_of(z, (uint32_t)H, r, 1);
		*j = c * H + h;
		*s = (uint32_t)(r - z->hpre[h]);
		*spt = z->hspt[h];
		return;
	}
	uint64_t K = spec->band_cylinders;
	uint64_t b = rel / (K * z->cyl_sectors), r = rel - b * K * z->cyl_sectors;
	uint64_t kb = dg_zone_band_cylinders(spec, z, b);
	uint32_t h = head_of(z, (uint32_t)H, r, kb);
	uint64_t in = r - kb * z->hpre[h];
	*j = b * K * H + h * kb + in / z->hspt[h];
	*s = (uint32_t)(in % z->hspt[h]);
	*spt = z->hspt[h];
}

uint64_t dg_zone_track_first(const struct dg_spec *spec, const struct dg_zone *z, uint64_t j,
			     uint32_t *spt)
{
	uint64_t H = spec->heads;

	if (!z->per_surface) {
		*spt = z->spt;
		return j * z->spt;
	}
	if (spec->layout == DG_LAYOUT_CYLINDER) {
		*spt = z->hspt[j % H];
		return j / H * z->cyl_sectors + z->hpre[j % H];
	}
	uint64_t K = spec->band_cylinders;
	uint64_t b = j / (K * H), i = j - b * K * H;
	uint64_t kb = dg_zone_band_cylinders(spec, z, b);
	uint64_t h = i / kb;
	*spt = z->hspt[h];
	return b * K * z->cyl_sectors + kb * z->hpre[h] + (i % kb) * z->hspt[h];
}

int dg_zone_transition_into(const struct dg_spec *spec, const struct dg_zone *z, uint64_t j,
			    uint32_t *head)
{
	uint64_t H = spec->heads;

	if (spec->layout == DG_LAYOUT_CYLINDER) {
		*head = (uint32_t)(j % H);
		return j % H ? DG_TR_HEAD : DG_TR_CYL;
	}
	uint64_t K = spec->band_cylinders;
	uint64_t b = j / (K * H), i = j - b * K * H;
	uint64_t kb = dg_zone_band_cylinders(spec, z, b);
	*head = (uint32_t)(i / kb);
	if (i == 0)
		return DG_TR_BAND;
	return i % kb ? DG_TR_CYL : DG_TR_HEAD;
}

/* (n transitions of skew k) / S as an exact fraction of a turn, reduced modulo one turn. */
static double turns(uint64_t n, uint32_t k, uint32_t S)
{
	return (double)((n % S) * k % S) / (double)S;
}

double dg_zone_sector_angle(const struct dg_spec *spec, const struct dg_zone *z, uint64_t j,
			    uint32_t s)
{
	if (!z->per_surface) {
		uint32_t off = dg_zone_track_offset(spec, z, j);
		return (double)((off + (uint64_t)s) % z->spt) / z->spt;
	}
	/* alpha_j: the sum over the transitions into tracks 1..j of k / S of the track entered,
	 * counted per kind and head (drive-spec.md v2, "Per-surface formats") */
	uint64_t H = spec->heads;
	const uint32_t *kh = z->hskew, *kc = z->hskew + DG_TR_CYL * H,
		       *kb_ = z->hskew + DG_TR_BAND * H;
	uint32_t hd;
	double a = 0.0;

	if (spec->layout == DG_LAYOUT_CYLINDER) {
		uint64_t c = j / H;
		hd = (uint32_t)(j % H);
		a += turns(c, kc[0], z->hspt[0]);
		for (uint32_t h = 1; h < H; h++)
			a += turns(c + (h <= hd), kh[h], z->hspt[h]);
	} else {
		uint64_t K = spec->band_cylinders;
		uint64_t b = j / (K * H), i = j - b * K * H;
		uint64_t kb = dg_zone_band_cylinders(spec, z, b);
		hd = (uint32_t)(i / kb);
		uint64_t step = i % kb;
		a += turns(b, kb_[0], z->hspt[0]);
		for (uint32_t h = 0; h < H; h++) {
			uint64_t cyl = b * (K - 1) + (h < hd ? kb - 1 : h == hd ? step : 0);
			a += turns(cyl, kc[h], z->hspt[h]);
			if (h > 0)
				a += turns(b + (h <= hd), kh[h], z->hspt[h]);
		}
	}
	a += (double)s / z->hspt[hd];
	a -= floor(a);
	return a;
}

/* ---- version 2 accessors ---- */

uint32_t dg_spec_physical_sector_bytes(const struct dg_spec *spec)
{
	return spec->physical_sector_bytes;
}

uint32_t dg_spec_ncq_depth(const struct dg_spec *spec)
{
	return spec->ncq_depth;
}

void dg_spec_facts(const struct dg_spec *spec, struct dg_spec_facts *out)
{
	*out = (struct dg_spec_facts){
	    .capacity_sectors = spec->capacity_sectors,
	    .outer_track_bytes = (uint64_t)spec->zones[0].spt * spec->sector_bytes,
	    .heads = spec->heads,
	    .serpentine = spec->layout == DG_LAYOUT_SERPENTINE,
	    .band_cylinders = spec->band_cylinders,
	    .v2 = spec->v2,
	    .look_behind = spec->look_behind,
	    .ncq_depth = spec->ncq_depth,
	    .jitter_ms = spec->jitter_ms,
	    .bg_every_s = spec->bg_every_s,
	    .bg_busy_ms = spec->bg_busy_ms,
	    .cache_bytes = spec->cache_bytes,
	    .cache_segments = spec->cache_segments,
	    .read_ahead_bytes = spec->read_ahead_bytes,
	    .interface_mb_per_s = spec->interface_mbps,
	    .ndefects = spec->ndefects,
	};
}

void dg_spec_defect(const struct dg_spec *spec, size_t i, struct dg_spec_defect *out)
{
	const struct dg_defect *d = &spec->defects[i];

	*out = (struct dg_spec_defect){d->lba, d->count, d->error, d->extra_ms};
}
