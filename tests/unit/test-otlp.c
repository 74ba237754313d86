/*
 * Unit tests for lib/agent/otlp: pprof profiles made with lib/profile's own
 * API, encoded by pm_pprof_encode() as the agent's children write them,
 * turned into an OTLP request and read back with protoc-c's unpack of the
 * vendored protos.  Checked against the pprof of the same run: the
 * resource's attributes, each leaf function's value per sample type,
 * labels as attributes, two processes apart, the dictionary's zero entries
 * and indices, valid UTF-8, stable profile ids; hostile input (bad and
 * truncated gzip, a huge length, an empty file) an error naming the item.
 */
#include "agent/otlp.h"

#include "agent/meta.h"
#include "base/util.h"
#include "profile/pprof.h"
#include "profile/profile.h"

#include <opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h>

#include "test.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	Req;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles ResProf;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Prof;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Smp;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit Attr;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;

#define ANY_STR OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE
#define ANY_INT OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE

/* ---- helpers ---- */

static void meta(struct pm_agent_meta *m, int32_t pid, const char *exe, const char *cid)
{
	memset(m, 0, sizeof(*m));
	m->pid = pid;
	m->seq = 3;
	m->start_ns = 1765000000000000000ULL;
	m->duration_ns = 10000000000ULL;
	pm_meta_set(m->service, sizeof(m->service), exe);
	pm_meta_set(m->exe_name, sizeof(m->exe_name), exe);
	pm_meta_set(m->exe_path, sizeof(m->exe_path), "/opt/bin/srv");
	pm_meta_set(m->comm, sizeof(m->comm), exe);
	pm_meta_set(m->host, sizeof(m->host), "h1");
	pm_meta_set(m->container_id, sizeof(m->container_id), cid);
}

/*
 * A CPU profile of process @pid as pmuprof writes one: samples/count and
 * cpu/nanoseconds, functions named @pkg.*, goroutine and thread labels,
 * a pprof label, --wall's state and wait reason; one function name not
 * UTF-8, one label with the pid of another process.
 */
static struct pm_profile *cpu_profile(const char *pkg, int32_t pid)
{
	struct pm_profile *p = pm_prof_new();
	char nm[4][64];
	uint64_t map, f[4], loc[4];
	struct pm_prof_line inl[2];
	struct pm_prof_label la[6] = {
		{ "pid", NULL, pid, NULL },	   { "thread", NULL, pid + 1, NULL },
		{ "goroutine", NULL, 7, NULL },	   { "handler", "checkout", 0, NULL },
		{ "state", "waiting", 0, NULL }, { "wait_reason", "chan receive", 0, NULL },
	};
	struct pm_prof_label lb[2] = { { "pid", NULL, pid + 100, NULL },
				       { "parked", NULL, 5000, "nanoseconds" } };
	uint64_t st[3];
	int64_t v[2];

	pm_prof_add_sample_type(p, "samples", "count");
	pm_prof_add_sample_type(p, "cpu", "nanoseconds");
	pm_prof_set_period(p, "cpu", "nanoseconds", 1000);
	pm_prof_set_time(p, 1700000000000000000LL, 2000000000LL);
	map = pm_prof_mapping(p, 0x400000, 0x800000, 0, "/opt/bin/srv", "0123abcd");
	snprintf(nm[0], sizeof(nm[0]), "%s.main", pkg);
	snprintf(nm[1], sizeof(nm[1]), "%s.work", pkg);
	snprintf(nm[2], sizeof(nm[2]), "%s.inl", pkg);
	snprintf(nm[3], sizeof(nm[3]), "%s.bad\xff\x01x", pkg);
	for (int i = 0; i < 4; i++)
		f[i] = pm_prof_func(p, nm[i], nm[i], "/src/main.go", 10 * i);
	inl[0].func_id = f[0];
	inl[0].line = 11;
	loc[0] = pm_prof_loc(p, map, 0x401000, inl, 1);
	inl[0].func_id = f[1];
	inl[0].line = 21;
	loc[1] = pm_prof_loc(p, map, 0x402000, inl, 1);
	inl[0].func_id = f[2]; /* inl inlined into work */
	inl[0].line = 31;
	inl[1].func_id = f[1];
	inl[1].line = 22;
	loc[2] = pm_prof_loc(p, map, 0x402100, inl, 2);
	inl[0].func_id = f[3];
	inl[0].line = 41;
	loc[3] = pm_prof_loc(p, map, 0x403000, inl, 1);

