/*
 * Seeds for fuzz-goroutine (the input format is in fuzz-goroutine.c).
 *
 * From a live Go 1.19 process: stop up to four of its threads (ptrace),
 * take R14 and SP, and run the inspector over the real memory through the
 * pm_gor_opts.read seam; every range it reads, plus the top of each
 * stack, becomes a region of the seed.  One seed per run.
 *
 * --synth: one well-formed world per version of the offsets table, laid
 * out with that version's offsets (labels as a map up to 1.23, as a slice
 * from 1.24; parentGoid from 1.21; two ancestors whose pcs are in
 * tests/.work/go/creators), sampled on the user g, on g0, through the
 * thread's m (R14 not a g), and late (the g left its m).
 *
 *   cc -std=c11 -D_GNU_SOURCE -Ilib -o build/dump-goroutine tests/fuzz/dump-goroutine.c \
 *      build/libpmuprof.a $(pkg-config --libs libelf libdw libprotobuf-c zlib)
 *   GODEBUG=tracebackancestors=5 tests/.work/go/creators -duration 60s &
 *   build/dump-goroutine PID tests/fuzz/corpus/fuzz-goroutine/creators-1 [VERSION [CREATORS]]
 *   build/dump-goroutine --synth tests/fuzz/corpus/fuzz-goroutine
 *
 * Not built by make: a tool to refresh the seeds by hand.
 */
#include <errno.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "goruntime/goroutine.h"

#define MAX_REGIONS 32
#define STACK_TOP 512

struct reg {
	uint64_t addr;
	size_t len;
	uint8_t *b;
};

static struct reg regs[MAX_REGIONS];
static size_t nregs;

static void keep(uint64_t addr, const void *b, size_t len)
{
	size_t i;

	if (len > 0xffff)
		len = 0xffff;
	for (i = 0; i < nregs; i++)
		if (addr >= regs[i].addr && addr + len <= regs[i].addr + regs[i].len)
			return;
	if (nregs == MAX_REGIONS)
		return;
	regs[nregs].addr = addr;
	regs[nregs].len = len;
	regs[nregs].b = malloc(len ? len : 1);
	memcpy(regs[nregs++].b, b, len);
}

static int live_read(void *arg, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec lo = { buf, len }, re = { (void *)(uintptr_t)addr, len };

	(void)arg;
	if (process_vm_readv(pid, &lo, 1, &re, 1, 0) != (ssize_t)len)
		return -EFAULT;
	keep(addr, buf, len);
	return 0;
}

static void put(uint8_t *b, uint64_t v, size_t n)
{
	while (n--) {
		*b++ = (uint8_t)v;
		v >>= 8;
	}
}

static const char *const versions[] = { "go1.19.8", "go1.20.1", "go1.21.0", "go1.22.3",
					"go1.23.4", "go1.24.1", "go1.25.0", "go1.26.0" };

static int write_seed(const char *path, const uint8_t *hdr, size_t hlen)
{
	FILE *out = fopen(path, "wb");

	if (!out)
		return 1;
	fwrite(hdr, 1, hlen, out);
	for (size_t i = 0; i < nregs; i++) {
		uint8_t rh[10];

		put(rh, regs[i].addr, 8);
		put(rh + 8, regs[i].len, 2);
		fwrite(rh, 1, sizeof(rh), out);
		fwrite(regs[i].b, 1, regs[i].len, out);
		free(regs[i].b);
	}
	fprintf(stderr, "%s: %zu regions\n", path, nregs);
	nregs = 0;
	return fclose(out) ? 1 : 0;
}

static void sample(uint8_t *hdr, unsigned i, uint32_t tid, uint64_t r14, uint64_t sp)
{
	uint8_t *s = hdr + 4 + 24 * i;

	put(s, tid, 4);
	put(s + 4, STACK_TOP, 4);
	put(s + 8, r14, 8);
	put(s + 16, sp, 8);
}

