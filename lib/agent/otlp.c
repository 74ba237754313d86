/*
 * otlp: pprof profiles to an OTLP ExportProfilesServiceRequest (otlp.h says
 * the shape and the labels' names).
 *
 * A request is built in two steps.  Adding a profile decodes it with
 * pm_pprof_decode() (which checks every index and id of the file) and
 * turns it into plain records: every dictionary entry is interned as a
 * record of bytes in a table of its own, so that equal entries of any
 * profile of the request get one index, and the samples of each Profile
 * point into the dictionary by index.  Encoding then lays protobuf-c's
 * messages over those records, packs them and frees the messages: the
 * request stays as it was, and may grow and be encoded again.
 *
 * Nothing is trusted: the pprof was spooled on disk.  Each string is cut
 * and sanitized before it is interned, a profile whose entries could pass
 * a table's PM_OTLP_MAX_ENTRIES is refused before anything of it is added
 * (so that a failed add changes nothing, and every index fits an int32),
 * and a sample keeps at most MAX_SAMPLE_ATTRS attributes.
 */
#include "agent/otlp.h"

#include "base/util.h"
#include "profile/pprof.h"
#include "profile/profile.h"

/* generated from the vendored protos into build/gen: not a layer's header */
#include <opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PMUPROF_VERSION
#define PMUPROF_VERSION "0.1"
#endif

/* A sample's attributes past this many are dropped (and counted). */
#define MAX_SAMPLE_ATTRS 64
/* Resource attributes: service.name, process.pid, two executable's, host, container. */
#define RES_ATTRS 6

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	PbRequest;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary PbDict;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles PbResProf;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles PbScopeProf;
typedef Opentelemetry__Proto__Profiles__V1development__Profile PbProfile;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType PbValueType;
typedef Opentelemetry__Proto__Profiles__V1development__Sample PbSample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping PbMapping;
typedef Opentelemetry__Proto__Profiles__V1development__Location PbLocation;
typedef Opentelemetry__Proto__Profiles__V1development__Line PbLine;
typedef Opentelemetry__Proto__Profiles__V1development__Function PbFunction;
typedef Opentelemetry__Proto__Profiles__V1development__Link PbLink;
typedef Opentelemetry__Proto__Profiles__V1development__Stack PbStack;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit PbAttr;
typedef Opentelemetry__Proto__Common__V1__AnyValue PbAny;
typedef Opentelemetry__Proto__Common__V1__KeyValue PbKeyValue;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope PbScope;
typedef Opentelemetry__Proto__Resource__V1__Resource PbResource;

/* ==== interning ==== */

/*
 * One table of records of bytes, each kept once, numbered from 0 in the
 * order first put; entry 0 is the empty record (the dictionary's zero
 * value: "", Mapping{}, ...).  A record starts 8-aligned in the pool and
 * is followed by a NUL, so that a string is read in place and a struct
 * through its type.  The hash is seeded: the records are a file's.
 */
struct ent {
	size_t off;
	uint32_t len;
};

struct itab {
	uint8_t *pool;
	size_t used, cap;
	struct ent *e;
	size_t n, ecap;
	struct pm_hidx idx;
	uint64_t seed;
};

static int32_t itab_put(struct itab *t, const void *rec, size_t len)
{
	uint64_t hv = pm_hash(rec, len, t->seed);
	size_t pos = SIZE_MAX;
	long i;

	while ((i = pm_hidx_next(&t->idx, hv, &pos)) >= 0)
		if (t->e[i].len == len && !memcmp(t->pool + t->e[i].off, rec, len))
			return (int32_t)i;
	PM_GROW(t->pool, t->cap, t->used + len + 8);
	PM_GROW(t->e, t->ecap, t->n + 1);
	if (len)
		memcpy(t->pool + t->used, rec, len);
	t->pool[t->used + len] = 0;
	t->e[t->n].off = t->used;
	t->e[t->n].len = (uint32_t)len;
	t->used = (t->used + len + 1 + 7) & ~(size_t)7;
	pm_hidx_add(&t->idx, hv, (uint32_t)t->n);
	return (int32_t)t->n++;
}

static const void *itab_at(const struct itab *t, size_t i)
{
	return t->pool + t->e[i].off;
}

static void itab_init(struct itab *t)
{
	memset(t, 0, sizeof(*t));
	t->seed = pm_hash_seed();
	itab_put(t, "", 0);
}

static void itab_release(struct itab *t)
{
	free(t->pool);
	free(t->e);
	pm_hidx_free(&t->idx);
}

/* The dictionary's tables, and the attribute values (strings kept once, outside it). */
enum { T_STR, T_MAP, T_LOC, T_FUNC, T_ATTR, T_STACK, T_VAL, T_N };

/* The records of the fixed-size tables: zeroed first, so their padding hashes alike. */
struct rmap {
	uint64_t start, limit, offset;
	int32_t file, attr; /* attr: its build ID's attribute, 0 when none */
};

struct rfunc {
	int64_t start_line;
	int32_t name, sys, file, pad;
};

