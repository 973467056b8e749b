/* SPDX-License-Identifier: MIT */
/*
 * diskgeo sweep in virtual time against the truth: sequential cells against
 * dg_truth_seq_block_mb_per_s, random cells against the reference simulation of truth v2
 * (dg_truth_random_iops), the physical sector inferred in write mode and the RMW penalty against
 * one revolution, on presets and zoo drives (512n, 512e, 4Kn; with and without NCQ).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "diskgeo/model.h"
#include "diskgeo/sweep.h"
#include "model_priv.h"
#include "util.h"
#include "t_helpers.h"

/* Zoo seeds that load on this tree (cylinder or serpentine, one track size per zone): 512n
 * without NCQ (17), 512e with NCQ 32 (21, 37) and without (50, 57), 4Kn with NCQ 32 (33) and
 * without (59, 44 serpentine). */
static const uint64_t zoo_seeds[] = {17, 21, 33, 37, 44, 50, 57, 59};
static const char *const presets[] = {"wd-red-4tb", "hgst-7k1000", "cheetah-15k",
				      "seagate-st4000vn006"};

struct drive {
	char devpath[600];
	char file[512];
	struct dg_device *dev;
	const struct dg_spec *spec;
	struct dg_truth *truth;
};

static int open_sim(void *arg, unsigned qd, uint32_t max_io, struct dg_engine **out)
{
	struct dg_engine_config cfg = {.kind = DG_ENGINE_SIM, .qd = qd, .max_io_bytes = max_io};
	char err[DG_ERRLEN];

	return dg_engine_open(arg, &cfg, out, NULL, err, sizeof(err));
}

static void drive_open(struct drive *d, const char *preset, uint64_t zoo_seed, bool write)
{
	char err[DG_ERRLEN];

	memset(d, 0, sizeof(*d));
	if (preset) {
		snprintf(d->devpath, sizeof(d->devpath), "sim:%s", preset);
	} else {
		char *text;
		assert_int_equal(dg_spec_random(zoo_seed, &text), 0);
		snprintf(d->file, sizeof(d->file), "%s/test_sweep_zoo_%llu_%d.json", DG_BINARY_DIR,
			 (unsigned long long)zoo_seed, (int)getpid());
		FILE *f = fopen(d->file, "w");
		assert_non_null(f);
		fputs(text, f);
		fclose(f);
		free(text);
		snprintf(d->devpath, sizeof(d->devpath), "sim:%s", d->file);
	}
	int rc = dg_device_open(d->devpath, write ? DG_DEVICE_WRITE : 0, &d->dev, NULL, err,
				sizeof(err));
	if (rc)
		fprintf(stderr, "%s: %s\n", d->devpath, err);
	assert_int_equal(rc, 0);
	d->spec = dg_device_spec(d->dev);
	assert_non_null(d->spec);
	assert_int_equal(dg_truth_compute(d->spec, &d->truth), 0);
}

static void drive_close(struct drive *d)
{
	dg_truth_free(d->truth);
	dg_device_close(d->dev);
	if (d->file[0])
		unlink(d->file);
}

static struct dg_sweep_result *run(struct drive *d, struct dg_sweep_params *p)
{
	struct dg_sweep_result *r = NULL;
	struct dg_errors errs = {0};
	char err[DG_ERRLEN];

	assert_int_equal(dg_sweep_params_check(p, dg_device_info(d->dev), p, err, sizeof(err)), 0);
	assert_int_equal(
	    dg_sweep_run(dg_device_info(d->dev), p, open_sim, d->dev, &errs, NULL, NULL, NULL, &r),
	    0);
	if (errs.n)
		printf("  %s: %zu error ranges (the spec's error defects); cells with errors are "
		       "not compared\n",
		       d->devpath, errs.n);
	dg_errors_free(&errs);
	return r;
}

/* Every sequential cell of the default grid (4 KiB .. 16 MiB x QD 1 .. 32, outer and inner)
 * within 3% of the truth's reference of the stream, no cell exempt; the worst is printed. On a
 * drive with jitter a cell paced in bursts reads on until its rate is steady (seq_grow), and its
 * truth is the mean of 16 runs of the same window: the long-run rate, not a draw. */
