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
 * is marked cut.  When the copy ends first, the kernel's frame-pointer
 * callchain (if the sample carries one) supplies the rest of the stack.
 */
#ifndef PM_UNWIND_H
#define PM_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pm_unw_func_flags {
	PM_UNW_F_GO = 1 << 0,      /* Go function: spdelta is exact */
	PM_UNW_F_TOP = 1 << 1,     /* bottom of a stack: runtime.goexit, mstart, rt0_go */
	PM_UNW_F_SPWRITE = 1 << 2, /* switches stacks: cannot unwind past it */
	PM_UNW_F_MAIN = 1 << 3,    /* main.main */
};

struct pm_unw_func {
	uint64_t entry;
	int32_t spdelta; /* bytes below the caller's SP at this pc, -1 = unknown */
	unsigned flags;  /* enum pm_unw_func_flags */
};

/* 0 when @pc is in known code (fills *out), -ENOENT when not. */
typedef int (*pm_unw_lookup_fn)(void *arg, uint64_t pc, struct pm_unw_func *out);

struct pm_unw_input {
	uint64_t ip, sp, bp;    /* user registers */
	const uint8_t *stack;   /* copy of [sp, sp + stack_len) */
	size_t stack_len;
	const uint64_t *chain;  /* kernel callchain, user part only (no markers), may be NULL */
	size_t chain_len;
};

enum pm_unw_status {
	PM_UNW_COMPLETE = 1 << 0, /* reached the bottom of the stack (goexit, mstart, main) */
	PM_UNW_CUT = 1 << 1,      /* stopped at an address that does not check out */
	PM_UNW_COPY_END = 1 << 2, /* ran out of stack copy and callchain */
	PM_UNW_MAX = 1 << 3,      /* hit @max frames */
	PM_UNW_SAW_MAIN = 1 << 4, /* main.main is on the stack */
};

/* Cache of lookups; one per unwinding thread. */
struct pm_unw;
struct pm_unw *pm_unw_new(pm_unw_lookup_fn fn, void *arg);
void pm_unw_free(struct pm_unw *u);
/* Forget cached lookups (after the address space changes). */
void pm_unw_flush(struct pm_unw *u);

/*
 * Walk.  pcs[0] is the sampled IP; pcs[i > 0] are return addresses.
 * Returns the number of PCs written (>= 1); *status gets enum pm_unw_status bits.
 */
size_t pm_unw_walk(struct pm_unw *u, const struct pm_unw_input *in, uint64_t *pcs, size_t max,
		   unsigned *status);

#endif
