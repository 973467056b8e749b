/* SPDX-License-Identifier: MIT */
/*
 * The profile document ("diskgeo.profile/1", contract.md); output files are in output.c. Keys
 * carry their units; what a probe or run did not learn is left out, never written as zero.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diskgeo/profile.h"
#include "util.h"

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
	rc |= set(d, "path", dg_json_text(info->path));
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
	for (size_t i = 0; i < ARRAY_SIZE(text_keys); i++) {
		const char *s = (const char *)info + text_keys[i].off;
		if (s[0])
			rc |= set(d, text_keys[i].key, dg_json_text(s));
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
			rc |= set(d, "whole_disk", dg_json_text(info->whole_disk));
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
		if (json_array_append_new(a, dg_json_text(warnings->v[i])) ||
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
		    json_pack("{s:I, s:I, s:i, s:o}", "offset_bytes", (json_int_t)e->offset_bytes,
			      "length_bytes", (json_int_t)e->length_bytes, "errno", e->errno_value,
			      "message", dg_json_text(e->message));
		if (!o || json_array_append_new(a, o)) {
			json_decref(a);
			return -ENOMEM;
		}
	}
	return set(doc, "errors", a);
}