static double check_seq(struct drive *d, const char *name)
{
	struct dg_sweep_params p;

	dg_sweep_params_default(&p, dg_device_info(d->dev));
	p.nrand_blocks = 0;
	p.rmw_ios = 0;
	p.time_budget_ns = 3600ull * DG_NS_PER_S;
	struct dg_sweep_result *r = run(d, &p);
	unsigned checked = 0, errs = 0, skipped = 0, grown = 0;
	double worst = 0;
	for (size_t i = 0; i < r->ncells; i++) {
		const struct dg_sweep_cell *c = &r->cells[i];
		if (!c->measured) {
			/* only the in-flight limit leaves cells out with this budget */
			assert_true((uint64_t)c->qd * c->block_bytes > DG_SWEEP_MAX_INFLIGHT_BYTES);
			skipped++;
			continue;
		}
		if (c->errors) {
			errs++;
			continue;
		}
		double t = dg_truth_seq_block_mb_per_s(d->spec, c->start_bytes, c->span_bytes,
						       c->block_bytes, c->qd);
		double err = c->mb_per_s / t - 1;
		if (fabs(err) > 0.03)
			printf("  MISSED %s seq %s b=%u qd=%u %.2f MB/s over %llu MiB, truth %.2f: "
			       "%+.2f%%\n",
			       name, dg_sweep_where_name(c->where), c->block_bytes, c->qd,
			       c->mb_per_s, (unsigned long long)(c->span_bytes >> 20), t,
			       100 * err);
		assert_true(fabs(err) <= 0.03);
		grown += c->span_bytes > p.seq_bytes + c->block_bytes &&
			 c->span_bytes > 9ull * c->block_bytes;
		worst = fabs(err) > fabs(worst) ? err : worst;
		checked++;
	}
	assert_int_equal(checked + errs + skipped, r->ncells);
	assert_true(checked >= r->ncells - skipped - 4);
	printf("%s (jitter %.2f ms): all %u sequential cells within 3%% of the truth (worst "
	       "%+.2f%%; %u read on past seq_bytes; %u with errors not compared, %u above the "
	       "in-flight limit)\n",
	       name, d->spec->jitter_ms, checked, 100 * worst, grown, errs, skipped);
	dg_sweep_result_free(r);
	return worst;
}

/* More zoo drives with jitter for the sequential cells (the burst-paced cells' noise): 512e
 * without NCQ (5, 19), with NCQ 32 (6), 512n without NCQ (18). */
static const uint64_t jitter_seeds[] = {5, 6, 18, 19};

static void seq_vs_truth(void **state)
{
	double worst = 0;

	(void)state;
	for (size_t i = 0; i < t_drives(ARRAY_SIZE(presets), 1); i++) {
		struct drive d;
		drive_open(&d, presets[i], 0, false);
		double w = check_seq(&d, presets[i]);
		worst = fabs(w) > fabs(worst) ? w : worst;
		drive_close(&d);
	}
	for (size_t i = 0; i < t_drives(ARRAY_SIZE(zoo_seeds) + ARRAY_SIZE(jitter_seeds), 2); i++) {
		struct drive d;
		char name[32];
		uint64_t seed = i < ARRAY_SIZE(zoo_seeds) ? zoo_seeds[i]
							  : jitter_seeds[i - ARRAY_SIZE(zoo_seeds)];
		snprintf(name, sizeof(name), "zoo-%llu", (unsigned long long)seed);
		drive_open(&d, NULL, seed, false);
		double w = check_seq(&d, name);
		worst = fabs(w) > fabs(worst) ? w : worst;
		drive_close(&d);
	}
	printf("sequential cells: worst %+.2f%% of the truth on %zu drives (bound 3%%)\n",
	       100 * worst, ARRAY_SIZE(presets) + ARRAY_SIZE(zoo_seeds) + ARRAY_SIZE(jitter_seeds));
}

/* Every random cell of the default grid (the logical sector, 4 KiB .. 1 MiB x QD 1 .. 32, the
 * whole device and its first 10%) within 5% of the reference simulation's IOPS. */
