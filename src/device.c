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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "diskgeo/device.h"
#include "diskgeo/model.h"

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
	if ((unsigned)kind >= sizeof(kind_names) / sizeof(kind_names[0]))
		return "unknown";
	return kind_names[kind];
}

/* Copies a string, truncating it to fit `size` (sysfs strings are short; paths are checked). */
static void copy(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* ---- sysfs ---- */

/*
 * Reads a small sysfs attribute at `rel` under the directory `dfd` into buf, NUL-terminated,
 * with surrounding white space removed. Returns the length, or -errno. `raw` keeps the bytes as
 * they are (binary VPD pages).
 */
static ssize_t read_attr(int dfd, const char *rel, char *buf, size_t size, bool raw)
{
	int fd = openat(dfd, rel, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return n;
	buf[n] = '\0';
	if (raw)
		return n;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		buf[--n] = '\0';
	size_t lead = strspn(buf, " \t");
	memmove(buf, buf + lead, (size_t)n - lead + 1);
	return n - (ssize_t)lead;
}

enum attr_type {
	AT_STR,		/* text, copied */
	AT_U32,		/* decimal number */
	AT_INT01,	/* "0" / "1" into an int (rotational) */
	AT_BRACKET,	/* "none [mq-deadline] kyber": the bracketed one is active */
	AT_NONZERO,	/* a number > 0 into a bool (discard_max_bytes) */
	AT_WRITE_CACHE, /* "write back" 1, "write through" 0 */
	AT_VPD80,	/* SCSI VPD page 0x80, the unit serial number (SPC-4 7.8.15) */
};

/* What sysfs says about a whole disk, relative to its directory, tried in order: the first entry
 * that yields a value for a field wins (so later rows are fallbacks). */
static const struct sysfs_attr {
	const char *rel;
	enum attr_type type;
	size_t off;
	size_t size;
} disk_attrs[] = {
#define F(field) offsetof(struct dg_device_info, field), sizeof(((struct dg_device_info *)0)->field)
    {"queue/rotational", AT_INT01, F(rotational)},
    {"queue/zoned", AT_STR, F(zoned)},
    {"queue/max_sectors_kb", AT_U32, F(max_sectors_kb)},
    {"queue/read_ahead_kb", AT_U32, F(read_ahead_kb)},
    {"bdi/read_ahead_kb", AT_U32, F(read_ahead_kb)},
    {"queue/scheduler", AT_BRACKET, F(scheduler)},
    {"queue/discard_max_bytes", AT_NONZERO, F(discard)},
    {"queue/write_cache", AT_WRITE_CACHE, F(write_cache)},
    {"device/vendor", AT_STR, F(vendor)},
    {"device/model", AT_STR, F(model)},
    {"device/serial", AT_STR, F(serial)},
    {"serial", AT_STR, F(serial)},
    {"device/vpd_pg80", AT_VPD80, F(serial)},
    {"device/wwid", AT_STR, F(serial)},
    {"wwid", AT_STR, F(serial)},
    {"device/rev", AT_STR, F(firmware)},
    {"device/firmware_rev", AT_STR, F(firmware)},
    {"loop/backing_file", AT_STR, F(loop_backing_file)},
#undef F
};

/* Decodes one attribute into its field. Returns 0, or -ENODATA when the text says nothing. */
static int decode_attr(const struct sysfs_attr *a, char *text, ssize_t n, void *field)
{
	unsigned long long v;
	char *end;

	switch (a->type) {
	case AT_STR:
		if (!n)
			return -ENODATA;
		copy(field, a->size, text);
		return 0;
	case AT_U32:
	case AT_INT01:
	case AT_NONZERO:
		errno = 0;
		v = strtoull(text, &end, 10);
		if (errno || end == text || *end)
			return -ENODATA;
		if (a->type == AT_U32)
			*(uint32_t *)field = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
		else if (a->type == AT_INT01)
			*(int *)field = v != 0;
		else
			*(bool *)field = v != 0;
		return 0;
	case AT_BRACKET: {
		char *open = strchr(text, '['), *close = open ? strchr(open, ']') : NULL;
		if (open && close) {
			*close = '\0';
			copy(field, a->size, open + 1);
		} else if (n && !strchr(text, ' ')) {
			copy(field, a->size, text); /* a single scheduler is shown bare */
		} else {
			return -ENODATA;
		}
		return 0;
	}
	case AT_WRITE_CACHE:
		if (!strcmp(text, "write back"))
			*(int *)field = 1;
		else if (!strcmp(text, "write through"))
			*(int *)field = 0;
		else
			return -ENODATA;
		return 0;
	case AT_VPD80: {
		const unsigned char *p = (const unsigned char *)text;
		if (n < 4 || p[1] != 0x80)
			return -ENODATA;
		size_t len = ((size_t)p[2] << 8) | p[3];
		if (len > (size_t)n - 4)
			len = (size_t)n - 4;
		char serial[256];
		if (len >= sizeof(serial))
			len = sizeof(serial) - 1;
		memcpy(serial, p + 4, len);
		serial[len] = '\0';
		char *s = serial + strspn(serial, " ");
		size_t sl = strlen(s);
		while (sl && s[sl - 1] == ' ')
			s[--sl] = '\0';
		if (!sl)
			return -ENODATA;
		copy(field, a->size, s);
		return 0;
	}
	}
	return -ENODATA;
}

static void read_disk_attrs(int dfd, struct dg_device_info *info)
{
	const size_t n = sizeof(disk_attrs) / sizeof(disk_attrs[0]);
	bool done[sizeof(disk_attrs) / sizeof(disk_attrs[0])] = {false};
	char text[4096];

	for (size_t i = 0; i < n; i++) {
		const struct sysfs_attr *a = &disk_attrs[i];
		bool filled = false;
		for (size_t j = 0; j < i; j++)
			filled |= done[j] && disk_attrs[j].off == a->off;
		if (filled)
			continue;
		ssize_t len = read_attr(dfd, a->rel, text, sizeof(text), a->type == AT_VPD80);
		if (len < 0)
			continue;
		done[i] = decode_attr(a, text, len, (char *)info + a->off) == 0;
	}
}

/* Transport from the components of the device's sysfs path, first match wins: a USB bridge
 * shows as usb even though a SCSI host and target sit below it. */
static const struct {
	const char *prefix; /* a path component starting with this */
	const char *transport;
} transports[] = {
    {"usb", "usb"},  {"nvme", "nvme"},	     {"mmc", "mmc"},  {"virtio", "virtio"},
    {"ata", "sata"}, {"end_device-", "sas"}, {"vbd-", "xen"}, {"loop", "loop"},
    {"nbd", "nbd"},  {"dm-", "dm"},	     {"md", "md"},    {"zram", "zram"},
    {"ram", "ram"},  {"target", "scsi"},
};

static void detect_transport(const char *syspath, char *out, size_t size)
{
	for (size_t t = 0; t < sizeof(transports) / sizeof(transports[0]); t++) {
		size_t plen = strlen(transports[t].prefix);
		for (const char *c = syspath; c && *c; c = strchr(c, '/')) {
			c += *c == '/';
			if (!strncmp(c, transports[t].prefix, plen)) {
				copy(out, size, transports[t].transport);
				return;
			}
		}
	}
	if (strstr(syspath, "/devices/virtual/"))
		copy(out, size, "virtual");
}

/* A device number and whether it is one of `devs`. */
static bool dev_in(dev_t d, const dev_t *devs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (devs[i] == d)
			return true;
	return false;
}

/* True when /proc/self/mountinfo lists one of `devs` (field 3 is MAJ:MIN, proc(5)). */
static bool any_mounted(const dev_t *devs, size_t n)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		if (sscanf(line, "%*u %*u %u:%u", &maj, &min) == 2)
			found = dev_in(makedev(maj, min), devs, n);
	}
	fclose(f);
	return found;
}