#define SG 0xc000100000ULL  /* the user g */
#define SG0 0xc000110000ULL /* g0 */
#define SM 0xc000120000ULL  /* its m */
#define SL 0xc000130000ULL  /* *labelMap, hmap or slice, buckets */
#define SS 0xc000140000ULL  /* string bytes */
#define SA 0xc000150000ULL  /* ancestors and their pcs */
#define SK 0xc000200000ULL  /* the user g's stack [SK, SK + 0x2000) */
#define STID 4243

static int synth(const char *dir, unsigned vi)
{
	static uint8_t g[1024], g0[1024], m[1024], lb[1024], str[64], anc[256], stk[STACK_TOP];
	uint8_t hdr[124] = { 0 };
	struct pm_gor_layout l;
	char path[4096];

	if (pm_gor_layout_version(versions[vi], &l) != 0)
		return 1;
	memset(g, 0, sizeof(g));
	memset(g0, 0, sizeof(g0));
	memset(m, 0, sizeof(m));
	memset(lb, 0, sizeof(lb));
	memset(anc, 0, sizeof(anc));
	put(g, SK, 8);
	put(g + 8, SK + 0x2000, 8);
	put(g + l.g_m, SM, 8);
	put(g + l.g_status, 2, 4);
	put(g + l.g_goid, 77, 8);
	put(g + l.g_gopc, 0x49e520, 8); /* in main.spawn */
	put(g + l.g_startpc, 0x49e5a0, 8);
	if (l.g_parent_goid)
		put(g + l.g_parent_goid, 5, 8);
	put(g + l.g_labels, SL, 8);
	put(g + l.g_ancestors, SA, 8);
	put(g0 + 8, 0x7ffd00010000ULL, 8);
	put(g0 + l.g_m, SM, 8);
	put(m, SG0, 8);
	put(m + l.m_procid, STID, 8);
	put(m + l.m_curg, SG, 8);
	memcpy(str, "handlercheckoutregioneu", 23);
	if (l.labels == PM_GOR_LABELS_MAP) {
		/* *labelMap -> hmap{count 2, B 0, buckets}; one bucket, slots 0 and 2 live */
		put(lb, SL + 64, 8);
		put(lb + 64, 2, 8);
		put(lb + 64 + 16, SL + 256, 8);
		lb[256] = 0x9a;
		lb[258] = 0x33;
		put(lb + 256 + 8, SS, 8);
		put(lb + 256 + 16, 7, 8);
		put(lb + 256 + 136, SS + 7, 8);
		put(lb + 256 + 144, 8, 8);
		put(lb + 256 + 8 + 32, SS + 15, 8);
		put(lb + 256 + 16 + 32, 6, 8);
		put(lb + 256 + 136 + 32, SS + 21, 8);
		put(lb + 256 + 144 + 32, 2, 8);
	} else {
		/* *labelMap = {list []label{key, value}} */
		put(lb, SL + 64, 8);
		put(lb + 8, 2, 8);
		put(lb + 16, 2, 8);
		put(lb + 64, SS, 8);
		put(lb + 72, 7, 8);
		put(lb + 80, SS + 7, 8);
		put(lb + 88, 8, 8);
		put(lb + 96, SS + 15, 8);
		put(lb + 104, 6, 8);
		put(lb + 112, SS + 21, 8);
		put(lb + 120, 2, 8);
	}
	/* []ancestorInfo{pcs, goid, gopc} x 2: newproc, spawn, handle, goexit */
	put(anc, SA + 32, 8);
	put(anc + 8, 2, 8);
	put(anc + 16, 2, 8);
	for (int i = 0; i < 2; i++) {
		uint8_t *e = anc + 32 + 40 * i;
		static const uint64_t pcs[] = { 0x43d6a0, 0x49e520, 0x49e700, 0x45e861 };

		put(e, SA + 160 + 32 * (uint64_t)i, 8);
		put(e + 8, 4, 8);
		put(e + 16, 4, 8);
		put(e + 24, 5 - (uint64_t)i * 4, 8);
		put(e + 32, 0x49f0c0, 8);
		for (int k = 0; k < 4; k++)
			put(anc + 160 + 32 * i + 8 * k, pcs[k], 8);
	}
	for (size_t i = 0; i < sizeof(stk); i++)
		stk[i] = (uint8_t)(i * 7);
	keep(SG, g, l.g_size);
	keep(SG0, g0, l.g_size);
	keep(SM, m, l.m_size);
	keep(SL, lb, sizeof(lb));
	keep(SS, str, sizeof(str));
	keep(SA, anc, sizeof(anc));
	keep(SK + 0x2000 - STACK_TOP, stk, sizeof(stk));
	hdr[0] = (uint8_t)vi;
	hdr[1] = 8;
	hdr[3] = 3;
	sample(hdr, 0, STID, SG, SK + 0x2000 - STACK_TOP);
	sample(hdr, 1, STID, SG0, 0x7ffd00008000ULL);
	sample(hdr, 2, STID, 0x1234560, SK + 0x2000 - STACK_TOP); /* C code: the thread's m */
	sample(hdr, 3, STID + 1, SG, SK + 0x2000 - STACK_TOP);    /* another thread: late */
	snprintf(path, sizeof(path), "%s/synth-%s", dir, versions[vi]);
	return write_seed(path, hdr, sizeof(hdr));
}

