/* SPDX-License-Identifier: MIT */
/* diskgeo probe: what the device is (size, sector sizes, rotation, transport), nothing read. */
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "diskgeo/placement.h"
#include "diskgeo/profile.h"
#include "diskgeo/profile_read.h"

enum { OPT_PROFILE = CLI_OPT_LOCAL };

static const struct option longopts[] = {
    {"json", required_argument, NULL, 'j'},
    {"profile", required_argument, NULL, OPT_PROFILE},
    CLI_COMMON_LONGOPTS,
    CLI_LONGOPTS_END,
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: diskgeo probe DEVICE [--profile DISK.json] [--json FILE|-]\n\n"
		"Shows what DEVICE is: size, logical and physical sector sizes, rotation,\n"
		"transport, model and serial, queue settings. Reads no data.\n\n"
		"Options:\n"
		"  -j, --json FILE  write a profile-shaped JSON document to FILE ('-': stdout,\n"
		"                   instead of the table)\n"
		"      --profile DISK.json  where DEVICE (a partition of that disk, or the disk)\n"
		"                   sits on the surface profiled in DISK.json, and its expected\n"
		"                   sequential and random 4 KiB read rates\n"
		"  -J               the same as --json -\n"
		"  -q, --quiet      warnings and errors only (no table)\n"
		"  -v, --verbose    say more about what is done\n"
		"  -h, --help       show this help\n");
}

/* "4.00 TB, 3.64 TiB": decimal (10^3) and binary (2^10) units side by side. */
static void human_size(uint64_t bytes, char *buf, size_t len)
{
	char d[32], b[32];

	snprintf(buf, len, "%s, %s", dg_fmt_bytes(d, sizeof(d), bytes),
		 dg_fmt_ibytes2(b, sizeof(b), bytes));
}

struct row {
	const char *key;
	char value[4200];
};

