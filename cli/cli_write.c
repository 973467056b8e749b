/* SPDX-License-Identifier: MIT */
/*
 * The write guard's command-line half, shared by `bandwidth --write` and `sweep --write`: the
 * option checks, the read-only probe that NAME must name, and the wait for a passing exclusive
 * claim before the write open (the guard on shared storage is in device.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

int cli_write_options(const char *cmd, bool write, const char *confirm, const char *device)
{
	if (confirm && !write) {
		cli_error("%s: --confirm-destroy goes with --write only", cmd);
		return DG_EXIT_USAGE;
	}
	if (write && !confirm) {
		cli_error("%s: --write destroys data on %s: add --confirm-destroy=NAME with the "
			  "device's name or serial",
			  cmd, device);
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

/* The names --confirm-destroy accepts for `info`: the kernel name (the spec's name for sim:, the
 * file's own name for a file) and the serial; an empty NAME never matches. */
bool cli_names_device(const char *name, const struct dg_device_info *info)
{
	const char *base = strrchr(info->path, '/');

	base = base ? base + 1 : info->path;
	if (!name[0])
		return false;
	if (info->name[0] && !strcmp(name, info->name))
		return true;
	if (info->serial[0] && !strcmp(name, info->serial))
		return true;
	return info->kind == DG_DEVICE_FILE && !strcmp(name, base);
}

/* What --confirm-destroy should say, for the refusal's line. */
void cli_expected_names(char *buf, size_t len, const struct dg_device_info *info)
{
	const char *base = strrchr(info->path, '/');

	base = base ? base + 1 : info->path;
	if (info->kind == DG_DEVICE_FILE)
		snprintf(buf, len, "'%.200s'", base);
	else if (info->serial[0])
		snprintf(buf, len, "'%.63s' or its serial '%.127s'", info->name, info->serial);
	else
		snprintf(buf, len, "'%.63s'", info->name);
}

int cli_write_probe(const char *cmd, const char *device, const char *confirm,
		    struct dg_device **probed)
{
	struct dg_device *dev = NULL;
	char names[512];
	int rc;

	*probed = NULL;
	rc = cli_open_device(device, 0, &dev, NULL);
	if (rc)
		return rc;
	if (!cli_names_device(confirm, dg_device_info(dev))) {
		cli_expected_names(names, sizeof(names), dg_device_info(dev));
		cli_error("%s: --confirm-destroy='%s' does not name %s (expected %s); nothing was "
			  "written",
			  cmd, confirm, device, names);
		dg_device_close(dev);
		return DG_EXIT_USAGE;
	}
	*probed = dev;
	return DG_EXIT_OK;
}

/*
 * Waits up to 2 s for a passing exclusive claim on a block device to go: udev rescans the
 * partitions of a device after it was closed from writing, and an io_uring ring torn down after
 * its process exited keeps its registered file (and so the claim) a moment longer; without the
 * wait, a write run right after another is refused. A device that stays busy (held by a file
 * system or another program) is refused by the O_EXCL open that follows, with its own line.
 * The probe goes through the probed descriptor (read-only), not the path.
 */
void cli_wait_unclaimed(const struct dg_device *dev)
{
	const struct timespec pause = {.tv_nsec = 50 * 1000 * 1000};
	const struct dg_device_info *info = dg_device_info(dev);
	char link[64];

	if (info->kind != DG_DEVICE_BLOCK || info->mounted || info->has_holders)
		return;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", dg_device_fd(dev));
	for (int i = 0; i < 40; i++) {
		int fd = open(link, O_RDONLY | O_EXCL | O_CLOEXEC);

		if (fd >= 0) {
			close(fd);
			return;
		}
		if (errno != EBUSY)
			return;
		nanosleep(&pause, NULL);
	}
}