	st[0] = loc[1], st[1] = loc[0]; /* work <- main */
	v[0] = 3, v[1] = 3000;
	pm_prof_add(p, st, 2, v, la, 6);
	st[0] = loc[2], st[1] = loc[0]; /* inl (in work) <- main */
	v[0] = 5, v[1] = 5000;
	pm_prof_add(p, st, 2, v, la, 4);
	st[0] = loc[3], st[1] = loc[1], st[2] = loc[0];
	v[0] = 2, v[1] = 2000;
	pm_prof_add(p, st, 3, v, lb, 2);
	v[0] = 0, v[1] = 7; /* a value of one type only */
	pm_prof_add(p, st, 1, v, NULL, 0);
	return p;
}

static const char *str(const Dict *d, int32_t i)
{
	return i >= 0 && (size_t)i < d->n_string_table ? d->string_table[i] : NULL;
}

/* The sample's leaf function's name. */
static const char *leaf_name(const Dict *d, const Smp *s)
{
	const Opentelemetry__Proto__Profiles__V1development__Stack *st;
	const Opentelemetry__Proto__Profiles__V1development__Location *l;

	if (s->stack_index <= 0 || (size_t)s->stack_index >= d->n_stack_table)
		return NULL;
	st = d->stack_table[s->stack_index];
	if (!st->n_location_indices || st->location_indices[0] <= 0 ||
	    (size_t)st->location_indices[0] >= d->n_location_table)
		return NULL;
	l = d->location_table[st->location_indices[0]];
	if (!l->n_lines || l->lines[0]->function_index <= 0 ||
	    (size_t)l->lines[0]->function_index >= d->n_function_table)
		return NULL;
	return str(d, d->function_table[l->lines[0]->function_index]->name_strindex);
}

/* The pprof's total of type @t for leaf function @name. */
static int64_t pprof_leaf_sum(const struct pm_profile *p, size_t t, const char *name)
{
	int64_t sum = 0;

	for (size_t i = 0; i < pm_prof_nsamples(p); i++) {
		const struct pm_prof_sample *s = pm_prof_sample_at(p, i);
		const struct pm_prof_loc *l = pm_prof_loc_by_id(p, s->loc_ids[0]);
		char buf[128];

		snprintf(buf, sizeof(buf), "%s", pm_prof_func_by_id(p, l->lines[0].func_id)->name);
		if (!strcmp(pm_sanitize(buf), name))
			sum += s->values[t];
	}
	return sum;
}

static int64_t otlp_leaf_sum(const Dict *d, const Prof *pf, const char *name)
{
	int64_t sum = 0;

	for (size_t i = 0; i < pf->n_samples; i++) {
		const char *n = leaf_name(d, pf->samples[i]);

		if (n && !strcmp(n, name) && pf->samples[i]->n_values == 1)
			sum += pf->samples[i]->values[0];
	}
	return sum;
}

/* The resource attribute @key, NULL when absent. */
static const KeyValue *res_attr(const ResProf *rp, const char *key)
{
	for (size_t i = 0; i < rp->resource->n_attributes; i++)
		if (!strcmp(rp->resource->attributes[i]->key, key))
			return rp->resource->attributes[i];
	return NULL;
}

/* The sample's attribute @key, NULL when absent. */
static const Attr *smp_attr(const Dict *d, const Smp *s, const char *key)
{
	for (size_t i = 0; i < s->n_attribute_indices; i++) {
		int32_t ai = s->attribute_indices[i];

		if (ai > 0 && (size_t)ai < d->n_attribute_table &&
		    !strcmp(str(d, d->attribute_table[ai]->key_strindex), key))
			return d->attribute_table[ai];
	}
	return NULL;
}

/* A request of two processes: "a" (pid 100, in a container) and "b" (pid 200). */
static Req *two(struct pm_profile **pa, struct pm_profile **pb, uint8_t **raw, size_t *rawlen)
{
	struct pm_agent_meta ma, mb;
	struct pm_otlp_item it[2];
	uint8_t *ga, *gb;
	size_t la, lb;
	char err[256];
	Req *r;

	*pa = cpu_profile("a", 100);
	*pb = cpu_profile("b", 200);
	if (pm_pprof_encode(*pa, &ga, &la) || pm_pprof_encode(*pb, &gb, &lb))
		return NULL;
	meta(&ma, 100, "srva", "c0ffee");
	meta(&mb, 200, "srvb", "");
	it[0] = (struct pm_otlp_item){ ga, la, &ma };
	it[1] = (struct pm_otlp_item){ gb, lb, &mb };
	if (pm_otlp_request(it, 2, raw, rawlen, err, sizeof(err))) {
		fprintf(stderr, "  request: %s\n", err);
		return NULL;
	}
	free(ga);
	free(gb);
	r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, *rawlen, *raw);
	return r;
}

