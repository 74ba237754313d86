/* src_locks: contended sync.Mutex locks, --locks (src_locks.h). */
#include "sources/src_locks.h"

#include <elf.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/elfimg.h"
#include "symbols/gopclntab.h"
#include "goruntime/gocode.h"
#include "goruntime/goroutine.h"
#include "symbols/maps.h"
#include "profile/profile.h"
#include "session/srcctx.h"

#define RAW_EXIT 24  /* trace entry (8), probe ip (8), g (8) ... */
#define RAW_ENTRY 32 /* ... and the mutex (8) at the entry */
#define MAX_WAITING 65536 /* goroutines waiting at once, kept; more are counted lost */
#define MAX_WAITERS 65536 /* (thread, mutex) pairs labelled; more lose the mutex label */
#define WAITER_TAG 0x80000000u /* a stack's thread tag with it: WAITER_TAG | pair */

/*
 * The budget (--locks-max-rate): time in periods (100 ms to 1 s); in a
 * period over the budget the entry probes are open for a fraction f of
 * it, at a random offset, the exit probes as long again past it (5 to 20
 * ms) and then while a wait begun in the window is still seen waiting, to
 * the period's end (longer ones are lost, counted), and closed the rest:
 * a closed uprobe traps no more (a disabled one still would).
 * f follows the hits the kernel counted in the last period (f * budget /
 * hits), never below MIN_FRACTION.  A wait begun in a period watched for
 * on_ns of its len_ns weighs len_ns / on_ns (each function its own: its
 * entry opened and closed at its own time): its contentions and delay
 * scaled by that.
 */
#define PERIOD_NS 100000000ULL     /* at least */
#define MAX_PERIOD_NS 1000000000ULL /* at most */
#define MIN_ON_NS 20000000ULL       /* the entries' window, at least (but in 1 s periods) */
#define PROVISIONAL_NS 10000000ULL  /* a period's weights so far, made this often */
#define GRACE_NS 20000000ULL     /* at most */
#define MIN_GRACE_NS 5000000ULL  /* at least; else as long as the entries were open */
#define MIN_FRACTION 0.05

/*
 * A period as the weights know it: the waits begun from @start to the
 * next period's start weigh @w (as planned until @final: the period's
 * length over the time its entries were open).  The timer makes them
 * live; every sample of the source takes those made since the last one
 * (a capture logs them there, so that a replay weighs the same), and a
 * wait is added to the profile once its period is final.
 */
#define NFN 6 /* the functions watched (fns[]): each its own weight */
struct period {
	uint64_t start;
	double w[NFN];
	uint64_t final;
};

/* pm_sc_kind(ctx, e): which probe, KIND_EXIT or not, and which function (KIND_FN * index) */
enum { KIND_ENTRY = 1, KIND_EXIT = 2, KIND_FN = 4 };

/*
 * The functions watched: a goroutine waits inside exactly one of them at
 * a time.  @off: what the argument register (AX) is past the lock's own
 * address (a semaphore inside the RWMutex: the label is the RWMutex's).
 * The two RWMutex ones exist from Go 1.20 (before, those waits went
 * through the Mutex's semaphore function, not watched: RLock unseen).
 */
static const struct lockfn {
	const char *name, *name24; /* name24: from Go 1.24, when it differs */
	unsigned off;
	bool optional; /* absent when the program never waits that way */
	/*
	 * callee: the probes are at the one call of it inside the function
	 * and at its return address (the sleep of a runtime lock), not at
	 * the entry and epilogue; no address from Go 1.24 (AX is the sleep's
	 * duration there, not the lock: the label says "runtime")
	 */
	const char *callee, *callee24;
	unsigned upto; /* watched up to this Go 1.x only (0: all) */
	bool holder;   /* an entry probe only: a release with waiters (the holder's stack) */
} fns[] = {
	{ "sync.(*Mutex).lockSlow", "internal/sync.(*Mutex).lockSlow", 0, false, NULL, NULL, 0, false },
	{ "sync.runtime_SemacquireRWMutexR", NULL, 12, true, NULL, NULL, 0, false }, /* RLock waits for a writer */
	{ "sync.runtime_SemacquireRWMutex", NULL, 8, true, NULL, NULL, 0, false },   /* Lock waits for the readers */
	/* a runtime lock's sleep: futexsleep (Go 1.19-1.23), semasleep (1.24 on) */
	{ "runtime.lock2", NULL, 0, true, "runtime.futexsleep", "runtime.semasleep", 0, false },
	/*
	 * Go 1.19: RLock and a writer waiting for the readers sleep in the
	 * Mutex's semaphore function, which lockSlow calls too (those calls,
	 * inside a watched lockSlow, are left out); the label is the
	 * semaphore's address (the RWMutex + 12 for RLock, + 8 for a writer:
	 * the function gets the semaphore, not which)
	 */
	{ "sync.runtime_SemacquireMutex", NULL, 0, true, NULL, NULL, 19, false },
	/*
	 * the release of a Mutex with waiters (Unlock's slow path, reached
	 * only then): the releasing goroutine's stack, charged with the time
	 * the watched waiters for that Mutex waited since the last release
	 * (the holder when they began to wait, for the first release after)
	 */
	{ "sync.(*Mutex).unlockSlow", "internal/sync.(*Mutex).unlockSlow", 0, true, NULL, NULL, 0,
	  true },
};
#define FN_HOLDER 5 /* fns[] index of the last */
#define FN_SEMA119 4 /* fns[] index of the last */
_Static_assert(PM_ARRAY_SIZE(fns) == NFN, "a weight per function watched");

