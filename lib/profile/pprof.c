/*
 * pprof: struct pm_profile <-> profile.proto (protobuf-c), gzip'd (zlib).
 *
 * Writing maps the profile's dense ids straight onto pprof ids and builds
 * the string table in a fixed traversal order, so equal profiles give equal
 * bytes (the gzip header carries mtime 0 and no name).
 *
 * Reading trusts nothing: the gzip stream is inflated into a buffer that may
 * not grow past 1 GiB, the protobuf is unpacked by protobuf-c (which checks
 * the wire format), and then every string index and every id reference is
 * checked before it is used.  File ids may be any nonzero numbers; they are
 * renumbered to the profile's dense ids through small hash maps.
 */
#include "profile/pprof.h"

#include "base/outfile.h"
#include "profile/profile.h"
#include "base/util.h"

#include "profile.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define MAX_INFLATED ((size_t)1 << 30)
#define MAX_FILE ((size_t)1 << 30)

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;

/* ==== writing ==== */

/*
 * String table under construction.  The profile interns its strings, so one
 * text has one pointer and the table can be keyed by pointer.
 */
struct strtab {
	const char **v;
	size_t n, cap;
	const char **hkey;
	int64_t *hval;
	size_t hcap, hn;
};

static void st_put(struct strtab *t, const char *s, int64_t idx)
{
	size_t mask = t->hcap - 1, i = pm_hash_u64((uint64_t)(uintptr_t)s) & mask;

	while (t->hkey[i])
		i = (i + 1) & mask;
	t->hkey[i] = s;
	t->hval[i] = idx;
	t->hn++;
}

static int64_t st_idx(struct strtab *t, const char *s)
{
	size_t mask, i;

	if (!s || !*s)
		return 0;
	if (t->hcap) {
		mask = t->hcap - 1;
		for (i = pm_hash_u64((uint64_t)(uintptr_t)s) & mask; t->hkey[i]; i = (i + 1) & mask)
			if (t->hkey[i] == s)
				return t->hval[i];
	}
	if ((t->hn + 1) * 2 > t->hcap) {
		const char **ok = t->hkey;
		int64_t *ov = t->hval;
		size_t ocap = t->hcap;

		t->hcap = ocap ? ocap * 2 : 256;
		t->hkey = xcalloc(t->hcap, sizeof(*t->hkey));
		t->hval = xmalloc(t->hcap * sizeof(*t->hval));
		t->hn = 0;
		for (i = 0; i < ocap; i++)
			if (ok[i])
				st_put(t, ok[i], ov[i]);
		free(ok);
		free(ov);
	}
	PM_GROW(t->v, t->cap, t->n + 1);
	t->v[t->n] = s;
	st_put(t, s, (int64_t)t->n);
	return (int64_t)t->n++;
}

/* Everything the message points to that is not the profile's own memory. */
struct pbbuild {
	PbProfile msg;
	struct strtab st;
	PbValueType *vt, **vtp, period;
	PbSample *smp, **smpp;
	PbLabel *lab, **labp;
	PbMapping *map, **mapp;
	PbLocation *loc, **locp;
	PbLine *line, **linep;
	PbFunction *fn, **fnp;
	int64_t *comments;
};

/*
 * pb_build()'s parts, called in the order of the string table: each
 * st_idx() of a new string appends it, so the order of these calls is the
 * order of the file's strings (the same profile, the same bytes).
 */
static void pb_sample_types(struct pbbuild *b, const struct pm_profile *p)
{
	size_t nt = pm_prof_nsample_types(p), i;

	b->vt = xcalloc(nt, sizeof(*b->vt));
	b->vtp = xcalloc(nt, sizeof(*b->vtp));
	for (i = 0; i < nt; i++) {
		const struct pm_prof_vtype *t = pm_prof_sample_type(p, i);

		perftools__profiles__value_type__init(&b->vt[i]);
		b->vt[i].type = st_idx(&b->st, t->type);
		b->vt[i].unit = st_idx(&b->st, t->unit);
		b->vtp[i] = &b->vt[i];
	}
	b->msg.n_sample_type = nt;
	b->msg.sample_type = b->vtp;
}

