/*
 * goroutine: which goroutine a sample ran for, read from outside.
 *
 * From a sample's pid, tid, R14 (the g register of Go 1.17+ on amd64) and
 * SP, find the user goroutine (g -> g.m -> m.curg, so samples on g0 or
 * gsignal count for the goroutine they serve), and read its goid, gopc
 * (the `go` statement that created it), startpc, parentGoid (1.21+), the
 * pprof labels the program set (runtime/pprof Do / SetGoroutineLabels) and,
 * when the process runs with GODEBUG=tracebackancestors=N, its ancestors
 * (the stacks of the goroutines that created it, transitively).
 *
 * Struct offsets come from the binary's DWARF (runtime.g, runtime.m) when
 * present, else from a table per Go version (1.19 .. 1.27); any other
 * version turns the inspector off for that process with one pm_warn line.
 * Every candidate g is validated (g.m != 0, m.procid == tid, g is one of
 * m.g0, m.gsignal, m.curg, SP inside the stack of a user g); a thread whose
 * R14 is not g (C code, ABI0 assembly) falls back to the m last seen on it.
 * All target reads are bounded and batched (process_vm_readv), and made
 * once per drain pass (pm_gor_pass).
 *
 * Profile representation (what record writes, what report strips):
 *   - numeric label "goroutine" = goid; string labels = the pprof labels;
 *   - creator frames are pprof locations in a mapping named "[creators]"
 *     whose function names end in " [creator]" (system_name is the plain
 *     name); they sit rootward of the goroutine's own stack, the nearest
 *     creator first: the creating goroutine's stack at the `go` statement,
 *     then its creator's, ...; without ancestors, one frame per level for
 *     the `go` statement alone.
 */
#ifndef PM_GOROUTINE_H
#define PM_GOROUTINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/stacks.h"
#include "unwind/unwind.h"

struct pm_maps;
struct pm_sym;
struct pm_profile;
struct pm_prof_label;

/* pm_stacks map ids the inspector uses for its own frames */
#define PM_GOR_MAP_CREATOR (PM_STACKS_NO_MAP - 16)
#define PM_GOR_MAP_TAG (PM_STACKS_NO_MAP - 17)

#define PM_GOR_CREATORS_MARK " [creator]"
#define PM_GOR_CREATORS_MAPPING "[creators]"
#define PM_GOR_MAX_LABELS 16
#define PM_GOR_ALLGS_MAX (1u << 20) /* entries of runtime.allgs read at most */
#define PM_GOR_MAX_ANCESTORS 32
#define PM_GOR_MAX_ANC_PCS 64

enum pm_gor_labels_kind {
	PM_GOR_LABELS_NONE = 0,
	PM_GOR_LABELS_MAP,   /* <= 1.23: *labelMap -> map[string]string (hmap) */
	PM_GOR_LABELS_SLICE, /* 1.24+: *labelMap -> []struct{key, value string} */
};

/* Offsets in bytes; 0 = absent (g.stack and m.g0 are at 0 in every version). */
struct pm_gor_layout {
	int minor;             /* Go 1.<minor>; 0 when from DWARF without a version */
	bool from_dwarf;
	uint32_t g_size;       /* bytes of runtime.g to read (covers every field below) */
	uint32_t g_m, g_status, g_goid, g_parent_goid, g_gopc, g_startpc, g_ancestors, g_labels;
	uint32_t g_sched_sp, g_sched_pc, g_sched_bp; /* g.sched (a gobuf): its sp, pc, bp */
	uint32_t g_waitsince, g_waitreason; /* wall snapshots: int64, uint8 (0 = not known) */
	uint32_t g_trackseq; /* g.trackingSeq (uint8): bumped each time it stops running */
	uint32_t m_size;
	uint32_t m_procid, m_gsignal, m_curg;
	enum pm_gor_labels_kind labels;
};

/* "go1.19.8" -> the table layout.  0, -ENOTSUP for a version not in the table. */
int pm_gor_layout_version(const char *version, struct pm_gor_layout *out);
/*
 * The layout from the DWARF of the binary at @path (runtime.g, runtime.m);
 * @version (may be "" or NULL) picks the labels representation.  0, -ENOENT
 * when there is no usable DWARF.
 */
int pm_gor_layout_dwarf(const char *path, const char *version, struct pm_gor_layout *out);
/*
 * Read the DWARF of the Go binary at @path now (nothing for another file):
 * the next pm_gor_layout_dwarf() of that same file is then cheap.
 */
void pm_gor_layout_warm(const char *path);