struct rline {
	int64_t line;
	int32_t func, pad;
};

/* A location: this header, then nlines struct rline. */
struct rloc {
	uint64_t addr;
	int32_t map;
	uint32_t nlines;
};

enum { A_NONE, A_STR, A_INT };

struct rattr {
	int64_t num;
	int32_t key, unit, val, kind; /* val: in T_VAL, for A_STR */
};

/* ==== the request ==== */

/* A resource: its meta with the fields that are not the resource's zeroed. */
struct res {
	struct pm_agent_meta m;
};

struct prof {
	size_t res;
	int32_t type, unit, ptype, punit;
	int64_t period;
	uint64_t time, dur;
	uint32_t dropped;
	uint8_t id[16];
	size_t smp, nsmp; /* its samples in o->smp */
};

struct smp {
	int64_t value;
	int32_t stack;
	uint32_t nattr;
	size_t attr; /* its attribute indices in o->attrs */
};

struct pm_otlp {
	struct itab t[T_N];
	struct res *res;
	size_t nres, capres;
	struct pm_hidx residx;
	uint64_t seed;
	struct prof *prof;
	size_t nprof, capprof;
	struct smp *smp;
	size_t nsmp, capsmp;
	int32_t *attrs;
	size_t nattrs, capattrs;
};

struct pm_otlp *pm_otlp_new(void)
{
	struct pm_otlp *o = xcalloc(1, sizeof(*o));

	for (int i = 0; i < T_N; i++)
		itab_init(&o->t[i]);
	o->seed = pm_hash_seed();
	return o;
}

void pm_otlp_free(struct pm_otlp *o)
{
	if (!o)
		return;
	for (int i = 0; i < T_N; i++)
		itab_release(&o->t[i]);
	free(o->res);
	pm_hidx_free(&o->residx);
	free(o->prof);
	free(o->smp);
	free(o->attrs);
	free(o);
}

size_t pm_otlp_nresources(const struct pm_otlp *o)
{
	return o->nres;
}

size_t pm_otlp_nprofiles(const struct pm_otlp *o)
{
	return o->nprof;
}

/* @s cut to PM_OTLP_MAX_STR bytes and sanitized, interned in @t; NULL and "" are 0. */
static int32_t put_str(struct itab *t, const char *s)
{
	char buf[PM_OTLP_MAX_STR + 1];
	size_t n;

	if (!s || !*s)
		return 0;
	n = strnlen(s, PM_OTLP_MAX_STR);
	memcpy(buf, s, n);
	buf[n] = '\0';
	pm_sanitize(buf);
	return itab_put(t, buf, strlen(buf));
}

/* A field of a meta into @dst (as large): cut inside it, sanitized again. */
static void meta_field(char *dst, const char *src, size_t size)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
	pm_sanitize(dst);
}

static bool same_resource(const struct pm_agent_meta *a, const struct pm_agent_meta *b)
{
	return a->pid == b->pid && !strcmp(a->service, b->service) &&
	       !strcmp(a->exe_name, b->exe_name) && !strcmp(a->exe_path, b->exe_path) &&
	       !strcmp(a->host, b->host) && !strcmp(a->container_id, b->container_id);
}

/*
 * The resource of @m: an equal one found, or added.  The key is zeroed
 * first: its padding and the bytes past each string's NUL hash alike.
 */
static size_t resource_of(struct pm_otlp *o, const struct pm_agent_meta *m)
{
	struct pm_agent_meta k;
	size_t pos = SIZE_MAX;
	uint64_t hv;
	long i;

	memset(&k, 0, sizeof(k));
	k.pid = m->pid;
	meta_field(k.service, m->service, sizeof(k.service));
	meta_field(k.exe_name, m->exe_name, sizeof(k.exe_name));
	meta_field(k.exe_path, m->exe_path, sizeof(k.exe_path));
	meta_field(k.host, m->host, sizeof(k.host));
	meta_field(k.container_id, m->container_id, sizeof(k.container_id));
	hv = pm_hash(&k, sizeof(k), o->seed);
	while ((i = pm_hidx_next(&o->residx, hv, &pos)) >= 0)
		if (same_resource(&o->res[i].m, &k))
			return (size_t)i;
	PM_GROW(o->res, o->capres, o->nres + 1);
	o->res[o->nres].m = k;
	pm_hidx_add(&o->residx, hv, (uint32_t)o->nres);
	return o->nres++;
}

/* ==== one profile ==== */

/* One conversion: the profile's ids (1-based, dense) to the dictionary's indices. */
struct conv {
	struct pm_otlp *o;
	const struct pm_profile *p;
	int32_t pid;
	int32_t *map_of, *func_of, *loc_of;
	uint32_t dropped; /* attributes dropped, for its Profiles */
};

/*
 * Whether @p's entries fit: for each table, the most entries @p can add
 * (every string, label and frame of it new) on top of what is there.
 */
