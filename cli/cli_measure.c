/* SPDX-License-Identifier: MIT */
/*
 * The measurement registry (cli_measure.h): the table of measurements and the one post-run
 * sequence every measuring command shares.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_measure.h"
#include "diskgeo/profile.h"

#define SEEK_MIN_IO_BYTES (1u << 20) /* what seek has always opened its engine with */

/* ---- bandwidth: the sequential curve and its zones ---- */

static bool bw_option(int c, const char *arg, union cli_measure_opts *o)
{
	return cli_bandwidth_option(c, arg, &o->bandwidth);
}

static int bw_params(const char *cmd, const union cli_measure_opts *o,
		     const struct dg_device_info *info, union cli_measure_params *p)
{
	return cli_bandwidth_params(cmd, &o->bandwidth, info, &p->bandwidth);
}

static void bw_engine_needs(const union cli_measure_params *p, unsigned *qd, uint32_t *max_io)
{
	*qd = p->bandwidth.qd;
	*max_io = p->bandwidth.block_bytes;
}

/* The curve's refinement adds about a quarter to its budget. */
static double bw_planned_ns(const union cli_measure_params *p)
{
	return 1.25 * (double)p->bandwidth.time_budget_ns;
}

static int bw_run(struct cli_session *s, enum dg_engine_kind kind,
		  const union cli_measure_params *p, struct cli_progress *prog, void **result)
{
	struct dg_bandwidth_result *r = NULL;
	int rc = dg_bandwidth_run(s->engine, dg_device_info(s->dev), &p->bandwidth, &s->errors,
				  &cli_stop, cli_progress_fn(prog), prog, &r);

	(void)kind;
	*result = r;
	return rc;
}

static const struct dg_warnings *bw_notes(const void *r)
{
	return &((const struct dg_bandwidth_result *)r)->notes;
}

static uint64_t bw_device_time_ns(const void *r)
{
	return ((const struct dg_bandwidth_result *)r)->device_time_ns;
}

static json_t *bw_params_json(const void *r)
{
	return dg_bandwidth_params_json(&((const struct dg_bandwidth_result *)r)->params);
}

