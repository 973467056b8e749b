/* SPDX-License-Identifier: MIT */
/*
 * Tests of opening and probing: regular files, every kind of bad input, sim: devices against
 * their spec, and (as root) loop devices whose truth the test sets up itself: a 4 KiB-sector loop
 * device, a partition on it, and a mounted file system on it.
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
#include <linux/blkpg.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "diskgeo/device.h"
#include "diskgeo/model.h"
#include "t_helpers.h"
#include "util.h"

static char dir[] = "/tmp/dg_test_device.XXXXXX";

static void path_in_dir(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* Creates a file of `size` bytes (a pattern, not a hole) in the test directory. */
static void make_file(const char *path, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char block[4096];

	assert_true(fd >= 0);
	for (size_t i = 0; i < sizeof(block); i++)
		block[i] = (char)i;
	for (size_t done = 0; done < size;) {
		size_t n = size - done < sizeof(block) ? size - done : sizeof(block);
		assert_int_equal(write(fd, block, n), (ssize_t)n);
		done += n;
	}
	assert_int_equal(close(fd), 0);
}

static bool has_warning(const struct dg_warnings *w, const char *needle)
{
	for (size_t i = 0; i < w->n; i++)
		if (strstr(w->v[i], needle))
			return true;
	return false;
}

static void kind_names(void **state)
{
	assert_string_equal(dg_device_kind_name(DG_DEVICE_BLOCK), "block");
	assert_string_equal(dg_device_kind_name(DG_DEVICE_FILE), "file");
	assert_string_equal(dg_device_kind_name(DG_DEVICE_SIM), "sim");
	assert_string_equal(dg_device_kind_name((enum dg_device_kind)99), "unknown");
}

static void regular_file(void **state)
{
	char path[256], err[DG_ERRLEN] = "";
	struct dg_warnings w = {0};
	struct dg_device *dev = NULL;
	struct stat st;

	path_in_dir(path, sizeof(path), "disk.img");
	make_file(path, 1000000 + 512);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(dg_device_open(path, 0, &dev, &w, err, sizeof(err)), 0);
	const struct dg_device_info *info = dg_device_info(dev);
	assert_int_equal(info->kind, DG_DEVICE_FILE);
	assert_string_equal(info->path, path);
	assert_int_equal(info->size_bytes, 1000000 + 512);
	assert_int_equal(info->file_blksize, st.st_blksize);
	/* O_DIRECT alignment: a power of two from 512 up; physical is st_blksize when sane. */
	assert_true(info->logical_sector_bytes >= 512);
	assert_int_equal(info->logical_sector_bytes & (info->logical_sector_bytes - 1), 0);
	if (st.st_blksize >= (blksize_t)info->logical_sector_bytes)
		assert_int_equal(info->physical_sector_bytes, st.st_blksize);
	assert_int_equal(info->rotational, -1);
	assert_false(info->is_partition);
	assert_true(dg_device_fd(dev) >= 0);
	assert_null(dg_device_spec(dev));
	assert_true(has_warning(&w, "regular file"));
	assert_true(has_warning(&w, "file system sits between"));
	/* The descriptor reads the file. */
	char buf[16];
	assert_int_equal(pread(dg_device_fd(dev), buf, 0, 0), 0);
	dg_device_close(dev);
	dg_warnings_free(&w);
	dg_device_close(NULL);

	/* No warnings list: still opens. */
	assert_int_equal(dg_device_open(path, 0, &dev, NULL, err, sizeof(err)), 0);
	dg_device_close(dev);
	unlink(path);
}

/*
 * The write open reaches only the object probed (issue 15, item 2): dg_device_reopen() goes
 * through the probe's descriptor, so a path that names another file by then (renamed away and
 * replaced, or a symbolic link re-pointed) does not redirect it; dg_device_same() tells the
 * objects apart by st_dev/st_ino, whatever their paths.
 */
