/* SPDX-License-Identifier: MIT */
/*
 * Tests of the profile document: the contract's keys and their absence when unknown, the run
 * object, and atomic output (a failed write leaves an existing file and no temporary behind).
 */
#include <dirent.h>
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
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "diskgeo/profile.h"
#include "t_helpers.h"
#include "util.h"

static char dir[] = "/tmp/dg_test_profile.XXXXXX";

static struct dg_device_info block_info(void)
{
	struct dg_device_info info;

	memset(&info, 0, sizeof(info));
	snprintf(info.path, sizeof(info.path), "/dev/sdz");
	info.kind = DG_DEVICE_BLOCK;
	info.size_bytes = 4000787030016ull;
	info.logical_sector_bytes = 512;
	info.physical_sector_bytes = 4096;
	info.rotational = 1;
	snprintf(info.name, sizeof(info.name), "sdz");
	snprintf(info.model, sizeof(info.model), "WDC WD40EFRX-68N32N0");
	snprintf(info.serial, sizeof(info.serial), "WD-WCC7K0000000");
	snprintf(info.transport, sizeof(info.transport), "sata");
	snprintf(info.zoned, sizeof(info.zoned), "none");
	snprintf(info.scheduler, sizeof(info.scheduler), "mq-deadline");
	info.max_sectors_kb = 1280;
	info.read_ahead_kb = 128;
	info.write_cache = 1;
	info.is_partition = true;
	snprintf(info.whole_disk, sizeof(info.whole_disk), "sdy");
	info.partition_start_bytes = 1048576;
	return info;
}

static void document_keys(void **state)
{
	struct dg_device_info info = block_info();
	json_t *doc = dg_profile_new();

	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "schema")), "diskgeo.profile/1");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(doc, "tool"), "version")),
	    DG_VERSION);
	json_t *d = dg_profile_device_json(&info);
	assert_non_null(d);
	assert_string_equal(json_string_value(json_object_get(d, "path")), "/dev/sdz");
	assert_string_equal(json_string_value(json_object_get(d, "kind")), "block");
	assert_int_equal(json_integer_value(json_object_get(d, "size_bytes")), 4000787030016ll);
	assert_int_equal(json_integer_value(json_object_get(d, "logical_sector_bytes")), 512);
	assert_int_equal(json_integer_value(json_object_get(d, "physical_sector_bytes")), 4096);
	assert_true(json_is_true(json_object_get(d, "rotational")));
	assert_string_equal(json_string_value(json_object_get(d, "model")), info.model);
	assert_string_equal(json_string_value(json_object_get(d, "serial")), info.serial);
	assert_string_equal(json_string_value(json_object_get(d, "transport")), "sata");
	assert_true(json_is_true(json_object_get(d, "is_partition")));
	assert_string_equal(json_string_value(json_object_get(d, "whole_disk")), "sdy");
	assert_int_equal(json_integer_value(json_object_get(d, "partition_start_bytes")), 1048576);
	assert_int_equal(json_integer_value(json_object_get(d, "alignment_offset_bytes")), 0);
	assert_int_equal(json_integer_value(json_object_get(d, "max_sectors_kb")), 1280);
	assert_int_equal(json_integer_value(json_object_get(d, "read_ahead_kb")), 128);
	assert_true(json_is_true(json_object_get(d, "write_cache")));
	assert_true(json_is_false(json_object_get(d, "mounted")));
	/* Unknown: absent, never zero or empty. */
	assert_null(json_object_get(d, "vendor"));
	assert_null(json_object_get(d, "firmware"));
	assert_null(json_object_get(d, "loop_backing_file"));
	json_decref(d);

	/* A file knows far less; rotation unknown is null. */
	struct dg_device_info f;
	memset(&f, 0, sizeof(f));
	snprintf(f.path, sizeof(f.path), "disk.img");
	f.kind = DG_DEVICE_FILE;
	f.size_bytes = 1000;
	f.rotational = -1;
	f.write_cache = -1;
	d = dg_profile_device_json(&f);
	assert_string_equal(json_string_value(json_object_get(d, "kind")), "file");
	assert_true(json_is_null(json_object_get(d, "rotational")));
	const char *absent[] = {"model",
				"serial",
				"logical_sector_bytes",
				"write_cache",
				"mounted",
				"is_partition",
				"alignment_offset_bytes",
				"max_sectors_kb",
				"read_ahead_kb",
				"whole_disk",
				"name"};
	for (size_t i = 0; i < ARRAY_SIZE(absent); i++)
		if (json_object_get(d, absent[i]))
			fail_msg("file device has key %s", absent[i]);
	json_decref(d);
	json_decref(doc);
}

