/*
 * memlog: the target memory one sample read, kept in a capture so that its
 * replay reads the same bytes.  Layer 0.
 *
 * Live (--raw), every read of the target while a sample is processed is
 * logged in the order it happened, as entries (pid u32, len u32, addr u64,
 * len bytes padded to 8; at most PM_MLOG_CHUNK bytes each, a longer read
 * in consecutive entries); a read that failed as one entry of length 0.
 * The entries go into the capture as MEM records before their sample
 * (datafile.h).  At replay, those records are added back and serve the
 * replay's reads: the entries after the last one used answer the next read
 * (the replay makes the live reads in the same order), so a sample that
 * read an address twice gets what each read got, and a read that failed
 * live fails again; a read they do not answer (a capture made before
 * failures were logged, or by another version's read order) is served by
 * any entry holding its addresses, or fails.
 */
#ifndef PM_MEMLOG_H
#define PM_MEMLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PM_MLOG_CHUNK 32768      /* bytes of one entry at most */
#define PM_MLOG_MAX (1u << 20)   /* bytes of reads logged for one sample at most */
#define PM_MLOG_MARKS 65536      /* ... and past that, for the marks of failed reads */
#define PM_MLOG_MAX_RECORDS 64   /* MEM records of one sample at replay */

struct pm_mlog;

struct pm_mlog *pm_mlog_new(void);
void pm_mlog_free(struct pm_mlog *m);

/* A new sample: forget the entries of the last one. */
void pm_mlog_reset(struct pm_mlog *m);

/*
 * Live: log a read of @len bytes at @addr of @pid; @buf NULL for a read
 * that failed.  False when the sample's log is full: the read must then
 * fail live too, as it will at replay.
 */
bool pm_mlog_log(struct pm_mlog *m, pid_t pid, uint64_t addr, const void *buf, size_t len);

/*
 * Live: the log in pieces of whole entries, each at most @max bytes, for
 * MEM records; start with *off = 0.  False when there is no more.
 */
bool pm_mlog_piece(const struct pm_mlog *m, size_t *off, size_t max, const uint8_t **p,
		   size_t *len);

/* Replay: a MEM record's payload (copied). -EINVAL: too many for one sample, or not whole words. */
int pm_mlog_add_record(struct pm_mlog *m, const void *data, size_t len);

/* Replay: serve a read. 0, or -EFAULT when the log does not hold it. */
int pm_mlog_read(struct pm_mlog *m, pid_t pid, uint64_t addr, void *buf, size_t len);

#endif