/* values per stack: contended locks, nanoseconds waited */
enum { V_COUNT, V_DELAY, V_HCOUNT, V_HDELAY, V_N }; /* V_H*: the holders' */

/* a goroutine inside lockSlow: its entry, waiting for its exit */
struct waiting {
	pid_t pid, tid;
	uint64_t g, mutex, time;
	uint64_t delay; /* once it ended */
	uint64_t charged; /* to a holder (V_H*) up to this time */
	unsigned fn;    /* in fns[] */
	uint32_t *ids;
	size_t n;
};

/*
 * A waiter: a (thread, mutex) pair.  A stack's tags are (pid, thread);
 * its samples' thread tag is WAITER_TAG | the pair's index, so that
 * waits for different mutexes at the same stack stay apart, and the
 * profile gets back the thread and a "mutex" label from the pair.
 */
struct waiter {
	pid_t tid;
	uint64_t mutex;
	char label[20]; /* "0x..." */
};

struct locks {
	struct waiting *w;
	size_t nw, cap;
	struct waiter *pair;
	size_t npair, pcap;
	uint32_t *slot; /* open addressing: pair index + 1, 0 = empty */
	size_t nslot;
	uint64_t samples, bad, unpaired_exit, lost, still, total_ns, unlabelled;
	/* the budget, live */
	int64_t budget;      /* hits per second, 0 = none */
	bool said, failed;
	bool en_on, ex_on;   /* the entry probes open, the exit probes */
	double f;            /* this period: the share of it the entries are open */
	uint64_t pstart, pend, on_at, off_at, xoff_at, hits0, rng;
	uint64_t seen; /* the latest sample time processed */
	uint64_t prov; /* when the current period's weights so far were last made */
	uint64_t on[NFN], on_ns[NFN]; /* each function's entry: open since, open this period */
	struct period *q;    /* made live, not yet taken by a sample */
	size_t nq, qcap;
	/* the weights (live and replay) */
	struct period *per;  /* known, by start */
	size_t nper, percap;
	struct waiting *done; /* waits ended, their period not final yet */
	size_t nd, dcap;
	bool sampled;        /* a period watched in part: the waits are a sample */
	double carry, scaled; /* the contentions' fraction not yet given, their scaled total */
	uint64_t unwatched_exit, others, nested, holders;
	double hcarry;
};

/*
 * The entry and exit probes on @path's function fns[@k]: 0, 1 when it is
 * optional and absent, -1 with @err.
 */
static int probes_for(const char *path, size_t k, struct pm_evt_spec *in, struct pm_evt_spec *out,
		      char *err, size_t errlen)
{
	char text[4200], perr[600];
	struct pm_elf *e = NULL;
	struct pm_go *go = NULL;
	const char *fn;
	const uint8_t *code;
	uint64_t entry = 0, ex;
	size_t len;
	int minor;
	int64_t probe_va;
	long fi = -1;
	int rc = -1;

	if (pm_gocode_open(path, 17, &e, &go, &minor, err, errlen) < 0)
		goto out;
	if (fns[k].upto && (unsigned)minor > fns[k].upto) {
		rc = 1; /* a later Go: not this way */
		goto out;
	}
	fn = minor >= 24 && fns[k].name24 ? fns[k].name24 : fns[k].name;
	fi = pm_go_func_by_name(go, fn);
	if (fi < 0 && fns[k].optional) {
		rc = 1;
		goto out;
	}
	if (fi < 0) {
		snprintf(err, errlen, "%s has no %s (it never locks a sync.Mutex)", path, fn);
		goto out;
	}
	entry = pm_go_func_entry(go, fi);
	snprintf(text, sizeof(text), "uprobe:%s:%s", path, fn);
	if (pm_evt_parse(text, in, perr, sizeof(perr)) < 0) {
		snprintf(err, errlen, "%s", perr);
		goto out;
	}
	probe_va = pm_elf_offset_to_vaddr(e, in->config2);
	if (fns[k].holder)
		goto args; /* its entry only */
	if (fns[k].callee) { /* the call of the sleep and its return, in the same segment */
		const char *cn = minor >= 24 && fns[k].callee24 ? fns[k].callee24 : fns[k].callee;
		long ci = pm_go_func_by_name(go, cn);
		uint64_t site = 0;

		code = pm_gocode_bytes(e, go, fi, PM_GO_MAX_FUNC_LEN, &len);
		if (ci >= 0 && code)
			site = pm_gocode_call_once(code, len, entry, pm_go_func_entry(go, ci));

		if (!site || probe_va <= 0 || site < (uint64_t)probe_va) {
			snprintf(err, errlen, "%s: the call of %s in %s not found in its code", path, cn,
				 fn);
			goto out;
		}
		in->config2 += site - (uint64_t)probe_va;
		*out = *in;
		out->config2 = in->config2 + 5;
		snprintf(in->symbol, sizeof(in->symbol), "%s+0x%" PRIx64, fn, site - entry);
		snprintf(in->name, sizeof(in->name), "uprobe:%.40s+0x%" PRIx64, fn, site - entry);
		snprintf(out->symbol, sizeof(out->symbol), "%s+0x%" PRIx64, fn, site + 5 - entry);
		snprintf(out->name, sizeof(out->name), "uprobe:%.40s+0x%" PRIx64, strrchr(fn, '.') + 1,
			 site + 5 - entry);
		goto args;
	}
	ex = probe_va > 0 ? pm_gocode_one_epilogue(e, entry, (uint64_t)probe_va) : 0;
	if (!ex || pm_go_find(go, ex) != fi) {
		snprintf(err, errlen, "%s: the return of %s not found in its code", path, fn);
		goto out;
	}
	*out = *in;
	out->config2 = in->config2 + (ex - (uint64_t)probe_va); /* the same segment */
	snprintf(out->symbol, sizeof(out->symbol), "%s+0x%" PRIx64, fn, ex - entry);
	snprintf(out->name, sizeof(out->name), "uprobe:%.40s+0x%" PRIx64, strrchr(fn, '.') + 1,
		 ex - entry);
args:
	snprintf(in->fetchargs, sizeof(in->fetchargs), "g=%%r14:u64 m=%%ax:u64");
	snprintf(out->fetchargs, sizeof(out->fetchargs), "g=%%r14:u64");
	pm_evt_every_hit(in, "contentions", "count"); /* every contended lock */
	pm_evt_every_hit(out, "contentions", "count");
	rc = 0;
out:
	pm_go_free(go);
	pm_elf_free(e);
	return rc;
}

