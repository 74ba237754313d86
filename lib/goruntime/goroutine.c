/*
 * The goroutine inspector.  See goroutine.h for the model.
 *
 * Per sample: one read of the candidate g (R14), one of its m, one of
 * m.curg when that is another g.  What follows from a goroutine (its label
 * set, its creator frames) is cached per (pid, g, goid, labels pointer) in
 * a direct-mapped table, so a goroutine sampled again costs those 2-3
 * reads.  Label sets and creator chains are interned: every worker made by
 * the same path shares one chain.
 *
 * Here: the state, the target's reads, labels and ancestors, inspection.
 * The layouts are in gorlayout.c; the frames (creators, tags, chains), the
 * creation probes and build_profile's hooks in gorframes.c.
 */
#include "goruntime/goroutine.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "symbols/elfimg.h"
#include "symbols/gopclntab.h"
#include "goruntime/gocode.h"
#include "goruntime/goroutine-int.h"
#include "symbols/maps.h"
#include "base/util.h"

/* ---- state ---- */

struct pm_gor *pm_gor_new(const struct pm_gor_opts *o)
{
	struct pm_gor *g = xcalloc(1, sizeof(*g));

	g->o = *o;
	g->seed = pm_hash_seed();
	if (g->o.creators > PM_GOR_MAX_ANCESTORS)
		g->o.creators = PM_GOR_MAX_ANCESTORS;
	g->cache_mask = CACHE_SIZE - 1;
	if (g->o.cache_bits && g->o.cache_bits < CACHE_BITS)
		g->cache_mask = ((size_t)1 << g->o.cache_bits) - 1;
	g->cache = xcalloc(g->cache_mask + 1, sizeof(*g->cache));
	g->last = xcalloc(g->cache_mask + 1, sizeof(*g->last));
	g->stats = getenv("PMUPROF_GOR_STATS") != NULL;
	if (!g->o.read)
		g->rcache = xcalloc(RCACHE_SLOTS, sizeof(*g->rcache));
	g->pass = 1;
	return g;
}

void pm_gor_pass(struct pm_gor *g)
{
	if (!g)
		return;
	/*
	 * the pass ended: when (goroutine-int.h).  Not through opts.read: a
	 * capture logs reads with a sample's records, and a replay's passes
	 * fall elsewhere; there, nothing is known since before a sample
	 * (UINT64_MAX), live with --raw as at replay.
	 */
	g->pass_end[g->pass % HELD_PASSES] = g->o.read ? UINT64_MAX : pm_now_ns();
	g->pass++;
}

void pm_gor_free(struct pm_gor *g)
{
	size_t i;

	if (!g)
		return;
	if (g->stats)
		pm_info("goroutines: %" PRIu64 " inspected, %" PRIu64 " found, %" PRIu64
			" without a goroutine, %" PRIu64 " not validated, %" PRIu64
			" through the thread's m, %" PRIu64 " read late and checked, %" PRIu64
			" dropped (moved on); %.1f us per sample; %" PRIu64 " reads, %" PRIu64
			" from this pass's",
			g->st_inspect, g->st_ok, g->st_enoent, g->st_einval, g->st_fallback,
			g->st_late, g->st_stale,
			g->st_inspect ? (double)g->st_ns / 1e3 / (double)g->st_inspect : 0.0,
			g->st_reads, g->st_rhits);
	free(g->rcache);
	free(g->procs);
	pm_hidx_free(&g->proc_idx);
	free(g->tm_key);
	free(g->tm_val);
	free(g->cache);
	free(g->last);
	for (i = 0; i < g->nstrs; i++)
		free(g->strs[i]);
	free(g->strs);
	pm_hidx_free(&g->str_idx);
	free(g->labpool);
	free(g->tags);
	pm_hidx_free(&g->tag_idx);
	free(g->cframes);
	pm_hidx_free(&g->cf_idx);
	free(g->chainpool);
	free(g->chains);
	pm_hidx_free(&g->chain_idx);
	free(g->seen);
	free(g->gents);
	free(g->tops);
	free(g->cnodes);
	pm_hidx_free(&g->cnode_idx);
	free(g->rootck);
	free(g->held);
	free(g->htops);
	free(g);
}

struct gproc *pm_gor_proc_find(struct pm_gor *g, pid_t pid)
{
	uint64_t hv = mix(g->seed, (uint64_t)(uint32_t)pid);
	size_t pos = SIZE_MAX;
	long i;

	while ((i = pm_hidx_next(&g->proc_idx, hv, &pos)) >= 0)
		if (g->procs[i].pid == pid)
			return &g->procs[i];
	return NULL;
}

