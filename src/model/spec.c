/* SPDX-License-Identifier: MIT */
/*
 * Drive specs (shared/drive-spec.md): parsing and validation of the top-level keys, walked as a
 * field table, and the one-line messages every part of the parser writes. The seek curve is in
 * spec_seek.c, the zones, skews, defects and version 2 keys in spec_zones.c, loading in
 * spec_load.c, the LBA mapping and the accessors in spec_map.c.
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
#include "util.h"

/* ---- error reporting ---- */

int spec_bad(struct spec_ctx *c, const char *path, const char *fmt, ...)
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
void spec_show(const json_t *v, char *buf, size_t len)
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

int spec_check_keys(struct spec_ctx *c, const json_t *obj, const char *path,
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

			spec_show(k, shown, sizeof(shown));
			json_decref(k);
			len = strlen(shown);
			if (len >= 2 && shown[0] == '"' && shown[len - 1] == '"') {
				memmove(shown, shown + 1, len - 2);
				shown[len - 2] = '\0';
			}
			if (path)
				return spec_bad(c, NULL, "unknown key '%s.%s'", path, shown);
			return spec_bad(c, NULL, "unknown key '%s'", shown);
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
int spec_get_int(struct spec_ctx *c, const json_t *obj, const char *prefix, const char *key,
		 bool required, int64_t min, int64_t max, int64_t dflt, int64_t *out)
{
	char path[128], got[64];
	json_t *v = json_object_get(obj, key);

	keypath(path, sizeof(path), prefix, key);
	if (!v) {
		if (required)
			return spec_bad(c, path, "missing");
		*out = dflt;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min) {
		spec_show(v, got, sizeof(got));
		if (min == 1)
			return spec_bad(c, path, "must be a positive integer (got %s)", got);
		if (min == 0)
			return spec_bad(c, path, "must be an integer >= 0 (got %s)", got);
		return spec_bad(c, path, "must be an integer in [%lld, %lld] (got %s)",
				(long long)min, (long long)max, got);
	}
	if (json_integer_value(v) > max)
		return spec_bad(c, path, "must be at most %lld (got %lld)", (long long)max,
				(long long)json_integer_value(v));
	*out = json_integer_value(v);
	return 0;
}

/* Reads a finite number; positive: > 0, else >= 0. */
int spec_get_num(struct spec_ctx *c, const json_t *obj, const char *prefix, const char *key,
		 bool required, bool positive, double max, double dflt, double *out)
{
	char path[128], got[64];
	json_t *v = json_object_get(obj, key);

	keypath(path, sizeof(path), prefix, key);
	if (!v) {
		if (required)
			return spec_bad(c, path, "missing");
		*out = dflt;
		return 0;
	}
	double x = json_is_number(v) ? json_number_value(v) : NAN;
	if (!isfinite(x) || (positive ? x <= 0 : x < 0)) {
		spec_show(v, got, sizeof(got));
		return spec_bad(c, path, "must be a number %s (got %s)", positive ? "> 0" : ">= 0",
				got);
	}
	/* bounds that keep every derived time finite and every conversion defined */
	if (x > max || (positive && x < 1e-6)) {
		spec_show(v, got, sizeof(got));
		return spec_bad(c, path, "must be between %g and %g (got %s)",
				positive ? 1e-6 : 0.0, max, got);
	}
	*out = x;
	return 0;
}

int spec_get_str(struct spec_ctx *c, const json_t *obj, const char *key, const char **out)
{
	char got[64];
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v)) {
		spec_show(v, got, sizeof(got));
		return spec_bad(c, key, "must be a string (got %s)", got);
	}
	*out = json_string_value(v);
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

	if ((rc = spec_get_str(c, root, "name", &name)) ||
	    (rc = spec_get_str(c, root, "description", &desc)) ||
	    (rc = spec_get_str(c, root, "source", &text)) ||
	    (rc = spec_get_str(c, root, "notes", &text)))
		return rc;
	s->name = name ? strdup(name) : name_from_origin(c->origin);
	s->description = dupstr(desc ? desc : "");
	return s->name && s->description ? 0 : -ENOMEM;
}

