/* src_locks: contended sync.Mutex locks, --locks (src_locks.h). */
#include "src_locks.h"

#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach.h"
#include "capture.h"
#include "elfimg.h"
#include "gopclntab.h"
#include "goroutine.h"
#include "maps.h"
#include "profile.h"
#include "session.h"
#include "stacks.h"
#include "target.h"

#define RAW_EXIT 24  /* trace entry (8), probe ip (8), g (8) ... */
#define RAW_ENTRY 32 /* ... and the mutex (8) at the entry */
#define MAX_WAITING 65536 /* goroutines waiting at once, kept; more are counted lost */
#define MAX_WAITERS 65536 /* (thread, mutex) pairs labelled; more lose the mutex label */
#define WAITER_TAG 0x80000000u /* a stack's thread tag with it: WAITER_TAG | pair */

/* s->kind[e]: which probe, KIND_EXIT or not, and which function (KIND_FN * index) */
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
} fns[] = {
	{ "sync.(*Mutex).lockSlow", "internal/sync.(*Mutex).lockSlow", 0, false },
	{ "sync.runtime_SemacquireRWMutexR", NULL, 12, true }, /* RLock waits for a writer */
	{ "sync.runtime_SemacquireRWMutex", NULL, 8, true },   /* Lock waits for the readers */
};

/* values per stack: contended locks, nanoseconds waited */
enum { V_COUNT, V_DELAY, V_N };

/* a goroutine inside lockSlow: its entry, waiting for its exit */
struct waiting {
	pid_t pid, tid;
	uint64_t g, mutex, time;
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
};

/* Length of "add rsp, imm; [pop rbp;] ret" at @b (with @left bytes), 0 if not one. */
static size_t epilogue_len(const uint8_t *b, size_t left)
{
	size_t i;

	if (left >= 4 && b[0] == 0x48 && b[1] == 0x83 && b[2] == 0xc4)
		i = 4;
	else if (left >= 7 && b[0] == 0x48 && b[1] == 0x81 && b[2] == 0xc4)
		i = 7;
	else
		return 0;
	if (i < left && b[i] == 0x5d)
		i++;
	return i < left && b[i] == 0xc3 ? i + 1 : 0;
}

/*
 * The exit probe's address: lockSlow's one epilogue.  The stack check's
 * jbe (right before @probe_va, the entry probe) jumps to the morestack
 * call that the compiler puts right after the function's last block; that
 * block ends with the epilogue, and it must be the only one in the
 * function (else 0: the returns are not all known).
 */