static void run_object(void **state)
{
	json_t *doc = dg_profile_new();
	struct dg_run run = {
	    .started_at = 1795341600, /* 2026-11-22T10:00:00Z */
	    .device_time_ns = 1500000000ull,
	    .elapsed_ns = 2250000000ull,
	    .complete = false,
	    .parameters = json_pack("{s:i}", "qd", 4),
	};
	char buf[32];

	dg_rfc3339(run.started_at, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-22T10:00:00Z");
	dg_rfc3339(0, buf, sizeof(buf));
	assert_string_equal(buf, "1970-01-01T00:00:00Z");

	assert_int_equal(dg_profile_set_run(doc, &run), 0);
	assert_null(run.parameters); /* stolen */
	json_t *r = json_object_get(doc, "run");
	assert_string_equal(json_string_value(json_object_get(r, "started_at")),
			    "2026-11-22T10:00:00Z");
	assert_float_equal(json_real_value(json_object_get(r, "device_time_s")), 1.5, 1e-12);
	assert_float_equal(json_real_value(json_object_get(r, "elapsed_s")), 2.25, 1e-12);
	assert_true(json_is_false(json_object_get(r, "complete")));
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(r, "parameters"), "qd")), 4);

	/* No parameters: an empty object, not a missing key. */
	struct dg_run bare = {.started_at = 0, .complete = true};
	assert_int_equal(dg_profile_set_run(doc, &bare), 0);
	r = json_object_get(doc, "run");
	assert_true(json_is_object(json_object_get(r, "parameters")));
	assert_true(json_is_true(json_object_get(r, "complete")));

	struct dg_warnings w = {0};
	struct dg_errors e = {0};
	assert_int_equal(dg_profile_set_warnings(doc, &w), 0);
	assert_int_equal(dg_profile_set_errors(doc, &e), 0);
	assert_int_equal(json_array_size(json_object_get(doc, "warnings")), 0);
	assert_int_equal(json_array_size(json_object_get(doc, "errors")), 0);
	dg_warnings_add(&w, "USB transport");
	dg_errors_add(&e, 4096, 8192, EIO);
	assert_int_equal(dg_profile_set_warnings(doc, &w), 0);
	assert_int_equal(dg_profile_set_errors(doc, &e), 0);
	assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "warnings"), 0)),
			    "USB transport");
	json_t *err0 = json_array_get(json_object_get(doc, "errors"), 0);
	assert_int_equal(json_integer_value(json_object_get(err0, "offset_bytes")), 4096);
	assert_int_equal(json_integer_value(json_object_get(err0, "length_bytes")), 8192);
	assert_int_equal(json_integer_value(json_object_get(err0, "errno")), EIO);
	assert_string_equal(json_string_value(json_object_get(err0, "message")),
			    "Input/output error");
	dg_warnings_free(&w);
	dg_errors_free(&e);
	json_decref(doc);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	static char buf[65536];
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Entries in the test directory whose name contains `needle`. */
static int count_entries(const char *needle)
{
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));)
		n += strstr(e->d_name, needle) != NULL;
	closedir(d);
	return n;
}

static void atomic_write(void **state)
{
	char path[256], err[DG_ERRLEN] = "";
	json_t *doc = json_pack("{s:i, s:s, s:i}", "zeta", 1, "alpha", "a", "mid", 2);

	snprintf(path, sizeof(path), "%s/profile.json", dir);
	assert_int_equal(dg_json_write(doc, path, err, sizeof(err)), 0);
	/* Sorted keys, indent 2, one final newline. */
	assert_string_equal(slurp(path),
			    "{\n  \"alpha\": \"a\",\n  \"mid\": 2,\n  \"zeta\": 1\n}\n");
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	mode_t mask = umask(0);
	umask(mask);
	assert_int_equal(st.st_mode & 0777, 0666 & ~mask);
	assert_int_equal(count_entries(".tmp."), 0);

	/* Replacing works. */
	json_object_set_new(doc, "zeta", json_integer(3));
	assert_int_equal(dg_json_write(doc, path, err, sizeof(err)), 0);
	assert_non_null(strstr(slurp(path), "\"zeta\": 3"));

	json_decref(doc);
}

static int fill_fails(FILE *f, void *arg)
{
	fputs("{\"half\": ", f);
	return -ENOSPC;
}

static void failed_fill(void **state)
{
	char path[256], err[DG_ERRLEN] = "";
	json_t *doc = json_pack("{s:i}", "kept", 1);

	snprintf(path, sizeof(path), "%s/kept.json", dir);
	assert_int_equal(dg_json_write(doc, path, err, sizeof(err)), 0);
	err[0] = '\0';
	assert_int_equal(dg_file_write(path, fill_fails, NULL, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, path));
	assert_null(strchr(err, '\n'));
	assert_string_equal(slurp(path), "{\n  \"kept\": 1\n}\n");
	assert_int_equal(count_entries(".tmp."), 0);
	unlink(path);
	json_decref(doc);
}

