/*
 * libFuzzer target: the probe records of --locks (src_locks.c), --alloc
 * (src_alloc.c) and --creators (src_creation.c, into the goroutine
 * inspector's creation log, gorframes.c): sequences of samples of their
 * events, with arbitrary raw fields, fed through pm_ses_feed() of a
 * session set up as a replay sets it up (capture.c) but from no file,
 * then the profile built (each source's profile_head, tail and stacks).
 * The events are claimed by the names the live session gives them, so
 * every function --locks watches has its entry and exit; the lock
 * source's logged values (its periods, whether a process is a target)
 * come from memory-log entries the input puts before a sample, as a
 * capture's MEM records do.  fuzz-replay reaches the same code through
 * a capture's bytes; this one gets past the capture's framing at once.
 *
 *   [0] flags: bit 0: a CPU event first (its samples through src_cpu);
 *       bit 1: --inuse (the allocation probe keeps what it saw);
 *       bit 2: process A unmapped (whether it is a target: the log only)
 *   [1] creator levels (% 5)
 *   then records, each an op byte:
 *   op < 0x80, a sample of event op % NEV:
 *     [who] bit 0: process A or B; bits 1-3: its thread
 *     [dt] the clock advanced by dt us; 0xff: the next 8 bytes are the time
 *     [nf] the raw size: 16 + 8 * (nf & 7) - (nf >> 3 & 7) bytes: the
 *          trace entry and probe ip (zero), then the fields, each a
 *          VALUE
 *     [nc] callchain entries (nc % 9), each a byte: bit 7: a context
 *          marker (bit 6: kernel, else user); else a pc in A's text
 *   op >= 0x80, a memory-log entry for the next sample, of process
 *     (op & 1 ? B : A): (op >> 1) % 4: 0 the count of lock periods
 *     made (VALUE), 1 a period (start VALUE, six weights [w] / 8,
 *     final [f] & 1), 2 whether the process is a target ([v] & 1),
 *     3 a failed read at VALUE
 *   VALUE: a byte; below 0xf0 one of 16 values that pair (goroutines,
 *   mutexes and their RWMutex semaphores, goids, sizes, rates, limits),
 *   else the next 8 bytes.
 *
 * Checked: no crash, leak or undefined behaviour; the profile's values
 * of these sources (counts, delays, bytes) never negative.
 * FUZZ_PROBES_DEBUG=1 prints the profile's comments, the sources' counts
 * (to check a seed: build/fuzz/fuzz-probes -runs=0 SEED).
 * Run with -close_fd_mask=2 (fuzz-probes.flags): the binary named by
 * the mapping is missing, and the registry says so.
 */
#include "session/attach.h"
#include "session/capture.h"
#include "goruntime/goroutine.h"
#include "symbols/kallsyms.h"
#include "symbols/maps.h"
#include "capture/memlog.h"
#include "session/profbuild.h"
#include "profile/profile.h"
#include "session/registry.h"
#include "session/session.h"
#include "session/source.h"

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len);

#define PID_A 2000000000 /* past any pid_max: no /proc/PID of a real process */
#define PID_B 2000000100
#define TEXT 0x400000u
#define KEY_PERIODS 16 /* capture.h: PM_CAP_KEY_LOCKS_PERIODS */
/*
 * The unwinder's and goroutine inspector's caches of 64 entries, and the
 * profile's tables grown 64 at a time: not the few MiB a recording's
 * get (faulted in afresh for every input under ASan's quarantine, they
 * took most of its time).  The 128 pcs an input can name still collide
 * in the caches, as a long recording's do, and fill more than a chunk.
 */
#define SMALL_TABLES 6

/* The events as the live session names them (one binary: every probe once). */
static const char *const evnames[] = {
	"uprobe:runtime.newproc.func1+0x4a",
	"uprobe:runtime.mProf_Malloc",
	"uprobe:sync.(*Mutex).lockSlow",
	"uprobe:lockSlow+0x1f0",
	"uprobe:internal/sync.(*Mutex).lockSlow",
	"uprobe:sync.runtime_SemacquireRWMutexR",
	"uprobe:runtime_SemacquireRWMutexR+0x30",
	"uprobe:sync.runtime_SemacquireRWMutex",
	"uprobe:runtime_SemacquireRWMutex+0x30",
	"uprobe:runtime.lock2+0x9a",
	"uprobe:lock2+0x9f",
	"uprobe:sync.runtime_SemacquireMutex",
	"uprobe:runtime_SemacquireMutex+0x30",
	"uprobe:sync.(*Mutex).unlockSlow",
};
#define NEV (sizeof(evnames) / sizeof(evnames[0]))

