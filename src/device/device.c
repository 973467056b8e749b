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
	for (size_t t = 0; t < ARRAY_SIZE(transports); t++) {
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
			if (n < ARRAY_SIZE(devs) && !read_devno(disk_dfd, rel, &devs[n]))
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

/* ---- the write guard: everything that shares the target's storage ---- */

/*
 * The objects whose data overlaps the target's: what is built on it (holders, partitions of a
 * whole disk, loop devices over it, and so on up), what it is built on (slaves, a loop device's
 * backing file or device, the whole disk of a partition, and so on down) and the loop devices
 * over each of those. A partition's siblings and an LVM volume's neighbours do not overlap it and
 * are left out. Each object remembers how it was reached, for the refusal's line.
 */
enum rel {
	REL_TARGET,
	REL_HOLDER,    /* stacked on its parent (device-mapper, RAID): holders/ in sysfs */
	REL_PARTITION, /* a partition of its parent */
	REL_LOOP,      /* a loop device over its parent (a file or a block device) */
	REL_SLAVE,     /* under its parent: slaves/ in sysfs */
	REL_BACKING,   /* the file or device behind its parent, a loop device */
	REL_WHOLE,     /* the whole disk of its parent, a partition */
};

static const char *const rel_text[] = {
    [REL_TARGET] = "",
    [REL_HOLDER] = "stacked on",
    [REL_PARTITION] = "a partition of",
    [REL_LOOP] = "a loop device over",
    [REL_SLAVE] = "a device under",
    [REL_BACKING] = "behind",
    [REL_WHOLE] = "the whole disk of",
};

#define GUARD_MAX_NODES 128
#define GUARD_MAX_LOOPS 1024

struct node {
	bool blk; /* a block device (rdev), else a regular file (dev, ino) */
	dev_t rdev, dev;
	ino_t ino;
	bool up; /* built on the target: everything on it is expanded, and it gets the O_EXCL probe
		  */
	int parent;
	enum rel rel;
	char label[PATH_MAX];
};

struct loop {
	dev_t rdev;
	char name[NAME_MAX + 1];
	bool back_blk;
	dev_t back_rdev, back_dev;
	ino_t back_ino;
	char back_path[PATH_MAX];
};

struct guard {
	struct node nodes[GUARD_MAX_NODES];
	size_t n;
	struct loop *loops;
	size_t nloops;
};

static bool node_is(const struct node *x, bool blk, dev_t rdev, dev_t dev, ino_t ino)
{
	return x->blk == blk && (blk ? x->rdev == rdev : x->dev == dev && x->ino == ino);
}

/* The kernel name of block device `d` ("loop4", "sdb1"), or "" when sysfs does not know it. */
static void block_name(dev_t d, char *name, size_t size)
{
	char link[64], resolved[PATH_MAX];

	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(d), minor(d));
	if (realpath(link, resolved))
		copy(name, size, base_name(resolved));
	else
		copy(name, size, "");
}

/* Adds an object unless it is there already. Returns its index, or -1 (known, or no room). */
static int guard_add(struct guard *g, bool blk, dev_t rdev, dev_t dev, ino_t ino, int parent,
		     enum rel rel, bool up, const char *label)
{
	for (size_t i = 0; i < g->n; i++)
		if (node_is(&g->nodes[i], blk, rdev, dev, ino))
			return -1;
	if (g->n == GUARD_MAX_NODES)
		return -1;
	struct node *x = &g->nodes[g->n];
	memset(x, 0, sizeof(*x));
	x->blk = blk;
	x->rdev = rdev;
	x->dev = dev;
	x->ino = ino;
	x->parent = parent;
	x->rel = rel;
	x->up = up;
	if (label) {
		copy(x->label, sizeof(x->label), label);
	} else {
		char name[NAME_MAX + 1];
		block_name(rdev, name, sizeof(name));
		if (name[0])
			snprintf(x->label, sizeof(x->label), "/dev/%s", name);
		else
			snprintf(x->label, sizeof(x->label), "block device %u:%u", major(rdev),
				 minor(rdev));
	}
	return (int)g->n++;
}