static bool fits(const struct pm_otlp *o, const struct pm_profile *p)
{
	size_t nt = pm_prof_nsample_types(p), nm = pm_prof_nmappings(p), nf = pm_prof_nfuncs(p);
	size_t nl = pm_prof_nlocs(p), ns = pm_prof_nsamples(p), nlab = 0, i;
	size_t need[T_N];

	for (i = 0; i < ns; i++)
		nlab += PM_MIN(pm_prof_sample_at(p, i)->nlabels, (size_t)MAX_SAMPLE_ATTRS);
	need[T_STR] = 2 * nt + 2 + 2 * nm + 3 * nf + 2 * nlab + 32;
	need[T_MAP] = nm;
	need[T_LOC] = nl;
	need[T_FUNC] = nf;
	need[T_ATTR] = nlab + nm;
	need[T_STACK] = ns;
	need[T_VAL] = nlab + nm;
	for (i = 0; i < T_N; i++)
		if (o->t[i].n > PM_OTLP_MAX_ENTRIES || need[i] > PM_OTLP_MAX_ENTRIES - o->t[i].n)
			return false;
	return true;
}

static int32_t put_attr_str(struct pm_otlp *o, const char *key, const char *val)
{
	struct rattr a;

	memset(&a, 0, sizeof(a));
	a.key = put_str(&o->t[T_STR], key);
	a.kind = A_STR;
	a.val = put_str(&o->t[T_VAL], val);
	return itab_put(&o->t[T_ATTR], &a, sizeof(a));
}

static int32_t put_attr_int(struct pm_otlp *o, const char *key, int64_t num, const char *unit)
{
	struct rattr a;

	memset(&a, 0, sizeof(a));
	a.key = put_str(&o->t[T_STR], key);
	a.kind = A_INT;
	a.num = num;
	a.unit = put_str(&o->t[T_STR], unit);
	return itab_put(&o->t[T_ATTR], &a, sizeof(a));
}

/* Hex digits only: a GNU build ID (Go's have slashes and base64). */
static bool is_hex(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F')))
			return false;
	return true;
}

static void conv_mappings(struct conv *c)
{
	size_t n = pm_prof_nmappings(c->p);

	c->map_of = xcalloc(n + 1, sizeof(*c->map_of));
	for (size_t i = 0; i < n; i++) {
		const struct pm_prof_mapping *mp = pm_prof_mapping_at(c->p, i);
		struct rmap r;

		memset(&r, 0, sizeof(r));
		r.start = mp->start;
		r.limit = mp->limit;
		r.offset = mp->offset;
		r.file = put_str(&c->o->t[T_STR], mp->file);
		if (mp->build_id && *mp->build_id)
			r.attr = put_attr_str(c->o,
					      is_hex(mp->build_id) ? "process.executable.build_id.gnu"
								   : "process.executable.build_id.go",
					      mp->build_id);
		c->map_of[i] = itab_put(&c->o->t[T_MAP], &r, sizeof(r));
	}
}

static void conv_functions(struct conv *c)
{
	size_t n = pm_prof_nfuncs(c->p);

	c->func_of = xcalloc(n + 1, sizeof(*c->func_of));
	for (size_t i = 0; i < n; i++) {
		const struct pm_prof_func *f = pm_prof_func_at(c->p, i);
		struct rfunc r;

		memset(&r, 0, sizeof(r));
		r.name = put_str(&c->o->t[T_STR], f->name);
		r.sys = put_str(&c->o->t[T_STR], f->system_name);
		r.file = put_str(&c->o->t[T_STR], f->file);
		r.start_line = f->start_line;
		c->func_of[i] = itab_put(&c->o->t[T_FUNC], &r, sizeof(r));
	}
}

/* Index of the profile's mapping or function @id (1-based; 0, or out of range: 0). */
static int32_t by_id(const int32_t *of, size_t n, uint64_t id)
{
	return id && id <= n ? of[id - 1] : 0;
}

static void conv_locations(struct conv *c)
{
	size_t n = pm_prof_nlocs(c->p), nm = pm_prof_nmappings(c->p), nf = pm_prof_nfuncs(c->p);
	uint8_t *buf = NULL;
	size_t cap = 0;

	c->loc_of = xcalloc(n + 1, sizeof(*c->loc_of));
	for (size_t i = 0; i < n; i++) {
		const struct pm_prof_loc *l = pm_prof_loc_at(c->p, i);
		size_t len = sizeof(struct rloc) + l->nlines * sizeof(struct rline);
		struct rloc h;

		PM_GROW(buf, cap, len);
		memset(buf, 0, len);
		memset(&h, 0, sizeof(h));
		h.addr = l->address;
		h.map = by_id(c->map_of, nm, l->mapping_id);
		h.nlines = (uint32_t)l->nlines;
		memcpy(buf, &h, sizeof(h));
		for (size_t j = 0; j < l->nlines; j++) {
			struct rline ln;

			memset(&ln, 0, sizeof(ln));
			ln.func = by_id(c->func_of, nf, l->lines[j].func_id);
			ln.line = l->lines[j].line;
			memcpy(buf + sizeof(h) + j * sizeof(ln), &ln, sizeof(ln));
		}
		c->loc_of[i] = itab_put(&c->o->t[T_LOC], buf, len);
	}
	free(buf);
}

