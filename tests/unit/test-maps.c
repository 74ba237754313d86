/*
 * Unit tests for lib/maps (address spaces: add, overlap, reset, fork,
 * /proc/PID/maps, opening binaries through /proc) and the (pid, tid) keys
 * of lib/stacks.
 */
#include "symbols/maps.h"

#include "profile/stacks.h"
#include "symbols/symtab.h"
#include "base/util.h"

#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int t_add_find(void)
{
	struct pm_maps *m = pm_maps_new();
	const struct pm_map *a;

	pm_maps_add(m, 10, 0x1000, 0x1000, 0, "[vdso]");
	pm_maps_add(m, 10, 0x4000, 0x2000, 0x1000, "//anon");
	CHECK(pm_maps_known(m, 10));
	CHECK(!pm_maps_known(m, 11));
	a = pm_maps_find(m, 10, 0x1800);
	CHECK(a && a->start == 0x1000 && a->end == 0x2000);
	CHECK_STR(a->path, "[vdso]");
	/* the vDSO is read from pmuprof's own (the kernel maps the same image everywhere) */
	CHECK(a->sym != NULL);
	CHECK_STR(pm_sym_path(a->sym), "[vdso]");
	a = pm_maps_find(m, 10, 0x4800);
	CHECK(a && a->sym == NULL); /* anonymous memory has no binary */
	CHECK(pm_maps_find(m, 10, 0x2000) == NULL);
	CHECK(pm_maps_find(m, 10, 0x5fff) != NULL);
	CHECK(pm_maps_find(m, 11, 0x1800) == NULL);
	/* the same mapping again is not a new one */
	pm_maps_add(m, 10, 0x1000, 0x1000, 0, "[vdso]");
	CHECK_INT(pm_maps_count(m), 2);
	/* an mmap over the middle splits the old one, old ids stay valid */
	pm_maps_add(m, 10, 0x4800, 0x800, 0, "[x]");
	CHECK_STR(pm_maps_find(m, 10, 0x4900)->path, "[x]");
	CHECK_STR(pm_maps_find(m, 10, 0x4100)->path, "//anon");
	a = pm_maps_find(m, 10, 0x5800);
	CHECK(a && a->start == 0x5000 && a->pgoff == 0x2000);
	CHECK_STR(pm_maps_at(m, 1)->path, "//anon");
	/* fork copies, reset retires */
	pm_maps_fork(m, 10, 12);
	CHECK(pm_maps_find(m, 12, 0x1800) != NULL);
	pm_maps_reset(m, 10);
	CHECK(pm_maps_find(m, 10, 0x1800) == NULL);
	CHECK(pm_maps_find(m, 12, 0x1800) != NULL);
	CHECK(pm_maps_at(m, 0) != NULL);
	/* empty and wrapping ranges are refused */
	pm_maps_add(m, 10, 0x9000, 0, 0, "[y]");
	pm_maps_add(m, 10, UINT64_MAX - 10, 100, 0, "[y]");
	CHECK(pm_maps_find(m, 10, 0x9000) == NULL);
	pm_maps_free(m);
	return PM_PASS;
}

static int t_load_self(void)
{
	struct pm_maps *m = pm_maps_new();
	const struct pm_map *mp;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	CHECK(n > 0);
	exe[n] = '\0';
	CHECK_INT(pm_maps_load_proc(m, getpid()), 0);
	mp = pm_maps_find(m, getpid(), (uint64_t)(uintptr_t)&t_load_self);
	CHECK(mp != NULL);
	CHECK_STR(mp->path, exe);
	CHECK(mp->sym != NULL);
	CHECK_INT(pm_maps_load_proc(m, INT_MAX), -ENOENT);
	pm_maps_free(m);
	return PM_PASS;
}

static int copy_file(const char *from, const char *to)
{
	char *buf;
	long n = pm_read_file(from, &buf, 512u << 20);
	int fd;

	if (n < 0)
		return (int)n;
	fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (fd < 0 || write(fd, buf, (size_t)n) != n) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	free(buf);
	close(fd);
	return 0;
}

