/*
 * src_wall: the profile source of --wall[=HZ], goroutine wall clock read
 * from outside: at HZ snapshots a second (20 by default, fewer when a
 * snapshot costs more than a tenth of a core), every goroutine of the
 * target (the runtime's list, runtime.allgs) gives one sample weighing the
 * time since the previous snapshot (sample type wall/nanoseconds), with
 * its own stack (walked from its saved context g.sched, reused while that
 * has not changed), goroutine id, pprof labels, creators, and the labels
 * state (running, runnable, waiting, syscall), wait_reason (the runtime's
 * own names, read from the binary) and parked (at least this long, ns).
 * A goroutine running at the snapshot has no stack read: "[running]" over
 * the stack of its latest CPU sample when the recording samples CPU (-e)
 * and one was taken since the goroutine was last seen waiting (label
 * cpu_sample_age_ms: how old), else over its start function.  One that
 * changed while read is dropped and counted.
 */
#ifndef PM_SRC_WALL_H
#define PM_SRC_WALL_H

#include <sys/types.h>

#include "session/source.h"

struct pm_srcctx;

extern const struct pm_source pm_src_wall;

/*
 * src_cpu's hook: a CPU sample of @pid at @time (the events' clock), its
 * user frames @ids[0..n) leaf first; kept, with the goroutine the sample
 * found (pm_gor_last_g()), as that goroutine's latest.  Nothing without
 * --wall.  @wall: the wall source's context (pm_sc_peer()).
 */
void pm_wall_cpu_sample(struct pm_srcctx *wall, pid_t pid, uint64_t time, const uint32_t *ids,
			size_t n);

struct pm_elf;
/*
 * The runtime's names of its wait reasons in the Go binary @e
 * (runtime.waitReasonStrings, found by its content): @names[0..n) made
 * (the caller frees them), n at most @cap; 0 when not found.
 */
size_t pm_wall_reason_names(const struct pm_elf *e, char **names, size_t cap);

#endif
