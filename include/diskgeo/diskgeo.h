/* SPDX-License-Identifier: MIT */
/*
 * diskgeo: common definitions shared by every module.
 *
 * Conventions (see style.md): library functions return 0 or a negative errno; functions that can
 * fail for a reason worth a sentence also take `char *err, size_t errlen` and write one line there
 * (no trailing newline). Library code never prints and never exits.
 */
#ifndef DISKGEO_DISKGEO_H
#define DISKGEO_DISKGEO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DG_VERSION "0.1.0"
#define DG_SCHEMA  "diskgeo.profile/1"
/* Room for one error line: two full paths (PATH_MAX each) and the reason, so that a long path
 * never cuts off the reason after it. */
#define DG_ERRLEN (2 * 4096 + 1024)

/* Exit codes of the command line (contract.md). */
enum dg_exit {
	DG_EXIT_OK = 0,
	DG_EXIT_USAGE = 1,	 /* bad usage or input */
	DG_EXIT_DEVICE = 2,	 /* the device could not be opened or probed */
	DG_EXIT_IO = 3,		 /* finished, but some I/O failed (profile lists the errors) */
	DG_EXIT_INTERRUPTED = 4, /* interrupted; a partial profile was written */
	DG_EXIT_DIFFERS = 5,	 /* compare: a difference beyond --tolerance, or a weak region */
};

/* Units. MB is 10^6 bytes (contract.md); MiB is 2^20. */
#define DG_MB	     1000000.0
#define DG_NS_PER_S  1000000000ull
#define DG_NS_PER_MS 1000000ull

/* Progress of a long measurement: `fraction` done in [0, 1], estimated seconds left (< 0 when
 * unknown). Called from the measuring thread now and then; the CLI draws it on a terminal. */
typedef void (*dg_progress_fn)(void *arg, const char *phase, double fraction, double eta_s);

/*
 * A failed I/O, as listed in a profile's errors[]. `message` is strerror(errno) or a more precise
 * sentence.
 */
struct dg_io_error {
	uint64_t offset_bytes;
	uint64_t length_bytes;
	int errno_value;
	char message[96];
};

/* At most this many error ranges are listed; the rest are only counted (total, total_bytes). */
#define DG_ERRORS_LISTED_MAX 100u

/* A list of I/O errors, bounded: the first DG_ERRORS_LISTED_MAX ranges are kept in v[], every
 * range is counted in `total` (and its bytes in `total_bytes`). Zero-initialise, then
 * dg_errors_add(); free with dg_errors_free(). */
struct dg_errors {
	struct dg_io_error *v;
	size_t n, cap;
	uint64_t total;	      /* ranges, listed or not (>= n) */
	uint64_t total_bytes; /* bytes of all ranges */
	uint64_t last_end;    /* end of the last range, listed or not (merging) */
	int last_errno;
	bool nomem; /* an add failed for want of memory: the list is incomplete */
};

/* Appends one error (merging with the previous range when contiguous and of the same errno).
 * Returns 0 when it was listed (or merged into the last listed range), 1 when it was only
 * counted (the list is full), or -ENOMEM (and sets `nomem`, so that a caller that does not
 * check each add can still refuse an incomplete list at the end). */
int dg_errors_add(struct dg_errors *list, uint64_t offset_bytes, uint64_t length_bytes,
		  int errno_value);
void dg_errors_free(struct dg_errors *list);

/* A growable list of warning strings (owned copies). */
struct dg_warnings {
	char **v;
	size_t n, cap;
	bool nomem; /* an add failed for want of memory: the list is incomplete */
};
/* printf-style; returns 0 or -ENOMEM (and sets `nomem`). */
int dg_warnings_add(struct dg_warnings *list, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void dg_warnings_free(struct dg_warnings *list);

/* The stable code of a warning (the profile's warning_codes[], one per warnings[] entry), so
 * that scripts need not match English sentences: "device-file", "page-cache", "partition",
 * "non-rotational", "zoned", "smr-suspect", "usb-bridge", "mounted", "holders",
 * "write-cache-on", "write-cache-off", "rotation-hidden", "seek-skipped", "budget-short",
 * "slow-spots", "host-hiccups", "samples-dropped", "samples-untimed", "curve-noisy",
 * "spec-adjusted"; "other" for a sentence the table does not know. Never NULL. */
const char *dg_warning_code(const char *message);

/* splitmix64 (Steele, Lea & Flood 2014): the next value of a seeded sequence; the only random
 * source of the library (sample orders, places, the zoo, jitter, the reference simulation). */
static inline uint64_t dg_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#endif
