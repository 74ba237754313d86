/*
 * attach: an event set opened on the targets -- -p/-t checked against
 * /proc, the CPUs and the rings, every event's attr, opening on the
 * launched process or on every thread of the attached ones (followed into
 * the threads they create), hardware events this CPU lacks, which of a
 * thread's event sets counts, and whether the targets have exited.
 *
 * Its input is an event set (struct pm_evset): the events' specs and
 * attrs, what each one is (CPU-wide, unrated, raw, ordered), how they
 * sample, and the callbacks through which its caller (the session) tunes
 * an attr and learns each event id.  Its state (the fds, rings, CPUs,
 * processes, and which thread each event id was opened on) is its own,
 * seen through the functions below.  Functions returning 0, -1 or -errno
 * leave their error's one line in pm_attach_error().
 */
#ifndef PM_PERF_ATTACH_H
#define PM_PERF_ATTACH_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pm_evt_spec;
struct pm_idtab;
struct pm_ring;

/* What an event of the set is, besides its spec. */
enum pm_evset_flags {
	/*
	 * Opened for every process on each CPU (pid -1) by pm_attach_cpuwide(),
	 * so that it can be closed (a uprobe's traps gone) and opened again;
	 * on each thread a dummy software event stands in its place.
	 */
	PM_EVSET_CPUWIDE = 1 << 0,
	/* It fires at the program's own rate, not at -F/-c's (ring_pages(), burst_pages()). */
	PM_EVSET_UNRATED = 1 << 1,
	/* Its samples carry PERF_SAMPLE_RAW: every event of the set gets it, one layout. */
	PM_EVSET_RAW = 1 << 2,
	/* Its records come before every younger one: enabled first, on every thread. */
	PM_EVSET_ORDERED = 1 << 3,
};

/*
 * The events to open and what opening them tells the caller.  The arrays
 * are the caller's (borrowed until pm_attach_close()): @spec may be
 * changed (kernel time under @kernel), @attr is made here.
 */
struct pm_evset {
	struct pm_evt_spec *spec;
	struct perf_event_attr *attr; /* attr 0 gives the record layout */
	const uint8_t *flags;         /* enum pm_evset_flags of each (copied) */
	size_t n;
	/* how they sample: -F and -c as given (0: not), the rate when neither */
	uint64_t freq, period, default_freq;
	uint32_t stack_size;          /* bytes of user stack per sample */
	bool kernel;                  /* --kernel: kernel stacks, the kernel's time counted */
	bool no_callchain;            /* --no-callchain: no kernel walk of the user stack */
	void *arg;                    /* the callbacks' */
	/* Event @e's attr as the set makes it (watermark included): adjust it; may be NULL. */
	void (*adjust_attr)(void *arg, size_t e, struct perf_event_attr *a);
	/*
	 * An fd of event @e has @id: per thread (@cpuwide false, the thread's
	 * dummy in its place for a CPU-wide event) or, @cpuwide, per CPU by
	 * pm_attach_cpuwide(), also after the start.  May be NULL.
	 */
	void (*id)(void *arg, uint64_t id, size_t e, bool cpuwide);
};

/*
 * The attach of a session, live and at replay (empty: no target).
 * @attached: the events are opened on each target thread (-p/-t), so that
 * a thread can carry several event sets and one counts (pm_attach_accept());
 * else every record counts.
 */
struct pm_attach *pm_attach_new(bool attached);
void pm_attach_free(struct pm_attach *a); /* NULL is fine */

/* The error of the last call that failed: one line, "" when it said none. */
const char *pm_attach_error(const struct pm_attach *a);
/* ... and whether it is a bad option value (an -F the kernel refuses) rather than a failure. */
bool pm_attach_error_usage(const struct pm_attach *a);

/*
 * The targets of an attach: every thread of each process in @pids, those
 * alive now and those it creates later, and/or only the threads in @tids
 * (each must belong to a process in @pids when @pids is given; those
 * processes are then limited to the given threads).
 */
struct pm_attach_targets {
	const pid_t *pids;
	size_t npids;
	const pid_t *tids;
	size_t ntids;
};

/* Check the targets against /proc, before anything is opened (one warning for -p $$); 0 or -1. */
int pm_attach_check_targets(struct pm_attach *a, const struct pm_attach_targets *t);
/*
 * A hardware event of the @*n in @spec this CPU lacks falls back to
 * cpu-clock (or is an error under @strict, -1); a precise level the PMU
 * lacks is lowered.  An event dropped (cpu-clock is there already)
 * lowers *@n.
 */