/*
 * A binary mapped executable here, then deleted and replaced on disk: the
 * mapping still opens the original (through /proc/self/map_files), keeps
 * the kernel's path without " (deleted)", and a path-only open of a
 * deleted file whose inode differs is refused.
 */
static int t_deleted_binary(void)
{
	const char *src = pm_test_fixture("go/shares");
	char path[] = "/tmp/pmuprof-test-maps-XXXXXX";
	struct pm_maps *m;
	const struct pm_map *mp;
	struct pm_map_file fi;
	struct stat st;
	void *p;
	int fd;

	if (access(src, R_OK) != 0)
		SKIP("fixture %s missing (run scripts/fixtures.sh)", src);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	CHECK_INT(copy_file(src, path), 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK(fstat(fd, &st) == 0);
	p = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	CHECK(p != MAP_FAILED);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK(write(fd, "not an ELF file\n", 16) == 16);
	close(fd);

	m = pm_maps_new();
	CHECK_INT(pm_maps_load_proc(m, getpid()), 0);
	mp = pm_maps_find(m, getpid(), (uint64_t)(uintptr_t)p);
	CHECK(mp != NULL);
	CHECK_STR(mp->path, path);
	if (!mp->sym && access("/proc/self/map_files", R_OK) != 0) {
		munmap(p, 8192);
		unlink(path);
		pm_maps_free(m);
		SKIP("/proc/self/map_files not readable here");
	}
	CHECK(mp->sym != NULL);
	CHECK(pm_sym_is_go(mp->sym));
	pm_maps_free(m);

	/* no /proc to go through (pid 0): the path now names another inode */
	m = pm_maps_new();
	memset(&fi, 0, sizeof(fi));
	fi.ino = st.st_ino;
	fi.deleted = true;
	pm_maps_add_file(m, 0, 0x10000, 0x1000, 0, path, &fi);
	mp = pm_maps_find(m, 0, 0x10000);
	CHECK(mp && mp->sym == NULL);
	/* " (deleted)" in the kernel's name marks it deleted and is dropped */
	pm_maps_add_file(m, 0, 0x20000, 0x1000, 0, "/nonexistent/x (deleted)", NULL);
	CHECK_STR(pm_maps_find(m, 0, 0x20000)->path, "/nonexistent/x");
	pm_maps_free(m);
	munmap(p, 8192);
	unlink(path);
	return PM_PASS;
}

/* Two processes mapping one file share its pm_sym (keyed by inode). */
static int t_shared_by_inode(void)
{
	struct pm_maps *m = pm_maps_new();
	struct pm_map_file fi;
	struct stat st;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	CHECK(n > 0);
	exe[n] = '\0';
	CHECK(stat(exe, &st) == 0);
	memset(&fi, 0, sizeof(fi));
	fi.ino = st.st_ino;
	pm_maps_add_file(m, 0, 0x10000, 0x1000, 0, exe, &fi);
	pm_maps_add_file(m, 0, 0x40000, 0x1000, 0, "/some/other/name", &fi);
	CHECK(pm_maps_find(m, 0, 0x10000)->sym != NULL);
	CHECK(pm_maps_find(m, 0, 0x10000)->sym == pm_maps_find(m, 0, 0x40000)->sym);
	CHECK_STR(pm_maps_find(m, 0, 0x40000)->path, "/some/other/name");
	pm_maps_free(m);
	return PM_PASS;
}

/*
 * Many mappings in one process, added in a scrambled order, and many
 * processes: every lookup must agree with the plan, a mapping added twice
 * stays one, and an overlapping one replaces what it covers.  Under
 * alarm(): with a linear scan per add this took minutes (quadratic).
 */
static int t_many(void)
{
	enum { N = 100000, NP = 50000 };
	struct pm_maps *m = pm_maps_new();
	const struct pm_map *a;
	size_t before;

	alarm(60);
	for (uint32_t i = 0; i < N; i++) {
		uint64_t k = ((uint64_t)i * 35761) % N; /* a permutation of 0..N-1 */
		pm_maps_add(m, 7, 0x10000000ULL + k * 0x2000, 0x1000, k, "//anon");
	}
	for (uint32_t i = 0; i < NP; i++)
		pm_maps_add(m, 100 + (pid_t)i, 0x400000, 0x1000 + i, 0, "//anon");
	CHECK_INT(pm_maps_count(m), N + NP);
	for (uint64_t k = 0; k < N; k += 997) {
		a = pm_maps_find(m, 7, 0x10000000ULL + k * 0x2000 + 0x800);
		CHECK(a && a->pgoff == k);
		CHECK(pm_maps_find(m, 7, 0x10000000ULL + k * 0x2000 + 0x1000) == NULL);
	}
	for (uint32_t i = 0; i < NP; i += 991) {
		a = pm_maps_find(m, 100 + (pid_t)i, 0x400000 + 0x1000 + i - 1);
		CHECK(a && a->pid == 100 + (pid_t)i && a->end == 0x400000 + 0x1000 + i);
		CHECK(pm_maps_known(m, 100 + (pid_t)i));
	}
	CHECK(!pm_maps_known(m, 100 + NP));
	/* the same mapping again: nothing new */
	before = pm_maps_count(m);
	pm_maps_add(m, 7, 0x10000000ULL + 5 * 0x2000, 0x1000, 5, "//anon");
	CHECK_INT(pm_maps_count(m), before);
	/* one over mappings 10..19 and the gaps between them replaces them */
	pm_maps_add(m, 7, 0x10000000ULL + 10 * 0x2000, 10 * 0x2000, 0, "[vdso]");
	for (uint64_t k = 10; k < 20; k++) {
		a = pm_maps_find(m, 7, 0x10000000ULL + k * 0x2000 + 0x800);
		CHECK(a && strcmp(a->path, "[vdso]") == 0);
	}
	a = pm_maps_find(m, 7, 0x10000000ULL + 20 * 0x2000 + 0x800);
	CHECK(a && a->pgoff == 20);
	a = pm_maps_find(m, 7, 0x10000000ULL + 9 * 0x2000 + 0x800);
	CHECK(a && a->pgoff == 9);
	alarm(0);
	pm_maps_free(m);
	return PM_PASS;
}

/* The limit on mappings: later ones are dropped, counted, and not found. */
static int t_limit(void)
{
	struct pm_maps *m = pm_maps_new();

	pm_maps_set_limit(m, 3);
	for (int i = 0; i < 5; i++)
		pm_maps_add(m, 1, 0x1000 * (uint64_t)(1 + 2 * i), 0x1000, 0, "//anon");
	CHECK_INT(pm_maps_count(m), 3);
	CHECK_INT(pm_maps_dropped(m), 2);
	CHECK(pm_maps_find(m, 1, 0x5800) != NULL);
	CHECK(pm_maps_find(m, 1, 0x7800) == NULL);
	/* the same mapping again is not a new one, so not dropped */
	pm_maps_add(m, 1, 0x1000, 0x1000, 0, "//anon");
	CHECK_INT(pm_maps_dropped(m), 2);
	pm_maps_free(m);
	return PM_PASS;
}

/*
 * The limit on binaries opened: the same small binary under 1030 distinct
 * paths (/usr/bin/./true, /usr/bin/././true, ...) is opened 1024 times;
 * the last 6 mappings are kept but have no binary, and are counted.
 */
static int t_binaries_limit(void)
{
	struct pm_maps *m = pm_maps_new();
	char path[4096];
	const struct pm_map *a;
	size_t len;

	if (access("/usr/bin/true", R_OK) != 0)
		SKIP("no /usr/bin/true");
	snprintf(path, sizeof(path), "/usr/bin/true");
	for (int i = 0; i < PM_MAPS_MAX_BINARIES + 6; i++) {
		pm_maps_add(m, 1, 0x100000000ULL + (uint64_t)i * 0x10000, 0x1000, 0, path);
		a = pm_maps_find(m, 1, 0x100000000ULL + (uint64_t)i * 0x10000);
		CHECK(a != NULL);
		CHECK(i < PM_MAPS_MAX_BINARIES ? a->sym != NULL : a->sym == NULL);
		/* the next path: one more "./" before the name */
		len = strlen(path);
		memmove(path + 11, path + 9, len - 9 + 1);
		memcpy(path + 9, "./", 2);
	}
	CHECK_INT(pm_maps_unopened(m), 6);
	pm_maps_free(m);
	return PM_PASS;
}

/*
 * Frames a target chose to pile into one probe chain: 400000 addresses
 * that the plain pm_hash_u64 sends to multiples of 2^20.  The frame table
 * hashes with a secret seed; with the plain hash this took about a minute.
 */
static int t_stacks_flood(void)
{
	enum { N = 400000 };
	struct pm_stacks *s = pm_stacks_new(1);
	struct pm_stack_frame f = { 0, false, 0, 0 };
	uint32_t id;

	alarm(20);
	for (uint32_t j = 0; j < N; j++) {
		f.addr = f.vaddr = pm_test_unhash((uint64_t)(j + 1) << 20);
		CHECK_INT(pm_stacks_frame(s, &f), j);
	}
	f.addr = f.vaddr = pm_test_unhash((uint64_t)7 << 20);
	id = pm_stacks_frame(s, &f);
	alarm(0);
	CHECK_INT(id, 6);
	CHECK_INT(pm_stacks_nframes(s), N);
	pm_stacks_free(s);
	return PM_PASS;
}

static int t_stacks_tagged(void)
{
	struct pm_stacks *s = pm_stacks_new(2);
	struct pm_stack_frame f = { 1, false, 0x1234, 0x1234 };
	uint32_t ids[2], pid, tid;
	int64_t v[2] = { 1, 10 };
	const int64_t *vals;
	size_t n, i, seen = 0;

	ids[0] = pm_stacks_frame(s, &f);
	f.addr = 0x5678;
	ids[1] = pm_stacks_frame(s, &f);
	pm_stacks_add_tagged(s, 100, 101, ids, 2, v);
	pm_stacks_add_tagged(s, 100, 101, ids, 2, v);
	pm_stacks_add_tagged(s, 100, 102, ids, 2, v);
	pm_stacks_add_tagged(s, 200, 101, ids, 2, v);
	pm_stacks_add(s, ids, 2, v);
	CHECK_INT(pm_stacks_count(s), 4);
	for (i = 0; i < pm_stacks_count(s); i++) {
		pm_stacks_at(s, i, &n, &vals);
		pm_stacks_tags(s, i, &pid, &tid);
		CHECK_INT(n, 2);
		if (pid == 100 && tid == 101) {
			CHECK_INT(vals[0], 2);
			CHECK_INT(vals[1], 20);
			seen++;
		} else {
			CHECK_INT(vals[0], 1);
		}
	}
	CHECK_INT(seen, 1);
	/* many threads: stays one entry per (pid, tid) */
	for (i = 0; i < 5000; i++)
		pm_stacks_add_tagged(s, 7, (uint32_t)i, ids, 1, v);
	for (i = 0; i < 5000; i++)
		pm_stacks_add_tagged(s, 7, (uint32_t)i, ids, 1, v);
	CHECK_INT(pm_stacks_count(s), 5004);
	pm_stacks_free(s);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "add_find", t_add_find },
	{ "load_self", t_load_self },
	{ "deleted_binary", t_deleted_binary },
	{ "shared_by_inode", t_shared_by_inode },
	{ "many", t_many },
	{ "limit", t_limit },
	{ "binaries_limit", t_binaries_limit },
	{ "stacks_tagged", t_stacks_tagged },
	{ "stacks_flood", t_stacks_flood },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "maps", tests);
}
