/*
 * session: the state of one recording session or replay, shared by the
 * loop (record.c) and its modules (attach, capture, profbuild, the profile
 * sources), and feed(), the one entry to processing, live and at replay.
 * Internal to lib/: cmd/ sees only record.h.
 *
 * Each record goes through pm_ses_feed(): the registry learns mappings,
 * a sample goes to the profile source of its event (source.h), which
 * walks its stack with pm_ses_walk(), and, live with --raw, the record
 * and what was read for it go into the capture.
 */
#ifndef PM_SESSION_H
#define PM_SESSION_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "events/events.h"
#include "base/idtab.h"
#include "base/outfile.h"
#include "perf/rec.h"
#include "session/record.h"
#include "session/registry.h"
#include "session/srcctx.h"
#include "profile/stacks.h"
#include "unwind/unwind.h"
#include "base/util.h"

/*
 * Events: the user's (-e, the CPU source's, first), then those the other
 * sources add (the creation probe and the allocation probe: one each per Go
 * binary, four binaries).
 */
#define PM_SES_EVT_MAX (PM_EVT_MAX + 8)
#define PM_SES_KERNEL_MAP (PM_STACKS_NO_MAP - 1) /* frames: stack frames in the kernel */
/* frames a profile source makes itself (source.h: location, stack_labels), by its index */
#define PM_SES_SRC_MAP(i) (PM_STACKS_NO_MAP - 32 - (uint32_t)(i))
/*
 * pmuprof's own PERF_RECORD_LOST at the end (pm_ses_lost_end()), told by
 * an id no event has: the records lost that no kernel LOST record said,
 * or (count 0) a kernel that could not count them.  A capture keeps it, so
 * that a replay counts what its live run counted.
 */
#define PM_SES_LOST_END UINT64_MAX
#define PM_SES_LOST_END_UNKNOWN (UINT64_MAX - 1)

struct pm_maps;
struct pm_stacks;
struct pm_gor;
struct pm_mlog;
struct pm_slog;
struct pm_data_writer;
struct pm_attach; /* perf/attach.h */

struct session {
	const struct pm_record_cfg *cfg;
	struct pm_record_result *res;
	/*
	 * With intervals: res's counts when the interval began (record.c's
	 * cut), so that an interval's profile says its own (profbuild.c)
	 */
	struct {
		uint64_t samples, lost, throttled, cut, foreign;
	} ivl0;
	bool attach, replay;
	pid_t cmd_pid;           /* the command launched, 0 when attached */
	/* a launched command: a source's breakpoint in it (pm_target_break()), 0 none */
	uint64_t cmd_break;
	void (*cmd_break_fn)(struct pm_srcctx *c, pid_t pid);
	struct pm_srcctx *cmd_break_src; /* the source that asked (pm_sc_break()) */
	const char *cmd_break_what; /* its warnings' prefix: the option */
	/* the events: spec and attr i; attr 0 gives the record layout */
	struct pm_evt_spec spec[PM_SES_EVT_MAX];
	struct perf_event_attr attr[PM_SES_EVT_MAX];
	size_t nev;
	size_t nuser;            /* the user's events, the first nuser (the CPU source's) */
	uint8_t src[PM_SES_EVT_MAX]; /* the source of each event: its index in pm_sources[] */
	int kind[PM_SES_EVT_MAX];    /* what the event is to its source */
	/*
	 * live: event i opens CPU-wide (pid -1) by pm_att_cpuwide(), so that
	 * its source can close it (a uprobe's traps gone) and open it again;
	 * per thread a dummy software event stands in its place
	 */
	bool cpuwide[PM_SES_EVT_MAX];
	/* each source's context: its state, its values' offset (pm_src_ctx()) */
	struct pm_srcctx sctx[PM_SES_SRC_MAX];
	size_t nvalues;          /* values per stack, every source's */
	struct pm_idtab ev_of;   /* several events: event id -> its index */
	struct pm_rec_layout layout;
	int ip_idx, sp_idx, bp_idx;

	/* perf/attach.c: the events opened, the rings, the processes, whose records count */
	struct pm_attach *att;

	/* processing: what feed() and the profile use */
	struct pm_reg *reg;
	struct pm_maps *maps;    /* the registry's */
	struct pm_stacks *stacks;
	struct pm_gor *gor;      /* goroutines: NULL when off (replay) */
	uint64_t pcs[PM_REG_MAX_FRAMES];
	uint32_t ids[PM_SC_MAX_IDS];
	uint64_t chain[PERF_MAX_STACK_DEPTH + 8];
	uint64_t kchain[PERF_MAX_STACK_DEPTH + 8]; /* frames: the kernel part of the callchain */
	pid_t unw_pid;                             /* frames: whose memory read_mem reads */
	uint32_t cut_frame, limit_frame;
	uint64_t complete, bad_records;
	uint64_t lost_said;      /* live: the records lost that PERF_RECORD_LOST said */
	uint64_t t_start;
	uint64_t t0_wall;        /* live, --raw: the capture's start time, the profile's too */
	uint64_t duration_ns;    /* live: the recording's, as its profile has it (0 until then) */

