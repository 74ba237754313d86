/* pmuprof report: read a pprof file, print the table or folded stacks. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "parse-opt.h"
#include "capture/datafile.h"
#include "output/html.h"
#include "base/outfile.h"
#include "profile/pprof.h"
#include "profile/profile.h"
#include "session/record.h"
#include "output/report.h"
#include "base/util.h"

enum { OPT_FOLDED = 256, OPT_TOP, OPT_SAMPLE_INDEX, OPT_PPROF };

enum { OPT_NO_CREATORS = 320 }; /* goroutines */

enum { OPT_EVENT = 330 }; /* events */

enum { OPT_NO_KERNEL = 340 }; /* kernel frames */

enum { OPT_HTML = 350, OPT_DIFF_BASE, OPT_NODEFRACTION }; /* the flame-graph page */
enum { OPT_ALL_FRAMES = 360 }; /* the frames Go's tracebacks hide */

static const struct pm_opt report_opts[] = {
	{ 'i', "input", "FILE", "pprof file or capture to read (default pmuprof.pb.gz)" },
	{ OPT_FOLDED, "folded", NULL, "print folded stacks for flame graphs" },
	{ OPT_HTML, "html", NULL, "write an interactive flame-graph page (--html FILE, or -o FILE; default pmuprof.html)" },
	{ 'o', "output", "FILE", "write the report, folded stacks or page to FILE ('-': stdout)" },
	{ OPT_DIFF_BASE, "diff-base", "FILE", "with --html: colour the change against this base profile" },
	{ OPT_NODEFRACTION, "nodefraction", "F", "with --html: merge frames under this share of the total (0 = keep all)" },
	{ OPT_TOP, "top", "N", "rows in the table (default 30, 0 = all)" },
	{ 's', "sort", "KEY", "sort the table by self or cum (default self)" },
	{ OPT_SAMPLE_INDEX, "sample-index", "TYPE", "value to show: a sample type name or index" },
	{ OPT_EVENT, "event", "NAME", "show one event of a record -e a,b profile (its samples only)" },
	{ OPT_PPROF, "pprof", "FILE", "capture input: also write its profile as pprof to FILE" },
	{ OPT_NO_CREATORS, "no-creators", NULL, "leave out the creator frames of goroutines" },
	{ OPT_NO_KERNEL, "no-kernel", NULL, "fold kernel frames into the user frame that entered the kernel" },
	{ OPT_ALL_FRAMES, "all-frames", NULL,
	  "capture input: keep the frames Go's tracebacks hide (wrappers, runtime.goexit)" },
	{ 'h', "help", NULL, "show this help" },
	PM_OPT_END,
};

static const char report_usage[] =
	"usage: pmuprof report [OPTIONS]\n\n"
	"Print the hottest functions of a pprof profile (pmuprof's or Go's own), or\n"
	"its folded stacks: pmuprof report --folded | flamegraph.pl > cpu.svg\n"
	"or write a self-contained flame-graph page: pmuprof report --html cpu.html\n"
	"A capture (record with a raw file) is processed first, as record would.";

struct repopts {
	const char *input;
	int folded;
	struct pm_report_opts ro;
	const char *sample_index;
	const char *event;
	const char *pprof;
	int no_creators;
	int no_kernel;
	int html;
	const char *output;
	const char *diff_base;
	double node_fraction;
	int all_frames;
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
	case OPT_EVENT:
		r->event = arg;
		break;
	case OPT_NO_CREATORS:
		r->no_creators = 1;
		break;
	case OPT_NO_KERNEL:
		r->no_kernel = 1;
		break;
	case OPT_ALL_FRAMES:
		r->all_frames = 1;
		break;
	case OPT_PPROF:
		r->pprof = arg;
		break;
	case OPT_HTML:
		r->html = 1;
		break;
	case 'o':
		if (!*arg) {
			pm_error("-o needs a file name ('-' for stdout)");
			return -1;
		}
		r->output = arg;
		break;
	case OPT_DIFF_BASE:
		r->diff_base = arg;
		break;
	case OPT_NODEFRACTION:
		if (pm_opt_double(arg, &r->node_fraction) < 0 || !(r->node_fraction >= 0) ||
		    r->node_fraction > 1) {
			pm_error("invalid --nodefraction '%s': must be a share between 0 and 1", arg);
			return -1;
		}
		break;
	}
	return 0;
}