/* Reads @len bytes of @pid at @addr; 0 when all were read. */
typedef int (*pm_gor_read_fn)(void *arg, pid_t pid, uint64_t addr, void *buf, size_t len);

struct pm_gor_opts {
	unsigned creators;   /* levels of creators; 0 = none */
	pm_gor_read_fn read; /* NULL = process_vm_readv (batched) */
	void *read_arg;
	/* a replay: what the live run knew (PM_GOR_WATCH_ADDR) comes from opts.read */
	bool replay;
	/*
	 * The goroutine caches' entries: 1 << cache_bits (0, or past the
	 * default of 8192: the default); a fuzz target's few need few
	 */
	unsigned cache_bits;
};

struct pm_gor_label {
	const char *key, *value;
};

struct pm_gor_ancestor {
	int64_t goid;
	uint64_t gopc;
	size_t npcs;
	uint64_t pcs[PM_GOR_MAX_ANC_PCS];
};

/* One sample's goroutine.  Strings are borrowed from the pm_gor. */
struct pm_gor_info {
	uint64_t g;            /* the user goroutine (m.curg) */
	int64_t goid;
	uint64_t gopc, startpc;
	int64_t parent_goid;   /* 0 when unknown (< 1.21) */
	bool on_system_stack;  /* the sample ran on g0 or gsignal */
	bool late;             /* read after it left its m; its stack still matched */
	bool dead;             /* ... and it had exited (labels are cleared then) */
	bool stale;            /* ... and its stack's root differs from the sample's copy:
				* the goroutine it holds may be another */
	bool root_only;        /* ... and the sample's copy did not reach its root: only a
				* walk that starts where it started confirms it */
	uint64_t stack_lo, stack_hi; /* its stack [lo, hi) when read */
	uint64_t sched_bp;     /* g.sched.bp when read: its BP where it last switched */
	size_t nlabels;
	const struct pm_gor_label *labels;
	size_t nancestors;     /* with GODEBUG=tracebackancestors */
	const struct pm_gor_ancestor *ancestors;
};

struct pm_gor;
struct pm_gor *pm_gor_new(const struct pm_gor_opts *o);
void pm_gor_free(struct pm_gor *g); /* NULL is fine */

/*
 * A new drain pass begins: target reads made before it are not reused.
 * Within a pass the same range (pid, address, length) is read once: every
 * sample of the pass predates the pass, so the first read is as recent as
 * any later one.  Reads through opts.read (captures, replay) are never
 * reused.  NULL is fine.
 */
void pm_gor_pass(struct pm_gor *g);

/*
 * The offsets the unwinder needs to cross the runtime's stack switches
 * (pm_unw_input.go) for @pid, from the layout pm_gor_sample uses: found
 * from the first Go mapping among @pcs, or, when @npcs is 0, only if
 * already found.  true when known.
 */
bool pm_gor_unw_abi(struct pm_gor *g, struct pm_maps *maps, pid_t pid, const uint64_t *pcs,
		    size_t npcs, struct pm_unw_goabi *out);

/*
 * Use @l for @pid (instead of finding its binary; tests, fuzzing).  Its
 * g_size and m_size are recomputed from the offsets; -EINVAL (and the
 * inspector off for @pid) when a field lies beyond what one read takes.
 */
int pm_gor_set_layout(struct pm_gor *g, pid_t pid, const struct pm_gor_layout *l);

/*
 * The goroutine of a sample, with the layout set for @pid.  0 (fills *out),
 * -ENOENT when no user goroutine runs (scheduler, idle, a non-Go thread),
 * -EINVAL when nothing validates, -ESTALE when the goroutine of R14 has
 * left its m since and its stack no longer matches @stack (the sample's
 * copy of [sp, sp + stack_len), or the copy does not reach its root),
 * -ENOTSUP when the pid has no layout.
 */
int pm_gor_inspect(struct pm_gor *g, pid_t pid, pid_t tid, uint64_t r14, uint64_t sp,
		   const uint8_t *stack, size_t stack_len, struct pm_gor_info *out);

/*
 * record's hook, for one sample walked (@w): find its pid's layout (from
 * the first Go mapping among its pcs; a pm_warn line when the version is
 * unknown), inspect, and append to @ids (n used of @cap) the creator
 * frames and one tag frame that carries the labels.  Returns the new
 * count.
 */
