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

/*
 * The profile of @s, started at wall time @t0_wall, @dur ns long (owned:
 * pm_prof_free()): of process @pid's stacks alone, or 0 every stack's.
 */
struct pm_profile *pm_build_profile(struct session *s, pid_t pid, uint64_t t0_wall, uint64_t dur);
/* The processes with samples in the profile (cut in intervals: this one), in a new array. */
size_t pm_build_pids(const struct session *s, pid_t **out);

#endif
