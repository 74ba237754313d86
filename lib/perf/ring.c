/*
 * ring: reader side of the perf mmap ring buffer.
 *
 * The kernel publishes data_head after writing the records (smp_wmb), so we
 * load it with acquire semantics before reading any record byte; we hand
 * space back by storing data_tail with release semantics after we are done
 * reading it.  Our read position (r->tail) runs ahead of the stored tail
 * between pm_ring_next() and pm_ring_consume().
 */
#include "perf/ring.h"

#include "base/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BOUNCE_SIZE 65536 /* > the largest record (u16 size) */

struct pm_ring {
	struct perf_event_mmap_page *ctl;
	uint8_t *data;
	uint64_t data_size; /* power of two */
	uint64_t tail;      /* read position, ahead of ctl->data_tail until consume */
	uint64_t bad;
	uint64_t snap;      /* pm_ring_snapshot(): the head to read up to */
	bool snapped;
	void *map;          /* NULL for pm_ring_open_mem */
	size_t map_len;
	int fd;
	uint64_t bounce[BOUNCE_SIZE / 8];
};

static bool is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

/*
 * Settle data_offset/data_size: from the control page when the kernel fills
 * them (4.1+), else the classic "data starts after one page".  Everything
 * must lie within the @span bytes mapped at @base.
 */
static int ring_init(struct pm_ring *r, void *base, size_t page_size, size_t span)
{
	struct perf_event_mmap_page *ctl = base;
	uint64_t off = ctl->data_offset, size = ctl->data_size;

	if (!off && !size) {
		off = page_size;
		size = span - page_size;
	}
	if (off < sizeof(*ctl) || off > span || size > span - off || !is_pow2(size) ||
	    (off & 7))
		return -EINVAL;
	r->ctl = ctl;
	r->data = (uint8_t *)base + off;
	r->data_size = size;
	r->tail = __atomic_load_n(&ctl->data_tail, __ATOMIC_RELAXED);
	r->fd = -1;
	return 0;
}

int pm_ring_open(struct pm_ring **out, int perf_fd, unsigned data_pages)
{
	long ps = sysconf(_SC_PAGESIZE);
	struct pm_ring *r;
	size_t len;
	void *m;
	int rc;

	if (ps <= 0 || !is_pow2(data_pages) || data_pages > (1u << 20))
		return -EINVAL;
	len = ((size_t)data_pages + 1) * (size_t)ps;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, perf_fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	r = xcalloc(1, sizeof(*r));
	rc = ring_init(r, m, (size_t)ps, len);
	if (rc) {
		munmap(m, len);
		free(r);
		return rc;
	}
	r->map = m;
	r->map_len = len;
	r->fd = perf_fd;
	*out = r;
	return 0;
}

int pm_ring_open_mem(struct pm_ring **out, void *base, size_t page_size, size_t data_size)
{
	struct pm_ring *r;
	int rc;

	if (!base || page_size < sizeof(struct perf_event_mmap_page) ||
	    data_size > SIZE_MAX - page_size || ((uintptr_t)base & 7))
		return -EINVAL;
	r = xcalloc(1, sizeof(*r));
	rc = ring_init(r, base, page_size, page_size + data_size);
	if (rc) {
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void pm_ring_free(struct pm_ring *r)
{
	if (!r)
		return;
	if (r->map)
		munmap(r->map, r->map_len);
	free(r);
}

/* Copy @n bytes starting at ring position @pos, wrapping at the end. */
static void ring_copy(const struct pm_ring *r, void *dst, uint64_t pos, size_t n)
{
	size_t off = (size_t)(pos & (r->data_size - 1));
	size_t first = PM_MIN(n, (size_t)(r->data_size - off));

	memcpy(dst, r->data + off, first);
	if (n > first)
		memcpy((uint8_t *)dst + first, r->data, n - first);
}

void pm_ring_snapshot(struct pm_ring *r)
{
	r->snap = __atomic_load_n(&r->ctl->data_head, __ATOMIC_ACQUIRE);
	r->snapped = true;
}

const struct perf_event_header *pm_ring_next(struct pm_ring *r)
{
	uint64_t head = r->snapped ? r->snap : __atomic_load_n(&r->ctl->data_head, __ATOMIC_ACQUIRE);
	uint64_t avail = head - r->tail;
	struct perf_event_header h;
	size_t off;

	if (!avail)
		return NULL;
	/*
	 * More pending than the buffer holds (we fell a lap behind, or the
	 * control page is garbage), or a header that cannot be: nothing after
	 * this point can be trusted, so drop everything up to head.
	 */
	if (avail > r->data_size || avail < sizeof(h))
		goto corrupt;
	ring_copy(r, &h, r->tail, sizeof(h));
	if (h.size < sizeof(h) || h.size > avail)
		goto corrupt;
	off = (size_t)(r->tail & (r->data_size - 1));
	r->tail += h.size;
	if (off + h.size <= r->data_size && !(((uintptr_t)r->data + off) & 7))
		return (const struct perf_event_header *)(const void *)(r->data + off);
	ring_copy(r, r->bounce, r->tail - h.size, h.size);
	return (const struct perf_event_header *)(const void *)r->bounce;

corrupt:
	r->bad++;
	r->tail = head;
	return NULL;
}

void pm_ring_unread(struct pm_ring *r, const struct perf_event_header *h)
{
	r->tail -= h->size;
}

void pm_ring_release(struct pm_ring *r)
{
	__atomic_store_n(&r->ctl->data_tail, r->tail, __ATOMIC_RELEASE);
}

void pm_ring_consume(struct pm_ring *r)
{
	r->snapped = false;
	pm_ring_release(r);
}

size_t pm_ring_pending(const struct pm_ring *r)
{
	uint64_t head = __atomic_load_n(&r->ctl->data_head, __ATOMIC_ACQUIRE);

	return (size_t)(head - r->tail);
}

uint64_t pm_ring_bad(const struct pm_ring *r)
{
	return r->bad;
}

int pm_ring_fd(const struct pm_ring *r)
{
	return r->fd;
}
