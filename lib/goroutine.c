/*
 * The goroutine inspector.  See goroutine.h for the model.
 *
 * Per sample: one read of the candidate g (R14), one of its m, one of
 * m.curg when that is another g.  What follows from a goroutine (its label
 * set, its creator frames) is cached per (pid, g, goid, labels pointer) in
 * a direct-mapped table, so a goroutine sampled again costs those 2-3
 * reads.  Label sets and creator chains are interned: every worker made by
 * the same path shares one chain.
 */
#include "goroutine.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include "maps.h"
#include "profile.h"
#include "symtab.h"
#include "util.h"

#define G_READ_MAX 1024
#define M_READ_MAX 1024
#define HMAP_BUCKET 272 /* map[string]string bucket: tophash[8], keys[8], values[8], overflow */
#define MAX_BUCKETS 16
#define MAX_OVERFLOW 8
#define MAX_KEY 128
#define MAX_VAL 512
#define MAX_CHAIN 512
#define CACHE_SIZE 8192
#define MAX_GO_TRIES 1000
#define CREATED_SLOTS 16384 /* creations remembered (probes), direct-mapped */
#define CREATED_PCS 32      /* return addresses kept of a creator's stack */
#define PENDING_SLOTS 1024  /* threads between the two creation probes */
#define RCACHE_SLOTS 64     /* reads kept for the rest of a drain pass, direct-mapped */
#define RCACHE_MAX 1024     /* longest read kept (a runtime.g or runtime.m) */

/* ---- layouts ---- */

static int parse_minor(const char *v)
{
	char *end;
	long minor;

	if (!v || strncmp(v, "go1.", 4) != 0)
		return -1;
	minor = strtol(v + 4, &end, 10);
	if (end == v + 4 || minor < 0 || minor > 1000)
		return -1;
	return (int)minor;
}

/*
 * The bytes of g and m to read: up to the end of the last field.  False
 * when a field lies beyond what one read takes (a layout from hostile
 * DWARF, or a caller's): such a layout is never used.
 */
static bool finish_layout(struct pm_gor_layout *l)
{
	uint32_t f[] = { l->g_m, l->g_status, l->g_goid, l->g_parent_goid, l->g_gopc,
			 l->g_startpc, l->g_ancestors, l->g_labels, l->g_sched_sp, l->g_sched_pc,
			 l->g_sched_bp, 8 };
	uint32_t mf[] = { l->m_procid, l->m_gsignal, l->m_curg, 8 };
	size_t i;

	l->g_size = 16;
	for (i = 0; i < PM_ARRAY_SIZE(f); i++) {
		if (f[i] > G_READ_MAX - 8)
			return false;
		if (f[i] + 8 > l->g_size)
			l->g_size = f[i] + 8;
	}
	l->m_size = 8;
	for (i = 0; i < PM_ARRAY_SIZE(mf); i++) {
		if (mf[i] > M_READ_MAX - 8)
			return false;
		if (mf[i] + 8 > l->m_size)
			l->m_size = mf[i] + 8;
	}
	return true;
}

/*
 * g.sched is the gobuf at 56 in every version: sp 0, pc 8, then (ret,) lr,
 * bp; gobuf.ret went away in 1.25, so bp is at 48 before and 40 after.
 */
#define G_SCHED 56

static void sched_layout(struct pm_gor_layout *l, int minor)
{
	l->g_sched_sp = G_SCHED;
	l->g_sched_pc = G_SCHED + 8;
	l->g_sched_bp = G_SCHED + (minor >= 25 ? 40 : 48);
}

static enum pm_gor_labels_kind labels_kind(int minor)
{
	if (minor < 0)
		return PM_GOR_LABELS_NONE;
	return minor <= 23 ? PM_GOR_LABELS_MAP : PM_GOR_LABELS_SLICE;
}

int pm_gor_layout_version(const char *version, struct pm_gor_layout *out)
{
	/*
	 * go-internals.md section 5.  Each row was recomputed from the runtime
	 * sources (go/types, linux/amd64 sizes) at go1.19, go1.20, go1.21.0,
	 * go1.22rc1 and the freeze before each later release; 1.26 and 1.27
	 * also from the stores in runtime.newproc1, execute, minit and gogo of
	 * esbuild (go1.26.5) and lefthook (go1.27.0), which agree: 1.27 kept
	 * 1.26's g and m.
	 */
	static const struct {
		int lo, hi;
		uint32_t status, goid, parent, gopc, startpc, anc, labels, procid, gsignal, curg;
	} t[] = {
		{ 19, 20, 144, 152, 0, 296, 312, 304, 360, 72, 80, 192 },
		{ 21, 22, 144, 152, 272, 280, 296, 288, 344, 72, 80, 192 },
		{ 23, 24, 152, 160, 280, 288, 304, 296, 352, 72, 80, 192 },
		{ 25, 25, 144, 152, 272, 280, 296, 288, 344, 64, 72, 184 },
		{ 26, 27, 144, 152, 280, 288, 304, 296, 352, 64, 72, 184 },
	};
	int minor = parse_minor(version);
	size_t i;

	for (i = 0; i < PM_ARRAY_SIZE(t); i++) {
		if (minor < t[i].lo || minor > t[i].hi)
			continue;
		memset(out, 0, sizeof(*out));
		out->minor = minor;
		out->g_m = 48;
		out->g_status = t[i].status;
		out->g_goid = t[i].goid;
		out->g_parent_goid = t[i].parent;
		out->g_gopc = t[i].gopc;
		out->g_startpc = t[i].startpc;
		out->g_ancestors = t[i].anc;
		out->g_labels = t[i].labels;
		out->m_procid = t[i].procid;
		out->m_gsignal = t[i].gsignal;
		out->m_curg = t[i].curg;
		sched_layout(out, minor);
		out->labels = labels_kind(minor);
		return finish_layout(out) ? 0 : -ENOTSUP;
	}
	return -ENOTSUP;
}

static bool member_offset(Dwarf_Die *member, uint32_t *off)
{
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (!dwarf_attr(member, DW_AT_data_member_location, &a) || dwarf_formudata(&a, &w) != 0 ||
	    w > 65536)
		return false;
	*off = (uint32_t)w;
	return true;
}

/* Fill the fields of struct @die named in @names into @offs; the count found. */
static int struct_members(Dwarf_Die *die, const char *const *names, uint32_t **offs, size_t n)
{
	Dwarf_Die c;
	int found = 0, guard = 0;

	if (dwarf_child(die, &c) != 0)
		return 0;
	do {
		const char *nm = dwarf_diename(&c);
		size_t i;

		if (dwarf_tag(&c) != DW_TAG_member || !nm)
			continue;
		for (i = 0; i < n; i++)
			if (strcmp(nm, names[i]) == 0 && member_offset(&c, offs[i]))
				found++;
	} while (dwarf_siblingof(&c, &c) == 0 && ++guard < 4096);
	return found;
}

