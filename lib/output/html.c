/*
 * html: the flame-graph page.  The call tree is built here (frames interned
 * by kind, name and file; nodes by parent and frame), pruned, and written
 * as JSON into the page with web/flame.js and web/flame.css, which draw it.
 */
#include "output/html.h"

#include "goruntime/goroutine.h"
#include "profile/profile.h"
#include "output/report.h"
#include "base/util.h"

#include "flame-assets.h" /* generated: pm_flame_js, pm_flame_css */

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Frame kinds, in the order web/flame.js names them. */
enum { K_GO, K_RUNTIME, K_NATIVE, K_KERNEL, K_CREATOR, K_OTHER };

/*
 * A JSON string of hostile bytes, safe inside a <script> element: quotes,
 * backslashes and control characters escaped, '<', '>' and '&' as \u
 * escapes (no "</script>" can end the element early).  Invalid UTF-8 is
 * left to the browser's decoder (U+FFFD).
 */
static void sb_json(struct pm_sb *b, const char *s)
{
	pm_sb_add(b, "\"", 1);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			pm_sb_printf(b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f || c == '<' || c == '>' || c == '&')
			pm_sb_printf(b, "\\u%04x", c);
		else
			pm_sb_add(b, (const char *)&c, 1);
	}
	pm_sb_add(b, "\"", 1);
}

/* Text for an HTML element's content: &, <, > and quotes escaped, controls as '?'. */
static void sb_text(struct pm_sb *b, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '&')
			pm_sb_str(b, "&amp;");
		else if (c == '<')
			pm_sb_str(b, "&lt;");
		else if (c == '>')
			pm_sb_str(b, "&gt;");
		else if (c == '"')
			pm_sb_str(b, "&quot;");
		else if (c < 0x20 || c == 0x7f)
			pm_sb_add(b, "?", 1);
		else
			pm_sb_add(b, (const char *)&c, 1);
	}
}

/* ---- frames and the tree ---- */

struct frame {
	char *name;
	const char *file; /* borrowed from the profile it came from */
	int64_t line;
	int kind;
};

struct tree {
	size_t nt;         /* sample types of the profile shown */
	struct frame *fr;
	size_t nfr, frcap;
	struct pm_hidx fidx;
	uint32_t *parent, *frame;
	int64_t *self, *bself; /* nt values per node; bself: the base's (NULL: none) */
	size_t n, pcap, fcap, scap, bcap;
	bool has_base;
	struct pm_hidx nidx;
	uint64_t seed;
};

static uint32_t frame_id(struct tree *t, const char *name, const char *file, int64_t line,
			 int kind)
{
	uint64_t h = pm_hash(name, strlen(name), t->seed) ^ pm_hash_u64((uint64_t)kind + 1);
	size_t pos = SIZE_MAX;
	long i;

	if (file)
		h ^= pm_hash(file, strlen(file), t->seed + 1);
	while ((i = pm_hidx_next(&t->fidx, h, &pos)) >= 0) {
		const struct frame *f = &t->fr[i];

		if (f->kind == kind && strcmp(f->name, name) == 0 &&
		    strcmp(f->file ? f->file : "", file ? file : "") == 0)
			return (uint32_t)i;
	}
	PM_GROW(t->fr, t->frcap, t->nfr + 1);
	t->fr[t->nfr].name = xstrdup(name);
	t->fr[t->nfr].file = file;
	t->fr[t->nfr].line = line;
	t->fr[t->nfr].kind = kind;
	pm_hidx_add(&t->fidx, h, (uint32_t)t->nfr);
	return (uint32_t)t->nfr++;
}

static size_t new_node(struct tree *t, uint32_t parent, uint32_t frame)
{
	size_t i = t->n;

	PM_GROW(t->parent, t->pcap, i + 1);
	PM_GROW(t->frame, t->fcap, i + 1);
	PM_GROW(t->self, t->scap, (i + 1) * t->nt);
	if (t->has_base)
		PM_GROW(t->bself, t->bcap, (i + 1) * t->nt);
	t->parent[i] = parent;
	t->frame[i] = frame;
	t->n++;
	return i;
}

static size_t child(struct tree *t, size_t parent, uint32_t frame)
{
	uint64_t h = pm_hash_u64(((uint64_t)parent << 32 | frame) ^ t->seed);
	size_t pos = SIZE_MAX, c;
	long i;

	while ((i = pm_hidx_next(&t->nidx, h, &pos)) >= 0)
		if (t->parent[i] == parent && t->frame[i] == frame)
			return (size_t)i;
	c = new_node(t, (uint32_t)parent, frame);
	pm_hidx_add(&t->nidx, h, (uint32_t)c);
	return c;
}

