/* SPDX-License-Identifier: MIT */
/*
 * diskgeo profile: probe + bandwidth curve and zones + seek profile, rotation and span IOPS, in
 * one run through one engine, written as one profile (contract.md). The bandwidth phase runs
 * first (its samples move the head across the whole surface anyway); the seek phase follows.
 * An interruption in either phase still writes what was measured (run.complete = false).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "diskgeo/bandwidth.h"
#include "diskgeo/profile.h"
#include "diskgeo/seek.h"
#include "diskgeo/sweep.h"

enum {
	OPT_NO_BANDWIDTH = CLI_OPT_LOCAL,
	OPT_NO_SEEK,
	OPT_CSV_DIR,
	OPT_SWEEP,
	OPT_GEOMETRY,
	OPT_GEOMETRY_BUDGET,
};

static const struct option longopts[] = {
    {"samples", required_argument, NULL, 'n'},
    {"sample-size", required_argument, NULL, 's'},
    {"range", required_argument, NULL, 'r'},
    {"passes", required_argument, NULL, CLI_OPT_PASSES},
    {"bandwidth-budget", required_argument, NULL, CLI_OPT_BW_BUDGET},
    {"qd", required_argument, NULL, 'Q'},
    {"no-refine", no_argument, NULL, CLI_OPT_NO_REFINE},
    {"distances", required_argument, NULL, CLI_OPT_DISTANCES},
    {"seek-samples", required_argument, NULL, CLI_OPT_SEEK_SAMPLES},
    {"seek-budget", required_argument, NULL, CLI_OPT_SEEK_BUDGET},
    {"block-size", required_argument, NULL, 'b'},
    {"no-rotation", no_argument, NULL, CLI_OPT_NO_ROTATION},
    {"no-spans", no_argument, NULL, CLI_OPT_NO_SPANS},
    {"no-bandwidth", no_argument, NULL, OPT_NO_BANDWIDTH},
    {"no-seek", no_argument, NULL, OPT_NO_SEEK},
    {"sweep", no_argument, NULL, OPT_SWEEP},
    {"sweep-budget", required_argument, NULL, CLI_OPT_SWEEP_BUDGET},
    {"sweep-seq-blocks", required_argument, NULL, CLI_OPT_SWEEP_SEQ_BLOCKS},
    {"sweep-rand-blocks", required_argument, NULL, CLI_OPT_SWEEP_RAND_BLOCKS},
    {"sweep-qd", required_argument, NULL, CLI_OPT_SWEEP_QDS},
    {"engine", required_argument, NULL, CLI_OPT_ENGINE},
    {"seed", required_argument, NULL, CLI_OPT_SEED},
    {"json", required_argument, NULL, 'j'},
    {"prometheus", required_argument, NULL, CLI_OPT_PROMETHEUS},
    {"csv-dir", required_argument, NULL, OPT_CSV_DIR},
    {"geometry", no_argument, NULL, OPT_GEOMETRY},
    {"geometry-budget", required_argument, NULL, OPT_GEOMETRY_BUDGET},
    CLI_COMMON_LONGOPTS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: diskgeo profile DEVICE [options]\n\n"
	    "The whole profile in one run: what the device is, the sequential bandwidth curve\n"
	    "and its recording zones, then seek time against distance, the rotation speed and\n"
	    "random 4 KiB QD1 IOPS by span. Reads only. Defaults cost about 60-90 s of device\n"
	    "time for the curve and about 60-80 s for the seek phase on a 4 TB 5400 rpm disk.\n\n"
	    "Options (SIZE: K M G T or KiB MiB GiB TiB = powers of 1024, KB MB GB TB = powers\n"
	    "of 1000, s = logical sectors; TIME: ms s m h, no suffix = seconds):\n"
	    "  bandwidth curve (see diskgeo bandwidth --help):\n"
	    "  -n, --samples N            curve points, >= 2 (default: from the budget, >= 256)\n"
	    "  -s, --sample-size SIZE     bytes per sample (default 16M)\n"
	    "  -r, --range START:END      curve over [START, END) only (default: everything)\n"
	    "      --passes N             measure each point N times, keep the median\n"
	    "      --bandwidth-budget TIME device time for the curve (default 60s)\n"
	    "  -Q, --qd N                 reads in flight per sample, 1..256 (default 4)\n"
	    "      --no-refine            skip the bisection of zone boundaries\n"
	    "  seek phase (see diskgeo seek --help):\n"
	    "      --distances N          seek distances (default 40)\n"
	    "      --seek-samples N       start offsets per distance (default 24)\n"
	    "      --seek-budget TIME     device time for the seek curve (default 60s)\n"
	    "  -b, --block-size SIZE      bytes per random read (default 4k)\n"
	    "      --no-rotation          leave rotation out of the output\n"
	    "      --no-spans             skip the random-read IOPS by span\n"
	    "  sweep (see diskgeo sweep --help; reads, the whole device):\n"
	    "      --sweep                add the sweep: block size x queue depth, NCQ, 512e\n"
	    "      --sweep-budget TIME    device time for the sweep (default 60s)\n"
	    "      --sweep-seq-blocks LIST, --sweep-rand-blocks LIST, --sweep-qd LIST\n"
	    "                             the sweep's grid (as sweep's --seq-blocks, ...)\n"
	    "  geometry (see diskgeo geometry --help):\n"
	    "      --geometry             add track sizes, heads, layout, skews, head switch\n"
	    "      --geometry-budget TIME device time for it (default 5 min for 4 TB)\n"
	    "  both:\n"
	    "      --no-bandwidth         skip the bandwidth curve\n"
	    "      --no-seek              skip the seek phase (seek, rotation, spans)\n"
	    "      --engine NAME          io_uring, psync, sim or auto (default auto)\n"
	    "      --seed N               sample order and seek places (default 1)\n"
	    "  -j, --json FILE|-          write the profile as JSON\n"
	    "      --prometheus FILE      write its figures as node_exporter textfile metrics\n"
	    "      --json-dir DIR         several DEVICEs at once, one process each: "
	    "DIR/<name>.json\n"
	    "      --csv-dir DIR          write bandwidth.csv, zones.csv, seek.csv, iops.csv (and\n"
	    "                             sweep.csv) into DIR\n"
	    "                             (created when missing)\n"
	    "  -J                         the same as --json -\n"
	    "  -q, --quiet                warnings and errors only: no summary, no progress\n"
	    "  -v, --verbose              per-phase detail on stderr\n"
	    "  -h, --help                 this text\n"
	    "The summary goes to stdout, or to stderr when --json - takes stdout.\n");
}

struct profile_args {
	const char *device, *json, *csv_dir, *prometheus;
	struct cli_bandwidth_opts bw;
	struct cli_seek_opts seek;
	struct cli_sweep_opts sweep;
	enum dg_engine_kind kind;
	bool no_bandwidth, no_seek, do_sweep, do_geometry;
	const char *geometry_budget;
};

static int parse_args(int argc, char **argv, struct profile_args *a)
{
	char shortopts[64];
	int c;

	cli_shortopts(longopts, shortopts, sizeof(shortopts));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		/* Both take --seed: the curve's order and the seek places. */
		if (cli_bandwidth_option(c, optarg, &a->bw) |
			cli_seek_option(c, optarg, &a->seek) ||
		    cli_sweep_option(c, optarg, &a->sweep) || cli_common_option(c, &a->json))
			continue;
		switch (c) {
		case OPT_NO_BANDWIDTH:
			a->no_bandwidth = true;
			break;
		case OPT_NO_SEEK:
			a->no_seek = true;
			break;
		case OPT_SWEEP:
			a->do_sweep = true;
			break;
		case OPT_GEOMETRY:
			a->do_geometry = true;
			break;
		case OPT_GEOMETRY_BUDGET:
			a->geometry_budget = optarg;
			break;
		case CLI_OPT_ENGINE:
			if (cli_engine_option("profile", optarg, &a->kind))
				return DG_EXIT_USAGE;
			break;
		case 'j':
			a->json = optarg;
			break;
		case CLI_OPT_PROMETHEUS:
			a->prometheus = optarg;
			break;
		case OPT_CSV_DIR:
			a->csv_dir = optarg;
			if (!strcmp(optarg, "-")) { /* not a directory named '-' by accident */
				cli_error("profile: --csv-dir '-': standard output is not a "
					  "directory (several CSV files are written; name a "
					  "directory, ./- for one called '-')");
				return DG_EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_bad_option("profile", argv, shortopts);
		}
	}
	if (cli_one_device("profile", argc, argv, &a->device))
		return DG_EXIT_USAGE;
	if (a->no_bandwidth && a->no_seek && !a->do_sweep && !a->do_geometry) {
		cli_error("profile: --no-bandwidth and --no-seek leave nothing to measure (use "
			  "diskgeo probe)");
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

/* The CSV files of --csv-dir, in the order they are written. */
static const char *const csv_names[] = {"bandwidth.csv", "zones.csv", "seek.csv", "iops.csv",
					"sweep.csv"};

/* DIR/NAME into `path`; one line and false when it does not fit. */
static bool csv_path(char *path, size_t len, const char *dir, const char *name)
{
	if (snprintf(path, len, "%s/%s", dir, name) < (int)len)
		return true;
	cli_error("profile: --csv-dir path too long");
	return false;
}

/* The CSV directory must be usable before anything is measured: created when missing (its
 * parent must exist), a writable directory otherwise, and each file in it an output that
 * cli_check_output() accepts (not the device, not a directory, the file system not full). */
static int prepare_csv_dir(const char *dir)
{
	struct stat st;
	char path[4096];

	if (!dir)
		return DG_EXIT_OK;
	if (mkdir(dir, 0777) && errno != EEXIST) {
		cli_error("profile: cannot create --csv-dir %s: %s", dir, strerror(errno));
		return DG_EXIT_USAGE;
	}
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		cli_error("profile: --csv-dir %s is not a directory", dir);
		return DG_EXIT_USAGE;
	}
	if (access(dir, W_OK | X_OK)) {
		cli_error("profile: --csv-dir %s: %s", dir, strerror(errno));
		return DG_EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(csv_names) / sizeof(csv_names[0]); i++)
		if (!csv_path(path, sizeof(path), dir, csv_names[i]) || cli_check_output(path))
			return DG_EXIT_USAGE;
	return DG_EXIT_OK;
}

