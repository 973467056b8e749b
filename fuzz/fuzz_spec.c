/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the drive-spec parser (dg_spec_parse, model.h), the one parser that reads
 * files users hand to diskgeo (sim:PATH, diskgeo model PATH). Besides "no crash, no leak, no
 * sanitizer report", it checks the contract: a refusal is a negative errno with one non-empty
 * line in `err`; an accepted spec has a capacity of whole 512- or 4096-byte sectors, maps its
 * first and last LBA and refuses the LBA past the end, has seek(0) = 0 and finite, non-negative
 * seek times, its drive model serves a read at each end, and (on small drives) its truth has
 * zones that tile the capacity at finite, positive rates.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/diskgeo.h"
#include "diskgeo/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_accepted(const struct dg_spec *spec)
{
	uint32_t sector = dg_spec_sector_bytes(spec);
	uint64_t capacity = dg_spec_capacity_bytes(spec);
	struct dg_chs chs;
	struct dg_drive *drive = NULL;
	uint64_t done_ns = 0, last;

	if (sector != 512 && sector != 4096)
		abort();
	if (capacity == 0 || capacity % sector)
		abort();
	if (!(dg_spec_rpm(spec) > 0) || !dg_spec_name(spec))
		abort();
	last = capacity / sector - 1;
	if (dg_spec_map(spec, 0, &chs) != 0 || dg_spec_map(spec, last, &chs) != 0)
		abort();
	if (dg_spec_map(spec, last + 1, &chs) == 0)
		abort();
	if (dg_spec_seek_ms(spec, 0) != 0.0)
		abort();
	for (uint64_t d = 1; d < 1u << 20; d = d * 7 + 1) {
		double ms = dg_spec_seek_ms(spec, d);
		if (!isfinite(ms) || ms < 0)
			abort();
	}
	double move = dg_spec_move_ms(spec, 0, last);
	if (!isfinite(move) || move < 0)
		abort();

	if (dg_drive_new(spec, &drive) != 0)
		abort();
	/* Either end may lie in an error defect (-EIO); anything else is a bug. */
	int64_t got = dg_drive_access(drive, 0, false, 0, 1, &done_ns);
	if (got != (int64_t)sector && got != -EIO)
		abort();
	got = dg_drive_access(drive, done_ns, false, last, 1, &done_ns);
	if (got != (int64_t)sector && got != -EIO)
		abort();
	if (dg_drive_access(drive, done_ns, false, last + 1, 1, &done_ns) >= 0)
		abort();
	dg_drive_free(drive);

	/* The truth, on drives small enough to keep the fuzzer fast (its cost grows with the
	 * cylinders): zones tile [0, capacity) in order at finite positive rates, and the seek
	 * figures are ordered. */
	if (capacity > (1ull << 30))
		return;
	struct dg_truth *truth = NULL;
	if (dg_truth_compute(spec, &truth) != 0)
		abort();
	if (truth->capacity_bytes != capacity || !truth->nzones || !truth->nrecording)
		abort();
	uint64_t at = 0;
	for (size_t i = 0; i < truth->nzones; i++) {
		const struct dg_truth_zone *z = &truth->zones[i];
		if (z->start_bytes != at || z->end_bytes <= z->start_bytes ||
		    !isfinite(z->mb_per_s) || !(z->mb_per_s > 0))
			abort();
		at = z->end_bytes;
	}
	if (at != capacity)
		abort();
	if (!(truth->track_to_track_ms >= 0) || !isfinite(truth->full_stroke_ms) ||
	    !isfinite(truth->average_ms) || truth->average_ms < 0)
		abort();
	double whole = dg_truth_rate_mb_per_s(spec, 0, capacity);
	if (!isfinite(whole) || !(whole > 0))
		abort();
	dg_truth_free(truth);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dg_spec *spec = NULL;
	struct dg_warnings warnings = {0};
	char err[DG_ERRLEN];
	int rc;

	err[0] = '\0';
	rc = dg_spec_parse((const char *)data, size, "fuzz", &spec, &warnings, err, sizeof(err));
	if (rc == 0) {
		if (!spec)
			abort();
		check_accepted(spec);
		dg_spec_free(spec);
	} else {
		/* One clear line: the CLI prints it as "diskgeo: <err>". */
		if (rc > 0 || !err[0] || strchr(err, '\n'))
			abort();
	}
	dg_warnings_free(&warnings);
	return 0;
}
