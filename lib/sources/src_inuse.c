/* src_inuse: the live heap from the runtime's own records, --inuse (src_inuse.h). */
#include "sources/src_inuse.h"

#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "capture/datafile.h"
#include "symbols/elfimg.h"
#include "symbols/gopclntab.h"
#include "goruntime/gocode.h"
#include "base/idtab.h"
#include "symbols/maps.h"
#include "profile/profile.h"
#include "session/srcctx.h"
#include "capture/snaplog.h"
#include "sources/src_alloc.h"
#include "profile/stacks.h"
#include "symbols/symtab.h"

#define INTERVAL 100000000ULL  /* ns between reads at least */
#define BUDGET 0.02            /* the share of one core the reads may take */
#define HDR 48                 /* bytes of a bucket before its stack */
#define MAX_BUCKETS (1u << 20) /* buckets of one process at most */
#define MAX_NSTK 4096          /* PCs of one bucket at most (the runtime's: 1024 + 2) */
#define MAX_PCS (1u << 24)     /* PCs of one process's buckets at most, all together */
#define MAX_SIZE (1ULL << 40)  /* bytes: a larger object is a bad read */
#define BATCH 1024             /* reads batched at once */
#define TRIES 4                /* a record's reads until two agree */
#define SNAP_TRIES 3           /* a read of all records, the GC cycle changing */
#define DEFAULT_RATE 524288
#define MEM_PROFILE 1 /* bucket.typ of a heap record */
#define MARKER (1ULL << 62) /* a frame of ours: a marker, not a size */

enum { R_ALLOCS, R_FREES, R_ABYTES, R_FBYTES, R_N };
/* values per stack: buckets, then the four of Go's heap profile, scaled */
enum { V_BUCKETS, V_AOBJ, V_ASPACE, V_IOBJ, V_ISPACE, V_N };

struct bkt {
	uint64_t addr, size;
	uint32_t nstk;
	uint64_t *stk;  /* until its frames are made */
	uint32_t *ids;  /* its frames, leaf first, then the size frame */
	uint32_t nids;
	uint64_t v[R_N]; /* as the runtime publishes them, at the last good read */
	uint64_t pre;    /* allocations it had counted before the probe of --alloc (attached) */
	bool ok;         /* v from the last read */
};

struct iproc {
	pid_t pid;
	int state; /* 0 not set up, 1 on, -1 off (said why once) */
	char *path;
	int64_t bias;
	uint64_t mbuckets, cycle_at, rate_at; /* runtime addresses; 0 unknown */
	uint32_t rcs;                         /* bytes of a memRecordCycle: 32 or 16 */
	uint64_t head;                        /* the list's head when last walked */
	uint64_t npcs;                        /* the PCs of its buckets, all together */
	struct bkt *b;
	size_t nb, cap;
	struct pm_idtab seen;                 /* bucket address -> index in b: a list's cycle */
	int64_t rate;
	bool rate_known, clear, read_ok, final_ok;
	uint64_t reads;
};

struct inuse {
	bool on;
	struct iproc *procs;
	size_t nprocs;
	uint64_t next, interval;
	uint64_t reads, failed, retried, dropped, restarted, walked, attributed, unattributed;
	uint64_t cycles; /* walks that met a record already in the list: cut there */
	uint64_t cpu_ns, max_ns;
	uint64_t once_ns; /* of this read: setting up, frames named (not counted in the rate) */
	uint8_t *buf, *buf2;
	size_t bufcap;
	struct pm_slog *slog;   /* --raw and replay: the reads' log (capture.h) */
	/* replay: the processes of the read at the end, when the capture has it */
	pid_t final_pids[PM_DATA_SNAP_MAX_PIDS];
	size_t final_n;
	bool final_seen;
};

static struct inuse *inuse_of(const struct pm_srcctx *ctx)
{
	return ctx->state;
}

static uint64_t cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int inuse_configure(struct pm_srcctx *ctx)
{
	if (!pm_sc_cfg(ctx)->inuse)
		return 0;
	return 0;
}

/* (at replay, --inuse is the capture's INUSE records) */
static bool inuse_on(const struct pm_srcctx *ctx)
{
	const struct pm_record_cfg *cfg = pm_sc_cfg(ctx);

	return cfg && cfg->inuse;
}

static size_t inuse_nvalues(struct pm_srcctx *ctx)
{
	return inuse_on(ctx) ? V_N : 0;
}

static void inuse_begin(struct pm_srcctx *ctx)
{
	struct inuse *st = inuse_of(ctx);

	st->on = inuse_on(ctx);
	if (st->on)
		pm_sc_set_on(ctx); /* without events: its timer, snapshots and profile hooks */
	st->interval = INTERVAL;
}

/* ---- reading the target ---- */

/* The reads go through the capture (capture.h): logged with --raw, served at replay. */
static bool readv1(struct pm_srcctx *ctx, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	if (!pm_go_addr_ok(addr) || !len)
		return false;
	return pm_sc_read(ctx, pid, addr, buf, len) == 0;
}

