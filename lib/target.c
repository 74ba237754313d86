#include "target.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

struct pm_target {
	pid_t pid;
	int go_fd;    /* write end: one byte lets the child exec; close without = exit */
	int err_fd;   /* read end: the child writes errno here if exec fails (CLOEXEC) */
	bool started, exited;
	int status;
};

static int exec_ok(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EACCES;
	if (access(path, X_OK) < 0)
		return -errno;
	/* root passes access(X_OK) when any x bit is set; refuse files with none */
	if (!(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)))
		return -EACCES;
	return 0;
}

char *pm_target_resolve(const char *cmd)
{
	const char *path;
	int saw_eacces = 0;

	if (!*cmd) {
		errno = ENOENT;
		return NULL;
	}
	if (strchr(cmd, '/')) {
		int err = exec_ok(cmd);
		if (err) {
			errno = -err;
			return NULL;
		}
		return xstrdup(cmd);
	}
	path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *end = strchrnul(path, ':');
		size_t dlen = (size_t)(end - path);
		char *cand = dlen ? xasprintf("%.*s/%s", (int)dlen, path, cmd) : xasprintf("./%s", cmd);
		int err = exec_ok(cand);

		if (!err)
			return cand;
		if (err == -EACCES)
			saw_eacces = 1;
		free(cand);
		path = *end ? end + 1 : end;
	}
	errno = saw_eacces ? EACCES : ENOENT;
	return NULL;
}

int pm_target_spawn(struct pm_target **out, const char *path, char *const argv[])
{
	int go[2], err[2];
	struct pm_target *t;
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(err, O_CLOEXEC) < 0) {
		int e = errno;
		close(go[0]);
		close(go[1]);
		return -e;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		return -e;
	}
	if (pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(err[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execv(path, argv);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	t = xcalloc(1, sizeof(*t));
	t->pid = pid;
	t->go_fd = go[1];
	t->err_fd = err[0];
	*out = t;
	return 0;
}

pid_t pm_target_pid(const struct pm_target *t)
{
	return t->pid;
}

int pm_target_start(struct pm_target *t)
{
	char c = 1;
	int e = 0;
	ssize_t n;

	if (write(t->go_fd, &c, 1) != 1)
		return -errno;
	close(t->go_fd);
	t->go_fd = -1;
	t->started = true;
	/* EOF (CLOEXEC closed it at exec) means the exec succeeded. */
	do
		n = read(t->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(t->err_fd);
	t->err_fd = -1;
	if (n == (ssize_t)sizeof(e)) {
		pm_target_wait(t, &t->status);
		return -e;
	}
	return 0;
}

int pm_target_poll(struct pm_target *t, int *status)
{
	pid_t r;

	if (t->exited) {
		*status = t->status;
		return 1;
	}
	r = waitpid(t->pid, &t->status, WNOHANG);
	if (r < 0)
		return -errno;
	if (r == 0)
		return 0;
	t->exited = true;
	*status = t->status;
	return 1;
}

int pm_target_wait(struct pm_target *t, int *status)
{
	while (!t->exited) {
		if (waitpid(t->pid, &t->status, 0) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		t->exited = true;
	}
	*status = t->status;
	return 0;
}

bool pm_target_exited(const struct pm_target *t)
{
	return t->exited;
}

int pm_target_signal(struct pm_target *t, int sig)
{
	if (t->exited)
		return 0;
	return kill(t->pid, sig) < 0 ? -errno : 0;
}

void pm_target_free(struct pm_target *t)
{
	int st;

	if (!t)
		return;
	if (!t->started && !t->exited) {
		kill(t->pid, SIGKILL);
		pm_target_wait(t, &st);
	}
	if (t->go_fd >= 0)
		close(t->go_fd);
	if (t->err_fd >= 0)
		close(t->err_fd);
	free(t);
}

int pm_target_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}
