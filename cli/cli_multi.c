/* SPDX-License-Identifier: MIT */
/*
 * Several devices at once: `diskgeo profile|bandwidth|seek DEV... --json-dir DIR` runs the
 * command once per device, all in parallel, each in its own process (fork), and writes
 * DIR/<name>.json; the exit status is the worst of the devices'.
 *
 * Why processes, not threads: the command line has process-wide state (the getopt state,
 * cli_stop, the verbosity), and processes isolate the devices: one that crashes or hangs in the
 * kernel takes no other down. The cost, a fork per disk, is nothing beside minutes of measurement.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

/* Options that name one output and cannot be shared by several devices. */
static const char *const per_device[] = {
    "json", "csv", "csv-dir", "prometheus", "write", "confirm-destroy", NULL};

/* How bad an exit status is: ok < some I/O failed < device failed < interrupted < bad usage. */
static int rank(int rc)
{
	switch (rc) {
	case DG_EXIT_OK:
		return 0;
	case DG_EXIT_IO:
		return 1;
	case DG_EXIT_DEVICE:
		return 2;
	case DG_EXIT_INTERRUPTED:
		return 3;
	default:
		return 4;
	}
}

/* The file name of a device's profile: a sim: drive's name (or its spec file's, less .json), a
 * block device's kernel name (symlinks such as /dev/disk/by-id/... resolved), a file's name. */
static void device_name(const char *dev, char *buf, size_t len)
{
	char real[PATH_MAX];
	const char *s = dev, *slash;

	if (!strncmp(dev, "sim:", 4))
		s = dev + 4;
	else if (realpath(dev, real))
		s = real;
	slash = strrchr(s, '/');
	if (slash && slash[1])
		s = slash + 1;
	size_t n = strnlen(s, len - 1);
	memcpy(buf, s, n);
	buf[n] = 0;
	if (n > 5 && !strcmp(buf + n - 5, ".json"))
		buf[n - 5] = 0;
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == '/')
			*c = '_';
}

static const char *option_name(const struct option *longopts, int val, int longindex)
{
	if (longindex >= 0)
		return longopts[longindex].name;
	for (const struct option *o = longopts; o->name; o++)
		if (o->val == val)
			return o->name;
	return "";
}

/* The child: runs the command on one device with stdout and stderr in DIR/NAME.txt and
 * DIR/NAME.err. Never returns. */
static void child(int nopts, char **opts, const char *dev, const char *dir, const char *name,
		  int (*run)(int, char **))
{
	char json[PATH_MAX], out[PATH_MAX], err[PATH_MAX];
	char **argv = calloc((size_t)nopts + 4, sizeof(*argv));
	int fd, rc;

	snprintf(json, sizeof(json), "%s/%s.json", dir, name);
	snprintf(out, sizeof(out), "%s/%s.txt", dir, name);
	snprintf(err, sizeof(err), "%s/%s.err", dir, name);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
		_exit(DG_EXIT_USAGE);
	close(fd);
	fd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
		_exit(DG_EXIT_USAGE);
	close(fd);
	if (!argv)
		_exit(DG_EXIT_USAGE);
	memcpy(argv, opts, (size_t)nopts * sizeof(*argv));
	argv[nopts] = (char *)dev;
	argv[nopts + 1] = (char *)"--json";
	argv[nopts + 2] = json;
	rc = run(nopts + 3, argv);
	if (fflush(stdout) || fflush(stderr))
		rc = rc ? rc : DG_EXIT_USAGE;
	_exit(rc);
}

/* The last line of `path` into buf ("" when none). */
static void last_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	char line[DG_ERRLEN + 128];

	buf[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (line[0] != '\n')
			snprintf(buf, len, "%s", line);
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

/* A run over several devices: the command line without --json-dir, the directory, the devices
 * (av[first...]) and their processes. */
struct multi {
	const char *cmd, *dir;
	char **av;
	int ac, first, ndev;
	pid_t *pids;
	char (*names)[96];
};

/* Takes --json-dir DIR or --json-dir=DIR (before a "--") out of argv into m->av. Returns -1 to
 * go on, 0 when there is none, or DG_EXIT_USAGE. */
static int take_json_dir(struct multi *m, int argc, char **argv)
{
	m->av = calloc((size_t)argc + 1, sizeof(*m->av));
	if (!m->av) {
		cli_error("%s", strerror(ENOMEM));
		return DG_EXIT_USAGE;
	}
	for (int i = 0; i < argc; i++) {
		bool after_dashes = false;

		for (int j = 1; j < i; j++)
			after_dashes |= !strcmp(argv[j], "--");
		if (!after_dashes && !strcmp(argv[i], "--json-dir")) {
			if (i + 1 >= argc) {
				cli_error("%s: option '--json-dir' needs an argument (see 'diskgeo "
					  "%s --help')",
					  m->cmd, m->cmd);
				return DG_EXIT_USAGE;
			}
			m->dir = argv[++i];
		} else if (!after_dashes && !strncmp(argv[i], "--json-dir=", 11)) {
			m->dir = argv[i] + 11;
		} else {
			m->av[m->ac++] = argv[i];
		}
	}
	if (!m->dir)
		return 0;
	if (!*m->dir) {
		cli_error("%s: --json-dir needs a directory", m->cmd);
		return DG_EXIT_USAGE;
	}
	return -1;
}

/* The command's options, checked once for all devices: none that names one output or one
 * device. Returns -1 to go on, or the status to end with (--help runs the command). */
static int check_options(struct multi *m, const struct option *longopts,
			 int (*run)(int argc, char **argv))
{
	char shortopts[64];
	int opt, longindex = -1;

	cli_shortopts(longopts, shortopts, sizeof(shortopts));
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(m->ac, m->av, shortopts, longopts, &longindex)) != -1) {
		const char *name;

		if (opt == '?' || opt == ':')
			return cli_bad_option(m->cmd, m->av, shortopts);
		if (opt == 'h')
			return run(m->ac, m->av);
		name = option_name(longopts, opt, (opt >= 256 || longindex >= 0) ? longindex : -1);
		for (const char *const *p = per_device; *p; p++)
			if (!strcmp(name, *p)) {
				cli_error(
				    "%s: --%s names one output or one device; with --json-dir "
				    "each device's profile goes to DIR/<name>.json",
				    m->cmd, name);
				return DG_EXIT_USAGE;
			}
		longindex = -1;
	}
	m->first = optind;
	m->ndev = m->ac - optind;
	if (m->ndev < 1) {
		cli_error("%s: DEVICE is missing (see 'diskgeo %s --help')", m->cmd, m->cmd);
		return DG_EXIT_USAGE;
	}
	return -1;
}

