/*
 * profile: interned, pprof-shaped profile.
 *
 * Storage.  Every record type (mapping, function, location, sample) lives in
 * a chunked vector: fixed-size chunks that never move, so the pointers the
 * accessors hand out stay valid while the profile keeps growing.  Variable
 * parts (strings, line arrays, stacks, values, labels) are bump-allocated
 * from an arena that is freed in one go.
 *
 * Interning.  Strings are interned first, so every later key compares
 * strings by pointer.  Each record type has an open-addressing hash table
 * (linear probing, power-of-two size, load <= 1/2) of record indexes with
 * their full 64-bit hash, so lookups rarely touch a record that does not
 * match and growing never rehashes keys.
 */
#include "profile/profile.h"

#include "base/util.h"

#include <stdlib.h>
#include <string.h>


/* ---- arena ---- */

struct arena_blk {
	struct arena_blk *next;
	size_t size;
	max_align_t data[];
};

struct arena {
	struct arena_blk *head;
	char *cur;
	size_t left;
};

static void *arena_alloc(struct arena *a, size_t n)
{
	void *p;

	n = (n + 7) & ~(size_t)7;
	if (n > a->left) {
		size_t sz = PM_MAX(n, 65536 - sizeof(struct arena_blk));
		struct arena_blk *b = xmalloc(sizeof(*b) + sz);

		b->next = a->head;
		b->size = sz;
		a->head = b;
		a->cur = (char *)b->data;
		a->left = sz;
	}
	p = a->cur;
	a->cur += n;
	a->left -= n;
	return p;
}

static void *arena_dup(struct arena *a, const void *src, size_t n)
{
	void *p;

	if (!n)
		return NULL;
	p = arena_alloc(a, n);
	memcpy(p, src, n);
	return p;
}

static void arena_free(struct arena *a)
{
	struct arena_blk *b = a->head, *next;

	for (; b; b = next) {
		next = b->next;
		free(b);
	}
	memset(a, 0, sizeof(*a));
}

/* ---- chunked vector: elements never move ---- */

#define CHUNK_SHIFT 9

struct svec {
	char **chunks;
	size_t nchunks, capchunks, n, esz;
	unsigned shift; /* chunks of 1 << shift elements (CHUNK_SHIFT unless told fewer) */
};

static void *svec_at(const struct svec *v, size_t i)
{
	return v->chunks[i >> v->shift] + (i & (((size_t)1 << v->shift) - 1)) * v->esz;
}

/* A new zeroed element at index v->n. */
static void *svec_push(struct svec *v)
{
	if ((v->n >> v->shift) >= v->nchunks) {
		PM_GROW(v->chunks, v->capchunks, v->nchunks + 1);
		v->chunks[v->nchunks++] = xcalloc((size_t)1 << v->shift, v->esz);
	}
	return svec_at(v, v->n++);
}

static void svec_free(struct svec *v)
{
	for (size_t i = 0; i < v->nchunks; i++)
		free(v->chunks[i]);
	free(v->chunks);
	v->chunks = NULL;
	v->nchunks = v->capchunks = v->n = 0;
}

/* ---- hash table of record indexes ---- */

struct htab {
	uint64_t *hash;
	uint32_t *ix; /* index + 1; 0 = empty slot */
	size_t cap, n;
};

typedef bool (*ht_eq_fn)(const struct pm_profile *p, size_t idx, const void *key);

/* Index + 1 of the record equal to @key, or 0. */
static size_t ht_find(const struct pm_profile *p, const struct htab *t, uint64_t h, ht_eq_fn eq,
		      const void *key)
{
	size_t mask, i;

	if (!t->cap)
		return 0;
	mask = t->cap - 1;
	for (i = h & mask;; i = (i + 1) & mask) {
		if (!t->ix[i])
			return 0;
		if (t->hash[i] == h && eq(p, t->ix[i] - 1, key))
			return t->ix[i];
	}
}

static void ht_put_raw(struct htab *t, uint64_t h, uint32_t ix)
{
	size_t mask = t->cap - 1, i;

	for (i = h & mask; t->ix[i]; i = (i + 1) & mask)
		;
	t->hash[i] = h;
	t->ix[i] = ix;
}