int pm_gor_layout_dwarf(const char *path, const char *version, struct pm_gor_layout *out)
{
	Dwarf *dw;
	Elf *elf;
	Dwarf_Off off = 0, next;
	size_t hsize;
	int fd, rc = -ENOENT, guard = 0;
	bool have_g = false, have_m = false, have_buf = false;
	uint32_t sched = 0, buf_sp = UINT32_MAX, buf_pc = UINT32_MAX, buf_bp = UINT32_MAX;
	struct pm_gor_layout l;

	fd = pm_open_regular(path);
	if (fd < 0)
		return -ENOENT;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	dw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	memset(&l, 0, sizeof(l));
	/* Go names each compile unit after its package: only "runtime" is walked */
	while (dw && !(have_g && have_m && have_buf) && guard++ < 100000 &&
	       dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, d;
		const char *name;
		int k = 0;

		if (!dwarf_offdie(dw, off + hsize, &cu))
			break;
		off = next;
		name = dwarf_diename(&cu);
		if (!name || strcmp(name, "runtime") != 0 || dwarf_child(&cu, &d) != 0)
			continue;
		do {
			const char *nm;

			if (dwarf_tag(&d) != DW_TAG_structure_type || !(nm = dwarf_diename(&d)))
				continue;
			if (!have_g && strcmp(nm, "runtime.g") == 0) {
				const char *names[] = { "m",	     "goid",	  "parentGoid",
							"gopc",	     "startpc",	  "ancestors",
							"labels",    "atomicstatus", "sched" };
				uint32_t *offs[] = { &l.g_m,	   &l.g_goid,	   &l.g_parent_goid,
						     &l.g_gopc,	   &l.g_startpc,   &l.g_ancestors,
						     &l.g_labels,  &l.g_status,	   &sched };
				have_g = struct_members(&d, names, offs, 9) >= 7;
			} else if (!have_buf && strcmp(nm, "runtime.gobuf") == 0) {
				const char *names[] = { "sp", "pc", "bp" };
				uint32_t *offs[] = { &buf_sp, &buf_pc, &buf_bp };
				have_buf = struct_members(&d, names, offs, 3) == 3;
			} else if (!have_m && strcmp(nm, "runtime.m") == 0) {
				const char *names[] = { "procid", "gsignal", "curg" };
				uint32_t *offs[] = { &l.m_procid, &l.m_gsignal, &l.m_curg };
				have_m = struct_members(&d, names, offs, 3) == 3;
			}
		} while (!(have_g && have_m && have_buf) && dwarf_siblingof(&d, &d) == 0 &&
			 ++k < 1000000);
	}
	if (have_g && have_m && l.g_m && l.g_goid && l.g_gopc && l.g_status && l.m_procid &&
	    l.m_curg) {
		l.from_dwarf = true;
		l.minor = parse_minor(version);
		if (l.minor < 0)
			l.minor = 0;
		l.labels = l.g_labels ? labels_kind(parse_minor(version)) : PM_GOR_LABELS_NONE;
		/* g.sched from DWARF when it has it all, else the version's gobuf */
		if (sched && have_buf && buf_sp < 64 && buf_pc < 64 && buf_bp < 64) {
			l.g_sched_sp = sched + buf_sp;
			l.g_sched_pc = sched + buf_pc;
			l.g_sched_bp = sched + buf_bp;
		} else {
			sched_layout(&l, l.minor);
		}
		if (finish_layout(&l)) {
			*out = l;
			rc = 0;
		}
	}
	if (dw)
		dwarf_end(dw);
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}

/* ---- interning tables ---- */

