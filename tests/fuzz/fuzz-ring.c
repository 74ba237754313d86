/*
 * libFuzzer target: the ring reader against a model of the kernel writer,
 * with wrap-around.  The input is a script: a start position for the head
 * counter (near 0, near a data-size boundary, or near 2^64 so the counter
 * itself wraps), a data size, then operations: write a record of a chosen
 * size (only when it fits between the published tail and the head, as the
 * kernel does; otherwise it is "lost"), read one record, read-and-consume.
 * Every record read must be the next one written, byte for byte, 8-byte
 * aligned; nothing may be read that was not written, and nothing written
 * may be skipped (no record here is malformed, so pm_ring_bad() stays 0).
 */
#include "perf/ring.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len);

#define CTL_SIZE 4096
#define MAXQ 4096

struct qrec {
	uint16_t size;
	uint32_t type;
	uint8_t seed;
};

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	static struct qrec q[MAXQ];
	size_t qhead = 0, qread = 0, qn = 0; /* [qhead, qread) read, not consumed; [qread, qn) unread */
	size_t data_size;
	uint64_t *mem, head, tail_seen;
	uint8_t *data;
	struct perf_event_mmap_page *ctl;
	struct pm_ring *r;

	if (len < 3)
		return 0;
	data_size = (size_t)64 << (buf[0] & 7); /* 64 .. 8192 */
	switch ((buf[0] >> 3) & 3) {
	case 0:
		head = buf[1];
		break;
	case 1:
		head = (uint64_t)data_size * (1 + buf[1]) - 8 * (buf[2] & 7);
		break;
	default:
		head = UINT64_MAX - (uint64_t)data_size * (buf[1] & 3) - 8 * buf[2] + 1;
		break;
	}
	head &= ~(uint64_t)7; /* the kernel keeps records 8-aligned */
	mem = calloc(1, CTL_SIZE + data_size);
	ctl = (struct perf_event_mmap_page *)mem;
	data = (uint8_t *)mem + CTL_SIZE;
	ctl->data_offset = CTL_SIZE;
	ctl->data_size = data_size;
	ctl->data_head = ctl->data_tail = head;
	tail_seen = head;
	if (pm_ring_open_mem(&r, mem, CTL_SIZE, data_size) != 0)
		abort();

	for (size_t i = 3; i < len; i++) {
		uint8_t op = buf[i];

		if (op < 0xa0) {
			/* write: size 8 .. data_size, multiple of 8 */
			size_t units = data_size / 8;
			size_t size = 8 * (1 + (op * 7u + i) % units);
			uint64_t tail = __atomic_load_n(&ctl->data_tail, __ATOMIC_ACQUIRE);
			struct perf_event_header h;

			if (tail != tail_seen && tail - tail_seen > head - tail_seen)
				abort(); /* the reader published a tail beyond the head */
			tail_seen = tail;
			if (head - tail + size > data_size || qn == MAXQ)
				continue; /* no room: the kernel would drop it */
			h.type = 1 + op % 20;
			h.misc = 0;
			h.size = (uint16_t)size;
			for (size_t k = 0; k < size; k++) {
				uint8_t b = k < sizeof(h) ? ((const uint8_t *)&h)[k]
							  : (uint8_t)(op + k * 31);

				data[(head + k) % data_size] = b;
			}
			q[qn].size = (uint16_t)size;
			q[qn].type = h.type;
			q[qn].seed = op;
			qn++;
			head += size;
			__atomic_store_n(&ctl->data_head, head, __ATOMIC_RELEASE);
		} else {
			const struct perf_event_header *h = pm_ring_next(r);

			if (qread == qn) {
				if (h)
					abort(); /* read something never written */
			} else {
				const uint8_t *b = (const uint8_t *)h;

				if (!h || ((uintptr_t)h & 7) || h->size != q[qread].size ||
				    h->type != q[qread].type)
					abort();
				for (size_t k = sizeof(*h); k < h->size; k++)
					if (b[k] != (uint8_t)(q[qread].seed + k * 31))
						abort();
				qread++;
			}
			if (pm_ring_pending(r) > data_size)
				abort();
			if (op >= 0xd0) {
				pm_ring_consume(r);
				qhead = qread;
			}
		}
	}
	/* drain: everything still unread comes out in order */
	while (qread < qn) {
		const struct perf_event_header *h = pm_ring_next(r);

		if (!h || h->size != q[qread].size || h->type != q[qread].type)
			abort();
		qread++;
	}
	if (pm_ring_next(r) != NULL || pm_ring_bad(r) != 0)
		abort();
	pm_ring_consume(r);
	if (ctl->data_tail != head || pm_ring_pending(r) != 0)
		abort();
	(void)qhead;
	pm_ring_free(r);
	free(mem);
	return 0;
}