int main(int argc, char **argv)
{
	uint8_t hdr[124] = { 0 };
	char dir[64];
	struct pm_gor_layout l;
	struct pm_gor_opts o = { .creators = 8, .read = live_read };
	struct pm_gor *g;
	struct dirent *d;
	DIR *dp;
	pid_t pid;
	unsigned n = 0, vi = 0;
	int rc = 0;

	if (argc < 3)
		return 2;
	if (strcmp(argv[1], "--synth") == 0) {
		for (vi = 0; vi < 8; vi++)
			rc |= synth(argv[2], vi);
		return rc;
	}
	pid = atoi(argv[1]);
	if (argc > 3)
		for (vi = 0; vi < 8 && strcmp(versions[vi], argv[3]) != 0; vi++)
			;
	if (vi == 8 || pm_gor_layout_version(versions[vi], &l) != 0)
		return 2;
	o.creators = argc > 4 ? (unsigned)atoi(argv[4]) : 8;
	g = pm_gor_new(&o);
	pm_gor_set_layout(g, pid, &l);
	hdr[0] = (uint8_t)vi;
	hdr[1] = (uint8_t)o.creators;
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	dp = opendir(dir);
	while (dp && n < 4 && (d = readdir(dp))) {
		pid_t tid = atoi(d->d_name);
		struct user_regs_struct ur;
		struct pm_gor_info gi;
		uint8_t top[STACK_TOP];
		int st;

		if (tid <= 0 || ptrace(PTRACE_SEIZE, tid, 0, 0) < 0)
			continue;
		if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0 || waitpid(tid, &st, __WALL) < 0 ||
		    ptrace(PTRACE_GETREGS, tid, 0, &ur) < 0) {
			ptrace(PTRACE_DETACH, tid, 0, 0);
			continue;
		}
		rc = pm_gor_inspect(g, pid, tid, ur.r14, ur.rsp, NULL, 0, &gi);
		if (live_read(NULL, pid, ur.rsp, top, sizeof(top)) != 0)
			live_read(NULL, pid, ur.rsp, top, 64);
		ptrace(PTRACE_DETACH, tid, 0, 0);
		fprintf(stderr, "tid %d r14 %#llx sp %#llx: %d goid %lld, %zu labels, %zu ancestors\n",
			(int)tid, ur.r14, ur.rsp, rc, rc ? 0LL : (long long)gi.goid,
			rc ? 0 : gi.nlabels, rc ? 0 : gi.nancestors);
		sample(hdr, n++, (uint32_t)tid, ur.r14, ur.rsp);
	}
	if (dp)
		closedir(dp);
	hdr[3] = (uint8_t)(n ? n - 1 : 0);
	pm_gor_free(g);
	return write_seed(argv[2], hdr, sizeof(hdr));
}
