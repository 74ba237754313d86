/*
 * The recording loop.
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
 * event: samples are kept from one only (see accept_record()).  All are
 * enabled with PERF_EVENT_IOC_ENABLE once everything is open.
 *
 * Draining: records from the CPU buffers are merged by time within each
 * pass, so an MMAP2 on one CPU is applied before a later sample on another.
 * A sample is unwound at once (its stack copy lives only in the ring) and
 * aggregated as a stack of unsymbolized frames; names are looked up once
 * per distinct frame when the recording ends.
 *
 * Capture and replay (--raw, pm_record_replay()): everything after the
 * rings -- maps, unwinders, stacks, on_record(), build_profile() -- is fed
 * by feed(), live from drain() or from a capture file.  Live, feed() also
 * appends each record it processed to the capture, with what the session
 * learnt from /proc on the way (maps snapshots, the build ID of each binary
 * it opened, attached event ids), so that a replay walks the same path
 * without a live process.  A sample's stack copy is cut to what the
 * unwinder needed: the slot of the last return address it read, checked
 * by walking the cut copy again (no match: the full copy is kept).
 */
#include "record.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <asm/perf_regs.h>

#include "datafile.h"
#include "events.h"
#include "goroutine.h"
#include "memlog.h"
#include "kallsyms.h"
#include "maps.h"
#include "outfile.h"
#include "pprof.h"
#include "profile.h"
#include "rec.h"
#include "ring.h"
#include "stacks.h"
#include "symtab.h"
#include "target.h"
#include "unwind.h"
#include "util.h"

#define MAX_FRAMES 1024
#define MAX_FRAMES_SYM 64
#define KERNEL_MAP (PM_STACKS_NO_MAP - 1) /* frames: stack frames in the kernel */
/* Limits: memory stays bounded whatever the target's stacks look like. */
#define LIMIT_MAP (PM_STACKS_NO_MAP - 2) /* the "[limit]" frame */
#define MAX_STACKS_DEFAULT (256u * 1024)  /* distinct stacks (PMUPROF_MAX_STACKS) */
#define MAX_DFRAMES_DEFAULT (1024u * 1024) /* distinct frames (PMUPROF_MAX_FRAMES) */
#define MAX_PROBES 4 /* goroutine creation probes: two per binary, two binaries */
#define PROBE_STACK 256 /* bytes of stack a creation probe copies */

/*
 * Unwinders, one per process (their caches are by pc), at most MAX_UNWS:
 * each holds ~360 KiB of caches and buffers, and a recording of a build
 * or a shell loop samples thousands of processes (3000 took 1.6 GB).  The
 * least recently used one is taken over (flushed) past that.
 */
#define MAX_UNWS 64

struct unw_slot {
	pid_t pid;
	struct pm_unw *u;
	uint64_t bad_gen; /* s->bad_gen when its caches were last flushed */
	uint64_t used;    /* s->unw_tick at its last use */
};

/* uint64 -> int32 open-addressing table; key 0 is not stored */
struct idtab {
	uint64_t *keys;
	int32_t *vals;
	size_t size, n;
	uint64_t seed; /* a capture picks the keys in a replay: pm_hash_seed() */
};

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

struct session {
	const struct pm_record_cfg *cfg;
	struct pm_record_result *res;
	/* the events (-e a,b,...): spec and attr i; attr 0 gives the record layout */
	struct pm_evt_spec spec[PM_EVT_MAX + MAX_PROBES];
	struct perf_event_attr attr[PM_EVT_MAX + MAX_PROBES];
	size_t nev;
	/*
	 * the user's events are the first nuser; after them come the probes
	 * on goroutine creation (--creators when attached), whose samples go
	 * to the goroutine inspector: probe[e] says which
	 */
	size_t nuser;
	enum { PROBE_NONE, PROBE_NEWPROC, PROBE_RUNQPUT } probe[PM_EVT_MAX + MAX_PROBES];
	uint64_t creations;
	/*
	 * --raw: the target memory the sample in progress read, as MEM entries
	 * (datafile.h): logged live, served at replay, so that a replay
	 * crosses the same stack switches and reads the same goroutines
	 */
	bool mlog_on;
	struct pm_mlog *mlog;
	struct idtab ev_of;      /* several events: event id -> its index */
	int fail_ev;             /* the event whose open failed */
	struct pm_rec_layout layout;
	int *fds;
	size_t nfds, capfds;
	struct pm_ring **rings;  /* one per ring: per CPU */
	size_t nrings;
	/* drain(): each ring's next record, merged in time order */
	struct pm_rec *dcur;
	const struct perf_event_header **dhdr;
	bool *dhave;
	int *cpus;
	int ncpu;
	unsigned pages;
	bool attach, err_set;
	struct aproc *procs;
	size_t nprocs;
	struct idtab id_owner;   /* event id -> the thread it was opened on */
	struct idtab chosen;     /* thread -> the one event owner whose records count */
	int64_t threads_live;
	uint64_t dups;
	struct pm_maps *maps;
	struct pm_stacks *stacks;
	struct unw_slot unws[MAX_UNWS];
	size_t nunws;
	uint64_t unw_tick;
	/*
	 * Indexes (pm_hidx) hashed with a secret seed, so that a capture or a
	 * target cannot aim its paths at one chain: bins by path, and (replay)
	 * the paths of mappings whose binary the
	 * capture has not announced yet: pend[] holds the last such mapping of
	 * each path, pend_next[] (by mapping id) the one before it.
	 */
	uint64_t seed;
	struct pm_hidx bin_idx, pend_idx;
	uint32_t *pend, *pend_next;
	size_t npend, cappend, cappend_next;
	int ip_idx, sp_idx, bp_idx;
	uint64_t pcs[MAX_FRAMES];
	uint32_t ids[MAX_FRAMES + PERF_MAX_STACK_DEPTH + 8 + 1];
	uint64_t chain[PERF_MAX_STACK_DEPTH + 8];
	uint64_t kchain[PERF_MAX_STACK_DEPTH + 8]; /* frames: the kernel part of the callchain */
	pid_t unw_pid;                             /* frames: whose memory read_mem reads */
	uint32_t cut_frame;
	struct pm_gor *gor;                        /* goroutines: NULL when off (replay) */
	uint32_t limit_frame;
	bool warned_depth, warned_frames, warned_stacks;
	uint64_t complete, bad_records;
	uint64_t t_start;
	/* capture (live, --raw) and replay */
	bool replay;
	struct pm_data_writer *cap;
	int cap_err;
	const struct pm_owner *owner;              /* of the output files: the sudo user, else NULL */
	struct pm_owner sudo_user;
	uint64_t keep;                  /* stack bytes the last sample needs, UINT64_MAX = all */
	uint64_t vpcs[MAX_FRAMES];      /* the check walk over a cut copy */
	pid_t lookup_pid;               /* the pid of the walk in progress */
	struct bin_info *bins;          /* binaries announced (live) / expected (replay) */
	size_t nbins, capbins;
	struct idtab bad;               /* replay: binaries whose frames are not trusted (by address) */
	size_t nbad;
	uint64_t bad_gen;               /* bumped by each distrust(): unwinders' caches are stale */
	size_t nwarned, unwarned;       /* replay: binaries warned about, and past the cap */
	bool warned_maps, warned_bins;  /* the limits on mappings and binaries were reached */
};

/* A binary in the capture: its path and build ID, and what the replay found. */
struct bin_info {
	char *path;
	char build_id[256];
	unsigned flags;                 /* PM_DATA_BIN_* */
	bool warned;
};

static void set_err(struct pm_record_result *res, enum pm_record_err err, const char *fmt, ...)
	PM_PRINTF(3, 4);
static int open_thread(struct session *s, pid_t tid);
static void cap_check(struct session *s, int rc);

static void idtab_put(struct idtab *t, uint64_t key, int32_t val);

static void idtab_grow(struct idtab *t)
{
	struct idtab o = *t;
	size_t i;

	t->size = o.size ? o.size * 2 : 1024;
	t->seed = o.size ? o.seed : pm_hash_seed();
	t->keys = xcalloc(t->size, sizeof(*t->keys));
	t->vals = xcalloc(t->size, sizeof(*t->vals));
	t->n = 0;
	for (i = 0; i < o.size; i++)
		if (o.keys[i])
			idtab_put(t, o.keys[i], o.vals[i]);
	free(o.keys);
	free(o.vals);
}

static void idtab_put(struct idtab *t, uint64_t key, int32_t val)
{
	size_t h;

	if (!key)
		return;
	if ((t->n + 1) * 2 > t->size)
		idtab_grow(t);
	h = pm_hash_u64(key ^ t->seed) & (t->size - 1);
	while (t->keys[h] && t->keys[h] != key)
		h = (h + 1) & (t->size - 1);
	if (!t->keys[h])
		t->n++;
	t->keys[h] = key;
	t->vals[h] = val;
}

/* true and *val when present */
static bool idtab_get(const struct idtab *t, uint64_t key, int32_t *val)
{
	size_t h;

	if (!key || !t->size)
		return false;
	h = pm_hash_u64(key ^ t->seed) & (t->size - 1);
	while (t->keys[h]) {
		if (t->keys[h] == key) {
			*val = t->vals[h];
			return true;
		}
		h = (h + 1) & (t->size - 1);
	}
	return false;
}

static void idtab_free(struct idtab *t)
{
	free(t->keys);
	free(t->vals);
}

