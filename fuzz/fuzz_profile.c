/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the profile reader (dg_profile_read_buffer, profile_read.h), which reads
 * the JSON files `diskgeo compare` and the derived answers are handed (profiles and model
 * documents from anywhere). Besides "no crash, no leak, no sanitizer report", it checks the
 * contract: a refusal is a negative errno with one non-empty line in `err`; an accepted document
 * has a size, samples sorted and inside the device at positive rates, zones in order inside the
 * device; and compared with itself (as a pair and as its own baseline) it differs nowhere.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/compare.h"
#include "diskgeo/diskgeo.h"
#include "diskgeo/profile_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_accepted(const struct dg_profile_data *p)
{
	if (!p->size_bytes || !p->path)
		abort();
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct dg_pr_sample *s = &p->samples[i];
		if (!s->length_bytes || s->offset_bytes + s->length_bytes > p->size_bytes ||
		    !(s->mb_per_s > 0) || !isfinite(s->mb_per_s))
			abort();
		if (i && s->offset_bytes < p->samples[i - 1].offset_bytes)
			abort();
	}
	for (size_t i = 0; i < p->nzones; i++) {
		const struct dg_pr_zone *z = &p->zones[i];
		if (z->end_bytes <= z->start_bytes || z->end_bytes > p->size_bytes ||
		    !(z->mb_per_s > 0) || (i && z->start_bytes < p->zones[i - 1].end_bytes))
			abort();
	}
	double t = dg_profile_read_time_s(p);
	if (p->nzones && !(t > 0))
		abort();

	const struct dg_profile_data *pair[2] = {p, p};
	struct dg_compare_params prm;
	struct dg_compare_result *r = NULL;
	char err[DG_ERRLEN];
	dg_compare_defaults(&prm);
	for (int baseline = 0; baseline < 2; baseline++) {
		if (dg_compare(pair, baseline ? 1 : 2, baseline ? p : NULL, &prm, &r, err,
			       sizeof(err)))
			abort();
		for (size_t i = 0; i < r->ndiffs; i++)
			if (r->diffs[i].significant)
				abort();
		json_t *doc = dg_compare_json(r, pair, baseline ? p : NULL, &prm);
		if (!doc)
			abort();
		char *text = json_dumps(doc, JSON_SORT_KEYS);
		if (!text)
			abort();
		free(text);
		json_decref(doc);
		dg_compare_free(r);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dg_profile_data *p = NULL;
	char err[DG_ERRLEN];
	int rc;

	err[0] = '\0';
	rc = dg_profile_read_buffer("fuzz", (const char *)data, size, &p, err, sizeof(err));
	if (rc == 0) {
		if (!p)
			abort();
		check_accepted(p);
		dg_profile_data_free(p);
	} else if (rc > 0 || p || !err[0] || strchr(err, '\n')) {
		abort();
	}
	return 0;
}