/* The samples: values and stacks point into the profile's arrays; labels in one array. */
static void pb_samples(struct pbbuild *b, const struct pm_profile *p)
{
	size_t nt = pm_prof_nsample_types(p), ns = pm_prof_nsamples(p), nlab = 0, i, j, k;

	for (i = 0; i < ns; i++)
		nlab += pm_prof_sample_at(p, i)->nlabels;
	b->smp = xcalloc(ns, sizeof(*b->smp));
	b->smpp = xcalloc(ns, sizeof(*b->smpp));
	b->lab = xcalloc(nlab, sizeof(*b->lab));
	b->labp = xcalloc(nlab, sizeof(*b->labp));
	for (i = 0, k = 0; i < ns; i++) {
		const struct pm_prof_sample *s = pm_prof_sample_at(p, i);
		PbSample *o = &b->smp[i];

		perftools__profiles__sample__init(o);
		o->n_location_id = s->nlocs;
		o->location_id = (uint64_t *)s->loc_ids;
		o->n_value = nt;
		o->value = (int64_t *)s->values;
		o->n_label = s->nlabels;
		o->label = &b->labp[k];
		for (j = 0; j < s->nlabels; j++, k++) {
			const struct pm_prof_label *l = &s->labels[j];
			PbLabel *ol = &b->lab[k];

			perftools__profiles__label__init(ol);
			ol->key = st_idx(&b->st, l->key);
			if (l->str) {
				ol->str = st_idx(&b->st, l->str);
			} else {
				ol->num = l->num;
				ol->num_unit = st_idx(&b->st, l->num_unit);
			}
			b->labp[k] = ol;
		}
		b->smpp[i] = o;
	}
	b->msg.n_sample = ns;
	b->msg.sample = b->smpp;
}

static void pb_mappings(struct pbbuild *b, const struct pm_profile *p)
{
	size_t nm = pm_prof_nmappings(p), i;

	b->map = xcalloc(nm, sizeof(*b->map));
	b->mapp = xcalloc(nm, sizeof(*b->mapp));
	for (i = 0; i < nm; i++) {
		const struct pm_prof_mapping *mp = pm_prof_mapping_at(p, i);
		PbMapping *o = &b->map[i];

		perftools__profiles__mapping__init(o);
		o->id = mp->id;
		o->memory_start = mp->start;
		o->memory_limit = mp->limit;
		o->file_offset = mp->offset;
		o->filename = st_idx(&b->st, mp->file);
		o->build_id = st_idx(&b->st, mp->build_id);
		o->has_functions = mp->has_functions;
		o->has_filenames = mp->has_filenames;
		o->has_line_numbers = mp->has_lines;
		o->has_inline_frames = mp->has_inline;
		b->mapp[i] = o;
	}
	b->msg.n_mapping = nm;
	b->msg.mapping = b->mapp;
}

/* The locations, their lines in one array. */
static void pb_locations(struct pbbuild *b, const struct pm_profile *p)
{
	size_t nl = pm_prof_nlocs(p), nlines = 0, i, j, k;

	for (i = 0; i < nl; i++)
		nlines += pm_prof_loc_at(p, i)->nlines;
	b->loc = xcalloc(nl, sizeof(*b->loc));
	b->locp = xcalloc(nl, sizeof(*b->locp));
	b->line = xcalloc(nlines, sizeof(*b->line));
	b->linep = xcalloc(nlines, sizeof(*b->linep));
	for (i = 0, k = 0; i < nl; i++) {
		const struct pm_prof_loc *l = pm_prof_loc_at(p, i);
		PbLocation *o = &b->loc[i];

		perftools__profiles__location__init(o);
		o->id = l->id;
		o->mapping_id = l->mapping_id;
		o->address = l->address;
		o->n_line = l->nlines;
		o->line = &b->linep[k];
		for (j = 0; j < l->nlines; j++, k++) {
			perftools__profiles__line__init(&b->line[k]);
			b->line[k].function_id = l->lines[j].func_id;
			b->line[k].line = l->lines[j].line;
			b->linep[k] = &b->line[k];
		}
		b->locp[i] = o;
	}
	b->msg.n_location = nl;
	b->msg.location = b->locp;
}

