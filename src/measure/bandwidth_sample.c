/* SPDX-License-Identifier: MIT */
/*
 * One bandwidth sample: a positioning read, then the timed reads streamed at the queue depth;
 * the rate is the slope of bytes over completion times with the positioning and one-off waits
 * left out (the sampled-curve method of Worthington et al. 1995, timed per read), stalls named.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bandwidth_priv.h"

/* ---- one sample ---- */

bool bw_stopped(const struct ctx *c)
{
	return (c->stop && *c->stop) || c->failing;
}

/* Orders indices of reads by their completion time (`arg`: the times). */
static int cmp_by_done(const void *a, const void *b, void *arg)
{
	const uint64_t *done_ns = arg;
	uint64_t x = done_ns[*(const size_t *)a], y = done_ns[*(const size_t *)b];

	return (x > y) - (x < y);
}

/* The positioning read's length for a sample of `len` bytes. */
uint64_t bw_positioning_bytes(const struct ctx *c, uint64_t len)
{
	uint64_t half = len / 2;

	half -= half % c->align;
	if (half == 0)
		half = c->align;
	return half < c->p.block_bytes ? half : c->p.block_bytes;
}

uint64_t dg_bandwidth_timed_bytes(const struct dg_bandwidth_params *p,
				  const struct dg_device_info *info)
{
	struct ctx c = {.p = *p, .align = bw_align_of(info)};

	return p->sample_bytes - bw_positioning_bytes(&c, p->sample_bytes);
}

size_t bw_reads_for(const struct ctx *c, uint64_t len)
{
	uint64_t pos = bw_positioning_bytes(c, len);

	return 1 + (size_t)((len - pos + c->rb - 1) / c->rb);
}

/*
 * Bytes per timed read for samples of `len` bytes: block_bytes, halved (staying a multiple of
 * 4096 and of the sector) until the timed part spans MIN_TIMED_READS reads. A stream of three
 * or four reads leaves the slope to a few completion times, any of them moved by the host (a
 * late wakeup, a request split below the block layer and finished out of order), and too few
 * reads to tell a stalled one from the others; the drive streams smaller reads just as fast.
 */
uint32_t bw_timed_read_bytes(const struct ctx *c, uint64_t len)
{
	uint64_t timed = len - bw_positioning_bytes(c, len);
	uint32_t b = c->p.block_bytes;

	while (timed / b < MIN_TIMED_READS && b / 2 >= 4096 && (b / 2) % 4096 == 0 &&
	       (b / 2) % c->align == 0)
		b /= 2;
	return b;
}

/* Least-squares fit of t on b over points [0, n) with one slope and a new intercept from each
 * point jumps[0..nj) on (increasing). Returns the slope (0 if undefined), *sse its residual. */
static double fit_line(const double *b, const double *t, size_t n, const size_t *jumps, size_t nj,
		       double *sse)
{
	double sbb = 0, sbt = 0, slope = 0;

	*sse = 0;
	for (int pass = 0; pass < 2; pass++) {
		size_t g = 0, i = 0;

		while (i < n) {
			size_t end = n;
			double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0;

			while (g < nj && jumps[g] <= i)
				g++;
			if (g < nj && jumps[g] < n)
				end = jumps[g];
			for (size_t k = i; k < end; k++) {
				s0 += 1;
				s1 += b[k];
				s2 += t[k];
				s3 += b[k] * b[k];
				s4 += b[k] * t[k];
			}
			if (pass == 0) {
				sbb += s3 - s1 * s1 / s0;
				sbt += s4 - s1 * s2 / s0;
			} else {
				double ic = (s2 - slope * s1) / s0;

				for (size_t k = i; k < end; k++)
					*sse +=
					    (t[k] - ic - slope * b[k]) * (t[k] - ic - slope * b[k]);
			}
			i = end;
		}
		if (pass == 0)
			slope = sbb > 0 ? sbt / sbb : 0;
	}
	return slope;
}

