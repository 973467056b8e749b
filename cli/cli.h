/* SPDX-License-Identifier: MIT */
/*
 * What the command-line front end shares between commands. Only the CLI (main.c, cli.c,
 * cmd_*.c) talks to the user; library modules never print.
 */
#ifndef DISKGEO_CLI_H
#define DISKGEO_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include <jansson.h>

#include "diskgeo/device.h"
#include "diskgeo/seek.h"
#include "diskgeo/diskgeo.h"
#include "diskgeo/engine.h"
#include "util.h"
#include "diskgeo/profile.h"

/* Set by SIGINT/SIGTERM/SIGHUP once cli_install_signals() ran; measurements poll it. */
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
	CLI_OPT_SWEEP_SEQ_BLOCKS,
	CLI_OPT_SWEEP_RAND_BLOCKS,
	CLI_OPT_SWEEP_QDS,
	CLI_OPT_SWEEP_BUDGET,
	CLI_OPT_SWEEP_SEQ_BYTES,
	CLI_OPT_SWEEP_IOS,
	CLI_OPT_SWEEP_RMW_IOS,
	CLI_OPT_CSV,
	CLI_OPT_GEOMETRY_BUDGET,
	CLI_OPT_GEOMETRY_PLACES,
	CLI_OPT_GEOMETRY_RANGE,
	CLI_OPT_LOCAL,
};

/* --engine NAME into *kind; one line prefixed with `cmd` and DG_EXIT_USAGE when unknown. */
int cli_engine_option(const char *cmd, const char *name, enum dg_engine_kind *kind);

/* Builds a getopt_long short-option string from a longopts table (each entry's .val is its
 * short letter, or >= 256 for long-only options), plus 'J' (see cli_common_option()). */
void cli_shortopts(const struct option *longopts, char *buf, size_t len);

/* The outputs a command checked before its run (cli_check_output()), to check again against
 * the device once it is open. Zeroed to start; cli_outputs_forget() frees it. */
struct cli_outputs {
	char *paths[8];
	size_t n;
	struct dg_output_avoid avoid; /* valid when have_avoid */
	bool have_avoid;
};

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
	int rotational_timed;	     /* what timing says: 1 rotates, 0 does not, -1 not measured */
	const char *prometheus_path; /* --prometheus FILE: set after begin; NULL = none */
	bool nomem;		    /* a part of the profile could not be built (cli_session_set) */
	struct cli_outputs outputs; /* checked before the run: cli_check_output(&s->outputs, ...) */
	size_t warnings_shown;	    /* warnings already printed: the end prints only newer ones */
	const char *skip_code;	    /* device warnings of this code are left out (see below) */
};

/* json_object_set_new(obj, key, value) (value stolen, may be NULL) whose failure is remembered
 * in s->nomem: cli_session_end() then refuses a document that would lack the key. */
void cli_session_set(struct cli_session *s, json_t *obj, const char *key, json_t *value);

/* Timing decides, the kernel's flag only hints: records what the seek run's timing says about
 * rotation (device.rotational_timed) and warns when it disagrees with the flag, either way. */
void cli_rotation_verdict(struct cli_session *s, const struct dg_seek_result *r);

/* Checks that `json_path` (may be NULL or "-") can be written (cli_check_output()) before
 * anything is measured, opens the device (DG_DEVICE_* flags), checks that no output is the device
 * (cli_check_outputs_device()) and, when qd > 0,
 * an engine; installs the signal handlers; prints the device's warnings. Returns DG_EXIT_*. */
int cli_session_begin(struct cli_session *s, const char *device_path, unsigned device_flags,
		      enum dg_engine_kind kind, unsigned qd, uint32_t max_io_bytes,
		      const char *json_path);
/* Like cli_session_begin() without an engine, but the device is `dev` opened once more with
 * `device_flags` through its descriptor (dg_device_reopen), never through its path again. */
int cli_session_reopen(struct cli_session *s, const struct dg_device *dev, unsigned device_flags,
		       const char *json_path);
/* Assembles the profile: schema, tool, device, run (complete = !cli_stop), warnings, errors, and
 * each member of `sections` ("bandwidth", "seek", ...; stolen, may be NULL); writes it to
 * `json_path` when not NULL (atomically; "-" = stdout) and its metrics to s->prometheus_path
 * when set (atomically, node_exporter's textfile format); prints errors and warnings that arose
 * during the run on stderr. Returns DG_EXIT_INTERRUPTED when interrupted, DG_EXIT_IO when
 * s->errors is not empty, DG_EXIT_USAGE when the output could not be written, else DG_EXIT_OK. */
