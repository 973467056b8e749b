/* SPDX-License-Identifier: MIT */
/*
 * bench/bandwidth's helper: a bandwidth curve against the truth of a drive spec.
 *
 *   bandwidth-measure sim PRESET [SEED]
 *       runs dg_bandwidth_run() with the defaults on sim:PRESET (virtual time) and prints one
 *       row: samples, median and max error of the samples against the truth, the max error
 *       over the samples clear of the spec's defects, zones found and true, the worst boundary
 *       error (% of its zone's length), device time.
 *   bandwidth-measure FORMAT SPEC FILE [ARGS]
 *       reads a curve another way measured on a device that serves SPEC (a preset's JSON file:
 *       its defects are read from it) and prints "points med% max% clean_med% clean_max%
 *       worst_offset worst_measured worst_truth device_s" (clean = the points whose bytes
 *       touch no defect; device_s = the tool's own timed seconds, "-" when it has none).
 *       FORMAT is one of
 *         diskgeo   diskgeo bandwidth --csv rows "offset_bytes,length_bytes,mb_per_s,..."
 *         zcav      zcav's output; ARGS: BLOCK_MIB SKIP (-b and -s). The k-th printed block is
 *                   at k*SKIP*BLOCK MiB (zcav prints the offset rounded to 0.01 GiB and the
 *                   time to 1 ms); MB/s = BLOCK MiB / time, positioning included.
 *         fio-log   fio --write_bw_log with --log_avg_msec=0 --log_offset=1 (one row per
 *                   I/O: completion ms, KiB/s, dir, bs, offset) of a --zonemode=strided run;
 *                   ARGS: STRIDE_BYTES. Per zone, the first completion is dropped (it carries
 *                   the seek and the rotational wait) and MB/s = the other bytes / (last -
 *                   first completion time): the same exclusion diskgeo makes, at fio's 1 ms
 *                   log resolution.
 *         fio-json  fio --output-format=json of one job per point named "o<offset>"; MB/s =
 *                   io_bytes / runtime as fio reports it (1 ms resolution, positioning
 *                   included).
 *   bandwidth-measure samples SPEC FILE
 *       bench/zoo's judge: FILE holds "offset_bytes,length_bytes,mb_per_s" rows (diskgeo's CSV);
 *       prints "points med% max% worst_offset" over the points clear of the spec's defects,
 *       each priced by the truth of its own bytes, a point across a spec zone boundary judged
 *       by drive-spec.md's rule (right anywhere between its rate with the one-off rotational
 *       wait of the zone change and without it: its error is its distance from that interval).
 *   bandwidth-measure seekat SPEC D...
 *       bench/zoo's judge of seek at distance: prints dg_truth_seek_at_ms() at each distance D
 *       (bytes), one a line (the exact truth: the mean move over every start offset).
 * The truth of a point is dg_truth_rate_mb_per_s() over its bytes: time-weighted where it
 * straddles zones. A slow defect makes a point legitimately slower than the zone's media rate,
 * so the clean columns leave out the points that touch one.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/bandwidth.h"
#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "diskgeo/model.h"

struct point {
	uint64_t off, len;
	double mb_per_s;
};

struct curve {
	struct point *p;
	size_t n, cap;
	double device_s; /* < 0: unknown */
};

struct defects {
	uint64_t start[16], end[16]; /* bytes */
	size_t n;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int curve_add(struct curve *c, uint64_t off, uint64_t len, double r)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 256;
		struct point *p = realloc(c->p, cap * sizeof(*p));

		if (!p)
			return -1;
		c->p = p;
		c->cap = cap;
	}
	c->p[c->n++] = (struct point){off, len, r};
	return 0;
}

/* The defect ranges of a spec file (none when it is a preset name or has none). */
static void defects_load(const char *spec_path, uint32_t sector, struct defects *d)
{
	json_t *doc = json_load_file(spec_path, 0, NULL), *arr, *e;
	size_t i;

	d->n = 0;
	if (!doc)
		return;
	arr = json_object_get(doc, "defects");
	json_array_foreach(arr, i, e)
	{
		if (d->n == sizeof(d->start) / sizeof(d->start[0]))
			break;
		uint64_t lba = (uint64_t)json_integer_value(json_object_get(e, "lba"));
		uint64_t cnt = (uint64_t)json_integer_value(json_object_get(e, "count"));

		d->start[d->n] = lba * sector;
		d->end[d->n++] = (lba + cnt) * sector;
	}
	json_decref(doc);
}

static int touches_defect(const struct defects *d, uint64_t off, uint64_t len)
{
	for (size_t i = 0; i < d->n; i++)
		if (off < d->end[i] && d->start[i] < off + len)
			return 1;
	return 0;
}

