/* SPDX-License-Identifier: MIT */
/*
 * End to end on diskgeo-simdisk (root, /dev/fuse and loop devices; exits 77 without them): two
 * presets attached as loop devices, measured through diskgeo's own engine (io_uring, 1 MiB at
 * QD 4) at the start, middle and end against dg_truth_rate_mb_per_s; the data pattern; the
 * error defect of cheetah-15k gives EIO and its slow defect costs the extra revolutions; attach
 * and detach leave nothing behind and detach refuses a loop device it did not create. The two
 * drive model v2 presets (NCQ, per-surface, 512e): sequential rates at three places, random
 * 4 KiB IOPS at QD 1 and 16 against the reference simulation of the truth; a misaligned write on
 * 512e wd-red-4tb slower by T (read-modify-write); attach --rotational 0 and its physical-sector
 * note.
 *
 * These are real-time measurements through FUSE on a shared machine: a stray scheduling delay
 * can spoil one run (rates are least-squares slopes, which blunts it). Each timed measurement is
 * therefore retried once before it fails; the tolerance itself (2% for rates) is what the issue
 * asks for and is not widened.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "enginetest.h"
#include "diskgeo/model.h"
#include "seqrate.h"
#include "simpattern.h"
#include "t_helpers.h"
#include "util.h"

#define MiB	(1024u * 1024u)
#define SIMDISK DG_BINARY_DIR "/simdisk/diskgeo-simdisk"

static char rundir[64];

/* Runs argv with stdout captured (its first line). Returns the exit status, -1 on failure. */
static int run(char *const argv[], char *out, size_t len)
{
	struct t_io io = {.out = out, .out_len = len};
	int rc = t_exec(argv[0], (const char *const *)argv, &io);

	out[strcspn(out, "\n")] = '\0';
	return rc;
}

static int simdisk(const char *cmd, const char *arg, char *out, size_t len)
{
	char *argv[] = {SIMDISK, (char *)cmd, (char *)arg, NULL};

	return run(argv, out, len);
}

static void attach(const char *name, char *loop, size_t len)
{
	int rc = simdisk("attach", name, loop, len);
	if (rc != 0)
		print_message("attach %s: exit %d\n", name, rc);
	assert_int_equal(rc, 0);
	assert_memory_equal(loop, "/dev/loop", 9);
}