/*
 * ms per MiB of a stream from its cumulative points (b[i] MiB done at t[i] ms): the
 * least-squares slope, which the track-to-track skews bias far less than the end points do
 * (a sample spans a fractional number of tracks; the end points see where the skews fall).
 * Each stall is a wait before the point in `jumps[0..nj)` that ends it (a slow spot, a retry,
 * a zone change, a revolution lost while the host was late): a new intercept from there on
 * takes it out exactly, its own transfer and track switches still counted; the points after a
 * late host catching up stay on the line. Without stalls, one wait before point `cand` (the unit
 * that waited far longer beyond the pace than any other; 0 for none) is allowed for when its
 * jump is at least JUMP_FRACTION of the stream's time and it explains most of what the plain
 * line leaves. Returns 0 when there are fewer than 3 points.
 */
static double line_slope(const double *b, const double *t, size_t n, const size_t *jumps, size_t nj,
			 size_t cand, double *jump_ms)
{
	double sse_plain, sse, plain, slope, jump;

	*jump_ms = 0;
	if (n < 3)
		return 0;
	plain = fit_line(b, t, n, jumps, nj, &sse_plain);
	if (nj > 0 || cand == 0 || cand >= n)
		return plain;
	slope = fit_line(b, t, n, &cand, 1, &sse);
	/* The jump: the second intercept less the first, at the slope found. */
	jump = (t[cand] - slope * b[cand]) - (t[cand - 1] - slope * b[cand - 1]);
	if (slope > 0 && jump >= JUMP_FRACTION * (t[n - 1] - t[0]) && sse < 0.5 * sse_plain) {
		*jump_ms = jump;
		return slope;
	}
	return plain;
}

/* Keeps the bytes of a stalled unit (reads c->order[at .. at+n) of a stream whose timed part
 * starts at `timed_off`) for the warning when it waited SLOW_SPOT_MS or more; a spot already
 * kept (another pass) adds its wait. */
static void note_stall(struct ctx *c, uint64_t timed_off, size_t at, size_t n, double ms)
{
	uint64_t lo = UINT64_MAX, hi = 0;

	if (ms < SLOW_SPOT_MS)
		return;
	for (size_t i = at; i < at + n; i++) {
		size_t k = c->order[i];
		uint64_t o = timed_off + (uint64_t)(k - 1) * c->rb;

		if (o < lo)
			lo = o;
		if (o + c->len[k] > hi)
			hi = o + c->len[k];
	}
	for (unsigned j = 0; j < c->nstall_notes; j++) {
		if (c->stall_notes[j].lo == lo && c->stall_notes[j].hi == hi) {
			c->stall_notes[j].ms += ms;
			return;
		}
	}
	if (c->nstall_notes < MAX_STALL_NOTES)
		c->stall_notes[c->nstall_notes++] = (struct stall_note){lo, hi, ms};
	else
		c->stall_notes_more++;
}

/* Waits for every I/O still in flight (after a fatal submit error), ignoring results. */
static void drain(struct ctx *c)
{
	while (dg_engine_inflight(c->e) > 0) {
		int n = dg_engine_reap(c->e, c->comps, 1, c->qd);
		if (n < 0 && n != -EINTR)
			break;
	}
}

/*
 * Streams [off, off+len): read 0 positions (untimed), the rest are timed from its completion;
 * in write mode the rest are writes of the pattern (submitted one by one: the engine copies the
 * data at submission, so one buffer serves them all). Failed I/Os go to c->errors and leave
 * m->ok false. Returns 0, or -errno when the engine refuses a submission (fatal for the run).
 */
/*
 * Whether the wait of unit u (kb[u] MiB in kt[u] ms; `med` ms per MiB the stream's median pace)
 * was the host's: a reply delayed on the host (a busy core, a late wakeup) holds back the
 * completions behind it, which then come in a burst faster than the pace, while the drive
 * streamed on. A slow sector or a retry costs the stream the time: the units after it keep the
 * pace. The host's when the next units (up to CATCH_UP_UNITS, while they run ahead of the pace)
 * make up at least CATCH_UP_FRACTION of the wait.
 */
static bool host_hiccup(const double *kb, const double *kt, size_t nu, size_t u, double med)
{
	double wait = kt[u] - med * kb[u], back = 0;

	for (size_t v = u + 1; v < nu && v <= u + CATCH_UP_UNITS; v++) {
		double ahead = med * kb[v] - kt[v];

		if (ahead <= 0)
			break;
		back += ahead;
	}
	return wait > 0 && back >= CATCH_UP_FRACTION * wait;
}

