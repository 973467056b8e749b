/* SPDX-License-Identifier: MIT */
/*
 * Drive specs: the seek curve (Ruemmler & Wilkes, "An introduction to disk drive modeling",
 * IEEE Computer 1994), from its coefficients or from the friendly figures drive-spec.md defines.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "spec_priv.h"

/* ---- seek curve ---- */

double dg_spec_seek_ms(const struct dg_spec *spec, uint64_t cylinders)
{
	double d = (double)cylinders;

	if (cylinders == 0)
		return 0.0;
	if (d < spec->seek_boundary)
		return spec->seek_a + spec->seek_b * sqrt(d);
	return spec->seek_c + spec->seek_e * d;
}

/*
 * Friendly figures -> (a, b, c, e, B) as drive-spec.md defines them. The mean of g_B(D) over
 * P(D = d) = 2(N-d)/(N(N-1)) is evaluated in O(1) per B from prefix sums, so the bisection on B
 * is cheap. r(B) = E[g_B(D)] / g_B(N-1) rises from about 1/3 (B = 1: linear) to 8/15 (B = N-1:
 * pure square root); B is chosen with r(B) = (average - t2t) / (full - t2t).
 */
struct gsum {
	uint64_t n; /* N */
	double *p0; /* p0[m] = sum_{1<=d<m} P(d) */
	double *p1; /* sum P(d) sqrt(d) */
	double *pd; /* sum P(d) d */
};

static double g_at(double B, double d)
{
	if (d < B)
		return sqrt(d) - 1.0;
	return sqrt(B) / 2.0 + d / (2.0 * sqrt(B)) - 1.0;
}

static double ratio(const struct gsum *g, double B)
{
	uint64_t n = g->n;
	uint64_t m = (uint64_t)ceil(B); /* first d >= B */

	if (m < 1)
		m = 1;
	if (m > n)
		m = n;
	double below = g->p1[m] - g->p0[m];
	double rest0 = g->p0[n] - g->p0[m];
	double restd = g->pd[n] - g->pd[m];
	double mean = below + rest0 * (sqrt(B) / 2.0 - 1.0) + restd / (2.0 * sqrt(B));
	return mean / g_at(B, (double)(n - 1));
}

static int friendly_seek(struct spec_ctx *c, struct dg_spec *s, double t2t, double avg, double full)
{
	uint64_t n = s->cylinders;
	struct gsum g = {.n = n};
	int rc = -ENOMEM;

	if (!(t2t < avg && avg < full))
		return spec_bad(
		    c, "seek",
		    "need track_to_track_ms < average_ms < full_stroke_ms (got %g, %g, %g)", t2t,
		    avg, full);
	if (n < 3)
		return spec_bad(
		    c, "seek",
		    "the friendly figures need at least 3 cylinders (the zones hold %llu)",
		    (unsigned long long)n);
	g.p0 = malloc((n + 1) * sizeof(double));
	g.p1 = malloc((n + 1) * sizeof(double));
	g.pd = malloc((n + 1) * sizeof(double));
	if (!g.p0 || !g.p1 || !g.pd)
		goto err;
	g.p0[0] = g.p1[0] = g.pd[0] = 0.0;
	g.p0[1] = g.p1[1] = g.pd[1] = 0.0;
	double nn = (double)n;
	for (uint64_t d = 1; d < n; d++) {
		double p = 2.0 * (nn - (double)d) / (nn * (nn - 1.0));
		g.p0[d + 1] = g.p0[d] + p;
		g.p1[d + 1] = g.p1[d] + p * sqrt((double)d);
		g.pd[d + 1] = g.pd[d] + p * (double)d;
	}
	double want = (avg - t2t) / (full - t2t);
	double lo = 1.0, hi = (double)(n - 1), B;
	double rlo = ratio(&g, lo), rhi = ratio(&g, hi);
	if (want <= rlo) {
		B = lo;
		if (want < rlo - 1e-12 && c->warnings)
			dg_warnings_add(
			    c->warnings,
			    "%s: seek.average_ms %g is below the feasible range (%.4g..%.4g "
			    "ms): using a linear seek curve (boundary 1 cylinder)",
			    c->origin, avg, t2t + rlo * (full - t2t), t2t + rhi * (full - t2t));
	} else if (want >= rhi) {
		B = hi;
		if (want > rhi + 1e-12 && c->warnings)
			dg_warnings_add(
			    c->warnings,
			    "%s: seek.average_ms %g is above the feasible range (%.4g..%.4g "
			    "ms): using a square-root seek curve (boundary %llu cylinders)",
			    c->origin, avg, t2t + rlo * (full - t2t), t2t + rhi * (full - t2t),
			    (unsigned long long)(n - 1));
	} else {
		for (int i = 0; i < 200 && hi - lo > 1e-9 * hi; i++) {
			double mid = 0.5 * (lo + hi);
			if (ratio(&g, mid) < want)
				lo = mid;
			else
				hi = mid;
		}
		B = 0.5 * (lo + hi);
	}
	double b = (full - t2t) / g_at(B, (double)(n - 1));
	s->seek_b = b;
	s->seek_a = t2t - b;
	s->seek_e = b / (2.0 * sqrt(B));
	s->seek_c = s->seek_a + b * sqrt(B) / 2.0;
	s->seek_boundary = B;
	s->seek_friendly = true;
	rc = 0;
err:
	free(g.p0);
	free(g.p1);
	free(g.pd);
	return rc;
}

