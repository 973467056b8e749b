/* SPDX-License-Identifier: MIT */
/*
 * The device under test: a block device, a regular file, or a simulated drive (`sim:NAME`,
 * `sim:PATH.json`). Opening probes it; the probe's findings are in struct dg_device_info.
 */
#ifndef DISKGEO_DEVICE_H
#define DISKGEO_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "diskgeo.h"

struct dg_spec;

enum dg_device_kind {
	DG_DEVICE_BLOCK,
	DG_DEVICE_FILE,
	DG_DEVICE_SIM,
};

/* Returns "block", "file" or "sim". */
const char *dg_device_kind_name(enum dg_device_kind kind);

/* Everything the probe learnt. Strings are empty when unknown; numbers are 0 when unknown unless
 * said otherwise. */
struct dg_device_info {
	char path[4096];
	enum dg_device_kind kind;
	uint64_t size_bytes;
	uint32_t logical_sector_bytes;
	uint32_t physical_sector_bytes;
	uint32_t alignment_offset_bytes;
	int rotational; /* 1 yes, 0 no, -1 unknown */
	char name[64];	/* kernel name ("sdb", "loop3"); the spec name for sim: */
	char zoned[24]; /* queue/zoned: "none", "host-aware", "host-managed" */
	uint32_t max_sectors_kb;
	uint32_t read_ahead_kb;
	char scheduler[32]; /* the active one, e.g. "mq-deadline" */
	char vendor[64];
	char model[128];
	char serial[128];
	char firmware[64];
	char transport[16]; /* sata, sas, nvme, usb, virtio, loop, scsi, mmc, fuse, sim, ... */
	bool is_partition;
	char whole_disk[64]; /* when a partition: the whole disk's kernel name */
	uint64_t partition_start_bytes;
	bool discard;		      /* queue/discard_max_bytes > 0 */
	int write_cache;	      /* 1 write back, 0 write through, -1 unknown */
	bool mounted;		      /* listed in /proc/self/mountinfo (or a partition of it is) */
	bool has_holders;	      /* /sys/block/X/holders is not empty */
	char loop_backing_file[4096]; /* for loop devices */
	uint32_t file_blksize;	      /* st_blksize, regular files */
	/* What was opened, from fstat on the open descriptor: the device number of a block
	 * device (st_rdev), or the file system and inode of a regular file (st_dev, st_ino). */
	uint64_t rdev;
	uint64_t file_dev, file_ino;
};

struct dg_device;

enum dg_device_flags {
	/* The guarded write mode only: open O_RDWR (O_EXCL on a block device), refused with
	 * -EBUSY when the device or anything sharing its storage is in use (see below). */
	DG_DEVICE_WRITE = 1u << 0,
};

/*
 * Opens and probes `path` (a block device, a regular file, or "sim:NAME" / "sim:PATH").
 * Every read mode opens O_RDONLY | O_DIRECT. Returns 0, or -errno with one line in `err`
 * (e.g. "/dev/sdb: Permission denied (raw devices usually need root)"). Warnings that can
 * mislead a measurement (file system in between, partition, SSD, USB bridge, SMR, ...) are
 * appended to `warnings` when it is not NULL.
 */
int dg_device_open(const char *path, unsigned flags, struct dg_device **out,
		   struct dg_warnings *warnings, char *err, size_t errlen);
/*
 * Opens the object `dev` holds open once more, with `flags` (a device probed read-only, then
 * opened for writing): through its descriptor (/proc/self/fd), never its path again, so that a
 * path re-pointed in between cannot redirect the open; the new descriptor is checked to be the
 * same object (dg_device_same). The path in the info stays `dev`'s. Returns like
 * dg_device_open().
 *
 * DG_DEVICE_WRITE, here and in dg_device_open(), refuses with -EBUSY and one line naming what is
 * in use and how it shares the storage, when the target or anything sharing its storage is
 * mounted (/proc/self/mountinfo, by device number and by the mount source, a file too), in use as
 * swap (/proc/swaps), held (sysfs holders) or open exclusively by someone else (O_EXCL):
 * devices built on it (holders, partitions, loop devices over it, recursively), what it is built
 * on (slaves, a loop device's backing file or device, the whole disk of a partition), and the
 * other loop devices over those.
 */
int dg_device_reopen(const struct dg_device *dev, unsigned flags, struct dg_device **out,
		     struct dg_warnings *warnings, char *err, size_t errlen);
/* True when `a` and `b` have the same object open (block: st_rdev; file: st_dev and st_ino;
 * sim: the same spec name), judged by fstat on their descriptors. */
bool dg_device_same(const struct dg_device *a, const struct dg_device *b);
void dg_device_close(struct dg_device *dev);

const struct dg_device_info *dg_device_info(const struct dg_device *dev);
/* The file descriptor (-1 for sim:). */
int dg_device_fd(const struct dg_device *dev);
/* The drive spec of a sim: device (NULL otherwise); owned by the device. */
const struct dg_spec *dg_device_spec(const struct dg_device *dev);

/* "512n", "512e" or "4Kn" from the reported logical and physical sector sizes; NULL for any
 * other pair (src/device_rpm.c). */
const char *dg_device_sector_format(const struct dg_device_info *info);
/* A partition whose start is not a whole number of physical sectors (a 512e drive partitioned
 * for 512-byte sectors): returns 1 and the warning sentence in `msg`; 0 otherwise
 * (src/device_rpm.c). */
int dg_device_partition_misaligned(const struct dg_device_info *info, char *msg, size_t len);
/* The nominal rotation rate the drive states: a sim: spec's rpm, or a SCSI/SATA disk's VPD page
 * B1h (its medium rotation rate, read through sysfs). 1 means "not rotating" (an SSD); 0 that
 * nothing says. Never fails. */
unsigned dg_device_nominal_rpm(const struct dg_device *dev);

#endif