/* --locks: the two probes on every Go binary of the targets (attached) or on the command. */
static int locks_add_events(struct pm_srcctx *ctx)
{
	char err[600] = "", *real;
	size_t i = 0;
	pid_t pid;
	bool dup;

	if (!pm_sc_cfg(ctx)->locks)
		return 0;
	while (pm_sc_next_exe(ctx, &i, &pid, &real, &dup)) {
		struct pm_evt_spec in, out;

		if (!real || dup) {
			free(real);
			continue;
		}
		for (size_t k = 0; k < PM_ARRAY_SIZE(fns); k++) {
			size_t e = pm_sc_nev(ctx);
			int rc;

			memset(&in, 0, sizeof(in));
			memset(&out, 0, sizeof(out));
			if (pm_sc_event_room(ctx) < 2) {
				pm_warn("locks: cannot watch the locks of %s (too many events)", real);
				break;
			}
			rc = probes_for(real, k, &in, &out, err, sizeof(err));
			if (rc == 1)
				continue; /* an RWMutex wait the program never has */
			if (rc < 0 || pm_evt_uprobe_define(&in, (unsigned)e, err, sizeof(err)) < 0) {
				pm_warn("locks: cannot watch the locks of %s (%s)", real, err);
				break;
			}
			if (fns[k].holder) { /* its entry only */
				pm_sc_set_cpuwide(ctx, e);
				pm_sc_add_event(ctx, &in, KIND_ENTRY + (int)k * KIND_FN);
				continue;
			}
			if (pm_evt_uprobe_define(&out, (unsigned)e + 1, err, sizeof(err)) < 0) {
				pm_evt_uprobe_undefine(&in);
				pm_warn("locks: cannot watch the locks of %s (%s)", real, err);
				break;
			}
			/* CPU-wide: closed and opened again by the budget (locks_timer()) */
			pm_sc_set_cpuwide(ctx, e);
			pm_sc_set_cpuwide(ctx, e + 1);
			pm_sc_add_event(ctx, &in, KIND_ENTRY + (int)k * KIND_FN);
			pm_sc_add_event(ctx, &out, KIND_EXIT + (int)k * KIND_FN);
		}
		free(real);
	}
	if (!pm_sc_has_events(ctx)) {
		pm_sc_err(ctx, PM_REC_ERR, "--locks: no Go program to watch (%s)",
			  !i ? "no target" : err[0] ? err : "no target's executable could be read");
		return -1;
	}
	return 0;
}

/* The exit's samples need no stack; the entry's the callchain's user part only. */
static void locks_adjust_attr(struct pm_srcctx *ctx, size_t e, struct perf_event_attr *a)
{
	a->exclude_callchain_kernel = 1;
	if (pm_sc_kind(ctx, e) & KIND_EXIT) { /* its time and goroutine are all it needs */
		a->exclude_callchain_user = 1;
		a->sample_stack_user = 8;
	} else if ((size_t)pm_sc_kind(ctx, e) / KIND_FN == FN_SEMA119 &&
		   a->sample_stack_user > 1024) {
		/*
		 * Go 1.19's semaphore function: most of its calls are lockSlow's,
		 * left out; the others' frames past the copy are read from the
		 * program (1 KiB: a quarter of the ring's room a call)
		 */
		a->sample_stack_user = 1024;
	}
}

/* Replay: the probes on fns[] (the entry's name is the function's, the exit's "LAST+0x..."). */
static bool locks_claim(struct pm_srcctx *ctx, size_t e, const char *name)
{
	if (!name || strncmp(name, "uprobe:", 7))
		return false;
	name += 7;
	for (size_t k = 0; k < PM_ARRAY_SIZE(fns); k++) {
		const char *last = strrchr(fns[k].name, '.') + 1, *plus = strchr(name, '+');
		size_t l = strlen(last);

		size_t ln = strlen(fns[k].name);

		if (!strcmp(name, fns[k].name) || (fns[k].name24 && !strcmp(name, fns[k].name24)) ||
		    (fns[k].callee && !strncmp(name, fns[k].name, ln) && name[ln] == '+')) {
			pm_sc_set_kind(ctx, e, KIND_ENTRY + (int)k * KIND_FN);
			return true;
		}
		if (plus && (size_t)(plus - name) == l && !strncmp(name, last, l)) {
			pm_sc_set_kind(ctx, e, KIND_EXIT + (int)k * KIND_FN);
			return true;
		}
	}
	return false;
}