static void check_rand(struct drive *d, const char *name)
{
	struct dg_sweep_params p;

	dg_sweep_params_default(&p, dg_device_info(d->dev));
	p.nseq_blocks = 0;
	p.rmw_ios = 0;
	p.rand_ios = 3000;
	p.time_budget_ns = 36000ull * DG_NS_PER_S;
	struct dg_sweep_result *r = run(d, &p);
	unsigned checked = 0, errs = 0;
	double worst = 0;
	for (size_t i = 0; i < r->ncells; i++) {
		const struct dg_sweep_cell *c = &r->cells[i];
		assert_true(c->measured);
		if (c->errors) {
			errs++;
			continue;
		}
		double t = dg_truth_random_iops(d->spec, c->start_bytes, c->span_bytes,
						c->block_bytes, c->qd, 20000, 7);
		double err = c->iops / t - 1;
		if (fabs(err) > 0.05)
			printf("  %s rand %s b=%u qd=%u %.1f IOPS, reference %.1f: %+.1f%%\n", name,
			       dg_sweep_where_name(c->where), c->block_bytes, c->qd, c->iops, t,
			       100 * err);
		assert_true(fabs(err) <= 0.05);
		worst = fabs(err) > fabs(worst) ? err : worst;
		checked++;
	}
	assert_int_equal(checked + errs, r->ncells);
	/* a drive with error defects fails some random reads: most cells are still compared */
	assert_true(checked >= r->ncells / 2);
	printf("%s: all %u random cells within 5%% of the reference (worst %+.1f%%; %u with "
	       "errors not compared), ncq_depth %u\n",
	       name, checked, 100 * worst, errs, dg_spec_ncq_depth(d->spec));
	dg_sweep_result_free(r);
}

static void rand_vs_reference(void **state)
{
	(void)state;
	for (size_t i = 0; i < t_drives(ARRAY_SIZE(presets), 1); i++) {
		struct drive d;
		drive_open(&d, presets[i], 0, false);
		check_rand(&d, presets[i]);
		drive_close(&d);
	}
	for (size_t i = 0; i < t_drives(ARRAY_SIZE(zoo_seeds), 2); i++) {
		struct drive d;
		char name[32];
		snprintf(name, sizeof(name), "zoo-%llu", (unsigned long long)zoo_seeds[i]);
		drive_open(&d, NULL, zoo_seeds[i], false);
		check_rand(&d, name);
		drive_close(&d);
	}
}

/* Write mode (safe on sim:): the physical sector inferred from timing equals the spec's on every
 * drive; on 512e drives the penalty is one revolution within 10%; reads never show it. */
static void check_rmw(struct drive *d, const char *name, bool write)
{
	struct dg_sweep_params p;
	const struct dg_device_info *info = dg_device_info(d->dev);

	dg_sweep_params_default(&p, info);
	p.nseq_blocks = p.nrand_blocks = 0;
	p.nqds = 0;
	p.rmw_ios = 200;
	p.write = write;
	p.range_start_bytes = info->size_bytes / 2;
	p.range_start_bytes -= p.range_start_bytes % 65536;
	p.range_end_bytes = p.range_start_bytes + (1ull << 30);
	struct dg_sweep_result *r = run(d, &p);
	const struct dg_sweep_rmw *m = &r->rmw;
	uint32_t phys = dg_spec_physical_sector_bytes(d->spec);
	assert_true(m->measured);
	printf("%s (%s): logical %u physical %u, timed %u; aligned %.2f misaligned %.2f penalty "
	       "%.2f ms (T %.2f)\n",
	       name, write ? "writes" : "reads", info->logical_sector_bytes, phys,
	       m->physical_sector_bytes_timed, m->aligned_ms, m->misaligned_ms, m->penalty_ms,
	       d->truth->period_ms);
	if (write) {
		assert_int_equal(m->physical_sector_bytes_timed, phys);
		if (phys > info->logical_sector_bytes)
			assert_true(fabs(m->penalty_ms - d->truth->rmw_penalty_ms) <=
				    0.10 * d->truth->period_ms);
	} else {
		assert_int_equal(m->physical_sector_bytes_timed, info->logical_sector_bytes);
	}
	assert_true(r->written_bytes > 0 || !write);
	dg_sweep_result_free(r);
}

