/* Unit tests for lib/rec: hand-built records of every type and sample layout. */
#include "perf/rec.h"

#include "test.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <stdint.h>

/* A record under construction: 8-byte aligned, header first. */
struct bld {
	union {
		uint64_t w[2048];
		struct perf_event_header h;
	};
	size_t n; /* bytes */
};

static void b_init(struct bld *b)
{
	memset(b, 0, sizeof(*b));
	b->n = sizeof(struct perf_event_header);
}

static void put_bytes(struct bld *b, const void *p, size_t len)
{
	memcpy((uint8_t *)b->w + b->n, p, len);
	b->n += len;
}

static void put64(struct bld *b, uint64_t v)
{
	put_bytes(b, &v, 8);
}

static void put32x2(struct bld *b, uint32_t x, uint32_t y)
{
	put_bytes(b, &x, 4);
	put_bytes(b, &y, 4);
}

/* NUL-terminated, zero-padded to a multiple of 8, as the kernel writes names. */
static void put_str(struct bld *b, const char *s)
{
	size_t len = strlen(s) + 1, pad = (len + 7) & ~(size_t)7;

	memset((uint8_t *)b->w + b->n, 0, pad);
	memcpy((uint8_t *)b->w + b->n, s, len);
	b->n += pad;
}

static const struct perf_event_header *b_done(struct bld *b, uint32_t type, uint16_t misc)
{
	struct perf_event_header *h = &b->h;

	h->type = type;
	h->misc = misc;
	h->size = (uint16_t)b->n;
	return h;
}

static struct bld B; /* big; keep it off the stack */

#define ALL_ID_BITS                                                                        \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |    \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

/* The sample_id trailer for ALL_ID_BITS. */
static void put_trailer(struct bld *b)
{
	put32x2(b, 100, 101);    /* pid, tid */
	put64(b, 123456789);     /* time */
	put64(b, 77);            /* id */
	put64(b, 78);            /* stream_id */
	put32x2(b, 3, 0);        /* cpu, res */
	put64(b, 77);            /* identifier */
}

static int check_trailer(const struct pm_rec *r)
{
	CHECK_INT(r->sid.pid, 100);
	CHECK_INT(r->sid.tid, 101);
	CHECK_INT(r->sid.time, 123456789);
	CHECK_INT(r->sid.id, 77);
	CHECK_INT(r->sid.cpu, 3);
	return PM_PASS;
}

static int t_layout(void)
{
	struct perf_event_attr a;
	struct pm_rec_layout l;

	memset(&a, 0, sizeof(a));
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER;
	a.sample_regs_user = 0x1c0;
	a.sample_id_all = 1;
	pm_rec_layout_from_attr(&l, &a);
	CHECK_INT(l.sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER);
	CHECK_INT(l.regs_mask, 0x1c0);
	CHECK(l.sample_id_all);
	return PM_PASS;
}

static int t_reg_index(void)
{
	uint64_t m = (1ULL << PERF_REG_X86_BP) | (1ULL << PERF_REG_X86_SP) |
		     (1ULL << PERF_REG_X86_IP) | (1ULL << PERF_REG_X86_R14);

	CHECK_INT(pm_rec_reg_index(m, PERF_REG_X86_BP), 0);
	CHECK_INT(pm_rec_reg_index(m, PERF_REG_X86_SP), 1);
	CHECK_INT(pm_rec_reg_index(m, PERF_REG_X86_IP), 2);
	CHECK_INT(pm_rec_reg_index(m, PERF_REG_X86_R14), 3);
	CHECK_INT(pm_rec_reg_index(m, PERF_REG_X86_AX), -1);
	CHECK_INT(pm_rec_reg_index(m, 64), -1);
	CHECK_INT(pm_rec_reg_index(m, 1000), -1);
	CHECK_INT(pm_rec_reg_index(~0ULL, 63), 63);
	CHECK_INT(pm_rec_reg_index(0, 0), -1);
	return PM_PASS;
}

#define FULL_SAMPLE                                                                         \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |      \
	 PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |       \
	 PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW |                      \
	 PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT |               \
	 PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION)

static const uint64_t REGS_MASK = 0x1c0; /* BP, SP, IP */

