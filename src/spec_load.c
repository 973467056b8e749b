/* SPDX-License-Identifier: MIT */
/*
 * Drive specs: loading one by preset name or from a file, and the plain accessors. Split out of
 * spec.c (issue 11).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model_priv.h"
#include "util.h"

size_t dg_spec_presets(const char *const **names)
{
	if (names)
		*names = dg_preset_names;
	return dg_preset_count;
}

/*
 * Reads a spec file. Only a regular file of at most DG_SPEC_MAX_FILE_BYTES is read: the open does
 * not block (a FIFO would wait for a writer forever) and fstat() decides before any read.
 */
static int load_file(const char *path, struct dg_spec **out, struct dg_warnings *warnings,
		     char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int fd, rc;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		goto err;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: a drive spec must be a regular file, not %s", path,
			 S_ISDIR(st.st_mode)	? "a directory"
			 : S_ISFIFO(st.st_mode) ? "a FIFO"
			 : S_ISCHR(st.st_mode)	? "a character device"
			 : S_ISBLK(st.st_mode)	? "a block device"
			 : S_ISSOCK(st.st_mode) ? "a socket"
						: "a special file");
		rc = -EINVAL;
		goto err;
	}
	if (st.st_size > (off_t)DG_SPEC_MAX_FILE_BYTES) {
		snprintf(err, errlen, "%s: %lld bytes, more than the limit of %u for a drive spec",
			 path, (long long)st.st_size, DG_SPEC_MAX_FILE_BYTES);
		rc = -EINVAL;
		goto err;
	}
	/* one byte more than the limit: a file that grew since fstat() is still refused */
	buf = malloc(DG_SPEC_MAX_FILE_BYTES + 1);
	if (!buf) {
		rc = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory", path);
		goto err;
	}
	while (len <= DG_SPEC_MAX_FILE_BYTES) {
		ssize_t got = read(fd, buf + len, DG_SPEC_MAX_FILE_BYTES + 1 - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = -errno;
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
			goto err;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	rc = dg_spec_parse(buf, len, path, out, warnings, err, errlen);
err:
	free(buf);
	close(fd);
	return rc;
}

int dg_spec_load(const char *what, struct dg_spec **out, struct dg_warnings *warnings, char *err,
		 size_t errlen)
{
	char dummy[8];
	size_t n = strlen(what);

	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	*out = NULL;
	bool is_path = strchr(what, '/') || (n >= 5 && !strcmp(what + n - 5, ".json"));
	if (!is_path) {
		for (size_t i = 0; i < dg_preset_count; i++)
			if (!strcmp(dg_preset_table[i].name, what))
				return dg_spec_parse(dg_preset_table[i].json,
						     dg_preset_table[i].len, what, out, warnings,
						     err, errlen);
		struct stat st;
		if (stat(what, &st)) {
			char list[256] = "";
			for (size_t i = 0; i < dg_preset_count; i++) {
				size_t l = strlen(list);
				snprintf(list + l, sizeof(list) - l, "%s%s", i ? ", " : "",
					 dg_preset_names[i]);
			}
			snprintf(err, errlen, "unknown drive '%s': not a built-in (%s) nor a file",
				 what, list);
			return -ENOENT;
		}
	}
	return load_file(what, out, warnings, err, errlen);
}

const char *dg_spec_name(const struct dg_spec *spec)
{
	return spec->name;
}

const char *dg_spec_description(const struct dg_spec *spec)
{
	return spec->description;
}

uint64_t dg_spec_capacity_bytes(const struct dg_spec *spec)
{
	return spec->capacity_sectors * spec->sector_bytes;
}

uint32_t dg_spec_sector_bytes(const struct dg_spec *spec)
{
	return spec->sector_bytes;
}

double dg_spec_rpm(const struct dg_spec *spec)
{
	return spec->rpm;
}