static void two_free(Req *r, struct pm_profile *pa, struct pm_profile *pb, uint8_t *raw)
{
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
		r, NULL);
	pm_prof_free(pa);
	pm_prof_free(pb);
	free(raw);
}

/* ---- tests ---- */

static int t_resource(void)
{
	struct pm_profile *pa, *pb;
	uint8_t *raw;
	size_t len;
	Req *r = two(&pa, &pb, &raw, &len);
	const KeyValue *kv;

	CHECK(r);
	CHECK_INT(r->n_resource_profiles, 2);
	kv = res_attr(r->resource_profiles[0], "service.name");
	CHECK(kv && kv->value->value_case == ANY_STR);
	CHECK_STR(kv->value->string_value, "srva");
	kv = res_attr(r->resource_profiles[0], "process.pid");
	CHECK(kv && kv->value->value_case == ANY_INT);
	CHECK_INT(kv->value->int_value, 100);
	CHECK_STR(res_attr(r->resource_profiles[0], "process.executable.name")->value->string_value,
		  "srva");
	CHECK_STR(res_attr(r->resource_profiles[0], "process.executable.path")->value->string_value,
		  "/opt/bin/srv");
	CHECK_STR(res_attr(r->resource_profiles[0], "host.name")->value->string_value, "h1");
	CHECK_STR(res_attr(r->resource_profiles[0], "container.id")->value->string_value, "c0ffee");
	CHECK_INT(res_attr(r->resource_profiles[1], "process.pid")->value->int_value, 200);
	CHECK(res_attr(r->resource_profiles[1], "container.id") == NULL); /* empty: left out */
	for (size_t i = 0; i < 2; i++) {
		const ResProf *rp = r->resource_profiles[i];

		CHECK_INT(rp->n_scope_profiles, 1);
		CHECK_STR(rp->scope_profiles[0]->scope->name, "pmuprof");
		CHECK(*rp->scope_profiles[0]->scope->version);
		CHECK_INT(rp->scope_profiles[0]->n_profiles, 2); /* one per sample type */
	}
	two_free(r, pa, pb, raw);
	return PM_PASS;
}

/* Each leaf function's value, per sample type, equals the pprof's. */
static int t_values(void)
{
	struct pm_profile *pa, *pb, *pp[2];
	uint8_t *raw;
	size_t len;
	Req *r = two(&pa, &pb, &raw, &len);
	const char *leaves[2][3] = { { "a.work", "a.inl", "a.bad??x" },
				     { "b.work", "b.inl", "b.bad??x" } };

	CHECK(r);
	pp[0] = pa, pp[1] = pb;
	for (size_t ri = 0; ri < 2; ri++) {
		const ResProf *rp = r->resource_profiles[ri];

		for (size_t t = 0; t < 2; t++) {
			const Prof *pf = rp->scope_profiles[0]->profiles[t];
			const struct pm_prof_vtype *vt = pm_prof_sample_type(pp[ri], t);
			int64_t total = 0;

			CHECK_STR(str(r->dictionary, pf->sample_type->type_strindex), vt->type);
			CHECK_STR(str(r->dictionary, pf->sample_type->unit_strindex), vt->unit);
			CHECK(pf->period_type);
			CHECK_STR(str(r->dictionary, pf->period_type->type_strindex), "cpu");
			CHECK_INT(pf->period, 1000);
			CHECK(pf->time_unix_nano == 1765000000000000000ULL); /* the meta's */
			CHECK(pf->duration_nano == 10000000000ULL);
			CHECK_INT(pf->profile_id.len, 16);
			for (size_t k = 0; k < 3; k++) {
				int64_t want = pprof_leaf_sum(pp[ri], t, leaves[ri][k]);

				CHECK(want > 0);
				CHECK_INT(otlp_leaf_sum(r->dictionary, pf, leaves[ri][k]), want);
				total += want;
			}
			for (size_t i = 0; i < pf->n_samples; i++)
				total -= pf->samples[i]->values[0];
			CHECK_INT(total, 0); /* no sample of another leaf */
		}
		/* a value of one type only: no sample of value 0 in the other */
		CHECK_INT(rp->scope_profiles[0]->profiles[0]->n_samples, 3);
		CHECK_INT(rp->scope_profiles[0]->profiles[1]->n_samples, 4);
	}
	two_free(r, pa, pb, raw);
	return PM_PASS;
}

