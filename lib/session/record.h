/*
 * record: one recording session.  Wires the stages: launch the target,
 * open the events on it, drain the ring buffers, decode records, unwind
 * each sample, aggregate; at the end symbolize every distinct frame once
 * and write the pprof file.
 */
#ifndef PM_RECORD_H
#define PM_RECORD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define PM_RECORD_DEFAULT_FREQ 1000
#define PM_RECORD_DEFAULT_STACK 8192 /* bytes: see sampling_of() in perf/attach.c */
#define PM_RECORD_DEFAULT_OUTPUT "pmuprof.pb.gz"

/* --locks-max-rate's default: 1000 traps/s, about 1.5 % of a CPU at 15 us each */
#define PM_RECORD_DEFAULT_LOCKS_MAX_RATE 1000

struct pm_ksyms;
struct pm_profile;

struct pm_record_cfg {
	const char *event;           /* NULL = "cycles" (falls back to cpu-clock without a PMU) */
	uint64_t freq, period;       /* at most one nonzero; both 0 = PM_RECORD_DEFAULT_FREQ */
	const char *output;          /* NULL = PM_RECORD_DEFAULT_OUTPUT */
	double duration;             /* seconds, 0 = until the command exits */
	uint32_t stack_size;         /* bytes of user stack per sample */
	char *const *argv;           /* the command; NULL to attach (pids/tids) */
	/*
	 * Attach mode (argv NULL): every thread of each process in @pids,
	 * those alive now and those it creates later, until it exits; and/or
	 * only the threads in @tids (each must belong to a process in @pids
	 * when @pids is given; those processes are then limited to the given
	 * threads).  The target is never stopped or signalled.
	 */
	const pid_t *pids;
	size_t npids;
	const pid_t *tids;
	size_t ntids;
	/*
	 * Set by the caller's SIGINT/SIGTERM handler to the signal number;
	 * the session forwards it to the command (never in attach mode) and
	 * finishes the profile.
	 */
	volatile sig_atomic_t *stop;
	bool quiet;                  /* no summary line */
	bool progress;               /* a live progress line on stderr */
	bool kernel;                 /* keep the kernel part of the callchain (--kernel) */
	/*
	 * --all-frames: the profile keeps the frames Go's tracebacks hide
	 * (wrappers, runtime.deferreturn, runtime.goexit: profbuild.c)
	 */
	bool all_frames;
	/*
	 * --no-callchain: samples carry no kernel frame-pointer walk of the
	 * user stack, only the copy (read on from the target past its end).
	 * Cheaper for the target (perf/attach.c, sampling_of()), but a sample on
	 * the system stack loses the goroutine under it.
	 */
	bool no_callchain;
	bool strict;                 /* added: no cpu-clock fallback for a missing hardware event */
	/*
	 * added: > 0: the caller mounted tracefs in a mount namespace of its
	 * own (pm_evt_tracefs_mount()); the command goes back to this one
	 * (an fd of the caller's first namespace) before its exec.
	 */
	int host_mntns;
	/*
	 * Creator levels for each goroutine's stack (goroutine.h): N = up to
	 * N creating goroutines (--creators=N; 1 = the go statement alone),
	 * 0 (the default) or -1 (--no-creators) = none.  Goroutine ids and
	 * pprof labels are read in every case.
	 */
	int creators;
	/*
	 * --wall[=HZ]: goroutine wall-clock snapshots a second (src_wall.h);
	 * 0 = off.
	 */
	unsigned wall_hz;
	/*
	 * Also write a replayable capture (datafile.h) to this path, atomically
	 * as the profile; NULL = none.
	 */
	const char *raw;
	/*
	 * added (issue 8): run the command as root, and leave the output
	 * files root's, even when pmuprof was started through sudo (default:
	 * the command runs as SUDO_UID/SUDO_GID, pm_target_sudo_user(), and
	 * the files are given to them where outfile.h says)
	 */
	bool keep_privileges;
	/*
	 * --alloc: the allocations the Go runtime samples for its heap
	 * profile (src_alloc.h); without @event, no CPU events
	 */
	bool alloc;
	/*
	 * --inuse: the live heap, the Go runtime's own heap profile records
	 * read from the targets' memory (src_inuse.h); without @event, no CPU
	 * events
	 */
	bool inuse;
	/*
	 * --locks: contended sync.Mutex locks, the waiter's stack and time
	 * waited (src_locks.h); without @event, no CPU events
	 */
	bool locks;
	/*
	 * --locks-max-rate: the budget of lock probe hits per second, above
	 * which the probes watch only part of the time and the counts are
	 * scaled (0 = PM_RECORD_DEFAULT_LOCKS_MAX_RATE, -1 = no limit: --locks-max-rate 0)
	 */
	int64_t locks_max_rate;
	/*
	 * --alloc-max-rate: the budget of allocation probe hits per second
	 * (sources/budget.h): above it the probe watches part of the time and
	 * alloc_objects and alloc_space are scaled; 0 or -1 = no limit (the
	 * default of record; the agent's is PM_AGENT_DEFAULT_ALLOC_MAX_RATE)
	 */
	int64_t alloc_max_rate;
	/*
	 * --creators-max-rate: the budget of creation probe hits per second
	 * (sources/budget.h): above it the probe watches part of the time, and
	 * a sample whose goroutine may have been made unseen has its goroutine
	 * unknown; 0 or -1 = no limit (record's default; the agent's is
	 * PM_AGENT_DEFAULT_CREATORS_MAX_RATE)
	 */
	int64_t creators_max_rate;
	/*
	 * --off-cpu: the targets' threads blocked in the kernel, by the time
	 * off CPU (src_offcpu.h); without @event, no CPU events
	 */
	bool off_cpu;
	/*
	 * --memprofilerate: write runtime.MemProfileRate in the attached
	 * targets for the recording (bytes; 0 = never: the default), and the
	 * value it had back at the end
	 */
	int64_t memprofilerate;
	/*
	 * Not an option: nonzero sizes the per-pc and per-goroutine caches
	 * (the unwinders'; the goroutine inspector's, where its caller
	 * passes it on) at 1 << small_tables entries, and grows the
	 * profile's tables by as many, for a session fed a few records (a
	 * fuzz target's: each input's session would otherwise fault in a
	 * few MiB).  Recordings and replays leave it 0: the sizes that hold
	 * a whole run's pcs.
	 */
	unsigned small_tables;
	/*
	 * Not an option: kernel frames are named from these symbols
	 * (borrowed: pm_ksyms_load()), not from /proc/kallsyms read anew
	 * for each profile built (a fuzz target builds one an input).
	 * NULL: read it, as recordings and replays do.
	 */
	const struct pm_ksyms *ksyms;
	/*
	 * pmuprof agent: a profile every @interval seconds, cut on the wall
	 * clock's multiples of it (the first from the start, the last at the
	 * stop), each handed to @on_interval (which owns it: pm_prof_free())
	 * instead of written to @output.  A sample goes to the interval its
	 * time falls in, and to that one alone: the cut waits until every
	 * ring holds what came before it, then feeds only records up to it.
	 * 0 = one profile at the end (record).
	 */
	double interval;
	/*
	 * The loop's longest sleep when nothing wakes it (a ring's
	 * watermark, a target's exit, a timer or the interval's cut do):
	 * 0 = 100 ms.  The agent, with many recordings at a low rate, sleeps
	 * longer.
	 */
	unsigned idle_ms;
	bool host; /* host-wide: see want below */
	/*
	 * @pid: host-wide, a profile for each process with samples in the
	 * interval, of that process alone; 0 otherwise (every target's).
	 */
	void (*on_interval)(void *arg, struct pm_profile *prof, pid_t pid, uint64_t start_wall_ns,
			    uint64_t dur_ns, bool last);
	void *interval_arg;
	/*
	 * pmuprof agent, host-wide (no command, no pids): the events open on
	 * every CPU for every process (perf record -a), each process's
	 * records kept when @want says so (asked at every record: the caller
	 * remembers its answers), which @proc_news tells first of an exec
	 * (@exited false) or the end of the process (its main thread's exit).
	 * The CPU events alone (-e, -F): none of the kinds that read or probe
	 * a process of their own.  (@host is beside @idle_ms: no padding.)
	 */
	bool (*want)(void *arg, pid_t pid);
	void (*proc_news)(void *arg, pid_t pid, bool exited);
	void *want_arg;
};

