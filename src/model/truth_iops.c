/* SPDX-License-Identifier: MIT */
/*
 * The truth of a drive spec: random reads at queue depth q, a reference simulation apart from
 * drive.c (shared/drive-spec.md, "Command queueing"). Split out of truth.c (issue 11).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_priv.h"
#include "truth_priv.h"

/* Written apart from drive.c: the same rules (drive-spec.md "Command queueing", "The host link
 * and command decoding"), none of its code. Read-ahead and caching are left out: a uniform
 * random 4 KiB read over a span of gigabytes almost never lands in the last read's stream. */

struct rq {
	double arrive, held;
	uint64_t lba;
	/* where it lies, found once when the read is issued: a held read is priced again at
	 * every choice the drive makes */
	uint32_t cyl, head, spt;
	double theta; /* the angle of its first sector */
};

/* A read of `lba` issued at `arrive` (held from `held`, -1 while the host keeps it). */
static struct rq rs_read(const struct dg_spec *spec, double arrive, double held, uint64_t lba)
{
	struct rq r = {arrive, held, lba, 0, 0, 0, 0.0};
	struct dg_chs c;
	uint64_t j;
	uint32_t s;

	dg_spec_map(spec, lba, &c);
	const struct dg_zone *z = &spec->zones[c.zone];
	dg_zone_locate(spec, z, lba - z->first_lba, &j, &s, &r.spt);
	r.theta = dg_zone_sector_angle(spec, z, j, s);
	r.cyl = c.cylinder;
	r.head = c.head;
	return r;
}

/* When (ms) the first sector of `r` comes under the head that reaches its track at t. */
static double rs_first_sector(const struct dg_spec *spec, const struct rq *r, double t)
{
	double ph = t / spec->period_ms;
	double w = r->theta - (ph - floor(ph));
	w -= floor(w);
	if (w > 1.0 - 1e-9)
		w = 0.0;
	return t + w * spec->period_ms;
}

/* The first defect that ends past `lba` (the defects are sorted by lba and disjoint). */
static size_t first_defect(const struct dg_spec *spec, uint64_t lba)
{
	size_t lo = 0, hi = spec->ndefects;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (spec->defects[mid].lba + spec->defects[mid].count > lba)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

double dg_truth_random_iops(const struct dg_spec *spec, uint64_t start_bytes, uint64_t span_bytes,
			    uint32_t block_bytes, unsigned qd, unsigned completions, uint64_t seed)
{
	uint32_t sb = spec->sector_bytes, nsec = block_bytes / sb;
	uint64_t lo = start_bytes / sb, blocks = span_bytes / block_bytes;
	unsigned n = spec->ncq_depth, warm = completions / 10 + 100;
	double ovh = spec->command_overhead_ms;
	struct rq *q = calloc(qd, sizeof(*q));
	uint32_t hc = 0, hh = 0;
	double t_free = 0.0, t0 = 0.0, t_end = 0.0;

	if (!q || !nsec || !blocks || lo + blocks * nsec > spec->capacity_sectors) {
		free(q);
		return NAN;
	}
	for (unsigned i = 0; i < qd; i++)
		q[i] = rs_read(spec, 0.0, i < n ? 0.0 : -1.0,
			       lo + dg_splitmix64(&seed) % blocks * nsec);
	for (unsigned done_n = 0; done_n < warm + completions; done_n++) {
		unsigned nh = qd < n ? qd : n, pick = 0;
		double td = INFINITY, best = INFINITY;
		for (unsigned i = 0; i < nh; i++)
			td = fmin(td, q[i].held + ovh);
		td = fmax(td, t_free);
		for (unsigned i = 0; i < nh; i++) {
			if (q[i].held + ovh > td)
				continue;
			double at = rs_first_sector(
			    spec, &q[i],
			    td + dg_spec_track_move_ms(spec, hc, hh, q[i].cyl, q[i].head));
			if (at < best) {
				best = at;
				pick = i;
			}
		}
		const struct rq *r = &q[pick];
		uint64_t lba = r->lba;
		double first = rs_first_sector(
		    spec, r, td + dg_spec_track_move_ms(spec, hc, hh, r->cyl, r->head));
		/* the media time of the block: every track's share of T and, on a block that
		 * crosses tracks, every transition's move and wait (drive-spec.md "The model") */
		double done = first + nsec * spec->period_ms / r->spt;
		size_t zi = dg_spec_zone_of(spec, lba);
		const struct dg_zone *bz = &spec->zones[zi];
		if (spec->v2 && lba + nsec <= bz->first_lba + bz->sectors)
			done = first + dg_truth_walk_ms(spec, bz, lba - bz->first_lba,
							lba + nsec - bz->first_lba);
		double link = first + (double)block_bytes / (spec->interface_mbps * 1e3);
		if (link > done)
			done = link;
		/* slow defects on the way cost their revolutions (sorted and disjoint: from the
		 * first that ends past lba) */
		for (size_t i = first_defect(spec, lba);
		     i < spec->ndefects && spec->defects[i].lba < lba + nsec; i++)
			if (!spec->defects[i].error)
				done += ceil(spec->defects[i].extra_ms / spec->period_ms - 1e-12) *
					spec->period_ms;
		t_free = done;
		hc = r->cyl;
		hh = r->head;
		/* v1 drives serialise the overhead after the media: no overlap */
		if (!spec->v2)
			t_free = done;
		memmove(&q[pick], &q[pick + 1], (qd - pick - 1) * sizeof(*q));
		for (unsigned i = 0; i + 1 < qd && i < n; i++)
			if (q[i].held < 0)
				q[i].held = fmax(q[i].arrive, spec->v2 ? td : done);
		/* the closed loop: the host sends the next read at once */
		q[qd - 1] = rs_read(spec, done, qd - 1 < n ? done : -1.0,
				    lo + dg_splitmix64(&seed) % blocks * nsec);
		if (done_n + 1 == warm)
			t0 = done;
		t_end = done;
	}
	free(q);
	return (double)completions / ((t_end - t0) / 1e3);
}
