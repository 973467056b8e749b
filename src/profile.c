/* SPDX-License-Identifier: MIT */
/*
 * The profile document ("diskgeo.profile/1", contract.md) and atomic output files. Keys carry
 * their units; what a probe or run did not learn is left out, never written as zero.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diskgeo/profile.h"

json_t *dg_profile_new(void)
{
	return json_pack("{s:s, s:{s:s, s:s}}", "schema", DG_SCHEMA, "tool", "name", "diskgeo",
			 "version", DG_VERSION);
}

/* Sets `key` to `value` (stolen) in `obj`; returns -ENOMEM when either failed. */
static int set(json_t *obj, const char *key, json_t *value)
{
	return value && !json_object_set_new(obj, key, value) ? 0 : -ENOMEM;
}

/* Optional string members: present only when the probe found something. */
static const struct {
	const char *key;
	size_t off;
} text_keys[] = {
    {"name", offsetof(struct dg_device_info, name)},
    {"model", offsetof(struct dg_device_info, model)},
    {"serial", offsetof(struct dg_device_info, serial)},
    {"vendor", offsetof(struct dg_device_info, vendor)},
    {"firmware", offsetof(struct dg_device_info, firmware)},
    {"transport", offsetof(struct dg_device_info, transport)},
    {"zoned", offsetof(struct dg_device_info, zoned)},
    {"scheduler", offsetof(struct dg_device_info, scheduler)},
    {"loop_backing_file", offsetof(struct dg_device_info, loop_backing_file)},
};

json_t *dg_profile_device_json(const struct dg_device_info *info)
{
	json_t *d = json_object();
	int rc = 0;

	if (!d)
		return NULL;
	rc |= set(d, "path", json_string(info->path));
	rc |= set(d, "kind", json_string(dg_device_kind_name(info->kind)));
	rc |= set(d, "size_bytes", json_integer((json_int_t)info->size_bytes));
	if (info->logical_sector_bytes)
		rc |= set(d, "logical_sector_bytes", json_integer(info->logical_sector_bytes));
	if (info->physical_sector_bytes)
		rc |= set(d, "physical_sector_bytes", json_integer(info->physical_sector_bytes));
	if (dg_device_sector_format(info)) /* contract.md: "512n" | "512e" | "4Kn" */
		rc |= set(d, "sector_format", json_string(dg_device_sector_format(info)));
	rc |= set(d, "rotational",
		  info->rotational < 0 ? json_null() : json_boolean(info->rotational));
	for (size_t i = 0; i < sizeof(text_keys) / sizeof(text_keys[0]); i++) {
		const char *s = (const char *)info + text_keys[i].off;
		if (s[0])
			rc |= set(d, text_keys[i].key, json_string(s));
	}
	if (info->write_cache >= 0)
		rc |= set(d, "write_cache", json_boolean(info->write_cache));
	if (info->kind == DG_DEVICE_BLOCK) {
		/* Stated by the kernel for every block device, so zero is a real value here. */
		rc |= set(d, "alignment_offset_bytes", json_integer(info->alignment_offset_bytes));
		rc |= set(d, "is_partition", json_boolean(info->is_partition));
		rc |= set(d, "discard", json_boolean(info->discard));
		rc |= set(d, "mounted", json_boolean(info->mounted));
		rc |= set(d, "has_holders", json_boolean(info->has_holders));
		if (info->max_sectors_kb)
			rc |= set(d, "max_sectors_kb", json_integer(info->max_sectors_kb));
		if (info->scheduler[0]) /* a queue directory was read: read-ahead is known */
			rc |= set(d, "read_ahead_kb", json_integer(info->read_ahead_kb));
		if (info->is_partition) {
			rc |= set(d, "whole_disk", json_string(info->whole_disk));
			rc |= set(d, "partition_start_bytes",
				  json_integer((json_int_t)info->partition_start_bytes));
		}
	}
	if (info->kind == DG_DEVICE_FILE && info->file_blksize)
		rc |= set(d, "file_blksize_bytes", json_integer(info->file_blksize));
	if (rc) {
		json_decref(d);
		return NULL;
	}
	return d;
}

void dg_rfc3339(time_t t, char *buf, size_t len)
{
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
		if (len)
			buf[0] = '\0';
	}
}

int dg_profile_set_run(json_t *doc, struct dg_run *run)
{
	char when[32];
	json_t *params = run->parameters ? run->parameters : json_object();

	run->parameters = NULL; /* stolen, whatever happens next */
	dg_rfc3339(run->started_at, when, sizeof(when));
	json_t *r =
	    json_pack("{s:s, s:f, s:f, s:b, s:o}", "started_at", when, "device_time_s",
		      (double)run->device_time_ns / 1e9, "elapsed_s", (double)run->elapsed_ns / 1e9,
		      "complete", run->complete, "parameters", params);
	if (!r)
		return -ENOMEM;
	return set(doc, "run", r);
}

