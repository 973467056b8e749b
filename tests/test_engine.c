/* SPDX-License-Identifier: MIT */
/*
 * The engine against known bytes: a file whose every 8-byte word holds its own offset is read
 * through io_uring (QD 1 and 32) and psync, as a regular file (no root) and as a loop device
 * with direct I/O (root; skipped otherwise). Also: short reads at the end, reads past the end,
 * misaligned and oversized I/O, writes on a read-only device, bad configurations, tags,
 * timestamps, device-time bookkeeping, closing with I/O in flight, and the psync fallback when
 * io_uring is forbidden (seccomp).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cmocka.h>

#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "t_helpers.h"
#include "util.h"

#define FILE_BYTES (16u << 20)
#define LOOP_BYTES (64u << 20)

static char file_path[4096];
static char loop_file[4096];
static char loop_dev[64];

/* Writes `bytes` of the pattern: the 8-byte word at offset X holds X. Returns 0 or -errno. */
static int write_pattern(const char *path, uint64_t bytes)
{
	static uint64_t chunk[1 << 16];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		return -errno;
	for (uint64_t off = 0; off < bytes; off += sizeof(chunk)) {
		for (size_t i = 0; i < sizeof(chunk) / 8; i++)
			chunk[i] = off + 8 * i;
		if (pwrite(fd, chunk, sizeof(chunk), (off_t)off) != (ssize_t)sizeof(chunk)) {
			int rc = -errno;
			close(fd);
			return rc ? rc : -EIO;
		}
	}
	if (fsync(fd) || close(fd))
		return -errno;
	return 0;
}

/* Counts the words of `data` that do not hold their own device offset. */
static size_t pattern_mismatches(const void *data, uint64_t offset, uint64_t len)
{
	const uint64_t *w = data;
	size_t bad = 0;

	for (uint64_t i = 0; i < len / 8; i++)
		bad += w[i] != offset + 8 * i;
	return bad;
}

static struct dg_device *open_dev(const char *path)
{
	struct dg_device *dev = NULL;
	char err[DG_ERRLEN] = "";
	int rc = dg_device_open(path, 0, &dev, NULL, err, sizeof(err));

	if (rc)
		fail_msg("dg_device_open(%s): %s (%s)", path, strerror(-rc), err);
	return dev;
}

static struct dg_engine *open_engine(struct dg_device *dev, enum dg_engine_kind kind, unsigned qd,
				     uint32_t max_io)
{
	struct dg_engine_config cfg = {.kind = kind, .qd = qd, .max_io_bytes = max_io};
	struct dg_engine *e = NULL;
	char err[DG_ERRLEN] = "";
	bool fell_back = true;
	int rc = dg_engine_open(dev, &cfg, &e, &fell_back, err, sizeof(err));

	if (rc)
		fail_msg("dg_engine_open(qd %u): %s (%s)", qd, strerror(-rc), err);
	assert_false(fell_back);
	return e;
}

/*
 * Streams the whole device in `block` I/Os keeping the queue full, checking every byte, every
 * tag and every timestamp; then checks the device-time bookkeeping against the elapsed time.
 */
