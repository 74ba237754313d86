/*
 * recorder: the agent's recording children (agent.h).  Each runs one
 * recording (record.h) cut in intervals and sends every interval's
 * profile, with its process's resource, over a pipe (sink.h).
 *
 * - Per process: attached to one target (record -p), every interval of it,
 *   samples or not.  Used when a kind reads or probes a process of its own
 *   (--wall, --off-cpu, --locks, --alloc, --inuse, --creators), or with
 *   --per-process.
 * - Host-wide: one child for the host, the CPU events open on every CPU
 *   for every process (perf record -a): one set of events and rings
 *   whatever the number of targets.  Each process is judged at its first
 *   record (discover.h: pm_disc_judge()), the answer kept until it execs
 *   or exits (then its entry waits out an interval for its last profile),
 *   or until SIGHUP (the filter file read again).  An interval sends a
 *   profile for each target with samples in it; one that did not run has
 *   none.
 */
#ifndef PM_RECORDER_H
#define PM_RECORDER_H

#include <sys/types.h>

#include "agent/agent.h"
#include "agent/discover.h"
#include "base/util.h"

/* Record @p, attached, until it exits or the agent stops it; intervals to @fd. */
PM_NORETURN void pm_agent_record_proc(const struct pm_agent_cfg *cfg, const struct pm_disc_proc *p,
				      int fd);
/*
 * Record the host's targets (cfg->filter, or cfg->filter_file), leaving
 * out @agent and its children, until stopped; intervals to @fd.
 */
PM_NORETURN void pm_agent_record_host(const struct pm_agent_cfg *cfg, pid_t agent, int fd);
/* Can the kinds of @cfg be recorded host-wide (the CPU events alone)? */
bool pm_agent_host_kinds(const struct pm_record_cfg *rec);

#endif
