/*
 * src_creation: the goroutine creation probes profile source -- attached
 * with --creators=N, N > 1, to a process that does not record ancestors,
 * two entry-only uprobes on each Go binary (runtime.newproc: the creating
 * goroutine and its stack; runtime.runqput: the new goroutine), whose
 * samples feed the goroutine inspector (goroutine.h) and make no sample of
 * the profile.
 */
#ifndef PM_SRC_CREATION_H
#define PM_SRC_CREATION_H

#include "source.h"

extern const struct pm_source pm_src_creation;

#endif
