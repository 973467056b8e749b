/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by bandwidth_zones.c (the zones of the curve) and bandwidth_refine.c (the
 * bisection of their boundaries). Not a public interface.
 */
#ifndef DISKGEO_BANDWIDTH_ZONES_PRIV_H
#define DISKGEO_BANDWIDTH_ZONES_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bandwidth_priv.h"

#define LOCAL_SAMPLES 3	  /* a boundary's sides: rates of this many samples next to it */
#define REFINE_Z      3.0 /* refining samples class by the nearer rate at this x noise */
/* A step of 2% (ln) or more is a recording zone that must be found (drive-spec.md): kept
 * however far refinement placed it (unless the samples either side of where its bisection ended
 * read no such step: drop_unplaced); smaller ones only when placed. */
#define KEEP_STEP 0.0198
#define NEAR_KEEP 0.75 /* a step measured above this x KEEP_STEP may be a zone step */

/* One boundary to place: between segment A (samples [a0, a1)) and segment B ([b0, b1)). */
struct boundary {
	double ra, rb;
	uint64_t lo, hi;       /* the boundary lies in [lo, hi] */
	uint64_t a_len, b_len; /* rough zone lengths */
	uint64_t near_len;     /* the shortest of them and of the segments next to them */
	uint64_t span;	       /* bytes of each refining sample */
	double sigma;	       /* the noise of one (sigma of ln MB/s) */
	double step;	       /* |ln ra/rb| */
	/* where the segments meet: A's last sample and B's first (their centres, and the bracket
	 * between them), when the first bracket reaches a sample further each way */
	uint64_t la_mid, fb_mid, lo_near, hi_near;
	bool placed;	  /* refined as far as asked (or as samples can tell) */
	bool referenced;  /* ra and rb were measured at the refining size ... */
	bool hidden;	  /* ... by bw_split_take: a step the curve did not show */
	bool unconfirmed; /* reference rates measured that did not tell the sides apart */
	bool loose;	  /* a must-find step bisected to twice its target: no time for it */
	bool cyl; /* span: whole cylinders past its first fitted reads, classed end to end */
	/* refining samples measured its step too small for a zone step: bisected once those that
	 * may be one are, time left (refine_rest) */
	bool deferred;
	double measured; /* |ln| of its reference or confirming samples' rates (0: none) */
	/* the jump (ln, toward the step's sign) between the runs of samples either side of where
	 * its last bisection ended and its standard error (bw_step_shown; NAN: not done, or too
	 * few samples) */
	double cut_jump, cut_se;
	/* per-surface runs: longer than a composite's window (bw_composite found one run), and
	 * the band's length in zone A (bw_band_side; 0: not looked for, < 0: none found) */
	bool long_runs;
	double band;
};

/* The middle of b's bracket: where refinement puts the boundary. */
static inline uint64_t bw_bracket_mid(const struct boundary *b)
{
	return b->lo + (b->hi - b->lo) / 2;
}

/* The curve's surface levels (dg_zones_surfaces): ln offset of each, how many, and the noise of
 * one sample once corrected for them. */
struct levels {
	double off[DG_ZONES_MAX_SURFACES];
	size_t n;
	double noise;
	double spread; /* of one corrected sample around its level: the corrected curve's noise */
	const char *rejected; /* levels found but not kept: why (a note), else NULL */
};

/* The curve as the zone finder sees it: a copy of the n curve samples (refinement appends to
 * r->samples), their rates, which are set aside, the segments' ends and the boundaries. */
struct curve {
	struct dg_bandwidth_sample *v;
	double *rates;
	bool *excl;
	size_t *ends, n, nseg;
	struct boundary *bs;
	size_t nb, capb, ndropped; /* capb: room in bs */
	double noise;
	struct levels L; /* the surface levels, and each curve sample's */
	unsigned char *lev;
	/* zones from the serpentine runs (bandwidth_runs.c): their surface levels, kept apart
	 * from L while refinement classes samples by the runs' own rates */
	bool by_runs;
	struct levels surf;
	size_t surf_cycle; /* runs in a cycle */
};

/* Per-surface curves (bandwidth_levels.c): finds the surface levels of cv->rates and divides
 * each usable rate by its level's factor (nothing when the curve shows no levels). 0, -ENOMEM. */
int bw_levels_take_out(struct curve *cv);
/* The smallest step the corrected curve tells from its levels' scatter (0 without levels). */
double bw_levels_min_step(const struct curve *cv);
/* Merges the segments whose corrected rates differ by less than that; notes it, and a scatter
 * that makes the levels only a partial explanation. 0, -ENOMEM. */
