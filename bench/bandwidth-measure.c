/* SPDX-License-Identifier: MIT */
/*
 * bench/bandwidth's helper: a bandwidth curve against the truth of a drive spec.
 *
 *   bandwidth-measure PRESET [--seed N]
 *       runs dg_bandwidth_run() with the defaults on sim:PRESET (virtual time) and prints one
 *       row: samples, median and max error of the samples against the truth, zones found and
 *       true, the worst boundary error (% of its zone's length), device time.
 *   bandwidth-measure --csv PRESET FILE
 *       reads a curve as CSV rows "offset_bytes,length_bytes,mb_per_s" (a header row is
 *       skipped) and prints its median and max error against PRESET's truth.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/bandwidth.h"
#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "diskgeo/model.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int from_csv(const char *preset, const char *path)
{
	struct dg_spec *spec;
	char err[DG_ERRLEN], line[512];
	double *e = NULL;
	size_t n = 0, cap = 0;
	FILE *f;

	if (dg_spec_load(preset, &spec, NULL, err, sizeof(err))) {
		fprintf(stderr, "bandwidth-measure: %s\n", err);
		return 1;
	}
	f = fopen(path, "r");
	if (!f) {
		perror(path);
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long off, len;
		double r, t;

		if (sscanf(line, "%llu,%llu,%lf", &off, &len, &r) != 3 || len == 0)
			continue;
		if (off + len > dg_spec_capacity_bytes(spec))
			continue;
		t = dg_truth_rate_mb_per_s(spec, off, len);
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			e = realloc(e, cap * sizeof(*e));
			if (!e)
				return 1;
		}
		e[n++] = fabs(r - t) / t;
	}
	fclose(f);
	if (n == 0) {
		fprintf(stderr, "bandwidth-measure: no samples in %s\n", path);
		return 1;
	}
	qsort(e, n, sizeof(*e), cmp_double);
	printf("%zu %.3f %.3f\n", n, 100 * e[n / 2], 100 * e[n - 1]);
	free(e);
	dg_spec_free(spec);
	return 0;
}

static int on_sim(const char *preset, unsigned long long seed)
{
	struct dg_engine_config cfg = {.kind = DG_ENGINE_SIM, .qd = 4, .max_io_bytes = 1u << 20};
	struct dg_bandwidth_params p;
	struct dg_bandwidth_result *r = NULL;
	struct dg_errors errors = {0};
	struct dg_device *dev;
	struct dg_engine *eng;
	struct dg_truth *t;
	char path[256], err[DG_ERRLEN];
	double *e, worst_b = 0;

	snprintf(path, sizeof(path), "sim:%s", preset);
	if (dg_device_open(path, 0, &dev, NULL, err, sizeof(err)) ||
	    dg_engine_open(dev, &cfg, &eng, NULL, err, sizeof(err))) {
		fprintf(stderr, "bandwidth-measure: %s\n", err);
		return 1;
	}
	dg_bandwidth_params_default(&p);
	p.seed = seed;
	if (dg_bandwidth_run(eng, dg_device_info(dev), &p, &errors, NULL, NULL, NULL, &r) ||
	    dg_truth_compute(dg_device_spec(dev), &t))
		return 1;
	e = calloc(r->nsamples + 1, sizeof(*e));
	for (size_t i = 0; i < r->nsamples; i++) {
		double tr = dg_truth_rate_mb_per_s(dg_device_spec(dev), r->samples[i].offset_bytes,
						   r->samples[i].length_bytes);
		e[i] = fabs(r->samples[i].mb_per_s - tr) / tr;
	}
	qsort(e, r->nsamples, sizeof(*e), cmp_double);
	if (r->nzones == t->nrecording) {
		for (size_t z = 0; z + 1 < r->nzones; z++) {
			double len =
			    (double)(t->recording[z].end_bytes - t->recording[z].start_bytes);
			double d =
			    fabs((double)r->zones[z].end_bytes - (double)t->recording[z].end_bytes);
			worst_b = fmax(worst_b, d / len);
		}
	}
	{
		char wb[16] = "n/a";

		if (r->nzones == t->nrecording)
			snprintf(wb, sizeof(wb), "%.3f", 100 * worst_b);
		printf("%-22s %7zu %8.3f %8.3f %6zu/%-4zu %9s %8.1f\n", preset, r->nsamples,
		       100 * e[r->nsamples / 2], 100 * e[r->nsamples - 1], r->nzones, t->nrecording,
		       wb, (double)r->device_time_ns / 1e9);
	}
	free(e);
	dg_truth_free(t);
	dg_bandwidth_result_free(r);
	dg_errors_free(&errors);
	dg_engine_close(eng);
	dg_device_close(dev);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--csv"))
		return from_csv(argv[2], argv[3]);
	if (argc == 2)
		return on_sim(argv[1], 1);
	if (argc == 4 && !strcmp(argv[2], "--seed"))
		return on_sim(argv[1], strtoull(argv[3], NULL, 0));
	fprintf(stderr, "usage: bandwidth-measure PRESET [--seed N] | --csv PRESET FILE\n");
	return 1;
}