static void pb_functions(struct pbbuild *b, const struct pm_profile *p)
{
	size_t nf = pm_prof_nfuncs(p), i;

	b->fn = xcalloc(nf, sizeof(*b->fn));
	b->fnp = xcalloc(nf, sizeof(*b->fnp));
	for (i = 0; i < nf; i++) {
		const struct pm_prof_func *f = pm_prof_func_at(p, i);
		PbFunction *o = &b->fn[i];

		perftools__profiles__function__init(o);
		o->id = f->id;
		o->name = st_idx(&b->st, f->name);
		o->system_name = st_idx(&b->st, f->system_name);
		o->filename = st_idx(&b->st, f->file);
		o->start_line = f->start_line;
		b->fnp[i] = o;
	}
	b->msg.n_function = nf;
	b->msg.function = b->fnp;
}

/* Time, period, comments and the default sample type. */
static void pb_trailer(struct pbbuild *b, const struct pm_profile *p)
{
	size_t nc = pm_prof_ncomments(p), i;
	const struct pm_prof_vtype *pt;
	PbProfile *m = &b->msg;

	m->time_nanos = pm_prof_time(p);
	m->duration_nanos = pm_prof_duration(p);
	pt = pm_prof_period_type(p);
	if (pt) {
		perftools__profiles__value_type__init(&b->period);
		b->period.type = st_idx(&b->st, pt->type);
		b->period.unit = st_idx(&b->st, pt->unit);
		m->period_type = &b->period;
		m->period = pm_prof_period(p);
	}
	b->comments = xcalloc(nc, sizeof(*b->comments));
	for (i = 0; i < nc; i++)
		b->comments[i] = st_idx(&b->st, pm_prof_comment(p, i));
	m->n_comment = nc;
	m->comment = b->comments;
	if (pm_prof_nsample_types(p))
		m->default_sample_type =
			st_idx(&b->st, pm_prof_sample_type(p, pm_prof_default_type(p))->type);
}

static void pb_build(struct pbbuild *b, const struct pm_profile *p)
{
	memset(b, 0, sizeof(*b));
	perftools__profiles__profile__init(&b->msg);
	PM_GROW(b->st.v, b->st.cap, 1);
	b->st.v[b->st.n++] = ""; /* string_table[0]; st_idx() maps every "" to it */

	pb_sample_types(b, p);
	pb_samples(b, p);
	pb_mappings(b, p);
	pb_locations(b, p);
	pb_functions(b, p);
	pb_trailer(b, p);

	b->msg.n_string_table = b->st.n;
	b->msg.string_table = (char **)b->st.v;
}

static void pb_release(struct pbbuild *b)
{
	free(b->st.v);
	free(b->st.hkey);
	free(b->st.hval);
	free(b->vt);
	free(b->vtp);
	free(b->smp);
	free(b->smpp);
	free(b->lab);
	free(b->labp);
	free(b->map);
	free(b->mapp);
	free(b->loc);
	free(b->locp);
	free(b->line);
	free(b->linep);
	free(b->fn);
	free(b->fnp);
	free(b->comments);
}