static uint64_t mix(uint64_t h, uint64_t v)
{
	return pm_hash_u64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

/* ---- state ---- */

struct cframe {
	const struct pm_map *m;
	uint64_t vaddr; /* the byte to symbolize (return address - 1) */
	bool full;      /* every inlined frame (a go statement), else the innermost only */
};

struct tag {
	int64_t goid;
	uint32_t lab, nlab; /* into labpool */
};

struct chain {
	uint32_t off, n; /* into chainpool (pm_stacks frame ids) */
};

struct centry {
	pid_t pid;
	uint64_t g, labels_ptr, anc_ptr;
	int64_t goid;
	uint32_t tag;   /* tag index + 1, 0 = none */
	uint32_t chain; /* chain index + 1, 0 = none (parent-walk mode: rebuilt) */
	uint64_t cgen;  /* the probes' creation the chain came from, 0 = none */
};

struct gproc {
	pid_t pid;
	int state; /* 0 unknown, 1 on, -1 off */
	unsigned tries;
	uint64_t newproc_ret; /* probes: runqput's return address in newproc.func1 */
	struct pm_gor_layout l;
};

struct seen {
	uint64_t key; /* pid << 40 ^ goid */
	uint64_t gopc;
	int64_t parent;
};

/*
 * A goroutine's creation seen by the probes, keyed by its g: the records
 * are processed some milliseconds late, when a short-lived goroutine may
 * have exited and its g run another, so nothing is read from the target
 * (both probes give g pointers in registers) and nothing is keyed by goid
 * (read late, it can be the next goroutine's).  Records come in time
 * order, so the creation last seen on a g is that of the goroutine a
 * sample on that g ran.
 */
struct created {
	uint64_t gen;      /* its number (1, 2, ...): the slot gen % CREATED_SLOTS */
	uint64_t cgen;     /* the creator's own creation; 0 = not seen */
	uint32_t npcs;
	uint64_t pcs[CREATED_PCS]; /* the creator's stack at newproc, leaf first */
};

/* g -> the creation last seen on it */
struct gidx {
	uint64_t key;      /* created_key() of the g; 0 = free */
	uint64_t gen;
};

/* Between runtime.newproc's probe and runqput's, per thread. */
struct pending {
	pid_t pid, tid;    /* tid 0 = free */
	struct created c;
};

/* One read of the target, reusable until the pass ends (pm_gor_pass). */
struct rentry {
	uint64_t pass; /* 0 = empty */
	uint64_t addr;
	pid_t pid;
	uint32_t len;
	uint8_t data[RCACHE_MAX];
};

struct pm_gor {
	struct pm_gor_opts o;
	struct rentry *rcache; /* live reads only (o.read NULL) */
	uint64_t pass;
	uint64_t st_reads, st_rhits;
	struct gproc *procs;
	size_t nprocs, capprocs;
	struct pm_hidx proc_idx; /* procs by pid */
	/* tid -> m */
	uint64_t *tm_key, *tm_val;
	size_t tm_size, tm_n;
	struct centry *cache;
	struct centry *last; /* (pid, g, goid) -> the tag it last had alive */
	uint64_t seed;       /* of the interning tables' hashes: pm_hash_seed() */
	/* interned strings */
	char **strs;
	size_t nstrs, capstrs;
	struct pm_hidx str_idx;
	struct pm_gor_label *labpool;
	size_t nlab, caplab;
	struct tag *tags;
	size_t ntags, captags;
	struct pm_hidx tag_idx;
	struct cframe *cframes;
	size_t ncf, capcf;
	struct pm_hidx cf_idx;
	uint32_t *chainpool;
	size_t nchainpool, capchainpool;
	struct chain *chains;
	size_t nchains, capchains;
	struct pm_hidx chain_idx;
	uint64_t st_ns, st_inspect, st_ok, st_enoent, st_einval, st_fallback, st_stale, st_late;
	bool stats; /* PMUPROF_GOR_STATS: also time each sample (two clock reads) */
	struct seen *seen; /* 1.21+: goid -> (gopc, parent) */
	size_t seen_size, seen_n;
	/*
	 * probes: the last CREATED_SLOTS creations, a ring by gen (a link to an
	 * overwritten one fails its gen check), and g -> the last on it
	 */
	struct created *created;
	struct gidx *gidx;
	struct pending *pending;
	uint64_t st_created, gen;
	/* one inspection's results */
	struct pm_gor_label lab[PM_GOR_MAX_LABELS];
	struct pm_gor_ancestor anc[PM_GOR_MAX_ANCESTORS];
	uint64_t labels_ptr, anc_ptr;
	uint32_t tmp[MAX_CHAIN];
	struct pm_frame fr[64];
	char kb[PM_GOR_MAX_LABELS][MAX_KEY], vb[PM_GOR_MAX_LABELS][MAX_VAL];
	uint8_t bk[MAX_BUCKETS * HMAP_BUCKET];
};

struct pm_gor *pm_gor_new(const struct pm_gor_opts *o)
{
	struct pm_gor *g = xcalloc(1, sizeof(*g));

	g->o = *o;
	g->seed = pm_hash_seed();
	if (g->o.creators > PM_GOR_MAX_ANCESTORS)
		g->o.creators = PM_GOR_MAX_ANCESTORS;
	g->cache = xcalloc(CACHE_SIZE, sizeof(*g->cache));
	g->last = xcalloc(CACHE_SIZE, sizeof(*g->last));
	g->stats = getenv("PMUPROF_GOR_STATS") != NULL;
	if (!g->o.read)
		g->rcache = xcalloc(RCACHE_SLOTS, sizeof(*g->rcache));
	g->pass = 1;
	return g;
}

void pm_gor_pass(struct pm_gor *g)
{
	if (g)
		g->pass++;
}

void pm_gor_free(struct pm_gor *g)
{
	size_t i;

	if (!g)
		return;
	if (g->stats)
		fprintf(stderr,
			"pmuprof: goroutines: %" PRIu64 " inspected, %" PRIu64 " found, %" PRIu64
			" without a goroutine, %" PRIu64 " not validated, %" PRIu64
			" through the thread's m, %" PRIu64 " read late and checked, %" PRIu64
			" dropped (moved on); %.1f us per sample; %" PRIu64 " reads, %" PRIu64
			" from this pass's\n",
			g->st_inspect, g->st_ok, g->st_enoent, g->st_einval, g->st_fallback,
			g->st_late, g->st_stale,
			g->st_inspect ? (double)g->st_ns / 1e3 / (double)g->st_inspect : 0.0,
			g->st_reads, g->st_rhits);
	free(g->rcache);
	free(g->procs);
	pm_hidx_free(&g->proc_idx);
	free(g->tm_key);
	free(g->tm_val);
	free(g->cache);
	free(g->last);
	for (i = 0; i < g->nstrs; i++)
		free(g->strs[i]);
	free(g->strs);
	pm_hidx_free(&g->str_idx);
	free(g->labpool);
	free(g->tags);
	pm_hidx_free(&g->tag_idx);
	free(g->cframes);
	pm_hidx_free(&g->cf_idx);
	free(g->chainpool);
	free(g->chains);
	pm_hidx_free(&g->chain_idx);
	free(g->seen);
	free(g->created);
	free(g->gidx);
	free(g->pending);
	free(g);
}

static struct gproc *proc_of(struct pm_gor *g, pid_t pid)
{
	uint64_t hv = mix(g->seed, (uint64_t)(uint32_t)pid);
	size_t pos = SIZE_MAX;
	long i;

	while ((i = pm_hidx_next(&g->proc_idx, hv, &pos)) >= 0)
		if (g->procs[i].pid == pid)
			return &g->procs[i];
	pm_hidx_add(&g->proc_idx, hv, (uint32_t)g->nprocs);
	PM_GROW(g->procs, g->capprocs, g->nprocs + 1);
	memset(&g->procs[g->nprocs], 0, sizeof(g->procs[0]));
	g->procs[g->nprocs].pid = pid;
	return &g->procs[g->nprocs++];
}

int pm_gor_set_layout(struct pm_gor *g, pid_t pid, const struct pm_gor_layout *l)
{
	struct gproc *p = proc_of(g, pid);

	p->l = *l;
	if (!finish_layout(&p->l)) {
		p->state = -1;
		return -EINVAL;
	}
	p->state = 1;
	return 0;
}

/* ---- tid -> m ---- */

static void tm_put(struct pm_gor *g, uint64_t key, uint64_t val);

static void tm_grow(struct pm_gor *g)
{
	uint64_t *ok = g->tm_key, *ov = g->tm_val;
	size_t os = g->tm_size, i;

	g->tm_size = os ? os * 2 : 256;
	g->tm_key = xcalloc(g->tm_size, sizeof(uint64_t));
	g->tm_val = xcalloc(g->tm_size, sizeof(uint64_t));
	g->tm_n = 0;
	for (i = 0; i < os; i++)
		if (ok[i])
			tm_put(g, ok[i], ov[i]);
	free(ok);
	free(ov);
}

static void tm_put(struct pm_gor *g, uint64_t key, uint64_t val)
{
	size_t h;

	if ((g->tm_n + 1) * 2 > g->tm_size)
		tm_grow(g);
	h = pm_hash_u64(key) & (g->tm_size - 1);
	while (g->tm_key[h] && g->tm_key[h] != key)
		h = (h + 1) & (g->tm_size - 1);
	if (!g->tm_key[h])
		g->tm_n++;
	g->tm_key[h] = key;
	g->tm_val[h] = val;
}

static uint64_t tm_get(const struct pm_gor *g, uint64_t key)
{
	size_t h;

	if (!g->tm_size)
		return 0;
	for (h = pm_hash_u64(key) & (g->tm_size - 1); g->tm_key[h]; h = (h + 1) & (g->tm_size - 1))
		if (g->tm_key[h] == key)
			return g->tm_val[h];
	return 0;
}

static uint64_t tid_key(pid_t pid, pid_t tid)
{
	return ((uint64_t)(uint32_t)pid << 32 | (uint32_t)tid) | 1ULL << 63;
}

/* ---- reads ---- */

struct rd {
	uint64_t addr;
	void *buf;
	size_t len;
};

/*
 * The pass's reads.  Every sample of a drain pass was taken before the pass
 * began, so a range read earlier in the pass is as recent as one read again
 * (more so, if anything): the samples of one busy goroutine in a pass share
 * one system call instead of one each (process_vm_readv: ~2.5 us each).
 */
static struct rentry *rc_slot(struct pm_gor *g, pid_t pid, uint64_t addr)
{
	return &g->rcache[mix(mix(0, (uint64_t)pid), addr) & (RCACHE_SLOTS - 1)];
}

static bool rc_get(struct pm_gor *g, pid_t pid, const struct rd *r)
{
	const struct rentry *e;

	if (!g->rcache || r->len > RCACHE_MAX)
		return false;
	e = rc_slot(g, pid, r->addr);
	if (e->pass != g->pass || e->pid != pid || e->addr != r->addr || e->len != r->len)
		return false;
	memcpy(r->buf, e->data, r->len);
	return true;
}

static void rc_put(struct pm_gor *g, pid_t pid, const struct rd *r)
{
	struct rentry *e;

	if (!g->rcache || r->len > RCACHE_MAX || !r->len)
		return;
	e = rc_slot(g, pid, r->addr);
	e->pass = g->pass;
	e->pid = pid;
	e->addr = r->addr;
	e->len = (uint32_t)r->len;
	memcpy(e->data, r->buf, r->len);
}

/*
 * Read every range; what this pass read already comes from the cache, the
 * rest with one process_vm_readv, and one per range only when that falls
 * short.  A range that cannot be read gets len 0.  Returns how many were
 * read whole.
 */
static size_t readv_all(struct pm_gor *g, pid_t pid, struct rd *r, size_t n)
{
	struct iovec lo[64] = { { 0 } }, re[64] = { { 0 } };
	bool hit[64] = { false };
	size_t i, k = 0, want = 0, ok = 0;
	ssize_t got = -1;

	if (!g->o.read && n <= 64) {
		for (i = 0; i < n; i++) {
			g->st_reads++;
			if (rc_get(g, pid, &r[i])) {
				hit[i] = true;
				g->st_rhits++;
				ok++;
				continue;
			}
			lo[k].iov_base = r[i].buf;
			lo[k].iov_len = r[i].len;
			re[k].iov_base = (void *)(uintptr_t)r[i].addr;
			re[k].iov_len = r[i].len;
			want += r[i].len;
			k++;
		}
		if (k == 0)
			return n;
		got = process_vm_readv(pid, lo, (unsigned long)k, re, (unsigned long)k, 0);
		if (got >= 0 && (size_t)got == want) {
			for (i = 0; i < n; i++)
				if (!hit[i])
					rc_put(g, pid, &r[i]);
			return n;
		}
	}
	for (i = 0; i < n; i++) {
		int rc;

		if (i < PM_ARRAY_SIZE(hit) && hit[i])
			continue;
		if (g->o.read) {
			rc = g->o.read(g->o.read_arg, pid, r[i].addr, r[i].buf, r[i].len);
		} else {
			lo[0].iov_base = r[i].buf;
			lo[0].iov_len = r[i].len;
			re[0].iov_base = (void *)(uintptr_t)r[i].addr;
			re[0].iov_len = r[i].len;
			got = process_vm_readv(pid, lo, 1, re, 1, 0);
			rc = got >= 0 && (size_t)got == r[i].len ? 0 : -EFAULT;
			if (rc == 0)
				rc_put(g, pid, &r[i]);
		}
		if (rc == 0)
			ok++;
		else
			r[i].len = 0;
	}
	return ok;
}

static int read1(struct pm_gor *g, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct rd r = { addr, buf, len };

	if (!addr || addr >= 1ULL << 56)
		return -EFAULT;
	return readv_all(g, pid, &r, 1) == 1 ? 0 : -EFAULT;
}

static uint64_t u64_at(const uint8_t *b, uint32_t off)
{
	return pm_le64(b + off);
}

static bool good_ptr(uint64_t p)
{
	return p && !(p & 7) && p < 1ULL << 56;
}

/* ---- strings and labels ---- */

static const char *intern_str(struct pm_gor *g, const char *s, size_t len)
{
	uint64_t hv = pm_hash(s, len, g->seed);
	size_t pos = SIZE_MAX;
	long idx;
	char *c;

	while ((idx = pm_hidx_next(&g->str_idx, hv, &pos)) >= 0)
		if (strlen(g->strs[idx]) == len && memcmp(g->strs[idx], s, len) == 0)
			return g->strs[idx];
	c = xmalloc(len + 1);
	memcpy(c, s, len);
	c[len] = '\0';
	PM_GROW(g->strs, g->capstrs, g->nstrs + 1);
	g->strs[g->nstrs] = c;
	pm_hidx_add(&g->str_idx, hv, (uint32_t)g->nstrs++);
	return c;
}

/* A target string as a label: control bytes become '?'. */
static const char *label_str(struct pm_gor *g, char *b, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)b[i] < 0x20 || b[i] == 0x7f)
			b[i] = '?';
	return intern_str(g, b, len);
}

