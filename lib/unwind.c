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
 *
 * Native code with DWARF CFI is walked by the CFI rows the lookup hands
 * back, over a register file of the callee-saved registers: that is what
 * gets through C compiled without frame pointers (the default at -O2).
 * A Go frame leaves only SP and BP known (Go has no callee-saved
 * registers), a frame-pointer step the same.
 *
 * cgo: runtime.asmcgocall switches to the g0 stack, aligns it and stores
 * the goroutine's g at 48(SP) and its stack depth (g.stack.hi - SP) at
 * 40(SP) before calling C, and has no frame of its own.  So once the C
 * frames are unwound, SP is asmcgocall's, and the goroutine stack resumes
 * at g.stack.hi - depth, its top word the return address into
 * runtime.cgocall.  Reading g.stack.hi needs the target's memory
 * (read_mem); without it the kernel's frame-pointer chain, which did
 * cross onto the goroutine stack through cgocall's saved BP, is used from
 * the point it agrees with what was unwound (runtime.cgocall's own frame
 * is then lost: asmcgocall has no frame for the chain to see it through).
 */
#include "unwind.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "util.h"

#define CACHE_BITS 12
#define CACHE_SIZE (1u << CACHE_BITS)

struct cache_ent {
	uint64_t pc; /* 0 = empty */
	int rc;
	struct pm_unw_func f;
};

#define GSTACK_MAX 32768