static const uint64_t pool[16] = {
	0, 1, 2, 0xc000000000, 0xc000001000, 0xc000002000,
	0xc000100000, 0xc00010000c, 0xc000100008, UINT64_MAX,
	512, 524288, 1ULL << 40, INT64_MAX, 0xc000008000, 4096,
};

struct in {
	const uint8_t *p;
	size_t n;
};

static uint8_t byte(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint64_t u64(struct in *in)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)byte(in) << (8 * i);
	return v;
}

static uint64_t value(struct in *in)
{
	uint8_t b = byte(in);

	return b < 0xf0 ? pool[b % 16] : u64(in);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* A memory-log entry (memlog.h): pid, len, addr, the bytes padded to 8. */
static void mem_entry(struct session *s, pid_t pid, uint64_t addr, const void *b, uint32_t len)
{
	uint8_t e[16 + 64];
	uint32_t p = (uint32_t)pid;

	memset(e, 0, sizeof(e));
	memcpy(e, &p, 4);
	memcpy(e + 4, &len, 4);
	put64(e + 8, addr);
	if (len)
		memcpy(e + 16, b, len);
	pm_mlog_add_record(s->mlog, e, 16 + ((len + 7u) & ~7u)); /* past 64: refused, as a capture's */
}

static void mem_op(struct session *s, uint8_t op, struct in *in)
{
	pid_t pid = op & 1 ? PID_B : PID_A;
	uint8_t per[64];
	uint64_t v;

	switch ((op >> 1) % 4) {
	case 0:
		v = value(in);
		mem_entry(s, pid, KEY_PERIODS, &v, 8);
		break;
	case 1: /* struct period of src_locks.c: start, w[6], final */
		put64(per, value(in));
		for (int k = 0; k < 6; k++) {
			double w = (double)byte(in) / 8;

			memcpy(per + 8 + 8 * k, &w, 8);
		}
		put64(per + 56, byte(in) & 1);
		mem_entry(s, pid, KEY_PERIODS + 8, per, sizeof(per));
		break;
	case 2:
		v = byte(in) & 1;
		mem_entry(s, pid, KEY_PERIODS + 48, &v, 8);
		break;
	default:
		mem_entry(s, pid, value(in), NULL, 0);
		break;
	}
}

static void sample_op(struct session *s, size_t nuser, uint8_t op, struct in *in, uint64_t *clock)
{
	uint8_t raw[16 + 7 * 8];
	uint64_t ips[8];
	struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, sizeof(h) };
	struct pm_rec r;
	struct pm_rec_sample *smp = &r.sample;
	uint8_t who = byte(in), dt = byte(in), nf, nc;
	size_t e = op % (NEV + nuser), nr = 0;

	memset(&r, 0, sizeof(r));
	r.type = PERF_RECORD_SAMPLE;
	smp->id = 100 + e;
	smp->pid = who & 1 ? PID_B : PID_A;
	smp->tid = smp->pid + (who >> 1 & 7);
	if (dt == 0xff)
		*clock = u64(in);
	else
		*clock += (uint64_t)dt * 1000;
	nf = byte(in);
	smp->time = *clock;
	smp->period = 1;
	memset(raw, 0, sizeof(raw));
	for (size_t i = 0; i < (nf & 7u); i++)
		put64(raw + 16 + 8 * i, value(in));
	smp->raw = raw;
	smp->raw_size = 16 + 8 * (nf & 7u) - (nf >> 3 & 7u);
	nc = byte(in) % 9;
	for (size_t i = 0; i < nc && nr < 8; i++) {
		uint8_t b = byte(in);

		if (b & 0x80)
			ips[nr++] = b & 0x40 ? (uint64_t)PERF_CONTEXT_KERNEL : (uint64_t)PERF_CONTEXT_USER;
		else
			ips[nr++] = TEXT + 0x1000 + (uint64_t)b * 0x40;
	}
	smp->nr = nr;
	smp->ips = ips;
	smp->ip = TEXT + 0x1000;
	for (size_t i = 0; i < nr; i++)
		if (ips[i] < (uint64_t)PERF_CONTEXT_MAX) {
			smp->ip = ips[i];
			break;
		}
	pm_ses_feed(s, &h, &r);
}