int cli_session_end(struct cli_session *s, json_t *sections, const char *json_path);
/* Marks every warning in s->warnings as shown (the caller printed them), so that
 * cli_session_end() does not print them again. */
void cli_session_warnings_shown(struct cli_session *s);
/* Before cli_session_begin() (after zeroing `s`): leave out device warnings with this code
 * (dg_warning_code()), for a command they do not concern (read and the curve warning of a flat
 * device). */
void cli_session_skip_warning(struct cli_session *s, const char *code);
/* Closes the engine and device, frees everything. Accepts a half-begun session. */
void cli_session_free(struct cli_session *s);

/* Checks before a run that `path` (NULL passes; "-" is standard output) can be written
 * afterwards (dg_output_check(): its directory exists and takes a new file, its name fits, a
 * descriptor is open for writing, no directory, socket or block device, and, once a device is
 * known, not the device): one line and DG_EXIT_USAGE when not. The path is remembered in `o`
 * for cli_check_outputs_device(). */
int cli_check_output(struct cli_outputs *o, const char *path);
/* Checks every output remembered in `o` against what `dev` reads (the device, a loop device's
 * backing file, a sim: spec file) and makes later cli_check_output() calls do the same;
 * cli_session_begin() calls it once the device is open. Returns DG_EXIT_*. */
int cli_check_outputs_device(struct cli_outputs *o, const struct dg_device *dev);
/* The same against `avoid` (e.g. the spec file `diskgeo model` reads). */
int cli_check_outputs_avoid(struct cli_outputs *o, const struct dg_output_avoid *avoid);
/* Forgets the remembered outputs (cli_session_free() calls it). */
void cli_outputs_forget(struct cli_outputs *o);

/* Copies `src` into `dst` (`len` bytes, always terminated when len > 0, cut at a whole
 * character) with everything that could steer a terminal made visible: \n \t \r, other C0
 * controls and DEL as \xHH, C1 controls as \u00HH, bytes that are not UTF-8 as \xHH. For every
 * human line printed from outside data (paths, sysfs strings, spec names); cli_error() and
 * cli_warn() apply it to their whole line. Returns the length the escaped text needs. */
size_t cli_escape(char *dst, size_t len, const char *src);

/* How much the CLI says besides its results: -q (warnings and errors only), default, -v
 * (per-phase detail on stderr). Set by cli_common_option(). */
enum cli_verbosity { CLI_QUIET = -1, CLI_NORMAL = 0, CLI_VERBOSE = 1 };
extern int cli_verbosity;
/* "diskgeo: <message>" on stderr when -v was given. */
void cli_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Options every command takes: -J (the short form of --json -, as lsblk's), -q/--quiet and
 * -v/--verbose. Put CLI_COMMON_LONGOPTS into a command's longopts table (cli_shortopts() adds
 * the 'J'); cli_common_option() takes getopt's `c` when it is one of them (setting *json to "-"
 * for -J) and returns true. */
#define CLI_COMMON_LONGOPTS                                                                        \
	{"quiet", no_argument, NULL, 'q'},                                                         \
	{                                                                                          \
		"verbose", no_argument, NULL, 'v'                                                  \
	}
bool cli_common_option(int c, const char **json);
/* The end of every command's longopts table: --help (-h) and the terminator. */
/* clang-format off */
#define CLI_LONGOPTS_END {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}
/* clang-format on */

/* Where the results go and what reads the device, as the measuring commands share them:
 * --json FILE|- (-j; -J for "-"), --csv FILE|-, --prometheus FILE, --engine NAME. Put the
 * CLI_*_LONGOPT entries a command takes into its longopts table. */
struct cli_io_opts {
	const char *json, *csv, *prometheus;
	enum dg_engine_kind kind; /* start it at DG_ENGINE_AUTO */
};
/* clang-format off */
#define CLI_JSON_LONGOPT       {"json", required_argument, NULL, 'j'}
#define CLI_CSV_LONGOPT        {"csv", required_argument, NULL, CLI_OPT_CSV}
#define CLI_PROMETHEUS_LONGOPT {"prometheus", required_argument, NULL, CLI_OPT_PROMETHEUS}
#define CLI_SEED_LONGOPT       {"seed", required_argument, NULL, CLI_OPT_SEED}
#define CLI_ENGINE_LONGOPT     {"engine", required_argument, NULL, CLI_OPT_ENGINE}
/* clang-format on */
/* Takes getopt's `c` when it is one of those or a common option (cli_common_option()): true,
 * with *rc DG_EXIT_USAGE (one line printed, prefixed with `cmd`) for a bad engine name and
 * DG_EXIT_OK otherwise; false for any other option. */
