/*
 * unwind: turn one sample's registers and user-stack copy into a list of
 * program counters, leaf first.  Knows no names: what a PC is (which
 * function, its frame size at that PC, whether it is the bottom of a stack)
 * is asked of the caller through pm_unw_lookup_fn.
 *
 * Go frames are walked with the exact pc->sp-delta from gopclntab, so a leaf
 * sampled before its frame is set up still gets its caller; native frames
 * fall back to the frame-pointer chain.  Every return address must check out
 * against the lookup; the first that does not ends the walk, and the stack
 * is marked cut.  When the copy ends first, the stack is read on from
 * the target through @read_mem (live: checked frame by frame as the copy
 * is), else the kernel's frame-pointer callchain (if the sample carries
 * one) supplies the rest of the stack.
 *
 * Native frames whose lookup carries DWARF CFI rules (pm_unw_cfi) are
 * unwound by those rules over a small register file (the x86_64 DWARF
 * registers of the sample, pm_unw_input.regs); without CFI, by the
 * frame-pointer chain.  A C function called by runtime.asmcgocall (cgo)
 * continues on the goroutine stack: through @read_mem when the caller can
 * read the target's memory, else through the kernel's frame-pointer chain
 * when it agrees with the recovered frame pointer.
 *
 * The runtime's other stack switches are crossed through @read_mem and the
 * offsets in @go: a sample on the system stack (g0) under
 * runtime.systemstack, mcall or morestack continues with the goroutine
 * that switched (m.curg, from its saved context g.sched); Go called back
 * from C (runtime.cgocallback) continues on g0 below g0.sched.sp, into the
 * C frames and through asmcgocall back onto the goroutine; a signal
 * handler (Go's sigtramp or a C handler) continues, through the kernel's
 * signal frame, with the registers of the code it interrupted.
 */
#ifndef PM_UNWIND_H
#define PM_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pm_unw_func_flags {
	PM_UNW_F_GO = 1 << 0,      /* Go function: spdelta is exact */
	PM_UNW_F_TOP = 1 << 1,     /* bottom of a stack: runtime.goexit, mstart, rt0_go, an ELF entry stub */
	PM_UNW_F_SPWRITE = 1 << 2, /* switches stacks: cannot unwind past it */
	PM_UNW_F_MAIN = 1 << 3,    /* main.main */
	PM_UNW_F_CGOCALL = 1 << 4, /* runtime.asmcgocall: C runs on g0 above it */
	PM_UNW_F_GSWITCH = 1 << 5, /* systemstack, mcall, morestack: the goroutine is at curg.sched */
	PM_UNW_F_CGOCALLBACK = 1 << 6, /* runtime.cgocallback: its C caller is on g0 */
	PM_UNW_F_SIGRETURN = 1 << 7,   /* a signal restorer: returning here is a signal frame */
	PM_UNW_F_SIGTRAMP = 1 << 8,    /* Go's signal trampolines: return into a restorer */
	PM_UNW_F_NOFRAME = 1 << 9,     /* runtime.systemstack_switch: a saved pc, not a frame */
	PM_UNW_F_SYSTEMSTACK = 1 << 10, /* runtime.systemstack (with GSWITCH) */
	PM_UNW_F_MCALL = 1 << 11,       /* runtime.mcall (with GSWITCH): no curg = the scheduler */
	/*
	 * time.now, runtime.nanotime1, walltime: call the vDSO on g0, their
	 * SP after the prologue kept in R12 (callee-saved in C)
	 */
	PM_UNW_F_VDSOCALL = 1 << 12,
	/*
	 * runtime.schedule: the thread runs no goroutine (every caller drops
	 * it first); a walk that gets to a stack switch above it ends there
	 */
	PM_UNW_F_SCHEDULE = 1 << 13,
};

/* x86_64 DWARF register numbers */
enum pm_unw_dwreg {
	PM_DW_RAX = 0, PM_DW_RDX, PM_DW_RCX, PM_DW_RBX, PM_DW_RSI, PM_DW_RDI, PM_DW_RBP, PM_DW_RSP,
	PM_DW_R8, PM_DW_R9, PM_DW_R10, PM_DW_R11, PM_DW_R12, PM_DW_R13, PM_DW_R14, PM_DW_R15,
	PM_DW_RA, /* the return address column (rip) */
	PM_UNW_NREGS
};

enum pm_unw_rule {
	PM_UNW_R_UNDEF = 0, /* not recoverable (caller-saved, or an unsupported expression) */
	PM_UNW_R_SAME,      /* unchanged in the caller */
	PM_UNW_R_OFFSET,    /* saved at CFA + off */
	PM_UNW_R_VAL,       /* the caller's value is CFA + off */
	PM_UNW_R_REG,       /* the caller's value is in register off */
};

/*
 * One row of DWARF CFI, reduced to what the walk can evaluate: CFA = reg +
 * off, and one rule per register.  valid == 0: no usable CFI at this pc.
 * outermost: the return address is undefined (the bottom of a C stack).
 */
struct pm_unw_cfi {
	uint8_t valid, outermost, cfa_reg;
	int32_t cfa_off;
	uint8_t rule[PM_UNW_NREGS]; /* enum pm_unw_rule */
	int32_t off[PM_UNW_NREGS];
};

