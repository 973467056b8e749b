/* SPDX-License-Identifier: MIT */
/*
 * diskgeo read: stream a range, or read random aligned blocks, and report MB/s, IOPS and the
 * latency distribution. The plain benchmark next to the geometry commands, and the one that is
 * compared against fio (bench/engine).
 *
 * Method: keep `qd` I/Os in flight through the engine (submit as soon as a slot frees); each
 * I/O's latency is complete_ns - submit_ns on the engine clock; throughput is the bytes read
 * over the time from the first submission to the last completion (fio's "bw" and "clat"
 * definitions, fio(1) OUTPUT). Percentiles are nearest-rank over every I/O (Hyndman & Fan 1996,
 * definition 1), read from a bounded log-linear histogram (src/histogram.c, fio's clat buckets)
 * within 0.78 % of the exact value: memory stays flat however long the run.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diskgeo/histogram.h"
#include "diskgeo/parse.h"

#define MAX_BLOCK_BYTES	     (64u << 20) /* the engine's largest I/O */
#define DEFAULT_SEQ_LENGTH   (1ull << 30)
#define DEFAULT_RANDOM_IOS   4096u /* about 40 s of 4 KiB reads on a 7200 rpm disk */
#define DEFAULT_SEQ_BLOCK    (1u << 20)
#define DEFAULT_RANDOM_BLOCK 4096u
#define DEFAULT_SEQ_QD	     8u
#define DEFAULT_RANDOM_QD    1u
#define DEFAULT_SEED	     1u
#define BATCH		     256u /* the engine's largest queue depth */
#define MAX_FAILED_IN_A_ROW  64u  /* reads failing (or short) back to back: the rest would too */

enum {
	OPT_SPAN = CLI_OPT_LOCAL,
	OPT_SEED,
};

