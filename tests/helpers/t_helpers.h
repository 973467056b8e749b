/* SPDX-License-Identifier: MIT */
/*
 * The tests' helper library (liburing's test/helpers.h idea): every name starts t_. Running a
 * program or a function in a child process with its output captured (t_exec, t_fork), reading a
 * file back (t_slurp), and the rig most library tests start from: a device, an engine on it and,
 * for a simulated drive, its truth (t_rig_open). The rig asserts with cmocka; the runners do not,
 * so a test decides what a failure means.
 */
#ifndef DISKGEO_TESTS_T_HELPERS_H
#define DISKGEO_TESTS_T_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diskgeo/diskgeo.h"
#include "diskgeo/engine.h"
#include "diskgeo/model.h"

/* Where a child's stdout and stderr go: into a buffer (NUL-terminated, cut at len - 1), else
 * into a file (truncated), else where the test's own go. */
struct t_io {
	char *out, *err;
	size_t out_len, err_len;
	const char *out_path, *err_path;
};

/* Runs `file` (a path, or a name looked up in PATH) with `argv` (NULL-terminated, argv[0]
 * included), its output as `io` says (NULL: inherited). Returns its exit status; -1 when it
 * could not be started or was killed by a signal (127: exec failed). */
int t_exec(const char *file, const char *const *argv, const struct t_io *io);

/* t_exec with stdout and stderr into the files `out_path` and `err_path`. */
int t_exec_files(const char *file, const char *const *argv, const char *out_path,
		 const char *err_path);

/* Runs fn(arg) in a child process and exits with its return value; with T_NOBODY the child
 * first drops root to the user nobody (root ignores file permissions) and returns 77 when it
 * cannot. Returns the exit status, or -1 as t_exec. */
#define T_NOBODY 1u
int t_fork(int (*fn)(void *), void *arg, unsigned flags, const struct t_io *io);

/* Reads up to len-1 bytes of `path` into buf, NUL-terminated ("" when missing). */
void t_slurp(const char *path, char *buf, size_t len);

/* The number of lines (newlines) in `text`. */
size_t t_lines(const char *text);

/* A device, an engine on it and, with `truth` on a simulated drive, the drive's truth. */
struct t_rig {
	struct dg_device *dev;
	struct dg_engine *e;
	struct dg_errors errors;    /* for the measurement under test; freed by t_rig_close */
	const struct dg_spec *spec; /* sim: drives, else NULL */
	struct dg_truth *truth;
};

/* Opens `path` (sim:NAME, a file or a device) with `dev_flags` (DG_DEVICE_*), an engine of
 * `kind` at queue depth `qd` taking requests up to 1 MiB, and the truth when asked; asserts each
 * step and prints the error line of one that fails. */
void t_rig_open(struct t_rig *g, const char *path, unsigned dev_flags, enum dg_engine_kind kind,
		unsigned qd, bool truth);
void t_rig_close(struct t_rig *g);

/* Writes zoo drive `seed` (`diskgeo model --random SEED`) to `path`, a mkstemps template ending
 * in ".json" (the caller unlinks it), and puts "sim:PATH" in `sim`; asserts each step. */
void t_zoo_file(uint64_t seed, char *path, char *sim, size_t simlen);

/* How many of a test's n drives to run: all, or n_san of them under the sanitizers (which run
 * the same code about ten times slower; the full set runs in the plain build). */
static inline size_t t_drives(size_t n, size_t n_san)
{
#if defined(__SANITIZE_ADDRESS__)
	return n < n_san ? n : n_san;
#else
	(void)n_san;
	return n;
#endif
}

#endif