/* gzip @in with a fixed header (mtime 0, no name, OS unix) so output is reproducible. */
static int gzip_buf(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen)
{
	z_stream z;
	gz_header hdr;
	size_t cap, used = 0, in_left = len;
	uint8_t *buf;
	int rc;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	memset(&hdr, 0, sizeof(hdr));
	hdr.os = 3;
	deflateSetHeader(&z, &hdr);
	cap = len <= UINT_MAX ? deflateBound(&z, (uLong)len) : len + len / 1000 + 4096;
	buf = xmalloc(cap);
	z.next_in = (Bytef *)in;
	for (;;) {
		if (!z.avail_in && in_left) {
			z.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
			in_left -= z.avail_in;
		}
		if (used == cap) {
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
		z.next_out = buf + used;
		z.avail_out = cap - used > UINT_MAX ? UINT_MAX : (uInt)(cap - used);
		rc = deflate(&z, in_left ? Z_NO_FLUSH : Z_FINISH);
		used = (size_t)(z.next_out - buf);
		if (rc == Z_STREAM_END)
			break;
		if (rc != Z_OK && rc != Z_BUF_ERROR) {
			deflateEnd(&z);
			free(buf);
			return -EIO;
		}
	}
	deflateEnd(&z);
	*out = buf;
	*outlen = used;
	return 0;
}

int pm_pprof_encode(const struct pm_profile *p, uint8_t **out, size_t *len)
{
	struct pbbuild b;
	uint8_t *raw;
	size_t rawlen;
	int rc;

	pb_build(&b, p);
	rawlen = perftools__profiles__profile__get_packed_size(&b.msg);
	raw = xmalloc(rawlen);
	if (perftools__profiles__profile__pack(&b.msg, raw) != rawlen) {
		free(raw);
		pb_release(&b);
		return -EIO;
	}
	pb_release(&b);
	rc = gzip_buf(raw, rawlen, out, len);
	free(raw);
	return rc;
}

int pm_pprof_write(const struct pm_profile *p, const char *path, const struct pm_owner *owner)
{
	struct pm_outfile f;
	uint8_t *buf;
	size_t len;
	int rc;

	rc = pm_pprof_encode(p, &buf, &len);
	if (rc)
		return rc;
	if (strcmp(path, "-") == 0) {
		fflush(stdout);
		rc = pm_write_all(STDOUT_FILENO, buf, len);
	} else {
		rc = pm_outfile_open(&f, path, owner);
		if (!rc)
			rc = pm_write_all(f.fd, buf, len);
		if (!rc)
			rc = pm_outfile_commit(&f);
		pm_outfile_abort(&f);
	}
	free(buf);
	return rc;
}

/* ==== reading ==== */

static bool starts_gzip(const uint8_t *b, size_t n)
{
	return n >= 1 && b[0] == 0x1f && (n == 1 || b[1] == 0x8b);
}

/*
 * One inflate pass over a gzip stream (several members are concatenated, as
 * gunzip and Go do).  With @out NULL it only counts the bytes, through a
 * small scratch buffer, and stops once they pass MAX_INFLATED: the caller
 * sizes the real buffer from that count, so a zip bomb costs CPU time but
 * no memory.  With @out it fills exactly @cap bytes.
 */
static int inflate_pass(const uint8_t *in, size_t len, uint8_t *out, size_t cap, size_t *total,
			char *err, size_t errlen)
{
	uint8_t scratch[65536];
	z_stream z;
	size_t in_left = len, used = 0, count = 0;
	int rc, ret = 0;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 16) != Z_OK) {
		pm_seterr(err, errlen, "cannot start zlib");
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	for (;;) {
		if (!z.avail_in && in_left) {
			z.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
			in_left -= z.avail_in;
		}
		if (out) {
			z.next_out = out + used;
			z.avail_out = cap - used > UINT_MAX ? UINT_MAX : (uInt)(cap - used);
		} else {
			z.next_out = scratch;
			z.avail_out = sizeof(scratch);
		}
		rc = inflate(&z, Z_NO_FLUSH);
		if (out)
			used = (size_t)(z.next_out - out);
		else
			count += (size_t)(z.next_out - scratch);
		if (!out && count > MAX_INFLATED) {
			pm_seterr(err, errlen,
			       "not a pprof profile: gzip data inflates to more than 1 GiB");
			ret = -EFBIG;
			break;
		}
		if (rc == Z_STREAM_END) {
			if (!z.avail_in && !in_left)
				break;
			if (!z.avail_in) {
				z.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
				in_left -= z.avail_in;
			}
			if (!starts_gzip(z.next_in, z.avail_in)) {
				pm_seterr(err, errlen, "corrupt gzip stream: trailing garbage");
				ret = -EINVAL;
				break;
			}
			inflateReset(&z);
			continue;
		}
		if (rc == Z_OK)
			continue;
		if (rc == Z_BUF_ERROR) {
			if (z.avail_out) {
				/* output space was not what stopped it: the input ran out */
				pm_seterr(err, errlen, "truncated gzip stream");
				ret = -EINVAL;
				break;
			}
			if (out) {
				/* more than the first pass counted: the input changed */
				pm_seterr(err, errlen, "corrupt gzip stream: inconsistent length");
				ret = -EINVAL;
				break;
			}
			continue;
		}
		if (rc == Z_MEM_ERROR) {
			pm_seterr(err, errlen, "out of memory inflating");
			ret = -ENOMEM;
			break;
		}
		pm_seterr(err, errlen, "corrupt gzip stream: %s",
		       z.msg ? z.msg : rc == Z_NEED_DICT ? "needs a dictionary" : "bad data");
		ret = -EINVAL;
		break;
	}
	inflateEnd(&z);
	*total = out ? used : count;
	return ret;
}

