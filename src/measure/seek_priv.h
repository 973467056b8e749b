/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by seek.c (curve, fit, orchestration), rotation.c (period and overhead),
 * iops.c (spans) and seek_legs.c (the phase-controlled pair measurement). Not a public
 * interface; tests include it to check the estimators on their own.
 */
#ifndef DISKGEO_SEEK_PRIV_H
#define DISKGEO_SEEK_PRIV_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "diskgeo/engine.h"
#include "diskgeo/seek.h"

/* Legs of one pair at most, and the margin (in blocks) that keeps a pair's first places off the
 * device start; the measured side then walks up (seek_legs.c). */
#define SEEK_MAX_LEGS	 10u
#define SEEK_WALK_BLOCKS (2u * SEEK_MAX_LEGS + 4u)
/* Places closer than this may be joined by the drive's read-ahead stream instead of a seek:
 * such a pair measures one way only, after a positioning read each time; farther apart, every
 * read is a measured leg (read-ahead is at most a cache segment, a few MiB). */
#define SEEK_STREAM_BYTES (32ull << 20)

struct seek_ctx {
	struct dg_engine *e;
	uint64_t capacity_bytes; /* whole blocks only */
	uint32_t block_bytes;
	struct dg_errors *errors;
	volatile sig_atomic_t *stop;
	uint64_t dt0_ns; /* engine device time at the start of the run */
	uint64_t budget_ns;
	uint64_t rng;
	/* what rotation.c learnt */
	bool rotating;
	double period_ns;     /* T */
	double drift_ns;      /* phase shift of a one-block backward step: a block's media time */
	double k0_ms;	      /* overhead + transfer: an access with no move and no wait */
	double overhead_ms;   /* the command overhead, without the host's jitter */
	double hit_ms;	      /* the median cache hit (jitter included): faster is a hit */
	double jitter_ms;     /* the mean of the host's per-command delay (0 when none) */
	uint64_t last_offset; /* where the last read was (where the head is) */
	bool stopped;	      /* *stop was seen, or the reads keep failing */
	unsigned failed_in_a_row;
	bool failing;	 /* SEEK_MAX_FAILED_IN_A_ROW reads failed back to back: the run ends */
	unsigned stalls; /* samples delayed beyond 1.5 turns (a busy drive), re-measured */
	unsigned moved;	 /* samples whose read failed, re-measured at a fresh place */
	bool rotation_failing; /* rotation.c gave up: its reads kept failing */
	double t2t_ms;	       /* seek_t2t.c's track-to-track (NAN: not measured) */
	unsigned cache_hits;   /* samples that read a cache hit as a move, re-measured (seek.c) */
	uint64_t full_in;      /* how far in from the ends the full stroke's kept pair was */
};

/* Reads failing back to back that end a run (a truncated file, a dead device): the rest would
 * fail too, each adding an error and costing a timeout. */
#define SEEK_MAX_FAILED_IN_A_ROW 64u

/* Device time spent since the run began. */
uint64_t seek_ctx_used_ns(const struct seek_ctx *s);
/* True (and s->stopped set) when *stop is set or the reads keep failing (s->failing). */
bool seek_ctx_stopping(struct seek_ctx *s);
/* splitmix64 (Steele, Lea & Flood 2014): the run's only randomness, seeded by params.seed. */
uint64_t seek_rand(struct seek_ctx *s);
double seek_rand01(struct seek_ctx *s);

/*
 * One QD1 read of a block at `offset`, submitted at engine time `at_ns` (0 = now; the engine
 * idles until then). Returns 0 with *c filled and *failed telling whether the read failed
 * (then it is recorded in s->errors), -ECANCELED when *stop is set or the reads keep failing
 * (s->stopped; nothing read), or the engine's -errno.
 */
int seek_read(struct seek_ctx *s, uint64_t offset, uint64_t at_ns, struct dg_completion *c,
	      bool *failed);