static uint64_t exit_addr(const struct pm_elf *e, uint64_t entry, uint64_t probe_va)
{
	const uint8_t *b;
	uint64_t target, hit = 0;
	unsigned hits = 0;

	if (probe_va < entry + 6 || probe_va - entry > 32)
		return 0;
	b = pm_elf_vaddr_bytes(e, probe_va - 6, 6);
	if (!b)
		return 0;
	if (b[0] == 0x0f && b[1] == 0x86) {
		int32_t rel;

		memcpy(&rel, b + 2, 4);
		target = probe_va + (uint64_t)(int64_t)rel;
	} else if (b[4] == 0x76) {
		target = probe_va + (uint64_t)(int64_t)(int8_t)b[5];
	} else {
		return 0;
	}
	if (target <= probe_va || target - probe_va > 65536)
		return 0;
	b = pm_elf_vaddr_bytes(e, entry, (size_t)(target - entry));
	if (!b || b[target - entry - 1] != 0xc3)
		return 0;
	for (uint64_t i = probe_va - entry; i < target - entry; i++) {
		size_t l = epilogue_len(b + i, (size_t)(target - entry - i));

		if (l && entry + i + l == target)
			hit = entry + i;
		hits += l != 0;
	}
	return hits == 1 ? hit : 0;
}

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
	const char *ver, *fn;
	unsigned major = 0, minor = 0;
	uint64_t entry = 0, ex;
	int64_t probe_va;
	long fi = -1;
	int rc = -1;

	e = pm_elf_open(path);
	if (!e || pm_elf_machine(e) != EM_X86_64 || pm_go_open(&go, e) != 0) {
		snprintf(err, errlen, "%s is not a Go program for x86-64", path);
		goto out;
	}
	ver = pm_go_version(go);
	if (!ver || sscanf(ver, "go%u.%u", &major, &minor) != 2 || major != 1 || minor < 17) {
		snprintf(err, errlen, "Go version '%s' of %s is not known", ver ? ver : "", path);
		goto out;
	}
	fn = minor >= 24 && fns[k].name24 ? fns[k].name24 : fns[k].name;
	for (size_t i = 0; i < pm_go_nfuncs(go) && i < 2000000 && fi < 0; i++) {
		const char *f = pm_go_func_name(go, (long)i);

		if (f && !strcmp(f, fn))
			fi = (long)i;
	}
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
	ex = probe_va > 0 ? exit_addr(e, entry, (uint64_t)probe_va) : 0;
	if (!ex || pm_go_find(go, ex) != fi) {
		snprintf(err, errlen, "%s: the return of %s not found in its code", path, fn);
		goto out;
	}
	*out = *in;
	out->config2 = in->config2 + (ex - (uint64_t)probe_va); /* the same segment */
	snprintf(out->symbol, sizeof(out->symbol), "%s+0x%" PRIx64, fn, ex - entry);
	snprintf(out->name, sizeof(out->name), "uprobe:%.40s+0x%" PRIx64, strrchr(fn, '.') + 1,
		 ex - entry);
	snprintf(in->fetchargs, sizeof(in->fetchargs), "g=%%r14:u64 m=%%ax:u64");
	snprintf(out->fetchargs, sizeof(out->fetchargs), "g=%%r14:u64");
	for (int i = 0; i < 2; i++) {
		struct pm_evt_spec *sp = i ? out : in;

		snprintf(sp->value_type, sizeof(sp->value_type), "%s", "contentions");
		snprintf(sp->value_unit, sizeof(sp->value_unit), "%s", "count");
		sp->period = 1; /* every contended lock, whatever -F says */
		sp->freq = 0;
	}
	rc = 0;
out:
	pm_go_free(go);
	pm_elf_free(e);
	return rc;
}

/* --locks: the two probes on every Go binary of the targets (attached) or on the command. */
static int locks_add_events(struct session *s)
{
	char err[600] = "";
	size_t i, e, first = s->nev, n = s->attach ? pm_att_nprocs(s) : 1;

	if (!s->cfg->locks)
		return 0;
	for (i = 0; i < n; i++) {
		struct pm_evt_spec in, out;
		char exe[64], *real;
		bool dup = false;

		if (s->attach) {
			snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pm_att_pid(s, i));
			real = realpath(exe, NULL);
		} else {
			real = s->cfg->argv ? pm_target_resolve(s->cfg->argv[0]) : NULL;
		}
		for (e = first; real && e < s->nev; e++)
			dup = dup || !strcmp(s->spec[e].path, real);
		if (!real || dup) {
			free(real);
			continue;
		}
		for (size_t k = 0; k < PM_ARRAY_SIZE(fns); k++) {
			int rc;

			memset(&in, 0, sizeof(in));
			memset(&out, 0, sizeof(out));
			if (s->nev + 2 > PM_ARRAY_SIZE(s->spec)) {
				pm_warn("locks: cannot watch the locks of %s (too many events)", real);
				break;
			}
			rc = probes_for(real, k, &in, &out, err, sizeof(err));
			if (rc == 1)
				continue; /* an RWMutex wait the program never has */
			if (rc < 0 || pm_evt_uprobe_define(&in, (unsigned)s->nev, err, sizeof(err)) < 0) {
				pm_warn("locks: cannot watch the locks of %s (%s)", real, err);
				break;
			}
			if (pm_evt_uprobe_define(&out, (unsigned)s->nev + 1, err, sizeof(err)) < 0) {
				pm_evt_uprobe_undefine(&in);
				pm_warn("locks: cannot watch the locks of %s (%s)", real, err);
				break;
			}
			pm_src_add_event(s, &pm_src_locks, &in, KIND_ENTRY + (int)k * KIND_FN);
			pm_src_add_event(s, &pm_src_locks, &out, KIND_EXIT + (int)k * KIND_FN);
		}
		free(real);
	}
	if (!pm_src_has_events(s, &pm_src_locks)) {
		pm_ses_err(s->res, PM_REC_ERR, "--locks: no Go program to watch (%s)",
			   !n ? "no target" : err[0] ? err : "no target's executable could be read");
		return -1;
	}
	return 0;
}