static void set_err(struct pm_record_result *res, enum pm_record_err err, const char *fmt, ...)
{
	va_list ap;

	res->err = err;
	va_start(ap, fmt);
	vsnprintf(res->msg, sizeof(res->msg), fmt, ap);
	va_end(ap);
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
 * Can @path be created?  Checked before the command starts, by opening
 * (and dropping) the unnamed file that would become it.
 */
static int check_output(const char *path)
{
	struct pm_outfile f;
	struct stat st;
	int rc;

	if (strcmp(path, "-") == 0)
		return isatty(STDOUT_FILENO) ? -ENOTTY : 0;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return -EISDIR;
	rc = pm_outfile_open(&f, path, NULL);
	pm_outfile_abort(&f);
	return rc;
}

/*
 * Replay: a binary found at the capture's path but with another build ID
 * (or one the live session could not open) must not name or unwind
 * anything: its mappings keep their place but lose their pm_sym here.
 */
static const struct pm_sym *map_sym(const struct session *s, const struct pm_map *m)
{
	int32_t v;

	if (!m || !m->sym)
		return NULL;
	if (s->nbad && idtab_get(&s->bad, (uint64_t)(uintptr_t)m->sym, &v))
		return NULL;
	return m->sym;
}

static int session_lookup(void *arg, uint64_t pc, struct pm_unw_func *out)
{
	struct session *s = arg;

	if (s->nbad && !map_sym(s, pm_maps_find(s->maps, s->lookup_pid, pc)))
		return -ENOENT;
	return pm_maps_unwind_lookup(s->maps, pc, out);
}

static uint64_t session_seed(struct session *s)
{
	if (!s->seed)
		s->seed = pm_hash_seed() | 1;
	return s->seed;
}

static uint64_t path_hash(struct session *s, const char *path)
{
	return pm_hash(path, strlen(path), session_seed(s));
}

static struct unw_slot *find_unwinder(struct session *s, pid_t pid)
{
	for (size_t i = 0; i < s->nunws; i++)
		if (s->unws[i].pid == pid)
			return &s->unws[i];
	return NULL;
}

static struct pm_unw *unwinder(struct session *s, pid_t pid)
{
	struct unw_slot *w = find_unwinder(s, pid);

	if (!w && s->nunws < MAX_UNWS) {
		w = &s->unws[s->nunws++];
		w->u = pm_unw_new(session_lookup, s);
		w->pid = pid;
		w->bad_gen = s->bad_gen;
	} else if (!w) {
		w = &s->unws[0];
		for (size_t i = 1; i < s->nunws; i++)
			if (s->unws[i].used < w->used)
				w = &s->unws[i];
		pm_unw_flush(w->u);
		w->pid = pid;
		w->bad_gen = s->bad_gen;
	}
	w->used = ++s->unw_tick;
	if (w->bad_gen != s->bad_gen) { /* a binary was distrusted since: drop what it named */
		pm_unw_flush(w->u);
		w->bad_gen = s->bad_gen;
	}
	return w->u;
}

static void flush_unwinder(struct session *s, pid_t pid)
{
	struct unw_slot *w = find_unwinder(s, pid);

	if (w)
		pm_unw_flush(w->u);
}

/*
 * Which records count.  A thread can carry several sets of our events: the
 * ones opened on it, and ones inherited from the thread that created it
 * when that one was opened first (during the attach, both happen).  Each
 * set samples it at the full rate, so per thread only one set counts: the
 * set opened on the thread itself, else the first set seen (records carry
 * the id of the event at the root of the inheritance).
 */
static bool accept_record(struct session *s, uint64_t id, uint32_t tid)
{
	int32_t owner, c;

	if (!s->attach || !idtab_get(&s->id_owner, id, &owner))
		return true;
	if (idtab_get(&s->chosen, tid, &c)) {
		if (c == owner)
			return true;
		s->dups++;
		return false;
	}
	idtab_put(&s->chosen, tid, owner);
	return true;
}

/*
 * How much of this sample's stack copy the capture keeps: up to the slot
 * of the last return address found in the copy (the unwinder reads return
 * addresses in address order), plus a margin; proven by walking the cut
 * copy again, as the replay will, and keeping everything on a difference.
 */
static uint64_t capture_keep(struct session *s, const struct pm_unw_input *in, pid_t pid,
			     size_t n, unsigned status)
{
	struct pm_unw_input t;
	uint64_t off = 0, keep, o, v;
	unsigned st2;
	size_t i, m;

	if (!in->stack || in->stack_len < 8)
		return UINT64_MAX;
	for (i = 1; i < n; i++) {
		for (o = off; o + 8 <= in->stack_len; o += 8) {
			memcpy(&v, in->stack + o, 8);
			if (v == s->pcs[i])
				break;
		}
		if (o + 8 > in->stack_len)
			break; /* the rest came from the callchain */
		off = o + 8;
	}
	keep = off + 64;
	if (keep >= in->stack_len)
		return UINT64_MAX;
	t = *in;
	t.stack_len = keep;
	t.read_mem = NULL;
	m = pm_unw_walk(unwinder(s, pid), &t, s->vpcs, MAX_FRAMES, &st2);
	if (m != n || st2 != status || memcmp(s->vpcs, s->pcs, n * sizeof(*s->pcs)) != 0)
		return UINT64_MAX;
	return keep;
}

/*
 * Where to save the profile when @output cannot be written (a full disk):
 * $TMPDIR (else /tmp)/pmuprof-PID.pb.gz, or -PID-N when that exists; NULL
 * when no free name is found.
 */
static char *rescue_path(const char *output)
{
	const char *dir = getenv("TMPDIR");

	if (!dir || !*dir)
		dir = "/tmp";
	for (int i = 0; i < 100; i++) {
		char *p = i ? xasprintf("%s/pmuprof-%d-%d.pb.gz", dir, (int)getpid(), i)
			    : xasprintf("%s/pmuprof-%d.pb.gz", dir, (int)getpid());

		if (strcmp(p, output) != 0 && access(p, F_OK) < 0 && errno == ENOENT)
			return p;
		free(p);
	}
	return NULL;
}

/* A limit from the environment (a positive integer), else @def. */
static size_t env_limit(const char *name, size_t def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return def;
	errno = 0;
	n = strtoull(v, &end, 10);
	return errno || *end || n == 0 || n > SIZE_MAX / 64 ? def : (size_t)n;
}

/* One warning per limit, the first time it is reached. */
static void check_limits(struct session *s, unsigned status)
{
	if ((status & PM_UNW_MAX) && !s->warned_depth) {
		s->warned_depth = true;
		pm_warn("a stack deeper than %d frames was cut at that depth (counted in "
			"'stacks cut', rooted at [truncated])",
			MAX_FRAMES);
	}
	if (pm_stacks_frames_over(s->stacks) && !s->warned_frames) {
		s->warned_frames = true;
		pm_warn("reached the limit of %zu distinct frames; new ones are shown as [limit]",
			pm_stacks_nframes(s->stacks));
	}
	if (pm_stacks_stacks_over(s->stacks) && !s->warned_stacks) {
		s->warned_stacks = true;
		pm_warn("reached the limit of %zu distinct stacks; samples of new stacks are "
			"counted under [limit]",
			pm_stacks_count(s->stacks) - 1);
	}
	if (pm_maps_dropped(s->maps) && !s->warned_maps) {
		s->warned_maps = true;
		pm_warn("reached the limit on mappings of code (%zu in all, %u at once in a "
			"process); frames in code mapped after it are left unnamed",
			env_limit("PMUPROF_MAX_MAPS", PM_MAPS_MAX_DEFAULT), PM_MAPS_MAX_PER_PROC);
	}
	if (pm_maps_unopened(s->maps) && !s->warned_bins) {
		s->warned_bins = true;
		pm_warn("reached the limit of %u binaries opened; frames in the binaries mapped "
			"after it are shown as module+offset",
			PM_MAPS_MAX_BINARIES);
	}
}

/* The "[limit]" frame, and the limits on distinct frames and stacks, and on mappings. */
static void setup_limits(struct session *s)
{
	struct pm_stack_frame lim = { LIMIT_MAP, false, 0, 0 };

	s->limit_frame = pm_stacks_frame(s->stacks, &lim);
	pm_stacks_set_limits(s->stacks, env_limit("PMUPROF_MAX_FRAMES", MAX_DFRAMES_DEFAULT),
			     env_limit("PMUPROF_MAX_STACKS", MAX_STACKS_DEFAULT), s->limit_frame);
	pm_maps_set_limit(s->maps, env_limit("PMUPROF_MAX_MAPS", PM_MAPS_MAX_DEFAULT));
}

/*
 * Every read of the target while processing a sample: live, from the
 * process (and logged with --raw, failures too); at replay, from the
 * logged entries (memlog.h).
 */
static int mlog_read(struct session *s, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	if (!s->replay) {
		struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
		ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);

		if (got < 0 || (size_t)got != len) {
			if (s->cap)
				pm_mlog_log(s->mlog, pid, addr, NULL, len);
			return -EFAULT;
		}
		/* what cannot be logged did not happen: the replay could not have it */
		if (s->cap && !pm_mlog_log(s->mlog, pid, addr, buf, len))
			return -EFAULT;
		return 0;
	}
	return pm_mlog_read(s->mlog, pid, addr, buf, len);
}

static int unw_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct session *s = arg;

	return mlog_read(s, s->unw_pid, addr, buf, len);
}

static int gor_read(void *arg, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	return mlog_read(arg, pid, addr, buf, len);
}

/* Live: the sample's MEM records, in records of at most 64 KiB, before the sample. */
static void mlog_write(struct session *s)
{
	const uint8_t *p;
	size_t off = 0, len;

	while (pm_mlog_piece(s->mlog, &off, 65528 - 8, &p, &len))
		cap_check(s, pm_data_write_mem(s->cap, p, len));
}

