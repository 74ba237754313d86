/*
 * attach: an event set on the targets (attach.h).
 *
 * Events: one per online CPU, on the launched process with inherit, so
 * every thread it creates later is followed and writes into that CPU's
 * buffer (the kernel refuses mmap on inherited per-thread events).  They
 * open disabled with enable_on_exec: counting starts exactly at exec.
 *
 * Attach mode (-p/-t): the target already runs, so there is no exec to
 * start at.  Events open disabled on every thread of the process, one per
 * thread and CPU, with inherit: a thread created later by any of them gets
 * the events too, and inheritance is the only way the kernel follows new
 * threads without CPU-wide rights.  Each CPU gets one ring; the other
 * events on that CPU are redirected into it (SET_OUTPUT), so memory and fds
 * for rings do not grow with the threads.  /proc/PID/task is listed again
 * after each round of opens until no thread is new, which catches threads
 * created meanwhile by threads not yet opened.  A thread created by an
 * opened thread before its own open has both an inherited and a direct
 * event: samples are kept from one only (see pm_attach_accept()).  All are
 * enabled with PERF_EVENT_IOC_ENABLE once everything is open.
 */
#include "perf/attach.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/idtab.h"
#include "base/util.h"
#include "events/events.h"
#include "perf/ring.h"
#include "perf/target.h"
#include "unwind/unwind.h"

/* One attached process. */
struct aproc {
	pid_t pid;
	char comm[32];
	pid_t *tids;     /* -t threads of this process; NULL = all threads */
	size_t ntids;
	int pidfd;       /* -1 when none */
	size_t nopened;  /* threads opened directly */
	bool exited;
};

/* What attach keeps: the event set, opened events, rings, processes, event sets per thread. */
struct pm_attach {
	struct pm_evset ev;       /* the set (ev.flags: flags, a copy), from the first open */
	uint8_t *flags;
	bool attached;            /* opened per target thread: one event set counts (accept) */
	char err[512];            /* the last failure's line (pm_attach_error()) */
	bool err_usage;           /* ... a bad option value */
	int *fds;
	size_t nfds, capfds;
	uint32_t *fdev;           /* the event of each fd */
	size_t capfdev;
	struct pm_ring **rings;   /* one per ring: per CPU */
	size_t nrings;
	int *cpus;
	int ncpu;
	unsigned pages;           /* the rings' data pages: the next ring's */
	unsigned base_pages;      /* ... at least, when a larger one is refused (burst_pages()) */
	struct aproc *procs;
	size_t nprocs;
	struct pm_idtab id_owner; /* event id -> the thread it was opened on */
	struct pm_idtab chosen;   /* thread -> the one event owner whose records count */
	uint64_t threads;         /* threads opened on (attached) */
	double attach_ms;         /* from the first open to all enabled (attached) */
	int64_t threads_live;
	uint64_t dups;
	int fail_ev;              /* the event whose open failed */
	long refused;             /* the kernel's time refused: paranoid level (-1 unknown), 0 not */
	bool err_set;             /* the error is in err already */
	int *cw_fds;              /* CPU-wide events: event * ncpu + CPU index, -1 closed */
	int *cw_keep;             /* and one on pmuprof itself, +1 (0: none), per event */
	uint64_t *cw_hits;        /* their hits in the fds closed, per event */
	uint64_t lost_closed;     /* the kernel's lost counts of the fds closed (fd_lost()) */
	bool lost_unknown;        /* an fd without that count (a kernel before 6.0) */
};

static int open_thread(struct pm_attach *a, pid_t tid);

/*
 * The error of the call in progress, one line (pm_attach_error(): each
 * public call that can fail empties it first); @usage: a bad option value.
 */
PM_PRINTF(3, 4) static void set_err(struct pm_attach *a, bool usage, const char *fmt, ...)
{
	va_list ap;

	a->err_usage = usage;
	va_start(ap, fmt); /* one error style: pm_seterr()'s, sanitized where it is made */
	pm_vseterr(a->err, sizeof(a->err), fmt, ap);
	va_end(ap);
}

const char *pm_attach_error(const struct pm_attach *a)
{
	return a->err;
}

bool pm_attach_error_usage(const struct pm_attach *a)
{
	return a->err_usage;
}

/*
 * The records the event of @fd could not write, ring full: the kernel's
 * count (PERF_FORMAT_LOST, read as value and lost).  Read before each
 * close and at the end.  An inherited event's copies (the launched
 * command's threads, threads born after an attach) count theirs in it:
 * the kernel charges a loss to the event at the root of the inheritance,
 * whose ring it is (kernel/events/ring_buffer.c, __perf_output_begin()).
 */
static uint64_t fd_lost(struct pm_attach *a, int fd)
{
	uint64_t v[2];
	ssize_t n = read(fd, v, sizeof(v));

	if (n == (ssize_t)sizeof(v))
		return v[1];
	if (n == (ssize_t)sizeof(v[0])) /* opened without it */
		a->lost_unknown = true;
	return 0;
}

/* Close an event's @fd, its lost count kept. */
static void close_ev(struct pm_attach *a, int fd)
{
	a->lost_closed += fd_lost(a, fd);
	close(fd);
}

struct pm_attach *pm_attach_new(bool attached)
{
	struct pm_attach *a = xcalloc(1, sizeof(struct pm_attach));

	a->attached = attached;
	return a;
}

void pm_attach_free(struct pm_attach *a)
{
	if (!a)
		return;
	pm_idtab_free(&a->id_owner);
	pm_idtab_free(&a->chosen);
	free(a->flags);
	free(a->cw_keep);
	free(a->cw_hits);
	free(a);
}

