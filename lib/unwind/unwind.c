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
#include "unwind/unwind.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <asm/ucontext.h> /* after signal.h: needs its stack_t */

#include "base/util.h"
#include "unwind/unwgo.h"


struct pm_unw *pm_unw_new_sized(pm_unw_lookup_fn fn, void *arg, unsigned cache_bits)
{
	struct pm_unw *u = xcalloc(1, sizeof(*u));

	u->fn = fn;
	u->arg = arg;
	if (!cache_bits || cache_bits > CACHE_BITS)
		cache_bits = CACHE_BITS;
	u->cache_mask = ((size_t)1 << cache_bits) - 1;
	u->cache = xcalloc(u->cache_mask + 1, sizeof(*u->cache));
	return u;
}

struct pm_unw *pm_unw_new(pm_unw_lookup_fn fn, void *arg)
{
	return pm_unw_new_sized(fn, arg, 0);
}

void pm_unw_free(struct pm_unw *u)
{
	if (u) {
		free(u->alt);
		free(u->cache);
		free(u->gstack);
	}
	free(u);
}

/* The buffer for the next stack read from the target. */
static uint8_t *gstack_next(struct pm_unw *u)
{
	if (!u->gstack)
		u->gstack = xcalloc(2, sizeof(*u->gstack));
	return u->gstack[u->gnext];
}

void pm_unw_flush(struct pm_unw *u)
{
	memset(u->cache, 0, (u->cache_mask + 1) * sizeof(*u->cache));
	memset(u->r12, 0, sizeof(u->r12));
}

int pm_unw_lookup(struct pm_unw *u, uint64_t pc, struct pm_unw_func *out)
{
	struct cache_ent *e = &u->cache[pm_hash_u64(pc) & u->cache_mask];

	if (e->pc != pc || pc == 0) {
		e->pc = pc;
		memset(&e->f, 0, sizeof(e->f));
		e->rc = pc ? u->fn(u->arg, pc, &e->f) : -ENOENT;
	}
	*out = e->f;
	return e->rc;
}

/* Read @len bytes at absolute address @addr from the copy. */
int pm_unw_read_copy(const struct pm_unw_input *in, uint64_t addr, void *buf, size_t len)
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

/* Read @len bytes of the target: from the copy when it holds them, else its memory. */
int pm_unw_read_target(const struct pm_unw_input *in, uint64_t addr, void *buf, size_t len)
{
	if (pm_unw_read_copy(in, addr, buf, len) == 0)
		return 0;
	if (!in->read_mem || in->read_mem(in->read_arg, addr, buf, len) != 0)
		return -1;
	return 0;
}


/*
 * Make the target's stack from @sp (up to @hi, 0 = as far as it can be
 * read) the one walked, at most GSTACK_MAX bytes of it: a view of the
 * current copy when that holds @sp, else read into the spare buffer,
 * shorter (down to the end of @sp's page) when the end is unmapped.
 */
