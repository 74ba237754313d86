/*
 * Unit tests for lib/agent/spool: put, next, done and removal per backend;
 * the bound drops the oldest and counts them; a restart resumes with the
 * same pending set; torn temporaries, hostile metas and foreign files.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/meta.h"
#include "agent/spool.h"
#include "base/util.h"
#include "test.h"

static char dir[] = "/tmp/pmuprof-test-spool.XXXXXX";
static const char *const ab[] = { "a", "b" };
static char err[256];

/* A fresh spool directory per test: DIR/NAME. */
static const char *spool_dir(const char *name)
{
	return pm_test_tmp_path(dir, sizeof(dir), name);
}

static void meta(struct pm_agent_meta *m, uint64_t start_s, int32_t pid, uint64_t seq)
{
	memset(m, 0, sizeof(*m));
	m->pid = pid;
	m->seq = seq;
	m->start_ns = start_s * 1000000000ULL;
	m->duration_ns = 10000000000ULL;
	pm_meta_set(m->service, sizeof(m->service), "checkout");
	pm_meta_set(m->exe_name, sizeof(m->exe_name), "srv");
	pm_meta_set(m->host, sizeof(m->host), "h1");
}

/* Put interval (@start_s, @pid, @seq) with a body that names it, of @len bytes. */
static int put(struct pm_spool *sp, uint64_t start_s, int32_t pid, uint64_t seq, size_t len)
{
	struct pm_agent_meta m;
	char body[4096];

	meta(&m, start_s, pid, seq);
	memset(body, 'x', sizeof(body));
	snprintf(body, sizeof(body), "%" PRIu64 "/%" PRId32 "/%" PRIu64 ":", start_s, pid, seq);
	return pm_spool_put(sp, &m, body, len < sizeof(body) ? len : sizeof(body), err,
			    sizeof(err));
}

/* The next interval of backend @b: its start in s, or -1 when none; marked done when @done. */
static long long next_start(struct pm_spool *sp, unsigned b, int done)
{
	struct pm_spool_item it;
	long long s;

	if (pm_spool_next(sp, b, &it) != 1)
		return -1;
	s = (long long)(it.meta.start_ns / 1000000000ULL);
	/* the body read back is the one put */
	if (it.len < 4 || strtoll((const char *)it.data, NULL, 10) != s)
		s = -2;
	if (done)
		pm_spool_done(sp, b, &it.meta);
	pm_spool_item_release(&it);
	return s;
}

static int files(const char *d)
{
	return pm_test_count_entries(d);
}

/* Oldest first whatever the order of the puts; done per backend; removed when both have it. */
static int test_order_done(void)
{
	const char *d = spool_dir("order");
	struct pm_spool *sp;
	struct pm_spool_stats st;
	struct pm_agent_meta m;

	CHECK(d);
	CHECK_INT(pm_spool_open(&sp, d, 0, ab, 2, err, sizeof(err)), 0);
	CHECK_INT(put(sp, 300, 7, 2, 100), 0);
	CHECK_INT(put(sp, 100, 7, 0, 100), 0);
	CHECK_INT(put(sp, 200, 9, 0, 100), 0);
	CHECK_INT(put(sp, 200, 8, 0, 100), 0); /* same start: pid orders */
	CHECK_INT(put(sp, 100, 7, 0, 100), -EEXIST);
	CHECK_INT(files(d), 8);
	CHECK_INT(next_start(sp, 0, 1), 100);
	CHECK_INT(next_start(sp, 0, 0), 200);
	CHECK_INT(next_start(sp, 0, 0), 200); /* not done: the same again */
	CHECK_INT(pm_spool_pending(sp, 0), 3);
	CHECK_INT(pm_spool_pending(sp, 1), 4);
	CHECK_INT(files(d), 9); /* a's marker */
	/* b takes the first one too: it goes */
	CHECK_INT(next_start(sp, 1, 1), 100);
	CHECK_INT(files(d), 6);
	CHECK_INT(pm_spool_pending(sp, -1), 3);
	/* pid 8 comes before pid 9 at the same start */
	{
		struct pm_spool_item it;

		CHECK_INT(pm_spool_next(sp, 1, &it), 1);
		CHECK_INT(it.meta.pid, 8);
		CHECK_STR(it.meta.service, "checkout");
		pm_spool_item_release(&it);
	}
	meta(&m, 999, 7, 0);
	CHECK_INT(pm_spool_done(sp, 0, &m), -ENOENT);
	while (next_start(sp, 0, 1) >= 0)
		;
	while (next_start(sp, 1, 1) >= 0)
		;
	CHECK_INT(files(d), 0);
	pm_spool_get_stats(sp, &st);
	CHECK_INT(st.put, 4);
	CHECK_INT(st.pending, 0);
	CHECK_INT(st.bytes, 0);
	CHECK_INT(st.dropped, 0);
	pm_spool_close(sp);
	return PM_PASS;
}

