/*
 * evopen: perf_event_attr from a spec, perf_event_open, and errno turned
 * into one line of cause and remedy.
 */
#include "events/evopen.h"

#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_FREQ 4000               /* perf record's default -F */
#define DEFAULT_BUFFER_BYTES (512 << 10) /* perf's default data area per buffer */

void pm_evt_attr(const struct pm_evt_spec *spec, const struct pm_evt_sampling *s,
		 struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = spec->type;
	attr->config = spec->config;
	attr->config1 = spec->config1;
	attr->config2 = spec->config2;
	if (spec->kind == PM_EVT_UPROBE && !spec->probe[0])
		attr->config1 = (uint64_t)(uintptr_t)spec->path; /* uprobe_path */
	attr->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			    PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	if (s->callchain)
		attr->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (s->raw)
		attr->sample_type |= PERF_SAMPLE_RAW;
	if (s->regs_mask) {
		attr->sample_type |= PERF_SAMPLE_REGS_USER;
		attr->sample_regs_user = s->regs_mask;
	}
	if (s->stack_size) {
		attr->sample_type |= PERF_SAMPLE_STACK_USER;
		attr->sample_stack_user = s->stack_size;
	}
	if (spec->freq) {
		/* the event's own term wins over -F/-c */
		attr->freq = 1;
		attr->sample_freq = spec->freq;
	} else if (spec->period) {
		attr->sample_period = spec->period;
	} else if (s->rate_default && spec->default_period) {
		/* tracepoints, uprobes: every hit, as perf does */
		attr->sample_period = spec->default_period;
	} else if (s->freq || !s->period) {
		/* neither set: perf's default frequency */
		attr->freq = 1;
		attr->sample_freq = s->freq ? s->freq : DEFAULT_FREQ;
	} else {
		attr->sample_period = s->period;
	}
	attr->disabled = 1;
	attr->inherit = s->inherit;
	attr->enable_on_exec = s->enable_on_exec;
	attr->exclude_user = spec->exclude_user;
	attr->exclude_kernel = spec->exclude_kernel;
	attr->exclude_hv = 1;
	attr->exclude_callchain_kernel = !s->kernel_callchain;
	attr->exclude_callchain_user = s->no_user_callchain;
	attr->precise_ip = spec->precise & 3;
	attr->sample_id_all = 1;
	if (s->tracking) {
		attr->mmap = 1;
		attr->mmap2 = 1;
		attr->comm = 1;
		attr->comm_exec = 1;
		attr->task = 1;
	}
	attr->watermark = 1;
	attr->wakeup_watermark = DEFAULT_BUFFER_BYTES / 4;
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
	/*
	 * The kernel's own count of the records it could not write (Linux
	 * 6.0): PERF_RECORD_LOST says a loss only at the next write that
	 * fits, so a ring full when the recording stops is seen only here
	 * (pm_evt_open() drops it where refused).
	 */
	attr->read_format |= PERF_FORMAT_LOST;
}

void pm_evt_count_attr(const struct pm_evt_spec *spec, struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = spec->type;
	attr->config = spec->config;
	attr->config1 = spec->kind == PM_EVT_UPROBE && !spec->probe[0]
				? (uint64_t)(uintptr_t)spec->path
				: spec->config1;
	attr->config2 = spec->config2;
	attr->disabled = 1;
	attr->exclude_user = spec->exclude_user;
	attr->exclude_kernel = spec->exclude_kernel;
	attr->exclude_hv = 1;
}

static const struct {
	const char *name;
	int err;
} errnames[] = {
	{ "EACCES", EACCES }, { "EPERM", EPERM },   { "ENOENT", ENOENT },
	{ "EMFILE", EMFILE }, { "EINVAL", EINVAL }, { "E2BIG", E2BIG },
	{ "EOPNOTSUPP", EOPNOTSUPP }, { "ENODEV", ENODEV }, { "EBUSY", EBUSY },
	{ "ESRCH", ESRCH },   { "ENOSYS", ENOSYS }, { "ENOMEM", ENOMEM },
};

/* Fault injection for the e2e tests: PMUPROF_FAIL_OPEN=EACCES (or a number). */
static int injected_error(void)
{
	const char *v = getenv("PMUPROF_FAIL_OPEN");
	char *end;
	long n;

	if (!v || !*v)
		return 0;
	for (size_t i = 0; i < PM_ARRAY_SIZE(errnames); i++)
		if (!strcmp(v, errnames[i].name))
			return -errnames[i].err;
	n = strtol(v, &end, 10);
	if (!*end && n > 0 && n < 4096)
		return (int)-n;
	return 0;
}

