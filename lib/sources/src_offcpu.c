/* src_offcpu: off-CPU time, --off-cpu (src_offcpu.h). */
#include "sources/src_offcpu.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/idtab.h"
#include "goruntime/goroutine.h"
#include "profile/profile.h"
#include "session/srcctx.h"

#define MAX_THREADS 65536 /* threads followed; a switch of one more is counted lost */
#define EVENT "context-switches"
/*
 * The loop drains at least this often: a sample's goroutine is read when
 * it is drained, and read while the thread is still off CPU it is known
 * (the drain's wakeups count samples, and switches can be rare).
 */
#define TICK_NS 5000000ULL

/* values per stack: times off CPU (to tell a stack with none), nanoseconds */
enum { V_COUNT, V_NS, V_N };

/* how a switch-out's time is counted, known at its switch-in */
enum cls {
	CL_STACK,   /* into the profile, by its stack */
	CL_IDLE,    /* no goroutine on the thread: an idle runtime thread */
	CL_SYS,     /* on the system stack: into the profile if its goroutine was read in time */
	CL_UNKNOWN, /* its goroutine not known (CL_SYS or CL_IDLE read after the thread
		     * ran again, a goroutine the inspector could not validate): left out */
	CL_RUNNABLE, /* preempted: still runnable */
	CL_N,
};

/* A thread: its last switch-out, until its switch-in. */
struct thr {
	pid_t pid, tid;
	bool out;          /* switched out, waiting for its switch-in */
	uint8_t cls;
	uint64_t time;     /* the switch-out sample's */
	uint64_t read;     /* CL_SYS, CL_IDLE: when its goroutine was read (the events' clock) */
	uint32_t *ids;     /* CL_STACK, CL_SYS: the stack */
	size_t n, cap;
};

struct offcpu {
	struct pm_idtab slot; /* tid -> index in thr (a thread keeps its slot) */
	struct thr *thr;
	size_t nthr, capthr;
	uint64_t count[CL_N], ns[CL_N];
	uint64_t unpaired_in, lost, still, bad, nogor, gone;
};

static struct offcpu *state(struct pm_srcctx *ctx)
{
	return ctx->state;
}

static int offcpu_configure(struct pm_srcctx *ctx)
{
	const struct pm_record_cfg *cfg = pm_sc_cfg(ctx);

	if (!cfg->off_cpu)
		return 0;
	if (cfg->no_callchain && !cfg->kernel) {
		pm_sc_err(ctx, PM_REC_USAGE,
			  "--off-cpu needs the kernel's callchain: drop --no-callchain (or add "
			  "--kernel)");
		return -1;
	}
	return 0;
}

/* One event: context-switches at every switch, in kernel mode (where the switch is). */
static int offcpu_add_events(struct pm_srcctx *ctx)
{
	struct pm_evt_spec sp;
	char err[256];

	if (!pm_sc_cfg(ctx)->off_cpu)
		return 0;
	if (!pm_evt_kernel_allowed()) {
		long level = -1;

		pm_read_long("/proc/sys/kernel/perf_event_paranoid", &level);
		pm_sc_err(ctx, PM_REC_ERR,
			  "--off-cpu needs samples in the kernel, which it refuses "
			  "(kernel.perf_event_paranoid=%ld): run as root, grant CAP_PERFMON, or "
			  "sysctl kernel.perf_event_paranoid=1",
			  level);
		return -1;
	}
	memset(&sp, 0, sizeof(sp));
	if (pm_evt_parse(EVENT, &sp, err, sizeof(err)) < 0) {
		pm_sc_err(ctx, PM_REC_ERR, "--off-cpu: %s", err);
		return -1;
	}
	pm_evt_every_hit(&sp, "off-cpu", "nanoseconds");
	sp.exclude_kernel = false;
	sp.exclude_user = false;
	sp.ukmods = true;
	if (!pm_sc_add_event(ctx, &sp, 0)) {
		pm_sc_err(ctx, PM_REC_USAGE, "--off-cpu: too many events (at most %d with -e)",
			  PM_EVT_MAX);
		return -1;
	}
	return 0;
}

/*
 * The switch records, and the kernel's callchain whatever --kernel says
 * (the sample is in the scheduler: its registers are the kernel's).
 */
static void offcpu_adjust_attr(struct pm_srcctx *ctx, size_t e, struct perf_event_attr *a)
{
	(void)ctx;
	(void)e;
	a->context_switch = 1;
	a->exclude_kernel = 0;
	a->exclude_callchain_kernel = 0;
	a->freq = 0;
	a->sample_period = 1;
}

static bool offcpu_claim(struct pm_srcctx *ctx, size_t e, const char *name)
{
	(void)ctx;
	(void)e;
	return name && !strcmp(name, EVENT);
}

static size_t offcpu_nvalues(struct pm_srcctx *ctx)
{
	(void)ctx;
	return V_N;
}

