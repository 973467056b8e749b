/* SPDX-License-Identifier: MIT */
/*
 * Internals of the geometry measurement (geometry*.c): the phase probe, the track walk and the
 * run search. Positions are physical sector indices (a 512e drive's skews and track sizes are
 * whole physical sectors); phases are in revolutions. Not a public interface.
 */
#ifndef DISKGEO_GEOMETRY_PRIV_H
#define DISKGEO_GEOMETRY_PRIV_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "diskgeo/geometry.h"
#include "seek_priv.h"
#include "util.h"

#define GEO_MEMO      256u	    /* phases remembered per place */
#define GEO_MAX_WALK  48u	    /* tracks walked per place at most */
#define GEO_MAX_RUNS  40u	    /* serpentine runs walked per place at most */
#define GEO_FAR_BYTES (64ull << 20) /* reference sector's distance: beyond any read-ahead */
#define GEO_FIT	      512u	    /* reference completions in the period's fit */
#define GEO_DELTA_MAX 128u	    /* probes of each sector in a phase delta at most */
#define GEO_AWAY      4u	    /* sectors a probe may read first: the reference and 3 more */

struct geo_memo {
	uint64_t x;
	double ph;
};

/* One track found by a walk: its first sector, its size, and the phase jump into it. */
struct geo_track {
	uint64_t start;
	uint32_t size; /* 0 = the walk ended before its end was found */
	double jump;   /* wrap(ph(start) - ph(start - 1)), rev; NAN for the first */
	double skew;   /* sectors: jump * size - 1 (NAN until the size is known) */
	double tau_ms; /* the move the skew implies: (skew - 0.5) * T / size */
};

struct geo {
	struct seek_ctx s;
	double T_ns;
	uint32_t lsec, psec, u; /* u = physical / logical */
	uint64_t npsec;		/* physical sectors in the range's end */
	uint64_t lo_psec;	/* the range's first physical sector */
	double hit_ms;		/* a read at least this quick was served from the cache */
	unsigned repeats;	/* probes per phase (circular median) */
	double noise;		/* phase noise of one phase after the median (rev) */
	double thr;		/* a phase deviation beyond this is a track boundary (rev) */
	double sd, tail;	/* the last calibration's spread of one probe and its tail (rev) */
	unsigned probes;	/* probes (reference + target pairs) in all */
	unsigned bad;		/* unusable probes at this place */
	bool sub;		/* moves a sector apart are told apart (geo_subsector) */
	bool hint_ok;		/* a walk's size hint held a track's slope (first_boundary) */
	uint64_t ref;		/* the place's reference sector */
	struct geo_memo memo[GEO_MEMO];
	unsigned nmemo;
	const char *why; /* why the last place failed (a sentence), NULL when unknown */
	struct geo_track keep[DG_GEOMETRY_MAX_HEADS + 1]; /* tracks of the first good place */
	unsigned nkeep;
	bool nkeep_done;
	uint64_t budget_end_ns;
	uint64_t place_t0_ns, place_max_ns;
	/* the current place's start and its share */ /* device time (seek_ctx_used_ns) the run
							 may use */
	/* The reference's completions, fitted against the revolutions counted between them:
	 * e = t - nrev * T0 = a + nrev * dT + jitter (the last GEO_FIT points). The fit predicts
	 * when the reference passed, free of its own jitter, and refines T; see ref_fit() */
	int64_t nrev;
	double flast_ns, T0_ns;
	double fx[GEO_FIT], fe[GEO_FIT];
	unsigned fn; /* points seen (the ring holds the last GEO_FIT) */
	/* the fit's line now (fa + nrev * (T0 + fd)), and the last probe's completion and the
	 * reference's revolution it counted from (geo_phase_delta reads its probes against one
	 * line) */
	double fa, fd, last_cx_ns;
	int64_t last_rev;
	/* The period is one for the drive: the earlier places' fits give Tp with the weight pw
	 * (the sum of their revolutions' squares about their means), the current fit's own is
	 * fvar; the line with the slope of all of them (fpa + nrev * (T0 + fpd)) reads the
	 * probes of a phase delta */
	double pw, fvar, Tp_ns, fpa, fpd;
	/* The probe's first read ("away": it moves the head off the target) is the reference or
	 * one of the sectors after it on its track (a quarter of `trk` apart), whichever lets the
	 * target come round soonest (geometry_probe.c): their phases as seen (the earliest), the
	 * quickest completion of a first read and of a target read at this place (ns), and the
	 * probes since the reference was last read (the fit is fed at least every few probes) */
	double period_scale; /* the handed period's factor (1; tests perturb it: geo_run) */
	uint32_t trk;	     /* a track size expected (sectors; 0 unknown) */
	bool away_ok;	     /* probes may read away from the reference (a serpentine zone step) */
	uint64_t away[GEO_AWAY];
	double away_ph[GEO_AWAY];
	bool away_seen[GEO_AWAY];
	double lat_away_ns, lat_tgt_ns;
	unsigned since_ref;
};

static inline double geo_wrap(double x)
{
	x -= (double)(int64_t)x;
	if (x >= 0.5)
		x -= 1;
	if (x < -0.5)
		x += 1;
	return x;
}

/* One probe: an away read (the reference, or a sector after it on its track: whichever lets the
 * target, expected at phase `want` (NAN: unknown), come round soonest), the target read; the
 * target's phase against the reference's fit in *ph, its completion and the fit's revolution in
 * g->last_cx_ns and g->last_rev. 0, 1 (unusable), 2 (stopped) or -errno. */
