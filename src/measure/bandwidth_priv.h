/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by bandwidth.c (parameters, the write pattern, the run), bandwidth_sample.c
 * (one timed sample), bandwidth_zones.c (zones from the curve and their refinement) and
 * bandwidth_out.c (JSON and CSV). Not a public interface.
 */
#ifndef DISKGEO_BANDWIDTH_PRIV_H
#define DISKGEO_BANDWIDTH_PRIV_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "diskgeo/bandwidth.h"
#include "diskgeo/engine.h"
#include "util.h"

#define DEFAULT_BUDGET_NS   (60ull * DG_NS_PER_S)
#define DEFAULT_QD	    4u
#define DEFAULT_BLOCK_BYTES (1u << 20)
#define MAX_BLOCK_BYTES	    (64u << 20)
#define MAX_PASSES	    1000u
#define PILOT_SAMPLES	    3u
#define STALL_FACTOR	    2.5	  /* a read slower than this x the stream's median stalled */
#define STALL_MIN_READS	    4u	  /* stall detection needs this many timed reads */
#define MIN_TIMED_READS	    16u	  /* reads are made smaller until a sample has this many */
#define JUMP_FRACTION	    0.015 /* a one-off wait this part of a stream's time is left out */
#define JUMP_UNIQUE	    2.0	  /* a wait stands out: this x any other unit's excess */
#define MIN_FIT_POINTS	    4u	  /* the fit leaves out the clock's start from this many */
#define CATCH_UP_FRACTION   0.5	  /* a wait the next units make up this much of: the host's */
#define CATCH_UP_UNITS	    8u	  /* ... looked for in this many units after it */
#define TRUST_FACTOR	    1.15  /* a rate above this x what the reads' times allow: dropped */
#define E2E_MARGIN	    1.01  /* a rate above end to end by more than this: the host's */
#define TRUST_SPREAD	    0.3	  /* ... and one whose halves differ by this part of it */
#define NOISE_FLOOR	    0.001 /* sigma of ln MB/s never assumed below 0.1% */
#define MIN_STEP	    0.005 /* zones differ by at least 0.5% (and 3 sigma) */
#define REFINE_TARGET	    0.01  /* bisect until the bracket is this part of the zone */
#define REFINE_MAX_STEPS    DG_BANDWIDTH_REFINE_MAX_STEPS
#define REFINE_MAX_SPAN	    4u	 /* refining samples are at most this x the curve's size */
#define REFINE_MIN_STEPS    3u	 /* ... and measure their own reference rates only for this many */
#define REFINE_STEPS_GUESS  5u	 /* for the progress estimate only */
#define REFINE_TOTAL	    1.5	 /* the run's device time with its refinement, x the budget */
#define REFINE_MIN	    0.25 /* ... but refinement may take this x the budget in any case */

#define MAX_STALL_NOTES 6u /* slow spots named in the warning; the rest are counted */
/* A stall named in the warning as a slow spot waited longer than this: more than a revolution
 * of any drive of 4200 rpm or more, so not a zone change inside the sample nor a revolution
 * lost while the host was late (those still count in the sample's stalls and stall_ms). */
#define SLOW_SPOT_MS	  15.0
#define READ_AHEAD_MARGIN (4u << 20) /* how far past a read the drive may have read ahead */
#define FLUSH_BYTES	  4096u	     /* the read that moves the drive's stream elsewhere */
/* The streams a drive's cache may keep (the most diskgeo's drive model allows; Schindler & Ganger
 * 2000 count a real drive's segments by re-reading what it read lately): bytes read fewer
 * streams ago than this may come back from the cache (bandwidth_cache.c). */
#define CACHE_SEGMENTS_MAX 64u
#define RECENT_EXTENTS	   72u		/* ranges remembered: at least CACHE_SEGMENTS_MAX */
#define RECENT_NEAR	   16u		/* ... of which the last this many are "read lately" */
#define EVICT_STEP	   (8ull << 20) /* reads that evict a segment: apart beyond read-ahead */
#define HIT_FAST	   1.3 /* this x the media pace (or the bytes' first rate): the cache's */
#define FAST_RUN	   3u  /* ... for this many reads in a row */