static bool prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static bool suffix(const char *s, const char *x)
{
	size_t n = strlen(s), k = strlen(x);

	return n >= k && strcmp(s + n - k, x) == 0;
}

static int kind_of(const struct pm_prof_mapping *m, const char *name, const char *file)
{
	if (m && m->file && strcmp(m->file, PM_GOR_CREATORS_MAPPING) == 0)
		return K_CREATOR;
	if (m && m->file && prefix(m->file, "[kernel"))
		return K_KERNEL;
	if (name[0] == '[')
		return K_OTHER;
	if (prefix(name, "runtime.") || prefix(name, "runtime/") ||
	    prefix(name, "internal/runtime/"))
		return K_RUNTIME;
	if (file && (suffix(file, ".go") || suffix(file, ".s")))
		return K_GO;
	return K_NATIVE;
}

/*
 * The frames of each location of @p, root-most first (the physical caller,
 * then its inlined callees), interned once: fids[start[i] .. start[i + 1]).
 */
struct locframes {
	size_t *start;
	uint32_t *fids;
};

static void loc_frames(struct tree *t, const struct pm_profile *p, struct locframes *lf)
{
	size_t n = pm_prof_nlocs(p), i, k, m = 0;

	lf->start = xcalloc(n + 1, sizeof(*lf->start));
	for (i = 0; i < n; i++) {
		const struct pm_prof_loc *l = pm_prof_loc_at(p, i);

		lf->start[i] = m;
		m += l->nlines ? l->nlines : 1;
	}
	lf->start[n] = m;
	lf->fids = xcalloc(m + 1, sizeof(*lf->fids));
	for (i = 0; i < n; i++) {
		const struct pm_prof_loc *l = pm_prof_loc_at(p, i);
		const struct pm_prof_mapping *mp = pm_prof_mapping_by_id(p, l->mapping_id);
		size_t o = lf->start[i];

		for (k = l->nlines ? l->nlines : 1; k-- > 0;) {
			const struct pm_prof_func *f =
				l->nlines ? pm_prof_func_by_id(p, l->lines[k].func_id) : NULL;

			if (f && f->name && *f->name) {
				lf->fids[o++] = frame_id(t, f->name, f->file, f->start_line,
							 kind_of(mp, f->name, f->file));
			} else {
				char *a = pm_report_addr_name(p, l);

				lf->fids[o++] = frame_id(t, a, NULL, 0, kind_of(mp, a, NULL));
				free(a);
			}
		}
	}
}

/*
 * Add one sample's values (@nv of them; @map: the tree's type of each, -1
 * for none) at the end of its stack, into self (or with @base, bself).
 */
static void add_sample(struct tree *t, const struct pm_profile *p, const struct locframes *lf,
		       const struct pm_prof_sample *s, const long *map, size_t nv, bool base)
{
	size_t node = 0, nl = pm_prof_nlocs(p), j, k;

	for (j = s->nlocs; j-- > 0;) {
		uint64_t id = s->loc_ids[j];

		if (id < 1 || id > nl)
			continue;
		for (k = lf->start[id - 1]; k < lf->start[id]; k++)
			node = child(t, node, lf->fids[k]);
	}
	for (k = 0; k < nv; k++) {
		int64_t *dst;

		if (map[k] < 0)
			continue;
		dst = &(base ? t->bself : t->self)[node * t->nt + (size_t)map[k]];
		*dst = pm_add_sat(*dst, s->values[k]);
	}
}

static void add_profile(struct tree *t, const struct pm_profile *p, const long *map, size_t nv,
			bool base)
{
	struct locframes lf;
	size_t i;

	loc_frames(t, p, &lf);
	for (i = 0; i < pm_prof_nsamples(p); i++)
		add_sample(t, p, &lf, pm_prof_sample_at(p, i), map, nv, base);
	free(lf.start);
	free(lf.fids);
}

/* Sum of the children into each node: children come after their parent. */
static int64_t *totals(const struct tree *t, const int64_t *self)
{
	int64_t *tot = xmalloc((t->n ? t->n : 1) * t->nt * sizeof(*tot));
	size_t i, k;

	memcpy(tot, self, t->n * t->nt * sizeof(*tot));
	for (i = t->n; i-- > 1;)
		for (k = 0; k < t->nt; k++)
			tot[t->parent[i] * t->nt + k] =
				pm_add_sat(tot[t->parent[i] * t->nt + k], tot[i * t->nt + k]);
	return tot;
}

