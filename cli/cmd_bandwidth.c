/* SPDX-License-Identifier: MIT */
/*
 * diskgeo bandwidth: the sequential read throughput across the LBA range and the recording zones
 * it reveals (the method is in include/diskgeo/bandwidth.h). Prints a summary and a zone table;
 * writes the profile's "bandwidth" section as JSON and the samples as CSV.
 *
 * With --write it times writes instead and destroys the samples' data. Guarded in this order,
 * so that nothing is opened for writing until every check passed: --confirm-destroy=NAME must
 * name the device (its kernel name, serial, the spec's name for sim:, the file's name for a
 * file), checked on a read-only probe; the parameters are checked; then the probed device is
 * opened again DG_DEVICE_WRITE through its descriptor, never its path (refused when it or
 * anything sharing its storage is mounted, swap or held: dg_device_reopen) and must be the very
 * object that was named (dg_device_same); then one line says what will be overwritten.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_measure.h"
#include "diskgeo/bandwidth.h"
#include "diskgeo/parse.h"
#include "diskgeo/profile.h"
#include "util.h"

enum {
	OPT_WRITE = CLI_OPT_LOCAL,
	OPT_CONFIRM_DESTROY,
};

static const struct option longopts[] = {
    {"samples", required_argument, NULL, 'n'},
    {"sample-size", required_argument, NULL, 's'},
    {"range", required_argument, NULL, 'r'},
    {"passes", required_argument, NULL, CLI_OPT_PASSES},
    {"time-budget", required_argument, NULL, CLI_OPT_BW_BUDGET},
    {"qd", required_argument, NULL, 'Q'},
    CLI_ENGINE_LONGOPT,
    CLI_SEED_LONGOPT,
    {"no-refine", no_argument, NULL, CLI_OPT_NO_REFINE},
    {"write", no_argument, NULL, OPT_WRITE},
    {"confirm-destroy", required_argument, NULL, OPT_CONFIRM_DESTROY},
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
	    "Usage: diskgeo bandwidth DEVICE [options]\n\n"
	    "Maps sequential read throughput (MB/s, 10^6 bytes per second) across the LBA\n"
	    "range and finds the recording zones: steps in the curve, each boundary refined by\n"
	    "bisection. Seek and rotation never count in a sample's rate. Reads only, unless\n"
	    "--write asks for the write curve (which destroys data; see below).\n\n"
	    "Options (SIZE: K M G T or KiB MiB GiB TiB = powers of 1024, KB MB GB TB = powers\n"
	    "of 1000, s = logical sectors; TIME: ms s m h, no suffix = seconds):\n"
	    "  -n, --samples N        curve points, >= 2 (default: from --time-budget, >= 256)\n"
	    "  -s, --sample-size SIZE bytes per sample (default 16M, less on a small range)\n"
	    "  -r, --range START:END  measure only [START, END) (default: the whole device)\n"
	    "      --passes N         measure each point N times, keep the median (default 1)\n"
	    "      --time-budget TIME device time for the curve (default 60s); zone refinement\n"
	    "                         adds about a quarter of it\n"
	    "  -Q, --qd N             I/Os in flight per sample, 1..256 (default 4)\n"
	    "      --engine NAME      io_uring, psync, sim or auto (default auto)\n"
	    "      --seed N           order of the samples (default 1)\n"
	    "      --no-refine        skip the bisection of zone boundaries\n"
	    "      --write            time sequential WRITES instead (the disk-fill curve):\n"
	    "                         DESTROYS the data in every sample and refinement sample;\n"
	    "                         a fixed --samples count (default 256), no --time-budget\n"
	    "      --confirm-destroy=NAME  required by --write: the device's kernel name (sdb,\n"
	    "                         loop3) or serial, the drive's name for sim:, the file's\n"
	    "                         name for a file; a mounted or held device is refused\n"
	    "  -j, --json FILE|-      write the profile (\"bandwidth\" section) as JSON\n"
	    "      --csv FILE|-       write the samples as CSV (offset_bytes,length_bytes,...)\n"
	    "  -J                     the same as --json -\n"
	    "  -q, --quiet            warnings and errors only: no summary, no progress\n"
	    "  -v, --verbose          per-phase detail on stderr\n"
	    "The summary goes to stdout, or to stderr when --json - or --csv - takes stdout.\n"
	    "      --prometheus FILE  write the figures as node_exporter textfile metrics\n"
	    "      --json-dir DIR     several DEVICEs at once, one process each: DIR/<name>.json\n"
	    "  -h, --help             this text\n");
}

struct bw_args {
	const char *device;
	struct cli_io_opts io;
	struct cli_job job; /* the registry's bandwidth entry */
	bool write;
	const char *confirm; /* --confirm-destroy's NAME */
};

