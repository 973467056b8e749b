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

#include "cli_measure.h"
#include "diskgeo/profile.h"

enum {
	OPT_NO_BANDWIDTH = CLI_OPT_LOCAL,
	OPT_NO_SEEK,
	OPT_CSV_DIR,
	OPT_SWEEP,
	OPT_GEOMETRY,
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
    {"geometry", no_argument, NULL, OPT_GEOMETRY},
    {"geometry-budget", required_argument, NULL, CLI_OPT_GEOMETRY_BUDGET},
    {"sweep-budget", required_argument, NULL, CLI_OPT_SWEEP_BUDGET},
    {"sweep-seq-blocks", required_argument, NULL, CLI_OPT_SWEEP_SEQ_BLOCKS},
    {"sweep-rand-blocks", required_argument, NULL, CLI_OPT_SWEEP_RAND_BLOCKS},
    {"sweep-qd", required_argument, NULL, CLI_OPT_SWEEP_QDS},
    CLI_ENGINE_LONGOPT,
    CLI_SEED_LONGOPT,
    CLI_JSON_LONGOPT,
    CLI_PROMETHEUS_LONGOPT,
    {"csv-dir", required_argument, NULL, OPT_CSV_DIR},
    CLI_COMMON_LONGOPTS,
    CLI_LONGOPTS_END,
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
	    "      --distances N          seek distances (default 24)\n"
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
	    "      --geometry             add track sizes, heads, layout, skews, head switch,\n"
	    "                             cache and command queueing\n"
	    "      --geometry-budget TIME device time for it (default 5 min up to 4 TB)\n"
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
	    "                             sweep.csv, geometry.csv) into DIR\n"
	    "                             (created when missing)\n"
	    "  -J                         the same as --json -\n"
	    "  -q, --quiet                warnings and errors only: no summary, no progress\n"
	    "  -v, --verbose              per-phase detail on stderr\n"
	    "  -h, --help                 this text\n"
	    "The summary goes to stdout, or to stderr when --json - takes stdout.\n");
}

/* The measurements of a profile: every entry of the registry, each on or off. */
#define MAX_JOBS 8

struct profile_args {
	const char *device, *csv_dir;
	struct cli_io_opts io;
	struct cli_job jobs[MAX_JOBS];
	size_t njobs;
};

/* The job of measurement `m`. */
static struct cli_job *job(struct profile_args *a, const struct cli_measure *m)
{
	for (size_t i = 0; i < a->njobs; i++)
		if (a->jobs[i].m == m)
			return &a->jobs[i];
	return NULL;
}

static void jobs_init(struct profile_args *a)
{
	for (a->njobs = 0; cli_measures[a->njobs] && a->njobs < MAX_JOBS; a->njobs++)
		a->jobs[a->njobs].m = cli_measures[a->njobs];
	/* The default profile: the curve and the seek phase; the sweep on request. */
	job(a, &cli_measure_bandwidth)->on = true;
	job(a, &cli_measure_seek)->on = true;
}

