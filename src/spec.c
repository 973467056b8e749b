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
#include "spec_priv.h"
#include "util.h"

/* ---- error reporting ---- */

int dg_spec_bad(struct spec_ctx *c, const char *path, const char *fmt, ...)
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
void dg_spec_show(const json_t *v, char *buf, size_t len)
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

int dg_spec_check_keys(struct spec_ctx *c, const json_t *obj, const char *path,
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

			dg_spec_show(k, shown, sizeof(shown));
			json_decref(k);
			len = strlen(shown);
			if (len >= 2 && shown[0] == '"' && shown[len - 1] == '"') {
				memmove(shown, shown + 1, len - 2);
				shown[len - 2] = '\0';
			}
			if (path)
				return dg_spec_bad(c, NULL, "unknown key '%s.%s'", path, shown);
			return dg_spec_bad(c, NULL, "unknown key '%s'", shown);
		}
	}
	return 0;
}

void dg_spec_keypath(char *buf, size_t len, const char *prefix, const char *key)
{
	if (prefix)
		snprintf(buf, len, "%s.%s", prefix, key);
	else
		snprintf(buf, len, "%s", key);
}

/* Reads an integer in [min, max]; absent -> *out = dflt unless required. */
int dg_spec_get_int(struct spec_ctx *c, const json_t *obj, const char *prefix, const char *key,
		    bool required, int64_t min, int64_t max, int64_t dflt, int64_t *out)
{
	char path[128], got[64];
	json_t *v = json_object_get(obj, key);

	dg_spec_keypath(path, sizeof(path), prefix, key);
	if (!v) {
		if (required)
			return dg_spec_bad(c, path, "missing");
		*out = dflt;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min) {
		dg_spec_show(v, got, sizeof(got));
		if (min == 1)
			return dg_spec_bad(c, path, "must be a positive integer (got %s)", got);
		if (min == 0)
			return dg_spec_bad(c, path, "must be an integer >= 0 (got %s)", got);
		return dg_spec_bad(c, path, "must be an integer in [%lld, %lld] (got %s)",
				   (long long)min, (long long)max, got);
	}
	if (json_integer_value(v) > max)
		return dg_spec_bad(c, path, "must be at most %lld (got %lld)", (long long)max,
				   (long long)json_integer_value(v));
	*out = json_integer_value(v);
	return 0;
}

/* Reads a finite number; positive: > 0, else >= 0. */
int dg_spec_get_num(struct spec_ctx *c, const json_t *obj, const char *prefix, const char *key,
		    bool required, bool positive, double max, double dflt, double *out)
{
	char path[128], got[64];
	json_t *v = json_object_get(obj, key);

	dg_spec_keypath(path, sizeof(path), prefix, key);
	if (!v) {
		if (required)
			return dg_spec_bad(c, path, "missing");
		*out = dflt;
		return 0;
	}
	double x = json_is_number(v) ? json_number_value(v) : NAN;
	if (!isfinite(x) || (positive ? x <= 0 : x < 0)) {
		dg_spec_show(v, got, sizeof(got));
		return dg_spec_bad(c, path, "must be a number %s (got %s)",
				   positive ? "> 0" : ">= 0", got);
	}
	/* bounds that keep every derived time finite and every conversion defined */
	if (x > max || (positive && x < 1e-6)) {
		dg_spec_show(v, got, sizeof(got));
		return dg_spec_bad(c, path, "must be between %g and %g (got %s)",
				   positive ? 1e-6 : 0.0, max, got);
	}
	*out = x;
	return 0;
}

