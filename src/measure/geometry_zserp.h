/* SPDX-License-Identifier: MIT */
/* The serpentine zone search's probes on the band grid (src/geometry_zgrid.c), for
 * src/geometry_zserp.c. Positions in physical sectors. Not a public interface. */
#ifndef DISKGEO_GEOMETRY_ZSERP_H
#define DISKGEO_GEOMETRY_ZSERP_H

#include "geometry_place.h"
#include "geometry_zones.h"

/* A zone known on its band grid (physical sectors). */
struct geo_sz {
	uint64_t base; /* a band's start in the zone (its first sector when `first`) */
	bool first;
	unsigned H;
	uint32_t spt[DG_GEOMETRY_MAX_HEADS];
	uint64_t C, K; /* a cylinder's sectors over all surfaces; cylinders per band */
	double k, ks;  /* cylinder step's and head switch's skews (physical), NAN unknown */
	int kx;	       /* the cylinder step's skew its run's phases agree on (-1: none) */
	double r0;     /* its first surface's size over the zone before's (0: not known) */
	double kf;     /* kx unrounded where scaled from a zone before (NAN: kx as measured);
			  zone to zone rounding would add up (a sector in 5 zones) */
	bool hs_like;  /* the head switch's skew within 2 sectors of the cylinder step's (or not
			  known): surfaces of one size look like one run */
	uint64_t bands, kb;   /* full bands from base and its last band's cylinders (0: unknown) */
	uint64_t pbands, pkb; /* the same of the zone before it: this one's guess */
	bool plen; /* the zone before was read from its first sector: its length is known */
	/* each surface's size over the first's, (S_h + 1/2) / (S_0 + 1/2), averaged over the zones
	 * read so far (the last 8 weigh most), and their count (0: this zone's own sizes) */
	double q[DG_GEOMETRY_MAX_HEADS];
	unsigned qn;
	size_t place; /* its place in r->places */
	uint64_t p1;  /* its second surface's first track (B read from its first band) */
};

/* A track of S sectors at p: p and p + S - 1 on one track of slope 1/S, a track boundary at
 * p + S (a cylinder step: its skew shows). 0 yes, 3 no, else as geo_phase. */
int geo_grid_ok(struct geo *g, uint64_t p, uint32_t S);

/* Band m of zone A exists: its first surface's first track (else, where the probes there are
 * unusable, its second). 0 yes, 3 no, 2 or -errno. */
int geo_band_test(struct geo *g, const struct geo_sz *A, int64_t m);

/* The largest m in [0, max] whose band exists (band 0 does), `dir` +1 (on) or -1 (back); `pred`
 * (0 = none) tried first. 0, 2 or -errno. */
int geo_last_band(struct geo *g, const struct geo_sz *A, int dir, uint64_t max, uint64_t pred,
		  uint64_t *m);

/* The tracks of the run of S from t0 (its cylinder step's skew k measured, `prior` the one the
 * zone before implies, -1 = none), at most `max`; `pred` (0 = none) tried first. 0 with *len
 * and *kx (the skew the run's phases agreed on, -1 = not one), 1 (probes unusable), 2 or
 * -errno. */
int geo_run_len(struct geo *g, uint64_t t0, uint32_t S, double k, int prior, uint64_t pred,
		uint64_t max, uint64_t *len, int *kx);

/* Whether the first track after y - 1 is one of zone A's sizes: 0 yes, 3 no (another zone's),
 * else as geo_walk. */
int geo_in_zone(struct geo *g, const struct geo_sz *A, uint64_t y);

/* The cylinders of zone A's last band from L, where its run's phase does not tell them (a
 * run of surfaces that look alike ended in no whole number of them): the smallest x
 * in [1, K] whose L + x C is no longer A's by the track size found there (bisection; `pred`
 * first). 0 with *kb, 1, 2 or -errno. */
int geo_band_len(struct geo *g, const struct geo_sz *A, uint64_t L, uint64_t pred, uint64_t *kb);

/* The size of the track that starts at p, `pred` tried first. 0, 1, 2 or -errno. */
int geo_read_track(struct geo *g, uint64_t p, uint32_t pred, uint32_t *S);

/* The skew into the track of `size` at `start` (`mult` times a phase's probes), NAN when
 * unusable. */
int geo_skew_at(struct geo *g, uint64_t start, uint32_t size, unsigned mult, double *k);

/* The track at p (the start of a surface's run) measured against `pred`: 0 with *S when its size
 * is within 2% (and a sector) of pred and, unless it is pred or `check` is false, a second
 * track of that size follows (one noisy phase must not make a size); 3 when not, else as
 * geo_phase. */
int geo_run_track(struct geo *g, uint64_t p, uint32_t pred, bool check, uint32_t *S);

/* Whether a track begins at p (the track before it of size S): the phase jumps there by more
 * than a sector (the skew of the move into it). 0 yes, 3 no, else as geo_phase. */
int geo_starts_at(struct geo *g, uint64_t p, uint32_t S);

/* Whether a run start put K e sectors off (a size off by e, |e| <= 3) would still fall on a
 * track boundary: of the next surface's run (tracks of about `next`) or of this one's (`size`).
 * Then a phase jump there does not confirm the size. */
bool geo_boundary_alias(uint64_t K, uint32_t size, uint32_t next);

/* A skew reported: the one that two of up to three measurements (GEO_SKEW_FINE) round to, none
 * of them a sector or more from it, else NAN (the probes do not resolve a sector there: absent
 * rather than guessed). 0, 2 or -errno. */
int geo_skew_firm(struct geo *g, uint64_t start, uint32_t size, double *k);

/* A new reference near x (the zone stepped from: its tests seek no further than its length),
 * its fit settled and the noise measured there (geo_calibrate); where the probes there are
 * unusable, a band's length on. 0, 1, 2 or -errno. */
int geo_settle(struct geo *g, uint64_t x);

/* Zone B from its first sector E after zone A (src/geometry_zread.c): its first track, its
 * cylinder step, then its surfaces where its first band puts them (a band of A's K cylinders,
 * else, a zone shorter than a band, as long as its first surface's run). 0, 3 (the step was
 * wrong: B is A, or its surfaces are not where its band puts them), 1, 2 or -errno. */
int geo_read_zone(struct geo *g, uint64_t E, const struct geo_sz *A, struct geo_sz *B);

#endif