int bw_levels_merge(struct curve *cv, struct dg_bandwidth_result *r);
/* Merges the boundaries the curve shows no step at (bandwidth_ramp.c: a curve falling in steps
 * smaller than its scatter, cut where the segmentation's penalty said); notes it. 0, -ENOMEM. */
int bw_ramp_merge(struct curve *cv, struct dg_bandwidth_result *r);
/* Where the levels were rejected, merges the boundaries next to a segment that falls inside by
 * more than its scatter explains (steps the curve cannot place); notes it. 0, -ENOMEM. */
int bw_levels_falling(struct curve *cv, struct dg_bandwidth_result *r);

/* Zones of a per-surface serpentine curve from its periodic runs of surface rates, when the
 * runs are clearly periodic (*taken): cv's segments, boundaries (bracketed, with the runs' own
 * rates either side; one inside a run of several slots placed from the run's ends, bisected
 * here), noise and surface levels (cv->surf, cv->lev). 0, -ENOMEM or the engine's -errno. */
int bw_runs_zones(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct curve *cv,
		  bool *taken);
/* Zones of a per-surface serpentine curve whose zones are shorter than a band group, from the
 * period of its surface pattern (bandwidth_zperiod.c): cv's segments and boundaries, only those
 * bisection placed, when the fit explains the curve (*taken). 0, -ENOMEM or the engine's -errno. */
int bw_period_zones(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct curve *cv,
		    bool *taken);
/* Sets each boundary's near_len: the shortest zone around it (bandwidth_zones.c). */
void bw_near_lens(struct curve *cv);
/* Sets each segment's end (cv->ends) from its boundary's bracket middle: the samples whose
 * centres lie before it (bandwidth_zones.c). */
void bw_curve_ends(struct curve *cv);

/* A sample's rate corrected for its surface level into *out; false when the sample cannot tell
 * on which side of b it lies. */
bool bw_level_rate(const struct levels *L, const struct boundary *b, double r, double *out);
/* Narrows b's bracket with a sample at [off, off + len) of rate r. */
void bw_narrow(struct boundary *b, uint64_t off, uint64_t len, double r);
/* The noise of a sample of `span` bytes from the curve's `noise` at its own size. */
double bw_noise_at(const struct ctx *c, double noise, uint64_t span);
/* The size of b's refining samples (0: none classes reliably). */
uint64_t bw_refine_span(const struct ctx *c, const struct boundary *b, double noise);
/* Whether the samples around b's bracket (within `reach` of its middle, the nearest within a
 * quarter of it; `noise` the curve's)
 * show a step there: a jump between two flat runs, most of b's step (by a wider margin once
 * bisection `restarted`: the samples chose where it went). When they read one
 * level instead, *level gets its rate (else 0). jump[0] gets the runs' jump (ln, toward the
 * step's sign) and jump[1] its standard error (NAN: too few samples to look). */
bool bw_step_shown(const struct ctx *c, const struct dg_bandwidth_result *r, const struct levels *L,
		   const struct boundary *b, uint64_t reach, double noise, bool restarted,
		   double *level, double jump[2]);
/* The side of b's bracket whose run is too short for bw_step_shown (fewer than its samples
 * within `reach` of the bracket's middle, or none within a quarter of it) while the other's is
 * not: -1 for A's, 1 for B's, 0 when both or neither are. */
int bw_step_short_side(const struct ctx *c, const struct dg_bandwidth_result *r,
		       const struct levels *L, const struct boundary *b, uint64_t reach,
		       double noise);
/* Whether a placed boundary stands against its sides' own scatter: every usable sample of each
 * side's zone (within [from, to), the neighbouring boundaries; `noise` the curve's), their means'
 * jump most of b's step and STEP_T standard errors (Welch) of the sides' whole spread. */
bool bw_step_stands(const struct ctx *c, const struct dg_bandwidth_result *r,
		    const struct levels *L, const struct boundary *b, uint64_t from, uint64_t to,
		    double noise);
/* Sets b's bracket to [lo, hi] narrowed by every usable sample of r that overlaps it, classed by
 * b's rates. */
void bw_renarrow(const struct dg_bandwidth_result *r, const struct levels *L, struct boundary *b,
		 uint64_t lo, uint64_t hi);
/* Measures one refining sample whose timed part is centred on `mid` into *m, and adds it to r
 * when timed. 0, -ENOMEM or the engine's -errno. */
int bw_refine_sample(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, uint64_t mid,
		     uint64_t span, struct meas *m);
/* What narrows a boundary in place of a refining sample that reads a surface of either side
 * (bandwidth_composite.c): a window and a rate; valid when there is one. */