static bool big(const struct tree *t, const int64_t *tot, const int64_t *btot, size_t i,
		double f)
{
	size_t k;

	for (k = 0; k < t->nt; k++) {
		int64_t v = tot[i * t->nt + k], all = tot[k];

		if (v && (double)(v < 0 ? -v : v) >= f * (double)(all < 0 ? -all : all))
			return true;
		if (btot) {
			v = btot[i * t->nt + k];
			all = btot[k];
			if (v && (double)(v < 0 ? -v : v) >= f * (double)(all < 0 ? -all : all))
				return true;
		}
	}
	return false;
}

/* keep[i]: node i stays (its parent stays, it is big enough).  Returns the count. */
static size_t mark(const struct tree *t, const int64_t *tot, const int64_t *btot, double f,
		   bool *keep)
{
	size_t i, n = 1;

	keep[0] = true;
	for (i = 1; i < t->n; i++) {
		keep[i] = keep[t->parent[i]] && (f <= 0 || big(t, tot, btot, i, f));
		n += keep[i];
	}
	return n;
}

static int64_t gcd(int64_t a, int64_t b)
{
	if (a < 0)
		a = a == INT64_MIN ? 1 : -a;
	if (b < 0)
		b = b == INT64_MIN ? 1 : -b;
	while (b) {
		int64_t r = a % b;

		a = b;
		b = r;
	}
	return a;
}

/* An earlier type whose values written equal type @k's, or -1. */
static long same_values(const struct tree *t, const int64_t *sv, const int64_t *pv, size_t npp,
			const bool *keep, const int64_t *scale, size_t k)
{
	size_t nt = t->nt, i, j;

	for (j = 0; j < k; j++) {
		int64_t sk = scale[k] ? scale[k] : 1, sj = scale[j] ? scale[j] : 1;
		bool same = true;

		for (i = 0; same && i < t->n; i++)
			same = !keep[i] || sv[i * nt + k] / sk == sv[i * nt + j] / sj;
		for (i = 0; same && i < npp; i++)
			same = pv[i * nt + k] / sk == pv[i * nt + j] / sj;
		if (same)
			return (long)j;
	}
	return -1;
}

static void header_lines(struct pm_sb *b, const struct pm_profile *p, long vi, const char *title)
{
	struct pm_report_opts ro = { 0, PM_SORT_SELF, vi, title };
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bool first = true;

	pm_sb_str(b, "[");
	if (f) {
		pm_report_header(p, f, &ro);
		fclose(f);
		for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			if (!strcmp(line, "#"))
				continue;
			if (!first)
				pm_sb_str(b, ",");
			sb_json(b, line[0] == '#' && line[1] == ' ' ? line + 2 : line);
			first = false;
		}
	}
	free(buf);
	pm_sb_str(b, "]");
}

static const double fractions[] = { 0, 1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4,
				    1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1 };

/*
 * The tree of @p, and with @base, the base's values in bself: each base
 * type goes to the profile's type of that name (*@bmapp[k], -1 for none).
 * 0, or -EINVAL when the base has none of the profile's types.
 */
static int tree_build(struct tree *t, const struct pm_profile *p, const struct pm_profile *base,
		      long **bmapp, char *err, size_t errlen)
{
	size_t nt = pm_prof_nsample_types(p), nbt = base ? pm_prof_nsample_types(base) : 0;
	size_t k, nmatched = 0;
	long *map, *bmap;

	memset(t, 0, sizeof(*t));
	t->nt = nt;
	t->seed = pm_hash_seed();
	map = xcalloc(nt, sizeof(*map));
	bmap = xcalloc(nbt + 1, sizeof(*bmap));
	for (k = 0; k < nt; k++)
		map[k] = (long)k;
	for (k = 0; k < nbt; k++) {
		bmap[k] = pm_prof_find_sample_type(p, pm_prof_sample_type(base, k)->type);
		nmatched += bmap[k] >= 0;
	}
	if (base && !nmatched) {
		pm_seterr(err, errlen, "the base profile has none of the profile's sample types");
		free(map);
		free(bmap);
		return -EINVAL;
	}
	t->has_base = base != NULL;
	new_node(t, UINT32_MAX, UINT32_MAX); /* the root */
	add_profile(t, p, map, nt, false);
	if (base)
		add_profile(t, base, bmap, nbt, true);
	free(map);
	*bmapp = bmap;
	return 0;
}

