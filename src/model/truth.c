/* SPDX-License-Identifier: MIT */
/*
 * The truth a drive spec implies (shared/drive-spec.md, "The truth a spec implies"), computed
 * from the geometry in closed form or by exact summation — never by running drive.c — so that
 * the simulator and the truth check each other.
 *
 *  - Zone rate: bytes / (sectors*T/S + sum over the zone's transitions of their time), a
 *    transition's time being the move tau plus the wait until the skewed sector 0 comes round:
 *    tau + ((k*T/S - tau) mod T).
 *  - Mean moves over random LBA pairs: exact double sums over cylinders, weighted by the sectors
 *    each cylinder holds in the range, done over runs of equally weighted cylinders with second
 *    order prefix sums of seek(d), plus the head switches of pairs on one cylinder.
 *  - Seek at an LBA distance: exact, piece by piece over the pairs of tracks (x, x+D) meet,
 *    with the repeats multiplied (a cylinder, a band, a head's pass) and closed forms where
 *    x and x+D lie on one pass, or in zones farther apart than the seek curve's boundary
 *    (truth_seek.c).
 *  - Sequential walks and the mean move: counted per head, pass and band, never per track.
 *  - Random reads at queue depth q: a reference simulation (truth_iops.c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_priv.h"
#include "truth_priv.h"

/* The time a sequential walk loses at one transition of kind k in zone z. */
static double transition_ms(const struct dg_spec *spec, const struct dg_zone *z, int k)
{
	double T = spec->period_ms;
	double tau = z->move_ms[k];
	double w = fmod((double)z->skew[k] * T / z->spt - tau, T);

	if (w < 0)
		w += T;
	if (w > T * (1.0 - 1e-9))
		w = 0.0;
	return tau + w;
}

/* Sectors of zone z inside the capacity. */
static uint64_t zone_used(const struct dg_spec *spec, const struct dg_zone *z)
{
	if (z->first_lba >= spec->capacity_sectors)
		return 0;
	uint64_t left = spec->capacity_sectors - z->first_lba;
	return left < z->sectors ? left : z->sectors;
}

/* Time in ms to read the zone's first `used` sectors sequentially (once positioned). */
static double zone_time_ms(const struct dg_spec *spec, const struct dg_zone *z, uint64_t used)
{
	uint64_t n[DG_TR_N];
	double t = (double)used * spec->period_ms / z->spt;

	dg_zone_transitions(spec, z, (used - 1) / z->spt, n);
	for (int k = 0; k < DG_TR_N; k++)
		if (n[k])
			t += (double)n[k] * transition_ms(spec, z, k);
	return t;
}

/* ---- version 2: walks over per-surface tracks ---- */

/* The time lost at a transition of kind k into head h's track (its skew in that head's
 * sectors): the move, then the wait for the skewed sector 0. */
static double transition_h_ms(const struct dg_spec *spec, const struct dg_zone *z, int k,
			      uint32_t h)
{
	double T = spec->period_ms;
	double tau = z->move_ms[k];
	uint32_t S = z->hspt[h];
	double w = fmod((double)z->hskew[k * spec->heads + h] * T / S - tau, T);

	if (w < 0)
		w += T;
	if (w > T * (1.0 - 1e-9))
		w = 0.0;
	return tau + w;
}

/*
 * Per head h, the tracks of zone z with index in [0, j) on head h (nt[h]), and the transitions
 * of each kind k into those of them with index >= 1 (tr[k * heads + h]): the counts of
 * dg_zone_transition_into summed in closed form, O(heads).
 */