/* The warning of pm_attach_resolve_kernel(), once the events are open (a failed open is one line). */
void pm_attach_warn_refused(struct pm_attach *a)
{
	if (!a->refused)
		return;
	pm_warn("the kernel's time is not counted (kernel.perf_event_paranoid=%ld): samples are "
		"user CPU only; run as root, grant CAP_PERFMON or lower it to 1 to count it",
		a->refused);
	a->refused = 0;
}

/* "0-3,5" -> list of CPU numbers. */
static int online_cpus(int **out)
{
	char *buf, *p;
	int *cpus = NULL;
	size_t n = 0, cap = 0;

	if (pm_read_file("/sys/devices/system/cpu/online", &buf, 4096) < 0) {
		long nc = sysconf(_SC_NPROCESSORS_ONLN);
		int i;
		if (nc < 1)
			nc = 1;
		cpus = xcalloc((size_t)nc, sizeof(int));
		for (i = 0; i < nc; i++)
			cpus[i] = i;
		*out = cpus;
		return (int)nc;
	}
	p = buf;
	while (*p && *p != '\n') {
		char *end;
		long a = strtol(p, &end, 10), b = a;
		if (end == p)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long c = a; c <= b && c < 65536; c++) {
			PM_GROW(cpus, cap, n + 1);
			cpus[n++] = (int)c;
		}
		p = *end == ',' ? end + 1 : end;
	}
	free(buf);
	*out = cpus;
	return (int)n;
}

/*
 * Which records count.  A thread can carry several sets of our events: the
 * ones opened on it, and ones inherited from the thread that created it
 * when that one was opened first (during the attach, both happen).  Each
 * set samples it at the full rate, so per thread only one set counts: the
 * set opened on the thread itself, else the first set seen (records carry
 * the id of the event at the root of the inheritance).
 */
bool pm_attach_accept(struct pm_attach *a, uint64_t id, uint32_t tid)
{
	int32_t owner, c;

	if (!a->attached || !pm_idtab_get(&a->id_owner, id, &owner))
		return true;
	if (pm_idtab_get(&a->chosen, tid, &c)) {
		if (c == owner)
			return true;
		a->dups++;
		return false;
	}
	pm_idtab_put(&a->chosen, tid, owner);
	return true;
}

/*
 * Wake the drain after a few samples, not a quarter of the ring: the
 * goroutine inspector reads the target's g as the sample is drained, and a
 * goroutine read tens of milliseconds late has often moved on (measured on
 * tests/go/creators: 2100 of 3000 samples read late at a 1 MiB watermark).
 * "A few" is 2 ms of samples (at least 4): every wakeup costs the target an
 * interrupt-time wakeup and the drain a poll round trip.  At 10 kHz on
 * benchcpu (scripts/bench.sh), pmuprof's CPU per sample: every 4 samples
 * 8.7 us, 2 ms 6.2 us, 4 ms 4.7 us; on tests/go/creators, goroutines
 * dropped as moved on: 0.24 %, 0.5 %, 0.9 %.
 */
static uint32_t wakeup_bytes(const struct pm_evset *set, unsigned pages)
{
	uint64_t n = 4, w;

	if (!set->period && set->freq / 500 > n)
		n = set->freq / 500;
	w = (uint64_t)(set->stack_size + 1024) * n;
	if (w > (uint64_t)pages * 4096 / 4)
		w = (uint64_t)pages * 4096 / 4;
	return (uint32_t)w;
}

static unsigned ring_pages(const struct pm_evset *set, size_t nev, bool unrated)
{
	/*
	 * A CPU runs one thread at a time, so its ring takes at most the rate
	 * in samples a second per event: room for 200 ms of them (at least 64
	 * samples; 512 with -c, whose rate is unknown), between 512 KiB and
	 * 8 MiB per CPU.  The drain wakes every 2 ms of samples; 200 ms covers
	 * it being starved by a saturated machine.  (Was 512 samples at least:
	 * 8 MiB per CPU at 1 kHz with the 8 KiB copy, 512 MiB of locked
	 * memory on a 64-CPU server.  At 10 kHz, 4 MiB lost 102 of 28 000
	 * samples on benchcpu with two busy threads; 8 MiB none.)  The
	 * creation probes (--creators, attached) fire at the program's rate of
	 * `go` statements, which nothing bounds: they keep 512 samples.
	 */
	uint64_t n = set->period ? 512 : PM_MAX(64, set->freq / 5);
	uint64_t want;
	unsigned pages = 128;

	if (unrated)
		n = PM_MAX(n, 512);
	want = (uint64_t)(set->stack_size + 1024) * n * (nev ? nev : 1);

	while ((uint64_t)pages * 4096 < want && pages < 2048)
		pages *= 2;
	return pages;
}