int pm_evt_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd)
{
	int inj = injected_error();
	long fd;

	if (inj)
		return inj;
	fd = syscall(__NR_perf_event_open, attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && errno == EINVAL && (attr->read_format & PERF_FORMAT_LOST)) {
		/* before Linux 6.0: without the lost count (the caller sees the bit gone) */
		attr->read_format &= ~(uint64_t)PERF_FORMAT_LOST;
		fd = syscall(__NR_perf_event_open, attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	return (int)fd;
}

bool pm_evt_kernel_allowed(void)
{
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.disabled = 1;
	a.exclude_hv = 1;
	fd = pm_evt_open(&a, 0, -1, -1);
	if (fd >= 0)
		close(fd);
	return fd != -EACCES && fd != -EPERM;
}

long pm_evt_max_sample_rate(void)
{
	long v;
	int rc = pm_read_long("/proc/sys/kernel/perf_event_max_sample_rate", &v);

	return rc ? rc : v;
}

/*
 * Measured on this project's machine (Linux 6.18 guest, no PMU): opening
 * PERF_TYPE_HARDWARE cycles, PERF_TYPE_HW_CACHE and PERF_TYPE_RAW all fail
 * with ENOENT, counting or sampling.  EOPNOTSUPP and ENODEV are what other
 * kernels/PMUs give (no sampling support, event not on this PMU).  EINVAL
 * is not included: it also means a bad attr (frequency, stack size).
 */
bool pm_evt_err_unsupported(int err)
{
	if (err < 0)
		err = -err;
	return err == ENOENT || err == EOPNOTSUPP || err == ENODEV;
}

/*
 * EACCES/EPERM.  Under paranoid 2 a user-only event on an own task is
 * allowed, so when the level does not explain the refusal say what else
 * might (another user's process, a container's seccomp profile).
 */
static void paranoid_hint(char *buf, size_t len, const char *what,
			  const struct perf_event_attr *attr)
{
	long level;
	bool kernel = attr && !attr->exclude_kernel;

	if (pm_read_long("/proc/sys/kernel/perf_event_paranoid", &level)) {
		snprintf(buf, len,
			 "%s: permission denied (kernel.perf_event_paranoid unreadable); run as "
			 "root or grant CAP_PERFMON",
			 what);
		return;
	}
	snprintf(buf, len,
		 "%s: permission denied (kernel.perf_event_paranoid=%ld); run as root, grant "
		 "CAP_PERFMON, or lower it: sysctl kernel.perf_event_paranoid=%d%s",
		 what, level, level > 1 ? 1 : -1,
		 kernel && level >= 2 ? " (or drop --kernel and ':k' to profile user space only)"
		 : !kernel && level <= 2 ? " (or the target belongs to another user, or a "
					   "seccomp/container policy blocks perf_event_open)"
					 : "");
}

const char *pm_evt_strerror(int err, const struct pm_evt_spec *spec,
			    const struct perf_event_attr *attr, char *buf, size_t len)
{
	const char *name = spec && spec->name[0] ? spec->name : "event";
	bool hw = spec && spec->hardware;
	char what[96];

	if (!buf || !len)
		return "";
	if (err < 0)
		err = -err;
	snprintf(what, sizeof(what), "cannot open '%s'", name);

	switch (err) {
	case EACCES:
	case EPERM:
		paranoid_hint(buf, len, what, attr);
		break;
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
		if (hw && !(err == EOPNOTSUPP && spec->precise))
			snprintf(buf, len,
				 "%s: the CPU has no PMU counter for '%s' (common in VMs); try -e "
				 "cpu-clock",
				 what, name);
		else if (err == EOPNOTSUPP && spec && spec->precise)
			snprintf(buf, len,
				 "%s: precise sampling (%u 'p') is not supported; use fewer 'p' "
				 "modifiers",
				 what, spec->precise);
		else if (err == EOPNOTSUPP)
			snprintf(buf, len,
				 "%s: the event does not support sampling or the requested "
				 "user/kernel exclusion",
				 what);
		else
			snprintf(buf, len, "%s: the kernel does not know this event (%s)", what,
				 strerror(err));
		break;
	case EINVAL: {
		long max = pm_evt_max_sample_rate();

		if (attr && attr->freq && max > 0 && attr->sample_freq > (uint64_t)max)
			snprintf(buf, len,
				 "%s: frequency %llu Hz is above kernel.perf_event_max_sample_rate=%ld; "
				 "lower -F or raise the sysctl",
				 what, (unsigned long long)attr->sample_freq, max);
		else if (attr && (attr->sample_type & PERF_SAMPLE_STACK_USER) &&
			 (attr->sample_stack_user % 8 || attr->sample_stack_user > 65528))
			snprintf(buf, len,
				 "%s: user stack size %u is invalid (a multiple of 8, at most 65528)",
				 what, attr->sample_stack_user);
		else if (attr && attr->precise_ip)
			snprintf(buf, len,
				 "%s: invalid attributes; precise level %u may be unsupported, use "
				 "fewer 'p' modifiers",
				 what, (unsigned)attr->precise_ip);
		else
			snprintf(buf, len,
				 "%s: the kernel rejected the event attributes (invalid argument); "
				 "check -e, -F/-c and the call-graph options",
				 what);
		break;
	}
	case E2BIG:
		snprintf(buf, len,
			 "%s: this kernel is older than pmuprof's perf_event_attr (size %u)", what,
			 attr ? attr->size : (unsigned)sizeof(*attr));
		break;
	case EMFILE:
		snprintf(buf, len, "%s: too many open files; raise ulimit -n", what);
		break;
	case ENOMEM:
		snprintf(buf, len,
			 "%s: out of memory or locked memory; raise ulimit -l or "
			 "kernel.perf_event_mlock_kb, or use a smaller buffer",
			 what);
		break;
	case EBUSY:
		snprintf(buf, len, "%s: the PMU is in use by another tool", what);
		break;
	case ESRCH:
		snprintf(buf, len, "%s: no such process", what);
		break;
	case ENOSYS:
		snprintf(buf, len,
			 "%s: perf_event_open is unavailable (kernel without CONFIG_PERF_EVENTS, "
			 "a seccomp filter, or no user-stack sampling on this arch)",
			 what);
		break;
	default:
		snprintf(buf, len, "%s: %s", what, strerror(err));
		break;
	}
	return buf;
}