int dg_spec_get_str(struct spec_ctx *c, const json_t *obj, const char *key, const char **out)
{
	char got[64];
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v)) {
		dg_spec_show(v, got, sizeof(got));
		return dg_spec_bad(c, key, "must be a string (got %s)", got);
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

static int friendly_seek(struct spec_ctx *c, struct dg_spec *s, double t2t, double avg, double full)
{
	uint64_t n = s->cylinders;
	struct gsum g = {.n = n};
	int rc = -ENOMEM;

	if (!(t2t < avg && avg < full))
		return dg_spec_bad(
		    c, "seek",
		    "need track_to_track_ms < average_ms < full_stroke_ms (got %g, %g, %g)", t2t,
		    avg, full);
	if (n < 3)
		return dg_spec_bad(
		    c, "seek",
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

static int parse_seek(struct spec_ctx *c, struct dg_spec *s, const json_t *seek)
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
		return dg_spec_bad(c, "seek", "missing");
	if (!json_is_object(seek))
		return dg_spec_bad(c, "seek", "must be an object");
	if ((rc = dg_spec_check_keys(c, seek, "seek", keys)))
		return rc;
	bool friendly = json_object_get(seek, "track_to_track_ms") ||
			json_object_get(seek, "average_ms") ||
			json_object_get(seek, "full_stroke_ms");
	bool explicit = json_object_get(seek, "a") || json_object_get(seek, "b") ||
			json_object_get(seek, "c") || json_object_get(seek, "e") ||
			json_object_get(seek, "boundary_cylinders");
	if (friendly && explicit)
		return dg_spec_bad(
		    c, "seek",
		    "give either {a, b, c, e, boundary_cylinders} or {track_to_track_ms, "
		    "average_ms, full_stroke_ms}, not both");
	if (!friendly && !explicit)
		return dg_spec_bad(c, "seek",
				   "needs {a, b, c, e, boundary_cylinders} or {track_to_track_ms, "
				   "average_ms, full_stroke_ms}");
	if (friendly) {
		double t2t, avg, full;
		if ((rc = dg_spec_get_num(c, seek, "seek", "track_to_track_ms", true, true, 1e6, 0,
					  &t2t)) ||
		    (rc = dg_spec_get_num(c, seek, "seek", "average_ms", true, true, 1e6, 0,
					  &avg)) ||
		    (rc = dg_spec_get_num(c, seek, "seek", "full_stroke_ms", true, true, 1e6, 0,
					  &full)))
			return rc;
		return friendly_seek(c, s, t2t, avg, full);
	}
	if ((rc = dg_spec_get_num(c, seek, "seek", "a", true, false, 1e6, 0, &s->seek_a)) ||
	    (rc = dg_spec_get_num(c, seek, "seek", "b", true, false, 1e6, 0, &s->seek_b)) ||
	    (rc = dg_spec_get_num(c, seek, "seek", "c", true, false, 1e6, 0, &s->seek_c)) ||
	    (rc = dg_spec_get_num(c, seek, "seek", "e", true, false, 1e6, 0, &s->seek_e)) ||
	    (rc = dg_spec_get_num(c, seek, "seek", "boundary_cylinders", true, true, 1e12, 0,
				  &s->seek_boundary)))
		return rc;
	if (!(dg_spec_seek_ms(s, 1) > 0))
		return dg_spec_bad(c, "seek", "seek(1) must be > 0 (a + b = %g)",
				   dg_spec_seek_ms(s, 1));
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
static int parse_text(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
{
	const char *name, *desc, *text;
	int rc;

	if ((rc = dg_spec_get_str(c, root, "name", &name)) ||
	    (rc = dg_spec_get_str(c, root, "description", &desc)) ||
	    (rc = dg_spec_get_str(c, root, "source", &text)) ||
	    (rc = dg_spec_get_str(c, root, "notes", &text)))
		return rc;
	s->name = name ? strdup(name) : name_from_origin(c->origin);
	s->description = dupstr(desc ? desc : "");
	return s->name && s->description ? 0 : -ENOMEM;
}

static int check_sector(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
{
	(void)root;
	if (s->sector_bytes != 512 && s->sector_bytes != 4096)
		return dg_spec_bad(c, "logical_sector_bytes", "must be 512 or 4096 (got %lld)",
				   (long long)s->sector_bytes);
	return 0;
}

static int check_rpm(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
{
	(void)root;
	if (s->rpm < 60 || s->rpm > 100000)
		return dg_spec_bad(c, "rpm", "must be between 60 and 100000 (got %g)", s->rpm);
	s->period_ms = 60000.0 / s->rpm;
	return 0;
}

/* layout, and band_cylinders for a serpentine one. */
static int parse_layout(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
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
		dg_spec_show(layout, got, sizeof(got));
		return dg_spec_bad(c, "layout", "must be \"cylinder\" or \"serpentine\" (got %s)",
				   got);
	}
	if (s->layout == DG_LAYOUT_SERPENTINE) {
		if ((rc =
			 dg_spec_get_int(c, root, NULL, "band_cylinders", true, 1, 1 << 24, 0, &v)))
			return rc;
		s->band_cylinders = (uint32_t)v;
	} else if (json_object_get(root, "band_cylinders")) {
		return dg_spec_bad(c, "band_cylinders", "applies only to layout \"serpentine\"");
	}
	return 0;
}

/* The zones with the top-level skews they default to. */
static int parse_geometry(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
{
	int64_t tskew, cskew;
	int rc;

	if ((rc = dg_spec_get_int(c, root, NULL, "track_skew", false, 0, 1 << 24, -1, &tskew)) ||
	    (rc = dg_spec_get_int(c, root, NULL, "cylinder_skew", false, 0, 1 << 24, -1, &cskew)))
		return rc;
	return dg_spec_parse_zones(c, s, json_object_get(root, "zones"), tskew, cskew);
}

static int parse_seek_key(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
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

static int check_read_ahead(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
{
	(void)root;
	if (s->read_ahead_bytes > s->cache_bytes)
		return dg_spec_bad(
		    c, "read_ahead_bytes",
		    "must not exceed cache_bytes (%llu > %llu): read-ahead lands in the cache",
		    (unsigned long long)s->read_ahead_bytes, (unsigned long long)s->cache_bytes);
	return 0;
}

static int64_t capacity_default(const struct dg_spec *s)
{
	return (int64_t)s->geometry_sectors;
}

static int check_capacity(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
{
	(void)root;
	if (s->capacity_sectors > s->geometry_sectors)
		return dg_spec_bad(
		    c, "capacity_sectors", "%lld is more than the zones hold (%llu sectors)",
		    (long long)s->capacity_sectors, (unsigned long long)s->geometry_sectors);
	dg_spec_derive_skews(s);
	return 0;
}

static int parse_defects_key(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
{
	return dg_spec_parse_defects(c, s, json_object_get(root, "defects"));
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
	int (*step)(struct spec_ctx *c, struct dg_spec *s, const json_t *root);
	int (*check)(struct spec_ctx *c, struct dg_spec *s, const json_t *root);
};

#define AT(member) offsetof(struct dg_spec, member)

static const struct field fields[] = {
    {.type = F_STEP, .step = parse_text},
    {"logical_sector_bytes", F_U32, .imin = 1, .imax = 1 << 16,
     .idflt = DG_SPEC_DEFAULT_SECTOR_BYTES, .offset = AT(sector_bytes), .check = check_sector},
    {.type = F_STEP, .step = dg_spec_parse_physical},
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
    {.type = F_STEP, .step = dg_spec_parse_v2},
};

/* Reads one entry of `fields` into `s`. Returns 0, -EINVAL (one sentence in c->err) or
 * -ENOMEM. */
static int read_field(struct spec_ctx *c, struct dg_spec *s, const json_t *root,
		      const struct field *f)
{
	char *dst = (char *)s + f->offset;
	int64_t v;
	int rc;

	switch (f->type) {
	case F_STEP:
		return f->step(c, s, root);
	case F_U32:
	case F_U64:
		rc = dg_spec_get_int(c, root, NULL, f->key, f->required, f->imin, f->imax,
				     f->dflt_of ? f->dflt_of(s) : f->idflt, &v);
		if (rc)
			return rc;
		if (f->type == F_U32)
			*(uint32_t *)(void *)dst = (uint32_t)v;
		else
			*(uint64_t *)(void *)dst = (uint64_t)v;
		break;
	case F_REAL:
		rc = dg_spec_get_num(c, root, NULL, f->key, f->required, f->positive, f->rmax,
				     f->rdflt, (double *)(void *)dst);
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
	struct spec_ctx c = {
	    .origin = origin ? origin : "spec", .err = err, .errlen = errlen, .warnings = warnings};
	json_error_t je;
	json_t *root;
	struct dg_spec *s = NULL;
	int rc;

	*out = NULL;
	/* the parse tree costs tens of bytes per input byte: bound the input first */
	if (len > DG_SPEC_MAX_FILE_BYTES)
		return dg_spec_bad(&c, NULL,
				   "%zu bytes, more than the limit of %u for a drive spec", len,
				   DG_SPEC_MAX_FILE_BYTES);
	root = json_loadb(json_text, len, JSON_REJECT_DUPLICATES, &je);
	/* jansson leaves the error empty when one of its allocations failed */
	if (!root && (json_error_code(&je) == json_error_out_of_memory || !je.text[0]))
		return dg_spec_bad(&c, NULL, "%s", strerror(ENOMEM));
	if (!root)
		return dg_spec_bad(&c, NULL, "not valid JSON: %s (line %d, column %d)", je.text,
				   je.line, je.column);
	s = calloc(1, sizeof(*s));
	if (!s) {
		rc = -ENOMEM;
		goto err;
	}
	if (!json_is_object(root)) {
		rc = dg_spec_bad(&c, NULL, "a drive spec must be a JSON object");
		goto err;
	}
	if ((rc = dg_spec_check_keys(&c, root, NULL, keys)))
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
