/* SPDX-License-Identifier: MIT */
/*
 * diskgeo seek: seek time against LBA distance, the rotation speed, and random-read IOPS by
 * stroke width (the method is in include/diskgeo/seek.h). Prints a summary; writes the
 * profile's "seek", "rotation" and "iops" sections as JSON and the seek points as CSV.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_measure.h"
#include "diskgeo/parse.h"
#include "diskgeo/profile.h"
#include "diskgeo/seek.h"
#include "util.h"

static const struct option longopts[] = {
    {"distances", required_argument, NULL, 'd'},
    {"samples", required_argument, NULL, 'n'},
    {"time-budget", required_argument, NULL, CLI_OPT_SEEK_BUDGET},
    {"block-size", required_argument, NULL, 'b'},
    {"no-rotation", no_argument, NULL, CLI_OPT_NO_ROTATION},
    {"no-spans", no_argument, NULL, CLI_OPT_NO_SPANS},
    CLI_ENGINE_LONGOPT,
    CLI_SEED_LONGOPT,
    CLI_JSON_LONGOPT,
    CLI_PROMETHEUS_LONGOPT,
    CLI_CSV_LONGOPT,
    CLI_COMMON_LONGOPTS,
    CLI_LONGOPTS_END,
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: diskgeo seek DEVICE [options]\n\n"
	    "Measures seek time against LBA distance (with a Ruemmler-Wilkes fit, track-to-\n"
	    "track, average and full-stroke seeks), the rotation speed, and random 4 KiB QD1\n"
	    "IOPS over 1%%, 10%%, 25%%, 50%%, 100%% of the device from the outer edge and the "
	    "inner\n"
	    "10%%. Rotational latency is separated from seek time by timing reads at chosen\n"
	    "rotational phases; no drive setting is changed, nothing is written.\n\n"
	    "Options (SIZE: K M G T or KiB MiB GiB TiB = powers of 1024, KB MB GB TB = powers\n"
	    "of 1000, s = logical sectors; TIME: ms s m h, no suffix = seconds):\n"
	    "  -d, --distances N      seek distances, %u..%u (default %u: log-spaced, then "
	    "linear)\n"
	    "  -n, --samples N        start offsets per distance (default %u; fewer when the\n"
	    "                         budget is short)\n"
	    "      --time-budget TIME device time for the seek curve (default 60s); rotation\n"
	    "                         (about 400 reads) and spans (6 x 49 pairs, more where\n"
	    "                         they spread, within 1.45 x the budget) come on top\n"
	    "  -b, --block-size SIZE  bytes per read (default 4k, or the physical sector)\n"
	    "      --no-rotation      leave rotation out of the output (it is still measured:\n"
	    "                         the seek method needs the period)\n"
	    "      --no-spans         skip the random-read IOPS by span\n"
	    "      --engine NAME      io_uring, psync, sim or auto (default auto)\n"
	    "      --seed N           start offsets and pairs (default 1)\n"
	    "  -j, --json FILE|-      write the profile (\"seek\", \"rotation\", \"iops\") as "
	    "JSON\n"
	    "      --csv FILE|-       write the seek points as CSV (distance_bytes,samples,...)\n"
	    "  -J                     the same as --json -\n"
	    "  -q, --quiet            warnings and errors only: no summary, no progress\n"
	    "  -v, --verbose          per-phase detail on stderr\n"
	    "The summary goes to stdout, or to stderr when --json - or --csv - takes stdout.\n"
	    "      --prometheus FILE  write the figures as node_exporter textfile metrics\n"
	    "      --json-dir DIR     several DEVICEs at once, one process each: DIR/<name>.json\n"
	    "  -h, --help             this text\n",
	    DG_SEEK_MIN_DISTANCES, DG_SEEK_MAX_DISTANCES, DG_SEEK_DEFAULT_DISTANCES,
	    DG_SEEK_DEFAULT_SAMPLES);
}

struct seek_args {
	const char *device;
	struct cli_io_opts io;
	struct cli_job job; /* the registry's seek entry */
};

/* -d and -n: this command's short names of shared seek options. */
static int shared_code(int c)
{
	return c == 'd' ? CLI_OPT_DISTANCES : c == 'n' ? CLI_OPT_SEEK_SAMPLES : c;
}

