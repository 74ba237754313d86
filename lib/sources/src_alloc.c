/* src_alloc: the allocations the Go runtime samples, --alloc (src_alloc.h). */
#include "sources/src_alloc.h"

#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "symbols/elfimg.h"
#include "symbols/gopclntab.h"
#include "goruntime/gocode.h"
#include "symbols/maps.h"
#include "profile/profile.h"
#include "session/srcctx.h"
#include "sources/budget.h"
#include "profile/stacks.h"
#include "symbols/symtab.h"

#define RAW_SIZE 32 /* trace entry (8), probe ip (8), p, size (8 each) ... */
#define RAW_RATE 40 /* ... and the rate of the moment, when its address is known */
#define DEFAULT_RATE 524288 /* the runtime's MemProfileRate unless the program changes it */
#define MAX_SIZE (1ULL << 40) /* bytes: larger is a bad read, not an object */
#define MAX_SCALED 0x1p62     /* a scaled value at most (an int64 with room for sums) */

/* pm_sc_kind(ctx, e) of its events: what add_events learnt of the binary */
enum { KIND_OFF = 1, KIND_NO_RATE = 2 };

#define MAX_WRITES 8 /* --memprofilerate: processes whose rate was written */

/* --memprofilerate: one process's runtime.MemProfileRate, written */
struct rate_write {
	pid_t pid;
	uint64_t addr;
	int64_t old, set;
};

/*
 * --inuse in the same recording: what the probe saw at each user stack and
 * object size (the runtime's heap record of it): the goroutine part (creator
 * and tag frames) all its allocations had, while they all had the same one
 */
struct seen {
	uint32_t pid;
	uint64_t size, count;
	uint32_t *ids; /* the user frames, then the goroutine part */
	uint32_t nuser, n;
	bool mixed;
};

struct alloc {
	struct rate_write w[MAX_WRITES];
	uint64_t launch_rate; /* --memprofilerate, launched: its MemProfileRate's vaddr */
	struct seen *seen;
	size_t nseen, capseen;
	struct pm_hidx seen_idx;
	uint64_t seed;
	size_t nw;
	uint64_t samples, bad, trimmed_none;
	int64_t rate_last; /* the rate of the last sample; 0 = none seen */
	bool rate_mixed;   /* samples at more than one rate */
	bool rate_unknown; /* samples without the rate: DEFAULT_RATE assumed */
	/* --alloc-max-rate: the probes CPU-wide, opened and closed by the budget (budget.h) */
	struct pm_budget *bud;
	bool open, failed;
	uint64_t last_now;
	double watched;  /* the share of the time watched, at the end */
	uint64_t others; /* samples of processes not targets (CPU-wide probes), dropped */
};

/* values per stack: samples, bytes sampled, objects scaled (x1000), bytes scaled */
enum { V_SAMPLES, V_BYTES, V_MOBJ, V_SPACE, V_N };

/* Is @pc inside runtime.schedinit or runtime.init (gopclntab: stripped too)? */
static bool site_ok(const struct pm_go *go, uint64_t pc)
{
	long f = pm_go_find(go, pc);
	const char *name = f >= 0 ? pm_go_func_name(go, f) : NULL;

	return name && (!strcmp(name, "runtime.schedinit") || !strcmp(name, "runtime.init"));
}

/*
 * Where runtime.MemProfileRate and runtime.disableMemoryProfiling are:
 * the ELF symbols, or without them (stripped) the one place that reads the
 * second and writes the first, matched in the code:
 *   Go 1.20+ schedinit:  cmpb $0, disable(%rip); je +11; movq $0, rate(%rip)
 *   Go 1.19 runtime.init (defaultMemProfileRate inlined):
 *     movzbl disable(%rip), %eax; test %rax,%rax; mov $0x80000,%eax;
 *     mov $0,%ecx; cmovne %rcx,%rax; mov %rax, rate(%rip)
 * Exactly one match, or unknown (0).  *@site: the instruction after that
 * write of the rate (where both branches meet), inside the function the
 * version puts it in (schedinit, before any other thread; runtime.init, on
 * the main thread locked to its goroutine): where --memprofilerate writes
 * a launched program's rate; 0 when not matched there (or the symbols say
 * other addresses).
 */
