/*
 * attach (the session's side): the session's events handed to perf/attach.c
 * as an event set, and the calls the loop, the session and the sources
 * make about the targets and their events, with the session.
 *
 * The set is built from the session (evset_of()): s->spec and s->attr,
 * each event's flags from its profile source (unrated, raw, ordered) and
 * s->cpuwide, the options' sampling, and two callbacks: a source's
 * adjust_attr, and each event id into s->ev_of (and, for an id that comes
 * after the capture began, into the capture).  What the attach reports
 * comes back here: its errors into s->res, its numbers into the result,
 * the losses it counted to pm_ses_lost_end().  s->att is perf/attach.c's
 * state; what needs no session is called there directly.
 * Functions returning 0 or -1 leave the error in s->res.
 */
#ifndef PM_ATTACH_H
#define PM_ATTACH_H

#include "perf/attach.h"
#include "session/session.h"

/* Check -p and -t against /proc, before anything is opened. */
int pm_att_check_targets(struct session *s);
/* The user's events (s->spec): pm_attach_resolve_hardware(), under --strict. */
int pm_att_resolve_hardware(struct session *s);
/* ... and pm_attach_resolve_kernel(), unless --kernel. */
void pm_att_resolve_kernel(struct session *s);
/*
 * Launch: every event on every CPU for @pid and, inherited, its threads;
 * host-wide (@pid -1): for every process, enabled at once.  Then the
 * record layout (pm_ses_layout(): with --raw, the capture begins).
 */
int pm_att_open_events(struct session *s, pid_t pid);
/* Attach: open on every target thread, enable them all; the layout, then the maps loaded. */
int pm_att_attach_all(struct session *s);
/*
 * After the last drain: the records lost that the kernel counted beyond
 * those its PERF_RECORD_LOST records said, to pm_ses_lost_end() (a ring
 * full at the end never gets the write that would say them).
 */
void pm_att_lost_end(struct session *s);
/* Close every event, ring and pidfd; then the uprobes defined for the events go. */
void pm_att_close(struct session *s);

/* For the sources and feed(): perf/attach.c's of s->att (pm_att_cpuwide(): error in s->res). */
size_t pm_att_nprocs(const struct session *s);
pid_t pm_att_pid(const struct session *s, size_t i);
int pm_att_cpuwide(struct session *s, size_t e, bool on);
uint64_t pm_att_cpuwide_hits(const struct session *s, size_t e);
bool pm_att_accept(struct session *s, uint64_t id, uint32_t tid);
bool pm_att_thread_born(struct session *s, uint64_t id, uint32_t tid);
void pm_att_thread_gone(struct session *s, uint64_t id, uint32_t tid);

#endif