/* pprof's unit names to UCUM, where it has one; others as they are. */
static const char *ucum(const char *u)
{
	static const char *const map[][2] = {
		{ "nanoseconds", "ns" }, { "microseconds", "us" }, { "milliseconds", "ms" },
		{ "seconds", "s" },	 { "bytes", "By" },
	};

	if (!u)
		return NULL;
	for (size_t i = 0; i < PM_ARRAY_SIZE(map); i++)
		if (!strcmp(u, map[i][0]))
			return map[i][1];
	return u;
}

/* pmuprof's own labels (otlp.h's table): key, numeric or not, attribute, default unit. */
static const struct lmap {
	const char *label;
	bool num;
	const char *attr, *unit;
} lmaps[] = {
	{ "goroutine", true, "goroutine.id", NULL },
	{ "thread", true, "thread.id", NULL },
	{ "pid", true, "process.pid", NULL },
	{ "state", false, "go.goroutine.state", NULL },
	{ "wait_reason", false, "go.wait_reason", NULL },
	{ "parked", true, "go.goroutine.parked", "ns" },
	{ "cpu_sample_age_ms", true, "pmuprof.cpu_sample_age", "ms" },
	{ "bytes", true, "go.allocation.size", "By" },
	{ "event", false, "pmuprof.event", NULL },
	{ "mutex", false, "go.mutex", NULL },
};

/* One label as an attribute: its index, 0 when it is left out (the resource's pid). */
static int32_t label_attr(struct conv *c, const struct pm_prof_label *l)
{
	const char *key = l->key, *unit = NULL;
	bool num = !l->str;

	for (size_t i = 0; i < PM_ARRAY_SIZE(lmaps); i++)
		if (lmaps[i].num == num && !strcmp(l->key, lmaps[i].label)) {
			key = lmaps[i].attr;
			unit = lmaps[i].unit;
			break;
		}
	if (!num)
		return put_attr_str(c->o, key, l->str);
	if (!strcmp(l->key, "pid") && l->num == c->pid)
		return 0;
	return put_attr_int(c->o, key, l->num, l->num_unit ? ucum(l->num_unit) : unit);
}

static uint32_t sat_add(uint32_t a, size_t b)
{
	return b >= UINT32_MAX - a ? UINT32_MAX : a + (uint32_t)b;
}

/*
 * A sample's labels as attribute indices, appended to o->attrs: their
 * count.  Keys stay unique: a label whose key is there already, or past
 * MAX_SAMPLE_ATTRS, is dropped and counted.
 */
static uint32_t sample_attrs(struct conv *c, const struct pm_prof_sample *s)
{
	struct pm_otlp *o = c->o;
	int32_t keys[MAX_SAMPLE_ATTRS];
	uint32_t n = 0;

	PM_GROW(o->attrs, o->capattrs, o->nattrs + PM_MIN(s->nlabels, (size_t)MAX_SAMPLE_ATTRS));
	for (size_t i = 0; i < s->nlabels; i++) {
		const struct rattr *a;
		int32_t ai;
		uint32_t j;

		if (n == MAX_SAMPLE_ATTRS) {
			c->dropped = sat_add(c->dropped, s->nlabels - i);
			break;
		}
		ai = label_attr(c, &s->labels[i]);
		if (!ai)
			continue;
		a = itab_at(&o->t[T_ATTR], (size_t)ai);
		for (j = 0; j < n && keys[j] != a->key; j++)
			;
		if (j < n) {
			c->dropped = sat_add(c->dropped, 1);
			continue;
		}
		keys[n] = a->key;
		o->attrs[o->nattrs + n++] = ai;
	}
	return n;
}

/* The stack of @s (leaf first, as in the pprof) into the stack table. */
static int32_t sample_stack(struct conv *c, const struct pm_prof_sample *s, int32_t **buf,
			    size_t *cap)
{
	size_t nl = pm_prof_nlocs(c->p);

	PM_GROW(*buf, *cap, s->nlocs + 1);
	for (size_t j = 0; j < s->nlocs; j++)
		(*buf)[j] = by_id(c->loc_of, nl, s->loc_ids[j]);
	return itab_put(&c->o->t[T_STACK], *buf, s->nlocs * sizeof(**buf));
}

/*
 * A profile id, the same for the same interval's sample type each time
 * (a push tried again is recognised): two stable hashes of what names it.
 */
static void profile_id(uint8_t id[16], const struct res *r, uint64_t seq, uint64_t time,
		       const char *type, const char *unit)
{
	char *s = xasprintf("%s\n%s\n%" PRId32 "\n%" PRIu64 "\n%" PRIu64 "\n%s\n%s", r->m.host,
			    r->m.exe_path, r->m.pid, seq, time, type ? type : "", unit ? unit : "");
	uint64_t a = pm_hash(s, strlen(s), 0x6f746c70), b = pm_hash(s, strlen(s), 0x706d7570);

	free(s);
	memcpy(id, &a, 8);
	memcpy(id + 8, &b, 8);
	if (!a && !b) /* all zeroes is not an id */
		id[15] = 1;
}

