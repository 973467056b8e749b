/* SPDX-License-Identifier: MIT */
/*
 * The surface levels of a per-surface curve (src/zones_surfaces.c: the levels fitted jointly
 * with the zone rates) taken out of the curve before its zones are looked for, and the check of
 * their assumption afterwards: the levels are the same in every zone (a surface's rate is a fixed
 * part of its zone's, as adaptive formatting makes it), so that the corrected curve is flat inside
 * a zone. Where the samples scatter about their levels (more surfaces than levels told apart,
 * ratios that change from zone to zone), a step smaller than that scatter could be a run of
 * samples put on the wrong level: such steps are merged, never reported. Where the levels are
 * rejected, the boundaries next to a segment that falls inside (bw_levels_falling) are merged too.
 */
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bandwidth_zones_priv.h"
#include "util.h"

/* Surface levels closer than this (ln) are not told apart (two surfaces that read within a few
 * sample noises of each other are one level). */
#define LEVEL_MIN_SEP 0.01
/* ... and levels kept only when two of them lie this far apart (ln): levels all closer than that
 * are the few distinct rates of samples that span a whole number of tracks more or less (a
 * cylinder layout's samples fall in such levels too), not surfaces. */
#define LEVEL_MIN_GAP 0.02
/* Levels are kept only when the samples lie this close to them (ln): a wider scatter would hide
 * the 2% steps as much as the levels do. */
#define LEVEL_MAX_SPREAD 0.01
/* ... and a step on the corrected curve stands out by this x that scatter: a run of samples read
 * on a surface between two levels is put on either, and shifts the corrected curve by about it. */
#define LEVEL_STEP 5.0
/* The note when levels are found but do not explain the curve. */
#define LEVELS_SCATTER                                                                             \
	"the curve's samples fall in surface levels, but scatter about them too widely for the "   \
	"levels to be the same in every zone: the curve is taken as measured"
/* Scatter above this (ln) is noted: the levels explain the curve only in part. */
#define LEVEL_NOTE_SPREAD 0.005
/* Where the levels were rejected, a segment whose halves' means differ by this x the standard
 * error of that difference (and by a zone step that must be found) falls inside: see
 * bw_levels_falling(). */
#define FALL_Z 4.0
/* The levels hold only where a zone holds this x as many runs of one level as there are levels:
 * zones shorter than a band group (a few surface runs each) let a zone step pass for a surface's
 * gap, and the joint fit then puts whole runs on the neighbouring level (zoo 123, 160). */
#define LEVEL_MIN_RUNS 2.5

double bw_levels_min_step(const struct curve *cv)
{
	return LEVEL_STEP * cv->L.spread;
}

/* Mean ln of the rates of the usable samples [a, b); NAN when none. */
static double mean_ln(const double *rates, const bool *excl, size_t a, size_t b)
{
	double sum = 0;
	size_t k = 0;

	for (size_t i = a; i < b; i++) {
		if (excl[i])
			continue;
		sum += log(rates[i]);
		k++;
	}
	return k ? sum / (double)k : NAN;
}

/* Whether some segment falls from its first half to its second by more than half of `min_step`:
 * a staircase of steps below the scatter, that the segments cut at places of their own. */
static bool some_segment_slopes(const double *rates, const bool *excl, const size_t *ends,
				size_t nseg, double min_step)
{
	for (size_t s = 0, a = 0; s < nseg; a = ends[s], s++) {
		size_t mid = a + (ends[s] - a) / 2;
		double d = mean_ln(rates, excl, a, mid) - mean_ln(rates, excl, mid, ends[s]);

		if (fabs(d) > min_step / 2)
			return true;
	}
	return false;
}

/* Whether the usable samples [a, b) fall inside: the mean ln rate of their first half less
 * that of their second differs from 0 by FALL_Z standard errors (from the halves' own scatter,
 * pooled: the two-sample t statistic, Student 1908) and by KEEP_STEP. */
