/*
 * agent: the supervisor of `pmuprof agent` (agent.h): finds the Go
 * processes, starts a recording child for each, reads their intervals
 * from their pipes into the spool, which the push thread empties; at the
 * end stops them in order (the recordings' last intervals read, then the
 * pushes' last pass).
 */
#include "agent/agent.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/otlp.h"
#include "agent/push.h"
#include "agent/recorder.h"
#include "agent/sink.h"
#include "agent/spool.h"
#include "base/util.h"
#include "profile/pprof.h"
#include "profile/profile.h"

#define TICK_MS 500 /* the loop's longest sleep: a signal (stop, SIGHUP) ends it at once */
#define HOST_TICK_MS 2000 /* ... host-wide (no scans): a child's pipe or a signal wakes it */
#define RESTART_MAX_S 60 /* a host-wide recording that failed: started again after 1, 2, 4 .. s */
#define STOP_WAIT_NS 15000000000ULL /* the recorders' last intervals, at most */
#define FLUSH_MS 20000 /* the pushes' last pass at the stop, at most */

/* A recording child: its target, by pid and start time (0: the host-wide one). */
struct kid {
	pid_t kid, target;
	uint64_t start;
	struct pm_agent_meta meta;
	bool stopping, exited;
	int status;
	struct pm_sink_rx *rx; /* its intervals; NULL once the pipe ended */
};

struct agent {
	const struct pm_agent_cfg *cfg;
	struct pm_disc *disc;
	struct kid *kids;
	size_t nkids, capkids;
	/* targets given up on (their recording failed): not started again */
	struct pm_disc_proc *failed;
	size_t nfailed, capfailed;
	/* host-wide (recorder.h): one child for every target; when to start it again */
	bool host;
	uint64_t host_at;
	unsigned host_fails;
	struct pm_spool *spool;
	struct pm_push *push;
	unsigned nbackends;
	const char *names[3]; /* the backends', in the spool's order */
	uint64_t started, intervals, corrupt;
};

/* ---- filters ---- */

static void push_str(char ***v, size_t *n, const char *s)
{
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[(*n)++] = xstrdup(s);
}

/* One line "KIND VALUE" of a filter file into @f; -EINVAL when it is none. */
static int filter_line(char *line, struct pm_disc_filter *f)
{
	char *val = line + strcspn(line, " \t");
	char *end;

	if (*val)
		*val++ = 0;
	val += strspn(val, " \t");
	val[strcspn(val, "\r")] = 0;
	if (!*val)
		return -EINVAL;
	if (strcmp(line, "pid") == 0) {
		long pid = strtol(val, &end, 10);

		if (*end || pid <= 0 || pid > 0x3fffffff)
			return -EINVAL;
		f->pids = xrealloc((void *)f->pids, (f->npids + 1) * sizeof(*f->pids));
		((pid_t *)f->pids)[f->npids++] = (pid_t)pid;
	} else if (strcmp(line, "comm") == 0) {
		push_str((char ***)&f->comms, &f->ncomms, val);
	} else if (strcmp(line, "exe") == 0) {
		push_str((char ***)&f->exes, &f->nexes, val);
	} else if (strcmp(line, "cgroup") == 0) {
		push_str((char ***)&f->cgroups, &f->ncgroups, val);
	} else {
		return -EINVAL;
	}
	return 0;
}

int pm_agent_filter_parse(const char *text, size_t len, struct pm_disc_filter *f, char *err,
			  size_t errlen)
{
	char *buf = xstrndup(text, len), *line, *save = NULL;
	unsigned lineno = 0;
	int rc = 0;

	memset(f, 0, sizeof(*f));
	for (line = strtok_r(buf, "\n", &save); line && !rc; line = strtok_r(NULL, "\n", &save)) {
		char *p = line + strspn(line, " \t");

		lineno++;
		if (!*p || *p == '#' || *p == '\r')
			continue;
		rc = filter_line(p, f);
		if (rc)
			pm_seterr(err, errlen, "line %u: not 'pid N', 'comm NAME', 'exe PATH' or "
					       "'cgroup PREFIX'", lineno);
	}
	free(buf);
	if (rc)
		pm_disc_filter_free(f);
	return rc;
}

