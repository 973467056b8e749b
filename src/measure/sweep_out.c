/* SPDX-License-Identifier: MIT */
/*
 * Workload sweeps: the NCQ gain and the outputs — the profile's "sweep" section, the run
 * parameters and sweep.csv (include/diskgeo/sweep.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "diskgeo/sweep.h"
#include "util.h"

double dg_sweep_ncq_gain(const struct dg_sweep_result *r, const struct dg_sweep_cell *c)
{
	if (c->kind != DG_SWEEP_RAND || !c->measured)
		return NAN;
	for (size_t i = 0; i < r->ncells; i++) {
		const struct dg_sweep_cell *b = &r->cells[i];
		if (b->kind == DG_SWEEP_RAND && b->qd == 1 && b->where == c->where &&
		    b->block_bytes == c->block_bytes && b->write == c->write && b->measured)
			return c->iops / b->iops;
	}
	return NAN;
}

/* ---- output ---- */

static void set_num(json_t *o, const char *key, double v)
{
	if (isfinite(v))
		json_object_set_new(o, key, json_real(v));
}

json_t *dg_sweep_params_json(const struct dg_sweep_params *p)
{
	json_t *o = json_object(), *a;

	a = json_array();
	for (unsigned i = 0; i < p->nseq_blocks; i++)
		json_array_append_new(a, json_integer(p->seq_blocks[i]));
	json_object_set_new(o, "sweep_seq_blocks_bytes", a);
	a = json_array();
	for (unsigned i = 0; i < p->nrand_blocks; i++)
		json_array_append_new(a, json_integer(p->rand_blocks[i]));
	json_object_set_new(o, "sweep_rand_blocks_bytes", a);
	a = json_array();
	for (unsigned i = 0; i < p->nqds; i++)
		json_array_append_new(a, json_integer(p->qds[i]));
	json_object_set_new(o, "sweep_qds", a);
	json_object_set_new(o, "sweep_range_start_bytes",
			    json_integer((json_int_t)p->range_start_bytes));
	json_object_set_new(o, "sweep_range_end_bytes",
			    json_integer((json_int_t)p->range_end_bytes));
	json_object_set_new(o, "sweep_time_budget_s", json_real((double)p->time_budget_ns / 1e9));
	json_object_set_new(o, "sweep_seq_bytes", json_integer((json_int_t)p->seq_bytes));
	json_object_set_new(o, "sweep_rand_ios", json_integer(p->rand_ios));
	json_object_set_new(o, "sweep_rmw_ios", json_integer(p->rmw_ios));
	json_object_set_new(o, "sweep_seed", json_integer((json_int_t)p->seed));
	json_object_set_new(o, "sweep_write", json_boolean(p->write));
	return o;
}

static json_t *cell_json(const struct dg_sweep_result *r, const struct dg_sweep_cell *c)
{
	json_t *o = json_object(), *l;

	json_object_set_new(o, "kind", json_string(dg_sweep_kind_name(c->kind)));
	json_object_set_new(o, "op", json_string(c->write ? "write" : "read"));
	json_object_set_new(o, "where", json_string(dg_sweep_where_name(c->where)));
	json_object_set_new(o, "block_bytes", json_integer(c->block_bytes));
	json_object_set_new(o, "qd", json_integer(c->qd));
	json_object_set_new(o, "measured", json_boolean(c->measured));
	if (!c->measured) {
		json_object_set_new(o, "skipped", json_string(c->skipped ? c->skipped : "unknown"));
		return o;
	}
	json_object_set_new(o, "start_bytes", json_integer((json_int_t)c->start_bytes));
	json_object_set_new(o, "span_bytes", json_integer((json_int_t)c->span_bytes));
	json_object_set_new(o, "ios", json_integer(c->ios));
	if (c->errors)
		json_object_set_new(o, "errors", json_integer(c->errors));
	if (c->stalls)
		json_object_set_new(o, "stalls", json_integer(c->stalls));
	json_object_set_new(o, "device_time_s", json_real((double)c->device_time_ns / 1e9));
	set_num(o, "mb_per_s", c->mb_per_s);
	set_num(o, "iops", c->iops);
	l = json_object();
	set_num(l, "mean", c->mean_ms);
	set_num(l, "p50", c->p50_ms);
	set_num(l, "p99", c->p99_ms);
	json_object_set_new(o, "latency_ms", l);
	set_num(o, "ncq_gain", dg_sweep_ncq_gain(r, c));
	return o;
}

