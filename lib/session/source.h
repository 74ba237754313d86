/*
 * source: a profile source, one kind of profile the recording session
 * takes, and the table of them.  Today: CPU sampling (src_cpu.c, the
 * events of -e) and the probe on goroutine creation of --creators
 * (src_creation.c: its samples feed the goroutine inspector
 * and make no sample of the profile), the allocations the Go runtime
 * samples of --alloc (src_alloc.c), the live heap of --inuse (src_inuse.c:
 * no events, the runtime's records read by a timer and at the end), the
 * goroutine wall-clock snapshots of
 * --wall (src_wall.c: no events, a timer), the contended locks of
 * --locks (src_locks.c) and the off-CPU time of --off-cpu (src_offcpu.c:
 * its switch records through record()).
 *
 * A source says what it opens (its events, pm_sc_add_event(): the loop opens every event on every thread and CPU, and drains them all),
 * consumes the samples of its events, and says what it adds to the
 * profile: sample types, comments, and per stack its samples, with their
 * values and labels.  Every hook may be NULL but sample.  Each hook gets
 * the source's context (srcctx.h): its state, its values' offset, its map
 * id, and the session's services as functions; a source never sees the
 * session's fields (it does not include session.h).  Adding a kind of
 * profile is one src_NAME.c with its struct pm_source, and one entry in
 * pm_sources[] (sources.c: the table is declared here, for the loop, and
 * defined beside the sources).
 *
 * The CPU source is first: its events are the first pm_sc_nuser(), the user's
 * (none with --alloc and no -e), and attr 0 gives the record
 * layout.  A capture does not say which source
 * an event past them is: at replay, the first source whose claim() takes
 * it owns it.
 */
#ifndef PM_SOURCE_H
#define PM_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct session;
struct pm_srcctx;
struct perf_event_attr;
struct pm_profile;
struct pm_prof_label;
struct pm_rec_sample;
struct pm_rec;
struct pm_evt_spec;
struct pm_stack_frame;
struct pm_data_snap;

struct pm_source {
	const char *name;
	/*
	 * its state in each session, zeroed: c->state; made when the
	 * session first asks for its context (configure, live)
	 */
	size_t state_size;
	/* Live, first: check and take its options; 0 or -1 after pm_sc_err(). */
	int (*configure)(struct pm_srcctx *c);
	/*
	 * Live, the targets known (pm_sc_next_exe()): add its events with
	 * pm_sc_add_event(); 0 or -1 after pm_sc_err().
	 */
	int (*add_events)(struct pm_srcctx *c);
	/*
	 * Its events fire at the program's own rate, not at -F/-c's: the
	 * ring keeps room for 512 of their samples.
	 */
	bool unrated;
	/*
	 * Its events' samples carry PERF_SAMPLE_RAW (a tracepoint's fields):
	 * every event of the session gets it, one record layout for all.
	 */
	bool raw;
	/*
	 * Its records must be processed before every record younger than
	 * them, whichever ring holds it: the drain then leaves the newest
	 * (HOLD_NS) for the next pass, by when every ring shows what came
	 * before them.
	 */
	bool ordered;
	/*
	 * Its events log every goroutine's creation: when it has events, the
	 * goroutine inspector takes creators from that log alone
	 * (pm_gor_probed(); pm_src_creations_logged()).
	 */
	bool logs_creations;
	/* Live: the attr of its event @e, as events.c made it; adjust it. */
	void (*adjust_attr)(struct pm_srcctx *c, size_t e, struct perf_event_attr *a);
	/*
	 * Replay: does it own event @e, past the CPU's (@name: its EVENT
	 * record's; NULL before that record)?  Sets its kind (pm_sc_set_kind()).
	 */
	bool (*claim)(struct pm_srcctx *c, size_t e, const char *name);
	/*
	 * Processing starts (its state zeroed): set it up; ends: free what its
	 * state holds (the state itself is source.c's).
	 */
	void (*begin)(struct pm_srcctx *c);
	void (*end)(struct pm_srcctx *c);
	/* Values it adds to each stack (c->val_off the first). */
	size_t (*nvalues)(struct pm_srcctx *c);
	/* A sample of its event @e, accepted (one per thread's event set). */
	void (*sample)(struct pm_srcctx *c, size_t e, const struct pm_rec_sample *smp);
	/*
	 * A record of its event @e other than a sample, that the session does
	 * not consume itself (PERF_RECORD_SWITCH of attr.context_switch) or
	 * not alone (PERF_RECORD_EXIT), accepted as its samples are.
	 */
	void (*record)(struct pm_srcctx *c, size_t e, const struct pm_rec *r);
	/*
	 * Live: work of its own at a rate of its own (snapshots of the
	 * target), not driven by events.  The loop calls it after each drain
	 * with @now (the events' clock, CLOCK_MONOTONIC); it does what is due
	 * and returns when it wants to be called next (0 = never), which
	 * bounds the loop's poll.
	 */
	uint64_t (*timer)(struct pm_srcctx *c, uint64_t now);
	/*
	 * Replay: the capture's record of a snapshot its timer took (of type
	 * snap_type: WALL, INUSE), its reads ready (pm_cap_snap_begin()
	 * serves them): take it again, through the same code as live.
	 */
	uint32_t snap_type;
	void (*snapshot)(struct pm_srcctx *c, const struct pm_data_snap *sn);
	/*
	 * Frames it makes itself, of map PM_SES_SRC_MAP(its index) (markers,
	 * label tags): the pprof location of @f, 0 for none.
	 */
	uint64_t (*location)(struct pm_srcctx *c, struct pm_profile *p, const struct pm_stack_frame *f);
	/*
	 * Labels it keeps in frames of its own at the root of a stack (ids,
	 * *n of them): drop them from *n and write the labels into @out (at
	 * most @max).  Returns the labels written.  Called before the
	 * goroutine inspector's (whose tag frame is then the root).
	 */
	size_t (*stack_labels)(struct pm_srcctx *c, const uint32_t *ids, size_t *n,
			       struct pm_prof_label *out, size_t max);
	/*
	 * The profile, first: its sample types, period, descriptions; it may
	 * still add stacks (and frames): --inuse's last read.
	 */
	void (*profile_head)(struct pm_srcctx *c, struct pm_profile *p);
	/* The profile's comments after the session's own (lost, cut, attached). */
	void (*profile_tail)(struct pm_srcctx *c, struct pm_profile *p);
	/*
	 * An interval ended, its profiles built (the agent's cuts): the counts
	 * its comments give begin again, so that each interval says its own.
	 */
	void (*cut)(struct pm_srcctx *c);
	/*
	 * One aggregated stack: its samples from @v (at its values), at the
	 * locations @locs, with the labels lab[0..nlab) (room for one more).
	 */
	void (*profile_stack)(struct pm_srcctx *c, struct pm_profile *p, const uint64_t *locs,
			      size_t n, const int64_t *v, struct pm_prof_label *lab, size_t nlab);
};

