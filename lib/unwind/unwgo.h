/*
 * unwgo: internal to the unwinder (unwind.c, unwgo.c): the state of one
 * walk, and the walk's crossings of the Go runtime's stack switches that
 * unwgo.c holds -- cgo calls and callbacks, g0 back to the goroutine
 * (systemstack, morestack), the vDSO's g0, signal frames, and the kernel's
 * callchain across a switch whose saved state has moved on.  Not for the
 * rest of the code: unwind.h is the unwinder's interface.
 */
#ifndef PM_UNWGO_H
#define PM_UNWGO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/util.h"
#include "unwind/unwind.h"

#define CACHE_BITS 12
#define CACHE_SIZE (1u << CACHE_BITS)

struct cache_ent {
	uint64_t pc; /* 0 = empty */
	int rc;
	struct pm_unw_func f;
};

#define GSTACK_MAX 32768
#define MAX_SWITCHES 8
#define MAX_EXTENDS 8 /* reads past the copy per walk: 8 x 32 KiB */
#define G_HEAD_MAX 512 /* bytes of a runtime.g read at a switch: stack, m, sched */

struct pm_unw {
	pm_unw_lookup_fn fn;
	void *arg;
	struct cache_ent *cache; /* cache_mask + 1 entries (CACHE_SIZE unless told fewer) */
	size_t cache_mask;
	/*
	 * stacks read from the target: the one walked and the next one
	 * (allocated at the first read: a replay's walks read none)
	 */
	uint8_t (*gstack)[GSTACK_MAX];
	unsigned gnext;
	uint64_t *alt; /* the kernel's version of a stack read past the copy */
	size_t alt_cap;
	/*
	 * time.now & co.: where R12 is set, per entry (pm_unw_vdso_r12_set()),
	 * read from the code once, not per sample; cleared with the cache
	 */
	struct {
		uint64_t entry; /* 0 = empty */
		int32_t off;    /* past MOVQ SP, R12; -1 = not found */
	} r12[4];
	unsigned r12_next;
	uint64_t switch_bp; /* the last walk's BP at its first switch off g0 (0: none) */
};

struct regs {
	uint64_t r[PM_UNW_NREGS];
	uint32_t valid;
};

static inline bool reg_get(const struct regs *rs, unsigned i, uint64_t *v)
{
	if (i >= PM_UNW_NREGS || !(rs->valid & (1u << i)))
		return false;
	*v = rs->r[i];
	return true;
}

static inline void reg_set(struct regs *rs, unsigned i, uint64_t v)
{
	rs->r[i] = v;
	rs->valid |= 1u << i;
}

/* One walk: the stack being walked, its registers, and the g register of its code. */
struct walk {
	struct pm_unw_input cur; /* a copy of [cur.sp, cur.sp + cur.stack_len) */
	struct regs rs;
	uint64_t g;       /* 0 = unknown */
	unsigned nswitch; /* stacks crossed */
	/*
	 * of them, returns out of the vDSO's g0 by time.now/nanotime1's R12:
	 * frames of the thread at the sample, which the kernel's callchain
	 * holds too
	 */
	unsigned nvdso;
	unsigned nextend; /* reads of the stack past the copy */
	size_t ext_at;    /* pcs[ext_at..] came from such a read (0: none) */
	unsigned ext_status; /* *status before it */
};

/* A plausible user-space pointer to an 8-byte aligned object. */
static inline bool good_ptr(uint64_t p)
{
	return p >= PM_NULL_PAGE && !(p & 7) && p < PM_USER_END;
}

/* shared by unwind.c and unwgo.c (unwind.c) */
int pm_unw_lookup(struct pm_unw *u, uint64_t pc, struct pm_unw_func *out);
int pm_unw_read_copy(const struct pm_unw_input *in, uint64_t addr, void *buf, size_t len);
int pm_unw_read_target(const struct pm_unw_input *in, uint64_t addr, void *buf, size_t len);
bool pm_unw_load_stack(struct pm_unw *u, struct pm_unw_input *cur, uint64_t sp, uint64_t hi);
size_t pm_unw_follow_chain(struct pm_unw *u, const struct pm_unw_input *in, size_t from,
			   uint64_t *pcs, size_t n, size_t max, unsigned *status);

static inline int read_word(const struct pm_unw_input *in, uint64_t addr, uint64_t *out)
{
	return pm_unw_read_copy(in, addr, out, 8);
}

/* the crossings (unwgo.c) */
int pm_unw_cgo_switch(struct pm_unw *u, struct walk *w, uint64_t *pc);
size_t pm_unw_cgo_chain(struct pm_unw *u, const struct pm_unw_input *in, const struct regs *rs,
			uint64_t *pcs, size_t n, size_t max, unsigned *status);
int pm_unw_g0_switch(struct pm_unw *u, struct walk *w, uint64_t *pc);
int pm_unw_vdso_return(struct pm_unw *u, struct walk *w, uint64_t *ra);
size_t pm_unw_vdso_chain(struct pm_unw *u, const struct pm_unw_input *in,
			 const struct pm_unw_func *f, uint64_t *pcs, size_t n, size_t max,
			 unsigned *status);
bool pm_unw_vdso_r12_set(struct pm_unw *u, const struct walk *w, const struct pm_unw_func *f,
			  uint64_t pc);
int pm_unw_callback_switch(struct pm_unw *u, struct walk *w);
int pm_unw_signal_frame(struct pm_unw *u, struct walk *w, uint64_t sp, uint64_t *pc);
size_t pm_unw_chain_cross(struct pm_unw *u, struct walk *w, const struct pm_unw_input *in,
			  const struct pm_unw_func *sw, uint64_t *pcs, size_t n, size_t max,
			  unsigned *status);

#endif
