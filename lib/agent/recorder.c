/*
 * recorder: the agent's recording children, per process or host-wide
 * (recorder.h).
 */
#include "agent/recorder.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/sink.h"
#include "profile/pprof.h"
#include "profile/profile.h"

#define IDLE_MS 1000 /* a recording's longest sleep: at 19 Hz its rings' watermarks wake it */

/* ---- one interval, sent ---- */

/* The interval's samples: the sum of its first value (a count where there are samples). */
static int64_t samples_of(const struct pm_profile *p)
{
	int64_t n = 0;

	for (size_t i = 0; pm_prof_nsample_types(p) && i < pm_prof_nsamples(p); i++)
		n += pm_prof_sample_at(p, i)->values[0];
	return n;
}

/* @prof (freed), an interval of @m's process, over @fd with its resource; m->seq counts it. */
static void send_interval(const struct pm_agent_cfg *cfg, int fd, struct pm_agent_meta *m,
			  struct pm_profile *prof, uint64_t start, uint64_t dur, bool last)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int64_t n = samples_of(prof);
	int rc;

	m->start_ns = start;
	m->duration_ns = dur;
	rc = pm_pprof_encode(prof, &buf, &len);
	if (rc == 0)
		rc = pm_sink_send(fd, m, buf, len);
	if (rc)
		pm_warn("agent: process %d (%s): interval %" PRIu64 " lost: %s", (int)m->pid,
			m->service, m->seq, strerror(-rc));
	else if (cfg->verbose)
		pm_info("agent: process %d (%s): interval %" PRIu64 ", %.1f s, %" PRId64 " %s, "
			"%zu bytes%s",
			(int)m->pid, m->service, m->seq, (double)dur / 1e9, n,
			pm_prof_nsample_types(prof) ? pm_prof_sample_type(prof, 0)->type : "samples", len,
			last ? " (its last)" : "");
	m->seq++;
	free(buf);
	pm_prof_free(prof);
}

/* The recording cfg->rec, with what every child of the agent sets. */
static void child_cfg(const struct pm_agent_cfg *cfg, struct pm_record_cfg *rc)
{
	*rc = cfg->rec;
	rc->argv = NULL;
	rc->pids = rc->tids = NULL;
	rc->npids = rc->ntids = 0;
	rc->quiet = true;
	rc->progress = false;
	rc->duration = 0;
	rc->stop = cfg->stop;
	rc->interval = cfg->interval;
	rc->idle_ms = IDLE_MS;
}

/* ---- per process ---- */

struct proc_ctx {
	const struct pm_agent_cfg *cfg;
	struct pm_agent_meta meta;
	int fd;
};

static void proc_interval(void *arg, struct pm_profile *prof, pid_t pid, uint64_t start,
			  uint64_t dur, bool last)
{
	struct proc_ctx *c = arg;

	(void)pid;
	send_interval(c->cfg, c->fd, &c->meta, prof, start, dur, last);
}

void pm_agent_record_proc(const struct pm_agent_cfg *cfg, const struct pm_disc_proc *p, int fd)
{
	struct pm_record_cfg rc;
	struct pm_record_result res;
	struct proc_ctx c = { .cfg = cfg, .meta = p->meta, .fd = fd };

	child_cfg(cfg, &rc);
	rc.pids = &p->pid;
	rc.npids = 1;
	rc.on_interval = proc_interval;
	rc.interval_arg = &c;
	pm_record_run(&rc, &res);
	if (res.err && cfg->verbose)
		pm_warn("agent: process %d (%s): %s", (int)p->pid, p->meta.service, res.msg);
	close(fd);
	_exit(res.err ? 1 : 0);
}

/* ---- host-wide ---- */

bool pm_agent_host_kinds(const struct pm_record_cfg *rec)
{
	return !rec->wall_hz && !rec->off_cpu && !rec->locks && !rec->alloc && !rec->inuse &&
	       rec->creators <= 0 && !rec->memprofilerate && !rec->raw;
}

/* A process judged: the verdict, and a target's resource and interval count. */
struct hproc {
	pid_t pid;
	bool judged;               /* false: judge it again at its next record (exec, SIGHUP) */
	bool target;
	uint64_t gone;             /* when its end was told (the events' clock), 0 alive */
	struct pm_agent_meta *meta; /* a target's, kept after it is none (its last interval) */
};

struct host_ctx {
	const struct pm_agent_cfg *cfg;
	struct pm_disc *disc;
	pid_t agent;
	int fd;
	struct hproc *v;
	size_t n, cap;
	struct pm_hidx idx; /* by pid */
	size_t ended;       /* processes ended since the last sweep */
};

static struct hproc *hproc_find(struct host_ctx *h, pid_t pid)
{
	uint64_t hv = pm_hash_u64((uint64_t)(uint32_t)pid);
	size_t pos = SIZE_MAX;
	long i;

	while ((i = pm_hidx_next(&h->idx, hv, &pos)) >= 0)
		if (h->v[i].pid == pid)
			return &h->v[i];
	return NULL;
}