void pm_gor_procs_zero(struct pm_gor *g)
{
	for (size_t i = 0; i < g->nprocs; i++)
		memset(g->procs[i].d, 0, sizeof(g->procs[i].d));
}

struct gproc *pm_gor_proc_of(struct pm_gor *g, pid_t pid)
{
	struct gproc *p = pm_gor_proc_find(g, pid);

	if (p)
		return p;
	pm_hidx_add(&g->proc_idx, mix(g->seed, (uint64_t)(uint32_t)pid), (uint32_t)g->nprocs);
	PM_GROW(g->procs, g->capprocs, g->nprocs + 1);
	memset(&g->procs[g->nprocs], 0, sizeof(g->procs[0]));
	g->procs[g->nprocs].pid = pid;
	return &g->procs[g->nprocs++];
}

int pm_gor_set_layout(struct pm_gor *g, pid_t pid, const struct pm_gor_layout *l)
{
	struct gproc *p = pm_gor_proc_of(g, pid);

	p->l = *l;
	if (!pm_gor_finish_layout(&p->l)) {
		p->state = -1;
		return -EINVAL;
	}
	p->state = 1;
	return 0;
}

/* ---- tid -> m ---- */

static void tm_put(struct pm_gor *g, uint64_t key, uint64_t val);

static void tm_grow(struct pm_gor *g)
{
	uint64_t *ok = g->tm_key, *ov = g->tm_val;
	size_t os = g->tm_size, i;

	g->tm_size = os ? os * 2 : 256;
	g->tm_key = xcalloc(g->tm_size, sizeof(uint64_t));
	g->tm_val = xcalloc(g->tm_size, sizeof(uint64_t));
	g->tm_n = 0;
	for (i = 0; i < os; i++)
		if (ok[i])
			tm_put(g, ok[i], ov[i]);
	free(ok);
	free(ov);
}

static void tm_put(struct pm_gor *g, uint64_t key, uint64_t val)
{
	size_t h;

	if ((g->tm_n + 1) * 2 > g->tm_size)
		tm_grow(g);
	h = pm_hash_u64(key) & (g->tm_size - 1);
	while (g->tm_key[h] && g->tm_key[h] != key)
		h = (h + 1) & (g->tm_size - 1);
	if (!g->tm_key[h])
		g->tm_n++;
	g->tm_key[h] = key;
	g->tm_val[h] = val;
}

static uint64_t tm_get(const struct pm_gor *g, uint64_t key)
{
	size_t h;

	if (!g->tm_size)
		return 0;
	for (h = pm_hash_u64(key) & (g->tm_size - 1); g->tm_key[h]; h = (h + 1) & (g->tm_size - 1))
		if (g->tm_key[h] == key)
			return g->tm_val[h];
	return 0;
}

static uint64_t tid_key(pid_t pid, pid_t tid)
{
	return ((uint64_t)(uint32_t)pid << 32 | (uint32_t)tid) | 1ULL << 63;
}

/* ---- reads ---- */

struct rd {
	uint64_t addr;
	void *buf;
	size_t len;
};

/*
 * The pass's reads.  Every sample of a drain pass was taken before the pass
 * began, so a range read earlier in the pass is as recent as one read again
 * (more so, if anything): the samples of one busy goroutine in a pass share
 * one system call instead of one each (process_vm_readv: ~2.5 us each).
 */
static size_t rc_home(pid_t pid, uint64_t addr)
{
	return mix(mix(0, (uint64_t)pid), addr) & (RCACHE_SLOTS - 1);
}

/*
 * Open addressing, an entry of another pass being a free slot: within a
 * pass nothing is evicted until RCACHE_SLOTS ranges are kept (then the
 * home slot is taken over).  It was direct-mapped, and two ranges of one
 * sample that shared a slot read the first again within the pass.
 */
static struct rentry *rc_find(struct pm_gor *g, pid_t pid, uint64_t addr, size_t len)
{
	size_t h = rc_home(pid, addr);

	for (size_t i = 0; i < RCACHE_SLOTS; i++) {
		struct rentry *e = &g->rcache[(h + i) & (RCACHE_SLOTS - 1)];

		if (e->pass != g->pass)
			return NULL;
		if (e->pid == pid && e->addr == addr && e->len == len)
			return e;
	}
	return NULL;
}

static bool rc_get(struct pm_gor *g, pid_t pid, const struct rd *r)
{
	const struct rentry *e;

	if (!g->rcache || r->len > RCACHE_MAX)
		return false;
	e = rc_find(g, pid, r->addr, r->len);
	if (!e)
		return false;
	memcpy(r->buf, e->data, r->len);
	return true;
}