static int read_diskgeo(FILE *f, struct curve *c)
{
	char line[512];

	while (fgets(line, sizeof(line), f)) {
		unsigned long long off, len;
		double r;

		if (sscanf(line, "%llu,%llu,%lf", &off, &len, &r) == 3 && len > 0 &&
		    curve_add(c, off, len, r))
			return -1;
	}
	return 0;
}

static int read_zcav(FILE *f, struct curve *c, unsigned block_mib, unsigned skip)
{
	char line[512];
	uint64_t k = 0, block = (uint64_t)block_mib << 20;

	c->device_s = 0;
	while (fgets(line, sizeof(line), f)) {
		const char *s = line[0] == '#' ? line + 1 : line;
		char mid[64];
		double gib, t;

		if (sscanf(s, "%lf %63s %lf", &gib, mid, &t) != 3 || t <= 0)
			continue;
		uint64_t off = k * skip * block;
		if (fabs(gib - (double)off / 1073741824.0) > 0.006) {
			fprintf(stderr,
				"bandwidth-measure: zcav row %" PRIu64 " at %.2f GiB, "
				"expected %.3f: wrong -b/-s?\n",
				k, gib, (double)off / 1073741824.0);
			return -1;
		}
		if (curve_add(c, off, block, (double)block / t / 1e6))
			return -1;
		c->device_s += t;
		k++;
	}
	return 0;
}

struct io {
	double t_ms;
	uint64_t bs, off;
};

static int read_fio_log(FILE *f, struct curve *c, uint64_t stride)
{
	char line[512];
	struct io *io = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	while (fgets(line, sizeof(line), f)) {
		unsigned long long t, bw, dir, bs, off;

		if (sscanf(line, "%llu, %llu, %llu, %llu, %llu", &t, &bw, &dir, &bs, &off) != 5)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			struct io *p = realloc(io, cap * sizeof(*p));
			if (!p) {
				free(io);
				return -1;
			}
			io = p;
		}
		io[n++] = (struct io){(double)t, bs, off};
	}
	/* The log is in completion order; a zone's I/Os are contiguous in it. */
	c->device_s = n ? io[n - 1].t_ms / 1e3 : 0;
	for (size_t i = 0; i < n;) {
		uint64_t zone = io[i].off / stride, lo = UINT64_MAX, hi = 0, bytes = 0;
		size_t j = i + 1;

		for (; j < n && io[j].off / stride == zone; j++) {
			bytes += io[j].bs;
			lo = io[j].off < lo ? io[j].off : lo;
			hi = io[j].off + io[j].bs > hi ? io[j].off + io[j].bs : hi;
		}
		double span_ms = io[j - 1].t_ms - io[i].t_ms;
		if (j - i >= 3 && span_ms > 0 &&
		    curve_add(c, lo, hi - lo, (double)bytes / span_ms / 1e3)) {
			rc = -1;
			break;
		}
		i = j;
	}
	free(io);
	return rc;
}

static int read_fio_json(const char *path, struct curve *c)
{
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je), *jobs, *j;
	size_t i;

	if (!doc) {
		fprintf(stderr, "bandwidth-measure: %s: %s\n", path, je.text);
		return -1;
	}
	c->device_s = 0;
	jobs = json_object_get(doc, "jobs");
	json_array_foreach(jobs, i, j)
	{
		const char *name = json_string_value(json_object_get(j, "jobname"));
		json_t *rd = json_object_get(j, "read");
		double bytes = (double)json_integer_value(json_object_get(rd, "io_bytes"));
		double ms = (double)json_integer_value(json_object_get(rd, "runtime"));

		if (!name || name[0] != 'o' || bytes <= 0 || ms <= 0)
			continue;
		c->device_s += ms / 1e3;
		if (curve_add(c, strtoull(name + 1, NULL, 10), (uint64_t)bytes, bytes / ms / 1e3))
			break;
	}
	json_decref(doc);
	return 0;
}

