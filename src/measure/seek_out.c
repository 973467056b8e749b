/* SPDX-License-Identifier: MIT */
/*
 * The seek profile's output: the short-stroke figures, the contract's JSON members ("seek",
 * "iops", "rotation") and the CSV tables. A value that was not measured (NAN) is left out of
 * the JSON, never written as 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seek_priv.h"
#include "util.h"

static int set_real(json_t *o, const char *key, double v)
{
	if (!isfinite(v))
		return 0;
	return json_object_set_new(o, key, json_real(v));
}

size_t dg_seek_short_stroke(const struct dg_seek_result *r, struct dg_short_stroke *out, size_t max)
{
	const struct dg_seek_span *widest = NULL;
	size_t n = 0;

	for (size_t i = 0; i < r->nspans; i++)
		if (!r->spans[i].start_bytes &&
		    (!widest || r->spans[i].span_bytes > widest->span_bytes))
			widest = &r->spans[i];
	if (!widest || !(widest->iops > 0))
		return 0;
	/* spans are few (six by default): pick them narrowest first */
	uint64_t last = 0;
	while (n < max) {
		const struct dg_seek_span *next = NULL;

		for (size_t i = 0; i < r->nspans; i++) {
			const struct dg_seek_span *s = &r->spans[i];

			if (!s->start_bytes && s->span_bytes > last &&
			    s->span_bytes < widest->span_bytes &&
			    (!next || s->span_bytes < next->span_bytes))
				next = s;
		}
		if (!next)
			break;
		out[n++] = (struct dg_short_stroke){
		    next->span_bytes, 100.0 * (double)next->span_bytes / (double)r->capacity_bytes,
		    next->iops, 100.0 * (next->iops / widest->iops - 1)};
		last = next->span_bytes;
	}
	return n;
}

