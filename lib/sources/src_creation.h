/*
 * src_creation: the probe on goroutine creation, a profile source -- with
 * --creators, launched or attached, one uprobe on each Go binary inside
 * runtime.newproc.func1 right after newproc1 returns (the new g and goid,
 * the creating g and goid, read by the kernel; the creator's stack from the
 * kernel's callchain), whose samples feed the goroutine inspector's
 * creation log (goroutine.h, pm_gor_created) and make no sample of the
 * profile.
 */
#ifndef PM_SRC_CREATION_H
#define PM_SRC_CREATION_H

#include "session/source.h"

extern const struct pm_source pm_src_creation;

#endif
