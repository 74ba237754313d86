/*
 * snaplog: the target memory one snapshot read (a source's timer: the
 * goroutines of --wall, the heap records of --inuse), logged in order live
 * and served in order at replay, and its encoding against the snapshot
 * before it, so that a capture holds only what changed.  Layer 0.
 *
 * A snapshot's log is a list of reads (pid, address, length, and the bytes,
 * or failed).  Its encoding is a byte stream of operations against the
 * previous snapshot's list (the base), with a cursor j into it; integers
 * are LEB128 varints (z: zigzag-signed):
 *
 *   1 n             COPY: the next n reads are base[j..j+n) again; j += n
 *   2 z             SEEK: j += z (0 <= j <= the base's reads)
 *   3 k (s l B)*k   PATCH: base[j] (read whole) with k ranges changed: skip
 *                   s bytes, then l bytes B; j += 1
 *   4 pid z len ok  NEW: a read of len bytes at the address z past the end
 *     [B]           of the read before it (in this snapshot), ok 1 with its
 *                   len bytes B, 0 failed; j stays
 *   5               FAIL: base[j]'s read, failed this time; j += 1
 *   6 pid z len     DICT: a read of len bytes at the address z past the end
 *     k (s l B)*k   of the read before it, the dictionary's bytes of that
 *                   key with PATCH's k ranges changed; j stays
 *
 * The dictionary: the last bytes read at each key (pid, address, length)
 * by the snapshots before, of every read but COPY's (its bytes are those
 * kept already) and those over PM_SLOG_DICT_MAX / 16 bytes, put in read
 * order after each snapshot, alike live and at replay.  So a goroutine that
 * wakes costs a patch of its stack against the one of its last wake, not
 * the whole stack.  Bounded: two generations; when the young one's bytes
 * (and its table's) pass PM_SLOG_DICT_MAX / 2, the old one is dropped and
 * it becomes the old one (a key is looked for in the young one first).
 * A decode refused empties it too.
 *
 * A decoder checks every count, length and offset against the stream, the
 * base and the bounds below; what does not fit is -EINVAL and an empty log
 * (every read of the snapshot then fails).
 */
#ifndef PM_SNAPLOG_H
#define PM_SNAPLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PM_SLOG_MAX (64u << 20)          /* bytes one snapshot reads at most (logged) */
#define PM_SLOG_MAX_READS (1u << 21)     /* reads of one snapshot at most */
#define PM_SLOG_DICT_MAX (32u << 20)     /* bytes the dictionary keeps at most (about) */
#define PM_SLOG_ENC_MAX (PM_SLOG_MAX + 16u * PM_SLOG_MAX_READS) /* its encoding at most */

struct pm_slog;

struct pm_slog *pm_slog_new(void);
void pm_slog_free(struct pm_slog *l); /* NULL is fine */

/* Live: a snapshot starts: its log empty (the last one is the base). */
void pm_slog_start(struct pm_slog *l);
/*
 * Live: log a read of @len bytes at @addr of @pid; @buf NULL when it
 * failed.  False when the snapshot's log is full: the read must then fail
 * live too, as it will at replay.
 */
bool pm_slog_log(struct pm_slog *l, pid_t pid, uint64_t addr, const void *buf, size_t len);
/*
 * Live: the snapshot's log encoded against the base into *out (*len bytes,
 * malloc'd: the caller frees it); the snapshot becomes the base.
 */
void pm_slog_encode(struct pm_slog *l, uint8_t **out, size_t *len);
/*
 * Replay: decode a snapshot's log from @in against the base; it becomes
 * the base.  0, or -EINVAL (the log and the base then empty).
 */
int pm_slog_decode(struct pm_slog *l, const uint8_t *in, size_t len);
/*
 * Replay: serve the next read: the log's next read when it is this one
 * (else the first of the next few that is).  0, or -EFAULT (failed live,
 * or not in the log).
 */
int pm_slog_read(struct pm_slog *l, pid_t pid, uint64_t addr, void *buf, size_t len);
/* The reads of the snapshot logged or decoded last, and their bytes. */
size_t pm_slog_nreads(const struct pm_slog *l);
size_t pm_slog_bytes(const struct pm_slog *l);

#endif
