/* SPDX-License-Identifier: MIT */
/*
 * The track-aligned I/O recommendation (Schindler, Griffin, Lumb & Ganger, FAST'02: track-
 * aligned extents): a request of one track that starts at a track boundary never pays a track
 * switch (the skew) inside it. Measured on the tracks of the first good place: one-track reads,
 * each positioned from the place's reference sector (so no cache holds them) and submitted at
 * delays spread evenly over a turn, aligned to the track's start and shifted by half a track; their
 * mean service times and the gain.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "geometry_priv.h"

#define ALIGN_SAMPLES 32u

/* One positioned read of `len` bytes at `off` (after the reference): its service time. 0, 1
 * (failed or a cache hit), 2 or -errno (-EINVAL: larger than the engine's largest I/O). */
static int timed_read(struct geo *g, uint64_t off, uint32_t len, double frac, double *ms)
{
	struct dg_completion c;
	uint32_t blk = g->s.block_bytes;
	int rc = geo_read(&g->s, g->ref * g->psec, 0, &c);

	if (rc)
		return rc;
	/* submitted `frac` of a turn later: the reference completes at a fixed angle, and without
	 * the delay every read of one target would wait the same */
	uint64_t at = dg_engine_now_ns(g->s.e) + (uint64_t)(frac * g->T_ns);
	g->s.block_bytes = len;
	rc = geo_read(&g->s, off, at, &c);
	g->s.block_bytes = blk;
	if (rc)
		return rc;
	*ms = (double)(c.complete_ns - c.submit_ns) / 1e6;
	return *ms < g->hit_ms ? 1 : 0;
}

int geo_align_measure(struct geo *g, struct dg_geometry_result *r)
{
	struct dg_geometry_align *a = &r->align;
	double sum[2] = {0, 0};
	unsigned n[2] = {0, 0};
	int rc = 0;

	geo_place_begin(g, g->keep[0].start);
	for (unsigned i = 0; i < 2 * ALIGN_SAMPLES && !geo_out_of_time(g); i++) {
		const struct geo_track *t = &g->keep[0];
		unsigned shifted = i % 2;
		uint64_t x = t->start + (shifted ? t->size / 2 : 0);
		double ms;
		/* both kinds at the same spread of delays, so that their waits average alike */
		double frac = ((i / 2) + 0.5) / ALIGN_SAMPLES;
		rc = timed_read(g, x * g->psec, t->size * g->psec, frac, &ms);
		if (rc == -EINVAL) {
			dg_warnings_add(&r->notes,
					"geometry: a track (%u bytes) is larger than the engine's "
					"largest I/O: no track-aligned I/O measurement",
					t->size * g->psec);
			return 0;
		}
		if (rc < 0 || rc == 2)
			return rc;
		if (rc == 0) {
			sum[shifted] += ms;
			n[shifted]++;
		}
	}
	if (n[0] < ALIGN_SAMPLES / 2 || n[1] < ALIGN_SAMPLES / 2) {
		dg_warnings_add(&r->notes,
				"geometry: too few one-track reads for the track-aligned "
				"I/O figure (the budget, or failed reads)");
		return 0;
	}
	a->measured = true;
	a->request_bytes = (uint64_t)g->keep[0].size * g->psec;
	a->boundary_bytes = g->keep[0].start * g->psec;
	a->aligned_ms = sum[0] / n[0];
	a->unaligned_ms = sum[1] / n[1];
	a->gain_percent = 100 * (a->unaligned_ms - a->aligned_ms) / a->unaligned_ms;
	a->samples = n[0] < n[1] ? n[0] : n[1];
	return 0;
}
