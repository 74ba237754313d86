/*
 * capture: the replayable capture (--raw, datafile.h) of a recording --
 * written live as the session feeds each record (its start, the stack
 * copy cut to what the unwinder needed, the target memory each sample
 * read, the trailer) -- and its replay, pm_record_replay() (record.h):
 * the capture's records fed through the same pm_ses_feed().
 *
 * Every read of the target while a sample is processed goes through
 * pm_cap_read(), so that a replay reads what the live run read.  Write
 * errors are kept in s->cap_err (the first one).
 */
#ifndef PM_CAPTURE_H
#define PM_CAPTURE_H

#include "session/session.h"

struct pm_slog;

/* Start the capture once the attr is final: header, attr, the events, and (attach) ids. */
void pm_cap_begin(struct session *s);
/* Keep the first write error @rc (0: none). */
void pm_cap_check(struct session *s, int rc);
/*
 * How much of this sample's stack copy the capture keeps (UINT64_MAX: all),
 * given its walk (@n frames in s->pcs, @status).
 */
uint64_t pm_cap_keep(struct session *s, const struct pm_unw_input *in, pid_t pid, size_t n,
		     unsigned status);
/* Live: the sample's MEM records, before the sample. */
void pm_cap_write_mem(struct session *s);
/* Live: the trailer, and the capture made whole; 0 or -errno. */
int pm_cap_finish(struct session *s);

/* A read of the target: live from the process (logged with --raw), at replay from the log. */
int pm_cap_read(struct session *s, pid_t pid, uint64_t addr, void *buf, size_t len);
/*
 * A value the session computed live and a replay must see the same
 * (@key: an address below PM_NULL_PAGE, which no program maps; goroutine.h's
 * PM_GOR_CLOCK_ADDR is 8): live, @buf logged with --raw; at replay, read
 * back into @buf.  0 or -EFAULT.
 */
int pm_cap_value(struct session *s, pid_t pid, uint64_t key, void *buf, size_t len);
/* (the keys the sources use: srcctx.h, PM_CAP_KEY_*) */
/* Many reads of @pid (batched live), each marked ok or not (srcctx.h), as pm_cap_read() reads one. */
void pm_cap_readv(struct session *s, pid_t pid, struct pm_cap_rd *r, size_t n);
/*
 * A source's snapshot (its timer's reads of the target) begins: live with
 * --raw, its reads (pm_cap_read(), pm_cap_readv(), pm_cap_value()) are
 * logged in *@log (made here), encoded against the one before; at replay,
 * the SNAPMEM parts read before its record are decoded into *@log and
 * serve them.  Nothing live without --raw.
 */
void pm_cap_snap_begin(struct session *s, struct pm_slog **log);
/*
 * It ends: live with --raw, its SNAPMEM parts and its record (@type WALL or
 * INUSE, @flags, @time, the processes it read) into the capture.
 */
void pm_cap_snap_end(struct session *s, uint32_t type, uint32_t flags, uint64_t time,
		     const pid_t *pids, size_t npids);
/* The same as the unwinder's and the goroutine inspector's read callbacks (arg: the session). */
int pm_cap_unw_read(void *arg, uint64_t addr, void *buf, size_t len);
int pm_cap_gor_read(void *arg, pid_t pid, uint64_t addr, void *buf, size_t len);

#endif