static void rc_put(struct pm_gor *g, pid_t pid, const struct rd *r)
{
	size_t h, i;
	struct rentry *e = NULL;

	if (!g->rcache || r->len > RCACHE_MAX || !r->len)
		return;
	h = rc_home(pid, r->addr);
	for (i = 0; i < RCACHE_SLOTS && !e; i++) {
		struct rentry *c = &g->rcache[(h + i) & (RCACHE_SLOTS - 1)];

		if (c->pass != g->pass || (c->pid == pid && c->addr == r->addr && c->len == r->len))
			e = c;
	}
	if (!e)
		e = &g->rcache[h]; /* full for this pass */
	e->pass = g->pass;
	e->pid = pid;
	e->addr = r->addr;
	e->len = (uint32_t)r->len;
	memcpy(e->data, r->buf, r->len);
}

/*
 * Read every range; what this pass read already comes from the cache, the
 * rest with one process_vm_readv, and one per range only when that falls
 * short.  A range that cannot be read gets len 0.  Returns how many were
 * read whole.
 */
static size_t readv_all(struct pm_gor *g, pid_t pid, struct rd *r, size_t n)
{
	struct iovec lo[64] = { { 0 } }, re[64] = { { 0 } };
	bool hit[64] = { false };
	size_t i, k = 0, want = 0, ok = 0;
	ssize_t got = -1;

	if (!g->o.read && n <= 64) {
		for (i = 0; i < n; i++) {
			g->st_reads++;
			if (rc_get(g, pid, &r[i])) {
				hit[i] = true;
				g->st_rhits++;
				ok++;
				continue;
			}
			lo[k].iov_base = r[i].buf;
			lo[k].iov_len = r[i].len;
			re[k].iov_base = (void *)(uintptr_t)r[i].addr;
			re[k].iov_len = r[i].len;
			want += r[i].len;
			k++;
		}
		if (k == 0)
			return n;
		got = process_vm_readv(pid, lo, (unsigned long)k, re, (unsigned long)k, 0);
		if (got >= 0 && (size_t)got == want) {
			for (i = 0; i < n; i++)
				if (!hit[i])
					rc_put(g, pid, &r[i]);
			return n;
		}
	}
	for (i = 0; i < n; i++) {
		int rc;

		if (i < PM_ARRAY_SIZE(hit) && hit[i])
			continue;
		if (g->o.read) {
			rc = g->o.read(g->o.read_arg, pid, r[i].addr, r[i].buf, r[i].len);
		} else {
			lo[0].iov_base = r[i].buf;
			lo[0].iov_len = r[i].len;
			re[0].iov_base = (void *)(uintptr_t)r[i].addr;
			re[0].iov_len = r[i].len;
			got = process_vm_readv(pid, lo, 1, re, 1, 0);
			rc = got >= 0 && (size_t)got == r[i].len ? 0 : -EFAULT;
			if (rc == 0)
				rc_put(g, pid, &r[i]);
		}
		if (rc == 0)
			ok++;
		else
			r[i].len = 0;
	}
	return ok;
}

static int read1(struct pm_gor *g, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct rd r = { addr, buf, len };

	if (!pm_go_addr_ok(addr))
		return -EFAULT;
	return readv_all(g, pid, &r, 1) == 1 ? 0 : -EFAULT;
}

int pm_gor_read1(struct pm_gor *g, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	return read1(g, pid, addr, buf, len);
}

#define ALLGADD_MAX 4095 /* bytes of runtime.allgadd's code read at most (it has ~350) */

/*
 * runtime.allgs in a binary without its symbol (stripped): the slice
 * runtime.allgadd appends to.  Its code reads the slice's pointer, length
 * and capacity, RIP-relative: the one address A whose A+8 and A+16 it also
 * reads or writes (MOV, LEA, CMP, ADD, SUB with a ModRM of disp32(RIP)).
 * 0 when not found.
 */
static uint64_t allgs_from_code(const struct pm_elf *e)
{
	struct pm_go *go = NULL;
	const uint8_t *b = NULL;
	uint64_t found;
	size_t len = 0;
	long idx;

	if (pm_go_open(&go, e) != 0)
		return 0;
	idx = pm_go_func_by_name(go, "runtime.allgadd");
	if (idx >= 0)
		b = pm_gocode_bytes(e, go, idx, ALLGADD_MAX, &len);
	found = pm_gocode_slice_var(b, len, pm_go_func_entry(go, idx));
	pm_go_free(go);
	return found;
}

