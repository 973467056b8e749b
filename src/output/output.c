/* SPDX-License-Identifier: MIT */
/*
 * Output files (profile.h): where an output path really leads, the checks made before a run,
 * and the write after it.
 *
 * A path is followed the way open(2) would follow it, one symbolic link at a time, and ends as
 * one of four targets:
 *   - a new name, or an existing regular file: replaced atomically (a temporary file with a
 *     short name in the same directory, fsync, rename(2), fsync of the directory), so a reader
 *     sees the old content or the new, never half; a symlink to a regular file keeps the link
 *     and replaces the file it names;
 *   - one of our own file descriptors (/dev/fd/N, /dev/stdout, /proc/self/fd/N): written
 *     through descriptor N itself, as a shell redirection would be (same offset, same flags);
 *   - a FIFO, character device or terminal, or another process's descriptor: opened for
 *     writing (never created, never renamed over) and written directly;
 *   - anything else (a directory, a socket, a block device): refused.
 * The content is produced into memory first, so that the error of a write is write(2)'s own
 * errno (ENOSPC, EDQUOT, EIO), not stdio's guess.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "diskgeo/profile.h"

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif

#define MAX_LINK_HOPS 40 /* the kernel's own limit (MAXSYMLINKS) */
#define TMP_PREFIX    ".diskgeo.tmp."

enum target_kind {
	TARGET_NEW,	/* no such name yet in `dir` */
	TARGET_REGULAR, /* an existing regular file `dir`/`base` */
	TARGET_FD,	/* our own descriptor `fd` */
	TARGET_DIRECT,	/* a FIFO, character device or foreign descriptor: open `full` */
};

struct target {
	enum target_kind kind;
	char *dir;	/* the directory, symlinks resolved (TARGET_NEW, TARGET_REGULAR) */
	char *base;	/* the name in it */
	char *full;	/* dir/base */
	int fd;		/* TARGET_FD */
	struct stat st; /* what is there (TARGET_REGULAR, TARGET_DIRECT) */
	bool magic;	/* TARGET_DIRECT: reached through a /proc "magic" link */
};

static void target_free(struct target *t)
{
	free(t->dir);
	free(t->base);
	free(t->full);
	memset(t, 0, sizeof(*t));
}

static char *join(const char *dir, const char *base)
{
	char *s;
	size_t n = strlen(dir);

	if (asprintf(&s, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", base) < 0)
		return NULL;
	return s;
}

/* Splits `path` into a directory ("." when none) and its last component. */
static int split(const char *path, char **dir, char **base)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		*dir = strdup(".");
		*base = strdup(path);
	} else {
		*dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
		*base = strdup(slash + 1);
	}
	if (!*dir || !*base) {
		free(*dir);
		free(*base);
		*dir = *base = NULL; /* the caller's cleanup frees them again */
		return -ENOMEM;
	}
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s || strlen(s) > 9)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* Whether `dir` (resolved) is this process's descriptor table: /proc/PID/fd or
 * /proc/PID/task/TID/fd (what /dev/fd, /proc/self/fd and /proc/thread-self/fd lead to). */
static bool own_fd_dir(const char *dir)
{
	char mine[64];
	size_t n = (size_t)snprintf(mine, sizeof(mine), "/proc/%ld/", (long)getpid());

	if (strncmp(dir, mine, n))
		return false;
	dir += n;
	if (!strcmp(dir, "fd"))
		return true;
	if (strncmp(dir, "task/", 5))
		return false;
	dir += 5;
	const char *end = strchr(dir, '/');
	if (!end || strcmp(end, "/fd"))
		return false;
	char tid[16];
	if ((size_t)(end - dir) >= sizeof(tid))
		return false;
	memcpy(tid, dir, (size_t)(end - dir));
	tid[end - dir] = '\0';
	return all_digits(tid);
}

static bool on_procfs(const char *dir)
{
	struct statfs sfs;

	return !statfs(dir, &sfs) && sfs.f_type == PROC_SUPER_MAGIC;
}

/* The directory `dir` of `path` with its symbolic links resolved, into *rdir (malloc'ed).
 * Returns 0 or -errno with one line in `err`. */