/* Every field pmuprof may see, in ABI order; stack of 32 bytes, 24 valid. */
static const struct perf_event_header *build_full(struct bld *b)
{
	uint8_t raw[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	uint32_t rawsz = sizeof(raw);
	uint8_t stack[32];

	b_init(b);
	put64(b, 55);                   /* identifier */
	put64(b, 0x401000);             /* ip */
	put32x2(b, 1234, 1235);         /* pid, tid */
	put64(b, 999);                  /* time */
	put64(b, 0xdead);               /* addr */
	put64(b, 55);                   /* id */
	put64(b, 56);                   /* stream_id */
	put32x2(b, 1, 0);               /* cpu */
	put64(b, 1000000);              /* period */
	put64(b, 4);                    /* callchain nr */
	put64(b, PERF_CONTEXT_USER);
	put64(b, 0x401000);
	put64(b, 0x402000);
	put64(b, 0x403000);
	put_bytes(b, &rawsz, 4);        /* raw: 4 + 12 = 16 bytes */
	put_bytes(b, raw, sizeof(raw));
	put64(b, PERF_SAMPLE_REGS_ABI_64);
	put64(b, 0x7ffc0010);           /* BP */
	put64(b, 0x7ffc0000);           /* SP */
	put64(b, 0x401000);             /* IP */
	put64(b, sizeof(stack));
	for (size_t i = 0; i < sizeof(stack); i++)
		stack[i] = (uint8_t)i;
	put_bytes(b, stack, sizeof(stack));
	put64(b, 24);                   /* dyn_size */
	put64(b, 7);                    /* weight */
	put64(b, 8);                    /* data_src */
	put64(b, 9);                    /* transaction */
	return b_done(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
}

static int t_sample_full(void)
{
	struct pm_rec_layout l = { FULL_SAMPLE, REGS_MASK, true };
	static struct pm_rec r;
	const struct perf_event_header *h = build_full(&B);

	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.type, PERF_RECORD_SAMPLE);
	CHECK_INT(r.sample.misc, PERF_RECORD_MISC_USER);
	CHECK_INT(r.sample.id, 55);
	CHECK_INT(r.sample.ip, 0x401000);
	CHECK_INT(r.sample.pid, 1234);
	CHECK_INT(r.sample.tid, 1235);
	CHECK_INT(r.sample.time, 999);
	CHECK_INT(r.sample.cpu, 1);
	CHECK_INT(r.sample.period, 1000000);
	CHECK_INT(r.sample.nr, 4);
	CHECK((uint64_t)r.sample.ips[0] == (uint64_t)PERF_CONTEXT_USER);
	CHECK_INT(r.sample.ips[3], 0x403000);
	CHECK((const uint8_t *)r.sample.ips > (const uint8_t *)h);
	CHECK_INT(r.sample.raw_size, 12);
	CHECK_INT(r.sample.raw[11], 12);
	CHECK_INT(r.sample.abi, PERF_SAMPLE_REGS_ABI_64);
	CHECK_INT(r.sample.nregs, 3);
	CHECK_INT(r.sample.regs[pm_rec_reg_index(REGS_MASK, PERF_REG_X86_SP)], 0x7ffc0000);
	CHECK_INT(r.sample.regs[pm_rec_reg_index(REGS_MASK, PERF_REG_X86_IP)], 0x401000);
	CHECK_INT(r.sample.stack_size, 32);
	CHECK_INT(r.sample.dyn_size, 24);
	CHECK_INT(r.sample.stack[5], 5);
	CHECK(r.sample.stack + 32 <= (const uint8_t *)h + h->size);
	/* convenience copy of the ids */
	CHECK_INT(r.sid.tid, 1235);
	CHECK_INT(r.sid.time, 999);
	return PM_PASS;
}

/* Every truncation of a valid sample must be rejected, never over-read. */
static int t_sample_truncated(void)
{
	struct pm_rec_layout l = { FULL_SAMPLE, REGS_MASK, true };
	static struct pm_rec r;
	struct perf_event_header *h = (struct perf_event_header *)build_full(&B);
	uint16_t full = h->size;

	for (uint16_t sz = 0; sz < full; sz++) {
		h->size = sz;
		if (pm_rec_decode(h, &l, &r) != -EINVAL) {
			fprintf(stderr, "  size %u of %u accepted\n", sz, full);
			return PM_FAIL;
		}
	}
	h->size = full;
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	return PM_PASS;
}

static int t_sample_overlong(void)
{
	struct pm_rec_layout l = { FULL_SAMPLE, REGS_MASK, true };
	static struct pm_rec r;
	const struct perf_event_header *h;

	build_full(&B);
	put64(&B, 0);
	h = b_done(&B, PERF_RECORD_SAMPLE, 0);
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	/* but with a field after STACK_USER that we do not walk, extra bytes are that field */
	l.sample_type |= PERF_SAMPLE_PHYS_ADDR;
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	return PM_PASS;
}

/* pmuprof's own layout; abi 0 means no register words, stack size 0 means no dyn_size. */
#define PM_LAYOUT                                                                           \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |      \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)

static void put_head(struct bld *b)
{
	b_init(b);
	put64(b, 9);
	put64(b, 0xffffffff81000000ULL);
	put32x2(b, 10, 11);
	put64(b, 5);
	put32x2(b, 0, 0);
	put64(b, 250000);
}

static int t_sample_regs_abi0(void)
{
	struct pm_rec_layout l = { PM_LAYOUT, REGS_MASK, true };
	static struct pm_rec r;
	const struct perf_event_header *h;

	put_head(&B);
	put64(&B, PERF_SAMPLE_REGS_ABI_NONE);
	put64(&B, 0); /* stack size 0: no data, no dyn_size */
	h = b_done(&B, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.sample.abi, 0);
	CHECK_INT(r.sample.nregs, 0);
	CHECK_INT(r.sample.stack_size, 0);
	CHECK_INT(r.sample.dyn_size, 0);
	CHECK(r.sample.stack == NULL);
	CHECK_INT(r.sample.period, 250000);

	/* the same bytes read as if abi 0 still carried registers would not fit */
	put_head(&B);
	put64(&B, PERF_SAMPLE_REGS_ABI_64);
	put64(&B, 0);
	h = b_done(&B, PERF_RECORD_SAMPLE, 0);
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	return PM_PASS;
}

static int t_sample_stack_dyn(void)
{
	struct pm_rec_layout l = { PM_LAYOUT, REGS_MASK, true };
	static struct pm_rec r;
	const struct perf_event_header *h;
	uint8_t st[64] = { 0xaa };

	put_head(&B);
	put64(&B, PERF_SAMPLE_REGS_ABI_64);
	put64(&B, 1);
	put64(&B, 2);
	put64(&B, 3);
	put64(&B, sizeof(st));
	put_bytes(&B, st, sizeof(st));
	put64(&B, 16);
	h = b_done(&B, PERF_RECORD_SAMPLE, 0);
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.sample.nregs, 3);
	CHECK_INT(r.sample.regs[2], 3);
	CHECK_INT(r.sample.stack_size, 64);
	CHECK_INT(r.sample.dyn_size, 16);
	CHECK_INT(r.sample.stack[0], 0xaa);

	/* dyn_size larger than size is clamped */
	B.w[B.n / 8 - 1] = 1000;
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.sample.dyn_size, 64);

	/* a stack size beyond the record */
	B.w[B.n / 8 - 10] = 65536;
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	B.w[B.n / 8 - 10] = ~0ULL;
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	return PM_PASS;
}