static const struct option longopts[] = {
    {"offset", required_argument, NULL, 'o'},
    {"length", required_argument, NULL, 'l'},
    {"block-size", required_argument, NULL, 'b'},
    {"qd", required_argument, NULL, 'Q'},
    {"random", no_argument, NULL, 'r'},
    {"span", required_argument, NULL, OPT_SPAN},
    {"engine", required_argument, NULL, CLI_OPT_ENGINE},
    {"seed", required_argument, NULL, OPT_SEED},
    {"json", required_argument, NULL, 'j'},
    CLI_COMMON_LONGOPTS,
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
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

/* Options as given: sizes stay text until the device's logical sector is known ("8s"). */
struct read_args {
	const char *offset, *length, *block, *span;
	const char *json;
	const char *device;
	unsigned qd; /* 0 = default */
	bool random;
	enum dg_engine_kind kind;
	uint64_t seed;
};

/* The resolved plan, all in bytes and aligned. */
struct read_plan {
	uint64_t offset_bytes;
	uint64_t length_bytes; /* total to read */
	uint64_t span_bytes;   /* random: region read; sequential: == length */
	uint32_t block_bytes;
	unsigned qd;
	bool random;
	uint64_t seed;
};

struct read_stats {
	uint64_t bytes, ios, failed_ios;
	uint64_t first_submit_ns, last_complete_ns;
	uint64_t failed_in_a_row;
	struct dg_histogram *lat; /* ns, one count per completed I/O */
};

static int parse_args(int argc, char **argv, struct read_args *a)
{
	char shortopts[64];
	uint64_t v;
	int c;

	cli_shortopts(longopts, shortopts, sizeof(shortopts));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (cli_common_option(c, &a->json))
			continue;
		switch (c) {
		case 'o':
			a->offset = optarg;
			break;
		case 'l':
			a->length = optarg;
			break;
		case 'b':
			a->block = optarg;
			break;
		case OPT_SPAN:
			a->span = optarg;
			break;
		case 'Q':
			if (dg_parse_uint(optarg, 1, 256, &v)) {
				cli_error("read: --qd '%s' is not a queue depth in 1..256", optarg);
				return DG_EXIT_USAGE;
			}
			a->qd = (unsigned)v;
			break;
		case 'r':
			a->random = true;
			break;
		case CLI_OPT_ENGINE:
			if (cli_engine_option("read", optarg, &a->kind))
				return DG_EXIT_USAGE;
			break;
		case OPT_SEED:
			if (dg_parse_uint(optarg, 0, UINT64_MAX, &a->seed)) {
				cli_error("read: --seed '%s' is not a whole number", optarg);
				return DG_EXIT_USAGE;
			}
			break;
		case 'j':
			a->json = optarg;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return cli_bad_option("read", argv, shortopts);
		}
	}
	if (cli_one_device("read", argc, argv, &a->device))
		return DG_EXIT_USAGE;
	if (a->span && !a->random) {
		cli_error("read: --span only applies to --random");
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

/* Parses one size option against the device's sector; one line and DG_EXIT_USAGE when it is
 * not a size or not a whole number of sectors. */
static int parse_aligned(const char *opt, const char *text, uint32_t sector, uint64_t *out)
{
	int rc = dg_parse_size(text, sector, out);

	if (rc) {
		cli_error("read: %s '%s' is not a size (%s): use " DG_PARSE_SIZE_FORMS, opt, text,
			  strerror(-rc));
		return DG_EXIT_USAGE;
	}
	if (*out % sector) {
		cli_error("read: %s %" PRIu64 " is not a multiple of the %u-byte logical sector",
			  opt, *out, sector);
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

static int make_plan(const struct read_args *a, const struct dg_device_info *info,
		     struct read_plan *p)
{
	uint32_t sector = info->logical_sector_bytes;
	uint64_t size = info->size_bytes - info->size_bytes % sector;
	uint64_t v;
	int rc;

	p->random = a->random;
	p->seed = a->seed;
	p->qd = a->qd ? a->qd : a->random ? DEFAULT_RANDOM_QD : DEFAULT_SEQ_QD;

	p->offset_bytes = 0;
	if (a->offset && (rc = parse_aligned("--offset", a->offset, sector, &p->offset_bytes)))
		return rc;
	if (p->offset_bytes >= size) {
		cli_error("read: --offset %" PRIu64 " is at or past the end of %s (%" PRIu64
			  " bytes)",
			  p->offset_bytes, info->path, size);
		return DG_EXIT_USAGE;
	}
	v = a->random ? DEFAULT_RANDOM_BLOCK : DEFAULT_SEQ_BLOCK;
	if (v % sector)
		v = sector; /* 4 KiB random default on a drive with larger sectors */
	if (a->block && (rc = parse_aligned("--block-size", a->block, sector, &v)))
		return rc;
	if (v == 0 || v > MAX_BLOCK_BYTES) {
		cli_error("read: --block-size %" PRIu64 " must be between one sector and %u bytes",
			  v, MAX_BLOCK_BYTES);
		return DG_EXIT_USAGE;
	}
	p->block_bytes = (uint32_t)v;

	if (a->random) {
		p->span_bytes = size - p->offset_bytes;
		if (a->span && (rc = parse_aligned("--span", a->span, sector, &p->span_bytes)))
			return rc;
		if (p->span_bytes > size - p->offset_bytes) {
			cli_error("read: --offset + --span goes past the end of %s (%" PRIu64
				  " bytes)",
				  info->path, size);
			return DG_EXIT_USAGE;
		}
		if (p->span_bytes < p->block_bytes) {
			cli_error("read: the random region (%" PRIu64 " bytes) is smaller than one "
				  "block (%u bytes)",
				  p->span_bytes, p->block_bytes);
			return DG_EXIT_USAGE;
		}
		p->length_bytes = (uint64_t)DEFAULT_RANDOM_IOS * p->block_bytes;
		if (a->length &&
		    (rc = parse_aligned("--length", a->length, sector, &p->length_bytes)))
			return rc;
	} else {
		p->length_bytes = size - p->offset_bytes;
		if (p->length_bytes > DEFAULT_SEQ_LENGTH)
			p->length_bytes = DEFAULT_SEQ_LENGTH;
		if (a->length &&
		    (rc = parse_aligned("--length", a->length, sector, &p->length_bytes)))
			return rc;
		if (p->length_bytes > size - p->offset_bytes) {
			cli_error("read: --offset + --length goes past the end of %s (%" PRIu64
				  " bytes)",
				  info->path, size);
			return DG_EXIT_USAGE;
		}
		p->span_bytes = p->length_bytes;
		/* a read shorter than one block is one I/O of its length: say that size */
		if (p->length_bytes && p->length_bytes < p->block_bytes)
			p->block_bytes = (uint32_t)p->length_bytes;
	}
	if (p->length_bytes == 0) {
		cli_error("read: --length must be at least one sector");
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

/* Uniform in [0, n) by multiply-shift (Lemire 2019); the bias is below 2^-40 for n < 2^24. */
static uint64_t random_below(uint64_t *state, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)dg_splitmix64(state) * n) >> 64);
}

/* Accounts one completion; failures and short transfers go to `errors`. */
static int account(struct read_stats *st, struct dg_errors *errors, const struct dg_completion *c)
{
	if (c->complete_ns > st->last_complete_ns)
		st->last_complete_ns = c->complete_ns;
	if (c->result < 0) {
		st->failed_ios++;
		st->failed_in_a_row++;
		int rc = dg_errors_add(errors, c->offset_bytes, c->length_bytes, (int)-c->result);
		return rc < 0 ? rc : 0;
	}
	st->ios++;
	st->bytes += (uint64_t)c->result;
	/* past a truncated file's end every read comes back short: failing too */
	st->failed_in_a_row = (uint64_t)c->result < c->length_bytes ? st->failed_in_a_row + 1 : 0;
	if ((uint64_t)c->result < c->length_bytes) {
		/* Inside the device a short read means the rest could not be read. */
		int rc = dg_errors_add(errors, c->offset_bytes + (uint64_t)c->result,
				       c->length_bytes - (uint64_t)c->result, EIO);
		if (rc == 0)
			snprintf(errors->v[errors->n - 1].message,
				 sizeof(errors->v[errors->n - 1].message),
				 "short read: %" PRId64 " of %" PRIu32 " bytes", c->result,
				 c->length_bytes);
		if (rc < 0)
			return rc;
	}
	dg_histogram_add(st->lat, c->complete_ns - c->submit_ns);
	return 0;
}

/*
 * The measuring loop: fill every free slot, wait for at least one completion, repeat until
 * `length_bytes` were submitted and everything came back. On cli_stop it stops submitting and
 * drains. Returns 0, or -errno when the engine itself failed (then it is in s->errors too).
 */
static int run(struct cli_session *s, const struct read_plan *p, struct read_stats *st)
{
	struct dg_engine *e = s->engine;
	struct dg_io ios[BATCH];
	struct dg_completion done[BATCH];
	uint64_t submitted = 0, rng = p->seed, nblocks = p->span_bytes / p->block_bytes;
	uint64_t next_tag = 0;
	int rc;

	memset(ios, 0, sizeof(ios));
	st->first_submit_ns = UINT64_MAX;
	while (true) {
		unsigned n = 0, room = dg_engine_free_slots(e);

		if (st->failed_in_a_row >= MAX_FAILED_IN_A_ROW && submitted < p->length_bytes) {
			dg_warnings_add(
			    &s->warnings,
			    "read: %u reads in a row failed or came back short; the rest of "
			    "the range was not read",
			    MAX_FAILED_IN_A_ROW);
			submitted = p->length_bytes; /* submit nothing more; drain */
		}
		while (!cli_stop && n < room && submitted < p->length_bytes) {
			uint64_t left = p->length_bytes - submitted;
			struct dg_io *io = &ios[n++];

			io->length_bytes = left < p->block_bytes ? (uint32_t)left : p->block_bytes;
			if (p->random)
				io->offset_bytes =
				    p->offset_bytes + random_below(&rng, nblocks) * p->block_bytes;
			else
				io->offset_bytes = p->offset_bytes + submitted;
			io->op = DG_IO_READ;
			io->tag = next_tag++;
			submitted += io->length_bytes;
		}
		if (n > 0) {
			rc = dg_engine_submit(e, ios, n);
			if (rc < 0 || (unsigned)rc != n) {
				/* The engine took fewer than it had room for: it is failing. */
				int err = rc < 0 ? -rc : EIO;
				unsigned taken = rc < 0 ? 0 : (unsigned)rc;
				cli_error("read: cannot submit at offset %" PRIu64 ": %s",
					  ios[taken].offset_bytes, strerror(err));
				dg_errors_add(&s->errors, ios[taken].offset_bytes,
					      ios[taken].length_bytes, err);
				submitted = p->length_bytes; /* submit nothing more; drain */
				if (taken == 0 && dg_engine_inflight(e) == 0)
					return -err;
			}
		}
		if (dg_engine_inflight(e) == 0)
			break;
		rc = dg_engine_reap(e, done, 1, BATCH);
		if (rc == -EINTR)
			continue; /* a signal: the loop sees cli_stop and drains */
		if (rc == -ECANCELED && cli_stop)
			return 0; /* stopped on a device that does not answer: end with what we have
				   */
		if (rc < 0) {
			cli_error("read: waiting for completions failed: %s", strerror(-rc));
			dg_errors_add(&s->errors, 0, 0, -rc);
			return rc;
		}
		for (int i = 0; i < rc; i++) {
			if (done[i].submit_ns < st->first_submit_ns)
				st->first_submit_ns = done[i].submit_ns;
			if (account(st, &s->errors, &done[i])) {
				cli_error("read: out of memory");
				return -ENOMEM;
			}
		}
	}
	return 0;
}

static double ns_to_ms(uint64_t ns)
{
	return (double)ns / (double)DG_NS_PER_MS;
}

struct read_result {
	double elapsed_s, mb_per_s, iops;
	double min_ms, p50_ms, p99_ms, max_ms, mean_ms;
	bool measured; /* at least one I/O completed */
};

static void summarise(struct read_stats *st, struct read_result *r)
{
	memset(r, 0, sizeof(*r));
	if (dg_histogram_count(st->lat) == 0 || st->last_complete_ns <= st->first_submit_ns)
		return;
	r->measured = true;
	r->elapsed_s = (double)(st->last_complete_ns - st->first_submit_ns) / (double)DG_NS_PER_S;
	r->mb_per_s = (double)st->bytes / DG_MB / r->elapsed_s;
	r->iops = (double)st->ios / r->elapsed_s;
	r->min_ms = ns_to_ms(dg_histogram_min(st->lat));
	r->max_ms = ns_to_ms(dg_histogram_max(st->lat));
	r->p50_ms = ns_to_ms(dg_histogram_percentile(st->lat, 50));
	r->p99_ms = ns_to_ms(dg_histogram_percentile(st->lat, 99));
	r->mean_ms = dg_histogram_mean(st->lat) / (double)DG_NS_PER_MS;
}

/* The "read" section (contract.md); measured keys are absent when no I/O completed. */
static json_t *read_section(const struct read_plan *p, const struct read_stats *st,
			    const struct read_result *r, const char *engine)
{
	json_t *o = json_object();

	json_object_set_new(o, "pattern", json_string(p->random ? "random" : "sequential"));
	json_object_set_new(o, "engine", json_string(engine));
	json_object_set_new(o, "offset_bytes", json_integer((json_int_t)p->offset_bytes));
	json_object_set_new(o, "span_bytes", json_integer((json_int_t)p->span_bytes));
	json_object_set_new(o, "block_bytes", json_integer((json_int_t)p->block_bytes));
	json_object_set_new(o, "qd", json_integer((json_int_t)p->qd));
	json_object_set_new(o, "bytes", json_integer((json_int_t)st->bytes));
	json_object_set_new(o, "ios", json_integer((json_int_t)st->ios));
	json_object_set_new(o, "failed_ios", json_integer((json_int_t)st->failed_ios));
	if (r->measured) {
		json_t *lat = json_object();
		json_object_set_new(o, "elapsed_s", json_real(r->elapsed_s));
		json_object_set_new(o, "mb_per_s", json_real(r->mb_per_s));
		json_object_set_new(o, "iops", json_real(r->iops));
		json_object_set_new(lat, "min", json_real(r->min_ms));
		json_object_set_new(lat, "p50", json_real(r->p50_ms));
		json_object_set_new(lat, "p99", json_real(r->p99_ms));
		json_object_set_new(lat, "max", json_real(r->max_ms));
		json_object_set_new(lat, "mean", json_real(r->mean_ms));
		json_object_set_new(o, "latency_ms", lat);
	}
	return o;
}

static void print_report(FILE *out, const char *path, const struct read_plan *p,
			 const struct read_stats *st, const struct read_result *r,
			 const char *engine, uint64_t capacity)
{
	char blk[32], at[64], span[32], safe[4 * 4096];

	cli_escape(safe, sizeof(safe), path);
	cli_human_ibytes(blk, sizeof(blk), p->block_bytes);
	cli_human_position(at, sizeof(at), p->offset_bytes, capacity);
	fprintf(out,
		"read %s: %s, %" PRIu32 "-byte (%s) blocks, QD %u, %s, from offset %" PRIu64
		" = %s",
		safe, p->random ? "random" : "sequential", p->block_bytes, blk, p->qd, engine,
		p->offset_bytes, at);
	if (p->random) {
		cli_human_bytes(span, sizeof(span), p->span_bytes);
		fprintf(out, ", span %" PRIu64 " bytes = %s", p->span_bytes, span);
	}
	fputc('\n', out);
	if (!r->measured) {
		fprintf(out, "  no I/O completed\n");
		return;
	}
	fprintf(out, "  %.1f MB/s  %.0f IOPS  %" PRIu64 " bytes in %" PRIu64 " I/Os, %.3f %s\n",
		r->mb_per_s, r->iops, st->bytes, st->ios,
		r->elapsed_s >= 1 ? r->elapsed_s : r->elapsed_s * 1e3,
		r->elapsed_s >= 1 ? "s" : "ms");
	fprintf(out, "  latency ms: min %.3f  p50 %.3f  p99 %.3f  max %.3f  mean %.3f\n", r->min_ms,
		r->p50_ms, r->p99_ms, r->max_ms, r->mean_ms);
}

static const char *engine_arg(enum dg_engine_kind kind)
{
	return kind == DG_ENGINE_SIM ? "sim" : kind == DG_ENGINE_PSYNC ? "psync" : "io_uring";
}

static void add_parameters(json_t *params, const struct read_plan *p, const char *engine)
{
	json_object_set_new(params, "offset_bytes", json_integer((json_int_t)p->offset_bytes));
	json_object_set_new(params, "length_bytes", json_integer((json_int_t)p->length_bytes));
	json_object_set_new(params, "block_bytes", json_integer((json_int_t)p->block_bytes));
	json_object_set_new(params, "qd", json_integer((json_int_t)p->qd));
	json_object_set_new(params, "random", json_boolean(p->random));
	json_object_set_new(params, "engine", json_string(engine));
	if (p->random) {
		json_object_set_new(params, "span_bytes", json_integer((json_int_t)p->span_bytes));
		json_object_set_new(params, "seed", json_integer((json_int_t)p->seed));
	}
}

int cmd_read(int argc, char **argv)
{
	struct read_args a = {.kind = DG_ENGINE_AUTO, .seed = DEFAULT_SEED};
	struct cli_session s;
	struct read_plan p;
	struct read_stats st;
	struct read_result r;
	json_t *sections;
	const char *engine;
	FILE *out;
	int rc;

	memset(&s, 0, sizeof(s));
	memset(&st, 0, sizeof(st));
	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? DG_EXIT_OK : rc;
	/* No engine yet (qd 0): its buffer size depends on --block-size, which may be in sectors.
	 */
	/* A flat device's "the bandwidth curve will be flat" does not concern a read. */
	cli_session_skip_warning(&s, "non-rotational");
	rc = cli_session_begin(&s, a.device, 0, a.kind, 0, 0, a.json);
	if (rc)
		goto out;
	rc = make_plan(&a, dg_device_info(s.dev), &p);
	if (rc)
		goto out;
	/* A backend that cannot run this device is a usage error, not a device failure. */
	if ((a.kind == DG_ENGINE_SIM) != (dg_device_spec(s.dev) != NULL) &&
	    a.kind != DG_ENGINE_AUTO) {
		cli_error("read: engine '%s' cannot run %s (sim: drives take 'sim', others "
			  "'io_uring' or 'psync')",
			  engine_arg(a.kind), a.device);
		rc = DG_EXIT_USAGE;
		goto out;
	}
	/* Buffers are whole pages; an I/O may be shorter than its buffer. */
	rc = cli_open_engine(s.dev, a.kind, p.qd, (p.block_bytes + 4095u) & ~4095u, &s.engine);
	if (rc)
		goto out;
	engine = dg_engine_name(s.engine);
	if (dg_engine_qd(s.engine) < p.qd) {
		cli_warn("engine %s runs at queue depth %u, not %u", engine, dg_engine_qd(s.engine),
			 p.qd);
		p.qd = dg_engine_qd(s.engine);
	}
	if (!s.parameters)
		s.parameters = json_object();
	add_parameters(s.parameters, &p, engine);
	st.lat = dg_histogram_new();
	if (!st.lat) {
		cli_error("read: out of memory");
		rc = DG_EXIT_IO;
		goto out;
	}

	if (run(&s, &p, &st) == -ENOMEM) {
		rc = DG_EXIT_IO;
		goto out;
	}
	summarise(&st, &r);
	out = cli_summary_out(a.json, NULL);
	if (out)
		print_report(out, dg_device_info(s.dev)->path, &p, &st, &r, engine,
			     dg_device_info(s.dev)->size_bytes);
	sections = json_object();
	json_object_set_new(sections, "read", read_section(&p, &st, &r, engine));
	rc = cli_session_end(&s, sections, a.json);
out:
	dg_histogram_free(st.lat);
	cli_session_free(&s);
	return rc;
}