static int parse_args(int argc, char **argv, struct seek_args *a)
{
	char shortopts[64];
	int c, rc = DG_EXIT_OK;

	cli_getopt_begin(longopts, shortopts, sizeof(shortopts));
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (cli_jobs_option(&a->job, 1, shared_code(c), optarg) ||
		    cli_io_option("seek", c, optarg, &a->io, &rc)) {
			if (rc)
				return rc;
			continue;
		}
		switch (c) {
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_bad_option("seek", argv, shortopts);
		}
	}
	if (cli_one_device("seek", argc, argv, &a->device) ||
	    cli_check_streams("seek", a->io.json, a->io.csv))
		return DG_EXIT_USAGE;
	return DG_EXIT_OK;
}

bool cli_seek_option(int c, const char *arg, struct cli_seek_opts *o)
{
	static const struct cli_opt_field t[] = {
	    CLI_TEXT(CLI_OPT_DISTANCES, struct cli_seek_opts, distances),
	    CLI_TEXT(CLI_OPT_SEEK_SAMPLES, struct cli_seek_opts, samples),
	    CLI_TEXT(CLI_OPT_SEEK_BUDGET, struct cli_seek_opts, budget),
	    CLI_TEXT('b', struct cli_seek_opts, block),
	    CLI_FLAG(CLI_OPT_NO_ROTATION, struct cli_seek_opts, no_rotation),
	    CLI_FLAG(CLI_OPT_NO_SPANS, struct cli_seek_opts, no_spans),
	    CLI_TEXT(CLI_OPT_SEED, struct cli_seek_opts, seed),
	};

	return cli_take_option(t, ARRAY_SIZE(t), c, arg, o);
}

/* The seek budget's option name in `cmd`. */
static const char *budget_option(const char *cmd)
{
	return strcmp(cmd, "seek") ? "--seek-budget" : "--time-budget";
}

