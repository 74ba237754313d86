/*
 * The goroutine inspector's frames: creator chains (tracebackancestors,
 * the creation probes, the go statements of sampled parents), tag frames
 * that carry goid and labels, record's and build_profile's hooks.  See
 * goroutine.h.
 */
#include "gorframes.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "goroutine-int.h"
#include "maps.h"
#include "profile.h"
#include "symtab.h"
#include "util.h"

/* ---- frames, tags, chains ---- */

static uint32_t intern_cframe(struct pm_gor *g, struct pm_stacks *st, const struct pm_map *m,
			      uint64_t vaddr, bool full)
{
	uint64_t hv = mix(mix(mix(g->seed, (uint64_t)(uintptr_t)m), vaddr), full);
	size_t pos = SIZE_MAX;
	long idx;
	struct pm_stack_frame f;

	while ((idx = pm_hidx_next(&g->cf_idx, hv, &pos)) >= 0)
		if (g->cframes[idx].m == m && g->cframes[idx].vaddr == vaddr &&
		    g->cframes[idx].full == full)
			goto have;
	PM_GROW(g->cframes, g->capcf, g->ncf + 1);
	g->cframes[g->ncf] = (struct cframe){ m, vaddr, full };
	idx = (long)g->ncf++;
	pm_hidx_add(&g->cf_idx, hv, (uint32_t)idx);
have:
	f.map_id = PM_GOR_MAP_CREATOR;
	f.is_return = false;
	f.addr = (uint64_t)idx;
	f.vaddr = (uint64_t)idx;
	return pm_stacks_frame(st, &f);
}

static uint32_t intern_tag(struct pm_gor *g, int64_t goid, const struct pm_gor_label *lab,
			   size_t n)
{
	uint64_t hv = mix(g->seed, (uint64_t)goid);
	size_t pos = SIZE_MAX, i;
	long idx;

	for (i = 0; i < n; i++)
		hv = mix(mix(hv, (uint64_t)(uintptr_t)lab[i].key), (uint64_t)(uintptr_t)lab[i].value);
	while ((idx = pm_hidx_next(&g->tag_idx, hv, &pos)) >= 0) {
		const struct tag *t = &g->tags[idx];

		if (t->goid != goid || t->nlab != n)
			continue;
		for (i = 0; i < n; i++)
			if (g->labpool[t->lab + i].key != lab[i].key ||
			    g->labpool[t->lab + i].value != lab[i].value)
				break;
		if (i == n)
			return (uint32_t)idx;
	}
	PM_GROW(g->labpool, g->caplab, g->nlab + n);
	if (n)
		memcpy(g->labpool + g->nlab, lab, n * sizeof(*lab));
	PM_GROW(g->tags, g->captags, g->ntags + 1);
	g->tags[g->ntags] = (struct tag){ goid, (uint32_t)g->nlab, (uint32_t)n };
	g->nlab += n;
	pm_hidx_add(&g->tag_idx, hv, (uint32_t)g->ntags);
	return (uint32_t)g->ntags++;
}

static uint32_t intern_chain(struct pm_gor *g, const uint32_t *ids, size_t n)
{
	uint64_t hv = mix(g->seed, n);
	size_t pos = SIZE_MAX, i;
	long idx;

	for (i = 0; i < n; i++)
		hv = mix(hv, ids[i]);
	while ((idx = pm_hidx_next(&g->chain_idx, hv, &pos)) >= 0)
		if (g->chains[idx].n == n &&
		    memcmp(g->chainpool + g->chains[idx].off, ids, n * sizeof(*ids)) == 0)
			return (uint32_t)idx;
	/* + 1: the pool exists even while every chain is empty (no offset from NULL) */
	PM_GROW(g->chainpool, g->capchainpool, g->nchainpool + n + 1);
	if (n)
		memcpy(g->chainpool + g->nchainpool, ids, n * sizeof(*ids));
	PM_GROW(g->chains, g->capchains, g->nchains + 1);
	g->chains[g->nchains] = (struct chain){ (uint32_t)g->nchainpool, (uint32_t)n };
	g->nchainpool += n;
	pm_hidx_add(&g->chain_idx, hv, (uint32_t)g->nchains);
	return (uint32_t)g->nchains++;
}

/* The innermost function at return address @pc of @pid, NULL when unknown. */
static const char *func_at(struct pm_gor *g, struct pm_maps *maps, pid_t pid, uint64_t pc,
			   const struct pm_map **mp)
{
	const struct pm_map *m = pm_maps_find(maps, pid, pc);

	*mp = m;
	if (!m || !m->sym || pc == 0)
		return NULL;
	if (!pm_sym_frames(m->sym, (uint64_t)((int64_t)pc - m->bias) - 1, g->fr, 1))
		return NULL;
	return g->fr[0].func;
}