/* Writes DIR/NAME with `fill`; one line on failure. */
static int write_csv(const char *dir, const char *name, int (*fill)(FILE *, void *), void *arg)
{
	char path[4096], err[DG_ERRLEN];

	if (!csv_path(path, sizeof(path), dir, name))
		return DG_EXIT_USAGE;
	if (dg_file_write(path, fill, arg, err, sizeof(err))) {
		cli_error("%s", err);
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

/* Sets run.parameters.KEY to `params` (stolen; NULL on ENOMEM is skipped). */
static void add_params(struct cli_session *s, const char *key, json_t *params)
{
	if (params)
		json_object_set_new(s->parameters, key, params);
}

int cmd_profile(int argc, char **argv)
{
	struct profile_args a = {.kind = DG_ENGINE_AUTO};
	struct dg_bandwidth_params bwp;
	struct dg_seek_params skp;
	struct dg_bandwidth_result *bw = NULL;
	struct dg_seek_result *sk = NULL;
	struct dg_sweep_params swp;
	struct dg_sweep_result *sw = NULL;
	struct cli_session s;
	json_t *sections = NULL, *part;
	FILE *summary;
	struct cli_progress prog;
	double bw_share = 0;
	bool csv_failed;
	uint32_t max_io;
	int rc;
	int multi = cli_multi_device("profile", argc, argv, longopts, cmd_profile);

	if (multi >= 0)
		return multi;

	memset(&s, 0, sizeof(s));
	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? DG_EXIT_OK : rc;
	rc = cli_check_output(a.prometheus);
	if (rc)
		return rc;
	rc = cli_session_begin(&s, a.device, 0, a.kind, 0, 0, a.json);
	s.prometheus_path = a.prometheus;
	if (rc)
		goto out;
	/* Every parameter is checked against the device before the first read. */
	if (!a.no_bandwidth) {
		rc = cli_bandwidth_params("profile", &a.bw, dg_device_info(s.dev), &bwp);
		if (rc)
			goto out;
	}
	/* A device too small for the seek phase still gets its curve. */
	if (!a.no_seek && !a.no_bandwidth &&
	    dg_device_info(s.dev)->size_bytes < DG_SEEK_MIN_DEVICE_BYTES) {
		dg_warnings_add(
		    &s.warnings,
		    "the device holds %llu bytes, less than the %llu MiB the seek phase "
		    "needs: seek, rotation and spans were skipped",
		    (unsigned long long)dg_device_info(s.dev)->size_bytes,
		    DG_SEEK_MIN_DEVICE_BYTES >> 20);
		cli_warn("%s", s.warnings.v[s.warnings.n - 1]);
		cli_session_warnings_shown(&s);
		a.no_seek = true;
	}
	if (!a.no_seek) {
		rc = cli_seek_params("profile", &a.seek, dg_device_info(s.dev), &skp);
		if (rc)
			goto out;
	}
	if (a.do_sweep) {
		rc = cli_sweep_params("profile", &a.sweep, dg_device_info(s.dev), false, &swp);
		if (rc)
			goto out;
	}
	rc = prepare_csv_dir(a.csv_dir);
	if (rc)
		goto out;
	max_io = a.no_bandwidth ? 1u << 20 : bwp.block_bytes;
	if (!a.no_seek && skp.block_bytes > max_io)
		max_io = skp.block_bytes;
	rc = cli_open_engine(s.dev, a.kind, a.no_bandwidth ? 1 : bwp.qd, max_io, &s.engine);
	if (rc)
		goto out;
	json_object_set_new(s.parameters, "engine", json_string(dg_engine_name(s.engine)));

	summary = cli_summary_out(a.json, NULL);
	/* One progress line for the run: each phase's share from its device-time budget (the
	 * curve's refinement adds about a quarter, rotation and spans about a third). */
	cli_progress_init(&prog);
	if (!a.no_bandwidth) {
		double bw_ns = 1.25 * (double)bwp.time_budget_ns;
		double sk_ns = a.no_seek ? 0 : 1.3 * (double)skp.time_budget_ns;
		bw_share = bw_ns / (bw_ns + sk_ns);
	}
	sections = json_object();
	if (!sections) {
		rc = -ENOMEM;
		goto fail;
	}
	if (!a.no_bandwidth) {
		cli_progress_stage(&prog, 0, bw_share);
		rc = dg_bandwidth_run(s.engine, dg_device_info(s.dev), &bwp, &s.errors, &cli_stop,
				      cli_progress_fn(&prog), &prog, &bw);
		cli_progress_clear(&prog);
		if (rc)
			goto fail;
		for (size_t i = 0; i < bw->notes.n; i++)
			dg_warnings_add(&s.warnings, "%s", bw->notes.v[i]);
		add_params(&s, "bandwidth", dg_bandwidth_params_json(&bw->params));
		cli_verbose("bandwidth: done, %.1f s of device time",
			    (double)bw->device_time_ns / 1e9);
		if (summary)
			cli_bandwidth_summary(summary, bw, dg_device_info(s.dev)->size_bytes);
		part = dg_bandwidth_json(bw);
		if (!part) {
			rc = -ENOMEM;
			goto fail;
		}
		json_object_set_new(sections, "bandwidth", part);
	}
	if (!a.no_seek && !cli_stop) {
		cli_progress_stage(&prog, bw_share, 1 - bw_share);
		rc = dg_seek_run(s.engine, dg_device_info(s.dev), &skp, &s.errors, &cli_stop,
				 cli_progress_fn(&prog), &prog, &sk);
		cli_progress_clear(&prog);
		if (rc)
			goto fail;
		for (size_t i = 0; i < sk->notes.n; i++)
			dg_warnings_add(&s.warnings, "%s", sk->notes.v[i]);
		cli_rotation_verdict(&s, sk);
		add_params(&s, "seek", dg_seek_params_json(&sk->params));
		cli_verbose("seek: done, %.1f s of device time", (double)sk->device_time_ns / 1e9);
		if (bw && summary)
			fputc('\n', summary);
		if (summary)
			cli_seek_summary(summary, sk);
		part = dg_seek_json(sk);
		if (!part || json_object_update(sections, part)) {
			json_decref(part);
			rc = -ENOMEM;
			goto fail;
		}
		json_decref(part);
	}
	if (a.do_sweep && !cli_stop) {
		rc = cli_sweep_run(&s, a.kind, &swp, &sw);
		if (rc)
			goto out;
		add_params(&s, "sweep", dg_sweep_params_json(&sw->params));
		if (summary) {
			fputc('\n', summary);
			cli_sweep_summary(summary, sw, dg_device_info(s.dev));
		}
		part = cli_sweep_json(sw, dg_device_info(s.dev));
		if (!part) {
			rc = -ENOMEM;
			goto fail;
		}
		json_object_set_new(sections, "sweep", part);
	}
	if (a.do_geometry && !cli_stop) {
		rc = cli_geometry_section(&s, a.geometry_budget, summary, a.csv_dir, bw, sections);
		if (rc)
			goto out;
	}
	/* Every output that can be written is written: a CSV that fails (a full file system) is
	 * reported with its own errno, the others and the JSON still go out, and the exit status
	 * is 1. */
	csv_failed = false;
	if (a.csv_dir && bw) {
		csv_failed |= write_csv(a.csv_dir, csv_names[0], dg_bandwidth_csv, bw) != 0;
		csv_failed |= write_csv(a.csv_dir, csv_names[1], dg_bandwidth_zones_csv, bw) != 0;
	}
	if (a.csv_dir && sk) {
		csv_failed |= write_csv(a.csv_dir, csv_names[2], dg_seek_csv, sk) != 0;
		if (sk->nspans)
			csv_failed |= write_csv(a.csv_dir, csv_names[3], dg_seek_iops_csv, sk) != 0;
	}
	if (a.csv_dir && sw)
		csv_failed |= write_csv(a.csv_dir, csv_names[4], dg_sweep_csv, sw) != 0;
	rc = cli_session_end(&s, sections, a.json);
	sections = NULL;
	if (csv_failed)
		rc = DG_EXIT_USAGE;
	goto out;
fail:
	cli_error("profile: %s", strerror(-rc));
	rc = rc == -EINVAL ? DG_EXIT_USAGE : DG_EXIT_DEVICE;
out:
	json_decref(sections);
	dg_bandwidth_result_free(bw);
	dg_seek_result_free(sk);
	dg_sweep_result_free(sw);
	cli_session_free(&s);
	return rc;
}
