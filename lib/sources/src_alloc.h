/*
 * src_alloc: allocations, a profile source -- with --alloc, launched or
 * attached, one uprobe on each Go binary at runtime.mProf_Malloc, past its
 * stack check: the one function every allocation the runtime samples for
 * its own heap profile passes (MemProfileRate, 512 KiB by default), in
 * every version from Go 1.19 on.  The kernel reads the object's size from
 * its argument register and the rate of the moment (runtime.MemProfileRate)
 * from the target's memory; the stack, goroutine, labels and creators come
 * as for a CPU sample.  The profile gets Go's heap profile sample types
 * alloc_objects/count and alloc_space/bytes, scaled as the runtime scales
 * them (1 / (1 - exp(-size/rate))), with the runtime's own frames above
 * the allocating function hidden as runtime/pprof hides them, and the
 * numeric label bytes, the object's size, as Go's heap profile has it
 * (kept in a root frame of the source's own until the profile).  A binary
 * whose linker turned heap sampling off (it never references the heap
 * profile) is said in one line: nothing is sampled in it.
 * --memprofilerate BYTES writes the program's runtime.MemProfileRate:
 * attached, for the recording, the value it had put back at the end;
 * launched, where the runtime has just set it (the command traced to that
 * one breakpoint, pm_target_break()), so from before main; said on stderr
 * and in the profile.
 */
#ifndef PM_SRC_ALLOC_H
#define PM_SRC_ALLOC_H

#include <stdint.h>

#include "session/source.h"

extern const struct pm_source pm_src_alloc;

struct pm_elf;
struct pm_go;
/*
 * runtime.MemProfileRate's vaddr in @e (its symbol, or in a stripped
 * binary the one place that writes it, matched in the code); 0 unknown.
 */
uint64_t pm_alloc_rate_vaddr(const struct pm_elf *e, const struct pm_go *go);

struct pm_srcctx;
/*
 * --inuse with --alloc: the allocations of @size the probe saw in process
 * @pid at the user frames @ids[0..n) (leaf first, the runtime's hidden:
 * the frames of the runtime's heap record): how many (*count), and the
 * goroutine part of their stacks (creator and tag frames, *ntail of them)
 * when every one had the same; NULL when it saw none or different ones.
 * @alloc: the alloc source's context (pm_sc_peer()).
 */
const uint32_t *pm_alloc_seen(struct pm_srcctx *alloc, uint32_t pid, uint64_t size,
			      const uint32_t *ids, size_t n, size_t *ntail, uint64_t *count);

#endif