static bool segment_falls(const double *rates, const bool *excl, size_t a, size_t b)
{
	double s[2] = {0}, q[2] = {0}, d, var;
	size_t n = 0, k[2] = {0}, seen = 0;

	for (size_t i = a; i < b; i++)
		n += !excl[i];
	if (n < 4)
		return false;
	for (size_t i = a; i < b; i++) {
		double y;
		int h;

		if (excl[i])
			continue;
		y = log(rates[i]);
		h = 2 * seen++ >= n;
		s[h] += y;
		q[h] += y * y;
		k[h]++;
	}
	d = s[0] / (double)k[0] - s[1] / (double)k[1];
	var = (q[0] - s[0] * s[0] / (double)k[0] + q[1] - s[1] * s[1] / (double)k[1]) /
	      (double)(n - 2);
	return fabs(d) > KEEP_STEP &&
	       fabs(d) > FALL_Z * sqrt(fmax(var, 0) * (1.0 / (double)k[0] + 1.0 / (double)k[1]));
}

/*
 * Where the levels were rejected the curve is segmented as measured, its samples scattering by
 * the surfaces' spread (5-13%) about zone steps of 1-3%: a staircase of such steps falls like a
 * ramp, and the segmentation cuts it where its penalty says (zoo 92: 48 zones of 0.5-1.2% steps
 * cut at 628 and 1036 GB, where it has no boundary; 55 and 62 likewise), cuts the line-and-step
 * test of bandwidth_ramp.c, run first, leaves. A segment whose halves differ by far more than
 * their scatter allows holds steps the curve cannot place, and the boundaries at its ends were
 * put by the penalty, not by a step: they are merged. A segment that is one zone does not fall
 * (its halves agree within a few standard errors); a step of 2% or more next to a falling
 * segment is lost, and was not vouched for.
 */
int bw_levels_falling(struct curve *cv, struct dg_bandwidth_result *r)
{
	bool *falls = malloc((cv->nseg ? cv->nseg : 1) * sizeof(*falls));
	size_t kept = 0, merged = 0;

	if (!falls)
		return -ENOMEM;
	for (size_t s = 0, a = 0; s < cv->nseg; a = cv->ends[s], s++)
		falls[s] = segment_falls(cv->rates, cv->excl, a, cv->ends[s]);
	for (size_t s = 0; s < cv->nseg; s++) {
		if (s + 1 < cv->nseg && (falls[s] || falls[s + 1])) {
			merged++;
			continue;
		}
		cv->ends[kept++] = cv->ends[s];
	}
	cv->nseg = kept;
	free(falls);
	if (!merged)
		return 0;
	return dg_warnings_add(
	    &r->notes,
	    "%zu zone boundar%s next to a stretch of the curve that falls inside "
	    "(steps smaller than the scatter of its surfaces, that the curve cannot "
	    "place): merged",
	    merged, merged == 1 ? "y" : "ies");
}

int bw_levels_merge(struct curve *cv, struct dg_bandwidth_result *r)
{
	double min_step = bw_levels_min_step(cv);
	size_t merged = 0;

	if (cv->L.rejected && dg_warnings_add(&r->notes, "%s", cv->L.rejected))
		return -ENOMEM;
	if (cv->L.n < 2)
		return 0;
	for (size_t s = 0; s + 1 < cv->nseg;) {
		double a = mean_ln(cv->rates, cv->excl, s ? cv->ends[s - 1] : 0, cv->ends[s]);
		double b = mean_ln(cv->rates, cv->excl, cv->ends[s], cv->ends[s + 1]);

		if (!(fabs(a - b) < min_step)) {
			s++;
			continue;
		}
		memmove(cv->ends + s, cv->ends + s + 1, (cv->nseg - s - 1) * sizeof(*cv->ends));
		cv->nseg--;
		merged++;
		s = s ? s - 1 : 0;
	}
	if (cv->nseg == 1 && merged && !r->flat_reason[0])
		snprintf(r->flat_reason, sizeof(r->flat_reason),
			 "no step along the curve stands out from the scatter of its samples about "
			 "their surface levels (%.2f%%): one zone",
			 100.0 * cv->L.spread);
	if (cv->L.spread <= LEVEL_NOTE_SPREAD && !merged)
		return 0;
	return dg_warnings_add(&r->notes,
			       "the curve reads %zu surface levels, but its samples scatter by "
			       "%.1f%% about them (more surfaces than levels, or surfaces whose "
			       "share of the zone's rate changes): only steps over %.1f%% are "
			       "taken for zones%s",
			       cv->L.n, 100 * cv->L.spread, 100 * min_step,
			       merged ? ", smaller ones merged" : "");
}