static void ht_insert(struct htab *t, uint64_t h, size_t idx)
{
	if ((t->n + 1) * 2 > t->cap) {
		struct htab old = *t;

		t->cap = old.cap ? old.cap * 2 : 64;
		t->hash = xmalloc(t->cap * sizeof(*t->hash));
		t->ix = xcalloc(t->cap, sizeof(*t->ix));
		for (size_t i = 0; i < old.cap; i++)
			if (old.ix[i])
				ht_put_raw(t, old.hash[i], old.ix[i]);
		free(old.hash);
		free(old.ix);
	}
	ht_put_raw(t, h, (uint32_t)(idx + 1));
	t->n++;
}

static void ht_free(struct htab *t)
{
	free(t->hash);
	free(t->ix);
	memset(t, 0, sizeof(*t));
}

/* ---- the profile ---- */

struct samp {
	struct pm_prof_sample s; /* first: pm_prof_sample_at() returns &samp->s */
	int64_t *vals;
};

struct pm_profile {
	struct arena ar;

	const char **strs;
	size_t nstrs, capstrs;
	struct htab strtab;

	struct pm_prof_vtype *types;
	size_t ntypes, captypes;
	size_t default_type;
	bool default_set;

	struct pm_prof_vtype period_type;
	bool has_period;
	int64_t period, time, duration;

	const char **comments;
	size_t ncomments, capcomments;

	struct svec maps, funcs, locs, samples;
	struct htab maptab, functab, loctab, samptab;
	uint64_t seed; /* of every table's hash: pm_hash_seed(), so no input aims at a chain */
};

struct pm_profile *pm_prof_new_sized(unsigned chunk_bits)
{
	struct pm_profile *p = xcalloc(1, sizeof(*p));

	if (!chunk_bits || chunk_bits > CHUNK_SHIFT)
		chunk_bits = CHUNK_SHIFT;
	p->seed = pm_hash_seed();
	p->maps.esz = sizeof(struct pm_prof_mapping);
	p->funcs.esz = sizeof(struct pm_prof_func);
	p->locs.esz = sizeof(struct pm_prof_loc);
	p->samples.esz = sizeof(struct samp);
	p->maps.shift = p->funcs.shift = p->locs.shift = p->samples.shift = chunk_bits;
	return p;
}

struct pm_profile *pm_prof_new(void)
{
	return pm_prof_new_sized(0);
}

void pm_prof_free(struct pm_profile *p)
{
	if (!p)
		return;
	arena_free(&p->ar);
	free(p->strs);
	ht_free(&p->strtab);
	free(p->types);
	free(p->comments);
	svec_free(&p->maps);
	svec_free(&p->funcs);
	svec_free(&p->locs);
	svec_free(&p->samples);
	ht_free(&p->maptab);
	ht_free(&p->functab);
	ht_free(&p->loctab);
	ht_free(&p->samptab);
	free(p);
}

/* ---- strings ---- */

static bool str_eq(const struct pm_profile *p, size_t idx, const void *key)
{
	return strcmp(p->strs[idx], key) == 0;
}

/* The interned copy of @s; NULL stays NULL. */
static const char *intern(struct pm_profile *p, const char *s)
{
	size_t len, found;
	uint64_t h;
	char *c;

	if (!s)
		return NULL;
	len = strlen(s);
	h = pm_hash(s, len, p->seed);
	found = ht_find(p, &p->strtab, h, str_eq, s);
	if (found)
		return p->strs[found - 1];
	c = arena_alloc(&p->ar, len + 1);
	memcpy(c, s, len + 1);
	PM_GROW(p->strs, p->capstrs, p->nstrs + 1);
	p->strs[p->nstrs] = c;
	ht_insert(&p->strtab, h, p->nstrs);
	p->nstrs++;
	return c;
}

static const char *intern0(struct pm_profile *p, const char *s)
{
	return intern(p, s ? s : "");
}

/* ---- header ---- */

void pm_prof_add_sample_type(struct pm_profile *p, const char *type, const char *unit)
{
	if (p->samples.n) /* values of existing samples would be short */
		return;
	PM_GROW(p->types, p->captypes, p->ntypes + 1);
	p->types[p->ntypes].type = intern0(p, type);
	p->types[p->ntypes].unit = intern0(p, unit);
	p->ntypes++;
}