/* A line of `path` containing `needle`? */
static bool file_mentions(const char *path, const char *needle)
{
	char line[8192];
	bool found = false;
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/* A line of `losetup -a` containing `needle`? */
static bool losetup_mentions(const char *needle)
{
	char line[8192];
	bool found = false;
	FILE *f = popen("PATH=$PATH:/usr/sbin:/sbin losetup -a", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		found = found || strstr(line, needle) != NULL;
	assert_int_equal(pclose(f), 0);
	return found;
}

static void detach_and_check(const char *loop)
{
	char out[256], backing[512];

	assert_int_equal(simdisk("detach", loop, out, sizeof(out)), 0);
	snprintf(backing, sizeof(backing), "/sys/block/%s/loop/backing_file", loop + 5);
	assert_int_equal(access(backing, F_OK), -1);
	assert_false(losetup_mentions(rundir));
	assert_false(file_mentions("/proc/mounts", rundir));
}

static struct dg_engine *open_uring(const char *loop, struct dg_device **dev, unsigned qd)
{
	struct dg_engine_config cfg = {.kind = DG_ENGINE_IO_URING, .qd = qd, .max_io_bytes = MiB};
	struct dg_engine *e = NULL;
	char err[DG_ERRLEN] = "";
	int rc;

	rc = dg_device_open(loop, 0, dev, NULL, err, sizeof(err));
	if (rc)
		print_message("open %s: %s\n", loop, err);
	assert_int_equal(rc, 0);
	rc = dg_engine_open(*dev, &cfg, &e, NULL, err, sizeof(err));
	if (rc)
		print_message("engine on %s: %s\n", loop, err);
	assert_int_equal(rc, 0);
	return e;
}

static void check_preset_rates(const char *name)
{
	struct dg_spec *spec = NULL;
	struct dg_device *dev = NULL;
	char loop[256], err[DG_ERRLEN];
	uint64_t len = 256ull * MiB;

	assert_int_equal(dg_spec_load(name, &spec, NULL, err, sizeof(err)), 0);
	attach(name, loop, sizeof(loop));
	struct dg_engine *e = open_uring(loop, &dev, 4);
	uint64_t cap = dg_spec_capacity_bytes(spec);
	assert_int_equal(dg_device_info(dev)->size_bytes, cap);
	assert_int_equal(dg_device_info(dev)->logical_sector_bytes, dg_spec_sector_bytes(spec));
	uint64_t pos[3] = {0, cap / 2 / MiB * MiB, (cap - len) / MiB * MiB};

	for (int p = 0; p < 3; p++) {
		double got = 0, truth = 0, rel = 1;
		for (int attempt = 0; attempt < 2 && rel >= 0.02; attempt++) {
			uint64_t first_end = pos[p];
			got = dg_test_seq_rate(e, pos[p], len, true, &first_end);
			assert_true(got > 0); /* every piece read whole, the pattern checked */
			truth = dg_truth_rate_mb_per_s(spec, first_end, pos[p] + len - first_end);
			rel = fabs(got / truth - 1);
			print_message(
			    "%s @%llu MiB (attempt %d): %.2f MB/s, truth %.2f (%+.2f%%)\n", name,
			    (unsigned long long)(pos[p] / MiB), attempt + 1, got, truth,
			    (got / truth - 1) * 100);
		}
		assert_true(rel < 0.02);
	}
	dg_engine_close(e);
	dg_device_close(dev);
	detach_and_check(loop);
	dg_spec_free(spec);
}

static void rates_wd_red(void **state)
{
	check_preset_rates("wd-red-4tb");
}

static void rates_hgst(void **state)
{
	check_preset_rates("hgst-7k1000");
}

/* ---- drive model v2 end to end: the two modern presets ---- */

static uint64_t rnd_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Random 4 KiB reads over the whole device in a closed loop at queue depth `qd`: IOPS over
 * `n` completions after a warm-up. */
static double random_iops(struct dg_engine *e, uint64_t cap, unsigned qd, unsigned n)
{
	struct dg_completion c[32];
	uint64_t seed = 17 + qd, t0 = 0, t1 = 0;
	unsigned got = 0, warm = 50;

	while (got < warm + n) {
		while (dg_engine_free_slots(e) > 0) {
			struct dg_io io = {.op = DG_IO_READ,
					   .length_bytes = 4096,
					   .offset_bytes = rnd_next(&seed) % (cap / 4096) * 4096};
			assert_int_equal(dg_engine_submit(e, &io, 1), 1);
		}
		int k = dg_engine_reap(e, c, 1, 32);
		if (k == -EINTR)
			continue;
		assert_true(k > 0);
		for (int i = 0; i < k; i++) {
			assert_int_equal(c[i].result, 4096);
			if (++got == warm)
				t0 = c[i].complete_ns;
			t1 = c[i].complete_ns;
		}
	}
	while (dg_engine_inflight(e) > 0)
		if (dg_engine_reap(e, c, 1, 32) < 0)
			break;
	return (double)(got - warm) / ((double)(t1 - t0) / 1e9);
}

/* The host's own latency per request (ms): a re-read of the sector just read is a cache hit,
 * which the drive serves at the link's rate; the rest of its service time is the host's. */
static double host_latency_ms(struct dg_engine *e)
{
	double best = 1e9;

	for (int i = 0; i < 20; i++) {
		uint64_t off = (uint64_t)(i + 1) * 977 * MiB;
		test_read_one(e, off, 4096);
		struct dg_completion c = test_read_one(e, off, 4096);
		double ms = (double)(c.complete_ns - c.submit_ns) / 1e6;
		if (ms < best)
			best = ms;
	}
	return best - 4096 / 550e3; /* less the link's own time */
}

/* Sequential rates at three places (2%), random 4 KiB IOPS at QD 1 and 16 within 5% of the
 * reference simulation (QD 1 allowing the host latency measured; at QD 16 the drive holds
 * other commands while the host turns one round), through io_uring in real time. */
static void check_v2_preset(const char *name)
{
	struct dg_spec *spec = NULL;
	struct dg_device *dev = NULL;
	char loop[256], err[DG_ERRLEN];

	check_preset_rates(name);
	assert_int_equal(dg_spec_load(name, &spec, NULL, err, sizeof(err)), 0);
	attach(name, loop, sizeof(loop));
	uint64_t cap = dg_spec_capacity_bytes(spec);
	static const unsigned qds[2] = {1, 16};
	for (int k = 0; k < 2; k++) {
		struct dg_engine *e = open_uring(loop, &dev, qds[k]);
		double host = k == 0 ? host_latency_ms(e) : 0.0;
		double truth =
		    dg_truth_random_iops(spec, 0, cap / 4096 * 4096, 4096, qds[k], 20000, 1);
		double want = 1e3 / (1e3 / truth + host), got = 0, rel = 1;
		for (int attempt = 0; attempt < 2 && rel >= 0.05; attempt++) {
			got = random_iops(e, cap, qds[k], k == 0 ? 400 : 1500);
			rel = fabs(got / want - 1);
			print_message("%s random 4k QD%u (attempt %d): %.1f IOPS, truth %.1f, with "
				      "host %.3f ms: %.1f (%+.2f%%)\n",
				      name, qds[k], attempt + 1, got, truth, host, want,
				      (got / want - 1) * 100);
		}
		dg_engine_close(e);
		dg_device_close(dev);
		dev = NULL;
		assert_true(rel < 0.05);
	}
	detach_and_check(loop);
	dg_spec_free(spec);
}

static void v2_exos(void **state)
{
	check_v2_preset("exos-x16-16tb");
}

static void v2_ironwolf(void **state)
{
	check_v2_preset("ironwolf-8tb-weak-head");
}

static double now_ms(void)
{
	return (double)dg_monotonic_ns() / 1e6;
}

/* attach --rotational 0 clears the loop device's flag; attach names the physical sector a 512e
 * drive emulates (on stderr; stdout stays the device alone); on the loop device (which shows
 * 512-byte sectors) a 512-byte write inside a 4 KiB physical sector costs one revolution more
 * than the aligned 4 KiB write of that sector (read-modify-write). */
static void rmw_and_attach_options(void **state)
{
	char cmd[512], loop[256] = "", errtxt[1024] = "", path[300], flag[8] = "";
	char errf[] = "/tmp/dg-simdisk-attach-XXXXXX";
	int fd = mkstemp(errf);
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "'%s' attach wd-red-4tb --rotational 0 2>'%s'", SIMDISK, errf);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(loop, sizeof(loop), p));
	assert_int_equal(pclose(p), 0);
	loop[strcspn(loop, "\n")] = '\0';
	assert_memory_equal(loop, "/dev/loop", 9);
	FILE *f = fopen(errf, "r");
	assert_non_null(f);
	size_t n = fread(errtxt, 1, sizeof(errtxt) - 1, f);
	errtxt[n] = '\0';
	fclose(f);
	unlink(errf);
	assert_non_null(strstr(errtxt, "4096-byte physical sectors"));
	snprintf(path, sizeof(path), "/sys/block/%s/queue/rotational", loop + 5);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(flag, sizeof(flag), f));
	fclose(f);
	assert_int_equal(flag[0], '0');

	/* RMW: pairs of (far anchor read, write near the same place), aligned and not */
	struct dg_spec *spec = NULL;
	char err[DG_ERRLEN];
	assert_int_equal(dg_spec_load("wd-red-4tb", &spec, NULL, err, sizeof(err)), 0);
	double T = 60000.0 / dg_spec_rpm(spec), diff = 0;
	void *buf = NULL;
	assert_int_equal(posix_memalign(&buf, 4096, 8192), 0);
	memset(buf, 0, 8192);
	int dfd = open(loop, O_RDWR | O_DIRECT);
	assert_true(dfd >= 0);
	for (int attempt = 0; attempt < 2; attempt++) {
		double sum[2] = {0, 0};
		const int pairs = 24;
		for (int i = 0; i < pairs; i++) {
			uint64_t target = (uint64_t)(i + 1 + attempt * pairs) * 50 * MiB;
			for (int k = 0; k < 2; k++) {
				uint64_t anchor = target + 1500ull * 1024 * MiB;
				assert_int_equal(pread(dfd, buf, 4096, (off_t)anchor), 4096);
				double t0 = now_ms();
				if (k == 0)
					assert_int_equal(pwrite(dfd, buf, 4096, (off_t)target),
							 4096);
				else
					assert_int_equal(pwrite(dfd, buf, 512, (off_t)target + 512),
							 512);
				sum[k] += now_ms() - t0;
			}
		}
		diff = (sum[1] - sum[0]) / pairs;
		print_message("512e RMW (attempt %d): +%.3f ms per misaligned write, T %.3f ms\n",
			      attempt + 1, diff, T);
		if (fabs(diff - T) < T / 3)
			break;
	}
	close(dfd);
	free(buf);
	dg_spec_free(spec);
	detach_and_check(loop);
	assert_true(fabs(diff - T) < T / 3);
}