static int t_sample_callchain(void)
{
	struct pm_rec_layout l = { PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN, 0, false };
	static struct pm_rec r;
	const struct perf_event_header *h;

	b_init(&B);
	put64(&B, 0x1000);
	put64(&B, 0);
	h = b_done(&B, PERF_RECORD_SAMPLE, 0);
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.sample.nr, 0);

	b_init(&B);
	put64(&B, 0x1000);
	put64(&B, 3);
	put64(&B, 1);
	put64(&B, 2);
	h = b_done(&B, PERF_RECORD_SAMPLE, 0);
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL); /* nr says 3, room for 2 */

	B.w[2] = 1ULL << 61; /* nr * 8 overflows */
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	B.w[2] = ~0ULL;
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	return PM_PASS;
}

static int t_sample_raw(void)
{
	struct pm_rec_layout l = { PERF_SAMPLE_RAW | PERF_SAMPLE_PERIOD, 0, false };
	static struct pm_rec r;
	const struct perf_event_header *h;
	uint32_t sz = 4;

	b_init(&B);
	put64(&B, 10);
	put_bytes(&B, &sz, 4);
	put_bytes(&B, "abcd", 4);
	h = b_done(&B, PERF_RECORD_SAMPLE, 0);
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.sample.raw_size, 4);
	CHECK(!memcmp(r.sample.raw, "abcd", 4));

	sz = 5; /* claims a byte past the end */
	memcpy((uint8_t *)B.w + 16, &sz, 4);
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	sz = 0xffffffffu;
	memcpy((uint8_t *)B.w + 16, &sz, 4);
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);

	/* size 1: the u32+data pair is padded to 8 before the next field */
	l.sample_type = PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER;
	l.regs_mask = 1;
	b_init(&B);
	sz = 1;
	put_bytes(&B, &sz, 4);
	put_bytes(&B, "z\0\0\0", 4);
	put64(&B, PERF_SAMPLE_REGS_ABI_64);
	put64(&B, 0x1234);
	h = b_done(&B, PERF_RECORD_SAMPLE, 0);
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.sample.raw_size, 1);
	CHECK_INT(r.sample.raw[0], 'z');
	CHECK_INT(r.sample.abi, PERF_SAMPLE_REGS_ABI_64);
	CHECK_INT(r.sample.regs[0], 0x1234);
	return PM_PASS;
}