static void check(const struct pm_profile *p)
{
	static const char *const types[] = { "contentions", "delay", "holder_contentions",
					     "holder_delay", "alloc_objects", "alloc_space" };

	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		long i = pm_prof_find_sample_type(p, types[t]);

		if (i < 0)
			continue;
		for (size_t k = 0; k < pm_prof_nsamples(p); k++)
			if (pm_prof_sample_at(p, k)->values[i] < 0) {
				fprintf(stderr, "fuzz-probes: %s %lld\n", types[t],
					(long long)pm_prof_sample_at(p, k)->values[i]);
				abort();
			}
	}
}

/*
 * /proc/kallsyms, read once: a profile built reads it for its kernel
 * frames, and reading and sorting it for each input cost more than the
 * rest of the input.  NULL when it cannot be read: each profile tries.
 */
static const struct pm_ksyms *kernel_symbols(void)
{
	static struct pm_ksyms *ks;
	static bool tried;

	if (!tried) {
		tried = true;
		pm_ksyms_load(&ks, NULL);
	}
	return ks;
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	struct pm_record_cfg cfg;
	struct pm_record_result res;
	struct session s;
	struct pm_gor_opts go;
	struct pm_profile *p;
	struct in in = { buf, len };
	uint64_t clock = 1000000000;
	uint8_t flags;
	size_t nuser;

	if (len < 2 || len > 65536)
		return 0;
	flags = byte(&in);
	memset(&s, 0, sizeof(s));
	memset(&cfg, 0, sizeof(cfg));
	memset(&res, 0, sizeof(res));
	memset(&go, 0, sizeof(go));
	cfg.inuse = (flags & 2) != 0;
	cfg.creators = byte(&in) % 5;
	cfg.small_tables = SMALL_TABLES;
	cfg.ksyms = kernel_symbols();
	s.cfg = &cfg;
	s.res = &res;
	s.replay = true;
	s.att = pm_attach_new(false);
	nuser = flags & 1;
	s.nuser = nuser;
	s.nev = nuser + NEV;
	for (size_t e = 0; e < s.nev; e++) {
		struct perf_event_attr *a = &s.attr[e];

		a->type = e < nuser ? PERF_TYPE_SOFTWARE : PERF_TYPE_TRACEPOINT;
		a->sample_period = 1;
		a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
				 PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW;
		pm_idtab_put(&s.ev_of, 100 + e, (int32_t)e);
		if (e < nuser) {
			snprintf(s.spec[e].name, sizeof(s.spec[e].name), "cpu-clock");
			snprintf(s.spec[e].value_type, sizeof(s.spec[e].value_type), "cpu");
			snprintf(s.spec[e].value_unit, sizeof(s.spec[e].value_unit), "nanoseconds");
			continue;
		}
		pm_src_claim(&s, e, evnames[e - nuser]);
		snprintf(s.spec[e].name, sizeof(s.spec[e].name), "%s", evnames[e - nuser]);
	}
	s.mlog_on = true;
	s.mlog = pm_mlog_new();
	go.creators = cfg.creators;
	go.read = pm_cap_gor_read;
	go.read_arg = &s;
	go.cache_bits = cfg.small_tables;
	s.gor = pm_gor_new(&go);
	pm_ses_processing(&s);
	pm_ses_layout(&s);
	if (pm_src_creations_logged(&s))
		pm_gor_probed(s.gor);
	if (!(flags & 4)) {
		pm_maps_add_file(s.maps, PID_A, TEXT, 0x100000, 0, "/nonexistent/fuzz-probes", NULL);
		pm_reg_flush(s.reg, PID_A);
	}
	while (in.n) {
		uint8_t op = byte(&in);

		if (op < 0x80)
			sample_op(&s, nuser, op, &in, &clock);
		else
			mem_op(&s, op, &in);
	}
	p = pm_build_profile(&s, 0, 0, 0);
	if (!p)
		abort();
	check(p);
	if (getenv("FUZZ_PROBES_DEBUG"))
		for (size_t i = 0; i < pm_prof_ncomments(p); i++)
			fprintf(stderr, "%s\n", pm_prof_comment(p, i));
	pm_prof_free(p);
	pm_ses_release(&s);
	return 0;
}
