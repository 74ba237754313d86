/*
 * attach (the session's side, attach.h): the session's events as the
 * event set of perf/attach.c, and what it reports turned into the
 * session's.
 */
#include "session/attach.h"

#include <string.h>

#include "capture/datafile.h"
#include "events/events.h"
#include "session/capture.h"
#include "session/source.h"

/* The error of a call of perf/attach.c that failed, into s->res where it said one; @rc. */
static int took(struct session *s, int rc)
{
	const char *msg = pm_attach_error(s->att);

	if (rc < 0 && msg[0])
		pm_ses_err(s->res, pm_attach_error_usage(s->att) ? PM_REC_USAGE : PM_REC_ERR, "%s",
			   msg);
	return rc;
}

/* The source's own needs of its event's attr. */
static void adjust_attr(void *arg, size_t e, struct perf_event_attr *a)
{
	pm_src_adjust_attr(arg, e, a);
}

/*
 * An event id: whose it is, where there are several events (feed()'s
 * event_of(); the capture writes them at its start).  A CPU-wide event's
 * fds are opened again during the recording: a capture started gets the
 * new id before its samples.
 */
static void on_id(void *arg, uint64_t id, size_t e, bool cpuwide)
{
	struct session *s = arg;

	if (!cpuwide && s->nev <= 1)
		return;
	pm_idtab_put(&s->ev_of, id, (int32_t)e);
	if (cpuwide && s->cap)
		pm_cap_check(s, pm_data_write_evid(s->cap, id, (uint32_t)e));
}

/* The session's events as an event set (@flags: room for s->nev). */
static void evset_of(struct session *s, struct pm_evset *set, uint8_t *flags)
{
	const struct pm_record_cfg *cfg = s->cfg;

	for (size_t e = 0; e < s->nev; e++) {
		const struct pm_source *src = pm_sources[s->src[e]];

		flags[e] = (uint8_t)((s->cpuwide[e] ? PM_EVSET_CPUWIDE : 0) |
				     (src->unrated ? PM_EVSET_UNRATED : 0) |
				     (src->raw ? PM_EVSET_RAW : 0) |
				     (src->ordered ? PM_EVSET_ORDERED : 0));
	}
	memset(set, 0, sizeof(*set));
	set->spec = s->spec;
	set->attr = s->attr;
	set->flags = flags;
	set->n = s->nev;
	set->freq = cfg->freq;
	set->period = cfg->period;
	set->default_freq = PM_RECORD_DEFAULT_FREQ;
	set->stack_size = cfg->stack_size;
	set->kernel = cfg->kernel;
	set->no_callchain = cfg->no_callchain;
	set->arg = s;
	set->adjust_attr = adjust_attr;
	set->id = on_id;
}

int pm_att_check_targets(struct session *s)
{
	const struct pm_record_cfg *cfg = s->cfg;
	struct pm_attach_targets t = {
		.pids = cfg->pids,
		.npids = cfg->npids,
		.tids = cfg->tids,
		.ntids = cfg->ntids,
	};

	return took(s, pm_attach_check_targets(s->att, &t));
}

int pm_att_resolve_hardware(struct session *s)
{
	return took(s, pm_attach_resolve_hardware(s->att, s->spec, &s->nev, s->cfg->strict));
}

void pm_att_resolve_kernel(struct session *s)
{
	pm_attach_resolve_kernel(s->att, s->spec, s->nev, s->cfg->kernel);
}

/* The events open on every CPU, for one process (@pid) or, -1, every process. */
int pm_att_open_events(struct session *s, pid_t pid)
{
	uint8_t flags[PM_SES_EVT_MAX];
	struct pm_evset set;
	int rc;

	evset_of(s, &set, flags);
	rc = took(s, pid < 0 ? pm_attach_open_host(s->att, &set)
			     : pm_attach_open_events(s->att, &set, pid));
	if (rc)
		return rc;
	pm_ses_layout(s);
	pm_attach_warn_refused(s->att);
	return 0;
}

int pm_att_attach_all(struct session *s)
{
	uint8_t flags[PM_SES_EVT_MAX];
	struct pm_evset set;
	int rc;

	evset_of(s, &set, flags);
	rc = took(s, pm_attach_all(s->att, &set));
	s->res->threads = pm_attach_threads(s->att);
	if (rc)
		return rc;
	s->res->attach_ms = pm_attach_ms(s->att);
	s->res->events = pm_attach_nevents(s->att);
	pm_ses_layout(s);
	/*
	 * The address space after enabling: a mapping made in between is in
	 * both this snapshot and an MMAP2 record, which pm_maps ignores twice.
	 */
	for (size_t i = 0; i < pm_attach_nprocs(s->att); i++)
		pm_cap_check(s, pm_reg_load_maps(s->reg, pm_attach_pid(s->att, i), s->cap));
	pm_attach_warn_refused(s->att);
	return 0;
}

void pm_att_lost_end(struct session *s)
{
	uint64_t n;

	if (!pm_attach_lost(s->att, &n))
		pm_ses_lost_end(s, 0, true);
	else if (n > s->lost_said)
		pm_ses_lost_end(s, n - s->lost_said, false);
}

void pm_att_close(struct session *s)
{
	pm_attach_close(s->att);
	for (size_t i = 0; i < s->nev; i++) /* events: once nothing uses them */
		pm_evt_uprobe_undefine(&s->spec[i]);
}

size_t pm_att_nprocs(const struct session *s)
{
	return pm_attach_nprocs(s->att);
}

pid_t pm_att_pid(const struct session *s, size_t i)
{
	return pm_attach_pid(s->att, i);
}

int pm_att_cpuwide(struct session *s, size_t e, bool on)
{
	return took(s, pm_attach_cpuwide(s->att, e, on));
}

uint64_t pm_att_cpuwide_hits(const struct session *s, size_t e)
{
	return pm_attach_cpuwide_hits(s->att, e);
}

bool pm_att_accept(struct session *s, uint64_t id, uint32_t tid)
{
	return pm_attach_accept(s->att, id, tid);
}

bool pm_att_thread_born(struct session *s, uint64_t id, uint32_t tid)
{
	return pm_attach_thread_born(s->att, id, tid);
}

void pm_att_thread_gone(struct session *s, uint64_t id, uint32_t tid)
{
	pm_attach_thread_gone(s->att, id, tid);
}
