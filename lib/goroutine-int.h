/*
 * goroutine-int: what the modules of the goroutine inspector share, for
 * them only (the rest of the code includes goroutine.h): struct pm_gor and
 * its tables, and the inspection that goroutine.c does for gorframes.c.
 */
#ifndef PM_GOROUTINE_INT_H
#define PM_GOROUTINE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "goroutine.h"
#include "gorlayout.h"
#include "symtab.h"
#include "util.h"

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

/* ---- interning tables ---- */

static inline uint64_t mix(uint64_t h, uint64_t v)
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

static inline bool good_ptr(uint64_t p)
{
	return p && !(p & 7) && p < 1ULL << 56;
}

/* The state of @pid, added (unknown) when new. */
struct gproc *pm_gor_proc_of(struct pm_gor *g, pid_t pid);

/*
 * pm_gor_inspect() without the labels and ancestors: those are read by
 * pm_gor_read_extras() from what it leaves in g->labels_ptr and g->anc_ptr.
 */
int pm_gor_inspect_g(struct pm_gor *g, pid_t pid, pid_t tid, uint64_t r14, uint64_t sp,
	      const uint8_t *stack, size_t stack_len, struct pm_gor_info *out);
/* Labels and ancestors of the goroutine pm_gor_inspect_g() found (g->labels_ptr, g->anc_ptr). */
void pm_gor_read_extras(struct pm_gor *g, pid_t pid, const struct pm_gor_layout *l,
		 struct pm_gor_info *out);

#endif
