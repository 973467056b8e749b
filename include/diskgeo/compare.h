/* SPDX-License-Identifier: MIT */
/*
 * Comparing profiles ("diskgeo.compare/1", contract.md): figure by figure and zone by zone
 * against a reference, with each difference judged against the two documents' own noise, and
 * the weak regions of each curve (below its own zone's rate, or below its siblings') with their
 * byte ranges.
 *
 * The reference of a profile is, in this order: the baseline when one is given; the first
 * profile when there are two (the second is compared with it); else the median of all the
 * profiles, figure by figure (each drive against its fleet: one that stands apart does not move
 * the median). Weak regions are judged against the baseline or the median of the other
 * profiles (its siblings), and against the curve's own zones.
 */
#ifndef DISKGEO_COMPARE_H
#define DISKGEO_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "profile_read.h"

#define DG_COMPARE_SCHEMA "diskgeo.compare/1"

struct dg_compare_params {
	double tolerance_percent; /* a significant difference larger than this "differs" */
	double sigmas;		  /* significance: |delta| > sigmas x the combined noise */
};
/* tolerance 5 %, 3 sigmas */
void dg_compare_defaults(struct dg_compare_params *p);

struct dg_compare_diff {
	size_t profile;	      /* index of the compared profile (b) */
	char figure[40];      /* "bandwidth.zones.mb_per_s", "seek.average_ms", ... */
	char detail[48];      /* what part: a cell's name; "" for whole-drive figures */
	uint64_t start_bytes; /* the range a zone or span figure covers (0, 0 otherwise) */
	uint64_t end_bytes;
	double a, b;	       /* the reference's value, the profile's */
	double delta_percent;  /* (b - a) / a x 100 */
	double noise_percent;  /* the combined noise (one sigma) the delta is judged against */
	bool significant;      /* |delta| > sigmas x noise */
	bool beyond_tolerance; /* significant and |delta| > tolerance */
};

struct dg_weak_region {
	size_t profile;
	uint64_t start_bytes, end_bytes;
	double mb_per_s, expected_mb_per_s;
	const char *against; /* "zone" (its own zone's rate), "siblings" or "baseline" */
};

struct dg_compare_result {
	size_t nprofiles;
	bool has_baseline;
	const char *reference; /* "baseline", "first" or "median" */
	struct dg_compare_diff *diffs;
	size_t ndiffs;
	struct dg_weak_region *weak;
	size_t nweak;
	bool *stands_apart; /* per profile: beyond tolerance against its reference, or weak
			       against its siblings / the baseline */
	bool differs;	    /* any difference beyond tolerance, or any weak region */
};

/*
 * Compares `n` >= 1 profiles (with a baseline, n >= 1; without, n >= 2). Returns 0 with a new
 * result in *out (dg_compare_free()), -EINVAL when there is nothing to compare (with one line
 * in err), or -ENOMEM.
 */
int dg_compare(const struct dg_profile_data *const *profiles, size_t n,
	       const struct dg_profile_data *baseline, const struct dg_compare_params *params,
	       struct dg_compare_result **out, char *err, size_t errlen);
void dg_compare_free(struct dg_compare_result *r);

/* The "diskgeo.compare/1" document (new reference; NULL on ENOMEM). */
json_t *dg_compare_json(const struct dg_compare_result *r,
			const struct dg_profile_data *const *profiles,
			const struct dg_profile_data *baseline,
			const struct dg_compare_params *params);

/* Relative noise (one sigma, in %) of a document's bandwidth figures: the robust scatter of its
 * samples about their zones' rates (1.4826 x the median absolute deviation), or its
 * noise_percent, or 0 for a model; NaN when memory ran out. */
double dg_profile_bandwidth_noise_percent(const struct dg_profile_data *p);

/* The full-surface read time in seconds: the document's size over its curve (zones, or the
 * samples between them), i.e. the integral of 1/rate over the surface; NaN when unknown. */
double dg_profile_read_time_s(const struct dg_profile_data *p);

#endif
