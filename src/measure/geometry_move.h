/* SPDX-License-Identifier: MIT */
/* The move-cost probe (src/geometry_move.c). Positions in physical sectors. Not a public
 * interface. */
#ifndef DISKGEO_GEOMETRY_MOVE_H
#define DISKGEO_GEOMETRY_MOVE_H

#include "geometry_priv.h"

/* What it costs to read a sector of the track [b, b + S) right after sector a: the command
 * overhead and the move, in turns (1/128 resolution; 1 when a turn or more). 0 with *cost, 1
 * (the probes were unusable), 2 or -errno. */
int geo_move_cost(struct geo *g, uint64_t a, uint64_t b, uint32_t S, double *cost);

/* Serpentine units (a surface's run in one band each: unit i's first track at uat[i], tracks of
 * usize[i], K tracks) whose band's start the skews do not tell: the unit i in 1..h whose last
 * track is dearest to reach from unit i - 1's first track, when it stands out from the others
 * (head switches). 0 with *b0, 1 (none stands out, or unusable probes), 3 (none stands out, yet
 * with h even a band's start, a seek of K cylinders, costs more or less: h is wrong), 2 or
 * -errno. */
int geo_band_start_by_moves(struct geo *g, const uint64_t *uat, const uint32_t *usize, unsigned nu,
			    uint64_t K, unsigned h, unsigned *b0);

#endif