static json_t *bw_sections(const void *r, const struct dg_device_info *info)
{
	json_t *o = json_object();

	(void)info;
	if (o && json_object_set_new(o, "bandwidth", dg_bandwidth_json(r))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static void bw_summary(FILE *out, const void *r, const struct dg_device_info *info)
{
	cli_bandwidth_summary(out, r, info->size_bytes);
}

static void bw_free(void *r)
{
	dg_bandwidth_result_free(r);
}

const struct cli_measure cli_measure_bandwidth = {
    .name = "bandwidth",
    .option = bw_option,
    .params = bw_params,
    .engine_needs = bw_engine_needs,
    .planned_ns = bw_planned_ns,
    .run = bw_run,
    .notes = bw_notes,
    .device_time_ns = bw_device_time_ns,
    .params_json = bw_params_json,
    .sections = bw_sections,
    .summary = bw_summary,
    .csv = {{"bandwidth.csv", dg_bandwidth_csv, NULL}, {"zones.csv", dg_bandwidth_zones_csv, NULL}},
    .free = bw_free,
};

/* ---- seek: seek curve, rotation, span IOPS ---- */

static bool seek_option(int c, const char *arg, union cli_measure_opts *o)
{
	return cli_seek_option(c, arg, &o->seek);
}

static int seek_params(const char *cmd, const union cli_measure_opts *o,
		       const struct dg_device_info *info, union cli_measure_params *p)
{
	return cli_seek_params(cmd, &o->seek, info, &p->seek);
}

static void seek_engine_needs(const union cli_measure_params *p, unsigned *qd, uint32_t *max_io)
{
	*qd = 1; /* access times at queue depth 1 */
	*max_io = p->seek.block_bytes > SEEK_MIN_IO_BYTES ? p->seek.block_bytes : SEEK_MIN_IO_BYTES;
}

/* Rotation and spans add about a third to the seek curve's budget. */
static double seek_planned_ns(const union cli_measure_params *p)
{
	return 1.3 * (double)p->seek.time_budget_ns;
}

static int seek_run(struct cli_session *s, enum dg_engine_kind kind,
		    const union cli_measure_params *p, struct cli_progress *prog, void **result)
{
	struct dg_seek_result *r = NULL;
	int rc = dg_seek_run(s->engine, dg_device_info(s->dev), &p->seek, &s->errors, &cli_stop,
			     cli_progress_fn(prog), prog, &r);

	(void)kind;
	*result = r;
	return rc;
}

static const struct dg_warnings *seek_notes(const void *r)
{
	return &((const struct dg_seek_result *)r)->notes;
}

static void seek_verdict(struct cli_session *s, const void *r)
{
	cli_rotation_verdict(s, r);
}

static uint64_t seek_device_time_ns(const void *r)
{
	return ((const struct dg_seek_result *)r)->device_time_ns;
}

static json_t *seek_params_json(const void *r)
{
	return dg_seek_params_json(&((const struct dg_seek_result *)r)->params);
}

static json_t *seek_sections(const void *r, const struct dg_device_info *info)
{
	(void)info;
	return dg_seek_json(r);
}

static void seek_summary(FILE *out, const void *r, const struct dg_device_info *info)
{
	(void)info;
	cli_seek_summary(out, r);
}

static bool seek_has_spans(const void *r)
{
	return ((const struct dg_seek_result *)r)->nspans > 0;
}

static void seek_free(void *r)
{
	dg_seek_result_free(r);
}

const struct cli_measure cli_measure_seek = {
    .name = "seek",
    .option = seek_option,
    .params = seek_params,
    .engine_needs = seek_engine_needs,
    .planned_ns = seek_planned_ns,
    .run = seek_run,
    .notes = seek_notes,
    .verdict = seek_verdict,
    .device_time_ns = seek_device_time_ns,
    .params_json = seek_params_json,
    .sections = seek_sections,
    .summary = seek_summary,
    .csv = {{"seek.csv", dg_seek_csv, NULL}, {"iops.csv", dg_seek_iops_csv, seek_has_spans}},
    .free = seek_free,
};

/* ---- sweep: block size x queue depth (it opens an engine per block size) ---- */

static bool sweep_option(int c, const char *arg, union cli_measure_opts *o)
{
	return cli_sweep_option(c, arg, &o->sweep);
}

static int sweep_params(const char *cmd, const union cli_measure_opts *o,
			const struct dg_device_info *info, union cli_measure_params *p)
{
	return cli_sweep_params(cmd, &o->sweep, info, false, &p->sweep);
}

static int sweep_run(struct cli_session *s, enum dg_engine_kind kind,
		     const union cli_measure_params *p, struct cli_progress *prog, void **result)
{
	struct dg_sweep_result *r = NULL;
	int rc = cli_sweep_run(s, kind, &p->sweep, &r); /* its own progress line */

	(void)prog;
	*result = r;
	return rc;
}

static json_t *sweep_params_json(const void *r)
{
	return dg_sweep_params_json(&((const struct dg_sweep_result *)r)->params);
}

static json_t *sweep_sections(const void *r, const struct dg_device_info *info)
{
	json_t *o = json_object();

	if (o && json_object_set_new(o, "sweep", cli_sweep_json(r, info))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static void sweep_summary(FILE *out, const void *r, const struct dg_device_info *info)
{
	cli_sweep_summary(out, r, info);
}

static void sweep_free(void *r)
{
	dg_sweep_result_free(r);
}

const struct cli_measure cli_measure_sweep = {
    .name = "sweep",
    .option = sweep_option,
    .params = sweep_params,
    .run = sweep_run,
    .params_json = sweep_params_json,
    .sections = sweep_sections,
    .summary = sweep_summary,
    .csv = {{"sweep.csv", dg_sweep_csv, NULL}},
    .free = sweep_free,
};

/* ---- read: the plain benchmark ---- */

static bool read_option(int c, const char *arg, union cli_measure_opts *o)
{
	return cli_read_option(c, arg, &o->read);
}

static int read_params(const char *cmd, const union cli_measure_opts *o,
		       const struct dg_device_info *info, union cli_measure_params *p)
{
	return cli_read_params(cmd, &o->read, info, &p->read);
}

/* Buffers are whole pages; an I/O may be shorter than its buffer. */
static void read_engine_needs(const union cli_measure_params *p, unsigned *qd, uint32_t *max_io)
{
	*qd = p->read.qd;
	*max_io = (p->read.block_bytes + 4095u) & ~4095u;
}

static int read_run(struct cli_session *s, enum dg_engine_kind kind,
		    const union cli_measure_params *p, struct cli_progress *prog, void **result)
{
	struct dg_read_result *r = NULL;
	int rc = dg_read_run(s->engine, &p->read, &s->errors, &cli_stop, cli_progress_fn(prog),
			     prog, &r);

	(void)kind;
	if (r && r->failure[0])
		cli_error("read: %s", r->failure);
	*result = r;
	return rc;
}

static const struct dg_warnings *read_notes(const void *r)
{
	return &((const struct dg_read_result *)r)->notes;
}

static json_t *read_params_json(const void *r)
{
	return dg_read_params_json(&((const struct dg_read_result *)r)->params);
}

static json_t *read_sections(const void *r, const struct dg_device_info *info)
{
	json_t *o = json_object();

	(void)info;
	if (o && json_object_set_new(o, "read", dg_read_json(r))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static void read_summary(FILE *out, const void *r, const struct dg_device_info *info)
{
	cli_read_summary(out, r, info);
}

static void read_free(void *r)
{
	dg_read_result_free(r);
}

const struct cli_measure cli_measure_read = {
    .name = "read",
    .option = read_option,
    .params = read_params,
    .engine_needs = read_engine_needs,
    .run = read_run,
    .notes = read_notes,
    .params_json = read_params_json,
    .sections = read_sections,
    .summary = read_summary,
    .free = read_free,
};

/* `profile` runs them in this order: the curve first (its samples cross the whole surface
 * anyway), then the seek phase, then the sweep, then the geometry (cmd_geometry.c). */
const struct cli_measure *const cli_measures[] = {
    &cli_measure_bandwidth, &cli_measure_seek, &cli_measure_sweep, &cli_measure_geometry, NULL,
};

/* ---- the shared sequence ---- */

bool cli_jobs_option(struct cli_job *jobs, size_t n, int c, const char *arg)
{
	bool taken = false;

	for (size_t i = 0; i < n; i++)
		taken |= jobs[i].m->option(c, arg, &jobs[i].o);
	return taken;
}

int cli_jobs_open_engine(struct cli_session *s, const struct cli_job *jobs, size_t n,
			 enum dg_engine_kind kind)
{
	unsigned qd = 1, q;
	uint32_t max_io = 0, m; /* 0: the engine's default */
	int rc;

	for (size_t i = 0; i < n; i++) {
		if (!jobs[i].on || !jobs[i].m->engine_needs)
			continue;
		jobs[i].m->engine_needs(&jobs[i].p, &q, &m);
		qd = q > qd ? q : qd;
		max_io = m > max_io ? m : max_io;
	}
	rc = cli_open_engine(s->dev, kind, qd, max_io, &s->engine);
	if (rc == 0 && dg_engine_qd(s->engine) < qd)
		cli_warn("engine %s runs at queue depth %u, not %u", dg_engine_name(s->engine),
			 dg_engine_qd(s->engine), qd);
	return rc;
}

int cli_job_run(struct cli_session *s, struct cli_job *j, enum dg_engine_kind kind,
		struct cli_progress *prog, const char *cmd)
{
	const struct cli_measure *m = j->m;
	int rc = m->run(s, kind, &j->p, prog, &j->result);

	cli_progress_clear(prog);
	if (rc > 0)
		return rc; /* printed by the measurement */
	if (rc < 0) {
		cli_error("%s: %s", cmd, strerror(-rc));
		return rc == -EINVAL ? DG_EXIT_USAGE : DG_EXIT_DEVICE;
	}
	if (m->notes) {
		const struct dg_warnings *notes = m->notes(j->result);
		for (size_t i = 0; i < notes->n; i++)
			dg_warnings_add(&s->warnings, "%s", notes->v[i]);
		s->warnings.nomem |= notes->nomem; /* a note the measurement could not keep */
	}
	if (m->verdict)
		m->verdict(s, j->result);
	if (m->device_time_ns)
		cli_verbose("%s: done, %.1f s of device time", m->name,
			    (double)m->device_time_ns(j->result) / 1e9);
	return DG_EXIT_OK;
}

int cli_job_measure(struct cli_session *s, struct cli_job *j, enum dg_engine_kind kind,
		    const char *cmd)
{
	struct cli_progress prog;
	int rc = cli_jobs_open_engine(s, j, 1, kind);

	if (rc)
		return rc;
	cli_progress_init(&prog);
	return cli_job_run(s, j, kind, &prog, cmd);
}

int cli_job_output(struct cli_session *s, const struct cli_job *j, json_t *sections, FILE *summary,
		   bool nested)
{
	const struct dg_device_info *info = dg_device_info(s->dev);
	json_t *params = j->m->params_json(j->result), *part;
	int rc = params ? 0 : -ENOMEM;

	if (params && nested) {
		rc = json_object_set_new(s->parameters, j->m->name, params);
	} else if (params) {
		if (s->engine)
			rc |= json_object_set_new(params, "engine",
						  json_string(dg_engine_name(s->engine)));
		rc |= json_object_update(s->parameters, params);
		json_decref(params);
	}
	if (summary)
		j->m->summary(summary, j->result, info);
	part = j->m->sections(j->result, info);
	if (!part || json_object_update(sections, part))
		rc = -ENOMEM;
	json_decref(part);
	return rc ? -ENOMEM : 0;
}

/* Writes `path` with the job's `csv`; one line on failure. Returns true when it failed. */
static bool write_csv(const struct cli_job *j, const struct cli_csv_file *csv, const char *path)
{
	char err[DG_ERRLEN];

	if (dg_file_write(path, csv->fill, j->result, err, sizeof(err)) == 0)
		return false;
	cli_error("%s", err);
	return true;
}

bool cli_job_csv(const struct cli_job *j, const char *dir, const char *file)
{
	char path[4096];
	bool failed = false;

	if (!j->result || (!dir && !file))
		return false;
	if (!dir)
		return write_csv(j, &j->m->csv[0], file);
	for (size_t i = 0; i < CLI_MEASURE_CSV_MAX && j->m->csv[i].name; i++) {
		const struct cli_csv_file *csv = &j->m->csv[i];

		if (csv->present && !csv->present(j->result))
			continue;
		if (!cli_csv_path(path, sizeof(path), dir, csv->name))
			failed = true;
		else
			failed |= write_csv(j, csv, path);
	}
	return failed;
}

bool cli_csv_path(char *path, size_t len, const char *dir, const char *name)
{
	if (snprintf(path, len, "%s/%s", dir, name) < (int)len)
		return true;
	cli_error("profile: --csv-dir path too long");
	return false;
}

int cli_jobs_end(struct cli_session *s, json_t *sections, const char *json, bool csv_failed)
{
	int rc = cli_session_end(s, sections, json);

	/* An output that failed after the run did not cost the others; it decides the status. */
	return csv_failed ? DG_EXIT_USAGE : rc;
}

int cli_job_finish(struct cli_session *s, struct cli_job *j, const char *json, const char *csv)
{
	json_t *sections = json_object();
	FILE *out = cli_summary_out(json, csv);
	bool csv_failed;

	if (!sections || cli_job_output(s, j, sections, out, false)) {
		json_decref(sections);
		cli_error("%s: %s", j->m->name, strerror(ENOMEM));
		return DG_EXIT_USAGE;
	}
	csv_failed = cli_job_csv(j, NULL, csv);
	return cli_jobs_end(s, sections, json, csv_failed);
}

void cli_jobs_free(struct cli_job *jobs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].result)
			jobs[i].m->free(jobs[i].result);
		jobs[i].result = NULL;
	}
}

/* The CSV directory must be usable before anything is measured: created when missing (its
 * parent must exist), a writable directory otherwise, and each file any measurement writes in
 * it an output that cli_check_output() accepts (not the device, not a directory, the file
 * system not full). */
int cli_csv_dir_prepare(struct cli_session *s, const char *cmd, const char *dir)
{
	struct stat st;
	char path[4096];

	if (!dir)
		return DG_EXIT_OK;
	if (mkdir(dir, 0777) && errno != EEXIST) {
		cli_error("%s: cannot create --csv-dir %s: %s", cmd, dir, strerror(errno));
		return DG_EXIT_USAGE;
	}
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		cli_error("%s: --csv-dir %s is not a directory", cmd, dir);
		return DG_EXIT_USAGE;
	}
	if (access(dir, W_OK | X_OK)) {
		cli_error("%s: --csv-dir %s: %s", cmd, dir, strerror(errno));
		return DG_EXIT_USAGE;
	}
	for (size_t i = 0; cli_measures[i]; i++)
		for (size_t k = 0; k < CLI_MEASURE_CSV_MAX && cli_measures[i]->csv[k].name; k++)
			if (!cli_csv_path(path, sizeof(path), dir, cli_measures[i]->csv[k].name) ||
			    cli_check_output(&s->outputs, path))
				return DG_EXIT_USAGE;
	return DG_EXIT_OK;
}

int cli_job_command(struct cli_job *j, const char *device, const struct cli_io_opts *io,
		    const char *csv_dir)
{
	const char *cmd = j->m->name;
	struct cli_session s;
	int rc;

	memset(&s, 0, sizeof(s));
	rc = cli_check_output(&s.outputs, io->csv);
	if (rc == 0)
		rc = cli_check_output(&s.outputs, io->prometheus);
	if (rc == 0)
		rc = cli_session_begin(&s, device, 0, io->kind, 0, 0, io->json);
	s.prometheus_path = io->prometheus;
	if (rc == 0)
		rc = j->m->params(cmd, &j->o, dg_device_info(s.dev), &j->p);
	if (rc == 0)
		rc = cli_csv_dir_prepare(&s, cmd, csv_dir);
	if (rc == 0)
		rc = cli_job_measure(&s, j, io->kind, cmd);
	if (rc == 0) {
		/* --csv-dir: the job's files there (a failure costs only the exit status) */
		bool csv_failed = csv_dir && cli_job_csv(j, csv_dir, NULL);
		rc = cli_job_finish(&s, j, io->json, io->csv);
		if (rc == DG_EXIT_OK && csv_failed)
			rc = DG_EXIT_USAGE;
	}
	cli_jobs_free(j, 1);
	cli_session_free(&s); /* also the outputs checked when a later step refused */
	return rc;
}