static int t_sample_rejected_layouts(void)
{
	static struct pm_rec r;
	struct pm_rec_layout l = { PERF_SAMPLE_IP | PERF_SAMPLE_READ, 0, false };
	const struct perf_event_header *h;

	b_init(&B);
	put64(&B, 1);
	put64(&B, 2);
	h = b_done(&B, PERF_RECORD_SAMPLE, 0);
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	l.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_BRANCH_STACK;
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	/* a header alone, and less than a header */
	b_init(&B);
	h = b_done(&B, PERF_RECORD_SAMPLE, 0);
	l.sample_type = 0;
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	l.sample_type = PERF_SAMPLE_IP;
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	B.w[0] = 0;
	B.h.size = 7;
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	/* NULL layout: no fields */
	b_init(&B);
	h = b_done(&B, PERF_RECORD_SAMPLE, 0);
	CHECK_INT(pm_rec_decode(h, NULL, &r), 0);
	return PM_PASS;
}

static int t_mmap(void)
{
	struct pm_rec_layout l = { ALL_ID_BITS, 0, true };
	static struct pm_rec r;
	const struct perf_event_header *h;

	b_init(&B);
	put32x2(&B, 100, 101);
	put64(&B, 0x400000);
	put64(&B, 0x1000);
	put64(&B, 0);
	put_str(&B, "/usr/bin/app");
	put_trailer(&B);
	h = b_done(&B, PERF_RECORD_MMAP, PERF_RECORD_MISC_USER);
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.mmap.pid, 100);
	CHECK_INT(r.mmap.addr, 0x400000);
	CHECK_INT(r.mmap.len, 0x1000);
	CHECK_INT(r.mmap.prot, 0);
	CHECK_STR(r.mmap.filename, "/usr/bin/app");
	if (check_trailer(&r))
		return PM_FAIL;

	/* without sample_id_all the trailer is read as part of the name: still has a NUL */
	l.sample_id_all = false;
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_STR(r.mmap.filename, "/usr/bin/app");
	return PM_PASS;
}

static void build_mmap2(struct bld *b, bool buildid, const char *name)
{
	b_init(b);
	put32x2(b, 100, 101);
	put64(b, 0x7f0000000000ULL);
	put64(b, 0x2000);
	put64(b, 0x1000);
	if (buildid) {
		uint8_t u[24] = { 20, 0, 0, 0 };

		for (int i = 0; i < 20; i++)
			u[4 + i] = (uint8_t)(0xb0 + i);
		put_bytes(b, u, sizeof(u));
	} else {
		put32x2(b, 8, 1);
		put64(b, 424242);
		put64(b, 7);
	}
	put32x2(b, 5, 2); /* PROT_READ|PROT_EXEC, MAP_PRIVATE */
	put_str(b, name);
	put_trailer(b);
}