/* Inflate @in into a new buffer of at most MAX_INFLATED bytes: count first, then fill. */
static int gunzip(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen, char *err,
		  size_t errlen)
{
	size_t n, got;
	uint8_t *buf;
	int rc;

	rc = inflate_pass(in, len, NULL, 0, &n, err, errlen);
	if (rc)
		return rc;
	buf = xmalloc(n + 1);
	rc = inflate_pass(in, len, buf, n, &got, err, errlen);
	if (!rc && got != n) {
		pm_seterr(err, errlen, "corrupt gzip stream: inconsistent length");
		rc = -EINVAL;
	}
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	*outlen = n;
	return 0;
}

/* File id -> profile id, open addressing; key 0 marks an empty slot (ids are nonzero). */
struct idmap {
	uint64_t *key, *val;
	size_t cap;
	uint64_t seed; /* the ids are the file's: a secret seed, so none can be aimed at a chain */
};

static void idmap_init(struct idmap *m, size_t n)
{
	m->cap = 16;
	m->seed = pm_hash_seed();
	while (m->cap < n * 2 + 2)
		m->cap *= 2;
	m->key = xcalloc(m->cap, sizeof(*m->key));
	m->val = xcalloc(m->cap, sizeof(*m->val));
}

static void idmap_free(struct idmap *m)
{
	free(m->key);
	free(m->val);
}

/* false if @key is already there. */
static bool idmap_put(struct idmap *m, uint64_t key, uint64_t val)
{
	size_t mask = m->cap - 1, i;

	for (i = pm_hash_u64(key ^ m->seed) & mask; m->key[i]; i = (i + 1) & mask)
		if (m->key[i] == key)
			return false;
	m->key[i] = key;
	m->val[i] = val;
	return true;
}

/* 0 when absent. */
static uint64_t idmap_get(const struct idmap *m, uint64_t key)
{
	size_t mask = m->cap - 1, i;

	if (!key)
		return 0;
	for (i = pm_hash_u64(key ^ m->seed) & mask; m->key[i]; i = (i + 1) & mask)
		if (m->key[i] == key)
			return m->val[i];
	return 0;
}