/* @n reads of @len bytes at @addr[i] into @buf (consecutive); false when one fails. */
static bool readv_n(struct pm_srcctx *ctx, pid_t pid, const uint64_t *addr, size_t n, size_t len,
		    uint8_t *buf)
{
	struct pm_cap_rd r[BATCH];

	for (size_t i = 0; i < n; i += BATCH) {
		size_t k = n - i < BATCH ? n - i : BATCH;

		for (size_t j = 0; j < k; j++) {
			if (!pm_go_addr_ok(addr[i + j]))
				return false;
			r[j].addr = addr[i + j];
			r[j].buf = buf + (i + j) * len;
			r[j].len = len;
		}
		pm_sc_readv(ctx, pid, r, k);
		for (size_t j = 0; j < k; j++)
			if (!r[j].ok)
				return false;
	}
	return true;
}

/* ---- where the records are ---- */

/*
 * The one address function @name loads RIP-relative with a MOV of @wide
 * (gocode.h); 0 when none or several.
 */
static uint64_t load_target(const struct pm_elf *e, const struct pm_go *go, const char *name,
			    bool wide)
{
	uint64_t entry = 0;
	size_t len = 0;
	const uint8_t *b = pm_gocode_func(e, go, name, &entry, &len);

	return pm_gocode_mov_once(b, len, entry, wide);
}

/* The byte sizes of the runtime's heap records, from DWARF */
struct rec_sizes {
	uint64_t bucket, cycle;
};

static bool rec_size(Dwarf_Die *d, const char *name, void *arg)
{
	struct rec_sizes *z = arg;
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (dwarf_attr(d, DW_AT_byte_size, &a) && dwarf_formudata(&a, &w) == 0) {
		if (!strcmp(name, "runtime.bucket"))
			z->bucket = w;
		else if (!strcmp(name, "runtime.memRecordCycle"))
			z->cycle = w;
	}
	return z->bucket && z->cycle;
}

/* DWARF: the byte sizes of runtime.bucket and runtime.memRecordCycle; 0 when not there. */
static void dwarf_sizes(const char *path, uint64_t *bucket, uint64_t *cycle)
{
	struct rec_sizes z = { 0, 0 };
	Dwarf *dw;
	Elf *elf;
	int fd;

	*bucket = *cycle = 0;
	fd = pm_open_regular(path);
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	dw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	pm_gocode_runtime_structs(dw, rec_size, &z);
	*bucket = z.bucket;
	*cycle = z.cycle;
	if (dw)
		dwarf_end(dw);
	if (elf)
		elf_end(elf);
	close(fd);
}

static void say_off(struct iproc *p, const char *why)
{
	pm_warn("inuse: %s (process %d): %s: no in-use samples of it", p->path ? p->path : "?",
		(int)p->pid, why);
	p->state = -1;
}

/* The process's binary: where its records are, their layout, its load bias. */
static void setup(struct pm_srcctx *ctx, struct iproc *p)
{
	char exe[64], why[300];
	struct pm_elf *e = NULL;
	struct pm_go *go = NULL;
	const char *ver;
	uint64_t dsz_bucket, dsz_cycle;
	int minor;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)p->pid);
	free(p->path);
	p->path = pm_sc_replay(ctx) ? NULL : realpath(exe, NULL);
	{ /* the path, logged with --raw: the replay's (its length, then its bytes) */
		uint64_t n = p->path ? strlen(p->path) : 0;

		if (pm_sc_value(ctx, p->pid, PM_CAP_KEY_INUSE_PATH, &n, sizeof(n)) || n > 4096)
			n = 0;
		if (pm_sc_replay(ctx) && n) {
			p->path = xcalloc(1, (size_t)n + 1);
			if (pm_sc_value(ctx, p->pid, PM_CAP_KEY_INUSE_PATH + 8, p->path,
					(size_t)n) ||
			    strlen(p->path) != n) {
				free(p->path);
				p->path = NULL;
			}
		} else if (n) {
			pm_sc_value(ctx, p->pid, PM_CAP_KEY_INUSE_PATH + 8, p->path, (size_t)n);
		}
	}
	if (!p->path)
		return; /* not there yet, or gone: tried again at the next read */
	if (pm_gocode_open(p->path, -1, &e, &go, &minor, why, sizeof(why)) < 0) {
		say_off(p, "not a Go program for x86-64");
		goto out;
	}
	ver = pm_go_version(go);
	if (minor < 19) {
		snprintf(why, sizeof(why), "Go version '%s': --inuse reads Go 1.19 and later",
			 ver ? ver : "");
		say_off(p, why);
		goto out;
	}
	dwarf_sizes(p->path, &dsz_bucket, &dsz_cycle);
	p->rcs = minor >= 27 ? 16 : 32;
	if (dsz_cycle)
		p->rcs = (uint32_t)dsz_cycle;
	if ((dsz_bucket && dsz_bucket != HDR) || (p->rcs != 16 && p->rcs != 32) ||
	    (minor > 27 && !dsz_cycle)) {
		snprintf(why, sizeof(why),
			 "the layout of the runtime's heap records in %s is not known "
			 "(runtime.bucket %" PRIu64 " bytes, memRecordCycle %u)",
			 ver, dsz_bucket, p->rcs);
		say_off(p, why);
		goto out;
	}
	p->mbuckets = pm_elf_symbol_addr(e, "runtime.mbuckets");
	if (!p->mbuckets)
		p->mbuckets = load_target(e, go, "runtime.mProf_FlushLocked", true);
	p->cycle_at = pm_elf_symbol_addr(e, "runtime.mProfCycle");
	if (!p->cycle_at)
		p->cycle_at = load_target(e, go, "runtime.mProf_Free", false);
	p->rate_at = pm_alloc_rate_vaddr(e, go);
	if (!p->mbuckets) {
		say_off(p, "the runtime's heap records (runtime.mbuckets) not found in its code");
		goto out;
	}
	if (pm_elf_type(e) == ET_EXEC) {
		p->bias = 0;
	} else { /* a PIE: the bias of its mapping */
		bool found = false;

		for (int t = 0; t < 2 && !found; t++) {
			for (size_t i = 0; i < pm_maps_count(pm_sc_maps(ctx)) && !found; i++) {
				const struct pm_map *m = pm_maps_at(pm_sc_maps(ctx), (uint32_t)i);

				if (m->pid == p->pid && m->path && !strcmp(m->path, p->path) &&
				    pm_sc_map_sym(ctx, m)) {
					p->bias = m->bias;
					found = true;
				}
			}
			if (!found && !t && !pm_sc_replay(ctx)) /* (--raw: into the capture too) */
				pm_sc_load_maps(ctx, p->pid);
		}
		if (!found)
			goto out; /* tried again at the next read */
	}
	p->mbuckets = (uint64_t)((int64_t)p->mbuckets + p->bias);
	if (p->cycle_at)
		p->cycle_at = (uint64_t)((int64_t)p->cycle_at + p->bias);
	if (p->rate_at)
		p->rate_at = (uint64_t)((int64_t)p->rate_at + p->bias);
	p->state = 1;
