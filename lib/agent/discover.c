/*
 * discover: the host's Go processes from /proc (discover.h).
 */
#include "agent/discover.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "goruntime/gocode.h"
#include "symbols/elfimg.h"
#include "symbols/gopclntab.h"

#define BIN_MAX 4096           /* binaries judged, remembered (then forgotten, oldest first) */
#define ENVIRON_MAX (256 << 10) /* bytes of a process's environment read for OTEL_SERVICE_NAME */

struct bin {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim;
	bool go;
};

/*
 * A process seen by the last scan: by pid, start time and executable,
 * the verdict, and for a target its resource.  A scan reads only the
 * exe's identity of a process it saw before that was no target (an exec
 * changes it; so does a pid reused by another program), and of a target
 * its start time too (a reused pid).  A zombie, a child of pmuprof and a
 * process whose stat cannot be read are looked at anew each scan.  (A
 * process that renames itself into a --comm filter's name after it was
 * judged is not seen: its exe did not change.)
 */
struct seen {
	pid_t pid;
	uint64_t start;
	dev_t dev;
	ino_t ino;
	bool target;
	struct pm_agent_meta *meta; /* a target's */
};

struct pm_disc {
	char *root;
	struct seen *seen;      /* the last scan's, by pid */
	size_t nseen;
	struct pm_disc_filter f;
	struct bin *bins;
	size_t nbins, capbins, next_evict, ngo;
	char host[PM_META_STR];
};

struct pm_disc *pm_disc_new(const char *root)
{
	struct pm_disc *d = xcalloc(1, sizeof(*d));

	d->root = xstrdup(root ? root : "/proc");
	if (gethostname(d->host, sizeof(d->host) - 1) < 0)
		d->host[0] = 0;
	pm_sanitize(d->host);
	return d;
}

static void free_strs(char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free((void *)v);
}

static char **copy_strs(char *const *v, size_t n)
{
	char **c = xcalloc(n ? n : 1, sizeof(*c));

	for (size_t i = 0; i < n; i++)
		c[i] = xstrdup(v[i]);
	return c;
}

void pm_disc_filter_free(struct pm_disc_filter *f)
{
	free((void *)f->pids);
	free_strs(f->comms, f->ncomms);
	free_strs(f->exes, f->nexes);
	free_strs(f->cgroups, f->ncgroups);
	memset(f, 0, sizeof(*f));
}

static void seen_free(struct seen *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].meta);
	free(v);
}

void pm_disc_free(struct pm_disc *d)
{
	if (!d)
		return;
	seen_free(d->seen, d->nseen);
	pm_disc_filter_free(&d->f);
	free(d->bins);
	free(d->root);
	free(d);
}

void pm_disc_set_filter(struct pm_disc *d, const struct pm_disc_filter *f)
{
	pid_t *pids = xcalloc(f->npids ? f->npids : 1, sizeof(*pids));

	seen_free(d->seen, d->nseen); /* every verdict judged again */
	d->seen = NULL;
	d->nseen = 0;
	pm_disc_filter_free(&d->f);
	if (f->npids)
		memcpy(pids, f->pids, f->npids * sizeof(*pids));
	d->f.pids = pids;
	d->f.npids = f->npids;
	d->f.comms = copy_strs(f->comms, f->ncomms);
	d->f.ncomms = f->ncomms;
	d->f.exes = copy_strs(f->exes, f->nexes);
	d->f.nexes = f->nexes;
	d->f.cgroups = copy_strs(f->cgroups, f->ncgroups);
	d->f.ncgroups = f->ncgroups;
}

void pm_disc_counts(const struct pm_disc *d, size_t *binaries, size_t *go)
{
	*binaries = d->nbins;
	*go = d->ngo;
}

/* Up to @max - 1 bytes of @root/@pid/@name into @buf, NUL-terminated: the length, or -1. */
static ssize_t read_proc(const struct pm_disc *d, pid_t pid, const char *name, char *buf,
			 size_t max)
{
	char path[512];
	ssize_t n, got = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%d/%s", d->root, (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((size_t)got < max - 1 && (n = read(fd, buf + got, max - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = 0;
	return got;
}

/*
 * /proc/PID/stat past the comm (which may hold ") "): its state, parent
 * and start time.  False for a zombie or what does not parse.
 */
static bool read_stat(const struct pm_disc *d, pid_t pid, pid_t *ppid, uint64_t *start)
{
	char buf[1024], state;
	const char *p;
	int field = 2; /* the comm's end */

	if (read_proc(d, pid, "stat", buf, sizeof(buf)) <= 0)
		return false;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %d", &state, ppid) != 2 || state == 'Z' || state == 'X')
		return false;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	return field == 22 && sscanf(p, "%lu", (unsigned long *)start) == 1;
}