struct strref {
	uint64_t kp, kl, vp, vl;
};

static int cmp_label(const void *a, const void *b)
{
	const struct pm_gor_label *x = a, *y = b;

	return strcmp(x->key, y->key);
}

/* Fetch up to PM_GOR_MAX_LABELS string pairs in one batch. */
static size_t fetch_labels(struct pm_gor *g, pid_t pid, const struct strref *sr, size_t n)
{
	char (*kb)[MAX_KEY] = g->kb, (*vb)[MAX_VAL] = g->vb;
	struct rd r[2 * PM_GOR_MAX_LABELS];
	size_t i, k = 0, out = 0;

	for (i = 0; i < n; i++) {
		r[2 * i] = (struct rd){ sr[i].kp, kb[i], sr[i].kl < MAX_KEY ? sr[i].kl : MAX_KEY };
		r[2 * i + 1] = (struct rd){ sr[i].vp, vb[i], sr[i].vl < MAX_VAL ? sr[i].vl : MAX_VAL };
		k += 2;
	}
	for (i = 0; i < k; i++)
		if (r[i].len && !r[i].addr)
			r[i].len = 0;
	/* zero-length reads are fine for process_vm_readv */
	readv_all(g, pid, r, k);
	for (i = 0; i < n; i++) {
		if (!r[2 * i].len)
			continue;
		if (r[2 * i + 1].len == 0 && sr[i].vl != 0)
			continue;
		g->lab[out].key = label_str(g, kb[i], r[2 * i].len);
		g->lab[out].value = label_str(g, vb[i], r[2 * i + 1].len);
		out++;
	}
	qsort(g->lab, out, sizeof(g->lab[0]), cmp_label);
	/* a key once (a map cannot repeat one; a torn read could) */
	for (i = 1, k = out ? 1 : 0; i < out; i++)
		if (strcmp(g->lab[i].key, g->lab[k - 1].key) != 0)
			g->lab[k++] = g->lab[i];
	return k;
}

/* Slots of one map[string]string bucket with a live entry. */
static size_t bucket_slots(const uint8_t *b, struct strref *sr, size_t n, size_t max)
{
	int i;

	for (i = 0; i < 8 && n < max; i++) {
		if (b[i] < 5) /* emptyRest, emptyOne, evacuatedX/Y/Empty */
			continue;
		sr[n].kp = pm_le64(b + 8 + 16 * i);
		sr[n].kl = pm_le64(b + 8 + 16 * i + 8);
		sr[n].vp = pm_le64(b + 136 + 16 * i);
		sr[n].vl = pm_le64(b + 136 + 16 * i + 8);
		if (sr[n].kl > 1 << 20 || sr[n].vl > 1 << 20)
			continue;
		n++;
	}
	return n;
}

/*
 * Go <= 1.23: g.labels -> *labelMap, a map[string]string variable: the
 * hmap pointer, then hmap{count, flags, B, noverflow, hash0, buckets,
 * oldbuckets, ...}.  A map still growing keeps unevacuated entries in its
 * old buckets: both arrays are read.  At most 16 buckets and 8 overflow
 * buckets.
 */
static size_t labels_map(struct pm_gor *g, pid_t pid, uint64_t lp)
{
	uint8_t *bk = g->bk;
	struct strref sr[PM_GOR_MAX_LABELS];
	uint8_t hm[48];
	uint64_t h, arr[2];
	size_t n = 0, a, i;
	unsigned B, flags, over = 0;

	if (read1(g, pid, lp, &h, 8) || !good_ptr(h) || read1(g, pid, h, hm, sizeof(hm)))
		return 0;
	if ((int64_t)pm_le64(hm) <= 0)
		return 0;
	flags = hm[8];
	B = hm[9];
	if (B > 4)
		B = 4; /* more labels than anyone sets; read the first 16 buckets */
	arr[0] = pm_le64(hm + 16);
	arr[1] = pm_le64(hm + 24);
	for (a = 0; a < 2; a++) {
		size_t nb = (size_t)1 << B;

		if (a == 1 && !(flags & 8) && B > 0)
			nb >>= 1; /* the old array is half the size unless same-size growth */
		if (!good_ptr(arr[a]) || read1(g, pid, arr[a], bk, nb * HMAP_BUCKET))
			continue;
		for (i = 0; i < nb; i++) {
			uint64_t ov;
			uint8_t ob[HMAP_BUCKET];

			n = bucket_slots(bk + i * HMAP_BUCKET, sr, n, PM_GOR_MAX_LABELS);
			ov = pm_le64(bk + i * HMAP_BUCKET + 264);
			while (good_ptr(ov) && over < MAX_OVERFLOW && n < PM_GOR_MAX_LABELS &&
			       !read1(g, pid, ov, ob, sizeof(ob))) {
				over++;
				n = bucket_slots(ob, sr, n, PM_GOR_MAX_LABELS);
				ov = pm_le64(ob + 264);
			}
		}
	}
	return fetch_labels(g, pid, sr, n);
}

/* Go 1.24+: g.labels -> *labelMap = {list []label{key, value string}}. */
static size_t labels_slice(struct pm_gor *g, pid_t pid, uint64_t lp)
{
	struct strref sr[PM_GOR_MAX_LABELS];
	uint8_t hdr[24], arr[PM_GOR_MAX_LABELS * 32];
	uint64_t ptr, len;
	size_t i, n = 0;

	if (read1(g, pid, lp, hdr, sizeof(hdr)))
		return 0;
	ptr = pm_le64(hdr);
	len = pm_le64(hdr + 8);
	if (!len || len > 1 << 20 || !good_ptr(ptr))
		return 0;
	if (len > PM_GOR_MAX_LABELS)
		len = PM_GOR_MAX_LABELS;
	if (read1(g, pid, ptr, arr, (size_t)len * 32))
		return 0;
	for (i = 0; i < len; i++) {
		const uint8_t *e = arr + 32 * i;

		sr[n] = (struct strref){ pm_le64(e), pm_le64(e + 8), pm_le64(e + 16),
					 pm_le64(e + 24) };
		if (sr[n].kl > 1 << 20 || sr[n].vl > 1 << 20)
			continue;
		n++;
	}
	return fetch_labels(g, pid, sr, n);
}