out:
	pm_go_free(go);
	pm_elf_free(e);
}

/* ---- a bucket's frames ---- */

static const struct pm_sym *sym_at(struct pm_srcctx *ctx, pid_t pid, uint64_t pc,
				   const struct pm_map **mp)
{
	const struct pm_map *m = pm_maps_find(pm_sc_maps(ctx), pid, pc);

	*mp = m;
	return m ? pm_sc_map_sym(ctx, m) : NULL;
}

/* The frames at @pc - @back (inlined first): their number. */
static size_t frames_at(struct pm_srcctx *ctx, pid_t pid, uint64_t pc, unsigned back,
			struct pm_frame *fr, size_t max)
{
	const struct pm_map *m;
	const struct pm_sym *sym = sym_at(ctx, pid, pc, &m);

	return sym ? pm_sym_frames(sym, (uint64_t)((int64_t)pc - m->bias) - back, fr, max) : 0;
}

static bool is_runtime_name(const char *f)
{
	return !strncmp(f, "runtime.", 8) || !strncmp(f, "internal/runtime/", 17);
}

/* The size frame at a stack's root (the label bytes). */
static uint32_t size_frame(struct pm_srcctx *ctx, uint64_t size)
{
	struct pm_stack_frame f;

	f.map_id = ctx->map;
	f.is_return = false;
	f.addr = f.vaddr = size;
	return pm_stacks_frame(pm_sc_stacks(ctx), &f);
}

/*
 * The bucket's frames, as runtime/pprof makes its locations: the leading
 * PCs in the runtime hidden (all kept when all are; the function at the
 * return address itself, as runtime/pprof asks runtime.FuncForPC, not at
 * the call before it); each PC then with the
 * pseudo-PCs the runtime put after it for its inlined calls folded in (the
 * next PCs of the same function whose frames are the outer part of its).
 * False when the binary's mappings are not known yet.
 */
static bool make_frames(struct pm_srcctx *ctx, struct iproc *p, struct bkt *b)
{
	struct pm_frame fr[16], nx[16];
	uint32_t *ids;
	size_t n = b->nstk, skip, k = 0;

	if (!n) {
		b->ids = xmalloc(sizeof(*b->ids));
		b->ids[0] = size_frame(ctx, b->size);
		b->nids = 1;
		return true;
	}
	if (!pm_maps_find(pm_sc_maps(ctx), p->pid, b->stk[0]))
		return false;
	for (skip = 0; skip < n; skip++) {
		size_t nf = frames_at(ctx, p->pid, b->stk[skip], 0, fr, PM_ARRAY_SIZE(fr));

		if (!nf || !is_runtime_name(fr[0].func))
			break;
	}
	if (skip == n)
		skip = 0;
	ids = xmalloc((n + 2) * sizeof(*ids));
	for (size_t i = skip; i < n; i++) {
		if (k >= PM_SC_MAX_FRAMES) { /* deeper than any walk (a bad read): cut */
			ids[k++] = pm_sc_cut_frame(ctx);
			break;
		}
		const struct pm_map *m;
		const struct pm_sym *sym = sym_at(ctx, p->pid, b->stk[i], &m);
		struct pm_stack_frame f;
		size_t nf = sym ? frames_at(ctx, p->pid, b->stk[i], 1, fr, PM_ARRAY_SIZE(fr)) : 0;

		f.map_id = m ? m->id : PM_STACKS_NO_MAP;
		f.is_return = true;
		f.addr = b->stk[i];
		f.vaddr = sym ? (uint64_t)((int64_t)b->stk[i] - m->bias) : b->stk[i];
		ids[k++] = pm_stacks_frame(pm_sc_stacks(ctx), &f);
		for (size_t j = 1; j < nf && i + 1 < n; j++) {
			size_t nn = frames_at(ctx, p->pid, b->stk[i + 1], 1, nx, PM_ARRAY_SIZE(nx));

			if (nn != nf - j || strcmp(nx[0].func, fr[j].func) != 0)
				break;
			i++;
		}
	}
	ids[k++] = size_frame(ctx, b->size);
	b->ids = ids;
	b->nids = (uint32_t)k;
	free(b->stk);
	b->stk = NULL;
	return true;
}