/* The Profiles of @c->p, one per sample type, each with its nonzero samples. */
static void conv_profiles(struct conv *c, const struct pm_agent_meta *m, size_t res)
{
	struct pm_otlp *o = c->o;
	const struct pm_profile *p = c->p;
	size_t nt = pm_prof_nsample_types(p), ns = pm_prof_nsamples(p);
	const struct pm_prof_vtype *pt = pm_prof_period_type(p);
	struct smp *one = xcalloc(ns + 1, sizeof(*one));
	int32_t *stk = NULL;
	size_t capstk = 0;

	for (size_t i = 0; i < ns; i++) {
		const struct pm_prof_sample *s = pm_prof_sample_at(p, i);

		one[i].stack = sample_stack(c, s, &stk, &capstk);
		one[i].attr = o->nattrs;
		one[i].nattr = sample_attrs(c, s);
		o->nattrs += one[i].nattr;
	}
	free(stk);
	for (size_t t = 0; t < nt; t++) {
		const struct pm_prof_vtype *vt = pm_prof_sample_type(p, t);
		struct prof *pf;

		PM_GROW(o->prof, o->capprof, o->nprof + 1);
		pf = &o->prof[o->nprof++];
		memset(pf, 0, sizeof(*pf));
		pf->res = res;
		pf->type = put_str(&o->t[T_STR], vt->type);
		pf->unit = put_str(&o->t[T_STR], vt->unit);
		if (pt) {
			pf->ptype = put_str(&o->t[T_STR], pt->type);
			pf->punit = put_str(&o->t[T_STR], pt->unit);
		}
		pf->period = pm_prof_period(p);
		pf->time = m->start_ns ? m->start_ns : (uint64_t)pm_prof_time(p);
		pf->dur = m->duration_ns ? m->duration_ns : (uint64_t)pm_prof_duration(p);
		pf->dropped = c->dropped;
		profile_id(pf->id, &o->res[res], m->seq, pf->time, vt->type, vt->unit);
		pf->smp = o->nsmp;
		for (size_t i = 0; i < ns; i++) {
			int64_t v = pm_prof_sample_at(p, i)->values[t];

			if (!v)
				continue;
			PM_GROW(o->smp, o->capsmp, o->nsmp + 1);
			o->smp[o->nsmp] = one[i];
			o->smp[o->nsmp++].value = v;
		}
		pf->nsmp = o->nsmp - pf->smp;
	}
	free(one);
}

int pm_otlp_add_profile(struct pm_otlp *o, const struct pm_profile *p,
			const struct pm_agent_meta *m, char *err, size_t errlen)
{
	struct conv c;

	if (err && errlen)
		err[0] = '\0';
	if (!fits(o, p)) {
		pm_seterr(err, errlen, "the request has no room for a profile of %zu samples",
			  pm_prof_nsamples(p));
		return -E2BIG;
	}
	memset(&c, 0, sizeof(c));
	c.o = o;
	c.p = p;
	c.pid = m->pid;
	conv_mappings(&c);
	conv_functions(&c);
	conv_locations(&c);
	conv_profiles(&c, m, resource_of(o, m));
	free(c.map_of);
	free(c.func_of);
	free(c.loc_of);
	return 0;
}

int pm_otlp_add(struct pm_otlp *o, const uint8_t *pprof, size_t len,
		const struct pm_agent_meta *m, char *err, size_t errlen)
{
	struct pm_profile *p;
	int rc;

	rc = pm_pprof_decode(pprof, len, &p, err, errlen);
	if (rc)
		return rc;
	rc = pm_otlp_add_profile(o, p, m, err, errlen);
	pm_prof_free(p);
	return rc;
}

/* ==== encoding ==== */

/* The messages laid over the request's records, freed once packed. */
struct enc {
	PbRequest req;
	PbDict dict;
	char **strs;
	PbMapping *map, **mapp;
	PbLocation *loc, **locp;
	PbLine *line, **linep;
	PbFunction *fn, **fnp;
	PbLink link, *linkp;
	uint8_t zero_id[16];
	PbAttr *attr, **attrp;
	PbAny *any;
	PbStack *stk, **stkp;
	PbResProf *rp, **rpp;
	PbResource *rs;
	PbKeyValue *kv, **kvp;
	PbAny *kvany;
	PbScopeProf *sp, **spp;
	PbScope scope;
	PbProfile *pf, **pfp;
	PbValueType *vt;
	PbSample *sm, **smp;
};

static void enc_strings(struct enc *e, const struct pm_otlp *o)
{
	const struct itab *t = &o->t[T_STR];

	e->strs = xcalloc(t->n, sizeof(*e->strs));
	for (size_t i = 0; i < t->n; i++)
		e->strs[i] = (char *)itab_at(t, i);
	e->dict.n_string_table = t->n;
	e->dict.string_table = e->strs;
}

