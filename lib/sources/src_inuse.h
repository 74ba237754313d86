/*
 * src_inuse: the live heap, a profile source -- with --inuse, launched or
 * attached, no probes: the Go runtime's own heap profile records read from
 * the target's memory, as runtime.MemProfile publishes them (the live heap
 * as of the last completed GC cycle).  The records are the list at
 * runtime.mbuckets (through bucket.allnext): each bucket is
 *   {next, allnext, typ, hash, size, nstk uintptr} (48 bytes), stk[nstk],
 *   memRecord {active, future[3]} of memRecordCycle
 *     Go 1.19-1.26  {allocs, frees, alloc_bytes, free_bytes uintptr}
 *     Go 1.27       {allocs, frees uintptr} (bytes = count * size)
 * (checked against the binary's DWARF where it has it); what is published
 * is active + future[mProfCycle % 3] (runtime.memProfileInternal flushes
 * that one first), or, before any GC cycle completed (every active record
 * zero), the sum of all.  runtime.mbuckets and runtime.mProfCycle come
 * from the ELF symbols, or in a stripped binary from the code: the one
 * 64-bit RIP-relative load of runtime.mProf_FlushLocked and the one
 * 32-bit load of runtime.mProf_Free (functions found by name in
 * gopclntab); otherwise one line says so and the process has no in-use
 * samples.
 *
 * The records are read every 100 ms at least (less often when a read costs
 * more than 2 % of a core: a new bucket is walked once, then only the
 * records are read, in batches) and once more at the end when the process
 * is still there: a launched program's last read is the last before it
 * exited.  A read never stops the target: each record is read twice and
 * kept when both agree and it is plausible (frees <= allocs, bytes =
 * count x size), read again up to 4 times, else dropped and counted; a
 * read during which the GC cycle changed is done again.
 *
 * Samples: one per bucket, its stack the bucket's return PCs with the
 * runtime's pseudo-PCs of inlined calls folded into their frame and the
 * runtime's frames above the allocating function hidden (as runtime/pprof
 * does), the numeric label bytes (the object size), and Go's heap profile
 * sample types inuse_objects/count and inuse_space/bytes -- and, without
 * --alloc, alloc_objects/count and alloc_space/bytes since the program
 * started -- scaled as runtime/pprof scales them (scaleHeapSample, at the
 * program's runtime.MemProfileRate when read).  The runtime's records keep
 * no goroutine: alone, the samples carry no pprof labels and no creators.
 * With --alloc, a record's sample gets the goroutine part (creator frames,
 * the tag frame of its labels) of the allocations the probe saw at its
 * stack and size (pm_alloc_seen()) where the probe saw every allocation
 * the record counts (launched: the probe on from the exec; attached: the
 * record empty at the first read) and all had the same one; else a
 * marker frame at its root, [labels unknown] (with --alloc, records with
 * nothing in use make no sample).
 */
#ifndef PM_SRC_INUSE_H
#define PM_SRC_INUSE_H

#include "session/source.h"

extern const struct pm_source pm_src_inuse;

#endif
