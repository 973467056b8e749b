/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clirun.h"

int clirun(const char *binary, const char *const *argv, const char *out_path, const char *err_path)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (o < 0 || e < 0)
			_exit(126);
		dup2(o, 1);
		dup2(e, 2);
		execv(binary, (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void clirun_slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t got = 0;

	if (f) {
		got = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[got] = '\0';
}

size_t clirun_lines(const char *text)
{
	size_t n = 0;

	for (const char *p = text; *p; p++)
		n += *p == '\n';
	return n;
}