static int t_labels(void)
{
	struct pm_profile *pa, *pb;
	uint8_t *raw;
	size_t len;
	Req *r = two(&pa, &pb, &raw, &len);
	const Dict *d;
	const Prof *pf;
	int seen = 0;

	CHECK(r);
	d = r->dictionary;
	pf = r->resource_profiles[0]->scope_profiles[0]->profiles[1];
	for (size_t i = 0; i < pf->n_samples; i++) {
		const Smp *s = pf->samples[i];
		const char *leaf = leaf_name(d, s);
		const Attr *a;

		CHECK(leaf);
		if (!strcmp(leaf, "a.work")) {
			a = smp_attr(d, s, "goroutine.id");
			CHECK(a && a->value->value_case == ANY_INT);
			CHECK_INT(a->value->int_value, 7);
			CHECK_INT(smp_attr(d, s, "thread.id")->value->int_value, 101);
			CHECK_STR(smp_attr(d, s, "handler")->value->string_value, "checkout");
			CHECK_STR(smp_attr(d, s, "go.goroutine.state")->value->string_value,
				  "waiting");
			CHECK_STR(smp_attr(d, s, "go.wait_reason")->value->string_value,
				  "chan receive");
			CHECK(smp_attr(d, s, "process.pid") == NULL); /* the resource's */
			CHECK_INT(s->n_attribute_indices, 5);
			seen |= 1;
		} else if (!strcmp(leaf, "a.bad??x") && s->n_attribute_indices) {
			a = smp_attr(d, s, "process.pid");
			CHECK(a && a->value->int_value == 200); /* not the resource's: kept */
			a = smp_attr(d, s, "go.goroutine.parked");
			CHECK(a && a->value->int_value == 5000);
			CHECK_STR(str(d, a->unit_strindex), "ns");
			seen |= 2;
		}
	}
	CHECK_INT(seen, 3);
	two_free(r, pa, pb, raw);
	return PM_PASS;
}

/* Two processes stay apart: no frame of the other's under a resource. */
static int t_apart(void)
{
	struct pm_profile *pa, *pb;
	uint8_t *raw;
	size_t len;
	Req *r = two(&pa, &pb, &raw, &len);

	CHECK(r);
	for (size_t ri = 0; ri < 2; ri++) {
		const ResProf *rp = r->resource_profiles[ri];
		char other = ri ? 'a' : 'b', own = ri ? 'b' : 'a';
		size_t n = 0;

		for (size_t t = 0; t < rp->scope_profiles[0]->n_profiles; t++) {
			const Prof *pf = rp->scope_profiles[0]->profiles[t];

			for (size_t i = 0; i < pf->n_samples; i++) {
				const char *leaf = leaf_name(r->dictionary, pf->samples[i]);

				CHECK(leaf && leaf[0] == own && leaf[0] != other);
				n++;
			}
		}
		CHECK_INT(n, 7);
	}
	two_free(r, pa, pb, raw);
	return PM_PASS;
}

