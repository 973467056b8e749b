/* SPDX-License-Identifier: MIT */
/*
 * diskgeo geometry: track size per zone and surface, heads, layout, skews and head switch, from
 * timing alone (the method is in include/diskgeo/geometry.h), and the cache and command
 * queueing figures (include/diskgeo/geocache.h). Prints a summary; writes the profile's
 * "geometry" section as JSON and the zones as CSV. Also the registry's geometry entry, which
 * `profile --geometry` runs.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_measure.h"
#include "diskgeo/bandwidth.h"
#include "diskgeo/geocache.h"
#include "diskgeo/geometry.h"
#include "diskgeo/parse.h"
#include "diskgeo/profile.h"
#include "util.h"

static const struct option longopts[] = {
    {"time-budget", required_argument, NULL, CLI_OPT_GEOMETRY_BUDGET},
    {"places", required_argument, NULL, CLI_OPT_GEOMETRY_PLACES},
    {"range", required_argument, NULL, 'r'},
    CLI_ENGINE_LONGOPT,
    {"seed", required_argument, NULL, CLI_OPT_SEED},
    CLI_JSON_LONGOPT,
    CLI_PROMETHEUS_LONGOPT,
    CLI_CSV_LONGOPT,
    {"csv-dir", required_argument, NULL, CLI_OPT_LOCAL},
    CLI_COMMON_LONGOPTS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: diskgeo geometry DEVICE [options]\n\n"
		"Finds the track size per zone (per surface where the surfaces differ), the\n"
		"surfaces, the layout (cylinder or serpentine, the band), the skews and the head\n"
		"switch time from the completion phase of single-sector reads; then the cache\n"
		"(read-ahead, look-behind, segments, size) and command queueing (NCQ). Read-only;\n"
		"the drive's cache may stay on.\n\n"
		"Options (SIZE: K M G T, KiB.., KB.., s = logical sectors; TIME: ms s m h):\n"
		"      --time-budget TIME device time (default 5 min up to 4 TB, 8 min at 20 TB)\n"
		"      --places N         places measured across the range (default %u)\n"
		"  -r, --range A:B        measure [A, B) only (default the whole device)\n"
		"      --engine NAME      io_uring, psync, sim or auto (default auto)\n"
		"      --seed N           where the places fall (default 1)\n"
		"  -j, --json FILE|-      write the profile (\"geometry\") as JSON\n"
		"      --csv FILE|-       write the zones as CSV (one row per zone and surface)\n"
		"      --csv-dir DIR      write DIR/geometry.csv\n"
		"      --prometheus FILE  write its figures as node_exporter textfile metrics\n"
		"  -J                     the same as --json -\n"
		"  -q, --quiet            warnings and errors only\n"
		"  -v, --verbose          per-phase detail on stderr\n"
		"  -h, --help             this text\n",
		DG_GEOMETRY_DEFAULT_PLACES);
}

struct geo_args {
	const char *device, *csv_dir;
	struct cli_io_opts io;
	struct cli_job job; /* the registry's geometry entry */
};

static int parse_args(int argc, char **argv, struct geo_args *a)
{
	char shortopts[64];
	int c, rc = DG_EXIT_OK;

	cli_getopt_begin(longopts, shortopts, sizeof(shortopts));
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (cli_jobs_option(&a->job, 1, c == 'r' ? CLI_OPT_GEOMETRY_RANGE : c, optarg) ||
		    cli_io_option("geometry", c, optarg, &a->io, &rc)) {
			if (rc)
				return rc;
			continue;
		}
		switch (c) {
		case CLI_OPT_LOCAL:
			a->csv_dir = optarg;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_bad_option("geometry", argv, shortopts);
		}
	}
	if (cli_one_device("geometry", argc, argv, &a->device) ||
	    cli_check_streams("geometry", a->io.json, a->io.csv))
		return DG_EXIT_USAGE;
	return DG_EXIT_OK;
}

