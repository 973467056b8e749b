/* SPDX-License-Identifier: MIT */
/*
 * Serpentine runs (see include/diskgeo/geometry.h). Inside a run every track has the same size S
 * and every transition the same skew k (a one-cylinder step), so the phase of the sector at
 * j tracks and c sectors from the run's first track is predicted exactly: ph(x0) + j*k/S + c/S.
 * Angular position by completion time modulo the period (Wong 2019) then tells whether a far
 * track still belongs to the run; galloping doubles j until the prediction fails, bisection
 * finds the first track that does not belong (the run's end: a return seek to the next surface,
 * or the band's end). Several runs give the band size (tracks per surface per band), the
 * surfaces (runs between two band ends) and each surface's track size in surface order.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "geometry_move.h"
#include "geometry_place.h"

#define RUN_WALK   6u /* tracks walked at the start of a run */
#define MAX_GALLOP (1ull << 22)

static int run_end_at(struct geo *g, uint64_t e, uint32_t S, bool fresh);

/* Where an earlier place's band puts the run's end: tracks `band` - 1, then 2 `band` - 1, ...
 * after t0 (a run of m surfaces of one size is m bands long). With `confirm` (the band only a
 * guess) the move there must differ from the run's step (run_end_at). 0 with *end, 1 when it
 * is not there (the caller gallops; where a track tested was not the run's, *out is its index
 * and *in, unless 0, the last one tested that was), 2 or -errno. */
static int expected_end(struct geo *g, uint64_t t0, uint32_t S, uint64_t c, double b, uint64_t band,
			bool confirm, struct geo_kset *ks, uint64_t *end, uint64_t *in,
			uint64_t *out)
{
	*in = *out = 0;
	for (uint64_t m = 1; m <= 4; m++) {
		uint64_t je = m * band - 1;
		if (t0 + (je + 2) * S >= g->npsec)
			return 1;
		struct geo_kset keep = *ks;
		int rc = geo_in_run(g, t0, S, c, b, je - 1, &keep);
		if (rc < 0 || rc == 2)
			return rc;
		if (rc) {
			/* shorter than the band: a zone's end, or another shape */
			*out = je - 1;
			return 1;
		}
		rc = geo_in_run(g, t0, S, c, b, je, &keep);
		if (rc < 0 || rc == 2)
			return rc;
		if (rc) {
			*end = t0 + je * S;
			rc = confirm ? run_end_at(g, *end, S, false) : 0;
			return rc == 3 ? 1 : rc;
		}
		*ks = keep;
		*in = je;
	}
	return 1;
}

/* Galloping from *lo (in the run) doubles the distance until a track is not the run's (*hi, when
 * not 0, one already found not to be), then bisection finds the first one that is not: *hi. 0,
 * 1 (the run outlasts the range), 2, -errno. */
static int gallop(struct geo *g, uint64_t t0, uint32_t S, uint64_t c, double b, struct geo_kset *ks,
		  uint64_t *lo, uint64_t *hi)
{
	int rc;

	for (uint64_t d = *lo + 1; !*hi && d <= MAX_GALLOP; d *= 2) {
		uint64_t j = *lo + d;
		if (t0 + (j + 2) * S >= g->npsec)
			break;
		rc = geo_in_run(g, t0, S, c, b, j, ks);
		if (rc < 0 || rc == 2)
			return rc;
		if (rc) {
			*hi = j;
			break;
		}
		*lo = j;
	}
	if (!*hi)
		return geo_fail(g, "the serpentine run outlasts the range");
	while (*hi - *lo > 1) {
		uint64_t mid = *lo + (*hi - *lo) / 2;
		rc = geo_in_run(g, t0, S, c, b, mid, ks);
		if (rc < 0 || rc == 2)
			return rc;
		if (rc)
			*hi = mid;
		else
			*lo = mid;
	}
	return 0;
}

/* The phases of x[0..n) by `fn` (geo_phase or geo_phase_fine) in ph. Returns as geo_phase. */
static int phases(struct geo *g, int (*fn)(struct geo *, uint64_t, double *), const uint64_t *x,
		  unsigned n, double *ph)
{
	for (unsigned i = 0; i < n; i++) {
		int rc = fn(g, x[i], &ph[i]);
		if (rc)
			return rc;
	}
	return 0;
}

/* Whether a run of tracks of S ends at e: the move into the track at e differs from the move
 * into the one before (fine phases), or the track at e is not S long; `fresh`: from new probes
 * only (a remembered phase may be the noisy one that ended the run). 0 when it ends there, 3
 * when not, else as geo_phase. */
static int run_end_at(struct geo *g, uint64_t e, uint32_t S, bool fresh)
{
	const uint64_t x[4] = {e - S - 1, e - S, e - 1, e}, y[2] = {e + S - 1, e + S};
	double v[4];
	int rc;

	/* plain phases first: moves far apart (a head switch and a cylinder step) show there */
	for (unsigned fine = fresh; fine < (g->sub ? 1u : 2u); fine++) {
		rc = phases(g, fine ? geo_phase_fine : geo_phase, x, 4, v);
		if (rc)
			return rc;
		if (fabs(geo_wrap((v[3] - v[2]) - (v[1] - v[0]))) >
		    fmax(1.5 / S, (fine ? 4 : 10) * g->noise))
			return 0;
	}
	rc = g->sub ? geo_moves_differ(g, e, S) : 3;
	if (rc != 3)
		return rc;
	rc = phases(g, geo_phase, y, 2, v);
	if (rc)
		return rc;
	return fabs(geo_wrap(v[1] - v[0] - 1.0 / S)) < g->thr ? 0 : 3;
}