/* The exit's samples need no stack; the entry's the callchain's user part only. */
static void locks_adjust_attr(struct session *s, size_t e, struct perf_event_attr *a)
{
	a->exclude_callchain_kernel = 1;
	if (s->kind[e] & KIND_EXIT) { /* its time and goroutine are all it needs */
		a->exclude_callchain_user = 1;
		a->sample_stack_user = 8;
	}
}

/* Replay: the probes on fns[] (the entry's name is the function's, the exit's "LAST+0x..."). */
static bool locks_claim(struct session *s, size_t e, const char *name)
{
	if (!name || strncmp(name, "uprobe:", 7))
		return false;
	name += 7;
	for (size_t k = 0; k < PM_ARRAY_SIZE(fns); k++) {
		const char *last = strrchr(fns[k].name, '.') + 1, *plus = strchr(name, '+');
		size_t l = strlen(last);

		if (!strcmp(name, fns[k].name) || (fns[k].name24 && !strcmp(name, fns[k].name24))) {
			s->kind[e] = KIND_ENTRY + (int)k * KIND_FN;
			return true;
		}
		if (plus && (size_t)(plus - name) == l && !strncmp(name, last, l)) {
			s->kind[e] = KIND_EXIT + (int)k * KIND_FN;
			return true;
		}
	}
	return false;
}

static size_t locks_nvalues(const struct session *s)
{
	(void)s;
	return V_N;
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
	snprintf(w->label, sizeof(w->label), "0x%" PRIx64, mutex);
	st->slot[h] = (uint32_t)++st->npair;
	return WAITER_TAG | (uint32_t)(st->npair - 1);
}

static void drop(struct locks *st, struct waiting *w)
{
	free(w->ids);
	*w = st->w[--st->nw];
}

/* The entry: the waiter's stack, goroutine, labels and creators, kept until its exit. */
static void entry_sample(struct session *s, struct locks *st, const struct pm_rec_sample *smp,
			 unsigned off)
{
	struct pm_walk w;
	struct waiting *wt;
	uint64_t g = pm_le64(smp->raw + 16);
	size_t n, k = 0;

	pm_ses_walk(s, smp, &w);
	n = w.n;
	if (s->cap)
		s->keep = pm_cap_keep(s, &w.in, w.pid, n, w.status);
	for (size_t i = 0; i < n; i++) {
		const struct pm_map *m = pm_maps_find(s->maps, w.pid, s->pcs[i]);
		struct pm_stack_frame f;

		f.map_id = m ? m->id : PM_STACKS_NO_MAP;
		f.is_return = i > 0;
		f.addr = s->pcs[i];
		f.vaddr = m && m->sym ? (uint64_t)((int64_t)s->pcs[i] - m->bias) : s->pcs[i];
		s->ids[k++] = pm_stacks_frame(s->stacks, &f);
	}
	if (w.status & PM_UNW_COMPLETE) {
		s->complete++;
	} else {
		s->ids[k++] = s->cut_frame;
		s->res->cut++;
	}
	if (s->gor && (w.in.regs_valid & (1u << PM_DW_R14)))
		k = pm_gor_sample(s->gor, s->maps, s->stacks, w.pid, (pid_t)smp->tid, smp->time,
				  w.in.regs[PM_DW_R14], w.in.sp, w.in.stack, w.in.stack_len, s->pcs, n,
				  w.status, w.switch_bp, s->ids, k, PM_ARRAY_SIZE(s->ids));
	pm_reg_check_limits(s->reg, s->stacks, w.status);
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
	wt->mutex = pm_le64(smp->raw + 24) - off; /* the lock's own address */
	wt->time = smp->time;
	wt->n = k;
	wt->ids = xmalloc(k * sizeof(*wt->ids) + 1);
	memcpy(wt->ids, s->ids, k * sizeof(*wt->ids));
}