static void guard_add_blk(struct guard *g, dev_t rdev, int parent, enum rel rel, bool up)
{
	guard_add(g, true, rdev, 0, 0, parent, rel, up, NULL);
}

/* True when the loop device whose sysfs directory is `dfd` detaches itself on its last close
 * (LO_FLAGS_AUTOCLEAR): opening and closing it would detach it. */
static bool autoclear(int dfd)
{
	char text[8];

	return read_attr(dfd, "loop/autoclear", text, sizeof(text), false) > 0 &&
	       !strcmp(text, "1");
}

/*
 * What a bound loop device is backed by: LOOP_GET_STATUS64 gives the backing object's st_dev,
 * st_ino and st_rdev exactly (loop(4)); without a usable /dev node, the path in sysfs
 * loop/backing_file is stat'ed instead. Returns 0 or -errno.
 */
static int loop_backing(struct loop *l, int sys_dfd)
{
	char node[NAME_MAX + 8];
	struct loop_info64 li;
	struct stat st;
	ssize_t n;

	n = read_attr(sys_dfd, "loop/backing_file", l->back_path, sizeof(l->back_path), false);
	if (n <= 0)
		return -ENOENT; /* not bound */
	snprintf(node, sizeof(node), "/dev/%s", l->name);
	/* An autoclear loop device nobody holds is detached by the last close: never opened. */
	int fd = autoclear(sys_dfd) ? -1 : open(node, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		int ok = !fstat(fd, &st) && S_ISBLK(st.st_mode) && st.st_rdev == l->rdev &&
			 !ioctl(fd, LOOP_GET_STATUS64, &li);
		close(fd);
		if (ok) {
			l->back_blk = li.lo_rdevice != 0;
			l->back_rdev = (dev_t)li.lo_rdevice;
			l->back_dev = (dev_t)li.lo_device;
			l->back_ino = (ino_t)li.lo_inode;
			return 0;
		}
	}
	if (stat(l->back_path, &st))
		return -errno;
	l->back_blk = S_ISBLK(st.st_mode);
	l->back_rdev = st.st_rdev;
	l->back_dev = st.st_dev;
	l->back_ino = st.st_ino;
	return 0;
}

/* Every bound loop device in /sys/block, with what backs it. */
static void list_loops(struct guard *g)
{
	DIR *d = opendir("/sys/block");

	if (!d)
		return;
	g->loops = calloc(GUARD_MAX_LOOPS, sizeof(*g->loops));
	for (struct dirent *e; g->loops && g->nloops < GUARD_MAX_LOOPS && (e = readdir(d));) {
		struct loop *l = &g->loops[g->nloops];
		if (strncmp(e->d_name, "loop", 4))
			continue;
		int dfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			continue;
		copy(l->name, sizeof(l->name), e->d_name);
		if (!read_devno(dfd, "dev", &l->rdev) && !loop_backing(l, dfd))
			g->nloops++;
		close(dfd);
	}
	closedir(d);
}

/* Adds the loop devices over node `i` (a block device or a file). */
static void add_loops_over(struct guard *g, int i)
{
	for (size_t k = 0; k < g->nloops; k++) {
		const struct loop *l = &g->loops[k];
		const struct node *x = &g->nodes[i];
		if (l->back_blk ? x->blk && x->rdev == l->back_rdev
				: !x->blk && x->dev == l->back_dev && x->ino == l->back_ino)
			guard_add_blk(g, l->rdev, i, REL_LOOP, true);
	}
}

/* Adds, as `rel` of node `i`, each device listed in the directory `rel_dir` of i's sysfs
 * directory (holders/, slaves/) or, with `need`, each subdirectory holding that file
 * (partitions). */