int pm_gor_allgs(struct pm_gor *g, pid_t pid, uint64_t **gs, size_t *n)
{
	struct gproc *p = pm_gor_proc_of(g, pid);
	struct pm_elf *e;
	uint64_t at, hdr[3];
	uint8_t *b;
	size_t len, i;

	if (!p->gomap || !p->gomap->sym)
		return -ENOENT;
	if (!p->allgs_at) { /* looked up once (UINT64_MAX: not found) */
		if (!(e = pm_elf_open(pm_sym_path(p->gomap->sym))))
			return -ENOENT;
		at = pm_elf_symbol_addr(e, "runtime.allgs");
		if (!at)
			at = allgs_from_code(e);
		pm_elf_free(e);
		p->allgs_at = at ? at : UINT64_MAX;
	}
	at = p->allgs_at;
	if (at == UINT64_MAX)
		return -ENOENT;
	at = (uint64_t)((int64_t)at + p->gomap->bias);
	/*
	 * {ptr, len, cap}: a new array is made whole before it is published,
	 * but append stores its three words one by one (the pointer last,
	 * through the write barrier while the GC runs): a header read between
	 * them names the old array with the new length, whose end is other
	 * memory.  The header is read again after the array, and the list
	 * taken only when both reads agree (three tries).
	 *
	 * The header is the target's: a length over its capacity or
	 * PM_GOR_ALLGS_MAX is not believed (counted), the array read up to the
	 * smallest of the three; and the list ends at its first entry that
	 * cannot be a g (nil, unaligned, unreadable): the runtime never
	 * leaves one there, so what follows it is not its list (counted).
	 */
	for (int tries = 0;; tries++) {
		uint64_t again[3];

		if (read1(g, pid, at, hdr, sizeof(hdr)) || !hdr[1] || !pm_go_ptr_ok(hdr[0]))
			return -ENOENT;
		len = (size_t)PM_MIN(PM_MIN(hdr[1], hdr[2]), (uint64_t)PM_GOR_ALLGS_MAX);
		b = xmalloc(len * 8);
		/* in pages, up to the first entry not readable or not a g */
		for (i = 0; i < len;) {
			size_t k = PM_MIN(len - i, (size_t)512), j = i, end = i + k;

			if (read1(g, pid, hdr[0] + 8 * i, b + 8 * i, k * 8) == 0)
				j = end;
			else
				while (j < end && read1(g, pid, hdr[0] + 8 * j, b + 8 * j, 8) == 0)
					j++;
			while (i < j && pm_go_ptr_ok(pm_le64(b + 8 * i)))
				i++;
			if (i < end)
				break;
		}
		len = i;
		if (!read1(g, pid, at, again, sizeof(again)) && memcmp(again, hdr, sizeof(hdr)) == 0)
			break;
		free(b);
		if (tries == 2)
			return -EAGAIN;
	}
	for (i = 0; i < len && pm_go_ptr_ok(pm_le64(b + 8 * i)); i++)
		;
	if (i < hdr[1]) {
		g->st_allgs_cut++;
		if (hdr[1] - i > g->st_allgs_max_cut)
			g->st_allgs_max_cut = hdr[1] - i;
	}
	len = i;
	if (!len) {
		free(b);
		return -ENOENT;
	}
	*gs = xmalloc(len * sizeof(**gs));
	for (i = 0; i < len; i++)
		(*gs)[i] = pm_le64(b + 8 * i);
	free(b);
	*n = len;
	return 0;
}

void pm_gor_labels_cut(const struct pm_gor *g, uint64_t *sets, uint64_t *cut)
{
	*sets = g ? g->st_labsets : 0;
	*cut = g ? g->st_labcut : 0;
}

void pm_gor_allgs_cut(const struct pm_gor *g, uint64_t *times, uint64_t *most)
{
	*times = g ? g->st_allgs_cut : 0;
	*most = g ? g->st_allgs_max_cut : 0;
}

static uint64_t u64_at(const uint8_t *b, uint32_t off)
{
	return pm_le64(b + off);
}

/* ---- strings and labels ---- */

static const char *intern_str(struct pm_gor *g, const char *s, size_t len)
{
	uint64_t hv = pm_hash(s, len, g->seed);
	size_t pos = SIZE_MAX;
	long idx;
	char *c;

	while ((idx = pm_hidx_next(&g->str_idx, hv, &pos)) >= 0)
		if (strlen(g->strs[idx]) == len && memcmp(g->strs[idx], s, len) == 0)
			return g->strs[idx];
	c = xmalloc(len + 1);
	memcpy(c, s, len);
	c[len] = '\0';
	PM_GROW(g->strs, g->capstrs, g->nstrs + 1);
	g->strs[g->nstrs] = c;
	pm_hidx_add(&g->str_idx, hv, (uint32_t)g->nstrs++);
	return c;
}