/* ---- reading the records ---- */

/*
 * The new buckets, from the list's head to the one walked last; false on a
 * bad read.  The list is the target's: a record met again (one walked
 * before, or earlier in this walk) is a cycle, the list cut there (counted):
 * without it a cycle is walked MAX_BUCKETS times at every read.  A list of
 * distinct records, as long as the target likes (fake ones, each well
 * formed), is bounded by MAX_BUCKETS records and MAX_PCS PCs: the walk
 * that meets either is a bad read, its records let go.  So one walk holds
 * at most 2 * MAX_BUCKETS reads, MAX_BUCKETS records of 96 bytes (96 MB)
 * with their idtab entries, and 8 * MAX_PCS bytes of PCs (128 MB), all
 * freed at its end; the reads are spaced to take BUDGET of a core, so a
 * failing walk repeated at every read costs no more CPU than that.
 */
static bool walk_new(struct pm_srcctx *ctx, struct inuse *st, struct iproc *p, uint64_t head)
{
	struct bkt *nw = NULL;
	size_t nn = 0, cap = 0;
	uint64_t a = head, npcs = p->npcs;
	struct pm_idtab here = { 0 };
	int32_t v;

	while (a && a != p->head) {
		uint64_t h[6];
		struct bkt b;

		if (pm_idtab_get(&p->seen, a, &v) || pm_idtab_get(&here, a, &v)) {
			st->cycles++;
			break;
		}
		if (p->nb + nn >= MAX_BUCKETS || (a & 7) || !readv1(ctx, p->pid, a, h, sizeof(h)))
			goto bad;
		/* {next, allnext, typ, hash, size, nstk} */
		if (h[2] != MEM_PROFILE || h[5] > MAX_NSTK || h[4] > MAX_SIZE ||
		    (npcs += h[5]) > MAX_PCS)
			goto bad;
		memset(&b, 0, sizeof(b));
		b.addr = a;
		b.size = h[4];
		b.nstk = (uint32_t)h[5];
		if (b.nstk) {
			b.stk = xmalloc(b.nstk * sizeof(uint64_t));
			if (!readv1(ctx, p->pid, a + HDR, b.stk, b.nstk * sizeof(uint64_t))) {
				free(b.stk);
				goto bad;
			}
		}
		PM_GROW(nw, cap, nn + 1);
		nw[nn++] = b;
		pm_idtab_put(&here, a, (int32_t)nn);
		a = h[1];
	}
	pm_idtab_free(&here);
	if (nn) {
		PM_GROW(p->b, p->cap, p->nb + nn);
		memcpy(p->b + p->nb, nw, nn * sizeof(*nw));
		for (size_t i = 0; i < nn; i++)
			pm_idtab_put(&p->seen, nw[i].addr, (int32_t)(p->nb + i));
		p->nb += nn;
	}
	p->npcs = npcs;
	p->head = head;
	st->walked += nn;
	free(nw);
	return true;
bad:
	pm_idtab_free(&here);
	for (size_t i = 0; i < nn; i++)
		free(nw[i].stk);
	free(nw);
	return false;
}

/* A record's published values (@clear: every cycle's; else active and future[cycle % 3]). */
static void published(const struct iproc *p, const struct bkt *b, const uint8_t *r, bool clear,
		      uint32_t cycle, uint64_t *v)
{
	memset(v, 0, R_N * sizeof(*v));
	for (uint32_t c = 0; c < 4; c++) {
		const uint8_t *q = r + (size_t)c * p->rcs;
		uint64_t al = pm_le64(q), fr = pm_le64(q + 8);

		if (!clear && c && (cycle == UINT32_MAX || c - 1 != cycle % 3))
			continue; /* (UINT32_MAX: the cycle not known, active alone) */
		v[R_ALLOCS] += al;
		v[R_FREES] += fr;
		v[R_ABYTES] += p->rcs == 32 ? pm_le64(q + 16) : al * b->size;
		v[R_FBYTES] += p->rcs == 32 ? pm_le64(q + 24) : fr * b->size;
	}
}

static bool plausible(const struct bkt *b, const uint64_t *v)
{
	return v[R_FREES] <= v[R_ALLOCS] && v[R_ALLOCS] <= (1ULL << 48) &&
	       v[R_ABYTES] == v[R_ALLOCS] * b->size && v[R_FBYTES] <= v[R_ABYTES];
}

