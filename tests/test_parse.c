/* SPDX-License-Identifier: MIT */
/* Tests of size, time, number and range parsing: every accepted form and every bad one. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "diskgeo/parse.h"
#include "util.h"

struct size_case {
	const char *text;
	uint32_t sector_bytes;
	int rc;
	uint64_t bytes;
};

static const struct size_case size_cases[] = {
    {"0", 0, 0, 0},
    {"1", 0, 0, 1},
    {"4096", 0, 0, 4096},
    {"100B", 0, 0, 100},
    {"100b", 0, 0, 100},
    {"1k", 0, 0, 1024},
    {"1K", 0, 0, 1024},
    {"1KiB", 0, 0, 1024},
    {"1kib", 0, 0, 1024},
    /* util-linux strtosize(): the letter or "iB" = 1024^n, "B" after the letter = 1000^n */
    {"1KB", 0, 0, 1000},
    {"1kB", 0, 0, 1000},
    {"1kb", 0, 0, 1000},
    {"1MB", 0, 0, 1000000},
    {"1GB", 0, 0, 1000000000},
    {"100GB", 0, 0, 100000000000ull},
    {"4TB", 0, 0, 4000000000000ull},
    {"2PB", 0, 0, 2000000000000000ull},
    {"3EB", 0, 0, 3000000000000000000ull},
    {"1.5GB", 0, 0, 1500000000},
    {"1P", 0, 0, 1ull << 50},
    {"1PiB", 0, 0, 1ull << 50},
    {"15E", 0, 0, 15ull << 60},
    {"1EiB", 0, 0, 1ull << 60},
    {"100G", 0, 0, 100ull << 30},
    {"4M", 0, 0, 4ull << 20},
    {"4MiB", 0, 0, 4ull << 20},
    {"2G", 0, 0, 2ull << 30},
    {"2g", 0, 0, 2ull << 30},
    {"3T", 0, 0, 3ull << 40},
    {"3TiB", 0, 0, 3ull << 40},
    {"1.5k", 0, 0, 1536},
    {"0.5M", 0, 0, 512 * 1024},
    {"1.25G", 0, 0, 1342177280},
    {"2.000k", 0, 0, 2048},
    {"1.0", 0, 0, 1},
    {"8s", 512, 0, 4096},
    {"8S", 4096, 0, 32768},
    {"1.5s", 512, 0, 768},
    {"18446744073709551615", 0, 0, UINT64_MAX},
    {"16777215T", 0, 0, 16777215ull << 40},
    /* bad forms */
    {"", 0, -EINVAL, 0},
    {"k", 0, -EINVAL, 0},
    {"-1", 0, -EINVAL, 0},
    {"-1k", 0, -EINVAL, 0},
    {"+1", 0, -EINVAL, 0},
    {" 1", 0, -EINVAL, 0},
    {"1 ", 0, -EINVAL, 0},
    {"1 k", 0, -EINVAL, 0},
    {"abc", 0, -EINVAL, 0},
    {"12abc", 0, -EINVAL, 0},
    {"1x", 0, -EINVAL, 0},
    {"1kk", 0, -EINVAL, 0},
    {"1kiB2", 0, -EINVAL, 0},
    {"1iB", 0, -EINVAL, 0},
    {"1Z", 0, -EINVAL, 0},
    {"1KBB", 0, -EINVAL, 0},
    {"1KiBB", 0, -EINVAL, 0},
    {"1Ki", 0, -EINVAL, 0},
    {"16E", 0, -ERANGE, 0},
    {"19EB", 0, -ERANGE, 0},
    {"1.", 0, -EINVAL, 0},
    {".5k", 0, -EINVAL, 0},
    {"1..5k", 0, -EINVAL, 0},
    {"1.5.2k", 0, -EINVAL, 0},
    {"0x10", 0, -EINVAL, 0},
    {"1e3", 0, -EINVAL, 0},
    {"0.5", 0, -EINVAL, 0},  /* half a byte */
    {"0.1k", 0, -EINVAL, 0}, /* 102.4 bytes */
    {"1.3s", 512, -EINVAL, 0},
    {"8s", 0, -EINVAL, 0}, /* sector size not known */
    {"8sB", 512, -EINVAL, 0},
    {"18446744073709551616", 0, -ERANGE, 0},
    {"99999999999999999999999", 0, -ERANGE, 0},
    {"16777216T", 0, -ERANGE, 0},
    {"18446744073709551615k", 0, -ERANGE, 0},
    {"36028797018963968s", 512, -ERANGE, 0},
    {"1.0000000000000000000000001k", 0, -ERANGE, 0},
};

static void sizes(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(size_cases); i++) {
		const struct size_case *c = &size_cases[i];
		uint64_t bytes = 0xdeadbeef;
		int rc = dg_parse_size(c->text, c->sector_bytes, &bytes);
		if (rc != c->rc || (rc == 0 && bytes != c->bytes))
			fail_msg("size \"%s\" (sector %u): rc %d bytes %llu, want rc %d bytes %llu",
				 c->text, c->sector_bytes, rc, (unsigned long long)bytes, c->rc,
				 (unsigned long long)c->bytes);
		if (rc)
			assert_int_equal(bytes, 0xdeadbeef); /* untouched on failure */
	}
	uint64_t b;
	assert_int_equal(dg_parse_size(NULL, 0, &b), -EINVAL);
}

struct time_case {
	const char *text;
	int rc;
	uint64_t ns;
};