/* A pattern of rate_addrs(): its bytes, which of them are not addresses, where its two rel32 are */
struct rate_pat {
	const uint8_t *b, *m;
	size_t n;
	unsigned dis_at, rate_at;   /* where the rel32 of disable and of rate sit */
	unsigned dis_end, rate_end; /* the ends of their instructions, what each counts from */
};

static bool pat_match(const struct rate_pat *p, const uint8_t *c)
{
	for (size_t k = 0; k < p->n; k++)
		if (p->m[k] && c[k] != p->b[k])
			return false;
	return true;
}

static void rate_addrs(const struct pm_elf *e, const struct pm_go *go, uint64_t *rate,
		       uint64_t *off, uint64_t *site)
{
	static const uint8_t p20[] = { 0x80, 0x3d, 0, 0, 0, 0, 0x00, 0x74, 0x0b, 0x48,
				       0xc7, 0x05, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t p19[] = { 0x0f, 0xb6, 0x05, 0, 0, 0, 0, 0x48, 0x85, 0xc0,
				       0xb8, 0x00, 0x00, 0x08, 0x00, 0xb9, 0, 0, 0, 0,
				       0x48, 0x0f, 0x45, 0xc1, 0x48, 0x89, 0x05, 0, 0, 0, 0 };
	/* the bytes that are not addresses */
	static const uint8_t m20[] = { 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1 };
	static const uint8_t m19[] = { 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
				       1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0 };
	static const struct rate_pat pats[] = {
		{ p20, m20, sizeof(p20), 2, 12, 7, 20 },
		{ p19, m19, sizeof(p19), 3, 27, 7, 31 },
	};
	uint64_t start = pm_go_text_start(go), end = pm_go_text_end(go), r = 0, d = 0, at = 0;
	uint64_t sym_rate = pm_elf_symbol_addr(e, "runtime.MemProfileRate"),
		 sym_off = pm_elf_symbol_addr(e, "runtime.disableMemoryProfiling");
	const uint8_t *b = NULL;
	unsigned hits = 0;

	*rate = sym_rate && sym_off ? sym_rate : 0;
	*off = sym_rate && sym_off ? sym_off : 0;
	*site = 0;
	if (start && end > start && end - start <= (1ULL << 30))
		b = pm_elf_vaddr_bytes(e, start, (size_t)(end - start));
	if (!b)
		return;
	for (uint64_t i = 0; i + sizeof(p19) <= end - start && hits < 2; i++) {
		for (size_t j = 0; j < PM_ARRAY_SIZE(pats); j++) {
			const struct rate_pat *p = &pats[j];
			int32_t x, y;

			if (!pat_match(p, b + i))
				continue;
			memcpy(&x, b + i + p->dis_at, 4);
			memcpy(&y, b + i + p->rate_at, 4);
			d = start + i + p->dis_end + (uint64_t)(int64_t)x;
			r = start + i + p->rate_end + (uint64_t)(int64_t)y;
			at = start + i + p->rate_end;
			hits++;
		}
	}
	if (hits != 1 || (r & 7) || (*rate && (*rate != r || *off != d)))
		return;
	*rate = r;
	*off = d;
	*site = site_ok(go, at) ? at : 0;
}

uint64_t pm_alloc_rate_vaddr(const struct pm_elf *e, const struct pm_go *go)
{
	uint64_t rate, off, site;

	rate_addrs(e, go, &rate, &off, &site);
	return rate;
}

/*
 * The linker's runtime.disableMemoryProfiling, as the file holds it: 1
 * (heap sampling off at start), 0, or -1 unknown.  Zero-initialized, it
 * lives past the file's bytes of its segment.
 */
static int sampling_off(const struct pm_elf *e, uint64_t va)
{
	const uint8_t *b;

	if (!va)
		return -1;
	b = pm_elf_vaddr_bytes(e, va, 1);
	if (b)
		return *b != 0;
	for (size_t i = 0; i < pm_elf_nsegments(e); i++) {
		const struct pm_elf_segment *sg = pm_elf_segment_at(e, i);

		if (va >= sg->vaddr && va - sg->vaddr < sg->memsz)
			return 0;
	}
	return -1;
}

/*
 * The probe on @path's runtime.mProf_Malloc (past its stack check, where
 * its arguments are still in registers):
 *   Go 1.19-1.22  mProf_Malloc(p unsafe.Pointer, size uintptr)      p=AX size=BX
 *   Go 1.23+      mProf_Malloc(mp *m, p unsafe.Pointer, size uintptr) p=BX size=CX
 * and the rate of the moment read by the kernel at runtime.MemProfileRate
 * (@+ is an offset in the probed file's mapping: the probe's load bias).
 * Sets *@kind (KIND_*).
 */
static int probe_for(const char *path, struct pm_evt_spec *sp, int *kind, uint64_t *rate_at,
		     uint64_t *site_at, char *err, size_t errlen)
{
	char text[4200], perr[600];
	struct pm_elf *e = NULL;
	struct pm_go *go = NULL;
	uint64_t rate_va = 0, off_va = 0, site_va = 0;
	int64_t probe_va;
	int rc = -1, off, minor;

	*kind = 0;
	*rate_at = *site_at = 0;
	if (pm_gocode_open(path, 17, &e, &go, &minor, err, errlen) < 0)
		goto out;
	snprintf(text, sizeof(text), "uprobe:%s:runtime.mProf_Malloc", path);
	if (pm_evt_parse(text, sp, perr, sizeof(perr)) < 0) {
		snprintf(err, errlen, "%s", perr);
		goto out;
	}
	rate_addrs(e, go, &rate_va, &off_va, &site_va);
	if (pm_elf_type(e) == ET_EXEC) { /* a PIE's are biased: not written */
		*rate_at = rate_va;
		*site_at = site_va;
	}
	off = sampling_off(e, off_va);
	if (off == 1)
		*kind |= KIND_OFF;
	probe_va = pm_elf_offset_to_vaddr(e, sp->config2);
	if (minor >= 23)
		snprintf(sp->fetchargs, sizeof(sp->fetchargs), "p=%%bx:u64 size=%%cx:u64");
	else
		snprintf(sp->fetchargs, sizeof(sp->fetchargs), "p=%%ax:u64 size=%%bx:u64");
	if (rate_va && probe_va >= 0 && rate_va > (uint64_t)probe_va - sp->config2) {
		size_t l = strlen(sp->fetchargs);

		snprintf(sp->fetchargs + l, sizeof(sp->fetchargs) - l, " rate=@+0x%" PRIx64 ":s64",
			 rate_va - ((uint64_t)probe_va - sp->config2));
	} else {
		*kind |= KIND_NO_RATE;
	}
	pm_evt_every_hit(sp, "alloc_space", "bytes"); /* every sampled allocation */
	rc = 0;
out:
	pm_go_free(go);
	pm_elf_free(e);
	return rc;
}

static int rw_target(pid_t pid, uint64_t addr, int64_t *v, bool write)
{
	struct iovec l = { v, 8 }, r = { (void *)(uintptr_t)addr, 8 };
	ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
			  : process_vm_readv(pid, &l, 1, &r, 1, 0);

	return n == 8 ? 0 : -1;
}

/*
 * --memprofilerate: runtime.MemProfileRate of @pid (at @addr) set for the
 * recording, said on stderr; the value it had is kept to be put back.
 */
static void rate_write(struct pm_srcctx *ctx, struct alloc *st, pid_t pid, uint64_t addr,
		       const char *path)
{
	struct rate_write *w = &st->w[st->nw];
	int64_t set = pm_sc_cfg(ctx)->memprofilerate;

	if (!addr || st->nw >= MAX_WRITES) {
		pm_warn("--memprofilerate: runtime.MemProfileRate of %s (process %d) not found: "
			"not changed",
			path, (int)pid);
		return;
	}
	if (rw_target(pid, addr, &w->old, false) || rw_target(pid, addr, &set, true)) {
		pm_warn("--memprofilerate: cannot write runtime.MemProfileRate of process %d: %s",
			(int)pid, strerror(errno));
		return;
	}
	w->pid = pid;
	w->addr = addr;
	w->set = set;
	st->nw++;
	pm_warn("--memprofilerate: runtime.MemProfileRate of process %d set to %" PRId64
		" (it was %" PRId64 ") until the recording ends",
		(int)pid, set, w->old);
}

/* --memprofilerate: the values back, in the processes where ours is still set. */
static void rate_restore(struct alloc *st)
{
	for (size_t i = 0; i < st->nw; i++) {
		struct rate_write *w = &st->w[i];
		int64_t now;

		if (!rw_target(w->pid, w->addr, &now, false) && now == w->set)
			rw_target(w->pid, w->addr, &w->old, true);
	}
}

/* --memprofilerate, a launched command stopped where its runtime has set its rate. */
static void at_rate_set(struct pm_srcctx *ctx, pid_t pid)
{
	struct alloc *st = ctx->state;

	rate_write(ctx, st, pid, st->launch_rate, "the command");
}

/*
 * --memprofilerate, a launched command: its rate written where its runtime
 * has just set it (0 when its linker turned heap sampling off), before any
 * code of the program's own runs (pm_target_break()).
 */
static void launch_rate(struct pm_srcctx *ctx, struct alloc *st, uint64_t rate_at,
			uint64_t site_at, const char *path)
{
	if (!rate_at || !site_at || !pm_sc_break(ctx, site_at, at_rate_set, "--memprofilerate")) {
		pm_warn("--memprofilerate: where the Go runtime of %s sets runtime.MemProfileRate "
			"is not known here (a position-independent executable, or runtime code not "
			"recognized): its rate is not changed (set runtime.MemProfileRate in the "
			"program)",
			path);
		return;
	}
	st->launch_rate = rate_at;
}

/* --alloc: the probe on every Go binary of the targets (attached) or on the command. */
static int alloc_add_events(struct pm_srcctx *ctx)
{
	const struct pm_record_cfg *cfg = pm_sc_cfg(ctx);
	struct alloc *st = ctx->state; /* (--memprofilerate's writes, undone at the end) */
	char err[600] = "", *real;
	size_t i = 0;
	pid_t pid;
	bool dup;

	if (!cfg->alloc)
		return 0;
	while (pm_sc_next_exe(ctx, &i, &pid, &real, &dup)) {
		struct pm_evt_spec sp;
		int kind;
		uint64_t rate_at, site_at;

		memset(&sp, 0, sizeof(sp));
		if (real && dup && cfg->memprofilerate &&
		    probe_for(real, &sp, &kind, &rate_at, &site_at, err, sizeof(err)) == 0)
			rate_write(ctx, st, pid, rate_at, real); /* another process of the same binary */
		if (!real || dup) {
			free(real);
			continue;
		}
		if (!pm_sc_event_room(ctx) ||
		    probe_for(real, &sp, &kind, &rate_at, &site_at, err, sizeof(err)) < 0 ||
		    pm_evt_uprobe_define(&sp, (unsigned)pm_sc_nev(ctx), err, sizeof(err)) < 0) {
			if (!pm_sc_event_room(ctx))
				snprintf(err, sizeof(err), "too many events");
			pm_warn("alloc: cannot watch the allocations of %s (%s)", real, err);
			free(real);
			continue;
		}
		if (cfg->memprofilerate && pm_sc_attached(ctx))
			rate_write(ctx, st, pid, rate_at, real);
		else if (cfg->memprofilerate)
			launch_rate(ctx, st, rate_at, site_at, real);
		else if (kind & KIND_OFF)
			pm_warn("alloc: %s has the Go runtime's heap sampling off (its linker turns it "
				"off in a program that never uses the heap profile, e.g. without "
				"runtime/pprof or with only its labels): no allocation is sampled "
				"(--memprofilerate BYTES sets its rate, e.g. 4096)",
				real);
		free(real);
		if (cfg->alloc_max_rate > 0) /* closed and opened again by the budget (alloc_timer()) */
			pm_sc_set_cpuwide(ctx, pm_sc_nev(ctx));
		pm_sc_add_event(ctx, &sp, kind);
	}
	if (!pm_sc_has_events(ctx)) {
		pm_sc_err(ctx, PM_REC_ERR, "--alloc: no Go program to watch (%s)",
			  i ? err : "no target");
		return -1;
	}
	return 0;
}

/* Its samples need the callchain's user part only. */
static void alloc_adjust_attr(struct pm_srcctx *ctx, size_t e, struct perf_event_attr *a)
{
	(void)ctx;
	(void)e;
	a->exclude_callchain_kernel = 1;
}

/* Replay: the probe on mProf_Malloc. */
static bool alloc_claim(struct pm_srcctx *ctx, size_t e, const char *name)
{
	pm_sc_set_kind(ctx, e, 0);
	return name && strstr(name, "mProf_Malloc");
}

static size_t alloc_nvalues(struct pm_srcctx *ctx)
{
	(void)ctx;
	return V_N;
}

/*
 * A scaled value as an integer: a rate far past the size (a hostile
 * capture's, or a program's absurd runtime.MemProfileRate) scales by
 * 1 / (1 - exp(-tiny)), past any int64 up to infinity: bounded.
 */
static int64_t scaled(double x)
{
	return x < MAX_SCALED ? (int64_t)llround(x) : (int64_t)MAX_SCALED;
}

/* The runtime's own frames, hidden above the allocating function as runtime/pprof does. */
static bool is_runtime(struct pm_srcctx *ctx, pid_t pid, uint64_t pc, bool ret)
{
	const struct pm_map *m = pm_maps_find(pm_sc_maps(ctx), pid, pc);
	const struct pm_sym *sym = m ? pm_sc_map_sym(ctx, m) : NULL;
	struct pm_frame fr[8];

	if (!sym || !pm_sym_frames(sym, (uint64_t)((int64_t)pc - m->bias) - ret, fr, 8))
		return false;
	return !strncmp(fr[0].func, "runtime.", 8) || !strncmp(fr[0].func, "internal/runtime/", 17);
}

static uint64_t seen_hash(const struct alloc *st, uint32_t pid, uint64_t size, const uint32_t *ids,
			  size_t n)
{
	return pm_hash(ids, n * sizeof(*ids), st->seed ^ pm_hash_u64(size) ^ pid);
}

static struct seen *seen_find(const struct alloc *st, uint32_t pid, uint64_t size,
			      const uint32_t *ids, size_t n)
{
	size_t pos = SIZE_MAX;
	long i;

	while ((i = pm_hidx_next(&st->seen_idx, seen_hash(st, pid, size, ids, n), &pos)) >= 0) {
		struct seen *e = &st->seen[i];

		if (e->pid == pid && e->size == size && e->nuser == n &&
		    !memcmp(e->ids, ids, n * sizeof(*ids)))
			return e;
	}
	return NULL;
}

/* An allocation of @size at the user frames ids[0..nuser), its goroutine part ids[nuser..n). */
static void seen_add(struct alloc *st, uint32_t pid, uint64_t size, const uint32_t *ids,
		     size_t nuser, size_t n)
{
	struct seen *e = seen_find(st, pid, size, ids, nuser);

	if (!st->seed)
		st->seed = pm_hash_seed() | 1;
	if (!e) {
		PM_GROW(st->seen, st->capseen, st->nseen + 1);
		e = &st->seen[st->nseen];
		memset(e, 0, sizeof(*e));
		e->pid = pid;
		e->size = size;
		e->ids = xmalloc((n ? n : 1) * sizeof(*ids));
		memcpy(e->ids, ids, n * sizeof(*ids));
		e->nuser = (uint32_t)nuser;
		e->n = (uint32_t)n;
		pm_hidx_add(&st->seen_idx, seen_hash(st, pid, size, ids, nuser), (uint32_t)st->nseen++);
	} else if (!e->mixed && (e->n != n || memcmp(e->ids + nuser, ids + nuser,
						      (n - nuser) * sizeof(*ids)))) {
		e->mixed = true;
	}
	e->count++;
}

const uint32_t *pm_alloc_seen(struct pm_srcctx *alloc, uint32_t pid, uint64_t size,
			      const uint32_t *ids, size_t n, size_t *ntail, uint64_t *count)
{
	struct alloc *st = alloc ? alloc->state : NULL;
	struct seen *e;

	*ntail = 0;
	*count = 0;
	if (!st || !st->seed || !(e = seen_find(st, pid, size, ids, n)))
		return NULL;
	*count = e->count;
	if (e->mixed)
		return NULL;
	*ntail = e->n - e->nuser;
	return e->ids + e->nuser;
}

static void alloc_end(struct pm_srcctx *ctx)
{
	struct alloc *st = ctx->state;

	if (!st)
		return;
	for (size_t i = 0; i < st->nseen; i++)
		free(st->seen[i].ids);
	free(st->seen);
	pm_hidx_free(&st->seen_idx);
	pm_budget_free(st->bud);
}

/* ---- the budget (--alloc-max-rate) ---- */

/* Open or close the probes (CPU-wide: a closed uprobe traps no more). */
static void set_open(struct pm_srcctx *ctx, struct alloc *st, bool on)
{
	if (pm_sc_cpuwide_open_own(ctx, on) < 0 && !st->failed) {
		const char *msg = pm_sc_errmsg(ctx);

		pm_warn("alloc: %s", msg[0] ? msg : "cannot open the probes again");
		st->failed = true;
	}
	st->open = on;
}

static uint64_t alloc_timer(struct pm_srcctx *ctx, uint64_t now)
{
	struct alloc *st = ctx->state;
	const struct pm_record_cfg *cfg = pm_sc_cfg(ctx);
	uint64_t next;
	double rate;
	bool open;

	if (pm_sc_replay(ctx) || !cfg || cfg->alloc_max_rate <= 0 || !pm_sc_has_events(ctx))
		return 0;
	if (!st->bud)
		st->open = true; /* opened by the attach */
	next = pm_budget_step(&st->bud, cfg->alloc_max_rate, now, now, pm_sc_cpuwide_hits_own(ctx),
			      &open, &rate);
	if (rate > 0)
		pm_warn("alloc: %.0f probe hits/s, over the budget of %" PRId64 " (--alloc-max-rate): "
			"the probe watches part of the time, alloc_objects and alloc_space scaled "
			"(the profile's comments say how much)",
			rate, cfg->alloc_max_rate);
	if (open != st->open)
		set_open(ctx, st, open);
	st->last_now = now;
	return next;
}

/*
 * The weight of @smp: 1 over the share of its period the budget watched
 * (1 without one); logged in a capture, read back at replay.
 */
static double sample_weight(struct pm_srcctx *ctx, const struct alloc *st,
			    const struct pm_rec_sample *smp)
{
	double w = st->bud ? pm_budget_weight(st->bud, smp->time) : 1, r = 1;

	if (!pm_sc_replay(ctx)) {
		if (w != 1)
			pm_sc_value(ctx, (pid_t)smp->pid, PM_CAP_KEY_ALLOC_WEIGHT, &w, sizeof(w));
		return w;
	}
	if (pm_sc_value(ctx, (pid_t)smp->pid, PM_CAP_KEY_ALLOC_WEIGHT, &r, sizeof(r)) < 0 ||
	    !(r >= 1 && r <= 1e6))
		r = 1;
	return r;
}

/*
 * Is @smp of a target?  Per thread, yes; CPU-wide (a budget), as
 * pm_sc_ours() says, logged in a capture; at replay what was logged (a
 * capture without it: yes).
 */
static bool ours(struct pm_srcctx *ctx, size_t ev, const struct pm_rec_sample *smp)
{
	uint64_t v = 1;

	if (!pm_sc_replay(ctx))
		return !pm_sc_is_cpuwide(ctx, ev) || pm_sc_ours(ctx, smp, PM_CAP_KEY_ALLOC_WEIGHT + 8);
	if (pm_sc_value(ctx, (pid_t)smp->pid, PM_CAP_KEY_ALLOC_WEIGHT + 8, &v, sizeof(v)) < 0)
		return true;
	return v != 0;
}

static void alloc_sample(struct pm_srcctx *ctx, size_t ev, const struct pm_rec_sample *smp)
{
	struct alloc *st = ctx->state;
	const struct pm_record_cfg *cfg = pm_sc_cfg(ctx);
	const uint64_t *pcs = pm_sc_pcs(ctx);
	uint32_t *ids = pm_sc_ids(ctx);
	struct pm_walk w;
	int64_t v[V_N];
	uint64_t size;
	int64_t rate = DEFAULT_RATE;
	double scale = 1.0;
	size_t n, skip, k, ku;
	bool complete;

	if (!ours(ctx, ev, smp)) {
		st->others++;
		return;
	}
	if (!smp->raw || smp->raw_size < RAW_SIZE) {
		st->bad++;
		return;
	}
	size = pm_le64(smp->raw + 24);
	if (size > MAX_SIZE) { /* not an allocation of this world: no sum may overflow */
		st->bad++;
		return;
	}
	if (smp->raw_size >= RAW_RATE) {
		rate = (int64_t)pm_le64(smp->raw + 32);
	} else {
		st->rate_unknown = true;
	}
	if (st->rate_last && rate != st->rate_last)
		st->rate_mixed = true;
	st->rate_last = rate;
	/* runtime/pprof's scaleHeapSample: no scaling at rate 1 (every allocation) */
	if (rate > 1 && size > 0)
		scale = 1.0 / (1.0 - exp(-(double)size / (double)rate));
	scale *= sample_weight(ctx, st, smp); /* the budget's: the share of the time watched */
	st->samples++;
	pm_sc_count_sample(ctx);
	v[V_SAMPLES] = 1;
	v[V_BYTES] = (int64_t)size;
	v[V_MOBJ] = scaled(1000.0 * scale);
	v[V_SPACE] = scaled((double)size * scale);
	pm_sc_walk(ctx, smp, &w);
	n = w.n;
	pm_sc_keep_walk(ctx, &w, n);
	/*
	 * On the system stack, runtime/pprof's stack stops at the switch: all
	 * the runtime's, shown whole; here the walk goes on into the goroutine's
	 * stack, kept whole too, so that the function allocating on its own
	 * stack is the leaf of the same samples in both profiles
	 */
	for (skip = 0; !(w.status & PM_UNW_SWITCHED) && skip < n &&
		       is_runtime(ctx, w.pid, pcs[skip], skip > 0);
	     skip++)
		;
	if (skip == n) { /* all the runtime's (as runtime/pprof: show them all) */
		skip = 0;
		st->trimmed_none++;
	}
	k = pm_sc_user_ids(ctx, &w, skip, ids, 0); /* (and the cut marker) */
	complete = (w.status & PM_UNW_COMPLETE) != 0;
	ku = complete ? k : k - 1;
	k = pm_sc_gor_sample(ctx, smp, &w, n, k); /* goroutines: creators, labels */
	if (cfg && cfg->inuse && complete) /* for --inuse: what it saw at this record */
		seen_add(st, smp->pid, size, ids, ku, k);
	if (k < PM_SC_MAX_IDS) { /* the object's size, the label bytes: a root frame */
		struct pm_stack_frame f;

		f.map_id = ctx->map;
		f.is_return = false;
		f.addr = f.vaddr = size;
		ids[k++] = pm_stacks_frame(pm_sc_stacks(ctx), &f);
	}
	pm_sc_add_stack(ctx, smp->pid, smp->tid, ids, k, v);
	pm_sc_check_limits(ctx, w.status);
}

/* The size frame at the root: the numeric label bytes, as Go's heap profile's. */
static size_t alloc_stack_labels(struct pm_srcctx *ctx, const uint32_t *ids, size_t *n,
				 struct pm_prof_label *out, size_t max)
{
	const struct pm_stack_frame *f;

	if (!*n || !max)
		return 0;
	f = pm_stacks_frame_at(pm_sc_stacks(ctx), ids[*n - 1]);
	if (!f || f->map_id != ctx->map)
		return 0;
	(*n)--;
	memset(out, 0, sizeof(*out));
	out->key = "bytes";
	out->num = (int64_t)f->addr;
	return 1;
}

static void alloc_profile_head(struct pm_srcctx *ctx, struct pm_profile *p)
{
	struct alloc *st = ctx->state;
	int64_t rate = st->rate_last ? st->rate_last : DEFAULT_RATE;

	pm_prof_add_sample_type(p, "alloc_objects", "count");
	pm_prof_add_sample_type(p, "alloc_space", "bytes");
	if (!pm_sc_nuser(ctx)) { /* allocations alone: a heap profile's period and default */
		pm_prof_set_default_type(p, pm_prof_nsample_types(p) - 1);
		pm_prof_set_period(p, "space", "bytes", rate);
	}
}

/* The budget's comment: over it, the share watched (live; a replay says what its capture weighed). */
static void budget_comment(struct pm_srcctx *ctx, const struct alloc *st, struct pm_profile *p)
{
	const struct pm_record_cfg *cfg = pm_sc_cfg(ctx);
	double rate;
	char *c;

	if (st->others) {
		c = xasprintf("alloc: %" PRIu64 " allocations of processes not recorded dropped "
			      "(the probes watch every process for the budget)",
			      st->others);
		pm_prof_add_comment(p, c);
		free(c);
	}
	if (!st->bud || !pm_budget_over(st->bud, &rate))
		return;
	c = xasprintf("alloc: %.0f probe hits/s over the budget of %" PRId64
		      " (--alloc-max-rate): the probe watched %.1f %% of the time, alloc_objects and "
		      "alloc_space scaled by the share of each period watched",
		      rate, cfg->alloc_max_rate, 100 * pm_budget_watched(st->bud, st->last_now));
	pm_prof_add_comment(p, c);
	free(c);
}

/* An interval ended: its comments' counts begin again. */
static void alloc_cut(struct pm_srcctx *ctx)
{
	struct alloc *st = ctx->state;

	st->samples = st->bad = st->others = 0;
}

static void alloc_profile_tail(struct pm_srcctx *ctx, struct pm_profile *p)
{
	struct alloc *st = ctx->state;
	char *c;

	if (!pm_sc_replay(ctx))
		rate_restore(st);
	for (size_t i = 0; i < st->nw; i++) {
		c = xasprintf("alloc: runtime.MemProfileRate of process %d set to %" PRId64
			      " by pmuprof --memprofilerate (it was %" PRId64 "; put back at the end)",
			      (int)st->w[i].pid, st->w[i].set, st->w[i].old);
		pm_prof_add_comment(p, c);
		free(c);
	}
	c = xasprintf("alloc: %" PRIu64 " allocations sampled by the Go runtime (runtime.mProf_Malloc), "
		      "%" PRIu64 " unreadable; heap sampling rate %s%" PRId64 " bytes%s",
		      st->samples, st->bad, st->rate_mixed ? "changed, last " : "",
		      st->rate_last ? st->rate_last : (int64_t)DEFAULT_RATE,
		      st->rate_unknown ? " (not readable from the program: the default assumed)" : "");
	pm_prof_add_comment(p, c);
	free(c);
	budget_comment(ctx, st, p);
	for (size_t e = 0; e < pm_sc_nev(ctx); e++)
		if (pm_sc_owns(ctx, e) && (pm_sc_kind(ctx, e) & KIND_OFF)) {
			c = xasprintf("alloc: %s has the Go runtime's heap sampling off (linker)",
				      pm_sc_spec(ctx, e)->path);
			pm_prof_add_comment(p, c);
			free(c);
		}
}

/* alloc_objects and alloc_space, scaled; the labels as the CPU's. */
static void alloc_profile_stack(struct pm_srcctx *ctx, struct pm_profile *p, const uint64_t *locs,
				size_t n, const int64_t *v, struct pm_prof_label *lab, size_t nlab)
{
	int64_t val[PM_SES_VALUES_MAX + 4];
	long io = pm_prof_find_sample_type(p, "alloc_objects"),
	     is = pm_prof_find_sample_type(p, "alloc_space");
	size_t nt = pm_prof_nsample_types(p);

	(void)ctx;
	if (!v[V_SAMPLES] || io < 0 || is < 0 || nt > PM_ARRAY_SIZE(val))
		return;
	memset(val, 0, sizeof(val));
	val[io] = v[V_MOBJ] / 1000 + (v[V_MOBJ] % 1000 >= 500); /* rounded (a saturated sum too) */
	val[is] = v[V_SPACE];
	pm_prof_add(p, locs, n, val, lab, nlab);
}

const struct pm_source pm_src_alloc = {
	.name = "alloc",
	.state_size = sizeof(struct alloc),
	.add_events = alloc_add_events,
	.unrated = true,
	.raw = true,
	.adjust_attr = alloc_adjust_attr,
	.claim = alloc_claim,
	.nvalues = alloc_nvalues,
	.sample = alloc_sample,
	.timer = alloc_timer,
	.stack_labels = alloc_stack_labels,
	.end = alloc_end,
	.profile_head = alloc_profile_head,
	.profile_tail = alloc_profile_tail,
	.cut = alloc_cut,
	.profile_stack = alloc_profile_stack,
};
