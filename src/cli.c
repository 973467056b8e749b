/* SPDX-License-Identifier: MIT */
/* Shared command-line helpers: messages, signals, device and engine opening. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

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
		return DG_EXIT_DEVICE;
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
