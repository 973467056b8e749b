/* SPDX-License-Identifier: MIT */
/*
 * diskgeo read: the command line of the plain read benchmark (the measurement is dg_read_run(),
 * include/diskgeo/read.h): its options, their resolution against the device, its report.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_measure.h"
#include "diskgeo/parse.h"
#include "util.h"

enum {
	OPT_SPAN = CLI_OPT_LOCAL,
};

static const struct option longopts[] = {
    {"offset", required_argument, NULL, 'o'},
    {"length", required_argument, NULL, 'l'},
    {"block-size", required_argument, NULL, 'b'},
    {"qd", required_argument, NULL, 'Q'},
    {"random", no_argument, NULL, 'r'},
    {"span", required_argument, NULL, OPT_SPAN},
    CLI_ENGINE_LONGOPT,
    CLI_SEED_LONGOPT,
    CLI_JSON_LONGOPT,
    CLI_COMMON_LONGOPTS,
    CLI_LONGOPTS_END,
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: diskgeo read DEVICE [options]\n\n"
	    "Streams a range of DEVICE (or, with --random, reads random blocks of it) and reports\n"
	    "MB/s (10^6 bytes per second), IOPS and latency min/p50/p99/max in ms.\n\n"
	    "Options (SIZE: K M G T or KiB MiB GiB TiB = powers of 1024, KB MB GB TB = powers\n"
	    "of 1000, s = logical sectors):\n"
	    "  -o, --offset SIZE      start of the range (default 0)\n"
	    "  -l, --length SIZE      bytes to read in total (default: sequential min(1G, rest\n"
	    "                         of the device); random 4096 blocks)\n"
	    "  -b, --block-size SIZE  bytes per I/O (default 1M sequential, 4k random; <= 64M)\n"
	    "  -Q, --qd N             I/Os kept in flight, 1..256 (default 8 sequential, 1 "
	    "random)\n"
	    "  -r, --random           read blocks at random, aligned to the block size\n"
	    "      --span SIZE        with --random: the region read, from --offset (default:\n"
	    "                         the rest of the device)\n"
	    "      --engine NAME      io_uring, psync, sim or auto (default auto)\n"
	    "      --seed N           random offsets' seed (default 1): same seed, same offsets\n"
	    "  -j, --json FILE|-      write the profile (\"read\" section) as JSON\n"
	    "  -J                     the same as --json -\n"
	    "  -q, --quiet            warnings and errors only: no report\n"
	    "  -v, --verbose          say more about what is done\n"
	    "  -h, --help             this text\n"
	    "The report goes to stdout, or to stderr when --json - takes stdout.\n");
}

struct read_args {
	const char *device;
	struct cli_io_opts io;
	struct cli_job job; /* the registry's read entry */
};

bool cli_read_option(int c, const char *arg, struct cli_read_opts *o)
{
	static const struct cli_opt_field t[] = {
	    CLI_TEXT('o', struct cli_read_opts, offset),
	    CLI_TEXT('l', struct cli_read_opts, length),
	    CLI_TEXT('b', struct cli_read_opts, block),
	    CLI_TEXT(OPT_SPAN, struct cli_read_opts, span),
	    CLI_TEXT('Q', struct cli_read_opts, qd),
	    CLI_FLAG('r', struct cli_read_opts, random),
	    CLI_TEXT(CLI_OPT_SEED, struct cli_read_opts, seed),
	};

	return cli_take_option(t, ARRAY_SIZE(t), c, arg, o);
}

/* The options that need no device (a queue depth, a seed), checked before it is opened. */
static int check_numbers(const char *cmd, const struct cli_read_opts *o, unsigned *qd,
			 uint64_t *seed)
{
	uint64_t v;

	*qd = 0;
	*seed = DG_READ_DEFAULT_SEED;
	if (o->qd) {
		if (dg_parse_uint(o->qd, 1, 256, &v)) {
			cli_error("%s: --qd '%s' is not a queue depth in 1..256", cmd, o->qd);
			return DG_EXIT_USAGE;
		}
		*qd = (unsigned)v;
	}
	if (o->seed && dg_parse_uint(o->seed, 0, UINT64_MAX, seed)) {
		cli_error("%s: --seed '%s' is not a whole number", cmd, o->seed);
		return DG_EXIT_USAGE;
	}
	if (o->span && !o->random) {
		cli_error("%s: --span only applies to --random", cmd);
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct read_args *a)
{
	char shortopts[64];
	unsigned qd;
	uint64_t seed;
	int c, rc = DG_EXIT_OK;

	cli_getopt_begin(longopts, shortopts, sizeof(shortopts));
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (cli_jobs_option(&a->job, 1, c, optarg) ||
		    cli_io_option("read", c, optarg, &a->io, &rc)) {
			if (rc)
				return rc;
			continue;
		}
		switch (c) {
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_bad_option("read", argv, shortopts);
		}
	}
	if (cli_one_device("read", argc, argv, &a->device))
		return DG_EXIT_USAGE;
	return check_numbers("read", &a->job.o.read, &qd, &seed);
}