int dg_profile_set_warnings(json_t *doc, const struct dg_warnings *warnings)
{
	json_t *a = json_array(), *codes = json_array();

	if (!a || !codes)
		goto nomem;
	for (size_t i = 0; warnings && i < warnings->n; i++) {
		if (json_array_append_new(a, json_string(warnings->v[i])) ||
		    json_array_append_new(codes, json_string(dg_warning_code(warnings->v[i]))))
			goto nomem;
	}
	/* warning_codes[i] is the stable code of warnings[i] (dg_warning_code()) */
	if (set(doc, "warning_codes", codes)) {
		json_decref(a);
		return -ENOMEM;
	}
	return set(doc, "warnings", a);
nomem:
	json_decref(a);
	json_decref(codes);
	return -ENOMEM;
}

int dg_profile_set_errors(json_t *doc, const struct dg_errors *errors)
{
	json_t *a = json_array();

	if (!a)
		return -ENOMEM;
	for (size_t i = 0; errors && i < errors->n; i++) {
		const struct dg_io_error *e = &errors->v[i];
		json_t *o =
		    json_pack("{s:I, s:I, s:i, s:s}", "offset_bytes", (json_int_t)e->offset_bytes,
			      "length_bytes", (json_int_t)e->length_bytes, "errno", e->errno_value,
			      "message", e->message);
		if (!o || json_array_append_new(a, o)) {
			json_decref(a);
			return -ENOMEM;
		}
	}
	return set(doc, "errors", a);
}

/* Sorted keys, two-space indent: the document is an API and diffs well (style.md rule 9). */
/* 12 significant digits: exact enough for ns and bytes-per-second figures, free of binary noise
 * such as 0.10000000000000001. */
#define JSON_FLAGS (JSON_SORT_KEYS | JSON_INDENT(2) | JSON_REAL_PRECISION(12))

static int fill_json(FILE *f, void *arg)
{
	errno = 0;
	if (json_dumpf((const json_t *)arg, f, JSON_FLAGS) || fputc('\n', f) == EOF)
		return errno ? -errno : -EIO;
	return 0;
}

int dg_json_write(const json_t *doc, const char *path, char *err, size_t errlen)
{
	return dg_file_write(path, fill_json, (void *)doc, err, errlen);
}

static int write_stdout(int (*fill)(FILE *f, void *arg), void *arg, char *err, size_t errlen)
{
	int rc = fill(stdout, arg);

	errno = 0;
	if (!rc && fflush(stdout))
		rc = errno ? -errno : -EIO;
	if (!rc && ferror(stdout))
		rc = -EIO;
	if (rc)
		snprintf(err, errlen, "standard output: %s", strerror(-rc));
	return rc;
}

/*
 * Atomic replacement: the content goes to PATH.tmp.XXXXXX in the same directory (so rename(2)
 * cannot cross file systems), is flushed and fsynced, and only then renamed over PATH; the
 * directory is fsynced so the rename itself survives a crash. On failure the temporary file is
 * removed and an existing PATH is untouched.
 */
int dg_file_write(const char *path, int (*fill)(FILE *f, void *arg), void *arg, char *err,
		  size_t errlen)
{
	char *tmp = NULL;
	FILE *f = NULL;
	int fd = -1, rc;

	if (!path || !*path) {
		snprintf(err, errlen, "no output file given");
		return -EINVAL;
	}
	if (!strcmp(path, "-"))
		return write_stdout(fill, arg, err, errlen);
	if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: cannot create a file beside it: %s", path,
			 strerror(-rc));
		free(tmp);
		return rc;
	}
	/* mkstemp makes 0600; an output file gets the usual 0666 less the umask. */
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask)) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", tmp, strerror(-rc));
		goto err;
	}
	f = fdopen(fd, "w");
	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", tmp, strerror(-rc));
		goto err;
	}
	fd = -1; /* owned by f now */
	rc = fill(f, arg);
	errno = 0;
	if (!rc && (fflush(f) || ferror(f)))
		rc = errno ? -errno : -EIO;
	if (!rc && fsync(fileno(f)))
		rc = -errno;
	if (rc) {
		snprintf(err, errlen, "%s: write failed: %s", path, strerror(-rc));
		goto err;
	}
	errno = 0;
	if (fclose(f)) {
		f = NULL;
		rc = errno ? -errno : -EIO;
		snprintf(err, errlen, "%s: write failed: %s", path, strerror(-rc));
		goto err;
	}
	f = NULL;
	if (rename(tmp, path)) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		goto err;
	}
	char *slash = strrchr(tmp, '/');
	if (slash)
		slash[slash == tmp ? 1 : 0] = '\0';
	int dfd = open(slash ? tmp : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd); /* best effort: the file itself is complete either way */
		close(dfd);
	}
	free(tmp);
	return 0;
err:
	if (f)
		fclose(f);
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	return rc;
}
