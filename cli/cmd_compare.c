/* SPDX-License-Identifier: MIT */
/*
 * diskgeo compare: profiles against each other or a baseline (compare.h); a table on standard
 * output, "diskgeo.compare/1" with --json. Exit DG_EXIT_DIFFERS when a figure differs beyond
 * --tolerance or a weak region was found.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diskgeo/compare.h"
#include "diskgeo/profile.h"
#include "diskgeo/profile_read.h"

enum { OPT_BASELINE = CLI_OPT_LOCAL, OPT_TOLERANCE, OPT_ALL };

static const struct option longopts[] = {
    {"baseline", required_argument, NULL, OPT_BASELINE},
    {"tolerance", required_argument, NULL, OPT_TOLERANCE},
    {"all", no_argument, NULL, OPT_ALL},
    {"json", required_argument, NULL, 'j'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: diskgeo compare A.json B.json [...] [--baseline REF.json] [--tolerance PCT]\n"
	    "                       [--all] [--json FILE|-]\n\n"
	    "Compares profiles figure by figure and zone by zone (outer/inner rate, zones,\n"
	    "full-surface read time, rpm, seeks, span IOPS, sweep cells) and finds weak\n"
	    "regions: stretches of a curve below its own zone's rate, or below its siblings'.\n"
	    "Two profiles: the second against the first. More: each against the median of\n"
	    "them all. A difference is significant beyond 3 sigmas of the two profiles' own\n"
	    "noise. Exit status 5 when a significant difference exceeds the tolerance or a weak\n"
	    "region is found.\n\n"
	    "Options:\n"
	    "      --baseline REF.json  compare every profile with REF (a profile, or the\n"
	    "                           output of 'diskgeo model --json')\n"
	    "      --tolerance PCT      differences larger than PCT %% count (default 5)\n"
	    "      --all                list every figure compared, not only significant ones\n"
	    "  -j, --json FILE          also write diskgeo.compare/1 JSON (\"-\" = standard\n"
	    "                           output only)\n"
	    "  -h, --help               this text\n");
}

/* A string from a document, printable: control characters become '?'. */
static void printable(char *dst, size_t len, const char *s)
{
	size_t i = 0;

	for (; s && *s && i + 1 < len; s++)
		dst[i++] = ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s;
	dst[i] = 0;
	if (!i)
		snprintf(dst, len, "-");
}

static void print_table(FILE *out, const struct dg_compare_result *r,
			const struct dg_profile_data *const *pp,
			const struct dg_profile_data *baseline, const struct dg_compare_params *prm,
			bool all)
{
	char a[64], b[64], lo[32], hi[32], path[512];
	size_t nsig = 0;

	fprintf(out, "profiles:\n");
	for (size_t k = 0; k < r->nprofiles; k++) {
		printable(a, sizeof(a), pp[k]->model);
		printable(b, sizeof(b), pp[k]->serial);
		printable(path, sizeof(path), pp[k]->path);
		fprintf(out, "  [%zu] %s  model %s  serial %s\n", k, path, a, b);
	}
	if (baseline) {
		printable(path, sizeof(path), baseline->path);
		fprintf(out, "reference: the baseline %s\n", path);
	} else {
		fprintf(out, "reference: %s\n",
			!strcmp(r->reference, "first") ? "the first profile [0]"
						       : "the median of all profiles");
	}
	for (size_t i = 0; i < r->ndiffs; i++)
		nsig += r->diffs[i].significant;
	fprintf(out,
		"\n%zu figures compared, %zu significant (beyond %g sigma of their noise); "
		"tolerance %g %%\n",
		r->ndiffs, nsig, prm->sigmas, prm->tolerance_percent);
	if (nsig || all)
		fprintf(out, "  prof  figure                    where                          "
			     "reference       this  delta %%  noise %%\n");
	for (size_t i = 0; i < r->ndiffs; i++) {
		const struct dg_compare_diff *d = &r->diffs[i];
		char where[160] = "";

		if (!d->significant && !all)
			continue;
		if (d->end_bytes) {
			dg_fmt_bytes(lo, sizeof(lo), d->start_bytes);
			dg_fmt_bytes(hi, sizeof(hi), d->end_bytes);
			snprintf(where, sizeof(where), "%s%s%s-%s", d->detail,
				 d->detail[0] ? " " : "", lo, hi);
		} else {
			snprintf(where, sizeof(where), "%s", d->detail);
		}
		fprintf(out, "  %4zu  %-25s %-30s %10.3f %10.3f %+8.2f %8.2f %s\n", d->profile,
			d->figure, where, d->a, d->b, d->delta_percent, d->noise_percent,
			d->beyond_tolerance ? "DIFFERS"
			: d->significant    ? "*"
					    : "");
	}
	fprintf(out, "\nweak regions: %zu\n", r->nweak);
	if (r->nweak)
		fprintf(out, "  prof            start              end       MB/s   expected  "
			     "against\n");
	for (size_t i = 0; i < r->nweak; i++) {
		const struct dg_weak_region *w = &r->weak[i];

		dg_fmt_bytes(lo, sizeof(lo), w->start_bytes);
		dg_fmt_bytes(hi, sizeof(hi), w->end_bytes);
		fprintf(out, "  %4zu %16s %16s %10.1f %10.1f  %s\n", w->profile, lo, hi,
			w->mb_per_s, w->expected_mb_per_s, w->against);
	}
	for (size_t k = 0; k < r->nprofiles; k++)
		if (r->stands_apart[k]) {
			printable(path, sizeof(path), pp[k]->path);
			fprintf(out, "stands apart: [%zu] %s\n", k, path);
		}
	fprintf(out, "%s\n",
		r->differs ? "result: differs beyond the tolerance (exit status 5)"
			   : "result: no difference beyond the tolerance");
}

