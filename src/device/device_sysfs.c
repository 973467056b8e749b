/* SPDX-License-Identifier: MIT */
/*
 * Probing a block device through sysfs, the way lsblk does it: a small table of attributes under
 * /sys/dev/block/MAJ:MIN (util-linux lib/sysfs.c; Documentation/ABI/stable/sysfs-block), the
 * transport, and whether it or a partition of it is mounted or held. Split out of device.c
 * (issue 11).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "diskgeo/device.h"
#include "device_priv.h"
#include "util.h"

/* ---- sysfs ---- */

/*
 * Reads a small sysfs attribute at `rel` under the directory `dfd` into buf, NUL-terminated,
 * with surrounding white space removed. Returns the length, or -errno. `raw` keeps the bytes as
 * they are (binary VPD pages).
 */
ssize_t dg_dev_read_attr(int dfd, const char *rel, char *buf, size_t size, bool raw)
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
		dg_dev_copy(field, a->size, text);
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
			dg_dev_copy(field, a->size, open + 1);
		} else if (n && !strchr(text, ' ')) {
			dg_dev_copy(field, a->size, text); /* a single scheduler is shown bare */
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
		dg_dev_copy(field, a->size, s);
		return 0;
	}
	}
	return -ENODATA;
}

static void read_disk_attrs(int dfd, struct dg_device_info *info)
{
	const size_t n = ARRAY_SIZE(disk_attrs);
	bool done[ARRAY_SIZE(disk_attrs)] = {false};
	char text[4096];

	for (size_t i = 0; i < n; i++) {
		const struct sysfs_attr *a = &disk_attrs[i];
		bool filled = false;
		for (size_t j = 0; j < i; j++)
			filled |= done[j] && disk_attrs[j].off == a->off;
		if (filled)
			continue;
		ssize_t len =
		    dg_dev_read_attr(dfd, a->rel, text, sizeof(text), a->type == AT_VPD80);
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
	for (size_t t = 0; t < ARRAY_SIZE(transports); t++) {
		size_t plen = strlen(transports[t].prefix);
		for (const char *c = syspath; c && *c; c = strchr(c, '/')) {
			c += *c == '/';
			if (!strncmp(c, transports[t].prefix, plen)) {
				dg_dev_copy(out, size, transports[t].transport);
				return;
			}
		}
	}
	if (strstr(syspath, "/devices/virtual/"))
		dg_dev_copy(out, size, "virtual");
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
int dg_dev_read_devno(int dfd, const char *rel, dev_t *out)
{
	char text[64];
	unsigned maj, min;

	if (dg_dev_read_attr(dfd, rel, text, sizeof(text), false) < 0)
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
			if (n < ARRAY_SIZE(devs) && !dg_dev_read_devno(disk_dfd, rel, &devs[n]))
				n++;
		}
		if (d)
			closedir(d);
	}
	info->mounted = any_mounted(devs, n);
}

const char *dg_dev_base_name(const char *path)
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
void dg_dev_probe_sysfs(dev_t rdev, struct dg_device_info *info)
{
	char resolved[PATH_MAX], text[64];
	int dev_dfd = -1, disk_dfd = -1;
	bool partition = false;

	if (sysfs_open(rdev, resolved, &dev_dfd, &disk_dfd, &partition))
		return;
	dg_dev_copy(info->name, sizeof(info->name), dg_dev_base_name(resolved));
	info->is_partition = partition;
	if (partition) {
		char *slash = strrchr(resolved, '/');
		*slash = '\0';
		dg_dev_copy(info->whole_disk, sizeof(info->whole_disk), dg_dev_base_name(resolved));
		*slash = '/';
		/* `start` counts 512-byte units whatever the sector size (sysfs-block ABI). */
		if (dg_dev_read_attr(dev_dfd, "start", text, sizeof(text), false) > 0)
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
uint32_t dg_dev_fs_logical_block(dev_t st_dev)
{
	char resolved[PATH_MAX], text[32];
	int dev_dfd, disk_dfd;
	bool partition;
	uint32_t lbs = 0;

	if (sysfs_open(st_dev, resolved, &dev_dfd, &disk_dfd, &partition))
		return 0;
	if (dg_dev_read_attr(disk_dfd, "queue/logical_block_size", text, sizeof(text), false) > 0)
		lbs = (uint32_t)strtoul(text, NULL, 10);
	close(dev_dfd);
	close(disk_dfd);
	return lbs;
}