static void stream_and_verify(struct dg_device *dev, enum dg_engine_kind kind, unsigned qd,
			      uint32_t block, const char *want_name)
{
	struct dg_engine *e = open_engine(dev, kind, qd, block);
	uint64_t size = dg_device_info(dev)->size_bytes;
	uint64_t next = 0, done_bytes = 0, t0, t1;
	struct dg_completion c[64];
	unsigned max_inflight = 0;

	assert_string_equal(dg_engine_name(e), want_name);
	assert_int_equal(dg_engine_qd(e), qd);
	assert_false(dg_engine_is_virtual(e));
	assert_int_equal(dg_engine_device_time_ns(e), 0);
	t0 = dg_monotonic_ns();
	while (done_bytes < size) {
		struct dg_io ios[64];
		unsigned n = 0;

		while (n < dg_engine_free_slots(e) && next < size) {
			/* The tag encodes the offset so a mixed-up completion shows. */
			ios[n] = (struct dg_io){.offset_bytes = next,
						.length_bytes = block,
						.op = DG_IO_READ,
						.tag = next ^ 0x5a5a5a5a00000000ull};
			next += block;
			n++;
		}
		if (n) {
			assert_int_equal(dg_engine_submit(e, ios, n), n);
		}
		if (dg_engine_inflight(e) > max_inflight)
			max_inflight = dg_engine_inflight(e);
		int got = dg_engine_reap(e, c, 1, 64);
		assert_true(got >= 1);
		for (int i = 0; i < got; i++) {
			assert_int_equal(c[i].tag, c[i].offset_bytes ^ 0x5a5a5a5a00000000ull);
			assert_int_equal(c[i].result, block);
			assert_int_equal(c[i].length_bytes, block);
			assert_int_equal(c[i].op, DG_IO_READ);
			assert_true(c[i].submit_ns >= t0);
			assert_true(c[i].complete_ns >= c[i].submit_ns);
			assert_int_equal(pattern_mismatches(c[i].data, c[i].offset_bytes, block),
					 0);
			done_bytes += (uint64_t)c[i].result;
		}
	}
	t1 = dg_monotonic_ns();
	assert_int_equal(dg_engine_inflight(e), 0);
	assert_int_equal(max_inflight, qd); /* the queue really was kept full */
	assert_true(dg_engine_device_time_ns(e) > 0);
	assert_true(dg_engine_device_time_ns(e) <= t1 - t0);
	dg_engine_close(e);
}

/* One read, waited for; returns its completion. */
static struct dg_completion read_one(struct dg_engine *e, uint64_t off, uint32_t len)
{
	struct dg_io io = {.offset_bytes = off, .length_bytes = len, .op = DG_IO_READ, .tag = 42};
	struct dg_completion c;

	assert_int_equal(dg_engine_submit(e, &io, 1), 1);
	assert_int_equal(dg_engine_reap(e, &c, 1, 1), 1);
	assert_int_equal(c.tag, 42);
	return c;
}

/* The unhappy edges of one device: the end of the device and bad I/O. */
static void edges(struct dg_device *dev, enum dg_engine_kind kind)
{
	struct dg_engine *e = open_engine(dev, kind, kind == DG_ENGINE_PSYNC ? 1 : 4, 65536);
	uint64_t size = dg_device_info(dev)->size_bytes;
	uint32_t sector = dg_device_info(dev)->logical_sector_bytes;
	struct dg_completion c;
	struct dg_io io = {.offset_bytes = 0, .length_bytes = 4096, .op = DG_IO_READ};

	/* A read straddling the end returns what is there, and those bytes are right. */
	c = read_one(e, size - 4096, 8192);
	assert_int_equal(c.result, 4096);
	assert_int_equal(pattern_mismatches(c.data, size - 4096, 4096), 0);
	/* At or past the end: 0 bytes or an error, never a crash or a hang. */
	c = read_one(e, size, 4096);
	assert_true(c.result <= 0);
	c = read_one(e, size + (1u << 20), 4096);
	assert_true(c.result <= 0);

	/* Bad I/O is refused whole, nothing taken. */
	io.offset_bytes = sector / 2;
	assert_int_equal(dg_engine_submit(e, &io, 1), -EINVAL);
	io.offset_bytes = 0;
	io.length_bytes = sector + sector / 2;
	assert_int_equal(dg_engine_submit(e, &io, 1), -EINVAL);
	io.length_bytes = 0;
	assert_int_equal(dg_engine_submit(e, &io, 1), -EINVAL);
	io.length_bytes = 65536 + 4096; /* larger than max_io_bytes */
	assert_int_equal(dg_engine_submit(e, &io, 1), -EINVAL);
	io.length_bytes = 4096;
	io.op = 7;
	assert_int_equal(dg_engine_submit(e, &io, 1), -EINVAL);
	io.op = DG_IO_WRITE; /* the device is open read-only */
	assert_int_equal(dg_engine_submit(e, &io, 1), -EBADF);
	{
		struct dg_io two[2] = {{.offset_bytes = 0, .length_bytes = 4096},
				       {.offset_bytes = 1, .length_bytes = 4096}};
		assert_int_equal(dg_engine_submit(e, two, 2), -EINVAL);
	}
	assert_int_equal(dg_engine_inflight(e), 0);
	assert_int_equal(dg_engine_reap(e, &c, 1, 1), 0); /* nothing in flight: no wait */

	/* More than the free slots: only as many are taken. */
	if (dg_engine_qd(e) > 1) {
		struct dg_io many[8];
		struct dg_completion cs[8];
		for (unsigned i = 0; i < 8; i++)
			many[i] = (struct dg_io){
			    .offset_bytes = 4096ull * i, .length_bytes = 4096, .tag = i};
		assert_int_equal(dg_engine_submit(e, many, 8), 4);
		assert_int_equal(dg_engine_free_slots(e), 0);
		assert_int_equal(dg_engine_submit(e, many + 4, 4), 0);
		int got = 0;
		while (got < 4) {
			int rc = dg_engine_reap(e, cs + got, 1, 8);
			assert_true(rc > 0);
			got += rc;
		}
		uint64_t seen = 0;
		for (int i = 0; i < got; i++) {
			assert_int_equal(cs[i].offset_bytes, 4096ull * cs[i].tag);
			seen |= 1ull << cs[i].tag;
		}
		assert_int_equal(seen, 0xf);
	}

	/* Closing with I/O in flight waits for it (ASan would see a use after free). */
	io = (struct dg_io){.offset_bytes = 0, .length_bytes = 65536, .op = DG_IO_READ};
	assert_int_equal(dg_engine_submit(e, &io, 1), 1);
	dg_engine_close(e);
}