static size_t locks_nvalues(struct pm_srcctx *ctx)
{
	(void)ctx;
	return V_N;
}

/* Open or close the entry (KIND_ENTRY) or exit (KIND_EXIT) probes. */
static void set_probes(struct pm_srcctx *ctx, struct locks *st, int which, bool on)
{
	for (size_t e = 0; e < pm_sc_nev(ctx); e++) {
		size_t k = (size_t)pm_sc_kind(ctx, e) / KIND_FN;
		uint64_t t0, t;

		if (!pm_sc_owns(ctx, e) || !(pm_sc_kind(ctx, e) & which) || k >= NFN)
			continue;
		/*
		 * the time each entry is counted: from the end of its open (on
		 * every CPU: a hit on a CPU not yet opened traps uncounted) to
		 * the start of its close
		 */
		t0 = pm_now_ns();
		if (which == KIND_ENTRY && !on && st->on[k])
			st->on_ns[k] += t0 > st->on[k] ? t0 - st->on[k] : 0;
		if (pm_sc_cpuwide_open(ctx, e, on) < 0 && !st->failed) {
			const char *msg = pm_sc_errmsg(ctx);

			pm_warn("locks: %s", msg[0] ? msg : "cannot open the probes again");
			st->failed = true;
		}
		t = pm_now_ns();
		if (which == KIND_ENTRY)
			st->on[k] = on ? t : 0;
	}
	if (which == KIND_ENTRY)
		st->en_on = on;
	else
		st->ex_on = on;
}

/* The hits of all the lock probes so far, as the kernel counted them. */
static uint64_t hits(const struct pm_srcctx *ctx)
{
	return pm_sc_cpuwide_hits_own(ctx);
}

static uint64_t rnd(struct locks *st)
{
	st->rng ^= st->rng << 13;
	st->rng ^= st->rng >> 7;
	st->rng ^= st->rng << 17;
	return st->rng;
}

/* A period made live: to the queue the next sample takes. */
static void push_period(struct locks *st, uint64_t start, const double *w, bool final)
{
	if (st->nq == st->qcap) {
		st->qcap = st->qcap ? 2 * st->qcap : 16;
		st->q = xrealloc(st->q, st->qcap * sizeof(*st->q));
	}
	st->q[st->nq].start = start;
	memcpy(st->q[st->nq].w, w, sizeof(st->q[st->nq].w));
	st->q[st->nq++].final = final;
}

/* Every function's weight @w. */
static void push_all(struct locks *st, uint64_t start, double w, bool final)
{
	double ws[NFN];

	for (size_t k = 0; k < NFN; k++)
		ws[k] = w;
	push_period(st, start, ws, final);
}

/*
 * A new period from @now, its entries open for a share @f of it: 100 ms,
 * longer when the share is small, so that the entries stay open at least
 * MIN_ON_NS (a window of a few ms would be mostly the time the kernel
 * takes to open and close the probes).
 */
static void new_period(struct pm_srcctx *ctx, struct locks *st, uint64_t now, double f)
{
	uint64_t on_len, grace, slack, len = PERIOD_NS;
	bool was = st->f < 1;

	if (f < 1 && (double)MIN_ON_NS / f > (double)len)
		len = (uint64_t)((double)MIN_ON_NS / f);
	if (len > MAX_PERIOD_NS)
		len = MAX_PERIOD_NS;
	st->pstart = now;
	st->pend = now + len;
	st->hits0 = hits(ctx);
	st->f = f;
	memset(st->on_ns, 0, sizeof(st->on_ns));
	if (f >= 1) {
		st->on_at = now;
		st->off_at = st->pend;
		if (was)
			push_all(st, now, 1, true);
		return;
	}
	on_len = (uint64_t)(f * (double)len);
	grace = on_len > MIN_GRACE_NS ? on_len : MIN_GRACE_NS; /* the exits cost too */
	if (grace > GRACE_NS)
		grace = GRACE_NS;
	if (grace > len - on_len)
		grace = len - on_len;
	slack = len - on_len - grace;
	st->on_at = now + (slack ? rnd(st) % slack : 0);
	st->off_at = st->on_at + on_len;
	if (st->xoff_at < st->off_at + grace)
		st->xoff_at = st->off_at + grace;
	push_all(st, now, 1 / f, false);
}

/*
 * Live, with a budget: the periods, the probes opened and closed in
 * each, the share of the next from the hits of the last.
 */