static void rmw_inferred(void **state)
{
	unsigned e512 = 0;

	(void)state;
	for (size_t i = 0; i < t_drives(ARRAY_SIZE(presets), 1); i++) {
		struct drive d;
		drive_open(&d, presets[i], 0, true);
		check_rmw(&d, presets[i], true);
		drive_close(&d);
	}
	for (size_t i = 0; i < t_drives(ARRAY_SIZE(zoo_seeds), 2); i++) {
		struct drive d;
		char name[32];
		snprintf(name, sizeof(name), "zoo-%llu", (unsigned long long)zoo_seeds[i]);
		drive_open(&d, NULL, zoo_seeds[i], true);
		e512 += dg_spec_physical_sector_bytes(d.spec) > dg_spec_sector_bytes(d.spec);
		check_rmw(&d, name, true);
		check_rmw(&d, name, false);
		drive_close(&d);
	}
	/* the zoo drives cover 512e three times (once in the sanitizers' two) */
	assert_true(e512 >= (t_drives(ARRAY_SIZE(zoo_seeds), 2) < ARRAY_SIZE(zoo_seeds) ? 1u : 3u));
}

/* Write mode on 40 zoo drives (seeds 1..40, every one that loads): the physical sector timed
 * is the spec's, and on 512e drives the penalty is one revolution within 10%. */
static void rmw_zoo_wide(void **state)
{
	unsigned e512 = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct drive d;
		char name[32];
		snprintf(name, sizeof(name), "zoo-%llu", (unsigned long long)seed);
		drive_open(&d, NULL, seed, true);
		e512 += dg_spec_physical_sector_bytes(d.spec) > dg_spec_sector_bytes(d.spec);
		check_rmw(&d, name, true);
		drive_close(&d);
	}
	printf("40 zoo drives in write mode, %u of them 512e: physical sector timed right on all\n",
	       e512);
	assert_true(e512 >= 8);
}