void pm_prof_set_period(struct pm_profile *p, const char *type, const char *unit, int64_t period)
{
	p->period_type.type = intern0(p, type);
	p->period_type.unit = intern0(p, unit);
	p->has_period = true;
	p->period = period;
}

void pm_prof_set_time(struct pm_profile *p, int64_t time_nanos, int64_t duration_nanos)
{
	p->time = time_nanos;
	p->duration = duration_nanos;
}

void pm_prof_add_comment(struct pm_profile *p, const char *text)
{
	PM_GROW(p->comments, p->capcomments, p->ncomments + 1);
	p->comments[p->ncomments++] = intern0(p, text);
}

void pm_prof_set_default_type(struct pm_profile *p, size_t idx)
{
	p->default_type = idx;
	p->default_set = true;
}

/* ---- mappings ---- */

struct map_key {
	uint64_t start, limit, offset;
	const char *file, *build_id;
};

static uint64_t map_hash(const struct pm_profile *p, const struct map_key *k)
{
	uint64_t w[5] = { k->start, k->limit, k->offset, (uint64_t)(uintptr_t)k->file,
			  (uint64_t)(uintptr_t)k->build_id };

	return pm_hash(w, sizeof(w), p->seed);
}

static bool map_eq(const struct pm_profile *p, size_t idx, const void *key)
{
	const struct pm_prof_mapping *m = svec_at(&p->maps, idx);
	const struct map_key *k = key;

	return m->start == k->start && m->limit == k->limit && m->offset == k->offset &&
	       m->file == k->file && m->build_id == k->build_id;
}

uint64_t pm_prof_mapping(struct pm_profile *p, uint64_t start, uint64_t limit, uint64_t offset,
			 const char *file, const char *build_id)
{
	struct map_key k = { start, limit, offset, intern0(p, file), intern0(p, build_id) };
	uint64_t h = map_hash(p, &k);
	size_t found = ht_find(p, &p->maptab, h, map_eq, &k);
	struct pm_prof_mapping *m;

	if (found)
		return found;
	m = svec_push(&p->maps);
	m->id = p->maps.n;
	m->start = start;
	m->limit = limit;
	m->offset = offset;
	m->file = k.file;
	m->build_id = k.build_id;
	ht_insert(&p->maptab, h, p->maps.n - 1);
	return m->id;
}

void pm_prof_mapping_flags(struct pm_profile *p, uint64_t id, bool functions, bool filenames,
			   bool lines, bool inl)
{
	struct pm_prof_mapping *m;

	if (!id || id > p->maps.n)
		return;
	m = svec_at(&p->maps, id - 1);
	m->has_functions = functions;
	m->has_filenames = filenames;
	m->has_lines = lines;
	m->has_inline = inl;
}

/* ---- functions ---- */

static uint64_t func_hash(const struct pm_profile *p, const struct pm_prof_func *k)
{
	uint64_t w[4] = { (uint64_t)(uintptr_t)k->name, (uint64_t)(uintptr_t)k->system_name,
			  (uint64_t)(uintptr_t)k->file, (uint64_t)k->start_line };

	return pm_hash(w, sizeof(w), p->seed);
}

static bool func_eq(const struct pm_profile *p, size_t idx, const void *key)
{
	const struct pm_prof_func *f = svec_at(&p->funcs, idx);
	const struct pm_prof_func *k = key;

	return f->name == k->name && f->system_name == k->system_name && f->file == k->file &&
	       f->start_line == k->start_line;
}

uint64_t pm_prof_func(struct pm_profile *p, const char *name, const char *system_name,
		      const char *file, int64_t start_line)
{
	struct pm_prof_func k = { 0, intern0(p, name), intern0(p, system_name), intern0(p, file),
				  start_line };
	uint64_t h = func_hash(p, &k);
	size_t found = ht_find(p, &p->functab, h, func_eq, &k);
	struct pm_prof_func *f;

	if (found)
		return found;
	f = svec_push(&p->funcs);
	*f = k;
	f->id = p->funcs.n;
	ht_insert(&p->functab, h, p->funcs.n - 1);
	return f->id;
}

/* ---- locations ---- */

static uint64_t loc_hash(const struct pm_profile *p, const struct pm_prof_loc *k)
{
	uint64_t w[2] = { k->mapping_id, k->address };
	uint64_t h = pm_hash(w, sizeof(w), p->seed);

	return pm_hash(k->lines, k->nlines * sizeof(*k->lines), h);
}