static int real_dir(const char *path, const char *dir, char **rdir, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	*rdir = realpath(dir, NULL);
	if (!*rdir) {
		rc = -errno;
		snprintf(err, errlen, "%s: directory %s: %s", path, dir, strerror(-rc));
		return rc;
	}
	if (stat(*rdir, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: %s is not a directory", path, dir);
		return -ENOTDIR;
	}
	return 0;
}

/*
 * One step of resolve(): the symbolic link `full` (its lstat in *st) in the directory `rdir`,
 * read into *next (absolute, or joined to `rdir`). Returns 0, -ENOMEM (no message) or -errno
 * with one line in `err` naming `path`.
 */
static int follow_link(const char *path, const char *rdir, const char *full, const struct stat *st,
		       char **next, char *err, size_t errlen)
{
	char link[PATH_MAX];
	struct stat dst;

	/* fs.protected_symlinks, which a link followed by hand would bypass: in a sticky
	 * world-writable directory (/tmp), a link owned by someone else than us and the
	 * directory's owner is not followed (a planted link to /etc/passwd must not have root
	 * replace /etc/passwd). */
	if (!stat(rdir, &dst) && (dst.st_mode & S_ISVTX) && (dst.st_mode & S_IWOTH) &&
	    st->st_uid != geteuid() && st->st_uid != dst.st_uid) {
		snprintf(err, errlen,
			 "%s: a symbolic link owned by another user in the shared directory %s; "
			 "not followed",
			 path, rdir);
		return -EACCES;
	}
	ssize_t n = readlink(full, link, sizeof(link) - 1);
	if (n < 0) {
		int rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	link[n] = '\0';
	*next = link[0] == '/' ? strdup(link) : join(rdir, link);
	return *next ? 0 : -ENOMEM;
}

/*
 * Follows `path` to its target (see the top of the file). Returns 0, or -errno with one line in
 * `err` naming `path`. Nothing is created or opened for writing.
 */
static int resolve(const char *path, struct target *t, char *err, size_t errlen)
{
	char *cur = strdup(path), *dir = NULL, *base = NULL, *rdir = NULL, *full = NULL;
	struct stat st;
	int rc = -ENOMEM;

	memset(t, 0, sizeof(*t));
	t->fd = -1;
	if (!cur)
		goto nomem;
	for (int hops = 0;; hops++) {
		if (hops > MAX_LINK_HOPS) {
			snprintf(err, errlen, "%s: %s", path, strerror(ELOOP));
			rc = -ELOOP;
			goto out;
		}
		if (split(cur, &dir, &base))
			goto nomem;
		if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
			snprintf(err, errlen, "%s: is a directory", path);
			rc = -EISDIR;
			goto out;
		}
		rc = real_dir(path, dir, &rdir, err, errlen);
		if (rc)
			goto out;
		if (own_fd_dir(rdir) && all_digits(base)) {
			t->kind = TARGET_FD;
			t->fd = atoi(base);
			rc = 0;
			goto out;
		}
		full = join(rdir, base);
		if (!full)
			goto nomem;
		if (lstat(full, &st)) {
			rc = -errno;
			if (rc != -ENOENT) {
				snprintf(err, errlen, "%s: %s", path, strerror(-rc));
				goto out;
			}
			t->kind = TARGET_NEW;
			break;
		}
		if (S_ISLNK(st.st_mode) && on_procfs(rdir)) {
			/* A /proc "magic" link (another process's descriptor): only the kernel
			 * can follow it, and what it names can only be opened, not replaced. */
			if (stat(full, &st)) {
				rc = -errno;
				snprintf(err, errlen, "%s: %s", path, strerror(-rc));
				goto out;
			}
			t->kind = TARGET_DIRECT;
			t->magic = true;
			t->st = st;
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			char *next = NULL;
			rc = follow_link(path, rdir, full, &st, &next, err, errlen);
			if (rc == -ENOMEM)
				goto nomem;
			if (rc)
				goto out;
			free(cur);
			cur = next;
			free(dir);
			free(base);
			free(rdir);
			free(full);
			dir = base = rdir = full = NULL;
			continue;
		}
		t->st = st;
		t->kind = S_ISREG(st.st_mode) ? TARGET_REGULAR : TARGET_DIRECT;
		break;
	}
	t->dir = rdir;
	t->base = base;
	t->full = full;
	rdir = base = full = NULL;
	rc = 0;
	goto out;
nomem:
	snprintf(err, errlen, "%s: %s", path, strerror(ENOMEM));
	rc = -ENOMEM;
out:
	free(cur);
	free(dir);
	free(base);
	free(rdir);
	free(full);
	return rc;
}

/* What cannot be written at all, whatever happens during the run. */
static int refuse_kind(const char *path, const struct stat *st, char *err, size_t errlen)
{
	if (S_ISDIR(st->st_mode)) {
		snprintf(err, errlen, "%s: is a directory", path);
		return -EISDIR;
	}
	if (S_ISBLK(st->st_mode)) {
		snprintf(err, errlen, "%s: is a block device; diskgeo writes no output onto one",
			 path);
		return -EINVAL;
	}
	return 0;
}

int dg_output_avoid_file(struct dg_output_avoid *a, const char *path)
{
	struct stat st;

	if (!path || !*path || stat(path, &st) || !S_ISREG(st.st_mode))
		return 0;
	if (a->n == DG_OUTPUT_AVOID_MAX)
		return -ENOSPC;
	a->id[a->n].block = false;
	a->id[a->n].dev = st.st_dev;
	a->id[a->n].ino = st.st_ino;
	a->n++;
	return 0;
}

int dg_output_avoid_device(struct dg_output_avoid *a, const struct dg_device *dev)
{
	const struct dg_device_info *info = dg_device_info(dev);
	struct stat st;
	int fd = dg_device_fd(dev);

	memset(a, 0, sizeof(*a));
	if (fd >= 0 && !fstat(fd, &st)) {
		a->id[a->n].block = S_ISBLK(st.st_mode);
		a->id[a->n].dev = a->id[a->n].block ? st.st_rdev : st.st_dev;
		a->id[a->n].ino = st.st_ino;
		a->n++;
	}
	/* The file behind a loop device, and a sim: spec file: what the run reads, too. */
	dg_output_avoid_file(a, info->loop_backing_file);
	if (info->kind == DG_DEVICE_SIM)
		dg_output_avoid_file(a, info->path + 4);
	return 0;
}

static bool avoided(const struct dg_output_avoid *a, const struct stat *st)
{
	for (size_t i = 0; a && i < a->n; i++) {
		if (a->id[i].block ? S_ISBLK(st->st_mode) && st->st_rdev == a->id[i].dev
				   : !S_ISBLK(st->st_mode) && st->st_dev == a->id[i].dev &&
					 st->st_ino == a->id[i].ino)
			return true;
	}
	return false;
}

/* Checks descriptor `fd` is open for writing and not the device. */
static int check_fd(const char *path, int fd, const struct dg_output_avoid *avoid, char *err,
		    size_t errlen)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "%s: file descriptor %d is not open", path, fd);
		return -EBADF;
	}
	if ((fl & O_ACCMODE) == O_RDONLY || (fl & O_PATH)) {
		snprintf(err, errlen, "%s: file descriptor %d is not open for writing", path, fd);
		return -EBADF;
	}
	if (avoided(avoid, &st)) {
		snprintf(err, errlen, "%s: is the device being measured; refusing to write over it",
			 path);
		return -EINVAL;
	}
	return refuse_kind(path, &st, err, errlen);
}

