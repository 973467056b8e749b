/* SPDX-License-Identifier: MIT */
/* t_exec, t_fork, t_slurp, t_lines: see t_helpers.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t_helpers.h"

/* What the child runs: argv through `file`, or fn(arg). */
struct job {
	const char *file;
	const char *const *argv;
	int (*fn)(void *);
	void *arg;
	unsigned flags;
};

/* In the child: stream `fd` (1 or 2) into the pipe end `w`, or into `path`. */
static void redirect(int fd, int w, const char *path)
{
	if (w >= 0) {
		dup2(w, fd);
	} else if (path) {
		int f = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (f < 0)
			_exit(126);
		dup2(f, fd);
		close(f);
	}
}

static void child(const struct job *j, const struct t_io *io, int out[2], int err[2])
{
	redirect(1, out[1], io ? io->out_path : NULL);
	redirect(2, err[1], io ? io->err_path : NULL);
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	if (j->argv) {
		execvp(j->file, (char *const *)j->argv);
		_exit(127);
	}
	if ((j->flags & T_NOBODY) && geteuid() == 0 && (setgid(65534) || setuid(65534)))
		_exit(77);
	int rc = j->fn(j->arg);
	fflush(NULL);
	_exit(rc);
}

/* Reads both pipes until both close (poll: neither can fill up and stall the child). */
static void drain(int out_fd, char *out, size_t out_len, int err_fd, char *err, size_t err_len)
{
	struct pollfd p[2] = {{.fd = out_fd, .events = POLLIN}, {.fd = err_fd, .events = POLLIN}};
	char *buf[2] = {out, err}, sink[4096];
	size_t len[2] = {out_len, err_len}, got[2] = {0, 0};

	while (p[0].fd >= 0 || p[1].fd >= 0) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			bool room = got[i] + 1 < len[i];
			ssize_t n = room ? read(p[i].fd, buf[i] + got[i], len[i] - 1 - got[i])
					 : read(p[i].fd, sink, sizeof(sink));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				close(p[i].fd);
				p[i].fd = -1;
			} else if (room) {
				got[i] += (size_t)n;
			}
		}
	}
	for (int i = 0; i < 2; i++)
		if (buf[i])
			buf[i][got[i]] = '\0';
}

static int run(const struct job *j, const struct t_io *io)
{
	int out[2] = {-1, -1}, err[2] = {-1, -1}, status;
	bool po = io && io->out && io->out_len, pe = io && io->err && io->err_len;

	if ((po && pipe(out)) || (pe && pipe(err)))
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		child(j, io, out, err);
	if (po)
		close(out[1]);
	if (pe)
		close(err[1]);
	drain(out[0], po ? io->out : NULL, po ? io->out_len : 0, err[0], pe ? io->err : NULL,
	      pe ? io->err_len : 0);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int t_exec(const char *file, const char *const *argv, const struct t_io *io)
{
	struct job j = {.file = file, .argv = argv};

	return run(&j, io);
}

int t_exec_files(const char *file, const char *const *argv, const char *out_path,
		 const char *err_path)
{
	struct t_io io = {.out_path = out_path, .err_path = err_path};

	return t_exec(file, argv, &io);
}

int t_fork(int (*fn)(void *), void *arg, unsigned flags, const struct t_io *io)
{
	struct job j = {.fn = fn, .arg = arg, .flags = flags};

	return run(&j, io);
}

void t_slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t got = 0;

	if (f) {
		got = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[got] = '\0';
}

size_t t_lines(const char *text)
{
	size_t n = 0;

	for (const char *p = text; *p; p++)
		n += *p == '\n';
	return n;
}
