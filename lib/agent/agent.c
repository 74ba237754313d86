/*
 * agent: the supervisor of `pmuprof agent` (agent.h): finds the Go
 * processes, starts a recording child for each, a sender child for the
 * spool, and at the end stops them in order (the recorders flush their
 * last interval into the spool, then the sender pushes what it can).
 */
#include "agent/agent.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/sink.h"
#include "base/util.h"
#include "profile/pprof.h"
#include "profile/profile.h"

#define TICK_MS 100
#define IDLE_MS 1000 /* a recording's longest sleep: at 19 Hz its rings' watermarks wake it */
#define STOP_WAIT_NS 15000000000ULL /* the recorders' last intervals, at most */
#define SENDER_WAIT_NS 20000000000ULL /* the sender's last pass, at most */

/* A recording child: its target, by pid and start time. */
struct kid {
	pid_t kid, target;
	uint64_t start;
	struct pm_agent_meta meta;
	bool stopping;
};

struct agent {
	const struct pm_agent_cfg *cfg;
	struct pm_disc *disc;
	struct kid *kids;
	size_t nkids, capkids;
	/* targets given up on (their recording failed): not started again */
	struct pm_disc_proc *failed;
	size_t nfailed, capfailed;
	pid_t sender;
	uint64_t started, intervals_seen;
};

/* ---- filters ---- */

void pm_agent_filter_free(struct pm_disc_filter *f)
{
	for (size_t i = 0; i < f->ncomms; i++)
		free(f->comms[i]);
	for (size_t i = 0; i < f->nexes; i++)
		free(f->exes[i]);
	for (size_t i = 0; i < f->ncgroups; i++)
		free(f->cgroups[i]);
	free((void *)f->pids);
	free((void *)f->comms);
	free((void *)f->exes);
	free((void *)f->cgroups);
	memset(f, 0, sizeof(*f));
}

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
		pm_agent_filter_free(f);
	return rc;
}

static int read_filter_file(const char *path, struct pm_disc_filter *f, char *err, size_t errlen)
{
	char buf[65536], line[256];
	FILE *fp = fopen(path, "re");
	size_t n;
	int rc;

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

/* ---- a recording child ---- */

struct rec_ctx {
	const struct pm_agent_cfg *cfg;
	struct pm_agent_meta meta;
	struct pm_sink *sink;
};

/* The interval's samples: the sum of its first value (a count where there are samples). */
static int64_t samples_of(const struct pm_profile *p)
{
	int64_t n = 0;

	for (size_t i = 0; pm_prof_nsample_types(p) && i < pm_prof_nsamples(p); i++)
		n += pm_prof_sample_at(p, i)->values[0];
	return n;
}

/* An interval of the child's target: into the spool, with its resource. */
static void on_interval(void *arg, struct pm_profile *prof, uint64_t start, uint64_t dur,
			bool last)
{
	struct rec_ctx *c = arg;
	uint8_t *buf = NULL;
	size_t len = 0;
	int64_t n = samples_of(prof);
	char err[256];
	int rc;

	c->meta.start_ns = start;
	c->meta.duration_ns = dur;
	rc = pm_pprof_encode(prof, &buf, &len);
	if (rc == 0)
		rc = pm_sink_put(c->sink, &c->meta, buf, len, err, sizeof(err));
	else
		pm_seterr(err, sizeof(err), "%s", strerror(-rc));
	if (rc)
		pm_warn("agent: process %d (%s): interval %" PRIu64 " lost: %s", (int)c->meta.pid,
			c->meta.service, c->meta.seq, err);
	else if (c->cfg->verbose)
		pm_info("agent: process %d (%s): interval %" PRIu64 ", %.1f s, %" PRId64 " %s, "
			"%zu bytes spooled%s",
			(int)c->meta.pid, c->meta.service, c->meta.seq, (double)dur / 1e9, n,
			pm_prof_nsample_types(prof) ? pm_prof_sample_type(prof, 0)->type : "samples", len,
			last ? " (its last)" : "");
	c->meta.seq++;
	free(buf);
	pm_prof_free(prof);
}

/* The child's life: record its target, interval by interval, until stopped or it exits. */
static PM_NORETURN void recorder_main(const struct pm_agent_cfg *cfg, const struct pm_disc_proc *p)
{
	struct pm_record_cfg rc = cfg->rec;
	struct pm_record_result res;
	struct rec_ctx c = { .cfg = cfg, .meta = p->meta };
	char err[256];

	c.sink = pm_sink_open_put(cfg, err, sizeof(err));
	if (!c.sink) {
		pm_error("agent: process %d: %s", (int)p->pid, err);
		_exit(1);
	}
	rc.pids = &p->pid;
	rc.npids = 1;
	rc.tids = NULL;
	rc.ntids = 0;
	rc.argv = NULL;
	rc.quiet = true;
	rc.progress = false;
	rc.duration = 0;
	rc.stop = cfg->stop;
	rc.interval = cfg->interval;
	rc.idle_ms = IDLE_MS;
	rc.on_interval = on_interval;
	rc.interval_arg = &c;
	pm_record_run(&rc, &res);
	if (res.err && cfg->verbose)
		pm_warn("agent: process %d (%s): %s", (int)p->pid, p->meta.service, res.msg);
	pm_sink_close(c.sink);
	_exit(res.err ? 1 : 0);
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

static void start_recorder(struct agent *a, const struct pm_disc_proc *p)
{
	pid_t kid = fork();

	if (kid == 0)
		recorder_main(a->cfg, p);
	if (kid < 0) {
		pm_warn("agent: process %d: cannot fork: %s", (int)p->pid, strerror(errno));
		return;
	}
	PM_GROW(a->kids, a->capkids, a->nkids + 1);
	a->kids[a->nkids++] = (struct kid){ .kid = kid, .target = p->pid, .start = p->start,
					     .meta = p->meta };
	if (a->cfg->verbose)
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

/* Children that ended: forgotten (a failed recording's target remembered, not retried). */
static void reap(struct agent *a)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == a->sender) {
			a->sender = 0;
			continue;
		}
		for (size_t i = 0; i < a->nkids; i++) {
			struct kid *k = &a->kids[i];

			if (k->kid != pid)
				continue;
			if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) && !k->stopping) {
				PM_GROW(a->failed, a->capfailed, a->nfailed + 1);
				a->failed[a->nfailed++] = (struct pm_disc_proc){ .pid = k->target,
										  .start = k->start };
			}
			if (a->cfg->verbose)
				pm_info("agent: process %d (%s): recording ended", (int)k->target,
					k->meta.service);
			*k = a->kids[--a->nkids];
			break;
		}
	}
}