static const struct time_case time_cases[] = {
    {"0", 0, 0},
    {"60", 0, 60000000000ull},
    {"1s", 0, 1000000000ull},
    {"1S", 0, 1000000000ull},
    {"1.5s", 0, 1500000000ull},
    {"250ms", 0, 250000000ull},
    {"250MS", 0, 250000000ull},
    {"0.5ms", 0, 500000ull},
    {"2m", 0, 120000000000ull},
    {"1.5m", 0, 90000000000ull},
    {"1h", 0, 3600000000000ull},
    {"1H", 0, 3600000000000ull},
    {"0.5h", 0, 1800000000000ull},
    {"0.000000001s", 0, 1},
    {"0.0000000004s", 0, 0}, /* below 1 ns rounds to nearest */
    {"0.0000000006s", 0, 1},
    {"18446744073", 0, 18446744073000000000ull},
    {"1h", 0, 3600000000000ull},
    {"1.5H", 0, 5400000000000ull},
    {"5124095h", 0, 5124095ull * 3600 * 1000000000ull},
    /* bad forms */
    {"", -EINVAL, 0},
    {"s", -EINVAL, 0},
    {"ms", -EINVAL, 0},
    {"-1s", -EINVAL, 0},
    {"+1s", -EINVAL, 0},
    {"1d", -EINVAL, 0},
    {"1hr", -EINVAL, 0},
    {"5124096h", -ERANGE, 0},
    {"1us", -EINVAL, 0},
    {"1 s", -EINVAL, 0},
    {"1sec", -EINVAL, 0},
    {"1mss", -EINVAL, 0},
    {"1.", -EINVAL, 0},
    {".5s", -EINVAL, 0},
    {"abc", -EINVAL, 0},
    {"18446744074", -ERANGE, 0},
    {"307445734561m", -ERANGE, 0},
    {"5124096h", -ERANGE, 0},
    {"99999999999h", -ERANGE, 0},
    {"99999999999999999999999ms", -ERANGE, 0},
};

static void times(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(time_cases); i++) {
		const struct time_case *c = &time_cases[i];
		uint64_t ns = 0xdeadbeef;
		int rc = dg_parse_time(c->text, &ns);
		if (rc != c->rc || (rc == 0 && ns != c->ns))
			fail_msg("time \"%s\": rc %d ns %llu, want rc %d ns %llu", c->text, rc,
				 (unsigned long long)ns, c->rc, (unsigned long long)c->ns);
	}
}

struct uint_case {
	const char *text;
	uint64_t min, max;
	int rc;
	uint64_t value;
};

static const struct uint_case uint_cases[] = {
    {"1", 1, 256, 0, 1},
    {"256", 1, 256, 0, 256},
    {"0", 0, 10, 0, 0},
    {"18446744073709551615", 0, UINT64_MAX, 0, UINT64_MAX},
    {"0", 1, 256, -ERANGE, 0},
    {"257", 1, 256, -ERANGE, 0},
    {"18446744073709551616", 0, UINT64_MAX, -ERANGE, 0},
    {"", 0, 10, -EINVAL, 0},
    {"-1", 0, 10, -EINVAL, 0},
    {"1.0", 0, 10, -EINVAL, 0},
    {"1k", 0, 10000, -EINVAL, 0},
    {"3 ", 0, 10, -EINVAL, 0},
    {"x", 0, 10, -EINVAL, 0},
};

static void uints(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(uint_cases); i++) {
		const struct uint_case *c = &uint_cases[i];
		uint64_t v = 0xdeadbeef;
		int rc = dg_parse_uint(c->text, c->min, c->max, &v);
		if (rc != c->rc || (rc == 0 && v != c->value))
			fail_msg("uint \"%s\" in [%llu, %llu]: rc %d value %llu", c->text,
				 (unsigned long long)c->min, (unsigned long long)c->max, rc,
				 (unsigned long long)v);
	}
}

struct range_case {
	const char *text;
	uint32_t sector_bytes;
	int rc;
	uint64_t start, end;
};

static const struct range_case range_cases[] = {
    {"0:1G", 0, 0, 0, 1ull << 30},
    {"0:100GB", 0, 0, 0, 100000000000ull},
    {"1G:2G", 0, 0, 1ull << 30, 2ull << 30},
    {":1M", 0, 0, 0, 1ull << 20},
    {"1M:", 0, 0, 1ull << 20, UINT64_MAX},
    {":", 0, 0, 0, UINT64_MAX},
    {"8s:16s", 512, 0, 4096, 8192},
    {"", 0, -EINVAL, 0, 0},
    {"1G", 0, -EINVAL, 0, 0},
    {"1G:2G:3G", 0, -EINVAL, 0, 0},
    {"2G:1G", 0, -EINVAL, 0, 0},
    {"1G:1G", 0, -EINVAL, 0, 0},
    {"x:1G", 0, -EINVAL, 0, 0},
    {"0:1x", 0, -EINVAL, 0, 0},
    {"-1:1G", 0, -EINVAL, 0, 0},
    {"8s:16s", 0, -EINVAL, 0, 0},
    {"0:99999999999999999999T", 0, -ERANGE, 0, 0},
};

static void ranges(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(range_cases); i++) {
		const struct range_case *c = &range_cases[i];
		uint64_t s = 7, e = 7;
		int rc = dg_parse_range(c->text, c->sector_bytes, &s, &e);
		if (rc != c->rc || (rc == 0 && (s != c->start || e != c->end)))
			fail_msg("range \"%s\": rc %d start %llu end %llu", c->text, rc,
				 (unsigned long long)s, (unsigned long long)e);
	}
	char longtext[300];
	for (size_t i = 0; i < sizeof(longtext) - 1; i++)
		longtext[i] = '1';
	longtext[sizeof(longtext) - 1] = '\0';
	longtext[5] = ':';
	uint64_t s, e;
	assert_int_not_equal(dg_parse_range(longtext, 0, &s, &e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(sizes),
	    cmocka_unit_test(times),
	    cmocka_unit_test(uints),
	    cmocka_unit_test(ranges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
