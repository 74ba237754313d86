#include "parse-opt.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

void pm_opt_help(FILE *f, const char *usage, const struct pm_opt *o)
{
	fprintf(f, "%s\n\n", usage);
	for (; o->name; o++) {
		char left[64];

		if (o->key < 256)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->key, o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		fprintf(f, "  %-26s %s\n", left, o->help);
	}
}

int pm_opt_parse(int argc, char **argv, const struct pm_opt *opts, const char *usage,
		 int stop_at_nonopt, int (*cb)(int key, const char *arg, void *ctx), void *ctx)
{
	struct option lo[64];
	char so[160];
	size_t n = 0, k = 0;
	const struct pm_opt *o;
	int c;

	so[k++] = stop_at_nonopt ? '+' : '-';
	so[k++] = ':';
	for (o = opts; o->name && n < PM_ARRAY_SIZE(lo) - 1; o++, n++) {
		lo[n].name = o->name;
		lo[n].has_arg = o->arg ? required_argument : no_argument;
		lo[n].flag = NULL;
		lo[n].val = o->key;
		if (o->key < 256 && k < sizeof(so) - 3) {
			so[k++] = (char)o->key;
			if (o->arg)
				so[k++] = ':';
		}
	}
	memset(&lo[n], 0, sizeof(lo[n]));
	so[k] = '\0';
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, so, lo, NULL)) != -1) {
		if (c == 1) {
			/* operand in permute-off mode ('-'): keep order; stop here */
			optind--;
			break;
		}
		if (c == '?') {
			if (optopt && optopt < 256)
				pm_error("unknown option '-%c'; see 'pmuprof %s --help'", optopt, argv[0]);
			else
				pm_error("unknown option '%s'; see 'pmuprof %s --help'", argv[optind - 1],
					 argv[0]);
			return -1;
		}
		if (c == ':') {
			pm_error("option '%s' needs a value; see 'pmuprof %s --help'", argv[optind - 1],
				 argv[0]);
			return -1;
		}
		if (c == 'h') {
			pm_opt_help(stdout, usage, opts);
			return -2;
		}
		if (cb(c, optarg, ctx) < 0)
			return -1;
	}
	return optind;
}

int pm_opt_u64(const char *s, unsigned long long *out)
{
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	return 0;
}

int pm_opt_double(const char *s, double *out)
{
	char *end;

	if (!s || !*s)
		return -1;
	errno = 0;
	*out = strtod(s, &end);
	if (errno || *end || !(*out >= 0) || *out > 1e9)
		return -1;
	return 0;
}