static void start_sender(struct agent *a)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(pm_sink_sender_main(a->cfg) ? 1 : 0);
	if (pid < 0)
		pm_warn("agent: cannot fork the sender: %s", strerror(errno));
	a->sender = pid > 0 ? pid : 0;
}

/* SIGHUP: the filter file read again; the options' filters stay when it fails. */
static void reload(struct agent *a)
{
	struct pm_disc_filter f;
	char err[512];

	if (!a->cfg->filter_file)
		return;
	if (read_filter_file(a->cfg->filter_file, &f, err, sizeof(err))) {
		pm_warn("agent: %s; the filters stay as they were", err);
		return;
	}
	pm_disc_set_filter(a->disc, &f);
	pm_agent_filter_free(&f);
	if (a->cfg->verbose)
		pm_info("agent: filters read again from %s", a->cfg->filter_file);
	scan(a, true);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Signal the children in @which, and wait for them, at most @wait_ns. */
static void stop_children(struct agent *a, bool recorders, uint64_t wait_ns)
{
	uint64_t t0 = pm_now_ns();

	if (recorders)
		for (size_t i = 0; i < a->nkids; i++)
			kill(a->kids[i].kid, SIGTERM);
	else if (a->sender)
		kill(a->sender, SIGTERM);
	while ((recorders ? a->nkids > 0 : a->sender > 0) && pm_now_ns() - t0 < wait_ns) {
		sleep_ms(20);
		reap(a);
	}
	if (recorders)
		for (size_t i = 0; i < a->nkids; i++)
			kill(a->kids[i].kid, SIGKILL);
	else if (a->sender)
		kill(a->sender, SIGKILL);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static int setup(struct agent *a, const struct pm_agent_cfg *cfg, char *err, size_t errlen)
{
	struct pm_disc_filter f;

	memset(a, 0, sizeof(*a));
	a->cfg = cfg;
	if (pm_sink_check(cfg, err, errlen))
		return -1;
	a->disc = pm_disc_new("/proc");
	if (cfg->filter_file) {
		if (read_filter_file(cfg->filter_file, &f, err, errlen)) {
			pm_disc_free(a->disc);
			return -1;
		}
		pm_disc_set_filter(a->disc, &f);
		pm_agent_filter_free(&f);
	} else {
		pm_disc_set_filter(a->disc, &cfg->filter);
	}
	a->started = pm_now_ns();
	return 0;
}

int pm_agent_run(const struct pm_agent_cfg *cfg, char *err, size_t errlen)
{
	struct agent a;
	uint64_t last_scan = 0, scan_ns = (uint64_t)((cfg->scan > 0 ? cfg->scan : 1.0) * 1e9);

	if (setup(&a, cfg, err, errlen))
		return -1;
	start_sender(&a);
	while (!(cfg->stop && *cfg->stop)) {
		uint64_t now = pm_now_ns();

		if (cfg->duration > 0 && (double)(now - a.started) / 1e9 >= cfg->duration)
			break;
		reap(&a);
		if (cfg->reload && *cfg->reload) {
			*cfg->reload = 0;
			reload(&a);
		}
		if (now - last_scan >= scan_ns) {
			scan(&a, false);
			last_scan = now;
		}
		if (!a.sender)
			start_sender(&a);
		sleep_ms(TICK_MS);
	}
	stop_children(&a, true, STOP_WAIT_NS);
	stop_children(&a, false, SENDER_WAIT_NS);
	pm_disc_free(a.disc);
	free(a.kids);
	free(a.failed);
	return 0;
}