int pm_agent_filter_read(const char *path, struct pm_disc_filter *f, char *err, size_t errlen)
{
	char buf[65536], line[256];
	FILE *fp = fopen(path, "re");
	size_t n;
	int rc;

	memset(f, 0, sizeof(*f));
	if (!fp) {
		pm_seterr(err, errlen, "cannot read filter file '%s': %s", path, strerror(errno));
		return -1;
	}
	n = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	if (n == sizeof(buf)) {
		pm_seterr(err, errlen, "filter file '%s': over 64 KiB", path);
		return -1;
	}
	rc = pm_agent_filter_parse(buf, n, f, line, sizeof(line));
	if (rc)
		pm_seterr(err, errlen, "filter file '%s': %s", path, line);
	return rc ? -1 : 0;
}

/* ---- the supervisor ---- */

static bool known(const struct agent *a, const struct pm_disc_proc *p)
{
	for (size_t i = 0; i < a->nkids; i++)
		if (a->kids[i].target == p->pid && a->kids[i].start == p->start)
			return true;
	for (size_t i = 0; i < a->nfailed; i++)
		if (a->failed[i].pid == p->pid && a->failed[i].start == p->start)
			return true;
	return false;
}

/* A recording child for @p, or (NULL) the host-wide one. */
static void start_recorder(struct agent *a, const struct pm_disc_proc *p)
{
	pid_t self = getpid(), kid;
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) < 0) {
		pm_warn("agent: process %d: cannot make a pipe: %s", p ? (int)p->pid : 0,
			strerror(errno));
		return;
	}
	pm_push_fork_begin(a->push);
	kid = fork();
	if (kid == 0) {
		/* (the other children's pipes are close-on-exec, but there is no exec: closed here) */
		for (size_t i = 0; i < a->nkids; i++)
			if (a->kids[i].rx)
				close(pm_sink_rx_fd(a->kids[i].rx));
		close(fds[0]);
		if (!p)
			pm_agent_record_host(a->cfg, self, fds[1]);
		pm_agent_record_proc(a->cfg, p, fds[1]);
	}
	pm_push_fork_end(a->push);
	close(fds[1]);
	if (kid < 0) {
		close(fds[0]);
		pm_warn("agent: cannot fork: %s", strerror(errno));
		return;
	}
	PM_GROW(a->kids, a->capkids, a->nkids + 1);
	a->kids[a->nkids++] = (struct kid){ .kid = kid, .target = p ? p->pid : 0,
					     .start = p ? p->start : 0,
					     .meta = p ? p->meta : (struct pm_agent_meta){ 0 },
					     .rx = pm_sink_rx_new(fds[0]) };
	if (p && a->cfg->verbose)
		pm_info("agent: recording process %d (%s, %s)", (int)p->pid, p->meta.service,
			p->meta.exe_path);
}

/* Is @k's target among the @n processes that match now? */
static bool still_wanted(const struct kid *k, const struct pm_disc_proc *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == k->target && v[i].start == k->start)
			return true;
	return false;
}

