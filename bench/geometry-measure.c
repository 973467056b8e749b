/* SPDX-License-Identifier: MIT */
/*
 * bench/geometry's helper (and tests/test_geometry.c's, which includes it with
 * GEO_MEASURE_NO_MAIN): runs `diskgeo geometry`'s method on a sim: drive in virtual time and
 * scores it against the truth of the spec (src/model/truth_geometry.c). A drive is a preset name or
 * zoo:SEED (`diskgeo model --random SEED`). Prints one row per drive.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "diskgeo/geometry.h"
#include "diskgeo/model.h"

/* What runs the geometry (tests/test_geometry.c runs it with its period perturbed). */
#ifndef GEO_RUN
#define GEO_RUN(e, info, p, errors, out) dg_geometry_run(e, info, p, errors, NULL, NULL, NULL, out)
#endif

struct geo_row {
	char name[64];
	struct dg_geometry_score sc;
	unsigned heads, heads_true, band, band_true;
	const char *layout, *layout_true;
	double device_s, tb, hs_ms, hs_true_ms;
	int rc;
};

/* The device path of `what` (zoo:SEED written to a temporary spec file in `tmp`). */
static int drive_path(const char *what, char *path, size_t len, char *tmp, size_t tlen)
{
	tmp[0] = 0;
	if (strncmp(what, "zoo:", 4)) {
		snprintf(path, len, "sim:%s", what);
		return 0;
	}
	char *json = NULL;
	if (dg_spec_random(strtoull(what + 4, NULL, 10), &json))
		return -ENOMEM;
	snprintf(tmp, tlen, "/tmp/geo-zoo-%ld-%s.json", (long)getpid(), what + 4);
	FILE *f = fopen(tmp, "w");
	if (!f || fputs(json, f) < 0 || fclose(f)) {
		free(json);
		return -EIO;
	}
	free(json);
	snprintf(path, len, "sim:%s", tmp);
	return 0;
}

/* What a test checks of the result against the truth before both are freed (may be NULL). */
typedef void (*geo_check_fn)(const struct dg_geometry_result *r, const struct dg_geometry_truth *t);

static int geo_measure_with(const char *what, const struct dg_geometry_params *p,
			    struct geo_row *row, geo_check_fn check)
{
	struct dg_engine_config cfg = {.kind = DG_ENGINE_SIM, .qd = 1, .max_io_bytes = 8u << 20};
	char path[4200], tmp[256], err[DG_ERRLEN];
	struct dg_device *dev = NULL;
	struct dg_engine *e = NULL;
	struct dg_errors errors = {0};
	struct dg_geometry_result *r = NULL;
	struct dg_geometry_truth *t = NULL;

	memset(row, 0, sizeof(*row));
	snprintf(row->name, sizeof(row->name), "%s", what);
	row->rc = drive_path(what, path, sizeof(path), tmp, sizeof(tmp));
	if (!row->rc)
		row->rc = dg_device_open(path, 0, &dev, NULL, err, sizeof(err));
	if (!row->rc)
		row->rc = dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err));
	struct dg_geometry_params q = *p;
	if (!row->rc) {
		q.nominal_rpm = dg_device_nominal_rpm(dev);
		row->rc = GEO_RUN(e, dg_device_info(dev), &q, &errors, &r);
	}
	if (!row->rc)
		row->rc = dg_geometry_truth_compute(dg_device_spec(dev), &t);
	if (!row->rc) {
		dg_geometry_score(r, t, &row->sc);
		row->heads = r->heads;
		row->heads_true = t->heads;
		row->band = r->band_tracks;
		row->band_true = t->band_tracks;
		row->layout = dg_geometry_layout_name(r->layout);
		row->layout_true = t->serpentine ? "serpentine" : "cylinder";
		row->device_s = (double)r->device_time_ns / 1e9;
		row->tb = (double)r->capacity_bytes / 1e12;
		row->hs_ms = r->head_switch_ms;
		row->hs_true_ms = t->head_switch_ms;
		if (check)
			check(r, t);
	}
	dg_geometry_truth_free(t);
	dg_geometry_result_free(r);
	dg_engine_close(e);
	dg_device_close(dev);
	dg_errors_free(&errors);
	if (tmp[0])
		unlink(tmp);
	return row->rc;
}