/* The binary of @st judged before, or NULL. */
static struct bin *bin_find(struct pm_disc *d, const struct stat *st)
{
	for (size_t i = 0; i < d->nbins; i++) {
		struct bin *b = &d->bins[i];

		if (b->dev == st->st_dev && b->ino == st->st_ino && b->size == st->st_size &&
		    b->mtim.tv_sec == st->st_mtim.tv_sec && b->mtim.tv_nsec == st->st_mtim.tv_nsec)
			return b;
	}
	return NULL;
}

/* Is @st a binary judged before, and no Go program?  (A stat and a lookup: most processes.) */
static bool known_not_go(struct pm_disc *d, const struct stat *st)
{
	const struct bin *b = bin_find(d, st);

	return b && !b->go;
}

/* Is the executable of @pid (@exe: its /proc path, @st) a Go program?  Judged once a binary. */
static bool is_go(struct pm_disc *d, const char *exe, const struct stat *st)
{
	struct bin *b = bin_find(d, st);
	struct pm_elf *e = NULL;
	struct pm_go *go = NULL;
	char err[256];
	int minor;

	if (b)
		return b->go;
	if (d->nbins < BIN_MAX) {
		PM_GROW(d->bins, d->capbins, d->nbins + 1);
		b = &d->bins[d->nbins++];
	} else {
		b = &d->bins[d->next_evict++ % BIN_MAX];
		d->ngo -= b->go;
	}
	b->dev = st->st_dev;
	b->ino = st->st_ino;
	b->size = st->st_size;
	b->mtim = st->st_mtim;
	b->go = pm_gocode_open(exe, 0, &e, &go, &minor, err, sizeof(err)) == 0;
	d->ngo += b->go;
	pm_go_free(go);
	pm_elf_free(e);
	return b->go;
}

void pm_disc_container_id(const char *cgroup_path, char *out, size_t len)
{
	const char *best = NULL;
	size_t run = 0;

	for (const char *p = cgroup_path; *p; p++) {
		run = isxdigit((unsigned char)*p) && !isupper((unsigned char)*p) ? run + 1 : 0;
		if (run == 64 && !isxdigit((unsigned char)p[1]))
			best = p - 63;
	}
	if (best)
		snprintf(out, len, "%.64s", best);
	else if (len)
		out[0] = 0;
}

/* The process's cgroup (v2 "0::/path", else the last line's path) into @out. */
static void read_cgroup(const struct pm_disc *d, pid_t pid, char *out, size_t len)
{
	char buf[4096], *line, *save = NULL;

	out[0] = 0;
	if (read_proc(d, pid, "cgroup", buf, sizeof(buf)) <= 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *path = strchr(line, ':');

		path = path ? strchr(path + 1, ':') : NULL;
		if (!path)
			continue;
		snprintf(out, len, "%s", path + 1);
		if (strncmp(line, "0::", 3) == 0)
			return;
	}
}

/* OTEL_SERVICE_NAME in the process's environment, into @out; false when unset. */
static bool service_name(const struct pm_disc *d, pid_t pid, char *out, size_t len)
{
	static const char key[] = "OTEL_SERVICE_NAME=";
	char *buf = xmalloc(ENVIRON_MAX);
	ssize_t n = read_proc(d, pid, "environ", buf, ENVIRON_MAX);
	bool found = false;

	for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(buf + i) + 1)
		if (strncmp(buf + i, key, sizeof(key) - 1) == 0 && buf[i + sizeof(key) - 1]) {
			pm_meta_set(out, len, buf + i + sizeof(key) - 1);
			found = true;
		}
	free(buf);
	return found;
}

static bool any_str(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

static bool any_prefix(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strncmp(s, v[i], strlen(v[i])) == 0)
			return true;
	return false;
}

/* Does the process match a filter (every one when there is none)? */
static bool matches(const struct pm_disc *d, const struct pm_disc_proc *p, const char *comm,
		    const char *exe, const char *cgroup)
{
	const struct pm_disc_filter *f = &d->f;
	const char *base = strrchr(exe, '/');

	if (!f->npids && !f->ncomms && !f->nexes && !f->ncgroups)
		return true;
	for (size_t i = 0; i < f->npids; i++)
		if (f->pids[i] == p->pid)
			return true;
	return any_str(f->comms, f->ncomms, comm) || any_str(f->exes, f->nexes, exe) ||
	       (base && any_str(f->exes, f->nexes, base + 1)) ||
	       any_prefix(f->cgroups, f->ncgroups, cgroup);
}