static int parse_args(int argc, char **argv, struct bw_args *a)
{
	char shortopts[64];
	int c, rc = DG_EXIT_OK;

	cli_getopt_begin(longopts, shortopts, sizeof(shortopts));
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (cli_jobs_option(&a->job, 1, c, optarg) ||
		    cli_io_option("bandwidth", c, optarg, &a->io, &rc)) {
			if (rc)
				return rc;
			continue;
		}
		switch (c) {
		case OPT_WRITE:
			a->write = true;
			break;
		case OPT_CONFIRM_DESTROY:
			a->confirm = optarg;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_bad_option("bandwidth", argv, shortopts);
		}
	}
	if (cli_one_device("bandwidth", argc, argv, &a->device) ||
	    cli_check_streams("bandwidth", a->io.json, a->io.csv))
		return DG_EXIT_USAGE;
	if (cli_write_options("bandwidth", a->write, a->confirm, a->device))
		return DG_EXIT_USAGE;
	if (a->write && a->job.o.bandwidth.budget) {
		cli_error("bandwidth: --time-budget does not apply to --write (what is overwritten "
			  "is fixed before the first write): use --samples");
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

/*
 * The write mode's checks before anything is opened for writing: a read-only probe of the
 * device, NAME against it, the parameters against it. Returns DG_EXIT_*; on success *probed is
 * the device probed (open read-only), the one object the write open may reach.
 */
static int check_write(const struct bw_args *a, struct dg_device **probed)
{
	struct dg_bandwidth_params p;
	int rc = cli_write_probe("bandwidth", a->device, a->confirm, probed);

	if (rc == 0)
		rc = cli_bandwidth_params("bandwidth", &a->job.o.bandwidth, dg_device_info(*probed),
					  &p);
	if (rc && *probed) {
		dg_device_close(*probed);
		*probed = NULL;
	}
	return rc;
}

/* The one line that says, before the first write, what will be overwritten. */
static void announce_write(const struct dg_bandwidth_params *p, const struct dg_device_info *info)
{
	uint64_t each = dg_bandwidth_timed_bytes(p, info);
	char size[32], total[32], ident[300] = "", safe_path[4 * 4096], safe_ident[4 * 300];

	dg_fmt_bytes(size, sizeof(size), each);
	dg_fmt_bytes(total, sizeof(total), each * p->samples);
	if (info->model[0] || info->serial[0])
		snprintf(ident, sizeof(ident), " (%s%s%s)", info->model,
			 info->model[0] && info->serial[0] ? " " : "", info->serial);
	cli_escape(safe_path, sizeof(safe_path), info->path);
	cli_escape(safe_ident, sizeof(safe_ident), ident);
	fprintf(stderr,
		"diskgeo: bandwidth --write will overwrite %u samples of %s (%" PRIu64
		" bytes in all, %s) across [%" PRIu64 ", %" PRIu64 ") of %s%s",
		p->samples, size, each * p->samples, total, p->range_start_bytes,
		p->range_end_bytes, safe_path, safe_ident);
	if (p->refine)
		fprintf(stderr, ", and up to %u refinement samples of that size per zone boundary",
			DG_BANDWIDTH_REFINE_MAX_STEPS);
	fputc('\n', stderr);
}

bool cli_bandwidth_option(int c, const char *arg, struct cli_bandwidth_opts *o)
{
	static const struct cli_opt_field t[] = {
	    CLI_TEXT('n', struct cli_bandwidth_opts, samples),
	    CLI_TEXT('s', struct cli_bandwidth_opts, sample_size),
	    CLI_TEXT('r', struct cli_bandwidth_opts, range),
	    CLI_TEXT('Q', struct cli_bandwidth_opts, qd),
	    CLI_TEXT(CLI_OPT_PASSES, struct cli_bandwidth_opts, passes),
	    CLI_TEXT(CLI_OPT_BW_BUDGET, struct cli_bandwidth_opts, budget),
	    CLI_FLAG(CLI_OPT_NO_REFINE, struct cli_bandwidth_opts, no_refine),
	    CLI_TEXT(CLI_OPT_SEED, struct cli_bandwidth_opts, seed),
	};

	return cli_take_option(t, ARRAY_SIZE(t), c, arg, o);
}

int cli_bandwidth_params(const char *cmd, const struct cli_bandwidth_opts *a,
			 const struct dg_device_info *info, struct dg_bandwidth_params *p)
{
	char err[DG_ERRLEN];
	uint64_t v;
	int rc;

	dg_bandwidth_params_default(p);
	if (a->samples) {
		if (dg_parse_uint(a->samples, 0, DG_BANDWIDTH_MAX_SAMPLES, &v) || v < 2) {
			cli_error("%s: --samples '%s' must be a whole number in 2..%u", cmd,
				  a->samples, DG_BANDWIDTH_MAX_SAMPLES);
			return DG_EXIT_USAGE;
		}
		p->samples = (unsigned)v;
	}
	if (a->sample_size) {
		rc = dg_parse_size(a->sample_size, info->logical_sector_bytes, &p->sample_bytes);
		if (rc || p->sample_bytes == 0) {
			cli_error("%s: --sample-size '%s' is not a size: use " DG_PARSE_SIZE_FORMS,
				  cmd, a->sample_size);
			return DG_EXIT_USAGE;
		}
	}
	if (a->range) {
		rc = dg_parse_range(a->range, info->logical_sector_bytes, &p->range_start_bytes,
				    &p->range_end_bytes);
		if (rc) {
			cli_error("%s: --range '%s' is not START:END (%s): each a size "
				  "in " DG_PARSE_SIZE_FORMS,
				  cmd, a->range, strerror(-rc));
			return DG_EXIT_USAGE;
		}
	}
	if (a->passes) {
		if (dg_parse_uint(a->passes, 1, 1000, &v)) {
			cli_error("%s: --passes '%s' must be a whole number in 1..1000", cmd,
				  a->passes);
			return DG_EXIT_USAGE;
		}
		p->passes = (unsigned)v;
	}
	if (a->budget) {
		if (cli_time_option(
			cmd, strcmp(cmd, "bandwidth") ? "--bandwidth-budget" : "--time-budget",
			a->budget, &p->time_budget_ns))
			return DG_EXIT_USAGE;
	}
	if (a->qd) {
		if (dg_parse_uint(a->qd, 1, 256, &v)) {
			cli_error("%s: --qd '%s' is not a queue depth in 1..256", cmd, a->qd);
			return DG_EXIT_USAGE;
		}
		p->qd = (unsigned)v;
	}
	if (a->seed) {
		if (dg_parse_uint(a->seed, 0, UINT64_MAX, &p->seed)) {
			cli_error("%s: --seed '%s' is not a whole number", cmd, a->seed);
			return DG_EXIT_USAGE;
		}
	}
	p->refine = !a->no_refine;
	if (dg_bandwidth_params_check(p, info, p, err, sizeof(err))) {
		cli_error("%s: %s", cmd, err);
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

void cli_bandwidth_summary(FILE *out, const struct dg_bandwidth_result *r, uint64_t capacity_bytes)
{
	char a[64], b[64], c[32];

	dg_fmt_ibytes(a, sizeof(a), r->params.sample_bytes); /* a request size: binary */
	fprintf(out, "%s: %zu samples of %s (%u refining), %.1f s of device time%s\n",
		r->params.write ? "write bandwidth" : "bandwidth", r->nsamples, a,
		r->refine_samples, (double)r->device_time_ns / 1e9,
		r->complete ? "" : ", interrupted");
	if (r->params.write)
		fprintf(out, "wrote %" PRIu64 " bytes in %zu ranges (listed in the profile)\n",
			r->written_bytes, r->nwritten);
	if (r->nzones == 0) {
		fprintf(out, "no sample could be measured\n");
		return;
	}
	fprintf(out, "outer %.1f MB/s, inner %.1f MB/s (ratio %.2f); noise %.2f%% per sample\n",
		r->outer_mb_per_s, r->inner_mb_per_s,
		r->inner_mb_per_s > 0 ? r->outer_mb_per_s / r->inner_mb_per_s : 0.0,
		100.0 * r->noise);
	double t = dg_bandwidth_read_time_s(r);
	fprintf(out, "%s: %.0f s (%.0f h %02.0f min)%s\n",
		r->params.write ? "time to write it all" : "time to read it all", t,
		floor(t / 3600), floor(fmod(t, 3600) / 60),
		r->params.write ? "" : ", the floor of a RAID rebuild or a scrub");
	if (r->flat_reason[0])
		fprintf(out, "1 zone: %s\n", r->flat_reason);
	else
		fprintf(out, "%zu zones\n", r->nzones);
	/* places and sizes in decimal GB/TB (10^9, 10^12 bytes, like MB/s), % of the device */
	fprintf(out, "zones (places and sizes in GB/TB = 10^9/10^12 bytes, with %% of the device; "
		     "rates in MB/s = 10^6 bytes/s):\n");
	fprintf(out, "%4s  %20s  %20s  %10s  %9s\n", "zone", "start", "end", "size", "MB/s");
	for (size_t i = 0; i < r->nzones; i++) {
		const struct dg_bandwidth_zone *z = &r->zones[i];

		cli_human_position(a, sizeof(a), z->start_bytes, capacity_bytes);
		cli_human_position(b, sizeof(b), z->end_bytes, capacity_bytes);
		dg_fmt_bytes(c, sizeof(c), z->end_bytes - z->start_bytes);
		fprintf(out, "%4zu  %20s  %20s  %10s  %9.1f\n", i + 1, a, b, c, z->mb_per_s);
	}
}

/* Nothing measured is not a curve: failed reads are exit 3 (the profile lists them), an
 * interrupted run exit 4; otherwise the device gave nothing to time (exit 2, no profile). */
static int check_measured(const struct cli_session *s, const struct dg_bandwidth_result *r,
			  const char *device)
{
	if (r->nsamples > 0 || cli_stop || s->errors.n > 0)
		return DG_EXIT_OK;
	for (size_t i = 0; i < r->notes.n; i++)
		cli_warn("%s", r->notes.v[i]);
	if (r->params.sample_bytes < DG_BANDWIDTH_MIN_TIMED_SAMPLE_BYTES)
		cli_error("bandwidth: %s is too small to measure: its %" PRIu64
			  " bytes make samples of %" PRIu64 " bytes, too short to time; "
			  "nothing was measured",
			  device, dg_device_info(s->dev)->size_bytes, r->params.sample_bytes);
	else
		cli_error("bandwidth: no sample of %s could be measured (every one was "
			  "dropped, see the warnings); nothing was measured",
			  device);
	return DG_EXIT_DEVICE;
}

/* --write, once the session holds the device opened for writing: it must be the object probed
 * and named; the parameters are checked again in write mode and the overwrite announced. */
static int prepare_write(struct cli_session *s, const struct bw_args *a, struct dg_device **probed,
			 struct dg_bandwidth_params *p)
{
	char err[DG_ERRLEN];

	if (!dg_device_same(*probed, s->dev)) {
		cli_error("bandwidth: %s changed between the check of its name and the open "
			  "for writing; nothing was written",
			  a->device);
		return DG_EXIT_DEVICE;
	}
	dg_device_close(*probed);
	*probed = NULL;
	p->write = true;
	if (dg_bandwidth_params_check(p, dg_device_info(s->dev), p, err, sizeof(err))) {
		cli_error("bandwidth: %s", err);
		return DG_EXIT_USAGE;
	}
	announce_write(p, dg_device_info(s->dev));
	return DG_EXIT_OK;
}

/* The session: the device opened read-only (no engine yet: the parameters are checked against
 * the device first), or for --write through the probed descriptor once the name is checked. */
static int begin(struct cli_session *s, const struct bw_args *a, struct dg_device **probed)
{
	int rc = cli_check_output(&s->outputs, a->io.csv);

	if (rc == 0)
		rc = cli_check_output(&s->outputs, a->io.prometheus);
	if (rc == 0 && a->write)
		rc = cli_check_output(&s->outputs, a->io.json);
	if (rc)
		return rc;
	if (!a->write)
		return cli_session_begin(s, a->device, 0, a->io.kind, 0, 0, a->io.json);
	rc = check_write(a, probed);
	if (rc)
		return rc;
	cli_wait_unclaimed(*probed);
	return cli_session_reopen(s, *probed, DG_DEVICE_WRITE, a->io.json);
}

int cmd_bandwidth(int argc, char **argv)
{
	struct bw_args a = {.io = {.kind = DG_ENGINE_AUTO},
			    .job = {.m = &cli_measure_bandwidth, .on = true}};
	struct cli_session s;
	struct dg_device *probed = NULL;
	int rc;
	int multi = cli_multi_device("bandwidth", argc, argv, longopts, cmd_bandwidth);

	if (multi >= 0)
		return multi;

	memset(&s, 0, sizeof(s));
	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? DG_EXIT_OK : rc;
	rc = begin(&s, &a, &probed);
	s.prometheus_path = a.io.prometheus;
	if (rc == 0)
		rc = a.job.m->params("bandwidth", &a.job.o, dg_device_info(s.dev), &a.job.p);
	if (rc == 0 && a.write)
		rc = prepare_write(&s, &a, &probed, &a.job.p.bandwidth);
	if (rc == 0)
		rc = cli_job_measure(&s, &a.job, a.io.kind, "bandwidth");
	if (rc == 0)
		rc = check_measured(&s, a.job.result, a.device);
	if (rc == 0)
		rc = cli_job_finish(&s, &a.job, a.io.json, a.io.csv);
	cli_jobs_free(&a.job, 1);
	cli_session_free(&s);
	dg_device_close(probed);
	return rc;
}
