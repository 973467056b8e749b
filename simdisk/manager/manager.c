/* SPDX-License-Identifier: MIT */
/*
 * diskgeo-simdisk's instance manager: attach (a private directory, the daemon forked into it,
 * a loop device on its file), detach and list.
 *
 * State: each attach makes a private directory RUNDIR/sim-XXXXXX holding the mount point `mnt`,
 * the daemon's log and a `state` file (spec, mount point, daemon pid and start time, loop
 * device). detach only acts on a loop device that a state file names, and only detaches it if
 * its backing file is still this instance's file.
 */
#define FUSE_USE_VERSION 314 /* FUSE_MAKE_VERSION(3, 14) */
#include <fuse3/fuse_lowlevel.h>

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
#include "diskgeo/model.h"
#include "simpattern.h"

#include "instance.h"
#include "simdisk.h"

/* ------------------------------------------------------------------------------------------ */
/* attach / detach                                                                            */
/* ------------------------------------------------------------------------------------------ */

/* A new instance directory RUNDIR/sim-XXXXXX and its mount point in `in`. Returns an exit code;
 * in->dir is set once the directory exists (instance_teardown() removes it). */
static int make_instance_dir(struct instance *in)
{
	char why[DG_ERRLEN], tmpl[PATH_MAX];
	int rc = instance_mkdir_p(instance_rundir(), 0700);

	if (rc) {
		simdisk_errmsg("cannot create %s: %s", instance_rundir(), strerror(-rc));
		return EXIT_SYSTEM;
	}
	if (instance_check_dir(instance_rundir(), why, sizeof(why))) {
		simdisk_errmsg("%s", why);
		return EXIT_USAGE;
	}
	snprintf(tmpl, sizeof(tmpl), "%s/sim-XXXXXX", instance_rundir());
	if (!mkdtemp(tmpl)) {
		simdisk_errmsg("cannot create a directory in %s: %s", instance_rundir(),
			       strerror(errno));
		return EXIT_SYSTEM;
	}
	snprintf(in->dir, sizeof(in->dir), "%s", tmpl);
	snprintf(in->mnt, sizeof(in->mnt), "%s/mnt", in->dir);
	snprintf(in->file, sizeof(in->file), "%s/" DISK_NAME, in->mnt);
	if (mkdir(in->mnt, 0700)) {
		simdisk_errmsg("cannot create %s: %s", in->mnt, strerror(errno));
		return EXIT_SYSTEM;
	}
	return EXIT_OK;
}

/* The daemon, in the forked child: its own session, stdio on /dev/null and its log. */
static void __attribute__((noreturn))
daemon_child(const struct instance *in, const struct dg_spec *spec, int ready_fd)
{
	char log[PATH_MAX + 16], marker[PATH_MAX + 16];
	int fd, lfd, st;

	setsid();
	fd = open("/dev/null", O_RDWR);
	snprintf(log, sizeof(log), "%s/daemon.log", in->dir);
	lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
	}
	/* Never keep the caller's stderr: a caller reading it to its end would hang. */
	if (lfd >= 0)
		dup2(lfd, STDERR_FILENO);
	else if (fd >= 0)
		dup2(fd, STDERR_FILENO);
	if (chdir("/"))
		_exit(EXIT_SYSTEM);
	snprintf(marker, sizeof(marker), "%s/" DETACH_MARKER, in->dir);
	st = simdisk_serve(spec, in->mnt, marker, ready_fd);
	/* a detach that found the loop device busy left this to us (see op_release) */
	if (access(marker, F_OK) == 0)
		instance_remove_state(in);
	_exit(st);
}

/* Forks the daemon and waits for its word that the file system is mounted. Returns 0, or -1
 * (one line printed; in->pid is the daemon still to stop, or 0). */