int geo_run_end(struct geo *g, const struct geo_track *t, unsigned n, uint64_t band, bool guess,
		uint64_t *end, double *k)
{
	uint32_t S = t[0].size;
	double b, ph, mean = 0, med, sk[GEO_MAX_WALK];
	struct geo_kset ks = {0}, keep;
	int rc;

	/* the skews tried: KSPAN about the walk's mean step and about its median, both (one
	 * noisy skew moves the mean past the run's, zoo 32 with seed 3: 1043 for 969 in five;
	 * where the steps scatter by ten sectors two of five move the median, zoo 24 with seed
	 * 4: a median of 199 for 208, a mean of 202) */
	for (unsigned i = 1; i < n; i++) {
		sk[i - 1] = t[i].skew;
		mean += t[i].skew / (n - 1);
	}
	med = n > 1 ? geo_median(sk, n - 1) : 0;
	for (long kc = lround(fmin(mean, med)) - KSPAN;
	     kc <= lround(fmax(mean, med)) + KSPAN && ks.n < ARRAY_SIZE(ks.k); kc++)
		if (kc >= 0)
			ks.k[ks.n++] = (int)kc;
	rc = geo_phase(g, t[0].start, &b);
	if (rc)
		return rc;
	for (unsigned i = 1; i < n && ks.n; i++) {
		rc = geo_phase(g, t[i].start, &ph);
		if (rc)
			return rc;
		geo_kset_filter(&ks, b, S, i, ph, 1.5 * g->thr, &keep);
		ks = keep;
	}
	if (!ks.n) {
		g->why = "no skew predicts the run's phases (noise)";
		return 1;
	}
	/* far tracks are probed three quarters in: a surface of another size whose head switch
	 * costs what a cylinder step costs starts at the predicted angle, but not its later
	 * sectors; and the track must end where the run's size says */
	uint64_t c = 3 * (uint64_t)S / 4;
	rc = geo_phase_fine(g, t[0].start + c, &b);
	if (rc)
		return rc;
	uint64_t lo = n - 1, hi = 0, in = 0, out = 0;
	if (band > n) {
		rc = expected_end(g, t[0].start, S, c, b, band, guess, &ks, end, &in, &out);
		if (rc != 1)
			return rc;
	}
	/* a track a band two runs agree on put the end at and found outside bounds the gallop
	 * (a zone's short last band: a bisection from the walk to it, not a gallop past it);
	 * not the one-run guess (zoo 27 seed 2: runs of 8 and 10 tracks for 80 from it) */
	if (!guess && out > lo && in < out) {
		lo = in > lo ? in : lo;
		hi = out;
	}
	for (unsigned again = 0; again < 4; again++) {
		rc = gallop(g, t[0].start, S, c, b, &ks, &lo, &hi);
		if (rc)
			return rc;
		rc = run_end_at(g, t[0].start + hi * S, S, false);
		/* an end where more than one skew still fits (the run's step not pinned: its
		 * walk was noisy) is confirmed again from new probes (zoo 32: a walk's noisy
		 * phase, remembered, ended a run of 78 tracks after 7) */
		if (rc == 0 && ks.n > 1)
			rc = run_end_at(g, t[0].start + hi * S, S, true);
#ifdef GEO_TRACE
		fprintf(stderr,
			"GALLOP from %llu S %u lo %llu hi %llu end_at rc %d (k %d, %u left)\n",
			(unsigned long long)t[0].start, S, (unsigned long long)lo,
			(unsigned long long)hi, rc, ks.k[0], ks.n);
#endif
		if (rc != 3)
			break;
		lo = hi; /* the same move: a noisy probe ended the run, the search goes on */
		hi = 0;
		if (!g->sub && geo_subsector(g, S)) {
			/* or moves a sector apart drifted the phases: told apart from now on */
			g->sub = true;
			lo = n - 1;
#ifdef GEO_TRACE
			fprintf(stderr, "SUBSECTOR from %llu S %u\n",
				(unsigned long long)t[0].start, S);
#endif
		}
	}
	if (rc)
		return rc == 3 ? geo_fail(g, "the serpentine run's end was not found (noise)") : rc;
	*end = t[0].start + hi * S;
	if (ks.n == 1 && g->sub)
		*k = ks.k[0]; /* the run's step to the sector */
#ifdef GEO_TRACE
	fprintf(stderr, "RUN from %llu size %u ends after %llu tracks at %llu (k %d, %u left)\n",
		(unsigned long long)t[0].start, S, (unsigned long long)hi, (unsigned long long)*end,
		ks.k[0], ks.n);
#endif
	return 0;
}

