/* SPDX-License-Identifier: MIT */
/*
 * Drive specs: the zones, their skews (the default skew of a transition with move time tau is
 * ceil(tau/T*S) + 1 sectors, the smallest for which a sequential read loses no revolution:
 * Worthington et al. 1995), per-surface formats, physical sectors, defects and the other
 * version 2 keys.
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

#include "spec_priv.h"

/* ---- zones, skews ---- */

static uint32_t default_skew(double tau_ms, double period_ms, uint32_t spt)
{
	/* tau*S/T, tolerant of float noise on an exact integer (the +1 keeps a sector's margin) */
	double k = ceil(tau_ms * (double)spt / period_ms - 1e-9) + 1.0;
	return (uint32_t)fmod(k, (double)spt);
}

/* ---- version 2: per-surface formats, physical sectors, queueing, noise ---- */

/* The per-head arrays of every zone, in one allocation owned by the spec. */
static int alloc_zone_heads(struct dg_spec *s)
{
	size_t H = s->heads, nz = s->nzones;
	size_t bytes = nz * (H + 1) * sizeof(uint64_t) + nz * H * sizeof(uint32_t) * (1 + DG_TR_N);
	char *p = calloc(1, bytes);

	if (!p)
		return -ENOMEM;
	s->zone_heads = p;
	for (size_t i = 0; i < nz; i++) {
		s->zones[i].hpre = (uint64_t *)p + i * (H + 1);
		s->zones[i].hspt = (uint32_t *)(p + nz * (H + 1) * sizeof(uint64_t)) + i * H;
		s->zones[i].hskew =
		    (uint32_t *)(p + nz * (H + 1) * sizeof(uint64_t) + nz * H * sizeof(uint32_t)) +
		    i * H * DG_TR_N;
	}
	return 0;
}

/* zones[i].sectors_per_track: one integer (every head) or an array of one per head. Sets the
 * zone's per-head sizes and *spt (head 0's). */
static int parse_surfaces(struct spec_ctx *c, struct dg_spec *s, struct dg_zone *z, const json_t *v,
			  const char *pre, int64_t *spt)
{
	char path[64], got[64];
	uint32_t H = s->heads, r = s->phys_ratio ? s->phys_ratio : 1;
	int rc;

	snprintf(path, sizeof(path), "%s.sectors_per_track", pre);
	if (json_is_array(v)) {
		if (json_array_size(v) != H)
			return spec_bad(c, path, "needs one size per head: %u integers (got %zu)",
					H, json_array_size(v));
		for (uint32_t h = 0; h < H; h++) {
			const json_t *e = json_array_get(v, h);
			if (!json_is_integer(e) || json_integer_value(e) < 1 ||
			    json_integer_value(e) > DG_SPEC_MAX_SPT) {
				spec_show(e, got, sizeof(got));
				return spec_bad(c, path,
						"head %u: must be an integer in [1, %u] (got %s)",
						h, DG_SPEC_MAX_SPT, got);
			}
			z->hspt[h] = (uint32_t)json_integer_value(e);
			if (z->hspt[h] != z->hspt[0])
				z->per_surface = true;
		}
		s->v2 = true;
		*spt = z->hspt[0];
	} else {
		/* get_int on the value itself: wrap it in a one-key object */
		json_t *o = json_object();
		if (!o)
			return -ENOMEM;
		if (v)
			json_object_set(o, "sectors_per_track", (json_t *)v);
		rc = spec_get_int(c, o, pre, "sectors_per_track", true, 1, DG_SPEC_MAX_SPT, 0, spt);
		json_decref(o);
		if (rc)
			return rc;
		for (uint32_t h = 0; h < H; h++)
			z->hspt[h] = (uint32_t)*spt;
	}
	z->hpre[0] = 0;
	for (uint32_t h = 0; h < H; h++) {
		if (z->hspt[h] % r)
			return spec_bad(
			    c, path,
			    "%u sectors (head %u) is not a whole number of %u-byte physical "
			    "sectors",
			    z->hspt[h], h, s->physical_sector_bytes);
		z->hpre[h + 1] = z->hpre[h] + z->hspt[h];
	}
	z->cyl_sectors = z->hpre[H];
	return 0;
}