	/* capture (live, --raw) and replay: capture.c */
	/*
	 * --raw: the target memory the sample in progress read, as MEM entries
	 * (datafile.h): logged live, served at replay, so that a replay
	 * crosses the same stack switches and reads the same goroutines
	 */
	bool mlog_on;
	struct pm_mlog *mlog;
	struct pm_data_writer *cap;
	int cap_err;
	const struct pm_owner *owner; /* of the output files: the sudo user, else NULL */
	struct pm_owner sudo_user;
	/*
	 * a source's snapshot in progress (pm_cap_snap_begin()): its reads
	 * logged there live (--raw), served from there at replay; NULL when none
	 */
	struct pm_slog *snap;
	/* replay: the SNAPMEM parts of the next snapshot, joined */
	uint8_t *snap_buf;
	size_t snap_len, snap_cap;
	uint64_t snap_bytes, snap_count; /* live: the snapshots' bytes in the capture, and how many */
	uint64_t keep;                /* stack bytes the last sample needs, UINT64_MAX = all */
	uint64_t vpcs[PM_REG_MAX_FRAMES]; /* the check walk over a cut copy */
};

/* A sample's stack walked (pm_ses_walk(), struct pm_walk in srcctx.h): s->pcs[0..n), s->kchain[0..nk). */
void pm_ses_err(struct pm_record_result *res, enum pm_record_err err, const char *fmt, ...)
	PM_PRINTF(3, 4);
/* Attr 0 is final: the record layout, and (live, --raw) the capture begins. */
void pm_ses_layout(struct session *s);
/* Unwind @smp: the user stack into s->pcs, the kernel's into s->kchain. */
void pm_ses_walk(struct session *s, const struct pm_rec_sample *smp, struct pm_walk *w);
/*
 * The goroutine's frames of @smp, walked into @w (its first @npcs pcs),
 * appended to s->ids[0..n) by pm_gor_sample() when the inspector is on
 * and the sample has R14; the new count.  Live with --raw, a stack copy
 * the inspector read is kept whole (s->keep).
 */
size_t pm_ses_gor_sample(struct session *s, const struct pm_rec_sample *smp,
			 const struct pm_walk *w, size_t npcs, size_t n);
/*
 * The frames of @smp, walked into @w, as ids in s->ids: the kernel's, the
 * user's (a return address equal to the one below is the same frame: a
 * recursion), the cut marker where the walk did not complete (counted),
 * then the goroutine's (pm_gor_sample(): id, labels, creators).  Returns
 * how many.  Live with --raw, it also decides how much of the sample's
 * stack copy the capture keeps (s->keep): what the walk read of it, all
 * of it where the goroutine inspector read it (pm_ses_gor_sample()).
 */
size_t pm_ses_stack_ids(struct session *s, const struct pm_rec_sample *smp,
			const struct pm_walk *w);
/* srcctx.h's pm_sc_user_ids(): the user frames s->pcs[from..w->n) into ids[k..), the cut marker. */
size_t pm_ses_user_ids(struct session *s, const struct pm_walk *w, size_t from, uint32_t *ids,
		       size_t k);
/*
 * The one entry to processing, live and at replay: @h is the record's
 * bytes (what the capture stores), @r its decoding.
 */
void pm_ses_feed(struct session *s, const struct perf_event_header *h, const struct pm_rec *r);
/* Start processing: registry, stacks, the sources' state. */
/*
 * Live, after the last drain: @n records lost that no PERF_RECORD_LOST
 * said (or @unknown: the kernel cannot count them), fed as one record.
 */
void pm_ses_lost_end(struct session *s, uint64_t n, bool unknown);

void pm_ses_processing(struct session *s);
/*
 * Host-wide, at a cut (the stacks all 0): the registry, the maps and the
 * stacks made anew, the goroutine inspector freed (the caller makes it
 * again), so that the processes that came and went leave nothing behind.
 * The sources keep their state (host-wide: the CPU source, which has none).
 */
void pm_ses_renew(struct session *s);
/* What processing and the profile use; shared by the live session and replay. */
void pm_ses_release(struct session *s);

#endif