/* The bound drops the oldest first, whoever lacks them, and counts them. */
static int test_bound(void)
{
	const char *d = spool_dir("bound");
	struct pm_spool *sp;
	struct pm_spool_stats st;
	uint64_t one;

	CHECK(d);
	/* the size of one interval, measured */
	CHECK_INT(pm_spool_open(&sp, d, 0, ab, 2, err, sizeof(err)), 0);
	CHECK_INT(put(sp, 19, 1, 0, 1000), 0);
	pm_spool_get_stats(sp, &st);
	one = st.bytes;
	CHECK(one > 1000 && one < 2000);
	next_start(sp, 0, 1);
	next_start(sp, 1, 1);
	pm_spool_close(sp);

	CHECK_INT(pm_spool_open(&sp, d, 3 * one, ab, 2, err, sizeof(err)), 0);
	for (int i = 0; i < 5; i++)
		CHECK_INT(put(sp, 10 + (uint64_t)i, 1, 0, 1000), 0);
	pm_spool_get_stats(sp, &st);
	CHECK_INT(st.pending, 3);
	CHECK_INT(st.dropped, 2);
	CHECK_INT(st.dropped_bytes, 2 * one);
	CHECK(st.bytes <= 3 * one);
	CHECK_INT(next_start(sp, 0, 0), 12); /* 10 and 11 went */
	CHECK_INT(files(d), 6);
	/* one alone over the bound: refused and counted */
	CHECK_INT(put(sp, 20, 1, 0, 4000), -EFBIG);
	CHECK(strstr(err, "--spool-max"));
	pm_spool_get_stats(sp, &st);
	CHECK_INT(st.dropped, 3);
	CHECK_INT(st.pending, 3);
	pm_spool_close(sp);

	/* a smaller bound at the next open drops at once */
	CHECK_INT(pm_spool_open(&sp, d, one, ab, 2, err, sizeof(err)), 0);
	pm_spool_get_stats(sp, &st);
	CHECK_INT(st.resumed, 3);
	CHECK_INT(st.pending, 1);
	CHECK_INT(st.dropped, 2);
	CHECK_INT(next_start(sp, 1, 0), 14);
	pm_spool_close(sp);
	return PM_PASS;
}

/* A restart resumes with the same pending set per backend, in the same order. */
static int test_restart(void)
{
	const char *d = spool_dir("restart");
	struct pm_spool *sp, *sp2;
	struct pm_spool_stats st;

	CHECK(d);
	CHECK_INT(pm_spool_open(&sp, d, 0, ab, 2, err, sizeof(err)), 0);
	for (int i = 0; i < 6; i++)
		CHECK_INT(put(sp, 100 + (uint64_t)i, 42, (uint64_t)i, 200), 0);
	CHECK_INT(next_start(sp, 0, 1), 100);
	CHECK_INT(next_start(sp, 0, 1), 101);
	CHECK_INT(next_start(sp, 1, 1), 100); /* 100 is gone */
	/* one pmuprof per spool */
	CHECK_INT(pm_spool_open(&sp2, d, 0, ab, 2, err, sizeof(err)), -EBUSY);
	CHECK(strstr(err, "in use"));
	pm_spool_close(sp);

	CHECK_INT(pm_spool_open(&sp, d, 0, ab, 2, err, sizeof(err)), 0);
	pm_spool_get_stats(sp, &st);
	CHECK_INT(st.resumed, 5);
	CHECK_INT(st.torn + st.bad + st.dropped, 0);
	CHECK_INT(pm_spool_pending(sp, 0), 4);
	CHECK_INT(pm_spool_pending(sp, 1), 5);
	CHECK_INT(next_start(sp, 0, 0), 102);
	CHECK_INT(next_start(sp, 1, 0), 101);
	pm_spool_close(sp);

	/* b no longer configured: its markers go, and a's done ones with them */
	{
		static const char *const ac[] = { "a", "c" };

		CHECK_INT(pm_spool_open(&sp, d, 0, ac, 2, err, sizeof(err)), 0);
		CHECK_INT(pm_spool_pending(sp, 0), 4);
		CHECK_INT(pm_spool_pending(sp, 1), 5); /* c gets what is still held */
		CHECK_INT(next_start(sp, 1, 0), 101);
		pm_spool_close(sp);
	}
	return PM_PASS;
}

static int write_file(const char *d, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", d, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	fclose(f);
	return 0;
}

static int exists(const char *d, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", d, name);
	return access(path, F_OK) == 0;
}

#define K1 "00000000000000000100-0000000001-00000000000000000000"
#define K2 "00000000000000000200-0000000001-00000000000000000000"
#define K3 "00000000000000000300-0000000001-00000000000000000000"
#define K4 "00000000000000000400-0000000001-00000000000000000000"
#define K5 "00000000000000000500-0000000001-00000000000000000000"