/* True when the directory `rel` under `dfd` has an entry other than . and .. */
static bool dir_nonempty(int dfd, const char *rel)
{
	int fd = openat(dfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool any = false;

	if (fd < 0)
		return false;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return false;
	}
	for (struct dirent *e; !any && (e = readdir(d));)
		any = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return any;
}

/* Reads a "MAJ:MIN" `dev` attribute. */
static int read_devno(int dfd, const char *rel, dev_t *out)
{
	char text[64];
	unsigned maj, min;

	if (read_attr(dfd, rel, text, sizeof(text), false) < 0)
		return -ENOENT;
	if (sscanf(text, "%u:%u", &maj, &min) != 2)
		return -EINVAL;
	*out = makedev(maj, min);
	return 0;
}

/*
 * Mounted and holders of the device and, for a whole disk, of each of its partitions (a
 * partition is a subdirectory holding a `partition` file).
 */
static void probe_usage(int disk_dfd, int dev_dfd, dev_t self, bool whole,
			struct dg_device_info *info)
{
	dev_t devs[256];
	size_t n = 0;

	devs[n++] = self;
	info->has_holders = dir_nonempty(dev_dfd, "holders");
	if (whole) {
		int fd = openat(disk_dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d && fd >= 0)
			close(fd);
		for (struct dirent *e; d && (e = readdir(d));) {
			char rel[NAME_MAX + 16];
			struct stat st;
			if (e->d_name[0] == '.')
				continue;
			snprintf(rel, sizeof(rel), "%s/partition", e->d_name);
			if (fstatat(disk_dfd, rel, &st, 0))
				continue;
			snprintf(rel, sizeof(rel), "%s/holders", e->d_name);
			info->has_holders |= dir_nonempty(disk_dfd, rel);
			snprintf(rel, sizeof(rel), "%s/dev", e->d_name);
			if (n < sizeof(devs) / sizeof(devs[0]) &&
			    !read_devno(disk_dfd, rel, &devs[n]))
				n++;
		}
		if (d)
			closedir(d);
	}
	info->mounted = any_mounted(devs, n);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/*
 * Resolves /sys/dev/block/MAJ:MIN. On success *dev_dfd is the device's own directory and
 * *disk_dfd its whole disk's (the same device for a whole disk, the parent for a partition), and
 * `resolved` holds the real path. Returns 0 or -errno.
 */
static int sysfs_open(dev_t rdev, char *resolved, int *dev_dfd, int *disk_dfd, bool *partition)
{
	char link[64];
	struct stat st;

	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(rdev), minor(rdev));
	if (!realpath(link, resolved))
		return -errno;
	*dev_dfd = open(resolved, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*dev_dfd < 0)
		return -errno;
	*partition = fstatat(*dev_dfd, "partition", &st, 0) == 0;
	*disk_dfd =
	    *partition ? openat(*dev_dfd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : dup(*dev_dfd);
	if (*disk_dfd < 0) {
		int rc = -errno;
		close(*dev_dfd);
		return rc;
	}
	return 0;
}

/* Everything sysfs knows about the block device `rdev`. Missing attributes stay unknown. */
static void probe_sysfs(dev_t rdev, struct dg_device_info *info)
{
	char resolved[PATH_MAX], text[64];
	int dev_dfd, disk_dfd;
	bool partition;

	if (sysfs_open(rdev, resolved, &dev_dfd, &disk_dfd, &partition))
		return;
	copy(info->name, sizeof(info->name), base_name(resolved));
	info->is_partition = partition;
	if (partition) {
		char *slash = strrchr(resolved, '/');
		*slash = '\0';
		copy(info->whole_disk, sizeof(info->whole_disk), base_name(resolved));
		*slash = '/';
		/* `start` counts 512-byte units whatever the sector size (sysfs-block ABI). */
		if (read_attr(dev_dfd, "start", text, sizeof(text), false) > 0)
			info->partition_start_bytes = strtoull(text, NULL, 10) * 512;
	}
	read_disk_attrs(disk_dfd, info);
	detect_transport(resolved, info->transport, sizeof(info->transport));
	probe_usage(disk_dfd, dev_dfd, rdev, !partition, info);
	close(dev_dfd);
	close(disk_dfd);
}

/* The logical block size of the disk holding file system `st_dev`, or 0 when sysfs does not
 * know (tmpfs, overlay, network file systems). O_DIRECT needs I/O aligned to it. */
static uint32_t fs_logical_block(dev_t st_dev)
{
	char resolved[PATH_MAX], text[32];
	int dev_dfd, disk_dfd;
	bool partition;
	uint32_t lbs = 0;

	if (sysfs_open(st_dev, resolved, &dev_dfd, &disk_dfd, &partition))
		return 0;
	if (read_attr(disk_dfd, "queue/logical_block_size", text, sizeof(text), false) > 0)
		lbs = (uint32_t)strtoul(text, NULL, 10);
	close(dev_dfd);
	close(disk_dfd);
	return lbs;
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
	copy(info->name, sizeof(info->name), dg_spec_name(dev->spec));
	copy(info->model, sizeof(info->model), dg_spec_name(dev->spec));
	copy(info->transport, sizeof(info->transport), "sim");
	copy(info->zoned, sizeof(info->zoned), "none");
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
	uint32_t lbs = fs_logical_block(st->st_dev);
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

int dg_device_open(const char *path, unsigned flags, struct dg_device **out,
		   struct dg_warnings *warnings, char *err, size_t errlen)
{
	struct dg_device *dev;
	struct stat st;
	bool buffered = false;
	int rc;

	*out = NULL;
	if (!path || !*path) {
		snprintf(err, errlen, "no device given");
		return -EINVAL;
	}
	if (strlen(path) >= sizeof(dev->info.path)) {
		snprintf(err, errlen, "device path too long");
		return -ENAMETOOLONG;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		snprintf(err, errlen, "%s: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	dev->fd = -1;
	dev->info.rotational = -1;
	dev->info.write_cache = -1;
	copy(dev->info.path, sizeof(dev->info.path), path);

	if (!strncmp(path, "sim:", 4)) {
		rc = open_sim(dev, path, warnings, err, errlen);
		if (rc)
			goto err;
		goto done;
	}

	if (stat(path, &st)) {
		rc = open_error(errno, path, err, errlen);
		goto err;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: is a directory", path);
		rc = -EISDIR;
		goto err;
	}
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a block device or regular file", path);
		rc = -ENOTBLK;
		goto err;
	}
	if (S_ISBLK(st.st_mode)) {
		probe_sysfs(st.st_rdev, &dev->info);
		if ((flags & DG_DEVICE_WRITE) && (dev->info.mounted || dev->info.has_holders)) {
			snprintf(err, errlen, "%s: is %s; refusing to write to it", path,
				 dev->info.mounted ? "mounted" : "in use by another device");
			rc = -EBUSY;
			goto err;
		}
	}

	int oflags = ((flags & DG_DEVICE_WRITE) ? O_RDWR : O_RDONLY) | O_CLOEXEC;
	if ((flags & DG_DEVICE_WRITE) && S_ISBLK(st.st_mode))
		oflags |= O_EXCL; /* on a block device: fails if anyone else holds it (open(2)) */
	dev->fd = open(path, oflags | O_DIRECT);
	if (dev->fd < 0 && errno == EINVAL && S_ISREG(st.st_mode)) {
		/* tmpfs and some FUSE file systems refuse O_DIRECT: measure anyway, but say so. */
		dev->fd = open(path, oflags);
		buffered = true;
	}
	if (dev->fd < 0) {
		rc = open_error(errno, path, err, errlen);
		goto err;
	}
	if (fstat(dev->fd, &st)) { /* the object actually opened */
		rc = open_error(errno, path, err, errlen);
		goto err;
	}
	rc =
	    S_ISBLK(st.st_mode) ? probe_block(dev, err, errlen) : probe_file(dev, &st, err, errlen);
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