/*
 * A target string as a label, made safe for a terminal as pm_sanitize()
 * does (NUL bytes too): `go tool pprof -tags` and others print labels as
 * they are, so a label must not carry what a terminal would act on.
 */
static const char *label_str(struct pm_gor *g, const char *b, size_t len)
{
	char *t = xmalloc(len + 1);
	const char *r;
	size_t i;

	for (i = 0; i < len; i++)
		t[i] = b[i] ? b[i] : '?';
	t[len] = '\0';
	pm_sanitize(t);
	r = intern_str(g, t, strlen(t));
	free(t);
	return r;
}

struct strref {
	uint64_t kp, kl, vp, vl;
};

static int cmp_label(const void *a, const void *b)
{
	const struct pm_gor_label *x = a, *y = b;

	return strcmp(x->key, y->key);
}

/* Fetch up to PM_GOR_MAX_LABELS string pairs in one batch. */
static size_t fetch_labels(struct pm_gor *g, pid_t pid, const struct strref *sr, size_t n)
{
	char (*kb)[MAX_KEY] = g->kb, (*vb)[MAX_VAL] = g->vb;
	struct rd r[2 * PM_GOR_MAX_LABELS];
	size_t i, k = 0, out = 0;

	for (i = 0; i < n; i++) {
		if (sr[i].kl > MAX_KEY || sr[i].vl > MAX_VAL)
			g->lab_cut = true; /* a prefix kept */
		r[2 * i] = (struct rd){ sr[i].kp, kb[i], sr[i].kl < MAX_KEY ? sr[i].kl : MAX_KEY };
		r[2 * i + 1] = (struct rd){ sr[i].vp, vb[i], sr[i].vl < MAX_VAL ? sr[i].vl : MAX_VAL };
		k += 2;
	}
	for (i = 0; i < k; i++)
		if (r[i].len && !r[i].addr)
			r[i].len = 0;
	/* zero-length reads are fine for process_vm_readv */
	readv_all(g, pid, r, k);
	for (i = 0; i < n; i++) {
		if (!r[2 * i].len)
			continue;
		if (r[2 * i + 1].len == 0 && sr[i].vl != 0)
			continue;
		g->lab[out].key = label_str(g, kb[i], r[2 * i].len);
		g->lab[out].value = label_str(g, vb[i], r[2 * i + 1].len);
		out++;
	}
	qsort(g->lab, out, sizeof(g->lab[0]), cmp_label);
	/* a key once (a map cannot repeat one; a torn read could) */
	for (i = 1, k = out ? 1 : 0; i < out; i++)
		if (strcmp(g->lab[i].key, g->lab[k - 1].key) != 0)
			g->lab[k++] = g->lab[i];
	return k;
}

/* Slots of one map[string]string bucket with a live entry. */
static size_t bucket_slots(const uint8_t *b, struct strref *sr, size_t n, size_t max)
{
	size_t i;

	for (i = 0; i < 8 && n < max; i++) {
		if (b[i] < 5) /* emptyRest, emptyOne, evacuatedX/Y/Empty */
			continue;
		sr[n].kp = pm_le64(b + 8 + 16 * i);
		sr[n].kl = pm_le64(b + 8 + 16 * i + 8);
		sr[n].vp = pm_le64(b + 136 + 16 * i);
		sr[n].vl = pm_le64(b + 136 + 16 * i + 8);
		if (sr[n].kl > 1 << 20 || sr[n].vl > 1 << 20)
			continue; /* (counted by the caller: fewer than the map's count) */
		n++;
	}
	return n;
}

/*
 * Go <= 1.23: g.labels -> *labelMap, a map[string]string variable: the
 * hmap pointer, then hmap{count, flags, B, noverflow, hash0, buckets,
 * oldbuckets, ...}.  A map still growing keeps unevacuated entries in its
 * old buckets: both arrays are read.  At most 16 buckets and 8 overflow
 * buckets.
 */
