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

#include "goruntime/goroutine.h"
#include "goruntime/gorlayout.h"
#include "symbols/symtab.h"
#include "base/util.h"

#define HMAP_BUCKET 272 /* map[string]string bucket: tophash[8], keys[8], values[8], overflow */
#define MAX_BUCKETS 16
#define MAX_OVERFLOW 8
#define MAX_KEY 128
#define MAX_VAL 512
#define MAX_CHAIN 512
#define CACHE_BITS 13
#define CACHE_SIZE (1u << CACHE_BITS)
#define MAX_GO_TRIES 1000
#define CREATED_PCS 64      /* return addresses kept of a creator's stack */
#define RCACHE_SLOTS 64     /* reads kept for the rest of a drain pass, direct-mapped */
#define RCACHE_MAX 1024     /* longest read kept (a runtime.g or runtime.m) */
#define HELD_PASSES 64      /* drain passes whose end times are kept */

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
};

/* a process's goroutine samples without the log: all, not known, why; found by stack */
enum { D_ALL, D_UNKNOWN, D_SYS, D_ROOT, D_BYSTACK, D_N };

struct gproc {
	pid_t pid;
	int state; /* 0 unknown, 1 on, -1 off */
	unsigned tries;
	uint64_t newproc_ret; /* probes: the return address into runtime.newproc */
	uint64_t sysstack_ret; /* ... into systemstack (Go 1.19's chain skips newproc) */
	uint64_t goexit_ret;  /* ... and goexit's at a goroutine's root */
	/*
	 * The runtime's list of goroutines read once, when the probe is on
	 * (snap_take): 0 not yet, 1 read, -1 not readable
	 */
	int snap;
	struct pm_gor_layout l;
	const struct pm_map *gomap; /* the Go binary's mapping the layout came from */
	uint64_t allgs_at; /* runtime.allgs in the binary (pm_gor_allgs), 0 = not looked up */
	/* its samples without the log (pm_gor_default_counts()), by D_* */
	uint64_t d[D_N];
};

struct seen {
	uint64_t key; /* pid << 40 ^ goid */
	uint64_t gopc;
	int64_t parent;
};

/*
 * The creation log (the probe on goroutine creation, pm_gor_created()):
 * (pid, g) -> the goroutine created on that g last.  Records are fed in
 * time order and every creation before a sample is fed before it
 * (record.c's drain), so the entry of a sample's g is the goroutine that
 * ran on it at the sample's time, whatever the g holds when it is read.
 * One entry per g the process ever made (Go never frees a g): memory is
 * what live goroutines need, not the last N creations.
 */
struct gent {
	uint64_t key; /* created_key(); 0 = free */
	int64_t goid;
	uint32_t node; /* its creators: cnode index + 1; 0 = not known */
	uint64_t hi;   /* its g.stack.hi when made (or listed); 0 = not known */
	/*
	 * from the runtime's list (snap_take), read before the events' clock
	 * showed this: the goroutine on the g from then until the log's next
	 * creation on it; before, not known.  0 = made by the log.
	 */
	uint64_t from;
	uint64_t made; /* made by the log: its creation's time (the events' clock) */
};

enum { END_PARENT, END_ROOT, END_UNKNOWN };
#define NGAPS 64 /* the creation probe's gaps kept (pm_gor_watching()) */
enum { CH_COMPLETE, CH_PARTIAL, CH_UNKNOWN, CH_NGOR }; /* pm_gor counts of samples */

/*
 * One level of a creator chain: the creating goroutine's stack at its go
 * statement (seg, an interned chain of frames), then its own creators
 * (parent, a cnode index + 1), or the end: the runtime made it (root) or
 * who made it is not known.  Interned and never changed: a child keeps its
 * creators after they exit and their g runs others.
 */
struct cnode {
	uint32_t seg, parent;
	uint8_t end;
	uint8_t flat_status; /* CH_* of flat */
	uint32_t flat;       /* the frames of opts.creators levels: chain index + 1 */
};