static void on_sample(struct session *s, const struct pm_rec_sample *smp)
{
	struct pm_unw_input in;
	struct pm_unw_goabi goabi;
	unsigned status;
	size_t n, i, nchain = 0, nk = 0;
	int64_t values[2 * PM_EVT_MAX];
	int32_t ev = 0;
	pid_t pid = (pid_t)smp->pid;
	bool user = false, kctx = false;

	if (!accept_record(s, smp->id, smp->tid))
		return;
	if (s->nev > 1 && (!idtab_get(&s->ev_of, smp->id, &ev) || ev < 0 || (size_t)ev >= s->nev))
		ev = 0;
	if (s->probe[ev] == PROBE_NONE)
		s->res->samples++;
	/* per event: its samples and their value (build_profile() splits them) */
	memset(values, 0, 2 * s->nuser * sizeof(values[0]));
	values[2 * ev] = 1;
	values[2 * ev + 1] = (int64_t)smp->period;
	memset(&in, 0, sizeof(in));
	if (smp->abi != 0 && s->ip_idx >= 0 && s->sp_idx >= 0 && s->bp_idx >= 0) {
		in.ip = smp->regs[s->ip_idx];
		in.sp = smp->regs[s->sp_idx];
		in.bp = smp->regs[s->bp_idx];
		in.stack = smp->stack;
		in.stack_len = smp->dyn_size;
		/* frames: every register, for DWARF CFI */
		pm_unw_set_perf_regs(&in, s->attr[0].sample_regs_user, smp->regs, smp->nregs);
		s->unw_pid = pid;
		/* replay: the process is gone: its memory is what the capture logged, if any */
		in.read_mem = s->mlog_on ? unw_read : s->replay ? NULL : pm_unw_read_pid;
		in.read_arg = s->mlog_on ? (void *)s : (void *)&s->unw_pid;
		user = true;
	}
	for (i = 0; i < smp->nr; i++) {
		uint64_t ip = smp->ips[i];
		if (ip >= PERF_CONTEXT_MAX) {
			user = user || ip == PERF_CONTEXT_USER;
			kctx = ip == PERF_CONTEXT_KERNEL;
			continue;
		}
		if (kctx) {
			/* frames: the kernel part (--kernel), leaf first, joined under the user stack */
			if (nk < PM_ARRAY_SIZE(s->kchain))
				s->kchain[nk++] = ip;
			continue;
		}
		if (nchain < PM_ARRAY_SIZE(s->chain))
			s->chain[nchain++] = ip;
	}
	in.chain = s->chain;
	in.chain_len = nchain;
	if (!user || !in.ip) {
		/* no user context (a kernel thread, or registers missing) */
		in.ip = smp->ip;
	}
	if (!s->replay && !pm_maps_known(s->maps, pid))
		pm_maps_load_proc(s->maps, pid);
	pm_maps_set_unwind_pid(s->maps, pid);
	s->lookup_pid = pid;
	/* frames: the runtime's offsets, to cross its stack switches */
	if (in.read_mem && s->gor && pm_gor_unw_abi(s->gor, s->maps, pid, NULL, 0, &goabi))
		in.go = &goabi;
	n = pm_unw_walk(unwinder(s, pid), &in, s->pcs, MAX_FRAMES, &status);
	if ((status & PM_UNW_NEED_GO) && s->gor &&
	    pm_gor_unw_abi(s->gor, s->maps, pid, s->pcs, n, &goabi)) {
		/* the first sample of a Go process that needs them: walk again */
		in.go = &goabi;
		n = pm_unw_walk(unwinder(s, pid), &in, s->pcs, MAX_FRAMES, &status);
	}
	if (s->probe[ev] != PROBE_NONE) { /* goroutines: a creation, not a sample */
		if (s->gor && (in.regs_valid & (1u << PM_DW_R14)) &&
		    (s->probe[ev] == PROBE_NEWPROC
			     ? pm_gor_probe_newproc(s->gor, s->maps, pid, (pid_t)smp->tid,
						    in.regs[PM_DW_R14], s->pcs, n)
			     : pm_gor_probe_created(s->gor, s->maps, pid, (pid_t)smp->tid,
						    in.regs[PM_DW_RBX], s->pcs, n)) == 0 &&
		    s->probe[ev] == PROBE_RUNQPUT)
			s->creations++;
		return;
	}
	if (s->cap)
		s->keep = capture_keep(s, &in, pid, n, status);
	for (i = 0; i < nk; i++) {
		struct pm_stack_frame f = { KERNEL_MAP, i > 0, s->kchain[i], s->kchain[i] };

		s->ids[i] = pm_stacks_frame(s->stacks, &f);
	}
	for (i = 0; i < n; i++) {
		const struct pm_map *m;
		struct pm_stack_frame f;

		/* recursion: a return address equal to the one below is the same frame */
		if (i > 1 && s->pcs[i] == s->pcs[i - 1]) {
			s->ids[nk + i] = s->ids[nk + i - 1];
			continue;
		}
		m = pm_maps_find(s->maps, pid, s->pcs[i]);

		f.map_id = m ? m->id : PM_STACKS_NO_MAP;
		f.is_return = i > 0;
		f.addr = s->pcs[i];
		f.vaddr = m && m->sym ? (uint64_t)((int64_t)s->pcs[i] - m->bias) : s->pcs[i];
		s->ids[nk + i] = pm_stacks_frame(s->stacks, &f);
	}
	n += nk;
	if (status & PM_UNW_COMPLETE) {
		s->complete++;
	} else {
		/* an honest marker at the root instead of a guessed caller */
		s->ids[n++] = s->cut_frame;
		s->res->cut++;
	}
	if (s->gor && (in.regs_valid & (1u << PM_DW_R14))) /* goroutines: creators, labels */
		n = pm_gor_sample(s->gor, s->maps, s->stacks, pid, (pid_t)smp->tid,
				  in.regs[PM_DW_R14], in.sp, in.stack, in.stack_len, s->pcs,
				  n - nk - !(status & PM_UNW_COMPLETE), s->ids, n,
				  PM_ARRAY_SIZE(s->ids));
	pm_stacks_add_tagged(s->stacks, smp->pid, smp->tid, s->ids, n, values);
	check_limits(s, status);
}

static void on_record(struct session *s, const struct pm_rec *r)
{
	switch (r->type) {
	case PERF_RECORD_SAMPLE:
		on_sample(s, &r->sample);
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		if (r->type == PERF_RECORD_MMAP2 && !(r->mmap.prot & PROT_EXEC))
			break;
		if (r->misc & PERF_RECORD_MISC_MMAP_DATA)
			break;
		{
			struct pm_map_file fi;

			memset(&fi, 0, sizeof(fi));
			if (r->type == PERF_RECORD_MMAP2 && !r->mmap.build_id_size) {
				fi.maj = r->mmap.maj;
				fi.min = r->mmap.min;
				fi.ino = r->mmap.ino;
			}
			/* replay: by path only; the build ID check says whether it is the same file */
			pm_maps_add_file(s->maps, (pid_t)r->mmap.pid, r->mmap.addr, r->mmap.len,
					 r->mmap.pgoff, r->mmap.filename, s->replay ? NULL : &fi);
		}
		flush_unwinder(s, (pid_t)r->mmap.pid);
		break;
	case PERF_RECORD_COMM:
		if (r->comm.exec) {
			pm_maps_reset(s->maps, (pid_t)r->comm.pid);
			flush_unwinder(s, (pid_t)r->comm.pid);
		}
		break;
	case PERF_RECORD_FORK:
		if (!accept_record(s, r->sid.id, r->sid.tid))
			break;
		s->threads_live++;
		if (r->task.pid != r->task.ppid)
			pm_maps_fork(s->maps, (pid_t)r->task.ppid, (pid_t)r->task.pid);
		break;
	case PERF_RECORD_EXIT:
		if (accept_record(s, r->sid.id, r->sid.tid) && s->threads_live > 0)
			s->threads_live--;
		break;
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		s->res->lost += r->lost.lost;
		break;
	case PERF_RECORD_THROTTLE:
		s->res->throttled++;
		break;
	default:
		break;
	}
}

static void cap_check(struct session *s, int rc)
{
	if (rc && !s->cap_err)
		s->cap_err = rc;
}

static struct bin_info *bin_find(struct session *s, const char *path)
{
	uint64_t hv = path_hash(s, path);
	size_t pos = SIZE_MAX;
	long i;

	while ((i = pm_hidx_next(&s->bin_idx, hv, &pos)) >= 0)
		if (strcmp(s->bins[i].path, path) == 0)
			return &s->bins[i];
	return NULL;
}

static struct bin_info *bin_add(struct session *s, const char *path)
{
	struct bin_info *b;

	PM_GROW(s->bins, s->capbins, s->nbins + 1);
	pm_hidx_add(&s->bin_idx, path_hash(s, path), (uint32_t)s->nbins);
	b = &s->bins[s->nbins++];
	memset(b, 0, sizeof(*b));
	b->path = xstrdup(path);
	return b;
}

static void distrust(struct session *s, const struct pm_sym *sym)
{
	int32_t v;

	if (idtab_get(&s->bad, (uint64_t)(uintptr_t)sym, &v))
		return;
	idtab_put(&s->bad, (uint64_t)(uintptr_t)sym, 1);
	s->nbad++;
	s->bad_gen++; /* each unwinder flushes before its next walk (unwinder()) */
}

/* Replay: the pend[] slot of @path's mappings, or -1. */
static long pend_find(struct session *s, const char *path)
{
	uint64_t hv = path_hash(s, path);
	size_t pos = SIZE_MAX;
	long i;

	while ((i = pm_hidx_next(&s->pend_idx, hv, &pos)) >= 0)
		if (strcmp(pm_maps_at(s->maps, s->pend[i])->path, path) == 0)
			return i;
	return -1;
}

static void pend_add(struct session *s, const struct pm_map *m)
{
	long i = pend_find(s, m->path);

	PM_GROW(s->pend_next, s->cappend_next, (size_t)m->id + 1);
	if (i < 0) {
		PM_GROW(s->pend, s->cappend, s->npend + 1);
		pm_hidx_add(&s->pend_idx, path_hash(s, m->path), (uint32_t)s->npend);
		i = (long)s->npend++;
		s->pend_next[m->id] = UINT32_MAX;
	} else {
		s->pend_next[m->id] = s->pend[i];
	}
	s->pend[i] = m->id;
}

/* Replay: at most this many binaries get a warning line of their own. */
#define MAX_BIN_WARNINGS 8

static bool bin_warn(struct session *s, struct bin_info *b)
{
	if (b->warned)
		return false;
	b->warned = true;
	if (s->nwarned < MAX_BIN_WARNINGS) {
		s->nwarned++;
		return true;
	}
	s->unwarned++;
	return false;
}

/* Replay: does the binary opened for @m match what the capture recorded? */
static void verify_map(struct session *s, const struct pm_map *m)
{
	struct bin_info *b = bin_find(s, m->path);
	const char *got;

	if (!b) { /* not announced (yet): checked when its record comes */
		pend_add(s, m);
		return;
	}
	if (b->flags & PM_DATA_BIN_UNOPENED) {
		if (m->sym)
			distrust(s, m->sym);
		return;
	}
	if (!m->sym) {
		if (bin_warn(s, b))
			pm_warn("cannot open '%s' (build ID %s) of the capture: its frames are "
				"shown as module+offset",
				m->path, b->build_id[0] ? b->build_id : "none");
		return;
	}
	got = pm_sym_build_id(m->sym);
	if (strcmp(got, b->build_id) != 0) {
		if (bin_warn(s, b))
			pm_warn("'%s' has build ID %s, the capture recorded %s: not the binary that "
				"ran; its frames are shown as module+offset",
				m->path, got[0] ? got : "none", b->build_id[0] ? b->build_id : "none");
		distrust(s, m->sym);
	}
}

/*
 * Mappings @first.. were just added.  Live, each new binary goes into the
 * capture with its build ID; at replay, each is checked against it.
 */
static void maps_added(struct session *s, size_t first)
{
	size_t i, n = pm_maps_count(s->maps);

	for (i = first; i < n; i++) {
		const struct pm_map *m = pm_maps_at(s->maps, (uint32_t)i);

		if (s->replay) {
			verify_map(s, m);
		} else if (s->cap && !bin_find(s, m->path)) {
			bin_add(s, m->path);
			cap_check(s, pm_data_write_binary(s->cap, m->path,
							  m->sym ? pm_sym_build_id(m->sym) : "",
							  m->sym ? 0 : PM_DATA_BIN_UNOPENED));
		}
	}
}

