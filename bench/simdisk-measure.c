/* SPDX-License-Identifier: MIT */
/*
 * simdisk-measure: the measuring half of bench/simdisk. Given a drive spec and the loop device
 * diskgeo-simdisk attached for it, prints one row per case with the spec's truth, the sim:
 * device in virtual time, and the loop device in real time (io_uring), each measured the same
 * way through diskgeo's engine:
 *   sequential 1 MiB reads, 256 MiB at the start, middle and end, at QD 1 and QD 8: MB/s as
 *     the least-squares slope of bytes against completion time from the first completion on
 *     (the first request's positioning excluded), against dg_truth_rate_mb_per_s over the same
 *     bytes;
 *   random 4 KiB QD 1 reads over the whole span: IOPS, against 1000 / dg_truth_random_ms;
 *   random 4 KiB reads at QD 4, 16 and 32 in a closed loop: IOPS, against the truth's
 *   reference simulation (dg_truth_random_iops: the drive reorders up to its ncq_depth).
 * Prints numbers only; never fails on them (exit 1 only when something cannot run).
 *
 * Usage: simdisk-measure SPEC|NAME /dev/loopN [--seq-mib N] [--random N] [--qd LIST]
 *                        [--positions start|all] [--no-random] [--header]
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "diskgeo/model.h"
#include "seqrate.h"

#define MiB (1024u * 1024u)

static int open_engine(const char *path, enum dg_engine_kind kind, unsigned qd,
		       struct dg_device **dev, struct dg_engine **e)
{
	struct dg_engine_config cfg = {.kind = kind, .qd = qd, .max_io_bytes = MiB};
	char err[DG_ERRLEN] = "";
	int rc = dg_device_open(path, 0, dev, NULL, err, sizeof(err));

	if (rc == 0) {
		rc = dg_engine_open(*dev, &cfg, e, NULL, err, sizeof(err));
		if (rc) {
			dg_device_close(*dev);
			*dev = NULL;
		}
	}
	if (rc)
		fprintf(stderr, "simdisk-measure: %s: %s\n", path, err);
	return rc;
}

static int reap(struct dg_engine *e, struct dg_completion *c, unsigned min, unsigned max)
{
	int got;

	while ((got = dg_engine_reap(e, c, min, max)) == -EINTR)
		;
	return got;
}

static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* IOPS of n random 4 KiB QD1 reads over [0, cap): n / the sum of service times. */
static double random_iops(struct dg_engine *e, uint64_t cap, unsigned n)
{
	uint64_t seed = 12345, blocks = cap / 4096, total_ns = 0;
	struct dg_completion c;

	for (unsigned i = 0; i < n; i++) {
		struct dg_io io = {.offset_bytes = (next_rand(&seed) % blocks) * 4096,
				   .length_bytes = 4096,
				   .op = DG_IO_READ};
		if (dg_engine_submit(e, &io, 1) != 1 || reap(e, &c, 1, 1) != 1 || c.result != 4096)
			return -1;
		total_ns += c.complete_ns - c.submit_ns;
	}
	return (double)n / ((double)total_ns / 1e9);
}

/* IOPS of random 4 KiB reads over [0, cap) in a closed loop at queue depth qd: n completions
 * after a warm-up of n/10, over the time they took. */
static double random_iops_qd(struct dg_engine *e, uint64_t cap, unsigned n, unsigned qd)
{
	uint64_t seed = 777 + qd, blocks = cap / 4096, t0 = 0, t1 = 0;
	unsigned got = 0, warm = n / 10 + 1;
	struct dg_completion c[64];

	while (got < warm + n) {
		while (dg_engine_free_slots(e) > 0) {
			struct dg_io io = {.offset_bytes = (next_rand(&seed) % blocks) * 4096,
					   .length_bytes = 4096,
					   .op = DG_IO_READ};
			if (dg_engine_submit(e, &io, 1) != 1)
				return -1;
		}
		int k = reap(e, c, 1, qd < 64 ? qd : 64);
		if (k < 1)
			return -1;
		for (int i = 0; i < k; i++) {
			if (c[i].result != 4096)
				return -1;
			if (++got == warm)
				t0 = c[i].complete_ns;
			t1 = c[i].complete_ns;
		}
	}
	while (dg_engine_inflight(e) > 0)
		if (reap(e, c, 1, 64) < 1)
			break;
	return (double)(got - warm) / ((double)(t1 - t0) / 1e9);
}