/* One conversion: the message read, where its error goes, and what it builds. */
struct conv {
	const PbProfile *m;
	char *err;
	size_t errlen;
	struct pm_profile *p;
	struct idmap maps, funcs, locs; /* the file's ids -> the profile's */
};

/* The string at @idx, or NULL with the error set naming the subject. */
static const char *str_of(struct conv *c, int64_t idx, const char *fmt, ...) PM_PRINTF(3, 4);
static const char *str_of(struct conv *c, int64_t idx, const char *fmt, ...)
{
	char what[128];
	va_list ap;

	if (idx >= 0 && (uint64_t)idx < c->m->n_string_table)
		return c->m->string_table[idx] ? c->m->string_table[idx] : "";
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	pm_seterr(c->err, c->errlen,
	       "not a pprof profile: %s is string %lld, outside the table of %zu", what,
	       (long long)idx, c->m->n_string_table);
	return NULL;
}

#define S(dst, idx, ...)                                         \
	do {                                                     \
		if (!((dst) = str_of(c, (idx), __VA_ARGS__)))    \
			goto bad;                                \
	} while (0)

#define BAD(...)                                                          \
	do {                                                              \
		pm_seterr(c->err, c->errlen, "not a pprof profile: " __VA_ARGS__); \
		goto bad;                                                 \
	} while (0)

/*
 * convert()'s parts, in the order the file is checked (the first fault
 * found is the one reported).  Each returns 0, or -EINVAL with the error
 * set; what it allocated itself it frees on both paths, the profile and
 * the id maps are convert()'s.
 */

/* The string table, sample and period types, time, comments and the other strings. */
static int conv_header(struct conv *c)
{
	const PbProfile *m = c->m;
	struct pm_profile *p = c->p;
	const char *str;
	size_t i;

	if (!m->n_string_table)
		BAD("the string table is empty");
	if (m->string_table[0] && m->string_table[0][0])
		BAD("string_table[0] is not empty");

	for (i = 0; i < m->n_sample_type; i++) {
		const PbValueType *t = m->sample_type[i];
		const char *ty, *un;

		S(ty, t->type, "sample_type[%zu].type", i);
		S(un, t->unit, "sample_type[%zu].unit", i);

		pm_prof_add_sample_type(p, ty, un);
	}
	if (m->default_sample_type) {
		const char *d;
		long idx;

		S(d, m->default_sample_type, "default_sample_type");
		idx = pm_prof_find_sample_type(p, d);
		if (idx >= 0)
			pm_prof_set_default_type(p, (size_t)idx);
	}
	if (m->period_type) {
		const char *ty, *un;

		S(ty, m->period_type->type, "period_type.type");
		S(un, m->period_type->unit, "period_type.unit");

		pm_prof_set_period(p, ty, un, m->period);
	} else if (m->period) {
		pm_prof_set_period(p, "", "", m->period);
	}
	pm_prof_set_time(p, m->time_nanos, m->duration_nanos);
	for (i = 0; i < m->n_comment; i++) {
		const char *t;

		S(t, m->comment[i], "comment[%zu]", i);
		pm_prof_add_comment(p, t);
	}
	S(str, m->drop_frames, "drop_frames");
	S(str, m->keep_frames, "keep_frames");
	S(str, m->doc_url, "doc_url");
	return 0;
bad:
	return -EINVAL;
}

static int conv_mappings(struct conv *c)
{
	const PbProfile *m = c->m;
	size_t i;

	for (i = 0; i < m->n_mapping; i++) {
		const PbMapping *mp = m->mapping[i];
		const char *file, *bid;
		uint64_t id;

		if (!mp->id)
			BAD("mapping[%zu] has id 0", i);
		S(file, mp->filename, "the file name of mapping %llu", (unsigned long long)mp->id);
		S(bid, mp->build_id, "the build id of mapping %llu", (unsigned long long)mp->id);
		id = pm_prof_mapping(c->p, mp->memory_start, mp->memory_limit, mp->file_offset,
				     file, bid);
		if (!idmap_put(&c->maps, mp->id, id))
			BAD("two mappings have id %llu", (unsigned long long)mp->id);
		pm_prof_mapping_flags(c->p, id, mp->has_functions, mp->has_filenames,
				      mp->has_line_numbers, mp->has_inline_frames);
	}
	return 0;
bad:
	return -EINVAL;
}

