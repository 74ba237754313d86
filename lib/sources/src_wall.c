/* src_wall: goroutine wall clock, --wall[=HZ] (src_wall.h). */
#include "sources/src_wall.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "capture/datafile.h"
#include "symbols/elfimg.h"
#include "goruntime/goroutine.h"
#include "base/idtab.h"
#include "symbols/maps.h"
#include "profile/profile.h"
#include "session/srcctx.h"
#include "capture/snaplog.h"
#include "profile/stacks.h"
#include "symbols/symtab.h"

#define WALL_STACK 4096       /* stack bytes read per goroutine walked (read on past it) */
#define WALL_BUDGET 0.10      /* the share of one core snapshots may take */
#define WALL_REASONS 256      /* g.waitreason is a uint8 */
#define WALL_PREEMPTED WALL_REASONS /* a label's reason: preempted (no uint8 reads as it) */
#define WALL_BUCKETS 22       /* parked: 0, then 1, 2, 5 x 10^k ms */
#define WALL_CHUNK 16384      /* goroutines a snapshot works on at once */
#define WALL_GBUF 1024        /* bytes of a runtime.g read at most (G_READ_MAX) */
#define WALL_NAME_TRIES 20    /* snapshots that try to open the binary for its names */
#define WALL_AGE_MAX 5000     /* ms: a running goroutine's CPU sample older is not used */

enum { ST_RUNNING, ST_RUNNABLE, ST_WAITING, ST_SYSCALL, ST_N };
static const char *const state_name[ST_N] = { "running", "runnable", "waiting", "syscall" };

enum { MK_RUNNING, MK_N };
#define MARKER_BIT (1ULL << 32) /* a marker frame's addr; a label frame's is its index */
static const char *const marker_name[MK_N] = { "[running]" };

/* One goroutine's g as last walked: its stack's frame ids, valid while the key holds. */
struct went {
	uint64_t gp;
	int64_t goid;
	uint64_t pc, sp, bp;
	uint32_t status;
	uint8_t reason, seq; /* seq: g.trackingSeq, bumped each time it stops running */
	bool gone;      /* the last snapshot saw no goroutine in the g */
	uint64_t since; /* parked since at least (the events' clock); 0 = not parked */
	uint64_t stopped; /* the last snapshot that saw it wait (or its g dead) */
	uint32_t nf;
	uint32_t *frames;
	uint32_t gen;   /* bumped when frames change */
	/*
	 * The goroutine's sample so far (its whole stack: frames, creators,
	 * tag, labels) and its weight: added to the profile when it changes
	 * and at the end, so an unchanged goroutine costs no hashing
	 */
	uint32_t *acc;
	uint32_t nacc, acc_gen;
	int16_t acc_reason;
	int8_t acc_state, acc_bucket;
	uint64_t acc_lp, acc_time, accw;
};

/* A label set: state, wait reason, parked bucket, the age of a running one's CPU sample. */
struct wlab {
	uint8_t state;
	int16_t reason;  /* -1 = none */
	int8_t bucket;   /* -1 = none */
	int16_t age;     /* ms, -1 = none */
};

/* A goroutine's latest CPU sample (-e with --wall): its user frames. */
struct wcpu {
	int64_t goid;   /* 0 = none (dropped when the goroutine was seen gone) */
	uint64_t time;  /* the events' clock */
	uint32_t n, cap;
	uint32_t *ids;
};

struct wproc {
	pid_t pid;
	int state;              /* 0 not tried, 1 on, -1 off (said why once) */
	const struct pm_gor_layout *l;
	char *names[WALL_REASONS]; /* the runtime's names of its wait reasons */
	size_t nnames;
	char *path;             /* its Go binary */
	unsigned name_tries;
	struct went *ent;       /* by index in runtime.allgs (a g never moves in it) */
	size_t nent;
	uint64_t last;          /* the last snapshot's time */
	uint64_t first;         /* the time the first one covers from */
	uint64_t last_read;     /* the last snapshot that read a goroutine: the span's end */
	uint64_t pending;       /* the time since then, in no sample (unread_ns if one reads later) */
	struct pm_idtab cpu_of; /* g -> index in cpu + 1: an entry per g that had a CPU sample */
	struct wcpu *cpu;
	size_t ncpu, live_cpu;
};

struct wall {
	unsigned hz;
	uint64_t interval;      /* now: 1/HZ, longer when snapshots cost more (see timer) */
	uint64_t next;
	struct wproc *procs;
	size_t nprocs;
	struct wlab *labs;
	size_t nlabs, caplabs;
	uint32_t *lab_idx;      /* [state][reason + 1][bucket + 1] -> lab index + 1 */
	uint32_t *age_idx;      /* running, [age ms] -> lab index + 1 (with CPU samples) */
	char **bucket_names;
	/* counts, for the profile's comments */
	uint64_t snapshots, goroutines, walked, reused, torn, retried, unreadable, cut, moving, running;
	uint64_t running_cpu, cpu_samples, cpu_none;
	uint64_t bad_reason;    /* goroutine samples whose wait reason is none of the runtime's */
	uint64_t bad_bounds;    /* walks dropped: the g's stack bounds do not hold its sp, read twice */
	uint64_t lists_unread, unread_ns; /* snapshots without runtime.allgs, the time they cover */
	uint64_t empty;         /* snapshots with the list that read none of its goroutines */
	uint64_t cpu_ns, counted, max_cpu_ns, setup_ns, max_interval;
	/* scratch, kept from one snapshot to the next (no fresh pages each time) */
	uint8_t *gbuf, *gbuf2, *sbuf;
	size_t gcap, scap;
	struct pm_cap_rd *r, *sr, *gr;
	size_t *walk;
	size_t rcap;
	bool setup;             /* this snapshot found a process's layout (not counted in the rate) */
	struct pm_slog *slog;   /* --raw and replay: the snapshots' reads (capture.h) */
	uint64_t pcs[PM_SC_MAX_FRAMES];
};

static struct wall *wall_of(const struct pm_srcctx *ctx)
{
	return ctx->state;
}

static int wall_configure(struct pm_srcctx *ctx)
{
	unsigned hz = pm_sc_cfg(ctx)->wall_hz;

	if (!hz)
		return 0;
	if (hz > 1000) {
		pm_sc_err(ctx, PM_REC_USAGE,
			  "invalid --wall rate '%u': must be 1..1000 snapshots a second", hz);
		return -1;
	}
	return 0;
}

static size_t wall_nvalues(struct pm_srcctx *ctx)
{
	return pm_sc_cfg(ctx) && pm_sc_cfg(ctx)->wall_hz ? 1 : 0;
}

/* ---- the runtime's names of its wait reasons ---- */

static bool name_at(const struct pm_elf *e, uint64_t ptr, uint64_t len, char *out, size_t cap)
{
	const uint8_t *b;

	if (len >= cap || !(b = pm_elf_vaddr_bytes(e, ptr, (size_t)len)))
		return false;
	for (size_t i = 0; i < len; i++)
		if (b[i] < 0x20 || b[i] > 0x7e)
			return false;
	memcpy(out, b, (size_t)len);
	out[len] = '\0';
	return true;
}