static void tree_free(struct tree *t)
{
	size_t i;

	for (i = 0; i < t->nfr; i++)
		free(t->fr[i].name);
	free(t->fr);
	pm_hidx_free(&t->fidx);
	pm_hidx_free(&t->nidx);
	free(t->parent);
	free(t->frame);
	free(t->self);
	free(t->bself);
}

/* The tree as the page shows it: the nodes kept, and the "[pruned]" ones in place of the rest. */
struct pruned {
	/* the node fraction under which nodes were pruned */
	double f;
	/* each node's total, and its base's (NULL: no base) */
	int64_t *tot, *btot;
	bool *keep;
	size_t nkept;
	/* a kept node's id in the page, in the tree's order */
	uint32_t *newid;
	/* [pruned] nodes, one per parent that lost a child: the new id of each one's parent */
	size_t npp;
	uint32_t *ppar;
	/* their values, nt per node */
	int64_t *pself, *pbself;
	/* per type, what every value written is a multiple of */
	int64_t *scale;
};

/*
 * Mark the nodes kept at the fraction @f; with @f below 0, at the least of
 * fractions[] that keeps at most PM_HTML_MAX_NODES (the last if none does).
 */
static void prune(const struct tree *t, double f, struct pruned *pr)
{
	size_t i;

	pr->tot = totals(t, t->self);
	pr->btot = t->has_base ? totals(t, t->bself) : NULL;
	pr->keep = xcalloc(t->n, sizeof(*pr->keep));
	if (f < 0) {
		for (i = 0; i < PM_ARRAY_SIZE(fractions); i++) {
			f = fractions[i];
			if (mark(t, pr->tot, pr->btot, f, pr->keep) <= PM_HTML_MAX_NODES)
				break;
		}
	}
	pr->f = f;
	pr->nkept = mark(t, pr->tot, pr->btot, f, pr->keep);
}

/*
 * Kept nodes renumbered in order; one "[pruned]" child per parent that
 * lost any, holding the totals of the children it lost.
 */
static void merge_pruned(const struct tree *t, struct pruned *pr)
{
	size_t nt = t->nt, nn = 0, i, k;
	uint32_t *pidx = xcalloc(t->n, sizeof(*pidx)); /* parent's [pruned] + 1 */

	pr->newid = xcalloc(t->n, sizeof(*pr->newid));
	pr->ppar = xcalloc(t->n, sizeof(*pr->ppar));
	pr->pself = xcalloc(t->n * nt, sizeof(*pr->pself));
	pr->pbself = xcalloc(t->n * nt, sizeof(*pr->pbself));
	for (i = 0; i < t->n; i++) {
		size_t par = i ? t->parent[i] : 0, q;

		if (pr->keep[i]) {
			pr->newid[i] = (uint32_t)nn++;
			continue;
		}
		if (!pr->keep[par])
			continue;
		if (!pidx[par]) {
			pr->ppar[pr->npp] = pr->newid[par];
			pidx[par] = (uint32_t)++pr->npp;
		}
		q = pidx[par] - 1;
		for (k = 0; k < nt; k++) {
			pr->pself[q * nt + k] =
				pm_add_sat(pr->pself[q * nt + k], pr->tot[i * nt + k]);
			if (pr->btot)
				pr->pbself[q * nt + k] = pm_add_sat(pr->pbself[q * nt + k],
								 pr->btot[i * nt + k]);
		}
	}
	free(pidx);
}

/* Per type, the gcd of the values written: periods make them multiples. */
static void type_scales(const struct tree *t, struct pruned *pr)
{
	size_t nt = t->nt, i, k;

	pr->scale = xcalloc(nt, sizeof(*pr->scale));
	for (i = 0; i < t->n; i++)
		for (k = 0; pr->keep[i] && k < nt; k++) {
			pr->scale[k] = gcd(pr->scale[k], t->self[i * nt + k]);
			if (t->has_base)
				pr->scale[k] = gcd(pr->scale[k], t->bself[i * nt + k]);
		}
	for (i = 0; i < pr->npp; i++)
		for (k = 0; k < nt; k++)
			pr->scale[k] = gcd(gcd(pr->scale[k], pr->pself[i * nt + k]),
					   pr->pbself[i * nt + k]);
}