struct run {
	uint64_t start, end; /* start = 0 when the run began before the place */
	uint32_t size;
	double skew;	  /* in-run cylinder step */
	double into_tau;  /* the move into this run (ms), NAN for the first */
	double into_skew; /* the skew into this run (sectors) */
	bool checked;	  /* into_skew measured with GEO_SKEW_FINE */
};

/* Whether two moves into runs (ms, from fine phases) are one move: their skews 1.5 sectors and
 * the noise apart at most. */
static bool same_move(const struct geo *g, double a, double b, uint32_t size)
{
	double T = g->T_ns / 1e6;

	return fabs(a - b) < (g->sub ? 0.5 : 1.5 + 1.5 * g->noise * size) * T / size;
}

/* The move into the run that begins at `at` (the last run's size `size`), from fine phases (one
 * phase pair is too noisy to tell a head switch from a band's start where they differ by a few
 * sectors). 0, 1 (no jump at `at`: the last run did not end there), 2 or -errno. */
static int run_entry(struct geo *g, uint64_t at, uint32_t size, struct run *r)
{
	double a, b;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = geo_phase(g, at - 1, &a);

	if (!rc)
		rc = geo_phase(g, at, &b);
	if (rc)
		return rc;
	double jump = geo_wrap(b - a);
	jump += jump < 0;
	if (fabs(geo_wrap(jump - 1.0 / size)) < g->thr)
		return geo_fail(g, "a serpentine run's end was not where the next run began");
	r->start = at;
	r->into_skew = jump * size - 1;
	if (1.5 * g->noise * size > 0.3) {
		/* one phase pair does not resolve a third of a sector: fine phases */
		struct geo_track first = {.start = at, .size = size};
		rc = geo_skew(g, &first, 4, &r->into_skew);
		if (rc)
			return rc;
	}
	r->into_tau = (r->into_skew - 1) * g->T_ns / 1e6 / size;
	return 0;
}

/* With the band K known: the run's first track's size, then its end where the band puts it, a
 * track boundary K tracks on whose last track still has that size (boundary test of Wong 2019
 * at the predicted place; unless the band is `sure`, the move there must differ from the run's
 * step). 0, 1 (not there: the caller walks the run), 2 or -errno. */
static int band_run(struct geo *g, uint32_t size, uint64_t band, bool sure, struct run *r)
{
	uint64_t e;
	int rc = geo_track_end(g, r->start, size, &size, 1, &e);

	if (rc)
		return rc;
	uint32_t S = (uint32_t)(e - r->start);
	uint64_t end = r->start + band * S;
	if (end + 1 >= g->npsec)
		return 1;
	const uint64_t x[3] = {end - 1 - S / 2, end - 1, end};
	double v[3];
	rc = phases(g, geo_phase, x, 3, v);
	if (rc)
		return rc;
	double sl = 1.0 / S;
	if (fabs(geo_wrap(v[1] - v[0] - (double)(S / 2) * sl)) >= g->thr ||
	    fabs(geo_wrap(v[2] - v[1] - sl)) < g->thr)
		return 1;
	rc = sure ? 0 : run_end_at(g, end, S, false);
	if (rc)
		return rc == 3 ? 1 : rc;
	r->size = S;
	r->end = end;
	r->skew = NAN;
	return 0;
}

/* A run's walk t[0..n) from `at` with one boundary a few sectors off (a noisy phase) mended in
 * place, where the sizes around it add up to twice the run's: the first boundary (two ways) or
 * one inside the walk, whose move is read again. 0, 2 or -errno. */
static int repair_walk(struct geo *g, uint64_t at, struct geo_track *t, unsigned n)
{
	int rc;

	/* one boundary a few sectors off (a noisy phase): the first two tracks' sizes add up to
	 * twice the size of the run's first track (from `at`) and of every track after them */
	if (n >= 5 && t[0].start - at != t[0].size &&
	    t[0].size + t[1].size == 2 * (t[0].start - at)) {
		uint64_t S = t[0].start - at;
		bool same = true;
		for (unsigned i = 2; i < n; i++)
			same = same && t[i].size == S;
		if (same) {
			t[0].size = t[1].size = (uint32_t)S;
			t[1].start = t[0].start + S;
			t[1].skew = t[2].skew; /* the run's step (its phases are read again) */
			t[1].jump = t[2].jump;
			t[1].tau_ms = t[2].tau_ms;
		}
	}
	/* or the walk's first boundary a few sectors off: the track from `at` to it and the
	 * next add up to twice the size of every track after them (zoo 29 at 12 places: 222
	 * and 226 for 224, the place's 75 s of runs lost), a size other than the last run's
	 * (of that size, the last run did not end at `at`: zoo 21, a cylinder drive whose
	 * tracks of 305 the walk read as a run) */
	if (n >= 5 && t[0].start - at != t[0].size &&
	    t[0].start - at + t[0].size == 2ull * t[1].size) {
		bool same = true;
		for (unsigned i = 2; i < n; i++)
			same = same && t[i].size == t[1].size;
		if (same) {
			t[0].start = at + t[1].size;
			t[0].size = t[1].size;
		}
	}
	/* or a boundary inside the walk a few sectors off (a noisy phase; zoo 36 at seed 6: 814
	 * and 604 for 709, the run ended there after 3 tracks and the place lost): the two tracks
	 * it parts add up to twice the size of the run's first track (from `at`) and of every
	 * other track. Its move is read again, from fine phases, where the boundary truly is. */
	if (n >= 5) {
		uint64_t S = t[0].start - at;
		unsigned j = 0, odd = 0;
		for (unsigned i = 0; i < n; i++)
			if (t[i].size != S) {
				odd++;
				j = j ? j : i + 1;
			}
		if (odd == 2 && j < n && t[j].size != S && t[j - 1].size + t[j].size == 2 * S) {
			double k;
			t[j - 1].size = t[j].size = (uint32_t)S;
			t[j].start = t[j - 1].start + S;
			if (j > 1)
				t[j - 1].skew = t[j - 1].jump * (double)S - 1;
			rc = geo_skew(g, &t[j], 4, &k);
			if (rc)
				return rc;
			t[j].skew = k;
			t[j].tau_ms = (k - 1) * g->T_ns / 1e6 / (double)S;
		}
	}
	return 0;
}

