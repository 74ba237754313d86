/* Unit tests for lib/unwind: synthetic stacks over a fake function table. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "test.h"
#include "unwind/unwind.h"
#include "profile/stacks.h"

/*
 *   A   [0x1000, 0x1100)  Go, frame 0x20 (0 at the entry: before the prologue)
 *   B   [0x2000, 0x2100)  Go, frame 0x10, main.main
 *   X   [0x4000, 0x4100)  SPWRITE
 *   C   [0x5000, 0x5100)  native (frame pointers)
 *   goexit [0x3000, 0x3010) TOP
 */
static int lookup(void *arg, uint64_t pc, struct pm_unw_func *f)
{
	int *calls = arg;

	(*calls)++;
	memset(f, 0, sizeof(*f));
	if (pc >= 0x1000 && pc < 0x1100) {
		f->entry = 0x1000;
		f->spdelta = pc == 0x1000 ? 0 : 0x20;
		f->flags = PM_UNW_F_GO;
	} else if (pc >= 0x2000 && pc < 0x2100) {
		f->entry = 0x2000;
		f->spdelta = 0x10;
		f->flags = PM_UNW_F_GO | PM_UNW_F_MAIN;
	} else if (pc >= 0x3000 && pc < 0x3010) {
		f->entry = 0x3000;
		f->spdelta = 0;
		f->flags = PM_UNW_F_GO | PM_UNW_F_TOP;
	} else if (pc >= 0x4000 && pc < 0x4100) {
		f->entry = 0x4000;
		f->spdelta = 0x8;
		f->flags = PM_UNW_F_GO | PM_UNW_F_SPWRITE;
	} else if (pc >= 0x5000 && pc < 0x5100) {
		f->entry = 0x5000;
		f->spdelta = -1;
	} else {
		return -ENOENT;
	}
	return 0;
}

#define SP 0x7000ULL

static void put(uint8_t *stack, uint64_t addr, uint64_t v)
{
	memcpy(stack + (addr - SP), &v, 8);
}

/* A walk over @stack at SP; @read_mem, when given, reads past it. */
static int walk_mem(uint64_t ip, uint8_t *stack, size_t len, const uint64_t *chain, size_t nchain,
		    int (*read_mem)(void *, uint64_t, void *, size_t), uint64_t *pcs, size_t max, unsigned *status)
{
	int calls = 0;
	struct pm_unw *u = pm_unw_new(lookup, &calls);
	struct pm_unw_input in = { .ip = ip, .sp = SP, .stack = stack, .stack_len = len,
				   .chain = chain, .chain_len = nchain, .read_mem = read_mem };
	size_t n = pm_unw_walk(u, &in, pcs, max, status);

	pm_unw_free(u);
	return (int)n;
}

static int walk(uint64_t ip, uint8_t *stack, size_t len, const uint64_t *chain, size_t nchain,
		uint64_t *pcs, size_t max, unsigned *status)
{
	return walk_mem(ip, stack, len, chain, nchain, NULL, pcs, max, status);
}

static int test_go_frames(void)
{
	uint8_t st[256] = { 0 };
	uint64_t pcs[16];
	unsigned status;
	int n;

	put(st, SP + 0x20, 0x2030);        /* A's return address into B */
	put(st, SP + 0x28 + 0x10, 0x3001); /* B's return address into goexit */
	n = walk(0x1050, st, sizeof(st), NULL, 0, pcs, 16, &status);
	CHECK_INT(n, 3);
	CHECK_INT(pcs[0], 0x1050);
	CHECK_INT(pcs[1], 0x2030);
	CHECK_INT(pcs[2], 0x3001);
	CHECK(status & PM_UNW_COMPLETE);
	CHECK(status & PM_UNW_SAW_MAIN);
	CHECK(!(status & PM_UNW_CUT));
	return PM_PASS;
}

static int test_leaf_before_prologue(void)
{
	uint8_t st[256] = { 0 };
	uint64_t pcs[16];
	unsigned status;
	int n;

	/* at A's entry nothing is pushed yet: the return address is at SP */
	put(st, SP, 0x2030);
	put(st, SP + 8 + 0x10, 0x3001);
	n = walk(0x1000, st, sizeof(st), NULL, 0, pcs, 16, &status);
	CHECK_INT(n, 3);
	CHECK_INT(pcs[1], 0x2030);
	CHECK(status & PM_UNW_COMPLETE);
	return PM_PASS;
}

