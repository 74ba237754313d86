/*
 * agent: `pmuprof agent`, always on: the host's Go processes (discover.h)
 * each recorded by a child process of its own (record.h, attached, cut in
 * intervals) that sends each interval's profile over a pipe (sink.h);
 * the agent puts it in the spool with its resource (meta.h, spool.h),
 * which a thread of its own pushes to the backends (push.h).
 *
 * Processes, not threads, for the recordings: one that a hostile target
 * makes fail ends its own child alone; each child's memory is its own and
 * given back whole when its target exits.  The agent alone owns the
 * spool; a restart of it loses nothing the spool holds.
 */
#ifndef PM_AGENT_H
#define PM_AGENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/discover.h"
#include "session/record.h"

#define PM_AGENT_DEFAULT_INTERVAL 10.0 /* s */
#define PM_AGENT_DEFAULT_FREQ 19       /* Hz: the host-wide profilers' rate */
/* --alloc's probe hits per second (record.h: alloc_max_rate): ~0.6 % of a core at 12 us a trap */
#define PM_AGENT_DEFAULT_ALLOC_MAX_RATE 500
/* --creators' (record.h: creators_max_rate): one trap per goroutine created, the same cost */
#define PM_AGENT_DEFAULT_CREATORS_MAX_RATE 500

struct pm_agent_cfg {
	/*
	 * The kinds as `record` takes them (-e, -F, --wall, --off-cpu, ...);
	 * the targets, the output, the stop and the intervals are the agent's.
	 */
	struct pm_record_cfg rec;
	double interval;       /* s: each process's profile cut at the wall clock's multiples */
	double duration;       /* s: the agent stops after it; 0 = when stopped */
	double scan;           /* s: /proc looked at again for new processes */
	struct pm_disc_filter filter; /* the targets (none: every Go process) */
	/*
	 * A file of filters, read at the start and on SIGHUP (then the
	 * options' filters are replaced by it): lines "pid N", "comm NAME",
	 * "exe PATH", "cgroup PREFIX", '#' comments.  NULL = none.
	 */
	const char *filter_file;
	const char *spool;     /* the spool's directory */
	uint64_t spool_max;    /* its bound, bytes */
	const char *otlp;      /* an OpenTelemetry Collector's OTLP/HTTP base URL, NULL none */
	const char *pyroscope; /* a Pyroscope server's base URL, NULL none */
	const char *dir;       /* a directory for a pprof file per process per interval, NULL none */
	uint64_t dir_max;      /* its bound, bytes */
	int verbose;           /* -v: one line per interval */
	/*
	 * --per-process: a recording child per target even for the CPU
	 * events alone, which are otherwise recorded host-wide (recorder.h)
	 */
	bool per_process;
	volatile sig_atomic_t *stop;   /* set by SIGINT/SIGTERM: flush and end */
	volatile sig_atomic_t *reload; /* set by SIGHUP: filter_file read again */
};

/*
 * Run until *cfg->stop or cfg->duration.  Returns 0, or -1 with one line
 * in @err (a bad filter file, no /proc, the spool not writable).
 */
int pm_agent_run(const struct pm_agent_cfg *cfg, char *err, size_t errlen);

/*
 * Parse a filter file's text (@len bytes) into @f (owned: pm_disc_filter_free()).
 * -EINVAL with the line said in @err.
 */
int pm_agent_filter_parse(const char *text, size_t len, struct pm_disc_filter *f, char *err,
			  size_t errlen);
/* The filter file @path read and parsed: 0, or -1 with the cause in @err. */
int pm_agent_filter_read(const char *path, struct pm_disc_filter *f, char *err, size_t errlen);

#endif