/* Walks the run that begins at `at` (the last run's size `size`); `band` (0 = unknown) is the band
 * an earlier place found (`sure`) or the shortest whole run so far; `band2` (0 = none) a band
 * known for sure, tried next (after a zone's short last band); `one` (0 = none) the one whole
 * run walked so far, where no band is guessed: tried only as the walked run's end (never by
 * band_run: a run of two surfaces' length there ends where the next surface's run ends). */
static int next_run(struct geo *g, uint64_t at, uint32_t size, uint64_t band, bool sure,
		    uint64_t band2, uint64_t one, struct run *r)
{
	struct geo_track t[RUN_WALK + 1];
	const char *why;
	unsigned n;
	int rc = run_entry(g, at, size, r);

	if (rc)
		return rc;
	if (band) {
		rc = band_run(g, size, band, sure, r);
		if (rc != 1)
			return rc;
	}
	if (band2) {
		rc = band_run(g, size, band2, true, r);
		if (rc != 1)
			return rc;
	}
	/* walked from its first track (its slope, not the last run's, sets the first steps) */
	rc = geo_walk(g, at, size, &size, 1, t, RUN_WALK + 1, &n, &why);
	if (rc)
		return rc;
#ifdef GEO_TRACE
	fprintf(stderr, "NEXT RUN at %llu: first boundary %llu, %u tracks of %u, into %.2f\n",
		(unsigned long long)at, (unsigned long long)t[0].start, n, t[0].size, r->into_skew);
#endif
	rc = repair_walk(g, at, t, n);
	if (rc)
		return rc;
	/* the run's first track begins at `at` and is as long as the next */
	if (n < 3 || t[0].start - at != t[0].size)
		return geo_fail(g, "a serpentine run's end was not where the next run began");
	r->size = t[0].size;
	if (r->size != size) {
		/* the move into it in its own sectors */
		r->into_skew = (r->into_skew + 1) * r->size / size - 1;
		r->into_tau = (r->into_skew - 1) * g->T_ns / 1e6 / r->size;
	}
	/* a run shorter than the walk ends where the sizes or moves change (a move that seems to
	 * change is measured again with many probes: one noisy skew must not end a run) */
	for (unsigned i = 1; i < n; i++) {
		bool end = t[i].size != t[0].size;
		if (!end && fabs(t[i].skew - t[1].skew) > 1.5 + 6 * g->noise * t[i].size) {
			double k1, ki;
			rc = geo_skew(g, &t[1], 4, &k1);
			if (!rc)
				rc = geo_skew(g, &t[i], 4, &ki);
			if (rc)
				return rc;
			end = fabs(ki - k1) > 1.5 + 4 * g->noise * t[i].size;
		}
		if (end) {
			r->end = t[i].start;
			r->skew = i > 1 ? t[1].skew : NAN;
			return 0;
		}
	}
	r->skew = t[1].skew;
	return geo_run_end(g, t, n, band ? band : one, !band, &r->end, &r->skew);
}

/* The surfaces a run of `len` tracks holds with bands of K: m when it is m K tracks long (within
 * one), 1 when shorter than K (a zone's last band is short), else 0. */
static uint64_t units(uint64_t len, uint64_t K)
{
	uint64_t m = (len + K / 2) / K;

	if (m && (len > m * K ? len - m * K : m * K - len) <= 1)
		return m;
	return len < K ? 1 : 0;
}

/* The band from the run lengths len[1..n): the shortest, unless a longer run is no multiple of
 * it: then the shortest is a zone's short last band and the longest such run is the band. */
static uint64_t band_of(const uint64_t *len, unsigned n)
{
	uint64_t K = 0, alt = 0;

	for (unsigned i = 1; i < n; i++)
		K = !K || len[i] < K ? len[i] : K;
	for (unsigned i = 1; i < n && K; i++) {
		uint64_t m = (len[i] + K / 2) / K;
		if ((len[i] > m * K ? len[i] - m * K : m * K - len[i]) > 1 && len[i] > alt)
			alt = len[i];
	}
	return alt ? alt : K;
}