int geo_probe_once(struct geo *g, uint64_t x, double want, double *ph);
/* The earlier of two phases a and b (NAN: none yet), around a turn: the host only delays a
 * completion. */
double geo_earliest(double a, double b);
/* The earliest of v[0..n) (unwrapped around v[0]; a late host only delays a completion), in
 * [0, 1). With `median`, the circular median instead. Sorts v. */
double geo_circ_pick(double *v, unsigned n, bool median);
/* dg_geometry_run() with the rotation period it measures multiplied by `period_scale` (1 but
 * in tests: the period handed to the geometry perturbed, which the reference fits refine). */
int geo_run(struct dg_engine *e, const struct dg_device_info *info,
	    const struct dg_geometry_params *p, struct dg_errors *errors,
	    volatile sig_atomic_t *stop, dg_progress_fn progress, void *progress_arg,
	    double period_scale, struct dg_geometry_result **out);

/* Starts a place: sets the reference sector near `x`, forgets the phases. */
void geo_place_begin(struct geo *g, uint64_t x);
/* The phase of sector x (median of g->repeats probes). Returns 0, 1 when the probes were
 * unusable (cache hits, failed reads, no agreement), 2 when stopped or out of time, or -errno. */
int geo_phase(struct geo *g, uint64_t x, double *ph);
/* The phase of sector x from n probes at most (the remembered phase when there is one; not
 * remembered): for tests whose margin is many times the noise. Returns as geo_phase. */
int geo_phase_coarse(struct geo *g, uint64_t x, unsigned n, double *ph);
/* The phase of sector x from four times as many probes (not remembered): noise / 4. Returns as
 * geo_phase. */
int geo_phase_fine(struct geo *g, uint64_t x, double *ph);
/* The phase of y less that of x (wrapped), from `mult` times the repeats of probes of each (64
 * at most), probed in turn and read against one line of the reference's fit (the one after the last
 * probe): its error is alike for both. Returns as geo_phase. */
int geo_phase_delta(struct geo *g, uint64_t x, uint64_t y, unsigned mult, double *d);
/* Measures the probe noise at `x` (5 probes) and sets repeats, noise and thr. Returns as
 * geo_phase. */
int geo_calibrate(struct geo *g, uint64_t x);
/* The skew into track t (its size known) again, from phases of `mult` times the repeats of
 * probes each (64 at most; 4 for a move told apart); GEO_SKEW_FINE (a figure reported) probes
 * on, GEO_DELTA_MAX at most, until the earliest probes' error (the host's mean delay over the
 * probes) is a fifth of the tolerance: 1.5 sectors, 0.5 physical on a 512e drive. Returns as
 * geo_phase (src/geometry_delta.c). */
#define GEO_SKEW_FINE 8u
int geo_skew(struct geo *g, const struct geo_track *t, unsigned mult, double *skew);
/* Sets g->why (why the place ends) and returns 1. */
int geo_fail(struct geo *g, const char *why);
/* True when the current place has used more than its share of the budget. */
bool geo_place_overtime(struct geo *g);
/* True when the device time is spent. */
bool geo_out_of_time(struct geo *g);

/* The track-aligned I/O recommendation from the kept tracks (src/geometry_align.c). 0, 2 or
 * -errno; a figure that cannot be measured is left out with a note. */
int geo_align_measure(struct geo *g, struct dg_geometry_result *r);

/* Walks up to `max` tracks from sector x; `hint` (> 0) is a track size expected there. Returns
 * the tracks found (the first one's start is the first boundary after x) in *n; 0, 1 (the place
 * is unusable: *why says why), 2 (stopped) or -errno. */
int geo_walk(struct geo *g, uint64_t x, uint32_t hint, const uint32_t *cycle, unsigned ncycle,
	     struct geo_track *t, unsigned max, unsigned *n, const char **why);

/* The end of the track that starts at b (a boundary): the first sector of the next track in
 * *end; `ref` is a size expected near, cand[0..ncand) sizes tried first. Returns as geo_walk. */
int geo_track_end(struct geo *g, uint64_t b, uint32_t ref, const uint32_t *cand, unsigned ncand,
		  uint64_t *end);

/* Serpentine: from a walked run of equal tracks (t[0..n), all the same size and skew), finds
 * where the run ends: *end gets the first sector after the run's last track. `band` (0 = none)
 * is an earlier place's band when t[0] is a run's second track: the end is tried there first
 * (with `guess`, a band guessed: kept only where the move there differs from the run's step).
 * With g->sub, *k gets the run's step where its phases agree on one. 0, 1 (not found), 2 or
 * -errno. */
int geo_run_end(struct geo *g, const struct geo_track *t, unsigned n, uint64_t band, bool guess,
		uint64_t *end, double *k);

/* seek_read() and seek_rotation_measure() in this module's return codes: 0, 1 (the read
 * failed; listed in the errors), 2 (stopped), or -errno. */
static inline int geo_read(struct seek_ctx *s, uint64_t offset, uint64_t at_ns,
			   struct dg_completion *c)
{
	bool failed = false;
	int rc = seek_read(s, offset, at_ns, c, &failed);

	return rc == -ECANCELED ? 2 : rc ? rc : failed ? 1 : 0;
}

static inline int geo_rotation(struct seek_ctx *s, uint64_t at)
{
	int rc = seek_rotation_measure(s, at, false);

	return rc == -ECANCELED ? 2 : rc;
}

#endif
