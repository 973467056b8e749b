/* SPDX-License-Identifier: MIT */
/*
 * End-to-end tests of `diskgeo probe`: the built binary is run and its exit code, its one-line
 * stderr and its JSON output are checked against the contract.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "diskgeo/diskgeo.h"
#include "t_helpers.h"
#include "util.h"

static const char *binary = DG_BINARY_DIR "/diskgeo";
static char dir[] = "/tmp/dg_test_cli_probe.XXXXXX";

struct result {
	int status; /* exit code, or -1 when killed */
	char out[65536];
	char err[8192];
};

/* Runs the binary with argv (NULL-terminated, argv[0] excluded), capturing both streams. */
static void run(struct result *r, const char *const *args)
{
	const char *argv[16] = {"diskgeo"};
	size_t n = 1;
	struct t_io io = {
	    .out = r->out, .out_len = sizeof(r->out), .err = r->err, .err_len = sizeof(r->err)};

	for (; args[n - 1] && n < 15; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	r->status = t_exec(binary, argv, &io);
}

/* Exactly one line, starting "diskgeo: " and containing `needle`. */
static void assert_one_line(const char *err, const char *needle)
{
	size_t len = strlen(err);

	if (strncmp(err, "diskgeo: ", 9) || !len || err[len - 1] != '\n' ||
	    strchr(err, '\n') != err + len - 1 || !strstr(err, needle))
		fail_msg("stderr \"%s\" is not one line with \"%s\"", err, needle);
}

struct bad_case {
	const char *args[6];
	int status;
	const char *message;
};

static void bad_usage(void **state)
{
	static struct result r;
	char missing[300], empty[300];

	snprintf(missing, sizeof(missing), "%s/missing.img", dir);
	snprintf(empty, sizeof(empty), "%s/empty.img", dir);
	int fd = open(empty, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	close(fd);
	const struct bad_case cases[] = {
	    {{"probe", NULL}, DG_EXIT_USAGE, "DEVICE is missing"},
	    {{"probe", "--bogus", empty, NULL}, DG_EXIT_USAGE, "unknown option '--bogus'"},
	    {{"probe", "-x", empty, NULL}, DG_EXIT_USAGE, "unknown option '-x'"},
	    {{"probe", empty, "--json", NULL}, DG_EXIT_USAGE, "needs an argument"},
	    {{"probe", empty, empty, NULL}, DG_EXIT_USAGE, "one DEVICE expected"},
	    {{"probe", missing, NULL}, DG_EXIT_DEVICE, "No such file or directory"},
	    {{"probe", dir, NULL}, DG_EXIT_DEVICE, "is a directory"},
	    {{"probe", "/dev/null", NULL}, DG_EXIT_DEVICE, "not a block device or regular file"},
	    {{"probe", empty, NULL}, DG_EXIT_DEVICE, "is empty"},
	    {{"probe", "sim:", NULL}, DG_EXIT_USAGE, "sim:"},
	    {{"probe", "sim:no-such-drive-xyz", NULL}, DG_EXIT_DEVICE, "no-such-drive-xyz"},
	    {{"probe", empty, "--json", "/nonexistent-dir/p.json", NULL},
	     DG_EXIT_USAGE,
	     "/nonexistent-dir"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		run(&r, cases[i].args);
		if (r.status != cases[i].status)
			fail_msg("case %zu (%s): exit %d, want %d; stderr: %s", i,
				 cases[i].args[1] ? cases[i].args[1] : "-", r.status,
				 cases[i].status, r.err);
		assert_one_line(r.err, cases[i].message);
		assert_string_equal(r.out, "");
	}
	unlink(empty);
}

static void help(void **state)
{
	static struct result r;
	const char *args[] = {"probe", "--help", NULL};

	run(&r, args);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "Usage: diskgeo probe DEVICE"));
	assert_string_equal(r.err, "");
	const char *top[] = {"--help", NULL};
	run(&r, top);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	assert_memory_equal(r.out, "Usage: diskgeo COMMAND", 22);
	assert_non_null(strstr(r.out, "\n  probe      show what the device is"));
}

static void good_file(void **state)
{
	static struct result r;
	char img[300], json[300];
	const uint64_t size = 3 * 1048576 + 4096;

	snprintf(img, sizeof(img), "%s/disk.img", dir);
	snprintf(json, sizeof(json), "%s/probe.json", dir);
	int fd = open(img, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	close(fd);

	/* JSON on stdout: nothing else there; the file warning on stderr. */
	const char *to_stdout[] = {"probe", img, "--json", "-", NULL};
	run(&r, to_stdout);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "diskgeo: warning: "));
	assert_non_null(strstr(r.err, "regular file"));
	json_error_t jerr;
	json_t *doc = json_loads(r.out, 0, &jerr);
	if (!doc)
		fail_msg("stdout is not JSON: %s", jerr.text);
	assert_string_equal(json_string_value(json_object_get(doc, "schema")), DG_SCHEMA);
	json_t *dev = json_object_get(doc, "device");
	assert_int_equal(json_integer_value(json_object_get(dev, "size_bytes")), size);
	assert_string_equal(json_string_value(json_object_get(dev, "kind")), "file");
	assert_string_equal(json_string_value(json_object_get(dev, "path")), img);
	assert_true(json_is_null(json_object_get(dev, "rotational")));
	assert_true(json_array_size(json_object_get(doc, "warnings")) >= 1);
	json_decref(doc);

	/* JSON to a file: the table still goes to stdout. */
	const char *to_file[] = {"probe", "-j", json, img, NULL};
	run(&r, to_file);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "size"));
	assert_non_null(strstr(r.out, "3149824 bytes (3.15 MB, 3.00 MiB)"));
	assert_non_null(strstr(r.out, "kind"));
	doc = json_load_file(json, 0, &jerr);
	if (!doc)
		fail_msg("%s is not JSON: %s", json, jerr.text);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(doc, "device"), "size_bytes")),
	    size);
	json_decref(doc);
	unlink(json);
	unlink(img);
}

static void sim_device(void **state)
{
	static struct result r;
	const char *args[] = {"probe", "sim:wd-red-4tb", "--json", "-", NULL};

	run(&r, args);
	assert_int_equal(r.status, 0);
	json_t *doc = json_loads(r.out, 0, NULL);
	assert_non_null(doc);
	json_t *dev = json_object_get(doc, "device");
	assert_string_equal(json_string_value(json_object_get(dev, "kind")), "sim");
	assert_string_equal(json_string_value(json_object_get(dev, "transport")), "sim");
	assert_true(json_is_true(json_object_get(dev, "rotational")));
	assert_true(json_integer_value(json_object_get(dev, "size_bytes")) > 0);
	json_decref(doc);
}

static int setup_dir(void **state)
{
	if (access(binary, X_OK)) {
		fprintf(stderr, "%s not built\n", binary);
		return -1;
	}
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(bad_usage),
	    cmocka_unit_test(help),
	    cmocka_unit_test(good_file),
	    cmocka_unit_test(sim_device),
	};
	return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
