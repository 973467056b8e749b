/* SPDX-License-Identifier: MIT */
/*
 * Drive specs (shared/drive-spec.md): parsing, validation and the derived geometry — zone start
 * LBAs and cylinders, skews, the seek curve — plus LBA -> cylinder/head/sector mapping.
 *
 * Seek curve: Ruemmler & Wilkes, "An introduction to disk drive modeling", IEEE Computer 1994.
 * Skews: the default skew of a transition with move time tau is ceil(tau/T*S) + 1 sectors, the
 * smallest skew for which a sequential read loses no revolution (Worthington et al. 1995).
 *
 * Serpentine layout (our reading of drive-spec.md): inside each band of K cylinders, head 0 walks
 * the band's cylinders forward, head 1 walks them backward, head 2 forward, and so on — the
 * direction alternates, so every head change inside a band is a pure head switch; then the next
 * band. A zone's last band may be shorter than K.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model_priv.h"
#include "util.h"

/* ---- error reporting ---- */

struct ctx {
	const char *origin;
	char *err;
	size_t errlen;
	struct dg_warnings *warnings;
};

static int __attribute__((format(printf, 3, 4)))
bad(struct ctx *c, const char *path, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "%s: %s%s%s", c->origin, path ? path : "",
			 path ? ": " : "", msg);
	return -EINVAL;
}

/* A short rendering of a JSON value for "(got X)". */
static void show(const json_t *v, char *buf, size_t len)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

	if (!s) {
		snprintf(buf, len, "?");
		return;
	}
	if (strlen(s) > 40)
		snprintf(buf, len, "%.37s...", s);
	else
		snprintf(buf, len, "%s", s);
	free(s);
}

static int check_keys(struct ctx *c, const json_t *obj, const char *path,
		      const char *const *allowed)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v)
	{
		const char *const *a = allowed;
		while (*a && strcmp(*a, key))
			a++;
		if (!*a) {
			/* The key is shown JSON-escaped (without its quotes): a newline in it
			 * must not split the one-line message. */
			char shown[48];
			json_t *k = json_string(key);
			size_t len;

			show(k, shown, sizeof(shown));
			json_decref(k);
			len = strlen(shown);
			if (len >= 2 && shown[0] == '"' && shown[len - 1] == '"') {
				memmove(shown, shown + 1, len - 2);
				shown[len - 2] = '\0';
			}
			if (path)
				return bad(c, NULL, "unknown key '%s.%s'", path, shown);
			return bad(c, NULL, "unknown key '%s'", shown);
		}
	}
	return 0;
}

static void keypath(char *buf, size_t len, const char *prefix, const char *key)
{
	if (prefix)
		snprintf(buf, len, "%s.%s", prefix, key);
	else
		snprintf(buf, len, "%s", key);
}

/* Reads an integer in [min, max]; absent -> *out = dflt unless required. */
static int get_int(struct ctx *c, const json_t *obj, const char *prefix, const char *key,
		   bool required, int64_t min, int64_t max, int64_t dflt, int64_t *out)
{
	char path[128], got[64];
	json_t *v = json_object_get(obj, key);

	keypath(path, sizeof(path), prefix, key);
	if (!v) {
		if (required)
			return bad(c, path, "missing");
		*out = dflt;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min) {
		show(v, got, sizeof(got));
		if (min == 1)
			return bad(c, path, "must be a positive integer (got %s)", got);
		if (min == 0)
			return bad(c, path, "must be an integer >= 0 (got %s)", got);
		return bad(c, path, "must be an integer in [%lld, %lld] (got %s)", (long long)min,
			   (long long)max, got);
	}
	if (json_integer_value(v) > max)
		return bad(c, path, "must be at most %lld (got %lld)", (long long)max,
			   (long long)json_integer_value(v));
	*out = json_integer_value(v);
	return 0;
}

/* Reads a finite number; positive: > 0, else >= 0. */
static int get_num(struct ctx *c, const json_t *obj, const char *prefix, const char *key,
		   bool required, bool positive, double max, double dflt, double *out)
{
	char path[128], got[64];
	json_t *v = json_object_get(obj, key);

	keypath(path, sizeof(path), prefix, key);
	if (!v) {
		if (required)
			return bad(c, path, "missing");
		*out = dflt;
		return 0;
	}
	double x = json_is_number(v) ? json_number_value(v) : NAN;
	if (!isfinite(x) || (positive ? x <= 0 : x < 0)) {
		show(v, got, sizeof(got));
		return bad(c, path, "must be a number %s (got %s)", positive ? "> 0" : ">= 0", got);
	}
	/* bounds that keep every derived time finite and every conversion defined */
	if (x > max || (positive && x < 1e-6)) {
		show(v, got, sizeof(got));
		return bad(c, path, "must be between %g and %g (got %s)", positive ? 1e-6 : 0.0,
			   max, got);
	}
	*out = x;
	return 0;
}