static void sampling_of(const struct pm_evset *set, struct pm_evt_sampling *smp)
{
	memset(smp, 0, sizeof(*smp));
	smp->freq = set->period ? 0 : (set->freq ? set->freq : set->default_freq);
	smp->period = set->period;
	smp->rate_default = !set->freq && !set->period; /* events: tracepoints/uprobes default to -c 1 */
	smp->stack_size = set->stack_size;
	smp->regs_mask = PM_UNW_PERF_REGS_MASK; /* as open_events(): all of them, for DWARF CFI */
	/*
	 * The kernel's frame-pointer walk of the user stack: measured on a
	 * 2-vCPU VM, benchcpu at 10 kHz, target CPU against perf record
	 * without a call graph: +8 to +10 % with it, +0 % with a 2 KiB copy
	 * alone, +1 % with 8 KiB, +4 % with 16 KiB.  With the walk, a 2 or 4
	 * KiB copy costs what perf --call-graph fp does, 8 KiB ~5 % more; but
	 * a goroutine descheduled before its sample is read is recognised only
	 * when the copy reaches its stack's root (goroutine.c, same_stack()):
	 * on lefthook, 4 KiB lost the goroutine of 22 % of the samples, 16 KiB
	 * of 6 %; 8 KiB is PM_RECORD_DEFAULT_STACK (record.h).
	 * Kept by default all the same: it is the only record of a goroutine's
	 * stack under a sample on the system stack (g0) as it was at the
	 * sample (curg.sched, read later, has mostly moved on: 13 % of such
	 * samples reached goexit without it on tests/go/sysstack, 99 % with);
	 * esbuild's GC work is a third of its samples.  --no-callchain trades
	 * that for the cost; --kernel alone keeps the kernel part.
	 */
	smp->callchain = !set->no_callchain || set->kernel;
	smp->no_user_callchain = set->no_callchain;
	smp->kernel_callchain = set->kernel;
	smp->tracking = true;
}

static bool inherits(const struct pm_evt_spec *spec)
{
	/* events: a uprobe through the PMU is not inherited (pm_evt_parse), one in tracefs is */
	return spec->kind != PM_EVT_UPROBE || spec->probe[0];
}

/*
 * Events sampled by period (-c, and tracepoints and uprobes, every hit by
 * default) and the unrated sources' probes fire at the program's rate, in
 * bursts nothing bounds: a uprobe on a method called 7 777 times in a
 * tight loop writes 70 MiB of samples (9.5 KiB each with the 8 KiB stack
 * copy) in about 0.2 s.  The drain keeps up on average (12 us of its CPU
 * per sample against the target's 30 us), but not through a stall: the
 * first sample loads the program's symbols (10-40 ms on a loaded 2-CPU
 * machine), and a busy machine leaves it waiting tens of ms more.  8 MiB
 * a CPU (ring_pages()) covers ~30 ms of such a burst: at a load of 20 on
 * 2 CPUs, 18 of 100 runs lost 25 to 1 700 samples.  So these get 64 MiB
 * of rings in all, 8 to 32 MiB a CPU (32 MiB covers ~120 ms): 64 MiB on
 * 2 to 8 CPUs, 8 MiB a CPU as before from 8 CPUs up.  Where the locked
 * memory is refused, ring_for() halves it back to ring_pages().
 */
#define BURST_RING_TOTAL (64u << 20)
#define BURST_RING_MAX (32u << 20)

static unsigned burst_pages(unsigned pages, int ncpu)
{
	unsigned want = 1;

	while ((uint64_t)want * 2 * 4096 <= BURST_RING_TOTAL / (unsigned)(ncpu > 0 ? ncpu : 1) &&
	       want * 2 * 4096 <= BURST_RING_MAX)
		want *= 2;
	return PM_MAX(pages, want);
}

/* The set kept (its flags copied), its CPU-wide events' state. */
static void take_set(struct pm_attach *a, const struct pm_evset *set)
{
	a->ev = *set;
	a->flags = xcalloc(set->n ? set->n : 1, sizeof(*a->flags));
	if (set->n)
		memcpy(a->flags, set->flags, set->n * sizeof(*a->flags));
	a->ev.flags = a->flags;
	a->cw_keep = xcalloc(set->n ? set->n : 1, sizeof(*a->cw_keep));
	a->cw_hits = xcalloc(set->n ? set->n : 1, sizeof(*a->cw_hits));
}

/* The set taken, the CPUs, the rings' size and every event's attr. */
static void setup_events(struct pm_attach *a, const struct pm_evset *set, bool enable_on_exec)
{
	struct pm_evt_sampling smp;
	size_t e, nsmp = 0;
	bool unrated = false, burst = false;

	take_set(a, set);
	a->ncpu = online_cpus(&a->cpus);
	a->rings = xcalloc((size_t)a->ncpu, sizeof(*a->rings));
	a->nrings = (size_t)a->ncpu;
	sampling_of(&a->ev, &smp);
	smp.enable_on_exec = enable_on_exec;
	for (e = 0; e < a->ev.n; e++)
		smp.raw = smp.raw || (a->flags[e] & PM_EVSET_RAW);
	for (e = 0; e < a->ev.n; e++) {
		/* frames: kernel stacks need the kernel's time counted; :u stays :u */
		if (a->ev.kernel && !a->ev.spec[e].ukmods)
			a->ev.spec[e].exclude_kernel = false;
		smp.inherit = inherits(&a->ev.spec[e]);
		pm_evt_attr(&a->ev.spec[e], &smp, &a->ev.attr[e]);
		if (!(a->flags[e] & PM_EVSET_UNRATED))
			nsmp++;
		else
			unrated = true;
		burst = burst || unrated || !a->ev.attr[e].freq;
	}
	a->pages = a->base_pages = ring_pages(&a->ev, nsmp, unrated);
	if (burst)
		a->pages = burst_pages(a->pages, a->ncpu);
	for (e = 0; e < a->ev.n; e++) {
		a->ev.attr[e].watermark = 1;
		a->ev.attr[e].wakeup_watermark = wakeup_bytes(&a->ev, a->pages);
		if (a->ev.adjust_attr) /* the caller's (a profile source's) own needs */
			a->ev.adjust_attr(a->ev.arg, e, &a->ev.attr[e]);
	}
}

