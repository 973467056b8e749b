/* SPDX-License-Identifier: MIT */
/*
 * Opening and probing the device under test. A block device is probed the way lsblk does it:
 * ioctls for what the kernel states exactly (size, sector sizes, alignment), then a small table
 * of sysfs attributes under /sys/dev/block/MAJ:MIN (util-linux lib/sysfs.c; Documentation/ABI/
 * stable/sysfs-block). A regular file is allowed with a warning; sim: devices come from a spec.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "diskgeo/device.h"
#include "diskgeo/model.h"
#include "device_priv.h"
#include "util.h"

struct dg_device {
	struct dg_device_info info;
	int fd;		      /* -1 for sim: */
	struct dg_spec *spec; /* sim: only; owned */
};

static const char *const kind_names[] = {
    [DG_DEVICE_BLOCK] = "block",
    [DG_DEVICE_FILE] = "file",
    [DG_DEVICE_SIM] = "sim",
};

const char *dg_device_kind_name(enum dg_device_kind kind)
{
	if ((unsigned)kind >= ARRAY_SIZE(kind_names))
		return "unknown";
	return kind_names[kind];
}

/* Copies a string, truncating it to fit `size` (sysfs strings are short; paths are checked). */
void dg_dev_copy(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static bool pow2_in(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v >= lo && v <= hi && !(v & (v - 1));
}

/* ---- opening ---- */

static int open_error(int e, const char *path, char *err, size_t errlen)
{
	if (e == EACCES || (e == EPERM && geteuid() != 0))
		snprintf(err, errlen, "%s: %s (raw devices usually need root)", path, strerror(e));
	else if (e == EPERM) /* root too: a device cgroup, a container or an LSM says no */
		snprintf(err, errlen, "%s: %s (blocked by a device cgroup or security policy)",
			 path, strerror(e));
	else if (e == EBUSY)
		snprintf(err, errlen, "%s: device is busy (mounted or held); refusing to open it",
			 path);
	else
		snprintf(err, errlen, "%s: %s", path, strerror(e));
	return -e;
}

static int open_sim(struct dg_device *dev, const char *path, struct dg_warnings *warnings,
		    char *err, size_t errlen)
{
	const char *what = path + 4;
	struct dg_device_info *info = &dev->info;

	if (!*what) {
		snprintf(err, errlen,
			 "%s: name a built-in drive or a spec file (sim:NAME, sim:PATH)", path);
		return -EINVAL;
	}
	int rc = dg_spec_load(what, &dev->spec, warnings, err, errlen);
	if (rc)
		return rc;
	info->kind = DG_DEVICE_SIM;
	info->size_bytes = dg_spec_capacity_bytes(dev->spec);
	info->logical_sector_bytes = dg_spec_sector_bytes(dev->spec);
	/* a 512e drive says so, as a SATA drive does (drive model v2) */
	info->physical_sector_bytes = dg_spec_physical_sector_bytes(dev->spec);
	info->rotational = 1;
	dg_dev_copy(info->name, sizeof(info->name), dg_spec_name(dev->spec));
	dg_dev_copy(info->model, sizeof(info->model), dg_spec_name(dev->spec));
	dg_dev_copy(info->transport, sizeof(info->transport), "sim");
	dg_dev_copy(info->zoned, sizeof(info->zoned), "none");
	return 0;
}

/* Regular files: size from st_size; the logical sector is what O_DIRECT needs (the underlying
 * disk's, else 512), the physical one the file system's preferred I/O size. */
static int probe_file(struct dg_device *dev, const struct stat *st, char *err, size_t errlen)
{
	struct dg_device_info *info = &dev->info;

	if (st->st_size <= 0) {
		snprintf(err, errlen, "%s: is empty", info->path);
		return -EINVAL;
	}
	info->kind = DG_DEVICE_FILE;
	info->size_bytes = (uint64_t)st->st_size;
	info->file_blksize = (uint32_t)st->st_blksize;
	uint32_t lbs = dg_dev_fs_logical_block(st->st_dev);
	info->logical_sector_bytes = pow2_in(lbs, 512, 65536) ? lbs : 512;
	info->physical_sector_bytes =
	    pow2_in((uint64_t)st->st_blksize, info->logical_sector_bytes, 1u << 20)
		? (uint32_t)st->st_blksize
		: info->logical_sector_bytes;
	/* O_DIRECT reads whole sectors: a file shorter than one has nothing to read. */
	if (info->size_bytes < info->logical_sector_bytes) {
		snprintf(err, errlen, "%s: is smaller than one %u-byte sector (%" PRIu64 " bytes)",
			 info->path, info->logical_sector_bytes, info->size_bytes);
		return -EINVAL;
	}
	return 0;
}

/* Block devices: the kernel's own figures by ioctl (BLKGETSIZE64 etc., linux/fs.h). */
static int probe_block(struct dg_device *dev, char *err, size_t errlen)
{
	struct dg_device_info *info = &dev->info;
	uint64_t size = 0;
	int lbs = 0, align = 0;
	unsigned int pbs = 0;

	info->kind = DG_DEVICE_BLOCK;
	if (ioctl(dev->fd, BLKGETSIZE64, &size) || ioctl(dev->fd, BLKSSZGET, &lbs))
		return open_error(errno, info->path, err, errlen);
	if (ioctl(dev->fd, BLKPBSZGET, &pbs))
		pbs = (unsigned)lbs;
	if (ioctl(dev->fd, BLKALIGNOFF, &align) || align < 0)
		align = 0;
	if (!size) {
		snprintf(err, errlen, "%s: has no media (size 0; an unattached loop device?)",
			 info->path);
		return -ENOMEDIUM;
	}
	info->size_bytes = size;
	info->logical_sector_bytes = (uint32_t)lbs;
	info->physical_sector_bytes = pbs;
	info->alignment_offset_bytes = (uint32_t)align;
	return 0;
}

/* The conditions that can mislead a measurement, one sentence each. */
static void add_warnings(const struct dg_device *dev, unsigned flags, bool buffered,
			 struct dg_warnings *w)
{
	const struct dg_device_info *info = &dev->info;

	if (!w)
		return;
	if (info->kind == DG_DEVICE_FILE)
		dg_warnings_add(w,
				"%s is a regular file: a file system sits between diskgeo and the "
				"disk, so its layout and caching shape what is measured",
				info->path);
	if (buffered)
		dg_warnings_add(w,
				"%s: the file system refused O_DIRECT; reads go through the page "
				"cache (read-ahead %u KiB) and may measure memory, not the disk",
				info->path, info->read_ahead_kb);
	if (info->is_partition)
		dg_warnings_add(
		    w,
		    "%s is a partition of %s starting at byte %llu: offsets are relative "
		    "to it and the curve covers only this part of the disk",
		    info->path, info->whole_disk, (unsigned long long)info->partition_start_bytes);
	if (info->rotational == 0)
		dg_warnings_add(w, "non-rotational device: the bandwidth curve will be flat and "
				   "there is no seek curve");
	if (info->zoned[0] && strcmp(info->zoned, "none"))
		dg_warnings_add(w,
				"zoned device (%s): sequential-write zones; reads of unwritten "
				"zones may not touch the media",
				info->zoned);
	if (info->rotational == 1 && info->discard && info->kind == DG_DEVICE_BLOCK &&
	    strcmp(info->transport, "loop"))
		dg_warnings_add(w, "a rotational disk that accepts discard may be drive-managed "
				   "SMR: its rates can change as its cache fills");
	if (!strcmp(info->transport, "usb"))
		dg_warnings_add(w, "USB transport: the bridge may cap the outer-zone rate");
	if (info->mounted)
		dg_warnings_add(w,
				"%s is mounted (or one of its partitions is): file system I/O can "
				"disturb the measurement",
				info->path);
	if (info->has_holders)
		dg_warnings_add(w,
				"%s has holders (device-mapper, RAID, ...): their I/O can disturb "
				"the measurement",
				info->path);
	/* Reads bypass the kernel's read-ahead (O_DIRECT) and the drive's cache is defeated by
	 * the method; a write curve depends on the drive's write cache. */
	if ((flags & DG_DEVICE_WRITE) && info->write_cache == 1)
		dg_warnings_add(w,
				"%s: the write cache is on (write back): the first MiBs of "
				"each write sample may land in the cache and read high",
				info->path);
	if ((flags & DG_DEVICE_WRITE) && info->write_cache == 0)
		dg_warnings_add(w,
				"%s: the write cache is off (write through): every write "
				"waits for the media, and the write curve sits far below the "
				"read curve",
				info->path);
}

/* The same object: a block device by st_rdev, a regular file by st_dev and st_ino. */
static bool same_object(const struct stat *a, const struct stat *b)
{
	if ((a->st_mode & S_IFMT) != (b->st_mode & S_IFMT))
		return false;
	if (S_ISBLK(a->st_mode))
		return a->st_rdev == b->st_rdev;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/*
 * Opens the object behind descriptor `from` again with `oflags`, through /proc/self/fd (the path
 * is not resolved again), and checks that the new descriptor is `want`. When /proc is missing,
 * a read-only open falls back to `path` (NULL: no fallback), still checked against `want`.
 * Returns the descriptor, or -errno (-ESTALE: another object).
 */
static int reopen(int from, const char *path, int oflags, const struct stat *want)
{
	char link[64];
	struct stat st;
	int fd;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", from);
	fd = open(link, oflags);
	if (fd < 0 && errno == ENOENT && path && !(oflags & (O_RDWR | O_WRONLY)))
		fd = open(path, oflags);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !same_object(&st, want)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* The immutable or append-only flag of a regular file, the reason root's write open fails with
 * EPERM (chattr(1)); NULL when neither is set. */
static const char *file_attr_block(int from, const struct stat *st)
{
	int fd, attr = 0;
	const char *why = NULL;

	fd = reopen(from, NULL, O_RDONLY | O_CLOEXEC | O_NONBLOCK, st);
	if (fd < 0)
		return NULL;
	if (!ioctl(fd, FS_IOC_GETFLAGS, &attr)) {
		if (attr & FS_IMMUTABLE_FL)
			why = "the file is immutable; 'chattr -i' clears the flag";
		else if (attr & FS_APPEND_FL)
			why = "the file is append-only; 'chattr -a' clears the flag";
	}
	close(fd);
	return why;
}

/*
 * Opens the object behind the descriptor `from` (O_PATH, or any open descriptor) for `dev`,
 * whose info.path names it in messages: type checks, the write guard, the open itself through
 * /proc/self/fd and the probe. `path` allows the read-only fallback of reopen().
 */
static int open_object(struct dg_device *dev, int from, const char *path, unsigned flags,
		       bool *buffered, char *err, size_t errlen)
{
	const char *name = dev->info.path;
	struct stat st;
	int rc, fd;

	if (fstat(from, &st))
		return open_error(errno, name, err, errlen);
	if (S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: is a directory", name);
		return -EISDIR;
	}
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a block device or regular file", name);
		return -ENOTBLK;
	}
	if (S_ISBLK(st.st_mode))
		dg_dev_probe_sysfs(st.st_rdev, &dev->info);
	if (flags & DG_DEVICE_WRITE) {
		rc = dg_dev_guard_check(name, &st, err, errlen);
		if (rc)
			return rc;
	}

	int oflags = ((flags & DG_DEVICE_WRITE) ? O_RDWR : O_RDONLY) | O_CLOEXEC;
	if ((flags & DG_DEVICE_WRITE) && S_ISBLK(st.st_mode))
		oflags |= O_EXCL; /* on a block device: fails if anyone else holds it (open(2)) */
	fd = reopen(from, path, oflags | O_DIRECT, &st);
	if (fd == -EINVAL && S_ISREG(st.st_mode)) {
		/* tmpfs and some FUSE file systems refuse O_DIRECT: measure anyway, but say so. */
		fd = reopen(from, path, oflags, &st);
		*buffered = true;
	}
	if (fd == -ESTALE) {
		snprintf(err, errlen, "%s: changed while it was being opened; not opened", name);
		return -ESTALE;
	}
	if (fd == -EPERM && (flags & DG_DEVICE_WRITE) && S_ISREG(st.st_mode)) {
		const char *why = file_attr_block(from, &st);
		if (why) {
			snprintf(err, errlen, "%s: %s (%s)", name, strerror(EPERM), why);
			return -EPERM;
		}
	}
	if (fd < 0)
		return open_error(-fd, name, err, errlen);
	dev->fd = fd;
	if (S_ISBLK(st.st_mode))
		dev->info.rdev = (uint64_t)st.st_rdev;
	else {
		dev->info.file_dev = (uint64_t)st.st_dev;
		dev->info.file_ino = (uint64_t)st.st_ino;
	}
	return S_ISBLK(st.st_mode) ? probe_block(dev, err, errlen)
				   : probe_file(dev, &st, err, errlen);
}

/* A fresh device handle for `path` (not opened yet); NULL with `err` filled on failure. */
static struct dg_device *device_new(const char *path, char *err, size_t errlen, int *rc)
{
	struct dg_device *dev;

	if (!path || !*path) {
		snprintf(err, errlen, "no device given");
		*rc = -EINVAL;
		return NULL;
	}
	if (strlen(path) >= sizeof(dev->info.path)) {
		snprintf(err, errlen, "device path too long");
		*rc = -ENAMETOOLONG;
		return NULL;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		snprintf(err, errlen, "%s: %s", path, strerror(ENOMEM));
		*rc = -ENOMEM;
		return NULL;
	}
	dev->fd = -1;
	dev->info.rotational = -1;
	dev->info.write_cache = -1;
	dg_dev_copy(dev->info.path, sizeof(dev->info.path), path);
	return dev;
}

int dg_device_open(const char *path, unsigned flags, struct dg_device **out,
		   struct dg_warnings *warnings, char *err, size_t errlen)
{
	struct dg_device *dev;
	bool buffered = false;
	int rc = 0, from;

	*out = NULL;
	dev = device_new(path, err, errlen, &rc);
	if (!dev)
		return rc;
	if (!strncmp(path, "sim:", 4)) {
		rc = open_sim(dev, path, warnings, err, errlen);
		if (rc)
			goto err;
		goto done;
	}
	/* The path is resolved once, here: every later open goes through this descriptor. An
	 * O_PATH open neither blocks on a FIFO nor wakes a device's driver. */
	from = open(path, O_PATH | O_CLOEXEC);
	if (from < 0) {
		rc = open_error(errno, path, err, errlen);
		goto err;
	}
	rc = open_object(dev, from, path, flags, &buffered, err, errlen);
	close(from);
	if (rc)
		goto err;
done:
	add_warnings(dev, flags, buffered, warnings);
	*out = dev;
	return 0;
err:
	dg_device_close(dev);
	return rc;
}

int dg_device_reopen(const struct dg_device *old, unsigned flags, struct dg_device **out,
		     struct dg_warnings *warnings, char *err, size_t errlen)
{
	struct dg_device *dev;
	bool buffered = false;
	int rc = 0;

	*out = NULL;
	if (old->info.kind == DG_DEVICE_SIM)
		return dg_device_open(old->info.path, flags, out, warnings, err, errlen);
	dev = device_new(old->info.path, err, errlen, &rc);
	if (!dev)
		return rc;
	rc = open_object(dev, old->fd, NULL, flags, &buffered, err, errlen);
	if (rc) {
		dg_device_close(dev);
		return rc;
	}
	add_warnings(dev, flags, buffered, warnings);
	*out = dev;
	return 0;
}

bool dg_device_same(const struct dg_device *a, const struct dg_device *b)
{
	const struct dg_device_info *x = &a->info, *y = &b->info;

	if (x->kind != y->kind)
		return false;
	if (x->kind == DG_DEVICE_SIM)
		return !strcmp(x->name, y->name);
	if (x->kind == DG_DEVICE_BLOCK)
		return x->rdev == y->rdev;
	return x->file_dev == y->file_dev && x->file_ino == y->file_ino;
}

void dg_device_close(struct dg_device *dev)
{
	if (!dev)
		return;
	if (dev->fd >= 0)
		close(dev->fd);
	dg_spec_free(dev->spec);
	free(dev);
}

const struct dg_device_info *dg_device_info(const struct dg_device *dev)
{
	return &dev->info;
}

int dg_device_fd(const struct dg_device *dev)
{
	return dev->fd;
}

const struct dg_spec *dg_device_spec(const struct dg_device *dev)
{
	return dev->spec;
}
