/* SPDX-License-Identifier: MIT */
/* Shared between spec.c (the top-level keys, the seek curve) and spec_zones.c (zones, version 2
 * keys, skews, defects): the parse context and the checked readers. */
#ifndef DISKGEO_SPEC_PRIV_H
#define DISKGEO_SPEC_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "model_priv.h"

struct spec_ctx {
	const char *origin;
	char *err;
	size_t errlen;
	struct dg_warnings *warnings;
};

/* One sentence naming the spec and `path` into c->err; returns -EINVAL. */
int __attribute__((format(printf, 3, 4)))
dg_spec_bad(struct spec_ctx *c, const char *path, const char *fmt, ...);
/* A short rendering of a JSON value for "(got X)". */
void dg_spec_show(const json_t *v, char *buf, size_t len);
/* Refuses a key of obj not in the NULL-terminated `allowed`. */
int dg_spec_check_keys(struct spec_ctx *c, const json_t *obj, const char *path,
		       const char *const *allowed);
/* "prefix.key", or "key" without a prefix. */
void dg_spec_keypath(char *buf, size_t len, const char *prefix, const char *key);
/* Reads an integer in [min, max]; absent -> *out = dflt unless required. */
int dg_spec_get_int(struct spec_ctx *c, const json_t *obj, const char *prefix, const char *key,
		    bool required, int64_t min, int64_t max, int64_t dflt, int64_t *out);
/* Reads a finite number; positive: > 0, else >= 0. */
int dg_spec_get_num(struct spec_ctx *c, const json_t *obj, const char *prefix, const char *key,
		    bool required, bool positive, double max, double dflt, double *out);
/* Reads an optional string. */
int dg_spec_get_str(struct spec_ctx *c, const json_t *obj, const char *key, const char **out);

/* spec_zones.c: the steps of the field table that read zones, version 2 keys and defects. */
int dg_spec_parse_physical(struct spec_ctx *c, struct dg_spec *s, const json_t *root);
int dg_spec_parse_v2(struct spec_ctx *c, struct dg_spec *s, const json_t *root);
int dg_spec_parse_zones(struct spec_ctx *c, struct dg_spec *s, const json_t *zones,
			int64_t top_tskew, int64_t top_cskew);
void dg_spec_derive_skews(struct dg_spec *s);
int dg_spec_parse_defects(struct spec_ctx *c, struct dg_spec *s, const json_t *defects);

#endif