/*
 * runtime.waitReasonStrings, an array of Go strings {ptr, len} in the
 * binary's initialised data, found by its content (the symbol is gone from
 * a stripped binary): entry 0 is "", 1 "GC assist marking", 2 "IO wait" in
 * every version from 1.19 on; the entries after them until one is not a
 * string (the numbering changes across versions, the names are read).
 */
size_t pm_wall_reason_names(const struct pm_elf *e, char **names, size_t cap)
{
	char nm[128];

	if (cap < 3)
		return 0;
	for (size_t si = 0; si < pm_elf_nsegments(e); si++) {
		const struct pm_elf_segment *sg = pm_elf_segment_at(e, si);
		const uint8_t *b;

		if (!(sg->flags & 2) || !sg->filesz) /* PF_W: initialised data */
			continue;
		b = pm_elf_vaddr_bytes(e, sg->vaddr, (size_t)sg->filesz);
		if (!b)
			continue;
		for (uint64_t o = 16; o + 48 <= sg->filesz; o += 8) {
			size_t k;

			if (pm_le64(b + o + 8) != 17 || pm_le64(b + o + 24) != 7 ||
			    pm_le64(b + o - 8) != 0 ||
			    !name_at(e, pm_le64(b + o), 17, nm, sizeof(nm)) ||
			    strcmp(nm, "GC assist marking") != 0 ||
			    !name_at(e, pm_le64(b + o + 16), 7, nm, sizeof(nm)) ||
			    strcmp(nm, "IO wait") != 0)
				continue;
			names[0] = xstrdup("");
			for (k = 1; k < cap && o - 16 + 16 * k + 16 <= sg->filesz; k++) {
				const uint8_t *h = b + o - 16 + 16 * k;
				uint64_t len = pm_le64(h + 8);

				if (!len || !name_at(e, pm_le64(h), len, nm, sizeof(nm)))
					break;
				names[k] = xstrdup(nm);
			}
			return k;
		}
	}
	return 0;
}

static bool read_names(struct wproc *w, const char *path)
{
	struct pm_elf *e = path ? pm_elf_open(path) : NULL;

	if (!e)
		return false;
	w->nnames = pm_wall_reason_names(e, w->names, WALL_REASONS);
	pm_elf_free(e);
	return true;
}

/*
 * The names, once: the binary is opened again through /proc, which fails
 * now and then while a launched program starts (tried again at the next
 * snapshots, WALL_NAME_TRIES in all)
 */
static void find_names(struct wproc *p, bool replay)
{
	char exe[64];

	if (p->nnames || p->name_tries >= WALL_NAME_TRIES)
		return;
	p->name_tries++;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)p->pid);
	/* (at replay the process is gone: its binary by the path the capture has) */
	if (read_names(p, p->path) || (!replay && read_names(p, exe)))
		p->name_tries = WALL_NAME_TRIES;
	if (!p->nnames && p->name_tries == WALL_NAME_TRIES)
		pm_warn("--wall: PID %d: the runtime's names of wait reasons were not found in "
			"its binary: wait_reason labels are numbers", (int)p->pid);
}

/* ---- labels and marker frames ---- */

/* parked: 0, then 1, 2, 5 x 10^k ms up to 5000 s; a bucket's value is its lower bound */
static const uint64_t bucket_lo[WALL_BUCKETS] = {
	0, 1000000ULL, 2000000ULL, 5000000ULL, 10000000ULL, 20000000ULL, 50000000ULL,
	100000000ULL, 200000000ULL, 500000000ULL, 1000000000ULL, 2000000000ULL, 5000000000ULL,
	10000000000ULL, 20000000000ULL, 50000000000ULL, 100000000000ULL, 200000000000ULL,
	500000000000ULL, 1000000000000ULL, 2000000000000ULL, 5000000000000ULL,
};

static int bucket_of(uint64_t ns)
{
	int b = WALL_BUCKETS - 1;

	while (b > 0 && ns < bucket_lo[b])
		b--;
	return b;
}

static int64_t bucket_ns(int b)
{
	return (int64_t)bucket_lo[b];
}

/* A label set's frame; @age: a running goroutine's CPU sample's, ms (-1 = none). */
static uint32_t lab_frame(struct pm_srcctx *ctx, struct wall *w, int state, int reason, int bucket,
			  int age)
{
	size_t k = ((size_t)state * (WALL_REASONS + 2) + (size_t)(reason + 1)) * (WALL_BUCKETS + 1) +
		   (size_t)(bucket + 1);
	uint32_t *slot = &w->lab_idx[k];
	struct pm_stack_frame f;

	if (age >= 0) {
		if (!w->age_idx)
			w->age_idx = xcalloc(WALL_AGE_MAX + 1, sizeof(*w->age_idx));
		slot = &w->age_idx[PM_MIN(age, WALL_AGE_MAX)];
	}
	if (!*slot) {
		if (w->nlabs == w->caplabs) {
			w->caplabs = w->caplabs ? 2 * w->caplabs : 64;
			w->labs = xrealloc(w->labs, w->caplabs * sizeof(*w->labs));
		}
		w->labs[w->nlabs].state = (uint8_t)state;
		w->labs[w->nlabs].reason = (int16_t)reason;
		w->labs[w->nlabs].bucket = (int8_t)bucket;
		w->labs[w->nlabs].age = (int16_t)(age >= 0 ? PM_MIN(age, WALL_AGE_MAX) : -1);
		*slot = (uint32_t)++w->nlabs;
	}
	f.map_id = ctx->map;
	f.is_return = false;
	f.addr = *slot - 1;
	f.vaddr = f.addr;
	return pm_stacks_frame(pm_sc_stacks(ctx), &f);
}

static uint32_t marker_frame(struct pm_srcctx *ctx, int which)
{
	struct pm_stack_frame f;

	f.map_id = ctx->map;
	f.is_return = false;
	f.addr = MARKER_BIT | (uint64_t)which; /* frames are told apart by map and addr */
	f.vaddr = f.addr;
	return pm_stacks_frame(pm_sc_stacks(ctx), &f);
}

/*
 * pcs to frame ids: return addresses, g.sched.pc too (where mcall or save
 * returns), none the pc of an interrupted instruction; but a goroutine
 * not started yet has its function's entry in g.sched.pc (gostartcall),
 * named as the function itself, not as the end of the one before it in
 * the text: Go's own rule, a pc is a return address only past its
 * function's entry
 */