/*
 * ms per MiB end to end over the units [first, nu) (cumulative points c->cum_b/cum_t, unit
 * sizes and times c->kb/kt, per MiB c->tpb; `med` the median pace): from the first point to
 * the last that no host hiccup holds late (a late reply's end and its burst lie off the pace,
 * up to the first unit that does not run ahead again), less the waits of the drive's own
 * stalls between them. `fallback` when fewer than half the units remain between the two.
 */
static double paced_slope(const struct ctx *c, size_t first, size_t nu, double med, double fallback)
{
	size_t a = first, b = nu;
	double ms;

	for (size_t u = 0; u < nu; u++) {
		size_t v = u + 1;

		if (!(c->tpb[u] > STALL_FACTOR * med) || !host_hiccup(c->kb, c->kt, nu, u, med))
			continue;
		while (v < nu && med * c->kb[v] - c->kt[v] > 0)
			v++;
		/* Points u + 1 .. v are late (the reply, then the burst catching up). */
		if (u + 1 <= a && a <= v)
			a = v + 1 <= nu ? v + 1 : nu;
		if (u + 1 <= b && b <= v)
			b = u;
	}
	if (b <= a || 2 * (b - a) < nu - first || !(c->cum_b[b] > c->cum_b[a]))
		return fallback;
	ms = c->cum_t[b] - c->cum_t[a];
	for (size_t j = a; j < b; j++)
		if (c->tpb[j] > STALL_FACTOR * med && !host_hiccup(c->kb, c->kt, nu, j, med))
			ms -= c->kt[j] - med * c->kb[j];
	return ms > 0 ? ms / (c->cum_b[b] - c->cum_b[a]) : fallback;
}

/* Streams the sample's reads: the positioning read alone, then the timed reads at the queue
 * depth (a write alone, its pattern in c->wbuf). *failed when a read failed; *next reads were
 * submitted. 0, or the engine's -errno (the reads in flight drained). */
static int stream_io(struct ctx *c, uint64_t off, uint64_t len, size_t nreads, bool *failed,
		     size_t *nsent)
{
	uint64_t pos = bw_positioning_bytes(c, len);
	unsigned inflight = 0;
	size_t next = 0;

	while (next < nreads || inflight > 0) {
		int n;

		/* The positioning read goes alone and completes before the stream is submitted:
		 * queued together, the host or the drive may serve a timed read first (FUSE workers
		 * race, NCQ reorders), and the positioning read would then start a second stream
		 * behind the first instead of starting the clock. */
		while (!*failed && next < nreads && inflight < c->qd &&
		       !(next == 1 && inflight > 0)) {
			unsigned want = 0;

			/* Reads go in one batch; a write alone, its pattern in c->wbuf. */
			while (next + want < nreads && inflight + want < c->qd &&
			       !(c->p.write && want > 0) && !(next + want == 1 && want > 0)) {
				size_t k = next + want;
				uint64_t o = k == 0 ? off : off + pos + (uint64_t)(k - 1) * c->rb;
				uint64_t l = k == 0 ? pos : off + len - o;
				bool w = c->p.write && k > 0;

				if (l > (k == 0 ? c->p.block_bytes : c->rb))
					l = k == 0 ? c->p.block_bytes : c->rb;
				c->len[k] = (uint32_t)l;
				if (w && c->wbuf)
					bw_pattern_stamp(c->wbuf, (size_t)l, o);
				c->ios[want] = (struct dg_io){.offset_bytes = o,
							      .length_bytes = (uint32_t)l,
							      .op = w ? DG_IO_WRITE : DG_IO_READ,
							      .tag = k,
							      .data = w ? c->wbuf : NULL};
				want++;
			}
			n = dg_engine_submit(c->e, c->ios, want);
			if (n < 0) {
				drain(c);
				return n;
			}
			for (int i = 0; i < n; i++) {
				if (c->ios[i].op == DG_IO_WRITE)
					bw_note_written(c, c->ios[i].offset_bytes,
							c->ios[i].length_bytes);
			}
			next += (size_t)n;
			inflight += (unsigned)n;
			if ((unsigned)n < want)
				break; /* the engine took fewer: reap first */
		}
		if (inflight == 0)
			break;
		n = dg_engine_reap(c->e, c->comps, 1, c->qd);
		if (n == -EINTR)
			continue;
		if (n < 0) {
			drain(c);
			return n;
		}
		for (int i = 0; i < n; i++) {
			const struct dg_completion *d = &c->comps[i];
			size_t k = (size_t)d->tag;

			inflight--;
			c->done_ns[k] = d->complete_ns;
			if (d->result == (int64_t)d->length_bytes)
				continue;
			*failed = true;
			if ((d->result < 0
				 ? dg_errors_add(c->errors, d->offset_bytes, d->length_bytes,
						 (int)-d->result)
				 : dg_errors_add(c->errors, d->offset_bytes + (uint64_t)d->result,
						 d->length_bytes - (uint64_t)d->result, EIO)) < 0)
				c->nomem = true;
		}
	}
	*nsent = next;
	return 0;
}