/* Two band starts among the units (ustart[0..nu)) at least two surfaces apart (as many as an
 * earlier place found, `known`): the first's index in *b0, the surfaces in *h. 0, or 1. */
static int by_starts(const bool *ustart, unsigned nu, unsigned known, unsigned *b0, unsigned *h)
{
	unsigned band[2], nb = 0;

	for (unsigned i = 0; i < nu && nb < 2; i++) {
		if (!ustart[i])
			continue;
		unsigned d = nb ? i - band[0] : 0;
		if (nb && (d < 2 || (known && d != known)))
			nb = 0; /* a band start the next one does not confirm: start again there */
		band[nb++] = i;
	}
	if (nb < 2 || band[1] - band[0] > DG_GEOMETRY_MAX_HEADS)
		return 1;
	*b0 = band[0];
	*h = band[1] - band[0];
	return 0;
}

/* One band start (unit b, the first) and the units after it: the surfaces are the period p > b
 * (no start before it) whose units after b repeat the sizes p before them, at least 3 of them,
 * when no other p that any unit tests fits, and the units from b have two sizes at least (as
 * many surfaces as an earlier place found, `known`). 0 with *b0 and *h, or 1. */
static int by_one_start(const bool *ustart, const uint32_t *usize, unsigned nu, unsigned known,
			unsigned *b0, unsigned *h)
{
	unsigned b = 0, found = 0, fits = 0;
	bool varied = false;

	while (b < nu && !ustart[b])
		b++;
	for (unsigned i = b + 1; i < nu; i++)
		varied = varied || usize[i] != usize[b];
	for (unsigned p = b + 1; varied && p < nu && p <= DG_GEOMETRY_MAX_HEADS; p++) {
		unsigned same = 0;
		bool ok = !known || p == known;
		for (unsigned i = p; i < nu && ok; i++) {
			ok = i < b || usize[i] == usize[i - p];
			same += i >= b && ok;
		}
		fits += ok && same > 0;
		found = ok && same >= 3 ? p : found;
	}
	if (!found || fits != 1)
		return 1;
	*b0 = b;
	*h = found;
	return 0;
}

/* No band start told by its move (the head switch, the cylinder step and a band's start cost
 * alike): the surfaces from the period of the units' sizes (per-surface formats), each seen
 * twice, at least two (as many as an earlier place found, `known`). 0 with *h, or 1. */
static int by_sizes(const uint32_t *usize, unsigned nu, unsigned known, unsigned *h)
{
	for (unsigned p = 2; p <= DG_GEOMETRY_MAX_HEADS && 2 * p <= nu; p++) {
		bool ok = !known || p == known;
		for (unsigned i = p; i < nu && ok; i++)
			ok = usize[i] == usize[i - p];
		bool varied = false; /* not all one size */
		for (unsigned i = 1; i < p; i++)
			varied = varied || usize[i] != usize[0];
		if (ok && varied) {
			*h = p;
			return 0;
		}
	}
	return 1;
}

/* The surfaces of units[0..nu) where no band start reads clearly: from the period of their sizes
 * (by_sizes), checked against the band start that count implies; the band's start from what
 * the moves cost, else ambiguous (surfaces in walk order, *b0 = 0). 0, 1 (no reading), 2 or
 * -errno. */
static int by_sizes_checked(struct geo *g, const uint64_t *uat, const uint32_t *usize,
			    const bool *ustart, unsigned nu, uint64_t K, double step, double hs,
			    struct geo_place_shape *sh, unsigned *b0, unsigned *h)
{
	if (by_sizes(usize, nu, sh->heads_known, h))
		return 1;
	bool seen = false;
	for (unsigned i = 0; i < nu; i++)
		seen = seen || ustart[i];
#ifdef GEO_TRACE
	fprintf(stderr, "BYSIZES h %u nu %u known %u step %.3f hs %.3f same %d seen %d\n", *h, nu,
		sh->heads_known, step, hs, same_move(g, step, hs, usize[0]), seen);
#endif
	/* no start among 2 h units: with h odd a band's last surface ends at the band's
	 * last cylinder and the next band starts a cylinder on, by the cylinder step's
	 * move, so that step must cost what the head switch costs (else h is wrong: the
	 * sizes repeat by chance; more runs are walked) */
	if (!seen && *h % 2 && !same_move(g, step, hs, usize[0]))
		return 1;
	/* the band's start from what the moves cost, else the surfaces in walk order
	 * (head 0 not known); with h even, a band's start no unit shows is a wrong h */
	int rc = geo_band_start_by_moves(g, uat, usize, nu, K, *h, b0);
	if (rc == 2 || rc < 0)
		return rc;
	if (rc == 3 && !seen)
		return 1;
	sh->ambiguous = rc != 0;
	*b0 = rc ? 0 : *b0;
	return 0;
}

/* The serpentine reading of runs[0..n) (the model of drive-spec.md: inside a band each surface
 * walks the band's cylinders, the next one walks them back after a head switch; a band ends in
 * a seek to the next band). A run ends where the size or the move changes, so neighbouring
 * surfaces of one size whose head switch costs what a cylinder step costs form one run: the
 * band K is the shortest whole run, and a run of m K tracks holds m surfaces. Runs entered by
 * the most common move are entered by a head switch; the others start a band. Fills the band,
 * the surfaces, their sizes from the band's start, the head switch and the track skew. 0, 1
 * (no reading), 3 (not whole bands), 2 or -errno. */
