/*
 * events: perf's event names -> perf_event_attr, perf_event_open, and errno
 * turned into one line of cause and remedy.
 */
#include "events.h"

#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct evdef {
	const char *name;  /* perf's canonical name (evsel__hw_names / sw_names) */
	const char *alias; /* or NULL */
	uint32_t type;
	uint64_t config;
};

static const struct evdef events[] = {
	{ "cycles", "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", "branch-instructions", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "stalled-cycles-frontend", "idle-cycles-frontend", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "stalled-cycles-backend", "idle-cycles-backend", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "ref-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
	{ "cpu-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "context-switches", "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "minor-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "alignment-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
	{ "dummy", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY },
};

#define NAME_MAX_LEN 63 /* sizeof(spec.name) - 1 */

static void seterr(char *err, size_t errlen, const char *fmt, ...) PM_PRINTF(3, 4);
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	/* The spec is echoed back: keep the message one printable line. */
	for (char *c = err; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

/* Case-insensitive Levenshtein distance; both strings are at most NAME_MAX_LEN. */
static unsigned edit_distance(const char *a, const char *b)
{
	unsigned row[NAME_MAX_LEN + 2];
	size_t la = strlen(a), lb = strlen(b);

	if (la > NAME_MAX_LEN || lb > NAME_MAX_LEN)
		return ~0u;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];

		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned sub = diag + (tolower((unsigned char)a[i - 1]) !=
					       tolower((unsigned char)b[j - 1]));
			unsigned best = PM_MIN(up + 1, row[j - 1] + 1);

			row[j] = PM_MIN(best, sub);
			diag = up;
		}
	}
	return row[lb];
}

/*
 * "unknown event 'x' (did you mean 'a', 'b' or 'c'?)": the nearest known
 * names by edit distance, at most three, none further than 3 edits (and no
 * further than half the typed length, so that "foo" does not suggest "cs").
 */
static void unknown_event(const char *name, char *err, size_t errlen)
{
	const char *pick[3];
	unsigned dist[3], limit;
	size_t npick = 0, len = strlen(name);
	char list[256];
	size_t off = 0;

	limit = (unsigned)PM_MIN((size_t)3, (len + 1) / 2);
	for (size_t i = 0; i < PM_ARRAY_SIZE(events) * 2; i++) {
		const char *cand = i % 2 ? events[i / 2].alias : events[i / 2].name;
		unsigned d;
		size_t k;

		if (!cand)
			continue;
		d = edit_distance(name, cand);
		if (d > limit)
			continue;
		/* insertion sort by distance, stable for table order */
		for (k = npick; k > 0 && dist[k - 1] > d; k--) {
			if (k < 3) {
				pick[k] = pick[k - 1];
				dist[k] = dist[k - 1];
			}
		}
		if (k < 3) {
			pick[k] = cand;
			dist[k] = d;
			if (npick < 3)
				npick++;
		}
	}
	if (!npick) {
		seterr(err, errlen, "unknown event '%s'; run 'perf list' to see events", name);
		return;
	}
	list[0] = 0;
	for (size_t i = 0; i < npick; i++) {
		const char *sep = i == 0 ? "" : i + 1 == npick ? " or " : ", ";
		int n = snprintf(list + off, sizeof(list) - off, "%s'%s'", sep, pick[i]);

		if (n > 0 && (size_t)n < sizeof(list) - off)
			off += (size_t)n;
	}
	seterr(err, errlen, "unknown event '%s' (did you mean %s?)", name, list);
}

static bool parse_raw(const char *name, uint64_t *config)
{
	size_t n = strlen(name);

	if (n < 2 || n > 17 || name[0] != 'r')
		return false;
	for (size_t i = 1; i < n; i++)
		if (!isxdigit((unsigned char)name[i]))
			return false;
	*config = strtoull(name + 1, NULL, 16);
	return true;
}