/* The K interval of one pair: every measured access a bounds K to (a - T, a]. */
struct kint {
	double lo, hi; /* ms; hi = INFINITY before the first leg */
	double sum;    /* non-rotating: the sum of the accesses */
	unsigned n;    /* measured legs */
};
void kint_init(struct kint *k);
/* Adds one measured access of `a_ms` (period_ms = 0 on a non-rotating device). */
void kint_add(struct kint *k, double a_ms, double period_ms);
/* The next threshold: the interval's middle. Always the middle, never a guess from neighbours:
 * then the final interval is a cell of a partition fixed relative to the first leg's interval,
 * whose offset is uniform (the first leg's rotational wait), so the middle of the final
 * interval is an unbiased estimate of K. A prior-guided threshold (or a stopping rule that
 * looks at where K fell) makes the partition depend on the wait and biases the estimate. */
double kint_threshold(const struct kint *k);
/* The estimate: the interval's middle (rotating) or the mean access (not). */
double kint_estimate(const struct kint *k, double period_ms);

struct pair_req {
	uint64_t first;	   /* read first (positioning, not measured) */
	uint64_t second;   /* the first measured leg's target (a backward leg when < first) */
	bool fwd_measured; /* far enough apart that either way round is a seek (the caller may
			      start on the side nearer the head) */
	double k_min_ms;   /* K is surely above this: a threshold below it is a known miss,
			      applied without a read */
	double width_ms;   /* stop when K is known to this width */
	unsigned max_legs; /* measured legs at most (<= SEEK_MAX_LEGS) */
};

struct pair_out {
	bool ok;	  /* a consistent estimate */
	double k_ms;	  /* overhead + move + transfer */
	double access_ms; /* the first measured leg, submitted without delay */
	double width_ms;  /* the interval left */
	unsigned legs;	  /* measured legs */
	bool failed;	  /* a read failed (recorded): nothing measured, try another place */
};

/*
 * Measures K between two places: reads r->first (positioning), then r->second (the first
 * measured leg, plain), then repeatedly a positioning read near the measured block + the pair's
 * distance and a measured read a few blocks further up at `second`, submitted so that the head
 * would arrive exactly when the target block comes round if K were the threshold (the
 * interval's middle; see kint_threshold()). Every read avoids what earlier ones can have left in
 * the drive's cache, and a read that was a hit or fell on another track is not counted (see
 * seek_legs.c). Near the device's end the two places change roles. Returns 0 (see out->ok and
 * out->failed), -ECANCELED when stopped, or -errno from the engine.
 */
int seek_pair_measure(struct seek_ctx *s, const struct pair_req *r, struct pair_out *out);

/* rotation.c: measures T, the overhead and K0 near `at` (the outer edge). Fills s->rotating,
 * period_ns, drift_ns, overhead_ms, k0_ms (NAN when not measured), s->rotation_failing when
 * reads failed so often that nothing could be measured. `second_try`: fine groups capped a
 * quarter turn above the interval predicted, and where the first try finds no period, a robust
 * one on fresh places (less precise: its period can be a few hundredths of a percent off,
 * within the rpm bound but not enough for the geometry's phase walks, which try the first
 * method at other places instead, and whose track-size hint from the block time moved with the
 * cap: zoo 29 at measurement seed 2 lost every place). Returns 0, -ECANCELED when stopped, or
 * -errno. */
int seek_rotation_measure(struct seek_ctx *s, uint64_t at, bool second_try);

/* seek_full.c: the full stroke into r->full_stroke_ms (NAN stays when no attempt held); 0,
 * or -errno from the engine. And whether a curve sample at distance d read a cache hit as a
 * move (its first leg moved nothing). */
int seek_full_stroke_measure(struct seek_ctx *s, struct dg_seek_result *r);
bool seek_implausible(const struct seek_ctx *s, uint64_t d, const struct pair_out *po);
/* The curve's last point, when its distance leaves room for one start offset only, takes the
 * full stroke's figure (the same pair, measured more finely). */