/* Is process @p (its exe @link, @st) a Go program that matches?  Its resource into @p. */
static bool judge(struct pm_disc *d, struct pm_disc_proc *p, const char *link,
		  const struct stat *st)
{
	char exe[PM_META_PATH], comm[64], cgroup[2048];
	ssize_t n;
	pid_t pid = p->pid;
	const char *base;

	if (known_not_go(d, st)) /* nothing more to read */
		return false;
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = 0;
	if (read_proc(d, pid, "comm", comm, sizeof(comm)) < 0)
		return false;
	comm[strcspn(comm, "\n")] = 0;
	read_cgroup(d, pid, cgroup, sizeof(cgroup));
	if (!matches(d, p, comm, exe, cgroup) || !is_go(d, link, st))
		return false;
	base = strrchr(exe, '/');
	p->meta.pid = pid;
	pm_meta_set(p->meta.exe_path, sizeof(p->meta.exe_path), exe);
	pm_meta_set(p->meta.exe_name, sizeof(p->meta.exe_name), base ? base + 1 : exe);
	pm_meta_set(p->meta.comm, sizeof(p->meta.comm), comm);
	pm_meta_set(p->meta.host, sizeof(p->meta.host), d->host);
	pm_disc_container_id(cgroup, p->meta.container_id, sizeof(p->meta.container_id));
	if (!service_name(d, pid, p->meta.service, sizeof(p->meta.service)))
		pm_meta_set(p->meta.service, sizeof(p->meta.service), p->meta.exe_name);
	return true;
}

static int seen_cmp(const void *key, const void *el)
{
	pid_t x = *(const pid_t *)key, y = ((const struct seen *)el)->pid;

	return (x > y) - (x < y);
}

/*
 * Process @pid: a Go program that matches (its resource into @p), judged
 * anew or, where the last scan saw the same process, as it was; @now
 * gets what this scan saw of it.  False otherwise.
 */
static bool look_at(struct pm_disc *d, pid_t pid, pid_t self, struct pm_disc_proc *p,
		    struct seen *now)
{
	const struct seen *old;
	char link[512];
	struct stat st;
	pid_t ppid;

	memset(p, 0, sizeof(*p));
	memset(now, 0, sizeof(*now));
	p->pid = pid;
	snprintf(link, sizeof(link), "%s/%d/exe", d->root, (int)pid);
	if (pid == self || stat(link, &st) < 0) /* a kernel thread, gone, or not ours to read */
		return false;
	old = d->nseen ? bsearch(&pid, d->seen, d->nseen, sizeof(*d->seen), seen_cmp) : NULL;
	/*
	 * not a target the last time, the same executable: still not one (a
	 * stat a second for most processes).  A target's start time is read
	 * each time: a pid reused by a second run of the same program is a
	 * new process.
	 */
	if (old && !old->target && old->dev == st.st_dev && old->ino == st.st_ino) {
		*now = *old;
		return false;
	}
	if (!read_stat(d, pid, &ppid, &p->start) || ppid == self)
		return false;
	*now = (struct seen){ .pid = pid, .start = p->start, .dev = st.st_dev, .ino = st.st_ino };
	if (old && old->start == p->start && old->dev == st.st_dev && old->ino == st.st_ino) {
		now->target = old->target;
		if (old->target)
			p->meta = *old->meta;
	} else {
		now->target = judge(d, p, link, &st);
	}
	if (now->target) {
		now->meta = xmalloc(sizeof(*now->meta));
		*now->meta = p->meta;
	}
	return now->target;
}

int pm_disc_judge(struct pm_disc *d, pid_t pid, pid_t self, struct pm_disc_proc *p)
{
	char link[512];
	struct stat st;
	pid_t ppid;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	snprintf(link, sizeof(link), "%s/%d/exe", d->root, (int)pid);
	if (stat(link, &st) < 0) { /* gone, or a kernel thread (no exe) */
		snprintf(link, sizeof(link), "%s/%d", d->root, (int)pid);
		return stat(link, &st) < 0 ? -ESRCH : 0;
	}
	if (pid == self)
		return 0;
	if (known_not_go(d, &st)) /* (a host's forks of shells: no more reads) */
		return 0;
	if (!read_stat(d, pid, &ppid, &p->start) || ppid == self)
		return 0;
	return judge(d, p, link, &st) ? 1 : 0;
}

static int by_pid(const void *a, const void *b)
{
	pid_t x = ((const struct pm_disc_proc *)a)->pid, y = ((const struct pm_disc_proc *)b)->pid;

	return (x > y) - (x < y);
}

static int seen_by_pid(const void *a, const void *b)
{
	return seen_cmp(&((const struct seen *)a)->pid, b);
}

int pm_disc_scan(struct pm_disc *d, pid_t self, struct pm_disc_proc **out, size_t *n)
{
	DIR *dir = opendir(d->root);
	struct dirent *de;
	struct pm_disc_proc *v = NULL;
	struct seen *seen = NULL;
	size_t nv = 0, cap = 0, ns = 0, caps = 0;

	*out = NULL;
	*n = 0;
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid > 0x3fffffff)
			continue;
		PM_GROW(v, cap, nv + 1);
		PM_GROW(seen, caps, ns + 1);
		if (look_at(d, (pid_t)pid, self, &v[nv], &seen[ns]))
			nv++;
		if (seen[ns].pid)
			ns++;
	}
	closedir(dir);
	if (nv)
		qsort(v, nv, sizeof(*v), by_pid);
	if (ns)
		qsort(seen, ns, sizeof(*seen), seen_by_pid);
	seen_free(d->seen, d->nseen);
	d->seen = seen;
	d->nseen = ns;
	*out = v;
	*n = nv;
	return 0;
}