/* g.ancestors -> *[]ancestorInfo{pcs []uintptr, goid, gopc} (40 bytes each). */
static size_t read_ancestors(struct pm_gor *g, pid_t pid, uint64_t ap, size_t max)
{
	uint8_t hdr[24], arr[PM_GOR_MAX_ANCESTORS * 40];
	struct rd r[PM_GOR_MAX_ANCESTORS];
	uint64_t ptr, len;
	size_t i, n;

	if (!max || read1(g, pid, ap, hdr, sizeof(hdr)))
		return 0;
	ptr = pm_le64(hdr);
	len = pm_le64(hdr + 8);
	if (!len || len > 1 << 20 || !good_ptr(ptr))
		return 0;
	n = len < max ? (size_t)len : max;
	if (n > PM_GOR_MAX_ANCESTORS)
		n = PM_GOR_MAX_ANCESTORS;
	if (read1(g, pid, ptr, arr, n * 40))
		return 0;
	for (i = 0; i < n; i++) {
		const uint8_t *e = arr + 40 * i;
		uint64_t pp = pm_le64(e), pl = pm_le64(e + 8);

		g->anc[i].goid = (int64_t)pm_le64(e + 24);
		g->anc[i].gopc = pm_le64(e + 32);
		if (pl > PM_GOR_MAX_ANC_PCS)
			pl = PM_GOR_MAX_ANC_PCS;
		if (!good_ptr(pp))
			pl = 0;
		g->anc[i].npcs = (size_t)pl;
		r[i] = (struct rd){ pp, g->anc[i].pcs, (size_t)pl * 8 };
	}
	readv_all(g, pid, r, n);
	for (i = 0; i < n; i++)
		g->anc[i].npcs = r[i].len / 8;
	return n;
}

/* ---- inspection ---- */

/*
 * A goroutine that is no longer on its m when the sample is read (it was
 * descheduled, or it exited and its g may run another goroutine now) is
 * the sampled one only if the outermost bytes of its stack still equal the
 * sample's copy of them: its root frames (goexit's return address, the
 * start function's frame with its closure and arguments) do not change
 * while it lives, and a new goroutine on a reused g writes its own.
 */
static bool same_stack(struct pm_gor *g, pid_t pid, const uint8_t *gb, uint64_t sp,
		       const uint8_t *stack, size_t stack_len)
{
	uint8_t cur[256];
	uint64_t hi = pm_le64(gb + 8), from;

	if (!stack || hi <= sp || hi - sp > stack_len)
		return false; /* the copy does not reach the root frames: cannot tell */
	from = hi - sp > sizeof(cur) ? hi - sizeof(cur) : sp;
	if (read1(g, pid, from, cur, (size_t)(hi - from)))
		return false;
	return memcmp(cur, stack + (from - sp), (size_t)(hi - from)) == 0;
}

/* Labels and ancestors of the goroutine inspect_g() found (g->labels_ptr, g->anc_ptr). */
static void read_extras(struct pm_gor *g, pid_t pid, const struct pm_gor_layout *l,
			struct pm_gor_info *out)
{
	out->nlabels = 0;
	out->nancestors = 0;
	if (good_ptr(g->labels_ptr)) {
		if (l->labels == PM_GOR_LABELS_MAP)
			out->nlabels = labels_map(g, pid, g->labels_ptr);
		else if (l->labels == PM_GOR_LABELS_SLICE)
			out->nlabels = labels_slice(g, pid, g->labels_ptr);
	}
	out->labels = g->lab;
	if (good_ptr(g->anc_ptr) && g->o.creators > 0)
		out->nancestors = read_ancestors(g, pid, g->anc_ptr, g->o.creators);
	out->ancestors = g->anc;
}

static int inspect_g(struct pm_gor *g, pid_t pid, pid_t tid, uint64_t r14, uint64_t sp,
		     const uint8_t *stack, size_t stack_len, struct pm_gor_info *out)
{
	struct gproc *p = proc_of(g, pid);
	const struct pm_gor_layout *l = &p->l;
	uint8_t gb[G_READ_MAX], mb[M_READ_MAX], cb[G_READ_MAX];
	const uint8_t *ub = NULL;
	uint64_t m = 0, curg = 0;
	bool sys = false, on_stack = false, late = false, dead = false;
	int64_t goid;

	if (p->state != 1)
		return -ENOTSUP;
	memset(out, 0, sizeof(*out));
	/*
	 * The candidate from the register.  The m last seen on this thread is
	 * read in the same system call as the g: it is nearly always g.m, and
	 * one process_vm_readv per sample instead of two is most of the
	 * inspector's cost (about 2.5 us each here).
	 */
	if (good_ptr(r14)) {
		uint64_t cm = tm_get(g, tid_key(pid, tid)), gm = 0;
		struct rd r[2] = { { r14, gb, l->g_size }, { cm, mb, l->m_size } };
		bool have_g, have_m = false;

		if (good_ptr(cm)) {
			readv_all(g, pid, r, 2);
			have_g = r[0].len == l->g_size;
			have_m = r[1].len == l->m_size;
		} else {
			have_g = !read1(g, pid, r14, gb, l->g_size);
		}
		if (have_g) {
			gm = u64_at(gb, l->g_m);
			on_stack = u64_at(gb, 0) <= sp && sp < u64_at(gb, 8);
			if (!(have_m && gm == cm))
				have_m = good_ptr(gm) && !read1(g, pid, gm, mb, l->m_size);
		}
		if (have_g && have_m && u64_at(mb, l->m_procid) == (uint64_t)(uint32_t)tid) {
			uint64_t g0 = u64_at(mb, 0), gs = u64_at(mb, l->m_gsignal);

			curg = u64_at(mb, l->m_curg);
			if (r14 == curg && on_stack) {
				m = gm;
				ub = gb;
			} else if (r14 == g0 || r14 == gs) {
				m = gm;
				sys = true;
			}
		}
	}
	/*
	 * R14 is a goroutine whose stack holds SP, but no longer the one its m
	 * runs: it was descheduled or exited (and its g may be reused) since
	 * the sample.  What it holds now may not be what it held then.
	 */
	if (!m && on_stack) {
		uint32_t st = (uint32_t)pm_le32(gb + l->g_status) & ~0x1000u;

		if (st == 0 || !same_stack(g, pid, gb, sp, stack, stack_len)) {
			g->st_stale++;
			return -ESTALE;
		}
		g->st_late++;
		late = true;
		ub = gb;
		dead = st == 6;
	}
	/* else the m last seen on this thread (C code, ABI0 assembly) */
	if (!m && !late) {
		uint64_t cm = tm_get(g, tid_key(pid, tid));

		if (!cm || read1(g, pid, cm, mb, l->m_size) ||
		    u64_at(mb, l->m_procid) != (uint64_t)(uint32_t)tid)
			return -EINVAL;
		m = cm;
		curg = u64_at(mb, l->m_curg);
		g->st_fallback++;
		/* still running there: SP is on its stack, or on g0's (C called through cgo) */
		if (!good_ptr(curg) || read1(g, pid, curg, cb, l->g_size))
			return -EINVAL;
		if (!(u64_at(cb, 0) <= sp && sp < u64_at(cb, 8))) {
			uint64_t g0 = u64_at(mb, 0);
			uint8_t sb[16];

			if (!good_ptr(g0) || read1(g, pid, g0, sb, sizeof(sb)) ||
			    !(pm_le64(sb) <= sp && sp < pm_le64(sb + 8)))
				return -EINVAL;
			sys = true;
		}
		ub = cb;
	}
	if (late)
		goto have;
	tm_put(g, tid_key(pid, tid), m);
	if (!curg)
		return -ENOENT;
	if (!ub) {
		if (!good_ptr(curg) || read1(g, pid, curg, cb, l->g_size))
			return -EINVAL;
		ub = cb;
	}
	if (u64_at(ub, l->g_m) != m)
		return -EINVAL;
	curg = ub == gb ? r14 : curg;
have:
	if (late)
		curg = r14;
	goid = (int64_t)u64_at(ub, l->g_goid);
	if (goid <= 0)
		return -EINVAL;
	out->g = curg;
	out->goid = goid;
	out->gopc = u64_at(ub, l->g_gopc);
	out->startpc = l->g_startpc ? u64_at(ub, l->g_startpc) : 0;
	out->parent_goid = l->g_parent_goid ? (int64_t)u64_at(ub, l->g_parent_goid) : 0;
	out->on_system_stack = sys;
	out->late = late;
	out->dead = dead;
	g->labels_ptr = l->g_labels ? u64_at(ub, l->g_labels) : 0;
	g->anc_ptr = l->g_ancestors ? u64_at(ub, l->g_ancestors) : 0;
	out->labels = g->lab;
	out->ancestors = g->anc;
	return 0;
}