static size_t frames_of(struct pm_srcctx *ctx, pid_t pid, const uint64_t *pcs, size_t n,
			uint32_t *ids)
{
	for (size_t i = 0; i < n; i++) {
		const struct pm_map *m = pm_maps_find(pm_sc_maps(ctx), pid, pcs[i]);
		struct pm_stack_frame f;
		struct pm_unw_func fi;

		f.map_id = m ? m->id : PM_STACKS_NO_MAP;
		f.addr = pcs[i];
		f.vaddr = m && m->sym ? (uint64_t)((int64_t)pcs[i] - m->bias) : pcs[i];
		f.is_return = !(i == 0 && m && m->sym && pm_sym_is_go(m->sym) &&
				pm_sym_func_info(m->sym, f.vaddr, &fi) == 0 && fi.entry == f.vaddr);
		ids[i] = pm_stacks_frame(pm_sc_stacks(ctx), &f);
	}
	return n;
}

/* ---- a running goroutine's stack ---- */

static struct wproc *proc_find(struct wall *w, pid_t pid)
{
	for (size_t i = 0; i < w->nprocs; i++)
		if (w->procs[i].pid == pid)
			return &w->procs[i];
	return NULL;
}

void pm_wall_cpu_sample(struct pm_srcctx *wall, pid_t pid, uint64_t time, const uint32_t *ids,
			size_t n)
{
	struct pm_srcctx *ctx = wall;
	struct wall *w = wall_of(ctx);
	struct wproc *p;
	struct wcpu *c;
	uint64_t gp;
	int64_t goid;
	int32_t k;

	/* a process the snapshots read (its layout known), a goroutine alive */
	if (!w || !w->hz || !n || !(p = proc_find(w, pid)) || p->state != 1 ||
	    !pm_gor_last_g(pm_sc_gor(ctx), &gp, &goid))
		return;
	n = PM_MIN(n, PM_SC_MAX_FRAMES + 1);
	if (!pm_idtab_get(&p->cpu_of, gp, &k)) {
		p->cpu = xrealloc(p->cpu, (p->ncpu + 1) * sizeof(*p->cpu));
		memset(&p->cpu[p->ncpu], 0, sizeof(*p->cpu));
		k = (int32_t)++p->ncpu;
		pm_idtab_put(&p->cpu_of, gp, k);
	}
	c = &p->cpu[k - 1];
	if (c->cap < n) {
		c->cap = (uint32_t)n;
		c->ids = xrealloc(c->ids, n * sizeof(*c->ids));
	}
	if (!c->goid)
		p->live_cpu++;
	memcpy(c->ids, ids, n * sizeof(*ids));
	c->n = (uint32_t)n;
	c->goid = goid;
	c->time = time;
	w->cpu_samples++;
}

/* The goroutine of g @gp is gone: its CPU sample's stack too. */
static void cpu_drop(struct wproc *p, uint64_t gp)
{
	int32_t k;

	if (!pm_idtab_get(&p->cpu_of, gp, &k) || !p->cpu[k - 1].goid)
		return;
	free(p->cpu[k - 1].ids);
	memset(&p->cpu[k - 1], 0, sizeof(p->cpu[0]));
	p->live_cpu--;
}

/*
 * On a thread now: g.sched is where it last stopped, not where it is, so
 * its stack is not read.  Its frames under "[running]" into @ids: the
 * stack of its latest CPU sample when one was taken since a snapshot last
 * saw it waiting or in a system call (not runnable: preempted, it goes on
 * where it was), and not over WALL_AGE_MAX old (*age: how old, ms), else
 * its start function (the root of every goroutine's stack).
 */
static size_t running_stack(struct pm_srcctx *ctx, struct wall *w, struct wproc *p,
			    const struct went *e, uint64_t gp, const uint8_t *gb, uint64_t now,
			    uint32_t *ids, int *age)
{
	const struct pm_gor_layout *l = p->l;
	uint64_t spc = l->g_startpc ? pm_le64(gb + l->g_startpc) : 0;
	int64_t goid = (int64_t)pm_le64(gb + l->g_goid);
	int32_t k;

	if (p->ncpu && pm_idtab_get(&p->cpu_of, gp, &k)) {
		const struct wcpu *c = &p->cpu[k - 1];
		uint64_t ms = now > c->time ? (now - c->time) / 1000000 : 0;

		if (c->goid == goid && c->time >= e->stopped && ms <= WALL_AGE_MAX) {
			memcpy(ids, c->ids, c->n * sizeof(*ids));
			*age = (int)ms;
			w->running_cpu++;
			return c->n;
		}
	}
	if (p->ncpu || w->cpu_samples)
		w->cpu_none++;
	if (!spc)
		return 0;
	spc++; /* read as a return address: the function itself */
	return frames_of(ctx, p->pid, &spc, 1, ids);
}

/* ---- snapshots ---- */

static struct wproc *proc_of(struct wall *w, pid_t pid)
{
	struct wproc *p = proc_find(w, pid);

	if (p)
		return p;
	w->procs = xrealloc(w->procs, (w->nprocs + 1) * sizeof(*w->procs));
	memset(&w->procs[w->nprocs], 0, sizeof(w->procs[0]));
	w->procs[w->nprocs].pid = pid;
	return &w->procs[w->nprocs++];
}

/* The runtime's layout for @pid, from its Go binary's mapping. */
static bool proc_ready(struct pm_srcctx *ctx, struct wall *w, struct wproc *p)
{
	const char *path = NULL;
	uint64_t pcs[8];
	size_t n = 0;

	if (p->state)
		return p->state == 1;
	/* (--raw: the maps into the capture too; at replay, they are there) */
	if (!pm_sc_replay(ctx) && !pm_maps_known(pm_sc_maps(ctx), p->pid)) {
		pm_sc_load_maps(ctx, p->pid);
	}
	for (size_t i = 0; i < pm_maps_count(pm_sc_maps(ctx)) && n < PM_ARRAY_SIZE(pcs); i++) {
		const struct pm_map *m = pm_maps_at(pm_sc_maps(ctx), (uint32_t)i);

		if (m && m->pid == p->pid && m->sym && pm_sym_is_go(m->sym))
			pcs[n++] = m->start;
	}
	if (!n)
		return false; /* not (yet) a Go process: tried again next time */
	p->l = pm_gor_layout_of(pm_sc_gor(ctx), pm_sc_maps(ctx), p->pid, pcs, n, &path);
	if (!p->l || !p->l->g_sched_sp || !p->l->g_sched_pc || !p->l->g_status ||
	    p->l->g_size > WALL_GBUF) {
		p->state = -1;
		pm_warn("--wall: PID %d: the runtime's layout of a goroutine is not known: no "
			"wall profile of it", (int)p->pid);
		return false;
	}
	p->path = path ? xstrdup(path) : NULL;
	find_names(p, pm_sc_replay(ctx));
	w->setup = true;
	p->state = 1;
	return true;
}

/* status -> ST_*, -1 = no goroutine (idle, dead), -2 = moving (its stack is being copied) */
static int state_of(uint32_t st)
{
	switch (st & ~0x1000u) {
	case 1:
		return ST_RUNNABLE;
	case 2:
		return ST_RUNNING;
	case 3:
		return ST_SYSCALL;
	case 4:
	case 9:  /* _Gpreempted: suspended, waiting to be resumed */
	case 10: /* _Gleaked (1.26): waiting for good */
		return ST_WAITING;
	case 8:
		return -2;
	default:
		return -1;
	}
}

