/* unwgo: the unwinder's crossings of the Go runtime's stack switches (see unwgo.h). */
#include "unwind/unwgo.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <asm/ucontext.h> /* after signal.h: needs its stack_t */

#include "base/util.h"

/*
 * At runtime.asmcgocall's return address: find the goroutine stack behind
 * the cgo call.  Returns 1 and switches the walk to a copy of it (its pc
 * in *pc) when the target's memory can be read; 0 when it cannot.
 */
int pm_unw_cgo_switch(struct pm_unw *u, struct walk *w, uint64_t *pc)
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
	if (!pm_unw_load_stack(u, &w->cur, gsp, hi) || read_word(&w->cur, gsp, pc) < 0)
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
size_t pm_unw_cgo_chain(struct pm_unw *u, const struct pm_unw_input *in, const struct regs *rs,
			uint64_t *pcs, size_t n, size_t max, unsigned *status)
{
	uint64_t bp;

	if (!in->chain || in->chain_len < 2)
		return n;
	for (size_t k = 1; k < in->chain_len; k++)
		if (in->chain[k] == pcs[n - 1])
			return pm_unw_follow_chain(u, in, k + 1, pcs, n, max, status);
	if (reg_get(rs, PM_DW_RBP, &bp) && bp == in->bp)
		return pm_unw_follow_chain(u, in, 1, pcs, n, max, status);
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
int pm_unw_g0_switch(struct pm_unw *u, struct walk *w, uint64_t *pc)
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
	if (!pm_unw_load_stack(u, &w->cur, c.sp, c.hi))
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
int pm_unw_vdso_return(struct pm_unw *u, struct walk *w, uint64_t *ra)
{
	struct pm_unw_func cf, gf;
	uint64_t esp, v, up, bp = 0;

	if (!reg_get(&w->rs, PM_DW_R12, &esp) || !good_ptr(esp) || (esp & 7))
		return -1;
	if (!pm_unw_load_stack(u, &w->cur, esp, 0))
		return -1;
	for (uint64_t off = 16; off <= 48; off += 8) {
		if (read_word(&w->cur, esp + off, &v) < 0)
			return -1;
		if (pm_unw_lookup(u, v - 1, &cf) < 0 || !(cf.flags & PM_UNW_F_GO) || cf.spdelta < 0)
			continue;
		if (read_word(&w->cur, esp + off + 8 + (uint64_t)cf.spdelta, &up) < 0 ||
		    pm_unw_lookup(u, up - 1, &gf) < 0 || !(gf.flags & PM_UNW_F_GO))
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
 * Out of time.now / nanotime1 / walltime (@f) by the kernel's callchain,
 * where the goroutine stack above R12 no longer holds what it held at the
 * sample (the goroutine ran on before the sample was read: an attached
 * server's goroutines, time.now called at another depth since).  At the
 * sample, BP still pointed at @f's frame on the goroutine stack (@f pushes
 * it before moving SP to g0, C keeps it), so the kernel's frame-pointer walk
 * went from the vDSO through @f's frame into its caller: the first entry
 * after the vDSO's and @f's own is the return into the caller, and the
 * chain is followed from there.  The new n, or 0.
 */
size_t pm_unw_vdso_chain(struct pm_unw *u, const struct pm_unw_input *in,
			 const struct pm_unw_func *f, uint64_t *pcs, size_t n, size_t max,
			 unsigned *status)
{
	struct pm_unw_func cf;
	size_t k;

	if (!in->chain || in->chain_len < 2)
		return 0;
	for (k = 1; k < in->chain_len && k < 4; k++) {
		if (in->chain[k] < PM_NULL_PAGE || pm_unw_lookup(u, in->chain[k] - 1, &cf) < 0)
			return 0;
		if (cf.entry == f->entry || !(cf.flags & PM_UNW_F_GO))
			continue; /* @f's own return address, the vDSO's frames */
		return pm_unw_follow_chain(u, in, k, pcs, n, max, status);
	}
	return 0;
}

/*
 * A sample in time.now / nanotime1 / walltime itself: has it run the MOVQ
 * SP, R12 that follows the prologue (49 89 e4, found in the function's
 * first 32 bytes)?  From there on SP may be g0's, or the goroutine's moved
 * by an ANDQ that the pcsp table does not know, and back again from
 * MOVQ R12, SP where pcsp still counts the SUBQ: only R12 is right.  Before
 * it, R12 is the caller's and pcsp is right.
 */
bool pm_unw_vdso_r12_set(struct pm_unw *u, const struct walk *w, const struct pm_unw_func *f,
			  uint64_t pc)
{
	uint8_t code[32];
	int32_t off = -1;
	size_t i;

	if (pc < f->entry)
		return false;
	for (i = 0; i < PM_ARRAY_SIZE(u->r12); i++)
		if (u->r12[i].entry == f->entry)
			return u->r12[i].off >= 0 && pc >= f->entry + (uint64_t)u->r12[i].off;
	if (!w->cur.read_mem || w->cur.read_mem(w->cur.read_arg, f->entry, code, sizeof(code)) != 0)
		return false; /* not kept: it may read next time */
	for (i = 0; i + 3 <= sizeof(code) && off < 0; i++)
		if (code[i] == 0x49 && code[i + 1] == 0x89 && code[i + 2] == 0xe4)
			off = (int32_t)(i + 3);
	u->r12[u->r12_next].entry = f->entry;
	u->r12[u->r12_next].off = off;
	u->r12_next = (u->r12_next + 1) % PM_ARRAY_SIZE(u->r12);
	return off >= 0 && pc >= f->entry + (uint64_t)off;
}

/*
 * At runtime.cgocallback: when the walk is on the goroutine's stack, move
 * it to cgocallback's frame on g0 (g0.sched.sp), under which its C caller
 * is.  1 when moved; 2 when the walk is on g0 already; -1 when it cannot
 * be read or does not check out.
 */
int pm_unw_callback_switch(struct pm_unw *u, struct walk *w)
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
	if (!pm_unw_load_stack(u, &w->cur, z.sp, z.hi))
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
int pm_unw_signal_frame(struct pm_unw *u, struct walk *w, uint64_t sp, uint64_t *pc)
{
	struct sigcontext sc;
	struct regs *rs = &w->rs;

	if (pm_unw_read_target(&w->cur, sp + offsetof(struct ucontext, uc_mcontext), &sc, sizeof(sc)) < 0)
		return -1;
	if (sc.rip == 0 || !good_ptr(sc.rsp))
		return -1;
	if (!pm_unw_load_stack(u, &w->cur, sc.rsp, 0))
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

	if (ra_caller < PM_NULL_PAGE || in->read_mem(in->read_arg, ra_caller - 5, code, 5) != 0 ||
	    code[0] != 0xe8)
		return 0;
	memcpy(&rel, code + 1, 4);
	c = ra_caller + (uint64_t)(int64_t)rel;
	if (pm_unw_lookup(u, c, &f) < 0 || !(f.flags & PM_UNW_F_GO) || f.entry != c)
		return 0;
	/* C's code up to where the next function starts, at most SCAN_CODE bytes */
	for (end = c + 1; end < c + SCAN_CODE; end += 16)
		if (pm_unw_lookup(u, end, &nf) < 0 || nf.entry != c)
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

size_t pm_unw_chain_cross(struct pm_unw *u, struct walk *w, const struct pm_unw_input *in,
			  const struct pm_unw_func *sw, uint64_t *pcs, size_t n, size_t max,
			  unsigned *status)
{
	uint64_t bp, words[SCAN_WORDS + 2], ra = 0, rf = 0;
	size_t k, nw = SCAN_WORDS;
	struct pm_unw_func cf, nf;
	bool more = !(sw->flags & PM_UNW_F_SYSTEMSTACK);

	if (!reg_get(&w->rs, PM_DW_RBP, &bp) || !good_ptr(bp) || bp < 8 * (uint64_t)SCAN_WORDS || !in->chain)
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

			if (r < PM_NULL_PAGE || pm_unw_lookup(u, r - 1, &cf) < 0 ||
			    !(cf.flags & PM_UNW_F_GO) || cf.spdelta < 0 ||
			    (uint64_t)cf.spdelta != 8 * i)
				continue;
			/* morestack: below it the return into f's prologue, f's frame not set up */
			if (more && (i == nw || pm_unw_lookup(u, words[nw - i - 1], &nf) < 0 ||
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
	if (pm_unw_lookup(u, ra - 1, &cf) < 0 || pm_unw_lookup(u, in->chain[k + 1] - 1, &nf) < 0 ||
	    cf.entry != nf.entry)
		pcs[n++] = ra;
	return pm_unw_follow_chain(u, in, k + 1, pcs, n, max, status);
}