/* cheetah-15k: the error defect fails with EIO, the slow defect costs ceil(extra/T)
 * revolutions, the data outside them is the pattern. */
static void defects_cheetah(void **state)
{
	struct dg_spec *spec = NULL;
	struct dg_device *dev = NULL;
	char loop[256], err[DG_ERRLEN];
	uint64_t lba, count;
	double extra_ms;
	struct dg_completion c;
	const int n = 16;

	assert_int_equal(dg_spec_load("cheetah-15k", &spec, NULL, err, sizeof(err)), 0);
	attach("cheetah-15k", loop, sizeof(loop));
	struct dg_engine *e = open_uring(loop, &dev, 1);

	test_preset_defect("cheetah-15k", "error", &lba, &count, &extra_ms);
	c = test_read_one(e, lba * 512, 4096);
	assert_int_equal(c.result, -EIO);
	c = test_read_one(e, (lba + count) * 512, 4096);
	assert_int_equal(c.result, 4096);
	assert_int_equal(dg_simpattern_check(c.data, (lba + count) * 512, 4096), 4096);

	/* Alternate a far anchor read with a 4 KiB read inside the slow defect (descending, so
	 * no read-ahead covers it), then the same 16 MiB further on: the difference of the mean
	 * service times is the extra revolutions; the rotational wait averages out. */
	test_preset_defect("cheetah-15k", "slow", &lba, &count, &extra_ms);
	double period_ms = 60000.0 / dg_spec_rpm(spec);
	double want = ceil(extra_ms / period_ms) * period_ms, diff = 0;
	for (int attempt = 0; attempt < 2; attempt++) {
		double sum[2] = {0, 0};
		for (int k = 0; k < 2; k++) {
			uint64_t base = k == 0 ? lba : lba + 32768;
			for (int i = 0; i < n; i++) {
				test_read_one(e, (uint64_t)(i + attempt * n) * 64 * MiB, 4096);
				uint64_t t = base + count - 8 - (uint64_t)i * ((count - 8) / n);
				c = test_read_one(e, t * 512, 4096);
				assert_int_equal(c.result, 4096);
				sum[k] += (double)(c.complete_ns - c.submit_ns) / 1e6;
			}
		}
		diff = (sum[0] - sum[1]) / n;
		print_message("slow defect (attempt %d): +%.3f ms per read, spec +%.3f ms\n",
			      attempt + 1, diff, want);
		if (fabs(diff - want) < period_ms / 2)
			break;
	}
	assert_true(fabs(diff - want) < period_ms / 2);

	dg_engine_close(e);
	dg_device_close(dev);
	detach_and_check(loop);
	dg_spec_free(spec);
}