json_t *dg_seek_json(const struct dg_seek_result *r)
{
	json_t *top = json_object(), *seek = json_object(), *pts = json_array();
	int bad = !top || !seek || !pts;

	for (size_t i = 0; !bad && i < r->npoints; i++) {
		const struct dg_seek_point *pt = &r->points[i];
		json_t *o = json_object();
		bad |= !o;
		if (bad)
			break;
		bad |= json_object_set_new(o, "distance_bytes",
					   json_integer((json_int_t)pt->distance_bytes));
		bad |= json_object_set_new(o, "samples", json_integer(pt->samples));
		bad |= set_real(o, "min_ms", pt->min_ms);
		bad |= set_real(o, "median_ms", pt->median_ms);
		bad |= set_real(o, "mean_ms", pt->mean_ms);
		bad |= set_real(o, "seek_ms", pt->seek_ms);
		bad |= json_array_append_new(pts, o);
	}
	if (!bad && r->npoints) {
		bad |= json_object_set(seek, "points", pts);
		bad |= set_real(seek, "track_to_track_ms", r->track_to_track_ms);
		bad |= set_real(seek, "average_ms", r->average_ms);
		bad |= set_real(seek, "full_stroke_ms", r->full_stroke_ms);
		bad |= json_object_set_new(seek, "samples_per_distance",
					   json_integer(r->samples_planned));
		bad |= json_object_set_new(seek, "curve_device_time_s",
					   json_real((double)r->curve_device_time_ns / 1e9));
		if (r->fit.valid) {
			json_t *f =
			    json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:I}", "model",
				      "ruemmler-wilkes", "distance", "fraction of capacity", "a_ms",
				      r->fit.a_ms, "b_ms", r->fit.b_ms, "c_ms", r->fit.c_ms, "e_ms",
				      r->fit.e_ms, "boundary_fraction", r->fit.boundary_fraction,
				      "rms_ms", r->fit.rms_ms, "min_distance_bytes",
				      (json_int_t)r->fit.min_distance_bytes);
			bad |= !f || json_object_set_new(seek, "fit", f);
		}
	}
	if (!bad && isfinite(r->full_stroke_ms) && !r->npoints)
		bad |= set_real(seek, "full_stroke_ms", r->full_stroke_ms);
	if (!bad && json_object_size(seek)) {
		bad |= set_real(seek, "command_overhead_ms", r->overhead_ms);
		bad |=
		    json_object_set_new(seek, "block_bytes", json_integer(r->params.block_bytes));
		bad |= json_object_set(top, "seek", seek);
	}
	if (!bad && r->rotating && r->params.rotation) {
		json_t *rot = json_pack("{s:f, s:f}", "rpm", r->rpm, "period_ms", r->period_ms);
		bad |= !rot || json_object_set_new(top, "rotation", rot);
	}
	if (!bad && r->nspans) {
		json_t *iops = json_object(), *arr = json_array();
		bad |= !iops || !arr;
		for (size_t i = 0; !bad && i < r->nspans; i++) {
			const struct dg_seek_span *sp = &r->spans[i];
			json_t *o = json_pack(
			    "{s:I, s:I, s:I, s:f, s:f, s:I}", "start_bytes",
			    (json_int_t)sp->start_bytes, "span_bytes", (json_int_t)sp->span_bytes,
			    "block_bytes", (json_int_t)sp->block_bytes, "iops", sp->iops, "mean_ms",
			    sp->mean_ms, "samples", (json_int_t)sp->samples);
			bad |= !o || json_array_append_new(arr, o);
		}
		struct dg_short_stroke ss[16];
		size_t nss = dg_seek_short_stroke(r, ss, 16);
		json_t *sarr = json_array();
		bad |= !sarr;
		for (size_t i = 0; !bad && i < nss; i++)
			bad |= json_array_append_new(
			    sarr,
			    json_pack("{s:I, s:f, s:f, s:f}", "span_bytes",
				      (json_int_t)ss[i].span_bytes, "span_percent",
				      round(ss[i].span_percent * 1e3) / 1e3, "iops", ss[i].iops,
				      "gain_percent", round(ss[i].gain_percent * 1e3) / 1e3));
		if (!bad && nss)
			bad |= json_object_set(iops, "short_stroke", sarr);
		json_decref(sarr);
		if (!bad)
			bad |= json_object_set(iops, "spans", arr) ||
			       json_object_set(top, "iops", iops);
		json_decref(arr);
		json_decref(iops);
	}
	json_decref(pts);
	json_decref(seek);
	if (bad) {
		json_decref(top);
		return NULL;
	}
	return top;
}

int dg_seek_csv(FILE *f, void *result)
{
	const struct dg_seek_result *r = result;

	if (fprintf(f, "distance_bytes,samples,min_ms,median_ms,mean_ms,seek_ms\n") < 0)
		return -EIO;
	for (size_t i = 0; i < r->npoints; i++) {
		const struct dg_seek_point *pt = &r->points[i];
		if (fprintf(f, "%" PRIu64 ",%u,", pt->distance_bytes, pt->samples) < 0 ||
		    dg_csv_num(f, "%.6f", pt->min_ms, ",") < 0 ||
		    dg_csv_num(f, "%.6f", pt->median_ms, ",") < 0 ||
		    dg_csv_num(f, "%.6f", pt->mean_ms, ",") < 0 ||
		    dg_csv_num(f, "%.6f", pt->seek_ms, "\n") < 0)
			return -EIO;
	}
	return 0;
}

int dg_seek_iops_csv(FILE *f, void *result)
{
	const struct dg_seek_result *r = result;

	if (fprintf(f, "start_bytes,span_bytes,block_bytes,iops,mean_ms,samples\n") < 0)
		return -EIO;
	for (size_t i = 0; i < r->nspans; i++) {
		const struct dg_seek_span *sp = &r->spans[i];
		if (fprintf(f, "%" PRIu64 ",%" PRIu64 ",%" PRIu32 ",", sp->start_bytes,
			    sp->span_bytes, sp->block_bytes) < 0 ||
		    dg_csv_num(f, "%.6f", sp->iops, ",") < 0 ||
		    dg_csv_num(f, "%.6f", sp->mean_ms, ",") < 0 ||
		    fprintf(f, "%u\n", sp->samples) < 0)
			return -EIO;
	}
	return 0;
}
