/*
 * events: event specs as perf spells them -> perf_event_attr; opening, and
 * errno turned into a cause and a remedy.
 */
#ifndef PM_EVENTS_H
#define PM_EVENTS_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pm_evt_spec {
	char name[64];       /* canonical perf name, e.g. "cycles", "cpu-clock" */
	uint32_t type;       /* PERF_TYPE_* */
	uint64_t config;
	bool hardware;       /* needs a PMU (PERF_TYPE_HARDWARE / HW_CACHE / RAW) */
	bool exclude_user, exclude_kernel;
	/*
	 * :u or :k given: the modes are the user's (no fallback to user mode,
	 * --kernel does not widen them)
	 */
	bool ukmods;
	unsigned precise;    /* :p count */
	/* pprof value type for this event: "cpu"/"nanoseconds" for the clocks, name/"count" otherwise */
	char value_type[64];
	char value_unit[16];
	/* --- added for issue 5 --- */
	enum pm_evt_kind {
		PM_EVT_HW = 0,     /* generic hardware (cycles, ...) */
		PM_EVT_SW,         /* software (cpu-clock, page-faults, ...) */
		PM_EVT_CACHE,      /* hardware cache (L1-dcache-load-misses, ...) */
		PM_EVT_RAW,        /* rNNNN */
		PM_EVT_PMU,        /* PMU/term=value,.../ from sysfs formats */
		PM_EVT_TRACEPOINT, /* subsystem:name, id from tracefs */
		PM_EVT_UPROBE,     /* uprobe:BINARY:SYMBOL through the uprobe PMU */
	} kind;
	uint64_t config1, config2; /* PMU terms; uprobe: config2 = file offset */
	uint64_t period, freq;     /* per-event term (EVENT/period=N/), 0 = none */
	/* used when neither -F, -c nor a term is given: 1 for tracepoints and uprobes */
	uint64_t default_period;
	/* uprobe: absolute path of the binary (attr.config1 points at it) and the symbol */
	char path[4096];
	char symbol[256];
	/*
	 * uprobe defined in tracefs by pm_evt_uprobe_define() ("GROUP/EVENT"),
	 * opened as that tracepoint so that new threads inherit it; "" = the
	 * uprobe PMU, not inherited
	 */
	char probe[64];
	/* fetchargs of a uprobe defined in tracefs ("name=%ax:u64 ..."), "" = none */
	char fetchargs[256];
	/*
	 * a PMU/terms/ event of the CPU's PMU (cpu, cpu_core, armv8_pmuv3...)
	 * that this machine does not have: hardware, never opens here
	 */
	bool absent;
};

/* At most this many events in one recording (-e a,b,c). */
#define PM_EVT_MAX 8

/*
 * Parse @text ("cycles", "cpu-clock:u", "instructions:pp", ...).  0, or
 * -EINVAL with one line in @err naming the nearest known events.
 *
 * Forms (perf's spelling):
 *   NAME[:MODS]                generic hw/sw events and aliases, hardware cache
 *                              events (L1-dcache-load-misses, LLC-loads, dTLB-...,
 *                              branch-loads, node-...), raw rNNNN
 *   SUBSYS:NAME[:MODS]         tracepoint; id from TRACEFS/events/SUBSYS/NAME/id
 *   PMU/TERM[=VAL],.../[MODS]  terms from SYSFS/PMU/format/, aliases from
 *                              SYSFS/PMU/events/; also config, config1, config2
 *   EVENT/period=N/ or /freq=N/  per-event rate on any of the forms above
 *   uprobe:BINARY:SYMBOL       entry of a Go (gopclntab) or ELF function;
 *                              uretprobe: and %return are refused.  Open it
 *                              without inherit: the kernel re-reads the path
 *                              (attr.config1) in a cloning task, where the
 *                              pointer is not mapped, so clone() fails (EFAULT)
 * MODS: u, k, p, pp, ppp.  SYSFS is $PMUPROF_SYSFS or
 * /sys/bus/event_source/devices; TRACEFS see pm_evt_tracefs().  Reads those
 * files and the uprobe binary.
 */
int pm_evt_parse(const char *text, struct pm_evt_spec *out, char *err, size_t errlen);

/* cpu-clock or task-clock: values in nanoseconds of CPU time */
bool pm_evt_is_clock(const struct pm_evt_spec *spec);

/*
 * @spec counts user mode only (the kernel refused its part): a clock's
 * sample type becomes "user_cpu" instead of Go's "cpu".
 */
void pm_evt_user_only(struct pm_evt_spec *spec);

/*
 * @spec samples every hit (period 1, whatever -F or -c says), its values
 * named @type in @unit (pprof's sample type); NULL keeps the name it has.
 */
/*
 * May this process count kernel-mode time?  False only when the kernel
 * refuses it the right (perf_event_paranoid); any other failure is left
 * to the open on the target to say.
 */
bool pm_evt_kernel_allowed(void);