static void reopen_same_object(void **state)
{
	char path[256], moved[256], other[256], link[256], err[DG_ERRLEN] = "";
	struct dg_device *probe = NULL, *w = NULL, *now = NULL;
	struct stat st;

	(void)state;
	path_in_dir(path, sizeof(path), "named.img");
	path_in_dir(moved, sizeof(moved), "named.img.old");
	path_in_dir(other, sizeof(other), "other.img");
	path_in_dir(link, sizeof(link), "link");
	make_file(path, 1 << 20);
	make_file(other, 1 << 20);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(dg_device_open(link, 0, &probe, NULL, err, sizeof(err)), 0);
	assert_int_equal(dg_device_info(probe)->file_ino, st.st_ino);
	assert_int_equal(dg_device_info(probe)->file_dev, st.st_dev);

	/* Between the probe and the write open: the name now means another file, and the link
	 * points at a third. */
	assert_int_equal(rename(path, moved), 0);
	make_file(path, 1 << 20);
	assert_int_equal(unlink(link), 0);
	assert_int_equal(symlink(other, link), 0);

	assert_int_equal(dg_device_reopen(probe, DG_DEVICE_WRITE, &w, NULL, err, sizeof(err)), 0);
	assert_int_equal(dg_device_info(w)->file_ino, st.st_ino); /* the probed inode */
	assert_string_equal(dg_device_info(w)->path, link);	  /* still named as given */
	assert_true(dg_device_same(probe, w));
	/* What the path names now is another object. */
	assert_int_equal(dg_device_open(link, 0, &now, NULL, err, sizeof(err)), 0);
	assert_false(dg_device_same(probe, now));
	assert_false(dg_device_same(w, now));
	/* A write through the reopened descriptor lands in the probed file (now `moved`). */
	char block[4096] __attribute__((aligned(4096)));
	memset(block, 0x5a, sizeof(block));
	int fd = dg_device_fd(w);
	ssize_t n = pwrite(fd, block, sizeof(block), 0);
	assert_int_equal(n, (ssize_t)sizeof(block));
	dg_device_close(w);
	dg_device_close(now);
	dg_device_close(probe);
	char got;
	fd = open(moved, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &got, 1, 0), 1);
	close(fd);
	assert_int_equal((unsigned char)got, 0x5a);
	fd = open(other, O_RDONLY);
	assert_int_equal(pread(fd, &got, 1, 0), 1);
	close(fd);
	assert_int_equal(got, 0); /* make_file's pattern starts at 0 */
	unlink(path);
	unlink(moved);
	unlink(other);
	unlink(link);
}

/* On a file system that refuses O_DIRECT (tmpfs before Linux 6.6) the open falls back to
 * buffered reads and says so; where O_DIRECT works there is no such warning. */
static void direct_io_fallback(void **state)
{
	const char *path = "/dev/shm/dg_test_device.img";
	char err[DG_ERRLEN] = "";
	struct dg_warnings w = {0};
	struct dg_device *dev = NULL;

	if (access("/dev/shm", W_OK))
		skip();
	make_file(path, 65536);
	int fd = open(path, O_RDONLY | O_DIRECT);
	bool direct_ok = fd >= 0;
	if (fd >= 0)
		close(fd);
	assert_int_equal(dg_device_open(path, 0, &dev, &w, err, sizeof(err)), 0);
	assert_int_equal(dg_device_info(dev)->size_bytes, 65536);
	assert_int_equal(has_warning(&w, "refused O_DIRECT"), !direct_ok);
	int fl = fcntl(dg_device_fd(dev), F_GETFL);
	assert_int_equal((fl & O_DIRECT) != 0, direct_ok);
	dg_device_close(dev);
	dg_warnings_free(&w);
	unlink(path);
}

struct bad_case {
	const char *what; /* file name in the test dir, or an absolute path */
	int rc;
	const char *message;
};

