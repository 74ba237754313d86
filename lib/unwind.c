/*
 * The walk, for x86_64.
 *
 * Go keeps the exact distance from SP to the return address for every PC
 * in gopclntab's pcsp table, so a Go frame is unwound as the runtime does
 * it: ret = [sp + d], caller's sp = sp + d + 8.  That is right even in a
 * prologue, an epilogue, or a leaf that never sets up a frame, where a
 * frame-pointer walk would drop or repeat the caller.  Code that is not Go
 * (libc, the vDSO, C) is walked by the frame-pointer chain instead.
 *
 * Every return address must land in known code; the first that does not
 * ends the walk and the stack is marked cut: a short honest stack beats a
 * long invented one.  When the copy of the stack runs out, the kernel's
 * frame-pointer callchain (if the sample has one) is spliced in at the last
 * return address both agree on.
 */
#include "unwind.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define CACHE_BITS 12
#define CACHE_SIZE (1u << CACHE_BITS)

struct cache_ent {
	uint64_t pc; /* 0 = empty */
	int rc;
	struct pm_unw_func f;
};

struct pm_unw {
	pm_unw_lookup_fn fn;
	void *arg;
	struct cache_ent cache[CACHE_SIZE];
};

struct pm_unw *pm_unw_new(pm_unw_lookup_fn fn, void *arg)
{
	struct pm_unw *u = xcalloc(1, sizeof(*u));

	u->fn = fn;
	u->arg = arg;
	return u;
}

void pm_unw_free(struct pm_unw *u)
{
	free(u);
}

void pm_unw_flush(struct pm_unw *u)
{
	memset(u->cache, 0, sizeof(u->cache));
}

static int lookup(struct pm_unw *u, uint64_t pc, struct pm_unw_func *out)
{
	struct cache_ent *e = &u->cache[pm_hash_u64(pc) & (CACHE_SIZE - 1)];

	if (e->pc != pc || pc == 0) {
		e->pc = pc;
		memset(&e->f, 0, sizeof(e->f));
		e->rc = pc ? u->fn(u->arg, pc, &e->f) : -ENOENT;
	}
	*out = e->f;
	return e->rc;
}

/* Read the word at absolute address @addr from the copy. */
static int read_word(const struct pm_unw_input *in, uint64_t addr, uint64_t *out)
{
	uint64_t off;

	if (addr < in->sp)
		return -1;
	off = addr - in->sp;
	if (off > in->stack_len || in->stack_len - off < 8)
		return -1;
	memcpy(out, in->stack + off, 8);
	return 0;
}

/*
 * Continue from the kernel's callchain after the copy ran out at pcs[n-1].
 * The chain may lack the caller of a frameless leaf, so look for the
 * matching return address near the same depth first, then anywhere.
 */
static size_t splice_chain(struct pm_unw *u, const struct pm_unw_input *in, uint64_t *pcs,
			   size_t n, size_t max, unsigned *status)
{
	uint64_t last = pcs[n - 1];
	size_t k, start = SIZE_MAX;

	if (!in->chain || in->chain_len < 2)
		return n;
	for (k = n >= 2 ? n - 2 : 0; k < in->chain_len && k <= n + 1; k++)
		if (in->chain[k] == last) {
			start = k;
			break;
		}
	for (k = 0; start == SIZE_MAX && k < in->chain_len; k++)
		if (in->chain[k] == last)
			start = k;
	if (start == SIZE_MAX)
		return n;
	*status &= ~(unsigned)PM_UNW_COPY_END;
	for (k = start + 1; k < in->chain_len; k++) {
		struct pm_unw_func f;
		uint64_t ra = in->chain[k];

		if (n >= max) {
			*status |= PM_UNW_MAX;
			return n;
		}
		if (ra == 0 || lookup(u, ra - 1, &f) < 0) {
			*status |= PM_UNW_CUT;
			return n;
		}
		pcs[n++] = ra;
		if (f.flags & PM_UNW_F_MAIN)
			*status |= PM_UNW_SAW_MAIN;
		if (f.flags & PM_UNW_F_TOP) {
			*status |= PM_UNW_COMPLETE;
			return n;
		}
	}
	/* the kernel stops at 127 frames or at a zero frame pointer */
	*status |= PM_UNW_COPY_END;
	return n;
}

size_t pm_unw_walk(struct pm_unw *u, const struct pm_unw_input *in, uint64_t *pcs, size_t max,
		   unsigned *status)
{
	uint64_t pc = in->ip, sp = in->sp, bp = in->bp;
	size_t n = 0;

	*status = 0;
	if (max == 0)
		return 0;
	pcs[n++] = pc;
	for (;;) {
		struct pm_unw_func f;
		uint64_t ra, nsp, nbp = bp;
		bool leaf = n == 1;

		/* For return addresses, look up the call instruction. */
		if (lookup(u, leaf ? pc : pc - 1, &f) < 0) {
			if (!leaf) {
				*status |= PM_UNW_CUT;
				break;
			}
			f.flags = 0;
			f.spdelta = -1;
		}
		if (f.flags & PM_UNW_F_MAIN)
			*status |= PM_UNW_SAW_MAIN;
		if (f.flags & PM_UNW_F_TOP) {
			*status |= PM_UNW_COMPLETE;
			break;
		}
		if ((f.flags & PM_UNW_F_SPWRITE) && !leaf) {
			/* a stack switch (systemstack, mcall): the rest is elsewhere */
			*status |= PM_UNW_CUT;
			break;
		}
		if ((f.flags & PM_UNW_F_GO) && f.spdelta >= 0) {
			uint64_t slot = sp + (uint64_t)f.spdelta;

			if (read_word(in, slot, &ra) < 0) {
				*status |= PM_UNW_COPY_END;
				break;
			}
			/* the saved BP sits just below the return address once pushed */
			if (f.spdelta >= 8) {
				uint64_t saved;
				if (read_word(in, slot - 8, &saved) == 0)
					nbp = saved;
			}
			nsp = slot + 8;
		} else {
			/* native code: frame-pointer chain */
			if (bp < sp || (bp & 7)) {
				*status |= PM_UNW_CUT;
				break;
			}
			if (read_word(in, bp + 8, &ra) < 0 || read_word(in, bp, &nbp) < 0) {
				*status |= PM_UNW_COPY_END;
				break;
			}
			nsp = bp + 16;
			if (ra == 0) {
				/* the outermost frame of a C thread ends the chain */
				*status |= PM_UNW_COMPLETE;
				break;
			}
		}
		if (ra == 0 || nsp <= sp) {
			*status |= PM_UNW_CUT;
			break;
		}
		if (lookup(u, ra - 1, &f) < 0) {
			*status |= PM_UNW_CUT;
			break;
		}
		if (n >= max) {
			*status |= PM_UNW_MAX;
			break;
		}
		pcs[n++] = ra;
		pc = ra;
		sp = nsp;
		bp = nbp;
	}
	if (*status & PM_UNW_COPY_END)
		n = splice_chain(u, in, pcs, n, max, status);
	return n;
}