/* The dictionary: zero entries first, every index in range, every string UTF-8. */
static int t_dictionary(void)
{
	struct pm_profile *pa, *pb;
	uint8_t *raw;
	size_t len;
	Req *r = two(&pa, &pb, &raw, &len);
	const Dict *d;
	bool gnu = false;

	CHECK(r && r->dictionary);
	d = r->dictionary;
	CHECK(d->n_string_table > 1 && !*d->string_table[0]);
	CHECK(d->n_mapping_table == 2); /* Mapping{} and the one binary, shared */
	CHECK(!d->mapping_table[0]->memory_start && !d->mapping_table[0]->filename_strindex &&
	      !d->mapping_table[0]->n_attribute_indices);
	CHECK(d->n_location_table > 1 && !d->location_table[0]->n_lines &&
	      !d->location_table[0]->address);
	CHECK(d->n_function_table > 1 && !d->function_table[0]->name_strindex);
	CHECK(d->n_link_table == 1 && d->link_table[0]->trace_id.len == 16 &&
	      d->link_table[0]->span_id.len == 8);
	CHECK(d->n_attribute_table > 1 && !d->attribute_table[0]->key_strindex &&
	      !d->attribute_table[0]->value);
	CHECK(d->n_stack_table > 1 && !d->stack_table[0]->n_location_indices);
	for (size_t i = 0; i < d->n_string_table; i++) {
		char *c = xstrdup(d->string_table[i]);

		CHECK_STR(pm_sanitize(c), d->string_table[i]); /* nothing left to replace */
		free(c);
		for (size_t j = 0; j < i; j++) /* each string once */
			CHECK(strcmp(d->string_table[i], d->string_table[j]));
	}
	for (size_t i = 1; i < d->n_mapping_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Mapping *m =
			d->mapping_table[i];

		CHECK_STR(str(d, m->filename_strindex), "/opt/bin/srv");
		CHECK_INT(m->n_attribute_indices, 1);
		CHECK_STR(str(d, d->attribute_table[m->attribute_indices[0]]->key_strindex),
			  "process.executable.build_id.gnu");
		CHECK_STR(d->attribute_table[m->attribute_indices[0]]->value->string_value,
			  "0123abcd");
		gnu = true;
	}
	CHECK(gnu);
	for (size_t i = 1; i < d->n_location_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Location *l =
			d->location_table[i];

		CHECK(l->mapping_index == 1 && l->address >= 0x401000);
		for (size_t j = 0; j < l->n_lines; j++)
			CHECK(l->lines[j]->function_index > 0 &&
			      (size_t)l->lines[j]->function_index < d->n_function_table);
		if (l->n_lines == 2) { /* inlined callee first, as in the pprof */
			CHECK(l->lines[0]->line == 31 && l->lines[1]->line == 22);
			const char *caller =
				str(d, d->function_table[l->lines[1]->function_index]->name_strindex);

			CHECK(caller && strcmp(caller + 1, ".work") == 0);
		}
	}
	for (size_t i = 1; i < d->n_stack_table; i++)
		for (size_t j = 0; j < d->stack_table[i]->n_location_indices; j++)
			CHECK(d->stack_table[i]->location_indices[j] > 0 &&
			      (size_t)d->stack_table[i]->location_indices[j] <
				      d->n_location_table);
	two_free(r, pa, pb, raw);
	return PM_PASS;
}

/*
 * Two intervals of one process share its resource; each profile id is
 * the same when the same interval is encoded again, and differs between
 * intervals and sample types.
 */
static int t_ids(void)
{
	struct pm_profile *p = cpu_profile("a", 100);
	struct pm_agent_meta m1, m2;
	struct pm_otlp *o = pm_otlp_new(), *o2 = pm_otlp_new();
	uint8_t *raw, *raw2;
	size_t len, len2;
	char err[128];
	Req *r;
	const Prof *const *pf;

	meta(&m1, 100, "srva", "");
	m2 = m1;
	m2.seq = 4;
	m2.start_ns += m2.duration_ns;
	CHECK_INT(pm_otlp_add_profile(o, p, &m1, err, sizeof(err)), 0);
	CHECK_INT(pm_otlp_add_profile(o, p, &m2, err, sizeof(err)), 0);
	CHECK_INT(pm_otlp_nresources(o), 1);
	CHECK_INT(pm_otlp_nprofiles(o), 4);
	pm_otlp_encode(o, &raw, &len);
	CHECK_INT(pm_otlp_add_profile(o2, p, &m1, err, sizeof(err)), 0);
	CHECK_INT(pm_otlp_add_profile(o2, p, &m2, err, sizeof(err)), 0);
	pm_otlp_encode(o2, &raw2, &len2);
	CHECK(len == len2 && !memcmp(raw, raw2, len)); /* the same request, the same bytes */
	r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, len, raw);
	CHECK(r && r->n_resource_profiles == 1);
	CHECK_INT(r->resource_profiles[0]->scope_profiles[0]->n_profiles, 4);
	pf = (const Prof *const *)r->resource_profiles[0]->scope_profiles[0]->profiles;
	for (size_t i = 0; i < 4; i++)
		for (size_t j = 0; j < i; j++)
			CHECK(memcmp(pf[i]->profile_id.data, pf[j]->profile_id.data, 16));
	CHECK(pf[2]->time_unix_nano == m2.start_ns);
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
		r, NULL);
	free(raw);
	free(raw2);
	pm_otlp_free(o);
	pm_otlp_free(o2);
	pm_prof_free(p);
	return PM_PASS;
}