static void bad_configs(struct dg_device *dev)
{
	struct dg_engine_config cfg = {.kind = DG_ENGINE_IO_URING, .qd = 0};
	struct dg_engine *e = NULL;
	char err[DG_ERRLEN];

	assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), -EINVAL);
	assert_null(e);
	assert_true(strlen(err) > 0);
	cfg.qd = 257;
	assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), -EINVAL);
	cfg.qd = 4;
	cfg.max_io_bytes = 1000; /* not a multiple of 4096 */
	assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), -EINVAL);
	cfg.max_io_bytes = 512;
	assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), -EINVAL);
	cfg.max_io_bytes = 128u << 20; /* above the 64 MiB limit */
	assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), -EINVAL);
	cfg.max_io_bytes = 0;
	cfg.kind = DG_ENGINE_SIM; /* not a sim: device */
	assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "sim"));
	cfg.kind = 99;
	assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), -EINVAL);

	/* psync forces queue depth 1; max_io 0 means 1 MiB. */
	cfg.kind = DG_ENGINE_PSYNC;
	cfg.qd = 16;
	assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), 0);
	assert_int_equal(dg_engine_qd(e), 1);
	{
		struct dg_completion c = read_one(e, 0, 1u << 20);
		assert_int_equal(c.result, 1u << 20);
		assert_int_equal(pattern_mismatches(c.data, 0, 1u << 20), 0);
	}
	dg_engine_close(e);
	dg_engine_close(NULL);
}

/* ---- regular file: no root needed ---- */

static int file_setup(void **state)
{
	snprintf(file_path, sizeof(file_path), "%s/test_engine.%d.img", DG_BINARY_DIR,
		 (int)getpid());
	return write_pattern(file_path, FILE_BYTES) ? -1 : 0;
}

static int file_teardown(void **state)
{
	unlink(file_path);
	return 0;
}

static void test_kind_parse(void **state)
{
	enum dg_engine_kind k;

	assert_int_equal(dg_engine_kind_parse("io_uring", &k), 0);
	assert_int_equal(k, DG_ENGINE_IO_URING);
	assert_int_equal(dg_engine_kind_parse("psync", &k), 0);
	assert_int_equal(k, DG_ENGINE_PSYNC);
	assert_int_equal(dg_engine_kind_parse("sim", &k), 0);
	assert_int_equal(k, DG_ENGINE_SIM);
	assert_int_equal(dg_engine_kind_parse("auto", &k), 0);
	assert_int_equal(k, DG_ENGINE_AUTO);
	assert_int_equal(dg_engine_kind_parse("uring", &k), -EINVAL);
	assert_int_equal(dg_engine_kind_parse("", &k), -EINVAL);
	assert_int_equal(dg_engine_kind_parse(NULL, &k), -EINVAL);
}