struct pm_unw_func {
	uint64_t entry;
	int32_t spdelta; /* bytes below the caller's SP at this pc, -1 = unknown */
	unsigned flags;  /* enum pm_unw_func_flags */
	struct pm_unw_cfi cfi; /* native code with DWARF CFI; zeroed when none */
};

/* 0 when @pc is in known code (fills *out), -ENOENT when not. */
typedef int (*pm_unw_lookup_fn)(void *arg, uint64_t pc, struct pm_unw_func *out);

/*
 * Where the runtime keeps what the walk needs to cross its stack switches:
 * byte offsets in runtime.g and runtime.m for the binary's Go version
 * (g.stack.lo/hi at 0/8 and m.g0 at 0 in every version).
 */
struct pm_unw_goabi {
	uint32_t g_m;                              /* g.m */
	uint32_t g_sched_sp, g_sched_pc, g_sched_bp; /* g.sched (a gobuf): sp, pc, bp */
	uint32_t m_curg, m_gsignal;                /* m.curg, m.gsignal */
};

struct pm_unw_input {
	uint64_t ip, sp, bp;    /* user registers */
	const uint8_t *stack;   /* copy of [sp, sp + stack_len) */
	size_t stack_len;
	const uint64_t *chain;  /* kernel callchain, user part only (no markers), may be NULL */
	size_t chain_len;
	/* Optional: every user register, by DWARF number; bit i of regs_valid says regs[i] is set. */
	uint64_t regs[PM_UNW_NREGS];
	uint32_t regs_valid;
	/*
	 * Optional: read @len bytes of the target at @addr (the goroutine stack
	 * behind a cgo call).  0 when all were read.
	 */
	int (*read_mem)(void *arg, uint64_t addr, void *buf, size_t len);
	void *read_arg;
	/*
	 * Optional, with read_mem: the runtime's offsets, to follow a sample on
	 * the system stack to its goroutine and Go called from C to its C
	 * caller.  The g register is regs[PM_DW_R14].
	 */
	const struct pm_unw_goabi *go;
};

enum pm_unw_status {
	PM_UNW_COMPLETE = 1 << 0, /* reached the bottom of the stack (goexit, mstart, main) */
	PM_UNW_CUT = 1 << 1,      /* stopped at an address that does not check out */
	PM_UNW_COPY_END = 1 << 2, /* ran out of stack copy and callchain */
	PM_UNW_MAX = 1 << 3,      /* hit @max frames */
	PM_UNW_SAW_MAIN = 1 << 4, /* main.main is on the stack */
	PM_UNW_NEED_GO = 1 << 5,  /* cut at a runtime stack switch that @go would cross */
	PM_UNW_SWITCHED = 1 << 6, /* crossed onto another stack (read through read_mem) */
	PM_UNW_SIGFRAME = 1 << 7, /* went through a signal frame */
	PM_UNW_EXTENDED = 1 << 8, /* read the stack past the copy through read_mem */
	/*
	 * the goroutine behind a switch to the system stack came from the
	 * kernel's callchain: its m runs another since, or it is elsewhere
	 */
	PM_UNW_MOVED_ON = 1 << 9,
};

/*
 * The user registers to sample for DWARF unwinding: perf's full x86_64
 * general-purpose set (AX..SS, R8..R15), as perf --call-graph dwarf asks.
 */
#define PM_UNW_PERF_REGS_MASK 0xff0fffULL

/*
 * Fill in->regs/regs_valid (and ip, sp, bp) from a sample's user registers
 * @regs, @nregs of them in increasing bit order of @mask (perf's x86_64
 * numbering, asm/perf_regs.h).
 */
void pm_unw_set_perf_regs(struct pm_unw_input *in, uint64_t mask, const uint64_t *regs,
			  unsigned nregs);

/*
 * A read_mem for pm_unw_input: process_vm_readv from the process whose
 * pid_t @arg points to.  0 when all @len bytes were read, else -errno.
 */
int pm_unw_read_pid(void *arg, uint64_t addr, void *buf, size_t len);

/* Cache of lookups; one per unwinding thread. */
struct pm_unw;
struct pm_unw *pm_unw_new(pm_unw_lookup_fn fn, void *arg);
/*
 * The same with a cache of 1 << @cache_bits lookups (0, or past the
 * default of 4096: the default): a fuzz target's few pcs need few.
 */
struct pm_unw *pm_unw_new_sized(pm_unw_lookup_fn fn, void *arg, unsigned cache_bits);
void pm_unw_free(struct pm_unw *u);
/* Forget cached lookups (after the address space changes). */
void pm_unw_flush(struct pm_unw *u);

/*
 * Walk.  pcs[0] is the sampled IP; pcs[i > 0] are return addresses (the
 * interrupted pc under a signal frame is given as pc + 1, so that it reads
 * as one).
 * Returns the number of PCs written (>= 1); *status gets enum pm_unw_status bits.
 */
size_t pm_unw_walk(struct pm_unw *u, const struct pm_unw_input *in, uint64_t *pcs, size_t max,
		   unsigned *status);
/*
 * The last walk's frame pointer where it first switched off the system
 * stack (runtime.systemstack, mcall, morestack on g0): the goroutine's BP,
 * an address on that goroutine's stack at the sample; 0 when none.
 */
uint64_t pm_unw_switch_bp(const struct pm_unw *u);

#endif