int pm_evt_parse(const char *text, struct pm_evt_spec *out, char *err, size_t errlen)
{
	const char *colon = strchr(text, ':');
	size_t nlen = colon ? (size_t)(colon - text) : strlen(text);
	char name[NAME_MAX_LEN + 1];
	const struct evdef *def = NULL;
	bool mod_u = false, mod_k = false;
	unsigned precise = 0;
	uint64_t config;

	memset(out, 0, sizeof(*out));
	if (!nlen) {
		seterr(err, errlen, "empty event name in '%s'", text);
		return -EINVAL;
	}
	if (nlen > NAME_MAX_LEN) {
		seterr(err, errlen, "event name too long: '%.*s...'", 32, text);
		return -EINVAL;
	}
	memcpy(name, text, nlen);
	name[nlen] = 0;

	if (colon) {
		const char *m = colon + 1;

		if (!*m) {
			seterr(err, errlen, "empty modifier in '%s' (allowed: u, k, p)", text);
			return -EINVAL;
		}
		for (; *m; m++) {
			switch (*m) {
			case 'u':
				mod_u = true;
				break;
			case 'k':
				mod_k = true;
				break;
			case 'p':
				if (++precise > 3) {
					seterr(err, errlen,
					       "too many 'p' modifiers in '%s' (at most 3: p, pp, ppp)",
					       text);
					return -EINVAL;
				}
				break;
			default:
				if (isprint((unsigned char)*m))
					seterr(err, errlen,
					       "unknown modifier '%c' in '%s' (allowed: u, k, p)", *m,
					       text);
				else
					seterr(err, errlen,
					       "unknown modifier byte 0x%02x in event '%s' (allowed: u, k, p)",
					       (unsigned char)*m, name);
				return -EINVAL;
			}
		}
	}

	for (size_t i = 0; i < PM_ARRAY_SIZE(events); i++) {
		if (!strcasecmp(name, events[i].name) ||
		    (events[i].alias && !strcasecmp(name, events[i].alias))) {
			def = &events[i];
			break;
		}
	}
	if (def) {
		snprintf(out->name, sizeof(out->name), "%s", def->name);
		out->type = def->type;
		out->config = def->config;
		out->hardware = def->type == PERF_TYPE_HARDWARE;
	} else if (parse_raw(name, &config)) {
		snprintf(out->name, sizeof(out->name), "%s", name);
		out->type = PERF_TYPE_RAW;
		out->config = config;
		out->hardware = true;
	} else {
		unknown_event(name, err, errlen);
		memset(out, 0, sizeof(*out));
		return -EINVAL;
	}

	/* No u/k: user only, as perf ends up under the default paranoid level 2. */
	if (mod_k && !mod_u)
		out->exclude_user = true;
	if (!mod_k)
		out->exclude_kernel = true;
	out->precise = precise;
	if (out->type == PERF_TYPE_SOFTWARE && (out->config == PERF_COUNT_SW_CPU_CLOCK ||
						out->config == PERF_COUNT_SW_TASK_CLOCK)) {
		snprintf(out->value_type, sizeof(out->value_type), "cpu");
		snprintf(out->value_unit, sizeof(out->value_unit), "nanoseconds");
	} else {
		snprintf(out->value_type, sizeof(out->value_type), "%s", out->name);
		snprintf(out->value_unit, sizeof(out->value_unit), "count");
	}
	return 0;
}

#define DEFAULT_FREQ 4000               /* perf record's default -F */
#define DEFAULT_BUFFER_BYTES (512 << 10) /* perf's default data area per buffer */

void pm_evt_attr(const struct pm_evt_spec *spec, const struct pm_evt_sampling *s,
		 struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = spec->type;
	attr->config = spec->config;
	attr->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			    PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	if (s->callchain)
		attr->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (s->regs_mask) {
		attr->sample_type |= PERF_SAMPLE_REGS_USER;
		attr->sample_regs_user = s->regs_mask;
	}
	if (s->stack_size) {
		attr->sample_type |= PERF_SAMPLE_STACK_USER;
		attr->sample_stack_user = s->stack_size;
	}
	if (s->freq || !s->period) {
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
	if (fd < 0)
		return -errno;
	return (int)fd;
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
		 kernel && level >= 2 ? " (or drop ':k' to profile user space only)"
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
