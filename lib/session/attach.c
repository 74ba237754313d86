/*
 * attach: the targets and the events on them (attach.h).
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
 * event: samples are kept from one only (see pm_att_accept()).  All are
 * enabled with PERF_EVENT_IOC_ENABLE once everything is open.
 */
#include "session/attach.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "session/capture.h"
#include "capture/datafile.h"
#include "perf/ring.h"
#include "session/source.h"
#include "perf/target.h"

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

/* What attach keeps of a session: opened events, rings, processes, event sets. */
struct pm_att {
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
	int64_t threads_live;
	uint64_t dups;
	int fail_ev;              /* the event whose open failed */
	long refused;             /* the kernel's time refused: paranoid level (-1 unknown), 0 not */
	bool err_set;             /* the error is in s->res already */
	int *cw_fds;              /* s->cpuwide events: event * ncpu + CPU index, -1 closed */
	int cw_keep[PM_SES_EVT_MAX]; /* and one on pmuprof itself, +1 (0: none) */
	uint64_t cw_hits[PM_SES_EVT_MAX]; /* their hits in the fds closed */
	uint64_t lost_closed;     /* the kernel's lost counts of the fds closed (fd_lost()) */
	bool lost_unknown;        /* an fd without that count (a kernel before 6.0) */
};

static int open_thread(struct session *s, pid_t tid);

/*
 * The records the event of @fd could not write, ring full: the kernel's
 * count (PERF_FORMAT_LOST, read as value and lost).  Read before each
 * close and at the end.  An inherited event's copies (the launched
 * command's threads, threads born after an attach) count theirs in it:
 * the kernel charges a loss to the event at the root of the inheritance,
 * whose ring it is (kernel/events/ring_buffer.c, __perf_output_begin()).
 */
static uint64_t fd_lost(struct session *s, int fd)
{
	uint64_t v[2];
	ssize_t n = read(fd, v, sizeof(v));

	if (n == (ssize_t)sizeof(v))
		return v[1];
	if (n == (ssize_t)sizeof(v[0])) /* opened without it */
		s->att->lost_unknown = true;
	return 0;
}

/* Close an event's @fd, its lost count kept. */
static void close_ev(struct session *s, int fd)
{
	s->att->lost_closed += fd_lost(s, fd);
	close(fd);
}

struct pm_att *pm_att_new(void)
{
	return xcalloc(1, sizeof(struct pm_att));
}

void pm_att_free(struct pm_att *a)
{
	if (!a)
		return;
	pm_idtab_free(&a->id_owner);
	pm_idtab_free(&a->chosen);
	free(a);
}

