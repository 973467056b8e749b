/* SPDX-License-Identifier: MIT */
/*
 * The profile document ("diskgeo.profile/1", contract.md) and atomic output files.
 * Measurement modules add their own objects (e.g. "bandwidth", "seek") with json_object_set_new.
 * Keys carry their units; keys a run did not measure are absent, never zero.
 */
#ifndef DISKGEO_PROFILE_H
#define DISKGEO_PROFILE_H

#include <stdbool.h>
#include <stdio.h>
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
 * Writes `doc` to `path` ("-" = stdout) with sorted keys and a final newline, atomically: a
 * temporary file in the same directory, fsync, rename. An existing file is replaced only when the
 * new one is complete. Returns 0 or -errno with one line in `err`.
 */
int dg_json_write(const json_t *doc, const char *path, char *err, size_t errlen);

/* Writes a file atomically ("-" = stdout) with `fill` producing its content. `fill` returns 0 or
 * -errno. Returns 0 or -errno with one line in `err`. */
int dg_file_write(const char *path, int (*fill)(FILE *f, void *arg), void *arg, char *err,
		  size_t errlen);

/* Formats `t` as RFC 3339 UTC ("2026-11-22T10:00:00Z") into buf (>= 21 bytes). */
void dg_rfc3339(time_t t, char *buf, size_t len);

#endif