static int read_runs(struct geo *g, const struct run *rs, unsigned n, struct geo_place_shape *sh)
{
	uint64_t len[GEO_MAX_RUNS], K = 0;
	unsigned nu = 0;
	uint32_t usize[DG_GEOMETRY_MAX_HEADS * 2];
	uint64_t uat[DG_GEOMETRY_MAX_HEADS * 2];
	bool ustart[DG_GEOMETRY_MAX_HEADS * 2];
	double v[GEO_MAX_RUNS];

	if (n < 3)
		return 1;
	for (unsigned i = 1; i < n; i++)
		len[i] = (rs[i].end - rs[i].start) / rs[i].size;
	K = band_of(len, n);
#ifdef GEO_TRACE
	fprintf(stderr, "RUNS K %llu:", (unsigned long long)K);
	for (unsigned i = 0; i < n; i++)
		fprintf(stderr, " [%llu+%llu x%u %.3f]", (unsigned long long)rs[i].start,
			i ? (unsigned long long)len[i] : 0ull, rs[i].size, rs[i].into_tau);
	fprintf(stderr, "\n");
#endif
	/* the step inside the runs */
	unsigned ns = 0;
	for (unsigned i = 0; i < n; i++)
		if (isfinite(rs[i].skew))
			v[ns++] = (rs[i].skew - 1) * g->T_ns / 1e6 / rs[i].size;
	double step = geo_median(v, ns);
	/* the head switch: the move that enters most runs (the shorter on a tie) */
	unsigned bestc = 0;
	double hs = NAN;
	for (unsigned i = 1; i < n; i++) {
		unsigned c = 0;
		for (unsigned j = 1; j < n; j++)
			c += same_move(g, rs[j].into_tau, rs[i].into_tau, rs[j].size);
		if (c > bestc || (c == bestc && rs[i].into_tau < hs)) {
			bestc = c;
			hs = rs[i].into_tau;
		}
	}
	for (unsigned i = 1; i < n; i++) {
		uint64_t m = units(len[i], K);
		if (K < RUN_MIN || m == 0)
			return 3; /* not whole bands: a zone's end */
		/* a zone's short last band is followed by its other surfaces' short runs, then by
		 * the next zone's tracks, of other sizes: a whole run of the same size after a
		 * short one tells a run's end a track or two off (zoo 27 at seed 5: runs of 79,
		 * 80, 79, 81 tracks for 80, read as 3 surfaces of 7) */
		if (len[i] + 1 < K && i + 1 < n && rs[i + 1].size == rs[i].size &&
		    len[i + 1] + 1 >= K)
			return 3;
		/* inside a run of m bands the surfaces change by the run's step: a band's start
		 * (an odd number of surfaces: the next band begins one cylinder on) unless the
		 * head switch costs what that step costs */
		for (uint64_t u = 0; u < m && nu < DG_GEOMETRY_MAX_HEADS * 2; u++) {
			usize[nu] = rs[i].size;
			uat[nu] = rs[i].start + u * K * rs[i].size;
			ustart[nu++] = !same_move(g, u ? step : rs[i].into_tau, hs, rs[i].size);
		}
	}
#ifdef GEO_TRACE
	fprintf(stderr, "UNITS K %llu step %.3f hs %.3f:", (unsigned long long)K, step, hs);
	for (unsigned i = 0; i < nu; i++)
		fprintf(stderr, " %u%s", usize[i], ustart[i] ? "*" : "");
	fprintf(stderr, "\n");
#endif
	unsigned b0, h;
	sh->ambiguous = false;
	if (by_starts(ustart, nu, sh->heads_known, &b0, &h) &&
	    by_one_start(ustart, usize, nu, sh->heads_known, &b0, &h)) {
		int rc = by_sizes_checked(g, uat, usize, ustart, nu, K, step, hs, sh, &b0, &h);
		if (rc)
			return rc;
	}
	sh->band_tracks = (unsigned)K;
	sh->nsurfaces = h;
	sh->band_start = sh->ambiguous ? 0 : uat[b0];
	/* surfaces the walk has not reached in this band: the band before's (one start) */
	for (unsigned i = 0; i < h; i++)
		sh->spt[i] = usize[b0 + i < nu ? b0 + i : b0 + i - h];
	unsigned nv = 0;
	sh->hs_run = 0;
	for (unsigned i = 1; i < n; i++)
		if (same_move(g, rs[i].into_tau, hs, rs[i].size)) {
			geo_move_add(g, rs[i].into_skew, rs[i].size, &sh->hs);
			v[nv++] = rs[i].into_skew;
			/* the skews are the band's: its first head switch (another zone's before)
			 */
			if (!sh->hs_run || (rs[sh->hs_run].start < sh->band_start &&
					    rs[i].start >= sh->band_start))
				sh->hs_run = i;
		}
	sh->track_skew = geo_median(v, nv);
	sh->hs_tau = hs;
	return 0;
}