static int conv_functions(struct conv *c)
{
	const PbProfile *m = c->m;
	size_t i;

	for (i = 0; i < m->n_function; i++) {
		const PbFunction *f = m->function[i];
		const char *name, *sys, *file;
		unsigned long long fid = f->id;

		if (!f->id)
			BAD("function[%zu] has id 0", i);
		S(name, f->name, "the name of function %llu", fid);
		S(sys, f->system_name, "the system name of function %llu", fid);
		S(file, f->filename, "the file name of function %llu", fid);
		if (!idmap_put(&c->funcs, f->id,
			       pm_prof_func(c->p, name, sys, file, f->start_line)))
			BAD("two functions have id %llu", fid);
	}
	return 0;
bad:
	return -EINVAL;
}

/* The locations, after the mappings and functions they name. */
static int conv_locations(struct conv *c)
{
	const PbProfile *m = c->m;
	struct pm_prof_line *lines = NULL;
	size_t capl = 0, i, j;

	for (i = 0; i < m->n_location; i++) {
		const PbLocation *l = m->location[i];
		unsigned long long lid = l->id;
		uint64_t mid = 0;

		if (!l->id)
			BAD("location[%zu] has id 0", i);
		if (l->mapping_id) {
			mid = idmap_get(&c->maps, l->mapping_id);
			if (!mid)
				BAD("location %llu has no mapping %llu", lid,
				    (unsigned long long)l->mapping_id);
		}
		PM_GROW(lines, capl, l->n_line + 1);
		for (j = 0; j < l->n_line; j++) {
			const PbLine *ln = l->line[j];

			lines[j].func_id = idmap_get(&c->funcs, ln->function_id);
			if (!lines[j].func_id)
				BAD("location %llu has no function %llu", lid,
				    (unsigned long long)ln->function_id);
			lines[j].line = ln->line;
		}
		if (!idmap_put(&c->locs, l->id,
			       pm_prof_loc(c->p, mid, l->address, lines, l->n_line)))
			BAD("two locations have id %llu", lid);
	}
	free(lines);
	return 0;
bad:
	free(lines);
	return -EINVAL;
}

/* One sample's labels into @labels (room for all of them). */
static int conv_labels(struct conv *c, const PbSample *s, size_t i, struct pm_prof_label *labels)
{
	size_t j;

	for (j = 0; j < s->n_label; j++) {
		const PbLabel *lb = s->label[j];

		S(labels[j].key, lb->key, "the key of label %zu of sample %zu", j, i);
		labels[j].str = NULL;
		labels[j].num = 0;
		labels[j].num_unit = NULL;
		if (lb->str) {
			S(labels[j].str, lb->str, "label %zu of sample %zu", j, i);
		} else {
			labels[j].num = lb->num;
			if (lb->num_unit)
				S(labels[j].num_unit, lb->num_unit,
				  "the unit of label %zu of sample %zu", j, i);
		}
	}
	return 0;
bad:
	return -EINVAL;
}