static int t_mmap2(void)
{
	struct pm_rec_layout l = { ALL_ID_BITS, 0, true };
	static struct pm_rec r;
	const struct perf_event_header *h;

	build_mmap2(&B, false, "/lib/x86_64-linux-gnu/libc.so.6");
	h = b_done(&B, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.type, PERF_RECORD_MMAP2);
	CHECK_INT(r.mmap.addr, 0x7f0000000000ULL);
	CHECK_INT(r.mmap.pgoff, 0x1000);
	CHECK_INT(r.mmap.maj, 8);
	CHECK_INT(r.mmap.min, 1);
	CHECK_INT(r.mmap.ino, 424242);
	CHECK_INT(r.mmap.ino_generation, 7);
	CHECK_INT(r.mmap.build_id_size, 0);
	CHECK_INT(r.mmap.prot, 5);
	CHECK_INT(r.mmap.flags, 2);
	CHECK_STR(r.mmap.filename, "/lib/x86_64-linux-gnu/libc.so.6");
	if (check_trailer(&r))
		return PM_FAIL;

	build_mmap2(&B, true, "//anon");
	h = b_done(&B, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID);
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.mmap.build_id_size, 20);
	CHECK_INT(r.mmap.build_id[0], 0xb0);
	CHECK_INT(r.mmap.build_id[19], 0xb0 + 19);
	CHECK_INT(r.mmap.ino, 0);
	CHECK_INT(r.mmap.prot, 5);
	CHECK_STR(r.mmap.filename, "//anon");

	/* build_id_size over 20 */
	((uint8_t *)B.w)[40] = 21;
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	return PM_PASS;
}

static int t_mmap_bad(void)
{
	struct pm_rec_layout l = { ALL_ID_BITS, 0, true };
	static struct pm_rec r;
	struct perf_event_header *h;

	/* name without NUL: 8 non-NUL bytes, then the trailer */
	b_init(&B);
	put32x2(&B, 1, 1);
	put64(&B, 0);
	put64(&B, 0);
	put64(&B, 0);
	put_bytes(&B, "abcdefgh", 8);
	put_trailer(&B);
	h = (struct perf_event_header *)b_done(&B, PERF_RECORD_MMAP, 0);
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);

	/* no name at all */
	b_init(&B);
	put32x2(&B, 1, 1);
	put64(&B, 0);
	put64(&B, 0);
	put64(&B, 0);
	put_trailer(&B);
	h = (struct perf_event_header *)b_done(&B, PERF_RECORD_MMAP, 0);
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);

	/* every truncation of a good MMAP2 is rejected */
	build_mmap2(&B, false, "/x");
	h = (struct perf_event_header *)b_done(&B, PERF_RECORD_MMAP2, 0);
	for (uint16_t sz = 0, full = h->size; sz < full; sz += 8) {
		h->size = sz;
		if (pm_rec_decode(h, &l, &r) != -EINVAL) {
			fprintf(stderr, "  mmap2 size %u accepted\n", sz);
			return PM_FAIL;
		}
	}
	return PM_PASS;
}

static int t_comm(void)
{
	struct pm_rec_layout l = { ALL_ID_BITS, 0, true };
	static struct pm_rec r;
	const struct perf_event_header *h;

	b_init(&B);
	put32x2(&B, 100, 101);
	put_str(&B, "worker");
	put_trailer(&B);
	h = b_done(&B, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.comm.pid, 100);
	CHECK_INT(r.comm.tid, 101);
	CHECK_STR(r.comm.comm, "worker");
	CHECK(r.comm.exec);
	if (check_trailer(&r))
		return PM_FAIL;
	B.h.misc = 0;
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK(!r.comm.exec);

	b_init(&B);
	put32x2(&B, 100, 101);
	put_bytes(&B, "12345678", 8);
	put_trailer(&B);
	h = b_done(&B, PERF_RECORD_COMM, 0);
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	return PM_PASS;
}

static int t_task(void)
{
	struct pm_rec_layout l = { ALL_ID_BITS, 0, true };
	static struct pm_rec r;
	const struct perf_event_header *h;
	const uint32_t types[] = { PERF_RECORD_FORK, PERF_RECORD_EXIT };

	for (size_t i = 0; i < 2; i++) {
		b_init(&B);
		put32x2(&B, 100, 1);
		put32x2(&B, 102, 101);
		put64(&B, 4242);
		put_trailer(&B);
		h = b_done(&B, types[i], 0);
		CHECK_INT(pm_rec_decode(h, &l, &r), 0);
		CHECK_INT(r.type, types[i]);
		CHECK_INT(r.task.pid, 100);
		CHECK_INT(r.task.ppid, 1);
		CHECK_INT(r.task.tid, 102);
		CHECK_INT(r.task.ptid, 101);
		CHECK_INT(r.task.time, 4242);
		if (check_trailer(&r))
			return PM_FAIL;
		/* overlong: one extra word between the body and the trailer */
		put64(&B, 0);
		h = b_done(&B, types[i], 0);
		CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
		/* truncated: the extra word and one word of the body gone */
		B.n -= 16;
		h = b_done(&B, types[i], 0);
		CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	}
	return PM_PASS;
}

