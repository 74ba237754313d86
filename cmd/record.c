/* pmuprof record: parse options, hand them to lib/record. */
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "kinds.h"
#include "events/events.h"
#include "parse-opt.h"
#include "session/record.h"
#include "base/util.h"


static const struct pm_opt record_opts[] = {
	{ 'e', "event", "EVENT", "events to sample, a,b,... (default cycles; cpu-clock without a PMU)" },
	{ 'F', "freq", "HZ", "samples per second (default 1000)" },
	{ 'c', "count", "PERIOD", "sample every PERIOD events instead of -F" },
	{ 'o', "output", "FILE", "pprof output file (default pmuprof.pb.gz)" },
	{ 'p', "pid", "PID[,PID...]", "attach to running processes (every thread, later ones too)" },
	{ 't', "tid", "TID[,TID...]", "attach to these threads only" },
	{ OPT_DURATION, "duration", "SECS", "stop after SECS seconds" },
	{ OPT_STACK_SIZE, "stack-size", "BYTES", "user stack bytes copied per sample (default 8192)" },
	{ OPT_NO_CALLCHAIN, "no-callchain", NULL,
	  "no kernel frame-pointer walk per sample (cheaper; system-stack samples lose their goroutine)" },
	{ OPT_KERNEL, "kernel", NULL, "keep kernel frames (named from /proc/kallsyms)" },
	{ OPT_ALL_FRAMES, "all-frames", NULL,
	  "keep the frames Go's tracebacks hide (wrappers, runtime.deferreturn, runtime.goexit)" },
	{ OPT_STRICT, "strict", NULL, "fail instead of falling back to cpu-clock without a PMU" },
	{ OPT_RAW, "raw", "FILE", "also write a replayable capture (pmuprof report -i FILE)" },
	{ OPT_CREATORS, "creators", NULL,
	  "put each goroutine's stack under its creators' (--creators=N: N levels, default 8)" },
	{ OPT_NO_CREATORS, "no-creators", NULL, "no creator frames (goroutine ids and labels stay)" },
	{ OPT_CREATORS_MAX_RATE, "creators-max-rate", "HITS",
	  "--creators: goroutine creations per second above which the probe watches part of the time (default 0: no limit)" },
	{ OPT_WALL, "wall", NULL,
	  "also every goroutine's wall time, running or waiting (--wall=HZ snapshots/s, default 20)" },
	{ OPT_ALLOC, "alloc", NULL,
	  "sample the allocations Go's runtime samples for its heap profile (no CPU events without -e)" },
	{ OPT_MEMPROFILERATE, "memprofilerate", "BYTES",
	  "set the Go program's runtime.MemProfileRate (--alloc; launched: from its start, traced until then; -p: while recording, restored at the end)" },
	{ OPT_ALLOC_MAX_RATE, "alloc-max-rate", "HITS",
	  "--alloc: allocation probe hits per second above which the probe watches part of the time, alloc_objects and alloc_space scaled (default 0: no limit)" },
	{ OPT_INUSE, "inuse", NULL,
	  "also the live heap: the Go runtime's heap records read at the end (no probes; no CPU events without -e)" },
	{ OPT_LOCKS, "locks", NULL,
	  "sample contended sync.Mutex/RWMutex locks and runtime-lock sleeps: the waiter's stack, the time waited (no CPU events without -e)" },
	{ OPT_LOCKS_MAX_RATE, "locks-max-rate", "HITS",
	  "--locks: lock probe hits per second above which the probes watch part of the time, counts scaled (default 1000, 0: no limit)" },
	{ OPT_OFF_CPU, "off-cpu", NULL,
	  "sample threads blocked in the kernel: kernel and Go stacks, the goroutine, the time off CPU (no CPU events without -e)" },
	{ OPT_NO_DROP_PRIVILEGES, "no-drop-privileges", NULL,
	  "under sudo, keep root for CMD and the files (default: SUDO_UID/SUDO_GID's)" },
	{ 'q', "quiet", NULL, "no summary line" },
	{ 'h', "help", NULL, "show this help" },
	PM_OPT_END,
};