/* 1 when @path starts with the capture magic, else 0 (errors: left to the reader). */
static int is_capture(const char *path)
{
	uint8_t magic[8];
	FILE *f = fopen(path, "rbe");
	size_t n;

	if (!f)
		return 0;
	n = fread(magic, 1, sizeof(magic), f);
	fclose(f);
	return pm_data_is_capture(magic, n);
}

/* A location in a mapping named @arg exactly, or (a trailing '*') starting so. */
static bool in_mapping(const struct pm_profile *in, const struct pm_prof_loc *l, void *arg)
{
	const struct pm_prof_mapping *m = pm_prof_mapping_by_id(in, l->mapping_id);
	const char *name = arg;
	size_t n = strlen(name);

	if (!m || !m->file)
		return false;
	if (n && name[n - 1] == '*')
		return strncmp(m->file, name, n - 1) == 0;
	return strcmp(m->file, name) == 0;
}

/*
 * @p, or its copy without the creator frames (--no-creators: the
 * "[creators]" mapping, goroutine.h) or the kernel's (--no-kernel: their
 * time stays with the user frame that entered the kernel), @p freed.
 */
static struct pm_profile *maybe_strip(const struct repopts *r, struct pm_profile *p)
{
	struct pm_profile *q;

	if (r->no_creators) {
		q = pm_prof_without(p, in_mapping, (void *)"[creators]", "[creators]"); /* totals kept */
		pm_prof_free(p);
		p = q;
	}
	if (r->no_kernel) {
		q = pm_prof_without(p, in_mapping, (void *)"[kernel*", "[kernel]");
		pm_prof_free(p);
		p = q;
	}
	return p;
}

/*
 * The sample type of event @name: the type named after it (record -e a,b),
 * or the one event of a profile whose record comment names it (cpu-clock
 * is "cpu/nanoseconds" then); -1 when none.
 */
static long event_index(const struct pm_profile *p, const char *name)
{
	long idx = strcmp(name, "samples") ? pm_prof_find_sample_type(p, name) : -1;
	size_t i, nev = 0, len = strlen(name);
	bool named = false;

	if (idx >= 0)
		return idx;
	for (i = 0; i < pm_prof_ncomments(p); i++) {
		const char *c = pm_prof_comment(p, i);

		if (strncmp(c, "pmuprof record: event ", 22))
			continue;
		nev++;
		named = named || (!strncmp(c + 22, name, len) && c[22 + len] == ',');
	}
	return nev == 1 && named && pm_prof_nsample_types(p) > 1 ? (long)pm_prof_default_type(p)
								 : -1;
}

/* --sample-index / --event into r->ro.value_index.  0, or 2 with the error said. */
static int pick_index(struct repopts *r, const struct pm_profile *p)
{
	unsigned long long v;
	long idx;
	size_t i;

	if (r->event) {
		char list[512] = "";

		idx = event_index(p, r->event);
		if (idx >= 0) {
			r->ro.value_index = idx;
			return 0;
		}
		for (i = 0; i < pm_prof_nsample_types(p); i++) {
			const char *t = pm_prof_sample_type(p, i)->type;
			size_t k = strlen(list);

			if (strcmp(t, "samples"))
				snprintf(list + k, sizeof(list) - k, "%s%s", k ? ", " : "", t);
		}
		pm_error("no event '%s' in '%s' (it has: %s)", r->event, r->input,
			 list[0] ? list : "none");
		return 2;
	}
	if (!r->sample_index)
		return 0;
	idx = pm_prof_find_sample_type(p, r->sample_index);
	if (idx < 0 && pm_opt_u64(r->sample_index, &v) == 0 && v < pm_prof_nsample_types(p))
		idx = (long)v;
	if (idx < 0) {
		pm_error("no sample type '%s' in '%s'", r->sample_index, r->input);
		return 2;
	}
	r->ro.value_index = idx;
	return 0;
}

