/*
 * Atomic output files: O_TMPFILE, fchown, linkat, rename.  See outfile.h.
 */
#include "base/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

#define TMP_TRIES 100

/* Could @o have created a file in the directory @dfd (its owner, group or anyone may write)? */
static bool may_write_dir(int dfd, const struct pm_owner *o)
{
	struct stat st;

	if (fstat(dfd, &st) < 0)
		return false;
	return (st.st_uid == o->uid && (st.st_mode & S_IWUSR)) ||
	       (st.st_gid == o->gid && (st.st_mode & S_IWGRP)) || (st.st_mode & S_IWOTH);
}

/* A fresh hidden name beside @name, ".NAME.XXXXXX". */
static char *tmp_name(const char *name, unsigned k)
{
	static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	uint64_t x = pm_hash_u64(pm_now_ns() ^ ((uint64_t)getpid() << 32) ^ k);
	char sfx[7];
	int i;

	for (i = 0; i < 6; i++, x /= 36)
		sfx[i] = digits[x % 36];
	sfx[6] = '\0';
	return xasprintf(".%s.%s", name, sfx);
}

int pm_outfile_open(struct pm_outfile *f, const char *path, const struct pm_owner *owner)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int rc;

	*f = (struct pm_outfile)PM_OUTFILE_INIT;
	if (!*path || (slash && !slash[1]))
		return -EISDIR;
	dir = slash == path ? xstrdup("/") : slash ? xstrndup(path, (size_t)(slash - path)) : xstrdup(".");
	f->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (f->dfd < 0)
		return -errno;
	f->name = xstrdup(slash ? slash + 1 : path);
	if (strcmp(f->name, ".") == 0 || strcmp(f->name, "..") == 0) {
		rc = -EISDIR;
		goto fail;
	}
	/* fault injection for the tests: PMUPROF_FAIL_TMPFILE=1, a filesystem without O_TMPFILE */
	if (getenv("PMUPROF_FAIL_TMPFILE")) {
		f->fd = -1;
		errno = EOPNOTSUPP;
	} else {
		f->fd = openat(f->dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
	}
	if (f->fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		/* no O_TMPFILE here (some network and FUSE filesystems, old kernels) */
		for (unsigned k = 0; k < TMP_TRIES && f->fd < 0; k++) {
			free(f->tmp);
			f->tmp = tmp_name(f->name, k);
			f->fd = openat(f->dfd, f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
			if (f->fd < 0 && errno != EEXIST)
				break;
		}
		if (f->fd < 0) {
			free(f->tmp);
			f->tmp = NULL;
		}
	}
	if (f->fd < 0) {
		rc = -errno;
		goto fail;
	}
	if (owner && may_write_dir(f->dfd, owner) && fchown(f->fd, owner->uid, owner->gid) < 0) {
		rc = -errno;
		goto fail;
	}
	return 0;
fail:
	pm_outfile_abort(f);
	return rc;
}

/* Give the unnamed file f->fd the name @name in f->dfd. */
static int link_unnamed(struct pm_outfile *f, const char *name)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
	if (linkat(AT_FDCWD, proc, f->dfd, name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno != ENOENT)
		return -errno;
	/* no /proc: this one needs CAP_DAC_READ_SEARCH */
	return linkat(f->fd, "", f->dfd, name, AT_EMPTY_PATH) == 0 ? 0 : -errno;
}

int pm_outfile_commit(struct pm_outfile *f)
{
	int rc = 0;

	if (fsync(f->fd) < 0)
		rc = -errno;
	if (!rc && !f->tmp) {
		/* the common case, a new file: named at once, complete */
		rc = link_unnamed(f, f->name);
		for (unsigned k = 0; rc == -EEXIST && k < TMP_TRIES; k++) {
			f->tmp = tmp_name(f->name, k);
			rc = link_unnamed(f, f->tmp);
			if (rc) {
				free(f->tmp);
				f->tmp = NULL;
			}
		}
	}
	if (close(f->fd) < 0 && !rc)
		rc = -errno;
	f->fd = -1;
	if (!rc && f->tmp) {
		if (renameat(f->dfd, f->tmp, f->dfd, f->name) < 0)
			rc = -errno;
		else {
			free(f->tmp);
			f->tmp = NULL;
		}
	}
	if (!rc)
		fsync(f->dfd); /* the name itself durable; failing here loses nothing written */
	pm_outfile_abort(f);
	return rc;
}

void pm_outfile_abort(struct pm_outfile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	if (f->tmp && f->dfd >= 0)
		unlinkat(f->dfd, f->tmp, 0);
	if (f->dfd >= 0)
		close(f->dfd);
	free(f->tmp);
	free(f->name);
	*f = (struct pm_outfile)PM_OUTFILE_INIT;
}

int pm_write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *b = buf;

	while (len) {
		ssize_t n = write(fd, b, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}