static void pruned_free(struct pruned *pr)
{
	free(pr->tot);
	free(pr->btot);
	free(pr->keep);
	free(pr->newid);
	free(pr->ppar);
	free(pr->pself);
	free(pr->pbself);
	free(pr->scale);
}

/* The page up to its data, and the data's title, sample types, headers and pruning. */
static void write_head(struct pm_sb *b, const struct pm_profile *p, bool diff,
		       const struct pm_html_opts *o, long vi, const struct tree *t,
		       const struct pruned *pr)
{
	size_t k;

	pm_sb_str(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		  "<meta name=\"generator\" content=\"pmuprof\">\n<title>");
	sb_text(b, diff ? "pmuprof diff: " : "pmuprof: ");
	sb_text(b, o->title ? o->title : "profile");
	pm_sb_str(b, "</title>\n<style>\n");
	pm_sb_str(b, pm_flame_css);
	pm_sb_str(b, "</style></head>\n<body>\n"
		  "<noscript>This flame graph needs JavaScript.</noscript>\n"
		  "<script type=\"application/json\" id=\"pmdata\">\n{");
	pm_sb_str(b, "\"title\":");
	sb_json(b, o->title ? o->title : "");
	pm_sb_printf(b, ",\"def\":%ld,\"types\":[", vi);
	for (k = 0; k < t->nt; k++) {
		const struct pm_prof_vtype *ty = pm_prof_sample_type(p, k);

		pm_sb_str(b, k ? ",{\"type\":" : "{\"type\":");
		sb_json(b, ty->type);
		pm_sb_str(b, ",\"unit\":");
		sb_json(b, ty->unit);
		pm_sb_printf(b, ",\"scale\":%" PRId64 "}", pr->scale[k] ? pr->scale[k] : 1);
	}
	pm_sb_str(b, "],\"header\":[");
	for (k = 0; k < t->nt; k++) {
		if (k)
			pm_sb_str(b, ",");
		header_lines(b, p, (long)k, o->title);
	}
	pm_sb_str(b, "]");
	pm_sb_printf(b,
		  ",\"prune\":{\"fraction\":%g,\"nodes\":%zu,\"kept\":%zu,\"pruned\":%zu,"
		  "\"auto\":%s,\"max\":%d,\"frames\":%zu}",
		  pr->f, t->n, pr->nkept, t->n - pr->nkept, o->node_fraction < 0 ? "true" : "false",
		  PM_HTML_MAX_NODES, pr->npp);
}

/*
 * The frames of the nodes kept, renumbered: [name, file, line, kind], and
 * the [pruned] frame last.  Returns the new id + 1 of each frame (0: not
 * written); *@nfw: how many were written before [pruned].
 */
static uint32_t *write_frames(struct pm_sb *b, const struct tree *t, const struct pruned *pr,
			      size_t *nfw)
{
	uint32_t *fmap = xcalloc(t->nfr + 1, sizeof(*fmap));
	size_t i, n = 0;

	for (i = 1; i < t->n; i++)
		if (pr->keep[i] && !fmap[t->frame[i]])
			fmap[t->frame[i]] = 1;
	pm_sb_str(b, ",\"frames\":[");
	for (i = 0; i < t->nfr; i++) {
		if (!fmap[i])
			continue;
		fmap[i] = (uint32_t)++n;
		pm_sb_str(b, n > 1 ? ",[" : "[");
		sb_json(b, t->fr[i].name);
		pm_sb_str(b, ",");
		sb_json(b, t->fr[i].file ? t->fr[i].file : "");
		pm_sb_printf(b, ",%" PRId64 ",%d]", t->fr[i].line, t->fr[i].kind);
	}
	pm_sb_printf(b, "%s[\"[pruned]\",\"\",0,%d]]", n ? "," : "", K_OTHER);
	*nfw = n;
	return fmap;
}

/*
 * Nodes, in an order where parents come first: "up" (the distance back to
 * the parent; the root's 0) and frame; the kept nodes, then the [pruned].
 */