/* /proc looked at: new processes recorded; those no longer matching (SIGHUP) stopped. */
static void scan(struct agent *a, bool drop_unmatched)
{
	struct pm_disc_proc *v;
	size_t n;

	if (pm_disc_scan(a->disc, getpid(), &v, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (!known(a, &v[i]))
			start_recorder(a, &v[i]);
	for (size_t i = 0; drop_unmatched && i < a->nkids; i++)
		if (!a->kids[i].stopping && !still_wanted(&a->kids[i], v, n)) {
			kill(a->kids[i].kid, SIGTERM);
			a->kids[i].stopping = true;
		}
	free(v);
}

/* A kid done: exited and its pipe read to the end.  Forgotten (a failure's target remembered). */
static void forget(struct agent *a, size_t i)
{
	struct kid *k = &a->kids[i];
	bool ok = WIFEXITED(k->status) && WEXITSTATUS(k->status) == 0;

	if (!k->target) { /* the host-wide one: started again, later after each failure */
		uint64_t wait_s;

		a->host_fails = ok || k->stopping ? 0 : a->host_fails + 1;
		wait_s = PM_MIN(1ULL << PM_MIN(a->host_fails, 6u), (unsigned long long)RESTART_MAX_S);
		a->host_at = pm_now_ns() + wait_s * 1000000000ULL;
		if (!ok && !k->stopping)
			pm_warn("agent: the host-wide recording failed; started again in %" PRIu64 " s",
				wait_s);
		*k = a->kids[--a->nkids];
		return;
	}
	if (!ok && !k->stopping) { /* its recording failed: not tried again */
		PM_GROW(a->failed, a->capfailed, a->nfailed + 1);
		a->failed[a->nfailed++] = (struct pm_disc_proc){ .pid = k->target, .start = k->start };
	}
	if (a->cfg->verbose)
		pm_info("agent: process %d (%s): recording ended%s", (int)k->target, k->meta.service,
			ok ? "" : " (failed)");
	*k = a->kids[--a->nkids];
}

/* Children that exited: marked; those whose pipes ended too, forgotten. */
static void reap(struct agent *a)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		for (size_t i = 0; i < a->nkids; i++)
			if (a->kids[i].kid == pid) {
				a->kids[i].exited = true;
				a->kids[i].status = status;
			}
	for (size_t i = a->nkids; i-- > 0;)
		if (a->kids[i].exited && !a->kids[i].rx)
			forget(a, i);
}

/* A child's interval, complete: into the spool, and the pushes told. */
static void on_frame(void *arg, const struct pm_agent_meta *m, const uint8_t *pprof, size_t len)
{
	struct agent *a = arg;
	char err[256];

	if (pm_spool_put(a->spool, m, pprof, len, err, sizeof(err)))
		pm_warn("agent: process %d (%s): interval %" PRIu64 " not spooled: %s", (int)m->pid,
			m->service, m->seq, err);
	else
		a->intervals++;
	if (a->push)
		pm_push_kick(a->push);
}

/* Wait at most @ms for the children's pipes, and read what they hold. */
static void read_pipes(struct agent *a, int ms)
{
	struct pollfd *pfd = xcalloc(a->nkids ? a->nkids : 1, sizeof(*pfd));
	size_t n = 0;

	for (size_t i = 0; i < a->nkids; i++)
		if (a->kids[i].rx)
			pfd[n++] = (struct pollfd){ .fd = pm_sink_rx_fd(a->kids[i].rx), .events = POLLIN };
	if (poll(pfd, n, ms) > 0)
		for (size_t i = 0; i < a->nkids; i++) {
			struct kid *k = &a->kids[i];
			bool corrupt = false;

			if (!k->rx || pm_sink_rx_read(k->rx, on_frame, a, &corrupt))
				continue;
			if (corrupt) {
				a->corrupt++;
				pm_warn("agent: process %d (%s): its recording sent a corrupt interval: "
					"stopped", (int)k->target, k->meta.service);
				kill(k->kid, SIGKILL);
			}
			pm_sink_rx_free(k->rx);
			k->rx = NULL;
		}
	free(pfd);
}

/* SIGHUP: the filter file read again; the options' filters stay when it fails. */
static void reload(struct agent *a)
{
	struct pm_disc_filter f;
	char err[512];

	if (!a->cfg->filter_file)
		return;
	if (pm_agent_filter_read(a->cfg->filter_file, &f, err, sizeof(err))) {
		pm_warn("agent: %s; the filters stay as they were", err);
		return;
	}
	pm_disc_set_filter(a->disc, &f);
	pm_disc_filter_free(&f);
	if (a->cfg->verbose)
		pm_info("agent: filters read again from %s", a->cfg->filter_file);
	if (!a->host) {
		scan(a, true);
		return;
	}
	for (size_t i = 0; i < a->nkids; i++) /* the host-wide recording reads them itself */
		kill(a->kids[i].kid, SIGHUP);
}

/* Stop every recording: its last interval read, at most STOP_WAIT_NS; then killed. */
static void stop_recorders(struct agent *a)
{
	uint64_t t0 = pm_now_ns();

	for (size_t i = 0; i < a->nkids; i++) {
		kill(a->kids[i].kid, SIGTERM);
		a->kids[i].stopping = true;
	}
	while (a->nkids && pm_now_ns() - t0 < STOP_WAIT_NS) {
		read_pipes(a, 20);
		reap(a);
	}
	for (size_t i = 0; i < a->nkids; i++)
		kill(a->kids[i].kid, SIGKILL);
	while (a->nkids) {
		read_pipes(a, 20);
		reap(a);
	}
}

/* push.h's encoder of the OTLP backend: one interval, one request. */
static int otlp_encode(const struct pm_agent_meta *m, const uint8_t *pprof, size_t len,
		       uint8_t **body, size_t *blen, char *err, size_t errlen)
{
	struct pm_otlp_item it = { .pprof = pprof, .len = len, .meta = m };

	return pm_otlp_request(&it, 1, body, blen, err, errlen);
}

/* The backends the options name, in the spool's order. */
static unsigned backends(const struct pm_agent_cfg *cfg, struct pm_push_backend *b,
			 const char **names)
{
	unsigned n = 0;

	if (cfg->otlp)
		b[n++] = (struct pm_push_backend){ .kind = PM_PUSH_OTLP, .target = cfg->otlp,
						   .answer = pm_otlp_rejected,
						   .encode = otlp_encode };
	if (cfg->pyroscope)
		b[n++] = (struct pm_push_backend){ .kind = PM_PUSH_PYROSCOPE, .target = cfg->pyroscope };
	if (cfg->dir)
		b[n++] = (struct pm_push_backend){ .kind = PM_PUSH_DIR, .target = cfg->dir,
						   .dir_max = cfg->dir_max };
	for (unsigned i = 0; i < n; i++)
		names[i] = pm_push_name(b[i].kind);
	return n;
}

/*
 * The pushes' timings: push.h's defaults, but for $PMUPROF_PUSH_BACKOFF_CAP_MS
 * (the longest wait between retries; the tests' outages are shorter than
 * an hour).
 */
static const struct pm_push_opts *push_opts(struct pm_push_opts *o)
{
	const char *cap = getenv("PMUPROF_PUSH_BACKOFF_CAP_MS");
	char *end;
	unsigned long v;

	memset(o, 0, sizeof(*o));
	if (!cap || !*cap)
		return NULL;
	v = strtoul(cap, &end, 10);
	if (*end || v == 0 || v > 3600000) {
		pm_warn("agent: PMUPROF_PUSH_BACKOFF_CAP_MS='%s' is no number of ms (1..3600000): "
			"ignored", cap);
		return NULL;
	}
	o->backoff_cap_ms = (unsigned)v;
	return o;
}

/* The spool opened (resumed), the pushes started. */
static int open_backends(struct agent *a, char *err, size_t errlen)
{
	const struct pm_agent_cfg *cfg = a->cfg;
	struct pm_push_backend b[3];
	char dir[4096];
	const char *spool = cfg->spool ? cfg->spool : pm_spool_default_dir(dir, sizeof(dir));
	struct pm_spool_stats st;
	struct pm_push_opts o;

	a->nbackends = backends(cfg, b, a->names);
	if (pm_spool_open(&a->spool, spool, cfg->spool_max, a->names, a->nbackends, err, errlen))
		return -1;
	pm_spool_get_stats(a->spool, &st);
	if (st.resumed || st.torn || st.bad)
		pm_info("agent: spool %s: %" PRIu64 " intervals resumed, %" PRIu64 " torn and %" PRIu64
			" unreadable removed", spool, st.resumed, st.torn, st.bad);
	if (pm_push_new(&a->push, a->spool, b, a->nbackends, push_opts(&o), err, errlen) ||
	    pm_push_start(a->push)) {
		if (!*err)
			pm_seterr(err, errlen, "cannot start the pushes");
		return -1;
	}
	return 0;
}

/* The figures at the end: one line, and one per backend. */
static void summary(const struct agent *a)
{
	struct pm_spool_stats st;

	pm_spool_get_stats(a->spool, &st);
	pm_info("agent: %" PRIu64 " intervals; %" PRIu64 " left in the spool, %" PRIu64
		" dropped by its bound%s",
		a->intervals, st.pending, st.dropped, a->corrupt ? "; corrupt intervals" : "");
	for (unsigned i = 0; i < a->nbackends; i++) {
		struct pm_push_stats ps;

		pm_push_get_stats(a->push, i, &ps);
		pm_info("agent: %s: %" PRIu64 " intervals pushed, %" PRIu64 " refused, %" PRIu64
			" retries%s", a->names[i], ps.sent, ps.dropped, ps.retries,
			ps.rejected ? "; some profiles rejected by the backend (said above)" : "");
	}
}

static int setup(struct agent *a, const struct pm_agent_cfg *cfg, char *err, size_t errlen)
{
	struct pm_disc_filter f = { 0 };

	memset(a, 0, sizeof(*a));
	a->cfg = cfg;
	if (cfg->filter_file && pm_agent_filter_read(cfg->filter_file, &f, err, errlen))
		return -1;
	if (open_backends(a, err, errlen)) {
		pm_disc_filter_free(&f);
		return -1;
	}
	a->disc = pm_disc_new("/proc");
	if (cfg->filter_file) {
		pm_disc_set_filter(a->disc, &f);
		pm_disc_filter_free(&f);
	} else {
		pm_disc_set_filter(a->disc, &cfg->filter);
	}
	a->started = pm_now_ns();
	a->host = !cfg->per_process && pm_agent_host_kinds(&cfg->rec);
	return 0;
}

static void teardown(struct agent *a)
{
	if (a->push)
		pm_push_stop(a->push, FLUSH_MS);
	if (a->spool && a->push && a->cfg->verbose >= 0)
		summary(a);
	pm_push_free(a->push);
	pm_spool_close(a->spool);
	pm_disc_free(a->disc);
	free(a->kids);
	free(a->failed);
}

int pm_agent_run(const struct pm_agent_cfg *cfg, char *err, size_t errlen)
{
	struct agent a;
	uint64_t last_scan = 0, scan_ns = (uint64_t)((cfg->scan > 0 ? cfg->scan : 1.0) * 1e9);

	if (setup(&a, cfg, err, errlen)) {
		teardown(&a);
		return -1;
	}
	while (!(cfg->stop && *cfg->stop)) {
		uint64_t now = pm_now_ns(), next;

		if (cfg->duration > 0 && (double)(now - a.started) / 1e9 >= cfg->duration)
			break;
		reap(&a);
		if (cfg->reload && *cfg->reload) {
			*cfg->reload = 0;
			reload(&a);
		}
		if (a.host && !a.nkids && now >= a.host_at)
			start_recorder(&a, NULL);
		if (!a.host && now - last_scan >= scan_ns) {
			scan(&a, false);
			last_scan = now;
		}
		/* (host-wide: no scans, the recording judges each process itself) */
		next = a.host ? (a.nkids ? now + HOST_TICK_MS * 1000000ULL : a.host_at)
			      : PM_MIN(last_scan + scan_ns, now + TICK_MS * 1000000ULL);
		if (cfg->duration > 0)
			next = PM_MIN(next, a.started + (uint64_t)(cfg->duration * 1e9));
		now = pm_now_ns();
		read_pipes(&a, (int)((next > now ? next - now : 0) / 1000000 + 1));
	}
	stop_recorders(&a);
	teardown(&a);
	return 0;
}
