/* SPDX-License-Identifier: MIT */
/* Shared command-line helpers: the output checks before a run, the measuring session (device,
 * engine, the JSON document written at the end) and the progress line. Split out of cli.c
 * (issue 11). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "diskgeo/parse.h"
#include "diskgeo/profile.h"
#include "diskgeo/prometheus.h"
#include "util.h"

/* ---- output checks and the measuring session ---- */

static int check_one(const struct cli_outputs *o, const char *path)
{
	char err[DG_ERRLEN] = "";

	if (dg_output_check(path, o->have_avoid ? &o->avoid : NULL, err, sizeof(err))) {
		cli_error("%s", err);
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

int cli_check_output(struct cli_outputs *o, const char *path)
{
	int rc;

	if (!path)
		return DG_EXIT_OK;
	if (!*path) {
		cli_error("empty output file name");
		return DG_EXIT_USAGE;
	}
	rc = check_one(o, path);
	if (rc)
		return rc;
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->paths[i], path))
			return DG_EXIT_OK;
	if (o->n < ARRAY_SIZE(o->paths) && (o->paths[o->n] = strdup(path)))
		o->n++;
	return DG_EXIT_OK;
}

int cli_check_outputs_avoid(struct cli_outputs *o, const struct dg_output_avoid *avoid)
{
	o->avoid = *avoid;
	o->have_avoid = true;
	for (size_t i = 0; i < o->n; i++)
		if (check_one(o, o->paths[i]))
			return DG_EXIT_USAGE;
	return DG_EXIT_OK;
}

int cli_check_outputs_device(struct cli_outputs *o, const struct dg_device *dev)
{
	struct dg_output_avoid avoid;

	dg_output_avoid_device(&avoid, dev);
	return cli_check_outputs_avoid(o, &avoid);
}

void cli_outputs_forget(struct cli_outputs *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->paths[i]);
	o->n = 0;
	o->have_avoid = false;
}

void cli_session_warnings_shown(struct cli_session *s)
{
	s->warnings_shown = s->warnings.n;
}

void cli_session_skip_warning(struct cli_session *s, const char *code)
{
	s->skip_code = code;
}

/* Drops the warnings with code `skip` from `w`. */
static void skip_warnings(struct dg_warnings *w, const char *skip)
{
	size_t k = 0;

	if (!skip)
		return;
	for (size_t i = 0; i < w->n; i++) {
		if (!strcmp(dg_warning_code(w->v[i]), skip))
			free(w->v[i]);
		else
			w->v[k++] = w->v[i];
	}
	w->n = k;
}

/* The part of a session's start before the device is opened: the parameters and the output
 * check. The caller zeroed `s` and may have set skip_code and checked outputs. */
static int session_prepare(struct cli_session *s, const char *json_path)
{
	s->rotational_timed = -1;
	s->parameters = json_object();
	if (!s->parameters) {
		cli_error("%s", strerror(ENOMEM));
		return DG_EXIT_USAGE;
	}
	return cli_check_output(&s->outputs, json_path);
}

/* The part after: the device's warnings, the signal handlers, the clocks. */
static void session_start(struct cli_session *s)
{
	const struct dg_device_info *info = dg_device_info(s->dev);

	cli_verbose("%s: %s, %llu bytes, %u-byte logical and %u-byte physical sectors", info->path,
		    dg_device_kind_name(info->kind), (unsigned long long)info->size_bytes,
		    info->logical_sector_bytes, info->physical_sector_bytes);
	skip_warnings(&s->warnings, s->skip_code);
	cli_print_warnings(&s->warnings);
	s->warnings_shown = s->warnings.n;
	cli_install_signals();
	s->started_at = time(NULL);
	s->t0_ns = dg_monotonic_ns();
}

int cli_session_begin(struct cli_session *s, const char *device_path, unsigned device_flags,
		      enum dg_engine_kind kind, unsigned qd, uint32_t max_io_bytes,
		      const char *json_path)
{
	int rc;

	rc = session_prepare(s, json_path);
	if (rc)
		return rc;
	rc = cli_open_device(device_path, device_flags, &s->dev, &s->warnings);
	if (rc)
		return rc;
	/* Before any I/O: no output may be the device (or its backing file, or its spec). */
	rc = cli_check_outputs_device(&s->outputs, s->dev);
	if (rc)
		return rc;
	if (qd > 0) {
		rc = cli_open_engine(s->dev, kind, qd, max_io_bytes, &s->engine);
		if (rc)
			return rc;
	}
	session_start(s);
	return DG_EXIT_OK;
}