static int get_str(struct ctx *c, const json_t *obj, const char *key, const char **out)
{
	char got[64];
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v)) {
		show(v, got, sizeof(got));
		return bad(c, key, "must be a string (got %s)", got);
	}
	*out = json_string_value(v);
	return 0;
}

/* ---- seek curve ---- */

double dg_spec_seek_ms(const struct dg_spec *spec, uint64_t cylinders)
{
	double d = (double)cylinders;

	if (cylinders == 0)
		return 0.0;
	if (d < spec->seek_boundary)
		return spec->seek_a + spec->seek_b * sqrt(d);
	return spec->seek_c + spec->seek_e * d;
}

/*
 * Friendly figures -> (a, b, c, e, B) as drive-spec.md defines them. The mean of g_B(D) over
 * P(D = d) = 2(N-d)/(N(N-1)) is evaluated in O(1) per B from prefix sums, so the bisection on B
 * is cheap. r(B) = E[g_B(D)] / g_B(N-1) rises from about 1/3 (B = 1: linear) to 8/15 (B = N-1:
 * pure square root); B is chosen with r(B) = (average - t2t) / (full - t2t).
 */
struct gsum {
	uint64_t n; /* N */
	double *p0; /* p0[m] = sum_{1<=d<m} P(d) */
	double *p1; /* sum P(d) sqrt(d) */
	double *pd; /* sum P(d) d */
};

static double g_at(double B, double d)
{
	if (d < B)
		return sqrt(d) - 1.0;
	return sqrt(B) / 2.0 + d / (2.0 * sqrt(B)) - 1.0;
}

static double ratio(const struct gsum *g, double B)
{
	uint64_t n = g->n;
	uint64_t m = (uint64_t)ceil(B); /* first d >= B */

	if (m < 1)
		m = 1;
	if (m > n)
		m = n;
	double below = g->p1[m] - g->p0[m];
	double rest0 = g->p0[n] - g->p0[m];
	double restd = g->pd[n] - g->pd[m];
	double mean = below + rest0 * (sqrt(B) / 2.0 - 1.0) + restd / (2.0 * sqrt(B));
	return mean / g_at(B, (double)(n - 1));
}

static int friendly_seek(struct ctx *c, struct dg_spec *s, double t2t, double avg, double full)
{
	uint64_t n = s->cylinders;
	struct gsum g = {.n = n};
	int rc = -ENOMEM;

	if (!(t2t < avg && avg < full))
		return bad(c, "seek",
			   "need track_to_track_ms < average_ms < full_stroke_ms (got %g, %g, %g)",
			   t2t, avg, full);
	if (n < 3)
		return bad(c, "seek",
			   "the friendly figures need at least 3 cylinders (the zones hold %llu)",
			   (unsigned long long)n);
	g.p0 = malloc((n + 1) * sizeof(double));
	g.p1 = malloc((n + 1) * sizeof(double));
	g.pd = malloc((n + 1) * sizeof(double));
	if (!g.p0 || !g.p1 || !g.pd)
		goto err;
	g.p0[0] = g.p1[0] = g.pd[0] = 0.0;
	g.p0[1] = g.p1[1] = g.pd[1] = 0.0;
	double nn = (double)n;
	for (uint64_t d = 1; d < n; d++) {
		double p = 2.0 * (nn - (double)d) / (nn * (nn - 1.0));
		g.p0[d + 1] = g.p0[d] + p;
		g.p1[d + 1] = g.p1[d] + p * sqrt((double)d);
		g.pd[d + 1] = g.pd[d] + p * (double)d;
	}
	double want = (avg - t2t) / (full - t2t);
	double lo = 1.0, hi = (double)(n - 1), B;
	double rlo = ratio(&g, lo), rhi = ratio(&g, hi);
	if (want <= rlo) {
		B = lo;
		if (want < rlo - 1e-12 && c->warnings)
			dg_warnings_add(
			    c->warnings,
			    "%s: seek.average_ms %g is below the feasible range (%.4g..%.4g "
			    "ms): using a linear seek curve (boundary 1 cylinder)",
			    c->origin, avg, t2t + rlo * (full - t2t), t2t + rhi * (full - t2t));
	} else if (want >= rhi) {
		B = hi;
		if (want > rhi + 1e-12 && c->warnings)
			dg_warnings_add(
			    c->warnings,
			    "%s: seek.average_ms %g is above the feasible range (%.4g..%.4g "
			    "ms): using a square-root seek curve (boundary %llu cylinders)",
			    c->origin, avg, t2t + rlo * (full - t2t), t2t + rhi * (full - t2t),
			    (unsigned long long)(n - 1));
	} else {
		for (int i = 0; i < 200 && hi - lo > 1e-9 * hi; i++) {
			double mid = 0.5 * (lo + hi);
			if (ratio(&g, mid) < want)
				lo = mid;
			else
				hi = mid;
		}
		B = 0.5 * (lo + hi);
	}
	double b = (full - t2t) / g_at(B, (double)(n - 1));
	s->seek_b = b;
	s->seek_a = t2t - b;
	s->seek_e = b / (2.0 * sqrt(B));
	s->seek_c = s->seek_a + b * sqrt(B) / 2.0;
	s->seek_boundary = B;
	s->seek_friendly = true;
	rc = 0;
err:
	free(g.p0);
	free(g.p1);
	free(g.pd);
	return rc;
}

