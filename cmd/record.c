/* pmuprof record: parse options, hand them to lib/record. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "events.h"
#include "parse-opt.h"
#include "record.h"
#include "util.h"

enum { OPT_DURATION = 256, OPT_STACK_SIZE };

static const struct pm_opt record_opts[] = {
	{ 'e', "event", "EVENT", "event to sample (default cycles; cpu-clock without a PMU)" },
	{ 'F', "freq", "HZ", "samples per second (default 1000)" },
	{ 'c', "count", "PERIOD", "sample every PERIOD events instead of -F" },
	{ 'o', "output", "FILE", "pprof output file (default pmuprof.pb.gz)" },
	{ OPT_DURATION, "duration", "SECS", "stop after SECS seconds" },
	{ OPT_STACK_SIZE, "stack-size", "BYTES", "user stack bytes copied per sample (default 16384)" },
	{ 'q', "quiet", NULL, "no summary line" },
	{ 'h', "help", NULL, "show this help" },
	PM_OPT_END,
};

static const char record_usage[] =
	"usage: pmuprof record [OPTIONS] [--] CMD [ARGS...]\n\n"
	"Run CMD and sample it with perf_event_open: every thread it starts, until it\n"
	"exits, --duration passes, or SIGINT/SIGTERM (forwarded to CMD). Writes pprof.\n"
	"Exit status: CMD's; 1 on an error; 2 on a usage error; 126/127 when CMD\n"
	"cannot be run.";

static volatile sig_atomic_t stop_sig;

static void on_signal(int sig)
{
	stop_sig = sig;
}

struct ropts {
	struct pm_record_cfg cfg;
	int freq_given, count_given;
};

static int record_opt(int key, const char *arg, void *ctx)
{
	struct ropts *r = ctx;
	unsigned long long v;
	long max;
	double d;

	switch (key) {
	case 'e':
		r->cfg.event = arg;
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
		r->cfg.freq = v;
		r->freq_given = 1;
		break;
	case 'c':
		if (pm_opt_u64(arg, &v) < 0 || v == 0 || v > (1ULL << 62)) {
			pm_error("invalid period '%s': must be 1..2^62 events", arg);
			return -1;
		}
		r->cfg.period = v;
		r->count_given = 1;
		break;
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
	case OPT_STACK_SIZE:
		if (pm_opt_u64(arg, &v) < 0 || v > 65528 || v % 8) {
			pm_error("invalid stack size '%s': must be a multiple of 8, 0..65528", arg);
			return -1;
		}
		r->cfg.stack_size = (uint32_t)v;
		break;
	case 'q':
		r->cfg.quiet = true;
		break;
	}
	return 0;
}

int cmd_record(int argc, char **argv)
{
	struct ropts r;
	struct pm_record_result res;
	struct sigaction sa;
	int first;

	memset(&r, 0, sizeof(r));
	r.cfg.stack_size = PM_RECORD_DEFAULT_STACK;
	first = pm_opt_parse(argc, argv, record_opts, record_usage, 1, record_opt, &r);
	if (first == -2)
		return 0;
	if (first < 0)
		return 2;
	if (r.freq_given && r.count_given) {
		pm_error("-F and -c are exclusive: sample by frequency or by period, not both");
		return 2;
	}
	if (first >= argc) {
		pm_error("no command to run; usage: pmuprof record [OPTIONS] -- CMD [ARGS...]");
		return 2;
	}
	r.cfg.argv = argv + first;
	r.cfg.stop = &stop_sig;
	r.cfg.progress = !r.cfg.quiet && isatty(STDERR_FILENO);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (pm_record_run(&r.cfg, &res) != PM_REC_OK) {
		pm_error("%s", res.msg);
		return (int)res.err;
	}
	return res.exit_code;
}