static size_t labels_map(struct pm_gor *g, pid_t pid, uint64_t lp)
{
	uint8_t *bk = g->bk;
	struct strref sr[PM_GOR_MAX_LABELS];
	uint8_t hm[48];
	uint64_t h, arr[2];
	size_t n = 0, a, i;
	unsigned B, flags, over = 0;

	if (read1(g, pid, lp, &h, 8) || !pm_go_ptr_ok(h) || read1(g, pid, h, hm, sizeof(hm)))
		return 0;
	if ((int64_t)pm_le64(hm) <= 0)
		return 0;
	flags = hm[8];
	B = hm[9];
	if (B > 4)
		B = 4; /* more labels than anyone sets; read the first 16 buckets */
	arr[0] = pm_le64(hm + 16);
	arr[1] = pm_le64(hm + 24);
	for (a = 0; a < 2; a++) {
		size_t nb = (size_t)1 << B;

		if (a == 1 && !(flags & 8) && B > 0)
			nb >>= 1; /* the old array is half the size unless same-size growth */
		if (!pm_go_ptr_ok(arr[a]) || read1(g, pid, arr[a], bk, nb * HMAP_BUCKET))
			continue;
		for (i = 0; i < nb; i++) {
			uint64_t ov;
			uint8_t ob[HMAP_BUCKET];

			n = bucket_slots(bk + i * HMAP_BUCKET, sr, n, PM_GOR_MAX_LABELS);
			ov = pm_le64(bk + i * HMAP_BUCKET + 264);
			while (pm_go_ptr_ok(ov) && over < MAX_OVERFLOW && n < PM_GOR_MAX_LABELS &&
			       !read1(g, pid, ov, ob, sizeof(ob))) {
				over++;
				n = bucket_slots(ob, sr, n, PM_GOR_MAX_LABELS);
				ov = pm_le64(ob + 264);
			}
		}
	}
	if ((uint64_t)pm_le64(hm) > n)
		g->lab_cut = true; /* fewer than the map's count: cut */
	return fetch_labels(g, pid, sr, n);
}

/* Go 1.24+: g.labels -> *labelMap = {list []label{key, value string}}. */
static size_t labels_slice(struct pm_gor *g, pid_t pid, uint64_t lp)
{
	struct strref sr[PM_GOR_MAX_LABELS];
	uint8_t hdr[24], arr[PM_GOR_MAX_LABELS * 32];
	uint64_t ptr, len;
	size_t i, n = 0;

	if (read1(g, pid, lp, hdr, sizeof(hdr)))
		return 0;
	ptr = pm_le64(hdr);
	len = pm_le64(hdr + 8);
	if (!len || len > 1 << 20 || !pm_go_ptr_ok(ptr))
		return 0;
	if (len > PM_GOR_MAX_LABELS) {
		len = PM_GOR_MAX_LABELS;
		g->lab_cut = true;
	}
	if (read1(g, pid, ptr, arr, (size_t)len * 32))
		return 0;
	for (i = 0; i < len; i++) {
		const uint8_t *e = arr + 32 * i;

		sr[n] = (struct strref){ pm_le64(e), pm_le64(e + 8), pm_le64(e + 16),
					 pm_le64(e + 24) };
		if (sr[n].kl > 1 << 20 || sr[n].vl > 1 << 20) {
			g->lab_cut = true;
			continue;
		}
		n++;
	}
	return fetch_labels(g, pid, sr, n);
}

/* g.ancestors -> *[]ancestorInfo{pcs []uintptr, goid, gopc} (40 bytes each). */
static size_t read_ancestors(struct pm_gor *g, pid_t pid, uint64_t ap, size_t max)
{
	uint8_t hdr[24], arr[PM_GOR_MAX_ANCESTORS * 40];
	struct rd r[PM_GOR_MAX_ANCESTORS];
	uint64_t ptr, len;
	size_t i, n;

	if (!max || read1(g, pid, ap, hdr, sizeof(hdr)))
		return 0;
	ptr = pm_le64(hdr);
	len = pm_le64(hdr + 8);
	if (!len || len > 1 << 20 || !pm_go_ptr_ok(ptr))
		return 0;
	n = len < max ? (size_t)len : max;
	if (n > PM_GOR_MAX_ANCESTORS)
		n = PM_GOR_MAX_ANCESTORS;
	if (read1(g, pid, ptr, arr, n * 40))
		return 0;
	for (i = 0; i < n; i++) {
		const uint8_t *e = arr + 40 * i;
		uint64_t pp = pm_le64(e), pl = pm_le64(e + 8);

		g->anc[i].goid = (int64_t)pm_le64(e + 24);
		g->anc[i].gopc = pm_le64(e + 32);
		if (pl > PM_GOR_MAX_ANC_PCS)
			pl = PM_GOR_MAX_ANC_PCS;
		if (!pm_go_ptr_ok(pp))
			pl = 0;
		g->anc[i].npcs = (size_t)pl;
		r[i] = (struct rd){ pp, g->anc[i].pcs, (size_t)pl * 8 };
	}
	readv_all(g, pid, r, n);
	for (i = 0; i < n; i++)
		g->anc[i].npcs = r[i].len / 8;
	return n;
}

