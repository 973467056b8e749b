/* SPDX-License-Identifier: MIT */
/*
 * The truth of a sequential sweep cell, derived from the drive spec's rules (drive-spec.md), not
 * read off the request-level model: a stream of `block_bytes` requests kept `qd` deep over a
 * range moves no faster than
 *  - the media over that range (dg_truth_rate_mb_per_s: every track's T and every skew crossed,
 *    capped by the host link), read ahead so that no revolution is lost between requests;
 *  - the commands: at QD 1 each request costs the command overhead and then its transfer over
 *    the link, one after the other (the next is only sent when the last completed); deeper, the
 *    drive decodes the next held command while the link carries the last, so the slower of the
 *    two paces the stream.
 */
#include "diskgeo/model.h"

double dg_truth_seq_block_mb_per_s(const struct dg_spec *spec, uint64_t offset_bytes,
				   uint64_t length_bytes, uint32_t block_bytes, unsigned qd,
				   double overhead_ms, double interface_mb_per_s)
{
	double media = dg_truth_rate_mb_per_s(spec, offset_bytes, length_bytes);
	double link_ms = (double)block_bytes / (interface_mb_per_s * 1e3);
	double per_cmd_ms =
	    qd <= 1 ? overhead_ms + link_ms : (overhead_ms > link_ms ? overhead_ms : link_ms);
	double cmd = per_cmd_ms > 0 ? (double)block_bytes / (per_cmd_ms * 1e3) : media;

	return cmd < media ? cmd : media;
}
