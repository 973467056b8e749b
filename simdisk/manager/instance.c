/* SPDX-License-Identifier: MIT */
/*
 * diskgeo-simdisk's instances as they live on the system: the private run directory, each
 * instance's state file, its daemon (checked by pid and start time), its loop device, and the
 * teardown that removes exactly what attach made.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "diskgeo/diskgeo.h"
#include "util.h"
#include "diskgeo/model.h"
#include "simpattern.h"

#include "instance.h"

#define STOP_TIMEOUT_MS 10000

void simdisk_errmsg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs(PROG ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

const char *instance_rundir(void)
{
	const char *d = getenv("DISKGEO_SIMDISK_RUNDIR");

	return d && d[0] ? d : RUNDIR_DEFAULT;
}

/*
 * The state directories are trusted to name what detach unmounts, kills and detaches, so they
 * must be ours: a real directory (not a symlink) owned by the effective user and writable by
 * no one else. Returns 0, or -EPERM with the reason in `why`.
 */
int instance_check_dir(const char *path, char *why, size_t len)
{
	struct stat st;

	if (lstat(path, &st)) {
		int e = errno;
		snprintf(why, len, "%s: %s", path, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, len, "%s: the state directory is %s, not a directory", path,
			 S_ISLNK(st.st_mode) ? "a symbolic link" : "a file");
		return -EPERM;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(why, len,
			 "%s: the state directory must be owned by uid %u and writable by no one "
			 "else (it is owned by uid %u, mode %04o); refusing to trust it",
			 path, (unsigned)geteuid(), (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* Removes an instance's files and directory (what is already gone is fine). */
void instance_remove_state(const struct instance *in)
{
	static const char *const files[] = {"state", "state.tmp", "daemon.log", DETACH_MARKER};
	char path[PATH_MAX + 16];

	if (in->mnt[0])
		rmdir(in->mnt);
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", in->dir, files[i]);
		unlink(path);
	}
	rmdir(in->dir);
}

int instance_write_state(const struct instance *in)
{
	char path[PATH_MAX + 16], tmp[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/state", in->dir);
	snprintf(tmp, sizeof(tmp), "%s/state.tmp", in->dir);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "spec=%s\nmountpoint=%s\nfile=%s\npid=%d\nstarttime=%llu\nloop=%s\n", in->spec,
		in->mnt, in->file, (int)in->pid, in->starttime, in->loop);
	if (fflush(f) || fsync(fileno(f))) {
		int rc = -errno;
		fclose(f);
		unlink(tmp);
		return rc;
	}
	fclose(f);
	if (rename(tmp, path)) {
		int rc = -errno;
		unlink(tmp);
		return rc;
	}
	return 0;
}

int instance_read_state(const char *dir, struct instance *in)
{
	char path[PATH_MAX + 16], line[PATH_MAX + 32];
	FILE *f;

	memset(in, 0, sizeof(*in));
	snprintf(in->dir, sizeof(in->dir), "%s", dir);
	snprintf(path, sizeof(path), "%s/state", dir);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	while (fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '='), *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (!eq)
			continue;
		*eq++ = '\0';
		if (!strcmp(line, "spec"))
			snprintf(in->spec, sizeof(in->spec), "%s", eq);
		else if (!strcmp(line, "mountpoint"))
			snprintf(in->mnt, sizeof(in->mnt), "%s", eq);
		else if (!strcmp(line, "file"))
			snprintf(in->file, sizeof(in->file), "%s", eq);
		else if (!strcmp(line, "pid"))
			in->pid = (pid_t)atoi(eq);
		else if (!strcmp(line, "starttime"))
			in->starttime = strtoull(eq, NULL, 10);
		else if (!strcmp(line, "loop"))
			snprintf(in->loop, sizeof(in->loop), "%s", eq);
	}
	fclose(f);
	/* The mount point and the served file are where attach puts them, never elsewhere. */
	char mnt[sizeof(in->mnt)], file[sizeof(in->file)];
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	snprintf(file, sizeof(file), "%s/" DISK_NAME, mnt);
	if (strcmp(in->mnt, mnt) || strcmp(in->file, file) ||
	    (in->loop[0] && strncmp(in->loop, "/dev/loop", 9)))
		return -EPERM;
	return 0;
}

/* Field 22 of /proc/PID/stat (start time in clock ticks), and whether the process is a zombie
 * or gone. Returns 0 when the process runs, -ESRCH when it is gone or a zombie. */
int instance_starttime(pid_t pid, unsigned long long *starttime)
{
	char path[64], buf[1024];
	FILE *f;
	char *p;
	char state;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -ESRCH;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -ESRCH;
	}
	fclose(f);
	p = strrchr(buf, ')'); /* comm may hold spaces */
	if (!p || sscanf(p + 2, "%c", &state) != 1 || state == 'Z' || state == 'X')
		return -ESRCH;
	/* After ") S ": fields 3.. ; starttime is field 22, the 20th after the state. */
	p += 2;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -ESRCH;
		p++;
	}
	*starttime = strtoull(p, NULL, 10);
	return 0;
}

