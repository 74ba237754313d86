/*
 * Unit tests for lib/agent/discover: a /proc made in a temporary
 * directory (stat, comm, cgroup, environ, an exe link to a Go fixture or
 * to /bin/sh): the Go processes found and the others not, each filter,
 * the resource (service name from the environment, container id from the
 * cgroup), zombies and pmuprof's own children left out, hostile names
 * sanitized.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/discover.h"
#include "base/util.h"
#include "test.h"

static char root[64];

static void put(int pid, const char *name, const char *text, size_t len)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%d", root, pid);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/%d/%s", root, pid, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0) {
		if (write(fd, text, len) < 0)
			perror(path);
		close(fd);
	}
}

/* A process: its stat (state, parent, start 1000 + pid), comm, exe, cgroup, environ. */
static void proc(int pid, char state, int ppid, const char *comm, const char *exe,
		 const char *cgroup, const char *env, size_t envlen)
{
	char buf[512], path[256];

	snprintf(buf, sizeof(buf),
		 "%d (%s) %c %d 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", pid, comm, state,
		 ppid, 1000 + pid);
	put(pid, "stat", buf, strlen(buf));
	snprintf(buf, sizeof(buf), "%s\n", comm);
	put(pid, "comm", buf, strlen(buf));
	put(pid, "cgroup", cgroup, strlen(cgroup));
	put(pid, "environ", env, envlen);
	snprintf(path, sizeof(path), "%s/%d/exe", root, pid);
	if (symlink(exe, path) < 0)
		perror(path);
}

static const char *go_fixture(void)
{
	static char path[512], abs[4096];
	const char *fix = getenv("PMUPROF_FIXTURES");

	snprintf(path, sizeof(path), "%s/go/ticker", fix ? fix : "tests/.work");
	return realpath(path, abs) ? abs : NULL; /* (the link's target: absolute) */
}

static int setup(void)
{
	const char *go = go_fixture();
	static const char env[] = "A=1\0OTEL_SERVICE_NAME=checkout\0B=2";
	static const char cg[] =
		"0::/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n";

	snprintf(root, sizeof(root), "/tmp/pmuprof-disc.XXXXXX");
	if (!go || !mkdtemp(root))
		return -1;
	proc(10, 'S', 1, "srv", go, cg, env, sizeof(env));
	proc(11, 'R', 1, "sh", "/bin/sh", "0::/user.slice\n", "", 0);
	proc(12, 'S', 1, "w\x1b[2J", go, "0::/user.slice/app\n", "", 0);
	proc(13, 'Z', 1, "dead", go, "0::/\n", "", 0);
	proc(14, 'S', 99, "kid", go, "0::/\n", "", 0); /* a child of pmuprof (99) */
	return 0;
}

static void cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", root);
}

static size_t scan(struct pm_disc *d, struct pm_disc_proc **v)
{
	size_t n = 0;

	if (pm_disc_scan(d, 99, v, &n) < 0)
		return (size_t)-1;
	return n;
}

