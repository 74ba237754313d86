/* Unit tests for lib/outfile: unnamed until committed, atomic replace, owner. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/outfile.h"
#include "test.h"
#include "base/util.h"

static char dir[] = "/tmp/pmuprof-test-outfile.XXXXXX";

static const char *tmp_path(const char *name)
{
	return pm_test_tmp_path(dir, sizeof(dir), name);
}

static int has(const char *path, const char *want)
{
	char *data = NULL;
	long n = pm_read_file(path, &data, 4096);
	int ok = n == (long)strlen(want) && memcmp(data, want, (size_t)n) == 0;

	free(data);
	return ok;
}

/* Nothing is named before the commit, and an abort leaves nothing. */
static int test_unnamed(void)
{
	struct pm_outfile f;
	const char *path = tmp_path("new.pb.gz");
	struct stat st;
	mode_t um;

	CHECK(path);
	CHECK_INT(pm_outfile_open(&f, path, NULL), 0);
	CHECK_INT(pm_write_all(f.fd, "abc", 3), 0);
	CHECK_INT(pm_test_count_entries(dir), 0);
	pm_outfile_abort(&f);
	pm_outfile_abort(&f); /* idempotent */
	CHECK_INT(pm_test_count_entries(dir), 0);

	CHECK_INT(pm_outfile_open(&f, path, NULL), 0);
	CHECK_INT(pm_write_all(f.fd, "abc", 3), 0);
	CHECK_INT(pm_test_count_entries(dir), 0);
	CHECK_INT(pm_outfile_commit(&f), 0);
	CHECK_INT(f.fd, -1);
	CHECK_INT(pm_test_count_entries(dir), 1);
	CHECK(has(path, "abc"));
	CHECK_INT(stat(path, &st), 0);
	um = umask(0);
	umask(um);
	CHECK_INT(st.st_mode & 0777, 0666 & ~um);
	CHECK_INT(unlink(path), 0);
	return PM_PASS;
}