static int start_daemon(struct instance *in, const struct dg_spec *spec)
{
	char msg[DG_ERRLEN];
	int ready[2];
	pid_t pid;

	if (pipe2(ready, O_CLOEXEC)) {
		simdisk_errmsg("pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		simdisk_errmsg("fork: %s", strerror(errno));
		close(ready[0]);
		close(ready[1]);
		return -1;
	}
	if (pid == 0) {
		close(ready[0]);
		daemon_child(in, spec, ready[1]);
	}
	close(ready[1]);
	in->pid = pid;
	simdisk_read_line(ready[0], msg, sizeof(msg));
	msg[strcspn(msg, "\n")] = '\0';
	close(ready[0]);
	if (strcmp(msg, "ok")) {
		simdisk_errmsg("%s", msg[0] ? msg : "the daemon died while starting");
		waitpid(pid, NULL, 0);
		in->pid = 0;
		return -1;
	}
	/* The daemon outlives us; a failed attach must still stop it. */
	if (instance_starttime(pid, &in->starttime))
		in->starttime = 0;
	return 0;
}

/* The state file, the FUSE file checked, the loop device set up on it and recorded, and what
 * the loop device cannot show said. Returns 0, or -1 (one line printed). */
static int attach_loop(struct instance *in, const struct dg_spec *spec, int rotational)
{
	char out[256], errbuf[512], sector[16], dio[16];
	char *argv[] = {"losetup",	 "--find", "--show", "--direct-io=on",
			"--sector-size", sector,   in->file, NULL};
	struct stat st;
	int rc = instance_write_state(in);

	if (rc) {
		simdisk_errmsg("cannot write the state file in %s: %s", in->dir, strerror(-rc));
		return -1;
	}
	/* The first access waits for the kernel's INIT handshake: a refused one shows here. */
	if (stat(in->file, &st) || (uint64_t)st.st_size != dg_spec_capacity_bytes(spec)) {
		simdisk_errmsg("the FUSE file system did not come up (%s; see %s/daemon.log)",
			       strerror(errno), in->dir);
		return -1;
	}
	snprintf(sector, sizeof(sector), "%u", dg_spec_sector_bytes(spec));
	rc = simdisk_run(argv, out, sizeof(out), errbuf, sizeof(errbuf));
	if (rc != 0 || strncmp(out, "/dev/loop", 9)) {
		simdisk_errmsg("losetup failed: %s", errbuf[0] ? errbuf
						     : rc < 0  ? strerror(-rc)
							       : out);
		return -1;
	}
	snprintf(in->loop, sizeof(in->loop), "%s", out);
	rc = instance_write_state(in);
	if (rc) {
		simdisk_errmsg("cannot write the state file in %s: %s", in->dir, strerror(-rc));
		return -1;
	}
	if (loop_attr(in->loop, "dio", dio, sizeof(dio)) == 0 && strcmp(dio, "1"))
		simdisk_errmsg("warning: %s does buffered I/O (the kernel refused direct I/O on "
			       "the FUSE file); timings go through the page cache",
			       in->loop);
	/* The loop driver copies "rotational" from the disk under the FUSE mount; the drive it
	 * serves does rotate, so say so (best effort: a kernel that refuses keeps its value). */
	loop_mark_rotational(in->loop, rotational);
	/* A loop device shows only the logical sector, as a USB bridge that hides 512e does: say
	 * what the drive emulates (on stderr: stdout is the device name alone). */
	if (dg_spec_physical_sector_bytes(spec) != dg_spec_sector_bytes(spec))
		simdisk_errmsg("%s emulates %u-byte physical sectors (%u-byte logical); the loop "
			       "device shows only the logical size",
			       in->loop, dg_spec_physical_sector_bytes(spec),
			       dg_spec_sector_bytes(spec));
	return 0;
}

int simdisk_attach(const char *what, int rotational)
{
	char err[DG_ERRLEN];
	struct dg_spec *spec = NULL;
	struct instance in;
	int rc;

	if (geteuid() != 0) {
		simdisk_errmsg("attach needs root (it mounts FUSE and sets up a loop device)");
		return EXIT_SYSTEM;
	}
	rc = dg_spec_load(what, &spec, NULL, err, sizeof(err));
	if (rc) {
		simdisk_errmsg("%s", err[0] ? err : strerror(-rc));
		return EXIT_USAGE;
	}
	memset(&in, 0, sizeof(in));
	snprintf(in.spec, sizeof(in.spec), "%s", what);
	rc = make_instance_dir(&in);
	if (rc && !in.dir[0]) {
		dg_spec_free(spec);
		return rc;
	}
	if (rc == 0 && start_daemon(&in, spec) == 0 && attach_loop(&in, spec, rotational) == 0) {
		printf("%s\n", in.loop);
		dg_spec_free(spec);
		return fflush(stdout) ? EXIT_SYSTEM : EXIT_OK;
	}
	instance_teardown(&in);
	if (in.pid > 0 && waitpid(in.pid, NULL, WNOHANG) == 0) {
		/* our child, whatever instance_daemon_alive() could verify */
		kill(in.pid, SIGKILL);
		waitpid(in.pid, NULL, 0);
		instance_remove_state(&in);
	}
	dg_spec_free(spec);
	return EXIT_SYSTEM;
}

struct find_arg {
	dev_t rdev;
	struct instance found;
};

static int match_loop(struct instance *in, void *arg)
{
	struct find_arg *fa = arg;
	struct stat st;

	if (!in->loop[0] || stat(in->loop, &st) || !S_ISBLK(st.st_mode) || st.st_rdev != fa->rdev)
		return 0;
	fa->found = *in;
	return 1;
}

int simdisk_detach(const char *dev)
{
	struct find_arg fa;
	struct stat st;

	if (stat(dev, &st)) {
		simdisk_errmsg("%s: %s", dev, strerror(errno));
		return EXIT_USAGE;
	}
	if (!S_ISBLK(st.st_mode)) {
		simdisk_errmsg("%s is not a block device", dev);
		return EXIT_USAGE;
	}
	char why[PATH_MAX + 256];
	if (access(instance_rundir(), F_OK) == 0 &&
	    instance_check_dir(instance_rundir(), why, sizeof(why))) {
		simdisk_errmsg("%s", why);
		return EXIT_USAGE;
	}
	memset(&fa, 0, sizeof(fa));
	fa.rdev = st.st_rdev;
	if (instance_each(match_loop, &fa) != 1) {
		simdisk_errmsg("%s was not attached by " PROG
			       " (no state in %s); refusing to touch it",
			       dev, instance_rundir());
		return EXIT_USAGE;
	}
	if (!loop_bound_to(fa.found.loop, fa.found.file))
		simdisk_errmsg("warning: %s is no longer bound to %s; cleaning up the rest only",
			       fa.found.loop, fa.found.file);
	if (geteuid() != 0) {
		simdisk_errmsg("detach needs root");
		return EXIT_SYSTEM;
	}
	return instance_teardown(&fa.found) ? EXIT_SYSTEM : EXIT_OK;
}

static int print_instance(struct instance *in, void *arg)
{
	printf("%s\t%s\tpid %d%s\t%s\n", in->loop[0] ? in->loop : "-", in->spec, (int)in->pid,
	       instance_daemon_alive(in) ? "" : " (gone)", in->mnt);
	return 0;
}

int simdisk_list(void)
{
	char why[PATH_MAX + 256];

	if (access(instance_rundir(), F_OK) == 0 &&
	    instance_check_dir(instance_rundir(), why, sizeof(why))) {
		simdisk_errmsg("%s", why);
		return EXIT_USAGE;
	}
	instance_each(print_instance, NULL);
	return fflush(stdout) ? EXIT_USAGE : EXIT_OK;
}
