/* SPDX-License-Identifier: MIT */
/*
 * seek-measure: the measuring half of bench/seek. Runs the seek profile (dg_seek_run, default
 * parameters unless told) on a drive spec's sim: device in virtual time, or on a block device
 * that serves that spec (diskgeo-simdisk's loop device) in real time through io_uring, and
 * prints measured against truth: rpm, track-to-track, average, full stroke, seek_ms at each
 * distance >= 1 % of the capacity (error and tolerance max(3 %, 0.2 ms)), span IOPS (against
 * 1000 / dg_truth_random_ms) and the device time. Prints numbers only; exit 1 only when
 * something cannot run.
 *
 * Usage: seek-measure SPEC|NAME [DEVICE] [--budget SECONDS] [--samples N] [--distances N]
 *                     [--seed N] [--points]
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "diskgeo/model.h"
#include "diskgeo/seek.h"

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"budget", required_argument, NULL, 'B'},	 {"samples", required_argument, NULL, 'n'},
	    {"distances", required_argument, NULL, 'd'}, {"seed", required_argument, NULL, 's'},
	    {"points", no_argument, NULL, 'p'},		 {NULL, 0, NULL, 0},
	};
	struct dg_seek_params p;
	struct dg_spec *spec = NULL;
	struct dg_truth *t = NULL;
	struct dg_device *dev = NULL;
	struct dg_engine *e = NULL;
	struct dg_errors errors = {0};
	struct dg_seek_result *r = NULL;
	char err[DG_ERRLEN], path[4200];
	bool points = false;
	int c;

	dg_seek_params_default(&p);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'B':
			p.time_budget_ns = (uint64_t)(atof(optarg) * 1e9);
			break;
		case 'n':
			p.samples = (unsigned)atoi(optarg);
			break;
		case 'd':
			p.distances = (unsigned)atoi(optarg);
			break;
		case 's':
			p.seed = strtoull(optarg, NULL, 0);
			break;
		case 'p':
			points = true;
			break;
		default:
			return 1;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: seek-measure SPEC|NAME [DEVICE] [--budget S] [--points]\n");
		return 1;
	}
	if (dg_spec_load(argv[optind], &spec, NULL, err, sizeof(err)) ||
	    dg_truth_compute(spec, &t)) {
		fprintf(stderr, "seek-measure: %s\n", err);
		return 1;
	}
	if (optind + 1 < argc)
		snprintf(path, sizeof(path), "%s", argv[optind + 1]);
	else
		snprintf(path, sizeof(path), "sim:%s", argv[optind]);
	struct dg_engine_config cfg = {.kind = DG_ENGINE_AUTO, .qd = 1, .max_io_bytes = 1u << 20};
	if (dg_device_open(path, 0, &dev, NULL, err, sizeof(err)) ||
	    dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err))) {
		fprintf(stderr, "seek-measure: %s\n", err);
		return 1;
	}
	if (dg_seek_run(e, dg_device_info(dev), &p, &errors, NULL, NULL, NULL, &r)) {
		fprintf(stderr, "seek-measure: the run failed\n");
		return 1;
	}
	const char *name = dg_spec_name(spec);
	printf("%-20s %-10s rpm %9.2f (%+.4f%%)  t2t %.3f/%.3f (%+.3f ms)  avg %.3f/%.3f "
	       "(%+.2f%%)  full %.3f/%.3f (%+.2f%%)  device %.1f s  samples %u  errors %zu\n",
	       name, dg_engine_name(e), r->rpm, 100 * (r->rpm / t->rpm - 1), r->track_to_track_ms,
	       t->track_to_track_ms, r->track_to_track_ms - t->track_to_track_ms, r->average_ms,
	       t->average_ms, 100 * (r->average_ms / t->average_ms - 1), r->full_stroke_ms,
	       t->full_stroke_ms, 100 * (r->full_stroke_ms / t->full_stroke_ms - 1),
	       (double)r->device_time_ns / 1e9, r->samples_planned, errors.n);
	double worst = 0, worst_ms = 0;
	unsigned nchecked = 0, nbad = 0;
	for (size_t i = 0; i < r->npoints; i++) {
		const struct dg_seek_point *pt = &r->points[i];
		double truth = dg_truth_seek_at_ms(spec, pt->distance_bytes);
		double tol = fmax(0.03 * truth, 0.2), e_ms = pt->seek_ms - truth;
		bool big = pt->distance_bytes >= r->capacity_bytes / 100;
		if (points)
			printf(
			    "  %-20s D %15llu  n %3u  seek %8.3f  truth %8.3f  err %+7.3f ms%s\n",
			    name, (unsigned long long)pt->distance_bytes, pt->samples, pt->seek_ms,
			    truth, e_ms, big ? (fabs(e_ms) > tol ? "  OVER" : "") : "  (<1%)");
		if (!big)
			continue;
		nchecked++;
		nbad += fabs(e_ms) > tol;
		if (fabs(e_ms) / tol > worst) {
			worst = fabs(e_ms) / tol;
			worst_ms = e_ms;
		}
	}
	printf("  %-20s seek_ms >= 1%%: %u points, %u over tolerance, worst %+.3f ms = %.0f%% of "
	       "its tolerance\n",
	       name, nchecked, nbad, worst_ms, 100 * worst);
	for (size_t i = 0; i < r->nspans; i++) {
		const struct dg_seek_span *sp = &r->spans[i];
		double truth = 1000.0 / dg_truth_random_ms(spec, sp->start_bytes, sp->span_bytes,
							   sp->block_bytes);
		printf("  %-20s span %5.1f%% at %5.1f%%: %8.1f IOPS, truth %8.1f (%+.2f%%)\n", name,
		       100.0 * sp->span_bytes / r->capacity_bytes,
		       100.0 * sp->start_bytes / r->capacity_bytes, sp->iops, truth,
		       100 * (sp->iops / truth - 1));
	}
	dg_seek_result_free(r);
	dg_errors_free(&errors);
	dg_engine_close(e);
	dg_device_close(dev);
	dg_truth_free(t);
	dg_spec_free(spec);
	return 0;
}