/*
 * A hardware event this CPU lacks falls back to cpu-clock with one warning
 * line, as perf does, or is an error under --strict; a precise level the
 * PMU lacks is lowered, with a warning.  Probed with a counter on pmuprof
 * itself, before anything opens on the target.  0 or -1.
 */
int pm_attach_resolve_hardware(struct pm_attach *a, struct pm_evt_spec *spec, size_t *n,
			       bool strict)
{
	char buf[512], gone[256] = "";
	size_t e, k, ngone = 0;
	bool clock = false;

	a->err[0] = '\0';
	for (e = 0; e < *n; e++)
		clock = clock || !strcmp(spec[e].name, "cpu-clock");
	for (e = 0; e < *n; e++) {
		struct pm_evt_spec *sp = &spec[e];
		struct perf_event_attr ca;
		unsigned want = sp->precise;
		int fd;

		if (!sp->hardware)
			continue;
		pm_evt_count_attr(sp, &ca);
		for (;;) {
			if (sp->absent) { /* no such PMU here */
				fd = -ENOENT;
				break;
			}
			ca.precise_ip = sp->precise & 3;
			fd = pm_evt_open(&ca, 0, -1, -1);
			if (fd >= 0 || !sp->precise || strict)
				break;
			sp->precise--;
		}
		if (fd >= 0) {
			close(fd);
			if (sp->precise != want)
				pm_warn("%s: precise level %u is not supported here; using %u", sp->name,
					want, sp->precise);
			continue;
		}
		sp->precise = want;
		if (!pm_evt_err_unsupported(fd))
			continue; /* the open on the target says why */
		if (strict) {
			set_err(a, false, "%s", pm_evt_strerror(fd, sp, &ca, buf, sizeof(buf)));
			return -1;
		}
		k = strlen(gone);
		snprintf(gone + k, sizeof(gone) - k, "%s%s", k ? ", " : "", sp->name);
		ngone++;
		if (clock) { /* cpu-clock is there already: this one goes */
			memmove(sp, sp + 1, (*n - e - 1) * sizeof(*sp));
			(*n)--;
			e--;
			continue;
		}
		{ /* with the modes of the event it replaces */
			struct pm_evt_spec was = *sp;

			if (pm_evt_parse("cpu-clock", sp, buf, sizeof(buf)) < 0)
				return -1;
			sp->ukmods = was.ukmods;
			sp->exclude_user = was.exclude_user;
			if (was.exclude_kernel)
				pm_evt_user_only(sp);
		}
		clock = true;
	}
	if (ngone)
		pm_warn("%s %s not supported here (no hardware PMU); falling back to cpu-clock", gone,
			ngone > 1 ? "are" : "is");
	return 0;
}

/*
 * The kernel's time: events given without :u/:k count it, as perf and Go's
 * profiler do, where the kernel allows it (root, CAP_PERFMON,
 * kernel.perf_event_paranoid <= 1).  Asked with a cpu-clock counter on
 * pmuprof itself: where refused, those events count user mode only and
 * one warning line says so (--kernel needs it: its open says why).
 */
void pm_attach_resolve_kernel(struct pm_attach *a, struct pm_evt_spec *spec, size_t n,
			      bool kernel)
{
	size_t e, nk = 0;
	long level = -1;

	a->refused = 0;
	for (e = 0; e < n; e++)
		nk += !spec[e].ukmods && !spec[e].exclude_kernel;
	if (!nk || kernel)
		return;
	if (pm_evt_kernel_allowed())
		return;
	for (e = 0; e < n; e++)
		if (!spec[e].ukmods && !spec[e].exclude_kernel)
			pm_evt_user_only(&spec[e]);
	pm_read_long("/proc/sys/kernel/perf_event_paranoid", &level);
	a->refused = level;
}

static int open_thread(struct pm_attach *a, pid_t tid);

/* The message of open_thread()'s failure @err (unless it said one): @err. */
static int open_failed(struct pm_attach *a, int err)
{
	int fe = a->fail_ev;
	char buf[512];

	if (!a->err_set) {
		pm_evt_strerror(err, &a->ev.spec[fe], &a->ev.attr[fe], buf, sizeof(buf));
		set_err(a, err == -EINVAL && a->ev.attr[fe].freq, "%s", buf);
	}
	return err;
}

/* Launch: every event on every CPU for @pid and, inherited, its threads. */
int pm_attach_open_events(struct pm_attach *a, const struct pm_evset *set, pid_t pid)
{
	int err;

	a->err[0] = '\0';
	setup_events(a, set, true);
	err = open_thread(a, pid);
	a->threads = 0; /* attach only */
	if (err)
		return open_failed(a, err);
	for (size_t e = 0; e < a->ev.n; e++)
		if ((a->flags[e] & PM_EVSET_CPUWIDE) && pm_attach_cpuwide(a, e, true) < 0)
			return -1;
	a->threads_live = 1; /* the command, once started */
	return 0;
}

int pm_attach_open_host(struct pm_attach *a, const struct pm_evset *set)
{
	int err;

	a->err[0] = '\0';
	setup_events(a, set, false);
	for (size_t e = 0; e < a->ev.n; e++)
		a->ev.attr[e].inherit = 0; /* every task already */
	err = open_thread(a, -1);
	a->threads = 0;
	if (err)
		return open_failed(a, err);
	for (size_t i = 0; i < a->nfds; i++)
		if (ioctl(a->fds[i], PERF_EVENT_IOC_ENABLE, 0) < 0) {
			set_err(a, false, "cannot enable the events: %s", strerror(errno));
			return -1;
		}
	return 0;
}