/* Write @len bytes of @buf to -o's file (whole or not at all) or stdout.  0 or 1. */
static int emit(const struct repopts *r, const char *buf, size_t len)
{
	struct pm_outfile f = PM_OUTFILE_INIT;
	int rc;

	if (!r->output || strcmp(r->output, "-") == 0) {
		if (len && fwrite(buf, 1, len, stdout) != len)
			rc = -errno;
		else
			rc = fflush(stdout) ? -errno : 0;
		if (rc < 0 && rc != -EPIPE) {
			pm_error("cannot write the report: %s", strerror(-rc));
			return 1;
		}
		return 0;
	}
	rc = pm_outfile_open(&f, r->output, NULL);
	if (!rc)
		rc = pm_write_all(f.fd, buf, len);
	if (!rc)
		rc = pm_outfile_commit(&f);
	pm_outfile_abort(&f);
	if (rc) {
		pm_error("cannot write '%s': %s", r->output, strerror(-rc));
		return 1;
	}
	if (r->html)
		pm_info("wrote %s (%zu bytes)", r->output, len);
	return 0;
}

/* The base of --diff-base, stripped as the profile is; NULL with the error said. */
static struct pm_profile *read_base(const struct repopts *r)
{
	struct pm_profile *b;
	char err[512] = "";
	int rc;

	if (is_capture(r->diff_base)) {
		pm_error("--diff-base '%s' is a capture: give its profile (report -i CAPTURE --pprof FILE)",
			 r->diff_base);
		return NULL;
	}
	rc = pm_pprof_read(r->diff_base, &b, err, sizeof(err));
	if (rc < 0) {
		if (rc == -ENOENT || rc == -EACCES || rc == -EISDIR)
			pm_error("cannot open '%s': %s", r->diff_base, strerror(-rc));
		else
			pm_error("cannot read '%s': %s", r->diff_base, err[0] ? err : strerror(-rc));
		return NULL;
	}
	return maybe_strip(r, b);
}

static int render_html(struct repopts *r, struct pm_profile *p)
{
	struct pm_html_opts ho = { r->ro.value_index, r->node_fraction, r->input, r->diff_base };
	struct pm_profile *base = NULL;
	char err[256] = "", *buf = NULL;
	size_t len = 0;
	int rc;

	if (r->diff_base && !(base = read_base(r)))
		return 1;
	rc = pm_html_render(p, base, &ho, &buf, &len, err, sizeof(err));
	pm_prof_free(base);
	if (rc) {
		pm_error("cannot draw '%s': %s", r->input, err);
		return 2;
	}
	rc = emit(r, buf, len);
	free(buf);
	return rc;
}

static int render(struct repopts *r, struct pm_profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	if (r->html)
		return render_html(r, p);
	r->ro.title = r->input;
	if (!r->output || strcmp(r->output, "-") == 0)
		f = stdout;
	else if (!(f = open_memstream(&buf, &len))) {
		pm_error("cannot write the report: %s", strerror(errno));
		return 1;
	}
	rc = r->folded ? pm_report_folded(p, f, &r->ro) : pm_report_text(p, f, &r->ro);
	if (f == stdout) {
		if (rc == 0 && fflush(stdout) != 0)
			rc = -errno;
		if (rc < 0 && rc != -EPIPE) {
			pm_error("cannot write the report: %s", strerror(-rc));
			return 1;
		}
		return 0;
	}
	fclose(f);
	rc = emit(r, buf, len);
	free(buf);
	return rc;
}

