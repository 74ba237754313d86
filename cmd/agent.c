/* pmuprof agent: parse options, hand them to lib/agent. */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "base/util.h"
#include "cmds.h"
#include "events/events.h"
#include "kinds.h"
#include "parse-opt.h"

enum {
	OPT_INTERVAL = 500, OPT_COMM, OPT_EXE, OPT_CGROUP, OPT_FILTERS, OPT_SPOOL, OPT_SPOOL_MAX,
	OPT_OTLP, OPT_PYROSCOPE, OPT_DIR, OPT_DIR_MAX, OPT_SCAN, OPT_PER_PROCESS,
};

#define DEFAULT_SPOOL_MAX_MB 64
#define DEFAULT_DIR_MAX_MB 1024

static const struct pm_opt agent_opts[] = {
	{ 'p', "pid", "PID[,PID...]", "profile these processes (default: every Go process on the host)" },
	{ OPT_COMM, "comm", "NAME", "profile the Go processes of this comm (repeatable)" },
	{ OPT_EXE, "exe", "PATH", "profile the Go processes of this executable: a path or a base name (repeatable)" },
	{ OPT_CGROUP, "cgroup", "PATH", "profile the Go processes under this cgroup path (repeatable)" },
	{ OPT_FILTERS, "filters", "FILE", "the targets from FILE ('pid N', 'comm NAME', 'exe PATH', 'cgroup PATH' lines), read again on SIGHUP" },
	{ OPT_INTERVAL, "interval", "SECS", "cut each process's profile every SECS seconds, on the clock (default 10)" },
	{ OPT_DURATION, "duration", "SECS", "stop after SECS seconds (default: when stopped)" },
	{ 'e', "event", "EVENT", "events to sample, a,b,... (default cpu-clock)" },
	{ 'F', "freq", "HZ", "samples per second (default 19)" },
	{ 'c', "count", "PERIOD", "sample every PERIOD events instead of -F" },
	{ OPT_WALL, "wall", NULL, "also every goroutine's wall time (20 snapshots/s)" },
	{ OPT_OFF_CPU, "off-cpu", NULL, "also the threads blocked in the kernel" },
	{ OPT_LOCKS, "locks", NULL, "also contended locks" },
	{ OPT_LOCKS_MAX_RATE, "locks-max-rate", "HITS", "--locks: probe hits per second before the probes watch part of the time (default 1000)" },
	{ OPT_ALLOC, "alloc", NULL, "also the allocations the Go runtime samples" },
	{ OPT_ALLOC_MAX_RATE, "alloc-max-rate", "HITS", "--alloc: probe hits per second before the probe watches part of the time (default 500)" },
	{ OPT_INUSE, "inuse", NULL, "also the live heap at each interval's end" },
	{ OPT_CREATORS, "creators", NULL, "put each goroutine's stack under its creators' (8 levels)" },
	{ OPT_CREATORS_MAX_RATE, "creators-max-rate", "HITS", "--creators: creations per second before the probe watches part of the time (default 500)" },
	{ OPT_STACK_SIZE, "stack-size", "BYTES", "user stack bytes copied per sample (default 8192)" },
	{ OPT_KERNEL, "kernel", NULL, "keep kernel frames" },
	{ OPT_PER_PROCESS, "per-process", NULL, "a recording per process even for the CPU events alone (default: one for the host, events per CPU)" },
	{ OPT_OTLP, "otlp", "URL", "push OTLP profiles to an OpenTelemetry Collector (http://HOST:4318)" },
	{ OPT_PYROSCOPE, "pyroscope", "URL", "push pprof to a Pyroscope server (http://HOST:4040)" },
	{ OPT_DIR, "dir", "DIR", "write a pprof file per process per interval into DIR" },
	{ OPT_DIR_MAX, "dir-max", "MB", "--dir: at most MB megabytes, the oldest files removed first (default 1024)" },
	{ OPT_SPOOL, "spool", "DIR", "intervals not yet pushed wait here, across restarts (default /var/lib/pmuprof/spool; not root: $TMPDIR/pmuprof-spool-UID)" },
	{ OPT_SPOOL_MAX, "spool-max", "MB", "the spool's bound: the oldest intervals dropped first, counted (default 64)" },
	{ 'v', "verbose", NULL, "one line per process and per interval" },
	{ 'h', "help", NULL, "show this help" },
	PM_OPT_END,
};

static const char agent_usage[] =
	"usage: pmuprof agent [OPTIONS] [--otlp URL] [--pyroscope URL] [--dir DIR]\n\n"
	"Profile every Go process on the host (or those -p, --comm, --exe, --cgroup\n"
	"name), new ones as they start, until SIGINT/SIGTERM or --duration; cut each\n"
	"process's profile every --interval seconds and push it to the backends.\n"
	"SIGHUP reads --filters again; SIGTERM flushes the last interval.";

static volatile sig_atomic_t stop_sig, hup_sig;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		hup_sig = 1;
	else
		stop_sig = sig;
}

struct aopts {
	struct pm_agent_cfg cfg;
	int freq_given, count_given;
	pid_t *pids;
	char **comms, **exes, **cgroups;
	size_t npids, ncomms, nexes, ncgroups;
};

static void add_str(char ***v, size_t *n, const char *s)
{
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[(*n)++] = (char *)s;
}

static int seconds(const char *what, const char *arg, double *out)
{
	if (pm_opt_double(arg, out) < 0 || *out <= 0 || *out > 86400) {
		pm_error("invalid %s '%s': must be a number of seconds, above 0 and at most 86400",
			 what, arg);
		return -1;
	}
	return 0;
}

