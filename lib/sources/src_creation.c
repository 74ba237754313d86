/* src_creation: the probe on goroutine creation of --creators (src_creation.h). */
#include "sources/src_creation.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/attach.h"
#include "goruntime/gocode.h"
#include "goruntime/goroutine.h"
#include "profile/profile.h"
#include "session/session.h"
#include "profile/stacks.h"
#include "base/path.h"

#define PROBE_STACK 8 /* bytes of stack its samples copy: none needed (the callchain is) */
#define RAW_MIN 56    /* trace entry (8), probe ip (8), five fetchargs (8 each) */

struct creation {
	uint64_t creations, bad; /* creations fed to the log; samples that were none */
	bool fallback_warned;
};

/*
 * One probe per Go binary, inside runtime.newproc.func1 (the closure newproc
 * runs on the system stack) at its call of runqput(pp, newg, next), after
 * newproc1 made the goroutine:
 *
 *   g=%bx          the new g (runqput's second argument)
 *   goid           its goid, set by newproc1
 *   cg, cgoid      m.curg, the creating goroutine, and its goid (R14 is g0)
 *   hi             the new g's stack.hi (g.stack is at 0 in every version)
 *
 * read by the kernel at the probe, so exact however late the record is
 * processed; the kernel's frame-pointer callchain there crosses
 * systemstack into the creating goroutine's stack at its go statement.  One
 * probe hit per goroutine created: the cheapest exact way found (two entry
 * probes, newproc and runqput, cost two traps, and runqput's fires at
 * every wakeup too).  On the CALL or the 5-byte NOP the compiler puts right
 * before it (every Go release so far), not on the instruction after
 * newproc1's return as before: that one the kernel single-steps, a second
 * trap per creation; the CALL it emulates, and a probe on that NOP it turns
 * into a call, no trap at all (Linux 6.18+).  What a creation still costs
 * is mostly the kernel's frame-pointer walk ending: it reads the frame at
 * the goroutine's first frame's saved BP, 0, and takes a page fault there
 * (~6 us on a VM: a walk stopped one frame earlier by sample_max_stack
 * costs nothing); no walk length avoids it for every creator.
 */
static int probe_for(const char *path, struct pm_evt_spec *sp, char *err, size_t errlen)
{
	char ver[64];
	struct pm_gor_layout l;

	if (pm_gocode_probe_before_call(path, "runtime.newproc.func1", "runtime.runqput", sp, ver,
					sizeof(ver), err, errlen) < 0)
		return -1;
	if (pm_gor_layout_dwarf(path, ver, &l) != 0 && pm_gor_layout_version(ver, &l) != 0) {
		snprintf(err, errlen, "Go version '%s' of %s is not known", ver, path);
		return -1;
	}
	if (!l.g_goid || !l.g_m || !l.m_curg) {
		snprintf(err, errlen, "the runtime's layout of %s lacks goid, m or curg", path);
		return -1;
	}
	snprintf(sp->fetchargs, sizeof(sp->fetchargs),
		 "g=%%bx:u64 goid=+%u(%%bx):s64 cg=+%u(+%u(%%r14)):u64 cgoid=+%u(+%u(+%u(%%r14))):s64 "
		 "hi=+8(%%bx):u64",
		 l.g_goid, l.m_curg, l.g_m, l.g_goid, l.m_curg, l.g_m);
	sp->period = 1; /* every creation, whatever -F says */
	sp->freq = 0;
	return 0;
}

/* --creators: the probe on every Go binary of the targets (attached) or on the command. */
static int creation_add_events(struct pm_srcctx *ctx)
{
	struct session *s = ctx->ses;
	char err[600];
	size_t i, e, n = s->attach ? pm_att_nprocs(s) : 1;
	bool warned = false;

	if (s->cfg->creators < 1)
		return 0;
	for (i = 0; i < n; i++) {
		pid_t pid = s->attach ? pm_att_pid(s, i) : 0;
		struct pm_evt_spec sp;
		char exe[64], *real;
		bool dup = false;

		if (s->attach) {
			snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
			real = realpath(exe, NULL);
		} else {
			real = s->cfg->argv ? pm_path_resolve(s->cfg->argv[0]) : NULL;
		}
		for (e = s->nuser; real && e < s->nev; e++)
			dup = dup || !strcmp(s->spec[e].path, real);
		if (!real || dup || s->nev + 1 > PM_ARRAY_SIZE(s->spec)) {
			free(real);
			continue;
		}
		if (probe_for(real, &sp, err, sizeof(err)) < 0 ||
		    pm_evt_uprobe_define(&sp, (unsigned)s->nev, err, sizeof(err)) < 0) {
			if (!warned)
				pm_warn("creators: cannot watch goroutines being created in %s (%s); "
					"goroutine ids, labels and creators are read from the process, "
					"and may be those of a goroutine that ran later",
					real, err);
			warned = true;
			free(real);
			continue;
		}
		free(real);
		pm_src_add_event(s, &pm_src_creation, &sp, 0);
	}
	return 0;
}