/* Prints the row of a curve against the truth. */
static int report(const struct dg_spec *spec, const struct defects *d, const struct curve *c)
{
	double *all = calloc(c->n + 1, sizeof(double)), *clean = calloc(c->n + 1, sizeof(double));
	size_t na = 0, nc = 0, worst = 0;
	double worst_e = -1;

	if (!all || !clean)
		return 1;
	for (size_t i = 0; i < c->n; i++) {
		const struct point *p = &c->p[i];

		if (p->off + p->len > dg_spec_capacity_bytes(spec))
			continue;
		double t = dg_truth_rate_mb_per_s(spec, p->off, p->len);
		double e = fabs(p->mb_per_s - t) / t;

		all[na++] = e;
		if (!touches_defect(d, p->off, p->len))
			clean[nc++] = e;
		if (e > worst_e) {
			worst_e = e;
			worst = i;
		}
	}
	if (na == 0 || nc == 0) {
		fprintf(stderr, "bandwidth-measure: no points\n");
		return 1;
	}
	qsort(all, na, sizeof(double), cmp_double);
	qsort(clean, nc, sizeof(double), cmp_double);
	printf("%zu %.3f %.3f %.3f %.3f %" PRIu64 " %.2f %.2f ", na, 100 * all[na / 2],
	       100 * all[na - 1], 100 * clean[nc / 2], 100 * clean[nc - 1], c->p[worst].off,
	       c->p[worst].mb_per_s,
	       dg_truth_rate_mb_per_s(spec, c->p[worst].off, c->p[worst].len));
	if (c->device_s >= 0)
		printf("%.1f\n", c->device_s);
	else
		printf("-\n");
	free(all);
	free(clean);
	return 0;
}

/* A point's error against the truth of its own bytes; across a spec zone boundary, its distance
 * from [rate with the one-off wait (one revolution at most), rate without it]. */
static double point_error(const struct dg_spec *spec, const struct dg_truth *t,
			  const struct point *p)
{
	double tr = dg_truth_rate_mb_per_s(spec, p->off, p->len), lo = tr;

	for (size_t z = 0; z + 1 < t->nzones; z++) {
		uint64_t x = t->zones[z].end_bytes;

		if (x > p->off && x < p->off + p->len) {
			double secs = (double)p->len / (tr * 1e6) + t->period_ms / 1e3;

			lo = (double)p->len / secs / 1e6;
			break;
		}
	}
	if (p->mb_per_s < lo)
		return (lo - p->mb_per_s) / lo;
	return p->mb_per_s > tr ? (p->mb_per_s - tr) / tr : 0;
}

/* bench/zoo's judge of a profile's samples (see the head comment). */
static int judge_samples(const char *spec_path, const char *path)
{
	struct curve c = {.device_s = -1};
	struct dg_spec *spec = NULL;
	struct dg_truth *t = NULL;
	struct defects d;
	char err[DG_ERRLEN];
	double *e = NULL, worst = -1;
	size_t n = 0;
	uint64_t worst_off = 0;
	FILE *f = fopen(path, "r");
	int rc = 1;

	if (!f) {
		perror(path);
		return 1;
	}
	if (dg_spec_load(spec_path, &spec, NULL, err, sizeof(err))) {
		fprintf(stderr, "bandwidth-measure: %s\n", err);
		goto out;
	}
	defects_load(spec_path, dg_spec_sector_bytes(spec), &d);
	if (read_diskgeo(f, &c) || dg_truth_compute(spec, &t) || !(e = calloc(c.n + 1, sizeof(*e))))
		goto out;
	for (size_t i = 0; i < c.n; i++) {
		const struct point *p = &c.p[i];

		if (p->off + p->len > t->capacity_bytes || touches_defect(&d, p->off, p->len))
			continue;
		e[n] = point_error(spec, t, p);
		if (e[n] > worst) {
			worst = e[n];
			worst_off = p->off;
		}
		n++;
	}
	if (n == 0) {
		fprintf(stderr, "bandwidth-measure: no points\n");
		goto out;
	}
	qsort(e, n, sizeof(*e), cmp_double);
	printf("%zu %.3f %.3f %" PRIu64 "\n", n, 100 * e[n / 2], 100 * worst, worst_off);
	rc = 0;
out:
	fclose(f);
	free(e);
	free(c.p);
	dg_truth_free(t);
	if (spec)
		dg_spec_free(spec);
	return rc;
}

/* bench/zoo's judge of seek at distance (see the head comment). */
static int seek_at(int argc, char **argv)
{
	struct dg_spec *spec = NULL;
	char err[DG_ERRLEN];

	if (dg_spec_load(argv[2], &spec, NULL, err, sizeof(err))) {
		fprintf(stderr, "bandwidth-measure: %s\n", err);
		return 1;
	}
	for (int i = 3; i < argc; i++)
		printf("%.6f\n", dg_truth_seek_at_ms(spec, strtoull(argv[i], NULL, 0)));
	dg_spec_free(spec);
	return 0;
}

