/*
 * attach: the targets and the events opened on them -- -p/-t checked
 * against /proc, the CPUs and the rings, every event's attr, opening on
 * the launched process or on every thread of the attached ones (followed
 * into the threads they create), hardware events this CPU lacks, which of
 * a thread's event sets counts, and whether the targets have exited.
 *
 * It works on the session's state (session.h): the fds, rings and CPUs;
 * the processes attached stay its own (struct aproc), seen through
 * pm_att_nprocs() and the like.  Functions returning 0 or -1 leave the
 * error in s->res.
 */
#ifndef PM_ATTACH_H
#define PM_ATTACH_H

#include "session.h"

/* Check -p and -t against /proc, before anything is opened. */
int pm_att_check_targets(struct session *s);
/*
 * A hardware event this CPU lacks falls back to cpu-clock (or is an error
 * under --strict); a precise level the PMU lacks is lowered.
 */
int pm_att_resolve_hardware(struct session *s);
/* Launch: every event on every CPU for @pid and, inherited, its threads; -errno. */
int pm_att_open_events(struct session *s, pid_t pid);
/* Attach: open on every target thread, enable them all; maps loaded. */
int pm_att_attach_all(struct session *s);
void pm_att_summary(struct session *s);
/* Has every attached process (or every -t thread) exited? */
bool pm_att_all_exited(struct session *s);
/* Does a record of event @id on thread @tid count (one event set per thread)? */
bool pm_att_accept(struct session *s, uint64_t id, uint32_t tid);

size_t pm_att_nprocs(const struct session *s);
pid_t pm_att_pid(const struct session *s, size_t i);
int pm_att_pidfd(const struct session *s, size_t i); /* -1 when none */

/* Stop every event; then close them, the rings and the processes' pidfds. */
void pm_att_disable(struct session *s);
void pm_att_close(struct session *s);

#endif