int cli_seek_params(const char *cmd, const struct cli_seek_opts *a,
		    const struct dg_device_info *info, struct dg_seek_params *p)
{
	char err[DG_ERRLEN];
	uint64_t v;

	dg_seek_params_default(p);
	if (a->distances) {
		if (dg_parse_uint(a->distances, DG_SEEK_MIN_DISTANCES, DG_SEEK_MAX_DISTANCES, &v)) {
			cli_error("%s: --distances '%s' must be a whole number in %u..%u", cmd,
				  a->distances, DG_SEEK_MIN_DISTANCES, DG_SEEK_MAX_DISTANCES);
			return DG_EXIT_USAGE;
		}
		p->distances = (unsigned)v;
	}
	if (a->samples) {
		if (dg_parse_uint(a->samples, 1, DG_SEEK_MAX_SAMPLES, &v)) {
			cli_error("%s: --samples '%s' must be a whole number in 1..%u", cmd,
				  a->samples, DG_SEEK_MAX_SAMPLES);
			return DG_EXIT_USAGE;
		}
		p->samples = (unsigned)v;
	}
	if (a->budget) {
		if (cli_time_option(cmd, budget_option(cmd), a->budget, &p->time_budget_ns))
			return DG_EXIT_USAGE;
		/* Samples are the ceiling the budget plans under: a longer budget than the default
		 * raises the ceiling in proportion, so that it buys more samples per distance. */
		if (!a->samples && p->time_budget_ns > DG_SEEK_DEFAULT_BUDGET_NS) {
			double n = (double)DG_SEEK_DEFAULT_SAMPLES * (double)p->time_budget_ns /
				   (double)DG_SEEK_DEFAULT_BUDGET_NS;
			p->samples = n > DG_SEEK_MAX_SAMPLES ? DG_SEEK_MAX_SAMPLES : (unsigned)n;
		}
	}
	if (a->block) {
		if (dg_parse_size(a->block, info->logical_sector_bytes, &v) || v == 0 ||
		    v > UINT32_MAX) {
			cli_error("%s: --block-size '%s' is not a size: use " DG_PARSE_SIZE_FORMS,
				  cmd, a->block);
			return DG_EXIT_USAGE;
		}
		p->block_bytes = (uint32_t)v;
	}
	if (a->seed && dg_parse_uint(a->seed, 0, UINT64_MAX, &p->seed)) {
		cli_error("%s: --seed '%s' is not a whole number", cmd, a->seed);
		return DG_EXIT_USAGE;
	}
	p->rotation = !a->no_rotation;
	p->spans = !a->no_spans;
	if (dg_seek_params_check(p, info, err, sizeof(err))) {
		cli_error("%s: %s", cmd, err);
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

void cli_seek_summary(FILE *out, const struct dg_seek_result *r)
{
	char a[64], b[64];

	dg_fmt_ibytes(a, sizeof(a), r->params.block_bytes);
	fprintf(out, "seek: %zu distances x %u samples, %s reads, %.1f s of device time%s\n",
		r->npoints, r->samples_planned, a, (double)r->device_time_ns / 1e9,
		r->complete ? "" : ", interrupted");
	if (r->rotating)
		fprintf(out, "rotation: %.1f rpm (%u rpm class), period %.4f ms\n", r->rpm,
			cli_rpm_class(r->rpm), r->period_ms);
	else
		fprintf(out, "rotation: none found (no periodic access times: not a spinning "
			     "disk, or hidden behind a cache)\n");
	if (isfinite(r->overhead_ms))
		fprintf(out, "command overhead: %.3f ms\n", r->overhead_ms);
	if (isfinite(r->track_to_track_ms) || isfinite(r->average_ms) ||
	    isfinite(r->full_stroke_ms))
		fprintf(out, "seek: track-to-track %.2f ms, average %.2f ms, full stroke %.2f ms\n",
			r->track_to_track_ms, r->average_ms, r->full_stroke_ms);
	if (r->npoints && !r->rotating) {
		/* a flat device: its access time, not a table of zeros and noise */
		double sum = 0, lo = INFINITY, hi = 0;
		unsigned n = 0;
		for (size_t i = 0; i < r->npoints; i++) {
			double v = r->points[i].mean_ms;
			if (!isfinite(v))
				continue;
			sum += v;
			n++;
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
		if (n)
			fprintf(
			    out,
			    "access time: flat, %.3f ms on average at every distance (%.3f to "
			    "%.3f ms over %u distances): no rotation, so no seek curve to fit\n",
			    sum / n, lo, hi, n);
	} else if (r->npoints) {
		/* about eight points spread over the curve */
		size_t step = r->npoints > 8 ? r->npoints / 8 : 1, shown = 0;
		for (size_t i = 0; i < r->npoints; i++)
			shown += !(i % step) || i + 1 == r->npoints;
		fprintf(
		    out,
		    "%zu of %zu distances (distances in KiB/MiB/GiB; all in the JSON and CSV):\n",
		    shown, r->npoints);
		fprintf(out, "%12s  %7s  %9s  %9s\n", "distance", "samples", "seek ms",
			"access ms");
		for (size_t i = 0; i < r->npoints; i++) {
			if (i % step && i + 1 != r->npoints)
				continue;
			const struct dg_seek_point *pt = &r->points[i];
			dg_fmt_ibytes(a, sizeof(a), pt->distance_bytes);
			fprintf(out, "%12s  %7u  %9.3f  %9.3f\n", a, pt->samples, pt->seek_ms,
				pt->mean_ms);
		}
	}
	if (r->nspans) {
		dg_fmt_ibytes(a, sizeof(a), r->params.block_bytes);
		fprintf(out, "random %s reads, QD1 (places in GB = 10^9 bytes, %% of capacity):\n",
			a);
		fprintf(out, "%20s  %20s  %8s  %8s\n", "from", "span", "IOPS", "mean ms");
		for (size_t i = 0; i < r->nspans; i++) {
			const struct dg_seek_span *sp = &r->spans[i];
			cli_human_position(a, sizeof(a), sp->start_bytes, r->capacity_bytes);
			cli_human_position(b, sizeof(b), sp->span_bytes, r->capacity_bytes);
			fprintf(out, "%20s  %20s  %8.1f  %8.3f\n", a, b, sp->iops, sp->mean_ms);
		}
		struct dg_short_stroke ss[16];
		size_t nss = dg_seek_short_stroke(r, ss, 16);
		for (size_t i = 0; i < nss; i++) {
			dg_fmt_bytes(b, sizeof(b), ss[i].span_bytes);
			fprintf(out,
				"short-stroke: using the first %s (%.3g%%) gives %+.0f%% random "
				"IOPS\n",
				b, ss[i].span_percent, ss[i].gain_percent);
		}
	}
}

int cmd_seek(int argc, char **argv)
{
	struct seek_args a = {.io = {.kind = DG_ENGINE_AUTO},
			      .job = {.m = &cli_measure_seek, .on = true}};
	int multi = cli_multi_device("seek", argc, argv, longopts, cmd_seek);
	int rc;

	if (multi >= 0)
		return multi;
	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? DG_EXIT_OK : rc;
	return cli_job_command(&a.job, a.device, &a.io, NULL);
}