static void locks_sample(struct session *s, size_t ev, const struct pm_rec_sample *smp)
{
	struct locks *st = pm_src_state(s, &pm_src_locks);
	int64_t values[PM_SES_VALUES_MAX];
	int64_t *v = values + s->val_off[pm_src_index(&pm_src_locks)];
	struct waiting *wt;

	size_t k = (size_t)s->kind[ev] / KIND_FN;

	if (!smp->raw || k >= PM_ARRAY_SIZE(fns) ||
	    smp->raw_size < (s->kind[ev] & KIND_ENTRY ? RAW_ENTRY : RAW_EXIT)) {
		st->bad++;
		return;
	}
	if (s->kind[ev] & KIND_ENTRY) {
		entry_sample(s, st, smp, fns[k].off);
		return;
	}
	if (s->cap)
		s->keep = 0;
	wt = find(st, (pid_t)smp->pid, pm_le64(smp->raw + 16));
	if (!wt) { /* it began to wait before the recording */
		st->unpaired_exit++;
		return;
	}
	memset(values, 0, s->nvalues * sizeof(values[0]));
	v[V_COUNT] = 1;
	v[V_DELAY] = smp->time > wt->time ? (int64_t)(smp->time - wt->time) : 0;
	st->samples++;
	st->total_ns += (uint64_t)v[V_DELAY];
	s->res->samples++;
	pm_stacks_add_tagged(s->stacks, (uint32_t)wt->pid, waiter_tag(st, wt->tid, wt->mutex),
			     wt->ids, wt->n, values);
	drop(st, wt);
}

static void locks_profile_head(struct session *s, struct pm_profile *p)
{
	if (!pm_src_has_events(s, &pm_src_locks))
		return;
	pm_prof_add_sample_type(p, "contentions", "count");
	pm_prof_add_sample_type(p, "delay", "nanoseconds");
	if (!s->nuser) { /* locks alone: a mutex profile's period and default */
		pm_prof_set_default_type(p, pm_prof_nsample_types(p) - 1);
		pm_prof_set_period(p, "contentions", "count", 1);
	}
}

static void locks_profile_tail(struct session *s, struct pm_profile *p)
{
	struct locks *st = pm_src_state(s, &pm_src_locks);
	char *c;

	if (!pm_src_has_events(s, &pm_src_locks))
		return;
	st->still += st->nw;
	while (st->nw)
		drop(st, &st->w[st->nw - 1]);
	c = xasprintf("locks: %" PRIu64 " contended locks (sync.Mutex, RWMutex), %" PRIu64
		      " ns waited; not counted: %" PRIu64 " still waiting at the end, %" PRIu64
		      " waiting before the start, %" PRIu64 " lost, %" PRIu64 " unreadable; %" PRIu64
		      " without a mutex label",
		      st->samples, st->total_ns, st->still, st->unpaired_exit, st->lost, st->bad,
		      st->unlabelled);
	pm_prof_add_comment(p, c);
	free(c);
}

/* contentions and delay; the labels as the CPU's, the thread's and a "mutex" from the pair. */
static void locks_profile_stack(struct session *s, struct pm_profile *p, const uint64_t *locs,
				size_t n, const int64_t *v, struct pm_prof_label *lab0, size_t nlab)
{
	struct locks *st = pm_src_state(s, &pm_src_locks);
	struct pm_prof_label lab[2 + PM_GOR_MAX_LABELS + 4];
	int64_t val[PM_SES_VALUES_MAX + 4];
	long ic = pm_prof_find_sample_type(p, "contentions"),
	     id = pm_prof_find_sample_type(p, "delay");
	size_t nt = pm_prof_nsample_types(p);

	if (!v[V_COUNT] || ic < 0 || id < 0 || nt > PM_ARRAY_SIZE(val) ||
	    nlab + 1 > PM_ARRAY_SIZE(lab))
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
	pm_prof_add(p, locs, n, val, lab, nlab);
}

static void locks_end(struct session *s)
{
	struct locks *st = pm_src_state(s, &pm_src_locks);

	while (st->nw)
		drop(st, &st->w[st->nw - 1]);
	free(st->w);
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
	.profile_head = locks_profile_head,
	.profile_tail = locks_profile_tail,
	.profile_stack = locks_profile_stack,
	.end = locks_end,
};