static void enc_mappings(struct enc *e, const struct pm_otlp *o)
{
	const struct itab *t = &o->t[T_MAP];

	e->map = xcalloc(t->n, sizeof(*e->map));
	e->mapp = xcalloc(t->n, sizeof(*e->mapp));
	for (size_t i = 0; i < t->n; i++) {
		const struct rmap *r = itab_at(t, i);
		PbMapping *m = &e->map[i];

		opentelemetry__proto__profiles__v1development__mapping__init(m);
		if (i) { /* entry 0: Mapping{}, its record empty */
			m->memory_start = r->start;
			m->memory_limit = r->limit;
			m->file_offset = r->offset;
			m->filename_strindex = r->file;
			m->n_attribute_indices = r->attr ? 1 : 0;
			m->attribute_indices = (int32_t *)&r->attr;
		}
		e->mapp[i] = m;
	}
	e->dict.n_mapping_table = t->n;
	e->dict.mapping_table = e->mapp;
}

static void enc_locations(struct enc *e, const struct pm_otlp *o)
{
	const struct itab *t = &o->t[T_LOC];
	size_t nlines = 0, k = 0;

	for (size_t i = 1; i < t->n; i++)
		nlines += ((const struct rloc *)itab_at(t, i))->nlines;
	e->loc = xcalloc(t->n, sizeof(*e->loc));
	e->locp = xcalloc(t->n, sizeof(*e->locp));
	e->line = xcalloc(nlines + 1, sizeof(*e->line));
	e->linep = xcalloc(nlines + 1, sizeof(*e->linep));
	for (size_t i = 0; i < t->n; i++) {
		const uint8_t *rec = itab_at(t, i);
		PbLocation *l = &e->loc[i];
		struct rloc h;

		opentelemetry__proto__profiles__v1development__location__init(l);
		e->locp[i] = l;
		if (!i)
			continue;
		memcpy(&h, rec, sizeof(h));
		l->mapping_index = h.map;
		l->address = h.addr;
		l->n_lines = h.nlines;
		l->lines = &e->linep[k];
		for (uint32_t j = 0; j < h.nlines; j++, k++) {
			struct rline ln;

			memcpy(&ln, rec + sizeof(h) + j * sizeof(ln), sizeof(ln));
			opentelemetry__proto__profiles__v1development__line__init(&e->line[k]);
			e->line[k].function_index = ln.func;
			e->line[k].line = ln.line;
			e->linep[k] = &e->line[k];
		}
	}
	e->dict.n_location_table = t->n;
	e->dict.location_table = e->locp;
}

static void enc_functions(struct enc *e, const struct pm_otlp *o)
{
	const struct itab *t = &o->t[T_FUNC];

	e->fn = xcalloc(t->n, sizeof(*e->fn));
	e->fnp = xcalloc(t->n, sizeof(*e->fnp));
	for (size_t i = 0; i < t->n; i++) {
		const struct rfunc *r = itab_at(t, i);
		PbFunction *f = &e->fn[i];

		opentelemetry__proto__profiles__v1development__function__init(f);
		if (i) {
			f->name_strindex = r->name;
			f->system_name_strindex = r->sys;
			f->filename_strindex = r->file;
			f->start_line = r->start_line;
		}
		e->fnp[i] = f;
	}
	e->dict.n_function_table = t->n;
	e->dict.function_table = e->fnp;
}

/* Attributes (entry 0: no value) and the one link, Link{} as 16 and 8 zero bytes. */
static void enc_attributes(struct enc *e, const struct pm_otlp *o)
{
	const struct itab *t = &o->t[T_ATTR];

	e->attr = xcalloc(t->n, sizeof(*e->attr));
	e->attrp = xcalloc(t->n, sizeof(*e->attrp));
	e->any = xcalloc(t->n, sizeof(*e->any));
	for (size_t i = 0; i < t->n; i++) {
		const struct rattr *r = itab_at(t, i);
		PbAttr *a = &e->attr[i];

		opentelemetry__proto__profiles__v1development__key_value_and_unit__init(a);
		opentelemetry__proto__common__v1__any_value__init(&e->any[i]);
		if (i) {
			a->key_strindex = r->key;
			a->unit_strindex = r->unit;
			a->value = &e->any[i];
			if (r->kind == A_STR) {
				e->any[i].value_case =
					OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
				e->any[i].string_value =
					(char *)itab_at(&o->t[T_VAL], (size_t)r->val);
			} else {
				e->any[i].value_case =
					OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
				e->any[i].int_value = r->num;
			}
		}
		e->attrp[i] = a;
	}
	e->dict.n_attribute_table = t->n;
	e->dict.attribute_table = e->attrp;
	opentelemetry__proto__profiles__v1development__link__init(&e->link);
	e->link.trace_id.len = 16;
	e->link.trace_id.data = e->zero_id;
	e->link.span_id.len = 8;
	e->link.span_id.data = e->zero_id;
	e->linkp = &e->link;
	e->dict.n_link_table = 1;
	e->dict.link_table = &e->linkp;
}

