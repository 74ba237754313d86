/*
 * libFuzzer target: the unwinder (pm_unw_walk) over hostile stacks.  A
 * sampled process controls every byte of its stack, its registers and the
 * g/m structures the walk reads to cross the runtime's stack switches; the
 * code it runs is known (gopclntab, CFI) but may be anything.  The input
 * gives all of it: a table of up to 8 functions (entry, size, sp delta,
 * flags, a CFI row), the registers, the kernel callchain, the runtime's
 * offsets, and the stack copy; reads past the copy (read_mem) are served
 * from the same bytes mirrored at a second address, so g.sched and
 * m.curg can point anywhere in them.  Checks: at least one pc, never more
 * than asked, pcs[0] the sampled ip, and a second walk (lookups cached)
 * gives the same pcs.
 */
#include "unwind/unwind.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len);

#define CODE 0x400000ULL  /* functions at CODE + k * 0x100 */
#define STACK 0x7f0000010000ULL
#define MIRROR 0x7f0000800000ULL /* the input again, for reads past the copy */
#define MAXF 8

struct in {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct in *in, unsigned bytes)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < bytes; i++) {
		if (in->n) {
			v |= (uint64_t)in->p[0] << (8 * i);
			in->p++;
			in->n--;
		}
	}
	return v;
}

struct world {
	struct pm_unw_func f[MAXF];
	uint64_t size[MAXF];
	size_t nf;
	const uint8_t *stack, *all;
	size_t stack_len, all_len;
	uint64_t sp;
	unsigned reads;
};

static int lookup(void *arg, uint64_t pc, struct pm_unw_func *out)
{
	const struct world *w = arg;
	size_t i;

	for (i = 0; i < w->nf; i++)
		if (pc >= w->f[i].entry && pc < w->f[i].entry + w->size[i]) {
			*out = w->f[i];
			return 0;
		}
	return -ENOENT;
}

static int read_mem(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct world *w = arg;

	if (++w->reads > 4096 || len > (1u << 20))
		return -EFAULT;
	if (addr >= w->sp && addr - w->sp <= w->stack_len && len <= w->stack_len - (addr - w->sp)) {
		memcpy(buf, w->stack + (addr - w->sp), len);
		return 0;
	}
	if (addr >= MIRROR && addr - MIRROR <= w->all_len && len <= w->all_len - (addr - MIRROR)) {
		memcpy(buf, w->all + (addr - MIRROR), len);
		return 0;
	}
	return -EFAULT;
}

/* An address the input names: a function (by index and offset), the mirror, or raw. */
static uint64_t addr_of(struct in *in)
{
	uint8_t kind = (uint8_t)take(in, 1);

	switch (kind & 3) {
	case 0:
		return CODE + (uint64_t)(kind >> 2 & 7) * 0x100 + take(in, 1);
	case 1:
		return MIRROR + take(in, 2);
	case 2:
		return STACK + take(in, 2);
	default:
		return take(in, 8);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	static uint64_t pcs[160], again[160];
	static struct world w;
	static struct pm_unw *u; /* one, flushed per input: a new one is ~0.5 MB to fault in */
	struct in in = { buf, len };
	struct pm_unw_input ui;
	struct pm_unw_goabi go;
	uint64_t chain[64];
	unsigned status = 0, status2 = 0, max;
	size_t i, n, n2, nchain;
	uint8_t regmask;

	memset(&w, 0, sizeof(w));
	memset(&ui, 0, sizeof(ui));
	w.all = buf;
	w.all_len = len;
	w.nf = take(&in, 1) % (MAXF + 1);
	for (i = 0; i < w.nf; i++) {
		struct pm_unw_func *f = &w.f[i];
		unsigned k, nrules;

		f->entry = CODE + (take(&in, 1) & 7) * 0x100;
		w.size[i] = 1 + take(&in, 1);
		f->spdelta = (int16_t)take(&in, 2);
		f->flags = (unsigned)take(&in, 2);
		if (take(&in, 1) & 1) {
			f->cfi.valid = 1;
			f->cfi.outermost = take(&in, 1) & 1;
			f->cfi.cfa_reg = (uint8_t)(take(&in, 1) % PM_UNW_NREGS);
			f->cfi.cfa_off = (int16_t)take(&in, 2);
			nrules = take(&in, 1) % 5;
			for (k = 0; k < nrules; k++) {
				unsigned r = (unsigned)(take(&in, 1) % PM_UNW_NREGS);

				f->cfi.rule[r] = (uint8_t)(take(&in, 1) % 5);
				f->cfi.off[r] = (int16_t)take(&in, 2);
			}
		}
	}
	ui.ip = addr_of(&in);
	w.sp = STACK + (take(&in, 1) & 0xf8);
	ui.sp = w.sp;
	ui.bp = addr_of(&in);
	regmask = (uint8_t)take(&in, 1);
	if (regmask & 1) {
		ui.regs_valid = (1u << PM_DW_RSP) | (1u << PM_DW_RBP) | (1u << PM_DW_RA);
		ui.regs[PM_DW_RSP] = ui.sp;
		ui.regs[PM_DW_RBP] = ui.bp;
		ui.regs[PM_DW_RA] = ui.ip;
		for (i = 0; i < 4; i++) {
			unsigned r = (unsigned)(take(&in, 1) % PM_UNW_NREGS);

			ui.regs[r] = addr_of(&in);
			ui.regs_valid |= 1u << r;
		}
	}
	if (regmask & 8) {
		/* the g register, into the mirror: g.stack, g.m, g.sched and the m behind it */
		ui.regs[PM_DW_R14] = MIRROR + (take(&in, 2) & ~7ULL);
		ui.regs_valid |= 1u << PM_DW_R14;
	}
	nchain = take(&in, 1) % 64;
	for (i = 0; i < nchain; i++)
		chain[i] = addr_of(&in);
	if (nchain) {
		ui.chain = chain;
		ui.chain_len = nchain;
	}
	if (regmask & 2) {
		ui.read_mem = read_mem;
		ui.read_arg = &w;
	}
	if (regmask & 4) {
		go.g_m = (uint32_t)(take(&in, 1) % 64 * 8); /* within a g or m read */
		go.g_sched_sp = (uint32_t)(take(&in, 1) % 64 * 8); /* within a g or m read */
		go.g_sched_pc = (uint32_t)(take(&in, 1) % 64 * 8); /* within a g or m read */
		go.g_sched_bp = (uint32_t)(take(&in, 1) % 64 * 8); /* within a g or m read */
		go.m_curg = (uint32_t)(take(&in, 1) % 64 * 8); /* within a g or m read */
		go.m_gsignal = (uint32_t)(take(&in, 1) % 64 * 8); /* within a g or m read */
		ui.go = &go;
	}
	max = 1 + (unsigned)(take(&in, 1) % 150);
	/* the rest is the stack copy (NULL when empty, as a sample without one) */
	w.stack = in.n ? in.p : NULL;
	w.stack_len = in.n;
	ui.stack = w.stack;
	ui.stack_len = w.stack_len;

	if (!u)
		u = pm_unw_new(lookup, &w);
	pm_unw_flush(u);
	n = pm_unw_walk(u, &ui, pcs, max, &status);
	if (n < 1 || n > max || pcs[0] != ui.ip)
		abort();
	w.reads = 0;
	n2 = pm_unw_walk(u, &ui, again, max, &status2);
	if (n2 != n || status2 != status || memcmp(pcs, again, n * sizeof(pcs[0])) != 0)
		abort();
	return 0;
}
