/* SPDX-License-Identifier: MIT */
/* diskgeo: the command dispatcher. Each command parses its own options (cmd_*.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "diskgeo/diskgeo.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

/* One row per command, in the order --help lists them; NULL-terminated. */
static const struct command commands[] = {
    {"probe", cmd_probe, "show what the device is: size, sector sizes, rotation, transport"},
    {"read", cmd_read, "stream or randomly read a range; MB/s, IOPS, latency"},
    {"bandwidth", cmd_bandwidth,
     "map sequential bandwidth over the LBA range and find the recording zones"},
    {"profile", cmd_profile,
     "probe + bandwidth curve and zones + seek profile, rotation and IOPS: the whole profile"},
    {"model", cmd_model, "print what a drive spec implies (the truth); --list"},
    {"sweep", cmd_sweep,
     "block size x queue depth: sequential MB/s, random IOPS and latency, NCQ gain, 512e"},
    {"seek", cmd_seek, "measure seek time vs distance, rotation speed and random IOPS by span"},
    {"geometry", cmd_geometry,
     "track size per zone and surface, heads, layout, skews and head switch from timing"},
    {"compare", cmd_compare, "compare profiles and a baseline; find weak regions and odd drives"},
    {"summary", cmd_summary, "headline figures of many profiles: a table or JSON Lines (--jsonl)"},
    {NULL, NULL, NULL},
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: diskgeo COMMAND [options] DEVICE\n"
		"       diskgeo --help | --version\n\n"
		"Measures what a disk really does: its bandwidth curve and recording zones, its\n"
		"seek profile and rotation speed. DEVICE is a block device, a regular file, or\n"
		"sim:NAME / sim:SPEC.json (a simulated drive, in virtual time).\n\n"
		"Commands:\n");
	for (const struct command *c = commands; c->name; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->summary);
	fprintf(out,
		"\n'diskgeo COMMAND --help' describes a command; man diskgeo(8) has the rest.\n");
}

/*
 * Opens /dev/null on each of fds 0-2 that is closed: the next open(2) takes the lowest free
 * descriptor, so a device opened for writing (or an output file) would otherwise become fd 2
 * and receive the warnings. Returns 0, or -1 when /dev/null cannot fill the gap.
 */
static int std_fds_open(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		int n = open("/dev/null", fd ? O_WRONLY : O_RDONLY);
		if (n != fd) {
			if (n >= 0)
				close(n);
			return -1;
		}
	}
	return 0;
}

static int dispatch(int argc, char **argv)
{
	/* The synopsis is `COMMAND DEVICE [options]`: getopt_long must permute whatever
	 * POSIXLY_CORRECT asks (it would stop at DEVICE and leave the options as operands). */
	unsetenv("POSIXLY_CORRECT");
	if (argc < 2) {
		usage(stderr);
		return DG_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return DG_EXIT_OK;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("diskgeo %s\n", DG_VERSION);
		return DG_EXIT_OK;
	}
	for (const struct command *c = commands; c->name; c++) {
		if (!strcmp(argv[1], c->name))
			return c->run(argc - 1, argv + 1);
	}
	cli_error("unknown command '%s'", argv[1]);
	usage(stderr);
	return DG_EXIT_USAGE;
}

/*
 * A checked close of standard output on every path (util-linux's closestream.h idea): what a
 * command printed reaches its destination, or the exit status says it did not. A write error
 * (a full disk, /dev/full, a closed pipe) is an output that failed: DG_EXIT_USAGE with one line,
 * winning over 0, 3 and 4 as a failed --json does (diskgeo(8), EXIT STATUS); a command that
 * failed otherwise keeps its status and its own line. EPIPE says nothing: the reader left on
 * purpose.
 */
static int close_stdout(int rc)
{
	bool failed = ferror(stdout) != 0;

	errno = 0;
	if (fclose(stdout) != 0 && errno != EBADF)
		failed = true;
	if (!failed || (rc != DG_EXIT_OK && rc != DG_EXIT_IO && rc != DG_EXIT_INTERRUPTED))
		return rc;
	if (errno != EPIPE)
		cli_error("write error on standard output%s%s", errno ? ": " : "",
			  errno ? strerror(errno) : "");
	return DG_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	if (std_fds_open())
		return DG_EXIT_USAGE; /* nowhere safe to say so */
	return close_stdout(dispatch(argc, argv));
}