static void head_counts(const struct dg_spec *spec, const struct dg_zone *z, uint64_t j,
			uint64_t *nt, uint64_t *tr)
{
	uint64_t H = spec->heads;

	memset(tr, 0, DG_TR_N * H * sizeof(*tr));
	if (spec->layout == DG_LAYOUT_CYLINDER) {
		uint64_t c = j / H, r = j % H;
		for (uint64_t h = 0; h < H; h++)
			nt[h] = c + (h < r);
		/* track k >= 1 is entered by a head switch unless k % H == 0 (a cylinder step) */
		for (uint64_t h = 1; h < H; h++)
			tr[DG_TR_HEAD * H + h] = nt[h];
		tr[DG_TR_CYL * H] = nt[0] ? nt[0] - 1 : 0;
		return;
	}
	/* serpentine: whole bands (all K cylinders: only a zone's last band is short), then the
	 * first i tracks of band B */
	uint64_t K = spec->band_cylinders, B = j / (K * H), i = j - B * K * H;
	uint64_t kb = dg_zone_band_cylinders(spec, z, B);
	uint64_t hd = i / kb, st = i % kb;
	for (uint64_t h = 0; h < H; h++) {
		uint64_t n = h < hd ? kb : h == hd ? st : 0;
		nt[h] = B * K + n;
		tr[DG_TR_CYL * H + h] = B * (K - 1) + (n ? n - 1 : 0);
		if (h)
			tr[DG_TR_HEAD * H + h] = B + (n ? 1 : 0);
	}
	/* into the first track of every band but the zone's first */
	tr[DG_TR_BAND * H] = j ? (j - 1) / (K * H) : 0;
}

/* Time (ms) to walk zone-relative sectors [a, b) of zone z once positioned at a: every track's
 * share of T and every transition crossed (drive-spec.md, "A sequential range's true rate"),
 * counted per head and kind in closed form: O(heads). */
double dg_truth_walk_ms(const struct dg_spec *spec, const struct dg_zone *z, uint64_t a, uint64_t b)
{
	uint64_t j, jl, H = spec->heads;
	uint32_t s, spt, sl, sptl;
	double T = spec->period_ms;

	if (b <= a)
		return 0.0;
	dg_zone_locate(spec, z, a, &j, &s, &spt);
	dg_zone_locate(spec, z, b - 1, &jl, &sl, &sptl);
	if (j == jl)
		return (double)(b - a) * T / spt;
	/* the partial first and last tracks */
	double t = (double)(spt - s) * T / spt + (double)(sl + 1) * T / sptl;
	uint64_t *nt = malloc((2 * H + 2 * DG_TR_N * H) * sizeof(*nt));
	if (!nt)
		return NAN;
	uint64_t *nt2 = nt + H, *tr = nt2 + H, *tr2 = tr + DG_TR_N * H;
	/* the whole tracks j+1 .. jl-1, head by head */
	head_counts(spec, z, j + 1, nt, tr);
	head_counts(spec, z, jl, nt2, tr2);
	for (uint64_t h = 0; h < H; h++)
		if (nt2[h] > nt[h])
			t += (double)(nt2[h] - nt[h]) * ((double)z->hspt[h] * T / z->hspt[h]);
	/* the transitions into tracks j+1 .. jl */
	head_counts(spec, z, jl + 1, nt2, tr2);
	for (int k = 0; k < DG_TR_N; k++)
		for (uint64_t h = 0; h < H; h++)
			if (tr2[k * H + h] > tr[k * H + h])
				t += (double)(tr2[k * H + h] - tr[k * H + h]) *
				     transition_h_ms(spec, z, k, (uint32_t)h);
	free(nt);
	return t;
}

static double zone_rate(const struct dg_spec *spec, const struct dg_zone *z)
{
	if (z->per_surface) {
		uint64_t used = zone_used(spec, z);
		return (double)used * spec->sector_bytes / DG_MB /
		       (dg_truth_walk_ms(spec, z, 0, used) / 1e3);
	}
	uint64_t used = zone_used(spec, z);
	return (double)used * spec->sector_bytes / DG_MB / (zone_time_ms(spec, z, used) / 1e3);
}

/* ---- mean move over random pairs of LBAs in [lo, hi) ---- */

struct run {
	uint64_t c0, n; /* cylinders [c0, c0+n), relative */
	double w;	/* sectors per cylinder */
};

/* Q(x) = sum_{d<x} (x-d) f(d) from c1[x] = sum_{d<x} f(d), c2[x] = sum_{d<x} d f(d). */
static double qsum(const double *c1, const double *c2, int64_t x)
{
	if (x <= 0)
		return 0.0;
	return (double)x * c1[x] - c2[x];
}

/*
 * The weights of a zone's tracks [j0, j1) (all inside the range: each counts its whole size S),
 * added to cylinders by difference arrays: per cylinder sum(S) into dw and sum(S^2) into dq
 * (integers, exact). Whole cylinders or bands at once, one head's pass elsewhere: O(bands +
 * heads) instead of O(tracks).
 */