int pm_attach_resolve_hardware(struct pm_attach *a, struct pm_evt_spec *spec, size_t *n,
			       bool strict);
/*
 * Events without :u/:k count user mode only where the kernel refuses to
 * count its own time for pmuprof (kernel.perf_event_paranoid >= 2, no
 * CAP_PERFMON), with one warning line once they are open
 * (pm_attach_warn_refused()); not under @kernel (its open says why).
 */
void pm_attach_resolve_kernel(struct pm_attach *a, struct pm_evt_spec *spec, size_t n,
			      bool kernel);
/* Launch: every event of @set on every CPU for @pid and, inherited, its threads; -errno. */
int pm_attach_open_events(struct pm_attach *a, const struct pm_evset *set, pid_t pid);
/*
 * Host-wide: every event on every CPU for every process (pid -1, side-band
 * records of them all), enabled at once.  0 or -errno, the message said.
 */
int pm_attach_open_host(struct pm_attach *a, const struct pm_evset *set);
/* Attach: @set opened on every target thread, enabled; 0 or -1. */
int pm_attach_all(struct pm_attach *a, const struct pm_evset *set);
/* Once open (and the caller's work at the start done): pm_attach_resolve_kernel()'s warning. */
void pm_attach_warn_refused(struct pm_attach *a);
/* The attach's numbers: threads opened, events (fds) opened, its time. */
uint64_t pm_attach_threads(const struct pm_attach *a);
uint64_t pm_attach_nevents(const struct pm_attach *a);
double pm_attach_ms(const struct pm_attach *a);
/* One line: the processes attached, and those numbers. */
void pm_attach_summary(const struct pm_attach *a);
/* Has every attached process (or every -t thread) exited? */
bool pm_attach_all_exited(struct pm_attach *a);
/* Does a record of event @id on thread @tid count (one event set per thread)? */
bool pm_attach_accept(struct pm_attach *a, uint64_t id, uint32_t tid);

/* FORK and EXIT records: the threads alive, counted in the event sets that count. */
bool pm_attach_thread_born(struct pm_attach *a, uint64_t id, uint32_t tid); /* false: not counted */
void pm_attach_thread_gone(struct pm_attach *a, uint64_t id, uint32_t tid);
int64_t pm_attach_threads_live(const struct pm_attach *a);
/* Records dropped as a second inherited event set's. */
uint64_t pm_attach_dups(const struct pm_attach *a);
/* Event id -> the thread it was opened on: into the capture, and back at replay. */
const struct pm_idtab *pm_attach_owners(const struct pm_attach *a);
void pm_attach_set_owner(struct pm_attach *a, uint64_t id, uint32_t tid);

/* The rings (per CPU; NULL where none was mapped), for the drain. */
size_t pm_attach_nrings(const struct pm_attach *a);
struct pm_ring *pm_attach_ring(const struct pm_attach *a, size_t i);

size_t pm_attach_nprocs(const struct pm_attach *a);
pid_t pm_attach_pid(const struct pm_attach *a, size_t i);
int pm_attach_pidfd(const struct pm_attach *a, size_t i); /* -1 when none */

/*
 * Event @e of the set, PM_EVSET_CPUWIDE, opened on every CPU for every
 * process (pid -1: a uprobe's traps in each process that maps its
 * binary), into the rings (@on), or closed (its uprobe's traps gone).
 * Opened once by pm_attach_all() and pm_attach_open_events(); 0 or -errno.
 */
int pm_attach_cpuwide(struct pm_attach *a, size_t e, bool on);
/* Its hits so far (the counts of its fds, open and closed). */
uint64_t pm_attach_cpuwide_hits(const struct pm_attach *a, size_t e);

/*
 * After the last drain: the records lost that the kernel counted (every
 * event's PERF_FORMAT_LOST, the fds closed before included) into *@n;
 * false when an fd had no such count (a kernel before 6.0).
 */
bool pm_attach_lost(struct pm_attach *a, uint64_t *n);

/* Stop every event; then close them, the rings and the processes' pidfds. */
void pm_attach_disable(struct pm_attach *a);
void pm_attach_close(struct pm_attach *a);

#endif
