/*
 * attach: the targets and the events opened on them -- -p/-t checked
 * against /proc, the CPUs and the rings, every event's attr, opening on
 * the launched process or on every thread of the attached ones (followed
 * into the threads they create), hardware events this CPU lacks, which of
 * a thread's event sets counts, and whether the targets have exited.
 *
 * Its state (struct pm_att, s->att: the fds, rings, CPUs, processes, and
 * which thread each event id was opened on) is its own, seen through the
 * functions below; it reads the session's events (s->spec, s->attr).
 * Functions returning 0 or -1 leave the error in s->res.
 */
#ifndef PM_ATTACH_H
#define PM_ATTACH_H

#include "session/session.h"

struct pm_ring;

/* s->att of a session, live and at replay (empty: no target). */
struct pm_att *pm_att_new(void);
void pm_att_free(struct pm_att *a); /* NULL is fine */

/* Check -p and -t against /proc, before anything is opened. */
int pm_att_check_targets(struct session *s);
/*
 * A hardware event this CPU lacks falls back to cpu-clock (or is an error
 * under --strict); a precise level the PMU lacks is lowered.
 */
int pm_att_resolve_hardware(struct session *s);

/*
 * Events without :u/:k count user mode only where the kernel refuses to
 * count its own time for pmuprof (kernel.perf_event_paranoid >= 2, no
 * CAP_PERFMON), with one warning line.
 */
void pm_att_resolve_kernel(struct session *s);
/* Launch: every event on every CPU for @pid and, inherited, its threads; -errno. */
int pm_att_open_events(struct session *s, pid_t pid);
/* Attach: open on every target thread, enable them all; maps loaded. */
int pm_att_attach_all(struct session *s);
void pm_att_summary(struct session *s);
/* Has every attached process (or every -t thread) exited? */
bool pm_att_all_exited(struct session *s);
/* Does a record of event @id on thread @tid count (one event set per thread)? */
bool pm_att_accept(struct session *s, uint64_t id, uint32_t tid);

/* FORK and EXIT records: the threads alive, counted in the event sets that count. */
bool pm_att_thread_born(struct session *s, uint64_t id, uint32_t tid); /* false: not counted */
void pm_att_thread_gone(struct session *s, uint64_t id, uint32_t tid);
int64_t pm_att_threads_live(const struct session *s);
/* Records dropped as a second inherited event set's. */
uint64_t pm_att_dups(const struct session *s);
/* Event id -> the thread it was opened on: into the capture, and back at replay. */
const struct pm_idtab *pm_att_owners(const struct session *s);
void pm_att_set_owner(struct session *s, uint64_t id, uint32_t tid);

/* The rings (per CPU; NULL where none was mapped), for the drain. */
size_t pm_att_nrings(const struct session *s);
struct pm_ring *pm_att_ring(const struct session *s, size_t i);

size_t pm_att_nprocs(const struct session *s);
pid_t pm_att_pid(const struct session *s, size_t i);
int pm_att_pidfd(const struct session *s, size_t i); /* -1 when none */

/*
 * Event @e of s->cpuwide opened on every CPU for every process (pid -1:
 * a uprobe's traps in each process that maps its binary), into the rings
 * (@on), or closed (its uprobe's traps gone).  Opened once by the attach
 * and pm_att_open_events(); 0 or -errno with the error in s->res.
 */
int pm_att_cpuwide(struct session *s, size_t e, bool on);
/* Its hits so far (the counts of its fds, open and closed). */
uint64_t pm_att_cpuwide_hits(const struct session *s, size_t e);

/*
 * After the last drain: the records lost that the kernel counted (every
 * event's PERF_FORMAT_LOST, the fds closed before included) beyond those
 * its PERF_RECORD_LOST records said, to the session (pm_ses_lost_end()):
 * a ring full at the end never gets the write that would say them.
 */
void pm_att_lost_end(struct session *s);

/* Stop every event; then close them, the rings and the processes' pidfds. */
void pm_att_disable(struct session *s);
void pm_att_close(struct session *s);

#endif
