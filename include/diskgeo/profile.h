/* SPDX-License-Identifier: MIT */
/*
 * The profile document ("diskgeo.profile/1", contract.md) and output files.
 * Measurement modules add their own objects (e.g. "bandwidth", "seek") with json_object_set_new.
 * Keys carry their units; keys a run did not measure are absent, never zero.
 */
#ifndef DISKGEO_PROFILE_H
#define DISKGEO_PROFILE_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#include "device.h"
#include "diskgeo.h"

/* A new document holding {"schema", "tool": {"name", "version"}}. NULL on ENOMEM. */
json_t *dg_profile_new(void);

/* The contract's "device" object for `info` (new reference). */
json_t *dg_profile_device_json(const struct dg_device_info *info);

struct dg_run {
	time_t started_at;	 /* wall clock at start (RFC 3339 UTC in the JSON) */
	uint64_t device_time_ns; /* dg_engine_device_time_ns() */
	uint64_t elapsed_ns;	 /* wall clock */
	bool complete;		 /* false when interrupted */
	json_t *parameters;	 /* every option in force; stolen by dg_profile_set_run() */
};
/* Sets "run". Steals run->parameters. Returns 0 or -ENOMEM. */
int dg_profile_set_run(json_t *doc, struct dg_run *run);
/* Sets "warnings" (always, possibly empty) with "warning_codes" (the stable code of each,
 * dg_warning_code()), and "errors" (always, possibly empty). */
int dg_profile_set_warnings(json_t *doc, const struct dg_warnings *warnings);
int dg_profile_set_errors(json_t *doc, const struct dg_errors *errors);

/*
 * Output files (src/output.c). PATH is followed as open(2) follows it and then:
 *   - a new name or an existing regular file (also through symlinks, which stay) is replaced
 *     atomically: a temporary file with a short name (".diskgeo.tmp.XXXXXXXX") in the target's
 *     directory, fsync, rename(2), fsync of the directory; an existing file is replaced only
 *     by a complete one;
 *   - one of our own descriptors (/dev/fd/N, /dev/stdout, /proc/self/fd/N) is written through
 *     that descriptor, as a shell redirection is;
 *   - a FIFO, character device (/dev/null, a terminal) or another process's descriptor is
 *     opened for writing and written directly: never created, never renamed over;
 *   - a directory, socket or block device is refused.
 * "-" is standard output.
 */

/* What an output must never be: the files and block device a run reads (the DEVICE, the file
 * behind a loop device, a sim: spec file), by identity, so that any symlink or hard link to them
 * is caught too. */
#define DG_OUTPUT_AVOID_MAX 4
struct dg_output_avoid {
	size_t n;
	struct {
		bool block; /* dev is the st_rdev of a block device; else st_dev with ino */
		dev_t dev;
		ino_t ino;
	} id[DG_OUTPUT_AVOID_MAX];
};
/* Fills `a` with what `dev` reads. Returns 0. */
int dg_output_avoid_device(struct dg_output_avoid *a, const struct dg_device *dev);
/* Adds `path` to `a` when it is a regular file (nothing when it is not). Returns 0, or -ENOSPC
 * when `a` is full. */
int dg_output_avoid_file(struct dg_output_avoid *a, const char *path);

/*
 * Checks, before a run, that `path` can be written afterwards: its directory exists, a file can
 * be created there, its name fits (NAME_MAX) and the file system is not full; a descriptor is
 * open for writing; the target is none of `avoid` (may be NULL) and no directory, socket or block
 * device. Nothing is left behind. Returns 0 or -errno with one line in `err` naming `path`.
 */
int dg_output_check(const char *path, const struct dg_output_avoid *avoid, char *err,
		    size_t errlen);

/* Writes `doc` to `path` with sorted keys and a final newline (see above). Returns 0 or -errno
 * (write(2)'s own: ENOSPC, EDQUOT, EIO, ...) with one line in `err`. */
int dg_json_write(const json_t *doc, const char *path, char *err, size_t errlen);

/* Writes `path` (see above) with `fill` producing its content into a memory stream first.
 * `fill` returns 0 or -errno. Returns 0 or -errno with one line in `err`. */
int dg_file_write(const char *path, int (*fill)(FILE *f, void *arg), void *arg, char *err,
		  size_t errlen);

/* A string from outside the program (a path, a sysfs attribute, a spec's name, a message that
 * quotes one) as a JSON string (new reference). Valid UTF-8 is kept as it is; each byte that is
 * not part of valid UTF-8 becomes the four characters \xHH (upper-case hex), so that the
 * document stays valid JSON. NULL only on ENOMEM. */
json_t *dg_json_text(const char *s);
/* The length of the valid UTF-8 sequence (RFC 3629: no overlong form, no surrogate, nothing
 * above U+10FFFF) that starts at `s`, or 0 when the byte at `s` starts none (or is the final
 * NUL): what dg_json_text() keeps. */
size_t dg_utf8_len(const char *s);

/* Formats `t` as RFC 3339 UTC ("2026-11-22T10:00:00Z") into buf (>= 21 bytes). */
void dg_rfc3339(time_t t, char *buf, size_t len);

#endif