/*
 * Timed reads in completion order, grouped into units: reads whose completions were seen
 * within a quarter of the stream's mean interval of each other form one unit (one reap,
 * one timestamp; or requests merged below the block layer, which all finish when the
 * merged one does), so that batching never makes a near-zero interval beside a double
 * one. A read seen by the time the positioning read was had been read before the clock
 * started: left out. Units in c->kb, c->kt (MiB, ms), their reads' count in c->cum_b and
 * where they start in c->order in c->cum_t; returns their count.
 */
static size_t group_units(struct ctx *c, size_t ntimed)
{
	uint64_t prev, t0, tol;
	size_t nu = 0;

	for (size_t i = 0; i < ntimed; i++)
		c->order[i] = i + 1;
	qsort_r(c->order, ntimed, sizeof(*c->order), cmp_by_done, c->done_ns);
	t0 = c->done_ns[0];
	prev = t0;
	tol = ntimed ? (c->done_ns[c->order[ntimed - 1]] - t0) / ntimed / 4 : 0;
	for (size_t i = 0; i < ntimed; i++) {
		size_t k = c->order[i];

		if (c->done_ns[k] <= t0)
			continue;
		if (nu > 0 && c->done_ns[k] - prev <= tol) {
			c->kb[nu - 1] += (double)c->len[k] / (1 << 20);
			c->kt[nu - 1] += (double)(c->done_ns[k] - prev) / 1e6;
			c->cum_b[nu - 1] += 1; /* reads in the unit, until the sums below */
			prev = c->done_ns[k];
			continue;
		}
		c->kb[nu] = (double)c->len[k] / (1 << 20);
		c->kt[nu] = (double)(c->done_ns[k] - prev) / 1e6;
		c->cum_b[nu] = 1;
		c->cum_t[nu] = (double)i; /* where the unit starts in c->order, likewise */
		prev = c->done_ns[k];
		nu++;
	}
	return nu;
}

/* The units of a sample as the stall test leaves them. */
struct units {
	size_t nu;  /* units */
	size_t nk;  /* kept: the first nk of c->kb, c->kt; their sums in c->cum_b, c->cum_t */
	size_t nj;  /* stalled units: jumps of the line, in c->order[0..nj) */
	size_t hic; /* late host replies */
	size_t at1; /* the point after the unit that waited longest, and that unit */
	size_t at1_u;
	double med;	 /* the median ms per MiB (0: too few units) */
	double ex1, ex2; /* the longest and second longest waits beyond it */
};

/*
 * Stalls: units far slower per byte than the stream's median; what they waited beyond the
 * median pace is the stall time. The longest stays in the stream, where the line's one
 * jump takes its wait out exactly (its own transfer and any track switch in it still
 * count); any others are left out whole, bytes and time.
 */
static void find_stalls(struct ctx *c, uint64_t timed_off, size_t ntimed, struct meas *m,
			struct units *k)
{
	double *tmp = c->tpb + ntimed, med = 0, ex1 = 0, ex2 = 0;
	size_t nu = k->nu, nk = 0, nj = 0, hic = 0, at1 = 0, at1_u = 0;