/* Whether the trial segments [ends[s-1], ends[s]) hold, as their median, fewer runs of one level
 * than LEVEL_MIN_RUNS x the levels: too few surface runs in a zone to tell its step from theirs.
 * runs: room for nseg counts. */
static bool short_zones(const struct curve *cv, const size_t *ends, size_t nseg, double *runs)
{
	if (nseg < 2)
		return false;
	for (size_t s = 0, a = 0; s < nseg; a = ends[s++]) {
		int last = -1;

		runs[s] = 0;
		for (size_t i = a; i < ends[s]; i++) {
			if (cv->excl[i])
				continue;
			runs[s] += cv->lev[i] != last;
			last = cv->lev[i];
		}
	}
	return dg_median(runs, nseg) < LEVEL_MIN_RUNS * (double)cv->L.n;
}

/* Whether the corrected curve's segments are zones: a trial segmentation (src/zones.c) whose
 * segments are flat. Where the levels explain the curve only in part, a staircase of steps
 * smaller than their scatter comes out as long segments that fall inside, and their boundaries
 * would be made up. 0 (*hold set), or -ENOMEM. */
static int levels_hold(const struct curve *cv, bool *hold)
{
	size_t n = cv->n ? cv->n : 1, *ends = malloc(n * sizeof(*ends)), nseg = 0;
	double *rates = malloc(n * sizeof(*rates)), noise;
	bool *excl = malloc(n * sizeof(*excl));
	int rc = -ENOMEM;

	if (ends && rates && excl) {
		memcpy(rates, cv->rates, cv->n * sizeof(*rates));
		memcpy(excl, cv->excl, cv->n * sizeof(*excl));
		rc = dg_zones_segment(rates, cv->n, fmax(NOISE_FLOOR, cv->L.spread),
				      fmax(MIN_STEP, bw_levels_min_step(cv)), excl, ends, &nseg,
				      &noise);
		*hold =
		    rc || (!some_segment_slopes(rates, excl, ends, nseg, bw_levels_min_step(cv)) &&
			   !short_zones(cv, ends, nseg, rates));
		rc = rc == -ENOMEM ? rc : 0;
	}
	free(ends);
	free(rates);
	free(excl);
	return rc;
}

int bw_levels_take_out(struct curve *cv)
{
	bool hold = true, from_trend;
	double widest = 0;
	int rc = dg_zones_surfaces_how(cv->rates, cv->excl, cv->n, LEVEL_MIN_SEP, cv->L.off,
				       &cv->L.n, cv->lev, &cv->L.spread, &from_trend);

	if (rc || cv->L.n < 2)
		return rc;
	for (size_t j = 1; j < cv->L.n; j++)
		widest = fmax(widest, cv->L.off[j] - cv->L.off[j - 1]);
	if (widest < LEVEL_MIN_GAP) {
		cv->L = (struct levels){.n = 1};
		return 0;
	}
	if (cv->L.spread > LEVEL_MAX_SPREAD) {
		cv->L = (struct levels){.n = 1, .rejected = LEVELS_SCATTER};
		return 0;
	}
	for (size_t i = 0; i < cv->n; i++)
		if (!cv->excl[i])
			cv->rates[i] /= exp(cv->L.off[cv->lev[i]]);
	/* the joint fit's levels are tried always (a cylinder layout's samples may fall in levels
	 * that are no surfaces'); the local trend's, far apart and tight, when they scatter */
	if ((!from_trend || cv->L.spread > LEVEL_NOTE_SPREAD) && (rc = levels_hold(cv, &hold)))
		return rc;
	if (!hold) {
		for (size_t i = 0; i < cv->n; i++)
			cv->rates[i] = cv->v[i].mb_per_s;
		cv->L = (struct levels){.n = 1, .rejected = LEVELS_SCATTER};
	}
	return 0;
}
