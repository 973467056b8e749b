/* SPDX-License-Identifier: MIT */
/*
 * The measurement registry: every measurement the command line can run, as one `const` table of
 * hooks (the shape of fio's `struct ioengine_ops` and `profile_ops`: a table found by name,
 * whose entries the core calls without knowing what they measure). `diskgeo profile` walks the
 * table; each single command (bandwidth, seek, sweep, read) runs its one entry through the same
 * calls, so that options, parameters, the JSON section, the CSV files, the human summary and
 * the exit status are written once for all of them.
 *
 * A new measurement (geometry, ...) is one more `struct cli_measure` in cli_measure.c and one
 * member in the unions below: its option helper, parameters from the option texts, what it
 * needs of the shared engine, its run, its JSON, CSV and summary, its free.
 */
#ifndef DISKGEO_CLI_MEASURE_H
#define DISKGEO_CLI_MEASURE_H

#include "cli.h"
#include "diskgeo/bandwidth.h"
#include "diskgeo/geocache.h"
#include "diskgeo/geometry.h"
#include "diskgeo/read.h"
#include "diskgeo/seek.h"
#include "diskgeo/sweep.h"

/* Option texts of a measurement, as given (sizes stay text until the sector is known). */
union cli_measure_opts {
	struct cli_bandwidth_opts bandwidth;
	struct cli_seek_opts seek;
	struct cli_sweep_opts sweep;
	struct cli_read_opts read;
	struct cli_geometry_opts geometry;
};

/* Checked, resolved parameters of a measurement. */
union cli_measure_params {
	struct dg_bandwidth_params bandwidth;
	struct dg_seek_params seek;
	struct dg_sweep_params sweep;
	struct dg_read_params read;
	struct dg_geometry_params geometry;
};

/* One CSV file of a measurement: its name in `profile --csv-dir`, its writer and, when not
 * every result has it, whether this one does. The first is what a single command's --csv
 * writes. */
struct cli_csv_file {
	const char *name;
	int (*fill)(FILE *f, void *result);
	bool (*present)(const void *result); /* NULL = always */
};

#define CLI_MEASURE_CSV_MAX 2

struct cli_measure {
	const char *name; /* its key in run.parameters of `profile`, and its verbose lines */
	/* Takes getopt's `c` when it is one of the measurement's options (see cli.h). */
	bool (*option)(int c, const char *arg, union cli_measure_opts *o);
	/* Option texts to parameters for `info`: one line prefixed with `cmd` and DG_EXIT_USAGE
	 * on bad input. */
	int (*params)(const char *cmd, const union cli_measure_opts *o,
		      const struct dg_device_info *info, union cli_measure_params *p);
	/* What it needs of the session's engine (queue depth, largest I/O); NULL when it opens
	 * its own engines. */
	void (*engine_needs)(const union cli_measure_params *p, unsigned *qd, uint32_t *max_io);
	/* Device time it plans, for its share of the progress line (0: it draws its own). */
	double (*planned_ns)(const union cli_measure_params *p);
	/* Measures on the session (s->engine, s->errors, cli_stop): 0 and *result, or -errno
	 * (printed by the caller); a DG_EXIT_* code > 0 when it printed the failure itself. */
	int (*run)(struct cli_session *s, enum dg_engine_kind kind,
		   const union cli_measure_params *p, struct cli_progress *prog, void **result);
	/* The conditions the run noted (added to the profile's warnings); NULL = none. */
	const struct dg_warnings *(*notes)(const void *result);
	/* What the result says about the device (the rotation verdict); NULL = nothing. */
	void (*verdict)(struct cli_session *s, const void *result);
	uint64_t (*device_time_ns)(const void *result);
	/* Its parameters as run, its sections (an object: "bandwidth", or "seek" + "rotation" +
	 * "iops"), its human summary; NULL from the JSON hooks = ENOMEM. */
	json_t *(*params_json)(const void *result);
	json_t *(*sections)(const void *result, const struct dg_device_info *info);
	void (*summary)(FILE *out, const void *result, const struct dg_device_info *info);
	struct cli_csv_file csv[CLI_MEASURE_CSV_MAX];
	void (*free)(void *result);
};

/* The registry of `profile`, in the order it runs them; NULL-terminated. */
extern const struct cli_measure *const cli_measures[];
extern const struct cli_measure cli_measure_bandwidth, cli_measure_seek, cli_measure_sweep,
    cli_measure_geometry;