static int megabytes(const char *what, const char *arg, uint64_t *out)
{
	unsigned long long v;

	if (pm_opt_u64(arg, &v) < 0 || v == 0 || v > (1ULL << 20)) {
		pm_error("invalid %s '%s': must be a number of megabytes, 1..1048576", what, arg);
		return -1;
	}
	*out = v << 20;
	return 0;
}

static int agent_opt(int key, const char *arg, void *ctx)
{
	struct aopts *a = ctx;
	struct pm_agent_cfg *c = &a->cfg;
	int rc = cmd_record_kind_opt(key, arg, &c->rec, &a->freq_given, &a->count_given);

	if (rc <= 0)
		return rc;
	switch (key) {
	case 'p':
		return cmd_parse_ids(arg, "PID", &a->pids, &a->npids);
	case OPT_PER_PROCESS:
		c->per_process = true;
		return 0;
	case OPT_COMM:
		add_str(&a->comms, &a->ncomms, arg);
		break;
	case OPT_EXE:
		add_str(&a->exes, &a->nexes, arg);
		break;
	case OPT_CGROUP:
		add_str(&a->cgroups, &a->ncgroups, arg);
		break;
	case OPT_FILTERS:
		c->filter_file = arg;
		break;
	case OPT_INTERVAL:
		return seconds("interval", arg, &c->interval);
	case OPT_DURATION:
		return seconds("duration", arg, &c->duration);
	case OPT_OTLP:
		c->otlp = arg;
		break;
	case OPT_PYROSCOPE:
		c->pyroscope = arg;
		break;
	case OPT_DIR:
		c->dir = arg;
		break;
	case OPT_DIR_MAX:
		return megabytes("--dir-max", arg, &c->dir_max);
	case OPT_SPOOL:
		c->spool = arg;
		break;
	case OPT_SPOOL_MAX:
		return megabytes("--spool-max", arg, &c->spool_max);
	case 'v':
		c->verbose++;
		break;
	}
	return 0;
}

static void defaults(struct aopts *a)
{
	struct pm_agent_cfg *c = &a->cfg;

	memset(a, 0, sizeof(*a));
	c->interval = PM_AGENT_DEFAULT_INTERVAL;
	c->spool_max = (uint64_t)DEFAULT_SPOOL_MAX_MB << 20;
	c->dir_max = (uint64_t)DEFAULT_DIR_MAX_MB << 20;
	c->rec.stack_size = PM_RECORD_DEFAULT_STACK;
	c->rec.event = "cpu-clock";
}

static void free_opts(struct aopts *a)
{
	free(a->pids);
	free((void *)a->comms);
	free((void *)a->exes);
	free((void *)a->cgroups);
}

static int check_usage(const struct aopts *a)
{
	const struct pm_agent_cfg *c = &a->cfg;

	if (a->freq_given && a->count_given) {
		pm_error("-F and -c are exclusive: sample by frequency or by period, not both");
		return 2;
	}
	if (!c->otlp && !c->pyroscope && !c->dir) {
		pm_error("nowhere to send the profiles: give --otlp URL, --pyroscope URL or --dir DIR");
		return 2;
	}
	if (c->filter_file && (a->npids || a->ncomms || a->nexes || a->ncgroups)) {
		pm_error("--filters and -p/--comm/--exe/--cgroup are exclusive: put the targets in "
			 "the file");
		return 2;
	}
	return 0;
}

static void wire(struct aopts *a)
{
	struct pm_agent_cfg *c = &a->cfg;
	struct sigaction sa;

	if (!a->freq_given && !a->count_given)
		c->rec.freq = PM_AGENT_DEFAULT_FREQ;
	if (c->rec.alloc && !c->rec.alloc_max_rate) /* always on: a bound by default */
		c->rec.alloc_max_rate = PM_AGENT_DEFAULT_ALLOC_MAX_RATE;
	if (c->rec.creators > 0 && !c->rec.creators_max_rate)
		c->rec.creators_max_rate = PM_AGENT_DEFAULT_CREATORS_MAX_RATE;
	c->filter = (struct pm_disc_filter){ a->pids, a->npids, a->comms, a->ncomms,
					     a->exes, a->nexes, a->cgroups, a->ncgroups };
	c->stop = &stop_sig;
	c->reload = &hup_sig;
	c->rec.host_mntns = pm_evt_tracefs_mount();
	c->rec.keep_privileges = true; /* (nothing launched; files the agent's own) */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int cmd_agent(int argc, char **argv)
{
	struct aopts a;
	char err[512];
	int first, rc;

	defaults(&a);
	first = pm_opt_parse(argc, argv, agent_opts, agent_usage, 0, agent_opt, &a);
	if (first < 0 || first < argc) {
		if (first >= 0)
			pm_error("unexpected argument '%s'; see 'pmuprof agent --help'", argv[first]);
		free_opts(&a);
		return first == -2 ? 0 : 2;
	}
	rc = check_usage(&a);
	if (rc) {
		free_opts(&a);
		return rc;
	}
	wire(&a);
	rc = pm_agent_run(&a.cfg, err, sizeof(err));
	if (rc)
		pm_error("%s", err);
	if (a.cfg.rec.host_mntns > 0)
		close(a.cfg.rec.host_mntns);
	free_opts(&a);
	return rc ? 1 : 0;
}