static uint64_t locks_timer(struct pm_srcctx *ctx, uint64_t now)
{
	struct locks *st = ctx->state;
	uint64_t next;
	bool en, ex;

	if (pm_sc_replay(ctx))
		return 0;
	if (!st->pstart) {
		st->budget = pm_sc_cfg(ctx)->locks_max_rate < 0 ? 0
			     : pm_sc_cfg(ctx)->locks_max_rate ? pm_sc_cfg(ctx)->locks_max_rate
						      : PM_RECORD_DEFAULT_LOCKS_MAX_RATE;
		if (!st->budget)
			return 0;
		st->rng = now | 1;
		st->en_on = st->ex_on = true; /* opened by the attach */
		st->f = 1;
		new_period(ctx, st, now, 1);
		return st->pend;
	}
	if (!st->budget)
		return 0;
	if (now >= st->pend) {
		uint64_t h = hits(ctx);
		double rate = (double)(h - st->hits0) * 1e9 / (double)(now - st->pstart), f;

		f = rate > 0 ? st->f * (double)st->budget / rate : 1;
		if (f > 2 * st->f)
			f = 2 * st->f;
		if (f < MIN_FRACTION)
			f = MIN_FRACTION;
		if (f < 1 && !st->said) {
			pm_warn("locks: %.0f probe hits/s, over the budget of %" PRId64
				" (--locks-max-rate): the probes watch part of the time, contentions "
				"and delay scaled (the profile's comments say how much)",
				rate, st->budget);
			st->said = true;
		}
		now = pm_now_ns();
		if (st->f < 1) { /* the period's weights as they were: its length over the time watched */
			double w[NFN];

			for (size_t k = 0; k < NFN; k++) {
				if (st->on[k]) { /* open across the boundary: each period its part */
					st->on_ns[k] += now - st->on[k];
					st->on[k] = now;
				}
				w[k] = st->on_ns[k] ? (double)(now - st->pstart) / (double)st->on_ns[k]
						    : 1 / st->f;
			}
			push_period(st, st->pstart, w, true);
		} else {
			for (size_t k = 0; k < NFN; k++)
				if (st->on[k])
					st->on[k] = now;
		}
		new_period(ctx, st, now, f < 1 ? f : 1);
	}
	/*
	 * the entries open in [on_at, off_at), the exits until xoff_at past it
	 * and, to the period's end, while a wait begun in it is still seen
	 * waiting (or the drain has not yet reached its entries' close)
	 */
	en = st->f >= 1 || (now >= st->on_at && now < st->off_at);
	ex = en || (now >= st->on_at && now < st->xoff_at);
	if (!en && !ex && st->ex_on && now >= st->on_at && now < st->pend) {
		bool waiting = st->seen < st->off_at;

		for (size_t i = 0; i < st->nw && !waiting; i++)
			waiting = st->w[i].time >= st->on_at;
		ex = waiting;
	}
	if (ex && !st->ex_on)
		set_probes(ctx, st, KIND_EXIT, true);
	if (en && !st->en_on)
		set_probes(ctx, st, KIND_ENTRY, true);
	if (!en && st->en_on)
		set_probes(ctx, st, KIND_ENTRY, false);
	if (!ex && st->ex_on)
		set_probes(ctx, st, KIND_EXIT, false);
	/*
	 * a period watched in part, not over: its weights so far, so that the
	 * waits of the last one (the program ended in it) weigh what it was
	 */
	if (st->f < 1 && now >= st->on_at && now >= st->prov + PROVISIONAL_NS) {
		double w[NFN];

		for (size_t k = 0; k < NFN; k++) {
			uint64_t on = st->on_ns[k] + (st->on[k] && now > st->on[k] ? now - st->on[k] : 0);

			w[k] = on ? (double)(now - st->pstart) / (double)on : 1 / st->f;
			if (w[k] < 1)
				w[k] = 1;
		}
		push_period(st, st->pstart, w, false);
		st->prov = now;
	}
	next = st->pend;
	if (st->f < 1) {
		if (now < st->on_at && st->on_at < next)
			next = st->on_at;
		else if (now < st->off_at && st->off_at < next)
			next = st->off_at;
		else if (now < st->xoff_at && st->xoff_at < next)
			next = st->xoff_at;
	}
	return next;
}

