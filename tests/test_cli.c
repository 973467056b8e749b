/* SPDX-License-Identifier: MIT */
/*
 * Tests of the command line's shared helpers (cli/cli.c): the units of the human output (decimal
 * places with % of the device, binary request sizes and distances), the progress line (cleared
 * to the end of the line, one percent for the whole run, an ETA in wall-clock time), and the
 * stream rules (--json - with --csv - refused, where the summary goes, -q).
 */
#include <setjmp.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli.h"

static void human_units(void **state)
{
	char b[64];

	dg_fmt_bytes(b, sizeof(b), 4000787030016ull);
	assert_string_equal(b, "4.00 TB");
	dg_fmt_bytes(b, sizeof(b), 107374182400ull); /* 100 GiB */
	assert_string_equal(b, "107.37 GB");
	dg_fmt_ibytes(b, sizeof(b), 262144);
	assert_string_equal(b, "256 KiB");
	dg_fmt_ibytes(b, sizeof(b), 4096);
	assert_string_equal(b, "4 KiB");
	dg_fmt_ibytes(b, sizeof(b), 1ull << 30);
	assert_string_equal(b, "1 GiB");
	dg_fmt_ibytes(b, sizeof(b), 4612608); /* 4.40 MiB, not a whole number */
	assert_string_equal(b, "4.40 MiB");
	dg_fmt_ibytes(b, sizeof(b), 512);
	assert_string_equal(b, "512 B");
	cli_human_position(b, sizeof(b), 1000000000000ull, 4000000000000ull);
	assert_string_equal(b, "1.00 TB (25.0%)");
	cli_human_position(b, sizeof(b), 0, 4000000000000ull);
	assert_string_equal(b, "0 B (0.0%)");
	/* probe's size line: both systems, always two decimals */
	assert_string_equal(dg_fmt_ibytes2(b, sizeof(b), 1ull << 30), "1.00 GiB");
	assert_string_equal(dg_fmt_ibytes2(b, sizeof(b), 4000787030016ull), "3.64 TiB");
	assert_string_equal(dg_fmt_bytes(b, sizeof(b), 999), "999 B");
}

/* util.h's median: odd and even counts, unsorted input, none */
static void median(void **state)
{
	double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2}, one[] = {7};

	(void)state;
	assert_true(dg_median(odd, ARRAY_SIZE(odd)) == 3);
	assert_true(dg_median(even, ARRAY_SIZE(even)) == 2.5);
	assert_true(even[0] == 1); /* sorted in place */
	assert_true(dg_median(one, 1) == 7);
	assert_true(isnan(dg_median(one, 0)));
}

/* Runs `fn` with stderr going into a file; returns what it wrote (static). */
static const char *captured_stderr(void (*fn)(void *), void *arg)
{
	static char buf[4096];
	char path[] = "/tmp/dg_test_cli.XXXXXX";
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	FILE *f;
	size_t n;

	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	fn(arg);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	close(fd);
	unlink(path);
	return buf;
}

static void progress_run(void *arg)
{
	struct cli_progress *p = arg;

	/* a run of two measurements: the first a quarter, the second the rest */
	cli_progress_stage(p, 0, 0.25);
	cli_progress(p, "bandwidth", 0.5, 1560); /* device time: 1560 s, ignored */
	p->last_ns = 0;
	cli_progress_stage(p, 0.25, 0.75);
	cli_progress(p, "seek", 0.0, 1000); /* the second phase starts: 25% of the run */
	p->last_ns = 0;
	cli_progress(p, "seek", 0.5, 1000);
	cli_progress_clear(p);
}

static void progress_line(void **state)
{
	struct cli_progress p;
	const char *out;

	cli_progress_init(&p);
	p.draw = true;			/* as on a terminal */
	p.t0_ns -= 10ull * DG_NS_PER_S; /* ten seconds of wall time behind the run */
	out = captured_stderr(progress_run, &p);
	/* 12.5% of the run after 10 s: 70 s left; 25%: 30 s; 62.5%: 6 s (wall clock) */
	assert_non_null(strstr(out, "\r\033[Kbandwidth:  12% of the run, about 1 min 10 s left"));
	assert_non_null(strstr(out, "\r\033[Kseek:  25% of the run, about 30 s left"));
	assert_non_null(strstr(out, "\r\033[Kseek:  62% of the run, about 6 s left"));
	/* the clear at the end */
	assert_int_equal(out[strlen(out) - 1], 'K');
	assert_false(p.shown);
	assert_null(strstr(out, "1560"));
}

static void no_progress_when_quiet(void **state)
{
	struct cli_progress p;

	cli_verbosity = CLI_QUIET;
	cli_progress_init(&p);
	assert_false(p.draw);
	assert_null(cli_progress_fn(&p));
	cli_verbosity = CLI_VERBOSE;
	cli_progress_init(&p);
	assert_ptr_equal(cli_progress_fn(&p), cli_progress); /* -v reports phases */
	cli_verbosity = CLI_NORMAL;
}

static void check_streams(void *arg)
{
	(void)arg;
	assert_int_equal(cli_check_streams("seek", "-", "-"), DG_EXIT_USAGE);
	assert_int_equal(cli_check_streams("seek", "-", "x.csv"), DG_EXIT_OK);
	assert_int_equal(cli_check_streams("seek", NULL, "-"), DG_EXIT_OK);
}

static void streams(void **state)
{
	const char *out = captured_stderr(check_streams, NULL);

	assert_string_equal(out, "diskgeo: seek: --json - and --csv - would both write to "
				 "standard output; send one to a file\n");
	assert_ptr_equal(cli_summary_out(NULL, NULL), stdout);
	assert_ptr_equal(cli_summary_out("x.json", NULL), stdout);
	assert_ptr_equal(cli_summary_out("-", NULL), stderr);
	assert_ptr_equal(cli_summary_out(NULL, "-"), stderr);
	cli_verbosity = CLI_QUIET;
	assert_null(cli_summary_out(NULL, NULL));
	cli_verbosity = CLI_NORMAL;
}

static void common_options(void **state)
{
	const char *json = NULL;

	assert_true(cli_common_option('J', &json));
	assert_string_equal(json, "-");
	assert_true(cli_common_option('q', &json));
	assert_int_equal(cli_verbosity, CLI_QUIET);
	assert_true(cli_common_option('v', &json));
	assert_int_equal(cli_verbosity, CLI_VERBOSE);
	assert_false(cli_common_option('j', &json));
	cli_verbosity = CLI_NORMAL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(human_units),   cmocka_unit_test(median),
	    cmocka_unit_test(progress_line), cmocka_unit_test(no_progress_when_quiet),
	    cmocka_unit_test(streams),	     cmocka_unit_test(common_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