static void test_file_uring_qd1(void **state)
{
	struct dg_device *dev = open_dev(file_path);
	stream_and_verify(dev, DG_ENGINE_IO_URING, 1, 1u << 20, "io_uring");
	dg_device_close(dev);
}

static void test_file_uring_qd32(void **state)
{
	struct dg_device *dev = open_dev(file_path);
	stream_and_verify(dev, DG_ENGINE_IO_URING, 32, 65536, "io_uring");
	dg_device_close(dev);
}

static void test_file_psync(void **state)
{
	struct dg_device *dev = open_dev(file_path);
	stream_and_verify(dev, DG_ENGINE_PSYNC, 1, 256u << 10, "psync");
	dg_device_close(dev);
}

static void test_file_auto(void **state)
{
	struct dg_device *dev = open_dev(file_path);
	stream_and_verify(dev, DG_ENGINE_AUTO, 8, 1u << 20, "io_uring");
	dg_device_close(dev);
}

static void test_file_edges(void **state)
{
	struct dg_device *dev = open_dev(file_path);
	edges(dev, DG_ENGINE_IO_URING);
	edges(dev, DG_ENGINE_PSYNC);
	bad_configs(dev);
	dg_device_close(dev);
}

/* A sim: device takes only the sim backend, and AUTO picks it. */
static void test_sim_device(void **state)
{
	struct dg_device *dev = open_dev("sim:hgst-7k1000");
	struct dg_engine_config cfg = {.kind = DG_ENGINE_IO_URING, .qd = 4};
	struct dg_engine *e = NULL;
	char err[DG_ERRLEN];

	assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), -EINVAL);
	cfg.kind = DG_ENGINE_PSYNC;
	assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), -EINVAL);
	cfg.kind = DG_ENGINE_AUTO;
	assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), 0);
	assert_string_equal(dg_engine_name(e), "sim");
	assert_true(dg_engine_is_virtual(e));
	assert_int_equal(dg_engine_qd(e), 4);
	{
		struct dg_completion c = read_one(e, 0, 65536);
		assert_int_equal(c.result, 65536);
		assert_true(c.complete_ns > c.submit_ns);
		assert_int_equal(dg_engine_device_time_ns(e), c.complete_ns - c.submit_ns);
	}
	dg_engine_close(e);
	dg_device_close(dev);
}

/*
 * With io_uring_setup forbidden (EPERM from a seccomp filter, as in many containers), AUTO falls
 * back to psync and says why; an explicit io_uring request fails. Runs in a child: a seccomp
 * filter cannot be removed.
 */