/* Torn temporaries and half puts removed (torn); hostile metas removed (bad); foreign files kept. */
static int test_torn_hostile(void)
{
	const char *d = spool_dir("torn");
	struct pm_spool *sp;
	struct pm_spool_stats st;
	char good[256], link[512];

	CHECK(d);
	CHECK_INT(pm_spool_open(&sp, d, 0, ab, 2, err, sizeof(err)), 0);
	CHECK_INT(put(sp, 600, 5, 0, 100), 0);
	pm_spool_close(sp);
	/* outfile's fallback temporary, cut by a kill */
	CHECK_INT(write_file(d, "." K1 ".pb.gz.a1b2c3", "half"), 0);
	/* a meta whose profile never came (the keys' starts are in ns) */
	snprintf(good, sizeof(good), "pid=1\nseq=0\nstart_ns=200\n");
	CHECK_INT(write_file(d, K2 ".meta", good), 0);
	/* hostile metas: not key=value; a pid other than its name's */
	CHECK_INT(write_file(d, K3 ".meta", "\x1b[2Jgarbage\n"), 0);
	CHECK_INT(write_file(d, K3 ".pb.gz", "p"), 0);
	CHECK_INT(write_file(d, K4 ".meta", "pid=2\nseq=0\nstart_ns=400\n"), 0);
	CHECK_INT(write_file(d, K4 ".pb.gz", "p"), 0);
	/* a profile that is a symlink to elsewhere: never read */
	snprintf(good, sizeof(good), "pid=1\nseq=0\nstart_ns=500\n");
	CHECK_INT(write_file(d, K5 ".meta", good), 0);
	snprintf(link, sizeof(link), "%s/" K5 ".pb.gz", d);
	CHECK_INT(symlink("/etc/passwd", link), 0);
	/* not the spool's: left alone */
	CHECK_INT(write_file(d, "README", "mine"), 0);
	CHECK_INT(write_file(d, ".hidden", "mine"), 0);
	CHECK_INT(write_file(d, K1 ".txt", "mine"), 0);

	CHECK_INT(pm_spool_open(&sp, d, 0, ab, 2, err, sizeof(err)), 0);
	pm_spool_get_stats(sp, &st);
	CHECK_INT(st.torn, 2);
	CHECK_INT(st.bad, 2);
	CHECK_INT(st.resumed, 2); /* 500 passes the scan, its read fails */
	CHECK(!exists(d, "." K1 ".pb.gz.a1b2c3"));
	CHECK(!exists(d, K2 ".meta"));
	CHECK(!exists(d, K3 ".pb.gz") && !exists(d, K3 ".meta"));
	CHECK(!exists(d, K4 ".pb.gz"));
	CHECK(exists(d, "README") && exists(d, ".hidden") && exists(d, K1 ".txt"));
	CHECK_INT(next_start(sp, 0, 0), 600);
	pm_spool_get_stats(sp, &st);
	CHECK_INT(st.bad, 3);
	CHECK(!exists(d, K5 ".pb.gz") && !exists(d, K5 ".meta"));
	CHECK(access("/etc/passwd", F_OK) == 0);
	pm_spool_close(sp);
	return PM_PASS;
}

/* A directory others may write to is refused; bad backend names too. */
static int test_refuse(void)
{
	const char *d = spool_dir("open");
	static const char *const bad[] = { "a", "a" };
	static const char *const upper[] = { "Pyro" };
	struct pm_spool *sp;
	char path[512];

	CHECK(d);
	snprintf(path, sizeof(path), "%s/deep/er", d);
	CHECK_INT(pm_spool_open(&sp, path, 0, ab, 2, err, sizeof(err)), 0); /* made, parents too */
	pm_spool_close(sp);
	CHECK_INT(chmod(path, 0777), 0);
	CHECK_INT(pm_spool_open(&sp, path, 0, ab, 2, err, sizeof(err)), -EPERM);
	CHECK(strstr(err, "others may write"));
	CHECK_INT(pm_spool_open(&sp, d, 0, bad, 2, err, sizeof(err)), -EINVAL);
	CHECK_INT(pm_spool_open(&sp, d, 0, upper, 1, err, sizeof(err)), -EINVAL);
	{
		char buf[256];

		pm_spool_default_dir(buf, sizeof(buf));
		CHECK(geteuid() == 0 ? !strcmp(buf, PM_SPOOL_ROOT_DIR)
				     : !!strstr(buf, "pmuprof-spool-"));
	}
	return PM_PASS;
}

/* No backend: intervals stay until the bound drops them. */
static int test_no_backend(void)
{
	const char *d = spool_dir("none");
	struct pm_spool *sp;

	CHECK(d);
	CHECK_INT(pm_spool_open(&sp, d, 0, NULL, 0, err, sizeof(err)), 0);
	CHECK_INT(put(sp, 1, 1, 0, 10), 0);
	CHECK_INT(pm_spool_pending(sp, -1), 1);
	pm_spool_close(sp);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "order_done", test_order_done },
	{ "bound", test_bound },
	{ "restart", test_restart },
	{ "torn_hostile", test_torn_hostile },
	{ "refuse", test_refuse },
	{ "no_backend", test_no_backend },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	int rc = pm_test_main(argc, argv, "spool", tests);
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	/* made by a test (the template's X's replaced): removed whole */
	if (strcmp(dir + strlen(dir) - 6, "XXXXXX") != 0 && system(cmd) != 0)
		rc = 1;
	return rc;
}