bool cli_io_option(const char *cmd, int c, const char *arg, struct cli_io_opts *o, int *rc);
/* Before a command's getopt_long loop: its short options from `longopts` (cli_shortopts()),
 * getopt reset for a new argv, getopt's own messages off (cli_bad_option() says one line). */
void cli_getopt_begin(const struct option *longopts, char *shortopts, size_t len);

/* Where the human summary goes: stdout when no machine output (`json`, `csv`: NULL, a file or
 * "-") takes it, stderr otherwise; NULL with -q. With both on stdout, one line and
 * DG_EXIT_USAGE from cli_check_streams() (call it after the options). */
FILE *cli_summary_out(const char *json, const char *csv);
int cli_check_streams(const char *cmd, const char *json, const char *csv);

/*
 * The progress of a whole run, one line on stderr rewritten in place (on a terminal, not with
 * -q): the phase, the overall percent and an ETA in wall-clock time (from the wall time spent so
 * far, so that a sim: run in virtual time shows seconds, not device minutes). A run of several
 * measurements gives each its share with cli_progress_stage() before it starts. cli_progress is a
 * dg_progress_fn taking a struct cli_progress *; cli_progress_clear() erases the line.
 */
struct cli_progress {
	bool shown;	   /* a line is on the terminal */
	bool draw;	   /* stderr is a terminal and not -q */
	const char *phase; /* the last phase seen (for -v) */
	double base, weight, overall;
	uint64_t t0_ns, last_ns;
};
void cli_progress_init(struct cli_progress *p);
void cli_progress_stage(struct cli_progress *p, double base, double weight);
void cli_progress(void *arg, const char *phase, double fraction, double eta_s);
void cli_progress_clear(struct cli_progress *p);
/* The callback to hand a measurement: cli_progress when it draws or -v reports, else NULL. */
dg_progress_fn cli_progress_fn(const struct cli_progress *p);

/* For getopt_long's '?' (opterr = 0): one line naming the unknown option or the one missing
 * its argument, pointing at --help (bad input gets one line, no more). Returns DG_EXIT_USAGE. */
int cli_bad_option(const char *cmd, char **argv, const char *shortopts);
/* `opt` (e.g. "--time-budget") given as `text`: a time above 0 into *ns. Else one line saying
 * it is no time, 0, or too large (with the maximum), and DG_EXIT_USAGE. */
int cli_time_option(const char *cmd, const char *opt, const char *text, uint64_t *ns);
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
/* cmd_geometry.c: the command, and its options and summary (also for profile --geometry). */
int cmd_geometry(int argc, char **argv);
struct dg_geometry_params;
struct dg_geometry_result;
/* Option texts of the geometry, shared by `geometry` and `profile --geometry`. */
struct cli_geometry_opts {
	const char *budget, *places, *range, *seed;
};
/* Takes getopt's `c` when it is a geometry option (CLI_OPT_GEOMETRY_*, CLI_OPT_SEED). */
bool cli_geometry_option(int c, const char *arg, struct cli_geometry_opts *o);
int cli_geometry_params(const char *cmd, const char *budget, const char *places, const char *range,
			const char *seed, const struct dg_device_info *info,
			struct dg_geometry_params *p);