/* A root check's answer: does the walk's root lie in the function at g.startpc? */
#define ROOTCK_SLOTS 1024
struct rootck {
	uint64_t root, prev, start; /* the walk's last two pcs, g.startpc */
	int8_t same; /* 1 yes, 0 no, -1 cannot tell (no symbols) */
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
	size_t cache_mask;   /* of both: CACHE_SIZE - 1 unless o.cache_bits */
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
	/* the creation log (probes on when the first creation was fed) */
	bool probes;
	unsigned unw_status; /* the walk of the sample being inspected (PM_UNW_*) */
	int last_rc;         /* pm_gor_last(): what the last pm_gor_sample() found ... */
	bool last_sys;       /* ... and whether that sample ran on the system stack */
	uint64_t last_g;     /* ... and its goroutine (pm_gor_last_g()): g, 0 = none known */
	int64_t last_goid;
	bool copy_used;      /* ... and whether it compared the stack copy to its root */
	uint64_t switch_bp;  /* ... and its BP where it switched off g0 */
	uint64_t sample_time; /* ... and its time (the events' clock) */
	uint64_t max_time;    /* the latest sample time processed */
	/*
	 * the probe's gaps (pm_gor_watching()): [gap_from, gap_to) the last
	 * NGAPS, gap_to UINT64_MAX while closed; gaps_before: the end of the
	 * latest one dropped (before it, a gap may have been)
	 */
	uint64_t gap_from[NGAPS], gap_to[NGAPS], gaps_before;
	size_t ngaps;
	uint64_t st_unwatched;
	/* stack tops: (pid, g.stack.hi) -> the g created with that stack (the probe's lo, hi) */
	struct gent *tops;
	size_t tops_size, tops_n;
	struct gent *gents;
	size_t gents_size, gents_n;
	struct cnode *cnodes;
	size_t ncnodes, capcnodes;
	struct pm_hidx cnode_idx;
	uint64_t st_created, st_chain[CH_NGOR], st_gunknown, st_lunknown, st_bystack, st_snap, st_clate;
	/* runtime.allgs read short: times, and the most entries left out at once */
	uint64_t st_allgs_cut, st_allgs_max_cut;
	/* label sets read, those read cut (labels past PM_GOR_MAX_LABELS, long strings) */
	uint64_t st_labsets, st_labcut;
	bool lab_cut; /* the label set being read */
	struct rootck *rootck; /* (root pc, startpc) -> same function: ROOTCK_SLOTS */
	/*
	 * Without the log, (pid, g) -> the goroutine read on it (goid, its
	 * stack's hi) and the pass that first read it there (node); stack
	 * tops (pid, hi) -> the g (goid field).  Each pass ends at
	 * pass_end[pass % HELD_PASSES] (the events' clock, taken when the
	 * next pass begins): a g held what a pass read on it from the pass's
	 * end on, as long as a later read finds it there.
	 */
	struct gent *held, *htops;
	size_t held_size, held_n, htops_size, htops_n;
	uint64_t pass_end[HELD_PASSES];
	/* one inspection's results */
	struct pm_gor_label lab[PM_GOR_MAX_LABELS];
	struct pm_gor_ancestor anc[PM_GOR_MAX_ANCESTORS];
	uint64_t labels_ptr, anc_ptr;
	uint32_t tmp[MAX_CHAIN];
	struct pm_frame fr[64];
	char kb[PM_GOR_MAX_LABELS][MAX_KEY], vb[PM_GOR_MAX_LABELS][MAX_VAL];
	uint8_t bk[MAX_BUCKETS * HMAP_BUCKET];
};

/* Read @len bytes of @pid at @addr (batched and cached as every read); 0 when all were. */
int pm_gor_read1(struct pm_gor *g, pid_t pid, uint64_t addr, void *buf, size_t len);
/*
 * The g of every goroutine @pid's runtime made (runtime.allgs, dead ones
 * too), in a new array: 0, or -ENOENT when the list cannot be found or
 * read (p->gomap: the binary it is in), -EAGAIN when it changed while read
 * three times.
 */
int pm_gor_allgs(struct pm_gor *g, pid_t pid, uint64_t **gs, size_t *n);

/* The state of @pid, added (unknown) when new. */
struct gproc *pm_gor_proc_of(struct pm_gor *g, pid_t pid);
struct gproc *pm_gor_proc_find(struct pm_gor *g, pid_t pid); /* NULL when none */
void pm_gor_procs_zero(struct pm_gor *g); /* every process's counts back to 0 */

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