/* A name for a temporary file: short, so that it fits wherever the output's name fits. */
static void tmp_name(char *buf, size_t len, unsigned attempt)
{
	struct timespec ts;
	uint64_t x;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	x = ((uint64_t)ts.tv_nsec << 20) ^ ((uint64_t)getpid() << 8) ^ attempt;
	snprintf(buf, len, TMP_PREFIX "%08" PRIx64, x & 0xffffffffu);
}

/* Creates a new temporary file in the directory `dfd`; its name goes to `name`. */
static int tmp_create(int dfd, char *name, size_t len)
{
	for (unsigned attempt = 0; attempt < 100; attempt++) {
		tmp_name(name, len, attempt);
		int fd =
		    openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

/* For a new or regular target: the name fits, a file can be created beside it, and the file
 * system is not already full. */
static int check_dir(const char *path, const struct target *t, char *err, size_t errlen)
{
	char name[64];
	struct statvfs vfs;
	long name_max = pathconf(t->dir, _PC_NAME_MAX);
	int dfd, fd, rc = 0;

	if (name_max <= 0)
		name_max = NAME_MAX;
	if (strlen(t->base) > (size_t)name_max) {
		snprintf(err, errlen, "%s: the name is longer than the %ld bytes %s allows", path,
			 name_max, t->dir);
		return -ENAMETOOLONG;
	}
	dfd = open(t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: directory %s: %s", path, t->dir, strerror(-rc));
		return rc;
	}
	/* Creating (and removing) a file is the one test that knows about permissions, read-only
	 * mounts, immutable directories and file systems that cannot hold files (/proc). */
	fd = tmp_create(dfd, name, sizeof(name));
	if (fd < 0) {
		rc = fd;
		snprintf(err, errlen, "%s: cannot create a file in %s: %s", path, t->dir,
			 strerror(-rc));
	} else {
		close(fd);
		unlinkat(dfd, name, 0);
		if (!fstatvfs(dfd, &vfs) && (geteuid() == 0 ? vfs.f_bfree : vfs.f_bavail) == 0 &&
		    vfs.f_blocks) {
			rc = -ENOSPC;
			snprintf(err, errlen, "%s: cannot write in %s: %s", path, t->dir,
				 strerror(ENOSPC));
		}
	}
	close(dfd);
	return rc;
}

/* An existing file marked immutable or append-only (chattr +i, +a) cannot be renamed over, even
 * by root: found now rather than after the run. File systems without the flags pass. */
static int check_immutable(const char *path, const struct target *t, char *err, size_t errlen)
{
	int fd = open(t->full, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	int flags = 0;

	if (fd < 0)
		return 0;
	if (!ioctl(fd, FS_IOC_GETFLAGS, &flags) && (flags & (FS_IMMUTABLE_FL | FS_APPEND_FL))) {
		close(fd);
		snprintf(err, errlen, "%s: is %s (chattr); it cannot be replaced", path,
			 flags & FS_IMMUTABLE_FL ? "immutable" : "append-only");
		return -EPERM;
	}
	close(fd);
	return 0;
}

int dg_output_check(const char *path, const struct dg_output_avoid *avoid, char *err, size_t errlen)
{
	struct target t;
	int rc;

	if (!path || !*path) {
		snprintf(err, errlen, "no output file given");
		return -EINVAL;
	}
	if (!strcmp(path, "-"))
		return check_fd("standard output", STDOUT_FILENO, avoid, err, errlen);
	rc = resolve(path, &t, err, errlen);
	if (rc)
		return rc;
	switch (t.kind) {
	case TARGET_FD:
		rc = check_fd(path, t.fd, avoid, err, errlen);
		break;
	case TARGET_REGULAR:
	case TARGET_DIRECT:
		if (avoided(avoid, &t.st)) {
			snprintf(err, errlen,
				 "%s: is the device being measured; refusing to write over it",
				 path);
			rc = -EINVAL;
			break;
		}
		rc = refuse_kind(path, &t.st, err, errlen);
		if (rc)
			break;
		if (S_ISSOCK(t.st.st_mode)) {
			snprintf(err, errlen, "%s: is a socket", path);
			rc = -EINVAL;
		} else if (t.kind == TARGET_REGULAR) {
			rc = check_immutable(path, &t, err, errlen);
			if (!rc)
				rc = check_dir(path, &t, err, errlen);
		} else if (access(t.full, W_OK)) {
			rc = -errno;
			snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		}
		break;
	case TARGET_NEW:
		rc = check_dir(path, &t, err, errlen);
		break;
	}
	target_free(&t);
	return rc;
}

/* Writes all of buf to fd: 0 or -errno (EINTR retried: a signal during the final write must not
 * lose the profile it is there to save). */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The atomic replacement of a new or regular target. */
static int write_atomic(const char *path, const struct target *t, const char *buf, size_t len,
			char *err, size_t errlen)
{
	char name[64];
	int dfd, fd, rc;

	dfd = open(t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: directory %s: %s", path, t->dir, strerror(-rc));
		return rc;
	}
	fd = tmp_create(dfd, name, sizeof(name));
	if (fd < 0) {
		rc = fd;
		snprintf(err, errlen, "%s: cannot create a file in %s: %s", path, t->dir,
			 strerror(-rc));
		close(dfd);
		return rc;
	}
	rc = write_all(fd, buf, len);
	if (!rc && fsync(fd))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (rc) {
		snprintf(err, errlen, "%s: write failed: %s", path, strerror(-rc));
		goto err;
	}
	if (renameat(dfd, name, dfd, t->base)) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		goto err;
	}
	fsync(dfd); /* best effort: the file itself is complete either way */
	close(dfd);
	return 0;
err:
	unlinkat(dfd, name, 0);
	close(dfd);
	return rc;
}

/* A FIFO, character device or foreign descriptor: opened, never created or replaced. A FIFO
 * waits here for its reader. */
static int write_direct(const char *path, const struct target *t, const char *buf, size_t len,
			char *err, size_t errlen)
{
	int flags = O_WRONLY | O_NOCTTY | O_CLOEXEC, fd, rc;
	struct stat st;

	if (S_ISREG(t->st.st_mode))
		flags |= O_TRUNC; /* a file behind another process's descriptor, like `>` */
	if (!t->magic)
		flags |= O_NOFOLLOW; /* a link put there since resolve() is not followed */
	/* Not retried on EINTR: a signal is the way out of waiting for a FIFO's reader. */
	fd = open(t->full, flags);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path,
			 rc == -EINTR ? "interrupted while waiting for a reader" : strerror(-rc));
		return rc;
	}
	/* What was opened is what was checked: nothing swapped in between. */
	if (fstat(fd, &st) || st.st_dev != t->st.st_dev || st.st_ino != t->st.st_ino) {
		close(fd);
		snprintf(err, errlen, "%s: changed since it was checked; not written", path);
		return -ESTALE;
	}
	rc = write_all(fd, buf, len);
	if (close(fd) && !rc && errno != EINTR)
		rc = -errno;
	if (rc)
		snprintf(err, errlen, "%s: write failed: %s", path, strerror(-rc));
	return rc;
}