int pm_gor_inspect(struct pm_gor *g, pid_t pid, pid_t tid, uint64_t r14, uint64_t sp,
		   const uint8_t *stack, size_t stack_len, struct pm_gor_info *out)
{
	int rc = inspect_g(g, pid, tid, r14, sp, stack, stack_len, out);

	if (rc == 0)
		read_extras(g, pid, &proc_of(g, pid)->l, out);
	return rc;
}

/* ---- frames, tags, chains ---- */

static uint32_t intern_cframe(struct pm_gor *g, struct pm_stacks *st, const struct pm_map *m,
			      uint64_t vaddr, bool full)
{
	uint64_t hv = mix(mix(mix(g->seed, (uint64_t)(uintptr_t)m), vaddr), full);
	size_t pos = SIZE_MAX;
	long idx;
	struct pm_stack_frame f;

	while ((idx = pm_hidx_next(&g->cf_idx, hv, &pos)) >= 0)
		if (g->cframes[idx].m == m && g->cframes[idx].vaddr == vaddr &&
		    g->cframes[idx].full == full)
			goto have;
	PM_GROW(g->cframes, g->capcf, g->ncf + 1);
	g->cframes[g->ncf] = (struct cframe){ m, vaddr, full };
	idx = (long)g->ncf++;
	pm_hidx_add(&g->cf_idx, hv, (uint32_t)idx);
have:
	f.map_id = PM_GOR_MAP_CREATOR;
	f.is_return = false;
	f.addr = (uint64_t)idx;
	f.vaddr = (uint64_t)idx;
	return pm_stacks_frame(st, &f);
}

static uint32_t intern_tag(struct pm_gor *g, int64_t goid, const struct pm_gor_label *lab,
			   size_t n)
{
	uint64_t hv = mix(g->seed, (uint64_t)goid);
	size_t pos = SIZE_MAX, i;
	long idx;

	for (i = 0; i < n; i++)
		hv = mix(mix(hv, (uint64_t)(uintptr_t)lab[i].key), (uint64_t)(uintptr_t)lab[i].value);
	while ((idx = pm_hidx_next(&g->tag_idx, hv, &pos)) >= 0) {
		const struct tag *t = &g->tags[idx];

		if (t->goid != goid || t->nlab != n)
			continue;
		for (i = 0; i < n; i++)
			if (g->labpool[t->lab + i].key != lab[i].key ||
			    g->labpool[t->lab + i].value != lab[i].value)
				break;
		if (i == n)
			return (uint32_t)idx;
	}
	PM_GROW(g->labpool, g->caplab, g->nlab + n);
	if (n)
		memcpy(g->labpool + g->nlab, lab, n * sizeof(*lab));
	PM_GROW(g->tags, g->captags, g->ntags + 1);
	g->tags[g->ntags] = (struct tag){ goid, (uint32_t)g->nlab, (uint32_t)n };
	g->nlab += n;
	pm_hidx_add(&g->tag_idx, hv, (uint32_t)g->ntags);
	return (uint32_t)g->ntags++;
}

static uint32_t intern_chain(struct pm_gor *g, const uint32_t *ids, size_t n)
{
	uint64_t hv = mix(g->seed, n);
	size_t pos = SIZE_MAX, i;
	long idx;

	for (i = 0; i < n; i++)
		hv = mix(hv, ids[i]);
	while ((idx = pm_hidx_next(&g->chain_idx, hv, &pos)) >= 0)
		if (g->chains[idx].n == n &&
		    memcmp(g->chainpool + g->chains[idx].off, ids, n * sizeof(*ids)) == 0)
			return (uint32_t)idx;
	/* + 1: the pool exists even while every chain is empty (no offset from NULL) */
	PM_GROW(g->chainpool, g->capchainpool, g->nchainpool + n + 1);
	if (n)
		memcpy(g->chainpool + g->nchainpool, ids, n * sizeof(*ids));
	PM_GROW(g->chains, g->capchains, g->nchains + 1);
	g->chains[g->nchains] = (struct chain){ (uint32_t)g->nchainpool, (uint32_t)n };
	g->nchainpool += n;
	pm_hidx_add(&g->chain_idx, hv, (uint32_t)g->nchains);
	return (uint32_t)g->nchains++;
}

/* The innermost function at return address @pc of @pid, NULL when unknown. */
static const char *func_at(struct pm_gor *g, struct pm_maps *maps, pid_t pid, uint64_t pc,
			   const struct pm_map **mp)
{
	const struct pm_map *m = pm_maps_find(maps, pid, pc);

	*mp = m;
	if (!m || !m->sym || pc == 0)
		return NULL;
	if (!pm_sym_frames(m->sym, (uint64_t)((int64_t)pc - m->bias) - 1, g->fr, 1))
		return NULL;
	return g->fr[0].func;
}

/* One creator frame for the return address @pc; false when it is in no mapping. */
static bool add_cframe(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st, pid_t pid,
		       uint64_t pc, bool full, size_t *n)
{
	const struct pm_map *m = pm_maps_find(maps, pid, pc);

	if (!m || !m->sym || !pc || *n >= MAX_CHAIN)
		return false;
	g->tmp[(*n)++] = intern_cframe(g, st, m, (uint64_t)((int64_t)pc - m->bias) - 1, full);
	return true;
}

/*
 * With ancestors: each one's stack at its `go` statement, nearest first.
 * The runtime's own frames at the top (newproc and what it called) and the
 * goexit at the bottom are dropped; the last ancestor's go statement ends
 * the chain unless the runtime made that goroutine.
 */
static size_t chain_ancestors(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st,
			      pid_t pid, const struct pm_gor_info *gi)
{
	size_t n = 0, k, i;
	const struct pm_map *m;

	for (k = 0; k < gi->nancestors && k < g->o.creators; k++) {
		const struct pm_gor_ancestor *a = &gi->ancestors[k];
		size_t first = 0, last = a->npcs;

		for (i = 0; i < a->npcs && i < 8; i++) {
			const char *f = func_at(g, maps, pid, a->pcs[i], &m);
			if (f && strcmp(f, "runtime.newproc") == 0) {
				first = i + 1;
				break;
			}
		}
		while (last > first) {
			const char *f = func_at(g, maps, pid, a->pcs[last - 1], &m);
			if (!f || strcmp(f, "runtime.goexit") != 0)
				break;
			last--;
		}
		for (i = first; i < last; i++)
			add_cframe(g, maps, st, pid, a->pcs[i], false, &n);
	}
	if (k > 0) {
		const char *f = func_at(g, maps, pid, gi->ancestors[k - 1].gopc, &m);
		if (f && strncmp(f, "runtime.", 8) != 0)
			add_cframe(g, maps, st, pid, gi->ancestors[k - 1].gopc, true, &n);
	}
	return n;
}

