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
 * A goroutine running at the snapshot has no stack read ("[running]" over
 * its start function); one that changed while read is dropped and counted.
 */
#ifndef PM_SRC_WALL_H
#define PM_SRC_WALL_H

#include "source.h"

extern const struct pm_source pm_src_wall;

#endif
