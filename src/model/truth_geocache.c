/* SPDX-License-Identifier: MIT */
/*
 * The cache and queueing truth a drive spec implies (drive-spec.md: read-ahead, cache_bytes,
 * look-behind, NCQ, the host link, and diskgeo's cache_segments extension: src/model/
 * drive_segments.c).
 */
#include "diskgeo/geocache.h"
#include "model_priv.h"

void dg_truth_geocache(const struct dg_spec *spec, uint32_t block_bytes,
		       struct dg_truth_geocache *t)
{
	/* the drive reads ahead whole logical sectors (src/drive.c: read_ahead_bytes / sector) */
	t->read_ahead_bytes = spec->read_ahead_bytes / spec->sector_bytes * spec->sector_bytes;
	t->cache_bytes = spec->cache_bytes;
	t->look_behind = spec->look_behind;
	t->segments = spec->cache_segments;
	/* a hit: the command overhead, then the block over the host link */
	t->hit_ms = spec->command_overhead_ms + (double)block_bytes / (spec->interface_mbps * 1e3);
	t->ncq_depth = spec->ncq_depth;
}
