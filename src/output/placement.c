/* SPDX-License-Identifier: MIT */
/* Where a range sits on the surface, and its expected rates (placement.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/compare.h"
#include "diskgeo/diskgeo.h"
#include "diskgeo/placement.h"

/* Seek time at LBA distance d from the profile's points: linear between points, from 0 below
 * the first one, the last point's value beyond it. */
static double seek_at(const struct dg_profile_data *p, double d)
{
	const struct dg_pr_point *pt = p->points;
	size_t n = p->npoints;

	if (d <= 0)
		return 0;
	if (d <= (double)pt[0].distance_bytes)
		return pt[0].distance_bytes ? pt[0].seek_ms * d / (double)pt[0].distance_bytes
					    : pt[0].seek_ms;
	for (size_t i = 1; i < n; i++)
		if (d <= (double)pt[i].distance_bytes) {
			double x0 = (double)pt[i - 1].distance_bytes,
			       x1 = (double)pt[i].distance_bytes;
			double f = x1 > x0 ? (d - x0) / (x1 - x0) : 1;

			return pt[i - 1].seek_ms + f * (pt[i].seek_ms - pt[i - 1].seek_ms);
		}
	return pt[n - 1].seek_ms;
}

/* The mean of seek(D) for D the distance between two uniformly random places in a span of L
 * bytes: density 2(L - d)/L^2 (midpoint rule, fine enough for a curve sampled at ~40 points).
 * The curve is a mean over the whole drive; `scale` turns the range's byte distances into the
 * drive's typical ones (below). */
static double mean_seek_ms(const struct dg_profile_data *p, double L, double scale)
{
	const int steps = 4000;
	double sum = 0;

	for (int i = 0; i < steps; i++) {
		double d = (i + 0.5) / steps * L;

		sum += seek_at(p, d * scale) * 2 * (L - d) / (L * L) * (L / steps);
	}
	return sum;
}

int dg_placement_compute(const struct dg_profile_data *p, uint64_t start, uint64_t len,
			 uint32_t block_bytes, struct dg_placement *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->random_ms = out->random_iops = NAN;
	if (!len || start > p->size_bytes || len > p->size_bytes - start) {
		snprintf(err, errlen,
			 "%s: the range %llu + %llu bytes is not inside its %llu-byte device",
			 p->path, (unsigned long long)start, (unsigned long long)len,
			 (unsigned long long)p->size_bytes);
		return -EINVAL;
	}
	if (!p->nzones) {
		snprintf(err, errlen, "%s: has no bandwidth curve (bandwidth.zones)", p->path);
		return -EINVAL;
	}
	out->start_bytes = start;
	out->end_bytes = start + len;
	out->disk_bytes = p->size_bytes;
	out->start_percent = 100.0 * (double)start / (double)p->size_bytes;
	out->end_percent = 100.0 * (double)out->end_bytes / (double)p->size_bytes;
	out->seq_mb_per_s = dg_profile_rate_mb_per_s(p, start, out->end_bytes);
	out->read_time_s = (double)len / (out->seq_mb_per_s * DG_MB);

	uint64_t slack = p->size_bytes / 100;
	for (size_t i = 0; i < p->nspans; i++) {
		const struct dg_pr_span *s = &p->spans[i];
		uint64_t ds =
		    s->start_bytes > start ? s->start_bytes - start : start - s->start_bytes;
		uint64_t dl = s->span_bytes > len ? s->span_bytes - len : len - s->span_bytes;

		if (s->block_bytes == block_bytes && ds <= slack && dl <= slack) {
			out->random_iops = s->iops;
			out->random_ms = 1e3 / s->iops;
			out->random_from = "iops.spans";
			return 0;
		}
	}
	if (!p->npoints || isnan(p->period_ms))
		return 0;
	/* A seek crosses cylinders, and a cylinder holds bytes in proportion to the sequential
	 * rate there: d bytes in the range are d x (the drive's mean rate) / (the range's) bytes
	 * of a typical place on the drive, the mean rate being the harmonic one (size over read
	 * time) because cylinders are counted, not bytes. */
	double scale =
	    (double)p->size_bytes / dg_profile_read_time_s(p) / DG_MB / out->seq_mb_per_s;
	double overhead = isnan(p->command_overhead_ms) ? 0 : p->command_overhead_ms;
	out->random_ms = overhead + mean_seek_ms(p, (double)len, scale) + p->period_ms / 2 +
			 (double)block_bytes / (out->seq_mb_per_s * DG_MB) * 1e3;
	out->random_iops = 1e3 / out->random_ms;
	out->random_from = "seek curve";
	return 0;
}

int dg_sysfs_disk_bytes(const char *kernel_name, uint64_t *bytes)
{
	char path[128];
	unsigned long long sectors;
	FILE *f;
	int ok;

	if (!kernel_name[0] || strchr(kernel_name, '/') || strlen(kernel_name) > 64)
		return -EINVAL;
	snprintf(path, sizeof(path), "/sys/class/block/%s/size", kernel_name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ok = fscanf(f, "%llu", &sectors) == 1;
	fclose(f);
	if (!ok)
		return -EIO;
	*bytes = (uint64_t)sectors * 512; /* sysfs counts 512-byte units whatever the sector */
	return 0;
}