/* Every record of @p once; false when the process cannot be read (the last read stays). */
static bool read_proc(struct pm_srcctx *ctx, struct inuse *st, struct iproc *p)
{
	size_t rl = 4 * (size_t)p->rcs;

	for (int t = 0; t < SNAP_TRIES; t++) {
		uint64_t head, *addr;
		uint32_t c0 = 0, c1 = 0, cyc;
		int64_t rate;
		bool clear = true;

		if (p->cycle_at && !readv1(ctx, p->pid, p->cycle_at, &c0, 4))
			return false;
		if (!readv1(ctx, p->pid, p->mbuckets, &head, 8) || !walk_new(ctx, st, p, head))
			return false;
		if (p->nb * rl > st->bufcap) {
			st->bufcap = p->nb * rl * 2;
			st->buf = xrealloc(st->buf, st->bufcap);
			st->buf2 = xrealloc(st->buf2, st->bufcap);
		}
		addr = xmalloc((p->nb ? p->nb : 1) * sizeof(*addr));
		for (size_t i = 0; i < p->nb; i++)
			addr[i] = p->b[i].addr + HDR + 8ULL * p->b[i].nstk;
		if (!readv_n(ctx, p->pid, addr, p->nb, rl, st->buf) ||
		    !readv_n(ctx, p->pid, addr, p->nb, rl, st->buf2) ||
		    (p->cycle_at && !readv1(ctx, p->pid, p->cycle_at, &c1, 4))) {
			free(addr);
			return false;
		}
		if (c0 != c1) { /* a GC cycle ended meanwhile: all again */
			free(addr);
			st->restarted++;
			continue;
		}
		cyc = p->cycle_at ? c0 >> 1 : UINT32_MAX;
		/* before the first GC cycle ends every active record is zero: all cycles count */
		for (size_t i = 0; i < p->nb && clear; i++)
			clear = !pm_le64(st->buf + i * rl) && !pm_le64(st->buf + i * rl + 8);
		for (size_t i = 0; i < p->nb; i++) {
			struct bkt *b = &p->b[i];
			uint64_t v1[R_N], v2[R_N];
			uint8_t r1[128], r2[128];
			int k;

			published(p, b, st->buf + i * rl, clear, cyc, v1);
			published(p, b, st->buf2 + i * rl, clear, cyc, v2);
			for (k = 0; k < TRIES && (memcmp(v1, v2, sizeof(v1)) || !plausible(b, v1)); k++) {
				st->retried++;
				if (!readv1(ctx, p->pid, addr[i], r1, rl) ||
				    !readv1(ctx, p->pid, addr[i], r2, rl))
					continue;
				published(p, b, r1, clear, cyc, v1);
				published(p, b, r2, clear, cyc, v2);
			}
			/* attached: what it had before the probe: every cycle's */
			if (!p->reads && pm_sc_attached(ctx)) {
				uint64_t all[R_N];

				published(p, b, st->buf + i * rl, true, 0, all);
				b->pre = all[R_ALLOCS];
			}
			b->ok = !memcmp(v1, v2, sizeof(v1)) && plausible(b, v1);
			if (b->ok)
				memcpy(b->v, v1, sizeof(v1));
			else
				st->dropped++;
			if (!b->ids) {
				uint64_t t0 = cpu_now();

				if (!make_frames(ctx, p, b)) {
					if (!pm_sc_replay(ctx)) /* (--raw: into the capture too) */
						pm_sc_load_maps(ctx, p->pid);
					if (!make_frames(ctx, p, b))
						b->ok = false; /* its frames at a later read */
				}
				st->once_ns += cpu_now() - t0;
			}
		}
		free(addr);
		if (p->rate_at && readv1(ctx, p->pid, p->rate_at, &rate, 8) && rate >= 0) {
			p->rate = rate;
			p->rate_known = true;
		}
		p->clear = clear;
		p->read_ok = true;
		p->reads++;
		return true;
	}
	return false;
}

static struct iproc *proc_of(struct inuse *st, pid_t pid)
{
	for (size_t i = 0; i < st->nprocs; i++)
		if (st->procs[i].pid == pid)
			return &st->procs[i];
	st->procs = xrealloc(st->procs, (st->nprocs + 1) * sizeof(*st->procs));
	memset(&st->procs[st->nprocs], 0, sizeof(*st->procs));
	st->procs[st->nprocs].pid = pid;
	return &st->procs[st->nprocs++];
}

/* Still running: its executable still named (not a zombie, not gone); logged with --raw. */
static bool alive(struct pm_srcctx *ctx, pid_t pid)
{
	char exe[64], buf[8];
	uint8_t v = 0;

	if (!pm_sc_replay(ctx)) {
		snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
		v = readlink(exe, buf, sizeof(buf)) > 0;
	}
	pm_sc_value(ctx, pid, PM_CAP_KEY_INUSE_ALIVE, &v, 1);
	return v == 1;
}

/*
 * Every target (@pids) read once, live from the timer and at the end, at
 * replay from the capture's INUSE records (their reads logged and served
 * by capture.h): the same code, the same profile.
 */
