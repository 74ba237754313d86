/*
 * srcctx: what a profile source (source.h) sees of the session -- its
 * context, handed to each of its hooks, and the session's services it
 * reaches through functions, never through the session's fields.  A
 * source includes this header and source.h, never session.h: what it
 * needs of the session is named here.
 *
 * The context holds the source's own: its state, its index in
 * pm_sources[], where its values sit in a stack's values, the map id of
 * the frames it makes itself.  The services are the few a source needs:
 * the options and targets, its events, a sample's stack walked and
 * interned, a stack added to the aggregator, reads of the target through
 * the capture (so that a replay reads the same bytes), errors.
 */
#ifndef PM_SRCCTX_H
#define PM_SRCCTX_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/util.h"
#include "events/events.h"
#include "perf/rec.h"
#include "session/record.h"
#include "unwind/unwind.h"

struct session;
struct pm_source;
struct pm_stacks;
struct pm_maps;
struct pm_map;
struct pm_sym;
struct pm_gor;
struct pm_slog;

/*
 * values per stack, every source's: the CPU source's 2 per event, and the
 * others' at most 16 in all (alloc 4, inuse 5, locks 4, off-cpu 2, wall 1);
 * pm_src_begin() stops where a source asks for more
 */
#define PM_SES_VALUES_MAX (2 * PM_EVT_MAX + 16)
#define PM_SES_SRC_MAX 8 /* profile sources (source.h) */
#define PM_SC_MAX_FRAMES 1024 /* the deepest walk of a stack (PM_REG_MAX_FRAMES) */
/* a sample's frame ids: its walk's, the kernel's, the cut marker, the goroutine's */
#define PM_SC_MAX_IDS (PM_SC_MAX_FRAMES + PERF_MAX_STACK_DEPTH + 8 + 1)

/* A source in a session: made by source.c, handed to each hook. */
struct pm_srcctx {
	void *state;      /* its state: state_size bytes, zeroed (NULL when 0) */
	size_t index;     /* in pm_sources[] */
	size_t val_off;   /* its first value in a stack's values ... */
	size_t nvalues;   /* ... and how many are its (its nvalues()) */
	uint32_t map;     /* the map id of the frames it makes itself (PM_SES_SRC_MAP) */
	bool on;          /* it works without events (pm_sc_set_on()) */
	struct session *ses; /* opaque here: reached through the functions below */
};

/* ---- the session ---- */

const struct pm_record_cfg *pm_sc_cfg(const struct pm_srcctx *c); /* NULL in some tests */
bool pm_sc_replay(const struct pm_srcctx *c);
bool pm_sc_attached(const struct pm_srcctx *c);
/* Live with --raw: the capture is being written. */
bool pm_sc_capturing(const struct pm_srcctx *c);
pid_t pm_sc_cmd_pid(const struct pm_srcctx *c); /* the launched command, 0 when attached */
/* The attached processes (none when launched). */
size_t pm_sc_nprocs(const struct pm_srcctx *c);
pid_t pm_sc_pid(const struct pm_srcctx *c, size_t i);
/*
 * The executables to probe, one per call from *@i = 0: each attached
 * process's (/proc/PID/exe, *@pid its pid) or the launched command's (*@pid
 * 0); *@path made (free it), NULL when unreadable; *@dup when an event of
 * the source probes that binary already.  false past the last.
 */
bool pm_sc_next_exe(const struct pm_srcctx *c, size_t *i, pid_t *pid, char **path, bool *dup);
/* The session's error (pm_ses_err()): the run stops with it. */
void pm_sc_err(const struct pm_srcctx *c, enum pm_record_err err, const char *fmt, ...)
	PM_PRINTF(3, 4);
const char *pm_sc_errmsg(const struct pm_srcctx *c); /* the last one, "" none */
/* A sample for the summary's count. */
void pm_sc_count_sample(const struct pm_srcctx *c);
/*
 * A source without events says it works (from begin(): at replay too):
 * its timer, snapshots and profile hooks run (source.c skips those of a
 * source that has neither).
 */
void pm_sc_set_on(struct pm_srcctx *c);
/*
 * Launched: stop the command at @addr once, after its exec, and call @fn
 * there (pm_target_break(); @what prefixes its warnings).  false when a
 * source asked already.
 */
