/*
 * ring: the mmap'd perf ring buffer of one event fd.  Knows the head/tail
 * protocol and wrap-around, not what the records mean.
 */
#ifndef PM_RING_H
#define PM_RING_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

struct pm_ring;

/*
 * Map @data_pages (a power of two) data pages of @perf_fd, plus the control
 * page.  0 or -errno (EPERM: over the locked-memory limit).
 */
int pm_ring_open(struct pm_ring **out, int perf_fd, unsigned data_pages);
void pm_ring_free(struct pm_ring *r); /* NULL is fine */

/*
 * Next record, or NULL when the buffer is empty.  The record is 8-byte
 * aligned and contiguous (a record that wraps the end is copied into a
 * bounce buffer); borrowed until the next call.  A record whose size is
 * impossible (< 8, > bytes available) ends the batch: the reader skips to
 * head and counts it in pm_ring_bad().
 */
const struct perf_event_header *pm_ring_next(struct pm_ring *r);

/*
 * Limit pm_ring_next() to what the buffer holds now, until
 * pm_ring_consume().  A drain that snapshots every ring before it merges
 * them by time sees each up to about the same instant; reading each to its
 * live head instead lets a ring that is read later show records younger
 * than ones another ring gets only after its pass, out of time order.
 */
void pm_ring_snapshot(struct pm_ring *r);

/* Release what pm_ring_next() returned so far to the kernel (store data_tail). */
void pm_ring_consume(struct pm_ring *r);
/*
 * The same within a batch (the snapshot stays): the room of the records
 * already processed goes back to the kernel at once, not at the batch's
 * end.  Only when no record pm_ring_next() returned is still in use.
 */
void pm_ring_release(struct pm_ring *r);
/*
 * Give back @h, the record pm_ring_next() returned last: it stays in the
 * buffer, first of the next batch.
 */
void pm_ring_unread(struct pm_ring *r, const struct perf_event_header *h);

/* Bytes waiting in the buffer. */
size_t pm_ring_pending(const struct pm_ring *r);
uint64_t pm_ring_bad(const struct pm_ring *r);
int pm_ring_fd(const struct pm_ring *r);

/*
 * Create a ring over caller-supplied memory laid out as the kernel lays out
 * a perf mmap (control page of @page_size bytes, then @data_size bytes of
 * data).  For tests and fuzzing: no fd, no mmap.
 */
int pm_ring_open_mem(struct pm_ring **out, void *base, size_t page_size, size_t data_size);

#endif