struct compare_args {
	const char *json_path, *baseline_path;
	struct dg_compare_params prm;
	bool all;
};

/* Returns DG_EXIT_* for the command to end with, or -1 to go on with argv[optind...]. */
static int parse_args(int argc, char **argv, struct compare_args *a)
{
	char shortopts[32], *end;
	int opt;

	dg_compare_defaults(&a->prm);
	cli_shortopts(longopts, shortopts, sizeof(shortopts));
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_BASELINE:
			a->baseline_path = optarg;
			break;
		case OPT_TOLERANCE:
			errno = 0;
			a->prm.tolerance_percent = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(a->prm.tolerance_percent) ||
			    a->prm.tolerance_percent < 0 || a->prm.tolerance_percent > 1000) {
				cli_error(
				    "compare: --tolerance '%s' is not a percentage in [0, 1000]",
				    optarg);
				return DG_EXIT_USAGE;
			}
			break;
		case OPT_ALL:
			a->all = true;
			break;
		case 'j':
			a->json_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return DG_EXIT_OK;
		default:
			return cli_bad_option("compare", argv, shortopts);
		}
	}
	if (argc - optind < 1 || (argc - optind < 2 && !a->baseline_path)) {
		cli_error(
		    "compare: needs two profiles, or one and --baseline (see 'diskgeo compare "
		    "--help')");
		return DG_EXIT_USAGE;
	}
	return -1;
}

int cmd_compare(int argc, char **argv)
{
	struct compare_args a = {0};
	char err[DG_ERRLEN];
	struct cli_outputs outs = {0};
	struct dg_profile_data **pp = NULL, *baseline = NULL;
	struct dg_compare_result *r = NULL;
	const char *json_path, *baseline_path;
	struct dg_compare_params prm;
	json_t *doc = NULL;
	size_t n = 0;
	bool all;
	int rc = parse_args(argc, argv, &a);

	if (rc >= 0)
		return rc;
	rc = DG_EXIT_USAGE;
	json_path = a.json_path;
	baseline_path = a.baseline_path;
	prm = a.prm;
	all = a.all;
	n = (size_t)(argc - optind);
	if (cli_check_output(&outs, json_path))
		return DG_EXIT_USAGE;
	pp = calloc(n, sizeof(*pp));
	if (!pp) {
		cli_error("out of memory");
		n = 0; /* nothing to free in pp */
		goto out;
	}
	if (baseline_path && dg_profile_read(baseline_path, &baseline, err, sizeof(err))) {
		cli_error("%s", err);
		goto out;
	}
	for (size_t k = 0; k < n; k++)
		if (dg_profile_read(argv[optind + k], &pp[k], err, sizeof(err))) {
			cli_error("%s", err);
			goto out;
		}
	/* Drives of another size are another model: their zones and figures differ for no fault
	 * of their own. Compared all the same, with a warning. */
	for (size_t k = 0; k < n; k++) {
		const struct dg_profile_data *ref = baseline ? baseline : pp[0];

		if (pp[k]->size_bytes != ref->size_bytes)
			cli_warn("%s holds %llu bytes, %s %llu: different drives compare badly",
				 pp[k]->path, (unsigned long long)pp[k]->size_bytes, ref->path,
				 (unsigned long long)ref->size_bytes);
	}
	if (dg_compare((const struct dg_profile_data *const *)pp, n, baseline, &prm, &r, err,
		       sizeof(err))) {
		cli_error("compare: %s", err);
		goto out;
	}
	if (!json_path || strcmp(json_path, "-"))
		print_table(stdout, r, (const struct dg_profile_data *const *)pp, baseline, &prm,
			    all);
	if (json_path) {
		doc = dg_compare_json(r, (const struct dg_profile_data *const *)pp, baseline, &prm);
		if (!doc) {
			cli_error("out of memory");
			goto out;
		}
		if (dg_json_write(doc, json_path, err, sizeof(err))) {
			cli_error("%s", err);
			goto out;
		}
	}
	rc = r->differs ? DG_EXIT_DIFFERS : DG_EXIT_OK;
out:
	json_decref(doc);
	dg_compare_free(r);
	for (size_t k = 0; k < n; k++)
		dg_profile_data_free(pp[k]);
	free(pp);
	dg_profile_data_free(baseline);
	cli_outputs_forget(&outs);
	return rc;
}