	if (nu >= STALL_MIN_READS) {
		for (size_t u = 0; u < nu; u++)
			c->tpb[u] = tmp[u] = c->kt[u] / c->kb[u];
		med = dg_median(tmp, nu);
	}
	nk = 0;
	for (size_t u = 0; u < nu; u++) {
		if (med > 0 && c->tpb[u] > STALL_FACTOR * med &&
		    host_hiccup(c->kb, c->kt, nu, u, med)) {
			/* The host was late, not the drive: the reads behind it came in a burst,
			 * and the line through both stays on the stream's pace. */
			c->hiccups++;
			hic++;
			c->kb[nk] = c->kb[u];
			c->kt[nk] = c->kt[u];
			nk++;
			continue;
		}
		if (med > 0 && c->tpb[u] > STALL_FACTOR * med) {
			m->stalls += (unsigned)c->cum_b[u];
			m->stall_ms += c->kt[u] - med * c->kb[u];
			note_stall(c, timed_off, (size_t)c->cum_t[u], (size_t)c->cum_b[u],
				   c->kt[u] - med * c->kb[u]);
			/* c->order is no longer needed up to this unit's reads */
			c->order[nj++] = nk + 1;
		}
		/* The unit that waited longest beyond the median pace, if it stands out: the
		 * wait may lie before the point it ends at. */
		if (med > 0) {
			double x = c->kt[u] - med * c->kb[u];

			if (x > ex1) {
				ex2 = ex1;
				ex1 = x;
				at1 = nk + 1;
				at1_u = u;
			} else if (x > ex2) {
				ex2 = x;
			}
		}
		c->kb[nk] = c->kb[u];
		c->kt[nk] = c->kt[u];
		nk++;
	}
	c->cum_b[0] = c->cum_t[0] = 0;
	for (size_t j = 0; j < nk; j++) {
		c->cum_b[j + 1] = c->cum_b[j] + c->kb[j];
		c->cum_t[j + 1] = c->cum_t[j] + c->kt[j];
	}
	*k = (struct units){nu, nk, nj, hic, at1, at1_u, med, ex1, ex2};
}

/*
 * What the drive waited beyond the stream's median pace in units [a, b): its stalls (not the
 * host's late replies) and the one-off wait the line took out (cand > 0: unit at1_u).
 */
static double waits_in(const struct ctx *c, const struct units *k, size_t cand, size_t a, size_t b)
{
	double w = 0;

	if (!(k->med > 0)) /* too few units for a pace: nothing told apart */
		return 0;
	for (size_t j = a; j < b; j++)
		if ((c->tpb[j] > STALL_FACTOR * k->med &&
		     !host_hiccup(c->kb, c->kt, k->nu, j, k->med)) ||
		    (cand > 0 && j == k->at1_u))
			w += c->kt[j] - k->med * c->kb[j];
	return w;
}

/* The spread of the fitted units' rate: the difference of their two halves' rates (MB/s),
 * end to end, with the drive's waits taken out as the rate has them (a stall is reported as
 * stall_ms, not again as a spread of the stream's pace); *out untouched when a half has no
 * time. */
static void half_spread(const struct ctx *c, const struct units *k, size_t cand, size_t first,
			size_t nk, double *out)
{
	size_t h = first + (nk - first) / 2;

	if (h > first && nk > h) {
		double t1 = c->cum_t[h] - c->cum_t[first] - waits_in(c, k, cand, first, h);
		double t2 = c->cum_t[nk] - c->cum_t[h] - waits_in(c, k, cand, h, nk);

		if (t1 > 0 && t2 > 0)
			*out = fabs((c->cum_b[h] - c->cum_b[first]) / t1 -
				    (c->cum_b[nk] - c->cum_b[h]) / t2) *
			       (1 << 20) * 1e3 / DG_MB;
	}
}