static bool loc_eq(const struct pm_profile *p, size_t idx, const void *key)
{
	const struct pm_prof_loc *l = svec_at(&p->locs, idx);
	const struct pm_prof_loc *k = key;

	if (l->mapping_id != k->mapping_id || l->address != k->address || l->nlines != k->nlines)
		return false;
	for (size_t i = 0; i < k->nlines; i++)
		if (l->lines[i].func_id != k->lines[i].func_id ||
		    l->lines[i].line != k->lines[i].line)
			return false;
	return true;
}

uint64_t pm_prof_loc(struct pm_profile *p, uint64_t mapping_id, uint64_t address,
		     const struct pm_prof_line *lines, size_t nlines)
{
	struct pm_prof_loc k = { 0, mapping_id, address, lines ? nlines : 0, lines };
	uint64_t h = loc_hash(p, &k);
	size_t found = ht_find(p, &p->loctab, h, loc_eq, &k);
	struct pm_prof_loc *l;

	if (found)
		return found;
	l = svec_push(&p->locs);
	l->id = p->locs.n;
	l->mapping_id = mapping_id;
	l->address = address;
	l->nlines = k.nlines;
	l->lines = arena_dup(&p->ar, lines, k.nlines * sizeof(*lines));
	ht_insert(&p->loctab, h, p->locs.n - 1);
	return l->id;
}

/* ---- samples ---- */

struct samp_key {
	const uint64_t *locs;
	size_t nlocs;
	const struct pm_prof_label *labels; /* interned and sorted */
	size_t nlabels;
};

static int strcmp_null(const char *a, const char *b)
{
	if (a == b)
		return 0;
	if (!a)
		return -1;
	if (!b)
		return 1;
	return strcmp(a, b);
}

/* A total order on labels that does not depend on addresses (output is reproducible). */
static int label_cmp(const void *va, const void *vb)
{
	const struct pm_prof_label *a = va, *b = vb;
	int c = strcmp(a->key, b->key);

	if (c)
		return c;
	c = strcmp_null(a->str, b->str);
	if (c)
		return c;
	if (a->num != b->num)
		return a->num < b->num ? -1 : 1;
	return strcmp_null(a->num_unit, b->num_unit);
}

static bool samp_eq(const struct pm_profile *p, size_t idx, const void *key)
{
	const struct samp *s = svec_at(&p->samples, idx);
	const struct samp_key *k = key;

	if (s->s.nlocs != k->nlocs || s->s.nlabels != k->nlabels)
		return false;
	if (k->nlocs && memcmp(s->s.loc_ids, k->locs, k->nlocs * sizeof(*k->locs)) != 0)
		return false;
	for (size_t i = 0; i < k->nlabels; i++) {
		const struct pm_prof_label *a = &s->s.labels[i], *b = &k->labels[i];

		if (a->key != b->key || a->str != b->str || a->num != b->num ||
		    a->num_unit != b->num_unit)
			return false;
	}
	return true;
}

/*
 * The hot path of record: one hash over the stack (plus the labels, by their
 * interned pointers: only equality within this process matters, never the
 * order), one probe sequence, then either an in-place add or one copy.
 */
