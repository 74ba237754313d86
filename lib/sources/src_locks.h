/*
 * src_locks: lock contention, a profile source -- with --locks, launched
 * or attached, two uprobes on each Go binary's slow path of sync.Mutex
 * Lock (sync.(*Mutex).lockSlow; internal/sync.(*Mutex).lockSlow from Go
 * 1.24): one past the stack check of its entry, one at its epilogue (the
 * one return, found in its code).  Lock's fast path (one CAS) is inlined
 * into its callers, so every call of lockSlow is a contended Lock (of a
 * Mutex, or of an RWMutex's writer lock).  Likewise, from Go 1.20, an
 * RWMutex's RLock waiting for a writer and a writer waiting for the
 * readers are the only calls of sync.runtime_SemacquireRWMutexR and
 * sync.runtime_SemacquireRWMutex: two probes on each as well.  The kernel reads the goroutine
 * (R14) at both and the mutex (AX) at the entry; the entry's stack,
 * goroutine, labels and creators come as for a CPU sample, and when the
 * same goroutine leaves lockSlow (on whatever thread) the wait is one
 * sample: contentions/count 1 and delay/nanoseconds the time between the
 * two probes, as Go's mutex profile types them, with a "mutex" label (the
 * lock's address).  Two uprobe traps per contended Lock, none per
 * uncontended one.  The exit of a goroutine whose entry was not seen (it
 * began to wait before the recording, or the entry was lost) and an
 * entry without an exit at the end are counted in the profile's
 * comments, not guessed.
 *
 * The runtime's own locks: two probes in runtime.lock2, at its one call
 * of the sleep (futexsleep to Go 1.23, semasleep from 1.24: found in its
 * code) and at the return address; a sample per sleep, the lock's address
 * from futexsleep's argument (semasleep's is a duration: "runtime").
 *
 * Go 1.19's RLock and writer waits: two probes on the Mutex's semaphore
 * function (sync.runtime_SemacquireMutex), its calls inside a watched
 * lockSlow left out.
 *
 * The holder's stack: a probe at the entry of sync.(*Mutex).unlockSlow
 * (a release with waiters): the releasing goroutine's stack, charged with
 * the waiting it ended (holder_contentions, holder_delay: Go's mutex
 * profile's way), from the waits watched for that Mutex.
 *
 * The budget (--locks-max-rate, hits per second): the probes open per CPU
 * for every process (attach.h, pm_att_cpuwide()) so that they can be
 * closed (a disabled uprobe still traps); above the budget its timer
 * opens the entries for a share of each 100 ms period and the exits
 * until the waits begun then end, and a wait counts for its period's
 * length over the time its entry was open (the periods logged in a
 * capture, so that a replay weighs the same).
 */
#ifndef PM_SRC_LOCKS_H
#define PM_SRC_LOCKS_H

#include "session/source.h"

extern const struct pm_source pm_src_locks;

#endif