/* True when process `pid` runs this program (the same executable file) as
 * "diskgeo-simdisk attach SPEC": what attach's daemon looks like. */
static bool is_our_daemon(pid_t pid, const char *spec)
{
	char path[64], cmd[PATH_MAX + 64];
	struct stat self, other;
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat("/proc/self/exe", &self) || stat(path, &other) || self.st_dev != other.st_dev ||
	    self.st_ino != other.st_ino)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, cmd, sizeof(cmd) - 1);
	close(fd);
	if (n <= 0)
		return false;
	cmd[n] = '\0';
	/* argv[0] \0 "attach" \0 SPEC \0 */
	const char *a1 = cmd + strlen(cmd) + 1;
	if (a1 >= cmd + n || strcmp(a1, "attach"))
		return false;
	const char *a2 = a1 + strlen(a1) + 1;
	return a2 < cmd + n && !strcmp(a2, spec);
}

/* True when `in->pid` is still the daemon this instance started: the start time it recorded,
 * and this program running `attach SPEC` (a forged pid names some other process). */
bool instance_daemon_alive(const struct instance *in)
{
	unsigned long long st;

	if (in->pid <= 0 || in->starttime == 0 || instance_starttime(in->pid, &st))
		return false;
	return st == in->starttime && is_our_daemon(in->pid, in->spec);
}

static bool is_mounted(const char *mnt)
{
	char line[PATH_MAX * 2 + 256];
	bool found = false;
	FILE *f = fopen("/proc/mounts", "r");

	if (!f)
		return false;
	/* only a mount of this program's FUSE file system counts (fsname, subtype of serve) */
	while (!found && fgets(line, sizeof(line), f)) {
		char dev[256], dir[PATH_MAX * 2], type[64];
		if (sscanf(line, "%255s %4095s %63s", dev, dir, type) == 3 && !strcmp(dir, mnt) &&
		    !strcmp(dev, PROG) && !strcmp(type, "fuse.diskgeo"))
			found = true;
	}
	fclose(f);
	return found;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

void simdisk_read_line(int fd, char *buf, size_t len)
{
	size_t got = 0;

	for (;;) {
		ssize_t n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == len - 1)
			break;
	}
	buf[got] = '\0';
	while (got && buf[got - 1] == '\n')
		buf[--got] = '\0';
}

/*
 * Runs argv (PATH lookup, then /usr/sbin and /sbin), its stdout captured into out (NUL-ended,
 * trailing newline removed) and its stderr into errbuf. Returns its exit status, or -errno when
 * it could not run.
 */
