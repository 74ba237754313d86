/* Unit tests for lib/goroutine: layouts, and inspection over a fake address space. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "goruntime/goroutine.h"
#include "symbols/elfimg.h"
#include "symbols/gopclntab.h"
#include "symbols/maps.h"
#include "profile/profile.h"
#include "profile/stacks.h"
#include "symbols/symtab.h"
#include "test.h"
#include "base/util.h"
#include "unwind/unwind.h"

/* ---- a fake target: a few regions ---- */

struct region {
	uint64_t addr;
	uint8_t buf[8192];
	size_t len;
};

static struct region mem[8];
static size_t nmem;

static uint8_t *region(uint64_t addr, size_t len)
{
	struct region *r = &mem[nmem++];

	r->addr = addr;
	r->len = len;
	memset(r->buf, 0, sizeof(r->buf));
	return r->buf;
}

static int fake_read(void *arg, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	size_t i;

	(void)arg;
	(void)pid;
	for (i = 0; i < nmem; i++)
		if (addr >= mem[i].addr && addr + len <= mem[i].addr + mem[i].len) {
			memcpy(buf, mem[i].buf + (addr - mem[i].addr), len);
			return 0;
		}
	return -EFAULT;
}

static void put64(uint8_t *b, size_t off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

#define G1 0x100000ULL   /* the user goroutine */
#define G0 0x110000ULL   /* g0 */
#define M1 0x120000ULL
#define LBL 0x130000ULL  /* the labels: *labelMap and what it points to */
#define STR 0x140000ULL  /* string bytes */
#define STK 0x200000ULL  /* the goroutine's stack [STK, STK + 0x2000) */
#define TID 4242

static void fake_world(const struct pm_gor_layout *l, bool slice)
{
	uint8_t *g, *g0, *m, *lb, *s;

	nmem = 0;
	g = region(G1, 1024);
	g0 = region(G0, 1024);
	m = region(M1, 1024);
	lb = region(LBL, 4096);
	s = region(STR, 256);
	put64(g, 0, STK);
	put64(g, 8, STK + 0x2000);
	put64(g, l->g_m, M1);
	put64(g, l->g_goid, 77);
	put64(g, l->g_gopc, 0x401234);
	put64(g, l->g_labels, LBL);
	put64(g, l->g_status, 2);
	put64(g0, l->g_m, M1);
	put64(m, 0, G0);
	put64(m, l->m_procid, TID);
	put64(m, l->m_curg, G1);
	memcpy(s, "handlercheckoutregioneu", 23);
	if (!slice) {
		/* *labelMap = hmap at LBL+64; count 2, B 0, buckets at LBL+256 */
		put64(lb, 0, LBL + 64);
		put64(lb + 64, 0, 2);
		put64(lb + 64, 16, LBL + 256);
		lb[256 + 0] = 0x9a; /* tophash of two live slots, one empty between */
		lb[256 + 1] = 1;
		lb[256 + 2] = 0x33;
		put64(lb + 256, 8 + 16 * 0, STR + 15);  /* "region" */
		put64(lb + 256, 8 + 16 * 0 + 8, 6);
		put64(lb + 256, 136 + 16 * 0, STR + 21); /* "eu" */
		put64(lb + 256, 136 + 16 * 0 + 8, 2);
		put64(lb + 256, 8 + 16 * 2, STR);        /* "handler" */
		put64(lb + 256, 8 + 16 * 2 + 8, 7);
		put64(lb + 256, 136 + 16 * 2, STR + 7);  /* "checkout" */
		put64(lb + 256, 136 + 16 * 2 + 8, 8);
	} else {
		/* labelMap{list []label}: slice header, then {key, value} pairs */
		put64(lb, 0, LBL + 64);
		put64(lb, 8, 2);
		put64(lb, 16, 2);
		put64(lb + 64, 0, STR);
		put64(lb + 64, 8, 7);
		put64(lb + 64, 16, STR + 7);
		put64(lb + 64, 24, 8);
		put64(lb + 64, 32, STR + 15);
		put64(lb + 64, 40, 6);
		put64(lb + 64, 48, STR + 21);
		put64(lb + 64, 56, 2);
	}
}

static struct pm_gor *fake_gor(const struct pm_gor_layout *l)
{
	struct pm_gor_opts o = { .creators = 1, .read = fake_read };
	struct pm_gor *g = pm_gor_new(&o);

	pm_gor_set_layout(g, 1, l);
	return g;
}

static int check_labels(const struct pm_gor_info *gi)
{
	CHECK_INT(gi->nlabels, 2);
	CHECK_STR(gi->labels[0].key, "handler");
	CHECK_STR(gi->labels[0].value, "checkout");
	CHECK_STR(gi->labels[1].key, "region");
	CHECK_STR(gi->labels[1].value, "eu");
	return PM_PASS;
}

static int test_table(void)
{
	struct pm_gor_layout l;

	CHECK_INT(pm_gor_layout_version("go1.19.8", &l), 0);
	CHECK_INT(l.g_goid, 152);
	CHECK_INT(l.g_gopc, 296);
	CHECK_INT(l.g_labels, 360);
	CHECK_INT(l.g_parent_goid, 0);
	CHECK_INT(l.m_curg, 192);
	CHECK_INT(l.labels, PM_GOR_LABELS_MAP);
	CHECK_INT(pm_gor_layout_version("go1.21.0", &l), 0);
	CHECK_INT(l.g_parent_goid, 272);
	CHECK_INT(pm_gor_layout_version("go1.24.1", &l), 0);
	CHECK_INT(l.g_goid, 160);
	CHECK_INT(l.labels, PM_GOR_LABELS_SLICE);
	CHECK_INT(pm_gor_layout_version("go1.25.0", &l), 0);
	CHECK_INT(l.m_curg, 184);
	CHECK_INT(pm_gor_layout_version("go1.18.10", &l), -ENOTSUP);
	CHECK_INT(pm_gor_layout_version("go1.99.0", &l), -ENOTSUP);
	CHECK_INT(pm_gor_layout_version("devel +abc", &l), -ENOTSUP);
	CHECK_INT(pm_gor_layout_version("", &l), -ENOTSUP);
	return PM_PASS;
}

/*
 * Go 1.27 (lefthook 2.2.2, go1.27.0, stripped): the offsets its runtime
 * uses, read off its code: newproc1 stores parentGoid 0x118, gopc 0x120,
 * ancestors 0x128, startpc 0x130, labels 0x160 (copied from m.curg 0xb8),
 * goid 0x98; casgstatus cmpxchg 0x90; execute g.m 0x30; minit m.procid
 * 0x40; m.gsignal 0x48; gogo reads the gobuf's sp 0, pc 8, bp 0x28.
 * Newer releases are not guessed.
 */
static int test_table_go127(void)
{
#define F(field, want) { offsetof(struct pm_gor_layout, field), want, #field }
	static const struct {
		size_t off;
		uint32_t want;
		const char *name;
	} f[] = {
		F(g_m, 48), F(g_status, 144), F(g_goid, 152), F(g_parent_goid, 280),
		F(g_gopc, 288), F(g_ancestors, 296), F(g_startpc, 304), F(g_labels, 352),
		F(g_sched_sp, 56), F(g_sched_pc, 64), F(g_sched_bp, 96), F(m_procid, 64),
		F(m_gsignal, 72), F(m_curg, 184), F(g_size, 360), F(m_size, 192),
	};
#undef F
	struct pm_gor_layout l;
	uint32_t v;
	size_t i;

	CHECK_INT(pm_gor_layout_version("go1.27.0", &l), 0);
	CHECK_INT(l.minor, 27);
	CHECK(!l.from_dwarf);
	CHECK_INT(l.labels, PM_GOR_LABELS_SLICE);
	for (i = 0; i < PM_ARRAY_SIZE(f); i++) {
		memcpy(&v, (const char *)&l + f[i].off, sizeof(v));
		if (v != f[i].want) {
			fprintf(stderr, "  go1.27 %s: %u, expected %u\n", f[i].name, v, f[i].want);
			return PM_FAIL;
		}
	}
	CHECK_INT(pm_gor_layout_version("go1.27rc1", &l), 0);
	CHECK_INT(l.g_parent_goid, 280);
	CHECK_INT(pm_gor_layout_version("go1.28.0", &l), -ENOTSUP);
	return PM_PASS;
}

/*
 * Every release from 1.19 to 1.27 has a row, and what changed between
 * them did (go/types over each release's src/runtime, linux/amd64).
 */
static int test_table_releases(void)
{
	struct pm_gor_layout l;
	char v[16];
	int minor;

	for (minor = 19; minor <= 27; minor++) {
		snprintf(v, sizeof(v), "go1.%d.3", minor);
		CHECK_INT(pm_gor_layout_version(v, &l), 0);
		CHECK_INT(l.minor, minor);
		CHECK_INT(l.g_m, 48);
		CHECK_INT(l.g_sched_sp, 56);
		CHECK_INT(l.g_sched_bp, minor >= 25 ? 96 : 104);              /* gobuf.ret went */
		CHECK_INT(l.g_goid, minor == 23 || minor == 24 ? 160 : 152);  /* g.syscallbp came */
		CHECK_INT(l.g_parent_goid != 0, minor >= 21);
		CHECK_INT(l.m_curg, minor >= 25 ? 184 : 192);                 /* m.morebuf is one */
		CHECK_INT(l.labels, minor <= 23 ? PM_GOR_LABELS_MAP : PM_GOR_LABELS_SLICE);
	}
	return PM_PASS;
}

/* The DWARF of a Debian go1.19 binary gives the table's offsets. */
static int test_dwarf(void)
{
	const char *path = pm_test_fixture("go/creators");
	struct pm_gor_layout d, t;

	if (access(path, R_OK) != 0)
		SKIP("no fixture %s (scripts/fixtures.sh)", path);
	CHECK_INT(pm_gor_layout_dwarf(path, "go1.19.8", &d), 0);
	CHECK_INT(pm_gor_layout_version("go1.19.8", &t), 0);
	CHECK(d.from_dwarf);
	CHECK_INT(d.g_m, t.g_m);
	CHECK_INT(d.g_status, t.g_status);
	CHECK_INT(d.g_goid, t.g_goid);
	CHECK_INT(d.g_gopc, t.g_gopc);
	CHECK_INT(d.g_startpc, t.g_startpc);
	CHECK_INT(d.g_ancestors, t.g_ancestors);
	CHECK_INT(d.g_labels, t.g_labels);
	CHECK_INT(d.g_parent_goid, 0);
	CHECK_INT(d.m_procid, t.m_procid);
	CHECK_INT(d.m_gsignal, t.m_gsignal);
	CHECK_INT(d.m_curg, t.m_curg);
	/* g.sched, the gobuf the unwinder follows across stack switches */
	CHECK_INT(d.g_sched_sp, 56);
	CHECK_INT(d.g_sched_sp, t.g_sched_sp);
	CHECK_INT(d.g_sched_pc, t.g_sched_pc);
	CHECK_INT(d.g_sched_bp, t.g_sched_bp);
	CHECK_INT(pm_gor_layout_version("go1.25.1", &t), 0);
	CHECK_INT(t.g_sched_bp, 56 + 40); /* gobuf.ret gone in 1.25 */
	CHECK_INT(pm_gor_layout_dwarf(pm_test_fixture("go/creators-stripped"), "go1.19.8", &d),
		  -ENOENT);
	return PM_PASS;
}

static int test_inspect_user_g(void)
{
	struct pm_gor_layout l;
	struct pm_gor_info gi;
	struct pm_gor *g;
	int rc;

	pm_gor_layout_version("go1.19.8", &l);
	fake_world(&l, false);
	g = fake_gor(&l);
	rc = pm_gor_inspect(g, 1, TID, G1, STK + 0x1000, NULL, 0, &gi);
	if (rc == 0)
		rc = check_labels(&gi);
	else
		fprintf(stderr, "  inspect: %d\n", rc);
	CHECK_INT(gi.goid, 77);
	CHECK_INT(gi.gopc, 0x401234);
	CHECK(!gi.on_system_stack);
	pm_gor_free(g);
	return rc;
}

/*
 * Live reads (process_vm_readv of this process): within a drain pass a
 * range is read once; after pm_gor_pass() it is read again.
 */
static int test_pass_reads(void)
{
	static uint64_t gb[128], g0b[128], mb[128], stk[1024];
	struct pm_gor_opts o = { .creators = 0 };
	struct pm_gor_layout l;
	struct pm_gor_info gi;
	struct pm_gor *g;
	pid_t pid = getpid();
	uint64_t sp = (uint64_t)(uintptr_t)&stk[512];

	pm_gor_layout_version("go1.19.8", &l);
	put64((uint8_t *)gb, 0, (uint64_t)(uintptr_t)stk);
	put64((uint8_t *)gb, 8, (uint64_t)(uintptr_t)&stk[1024]);
	put64((uint8_t *)gb, l.g_m, (uint64_t)(uintptr_t)mb);
	put64((uint8_t *)gb, l.g_goid, 77);
	put64((uint8_t *)gb, l.g_status, 2);
	put64((uint8_t *)g0b, l.g_m, (uint64_t)(uintptr_t)mb);
	put64((uint8_t *)mb, 0, (uint64_t)(uintptr_t)g0b);
	put64((uint8_t *)mb, l.m_procid, TID);
	put64((uint8_t *)mb, l.m_curg, (uint64_t)(uintptr_t)gb);
	g = pm_gor_new(&o);
	CHECK_INT(pm_gor_set_layout(g, pid, &l), 0);
	CHECK_INT(pm_gor_inspect(g, pid, TID, (uint64_t)(uintptr_t)gb, sp, NULL, 0, &gi), 0);
	CHECK_INT(gi.goid, 77);
	put64((uint8_t *)gb, l.g_goid, 78);
	/* the same pass: the first read stands */
	CHECK_INT(pm_gor_inspect(g, pid, TID, (uint64_t)(uintptr_t)gb, sp, NULL, 0, &gi), 0);
	CHECK_INT(gi.goid, 77);
	pm_gor_pass(g);
	CHECK_INT(pm_gor_inspect(g, pid, TID, (uint64_t)(uintptr_t)gb, sp, NULL, 0, &gi), 0);
	CHECK_INT(gi.goid, 78);
	/* a range read in the pass, then gone: still the pass's bytes; next pass, nothing */
	put64((uint8_t *)mb, l.m_procid, TID + 1);
	CHECK_INT(pm_gor_inspect(g, pid, TID, (uint64_t)(uintptr_t)gb, sp, NULL, 0, &gi), 0);
	pm_gor_pass(g);
	CHECK(pm_gor_inspect(g, pid, TID, (uint64_t)(uintptr_t)gb, sp, NULL, 0, &gi) != 0);
	pm_gor_free(g);
	return PM_PASS;
}

static int test_inspect_g0(void)
{
	struct pm_gor_layout l;
	struct pm_gor_info gi;
	struct pm_gor *g;

	pm_gor_layout_version("go1.19.8", &l);
	fake_world(&l, false);
	g = fake_gor(&l);
	/* on g0: the goroutine it serves */
	CHECK_INT(pm_gor_inspect(g, 1, TID, G0, 0x7fff0000, NULL, 0, &gi), 0);
	CHECK_INT(gi.goid, 77);
	CHECK(gi.on_system_stack);
	/* another thread: m.procid does not match, and no m is known for it */
	CHECK_INT(pm_gor_inspect(g, 1, TID + 1, G0, 0x7fff0000, NULL, 0, &gi), -EINVAL);
	/* R14 garbage (C code): the thread's m, SP on curg's stack */
	CHECK_INT(pm_gor_inspect(g, 1, TID, 0x1234560, STK + 0x100, NULL, 0, &gi), 0);
	CHECK_INT(gi.goid, 77);
	/* ... but not with SP on no stack of that m */
	CHECK_INT(pm_gor_inspect(g, 1, TID, 0x1234560, 0x999000, NULL, 0, &gi), -EINVAL);
	/* the user g with SP outside its stack does not validate as itself */
	CHECK(pm_gor_inspect(g, 1, TID, G1, STK + 0x3000, NULL, 0, &gi) != 0 || gi.goid == 77);
	/* no goroutine on the m */
	put64(mem[2].buf, l.m_curg, 0);
	CHECK_INT(pm_gor_inspect(g, 1, TID, G0, 0x7fff0000, NULL, 0, &gi), -ENOENT);
	pm_gor_free(g);
	return PM_PASS;
}

/* R14's goroutine left its m: kept only when its outermost stack bytes still match. */
static int test_inspect_late(void)
{
	static uint8_t copy[0x1000];
	struct pm_gor_layout l;
	struct pm_gor_info gi;
	struct pm_gor *g;
	uint8_t *stk;

	pm_gor_layout_version("go1.19.8", &l);
	fake_world(&l, false);
	stk = region(STK + 0x1000, 0x1000);
	memset(stk, 0x5a, 0x1000);
	memcpy(copy, stk, sizeof(copy));
	put64(mem[2].buf, l.m_curg, 0x555000); /* m runs another goroutine now */
	put64(mem[0].buf, l.g_m, 0);           /* descheduled */
	g = fake_gor(&l);
	CHECK_INT(pm_gor_inspect(g, 1, TID, G1, STK + 0x1000, copy, sizeof(copy), &gi), 0);
	CHECK(gi.late);
	CHECK_INT(gi.goid, 77);
	copy[0x1000 - 8] ^= 1; /* a new goroutine's root frame */
	CHECK_INT(pm_gor_inspect(g, 1, TID, G1, STK + 0x1000, copy, sizeof(copy), &gi), -ESTALE);
	CHECK_INT(pm_gor_inspect(g, 1, TID, G1, STK + 0x1000, NULL, 0, &gi), -ESTALE);
	/* a g in _Gidle (a g0 read without its m) is no goroutine: not a stale one */
	memset(mem[0].buf + l.g_status, 0, 4);
	CHECK_INT(pm_gor_inspect(g, 1, TID, G1, STK + 0x1000, copy, sizeof(copy), &gi), -EINVAL);
	pm_gor_free(g);
	return PM_PASS;
}

/* 1.26 and 1.27: labels as a slice; a sample on g0 counts for m.curg */
static int test_labels_slice(void)
{
	static const char *const vers[] = { "go1.26.0", "go1.27.0" };
	struct pm_gor_layout l;
	struct pm_gor_info gi;
	struct pm_gor *g;
	size_t i;
	int rc = PM_PASS;

	for (i = 0; i < PM_ARRAY_SIZE(vers) && rc == PM_PASS; i++) {
		CHECK_INT(pm_gor_layout_version(vers[i], &l), 0);
		fake_world(&l, true);
		g = fake_gor(&l);
		rc = pm_gor_inspect(g, 1, TID, G1, STK + 0x10, NULL, 0, &gi);
		if (rc == 0)
			rc = check_labels(&gi);
		if (rc == PM_PASS && (pm_gor_inspect(g, 1, TID, G0, 0x7fff0000, NULL, 0, &gi) != 0 ||
				      gi.goid != 77 || gi.gopc != 0x401234 || !gi.on_system_stack))
			rc = PM_FAIL;
		if (rc == PM_PASS)
			rc = check_labels(&gi);
		pm_gor_free(g);
	}
	return rc;
}

/* Hostile label data: huge lengths, a loop of overflow buckets, a bad B. */
static int test_labels_hostile(void)
{
	struct pm_gor_layout l;
	struct pm_gor_info gi;
	struct pm_gor *g;
	uint8_t *lb;

	pm_gor_layout_version("go1.19.8", &l);
	fake_world(&l, false);
	lb = mem[3].buf;
	put64(lb + 256, 8 + 16 * 0 + 8, 1ULL << 40);     /* key length */
	put64(lb + 256, 264, LBL + 256);                 /* overflow -> itself */
	lb[64 + 9] = 200;                                /* B */
	g = fake_gor(&l);
	CHECK_INT(pm_gor_inspect(g, 1, TID, G1, STK + 0x10, NULL, 0, &gi), 0);
	CHECK(gi.nlabels <= PM_GOR_MAX_LABELS);
	CHECK_INT(gi.goid, 77);
	pm_gor_free(g);
	return PM_PASS;
}

/* A layout with a field past one read of g or m is refused, whatever it claims. */
static int test_layout_vetted(void)
{
	struct pm_gor_layout l, bad;
	struct pm_gor_info gi;
	struct pm_gor *g;

	pm_gor_layout_version("go1.19.8", &l);
	fake_world(&l, false);
	g = fake_gor(&l);
	bad = l;
	bad.g_labels = 0xfffffffc; /* + 8 wraps to 4 in 32 bits */
	CHECK_INT(pm_gor_set_layout(g, 1, &bad), -EINVAL);
	CHECK_INT(pm_gor_inspect(g, 1, TID, G1, STK + 0x10, NULL, 0, &gi), -ENOTSUP);
	bad = l;
	bad.m_curg = 4096;
	CHECK_INT(pm_gor_set_layout(g, 1, &bad), -EINVAL);
	bad = l;
	bad.g_size = 8; /* sizes are recomputed, not trusted */
	bad.m_size = 8;
	CHECK_INT(pm_gor_set_layout(g, 1, &bad), 0);
	CHECK_INT(pm_gor_inspect(g, 1, TID, G1, STK + 0x10, NULL, 0, &gi), 0);
	CHECK_INT(gi.goid, 77);
	pm_gor_free(g);
	return PM_PASS;
}

/*
 * Creators asked for, but the go statement is in no mapping: an empty
 * chain, interned and found again from the cache (the reproducer is
 * tests/fuzz/crashes/fuzz-goroutine/empty-chain-null-offset).
 */
static int test_sample_empty_chain(void)
{
	struct pm_gor_layout l;
	struct pm_maps *maps = pm_maps_new();
	struct pm_stacks *st = pm_stacks_new(1);
	struct pm_prof_label lab[4];
	uint32_t ids[8];
	uint64_t pc = 0x401000;
	struct pm_gor *g;
	size_t n, k;
	int round;

	pm_gor_layout_version("go1.19.8", &l);
	fake_world(&l, false);
	g = fake_gor(&l);
	for (round = 0; round < 2; round++) {
		struct pm_gor_walk w = {
			.pid = 1, .tid = TID, .r14 = G1, .sp = STK + 0x10, .pcs = &pc, .npcs = 1,
		};

		n = pm_gor_sample(g, maps, st, &w, ids, 0, 8);
		CHECK_INT(n, 1); /* the tag frame alone */
		k = n;
		CHECK_INT(pm_gor_labels(g, st, ids, &k, lab, 4), 3);
		CHECK_INT(k, 0);
		CHECK_INT(lab[0].num, 77);
		CHECK_STR(lab[1].key, "handler");
	}
	pm_gor_free(g);
	pm_stacks_free(st);
	pm_maps_free(maps);
	return PM_PASS;
}

/* The entry of @name in the Go binary @path; 0 when it cannot be read. */
static uint64_t go_entry(const char *path, const char *name)
{
	struct pm_elf *e = pm_elf_open(path);
	struct pm_go *go = NULL;
	uint64_t pc = 0;
	long i;

	if (e && pm_go_open(&go, e) == 0 && (i = pm_go_func_by_name(go, name)) >= 0)
		pc = pm_go_func_entry(go, i);
	pm_go_free(go);
	pm_elf_free(e);
	return pc;
}

/*
 * A sample whose goroutine nothing validates (R14 unreadable, the thread's
 * m unknown) but whose own stack copy the walk took to runtime.goexit: its
 * thread served a goroutine (an off-CPU sample keeps its time, as for one
 * that left its thread: -ESTALE); not where the walk crossed onto another
 * stack (read after the sample) or stopped short of a goroutine's bottom.
 */
static int test_sample_goroutine_stack_unknown(void)
{
	char *bin = realpath(pm_test_fixture("go/symtest"), NULL); /* (a mapping's path is absolute) */
	uint64_t pcs[2] = { 0, 0 };
	struct pm_gor_layout l;
	struct pm_stacks *st;
	struct pm_maps *maps;
	uint32_t ids[8];
	struct pm_gor *g;
	int rc = PM_PASS;

	if (bin) {
		pcs[0] = go_entry(bin, "main.main") + 1;
		pcs[1] = go_entry(bin, "runtime.goexit") + 1;
	}
	if (pcs[0] <= 1 || pcs[1] <= 1) {
		free(bin);
		SKIP("no Go fixture %s (scripts/fixtures.sh)", pm_test_fixture("go/symtest"));
	}
	st = pm_stacks_new(1);
	maps = pm_maps_new();
	pm_gor_layout_version("go1.19.8", &l);
	fake_world(&l, false);
	g = fake_gor(&l);
	/* the text from its first page (a non-PIE Go binary) past both pcs, whatever its size */
	pm_maps_add_file(maps, 1, 0x400000, ((pcs[0] > pcs[1] ? pcs[0] : pcs[1]) | 0xfff) + 1 - 0x400000,
			 0, bin, NULL);
	for (int k = 0; k < 3 && rc == PM_PASS; k++) {
		struct pm_gor_walk w = {
			.pid = 1, .tid = TID, .r14 = 0x300000, .sp = STK + 0x10, .pcs = pcs,
			.npcs = k == 2 ? 1 : 2,
			.status = PM_UNW_COMPLETE | (k == 1 ? PM_UNW_SWITCHED : 0),
		};
		size_t n = pm_gor_sample(g, maps, st, &w, ids, 0, 8);

		if (pm_gor_last(g, NULL) != (k == 0 ? -ESTALE : -EINVAL) || (n > 0) != (k != 2)) {
			fprintf(stderr, "  case %d: pm_gor_last %d, %zu tag frames\n", k,
				pm_gor_last(g, NULL), n);
			rc = PM_FAIL;
		}
	}
	pm_gor_free(g);
	pm_stacks_free(st);
	pm_maps_free(maps);
	free(bin);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct pm_test tests[] = {
		{ "table", test_table },
		{ "table_go127", test_table_go127 },
		{ "table_releases", test_table_releases },
		{ "dwarf_go119", test_dwarf },
		{ "inspect_user_g", test_inspect_user_g },
		{ "inspect_g0", test_inspect_g0 },
		{ "pass_reads", test_pass_reads },
		{ "inspect_late", test_inspect_late },
		{ "labels_slice_go126_go127", test_labels_slice },
		{ "labels_hostile", test_labels_hostile },
		{ "layout_vetted", test_layout_vetted },
		{ "sample_empty_chain", test_sample_empty_chain },
		{ "sample_goroutine_stack_unknown", test_sample_goroutine_stack_unknown },
		{ NULL, NULL },
	};

	return pm_test_main(argc, argv, "goroutine", tests);
}