static void add_row(struct row *rows, size_t *n, size_t max, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void add_row(struct row *rows, size_t *n, size_t max, const char *key, const char *fmt, ...)
{
	va_list ap;

	if (*n == max)
		return;
	rows[*n].key = key;
	va_start(ap, fmt);
	vsnprintf(rows[*n].value, sizeof(rows[*n].value), fmt, ap);
	va_end(ap);
	(*n)++;
}

static const char *yes_no(int v)
{
	return v < 0 ? "unknown" : v ? "yes" : "no";
}

/* The readable table: one aligned "key  value" row per known fact. */
static void print_table(const struct dg_device *dev)
{
	const struct dg_device_info *info = dg_device_info(dev);
	const char *format = dg_device_sector_format(info);
	unsigned rpm = dg_device_nominal_rpm(dev);
	static struct row rows[32];
	const size_t max = ARRAY_SIZE(rows);
	size_t n = 0, width = 0;
	char human[64];

	add_row(rows, &n, max, "path", "%s", info->path);
	add_row(rows, &n, max, "kind", "%s", dg_device_kind_name(info->kind));
	if (info->name[0])
		add_row(rows, &n, max, "name", "%s", info->name);
	if (info->vendor[0])
		add_row(rows, &n, max, "vendor", "%s", info->vendor);
	if (info->model[0])
		add_row(rows, &n, max, "model", "%s", info->model);
	if (info->serial[0])
		add_row(rows, &n, max, "serial", "%s", info->serial);
	if (info->firmware[0])
		add_row(rows, &n, max, "firmware", "%s", info->firmware);
	if (info->transport[0])
		add_row(rows, &n, max, "transport", "%s", info->transport);
	human_size(info->size_bytes, human, sizeof(human));
	add_row(rows, &n, max, "size", "%llu bytes (%s)", (unsigned long long)info->size_bytes,
		human);
	add_row(rows, &n, max, "logical sector", "%u bytes", info->logical_sector_bytes);
	add_row(rows, &n, max, "physical sector", "%u bytes", info->physical_sector_bytes);
	if (format)
		add_row(rows, &n, max, "sector format", "%s", format);
	if (info->kind == DG_DEVICE_BLOCK)
		add_row(rows, &n, max, "alignment offset", "%u bytes",
			info->alignment_offset_bytes);
	add_row(rows, &n, max, "rotational", "%s", yes_no(info->rotational));
	if (rpm == 1)
		add_row(rows, &n, max, "rotation rate", "none (the drive says: not rotating)");
	else if (rpm)
		add_row(rows, &n, max, "rotation rate", "%u rpm (%u rpm class; the %s says)", rpm,
			cli_rpm_class(rpm), dg_device_spec(dev) ? "drive spec" : "drive");
	if (info->zoned[0])
		add_row(rows, &n, max, "zoned", "%s", info->zoned);
	if (info->is_partition)
		add_row(rows, &n, max, "partition", "of %s, starting at byte %llu",
			info->whole_disk, (unsigned long long)info->partition_start_bytes);
	if (info->scheduler[0])
		add_row(rows, &n, max, "scheduler", "%s", info->scheduler);
	if (info->max_sectors_kb)
		add_row(rows, &n, max, "max request", "%u KiB", info->max_sectors_kb);
	if (info->scheduler[0])
		add_row(rows, &n, max, "read-ahead", "%u KiB", info->read_ahead_kb);
	if (info->write_cache >= 0)
		add_row(rows, &n, max, "write cache", "%s",
			info->write_cache ? "write back" : "write through");
	if (info->kind == DG_DEVICE_BLOCK) {
		add_row(rows, &n, max, "discard", "%s", yes_no(info->discard));
		add_row(rows, &n, max, "mounted", "%s", yes_no(info->mounted));
		add_row(rows, &n, max, "holders", "%s", yes_no(info->has_holders));
	}
	if (info->loop_backing_file[0])
		add_row(rows, &n, max, "backing file", "%s", info->loop_backing_file);
	if (info->kind == DG_DEVICE_FILE && info->file_blksize)
		add_row(rows, &n, max, "file system block", "%u bytes", info->file_blksize);

	for (size_t i = 0; i < n; i++)
		if (strlen(rows[i].key) > width)
			width = strlen(rows[i].key);
	for (size_t i = 0; i < n; i++) {
		char safe[4 * sizeof(rows[i].value)];
		cli_escape(safe, sizeof(safe), rows[i].value);
		printf("%-*s  %s\n", (int)width, rows[i].key, safe);
	}
}

/* The range of the profiled disk that `info` covers: a partition's place on its whole disk
 * (whose size must be the profile's), or the whole device. DG_EXIT_* with one line. */
static int place(const struct dg_device_info *info, const struct dg_profile_data *p,
		 struct dg_placement *pl)
{
	char err[DG_ERRLEN];
	uint64_t disk = info->size_bytes, start = 0;
	uint32_t block = info->physical_sector_bytes > 4096 ? info->physical_sector_bytes : 4096;
	int rc;

	if (info->is_partition) {
		rc = dg_sysfs_disk_bytes(info->whole_disk, &disk);
		if (rc) {
			cli_error("%s: the size of its disk %s is unknown: %s", info->path,
				  info->whole_disk, strerror(-rc));
			return DG_EXIT_DEVICE;
		}
		start = info->partition_start_bytes;
	}
	if (disk != p->size_bytes) {
		cli_error("%s: profiles a %llu-byte disk, but %s%s holds %llu bytes", p->path,
			  (unsigned long long)p->size_bytes,
			  info->is_partition ? info->whole_disk : info->path,
			  info->is_partition ? " (the partition's disk)" : "",
			  (unsigned long long)disk);
		return DG_EXIT_USAGE;
	}
	if (dg_placement_compute(p, start, info->size_bytes, block, pl, err, sizeof(err))) {
		cli_error("%s", err);
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

static void print_placement(const struct dg_device_info *info, const struct dg_placement *pl)
{
	char a[32], b[32];

	dg_fmt_bytes(a, sizeof(a), pl->start_bytes);
	dg_fmt_bytes(b, sizeof(b), pl->end_bytes);
	printf("\nplace on the surface: bytes %llu to %llu (%s to %s), %.2f%% to %.2f%% from "
	       "the outer edge\n",
	       (unsigned long long)pl->start_bytes, (unsigned long long)pl->end_bytes, a, b,
	       pl->start_percent, pl->end_percent);
	printf("expected sequential read: %.1f MB/s; all of it in %.0f s\n", pl->seq_mb_per_s,
	       pl->read_time_s);
	if (!isnan(pl->random_ms))
		printf("expected random %u-byte reads at QD 1: %.3f ms, %.1f IOPS (from the "
		       "profile's %s)\n",
		       info->physical_sector_bytes > 4096 ? info->physical_sector_bytes : 4096,
		       pl->random_ms, pl->random_iops, pl->random_from);
	else
		printf(
		    "expected random reads: unknown (the profile has no seek curve or rotation)\n");
}

static json_t *placement_json(const struct dg_placement *pl, const char *profile)
{
	json_t *o = json_pack(
	    "{s:s,s:I,s:I,s:I,s:f,s:f,s:f,s:f}", "profile", profile, "start_bytes",
	    (json_int_t)pl->start_bytes, "end_bytes", (json_int_t)pl->end_bytes, "disk_bytes",
	    (json_int_t)pl->disk_bytes, "start_percent", round(pl->start_percent * 1e4) / 1e4,
	    "end_percent", round(pl->end_percent * 1e4) / 1e4, "seq_mb_per_s",
	    round(pl->seq_mb_per_s * 1e3) / 1e3, "read_time_s", round(pl->read_time_s * 1e3) / 1e3);

	if (o && !isnan(pl->random_ms) &&
	    (json_object_set_new(o, "random_ms", json_real(round(pl->random_ms * 1e6) / 1e6)) ||
	     json_object_set_new(o, "random_iops", json_real(round(pl->random_iops * 1e3) / 1e3)) ||
	     json_object_set_new(o, "random_from", json_string(pl->random_from)))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* {schema, tool, device, warnings}: the probe part of a profile. NULL on ENOMEM. */
static json_t *probe_doc(const struct dg_device *dev, const struct dg_warnings *warnings)
{
	const struct dg_device_info *info = dg_device_info(dev);
	unsigned rpm = dg_device_nominal_rpm(dev);
	json_t *doc = dg_profile_new();

	if (!doc)
		return NULL;
	/* json_object_set_new() takes the device object even when it fails (or is NULL). */
	if (json_object_set_new(doc, "device", dg_profile_device_json(info)) ||
	    dg_profile_set_warnings(doc, warnings)) {
		json_decref(doc);
		return NULL;
	}
	/* what the drive states (0: nothing does; 1: not rotating), beside device.rotational */
	if (rpm &&
	    json_object_set_new(json_object_get(doc, "device"), "nominal_rpm", json_integer(rpm))) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

int cmd_probe(int argc, char **argv)
{
	struct cli_outputs outs = {0};
	const char *json_path = NULL, *device, *profile_path = NULL;
	struct dg_profile_data *profile = NULL;
	struct dg_placement pl;
	char shortopts[32];
	struct dg_warnings warnings = {0};
	struct dg_device *dev = NULL;
	int c, rc;

	cli_shortopts(longopts, shortopts, sizeof(shortopts));
	optind = 1;
	opterr = 0; /* our own one-line messages, prefixed "diskgeo:" */
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (cli_common_option(c, &json_path))
			continue;
		switch (c) {
		case 'j':
			json_path = optarg;
			break;
		case OPT_PROFILE:
			profile_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return DG_EXIT_OK;
		default:
			return cli_bad_option("probe", argv, shortopts);
		}
	}
	if (cli_one_device("probe", argc, argv, &device))
		return DG_EXIT_USAGE;
	rc = cli_check_output(&outs, json_path);
	if (rc)
		return rc;
	if (profile_path) {
		char err[DG_ERRLEN] = "";

		if (dg_profile_read(profile_path, &profile, err, sizeof(err))) {
			cli_error("%s", err);
			return DG_EXIT_USAGE;
		}
	}
	rc = cli_open_device(device, 0, &dev, &warnings);
	if (rc)
		goto out;
	rc = cli_check_outputs_device(&outs, dev);
	if (rc)
		goto out;
	if (profile && (rc = place(dg_device_info(dev), profile, &pl)))
		goto out;
	{
		char msg[4096 + 256];
		if (dg_device_partition_misaligned(dg_device_info(dev), msg, sizeof(msg)))
			dg_warnings_add(&warnings, "%s", msg);
	}
	cli_print_warnings(&warnings);
	if ((!json_path || strcmp(json_path, "-")) && cli_verbosity > CLI_QUIET) {
		print_table(dev);
		if (profile)
			print_placement(dg_device_info(dev), &pl);
	}
	if (json_path) {
		char err[DG_ERRLEN] = "";
		json_t *doc = probe_doc(dev, &warnings);
		if (doc && profile &&
		    json_object_set_new(doc, "placement", placement_json(&pl, profile_path))) {
			json_decref(doc);
			doc = NULL;
		}
		if (!doc) {
			cli_error("cannot build the document: out of memory");
			rc = DG_EXIT_USAGE;
		} else if (dg_json_write(doc, json_path, err, sizeof(err))) {
			cli_error("%s", err);
			rc = DG_EXIT_USAGE;
		}
		json_decref(doc);
	}
out:
	dg_profile_data_free(profile);
	dg_device_close(dev);
	dg_warnings_free(&warnings);
	cli_outputs_forget(&outs);
	return rc;
}