extern const struct pm_source *const pm_sources[];
extern const size_t pm_nsources;

/* The index of @src in pm_sources[]. */
size_t pm_src_index(const struct pm_source *src);
/* Source @i's context in @s (srcctx.h): its state made, zeroed, when it is first asked for. */
struct pm_srcctx *pm_src_ctx(struct session *s, size_t i);
/* Does @src own an event? */
bool pm_src_has_events(const struct session *s, const struct pm_source *src);
/* Does a source that logs_creations own an event? */
bool pm_src_creations_logged(const struct session *s);

/* Every source's configure(), then (pm_src_add_events) add_events(), in table order. */
int pm_src_configure(struct session *s);
int pm_src_add_events(struct session *s);
/* Live: event @e's attr, tuned by its source (adjust_attr). */
void pm_src_adjust_attr(struct session *s, size_t e, struct perf_event_attr *a);
/* Replay: event @e past the user's, owned by the first source that claims it. */
void pm_src_claim(struct session *s, size_t e, const char *name);
/* Processing starts: the sources' state and values (s->nvalues, their val_off); and ends. */
void pm_src_begin(struct session *s);
void pm_src_end(struct session *s);

/* A sample of event @e, to its source; a record other than a sample, if it takes them. */
void pm_src_sample(struct session *s, size_t e, const struct pm_rec_sample *smp);
bool pm_src_takes_records(const struct session *s, size_t e);
void pm_src_record(struct session *s, size_t e, const struct pm_rec *r);
/* Live: the sources' timers (after a drain): when the soonest wants the next call, 0 none. */
uint64_t pm_src_timers(struct session *s, uint64_t now);
/* Replay: a snapshot record, to the source of its type. */
void pm_src_snapshot(struct session *s, const struct pm_data_snap *sn);
/* The profile: the hooks of every source, in table order (profbuild.c). */
void pm_src_profile_head(struct session *s, struct pm_profile *p);
void pm_src_profile_tail(struct session *s, struct pm_profile *p);
/* An interval ended: every source's cut(). */
void pm_src_cut(struct session *s);
/* A frame of map PM_SES_SRC_MAP(@i): its location (0 none). */
uint64_t pm_src_location(struct session *s, size_t i, struct pm_profile *p,
			 const struct pm_stack_frame *f);
/* The labels every source keeps at the root of a stack (stack_labels): how many written. */
size_t pm_src_stack_labels(struct session *s, const uint32_t *ids, size_t *n,
			   struct pm_prof_label *out, size_t max);
/* One aggregated stack, its values @v (every source's), to every source's profile_stack. */
void pm_src_profile_stack(struct session *s, struct pm_profile *p, const uint64_t *locs, size_t n,
			  const int64_t *v, struct pm_prof_label *lab, size_t nlab);

#endif
