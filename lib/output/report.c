/*
 * report: the perf-style table and folded stacks.
 *
 * Both walk every sample's stack expanded into frames: each Location gives
 * one frame per Line (its inlined callees and then its physical caller), so
 * an inlined function is a frame of its own.  A Location without lines (an
 * unsymbolized address) is one frame named after its address, as
 * "module+0x<file offset>" when its mapping has a file, else "0x<address>".
 */
#include "output/report.h"

#include "profile/profile.h"
#include "base/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- output with the first error remembered ---- */

struct out {
	FILE *f;
	int err;
};

static void outf(struct out *o, const char *fmt, ...) PM_PRINTF(2, 3);
static void outf(struct out *o, const char *fmt, ...)
{
	va_list ap;

	char sb[4096], *b = sb, *line, *nl;
	int n;

	if (o->err)
		return;
	va_start(ap, fmt);
	n = vsnprintf(sb, sizeof(sb), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(sb)) {
		va_start(ap, fmt);
		n = vasprintf(&b, fmt, ap);
		va_end(ap);
	}
	if (n < 0) {
		o->err = -EIO;
		return;
	}
	/* a safety net under text_name(): no byte a name brought can drive the terminal */
	errno = 0;
	for (line = b; line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (fputs(pm_sanitize(line), o->f) < 0 || (nl && putc('\n', o->f) == EOF)) {
			o->err = errno ? -errno : -EIO;
			break;
		}
	}
	if (b != sb)
		free(b);
}

static int out_end(struct out *o)
{
	if (!o->err) {
		errno = 0;
		if (fflush(o->f) != 0 || ferror(o->f))
			o->err = errno ? -errno : -EIO;
	}
	return o->err;
}

/* ---- names ---- */

char *pm_report_folded_name(const char *name, char *buf, size_t len)
{
	size_t i;

	if (!len)
		return buf;
	for (i = 0; name && name[i] && i + 1 < len; i++)
		buf[i] = name[i] == ';' ? ':' : name[i];
	buf[i] = '\0';
	return pm_sanitize(buf);
}

/* A heap copy of @s made safe for a terminal (pm_sanitize()), for the table. */
static char *text_name(const char *s)
{
	return pm_sanitize(xstrdup(s));
}

char *pm_report_addr_name(const struct pm_profile *p, const struct pm_prof_loc *l)
{
	const struct pm_prof_mapping *m = l ? pm_prof_mapping_by_id(p, l->mapping_id) : NULL;
	uint64_t addr = l ? l->address : 0;

	if (m && m->file && *m->file) {
		const char *base = strrchr(m->file, '/');
		uint64_t off = addr >= m->start ? addr - m->start + m->offset : addr;
		char *name;

		base = base && base[1] ? base + 1 : m->file;
		name = xasprintf("%s+0x%" PRIx64, base, off);
		return pm_sanitize(name);
	}
	return xasprintf("0x%" PRIx64, addr);
}

static const struct pm_prof_func *line_func(const struct pm_profile *p,
					    const struct pm_prof_line *ln)
{
	const struct pm_prof_func *f = pm_prof_func_by_id(p, ln->func_id);

	return f && f->name && *f->name ? f : NULL;
}

/* The value index to show, or -1 if @o names one the profile does not have. */
static long pick_value(const struct pm_profile *p, const struct pm_report_opts *o, bool folded)
{
	size_t n = pm_prof_nsample_types(p);

	if (o && o->value_index >= 0)
		return (size_t)o->value_index < n ? o->value_index : -1;
	if (!n)
		return -1;
	if (folded) {
		long s = pm_prof_find_sample_type(p, "samples");

		if (s >= 0)
			return s;
	}
	return (long)pm_prof_default_type(p);
}

/* ---- humanised values ---- */