static void row(const char *spec, const char *what, double truth, double sim, double real,
		const char *unit)
{
	printf("%-20s %-22s %10.2f %10.2f %10.2f %8.2f%% %8.2f%%  %s\n", spec, what, truth, sim,
	       real, (sim / truth - 1) * 100, (real / truth - 1) * 100, unit);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"seq-mib", required_argument, NULL, 's'}, {"random", required_argument, NULL, 'r'},
	    {"qd", required_argument, NULL, 'q'},      {"positions", required_argument, NULL, 'p'},
	    {"no-random", no_argument, NULL, 'n'},     {"header", no_argument, NULL, 'H'},
	    {"help", no_argument, NULL, 'h'},	       {NULL, 0, NULL, 0},
	};
	unsigned seq_mib = 256, nrandom = 1000, qds[8] = {1, 8}, nqd = 2;
	bool all_positions = true, do_random = true, header = false;
	char err[DG_ERRLEN], simpath[4200];
	struct dg_spec *spec = NULL;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			seq_mib = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'r':
			nrandom = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'q':
			nqd = 0;
			for (char *t = strtok(optarg, ","); t && nqd < 8; t = strtok(NULL, ","))
				qds[nqd++] = (unsigned)strtoul(t, NULL, 10);
			break;
		case 'p':
			all_positions = strcmp(optarg, "start") != 0;
			break;
		case 'n':
			do_random = false;
			break;
		case 'H':
			header = true;
			break;
		case 'h':
			printf("Usage: simdisk-measure SPEC|NAME /dev/loopN [--seq-mib N] "
			       "[--random N] "
			       "[--qd 1,8] [--positions start|all] [--no-random] [--header]\n");
			return 0;
		default:
			return 1;
		}
	}
	if (argc - optind != 2 || seq_mib == 0 || nqd == 0) {
		fprintf(stderr, "simdisk-measure: want SPEC|NAME and /dev/loopN (--help)\n");
		return 1;
	}
	const char *what = argv[optind], *loop = argv[optind + 1];
	if (dg_spec_load(what, &spec, NULL, err, sizeof(err))) {
		fprintf(stderr, "simdisk-measure: %s\n", err);
		return 1;
	}
	snprintf(simpath, sizeof(simpath), "sim:%s", what);
	const char *name = dg_spec_name(spec);
	uint64_t cap = dg_spec_capacity_bytes(spec), len = (uint64_t)seq_mib * MiB;
	uint64_t pos[3] = {0, cap / 2 / MiB * MiB, (cap - len) / MiB * MiB};
	const char *posname[3] = {"start", "middle", "end"};

	if (header)
		printf("%-20s %-22s %10s %10s %10s %9s %9s\n", "spec", "case", "truth",
		       "sim:", "simdisk", "sim err", "disk err");
	for (unsigned q = 0; q < nqd; q++) {
		for (int p = 0; p < (all_positions ? 3 : 1); p++) {
			struct dg_device *sdev = NULL, *rdev = NULL;
			struct dg_engine *se = NULL, *re = NULL;
			uint64_t fe_sim, fe_real;
			char label[64];
			if (open_engine(simpath, DG_ENGINE_SIM, qds[q], &sdev, &se) ||
			    open_engine(loop, DG_ENGINE_IO_URING, qds[q], &rdev, &re))
				return 1;
			double sim = dg_test_seq_rate(se, pos[p], len, false, &fe_sim);
			double real = dg_test_seq_rate(re, pos[p], len, false, &fe_real);
			double truth =
			    dg_truth_rate_mb_per_s(spec, fe_real, pos[p] + len - fe_real);
			snprintf(label, sizeof(label), "seq 1M QD%u %s", qds[q], posname[p]);
			row(name, label, truth, sim, real, "MB/s");
			fflush(stdout);
			dg_engine_close(se);
			dg_engine_close(re);
			dg_device_close(sdev);
			dg_device_close(rdev);
		}
	}
	if (do_random && nrandom > 0) {
		struct dg_device *sdev = NULL, *rdev = NULL;
		struct dg_engine *se = NULL, *re = NULL;
		if (open_engine(simpath, DG_ENGINE_SIM, 1, &sdev, &se) ||
		    open_engine(loop, DG_ENGINE_IO_URING, 1, &rdev, &re))
			return 1;
		double truth = 1000.0 / dg_truth_random_ms(spec, 0, cap, 4096);
		double sim = random_iops(se, cap, nrandom), real = random_iops(re, cap, nrandom);
		char label[64];
		snprintf(label, sizeof(label), "rand 4K QD1 (n=%u)", nrandom);
		row(name, label, truth, sim, real, "IOPS");
		dg_engine_close(se);
		dg_engine_close(re);
		dg_device_close(sdev);
		dg_device_close(rdev);
		/* deeper queues: closed loops against the truth's reference simulation (the drive
		 * reorders up to its ncq_depth) */
		static const unsigned deep[3] = {4, 16, 32};
		for (int q = 0; q < 3; q++) {
			if (open_engine(simpath, DG_ENGINE_SIM, deep[q], &sdev, &se) ||
			    open_engine(loop, DG_ENGINE_IO_URING, deep[q], &rdev, &re))
				return 1;
			truth = dg_truth_random_iops(spec, 0, cap / 4096 * 4096, 4096, deep[q],
						     20000, 1);
			sim = random_iops_qd(se, cap, nrandom, deep[q]);
			real = random_iops_qd(re, cap, nrandom, deep[q]);
			snprintf(label, sizeof(label), "rand 4K QD%u (n=%u)", deep[q], nrandom);
			row(name, label, truth, sim, real, "IOPS");
			dg_engine_close(se);
			dg_engine_close(re);
			dg_device_close(sdev);
			dg_device_close(rdev);
		}
	}
	dg_spec_free(spec);
	return fflush(stdout) ? 1 : 0;
}
