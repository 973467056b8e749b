/* SPDX-License-Identifier: MIT */
/* The bandwidth result as the contract's JSON object and as CSV rows. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bandwidth_priv.h"

json_t *dg_bandwidth_params_json(const struct dg_bandwidth_params *p)
{
	json_t *o = json_object();
	int rc = 0;

	if (!o)
		return NULL;
	rc |= json_object_set_new(
	    o, "samples", p->samples ? json_integer((json_int_t)p->samples) : json_string("auto"));
	rc |= json_object_set_new(o, "sample_bytes",
				  p->sample_bytes ? json_integer((json_int_t)p->sample_bytes)
						  : json_string("auto"));
	rc |= json_object_set_new(o, "range_start_bytes",
				  json_integer((json_int_t)p->range_start_bytes));
	rc |= json_object_set_new(o, "range_end_bytes",
				  p->range_end_bytes != UINT64_MAX
				      ? json_integer((json_int_t)p->range_end_bytes)
				      : json_string("end"));
	rc |= json_object_set_new(o, "passes", json_integer(p->passes));
	rc |= json_object_set_new(o, "time_budget_s", json_real((double)p->time_budget_ns / 1e9));
	rc |= json_object_set_new(o, "qd", json_integer(p->qd));
	rc |= json_object_set_new(o, "block_bytes", json_integer(p->block_bytes));
	rc |= json_object_set_new(o, "seed", json_integer((json_int_t)p->seed));
	rc |= json_object_set_new(o, "refine", json_boolean(p->refine));
	rc |= json_object_set_new(o, "write", json_boolean(p->write));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Rounds to 1e-3: rates are good to far less, and the JSON stays readable. */
static json_t *rate(double x)
{
	return json_real(round(x * 1000.0) / 1000.0);
}

double dg_bandwidth_read_time_s(const struct dg_bandwidth_result *r)
{
	double s = 0;

	if (!r->nzones)
		return NAN;
	for (size_t i = 0; i < r->nzones; i++)
		s += (double)(r->zones[i].end_bytes - r->zones[i].start_bytes) /
		     (r->zones[i].mb_per_s * DG_MB);
	return s;
}

/* A per-surface zone's surface_mb_per_s array (the contract's key) on j; -1 on ENOMEM. */
static int surfaces_json(json_t *j, const struct dg_bandwidth_zone *z)
{
	json_t *a = json_array();

	for (size_t k = 0; a && k < z->nsurfaces; k++) {
		if (json_array_append_new(a, rate(z->surface_mb_per_s[k]))) {
			json_decref(a);
			a = NULL;
		}
	}
	return a ? json_object_set_new(j, "surface_mb_per_s", a) : -1;
}

json_t *dg_bandwidth_json(const struct dg_bandwidth_result *r)
{
	json_t *o = json_object(), *samples = json_array(), *zones = json_array();
	int rc;

	if (!o || !samples || !zones)
		goto err;
	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &r->samples[i];
		/* stalls, stall_ms: a slow spot inside the sample, its wait kept out of mb_per_s */
		json_t *j = json_pack("{s:I,s:I,s:o,s:o,s:I,s:o}", "offset_bytes",
				      (json_int_t)s->offset_bytes, "length_bytes",
				      (json_int_t)s->length_bytes, "mb_per_s", rate(s->mb_per_s),
				      "spread_mb_per_s", rate(s->spread_mb_per_s), "stalls",
				      (json_int_t)s->stalls, "stall_ms", rate(s->stall_ms));
		if (j && r->params.write && json_object_set_new(j, "op", json_string("write"))) {
			json_decref(j);
			j = NULL;
		}
		if (!j || json_array_append_new(samples, j))
			goto err;
	}
	for (size_t i = 0; i < r->nzones; i++) {
		const struct dg_bandwidth_zone *z = &r->zones[i];
		json_t *j =
		    json_pack("{s:I,s:I,s:o}", "start_bytes", (json_int_t)z->start_bytes,
			      "end_bytes", (json_int_t)z->end_bytes, "mb_per_s", rate(z->mb_per_s));
		if (j && z->nsurfaces > 0 && surfaces_json(j, z)) {
			json_decref(j);
			j = NULL;
		}
		if (!j || json_array_append_new(zones, j))
			goto err;
	}
	rc = json_object_set_new(o, "samples", samples); /* stolen, even when it fails */
	samples = NULL;
	rc |= json_object_set_new(o, "zones", zones);
	zones = NULL;
	if (rc)
		goto err;
	if (json_object_set_new(o, "mode", json_string(r->params.write ? "write" : "read")))
		goto err;
	if (r->params.write) {
		json_t *w = json_array();

		for (size_t i = 0; w && i < r->nwritten; i++) {
			json_t *j = json_pack(
			    "{s:I,s:I}", "offset_bytes", (json_int_t)r->written[i].offset_bytes,
			    "length_bytes", (json_int_t)r->written[i].length_bytes);
			if (!j || json_array_append_new(w, j)) {
				json_decref(w);
				w = NULL;
			}
		}
		if (!w || json_object_set_new(o, "written", w) ||
		    json_object_set_new(o, "written_bytes",
					json_integer((json_int_t)r->written_bytes)))
			goto err;
	}
	if (r->nzones > 0 &&
	    (json_object_set_new(o, "outer_mb_per_s", rate(r->outer_mb_per_s)) ||
	     json_object_set_new(o, "inner_mb_per_s", rate(r->inner_mb_per_s)) ||
	     json_object_set_new(o, "noise_percent", json_real(round(r->noise * 1e5) / 1e3)) ||
	     json_object_set_new(o, r->params.write ? "write_time_s" : "read_time_s",
				 rate(dg_bandwidth_read_time_s(r)))))
		goto err;
	if (json_object_set_new(o, "device_time_s",
				json_real(round(r->device_time_ns / 1e6) / 1e3)) ||
	    (r->flat_reason[0] &&
	     json_object_set_new(o, "flat_reason", json_string(r->flat_reason))))
		goto err;
	return o;
err:
	json_decref(samples);
	json_decref(zones);
	json_decref(o);
	return NULL;
}

int dg_bandwidth_csv(FILE *f, void *result)
{
	const struct dg_bandwidth_result *r = result;

	fprintf(f, "offset_bytes,length_bytes,mb_per_s,spread_mb_per_s%s\n",
		r->params.write ? ",op" : "");
	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &r->samples[i];
		fprintf(f, "%" PRIu64 ",%" PRIu64 ",%.3f,%.3f%s\n", s->offset_bytes,
			s->length_bytes, s->mb_per_s, s->spread_mb_per_s,
			r->params.write ? ",write" : "");
	}
	return ferror(f) ? -EIO : 0;
}

int dg_bandwidth_zones_csv(FILE *f, void *result)
{
	const struct dg_bandwidth_result *r = result;

	fprintf(f, "start_bytes,end_bytes,mb_per_s\n");
	for (size_t i = 0; i < r->nzones; i++) {
		const struct dg_bandwidth_zone *z = &r->zones[i];
		fprintf(f, "%" PRIu64 ",%" PRIu64 ",%.3f\n", z->start_bytes, z->end_bytes,
			z->mb_per_s);
	}
	return ferror(f) ? -EIO : 0;
}
