/* SPDX-License-Identifier: MIT */
/*
 * Cache segments, diskgeo's extension of the drive model (drive-spec.md keeps one segment: the
 * read-ahead stream's). Real drives split their cache into segments, one per recent stream, and
 * serve a request from any of them (Schindler & Ganger 2000 measure their count). With
 * cache_segments N > 1 the stream's segment holds cache_bytes / N, and when a positioned access
 * leaves a stream, the range that stream has in its segment is kept; at most N - 1 kept
 * segments, the least recently used dropped first. A request wholly inside a kept segment is a
 * cache hit and makes that segment the most recently used; the stream reads on meanwhile.
 * It exists to prove that no measurement relies on an old place being out of the cache.
 */
#include <string.h>

#include "model_priv.h"

/* Moves entry i to the back (the most recently used). */
static void to_back(struct dg_kept_segments *k, unsigned i)
{
	uint64_t lo = k->lo[i], hi = k->hi[i];

	memmove(&k->lo[i], &k->lo[i + 1], (k->n - i - 1) * sizeof(k->lo[0]));
	memmove(&k->hi[i], &k->hi[i + 1], (k->n - i - 1) * sizeof(k->hi[0]));
	k->lo[k->n - 1] = lo;
	k->hi[k->n - 1] = hi;
}

void dg_kept_push(struct dg_kept_segments *k, uint64_t lo, uint64_t hi)
{
	if (k->max == 0 || hi <= lo)
		return;
	if (k->n == k->max) /* drop the least recently used */
		to_back(k, 0);
	else
		k->n++;
	k->lo[k->n - 1] = lo;
	k->hi[k->n - 1] = hi;
}

bool dg_kept_hit(struct dg_kept_segments *k, uint64_t lba, uint64_t end, bool touch)
{
	for (unsigned i = k->n; i-- > 0;)
		if (lba >= k->lo[i] && end <= k->hi[i]) {
			if (touch)
				to_back(k, i);
			return true;
		}
	return false;
}
