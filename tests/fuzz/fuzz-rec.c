/*
 * libFuzzer target: arbitrary bytes become a fake perf mmap (control page +
 * data area) read through pm_ring_open_mem/pm_ring_next, and every record
 * is decoded with pm_rec_decode under one of a few sample layouts.  All
 * pointers a decoded record hands out are read back in full so that ASan
 * sees any that stray outside the record.
 *
 * Input: [0] layout selector, [1] data size (64 << n) and flags,
 * [2..9] data_tail, [10..17] data_head, [18..25] sample_type (layout 4),
 * [26..33] regs mask (layout 4), then the data area (repeated to fill).
 *
 *   clang -fsanitize=fuzzer,address -Ilib tests/fuzz/fuzz-rec.c build/san/libpmuprof.a
 */
#include "perf/rec.h"
#include "perf/ring.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len);

#define CTL_SIZE 4096
#define HDR 34

static volatile uint64_t sink;

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void touch(const void *p, size_t n)
{
	const volatile uint8_t *b = p;
	uint64_t s = 0;

	for (size_t i = 0; i < n; i++)
		s += b[i];
	sink += s;
}

static void use(const struct perf_event_header *h, const struct pm_rec_layout *l)
{
	static struct pm_rec r;
	const uint8_t *end = (const uint8_t *)h + h->size;
	int rc = pm_rec_decode(h, l, &r);

	if (rc)
		return;
	switch (r.type) {
	case PERF_RECORD_SAMPLE:
		if (r.sample.nr)
			touch(r.sample.ips, (size_t)r.sample.nr * 8);
		if (r.sample.raw_size)
			touch(r.sample.raw, r.sample.raw_size);
		if (r.sample.stack_size) {
			touch(r.sample.stack, (size_t)r.sample.stack_size);
			if (r.sample.dyn_size > r.sample.stack_size)
				abort();
		}
		if (r.sample.nregs > PM_REC_MAX_REGS)
			abort();
		touch(r.sample.regs, r.sample.nregs * 8u);
		if (r.sample.stack && r.sample.stack + r.sample.stack_size > end)
			abort();
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		if ((const uint8_t *)r.mmap.filename + strlen(r.mmap.filename) >= end)
			abort();
		if (r.mmap.build_id_size > 20)
			abort();
		break;
	case PERF_RECORD_COMM:
		if ((const uint8_t *)r.comm.comm + strlen(r.comm.comm) >= end)
			abort();
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	static const uint64_t base_st = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
					PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
					PERF_SAMPLE_PERIOD;
	struct pm_rec_layout l;
	struct pm_ring *r;
	uint64_t *mem;
	uint8_t *data;
	size_t data_size;
	const struct perf_event_header *h;

	if (len < HDR)
		return 0;
	memset(&l, 0, sizeof(l));
	l.sample_id_all = buf[0] & 0x80;
	switch (buf[0] & 7) {
	case 0: /* pmuprof's layout */
		l.sample_type = base_st | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		l.regs_mask = 0x1c0;
		break;
	case 1:
		l.sample_type = base_st | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
				PERF_SAMPLE_STACK_USER;
		l.regs_mask = 0x4001c0;
		break;
	case 2:
		l.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_RAW | PERF_SAMPLE_CALLCHAIN;
		break;
	case 3:
		l.sample_type = base_st | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
				PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER |
				PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT |
				PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION;
		l.regs_mask = 0xff0fff;
		break;
	default: /* anything, from the input */
		l.sample_type = rd64(buf + 18);
		l.regs_mask = rd64(buf + 26);
		break;
	}

	/* the input itself as one record */
	if (len - HDR >= sizeof(struct perf_event_header)) {
		size_t n = len - HDR > 65535 ? 65535 : len - HDR;
		uint64_t *rec = calloc(1, (n + 7) & ~(size_t)7);
		struct perf_event_header *rh = (struct perf_event_header *)rec;

		memcpy(rec, buf + HDR, n);
		if (rh->size <= n)
			use(rh, &l);
		free(rec);
	}

	data_size = (size_t)64 << (buf[1] & 7);
	mem = calloc(1, CTL_SIZE + data_size);
	data = (uint8_t *)mem + CTL_SIZE;
	if (len > HDR)
		for (size_t i = 0; i < data_size; i++)
			data[i] = buf[HDR + i % (len - HDR)];
	{
		struct perf_event_mmap_page *ctl = (struct perf_event_mmap_page *)mem;

		ctl->data_tail = rd64(buf + 2);
		ctl->data_head = rd64(buf + 10);
		if (buf[1] & 0x40) {
			/* let the fuzzer pick the layout fields too */
			ctl->data_offset = rd64(buf + 18) & 0x3fff;
			ctl->data_size = rd64(buf + 26) & 0x3fff;
		} else if (!(buf[1] & 0x80)) {
			ctl->data_offset = CTL_SIZE;
			ctl->data_size = data_size;
		}
	}
	if (pm_ring_open_mem(&r, mem, CTL_SIZE, data_size) == 0) {
		for (int i = 0; i < 100000 && (h = pm_ring_next(r)); i++) {
			if (((uintptr_t)h & 7) || h->size < 8)
				abort();
			use(h, &l);
			if (i % 3 == 0)
				pm_ring_consume(r);
		}
		pm_ring_consume(r);
		sink += pm_ring_pending(r) + pm_ring_bad(r);
		pm_ring_free(r);
	}
	free(mem);
	return 0;
}