/* A slow spot: the bytes of reads that stalled, and how long they waited beyond the pace. */
struct stall_note {
	uint64_t lo, hi;
	double ms;
};

struct ctx {
	struct dg_engine *e;
	const struct dg_device_info *info;
	struct dg_bandwidth_params p; /* resolved */
	uint32_t align;
	uint32_t rb; /* bytes per timed read: block_bytes, or less for MIN_TIMED_READS */
	unsigned qd;
	struct dg_errors *errors;
	volatile sig_atomic_t *stop;
	unsigned failed_in_a_row; /* samples whose reads failed, back to back */
	bool failing;		  /* MAX_FAILED_SAMPLES_IN_A_ROW of them: the run ends */
	dg_progress_fn progress;
	void *progress_arg;
	struct dg_io *ios;
	struct dg_completion *comps;
	uint64_t *done_ns; /* per read of a stream */
	uint32_t *len;	   /* per read of a stream */
	size_t *order;	   /* timed reads by completion */
	double *tpb;	   /* scratch: ns per byte of each timed read */
	double *cum_b;	   /* cumulative MiB of the timed reads that did not stall */
	double *cum_t;	   /* their cumulative ms */
	double *kb, *kt;   /* MiB and ms of each timed read that did not stall */
	size_t maxreads;
	/* write mode: the pattern buffer (NULL on a virtual drive, which stores nothing) and every
	 * range written so far */
	unsigned char *wbuf;
	struct dg_bandwidth_extent *written;
	size_t nwritten, capwritten;
	bool nomem;
	/* progress */
	uint64_t t0_ns;
	uint64_t dev0_ns; /* the engine's device time at the start */
	double units_done, units_total;
	const char *phase;
	/* notes */
	unsigned failed_samples, untimed_samples, untrusted_samples, hiccups;
	unsigned passing_stalls; /* named stalls that did not come back when re-measured */
	unsigned uneven_samples; /* samples re-measured for halves far apart */
	struct stall_note stall_notes[MAX_STALL_NOTES];
	unsigned nstall_notes, stall_notes_more;
	/* the last RECENT_EXTENTS ranges read (a ring), each reaching READ_AHEAD_MARGIN past its
	 * end: what the drive may still cache; and the rate each read at (NAN: unknown) */
	struct dg_bandwidth_extent recent[RECENT_EXTENTS];
	double recent_mbps[RECENT_EXTENTS];
	unsigned nrecent, recent_next;
	unsigned flushes;
	unsigned cache_served; /* samples the drive's cache served, measured again */
	/* composite refining samples (bandwidth_composite.c) that read many surface runs, and
	 * those that read one: the drive's runs are longer than their window */
	unsigned comp_valid, comp_invalid;
};

struct meas {
	uint64_t off, len; /* the timed part */
	double mb_per_s;
	double half_spread;
	unsigned stalls;
	double stall_ms;
	double waited_mb_per_s; /* the rate with the line's one-off wait in it; 0: none */
	/* the fitted bytes over their time, the drive's waits taken out (0: none): a sample of
	 * whole cylinders from its first fitted read reads each surface once (bandwidth_cylinder.c)
	 */
	double e2e_mb_per_s;
	bool ok;
};

/* Samples whose reads failed, back to back, that end a run (a truncated file, a dead device):
 * the rest would fail too, each adding errors and costing timeouts. */
#define MAX_FAILED_SAMPLES_IN_A_ROW 8u

/* Whether the run must end now: asked to stop, or too many samples failed in a row. */
bool bw_stopped(const struct ctx *c);
/* The positioning read's length for a sample of `len` bytes. */
uint64_t bw_positioning_bytes(const struct ctx *c, uint64_t len);
/* bandwidth_cache.c: what the drive's cache may hold. Remembers [off, off + len) as read at
 * mb_per_s (NAN: unknown). */