static json_t *rmw_json(const struct dg_sweep_rmw *m)
{
	json_t *o = json_object(), *a = json_array();

	json_object_set_new(o, "op", json_string(m->write ? "write" : "read"));
	json_object_set_new(o, "logical_sector_bytes", json_integer(m->logical_sector_bytes));
	json_object_set_new(o, "physical_sector_bytes_reported",
			    json_integer(m->physical_sector_bytes_reported));
	json_object_set_new(o, "physical_sector_bytes_timed",
			    json_integer(m->physical_sector_bytes_timed));
	json_object_set_new(o, "block_bytes", json_integer(m->block_bytes));
	set_num(o, "aligned_ms", m->aligned_ms);
	set_num(o, "misaligned_ms", m->misaligned_ms);
	set_num(o, "penalty_ms", m->penalty_ms);
	set_num(o, "logical_aligned_ms", m->logical_aligned_ms);
	set_num(o, "logical_misaligned_ms", m->logical_misaligned_ms);
	for (size_t i = 0; i < m->nsizes; i++) {
		json_t *s = json_object();
		json_object_set_new(s, "block_bytes", json_integer(m->sizes[i].block_bytes));
		set_num(s, "aligned_ms", m->sizes[i].aligned_ms);
		set_num(s, "misaligned_ms", m->sizes[i].misaligned_ms);
		set_num(s, "penalty_ms", m->sizes[i].misaligned_ms - m->sizes[i].aligned_ms);
		set_num(s, "penalty_se_ms", m->sizes[i].penalty_se_ms);
		json_array_append_new(a, s);
	}
	json_object_set_new(o, "sizes", a);
	return o;
}

json_t *dg_sweep_json(const struct dg_sweep_result *r)
{
	json_t *o = json_object(), *cells = json_array(), *gains = json_array();

	if (!o || !cells || !gains) {
		json_decref(o);
		json_decref(cells);
		json_decref(gains);
		return NULL;
	}
	for (size_t i = 0; i < r->ncells; i++) {
		const struct dg_sweep_cell *c = &r->cells[i];
		json_array_append_new(cells, cell_json(r, c));
		double g = dg_sweep_ncq_gain(r, c);
		if (isfinite(g)) {
			json_t *e = json_object();
			json_object_set_new(e, "where", json_string(dg_sweep_where_name(c->where)));
			json_object_set_new(e, "op", json_string(c->write ? "write" : "read"));
			json_object_set_new(e, "block_bytes", json_integer(c->block_bytes));
			json_object_set_new(e, "qd", json_integer(c->qd));
			json_object_set_new(e, "gain", json_real(g));
			json_array_append_new(gains, e);
		}
	}
	json_object_set_new(o, "cells", cells);
	json_object_set_new(o, "ncq_gain", gains);
	json_object_set_new(o, "cells_total", json_integer((json_int_t)r->ncells));
	json_object_set_new(o, "cells_measured", json_integer((json_int_t)r->nmeasured));
	json_object_set_new(o, "thinned", json_boolean(r->thinned));
	json_object_set_new(o, "time_budget_s", json_real((double)r->params.time_budget_ns / 1e9));
	json_object_set_new(o, "device_time_s", json_real((double)r->device_time_ns / 1e9));
	json_object_set_new(o, "range_start_bytes",
			    json_integer((json_int_t)r->params.range_start_bytes));
	json_object_set_new(o, "range_end_bytes",
			    json_integer((json_int_t)r->params.range_end_bytes));
	if (r->params.write)
		json_object_set_new(o, "written_bytes", json_integer((json_int_t)r->written_bytes));
	if (r->rmw.measured)
		json_object_set_new(o, "rmw", rmw_json(&r->rmw));
	return o;
}

int dg_sweep_csv(FILE *f, void *arg)
{
	const struct dg_sweep_result *r = arg;

	fputs("kind,op,where,block_bytes,qd,measured,mb_per_s,iops,latency_ms_mean,latency_ms_p50,"
	      "latency_ms_p99,ncq_gain\n",
	      f);
	for (size_t i = 0; i < r->ncells; i++) {
		const struct dg_sweep_cell *c = &r->cells[i];
		fprintf(f, "%s,%s,%s,%" PRIu32 ",%u,%s,", dg_sweep_kind_name(c->kind),
			c->write ? "write" : "read", dg_sweep_where_name(c->where), c->block_bytes,
			c->qd, c->measured ? "true" : "false");
		if (c->measured) {
			dg_csv_num(f, "%.6g", c->mb_per_s, ",");
			dg_csv_num(f, "%.6g", c->iops, ",");
			dg_csv_num(f, "%.6g", c->mean_ms, ",");
			dg_csv_num(f, "%.6g", c->p50_ms, ",");
			dg_csv_num(f, "%.6g", c->p99_ms, ",");
			dg_csv_num(f, "%.6g", dg_sweep_ncq_gain(r, c), "\n");
		} else {
			fputs(",,,,,\n", f);
		}
	}
	return ferror(f) ? -EIO : 0;
}