/* The goroutine's sample so far into the profile. */
static void flush(struct pm_srcctx *ctx, pid_t pid, struct went *e)
{
	int64_t v = (int64_t)e->accw;

	if (!e->accw || !e->acc)
		return;
	pm_sc_add_stack(ctx, (uint32_t)pid, 0, e->acc, e->nacc, &v);
	e->accw = 0;
}

static bool same_key(const struct went *e, const struct pm_gor_layout *l, uint64_t gp,
		     const uint8_t *gb)
{
	return e->gp == gp && e->goid == (int64_t)pm_le64(gb + l->g_goid) &&
	       e->status == (uint32_t)pm_le32(gb + l->g_status) &&
	       e->reason == (l->g_waitreason ? gb[l->g_waitreason] : 0) &&
	       e->seq == (l->g_trackseq ? gb[l->g_trackseq] : 0) &&
	       e->pc == pm_le64(gb + l->g_sched_pc) && e->sp == pm_le64(gb + l->g_sched_sp) &&
	       e->bp == pm_le64(gb + l->g_sched_bp);
}

/* What a walk depends on, equal in two reads of a g: else it ran (or moved) between them. */
static bool same_g(const struct pm_gor_layout *l, const uint8_t *a, const uint8_t *b)
{
	const uint32_t off[] = { 0, 8, l->g_status, l->g_goid, l->g_sched_pc, l->g_sched_sp,
				 l->g_sched_bp };

	for (size_t i = 0; i < PM_ARRAY_SIZE(off); i++)
		if (memcmp(a + off[i], b + off[i], i == 2 ? 4 : 8) != 0)
			return false;
	return (!l->g_waitreason || a[l->g_waitreason] == b[l->g_waitreason]) &&
	       (!l->g_trackseq || a[l->g_trackseq] == b[l->g_trackseq]);
}

/*
 * One snapshot's work on goroutines gs[0..n) of @p (their entries
 * ent[0..n)), shared by the steps below: the chunk's gs are read into
 * w->gbuf, gsz bytes each (g_size rounded up to 8), w->r[i] saying which
 * were read.
 */
struct wchunk {
	struct pm_srcctx *ctx;
	struct wall *w;
	struct wproc *p;
	const uint64_t *gs;
	struct went *ent;
	size_t n;
	uint32_t gsz;
	uint64_t now, weight;
};

/* The scratch for @n goroutines of @gsz bytes each, kept for the next snapshot. */
static void chunk_scratch(struct wall *w, size_t n, uint32_t gsz)
{
	if (w->gcap < n * gsz) {
		free(w->gbuf);
		free(w->gbuf2);
		w->gcap = n * gsz + n * gsz / 4;
		w->gbuf = xmalloc(w->gcap);
		w->gbuf2 = xmalloc(w->gcap);
	}
	if (w->rcap < n) {
		w->rcap = n + n / 4;
		w->r = xrealloc(w->r, w->rcap * sizeof(*w->r));
		w->sr = xrealloc(w->sr, w->rcap * sizeof(*w->sr));
		w->gr = xrealloc(w->gr, w->rcap * sizeof(*w->gr));
		w->walk = xrealloc(w->walk, w->rcap * sizeof(*w->walk));
	}
}

/*
 * Every g of the chunk, one read each, batched; the indexes of those whose
 * stack is to be walked (stopped, changed since their last walk) into
 * w->walk, *nwalk of them.  Returns how many gs were read.
 */
static size_t chunk_read_gs(const struct wchunk *c, size_t *nwalk)
{
	struct wall *w = c->w;
	const struct pm_gor_layout *l = c->p->l;
	struct pm_cap_rd *r = w->r;
	size_t nread = 0;

	for (size_t i = 0; i < c->n; i++) {
		r[i].addr = c->gs[i];
		r[i].buf = w->gbuf + i * c->gsz;
		r[i].len = c->gsz;
	}
	pm_sc_readv(c->ctx, c->p->pid, r, c->n);
	*nwalk = 0;
	for (size_t i = 0; i < c->n; i++) {
		const uint8_t *gb = w->gbuf + i * c->gsz;
		int64_t goid;
		int state;

		if (!r[i].ok) {
			w->unreadable++;
			continue;
		}
		nread++;
		goid = (int64_t)pm_le64(gb + l->g_goid);
		state = state_of((uint32_t)pm_le32(gb + l->g_status));
		if (state == -1 || goid <= 0)
			continue;
		if (state == -2) {
			w->moving++; /* its stack is moving: not read now (counted) */
			continue;
		}
		if (state == ST_RUNNING)
			continue; /* its saved context is stale: no walk */
		if (same_key(&c->ent[i], l, c->gs[i], gb) && c->ent[i].frames)
			continue;
		w->walk[(*nwalk)++] = i;
	}
	return nread;
}

/*
 * The stacks of the nwalk goroutines in w->walk, from their saved sp up to
 * their stack's top (at most WALL_STACK bytes), packed into w->sbuf, one
 * batched read; w->sr[k].len 0: the saved sp is not within the g's stack
 * bounds, not read.
 */
static void chunk_read_stacks(const struct wchunk *c, size_t nwalk)
{
	struct wall *w = c->w;
	const struct pm_gor_layout *l = c->p->l;
	struct pm_cap_rd *sr = w->sr;
	size_t total = 0, off = 0;

	for (size_t k = 0; k < nwalk; k++) {
		const uint8_t *gb = w->gbuf + w->walk[k] * c->gsz;
		uint64_t lo = pm_le64(gb), hi = pm_le64(gb + 8), sp = pm_le64(gb + l->g_sched_sp);

		sr[k].addr = sp;
		sr[k].len = lo <= sp && sp < hi ? (size_t)PM_MIN(hi - sp, WALL_STACK) : 0;
		total += sr[k].len;
		w->gr[k].len = 0;
	}
	if (w->scap < total) { /* packed: a parked goroutine's stack is a few hundred bytes */
		free(w->sbuf);
		w->scap = total + total / 4;
		w->sbuf = xmalloc(w->scap);
	}
	for (size_t k = 0; k < nwalk; k++) {
		sr[k].buf = w->sbuf + off;
		off += sr[k].len;
	}
	pm_sc_readv(c->ctx, c->p->pid, sr, nwalk);
}

/* The goroutine of g @gb, its stack read into @sr: walked from g.sched, its frames into @e. */
static void walk_stack(const struct wchunk *c, const uint8_t *gb, const struct pm_cap_rd *sr,
		       struct went *e)
{
	struct pm_srcctx *ctx = c->ctx;
	struct wall *w = c->w;
	const struct pm_gor_layout *l = c->p->l;
	pid_t pid = c->p->pid;
	struct pm_unw_input in;
	unsigned status = 0;
	size_t nf;
	uint32_t ids[PM_SC_MAX_FRAMES + 1];

