/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the drive-spec parser (dg_spec_parse, model.h), the one parser that reads
 * files users hand to diskgeo (sim:PATH, diskgeo model PATH). Besides "no crash, no leak, no
 * sanitizer report", it checks the contract: a refusal is a negative errno with one non-empty
 * line in `err`; an accepted spec has a capacity of whole 512- or 4096-byte sectors, maps its
 * first and last LBA and refuses the LBA past the end, has seek(0) = 0 and finite, non-negative
 * seek times, its drive model serves a read at each end, and its truth has zones that tile the
 * capacity at finite, positive rates.
 *
 * Cost (issue 15): the spec limits bound the work of everything an accepted spec can ask for, so
 * the truth runs on every accepted spec, with the costliest of what `diskgeo model` computes
 * (seek at LBA distances, random reads over spans); fuzz/run.sh gives each input a time limit
 * (-timeout) that fails the run, and a max_len large enough for 1024 zones.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/diskgeo.h"
#include "diskgeo/model.h"
#include "model_priv.h" /* the limits, checked against what was accepted */
#include "util.h"

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
	/* every documented limit holds for what was accepted; defects sorted and disjoint */
	if (!spec->nzones || spec->nzones > DG_SPEC_MAX_ZONES ||
	    spec->ndefects > DG_SPEC_MAX_DEFECTS || spec->cylinders > DG_SPEC_MAX_CYLINDERS ||
	    spec->geometry_sectors > (1ull << 48))
		abort();
	for (size_t i = 0; i < spec->nzones; i++)
		if (spec->zones[i].spt > DG_SPEC_MAX_SPT)
			abort();
	for (size_t i = 1; i < spec->ndefects; i++)
		if (spec->defects[i - 1].lba + spec->defects[i - 1].count > spec->defects[i].lba)
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

	/* The truth, on every accepted drive: zones tile [0, capacity) in order at finite positive
	 * rates, and the seek figures are ordered. */
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
	/* what `diskgeo model` adds, at the distances that cost the most: one sector (the walk
	 * inside zones), a third of the drive (across zones) and the capacity (the full stroke);
	 * then random reads over the whole drive, its first and its last tenth. Each costs
	 * O(cylinders or tracks) at worst, so this bounds an input's time as `model` does. */
	const uint64_t dists[] = {sector, capacity / 3 / sector * sector, capacity};
	for (size_t i = 0; i < ARRAY_SIZE(dists); i++) {
		double ms = dg_truth_seek_at_ms(spec, dists[i]);
		if (!isfinite(ms) || ms < 0)
			abort();
	}
	static const double spans[][2] = {{0, 1.0}, {0, 0.1}, {0.9, 0.1}};
	for (size_t i = 0; i < ARRAY_SIZE(spans); i++) {
		uint64_t start = (uint64_t)(spans[i][0] * (double)capacity) / sector * sector;
		uint64_t len = (uint64_t)(spans[i][1] * (double)capacity) / sector * sector;
		if (start + len > capacity)
			len = capacity - start;
		double ms = dg_truth_random_ms(spec, start, len ? len : sector, 4096);
		if (!isfinite(ms) || !(ms > 0))
			abort();
	}
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