static int t_lost_throttle(void)
{
	struct pm_rec_layout l = { PERF_SAMPLE_TID | PERF_SAMPLE_TIME, 0, true };
	static struct pm_rec r;
	const struct perf_event_header *h;

	b_init(&B);
	put64(&B, 5);
	put64(&B, 17);
	put32x2(&B, 7, 8);
	put64(&B, 1000);
	h = b_done(&B, PERF_RECORD_LOST, 0);
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.lost.id, 5);
	CHECK_INT(r.lost.lost, 17);
	CHECK_INT(r.sid.pid, 7);
	CHECK_INT(r.sid.tid, 8);
	CHECK_INT(r.sid.time, 1000);

	b_init(&B);
	put64(&B, 33);
	put32x2(&B, 7, 8);
	put64(&B, 1000);
	h = b_done(&B, PERF_RECORD_LOST_SAMPLES, 0);
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.lost.lost, 33);

	for (uint32_t t = PERF_RECORD_THROTTLE; t <= PERF_RECORD_UNTHROTTLE; t++) {
		b_init(&B);
		put64(&B, 111);
		put64(&B, 222);
		put64(&B, 333);
		put32x2(&B, 7, 8);
		put64(&B, 1000);
		h = b_done(&B, t, 0);
		CHECK_INT(pm_rec_decode(h, &l, &r), 0);
		CHECK_INT(r.type, t);
		CHECK_INT(r.throttle.time, 111);
		CHECK_INT(r.throttle.id, 222);
		CHECK_INT(r.throttle.stream_id, 333);
		B.n -= 24;
		h = b_done(&B, t, 0);
		CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	}

	/* a thread's switch: no body, the thread and the time in the trailer */
	b_init(&B);
	put32x2(&B, 7, 9);
	put64(&B, 2000);
	h = b_done(&B, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.type, PERF_RECORD_SWITCH);
	CHECK_INT(r.misc, PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
	CHECK_INT(r.sid.tid, 9);
	CHECK_INT(r.sid.time, 2000);
	b_init(&B);
	put64(&B, 5);
	put32x2(&B, 7, 9);
	put64(&B, 2000);
	h = b_done(&B, PERF_RECORD_SWITCH, 0);
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);

	/* a trailer bigger than the record */
	b_init(&B);
	put64(&B, 1);
	h = b_done(&B, PERF_RECORD_LOST_SAMPLES, 0);
	CHECK_INT(pm_rec_decode(h, &l, &r), -EINVAL);
	l.sample_id_all = false;
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.lost.lost, 1);
	return PM_PASS;
}

static int t_unknown(void)
{
	static struct pm_rec r;
	const struct perf_event_header *h;

	b_init(&B);
	put64(&B, 0);
	h = b_done(&B, PERF_RECORD_SWITCH_CPU_WIDE, PERF_RECORD_MISC_SWITCH_OUT);
	CHECK_INT(pm_rec_decode(h, NULL, &r), 1);
	CHECK_INT(r.type, PERF_RECORD_SWITCH_CPU_WIDE);
	h = b_done(&B, 0x7777, 0);
	CHECK_INT(pm_rec_decode(h, NULL, &r), 1);
	CHECK_INT(r.type, 0x7777);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "layout", t_layout },
	{ "reg_index", t_reg_index },
	{ "sample_full", t_sample_full },
	{ "sample_truncated", t_sample_truncated },
	{ "sample_overlong", t_sample_overlong },
	{ "sample_regs_abi0", t_sample_regs_abi0 },
	{ "sample_stack_dyn", t_sample_stack_dyn },
	{ "sample_callchain", t_sample_callchain },
	{ "sample_raw", t_sample_raw },
	{ "sample_rejected_layouts", t_sample_rejected_layouts },
	{ "mmap", t_mmap },
	{ "mmap2", t_mmap2 },
	{ "mmap_bad", t_mmap_bad },
	{ "comm", t_comm },
	{ "task", t_task },
	{ "lost_throttle", t_lost_throttle },
	{ "unknown", t_unknown },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "rec", tests);
}