static void add_fd(struct pm_attach *a, int fd, int e)
{
	PM_GROW(a->fds, a->capfds, a->nfds + 1);
	PM_GROW(a->fdev, a->capfdev, a->nfds + 1);
	a->fdev[a->nfds] = (uint32_t)e;
	a->fds[a->nfds++] = fd;
}

/*
 * The ring of CPU index @c for the new event @fd: the first event on a CPU
 * owns that CPU's ring, later ones write into it.  0 or -errno, the
 * message in a->err (a->err_set).
 */
static int ring_for(struct pm_attach *a, int c, int fd)
{
	int err;

	if (!a->rings[c]) {
		err = pm_ring_open(&a->rings[c], fd, a->pages);
		/* locked memory refused (EPERM, ENOMEM): a burst's extra room is not needed */
		while (err && err != -EINVAL && a->pages > a->base_pages) {
			a->pages /= 2;
			err = pm_ring_open(&a->rings[c], fd, a->pages);
		}
		if (err) {
			set_err(a, false,
				"cannot map the perf ring buffer (%u KiB): %s; raise ulimit -l "
				"or kernel.perf_event_mlock_kb",
				a->pages * 4, strerror(-err));
			a->err_set = true;
		}
		return err;
	}
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, pm_ring_fd(a->rings[c])) < 0) {
		err = -errno;
		set_err(a, false, "cannot share the ring buffer of CPU %d: %s",
			a->cpus[c], strerror(errno));
		a->err_set = true;
		return err;
	}
	return 0;
}

/*
 * Open each event on each CPU on thread @tid, disabled (ring_for()).  On failure the
 * events of this thread are closed again; -errno (-ESRCH: the thread is
 * gone).  a->err_set when the message is already in a->err.
 */
static int open_thread(struct pm_attach *a, pid_t tid)
{
	size_t first = a->nfds;
	int i, err = 0;

	for (i = 0; i < a->ncpu * (int)a->ev.n && !err; i++) {
		uint64_t id = 0;
		int e = i % (int)a->ev.n, fd;
		struct perf_event_attr dummy;

		bool cw = a->flags[e] & PM_EVSET_CPUWIDE;

		if (cw) { /* its place on the thread: tracking, the ring */
			dummy = a->ev.attr[e];
			dummy.type = PERF_TYPE_SOFTWARE;
			dummy.config = PERF_COUNT_SW_DUMMY;
			dummy.config1 = dummy.config2 = 0;
		}
		fd = pm_evt_open(cw ? &dummy : &a->ev.attr[e], tid, a->cpus[i / (int)a->ev.n], -1);

		if (fd < 0) {
			err = fd;
			a->fail_ev = e;
			break;
		}
		add_fd(a, fd, e);
		err = ring_for(a, i / (int)a->ev.n, fd);
		if (!err && ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0) {
			pm_idtab_put(&a->id_owner, id, (int32_t)tid);
			if (a->ev.id)
				a->ev.id(a->ev.arg, id, (size_t)e, false);
		}
	}
	if (err) {
		/* a ring stays with its first fd: keep those fds open */
		while (a->nfds > first) {
			int fd = a->fds[a->nfds - 1];
			bool owner = false;
			for (i = 0; i < a->ncpu; i++)
				owner = owner || (a->rings[i] && pm_ring_fd(a->rings[i]) == fd);
			if (owner)
				break;
			close_ev(a, fd);
			a->nfds--;
		}
		return err;
	}
	pm_idtab_put(&a->chosen, (uint64_t)tid, (int32_t)tid);
	a->threads++;
	return 0;
}

static bool opened(struct pm_attach *a, pid_t tid)
{
	int32_t c;

	return pm_idtab_get(&a->chosen, (uint64_t)tid, &c) && c == tid;
}

/* The attach error for @err on process @p. */
static void attach_err(struct pm_attach *a, const struct aproc *p, pid_t tid, int err)
{
	char buf[512];

	if (a->err_set)
		return;
	pm_evt_strerror(err, &a->ev.spec[a->fail_ev], &a->ev.attr[a->fail_ev], buf, sizeof(buf));
	if (tid != p->pid)
		set_err(a, false, "cannot attach to thread %d of PID %d (%s): %s", (int)tid,
			(int)p->pid, p->comm, buf);
	else
		set_err(a, false, "cannot attach to PID %d (%s): %s", (int)p->pid, p->comm, buf);
	a->err_set = true;
}

/* Open on one thread.  0, 1 when the thread is gone, -errno. */
static int attach_thread(struct pm_attach *a, struct aproc *p, pid_t tid)
{
	int rc = open_thread(a, tid);

	if (rc == -ESRCH)
		return 1;
	if (rc) {
		attach_err(a, p, tid, rc);
		return rc;
	}
	p->nopened++;
	return 0;
}

static double env_seconds(const char *name)
{
	const char *v = getenv(name);
	char *end;
	double d;

	if (!v || !*v)
		return 0;
	d = strtod(v, &end);
	return *end || d < 0 || d > 60 ? 0 : d;
}

/*
 * Open the events on every target thread, listing /proc/PID/task again
 * until a pass finds no new thread, then enable them all.  0 or -1.
 */
