/* snaplog: a snapshot's reads of the target, delta-encoded against the last one (snaplog.h). */
#include "capture/snaplog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

enum { OP_COPY = 1, OP_SEEK, OP_PATCH, OP_NEW, OP_FAIL, OP_DICT };
#define SEARCH 64     /* replay: reads ahead of the next one looked at for a read */
#define PATCH_GAP 8   /* equal bytes shorter than this between two changes: one range */
#define DICT_READ (PM_SLOG_DICT_MAX / 16) /* a longer read is not kept in the dictionary */

struct sread {
	uint64_t addr, off; /* off: its bytes in data */
	uint32_t pid, len;
	bool ok, copied; /* copied: equal to the base's (COPY): not put in the dictionary again */
};

struct snap {
	struct sread *r;
	size_t n, cap;
	uint8_t *data;
	size_t dlen, dcap;
};

/* The dictionary: the last bytes read at each key, one generation (open addressing). */
struct dent {
	uint64_t addr, off; /* off: its bytes in data */
	uint32_t pid, len;  /* len 0: an empty slot */
};

struct dict {
	struct dent *t;
	size_t mask, n;
	uint8_t *data;
	size_t dlen, dcap;
};

struct pm_slog {
	struct snap cur, base;
	struct dict young, old; /* the dictionary: young first; young over half the bound: old */
	size_t next;          /* replay: the read after the last one served */
	uint32_t *hash;       /* live: the base's reads by key, index + 1 (0 empty) */
	size_t hmask;
	bool hashed;
};

/* ---- the dictionary ---- */

static uint64_t key_hash(uint32_t pid, uint64_t addr, uint32_t len)
{
	uint64_t h = addr * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)pid << 32 | len);

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 32);
}

/* The slot of a key in @d: its entry, or the empty slot it would go in. */
static struct dent *dict_slot(const struct dict *d, uint32_t pid, uint64_t addr, uint32_t len)
{
	size_t k = key_hash(pid, addr, len) & d->mask;

	while (d->t[k].len && (d->t[k].addr != addr || d->t[k].pid != pid || d->t[k].len != len))
		k = (k + 1) & d->mask;
	return &d->t[k];
}

static const uint8_t *dict_find(const struct pm_slog *l, uint32_t pid, uint64_t addr, uint32_t len)
{
	const struct dict *g[2] = { &l->young, &l->old };

	for (int i = 0; i < 2; i++) {
		const struct dent *e = g[i]->t ? dict_slot(g[i], pid, addr, len) : NULL;

		if (e && e->len)
			return g[i]->data + e->off;
	}
	return NULL;
}

static void dict_free(struct dict *d)
{
	free(d->t);
	free(d->data);
	memset(d, 0, sizeof(*d));
}

static void dict_put(struct pm_slog *l, uint32_t pid, uint64_t addr, const uint8_t *b, uint32_t len)
{
	struct dict *d = &l->young;
	struct dent *e;

	if (!len || len > DICT_READ)
		return;
	if (!d->t || 2 * (d->n + 1) > d->mask + 1) {
		struct dict g = *d;
		size_t sz = d->t ? 2 * (d->mask + 1) : 1024;

		g.t = xcalloc(sz, sizeof(*g.t));
		g.mask = sz - 1;
		for (size_t i = 0; d->t && i <= d->mask; i++)
			if (d->t[i].len)
				*dict_slot(&g, d->t[i].pid, d->t[i].addr, d->t[i].len) = d->t[i];
		free(d->t);
		*d = g;
	}
	e = dict_slot(d, pid, addr, len);
	if (!e->len) {
		PM_GROW(d->data, d->dcap, d->dlen + len);
		*e = (struct dent){ .addr = addr, .off = d->dlen, .pid = pid, .len = len };
		d->dlen += len;
		d->n++;
	}
	memcpy(d->data + e->off, b, len);
	/* over half the bound: the older generation goes, this one becomes it */
	if (d->dlen + (d->mask + 1) * sizeof(*d->t) > PM_SLOG_DICT_MAX / 2) {
		dict_free(&l->old);
		l->old = *d;
		memset(d, 0, sizeof(*d));
	}
}

struct pm_slog *pm_slog_new(void)
{
	return xcalloc(1, sizeof(struct pm_slog));
}