static int geo_measure(const char *what, const struct dg_geometry_params *p, struct geo_row *row)
{
	return geo_measure_with(what, p, row, NULL);
}

static void geo_row_print(FILE *f, const struct geo_row *w)
{
	if (w->rc) {
		fprintf(f, "%-26s failed: %s\n", w->name, strerror(-w->rc));
		return;
	}
	fprintf(f,
		"%-26s %6.2f %3u/%-3u %-10s %-10s %5u/%-5u %3u/%-3u %6.1f%% %6.1f%% %3u/%-3u "
		"%7.3f %7.3f %6.1f %6.1f%% %6.1f%% %3u/%-3u %3u/%-3u %3u/%-3u\n",
		w->name, w->tb, w->heads, w->heads_true, w->layout ? w->layout : "-",
		w->layout_true, w->band, w->band_true, w->sc.places_ok, w->sc.places,
		w->sc.places_ok ? 100.0 * w->sc.size_exact / w->sc.places_ok : 0,
		w->sc.places_ok ? 100.0 * w->sc.size_within1 / w->sc.places_ok : 0,
		w->sc.skews_within1, w->sc.skews, w->hs_ms, w->hs_true_ms, w->device_s,
		w->sc.zones ? 100.0 * w->sc.zones_exact / w->sc.zones : 0,
		w->sc.zones ? 100.0 * w->sc.zones_within1 / w->sc.zones : 0, w->sc.bounds_track,
		w->sc.bounds, w->sc.bounds_reported, w->sc.bounds, w->sc.zskews_within1,
		w->sc.zskews);
}

static __attribute__((unused)) void geo_header(FILE *f)
{
	fprintf(f,
		"%-26s %6s %7s %-10s %-10s %11s %7s %7s %7s %7s %7s %7s %6s %7s %7s %7s %7s %7s\n",
		"drive", "TB", "heads", "layout", "(truth)", "band/truth", "places", "exact", "+-1",
		"skews", "hs ms", "truth", "dev s", "zexact", "z+-1", "bd/trk", "bd/unc", "zskew");
}

#ifndef GEO_MEASURE_NO_MAIN
int main(int argc, char **argv)
{
	struct dg_geometry_params p;
	unsigned n = 0, ok = 0, nz[2] = {0, 0}, z95[2] = {0, 0};
	double zsum[2] = {0, 0};

	dg_geometry_params_default(&p);
	geo_header(stdout);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--places") && i + 1 < argc) {
			p.places = (unsigned)atoi(argv[++i]);
			continue;
		}
		if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			p.seed = strtoull(argv[++i], NULL, 10);
			continue;
		}
		struct geo_row w;
		geo_measure(argv[i], &p, &w);
		geo_row_print(stdout, &w);
		fflush(stdout);
		n++;
		ok += !w.rc;
		/* the zoo drives' zones exact, by layout (a failed run shows in its row only) */
		if (strncmp(argv[i], "zoo:", 4) || w.rc)
			continue;
		unsigned l = !strcmp(w.layout_true, "serpentine");
		double zx = w.sc.zones ? 100.0 * w.sc.zones_exact / w.sc.zones : 0;
		nz[l]++;
		zsum[l] += zx;
		z95[l] += zx >= 95;
	}
	for (unsigned l = 0; l < 2; l++)
		if (nz[l])
			printf("# zoo %s drives: zones exact %.1f%% in the mean, >= 95%% on %u of "
			       "%u\n",
			       l ? "serpentine" : "cylinder", zsum[l] / nz[l], z95[l], nz[l]);
	return n == ok ? 0 : 1;
}
#endif