bool pm_unw_load_stack(struct pm_unw *u, struct pm_unw_input *cur, uint64_t sp, uint64_t hi)
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
	buf = gstack_next(u);
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
size_t pm_unw_follow_chain(struct pm_unw *u, const struct pm_unw_input *in, size_t from,
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
		if (ra == 0 || pm_unw_lookup(u, ra - 1, &f) < 0) {
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
	return pm_unw_follow_chain(u, in, start + 1, pcs, n, max, status);
}



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
	buf = gstack_next(u);
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
 * One call of pm_unw_walk(), stepped frame by frame: the frames so far,
 * where the walk is, and what the checks at its end (walk_end()) need.
 * struct walk is the part of it that the crossings in unwgo.c share.
 */
struct walker {
	struct pm_unw *u;
	const struct pm_unw_input *in; /* the sample, as given */
	uint64_t *pcs;
	size_t n, max;
	unsigned *status;
	struct walk w;
	uint64_t pc; /* the frame to unwind next */
	/* pc is exact (the sample's, an interrupted or a saved one), not a return address */
	bool leaf;
	bool on_g0;	   /* moved from cgocallback to g0: step through its g0 frame */
	bool saw_schedule; /* runtime.schedule walked: a g0 switch after it ends the walk */
	/* the first switch off g0 through curg.sched read now, for check_switch() */
	bool sw_mem;
	struct regs sw_rs;
	struct pm_unw_func sw_f;
	size_t sw_n;
	size_t sig_n; /* pcs[sig_n - 1]: the pc the first signal frame interrupted (0: none) */
};

/*
 * extend_stack() for the walk at pcs[n - 1], remembering where the first
 * one began; not when the kernel's callchain finishes the stack from there
 * (taken at the sample, and no read of the target).
 */
static bool extend_at(struct walker *k, uint64_t sp)
{
	struct walk *w = &k->w;
	unsigned before = *k->status, st2 = PM_UNW_COPY_END;

	if (!w->cur.read_mem)
		return false;
	if (!w->nswitch && k->in->chain && k->in->chain_len >= 2) {
		alt_splice(k->u, k->in, k->pcs, k->n, k->max, &st2);
		if (st2 & PM_UNW_COMPLETE)
			return false;
	}
	if (!extend_stack(k->u, w, sp, k->status))
		return false;
	if (!w->ext_at) {
		w->ext_at = k->n;
		w->ext_status = before;
	}
	return true;
}

/* The word at @addr: from the stack walked, else after extend_at() from @sp. */
static int read_on(struct walker *k, uint64_t sp, uint64_t addr, uint64_t *out)
{
	if (read_word(&k->w.cur, addr, out) == 0)
		return 0;
	if (!extend_at(k, sp))
		return -1;
	return read_word(&k->w.cur, addr, out);
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

/*
 * Are the callchain's return addresses from @c on among pcs[@j..@n), in
 * order (a frame may be skipped, none added)?  Also true when the frames
 * read end first: what the chain has beyond them is not checked.
 */
static bool chain_among(const struct pm_unw_input *in, size_t c, const uint64_t *pcs, size_t j,
			size_t n)
{
	for (; c < in->chain_len; c++) {
		while (j < n && pcs[j] != in->chain[c])
			j++;
		if (j == n)
			return false; /* not among the frames read */
		if (++j == n)
			return true; /* the walk's last frame */
	}
	return true;
}

/*
 * The walk crossed from g0 to the goroutine through curg.sched, read now
 * (pm_unw_g0_switch()): @sw_n frames before the switch, @rs the registers
 * on g0 there.  The bp check there holds when the g runs a goroutine that
 * switched at the same depth since, whose frames are not the sample's (a
 * goroutine that exited and a new one on its g, reused at once).  Where
 * the kernel's callchain, taken at the sample, crosses the switch too,
 * every return address of it must be among the frames read, in order
 * (it may skip a frameless function's caller, never add one): else the
 * goroutine had moved on, and the callchain's frames replace them; where
 * the callchain cannot give them either, the stack is cut at the switch.
 */
static size_t check_switch(struct pm_unw *u, const struct pm_unw_input *in,
			   const struct regs *rs, const struct pm_unw_func *sw, uint64_t *pcs,
			   size_t sw_n, size_t n, size_t max, unsigned *status)
{
	struct walk tw;
	unsigned st2;
	size_t k, j = sw_n, m;

	if (!in->chain || sw_n == 0 || n <= sw_n)
		return n;
	for (k = 0; k < in->chain_len && in->chain[k] != pcs[sw_n - 1]; k++)
		;
	if (k + 1 >= in->chain_len)
		return n; /* the callchain does not cross: nothing to check */
	if (chain_among(in, k + 1, pcs, j, n))
		return n;
	if (u->alt_cap < max) {
		free(u->alt);
		u->alt = xcalloc(max, sizeof(*u->alt));
		u->alt_cap = max;
	}
	memcpy(u->alt, pcs, sw_n * sizeof(*pcs));
	memset(&tw, 0, sizeof(tw));
	tw.rs = *rs;
	st2 = *status & (PM_UNW_SAW_MAIN | PM_UNW_SIGFRAME | PM_UNW_NEED_GO);
	m = pm_unw_chain_cross(u, &tw, in, sw, u->alt, sw_n, max, &st2);
	if (m > sw_n) {
		memcpy(pcs, u->alt, m * sizeof(*pcs));
		*status = st2 | PM_UNW_SWITCHED | PM_UNW_MOVED_ON;
		return m;
	}
	*status = (*status & (PM_UNW_SAW_MAIN | PM_UNW_SIGFRAME)) | PM_UNW_SWITCHED |
		  PM_UNW_MOVED_ON | PM_UNW_CUT;
	return sw_n;
}

/*
 * Does return address @ra follow a direct call (E8 rel32) of the function
 * holding @pc?  Code is read through read_mem: text does not change after
 * the sample, a stack slot may.  Seen on tests/go/pgo: a SIGPROF handler's
 * sample interrupted the frameless main.mix, and [SP] read later held the
 * return address of hotLoop's interface call made since, not the one into
 * step, inlined in hotLoop, that called mix.
 */
static bool called_from(struct pm_unw *u, const struct pm_unw_input *in, uint64_t pc,
			uint64_t ra)
{
	struct pm_unw_func f;
	uint8_t b[5];
	int32_t rel;

	if (!in->read_mem || ra < sizeof(b) || pm_unw_lookup(u, pc, &f) < 0 ||
	    in->read_mem(in->read_arg, ra - sizeof(b), b, sizeof(b)) != 0 || b[0] != 0xe8)
		return false;
	rel = (int32_t)((uint32_t)b[1] | (uint32_t)b[2] << 8 | (uint32_t)b[3] << 16 |
			(uint32_t)b[4] << 24);
	return ra + (uint64_t)(int64_t)rel == f.entry;
}

/*
 * The walk crossed a signal frame: pcs[sig_n - 1] is the interrupted pc
 * (from the kernel's frame, in the copy), the frames after it were read
 * from the interrupted stack, past the copy, later than the sample.  The
 * kernel's callchain, taken at the sample, followed the same frame
 * pointers from the handler into the interrupted code's callers: every
 * return address of it past the handler's frames (and the restorer, where
 * it shows) must be among the frames read, in order (it may skip a
 * frameless function's caller, never add one); else that stack had moved
 * on (a goroutine that exited and another on its g and stack, reused at
 * once) and the walk is cut after the interrupted pc.  Seen on
 * tests/go/shortlived: a SIGURG handler's sample put a burnB goroutine's
 * frames under the interrupted goroutine's creators.
 *
 * The chain's first return address past the handler is the interrupted
 * function's own only when that function had its frame pointer saved at
 * the interrupted pc; a frameless leaf's (or one in its prologue) is read
 * from [SP] after the sample, and is cut unless attested.
 */
static size_t check_signal(struct pm_unw *u, const struct pm_unw_input *in, uint64_t *pcs,
			   size_t sig_n, size_t n, unsigned *status)
{
	struct pm_unw_func f;
	size_t k, c, j = sig_n;

	if (!in->chain || sig_n < 2 || n <= sig_n)
		return n;
	for (k = 0; k < in->chain_len && in->chain[k] != pcs[sig_n - 2]; k++)
		;
	c = k + 1;
	if (c < in->chain_len && pm_unw_lookup(u, in->chain[c], &f) == 0 &&
	    (f.flags & PM_UNW_F_SIGRETURN))
		c++;
	if (c >= in->chain_len)
		return n; /* the callchain does not go past the handler: nothing to check */
	if (chain_among(in, c, pcs, j, n) &&
	    (in->chain[c] == pcs[sig_n] || called_from(u, in, pcs[sig_n - 1] - 1, pcs[sig_n])))
		return n;
	*status = (*status & (PM_UNW_SAW_MAIN | PM_UNW_SIGFRAME | PM_UNW_SWITCHED)) |
		  PM_UNW_MOVED_ON | PM_UNW_CUT;
	return sig_n;
}

/* Can the walk cross the runtime's own switches (g0, cgocallback)? */
static bool go_ready(const struct walk *w)
{
	return w->cur.go && w->cur.read_mem && w->g && w->nswitch < MAX_SWITCHES;
}

/*
 * What one part of a step decided.  The parts of step() run in turn while
 * each passes; the first that decides ends the step.
 */
enum step {
	STEP_PASS, /* not this part's case: the step goes on */
	STEP_NEXT, /* the walk moved to the next frame (pc): step again */
	STEP_STOP, /* the walk ends: walk_end() checks it against the kernel's callchain */
	STEP_DONE, /* the walk ends, its pcs and status final (taken from the callchain) */
};

/* Append @pc to the walk's frames; false, and MAX, when they are full. */
static bool push(struct walker *k, uint64_t pc)
{
	if (k->n >= k->max) {
		*k->status |= PM_UNW_MAX;
		return false;
	}
	k->pcs[k->n++] = pc;
	return true;
}

/* The function at pc in *f, and what its flags say of the walk. */
static enum step frame_func(struct walker *k, struct pm_unw_func *f)
{
	/* For return addresses, look up the call instruction. */
	if (pm_unw_lookup(k->u, k->leaf ? k->pc : k->pc - 1, f) < 0) {
		if (!k->leaf) {
			*k->status |= PM_UNW_CUT;
			return STEP_STOP;
		}
		/* an unknown sampled pc: unwound by CFI or frame pointers, if at all */
		memset(f, 0, sizeof(*f));
		f->spdelta = -1;
	}
	if (f->flags & PM_UNW_F_MAIN)
		*k->status |= PM_UNW_SAW_MAIN;
	if (f->flags & PM_UNW_F_SCHEDULE)
		k->saw_schedule = true;
	if (f->flags & PM_UNW_F_TOP) {
		*k->status |= PM_UNW_COMPLETE;
		return STEP_STOP;
	}
	return STEP_PASS;
}

/*
 * time.now/nanotime1 on the vDSO's g0, once R12 holds the goroutine's SP:
 * back to the goroutine stack, or the kernel's callchain across.  Passes
 * elsewhere, and when neither crosses.
 */
static enum step step_vdso(struct walker *k, const struct pm_unw_func *f)
{
	struct walk *w = &k->w;
	unsigned st;
	size_t m = 0;
	uint64_t r12 = 0, ra;
	bool off_copy;

	if (!(f->flags & PM_UNW_F_VDSOCALL) || w->nswitch >= MAX_SWITCHES)
		return STEP_PASS;
	if (k->leaf ? !pm_unw_vdso_r12_set(k->u, w, f, k->pc) : !(f->flags & PM_UNW_F_SPWRITE))
		return STEP_PASS;
	st = *k->status;
	/*
	 * R12 on the goroutine stack: time.now moved to g0 for the vDSO, and
	 * the stack above R12 is read from the process now.  (On g0 already,
	 * R12 is in the sample's copy, read as it was, and the walk goes on to
	 * the switch, where the goroutine is told apart: the chain would not
	 * say it.)
	 */
	off_copy = reg_get(&w->rs, PM_DW_R12, &r12) &&
		   (r12 < w->cur.sp || r12 - w->cur.sp >= w->cur.stack_len);
	/*
	 * The kernel's chain first: the goroutine stack above R12 is read now,
	 * and a goroutine that ran on since may have left another call's
	 * return address in the slot (time.Now called at another depth: 40 %
	 * of tests/go/agree's were stacks missing a frame); the chain is the
	 * stack at the sample.  Unless it ends before the bottom (127 frames).
	 */
	if (off_copy && w->nswitch == w->nvdso &&
	    (m = pm_unw_vdso_chain(k->u, k->in, f, k->pcs, k->n, k->max, &st)) &&
	    (st & (PM_UNW_COMPLETE | PM_UNW_MAX))) {
		*k->status = st | PM_UNW_SWITCHED;
		k->n = m;
		return STEP_DONE;
	}
	if (pm_unw_vdso_return(k->u, w, &ra) == 0) {
		/*
		 * back from g0 to the goroutine stack time.now/nanotime1 left:
		 * out of the vDSO, or in time.now itself past the switch (its
		 * caller from R12)
		 */
		w->nswitch++;
		w->nvdso++;
		*k->status |= PM_UNW_SWITCHED;
		if (!push(k, ra))
			return STEP_STOP;
		k->pc = ra;
		k->leaf = false;
		return STEP_NEXT;
	}
	/* the stack above R12 moved on: the kernel's chain, however far it goes */
	if (off_copy && w->nswitch == w->nvdso &&
	    (m = pm_unw_vdso_chain(k->u, k->in, f, k->pcs, k->n, k->max, k->status))) {
		*k->status |= PM_UNW_SWITCHED;
		k->n = m;
		return STEP_DONE;
	}
	return STEP_PASS;
}

/* C called from Go (runtime.asmcgocall): continue on the goroutine stack. */
static enum step step_cgocall(struct walker *k)
{
	struct pm_unw_func f;
	uint64_t gpc;

	if (pm_unw_cgo_switch(k->u, &k->w, &gpc)) {
		k->w.nswitch++;
		*k->status |= PM_UNW_SWITCHED;
		if (pm_unw_lookup(k->u, gpc - 1, &f) < 0) {
			*k->status |= PM_UNW_CUT;
			return STEP_STOP;
		}
		if (!push(k, gpc))
			return STEP_STOP;
		k->pc = gpc;
		return STEP_NEXT;
	}
	if (k->w.nswitch)
		return STEP_STOP; /* walk_end() says CUT */
	k->n = pm_unw_cgo_chain(k->u, &k->w.cur, &k->w.rs, k->pcs, k->n, k->max, k->status);
	if (!(*k->status & (PM_UNW_COMPLETE | PM_UNW_MAX | PM_UNW_COPY_END)))
		*k->status |= PM_UNW_CUT;
	return STEP_DONE;
}

/*
 * Go called from C (runtime.cgocallback): its C caller is on g0.  Passes
 * when the walk is on g0 already: the g0 frame is unwound as any other.
 */
static enum step step_callback(struct walker *k)
{
	int rc = go_ready(&k->w) ? pm_unw_callback_switch(k->u, &k->w) : -1;

	if (rc < 0) {
		if (!k->in->go && k->in->read_mem)
			*k->status |= PM_UNW_NEED_GO;
		*k->status |= PM_UNW_CUT;
		return STEP_STOP;
	}
	if (rc == 1) {
		k->w.nswitch++;
		*k->status |= PM_UNW_SWITCHED;
		k->on_g0 = true;
		return STEP_NEXT;
	}
	return STEP_PASS;
}

/*
 * On g0 (systemstack, morestack): the goroutine that switched continues
 * where it stopped, curg.sched read now, or the kernel's callchain across
 * when that has moved on.  The first such switch is kept for check_switch().
 */
static enum step step_g0(struct walker *k, struct pm_unw_func *f)
{
	struct walk *w = &k->w;
	uint64_t gpc;
	int rc;

	if (!w->nswitch) {
		reg_get(&w->rs, PM_DW_RBP, &k->u->switch_bp);
		k->sw_rs = w->rs;
		k->sw_f = *f;
		k->sw_n = k->n;
	}
	rc = go_ready(w) ? pm_unw_g0_switch(k->u, w, &gpc) : -1;
	if (rc == 1 && !w->nswitch && !(f->flags & PM_UNW_F_MCALL))
		k->sw_mem = true;

	if (rc == 0 && (f->flags & PM_UNW_F_MCALL)) {
		*k->status |= PM_UNW_COMPLETE;
		return STEP_STOP;
	}
	if (rc <= 0 && w->nswitch == w->nvdso && !(f->flags & PM_UNW_F_MCALL) && w->cur.read_mem &&
	    k->in->go) {
		/*
		 * curg.sched has moved on: the kernel's chain has not
		 * (out of the vDSO too: time.now on the system stack)
		 */
		size_t m = pm_unw_chain_cross(k->u, w, k->in, f, k->pcs, k->n, k->max, k->status);

		if (m) {
			*k->status |= PM_UNW_SWITCHED | PM_UNW_MOVED_ON;
			k->n = m;
			return STEP_DONE;
		}
	}
	if (rc <= 0 || pm_unw_lookup(k->u, gpc, f) < 0 || !(f->flags & PM_UNW_F_GO)) {
		if (rc < 0 && !k->in->go && k->in->read_mem)
			*k->status |= PM_UNW_NEED_GO;
		*k->status |= PM_UNW_CUT;
		return STEP_STOP;
	}
	w->nswitch++;
	*k->status |= PM_UNW_SWITCHED;
	/* a return address into the function that switched, or systemstack_switch */
	if (!(f->flags & PM_UNW_F_NOFRAME) && f->entry != gpc && !push(k, gpc))
		return STEP_STOP;
	k->pc = gpc;
	k->leaf = true;
	return STEP_NEXT;
}

/*
 * A caller that writes SP, a stack switch: cross to the stack it switched
 * from, or end the walk there.  Passes for other frames, and for the g0
 * frame of a cgocallback, which is unwound as any other.
 */
static enum step step_switch(struct walker *k, struct pm_unw_func *f)
{
	if (!(f->flags & PM_UNW_F_SPWRITE) || k->leaf)
		return STEP_PASS;
	if ((f->flags & PM_UNW_F_CGOCALL) && k->w.nswitch < MAX_SWITCHES)
		return step_cgocall(k);
	if ((f->flags & PM_UNW_F_CGOCALLBACK) && k->on_g0) {
		/* moved to g0 last time round: step through the g0 frame */
		k->on_g0 = false;
		return STEP_PASS;
	}
	if (f->flags & PM_UNW_F_CGOCALLBACK)
		return step_callback(k);
	if ((f->flags & PM_UNW_F_MCALL) || ((f->flags & PM_UNW_F_GSWITCH) && k->saw_schedule)) {
		/*
		 * Under what mcall called on g0 (park_m, goexit0, gosched_m,
		 * ...): those drop the goroutine first thing, and Go's own
		 * tracebacks and profiles end here.  So does a switch
		 * (morestack's preemption: newstack, gopreempt_m) with
		 * runtime.schedule below it.  The thread's curg read now is
		 * whatever it ran since: never followed.
		 */
		*k->status |= PM_UNW_COMPLETE;
		return STEP_STOP;
	}
	if (f->flags & PM_UNW_F_GSWITCH)
		return step_g0(k, f);
	/* a stack switch (gogo, ...): the rest is elsewhere */
	*k->status |= PM_UNW_CUT;
	return STEP_STOP;
}

/* A Go frame by pcsp: its return address at SP + spdelta, the caller's SP past it. */
static enum step go_frame(struct walker *k, const struct pm_unw_func *f, uint64_t sp, uint64_t bp,
			  struct regs *nrs, uint64_t *ra, uint64_t *nsp)
{
	uint64_t slot = sp + (uint64_t)f->spdelta, saved;

	if (read_on(k, sp, slot, ra) < 0) {
		*k->status |= PM_UNW_COPY_END;
		return STEP_STOP;
	}
	/* the saved BP sits just below the return address once pushed */
	if (f->spdelta >= 8 && read_word(&k->w.cur, slot - 8, &saved) == 0)
		reg_set(nrs, PM_DW_RBP, saved);
	else
		reg_set(nrs, PM_DW_RBP, bp);
	*nsp = slot + 8;
	return STEP_PASS;
}

/* Native code without usable CFI: the frame-pointer chain. */
static enum step fp_frame(struct walker *k, uint64_t sp, uint64_t bp, struct regs *nrs,
			  uint64_t *ra, uint64_t *nsp)
{
	uint64_t nbp;

	if (!(k->w.rs.valid & (1u << PM_DW_RBP)) || bp < sp || (bp & 7)) {
		*k->status |= PM_UNW_CUT;
		return STEP_STOP;
	}
	if (read_on(k, sp, bp + 8, ra) < 0 || read_on(k, sp, bp, &nbp) < 0) {
		*k->status |= PM_UNW_COPY_END;
		return STEP_STOP;
	}
	memset(nrs, 0, sizeof(*nrs));
	reg_set(nrs, PM_DW_RBP, nbp);
	*nsp = bp + 16;
	if (*ra == 0) {
		/* the outermost frame of a C thread ends the chain */
		*k->status |= PM_UNW_COMPLETE;
		return STEP_STOP;
	}
	return STEP_PASS;
}

/* Native code: by its CFI row, read on past the copy when the row needs it. */
static enum step native_frame(struct walker *k, const struct pm_unw_func *f, uint64_t sp,
			      uint64_t bp, struct regs *nrs, uint64_t *ra, uint64_t *nsp)
{
	int rc = f->cfi.valid ? cfi_step(&k->w.cur, &f->cfi, &k->w.rs, nrs, ra) : -1;

	if (rc == -2 && extend_at(k, sp))
		rc = cfi_step(&k->w.cur, &f->cfi, &k->w.rs, nrs, ra);

	if (rc == 1) {
		/* CFI says the return address is undefined: the outermost frame */
		*k->status |= PM_UNW_COMPLETE;
		return STEP_STOP;
	}
	if (rc == -2) {
		*k->status |= PM_UNW_COPY_END;
		return STEP_STOP;
	}
	if (rc == 0) {
		reg_get(nrs, PM_DW_RSP, nsp);
		return STEP_PASS;
	}
	return fp_frame(k, sp, bp, nrs, ra, nsp);
}

/*
 * Unwind the frame of @f: its caller's pc in *ra, its SP in *nsp, and the
 * other registers known in *nrs.  Passes when they check out.
 */
static enum step unwind_frame(struct walker *k, const struct pm_unw_func *f, struct regs *nrs,
			      uint64_t *ra, uint64_t *nsp)
{
	uint64_t sp = 0, bp = 0;
	enum step rc;

	reg_get(&k->w.rs, PM_DW_RSP, &sp);
	reg_get(&k->w.rs, PM_DW_RBP, &bp);
	memset(nrs, 0, sizeof(*nrs));
	if ((f->flags & PM_UNW_F_GO) && f->spdelta >= 0)
		rc = go_frame(k, f, sp, bp, nrs, ra, nsp);
	else
		rc = native_frame(k, f, sp, bp, nrs, ra, nsp);
	if (rc != STEP_PASS)
		return rc;
	/* a stack grows down: a caller's frame is above its callee's */
	if (*ra == 0 || *nsp <= sp) {
		*k->status |= PM_UNW_CUT;
		return STEP_STOP;
	}
	return STEP_PASS;
}

/*
 * A handler returning into a signal restorer: the code it interrupted is
 * in the kernel's signal frame.  Asked only of native frames and Go's
 * trampolines, at the exact address.  Passes when @ra is no restorer.
 */
static enum step step_signal(struct walker *k, const struct pm_unw_func *f, uint64_t ra,
			     uint64_t nsp)
{
	struct pm_unw_func sf;
	uint64_t ipc;

	if ((f->flags & PM_UNW_F_GO) && !(f->flags & PM_UNW_F_SIGTRAMP))
		return STEP_PASS;
	if (pm_unw_lookup(k->u, ra, &sf) != 0 || !(sf.flags & PM_UNW_F_SIGRETURN))
		return STEP_PASS;
	if (k->w.nswitch >= MAX_SWITCHES || pm_unw_signal_frame(k->u, &k->w, nsp, &ipc) < 0) {
		*k->status |= PM_UNW_CUT;
		return STEP_STOP;
	}
	k->w.nswitch++;
	*k->status |= PM_UNW_SIGFRAME;
	/* an exact pc, written as a return address to it */
	if (!push(k, ipc + 1))
		return STEP_STOP;
	if (!k->sig_n)
		k->sig_n = k->n;
	k->pc = ipc;
	k->leaf = true;
	return STEP_NEXT;
}

/* On to the caller at @ra, with its registers: where it returns to must be known code. */
static enum step to_caller(struct walker *k, struct regs *nrs, uint64_t ra, uint64_t nsp)
{
	struct pm_unw_func cf;

	if (pm_unw_lookup(k->u, ra - 1, &cf) < 0) {
		*k->status |= PM_UNW_CUT;
		return STEP_STOP;
	}
	if (!push(k, ra))
		return STEP_STOP;
	k->pc = ra;
	reg_set(nrs, PM_DW_RSP, nsp);
	k->w.rs = *nrs;
	k->leaf = false;
	return STEP_NEXT;
}

/*
 * One step of the walk: from the frame at pc to its caller, across a stack
 * switch or a signal frame where pc's function made one, or the end.
 */
static enum step step(struct walker *k)
{
	struct pm_unw_func f;
	struct regs nrs;
	uint64_t ra = 0, nsp = 0;
	enum step rc;

	rc = frame_func(k, &f);
	if (rc == STEP_PASS)
		rc = step_vdso(k, &f);
	if (rc == STEP_PASS)
		rc = step_switch(k, &f);
	if (rc == STEP_PASS)
		rc = unwind_frame(k, &f, &nrs, &ra, &nsp);
	if (rc == STEP_PASS)
		rc = step_signal(k, &f, ra, nsp);
	if (rc == STEP_PASS)
		rc = to_caller(k, &nrs, ra, nsp);
	return rc;
}

/* The walk at the sample: its registers, its g (R14), and the sampled pc as pcs[0]. */
static void walk_start(struct walker *k, struct pm_unw *u, const struct pm_unw_input *in,
		       uint64_t *pcs, size_t max, unsigned *status)
{
	memset(k, 0, sizeof(*k));
	k->u = u;
	k->in = in;
	k->pcs = pcs;
	k->max = max;
	k->status = status;
	k->w.cur = *in;
	for (unsigned i = 0; i < PM_UNW_NREGS; i++)
		if (in->regs_valid & (1u << i))
			reg_set(&k->w.rs, i, in->regs[i]);
	reg_set(&k->w.rs, PM_DW_RSP, in->sp);
	reg_set(&k->w.rs, PM_DW_RBP, in->bp);
	reg_get(&k->w.rs, PM_DW_R14, &k->w.g);
	k->pc = in->ip;
	k->leaf = true;
	k->pcs[k->n++] = k->pc;
}

/*
 * The walk stopped: where it ran out of the copy the kernel's callchain
 * goes on, and what it read of the target after the sample is checked
 * against that callchain, taken at the sample.
 */
static size_t walk_end(struct walker *k)
{
	const struct pm_unw_input *in = k->in;
	unsigned *status = k->status;
	struct pm_unw_func lf;
	size_t n = k->n;

	/*
	 * Out of copy at a signal trampoline: the kernel's frame-pointer
	 * chain from a handler skips the interrupted function (its pc is in the
	 * signal frame, not on the stack), so it would join the handler to a
	 * caller that never called it.  An honest cut instead.
	 */
	if ((*status & PM_UNW_COPY_END) && n &&
	    pm_unw_lookup(k->u, k->pcs[n - 1] - (n > 1), &lf) == 0 &&
	    (lf.flags & PM_UNW_F_SIGTRAMP)) {
		*status = (*status & ~PM_UNW_COPY_END) | PM_UNW_CUT;
		return n;
	}
	if ((*status & PM_UNW_COPY_END) && !k->w.nswitch)
		n = splice_chain(k->u, in, k->pcs, n, k->max, status);
	else
		n = check_extension(k->u, in, &k->w, k->pcs, n, k->max, status);
	if (k->sw_mem && in->go)
		n = check_switch(k->u, in, &k->sw_rs, &k->sw_f, k->pcs, k->sw_n, n, k->max, status);
	if (k->sig_n && n > k->sig_n)
		n = check_signal(k->u, in, k->pcs, k->sig_n, n, status);
	if (k->w.nswitch && !(*status & (PM_UNW_COMPLETE | PM_UNW_MAX | PM_UNW_COPY_END)))
		*status |= PM_UNW_CUT;
	return n;
}

/* The walk as a loop over step(), then its checks against the kernel's callchain. */
size_t pm_unw_walk(struct pm_unw *u, const struct pm_unw_input *in, uint64_t *pcs, size_t max,
		   unsigned *status)
{
	struct walker k;
	enum step rc;

	*status = 0;
	u->switch_bp = 0;
	if (max == 0)
		return 0;
	walk_start(&k, u, in, pcs, max, status);
	do {
		rc = step(&k);
	} while (rc == STEP_NEXT);
	return rc == STEP_DONE ? k.n : walk_end(&k);
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

uint64_t pm_unw_switch_bp(const struct pm_unw *u)
{
	return u->switch_bp;
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