void pm_slog_free(struct pm_slog *l)
{
	if (!l)
		return;
	free(l->cur.r);
	free(l->cur.data);
	free(l->base.r);
	free(l->base.data);
	free(l->hash);
	dict_free(&l->young);
	dict_free(&l->old);
	free(l);
}

static void snap_clear(struct snap *s)
{
	s->n = s->dlen = 0;
}

/* The current snapshot becomes the base; what it read anew goes in the dictionary. */
static void rotate(struct pm_slog *l)
{
	struct snap t = l->base;

	for (size_t i = 0; i < l->cur.n; i++) {
		const struct sread *r = &l->cur.r[i];

		if (r->ok && !r->copied)
			dict_put(l, r->pid, r->addr, l->cur.data + r->off, r->len);
	}

	l->base = l->cur;
	l->cur = t;
	snap_clear(&l->cur);
	l->hashed = false;
	l->next = 0;
}

void pm_slog_start(struct pm_slog *l)
{
	snap_clear(&l->cur);
}

static bool append(struct snap *s, uint32_t pid, uint64_t addr, const void *buf, size_t len,
		   bool ok)
{
	struct sread *r;

	if (s->n >= PM_SLOG_MAX_READS || len > PM_SLOG_MAX || (ok && len > PM_SLOG_MAX - s->dlen))
		return false;
	PM_GROW(s->r, s->cap, s->n + 1);
	r = &s->r[s->n++];
	r->pid = pid;
	r->addr = addr;
	r->len = (uint32_t)len;
	r->ok = ok;
	r->copied = false;
	r->off = s->dlen;
	if (ok && len) {
		PM_GROW(s->data, s->dcap, s->dlen + len);
		if (buf)
			memcpy(s->data + s->dlen, buf, len);
		s->dlen += len;
	}
	return true;
}

bool pm_slog_log(struct pm_slog *l, pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	return append(&l->cur, (uint32_t)pid, addr, buf, len, buf != NULL);
}

size_t pm_slog_nreads(const struct pm_slog *l)
{
	return l->base.n;
}

size_t pm_slog_bytes(const struct pm_slog *l)
{
	return l->base.dlen;
}

/* ---- encoding ---- */

struct out {
	uint8_t *b;
	size_t n, cap;
};

static void put(struct out *o, const void *p, size_t n)
{
	PM_GROW(o->b, o->cap, o->n + n);
	memcpy(o->b + o->n, p, n);
	o->n += n;
}