static int t_scan(void)
{
	struct pm_disc *d;
	struct pm_disc_proc *v;
	struct pm_disc_filter none = { 0 };
	size_t n, bins, go;

	if (setup())
		SKIP("no Go fixture (scripts/fixtures.sh) or no temporary directory");
	d = pm_disc_new(root);
	pm_disc_set_filter(d, &none);
	n = scan(d, &v);
	CHECK_INT(n, 2); /* not the shell, the zombie, pmuprof's child */
	CHECK_INT(v[0].pid, 10);
	CHECK_INT(v[0].start, 1010);
	CHECK_STR(v[0].meta.service, "checkout");
	CHECK_STR(v[0].meta.exe_name, "ticker");
	CHECK_STR(v[0].meta.container_id,
		  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	CHECK_INT(v[1].pid, 12);
	CHECK_STR(v[1].meta.comm, "w?[2J");
	CHECK_STR(v[1].meta.service, "ticker"); /* no OTEL_SERVICE_NAME: the executable */
	CHECK_STR(v[1].meta.container_id, "");
	pm_disc_counts(d, &bins, &go);
	CHECK_INT(bins, 2); /* the fixture judged once for three processes, and the shell */
	CHECK_INT(go, 1);
	free(v);
	/* scanned again: the same, from what the last scan saw */
	CHECK_INT(scan(d, &v), 2);
	CHECK_STR(v[0].meta.service, "checkout");
	free(v);
	/* the shell execs the Go program: judged anew (its exe changed) */
	{
		char link[128];

		snprintf(link, sizeof(link), "%s/11/exe", root);
		unlink(link);
		if (symlink(go_fixture(), link) < 0)
			return PM_FAIL;
	}
	CHECK_INT(scan(d, &v), 3);
	CHECK_INT(v[1].pid, 11);
	CHECK_STR(v[1].meta.comm, "sh");
	free(v);
	pm_disc_free(d);
	cleanup();
	return PM_PASS;
}

static int t_filters(void)
{
	struct pm_disc *d;
	struct pm_disc_proc *v;
	pid_t pids[] = { 12 };
	char *comms[] = { (char *)"srv" }, *exes[] = { (char *)"ticker" },
	     *cgs[] = { (char *)"/user.slice/app" }, *sh[] = { (char *)"sh" };
	struct pm_disc_filter f = { 0 };

	if (setup())
		SKIP("no Go fixture (scripts/fixtures.sh) or no temporary directory");
	d = pm_disc_new(root);
	f.pids = pids, f.npids = 1;
	pm_disc_set_filter(d, &f);
	CHECK_INT(scan(d, &v), 1);
	CHECK_INT(v[0].pid, 12);
	free(v);
	f = (struct pm_disc_filter){ .comms = comms, .ncomms = 1 };
	pm_disc_set_filter(d, &f);
	CHECK_INT(scan(d, &v), 1);
	CHECK_INT(v[0].pid, 10);
	free(v);
	f = (struct pm_disc_filter){ .exes = exes, .nexes = 1 };
	pm_disc_set_filter(d, &f);
	CHECK_INT(scan(d, &v), 2);
	free(v);
	f = (struct pm_disc_filter){ .cgroups = cgs, .ncgroups = 1 };
	pm_disc_set_filter(d, &f);
	CHECK_INT(scan(d, &v), 1);
	CHECK_INT(v[0].pid, 12);
	free(v);
	f = (struct pm_disc_filter){ .comms = sh, .ncomms = 1 }; /* matches, but no Go */
	pm_disc_set_filter(d, &f);
	CHECK_INT(scan(d, &v), 0);
	free(v);
	pm_disc_free(d);
	cleanup();
	return PM_PASS;
}

/* One process judged at its first record (host-wide): as a scan would, gone ones told. */
static int t_judge(void)
{
	struct pm_disc *d;
	struct pm_disc_proc p;
	struct pm_disc_filter none = { 0 };
	char dir[128];

	if (setup())
		SKIP("no Go fixture (scripts/fixtures.sh) or no temporary directory");
	snprintf(dir, sizeof(dir), "%s/600", root); /* a kernel thread: no exe */
	mkdir(dir, 0700);
	d = pm_disc_new(root);
	pm_disc_set_filter(d, &none);
	CHECK_INT(pm_disc_judge(d, 10, 99, &p), 1);
	CHECK_INT(p.pid, 10);
	CHECK_INT(p.start, 1010);
	CHECK_STR(p.meta.service, "checkout");
	CHECK_INT(pm_disc_judge(d, 12, 99, &p), 1);
	CHECK_STR(p.meta.comm, "w?[2J");
	CHECK_INT(pm_disc_judge(d, 11, 99, &p), 0);  /* the shell */
	CHECK_INT(pm_disc_judge(d, 13, 99, &p), 0);  /* the zombie */
	CHECK_INT(pm_disc_judge(d, 14, 99, &p), 0);  /* pmuprof's child */
	CHECK_INT(pm_disc_judge(d, 10, 10, &p), 0);  /* pmuprof itself */
	CHECK_INT(pm_disc_judge(d, 600, 99, &p), 0); /* a kernel thread */
	CHECK_INT(pm_disc_judge(d, 700, 99, &p), -ESRCH);
	/* a filter: 12 by its comm alone */
	{
		char c0[] = "w\x1b[2J", *comms[] = { c0 };
		struct pm_disc_filter f = { .comms = comms, .ncomms = 1 };

		pm_disc_set_filter(d, &f);
		CHECK_INT(pm_disc_judge(d, 10, 99, &p), 0);
		CHECK_INT(pm_disc_judge(d, 12, 99, &p), 1);
	}
	pm_disc_free(d);
	cleanup();
	return PM_PASS;
}

static int t_container_id(void)
{
	char id[80];

	pm_disc_container_id("/kubepods/pod1/cri-containerd-"
			     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab.scope",
			     id, sizeof(id));
	CHECK_STR(id, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab");
	pm_disc_container_id("/user.slice/abc", id, sizeof(id));
	CHECK_STR(id, "");
	/* 65 hex digits: no id of 64 */
	pm_disc_container_id("/x/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", id,
			     sizeof(id));
	CHECK_STR(id, "");
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "scan", t_scan },
	{ "filters", t_filters },
	{ "judge", t_judge },
	{ "container_id", t_container_id },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "discover", tests);
}