int spec_parse_seek(struct spec_ctx *c, struct dg_spec *s, const json_t *seek)
{
	static const char *const keys[] = {"a",
					   "b",
					   "c",
					   "e",
					   "boundary_cylinders",
					   "track_to_track_ms",
					   "average_ms",
					   "full_stroke_ms",
					   NULL};
	int rc;

	if (!seek)
		return spec_bad(c, "seek", "missing");
	if (!json_is_object(seek))
		return spec_bad(c, "seek", "must be an object");
	if ((rc = spec_check_keys(c, seek, "seek", keys)))
		return rc;
	bool friendly = json_object_get(seek, "track_to_track_ms") ||
			json_object_get(seek, "average_ms") ||
			json_object_get(seek, "full_stroke_ms");
	bool explicit = json_object_get(seek, "a") || json_object_get(seek, "b") ||
			json_object_get(seek, "c") || json_object_get(seek, "e") ||
			json_object_get(seek, "boundary_cylinders");
	if (friendly && explicit)
		return spec_bad(
		    c, "seek",
		    "give either {a, b, c, e, boundary_cylinders} or {track_to_track_ms, "
		    "average_ms, full_stroke_ms}, not both");
	if (!friendly && !explicit)
		return spec_bad(c, "seek",
				"needs {a, b, c, e, boundary_cylinders} or {track_to_track_ms, "
				"average_ms, full_stroke_ms}");
	if (friendly) {
		double t2t, avg, full;
		if ((rc = spec_get_num(c, seek, "seek", "track_to_track_ms", true, true, 1e6, 0,
				       &t2t)) ||
		    (rc = spec_get_num(c, seek, "seek", "average_ms", true, true, 1e6, 0, &avg)) ||
		    (rc = spec_get_num(c, seek, "seek", "full_stroke_ms", true, true, 1e6, 0,
				       &full)))
			return rc;
		return friendly_seek(c, s, t2t, avg, full);
	}
	if ((rc = spec_get_num(c, seek, "seek", "a", true, false, 1e6, 0, &s->seek_a)) ||
	    (rc = spec_get_num(c, seek, "seek", "b", true, false, 1e6, 0, &s->seek_b)) ||
	    (rc = spec_get_num(c, seek, "seek", "c", true, false, 1e6, 0, &s->seek_c)) ||
	    (rc = spec_get_num(c, seek, "seek", "e", true, false, 1e6, 0, &s->seek_e)) ||
	    (rc = spec_get_num(c, seek, "seek", "boundary_cylinders", true, true, 1e12, 0,
			       &s->seek_boundary)))
		return rc;
	if (!(dg_spec_seek_ms(s, 1) > 0))
		return spec_bad(c, "seek", "seek(1) must be > 0 (a + b = %g)",
				dg_spec_seek_ms(s, 1));
	return 0;
}