struct composite {
	uint64_t off, len;
	double mb_per_s;
	bool valid;
};
/* For the refining sample m (centred on mid) near b that reads a surface of either side
 * (bw_level_rate): where the drive's surface runs are short, a composite of sub-reads spread
 * over `window` bytes centred on mid (its rate the zones' own); where they are long, m's rate
 * placed on the side its band neighbours on the curve read like (bw_band_side). 0, -ENOMEM or
 * the engine's -errno. */
/* Whether a sample of rate mb_per_s could read a surface of either side of b, or two surfaces
 * at once, on a drive whose composites showed short runs (where samples straddle surfaces, a
 * rate between two levels is no level's). */
bool bw_surface_overlap(const struct ctx *c, const struct levels *L, const struct boundary *b,
			double mb_per_s);
int bw_surface_side(struct ctx *c, const struct dg_bandwidth_result *r, struct boundary *b,
		    uint64_t mid, uint64_t window, const struct meas *m, struct composite *out);
/* The side of b a sample [off, off + len) of rate mb_per_s lies on, from its band neighbours on
 * the curve (bandwidth_period.c): *side 1 for A, 0 for B, -1 when they cannot tell. 0 or
 * -ENOMEM. */
int bw_band_side(const struct dg_bandwidth_result *r, struct boundary *b, uint64_t off,
		 uint64_t len, double mb_per_s, int *side);
/* A refinement run: its budget of device time from t0, the curve's shortest segment, and
 * whether boundaries whose refining samples measure a step under KEEP_STEP wait (refine_rest). */
struct refine_run {
	uint64_t t0, shortest;
	double budget_ns;
	bool triage; /* what is left cannot hold every boundary: steps measured small wait */
};
/* What is left of the run's budget. */
double bw_refine_left_ns(const struct ctx *c, const struct refine_run *u);
/* The device time b's bisection takes. */
double bw_refine_cost_ns(const struct ctx *c, const struct boundary *b, const struct refine_run *u);
/* Bisects b (one of cv's boundaries) within `allowance_ns`. 0, -ENOMEM or -errno. */
int bw_refine_boundary(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap,
		       struct boundary *b, const struct curve *cv, uint64_t shortest,
		       double allowance_ns);
#define SPLIT_MAX 64 /* segments looked at for a hidden step, at most */
/* The search for steps the curve's scatter hides inside its segments (bandwidth_split.c): on a
 * curve with no surface levels whose noise lets the segmentation merge 2% steps. */
struct split_search {
	bool on;
	size_t *idx, tried[SPLIT_MAX], ntried;
	double *y;
};
/* Starts the search on cv (off when the curve shows no such noise). 0 or -ENOMEM. */
int bw_split_init(struct split_search *ss, const struct curve *cv);
void bw_split_free(struct split_search *ss);
/* The step of the best split not tried yet (sides that differ by most of a zone step), 0 when
 * there is none. */
double bw_split_peek(const struct curve *cv, struct split_search *ss);
/* Confirms the best split with two refining samples either side when what is left of u's budget
 * holds them and its bisection; a confirmed one becomes a segment end and a boundary (appended
 * to cv's), then bisected. 0, -ENOMEM or the engine's -errno. */
int bw_split_take(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct curve *cv,
		  const struct refine_run *u, struct split_search *ss);
/* Puts cv's boundaries and segment ends back in order after bw_split_take appended some. */
void bw_sort_boundaries(struct curve *cv);
/* On a curve without surface levels: each must-find boundary's refining samples sized by the
 * curve's noise next to it when that is less than the whole curve's, and its bracket narrowed to
 * the segments' meeting samples when they class by the nearer rate at that noise
 * (bandwidth_noise.c). */
void bw_size_by_local_noise(const struct ctx *c, struct curve *cv);
/* The time of one cylinder of a per-surface drive of cylinder layout, from a stream of small
 * reads over [off, off + len) inside one zone (bandwidth_cylinder.c): 0 when the stream shows
 * no cylinder's period. 0, -ENOMEM or the engine's -errno. */
int bw_cylinder_time(struct ctx *c, uint64_t off, uint64_t len, double *tau_s);
/* Where the curve's surface levels were rejected and it is left with one zone: zone starts from
 * band-group strobes (bandwidth_strobe.c), walked from the inner end while they vouch and the
 * refinement's time lasts; cv's segments and boundaries when any is found. 0, -ENOMEM or the
 * engine's -errno. */
int bw_strobe_zones(struct ctx *c, struct dg_bandwidth_result *r, struct curve *cv);
/* Bisects the curve's boundaries within the refinement's budget, then drops the small ones left
 * unplaced. 0, -ENOMEM or the engine's -errno. */
int bw_refine_all(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, struct curve *cv);

#endif
