/* SPDX-License-Identifier: MIT */
/* The instances of diskgeo-simdisk (instance.c), for the commands of manager.c. */
#ifndef DISKGEO_SIMDISK_INSTANCE_H
#define DISKGEO_SIMDISK_INSTANCE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "simdisk.h"

/* One attached instance, as its state file records it. */
struct instance {
	char dir[PATH_MAX];
	char mnt[PATH_MAX + 8];
	char file[PATH_MAX + 16];
	char spec[PATH_MAX];
	char loop[256];
	pid_t pid;
	unsigned long long starttime; /* /proc/PID/stat field 22: guards against pid reuse */
};

/* The run directory (DISKGEO_SIMDISK_RUNDIR or RUNDIR_DEFAULT). */
const char *instance_rundir(void);
/* The state directories are trusted to name what detach unmounts, kills and detaches: 0, or
 * -EPERM with the reason in `why` unless `path` is a real directory of ours writable by no one
 * else. */
int instance_check_dir(const char *path, char *why, size_t len);
/* The state file of `in` (written atomically), removed with the directory, read back. Return 0
 * or -errno. */
void instance_remove_state(const struct instance *in);
int instance_write_state(const struct instance *in);
int instance_read_state(const char *dir, struct instance *in);
/* /proc/PID/stat's start time (guards against pid reuse); whether the daemon still runs. */
int instance_starttime(pid_t pid, unsigned long long *starttime);
bool instance_daemon_alive(const struct instance *in);
/* Detaches the loop device, stops the daemon, unmounts and removes the directory: exactly what
 * attach made. Returns 0, or -EBUSY (a message printed). */
int instance_teardown(struct instance *in);
int instance_mkdir_p(const char *path, mode_t mode);
/* Calls fn for each instance; stops at the first non-zero return and returns it. */
int instance_each(int (*fn)(struct instance *in, void *arg), void *arg);
/* Runs argv, stdout into `out`, stderr into `errbuf`: its exit status, or -errno. */
int simdisk_run(char *const argv[], char *out, size_t outlen, char *errbuf, size_t errlen);
/* Loop devices: a sysfs attribute, whether `dev` is bound to `file`, its rotational flag. */
int loop_attr(const char *dev, const char *attr, char *buf, size_t len);
bool loop_bound_to(const char *dev, const char *file);
int loop_mark_rotational(const char *dev, int rotational);

#endif
