/* SPDX-License-Identifier: MIT */
/*
 * geocache-measure: the measuring half of bench/geocache. Runs the cache and command-queueing
 * measurement (dg_geocache_run, engine qd 32) on a drive spec's sim: device in virtual time, or
 * on a block device that serves the spec, and prints one line of measured against truth:
 * read-ahead (within 10 %, or "none"), look-behind, cache size (within 25 %), segments, hit
 * time, NCQ (reorders, depth), the device time, and "ok" or the failed bounds. Prints numbers
 * only; exit 1 only when something cannot run.
 *
 * Usage: geocache-measure SPEC|NAME|--random SEED [DEVICE] [--budget SECONDS] [--seed N] [--json]
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "diskgeo/geocache.h"
#include "diskgeo/model.h"

/* A zoo spec written to a temporary file: *path gets "sim:/tmp/...json" (unlinked by caller). */
static int zoo_file(uint64_t seed, char *file, size_t len)
{
	char *text = NULL;

	snprintf(file, len, "/tmp/geocache-zoo-XXXXXX.json");
	int fd = mkstemps(file, 5);
	if (fd < 0 || dg_spec_random(seed, &text)) {
		free(text);
		return -1;
	}
	size_t n = strlen(text);
	int ok = write(fd, text, n) == (ssize_t)n;
	close(fd);
	free(text);
	return ok ? 0 : -1;
}

static void print_line(const char *name, const struct dg_geocache *r,
		       const struct dg_truth_geocache *t)
{
	char bad[128] = "";
	double ra = r->read_ahead_bytes, tra = (double)t->read_ahead_bytes;
	double size = r->size_bytes, tsize = (double)t->cache_bytes;

	if (isnan(ra) || (tra == 0 ? ra != 0 : fabs(ra / tra - 1) > 0.10))
		strcat(bad, " read-ahead");
	if (r->look_behind != (int)t->look_behind)
		strcat(bad, " look-behind");
	if (isnan(size) || fabs(size / tsize - 1) > 0.25)
		strcat(bad, " size");
	if (r->ncq_reorders != (t->ncq_depth > 1) || r->ncq_depth != (int)t->ncq_depth)
		strcat(bad, " ncq");
	printf(
	    "%-24s ra %8.0f/%-8.0f lb %2d/%d  size %6.1f/%-6.1f MiB  seg %2d/%u  hit %.3f/%.3f ms"
	    "  ncq %2d/%-2u  device %5.1f s  %s%s\n",
	    name, ra / 1024, tra / 1024, r->look_behind, t->look_behind, size / 1048576,
	    tsize / 1048576, r->segments, t->segments, r->hit_ms, t->hit_ms,
	    r->ncq_reorders > 0	   ? r->ncq_depth
	    : r->ncq_reorders == 0 ? 1
				   : -1,
	    t->ncq_depth, (double)r->device_time_ns / 1e9, bad[0] ? "MISS" : "ok", bad);
	for (unsigned i = 0; i < r->notes_n; i++)
		printf("  %-22s note: %s\n", name, r->notes[i]);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"budget", required_argument, NULL, 'B'},
	    {"seed", required_argument, NULL, 's'},
	    {"random", required_argument, NULL, 'r'},
	    {"json", no_argument, NULL, 'j'},
	    {NULL, 0, NULL, 0},
	};
	struct dg_geocache_opts o;
	struct dg_geocache r;
	struct dg_truth_geocache t;
	struct dg_spec *spec = NULL;
	struct dg_device *dev = NULL;
	struct dg_engine *e = NULL;
	struct dg_errors errors = {0};
	char err[DG_ERRLEN], path[4200], file[64] = "";
	double budget = 0;
	uint64_t seed = 1;
	bool json = false, zoo = false;
	int c, rc = 1;

	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		if (c == 'B')
			budget = atof(optarg);
		else if (c == 's')
			seed = strtoull(optarg, NULL, 0);
		else if (c == 'j')
			json = true;
		else if (c == 'r' && zoo_file(strtoull(optarg, NULL, 0), file, sizeof(file)) == 0)
			zoo = true;
		else
			return 1;
	}
	const char *what = zoo ? file : optind < argc ? argv[optind++] : NULL;
	if (!what) {
		fprintf(stderr, "usage: geocache-measure SPEC|NAME|--random SEED [DEVICE] "
				"[--budget S] [--seed N] [--json]\n");
		return 1;
	}
	if (dg_spec_load(what, &spec, NULL, err, sizeof(err))) {
		fprintf(stderr, "geocache-measure: %s\n", err);
		goto out;
	}
	snprintf(path, sizeof(path), optind < argc ? "%s" : "sim:%s",
		 optind < argc ? argv[optind] : what);
	struct dg_engine_config cfg = {.kind = DG_ENGINE_AUTO, .qd = 32, .max_io_bytes = 1u << 20};
	if (dg_device_open(path, 0, &dev, NULL, err, sizeof(err)) ||
	    dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err))) {
		fprintf(stderr, "geocache-measure: %s\n", err);
		goto out;
	}
	dg_geocache_opts_default(&o, dg_device_info(dev)->size_bytes,
				 dg_device_info(dev)->logical_sector_bytes);
	o.seed = seed;
	o.nominal_rpm = dg_device_nominal_rpm(dev);
	o.errors = &errors;
	if (budget > 0)
		o.time_budget_ns = (uint64_t)(budget * 1e9);
	if (dg_geocache_run(e, &o, &r)) {
		fprintf(stderr, "geocache-measure: the run failed\n");
		goto out;
	}
	dg_truth_geocache(spec, r.block_bytes, &t);
	print_line(dg_spec_name(spec), &r, &t);
	if (json) {
		json_t *j = dg_geocache_json(&r);
		if (j)
			json_dumpf(j, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		printf("\n");
		json_decref(j);
	}
	rc = 0;
out:
	dg_errors_free(&errors);
	dg_engine_close(e);
	dg_device_close(dev);
	dg_spec_free(spec);
	if (zoo)
		unlink(file);
	return rc;
}