void pm_evt_every_hit(struct pm_evt_spec *spec, const char *type, const char *unit);

/*
 * Several events, comma-separated as perf takes them ("cycles,page-faults",
 * "cpu/event=0x3c,umask=0/,instructions"): commas inside a PMU's /terms/
 * and inside brackets (Go generics in uprobe symbols) do not separate.
 * Fills out[0..*n).  0, or -EINVAL with one line in @err (a bad event, an
 * empty one, more than @max, the same event twice).
 */
int pm_evt_parse_list(const char *text, struct pm_evt_spec *out, size_t max, size_t *n,
		      char *err, size_t errlen);

/*
 * A uprobe that threads created later inherit: define @spec's probe in
 * tracefs (uprobe_events, group pmuprof_PID, event p@idx) and make @spec
 * that tracepoint.  Probes left by a pmuprof that was killed are removed
 * first.  0; -ENOENT when tracefs is not mounted or the probe cannot be
 * defined there (@spec unchanged: the uprobe PMU, threads started later
 * are not probed), with the reason in @err.  No-op for other events.
 */
int pm_evt_uprobe_define(struct pm_evt_spec *spec, unsigned idx, char *err, size_t errlen);
/* Remove the probe pm_evt_uprobe_define() made, once its events are closed. */
void pm_evt_uprobe_undefine(struct pm_evt_spec *spec);

struct pm_evt_sampling {
	uint64_t freq;        /* samples per second, or 0 */
	uint64_t period;      /* events per sample, or 0 (one of freq/period is set) */
	uint32_t stack_size;  /* PERF_SAMPLE_STACK_USER bytes (multiple of 8), 0 = none */
	uint64_t regs_mask;   /* sample_regs_user; 0 = none */
	bool callchain;       /* PERF_SAMPLE_CALLCHAIN */
	bool kernel_callchain;/* keep the kernel part of the callchain */
	bool no_user_callchain;/* added: without the user part (exclude_callchain_user) */
	bool tracking;        /* mmap2/comm/task side-band records on this event */
	bool enable_on_exec;
	bool inherit;
	bool raw;             /* PERF_SAMPLE_RAW (a tracepoint's fields; 4 empty bytes otherwise) */
	/*
	 * added: freq/period are the caller's default, not the user's; the
	 * event's default_period, when set, wins over them.
	 */
	bool rate_default;
};

/* Fill @attr (zeroed first) for @spec sampled as @s. */
void pm_evt_attr(const struct pm_evt_spec *spec, const struct pm_evt_sampling *s,
		 struct perf_event_attr *attr);

/*
 * perf_event_open with CLOEXEC.  The fd, or -errno.  A kernel that refuses
 * PERF_FORMAT_LOST (before 6.0: EINVAL) gets the event without it, the bit
 * cleared in @attr.
 */
int pm_evt_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd);

/*
 * One line: why opening @spec failed with @err (negative errno) and what to
 * do: the paranoid level, CAP_PERFMON, no PMU (try -e cpu-clock), the
 * sample-rate limit, ulimit -l.  Written into @buf, returned.
 */
const char *pm_evt_strerror(int err, const struct pm_evt_spec *spec,
			    const struct perf_event_attr *attr, char *buf, size_t len);

/* kernel.perf_event_max_sample_rate, or -errno. */
long pm_evt_max_sample_rate(void);

/*
 * added: the tracefs root ($PMUPROF_TRACEFS, else /sys/kernel/tracing, else
 * /sys/kernel/debug/tracing, whichever holds "events"), or NULL when tracefs
 * is not mounted.
 */
const char *pm_evt_tracefs(void);

/*
 * added: where tracefs is not mounted and pmuprof runs as root (and
 * $PMUPROF_TRACEFS is not set), mount it at /sys/kernel/tracing in a mount
 * namespace of pmuprof's own (unshare(CLONE_NEWNS), slave to the caller's:
 * nothing is left mounted when pmuprof exits).  Call while single-threaded,
 * before any tracefs use.  Returns an fd (O_CLOEXEC) of the caller's mount
 * namespace, for a command pmuprof starts to go back to before its exec;
 * -EEXIST when tracefs is mounted already; another -errno when it cannot
 * be mounted (then pm_evt_tracefs() stays NULL).
 */
int pm_evt_tracefs_mount(void);

/* added: the sysfs PMU directory ($PMUPROF_SYSFS or /sys/bus/event_source/devices). */
const char *pm_evt_sysfs(void);

/*
 * added: the built-in names, for listing: the @i-th canonical name (generic
 * hardware, software, then every valid hardware cache event), NULL past the
 * end; *kind set.
 */
const char *pm_evt_builtin(size_t i, enum pm_evt_kind *kind);

/* added: a counting attr for @spec (probing whether it opens here). */
void pm_evt_count_attr(const struct pm_evt_spec *spec, struct perf_event_attr *attr);

/* True when the error means "this CPU has no such counter" (no PMU, VM). */
bool pm_evt_err_unsupported(int err);

#endif