/* A band's skew into the track of `size` at `start`: two measurements (GEO_SKEW_FINE) that round
 * alike, else the median of three (one errs by two sectors now and then where the host's
 * jitter spans 20: zoo 45 with seed 3, its cylinder step 810 for 808). Returns as geo_skew. */
static int band_skew(struct geo *g, uint64_t start, uint32_t size, double *k)
{
	struct geo_track t = {.start = start, .size = size};
	double v[3];

	for (unsigned i = 0; i < 3; i++) {
		int rc = geo_skew(g, &t, GEO_SKEW_FINE, &v[i]);
		if (rc)
			return rc;
		if (i == 1 && lround(v[0]) == lround(v[1])) {
			*k = (double)lround(v[1]);
			return 0;
		}
	}
	*k = (double)lround(geo_median(v, 3));
	return 0;
}

/* The skews of the band read (sh): the head switch's into its first run entered by one, the
 * cylinder step's into the band's second track (the place's walk may lie in the zone before),
 * each as band_skew; a figure whose probes fail keeps the runs' median. 0, 2 or -errno. */
static int band_skews(struct geo *g, const struct run *rs, struct geo_place_shape *sh)
{
	const struct run *h = &rs[sh->hs_run];
	double k = NAN;
	int rc = sh->hs_run ? band_skew(g, h->start, h->size, &k) : 1;

	if (rc == 0)
		sh->track_skew = k;
#ifdef GEO_TRACE
	fprintf(stderr, "BAND SKEWS band %llu hs run %u at %llu size %u into %.2f: %d %.2f\n",
		(unsigned long long)sh->band_start, sh->hs_run, (unsigned long long)h->start,
		h->size, h->into_skew, rc, k);
#endif
	if (rc == 2 || rc < 0)
		return rc;
	k = NAN;
	rc = sh->band_start && sh->band_tracks > 1
		 ? band_skew(g, sh->band_start + sh->spt[0], sh->spt[0], &k)
		 : 1;
#ifdef GEO_TRACE
	fprintf(stderr, "BAND SKEWS cylinder step into %llu size %u: %d %.2f\n",
		(unsigned long long)(sh->band_start + sh->spt[0]), sh->spt[0], rc, k);
#endif
	if (rc == 0)
		sh->cylinder_skew = k;
	return rc == 1 ? 0 : rc;
}

/* Measures again, with GEO_SKEW_FINE, the moves into the runs rs[1..n) that differ from the
 * head switch `hs` (ms): the band's starts (one noisy move makes a false one). 0 when none was
 * measured again, 1 when some were, 2 or -errno. */
static int recheck_starts(struct geo *g, struct run *rs, unsigned n, double hs)
{
	int again = 0;

	for (unsigned i = 1; i < n; i++) {
		if (rs[i].checked || same_move(g, rs[i].into_tau, hs, rs[i].size))
			continue;
		struct geo_track first = {.start = rs[i].start, .size = rs[i].size};
		int rc = geo_skew(g, &first, GEO_SKEW_FINE, &rs[i].into_skew);
		if (rc == 2 || rc < 0)
			return rc;
		rs[i].into_tau = (rs[i].into_skew - 1) * g->T_ns / 1e6 / rs[i].size;
		rs[i].checked = true;
		again = 1;
	}
	return again;
}

/* The band the whole runs rs[1..n) suggest: the shortest, when two runs are that long (one may
 * hold two surfaces: an odd number of them puts the next band's first one after the last),
 * unless the last two runs are of one length that is no whole number of it: then theirs (a
 * walk that crossed a zone change, out of a zone's short last band into full bands: the runs
 * that follow are as long as the last two); else 0. It is only tried first where it puts a
 * run's end (band_run confirms it there, else the run is walked). */
static uint64_t band_guess(const struct run *rs, unsigned n)
{
	uint64_t K = 0, a = 0, b = 0;
	unsigned c = 0;

	for (unsigned i = 1; i < n; i++) {
		uint64_t len = (rs[i].end - rs[i].start) / rs[i].size;
		if (len >= RUN_MIN && (!K || len + 1 < K)) {
			K = len;
			c = 1;
		} else if (K && len <= K + 1 && len + 1 >= K) {
			c++;
		}
	}
	if (n > 2) {
		a = (rs[n - 1].end - rs[n - 1].start) / rs[n - 1].size;
		b = (rs[n - 2].end - rs[n - 2].start) / rs[n - 2].size;
	}
	if (c < 2)
		return 0;
	if (a >= RUN_MIN && a <= b + 1 && b <= a + 1 && a > K + 1) {
		uint64_t m = (a + K / 2) / K;
		if ((a > m * K ? a - m * K : m * K - a) > 1)
			return a;
	}
	return K;
}

/* A band is K cylinders (drive-spec.md), so inside a zone a run is a whole number of bands
 * long: one whose length is a track off a whole number of the band (`known`, else the shortest
 * whole run before it, two runs a whole number of it) has its end told again, from new probes,
 * at the earlier of the two tracks. Where the head switch costs about a cylinder step (zoo 27: a
 * sector apart) the next surface's first track can pass for the run's, and the move after it
 * differs from the head switch as much as the head switch from the step: 81 tracks for 80, and
 * every run after it a track late. 0, 2 or -errno. */