static int test_bad_return_is_cut(void)
{
	uint8_t st[256] = { 0 };
	uint64_t pcs[16];
	unsigned status;
	int n;

	put(st, SP + 0x20, 0x2030);
	put(st, SP + 0x28 + 0x10, 0xdead0000); /* not code */
	n = walk(0x1050, st, sizeof(st), NULL, 0, pcs, 16, &status);
	CHECK_INT(n, 2);
	CHECK(status & PM_UNW_CUT);
	CHECK(!(status & PM_UNW_COMPLETE));
	return PM_PASS;
}

static int test_copy_end_and_chain(void)
{
	uint8_t st[0x28] = { 0 };
	uint64_t pcs[16];
	uint64_t chain[] = { 0x1050, 0x2030, 0x3001 };
	unsigned status;
	int n;

	/* the copy holds A's frame only: B's return address is past its end */
	put(st, SP + 0x20, 0x2030);
	n = walk(0x1050, st, sizeof(st), NULL, 0, pcs, 16, &status);
	CHECK_INT(n, 2);
	CHECK(status & PM_UNW_COPY_END);
	/* the kernel's callchain finishes it */
	n = walk(0x1050, st, sizeof(st), chain, 3, pcs, 16, &status);
	CHECK_INT(n, 3);
	CHECK_INT(pcs[2], 0x3001);
	CHECK(status & PM_UNW_COMPLETE);
	CHECK(!(status & PM_UNW_COPY_END));
	return PM_PASS;
}

static int test_no_copy_chain_only(void)
{
	uint64_t pcs[16];
	uint64_t chain[] = { 0x1050, 0x2030, 0x3001 };
	unsigned status;
	int n;

	/* --stack-size 0: the kernel's callchain is all there is, from its first entry */
	n = walk(0x1050, NULL, 0, chain, 3, pcs, 16, &status);
	CHECK_INT(n, 3);
	CHECK_INT(pcs[1], 0x2030);
	CHECK_INT(pcs[2], 0x3001);
	CHECK(status & PM_UNW_COMPLETE);
	return PM_PASS;
}

static int test_spwrite_stops(void)
{
	uint8_t st[256] = { 0 };
	uint64_t pcs[16];
	unsigned status;
	int n;

	put(st, SP + 0x20, 0x4010); /* A called from the stack switcher X */
	n = walk(0x1050, st, sizeof(st), NULL, 0, pcs, 16, &status);
	CHECK_INT(n, 2);
	CHECK(status & PM_UNW_CUT);
	return PM_PASS;
}

static int test_native_fp(void)
{
	uint8_t st[256] = { 0 };
	uint64_t pcs[16];
	unsigned status;
	int calls = 0;
	struct pm_unw *u = pm_unw_new(lookup, &calls);
	/* C at 0x5010 with BP = SP+0x10: [bp] = next bp (SP+0x40), [bp+8] = ret into C again */
	struct pm_unw_input in = { .ip = 0x5010, .sp = SP, .bp = SP + 0x10, .stack = st,
				   .stack_len = sizeof(st) };
	size_t n;

	put(st, SP + 0x10, SP + 0x40);
	put(st, SP + 0x18, 0x5020);
	put(st, SP + 0x40, 0);
	put(st, SP + 0x48, 0); /* outermost */
	n = pm_unw_walk(u, &in, pcs, 16, &status);
	pm_unw_free(u);
	CHECK_INT(n, 2);
	CHECK_INT(pcs[1], 0x5020);
	CHECK(status & PM_UNW_COMPLETE);
	return PM_PASS;
}

static int test_max_frames(void)
{
	uint8_t st[256] = { 0 };
	uint64_t pcs[2];
	unsigned status;
	int n;

	put(st, SP + 0x20, 0x2030);
	put(st, SP + 0x28 + 0x10, 0x3001);
	n = walk(0x1050, st, sizeof(st), NULL, 0, pcs, 2, &status);
	CHECK_INT(n, 2);
	CHECK(status & PM_UNW_MAX);
	return PM_PASS;
}

