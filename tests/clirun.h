/* SPDX-License-Identifier: MIT */
/* Running the built diskgeo binary from tests: shared by the test_cli_* programs. */
#ifndef DISKGEO_TESTS_CLIRUN_H
#define DISKGEO_TESTS_CLIRUN_H

#include <stddef.h>

/* Runs `binary` with `argv` (NULL-terminated, argv[0] included), stdout and stderr redirected
 * into the files `out_path` and `err_path` (truncated). Returns the exit status, or -1 when the
 * program was killed by a signal. */
int clirun(const char *binary, const char *const *argv, const char *out_path, const char *err_path);

/* Reads up to len-1 bytes of `path` into buf, NUL-terminated ("" when missing). */
void clirun_slurp(const char *path, char *buf, size_t len);

/* The number of lines in `text`. */
size_t clirun_lines(const char *text);

#endif