static struct hproc *hproc_add(struct host_ctx *h, pid_t pid)
{
	PM_GROW(h->v, h->cap, h->n + 1);
	h->v[h->n] = (struct hproc){ .pid = pid };
	pm_hidx_add(&h->idx, pm_hash_u64((uint64_t)(uint32_t)pid), (uint32_t)h->n);
	return &h->v[h->n++];
}

/*
 * Forget the processes that ended: a target more than two intervals ago
 * (its last interval handed over), any other at once; the array
 * compacted, the index made again.
 */
static void hproc_sweep(struct host_ctx *h)
{
	uint64_t now = pm_now_ns(), keep = (uint64_t)(2 * h->cfg->interval * 1e9);
	size_t k = 0;

	h->ended = 0;
	for (size_t i = 0; i < h->n; i++) {
		if (h->v[i].gone && (!h->v[i].meta || now - h->v[i].gone > keep)) {
			free(h->v[i].meta);
			continue;
		}
		h->v[k++] = h->v[i];
	}
	if (k == h->n)
		return;
	h->n = k;
	pm_hidx_free(&h->idx);
	for (size_t i = 0; i < h->n; i++)
		pm_hidx_add(&h->idx, pm_hash_u64((uint64_t)(uint32_t)h->v[i].pid), (uint32_t)i);
}

/* SIGHUP: the filter file read again, every process judged anew at its next record. */
static void host_reload(struct host_ctx *h)
{
	struct pm_disc_filter f;
	char err[512];

	*h->cfg->reload = 0;
	if (!h->cfg->filter_file)
		return;
	if (pm_agent_filter_read(h->cfg->filter_file, &f, err, sizeof(err)))
		return; /* the agent said why */
	pm_disc_set_filter(h->disc, &f);
	pm_disc_filter_free(&f);
	for (size_t i = 0; i < h->n; i++)
		h->v[i].judged = false;
}

/* Judge @p now: a target keeps its interval count across verdicts. */
static void judge(struct host_ctx *h, struct hproc *p)
{
	struct pm_disc_proc d;
	bool was = p->target;

	p->judged = true;
	p->target = pm_disc_judge(h->disc, p->pid, h->agent, &d) == 1;
	if (!p->target)
		return;
	d.meta.seq = p->meta ? p->meta->seq : 0;
	if (!p->meta)
		p->meta = xmalloc(sizeof(*p->meta));
	*p->meta = d.meta;
	if (!was && h->cfg->verbose)
		pm_info("agent: recording process %d (%s, %s)", (int)p->pid, p->meta->service,
			p->meta->exe_path);
}

static bool host_want(void *arg, pid_t pid)
{
	struct host_ctx *h = arg;
	struct hproc *p;

	if (h->cfg->reload && *h->cfg->reload)
		host_reload(h);
	p = hproc_find(h, pid);
	if (!p)
		p = hproc_add(h, pid);
	if (!p->judged) /* new, exec'd, ended (a record after the end, or a pid given again) */
		judge(h, p);
	if (p->target)
		p->gone = 0;
	return p->target;
}

static void host_news(void *arg, pid_t pid, bool exited)
{
	struct host_ctx *h = arg;
	struct hproc *p = hproc_find(h, pid);

	if (!p)
		return;
	p->judged = false;
	if (!exited)
		return;
	p->gone = pm_now_ns();
	/* a host whose processes come and go, none a target: no interval sweeps */
	if (++h->ended > 256 && h->ended > h->n / 2)
		hproc_sweep(h);
}

static void host_interval(void *arg, struct pm_profile *prof, pid_t pid, uint64_t start,
			  uint64_t dur, bool last)
{
	struct host_ctx *h = arg;
	struct hproc *p = hproc_find(h, pid);

	if (!p || !p->meta) { /* not judged a target: cannot be (its records were dropped) */
		pm_prof_free(prof);
		return;
	}
	send_interval(h->cfg, h->fd, p->meta, prof, start, dur, last || p->gone);
	hproc_sweep(h);
}

void pm_agent_record_host(const struct pm_agent_cfg *cfg, pid_t agent, int fd)
{
	struct pm_record_cfg rc;
	struct pm_record_result res;
	struct host_ctx h = { .cfg = cfg, .agent = agent, .fd = fd };
	struct pm_disc_filter f;
	char err[512];

	h.disc = pm_disc_new("/proc");
	if (cfg->filter_file && pm_agent_filter_read(cfg->filter_file, &f, err, sizeof(err)) == 0) {
		pm_disc_set_filter(h.disc, &f);
		pm_disc_filter_free(&f);
	} else {
		pm_disc_set_filter(h.disc, &cfg->filter);
	}
	child_cfg(cfg, &rc);
	rc.host = true;
	rc.want = host_want;
	rc.proc_news = host_news;
	rc.want_arg = &h;
	rc.on_interval = host_interval;
	rc.interval_arg = &h;
	pm_record_run(&rc, &res);
	if (res.err)
		pm_warn("agent: the host-wide recording: %s", res.msg);
	close(fd);
	_exit(res.err ? 1 : 0);
}
