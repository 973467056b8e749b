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