int pm_attach_all(struct pm_attach *a, const struct pm_evset *set)
{
	struct rlimit rl;
	uint64_t t0;
	double delay;
	size_t i, k, e;
	int rc;

	a->err[0] = '\0';
	/* one fd per thread and CPU: take what the hard limit allows */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	setup_events(a, set, false);

	/* test hook: widen the window between the checks and the attach */
	delay = env_seconds("PMUPROF_TEST_ATTACH_DELAY");
	if (delay > 0)
		usleep((useconds_t)(delay * 1e6));

	t0 = pm_now_ns();
	for (i = 0; i < a->nprocs; i++) {
		struct aproc *p = &a->procs[i];
		int pass;

		if (p->tids) {
			/* -t is one thread only: per thread without inherit */
			for (e = 0; e < a->ev.n; e++)
				a->ev.attr[e].inherit = 0;
			for (k = 0; k < p->ntids; k++) {
				rc = attach_thread(a, p, p->tids[k]);
				if (rc < 0)
					return -1;
			}
			for (e = 0; e < a->ev.n; e++)
				a->ev.attr[e].inherit = inherits(&a->ev.spec[e]);
		} else {
			/* a process is followed into its new threads */
			for (pass = 0; pass < 1000; pass++) {
				pid_t *tids;
				long n = pm_target_threads(p->pid, &tids);
				size_t fresh = 0;

				if (n <= 0)
					break;
				for (k = 0; k < (size_t)n; k++) {
					if (opened(a, tids[k]))
						continue;
					rc = attach_thread(a, p, tids[k]);
					if (rc < 0) {
						free(tids);
						return -1;
					}
					fresh += rc == 0;
				}
				free(tids);
				if (!fresh)
					break;
			}
		}
		if (!p->nopened) {
			set_err(a, false,
				p->tids ? "PID %d (%s): the threads given with -t exited before "
					  "pmuprof could attach"
					: "PID %d (%s) exited before pmuprof could attach",
				(int)p->pid, p->comm);
			return -1;
		}
	}
	/*
	 * The ordered sources' events (the creation probe: a log of the
	 * goroutines) first, on every thread, then the others: enabled one
	 * thread after another, a goroutine made on a thread whose probe was
	 * not on yet could run in samples of a thread already sampled, and
	 * the log name its g's previous goroutine (seen: 3 samples in 22 000
	 * of tests/go/shortlived attached).  A goroutine made before its
	 * thread's probe was on is one made before the probe: the runtime's
	 * list tells it.
	 */
	for (k = 0; k < 2; k++)
		for (i = 0; i < a->nfds; i++) {
			if (!(a->flags[a->fdev[i]] & PM_EVSET_ORDERED) != (k != 0))
				continue;
			if (ioctl(a->fds[i], PERF_EVENT_IOC_ENABLE, 0) < 0 && errno != ESRCH) {
				set_err(a, false, "cannot enable the events: %s", strerror(errno));
				return -1;
			}
		}
	for (e = 0; e < a->ev.n; e++)
		if ((a->flags[e] & PM_EVSET_CPUWIDE) && pm_attach_cpuwide(a, e, true) < 0)
			return -1;
	a->attach_ms = (double)(pm_now_ns() - t0) / 1e6;
	a->threads_live = (int64_t)a->threads;
	return 0;
}

static bool proc_exited(struct aproc *p)
{
	size_t k;

	if (p->exited)
		return true;
	if (p->tids) {
		bool any = false;
		for (k = 0; k < p->ntids && !any; k++)
			any = pm_target_has_thread(p->pid, p->tids[k]);
		p->exited = !any;
	} else if (p->pidfd >= 0) {
		p->exited = pm_target_pidfd_exited(p->pidfd);
	} else {
		struct pm_task_info ti;
		p->exited = pm_target_task_info(p->pid, &ti) < 0 || ti.state == 'Z' ||
			    ti.state == 'X';
	}
	return p->exited;
}

bool pm_attach_all_exited(struct pm_attach *a)
{
	bool all = true;
	size_t i;

	for (i = 0; i < a->nprocs; i++)
		all = proc_exited(&a->procs[i]) && all;
	return all;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return x < y ? -1 : x > y;
}

static struct aproc *find_proc(struct pm_attach *a, pid_t pid)
{
	size_t i;

	for (i = 0; i < a->nprocs; i++)
		if (a->procs[i].pid == pid)
			return &a->procs[i];
	return NULL;
}

static struct aproc *add_proc(struct pm_attach *a, const struct pm_task_info *ti)
{
	struct aproc *p;