static int parse_args(int argc, char **argv, struct profile_args *a)
{
	char shortopts[64];
	int c, rc = DG_EXIT_OK;

	cli_getopt_begin(longopts, shortopts, sizeof(shortopts));
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		/* Several take --seed: the curve's order and the seek places. */
		if (cli_jobs_option(a->jobs, a->njobs, c, optarg) ||
		    cli_io_option("profile", c, optarg, &a->io, &rc)) {
			if (rc)
				return rc;
			continue;
		}
		switch (c) {
		case OPT_NO_BANDWIDTH:
			job(a, &cli_measure_bandwidth)->on = false;
			break;
		case OPT_NO_SEEK:
			job(a, &cli_measure_seek)->on = false;
			break;
		case OPT_SWEEP:
			job(a, &cli_measure_sweep)->on = true;
			break;
		case OPT_GEOMETRY:
			job(a, &cli_measure_geometry)->on = true;
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
	for (size_t i = 0; i < a->njobs; i++)
		if (a->jobs[i].on)
			return DG_EXIT_OK;
	cli_error("profile: --no-bandwidth and --no-seek leave nothing to measure (use "
		  "diskgeo probe)");
	return DG_EXIT_USAGE;
}

/* A device too small for the seek phase still gets its curve: the seek job goes off with a
 * warning. */
static void skip_small_seek(struct cli_session *s, struct profile_args *a)
{
	const struct dg_device_info *info = dg_device_info(s->dev);
	struct cli_job *seek = job(a, &cli_measure_seek);

	if (!seek->on || !job(a, &cli_measure_bandwidth)->on ||
	    info->size_bytes >= DG_SEEK_MIN_DEVICE_BYTES)
		return;
	dg_warnings_add(&s->warnings,
			"the device holds %llu bytes, less than the %llu MiB the seek phase "
			"needs: seek, rotation and spans were skipped",
			(unsigned long long)info->size_bytes, DG_SEEK_MIN_DEVICE_BYTES >> 20);
	cli_warn("%s", s->warnings.v[s->warnings.n - 1]);
	cli_session_warnings_shown(s);
	seek->on = false;
}

/* Every parameter is checked against the device before the first read. */
static int check_params(struct cli_session *s, struct profile_args *a)
{
	for (size_t i = 0; i < a->njobs; i++) {
		struct cli_job *j = &a->jobs[i];

		if (j->m == &cli_measure_seek)
			skip_small_seek(s, a);
		if (j->on && j->m->params("profile", &j->o, dg_device_info(s->dev), &j->p))
			return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

/* With the curve and the geometry both measured: each zone's model rate beside the curve's. */
static void geometry_vs_curve(struct profile_args *a, FILE *summary)
{
	const struct cli_job *bw = job(a, &cli_measure_bandwidth);
	const struct cli_job *geo = job(a, &cli_measure_geometry);

	if (summary && bw->result && geo->result) {
		fputc('\n', summary);
		cli_geometry_vs_curve(summary, geo->result, bw->result);
	}
}

/* Runs every job that is on, in the registry's order, each followed by its summary; then the
 * CSV files and the profile. Returns DG_EXIT_*. */
static int run_jobs(struct cli_session *s, struct profile_args *a)
{
	FILE *summary = cli_summary_out(a->io.json, NULL);
	json_t *sections = json_object();
	struct cli_progress prog;
	double total_ns = 0, base = 0;
	bool csv_failed = false, shown = false;
	int rc = DG_EXIT_OK;

	if (!sections ||
	    json_object_set_new(s->parameters, "engine", json_string(dg_engine_name(s->engine))))
		goto nomem;
	/* One progress line for the run: each phase's share from the device time it plans. */
	for (size_t i = 0; i < a->njobs; i++)
		if (a->jobs[i].on && a->jobs[i].m->planned_ns)
			total_ns += a->jobs[i].m->planned_ns(&a->jobs[i].p);
	cli_progress_init(&prog);
	for (size_t i = 0; i < a->njobs; i++) {
		struct cli_job *j = &a->jobs[i];
		double share = 0;

		if (!j->on || cli_stop)
			continue;
		if (j->m->planned_ns && total_ns > 0)
			share = j->m->planned_ns(&j->p) / total_ns;
		cli_progress_stage(&prog, base, share);
		base += share;
		rc = cli_job_run(s, j, a->io.kind, &prog, "profile");
		if (rc) {
			json_decref(sections);
			return rc;
		}
		if (shown && summary)
			fputc('\n', summary);
		if (cli_job_output(s, j, sections, summary, true))
			goto nomem;
		shown = true;
	}
	geometry_vs_curve(a, summary);
	/* Every output that can be written is written: a CSV that fails (a full file system) is
	 * reported with its own errno, the others and the JSON still go out. */
	for (size_t i = 0; i < a->njobs && a->csv_dir; i++)
		csv_failed |= cli_job_csv(&a->jobs[i], a->csv_dir, NULL);
	return cli_jobs_end(s, sections, a->io.json, csv_failed);
nomem:
	json_decref(sections);
	cli_error("profile: %s", strerror(ENOMEM));
	return DG_EXIT_USAGE;
}

int cmd_profile(int argc, char **argv)
{
	struct profile_args a = {.io = {.kind = DG_ENGINE_AUTO}};
	struct cli_session s;
	int rc;
	int multi = cli_multi_device("profile", argc, argv, longopts, cmd_profile);

	if (multi >= 0)
		return multi;

	memset(&s, 0, sizeof(s));
	jobs_init(&a);
	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? DG_EXIT_OK : rc;
	rc = cli_check_output(&s.outputs, a.io.prometheus);
	if (rc)
		return rc;
	rc = cli_session_begin(&s, a.device, 0, a.io.kind, 0, 0, a.io.json);
	s.prometheus_path = a.io.prometheus;
	if (rc == 0)
		rc = check_params(&s, &a);
	if (rc == 0)
		rc = cli_csv_dir_prepare(&s, "profile", a.csv_dir);
	if (rc == 0)
		rc = cli_jobs_open_engine(&s, a.jobs, a.njobs, a.io.kind);
	if (rc == 0)
		rc = run_jobs(&s, &a);
	cli_jobs_free(a.jobs, a.njobs);
	cli_session_free(&s);
	return rc;
}