/* /proc/PID/maps into the maps, and into the capture. */
static void load_maps(struct session *s, pid_t pid)
{
	size_t first = pm_maps_count(s->maps), i, n;

	pm_maps_load_proc(s->maps, pid);
	n = pm_maps_count(s->maps);
	for (i = first; s->cap && i < n; i++) {
		const struct pm_map *m = pm_maps_at(s->maps, (uint32_t)i);
		if (m->pid == pid)
			cap_check(s, pm_data_write_map(s->cap, (uint32_t)pid, m->start, m->end,
						       m->pgoff, m->path));
	}
	maps_added(s, first);
}

/*
 * The one entry to processing, live and at replay: @h is the record's
 * bytes (what the capture stores), @r its decoding.
 */
static void feed(struct session *s, const struct perf_event_header *h, const struct pm_rec *r)
{
	size_t first;

	if (s->cap && r->type == PERF_RECORD_SAMPLE && !pm_maps_known(s->maps, (pid_t)r->sample.pid))
		load_maps(s, (pid_t)r->sample.pid); /* before the sample, in the capture too */
	first = pm_maps_count(s->maps);
	s->keep = UINT64_MAX;
	if (!s->replay && s->mlog)
		pm_mlog_reset(s->mlog);
	on_record(s, r);
	if (s->replay && s->mlog && r->type == PERF_RECORD_SAMPLE)
		pm_mlog_reset(s->mlog); /* the MEM records before a sample are its own */
	if (s->cap) {
		if (r->type == PERF_RECORD_SAMPLE)
			mlog_write(s);
		if (r->type == PERF_RECORD_SAMPLE && s->keep != UINT64_MAX)
			cap_check(s, pm_data_write_sample_cut(s->cap, h, r->sample.stack,
							      r->sample.stack_size,
							      r->sample.dyn_size, s->keep));
		else
			cap_check(s, pm_data_write(s->cap, h));
	}
	if (pm_maps_count(s->maps) != first)
		maps_added(s, first);
}

static uint64_t rec_time(const struct pm_rec *r)
{
	return r->type == PERF_RECORD_SAMPLE ? r->sample.time : r->sid.time;
}

/*
 * One pass over every ring: a k-way merge on time of what each holds now.
 * Each ring's current record stays valid until its next pm_ring_next().
 */
static void drain(struct session *s)
{
	struct pm_rec *cur = s->dcur;
	const struct perf_event_header **hdr = s->dhdr;
	bool *have = s->dhave;
	size_t i;

	if (s->nrings)
		memset(have, 0, s->nrings * sizeof(*have));

	for (i = 0; i < s->nrings; i++) /* one cut across the rings: see pm_ring_snapshot() */
		if (s->rings[i])
			pm_ring_snapshot(s->rings[i]);
	pm_gor_pass(s->gor); /* samples after the cut: reads from here on are newer */
	for (i = 0; i < s->nrings; i++) {
		const struct perf_event_header *h;
		while ((h = pm_ring_next(s->rings[i]))) {
			int rc = pm_rec_decode(h, &s->layout, &cur[i]);
			if (rc == 0) {
				have[i] = true;
				hdr[i] = h;
				break;
			}
			if (rc < 0)
				s->bad_records++;
		}
	}
	for (;;) {
		size_t best = SIZE_MAX;
		const struct perf_event_header *h;

		for (i = 0; i < s->nrings; i++)
			if (have[i] && (best == SIZE_MAX || rec_time(&cur[i]) < rec_time(&cur[best])))
				best = i;
		if (best == SIZE_MAX)
			break;
		feed(s, hdr[best], &cur[best]);
		have[best] = false;
		while ((h = pm_ring_next(s->rings[best]))) {
			int rc = pm_rec_decode(h, &s->layout, &cur[best]);
			if (rc == 0) {
				have[best] = true;
				hdr[best] = h;
				break;
			}
			if (rc < 0)
				s->bad_records++;
		}
	}
	for (i = 0; i < s->nrings; i++)
		pm_ring_consume(s->rings[i]);
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

static unsigned ring_pages(const struct pm_record_cfg *cfg, size_t nev, bool probes)
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

	if (probes)
		n = PM_MAX(n, 512);
	want = (uint64_t)(cfg->stack_size + 1024) * n * (nev ? nev : 1);

	while ((uint64_t)pages * 4096 < want && pages < 2048)
		pages *= 2;
	return pages;
}

/*
 * Start the capture once the attr is final: header, attr, the event, and
 * (attach) which event id was opened on which thread.
 */
static void capture_begin(struct session *s)
{
	struct pm_data_meta meta;
	size_t i;
	int rc;

	memset(&meta, 0, sizeof(meta));
	meta.flags = (s->attach ? PM_DATA_ATTACH : 0) | (s->cfg->kernel ? PM_DATA_KERNEL : 0) |
		     (s->mlog_on ? PM_DATA_MEMORY : 0);
	meta.creators = s->cfg->creators > 0 ? (uint32_t)s->cfg->creators : 0;
	meta.t0_wall_ns = pm_wall_ns();
	meta.type = s->spec[0].type;
	meta.config = s->spec[0].config;
	meta.stack_size = s->cfg->stack_size;
	meta.threads = s->res->threads;
	meta.events = s->res->events;
	meta.attach_us = (uint64_t)(s->res->attach_ms * 1000.0);
	meta.nuser = s->nuser;
	snprintf(meta.name, sizeof(meta.name), "%s", s->spec[0].name);
	snprintf(meta.value_type, sizeof(meta.value_type), "%s", s->spec[0].value_type);
	snprintf(meta.value_unit, sizeof(meta.value_unit), "%s", s->spec[0].value_unit);
	rc = pm_data_create(&s->cap, s->cfg->raw, s->attr, s->nev, &meta, s->owner);
	if (rc) {
		s->cap_err = rc;
		return;
	}
	for (i = 1; i < s->nev; i++) { /* several events: the others, and whose id is whose */
		struct pm_data_event ev;

		memset(&ev, 0, sizeof(ev));
		ev.index = (uint32_t)i;
		ev.type = s->spec[i].type;
		ev.config = s->spec[i].config;
		snprintf(ev.name, sizeof(ev.name), "%s", s->spec[i].name);
		snprintf(ev.value_type, sizeof(ev.value_type), "%s", s->spec[i].value_type);
		snprintf(ev.value_unit, sizeof(ev.value_unit), "%s", s->spec[i].value_unit);
		cap_check(s, pm_data_write_event(s->cap, &ev));
	}
	for (i = 0; i < s->ev_of.size; i++)
		if (s->ev_of.keys[i])
			cap_check(s, pm_data_write_evid(s->cap, s->ev_of.keys[i],
							(uint32_t)s->ev_of.vals[i]));
	for (i = 0; i < s->id_owner.size; i++)
		if (s->id_owner.keys[i])
			cap_check(s, pm_data_write_owner(s->cap, s->id_owner.keys[i],
							 (uint32_t)s->id_owner.vals[i]));
}

static void set_layout(struct session *s)
{
	pm_rec_layout_from_attr(&s->layout, &s->attr[0]);
	s->ip_idx = pm_rec_reg_index(s->attr[0].sample_regs_user, PERF_REG_X86_IP);
	s->sp_idx = pm_rec_reg_index(s->attr[0].sample_regs_user, PERF_REG_X86_SP);
	s->bp_idx = pm_rec_reg_index(s->attr[0].sample_regs_user, PERF_REG_X86_BP);
	if (!s->replay && s->cfg->raw && !s->cap && !s->cap_err)
		capture_begin(s);
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

/* The CPUs, the rings' size and every event's attr. */
static void setup_events(struct session *s, bool enable_on_exec)
{
	struct pm_evt_sampling smp;
	size_t e;

	s->ncpu = online_cpus(&s->cpus);
	s->rings = xcalloc((size_t)s->ncpu, sizeof(*s->rings));
	s->nrings = (size_t)s->ncpu;
	s->dcur = xcalloc(s->nrings, sizeof(*s->dcur));
	s->dhdr = xcalloc(s->nrings, sizeof(*s->dhdr));
	s->dhave = xcalloc(s->nrings, sizeof(*s->dhave));
	{
		size_t nsmp = 0;
		bool probes = false;

		for (e = 0; e < s->nev; e++) {
			if (s->probe[e] == PROBE_NONE)
				nsmp++;
			else
				probes = true;
		}
		s->pages = ring_pages(s->cfg, nsmp, probes);
	}
	sampling_of(s->cfg, &smp);
	smp.enable_on_exec = enable_on_exec;
	for (e = 0; e < s->nev; e++) {
		if (s->cfg->kernel) /* frames: kernel stacks need the kernel's time counted */
			s->spec[e].exclude_kernel = false;
		smp.inherit = inherits(&s->spec[e]);
		pm_evt_attr(&s->spec[e], &smp, &s->attr[e]);
		s->attr[e].watermark = 1;
		s->attr[e].wakeup_watermark = wakeup_bytes(s->cfg, s->pages);
		/*
		 * goroutines: runqput's probe needs only the slot at sp (its
		 * return address into newproc.func1); newproc's keeps the whole
		 * copy: the creating goroutine's stack is the point of it (cut
		 * to 256 bytes and left to the kernel's callchain, half the
		 * creations lost their creator stack on tests/go/creators)
		 */
		if (s->probe[e] == PROBE_RUNQPUT && s->attr[e].sample_stack_user > PROBE_STACK)
			s->attr[e].sample_stack_user = PROBE_STACK;
	}
}

/*
 * A hardware event this CPU lacks falls back to cpu-clock with one warning
 * line, as perf does, or is an error under --strict; a precise level the
 * PMU lacks is lowered, with a warning.  Probed with a counter on pmuprof
 * itself, before anything opens on the target.  0 or -1 (s->res set).
 */
static int resolve_hardware(struct session *s)
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
			set_err(s->res, PM_REC_ERR, "%s", pm_evt_strerror(fd, sp, &a, buf, sizeof(buf)));
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
		if (pm_evt_parse("cpu-clock", sp, buf, sizeof(buf)) < 0)
			return -1;
		clock = true;
	}
	if (ngone)
		pm_warn("%s %s not supported here (no hardware PMU); falling back to cpu-clock", gone,
			ngone > 1 ? "are" : "is");
	return 0;
}

/*
 * Attached with --creators=N, N > 1, to a process that does not record
 * ancestors (it runs without GODEBUG=tracebackancestors): watch
 * goroutines being created with two entry-only uprobes on each Go binary:
 * runtime.newproc (the creating goroutine and its stack) and
 * runtime.runqput (the new goroutine; see pm_gor_probe_created()).  One
 * warning line when that is not possible.
 */