static void add_tracks(const struct dg_spec *spec, const struct dg_zone *z, uint64_t j0,
		       uint64_t j1, uint32_t cmin, int64_t *dw, int64_t *dq)
{
	uint64_t H = spec->heads, sq = 0;

	for (uint64_t h = 0; h < H; h++)
		sq += (uint64_t)z->hspt[h] * z->hspt[h];
#define ADD(c0, c1, v, v2)                                                                         \
	do {                                                                                       \
		dw[(c0)-cmin] += (int64_t)(v);                                                     \
		dw[(c1)-cmin] -= (int64_t)(v);                                                     \
		dq[(c0)-cmin] += (int64_t)(v2);                                                    \
		dq[(c1)-cmin] -= (int64_t)(v2);                                                    \
	} while (0)
	if (spec->layout == DG_LAYOUT_CYLINDER) {
		while (j0 < j1 && (j0 % H || j1 - j0 < H)) {
			uint64_t c = z->first_cyl + j0 / H, S = z->hspt[j0 % H];
			ADD(c, c + 1, S, S * S);
			j0++;
		}
		if (j0 < j1) {
			uint64_t c0 = z->first_cyl + j0 / H, n = (j1 - j0) / H;
			ADD(c0, c0 + n, z->cyl_sectors, sq);
			j0 += n * H;
		}
		while (j0 < j1) {
			uint64_t c = z->first_cyl + j0 / H, S = z->hspt[j0 % H];
			ADD(c, c + 1, S, S * S);
			j0++;
		}
		return;
	}
	uint64_t K = spec->band_cylinders;
	while (j0 < j1) {
		uint64_t b = j0 / (K * H), bt = b * K * H;
		uint64_t kb = dg_zone_band_cylinders(spec, z, b);
		uint64_t be = bt + kb * H, e = j1 < be ? j1 : be;
		uint64_t c0 = z->first_cyl + b * K;
		if (j0 == bt && e == be) {
			ADD(c0, c0 + kb, z->cyl_sectors, sq);
		} else {
			/* head h walks cylinders c0.. forwards when even, backwards when odd */
			for (uint64_t h = (j0 - bt) / kb; h < H && bt + h * kb < e; h++) {
				uint64_t p = bt + h * kb;
				uint64_t s0 = j0 > p ? j0 - p : 0, s1 = e - p < kb ? e - p : kb;
				uint64_t S = z->hspt[h];
				if (h % 2 == 0)
					ADD(c0 + s0, c0 + s1, S, S * S);
				else
					ADD(c0 + kb - s1, c0 + kb - s0, S, S * S);
			}
		}
		j0 = e;
	}
#undef ADD
}

/*
 * The sectors of [lo, hi) per cylinder (w) and the sum of their squares per track (sq), as
 * deltas dw and dq over the cylinders from cmin: the partial first and last tracks of each zone
 * one by one, the whole ones between.
 */
static void range_deltas(const struct dg_spec *spec, uint64_t lo, uint64_t hi, uint32_t cmin,
			 int64_t *dw, int64_t *dq)
{
	size_t zlo = dg_spec_zone_of(spec, lo), zhi = dg_spec_zone_of(spec, hi - 1);

	for (size_t zi = zlo; zi <= zhi; zi++) {
		const struct dg_zone *z = &spec->zones[zi];
		uint64_t a = lo > z->first_lba ? lo : z->first_lba;
		uint64_t b = hi < z->first_lba + z->sectors ? hi : z->first_lba + z->sectors;
		if (a >= b)
			continue;
		uint64_t ja, jb;
		uint32_t sa, sb, sp;
		dg_zone_locate(spec, z, a - z->first_lba, &ja, &sa, &sp);
		dg_zone_locate(spec, z, b - 1 - z->first_lba, &jb, &sb, &sp);
		uint64_t ends[2] = {ja, jb};
		for (int e = 0; e < (ja == jb ? 1 : 2); e++) {
			uint64_t j = ends[e];
			uint64_t t0 = z->first_lba + dg_zone_track_first(spec, z, j, &sp),
				 t1 = t0 + sp;
			uint64_t cnt = (b < t1 ? b : t1) - (a > t0 ? a : t0);
			uint32_t cyl, head;
			dg_zone_track_chs(spec, z, j, &cyl, &head);
			dw[cyl - cmin] += (int64_t)cnt;
			dw[cyl - cmin + 1] -= (int64_t)cnt;
			dq[cyl - cmin] += (int64_t)(cnt * cnt);
			dq[cyl - cmin + 1] -= (int64_t)(cnt * cnt);
		}
		if (jb > ja + 1)
			add_tracks(spec, z, ja + 1, jb, cmin, dw, dq);
	}
}

