/* SPDX-License-Identifier: MIT */
/* Shared command-line helpers: messages, signals, device and engine opening. */
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
	/* A closed terminal or a hung-up ssh session: stop like SIGTERM, with a partial profile. */
	sigaction(SIGHUP, &sa, NULL);
}

size_t cli_escape(char *dst, size_t len, const char *src)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;
	char esc[8];

	for (const char *p = src; *p;) {
		unsigned char c = (unsigned char)*p;
		size_t k = dg_utf8_len(p), e = 0;

		if (c == '\n' || c == '\t' || c == '\r') {
			esc[e++] = '\\';
			esc[e++] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
		} else if (k == 0 || c < 0x20 || c == 0x7f) {
			/* control characters and bytes that are not UTF-8: \xHH */
			esc[e++] = '\\';
			esc[e++] = 'x';
			esc[e++] = hex[c >> 4];
			esc[e++] = hex[c & 15];
		} else if (k == 2 && c == 0xc2 && (unsigned char)p[1] < 0xa0) {
			/* C1 controls, U+0080..U+009F (CSI is U+009B): \u00HH */
			memcpy(esc, "\\u00", 4);
			e = 4;
			esc[e++] = hex[(unsigned char)p[1] >> 4];
			esc[e++] = hex[(unsigned char)p[1] & 15];
		}
		if (!e) {
			memcpy(esc, p, k);
			e = k;
		}
		p += k ? k : 1;
		if (len && n + e < len)
			memcpy(dst + n, esc, e);
		else if (len && n < len)
			len = n + 1; /* cut at a whole character: nothing more fits */
		n += e;
	}
	if (len)
		dst[n < len ? n : len - 1] = '\0';
	return n;
}

/* One line on stderr, written whole (a long path does not cut off the reason after it), its
 * control characters escaped (see cli_escape()). */
static void vmessage(const char *prefix, const char *fmt, va_list ap)
{
	char line[DG_ERRLEN + 128], *big = NULL, *safe;
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n >= (int)sizeof(line)) {
		big = malloc((size_t)n + 1);
		if (big)
			vsnprintf(big, (size_t)n + 1, fmt, again);
	}
	va_end(again);
	const char *text = big ? big : line;
	size_t need = cli_escape(NULL, 0, text) + 1;
	safe = malloc(need);
	if (safe)
		cli_escape(safe, need, text);
	fprintf(stderr, "diskgeo: %s%s\n", prefix, safe ? safe : text);
	free(safe);
	free(big);
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
	cli_verbose("engine %s, queue depth %u", dg_engine_name(*e), dg_engine_qd(*e));
	/* No wait in the kernel outlasts a stop request by more than DG_ENGINE_STOP_POLL_MS. */
	dg_engine_set_stop(*e, &cli_stop);
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
	if (n + 1 < len)
		buf[n++] = 'J'; /* cli_common_option(): --json - */
	buf[n] = '\0';
}

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

/* ---- options and streams every command shares ---- */

int cli_verbosity;

void cli_verbose(const char *fmt, ...)
{
	va_list ap;

	if (cli_verbosity < CLI_VERBOSE)
		return;
	va_start(ap, fmt);
	vmessage("", fmt, ap);
	va_end(ap);
}

bool cli_common_option(int c, const char **json)
{
	switch (c) {
	case 'J':
		*json = "-";
		return true;
	case 'q':
		cli_verbosity = CLI_QUIET;
		return true;
	case 'v':
		cli_verbosity = CLI_VERBOSE;
		return true;
	default:
		return false;
	}
}

bool cli_io_option(const char *cmd, int c, const char *arg, struct cli_io_opts *o, int *rc)
{
	*rc = DG_EXIT_OK;
	switch (c) {
	case 'j':
		o->json = arg;
		return true;
	case CLI_OPT_CSV:
		o->csv = arg;
		return true;
	case CLI_OPT_PROMETHEUS:
		o->prometheus = arg;
		return true;
	case CLI_OPT_ENGINE:
		*rc = cli_engine_option(cmd, arg, &o->kind);
		return true;
	default:
		return cli_common_option(c, &o->json);
	}
}