/* The samples, after the locations they name. */
static int conv_samples(struct conv *c)
{
	const PbProfile *m = c->m;
	uint64_t *stack = NULL;
	struct pm_prof_label *labels = NULL;
	int64_t *values = NULL;
	size_t caps = 0, caplab = 0, i, j;

	if (m->n_sample && !m->n_sample_type)
		BAD("samples but no sample types");
	values = xcalloc(m->n_sample_type + 1, sizeof(*values));
	for (i = 0; i < m->n_sample; i++) {
		const PbSample *s = m->sample[i];

		if (s->n_value != m->n_sample_type)
			BAD("sample %zu has %zu values for %zu sample types", i, s->n_value,
			    m->n_sample_type);
		PM_GROW(stack, caps, s->n_location_id + 1);
		for (j = 0; j < s->n_location_id; j++) {
			stack[j] = idmap_get(&c->locs, s->location_id[j]);
			if (!stack[j])
				BAD("sample %zu has no location %llu", i,
				    (unsigned long long)s->location_id[j]);
		}
		PM_GROW(labels, caplab, s->n_label + 1);
		if (conv_labels(c, s, i, labels))
			goto bad;
		if (s->n_value)
			memcpy(values, s->value, s->n_value * sizeof(*values));
		pm_prof_add(c->p, stack, s->n_location_id, values, labels, s->n_label);
	}
	free(values);
	free(labels);
	free(stack);
	return 0;
bad:
	free(values);
	free(labels);
	free(stack);
	return -EINVAL;
}

static int convert(struct conv *c, struct pm_profile **out)
{
	const PbProfile *m = c->m;
	int rc;

	c->p = pm_prof_new();
	idmap_init(&c->maps, m->n_mapping);
	idmap_init(&c->funcs, m->n_function);
	idmap_init(&c->locs, m->n_location);
	rc = conv_header(c);
	if (!rc)
		rc = conv_mappings(c);
	if (!rc)
		rc = conv_functions(c);
	if (!rc)
		rc = conv_locations(c);
	if (!rc)
		rc = conv_samples(c);
	idmap_free(&c->maps);
	idmap_free(&c->funcs);
	idmap_free(&c->locs);
	if (rc) {
		pm_prof_free(c->p);
		return rc;
	}
	*out = c->p;
	return 0;
}

int pm_pprof_decode(const uint8_t *buf, size_t len, struct pm_profile **out, char *err,
		    size_t errlen)
{
	uint8_t *raw = NULL;
	size_t rawlen;
	PbProfile *m;
	struct conv c;
	bool gz;
	int rc;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (!len) {
		pm_seterr(err, errlen, "file is empty");
		return -EINVAL;
	}
	gz = len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b;
	if (gz) {
		rc = gunzip(buf, len, &raw, &rawlen, err, errlen);
		if (rc)
			return rc;
		m = perftools__profiles__profile__unpack(NULL, rawlen, raw);
		free(raw);
		if (!m) {
			pm_seterr(err, errlen,
			       "not a pprof profile: the data is not a protobuf message");
			return -EINVAL;
		}
	} else {
		m = perftools__profiles__profile__unpack(NULL, len, buf);
		if (!m || !m->n_string_table) {
			pm_seterr(err, errlen,
			       "not a pprof profile (no gzip header and not a protobuf message)");
			if (m)
				perftools__profiles__profile__free_unpacked(m, NULL);
			return -EINVAL;
		}
	}
	c.m = m;
	c.err = err;
	c.errlen = errlen;
	rc = convert(&c, out);
	perftools__profiles__profile__free_unpacked(m, NULL);
	return rc;
}

int pm_pprof_read(const char *path, struct pm_profile **out, char *err, size_t errlen)
{
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	int fd, rc;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		pm_seterr(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			if (cap > MAX_FILE) {
				close(fd);
				free(buf);
				pm_seterr(err, errlen, "file is larger than 1 GiB");
				return -EFBIG;
			}
			/* one byte past the limit tells "exactly 1 GiB" from "more" */
			cap = cap ? PM_MIN(cap * 2, MAX_FILE + 1) : 65536;
			buf = xrealloc(buf, cap);
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			close(fd);
			free(buf);
			pm_seterr(err, errlen, "%s", strerror(-rc));
			return rc;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	rc = pm_pprof_decode(buf, len, out, err, errlen);
	free(buf);
	return rc;
}