static int parse_seek(struct ctx *c, struct dg_spec *s, const json_t *seek)
{
	static const char *const keys[] = {"a",
					   "b",
					   "c",
					   "e",
					   "boundary_cylinders",
					   "track_to_track_ms",
					   "average_ms",
					   "full_stroke_ms",
					   NULL};
	int rc;

	if (!seek)
		return bad(c, "seek", "missing");
	if (!json_is_object(seek))
		return bad(c, "seek", "must be an object");
	if ((rc = check_keys(c, seek, "seek", keys)))
		return rc;
	bool friendly = json_object_get(seek, "track_to_track_ms") ||
			json_object_get(seek, "average_ms") ||
			json_object_get(seek, "full_stroke_ms");
	bool explicit = json_object_get(seek, "a") || json_object_get(seek, "b") ||
			json_object_get(seek, "c") || json_object_get(seek, "e") ||
			json_object_get(seek, "boundary_cylinders");
	if (friendly && explicit)
		return bad(c, "seek",
			   "give either {a, b, c, e, boundary_cylinders} or {track_to_track_ms, "
			   "average_ms, full_stroke_ms}, not both");
	if (!friendly && !explicit)
		return bad(c, "seek",
			   "needs {a, b, c, e, boundary_cylinders} or {track_to_track_ms, "
			   "average_ms, full_stroke_ms}");
	if (friendly) {
		double t2t, avg, full;
		if ((rc =
			 get_num(c, seek, "seek", "track_to_track_ms", true, true, 1e6, 0, &t2t)) ||
		    (rc = get_num(c, seek, "seek", "average_ms", true, true, 1e6, 0, &avg)) ||
		    (rc = get_num(c, seek, "seek", "full_stroke_ms", true, true, 1e6, 0, &full)))
			return rc;
		return friendly_seek(c, s, t2t, avg, full);
	}
	if ((rc = get_num(c, seek, "seek", "a", true, false, 1e6, 0, &s->seek_a)) ||
	    (rc = get_num(c, seek, "seek", "b", true, false, 1e6, 0, &s->seek_b)) ||
	    (rc = get_num(c, seek, "seek", "c", true, false, 1e6, 0, &s->seek_c)) ||
	    (rc = get_num(c, seek, "seek", "e", true, false, 1e6, 0, &s->seek_e)) ||
	    (rc = get_num(c, seek, "seek", "boundary_cylinders", true, true, 1e12, 0,
			  &s->seek_boundary)))
		return rc;
	if (!(dg_spec_seek_ms(s, 1) > 0))
		return bad(c, "seek", "seek(1) must be > 0 (a + b = %g)", dg_spec_seek_ms(s, 1));
	return 0;
}

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
static int parse_surfaces(struct ctx *c, struct dg_spec *s, struct dg_zone *z, const json_t *v,
			  const char *pre, int64_t *spt)
{
	char path[64], got[64];
	uint32_t H = s->heads, r = s->phys_ratio ? s->phys_ratio : 1;
	int rc;

	snprintf(path, sizeof(path), "%s.sectors_per_track", pre);
	if (json_is_array(v)) {
		if (json_array_size(v) != H)
			return bad(c, path, "needs one size per head: %u integers (got %zu)", H,
				   json_array_size(v));
		for (uint32_t h = 0; h < H; h++) {
			const json_t *e = json_array_get(v, h);
			if (!json_is_integer(e) || json_integer_value(e) < 1 ||
			    json_integer_value(e) > DG_SPEC_MAX_SPT) {
				show(e, got, sizeof(got));
				return bad(c, path,
					   "head %u: must be an integer in [1, %u] (got %s)", h,
					   DG_SPEC_MAX_SPT, got);
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
		rc = get_int(c, o, pre, "sectors_per_track", true, 1, DG_SPEC_MAX_SPT, 0, spt);
		json_decref(o);
		if (rc)
			return rc;
		for (uint32_t h = 0; h < H; h++)
			z->hspt[h] = (uint32_t)*spt;
	}
	z->hpre[0] = 0;
	for (uint32_t h = 0; h < H; h++) {
		if (z->hspt[h] % r)
			return bad(c, path,
				   "%u sectors (head %u) is not a whole number of %u-byte physical "
				   "sectors",
				   z->hspt[h], h, s->physical_sector_bytes);
		z->hpre[h + 1] = z->hpre[h] + z->hspt[h];
	}
	z->cyl_sectors = z->hpre[H];
	return 0;
}

/* physical_sector_bytes (before the zones: their sizes must be whole physical sectors). */
static int parse_physical(struct ctx *c, struct dg_spec *s, const json_t *root)
{
	int64_t v;
	int rc;

	if ((rc = get_int(c, root, NULL, "physical_sector_bytes", false, 1, 1 << 16,
			  s->sector_bytes, &v)))
		return rc;
	if (v != 512 && v != 4096)
		return bad(c, "physical_sector_bytes", "must be 512 or 4096 (got %lld)",
			   (long long)v);
	if ((uint32_t)v < s->sector_bytes)
		return bad(c, "physical_sector_bytes",
			   "must be at least logical_sector_bytes (%lld < %u)", (long long)v,
			   s->sector_bytes);
	s->physical_sector_bytes = (uint32_t)v;
	s->phys_ratio = s->physical_sector_bytes / s->sector_bytes;
	if (json_object_get(root, "physical_sector_bytes"))
		s->v2 = true;
	return 0;
}

/* look_behind, ncq_depth, jitter_ms, background, seed; physical alignment of defects. */
static int parse_v2(struct ctx *c, struct dg_spec *s, const json_t *root)
{
	static const char *const bg_keys[] = {"every_s", "busy_ms", NULL};
	const json_t *v;
	char got[64];
	int64_t n;
	int rc;

	v = json_object_get(root, "look_behind");
	if (v && !json_is_boolean(v)) {
		show(v, got, sizeof(got));
		return bad(c, "look_behind", "must be true or false (got %s)", got);
	}
	s->look_behind = v && json_is_true(v);
	if ((rc = get_int(c, root, NULL, "ncq_depth", false, 1, 32, 1, &n)))
		return rc;
	s->ncq_depth = (uint32_t)n;
	if ((rc = get_num(c, root, NULL, "jitter_ms", false, false, 1e4, 0, &s->jitter_ms)))
		return rc;
	if ((rc = get_int(c, root, NULL, "seed", false, 0, INT64_MAX, 1, &n)))
		return rc;
	s->seed = (uint64_t)n;
	v = json_object_get(root, "background");
	if (v) {
		if (!json_is_object(v))
			return bad(c, "background", "must be an object {every_s, busy_ms}");
		if ((rc = check_keys(c, v, "background", bg_keys)) ||
		    (rc = get_num(c, v, "background", "every_s", true, true, 1e6, 0,
				  &s->bg_every_s)) ||
		    (rc = get_num(c, v, "background", "busy_ms", true, true, 1e9, 0,
				  &s->bg_busy_ms)))
			return rc;
		if (s->bg_busy_ms >= s->bg_every_s * 1e3)
			return bad(c, "background.busy_ms",
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
			return bad(c, pre,
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

static int parse_zones(struct ctx *c, struct dg_spec *s, const json_t *zones, int64_t top_tskew,
		       int64_t top_cskew)
{
	static const char *const keys[] = {"cylinders", "sectors_per_track", "track_skew",
					   "cylinder_skew", NULL};
	size_t i;
	const json_t *zv;
	uint64_t lba = 0, track = 0, cyl = 0;
	int rc;

	if (!zones)
		return bad(c, "zones", "missing");
	if (!json_is_array(zones) || json_array_size(zones) == 0)
		return bad(c, "zones",
			   "must be a non-empty array of {cylinders, sectors_per_track}");
	if (json_array_size(zones) > DG_SPEC_MAX_ZONES)
		return bad(c, "zones", "%zu zones, more than the limit of %u",
			   json_array_size(zones), DG_SPEC_MAX_ZONES);
	/* The serpentine truth still walks a head's pass where a seek's two ends lie in different
	 * zones or passes: its zones x heads and heads are bounded so that it answers in well under
	 * a second (real drives: a few dozen zones, at most about 20 heads). */
	if (s->layout == DG_LAYOUT_SERPENTINE && s->heads > DG_SPEC_MAX_SERPENTINE_HEADS)
		return bad(c, "heads",
			   "%u heads, more than the limit of %u for the serpentine layout",
			   s->heads, DG_SPEC_MAX_SERPENTINE_HEADS);
	if (s->layout == DG_LAYOUT_SERPENTINE &&
	    (uint64_t)s->band_cylinders * s->heads > DG_SPEC_MAX_BAND_TRACKS)
		return bad(c, "band_cylinders",
			   "%u cylinders x %u heads, more than the limit of %u tracks in a band",
			   s->band_cylinders, s->heads, DG_SPEC_MAX_BAND_TRACKS);
	if (s->layout == DG_LAYOUT_SERPENTINE &&
	    json_array_size(zones) * s->heads > DG_SPEC_MAX_SERPENTINE_ZONE_HEADS)
		return bad(
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
			return bad(c, pre, "must be an object {cylinders, sectors_per_track}");
		if ((rc = check_keys(c, zv, pre, keys)) ||
		    (rc = get_int(c, zv, pre, "cylinders", true, 1, 1 << 24, 0, &cyls)) ||
		    (rc = parse_surfaces(c, s, z, json_object_get(zv, "sectors_per_track"), pre,
					 &spt)) ||
		    (rc =
			 get_int(c, zv, pre, "track_skew", false, 0, 1 << 24, top_tskew, &tskew)) ||
		    (rc = get_int(c, zv, pre, "cylinder_skew", false, 0, 1 << 24, top_cskew,
				  &cskew)))
			return rc;
		/* bounds that keep the truth's per-cylinder and per-track work sane (real drives
		 * have well under a million cylinders and a few million tracks) */
		char cpath[48];
		snprintf(cpath, sizeof(cpath), "%s.cylinders", pre);
		if (cyl + (uint64_t)cyls > DG_SPEC_MAX_CYLINDERS)
			return bad(c, cpath,
				   "the zones hold more than %u cylinders in total "
				   "(the limit)",
				   DG_SPEC_MAX_CYLINDERS);
		uint32_t max_tracks = s->layout == DG_LAYOUT_SERPENTINE
					  ? DG_SPEC_MAX_SERPENTINE_TRACKS
					  : DG_SPEC_MAX_TRACKS;
		if (track + (uint64_t)cyls * s->heads > max_tracks)
			return bad(c, cpath,
				   "the zones hold more than %u tracks (cylinders x "
				   "heads) in total (the limit%s)",
				   max_tracks,
				   s->layout == DG_LAYOUT_SERPENTINE ? " of the serpentine layout"
								     : "");
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
		return bad(c, "zones", "the geometry holds more than 2^48 sectors");
	return 0;
}

static void derive_skews(struct dg_spec *s)
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

static int parse_defects(struct ctx *c, struct dg_spec *s, const json_t *defects)
{
	static const char *const keys[] = {"lba", "count", "kind", "extra_ms", NULL};
	size_t i;
	const json_t *dv;
	int rc;

	if (!defects)
		return 0;
	if (!json_is_array(defects))
		return bad(c, "defects", "must be an array of {lba, count, kind, extra_ms}");
	if (json_array_size(defects) > DG_SPEC_MAX_DEFECTS)
		return bad(c, "defects", "%zu defects, more than the limit of %u",
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
			return bad(c, pre, "must be an object {lba, count, kind, extra_ms}");
		if ((rc = check_keys(c, dv, pre, keys)) ||
		    (rc = get_int(c, dv, pre, "lba", true, 0, INT64_MAX, 0, &lba)) ||
		    (rc = get_int(c, dv, pre, "count", true, 1, INT64_MAX, 0, &count)) ||
		    (rc = get_num(c, dv, pre, "extra_ms", true, false, 1e6, 0, &d->extra_ms)))
			return rc;
		snprintf(path, sizeof(path), "%s.kind", pre);
		kind = json_object_get(dv, "kind");
		if (!kind)
			return bad(c, path, "missing");
		if (json_is_string(kind) && !strcmp(json_string_value(kind), "error"))
			d->error = true;
		else if (json_is_string(kind) && !strcmp(json_string_value(kind), "slow"))
			d->error = false;
		else {
			show(kind, got, sizeof(got));
			return bad(c, path, "must be \"error\" or \"slow\" (got %s)", got);
		}
		if ((uint64_t)lba >= s->capacity_sectors ||
		    (uint64_t)count > s->capacity_sectors - (uint64_t)lba)
			return bad(c, pre,
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
			return bad(c, "defects", "ranges overlap (at lba %llu)",
				   (unsigned long long)s->defects[a].lba);
	return 0;
}

static char *dupstr(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* The name to show when the spec has none: the file's base name without ".json". */
static char *name_from_origin(const char *origin)
{
	const char *b = strrchr(origin, '/');
	b = b ? b + 1 : origin;
	size_t n = strlen(b);
	if (n > 5 && !strcmp(b + n - 5, ".json"))
		n -= 5;
	return strndup(b, n);
}

/* ---- the top-level keys: a field table walked in order ---- */

/* name, description (owned copies), source and notes (checked, not kept). */
static int parse_text(struct ctx *c, struct dg_spec *s, const json_t *root)
{
	const char *name, *desc, *text;
	int rc;

	if ((rc = get_str(c, root, "name", &name)) ||
	    (rc = get_str(c, root, "description", &desc)) ||
	    (rc = get_str(c, root, "source", &text)) || (rc = get_str(c, root, "notes", &text)))
		return rc;
	s->name = name ? strdup(name) : name_from_origin(c->origin);
	s->description = dupstr(desc ? desc : "");
	return s->name && s->description ? 0 : -ENOMEM;
}

static int check_sector(struct ctx *c, struct dg_spec *s, const json_t *root)
{
	(void)root;
	if (s->sector_bytes != 512 && s->sector_bytes != 4096)
		return bad(c, "logical_sector_bytes", "must be 512 or 4096 (got %lld)",
			   (long long)s->sector_bytes);
	return 0;
}

static int check_rpm(struct ctx *c, struct dg_spec *s, const json_t *root)
{
	(void)root;
	if (s->rpm < 60 || s->rpm > 100000)
		return bad(c, "rpm", "must be between 60 and 100000 (got %g)", s->rpm);
	s->period_ms = 60000.0 / s->rpm;
	return 0;
}

/* layout, and band_cylinders for a serpentine one. */
static int parse_layout(struct ctx *c, struct dg_spec *s, const json_t *root)
{
	const json_t *layout = json_object_get(root, "layout");
	char got[64];
	int64_t v;
	int rc;

	s->layout = DG_LAYOUT_CYLINDER;
	if (layout && json_is_string(layout) && !strcmp(json_string_value(layout), "serpentine")) {
		s->layout = DG_LAYOUT_SERPENTINE;
	} else if (layout &&
		   !(json_is_string(layout) && !strcmp(json_string_value(layout), "cylinder"))) {
		show(layout, got, sizeof(got));
		return bad(c, "layout", "must be \"cylinder\" or \"serpentine\" (got %s)", got);
	}
	if (s->layout == DG_LAYOUT_SERPENTINE) {
		if ((rc = get_int(c, root, NULL, "band_cylinders", true, 1, 1 << 24, 0, &v)))
			return rc;
		s->band_cylinders = (uint32_t)v;
	} else if (json_object_get(root, "band_cylinders")) {
		return bad(c, "band_cylinders", "applies only to layout \"serpentine\"");
	}
	return 0;
}

/* The zones with the top-level skews they default to. */
static int parse_geometry(struct ctx *c, struct dg_spec *s, const json_t *root)
{
	int64_t tskew, cskew;
	int rc;

	if ((rc = get_int(c, root, NULL, "track_skew", false, 0, 1 << 24, -1, &tskew)) ||
	    (rc = get_int(c, root, NULL, "cylinder_skew", false, 0, 1 << 24, -1, &cskew)))
		return rc;
	return parse_zones(c, s, json_object_get(root, "zones"), tskew, cskew);
}

static int parse_seek_key(struct ctx *c, struct dg_spec *s, const json_t *root)
{
	return parse_seek(c, s, json_object_get(root, "seek"));
}

/* The read-ahead lands in the cache: by default 1 MiB or the whole cache when smaller. */
static int64_t read_ahead_default(const struct dg_spec *s)
{
	return (int64_t)(DG_SPEC_DEFAULT_READ_AHEAD_BYTES < s->cache_bytes
			     ? DG_SPEC_DEFAULT_READ_AHEAD_BYTES
			     : s->cache_bytes);
}

static int check_read_ahead(struct ctx *c, struct dg_spec *s, const json_t *root)
{
	(void)root;
	if (s->read_ahead_bytes > s->cache_bytes)
		return bad(
		    c, "read_ahead_bytes",
		    "must not exceed cache_bytes (%llu > %llu): read-ahead lands in the cache",
		    (unsigned long long)s->read_ahead_bytes, (unsigned long long)s->cache_bytes);
	return 0;
}

static int64_t capacity_default(const struct dg_spec *s)
{
	return (int64_t)s->geometry_sectors;
}

static int check_capacity(struct ctx *c, struct dg_spec *s, const json_t *root)
{
	(void)root;
	if (s->capacity_sectors > s->geometry_sectors)
		return bad(c, "capacity_sectors", "%lld is more than the zones hold (%llu sectors)",
			   (long long)s->capacity_sectors, (unsigned long long)s->geometry_sectors);
	derive_skews(s);
	return 0;
}

static int parse_defects_key(struct ctx *c, struct dg_spec *s, const json_t *root)
{
	return parse_defects(c, s, json_object_get(root, "defects"));
}

enum field_type {
	F_STEP, /* `step` reads what it needs (several keys, an object, an array) */
	F_U32,	/* an integer in [imin, imax] into a uint32_t */
	F_U64,	/* an integer in [imin, imax] into a uint64_t */
	F_REAL, /* a finite number in [0, rmax] (> 0 when `positive`) into a double */
};

/* One top-level key of a spec, or one step that reads several. Absent and not required, a
 * value takes its default (`dflt_of` when the default depends on keys read before); `check`
 * then applies the rules that span keys. Steps run in the table's order: the sector sizes
 * before the zones, the zones before the capacity they bound. */
struct field {
	const char *key;
	enum field_type type;
	bool required, positive;
	int64_t imin, imax, idflt;
	double rmax, rdflt;
	size_t offset; /* in struct dg_spec */
	int64_t (*dflt_of)(const struct dg_spec *s);
	int (*step)(struct ctx *c, struct dg_spec *s, const json_t *root);
	int (*check)(struct ctx *c, struct dg_spec *s, const json_t *root);
};

#define AT(member) offsetof(struct dg_spec, member)

static const struct field fields[] = {
    {.type = F_STEP, .step = parse_text},
    {"logical_sector_bytes", F_U32, .imin = 1, .imax = 1 << 16,
     .idflt = DG_SPEC_DEFAULT_SECTOR_BYTES, .offset = AT(sector_bytes), .check = check_sector},
    {.type = F_STEP, .step = parse_physical},
    {"heads", F_U32, .required = true, .imin = 1, .imax = 256, .offset = AT(heads)},
    {"rpm", F_REAL, .required = true, .positive = true, .rmax = 1e6, .offset = AT(rpm),
     .check = check_rpm},
    {.type = F_STEP, .step = parse_layout},
    {.type = F_STEP, .step = parse_geometry},
    {"head_switch_ms", F_REAL, .required = true, .rmax = 1e6, .offset = AT(head_switch_ms)},
    {"command_overhead_ms", F_REAL, .rmax = 1e6, .rdflt = DG_SPEC_DEFAULT_OVERHEAD_MS,
     .offset = AT(command_overhead_ms)},
    {"interface_mbps", F_REAL, .positive = true, .rmax = 1e6,
     .rdflt = DG_SPEC_DEFAULT_INTERFACE_MBPS, .offset = AT(interface_mbps)},
    {.type = F_STEP, .step = parse_seek_key},
    {"cache_bytes", F_U64, .imin = 0, .imax = INT64_MAX,
     .idflt = (int64_t)DG_SPEC_DEFAULT_CACHE_BYTES, .offset = AT(cache_bytes)},
    {"read_ahead_bytes", F_U64, .imin = 0, .imax = INT64_MAX, .offset = AT(read_ahead_bytes),
     .dflt_of = read_ahead_default, .check = check_read_ahead},
    {"capacity_sectors", F_U64, .imin = 1, .imax = INT64_MAX, .offset = AT(capacity_sectors),
     .dflt_of = capacity_default, .check = check_capacity},
    {.type = F_STEP, .step = parse_defects_key},
    {.type = F_STEP, .step = parse_v2},
};

/* Reads one entry of `fields` into `s`. Returns 0, -EINVAL (one sentence in c->err) or
 * -ENOMEM. */
static int read_field(struct ctx *c, struct dg_spec *s, const json_t *root, const struct field *f)
{
	char *dst = (char *)s + f->offset;
	int64_t v;
	int rc;

	switch (f->type) {
	case F_STEP:
		return f->step(c, s, root);
	case F_U32:
	case F_U64:
		rc = get_int(c, root, NULL, f->key, f->required, f->imin, f->imax,
			     f->dflt_of ? f->dflt_of(s) : f->idflt, &v);
		if (rc)
			return rc;
		if (f->type == F_U32)
			*(uint32_t *)(void *)dst = (uint32_t)v;
		else
			*(uint64_t *)(void *)dst = (uint64_t)v;
		break;
	case F_REAL:
		rc = get_num(c, root, NULL, f->key, f->required, f->positive, f->rmax, f->rdflt,
			     (double *)(void *)dst);
		if (rc)
			return rc;
		break;
	}
	return f->check ? f->check(c, s, root) : 0;
}

int dg_spec_parse(const char *json_text, size_t len, const char *origin, struct dg_spec **out,
		  struct dg_warnings *warnings, char *err, size_t errlen)
{
	static const char *const keys[] = {"name",
					   "description",
					   "source",
					   "notes",
					   "logical_sector_bytes",
					   "heads",
					   "rpm",
					   "zones",
					   "layout",
					   "band_cylinders",
					   "seek",
					   "head_switch_ms",
					   "track_skew",
					   "cylinder_skew",
					   "command_overhead_ms",
					   "interface_mbps",
					   "cache_bytes",
					   "read_ahead_bytes",
					   "capacity_sectors",
					   "defects",
					   "physical_sector_bytes",
					   "look_behind",
					   "ncq_depth",
					   "jitter_ms",
					   "background",
					   "seed",
					   NULL};
	struct ctx c = {
	    .origin = origin ? origin : "spec", .err = err, .errlen = errlen, .warnings = warnings};
	json_error_t je;
	json_t *root;
	struct dg_spec *s = NULL;
	int rc;

	*out = NULL;
	/* the parse tree costs tens of bytes per input byte: bound the input first */
	if (len > DG_SPEC_MAX_FILE_BYTES)
		return bad(&c, NULL, "%zu bytes, more than the limit of %u for a drive spec", len,
			   DG_SPEC_MAX_FILE_BYTES);
	root = json_loadb(json_text, len, JSON_REJECT_DUPLICATES, &je);
	/* jansson leaves the error empty when one of its allocations failed */
	if (!root && (json_error_code(&je) == json_error_out_of_memory || !je.text[0]))
		return bad(&c, NULL, "%s", strerror(ENOMEM));
	if (!root)
		return bad(&c, NULL, "not valid JSON: %s (line %d, column %d)", je.text, je.line,
			   je.column);
	s = calloc(1, sizeof(*s));
	if (!s) {
		rc = -ENOMEM;
		goto err;
	}
	if (!json_is_object(root)) {
		rc = bad(&c, NULL, "a drive spec must be a JSON object");
		goto err;
	}
	if ((rc = check_keys(&c, root, NULL, keys)))
		goto err;
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
		if ((rc = read_field(&c, s, root, &fields[i])))
			goto err;
	json_decref(root);
	*out = s;
	return 0;
err:
	if (rc == -ENOMEM && err && errlen)
		snprintf(err, errlen, "%s: out of memory", c.origin);
	json_decref(root);
	dg_spec_free(s);
	return rc;
}

void dg_spec_free(struct dg_spec *spec)
{
	if (!spec)
		return;
	free(spec->name);
	free(spec->description);
	free(spec->zones);
	free(spec->defects);
	free(spec->zone_heads);
	free(spec);
}