enum pm_record_err {
	PM_REC_OK = 0,
	PM_REC_ERR = 1,        /* runtime error */
	PM_REC_USAGE = 2,      /* a bad option value (event, rate) */
	PM_REC_NOEXEC = 126,   /* the command is not executable */
	PM_REC_NOTFOUND = 127, /* the command does not exist */
};

struct pm_record_result {
	enum pm_record_err err;
	char msg[512];         /* one line, when err != PM_REC_OK */
	int exit_code;         /* pmuprof's: the command's, or 0 when --duration stopped it */
	int cmd_exit;          /* the command's, shell-style (128 + signal) */
	bool duration_stop;    /* --duration passed and pmuprof stopped the command */
	uint64_t samples, lost, throttled, cut;
	/*
	 * of lost: what the kernel counted (PERF_FORMAT_LOST) but never said
	 * in a PERF_RECORD_LOST, the rings full at the end; lost_end_unknown:
	 * a kernel without that count (before 6.0), such loss not counted
	 */
	uint64_t lost_end;
	bool lost_end_unknown;
	double seconds;
	/* attach mode */
	uint64_t threads;      /* threads attached at the start */
	uint64_t events;       /* perf events opened */
	double attach_ms;      /* from the first open to all enabled */
	uint64_t raw_bytes;    /* size of the capture written (cfg->raw) */
	/* of which the snapshots of --wall and --inuse (their reads and records), and how many */
	uint64_t raw_snap_bytes, raw_snaps;
	uint64_t records;      /* replay: records read from the capture */
	uint64_t foreign;      /* host-wide: records of processes not recorded, dropped */
	uint64_t renewed;      /* host-wide: the processing state made anew (record.c: renew_due) */
};

/* Run the session.  Returns res->err. */
int pm_record_run(const struct pm_record_cfg *cfg, struct pm_record_result *res);

struct pm_profile;

/*
 * Process a capture written by --raw (datafile.h) as the session that
 * wrote it did: the same maps, unwinding and aggregation, then the same
 * profile into *@out (owned, pm_prof_free()).  Binaries are opened by the
 * capture's paths and checked by build ID; one that is missing or differs
 * gets one pm_warn() and its frames stay unnamed (module+offset).  The
 * target's memory is not read (cgo frames as when it had exited), and
 * kernel frames are named from this machine's /proc/kallsyms.  A truncated
 * capture is processed as far as it goes, with one pm_warn().  The frames
 * Go's tracebacks hide are hidden unless @all_frames or the recording had
 * --all-frames.  Returns res->err; on an error res->msg has one line
 * ("corrupt capture: ...").
 */
int pm_record_replay(const char *path, struct pm_profile **out, struct pm_record_result *res,
		     bool all_frames);

#endif
