/* SPDX-License-Identifier: MIT */
/*
 * Allocation-failure injection for tests/test_chaos.sh (jansson's test_chaos idea): linked into
 * diskgeo-chaos, a copy of diskgeo whose own allocations go through the wrappers below
 * (-Wl,--wrap=malloc,...) and whose jansson allocations come here through json_set_alloc_funcs().
 *
 * Environment:
 *   DG_CHAOS_FAIL=N   the N-th allocation (1-based) returns NULL with errno ENOMEM; the others
 *                     succeed. Unset or 0: none fails.
 *   DG_CHAOS_SITES=F  writes one line per allocation to F: the caller's address in the executable
 *                     (hex, relative to its load address, for addr2line), so that a test can pick
 *                     one failure point per call site.
 * Allocations inside libc (stdio, getline) are not counted: they are libc's to handle.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t size);
int __real_vasprintf(char **out, const char *fmt, va_list ap);

/* Every function of this file sits in the section chaos_text, so that a backtrace can skip them
 * by address whether or not the compiler inlined them. */
#define CHAOS __attribute__((section("chaos_text"), noinline))
extern const char __start_chaos_text[], __stop_chaos_text[];

/* A test tool's process-wide switches (not library code). */
static unsigned long chaos_count, chaos_fail_at;
static FILE *chaos_sites;
static const void *chaos_base;
static int chaos_in_trace;

static int in_chaos(const void *p)
{
	return (const char *)p >= __start_chaos_text && (const char *)p < __stop_chaos_text;
}

/* Notes the first frame outside this file that lies in the executable: the caller in diskgeo's
 * code (for jansson's allocations, the diskgeo function that called into jansson). */
CHAOS static void note_site(void)
{
	void *frames[24];
	Dl_info info;
	int n;

	if (!chaos_sites || chaos_in_trace)
		return;
	chaos_in_trace = 1;
	n = backtrace(frames, 24);
	for (int i = 0; i < n; i++) {
		if (!in_chaos(frames[i]) && dladdr(frames[i], &info) &&
		    info.dli_fbase == chaos_base) {
			fprintf(chaos_sites, "%lx\n",
				(unsigned long)((uintptr_t)frames[i] - (uintptr_t)chaos_base - 1));
			break;
		}
	}
	chaos_in_trace = 0;
}

/* Counts one allocation; true when this one must fail. */
CHAOS static int should_fail(void)
{
	if (chaos_in_trace)
		return 0;
	chaos_count++;
	note_site();
	if (chaos_fail_at && chaos_count == chaos_fail_at) {
		errno = ENOMEM;
		return 1;
	}
	return 0;
}

CHAOS void *__wrap_malloc(size_t size)
{
	return should_fail() ? NULL : __real_malloc(size);
}

CHAOS void *__wrap_calloc(size_t n, size_t size)
{
	return should_fail() ? NULL : __real_calloc(n, size);
}

CHAOS void *__wrap_realloc(void *p, size_t size)
{
	return should_fail() ? NULL : __real_realloc(p, size);
}

CHAOS char *__wrap_strdup(const char *s)
{
	return should_fail() ? NULL : __real_strdup(s);
}

CHAOS char *__wrap_strndup(const char *s, size_t n)
{
	return should_fail() ? NULL : __real_strndup(s, n);
}

CHAOS int __wrap_posix_memalign(void **p, size_t align, size_t size)
{
	return should_fail() ? ENOMEM : __real_posix_memalign(p, align, size);
}

CHAOS int __wrap_vasprintf(char **out, const char *fmt, va_list ap)
{
	return should_fail() ? -1 : __real_vasprintf(out, fmt, ap);
}

CHAOS int __wrap_asprintf(char **out, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = __wrap_vasprintf(out, fmt, ap);
	va_end(ap);
	return rc;
}

CHAOS static void *json_alloc(size_t size)
{
	return should_fail() ? NULL : __real_malloc(size);
}

static void chaos_done(void)
{
	if (chaos_sites)
		fclose(chaos_sites);
	chaos_sites = NULL;
}

__attribute__((constructor)) static void chaos_init(void)
{
	const char *fail = getenv("DG_CHAOS_FAIL"), *sites = getenv("DG_CHAOS_SITES");
	Dl_info info;

	if (dladdr((void *)chaos_init, &info))
		chaos_base = info.dli_fbase;
	chaos_fail_at = fail ? strtoul(fail, NULL, 10) : 0;
	if (sites && *sites) {
		chaos_in_trace = 1; /* fopen's and backtrace's own allocations are not counted */
		chaos_sites = fopen(sites, "w");
		void *warm[2];
		backtrace(warm, 2); /* loads libgcc once, before the counting starts */
		chaos_in_trace = 0;
		atexit(chaos_done);
	}
	json_set_alloc_funcs(json_alloc, free);
}