/* Its samples need no stack copy, and only the user part of the callchain. */
static void creation_adjust_attr(struct pm_srcctx *ctx, size_t e, struct perf_event_attr *a)
{
	struct session *s = ctx->ses;
	(void)s;
	(void)e;
	if (a->sample_stack_user > PROBE_STACK)
		a->sample_stack_user = PROBE_STACK;
	a->exclude_callchain_kernel = 1;
}

/* Replay: the events past the user's are the probe. */
static bool creation_claim(struct pm_srcctx *ctx, size_t e, const char *name)
{
	struct session *s = ctx->ses;
	s->kind[e] = 0;
	return !name || strstr(name, "newproc");
}

/* A creation, not a sample of the profile: into the goroutine inspector's log. */
static void creation_sample(struct pm_srcctx *ctx, size_t e, const struct pm_rec_sample *smp)
{
	struct session *s = ctx->ses;
	struct creation *st = pm_src_state(s, &pm_src_creation);
	struct pm_gor_creation c;
	uint64_t pcs[128];
	size_t n = 0, i;

	(void)e;
	if (!s->gor || smp->raw_size < RAW_MIN || !smp->raw) {
		st->bad++;
		return;
	}
	c.newg = pm_le64(smp->raw + 16);
	c.goid = (int64_t)pm_le64(smp->raw + 24);
	c.cg = pm_le64(smp->raw + 32);
	c.cgoid = (int64_t)pm_le64(smp->raw + 40);
	c.stack_hi = pm_le64(smp->raw + 48); /* g.stack.hi: stack is runtime.g's first field */
	c.time = smp->time;
	for (i = 0; i < smp->nr && n < PM_ARRAY_SIZE(pcs); i++)
		if (smp->ips[i] < (uint64_t)PERF_CONTEXT_MAX)
			pcs[n++] = smp->ips[i];
	if (pm_gor_created(s->gor, s->maps, s->stacks, (pid_t)smp->pid, &c, pcs, n) == 0)
		st->creations++;
	else
		st->bad++;
}

static double pct(uint64_t a, uint64_t all)
{
	return all ? 100.0 * (double)a / (double)all : 0.0;
}

static void creation_profile_tail(struct pm_srcctx *ctx, struct pm_profile *p)
{
	struct session *s = ctx->ses;
	struct creation *st = pm_src_state(s, &pm_src_creation);
	uint64_t cc, cp, cu, gu, lu, all;
	char *c;

	if (!pm_src_has_events(s, &pm_src_creation))
		return;
	pm_gor_creator_counts(s->gor, &cc, &cp, &cu, &gu, &lu);
	all = cc + cp + cu + gu;
	c = xasprintf("creators: %" PRIu64 " goroutine creations seen by the probe (%" PRIu64
		      " unreadable); of %" PRIu64 " samples of goroutines, creator chains: %.1f %% "
		      "complete (%" PRIu64 "), %.1f %% partial (%" PRIu64 "), %.1f %% unknown (%" PRIu64
		      "), %.1f %% with the goroutine unknown (%" PRIu64 "); %" PRIu64
		      " with labels unknown",
		      st->creations, st->bad, all, pct(cc, all), cc, pct(cp, all), cp, pct(cu, all), cu,
		      pct(gu, all), gu, lu);
	pm_prof_add_comment(p, c);
	free(c);
	if (pm_gor_late_creations(s->gor)) {
		c = xasprintf("creators: %" PRIu64 " creations were processed after samples taken "
			      "later (the machine stalled longer than the drain's ordering window, widened "
			      "since): the goroutine of a sample on their g just before may be the g's "
			      "previous one",
			      pm_gor_late_creations(s->gor));
		pm_prof_add_comment(p, c);
		if (!s->replay)
			pm_warn("%s", c);
		free(c);
	}
}

const struct pm_source pm_src_creation = {
	.name = "creation",
	.state_size = sizeof(struct creation),
	.add_events = creation_add_events,
	.unrated = true,
	.raw = true,
	.ordered = true, /* a creation before every sample of its goroutine */
	.logs_creations = true,
	.adjust_attr = creation_adjust_attr,
	.claim = creation_claim,
	.sample = creation_sample,
	.profile_tail = creation_profile_tail,
};
