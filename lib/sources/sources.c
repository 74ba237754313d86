/* sources: the table of profile sources (sources.h). */
#include "sources/sources.h"

#include "session/srcctx.h"
#include "sources/src_cpu.h"
#include "sources/src_creation.h"
#include "sources/src_alloc.h"
#include "sources/src_inuse.h"
#include "sources/src_wall.h"
#include "sources/src_locks.h"
#include "sources/src_offcpu.h"

/* The CPU source first (source.h). */
const struct pm_source *const pm_sources[] = {
	&pm_src_cpu,
	&pm_src_creation,
	&pm_src_alloc,
	&pm_src_inuse,
	&pm_src_wall,
	&pm_src_locks,
	&pm_src_offcpu,
};
const size_t pm_nsources = PM_ARRAY_SIZE(pm_sources);

_Static_assert(PM_ARRAY_SIZE(pm_sources) <= PM_SES_SRC_MAX, "PM_SES_SRC_MAX");