	a->procs = xrealloc(a->procs, (a->nprocs + 1) * sizeof(*a->procs));
	p = &a->procs[a->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = ti->tgid;
	snprintf(p->comm, sizeof(p->comm), "%s", ti->comm);
	p->pidfd = -1;
	return p;
}

/*
 * -p $$ and the like, once every target checked out (an error says only
 * itself): taken, with one line saying what it is.
 */
static void warn_kin(const struct pm_attach_targets *t)
{
	for (size_t i = 0; i < t->npids + t->ntids; i++) {
		pid_t id = i < t->npids ? t->pids[i] : t->tids[i - t->npids];
		const char *opt = i < t->npids ? "-p" : "-t";

		switch (pm_target_kin(id)) {
		case PM_KIN_SELF:
			pm_warn("%s %d is pmuprof itself: the profile will be of pmuprof's own work",
				opt, (int)id);
			break;
		case PM_KIN_ANCESTOR:
			pm_warn("%s %d is an ancestor of pmuprof (the shell that runs it?): it waits "
				"while pmuprof runs, so its profile will hold little; give the PID "
				"of the program to profile",
				opt, (int)id);
			break;
		case PM_KIN_NONE:
			break;
		}
	}
}

/* Check -p and -t against /proc, before anything is opened.  0 or -1. */
int pm_attach_check_targets(struct pm_attach *a, const struct pm_attach_targets *t)
{
	struct pm_task_info ti;
	size_t i;

	a->err[0] = '\0';
	for (i = 0; i < t->npids; i++) {
		pid_t pid = t->pids[i];

		if (find_proc(a, pid))
			continue;
		if (pm_target_task_info(pid, &ti) < 0) {
			set_err(a, false, "no process with PID %d", (int)pid);
			return -1;
		}
		if (ti.kthread) {
			set_err(a, false,
				"PID %d (%s) is a kernel thread: it has no user space to profile",
				(int)pid, ti.comm);
			return -1;
		}
		if (ti.tgid != pid) {
			set_err(a, false,
				"PID %d is a thread of process %d: use -p %d, or -t %d for this "
				"thread alone",
				(int)pid, (int)ti.tgid, (int)ti.tgid, (int)pid);
			return -1;
		}
		if (ti.state == 'Z' || ti.state == 'X') {
			set_err(a, false, "PID %d (%s) has exited: nothing to profile", (int)pid,
				ti.comm);
			return -1;
		}
		add_proc(a, &ti);
	}
	for (i = 0; i < t->ntids; i++) {
		pid_t tid = t->tids[i];
		struct aproc *p;
		size_t k;

		if (pm_target_task_info(tid, &ti) < 0) {
			set_err(a, false, "no thread with TID %d", (int)tid);
			return -1;
		}
		if (ti.kthread) {
			set_err(a, false,
				"TID %d (%s) is a kernel thread: it has no user space to profile",
				(int)tid, ti.comm);
			return -1;
		}
		p = find_proc(a, ti.tgid);
		if (t->npids && !p) {
			if (t->npids == 1)
				set_err(a, false,
					"thread %d is not in process %d (it belongs to PID %d)",
					(int)tid, (int)t->pids[0], (int)ti.tgid);
			else
				set_err(a, false,
					"thread %d is in none of the -p processes (it belongs to "
					"PID %d)",
					(int)tid, (int)ti.tgid);
			return -1;
		}
		if (!pm_target_has_thread(ti.tgid, tid)) {
			set_err(a, false, "thread %d has exited: nothing to profile", (int)tid);
			return -1;
		}
		if (!p) {
			struct pm_task_info pi;
			if (pm_target_task_info(ti.tgid, &pi) < 0)
				pi = ti;
			pi.tgid = ti.tgid;
			p = add_proc(a, &pi);
		}
		for (k = 0; k < p->ntids && p->tids[k] != tid; k++)
			;
		if (k == p->ntids) {
			p->tids = xrealloc(p->tids, (p->ntids + 1) * sizeof(*p->tids));
			p->tids[p->ntids++] = tid;
		}
	}
	for (i = 0; i < a->nprocs; i++) {
		int fd = pm_target_pidfd(a->procs[i].pid);
		a->procs[i].pidfd = fd >= 0 ? fd : -1;
		if (a->procs[i].tids)
			qsort(a->procs[i].tids, a->procs[i].ntids, sizeof(pid_t), cmp_pid);
	}
	warn_kin(t);
	return 0;
}

void pm_attach_summary(const struct pm_attach *a)
{
	char pids[256];
	size_t i, off = 0;

	pids[0] = '\0';
	for (i = 0; i < a->nprocs && off < sizeof(pids) - 16; i++)
		off += (size_t)snprintf(pids + off, sizeof(pids) - off, "%s%d", i ? "," : "",
					(int)a->procs[i].pid);
	pm_info("attached to %s %s%s%s%s: %" PRIu64 " thread%s, %" PRIu64 " events, in %.1f ms",
		a->nprocs > 1 ? "PIDs" : "PID", pids, a->nprocs == 1 ? " (" : "",
		a->nprocs == 1 ? a->procs[0].comm : "", a->nprocs == 1 ? ")" : "", a->threads,
		a->threads == 1 ? "" : "s", (uint64_t)a->nfds, a->attach_ms);
}

uint64_t pm_attach_threads(const struct pm_attach *a)
{
	return a->threads;
}

uint64_t pm_attach_nevents(const struct pm_attach *a)
{
	return a->nfds;
}

double pm_attach_ms(const struct pm_attach *a)
{
	return a->attach_ms;
}

size_t pm_attach_nprocs(const struct pm_attach *a)
{
	return a->nprocs;
}

pid_t pm_attach_pid(const struct pm_attach *a, size_t i)
{
	return a->procs[i].pid;
}

int pm_attach_pidfd(const struct pm_attach *a, size_t i)
{
	return a->procs[i].pidfd;
}

size_t pm_attach_nrings(const struct pm_attach *a)
{
	return a->nrings;
}

struct pm_ring *pm_attach_ring(const struct pm_attach *a, size_t i)
{
	return a->rings[i];
}

int64_t pm_attach_threads_live(const struct pm_attach *a)
{
	return a->threads_live;
}

uint64_t pm_attach_dups(const struct pm_attach *a)
{
	return a->dups;
}

bool pm_attach_thread_born(struct pm_attach *a, uint64_t id, uint32_t tid)
{
	if (!pm_attach_accept(a, id, tid))
		return false;
	a->threads_live++;
	return true;
}

void pm_attach_thread_gone(struct pm_attach *a, uint64_t id, uint32_t tid)
{
	if (pm_attach_accept(a, id, tid) && a->threads_live > 0)
		a->threads_live--;
}

void pm_attach_set_owner(struct pm_attach *a, uint64_t id, uint32_t tid)
{
	pm_idtab_put(&a->id_owner, id, (int32_t)tid);
	pm_idtab_put(&a->chosen, tid, (int32_t)tid);
}

const struct pm_idtab *pm_attach_owners(const struct pm_attach *a)
{
	return &a->id_owner;
}

void pm_attach_disable(struct pm_attach *a)
{
	for (size_t i = 0; i < a->nfds; i++)
		ioctl(a->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	for (size_t i = 0; a->cw_fds && i < a->ev.n * (size_t)a->ncpu; i++)
		if (a->cw_fds[i] >= 0)
			ioctl(a->cw_fds[i], PERF_EVENT_IOC_DISABLE, 0);
}

/* The hits of an open CPU-wide event's fds (its count: one per probe hit). */
static uint64_t cw_count(const struct pm_attach *a, size_t e)
{
	uint64_t n = 0;

	for (int c = 0; a->cw_fds && c < a->ncpu; c++) {
		int fd = a->cw_fds[e * (size_t)a->ncpu + (size_t)c];
		uint64_t buf[8];

		if (fd >= 0 && read(fd, buf, sizeof(buf)) >= 8)
			n += buf[0];
	}
	return n;
}

int pm_attach_cpuwide(struct pm_attach *a, size_t e, bool on)
{
	size_t nc = (size_t)a->ncpu;
	int *fds;

	a->err[0] = '\0';
	if (e >= a->ev.n || !(a->flags[e] & PM_EVSET_CPUWIDE))
		return -EINVAL;
	if (!a->cw_fds) {
		a->cw_fds = xmalloc(a->ev.n * nc * sizeof(int));
		for (size_t i = 0; i < a->ev.n * nc; i++)
			a->cw_fds[i] = -1;
	}
	fds = a->cw_fds + e * nc;
	if (!a->cw_keep[e]) {
		/*
		 * The keeper: disabled, on pmuprof (which never maps the
		 * target's binary), it keeps the uprobe registered while the
		 * CPU-wide ones close.  Without it each close unregisters the
		 * uprobe and waits for RCU grace periods (60-180 ms measured
		 * on a loaded VM), the loop stalled meanwhile; with it a close
		 * only takes the breakpoints out of the target.
		 */
		struct perf_event_attr ka = a->ev.attr[e];
		int fd;

		ka.disabled = 1;
		ka.inherit = ka.enable_on_exec = 0;
		ka.mmap = ka.mmap2 = ka.comm = ka.comm_exec = ka.task = 0;
		fd = pm_evt_open(&ka, getpid(), -1, -1);
		a->cw_keep[e] = fd >= 0 ? fd + 1 : -1;
	}
	if (!on) {
		a->cw_hits[e] += cw_count(a, e);
		for (size_t c = 0; c < nc; c++) {
			if (fds[c] >= 0)
				close_ev(a, fds[c]);
			fds[c] = -1;
		}
		return 0;
	}
	for (size_t c = 0; c < nc; c++) {
		struct perf_event_attr ca = a->ev.attr[e];
		uint64_t id = 0;
		int fd, err;

		if (fds[c] >= 0)
			continue;
		if (!a->rings[c]) /* opened per thread first: its dummy owns the ring */
			return -EINVAL;
		/* every process: no inheritance, no side-band records of them all */
		ca.disabled = ca.inherit = ca.enable_on_exec = 0;
		ca.mmap = ca.mmap2 = ca.comm = ca.comm_exec = ca.task = 0;
		fd = pm_evt_open(&ca, -1, a->cpus[c], -1);
		if (fd < 0) {
			char buf[512];

			set_err(a, false, "cannot open %s on CPU %d for every process: %s",
				a->ev.spec[e].name, a->cpus[c],
				pm_evt_strerror(fd, &a->ev.spec[e], &ca, buf, sizeof(buf)));
			a->err_set = true;
			return fd;
		}
		fds[c] = fd;
		err = ring_for(a, (int)c, fd);
		if (err)
			return err;
		if (ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0 && a->ev.id)
			a->ev.id(a->ev.arg, id, e, true);
	}
	return 0;
}

uint64_t pm_attach_cpuwide_hits(const struct pm_attach *a, size_t e)
{
	return e < a->ev.n && (a->flags[e] & PM_EVSET_CPUWIDE) ? a->cw_hits[e] + cw_count(a, e)
								: 0;
}

bool pm_attach_lost(struct pm_attach *a, uint64_t *np)
{
	uint64_t n = a->lost_closed;
	size_t i;

	for (i = 0; a->cw_fds && i < a->ev.n * (size_t)a->ncpu; i++)
		if (a->cw_fds[i] >= 0)
			n += fd_lost(a, a->cw_fds[i]);
	for (i = 0; i < a->nfds; i++)
		n += fd_lost(a, a->fds[i]);
	*np = n;
	return !a->lost_unknown;
}

void pm_attach_close(struct pm_attach *a)
{
	size_t i;

	for (i = 0; a->cw_fds && i < a->ev.n * (size_t)a->ncpu; i++)
		if (a->cw_fds[i] >= 0)
			close(a->cw_fds[i]);
	for (i = 0; i < a->ev.n; i++)
		if (a->cw_keep[i] > 0)
			close(a->cw_keep[i] - 1);
	free(a->cw_fds);
	a->cw_fds = NULL;

	for (i = 0; i < a->nrings; i++)
		pm_ring_free(a->rings[i]);
	for (i = 0; i < a->nfds; i++)
		close(a->fds[i]);
	free(a->rings);
	free(a->fds);
	free(a->fdev);
	free(a->cpus);
	for (i = 0; i < a->nprocs; i++) {
		if (a->procs[i].pidfd >= 0)
			close(a->procs[i].pidfd);
		free(a->procs[i].tids);
	}
	free(a->procs);
}