static void bad_inputs(void **state)
{
	char fifo[256], empty[256], missing[256];

	path_in_dir(fifo, sizeof(fifo), "fifo");
	path_in_dir(empty, sizeof(empty), "empty");
	path_in_dir(missing, sizeof(missing), "missing/disk");
	assert_int_equal(mkfifo(fifo, 0644), 0);
	make_file(empty, 0);
	const struct bad_case cases[] = {
	    {dir, -EISDIR, "is a directory"},
	    {"/dev/null", -ENOTBLK, "not a block device or regular file"},
	    {fifo, -ENOTBLK, "not a block device or regular file"},
	    {missing, -ENOENT, "No such file or directory"},
	    {empty, -EINVAL, "is empty"},
	    {"", -EINVAL, "no device"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char err[DG_ERRLEN] = "";
		struct dg_warnings w = {0};
		struct dg_device *dev = (struct dg_device *)&w; /* must be reset to NULL */
		int rc = dg_device_open(cases[i].what, 0, &dev, &w, err, sizeof(err));
		if (rc != cases[i].rc || !strstr(err, cases[i].message) || strchr(err, '\n'))
			fail_msg("%s: rc %d err \"%s\", want %d \"%s\"", cases[i].what, rc, err,
				 cases[i].rc, cases[i].message);
		assert_null(dev);
		assert_int_equal(w.n, 0);
		if (cases[i].what[0])
			assert_non_null(strstr(err, cases[i].what)); /* names the path */
	}
	unlink(fifo);
	unlink(empty);
}

/* EACCES: root bypasses file permissions, so a forked child drops to nobody first. */
static int open_locked(void *arg)
{
	const char *path = arg;
	char err[DG_ERRLEN] = "";
	struct dg_device *dev = NULL;
	int rc = dg_device_open(path, 0, &dev, NULL, err, sizeof(err));
	bool ok = rc == -EACCES &&
		  strstr(err, "Permission denied (raw devices usually need root)") && !dev;

	if (!ok)
		fprintf(stderr, "rc %d err \"%s\"\n", rc, err);
	return ok ? 0 : 1;
}

static void permission_denied(void **state)
{
	char path[256];

	path_in_dir(path, sizeof(path), "locked.img");
	make_file(path, 4096);
	assert_int_equal(chmod(path, 0), 0);
	int status = t_fork(open_locked, path, T_NOBODY, NULL);
	unlink(path);
	if (status == 77)
		skip(); /* could not drop privileges */
	assert_int_equal(status, 0);
}

static void sim_devices(void **state)
{
	const char *const *names;
	size_t n = dg_spec_presets(&names);
	char err[DG_ERRLEN] = "", what[300];
	struct dg_warnings w = {0};
	struct dg_device *dev = NULL;

	assert_true(n > 0);
	for (size_t i = 0; i < n; i++) {
		struct dg_spec *spec = NULL;
		assert_int_equal(dg_spec_load(names[i], &spec, NULL, err, sizeof(err)), 0);
		snprintf(what, sizeof(what), "sim:%s", names[i]);
		assert_int_equal(dg_device_open(what, 0, &dev, &w, err, sizeof(err)), 0);
		const struct dg_device_info *info = dg_device_info(dev);
		assert_int_equal(info->kind, DG_DEVICE_SIM);
		assert_string_equal(info->path, what);
		assert_int_equal(info->size_bytes, dg_spec_capacity_bytes(spec));
		assert_int_equal(info->logical_sector_bytes, dg_spec_sector_bytes(spec));
		assert_int_equal(info->physical_sector_bytes, dg_spec_physical_sector_bytes(spec));
		assert_int_equal(info->rotational, 1);
		assert_string_equal(info->transport, "sim");
		assert_string_equal(info->name, dg_spec_name(spec));
		assert_string_equal(info->model, dg_spec_name(spec));
		assert_int_equal(dg_device_fd(dev), -1);
		assert_non_null(dg_device_spec(dev));
		assert_int_equal(dg_spec_capacity_bytes(dg_device_spec(dev)), info->size_bytes);
		assert_false(has_warning(&w, "non-rotational"));
		dg_device_close(dev);
		dg_spec_free(spec);
	}
	/* A spec file by path. */
	snprintf(what, sizeof(what), "sim:%s/presets/wd-red-4tb.json", DG_SOURCE_DIR);
	assert_int_equal(dg_device_open(what, 0, &dev, &w, err, sizeof(err)), 0);
	assert_int_equal(dg_device_info(dev)->kind, DG_DEVICE_SIM);
	assert_true(dg_device_info(dev)->size_bytes > 0);
	dg_device_close(dev);

	/* Bad sim: forms. */
	err[0] = '\0';
	assert_int_equal(dg_device_open("sim:", 0, &dev, &w, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "sim:"));
	assert_null(dev);
	err[0] = '\0';
	assert_int_equal(
	    dg_device_open("sim:/nonexistent/spec.json", 0, &dev, &w, err, sizeof(err)), -ENOENT);
	assert_true(err[0] != '\0');
	assert_null(dev);
	char bad[256];
	path_in_dir(bad, sizeof(bad), "bad.json");
	FILE *f = fopen(bad, "w");
	assert_non_null(f);
	fputs("{\"name\": \"x\", \"no_such_key\": 1}", f);
	fclose(f);
	snprintf(what, sizeof(what), "sim:%s", bad);
	assert_int_equal(dg_device_open(what, 0, &dev, &w, err, sizeof(err)), -EINVAL);
	assert_null(dev);
	unlink(bad);
	dg_warnings_free(&w);
}

/* ---- loop devices (root) ---- */

struct loop {
	char backing[256];
	char dev[64];
	char mnt[256];
	bool mounted;
};

static struct loop lp;

/* Runs a shell command, returning its first output line in out (may be NULL). */
static int run(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int run(char *out, size_t len, const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	char line[512] = "";
	if (!fgets(line, sizeof(line), p))
		line[0] = '\0';
	line[strcspn(line, "\n")] = '\0';
	if (out)
		snprintf(out, len, "%s", line);
	int status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int loop_teardown(void **state)
{
	if (lp.mounted)
		umount(lp.mnt);
	lp.mounted = false;
	if (lp.mnt[0])
		rmdir(lp.mnt);
	if (lp.dev[0])
		run(NULL, 0, "losetup -d %s 2>/dev/null", lp.dev);
	if (lp.backing[0])
		unlink(lp.backing);
	memset(&lp, 0, sizeof(lp));
	return 0;
}

/* A 64 MiB file behind a 4 KiB-sector loop device; `partitioned` adds one partition at 1 MiB
 * of 32 MiB with the BLKPG ioctl (what addpart(8) does), which needs no partition-table parser
 * in the kernel. */
static int loop_setup(bool partitioned)
{
	memset(&lp, 0, sizeof(lp));
	path_in_dir(lp.backing, sizeof(lp.backing), "loop.img");
	int fd = open(lp.backing, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, 64 << 20))
		return -1;
	close(fd);
	if (run(lp.dev, sizeof(lp.dev),
		"losetup --find --show --sector-size 4096 --direct-io=on %s %s 2>/dev/null",
		partitioned ? "--partscan" : "", lp.backing) ||
	    strncmp(lp.dev, "/dev/loop", 9)) {
		lp.dev[0] = '\0';
		return -1;
	}
	if (partitioned) {
		struct blkpg_partition part = {.start = 1 << 20, .length = 32 << 20, .pno = 1};
		struct blkpg_ioctl_arg arg = {
		    .op = BLKPG_ADD_PARTITION, .datalen = sizeof(part), .data = &part};
		fd = open(lp.dev, O_RDONLY);
		if (fd < 0)
			return -1;
		int rc = ioctl(fd, BLKPG, &arg);
		close(fd);
		if (rc)
			return -1;
	}
	return 0;
}

static int loop_plain_setup(void **state)
{
	return loop_setup(false);
}

static int loop_part_setup(void **state)
{
	return loop_setup(true);
}

/* Truth from sysfs, read here independently of the code under test. */
static int sysfs_int(const char *name, const char *attr)
{
	char path[512], text[64] = "";
	snprintf(path, sizeof(path), "/sys/block/%s/%s", name, attr);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(text, sizeof(text), f))
		text[0] = '\0';
	fclose(f);
	return atoi(text);
}

/* /sys/block/NAME/queue/write_cache: 1 "write back", 0 "write through", -1 unreadable. */
static int sysfs_write_cache(const char *name)
{
	char path[512], text[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/block/%s/queue/write_cache", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(text, sizeof(text), f))
		text[0] = '\0';
	fclose(f);
	return !strncmp(text, "write back", 10) ? 1 : !strncmp(text, "write through", 13) ? 0 : -1;
}

static void loop_4k(void **state)
{
	char err[DG_ERRLEN] = "";
	struct dg_warnings w = {0};
	struct dg_device *dev = NULL;
	const char *name = lp.dev + 5;

	assert_int_equal(dg_device_open(lp.dev, 0, &dev, &w, err, sizeof(err)), 0);
	const struct dg_device_info *info = dg_device_info(dev);
	assert_int_equal(info->kind, DG_DEVICE_BLOCK);
	assert_int_equal(info->size_bytes, 64 << 20);
	assert_int_equal(info->logical_sector_bytes, 4096);
	assert_int_equal(info->physical_sector_bytes, 4096);
	assert_int_equal(info->alignment_offset_bytes, 0);
	assert_string_equal(info->transport, "loop");
	assert_string_equal(info->name, name);
	assert_string_equal(info->loop_backing_file, lp.backing);
	/* A loop device inherits rotation from its backing disk (kernel loop_update_rotational):
	 * compare with what the kernel states. */
	assert_int_equal(info->rotational, sysfs_int(name, "queue/rotational"));
	assert_int_equal(info->max_sectors_kb, sysfs_int(name, "queue/max_sectors_kb"));
	assert_int_equal(info->read_ahead_kb, sysfs_int(name, "queue/read_ahead_kb"));
	assert_true(info->scheduler[0] != '\0');
	assert_null(strchr(info->scheduler, '['));
	assert_false(info->is_partition);
	assert_false(info->mounted);
	assert_false(info->has_holders);
	assert_true(dg_device_fd(dev) >= 0);
	assert_int_equal(has_warning(&w, "non-rotational"), info->rotational == 0);
	assert_false(has_warning(&w, "regular file"));
	int fl = fcntl(dg_device_fd(dev), F_GETFL);
	assert_true(fl & O_DIRECT);
	assert_int_equal(fl & O_ACCMODE, O_RDONLY);
	dg_device_close(dev);

	/* Reads do not depend on the write cache: no word of it. */
	assert_false(has_warning(&w, "write cache"));
	dg_warnings_free(&w);

	/* The guarded write mode holds the device exclusively: a second writer is refused; it
	 * states the write cache as the kernel does. */
	struct dg_device *writer = NULL, *second = NULL;
	assert_int_equal(dg_device_open(lp.dev, DG_DEVICE_WRITE, &writer, &w, err, sizeof(err)), 0);
	int wc = sysfs_write_cache(name);
	assert_int_equal(dg_device_info(writer)->write_cache, wc);
	assert_int_equal(has_warning(&w, "write cache is on (write back)"), wc == 1);
	assert_int_equal(has_warning(&w, "write cache is off (write through)"), wc == 0);
	assert_int_equal(fcntl(dg_device_fd(writer), F_GETFL) & O_ACCMODE, O_RDWR);
	assert_int_equal(dg_device_open(lp.dev, DG_DEVICE_WRITE, &second, NULL, err, sizeof(err)),
			 -EBUSY);
	assert_null(second);
	assert_non_null(strstr(err, lp.dev));
	dg_device_close(writer);
	dg_warnings_free(&w);
}

static void wait_for(const char *path)
{
	for (int i = 0; i < 200 && access(path, F_OK); i++)
		usleep(10000);
}

static void loop_partition(void **state)
{
	char part[80], err[DG_ERRLEN] = "";
	struct dg_warnings w = {0};
	struct dg_device *dev = NULL;

	snprintf(part, sizeof(part), "%sp1", lp.dev);
	wait_for(part); /* devtmpfs adds the node */
	assert_int_equal(access(part, F_OK), 0);
	assert_int_equal(dg_device_open(part, 0, &dev, &w, err, sizeof(err)), 0);
	const struct dg_device_info *info = dg_device_info(dev);
	assert_true(info->is_partition);
	assert_string_equal(info->whole_disk, lp.dev + 5);
	assert_string_equal(info->name, part + 5);
	assert_int_equal(info->partition_start_bytes, 1 << 20);
	assert_int_equal(info->size_bytes, 32 << 20);
	assert_int_equal(info->logical_sector_bytes, 4096);
	assert_string_equal(info->transport, "loop");
	assert_true(has_warning(&w, "is a partition of"));
	dg_device_close(dev);

	/* The whole disk is not a partition. */
	assert_int_equal(dg_device_open(lp.dev, 0, &dev, NULL, err, sizeof(err)), 0);
	assert_false(dg_device_info(dev)->is_partition);
	assert_false(dg_device_info(dev)->mounted);
	dg_device_close(dev);

	/* A mounted partition makes its whole disk count as mounted, and refuse writes. */
	if (run(NULL, 0, "mkfs.ext4 -q -F %s >/dev/null 2>&1", part))
		skip(); /* no mkfs.ext4 */
	path_in_dir(lp.mnt, sizeof(lp.mnt), "mnt");
	assert_int_equal(mkdir(lp.mnt, 0755), 0);
	if (mount(part, lp.mnt, "ext4", MS_RDONLY, NULL))
		skip(); /* no ext4 in this kernel */
	lp.mounted = true;
	assert_int_equal(dg_device_open(lp.dev, 0, &dev, NULL, err, sizeof(err)), 0);
	assert_true(dg_device_info(dev)->mounted);
	dg_device_close(dev);
	assert_int_equal(dg_device_open(lp.dev, DG_DEVICE_WRITE, &dev, NULL, err, sizeof(err)),
			 -EBUSY);
	assert_non_null(strstr(err, "mounted"));
	dg_warnings_free(&w);
}

static void loop_mounted(void **state)
{
	char err[DG_ERRLEN] = "";
	struct dg_warnings w = {0};
	struct dg_device *dev = NULL;

	if (run(NULL, 0, "mkfs.ext4 -q -F %s >/dev/null 2>&1", lp.dev))
		skip(); /* no mkfs.ext4 */
	path_in_dir(lp.mnt, sizeof(lp.mnt), "mnt");
	assert_int_equal(mkdir(lp.mnt, 0755), 0);
	if (mount(lp.dev, lp.mnt, "ext4", MS_RDONLY, NULL))
		skip(); /* no ext4 in this kernel */
	lp.mounted = true;
	assert_int_equal(dg_device_open(lp.dev, 0, &dev, &w, err, sizeof(err)), 0);
	assert_true(dg_device_info(dev)->mounted);
	assert_true(has_warning(&w, "is mounted"));
	dg_device_close(dev);
	/* Writing to a mounted device is refused before any open. */
	dev = NULL;
	assert_int_equal(dg_device_open(lp.dev, DG_DEVICE_WRITE, &dev, NULL, err, sizeof(err)),
			 -EBUSY);
	assert_non_null(strstr(err, "mounted"));
	assert_null(dev);
	dg_warnings_free(&w);
}

static int setup_dir(void **state)
{
	if (!mkdtemp(dir))
		return -1;
	return chmod(dir, 0755); /* the unprivileged child must reach its file */
}

static int remove_dir(void **state)
{
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(kind_names),	  cmocka_unit_test(regular_file),
	    cmocka_unit_test(direct_io_fallback), cmocka_unit_test(bad_inputs),
	    cmocka_unit_test(permission_denied),  cmocka_unit_test(sim_devices),
	    cmocka_unit_test(reopen_same_object),
	};
	const struct CMUnitTest loop_tests[] = {
	    cmocka_unit_test_setup_teardown(loop_4k, loop_plain_setup, loop_teardown),
	    cmocka_unit_test_setup_teardown(loop_partition, loop_part_setup, loop_teardown),
	    cmocka_unit_test_setup_teardown(loop_mounted, loop_plain_setup, loop_teardown),
	};
	int failed = cmocka_run_group_tests_name("device", tests, setup_dir, NULL);
	if (failed) {
		remove_dir(NULL);
		return failed;
	}
	if (geteuid() != 0 || access("/dev/loop-control", F_OK)) {
		fprintf(stderr, "loop-device tests need root and /dev/loop-control: skipped\n");
		remove_dir(NULL);
		return 77;
	}
	failed = cmocka_run_group_tests_name("loop", loop_tests, NULL, NULL);
	remove_dir(NULL);
	return failed;
}
