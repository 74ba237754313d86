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
	unsigned precise;    /* :p count */
	/* pprof value type for this event: "cpu"/"nanoseconds" for the clocks, name/"count" otherwise */
	char value_type[64];
	char value_unit[16];
};

/*
 * Parse @text ("cycles", "cpu-clock:u", "instructions:pp", ...).  0, or
 * -EINVAL with one line in @err naming the nearest known events.
 */
int pm_evt_parse(const char *text, struct pm_evt_spec *out, char *err, size_t errlen);

struct pm_evt_sampling {
	uint64_t freq;        /* samples per second, or 0 */
	uint64_t period;      /* events per sample, or 0 (one of freq/period is set) */
	uint32_t stack_size;  /* PERF_SAMPLE_STACK_USER bytes (multiple of 8), 0 = none */
	uint64_t regs_mask;   /* sample_regs_user; 0 = none */
	bool callchain;       /* PERF_SAMPLE_CALLCHAIN */
	bool kernel_callchain;/* keep the kernel part of the callchain */
	bool tracking;        /* mmap2/comm/task side-band records on this event */
	bool enable_on_exec;
	bool inherit;
};

/* Fill @attr (zeroed first) for @spec sampled as @s. */
void pm_evt_attr(const struct pm_evt_spec *spec, const struct pm_evt_sampling *s,
		 struct perf_event_attr *attr);

/* perf_event_open with CLOEXEC.  The fd, or -errno. */
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

/* True when the error means "this CPU has no such counter" (no PMU, VM). */
bool pm_evt_err_unsupported(int err);

#endif
