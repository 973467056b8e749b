/* SPDX-License-Identifier: MIT */
/*
 * diskgeo geometry: track size per zone and surface, heads, layout, skews and head switch, from
 * timing alone (the method is in include/diskgeo/geometry.h). Prints a summary; writes the
 * profile's "geometry" section as JSON and the zones as CSV.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "diskgeo/bandwidth.h"
#include "diskgeo/geometry.h"
#include "diskgeo/parse.h"
#include "diskgeo/profile.h"

enum {
	OPT_CSV = CLI_OPT_LOCAL,
	OPT_CSV_DIR,
	OPT_BUDGET,
	OPT_PLACES,
};

static const struct option longopts[] = {
    {"time-budget", required_argument, NULL, OPT_BUDGET},
    {"places", required_argument, NULL, OPT_PLACES},
    {"range", required_argument, NULL, 'r'},
    {"engine", required_argument, NULL, CLI_OPT_ENGINE},
    {"seed", required_argument, NULL, CLI_OPT_SEED},
    {"json", required_argument, NULL, 'j'},
    {"csv", required_argument, NULL, OPT_CSV},
    {"csv-dir", required_argument, NULL, OPT_CSV_DIR},
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
		"switch time from the completion phase of single-sector reads. Read-only; the\n"
		"drive's cache may stay on.\n\n"
		"Options (SIZE: K M G T, KiB.., KB.., s = logical sectors; TIME: ms s m h):\n"
		"      --time-budget TIME device time (default 5 min up to 4 TB, 8 min at 20 TB)\n"
		"      --places N         places measured across the range (default %u)\n"
		"  -r, --range A:B        measure [A, B) only (default the whole device)\n"
		"      --engine NAME      io_uring, psync, sim or auto (default auto)\n"
		"      --seed N           where the places fall (default 1)\n"
		"  -j, --json FILE|-      write the profile (\"geometry\") as JSON\n"
		"      --csv FILE|-       write the zones as CSV (one row per zone and surface)\n"
		"      --csv-dir DIR      write DIR/geometry.csv\n"
		"  -J                     the same as --json -\n"
		"  -q, --quiet            warnings and errors only\n"
		"  -v, --verbose          per-phase detail on stderr\n"
		"  -h, --help             this text\n",
		DG_GEOMETRY_DEFAULT_PLACES);
}

struct geo_args {
	const char *device, *json, *csv, *csv_dir, *budget, *places, *range, *seed;
	enum dg_engine_kind kind;
};

static int parse_args(int argc, char **argv, struct geo_args *a)
{
	char shortopts[64];
	int c;

	cli_shortopts(longopts, shortopts, sizeof(shortopts));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (cli_common_option(c, &a->json))
			continue;
		switch (c) {
		case CLI_OPT_ENGINE:
			if (cli_engine_option("geometry", optarg, &a->kind))
				return DG_EXIT_USAGE;
			break;
		case OPT_BUDGET:
			a->budget = optarg;
			break;
		case OPT_PLACES:
			a->places = optarg;
			break;
		case 'r':
			a->range = optarg;
			break;
		case CLI_OPT_SEED:
			a->seed = optarg;
			break;
		case 'j':
			a->json = optarg;
			break;
		case OPT_CSV:
			a->csv = optarg;
			break;
		case OPT_CSV_DIR:
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
	    cli_check_streams("geometry", a->json, a->csv))
		return DG_EXIT_USAGE;
	return DG_EXIT_OK;
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
		cli_human_ibytes(a, sizeof(a), r->align.request_bytes);
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

/* DIR/geometry.csv */
static int write_csv_dir(const char *dir, struct dg_geometry_result *r)
{
	char path[4096], err[DG_ERRLEN];

	if (mkdir(dir, 0777) && errno != EEXIST) {
		cli_error("geometry: cannot create --csv-dir %s: %s", dir, strerror(errno));
		return DG_EXIT_USAGE;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/geometry.csv", dir) >= sizeof(path)) {
		cli_error("geometry: --csv-dir path too long");
		return DG_EXIT_USAGE;
	}
	if (dg_file_write(path, dg_geometry_csv, r, err, sizeof(err))) {
		cli_error("%s", err);
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

/* Each zone's model rate beside the measured curve's rate at its middle: a slow region that
 * the geometry cannot explain stands out. */
static void model_vs_curve(FILE *out, const struct dg_geometry_result *r,
			   const struct dg_bandwidth_result *bw)
{
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

int cli_geometry_section(struct cli_session *s, const char *budget, FILE *summary,
			 const char *csv_dir, const struct dg_bandwidth_result *bw,
			 json_t *sections)
{
	struct dg_geometry_params p;
	struct dg_geometry_result *r = NULL;
	int rc =
	    cli_geometry_params("profile", budget, NULL, NULL, NULL, dg_device_info(s->dev), &p);

	if (rc)
		return rc;
	p.nominal_rpm = dg_device_nominal_rpm(s->dev);
	rc = dg_geometry_run(s->engine, dg_device_info(s->dev), &p, &s->errors, &cli_stop, NULL,
			     NULL, &r);
	if (rc) {
		cli_error("profile: geometry: %s", strerror(-rc));
		return rc == -EINVAL ? DG_EXIT_USAGE : DG_EXIT_DEVICE;
	}
	for (size_t i = 0; i < r->notes.n; i++)
		dg_warnings_add(&s->warnings, "%s", r->notes.v[i]);
	json_t *params = dg_geometry_params_json(&r->params);
	if (params)
		json_object_update(s->parameters, params);
	json_decref(params);
	if (summary) {
		fputc('\n', summary);
		cli_geometry_summary(summary, r);
		if (bw)
			model_vs_curve(summary, r, bw);
	}
	rc = csv_dir ? write_csv_dir(csv_dir, r) : DG_EXIT_OK;
	if (json_object_set_new(sections, "geometry", dg_geometry_json(r)))
		rc = DG_EXIT_USAGE;
	dg_geometry_result_free(r);
	return rc;
}

int cmd_geometry(int argc, char **argv)
{
	struct geo_args a = {.kind = DG_ENGINE_AUTO};
	struct dg_geometry_params p;
	struct dg_geometry_result *r = NULL;
	struct cli_session s;
	struct cli_progress prog;
	char err[DG_ERRLEN];
	json_t *sections;
	bool out_failed = false;
	int rc;

	memset(&s, 0, sizeof(s));
	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? DG_EXIT_OK : rc;
	rc = cli_check_output(a.csv);
	if (rc)
		return rc;
	rc = cli_session_begin(&s, a.device, 0, a.kind, 0, 0, a.json);
	if (rc)
		goto out;
	rc = cli_geometry_params("geometry", a.budget, a.places, a.range, a.seed,
				 dg_device_info(s.dev), &p);
	if (rc)
		goto out;
	rc = cli_open_engine(s.dev, a.kind, 1, 8u << 20, &s.engine); /* one track per read */
	if (rc)
		goto out;
	p.nominal_rpm = dg_device_nominal_rpm(s.dev);
	cli_progress_init(&prog);
	rc = dg_geometry_run(s.engine, dg_device_info(s.dev), &p, &s.errors, &cli_stop,
			     cli_progress_fn(&prog), &prog, &r);
	cli_progress_clear(&prog);
	if (rc) {
		cli_error("geometry: %s", strerror(-rc));
		rc = rc == -EINVAL ? DG_EXIT_USAGE : DG_EXIT_DEVICE;
		goto out;
	}
	/* MERGE POINT (cache/NCQ, issue 17): the lead calls dg_geocache_run() here and hands its
	 * result to the JSON below (dg_geocache_json(): members "cache" and "ncq"). */
	for (size_t i = 0; i < r->notes.n; i++)
		dg_warnings_add(&s.warnings, "%s", r->notes.v[i]);
	json_t *params = dg_geometry_params_json(&r->params);
	if (params) {
		json_object_set_new(params, "engine", json_string(dg_engine_name(s.engine)));
		json_object_update(s.parameters, params);
		json_decref(params);
	}
	FILE *out = cli_summary_out(a.json, a.csv);
	if (out)
		cli_geometry_summary(out, r);
	if (a.csv && dg_file_write(a.csv, dg_geometry_csv, r, err, sizeof(err))) {
		cli_error("%s", err);
		out_failed = true;
	}
	if (a.csv_dir && write_csv_dir(a.csv_dir, r))
		out_failed = true;
	sections = json_object();
	if (!sections || json_object_set_new(sections, "geometry", dg_geometry_json(r))) {
		json_decref(sections);
		cli_error("geometry: %s", strerror(ENOMEM));
		rc = DG_EXIT_USAGE;
		goto out;
	}
	rc = cli_session_end(&s, sections, a.json);
	if (out_failed)
		rc = DG_EXIT_USAGE;
out:
	dg_geometry_result_free(r);
	cli_session_free(&s);
	return rc;
}
