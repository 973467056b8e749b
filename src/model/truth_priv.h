/* SPDX-License-Identifier: MIT */
/* Shared between truth.c (rates, mean moves, the truth document) and truth_iops.c (random reads
 * at queue depth q). */
#ifndef DISKGEO_TRUTH_PRIV_H
#define DISKGEO_TRUTH_PRIV_H

#include <stdint.h>

#include "model_priv.h"

/* Time (ms) to walk zone-relative sectors [a, b) of zone z once positioned at a: every track's
 * share of T and every transition crossed, counted per head and kind in closed form. */
double dg_truth_walk_ms(const struct dg_spec *spec, const struct dg_zone *z, uint64_t a,
			uint64_t b);

#endif