void seek_full_as_point(const struct seek_ctx *s, struct dg_seek_result *r);

#define T2T_BUDGET_SHARE 0.05 /* the track-to-track probe's share of the budget at most */

/* seek_t2t.c: the seek between adjacent tracks of one surface where the tracks' phases show
 * one surface walked across cylinders (track = the track size rotation.c found); *t2t_ms is
 * NAN when the layout does not show it (the curve's fit gives the figure then). Returns 0,
 * -ECANCELED when stopped, or -errno. */
int seek_t2t_measure(struct seek_ctx *s, uint64_t track, double *t2t_ms);
/* The device time (ms) its sweep costs, whatever the layout. */
double seek_t2t_cost_ms(const struct seek_ctx *s);

/* seek_curve.c: the curve's samples. A distance's samples pooled over the passes: */
struct seek_acc {
	double *acc; /* the first measured leg's access times */
	unsigned nacc, cap;
	double sum, sum2; /* of the samples' seek times */
	unsigned ok;	  /* samples */
	bool stuck;	  /* a batch added too few (failing places): no more tries */
};
void seek_acc_clear(struct seek_acc *a);
/* A first guess of seek(D) for planning. */
double seek_guess(const struct dg_seek_result *r, uint64_t d);
/* Device time (ms) of one sample at distance d when the mean pools n samples. */
double seek_sample_cost(const struct seek_ctx *s, const struct dg_seek_result *r, uint64_t d,
			unsigned n);
/* Measures up to n more samples at distance d into `a` (re-measuring up to `redos` unsettled
 * ones elsewhere) and sets *pt from everything `a` holds; stops early, keeping what it has,
 * when the next sample would end past `deadline_ns` of used device time. 0 or -errno. */
int seek_measure_distance(struct seek_ctx *s, struct dg_seek_result *r, uint64_t d, unsigned n,
			  uint64_t deadline_ns, unsigned redos, struct seek_acc *a,
			  struct dg_seek_point *pt);
/* More samples, batch by batch, at the point whose mean is least certain against its
 * tolerance (acc[i] holds r->points[i]'s samples), until `deadline_ns` of used device time or
 * until every mean is certain enough. 0 or -errno. */
int seek_curve_extra(struct seek_ctx *s, struct dg_seek_result *r, struct seek_acc *acc,
		     uint64_t deadline_ns);
/* Drops the points left with fewer samples than a mean needs (their reads failed, hit the
 * cache or never settled) where the device had room for more start offsets (not the longest
 * distance's lone pair); acc[] follows. Returns how many. */
size_t seek_curve_drop_thin(const struct seek_ctx *s, struct dg_seek_result *r,
			    struct seek_acc *acc);

/* iops.c: what one span's pairs hold so far: the places they are drawn from, each pair's
 * precision, the curve's mean over the span, the pairs' K and curve sums, and the squared
 * residual (K minus the curve at the pair's distance) differences of npairs collapsed strata. */
struct seek_span_acc {
	uint64_t lo, hi;
	double width_ms, T_ms, cv_mean;
	double sum, cv_sum, diff_sq;
	unsigned done, npairs;
};

/* One span's mean random-read service time from a jittered m x m grid of pairs, each as precise
 * as the mean of m x m needs (r's curve, if any, is the control variate); a keeps the pairs for
 * seek_span_more. */
int seek_span_measure(struct seek_ctx *s, const struct dg_seek_result *r, uint64_t start,
		      uint64_t span, unsigned m, struct seek_span_acc *a, struct dg_seek_span *out);
/* Another jittered m x m grid over a's span; out gets the mean of every pair so far. */
int seek_span_more(struct seek_ctx *s, const struct dg_seek_result *r, unsigned m,
		   struct seek_span_acc *a, struct dg_seek_span *out);
/* The standard error of out's mean relative to it, from a's grids' collapsed strata. */
double seek_span_rel_se(const struct seek_span_acc *a, const struct dg_seek_span *out);

#endif