/* A read-only directory: the write fails, the existing file is untouched, nothing is left.
 * Root ignores directory permissions, so the attempt runs in a child that dropped to nobody. */
static int write_newer(void *arg)
{
	const char *path = arg;
	json_t *newer = json_pack("{s:i}", "v", 2);
	char e[DG_ERRLEN] = "";
	int rc = dg_json_write(newer, path, e, sizeof(e));
	bool ok = rc == -EACCES && strstr(e, path) && strstr(e, "Permission denied");

	if (!ok)
		fprintf(stderr, "rc %d err \"%s\"\n", rc, e);
	json_decref(newer);
	return ok ? 0 : 1;
}

static void readonly_directory(void **state)
{
	char sub[256], path[300];
	json_t *doc = json_pack("{s:i}", "v", 1);
	char err[DG_ERRLEN] = "";

	snprintf(sub, sizeof(sub), "%s/ro", dir);
	snprintf(path, sizeof(path), "%s/out.json", sub);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(dg_json_write(doc, path, err, sizeof(err)), 0);
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_equal(chmod(sub, 0555), 0);
	int status = t_fork(write_newer, path, T_NOBODY, NULL);
	assert_string_equal(slurp(path), "{\n  \"v\": 1\n}\n");
	DIR *d = opendir(sub);
	int entries = 0;
	for (struct dirent *e; (e = readdir(d));)
		entries += e->d_name[0] != '.';
	closedir(d);
	assert_int_equal(entries, 1);
	chmod(sub, 0755);
	unlink(path);
	rmdir(sub);
	json_decref(doc);
	if (status == 77)
		skip();
	assert_int_equal(status, 0);
}

static void bad_targets(void **state)
{
	char err[DG_ERRLEN] = "";
	json_t *doc = json_pack("{s:i}", "v", 1);

	/* Missing directory. */
	assert_int_equal(dg_json_write(doc, "/nonexistent-dir/x.json", err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent-dir/x.json"));
	/* The target is a directory: rename fails, the temporary goes. */
	assert_int_not_equal(dg_json_write(doc, dir, err, sizeof(err)), 0);
	char parent_tmp[300];
	snprintf(parent_tmp, sizeof(parent_tmp), "%s.tmp.", strrchr(dir, '/') + 1);
	DIR *d = opendir("/tmp");
	for (struct dirent *e; (e = readdir(d));)
		if (strstr(e->d_name, parent_tmp))
			fail_msg("temporary %s left behind", e->d_name);
	closedir(d);
	assert_int_equal(dg_json_write(doc, "", err, sizeof(err)), -EINVAL);
	json_decref(doc);
}

/* "-" writes to standard output: checked in a child whose stdout is a pipe. */
static int write_to_stdout(void *arg)
{
	char err[DG_ERRLEN];
	json_t *doc = json_pack("{s:i, s:i}", "b", 2, "a", 1);
	int rc = dg_json_write(doc, "-", err, sizeof(err));

	(void)arg;
	json_decref(doc);
	return rc ? 1 : 0;
}

static void stdout_path(void **state)
{
	char buf[256] = "";
	struct t_io io = {.out = buf, .out_len = sizeof(buf)};

	assert_int_equal(t_fork(write_to_stdout, NULL, 0, &io), 0);
	assert_string_equal(buf, "{\n  \"a\": 1,\n  \"b\": 2\n}\n");
	assert_int_equal(access("-", F_OK), -1); /* no file named "-" */
}

/* Outside strings that are not UTF-8 stay valid JSON: each bad byte becomes the text \xHH,
 * valid UTF-8 is kept byte for byte (the table: input, expected string value). */
static void json_text_escapes(void **state)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
	    {"plain.img", "plain.img"},
	    {"lat\xc3\xa9n.img", "lat\xc3\xa9n.img"},		   /* valid: é */
	    {"lat\xe9n.img", "lat\\xE9n.img"},			   /* Latin-1 é */
	    {"\xf0\x9f\x92\xbe disk", "\xf0\x9f\x92\xbe disk"},	   /* valid 4-byte */
	    {"over\xc0\xaflong", "over\\xC0\\xAFlong"},		   /* overlong '/' */
	    {"sur\xed\xa0\x80rogate", "sur\\xED\\xA0\\x80rogate"}, /* U+D800 */
	    {"big\xf4\x90\x80\x80", "big\\xF4\\x90\\x80\\x80"},	   /* above U+10FFFF */
	    {"cut\xe2\x82", "cut\\xE2\\x82"},			   /* sequence cut short */
	    {"ctl\x1b[0m", "ctl\x1b[0m"}, /* valid UTF-8: JSON escapes it itself */
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		json_t *j = dg_json_text(cases[i].in);
		assert_non_null(j);
		assert_string_equal(json_string_value(j), cases[i].want);
		char *text = json_dumps(j, JSON_ENCODE_ANY);
		assert_non_null(text); /* the document can be written */
		free(text);
		json_decref(j);
	}
	/* The device object with such a path: built, not ENOMEM. */
	struct dg_device_info info = block_info();
	snprintf(info.path, sizeof(info.path), "/dev/disk/by-label/lat\xe9n");
	snprintf(info.model, sizeof(info.model), "M\xff");
	json_t *d = dg_profile_device_json(&info);
	assert_non_null(d);
	assert_string_equal(json_string_value(json_object_get(d, "path")),
			    "/dev/disk/by-label/lat\\xE9n");
	assert_string_equal(json_string_value(json_object_get(d, "model")), "M\\xFF");
	json_decref(d);
}

