/* pmuprof report: read a pprof file, print the table or folded stacks. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "parse-opt.h"
#include "pprof.h"
#include "profile.h"
#include "report.h"
#include "util.h"

enum { OPT_FOLDED = 256, OPT_TOP, OPT_SAMPLE_INDEX };

static const struct pm_opt report_opts[] = {
	{ 'i', "input", "FILE", "pprof file to read (default pmuprof.pb.gz)" },
	{ OPT_FOLDED, "folded", NULL, "print folded stacks for flame graphs" },
	{ OPT_TOP, "top", "N", "rows in the table (default 30, 0 = all)" },
	{ 's', "sort", "KEY", "sort the table by self or cum (default self)" },
	{ OPT_SAMPLE_INDEX, "sample-index", "TYPE", "value to show: a sample type name or index" },
	{ 'h', "help", NULL, "show this help" },
	PM_OPT_END,
};

static const char report_usage[] =
	"usage: pmuprof report [OPTIONS]\n\n"
	"Print the hottest functions of a pprof profile (pmuprof's or Go's own), or\n"
	"its folded stacks: pmuprof report --folded | flamegraph.pl > cpu.svg";

struct repopts {
	const char *input;
	int folded;
	struct pm_report_opts ro;
	const char *sample_index;
};

static int report_opt(int key, const char *arg, void *ctx)
{
	struct repopts *r = ctx;
	unsigned long long v;

	switch (key) {
	case 'i':
		r->input = arg;
		break;
	case OPT_FOLDED:
		r->folded = 1;
		break;
	case OPT_TOP:
		if (pm_opt_u64(arg, &v) < 0 || v > 1000000000ULL) {
			pm_error("invalid --top '%s': must be a number of rows (0 = all)", arg);
			return -1;
		}
		r->ro.top = (size_t)v;
		break;
	case 's':
		if (strcmp(arg, "self") == 0)
			r->ro.sort = PM_SORT_SELF;
		else if (strcmp(arg, "cum") == 0)
			r->ro.sort = PM_SORT_CUM;
		else {
			pm_error("invalid sort key '%s': use self or cum", arg);
			return -1;
		}
		break;
	case OPT_SAMPLE_INDEX:
		r->sample_index = arg;
		break;
	}
	return 0;
}

int cmd_report(int argc, char **argv)
{
	struct repopts r;
	struct pm_profile *p;
	char err[512];
	int first, rc;

	/* a closed pipe (report | head) ends the report quietly: EPIPE below */
	signal(SIGPIPE, SIG_IGN);
	memset(&r, 0, sizeof(r));
	r.input = "pmuprof.pb.gz";
	r.ro.top = 30;
	r.ro.value_index = -1;
	first = pm_opt_parse(argc, argv, report_opts, report_usage, 1, report_opt, &r);
	if (first == -2)
		return 0;
	if (first < 0)
		return 2;
	if (first < argc) {
		pm_error("unexpected argument '%s'; give the file with -i", argv[first]);
		return 2;
	}
	err[0] = '\0';
	rc = pm_pprof_read(r.input, &p, err, sizeof(err));
	if (rc < 0) {
		if (rc == -ENOENT || rc == -EACCES || rc == -EISDIR)
			pm_error("cannot open '%s': %s", r.input, strerror(-rc));
		else
			pm_error("cannot read '%s': %s", r.input, err[0] ? err : strerror(-rc));
		return 1;
	}
	if (r.sample_index) {
		unsigned long long v;
		long idx = pm_prof_find_sample_type(p, r.sample_index);

		if (idx < 0 && pm_opt_u64(r.sample_index, &v) == 0 && v < pm_prof_nsample_types(p))
			idx = (long)v;
		if (idx < 0) {
			pm_error("no sample type '%s' in '%s'", r.sample_index, r.input);
			pm_prof_free(p);
			return 2;
		}
		r.ro.value_index = idx;
	}
	r.ro.title = r.input;
	rc = r.folded ? pm_report_folded(p, stdout, &r.ro) : pm_report_text(p, stdout, &r.ro);
	pm_prof_free(p);
	if (rc == 0 && fflush(stdout) != 0)
		rc = -errno;
	if (rc < 0 && rc != -EPIPE) {
		pm_error("cannot write the report: %s", strerror(-rc));
		return 1;
	}
	return 0;
}