int cli_session_reopen(struct cli_session *s, const struct dg_device *dev, unsigned device_flags,
		       const char *json_path)
{
	char err[DG_ERRLEN] = "";
	int rc;

	rc = session_prepare(s, json_path);
	if (rc)
		return rc;
	rc = dg_device_reopen(dev, device_flags, &s->dev, &s->warnings, err, sizeof(err));
	if (rc) {
		cli_error("%s", err[0] ? err : strerror(-rc));
		return DG_EXIT_DEVICE;
	}
	session_start(s);
	return DG_EXIT_OK;
}

/* Moves every member of `sections` (stolen) into `doc`. Returns 0 or -ENOMEM. */
static int merge_sections(json_t *doc, json_t *sections)
{
	const char *key;
	json_t *value;
	int rc = 0;

	if (!sections)
		return 0;
	json_object_foreach(sections, key, value)
	{
		if (json_object_set(doc, key, value))
			rc = -ENOMEM;
	}
	json_decref(sections);
	return rc;
}

void cli_session_set(struct cli_session *s, json_t *obj, const char *key, json_t *value)
{
	if (!obj || json_object_set_new(obj, key, value)) {
		if (!obj)
			json_decref(value);
		s->nomem = true;
	}
}

int cli_session_end(struct cli_session *s, json_t *sections, const char *json_path)
{
	char err[DG_ERRLEN] = "";
	bool interrupted = cli_stop != 0;
	struct dg_run run = {
	    .started_at = s->started_at,
	    .device_time_ns = s->engine ? dg_engine_device_time_ns(s->engine) : 0,
	    .elapsed_ns = dg_monotonic_ns() - s->t0_ns,
	    .complete = !interrupted,
	    .parameters = s->parameters,
	};
	json_t *doc = dg_profile_new();
	int rc = 0;

	s->parameters = NULL; /* stolen into the document by dg_profile_set_run() */
	if (!doc) {
		json_decref(run.parameters);
		json_decref(sections);
		rc = -ENOMEM;
	} else {
		json_t *device = dg_profile_device_json(dg_device_info(s->dev));
		if (device && s->rotational_timed >= 0)
			rc |= json_object_set_new(device, "rotational_timed",
						  json_boolean(s->rotational_timed));
		rc |= device ? json_object_set_new(doc, "device", device) : -ENOMEM;
		rc |= dg_profile_set_run(doc, &run);
		rc |= dg_profile_set_warnings(doc, &s->warnings);
		rc |= dg_profile_set_errors(doc, &s->errors);
		/* errors[] lists the first DG_ERRORS_LISTED_MAX ranges; errors_total counts all. */
		if (s->errors.total)
			rc |= json_object_set_new(doc, "errors_total",
						  json_integer((json_int_t)s->errors.total));
		rc |= merge_sections(doc, sections);
	}
	if (s->nomem || s->warnings.nomem || s->errors.nomem)
		rc = -ENOMEM; /* a part, a warning or an I/O error went unrecorded */
	for (size_t i = s->warnings_shown; i < s->warnings.n; i++)
		cli_warn("%s", s->warnings.v[i]);
	s->warnings_shown = s->warnings.n;
	if (s->errors.n) {
		cli_error("%llu I/O error range%s (%llu bytes), the first at byte %llu: %s",
			  (unsigned long long)s->errors.total, s->errors.total == 1 ? "" : "s",
			  (unsigned long long)s->errors.total_bytes,
			  (unsigned long long)s->errors.v[0].offset_bytes, s->errors.v[0].message);
	}
	if (rc) {
		cli_error("cannot build the profile: %s", strerror(ENOMEM));
		json_decref(doc);
		return DG_EXIT_USAGE;
	}
	if (json_path && dg_json_write(doc, json_path, err, sizeof(err))) {
		cli_error("%s", err);
		json_decref(doc);
		return DG_EXIT_USAGE;
	}
	if (s->prometheus_path && dg_prometheus_write(doc, s->prometheus_path, err, sizeof(err))) {
		cli_error("%s", err);
		json_decref(doc);
		return DG_EXIT_USAGE;
	}
	json_decref(doc);
	if (interrupted) {
		cli_warn("interrupted: the profile is partial");
		return DG_EXIT_INTERRUPTED;
	}
	return s->errors.n ? DG_EXIT_IO : DG_EXIT_OK;
}