static int child_fallback(void *arg)
{
	struct sock_filter filter[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	(void)arg;
	struct sock_fprog prog = {.len = ARRAY_SIZE(filter), .filter = filter};
	struct dg_engine_config cfg = {.kind = DG_ENGINE_IO_URING, .qd = 8};
	struct dg_device *dev = NULL;
	struct dg_engine *e = NULL;
	char err[DG_ERRLEN] = "";
	bool fell_back = false;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return 77;
	if (dg_device_open(file_path, 0, &dev, NULL, err, sizeof(err)))
		return 10;
	if (dg_engine_open(dev, &cfg, &e, &fell_back, err, sizeof(err)) != -EPERM)
		return 11;
	cfg.kind = DG_ENGINE_AUTO;
	if (dg_engine_open(dev, &cfg, &e, &fell_back, err, sizeof(err)) != 0)
		return 12;
	if (!fell_back || strcmp(dg_engine_name(e), "psync") || dg_engine_qd(e) != 1)
		return 13;
	if (!strstr(err, "io_uring") || !strstr(err, "psync"))
		return 14;
	struct dg_io io = {.offset_bytes = 8192, .length_bytes = 4096, .tag = 1};
	struct dg_completion c;
	if (dg_engine_submit(e, &io, 1) != 1 || dg_engine_reap(e, &c, 1, 1) != 1)
		return 15;
	if (c.result != 4096 || pattern_mismatches(c.data, 8192, 4096))
		return 16;
	dg_engine_close(e);
	dg_device_close(dev);
	return 0;
}

static void test_fallback_to_psync(void **state)
{
	int status = t_fork(child_fallback, NULL, 0, NULL);

	if (status == 77)
		skip();
	assert_int_equal(status, 0);
}

/* ---- loop device with direct I/O: root ---- */

static int run_cmd(const char *cmd, char *out, size_t outlen)
{
	FILE *p = popen(cmd, "r");
	int rc;

	if (!p)
		return -1;
	if (out) {
		out[0] = '\0';
		if (fgets(out, (int)outlen, p))
			out[strcspn(out, "\n")] = '\0';
	}
	rc = pclose(p);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int loop_setup(void **state)
{
	char cmd[8192 + 64];

	loop_dev[0] = '\0';
	if (geteuid() != 0)
		return 0; /* the tests skip */
	snprintf(loop_file, sizeof(loop_file), "/tmp/test_engine.loop.%d.img", (int)getpid());
	if (write_pattern(loop_file, LOOP_BYTES))
		return -1;
	snprintf(cmd, sizeof(cmd), "losetup --find --show --direct-io=on '%s' 2>/dev/null",
		 loop_file);
	if (run_cmd(cmd, loop_dev, sizeof(loop_dev)) != 0 || strncmp(loop_dev, "/dev/loop", 9))
		loop_dev[0] = '\0';
	return 0;
}

static int loop_teardown(void **state)
{
	char cmd[128];

	if (loop_dev[0]) {
		snprintf(cmd, sizeof(cmd), "losetup -d %s", loop_dev);
		run_cmd(cmd, NULL, 0);
	}
	if (loop_file[0])
		unlink(loop_file);
	return 0;
}

static struct dg_device *open_loop(void)
{
	if (!loop_dev[0])
		skip(); /* not root, or no loop devices */
	struct dg_device *dev = open_dev(loop_dev);
	assert_int_equal(dg_device_info(dev)->kind, DG_DEVICE_BLOCK);
	assert_int_equal(dg_device_info(dev)->size_bytes, LOOP_BYTES);
	return dev;
}

static void test_loop_uring_qd1(void **state)
{
	struct dg_device *dev = open_loop();
	stream_and_verify(dev, DG_ENGINE_IO_URING, 1, 1u << 20, "io_uring");
	dg_device_close(dev);
}

static void test_loop_uring_qd32(void **state)
{
	struct dg_device *dev = open_loop();
	stream_and_verify(dev, DG_ENGINE_IO_URING, 32, 128u << 10, "io_uring");
	dg_device_close(dev);
}

static void test_loop_psync(void **state)
{
	struct dg_device *dev = open_loop();
	stream_and_verify(dev, DG_ENGINE_PSYNC, 1, 1u << 20, "psync");
	dg_device_close(dev);
}

static void test_loop_edges(void **state)
{
	struct dg_device *dev = open_loop();
	edges(dev, DG_ENGINE_IO_URING);
	edges(dev, DG_ENGINE_PSYNC);
	bad_configs(dev);
	dg_device_close(dev);
}

int main(void)
{
	const struct CMUnitTest file_tests[] = {
	    cmocka_unit_test(test_kind_parse),	    cmocka_unit_test(test_file_uring_qd1),
	    cmocka_unit_test(test_file_uring_qd32), cmocka_unit_test(test_file_psync),
	    cmocka_unit_test(test_file_auto),	    cmocka_unit_test(test_file_edges),
	    cmocka_unit_test(test_sim_device),	    cmocka_unit_test(test_fallback_to_psync),
	};
	const struct CMUnitTest loop_tests[] = {
	    cmocka_unit_test(test_loop_uring_qd1),
	    cmocka_unit_test(test_loop_uring_qd32),
	    cmocka_unit_test(test_loop_psync),
	    cmocka_unit_test(test_loop_edges),
	};
	int rc = cmocka_run_group_tests_name("file", file_tests, file_setup, file_teardown);

	rc |= cmocka_run_group_tests_name("loop", loop_tests, loop_setup, loop_teardown);
	return rc ? 1 : 0;
}
