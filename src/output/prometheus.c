/* SPDX-License-Identifier: MIT */
/* Prometheus textfile metrics of a profile (prometheus.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "diskgeo/profile.h"
#include "diskgeo/prometheus.h"
#include "util.h"

/* One gauge per row: the metric name, the profile key (dotted) it reports, its help text. */
static const struct metric {
	const char *name, *key, *help;
} metrics[] = {
    {"diskgeo_device_size_bytes", "device.size_bytes", "Device size in bytes."},
    {"diskgeo_bandwidth_outer_mb_per_s", "bandwidth.outer_mb_per_s",
     "Sequential read rate of the outer zone, MB/s (10^6 bytes)."},
    {"diskgeo_bandwidth_inner_mb_per_s", "bandwidth.inner_mb_per_s",
     "Sequential read rate of the inner zone, MB/s (10^6 bytes)."},
    {"diskgeo_bandwidth_read_time_seconds", "bandwidth.read_time_s",
     "Seconds to read the measured range sequentially (the integral of the curve)."},
    {"diskgeo_bandwidth_noise_percent", "bandwidth.noise_percent",
     "Relative noise of one bandwidth sample, percent."},
    {"diskgeo_rotation_rpm", "rotation.rpm", "Spindle speed, revolutions per minute."},
    {"diskgeo_seek_track_to_track_ms", "seek.track_to_track_ms", "Track-to-track seek, ms."},
    {"diskgeo_seek_average_ms", "seek.average_ms", "Average seek over random pairs of LBAs, ms."},
    {"diskgeo_seek_full_stroke_ms", "seek.full_stroke_ms", "Full-stroke seek, ms."},
    {"diskgeo_run_device_time_seconds", "run.device_time_s",
     "Seconds the device spent on the run's I/O."},
};

static const json_t *at(const json_t *o, const char *dotted)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%s", dotted);
	for (char *p = buf, *dot; o; p = dot + 1) {
		dot = strchr(p, '.');
		if (dot)
			*dot = 0;
		o = json_object_get(o, p);
		if (!dot)
			return o;
	}
	return NULL;
}

/* A label value in the exposition format: backslash, quote and newline escaped; other control
 * characters, which a scraper would refuse, become '?'. */
static void label(FILE *f, const char *name, const json_t *v, bool comma)
{
	const char *s = json_is_string(v) ? json_string_value(v) : "";

	fprintf(f, "%s%s=\"", comma ? "," : "", name);
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else if ((unsigned char)*s < 0x20 || *s == 0x7f)
			fputc('?', f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void labels(FILE *f, const json_t *doc, const char *extra)
{
	const json_t *dev = json_object_get(doc, "device");

	fputc('{', f);
	label(f, "device", json_object_get(dev, "path"), false);
	label(f, "model", json_object_get(dev, "model"), true);
	label(f, "serial", json_object_get(dev, "serial"), true);
	label(f, "firmware", json_object_get(dev, "firmware"), true);
	fprintf(f, "%s}", extra ? extra : "");
}

static void head(FILE *f, const char *name, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

int dg_prometheus_print(FILE *f, const json_t *doc)
{
	for (size_t i = 0; i < ARRAY_SIZE(metrics); i++) {
		const json_t *v = at(doc, metrics[i].key);

		if (!json_is_number(v) || !isfinite(json_number_value(v)))
			continue;
		head(f, metrics[i].name, metrics[i].help);
		fputs(metrics[i].name, f);
		labels(f, doc, NULL);
		fprintf(f, " %.12g\n", json_number_value(v));
	}
	const json_t *zones = at(doc, "bandwidth.zones");
	if (json_is_array(zones)) {
		head(f, "diskgeo_bandwidth_zones", "Recording zones found.");
		fputs("diskgeo_bandwidth_zones", f);
		labels(f, doc, NULL);
		fprintf(f, " %zu\n", json_array_size(zones));
	}
	const json_t *spans = at(doc, "iops.spans"), *e;
	size_t i;
	if (json_is_array(spans) && json_array_size(spans)) {
		head(f, "diskgeo_iops_span_iops",
		     "Random QD1 reads per second within a span (start_bytes, span_bytes).");
		json_array_foreach(spans, i, e)
		{
			char extra[96];

			snprintf(extra, sizeof(extra), ",start_bytes=\"%lld\",span_bytes=\"%lld\"",
				 (long long)json_integer_value(json_object_get(e, "start_bytes")),
				 (long long)json_integer_value(json_object_get(e, "span_bytes")));
			fputs("diskgeo_iops_span_iops", f);
			labels(f, doc, extra);
			fprintf(f, " %.12g\n", json_number_value(json_object_get(e, "iops")));
		}
	}
	const json_t *errors = json_object_get(doc, "errors");
	if (json_is_array(errors)) {
		head(f, "diskgeo_run_error_ranges", "Ranges whose reads failed in the run.");
		fputs("diskgeo_run_error_ranges", f);
		labels(f, doc, NULL);
		fprintf(f, " %zu\n", json_array_size(errors));
	}
	const json_t *complete = at(doc, "run.complete");
	if (json_is_boolean(complete)) {
		head(f, "diskgeo_run_complete", "1 when the run finished, 0 when interrupted.");
		fputs("diskgeo_run_complete", f);
		labels(f, doc, NULL);
		fprintf(f, " %d\n", json_is_true(complete));
	}
	const json_t *started = at(doc, "run.started_at");
	struct tm tm = {0};
	if (json_is_string(started) &&
	    strptime(json_string_value(started), "%Y-%m-%dT%H:%M:%SZ", &tm)) {
		head(f, "diskgeo_run_started_timestamp_seconds",
		     "When the run started, seconds since the epoch (UTC).");
		fputs("diskgeo_run_started_timestamp_seconds", f);
		labels(f, doc, NULL);
		fprintf(f, " %lld\n", (long long)timegm(&tm));
	}
	return ferror(f) ? -EIO : 0;
}

static int fill(FILE *f, void *arg)
{
	return dg_prometheus_print(f, arg);
}

int dg_prometheus_write(const json_t *doc, const char *path, char *err, size_t errlen)
{
	return dg_file_write(path, fill, (void *)doc, err, errlen);
}