static void add_listed(struct guard *g, int dfd, int i, const char *rel_dir, const char *need,
		       enum rel rel, bool up)
{
	int fd = openat(dfd, rel_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	for (struct dirent *e; (e = readdir(d));) {
		char rel_path[NAME_MAX + 16];
		struct stat st;
		dev_t devno;
		if (e->d_name[0] == '.')
			continue;
		if (need) {
			snprintf(rel_path, sizeof(rel_path), "%s/%s", e->d_name, need);
			if (fstatat(dirfd(d), rel_path, &st, 0))
				continue;
		}
		snprintf(rel_path, sizeof(rel_path), "%s/dev", e->d_name);
		if (!read_devno(dirfd(d), rel_path, &devno))
			guard_add_blk(g, devno, i, rel, up);
	}
	closedir(d);
}

/* Node `i`'s neighbours: for what is built on the target, everything built on it; for what the
 * target is built on, what it is built on and the loop devices over it. */
static void expand(struct guard *g, int i)
{
	struct node x = g->nodes[i];
	char link[64];
	int dfd = -1;

	if (x.blk) {
		snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(x.rdev), minor(x.rdev));
		dfd = open(link, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	add_loops_over(g, i);
	if (x.up && dfd >= 0) {
		struct stat st;
		add_listed(g, dfd, i, "holders", NULL, REL_HOLDER, true);
		if (fstatat(dfd, "partition", &st, 0))
			add_listed(g, dfd, i, ".", "partition", REL_PARTITION, true);
	}
	if ((!x.up || i == 0) && x.blk) {
		struct stat st;
		dev_t whole;
		if (dfd >= 0) {
			add_listed(g, dfd, i, "slaves", NULL, REL_SLAVE, false);
			if (!fstatat(dfd, "partition", &st, 0) &&
			    !read_devno(dfd, "../dev", &whole))
				guard_add_blk(g, whole, i, REL_WHOLE, false);
		}
		for (size_t k = 0; k < g->nloops; k++) {
			const struct loop *l = &g->loops[k];
			if (l->rdev != x.rdev)
				continue;
			if (l->back_blk)
				guard_add_blk(g, l->back_rdev, i, REL_BACKING, false);
			else
				guard_add(g, false, 0, l->back_dev, l->back_ino, i, REL_BACKING,
					  false, l->back_path);
		}
	}
	if (dfd >= 0)
		close(dfd);
}

/* Undoes the octal escapes of /proc/self/mountinfo and /proc/swaps (\040 for a space). */
static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* True when the absolute `path` names node `x` (stat follows /dev symlinks). */
static bool path_is(const char *path, const struct node *x)
{
	struct stat st;

	if (path[0] != '/' || stat(path, &st))
		return false;
	if (x->blk)
		return S_ISBLK(st.st_mode) && st.st_rdev == x->rdev;
	return S_ISREG(st.st_mode) && st.st_dev == x->dev && st.st_ino == x->ino;
}

/* Where node `x` is mounted: by MAJ:MIN (field 3, proc(5)) for a block device, and by the mount
 * source (a loop device, or a file some file systems mount directly). Returns true and the
 * mount point in `where`. */
static bool find_mount(const struct node *x, char *where, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		unsigned maj, min;
		char mp[PATH_MAX], source[PATH_MAX];
		char *sep = strstr(line, " - ");
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mp) != 3)
			continue;
		unescape(mp);
		if (x->blk && makedev(maj, min) == x->rdev)
			found = true;
		else if (sep && sscanf(sep, " - %*s %4095s", source) == 1) {
			unescape(source);
			found = path_is(source, x);
		}
		if (found)
			copy(where, size, mp);
	}
	free(line);
	fclose(f);
	return found;
}

/* True when /proc/swaps lists node `x`. */
static bool in_swap(const struct node *x)
{
	FILE *f = fopen("/proc/swaps", "re");
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		char name[PATH_MAX];
		if (sscanf(line, "%4095s", name) != 1 || name[0] != '/')
			continue; /* the header */
		unescape(name);
		found = path_is(name, x);
	}
	free(line);
	fclose(f);
	return found;
}