static struct seen *seen_slot(struct pm_gor *g, uint64_t key, bool insert)
{
	size_t h, i;

	if (insert && (g->seen_n + 1) * 2 > g->seen_size) {
		struct seen *o = g->seen;
		size_t os = g->seen_size;

		g->seen_size = os ? os * 2 : 1024;
		g->seen = xcalloc(g->seen_size, sizeof(*g->seen));
		g->seen_n = 0;
		for (i = 0; i < os; i++)
			if (o[i].key) {
				*seen_slot(g, o[i].key, true) = o[i];
			}
		free(o);
	}
	if (!g->seen_size)
		return NULL;
	for (h = pm_hash_u64(key) & (g->seen_size - 1); g->seen[h].key;
	     h = (h + 1) & (g->seen_size - 1))
		if (g->seen[h].key == key)
			return &g->seen[h];
	if (!insert)
		return NULL;
	g->seen_n++;
	g->seen[h].key = key;
	return &g->seen[h];
}

static uint64_t seen_key(pid_t pid, int64_t goid)
{
	return ((uint64_t)(uint32_t)pid << 40 ^ (uint64_t)goid) | 1ULL << 63;
}

/*
 * Without ancestors: the go statement; then (1.21+, parentGoid) the go
 * statement of each parent that was itself sampled at some time.
 */
static size_t chain_gopc(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st, pid_t pid,
			 const struct pm_gor_info *gi)
{
	size_t n = 0;
	unsigned lev;
	int64_t parent = gi->parent_goid;

	add_cframe(g, maps, st, pid, gi->gopc, true, &n);
	for (lev = 1; lev < g->o.creators && parent > 0; lev++) {
		struct seen *e = seen_slot(g, seen_key(pid, parent), false);

		if (!e || !add_cframe(g, maps, st, pid, e->gopc, true, &n))
			break;
		parent = e->parent;
	}
	return n;
}

static uint64_t created_key(pid_t pid, uint64_t gp)
{
	return (gp ^ (uint64_t)(uint32_t)pid << 48) | 1;
}

static uint32_t created_slot(uint64_t key)
{
	return (uint32_t)(pm_hash_u64(key) & (CREATED_SLOTS - 1));
}

/* Creation number @gen, while the ring still holds it. */
static struct created *created_gen(struct pm_gor *g, uint64_t gen)
{
	struct created *c;

	if (!gen || !g->created)
		return NULL;
	c = &g->created[gen & (CREATED_SLOTS - 1)];
	return c->gen == gen ? c : NULL;
}

/* The creation last seen on g @gp; NULL when the probes saw none. */
static struct created *created_of(struct pm_gor *g, pid_t pid, uint64_t gp)
{
	uint64_t key = created_key(pid, gp);
	const struct gidx *x;

	if (!g->gidx)
		return NULL;
	x = &g->gidx[created_slot(key)];
	return x->key == key ? created_gen(g, x->gen) : NULL;
}

/*
 * The ancestors of the goroutine of creation @c, nearest first, as
 * tracebackancestors would have them (into g->anc).  The count.
 */
static size_t created_chain(struct pm_gor *g, const struct created *c)
{
	size_t k;

	for (k = 0; c && k < g->o.creators && k < PM_GOR_MAX_ANCESTORS; k++) {
		const struct created *up = created_gen(g, c->cgen);

		g->anc[k].goid = 0; /* not known: see struct created */
		/* the creator's own go statement: where its creator's stack was */
		g->anc[k].gopc = up && up->npcs > 1 ? up->pcs[1] : 0;
		g->anc[k].npcs = c->npcs;
		memcpy(g->anc[k].pcs, c->pcs, c->npcs * sizeof(c->pcs[0]));
		c = up;
	}
	return k;
}

static bool find_layout(struct gproc *p, struct pm_maps *maps, pid_t pid,
			const uint64_t *pcs, size_t npcs)
{
	size_t i;

	if (p->state)
		return p->state == 1;
	for (i = 0; i < npcs && i < 64; i++) {
		const struct pm_map *m = pm_maps_find(maps, pid, pcs[i]);
		const char *ver;

		if (!m || !m->sym || !pm_sym_is_go(m->sym))
			continue;
		ver = pm_sym_go_version(m->sym);
		if (pm_gor_layout_dwarf(pm_sym_path(m->sym), ver, &p->l) == 0 ||
		    pm_gor_layout_version(ver, &p->l) == 0) {
			p->state = 1;
			return true;
		}
		pm_warn("goroutine ids, labels and creators are off for PID %d: Go version "
			"'%s' is not known and the binary has no DWARF",
			(int)pid, ver && *ver ? ver : "unknown");
		p->state = -1;
		return false;
	}
	if (++p->tries >= MAX_GO_TRIES)
		p->state = -1; /* not a Go process */
	return false;
}

bool pm_gor_unw_abi(struct pm_gor *g, struct pm_maps *maps, pid_t pid, const uint64_t *pcs,
		    size_t npcs, struct pm_unw_goabi *out)
{
	struct gproc *p = proc_of(g, pid);
	const struct pm_gor_layout *l = &p->l;

	if (npcs == 0 ? p->state != 1 : !find_layout(p, maps, pid, pcs, npcs))
		return false;
	if (!l->g_m || !l->m_curg || !l->g_sched_sp || !l->g_sched_pc)
		return false;
	memset(out, 0, sizeof(*out));
	out->g_m = l->g_m;
	out->g_sched_sp = l->g_sched_sp;
	out->g_sched_pc = l->g_sched_pc;
	out->g_sched_bp = l->g_sched_bp;
	out->m_curg = l->m_curg;
	out->m_gsignal = l->m_gsignal;
	return true;
}

static size_t gor_sample(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st, pid_t pid,
			 pid_t tid, uint64_t r14, uint64_t sp, const uint8_t *stack, size_t stack_len,
			 const uint64_t *pcs, size_t npcs, uint32_t *ids, size_t n, size_t cap)
{
	struct gproc *p = proc_of(g, pid);
	struct pm_gor_info gi;
	struct centry *e;
	struct pm_stack_frame tf;
	uint64_t hv;
	size_t nc = 0;
	const uint32_t *cids = g->tmp;
	bool parent_mode;
	struct created *cr;
	uint32_t tagv;

	if (!find_layout(p, maps, pid, pcs, npcs))
		return n;
	g->st_inspect++;
	switch (inspect_g(g, pid, tid, r14, sp, stack, stack_len, &gi)) {
	case 0:
		g->st_ok++;
		break;
	case -ENOENT:
		g->st_enoent++;
		return n;
	case -ESTALE:
		return n;
	default:
		g->st_einval++;
		return n;
	}
	cr = created_of(g, pid, gi.g);
	parent_mode = p->l.g_parent_goid && !good_ptr(g->anc_ptr) && !cr;
	if (parent_mode) {
		struct seen *s = seen_slot(g, seen_key(pid, gi.goid), true);
		s->gopc = gi.gopc;
		s->parent = gi.parent_goid;
	}
	hv = mix(mix(mix(mix(0, (uint64_t)pid), gi.g), (uint64_t)gi.goid), g->labels_ptr);
	e = &g->cache[hv & (CACHE_SIZE - 1)];
	if (!(e->pid == pid && e->g == gi.g && e->goid == gi.goid &&
	      e->labels_ptr == g->labels_ptr && e->anc_ptr == g->anc_ptr && e->tag &&
	      e->cgen == (cr ? cr->gen : 0))) {
		e->pid = pid;
		e->g = gi.g;
		e->goid = gi.goid;
		e->labels_ptr = g->labels_ptr;
		e->anc_ptr = g->anc_ptr;
		e->cgen = cr ? cr->gen : 0;
		read_extras(g, pid, &p->l, &gi);
		if (!gi.nancestors && g->o.creators) /* no tracebackancestors: the probes' */
			gi.nancestors = created_chain(g, cr);
		e->tag = intern_tag(g, gi.goid, gi.labels, gi.nlabels) + 1;
		e->chain = 0;
		if (g->o.creators && !parent_mode) {
			nc = gi.nancestors ? chain_ancestors(g, maps, st, pid, &gi)
					   : chain_gopc(g, maps, st, pid, &gi);
			e->chain = intern_chain(g, g->tmp, nc) + 1;
		}
	}
	tagv = 0;
	{
		/* an exited goroutine's labels are cleared: it keeps those it had alive */
		struct centry *la = &g->last[mix(mix(mix(0, (uint64_t)pid), gi.g), (uint64_t)gi.goid) &
					     (CACHE_SIZE - 1)];
		bool same = la->pid == pid && la->g == gi.g && la->goid == gi.goid && la->tag;

		if (!gi.dead) {
			*la = *e;
		} else if (same) {
			tagv = la->tag;
		}
	}
	tagv = tagv ? tagv : e->tag;
	if (g->o.creators && parent_mode) {
		nc = chain_gopc(g, maps, st, pid, &gi);
	} else if (e->chain) {
		cids = g->chainpool + g->chains[e->chain - 1].off;
		nc = g->chains[e->chain - 1].n;
	}
	if (n + 1 > cap)
		return n;
	if (n + nc + 1 > cap)
		nc = 0;
	memcpy(ids + n, cids, nc * sizeof(*ids));
	n += nc;
	tf.map_id = PM_GOR_MAP_TAG;
	tf.is_return = false;
	tf.addr = tagv - 1;
	tf.vaddr = tagv - 1;
	ids[n++] = pm_stacks_frame(st, &tf);
	return n;
}