/* The sample's rate from its units (find_stalls) into *m; m->ok when it is a measurement. */
static int fit_rate(struct ctx *c, const struct units *k, struct meas *m)
{
	size_t nu = k->nu, nk = k->nk, nj = k->nj, hic = k->hic, at1 = k->at1, at1_u = k->at1_u;
	double med = k->med, ex1 = k->ex1, ex2 = k->ex2, slope, jump_ms;
	size_t first, cand = 0, nfit = 0;

	/*
	 * The rate: a line through the cumulative (MiB, ms) of the units that did not stall, one
	 * one-off wait allowed for. With enough points the clock's start (0, 0) and the first
	 * unit's end are left out: the first timed request reaches the drive a host turnaround
	 * after the positioning read's completion, and while the drive's read-ahead streams on
	 * its completion comes late by that much; every later one is paced by the stream. The
	 * spread: the two halves' rates, end to end, on the same points.
	 */
	first = nk >= MIN_FIT_POINTS + 2 ? 2 : nk >= MIN_FIT_POINTS ? 1 : 0;
	/* A one-off wait stands out from the rest; the track switches recur, and a short
	 * sample's switches alone must not pass for one. */
	if (at1 > first && ex1 > JUMP_UNIQUE * (ex2 > 0 ? ex2 : 0) &&
	    !host_hiccup(c->kb, c->kt, nu, at1_u, med))
		cand = at1 - first;
	for (size_t j = 0; j < nj; j++) /* jumps in the fitted points' numbering */
		c->order[nfit++] = c->order[j] > first ? c->order[j] - first : 0;
	slope = line_slope(c->cum_b + first, c->cum_t + first, nk + 1 - first, c->order, nfit, cand,
			   &jump_ms);
	/* A late host's burst drags the least-squares line (the late points sit off it on one
	 * side), but the points on the pace before the late reply and after its burst stay where
	 * the stream put them: end to end between two such points then, the drive's own stalls
	 * taken out. */
	if (hic > 0 && (nj > 0 || cand == 0))
		slope = paced_slope(c, first, nu, med, slope);
	/* Never faster than end to end (the drive's own waits taken out) by more than the skews
	 * can explain: whatever bent the line that way (a late reply whose burst went unseen)
	 * was the host's. */
	if (slope > 0 && med > 0 && nk > first && c->cum_b[nk] > c->cum_b[first]) {
		double ms = c->cum_t[nk] - c->cum_t[first] - waits_in(c, k, cand, first, nk);

		ms /= c->cum_b[nk] - c->cum_b[first];
		if (ms > 0 && slope < ms / E2E_MARGIN)
			slope = ms / E2E_MARGIN;
	}
	if (!(slope > 0) && c->cum_b[nk] > c->cum_b[first])
		slope = (c->cum_t[nk] - c->cum_t[first]) / (c->cum_b[nk] - c->cum_b[first]);
	if (!(slope > 0) || !isfinite(slope)) {
		/* Nothing completed measurably after the clock started: no rate, and no 0. */
		c->untimed_samples++;
		return 0;
	}
	/*
	 * What the reads' times allow: the fitted bytes over their time less every unit's wait
	 * beyond the median pace (whatever the line took out cannot be more). A line steeper than
	 * that (a few units, a burst after a late host mistaken for the pace) is no measurement.
	 * In write mode a sample is never dropped: its bytes were written, and every range
	 * written is a sample of the result.
	 */
	{
		double bytes = c->cum_b[nk] - c->cum_b[first], ms = c->cum_t[nk] - c->cum_t[first];

		for (size_t j = first; j < nk; j++)
			ms -= fmax(0.0, c->kt[j] - med * c->kb[j]);
		if (!c->p.write && (nk < first + MIN_FIT_POINTS || !(ms > 0) ||
				    ms > TRUST_FACTOR * slope * bytes)) {
			c->untrusted_samples++;
			return 0;
		}
	}
	m->mb_per_s = (1 << 20) / (slope * 1e-3) / DG_MB;
	/* End to end, only the stalls taken out: whole cylinders hold one cylinder switch each,
	 * which the line may take for a one-off wait, and it is part of their time. */
	{
		double ms = c->cum_t[nk] - c->cum_t[first] - waits_in(c, k, 0, first, nk);

		if (ms > 0)
			m->e2e_mb_per_s =
			    (c->cum_b[nk] - c->cum_b[first]) / ms * (1 << 20) * 1e3 / DG_MB;
	}
	/* The one-off wait the line took out belongs to the rate unless the sample straddles a
	 * zone boundary (drive-spec.md: a zone change's rotational wait is no part of the sustained
	 * rate, a cylinder step's is): both rates are kept, and bw_find_zones chooses once the
	 * boundaries are known. A wait before the stream's last completion is never put back:
	 * no later read shows the stream back at its pace, and the host's late last reply looks
	 * the same (test_bandwidth host_hiccups: 8 ms every 23 reads, 4.5-5.3 ms one-offs). */
	if (jump_ms > 0 && cand < nk - first && c->cum_b[nk] > c->cum_b[first])
		m->waited_mb_per_s =
		    m->mb_per_s / (1 + jump_ms / (slope * (c->cum_b[nk] - c->cum_b[first])));
	half_spread(c, k, cand, first, nk, &m->half_spread);
	/* Halves that far apart without a stall to explain it: the completions' times do not
	 * pin a rate down (too short a sample for the host's timing), and a number from them
	 * would be noise. */
	if (!c->p.write && m->stalls == 0 && m->half_spread > TRUST_SPREAD * m->mb_per_s) {
		c->untrusted_samples++;
		return 0;
	}
	m->ok = true;
	return 0;
}