/* Hostile files: an error naming the item, nothing returned, the request unchanged. */
static int t_hostile(void)
{
	struct pm_profile *p = cpu_profile("a", 100);
	struct pm_agent_meta m;
	struct pm_otlp_item it[2];
	struct pm_otlp *o = pm_otlp_new();
	/* field 6 (string_table), wire type 2, a length of 2^62 */
	static const uint8_t huge[] = { 0x32, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40 };
	static const uint8_t badgz[] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff };
	uint8_t *gz, *out = (uint8_t *)"x";
	size_t gzlen, len = 1;
	char err[256];

	meta(&m, 100, "srva", "");
	CHECK_INT(pm_pprof_encode(p, &gz, &gzlen), 0);
	it[0] = (struct pm_otlp_item){ gz, gzlen, &m };
	it[1] = (struct pm_otlp_item){ gz, gzlen / 2, &m };
	CHECK_INT(pm_otlp_request(it, 2, &out, &len, err, sizeof(err)), -EINVAL);
	CHECK(out == NULL && len == 0);
	CHECK(strstr(err, "profile 1 (pid 100): ") == err && strstr(err, "truncated"));
	it[1] = (struct pm_otlp_item){ badgz, sizeof(badgz), &m };
	CHECK(pm_otlp_request(it, 2, &out, &len, err, sizeof(err)) < 0 && !out);
	CHECK(strstr(err, "profile 1 ") && strstr(err, "gzip"));
	it[1] = (struct pm_otlp_item){ huge, sizeof(huge), &m };
	CHECK(pm_otlp_request(it, 2, &out, &len, err, sizeof(err)) < 0 && !out);
	it[1] = (struct pm_otlp_item){ huge, 0, &m };
	CHECK(pm_otlp_request(it, 2, &out, &len, err, sizeof(err)) < 0 && !out);
	CHECK(*err && !strchr(err, '\n'));
	/* a failed add leaves the request as it was */
	CHECK_INT(pm_otlp_add(o, gz, gzlen, &m, err, sizeof(err)), 0);
	CHECK(pm_otlp_add(o, huge, sizeof(huge), &m, err, sizeof(err)) < 0);
	CHECK(pm_otlp_add(o, gz, gzlen - 1, &m, err, sizeof(err)) < 0);
	CHECK_INT(pm_otlp_nprofiles(o), 2);
	CHECK_INT(pm_otlp_nresources(o), 1);
	free(gz);
	pm_otlp_free(o);
	pm_prof_free(p);
	return PM_PASS;
}

/* Hostile strings in the meta and labels: cut, sanitized, a label's key kept once. */
static int t_strings(void)
{
	struct pm_profile *p = pm_prof_new();
	struct pm_agent_meta m;
	struct pm_otlp *o = pm_otlp_new();
	static char big[3 * PM_OTLP_MAX_STR];
	struct pm_prof_label la[3] = { { "k\x1b[2J", "v\xc3\x28", 0, NULL },
				       { "goroutine", NULL, 9, NULL },
				       { "goroutine.id", "mine", 0, NULL } };
	struct pm_prof_line ln = { 0, 1 };
	uint64_t loc;
	int64_t v = 1;
	uint8_t *raw;
	size_t len;
	char err[128];
	Req *r;
	const Dict *d;
	const Smp *s;

	memset(big, 'a', sizeof(big) - 1);
	pm_prof_add_sample_type(p, "samples", "count");
	ln.func_id = pm_prof_func(p, big, "", "", 0);
	loc = pm_prof_loc(p, 0, 0x1000, &ln, 1);
	pm_prof_add(p, &loc, 1, &v, la, 3);
	meta(&m, 5, "s", "");
	memset(m.host, 'h', sizeof(m.host)); /* no NUL in the field */
	m.exe_name[0] = '\x7f';
	CHECK_INT(pm_otlp_add_profile(o, p, &m, err, sizeof(err)), 0);
	pm_otlp_encode(o, &raw, &len);
	r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, len, raw);
	CHECK(r);
	d = r->dictionary;
	CHECK_INT(strlen(res_attr(r->resource_profiles[0], "host.name")->value->string_value),
		  PM_META_STR - 1);
	CHECK_STR(res_attr(r->resource_profiles[0], "process.executable.name")
			  ->value->string_value,
		  "?");
	CHECK_INT(strlen(str(d, d->function_table[1]->name_strindex)), PM_OTLP_MAX_STR);
	s = r->resource_profiles[0]->scope_profiles[0]->profiles[0]->samples[0];
	CHECK_STR(smp_attr(d, s, "k?[2J")->value->string_value, "v?(");
	CHECK_INT(s->n_attribute_indices, 2); /* goroutine.id once */
	CHECK_INT(r->resource_profiles[0]->scope_profiles[0]->profiles[0]->dropped_attributes_count,
		  1);
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
		r, NULL);
	free(raw);
	pm_otlp_free(o);
	pm_prof_free(p);
	return PM_PASS;
}