static void enc_stacks(struct enc *e, const struct pm_otlp *o)
{
	const struct itab *t = &o->t[T_STACK];

	e->stk = xcalloc(t->n, sizeof(*e->stk));
	e->stkp = xcalloc(t->n, sizeof(*e->stkp));
	for (size_t i = 0; i < t->n; i++) {
		PbStack *s = &e->stk[i];

		opentelemetry__proto__profiles__v1development__stack__init(s);
		s->n_location_indices = t->e[i].len / sizeof(int32_t);
		s->location_indices = (int32_t *)itab_at(t, i);
		e->stkp[i] = s;
	}
	e->dict.n_stack_table = t->n;
	e->dict.stack_table = e->stkp;
}

/* Resource @r's attributes (otlp.h), the empty ones left out. */
static void enc_resource(struct enc *e, const struct res *r, size_t ri)
{
	const struct pm_agent_meta *m = &r->m;
	const char *const keys[RES_ATTRS] = {
		"service.name", "process.pid", "process.executable.name",
		"process.executable.path", "host.name", "container.id",
	};
	/* NULL: the pid, an int */
	const char *const vals[RES_ATTRS] = {
		*m->service ? m->service : "unknown_service", NULL, m->exe_name,
		m->exe_path, m->host, m->container_id,
	};
	PbResource *rs = &e->rs[ri];
	size_t n = 0;

	opentelemetry__proto__resource__v1__resource__init(rs);
	rs->attributes = &e->kvp[ri * RES_ATTRS];
	for (size_t i = 0; i < RES_ATTRS; i++) {
		PbKeyValue *kv = &e->kv[ri * RES_ATTRS + n];
		PbAny *v = &e->kvany[ri * RES_ATTRS + n];

		if (vals[i] && !*vals[i])
			continue;
		opentelemetry__proto__common__v1__key_value__init(kv);
		opentelemetry__proto__common__v1__any_value__init(v);
		kv->key = (char *)keys[i];
		kv->value = v;
		if (vals[i]) {
			v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
			v->string_value = (char *)vals[i];
		} else {
			v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
			v->int_value = m->pid;
		}
		rs->attributes[n++] = kv;
	}
	rs->n_attributes = n;
}

/* One Profile and its samples (@k: the first of its samples' messages). */
static void enc_profile(struct enc *e, const struct pm_otlp *o, const struct prof *p,
			PbProfile *pf, size_t k)
{
	PbValueType *vt = &e->vt[2 * (size_t)(p - o->prof)];

	opentelemetry__proto__profiles__v1development__profile__init(pf);
	opentelemetry__proto__profiles__v1development__value_type__init(&vt[0]);
	opentelemetry__proto__profiles__v1development__value_type__init(&vt[1]);
	vt[0].type_strindex = p->type;
	vt[0].unit_strindex = p->unit;
	pf->sample_type = &vt[0];
	if (p->ptype || p->punit || p->period) {
		vt[1].type_strindex = p->ptype;
		vt[1].unit_strindex = p->punit;
		pf->period_type = &vt[1];
		pf->period = p->period;
	}
	pf->time_unix_nano = p->time;
	pf->duration_nano = p->dur;
	pf->profile_id.len = sizeof(p->id);
	pf->profile_id.data = (uint8_t *)p->id;
	pf->dropped_attributes_count = p->dropped;
	pf->n_samples = p->nsmp;
	pf->samples = &e->smp[k];
	for (size_t i = 0; i < p->nsmp; i++, k++) {
		const struct smp *s = &o->smp[p->smp + i];
		PbSample *sm = &e->sm[k];

		opentelemetry__proto__profiles__v1development__sample__init(sm);
		sm->stack_index = s->stack;
		sm->n_attribute_indices = s->nattr;
		sm->attribute_indices = s->nattr ? &o->attrs[s->attr] : NULL;
		sm->n_values = 1;
		sm->values = (int64_t *)&s->value;
		e->smp[k] = sm;
	}
}