/* Sum of w_A w_B (seek between every cylinder of run A and of run B) over all pairs of runs,
 * each ordered pair counted (c1, c2: the prefix sums of seek(d) and d*seek(d)). */
static double run_pairs(const struct run *runs, size_t nr, const double *c1, const double *c2)
{
	double pairs = 0.0;
	for (size_t i = 0; i < nr; i++) {
		const struct run *A = &runs[i];
		pairs += A->w * A->w * 2.0 * qsum(c1, c2, (int64_t)A->n);
		for (size_t k = i + 1; k < nr; k++) {
			const struct run *B = &runs[k];
			int64_t a1 = (int64_t)A->c0, a2 = a1 + (int64_t)A->n;
			int64_t b1 = (int64_t)B->c0, b2 = b1 + (int64_t)B->n;
			double x = qsum(c1, c2, b2 - a1) - qsum(c1, c2, b1 - a1) -
				   qsum(c1, c2, b2 - a2) + qsum(c1, c2, b1 - a2);
			pairs += 2.0 * A->w * B->w * x;
		}
	}
	return pairs;
}

static double mean_move_ms(const struct dg_spec *spec, uint64_t lo, uint64_t hi, int *rc)
{
	double *w = NULL, *sq = NULL, *c1 = NULL, *c2 = NULL;
	int64_t *dw = NULL, *dq = NULL;
	struct run *runs = NULL;
	double result = 0.0;
	size_t zlo = dg_spec_zone_of(spec, lo), zhi = dg_spec_zone_of(spec, hi - 1);
	uint32_t cmin, cmax;

	*rc = -ENOMEM;
	/* the cylinders the range can touch: those of its zones */
	cmin = spec->zones[zlo].first_cyl;
	cmax = spec->zones[zhi].first_cyl + spec->zones[zhi].cylinders - 1;
	uint64_t nc = (uint64_t)cmax - cmin + 1;
	w = calloc(nc, sizeof(double));
	sq = calloc(nc, sizeof(double));
	c1 = malloc((nc + 1) * sizeof(double));
	c2 = malloc((nc + 1) * sizeof(double));
	runs = malloc(nc * sizeof(*runs));
	dw = calloc(nc + 1, sizeof(*dw));
	dq = calloc(nc + 1, sizeof(*dq));
	if (!w || !sq || !c1 || !c2 || !runs || !dw || !dq)
		goto err;
	range_deltas(spec, lo, hi, cmin, dw, dq);
	int64_t accw = 0, accq = 0;
	for (uint64_t c = 0; c < nc; c++) {
		accw += dw[c];
		accq += dq[c];
		w[c] = (double)accw;
		sq[c] = (double)accq;
	}
	/* head switches: pairs on one cylinder but different tracks */
	double total = (double)(hi - lo);
	double same_cyl = 0.0;
	for (uint64_t c = 0; c < nc; c++)
		same_cyl += w[c] * w[c] - sq[c];
	/* runs of equally weighted cylinders */
	size_t nr = 0;
	for (uint64_t c = 0; c < nc; c++) {
		if (w[c] == 0.0)
			continue;
		if (nr && runs[nr - 1].w == w[c] && runs[nr - 1].c0 + runs[nr - 1].n == c)
			runs[nr - 1].n++;
		else
			runs[nr++] = (struct run){c, 1, w[c]};
	}
	c1[0] = c2[0] = 0.0;
	for (uint64_t d = 0; d < nc; d++) {
		double f = dg_spec_seek_ms(spec, d);
		c1[d + 1] = c1[d] + f;
		c2[d + 1] = c2[d] + (double)d * f;
	}
	double pairs = run_pairs(runs, nr, c1, c2);
	result = (pairs + same_cyl * spec->head_switch_ms) / (total * total);
	*rc = 0;
err:
	free(w);
	free(sq);
	free(c1);
	free(c2);
	free(runs);
	free(dw);
	free(dq);
	return result;
}