void bw_remember(struct ctx *c, uint64_t off, uint64_t len, double mb_per_s);
/* Whether [lo, hi) overlaps one of the last RECENT_NEAR ranges read. */
bool bw_recently_read(const struct ctx *c, uint64_t lo, uint64_t hi);
/* Ranges read since the last one overlapping [lo, hi), if fewer than CACHE_SEGMENTS_MAX (else
 * UINT_MAX); *was the fastest rate those overlapping ranges read at (0: unknown). */
unsigned bw_cached_age(const struct ctx *c, uint64_t lo, uint64_t hi, double *was);
/* One small read far from [lo, hi) and from what was read lately: the stream moves away. */
int bw_flush_stream(struct ctx *c, uint64_t lo, uint64_t hi);
/* Whether the units in c->kb, c->kt, c->cum_b (nu, from group_units) show reads served from the
 * cache. */
bool bw_fast_units(struct ctx *c, size_t nu);
/* After a sample over [lo, hi) read lately was measured (m, `fast`; its bytes read at `was`
 * before): *served when the cache served it, and then they are pushed out of every segment.
 * 0 or -errno. */
int bw_cache_check(struct ctx *c, uint64_t lo, uint64_t hi, bool fast, double was,
		   const struct meas *m, bool *served);
/* Reads of a sample of `len` bytes, and bytes per timed read. */
size_t bw_reads_for(const struct ctx *c, uint64_t len);
uint32_t bw_timed_read_bytes(const struct ctx *c, uint64_t len);
/* Measures one sample at [off, off + len) into *m (m->ok false when it could not be timed);
 * 0, or the engine's -errno when submitting fails. */
int bw_measure(struct ctx *c, uint64_t off, uint64_t len, struct meas *m);
/* Progress: `units` more done in the current phase. */
void bw_report(struct ctx *c, double units);
/* Write mode: notes [off, off + len) as written; merges the notes into r at the end. */
void bw_note_written(struct ctx *c, uint64_t off, uint64_t len);
void bw_finish_written(struct ctx *c, struct dg_bandwidth_result *r);
/* Write mode: writes the 16 hex digits of the offset of each pattern unit of buf[0..len) (bytes
 * at offset_bytes on the device): all that differs between units of the pattern. */
void bw_pattern_stamp(unsigned char *buf, size_t len, uint64_t offset_bytes);
/* The device's alignment: its physical sector (at least its logical one). */
uint32_t bw_align_of(const struct dg_device_info *info);
/* Appends a sample to r (capacity *cap); -ENOMEM. */
int bw_add_sample(struct dg_bandwidth_result *r, size_t *cap, const struct dg_bandwidth_sample *s);
/* Zones from the (offset-ordered) curve samples r->samples[0..n), boundaries refined when asked;
 * sorts r->samples by offset. 0 or -ENOMEM (or the engine's -errno while refining). */
int bw_find_zones(struct ctx *c, struct dg_bandwidth_result *r, size_t *cap, size_t n);

/* Per curve sample: the rate of each pass (NAN when unmeasured), and summed over the passes
 * its stalls and their wait; its spread (one pass) from the halves. */
struct passes {
	double *rates, *spreads, *stall_ms, *waited; /* waited: as rates, 0 for none */
	unsigned *stalls;
	size_t *perm;
};

/* Offset of curve sample i of n (spread evenly, jittered within its share by the seed). */
uint64_t bw_sample_offset(const struct ctx *c, size_t i, size_t n);
/* Re-measures each named stall's sample; drops the spot when the re-measure runs at the
 * stream's pace (and replaces the sample). 0 or -errno. */
int bw_confirm_slow_spots(struct ctx *c, size_t n, struct passes *ps);
/* Re-measures each refining sample that named a slow spot (stall notes from `first` on); drops
 * the spot when the re-measure runs at the sample's pace (and replaces the sample). 0 or -errno. */
int bw_confirm_refine_spots(struct ctx *c, struct dg_bandwidth_result *r, unsigned first);
#define UNEVEN 0.15 /* halves this far apart with no stall: a sample re-measured */
/* Re-measures samples whose halves disagree by UNEVEN or more with no stall. 0 or -errno. */
int bw_remeasure_uneven(struct ctx *c, size_t n, struct passes *ps);

#endif
