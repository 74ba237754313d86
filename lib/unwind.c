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
 *
 * The runtime's other stack switches, crossed as its own traceback does
 * (traceback.go), reading the target's memory:
 *
 *   systemstack, mcall, morestack (on g0): the goroutine that switched is
 *   g0.m.curg and it stopped at curg.sched: {pc, sp, bp}.  systemstack
 *   saves pc = runtime.systemstack_switch (a frameless stand-in, not
 *   shown) with sp at the return into its caller; mcall and morestack
 *   save a return address into the function that called them.  With no
 *   curg under mcall the thread is in the scheduler: the stack ends there.
 *
 *   cgocallback (Go called from C): on the goroutine's stack its frame is
 *   built to return into runtime.cgocall, but the C that called it is on
 *   g0: cgocallback left g0.sched.sp at its own frame there, so the walk
 *   goes on from that SP with the same pc, into crosscall2 and the C
 *   frames, then through asmcgocall back onto the goroutine.
 *
 *   signal frames: a handler returns into the restorer (sa_restorer:
 *   runtime.sigreturn, glibc's __restore_rt), with SP at the kernel's
 *   rt_sigframe { pretcode; struct ucontext uc; siginfo } just past
 *   pretcode, so uc.uc_mcontext (asm/ucontext.h, asm/sigcontext.h) holds
 *   every register of the interrupted code, whose pc is exact, not a
 *   return address.
 *
 * Everything read from the target is checked before use (pointers
 * aligned, SP inside the stack it claims, g0/curg/m linked both ways), and
 * the walk crosses at most MAX_SWITCHES stacks.
 */
#include "unwind.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <asm/ucontext.h> /* after signal.h: needs its stack_t */

#include "util.h"

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
	struct cache_ent cache[CACHE_SIZE];
	/* stacks read from the target: the one walked and the next one */
	uint8_t gstack[2][GSTACK_MAX];
	unsigned gnext;
	uint64_t *alt; /* the kernel's version of a stack read past the copy */
	size_t alt_cap;
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
	if (u)
		free(u->alt);
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

/* Read @len bytes at absolute address @addr from the copy. */
static int read_copy(const struct pm_unw_input *in, uint64_t addr, void *buf, size_t len)
{
	uint64_t off;

	if (addr < in->sp)
		return -1;
	off = addr - in->sp;
	if (off > in->stack_len || in->stack_len - off < len)
		return -1;
	memcpy(buf, in->stack + off, len);
	return 0;
}

/* Read the word at absolute address @addr from the copy. */
static int read_word(const struct pm_unw_input *in, uint64_t addr, uint64_t *out)
{
	return read_copy(in, addr, out, 8);
}

/* Read @len bytes of the target: from the copy when it holds them, else its memory. */
static int read_target(const struct pm_unw_input *in, uint64_t addr, void *buf, size_t len)
{
	if (read_copy(in, addr, buf, len) == 0)
		return 0;
	if (!in->read_mem || in->read_mem(in->read_arg, addr, buf, len) != 0)
		return -1;
	return 0;
}

/* A plausible user-space pointer to an 8-byte aligned object. */
static bool good_ptr(uint64_t p)
{
	return p >= 4096 && !(p & 7) && p < (1ULL << 47);
}

/*
 * Make the target's stack from @sp (up to @hi, 0 = as far as it can be
 * read) the one walked, at most GSTACK_MAX bytes of it: a view of the
 * current copy when that holds @sp, else read into the spare buffer,
 * shorter (down to the end of @sp's page) when the end is unmapped.
 */
static bool load_stack(struct pm_unw *u, struct pm_unw_input *cur, uint64_t sp, uint64_t hi)
{
	uint64_t len = GSTACK_MAX, page_end = (sp | 4095) + 1;
	uint8_t *buf;

	if (hi) {
		if (hi <= sp)
			return false;
		len = PM_MIN(hi - sp, len);
	}
	if (sp >= cur->sp && sp - cur->sp < cur->stack_len) {
		uint64_t off = sp - cur->sp;

		cur->stack += off;
		cur->stack_len = (size_t)PM_MIN(cur->stack_len - off, len);
		cur->sp = sp;
		return true;
	}
	if (!cur->read_mem)
		return false;
	buf = u->gstack[u->gnext];
	while (cur->read_mem(cur->read_arg, sp, buf, (size_t)len) != 0) {
		if (len <= page_end - sp)
			return false;
		len = PM_MAX(len / 2, page_end - sp);
	}
	u->gnext ^= 1;
	cur->sp = sp;
	cur->stack = buf;
	cur->stack_len = (size_t)len;
	cur->chain = NULL;
	cur->chain_len = 0;
	return true;
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

/* One walk: the stack being walked, its registers, and the g register of its code. */
struct walk {
	struct pm_unw_input cur; /* a copy of [cur.sp, cur.sp + cur.stack_len) */
	struct regs rs;
	uint64_t g;       /* 0 = unknown */
	unsigned nswitch; /* stacks crossed */
	unsigned nextend; /* reads of the stack past the copy */
	size_t ext_at;    /* pcs[ext_at..] came from such a read (0: none) */
	unsigned ext_status; /* *status before it */
};

/*
 * The copy ran out under the frame at @sp: read the stack on from the
 * target.  The walk's stack becomes what is left of the copy from @sp,
 * then up to GSTACK_MAX bytes read past its end (fewer at an unmapped
 * page).  The goroutine ran on meanwhile: frames that returned since are
 * gone; every return address read still has to check out, and the
 * kernel's callchain, where the sample has one, is checked against them
 * (check_extension()).
 */
static bool extend_stack(struct pm_unw *u, struct walk *w, uint64_t sp, unsigned *status)
{
	struct pm_unw_input *cur = &w->cur;
	uint64_t end = cur->sp + cur->stack_len, keep, len, page_end;
	uint8_t *buf;

	if (!cur->read_mem || sp < cur->sp || sp > end || w->nextend >= MAX_EXTENDS)
		return false;
	keep = end - sp;
	if (keep > GSTACK_MAX / 2)
		return false; /* a copy this long ran out in one frame: no */
	buf = u->gstack[u->gnext];
	if (keep)
		memmove(buf, cur->stack + (sp - cur->sp), (size_t)keep);
	len = GSTACK_MAX - keep;
	page_end = (end | 4095) + 1;
	while (cur->read_mem(cur->read_arg, end, buf + keep, (size_t)len) != 0) {
		if (len <= page_end - end)
			return false;
		len = PM_MAX(len / 2, page_end - end);
	}
	u->gnext ^= 1;
	w->nextend++;
	*status |= PM_UNW_EXTENDED;
	cur->sp = sp;
	cur->stack = buf;
	cur->stack_len = (size_t)(keep + len);
	return true;
}

/* u->alt: pcs[0..n) and the kernel's callchain after them. */
static size_t alt_splice(struct pm_unw *u, const struct pm_unw_input *in, const uint64_t *pcs,
			 size_t n, size_t max, unsigned *status)
{
	if (u->alt_cap < max) {
		free(u->alt);
		u->alt = xcalloc(max, sizeof(*u->alt));
		u->alt_cap = max;
	}
	memcpy(u->alt, pcs, n * sizeof(*pcs));
	return splice_chain(u, in, u->alt, n, max, status);
}

/*
 * extend_stack() for the walk at pcs[n - 1], remembering where the first
 * one began; not when the kernel's callchain finishes the stack from there
 * (taken at the sample, and no read of the target).
 */
static bool extend_at(struct pm_unw *u, struct walk *w, const struct pm_unw_input *in,
		      const uint64_t *pcs, size_t n, size_t max, uint64_t sp, unsigned *status)
{
	unsigned before = *status, st2 = PM_UNW_COPY_END;

	if (!w->cur.read_mem)
		return false;
	if (!w->nswitch && in->chain && in->chain_len >= 2) {
		alt_splice(u, in, pcs, n, max, &st2);
		if (st2 & PM_UNW_COMPLETE)
			return false;
	}
	if (!extend_stack(u, w, sp, status))
		return false;
	if (!w->ext_at) {
		w->ext_at = n;
		w->ext_status = before;
	}
	return true;
}

/* The word at @addr: from the stack walked, else after extend_at(). */
static int read_on(struct pm_unw *u, struct walk *w, const struct pm_unw_input *in,
		   const uint64_t *pcs, size_t n, size_t max, uint64_t sp, uint64_t addr,
		   uint64_t *out, unsigned *status)
{
	if (read_word(&w->cur, addr, out) == 0)
		return 0;
	if (!extend_at(u, w, in, pcs, n, max, sp, status))
		return -1;
	return read_word(&w->cur, addr, out);
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
 * At runtime.asmcgocall's return address: find the goroutine stack behind
 * the cgo call.  Returns 1 and switches the walk to a copy of it (its pc
 * in *pc) when the target's memory can be read; 0 when it cannot.
 */
static int cgo_switch(struct pm_unw *u, struct walk *w, uint64_t *pc)
{
	uint64_t sp, depth, g, hi, gsp;

	if (!w->cur.read_mem || !reg_get(&w->rs, PM_DW_RSP, &sp))
		return 0;
	if (read_word(&w->cur, sp + 40, &depth) < 0 || read_word(&w->cur, sp + 48, &g) < 0)
		return 0;
	if (!good_ptr(g) || w->cur.read_mem(w->cur.read_arg, g + 8, &hi, 8) != 0)
		return 0;
	if (depth == 0 || depth > hi || (depth & 7) || depth > (1ULL << 30))
		return 0;
	gsp = hi - depth;
	if (!load_stack(u, &w->cur, gsp, hi) || read_word(&w->cur, gsp, pc) < 0)
		return 0;
	/* [gsp] is the return address into runtime.cgocall: asmcgocall's caller */
	memset(&w->rs, 0, sizeof(w->rs));
	reg_set(&w->rs, PM_DW_RSP, gsp + 8);
	w->g = g;
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

/* The head of the runtime.g at @g: stack.lo/hi, g.m, g.sched. */
struct ghead {
	uint64_t lo, hi, m, sp, pc, bp;
};

static int read_ghead(const struct walk *w, uint64_t g, struct ghead *h)
{
	const struct pm_unw_goabi *go = w->cur.go;
	uint8_t b[G_HEAD_MAX];
	uint32_t len = 16;

	len = PM_MAX(len, go->g_m + 8);
	len = PM_MAX(len, go->g_sched_sp + 8);
	len = PM_MAX(len, go->g_sched_pc + 8);
	len = PM_MAX(len, go->g_sched_bp + 8);
	if (!good_ptr(g) || len > sizeof(b) || w->cur.read_mem(w->cur.read_arg, g, b, len) != 0)
		return -1;
	h->lo = pm_le64(b);
	h->hi = pm_le64(b + 8);
	h->m = pm_le64(b + go->g_m);
	h->sp = pm_le64(b + go->g_sched_sp);
	h->pc = pm_le64(b + go->g_sched_pc);
	h->bp = go->g_sched_bp ? pm_le64(b + go->g_sched_bp) : 0;
	return h->lo < h->hi ? 0 : -1;
}

/* The m of the g at @g and that m's g0 and curg. */
static int read_m(const struct walk *w, uint64_t g, uint64_t *m, uint64_t *g0, uint64_t *curg)
{
	const struct pm_unw_goabi *go = w->cur.go;
	int (*rd)(void *, uint64_t, void *, size_t) = w->cur.read_mem;

	if (!good_ptr(g) || rd(w->cur.read_arg, g + go->g_m, m, 8) != 0 || !good_ptr(*m))
		return -1;
	if (rd(w->cur.read_arg, *m, g0, 8) != 0 ||
	    rd(w->cur.read_arg, *m + go->m_curg, curg, 8) != 0)
		return -1;
	return 0;
}

/*
 * At runtime.systemstack, mcall or morestack on g0: continue with the
 * goroutine that switched, from where it stopped (m.curg.sched).  1 with
 * the walk moved onto its stack and its saved pc in *pc; 0 when the
 * thread runs no goroutine (the scheduler, under mcall); -1 when it cannot
 * be read or does not check out.
 */
static int g0_switch(struct pm_unw *u, struct walk *w, uint64_t *pc)
{
	struct ghead c;
	uint64_t m, g0, curg, bp;

	if (read_m(w, w->g, &m, &g0, &curg) < 0 || g0 != w->g)
		return -1;
	if (curg == 0)
		return 0;
	if (curg == g0 || read_ghead(w, curg, &c) < 0 || c.m != m)
		return -1;
	if (c.sp < c.lo || c.sp >= c.hi || (c.sp & 7) || c.pc == 0)
		return -1;
	/*
	 * curg.sched is read now, not when the sample was taken: the
	 * goroutine may have come back since and switched again from
	 * elsewhere.  The switch keeps the goroutine's BP, which the first
	 * frame on g0 pushed (in the sample's copy) and curg.sched saved:
	 * both must agree.  (1.26's morestack clears BP: nothing to compare.)
	 */
	if (reg_get(&w->rs, PM_DW_RBP, &bp) && bp != 0 && bp != c.bp)
		return -1;
	if (!load_stack(u, &w->cur, c.sp, c.hi))
		return -1;
	memset(&w->rs, 0, sizeof(w->rs));
	reg_set(&w->rs, PM_DW_RSP, c.sp);
	reg_set(&w->rs, PM_DW_RBP, c.bp);
	w->g = curg;
	*pc = c.pc;
	return 1;
}

/*
 * Out of time.now / runtime.nanotime1 / walltime, which call the vDSO on
 * g0 (PM_UNW_F_VDSOCALL): their first instruction after the prologue is
 * MOVQ SP, R12, and C keeps R12 (callee-saved; the CFI steps out of the
 * vDSO carry it).  Above R12 on the goroutine stack: the saved
 * m.vdsoPC and m.vdsoSP, the saved BP, then the return address.  The
 * slot is found, not assumed (frame sizes differ across Go versions): the
 * first of R12+16 .. R12+48 holding a return address into a Go function
 * whose own frame, by its pcsp, ends in another return address into Go.
 * 0 with *@ra and the walk on the caller's frame; -1.
 */
static int vdso_return(struct pm_unw *u, struct walk *w, uint64_t *ra)
{
	struct pm_unw_func cf, gf;
	uint64_t esp, v, up, bp = 0;

	if (!reg_get(&w->rs, PM_DW_R12, &esp) || !good_ptr(esp) || (esp & 7))
		return -1;
	if (!load_stack(u, &w->cur, esp, 0))
		return -1;
	for (uint64_t off = 16; off <= 48; off += 8) {
		if (read_word(&w->cur, esp + off, &v) < 0)
			return -1;
		if (lookup(u, v - 1, &cf) < 0 || !(cf.flags & PM_UNW_F_GO) || cf.spdelta < 0)
			continue;
		if (read_word(&w->cur, esp + off + 8 + (uint64_t)cf.spdelta, &up) < 0 ||
		    lookup(u, up - 1, &gf) < 0 || !(gf.flags & PM_UNW_F_GO))
			continue;
		reg_get(&w->rs, PM_DW_RBP, &bp);
		memset(&w->rs, 0, sizeof(w->rs));
		reg_set(&w->rs, PM_DW_RSP, esp + off + 8);
		if (read_word(&w->cur, esp + off - 8, &bp) == 0 && bp)
			reg_set(&w->rs, PM_DW_RBP, bp);
		*ra = v;
		return 0;
	}
	return -1;
}

/*
 * A sample in time.now / nanotime1 / walltime itself: has it run the MOVQ
 * SP, R12 that follows the prologue (49 89 e4, found in the function's
 * first 32 bytes)?  From there on SP may be g0's, or the goroutine's moved
 * by an ANDQ that the pcsp table does not know, and back again from
 * MOVQ R12, SP where pcsp still counts the SUBQ: only R12 is right.  Before
 * it, R12 is the caller's and pcsp is right.
 */
static bool vdso_r12_set(const struct walk *w, const struct pm_unw_func *f, uint64_t pc)
{
	uint8_t code[32];

	if (pc < f->entry || !w->cur.read_mem ||
	    w->cur.read_mem(w->cur.read_arg, f->entry, code, sizeof(code)) != 0)
		return false;
	for (size_t i = 0; i + 3 <= sizeof(code); i++)
		if (code[i] == 0x49 && code[i + 1] == 0x89 && code[i + 2] == 0xe4)
			return pc >= f->entry + i + 3;
	return false;
}

/*
 * At runtime.cgocallback: when the walk is on the goroutine's stack, move
 * it to cgocallback's frame on g0 (g0.sched.sp), under which its C caller
 * is.  1 when moved; 2 when the walk is on g0 already; -1 when it cannot
 * be read or does not check out.
 */
static int callback_switch(struct pm_unw *u, struct walk *w)
{
	struct ghead z;
	uint64_t m, g0, curg, sp;

	if (!reg_get(&w->rs, PM_DW_RSP, &sp) || read_m(w, w->g, &m, &g0, &curg) < 0)
		return -1;
	if (read_ghead(w, g0, &z) < 0 || z.m != m)
		return -1;
	if (sp >= z.lo && sp < z.hi)
		return 2;
	if (curg != w->g || z.sp < z.lo || z.sp >= z.hi || (z.sp & 7))
		return -1;
	if (!load_stack(u, &w->cur, z.sp, z.hi))
		return -1;
	memset(&w->rs, 0, sizeof(w->rs));
	reg_set(&w->rs, PM_DW_RSP, z.sp);
	w->g = g0;
	return 1;
}

/*
 * Returning into a signal restorer with @sp the SP after that return: the
 * interrupted code's registers from the kernel's signal frame.  0 with the
 * walk moved to its stack and registers and its pc in *pc, else -1.
 */
static int signal_frame(struct pm_unw *u, struct walk *w, uint64_t sp, uint64_t *pc)
{
	struct sigcontext sc;
	struct regs *rs = &w->rs;

	if (read_target(&w->cur, sp + offsetof(struct ucontext, uc_mcontext), &sc, sizeof(sc)) < 0)
		return -1;
	if (sc.rip == 0 || !good_ptr(sc.rsp))
		return -1;
	if (!load_stack(u, &w->cur, sc.rsp, 0))
		return -1;
	memset(rs, 0, sizeof(*rs));
	reg_set(rs, PM_DW_RAX, sc.rax);
	reg_set(rs, PM_DW_RDX, sc.rdx);
	reg_set(rs, PM_DW_RCX, sc.rcx);
	reg_set(rs, PM_DW_RBX, sc.rbx);
	reg_set(rs, PM_DW_RSI, sc.rsi);
	reg_set(rs, PM_DW_RDI, sc.rdi);
	reg_set(rs, PM_DW_RBP, sc.rbp);
	reg_set(rs, PM_DW_RSP, sc.rsp);
	reg_set(rs, PM_DW_R8, sc.r8);
	reg_set(rs, PM_DW_R9, sc.r9);
	reg_set(rs, PM_DW_R10, sc.r10);
	reg_set(rs, PM_DW_R11, sc.r11);
	reg_set(rs, PM_DW_R12, sc.r12);
	reg_set(rs, PM_DW_R13, sc.r13);
	reg_set(rs, PM_DW_R14, sc.r14);
	reg_set(rs, PM_DW_R15, sc.r15);
	w->g = sc.r14;
	*pc = sc.rip;
	return 0;
}

/*
 * At runtime.systemstack on g0 when curg.sched no longer tells where the
 * goroutine was (it came back from the switch before the sample was
 * read): systemstack keeps the goroutine's BP, so the kernel's
 * frame-pointer chain, taken with the sample, went on into the
 * goroutine's frames from the frame of the function that called
 * systemstack, C.  C itself is not in it (systemstack has no frame of its
 * own to hold the return address into C).  C is found:
 *
 *   - in the goroutine's stack as it is now, if C's frame is still there
 *     ([bp + 8] still the chain's next return address): the return
 *     address below bp into a Go function whose frame, by pcsp, ends
 *     exactly at bp + 8;
 *   - else from the call into C: the chain's next return address follows
 *     a direct CALL rel32 (e8) in C's caller, whose target must be the
 *     entry of a Go function; in C's code the call to systemstack (e8 to
 *     @sys_entry) gives the return address to show, else C's entry.
 *
 * Returns the new count with C and the chain appended, 0 when nothing
 * checks out.
 */
#define SCAN_WORDS 512
#define SCAN_CODE 4096

static uint64_t find_callee(struct pm_unw *u, const struct pm_unw_input *in, uint64_t ra_caller,
			    uint64_t sys_entry)
{
	uint8_t code[SCAN_CODE];
	struct pm_unw_func f, nf;
	uint64_t c, end;
	int32_t rel;

	if (ra_caller < 4096 || in->read_mem(in->read_arg, ra_caller - 5, code, 5) != 0 ||
	    code[0] != 0xe8)
		return 0;
	memcpy(&rel, code + 1, 4);
	c = ra_caller + (uint64_t)(int64_t)rel;
	if (lookup(u, c, &f) < 0 || !(f.flags & PM_UNW_F_GO) || f.entry != c)
		return 0;
	/* C's code up to where the next function starts, at most SCAN_CODE bytes */
	for (end = c + 1; end < c + SCAN_CODE; end += 16)
		if (lookup(u, end, &nf) < 0 || nf.entry != c)
			break;
	end = PM_MIN(end, c + SCAN_CODE);
	if (in->read_mem(in->read_arg, c, code, (size_t)(end - c)) == 0)
		for (size_t i = 0; i + 5 <= (size_t)(end - c); i++) {
			if (code[i] != 0xe8)
				continue;
			memcpy(&rel, code + i + 1, 4);
			if (c + i + 5 + (uint64_t)(int64_t)rel == sys_entry)
				return c + i + 5;
		}
	return c + 1; /* read as a return address: C's entry */
}

static size_t chain_cross(struct pm_unw *u, struct walk *w, const struct pm_unw_input *in,
			  const struct pm_unw_func *sw, uint64_t *pcs, size_t n, size_t max,
			  unsigned *status)
{
	uint64_t bp, words[SCAN_WORDS + 2], ra = 0, rf = 0;
	size_t k, nw = SCAN_WORDS;
	struct pm_unw_func cf, nf;
	bool more = !(sw->flags & PM_UNW_F_SYSTEMSTACK);

	if (!reg_get(&w->rs, PM_DW_RBP, &bp) || !good_ptr(bp) || bp < 8 * SCAN_WORDS || !in->chain)
		return 0;
	for (k = 0; k < in->chain_len && in->chain[k] != pcs[n - 1]; k++)
		;
	if (k + 1 >= in->chain_len)
		return 0;
	/* words[0..nw) below bp, then its saved BP and return address; from bp's page on a fault */
	if (in->read_mem(in->read_arg, bp - 8 * nw, words, (nw + 2) * 8) != 0) {
		nw = (size_t)((bp & 4095) / 8);
		if (nw < 2 || in->read_mem(in->read_arg, bp - 8 * nw, words, (nw + 2) * 8) != 0)
			nw = 0;
	}
	if (nw && words[nw + 1] == in->chain[k + 1]) {
		for (size_t i = 2; i <= nw && !ra; i++) {
			uint64_t r = words[nw - i];

			if (r < 4096 || lookup(u, r - 1, &cf) < 0 || !(cf.flags & PM_UNW_F_GO) ||
			    cf.spdelta < 0 || (uint64_t)cf.spdelta != 8 * i)
				continue;
			/* morestack: below it the return into f's prologue, f's frame not set up */
			if (more && (i == nw || lookup(u, words[nw - i - 1], &nf) < 0 ||
				     !(nf.flags & PM_UNW_F_GO) || nf.spdelta != 0))
				continue;
			ra = r;
			rf = more ? words[nw - i - 1] : 0;
		}
	}
	if (!ra && !more)
		ra = find_callee(u, in, in->chain[k + 1], sw->entry);
	if (!ra)
		return 0;
	if (n + 2 > max) {
		*status |= PM_UNW_MAX;
		return n;
	}
	if (rf)
		pcs[n++] = rf;
	/* C in the chain after all (its caller's frame was not set up yet) */
	if (lookup(u, ra - 1, &cf) < 0 || lookup(u, in->chain[k + 1] - 1, &nf) < 0 ||
	    cf.entry != nf.entry)
		pcs[n++] = ra;
	return follow_chain(u, in, k + 1, pcs, n, max, status);
}

/*
 * Where the kernel's callchain overlaps frames read past the copy, it was
 * read at the sample and they later: when they differ the goroutine had
 * moved on, and the callchain's frames replace them (also when it goes
 * further).  Frames past the callchain's end (127 frames) stay.
 */
static size_t check_extension(struct pm_unw *u, const struct pm_unw_input *in,
			      const struct walk *w, uint64_t *pcs, size_t n, size_t max,
			      unsigned *status)
{
	unsigned st2 = w->ext_status | PM_UNW_COPY_END;
	size_t m, common;

	if (!w->ext_at || w->nswitch || !in->chain || in->chain_len < 2)
		return n;
	m = alt_splice(u, in, pcs, w->ext_at, max, &st2);
	if (m <= w->ext_at)
		return n; /* the callchain does not join the copy's frames: nothing to check */
	common = PM_MIN(m, n);
	if (m <= n && memcmp(u->alt + w->ext_at, pcs + w->ext_at,
			     (common - w->ext_at) * sizeof(*pcs)) == 0)
		return n;
	memcpy(pcs, u->alt, m * sizeof(*pcs));
	*status = st2 & ~(unsigned)PM_UNW_EXTENDED;
	return m;
}

/* Can the walk cross the runtime's own switches (g0, cgocallback)? */
static bool go_ready(const struct walk *w)
{
	return w->cur.go && w->cur.read_mem && w->g && w->nswitch < MAX_SWITCHES;
}

size_t pm_unw_walk(struct pm_unw *u, const struct pm_unw_input *in, uint64_t *pcs, size_t max,
		   unsigned *status)
{
	struct walk w;
	struct pm_unw_func lf;
	uint64_t pc = in->ip;
	size_t n = 0;
	bool leaf = true, on_g0 = false, saw_schedule = false;

	*status = 0;
	if (max == 0)
		return 0;
	memset(&w, 0, sizeof(w));
	w.cur = *in;
	for (unsigned i = 0; i < PM_UNW_NREGS; i++)
		if (in->regs_valid & (1u << i))
			reg_set(&w.rs, i, in->regs[i]);
	reg_set(&w.rs, PM_DW_RSP, in->sp);
	reg_set(&w.rs, PM_DW_RBP, in->bp);
	reg_get(&w.rs, PM_DW_R14, &w.g);
	pcs[n++] = pc;
	for (;;) {
		struct pm_unw_func f, sf;
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
		if (f.flags & PM_UNW_F_SCHEDULE)
			saw_schedule = true;
		if (f.flags & PM_UNW_F_TOP) {
			*status |= PM_UNW_COMPLETE;
			break;
		}
		if ((f.flags & PM_UNW_F_VDSOCALL) && w.nswitch < MAX_SWITCHES &&
		    (leaf ? vdso_r12_set(&w, &f, pc) : (f.flags & PM_UNW_F_SPWRITE) != 0) &&
		    vdso_return(u, &w, &ra) == 0) {
			/*
			 * back from g0 to the goroutine stack time.now/nanotime1
			 * left: out of the vDSO, or in time.now itself past the
			 * switch (its caller from R12)
			 */
			w.nswitch++;
			*status |= PM_UNW_SWITCHED;
			if (n >= max) {
				*status |= PM_UNW_MAX;
				break;
			}
			pcs[n++] = ra;
			pc = ra;
			leaf = false;
			continue;
		}
		if ((f.flags & PM_UNW_F_SPWRITE) && !leaf) {
			if ((f.flags & PM_UNW_F_CGOCALL) && w.nswitch < MAX_SWITCHES) {
				/* C called from Go: continue on the goroutine stack */
				uint64_t gpc;

				if (cgo_switch(u, &w, &gpc)) {
					w.nswitch++;
					*status |= PM_UNW_SWITCHED;
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
				if (w.nswitch)
					break; /* status says CUT below */
				n = cgo_chain(u, &w.cur, &w.rs, pcs, n, max, status);
				if (!(*status & (PM_UNW_COMPLETE | PM_UNW_MAX | PM_UNW_COPY_END)))
					*status |= PM_UNW_CUT;
				return n;
			}
			if ((f.flags & PM_UNW_F_CGOCALLBACK) && on_g0) {
				/* moved to g0 last time round: step through the g0 frame */
				on_g0 = false;
			} else if (f.flags & PM_UNW_F_CGOCALLBACK) {
				/* Go called from C: its C caller is on g0 */
				int rc = go_ready(&w) ? callback_switch(u, &w) : -1;

				if (rc < 0) {
					if (!in->go && in->read_mem)
						*status |= PM_UNW_NEED_GO;
					*status |= PM_UNW_CUT;
					break;
				}
				if (rc == 1) {
					w.nswitch++;
					*status |= PM_UNW_SWITCHED;
					on_g0 = true;
					continue;
				}
			} else if ((f.flags & PM_UNW_F_MCALL) ||
				   ((f.flags & PM_UNW_F_GSWITCH) && saw_schedule)) {
				/*
				 * Under what mcall called on g0 (park_m, goexit0,
				 * gosched_m, ...): those drop the goroutine first
				 * thing, and Go's own tracebacks and profiles end
				 * here.  So does a switch (morestack's preemption:
				 * newstack, gopreempt_m) with runtime.schedule
				 * below it.  The thread's curg read now is whatever
				 * it ran since: never followed.
				 */
				*status |= PM_UNW_COMPLETE;
				break;
			} else if (f.flags & PM_UNW_F_GSWITCH) {
				/* on g0: the goroutine that switched continues where it stopped */
				uint64_t gpc;
				int rc = go_ready(&w) ? g0_switch(u, &w, &gpc) : -1;

				if (rc == 0 && (f.flags & PM_UNW_F_MCALL)) {
					*status |= PM_UNW_COMPLETE;
					break;
				}
				if (rc <= 0 && !w.nswitch && !(f.flags & PM_UNW_F_MCALL) &&
				    w.cur.read_mem && in->go) {
					/* curg.sched has moved on: the kernel's chain has not */
					size_t m = chain_cross(u, &w, in, &f, pcs, n, max, status);

					if (m) {
						*status |= PM_UNW_SWITCHED;
						return m;
					}
				}
				if (rc <= 0 || lookup(u, gpc, &f) < 0 || !(f.flags & PM_UNW_F_GO)) {
					if (rc < 0 && !in->go && in->read_mem)
						*status |= PM_UNW_NEED_GO;
					*status |= PM_UNW_CUT;
					break;
				}
				w.nswitch++;
				*status |= PM_UNW_SWITCHED;
				/* a return address into the function that switched, or systemstack_switch */
				if (!(f.flags & PM_UNW_F_NOFRAME) && f.entry != gpc) {
					if (n >= max) {
						*status |= PM_UNW_MAX;
						break;
					}
					pcs[n++] = gpc;
				}
				pc = gpc;
				leaf = true;
				continue;
			} else {
				/* a stack switch (gogo, ...): the rest is elsewhere */
				*status |= PM_UNW_CUT;
				break;
			}
		}
		reg_get(&w.rs, PM_DW_RSP, &sp);
		bp = 0;
		reg_get(&w.rs, PM_DW_RBP, &bp);
		memset(&nrs, 0, sizeof(nrs));
		if ((f.flags & PM_UNW_F_GO) && f.spdelta >= 0) {
			uint64_t slot = sp + (uint64_t)f.spdelta, saved;

			if (read_on(u, &w, in, pcs, n, max, sp, slot, &ra, status) < 0) {
				*status |= PM_UNW_COPY_END;
				break;
			}
			/* the saved BP sits just below the return address once pushed */
			if (f.spdelta >= 8 && read_word(&w.cur, slot - 8, &saved) == 0)
				reg_set(&nrs, PM_DW_RBP, saved);
			else
				reg_set(&nrs, PM_DW_RBP, bp);
			nsp = slot + 8;
		} else {
			int rc = f.cfi.valid ? cfi_step(&w.cur, &f.cfi, &w.rs, &nrs, &ra) : -1;

			if (rc == -2 && extend_at(u, &w, in, pcs, n, max, sp, status))
				rc = cfi_step(&w.cur, &f.cfi, &w.rs, &nrs, &ra);

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

				if (!(w.rs.valid & (1u << PM_DW_RBP)) || bp < sp || (bp & 7)) {
					*status |= PM_UNW_CUT;
					break;
				}
				if (read_on(u, &w, in, pcs, n, max, sp, bp + 8, &ra, status) < 0 ||
				    read_on(u, &w, in, pcs, n, max, sp, bp, &nbp, status) < 0) {
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
		/*
		 * A handler returning into a signal restorer: the code it
		 * interrupted is in the kernel's signal frame.  Asked only of
		 * native frames and Go's trampolines, at the exact address.
		 */
		if ((!(f.flags & PM_UNW_F_GO) || (f.flags & PM_UNW_F_SIGTRAMP)) &&
		    lookup(u, ra, &sf) == 0 && (sf.flags & PM_UNW_F_SIGRETURN)) {
			uint64_t ipc;

			if (w.nswitch >= MAX_SWITCHES || signal_frame(u, &w, nsp, &ipc) < 0) {
				*status |= PM_UNW_CUT;
				break;
			}
			w.nswitch++;
			*status |= PM_UNW_SIGFRAME;
			if (n >= max) {
				*status |= PM_UNW_MAX;
				break;
			}
			/* an exact pc, written as a return address to it */
			pcs[n++] = ipc + 1;
			pc = ipc;
			leaf = true;
			continue;
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
		w.rs = nrs;
		leaf = false;
	}
	/*
	 * Out of copy at a signal trampoline: the kernel's frame-pointer
	 * chain from a handler skips the interrupted function (its pc is in the
	 * signal frame, not on the stack), so it would join the handler to a
	 * caller that never called it.  An honest cut instead.
	 */
	if ((*status & PM_UNW_COPY_END) && n && lookup(u, pcs[n - 1] - (n > 1), &lf) == 0 &&
	    (lf.flags & PM_UNW_F_SIGTRAMP)) {
		*status = (*status & ~PM_UNW_COPY_END) | PM_UNW_CUT;
		return n;
	}
	if ((*status & PM_UNW_COPY_END) && !w.nswitch)
		n = splice_chain(u, in, pcs, n, max, status);
	else
		n = check_extension(u, in, &w, pcs, n, max, status);
	if (w.nswitch && !(*status & (PM_UNW_COMPLETE | PM_UNW_MAX | PM_UNW_COPY_END)))
		*status |= PM_UNW_CUT;
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