static void read_all(struct pm_srcctx *ctx, struct inuse *st, bool final, uint64_t now,
		     const pid_t *pids, size_t n)
{
	uint64_t c0 = cpu_now(), ns;

	st->once_ns = 0;
	pm_sc_snap_begin(ctx, &st->slog);
	for (size_t i = 0; i < n; i++) {
		pid_t pid = pids[i];
		struct iproc *p = proc_of(st, pid);

		if (!p->state) {
			uint64_t t0 = cpu_now();

			setup(ctx, p);
			st->once_ns += cpu_now() - t0;
		}
		if (p->state != 1)
			continue;
		st->reads++;
		if (read_proc(ctx, st, p)) {
			if (final)
				p->final_ok = true;
		} else if (!final && alive(ctx, pid)) {
			st->failed++; /* (not the reads of a process exiting) */
		}
	}
	ns = cpu_now() - c0;
	/* the CPU times: the replay's are the live ones */
	pm_sc_value(ctx, 0, PM_CAP_KEY_SNAP_CPU, &ns, sizeof(ns));
	pm_sc_value(ctx, 0, PM_CAP_KEY_SNAP_CPU + 8, &st->once_ns, sizeof(st->once_ns));
	pm_sc_snap_end(ctx, PM_DATA_REC_INUSE, final ? PM_DATA_SNAP_FINAL : 0, now, pids, n);
	st->cpu_ns += ns;
	if (ns > st->max_ns)
		st->max_ns = ns;
	/* at most BUDGET of a core: a read that cost more spaces the next ones (not what is done once) */
	st->interval = (uint64_t)((double)(ns > st->once_ns ? ns - st->once_ns : 0) / BUDGET);
	if (st->interval < INTERVAL)
		st->interval = INTERVAL;
}

/* Live: the targets' pids. */
static size_t live_pids(struct pm_srcctx *ctx, pid_t *pids)
{
	size_t n = 0;

	if (pm_sc_attached(ctx))
		for (size_t i = 0; i < pm_sc_nprocs(ctx) && n < PM_DATA_SNAP_MAX_PIDS; i++)
			pids[n++] = pm_sc_pid(ctx, i);
	else if (pm_sc_cmd_pid(ctx))
		pids[n++] = pm_sc_cmd_pid(ctx);
	return n;
}

static uint64_t inuse_timer(struct pm_srcctx *ctx, uint64_t now)
{
	struct inuse *st = inuse_of(ctx);
	pid_t pids[PM_DATA_SNAP_MAX_PIDS];

	if (!st->on || pm_sc_replay(ctx))
		return 0;
	if (now < st->next)
		return st->next;
	read_all(ctx, st, false, now, pids, live_pids(ctx, pids));
	st->next = pm_now_ns() + st->interval;
	return st->next;
}

/* Replay: a read; the one at the end is kept for the profile (inuse_profile_head()). */
static void inuse_snapshot(struct pm_srcctx *ctx, const struct pm_data_snap *sn)
{
	struct inuse *st = inuse_of(ctx);
	pid_t pids[PM_DATA_SNAP_MAX_PIDS];

	if (!st->on)
		return;
	for (size_t i = 0; i < sn->npids; i++)
		pids[i] = (pid_t)pm_le32((const uint8_t *)&sn->pids[i]);
	if (sn->flags & PM_DATA_SNAP_FINAL) {
		memcpy(st->final_pids, pids, sn->npids * sizeof(*pids));
		st->final_n = sn->npids;
		st->final_seen = true;
		return;
	}
	read_all(ctx, st, false, sn->time, pids, sn->npids);
}

/* ---- the profile ---- */

/* A marker frame of ours at the root: its goroutine not known. */
static uint32_t marker_frame(struct pm_srcctx *ctx)
{
	struct pm_stack_frame f;

	f.map_id = ctx->map;
	f.is_return = false;
	f.addr = f.vaddr = MARKER;
	return pm_stacks_frame(pm_sc_stacks(ctx), &f);
}

static uint64_t inuse_location(struct pm_srcctx *ctx, struct pm_profile *p,
			       const struct pm_stack_frame *f)
{
	struct pm_prof_line line;

	(void)ctx;
	if (f->addr != MARKER)
		return 0; /* a size frame: the label bytes */
	line.func_id = pm_prof_func(p, "[labels unknown]", "[labels unknown]", "", 0);
	line.line = 0;
	return pm_prof_loc(p, 0, 0, &line, 1);
}

/*
 * With --alloc: a record's stack with the goroutine part (creators, the tag
 * frame of its labels) every allocation the probe saw at it had, when it
 * saw every allocation the record counts (the probe on from the start, or
 * the record empty when the first read came) and they all had the same
 * one; else a marker, [labels unknown].  Into @out (room for @cap).
 */