/* physical_sector_bytes (before the zones: their sizes must be whole physical sectors). */
int spec_parse_physical(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
{
	int64_t v;
	int rc;

	if ((rc = spec_get_int(c, root, NULL, "physical_sector_bytes", false, 1, 1 << 16,
			       s->sector_bytes, &v)))
		return rc;
	if (v != 512 && v != 4096)
		return spec_bad(c, "physical_sector_bytes", "must be 512 or 4096 (got %lld)",
				(long long)v);
	if ((uint32_t)v < s->sector_bytes)
		return spec_bad(c, "physical_sector_bytes",
				"must be at least logical_sector_bytes (%lld < %u)", (long long)v,
				s->sector_bytes);
	s->physical_sector_bytes = (uint32_t)v;
	s->phys_ratio = s->physical_sector_bytes / s->sector_bytes;
	if (json_object_get(root, "physical_sector_bytes"))
		s->v2 = true;
	return 0;
}

/* look_behind, ncq_depth, jitter_ms, background, seed, cache_segments; physical alignment of
 * defects. */
int spec_parse_v2(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
{
	static const char *const bg_keys[] = {"every_s", "busy_ms", NULL};
	const json_t *v;
	char got[64];
	int64_t n;
	int rc;

	v = json_object_get(root, "look_behind");
	if (v && !json_is_boolean(v)) {
		spec_show(v, got, sizeof(got));
		return spec_bad(c, "look_behind", "must be true or false (got %s)", got);
	}
	s->look_behind = v && json_is_true(v);
	if ((rc = spec_get_int(c, root, NULL, "ncq_depth", false, 1, 32, 1, &n)))
		return rc;
	s->ncq_depth = (uint32_t)n;
	/* diskgeo's extension (drive_segments.c), not a version 2 key: a version 1 drive may
	 * have segments too */
	if ((rc = spec_get_int(c, root, NULL, "cache_segments", false, 1,
			       DG_SPEC_MAX_CACHE_SEGMENTS, 1, &n)))
		return rc;
	s->cache_segments = (uint32_t)n;
	if ((rc = spec_get_num(c, root, NULL, "jitter_ms", false, false, 1e4, 0, &s->jitter_ms)))
		return rc;
	if ((rc = spec_get_int(c, root, NULL, "seed", false, 0, INT64_MAX, 1, &n)))
		return rc;
	s->seed = (uint64_t)n;
	v = json_object_get(root, "background");
	if (v) {
		if (!json_is_object(v))
			return spec_bad(c, "background", "must be an object {every_s, busy_ms}");
		if ((rc = spec_check_keys(c, v, "background", bg_keys)) ||
		    (rc = spec_get_num(c, v, "background", "every_s", true, true, 1e6, 0,
				       &s->bg_every_s)) ||
		    (rc = spec_get_num(c, v, "background", "busy_ms", true, true, 1e9, 0,
				       &s->bg_busy_ms)))
			return rc;
		if (s->bg_busy_ms >= s->bg_every_s * 1e3)
			return spec_bad(c, "background.busy_ms",
					"must be shorter than its period every_s (%g ms >= %g s)",
					s->bg_busy_ms, s->bg_every_s);
	}
	static const char *const v2keys[] = {"look_behind", "ncq_depth",  "jitter_ms",
					     "seed",	    "background", NULL};
	for (const char *const *k = v2keys; *k; k++)
		if (json_object_get(root, *k))
			s->v2 = true;
	for (size_t i = 0; i < s->ndefects && s->phys_ratio > 1; i++)
		if (s->defects[i].lba % s->phys_ratio || s->defects[i].count % s->phys_ratio) {
			char pre[32];
			snprintf(pre, sizeof(pre), "defects[%zu]", i);
			return spec_bad(c, pre,
					"lba %llu + count %llu is not a whole number of %u-byte "
					"physical sectors",
					(unsigned long long)s->defects[i].lba,
					(unsigned long long)s->defects[i].count,
					s->physical_sector_bytes);
		}
	return 0;
}

/* The default skew rounded up to whole physical sectors (drive-spec.md v2); with one logical
 * sector per physical sector exactly default_skew(). */
static uint32_t default_skew_phys(double tau_ms, double period_ms, uint32_t spt, uint32_t ratio)
{
	if (ratio <= 1)
		return default_skew(tau_ms, period_ms, spt);
	double k = ceil(tau_ms * (double)spt / period_ms - 1e-9) + 1.0;
	k = ceil(k / ratio) * ratio;
	return (uint32_t)fmod(k, (double)spt);
}

int spec_parse_zones(struct spec_ctx *c, struct dg_spec *s, const json_t *zones, int64_t top_tskew,
		     int64_t top_cskew)
{
	static const char *const keys[] = {"cylinders", "sectors_per_track", "track_skew",
					   "cylinder_skew", NULL};
	size_t i;
	const json_t *zv;
	uint64_t lba = 0, track = 0, cyl = 0;
	int rc;

	if (!zones)
		return spec_bad(c, "zones", "missing");
	if (!json_is_array(zones) || json_array_size(zones) == 0)
		return spec_bad(c, "zones",
				"must be a non-empty array of {cylinders, sectors_per_track}");
	if (json_array_size(zones) > DG_SPEC_MAX_ZONES)
		return spec_bad(c, "zones", "%zu zones, more than the limit of %u",
				json_array_size(zones), DG_SPEC_MAX_ZONES);
	/* The serpentine truth still walks a head's pass where a seek's two ends lie in different
	 * zones or passes: its zones x heads and heads are bounded so that it answers in well under
	 * a second (real drives: a few dozen zones, at most about 20 heads). */
	if (s->layout == DG_LAYOUT_SERPENTINE && s->heads > DG_SPEC_MAX_SERPENTINE_HEADS)
		return spec_bad(c, "heads",
				"%u heads, more than the limit of %u for the serpentine layout",
				s->heads, DG_SPEC_MAX_SERPENTINE_HEADS);
	if (s->layout == DG_LAYOUT_SERPENTINE &&
	    (uint64_t)s->band_cylinders * s->heads > DG_SPEC_MAX_BAND_TRACKS)
		return spec_bad(
		    c, "band_cylinders",
		    "%u cylinders x %u heads, more than the limit of %u tracks in a band",
		    s->band_cylinders, s->heads, DG_SPEC_MAX_BAND_TRACKS);
	if (s->layout == DG_LAYOUT_SERPENTINE &&
	    json_array_size(zones) * s->heads > DG_SPEC_MAX_SERPENTINE_ZONE_HEADS)
		return spec_bad(
		    c, "zones",
		    "%zu zones x %u heads, more than the limit of %u for the serpentine layout",
		    json_array_size(zones), s->heads, DG_SPEC_MAX_SERPENTINE_ZONE_HEADS);
	s->nzones = json_array_size(zones);
	s->zones = calloc(s->nzones, sizeof(*s->zones));
	if (!s->zones || alloc_zone_heads(s))
		return -ENOMEM;
	json_array_foreach((json_t *)zones, i, zv)
	{
		char pre[32];
		int64_t cyls, spt, tskew, cskew;
		struct dg_zone *z = &s->zones[i];

		snprintf(pre, sizeof(pre), "zones[%zu]", i);
		if (!json_is_object(zv))
			return spec_bad(c, pre, "must be an object {cylinders, sectors_per_track}");
		if ((rc = spec_check_keys(c, zv, pre, keys)) ||
		    (rc = spec_get_int(c, zv, pre, "cylinders", true, 1, 1 << 24, 0, &cyls)) ||
		    (rc = parse_surfaces(c, s, z, json_object_get(zv, "sectors_per_track"), pre,
					 &spt)) ||
		    (rc = spec_get_int(c, zv, pre, "track_skew", false, 0, 1 << 24, top_tskew,
				       &tskew)) ||
		    (rc = spec_get_int(c, zv, pre, "cylinder_skew", false, 0, 1 << 24, top_cskew,
				       &cskew)))
			return rc;
		/* bounds that keep the truth's per-cylinder and per-track work sane (real drives
		 * have well under a million cylinders and a few million tracks) */
		char cpath[48];
		snprintf(cpath, sizeof(cpath), "%s.cylinders", pre);
		if (cyl + (uint64_t)cyls > DG_SPEC_MAX_CYLINDERS)
			return spec_bad(c, cpath,
					"the zones hold more than %u cylinders in total "
					"(the limit)",
					DG_SPEC_MAX_CYLINDERS);
		uint32_t max_tracks = s->layout == DG_LAYOUT_SERPENTINE
					  ? DG_SPEC_MAX_SERPENTINE_TRACKS
					  : DG_SPEC_MAX_TRACKS;
		if (track + (uint64_t)cyls * s->heads > max_tracks)
			return spec_bad(
			    c, cpath,
			    "the zones hold more than %u tracks (cylinders x "
			    "heads) in total (the limit%s)",
			    max_tracks,
			    s->layout == DG_LAYOUT_SERPENTINE ? " of the serpentine layout" : "");
		z->first_lba = lba;
		z->first_track = track;
		z->first_cyl = (uint32_t)cyl;
		z->cylinders = (uint32_t)cyls;
		z->spt = (uint32_t)spt;
		z->tracks = (uint64_t)cyls * s->heads;
		z->sectors = (uint64_t)cyls * z->cyl_sectors;
		lba += z->sectors;
		track += z->tracks;
		cyl += (uint64_t)cyls;
		/* skews are resolved after the seek curve is known (the default needs it) */
		z->skew[DG_TR_HEAD] = tskew < 0 ? UINT32_MAX : (uint32_t)tskew;
		z->skew[DG_TR_CYL] = cskew < 0 ? UINT32_MAX : (uint32_t)cskew;
		z->skew[DG_TR_BAND] = z->skew[DG_TR_CYL];
	}
	s->geometry_sectors = lba;
	s->cylinders = (uint32_t)cyl;
	if (lba > (1ull << 48))
		return spec_bad(c, "zones", "the geometry holds more than 2^48 sectors");
	return 0;
}

void spec_derive_skews(struct dg_spec *s)
{
	for (size_t i = 0; i < s->nzones; i++) {
		struct dg_zone *z = &s->zones[i];
		uint64_t band_delta = (s->heads % 2 == 0) ? s->band_cylinders : 1;

		z->move_ms[DG_TR_HEAD] = s->head_switch_ms;
		z->move_ms[DG_TR_CYL] = dg_spec_seek_ms(s, 1);
		z->move_ms[DG_TR_BAND] =
		    s->layout == DG_LAYOUT_SERPENTINE ? dg_spec_seek_ms(s, band_delta) : 0.0;
		if (s->layout != DG_LAYOUT_SERPENTINE)
			z->skew[DG_TR_BAND] = 0; /* no band transitions */
		for (int k = 0; k < DG_TR_N; k++) {
			bool given = z->skew[k] != UINT32_MAX;
			for (uint32_t h = 0; h < s->heads; h++) {
				uint32_t S = z->hspt[h];
				if (k == DG_TR_BAND && s->layout != DG_LAYOUT_SERPENTINE)
					z->hskew[k * s->heads + h] = 0;
				else if (given)
					z->hskew[k * s->heads + h] = z->skew[k] % S;
				else
					z->hskew[k * s->heads + h] =
					    default_skew_phys(z->move_ms[k], s->period_ms, S,
							      s->phys_ratio ? s->phys_ratio : 1);
			}
			if (k == DG_TR_BAND && s->layout != DG_LAYOUT_SERPENTINE)
				continue;
			z->skew[k] = z->hskew[k * s->heads];
		}
	}
}

static int defect_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct dg_defect *)a)->lba, y = ((const struct dg_defect *)b)->lba;

	return x < y ? -1 : x > y;
}