/* ---- the truth document ---- */

int dg_truth_compute(const struct dg_spec *spec, struct dg_truth **out)
{
	struct dg_truth *t = calloc(1, sizeof(*t));
	int rc = -ENOMEM;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->capacity_bytes = dg_spec_capacity_bytes(spec);
	t->sector_bytes = spec->sector_bytes;
	t->rpm = spec->rpm;
	t->period_ms = spec->period_ms;
	t->zones = calloc(spec->nzones, sizeof(*t->zones));
	t->recording = calloc(spec->nzones, sizeof(*t->recording));
	if (!t->zones || !t->recording)
		goto err;
	for (size_t i = 0; i < spec->nzones; i++) {
		const struct dg_zone *z = &spec->zones[i];
		uint64_t used = zone_used(spec, z);
		if (!used)
			break;
		struct dg_truth_zone *tz = &t->zones[t->nzones++];
		tz->start_bytes = z->first_lba * spec->sector_bytes;
		tz->end_bytes = (z->first_lba + used) * spec->sector_bytes;
		tz->sectors_per_track = z->spt;
		tz->cylinders = z->cylinders;
		tz->mb_per_s = zone_rate(spec, z);
		if (z->per_surface)
			t->per_surface = true;
	}
	t->surface_buf = calloc((size_t)spec->nzones * spec->heads, 2 * sizeof(double));
	if (!t->surface_buf)
		goto err;
	for (size_t i = 0; i < t->nzones; i++) {
		const struct dg_zone *z = &spec->zones[i];
		double *r = t->surface_buf + i * spec->heads;
		for (uint32_t h = 0; h < spec->heads; h++)
			r[h] = (double)z->hspt[h] * spec->sector_bytes / DG_MB /
			       ((spec->period_ms + transition_h_ms(spec, z, DG_TR_CYL, h)) / 1e3);
		t->zones[i].nsurfaces = spec->heads;
		t->zones[i].surface_mb_per_s = r;
		t->zones[i].surface_sectors_per_track = z->hspt;
	}
	t->physical_sector_bytes = spec->physical_sector_bytes;
	t->rmw_penalty_ms = spec->physical_sector_bytes > spec->sector_bytes ? spec->period_ms : 0;
	t->ncq_depth = spec->ncq_depth;
	t->interface_mb_per_s = spec->interface_mbps;
	/* recording zones: merge neighbours of equal rate (time-weighted rate of the merge); on a
	 * v2 spec a step counts as a boundary only when the rates differ by 2% or more
	 * (drive-spec.md, "The truth of version 2") */
	double merged_time = 0.0, step = spec->v2 ? 0.02 : 1e-9;
	for (size_t i = 0; i < t->nzones; i++) {
		const struct dg_truth_zone *tz = &t->zones[i];
		double secs = (double)(tz->end_bytes - tz->start_bytes) / DG_MB / tz->mb_per_s;
		struct dg_truth_zone *r = t->nrecording ? &t->recording[t->nrecording - 1] : NULL;
		if (r && fabs(t->zones[i - 1].mb_per_s - tz->mb_per_s) < step * tz->mb_per_s) {
			r->end_bytes = tz->end_bytes;
			r->cylinders += tz->cylinders;
			merged_time += secs;
			r->mb_per_s = (double)(r->end_bytes - r->start_bytes) / DG_MB / merged_time;
		} else {
			t->recording[t->nrecording++] = *tz;
			merged_time = secs;
		}
	}
	t->seek_a_ms = spec->seek_a;
	t->seek_b_ms = spec->seek_b;
	t->seek_c_ms = spec->seek_c;
	t->seek_e_ms = spec->seek_e;
	t->seek_boundary_cylinders = spec->seek_boundary;
	t->cylinders = spec->cylinders;
	t->head_switch_ms = spec->head_switch_ms;
	t->command_overhead_ms = spec->command_overhead_ms;
	t->track_to_track_ms = dg_spec_seek_ms(spec, 1);
	t->full_stroke_ms = dg_spec_move_ms(spec, 0, spec->capacity_sectors - 1);
	t->average_ms = mean_move_ms(spec, 0, spec->capacity_sectors, &rc);
	if (rc)
		goto err;
	/* over distinct cylinder pairs: P(D = d) = 2(N-d)/(N(N-1)) */
	double n = spec->cylinders, acc = 0.0;
	for (uint64_t d = 1; d < spec->cylinders; d++)
		acc += (n - (double)d) * dg_spec_seek_ms(spec, d);
	t->average_cylinder_ms = spec->cylinders > 1 ? 2.0 * acc / (n * (n - 1.0)) : 0.0;
	*out = t;
	return 0;
err:
	dg_truth_free(t);
	return rc;
}

