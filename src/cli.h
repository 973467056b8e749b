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
#include <stdio.h>
#include <time.h>

#include <jansson.h>

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

/* Long-only option codes shared by the measuring commands (the .val of their longopts entries),
 * so that one helper takes each option wherever it appears; a command's own codes start at
 * CLI_OPT_LOCAL. */
enum cli_opt {
	CLI_OPT_ENGINE = 256,
	CLI_OPT_SEED,
	CLI_OPT_PASSES,
	CLI_OPT_BW_BUDGET,
	CLI_OPT_NO_REFINE,
	CLI_OPT_DISTANCES,
	CLI_OPT_SEEK_SAMPLES,
	CLI_OPT_SEEK_BUDGET,
	CLI_OPT_NO_ROTATION,
	CLI_OPT_NO_SPANS,
	CLI_OPT_PROMETHEUS,
	CLI_OPT_LOCAL,
};

/* --engine NAME into *kind; one line prefixed with `cmd` and DG_EXIT_USAGE when unknown. */
int cli_engine_option(const char *cmd, const char *name, enum dg_engine_kind *kind);

/* Builds a getopt_long short-option string from a longopts table (each entry's .val is its
 * short letter, or >= 256 for long-only options). */
void cli_shortopts(const struct option *longopts, char *buf, size_t len);

/*
 * A measuring command's life: open the device and engine, measure, write one profile.
 * Usage: cli_session_begin(); add every option in force to s.parameters; measure with s.engine,
 * adding I/O errors to s.errors and conditions to s.warnings, polling cli_stop; then
 * cli_session_end() with the measured sections; then cli_session_free().
 */
struct cli_session {
	struct dg_device *dev;
	struct dg_engine *engine; /* NULL when the command asked for none (qd == 0) */
	struct dg_warnings warnings;
	struct dg_errors errors;
	time_t started_at;
	uint64_t t0_ns;		     /* CLOCK_MONOTONIC at begin */
	json_t *parameters;	     /* owned: every option in force, added by the command */
	const char *prometheus_path; /* --prometheus FILE: set after begin; NULL = none */
};

/* Checks that `json_path` (may be NULL or "-") can be written (its directory exists and is
 * writable) before anything is measured, opens the device (DG_DEVICE_* flags) and, when qd > 0,
 * an engine; installs the signal handlers; prints the device's warnings. Returns DG_EXIT_*. */
int cli_session_begin(struct cli_session *s, const char *device_path, unsigned device_flags,
		      enum dg_engine_kind kind, unsigned qd, uint32_t max_io_bytes,
		      const char *json_path);
/* Assembles the profile: schema, tool, device, run (complete = !cli_stop), warnings, errors, and
 * each member of `sections` ("bandwidth", "seek", ...; stolen, may be NULL); writes it to
 * `json_path` when not NULL (atomically; "-" = stdout) and its metrics to s->prometheus_path
 * when set (atomically, node_exporter's textfile format); prints errors and warnings that arose
 * during the run on stderr. Returns DG_EXIT_INTERRUPTED when interrupted, DG_EXIT_IO when
 * s->errors is not empty, DG_EXIT_USAGE when the output could not be written, else DG_EXIT_OK. */
int cli_session_end(struct cli_session *s, json_t *sections, const char *json_path);
/* Closes the engine and device, frees everything. Accepts a half-begun session. */
void cli_session_free(struct cli_session *s);

/* Checks before a run that `path` (NULL and "-" pass) can be created: one line and
 * DG_EXIT_USAGE when its directory is missing or not writable. */
int cli_check_output(const char *path);

/* A dg_progress_fn for terminals: one line on stderr rewritten in place; `arg` is a bool set to
 * true once something was drawn. cli_progress_clear() erases the line when one was drawn. */
void cli_progress(void *arg, const char *phase, double fraction, double eta_s);
void cli_progress_clear(bool *shown);

/* For getopt_long's '?' (opterr = 0): one line naming the unknown option or the one missing
 * its argument, pointing at --help (bad input gets one line, no more). Returns DG_EXIT_USAGE. */