bool pm_sc_break(struct pm_srcctx *c, uint64_t addr, void (*fn)(struct pm_srcctx *c, pid_t pid),
		 const char *what);

/* ---- its events ---- */

/* Events in all; the user's (the CPU source's), the first. */
size_t pm_sc_nev(const struct pm_srcctx *c);
size_t pm_sc_nuser(const struct pm_srcctx *c);
/* Room for more events. */
size_t pm_sc_event_room(const struct pm_srcctx *c);
bool pm_sc_owns(const struct pm_srcctx *c, size_t e);
bool pm_sc_has_events(const struct pm_srcctx *c);
const struct pm_evt_spec *pm_sc_spec(const struct pm_srcctx *c, size_t e);
const struct perf_event_attr *pm_sc_attr(const struct pm_srcctx *c, size_t e);
/* What event @e is to its source (its kind). */
int pm_sc_kind(const struct pm_srcctx *c, size_t e);
void pm_sc_set_kind(struct pm_srcctx *c, size_t e, int kind);
/* Append @spec (copied) as its event, of @kind; false when full. */
bool pm_sc_add_event(struct pm_srcctx *c, const struct pm_evt_spec *spec, int kind);
/* The CPU source: the events so far are the user's, resolved against this CPU; 0 or -1. */
int pm_sc_user_events(struct pm_srcctx *c);
/*
 * Event @e opens CPU-wide (attach.h: pm_att_cpuwide()): closed (its
 * uprobe's traps gone) and opened again by pm_sc_cpuwide_open(); its hits.
 */
void pm_sc_set_cpuwide(struct pm_srcctx *c, size_t e);
bool pm_sc_is_cpuwide(const struct pm_srcctx *c, size_t e); /* live */
int pm_sc_cpuwide_open(struct pm_srcctx *c, size_t e, bool on);
uint64_t pm_sc_cpuwide_hits(const struct pm_srcctx *c, size_t e);
/* The same for every event the source owns: -1 when one could not (pm_sc_errmsg()); their hits. */
int pm_sc_cpuwide_open_own(struct pm_srcctx *c, bool on);
uint64_t pm_sc_cpuwide_hits_own(const struct pm_srcctx *c);

/* ---- processing ---- */

/* The aggregator, the address spaces, the goroutine inspector (NULL when off). */
struct pm_stacks *pm_sc_stacks(const struct pm_srcctx *c);
struct pm_maps *pm_sc_maps(const struct pm_srcctx *c);
struct pm_gor *pm_sc_gor(const struct pm_srcctx *c);
/* The binary of mapping @m, loaded (NULL when none or not trusted). */
const struct pm_sym *pm_sc_map_sym(const struct pm_srcctx *c, const struct pm_map *m);
/* @pid's mappings from /proc (live with --raw, into the capture too). */
void pm_sc_load_maps(const struct pm_srcctx *c, pid_t pid);
/* The process whose maps lookups favour (registry.h: pm_reg_set_pid()). */
void pm_sc_lookup_pid(const struct pm_srcctx *c, pid_t pid);
/* After a stack is added: the limits on memory (registry.h). */
void pm_sc_check_limits(const struct pm_srcctx *c, unsigned status);

/* One sample's stack, walked (pm_sc_walk()): pm_sc_pcs()[0..n), the kernel's nk. */
struct pm_walk {
	struct pm_unw_input in;
	struct pm_unw_goabi goabi;
	unsigned status;         /* PM_UNW_* */
	size_t n, nk;
	pid_t pid;
	uint64_t switch_bp; /* pm_unw_switch_bp() of the walk */
};
/* The walk's pcs; the sample's frame ids (PM_SC_MAX_IDS), as the functions below fill them. */
const uint64_t *pm_sc_pcs(const struct pm_srcctx *c);
uint32_t *pm_sc_ids(const struct pm_srcctx *c);
/* session.h: pm_ses_walk(), pm_ses_stack_ids(), pm_ses_gor_sample(). */
void pm_sc_walk(const struct pm_srcctx *c, const struct pm_rec_sample *smp, struct pm_walk *w);
size_t pm_sc_stack_ids(const struct pm_srcctx *c, const struct pm_rec_sample *smp,
		       const struct pm_walk *w);
size_t pm_sc_gor_sample(const struct pm_srcctx *c, const struct pm_rec_sample *smp,
			const struct pm_walk *w, size_t npcs, size_t n);
