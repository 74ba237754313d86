/*
 * spool: the agent's intervals on disk, bounded, until every backend has
 * them (`--spool DIR --spool-max MB`).  Layer 9.
 *
 * One directory, three kinds of file per interval, named by its key
 *
 *     KEY = START-PID-SEQ   (zero-padded decimals: 20, 10 and 20 digits)
 *     KEY.meta              pm_meta_format() text (meta.h)
 *     KEY.pb.gz             the gzip'd pprof: its commit point
 *     KEY.done-BACKEND      empty: BACKEND has it (pushed, or refused for good)
 *
 * so that a directory listing sorts oldest first (by the interval's start,
 * then pid, then seq) and `ls` shows what is pending where.
 *
 * Put: the meta, then the profile, each written whole or not at all
 * (base/outfile.h: an unnamed file fsync'd, then named); the profile's name
 * is the commit point.  A crash before it leaves a meta without a profile
 * (or, without O_TMPFILE, a hidden ".KEY.*" temporary): removed at the
 * next open and counted as torn.
 *
 * Done: an empty marker per backend, not a hard link per backend in a
 * queue directory.  Both are one atomic system call, idempotent and
 * cheap next to an HTTP request; markers keep an interval's files in one
 * directory, need nothing when a put happens, and make the rule "removed
 * when every backend configured now has it" a plain check of names: a
 * backend dropped from the command line stops holding intervals back (its
 * markers are removed at open), and a backend added gets the intervals
 * still pending, oldest first.  Hard-link queues would fix the set of
 * backends at put time, need N+1 links per put and a queue to discard
 * by hand when a backend goes.  The marker is created without an fsync:
 * a crash of pmuprof keeps it (the page cache survives), a power loss
 * between a push and the marker's write-back pushes that interval again
 * (at least once across power losses, exactly once otherwise).
 *
 * Bound: the meta and profile bytes of every interval held; a put that
 * would pass it drops the oldest intervals first, whoever still lacks
 * them, and counts them (stats.dropped).
 *
 * Open: scans the directory; files that are not the spool's (by name) are
 * left alone; temporaries and metas without a profile are removed (torn);
 * an interval whose meta does not parse (pm_meta_parse(): the files are
 * read as hostile) or disagrees with its name is removed (bad).  One
 * pmuprof per spool: the directory is flock()ed; it must be owned by this
 * user and writable by nobody else (others could inject profiles), and is
 * made (0700) when missing.
 *
 * Thread-safe: every function takes the spool's lock (the pusher runs in a
 * thread of its own, push.h).
 */
#ifndef PM_SPOOL_H
#define PM_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "agent/meta.h"

#define PM_SPOOL_MAX_BACKENDS 8
#define PM_SPOOL_DEFAULT_MAX (64ULL << 20) /* --spool-max: 64 MB */
#define PM_SPOOL_ROOT_DIR "/var/lib/pmuprof/spool"

struct pm_spool;

struct pm_spool_stats {
	uint64_t pending;	/* intervals held now */
	uint64_t bytes;		/* their meta and profile bytes */
	uint64_t put;		/* intervals put since open */
	uint64_t resumed;	/* intervals found pending at open */
	uint64_t dropped;	/* intervals dropped by the bound before every backend had them */
	uint64_t dropped_bytes; /* their bytes */
	uint64_t torn;		/* half-written intervals removed at open */
	uint64_t bad;		/* intervals removed for a meta that did not parse, or unreadable */
};

/* An interval handed out by pm_spool_next(); pm_spool_item_release() frees data. */
struct pm_spool_item {
	struct pm_agent_meta meta;
	uint8_t *data; /* the gzip'd pprof, owned */
	size_t len;
};

/*
 * The spool's directory without --spool, into @buf: PM_SPOOL_ROOT_DIR for
 * root (state that outlives a reboot, FHS's /var/lib: a restart after a
 * reboot resumes), else "$TMPDIR/pmuprof-spool-UID" ($TMPDIR or /tmp:
 * /var/lib is root's).  Returns @buf.
 */
const char *pm_spool_default_dir(char *buf, size_t len);

/*
 * Open (make, scan, lock) the spool in @dir, bounded to @max_bytes (0:
 * PM_SPOOL_DEFAULT_MAX), for the backends named @backends[0..@nb) (at most
 * PM_SPOOL_MAX_BACKENDS names of [a-z0-9], distinct: push.h's
 * pm_push_name()); a backend's index in that array is its number in
 * pm_spool_next() and pm_spool_done().  With no backend, intervals stay
 * until the bound drops them.  0, or -errno with the cause in @err
 * (-EBUSY: another pmuprof has it; -EPERM: not this user's, or writable
 * by others).
 */
int pm_spool_open(struct pm_spool **out, const char *dir, uint64_t max_bytes,
		  const char *const *backends, unsigned nb, char *err, size_t errlen);

/*
 * Spool one interval: @m (its pid > 0; start, pid and seq name it) and
 * @len bytes of gzip'd pprof, copied.  Drops the oldest intervals to make
 * room.  0, or -errno with the cause in @err: -EEXIST when that interval
 * is held already, -EFBIG when it alone is over the bound (counted as
 * dropped), -EINVAL for a bad meta, a write's error (-ENOSPC...).
 */
int pm_spool_put(struct pm_spool *sp, const struct pm_agent_meta *m, const void *pprof, size_t len,
		 char *err, size_t errlen);

/*
 * The oldest interval backend @b lacks, read back into @it (the caller
 * releases it): 1; 0 when it lacks none.  An interval that can no longer
 * be read is removed and counted bad, and the next one is tried.
 */
int pm_spool_next(struct pm_spool *sp, unsigned b, struct pm_spool_item *it);
void pm_spool_item_release(struct pm_spool_item *it);

/*
 * Backend @b has the interval of @m (pushed, or refused for good): its
 * marker is written, and the interval removed once every backend has it.
 * 0; -ENOENT when the interval is gone (dropped by the bound meanwhile:
 * nothing to do); -errno when the marker could not be written (it counts
 * as done in memory, so this run does not push it again).
 */
int pm_spool_done(struct pm_spool *sp, unsigned b, const struct pm_agent_meta *m);

/* Intervals backend @b lacks (@b < 0: every interval held). */
size_t pm_spool_pending(struct pm_spool *sp, int b);
void pm_spool_get_stats(struct pm_spool *sp, struct pm_spool_stats *st);
/* The directory, as given to pm_spool_open(). */
const char *pm_spool_dir(const struct pm_spool *sp);
/* Unlock and free; the files stay for the next open.  NULL is fine. */
void pm_spool_close(struct pm_spool *sp);

#endif
