/* SPDX-License-Identifier: MIT */
/*
 * The rotation step (rotation.c) against the truth of the drive spec, on sim: drives in
 * virtual time (deterministic): the period within 0.1 % (issue 13), on zoo drives whose first
 * accesses mislead the method. The presets and the other zoo drives are asserted with the whole
 * seek profile in test_seek.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "diskgeo/model.h"
#include "diskgeo/seek.h"
#include "t_helpers.h"

/* The rotation step alone (no curve, no spans) on zoo drive `seed` with the run's `run_seed`:
 * the period within 0.1 % of the truth. */
static void check_rotation_zoo(uint64_t seed, uint64_t run_seed)
{
	char path[] = "/tmp/diskgeo-zoo-XXXXXX.json", sim[64];
	struct dg_seek_params p;
	struct dg_seek_result *r = NULL;
	struct dg_truth *t;
	struct t_rig g;

	t_zoo_file(seed, path, sim, sizeof(sim));
	t_rig_open(&g, sim, 0, DG_ENGINE_SIM, 1, false);
	assert_int_equal(dg_truth_compute(dg_device_spec(g.dev), &t), 0);
	dg_seek_params_default(&p);
	p.curve = p.spans = false;
	p.seed = run_seed;
	assert_int_equal(
	    dg_seek_run(g.e, dg_device_info(g.dev), &p, &g.errors, NULL, NULL, NULL, &r), 0);
	print_message("zoo %llu, seed %llu: rpm %.3f (%.3f)\n", (unsigned long long)seed,
		      (unsigned long long)run_seed, r->rpm, t->rpm);
	assert_true(r->rotating);
	assert_true(fabs(r->rpm / t->rpm - 1) < 0.001);
	dg_seek_result_free(r);
	dg_truth_free(t);
	t_rig_close(&g);
	unlink(path);
}

/*
 * Rotation where the device's first accesses mislead (issue 13): zoo 42 with seed 3 (a
 * serpentine whose Q reads on the track before P's come most of a turn later: the highest
 * group of a fine stage is not P's track), zoo 29 and zoo 193 alone (a few P moves much shorter
 * than the rest: the bound on P's wait from the single shortest access left no P to sample,
 * and the places ran out). Each used to report no rotation.
 */
static void test_rotation_zoo(void **state)
{
	(void)state;
	check_rotation_zoo(42, 3);
	check_rotation_zoo(29, 1);
	check_rotation_zoo(193, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rotation_zoo),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