/* One creator frame for the return address @pc; false when it is in no mapping. */
static bool add_cframe(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st, pid_t pid,
		       uint64_t pc, bool full, size_t *n)
{
	const struct pm_map *m = pm_maps_find(maps, pid, pc);

	if (!m || !m->sym || !pc || *n >= MAX_CHAIN)
		return false;
	g->tmp[(*n)++] = intern_cframe(g, st, m, (uint64_t)((int64_t)pc - m->bias) - 1, full);
	return true;
}

/*
 * With ancestors: each one's stack at its `go` statement, nearest first.
 * The runtime's own frames at the top (newproc and what it called) and the
 * goexit at the bottom are dropped; the last ancestor's go statement ends
 * the chain unless the runtime made that goroutine.
 */
static size_t chain_ancestors(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st,
			      pid_t pid, const struct pm_gor_info *gi)
{
	size_t n = 0, k, i;
	const struct pm_map *m;

	for (k = 0; k < gi->nancestors && k < g->o.creators; k++) {
		const struct pm_gor_ancestor *a = &gi->ancestors[k];
		size_t first = 0, last = a->npcs;

		for (i = 0; i < a->npcs && i < 8; i++) {
			const char *f = func_at(g, maps, pid, a->pcs[i], &m);
			if (f && strcmp(f, "runtime.newproc") == 0) {
				first = i + 1;
				break;
			}
		}
		while (last > first) {
			const char *f = func_at(g, maps, pid, a->pcs[last - 1], &m);
			if (!f || strcmp(f, "runtime.goexit") != 0)
				break;
			last--;
		}
		for (i = first; i < last; i++)
			add_cframe(g, maps, st, pid, a->pcs[i], false, &n);
	}
	if (k > 0) {
		const char *f = func_at(g, maps, pid, gi->ancestors[k - 1].gopc, &m);
		if (f && strncmp(f, "runtime.", 8) != 0)
			add_cframe(g, maps, st, pid, gi->ancestors[k - 1].gopc, true, &n);
	}
	return n;
}

static struct seen *seen_slot(struct pm_gor *g, uint64_t key, bool insert)
{
	size_t h, i;

	if (insert && (g->seen_n + 1) * 2 > g->seen_size) {
		struct seen *o = g->seen;
		size_t os = g->seen_size;

		g->seen_size = os ? os * 2 : 1024;
		g->seen = xcalloc(g->seen_size, sizeof(*g->seen));
		g->seen_n = 0;
		for (i = 0; i < os; i++)
			if (o[i].key) {
				*seen_slot(g, o[i].key, true) = o[i];
			}
		free(o);
	}
	if (!g->seen_size)
		return NULL;
	for (h = pm_hash_u64(key) & (g->seen_size - 1); g->seen[h].key;
	     h = (h + 1) & (g->seen_size - 1))
		if (g->seen[h].key == key)
			return &g->seen[h];
	if (!insert)
		return NULL;
	g->seen_n++;
	g->seen[h].key = key;
	return &g->seen[h];
}

static uint64_t seen_key(pid_t pid, int64_t goid)
{
	return ((uint64_t)(uint32_t)pid << 40 ^ (uint64_t)goid) | 1ULL << 63;
}

/*
 * Without ancestors: the go statement; then (1.21+, parentGoid) the go
 * statement of each parent that was itself sampled at some time.
 */
static size_t chain_gopc(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st, pid_t pid,
			 const struct pm_gor_info *gi)
{
	size_t n = 0;
	unsigned lev;
	int64_t parent = gi->parent_goid;

	add_cframe(g, maps, st, pid, gi->gopc, true, &n);
	for (lev = 1; lev < g->o.creators && parent > 0; lev++) {
		struct seen *e = seen_slot(g, seen_key(pid, parent), false);

		if (!e || !add_cframe(g, maps, st, pid, e->gopc, true, &n))
			break;
		parent = e->parent;
	}
	return n;
}

static uint64_t created_key(pid_t pid, uint64_t gp)
{
	return (gp ^ (uint64_t)(uint32_t)pid << 48) | 1;
}

static uint32_t created_slot(uint64_t key)
{
	return (uint32_t)(pm_hash_u64(key) & (CREATED_SLOTS - 1));
}