/* @tid's entry, made when new; NULL when full. */
static struct thr *thread(struct offcpu *st, pid_t pid, pid_t tid, bool make)
{
	int32_t i;
	struct thr *t;

	if (tid <= 0)
		return NULL;
	if (pm_idtab_get(&st->slot, (uint64_t)tid, &i) && i >= 0 && (size_t)i < st->nthr) {
		st->thr[i].pid = pid;
		return &st->thr[i];
	}
	if (!make || st->nthr >= MAX_THREADS)
		return NULL;
	PM_GROW(st->thr, st->capthr, st->nthr + 1);
	t = &st->thr[st->nthr];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	pm_idtab_put(&st->slot, (uint64_t)tid, (int32_t)st->nthr++);
	return t;
}

/* A switch-out: the thread's stack and goroutine now, its time at the switch-in. */
static void offcpu_sample(struct pm_srcctx *ctx, size_t ev, const struct pm_rec_sample *smp)
{
	struct offcpu *st = state(ctx);
	struct pm_gor *gor;
	struct pm_walk w;
	struct thr *t;
	size_t n;
	bool sys = false;
	int rc;

	(void)ev;
	t = thread(st, (pid_t)smp->pid, (pid_t)smp->tid, true);
	if (!t) {
		st->lost++;
		pm_sc_keep(ctx, 0);
		return;
	}
	if (t->out) /* its switch-in was lost */
		st->lost++;
	pm_sc_walk(ctx, smp, &w);
	n = pm_sc_stack_ids(ctx, smp, &w);
	pm_sc_check_limits(ctx, w.status);
	gor = pm_sc_gor(ctx);
	rc = gor && (w.in.regs_valid & (1u << PM_DW_R14)) ? pm_gor_last(gor, &sys) : 1;
	t->out = true;
	t->time = smp->time;
	t->read = 0;
	/*
	 * A goroutine, on its stack or the system stack; none (idle); not a
	 * Go thread, a Go version the inspector does not know, or a goroutine
	 * that moved on before the read: the thread's stack alone; else
	 * whether it served a goroutine is not known: left out.
	 */
	t->cls = rc == -ENOENT ? CL_IDLE
		 : rc == 0     ? (sys ? CL_SYS : CL_STACK)
		 : rc == 1 || rc == -ENOTSUP || rc == -ESTALE ? CL_STACK
							      : CL_UNKNOWN;
	/*
	 * -ESTALE: a goroutine's stack held SP, but it has left its m since, or
	 * nothing validated it but the walk of the sample's own copy ends in
	 * runtime.goexit: a goroutine's time, not idle
	 */
	st->nogor += rc == -ESTALE;
	if (t->cls == CL_SYS || t->cls == CL_IDLE) {
		/*
		 * On g0 (or none): which goroutine the thread served is m.curg,
		 * as read now; when that was after it ran again, it is not known.
		 * The time of the read is logged, so that a replay decides the same.
		 */
		uint64_t now = 0;

		if (pm_sc_clock(ctx, w.pid, &now))
			now = UINT64_MAX;
		t->read = now;
	}
	if (t->cls == CL_IDLE || t->cls == CL_UNKNOWN) {
		t->n = 0;
		return;
	}
	if (n > t->cap) {
		t->cap = n;
		t->ids = xrealloc(t->ids, n * sizeof(*t->ids));
	}
	memcpy(t->ids, pm_sc_ids(ctx), n * sizeof(*t->ids));
	t->n = n;
}

/* A switch: out (preempted or not), or in: the time off CPU, counted as its class says. */
static void offcpu_record(struct pm_srcctx *ctx, size_t ev, const struct pm_rec *r)
{
	struct offcpu *st = state(ctx);
	int64_t v[V_N];
	struct thr *t;
	uint64_t d;
	unsigned c;

	(void)ev;
	t = thread(st, (pid_t)r->sid.pid, (pid_t)r->sid.tid, false);
	if (r->type == PERF_RECORD_EXIT && t && t->out) { /* its thread id may come back: forget it */
		t->out = false;
		st->gone++;
		return;
	}
	if (r->type != PERF_RECORD_SWITCH)
		return;
	if (r->misc & PERF_RECORD_MISC_SWITCH_OUT) {
		if (t && t->out && (r->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT))
			t->cls = CL_RUNNABLE;
		/*
		 * the record follows the sample: its time is the switch's, the
		 * sample's work (the stack copy, the callchain) was on CPU
		 */
		if (t && t->out && r->sid.time >= t->time)
			t->time = r->sid.time;
		return;
	}
	if (!t || !t->out) {
		st->unpaired_in++;
		return;
	}
	t->out = false;
	if (r->sid.time < t->time) {
		st->bad++;
		return;
	}
	d = r->sid.time - t->time;
	c = t->cls;
	if ((c == CL_SYS || c == CL_IDLE) && t->read < r->sid.time)
		c = c == CL_SYS ? CL_STACK : CL_IDLE; /* read while it was still off CPU */
	else if (c == CL_SYS || c == CL_IDLE)
		c = CL_UNKNOWN;
	st->count[c]++;
	st->ns[c] += d;
	if (c != CL_STACK)
		return;
	v[V_COUNT] = 1;
	v[V_NS] = d > INT64_MAX ? INT64_MAX : (int64_t)d;
	pm_sc_count_sample(ctx);
	pm_sc_add_stack(ctx, (uint32_t)t->pid, (uint32_t)t->tid, t->ids, t->n, v);
}