/* detach refuses a loop device it did not create, and leaves it attached; attach refuses a bad
 * spec and leaves nothing behind. */
static void refusals(void **state)
{
	char file[] = "/tmp/dg-simdisk-other-XXXXXX", out[256], cmd[512];
	int fd = mkstemp(file);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4 * MiB), 0);
	close(fd);
	char *argv[] = {"sh", "-c", "PATH=$PATH:/usr/sbin:/sbin exec losetup --find --show \"$0\"",
			file, NULL};
	assert_int_equal(run(argv, out, sizeof(out)), 0);
	char loop[256];
	snprintf(loop, sizeof(loop), "%s", out);
	assert_int_equal(simdisk("detach", loop, out, sizeof(out)), 1);
	assert_true(losetup_mentions(file)); /* untouched */
	snprintf(cmd, sizeof(cmd), "PATH=$PATH:/usr/sbin:/sbin losetup -d %s", loop);
	assert_int_equal(system(cmd), 0);
	unlink(file);

	assert_int_equal(simdisk("detach", "/dev/null", out, sizeof(out)), 1);
	assert_int_equal(simdisk("attach", "no-such-drive", out, sizeof(out)), 1);
	assert_int_equal(simdisk("attach", "/nonexistent/spec.json", out, sizeof(out)), 1);
	assert_int_equal(simdisk("frobnicate", "x", out, sizeof(out)), 1);
	assert_int_equal(simdisk("--help", NULL, out, sizeof(out)), 0);
	assert_false(losetup_mentions(rundir));
	assert_false(file_mentions("/proc/mounts", rundir));

	/* A failing losetup (a stand-in first on PATH): attach stops the daemon it started,
	 * unmounts and removes its state directory (the group teardown checks the run directory
	 * is empty). */
	char bin[] = "/tmp/dg-simdisk-bin-XXXXXX", fake[64], path[8192];
	assert_non_null(mkdtemp(bin));
	snprintf(fake, sizeof(fake), "%s/losetup", bin);
	FILE *f = fopen(fake, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\necho 'losetup: simulated failure' >&2\nexit 1\n");
	fclose(f);
	assert_int_equal(chmod(fake, 0755), 0);
	const char *old_path = getenv("PATH");
	char *saved = strdup(old_path ? old_path : "/usr/bin:/bin");
	assert_non_null(saved);
	snprintf(path, sizeof(path), "%s:%s", bin, saved);
	setenv("PATH", path, 1);
	assert_int_equal(simdisk("attach", "wd-red-4tb", out, sizeof(out)), 2);
	setenv("PATH", saved, 1);
	free(saved);
	unlink(fake);
	rmdir(bin);
	assert_string_equal(out, "");
	assert_false(file_mentions("/proc/mounts", rundir));
	assert_false(losetup_mentions(rundir));
	DIR *d = opendir(rundir);
	struct dirent *de;
	assert_non_null(d);
	while ((de = readdir(d)))
		assert_true(de->d_name[0] == '.');
	closedir(d);
}

static int setup(void **state)
{
	snprintf(rundir, sizeof(rundir), "/tmp/dg-simdisk-test-XXXXXX");
	if (!mkdtemp(rundir))
		return -1;
	setenv("DISKGEO_SIMDISK_RUNDIR", rundir, 1);
	return 0;
}

/* Everything attach made is gone: the run directory is empty again. */
static int teardown(void **state)
{
	int rc = rmdir(rundir);
	if (rc)
		print_message("%s is not empty: %s\n", rundir, strerror(errno));
	return rc;
}

int main(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "test_simdisk: needs root; skipped\n");
		return 77;
	}
	if (access("/dev/fuse", R_OK | W_OK) || access("/dev/loop-control", R_OK | W_OK)) {
		fprintf(stderr, "test_simdisk: needs /dev/fuse and /dev/loop-control; skipped\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(refusals),
	    cmocka_unit_test(rates_wd_red),
	    cmocka_unit_test(rates_hgst),
	    cmocka_unit_test(defects_cheetah),
	    cmocka_unit_test(v2_exos),
	    cmocka_unit_test(v2_ironwolf),
	    cmocka_unit_test(rmw_and_attach_options),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
