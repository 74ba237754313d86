/* Unit tests for lib/unwind: synthetic stacks over a fake function table. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "test.h"
#include "unwind.h"
#include "stacks.h"

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

static int walk(uint64_t ip, uint8_t *stack, size_t len, const uint64_t *chain, size_t nchain,
		uint64_t *pcs, size_t max, unsigned *status)
{
	int calls = 0;
	struct pm_unw *u = pm_unw_new(lookup, &calls);
	struct pm_unw_input in = { .ip = ip, .sp = SP, .stack = stack, .stack_len = len,
				   .chain = chain, .chain_len = nchain };
	size_t n = pm_unw_walk(u, &in, pcs, max, status);

	pm_unw_free(u);
	return (int)n;
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

static const struct pm_test tests[] = {
	{ "go-frames", test_go_frames },
	{ "leaf-before-prologue", test_leaf_before_prologue },
	{ "bad-return-is-cut", test_bad_return_is_cut },
	{ "copy-end-and-chain", test_copy_end_and_chain },
	{ "no-copy-chain-only", test_no_copy_chain_only },
	{ "spwrite-stops", test_spwrite_stops },
	{ "native-fp", test_native_fp },
	{ "max-frames", test_max_frames },
	{ "cache-hits", test_cache_hits },
	{ "stacks-aggregate", test_stacks_aggregate },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "unwind", tests);
}
