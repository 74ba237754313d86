/*
 * profbuild: the profile built at the end of a recording or replay --
 * every distinct frame of the aggregated stacks symbolized once (binaries
 * by their maps, kernel frames from /proc/kallsyms, goroutine creator
 * frames by the inspector, the [truncated] and [limit] markers), the
 * session's comments, and what each profile source (source.h) adds:
 * sample types, descriptions, and the samples of each stack.
 */
#ifndef PM_PROFBUILD_H
#define PM_PROFBUILD_H

#include "session/session.h"

struct pm_profile;

/* The profile of @s, started at wall time @t0_wall, @dur ns long (owned: pm_prof_free()). */
struct pm_profile *pm_build_profile(struct session *s, uint64_t t0_wall, uint64_t dur);

#endif