/* The checks made before a run: each refusal with its errno and a line naming the path; nothing
 * is left in the directory. */
static void output_checks(void **state)
{
	char path[600], err[DG_ERRLEN], name[300];
	struct dg_output_avoid avoid = {0};

	snprintf(path, sizeof(path), "%s/new.json", dir);
	assert_int_equal(dg_output_check(path, NULL, err, sizeof(err)), 0);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(count_entries(".diskgeo"), 0);
	/* 255 bytes fit (the temporary name is short), 256 do not. */
	memset(name, 'n', 255);
	name[255] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(dg_output_check(path, NULL, err, sizeof(err)), 0);
	json_t *doc = json_pack("{s:i}", "v", 1);
	assert_int_equal(dg_json_write(doc, path, err, sizeof(err)), 0);
	assert_string_equal(slurp(path), "{\n  \"v\": 1\n}\n");
	/* The existing file is now what the run reads: refused, whatever the path to it. */
	assert_int_equal(dg_output_avoid_file(&avoid, path), 0);
	assert_int_equal(dg_output_check(path, &avoid, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "is the device being measured"));
	char link[600];
	snprintf(link, sizeof(link), "%s/link.json", dir);
	assert_int_equal(symlink(name, link), 0);
	assert_int_equal(dg_output_check(link, &avoid, err, sizeof(err)), -EINVAL);
	unlink(link);
	unlink(path);
	name[255] = 'n';
	name[256] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(dg_output_check(path, NULL, err, sizeof(err)), -ENAMETOOLONG);
	/* A character device is fine (written in place), a directory is not. */
	assert_int_equal(dg_output_check("/dev/null", NULL, err, sizeof(err)), 0);
	assert_int_equal(dg_output_check(dir, NULL, err, sizeof(err)), -EISDIR);
	/* A descriptor that is not open. */
	assert_int_equal(dg_output_check("/dev/fd/987", NULL, err, sizeof(err)), -EBADF);
	assert_string_equal(err, "/dev/fd/987: file descriptor 987 is not open");
	assert_int_equal(count_entries(".diskgeo"), 0);
	json_decref(doc);
}

/* A character device is written in place, never replaced by a renamed file: a private null
 * device node (root), so that a regression cannot replace the system's /dev/null. */
static void char_device_kept(void **state)
{
	char err[DG_ERRLEN] = "", node[300];
	struct stat st;
	json_t *doc = json_pack("{s:i}", "v", 1);

	snprintf(node, sizeof(node), "%s/null", dir);
	if (mknod(node, S_IFCHR | 0666, makedev(1, 3))) {
		json_decref(doc);
		skip();
	}
	assert_int_equal(dg_json_write(doc, node, err, sizeof(err)), 0);
	assert_int_equal(stat(node, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(st.st_rdev, makedev(1, 3));
	assert_int_equal(count_entries(".diskgeo"), 0);
	unlink(node);
	json_decref(doc);
}

static int setup_dir(void **state)
{
	if (!mkdtemp(dir))
		return -1;
	return chmod(dir, 0755);
}

static int remove_dir(void **state)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(document_keys),	  cmocka_unit_test(run_object),
	    cmocka_unit_test(atomic_write),	  cmocka_unit_test(failed_fill),
	    cmocka_unit_test(readonly_directory), cmocka_unit_test(bad_targets),
	    cmocka_unit_test(stdout_path),	  cmocka_unit_test(json_text_escapes),
	    cmocka_unit_test(output_checks),	  cmocka_unit_test(char_device_kept),
	};
	return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
