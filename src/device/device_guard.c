/* SPDX-License-Identifier: MIT */
/*
 * The write guard: before a write test, everything that shares the target's storage (holders,
 * partitions, loop devices, slaves, backing files, the whole disk) is found through sysfs
 * (Documentation/ABI/stable/sysfs-block) and checked against /proc/self/mountinfo, /proc/swaps
 * and an O_EXCL open. Split out of device.c (issue 11).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "device_priv.h"
#include "util.h"

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
		dg_dev_copy(name, size, dg_dev_base_name(resolved));
	else
		dg_dev_copy(name, size, "");
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
		dg_dev_copy(x->label, sizeof(x->label), label);
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

	return dg_dev_read_attr(dfd, "loop/autoclear", text, sizeof(text), false) > 0 &&
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

	n = dg_dev_read_attr(sys_dfd, "loop/backing_file", l->back_path, sizeof(l->back_path),
			     false);
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
		dg_dev_copy(l->name, sizeof(l->name), e->d_name);
		if (!dg_dev_read_devno(dfd, "dev", &l->rdev) && !loop_backing(l, dfd))
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
		if (!dg_dev_read_devno(dirfd(d), rel_path, &devno))
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
			    !dg_dev_read_devno(dfd, "../dev", &whole))
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
			dg_dev_copy(where, size, mp);
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
int dg_dev_guard_check(const char *path, const struct stat *st, char *err, size_t errlen)
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