/* A --raw capture: process it as record would, then render. */
static int report_capture(struct repopts *r)
{
	struct pm_record_result res;
	struct pm_profile *p;
	int rc;

	if (pm_record_replay(r->input, &p, &res, r->all_frames) != PM_REC_OK) {
		pm_error("cannot read '%s': %s", r->input, res.msg);
		return 1;
	}
	p = maybe_strip(r, p);
	if (getenv("PMUPROF_REPLAY_STATS"))
		pm_info("replayed %" PRIu64 " records, %" PRIu64 " samples in %.3f s: %.0f samples/s",
			res.records, res.samples, res.seconds,
			res.seconds > 0 ? (double)res.samples / res.seconds : 0.0);
	if (r->pprof) {
		rc = pm_pprof_write(p, r->pprof, NULL);
		if (rc) {
			pm_error("cannot write '%s': %s", r->pprof, strerror(-rc));
			pm_prof_free(p);
			return 1;
		}
	}
	rc = pick_index(r, p);
	if (!rc)
		rc = render(r, p);
	pm_prof_free(p);
	return rc;
}

int cmd_report(int argc, char **argv)
{
	struct repopts r;
	struct pm_profile *p;
	const char *operand = NULL;
	char err[512], **av;
	int first, rc, ac;

	/* a closed pipe (report | head) ends the report quietly: EPIPE below */
	signal(SIGPIPE, SIG_IGN);
	memset(&r, 0, sizeof(r));
	r.input = "pmuprof.pb.gz";
	r.ro.top = 30;
	r.ro.value_index = -1;
	r.node_fraction = -1;
	/* --html FILE: one operand, the page's file, wherever it is among the options */
	av = xcalloc((size_t)argc + 1, sizeof(*av));
	for (ac = 0; ac < argc; ac++)
		av[ac] = argv[ac];
	for (;;) {
		first = pm_opt_parse(ac, av, report_opts, report_usage, 1, report_opt, &r);
		if (first < 0 || first >= ac)
			break;
		if (operand) {
			pm_error("unexpected argument '%s' after '%s'; give the file with -i",
				 av[first], operand);
			free(av);
			return 2;
		}
		operand = av[first];
		memmove(av + 1, av + first + 1, (size_t)(ac - first) * sizeof(*av));
		ac -= first;
	}
	if (first >= 0 && operand && !r.html) {
		pm_error("unexpected argument '%s'; give the file with -i (a page's file after --html)",
			 operand);
		free(av);
		return 2;
	}
	free(av);
	if (first == -2)
		return 0;
	if (first < 0)
		return 2;
	if (r.event && r.sample_index) {
		pm_error("--event and --sample-index both choose the value: give one");
		return 2;
	}
	if (operand && r.output) {
		pm_error("--html '%s' and -o '%s' both name the page's file: give one", operand, r.output);
		return 2;
	}
	if (operand)
		r.output = operand;
	if (r.html && r.folded) {
		pm_error("--html and --folded are two outputs: give one");
		return 2;
	}
	if (!r.html && (r.diff_base || r.node_fraction >= 0)) {
		pm_error("%s draws the --html page: add --html",
			 r.diff_base ? "--diff-base" : "--nodefraction");
		return 2;
	}
	if (r.html && !r.output)
		r.output = "pmuprof.html";
	err[0] = '\0';
	rc = is_capture(r.input);
	if (rc == 1)
		return report_capture(&r);
	if (r.pprof) {
		pm_error("--pprof needs a capture of pmuprof record --raw as input");
		return 2;
	}
	if (r.all_frames) {
		pm_error("--all-frames needs a capture of pmuprof record --raw as input (a profile "
			 "keeps the frames it was written with: record --all-frames)");
		return 2;
	}
	rc = pm_pprof_read(r.input, &p, err, sizeof(err));
	if (rc < 0) {
		if (rc == -ENOENT || rc == -EACCES || rc == -EISDIR)
			pm_error("cannot open '%s': %s", r.input, strerror(-rc));
		else
			pm_error("cannot read '%s': %s", r.input, err[0] ? err : strerror(-rc));
		return 1;
	}
	rc = pick_index(&r, p);
	if (rc) {
		pm_prof_free(p);
		return rc;
	}
	p = maybe_strip(&r, p);
	rc = render(&r, p);
	pm_prof_free(p);
	return rc;
}