void dg_truth_free(struct dg_truth *truth)
{
	if (!truth)
		return;
	free(truth->zones);
	free(truth->recording);
	free(truth->surface_buf);
	free(truth);
}

/* Seconds to stream [a, b) sectors, zone by zone at each zone's sustained rate. */
static double stream_s(const struct dg_spec *spec, uint64_t a, uint64_t b)
{
	double s = 0.0;

	for (size_t i = dg_spec_zone_of(spec, a); i < spec->nzones && a < b; i++) {
		const struct dg_zone *z = &spec->zones[i];
		uint64_t ze = z->first_lba + z->sectors;
		uint64_t e = b < ze ? b : ze;
		if (e <= a)
			continue;
		s += (double)(e - a) * spec->sector_bytes / DG_MB / zone_rate(spec, z);
		a = e;
	}
	return s;
}

double dg_truth_rate_mb_per_s(const struct dg_spec *spec, uint64_t offset_bytes,
			      uint64_t length_bytes)
{
	uint64_t cap = dg_spec_capacity_bytes(spec);

	if (length_bytes == 0 || offset_bytes >= cap)
		return NAN;
	if (length_bytes > cap - offset_bytes)
		length_bytes = cap - offset_bytes;
	uint64_t a = offset_bytes / spec->sector_bytes;
	uint64_t b = (offset_bytes + length_bytes + spec->sector_bytes - 1) / spec->sector_bytes;
	double rate;
	if (!spec->v2) {
		rate = (double)length_bytes / DG_MB / stream_s(spec, a, b);
	} else {
		/* the walk under the full layout, zone by zone (a zone change: no skew, its
		 * one-off wait left out — the parts walked separately) */
		double ms = 0.0;
		for (size_t i = dg_spec_zone_of(spec, a); i < spec->nzones && a < b; i++) {
			const struct dg_zone *z = &spec->zones[i];
			uint64_t ze = z->first_lba + z->sectors, e = b < ze ? b : ze;
			if (e <= a)
				continue;
			ms += dg_truth_walk_ms(spec, z, a - z->first_lba, e - z->first_lba);
			a = e;
		}
		rate = (double)length_bytes / DG_MB / (ms / 1e3);
	}
	return rate < spec->interface_mbps ? rate : spec->interface_mbps;
}

double dg_truth_random_ms(const struct dg_spec *spec, uint64_t start_bytes, uint64_t span_bytes,
			  uint32_t block_bytes)
{
	uint64_t cap = spec->capacity_sectors;
	uint64_t lo = start_bytes / spec->sector_bytes;
	uint64_t hi = (start_bytes + span_bytes) / spec->sector_bytes;
	int rc;

	if (hi > cap)
		hi = cap;
	if (lo >= hi)
		return NAN;
	double move = mean_move_ms(spec, lo, hi, &rc);
	if (rc)
		return NAN;
	/* transfer at the local sustained rate (which includes the skew a block may cross),
	 * averaged over where in the span the block lands */
	double xfer = 0.0;
	for (size_t i = dg_spec_zone_of(spec, lo); i < spec->nzones; i++) {
		const struct dg_zone *z = &spec->zones[i];
		uint64_t a = lo > z->first_lba ? lo : z->first_lba;
		uint64_t b = hi < z->first_lba + z->sectors ? hi : z->first_lba + z->sectors;
		if (a >= b)
			break;
		xfer += (double)(b - a) / (double)(hi - lo) * (double)block_bytes / DG_MB /
			zone_rate(spec, z) * 1e3;
	}
	return spec->command_overhead_ms + move + spec->period_ms / 2.0 + xfer;
}
