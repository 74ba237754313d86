/* src_creation: the probe on goroutine creation of --creators (src_creation.h). */
#include "sources/src_creation.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/budget.h"
#include "goruntime/gocode.h"
#include "goruntime/goroutine.h"
#include "profile/profile.h"
#include "session/srcctx.h"

#define PROBE_STACK 8 /* bytes of stack its samples copy: none needed (the callchain is) */
#define RAW_MIN 56    /* trace entry (8), probe ip (8), five fetchargs (8 each) */

struct creation {
	uint64_t creations, bad; /* creations fed to the log; samples that were none */
	bool fallback_warned;
	/* --creators-max-rate: the probes CPU-wide, opened and closed by the budget (budget.h) */
	struct pm_budget *bud;
	bool open, failed;
	uint64_t last_now;
	uint64_t others; /* creations in processes not targets (CPU-wide probes), dropped */
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
	pm_evt_every_hit(sp, NULL, NULL); /* every creation */
	return 0;
}

/* --creators: the probe on every Go binary of the targets (attached) or on the command. */
static int creation_add_events(struct pm_srcctx *ctx)
{
	char err[600], *real;
	size_t i = 0;
	pid_t pid;
	bool warned = false, dup;

	if (pm_sc_cfg(ctx)->creators < 1)
		return 0;
	while (pm_sc_next_exe(ctx, &i, &pid, &real, &dup)) {
		struct pm_evt_spec sp;

		if (!real || dup || !pm_sc_event_room(ctx)) {
			free(real);
			continue;
		}
		if (probe_for(real, &sp, err, sizeof(err)) < 0 ||
		    pm_evt_uprobe_define(&sp, (unsigned)pm_sc_nev(ctx), err, sizeof(err)) < 0) {
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
		if (pm_sc_cfg(ctx)->creators_max_rate > 0) /* opened and closed by creation_timer() */
			pm_sc_set_cpuwide(ctx, pm_sc_nev(ctx));
		pm_sc_add_event(ctx, &sp, 0);
	}
	return 0;
}

/* Its samples need no stack copy, and only the user part of the callchain. */
static void creation_adjust_attr(struct pm_srcctx *ctx, size_t e, struct perf_event_attr *a)
{
	(void)ctx;
	(void)e;
	if (a->sample_stack_user > PROBE_STACK)
		a->sample_stack_user = PROBE_STACK;
	a->exclude_callchain_kernel = 1;
}

/* Replay: the events past the user's are the probe. */
static bool creation_claim(struct pm_srcctx *ctx, size_t e, const char *name)
{
	pm_sc_set_kind(ctx, e, 0);
	return !name || strstr(name, "newproc");
}

/*
 * Is @smp of a target?  Per thread, yes; CPU-wide (a budget), as
 * pm_sc_ours() says, logged in a capture; at replay what was logged.
 */
static bool ours(struct pm_srcctx *ctx, size_t e, const struct pm_rec_sample *smp)
{
	uint64_t v = 1;

	if (!pm_sc_replay(ctx))
		return !pm_sc_is_cpuwide(ctx, e) || pm_sc_ours(ctx, smp, PM_CAP_KEY_CREATION_OURS);
	if (pm_sc_value(ctx, (pid_t)smp->pid, PM_CAP_KEY_CREATION_OURS, &v, sizeof(v)) < 0)
		return true;
	return v != 0;
}

/* A creation, not a sample of the profile: into the goroutine inspector's log. */
static void creation_sample(struct pm_srcctx *ctx, size_t e, const struct pm_rec_sample *smp)
{
	struct creation *st = ctx->state;
	struct pm_gor *gor = pm_sc_gor(ctx);
	struct pm_gor_creation c;
	uint64_t pcs[128];
	size_t n = 0, i;

	if (!ours(ctx, e, smp)) {
		st->others++;
		return;
	}
	if (!gor || smp->raw_size < RAW_MIN || !smp->raw) {
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
	if (pm_gor_created(gor, pm_sc_maps(ctx), pm_sc_stacks(ctx), (pid_t)smp->pid, &c, pcs, n) ==
	    0)
		st->creations++;
	else
		st->bad++;
}

/* ---- the budget (--creators-max-rate) ---- */

/*
 * Open or close the probes (CPU-wide: a closed uprobe traps no more); the
 * goroutine inspector told of the gap, from before the close to after the
 * open, so that the log is not trusted across it.
 */
static void set_open(struct pm_srcctx *ctx, struct creation *st, uint64_t now, bool on)
{
	if (!on)
		pm_gor_watching(pm_sc_gor(ctx), now, false);
	if (pm_sc_cpuwide_open_own(ctx, on) < 0 && !st->failed) {
		pm_warn("creators: %s", pm_sc_errmsg(ctx)[0] ? pm_sc_errmsg(ctx)
							  : "cannot open the probes again");
		st->failed = true;
	}
	if (on && !st->failed)
		pm_gor_watching(pm_sc_gor(ctx), pm_now_ns(), true);
	st->open = on;
}

static uint64_t creation_timer(struct pm_srcctx *ctx, uint64_t now)
{
	struct creation *st = ctx->state;
	const struct pm_record_cfg *cfg = pm_sc_cfg(ctx);
	uint64_t next;
	double rate;
	bool open;

	if (pm_sc_replay(ctx) || !cfg || cfg->creators_max_rate <= 0 || !pm_sc_has_events(ctx))
		return 0;
	if (!st->bud)
		st->open = true; /* opened by the attach */
	next = pm_budget_step(&st->bud, cfg->creators_max_rate, now ^ 0x6372656174ULL, now,
			      pm_sc_cpuwide_hits_own(ctx), &open, &rate);
	if (rate > 0)
		pm_warn("creators: %.0f goroutines created a second, over the budget of %" PRId64
			" (--creators-max-rate): the probe watches part of the time; a goroutine made "
			"while it does not has its goroutine and creators unknown (counted in the "
			"profile's comments)",
			rate, cfg->creators_max_rate);
	if (open != st->open && !st->failed)
		set_open(ctx, st, now, open);
	st->last_now = now;
	return next;
}

static void creation_cut(struct pm_srcctx *ctx)
{
	struct creation *st = ctx->state;

	st->creations = st->bad = st->others = 0;
}

static void creation_end(struct pm_srcctx *ctx)
{
	struct creation *st = ctx->state;

	pm_budget_free(st->bud);
	st->bud = NULL;
}

static double pct(uint64_t a, uint64_t all)
{
	return all ? 100.0 * (double)a / (double)all : 0.0;
}

/* The budget's comment: over it, the share watched, and what it cost (samples' goroutines unknown). */
static void budget_comment(struct pm_srcctx *ctx, const struct creation *st, struct pm_profile *p)
{
	const struct pm_record_cfg *cfg = pm_sc_cfg(ctx);
	uint64_t unw = pm_gor_unwatched(pm_sc_gor(ctx));
	double rate;
	char *c;

	if (st->others) {
		c = xasprintf("creators: %" PRIu64 " creations in processes not recorded dropped "
			      "(the probes watch every process for the budget)",
			      st->others);
		pm_prof_add_comment(p, c);
		free(c);
	}
	if (st->bud && pm_budget_over(st->bud, &rate)) {
		c = xasprintf("creators: %.0f creations/s over the budget of %" PRId64
			      " (--creators-max-rate): the probe watched %.1f %% of the time",
			      rate, cfg->creators_max_rate,
			      100 * pm_budget_watched(st->bud, st->last_now));
		pm_prof_add_comment(p, c);
		free(c);
	}
	if (unw) {
		c = xasprintf("creators: %" PRIu64 " samples on a g whose goroutine may have been "
			      "made while the probe did not watch: goroutine unknown",
			      unw);
		pm_prof_add_comment(p, c);
		free(c);
	}
}

static void creation_profile_tail(struct pm_srcctx *ctx, struct pm_profile *p)
{
	struct creation *st = ctx->state;
	uint64_t cc, cp, cu, gu, lu, all;
	char *c;

	pm_gor_creator_counts(pm_sc_gor(ctx), &cc, &cp, &cu, &gu, &lu);
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
	budget_comment(ctx, st, p);
	if (pm_gor_late_creations(pm_sc_gor(ctx))) {
		c = xasprintf("creators: %" PRIu64 " creations were processed after samples taken "
			      "later (the machine stalled longer than the drain's ordering window, widened "
			      "since): the goroutine of a sample on their g just before may be the g's "
			      "previous one",
			      pm_gor_late_creations(pm_sc_gor(ctx)));
		pm_prof_add_comment(p, c);
		if (!pm_sc_replay(ctx))
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
	.end = creation_end,
	.sample = creation_sample,
	.timer = creation_timer,
	.profile_tail = creation_profile_tail,
	.cut = creation_cut,
};