static const char record_usage[] =
	"usage: pmuprof record [OPTIONS] [--] CMD [ARGS...]\n"
	"       pmuprof record [OPTIONS] -p PID[,PID...] | -t TID[,TID...]\n\n"
	"Run CMD and sample it with perf_event_open: every thread it starts, until it\n"
	"exits, --duration passes, or SIGINT/SIGTERM (forwarded to CMD). Writes pprof.\n"
	"With -p/-t, attach to running processes or threads instead, until they exit,\n"
	"--duration passes, or SIGINT/SIGTERM (the targets are never signalled).\n"
	"Exit status: CMD's (0 when attached); 1 on an error; 2 on a usage error;\n"
	"126/127 when CMD cannot be run.";

static volatile sig_atomic_t stop_sig;

static void on_signal(int sig)
{
	stop_sig = sig;
}

struct ropts {
	struct pm_record_cfg cfg;
	int freq_given, count_given;
	pid_t *pids, *tids;
	size_t npids, ntids;
};

static int bad_id(const char *what, const char *arg)
{
	pm_error("invalid %s '%s': must be a number above 0 (a list: 12,34)", what, arg);
	return -1;
}

/* "1,2,3" appended to *v; -1 (message printed) on anything but positive ids. */
int cmd_parse_ids(const char *arg, const char *what, pid_t **v, size_t *n)
{
	const char *p = arg;

	if (!*p)
		return bad_id(what, arg);
	while (*p) {
		const char *end = strchrnul(p, ',');
		unsigned long long x = 0;
		char num[24];
		size_t len = (size_t)(end - p);

		if (len == 0 || len >= sizeof(num)) {
			return bad_id(what, arg);
		}
		memcpy(num, p, len);
		num[len] = '\0';
		if (pm_opt_u64(num, &x) < 0 || x == 0 || x > 0x7fffffffULL) {
			return bad_id(what, arg);
		}
		*v = xrealloc(*v, (*n + 1) * sizeof(**v));
		(*v)[(*n)++] = (pid_t)x;
		p = *end ? end + 1 : end;
		if (*end && !*p) {
			return bad_id(what, arg);
		}
	}
	return 0;
}

/* A probe budget's option (--locks-max-rate, --alloc-max-rate, --creators-max-rate): hits per second, 0 = -1 (no limit). */
static int max_rate(const char *opt, const char *arg, int64_t *out)
{
	unsigned long long v;

	if (pm_opt_u64(arg, &v) < 0 || v > 1000000000ULL) {
		pm_error("invalid %s '%s': must be a number of probe hits per second, "
			 "0..1000000000 (0: no limit)",
			 opt, arg);
		return -1;
	}
	*out = v ? (int64_t)v : -1;
	return 0;
}

/* The kinds and how they sample: 0, -1 (said), 1 when @key is none of them. */
static int kind_opt(int key, const char *arg, struct pm_record_cfg *cfg)
{
	unsigned long long v;

	switch (key) {
	case OPT_STACK_SIZE:
		if (pm_opt_u64(arg, &v) < 0 || v > 65528 || v % 8) {
			pm_error("invalid stack size '%s': must be a multiple of 8, 0..65528", arg);
			return -1;
		}
		cfg->stack_size = (uint32_t)v;
		break;
	case OPT_STRICT:
		cfg->strict = true;
		break;
	case OPT_KERNEL:
		cfg->kernel = true;
		break;
	case OPT_NO_CALLCHAIN:
		cfg->no_callchain = true;
		break;
	case OPT_ALL_FRAMES:
		cfg->all_frames = true;
		break;
	case OPT_CREATORS:
		cfg->creators = DEFAULT_CREATORS;
		break;
	case OPT_NO_CREATORS:
		cfg->creators = -1;
		break;
	case OPT_CREATORS_MAX_RATE:
		if (cfg->creators < 1)
			cfg->creators = DEFAULT_CREATORS;
		return max_rate("--creators-max-rate", arg, &cfg->creators_max_rate);
	case OPT_WALL:
		cfg->wall_hz = DEFAULT_WALL_HZ;
		break;
	case OPT_ALLOC:
		cfg->alloc = true;
		break;
	case OPT_INUSE:
		cfg->inuse = true;
		break;
	case OPT_LOCKS:
		cfg->locks = true;
		break;
	case OPT_LOCKS_MAX_RATE:
		cfg->locks = true;
		return max_rate("--locks-max-rate", arg, &cfg->locks_max_rate);
	case OPT_ALLOC_MAX_RATE:
		cfg->alloc = true;
		return max_rate("--alloc-max-rate", arg, &cfg->alloc_max_rate);
	case OPT_OFF_CPU:
		cfg->off_cpu = true;
		break;
	case OPT_MEMPROFILERATE:
		if (pm_opt_u64(arg, &v) < 0 || v == 0 || v > 0x7fffffffULL) {
			pm_error("invalid --memprofilerate '%s': must be a number of bytes, 1..2147483647 "
				 "(1: every allocation)",
				 arg);
			return -1;
		}
		cfg->memprofilerate = (int64_t)v;
		cfg->alloc = true;
		break;
	default:
		return 1;
	}
	return 0;
}

