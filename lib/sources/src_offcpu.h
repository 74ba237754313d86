/*
 * src_offcpu: off-CPU time, a profile source -- with --off-cpu, launched
 * or attached, the software event context-switches sampled at every
 * switch (period 1) with attr.context_switch: the sample is taken as the
 * thread leaves its CPU, in its context (the kernel's callchain from the
 * scheduler down to the system call or fault that blocked, the user
 * registers and stack copy at the kernel entry: its Go stack and
 * goroutine as for a CPU sample), and the kernel's PERF_RECORD_SWITCH
 * records say whether it was preempted (still runnable) and when it ran
 * again.  One sample per time off CPU: off-cpu/nanoseconds, the switch-in's
 * time less the switch-out's, by the kernel stack under the Go stack, with
 * the goroutine's id, labels and creators.
 *
 * Left out, and counted in the profile's comments: preempted switches
 * (the thread stayed runnable: not blocked, as perf's off-CPU mode), idle
 * runtime threads (m.curg is 0: an M parked in notesleep, sysmon, the
 * scheduler looking for work), a thread on the system stack whose
 * goroutine was read only after it ran again (which goroutine it served
 * is not known then), a switch-out without its switch-in at the end (or
 * the thread's exit), and
 * a switch-in whose switch-out was not seen (before the recording, lost).
 */
#ifndef PM_SRC_OFFCPU_H
#define PM_SRC_OFFCPU_H

#include "session/source.h"

extern const struct pm_source pm_src_offcpu;

#endif