bool cli_geometry_option(int c, const char *arg, struct cli_geometry_opts *o)
{
	switch (c) {
	case CLI_OPT_GEOMETRY_BUDGET:
		o->budget = arg;
		return true;
	case CLI_OPT_GEOMETRY_PLACES:
		o->places = arg;
		return true;
	case CLI_OPT_GEOMETRY_RANGE:
		o->range = arg;
		return true;
	case CLI_OPT_SEED:
		o->seed = arg;
		return true;
	default:
		return false;
	}
}

/* --range A:B in bytes (sizes as everywhere). */
static int parse_range(const char *text, uint32_t sector, struct dg_geometry_params *p)
{
	char a[64];
	const char *colon = strchr(text, ':');
	uint64_t lo = 0, hi = UINT64_MAX;

	if (!colon || (size_t)(colon - text) >= sizeof(a))
		return -1;
	memcpy(a, text, (size_t)(colon - text));
	a[colon - text] = 0;
	if ((a[0] && dg_parse_size(a, sector, &lo)) ||
	    (colon[1] && dg_parse_size(colon + 1, sector, &hi)))
		return -1;
	p->range_start_bytes = lo;
	p->range_end_bytes = hi;
	return 0;
}

int cli_geometry_params(const char *cmd, const char *budget, const char *places, const char *range,
			const char *seed, const struct dg_device_info *info,
			struct dg_geometry_params *p)
{
	char err[DG_ERRLEN];
	uint64_t v;

