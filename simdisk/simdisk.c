/* SPDX-License-Identifier: MIT */
/*
 * diskgeo-simdisk: a drive spec served through FUSE as one file, attached as a loop device, so
 * that the real io_uring path of diskgeo can be tested end to end against a drive whose truth is
 * known.
 *
 *   diskgeo-simdisk attach SPEC|NAME    prints /dev/loopN
 *   diskgeo-simdisk detach /dev/loopN   removes exactly what attach created
 *   diskgeo-simdisk list                the instances attach created and that still exist
 *   diskgeo-simdisk serve SPEC|NAME DIR runs the daemon in the foreground on DIR (debugging)
 *
 * The FUSE daemon is daemon.c, the instance manager (attach, detach, list) manager.c; this file
 * is the command line.
 *
 * Timing: FUSE worker threads stamp each request's arrival (CLOCK_MONOTONIC since the daemon's
 * epoch, in the model's ns) and queue it; ONE timing thread takes requests in arrival order,
 * asks the model for the completion time (dg_drive_access serialises them like one actuator),
 * sleeps with an absolute clock_nanosleep until ~50 us before it, spins the rest, and replies.
 * Reads return the pattern of simpattern.h, writes are timed and dropped, error defects EIO.
 * A drive that queues (ncq_depth > 1, drive model v2) is served by a second loop: the timing
 * thread hands every arrived request to the drive's queue (dg_drive_queue), lets the drive
 * choose (dg_drive_step) only once real time has reached its next decision, so that every
 * request that arrived by then takes part, and replies to each at its host-visible completion
 * (jitter delays the reply only; background periods hold the media inside the model).
 *
 * State: each attach makes a private directory RUNDIR/sim-XXXXXX holding the mount point `mnt`,
 * the daemon's log and a `state` file (spec, mount point, daemon pid and start time, loop
 * device). detach only acts on a loop device that a state file names, and only detaches it if
 * its backing file is still this instance's file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/diskgeo.h"
#include "simdisk.h"
#include "simpattern.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: " PROG " attach SPEC|NAME [--rotational 0|1]\n"
	    "       " PROG " detach /dev/loopN | loopN\n"
	    "       " PROG " list\n"
	    "       " PROG " serve SPEC|NAME MOUNTPOINT\n"
	    "       " PROG " --help | --version\n\n"
	    "Serves a simulated hard disk (a diskgeo drive spec: a built-in NAME such as\n"
	    "wd-red-4tb, or a JSON file) as a real block device with the drive's timing, for\n"
	    "end-to-end tests of diskgeo. Needs root, /dev/fuse and loop devices.\n\n"
	    "  attach   starts the daemon (FUSE, one file '" DISK_NAME
	    "'), attaches the file with\n"
	    "           losetup --direct-io=on --sector-size <logical>, prints /dev/loopN\n"
	    "           (and, on stderr, the physical sector size a 512e drive emulates);\n"
	    "           --rotational 0|1 sets the loop device's rotational flag (default 1)\n"
	    "  detach   detaches a loop device that attach created, unmounts, stops the daemon\n"
	    "           and removes its state; any other loop device is refused\n"
	    "  list     lists the instances attach created\n"
	    "'" PROG " COMMAND --help' describes one command.\n"
	    "  serve    runs the daemon in the foreground on MOUNTPOINT (debugging)\n\n"
	    "Reads return a deterministic pattern (each 8-byte word: its byte offset XOR\n"
	    "0x%016llx), writes are timed and dropped, error defects fail with EIO. Replies\n"
	    "leave at the modelled completion time, from one timing thread.\n\n"
	    "Environment: DISKGEO_SIMDISK_RUNDIR (state, default " RUNDIR_DEFAULT "),\n"
	    "DISKGEO_SIMDISK_DEBUG (FUSE debug output into the daemon's log).\n"
	    "Exit status: 0 success, 1 bad usage or spec or a device it did not create,\n"
	    "2 the system refused (not root, FUSE, losetup).\n",
	    (unsigned long long)DG_SIMPATTERN_KEY);
}

/* One subcommand's help, for "SUBCOMMAND --help". */
static const struct {
	const char *name, *text;
} sub_help[] = {
    {"attach", "Usage: " PROG " attach SPEC|NAME\n\n"
	       "Starts a daemon serving the drive spec (a built-in NAME such as wd-red-4tb, or a\n"
	       "JSON file) through FUSE, attaches it to a loop device with the drive's logical\n"
	       "sector size and prints the device (/dev/loopN). Needs root, /dev/fuse and loop.\n"},
    {"detach",
     "Usage: " PROG " detach /dev/loopN | loopN\n\n"
     "Detaches a loop device that attach created, unmounts, stops its daemon and removes\n"
     "its state. Any other loop device is refused (exit 1).\n"},
    {"list", "Usage: " PROG " list\n\n"
	     "Lists the instances attach created: loop device, spec, daemon pid, mount point.\n"},
    {"serve", "Usage: " PROG " serve SPEC|NAME MOUNTPOINT\n\n"
	      "Runs the daemon in the foreground on MOUNTPOINT (debugging).\n"},
};

