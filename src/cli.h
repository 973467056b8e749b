/* SPDX-License-Identifier: MIT */
/*
 * What the command-line front end shares between commands. Only the CLI (main.c, cli.c,
 * cmd_*.c) talks to the user; library modules never print.
 */
#ifndef DISKGEO_CLI_H
#define DISKGEO_CLI_H

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>

#include "diskgeo/device.h"
#include "diskgeo/diskgeo.h"
#include "diskgeo/engine.h"

/* Set by SIGINT/SIGTERM once cli_install_signals() ran; measurements poll it and stop early. */
extern volatile sig_atomic_t cli_stop;
void cli_install_signals(void);

/* "diskgeo: <message>" on stderr, one line. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "diskgeo: warning: <message>" on stderr, one line. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints each warning with cli_warn(). */
void cli_print_warnings(const struct dg_warnings *w);

/* Opens DEVICE, printing one line on failure. Returns DG_EXIT_OK, DG_EXIT_DEVICE (could not open
 * or probe) or DG_EXIT_USAGE (bad sim: spec). */
int cli_open_device(const char *path, unsigned flags, struct dg_device **dev,
		    struct dg_warnings *warnings);

/* Opens an engine, reporting a psync fallback once on stderr. Returns a DG_EXIT_* code. */
int cli_open_engine(struct dg_device *dev, enum dg_engine_kind kind, unsigned qd,
		    uint32_t max_io_bytes, struct dg_engine **e);

/* Builds a getopt_long short-option string from a longopts table (each entry's .val is its
 * short letter, or >= 256 for long-only options). */
void cli_shortopts(const struct option *longopts, char *buf, size_t len);

/* Commands: each returns a DG_EXIT_* code. argv[0] is the command name. */
int cmd_probe(int argc, char **argv);
int cmd_read(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_bandwidth(int argc, char **argv);
int cmd_seek(int argc, char **argv);
int cmd_profile(int argc, char **argv);

#endif