/* The warning of pm_att_resolve_kernel(), once the events are open (a failed open is one line). */
static void warn_refused(struct session *s)
{
	if (!s->att->refused)
		return;
	pm_warn("the kernel's time is not counted (kernel.perf_event_paranoid=%ld): samples are "
		"user CPU only; run as root, grant CAP_PERFMON or lower it to 1 to count it",
		s->att->refused);
	s->att->refused = 0;
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
bool pm_att_accept(struct session *s, uint64_t id, uint32_t tid)
{
	int32_t owner, c;

	if (!s->attach || !pm_idtab_get(&s->att->id_owner, id, &owner))
		return true;
	if (pm_idtab_get(&s->att->chosen, tid, &c)) {
		if (c == owner)
			return true;
		s->att->dups++;
		return false;
	}
	pm_idtab_put(&s->att->chosen, tid, owner);
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
static uint32_t wakeup_bytes(const struct pm_record_cfg *cfg, unsigned pages)
{
	uint64_t n = 4, w;

	if (!cfg->period && cfg->freq / 500 > n)
		n = cfg->freq / 500;
	w = (uint64_t)(cfg->stack_size + 1024) * n;
	if (w > (uint64_t)pages * 4096 / 4)
		w = (uint64_t)pages * 4096 / 4;
	return (uint32_t)w;
}

static unsigned ring_pages(const struct pm_record_cfg *cfg, size_t nev, bool unrated)
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
	uint64_t n = cfg->period ? 512 : PM_MAX(64, cfg->freq / 5);
	uint64_t want;
	unsigned pages = 128;

	if (unrated)
		n = PM_MAX(n, 512);
	want = (uint64_t)(cfg->stack_size + 1024) * n * (nev ? nev : 1);

	while ((uint64_t)pages * 4096 < want && pages < 2048)
		pages *= 2;
	return pages;
}

static void sampling_of(const struct pm_record_cfg *cfg, struct pm_evt_sampling *smp)
{
	memset(smp, 0, sizeof(*smp));
	smp->freq = cfg->period ? 0 : (cfg->freq ? cfg->freq : PM_RECORD_DEFAULT_FREQ);
	smp->period = cfg->period;
	smp->rate_default = !cfg->freq && !cfg->period; /* events: tracepoints/uprobes default to -c 1 */
	smp->stack_size = cfg->stack_size;
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
	 * of 6 %; 8 KiB is PM_RECORD_DEFAULT_STACK.
	 * Kept by default all the same: it is the only record of a goroutine's
	 * stack under a sample on the system stack (g0) as it was at the
	 * sample (curg.sched, read later, has mostly moved on: 13 % of such
	 * samples reached goexit without it on tests/go/sysstack, 99 % with);
	 * esbuild's GC work is a third of its samples.  --no-callchain trades
	 * that for the cost; --kernel alone keeps the kernel part.
	 */
	smp->callchain = !cfg->no_callchain || cfg->kernel;
	smp->no_user_callchain = cfg->no_callchain;
	smp->kernel_callchain = cfg->kernel;
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

/* The CPUs, the rings' size and every event's attr. */
static void setup_events(struct session *s, bool enable_on_exec)
{
	struct pm_evt_sampling smp;
	size_t e, nsmp = 0;
	bool unrated = false, burst = false;

	s->att->ncpu = online_cpus(&s->att->cpus);
	s->att->rings = xcalloc((size_t)s->att->ncpu, sizeof(*s->att->rings));
	s->att->nrings = (size_t)s->att->ncpu;
	sampling_of(s->cfg, &smp);
	smp.enable_on_exec = enable_on_exec;
	for (e = 0; e < s->nev; e++)
		smp.raw = smp.raw || pm_sources[s->src[e]]->raw;
	for (e = 0; e < s->nev; e++) {
		/* frames: kernel stacks need the kernel's time counted; :u stays :u */
		if (s->cfg->kernel && !s->spec[e].ukmods)
			s->spec[e].exclude_kernel = false;
		smp.inherit = inherits(&s->spec[e]);
		pm_evt_attr(&s->spec[e], &smp, &s->attr[e]);
		if (!pm_sources[s->src[e]]->unrated)
			nsmp++;
		else
			unrated = true;
		burst = burst || unrated || !s->attr[e].freq;
	}
	s->att->pages = s->att->base_pages = ring_pages(s->cfg, nsmp, unrated);
	if (burst)
		s->att->pages = burst_pages(s->att->pages, s->att->ncpu);
	for (e = 0; e < s->nev; e++) {
		s->attr[e].watermark = 1;
		s->attr[e].wakeup_watermark = wakeup_bytes(s->cfg, s->att->pages);
		pm_src_adjust_attr(s, e, &s->attr[e]); /* the source's own needs */
	}
}

/*
 * A hardware event this CPU lacks falls back to cpu-clock with one warning
 * line, as perf does, or is an error under --strict; a precise level the
 * PMU lacks is lowered, with a warning.  Probed with a counter on pmuprof
 * itself, before anything opens on the target.  0 or -1 (s->res set).
 */
int pm_att_resolve_hardware(struct session *s)
{
	char buf[512], gone[256] = "";
	size_t e, k, ngone = 0;
	bool clock = false;

	for (e = 0; e < s->nev; e++)
		clock = clock || !strcmp(s->spec[e].name, "cpu-clock");
	for (e = 0; e < s->nev; e++) {
		struct pm_evt_spec *sp = &s->spec[e];
		struct perf_event_attr a;
		unsigned want = sp->precise;
		int fd;

		if (!sp->hardware)
			continue;
		pm_evt_count_attr(sp, &a);
		for (;;) {
			if (sp->absent) { /* no such PMU here */
				fd = -ENOENT;
				break;
			}
			a.precise_ip = sp->precise & 3;
			fd = pm_evt_open(&a, 0, -1, -1);
			if (fd >= 0 || !sp->precise || s->cfg->strict)
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
		if (s->cfg->strict) {
			pm_ses_err(s->res, PM_REC_ERR, "%s", pm_evt_strerror(fd, sp, &a, buf, sizeof(buf)));
			return -1;
		}
		k = strlen(gone);
		snprintf(gone + k, sizeof(gone) - k, "%s%s", k ? ", " : "", sp->name);
		ngone++;
		if (clock) { /* cpu-clock is there already: this one goes */
			memmove(sp, sp + 1, (s->nev - e - 1) * sizeof(*sp));
			s->nev--;
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
void pm_att_resolve_kernel(struct session *s)
{
	struct perf_event_attr a;
	size_t e, n = 0;
	long level = -1;
	int fd;

	s->att->refused = 0;
	for (e = 0; e < s->nev; e++)
		n += !s->spec[e].ukmods && !s->spec[e].exclude_kernel;
	if (!n || s->cfg->kernel)
		return;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.disabled = 1;
	a.exclude_hv = 1;
	fd = pm_evt_open(&a, 0, -1, -1);
	if (fd >= 0) {
		close(fd);
		return;
	}
	if (fd != -EACCES && fd != -EPERM)
		return; /* not a question of rights: the open on the target says what */
	for (e = 0; e < s->nev; e++)
		if (!s->spec[e].ukmods && !s->spec[e].exclude_kernel)
			pm_evt_user_only(&s->spec[e]);
	pm_read_long("/proc/sys/kernel/perf_event_paranoid", &level);
	s->att->refused = level;
}


/* Launch: every event on every CPU for @pid and, inherited, its threads. */
int pm_att_open_events(struct session *s, pid_t pid)
{
	char buf[512];
	int err;

	setup_events(s, true);
	err = open_thread(s, pid);
	s->res->threads = 0; /* attach only */
	if (err) {
		int fe = s->att->fail_ev;

		if (!s->att->err_set)
			pm_ses_err(s->res, err == -EINVAL && s->attr[fe].freq ? PM_REC_USAGE : PM_REC_ERR,
				   "%s",
				   pm_evt_strerror(err, &s->spec[fe], &s->attr[fe], buf, sizeof(buf)));
		return err;
	}
	for (size_t e = 0; e < s->nev; e++)
		if (s->cpuwide[e] && pm_att_cpuwide(s, e, true) < 0)
			return -1;
	pm_ses_layout(s);
	s->att->threads_live = 1; /* the command, once started */
	warn_refused(s);
	return 0;
}

static void add_fd(struct session *s, int fd, int e)
{
	PM_GROW(s->att->fds, s->att->capfds, s->att->nfds + 1);
	PM_GROW(s->att->fdev, s->att->capfdev, s->att->nfds + 1);
	s->att->fdev[s->att->nfds] = (uint32_t)e;
	s->att->fds[s->att->nfds++] = fd;
}

/*
 * The ring of CPU index @c for the new event @fd: the first event on a CPU
 * owns that CPU's ring, later ones write into it.  0 or -errno, the
 * message in s->res (s->att->err_set).
 */
static int ring_for(struct session *s, int c, int fd)
{
	int err;

	if (!s->att->rings[c]) {
		err = pm_ring_open(&s->att->rings[c], fd, s->att->pages);
		/* locked memory refused (EPERM, ENOMEM): a burst's extra room is not needed */
		while (err && err != -EINVAL && s->att->pages > s->att->base_pages) {
			s->att->pages /= 2;
			err = pm_ring_open(&s->att->rings[c], fd, s->att->pages);
		}
		if (err) {
			pm_ses_err(s->res, PM_REC_ERR,
				"cannot map the perf ring buffer (%u KiB): %s; raise ulimit -l "
				"or kernel.perf_event_mlock_kb",
				s->att->pages * 4, strerror(-err));
			s->att->err_set = true;
		}
		return err;
	}
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, pm_ring_fd(s->att->rings[c])) < 0) {
		err = -errno;
		pm_ses_err(s->res, PM_REC_ERR, "cannot share the ring buffer of CPU %d: %s",
			s->att->cpus[c], strerror(errno));
		s->att->err_set = true;
		return err;
	}
	return 0;
}

/*
 * Open each event on each CPU on thread @tid, disabled (ring_for()).  On failure the
 * events of this thread are closed again; -errno (-ESRCH: the thread is
 * gone).  s->att->err_set when the message is already in s->res.
 */
static int open_thread(struct session *s, pid_t tid)
{
	size_t first = s->att->nfds;
	int i, err = 0;

	for (i = 0; i < s->att->ncpu * (int)s->nev && !err; i++) {
		uint64_t id = 0;
		int e = i % (int)s->nev, fd;
		struct perf_event_attr dummy;

		if (s->cpuwide[e]) { /* its place on the thread: tracking, the ring */
			dummy = s->attr[e];
			dummy.type = PERF_TYPE_SOFTWARE;
			dummy.config = PERF_COUNT_SW_DUMMY;
			dummy.config1 = dummy.config2 = 0;
		}
		fd = pm_evt_open(s->cpuwide[e] ? &dummy : &s->attr[e], tid,
				 s->att->cpus[i / (int)s->nev], -1);

		if (fd < 0) {
			err = fd;
			s->att->fail_ev = e;
			break;
		}
		add_fd(s, fd, e);
		err = ring_for(s, i / (int)s->nev, fd);
		if (!err && ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0) {
			pm_idtab_put(&s->att->id_owner, id, (int32_t)tid);
			if (s->nev > 1)
				pm_idtab_put(&s->ev_of, id, e);
		}
	}
	if (err) {
		/* a ring stays with its first fd: keep those fds open */
		while (s->att->nfds > first) {
			int fd = s->att->fds[s->att->nfds - 1];
			bool owner = false;
			for (i = 0; i < s->att->ncpu; i++)
				owner = owner || (s->att->rings[i] && pm_ring_fd(s->att->rings[i]) == fd);
			if (owner)
				break;
			close_ev(s, fd);
			s->att->nfds--;
		}
		return err;
	}
	pm_idtab_put(&s->att->chosen, (uint64_t)tid, (int32_t)tid);
	s->res->threads++;
	return 0;
}

static bool opened(struct session *s, pid_t tid)
{
	int32_t c;

	return pm_idtab_get(&s->att->chosen, (uint64_t)tid, &c) && c == tid;
}

/* The attach error for @err on process @p. */
static void attach_err(struct session *s, const struct aproc *p, pid_t tid, int err)
{
	char buf[512];

	if (s->att->err_set)
		return;
	pm_evt_strerror(err, &s->spec[s->att->fail_ev], &s->attr[s->att->fail_ev], buf, sizeof(buf));
	if (tid != p->pid)
		pm_ses_err(s->res, PM_REC_ERR, "cannot attach to thread %d of PID %d (%s): %s",
			(int)tid, (int)p->pid, p->comm, buf);
	else
		pm_ses_err(s->res, PM_REC_ERR, "cannot attach to PID %d (%s): %s", (int)p->pid,
			p->comm, buf);
	s->att->err_set = true;
}

/* Open on one thread.  0, 1 when the thread is gone, -errno. */
static int attach_thread(struct session *s, struct aproc *p, pid_t tid)
{
	int rc = open_thread(s, tid);

	if (rc == -ESRCH)
		return 1;
	if (rc) {
		attach_err(s, p, tid, rc);
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
 * until a pass finds no new thread, then enable them all.  0 or -1 with
 * the error in s->res.
 */
int pm_att_attach_all(struct session *s)
{
	struct rlimit rl;
	uint64_t t0;
	double delay;
	size_t i, k, e;
	int rc;

	/* one fd per thread and CPU: take what the hard limit allows */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	setup_events(s, false);

	/* test hook: widen the window between the checks and the attach */
	delay = env_seconds("PMUPROF_TEST_ATTACH_DELAY");
	if (delay > 0)
		usleep((useconds_t)(delay * 1e6));

	t0 = pm_now_ns();
	for (i = 0; i < s->att->nprocs; i++) {
		struct aproc *p = &s->att->procs[i];
		int pass;

		if (p->tids) {
			/* -t is one thread only: per thread without inherit */
			for (e = 0; e < s->nev; e++)
				s->attr[e].inherit = 0;
			for (k = 0; k < p->ntids; k++) {
				rc = attach_thread(s, p, p->tids[k]);
				if (rc < 0)
					return -1;
			}
			for (e = 0; e < s->nev; e++)
				s->attr[e].inherit = inherits(&s->spec[e]);
		} else {
			/* a process is followed into its new threads */
			for (pass = 0; pass < 1000; pass++) {
				pid_t *tids;
				long n = pm_target_threads(p->pid, &tids);
				size_t fresh = 0;

				if (n <= 0)
					break;
				for (k = 0; k < (size_t)n; k++) {
					if (opened(s, tids[k]))
						continue;
					rc = attach_thread(s, p, tids[k]);
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
			pm_ses_err(s->res, PM_REC_ERR,
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
		for (i = 0; i < s->att->nfds; i++) {
			if (pm_sources[s->src[s->att->fdev[i]]]->ordered != (k == 0))
				continue;
			if (ioctl(s->att->fds[i], PERF_EVENT_IOC_ENABLE, 0) < 0 && errno != ESRCH) {
				pm_ses_err(s->res, PM_REC_ERR, "cannot enable the events: %s",
					   strerror(errno));
				return -1;
			}
		}
	for (e = 0; e < s->nev; e++)
		if (s->cpuwide[e] && pm_att_cpuwide(s, e, true) < 0)
			return -1;
	s->res->attach_ms = (double)(pm_now_ns() - t0) / 1e6;
	s->res->events = s->att->nfds;
	s->att->threads_live = (int64_t)s->res->threads;
	pm_ses_layout(s);
	/*
	 * The address space after enabling: a mapping made in between is in
	 * both this snapshot and an MMAP2 record, which pm_maps ignores twice.
	 */
	for (i = 0; i < s->att->nprocs; i++)
		pm_cap_check(s, pm_reg_load_maps(s->reg, s->att->procs[i].pid, s->cap));
	warn_refused(s);
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

bool pm_att_all_exited(struct session *s)
{
	bool all = true;
	size_t i;

	for (i = 0; i < s->att->nprocs; i++)
		all = proc_exited(&s->att->procs[i]) && all;
	return all;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return x < y ? -1 : x > y;
}

static struct aproc *find_proc(struct session *s, pid_t pid)
{
	size_t i;

	for (i = 0; i < s->att->nprocs; i++)
		if (s->att->procs[i].pid == pid)
			return &s->att->procs[i];
	return NULL;
}

static struct aproc *add_proc(struct session *s, const struct pm_task_info *ti)
{
	struct aproc *p;

	s->att->procs = xrealloc(s->att->procs, (s->att->nprocs + 1) * sizeof(*s->att->procs));
	p = &s->att->procs[s->att->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = ti->tgid;
	snprintf(p->comm, sizeof(p->comm), "%s", ti->comm);
	p->pidfd = -1;
	return p;
}

/* Check -p and -t against /proc, before anything is opened.  0 or -1 with s->res set. */
/*
 * -p $$ and the like, once every target checked out (an error says only
 * itself): taken, with one line saying what it is.
 */
static void warn_kin(const struct pm_record_cfg *cfg)
{
	for (size_t i = 0; i < cfg->npids + cfg->ntids; i++) {
		pid_t id = i < cfg->npids ? cfg->pids[i] : cfg->tids[i - cfg->npids];
		const char *opt = i < cfg->npids ? "-p" : "-t";

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

int pm_att_check_targets(struct session *s)
{
	const struct pm_record_cfg *cfg = s->cfg;
	struct pm_task_info ti;
	size_t i;

	for (i = 0; i < cfg->npids; i++) {
		pid_t pid = cfg->pids[i];

		if (find_proc(s, pid))
			continue;
		if (pm_target_task_info(pid, &ti) < 0) {
			pm_ses_err(s->res, PM_REC_ERR, "no process with PID %d", (int)pid);
			return -1;
		}
		if (ti.kthread) {
			pm_ses_err(s->res, PM_REC_ERR,
				"PID %d (%s) is a kernel thread: it has no user space to profile",
				(int)pid, ti.comm);
			return -1;
		}
		if (ti.tgid != pid) {
			pm_ses_err(s->res, PM_REC_ERR,
				"PID %d is a thread of process %d: use -p %d, or -t %d for this "
				"thread alone",
				(int)pid, (int)ti.tgid, (int)ti.tgid, (int)pid);
			return -1;
		}
		if (ti.state == 'Z' || ti.state == 'X') {
			pm_ses_err(s->res, PM_REC_ERR, "PID %d (%s) has exited: nothing to profile",
				(int)pid, ti.comm);
			return -1;
		}
		add_proc(s, &ti);
	}
	for (i = 0; i < cfg->ntids; i++) {
		pid_t tid = cfg->tids[i];
		struct aproc *p;
		size_t k;

		if (pm_target_task_info(tid, &ti) < 0) {
			pm_ses_err(s->res, PM_REC_ERR, "no thread with TID %d", (int)tid);
			return -1;
		}
		if (ti.kthread) {
			pm_ses_err(s->res, PM_REC_ERR,
				"TID %d (%s) is a kernel thread: it has no user space to profile",
				(int)tid, ti.comm);
			return -1;
		}
		p = find_proc(s, ti.tgid);
		if (cfg->npids && !p) {
			if (cfg->npids == 1)
				pm_ses_err(s->res, PM_REC_ERR,
					"thread %d is not in process %d (it belongs to PID %d)",
					(int)tid, (int)cfg->pids[0], (int)ti.tgid);
			else
				pm_ses_err(s->res, PM_REC_ERR,
					"thread %d is in none of the -p processes (it belongs to "
					"PID %d)",
					(int)tid, (int)ti.tgid);
			return -1;
		}
		if (!pm_target_has_thread(ti.tgid, tid)) {
			pm_ses_err(s->res, PM_REC_ERR, "thread %d has exited: nothing to profile",
				(int)tid);
			return -1;
		}
		if (!p) {
			struct pm_task_info pi;
			if (pm_target_task_info(ti.tgid, &pi) < 0)
				pi = ti;
			pi.tgid = ti.tgid;
			p = add_proc(s, &pi);
		}
		for (k = 0; k < p->ntids && p->tids[k] != tid; k++)
			;
		if (k == p->ntids) {
			p->tids = xrealloc(p->tids, (p->ntids + 1) * sizeof(*p->tids));
			p->tids[p->ntids++] = tid;
		}
	}
	for (i = 0; i < s->att->nprocs; i++) {
		int fd = pm_target_pidfd(s->att->procs[i].pid);
		s->att->procs[i].pidfd = fd >= 0 ? fd : -1;
		if (s->att->procs[i].tids)
			qsort(s->att->procs[i].tids, s->att->procs[i].ntids, sizeof(pid_t), cmp_pid);
	}
	warn_kin(cfg);
	return 0;
}

void pm_att_summary(struct session *s)
{
	char pids[256];
	size_t i, off = 0;

	pids[0] = '\0';
	for (i = 0; i < s->att->nprocs && off < sizeof(pids) - 16; i++)
		off += (size_t)snprintf(pids + off, sizeof(pids) - off, "%s%d", i ? "," : "",
					(int)s->att->procs[i].pid);
	pm_info("attached to %s %s%s%s%s: %" PRIu64 " thread%s, %" PRIu64 " events, in %.1f ms",
		s->att->nprocs > 1 ? "PIDs" : "PID", pids, s->att->nprocs == 1 ? " (" : "",
		s->att->nprocs == 1 ? s->att->procs[0].comm : "", s->att->nprocs == 1 ? ")" : "", s->res->threads,
		s->res->threads == 1 ? "" : "s", s->res->events, s->res->attach_ms);
}

size_t pm_att_nprocs(const struct session *s)
{
	return s->att->nprocs;
}

pid_t pm_att_pid(const struct session *s, size_t i)
{
	return s->att->procs[i].pid;
}

int pm_att_pidfd(const struct session *s, size_t i)
{
	return s->att->procs[i].pidfd;
}

size_t pm_att_nrings(const struct session *s)
{
	return s->att->nrings;
}

struct pm_ring *pm_att_ring(const struct session *s, size_t i)
{
	return s->att->rings[i];
}

int64_t pm_att_threads_live(const struct session *s)
{
	return s->att->threads_live;
}

uint64_t pm_att_dups(const struct session *s)
{
	return s->att->dups;
}

bool pm_att_thread_born(struct session *s, uint64_t id, uint32_t tid)
{
	if (!pm_att_accept(s, id, tid))
		return false;
	s->att->threads_live++;
	return true;
}

void pm_att_thread_gone(struct session *s, uint64_t id, uint32_t tid)
{
	if (pm_att_accept(s, id, tid) && s->att->threads_live > 0)
		s->att->threads_live--;
}

void pm_att_set_owner(struct session *s, uint64_t id, uint32_t tid)
{
	pm_idtab_put(&s->att->id_owner, id, (int32_t)tid);
	pm_idtab_put(&s->att->chosen, tid, (int32_t)tid);
}

const struct pm_idtab *pm_att_owners(const struct session *s)
{
	return &s->att->id_owner;
}

void pm_att_disable(struct session *s)
{
	for (size_t i = 0; i < s->att->nfds; i++)
		ioctl(s->att->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	for (size_t i = 0; s->att->cw_fds && i < s->nev * (size_t)s->att->ncpu; i++)
		if (s->att->cw_fds[i] >= 0)
			ioctl(s->att->cw_fds[i], PERF_EVENT_IOC_DISABLE, 0);
}

/* The hits of an open CPU-wide event's fds (its count: one per probe hit). */
static uint64_t cw_count(const struct session *s, size_t e)
{
	uint64_t n = 0;

	for (int c = 0; s->att->cw_fds && c < s->att->ncpu; c++) {
		int fd = s->att->cw_fds[e * (size_t)s->att->ncpu + (size_t)c];
		uint64_t buf[8];

		if (fd >= 0 && read(fd, buf, sizeof(buf)) >= 8)
			n += buf[0];
	}
	return n;
}

int pm_att_cpuwide(struct session *s, size_t e, bool on)
{
	size_t nc = (size_t)s->att->ncpu;
	int *fds;

	if (e >= s->nev || !s->cpuwide[e])
		return -EINVAL;
	if (!s->att->cw_fds) {
		s->att->cw_fds = xmalloc(s->nev * nc * sizeof(int));
		for (size_t i = 0; i < s->nev * nc; i++)
			s->att->cw_fds[i] = -1;
	}
	fds = s->att->cw_fds + e * nc;
	if (!s->att->cw_keep[e]) {
		/*
		 * The keeper: disabled, on pmuprof (which never maps the
		 * target's binary), it keeps the uprobe registered while the
		 * CPU-wide ones close.  Without it each close unregisters the
		 * uprobe and waits for RCU grace periods (60-180 ms measured
		 * on a loaded VM), the loop stalled meanwhile; with it a close
		 * only takes the breakpoints out of the target.
		 */
		struct perf_event_attr a = s->attr[e];
		int fd;

		a.disabled = 1;
		a.inherit = a.enable_on_exec = 0;
		a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = 0;
		fd = pm_evt_open(&a, getpid(), -1, -1);
		s->att->cw_keep[e] = fd >= 0 ? fd + 1 : -1;
	}
	if (!on) {
		s->att->cw_hits[e] += cw_count(s, e);
		for (size_t c = 0; c < nc; c++) {
			if (fds[c] >= 0)
				close_ev(s, fds[c]);
			fds[c] = -1;
		}
		return 0;
	}
	for (size_t c = 0; c < nc; c++) {
		struct perf_event_attr a = s->attr[e];
		uint64_t id = 0;
		int fd, err;

		if (fds[c] >= 0)
			continue;
		if (!s->att->rings[c]) /* opened per thread first: its dummy owns the ring */
			return -EINVAL;
		/* every process: no inheritance, no side-band records of them all */
		a.disabled = a.inherit = a.enable_on_exec = 0;
		a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = 0;
		fd = pm_evt_open(&a, -1, s->att->cpus[c], -1);
		if (fd < 0) {
			char buf[512];

			pm_ses_err(s->res, PM_REC_ERR, "cannot open %s on CPU %d for every process: %s",
				   s->spec[e].name, s->att->cpus[c],
				   pm_evt_strerror(fd, &s->spec[e], &a, buf, sizeof(buf)));
			s->att->err_set = true;
			return fd;
		}
		fds[c] = fd;
		err = ring_for(s, (int)c, fd);
		if (err)
			return err;
		if (ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0) {
			pm_idtab_put(&s->ev_of, id, (int32_t)e);
			if (s->cap) /* a capture started: the new id goes into it before its samples */
				pm_cap_check(s, pm_data_write_evid(s->cap, id, (uint32_t)e));
		}
	}
	return 0;
}

uint64_t pm_att_cpuwide_hits(const struct session *s, size_t e)
{
	return e < s->nev && s->cpuwide[e] ? s->att->cw_hits[e] + cw_count(s, e) : 0;
}

void pm_att_lost_end(struct session *s)
{
	uint64_t n = s->att->lost_closed;
	size_t i;

	for (i = 0; s->att->cw_fds && i < s->nev * (size_t)s->att->ncpu; i++)
		if (s->att->cw_fds[i] >= 0)
			n += fd_lost(s, s->att->cw_fds[i]);
	for (i = 0; i < s->att->nfds; i++)
		n += fd_lost(s, s->att->fds[i]);
	if (s->att->lost_unknown)
		pm_ses_lost_end(s, 0, true);
	else if (n > s->lost_said)
		pm_ses_lost_end(s, n - s->lost_said, false);
}

void pm_att_close(struct session *s)
{
	size_t i;

	for (i = 0; s->att->cw_fds && i < s->nev * (size_t)s->att->ncpu; i++)
		if (s->att->cw_fds[i] >= 0)
			close(s->att->cw_fds[i]);
	for (i = 0; i < s->nev; i++)
		if (s->att->cw_keep[i] > 0)
			close(s->att->cw_keep[i] - 1);
	free(s->att->cw_fds);
	s->att->cw_fds = NULL;

	for (i = 0; i < s->att->nrings; i++)
		pm_ring_free(s->att->rings[i]);
	for (i = 0; i < s->att->nfds; i++)
		close(s->att->fds[i]);
	for (i = 0; i < s->nev; i++) /* events: once nothing uses them */
		pm_evt_uprobe_undefine(&s->spec[i]);
	free(s->att->rings);
	free(s->att->fds);
	free(s->att->fdev);
	free(s->att->cpus);
	for (i = 0; i < s->att->nprocs; i++) {
		if (s->att->procs[i].pidfd >= 0)
			close(s->att->procs[i].pidfd);
		free(s->att->procs[i].tids);
	}
	free(s->att->procs);
}