static int from_file(int argc, char **argv)
{
	const char *fmt = argv[1], *spec_path = argv[2], *path = argv[3];
	struct curve c = {.device_s = -1};
	struct defects d;
	struct dg_spec *spec;
	char err[DG_ERRLEN];
	FILE *f = NULL;
	int rc = -1;

	if (dg_spec_load(spec_path, &spec, NULL, err, sizeof(err))) {
		fprintf(stderr, "bandwidth-measure: %s\n", err);
		return 1;
	}
	defects_load(spec_path, dg_spec_sector_bytes(spec), &d);
	if (strcmp(fmt, "fio-json")) {
		f = fopen(path, "r");
		if (!f) {
			perror(path);
			goto out;
		}
	}
	if (!strcmp(fmt, "diskgeo") && argc == 4)
		rc = read_diskgeo(f, &c);
	else if (!strcmp(fmt, "zcav") && argc == 6)
		rc = read_zcav(f, &c, (unsigned)atoi(argv[4]), (unsigned)atoi(argv[5]));
	else if (!strcmp(fmt, "fio-log") && argc == 5)
		rc = read_fio_log(f, &c, strtoull(argv[4], NULL, 0));
	else if (!strcmp(fmt, "fio-json") && argc == 4)
		rc = read_fio_json(path, &c);
	else
		fprintf(stderr, "bandwidth-measure: bad arguments for %s\n", fmt);
	if (rc == 0)
		rc = report(spec, &d, &c);
out:
	if (f)
		fclose(f);
	free(c.p);
	dg_spec_free(spec);
	return rc ? 1 : 0;
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
	struct defects d = {0};
	char path[256], err[DG_ERRLEN], wb[16] = "n/a";
	double *e, worst_b = 0, clean_max = 0;

	snprintf(path, sizeof(path), "sim:%s", preset);
	if (dg_device_open(path, 0, &dev, NULL, err, sizeof(err)) ||
	    dg_engine_open(dev, &cfg, &eng, NULL, err, sizeof(err))) {
		fprintf(stderr, "bandwidth-measure: %s\n", err);
		return 1;
	}
	const struct dg_spec *spec = dg_device_spec(dev);
	snprintf(path, sizeof(path), "%s/../presets/%s.json", DG_BENCH_DIR, preset);
	defects_load(path, dg_spec_sector_bytes(spec), &d);
	dg_bandwidth_params_default(&p);
	p.seed = seed;
	if (dg_bandwidth_run(eng, dg_device_info(dev), &p, &errors, NULL, NULL, NULL, &r) ||
	    dg_truth_compute(spec, &t))
		return 1;
	e = calloc(r->nsamples + 1, sizeof(*e));
	if (!e)
		return 1;
	for (size_t i = 0; i < r->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &r->samples[i];
		double tr = dg_truth_rate_mb_per_s(spec, s->offset_bytes, s->length_bytes);

		e[i] = fabs(s->mb_per_s - tr) / tr;
		if (!touches_defect(&d, s->offset_bytes, s->length_bytes))
			clean_max = fmax(clean_max, e[i]);
	}
	qsort(e, r->nsamples, sizeof(*e), cmp_double);
	if (r->nzones == t->nrecording) {
		for (size_t z = 0; z + 1 < r->nzones; z++) {
			double len =
			    (double)(t->recording[z].end_bytes - t->recording[z].start_bytes);
			double dz =
			    fabs((double)r->zones[z].end_bytes - (double)t->recording[z].end_bytes);
			worst_b = fmax(worst_b, dz / len);
		}
		snprintf(wb, sizeof(wb), "%.3f", 100 * worst_b);
	}
	printf("%-22s %7zu %8.3f %8.3f %10.3f %6zu/%-4zu %9s %8.1f\n", preset, r->nsamples,
	       100 * e[r->nsamples / 2], 100 * e[r->nsamples - 1], 100 * clean_max, r->nzones,
	       t->nrecording, wb, (double)r->device_time_ns / 1e9);
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
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "sim"))
		return on_sim(argv[2], argc == 4 ? strtoull(argv[3], NULL, 0) : 1);
	if (argc == 4 && !strcmp(argv[1], "samples"))
		return judge_samples(argv[2], argv[3]);
	if (argc >= 3 && !strcmp(argv[1], "seekat"))
		return seek_at(argc, argv);
	if (argc >= 4 && argc <= 6)
		return from_file(argc, argv);
	fprintf(stderr, "usage: bandwidth-measure sim PRESET [SEED]\n"
			"       bandwidth-measure diskgeo|zcav|fio-log|fio-json SPEC FILE [ARGS]\n"
			"       bandwidth-measure samples SPEC FILE\n"
			"       bandwidth-measure seekat SPEC D...\n");
	return 1;
}