/* Does @pid run with GODEBUG=tracebackancestors=N, N > 0 (its environment at exec)? */
static bool records_ancestors(pid_t pid)
{
	char path[64], *env;
	long len, i;
	bool yes = false;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	len = pm_read_file(path, &env, 1 << 20);
	if (len < 0)
		return false;
	for (i = 0; i < len; i += (long)strlen(env + i) + 1) {
		const char *t = strncmp(env + i, "GODEBUG=", 8) ? NULL
								: strstr(env + i, "tracebackancestors=");

		if (t && t[19] >= '1' && t[19] <= '9')
			yes = true;
	}
	free(env);
	return yes;
}

static void add_creation_probes(struct session *s)
{
	static const char *const fn[] = { "runtime.newproc", "runtime.runqput" };
	char text[4200], err[512], exe[64];
	size_t i, k, e;

	for (i = 0; i < s->nprocs; i++) {
		struct pm_evt_spec sp[2];
		char *real;
		bool dup = false;

		if (records_ancestors(s->procs[i].pid))
			continue; /* the runtime records them: read from memory, no probes */
		snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)s->procs[i].pid);
		real = realpath(exe, NULL);
		for (e = s->nuser; real && e < s->nev; e++)
			dup = dup || !strcmp(s->spec[e].path, real);
		if (!real || dup || s->nev + 2 > PM_ARRAY_SIZE(s->spec)) {
			free(real);
			continue;
		}
		for (k = 0; k < 2; k++) {
			snprintf(text, sizeof(text), "uprobe:%s:%s", real, fn[k]);
			if (pm_evt_parse(text, &sp[k], err, sizeof(err)) < 0)
				break;
			sp[k].period = 1; /* every creation, whatever -F says */
			sp[k].freq = 0;
			if (pm_evt_uprobe_define(&sp[k], (unsigned)(s->nev + k), err, sizeof(err)) < 0)
				pm_warn("creators: %s: %s: goroutines created on threads started "
					"later are not followed",
					fn[k], err);
		}
		free(real);
		if (k < 2) {
			pm_warn("creators: cannot watch goroutines being created in PID %d (%s); "
				"creators of one level only",
				(int)s->procs[i].pid, err);
			if (k == 1)
				pm_evt_uprobe_undefine(&sp[0]);
			continue;
		}
		for (k = 0; k < 2; k++) {
			s->spec[s->nev] = sp[k];
			s->probe[s->nev++] = k ? PROBE_RUNQPUT : PROBE_NEWPROC;
		}
	}
}

/* Launch: every event on every CPU for @pid and, inherited, its threads. */
static int open_events(struct session *s, pid_t pid)
{
	char buf[512];
	int err;

	setup_events(s, true);
	err = open_thread(s, pid);
	s->res->threads = 0; /* attach only */
	if (err) {
		if (!s->err_set)
			set_err(s->res,
				err == -EINVAL && s->attr[s->fail_ev].freq ? PM_REC_USAGE : PM_REC_ERR,
				"%s",
				pm_evt_strerror(err, &s->spec[s->fail_ev], &s->attr[s->fail_ev], buf,
						sizeof(buf)));
		return err;
	}
	set_layout(s);
	return 0;
}

static void add_fd(struct session *s, int fd)
{
	PM_GROW(s->fds, s->capfds, s->nfds + 1);
	s->fds[s->nfds++] = fd;
}

/*
 * The ring of CPU index @c for the new event @fd: the first event on a CPU
 * owns that CPU's ring, later ones write into it.  0 or -errno, the
 * message in s->res (s->err_set).
 */
static int ring_for(struct session *s, int c, int fd)
{
	int err;

	if (!s->rings[c]) {
		err = pm_ring_open(&s->rings[c], fd, s->pages);
		if (err) {
			set_err(s->res, PM_REC_ERR,
				"cannot map the perf ring buffer (%u KiB): %s; raise ulimit -l "
				"or kernel.perf_event_mlock_kb",
				s->pages * 4, strerror(-err));
			s->err_set = true;
		}
		return err;
	}
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, pm_ring_fd(s->rings[c])) < 0) {
		err = -errno;
		set_err(s->res, PM_REC_ERR, "cannot share the ring buffer of CPU %d: %s",
			s->cpus[c], strerror(errno));
		s->err_set = true;
		return err;
	}
	return 0;
}

/*
 * Open each event on each CPU on thread @tid, disabled (ring_for()).  On failure the
 * events of this thread are closed again; -errno (-ESRCH: the thread is
 * gone).  s->err_set when the message is already in s->res.
 */
static int open_thread(struct session *s, pid_t tid)
{
	size_t first = s->nfds;
	int i, err = 0;

	for (i = 0; i < s->ncpu * (int)s->nev && !err; i++) {
		uint64_t id = 0;
		int e = i % (int)s->nev, fd = pm_evt_open(&s->attr[e], tid, s->cpus[i / (int)s->nev], -1);

		if (fd < 0) {
			err = fd;
			s->fail_ev = e;
			break;
		}
		add_fd(s, fd);
		err = ring_for(s, i / (int)s->nev, fd);
		if (!err && ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0) {
			idtab_put(&s->id_owner, id, (int32_t)tid);
			if (s->nev > 1)
				idtab_put(&s->ev_of, id, e);
		}
	}
	if (err) {
		/* a ring stays with its first fd: keep those fds open */
		while (s->nfds > first) {
			int fd = s->fds[s->nfds - 1];
			bool owner = false;
			for (i = 0; i < s->ncpu; i++)
				owner = owner || (s->rings[i] && pm_ring_fd(s->rings[i]) == fd);
			if (owner)
				break;
			close(fd);
			s->nfds--;
		}
		return err;
	}
	idtab_put(&s->chosen, (uint64_t)tid, (int32_t)tid);
	s->res->threads++;
	return 0;
}

static bool opened(struct session *s, pid_t tid)
{
	int32_t c;

	return idtab_get(&s->chosen, (uint64_t)tid, &c) && c == tid;
}

/* The attach error for @err on process @p. */
static void attach_err(struct session *s, const struct aproc *p, pid_t tid, int err)
{
	char buf[512];

	if (s->err_set)
		return;
	pm_evt_strerror(err, &s->spec[s->fail_ev], &s->attr[s->fail_ev], buf, sizeof(buf));
	if (tid != p->pid)
		set_err(s->res, PM_REC_ERR, "cannot attach to thread %d of PID %d (%s): %s",
			(int)tid, (int)p->pid, p->comm, buf);
	else
		set_err(s->res, PM_REC_ERR, "cannot attach to PID %d (%s): %s", (int)p->pid,
			p->comm, buf);
	s->err_set = true;
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
static int attach_all(struct session *s)
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
	for (i = 0; i < s->nprocs; i++) {
		struct aproc *p = &s->procs[i];
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
			set_err(s->res, PM_REC_ERR,
				p->tids ? "PID %d (%s): the threads given with -t exited before "
					  "pmuprof could attach"
					: "PID %d (%s) exited before pmuprof could attach",
				(int)p->pid, p->comm);
			return -1;
		}
	}
	for (i = 0; i < s->nfds; i++)
		if (ioctl(s->fds[i], PERF_EVENT_IOC_ENABLE, 0) < 0 && errno != ESRCH) {
			set_err(s->res, PM_REC_ERR, "cannot enable the events: %s",
				strerror(errno));
			return -1;
		}
	s->res->attach_ms = (double)(pm_now_ns() - t0) / 1e6;
	s->res->events = s->nfds;
	s->threads_live = (int64_t)s->res->threads;
	set_layout(s);
	/*
	 * The address space after enabling: a mapping made in between is in
	 * both this snapshot and an MMAP2 record, which pm_maps ignores twice.
	 */
	for (i = 0; i < s->nprocs; i++)
		load_maps(s, s->procs[i].pid);
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