	memset(&in, 0, sizeof(in));
	in.ip = pm_le64(gb + l->g_sched_pc);
	in.sp = pm_le64(gb + l->g_sched_sp);
	in.bp = pm_le64(gb + l->g_sched_bp);
	in.stack = sr->buf;
	in.stack_len = sr->len;
	nf = pm_sc_unwind(ctx, pid, &in, w->pcs, PM_SC_MAX_FRAMES, &status);
	nf = frames_of(ctx, pid, w->pcs, nf, ids);
	if (!(status & PM_UNW_COMPLETE)) {
		ids[nf++] = pm_sc_cut_frame(ctx);
		w->cut++;
	}
	flush(ctx, pid, e);
	free(e->frames);
	e->frames = xmalloc(nf * sizeof(*ids));
	memcpy(e->frames, ids, nf * sizeof(*ids));
	e->nf = (uint32_t)nf;
	e->gen++;
	w->walked++;
}

/* The key of @e's frames: the g @gb as walked, at @now. */
static void set_key(struct went *e, const struct pm_gor_layout *l, uint64_t gp, const uint8_t *gb,
		    uint64_t now)
{
	e->gp = gp;
	e->goid = (int64_t)pm_le64(gb + l->g_goid);
	e->status = (uint32_t)pm_le32(gb + l->g_status);
	e->reason = l->g_waitreason ? gb[l->g_waitreason] : 0;
	e->seq = l->g_trackseq ? gb[l->g_trackseq] : 0;
	e->pc = pm_le64(gb + l->g_sched_pc);
	e->sp = pm_le64(gb + l->g_sched_sp);
	e->bp = pm_le64(gb + l->g_sched_bp);
	e->since = now;
}

/*
 * The gs walked, read again (into w->gbuf2, w->gr): a goroutine whose g
 * is the same as before its walk keeps the frames walked; one that ran
 * meanwhile is dropped (counted), never misplaced: in round 0, when it is
 * stopped now, its second read is put in w->walk to be walked again.
 * Returns how many were.
 */
static size_t check_walked(const struct wchunk *c, size_t nwalk, int round)
{
	struct pm_srcctx *ctx = c->ctx;
	struct wall *w = c->w;
	const struct pm_gor_layout *l = c->p->l;
	const struct pm_cap_rd *sr = w->sr, *gr = w->gr;
	size_t *walk = w->walk;
	size_t nretry = 0;

	pm_sc_readv(ctx, c->p->pid, w->gr, nwalk);
	for (size_t k = 0; k < nwalk; k++) {
		uint8_t *gb = w->gbuf + walk[k] * c->gsz;
		struct went *e = &c->ent[walk[k]];

		if (!gr[k].len)
			continue;
		if (!sr[k].len && gr[k].ok && same_g(l, gb, gr[k].buf)) {
			w->bad_bounds++; /* the same g twice: its bounds are wrong, not read */
			continue;
		}
		if (!gr[k].ok || !same_g(l, gb, gr[k].buf)) {
			int ns = gr[k].ok ? state_of((uint32_t)pm_le32(gr[k].buf + l->g_status))
					  : -1;

			flush(ctx, c->p->pid, e);
			free(e->frames);
			e->frames = NULL;
			e->gp = 0;
			if (round == 0 && ns >= 0 && ns != ST_RUNNING) {
				/* the second read is the g as it is now: walk it */
				memcpy(gb, gr[k].buf, c->gsz);
				walk[nretry++] = walk[k];
				w->retried++;
			} else if (gr[k].ok && ns == ST_RUNNING) {
				/* it runs now: a running goroutine's sample (no stack) */
				memcpy(gb, gr[k].buf, c->gsz);
			} else {
				w->torn++;
			}
			continue;
		}
		set_key(e, l, c->gs[walk[k]], gb, c->now);
	}
	return nretry;
}

/*
 * One round over the nwalk goroutines in w->walk: their stacks read and
 * walked, then each g read again (check_walked()).  Returns how many are
 * to be tried again.
 */
static size_t walk_round(const struct wchunk *c, size_t nwalk, int round)
{
	struct wall *w = c->w;
	const struct pm_cap_rd *sr = w->sr;
	struct pm_cap_rd *gr = w->gr;

	chunk_read_stacks(c, nwalk);
	pm_sc_lookup_pid(c->ctx, c->p->pid);
	for (size_t k = 0; k < nwalk; k++) {
		size_t i = w->walk[k];

		if (!sr[k].len) {
			/*
			 * its saved sp is not within its stack bounds: the g read
			 * again tells a g that changed while read (torn) from
			 * bounds that are wrong as they are (bad bounds)
			 */
			gr[k].addr = c->gs[i];
			gr[k].buf = w->gbuf2 + k * c->gsz;
			gr[k].len = c->gsz;
			continue;
		}
		if (!sr[k].ok) {
			w->torn++; /* its stack not readable where its g said: changed while read */
			continue;
		}
		walk_stack(c, w->gbuf + i * c->gsz, &sr[k], &c->ent[i]);
		gr[k].addr = c->gs[i];
		gr[k].buf = w->gbuf2 + k * c->gsz;
		gr[k].len = c->gsz;
	}
	return check_walked(c, nwalk, round);
}

/*
 * The labels of a stopped goroutine in @state: how long it has been parked
 * (*bucket) and why (*reason: -2 preempted), else left as they are (-1).
 */
static void wait_labels(struct wall *w, const struct wproc *p, const struct went *e,
			const uint8_t *gb, int state, uint64_t now, int *reason, int *bucket)
{
	const struct pm_gor_layout *l = p->l;

	if (state == ST_WAITING || state == ST_SYSCALL) {
		uint64_t since = e->since;
		int64_t ws = l->g_waitsince ? (int64_t)pm_le64(gb + l->g_waitsince) : 0;

		/* the runtime's own record (set at a GC) when older */
		if (ws > 0 && (uint64_t)ws < since)
			since = (uint64_t)ws;
		*bucket = bucket_of(now - since);
	}
	if (state == ST_WAITING) {
		*reason = l->g_waitreason ? gb[l->g_waitreason] : -1;
		/* none of the runtime's: "unknown (N)", counted, never another's name */
		if (*reason > 0 && p->nnames &&
		    ((size_t)*reason >= p->nnames || !p->names[*reason]))
			w->bad_reason++;
	}
	if ((pm_le32(gb + l->g_status) & ~0x1000u) == 9)
		*reason = -2; /* preempted: named below */
}

/*
 * A goroutine's frames ids[0..nid) completed: its goroutine's frames
 * (creators, tag, labels) and the frame of its labels.  Returns how many.
 */
