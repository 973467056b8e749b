/* SPDX-License-Identifier: MIT */
/*
 * Internals of the cache and queueing measurement (geocache.c: the run, hits, streams, JSON;
 * geocache_probe.c: look-behind, read-ahead, segments, cache size; geocache_ncq.c: command
 * queueing). Not a public interface.
 */
#ifndef DISKGEO_GEOCACHE_PRIV_H
#define DISKGEO_GEOCACHE_PRIV_H

#include "diskgeo/geocache.h"
#include "seek_priv.h"

/* Bytes of a large probe (cache size scan): many times the small block, so that a miss costs
 * a media transfer that a hit at interface speed does not. */
#define GC_BIG_BYTES (256u << 10)

struct gc {
	struct seek_ctx s; /* the QD1 reads, errors, stop flag and randomness of seek_legs.c */
	const struct dg_geocache_opts *o;
	struct dg_geocache *out;
	uint32_t b;	    /* small probe block */
	uint32_t sector;    /* logical sector: the smallest read */
	uint32_t ra_b;	    /* the read-ahead probe: b, or one sector for a short read-ahead */
	uint32_t io;	    /* largest read */
	uint64_t lo, hi;    /* places are drawn from [lo, hi) */
	double T;	    /* rotation period, ms */
	double hit_thr;	    /* a small read under this is a hit (ms) */
	double big_hit_thr; /* the same for GC_BIG_BYTES */
	double rate_mb;	    /* media rate near the places, MB/s (bytes per us) */
};

/* Device time left in the budget, ms (0 when spent). */
double gc_left_ms(const struct gc *g);
/* One QD1 read of `len` bytes at `off`, submitted at engine time `at_ns` (0 = now); *ms gets its
 * access time. Returns 0, 1 (the read failed; listed), 2 (stopped) or -errno. */
int gc_read(struct gc *g, uint64_t off, uint32_t len, uint64_t at_ns, double *ms);
/* Reads [off, off + len) sequentially in QD1 reads of g->io bytes (each continues the drive's
 * stream). *ms (may be NULL) gets the time from the first read's completion to the last's.
 * Returns as gc_read. */
int gc_stream(struct gc *g, uint64_t off, uint64_t len, double *ms);
/* A fresh place: random, g->b aligned, in [lo, hi - room). */
uint64_t gc_place(struct gc *g, uint64_t room);
/* Engine time a random fraction of a revolution from now (uniform in [0, T)): a submission time
 * that makes a miss's rotational wait random. */
uint64_t gc_random_phase(struct gc *g);
/* Lets the drive run idle for `ms` (its read-ahead goes on). */
int gc_idle(struct gc *g, double ms);
/* Appends a note (at most DG_GEOCACHE_NOTES are kept). */
void gc_note(struct gc *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* geocache_probe.c; each returns 0 (figure or note set), 2 stopped, or -errno. */
int gc_look_behind(struct gc *g);
int gc_read_ahead(struct gc *g);
int gc_segments(struct gc *g);
int gc_cache_size(struct gc *g);
/* geocache_ncq.c */
int gc_ncq(struct gc *g);

#endif