	dg_geometry_params_default(p);
	if (budget && cli_time_option(cmd, "--time-budget", budget, &p->time_budget_ns))
		return DG_EXIT_USAGE;
	if (places) {
		if (dg_parse_uint(places, 1, DG_GEOMETRY_MAX_PLACES, &v)) {
			cli_error("%s: --places '%s' must be a whole number in 1..%u", cmd, places,
				  DG_GEOMETRY_MAX_PLACES);
			return DG_EXIT_USAGE;
		}
		p->places = (unsigned)v;
	}
	if (range && parse_range(range, info->logical_sector_bytes, p)) {
		cli_error("%s: --range '%s' is not A:B (sizes)", cmd, range);
		return DG_EXIT_USAGE;
	}
	if (seed && dg_parse_uint(seed, 0, UINT64_MAX, &p->seed)) {
		cli_error("%s: --seed '%s' is not a whole number", cmd, seed);
		return DG_EXIT_USAGE;
	}
	if (dg_geometry_params_check(p, info, err, sizeof(err))) {
		cli_error("%s: %s", cmd, err);
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

void cli_geometry_summary(FILE *out, const struct dg_geometry_result *r)
{
	char a[32], b[32];
	unsigned ok = 0;

	for (size_t i = 0; i < r->nplaces; i++)
		ok += r->places[i].ok;
	fprintf(out, "geometry: %u of %zu places measured, %u probes, %.1f s of device time%s\n",
		ok, r->nplaces, r->probes, (double)r->device_time_ns / 1e9,
		r->complete ? "" : ", interrupted");
	if (r->heads)
		fprintf(out, "surfaces (heads): %u\n", r->heads);
	if (r->layout)
		fprintf(out, "layout: %s", dg_geometry_layout_name(r->layout));
	if (r->band_tracks)
		fprintf(out, ", band of %u tracks per surface", r->band_tracks);
	if (r->layout)
		fprintf(out, "\n");
	if (isfinite(r->head_switch_ms))
		fprintf(out, "head switch: %.3f ms\n", r->head_switch_ms);
	if (isfinite(r->track_to_track_ms))
		fprintf(out, "track-to-track seek (from the cylinder skew): %.3f ms\n",
			r->track_to_track_ms);
	if (r->align.measured) {
		dg_fmt_ibytes(a, sizeof(a), r->align.request_bytes);
		fprintf(
		    out,
		    "track-aligned I/O: read whole tracks (%s here, the zone's track size "
		    "elsewhere) starting at a track boundary (e.g. byte %llu): %.2f ms per read "
		    "vs %.2f ms shifted by half a track, %.1f%% less (%u reads each)\n",
		    a, (unsigned long long)r->align.boundary_bytes, r->align.aligned_ms,
		    r->align.unaligned_ms, r->align.gain_percent, r->align.samples);
	}
	if (!r->nzones)
		return;
	fprintf(out, "%20s %20s  %-30s %7s %7s %8s\n", "zone from", "to", "sectors per track",
		"track", "cyl", "model");
	fprintf(out, "%20s %20s  %-30s %7s %7s %8s\n", "", "", "(per surface)", "skew", "skew",
		"MB/s");
	for (size_t i = 0; i < r->nzones; i++) {
		const struct dg_geometry_zone *z = &r->zones[i];
		char spt[31] = "";
		size_t len = 0;
		for (unsigned h = 0; h < z->nsurfaces && len + 8 < sizeof(spt); h++)
			len += (size_t)snprintf(spt + len, sizeof(spt) - len, h ? " %u" : "%u",
						z->spt[h]);
		cli_human_position(a, sizeof(a), z->start_bytes, r->capacity_bytes);
		cli_human_position(b, sizeof(b), z->end_bytes, r->capacity_bytes);
		fprintf(out, "%20s %20s  %-30s %7.0f %7.0f %8.1f\n", a, b, spt,
			z->track_skew_sectors, z->cylinder_skew_sectors, z->model_mb_per_s);
	}
}

/* Each zone's model rate beside the measured curve's rate at its middle: a slow region that
 * the geometry cannot explain stands out (profile --geometry with the curve). */
void cli_geometry_vs_curve(FILE *out, const void *result, const struct dg_bandwidth_result *bw)
{
	const struct cli_geometry_result *g = result;
	const struct dg_geometry_result *r = g->geometry;
	char a[32];

	fprintf(out, "sustained rate, geometry model vs measured curve (MB/s):\n");
	for (size_t i = 0; i < r->nzones; i++) {
		const struct dg_geometry_zone *z = &r->zones[i];
		uint64_t mid = z->start_bytes / 2 + z->end_bytes / 2;
		for (size_t j = 0; j < bw->nzones; j++) {
			const struct dg_bandwidth_zone *b = &bw->zones[j];
			if (mid < b->start_bytes || mid >= b->end_bytes ||
			    !isfinite(z->model_mb_per_s))
				continue;
			double d = 100 * (b->mb_per_s - z->model_mb_per_s) / z->model_mb_per_s;
			cli_human_position(a, sizeof(a), mid, r->capacity_bytes);
			fprintf(out, "  at %20s  model %7.1f  curve %7.1f  %+5.1f%%%s\n", a,
				z->model_mb_per_s, b->mb_per_s, d,
				fabs(d) > 5 ? "  <- not explained by the geometry" : "");
		}
	}
}

/* ---- the registry's entry: the geometry, then the cache and NCQ tests in what is left ---- */

static bool geo_option(int c, const char *arg, union cli_measure_opts *o)
{
	return cli_geometry_option(c, arg, &o->geometry);
}

static int geo_params(const char *cmd, const union cli_measure_opts *o,
		      const struct dg_device_info *info, union cli_measure_params *p)
{
	const struct cli_geometry_opts *g = &o->geometry;
	int rc =
	    cli_geometry_params(cmd, g->budget, g->places, g->range, g->seed, info, &p->geometry);

	/* the budget covers both parts: resolved here so that the progress line knows it */
	if (rc == DG_EXIT_OK && !p->geometry.time_budget_ns)
		p->geometry.time_budget_ns = dg_geometry_default_budget_ns(info->size_bytes);
	return rc;
}

static void geo_engine_needs(const union cli_measure_params *p, unsigned *qd, uint32_t *max_io)
{
	(void)p;
	*qd = DG_GEOCACHE_MAX_QD; /* the NCQ test; the geometry itself reads at queue depth 1 */
	*max_io = 8u << 20;	  /* one track per read */
}

static double geo_planned_ns(const union cli_measure_params *p)
{
	return (double)p->geometry.time_budget_ns;
}

/* The cache and NCQ tests (Schindler & Ganger 2000, via geocache.c) get a fifth of the budget,
 * at most their default; the geometry the rest. */
static int cache_run(struct cli_session *s, const struct dg_geometry_params *gp,
		     struct cli_geometry_result *g)
{
	const struct dg_device_info *info = dg_device_info(s->dev);
	struct dg_geocache_opts o;
	int rc;

	dg_geocache_opts_default(&o, info->size_bytes, info->logical_sector_bytes);
	if (gp->range_end_bytes < info->size_bytes)
		o.end_bytes = gp->range_end_bytes;
	o.start_bytes = gp->range_start_bytes;
	o.max_io_bytes = dg_engine_max_io(s->engine);
	o.time_budget_ns = gp->time_budget_ns / 5 < DG_GEOCACHE_DEFAULT_BUDGET_NS
			       ? gp->time_budget_ns / 5
			       : DG_GEOCACHE_DEFAULT_BUDGET_NS;
	o.nominal_rpm = dg_device_nominal_rpm(s->dev);
	o.seed = gp->seed;
	o.errors = &s->errors;
	o.stop = &cli_stop;
	rc = dg_geocache_run(s->engine, &o, &g->cache);
	g->cache_run = rc == 0 || rc == -EINTR;
	if (rc == -EINVAL) { /* a range too small for the tests: the geometry still runs */
		dg_warnings_add(&g->geometry->notes, "cache and NCQ not measured: the range is "
						     "too small for their tests (1 GiB at least)");
		return 0;
	}
	for (unsigned i = 0; g->cache_run && i < g->cache.notes_n; i++)
		dg_warnings_add(&g->geometry->notes, "cache: %s", g->cache.notes[i]);
	return rc == -EINTR ? 0 : rc;
}

static int geo_run(struct cli_session *s, enum dg_engine_kind kind,
		   const union cli_measure_params *p, struct cli_progress *prog, void **result)
{
	struct cli_geometry_result *g = calloc(1, sizeof(*g));
	struct dg_geometry_params gp = p->geometry;
	int rc;

	(void)kind;
	if (!g)
		return -ENOMEM;
	*result = g;
	gp.nominal_rpm = dg_device_nominal_rpm(s->dev);
	gp.time_budget_ns -= gp.time_budget_ns / 5 < DG_GEOCACHE_DEFAULT_BUDGET_NS
				 ? gp.time_budget_ns / 5
				 : DG_GEOCACHE_DEFAULT_BUDGET_NS;
	if (gp.time_budget_ns < DG_GEOMETRY_MIN_BUDGET_NS)
		gp.time_budget_ns = DG_GEOMETRY_MIN_BUDGET_NS;
	rc = dg_geometry_run(s->engine, dg_device_info(s->dev), &gp, &s->errors, &cli_stop,
			     cli_progress_fn(prog), prog, &g->geometry);
	if (rc == 0 && !cli_stop)
		rc = cache_run(s, &gp, g);
	return rc;
}

static const struct dg_warnings *geo_notes(const void *r)
{
	return &((const struct cli_geometry_result *)r)->geometry->notes;
}

static uint64_t geo_device_time_ns(const void *r)
{
	const struct cli_geometry_result *g = r;

	return g->geometry->device_time_ns + (g->cache_run ? g->cache.device_time_ns : 0);
}

static json_t *geo_params_json(const void *r)
{
	return dg_geometry_params_json(&((const struct cli_geometry_result *)r)->geometry->params);
}

/* {"geometry": {...the geometry..., "cache": {...}, "ncq": {...}}} */
static json_t *geo_sections(const void *r, const struct dg_device_info *info)
{
	const struct cli_geometry_result *g = r;
	json_t *o = json_object(), *geo = dg_geometry_json(g->geometry), *c = NULL;
	int rc = !o || !geo;

	(void)info;
	if (!rc && g->cache_run) {
		c = dg_geocache_json(&g->cache);
		rc = !c;
		for (const char *k = "cache"; !rc && k; k = strcmp(k, "cache") ? NULL : "ncq")
			if (json_object_get(c, k))
				rc = json_object_set(geo, k, json_object_get(c, k));
		if (!rc)
			rc = json_object_set_new(geo, "cache_device_time_s",
						 json_real((double)g->cache.device_time_ns / 1e9));
	}
	json_decref(c);
	if (!rc) {
		rc = json_object_set_new(o, "geometry", geo);
		geo = NULL;
	}
	json_decref(geo);
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static void cache_summary(FILE *out, const struct dg_geocache *c)
{
	char a[32], b[32], t[32];

	if (c->look_behind >= 0 || isfinite(c->read_ahead_bytes) || isfinite(c->size_bytes)) {
		dg_fmt_ibytes(a, sizeof(a),
			      isfinite(c->read_ahead_bytes) ? (uint64_t)c->read_ahead_bytes : 0);
		dg_fmt_ibytes(b, sizeof(b),
			      isfinite(c->segment_bytes) ? (uint64_t)c->segment_bytes : 0);
		dg_fmt_ibytes(t, sizeof(t), isfinite(c->size_bytes) ? (uint64_t)c->size_bytes : 0);
		fprintf(out, "cache: read-ahead %s, look-behind %s, %s kept per stream",
			isfinite(c->read_ahead_bytes) ? (c->read_ahead_bytes > 0 ? a : "none")
						      : "not measured",
			c->look_behind < 0 ? "not measured"
			: c->look_behind   ? "yes"
					   : "no",
			isfinite(c->segment_bytes) ? b : "(not measured)");
		if (c->segments > 1 && isfinite(c->size_bytes))
			fprintf(out, ", %d segments: %s", c->segments, t);
		fprintf(out, ", hit %.3f ms\n", c->hit_ms);
	}
	if (c->ncq_reorders >= 0)
		fprintf(out, "command queueing: %s (depth %d)\n",
			c->ncq_reorders ? "reorders" : "in order", c->ncq_depth);
}

static void geo_summary(FILE *out, const void *r, const struct dg_device_info *info)
{
	const struct cli_geometry_result *g = r;

	(void)info;
	cli_geometry_summary(out, g->geometry);
	if (g->cache_run)
		cache_summary(out, &g->cache);
}

static int geo_csv(FILE *f, void *r)
{
	return dg_geometry_csv(f, ((struct cli_geometry_result *)r)->geometry);
}

static void geo_free(void *r)
{
	struct cli_geometry_result *g = r;

	if (!g)
		return;
	dg_geometry_result_free(g->geometry);
	free(g);
}

const struct cli_measure cli_measure_geometry = {
    .name = "geometry",
    .option = geo_option,
    .params = geo_params,
    .engine_needs = geo_engine_needs,
    .planned_ns = geo_planned_ns,
    .run = geo_run,
    .notes = geo_notes,
    .device_time_ns = geo_device_time_ns,
    .params_json = geo_params_json,
    .sections = geo_sections,
    .summary = geo_summary,
    .csv = {{"geometry.csv", geo_csv, NULL}},
    .free = geo_free,
};

int cmd_geometry(int argc, char **argv)
{
	struct geo_args a = {.io = {.kind = DG_ENGINE_AUTO},
			     .job = {.m = &cli_measure_geometry, .on = true}};
	int rc = parse_args(argc, argv, &a);

	if (rc)
		return rc < 0 ? DG_EXIT_OK : rc;
	return cli_job_command(&a.job, a.device, &a.io, a.csv_dir);
}