static size_t sample_frames(const struct wchunk *c, uint64_t gp, const uint8_t *gb, uint32_t *ids,
			    size_t nid, size_t cap, int state, int reason, int bucket, int age)
{
	struct pm_srcctx *ctx = c->ctx;

	nid = pm_gor_frames_of(pm_sc_gor(ctx), pm_sc_maps(ctx), pm_sc_stacks(ctx), c->p->pid, gp, gb,
			       c->now, ids, nid, cap - 1);
	ids[nid++] =
		lab_frame(ctx, c->w, state, reason == -2 ? WALL_PREEMPTED : reason, bucket, age);
	c->w->goroutines++;
	return nid;
}

/*
 * A running goroutine: its stack (running_stack(), under "[running]"),
 * added to the profile at once: it is not kept from one snapshot to the
 * next, since its frames are not known to be the same.
 */
static void sample_running(const struct wchunk *c, const struct went *e, uint64_t gp,
			   const uint8_t *gb)
{
	struct pm_srcctx *ctx = c->ctx;
	uint32_t ids[PM_SC_MAX_IDS];
	int64_t v = (int64_t)c->weight;
	size_t nid = 0;
	int age = -1;

	ids[nid++] = marker_frame(ctx, MK_RUNNING);
	nid += running_stack(ctx, c->w, c->p, e, gp, gb, c->now, ids + nid, &age);
	c->w->running++;
	nid = sample_frames(c, gp, gb, ids, nid, PM_ARRAY_SIZE(ids), ST_RUNNING, -1, -1, age);
	pm_sc_add_stack(ctx, (uint32_t)c->p->pid, 0, ids, nid, &v);
}

/*
 * A stopped goroutine (runnable, waiting, in a system call) whose frames
 * were walked: the time weighs on its sample so far when nothing in it
 * changed, else its sample so far goes into the profile and a new one
 * begins.
 */
static void sample_stopped(const struct wchunk *c, struct went *e, uint64_t gp, const uint8_t *gb,
			   int state, uint64_t lp)
{
	uint32_t ids[PM_SC_MAX_IDS];
	int reason = -1, bucket = -1;
	size_t nid;

	if (state != ST_RUNNABLE)
		e->stopped = c->now;
	if (!same_key(e, c->p->l, gp, gb) || !e->frames)
		return; /* torn or bad stack bounds (counted above) */
	if (e->since != c->now)
		c->w->reused++;
	memcpy(ids, e->frames, e->nf * sizeof(*ids));
	nid = e->nf;
	wait_labels(c->w, c->p, e, gb, state, c->now, &reason, &bucket);
	/*
	 * the same stack, labels, state, reason and bucket as its sample so
	 * far (built over 50 ms ago, when every creation before it had been
	 * fed): only its weight grows
	 */
	if (e->acc && e->acc_gen == e->gen && e->acc_lp == lp && e->acc_state == state &&
	    e->acc_reason == reason && e->acc_bucket == bucket &&
	    c->now - e->acc_time > 50000000ULL) {
		e->accw += c->weight;
		c->w->goroutines++;
		return;
	}
	nid = sample_frames(c, gp, gb, ids, nid, PM_ARRAY_SIZE(ids), state, reason, bucket, -1);
	flush(c->ctx, c->p->pid, e);
	if (e->nacc < nid || !e->acc) {
		free(e->acc);
		e->acc = xmalloc(nid * sizeof(*ids));
	}
	memcpy(e->acc, ids, nid * sizeof(*ids));
	e->nacc = (uint32_t)nid;
	e->acc_gen = e->gen;
	e->acc_lp = lp;
	e->acc_state = (int8_t)state;
	e->acc_reason = (int16_t)reason;
	e->acc_bucket = (int8_t)bucket;
	e->acc_time = e->acc_time ? e->acc_time : c->now;
	e->accw = c->weight;
}

/* The goroutine in the chunk's g @i, read: one sample of the time since the last snapshot. */
static void sample_g(const struct wchunk *c, size_t i)
{
	const struct pm_gor_layout *l = c->p->l;
	const uint8_t *gb = c->w->gbuf + i * c->gsz;
	struct went *e = &c->ent[i];
	int64_t goid = (int64_t)pm_le64(gb + l->g_goid);
	int state = state_of((uint32_t)pm_le32(gb + l->g_status));

	if (state < 0 || goid <= 0) {
		flush(c->ctx, c->p->pid, e); /* it exited: its sample is whole */
		e->stopped = c->now;
		if (!e->gone && c->p->live_cpu) /* once, not at every snapshot */
			cpu_drop(c->p, c->gs[i]);
		e->gone = true;
		return;
	}
	e->gone = false;
	if (state == ST_RUNNING)
		sample_running(c, e, c->gs[i], gb);
	else
		sample_stopped(c, e, c->gs[i], gb, state,
			       l->g_labels ? pm_le64(gb + l->g_labels) : 0);
}

/* Goroutines gs[0..n) of @p (their entries ent[0..n)): one snapshot's work on them. */
static size_t snapshot_chunk(struct pm_srcctx *ctx, struct wall *w, struct wproc *p,
			     const uint64_t *gs, struct went *ent, size_t n, uint64_t now,
			     uint64_t weight)
{
	const struct wchunk c = {
		.ctx = ctx,
		.w = w,
		.p = p,
		.gs = gs,
		.ent = ent,
		.n = n,
		.gsz = (p->l->g_size + 7) & ~7u,
		.now = now,
		.weight = weight,
	};
	size_t nread, nwalk;

	chunk_scratch(w, n, c.gsz);
	nread = chunk_read_gs(&c, &nwalk);
	/*
	 * the stacks of the goroutines that changed: read, walked, then the g
	 * read again; one that ran meanwhile is tried once more from that
	 * second read, then dropped
	 */
	for (int round = 0; round < 2 && nwalk; round++)
		nwalk = walk_round(&c, nwalk, round);
	/* every goroutine read: one sample of the time since the last snapshot */
	for (size_t i = 0; i < n; i++)
		if (w->r[i].ok)
			sample_g(&c, i);
	return nread;
}

/*
 * A snapshot of @p at @now read goroutines (@read) or not: the time since
 * the last one that did is counted in no sample, within the span when one
 * reads again, else after it (the process exited before this snapshot:
 * its goroutines' last interval is not theirs to weigh).
 */
static void snapshot_read(struct wall *w, struct wproc *p, uint64_t now, bool read,
			  uint64_t weight)
{
	if (!read) {
		p->pending += weight;
		return;
	}
	w->unread_ns += p->pending;
	p->pending = 0;
	p->last_read = now;
}