static void put_u(struct out *o, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	do {
		b[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	put(o, b, n);
}

static void put_z(struct out *o, int64_t v)
{
	put_u(o, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static bool same_key(const struct sread *a, const struct sread *b)
{
	return a->pid == b->pid && a->addr == b->addr && a->len == b->len;
}

/* The base's reads by key (the first of each), for SEEK. */
static void hash_base(struct pm_slog *l)
{
	size_t sz = 16;

	while (sz < 2 * l->base.n)
		sz *= 2;
	free(l->hash);
	l->hash = xcalloc(sz, sizeof(*l->hash));
	l->hmask = sz - 1;
	for (size_t i = 0; i < l->base.n; i++) {
		const struct sread *r = &l->base.r[i];
		/* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): base.n > 0, base.r is set */
		size_t k = key_hash(r->pid, r->addr, r->len) & l->hmask;

		while (l->hash[k] && !same_key(&l->base.r[l->hash[k] - 1], r))
			k = (k + 1) & l->hmask;
		if (!l->hash[k])
			l->hash[k] = (uint32_t)(i + 1);
	}
	l->hashed = true;
}

static long base_find(struct pm_slog *l, const struct sread *r)
{
	size_t k;

	if (!l->base.n)
		return -1;
	if (!l->hashed)
		hash_base(l);
	for (k = key_hash(r->pid, r->addr, r->len) & l->hmask; l->hash[k]; k = (k + 1) & l->hmask)
		if (same_key(&l->base.r[l->hash[k] - 1], r))
			return (long)l->hash[k] - 1;
	return -1;
}

/* The changed ranges of @b against @a (@n bytes each). */
static void put_patch(struct out *o, const uint8_t *a, const uint8_t *b, size_t n)
{
	size_t nr = 0, i, at;
	struct out body = { 0 };

	for (i = 0, at = 0; i < n;) {
		size_t s, e, eq;

		while (i < n && a[i] == b[i])
			i++;
		if (i == n)
			break;
		s = i;
		for (e = i, eq = 0; e < n && eq < PATCH_GAP; e++)
			eq = a[e] == b[e] ? eq + 1 : 0;
		e -= eq; /* the range ends at its last change */
		put_u(&body, s - at);
		put_u(&body, e - s);
		put(&body, b + s, e - s);
		nr++;
		at = i = e;
	}
	put_u(o, nr);
	if (body.n)
		put(o, body.b, body.n);
	free(body.b);
}

void pm_slog_encode(struct pm_slog *l, uint8_t **out, size_t *len)
{
	struct out o = { 0 };
	struct snap *c = &l->cur;
	const struct snap *b = &l->base;
	size_t j = 0, run = 0;
	uint64_t expect = 0;
	uint8_t op;

	for (size_t i = 0; i < c->n; i++) {
		struct sread *r = &c->r[i];
		const struct sread *br = j < b->n ? &b->r[j] : NULL;
		const uint8_t *old;
		long f;

		if (!br || !same_key(br, r)) {
			f = base_find(l, r);
			if (f >= 0) {
				if (run) {
					op = OP_COPY;
					put(&o, &op, 1);
					put_u(&o, run);
					run = 0;
				}
				op = OP_SEEK;
				put(&o, &op, 1);
				put_z(&o, (int64_t)f - (int64_t)j);
				j = (size_t)f;
				br = &b->r[j];
			} else {
				br = NULL;
			}
		}
		if (br && br->ok == r->ok &&
		    (!r->ok || !r->len || !memcmp(b->data + br->off, c->data + r->off, r->len))) {
			r->copied = true;
			run++;
			j++;
			expect = r->addr + r->len;
			continue;
		}
		if (run) {
			op = OP_COPY;
			put(&o, &op, 1);
			put_u(&o, run);
			run = 0;
		}
		if (br && br->ok && r->ok) {
			op = OP_PATCH;
			put(&o, &op, 1);
			put_patch(&o, b->data + br->off, c->data + r->off, r->len);
			j++;
		} else if (br && !r->ok) {
			op = OP_FAIL;
			put(&o, &op, 1);
			j++;
		} else if (r->ok && (old = dict_find(l, r->pid, r->addr, r->len))) {
			op = OP_DICT;
			put(&o, &op, 1);
			put_u(&o, r->pid);
			put_z(&o, (int64_t)(r->addr - expect));
			put_u(&o, r->len);
			put_patch(&o, old, c->data + r->off, r->len);
		} else {
			uint8_t ok = r->ok;

			op = OP_NEW;
			put(&o, &op, 1);
			put_u(&o, r->pid);
			put_z(&o, (int64_t)(r->addr - expect));
			put_u(&o, r->len);
			put(&o, &ok, 1);
			if (ok && r->len)
				put(&o, c->data + r->off, r->len);
		}
		expect = r->addr + r->len;
	}
	if (run) {
		op = OP_COPY;
		put(&o, &op, 1);
		put_u(&o, run);
	}
	*out = o.b;
	*len = o.n;
	rotate(l);
}

/* ---- decoding ---- */

struct in {
	const uint8_t *p;
	size_t n, at;
};

static bool get_u(struct in *in, uint64_t *v)
{
	*v = 0;
	for (unsigned sh = 0; sh < 64; sh += 7) {
		uint8_t b;

		if (in->at >= in->n)
			return false;
		b = in->p[in->at++];
		if (sh == 63 && b > 1)
			return false;
		*v |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

static bool get_z(struct in *in, int64_t *v)
{
	uint64_t u;

	if (!get_u(in, &u))
		return false;
	*v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
	return true;
}

/* A read of @len bytes, @from's with PATCH's ranges from @in changed, appended to @c. */
static bool get_patched(struct in *in, struct snap *c, uint32_t pid, uint64_t addr,
			const uint8_t *from, uint32_t len)
{
	uint64_t nr, at = 0, s, n;
	uint8_t *d;

	if (!get_u(in, &nr) || !append(c, pid, addr, from, len, true))
		return false;
	d = c->data + c->r[c->n - 1].off;
	for (; nr; nr--) {
		if (!get_u(in, &s) || !get_u(in, &n) || s > len - at || n > len - at - s ||
		    n > in->n - in->at)
			return false;
		at += s;
		memcpy(d + at, in->p + in->at, n);
		in->at += n;
		at += n;
	}
	return true;
}

static int decode(struct pm_slog *l, const uint8_t *p, size_t len)
{
	struct in in = { p, len, 0 };
	struct snap *c = &l->cur;
	const struct snap *b = &l->base;
	size_t j = 0;
	uint64_t expect = 0, v;
	int64_t z;

	while (in.at < in.n) {
		uint8_t op = in.p[in.at++];

		switch (op) {
		case OP_COPY:
			if (!get_u(&in, &v) || !v || v > b->n - j)
				return -EINVAL;
			for (; v; v--, j++) {
				const struct sread *r = &b->r[j];

				if (!append(c, r->pid, r->addr, b->data + r->off, r->len, r->ok))
					return -EINVAL;
				c->r[c->n - 1].copied = true;
				expect = r->addr + r->len;
			}
			break;
		case OP_SEEK:
			if (!get_z(&in, &z) || (z < 0 && (uint64_t)-z > j) ||
			    (z > 0 && (uint64_t)z > b->n - j))
				return -EINVAL;
			j = (size_t)((int64_t)j + z);
			break;
		case OP_PATCH: {
			const struct sread *r;

			if (j >= b->n || !b->r[j].ok)
				return -EINVAL;
			r = &b->r[j++];
			if (!get_patched(&in, c, r->pid, r->addr, b->data + r->off, r->len))
				return -EINVAL;
			expect = r->addr + r->len;
			break;
		}
		case OP_DICT: {
			uint64_t pid, n, addr;
			const uint8_t *old;

			if (!get_u(&in, &pid) || pid > INT32_MAX || !get_z(&in, &z) || !get_u(&in, &n) ||
			    n > PM_SLOG_MAX)
				return -EINVAL;
			addr = expect + (uint64_t)z;
			old = dict_find(l, (uint32_t)pid, addr, (uint32_t)n);
			if (!old || !get_patched(&in, c, (uint32_t)pid, addr, old, (uint32_t)n))
				return -EINVAL;
			expect = addr + n;
			break;
		}
		case OP_NEW: {
			uint64_t pid, n;
			uint8_t ok;

			if (!get_u(&in, &pid) || pid > INT32_MAX || !get_z(&in, &z) || !get_u(&in, &n) ||
			    n > PM_SLOG_MAX || in.at >= in.n)
				return -EINVAL;
			ok = in.p[in.at++];
			if (ok > 1 || (ok && n > in.n - in.at))
				return -EINVAL;
			if (!append(c, (uint32_t)pid, expect + (uint64_t)z, ok ? in.p + in.at : NULL,
				    (size_t)n, ok))
				return -EINVAL;
			if (ok)
				in.at += n;
			expect = expect + (uint64_t)z + n;
			break;
		}
		case OP_FAIL: {
			const struct sread *r;

			if (j >= b->n)
				return -EINVAL;
			r = &b->r[j++];
			if (!append(c, r->pid, r->addr, NULL, r->len, false))
				return -EINVAL;
			expect = r->addr + r->len;
			break;
		}
		default:
			return -EINVAL;
		}
	}
	return 0;
}

int pm_slog_decode(struct pm_slog *l, const uint8_t *in, size_t len)
{
	int rc;

	snap_clear(&l->cur);
	rc = len > PM_SLOG_ENC_MAX ? -EINVAL : decode(l, in, len);
	if (rc) {
		snap_clear(&l->cur);
		snap_clear(&l->base);
		dict_free(&l->young);
		dict_free(&l->old);
	}
	rotate(l);
	return rc;
}

int pm_slog_read(struct pm_slog *l, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	const struct snap *s = &l->base;

	for (size_t k = l->next; k < s->n && k - l->next < SEARCH; k++) {
		const struct sread *r = &s->r[k];

		if (r->pid != (uint32_t)pid || r->addr != addr || r->len != len)
			continue;
		l->next = k + 1;
		if (!r->ok)
			return -EFAULT;
		if (len)
			memcpy(buf, s->data + r->off, len);
		return 0;
	}
	return -EFAULT;
}