int cli_bad_option(const char *cmd, char **argv, const char *shortopts);
/* After the options: exactly one DEVICE operand must remain; sets *device. Else one line and
 * DG_EXIT_USAGE. */
int cli_one_device(const char *cmd, int argc, char **argv, const char **device);

/*
 * `CMD DEV... --json-dir DIR` (cli_multi.c): when argv holds --json-dir, runs `run` once per
 * device operand in its own process, all in parallel, each as `CMD OPTIONS DEV --json
 * DIR/<name>.json` with its output in DIR/<name>.txt and .err, prints one line per device and
 * returns the worst exit status (ok < I/O < device < interrupted < usage). Returns -1 when argv
 * has no --json-dir (the caller goes on with one device). `longopts` is the command's table.
 */
int cli_multi_device(const char *cmd, int argc, char **argv, const struct option *longopts,
		     int (*run)(int argc, char **argv));

/* Commands: each returns a DG_EXIT_* code. argv[0] is the command name. */
int cmd_probe(int argc, char **argv);
int cmd_read(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_bandwidth(int argc, char **argv);
int cmd_seek(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_summary(int argc, char **argv);

/* "4.00 TB"-style figure of a byte count (powers of 10, like MB/s) into buf. */
void cli_human_bytes(char *buf, size_t len, uint64_t bytes);
/* The nominal spindle class (4200, 5400, 5900, 7200, 10000, 15000 rpm) nearest `rpm`. */
unsigned cli_rpm_class(double rpm);

/* Option texts of the seek measurement, shared by `seek` and `profile` (NULL = default). */
struct cli_seek_opts {
	const char *distances, *samples, *budget, *block, *seed;
	bool no_rotation, no_spans;
};
struct dg_seek_params;
/* Turns the texts into checked parameters for `info` (sizes need its sector). One line prefixed
 * with `cmd` and DG_EXIT_USAGE on bad input (cmd_seek.c). */
int cli_seek_params(const char *cmd, const struct cli_seek_opts *o,
		    const struct dg_device_info *info, struct dg_seek_params *p);
/* Takes getopt's `c` when it is a seek option (CLI_OPT_DISTANCES, CLI_OPT_SEEK_SAMPLES,
 * CLI_OPT_SEEK_BUDGET, 'b' the block size, CLI_OPT_NO_ROTATION, CLI_OPT_NO_SPANS, CLI_OPT_SEED):
 * stores `arg` and returns true; false for any other option. */
bool cli_seek_option(int c, const char *arg, struct cli_seek_opts *o);

/* Option texts of the bandwidth measurement, shared by `bandwidth` and `profile`. */
struct cli_bandwidth_opts {
	const char *samples, *sample_size, *range, *passes, *budget, *qd, *seed;
	bool no_refine;
};
struct dg_bandwidth_params;
/* Texts to checked, resolved parameters (cmd_bandwidth.c), like cli_seek_params(). */
int cli_bandwidth_params(const char *cmd, const struct cli_bandwidth_opts *o,
			 const struct dg_device_info *info, struct dg_bandwidth_params *p);
/* Like cli_seek_option() for the curve: 'n' samples, 's' sample size, 'r' range, 'q' queue
 * depth, CLI_OPT_PASSES, CLI_OPT_BW_BUDGET, CLI_OPT_NO_REFINE, CLI_OPT_SEED. */
bool cli_bandwidth_option(int c, const char *arg, struct cli_bandwidth_opts *o);

struct dg_bandwidth_result;
/* The human summary of a bandwidth run: outer/inner MB/s and their ratio, the zone count and a
 * zone table (cmd_bandwidth.c; `diskgeo profile` reuses it). */
void cli_bandwidth_summary(FILE *out, const struct dg_bandwidth_result *r);

/* The human summary of a seek run: rpm (and its nominal class), track-to-track, average and
 * full-stroke seeks, a few points of the curve, the span IOPS table. */
struct dg_seek_result;
void cli_seek_summary(FILE *out, const struct dg_seek_result *r);

#endif