static uint64_t offcpu_timer(struct pm_srcctx *ctx, uint64_t now)
{
	(void)ctx;
	return now + TICK_NS; /* (off without its event: source.c calls it not) */
}

static void offcpu_profile_head(struct pm_srcctx *ctx, struct pm_profile *p)
{
	pm_prof_add_sample_type(p, "off-cpu", "nanoseconds");
	if (!pm_sc_nuser(ctx)) { /* off-CPU alone: its type is the default */
		pm_prof_set_default_type(p, pm_prof_nsample_types(p) - 1);
		pm_prof_set_period(p, "off-cpu", "nanoseconds", 1);
	}
}

/* An interval ended: its comment's counts begin again (a thread off CPU stays so). */
static void offcpu_cut(struct pm_srcctx *ctx)
{
	struct offcpu *st = state(ctx);

	memset(st->count, 0, sizeof(st->count));
	memset(st->ns, 0, sizeof(st->ns));
	st->unpaired_in = st->lost = st->bad = st->nogor = st->gone = 0;
}

static void offcpu_profile_tail(struct pm_srcctx *ctx, struct pm_profile *p)
{
	struct offcpu *st = state(ctx);
	char *c;

	st->still = 0;
	for (size_t i = 0; i < st->nthr; i++)
		st->still += st->thr[i].out;
	c = xasprintf("off-cpu: %" PRIu64 " times blocked, %.3f s off CPU in the profile (%" PRIu64
		      " without their goroutine: it had moved on when read, or nothing validated it); left "
		      "out: %" PRIu64 " preempted (runnable, %.3f s), %" PRIu64
		      " idle runtime threads (no goroutine, %.3f s), %" PRIu64
		      " whose goroutine is not known (read after the thread ran again, or not "
		      "valid: %.3f s); not counted: %" PRIu64 " still off CPU at the end or their "
		      "exit, %" PRIu64
		      " switch-ins without their switch-out (off CPU before the start, new "
		      "threads), %" PRIu64 " lost, %" PRIu64 " unreadable",
		      st->count[CL_STACK], (double)st->ns[CL_STACK] / 1e9, st->nogor,
		      st->count[CL_RUNNABLE],
		      (double)st->ns[CL_RUNNABLE] / 1e9, st->count[CL_IDLE],
		      (double)st->ns[CL_IDLE] / 1e9, st->count[CL_UNKNOWN],
		      (double)st->ns[CL_UNKNOWN] / 1e9, st->still + st->gone, st->unpaired_in, st->lost,
		      st->bad);
	pm_prof_add_comment(p, c);
	free(c);
}

static void offcpu_profile_stack(struct pm_srcctx *ctx, struct pm_profile *p, const uint64_t *locs,
				 size_t n, const int64_t *v, struct pm_prof_label *lab, size_t nlab)
{
	int64_t val[PM_SES_VALUES_MAX + 4];
	long i = pm_prof_find_sample_type(p, "off-cpu");
	size_t nt = pm_prof_nsample_types(p);

	(void)ctx;
	if (!v[V_COUNT] || i < 0 || nt > PM_ARRAY_SIZE(val))
		return;
	memset(val, 0, sizeof(val));
	val[i] = v[V_NS];
	pm_prof_add(p, locs, n, val, lab, nlab);
}

static void offcpu_end(struct pm_srcctx *ctx)
{
	struct offcpu *st = state(ctx);

	for (size_t i = 0; i < st->nthr; i++)
		free(st->thr[i].ids);
	free(st->thr);
	pm_idtab_free(&st->slot);
}

const struct pm_source pm_src_offcpu = {
	.name = "off-cpu",
	.state_size = sizeof(struct offcpu),
	.configure = offcpu_configure,
	.add_events = offcpu_add_events,
	.unrated = true,
	.ordered = true, /* a switch-out before its switch-in, on whatever CPU */
	.adjust_attr = offcpu_adjust_attr,
	.claim = offcpu_claim,
	.nvalues = offcpu_nvalues,
	.sample = offcpu_sample,
	.record = offcpu_record,
	.timer = offcpu_timer,
	.profile_head = offcpu_profile_head,
	.profile_tail = offcpu_profile_tail,
	.cut = offcpu_cut,
	.profile_stack = offcpu_profile_stack,
	.end = offcpu_end,
};