static void human(char *buf, size_t len, int64_t v, const char *unit)
{
	double ns = (double)v, a;
	int64_t mul = 0;

	if (!unit)
		unit = "";
	if (strcmp(unit, "nanoseconds") == 0)
		mul = 1;
	else if (strcmp(unit, "microseconds") == 0)
		mul = 1000;
	else if (strcmp(unit, "milliseconds") == 0)
		mul = 1000000;
	else if (strcmp(unit, "seconds") == 0)
		mul = 1000000000;
	if (mul) {
		ns *= (double)mul;
		a = ns < 0 ? -ns : ns;
		if (a < 1e3)
			snprintf(buf, len, "%.0f ns", ns);
		else if (a < 1e6)
			snprintf(buf, len, "%.2f us", ns / 1e3);
		else if (a < 1e9)
			snprintf(buf, len, "%.2f ms", ns / 1e6);
		else
			snprintf(buf, len, "%.2f s", ns / 1e9);
		return;
	}
	if (strcmp(unit, "bytes") == 0) {
		static const char *const sfx[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
		double b = (double)v;
		int i = -1;

		a = b < 0 ? -b : b;
		if (a < 1024) {
			snprintf(buf, len, "%" PRId64 " B", v);
			return;
		}
		do {
			a /= 1024;
			b /= 1024;
			i++;
		} while (a >= 1024 && i + 1 < (int)PM_ARRAY_SIZE(sfx));
		snprintf(buf, len, "%.2f %s", b, sfx[i]);
		return;
	}
	if (!*unit || strcmp(unit, "count") == 0)
		snprintf(buf, len, "%" PRId64, v);
	else
		snprintf(buf, len, "%" PRId64 " %s", v, unit);
}

/* ---- the table ---- */

struct row {
	size_t key;
	int64_t self, cum, count;
	char *name;
	const char *file;
	int64_t line;
};

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int cmp_i64_desc(int64_t a, int64_t b)
{
	return a > b ? -1 : a < b ? 1 : 0;
}

static int cmp_last(const struct row *a, const struct row *b)
{
	int c = cmp_str(a->file, b->file);

	if (c)
		return c;
	return a->key < b->key ? -1 : a->key > b->key;
}

static int cmp_self(const void *va, const void *vb)
{
	const struct row *a = va, *b = vb;
	int c = cmp_i64_desc(a->self, b->self);

	if (!c)
		c = cmp_i64_desc(a->cum, b->cum);
	if (!c)
		c = strcmp(a->name, b->name);
	return c ? c : cmp_last(a, b);
}

static int cmp_cum(const void *va, const void *vb)
{
	const struct row *a = va, *b = vb;
	int c = cmp_i64_desc(a->cum, b->cum);

	if (!c)
		c = cmp_i64_desc(a->self, b->self);
	if (!c)
		c = strcmp(a->name, b->name);
	return c ? c : cmp_last(a, b);
}

static int cmp_name(const void *va, const void *vb)
{
	const struct row *a = va, *b = vb;
	int c = strcmp(a->name, b->name);

	if (!c)
		c = cmp_i64_desc(a->self, b->self);
	if (!c)
		c = cmp_i64_desc(a->cum, b->cum);
	return c ? c : cmp_last(a, b);
}

static double pct(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

static void text_header(const struct pm_profile *p, struct out *o,
			const struct pm_report_opts *opts, long vi, int64_t total, int64_t nsamp,
			bool have_count)
{
	size_t nt = pm_prof_nsample_types(p), i;
	const struct pm_prof_vtype *pt = pm_prof_period_type(p);
	char buf[64];

	if (opts && opts->title)
		outf(o, "# pmuprof report: %s\n", opts->title);
	else
		outf(o, "# pmuprof report\n");
	outf(o, "# sample types:");
	for (i = 0; i < nt; i++) {
		const struct pm_prof_vtype *t = pm_prof_sample_type(p, i);
		char *ty = text_name(t->type), *un = text_name(t->unit);

		outf(o, "%s %s/%s%s", i ? "," : "", ty, un, (long)i == vi ? " (shown)" : "");
		free(ty);
		free(un);
	}
	outf(o, "%s\n", nt ? "" : " none");
	if (have_count)
		outf(o, "# total samples: %" PRId64 "\n", nsamp);
	else
		outf(o, "# distinct stacks: %" PRId64 "\n", nsamp);
	if (vi >= 0 && !(have_count && vi == pm_prof_find_sample_type(p, "samples"))) {
		const struct pm_prof_vtype *t = pm_prof_sample_type(p, (size_t)vi);

		human(buf, sizeof(buf), total, t->unit);
		outf(o, "# total %s: %s\n", t->type, buf);
	}
	if (pt && pm_prof_period(p)) {
		human(buf, sizeof(buf), pm_prof_period(p), pt->unit);
		outf(o, "# period: %s%s%s\n", buf, *pt->type ? " of " : "", pt->type);
	}
	if (pm_prof_time(p) > 0) {
		time_t t = (time_t)(pm_prof_time(p) / 1000000000);
		struct tm tm;

		if (gmtime_r(&t, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm))
			outf(o, "# time: %s\n", buf);
	}
	if (pm_prof_duration(p)) {
		human(buf, sizeof(buf), pm_prof_duration(p), "nanoseconds");
		outf(o, "# duration: %s\n", buf);
	}
	for (i = 0; i < pm_prof_ncomments(p); i++) {
		char *c = text_name(pm_prof_comment(p, i));

		outf(o, "# %s\n", c);
		free(c);
	}
	outf(o, "#\n");
}

int pm_report_header(const struct pm_profile *p, FILE *f, const struct pm_report_opts *opts)
{
	struct out o = { f, 0 };
	long vi = pick_value(p, opts, false), ci = pm_prof_find_sample_type(p, "samples");
	bool have_count = ci >= 0;
	int64_t total = 0, nsamp = 0;
	size_t i;

	if (opts && opts->value_index >= 0 && vi < 0)
		return -EINVAL;
	if (ci < 0)
		ci = vi;
	for (i = 0; i < pm_prof_nsamples(p); i++) {
		const struct pm_prof_sample *s = pm_prof_sample_at(p, i);
		int64_t v = vi >= 0 ? s->values[vi] : 0, c = ci >= 0 ? s->values[ci] : 0;

		if (vi >= 0 && !v)
			continue;
		total = pm_add_sat(total, v);
		nsamp = pm_add_sat(nsamp, have_count ? c : 1);
	}
	text_header(p, &o, opts, vi, total, nsamp, have_count);
	return out_end(&o);
}

/*
 * A goroutine wall profile (record --wall): the value shown by the labels
 * state and wait_reason, heaviest first, as comment lines; nothing when
 * no sample has a state label.
 */
static void state_table(const struct pm_profile *p, struct out *o, long vi, int64_t total)
{
	struct grp {
		const char *state, *reason;
		int64_t v;
	} g[64];
	size_t ng = 0, i, j, over = 0;
	char buf[64];

	if (vi < 0)
		return;
	for (i = 0; i < pm_prof_nsamples(p); i++) {
		const struct pm_prof_sample *sm = pm_prof_sample_at(p, i);
		const char *st = NULL, *rs = "";

		for (j = 0; j < sm->nlabels; j++) {
			if (sm->labels[j].str && strcmp(sm->labels[j].key, "state") == 0)
				st = sm->labels[j].str;
			else if (sm->labels[j].str && strcmp(sm->labels[j].key, "wait_reason") == 0)
				rs = sm->labels[j].str;
		}
		if (!st || !sm->values[vi])
			continue;
		for (j = 0; j < ng && (strcmp(g[j].state, st) || strcmp(g[j].reason, rs)); j++)
			;
		if (j == ng) {
			if (ng == PM_ARRAY_SIZE(g)) {
				over = pm_add_sat((int64_t)over, sm->values[vi]);
				continue;
			}
			g[ng].state = st;
			g[ng].reason = rs;
			g[ng++].v = 0;
		}
		g[j].v = pm_add_sat(g[j].v, sm->values[vi]);
	}
	if (!ng)
		return;
	for (i = 1; i < ng; i++) /* heaviest first (few rows: insertion sort) */
		for (j = i; j > 0 && g[j].v > g[j - 1].v; j--) {
			struct grp t = g[j];

			g[j] = g[j - 1];
			g[j - 1] = t;
		}
	outf(o, "# by state and wait reason:\n");
	for (i = 0; i < ng; i++) {
		char *r = text_name(g[i].reason), *st = text_name(g[i].state);

		human(buf, sizeof(buf), g[i].v, pm_prof_sample_type(p, (size_t)vi)->unit);
		outf(o, "# %7.2f%%  %-10s %-28s %s\n", pct(g[i].v, total), st, *r ? r : "-", buf);
		free(r);
		free(st);
	}
	if (over)
		outf(o, "# %7.2f%%  (more states and reasons)\n", pct((int64_t)over, total));
	outf(o, "#\n");
}

struct named_loc {
	char *name;
	size_t i;
};

static int cmp_named_loc(const void *va, const void *vb)
{
	const struct named_loc *a = va, *b = vb;
	int c = strcmp(a->name, b->name);

	return c ? c : (a->i > b->i) - (a->i < b->i);
}

/*
 * For each location index, the first location index with the same address
 * name: code mapped again at another address (or another mapping of the
 * same file) gives new locations that must still be one row, as they are
 * one frame in the folded stacks.
 */
static size_t *loc_canon(const struct pm_profile *p)
{
	size_t n = pm_prof_nlocs(p), i, first = 0;
	struct named_loc *v = xcalloc(n + 1, sizeof(*v));
	size_t *canon = xcalloc(n + 1, sizeof(*canon));

	for (i = 0; i < n; i++) {
		v[i].name = pm_report_addr_name(p, pm_prof_loc_at(p, i));
		v[i].i = i;
	}
	qsort(v, n, sizeof(*v), cmp_named_loc);
	for (i = 0; i < n; i++) {
		if (i == 0 || strcmp(v[i].name, v[first].name) != 0)
			first = i;
		canon[v[i].i] = v[first].i;
	}
	for (i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	return canon;
}

/* Row key of frame @j of location @l: its function's index, or past them, the location's. */
static size_t frame_key(const struct pm_profile *p, const struct pm_prof_loc *l, size_t j,
			const size_t *canon)
{
	const struct pm_prof_func *f = j < l->nlines ? line_func(p, &l->lines[j]) : NULL;

	return f ? (size_t)(f->id - 1) : pm_prof_nfuncs(p) + canon[l->id - 1];
}

int pm_report_text(const struct pm_profile *p, FILE *f, const struct pm_report_opts *opts)
{
	struct out o = { f, 0 };
	size_t nf = pm_prof_nfuncs(p), nk = nf + pm_prof_nlocs(p), ns = pm_prof_nsamples(p);
	size_t nrows = 0, i, j, k, top, width = 8;
	long vi = pick_value(p, opts, false), ci;
	int64_t *self, *cum, *count, total = 0, nsamp = 0;
	size_t *stamp, *canon;
	struct row *rows;
	bool have_count;

	if (opts && opts->value_index >= 0 && vi < 0)
		return -EINVAL;
	ci = pm_prof_find_sample_type(p, "samples");
	have_count = ci >= 0;
	if (ci < 0)
		ci = vi;

	self = xcalloc(nk + 1, sizeof(*self));
	cum = xcalloc(nk + 1, sizeof(*cum));
	count = xcalloc(nk + 1, sizeof(*count));
	stamp = xcalloc(nk + 1, sizeof(*stamp));
	canon = loc_canon(p);
	for (i = 0; i < ns; i++) {
		const struct pm_prof_sample *s = pm_prof_sample_at(p, i);
		int64_t v = vi >= 0 ? s->values[vi] : 0, c = ci >= 0 ? s->values[ci] : 0;
		bool leaf = true;

		if (vi >= 0 && !v)
			continue; /* another event's sample (record -e a,b) */
		total = pm_add_sat(total, v);
		nsamp = pm_add_sat(nsamp, have_count ? c : 1);
		for (j = 0; j < s->nlocs; j++) {
			const struct pm_prof_loc *l = pm_prof_loc_by_id(p, s->loc_ids[j]);
			size_t nfr;

			if (!l)
				continue;
			nfr = l->nlines ? l->nlines : 1;
			for (k = 0; k < nfr; k++) {
				size_t key = frame_key(p, l, k, canon);

				if (leaf) {
					self[key] = pm_add_sat(self[key], v);
					count[key] = pm_add_sat(count[key], c);
					leaf = false;
				}
				/* once per sample per function, however deep the recursion */
				if (stamp[key] != i + 1) {
					stamp[key] = i + 1;
					cum[key] = pm_add_sat(cum[key], v);
				}
			}
		}
	}

	rows = xcalloc(nk + 1, sizeof(*rows));
	for (i = 0; i < nk; i++) {
		struct row *r;

		if (!stamp[i])
			continue;
		r = &rows[nrows++];
		r->key = i;
		r->self = self[i];
		r->cum = cum[i];
		r->count = count[i];
		if (i < nf) {
			const struct pm_prof_func *fn = pm_prof_func_at(p, i);

			r->name = text_name(fn->name);
			r->file = fn->file;
			r->line = fn->start_line;
		} else {
			r->name = pm_report_addr_name(p, pm_prof_loc_at(p, i - nf));
		}
	}
	if (nrows) {
		int (*cmp)(const void *, const void *) = cmp_self;

		if (opts && opts->sort == PM_SORT_CUM)
			cmp = cmp_cum;
		else if (opts && opts->sort == PM_SORT_NAME)
			cmp = cmp_name;
		qsort(rows, nrows, sizeof(*rows), cmp);
	}
	top = opts && opts->top && opts->top < nrows ? opts->top : nrows;
	for (i = 0; i < top; i++)
		width = PM_MAX(width, strlen(rows[i].name));
	width = PM_MIN(width, 60);

	text_header(p, &o, opts, vi, total, nsamp, have_count);
	state_table(p, &o, vi, total);
	outf(&o, "%8s %8s %9s  %-*s  %s\n", "Self%", "Cum%", "Samples", (int)width, "Function",
	     "File:Line");
	for (i = 0; i < top; i++) {
		const struct row *r = &rows[i];

		if (r->file && *r->file) {
			char *file = text_name(r->file);

			if (r->line > 0)
				outf(&o, "%7.2f%% %7.2f%% %9" PRId64 "  %-*s  %s:%" PRId64 "\n",
				     pct(r->self, total), pct(r->cum, total), r->count, (int)width,
				     r->name, file, r->line);
			else
				outf(&o, "%7.2f%% %7.2f%% %9" PRId64 "  %-*s  %s\n",
				     pct(r->self, total), pct(r->cum, total), r->count, (int)width,
				     r->name, file);
			free(file);
		} else {
			outf(&o, "%7.2f%% %7.2f%% %9" PRId64 "  %s\n", pct(r->self, total),
			     pct(r->cum, total), r->count, r->name);
		}
	}

	for (i = 0; i < nrows; i++)
		free(rows[i].name);
	free(rows);
	free(self);
	free(cum);
	free(count);
	free(stamp);
	free(canon);
	return out_end(&o);
}

/* ---- folded stacks ---- */

static void sb_folded(struct pm_sb *b, const char *name)
{
	size_t n = strlen(name);

	PM_GROW(b->s, b->cap, b->len + n + 1);
	pm_report_folded_name(name, b->s + b->len, n + 1);
	b->len += n;
}

/* A location's frames root-most first (physical caller, then its inlined callees). */
static char *loc_fragment(const struct pm_profile *p, const struct pm_prof_loc *l)
{
	const struct pm_prof_mapping *m;
	struct pm_sb b = { 0 };
	bool kernel;
	size_t j;

	if (!l->nlines) {
		char *n = pm_report_addr_name(p, l);

		sb_folded(&b, n);
		free(n);
		return b.s;
	}
	m = pm_prof_mapping_by_id(p, l->mapping_id);
	kernel = m && m->file && strncmp(m->file, "[kernel", 7) == 0;
	for (j = l->nlines; j-- > 0;) {
		const struct pm_prof_func *f = line_func(p, &l->lines[j]);

		if (b.len)
			pm_sb_add(&b, ";", 1);
		if (f) {
			sb_folded(&b, f->name);
			/* flame-graph tools colour kernel frames by this suffix */
			if (kernel)
				pm_sb_add(&b, "_[k]", 4);
		} else {
			char *n = pm_report_addr_name(p, l);

			sb_folded(&b, n);
			free(n);
		}
	}
	return b.s;
}

struct stack {
	char *s;
	int64_t count;
};

struct fold {
	struct stack *v;
	size_t n, cap;
	size_t *tab; /* index + 1 */
	uint64_t *hash;
	size_t tcap;
};

static void fold_put_raw(struct fold *fd, uint64_t h, size_t ix)
{
	size_t mask = fd->tcap - 1, i;

	for (i = h & mask; fd->tab[i]; i = (i + 1) & mask)
		;
	fd->tab[i] = ix;
	fd->hash[i] = h;
}

static void fold_add(struct fold *fd, const char *s, size_t len, int64_t v)
{
	uint64_t h = pm_hash(s, len, 0);
	size_t mask, i;

	if (fd->tcap) {
		mask = fd->tcap - 1;
		for (i = h & mask; fd->tab[i]; i = (i + 1) & mask) {
			struct stack *st = &fd->v[fd->tab[i] - 1];

			if (fd->hash[i] == h && strcmp(st->s, s) == 0) {
				st->count = pm_add_sat(st->count, v);
				return;
			}
		}
	}
	if ((fd->n + 1) * 2 > fd->tcap) {
		size_t *ot = fd->tab, ocap = fd->tcap;
		uint64_t *oh = fd->hash;

		fd->tcap = ocap ? ocap * 2 : 256;
		fd->tab = xcalloc(fd->tcap, sizeof(*fd->tab));
		fd->hash = xmalloc(fd->tcap * sizeof(*fd->hash));
		for (i = 0; i < ocap; i++)
			if (ot[i])
				fold_put_raw(fd, oh[i], ot[i]);
		free(ot);
		free(oh);
	}
	PM_GROW(fd->v, fd->cap, fd->n + 1);
	fd->v[fd->n].s = xstrndup(s, len);
	fd->v[fd->n].count = v;
	fd->n++;
	fold_put_raw(fd, h, fd->n);
}

/* Heaviest first, as flame-graph users read them; equal weights by stack. */
static int cmp_stack(const void *va, const void *vb)
{
	const struct stack *a = va, *b = vb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return strcmp(a->s, b->s);
}

int pm_report_folded(const struct pm_profile *p, FILE *f, const struct pm_report_opts *opts)
{
	struct out o = { f, 0 };
	size_t nl = pm_prof_nlocs(p), ns = pm_prof_nsamples(p), i, j;
	long ci = pick_value(p, opts, true), vi = pick_value(p, opts, false);
	char **frag;
	struct fold fd = { 0 };
	struct pm_sb b = { 0 };

	if (opts && opts->value_index >= 0 && ci < 0)
		return -EINVAL;
	if (ci < 0)
		return out_end(&o);
	frag = xcalloc(nl + 1, sizeof(*frag));
	for (i = 0; i < ns; i++) {
		const struct pm_prof_sample *s = pm_prof_sample_at(p, i);
		int64_t v = s->values[ci];

		if (!v || (vi >= 0 && !s->values[vi]))
			continue; /* none, or another event's sample (record -e a,b) */
		b.len = 0;
		for (j = s->nlocs; j-- > 0;) {
			const struct pm_prof_loc *l = pm_prof_loc_by_id(p, s->loc_ids[j]);
			size_t li;

			if (!l)
				continue;
			li = (size_t)(l->id - 1);
			if (!frag[li])
				frag[li] = loc_fragment(p, l);
			if (b.len)
				pm_sb_add(&b, ";", 1);
			pm_sb_add(&b, frag[li], strlen(frag[li]));
		}
		if (b.len)
			fold_add(&fd, b.s, b.len, v);
	}
	if (fd.n)
		qsort(fd.v, fd.n, sizeof(*fd.v), cmp_stack);
	for (i = 0; i < fd.n; i++)
		if (fd.v[i].count)
			outf(&o, "%s %" PRId64 "\n", fd.v[i].s, fd.v[i].count);

	for (i = 0; i < fd.n; i++)
		free(fd.v[i].s);
	free(fd.v);
	free(fd.tab);
	free(fd.hash);
	for (i = 0; i < nl; i++)
		free(frag[i]);
	free(frag);
	free(b.s);
	return out_end(&o);
}