/* Bad parameters are refused with the reason. */
static void params_refused(void **state)
{
	struct drive d;
	struct dg_sweep_params p;
	char err[DG_ERRLEN];

	(void)state;
	drive_open(&d, "wd-red-4tb", 0, false);
	const struct dg_device_info *info = dg_device_info(d.dev);
	dg_sweep_params_default(&p, info);
	p.rand_blocks[0] = 1000;
	assert_int_equal(dg_sweep_params_check(&p, info, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a multiple of the logical sector"));
	dg_sweep_params_default(&p, info);
	p.qds[0] = 0;
	assert_int_equal(dg_sweep_params_check(&p, info, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "queue depth 0 is out of 1..256"));
	dg_sweep_params_default(&p, info);
	p.write = true;
	assert_int_equal(dg_sweep_params_check(&p, info, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "scratch range"));
	dg_sweep_params_default(&p, info);
	p.range_start_bytes = 0;
	p.range_end_bytes = 16u << 20;
	assert_int_equal(dg_sweep_params_check(&p, info, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "smaller than the largest block"));
	drive_close(&d);
}

/* A default sweep keeps to its budget and says which cells it left out. */
static void budget_thins(void **state)
{
	struct drive d;
	struct dg_sweep_params p;

	(void)state;
	drive_open(&d, "wd-red-4tb", 0, false);
	dg_sweep_params_default(&p, dg_device_info(d.dev));
	p.time_budget_ns = 20ull * DG_NS_PER_S;
	struct dg_sweep_result *r = run(&d, &p);
	assert_true(r->device_time_ns <= p.time_budget_ns);
	assert_true(r->thinned);
	printf("20 s budget: %zu of %zu cells in %.1f s\n", r->nmeasured, r->ncells,
	       (double)r->device_time_ns / 1e9);
	assert_true(r->nmeasured > 10 && r->nmeasured < r->ncells);
	size_t skipped = 0;
	for (size_t i = 0; i < r->ncells; i++)
		if (!r->cells[i].measured) {
			assert_non_null(r->cells[i].skipped);
			skipped++;
		}
	assert_int_equal(skipped, r->ncells - r->nmeasured);
	/* the QD 1 and deepest cells come first */
	assert_true(r->cells[0].measured && r->cells[0].qd == 1);
	dg_sweep_result_free(r);
	drive_close(&d);
}

/* The default sweep (60 s budget) stays inside its budget on every preset (exos-x16-16tb and
 * ironwolf-8tb-weak-head included) and on zoo drives, and names why each cell left out was. */
static void default_budget(void **state)
{
	static const char *const all[] = {"wd-red-4tb",	   "hgst-7k1000",
					  "cheetah-15k",   "seagate-st4000vn006",
					  "exos-x16-16tb", "ironwolf-8tb-weak-head"};
	static const uint64_t zoo[] = {17, 21, 37, 44};
	double worst = 0;

	(void)state;
	for (size_t i = 0; i < t_drives(10, 2); i++) {
		struct drive d;
		struct dg_sweep_params p;
		drive_open(&d, i < 6 ? all[i] : NULL, i < 6 ? 0 : zoo[i - 6], false);
		dg_sweep_params_default(&p, dg_device_info(d.dev));
		struct dg_sweep_result *r = run(&d, &p);
		double s = (double)r->device_time_ns / 1e9;
		printf("%s: default sweep %.2f s of device time, %zu of %zu cells\n", d.devpath, s,
		       r->nmeasured, r->ncells);
		assert_true(s <= 60.0);
		assert_true(r->nmeasured >= r->ncells / 2);
		for (size_t k = 0; k < r->ncells; k++)
			assert_true(r->cells[k].measured || r->cells[k].skipped);
		worst = s > worst ? s : worst;
		dg_sweep_result_free(r);
		drive_close(&d);
	}
	printf("default sweeps: at most %.2f s of device time (budget 60 s)\n", worst);
}

/* The batch-means standard error of a rate: zero for a steady stream; for batches whose rates
 * alternate 1000 and 1100 per second, sd 50 sqrt(8/7) over sqrt(8) and the mean 1050. */
static void batch_se_known(void **state)
{
	double t[800], x = 0;

	(void)state;
	for (size_t i = 0; i < 800; i++)
		t[i] = 1e-3 * (double)i;
	assert_true(fabs(dg_sweep_batch_se(t, 800)) < 1e-9);
	for (size_t i = 0; i < 800; i++) {
		t[i] = x;
		x += (i / 100) % 2 ? 1.0 / 1100 : 1.0 / 1000;
	}
	double want = 50 * sqrt(8.0 / 7) / sqrt(8.0) / 1050;
	assert_true(fabs(dg_sweep_batch_se(t, 800) - want) < 1e-6 * want);
	assert_true(isnan(dg_sweep_batch_se(t, 15)));
}

/* probe's warning: a partition that does not start on a physical sector. */
static void partition_alignment(void **state)
{
	struct dg_device_info info;
	char msg[8192];

	(void)state;
	memset(&info, 0, sizeof(info));
	strcpy(info.path, "/dev/sdb1");
	info.logical_sector_bytes = 512;
	info.physical_sector_bytes = 4096;
	info.is_partition = true;
	info.partition_start_bytes = 63 * 512;
	assert_int_equal(dg_device_partition_misaligned(&info, msg, sizeof(msg)), 1);
	assert_non_null(strstr(msg, "/dev/sdb1 starts at byte 32256, not aligned to the physical "
				    "sector of 4096 bytes"));
	assert_string_equal(dg_warning_code(msg), "partition-misaligned");
	info.partition_start_bytes = 2048 * 512;
	assert_int_equal(dg_device_partition_misaligned(&info, msg, sizeof(msg)), 0);
	info.partition_start_bytes = 63 * 512;
	info.physical_sector_bytes = 512; /* 512n: every sector start is aligned */
	assert_int_equal(dg_device_partition_misaligned(&info, msg, sizeof(msg)), 0);
	info.physical_sector_bytes = 4096;
	info.is_partition = false;
	assert_int_equal(dg_device_partition_misaligned(&info, msg, sizeof(msg)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(params_refused), cmocka_unit_test(budget_thins),
	    cmocka_unit_test(seq_vs_truth),   cmocka_unit_test(rand_vs_reference),
	    cmocka_unit_test(rmw_inferred),   cmocka_unit_test(partition_alignment),
	    cmocka_unit_test(default_budget), cmocka_unit_test(rmw_zoo_wide),
	    cmocka_unit_test(batch_se_known),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