/* Creation number @gen, while the ring still holds it. */
static struct created *created_gen(struct pm_gor *g, uint64_t gen)
{
	struct created *c;

	if (!gen || !g->created)
		return NULL;
	c = &g->created[gen & (CREATED_SLOTS - 1)];
	return c->gen == gen ? c : NULL;
}

/* The creation last seen on g @gp; NULL when the probes saw none. */
static struct created *created_of(struct pm_gor *g, pid_t pid, uint64_t gp)
{
	uint64_t key = created_key(pid, gp);
	const struct gidx *x;

	if (!g->gidx)
		return NULL;
	x = &g->gidx[created_slot(key)];
	return x->key == key ? created_gen(g, x->gen) : NULL;
}

/*
 * The ancestors of the goroutine of creation @c, nearest first, as
 * tracebackancestors would have them (into g->anc).  The count.
 */
static size_t created_chain(struct pm_gor *g, const struct created *c)
{
	size_t k;

	for (k = 0; c && k < g->o.creators && k < PM_GOR_MAX_ANCESTORS; k++) {
		const struct created *up = created_gen(g, c->cgen);

		g->anc[k].goid = 0; /* not known: see struct created */
		/* the creator's own go statement: where its creator's stack was */
		g->anc[k].gopc = up && up->npcs > 1 ? up->pcs[1] : 0;
		g->anc[k].npcs = c->npcs;
		memcpy(g->anc[k].pcs, c->pcs, c->npcs * sizeof(c->pcs[0]));
		c = up;
	}
	return k;
}

static bool find_layout(struct gproc *p, struct pm_maps *maps, pid_t pid,
			const uint64_t *pcs, size_t npcs)
{
	size_t i;

	if (p->state)
		return p->state == 1;
	for (i = 0; i < npcs && i < 64; i++) {
		const struct pm_map *m = pm_maps_find(maps, pid, pcs[i]);
		const char *ver;

		if (!m || !m->sym || !pm_sym_is_go(m->sym))
			continue;
		ver = pm_sym_go_version(m->sym);
		if (pm_gor_layout_dwarf(pm_sym_path(m->sym), ver, &p->l) == 0 ||
		    pm_gor_layout_version(ver, &p->l) == 0) {
			p->state = 1;
			return true;
		}
		pm_warn("goroutine ids, labels and creators are off for PID %d: Go version "
			"'%s' is not known and the binary has no DWARF",
			(int)pid, ver && *ver ? ver : "unknown");
		p->state = -1;
		return false;
	}
	if (++p->tries >= MAX_GO_TRIES)
		p->state = -1; /* not a Go process */
	return false;
}

bool pm_gor_unw_abi(struct pm_gor *g, struct pm_maps *maps, pid_t pid, const uint64_t *pcs,
		    size_t npcs, struct pm_unw_goabi *out)
{
	struct gproc *p = pm_gor_proc_of(g, pid);
	const struct pm_gor_layout *l = &p->l;

	if (npcs == 0 ? p->state != 1 : !find_layout(p, maps, pid, pcs, npcs))
		return false;
	if (!l->g_m || !l->m_curg || !l->g_sched_sp || !l->g_sched_pc)
		return false;
	memset(out, 0, sizeof(*out));
	out->g_m = l->g_m;
	out->g_sched_sp = l->g_sched_sp;
	out->g_sched_pc = l->g_sched_pc;
	out->g_sched_bp = l->g_sched_bp;
	out->m_curg = l->m_curg;
	out->m_gsignal = l->m_gsignal;
	return true;
}

