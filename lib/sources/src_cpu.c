/* src_cpu: CPU sampling, the events of -e (src_cpu.h). */
#include "sources/src_cpu.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/attach.h"
#include "session/capture.h"
#include "goruntime/goroutine.h"
#include "symbols/maps.h"
#include "profile/profile.h"
#include "session/session.h"
#include "sources/src_wall.h"
#include "profile/stacks.h"

static int cpu_configure(struct pm_srcctx *ctx)
{
	struct session *s = ctx->ses;
	const struct pm_record_cfg *cfg = s->cfg;
	char err[256];
	long maxrate;

	if ((cfg->alloc || cfg->locks || cfg->inuse || cfg->off_cpu) && !cfg->event)
		return 0; /* --alloc/--locks/--inuse/--off-cpu alone: no CPU events */
	if (pm_evt_parse_list(cfg->event ? cfg->event : "cycles", s->spec, PM_EVT_MAX, &s->nev,
			      err, sizeof(err)) < 0) {
		pm_ses_err(s->res, PM_REC_USAGE, "%s", err);
		return -1;
	}
	maxrate = pm_evt_max_sample_rate();
	if (cfg->freq && maxrate > 0 && cfg->freq > (uint64_t)maxrate) {
		pm_ses_err(s->res, PM_REC_USAGE,
			   "invalid frequency '%" PRIu64
			   "': must be 1..%ld (kernel.perf_event_max_sample_rate)",
			   cfg->freq, maxrate);
		return -1;
	}
	return 0;
}

/* The events parsed are the user's: the hardware ones this CPU lacks fall back. */
static int cpu_add_events(struct pm_srcctx *ctx)
{
	struct session *s = ctx->ses;
	pm_att_resolve_kernel(s); /* first: the hardware probes count what the events will */
	if (pm_att_resolve_hardware(s))
		return -1;
	s->nuser = s->nev;
	pm_src_own(s, 0, &pm_src_cpu);
	return 0;
}

/* per event: its samples and their value (cpu_profile_stack() splits them) */
static size_t cpu_nvalues(struct pm_srcctx *ctx)
{
	const struct session *s = ctx->ses;
	return 2 * s->nuser;
}

static void cpu_sample(struct pm_srcctx *ctx, size_t ev, const struct pm_rec_sample *smp)
{
	struct session *s = ctx->ses;
	struct pm_walk w;
	int64_t values[PM_SES_VALUES_MAX];
	int64_t *v = values + s->sctx[0].val_off;
	bool sys;
	size_t n;

	s->res->samples++;
	memset(values, 0, s->nvalues * sizeof(values[0]));
	v[2 * ev] = 1;
	v[2 * ev + 1] = (int64_t)smp->period;
	pm_ses_walk(s, smp, &w);
	n = pm_ses_stack_ids(s, smp, &w);
	/*
	 * its user frames (and the cut marker): a running goroutine's stack
	 * for --wall; not a walk of the system stack alone (its goroutine's
	 * frames not reached)
	 */
	if (pm_gor_last(s->gor, &sys) == 0 && (!sys || (w.status & PM_UNW_SWITCHED)))
		pm_wall_cpu_sample(s, w.pid, smp->time, s->ids + w.nk,
				   w.n + !(w.status & PM_UNW_COMPLETE));
	pm_stacks_add_tagged(s->stacks, smp->pid, smp->tid, s->ids, n, values);
	pm_reg_check_limits(s->reg, s->stacks, w.status);
}

/* One value per event: named as Go names it alone, after the event with others. */
static void cpu_profile_head(struct pm_srcctx *ctx, struct pm_profile *p)
{
	struct session *s = ctx->ses;
	bool cpu = strcmp(s->spec[0].value_unit, "nanoseconds") == 0; /* cpu, user_cpu */
	char *c;
	size_t e;

	if (!s->nuser) /* no CPU events (--alloc alone) */
		return;
	pm_prof_add_sample_type(p, "samples", "count");
	for (e = 0; e < s->nuser; e++)
		pm_prof_add_sample_type(p, s->nuser > 1 ? s->spec[e].name : s->spec[e].value_type,
					s->spec[e].value_unit);
	pm_prof_set_default_type(p, 1);
	if (s->attr[0].freq) {
		int64_t per = cpu ? (int64_t)(1000000000ULL / s->attr[0].sample_freq) : 1;
		pm_prof_set_period(p, pm_prof_sample_type(p, 1)->type, s->spec[0].value_unit, per);
	} else {
		pm_prof_set_period(p, pm_prof_sample_type(p, 1)->type, s->spec[0].value_unit,
				   (int64_t)s->attr[0].sample_period);
	}
	for (e = 0; e < s->nuser; e++) {
		const struct perf_event_attr *a = &s->attr[e];
		/* the modes counted: Go's profiler counts both */
		const char *mode = a->exclude_kernel ? ", user mode only (user CPU: the kernel's time "
						       "is not counted)"
				   : a->exclude_user ? ", kernel mode only"
						     : "";

		if (a->freq)
			c = xasprintf("pmuprof record: event %s, %" PRIu64
				      " Hz, stack copy %u bytes%s",
				      s->spec[e].name, (uint64_t)a->sample_freq, a->sample_stack_user,
				      mode);
		else
			c = xasprintf("pmuprof record: event %s, period %" PRIu64
				      ", stack copy %u bytes%s",
				      s->spec[e].name, (uint64_t)a->sample_period,
				      a->sample_stack_user, mode);
		pm_prof_add_comment(p, c);
		free(c);
	}
}

/* One sample per event, with an "event" label when there are several. */
static void cpu_profile_stack(struct pm_srcctx *ctx, struct pm_profile *p, const uint64_t *locs,
			      size_t n, const int64_t *v, struct pm_prof_label *lab, size_t nlab)
{
	struct session *s = ctx->ses;
	int64_t val[1 + PM_EVT_MAX + 16]; /* samples, the events, and the other sources' types, zero */
	size_t e;

	for (e = 0; e < s->nuser; e++) {
		if (!v[2 * e])
			continue;
		memset(val, 0, sizeof(val));
		if (pm_prof_nsample_types(p) > PM_ARRAY_SIZE(val))
			return;
		val[0] = v[2 * e];
		val[1 + e] = v[2 * e + 1];
		lab[nlab].key = "event";
		lab[nlab].str = s->spec[e].name;
		pm_prof_add(p, locs, n, val, lab, nlab + (s->nuser > 1));
	}
}

const struct pm_source pm_src_cpu = {
	.name = "cpu",
	.configure = cpu_configure,
	.add_events = cpu_add_events,
	.nvalues = cpu_nvalues,
	.sample = cpu_sample,
	.profile_head = cpu_profile_head,
	.profile_stack = cpu_profile_stack,
};
