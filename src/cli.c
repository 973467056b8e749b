/* SPDX-License-Identifier: MIT */
/* Shared command-line helpers: messages, signals, device and engine opening. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "diskgeo/profile.h"
#include "diskgeo/prometheus.h"

volatile sig_atomic_t cli_stop;

static void on_signal(int sig)
{
	cli_stop = sig;
}

void cli_install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a blocking wait returns EINTR so the measurement sees the flag at once. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static void vmessage(const char *prefix, const char *fmt, va_list ap)
{
	char line[DG_ERRLEN + 128];

	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "diskgeo: %s%s\n", prefix, line);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("", fmt, ap);
	va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("warning: ", fmt, ap);
	va_end(ap);
}

void cli_print_warnings(const struct dg_warnings *w)
{
	for (size_t i = 0; i < w->n; i++)
		cli_warn("%s", w->v[i]);
}

int cli_open_device(const char *path, unsigned flags, struct dg_device **dev,
		    struct dg_warnings *warnings)
{
	char err[DG_ERRLEN] = "";
	int rc = dg_device_open(path, flags, dev, warnings, err, sizeof(err));

	if (rc == 0)
		return DG_EXIT_OK;
	cli_error("%s", err[0] ? err : strerror(-rc));
	/* A sim: spec that does not parse is bad input, not a device that failed. */
	if (!strncmp(path, "sim:", 4) && rc == -EINVAL)
		return DG_EXIT_USAGE;
	return DG_EXIT_DEVICE;
}

int cli_open_engine(struct dg_device *dev, enum dg_engine_kind kind, unsigned qd,
		    uint32_t max_io_bytes, struct dg_engine **e)
{
	struct dg_engine_config cfg = {.kind = kind, .qd = qd, .max_io_bytes = max_io_bytes};
	char err[DG_ERRLEN] = "";
	bool fell_back = false;
	int rc = dg_engine_open(dev, &cfg, e, &fell_back, err, sizeof(err));

	if (rc) {
		cli_error("%s", err[0] ? err : strerror(-rc));
		/* -EINVAL: an engine that cannot run this device, or a bad queue depth/size. */
		return rc == -EINVAL ? DG_EXIT_USAGE : DG_EXIT_DEVICE;
	}
	if (fell_back)
		cli_warn("%s", err);
	return DG_EXIT_OK;
}

void cli_shortopts(const struct option *longopts, char *buf, size_t len)
{
	size_t n = 0;

	for (const struct option *o = longopts; o->name && n + 3 < len; o++) {
		if (o->val <= 0 || o->val >= 256)
			continue;
		buf[n++] = (char)o->val;
		if (o->has_arg == required_argument)
			buf[n++] = ':';
	}
	buf[n] = '\0';
}

/* ---- output checks and the measuring session ---- */

int cli_check_output(const char *path)
{
	struct stat st;
	char *copy, *slash;
	const char *dir;
	int rc = DG_EXIT_OK;

	if (!path || !strcmp(path, "-"))
		return DG_EXIT_OK;
	if (!*path) {
		cli_error("empty output file name");
		return DG_EXIT_USAGE;
	}
	if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		cli_error("%s: is a directory", path);
		return DG_EXIT_USAGE;
	}
	copy = strdup(path);
	if (!copy) {
		cli_error("%s: %s", path, strerror(ENOMEM));
		return DG_EXIT_USAGE;
	}
	slash = strrchr(copy, '/');
	if (!slash)
		dir = ".";
	else if (slash == copy)
		dir = "/";
	else {
		*slash = '\0';
		dir = copy;
	}
	/* access(2) also reports a read-only file system (EROFS), which root cannot bypass. */
	if (stat(dir, &st)) {
		cli_error("%s: directory %s: %s", path, dir, strerror(errno));
		rc = DG_EXIT_USAGE;
	} else if (!S_ISDIR(st.st_mode)) {
		cli_error("%s: %s is not a directory", path, dir);
		rc = DG_EXIT_USAGE;
	} else if (access(dir, W_OK | X_OK)) {
		cli_error("%s: cannot write into %s: %s", path, dir, strerror(errno));
		rc = DG_EXIT_USAGE;
	}
	free(copy);
	return rc;
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * DG_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Warnings already shown by cli_session_begin(); cli_session_end() prints only newer ones. One
 * session runs per process, so a file-scope count suffices. */
static size_t session_warnings_shown;

