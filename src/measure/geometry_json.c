/* SPDX-License-Identifier: MIT */
/* The "geometry" section (contract.md geometry.*) and its CSV. Units are in the key names. */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "diskgeo/geometry.h"
#include "util.h"

/* Sets `key` to a real rounded to 1e-4 unless x is NAN (then the key is absent). */
static void set_num(json_t *o, const char *key, double x)
{
	if (isfinite(x))
		json_object_set_new(o, key, json_real(round(x * 1e4) / 1e4));
}

static json_t *spt_array(unsigned n, const uint32_t *spt)
{
	json_t *a = json_array();

	for (unsigned h = 0; a && h < n; h++)
		json_array_append_new(a, json_integer(spt[h]));
	return a;
}

static json_t *zone_json(const struct dg_geometry_zone *z)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "start_bytes", json_integer((json_int_t)z->start_bytes));
	json_object_set_new(o, "end_bytes", json_integer((json_int_t)z->end_bytes));
	json_object_set_new(o, "boundary_uncertainty_bytes",
			    json_integer((json_int_t)z->boundary_uncertainty_bytes));
	json_object_set_new(o, "sectors_per_track", spt_array(z->nsurfaces, z->spt));
	json_object_set_new(o, "surface_order_known", json_boolean(z->surface_order_known));
	set_num(o, "track_skew_sectors", z->track_skew_sectors);
	set_num(o, "cylinder_skew_sectors", z->cylinder_skew_sectors);
	set_num(o, "track_skew_degrees", z->track_skew_degrees);
	set_num(o, "cylinder_skew_degrees", z->cylinder_skew_degrees);
	set_num(o, "model_mb_per_s", z->model_mb_per_s);
	set_num(o, "zone_change_skew_sectors", z->zone_change_skew_sectors);
	set_num(o, "zone_change_skew_degrees", z->zone_change_skew_degrees);
	json_object_set_new(o, "places", json_integer(z->places));
	return o;
}

static json_t *place_json(const struct dg_geometry_place *p)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "offset_bytes", json_integer((json_int_t)p->offset_bytes));
	json_object_set_new(o, "ok", json_boolean(p->ok));
	if (p->ok) {
		json_object_set_new(o, "sectors_per_track", spt_array(p->nsurfaces, p->spt));
		json_object_set_new(o, "layout", json_string(dg_geometry_layout_name(p->layout)));
		if (p->band_tracks)
			json_object_set_new(o, "band_tracks", json_integer(p->band_tracks));
		json_object_set_new(o, "surface_order_known", json_boolean(p->aligned));
		set_num(o, "track_skew_sectors", p->track_skew);
		set_num(o, "cylinder_skew_sectors", p->cylinder_skew);
	} else {
		json_object_set_new(o, "note", json_string(p->note));
	}
	json_object_set_new(o, "tracks", json_integer(p->tracks));
	json_object_set_new(o, "probes", json_integer(p->probes));
	return o;
}

/* The figures of the whole drive (heads, layout, moves). */
static void drive_json(json_t *g, const struct dg_geometry_result *r)
{
	if (r->heads)
		json_object_set_new(g, "heads", json_integer(r->heads));
	if (r->layout != DG_GEO_LAYOUT_UNKNOWN)
		json_object_set_new(g, "layout", json_string(dg_geometry_layout_name(r->layout)));
	if (r->band_tracks)
		json_object_set_new(g, "band_tracks", json_integer(r->band_tracks));
	set_num(g, "head_switch_ms", r->head_switch_ms);
	set_num(g, "track_to_track_ms", r->track_to_track_ms);
	set_num(g, "period_ms", r->period_ms);
}

json_t *dg_geometry_json(const struct dg_geometry_result *r)
{
	json_t *g = json_object(), *zones = json_array(), *places = json_array(),
	       *notes = json_array();

	if (!g || !zones || !places || !notes) {
		json_decref(g);
		json_decref(zones);
		json_decref(places);
		json_decref(notes);
		return NULL;
	}
	drive_json(g, r);
	for (size_t i = 0; i < r->nzones; i++)
		json_array_append_new(zones, zone_json(&r->zones[i]));
	for (size_t i = 0; i < r->nplaces; i++)
		json_array_append_new(places, place_json(&r->places[i]));
	for (size_t i = 0; i < r->notes.n; i++)
		json_array_append_new(notes, json_string(r->notes.v[i]));
	json_object_set_new(g, "zones", zones);
	if (r->align.measured) {
		const struct dg_geometry_align *a = &r->align;
		json_t *o = json_object();
		json_object_set_new(o, "request_bytes", json_integer((json_int_t)a->request_bytes));
		json_object_set_new(o, "boundary_bytes",
				    json_integer((json_int_t)a->boundary_bytes));
		set_num(o, "aligned_ms", a->aligned_ms);
		set_num(o, "unaligned_ms", a->unaligned_ms);
		set_num(o, "gain_percent", a->gain_percent);
		json_object_set_new(o, "samples", json_integer(a->samples));
		json_object_set_new(g, "track_aligned", o);
	}
	json_object_set_new(g, "places", places);
	json_object_set_new(g, "probes", json_integer(r->probes));
	json_object_set_new(g, "probe_repeats", json_integer(r->repeats));
	set_num(g, "phase_noise_percent", r->noise_rev * 100);
	set_num(g, "device_time_s", (double)r->device_time_ns / 1e9);
	json_object_set_new(g, "complete", json_boolean(r->complete));
	json_object_set_new(g, "notes", notes);
	return g;
}

json_t *dg_geometry_params_json(const struct dg_geometry_params *p)
{
	return json_pack("{s:f,s:i,s:I,s:I,s:I}", "geometry_time_budget_s",
			 (double)p->time_budget_ns / 1e9, "geometry_places", (int)p->places,
			 "geometry_range_start_bytes", (json_int_t)p->range_start_bytes,
			 "geometry_range_end_bytes", (json_int_t)p->range_end_bytes,
			 "geometry_seed", (json_int_t)p->seed);
}

int dg_geometry_csv(FILE *f, void *result)
{
	const struct dg_geometry_result *r = result;

	fprintf(f, "start_bytes,end_bytes,surface,sectors_per_track,track_skew_sectors,"
		   "cylinder_skew_sectors,zone_change_skew_sectors,model_mb_per_s,places\n");
	for (size_t i = 0; i < r->nzones; i++) {
		const struct dg_geometry_zone *z = &r->zones[i];
		for (unsigned h = 0; h < z->nsurfaces; h++) {
			fprintf(f, "%llu,%llu,%u,%u,", (unsigned long long)z->start_bytes,
				(unsigned long long)z->end_bytes, h, z->spt[h]);
			dg_csv_num(f, "%.4g", z->track_skew_sectors, ",");
			dg_csv_num(f, "%.4g", z->cylinder_skew_sectors, ",");
			dg_csv_num(f, "%.4g", z->zone_change_skew_sectors, ",");
			dg_csv_num(f, "%.4f", z->model_mb_per_s, ",");
			fprintf(f, "%u\n", z->places);
		}
	}
	return ferror(f) ? -EIO : 0;
}