struct pm_unw {
	pm_unw_lookup_fn fn;
	void *arg;
	struct cache_ent cache[CACHE_SIZE];
	uint8_t gstack[GSTACK_MAX]; /* goroutine stack read behind a cgo call */
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
 * Append chain[from..] to pcs while each return address checks out.
 * Clears COPY_END on entry; sets COMPLETE, CUT, MAX or COPY_END.
 */
static size_t follow_chain(struct pm_unw *u, const struct pm_unw_input *in, size_t from,
			   uint64_t *pcs, size_t n, size_t max, unsigned *status)
{
	*status &= ~(unsigned)PM_UNW_COPY_END;
	for (size_t k = from; k < in->chain_len; k++) {
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
	return follow_chain(u, in, start + 1, pcs, n, max, status);
}

struct regs {
	uint64_t r[PM_UNW_NREGS];
	uint32_t valid;
};

static bool reg_get(const struct regs *rs, unsigned i, uint64_t *v)
{
	if (i >= PM_UNW_NREGS || !(rs->valid & (1u << i)))
		return false;
	*v = rs->r[i];
	return true;
}

static void reg_set(struct regs *rs, unsigned i, uint64_t v)
{
	rs->r[i] = v;
	rs->valid |= 1u << i;
}

/*
 * One native step by a CFI row.  0 with the caller's registers in *nrs and
 * its pc in *ra; 1 at the outermost frame; -1 when the row cannot be
 * evaluated here (fall back to frame pointers); -2 when it needs stack
 * beyond the copy.
 */
static int cfi_step(const struct pm_unw_input *in, const struct pm_unw_cfi *c,
		    const struct regs *rs, struct regs *nrs, uint64_t *ra)
{
	uint64_t base, cfa;

	if (!reg_get(rs, c->cfa_reg, &base))
		return -1;
	cfa = base + (uint64_t)(int64_t)c->cfa_off;
	if (c->outermost)
		return 1;
	memset(nrs, 0, sizeof(*nrs));
	for (unsigned i = 0; i < PM_UNW_NREGS; i++) {
		uint64_t v, addr = cfa + (uint64_t)(int64_t)c->off[i];

		switch (c->rule[i]) {
		case PM_UNW_R_SAME:
			if (reg_get(rs, i, &v))
				reg_set(nrs, i, v);
			break;
		case PM_UNW_R_OFFSET:
			if (read_word(in, addr, &v) < 0) {
				if (i == PM_DW_RA)
					return -2;
				break;
			}
			reg_set(nrs, i, v);
			break;
		case PM_UNW_R_VAL:
			reg_set(nrs, i, addr);
			break;
		case PM_UNW_R_REG:
			if (reg_get(rs, (unsigned)c->off[i], &v))
				reg_set(nrs, i, v);
			break;
		default:
			break;
		}
	}
	/* the CFA is the caller's SP by definition on x86_64 */
	reg_set(nrs, PM_DW_RSP, cfa);
	if (!reg_get(nrs, PM_DW_RA, ra))
		return -1;
	return 0;
}

/*
 * At runtime.asmcgocall's return address with @rs its registers: find the
 * goroutine stack behind the cgo call.  Returns 1 and switches *cur to a
 * copy of it (its pc in *pc, its SP in *rs) when the target's memory can be read;
 * 0 when it cannot.
 */
static int cgo_switch(struct pm_unw *u, struct pm_unw_input *cur, struct regs *rs, uint64_t *pc)
{
	uint64_t sp, depth, g, hi, gsp, len;

	if (!cur->read_mem || !reg_get(rs, PM_DW_RSP, &sp))
		return 0;
	if (read_word(cur, sp + 40, &depth) < 0 || read_word(cur, sp + 48, &g) < 0)
		return 0;
	if (g == 0 || (g & 7) || cur->read_mem(cur->read_arg, g + 8, &hi, 8) != 0)
		return 0;
	if (depth == 0 || depth > hi || (depth & 7) || depth > (1ULL << 30))
		return 0;
	gsp = hi - depth;
	len = PM_MIN(depth, (uint64_t)GSTACK_MAX);
	if (cur->read_mem(cur->read_arg, gsp, u->gstack, (size_t)len) != 0)
		return 0;
	cur->sp = gsp;
	cur->stack = u->gstack;
	cur->stack_len = (size_t)len;
	cur->chain = NULL;
	cur->chain_len = 0;
	/* [gsp] is the return address into runtime.cgocall: asmcgocall's caller */
	memcpy(pc, u->gstack, 8);
	memset(rs, 0, sizeof(*rs));
	reg_set(rs, PM_DW_RSP, gsp + 8);
	return 1;
}

/*
 * Without the target's memory: the kernel's chain continues on the
 * goroutine stack if it walked through cgocall's frame pointer.  Either it
 * holds asmcgocall's return address (C kept frame pointers), or the sample's
 * BP is the one recovered here (C never touched it) and chain[1] is the
 * return address from cgocall's frame.
 */
static size_t cgo_chain(struct pm_unw *u, const struct pm_unw_input *in, const struct regs *rs,
			uint64_t *pcs, size_t n, size_t max, unsigned *status)
{
	uint64_t bp;

	if (!in->chain || in->chain_len < 2)
		return n;
	for (size_t k = 1; k < in->chain_len; k++)
		if (in->chain[k] == pcs[n - 1])
			return follow_chain(u, in, k + 1, pcs, n, max, status);
	if (reg_get(rs, PM_DW_RBP, &bp) && bp == in->bp)
		return follow_chain(u, in, 1, pcs, n, max, status);
	return n;
}

size_t pm_unw_walk(struct pm_unw *u, const struct pm_unw_input *in, uint64_t *pcs, size_t max,
		   unsigned *status)
{
	struct pm_unw_input cur = *in;
	struct regs rs;
	uint64_t pc = in->ip;
	size_t n = 0;
	bool leaf = true, switched = false;

	*status = 0;
	if (max == 0)
		return 0;
	memset(&rs, 0, sizeof(rs));
	for (unsigned i = 0; i < PM_UNW_NREGS; i++)
		if (in->regs_valid & (1u << i))
			reg_set(&rs, i, in->regs[i]);
	reg_set(&rs, PM_DW_RSP, in->sp);
	reg_set(&rs, PM_DW_RBP, in->bp);
	pcs[n++] = pc;
	for (;;) {
		struct pm_unw_func f;
		struct regs nrs;
		uint64_t ra, sp = 0, nsp = 0, bp;

		/* For return addresses, look up the call instruction. */
		if (lookup(u, leaf ? pc : pc - 1, &f) < 0) {
			if (!leaf) {
				*status |= PM_UNW_CUT;
				break;
			}
			memset(&f, 0, sizeof(f));
			f.spdelta = -1;
		}
		if (f.flags & PM_UNW_F_MAIN)
			*status |= PM_UNW_SAW_MAIN;
		if (f.flags & PM_UNW_F_TOP) {
			*status |= PM_UNW_COMPLETE;
			break;
		}
		if ((f.flags & PM_UNW_F_SPWRITE) && !leaf) {
			if ((f.flags & PM_UNW_F_CGOCALL) && !switched) {
				/* C called from Go: continue on the goroutine stack */
				uint64_t gpc;

				if (cgo_switch(u, &cur, &rs, &gpc)) {
					switched = true;
					if (lookup(u, gpc - 1, &f) < 0) {
						*status |= PM_UNW_CUT;
						break;
					}
					if (n >= max) {
						*status |= PM_UNW_MAX;
						break;
					}
					pcs[n++] = gpc;
					pc = gpc;
					continue;
				}
				n = cgo_chain(u, &cur, &rs, pcs, n, max, status);
				if (!(*status & (PM_UNW_COMPLETE | PM_UNW_MAX | PM_UNW_COPY_END)))
					*status |= PM_UNW_CUT;
				return n;
			}
			/* a stack switch (systemstack, mcall): the rest is elsewhere */
			*status |= PM_UNW_CUT;
			break;
		}
		reg_get(&rs, PM_DW_RSP, &sp);
		bp = 0;
		reg_get(&rs, PM_DW_RBP, &bp);
		memset(&nrs, 0, sizeof(nrs));
		if ((f.flags & PM_UNW_F_GO) && f.spdelta >= 0) {
			uint64_t slot = sp + (uint64_t)f.spdelta, saved;

			if (read_word(&cur, slot, &ra) < 0) {
				*status |= PM_UNW_COPY_END;
				break;
			}
			/* the saved BP sits just below the return address once pushed */
			if (f.spdelta >= 8 && read_word(&cur, slot - 8, &saved) == 0)
				reg_set(&nrs, PM_DW_RBP, saved);
			else
				reg_set(&nrs, PM_DW_RBP, bp);
			nsp = slot + 8;
		} else {
			int rc = f.cfi.valid ? cfi_step(&cur, &f.cfi, &rs, &nrs, &ra) : -1;

			if (rc == 1) {
				/* CFI says the return address is undefined: the outermost frame */
				*status |= PM_UNW_COMPLETE;
				break;
			}
			if (rc == -2) {
				*status |= PM_UNW_COPY_END;
				break;
			}
			if (rc == 0) {
				reg_get(&nrs, PM_DW_RSP, &nsp);
			} else {
				/* native code without usable CFI: frame-pointer chain */
				uint64_t nbp;

				if (!(rs.valid & (1u << PM_DW_RBP)) || bp < sp || (bp & 7)) {
					*status |= PM_UNW_CUT;
					break;
				}
				if (read_word(&cur, bp + 8, &ra) < 0 ||
				    read_word(&cur, bp, &nbp) < 0) {
					*status |= PM_UNW_COPY_END;
					break;
				}
				memset(&nrs, 0, sizeof(nrs));
				reg_set(&nrs, PM_DW_RBP, nbp);
				nsp = bp + 16;
				if (ra == 0) {
					/* the outermost frame of a C thread ends the chain */
					*status |= PM_UNW_COMPLETE;
					break;
				}
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
		reg_set(&nrs, PM_DW_RSP, nsp);
		rs = nrs;
		leaf = false;
	}
	if ((*status & PM_UNW_COPY_END) && !switched)
		n = splice_chain(u, in, pcs, n, max, status);
	return n;
}

void pm_unw_set_perf_regs(struct pm_unw_input *in, uint64_t mask, const uint64_t *regs,
			  unsigned nregs)
{
	/* DWARF number + 1 of each perf register, 0 for those the unwinder does not use */
	static const uint8_t perf_to_dw[64] = {
		[PERF_REG_X86_AX] = PM_DW_RAX + 1, [PERF_REG_X86_DX] = PM_DW_RDX + 1,
		[PERF_REG_X86_CX] = PM_DW_RCX + 1, [PERF_REG_X86_BX] = PM_DW_RBX + 1,
		[PERF_REG_X86_SI] = PM_DW_RSI + 1, [PERF_REG_X86_DI] = PM_DW_RDI + 1,
		[PERF_REG_X86_BP] = PM_DW_RBP + 1, [PERF_REG_X86_SP] = PM_DW_RSP + 1,
		[PERF_REG_X86_R8] = PM_DW_R8 + 1,  [PERF_REG_X86_R9] = PM_DW_R9 + 1,
		[PERF_REG_X86_R10] = PM_DW_R10 + 1, [PERF_REG_X86_R11] = PM_DW_R11 + 1,
		[PERF_REG_X86_R12] = PM_DW_R12 + 1, [PERF_REG_X86_R13] = PM_DW_R13 + 1,
		[PERF_REG_X86_R14] = PM_DW_R14 + 1, [PERF_REG_X86_R15] = PM_DW_R15 + 1,
		[PERF_REG_X86_IP] = PM_DW_RA + 1,
	};
	unsigned idx = 0;

	/*
	 * The sampled registers come in the order of their bits in @mask: walk
	 * the set bits once (count-trailing-zeros is one instruction on every
	 * x86-64, unlike popcount without -mpopcnt) instead of counting the
	 * bits below each register.
	 */
	in->regs_valid = 0;
	for (uint64_t m = mask; m && idx < nregs; m &= m - 1, idx++) {
		unsigned p = (unsigned)__builtin_ctzll(m), d = perf_to_dw[p];

		if (!d)
			continue;
		in->regs[d - 1] = regs[idx];
		in->regs_valid |= 1u << (d - 1);
	}
	if (in->regs_valid & (1u << PM_DW_RA))
		in->ip = in->regs[PM_DW_RA];
	if (in->regs_valid & (1u << PM_DW_RSP))
		in->sp = in->regs[PM_DW_RSP];
	if (in->regs_valid & (1u << PM_DW_RBP))
		in->bp = in->regs[PM_DW_RBP];
}

int pm_unw_read_pid(void *arg, uint64_t addr, void *buf, size_t len)
{
	pid_t pid = *(const pid_t *)arg;
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}
