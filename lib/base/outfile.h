/*
 * outfile: output files that appear whole or not at all.  Layer 0.
 *
 * The bytes go to an unnamed file in the destination's directory
 * (O_TMPFILE), which gets its name only when committed: pmuprof killed at
 * any moment, SIGKILL included, leaves nothing new in the directory and
 * the previous file at the path as it was.  Where the filesystem has no
 * O_TMPFILE, a hidden ".NAME.XXXXXX" beside the path takes its place
 * (removed on abort; a SIGKILL can leave that one behind).
 * PMUPROF_FAIL_TMPFILE=1 in the environment forces that (tests).
 *
 * Commit: fsync; linkat() to the path when nothing is there, else to a
 * hidden temporary name and rename() over the path (a complete file,
 * named for two system calls); then fsync of the directory.
 *
 * Owner: with @owner, the file is given to that user and group (before it
 * has a name) when the user may write to the directory, i.e. could have
 * made the file there themselves (their home, a sticky /tmp); elsewhere
 * (/etc, /root) it stays the caller's.
 */
#ifndef PM_OUTFILE_H
#define PM_OUTFILE_H

#include <stddef.h>
#include <sys/types.h>

struct pm_owner {
	uid_t uid;
	gid_t gid;
};

/* The caller embeds it (PM_OUTFILE_INIT until opened); only fd is for writing. */
struct pm_outfile {
	int fd;     /* where to write; -1 when closed */
	int dfd;    /* the directory; -1 when closed */
	char *name; /* the final name in that directory */
	char *tmp;  /* the named temporary (no O_TMPFILE), else NULL */
};
#define PM_OUTFILE_INIT { -1, -1, NULL, NULL }

/*
 * Start the file that will replace @path; write to f->fd.  0 or -errno
 * (-EISDIR when @path names a directory or ends in '/').  @owner may be
 * NULL: the file stays the caller's.
 */
int pm_outfile_open(struct pm_outfile *f, const char *path, const struct pm_owner *owner);
/* Make it the file at @path (see above) and close it.  0 or -errno; on error as abort. */
int pm_outfile_commit(struct pm_outfile *f);
/* Close and forget it: nothing appears at the path.  Idempotent. */
void pm_outfile_abort(struct pm_outfile *f);

/* write(2) all of @buf to @fd, through EINTR and short writes.  0 or -errno. */
int pm_write_all(int fd, const void *buf, size_t len);

#endif