/* What to record: the options `record` and `agent` share (cmds.h). */
int cmd_record_kind_opt(int key, const char *arg, struct pm_record_cfg *cfg, int *freq_given,
			int *count_given)
{
	unsigned long long v;
	long max;

	switch (key) {
	case 'e':
		cfg->event = arg;
		break;
	case 'F':
		max = pm_evt_max_sample_rate();
		if (max <= 0)
			max = 100000;
		if (pm_opt_u64(arg, &v) < 0 || v == 0 || v > (unsigned long long)max) {
			pm_error("invalid frequency '%s': must be 1..%ld "
				 "(kernel.perf_event_max_sample_rate)",
				 arg, max);
			return -1;
		}
		cfg->freq = v;
		*freq_given = 1;
		break;
	case 'c':
		if (pm_opt_u64(arg, &v) < 0 || v == 0 || v > (1ULL << 62)) {
			pm_error("invalid period '%s': must be 1..2^62 events", arg);
			return -1;
		}
		cfg->period = v;
		*count_given = 1;
		break;
	default:
		return kind_opt(key, arg, cfg);
	}
	return 0;
}

static int record_opt(int key, const char *arg, void *ctx)
{
	struct ropts *r = ctx;
	double d;
	int rc = cmd_record_kind_opt(key, arg, &r->cfg, &r->freq_given, &r->count_given);

	if (rc <= 0)
		return rc;
	switch (key) {
	case 'o':
		if (strcmp(arg, "-") == 0) {
			/* the command shares our stdout: its output would corrupt the profile */
			pm_error("cannot write the profile to stdout while the command uses it; "
				 "give a file with -o");
			return -1;
		}
		r->cfg.output = arg;
		break;
	case OPT_DURATION:
		if (pm_opt_double(arg, &d) < 0 || d <= 0) {
			pm_error("invalid duration '%s': must be a number of seconds above 0", arg);
			return -1;
		}
		r->cfg.duration = d;
		break;
	case OPT_RAW:
		if (!*arg || strcmp(arg, "-") == 0) {
			pm_error("invalid --raw '%s': a capture needs a file name", arg);
			return -1;
		}
		r->cfg.raw = arg;
		break;
	case OPT_NO_DROP_PRIVILEGES:
		r->cfg.keep_privileges = true;
		break;
	case 'q':
		r->cfg.quiet = true;
		break;
	case 'p':
		return cmd_parse_ids(arg, "PID", &r->pids, &r->npids);
	case 't':
		return cmd_parse_ids(arg, "TID", &r->tids, &r->ntids);
		}
	return 0;
}

/*
 * "--creators=N" (the option parser knows required values only): taken
 * out of argv before parsing.  Walks the options as getopt will, so that a
 * value or the command's own arguments are never touched.  -1 on a bad N.
 */