int dg_file_write(const char *path, int (*fill)(FILE *f, void *arg), void *arg, char *err,
		  size_t errlen)
{
	struct target t = {.fd = -1};
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;
	int rc;

	if (!path || !*path) {
		snprintf(err, errlen, "no output file given");
		return -EINVAL;
	}
	mem = open_memstream(&buf, &len);
	if (!mem) {
		snprintf(err, errlen, "%s: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	rc = fill(mem, arg);
	if (fclose(mem) && !rc)
		rc = -ENOMEM; /* a memory stream fails only for want of memory */
	if (rc) {
		snprintf(err, errlen, "%s: %s", strcmp(path, "-") ? path : "standard output",
			 strerror(-rc));
		goto out;
	}
	if (!strcmp(path, "-")) {
		/* Whatever stdio holds goes first, so that the order on the stream is kept. */
		errno = 0;
		if (fflush(stdout))
			rc = errno ? -errno : -EIO;
		if (!rc)
			rc = write_all(STDOUT_FILENO, buf, len);
		if (rc)
			snprintf(err, errlen, "standard output: %s", strerror(-rc));
		goto out;
	}
	rc = resolve(path, &t, err, errlen);
	if (rc)
		goto out;
	switch (t.kind) {
	case TARGET_FD:
		rc = check_fd(path, t.fd, NULL, err, errlen);
		/* What stdio holds for the same descriptor goes first. */
		if (!rc && (t.fd == STDOUT_FILENO || t.fd == STDERR_FILENO))
			fflush(t.fd == STDOUT_FILENO ? stdout : stderr);
		if (!rc && (rc = write_all(t.fd, buf, len)))
			snprintf(err, errlen, "%s: write failed: %s", path, strerror(-rc));
		break;
	case TARGET_DIRECT:
		rc = refuse_kind(path, &t.st, err, errlen);
		if (!rc)
			rc = write_direct(path, &t, buf, len, err, errlen);
		break;
	case TARGET_NEW:
	case TARGET_REGULAR:
		rc = write_atomic(path, &t, buf, len, err, errlen);
		break;
	}
out:
	target_free(&t);
	free(buf);
	return rc;
}

/* Sorted keys, two-space indent: the document is an API and diffs well (style.md rule 9).
 * 12 significant digits: exact enough for ns and bytes-per-second figures, free of binary noise
 * such as 0.10000000000000001. */
#define JSON_FLAGS (JSON_SORT_KEYS | JSON_INDENT(2) | JSON_REAL_PRECISION(12))

static int fill_json(FILE *f, void *arg)
{
	if (json_dumpf((const json_t *)arg, f, JSON_FLAGS) || fputc('\n', f) == EOF)
		return -ENOMEM;
	return 0;
}

int dg_json_write(const json_t *doc, const char *path, char *err, size_t errlen)
{
	return dg_file_write(path, fill_json, (void *)doc, err, errlen);
}