/* An existing file stays as it was until the commit replaces it whole. */
static int test_replace(void)
{
	struct pm_outfile f;
	const char *path = tmp_path("prev.pb.gz");
	char link[300];
	int fd;

	CHECK(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK_INT(pm_write_all(fd, "old", 3), 0);
	close(fd);
	CHECK_INT(pm_outfile_open(&f, path, NULL), 0);
	CHECK_INT(pm_write_all(f.fd, "newer", 5), 0);
	CHECK(has(path, "old"));
	CHECK_INT(pm_test_count_entries(dir), 1);
	pm_outfile_abort(&f);
	CHECK(has(path, "old"));
	CHECK_INT(pm_test_count_entries(dir), 1);

	CHECK_INT(pm_outfile_open(&f, path, NULL), 0);
	CHECK_INT(pm_write_all(f.fd, "newer", 5), 0);
	CHECK_INT(pm_outfile_commit(&f), 0);
	CHECK(has(path, "newer"));
	CHECK_INT(pm_test_count_entries(dir), 1);

	/* a symlink at the path is replaced, not followed */
	snprintf(link, sizeof(link), "%s/link", dir);
	CHECK_INT(symlink(path, link), 0);
	CHECK_INT(pm_outfile_open(&f, link, NULL), 0);
	CHECK_INT(pm_write_all(f.fd, "x", 1), 0);
	CHECK_INT(pm_outfile_commit(&f), 0);
	CHECK(has(path, "newer"));
	CHECK(has(link, "x"));
	CHECK_INT(pm_test_count_entries(dir), 2);
	unlink(link);
	unlink(path);
	return PM_PASS;
}

static int test_errors(void)
{
	struct pm_outfile f;
	char sub[300];

	CHECK(tmp_path("x"));
	snprintf(sub, sizeof(sub), "%s/nodir/out", dir);
	CHECK_INT(pm_outfile_open(&f, sub, NULL), -ENOENT);
	pm_outfile_abort(&f); /* after a failed open too */
	snprintf(sub, sizeof(sub), "%s/", dir);
	CHECK_INT(pm_outfile_open(&f, sub, NULL), -EISDIR);
	CHECK_INT(pm_outfile_open(&f, "", NULL), -EISDIR);
	snprintf(sub, sizeof(sub), "%s/..", dir);
	CHECK_INT(pm_outfile_open(&f, sub, NULL), -EISDIR);
	/* a directory at the path: the commit fails and leaves nothing */
	snprintf(sub, sizeof(sub), "%s/adir", dir);
	CHECK_INT(mkdir(sub, 0755), 0);
	CHECK_INT(pm_outfile_open(&f, sub, NULL), 0);
	CHECK(pm_outfile_commit(&f) < 0);
	CHECK_INT(pm_test_count_entries(dir), 1);
	CHECK_INT(pm_test_count_entries(sub), 0);
	rmdir(sub);
	return PM_PASS;
}

/* Without O_TMPFILE: a hidden named temp, removed on abort, renamed on commit. */
static int test_fallback(void)
{
	struct pm_outfile f;
	const char *path = tmp_path("fb.pb.gz");
	int rc = PM_PASS;

	CHECK(path);
	setenv("PMUPROF_FAIL_TMPFILE", "1", 1);
	if (pm_outfile_open(&f, path, NULL) != 0 || !f.tmp || f.tmp[0] != '.' ||
	    pm_test_count_entries(dir) != 1)
		rc = PM_FAIL;
	pm_outfile_abort(&f);
	if (pm_test_count_entries(dir) != 0)
		rc = PM_FAIL;
	if (pm_outfile_open(&f, path, NULL) != 0 || pm_write_all(f.fd, "fb", 2) != 0 ||
	    pm_outfile_commit(&f) != 0)
		rc = PM_FAIL;
	unsetenv("PMUPROF_FAIL_TMPFILE");
	CHECK_INT(rc, PM_PASS);
	CHECK_INT(pm_test_count_entries(dir), 1);
	CHECK(has(path, "fb"));
	unlink(path);
	return PM_PASS;
}

/* The owner gets the file where they could have made it, not elsewhere. */
static int test_owner(void)
{
	struct pm_owner nobody = { 65534, 65534 };
	struct pm_outfile f;
	char sub[300], path[320];
	struct stat st;

	if (geteuid() != 0)
		SKIP("not root");
	CHECK(tmp_path("x"));
	snprintf(sub, sizeof(sub), "%s/open", dir);
	CHECK_INT(mkdir(sub, 0777), 0);
	CHECK_INT(chmod(sub, 01777), 0); /* a sticky /tmp */
	snprintf(path, sizeof(path), "%s/p.pb.gz", sub);
	CHECK_INT(pm_outfile_open(&f, path, &nobody), 0);
	CHECK_INT(pm_outfile_commit(&f), 0);
	CHECK_INT(stat(path, &st), 0);
	CHECK_INT(st.st_uid, 65534);
	CHECK_INT(st.st_gid, 65534);
	unlink(path);
	/* the user's own directory */
	CHECK_INT(chmod(sub, 0755), 0);
	CHECK_INT(chown(sub, 65534, 0), 0);
	CHECK_INT(pm_outfile_open(&f, path, &nobody), 0);
	CHECK_INT(pm_outfile_commit(&f), 0);
	CHECK_INT(stat(path, &st), 0);
	CHECK_INT(st.st_uid, 65534);
	unlink(path);
	/* root's directory: the file stays root's */
	CHECK_INT(chown(sub, 0, 0), 0);
	CHECK_INT(pm_outfile_open(&f, path, &nobody), 0);
	CHECK_INT(pm_outfile_commit(&f), 0);
	CHECK_INT(stat(path, &st), 0);
	CHECK_INT(st.st_uid, 0);
	CHECK_INT(st.st_gid, 0);
	unlink(path);
	rmdir(sub);
	return PM_PASS;
}

int main(int argc, char **argv)
{
	static const struct pm_test tests[] = {
		{ "unnamed_until_commit", test_unnamed },
		{ "replace_whole", test_replace },
		{ "errors_leave_nothing", test_errors },
		{ "fallback_without_tmpfile", test_fallback },
		{ "owner_where_writable", test_owner },
		{ NULL, NULL },
	};
	int rc = pm_test_main(argc, argv, "outfile", tests);

	rmdir(dir);
	return rc;
}
