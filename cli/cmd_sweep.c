/* SPDX-License-Identifier: MIT */
/*
 * diskgeo sweep: block size x queue depth, sequential and random, reads (or guarded writes), and
 * the sector format as timing sees it (the method is in include/diskgeo/sweep.h). Prints tables;
 * writes the profile's "sweep" section as JSON and the cells as CSV.
 *
 * --write is guarded exactly like `bandwidth --write` (the same helpers): --confirm-destroy=NAME
 * must name the device, checked on a read-only probe; a scratch --range is required; the
 * parameters are checked; the probed device is opened again for writing through its descriptor
 * (refused when mounted, swap or held) and must be the very object named; then one line says
 * what may be overwritten.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_measure.h"
#include "diskgeo/parse.h"
#include "diskgeo/profile.h"
#include "diskgeo/sweep.h"

enum {
	OPT_CSV = CLI_OPT_LOCAL,
	OPT_WRITE,
	OPT_CONFIRM_DESTROY,
};

static const struct option longopts[] = {
    {"seq-blocks", required_argument, NULL, CLI_OPT_SWEEP_SEQ_BLOCKS},
    {"rand-blocks", required_argument, NULL, CLI_OPT_SWEEP_RAND_BLOCKS},
    {"qd", required_argument, NULL, 'Q'},
    {"range", required_argument, NULL, 'r'},
    {"time-budget", required_argument, NULL, CLI_OPT_SWEEP_BUDGET},
    {"seq-bytes", required_argument, NULL, CLI_OPT_SWEEP_SEQ_BYTES},
    {"ios", required_argument, NULL, CLI_OPT_SWEEP_IOS},
    {"rmw-ios", required_argument, NULL, CLI_OPT_SWEEP_RMW_IOS},
    {"seed", required_argument, NULL, CLI_OPT_SEED},
    {"engine", required_argument, NULL, CLI_OPT_ENGINE},
    {"write", no_argument, NULL, OPT_WRITE},
    {"confirm-destroy", required_argument, NULL, OPT_CONFIRM_DESTROY},
    {"json", required_argument, NULL, 'j'},
    {"csv", required_argument, NULL, OPT_CSV},
    CLI_COMMON_LONGOPTS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: diskgeo sweep DEVICE [options]\n\n"
	    "How fast the device is for a given I/O: sequential MB/s (10^6 bytes per second)\n"
	    "for block sizes x queue depths at the outer and inner edge, random IOPS and\n"
	    "latency (mean, p50, p99) over the whole range and its first 10%%, the NCQ gain\n"
	    "(IOPS at QD n / QD 1), and aligned vs misaligned I/O: the physical sector size\n"
	    "as timing shows it. Reads only, unless --write (which destroys data; see below).\n\n"
	    "Options:\n"
	    "      --seq-blocks LIST  sequential block sizes (default 4k,16k,64k,256k,1M,4M,16M)\n"
	    "      --rand-blocks LIST random block sizes (default the logical sector,4k,16k,\n"
	    "                         64k,256k,1M); each a multiple of the logical sector\n"
	    "  -Q, --qd LIST          queue depths, 1..256 (default 1,2,4,8,16,32)\n"
	    "  -r, --range START:END  sweep inside this range only (default: the whole device)\n"
	    "      --time-budget TIME device time for the sweep (default 60s); cells the budget\n"
	    "                         does not reach are listed as not measured\n"
	    "      --seq-bytes SIZE   bytes per sequential cell (default 32M, at least 8 blocks)\n"
	    "      --ios N            completions per random cell (default 400)\n"
	    "      --rmw-ios N        I/Os per aligned and misaligned set of the sector-format\n"
	    "                         test (default 32; 0 = no test)\n"
	    "      --seed N           random offsets (default 1)\n"
	    "      --engine NAME      auto, io_uring, psync or sim\n"
	    "      --write            time WRITES instead, inside --range only: DESTROYS the\n"
	    "                         data there\n"
	    "      --confirm-destroy=NAME  required by --write: the device's kernel name (sdb,\n"
	    "                         loop3), its serial, the spec's name for sim:, the file's\n"
	    "                         name for a file; a mounted or held device is refused\n"
	    "  -j, --json FILE|-      write the profile (\"sweep\" section) as JSON\n"
	    "  -J                     the same as --json -\n"
	    "      --csv FILE|-       write the cells as CSV\n"
	    "  -q, --quiet            warnings and errors only\n"
	    "  -v, --verbose          say more about what is done\n"
	    "  -h, --help             this text\n");
}

struct sw_args {
	const char *device, *json, *csv;
	struct cli_sweep_opts o;
	enum dg_engine_kind kind;
	bool write;
	const char *confirm;
};

bool cli_sweep_option(int c, const char *arg, struct cli_sweep_opts *o)
{
	switch (c) {
	case CLI_OPT_SWEEP_SEQ_BLOCKS:
		o->seq_blocks = arg;
		return true;
	case CLI_OPT_SWEEP_RAND_BLOCKS:
		o->rand_blocks = arg;
		return true;
	case CLI_OPT_SWEEP_QDS:
		o->qds = arg;
		return true;
	case CLI_OPT_SWEEP_BUDGET:
		o->budget = arg;
		return true;
	case CLI_OPT_SWEEP_SEQ_BYTES:
		o->seq_bytes = arg;
		return true;
	case CLI_OPT_SWEEP_IOS:
		o->ios = arg;
		return true;
	case CLI_OPT_SWEEP_RMW_IOS:
		o->rmw_ios = arg;
		return true;
	default:
		return false;
	}
}

static int parse_sizes(const char *cmd, const char *opt, const char *text, uint32_t lsec,
		       uint32_t *out, unsigned *n)
{
	char buf[512], *save = NULL, *tok;

	if (strlen(text) >= sizeof(buf)) {
		cli_error("%s: %s is too long", cmd, opt);
		return DG_EXIT_USAGE;
	}
	strcpy(buf, text);
	*n = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (*n >= DG_SWEEP_MAX_SIZES) {
			cli_error("%s: %s '%s' lists more than %u sizes", cmd, opt, text,
				  DG_SWEEP_MAX_SIZES);
			return DG_EXIT_USAGE;
		}
		if (dg_parse_size(tok, lsec, &v) || v == 0 || v > DG_SWEEP_MAX_BLOCK_BYTES) {
			cli_error(
			    "%s: %s: '%s' is not a block size in 1..64M: use " DG_PARSE_SIZE_FORMS,
			    cmd, opt, tok);
			return DG_EXIT_USAGE;
		}
		if (v % lsec) {
			cli_error("%s: %s: %s (%" PRIu64 " bytes) is not a multiple of the logical "
				  "sector (%" PRIu32 " bytes)",
				  cmd, opt, tok, v, lsec);
			return DG_EXIT_USAGE;
		}
		out[(*n)++] = (uint32_t)v;
	}
	if (*n == 0) {
		cli_error("%s: %s '%s' lists no size", cmd, opt, text);
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

int cli_sweep_params(const char *cmd, const struct cli_sweep_opts *o,
		     const struct dg_device_info *info, bool write, struct dg_sweep_params *p)
{
	uint32_t lsec = info->logical_sector_bytes ? info->logical_sector_bytes : 512;
	char err[DG_ERRLEN], buf[256], *save = NULL, *tok;
	uint64_t v;
	int rc;

	dg_sweep_params_default(p, info);
	p->write = write;
	if (o->seq_blocks && (rc = parse_sizes(cmd, "--seq-blocks", o->seq_blocks, lsec,
					       p->seq_blocks, &p->nseq_blocks)))
		return rc;
	if (o->rand_blocks && (rc = parse_sizes(cmd, "--rand-blocks", o->rand_blocks, lsec,
						p->rand_blocks, &p->nrand_blocks)))
		return rc;
	if (o->qds) {
		if (strlen(o->qds) >= sizeof(buf)) {
			cli_error("%s: --qd is too long", cmd);
			return DG_EXIT_USAGE;
		}
		strcpy(buf, o->qds);
		p->nqds = 0;
		for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (p->nqds >= DG_SWEEP_MAX_QDS ||
			    dg_parse_uint(tok, 1, DG_SWEEP_MAX_QD, &v)) {
				cli_error(
				    "%s: --qd '%s': each queue depth must be a whole number in "
				    "1..%u, at most %u of them",
				    cmd, o->qds, DG_SWEEP_MAX_QD, DG_SWEEP_MAX_QDS);
				return DG_EXIT_USAGE;
			}
			p->qds[p->nqds++] = (unsigned)v;
		}
		if (!p->nqds) {
			cli_error("%s: --qd '%s' lists no queue depth", cmd, o->qds);
			return DG_EXIT_USAGE;
		}
	}
	if (o->range) {
		rc = dg_parse_range(o->range, lsec, &p->range_start_bytes, &p->range_end_bytes);
		if (rc) {
			cli_error("%s: --range '%s' is not START:END (%s): each a size "
				  "in " DG_PARSE_SIZE_FORMS,
				  cmd, o->range, strerror(-rc));
			return DG_EXIT_USAGE;
		}
	}
	if (o->budget && cli_time_option(cmd, "--time-budget", o->budget, &p->time_budget_ns))
		return DG_EXIT_USAGE;
	if (o->seq_bytes && (dg_parse_size(o->seq_bytes, lsec, &p->seq_bytes) || !p->seq_bytes)) {
		cli_error("%s: --seq-bytes '%s' is not a size: use " DG_PARSE_SIZE_FORMS, cmd,
			  o->seq_bytes);
		return DG_EXIT_USAGE;
	}
	if (o->ios) {
		if (dg_parse_uint(o->ios, 1, 10000000, &v)) {
			cli_error("%s: --ios '%s' must be a whole number in 1..10000000", cmd,
				  o->ios);
			return DG_EXIT_USAGE;
		}
		p->rand_ios = (unsigned)v;
	}
	if (o->rmw_ios) {
		if (dg_parse_uint(o->rmw_ios, 0, 100000, &v)) {
			cli_error("%s: --rmw-ios '%s' must be a whole number in 0..100000", cmd,
				  o->rmw_ios);
			return DG_EXIT_USAGE;
		}
		p->rmw_ios = (unsigned)v;
	}
	if (o->seed) {
		if (dg_parse_uint(o->seed, 0, UINT64_MAX, &v)) {
			cli_error("%s: --seed '%s' must be a whole number", cmd, o->seed);
			return DG_EXIT_USAGE;
		}
		p->seed = v;
	}
	if (dg_sweep_params_check(p, info, p, err, sizeof(err))) {
		cli_error("%s: %s", cmd, err);
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct sw_args *a)
{
	char shortopts[64];
	int c;

	cli_shortopts(longopts, shortopts, sizeof(shortopts));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (cli_sweep_option(c, optarg, &a->o) || cli_common_option(c, &a->json))
			continue;
		switch (c) {
		case 'Q':
			a->o.qds = optarg;
			break;
		case 'r':
			a->o.range = optarg;
			break;
		case CLI_OPT_SEED:
			a->o.seed = optarg;
			break;
		case CLI_OPT_ENGINE:
			if (cli_engine_option("sweep", optarg, &a->kind))
				return DG_EXIT_USAGE;
			break;
		case OPT_WRITE:
			a->write = true;
			break;
		case OPT_CONFIRM_DESTROY:
			a->confirm = optarg;
			break;
		case 'j':
			a->json = optarg;
			break;
		case OPT_CSV:
			a->csv = optarg;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_bad_option("sweep", argv, shortopts);
		}
	}
	if (cli_one_device("sweep", argc, argv, &a->device) ||
	    cli_check_streams("sweep", a->json, a->csv))
		return DG_EXIT_USAGE;
	if (cli_write_options("sweep", a->write, a->confirm, a->device))
		return DG_EXIT_USAGE;
	if (a->write && !a->o.range) {
		cli_error("sweep: --write needs a scratch range named with --range START:END; "
			  "nothing was written");
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

struct open_ctx {
	struct dg_device *dev;
	enum dg_engine_kind kind;
	bool warned;
};

static int open_engine(void *arg, unsigned qd, uint32_t max_io, struct dg_engine **out)
{
	struct open_ctx *o = arg;
	int rc = cli_open_engine(o->dev, o->kind, qd, max_io, out);

	if (rc)
		return -EIO;
	if (dg_engine_qd(*out) < qd && !o->warned) {
		cli_warn("engine %s runs at queue depth %u: deeper cells are not measured",
			 dg_engine_name(*out), dg_engine_qd(*out));
		o->warned = true;
	}
	return 0;
}

int cli_sweep_run(struct cli_session *s, enum dg_engine_kind kind, const struct dg_sweep_params *p,
		  struct dg_sweep_result **r)
{
	struct open_ctx oc = {.dev = s->dev, .kind = kind};
	struct cli_progress prog;
	int rc;

	cli_progress_init(&prog);
	rc = dg_sweep_run(dg_device_info(s->dev), p, open_engine, &oc, &s->errors, &cli_stop,
			  cli_progress_fn(&prog), &prog, r);
	cli_progress_clear(&prog);
	if (rc) {
		cli_error("sweep: %s", strerror(-rc));
		return rc == -EINVAL ? DG_EXIT_USAGE : DG_EXIT_DEVICE;
	}
	cli_verbose("sweep: %zu of %zu cells measured, %.1f s of device time", (*r)->nmeasured,
		    (*r)->ncells, (double)(*r)->device_time_ns / 1e9);
	if ((*r)->thinned && !(*r)->interrupted)
		dg_warnings_add(&s->warnings,
				"sweep: %zu of %zu cells not measured (time budget, queue depth or "
				"in-flight limit): the JSON lists them with the reason",
				(*r)->ncells - (*r)->nmeasured, (*r)->ncells);
	return DG_EXIT_OK;
}

static const struct dg_sweep_cell *find(const struct dg_sweep_result *r, enum dg_sweep_kind k,
					enum dg_sweep_where w, uint32_t b, unsigned qd)
{
	for (size_t i = 0; i < r->ncells; i++) {
		const struct dg_sweep_cell *c = &r->cells[i];
		if (c->kind == k && c->where == w && c->block_bytes == b && c->qd == qd)
			return c;
	}
	return NULL;
}

static void table(FILE *out, const struct dg_sweep_result *r, enum dg_sweep_kind k,
		  enum dg_sweep_where w)
{
	const struct dg_sweep_params *p = &r->params;
	const uint32_t *blocks = k == DG_SWEEP_SEQ ? p->seq_blocks : p->rand_blocks;
	unsigned nb = k == DG_SWEEP_SEQ ? p->nseq_blocks : p->nrand_blocks;
	char b[32];

	if (!nb)
		return;
	fprintf(out, "\n%s %s, %s (%s):\n%10s", k == DG_SWEEP_SEQ ? "sequential" : "random",
		p->write ? "writes" : "reads", dg_sweep_where_name(w),
		k == DG_SWEEP_SEQ ? "MB/s" : "IOPS; NCQ gain and p99 at the deepest QD measured",
		"block");
	for (unsigned q = 0; q < p->nqds; q++)
		fprintf(out, "  QD%-5u", p->qds[q]);
	fputc('\n', out);
	for (unsigned i = 0; i < nb; i++) {
		dg_fmt_ibytes(b, sizeof(b), blocks[i]);
		fprintf(out, "%10s", b);
		const struct dg_sweep_cell *last = NULL;
		for (unsigned q = 0; q < p->nqds; q++) {
			const struct dg_sweep_cell *c = find(r, k, w, blocks[i], p->qds[q]);
			if (!c || !c->measured)
				fprintf(out, "  %7s", "-");
			else
				fprintf(out, "  %7.1f", k == DG_SWEEP_SEQ ? c->mb_per_s : c->iops);
			if (c && c->measured)
				last = c;
		}
		if (k == DG_SWEEP_RAND && last) {
			double g = dg_sweep_ncq_gain(r, last);
			if (isfinite(g) && last->qd > 1)
				fprintf(out, "  NCQ gain x%.2f at QD%u, p99 %.1f ms", g, last->qd,
					last->p99_ms);
			else
				fprintf(out, "  p99 %.1f ms at QD%u", last->p99_ms, last->qd);
		}
		fputc('\n', out);
	}
}

void cli_sweep_summary(FILE *out, const struct dg_sweep_result *r,
		       const struct dg_device_info *info)
{
	const struct dg_sweep_rmw *m = &r->rmw;

	fprintf(out, "sweep: %zu of %zu cells measured in %.1f s of device time%s\n", r->nmeasured,
		r->ncells, (double)r->device_time_ns / 1e9,
		r->thinned ? " (thinned: the JSON lists the cells not measured)" : "");
	if (r->params.write)
		fprintf(out, "write cache: %s\n",
			info->write_cache == 1	 ? "write back"
			: info->write_cache == 0 ? "write through"
						 : "unknown");
	if (m->measured) {
		fprintf(out,
			"sector format (%s): logical %" PRIu32 ", physical %" PRIu32
			" reported, %" PRIu32 " as timed",
			m->write ? "writes" : "reads", m->logical_sector_bytes,
			m->physical_sector_bytes_reported, m->physical_sector_bytes_timed);
		if (isfinite(m->penalty_ms))
			fprintf(out,
				"; %" PRIu32 "-byte I/O aligned %.2f ms, misaligned %.2f ms "
				"(penalty %.2f ms)",
				m->block_bytes, m->aligned_ms, m->misaligned_ms, m->penalty_ms);
		fputc('\n', out);
		if (m->physical_sector_bytes_timed > m->physical_sector_bytes_reported)
			fprintf(out,
				"  the device behaves as %" PRIu32
				"-byte physical although it reports %" PRIu32 "\n",
				m->physical_sector_bytes_timed, m->physical_sector_bytes_reported);
	}
	table(out, r, DG_SWEEP_SEQ, DG_SWEEP_OUTER);
	table(out, r, DG_SWEEP_SEQ, DG_SWEEP_INNER);
	table(out, r, DG_SWEEP_RAND, DG_SWEEP_FULL);
	table(out, r, DG_SWEEP_RAND, DG_SWEEP_FIRST10);
}

/* The write mode's checks before anything is opened for writing (as bandwidth --write). */
static int check_write(const struct sw_args *a, struct dg_device **probed)
{
	struct dg_sweep_params p;
	int rc = cli_write_probe("sweep", a->device, a->confirm, probed);

	if (rc == 0)
		rc = cli_sweep_params("sweep", &a->o, dg_device_info(*probed), true, &p);
	if (rc && *probed) {
		dg_device_close(*probed);
		*probed = NULL;
	}
	return rc;
}

