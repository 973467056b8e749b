/* SPDX-License-Identifier: MIT */
/*
 * Where a range of a disk sits on its surface and what it can expect from it, from the disk's
 * profile (profile_read.h): the answer DBAs placing data on the outer tracks ask for
 * (`diskgeo probe PARTITION --profile DISK.json`).
 */
#ifndef DISKGEO_PLACEMENT_H
#define DISKGEO_PLACEMENT_H

#include <stdint.h>

#include "profile_read.h"

struct dg_placement {
	uint64_t start_bytes, end_bytes;   /* the range on the whole disk */
	uint64_t disk_bytes;		   /* the profile's device size */
	double start_percent, end_percent; /* of the surface, from the outer edge (LBA 0) */
	double seq_mb_per_s;		   /* sequential rate over the range (its zones) */
	double read_time_s;		   /* reading all of it sequentially */
	double random_ms, random_iops;	   /* a random QD1 read of `block_bytes` inside the range */
	const char *random_from; /* "iops.spans" (a measured span matches) or "seek curve" */
};

/*
 * Places [start, start + len) of the profiled disk. The sequential rate integrates the curve
 * over the range; the random read time is taken from a measured span that matches the range
 * (start and length within 1 % of the disk), else computed as the drive model does it:
 * command overhead + the mean seek over uniformly random pairs of places in the range (the
 * profile's seek curve, seek at LBA distance d, weighted 2(L - d)/L^2) + half a revolution +
 * the transfer. Returns 0, or -EINVAL with one line in err when the range is outside the disk
 * or the profile lacks the curve (no zones) or, for the random figure, rotation and seek points
 * (then random_ms is NaN and 0 is still returned).
 */
int dg_placement_compute(const struct dg_profile_data *p, uint64_t start, uint64_t len,
			 uint32_t block_bytes, struct dg_placement *out, char *err, size_t errlen);

/* The size in bytes of the whole disk `kernel_name` ("sdb") from /sys/class/block/NAME/size.
 * Returns 0 or -errno. */
int dg_sysfs_disk_bytes(const char *kernel_name, uint64_t *bytes);

#endif
