/* SPDX-License-Identifier: MIT */
/*
 * rotation.c's sample statistics (rotation_groups.c). Not a public interface.
 */
#ifndef DISKGEO_ROTATION_PRIV_H
#define DISKGEO_ROTATION_PRIV_H

#include <stdbool.h>
#include <stddef.h>

#define STAGE_MAX   16u /* samples in a stage at most */
#define MODE_GAP_MS 0.2 /* intervals closer agree: the host's jitter */
#define MAX_CAND    3u	/* coarse groups tried as P's own track */

/* The median of the highest group of v[] (sorted in place) that holds at least a quarter of the
 * samples (two at least), groups split where neighbours are more than MODE_GAP_MS apart. Returns
 * the group's size (0: none); *lo and *hi (may be NULL) get its ends. */
unsigned rot_upper_mode(double *v, size_t n, double *med, double *lo, double *hi_v);
/* The medians of such groups, highest first, at most MAX_CAND, and their sizes; their number. */
unsigned rot_modes(double *v, size_t n, double *med, unsigned *size);
/* The slope of y over x by least squares (0 when x does not vary). */
double rot_slope(const double *x, const double *y, size_t n);
/* Whether a stage's intervals follow its submission delays (a flat device). */
bool rot_follows_delays(const double *iv, const double *dl, size_t m);

#endif