/* Each resource, its one scope, and its profiles in the order they were added. */
static void enc_resources(struct enc *e, const struct pm_otlp *o)
{
	size_t *first = xcalloc(o->nres + 1, sizeof(*first)), *at;
	size_t k = 0;

	e->rp = xcalloc(o->nres + 1, sizeof(*e->rp));
	e->rpp = xcalloc(o->nres + 1, sizeof(*e->rpp));
	e->rs = xcalloc(o->nres + 1, sizeof(*e->rs));
	e->kv = xcalloc(o->nres * RES_ATTRS + 1, sizeof(*e->kv));
	e->kvp = xcalloc(o->nres * RES_ATTRS + 1, sizeof(*e->kvp));
	e->kvany = xcalloc(o->nres * RES_ATTRS + 1, sizeof(*e->kvany));
	e->sp = xcalloc(o->nres + 1, sizeof(*e->sp));
	e->spp = xcalloc(o->nres + 1, sizeof(*e->spp));
	e->pf = xcalloc(o->nprof + 1, sizeof(*e->pf));
	e->pfp = xcalloc(o->nprof + 1, sizeof(*e->pfp));
	e->vt = xcalloc(2 * o->nprof + 1, sizeof(*e->vt));
	e->sm = xcalloc(o->nsmp + 1, sizeof(*e->sm));
	e->smp = xcalloc(o->nsmp + 1, sizeof(*e->smp));
	opentelemetry__proto__common__v1__instrumentation_scope__init(&e->scope);
	e->scope.name = (char *)"pmuprof";
	e->scope.version = (char *)PMUPROF_VERSION;

	/* the profiles grouped by resource: where each resource's start in e->pfp */
	for (size_t i = 0; i < o->nprof; i++)
		first[o->prof[i].res + 1]++;
	for (size_t r = 0; r < o->nres; r++)
		first[r + 1] += first[r];
	at = xmalloc((o->nres + 1) * sizeof(*at));
	memcpy(at, first, (o->nres + 1) * sizeof(*at));
	for (size_t i = 0; i < o->nprof; i++) {
		PbProfile *pf = &e->pf[i];

		enc_profile(e, o, &o->prof[i], pf, k);
		k += o->prof[i].nsmp;
		e->pfp[at[o->prof[i].res]++] = pf;
	}
	for (size_t r = 0; r < o->nres; r++) {
		opentelemetry__proto__profiles__v1development__resource_profiles__init(&e->rp[r]);
		opentelemetry__proto__profiles__v1development__scope_profiles__init(&e->sp[r]);
		enc_resource(e, &o->res[r], r);
		e->sp[r].scope = &e->scope;
		e->sp[r].n_profiles = first[r + 1] - first[r];
		e->sp[r].profiles = &e->pfp[first[r]];
		e->spp[r] = &e->sp[r];
		e->rp[r].resource = &e->rs[r];
		e->rp[r].n_scope_profiles = 1;
		e->rp[r].scope_profiles = &e->spp[r];
		e->rpp[r] = &e->rp[r];
	}
	e->req.n_resource_profiles = o->nres;
	e->req.resource_profiles = e->rpp;
	free(at);
	free(first);
}

static void enc_free(struct enc *e)
{
	void *v[] = {
		e->strs, e->map, e->mapp,  e->loc, e->locp, e->line,  e->linep, e->fn, e->fnp,
		e->attr, e->attrp, e->any, e->stk, e->stkp, e->rp,    e->rpp,   e->rs, e->kv,
		e->kvp,  e->kvany, e->sp,  e->spp, e->pf,   e->pfp,   e->vt,    e->sm, e->smp,
	};

	for (size_t i = 0; i < PM_ARRAY_SIZE(v); i++)
		free(v[i]);
}

void pm_otlp_encode(const struct pm_otlp *o, uint8_t **out, size_t *len)
{
	struct enc e;
	size_t n;

	memset(&e, 0, sizeof(e));
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
		&e.req);
	opentelemetry__proto__profiles__v1development__profiles_dictionary__init(&e.dict);
	enc_strings(&e, o);
	enc_mappings(&e, o);
	enc_locations(&e, o);
	enc_functions(&e, o);
	enc_attributes(&e, o);
	enc_stacks(&e, o);
	enc_resources(&e, o);
	e.req.dictionary = &e.dict;
	n = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(
		&e.req);
	*out = xmalloc(n + 1);
	*len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(
		&e.req, *out);
	enc_free(&e);
}

int pm_otlp_request(const struct pm_otlp_item *items, size_t n, uint8_t **out, size_t *len,
		    char *err, size_t errlen)
{
	struct pm_otlp *o = pm_otlp_new();
	char why[256];
	int rc = 0;

	*out = NULL;
	*len = 0;
	if (err && errlen)
		err[0] = '\0';
	for (size_t i = 0; i < n && !rc; i++) {
		rc = pm_otlp_add(o, items[i].pprof, items[i].len, items[i].meta, why, sizeof(why));
		if (rc)
			pm_seterr(err, errlen, "profile %zu (pid %" PRId32 "): %s", i,
				  items[i].meta->pid, why);
	}
	if (!rc)
		pm_otlp_encode(o, out, len);
	pm_otlp_free(o);
	return rc;
}

int64_t pm_otlp_rejected(const uint8_t *resp, size_t len, char *msg, size_t msglen)
{
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse *r;
	const Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesPartialSuccess
		*ps;
	int64_t n;

	if (msglen)
		msg[0] = 0;
	if (!len)
		return 0;
	r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__unpack(
		NULL, len, resp);
	if (!r)
		return -EINVAL;
	ps = r->partial_success;
	n = ps && ps->rejected_profiles > 0 ? ps->rejected_profiles : 0;
	if (ps && ps->error_message && msglen) {
		snprintf(msg, msglen, "%s", ps->error_message);
		pm_sanitize(msg);
	}
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__free_unpacked(
		r, NULL);
	return n;
}
