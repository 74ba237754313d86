/* src_creation: the goroutine creation probes of --creators (src_creation.h). */
#include "src_creation.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach.h"
#include "goroutine.h"
#include "profile.h"
#include "session.h"

#define PROBE_STACK 256 /* bytes of stack a creation probe copies */

enum { PROBE_NEWPROC, PROBE_RUNQPUT }; /* s->kind[] of its events */

struct creation {
	uint64_t creations; /* goroutines seen created (runqput) */
};

/* Does @pid run with GODEBUG=tracebackancestors=N, N > 0 (its environment at exec)? */
static bool records_ancestors(pid_t pid)
{
	char path[64], *env;
	long len, i;
	bool yes = false;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	len = pm_read_file(path, &env, 1 << 20);
	if (len < 0)
		return false;
	for (i = 0; i < len; i += (long)strlen(env + i) + 1) {
		const char *t = strncmp(env + i, "GODEBUG=", 8) ? NULL
								: strstr(env + i, "tracebackancestors=");

		if (t && t[19] >= '1' && t[19] <= '9')
			yes = true;
	}
	free(env);
	return yes;
}

/*
 * Attached with --creators=N, N > 1, to a process that does not record
 * ancestors (it runs without GODEBUG=tracebackancestors): watch
 * goroutines being created with two entry-only uprobes on each Go binary:
 * runtime.newproc (the creating goroutine and its stack) and
 * runtime.runqput (the new goroutine; see pm_gor_probe_created()).  One
 * warning line when that is not possible.
 */
static int creation_add_events(struct session *s)
{
	static const char *const fn[] = { "runtime.newproc", "runtime.runqput" };
	char text[4200], err[512], exe[64];
	size_t i, k, e;
	bool warned = false;

	if (!s->attach || s->cfg->creators <= 1)
		return 0; /* goroutines: creators of what is created from now on */
	for (i = 0; i < pm_att_nprocs(s); i++) {
		pid_t pid = pm_att_pid(s, i);
		struct pm_evt_spec sp[2];
		char *real;
		bool dup = false;

		if (records_ancestors(pid))
			continue; /* the runtime records them: read from memory, no probes */
		snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
		real = realpath(exe, NULL);
		for (e = s->nuser; real && e < s->nev; e++)
			dup = dup || !strcmp(s->spec[e].path, real);
		if (!real || dup || s->nev + 2 > PM_ARRAY_SIZE(s->spec)) {
			free(real);
			continue;
		}
		for (k = 0; k < 2; k++) {
			snprintf(text, sizeof(text), "uprobe:%s:%s", real, fn[k]);
			if (pm_evt_parse(text, &sp[k], err, sizeof(err)) < 0)
				break;
			sp[k].period = 1; /* every creation, whatever -F says */
			sp[k].freq = 0;
			/* one line for both probes and every process: the cause is the same */
			if (pm_evt_uprobe_define(&sp[k], (unsigned)(s->nev + k), err, sizeof(err)) < 0 &&
			    !warned) {
				pm_warn("creators: %s: goroutines created on threads started later "
					"are not followed",
					err);
				warned = true;
			}
		}
		free(real);
		if (k < 2) {
			pm_warn("creators: cannot watch goroutines being created in PID %d (%s); "
				"creators of one level only",
				(int)pid, err);
			if (k == 1)
				pm_evt_uprobe_undefine(&sp[0]);
			continue;
		}
		for (k = 0; k < 2; k++)
			pm_src_add_event(s, &pm_src_creation, &sp[k], k ? PROBE_RUNQPUT : PROBE_NEWPROC);
	}
	return 0;
}

/*
 * goroutines: runqput's probe needs only the slot at sp (its return
 * address into newproc.func1); newproc's keeps the whole copy: the
 * creating goroutine's stack is the point of it (cut to 256 bytes and left
 * to the kernel's callchain, half the creations lost their creator stack
 * on tests/go/creators)
 */
static void creation_adjust_attr(struct session *s, size_t e, struct perf_event_attr *a)
{
	if (s->kind[e] == PROBE_RUNQPUT && a->sample_stack_user > PROBE_STACK)
		a->sample_stack_user = PROBE_STACK;
}

/* Replay: the events past the user's are the probes (which one: its EVENT record says). */
static bool creation_claim(struct session *s, size_t e, const char *name)
{
	s->kind[e] = name && strstr(name, "runqput") ? PROBE_RUNQPUT : PROBE_NEWPROC;
	return true;
}

/* goroutines: a creation, not a sample */
static void creation_sample(struct session *s, size_t e, const struct pm_rec_sample *smp)
{
	struct creation *st = pm_src_state(s, &pm_src_creation);
	struct pm_walk w;
	pid_t pid = (pid_t)smp->pid;

	pm_ses_walk(s, smp, &w);
	if (s->gor && (w.in.regs_valid & (1u << PM_DW_R14)) &&
	    (s->kind[e] == PROBE_NEWPROC
		     ? pm_gor_probe_newproc(s->gor, s->maps, pid, (pid_t)smp->tid,
					    w.in.regs[PM_DW_R14], s->pcs, w.n)
		     : pm_gor_probe_created(s->gor, s->maps, pid, (pid_t)smp->tid,
					    w.in.regs[PM_DW_RBX], s->pcs, w.n)) == 0 &&
	    s->kind[e] == PROBE_RUNQPUT)
		st->creations++;
}

static void creation_profile_tail(struct session *s, struct pm_profile *p)
{
	struct creation *st = pm_src_state(s, &pm_src_creation);
	char *c;

	if (!pm_src_has_events(s, &pm_src_creation))
		return;
	c = xasprintf("creators: %" PRIu64 " goroutine creations seen by uprobes", st->creations);
	pm_prof_add_comment(p, c);
	free(c);
}

const struct pm_source pm_src_creation = {
	.name = "creation",
	.state_size = sizeof(struct creation),
	.add_events = creation_add_events,
	.unrated = true,
	.adjust_attr = creation_adjust_attr,
	.claim = creation_claim,
	.sample = creation_sample,
	.profile_tail = creation_profile_tail,
};