/* Parses one size option against the device's sector; one line and DG_EXIT_USAGE when it is
 * not a size or not a whole number of sectors. */
static int parse_aligned(const char *cmd, const char *opt, const char *text, uint32_t sector,
			 uint64_t *out)
{
	int rc = dg_parse_size(text, sector, out);

	if (rc) {
		cli_error("%s: %s '%s' is not a size (%s): use " DG_PARSE_SIZE_FORMS, cmd, opt,
			  text, strerror(-rc));
		return DG_EXIT_USAGE;
	}
	if (*out % sector) {
		cli_error("%s: %s %" PRIu64 " is not a multiple of the %u-byte logical sector", cmd,
			  opt, *out, sector);
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

/* --offset and --block-size. */
static int plan_start(const char *cmd, const struct cli_read_opts *a,
		      const struct dg_device_info *info, uint64_t size, struct dg_read_params *p)
{
	uint32_t sector = info->logical_sector_bytes;
	uint64_t v;
	int rc;

	p->offset_bytes = 0;
	if (a->offset && (rc = parse_aligned(cmd, "--offset", a->offset, sector, &p->offset_bytes)))
		return rc;
	if (p->offset_bytes >= size) {
		cli_error("%s: --offset %" PRIu64 " is at or past the end of %s (%" PRIu64
			  " bytes)",
			  cmd, p->offset_bytes, info->path, size);
		return DG_EXIT_USAGE;
	}
	v = a->random ? DG_READ_DEFAULT_RANDOM_BLOCK : DG_READ_DEFAULT_SEQ_BLOCK;
	if (v % sector)
		v = sector; /* 4 KiB random default on a drive with larger sectors */
	if (a->block && (rc = parse_aligned(cmd, "--block-size", a->block, sector, &v)))
		return rc;
	if (v == 0 || v > DG_READ_MAX_BLOCK_BYTES) {
		cli_error("%s: --block-size %" PRIu64 " must be between one sector and %u bytes",
			  cmd, v, DG_READ_MAX_BLOCK_BYTES);
		return DG_EXIT_USAGE;
	}
	p->block_bytes = (uint32_t)v;
	return DG_EXIT_OK;
}

/* --span and --length of a random read. */
static int plan_random(const char *cmd, const struct cli_read_opts *a,
		       const struct dg_device_info *info, uint64_t size, struct dg_read_params *p)
{
	uint32_t sector = info->logical_sector_bytes;
	int rc;

	p->span_bytes = size - p->offset_bytes;
	if (a->span && (rc = parse_aligned(cmd, "--span", a->span, sector, &p->span_bytes)))
		return rc;
	if (p->span_bytes > size - p->offset_bytes) {
		cli_error("%s: --offset + --span goes past the end of %s (%" PRIu64 " bytes)", cmd,
			  info->path, size);
		return DG_EXIT_USAGE;
	}
	if (p->span_bytes < p->block_bytes) {
		cli_error("%s: the random region (%" PRIu64 " bytes) is smaller than one "
			  "block (%u bytes)",
			  cmd, p->span_bytes, p->block_bytes);
		return DG_EXIT_USAGE;
	}
	p->length_bytes = (uint64_t)DG_READ_DEFAULT_RANDOM_IOS * p->block_bytes;
	if (a->length && (rc = parse_aligned(cmd, "--length", a->length, sector, &p->length_bytes)))
		return rc;
	return DG_EXIT_OK;
}

/* --length of a sequential read. */
static int plan_sequential(const char *cmd, const struct cli_read_opts *a,
			   const struct dg_device_info *info, uint64_t size,
			   struct dg_read_params *p)
{
	int rc;

	p->length_bytes = size - p->offset_bytes;
	if (p->length_bytes > DG_READ_DEFAULT_SEQ_LENGTH)
		p->length_bytes = DG_READ_DEFAULT_SEQ_LENGTH;
	if (a->length && (rc = parse_aligned(cmd, "--length", a->length, info->logical_sector_bytes,
					     &p->length_bytes)))
		return rc;
	if (p->length_bytes > size - p->offset_bytes) {
		cli_error("%s: --offset + --length goes past the end of %s (%" PRIu64 " bytes)",
			  cmd, info->path, size);
		return DG_EXIT_USAGE;
	}
	p->span_bytes = p->length_bytes;
	/* a read shorter than one block is one I/O of its length: say that size */
	if (p->length_bytes && p->length_bytes < p->block_bytes)
		p->block_bytes = (uint32_t)p->length_bytes;
	return DG_EXIT_OK;
}

int cli_read_params(const char *cmd, const struct cli_read_opts *a,
		    const struct dg_device_info *info, struct dg_read_params *p)
{
	uint64_t size = info->size_bytes - info->size_bytes % info->logical_sector_bytes;
	int rc = check_numbers(cmd, a, &p->qd, &p->seed);

	p->random = a->random;
	if (!p->qd)
		p->qd = a->random ? DG_READ_DEFAULT_RANDOM_QD : DG_READ_DEFAULT_SEQ_QD;
	if (rc == 0)
		rc = plan_start(cmd, a, info, size, p);
	if (rc == 0)
		rc = a->random ? plan_random(cmd, a, info, size, p)
			       : plan_sequential(cmd, a, info, size, p);
	if (rc == 0 && p->length_bytes == 0) {
		cli_error("%s: --length must be at least one sector", cmd);
		rc = DG_EXIT_USAGE;
	}
	return rc;
}

void cli_read_summary(FILE *out, const struct dg_read_result *r, const struct dg_device_info *info)
{
	const struct dg_read_params *p = &r->params;
	char blk[32], at[64], span[32], safe[4 * 4096];

	cli_escape(safe, sizeof(safe), info->path);
	dg_fmt_ibytes(blk, sizeof(blk), p->block_bytes);
	cli_human_position(at, sizeof(at), p->offset_bytes, info->size_bytes);
	fprintf(out,
		"read %s: %s, %" PRIu32 "-byte (%s) blocks, QD %u, %s, from offset %" PRIu64
		" = %s",
		safe, p->random ? "random" : "sequential", p->block_bytes, blk, p->qd, r->engine,
		p->offset_bytes, at);
	if (p->random) {
		dg_fmt_bytes(span, sizeof(span), p->span_bytes);
		fprintf(out, ", span %" PRIu64 " bytes = %s", p->span_bytes, span);
	}
	fputc('\n', out);
	if (!r->measured) {
		fprintf(out, "  no I/O completed\n");
		return;
	}
	fprintf(out, "  %.1f MB/s  %.0f IOPS  %" PRIu64 " bytes in %" PRIu64 " I/Os, %.3f %s\n",
		r->mb_per_s, r->iops, r->bytes, r->ios,
		r->elapsed_s >= 1 ? r->elapsed_s : r->elapsed_s * 1e3,
		r->elapsed_s >= 1 ? "s" : "ms");
	fprintf(out, "  latency ms: min %.3f  p50 %.3f  p99 %.3f  max %.3f  mean %.3f\n", r->min_ms,
		r->p50_ms, r->p99_ms, r->max_ms, r->mean_ms);
}

static const char *engine_arg(enum dg_engine_kind kind)
{
	return kind == DG_ENGINE_SIM ? "sim" : kind == DG_ENGINE_PSYNC ? "psync" : "io_uring";
}

int cmd_read(int argc, char **argv)
{
	struct read_args a = {.io = {.kind = DG_ENGINE_AUTO},
			      .job = {.m = &cli_measure_read, .on = true}};
	struct cli_session s;
	int rc;

	memset(&s, 0, sizeof(s));
	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? DG_EXIT_OK : rc;
	/* A flat device's "the bandwidth curve will be flat" does not concern a read. */
	cli_session_skip_warning(&s, "non-rotational");
	/* No engine yet (qd 0): its buffer size depends on --block-size, which may be in sectors.
	 */
	rc = cli_session_begin(&s, a.device, 0, a.io.kind, 0, 0, a.io.json);
	if (rc == 0)
		rc = a.job.m->params("read", &a.job.o, dg_device_info(s.dev), &a.job.p);
	/* A backend that cannot run this device is a usage error, not a device failure. */
	if (rc == 0 && (a.io.kind == DG_ENGINE_SIM) != (dg_device_spec(s.dev) != NULL) &&
	    a.io.kind != DG_ENGINE_AUTO) {
		cli_error("read: engine '%s' cannot run %s (sim: drives take 'sim', others "
			  "'io_uring' or 'psync')",
			  engine_arg(a.io.kind), a.device);
		rc = DG_EXIT_USAGE;
	}
	if (rc == 0)
		rc = cli_job_measure(&s, &a.job, a.io.kind, "read");
	if (rc == 0)
		rc = cli_job_finish(&s, &a.job, a.io.json, NULL);
	cli_jobs_free(&a.job, 1);
	cli_session_free(&s);
	return rc;
}
