/* SPDX-License-Identifier: MIT */
/*
 * diskgeo summary: the headline figures of many profiles, one line each: a table, or JSON Lines
 * (--jsonl) for any store that takes them (a fleet's profiles in one file, one record a drive).
 * Bad files are reported one line each and skipped; the exit status is then 1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diskgeo/compare.h"
#include "diskgeo/profile_read.h"

enum { OPT_JSONL = CLI_OPT_LOCAL };

static const struct option longopts[] = {
    {"jsonl", no_argument, NULL, OPT_JSONL},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: diskgeo summary PROFILE.json [...] [--jsonl]\n\n"
		"The headline figures of each profile on one line: path, model, serial, size,\n"
		"outer and inner MB/s, zones, full-surface read time, rpm, seeks and whole-drive\n"
		"random IOPS. A file that is not a profile is reported on one line and skipped\n"
		"(exit status 1).\n\n"
		"Options:\n"
		"      --jsonl    JSON Lines: one object per profile (keys as in the profile,\n"
		"                 absent when not measured)\n"
		"  -h, --help     this text\n");
}

/* The whole-drive random IOPS: the widest span from the outer edge. */
static double whole_iops(const struct dg_profile_data *p)
{
	const struct dg_pr_span *w = NULL;

	for (size_t i = 0; i < p->nspans; i++)
		if (!p->spans[i].start_bytes && (!w || p->spans[i].span_bytes > w->span_bytes))
			w = &p->spans[i];
	return w ? w->iops : NAN;
}

static int set_num(json_t *o, const char *key, double v)
{
	return isfinite(v) ? json_object_set_new(o, key, json_real(round(v * 1e6) / 1e6)) : 0;
}

static int set_str(json_t *o, const char *key, const char *v)
{
	return v ? json_object_set_new(o, key, json_string(v)) : 0;
}

static int print_jsonl(const struct dg_profile_data *p)
{
	json_t *o = json_object();
	int bad = !o;

	bad =
	    bad || set_str(o, "path", p->path) || set_str(o, "device", p->device) ||
	    set_str(o, "model", p->model) || set_str(o, "serial", p->serial) ||
	    set_str(o, "firmware", p->firmware) ||
	    json_object_set_new(
		o, "schema", json_string(p->is_model ? "diskgeo.model/1" : "diskgeo.profile/1")) ||
	    json_object_set_new(o, "size_bytes", json_integer((json_int_t)p->size_bytes)) ||
	    set_num(o, "outer_mb_per_s", p->outer_mb_per_s) ||
	    set_num(o, "inner_mb_per_s", p->inner_mb_per_s) ||
	    (p->nzones && json_object_set_new(o, "zones", json_integer((json_int_t)p->nzones))) ||
	    set_num(o, "read_time_s", dg_profile_read_time_s(p)) || set_num(o, "rpm", p->rpm) ||
	    set_num(o, "track_to_track_ms", p->track_to_track_ms) ||
	    set_num(o, "average_ms", p->average_ms) ||
	    set_num(o, "full_stroke_ms", p->full_stroke_ms) || set_num(o, "iops", whole_iops(p));
	if (!bad) {
		char *line = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(12));

		bad = !line;
		if (line)
			printf("%s\n", line);
		free(line);
	}
	json_decref(o);
	return bad ? -1 : 0;
}

/* A table cell: "-" when not measured. */
static const char *cell(char *buf, size_t len, const char *fmt, double v)
{
	if (!isfinite(v))
		return "-";
	snprintf(buf, len, fmt, v);
	return buf;
}

static void printable(char *dst, size_t len, const char *s)
{
	size_t i = 0;

	for (; s && *s && i + 1 < len; s++)
		dst[i++] = ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s;
	dst[i] = 0;
	if (!i)
		snprintf(dst, len, "-");
}

int cmd_summary(int argc, char **argv)
{
	char shortopts[16], err[DG_ERRLEN];
	bool jsonl = false;
	int opt, rc = DG_EXIT_OK;

	cli_shortopts(longopts, shortopts, sizeof(shortopts));
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_JSONL:
			jsonl = true;
			break;
		case 'h':
			usage(stdout);
			return DG_EXIT_OK;
		default:
			return cli_bad_option("summary", argv, shortopts);
		}
	}
	if (optind == argc) {
		cli_error("summary: no profile given (see 'diskgeo summary --help')");
		return DG_EXIT_USAGE;
	}
	if (!jsonl)
		printf("%-28s %-20s %10s %7s %7s %5s %9s %6s %6s %6s %7s\n", "path", "model",
		       "size", "outer", "inner", "zones", "read_s", "rpm", "avg_ms", "full",
		       "IOPS");
	for (int i = optind; i < argc; i++) {
		struct dg_profile_data *p = NULL;
		char a[8][32], path[64], model[64];

		if (dg_profile_read(argv[i], &p, err, sizeof(err))) {
			cli_error("%s", err);
			rc = DG_EXIT_USAGE;
			continue;
		}
		if (jsonl) {
			if (print_jsonl(p)) {
				cli_error("out of memory");
				rc = DG_EXIT_USAGE;
			}
		} else {
			printable(path, sizeof(path), p->path);
			printable(model, sizeof(model), p->model);
			dg_fmt_bytes(a[0], sizeof(a[0]), p->size_bytes);
			printf("%-28s %-20s %10s %7s %7s %5zu %9s %6s %6s %6s %7s\n", path, model,
			       a[0], cell(a[1], 32, "%.1f", p->outer_mb_per_s),
			       cell(a[2], 32, "%.1f", p->inner_mb_per_s), p->nzones,
			       cell(a[3], 32, "%.0f", dg_profile_read_time_s(p)),
			       cell(a[4], 32, "%.0f", p->rpm),
			       cell(a[5], 32, "%.2f", p->average_ms),
			       cell(a[6], 32, "%.2f", p->full_stroke_ms),
			       cell(a[7], 32, "%.1f", whole_iops(p)));
		}
		dg_profile_data_free(p);
	}
	return rc;
}
