/* SPDX-License-Identifier: MIT */
/*
 * Workload sweeps: the names, the default grid and the checks of the parameters
 * (include/diskgeo/sweep.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "diskgeo/sweep.h"
#include "util.h"

static const char *const kind_names[] = {"seq", "rand"};
static const char *const where_names[] = {"outer", "inner", "full", "first10"};

const char *dg_sweep_kind_name(enum dg_sweep_kind k)
{
	return kind_names[k];
}

const char *dg_sweep_where_name(enum dg_sweep_where w)
{
	return where_names[w];
}

void dg_sweep_params_default(struct dg_sweep_params *p, const struct dg_device_info *info)
{
	static const unsigned qds[] = {1, 2, 4, 8, 16, 32};
	uint32_t lsec = info && info->logical_sector_bytes ? info->logical_sector_bytes : 512;

	memset(p, 0, sizeof(*p));
	for (uint32_t b = 4096; b <= (16u << 20); b *= 4)
		if (b % lsec == 0)
			p->seq_blocks[p->nseq_blocks++] = b;
	if (lsec < 4096)
		p->rand_blocks[p->nrand_blocks++] = lsec;
	for (uint32_t b = 4096; b <= (1u << 20); b *= 4)
		p->rand_blocks[p->nrand_blocks++] = b;
	for (size_t i = 0; i < ARRAY_SIZE(qds); i++)
		p->qds[p->nqds++] = qds[i];
	p->range_end_bytes = UINT64_MAX;
	p->time_budget_ns = DG_SWEEP_DEFAULT_BUDGET_NS;
	p->seq_bytes = DG_SWEEP_DEFAULT_SEQ_BYTES;
	p->rand_ios = DG_SWEEP_DEFAULT_RAND_IOS;
	p->rmw_ios = DG_SWEEP_DEFAULT_RMW_IOS;
	p->seed = 1;
}

static int check_blocks(const uint32_t *b, unsigned n, const char *what, uint32_t lsec, char *err,
			size_t errlen)
{
	for (unsigned i = 0; i < n; i++) {
		if (b[i] == 0 || b[i] > DG_SWEEP_MAX_BLOCK_BYTES) {
			snprintf(err, errlen, "%s block size %" PRIu32 " is out of 1..%u bytes",
				 what, b[i], DG_SWEEP_MAX_BLOCK_BYTES);
			return -EINVAL;
		}
		if (b[i] % lsec) {
			snprintf(err, errlen,
				 "%s block size %" PRIu32
				 " bytes is not a multiple of the logical sector (%" PRIu32
				 " bytes)",
				 what, b[i], lsec);
			return -EINVAL;
		}
	}
	return 0;
}

static uint32_t max_block(const uint32_t *b, unsigned n)
{
	uint32_t m = 0;

	for (unsigned i = 0; i < n; i++)
		m = b[i] > m ? b[i] : m;
	return m;
}

int dg_sweep_params_check(const struct dg_sweep_params *p, const struct dg_device_info *info,
			  struct dg_sweep_params *resolved, char *err, size_t errlen)
{
	struct dg_sweep_params r = *p;
	uint32_t lsec = info->logical_sector_bytes ? info->logical_sector_bytes : 512;
	int rc;

	if (r.nseq_blocks > DG_SWEEP_MAX_SIZES || r.nrand_blocks > DG_SWEEP_MAX_SIZES ||
	    r.nqds > DG_SWEEP_MAX_QDS) {
		snprintf(err, errlen, "at most %u block sizes and %u queue depths",
			 DG_SWEEP_MAX_SIZES, DG_SWEEP_MAX_QDS);
		return -EINVAL;
	}
	if ((rc = check_blocks(r.seq_blocks, r.nseq_blocks, "sequential", lsec, err, errlen)) ||
	    (rc = check_blocks(r.rand_blocks, r.nrand_blocks, "random", lsec, err, errlen)))
		return rc;
	if (r.nqds == 0 && (r.nseq_blocks || r.nrand_blocks)) {
		snprintf(err, errlen, "no queue depth to sweep");
		return -EINVAL;
	}
	for (unsigned i = 0; i < r.nqds; i++) {
		if (r.qds[i] == 0 || r.qds[i] > DG_SWEEP_MAX_QD) {
			snprintf(err, errlen, "queue depth %u is out of 1..%u", r.qds[i],
				 DG_SWEEP_MAX_QD);
			return -EINVAL;
		}
	}
	if (r.write && r.range_start_bytes == 0 && r.range_end_bytes == UINT64_MAX) {
		snprintf(err, errlen,
			 "a write sweep needs a scratch range named with --range START:END");
		return -EINVAL;
	}
	if (r.range_end_bytes == UINT64_MAX)
		r.range_end_bytes = info->size_bytes - info->size_bytes % lsec;
	if (r.range_start_bytes % lsec || r.range_end_bytes % lsec) {
		snprintf(err, errlen, "the range is not on logical sectors (%" PRIu32 " bytes)",
			 lsec);
		return -EINVAL;
	}
	if (r.range_end_bytes > info->size_bytes || r.range_start_bytes >= r.range_end_bytes) {
		snprintf(err, errlen,
			 "the range [%" PRIu64 ", %" PRIu64 ") is empty, reversed or outside the "
			 "device (%" PRIu64 " bytes)",
			 r.range_start_bytes, r.range_end_bytes, info->size_bytes);
		return -EINVAL;
	}
	uint64_t span = r.range_end_bytes - r.range_start_bytes;
	uint32_t big = max_block(r.seq_blocks, r.nseq_blocks);
	uint32_t rbig = max_block(r.rand_blocks, r.nrand_blocks);
	if (rbig > big)
		big = rbig;
	if (span < 2ull * big || span / 10 < rbig) {
		snprintf(err, errlen,
			 "the range (%" PRIu64 " bytes) is smaller than the largest block allows "
			 "(twice %" PRIu32 " bytes, and its first 10%% at least %" PRIu32 " bytes)",
			 span, big, rbig);
		return -EINVAL;
	}
	if (r.time_budget_ns == 0) {
		snprintf(err, errlen, "the time budget is 0");
		return -EINVAL;
	}
	if (r.seq_bytes == 0)
		r.seq_bytes = DG_SWEEP_DEFAULT_SEQ_BYTES;
	if (r.rand_ios == 0)
		r.rand_ios = DG_SWEEP_DEFAULT_RAND_IOS;
	*resolved = r;
	return 0;
}

double dg_sweep_slope(const double *t, size_t n)
{
	double st = 0, sk = 0, stt = 0, stk = 0;

	if (n < 2)
		return NAN;
	for (size_t i = 0; i < n; i++) {
		double x = t[i] - t[0];
		st += x;
		sk += (double)i;
		stt += x * x;
		stk += x * (double)i;
	}
	double var = stt - st * st / (double)n;
	return var > 0 ? (stk - st * sk / (double)n) / var : NAN;
}

/* Batch means (Law & Kelton, "Simulation Modeling and Analysis", the method of batch means):
 * DG_SWEEP_SEQ_BATCHES equal batches of the completions, each priced by its own slope; the
 * standard error of their mean over the mean. */
double dg_sweep_batch_se(const double *t, size_t n)
{
	const size_t k = DG_SWEEP_SEQ_BATCHES, m = n / k;
	double r[DG_SWEEP_SEQ_BATCHES], sum = 0, ss = 0;

	if (m < 2)
		return NAN;
	for (size_t i = 0; i < k; i++) {
		r[i] = dg_sweep_slope(t + i * m, m);
		if (!(r[i] > 0))
			return NAN;
		sum += r[i];
	}
	double mean = sum / (double)k;
	for (size_t i = 0; i < k; i++)
		ss += (r[i] - mean) * (r[i] - mean);
	return sqrt(ss / (double)(k - 1) / (double)k) / mean;
}