/* True when someone else holds block device `x` open exclusively (a file system, a RAID or
 * device-mapper table, a program that opened it O_EXCL): our own O_EXCL open fails with EBUSY.
 * The node in /dev is opened only when it is the device, and never for an autoclear loop
 * device (its last close would detach it; mounted, it is caught by the mount check). */
static bool held_exclusively(const struct node *x)
{
	struct stat st;
	int fd = open(x->label, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_PATH);
	char link[64];
	bool busy = false;

	if (fd < 0)
		return false;
	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(x->rdev), minor(x->rdev));
	int dfd = open(link, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool keep_shut = dfd >= 0 && autoclear(dfd);
	if (dfd >= 0)
		close(dfd);
	if (!keep_shut && !fstat(fd, &st) && S_ISBLK(st.st_mode) && st.st_rdev == x->rdev) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		int efd = open(link, O_RDONLY | O_EXCL | O_CLOEXEC | O_NONBLOCK);
		if (efd >= 0)
			close(efd);
		else
			busy = errno == EBUSY;
	}
	close(fd);
	return busy;
}

/* Appends how node `i` is reached from the target: "A is a loop device over B, B is ...". */
static void describe(const struct guard *g, int i, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int k = i; k > 0 && len < size; k = g->nodes[k].parent) {
		const struct node *x = &g->nodes[k];
		const char *rel = rel_text[x->rel];
		if (x->rel == REL_BACKING)
			rel = x->blk ? "the device behind" : "the file behind";
		int n = snprintf(buf + len, size - len, "%s%s is %s %s", len ? ", " : "", x->label,
				 rel, g->nodes[x->parent].label);
		if (n < 0)
			break;
		len += (size_t)n;
	}
}

/*
 * Refuses the write when the target (`st`, labelled `path`) or anything sharing its storage is
 * mounted, swap, held, or open exclusively by someone else. Returns 0, or -EBUSY with one line
 * in `err` naming what is in use and how it shares the storage.
 */
static int guard_check(const char *path, const struct stat *st, char *err, size_t errlen)
{
	struct guard *g = calloc(1, sizeof(*g));
	char where[PATH_MAX], how[4 * PATH_MAX], what[PATH_MAX + 64];
	int rc = 0, bad = -1;

	if (!g) {
		snprintf(err, errlen, "%s: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	list_loops(g);
	if (S_ISBLK(st->st_mode))
		guard_add(g, true, st->st_rdev, 0, 0, -1, REL_TARGET, true, path);
	else
		guard_add(g, false, 0, st->st_dev, st->st_ino, -1, REL_TARGET, true, path);
	for (size_t i = 0; i < g->n; i++)
		expand(g, (int)i);
	for (size_t i = 0; i < g->n && bad < 0; i++) {
		const struct node *x = &g->nodes[i];
		if (find_mount(x, where, sizeof(where))) {
			snprintf(what, sizeof(what), "is mounted on %s", where);
			bad = (int)i;
		} else if (in_swap(x)) {
			snprintf(what, sizeof(what), "is in use as swap");
			bad = (int)i;
		} else if (x->rel == REL_HOLDER && g->nodes[x->parent].up) {
			snprintf(what, sizeof(what), "holds %s", g->nodes[x->parent].label);
			bad = (int)i;
		} else if (i > 0 && x->up && x->blk && held_exclusively(x)) {
			snprintf(what, sizeof(what),
				 "is open exclusively by another program (busy)");
			bad = (int)i;
		}
	}
	if (bad == 0) {
		snprintf(err, errlen, "%s: %s; refusing to write to it", path, what);
		rc = -EBUSY;
	} else if (bad > 0) {
		describe(g, bad, how, sizeof(how));
		snprintf(err, errlen, "%s: %s %s (%s); refusing to write to it", path,
			 g->nodes[bad].label, what, how);
		rc = -EBUSY;
	}
	free(g->loops);
	free(g);
	return rc;
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
		probe_sysfs(st.st_rdev, &dev->info);
	if (flags & DG_DEVICE_WRITE) {
		rc = guard_check(name, &st, err, errlen);
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
	copy(dev->info.path, sizeof(dev->info.path), path);
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