/*
 * The walk's user frames pcs[from..n) as ids, into ids[k..): a return
 * address equal to the one below is the same frame (a recursion); then
 * the cut marker where the walk did not complete (counted).  The new k.
 */
size_t pm_sc_user_ids(const struct pm_srcctx *c, const struct pm_walk *w, size_t from,
		      uint32_t *ids, size_t k);
/* The marker frame at the root of a stack whose walk did not complete. */
uint32_t pm_sc_cut_frame(const struct pm_srcctx *c);
/*
 * Live with --raw: how much of the sample's stack copy the capture keeps:
 * @bytes (0 none), or what the walk @w of @n frames read of it.
 */
void pm_sc_keep(const struct pm_srcctx *c, uint64_t bytes);
void pm_sc_keep_walk(const struct pm_srcctx *c, const struct pm_walk *w, size_t n);
/*
 * Walk @in (a stack copy and its registers, the goroutine's saved context)
 * of @pid, reading past the copy as a snapshot's reads are (pm_sc_read()).
 */
size_t pm_sc_unwind(const struct pm_srcctx *c, pid_t pid, struct pm_unw_input *in, uint64_t *pcs,
		    size_t max, unsigned *status);
/*
 * Add a stack @ids[0..n) of @pid, @tid (0: none) with the source's values
 * @v[0..its nvalues) (the other sources' zero).
 */
void pm_sc_add_stack(const struct pm_srcctx *c, uint32_t pid, uint32_t tid, const uint32_t *ids,
		     size_t n, const int64_t *v);
/* The state of source @src (NULL when none), for the hooks sources offer each other. */
struct pm_srcctx *pm_sc_peer(const struct pm_srcctx *c, const struct pm_source *src);

/* ---- the target read through the capture (capture.h) ---- */

int pm_sc_read(const struct pm_srcctx *c, pid_t pid, uint64_t addr, void *buf, size_t len);
/* Many reads of @pid (batched live), each marked ok or not. */
struct pm_cap_rd {
	uint64_t addr;
	void *buf;
	size_t len;
	bool ok;
};
void pm_sc_readv(const struct pm_srcctx *c, pid_t pid, struct pm_cap_rd *r, size_t n);
/* A value computed live that a replay must see the same (capture.h: pm_cap_value()). */
int pm_sc_value(const struct pm_srcctx *c, pid_t pid, uint64_t key, void *buf, size_t len);
/*
 * A sample of a CPU-wide probe (pm_sc_set_cpuwide()): is its process a
 * target?  Attached: one of them; launched: the command, or a process
 * whose maps the session knows (its children, followed) -- but for a
 * capture, which loads the maps of any process before its first sample,
 * the command only.  Logged in a capture under @key.
 */
bool pm_sc_ours(struct pm_srcctx *c, const struct pm_rec_sample *smp, uint64_t key);
#define PM_CAP_KEY_LOCKS_PERIODS 16 /* src_locks.c: 16 and 24 the periods of its budget, 64 a target's */
#define PM_CAP_KEY_SNAP_CPU 32   /* a snapshot's CPU time (ns), and 40 a part of it */
#define PM_CAP_KEY_INUSE_ALIVE 48 /* src_inuse.c: the process alive (1 byte) */
#define PM_CAP_KEY_INUSE_PATH 56 /* src_inuse.c: its binary's path: length (8), then bytes (at 64) */
#define PM_CAP_KEY_ALLOC_WEIGHT 128 /* src_alloc.c: a sample's weight (its budget), 136 a target's */
#define PM_CAP_KEY_CREATION_OURS 144 /* src_creation.c: a creation a target's (CPU-wide probes) */
/*
 * The goroutine inspector's clock (goroutine.h: PM_GOR_CLOCK_ADDR) as a
 * read of @pid's memory would see it now; -1 at a replay without the reads.
 */
int pm_sc_clock(const struct pm_srcctx *c, pid_t pid, uint64_t *now);
/* A snapshot: capture.h, pm_cap_snap_begin() and pm_cap_snap_end(). */
void pm_sc_snap_begin(const struct pm_srcctx *c, struct pm_slog **log);
void pm_sc_snap_end(const struct pm_srcctx *c, uint32_t type, uint32_t flags, uint64_t time,
		    const pid_t *pids, size_t npids);

#endif
