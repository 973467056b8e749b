/* SPDX-License-Identifier: MIT */
/* Shared between device.c (opening), device_sysfs.c (the sysfs probe) and device_guard.c (the
 * write guard). */
#ifndef DISKGEO_DEVICE_PRIV_H
#define DISKGEO_DEVICE_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Copies a string, truncating it to fit `size`. */
void dg_dev_copy(char *dst, size_t size, const char *src);
/* Reads a small sysfs attribute at `rel` under `dfd`, trimmed unless `raw`; length or -errno. */
ssize_t dg_dev_read_attr(int dfd, const char *rel, char *buf, size_t size, bool raw);
/* Reads a "MAJ:MIN" `dev` attribute: 0, -ENOENT or -EINVAL. */
int dg_dev_read_devno(int dfd, const char *rel, dev_t *out);
/* The part of a path after its last '/'. */
const char *dg_dev_base_name(const char *path);
struct dg_device_info;
/* Fills what sysfs says about the block device rdev into info (device_sysfs.c). */
void dg_dev_probe_sysfs(dev_t rdev, struct dg_device_info *info);
/* The logical block size of the disk holding file system st_dev, or 0 (device_sysfs.c). */
uint32_t dg_dev_fs_logical_block(dev_t st_dev);
/* Refuses a write when the target or anything sharing its storage is in use: 0 or -EBUSY. */
int dg_dev_guard_check(const char *path, const struct stat *st, char *err, size_t errlen);

#endif