int spec_parse_defects(struct spec_ctx *c, struct dg_spec *s, const json_t *defects)
{
	static const char *const keys[] = {"lba", "count", "kind", "extra_ms", NULL};
	size_t i;
	const json_t *dv;
	int rc;

	if (!defects)
		return 0;
	if (!json_is_array(defects))
		return spec_bad(c, "defects", "must be an array of {lba, count, kind, extra_ms}");
	if (json_array_size(defects) > DG_SPEC_MAX_DEFECTS)
		return spec_bad(c, "defects", "%zu defects, more than the limit of %u",
				json_array_size(defects), DG_SPEC_MAX_DEFECTS);
	s->ndefects = json_array_size(defects);
	if (!s->ndefects)
		return 0;
	s->defects = calloc(s->ndefects, sizeof(*s->defects));
	if (!s->defects)
		return -ENOMEM;
	json_array_foreach((json_t *)defects, i, dv)
	{
		char pre[32], path[48], got[64];
		int64_t lba, count;
		const json_t *kind;
		struct dg_defect *d = &s->defects[i];

		snprintf(pre, sizeof(pre), "defects[%zu]", i);
		if (!json_is_object(dv))
			return spec_bad(c, pre, "must be an object {lba, count, kind, extra_ms}");
		if ((rc = spec_check_keys(c, dv, pre, keys)) ||
		    (rc = spec_get_int(c, dv, pre, "lba", true, 0, INT64_MAX, 0, &lba)) ||
		    (rc = spec_get_int(c, dv, pre, "count", true, 1, INT64_MAX, 0, &count)) ||
		    (rc = spec_get_num(c, dv, pre, "extra_ms", true, false, 1e6, 0, &d->extra_ms)))
			return rc;
		snprintf(path, sizeof(path), "%s.kind", pre);
		kind = json_object_get(dv, "kind");
		if (!kind)
			return spec_bad(c, path, "missing");
		if (json_is_string(kind) && !strcmp(json_string_value(kind), "error"))
			d->error = true;
		else if (json_is_string(kind) && !strcmp(json_string_value(kind), "slow"))
			d->error = false;
		else {
			spec_show(kind, got, sizeof(got));
			return spec_bad(c, path, "must be \"error\" or \"slow\" (got %s)", got);
		}
		if ((uint64_t)lba >= s->capacity_sectors ||
		    (uint64_t)count > s->capacity_sectors - (uint64_t)lba)
			return spec_bad(
			    c, pre,
			    "range lba %lld + count %lld lies beyond the capacity (%llu "
			    "sectors)",
			    (long long)lba, (long long)count,
			    (unsigned long long)s->capacity_sectors);
		d->lba = (uint64_t)lba;
		d->count = (uint64_t)count;
	}
	/* sort by lba (O(n log n) whatever the order they come in) and reject overlaps */
	qsort(s->defects, s->ndefects, sizeof(*s->defects), defect_cmp);
	for (size_t a = 1; a < s->ndefects; a++)
		if (s->defects[a - 1].lba + s->defects[a - 1].count > s->defects[a].lba)
			return spec_bad(c, "defects", "ranges overlap (at lba %llu)",
					(unsigned long long)s->defects[a].lba);
	return 0;
}