/* `diskgeo read`, the plain benchmark: a measurement of its own, not part of a profile. */
extern const struct cli_measure cli_measure_read;

/* One measurement in a command: its table entry, options, parameters and result. */
struct cli_job {
	const struct cli_measure *m;
	union cli_measure_opts o;
	union cli_measure_params p;
	void *result;
	bool on;
};

/* Gives getopt's `c` to every job's option hook (several may take it: --seed); true when one
 * did. */
bool cli_jobs_option(struct cli_job *jobs, size_t n, int c, const char *arg);
/* Opens the session's engine for what the jobs that are on need (at least queue depth 1; I/Os
 * of the engine's default size when none needs any); warns when the engine runs shallower than
 * asked. Returns DG_EXIT_*. */
int cli_jobs_open_engine(struct cli_session *s, const struct cli_job *jobs, size_t n,
			 enum dg_engine_kind kind);
/* Runs one job and takes in its result: its notes as warnings, its verdict, a verbose line.
 * Returns DG_EXIT_* (a failed run: one line prefixed with `cmd`; -EINVAL is a usage error,
 * anything else the device's). */
int cli_job_run(struct cli_session *s, struct cli_job *j, enum dg_engine_kind kind,
		struct cli_progress *prog, const char *cmd);
/* A single command's measurement: the session's engine for this job alone
 * (cli_jobs_open_engine()), one progress line, cli_job_run(). Returns DG_EXIT_*. */
int cli_job_measure(struct cli_session *s, struct cli_job *j, enum dg_engine_kind kind,
		    const char *cmd);
/* Adds a run job's parameters to run.parameters (under its name when `nested`, else merged
 * flat with the engine's name), prints its summary to `summary` (may be NULL) and moves its
 * sections into `sections`. Returns 0 or -ENOMEM. */
int cli_job_output(struct cli_session *s, const struct cli_job *j, json_t *sections, FILE *summary,
		   bool nested);
/* Writes a run job's CSV files: every one into `dir` when not NULL, else the first to `file`
 * when not NULL. One line per failure; returns true when any failed. */
bool cli_job_csv(const struct cli_job *j, const char *dir, const char *file);
/* DIR/NAME into `path`; one line and false when it does not fit. */
bool cli_csv_path(char *path, size_t len, const char *dir, const char *name);
/* Ends a session whose jobs ran: writes the profile with `sections` (stolen) and returns its
 * status (cli_session_end()), DG_EXIT_USAGE when a CSV failed (`csv_failed`). */
int cli_jobs_end(struct cli_session *s, json_t *sections, const char *json, bool csv_failed);
/* A single command's whole post-run: cli_job_output() flat, its CSV to `csv`, cli_jobs_end().
 * Returns DG_EXIT_*. */
int cli_job_finish(struct cli_session *s, struct cli_job *j, const char *json, const char *csv);
/* A --csv-dir before anything is measured: created when missing (its parent must exist), a
 * writable directory otherwise, and each file any measurement writes there an output that
 * cli_check_output() accepts. NULL `dir`: nothing to do. Returns DG_EXIT_*. */
int cli_csv_dir_prepare(struct cli_session *s, const char *cmd, const char *dir);
/* A single-measurement command from its parsed arguments to its exit status: the outputs checked,
 * the session begun on `device`, the job's parameters, the --csv-dir prepared (NULL: none),
 * cli_job_measure(), cli_job_finish() and the job's CSV files into `csv_dir`; frees the job's
 * result and the session. Returns DG_EXIT_*. */
int cli_job_command(struct cli_job *j, const char *device, const struct cli_io_opts *io,
		    const char *csv_dir);

/* The geometry entry's result (cmd_geometry.c): the geometry, then the cache and NCQ tests. */
struct cli_geometry_result {
	struct dg_geometry_result *geometry;
	struct dg_geocache cache;
	bool cache_run; /* cache holds figures (or their notes) */
};
/* Each geometry zone's model rate beside the measured curve's (profile --geometry). */
void cli_geometry_vs_curve(FILE *out, const void *geometry_result,
			   const struct dg_bandwidth_result *bw);

/* Frees the jobs' results (accepts jobs that never ran). */
void cli_jobs_free(struct cli_job *jobs, size_t n);

#endif