static void snapshot_proc(struct pm_srcctx *ctx, struct wall *w, struct wproc *p, uint64_t now)
{
	uint64_t *gs = NULL, weight;
	size_t n = 0, nread = 0;

	if (!proc_ready(ctx, w, p))
		return;
	find_names(p, pm_sc_replay(ctx));
	pm_gor_pass(pm_sc_gor(ctx));
	if (pm_gor_all(pm_sc_gor(ctx), p->pid, &gs, &n) != 0) {
		/*
		 * no goroutine known for this while: the time is counted as
		 * not read, never added to the next snapshot's states
		 */
		w->unreadable++;
		w->lists_unread++;
		if (p->last && now > p->last)
			snapshot_read(w, p, now, false, now - p->last);
		if (p->last)
			p->last = now;
		return;
	}
	/* the time since the last snapshot, whatever delayed this one: the wall time adds up */
	weight = p->last ? now - p->last : w->interval;
	if (!p->first)
		p->first = now - weight;
	if (weight > w->max_interval)
		w->max_interval = weight;
	p->last = now;
	if (n > p->nent) {
		p->ent = xrealloc(p->ent, n * sizeof(*p->ent));
		memset(p->ent + p->nent, 0, (n - p->nent) * sizeof(*p->ent));
		p->nent = n;
	}
	/* in chunks: the scratch is bounded (WALL_CHUNK goroutines), whatever their number */
	for (size_t c0 = 0; c0 < n; c0 += WALL_CHUNK)
		nread += snapshot_chunk(ctx, w, p, gs + c0, p->ent + c0,
					PM_MIN(WALL_CHUNK, n - c0), now, weight);
	if (!nread)
		w->empty++;
	snapshot_read(w, p, now, nread > 0, weight);
	free(gs);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * The processes' snapshots at @now, live from the timer and at replay from
 * the capture's WALL record (its reads logged and served by capture.h):
 * the same code, the same profile.  The rate: HZ snapshots a second, but
 * the next one comes no sooner than ten times the CPU time the last one
 * took, so that snapshots take at most a tenth of one core (WALL_BUDGET),
 * however many goroutines.  The snapshot that first reads a process (its
 * layout, its binary) does not count.  Each goroutine's sample weighs the
 * time since the previous snapshot, so the wall time adds up whatever the
 * rate.
 */
static void snapshots(struct pm_srcctx *ctx, struct wall *w, uint64_t now, const pid_t *pids,
		      size_t npids)
{
	uint64_t c0, c, iv;

	c0 = thread_cpu_ns();
	pm_sc_snap_begin(ctx, &w->slog);
	for (size_t i = 0; i < npids; i++)
		snapshot_proc(ctx, w, proc_of(w, pids[i]), now);
	c = thread_cpu_ns() - c0;
	pm_sc_value(ctx, 0, PM_CAP_KEY_SNAP_CPU, &c, sizeof(c)); /* (the replay's: the live one's) */
	pm_sc_snap_end(ctx, PM_DATA_REC_WALL, 0, now, pids, npids);
	w->snapshots++;
	if (w->setup) {
		w->setup_ns += c;
		w->setup = false;
		c = 0;
	} else {
		w->cpu_ns += c;
		w->counted++;
		if (c > w->max_cpu_ns)
			w->max_cpu_ns = c;
	}
	iv = 1000000000ULL / w->hz;
	if ((double)iv < (double)c / WALL_BUDGET)
		iv = (uint64_t)((double)c / WALL_BUDGET);
	w->interval = iv;
}

static uint64_t wall_timer(struct pm_srcctx *ctx, uint64_t now)
{
	struct wall *w = wall_of(ctx);
	pid_t pids[PM_DATA_SNAP_MAX_PIDS];
	size_t n = 0;

	if (!w || !w->hz)
		return 0;
	if (now < w->next)
		return w->next;
	if (pm_sc_attached(ctx)) {
		for (size_t i = 0; i < pm_sc_nprocs(ctx) && n < PM_ARRAY_SIZE(pids); i++)
			pids[n++] = pm_sc_pid(ctx, i);
	} else if (pm_sc_cmd_pid(ctx) > 0) {
		pids[n++] = pm_sc_cmd_pid(ctx);
	}
	snapshots(ctx, w, now, pids, n);
	w->next = (w->next && w->next + w->interval > now ? w->next : now) + w->interval;
	return w->next;
}

static void wall_snapshot(struct pm_srcctx *ctx, const struct pm_data_snap *sn)
{
	struct wall *w = wall_of(ctx);
	pid_t pids[PM_DATA_SNAP_MAX_PIDS];

	if (!w || !w->hz)
		return;
	for (size_t i = 0; i < sn->npids; i++)
		pids[i] = (pid_t)pm_le32((const uint8_t *)&sn->pids[i]);
	snapshots(ctx, w, sn->time, pids, sn->npids);
}

static void wall_begin(struct pm_srcctx *ctx)
{
	struct wall *w = wall_of(ctx);

	if (!pm_sc_cfg(ctx) || !pm_sc_cfg(ctx)->wall_hz)
		return;
	w->hz = pm_sc_cfg(ctx)->wall_hz;
	pm_sc_set_on(ctx); /* without events: its timer, snapshots and profile hooks */
	w->interval = 1000000000ULL / w->hz;
	w->lab_idx = xcalloc((size_t)ST_N * (WALL_REASONS + 2) * (WALL_BUCKETS + 1), sizeof(uint32_t));
}

static size_t wall_index_in(struct pm_profile *p)
{
	long k = pm_prof_find_sample_type(p, "wall");

	return k < 0 ? 0 : (size_t)k;
}

static void wall_profile_head(struct pm_srcctx *ctx, struct pm_profile *p)
{
	struct wall *w = wall_of(ctx);

	if (!w->hz)
		return;
	for (size_t i = 0; i < w->nprocs; i++) /* every goroutine's sample so far */
		for (size_t k = 0; k < w->procs[i].nent; k++)
			flush(ctx, w->procs[i].pid, &w->procs[i].ent[k]);
	pm_prof_add_sample_type(p, "wall", "nanoseconds");
}

/* An interval ended: its comments' counts begin again, the span at the last read. */
static void wall_cut(struct pm_srcctx *ctx)
{
	struct wall *w = wall_of(ctx);

	for (size_t i = 0; i < w->nprocs; i++)
		w->procs[i].first = w->procs[i].last_read;
	w->snapshots = w->goroutines = w->running = w->running_cpu = w->cpu_none = 0;
	w->walked = w->reused = w->retried = w->torn = w->bad_bounds = w->moving = 0;
	w->unreadable = w->cut = w->cpu_ns = w->counted = w->max_cpu_ns = w->max_interval = 0;
	w->lists_unread = w->unread_ns = w->bad_reason = w->empty = 0;
}

static void wall_profile_tail(struct pm_srcctx *ctx, struct pm_profile *p)
{
	struct wall *w = wall_of(ctx);
	char *c;
	double span = 0;
	uint64_t cut, most, after = 0;

	if (!w->hz)
		return;
	for (size_t i = 0; i < w->nprocs; i++) {
		const struct wproc *wp = &w->procs[i];

		if (wp->last_read > wp->first && wp->last_read - wp->first > span * 1e9)
			span = (double)(wp->last_read - wp->first) / 1e9;
		after += wp->pending;
	}
	c = xasprintf("pmuprof record: --wall: the snapshots cover %.2f s (each goroutine's "
		      "samples weigh the time since the snapshot before)", span);
	pm_prof_add_comment(p, c);
	free(c);
	c = xasprintf("pmuprof record: --wall %u Hz: %" PRIu64 " snapshots, %" PRIu64
		      " goroutine samples (%" PRIu64 " running: stack not read, %" PRIu64
		      " of them over their latest CPU sample's stack, %" PRIu64
		      " over their start function where CPU samples were kept), %" PRIu64
		      " stacks walked, %" PRIu64 " reused, %" PRIu64 " read again; dropped: %" PRIu64
		      " changed while read, %" PRIu64
		      " bad stack bounds (not holding the saved sp), %" PRIu64 " moving, %" PRIu64
		      " unreadable; %" PRIu64 " stacks cut; snapshot CPU %.3f ms average, %.3f ms "
		      "most (%.1f ms more to set up), longest interval %.0f ms",
		      w->hz, w->snapshots, w->goroutines, w->running, w->running_cpu, w->cpu_none,
		      w->walked, w->reused,
		      w->retried, w->torn, w->bad_bounds, w->moving, w->unreadable, w->cut,
		      w->counted ? (double)w->cpu_ns / 1e6 / (double)w->counted : 0.0,
		      (double)w->max_cpu_ns / 1e6, (double)w->setup_ns / 1e6,
		      (double)w->max_interval / 1e6);
	pm_prof_add_comment(p, c);
	free(c);
	pm_gor_allgs_cut(pm_sc_gor(ctx), &cut, &most);
	c = xasprintf("pmuprof record: --wall unknown: %" PRIu64 " snapshots found no list of "
		      "goroutines (runtime.allgs not readable), %.3f s in no sample; %" PRIu64
		      " lists read short (a length past the capacity, the limit of %u or the "
		      "first entry that cannot be a g), %" PRIu64 " entries left out at most; %" PRIu64
		      " goroutine samples with a wait reason none of the runtime's (\"unknown (N)\"); %"
		      PRIu64 " snapshots read none of the goroutines listed (the process gone); "
		      "%.3f s after the last snapshot that read one, in no sample",
		      w->lists_unread, (double)w->unread_ns / 1e9, cut, PM_GOR_ALLGS_MAX, most,
		      w->bad_reason, w->empty, (double)after / 1e9);
	pm_prof_add_comment(p, c);
	free(c);
}

static uint64_t wall_location(struct pm_srcctx *ctx, struct pm_profile *p, const struct pm_stack_frame *f)
{
	struct pm_prof_line line;

	(void)ctx;
	if (!(f->addr & MARKER_BIT) || (f->addr & ~MARKER_BIT) >= MK_N)
		return 0; /* a label frame: no location */
	line.func_id = pm_prof_func(p, marker_name[f->addr & ~MARKER_BIT],
				    marker_name[f->addr & ~MARKER_BIT], "", 0);
	line.line = 0;
	return pm_prof_loc(p, 0, 0, &line, 1);
}

static const char *reason_name(struct wall *w, struct pm_srcctx *ctx, int reason, char *buf,
			       size_t cap)
{
	(void)ctx;
	if (reason == WALL_PREEMPTED)
		return "preempted";
	/* the first process's names: one binary in practice */
	if (w->nprocs && (size_t)reason < w->procs[0].nnames && w->procs[0].names[reason])
		return w->procs[0].names[reason];
	snprintf(buf, cap, "unknown (%d)", reason);
	return buf;
}

static size_t wall_stack_labels(struct pm_srcctx *ctx, const uint32_t *ids, size_t *n,
				struct pm_prof_label *out, size_t max)
{
	struct wall *w = wall_of(ctx);
	const struct pm_stack_frame *f;
	const struct wlab *lb;
	size_t k = 0;

	if (!w->hz || !*n || max < 3)
		return 0;
	f = pm_stacks_frame_at(pm_sc_stacks(ctx), ids[*n - 1]);
	if (!f || f->map_id != ctx->map ||
	    (f->addr & MARKER_BIT) || f->addr >= w->nlabs)
		return 0;
	(*n)--;
	lb = &w->labs[f->addr];
	memset(out, 0, 3 * sizeof(*out));
	out[k].key = "state";
	out[k++].str = state_name[lb->state];
	if (lb->reason >= 0) {
		static char buf[32];

		out[k].key = "wait_reason";
		out[k++].str = reason_name(w, ctx, lb->reason, buf, sizeof(buf));
	}
	if (lb->bucket >= 0) {
		out[k].key = "parked";
		out[k].num = bucket_ns(lb->bucket);
		out[k++].num_unit = "nanoseconds";
	}
	if (lb->age >= 0 && k < max) {
		out[k].key = "cpu_sample_age_ms";
		out[k].num = lb->age;
		out[k++].num_unit = "milliseconds";
	}
	return k;
}

static void wall_profile_stack(struct pm_srcctx *ctx, struct pm_profile *p, const uint64_t *locs,
			       size_t n, const int64_t *v, struct pm_prof_label *lab, size_t nlab)
{
	int64_t val[1 + PM_EVT_MAX + 16]; /* every source's sample types (alloc's too), zero */

	if (!wall_of(ctx)->hz || !v[0] || pm_prof_nsample_types(p) > PM_ARRAY_SIZE(val))
		return;
	memset(val, 0, sizeof(val));
	val[wall_index_in(p)] = v[0];
	pm_prof_add(p, locs, n, val, lab, nlab);
}

static void wall_end(struct pm_srcctx *ctx)
{
	struct wall *w = wall_of(ctx);

	if (!w)
		return;
	for (size_t i = 0; i < w->nprocs; i++) {
		for (size_t k = 0; k < w->procs[i].nent; k++) {
			free(w->procs[i].ent[k].frames);
			free(w->procs[i].ent[k].acc);
		}
		for (size_t k = 0; k < WALL_REASONS; k++)
			free(w->procs[i].names[k]);
		for (size_t k = 0; k < w->procs[i].ncpu; k++)
			free(w->procs[i].cpu[k].ids);
		free(w->procs[i].cpu);
		pm_idtab_free(&w->procs[i].cpu_of);
		free(w->procs[i].path);
		free(w->procs[i].ent);
	}
	free(w->procs);
	free(w->labs);
	free(w->lab_idx);
	free(w->age_idx);
	free(w->gbuf);
	free(w->gbuf2);
	free(w->sbuf);
	free(w->r);
	free(w->sr);
	free(w->gr);
	free(w->walk);
	pm_slog_free(w->slog);
}

const struct pm_source pm_src_wall = {
	.name = "wall",
	.state_size = sizeof(struct wall),
	.configure = wall_configure,
	.nvalues = wall_nvalues,
	.timer = wall_timer,
	.snap_type = PM_DATA_REC_WALL,
	.snapshot = wall_snapshot,
	.location = wall_location,
	.stack_labels = wall_stack_labels,
	.profile_head = wall_profile_head,
	.profile_tail = wall_profile_tail,
	.cut = wall_cut,
	.profile_stack = wall_profile_stack,
	.begin = wall_begin,
	.end = wall_end,
};
