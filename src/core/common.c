/* SPDX-License-Identifier: MIT */
/* Small shared containers: the error and warning lists of a profile. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/diskgeo.h"
#include "util.h"

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 8;
	while (ncap < need)
		ncap *= 2;
	void *nv = realloc(*v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

int dg_errors_add(struct dg_errors *list, uint64_t offset_bytes, uint64_t length_bytes,
		  int errno_value)
{
	bool merge =
	    list->total && list->last_errno == errno_value && list->last_end == offset_bytes;

	list->total_bytes += length_bytes;
	list->last_end = offset_bytes + length_bytes;
	list->last_errno = errno_value;
	if (merge && list->n == list->total) {
		list->v[list->n - 1].length_bytes += length_bytes;
		return 0;
	}
	if (merge)
		return 1; /* grows a range past the list's end: counted already */
	list->total++;
	if (list->n >= DG_ERRORS_LISTED_MAX)
		return 1;
	if (grow((void **)&list->v, &list->cap, list->n + 1, sizeof(*list->v))) {
		list->total--;
		list->nomem = true;
		return -ENOMEM;
	}
	struct dg_io_error *e = &list->v[list->n++];
	e->offset_bytes = offset_bytes;
	e->length_bytes = length_bytes;
	e->errno_value = errno_value;
	snprintf(e->message, sizeof(e->message), "%s", strerror(errno_value));
	return 0;
}

void dg_errors_free(struct dg_errors *list)
{
	if (!list)
		return;
	free(list->v);
	memset(list, 0, sizeof(*list));
}

int dg_warnings_add(struct dg_warnings *list, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	int rc = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (rc < 0) {
		list->nomem = true;
		return -ENOMEM;
	}
	for (size_t i = 0; i < list->n; i++) {
		if (!strcmp(list->v[i], s)) { /* a condition is said once */
			free(s);
			return 0;
		}
	}
	if (grow((void **)&list->v, &list->cap, list->n + 1, sizeof(*list->v))) {
		free(s);
		list->nomem = true;
		return -ENOMEM;
	}
	list->v[list->n++] = s;
	return 0;
}

/* Codes by a phrase each message carries; first match wins. A new warning adds its row here and
 * its code to diskgeo(8) (test_common checks every row). */
static const struct {
	const char *phrase, *code;
} warning_codes[] = {
    {"is a regular file", "device-file"},
    {"refused O_DIRECT", "page-cache"},
    {"is a partition of", "partition"},
    {"non-rotational device", "non-rotational"},
    {"zoned device", "zoned"},
    {"drive-managed SMR", "smr-suspect"},
    {"USB transport", "usb-bridge"},
    {"is mounted", "mounted"},
    {"has holders", "holders"},
    {"write cache is on", "write-cache-on"},
    {"write cache is off", "write-cache-off"},
    {"says it rotates, but", "rotation-hidden"},
    {"says it does not rotate, but", "rotation-found"},
    {"but its sequential rate falls in", "zones-found"},
    {"the seek phase needs", "seek-skipped"},
    {"cannot hold the minimum", "budget-short"},
    {"slow spot", "slow-spots"},
    {"came late from the host", "host-hiccups"},
    {"dropped:", "samples-dropped"},
    {"could not be timed", "samples-untimed"},
    {"set aside as outliers", "curve-noisy"},
    {"the feasible range", "spec-adjusted"},
    {"not aligned to the physical sector", "partition-misaligned"},
    {"cells not measured", "sweep-thinned"},
};

const char *dg_warning_code(const char *message)
{
	for (size_t i = 0; message && i < ARRAY_SIZE(warning_codes); i++)
		if (strstr(message, warning_codes[i].phrase))
			return warning_codes[i].code;
	return "other";
}

void dg_warnings_free(struct dg_warnings *list)
{
	if (!list)
		return;
	for (size_t i = 0; i < list->n; i++)
		free(list->v[i]);
	free(list->v);
	memset(list, 0, sizeof(*list));
}