static void announce_write(const struct dg_sweep_params *p, const struct dg_device_info *info)
{
	char total[32], safe_path[4 * 4096];
	uint64_t span = p->range_end_bytes - p->range_start_bytes;

	dg_fmt_bytes(total, sizeof(total), span);
	cli_escape(safe_path, sizeof(safe_path), info->path);
	fprintf(stderr,
		"diskgeo: sweep --write will overwrite blocks anywhere in [%" PRIu64 ", %" PRIu64
		") of %s (%" PRIu64 " bytes, %s) with zeros; nothing outside it\n",
		p->range_start_bytes, p->range_end_bytes, safe_path, span, total);
}

int cmd_sweep(int argc, char **argv)
{
	struct sw_args a = {.kind = DG_ENGINE_AUTO};
	struct dg_sweep_params p;
	struct dg_sweep_result *r = NULL;
	struct cli_session s;
	struct dg_device *probed = NULL;
	struct cli_job job = {.m = &cli_measure_sweep, .on = true};
	int rc;

	memset(&s, 0, sizeof(s));
	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? DG_EXIT_OK : rc;
	rc = cli_check_output(&s.outputs, a.csv);
	if (rc)
		goto out; /* the outputs checked so far are freed there */
	if (a.write) {
		rc = cli_check_output(&s.outputs, a.json);
		if (rc == 0)
			rc = check_write(&a, &probed);
		if (rc)
			goto out;
		cli_wait_unclaimed(probed);
		rc = cli_session_reopen(&s, probed, DG_DEVICE_WRITE, a.json);
	} else {
		rc = cli_session_begin(&s, a.device, 0, a.kind, 0, 0, a.json);
	}
	if (rc)
		goto out;
	rc = cli_sweep_params("sweep", &a.o, dg_device_info(s.dev), a.write, &p);
	if (rc)
		goto out;
	if (a.write) {
		if (!dg_device_same(probed, s.dev)) {
			cli_error(
			    "sweep: %s changed between the check of its name and the open for "
			    "writing; nothing was written",
			    a.device);
			rc = DG_EXIT_DEVICE;
			goto out;
		}
		dg_device_close(probed);
		probed = NULL;
		announce_write(&p, dg_device_info(s.dev));
	}
	rc = cli_sweep_run(&s, a.kind, &p, &r);
	if (rc)
		goto out;
	job.result = r; /* the registry's sweep entry writes the outputs and frees it */
	r = NULL;
	rc = cli_job_finish(&s, &job, a.json, a.csv);
out:
	dg_sweep_result_free(r);
	cli_jobs_free(&job, 1);
	cli_session_free(&s);
	dg_device_close(probed);
	return rc;
}

json_t *cli_sweep_json(const struct dg_sweep_result *r, const struct dg_device_info *info)
{
	json_t *o = dg_sweep_json(r);

	if (o && r->params.write &&
	    json_object_set_new(o, "write_cache",
				json_string(info->write_cache == 1   ? "write back"
					    : info->write_cache == 0 ? "write through"
								     : "unknown"))) {
		json_decref(o);
		o = NULL;
	}
	return o;
}