/* ---- inspection ---- */

/*
 * A goroutine that is no longer on its m when the sample is read (it was
 * descheduled, or it exited and its g may run another goroutine now) is
 * the sampled one only if the outermost bytes of its stack still equal the
 * sample's copy of them: its root frames (goexit's return address, the
 * start function's frame with its closure and arguments) do not change
 * while it lives, and a new goroutine on a reused g writes its own.
 */
static int same_stack(struct pm_gor *g, pid_t pid, const uint8_t *gb, uint64_t sp,
		      const uint8_t *stack, size_t stack_len)
{
	uint8_t cur[256];
	uint64_t hi = pm_le64(gb + 8), from;

	g->copy_used = true; /* what the copy holds to its root decides: a capture keeps it */
	if (!stack || hi <= sp)
		return 0;
	if (hi - sp > stack_len)
		return -1; /* the copy does not reach the root frames: cannot tell */
	from = hi - sp > sizeof(cur) ? hi - sizeof(cur) : sp;
	if (read1(g, pid, from, cur, (size_t)(hi - from)))
		return 0;
	return memcmp(cur, stack + (from - sp), (size_t)(hi - from)) == 0;
}

/* Labels and ancestors of the goroutine pm_gor_inspect_g() found (g->labels_ptr, g->anc_ptr). */
void pm_gor_read_extras(struct pm_gor *g, pid_t pid, const struct pm_gor_layout *l,
		 struct pm_gor_info *out)
{
	out->nlabels = 0;
	out->nancestors = 0;
	if (pm_go_ptr_ok(g->labels_ptr)) {
		g->lab_cut = false;
		if (l->labels == PM_GOR_LABELS_MAP)
			out->nlabels = labels_map(g, pid, g->labels_ptr);
		else if (l->labels == PM_GOR_LABELS_SLICE)
			out->nlabels = labels_slice(g, pid, g->labels_ptr);
		g->st_labsets++;
		g->st_labcut += g->lab_cut;
	}
	out->labels = g->lab;
	if (pm_go_ptr_ok(g->anc_ptr) && g->o.creators > 0)
		out->nancestors = read_ancestors(g, pid, g->anc_ptr, g->o.creators);
	out->ancestors = g->anc;
}