void pm_prof_add(struct pm_profile *p, const uint64_t *loc_ids, size_t nlocs,
		 const int64_t *values, const struct pm_prof_label *labels, size_t nlabels)
{
	struct pm_prof_label small[8], *lab = NULL;
	struct samp_key k = { loc_ids, loc_ids ? nlocs : 0, NULL, labels ? nlabels : 0 };
	uint64_t h;
	size_t found, nv = p->ntypes;
	struct samp *s;

	if (k.nlabels) {
		lab = k.nlabels <= PM_ARRAY_SIZE(small) ? small : xmalloc(k.nlabels * sizeof(*lab));
		/*
		 * pprof cannot tell an empty string from none (both are string
		 * 0), so "" is normalised to NULL here and a profile reads back
		 * as it was written.
		 */
		for (size_t i = 0; i < k.nlabels; i++) {
			const char *str = labels[i].str, *unit = labels[i].num_unit;

			lab[i].key = intern0(p, labels[i].key);
			lab[i].str = str && *str ? intern(p, str) : NULL;
			lab[i].num = lab[i].str ? 0 : labels[i].num;
			lab[i].num_unit = !lab[i].str && unit && *unit ? intern(p, unit) : NULL;
		}
		if (k.nlabels > 1)
			qsort(lab, k.nlabels, sizeof(*lab), label_cmp);
		k.labels = lab;
	}
	h = pm_hash(k.locs, k.nlocs * sizeof(*k.locs), p->seed);
	for (size_t i = 0; i < k.nlabels; i++) {
		uint64_t w[4] = { (uint64_t)(uintptr_t)lab[i].key, (uint64_t)(uintptr_t)lab[i].str,
				  (uint64_t)lab[i].num, (uint64_t)(uintptr_t)lab[i].num_unit };
		h = pm_hash(w, sizeof(w), h);
	}
	found = ht_find(p, &p->samptab, h, samp_eq, &k);
	if (found) {
		s = svec_at(&p->samples, found - 1);
		if (values)
			for (size_t i = 0; i < nv; i++)
				s->vals[i] = pm_add_sat(s->vals[i], values[i]);
	} else {
		s = svec_push(&p->samples);
		s->s.nlocs = k.nlocs;
		s->s.loc_ids = arena_dup(&p->ar, k.locs, k.nlocs * sizeof(*k.locs));
		s->vals = nv ? arena_alloc(&p->ar, nv * sizeof(*s->vals)) : NULL;
		for (size_t i = 0; i < nv; i++)
			s->vals[i] = values ? values[i] : 0;
		s->s.values = s->vals;
		s->s.nlabels = k.nlabels;
		s->s.labels = arena_dup(&p->ar, lab, k.nlabels * sizeof(*lab));
		ht_insert(&p->samptab, h, p->samples.n - 1);
	}
	if (lab && lab != small)
		free(lab);
}

/* ---- access ---- */

size_t pm_prof_nsample_types(const struct pm_profile *p)
{
	return p->ntypes;
}

const struct pm_prof_vtype *pm_prof_sample_type(const struct pm_profile *p, size_t i)
{
	return i < p->ntypes ? &p->types[i] : NULL;
}

long pm_prof_find_sample_type(const struct pm_profile *p, const char *type)
{
	if (!type)
		return -1;
	for (size_t i = 0; i < p->ntypes; i++)
		if (strcmp(p->types[i].type, type) == 0)
			return (long)i;
	return -1;
}

size_t pm_prof_default_type(const struct pm_profile *p)
{
	if (p->default_set && p->default_type < p->ntypes)
		return p->default_type;
	return p->ntypes ? p->ntypes - 1 : 0;
}

const struct pm_prof_vtype *pm_prof_period_type(const struct pm_profile *p)
{
	return p->has_period ? &p->period_type : NULL;
}

int64_t pm_prof_period(const struct pm_profile *p)
{
	return p->period;
}

int64_t pm_prof_time(const struct pm_profile *p)
{
	return p->time;
}

int64_t pm_prof_duration(const struct pm_profile *p)
{
	return p->duration;
}

size_t pm_prof_ncomments(const struct pm_profile *p)
{
	return p->ncomments;
}

const char *pm_prof_comment(const struct pm_profile *p, size_t i)
{
	return i < p->ncomments ? p->comments[i] : NULL;
}

size_t pm_prof_nmappings(const struct pm_profile *p)
{
	return p->maps.n;
}

const struct pm_prof_mapping *pm_prof_mapping_at(const struct pm_profile *p, size_t i)
{
	return i < p->maps.n ? svec_at(&p->maps, i) : NULL;
}

size_t pm_prof_nfuncs(const struct pm_profile *p)
{
	return p->funcs.n;
}

const struct pm_prof_func *pm_prof_func_at(const struct pm_profile *p, size_t i)
{
	return i < p->funcs.n ? svec_at(&p->funcs, i) : NULL;
}

size_t pm_prof_nlocs(const struct pm_profile *p)
{
	return p->locs.n;
}

const struct pm_prof_loc *pm_prof_loc_at(const struct pm_profile *p, size_t i)
{
	return i < p->locs.n ? svec_at(&p->locs, i) : NULL;
}

size_t pm_prof_nsamples(const struct pm_profile *p)
{
	return p->samples.n;
}