int simdisk_run(char *const argv[], char *out, size_t outlen, char *errbuf, size_t errlen)
{
	int po[2], pe[2], status;
	pid_t pid;

	if (pipe2(po, O_CLOEXEC))
		return -errno;
	if (pipe2(pe, O_CLOEXEC)) {
		int rc = -errno;
		close(po[0]);
		close(po[1]);
		return rc;
	}
	pid = fork();
	if (pid < 0) {
		int rc = -errno;
		close(po[0]);
		close(po[1]);
		close(pe[0]);
		close(pe[1]);
		return rc;
	}
	if (pid == 0) {
		char path[PATH_MAX];
		dup2(po[1], STDOUT_FILENO);
		dup2(pe[1], STDERR_FILENO);
		execvp(argv[0], argv);
		snprintf(path, sizeof(path), "/usr/sbin/%s", argv[0]);
		execv(path, argv);
		snprintf(path, sizeof(path), "/sbin/%s", argv[0]);
		execv(path, argv);
		dprintf(STDERR_FILENO, "cannot run %s: %s", argv[0], strerror(errno));
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	/* The outputs are short (one line each): read stdout to its end, then stderr. */
	simdisk_read_line(po[0], out, outlen);
	simdisk_read_line(pe[0], errbuf, errlen);
	close(po[0]);
	close(pe[0]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The kernel name of a loop device path ("/dev/loop3" -> "loop3"), or NULL. */
static const char *loop_name(const char *dev)
{
	const char *base = strrchr(dev, '/');

	base = base ? base + 1 : dev;
	return strncmp(base, "loop", 4) ? NULL : base;
}

/* Reads /sys/block/NAME/loop/ATTR into buf (newline removed). Returns 0 or -errno. */
/* Sets /sys/block/loopN/queue/rotational to 0 or 1. Returns 0 or -errno. */
int loop_mark_rotational(const char *dev, int rotational)
{
	const char *name = loop_name(dev);
	char path[PATH_MAX];
	FILE *f;
	int rc = 0;

	if (!name)
		return -EINVAL;
	snprintf(path, sizeof(path), "/sys/block/%s/queue/rotational", name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (fputs(rotational ? "1\n" : "0\n", f) == EOF)
		rc = -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	return rc;
}

int loop_attr(const char *dev, const char *attr, char *buf, size_t len)
{
	const char *name = loop_name(dev);
	char path[PATH_MAX];
	FILE *f;

	if (!name)
		return -EINVAL;
	snprintf(path, sizeof(path), "/sys/block/%s/loop/%s", name, attr);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* True when loop device `dev` is bound to `file`. */
bool loop_bound_to(const char *dev, const char *file)
{
	char backing[PATH_MAX];

	return loop_attr(dev, "backing_file", backing, sizeof(backing)) == 0 &&
	       !strcmp(backing, file);
}

/*
 * Tears an instance down in reverse order of attach: loop device (only when still bound to
 * this instance's file), mount, daemon, state directory. Each step tolerates what is already
 * gone, so this also cleans up after a failed attach or a crashed daemon. Returns 0 when
 * everything is gone, else -EBUSY (with a message printed).
 */
int instance_teardown(struct instance *in)
{
	char out[256], errbuf[512], path[PATH_MAX + 16];
	int rc = 0;

	if (in->loop[0] && loop_bound_to(in->loop, in->file)) {
		char *argv[] = {"losetup", "-d", in->loop, NULL};
		/* If the device is busy, the kernel detaches it when its last user closes it
		 * (autoclear); the daemon sees its file released then and, finding this marker,
		 * unmounts and removes the state itself. */
		snprintf(path, sizeof(path), "%s/" DETACH_MARKER, in->dir);
		int mfd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (mfd >= 0)
			close(mfd);
		int st = simdisk_run(argv, out, sizeof(out), errbuf, sizeof(errbuf));
		if (st != 0)
			simdisk_errmsg("losetup -d %s failed: %s", in->loop,
				       errbuf[0] ? errbuf : "?");
		/* LOOP_CLR_FD defers while someone holds the device open (autoclear). */
		for (int t = 0; t < STOP_TIMEOUT_MS / 10 && loop_bound_to(in->loop, in->file); t++)
			sleep_ms(10);
		if (loop_bound_to(in->loop, in->file)) {
			simdisk_errmsg(
			    "%s is in use: the kernel detaches it when its last user closes it, "
			    "and the daemon then unmounts and removes %s by itself",
			    in->loop, in->dir);
			return -EBUSY;
		}
	}
	if (in->mnt[0] && is_mounted(in->mnt)) {
		/* Unmounting ends the daemon's session loop (its /dev/fuse reads fail). */
		for (int t = 0; t < 100 && umount2(in->mnt, 0) && errno == EBUSY; t++)
			sleep_ms(20);
		if (is_mounted(in->mnt) && umount2(in->mnt, MNT_DETACH)) {
			simdisk_errmsg("cannot unmount %s: %s", in->mnt, strerror(errno));
			rc = -EBUSY;
		}
	}
	if (instance_daemon_alive(in)) {
		kill(in->pid, SIGTERM);
		for (int t = 0; t < STOP_TIMEOUT_MS / 10 && instance_daemon_alive(in); t++)
			sleep_ms(10);
		if (instance_daemon_alive(in)) {
			kill(in->pid, SIGKILL);
			for (int t = 0; t < 100 && instance_daemon_alive(in); t++)
				sleep_ms(10);
		}
	}
	if (rc)
		return rc;
	instance_remove_state(in);
	if (access(in->dir, F_OK) == 0) {
		simdisk_errmsg("cannot remove %s (it holds files that attach did not create)",
			       in->dir);
		return -EBUSY;
	}
	return 0;
}

int instance_mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			if (mkdir(tmp, mode) && errno != EEXIST)
				return -errno;
			*p = '/';
		}
	}
	if (mkdir(tmp, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Calls fn for each instance directory under the run directory; stops when fn returns != 0 and
 * returns that. */
int instance_each(int (*fn)(struct instance *in, void *arg), void *arg)
{
	DIR *d = opendir(instance_rundir());
	struct dirent *de;
	int rc = 0;

	if (!d)
		return 0;
	/* the caller checked instance_rundir() itself (check_private_dir) */
	while (!rc && (de = readdir(d))) {
		char dir[PATH_MAX];
		struct instance in;
		if (strncmp(de->d_name, "sim-", 4))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", instance_rundir(), de->d_name);
		char why[PATH_MAX + 256];
		if (instance_check_dir(dir, why, sizeof(why)) || instance_read_state(dir, &in))
			continue; /* not ours: never acted on */
		rc = fn(&in, arg);
	}
	closedir(d);
	return rc;
}