int pm_gor_inspect_g(struct pm_gor *g, pid_t pid, pid_t tid, uint64_t r14, uint64_t sp,
	      const uint8_t *stack, size_t stack_len, struct pm_gor_info *out)
{
	struct gproc *p = pm_gor_proc_of(g, pid);
	const struct pm_gor_layout *l = &p->l;
	uint8_t gb[G_READ_MAX], mb[M_READ_MAX], cb[G_READ_MAX];
	const uint8_t *ub = NULL;
	uint64_t m = 0, curg = 0;
	bool sys = false, on_stack = false, late = false, dead = false;
	int64_t goid;

	if (p->state != 1)
		return -ENOTSUP;
	memset(out, 0, sizeof(*out));
	/*
	 * The candidate from the register.  The m last seen on this thread is
	 * read in the same system call as the g: it is nearly always g.m, and
	 * one process_vm_readv per sample instead of two is most of the
	 * inspector's cost (about 2.5 us each here).
	 */
	if (pm_go_ptr_ok(r14)) {
		uint64_t cm = tm_get(g, tid_key(pid, tid)), gm = 0;
		struct rd r[2] = { { r14, gb, l->g_size }, { cm, mb, l->m_size } };
		bool have_g, have_m = false;

		if (pm_go_ptr_ok(cm)) {
			readv_all(g, pid, r, 2);
			have_g = r[0].len == l->g_size;
			have_m = r[1].len == l->m_size;
		} else {
			have_g = !read1(g, pid, r14, gb, l->g_size);
		}
		if (have_g) {
			gm = u64_at(gb, l->g_m);
			on_stack = u64_at(gb, 0) <= sp && sp < u64_at(gb, 8);
			if (!(have_m && gm == cm))
				have_m = pm_go_ptr_ok(gm) && !read1(g, pid, gm, mb, l->m_size);
		}
		if (have_g && have_m && u64_at(mb, l->m_procid) == (uint64_t)(uint32_t)tid) {
			uint64_t g0 = u64_at(mb, 0), gs = u64_at(mb, l->m_gsignal);

			curg = u64_at(mb, l->m_curg);
			if (r14 == curg && on_stack) {
				m = gm;
				ub = gb;
			} else if (r14 == g0 || r14 == gs) {
				m = gm;
				sys = true;
			}
		}
	}
	/*
	 * R14 is a goroutine whose stack holds SP, but no longer the one its m
	 * runs: it was descheduled or exited (and its g may be reused) since
	 * the sample.  What it holds now may not be what it held then.
	 */
	if (!m && on_stack) {
		uint32_t st = (uint32_t)pm_le32(gb + l->g_status) & ~0x1000u;

		/* _Gidle: no goroutine's (a g0 whose m could not be read): nothing validates */
		if (st == 0)
			return -EINVAL;
		/*
		 * with the creation log, who ran on R14 then is known: no check
		 * needed; without, a copy that does not reach the root leaves it
		 * to the walk's root (out->root_only)
		 */
		if (!g->probes) {
			int same = same_stack(g, pid, gb, sp, stack, stack_len);

			out->stale = same == 0;
			out->root_only = same < 0;
		}
		g->st_late++;
		late = true;
		ub = gb;
		dead = st == 6;
	}
	/* else the m last seen on this thread (C code, ABI0 assembly) */
	if (!m && !late) {
		uint64_t cm = tm_get(g, tid_key(pid, tid));

		if (!cm || read1(g, pid, cm, mb, l->m_size) ||
		    u64_at(mb, l->m_procid) != (uint64_t)(uint32_t)tid)
			return -EINVAL;
		m = cm;
		curg = u64_at(mb, l->m_curg);
		g->st_fallback++;
		/* still running there: SP is on its stack, or on g0's (C called through cgo) */
		if (!pm_go_ptr_ok(curg) || read1(g, pid, curg, cb, l->g_size))
			return -EINVAL;
		if (!(u64_at(cb, 0) <= sp && sp < u64_at(cb, 8))) {
			uint64_t g0 = u64_at(mb, 0);
			uint8_t sb[16];

			if (!pm_go_ptr_ok(g0) || read1(g, pid, g0, sb, sizeof(sb)) ||
			    !(pm_le64(sb) <= sp && sp < pm_le64(sb + 8)))
				return -EINVAL;
			sys = true;
		}
		ub = cb;
	}
	if (late)
		goto have;
	tm_put(g, tid_key(pid, tid), m);
	if (!curg)
		return -ENOENT;
	if (!ub) {
		if (!pm_go_ptr_ok(curg) || read1(g, pid, curg, cb, l->g_size))
			return -EINVAL;
		ub = cb;
	}
	if (u64_at(ub, l->g_m) != m)
		return -EINVAL;
	curg = ub == gb ? r14 : curg;
have:
	if (late)
		curg = r14;
	goid = (int64_t)u64_at(ub, l->g_goid);
	if (goid <= 0)
		return -EINVAL;
	out->g = curg;
	out->goid = goid;
	out->gopc = u64_at(ub, l->g_gopc);
	out->startpc = l->g_startpc ? u64_at(ub, l->g_startpc) : 0;
	out->parent_goid = l->g_parent_goid ? (int64_t)u64_at(ub, l->g_parent_goid) : 0;
	out->on_system_stack = sys;
	out->late = late;
	out->dead = dead;
	out->stack_lo = u64_at(ub, 0);
	out->stack_hi = u64_at(ub, 8);
	out->sched_bp = l->g_sched_bp ? u64_at(ub, l->g_sched_bp) : 0;
	g->labels_ptr = l->g_labels ? u64_at(ub, l->g_labels) : 0;
	g->anc_ptr = l->g_ancestors ? u64_at(ub, l->g_ancestors) : 0;
	out->labels = g->lab;
	out->ancestors = g->anc;
	return 0;
}

int pm_gor_inspect(struct pm_gor *g, pid_t pid, pid_t tid, uint64_t r14, uint64_t sp,
		   const uint8_t *stack, size_t stack_len, struct pm_gor_info *out)
{
	int rc = pm_gor_inspect_g(g, pid, tid, r14, sp, stack, stack_len, out);

	if (rc == 0 && (out->stale || out->root_only)) {
		g->st_stale++;
		return -ESTALE; /* no walk here to confirm it */
	}
	if (rc == 0)
		pm_gor_read_extras(g, pid, &pm_gor_proc_of(g, pid)->l, out);
	return rc;
}