int cli_session_begin(struct cli_session *s, const char *device_path, unsigned device_flags,
		      enum dg_engine_kind kind, unsigned qd, uint32_t max_io_bytes,
		      const char *json_path)
{
	int rc;

	memset(s, 0, sizeof(*s));
	session_warnings_shown = 0;
	s->parameters = json_object();
	if (!s->parameters) {
		cli_error("%s", strerror(ENOMEM));
		return DG_EXIT_USAGE;
	}
	rc = cli_check_output(json_path);
	if (rc)
		return rc;
	rc = cli_open_device(device_path, device_flags, &s->dev, &s->warnings);
	if (rc)
		return rc;
	if (qd > 0) {
		rc = cli_open_engine(s->dev, kind, qd, max_io_bytes, &s->engine);
		if (rc)
			return rc;
	}
	cli_print_warnings(&s->warnings);
	session_warnings_shown = s->warnings.n;
	cli_install_signals();
	s->started_at = time(NULL);
	s->t0_ns = monotonic_ns();
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

int cli_session_end(struct cli_session *s, json_t *sections, const char *json_path)
{
	char err[DG_ERRLEN] = "";
	bool interrupted = cli_stop != 0;
	struct dg_run run = {
	    .started_at = s->started_at,
	    .device_time_ns = s->engine ? dg_engine_device_time_ns(s->engine) : 0,
	    .elapsed_ns = monotonic_ns() - s->t0_ns,
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
		rc |= device ? json_object_set_new(doc, "device", device) : -ENOMEM;
		rc |= dg_profile_set_run(doc, &run);
		rc |= dg_profile_set_warnings(doc, &s->warnings);
		rc |= dg_profile_set_errors(doc, &s->errors);
		rc |= merge_sections(doc, sections);
	}
	for (size_t i = session_warnings_shown; i < s->warnings.n; i++)
		cli_warn("%s", s->warnings.v[i]);
	session_warnings_shown = s->warnings.n;
	if (s->errors.n) {
		uint64_t bytes = 0;
		for (size_t i = 0; i < s->errors.n; i++)
			bytes += s->errors.v[i].length_bytes;
		cli_error("%zu I/O error range%s (%llu bytes), the first at byte %llu: %s",
			  s->errors.n, s->errors.n == 1 ? "" : "s", (unsigned long long)bytes,
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
	dg_engine_close(s->engine);
	s->engine = NULL;
	dg_device_close(s->dev);
	s->dev = NULL;
	dg_warnings_free(&s->warnings);
	dg_errors_free(&s->errors);
	json_decref(s->parameters);
	s->parameters = NULL;
}

void cli_progress(void *arg, const char *phase, double fraction, double eta_s)
{
	bool *shown = arg;

	if (eta_s >= 0)
		fprintf(stderr, "\r%s: %3.0f%%, about %.0f s left   ", phase, 100.0 * fraction,
			eta_s);
	else
		fprintf(stderr, "\r%s: %3.0f%%   ", phase, 100.0 * fraction);
	*shown = true;
}

void cli_progress_clear(bool *shown)
{
	if (*shown)
		fprintf(stderr, "\r\033[K");
	*shown = false;
}

void cli_human_bytes(char *buf, size_t len, uint64_t bytes)
{
	static const char *const unit[] = {"B", "kB", "MB", "GB", "TB", "PB"};
	double v = (double)bytes;
	size_t u = 0;

	while (v >= 1000.0 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1000.0;
		u++;
	}
	snprintf(buf, len, u ? "%.2f %s" : "%.0f %s", v, unit[u]);
}

unsigned cli_rpm_class(double rpm)
{
	static const unsigned classes[] = {4200, 5400, 5900, 7200, 10000, 15000};
	unsigned best = classes[0];

	for (size_t i = 1; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (fabs(rpm - classes[i]) < fabs(rpm - best))
			best = classes[i];
	return best;
}

int cli_engine_option(const char *cmd, const char *name, enum dg_engine_kind *kind)
{
	if (!dg_engine_kind_parse(name, kind))
		return DG_EXIT_OK;
	cli_error("%s: unknown engine '%s' (io_uring, psync, sim, auto)", cmd, name);
	return DG_EXIT_USAGE;
}

int cli_bad_option(const char *cmd, char **argv, const char *shortopts)
{
	/* getopt_long sets optopt to the option's value when its argument is missing, and to 0
	 * (an unknown long option) or the unknown letter otherwise. */
	if (optopt && (optopt >= 256 || strchr(shortopts, optopt)))
		cli_error("%s: option '%s' needs an argument (see 'diskgeo %s --help')", cmd,
			  argv[optind - 1], cmd);
	else
		cli_error("%s: unknown option '%s' (see 'diskgeo %s --help')", cmd,
			  argv[optind - 1], cmd);
	return DG_EXIT_USAGE;
}

int cli_one_device(const char *cmd, int argc, char **argv, const char **device)
{
	if (optind == argc - 1) {
		*device = argv[optind];
		return DG_EXIT_OK;
	}
	if (optind >= argc)
		cli_error("%s: DEVICE is missing (see 'diskgeo %s --help')", cmd, cmd);
	else
		cli_error("%s: one DEVICE expected, got '%s' too", cmd, argv[optind + 1]);
	return DG_EXIT_USAGE;
}