static int take_creators(int argc, char **argv, struct ropts *r)
{
	int i, k;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const struct pm_opt *o;
		unsigned long long v;

		if (strcmp(a, "--") == 0 || a[0] != '-' || !a[1])
			return 0;
		if (strncmp(a, "--creators=", 11) == 0) {
			if (pm_opt_u64(a + 11, &v) < 0 || v < 1 || v > 32) {
				pm_error("invalid --creators '%s': must be a number of levels, 1..32",
					 a + 11);
				return -1;
			}
			r->cfg.creators = (int)v;
			goto take;
		}
		if (strncmp(a, "--wall=", 7) == 0) {
			if (pm_opt_u64(a + 7, &v) < 0 || v < 1 || v > 1000) {
				pm_error("invalid --wall '%s': must be snapshots a second, 1..1000", a + 7);
				return -1;
			}
			r->cfg.wall_hz = (unsigned)v;
take:
			for (k = i; k < argc - 1; k++)
				argv[k] = argv[k + 1];
			argv[argc - 1] = NULL;
			argc--;
			i--;
			continue;
		}
		if (a[1] == '-') {
			size_t len = strcspn(a + 2, "=");

			for (o = record_opts; o->name; o++)
				if (strlen(o->name) == len && strncmp(o->name, a + 2, len) == 0)
					break;
			if (o->name && o->arg && !a[2 + len])
				i++; /* the value is the next word */
			continue;
		}
		for (k = 1; a[k]; k++) {
			for (o = record_opts; o->name && o->key != a[k]; o++)
				;
			if (o->name && o->arg) {
				if (!a[k + 1])
					i++;
				break;
			}
		}
	}
	return 0;
}

/*
 * Creators come from a probe on goroutine creation (uprobes defined in
 * tracefs); without tracefs, more than one level needs the runtime to
 * record ancestors: a launched command gets GODEBUG=tracebackancestors=N
 * (added to its own GODEBUG; a tracebackancestors it sets itself wins).
 */
static void want_ancestors(int levels)
{
	const char *old = getenv("GODEBUG");
	char *v;

	if (levels < 2 || (old && strstr(old, "tracebackancestors=")) || pm_evt_tracefs())
		return;
	v = old && *old ? xasprintf("tracebackancestors=%d,%s", levels, old)
			: xasprintf("tracebackancestors=%d", levels);
	setenv("GODEBUG", v, 1);
	free(v);
}

/* Combinations of options; 0 or the exit status (2) with the message printed. */
static int check_usage(const struct ropts *r, bool have_cmd)
{
	if (r->freq_given && r->count_given) {
		pm_error("-F and -c are exclusive: sample by frequency or by period, not both");
		return 2;
	}
	if ((r->npids || r->ntids) && have_cmd) {
		pm_error("%s and a command are exclusive: attach to a running process or run "
			 "a command, not both",
			 r->npids ? "-p" : "-t");
		return 2;
	}
	if (!have_cmd && !r->npids && !r->ntids) {
		pm_error("no command to run; usage: pmuprof record [OPTIONS] -- CMD [ARGS...] "
			 "or -p PID");
		return 2;
	}
	return 0;
}

int cmd_record(int argc, char **argv)
{
	struct ropts r;
	struct pm_record_result res;
	struct sigaction sa;
	int first, rc;

	memset(&r, 0, sizeof(r));
	r.cfg.stack_size = PM_RECORD_DEFAULT_STACK;
	if (take_creators(argc, argv, &r) < 0)
		return 2;
	while (argc > 0 && !argv[argc - 1])
		argc--;
	first = pm_opt_parse(argc, argv, record_opts, record_usage, 1, record_opt, &r);
	if (first == -2 || first < 0) {
		free(r.pids);
		free(r.tids);
		return first == -2 ? 0 : 2;
	}
	rc = check_usage(&r, first < argc);
	if (rc) {
		free(r.pids);
		free(r.tids);
		return rc;
	}
	r.cfg.argv = first < argc ? argv + first : NULL;
	/* tracefs (probes new threads inherit, tracepoints): mounted for pmuprof alone */
	r.cfg.host_mntns = pm_evt_tracefs_mount();
	if (r.cfg.argv)
		want_ancestors(r.cfg.creators);
	r.cfg.pids = r.pids;
	r.cfg.npids = r.npids;
	r.cfg.tids = r.tids;
	r.cfg.ntids = r.ntids;
	r.cfg.stop = &stop_sig;
	r.cfg.progress = !r.cfg.quiet && isatty(STDERR_FILENO);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	rc = pm_record_run(&r.cfg, &res);
	if (r.cfg.host_mntns > 0)
		close(r.cfg.host_mntns);
	free(r.pids);
	free(r.tids);
	if (rc != PM_REC_OK) {
		pm_error("%s", res.msg);
		return (int)res.err;
	}
	return res.exit_code;
}
