/* SPDX-License-Identifier: MIT */
/*
 * diskgeo-simdisk's parts (see simdisk.c): the FUSE daemon (daemon.c) and the instance manager
 * (manager.c: attach, detach, list and the state they keep).
 */
#ifndef DISKGEO_SIMDISK_H
#define DISKGEO_SIMDISK_H

#include <stdarg.h>

#include "diskgeo/model.h"

#define PROG	       "diskgeo-simdisk"
#define RUNDIR_DEFAULT "/run/diskgeo-simdisk" /* DISKGEO_SIMDISK_RUNDIR overrides it */
#define DISK_NAME      "disk"		      /* the one file of the FUSE file system */
#define DETACH_MARKER  "detach"		      /* in an instance's directory: detach was asked for */

enum { EXIT_OK = 0, EXIT_USAGE = 1, EXIT_SYSTEM = 2 };

/*
 * Mounts `spec` at `mnt` and serves it until unmounted or signalled (daemon.c). When `ready_fd`
 * >= 0, writes "ok\n" there once mounted, or one line of error text, and closes it. Once the
 * last open of the disk file is released and `detach_marker` (NULL: never) exists, the session
 * ends. Returns an exit code.
 */
int simdisk_serve(const struct dg_spec *spec, const char *mnt, const char *detach_marker,
		  int ready_fd);

/* "diskgeo-simdisk: <message>" on stderr (manager.c). */
void simdisk_errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The commands of the instance manager (manager.c); each returns an exit code. attach prints
 * the loop device; list one line per instance. */
int simdisk_attach(const char *what, int rotational);
int simdisk_detach(const char *dev);
int simdisk_list(void);
/* Reads fd to its end (or until buf is full) into buf, NUL-ended, trailing newlines removed. */
void simdisk_read_line(int fd, char *buf, size_t len);

#endif