/* The directory made or checked, each device's file name, none twice. Returns -1 to go on or
 * DG_EXIT_USAGE. */
static int prepare(struct multi *m)
{
	struct stat st;

	if (mkdir(m->dir, 0777) && errno != EEXIST) {
		cli_error("%s: cannot create --json-dir %s: %s", m->cmd, m->dir, strerror(errno));
		return DG_EXIT_USAGE;
	}
	if (stat(m->dir, &st) || !S_ISDIR(st.st_mode) || access(m->dir, W_OK | X_OK)) {
		cli_error("%s: --json-dir %s is not a writable directory", m->cmd, m->dir);
		return DG_EXIT_USAGE;
	}
	m->pids = calloc((size_t)m->ndev, sizeof(*m->pids));
	m->names = calloc((size_t)m->ndev, sizeof(*m->names));
	if (!m->pids || !m->names) {
		cli_error("%s", strerror(ENOMEM));
		return DG_EXIT_USAGE;
	}
	for (int i = 0; i < m->ndev; i++) {
		device_name(m->av[m->first + i], m->names[i], sizeof(m->names[i]));
		for (int j = 0; j < i; j++)
			if (!strcmp(m->names[i], m->names[j])) {
				cli_error("%s: %s and %s would both write %s/%s.json", m->cmd,
					  m->av[m->first + j], m->av[m->first + i], m->dir,
					  m->names[i]);
				return DG_EXIT_USAGE;
			}
	}
	return -1;
}

/* Waits for device i's process (passing a SIGINT or SIGTERM to us on to all, once) and prints
 * its line. Returns its exit status. */
static int wait_one(struct multi *m, int i, bool *forwarded)
{
	char err[PATH_MAX], line[DG_ERRLEN + 128];
	int status = 0, rc;

	while (waitpid(m->pids[i], &status, 0) < 0) {
		if (errno != EINTR)
			break;
		if (cli_stop && !*forwarded) {
			for (int j = 0; j < m->ndev; j++)
				if (m->pids[j] > 0)
					kill(m->pids[j], SIGTERM);
			*forwarded = true;
		}
	}
	if (WIFEXITED(status))
		rc = WEXITSTATUS(status);
	else
		rc = WIFSIGNALED(status) &&
			     (WTERMSIG(status) == SIGINT || WTERMSIG(status) == SIGTERM)
			 ? DG_EXIT_INTERRUPTED
			 : DG_EXIT_DEVICE;
	snprintf(err, sizeof(err), "%s/%s.err", m->dir, m->names[i]);
	last_line(err, line, sizeof(line));
	if (rc == DG_EXIT_OK)
		printf("%s: %s/%s.json\n", m->av[m->first + i], m->dir, m->names[i]);
	else
		printf("%s: exit %d%s%s\n", m->av[m->first + i], rc, line[0] ? ": " : "", line);
	return rc;
}

/* One process per device, all at once; the worst status. */
static int run_all(struct multi *m, int (*run)(int argc, char **argv))
{
	bool forwarded = false;
	int worst = DG_EXIT_OK;

	cli_install_signals();
	fflush(NULL);
	for (int i = 0; i < m->ndev; i++) {
		m->pids[i] = fork();
		if (m->pids[i] == 0)
			child(m->first, m->av, m->av[m->first + i], m->dir, m->names[i], run);
		if (m->pids[i] < 0) {
			cli_error("%s: cannot start a process for %s: %s", m->cmd,
				  m->av[m->first + i], strerror(errno));
			worst = DG_EXIT_USAGE;
		}
	}
	/* Each writes its partial profile when stopped (a terminal's ^C reaches them anyway). */
	for (int i = 0; i < m->ndev; i++) {
		int rc = m->pids[i] > 0 ? wait_one(m, i, &forwarded) : DG_EXIT_OK;

		if (rank(rc) > rank(worst))
			worst = rc;
	}
	return worst;
}

int cli_multi_device(const char *cmd, int argc, char **argv, const struct option *longopts,
		     int (*run)(int argc, char **argv))
{
	struct multi m = {.cmd = cmd};
	int rc = take_json_dir(&m, argc, argv);

	if (rc == 0)
		rc = -1; /* one device: the command's own path */
	else if (rc < 0 && (rc = check_options(&m, longopts, run)) < 0 && (rc = prepare(&m)) < 0)
		rc = run_all(&m, run);
	free(m.pids);
	free(m.names);
	free(m.av);
	return rc;
}