static int check_sector(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
{
	(void)root;
	if (s->sector_bytes != 512 && s->sector_bytes != 4096)
		return spec_bad(c, "logical_sector_bytes", "must be 512 or 4096 (got %lld)",
				(long long)s->sector_bytes);
	return 0;
}

static int check_rpm(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
{
	(void)root;
	if (s->rpm < 60 || s->rpm > 100000)
		return spec_bad(c, "rpm", "must be between 60 and 100000 (got %g)", s->rpm);
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
		spec_show(layout, got, sizeof(got));
		return spec_bad(c, "layout", "must be \"cylinder\" or \"serpentine\" (got %s)",
				got);
	}
	if (s->layout == DG_LAYOUT_SERPENTINE) {
		if ((rc = spec_get_int(c, root, NULL, "band_cylinders", true, 1, 1 << 24, 0, &v)))
			return rc;
		s->band_cylinders = (uint32_t)v;
	} else if (json_object_get(root, "band_cylinders")) {
		return spec_bad(c, "band_cylinders", "applies only to layout \"serpentine\"");
	}
	return 0;
}

/* The zones with the top-level skews they default to. */
static int parse_geometry(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
{
	int64_t tskew, cskew;
	int rc;

	if ((rc = spec_get_int(c, root, NULL, "track_skew", false, 0, 1 << 24, -1, &tskew)) ||
	    (rc = spec_get_int(c, root, NULL, "cylinder_skew", false, 0, 1 << 24, -1, &cskew)))
		return rc;
	return spec_parse_zones(c, s, json_object_get(root, "zones"), tskew, cskew);
}

static int parse_seek_key(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
{
	return spec_parse_seek(c, s, json_object_get(root, "seek"));
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
		return spec_bad(
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
		return spec_bad(
		    c, "capacity_sectors", "%lld is more than the zones hold (%llu sectors)",
		    (long long)s->capacity_sectors, (unsigned long long)s->geometry_sectors);
	spec_derive_skews(s);
	return 0;
}

static int parse_defects_key(struct spec_ctx *c, struct dg_spec *s, const json_t *root)
{
	return spec_parse_defects(c, s, json_object_get(root, "defects"));
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
    {.type = F_STEP, .step = spec_parse_physical},
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
    {.type = F_STEP, .step = spec_parse_v2},
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
		rc = spec_get_int(c, root, NULL, f->key, f->required, f->imin, f->imax,
				  f->dflt_of ? f->dflt_of(s) : f->idflt, &v);
		if (rc)
			return rc;
		if (f->type == F_U32)
			*(uint32_t *)(void *)dst = (uint32_t)v;
		else
			*(uint64_t *)(void *)dst = (uint64_t)v;
		break;
	case F_REAL:
		rc = spec_get_num(c, root, NULL, f->key, f->required, f->positive, f->rmax,
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
					   "cache_segments",
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
		return spec_bad(&c, NULL, "%zu bytes, more than the limit of %u for a drive spec",
				len, DG_SPEC_MAX_FILE_BYTES);
	root = json_loadb(json_text, len, JSON_REJECT_DUPLICATES, &je);
	/* jansson leaves the error empty when one of its allocations failed */
	if (!root && (json_error_code(&je) == json_error_out_of_memory || !je.text[0]))
		return spec_bad(&c, NULL, "%s", strerror(ENOMEM));
	if (!root)
		return spec_bad(&c, NULL, "not valid JSON: %s (line %d, column %d)", je.text,
				je.line, je.column);
	s = calloc(1, sizeof(*s));
	if (!s) {
		rc = -ENOMEM;
		goto err;
	}
	if (!json_is_object(root)) {
		rc = spec_bad(&c, NULL, "a drive spec must be a JSON object");
		goto err;
	}
	if ((rc = spec_check_keys(&c, root, NULL, keys)))
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