void cli_getopt_begin(const struct option *longopts, char *shortopts, size_t len)
{
	cli_shortopts(longopts, shortopts, len);
	optind = 1;
	opterr = 0;
}

static bool is_stdout(const char *path)
{
	return path && !strcmp(path, "-");
}

FILE *cli_summary_out(const char *json, const char *csv)
{
	if (cli_verbosity <= CLI_QUIET)
		return NULL;
	return is_stdout(json) || is_stdout(csv) ? stderr : stdout;
}

int cli_check_streams(const char *cmd, const char *json, const char *csv)
{
	if (!is_stdout(json) || !is_stdout(csv))
		return DG_EXIT_OK;
	cli_error("%s: --json - and --csv - would both write to standard output; send one to a "
		  "file",
		  cmd);
	return DG_EXIT_USAGE;
}

void cli_human_position(char *buf, size_t len, uint64_t bytes, uint64_t capacity)
{
	char b[32];

	dg_fmt_bytes(b, sizeof(b), bytes);
	if (capacity)
		snprintf(buf, len, "%s (%.1f%%)", b, 100.0 * (double)bytes / (double)capacity);
	else
		snprintf(buf, len, "%s", b);
}

unsigned cli_rpm_class(double rpm)
{
	static const unsigned classes[] = {4200, 5400, 5900, 7200, 10000, 15000};
	unsigned best = classes[0];

	for (size_t i = 1; i < ARRAY_SIZE(classes); i++)
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
	const char *arg = argv[optind - 1];
	const char *eq = strchr(arg, '=');

	/* getopt_long sets optopt to the option's value when its argument is missing or when a
	 * long option that takes none was given one ("--write=yes"), and to 0 (an unknown long
	 * option) or the unknown letter otherwise. Only the latter has "=VALUE" in the word. */
	if (optopt && !strncmp(arg, "--", 2) && eq)
		cli_error("%s: option '%.*s' takes no argument (see 'diskgeo %s --help')", cmd,
			  (int)(eq - arg), arg, cmd);
	else if (optopt && (optopt >= 256 || strchr(shortopts, optopt)))
		cli_error("%s: option '%s' needs an argument (see 'diskgeo %s --help')", cmd, arg,
			  cmd);
	else
		cli_error("%s: unknown option '%s' (see 'diskgeo %s --help')", cmd, arg, cmd);
	return DG_EXIT_USAGE;
}

int cli_time_option(const char *cmd, const char *opt, const char *text, uint64_t *ns)
{
	int rc = dg_parse_time(text, ns);

	if (rc == -ERANGE)
		cli_error("%s: %s '%s' is too large (at most %" PRIu64 " s, about %" PRIu64
			  " years)",
			  cmd, opt, text, (uint64_t)(DG_TIME_MAX_NS / DG_NS_PER_S),
			  (uint64_t)(DG_TIME_MAX_NS / DG_NS_PER_S / (365ull * 86400)));
	else if (rc || *ns == 0)
		cli_error("%s: %s '%s' is not a time above 0: use " DG_PARSE_TIME_FORMS
			  " (60s, 5m)",
			  cmd, opt, text);
	else
		return DG_EXIT_OK;
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

void cli_rotation_verdict(struct cli_session *s, const struct dg_seek_result *r)
{
	int flag = dg_device_info(s->dev)->rotational;

	if (r->rotating)
		s->rotational_timed = 1;
	else if (r->complete)
		s->rotational_timed = 0;
	else
		return; /* stopped before the timing could say */
	if (!r->rotating && flag == 1)
		dg_warnings_add(&s->warnings,
				"the device says it rotates, but access times show no "
				"rotation (a cache or a layer in between?)");
	else if (r->rotating && flag == 0)
		dg_warnings_add(
		    &s->warnings,
		    "the device says it does not rotate, but its access times show a "
		    "%.0f rpm rotation: a layer in between (loop, dm, md, a USB bridge, "
		    "a VM) hides a spinning disk",
		    r->rpm);
}