void cli_session_free(struct cli_session *s)
{
	if (!s)
		return;
	if (s->engine && dg_engine_inflight(s->engine) > 0)
		cli_warn("waiting for the device: %u read%s still in flight (the device does not "
			 "answer); exiting as soon as the kernel hands %s back",
			 dg_engine_inflight(s->engine),
			 dg_engine_inflight(s->engine) == 1 ? "" : "s",
			 dg_engine_inflight(s->engine) == 1 ? "it" : "them");
	dg_engine_close(s->engine);
	s->engine = NULL;
	dg_device_close(s->dev);
	s->dev = NULL;
	dg_warnings_free(&s->warnings);
	dg_errors_free(&s->errors);
	json_decref(s->parameters);
	s->parameters = NULL;
	cli_outputs_forget(&s->outputs);
}

void cli_progress_init(struct cli_progress *p)
{
	memset(p, 0, sizeof(*p));
	p->draw = cli_verbosity > CLI_QUIET && isatty(STDERR_FILENO);
	p->weight = 1;
	p->t0_ns = dg_monotonic_ns();
}

void cli_progress_stage(struct cli_progress *p, double base, double weight)
{
	p->base = base;
	p->weight = weight;
}

dg_progress_fn cli_progress_fn(const struct cli_progress *p)
{
	return p->draw || cli_verbosity >= CLI_VERBOSE ? cli_progress : NULL;
}

/* "45 s", "3 min 20 s", "2 h 05 min". */
static void human_duration(char *buf, size_t len, double s)
{
	if (s < 60)
		snprintf(buf, len, "%.0f s", s);
	else if (s < 3600)
		snprintf(buf, len, "%.0f min %02.0f s", floor(s / 60), fmod(s, 60));
	else
		snprintf(buf, len, "%.0f h %02.0f min", floor(s / 3600), floor(fmod(s, 3600) / 60));
}

void cli_progress(void *arg, const char *phase, double fraction, double eta_s)
{
	struct cli_progress *p = arg;
	uint64_t now = dg_monotonic_ns();
	double elapsed = (double)(now - p->t0_ns) / 1e9, overall;
	char eta[48];

	(void)eta_s; /* device time; the wall clock is what a person waits for */
	if (fraction < 0)
		fraction = 0;
	if (fraction > 1)
		fraction = 1;
	overall = p->base + p->weight * fraction;
	if (overall < p->overall) /* a phase's own estimate may step back; the line does not */
		overall = p->overall;
	p->overall = overall;
	if (cli_verbosity >= CLI_VERBOSE && (!p->phase || strcmp(p->phase, phase))) {
		cli_progress_clear(p);
		cli_verbose("%s: started at %.1f s (%.0f%% of the run)", phase, elapsed,
			    100.0 * overall);
	}
	p->phase = phase;
	if (!p->draw || (p->shown && now - p->last_ns < DG_NS_PER_S / 10))
		return;
	p->last_ns = now;
	/* An ETA once the run has a few percent and a second behind it: earlier it is noise. */
	if (overall >= 0.02 && elapsed >= 1.0) {
		human_duration(eta, sizeof(eta), elapsed * (1 - overall) / overall);
		fprintf(stderr, "\r\033[K%s: %3.0f%% of the run, about %s left", phase,
			100.0 * overall, eta);
	} else {
		fprintf(stderr, "\r\033[K%s: %3.0f%% of the run", phase, 100.0 * overall);
	}
	p->shown = true;
}

void cli_progress_clear(struct cli_progress *p)
{
	if (p->shown)
		fprintf(stderr, "\r\033[K");
	p->shown = false;
}