const struct pm_prof_sample *pm_prof_sample_at(const struct pm_profile *p, size_t i)
{
	const struct samp *s;

	if (i >= p->samples.n)
		return NULL;
	s = svec_at(&p->samples, i);
	return &s->s;
}

const struct pm_prof_mapping *pm_prof_mapping_by_id(const struct pm_profile *p, uint64_t id)
{
	return id && id <= p->maps.n ? svec_at(&p->maps, id - 1) : NULL;
}

const struct pm_prof_func *pm_prof_func_by_id(const struct pm_profile *p, uint64_t id)
{
	return id && id <= p->funcs.n ? svec_at(&p->funcs, id - 1) : NULL;
}

const struct pm_prof_loc *pm_prof_loc_by_id(const struct pm_profile *p, uint64_t id)
{
	return id && id <= p->locs.n ? svec_at(&p->locs, id - 1) : NULL;
}

struct pm_profile *pm_prof_without(const struct pm_profile *in,
				   bool (*drop)(const struct pm_profile *in,
						const struct pm_prof_loc *l, void *arg),
				   void *arg, const char *rest)
{
	struct pm_profile *p = pm_prof_new();
	size_t i, k, n = pm_prof_nlocs(in), caplocs = 0;
	uint64_t *map = xcalloc(n + 1, sizeof(*map)), *locs = NULL, rest_loc = 0;
	const struct pm_prof_vtype *pt = pm_prof_period_type(in);

	for (i = 0; i < pm_prof_nsample_types(in); i++)
		pm_prof_add_sample_type(p, pm_prof_sample_type(in, i)->type,
					pm_prof_sample_type(in, i)->unit);
	pm_prof_set_default_type(p, pm_prof_default_type(in));
	if (pt)
		pm_prof_set_period(p, pt->type, pt->unit, pm_prof_period(in));
	pm_prof_set_time(p, pm_prof_time(in), pm_prof_duration(in));
	for (i = 0; i < pm_prof_ncomments(in); i++)
		pm_prof_add_comment(p, pm_prof_comment(in, i));
	for (i = 0; i < n; i++) {
		const struct pm_prof_loc *l = pm_prof_loc_at(in, i);
		const struct pm_prof_mapping *m = pm_prof_mapping_by_id(in, l->mapping_id);
		struct pm_prof_line *lines;
		uint64_t mid = 0;

		if (drop(in, l, arg))
			continue; /* map[i] stays 0: dropped */
		if (m) {
			mid = pm_prof_mapping(p, m->start, m->limit, m->offset, m->file ? m->file : "",
					      m->build_id ? m->build_id : "");
			pm_prof_mapping_flags(p, mid, m->has_functions, m->has_filenames,
					      m->has_lines, m->has_inline);
		}
		lines = xcalloc(l->nlines + 1, sizeof(*lines));
		for (k = 0; k < l->nlines; k++) {
			const struct pm_prof_func *f = pm_prof_func_by_id(in, l->lines[k].func_id);

			lines[k].func_id = f ? pm_prof_func(p, f->name ? f->name : "",
							    f->system_name ? f->system_name : "",
							    f->file ? f->file : "", f->start_line)
					     : 0;
			lines[k].line = l->lines[k].line;
		}
		map[i] = pm_prof_loc(p, mid, l->address, lines, l->nlines);
		free(lines);
	}
	for (i = 0; i < pm_prof_nsamples(in); i++) {
		const struct pm_prof_sample *s = pm_prof_sample_at(in, i);
		size_t nl = 0;

		PM_GROW(locs, caplocs, s->nlocs + 1);
		for (k = 0; k < s->nlocs; k++) {
			uint64_t id = s->loc_ids[k];

			if (id >= 1 && id <= n && map[id - 1])
				locs[nl++] = map[id - 1];
		}
		if (!nl && s->nlocs && rest) {
			if (!rest_loc) {
				struct pm_prof_line ln = { pm_prof_func(p, rest, rest, "", 0), 0 };

				rest_loc = pm_prof_loc(p, 0, 0, &ln, 1);
			}
			locs[nl++] = rest_loc;
		}
		pm_prof_add(p, locs, nl, s->values, s->labels, s->nlabels);
	}
	free(locs);
	free(map);
	return p;
}
