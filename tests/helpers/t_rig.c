/* SPDX-License-Identifier: MIT */
/* t_rig_open, t_rig_close, t_zoo_file: see t_helpers.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "diskgeo/device.h"
#include "t_helpers.h"

void t_rig_open(struct t_rig *g, const char *path, unsigned dev_flags, enum dg_engine_kind kind,
		unsigned qd, bool truth)
{
	struct dg_engine_config cfg = {.kind = kind, .qd = qd, .max_io_bytes = 1u << 20};
	char err[DG_ERRLEN] = "";
	int rc;

	memset(g, 0, sizeof(*g));
	rc = dg_device_open(path, dev_flags, &g->dev, NULL, err, sizeof(err));
	if (rc)
		print_message("dg_device_open(%s): %s\n", path, err);
	assert_int_equal(rc, 0);
	rc = dg_engine_open(g->dev, &cfg, &g->e, NULL, err, sizeof(err));
	if (rc)
		print_message("dg_engine_open: %s\n", err);
	assert_int_equal(rc, 0);
	g->spec = dg_device_spec(g->dev);
	if (truth) {
		assert_non_null(g->spec);
		assert_int_equal(dg_truth_compute(g->spec, &g->truth), 0);
	}
}

void t_rig_close(struct t_rig *g)
{
	dg_truth_free(g->truth);
	dg_engine_close(g->e);
	dg_device_close(g->dev);
	dg_errors_free(&g->errors);
	memset(g, 0, sizeof(*g));
}

void t_zoo_file(uint64_t seed, char *path, char *sim, size_t simlen)
{
	char *text = NULL;

	assert_int_equal(dg_spec_random(seed, &text), 0);
	int fd = mkstemps(path, 5);
	assert_true(fd >= 0);
	FILE *out = fdopen(fd, "w");
	assert_non_null(out);
	fputs(text, out);
	free(text);
	assert_int_equal(fclose(out), 0);
	snprintf(sim, simlen, "sim:%s", path);
}
