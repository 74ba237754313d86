/* src_cpu: CPU sampling, the events of -e (src_cpu.h). */
#include "sources/src_cpu.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "goruntime/goroutine.h"
#include "profile/profile.h"
#include "session/srcctx.h"
#include "sources/src_wall.h"

static int cpu_configure(struct pm_srcctx *ctx)
{
	const struct pm_record_cfg *cfg = pm_sc_cfg(ctx);
	struct pm_evt_spec *spec;
	char err[256];
	long maxrate;
	size_t n = 0;
	int rc = -1;

	if ((cfg->alloc || cfg->locks || cfg->inuse || cfg->off_cpu) && !cfg->event)
		return 0; /* --alloc/--locks/--inuse/--off-cpu alone: no CPU events */
	spec = xcalloc(PM_EVT_MAX, sizeof(*spec));
	if (pm_evt_parse_list(cfg->event ? cfg->event : "cycles", spec, PM_EVT_MAX, &n, err,
			      sizeof(err)) < 0) {
		pm_sc_err(ctx, PM_REC_USAGE, "%s", err);
		goto out;
	}
	for (size_t e = 0; e < n; e++)
		pm_sc_add_event(ctx, &spec[e], 0);
	maxrate = pm_evt_max_sample_rate();
	if (cfg->freq && maxrate > 0 && cfg->freq > (uint64_t)maxrate) {
		pm_sc_err(ctx, PM_REC_USAGE,
			  "invalid frequency '%" PRIu64
			  "': must be 1..%ld (kernel.perf_event_max_sample_rate)",
			  cfg->freq, maxrate);
		goto out;
	}
	rc = 0;
out:
	free(spec);
	return rc;
}

/* The events parsed are the user's: the hardware ones this CPU lacks fall back. */
static int cpu_add_events(struct pm_srcctx *ctx)
{
	return pm_sc_user_events(ctx);
}

/* per event: its samples and their value (cpu_profile_stack() splits them) */
static size_t cpu_nvalues(struct pm_srcctx *ctx)
{
	return 2 * pm_sc_nuser(ctx);
}

static void cpu_sample(struct pm_srcctx *ctx, size_t ev, const struct pm_rec_sample *smp)
{
	struct pm_walk w;
	int64_t v[2 * PM_EVT_MAX];
	uint32_t *ids = pm_sc_ids(ctx);
	bool sys;
	size_t n;

	pm_sc_count_sample(ctx);
	memset(v, 0, sizeof(v));
	v[2 * ev] = 1;
	v[2 * ev + 1] = (int64_t)smp->period;
	pm_sc_walk(ctx, smp, &w);
	n = pm_sc_stack_ids(ctx, smp, &w);
	/*
	 * its user frames (and the cut marker): a running goroutine's stack
	 * for --wall; not a walk of the system stack alone (its goroutine's
	 * frames not reached)
	 */
	if (pm_gor_last(pm_sc_gor(ctx), &sys) == 0 && (!sys || (w.status & PM_UNW_SWITCHED)))
		pm_wall_cpu_sample(pm_sc_peer(ctx, &pm_src_wall), w.pid, smp->time, ids + w.nk,
				   w.n + !(w.status & PM_UNW_COMPLETE));
	pm_sc_add_stack(ctx, smp->pid, smp->tid, ids, n, v);
	pm_sc_check_limits(ctx, w.status);
}

/* One value per event: named as Go names it alone, after the event with others. */
static void cpu_profile_head(struct pm_srcctx *ctx, struct pm_profile *p)
{
	size_t nuser = pm_sc_nuser(ctx), e;
	const struct pm_evt_spec *sp0 = pm_sc_spec(ctx, 0);
	const struct perf_event_attr *a0 = pm_sc_attr(ctx, 0);
	bool cpu = strcmp(sp0->value_unit, "nanoseconds") == 0; /* cpu, user_cpu */
	const char *type;
	char *c;

	if (!nuser) /* no CPU events (--alloc alone) */
		return;
	pm_prof_add_sample_type(p, "samples", "count");
	for (e = 0; e < nuser; e++) {
		const struct pm_evt_spec *sp = pm_sc_spec(ctx, e);

		pm_prof_add_sample_type(p, nuser > 1 ? sp->name : sp->value_type, sp->value_unit);
	}
	pm_prof_set_default_type(p, 1);
	type = pm_prof_sample_type(p, 1)->type;
	if (a0->freq)
		pm_prof_set_period(p, type, sp0->value_unit,
				   cpu ? (int64_t)(1000000000ULL / a0->sample_freq) : 1);
	else
		pm_prof_set_period(p, type, sp0->value_unit, (int64_t)a0->sample_period);
	for (e = 0; e < nuser; e++) {
		const struct perf_event_attr *a = pm_sc_attr(ctx, e);
		const char *name = pm_sc_spec(ctx, e)->name;
		/* the modes counted: Go's profiler counts both */
		const char *mode = a->exclude_kernel ? ", user mode only (user CPU: the kernel's time "
						       "is not counted)"
				   : a->exclude_user ? ", kernel mode only"
						     : "";

		if (a->freq)
			c = xasprintf("pmuprof record: event %s, %" PRIu64
				      " Hz, stack copy %u bytes%s",
				      name, (uint64_t)a->sample_freq, a->sample_stack_user, mode);
		else
			c = xasprintf("pmuprof record: event %s, period %" PRIu64
				      ", stack copy %u bytes%s",
				      name, (uint64_t)a->sample_period, a->sample_stack_user, mode);
		pm_prof_add_comment(p, c);
		free(c);
	}
}

/* One sample per event, with an "event" label when there are several. */
static void cpu_profile_stack(struct pm_srcctx *ctx, struct pm_profile *p, const uint64_t *locs,
			      size_t n, const int64_t *v, struct pm_prof_label *lab, size_t nlab)
{
	int64_t val[1 + PM_EVT_MAX + 16]; /* samples, the events, and the other sources' types, zero */
	size_t nuser = pm_sc_nuser(ctx);

	for (size_t e = 0; e < nuser; e++) {
		if (!v[2 * e])
			continue;
		memset(val, 0, sizeof(val));
		if (pm_prof_nsample_types(p) > PM_ARRAY_SIZE(val))
			return;
		val[0] = v[2 * e];
		val[1 + e] = v[2 * e + 1];
		lab[nlab].key = "event";
		lab[nlab].str = pm_sc_spec(ctx, e)->name;
		pm_prof_add(p, locs, n, val, lab, nlab + (nuser > 1));
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