/* A sample of 100 labels keeps 64 attributes; the rest are counted as dropped. */
static int t_many_labels(void)
{
	struct pm_profile *p = pm_prof_new();
	struct pm_prof_label la[100];
	char keys[100][8];
	struct pm_prof_line ln = { 0, 1 };
	struct pm_agent_meta m;
	struct pm_otlp *o = pm_otlp_new();
	uint64_t loc;
	int64_t v = 1;
	uint8_t *raw;
	size_t len;
	char err[128];
	Req *r;
	const Prof *pf;

	for (int i = 0; i < 100; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		la[i] = (struct pm_prof_label){ keys[i], "v", 0, NULL };
	}
	pm_prof_add_sample_type(p, "samples", "count");
	ln.func_id = pm_prof_func(p, "f", "", "", 0);
	loc = pm_prof_loc(p, 0, 0x1000, &ln, 1);
	pm_prof_add(p, &loc, 1, &v, la, 100);
	meta(&m, 5, "s", "");
	CHECK_INT(pm_otlp_add_profile(o, p, &m, err, sizeof(err)), 0);
	pm_otlp_encode(o, &raw, &len);
	r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, len, raw);
	CHECK(r);
	pf = r->resource_profiles[0]->scope_profiles[0]->profiles[0];
	CHECK_INT(pf->samples[0]->n_attribute_indices, 64);
	CHECK_INT(pf->dropped_attributes_count, 36);
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
		r, NULL);
	free(raw);
	pm_otlp_free(o);
	pm_prof_free(p);
	return PM_PASS;
}

/* A collector's answer: partial success read, its message sanitized; junk and nothing said. */
static int t_rejected(void)
{
	/* partial_success { rejected_profiles: 2, error_message: "too old" } */
	static const uint8_t two[] = { 0x0a, 0x0b, 0x08, 0x02, 0x12, 0x07, 't', 'o',
				       'o', ' ', 'o', 'l', 'd' };
	/* rejected 0, a warning with an escape sequence */
	static const uint8_t warn[] = { 0x0a, 0x06, 0x12, 0x04, 0x1b, '[', '2', 'J' };
	/* a length past the end; "ok\n" (not protobuf) */
	static const uint8_t cut[] = { 0x0a, 0x20, 0x08, 0x02 };
	static const uint8_t ok[] = { 'o', 'k', '\n' };
	char msg[64];

	CHECK_INT(pm_otlp_rejected(two, sizeof(two), msg, sizeof(msg)), 2);
	CHECK_STR(msg, "too old");
	CHECK_INT(pm_otlp_rejected(warn, sizeof(warn), msg, sizeof(msg)), 0);
	CHECK_STR(msg, "?[2J");
	CHECK_INT(pm_otlp_rejected(NULL, 0, msg, sizeof(msg)), 0);
	CHECK_STR(msg, "");
	CHECK(pm_otlp_rejected(cut, sizeof(cut), msg, sizeof(msg)) < 0);
	CHECK(pm_otlp_rejected(ok, sizeof(ok), msg, sizeof(msg)) < 0);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "resource", t_resource },
	{ "rejected", t_rejected },
	{ "values", t_values },
	{ "labels", t_labels },
	{ "apart", t_apart },
	{ "dictionary", t_dictionary },
	{ "ids", t_ids },
	{ "hostile", t_hostile },
	{ "strings", t_strings },
	{ "many-labels", t_many_labels },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "otlp", tests);
}
