/* SPDX-License-Identifier: MIT */
/*
 * What a device says about itself beyond the kernel's rotational flag: its sector format (from
 * the reported sizes) and its nominal rotation rate — the spec's rpm for sim:, else the SCSI
 * Block Device Characteristics VPD page (B1h; SBC-4 6.6.2: bytes 4-5, the medium rotation
 * rate), which the kernel exposes as /sys/block/NAME/device/vpd_pgb1 for SCSI and SATA disks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "diskgeo/device.h"
#include "diskgeo/model.h"

const char *dg_device_sector_format(const struct dg_device_info *info)
{
	uint32_t ls = info->logical_sector_bytes, ps = info->physical_sector_bytes;

	if (!ps)
		ps = ls;
	if (ls == 512 && ps == 512)
		return "512n";
	if (ls == 512 && ps == 4096)
		return "512e";
	if (ls == 4096 && ps == 4096)
		return "4Kn";
	return NULL;
}

int dg_device_partition_misaligned(const struct dg_device_info *info, char *msg, size_t len)
{
	uint32_t ps = info->physical_sector_bytes;

	if (!info->is_partition || !ps || ps <= info->logical_sector_bytes ||
	    info->partition_start_bytes % ps == 0)
		return 0;
	snprintf(msg, len,
		 "%s starts at byte %llu, not aligned to the physical sector of %u bytes: I/O "
		 "aligned to the partition is misaligned on the drive (writes cost a "
		 "read-modify-write, about a revolution each)",
		 info->path, (unsigned long long)info->partition_start_bytes, ps);
	return 1;
}

/* Reads the rotation rate from VPD page B1h in `path`. Returns rpm, 1 (not rotating) or 0. */
static unsigned vpd_b1_rate(const char *path)
{
	unsigned char page[64];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, page, sizeof(page));
	close(fd);
	if (n < 6 || page[1] != 0xb1)
		return 0;
	unsigned rate = (unsigned)page[4] << 8 | page[5];
	/* 0: not reported; 1: non-rotating medium; 0x0401-0xfffe: rpm; others reserved */
	return rate == 1 || (rate >= 0x401 && rate <= 0xfffe) ? rate : 0;
}

unsigned dg_device_nominal_rpm(const struct dg_device *dev)
{
	const struct dg_device_info *info = dg_device_info(dev);
	const char *disk;
	char path[256];

	if (dg_device_spec(dev))
		return (unsigned)(dg_spec_rpm(dg_device_spec(dev)) + 0.5);
	if (info->kind != DG_DEVICE_BLOCK)
		return 0;
	disk = info->is_partition && info->whole_disk[0] ? info->whole_disk : info->name;
	if (!disk[0] || snprintf(path, sizeof(path), "/sys/block/%s/device/vpd_pgb1", disk) >=
			    (int)sizeof(path))
		return 0;
	return vpd_b1_rate(path);
}