static bool all_exited(struct session *s)
{
	bool all = true;
	size_t i;

	for (i = 0; i < s->nprocs; i++)
		all = proc_exited(&s->procs[i]) && all;
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

	for (i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

static struct aproc *add_proc(struct session *s, const struct pm_task_info *ti)
{
	struct aproc *p;

	s->procs = xrealloc(s->procs, (s->nprocs + 1) * sizeof(*s->procs));
	p = &s->procs[s->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = ti->tgid;
	snprintf(p->comm, sizeof(p->comm), "%s", ti->comm);
	p->pidfd = -1;
	return p;
}

/* Check -p and -t against /proc, before anything is opened.  0 or -1 with s->res set. */
static int check_targets(struct session *s)
{
	const struct pm_record_cfg *cfg = s->cfg;
	struct pm_task_info ti;
	size_t i;

	for (i = 0; i < cfg->npids; i++) {
		pid_t pid = cfg->pids[i];

		if (find_proc(s, pid))
			continue;
		if (pm_target_task_info(pid, &ti) < 0) {
			set_err(s->res, PM_REC_ERR, "no process with PID %d", (int)pid);
			return -1;
		}
		if (ti.kthread) {
			set_err(s->res, PM_REC_ERR,
				"PID %d (%s) is a kernel thread: it has no user space to profile",
				(int)pid, ti.comm);
			return -1;
		}
		if (ti.tgid != pid) {
			set_err(s->res, PM_REC_ERR,
				"PID %d is a thread of process %d: use -p %d, or -t %d for this "
				"thread alone",
				(int)pid, (int)ti.tgid, (int)ti.tgid, (int)pid);
			return -1;
		}
		if (ti.state == 'Z' || ti.state == 'X') {
			set_err(s->res, PM_REC_ERR, "PID %d (%s) has exited: nothing to profile",
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
			set_err(s->res, PM_REC_ERR, "no thread with TID %d", (int)tid);
			return -1;
		}
		if (ti.kthread) {
			set_err(s->res, PM_REC_ERR,
				"TID %d (%s) is a kernel thread: it has no user space to profile",
				(int)tid, ti.comm);
			return -1;
		}
		p = find_proc(s, ti.tgid);
		if (cfg->npids && !p) {
			if (cfg->npids == 1)
				set_err(s->res, PM_REC_ERR,
					"thread %d is not in process %d (it belongs to PID %d)",
					(int)tid, (int)cfg->pids[0], (int)ti.tgid);
			else
				set_err(s->res, PM_REC_ERR,
					"thread %d is in none of the -p processes (it belongs to "
					"PID %d)",
					(int)tid, (int)ti.tgid);
			return -1;
		}
		if (!pm_target_has_thread(ti.tgid, tid)) {
			set_err(s->res, PM_REC_ERR, "thread %d has exited: nothing to profile",
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
	for (i = 0; i < s->nprocs; i++) {
		int fd = pm_target_pidfd(s->procs[i].pid);
		s->procs[i].pidfd = fd >= 0 ? fd : -1;
		if (s->procs[i].tids)
			qsort(s->procs[i].tids, s->procs[i].ntids, sizeof(pid_t), cmp_pid);
	}
	return 0;
}

static void attach_summary(struct session *s)
{
	char pids[256];
	size_t i, off = 0;

	pids[0] = '\0';
	for (i = 0; i < s->nprocs && off < sizeof(pids) - 16; i++)
		off += (size_t)snprintf(pids + off, sizeof(pids) - off, "%s%d", i ? "," : "",
					(int)s->procs[i].pid);
	fprintf(stderr,
		"pmuprof: attached to %s %s%s%s%s: %" PRIu64 " thread%s, %" PRIu64
		" events, in %.1f ms\n",
		s->nprocs > 1 ? "PIDs" : "PID", pids, s->nprocs == 1 ? " (" : "",
		s->nprocs == 1 ? s->procs[0].comm : "", s->nprocs == 1 ? ")" : "", s->res->threads,
		s->res->threads == 1 ? "" : "s", s->res->events, s->res->attach_ms);
}

static void progress(struct session *s, bool final)
{
	double t = (double)(pm_now_ns() - s->t_start) / 1e9;

	if (final) {
		fprintf(stderr, "\r\033[K");
		return;
	}
	fprintf(stderr,
		"\r\033[K[ pmuprof: %.1f s, %" PRIu64 " samples, %" PRIu64 " lost, %" PRId64
		" thread%s ]",
		t, s->res->samples, s->res->lost, s->threads_live, s->threads_live == 1 ? "" : "s");
}

/*
 * frames: a kernel frame, named from /proc/kallsyms, in one "[kernel.kallsyms]"
 * mapping (report's folded output marks frames of mappings named "[kernel..."
 * with "_[k]").  When the addresses are hidden (kptr_restrict), says so once.
 */
struct kstate {
	struct pm_ksyms *ks;
	uint64_t map;
	bool tried;
};

static uint64_t kernel_loc(struct pm_profile *p, const struct pm_stack_frame *f, struct kstate *k)
{
	struct pm_prof_line line;
	const char *name;
	uint64_t lo, hi;

	if (!k->tried) {
		int rc = pm_ksyms_load(&k->ks, NULL);

		k->tried = true;
		if (rc == -EPERM)
			pm_warn("kernel addresses are hidden (kernel.kptr_restrict): kernel frames "
				"stay unnamed; run as root or set kernel.kptr_restrict=0");
		else if (rc < 0)
			pm_warn("cannot read /proc/kallsyms: %s: kernel frames stay unnamed",
				strerror(-rc));
		pm_ksyms_range(k->ks, &lo, &hi);
		k->map = pm_prof_mapping(p, lo, hi ? hi : UINT64_MAX, 0, "[kernel.kallsyms]", "");
	}
	name = pm_ksyms_find(k->ks, f->addr - (f->is_return ? 1 : 0), NULL);
	if (!name)
		return pm_prof_loc(p, k->map, f->addr, NULL, 0);
	line.func_id = pm_prof_func(p, name, name, "", 0);
	line.line = 0;
	return pm_prof_loc(p, k->map, f->addr, &line, 1);
}

/* Symbolize every distinct frame once and build the pprof profile. */
static struct pm_profile *build_profile(struct session *s, uint64_t t0_wall, uint64_t dur)
{
	struct pm_profile *p = pm_prof_new();
	size_t nframes = pm_stacks_nframes(s->stacks), nmaps = pm_maps_count(s->maps), i;
	uint64_t *loc_of = xcalloc(nframes, sizeof(*loc_of));
	uint64_t *map_of = xcalloc(nmaps ? nmaps : 1, sizeof(*map_of));
	bool *map_unresolved = xcalloc(nmaps ? nmaps : 1, sizeof(bool));
	/* as many as a stack can hold: user + kernel frames, cut marker, creators, tag */
	uint64_t *locs = xmalloc(PM_ARRAY_SIZE(s->ids) * sizeof(*locs));
	struct pm_frame fr[MAX_FRAMES_SYM];
	struct pm_prof_line lines[MAX_FRAMES_SYM];
	bool cpu = strcmp(s->spec[0].value_unit, "nanoseconds") == 0;
	struct kstate ks = { NULL, 0, false };
	char *c;
	size_t e;

	check_limits(s, 0); /* one reached after the last sample (mappings) */
	/* one value per event: named as Go names it alone, after the event with others */
	pm_prof_add_sample_type(p, "samples", "count");
	for (e = 0; e < s->nuser; e++)
		pm_prof_add_sample_type(p, s->nuser > 1 ? s->spec[e].name : s->spec[e].value_type,
					s->spec[e].value_unit);
	pm_prof_set_default_type(p, 1);
	if (s->attr[0].freq) {
		int64_t per = cpu ? (int64_t)(1000000000ULL / s->attr[0].sample_freq) : 1;
		pm_prof_set_period(p, pm_prof_sample_type(p, 1)->type, s->spec[0].value_unit, per);
	} else {
		pm_prof_set_period(p, pm_prof_sample_type(p, 1)->type, s->spec[0].value_unit,
				   (int64_t)s->attr[0].sample_period);
	}
	pm_prof_set_time(p, (int64_t)t0_wall, (int64_t)dur);
	for (e = 0; e < s->nuser; e++) {
		const struct perf_event_attr *a = &s->attr[e];

		if (a->freq)
			c = xasprintf("pmuprof record: event %s, %" PRIu64 " Hz, stack copy %u bytes",
				      s->spec[e].name, (uint64_t)a->sample_freq, a->sample_stack_user);
		else
			c = xasprintf("pmuprof record: event %s, period %" PRIu64
				      ", stack copy %u bytes",
				      s->spec[e].name, (uint64_t)a->sample_period,
				      a->sample_stack_user);
		pm_prof_add_comment(p, c);
		free(c);
	}
	c = xasprintf("lost %" PRIu64 " samples", s->res->lost);
	pm_prof_add_comment(p, c);
	free(c);
	if (s->res->throttled) {
		/* events: the kernel lowered the rate (kernel.perf_event_max_sample_rate) */
		double secs = dur ? (double)dur / 1e9 : 0;

		c = xasprintf("throttled %" PRIu64 " times: effective rate %.0f samples/s",
			      s->res->throttled, secs > 0 ? (double)s->res->samples / secs : 0.0);
		pm_prof_add_comment(p, c);
		free(c);
	}
	c = xasprintf("stacks cut: %" PRIu64 " of %" PRIu64, s->res->cut, s->res->samples);
	pm_prof_add_comment(p, c);
	free(c);
	if (s->attach) {
		c = xasprintf("attached: %" PRIu64 " threads, %" PRIu64 " events, %.1f ms",
			      s->res->threads, s->res->events, s->res->attach_ms);
		pm_prof_add_comment(p, c);
		free(c);
	}
	if (s->nev > s->nuser) {
		c = xasprintf("creators: %" PRIu64 " goroutine creations seen by uprobes",
			      s->creations);
		pm_prof_add_comment(p, c);
		free(c);
	}
	if (s->dups) {
		c = xasprintf("records from a second inherited event set dropped: %" PRIu64,
			      s->dups);
		pm_prof_add_comment(p, c);
		free(c);
	}

	for (i = 0; i < nframes; i++) {
		const struct pm_stack_frame *f = pm_stacks_frame_at(s->stacks, (uint32_t)i);
		const struct pm_map *m = f->map_id == PM_STACKS_NO_MAP ? NULL
								   : pm_maps_at(s->maps, f->map_id);
		uint64_t mid = 0;
		size_t nf = 0, k;

		if (f->map_id == KERNEL_MAP) {
			loc_of[i] = kernel_loc(p, f, &ks);
			continue;
		}
		if (pm_gor_is_frame(f)) { /* goroutines: creator frames */
			loc_of[i] = s->gor ? pm_gor_location(s->gor, p, f) : 0;
			continue;
		}
		if (i == s->cut_frame || i == s->limit_frame) {
			const char *mk = i == s->cut_frame ? "[truncated]" : "[limit]";

			lines[0].func_id = pm_prof_func(p, mk, mk, "", 0);
			lines[0].line = 0;
			loc_of[i] = pm_prof_loc(p, 0, 0, lines, 1);
			continue;
		}
		if (m) {
			const struct pm_sym *sym = map_sym(s, m);
			const struct bin_info *b = s->replay ? bin_find(s, m->path) : NULL;

			if (!map_of[m->id])
				map_of[m->id] = pm_prof_mapping(p, m->start, m->end, m->pgoff, m->path,
								sym ? pm_sym_build_id(sym)
								: b ? b->build_id
								    : "");
			mid = map_of[m->id];
			if (sym)
				nf = pm_sym_frames(sym, f->vaddr - (f->is_return ? 1 : 0), fr,
						   MAX_FRAMES_SYM);
			if (!nf)
				map_unresolved[m->id] = true;
		}
		for (k = 0; k < nf; k++) {
			lines[k].func_id = pm_prof_func(p, fr[k].func, fr[k].func, fr[k].file,
							fr[k].start_line);
			lines[k].line = fr[k].line;
		}
		loc_of[i] = pm_prof_loc(p, mid, f->addr, lines, nf);
	}
	for (i = 0; i < nmaps; i++) {
		const struct pm_map *m = pm_maps_at(s->maps, (uint32_t)i);
		bool go;
		if (!map_of[i])
			continue;
		go = map_sym(s, m) && pm_sym_is_go(m->sym);
		pm_prof_mapping_flags(p, map_of[i], !map_unresolved[i], go, go, go);
	}
	for (i = 0; i < pm_stacks_count(s->stacks); i++) {
		size_t n, k;
		const int64_t *v;
		const uint32_t *ids = pm_stacks_at(s->stacks, i, &n, &v);
		struct pm_prof_label lab[2 + PM_GOR_MAX_LABELS + 2];
		size_t nlab = 2;
		uint32_t pid, tid;
		int64_t val[1 + PM_EVT_MAX];

		pm_stacks_tags(s->stacks, i, &pid, &tid);
		memset(lab, 0, sizeof(lab));
		lab[0].key = "pid";
		lab[0].num = pid;
		lab[1].key = "thread";
		lab[1].num = tid;
		if (s->gor) /* goroutines: the labels of the root tag frame */
			nlab += pm_gor_labels(s->gor, s->stacks, ids, &n, lab + 2,
					      PM_ARRAY_SIZE(lab) - 3);
		for (k = 0; k < n; k++)
			locs[k] = loc_of[ids[k]];
		/* one sample per event, with an "event" label when there are several */
		for (e = 0; e < s->nuser; e++) {
			if (!v[2 * e])
				continue;
			memset(val, 0, sizeof(val));
			val[0] = v[2 * e];
			val[1 + e] = v[2 * e + 1];
			lab[nlab].key = "event";
			lab[nlab].str = s->spec[e].name;
			pm_prof_add(p, locs, n, val, lab, nlab + (s->nuser > 1));
		}
	}
	free(locs);
	free(loc_of);
	free(map_of);
	free(map_unresolved);
	pm_ksyms_free(ks.ks);
	return p;
}

/* What feed() and build_profile() use; shared by the live session and replay. */
static void release_processing(struct session *s)
{
	size_t i;

	pm_gor_free(s->gor);
	s->gor = NULL;

	idtab_free(&s->id_owner);
	idtab_free(&s->chosen);
	idtab_free(&s->ev_of);
	pm_mlog_free(s->mlog);
	s->mlog = NULL;
	for (i = 0; i < s->nunws; i++)
		pm_unw_free(s->unws[i].u);
	pm_stacks_free(s->stacks);
	pm_maps_free(s->maps);
	for (i = 0; i < s->nbins; i++)
		free(s->bins[i].path);
	free(s->bins);
	idtab_free(&s->bad);
	pm_hidx_free(&s->bin_idx);
	pm_hidx_free(&s->pend_idx);
	free(s->pend);
	free(s->pend_next);
}

/* One of pmuprof's own records of a capture. */
static int replay_own(struct session *s, const struct perf_event_header *h)
{
	struct pm_data_map mp;
	struct pm_data_binary bi;
	struct pm_data_owner ow;
	size_t first;
	uint32_t id;
	long i;

	switch (h->type) {
	case PM_DATA_REC_MAP:
		if (pm_data_decode_map(h, &mp))
			return -EINVAL;
		first = pm_maps_count(s->maps);
		pm_maps_add_file(s->maps, (pid_t)mp.pid, mp.start, mp.end - mp.start, mp.pgoff,
				 mp.path, NULL);
		flush_unwinder(s, (pid_t)mp.pid);
		maps_added(s, first);
		return 0;
	case PM_DATA_REC_BINARY: {
		struct bin_info *b;

		if (pm_data_decode_binary(h, &bi))
			return -EINVAL;
		if (bin_find(s, bi.path))
			return 0; /* again: its mappings were checked the first time */
		b = bin_add(s, bi.path);
		snprintf(b->build_id, sizeof(b->build_id), "%s", bi.build_id);
		b->flags = bi.flags;
		/* the mappings of it that came before its record */
		i = pend_find(s, bi.path);
		for (id = i < 0 ? UINT32_MAX : s->pend[i]; id != UINT32_MAX; id = s->pend_next[id])
			verify_map(s, pm_maps_at(s->maps, id));
		return 0;
	}
	case PM_DATA_REC_OWNER:
		if (pm_data_decode_owner(h, &ow))
			return -EINVAL;
		idtab_put(&s->id_owner, ow.id, (int32_t)ow.tid);
		idtab_put(&s->chosen, ow.tid, (int32_t)ow.tid);
		return 0;
	case PM_DATA_REC_MEM:
		/* copied: the reader's records last until its next one */
		if (!s->mlog)
			s->mlog = pm_mlog_new();
		if (h->size < 8 || pm_mlog_add_record(s->mlog, (const uint8_t *)h + 8, h->size - 8u))
			return -EINVAL;
		return 0;
	case PM_DATA_REC_EVENT: {
		struct pm_data_event ev;
		struct pm_evt_spec *sp;

		if (pm_data_decode_event(h, &ev) || ev.index >= s->nev)
			return -EINVAL;
		if (ev.index >= s->nuser) /* goroutines: a creation probe (add_creation_probes()) */
			s->probe[ev.index] = strstr(ev.name, "runqput") ? PROBE_RUNQPUT : PROBE_NEWPROC;
		sp = &s->spec[ev.index];
		sp->type = ev.type;
		sp->config = ev.config;
		snprintf(sp->name, sizeof(sp->name), "%s", ev.name);
		snprintf(sp->value_type, sizeof(sp->value_type), "%s", ev.value_type);
		snprintf(sp->value_unit, sizeof(sp->value_unit), "%s", ev.value_unit);
		return 0;
	}
	case PM_DATA_REC_EVID: {
		struct pm_data_evid ei;

		if (pm_data_decode_evid(h, &ei) || ei.index >= s->nev)
			return -EINVAL;
		idtab_put(&s->ev_of, ei.id, (int32_t)ei.index);
		return 0;
	}
	default:
		return 0; /* a later version's record: skip */
	}
}

/*
 * Replay: the capture's records through feed(), as the live session fed
 * them, then the same build_profile().
 */
int pm_record_replay(const char *path, struct pm_profile **out, struct pm_record_result *res)
{
	static const struct pm_record_cfg no_cfg;
	struct session s;
	struct pm_data *d = NULL;
	const struct pm_data_meta *meta;
	const struct pm_data_trailer *tr;
	const struct perf_event_header *h;
	struct pm_stack_frame cut = { PM_STACKS_NO_MAP, false, 0, 0 };
	char err[256];
	uint64_t t0 = pm_now_ns();
	size_t i;
	int rc;

	*out = NULL;
	memset(res, 0, sizeof(*res));
	memset(&s, 0, sizeof(s));
	s.cfg = &no_cfg;
	s.res = res;
	s.replay = true;
	err[0] = '\0';
	rc = pm_data_open(&d, path, err, sizeof(err));
	if (rc) {
		set_err(res, PM_REC_ERR, "%s", err[0] ? err : strerror(-rc));
		return res->err;
	}
	meta = pm_data_meta(d);
	s.nev = pm_data_nattrs(d) < PM_ARRAY_SIZE(s.attr) ? pm_data_nattrs(d) : PM_ARRAY_SIZE(s.attr);
	/* the probes on goroutine creation, after the user's events, are not replayed */
	s.nuser = meta->nuser && meta->nuser < s.nev ? (size_t)meta->nuser : s.nev;
	if (s.nuser > PM_EVT_MAX)
		s.nuser = PM_EVT_MAX;
	for (i = s.nuser; i < s.nev; i++)
		s.probe[i] = PROBE_NEWPROC; /* which one: its EVENT record says */
	/* what the recording read of the target, and so the goroutines, if it logged it */
	s.mlog_on = meta->flags & PM_DATA_MEMORY;
	if (s.mlog_on) {
		struct pm_gor_opts go = { meta->creators > PM_GOR_MAX_ANCESTORS ? PM_GOR_MAX_ANCESTORS
										 : meta->creators,
					  gor_read, &s };

		if (!s.mlog)
			s.mlog = pm_mlog_new();
		s.gor = pm_gor_new(&go);
	}
	for (i = 0; i < s.nev; i++) {
		s.attr[i] = *pm_data_attr_at(d, i);
		if ((!s.attr[i].freq && !s.attr[i].sample_period) ||
		    (s.attr[i].freq && !s.attr[i].sample_freq)) {
			set_err(res, PM_REC_ERR, "corrupt capture: no sampling rate for event %zu", i);
			goto out;
		}
	}
	snprintf(s.spec[0].name, sizeof(s.spec[0].name), "%s", meta->name);
	snprintf(s.spec[0].value_type, sizeof(s.spec[0].value_type), "%s", meta->value_type);
	snprintf(s.spec[0].value_unit, sizeof(s.spec[0].value_unit), "%s", meta->value_unit);
	s.spec[0].type = meta->type;
	s.spec[0].config = meta->config;
	s.attach = meta->flags & PM_DATA_ATTACH;
	res->threads = meta->threads;
	res->events = meta->events;
	res->attach_ms = (double)meta->attach_us / 1000.0;
	s.maps = pm_maps_new();
	s.stacks = pm_stacks_new(2 * s.nuser);
	s.cut_frame = pm_stacks_frame(s.stacks, &cut);
	setup_limits(&s);
	set_layout(&s);
	while ((rc = pm_data_next(d, &h, err, sizeof(err))) > 0) {
		struct pm_rec r;

		res->records++;
		if (h->type >= PM_DATA_REC_BASE) {
			if (replay_own(&s, h) < 0) {
				set_err(res, PM_REC_ERR, "corrupt capture: a bad pmuprof record (type %#x)",
					h->type);
				goto out;
			}
			continue;
		}
		rc = pm_rec_decode(h, &s.layout, &r);
		if (rc == 0)
			feed(&s, h, &r);
		else if (rc < 0)
			s.bad_records++;
	}
	if (rc < 0) {
		set_err(res, PM_REC_ERR, "%s", err);
		goto out;
	}
	for (i = 0; i < s.nuser; i++)
		if (!s.spec[i].value_type[0] || !s.spec[i].value_unit[0] || !s.spec[i].name[0]) {
			set_err(res, PM_REC_ERR, "corrupt capture: no description of event %zu", i);
			goto out;
		}
	if (s.unwarned)
		pm_warn("%zu more binaries of the capture are missing or differ: their frames are "
			"shown as module+offset too",
			s.unwarned);
	tr = pm_data_trailer(d);
	if (pm_data_truncated(d) || !tr)
		pm_warn("'%s' is truncated: processed the %" PRIu64 " samples it holds", path,
			res->samples);
	res->exit_code = tr ? (int)tr->exit_code : 0;
	res->seconds = (double)(pm_now_ns() - t0) / 1e9;
	*out = build_profile(&s, meta->t0_wall_ns, tr ? tr->duration_ns : 0);
out:
	release_processing(&s);
	pm_data_close(d);
	return res->err;
}

int pm_record_run(const struct pm_record_cfg *cfg, struct pm_record_result *res)
{
	struct session s;
	struct pm_target *tgt = NULL;
	struct pm_profile *prof = NULL;
	struct pollfd *pfd = NULL;
	const char *output = cfg->output ? cfg->output : PM_RECORD_DEFAULT_OUTPUT;
	char err[256], *path = NULL;
	int rc, status = 0;
	uint64_t t0_wall, stop_at = 0, last_prog = 0, last_exit_check = 0;
	bool forwarded = false, killed = false;
	struct pm_stack_frame cut = { PM_STACKS_NO_MAP, false, 0, 0 };
	long maxrate;
	size_t i, npfd;

	memset(res, 0, sizeof(*res));
	memset(&s, 0, sizeof(s));
	s.cfg = cfg;
	s.res = res;
	s.attach = !cfg->argv;

	if (pm_evt_parse_list(cfg->event ? cfg->event : "cycles", s.spec, PM_EVT_MAX, &s.nev, err,
			      sizeof(err)) < 0) {
		set_err(res, PM_REC_USAGE, "%s", err);
		return res->err;
	}
	maxrate = pm_evt_max_sample_rate();
	if (cfg->freq && maxrate > 0 && cfg->freq > (uint64_t)maxrate) {
		set_err(res, PM_REC_USAGE,
			"invalid frequency '%" PRIu64
			"': must be 1..%ld (kernel.perf_event_max_sample_rate)",
			cfg->freq, maxrate);
		return res->err;
	}
	if (s.attach && !cfg->npids && !cfg->ntids) {
		set_err(res, PM_REC_USAGE, "nothing to record: give a command, -p PID or -t TID");
		return res->err;
	}
	if (s.attach && check_targets(&s))
		goto out;
	/* started through sudo: the command runs as, and the files go to, the user who typed it */
	rc = cfg->keep_privileges ? 0 : pm_target_sudo_user(&s.sudo_user.uid, &s.sudo_user.gid);
	if (rc < 0) {
		set_err(res, PM_REC_ERR,
			"SUDO_UID/SUDO_GID are set but not valid ids; unset them, or "
			"keep root with --no-drop-privileges");
		goto out;
	}
	s.owner = rc > 0 ? &s.sudo_user : NULL;
	rc = check_output(output);
	if (rc) {
		set_err(res, PM_REC_ERR, "cannot write '%s': %s", output,
			rc == -ENOTTY ? "refusing to write binary pprof to a terminal"
				      : strerror(-rc));
		goto out;
	}
	rc = cfg->raw ? (strcmp(cfg->raw, "-") == 0 ? -EINVAL : check_output(cfg->raw)) : 0;
	if (rc) {
		set_err(res, PM_REC_ERR, "cannot write '%s': %s", cfg->raw,
			rc == -EINVAL ? "a capture needs a file" : strerror(-rc));
		goto out;
	}
	if (resolve_hardware(&s))
		goto out;
	s.nuser = s.nev;
	if (s.attach && cfg->creators > 1) /* goroutines: creators of what is created from now on */
		add_creation_probes(&s);
	for (i = 0; i < s.nev; i++)
		if (s.spec[i].kind == PM_EVT_UPROBE &&
		    pm_evt_uprobe_define(&s.spec[i], (unsigned)i, err, sizeof(err)) < 0)
			pm_warn("%s: %s: threads started after the recording starts are not probed",
				s.spec[i].name, err);
	s.maps = pm_maps_new();
	s.stacks = pm_stacks_new(2 * s.nuser);
	s.cut_frame = pm_stacks_frame(s.stacks, &cut);
	setup_limits(&s);
	{ /* goroutines: ids and labels always, creator frames with --creators */
		struct pm_gor_opts go = { cfg->creators > 0 ? (unsigned)cfg->creators : 0u, NULL,
					  NULL };

		/* --raw: every read of the target logged for the replay (mlog_read()) */
		s.mlog_on = cfg->raw != NULL;
		if (s.mlog_on) {
			s.mlog = pm_mlog_new();
			go.read = gor_read;
			go.read_arg = &s;
		}
		s.gor = pm_gor_new(&go);
	}
	if (s.attach) {
		if (attach_all(&s))
			goto out;
		if (s.cap_err) {
			set_err(res, PM_REC_ERR, "cannot write '%s': %s", cfg->raw,
				strerror(-s.cap_err));
			goto out;
		}
		t0_wall = pm_wall_ns();
		s.t_start = pm_now_ns();
		if (!cfg->quiet)
			attach_summary(&s);
	} else {
		path = pm_target_resolve(cfg->argv[0]);
		if (!path) {
			if (errno == ENOENT)
				set_err(res, PM_REC_NOTFOUND, "cannot run '%s': command not found",
					cfg->argv[0]);
			else
				set_err(res, PM_REC_NOEXEC, "cannot run '%s': %s", cfg->argv[0],
					strerror(errno));
			goto out;
		}
		rc = s.owner ? pm_target_spawn_as(&tgt, path, cfg->argv, s.owner->uid, s.owner->gid)
			     : pm_target_spawn(&tgt, path, cfg->argv);
		if (rc) {
			set_err(res, PM_REC_ERR, "cannot start '%s': %s", cfg->argv[0],
				strerror(-rc));
			goto out;
		}
		if (open_events(&s, pm_target_pid(tgt)))
			goto out;
		if (s.cap_err) {
			set_err(res, PM_REC_ERR, "cannot write '%s': %s", cfg->raw,
				strerror(-s.cap_err));
			goto out;
		}
		t0_wall = pm_wall_ns();
		s.t_start = pm_now_ns();
		rc = pm_target_start(tgt);
		if (rc) {
			set_err(res, rc == -ENOENT ? PM_REC_NOTFOUND : PM_REC_NOEXEC,
				"cannot run '%s': %s", cfg->argv[0], strerror(-rc));
			goto out;
		}
		s.threads_live = 1;
	}

	/* the rings, then (attach) a pidfd per process, so an exit wakes the loop */
	pfd = xcalloc(s.nrings + s.nprocs, sizeof(*pfd));
	for (i = 0; i < s.nrings; i++) {
		pfd[i].fd = s.rings[i] ? pm_ring_fd(s.rings[i]) : -1;
		pfd[i].events = POLLIN;
	}
	npfd = s.nrings;
	for (i = 0; i < s.nprocs; i++)
		if (s.procs[i].pidfd >= 0) {
			pfd[npfd].fd = s.procs[i].pidfd;
			pfd[npfd++].events = POLLIN;
		}
	for (;;) {
		uint64_t now;
		bool done, exit_news = false;

		if (poll(pfd, npfd, 100) > 0)
			for (i = 0; i < s.nrings; i++)
				/* a ring whose event's thread is gone reports HUP for good */
				if (pfd[i].revents & (POLLHUP | POLLERR | POLLNVAL))
					pfd[i].fd = -1;
		for (i = s.nrings; i < npfd; i++)
			if (pfd[i].revents) {
				pfd[i].fd = -1;
				exit_news = true;
			}
		drain(&s);
		now = pm_now_ns();
		if (cfg->stop && *cfg->stop && !forwarded) {
			if (tgt)
				pm_target_signal(tgt, *cfg->stop);
			forwarded = true;
			stop_at = now;
		}
		if (cfg->duration > 0 && !forwarded &&
		    (double)(now - s.t_start) / 1e9 >= cfg->duration) {
			if (tgt)
				pm_target_signal(tgt, SIGTERM);
			forwarded = true;
			stop_at = now;
		}
		if (tgt)
			done = pm_target_poll(tgt, &status) != 0;
		else
			/* attach: a stop or the end of every target; the targets are left alone */
			/*
			 * checked when a pidfd says so, else every 20 ms (threads
			 * of -t have none): not every wakeup, a poll per process
			 */
			if (forwarded) {
				done = true;
			} else if (exit_news || now - last_exit_check >= 20000000ULL) {
				last_exit_check = now;
				done = all_exited(&s);
			} else {
				done = false;
			}
		if (done)
			break;
		if (tgt && forwarded && !killed && now - stop_at > 3000000000ULL) {
			/* it ignored the signal: stop it for good, the profile is what matters */
			pm_target_signal(tgt, SIGKILL);
			killed = true;
		}
		if (cfg->progress && now - last_prog > 250000000ULL) {
			progress(&s, false);
			last_prog = now;
		}
	}
	for (i = 0; i < s.nfds; i++)
		ioctl(s.fds[i], PERF_EVENT_IOC_DISABLE, 0);
	drain(&s);
	if (cfg->progress)
		progress(&s, true);
	res->exit_code = tgt ? pm_target_exit_code(status) : 0;
	res->seconds = (double)(pm_now_ns() - s.t_start) / 1e9;

	prof = build_profile(&s, t0_wall, pm_now_ns() - s.t_start);
	if (s.cap) {
		struct pm_data_trailer tr;

		memset(&tr, 0, sizeof(tr));
		tr.samples = res->samples;
		tr.lost = res->lost;
		tr.throttled = res->throttled;
		tr.duration_ns = pm_now_ns() - s.t_start;
		tr.exit_code = res->exit_code;
		res->raw_bytes = pm_data_bytes(s.cap) + sizeof(tr);
		rc = s.cap_err ? s.cap_err : pm_data_finish(s.cap, &tr);
		if (s.cap_err)
			pm_data_abort(s.cap);
		s.cap = NULL;
		if (rc) {
			set_err(res, PM_REC_ERR, "cannot write '%s': %s", cfg->raw, strerror(-rc));
			goto out;
		}
	}
	rc = pm_pprof_write(prof, output, s.owner);
	if (rc) {
		/* the recording exists only in memory: keep it somewhere if at all possible */
		char *alt = rescue_path(output);

		if (alt && pm_pprof_write(prof, alt, s.owner) == 0)
			set_err(res, PM_REC_ERR, "cannot write '%s': %s; the profile was saved to '%s'",
				output, strerror(-rc), alt);
		else
			set_err(res, PM_REC_ERR, "cannot write '%s': %s", output, strerror(-rc));
		free(alt);
		goto out;
	}
	if (res->lost)
		pm_warn("lost %" PRIu64 " samples: the ring buffer overflowed; lower -F or "
			"--stack-size",
			res->lost);
	if (res->throttled)
		pm_warn("the kernel throttled sampling %" PRIu64 " times: effective rate %.0f "
			"samples/s; lower -F (kernel.perf_event_max_sample_rate=%ld)",
			res->throttled, res->seconds > 0 ? (double)res->samples / res->seconds : 0.0,
			pm_evt_max_sample_rate());
	if (!cfg->quiet)
		fprintf(stderr,
			"pmuprof: wrote %s: %" PRIu64 " samples (%" PRIu64 " lost), %.1f s\n",
			output, res->samples, res->lost, res->seconds);
	if (!cfg->quiet && cfg->raw)
		fprintf(stderr, "pmuprof: wrote capture %s: %" PRIu64 " bytes\n", cfg->raw,
			res->raw_bytes);
out:
	pm_data_abort(s.cap);
	pm_prof_free(prof);
	free(pfd);
	for (i = 0; i < s.nrings; i++)
		pm_ring_free(s.rings[i]);
	for (i = 0; i < s.nfds; i++)
		close(s.fds[i]);
	for (i = 0; i < s.nev; i++) /* events: once nothing uses them */
		pm_evt_uprobe_undefine(&s.spec[i]);
	free(s.rings);
	free(s.dcur);
	free(s.dhdr);
	free(s.dhave);
	free(s.fds);
	free(s.cpus);
	for (i = 0; i < s.nprocs; i++) {
		if (s.procs[i].pidfd >= 0)
			close(s.procs[i].pidfd);
		free(s.procs[i].tids);
	}
	free(s.procs);
	release_processing(&s);
	if (tgt && !pm_target_exited(tgt) && res->err) {
		pm_target_signal(tgt, SIGKILL);
		pm_target_wait(tgt, &status);
	}
	pm_target_free(tgt);
	free(path);
	return res->err;
}