struct pm_gor_walk {
	pid_t pid, tid;
	uint64_t time;         /* the sample's, on the events' clock */
	uint64_t r14, sp;      /* its g register (R14) and stack pointer */
	const uint8_t *stack;  /* its copy of [sp, sp + stack_len) */
	size_t stack_len;
	const uint64_t *pcs;   /* the unwinder's walk of it: pcs[0..npcs) */
	size_t npcs;
	unsigned status;       /* PM_UNW_* */
	uint64_t switch_bp;    /* pm_unw_switch_bp() */
};
size_t pm_gor_sample(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st,
		     const struct pm_gor_walk *w, uint32_t *ids, size_t n, size_t cap);

/*
 * What the last pm_gor_sample() found: 0 a user goroutine (*sys: the
 * sample ran on g0 or gsignal for it), -ENOENT no goroutine runs on the
 * thread (the scheduler, an idle M: m.curg is 0), another -errno when the
 * goroutine could not be known, 1 when the process or the stack is not Go's.
 */
int pm_gor_last(const struct pm_gor *g, bool *sys);
/*
 * The goroutine the last pm_gor_sample() found (its g and id): true when
 * one alive is known (src_wall keeps that sample's stack for it).
 */
bool pm_gor_last_g(const struct pm_gor *g, uint64_t *gp, int64_t *goid);
/*
 * Did the last pm_gor_sample() compare the sample's stack copy, to its
 * root, with the target's stack (a goroutine read after it left its
 * thread)?  Then a capture keeps the whole copy, so that a replay decides
 * the same.
 */
bool pm_gor_used_copy(const struct pm_gor *g);
/*
 * Creators from outside: record's probe on goroutine creation (in
 * runtime.newproc.func1, right after newproc1 returns: the new g and its
 * goid, the creating g and its goid, read by the kernel at the probe), with
 * @pcs the kernel's frame-pointer callchain there, leaf first (newproc.func1,
 * systemstack, newproc, then the creating goroutine's stack at its go
 * statement).  Creations must be fed in time order, each before every
 * sample taken after it (record.c's drain holds back the newest records).
 * From the first one on, the process's samples take their goroutine from
 * this log (see struct gent in goroutine-int.h): goid and creator chain
 * exact for goroutines of any lifetime; labels, read from the target,
 * only while the g still holds that goroutine.  What cannot be known is
 * marked with a frame, PM_GOR_CREATOR_UNKNOWN where a chain stops at a
 * creator not known (a goroutine made before the probe: what the runtime
 * recorded, its go statement, is one level), PM_GOR_GOROUTINE_UNKNOWN
 * where the goroutine is not known, and counted (pm_gor_creator_counts).
 * 0, -EINVAL on a bad creation.
 */
struct pm_gor_creation {
	uint64_t newg, cg; /* the new g, the creating g (m.curg) */
	int64_t goid, cgoid;
	uint64_t stack_hi; /* the new g's stack.hi, 0 = not known */
	uint64_t time;     /* the record's time (the events' clock, CLOCK_MONOTONIC) */
};
int pm_gor_created(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st, pid_t pid,
		   const struct pm_gor_creation *c, const uint64_t *pcs, size_t npcs);
/*
 * The creation probe is on from the start: samples before its first
 * record are judged by the log too (their goroutine is unknown where the
 * log and the runtime's list cannot say), never read late.
 */
void pm_gor_probed(struct pm_gor *g);
/*
 * Live, the creation probe stops (@open false) or starts again (true)
 * watching at @time (the events' clock; a budget closes it part of the
 * time: src_creation.c).  A g the log names may host a goroutine made
 * unseen since: for a sample after such a gap, the log's goroutine is
 * taken only while its g still holds it (its goid read now), else the
 * goroutine is not known (counted: pm_gor_unwatched()).  Whether a gap
 * lay between is logged through opts.read (PM_GOR_WATCH_ADDR), so that a
 * replay judges the same.
 */
void pm_gor_watching(struct pm_gor *g, uint64_t time, bool open);
/* Samples whose goroutine was not known because the probe did not watch all along. */
uint64_t pm_gor_unwatched(const struct pm_gor *g);

/*
 * A read of 8 bytes at this address (never a target's: below any mapping)
 * answers the events' clock now (CLOCK_MONOTONIC, ns): an opts.read
 * callback must answer it, and a capture log it, so that a replay knows
 * when the live run read the runtime's list of goroutines.
 */
#define PM_GOR_CLOCK_ADDR 8
/*
 * A read of 8 bytes here answers what @buf holds (1: the probe watched
 * all along, 0: a gap, pm_gor_watching()): an opts.read callback logs it
 * as given, and a replay's answers it from that log.
 */