static int whole_end(struct geo *g, struct run *rs, unsigned nr, uint64_t known)
{
	struct run *r = &rs[nr];
	uint64_t K = known, len = (r->end - r->start) / r->size;
	unsigned whole = 0;

	for (unsigned i = 1; i < nr && !known; i++) {
		uint64_t l = (rs[i].end - rs[i].start) / rs[i].size;
		K = l >= RUN_MIN && (!K || l < K) ? l : K;
	}
	for (unsigned i = 1; i < nr && !known && K; i++)
		whole += (rs[i].end - rs[i].start) / rs[i].size % K == 0;
	uint64_t m = K ? (len + K / 2) / K : 0;
	if (K < RUN_MIN || (!known && whole < 2) || !m || (len != m * K + 1 && len + 1 != m * K))
		return 0;
	uint64_t a = r->start + (len < m * K ? len : m * K) * r->size;
	int rc = run_end_at(g, a, r->size, true);
#ifdef GEO_TRACE
	fprintf(stderr, "WHOLE END run of %llu for %llu x %llu: ends at %llu? %d\n",
		(unsigned long long)len, (unsigned long long)m, (unsigned long long)K,
		(unsigned long long)a, rc);
#endif
	if (rc == 0 || rc == 3)
		r->end = rc ? a + r->size : a;
	return rc == 3 ? 0 : rc;
}

int geo_band_place(struct geo *g, const struct geo_track *t, unsigned n, struct geo_place_shape *sh)
{
	struct run rs[GEO_MAX_RUNS];
	unsigned nr = 1;
	int rc = 0;

	if (sh->kind != GEO_SHAPE_RUN)
		return 0;
	rs[0] = (struct run){.start = 0, .size = t[1].size, .skew = t[1].skew, .into_tau = NAN};
	/* the run ended inside the walk (confirmed with fine phases: one noisy skew in the walk
	 * must not end it), or further on */
	rc = sh->run + 1 < n ? run_end_at(g, t[sh->run + 1].start, t[1].size, false) : 3;
	if (rc == 0)
		rs[0].end = t[sh->run + 1].start;
	else if (rc == 3)
		rc = geo_run_end(g, t + 1, sh->run + 1 < n ? sh->run : n - 1, 0, false, &rs[0].end,
				 &rs[0].skew);
	if (rc)
		return rc;
	unsigned want = sh->heads_known ? 2 * sh->heads_known + 2 : GEO_MAX_RUNS;
	g->why = "the serpentine runs walked show no two band starts";
#ifdef GEO_TRACE
	fprintf(stderr, "BAND want %u heads_known %u\n", want, sh->heads_known);
#endif
	while (nr < GEO_MAX_RUNS && nr < want) {
		uint64_t K = sh->band_known ? sh->band_known : band_guess(rs, nr);
		bool sure = sh->band_known != 0;
		uint64_t last = (rs[nr - 1].end - rs[nr - 1].start) / rs[nr - 1].size;
		/* a zone's short last band: its runs are as long as the last (a guess too, where
		 * the probes do not tell moves a sector apart: there a run's end is the least
		 * sure, and a guess taken for one is walked no more) */
		uint64_t before = K ? K : sure || g->sub || nr < 3 ? 0 : band_guess(rs, nr - 1);
		if ((sure || !g->sub) && nr > 1 && last >= RUN_MIN && last + 1 < before) {
			K = last;
			sure = false;
		}
		/* the first place (no earlier one's heads) walks runs before it knows any band:
		 * with none guessed yet, the last whole run's length is tried as this run's end,
		 * kept where the move there is unlike the step (a gallop of many probes saved) */
		uint64_t one = !K && !sh->heads_known && nr > 1 && last >= RUN_MIN ? last : 0;
		rc = next_run(g, rs[nr - 1].end, rs[nr - 1].size, K, sure,
			      sure ? 0 : sh->band_known, one, &rs[nr]);
		if (!rc)
			rc = whole_end(g, rs, nr, sh->band_known);
		if (rc)
			return rc;
#ifdef GEO_TRACE
		fprintf(stderr, "RUNSTAT %u probes, %.2f s\n", g->probes,
			(double)seek_ctx_used_ns(&g->s) / 1e9);
#endif
		nr++;
		int rr = read_runs(g, rs, nr, sh);
		if (rr == 2 || rr < 0)
			return rr;
		if (rr == 0) {
			/* the band's starts found: their moves again with the most probes */
			rc = recheck_starts(g, rs, nr, sh->hs_tau);
			if (rc == 2 || rc < 0)
				return rc;
			if (rc == 1)
				rr = read_runs(g, rs, nr, sh);
			if (rr == 2 || rr < 0)
				return rr;
		}
		/* a band read is kept though the place ran over its share (its runs are paid
		 * for; only the walk on is cut) */
		if (rr == 3 || (rr != 0 && geo_place_overtime(g))) {
			g->why =
			    rr == 3 ? "the serpentine runs there are not whole bands (a zone's end)"
				    : "the place took longer than its share of the time budget";
			return 1;
		}
		if (rr == 0)
			return band_skews(g, rs, sh);
	}
	return 1;
}