static size_t attributed(struct pm_srcctx *ctx, struct iproc *p, struct bkt *b, uint32_t *out,
			 size_t cap, struct inuse *st)
{
	size_t nt = 0, k = b->nids - 1;
	uint64_t count = 0;
	const uint32_t *tail = pm_alloc_seen(pm_sc_peer(ctx, &pm_src_alloc), (uint32_t)p->pid, b->size,
					     b->ids, k, &nt, &count);

	if (b->nids + nt + 1 > cap) { /* too deep: the record's frames alone (0) */
		st->unattributed++;
		return 0;
	}
	memcpy(out, b->ids, k * sizeof(*out));
	if (tail && nt && !b->pre && count >= b->v[R_ALLOCS]) {
		memcpy(out + k, tail, nt * sizeof(*out));
		k += nt;
		st->attributed++;
	} else {
		out[k++] = marker_frame(ctx);
		st->unattributed++;
	}
	out[k++] = b->ids[b->nids - 1];
	return k;
}

/* runtime/pprof's scaleHeapSample, its arithmetic. */
static void scale(uint64_t count, uint64_t size, int64_t rate, int64_t *c, int64_t *b)
{
	double sc;

	if (!count || !size) {
		*c = *b = 0;
		return;
	}
	if (rate <= 1) {
		*c = (int64_t)count;
		*b = (int64_t)size;
		return;
	}
	sc = 1 / (1 - exp(-((double)size / (double)count) / (double)rate));
	*c = (int64_t)((double)count * sc);
	*b = (int64_t)((double)size * sc);
}

static bool alloc_types_ours(const struct pm_srcctx *ctx)
{
	return !pm_sc_has_events(pm_sc_peer(ctx, &pm_src_alloc));
}

static void inuse_profile_head(struct pm_srcctx *ctx, struct pm_profile *p)
{
	struct inuse *st = inuse_of(ctx);
	int64_t v[V_N], rate = 0;
	uint32_t *ids = pm_sc_ids(ctx);
	bool ours = alloc_types_ours(ctx);

	if (!st->on)
		return;
	/* the end: the targets still there read once more (at replay, if the capture has it) */
	if (!pm_sc_replay(ctx)) {
		pid_t pids[PM_DATA_SNAP_MAX_PIDS];

		read_all(ctx, st, true, pm_now_ns(), pids, live_pids(ctx, pids));
	} else if (st->final_seen) {
		read_all(ctx, st, true, 0, st->final_pids, st->final_n);
	}
	for (size_t i = 0; i < st->nprocs; i++) {
		struct iproc *ip = &st->procs[i];
		int64_t r = ip->rate_known ? ip->rate : DEFAULT_RATE;

		if (!ip->state)
			pm_warn("inuse: process %d: its Go binary or where it is loaded not found: "
				"no in-use samples of it",
				(int)ip->pid);
		if (ip->state == 1 && ip->rate_known && !ip->rate)
			pm_warn("inuse: %s (process %d) has the Go runtime's heap sampling off "
				"(runtime.MemProfileRate 0): its heap records hold nothing or only "
				"what was sampled before it was turned off (--memprofilerate BYTES "
				"sets its rate)",
				ip->path, (int)ip->pid);
		if (!rate)
			rate = r;
		for (size_t k = 0; k < ip->nb; k++) {
			struct bkt *b = &ip->b[k];

			if (!b->ok || !b->ids || (!ours && b->v[R_ALLOCS] == b->v[R_FREES]))
				continue; /* (with --alloc, nothing in use: no sample) */
			memset(v, 0, sizeof(v));
			v[V_BUCKETS] = 1;
			scale(b->v[R_ALLOCS], b->v[R_ABYTES], r, &v[V_AOBJ], &v[V_ASPACE]);
			scale(b->v[R_ALLOCS] - b->v[R_FREES], b->v[R_ABYTES] - b->v[R_FBYTES], r,
			      &v[V_IOBJ], &v[V_ISPACE]);
			if (ours) { /* no label bytes on a record with no allocation, as runtime/pprof */
				pm_sc_add_stack(ctx, (uint32_t)ip->pid, 0, b->ids,
						b->v[R_ALLOCS] || b->nids < 2 ? b->nids : b->nids - 1, v);
			} else {
				size_t na = attributed(ctx, ip, b, ids, PM_SC_MAX_IDS, st);

				pm_sc_add_stack(ctx, (uint32_t)ip->pid, 0, na ? ids : b->ids,
						na ? na : b->nids, v);
			}
			pm_sc_count_sample(ctx); /* (a record: the summary's samples) */
		}
	}
	if (ours) {
		pm_prof_add_sample_type(p, "alloc_objects", "count");
		pm_prof_add_sample_type(p, "alloc_space", "bytes");
	}
	pm_prof_add_sample_type(p, "inuse_objects", "count");
	pm_prof_add_sample_type(p, "inuse_space", "bytes");
	if (!pm_sc_nuser(ctx)) { /* a heap profile's period; the default inuse_space, as Go's */
		pm_prof_set_default_type(p, pm_prof_nsample_types(p) - 1);
		if (ours)
			pm_prof_set_period(p, "space", "bytes", rate ? rate : DEFAULT_RATE);
	}
}