#define PM_GOR_WATCH_ADDR 4088

#define PM_GOR_CREATOR_UNKNOWN "[creator unknown]"
#define PM_GOR_GOROUTINE_UNKNOWN "[goroutine unknown]"

/*
 * Samples whose creator chain was complete (to the runtime, or
 * opts.creators levels), partial, unknown; samples whose goroutine was not
 * known; and whose labels were not.
 */
/*
 * Creations processed after a sample taken later than them (the drain's
 * ordering window exceeded): the samples in between on their g may name
 * the g's previous goroutine.
 */
uint64_t pm_gor_late_creations(const struct pm_gor *g);
void pm_gor_creator_counts(const struct pm_gor *g, uint64_t *complete, uint64_t *partial,
			   uint64_t *unknown, uint64_t *gor_unknown, uint64_t *labels_unknown);

/*
 * Without the creation probe: samples of goroutines, those whose goroutine
 * was not known (no goroutine label; "[goroutine unknown]" with creators), of which on the system stack
 * without the sample's evidence that m.curg read later served it, and
 * whose walk started elsewhere than the g's goroutine did; and those on
 * the system stack whose goroutine was found by the stack it switched
 * from.  Of process @pid's samples; 0: of all.
 */
void pm_gor_default_counts(const struct pm_gor *g, pid_t pid, uint64_t *all, uint64_t *unknown,
			   uint64_t *sys, uint64_t *root, uint64_t *bystack);
/*
 * An interval ended (its profiles built): the counts above, the creator
 * counts and the label sets cut begin again from 0.
 */
void pm_gor_counts_zero(struct pm_gor *g);

/*
 * Wall snapshots (src_wall.c): goroutines read from the runtime's list
 * rather than met in a sample.  pm_gor_layout_of(): @pid's layout, found
 * from the first Go mapping among @pcs as for a sample (NULL when none;
 * *path, if given, the binary it came from).  pm_gor_all(): the g of every
 * goroutine the runtime made (runtime.allgs, dead ones too) in a new array,
 * up to its first entry that cannot be a g; -ENOENT when the list cannot be
 * found or read.  pm_gor_frames_of():
 * append to @ids the creator frames and the tag frame (goid, labels) of
 * the goroutine on @gp whose runtime.g (the layout's g_size bytes) is
 * @gb, read at @time (the events' clock).
 */
const struct pm_gor_layout *pm_gor_layout_of(struct pm_gor *g, struct pm_maps *maps, pid_t pid,
					     const uint64_t *pcs, size_t npcs, const char **path);
int pm_gor_all(struct pm_gor *g, pid_t pid, uint64_t **gs, size_t *n);
/*
 * The times pm_gor_all() took less of runtime.allgs than its length said
 * (a length over the capacity or PM_GOR_ALLGS_MAX; an entry that cannot
 * be a g, and the rest after it), and the most entries it left out at once.
 * This and pm_gor_labels_cut() say 0 for a NULL @g (a capture replayed).
 */
void pm_gor_allgs_cut(const struct pm_gor *g, uint64_t *times, uint64_t *most);
/*
 * Label sets read, and those read cut: more than PM_GOR_MAX_LABELS labels
 * (the first kept), a key over 128 or a value over 512 bytes (a prefix
 * kept), a string over 1 MB (left out).
 */
void pm_gor_labels_cut(const struct pm_gor *g, uint64_t *sets, uint64_t *cut);
size_t pm_gor_frames_of(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st, pid_t pid,
			uint64_t gp, const uint8_t *gb, uint64_t time, uint32_t *ids, size_t n,
			size_t cap);

/* build_profile's hooks. */
static inline bool pm_gor_is_frame(const struct pm_stack_frame *f)
{
	return f->map_id == PM_GOR_MAP_CREATOR || f->map_id == PM_GOR_MAP_TAG;
}
/*
 * The pprof location of one of the inspector's frames; 0 for a tag frame,
 * and for a creator frame all of whose lines are what Go's tracebacks hide
 * (wrappers, runtime.goexit: gopclntab.h), unless @all_frames.
 */
uint64_t pm_gor_location(struct pm_gor *g, struct pm_profile *p, const struct pm_stack_frame *f,
			 bool all_frames);
/*
 * When the root frame of @ids (*n of them) is a tag frame, drop it and
 * write its labels into @out (at most @max).  Returns the labels written.
 */
size_t pm_gor_labels(struct pm_gor *g, const struct pm_stacks *st, const uint32_t *ids, size_t *n,
		     struct pm_prof_label *out, size_t max);

#endif
