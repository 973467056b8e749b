/* SPDX-License-Identifier: MIT */
/*
 * What the parts of the spec parser share (spec.c the top-level keys and the messages,
 * spec_seek.c the seek curve, spec_zones.c the zones, skews, defects and version 2 keys).
 * Every reader returns 0, -EINVAL with one sentence in the context's err, or -ENOMEM.
 */
#ifndef DISKGEO_SPEC_PRIV_H
#define DISKGEO_SPEC_PRIV_H

#include <jansson.h>

#include "model_priv.h"

/* The parse's context: where the text came from, where the sentence goes. */
struct spec_ctx {
	const char *origin;
	char *err;
	size_t errlen;
	struct dg_warnings *warnings;
};

/* "<origin>: <path>: <message>" into c->err; returns -EINVAL. */
int spec_bad(struct spec_ctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A short rendering of a JSON value for "(got X)". */
void spec_show(const json_t *v, char *buf, size_t len);
/* -EINVAL naming the first key of `obj` not in `allowed` (NULL-terminated). */
int spec_check_keys(struct spec_ctx *c, const json_t *obj, const char *path,
		    const char *const *allowed);
/* An integer in [min, max] / a finite number (> 0 when positive, else >= 0, at most max) / a
 * string at obj.key: absent, `dflt` unless required. */
int spec_get_int(struct spec_ctx *c, const json_t *obj, const char *prefix, const char *key,
		 bool required, int64_t min, int64_t max, int64_t dflt, int64_t *out);
int spec_get_num(struct spec_ctx *c, const json_t *obj, const char *prefix, const char *key,
		 bool required, bool positive, double max, double dflt, double *out);
int spec_get_str(struct spec_ctx *c, const json_t *obj, const char *key, const char **out);

/* The seek curve: the spec's "seek" object (spec_seek.c). */
int spec_parse_seek(struct spec_ctx *c, struct dg_spec *s, const json_t *seek);
/* physical_sector_bytes; the zones with the top-level skews they default to; the skews of
 * every transition; the defects; the version 2 keys (spec_zones.c). */
int spec_parse_physical(struct spec_ctx *c, struct dg_spec *s, const json_t *root);
int spec_parse_zones(struct spec_ctx *c, struct dg_spec *s, const json_t *zones, int64_t top_tskew,
		     int64_t top_cskew);
void spec_derive_skews(struct dg_spec *s);
int spec_parse_defects(struct spec_ctx *c, struct dg_spec *s, const json_t *defects);
int spec_parse_v2(struct spec_ctx *c, struct dg_spec *s, const json_t *root);

#endif
