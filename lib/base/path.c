/* path: a command found through $PATH as execvp() finds it (path.h). */
#include "base/path.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

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

char *pm_path_resolve(const char *cmd)
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