static size_t gor_sample(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st, pid_t pid,
			 pid_t tid, uint64_t r14, uint64_t sp, const uint8_t *stack, size_t stack_len,
			 const uint64_t *pcs, size_t npcs, uint32_t *ids, size_t n, size_t cap)
{
	struct gproc *p = pm_gor_proc_of(g, pid);
	struct pm_gor_info gi;
	struct centry *e;
	struct pm_stack_frame tf;
	uint64_t hv;
	size_t nc = 0;
	const uint32_t *cids = g->tmp;
	bool parent_mode;
	struct created *cr;
	uint32_t tagv;

	if (!find_layout(p, maps, pid, pcs, npcs))
		return n;
	g->st_inspect++;
	switch (pm_gor_inspect_g(g, pid, tid, r14, sp, stack, stack_len, &gi)) {
	case 0:
		g->st_ok++;
		break;
	case -ENOENT:
		g->st_enoent++;
		return n;
	case -ESTALE:
		return n;
	default:
		g->st_einval++;
		return n;
	}
	cr = created_of(g, pid, gi.g);
	parent_mode = p->l.g_parent_goid && !good_ptr(g->anc_ptr) && !cr;
	if (parent_mode) {
		struct seen *s = seen_slot(g, seen_key(pid, gi.goid), true);
		s->gopc = gi.gopc;
		s->parent = gi.parent_goid;
	}
	hv = mix(mix(mix(mix(0, (uint64_t)pid), gi.g), (uint64_t)gi.goid), g->labels_ptr);
	e = &g->cache[hv & (CACHE_SIZE - 1)];
	if (!(e->pid == pid && e->g == gi.g && e->goid == gi.goid &&
	      e->labels_ptr == g->labels_ptr && e->anc_ptr == g->anc_ptr && e->tag &&
	      e->cgen == (cr ? cr->gen : 0))) {
		e->pid = pid;
		e->g = gi.g;
		e->goid = gi.goid;
		e->labels_ptr = g->labels_ptr;
		e->anc_ptr = g->anc_ptr;
		e->cgen = cr ? cr->gen : 0;
		pm_gor_read_extras(g, pid, &p->l, &gi);
		if (!gi.nancestors && g->o.creators) /* no tracebackancestors: the probes' */
			gi.nancestors = created_chain(g, cr);
		e->tag = intern_tag(g, gi.goid, gi.labels, gi.nlabels) + 1;
		e->chain = 0;
		if (g->o.creators && !parent_mode) {
			nc = gi.nancestors ? chain_ancestors(g, maps, st, pid, &gi)
					   : chain_gopc(g, maps, st, pid, &gi);
			e->chain = intern_chain(g, g->tmp, nc) + 1;
		}
	}
	tagv = 0;
	{
		/* an exited goroutine's labels are cleared: it keeps those it had alive */
		struct centry *la = &g->last[mix(mix(mix(0, (uint64_t)pid), gi.g), (uint64_t)gi.goid) &
					     (CACHE_SIZE - 1)];
		bool same = la->pid == pid && la->g == gi.g && la->goid == gi.goid && la->tag;

		if (!gi.dead) {
			*la = *e;
		} else if (same) {
			tagv = la->tag;
		}
	}
	tagv = tagv ? tagv : e->tag;
	if (g->o.creators && parent_mode) {
		nc = chain_gopc(g, maps, st, pid, &gi);
	} else if (e->chain) {
		cids = g->chainpool + g->chains[e->chain - 1].off;
		nc = g->chains[e->chain - 1].n;
	}
	if (n + 1 > cap)
		return n;
	if (n + nc + 1 > cap)
		nc = 0;
	memcpy(ids + n, cids, nc * sizeof(*ids));
	n += nc;
	tf.map_id = PM_GOR_MAP_TAG;
	tf.is_return = false;
	tf.addr = tagv - 1;
	tf.vaddr = tagv - 1;
	ids[n++] = pm_stacks_frame(st, &tf);
	return n;
}

size_t pm_gor_sample(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st, pid_t pid,
		     pid_t tid, uint64_t r14, uint64_t sp, const uint8_t *stack, size_t stack_len,
		     const uint64_t *pcs, size_t npcs, uint32_t *ids, size_t n, size_t cap)
{
	uint64_t t0 = g->stats ? pm_now_ns() : 0;

	n = gor_sample(g, maps, st, pid, tid, r14, sp, stack, stack_len, pcs, npcs, ids, n, cap);
	if (g->stats)
		g->st_ns += pm_now_ns() - t0;
	return n;
}

/* ---- creators from outside: probes on goroutine creation ---- */

static struct pending *pending_of(struct pm_gor *g, pid_t tid)
{
	if (!g->pending)
		g->pending = xcalloc(PENDING_SLOTS, sizeof(*g->pending));
	return &g->pending[pm_hash_u64((uint64_t)tid) & (PENDING_SLOTS - 1)];
}

int pm_gor_probe_newproc(struct pm_gor *g, struct pm_maps *maps, pid_t pid, pid_t tid,
			 uint64_t r14, const uint64_t *pcs, size_t npcs)
{
	struct gproc *p = pm_gor_proc_of(g, pid);
	struct pending *pd;

	if (!find_layout(p, maps, pid, pcs, npcs))
		return -ENOTSUP;
	/* newproc runs on the creating goroutine: R14 is its g */
	if (npcs < 2 || !good_ptr(r14))
		return -EINVAL;
	pd = pending_of(g, tid);
	memset(pd, 0, sizeof(*pd));
	pd->pid = pid;
	pd->tid = tid;
	{
		const struct created *cr = created_of(g, pid, r14);

		pd->c.cgen = cr ? cr->gen : 0;
	}
	pd->c.npcs = (uint32_t)(npcs < CREATED_PCS ? npcs : CREATED_PCS);
	memcpy(pd->c.pcs, pcs, pd->c.npcs * sizeof(pcs[0]));
	return 0;
}

