/*
 * parse-opt: one option table per subcommand; getopt_long underneath, and
 * --help generated from the same table so the two cannot disagree.
 */
#ifndef PM_PARSE_OPT_H
#define PM_PARSE_OPT_H

#include <stdio.h>

struct pm_opt {
	int key;             /* short option letter, or a value >= 256 for long-only */
	const char *name;    /* long name */
	const char *arg;     /* argument name, NULL for a flag */
	const char *help;
};

#define PM_OPT_END { 0, NULL, NULL, NULL }

/*
 * Parse argv.  @cb gets (key, optarg, ctx) for each option and returns 0,
 * or -1 after printing an error (usage error).  Stops at "--" or the first
 * non-option when @stop_at_nonopt.  Returns the index of the first operand,
 * or -1 on a usage error (already reported), or -2 when --help was printed.
 */
int pm_opt_parse(int argc, char **argv, const struct pm_opt *opts, const char *usage,
		 int stop_at_nonopt, int (*cb)(int key, const char *arg, void *ctx), void *ctx);

void pm_opt_help(FILE *f, const char *usage, const struct pm_opt *opts);

/* Strict number parsing for option values: 0 or -1. */
int pm_opt_u64(const char *s, unsigned long long *out);
int pm_opt_double(const char *s, double *out);

#endif