size_t pm_gor_sample(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st, pid_t pid,
		     pid_t tid, uint64_t r14, uint64_t sp, const uint8_t *stack, size_t stack_len,
		     const uint64_t *pcs, size_t npcs, uint32_t *ids, size_t n, size_t cap)
{
	uint64_t t0 = g->stats ? pm_now_ns() : 0;

	n = gor_sample(g, maps, st, pid, tid, r14, sp, stack, stack_len, pcs, npcs, ids, n, cap);
	if (g->stats)
		g->st_ns += pm_now_ns() - t0;
	return n;
}

/* ---- creators from outside: probes on goroutine creation ---- */

static struct pending *pending_of(struct pm_gor *g, pid_t tid)
{
	if (!g->pending)
		g->pending = xcalloc(PENDING_SLOTS, sizeof(*g->pending));
	return &g->pending[pm_hash_u64((uint64_t)tid) & (PENDING_SLOTS - 1)];
}

int pm_gor_probe_newproc(struct pm_gor *g, struct pm_maps *maps, pid_t pid, pid_t tid,
			 uint64_t r14, const uint64_t *pcs, size_t npcs)
{
	struct gproc *p = proc_of(g, pid);
	struct pending *pd;

	if (!find_layout(p, maps, pid, pcs, npcs))
		return -ENOTSUP;
	/* newproc runs on the creating goroutine: R14 is its g */
	if (npcs < 2 || !good_ptr(r14))
		return -EINVAL;
	pd = pending_of(g, tid);
	memset(pd, 0, sizeof(*pd));
	pd->pid = pid;
	pd->tid = tid;
	{
		const struct created *cr = created_of(g, pid, r14);

		pd->c.cgen = cr ? cr->gen : 0;
	}
	pd->c.npcs = (uint32_t)(npcs < CREATED_PCS ? npcs : CREATED_PCS);
	memcpy(pd->c.pcs, pcs, pd->c.npcs * sizeof(pcs[0]));
	return 0;
}

int pm_gor_probe_created(struct pm_gor *g, struct pm_maps *maps, pid_t pid, pid_t tid,
			 uint64_t newg, const uint64_t *pcs, size_t npcs)
{
	struct gproc *p = proc_of(g, pid);
	struct pending *pd = pending_of(g, tid);
	const struct pm_map *m;
	const char *caller;
	struct created *c;
	uint64_t key;

	if (p->state != 1)
		return -ENOTSUP;
	/*
	 * runqput also requeues woken goroutines: only newproc's is a
	 * creation.  Its call in newproc.func1 has one return address: once
	 * named, it is compared, not symbolized again.
	 */
	if (npcs < 2)
		return -ENOENT;
	if (pcs[1] != p->newproc_ret) {
		caller = func_at(g, maps, pid, pcs[1], &m);
		if (!caller || strcmp(caller, "runtime.newproc.func1"))
			return -ENOENT;
		p->newproc_ret = pcs[1];
	}
	if (pd->tid != tid || pd->pid != pid)
		return -ENOENT; /* its newproc was before the recording */
	pd->tid = 0;
	if (!good_ptr(newg))
		return -EINVAL;
	if (!g->created) {
		g->created = xcalloc(CREATED_SLOTS, sizeof(*g->created));
		g->gidx = xcalloc(CREATED_SLOTS, sizeof(*g->gidx));
	}
	c = &g->created[++g->gen & (CREATED_SLOTS - 1)];
	*c = pd->c;
	c->gen = g->gen;
	key = created_key(pid, newg);
	g->gidx[created_slot(key)] = (struct gidx){ key, c->gen };
	g->st_created++;
	return 0;
}

uint64_t pm_gor_location(struct pm_gor *g, struct pm_profile *p, const struct pm_stack_frame *f)
{
	struct pm_prof_line lines[64];
	const struct cframe *c;
	uint64_t mid;
	size_t nf = 0, k;

	if (f->map_id != PM_GOR_MAP_CREATOR || f->addr >= g->ncf)
		return 0;
	c = &g->cframes[f->addr];
	mid = pm_prof_mapping(p, 0, 0, 0, PM_GOR_CREATORS_MAPPING, "");
	if (c->m && c->m->sym)
		nf = pm_sym_frames(c->m->sym, c->vaddr, g->fr, PM_ARRAY_SIZE(g->fr));
	if (!c->full && nf > 1)
		nf = 1;
	for (k = 0; k < nf; k++) {
		char *name = xasprintf("%s%s", g->fr[k].func, PM_GOR_CREATORS_MARK);

		lines[k].func_id = pm_prof_func(p, name, g->fr[k].func, g->fr[k].file,
						g->fr[k].start_line);
		lines[k].line = g->fr[k].line;
		free(name);
	}
	if (!nf) {
		char *name = xasprintf("0x%" PRIx64 "%s", c->vaddr + 1, PM_GOR_CREATORS_MARK);

		lines[0].func_id = pm_prof_func(p, name, name, "", 0);
		lines[0].line = 0;
		free(name);
		nf = 1;
	}
	return pm_prof_loc(p, mid, 0, lines, nf);
}

size_t pm_gor_labels(struct pm_gor *g, const struct pm_stacks *st, const uint32_t *ids, size_t *n,
		     struct pm_prof_label *out, size_t max)
{
	const struct pm_stack_frame *f;
	const struct tag *t;
	size_t k = 0, i;

	if (!*n)
		return 0;
	f = pm_stacks_frame_at(st, ids[*n - 1]);
	if (!f || f->map_id != PM_GOR_MAP_TAG)
		return 0;
	(*n)--;
	if (f->addr >= g->ntags || !max)
		return 0;
	t = &g->tags[f->addr];
	memset(out, 0, max * sizeof(*out));
	out[k].key = "goroutine";
	out[k++].num = t->goid;
	for (i = 0; i < t->nlab && k < max; i++, k++) {
		out[k].key = g->labpool[t->lab + i].key;
		out[k].str = g->labpool[t->lab + i].value;
	}
	return k;
}