static int test_cache_hits(void)
{
	uint8_t st[256] = { 0 };
	uint64_t pcs[16];
	unsigned status;
	int calls = 0, i;
	struct pm_unw *u = pm_unw_new(lookup, &calls);
	struct pm_unw_input in = { .ip = 0x1050, .sp = SP, .stack = st, .stack_len = sizeof(st) };

	put(st, SP + 0x20, 0x2030);
	put(st, SP + 0x28 + 0x10, 0x3001);
	for (i = 0; i < 100; i++)
		pm_unw_walk(u, &in, pcs, 16, &status);
	pm_unw_free(u);
	CHECK(calls <= 6);
	return PM_PASS;
}

static int test_stacks_aggregate(void)
{
	struct pm_stacks *s = pm_stacks_new(2);
	struct pm_stack_frame f1 = { 0, false, 0x1050, 0x1050 }, f2 = { 0, true, 0x1050, 0x1050 };
	uint32_t a = pm_stacks_frame(s, &f1), b = pm_stacks_frame(s, &f2), ids[2];
	int64_t v[2] = { 1, 100 };
	const int64_t *vals;
	size_t n, i;

	CHECK(a != b);                       /* leaf and return address differ */
	CHECK_INT(pm_stacks_frame(s, &f1), a);
	ids[0] = a;
	ids[1] = b;
	for (i = 0; i < 5000; i++)
		pm_stacks_add(s, ids, 2, v);
	pm_stacks_add(s, ids, 1, v);
	CHECK_INT(pm_stacks_count(s), 2);
	pm_stacks_at(s, 0, &n, &vals);
	CHECK_INT(n, 2);
	CHECK_INT(vals[0], 5000);
	CHECK_INT(vals[1], 500000);
	/* many distinct stacks survive rehashing */
	for (i = 0; i < 10000; i++) {
		struct pm_stack_frame f = { 1, true, 0x9000 + i, 0 };
		ids[0] = pm_stacks_frame(s, &f);
		pm_stacks_add(s, ids, 1, v);
	}
	CHECK_INT(pm_stacks_count(s), 10002);
	CHECK_INT(pm_stacks_nframes(s), 10002);
	pm_stacks_free(s);
	return PM_PASS;
}


/* ---- the runtime's stack switches, over a fake target memory ---- */

/*
 * More functions (with A, B, goexit above):
 *   systemstack [0x6000, 0x6100) GSWITCH, frame 0
 *   systemstack_switch [0x6100, 0x6200) NOFRAME, frame 0
 *   sigtramp [0x6200, 0x6300) SIGTRAMP, frame 0x10
 *   sigreturn [0x6300, 0x6400) SIGRETURN
 *   mcall [0x6400, 0x6500) GSWITCH + MCALL
 *   time.now [0x6500, 0x6600) VDSOCALL, MOVQ SP, R12 at 0x6508
 *   schedule [0x6600, 0x6700) SCHEDULE, frame 0x10
 */
static int lookup_rt(void *arg, uint64_t pc, struct pm_unw_func *f)
{
	static const struct {
		uint64_t lo;
		int32_t spdelta;
		unsigned flags;
	} t[] = {
		{ 0x6000, 0, PM_UNW_F_SPWRITE | PM_UNW_F_GSWITCH | PM_UNW_F_SYSTEMSTACK },
		{ 0x6100, 0, PM_UNW_F_NOFRAME },
		{ 0x6200, 0x10, PM_UNW_F_SIGTRAMP },
		{ 0x6300, 0, PM_UNW_F_SIGRETURN },
		{ 0x6400, 0, PM_UNW_F_SPWRITE | PM_UNW_F_GSWITCH | PM_UNW_F_MCALL },
		/* time.now: 0x18 after its prologue, 0x38 (the SUBQ $32 counted) past 0x6510 */
		{ 0x6500, 0x18, PM_UNW_F_SPWRITE | PM_UNW_F_VDSOCALL },
		{ 0x6600, 0x10, PM_UNW_F_SCHEDULE },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (pc >= t[i].lo && pc < t[i].lo + 0x100) {
			memset(f, 0, sizeof(*f));
			f->entry = t[i].lo;
			f->spdelta = t[i].spdelta;
			if (t[i].lo == 0x6500 && pc >= 0x6510)
				f->spdelta = 0x38;
			f->flags = PM_UNW_F_GO | t[i].flags;
			return 0;
		}
	return lookup(arg, pc, f);
}

#define G0 0x10000ULL
#define M 0x20000ULL
#define CURG 0x30000ULL
#define GLO 0x8000ULL
#define GHI 0xa000ULL

/* Target memory: the g0, m and curg structs (Go 1.19 offsets) and the goroutine stack. */
struct fake_mem {
	uint8_t g0[512], m[512], curg[512], gstack[GHI - GLO], code[64];
	unsigned reads;
};

static int fake_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct fake_mem *fm = arg;
	const struct {
		uint64_t at;
		uint8_t *p;
		size_t n;
	} r[] = { { G0, fm->g0, sizeof(fm->g0) },
		  { M, fm->m, sizeof(fm->m) },
		  { CURG, fm->curg, sizeof(fm->curg) },
		  { GLO, fm->gstack, sizeof(fm->gstack) },
		  { 0x6500, fm->code, sizeof(fm->code) } };

	fm->reads++;
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		if (addr >= r[i].at && addr - r[i].at <= r[i].n && r[i].n - (addr - r[i].at) >= len) {
			memcpy(buf, r[i].p + (addr - r[i].at), len);
			return 0;
		}
	return -EFAULT;
}