static void write_nodes(struct pm_sb *b, const struct tree *t, const struct pruned *pr,
			const uint32_t *fmap, size_t nfw)
{
	size_t i;

	pm_sb_str(b, ",\"up\":[0");
	for (i = 1; i < t->n; i++)
		if (pr->keep[i])
			pm_sb_printf(b, ",%" PRIu32, pr->newid[i] - pr->newid[t->parent[i]]);
	for (i = 0; i < pr->npp; i++)
		pm_sb_printf(b, ",%zu", pr->nkept + i - pr->ppar[i]);
	pm_sb_str(b, "],\"frame\":[-1");
	for (i = 1; i < t->n; i++)
		if (pr->keep[i])
			pm_sb_printf(b, ",%" PRIu32, fmap[t->frame[i]] - 1);
	for (i = 0; i < pr->npp; i++)
		pm_sb_printf(b, ",%zu", nfw);
}

/*
 * The nodes' self values (and the base's, bself) divided by scale per
 * type, or the index of an earlier type whose values are the same.
 */
static void write_values(struct pm_sb *b, const struct tree *t, const struct pruned *pr)
{
	size_t nt = t->nt, i, k;

	for (int which = 0; which < (t->has_base ? 2 : 1); which++) {
		const int64_t *sv = which ? t->bself : t->self,
			      *pv = which ? pr->pbself : pr->pself;

		pm_sb_str(b, which ? "],\"bself\":[" : "],\"self\":[");
		for (k = 0; k < nt; k++) {
			long same = same_values(t, sv, pv, pr->npp, pr->keep, pr->scale, k);
			int64_t sc = pr->scale[k] ? pr->scale[k] : 1;
			bool first = true;

			if (k)
				pm_sb_str(b, ",");
			if (same >= 0) {
				pm_sb_printf(b, "%ld", same);
				continue;
			}
			pm_sb_str(b, "[");
			for (i = 0; i < t->n; i++) {
				if (!pr->keep[i])
					continue;
				pm_sb_printf(b, first ? "%" PRId64 : ",%" PRId64,
					     sv[i * nt + k] / sc);
				first = false;
			}
			for (i = 0; i < pr->npp; i++)
				pm_sb_printf(b, ",%" PRId64, pv[i * nt + k] / sc);
			pm_sb_str(b, "]");
		}
	}
	pm_sb_str(b, "]");
}

/* The base's title, and per type whether the base has it (@bmap: its types' in the profile). */
static void write_base(struct pm_sb *b, const struct pm_html_opts *o, size_t nt, const long *bmap,
		       size_t nbt)
{
	size_t i, k;

	pm_sb_str(b, ",\"base\":{\"title\":");
	sb_json(b, o->base_title ? o->base_title : "");
	pm_sb_str(b, ",\"has\":[");
	for (k = 0; k < nt; k++) {
		bool has = false;

		for (i = 0; i < nbt; i++)
			has = has || bmap[i] == (long)k;
		pm_sb_str(b, k ? (has ? ",1" : ",0") : (has ? "1" : "0"));
	}
	pm_sb_str(b, "]}");
}

int pm_html_render(const struct pm_profile *p, const struct pm_profile *base,
		   const struct pm_html_opts *o, char **out, size_t *outlen, char *err,
		   size_t errlen)
{
	struct tree t;
	struct pruned pr = { 0 };
	size_t nt = pm_prof_nsample_types(p), nfw = 0;
	long vi = o->value_index, *bmap;
	uint32_t *fmap;
	struct pm_sb b = { 0 };
	int rc;

	if (!nt) {
		pm_seterr(err, errlen, "the profile has no sample types");
		return -EINVAL;
	}
	if (vi < 0)
		vi = (long)pm_prof_default_type(p);
	if ((size_t)vi >= nt) {
		pm_seterr(err, errlen, "no sample type %ld in the profile", vi);
		return -EINVAL;
	}
	rc = tree_build(&t, p, base, &bmap, err, errlen);
	if (rc)
		return rc;
	prune(&t, o->node_fraction, &pr);
	merge_pruned(&t, &pr);
	type_scales(&t, &pr);

	write_head(&b, p, base != NULL, o, vi, &t, &pr);
	fmap = write_frames(&b, &t, &pr, &nfw);
	write_nodes(&b, &t, &pr, fmap, nfw);
	write_values(&b, &t, &pr);
	if (base)
		write_base(&b, o, nt, bmap, pm_prof_nsample_types(base));
	pm_sb_str(&b, "}\n</script>\n<script>\n");
	pm_sb_str(&b, pm_flame_js);
	pm_sb_str(&b, "</script>\n</body></html>\n");

	tree_free(&t);
	pruned_free(&pr);
	free(fmap);
	free(bmap);
	*out = b.s;
	*outlen = b.len;
	return 0;
}