/* One measurement of the sample [off, off + len) into *m; *fast when its units show reads the
 * drive's cache served (bw_fast_units()). 0 or the engine's -errno. */
static int measure_once(struct ctx *c, uint64_t off, uint64_t len, struct meas *m, bool *fast)
{
	uint64_t pos = bw_positioning_bytes(c, len);
	size_t nreads = bw_reads_for(c, len), sent = 0;
	struct units k = {0};
	bool failed = false;
	int rc;

	memset(m, 0, sizeof(*m));
	*fast = false;
	m->off = off + pos;
	m->len = len - pos;
	if (bw_recently_read(c, off + pos, off + len)) {
		rc = bw_flush_stream(c, off, off + len);
		if (rc)
			return rc;
	}
	rc = stream_io(c, off, len, nreads, &failed, &sent);
	if (rc)
		return rc;
	if (failed || sent < nreads) {
		bw_remember(c, off, len, NAN);
		c->failed_samples++;
		return 0;
	}
	k.nu = group_units(c, nreads - 1);
	*fast = bw_fast_units(c, k.nu);
	find_stalls(c, off + pos, nreads - 1, m, &k);
	rc = fit_rate(c, &k, m);
	bw_remember(c, off, len, m->ok ? m->mb_per_s : NAN);
	return rc;
}

/* A sample over bytes read lately that the drive's cache served is measured again once they are
 * out of every segment (bandwidth_cache.c). */
static int measure_io(struct ctx *c, uint64_t off, uint64_t len, struct meas *m)
{
	uint64_t pos = bw_positioning_bytes(c, len);
	double was;
	unsigned age = bw_cached_age(c, off + pos, off + len, &was);
	bool fast, served;
	int rc = measure_once(c, off, len, m, &fast);

	if (rc || age == UINT_MAX)
		return rc;
	rc = bw_cache_check(c, off, off + len, fast, was, m, &served);
	if (rc || !served)
		return rc;
	return measure_once(c, off, len, m, &fast);
}

/* measure_io(), except that a stop request on a device that does not answer (the engine gives
 * up waiting: -ECANCELED) ends the sample unmeasured instead of failing the run. */
int bw_measure(struct ctx *c, uint64_t off, uint64_t len, struct meas *m)
{
	uint64_t failed0 = c->errors->total_bytes;
	int rc = measure_io(c, off, len, m);

	if (rc == -ECANCELED && bw_stopped(c)) {
		m->ok = false;
		return 0;
	}
	if (rc == 0 && c->errors->total_bytes > failed0) {
		if (++c->failed_in_a_row >= MAX_FAILED_SAMPLES_IN_A_ROW)
			c->failing = true;
	} else if (rc == 0) {
		c->failed_in_a_row = 0;
	}
	return rc;
}

void bw_report(struct ctx *c, double units)
{
	double elapsed, eta = -1;

	c->units_done += units;
	if (!c->progress)
		return;
	elapsed = (double)(dg_engine_now_ns(c->e) - c->t0_ns) / 1e9;
	if (c->units_done > 0 && c->units_total > c->units_done)
		eta = elapsed / c->units_done * (c->units_total - c->units_done);
	else if (c->units_total <= c->units_done)
		eta = 0;
	c->progress(c->progress_arg, c->phase,
		    c->units_total > 0 ? fmin(1.0, c->units_done / c->units_total) : 0.0, eta);
}