static void inuse_profile_tail(struct pm_srcctx *ctx, struct pm_profile *p)
{
	struct inuse *st = inuse_of(ctx);
	char *c;

	if (!st->on)
		return;
	for (size_t i = 0; i < st->nprocs; i++) {
		struct iproc *ip = &st->procs[i];
		size_t ok = 0;

		if (ip->state != 1)
			continue;
		for (size_t k = 0; k < ip->nb; k++)
			ok += ip->b[k].ok && ip->b[k].ids;
		c = xasprintf("inuse: process %d: %zu heap records of the Go runtime (runtime.mbuckets), "
			      "%zu read, %s; heap sampling rate %s%" PRId64 " bytes%s",
			      (int)ip->pid, ip->nb, ok,
			      !ip->read_ok    ? "never read"
			      : ip->final_ok ? "read at the end"
					     : "the last read before the process ended",
			      ip->rate_known ? "" : "(not readable: the default) ",
			      ip->rate_known ? ip->rate : (int64_t)DEFAULT_RATE,
			      ip->clear ? " (no GC cycle completed: every allocation and free so far)"
					: "");
		pm_prof_add_comment(p, c);
		free(c);
	}
	c = xasprintf("inuse: %" PRIu64 " reads (%" PRIu64 " failed, %" PRIu64
		      " started again as a GC cycle ended, %" PRIu64
		      " found the records' list a cycle: cut where it met itself), %" PRIu64
		      " records read again, %" PRIu64
		      " dropped (changed on every read); %.1f ms of CPU, at most %.1f ms a read",
		      st->reads, st->failed, st->restarted, st->cycles, st->retried, st->dropped,
		      (double)st->cpu_ns / 1e6, (double)st->max_ns / 1e6);
	pm_prof_add_comment(p, c);
	free(c);
	if (alloc_types_ours(ctx))
		c = xasprintf("inuse: the runtime's records keep no goroutine: no labels or creators "
			      "on inuse_* (with --alloc: those of the records whose allocations it saw "
			      "all, under one goroutine part)");
	else
		c = xasprintf("inuse: alloc_* are --alloc's (the recording's), not the records' (since "
			      "the start); labels and creators of inuse_* from what --alloc saw: %" PRIu64
			      " records under one goroutine part (each of their allocations seen), %" PRIu64
			      " under [labels unknown] (allocations not seen, or under different labels, "
			      "creators or goroutines)",
			      st->attributed, st->unattributed);
	pm_prof_add_comment(p, c);
	free(c);
}

static size_t inuse_stack_labels(struct pm_srcctx *ctx, const uint32_t *ids, size_t *n,
				 struct pm_prof_label *out, size_t max)
{
	const struct pm_stack_frame *f;

	if (!inuse_of(ctx)->on || !*n || !max)
		return 0;
	f = pm_stacks_frame_at(pm_sc_stacks(ctx), ids[*n - 1]);
	if (!f || f->map_id != ctx->map || f->addr == MARKER)
		return 0;
	(*n)--;
	memset(out, 0, sizeof(*out));
	out->key = "bytes";
	out->num = (int64_t)f->addr;
	return 1;
}

static void inuse_profile_stack(struct pm_srcctx *ctx, struct pm_profile *p, const uint64_t *locs,
				size_t n, const int64_t *v, struct pm_prof_label *lab, size_t nlab)
{
	int64_t val[PM_SES_VALUES_MAX + 8];
	long ao = pm_prof_find_sample_type(p, "alloc_objects"),
	     as = pm_prof_find_sample_type(p, "alloc_space"),
	     io = pm_prof_find_sample_type(p, "inuse_objects"),
	     is = pm_prof_find_sample_type(p, "inuse_space");
	size_t nt = pm_prof_nsample_types(p);

	if (!inuse_of(ctx)->on || !v[V_BUCKETS] || io < 0 || is < 0 || nt > PM_ARRAY_SIZE(val))
		return;
	memset(val, 0, sizeof(val));
	if (alloc_types_ours(ctx) && ao >= 0 && as >= 0) {
		val[ao] = v[V_AOBJ];
		val[as] = v[V_ASPACE];
	}
	val[io] = v[V_IOBJ];
	val[is] = v[V_ISPACE];
	pm_prof_add(p, locs, n, val, lab, nlab);
}

static void inuse_end(struct pm_srcctx *ctx)
{
	struct inuse *st = inuse_of(ctx);

	if (!st)
		return;
	for (size_t i = 0; i < st->nprocs; i++) {
		for (size_t k = 0; k < st->procs[i].nb; k++) {
			free(st->procs[i].b[k].stk);
			free(st->procs[i].b[k].ids);
		}
		free(st->procs[i].b);
		pm_idtab_free(&st->procs[i].seen);
		free(st->procs[i].path);
	}
	free(st->procs);
	free(st->buf);
	free(st->buf2);
	pm_slog_free(st->slog);
}

const struct pm_source pm_src_inuse = {
	.name = "inuse",
	.state_size = sizeof(struct inuse),
	.configure = inuse_configure,
	.nvalues = inuse_nvalues,
	.begin = inuse_begin,
	.end = inuse_end,
	.timer = inuse_timer,
	.snap_type = PM_DATA_REC_INUSE,
	.snapshot = inuse_snapshot,
	.location = inuse_location,
	.stack_labels = inuse_stack_labels,
	.profile_head = inuse_profile_head,
	.profile_tail = inuse_profile_tail,
	.profile_stack = inuse_profile_stack,
};
