/*
 * pmuprof list: the events that open here.  Each candidate is opened once
 * with perf_event_open, counting, on this process; only those that open
 * are listed, grouped as perf list groups them.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "events/events.h"
#include "parse-opt.h"
#include "base/util.h"

static const struct pm_opt list_opts[] = {
	{ 'h', "help", NULL, "show this help" },
	PM_OPT_END,
};

static const char list_usage[] =
	"usage: pmuprof list [PATTERN...]\n\n"
	"List the events that perf_event_open accepts on this machine, grouped as\n"
	"perf list groups them: hardware, software, hardware cache, tracepoints\n"
	"(tracefs is mounted for pmuprof alone where it is not) and PMU events from\n"
	"sysfs. Each but the tracepoints is opened once, counting, on pmuprof\n"
	"itself; those that do not open are left out.\n"
	"PATTERNs (shell globs such as 'sched:*') keep only the names they match.";

static int list_opt(int key, const char *arg, void *ctx)
{
	(void)key;
	(void)arg;
	(void)ctx;
	return 0;
}

struct lctx {
	char **pats;
	int npats;
	size_t shown, refused;
};

static bool wanted(const struct lctx *c, const char *name)
{
	if (!c->npats)
		return true;
	for (int i = 0; i < c->npats; i++)
		if (!fnmatch(c->pats[i], name, 0))
			return true;
	return false;
}

/* 0 when @spec opens here (counting, this process, any CPU). */
static int probe(const struct pm_evt_spec *spec)
{
	struct perf_event_attr a;
	int fd;

	pm_evt_count_attr(spec, &a);
	fd = pm_evt_open(&a, 0, -1, -1);
	if (fd == -EACCES && !a.exclude_kernel) {
		/* kernel counting refused (paranoid): user-only still shows the event exists */
		a.exclude_kernel = 1;
		fd = pm_evt_open(&a, 0, -1, -1);
	}
	if (fd == -EINVAL || fd == -EOPNOTSUPP) {
		/* a PMU that cannot exclude user/kernel (msr): count both */
		a.exclude_user = a.exclude_kernel = a.exclude_hv = 0;
		fd = pm_evt_open(&a, 0, -1, -1);
	}
	if (fd == -EINVAL || fd == -EOPNOTSUPP) {
		/* a system-wide PMU (uncore): no per-task events, so one CPU */
		fd = pm_evt_open(&a, -1, 0, -1);
	}
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

static void show(struct lctx *c, const char *name, const char *group, bool open)
{
	struct pm_evt_spec spec;

	if (!wanted(c, name))
		return;
	if (pm_evt_parse(name, &spec, NULL, 0) < 0 || (open && probe(&spec) < 0)) {
		c->refused++;
		return;
	}
	if (!c->shown++)
		printf("List of events that open on this machine (for -e):\n\n");
	printf("  %-48s [%s]\n", name, group);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of @dir (no dot files), sorted; *n set. */
static char **dir_names(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **v = NULL;
	size_t cap = 0;

	*n = 0;
	if (!d)
		return NULL;
	while ((de = readdir(d)) && *n < 100000) {
		if (de->d_name[0] == '.')
			continue;
		PM_GROW(v, cap, *n + 1);
		v[(*n)++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_str);
	return v;
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void list_tracepoints(struct lctx *c, const char *root)
{
	char *dir = xasprintf("%s/events", root);
	size_t ns, ne;
	char **subs = dir_names(dir, &ns);

	for (size_t i = 0; i < ns; i++) {
		char *sdir = xasprintf("%s/%s", dir, subs[i]);
		char **evs = dir_names(sdir, &ne);

		for (size_t k = 0; k < ne; k++) {
			char *name, *idp = xasprintf("%s/%s/id", sdir, evs[k]);

			if (access(idp, F_OK) == 0) {
				name = xasprintf("%s:%s", subs[i], evs[k]);
				/*
				 * not opened: opening one enables it in the kernel,
				 * ~30 ms each here (2 000 of them: a minute); its id
				 * file says the kernel has it, as perf list trusts
				 */
				show(c, name, "Tracepoint event", false);
				free(name);
			}
			free(idp);
		}
		free_names(evs, ne);
		free(sdir);
	}
	free_names(subs, ns);
	free(dir);
}

/* PMU/EVENT/ for every alias in sysfs of the PMUs that have some. */
static void list_pmu_events(struct lctx *c)
{
	size_t np, ne;
	char **pmus = dir_names(pm_evt_sysfs(), &np);

	for (size_t i = 0; i < np; i++) {
		char *edir = xasprintf("%s/%s/events", pm_evt_sysfs(), pmus[i]);
		char **evs = dir_names(edir, &ne);

		for (size_t k = 0; k < ne; k++) {
			char *name;

			/* .scale/.unit files describe an event, they are not one */
			if (strchr(evs[k], '.'))
				continue;
			name = xasprintf("%s/%s/", pmus[i], evs[k]);
			show(c, name, "Kernel PMU event", true);
			free(name);
		}
		free_names(evs, ne);
		free(edir);
	}
	free_names(pmus, np);
}

int cmd_list(int argc, char **argv)
{
	struct lctx c;
	enum pm_evt_kind k;
	const char *n, *tr;
	size_t hw_refused = 0, before;
	int first, mntns;

	first = pm_opt_parse(argc, argv, list_opts, list_usage, 0, list_opt, NULL);
	if (first < 0)
		return first == -2 ? 0 : 2;
	memset(&c, 0, sizeof(c));
	c.pats = argv + first;
	c.npats = argc - first;
	/* as record: tracefs mounted for pmuprof alone where it is not (root) */
	mntns = pm_evt_tracefs_mount();
	if (mntns > 0)
		close(mntns);

	for (int pass = 0; pass < 3; pass++) {
		static const enum pm_evt_kind kinds[] = { PM_EVT_HW, PM_EVT_SW, PM_EVT_CACHE };
		static const char *const groups[] = { "Hardware event", "Software event",
						      "Hardware cache event" };

		for (size_t i = 0; (n = pm_evt_builtin(i, &k)); i++) {
			if (k != kinds[pass])
				continue;
			before = c.refused;
			show(&c, n, groups[pass], true);
			if (k != PM_EVT_SW)
				hw_refused += c.refused - before;
		}
	}
	tr = pm_evt_tracefs();
	if (tr)
		list_tracepoints(&c, tr);
	list_pmu_events(&c);
	if (c.npats && !c.shown) {
		pm_error("no event here matches %s%s", c.pats[0], c.npats > 1 ? " (or the others)" : "");
		return 1;
	}
	printf("\n");
	if (hw_refused)
		printf("# %zu hardware and cache events do not open here (no hardware PMU, or "
		       "not counted by this CPU's PMU): -e cycles falls back to cpu-clock\n",
		       hw_refused);
	if (!tr)
		printf("# tracepoints not listed: tracefs is not mounted; mount it with: mount -t "
		       "tracefs nodev /sys/kernel/tracing\n");
	printf("# also: raw rNNNN, PMU/term=value,.../ (terms in "
	       "%s/PMU/format/), uprobe:BINARY:SYMBOL\n",
	       pm_evt_sysfs());
	return 0;
}