int pm_gor_probe_created(struct pm_gor *g, struct pm_maps *maps, pid_t pid, pid_t tid,
			 uint64_t newg, const uint64_t *pcs, size_t npcs)
{
	struct gproc *p = pm_gor_proc_of(g, pid);
	struct pending *pd = pending_of(g, tid);
	const struct pm_map *m;
	const char *caller;
	struct created *c;
	uint64_t key;

	if (p->state != 1)
		return -ENOTSUP;
	/*
	 * runqput also requeues woken goroutines: only newproc's is a
	 * creation.  Its call in newproc.func1 has one return address: once
	 * named, it is compared, not symbolized again.
	 */
	if (npcs < 2)
		return -ENOENT;
	if (pcs[1] != p->newproc_ret) {
		caller = func_at(g, maps, pid, pcs[1], &m);
		if (!caller || strcmp(caller, "runtime.newproc.func1"))
			return -ENOENT;
		p->newproc_ret = pcs[1];
	}
	if (pd->tid != tid || pd->pid != pid)
		return -ENOENT; /* its newproc was before the recording */
	pd->tid = 0;
	if (!good_ptr(newg))
		return -EINVAL;
	if (!g->created) {
		g->created = xcalloc(CREATED_SLOTS, sizeof(*g->created));
		g->gidx = xcalloc(CREATED_SLOTS, sizeof(*g->gidx));
	}
	c = &g->created[++g->gen & (CREATED_SLOTS - 1)];
	*c = pd->c;
	c->gen = g->gen;
	key = created_key(pid, newg);
	g->gidx[created_slot(key)] = (struct gidx){ key, c->gen };
	g->st_created++;
	return 0;
}

uint64_t pm_gor_location(struct pm_gor *g, struct pm_profile *p, const struct pm_stack_frame *f)
{
	struct pm_prof_line lines[64];
	const struct cframe *c;
	uint64_t mid;
	size_t nf = 0, k;

	if (f->map_id != PM_GOR_MAP_CREATOR || f->addr >= g->ncf)
		return 0;
	c = &g->cframes[f->addr];
	mid = pm_prof_mapping(p, 0, 0, 0, PM_GOR_CREATORS_MAPPING, "");
	if (c->m && c->m->sym)
		nf = pm_sym_frames(c->m->sym, c->vaddr, g->fr, PM_ARRAY_SIZE(g->fr));
	if (!c->full && nf > 1)
		nf = 1;
	for (k = 0; k < nf; k++) {
		char *name = xasprintf("%s%s", g->fr[k].func, PM_GOR_CREATORS_MARK);

		lines[k].func_id = pm_prof_func(p, name, g->fr[k].func, g->fr[k].file,
						g->fr[k].start_line);
		lines[k].line = g->fr[k].line;
		free(name);
	}
	if (!nf) {
		char *name = xasprintf("0x%" PRIx64 "%s", c->vaddr + 1, PM_GOR_CREATORS_MARK);

		lines[0].func_id = pm_prof_func(p, name, name, "", 0);
		lines[0].line = 0;
		free(name);
		nf = 1;
	}
	return pm_prof_loc(p, mid, 0, lines, nf);
}

size_t pm_gor_labels(struct pm_gor *g, const struct pm_stacks *st, const uint32_t *ids, size_t *n,
		     struct pm_prof_label *out, size_t max)
{
	const struct pm_stack_frame *f;
	const struct tag *t;
	size_t k = 0, i;

	if (!*n)
		return 0;
	f = pm_stacks_frame_at(st, ids[*n - 1]);
	if (!f || f->map_id != PM_GOR_MAP_TAG)
		return 0;
	(*n)--;
	if (f->addr >= g->ntags || !max)
		return 0;
	t = &g->tags[f->addr];
	memset(out, 0, max * sizeof(*out));
	out[k].key = "goroutine";
	out[k++].num = t->goid;
	for (i = 0; i < t->nlab && k < max; i++, k++) {
		out[k].key = g->labpool[t->lab + i].key;
		out[k].str = g->labpool[t->lab + i].value;
	}
	return k;
}