void cli_geometry_summary(FILE *out, const struct dg_geometry_result *r);
int cmd_profile(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_summary(int argc, char **argv);

/* Units of the human output (one system per quantity): positions and capacities in decimal
 * kB/MB/GB/TB, like MB/s and the vendors' labels ("4.00 TB"); request sizes and distances in
 * binary KiB/MiB/GiB ("256 KiB"): dg_fmt_bytes() and dg_fmt_ibytes() in util.h. */
/* A position as "1.23 TB (30.8%)": decimal bytes and the percent of `capacity` beside. */
void cli_human_position(char *buf, size_t len, uint64_t bytes, uint64_t capacity);
/* The nominal spindle class (4200, 5400, 5900, 7200, 10000, 15000 rpm) nearest `rpm`. */
unsigned cli_rpm_class(double rpm);

/* A measurement's options as a table (cli_take_option()): getopt's code, where its text goes
 * in the options struct, or that it is a flag (a bool set to true). */
struct cli_opt_field {
	int code;
	size_t offset;
	bool flag;
};
#define CLI_TEXT(code, type, member)                                                               \
	{                                                                                          \
		code, offsetof(type, member), false                                                \
	}
#define CLI_FLAG(code, type, member)                                                               \
	{                                                                                          \
		code, offsetof(type, member), true                                                 \
	}
/* Stores `arg` (or true) into `opts` at the field of `c` in `t` (n entries): true when `c` is
 * one of them. */
bool cli_take_option(const struct cli_opt_field *t, size_t n, int c, const char *arg, void *opts);

/* Option texts of `diskgeo read` (cmd_read.c). */
struct cli_read_opts {
	const char *offset, *length, *block, *span, *qd, *seed;
	bool random;
};
struct dg_read_params;
struct dg_read_result;
/* Like cli_seek_option() for read: 'o' offset, 'l' length, 'b' block size, 'Q' queue depth, 'r'
 * random, the span, CLI_OPT_SEED. */
bool cli_read_option(int c, const char *arg, struct cli_read_opts *o);
/* Texts to checked parameters, aligned to `info`'s sector, with the defaults of read.h. */
int cli_read_params(const char *cmd, const struct cli_read_opts *o,
		    const struct dg_device_info *info, struct dg_read_params *p);
/* The report: the plan, MB/s, IOPS, the latency percentiles. */
void cli_read_summary(FILE *out, const struct dg_read_result *r, const struct dg_device_info *info);

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
 * zone table, places as % of `capacity_bytes` too (cmd_bandwidth.c; `diskgeo profile` reuses
 * it). */
void cli_bandwidth_summary(FILE *out, const struct dg_bandwidth_result *r, uint64_t capacity_bytes);

/* The human summary of a seek run: rpm (and its nominal class), track-to-track, average and
 * full-stroke seeks, a few points of the curve, the span IOPS table. */
struct dg_seek_result;
void cli_seek_summary(FILE *out, const struct dg_seek_result *r);
/* The write guard of `bandwidth --write` and `sweep --write` (cli_write.c): --write and
 * --confirm-destroy go together (one line, DG_EXIT_USAGE otherwise); the read-only probe of
 * DEVICE that NAME must name (its kernel name, serial, the spec's name for sim:, a file's own
 * name), *probed the one object the write open may reach; the names it accepts, for the
 * refusal's line; a short wait for a passing exclusive claim (udev, a ring torn down) before
 * the write open. */
int cli_write_options(const char *cmd, bool write, const char *confirm, const char *device);
int cli_write_probe(const char *cmd, const char *device, const char *confirm,
		    struct dg_device **probed);
bool cli_names_device(const char *name, const struct dg_device_info *info);
void cli_expected_names(char *buf, size_t len, const struct dg_device_info *info);
void cli_wait_unclaimed(const struct dg_device *dev);
int cmd_sweep(int argc, char **argv);
/* Option texts of the sweep (cmd_sweep.c), shared by `sweep` and `profile --sweep`. */
struct cli_sweep_opts {
	const char *seq_blocks, *rand_blocks, *qds, *range, *budget, *seq_bytes, *ios, *rmw_ios,
	    *seed;
};
/* Takes getopt's `c` when it is a sweep option (CLI_OPT_SWEEP_*): stores `arg`, returns true. */
bool cli_sweep_option(int c, const char *arg, struct cli_sweep_opts *o);
struct dg_sweep_params;
struct dg_sweep_result;
/* Texts to checked, resolved parameters for `info`; one line prefixed with `cmd` and
 * DG_EXIT_USAGE on bad input. */
int cli_sweep_params(const char *cmd, const struct cli_sweep_opts *o,
		     const struct dg_device_info *info, bool write, struct dg_sweep_params *p);
/* Runs the sweep on the session's device (engines opened per block size); adds the thinning
 * warning. Returns DG_EXIT_*. */
int cli_sweep_run(struct cli_session *s, enum dg_engine_kind kind, const struct dg_sweep_params *p,
		  struct dg_sweep_result **r);
/* The human tables of a sweep; the "sweep" section (with write_cache in write mode). */
void cli_sweep_summary(FILE *out, const struct dg_sweep_result *r,
		       const struct dg_device_info *info);
json_t *cli_sweep_json(const struct dg_sweep_result *r, const struct dg_device_info *info);

#endif
