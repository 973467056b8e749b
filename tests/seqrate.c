/* SPDX-License-Identifier: MIT */
#include "seqrate.h"

#include <errno.h>

#include "diskgeo/diskgeo.h"
#include "simpattern.h"

#define MiB   (1024u * 1024u)
#define BATCH 16u

/* Sums for the least-squares line of bytes against time. */
struct fit {
	double n, st, sb, stt, stb;
};

static void fit_add(struct fit *f, double t_s, double bytes)
{
	f->n += 1;
	f->st += t_s;
	f->sb += bytes;
	f->stt += t_s * t_s;
	f->stb += t_s * bytes;
}

static double fit_slope(const struct fit *f)
{
	double den = f->n * f->stt - f->st * f->st;

	return den > 0 ? (f->n * f->stb - f->st * f->sb) / den : -1;
}

double dg_test_seq_rate(struct dg_engine *e, uint64_t offset, uint64_t length, bool check,
			uint64_t *first_end)
{
	struct dg_completion c[BATCH];
	uint64_t next = offset, end = offset + length, t_first = 0, bytes = 0;
	bool have_first = false;
	struct fit fit = {0};

	*first_end = offset;
	while (next < end || dg_engine_inflight(e) > 0) {
		struct dg_io io[BATCH];
		unsigned n = 0;
		int got;

		while (n < dg_engine_free_slots(e) && n < BATCH && next < end) {
			io[n++] = (struct dg_io){
			    .offset_bytes = next, .length_bytes = MiB, .op = DG_IO_READ};
			next += MiB;
		}
		if (n && dg_engine_submit(e, io, n) != (int)n)
			return -1;
		while ((got = dg_engine_reap(e, c, 1, BATCH)) == -EINTR)
			;
		if (got < 1)
			return -1;
		for (int i = 0; i < got; i++) {
			if (c[i].result != MiB ||
			    (check &&
			     dg_simpattern_check(c[i].data, c[i].offset_bytes, 4096) != 4096))
				return -1;
			if (!have_first) {
				have_first = true;
				t_first = c[i].complete_ns;
				*first_end = c[i].offset_bytes + MiB;
			} else {
				bytes += MiB;
			}
			fit_add(&fit, (double)(c[i].complete_ns - t_first) / 1e9, (double)bytes);
		}
	}
	return fit.n > 2 ? fit_slope(&fit) / DG_MB : -1;
}