/* The period a wait begun at @t is in; NULL before the first (weight 1). */
static const struct period *period_of(const struct locks *st, uint64_t t)
{
	size_t lo = 0, hi = st->nper;

	while (lo < hi) { /* the last period starting at or before t */
		size_t mid = (lo + hi) / 2;

		if (st->per[mid].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &st->per[lo - 1] : NULL;
}

/*
 * The periods made since the last sample (live: the queue; at replay:
 * the capture's log), into the known ones.
 */
static void take_periods(struct pm_srcctx *ctx, struct locks *st, pid_t pid)
{
	uint64_t n = pm_sc_replay(ctx) ? 0 : st->nq;

	if (pm_sc_value(ctx, pid, PM_CAP_KEY_LOCKS_PERIODS, &n, sizeof(n)) < 0 || n > 1000000)
		n = 0;
	for (uint64_t i = 0; i < n; i++) {
		struct period p;

		if (!pm_sc_replay(ctx))
			p = st->q[i];
		else
			memset(&p, 0, sizeof(p));
		if (pm_sc_value(ctx, pid, PM_CAP_KEY_LOCKS_PERIODS + 8, &p, sizeof(p)) < 0)
			continue;
		for (size_t k = 0; k < NFN; k++)
			if (!(p.w[k] >= 1 && p.w[k] <= 1e6))
				p.w[k] = 1;
		if (st->nper && st->per[st->nper - 1].start == p.start) {
			st->per[st->nper - 1] = p;
		} else if (!st->nper || p.start > st->per[st->nper - 1].start) {
			if (st->nper == st->percap) {
				st->percap = st->percap ? 2 * st->percap : 64;
				st->per = xrealloc(st->per, st->percap * sizeof(*st->per));
			}
			st->per[st->nper++] = p;
		}
		for (size_t k = 0; k < NFN; k++)
			st->sampled = st->sampled || p.w[k] > 1;
	}
	st->nq = 0;
}

static struct waiting *find(struct locks *st, pid_t pid, uint64_t g)
{
	for (size_t i = 0; i < st->nw; i++)
		if (st->w[i].g == g && st->w[i].pid == pid)
			return &st->w[i];
	return NULL;
}

static size_t pair_hash(pid_t tid, uint64_t mutex, size_t nslot)
{
	uint64_t h = (mutex ^ ((uint64_t)(uint32_t)tid << 40)) * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 20) & (nslot - 1);
}

/* The thread tag of a wait by @tid for @mutex: WAITER_TAG | its pair; @tid when full. */
static uint32_t waiter_tag(struct locks *st, pid_t tid, uint64_t mutex)
{
	size_t h;
	struct waiter *w;

	if (!st->nslot || 2 * (st->npair + 1) > st->nslot) {
		size_t n = st->nslot ? 2 * st->nslot : 1024;
		uint32_t *slot = xcalloc(n, sizeof(*slot));

		for (size_t i = 0; i < st->npair; i++) {
			for (h = pair_hash(st->pair[i].tid, st->pair[i].mutex, n); slot[h];
			     h = (h + 1) & (n - 1))
				;
			slot[h] = (uint32_t)i + 1;
		}
		free(st->slot);
		st->slot = slot;
		st->nslot = n;
	}
	for (h = pair_hash(tid, mutex, st->nslot); st->slot[h]; h = (h + 1) & (st->nslot - 1)) {
		w = &st->pair[st->slot[h] - 1];
		if (w->tid == tid && w->mutex == mutex)
			return WAITER_TAG | (st->slot[h] - 1);
	}
	if (st->npair >= MAX_WAITERS) {
		st->unlabelled++;
		return (uint32_t)tid;
	}
	if (st->npair == st->pcap) {
		st->pcap = st->pcap ? 2 * st->pcap : 256;
		st->pair = xrealloc(st->pair, st->pcap * sizeof(*st->pair));
	}
	w = &st->pair[st->npair];
	w->tid = tid;
	w->mutex = mutex;
	if (mutex)
		snprintf(w->label, sizeof(w->label), "0x%" PRIx64, mutex);
	else
		snprintf(w->label, sizeof(w->label), "runtime");
	st->slot[h] = (uint32_t)++st->npair;
	return WAITER_TAG | (uint32_t)(st->npair - 1);
}

/*
 * Nanoseconds weighed, as a value: a hostile capture's times make waits of
 * up to 2^64 ns, past any int64 once weighed: bounded.
 */
static int64_t ns_value(double ns)
{
	return ns < 0x1p62 ? (int64_t)ns : (int64_t)1 << 62;
}

static void drop(struct locks *st, struct waiting *w)
{
	free(w->ids);
	*w = st->w[--st->nw];
}

/* The sample's stack, goroutine, labels and creators into pm_sc_ids(): their count. */
static size_t walk(struct pm_srcctx *ctx, const struct pm_rec_sample *smp)
{
	struct pm_walk w;
	size_t k;

	pm_sc_walk(ctx, smp, &w);
	k = pm_sc_stack_ids(ctx, smp, &w);
	pm_sc_check_limits(ctx, w.status);
	return k;
}

/*
 * A release with waiters (fns[FN_HOLDER]): the releasing goroutine's
 * stack, one holder_contentions and as holder_delay the time each
 * watched waiter for this Mutex waited since the last release it saw (or
 * its start), weighing as that wait -- Go's mutex profile's way.
 */
static void holder_sample(struct pm_srcctx *ctx, struct locks *st, const struct pm_rec_sample *smp)
{
	int64_t v[V_N] = { 0 };
	uint64_t m = pm_le64(smp->raw + 24);
	double n = 0, ns = 0;
	size_t k, nw = 0;

	for (size_t i = 0; i < st->nw; i++) {
		struct waiting *wt = &st->w[i];
		const struct period *p;
		uint64_t from;
		double wgt;

		if (wt->mutex != m || wt->fn != 0 || wt->pid != (pid_t)smp->pid || wt->time >= smp->time)
			continue;
		from = wt->charged > wt->time ? wt->charged : wt->time;
		p = period_of(st, wt->time);
		wgt = p ? p->w[0] : 1;
		n += wgt;
		nw++;
		ns += wgt * (double)(smp->time > from ? smp->time - from : 0);
		wt->charged = smp->time;
	}
	if (n <= 0) {
		pm_sc_keep(ctx, 0);
		return;
	}
	k = walk(ctx, smp);
	st->hcarry += n / (double)nw; /* one release, weighing as its waiters on average */
	v[V_HCOUNT] = (int64_t)floor(st->hcarry);
	st->hcarry -= (double)v[V_HCOUNT];
	v[V_HDELAY] = ns_value(ns);
	st->holders++;
	pm_sc_add_stack(ctx, (uint32_t)smp->pid, waiter_tag(st, (pid_t)smp->tid, m), pm_sc_ids(ctx),
			k, v);
}

/* The entry: the waiter's stack, goroutine, labels and creators, kept until its exit. */
static void entry_sample(struct pm_srcctx *ctx, struct locks *st, const struct pm_rec_sample *smp,
			 size_t fn)
{
	struct waiting *wt;
	uint64_t g = pm_le64(smp->raw + 16);
	size_t k;

	wt = find(st, (pid_t)smp->pid, g);
	if (wt && wt->fn != fn) {
		/*
		 * inside another wait watched: a runtime lock's sleep in the
		 * semaphore of a lockSlow, or (Go 1.19) lockSlow's own call of
		 * the semaphore function: its time is that wait's already
		 */
		st->nested++;
		return;
	}
	k = walk(ctx, smp);
	wt = find(st, (pid_t)smp->pid, g);
	if (wt) { /* its exit was lost */
		st->lost++;
		drop(st, wt);
	}
	if (st->nw >= MAX_WAITING) {
		st->lost++;
		return;
	}
	if (st->nw == st->cap) {
		st->cap = st->cap ? 2 * st->cap : 64;
		st->w = xrealloc(st->w, st->cap * sizeof(*st->w));
	}
	wt = &st->w[st->nw++];
	wt->pid = (pid_t)smp->pid;
	wt->tid = (pid_t)smp->tid;
	wt->g = g;
	wt->charged = 0;
	wt->mutex = pm_le64(smp->raw + 24) - fns[fn].off; /* the lock's own address */
	if (fns[fn].callee && pm_le64(smp->raw + 24) == UINT64_MAX)
		wt->mutex = 0; /* semasleep(-1): the runtime lock's address is not known */
	wt->time = smp->time;
	wt->fn = (unsigned)fn;
	wt->n = k;
	wt->ids = xmalloc(k * sizeof(*wt->ids) + 1);
	memcpy(wt->ids, pm_sc_ids(ctx), k * sizeof(*wt->ids));
}
/* A wait ended, into the profile, weighing @w. */
static void add_wait(struct pm_srcctx *ctx, struct locks *st, const struct waiting *d, double w)
{
	int64_t v[V_N] = { 0 };

	/* scaled: the fractions carried to the next wait, so that the total stays */
	st->carry += w;
	st->scaled += w;
	v[V_COUNT] = (int64_t)floor(st->carry);
	st->carry -= (double)v[V_COUNT];
	v[V_DELAY] = ns_value((double)d->delay * w);
	st->samples++;
	st->total_ns += d->delay;
	pm_sc_add_stack(ctx, (uint32_t)d->pid, waiter_tag(st, d->tid, d->mutex), d->ids, d->n, v);
}

/* The waits ended whose period is final (@all: every one, as planned else) into the profile. */
static void flush(struct pm_srcctx *ctx, struct locks *st, bool all)
{
	for (size_t i = 0; i < st->nd;) {
		const struct period *p = period_of(st, st->done[i].time);

		if (p && !p->final && !all) {
			i++;
			continue;
		}
		add_wait(ctx, st, &st->done[i], p ? p->w[st->done[i].fn] : 1);
		free(st->done[i].ids);
		memmove(&st->done[i], &st->done[i + 1], (st->nd - i - 1) * sizeof(*st->done));
		st->nd--;
	}
}

static void locks_sample(struct pm_srcctx *ctx, size_t ev, const struct pm_rec_sample *smp)
{
	struct locks *st = ctx->state;
	struct waiting *wt;

	size_t k = (size_t)pm_sc_kind(ctx, ev) / KIND_FN;

	if (!smp->raw || k >= PM_ARRAY_SIZE(fns) ||
	    smp->raw_size < (pm_sc_kind(ctx, ev) & KIND_ENTRY ? RAW_ENTRY : RAW_EXIT)) {
		st->bad++;
		return;
	}
	take_periods(ctx, st, (pid_t)smp->pid);
	if (smp->time > st->seen)
		st->seen = smp->time;
	if (st->nd)
		flush(ctx, st, st->nd >= MAX_WAITING);
	/* the probes are CPU-wide: another process running the same binary is not ours */
	if (!pm_sc_ours(ctx, smp, PM_CAP_KEY_LOCKS_PERIODS + 48)) {
		st->others++;
		pm_sc_keep(ctx, 0);
		return;
	}
	if ((pm_sc_kind(ctx, ev) & KIND_ENTRY) && fns[k].holder) {
		holder_sample(ctx, st, smp);
		return;
	}
	if (pm_sc_kind(ctx, ev) & KIND_ENTRY) {
		entry_sample(ctx, st, smp, k);
		return;
	}
	pm_sc_keep(ctx, 0);
	wt = find(st, (pid_t)smp->pid, pm_le64(smp->raw + 16));
	if (wt && wt->fn != k)
		return; /* the exit of a wait inside another (entry_sample()) */
	if (!wt) { /* it began to wait before the recording, or while the entries were closed */
		if (st->sampled)
			st->unwatched_exit++;
		else
			st->unpaired_exit++;
		return;
	}
	pm_sc_count_sample(ctx);
	wt->delay = smp->time > wt->time ? smp->time - wt->time : 0;
	{
		const struct period *p = period_of(st, wt->time);

		if (!p || p->final) { /* its weight known: now */
			add_wait(ctx, st, wt, p ? p->w[wt->fn] : 1);
			drop(st, wt);
			return;
		}
	}
	if (st->nd == st->dcap) {
		st->dcap = st->dcap ? 2 * st->dcap : 64;
		st->done = xrealloc(st->done, st->dcap * sizeof(*st->done));
	}
	st->done[st->nd++] = *wt;
	*wt = st->w[--st->nw]; /* its ids go with it */
}

static void locks_profile_head(struct pm_srcctx *ctx, struct pm_profile *p)
{
	struct locks *st = ctx->state;

	flush(ctx, st, true); /* the last period's waits: as planned */
	pm_prof_add_sample_type(p, "contentions", "count");
	pm_prof_add_sample_type(p, "delay", "nanoseconds");
	/* the holders': the releases' stacks, charged with the waiting they ended (Go's mutex profile) */
	pm_prof_add_sample_type(p, "holder_contentions", "count");
	pm_prof_add_sample_type(p, "holder_delay", "nanoseconds");
	if (!pm_sc_nuser(ctx)) { /* locks alone: a mutex profile's period and default */
		pm_prof_set_default_type(p, pm_prof_find_sample_type(p, "delay"));
		pm_prof_set_period(p, "contentions", "count", 1);
	}
}

/* An interval ended: its comments' counts begin again. */
static void locks_cut(struct pm_srcctx *ctx)
{
	struct locks *st = ctx->state;

	st->samples = st->bad = st->unpaired_exit = st->lost = st->still = st->total_ns = 0;
	st->unlabelled = st->unwatched_exit = st->others = st->nested = 0;
	st->scaled = 0;
}

static void locks_profile_tail(struct pm_srcctx *ctx, struct pm_profile *p)
{
	struct locks *st = ctx->state;
	char *c;

	/*
	 * the waits going on are kept (locks_end() drops them): at an
	 * agent's cut, each ends in a later interval and is counted there
	 */
	st->still = st->nw;
	c = xasprintf("locks: %" PRIu64 " contended locks (sync.Mutex, RWMutex, runtime-lock sleeps), %" PRIu64
		      " ns waited; not counted: %" PRIu64 " still waiting at the end, %" PRIu64
		      " waiting before the start, %" PRIu64 " lost, %" PRIu64 " unreadable; %" PRIu64
		      " without a mutex label; %" PRIu64 " inside another wait",
		      st->samples, st->total_ns, st->still, st->unpaired_exit, st->lost, st->bad,
		      st->unlabelled, st->nested);
	pm_prof_add_comment(p, c);
	free(c);
	if (st->sampled) {
		c = xasprintf("locks: sampled to bound the probes' cost (--locks-max-rate): %" PRIu64
			      " waits watched of an estimated %.0f, an effective rate of %.1f %%; "
			      "contentions and delay scaled by the inverse; %" PRIu64
			      " waits ended unwatched",
			      st->samples, st->scaled,
			      st->scaled > 0 ? 100.0 * (double)st->samples / st->scaled : 0.0,
			      st->unwatched_exit);
		pm_prof_add_comment(p, c);
		free(c);
	}
	if (st->others) {
		c = xasprintf("locks: %" PRIu64 " probe hits in other processes of the same "
			      "binary, left out", st->others);
		pm_prof_add_comment(p, c);
		free(c);
	}
}

/* contentions and delay; the labels as the CPU's, the thread's and a "mutex" from the pair. */
static void locks_profile_stack(struct pm_srcctx *ctx, struct pm_profile *p, const uint64_t *locs,
				size_t n, const int64_t *v, struct pm_prof_label *lab0, size_t nlab)
{
	struct locks *st = ctx->state;
	struct pm_prof_label lab[2 + PM_GOR_MAX_LABELS + 4];
	int64_t val[PM_SES_VALUES_MAX + 4];
	long ic = pm_prof_find_sample_type(p, "contentions"),
	     id = pm_prof_find_sample_type(p, "delay"),
	     ihc = pm_prof_find_sample_type(p, "holder_contentions"),
	     ihd = pm_prof_find_sample_type(p, "holder_delay");
	size_t nt = pm_prof_nsample_types(p);

	if ((!v[V_COUNT] && !v[V_DELAY] && !v[V_HCOUNT] && !v[V_HDELAY]) || ic < 0 || id < 0 ||
	    ihc < 0 || ihd < 0 || nt > PM_ARRAY_SIZE(val) || nlab + 1 > PM_ARRAY_SIZE(lab))
		return;
	memcpy(lab, lab0, nlab * sizeof(*lab));
	for (size_t i = 0; i < nlab; i++) {
		const struct waiter *w;

		if (strcmp(lab[i].key, "thread") || lab[i].str || lab[i].num < 0 ||
		    !((uint64_t)lab[i].num & WAITER_TAG) ||
		    ((uint64_t)lab[i].num & ~(uint64_t)WAITER_TAG) >= st->npair)
			continue;
		w = &st->pair[(uint64_t)lab[i].num & ~(uint64_t)WAITER_TAG];
		lab[i].num = w->tid;
		memset(&lab[nlab], 0, sizeof(lab[nlab]));
		lab[nlab].key = "mutex";
		lab[nlab++].str = w->label;
		break;
	}
	memset(val, 0, sizeof(val));
	val[ic] = v[V_COUNT];
	val[id] = v[V_DELAY];
	val[ihc] = v[V_HCOUNT];
	val[ihd] = v[V_HDELAY];
	pm_prof_add(p, locs, n, val, lab, nlab);
}

static void locks_end(struct pm_srcctx *ctx)
{
	struct locks *st = ctx->state;

	while (st->nw)
		drop(st, &st->w[st->nw - 1]);
	free(st->w);
	while (st->nd)
		free(st->done[--st->nd].ids);
	free(st->done);
	free(st->per);
	free(st->q);
	free(st->pair);
	free(st->slot);
}

const struct pm_source pm_src_locks = {
	.name = "locks",
	.state_size = sizeof(struct locks),
	.add_events = locks_add_events,
	.unrated = true,
	.raw = true,
	.ordered = true, /* an entry before the exit of its goroutine, on any thread */
	.adjust_attr = locks_adjust_attr,
	.claim = locks_claim,
	.nvalues = locks_nvalues,
	.sample = locks_sample,
	.timer = locks_timer,
	.profile_head = locks_profile_head,
	.profile_tail = locks_profile_tail,
	.cut = locks_cut,
	.profile_stack = locks_profile_stack,
	.end = locks_end,
};