static bool is_help(const char *arg)
{
	return !strcmp(arg, "--help") || !strcmp(arg, "-h");
}

int main(int argc, char **argv)
{
	char devpath[64];

	if (argc >= 2 && is_help(argv[1])) {
		usage(stdout);
		return fflush(stdout) ? EXIT_USAGE : EXIT_OK;
	}
	for (size_t i = 0; argc >= 3 && i < ARRAY_SIZE(sub_help); i++) {
		if (strcmp(argv[1], sub_help[i].name))
			continue;
		for (int k = 2; k < argc; k++) {
			if (is_help(argv[k])) {
				fputs(sub_help[i].text, stdout);
				return fflush(stdout) ? EXIT_USAGE : EXIT_OK;
			}
		}
	}
	/* "detach loop5" is "detach /dev/loop5", as losetup takes either */
	if (argc == 3 && !strcmp(argv[1], "detach") && !strchr(argv[2], '/') &&
	    !strncmp(argv[2], "loop", 4) &&
	    snprintf(devpath, sizeof(devpath), "/dev/%s", argv[2]) < (int)sizeof(devpath))
		argv[2] = devpath;
	if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
		printf(PROG " %s\n", DG_VERSION);
		return fflush(stdout) ? EXIT_USAGE : EXIT_OK;
	}
	if (argc >= 3 && !strcmp(argv[1], "attach")) {
		/* attach SPEC|NAME [--rotational 0|1] (the option before or after the spec) */
		const char *what = NULL;
		int rotational = 1;
		for (int i = 2; i < argc; i++) {
			if (!strcmp(argv[i], "--rotational") ||
			    !strncmp(argv[i], "--rotational=", 13)) {
				const char *v = argv[i][12] == '=' ? argv[i] + 13
						: i + 1 < argc	   ? argv[++i]
								   : "";
				if (strcmp(v, "0") && strcmp(v, "1")) {
					simdisk_errmsg("--rotational: must be 0 or 1 (got '%s')",
						       v);
					return EXIT_USAGE;
				}
				rotational = v[0] == '1';
			} else if (!what && argv[i][0] != '-') {
				what = argv[i];
			} else {
				simdisk_errmsg("attach: unexpected argument '%s'", argv[i]);
				return EXIT_USAGE;
			}
		}
		if (!what) {
			simdisk_errmsg("attach needs a drive spec or a built-in name");
			return EXIT_USAGE;
		}
		return simdisk_attach(what, rotational);
	}
	if (argc == 3 && !strcmp(argv[1], "detach"))
		return simdisk_detach(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "list"))
		return simdisk_list();
	if (argc == 4 && !strcmp(argv[1], "serve")) {
		struct dg_spec *spec = NULL;
		char err[DG_ERRLEN];
		int rc = dg_spec_load(argv[2], &spec, NULL, err, sizeof(err));
		if (rc) {
			simdisk_errmsg("%s", err[0] ? err : strerror(-rc));
			return EXIT_USAGE;
		}
		rc = simdisk_serve(spec, argv[3], NULL, -1);
		dg_spec_free(spec);
		return rc;
	}
	usage(stderr);
	return EXIT_USAGE;
}