static void put_at(uint8_t *b, uint64_t off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

static const struct pm_unw_goabi abi119 = { 48, 56, 64, 104, 192, 80 };

/*
 * On g0: A (the fn systemstack called) <- systemstack; curg stopped in
 * systemstack_switch with sched.sp at the return into B, B <- goexit.
 */
static void g0_world(struct fake_mem *fm, uint8_t *st, uint64_t sched_pc, uint64_t sched_bp)
{
	memset(fm, 0, sizeof(*fm));
	put(st, SP + 0x18, 0x9100);  /* A pushed the goroutine's BP */
	put(st, SP + 0x20, 0x6005);  /* A's return into systemstack */
	put_at(fm->g0, 48, M);
	put_at(fm->m, 0, G0);
	put_at(fm->m, 192, CURG);
	put_at(fm->curg, 0, GLO);
	put_at(fm->curg, 8, GHI);
	put_at(fm->curg, 48, M);
	put_at(fm->curg, 56, 0x9000);
	put_at(fm->curg, 64, sched_pc);
	put_at(fm->curg, 104, sched_bp);
	put_at(fm->gstack, 0x9000 - GLO, 0x2030);        /* [sched.sp]: return into B */
	put_at(fm->gstack, 0x9008 + 0x10 - GLO, 0x3001); /* B's return into goexit */
}

static size_t walk_rt(uint8_t *st, size_t len, struct fake_mem *fm, const struct pm_unw_goabi *go,
		      uint64_t ip, uint64_t *pcs, unsigned *status)
{
	int calls = 0;
	struct pm_unw *u = pm_unw_new(lookup_rt, &calls);
	struct pm_unw_input in = { .ip = ip, .sp = SP, .stack = st, .stack_len = len,
				   .read_mem = fm ? fake_read : NULL, .read_arg = fm, .go = go };
	size_t n;

	in.regs[PM_DW_R14] = G0;
	in.regs_valid = 1u << PM_DW_R14;
	n = pm_unw_walk(u, &in, pcs, 16, status);
	pm_unw_free(u);
	return n;
}

static int test_systemstack_to_curg(void)
{
	static struct fake_mem fm;
	uint8_t st[256] = { 0 };
	uint64_t pcs[16];
	unsigned status;

	g0_world(&fm, st, 0x6100, 0x9100);
	CHECK_INT(walk_rt(st, sizeof(st), &fm, &abi119, 0x1050, pcs, &status), 4);
	CHECK_INT(pcs[1], 0x6005);
	CHECK_INT(pcs[2], 0x2030); /* systemstack_switch itself is not a frame */
	CHECK_INT(pcs[3], 0x3001);
	CHECK(status & PM_UNW_COMPLETE);
	CHECK(status & PM_UNW_SWITCHED);
	/* mcall-style: sched.pc is a return address into B, shown */
	g0_world(&fm, st, 0x2031, 0x9100);
	put_at(fm.gstack, 0x9000 + 0x10 - GLO, 0x3001); /* B's frame from sched.sp */
	CHECK_INT(walk_rt(st, sizeof(st), &fm, &abi119, 0x1050, pcs, &status), 4);
	CHECK_INT(pcs[2], 0x2031);
	CHECK_INT(pcs[3], 0x3001);
	CHECK(status & PM_UNW_COMPLETE);
	return PM_PASS;
}

static int test_systemstack_hostile(void)
{
	static struct fake_mem fm;
	uint8_t st[256] = { 0 };
	uint64_t pcs[16];
	unsigned status;

	/* no offsets: cut, and asks for them */
	g0_world(&fm, st, 0x6100, 0x9100);
	CHECK_INT(walk_rt(st, sizeof(st), &fm, NULL, 0x1050, pcs, &status), 2);
	CHECK(status & PM_UNW_CUT);
	CHECK(status & PM_UNW_NEED_GO);
	/* the goroutine switched again from elsewhere since: its BP differs */
	g0_world(&fm, st, 0x6100, 0x9200);
	CHECK_INT(walk_rt(st, sizeof(st), &fm, &abi119, 0x1050, pcs, &status), 2);
	CHECK(status & PM_UNW_CUT);
	/* sched.sp outside curg's stack, or 0 (it came back) */
	g0_world(&fm, st, 0x6100, 0x9100);
	put_at(fm.curg, 56, GHI + 64);
	CHECK_INT(walk_rt(st, sizeof(st), &fm, &abi119, 0x1050, pcs, &status), 2);
	CHECK(status & PM_UNW_CUT);
	put_at(fm.curg, 56, 0);
	CHECK_INT(walk_rt(st, sizeof(st), &fm, &abi119, 0x1050, pcs, &status), 2);
	CHECK(status & PM_UNW_CUT);
	/* R14 is not m.g0, or curg.m is another m */
	g0_world(&fm, st, 0x6100, 0x9100);
	put_at(fm.m, 0, G0 + 8);
	CHECK_INT(walk_rt(st, sizeof(st), &fm, &abi119, 0x1050, pcs, &status), 2);
	g0_world(&fm, st, 0x6100, 0x9100);
	put_at(fm.curg, 48, M + 8);
	CHECK_INT(walk_rt(st, sizeof(st), &fm, &abi119, 0x1050, pcs, &status), 2);
	/* a curg pointing at itself through sched stays bounded */
	g0_world(&fm, st, 0x6005, 0x9100);
	put_at(fm.gstack, 0x9000 - GLO, 0x6005);
	walk_rt(st, sizeof(st), &fm, &abi119, 0x1050, pcs, &status);
	CHECK(status & (PM_UNW_CUT | PM_UNW_MAX));
	CHECK(fm.reads < 64);
	return PM_PASS;
}

/*
 * A sample in time.now itself: past its MOVQ SP, R12, SP is g0's (or moved
 * by an ANDQ the pcsp table does not know), and the caller is found from
 * R12 on the goroutine stack; in its prologue, from pcsp, R12 being the
 * caller's (here: a stale frame that would give another caller).
 */
static int test_vdso_leaf(void)
{
	static struct fake_mem fm;
	uint8_t st[256] = { 0 };
	uint64_t pcs[16], r12 = 0x9100;
	int calls = 0;
	struct pm_unw *u = pm_unw_new(lookup_rt, &calls);
	struct pm_unw_input in = { .sp = SP, .stack = st, .stack_len = sizeof(st),
				   .read_mem = fake_read, .read_arg = &fm, .go = &abi119 };
	unsigned status;
	size_t n;

	memset(&fm, 0, sizeof(fm));
	/* SUBQ $0x18, SP; MOVQ BP, 0x10(SP); MOVQ SP, R12 at 0x6508 */
	memcpy(fm.code, "\x48\x83\xec\x18\x90\x90\x90\x90\x49\x89\xe4", 11);
	/* above R12: vdsoPC, vdsoSP, BP, then the return into A; A <- B <- goexit */
	put_at(fm.gstack, r12 + 16 - GLO, 0x9200);
	put_at(fm.gstack, r12 + 24 - GLO, 0x1050);
	put_at(fm.gstack, r12 + 32 + 0x20 - GLO, 0x2030);
	put_at(fm.gstack, r12 + 32 + 0x28 + 0x10 - GLO, 0x3001);
	in.regs[PM_DW_R14] = CURG;
	in.regs[PM_DW_R12] = r12;
	in.regs_valid = 1u << PM_DW_R14 | 1u << PM_DW_R12;
	for (uint64_t ip = 0x650b; ip < 0x6580; ip += 0x3b) {
		in.ip = ip; /* past the MOVQ, before and after the SUBQ $32 */
		n = pm_unw_walk(u, &in, pcs, 16, &status);
		CHECK_INT(n, 4);
		CHECK_INT(pcs[1], 0x1050);
		CHECK_INT(pcs[2], 0x2030);
		CHECK(status & PM_UNW_COMPLETE);
	}
	/* in the prologue: the copy's frame by pcsp, A at 0x1060 this time */
	put(st, SP + 0x18, 0x1060);
	put(st, SP + 0x20 + 0x20, 0x2030);
	put(st, SP + 0x48 + 0x10, 0x3001);
	in.ip = 0x6504;
	n = pm_unw_walk(u, &in, pcs, 16, &status);
	CHECK_INT(n, 4);
	CHECK_INT(pcs[1], 0x1060);
	CHECK(status & PM_UNW_COMPLETE);
	pm_unw_free(u);
	return PM_PASS;
}

/* On g0 under runtime.schedule, a switch ends the walk: no goroutine is running. */
static int test_schedule_switch(void)
{
	static struct fake_mem fm;
	uint8_t st[256] = { 0 };
	uint64_t pcs[16];
	unsigned status;

	g0_world(&fm, st, 0x6100, 0x9100); /* a curg to be crossed into, read later */
	put(st, SP + 0x10, 0x6005);        /* schedule's return into systemstack */
	CHECK_INT(walk_rt(st, sizeof(st), &fm, &abi119, 0x6650, pcs, &status), 2);
	CHECK(status & PM_UNW_COMPLETE);
	CHECK(!(status & PM_UNW_SWITCHED));
	return PM_PASS;
}

static int test_mcall_scheduler(void)
{
	static struct fake_mem fm;
	uint8_t st[256] = { 0 };
	uint64_t pcs[16];
	unsigned status;

	g0_world(&fm, st, 0x6100, 0x9100);
	put(st, SP + 0x20, 0x6405); /* A's return into mcall */
	put_at(fm.m, 192, 0);       /* no curg: the scheduler */
	CHECK_INT(walk_rt(st, sizeof(st), &fm, &abi119, 0x1050, pcs, &status), 2);
	CHECK(status & PM_UNW_COMPLETE);
	/*
	 * the thread runs a goroutine again by the time it is read: the
	 * sample was still the scheduler's, rooted at mcall (as Go's own
	 * profiles are), not continued on that goroutine nor cut
	 */
	g0_world(&fm, st, 0x6100, 0x9100);
	put(st, SP + 0x20, 0x6405);
	CHECK_INT(walk_rt(st, sizeof(st), &fm, &abi119, 0x1050, pcs, &status), 2);
	CHECK(status & PM_UNW_COMPLETE);
	CHECK(!(status & PM_UNW_CUT));
	CHECK_INT(pcs[1], 0x6405);
	/* and without the runtime's offsets (mcall needs none) */
	CHECK_INT(walk_rt(st, sizeof(st), &fm, NULL, 0x1050, pcs, &status), 2);
	CHECK(status & PM_UNW_COMPLETE);
	CHECK(!(status & PM_UNW_NEED_GO));
	return PM_PASS;
}

/*
 * Go's sigtramp returns into the restorer; the rt_sigframe's ucontext is
 * just above: the interrupted A (exact pc) goes on to B and goexit.
 */
static int test_signal_frame(void)
{
	uint8_t st[0x600] = { 0 };
	uint64_t pcs[16], uc = SP + 0x18, mc = uc + 40;
	unsigned status;
	size_t n;

	put(st, SP + 0x10, 0x6300);       /* sigtramp returns into sigreturn */
	put(st, mc + 16 * 8, 0x1050);     /* sigcontext.rip */
	put(st, mc + 15 * 8, SP + 0x400); /* sigcontext.rsp */
	put(st, SP + 0x400 + 0x20, 0x2030);
	put(st, SP + 0x428 + 0x10, 0x3001);
	n = walk_rt(st, sizeof(st), NULL, NULL, 0x6210, pcs, &status);
	CHECK_INT(n, 4);
	CHECK_INT(pcs[1], 0x1051); /* exact pc, written as a return address */
	CHECK_INT(pcs[2], 0x2030);
	CHECK_INT(pcs[3], 0x3001);
	CHECK(status & PM_UNW_SIGFRAME);
	CHECK(status & PM_UNW_COMPLETE);
	/* a zero rip or a wild rsp in the frame ends the walk */
	put(st, mc + 16 * 8, 0);
	CHECK_INT(walk_rt(st, sizeof(st), NULL, NULL, 0x6210, pcs, &status), 1);
	CHECK(status & PM_UNW_CUT);
	put(st, mc + 16 * 8, 0x1050);
	put(st, mc + 15 * 8, 0x8000000000000000ULL);
	CHECK_INT(walk_rt(st, sizeof(st), NULL, NULL, 0x6210, pcs, &status), 1);
	CHECK(status & PM_UNW_CUT);
	return PM_PASS;
}

/* Code at 0x202b: a call (E8 rel32) of @callee_at, returning to 0x2030. */
static uint64_t callee_at;

static int read_code(void *arg, uint64_t addr, void *buf, size_t len)
{
	int32_t rel = (int32_t)(callee_at - 0x2030);
	uint8_t b[5] = { 0xe8 };

	(void)arg;
	if (addr != 0x202b || len != sizeof(b))
		return -EFAULT;
	memcpy(b + 1, &rel, 4);
	memcpy(buf, b, len);
	return 0;
}

/*
 * A signal interrupted A at its entry, frameless: its return address into
 * B is read from [SP], after the sample, and the kernel's callchain (frame
 * pointers) skips it.  It stays only where the call before it calls A;
 * else (a slot reused since, an indirect call, no code to read) the walk
 * is cut after the interrupted pc.  Where A had its frame, the callchain
 * holds it.
 */
static int test_signal_frameless_caller(void)
{
	uint8_t st[0x600] = { 0 };
	uint64_t pcs[16], mc = SP + 0x18 + 40, chain[2] = { 0x6210, 0x3001 };
	uint64_t chain_fp[3] = { 0x6210, 0x2030, 0x3001 };
	struct pm_unw_input in = { .ip = 0x6210, .sp = SP, .stack = st, .stack_len = sizeof(st),
				   .chain = chain, .chain_len = 2, .read_mem = read_code };
	int calls = 0;
	struct pm_unw *u = pm_unw_new(lookup_rt, &calls);
	unsigned status;

	put(st, SP + 0x10, 0x6300);       /* sigtramp returns into sigreturn */
	put(st, mc + 16 * 8, 0x1000);     /* sigcontext.rip: A's entry */
	put(st, mc + 15 * 8, SP + 0x400); /* sigcontext.rsp */
	put(st, SP + 0x400, 0x2030);      /* [SP]: the return into B */
	put(st, SP + 0x408 + 0x10, 0x3001);
	callee_at = 0x1000;
	CHECK_INT(pm_unw_walk(u, &in, pcs, 16, &status), 4);
	CHECK_INT(pcs[2], 0x2030);
	CHECK(status & PM_UNW_COMPLETE);
	/* the call before 0x2030 calls another function: a slot reused since */
	callee_at = 0x5000;
	CHECK_INT(pm_unw_walk(u, &in, pcs, 16, &status), 2);
	CHECK_INT(pcs[1], 0x1001);
	CHECK(status & PM_UNW_CUT);
	/* no code to read: not attested */
	in.read_mem = NULL;
	CHECK_INT(pm_unw_walk(u, &in, pcs, 16, &status), 2);
	CHECK(status & PM_UNW_CUT);
	/* the callchain holds the return into B (A had its frame): kept */
	in.chain = chain_fp;
	in.chain_len = 3;
	CHECK_INT(pm_unw_walk(u, &in, pcs, 16, &status), 4);
	CHECK(!(status & PM_UNW_CUT));
	pm_unw_free(u);
	return PM_PASS;
}

/* The target's memory behind the copy: one page at SP, as it is "now". */
static uint8_t live[4096];

static int read_live(void *arg, uint64_t addr, void *buf, size_t len)
{
	(void)arg;
	if (addr < SP || addr - SP > sizeof(live) || sizeof(live) - (addr - SP) < len)
		return -EFAULT;
	memcpy(buf, live + (addr - SP), len);
	return 0;
}

static int walk_live(uint64_t ip, uint8_t *stack, size_t len, const uint64_t *chain,
		     size_t nchain, uint64_t *pcs, size_t max, unsigned *status)
{
	return walk_mem(ip, stack, len, chain, nchain, read_live, pcs, max, status);
}

/*
 * The copy ends inside the stack: the rest is read from the target; where
 * the kernel's callchain covers the same frames and differs (the goroutine
 * moved on), the callchain's frames win; past its end, the read ones stay.
 */
static int test_copy_end_read_on(void)
{
	uint8_t st[0x28] = { 0 };
	uint64_t pcs[16];
	const uint64_t same[] = { 0x1050, 0x2030, 0x3001 };
	const uint64_t short_chain[] = { 0x1050, 0x2030, 0x2050 };
	const uint64_t other_chain[] = { 0x1050, 0x2030, 0x1077 };
	unsigned status;
	int n;

	put(st, SP + 0x20, 0x2030);     /* A's return address into B: in the copy */
	memset(live, 0, sizeof(live));
	memcpy(live, st, sizeof(st));
	memcpy(live + 0x38, &(uint64_t){ 0x3001 }, 8);
	n = walk_live(0x1050, st, sizeof(st), NULL, 0, pcs, 16, &status);
	CHECK_INT(n, 3);
	CHECK_INT(pcs[2], 0x3001);
	CHECK(status & PM_UNW_COMPLETE);
	CHECK(status & PM_UNW_EXTENDED);
	/* a callchain that finishes the stack is taken first: nothing read */
	n = walk_live(0x1050, st, sizeof(st), same, 3, pcs, 16, &status);
	CHECK_INT(n, 3);
	CHECK(status & PM_UNW_COMPLETE);
	CHECK(!(status & PM_UNW_EXTENDED));
	/* the goroutine moved on: B now called by B, then goexit */
	memcpy(live + 0x38, &(uint64_t){ 0x2050 }, 8);
	memcpy(live + 0x50, &(uint64_t){ 0x3001 }, 8);
	n = walk_live(0x1050, st, sizeof(st), NULL, 0, pcs, 16, &status);
	CHECK_INT(n, 4);
	CHECK(status & PM_UNW_COMPLETE);
	/* the callchain, taken at the sample, says B was called by goexit: it wins */
	n = walk_live(0x1050, st, sizeof(st), same, 3, pcs, 16, &status);
	CHECK_INT(n, 3);
	CHECK_INT(pcs[2], 0x3001);
	CHECK(status & PM_UNW_COMPLETE);
	CHECK(!(status & PM_UNW_EXTENDED));
	/* one that ends early (its limit) and differs from what was read: the callchain's */
	n = walk_live(0x1050, st, sizeof(st), other_chain, 3, pcs, 16, &status);
	CHECK_INT(n, 3);
	CHECK_INT(pcs[2], 0x1077);
	CHECK(status & PM_UNW_COPY_END);
	CHECK(!(status & PM_UNW_EXTENDED));
	/* one that agrees as far as it goes: the read frames stay */
	n = walk_live(0x1050, st, sizeof(st), short_chain, 3, pcs, 16, &status);
	CHECK_INT(n, 4);
	CHECK_INT(pcs[2], 0x2050);
	CHECK_INT(pcs[3], 0x3001);
	CHECK(status & PM_UNW_EXTENDED);
	/* nothing readable past the copy: as before, the copy's end */
	n = walk(0x1050, st, sizeof(st), NULL, 0, pcs, 16, &status);
	CHECK_INT(n, 2);
	CHECK(status & PM_UNW_COPY_END);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "go-frames", test_go_frames },
	{ "leaf-before-prologue", test_leaf_before_prologue },
	{ "bad-return-is-cut", test_bad_return_is_cut },
	{ "copy-end-and-chain", test_copy_end_and_chain },
	{ "copy-end-read-on", test_copy_end_read_on },
	{ "no-copy-chain-only", test_no_copy_chain_only },
	{ "spwrite-stops", test_spwrite_stops },
	{ "native-fp", test_native_fp },
	{ "max-frames", test_max_frames },
	{ "cache-hits", test_cache_hits },
	{ "stacks-aggregate", test_stacks_aggregate },
	{ "systemstack-to-curg", test_systemstack_to_curg },
	{ "systemstack-hostile", test_systemstack_hostile },
	{ "mcall-scheduler", test_mcall_scheduler },
	{ "vdso-leaf", test_vdso_leaf },
	{ "schedule-switch", test_schedule_switch },
	{ "signal-frame", test_signal_frame },
	{ "signal-frameless-caller", test_signal_frameless_caller },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "unwind", tests);
}
