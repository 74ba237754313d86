/*
 * The goroutine inspector's frames: creator chains (tracebackancestors,
 * the creation probes, the go statements of sampled parents), tag frames
 * that carry goid and labels, record's and build_profile's hooks.  See
 * goroutine.h.
 */
#include "goruntime/gorframes.h"
#include "symbols/gopclntab.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "goruntime/gocode.h"
#include "goruntime/goroutine-int.h"
#include "symbols/maps.h"
#include "profile/profile.h"
#include "symbols/symtab.h"
#include "base/util.h"

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

/* The outermost function (inlining undone) at return address @pc, NULL when unknown. */
static const char *outer_func_at(struct pm_gor *g, struct pm_maps *maps, pid_t pid, uint64_t pc,
				 const struct pm_map **mp)
{
	const struct pm_map *m = pm_maps_find(maps, pid, pc);
	size_t nf;

	*mp = m;
	if (!m || !m->sym || pc == 0)
		return NULL;
	nf = pm_sym_frames(m->sym, (uint64_t)((int64_t)pc - m->bias) - 1, g->fr,
			   PM_ARRAY_SIZE(g->fr));
	return nf ? g->fr[nf - 1].func : NULL;
}

/*
 * The entry of the first function outside the runtime that the wrapper at
 * @entry calls (CALL rel32 in its first 128 bytes, read from the target);
 * @entry itself when there is none (the callee was inlined).
 */
static uint64_t wrapped_call(struct pm_gor *g, struct pm_maps *maps, pid_t pid, uint64_t entry)
{
	uint8_t code[128];
	const struct pm_map *m;

	if (pm_gor_read1(g, pid, entry, code, sizeof(code)))
		return entry;
	for (size_t i = 0; i + 5 <= sizeof(code); i++) {
		uint64_t to;
		const char *f;

		if (!pm_gocode_call_at(code, sizeof(code), i, entry, &to))
			continue;
		f = outer_func_at(g, maps, pid, to + 1, &m);
		if (f && strncmp(f, "runtime.", 8) && strncmp(f, "internal/", 9) &&
		    outer_func_at(g, maps, pid, to, &m) != f) /* @to is its entry */
			return to;
	}
	return entry;
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

/*
 * Does the sample's stack hold Go code?  R14 is the g only there: a process
 * known as Go may run other code now (a child forked by the Go program,
 * sampled in its execve now that the kernel's time counts, then exec'd into
 * a C program whose R14 is anything).
 */
static bool has_go_frame(struct pm_maps *maps, pid_t pid, const uint64_t *pcs, size_t npcs)
{
	for (size_t i = 0; i < npcs && i < 64; i++) {
		const struct pm_map *m = pm_maps_find(maps, pid, pcs[i]);

		if (m && m->sym && pm_sym_is_go(m->sym))
			return true;
	}
	return false;
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
			p->gomap = m;
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

/* ---- the creation log: creators from the probe on goroutine creation ---- */

static uint64_t created_key(pid_t pid, uint64_t gp)
{
	return (gp ^ (uint64_t)(uint32_t)pid << 48) | 1;
}

/* Open addressing over @*tab (@*size slots, @*n used), grown at half full. */
static struct gent *tab_slot(struct gent **tab, size_t *size, size_t *n, uint64_t key, bool insert)
{
	size_t h, i;

	if (insert && (*n + 1) * 2 > *size) {
		struct gent *o = *tab;
		size_t os = *size;

		*size = os ? os * 2 : 4096;
		*tab = xcalloc(*size, sizeof(**tab));
		*n = 0;
		for (i = 0; i < os; i++)
			if (o[i].key)
				*tab_slot(tab, size, n, o[i].key, true) = o[i];
		free(o);
	}
	if (!*size)
		return NULL;
	for (h = pm_hash_u64(key) & (*size - 1); (*tab)[h].key; h = (h + 1) & (*size - 1))
		if ((*tab)[h].key == key)
			return &(*tab)[h];
	if (!insert)
		return NULL;
	(*n)++;
	(*tab)[h].key = key;
	return &(*tab)[h];
}

static struct gent *gent_slot(struct pm_gor *g, uint64_t key, bool insert)
{
	return tab_slot(&g->gents, &g->gents_size, &g->gents_n, key, insert);
}

static struct gent *gent_find(struct pm_gor *g, pid_t pid, uint64_t gp)
{
	return gent_slot(g, created_key(pid, gp), false);
}

static void gent_put(struct pm_gor *g, pid_t pid, uint64_t gp, int64_t goid, uint32_t node,
		     uint64_t hi, uint64_t made)
{
	struct gent *e = gent_slot(g, created_key(pid, gp), true);

	e->goid = goid;
	e->node = node;
	e->hi = hi;
	e->from = 0;
	e->made = made;
}

/* The level @seg above @parent (a cnode index + 1) or ending at @end: index + 1. */
static uint32_t intern_node(struct pm_gor *g, uint32_t seg, uint32_t parent, uint8_t end)
{
	uint64_t hv = mix(mix(mix(g->seed, seg), parent), end);
	size_t pos = SIZE_MAX;
	long idx;

	if (parent)
		end = END_PARENT;
	while ((idx = pm_hidx_next(&g->cnode_idx, hv, &pos)) >= 0)
		if (g->cnodes[idx].seg == seg && g->cnodes[idx].parent == parent &&
		    g->cnodes[idx].end == end)
			return (uint32_t)idx + 1;
	PM_GROW(g->cnodes, g->capcnodes, g->ncnodes + 1);
	g->cnodes[g->ncnodes] = (struct cnode){ seg, parent, end, 0, 0 };
	pm_hidx_add(&g->cnode_idx, hv, (uint32_t)g->ncnodes);
	return (uint32_t)++g->ncnodes;
}

/* A marker frame: "[creator unknown]" (1) or "[goroutine unknown]" (2). */
static uint32_t marker_frame(struct pm_gor *g, struct pm_stacks *st, uint64_t which)
{
	return intern_cframe(g, st, NULL, which, false);
}

/*
 * A goroutine the log did not see created (it predates the probe): what
 * the runtime recorded of it, its go statement (gopc) and, 1.21+, its
 * parent's goid: a parent that is the main goroutine (1) ends the chain at
 * the runtime, any other is not known.  Logged under its g.
 */
static uint32_t pre_entry(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st,
			  pid_t pid, uint64_t gp, int64_t goid, uint64_t gopc, int64_t parent)
{
	size_t n = 0;
	uint32_t node;

	if (goid != 1 && gopc)
		add_cframe(g, maps, st, pid, gopc, true, &n);
	node = intern_node(g, intern_chain(g, g->tmp, n), 0,
			   goid == 1 || parent == 1 ? END_ROOT : END_UNKNOWN);
	gent_put(g, pid, gp, goid, node, 0, 0);
	return node;
}

/*
 * The frames of @node's chain (opts.creators levels, nearest first, a
 * "[creator unknown]" frame where it stops before them at a creator not
 * known), interned once per node: a chain index.  *status: CH_*.
 */
static const struct chain *node_flat(struct pm_gor *g, struct pm_stacks *st, uint32_t node,
				     int *status)
{
	struct cnode *c;
	uint32_t cur = node;
	unsigned lev = 0;
	size_t n = 0;
	uint8_t end = END_UNKNOWN;

	if (!node) {
		uint32_t ci;

		g->tmp[0] = marker_frame(g, st, 1);
		*status = CH_UNKNOWN;
		ci = intern_chain(g, g->tmp, 1); /* before g->chains is read: it may grow */
		return &g->chains[ci];
	}
	c = &g->cnodes[node - 1];
	if (c->flat) {
		*status = c->flat_status;
		return &g->chains[c->flat - 1];
	}
	while (cur && lev < g->o.creators) {
		const struct cnode *k = &g->cnodes[cur - 1];
		const struct chain *sg = &g->chains[k->seg];
		size_t take = sg->n < MAX_CHAIN - 1 - n ? sg->n : MAX_CHAIN - 1 - n;

		if (g->o.creators == 1 && take > 1)
			take = 1; /* one level: the go statement alone */

		memcpy(g->tmp + n, g->chainpool + sg->off, take * sizeof(*g->tmp));
		n += take;
		lev++;
		end = k->end;
		cur = k->parent;
	}
	if (lev >= g->o.creators || end == END_ROOT) {
		*status = CH_COMPLETE;
	} else {
		g->tmp[n++] = marker_frame(g, st, 1);
		*status = CH_PARTIAL;
	}
	c = &g->cnodes[node - 1];
	c->flat = intern_chain(g, g->tmp, n) + 1;
	c->flat_status = (uint8_t)*status;
	return &g->chains[c->flat - 1];
}

/* The events' clock now, through opts.read when it logs reads (goroutine.h). */
static uint64_t clock_now(struct pm_gor *g, pid_t pid)
{
	uint64_t v = 0;

	if (!g->o.read)
		return pm_now_ns();
	return g->o.read(g->o.read_arg, pid, PM_GOR_CLOCK_ADDR, &v, 8) ? 0 : v;
}

struct listed {
	uint64_t gp, gopc, startpc, top, after, anc;
	int64_t goid, parent;
	uint32_t node;
	uint8_t state; /* 0 to do, 1 doing, 2 done */
};

/*
 * Listed goroutine @i's creators: its go statement (gopc), then its
 * parent's, where the parent (parentGoid, Go 1.21+) is listed too, up to
 * main (complete); else unknown from there.  A parent that exited before
 * the list was read is not known (goids are never reused: an id listed is
 * that goroutine).
 */
static uint32_t listed_node(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st,
			    pid_t pid, struct listed *ls, const struct pm_hidx *by_goid, size_t i,
			    unsigned depth)
{
	struct listed *l = &ls[i];
	uint32_t parent = 0, seg;
	uint8_t end = END_UNKNOWN;
	size_t n = 0, pos = SIZE_MAX;
	long j;

	if (l->state == 2)
		return l->node;
	l->state = 1;
	if (pm_go_ptr_ok(l->anc) && g->o.creators > 0) {
		/* GODEBUG=tracebackancestors: each ancestor's stack at its go statement */
		struct pm_gor_info gi;
		struct gproc *p = pm_gor_proc_of(g, pid);

		memset(&gi, 0, sizeof(gi));
		g->labels_ptr = 0;
		g->anc_ptr = l->anc;
		pm_gor_read_extras(g, pid, &p->l, &gi);
		g->anc_ptr = 0;
		if (gi.nancestors) {
			n = chain_ancestors(g, maps, st, pid, &gi);
			end = gi.ancestors[gi.nancestors - 1].goid == 1 ? END_ROOT : END_UNKNOWN;
			l->node = intern_node(g, intern_chain(g, g->tmp, n), 0, end);
			l->state = 2;
			return l->node;
		}
	}
	if (l->goid == 1 || l->parent == 1) {
		end = END_ROOT;
	} else if (l->parent > 0 && depth < 64) {
		while ((j = pm_hidx_next(by_goid, mix(g->seed, (uint64_t)l->parent), &pos)) >= 0)
			if (ls[j].goid == l->parent && ls[j].state != 1) {
				parent = listed_node(g, maps, st, pid, ls, by_goid, (size_t)j, depth + 1);
				break;
			}
	}
	if (l->goid != 1 && l->gopc)
		add_cframe(g, maps, st, pid, l->gopc, true, &n);
	/*
	 * the creator's stack ended in the function its goroutine started in:
	 * known, where the frames between are not (the runtime keeps gopc)
	 */
	if (parent && n && ls[j].startpc && pm_go_ptr_ok(ls[j].startpc)) {
		const struct pm_map *m1, *m2;
		const char *f1 = outer_func_at(g, maps, pid, l->gopc, &m1);
		const char *f2 = outer_func_at(g, maps, pid, ls[j].startpc + 1, &m2);

		uint64_t at = ls[j].startpc;

		/* a go statement's wrapper (Go 1.22+): the function it calls */
		if (f2 && strstr(f2, ".gowrap"))
			at = wrapped_call(g, maps, pid, at);
		f2 = at != ls[j].startpc ? outer_func_at(g, maps, pid, at + 1, &m2) : f2;
		if (f1 && f2 && strcmp(f1, f2))
			add_cframe(g, maps, st, pid, at + 1, false, &n);
	}
	seg = intern_chain(g, g->tmp, n);
	l->node = intern_node(g, seg, parent, parent ? END_PARENT : end);
	l->state = 2;
	return l->node;
}

/*
 * The probe is on: read the runtime's list of goroutines once, so that
 * the goroutines made before it are known exactly.  Every g made after the
 * probe went on is in the log, or will be: a creation not yet processed
 * (the drain processes records some milliseconds late, in time order).
 * So the list is for the gs the log does not know yet.  The list is not
 * read at one instant: each g is read before its entry's `from' (the
 * clock after its read), and holds the goroutine read from `from' until
 * the log's next creation on it, which replaces the entry (a g hosts a
 * goroutine until the next newproc takes it; one made after the probe
 * but before the read has its creation processed before the samples
 * after it).  Samples before `from' on such a g are "[goroutine
 * unknown]".  The stack tops feed by_stack() (GC workers and others made
 * before the probe).
 */
static void snap_take(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st,
		      struct gproc *p, pid_t pid)
{
	const struct pm_gor_layout *l = &p->l;
	struct pm_hidx by_goid = { 0 };
	struct listed *ls;
	uint64_t *gs = NULL;
	size_t n = 0, nl = 0, i;
	uint32_t hi;

	p->snap = -1;
	pm_gor_pass(g); /* nothing read before is reused */
	if (pm_gor_allgs(g, pid, &gs, &n) != 0)
		return;
	/* the fields wanted, stack (at 0) to gopc, in one read */
	hi = l->g_gopc > l->g_goid ? l->g_gopc : l->g_goid;
	if (l->g_startpc > hi)
		hi = l->g_startpc;
	if (l->g_status > hi)
		hi = l->g_status;
	if (l->g_parent_goid > hi)
		hi = l->g_parent_goid;
	if (l->g_ancestors > hi)
		hi = l->g_ancestors;
	hi += 8;
	p->snap = 1;
	ls = xcalloc(n ? n : 1, sizeof(*ls));
	for (i = 0; i < n; i++) {
		uint8_t gb[G_READ_MAX];
		struct listed *x = &ls[nl];
		uint32_t status;

		if (!pm_go_ptr_ok(gs[i]) || hi > sizeof(gb) || pm_gor_read1(g, pid, gs[i], gb, hi))
			continue;
		x->after = clock_now(g, pid);
		status = pm_le32(gb + l->g_status) & ~0x1000u;
		x->goid = (int64_t)pm_le64(gb + l->g_goid);
		if (!x->after || status == 6 || x->goid <= 0) /* dead: no goroutine on it */
			continue;
		if (gent_find(g, pid, gs[i]))
			continue; /* the log knows it: what it holds from here on, the log says */
		x->gp = gs[i];
		x->gopc = pm_le64(gb + l->g_gopc);
		x->startpc = l->g_startpc ? pm_le64(gb + l->g_startpc) : 0;
		x->anc = l->g_ancestors ? pm_le64(gb + l->g_ancestors) : 0;
		x->parent = l->g_parent_goid ? (int64_t)pm_le64(gb + l->g_parent_goid) : 0;
		x->top = pm_go_ptr_ok(pm_le64(gb + 8)) ? pm_le64(gb + 8) : 0;
		pm_hidx_add(&by_goid, mix(g->seed, (uint64_t)x->goid), (uint32_t)nl);
		nl++;
	}
	free(gs);
	for (i = 0; i < nl; i++) {
		uint32_t node = listed_node(g, maps, st, pid, ls, &by_goid, i, 0);
		struct gent *e;

		gent_put(g, pid, ls[i].gp, ls[i].goid, node, ls[i].top, 0);
		e = gent_find(g, pid, ls[i].gp);
		e->from = ls[i].after;
		g->st_snap++;
		if (ls[i].top)
			tab_slot(&g->tops, &g->tops_size, &g->tops_n, created_key(pid, ls[i].top), true)
				->goid = (int64_t)ls[i].gp;
	}
	pm_hidx_free(&by_goid);
	free(ls);
}

/* The log's entry of @gp for a sample at @time: NULL when it does not hold then. */
static struct gent *entry_at(struct pm_gor *g, pid_t pid, uint64_t gp, uint64_t time)
{
	struct gent *e = gent_find(g, pid, gp);

	return e && e->from && time < e->from ? NULL : e;
}

void pm_gor_probed(struct pm_gor *g)
{
	if (g)
		g->probes = true;
}

void pm_gor_watching(struct pm_gor *g, uint64_t time, bool open)
{
	size_t k;

	if (!g)
		return;
	k = (g->ngaps + NGAPS - 1) % NGAPS; /* the latest gap's slot */
	if (open) {
		if (g->ngaps && g->gap_to[k] == UINT64_MAX)
			g->gap_to[k] = time;
		return;
	}
	if (g->ngaps && g->gap_to[k] == UINT64_MAX)
		return; /* closed already */
	k = g->ngaps % NGAPS;
	if (g->ngaps >= NGAPS)
		g->gaps_before = g->gap_to[k];
	g->gap_from[k] = time;
	g->gap_to[k] = UINT64_MAX;
	g->ngaps++;
}

uint64_t pm_gor_unwatched(const struct pm_gor *g)
{
	return g ? g->st_unwatched : 0;
}

/* Did a gap of the probe lie in (@since, @until]? */
static bool gap_in(const struct pm_gor *g, uint64_t since, uint64_t until)
{
	size_t n = g->ngaps < NGAPS ? g->ngaps : NGAPS;

	if (since < g->gaps_before)
		return true;
	for (size_t i = 0; i < n; i++)
		if (g->gap_from[i] < until && g->gap_to[i] > since)
			return true;
	return false;
}

/*
 * Was the probe watching all along from @since to @until (@pid's sample)?
 * Live, its gaps say (a gap logged through opts.read); at a replay, the
 * log (nothing logged: yes).
 */
static bool watched(struct pm_gor *g, pid_t pid, uint64_t since, uint64_t until)
{
	uint64_t v = 1;

	if (g->o.replay) {
		if (g->o.read && g->o.read(g->o.read_arg, pid, PM_GOR_WATCH_ADDR, &v, 8))
			v = 1;
		return v != 0;
	}
	if (!gap_in(g, since, until))
		return true;
	v = 0;
	if (g->o.read)
		(void)g->o.read(g->o.read_arg, pid, PM_GOR_WATCH_ADDR, &v, 8);
	return false;
}

int pm_gor_created(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st, pid_t pid,
		   const struct pm_gor_creation *c, const uint64_t *pcs, size_t npcs)
{
	struct gproc *p = pm_gor_proc_of(g, pid);
	size_t k = SIZE_MAX, i, last = npcs, n = 0;
	const struct pm_map *m;
	const char *f;
	uint32_t parent = 0;
	uint8_t end = END_UNKNOWN;
	const struct gent *ce;

	g->probes = true;
	if (!pm_go_ptr_ok(c->newg) || c->goid <= 0)
		return -EINVAL;
	/*
	 * made before a sample already processed (the drain's ordering window,
	 * HOLD_NS, was too short for a machine this busy): that sample's g may
	 * have been given its previous goroutine; counted and said
	 */
	if (c->time && c->time < g->max_time)
		g->st_clate++;
	if (find_layout(p, maps, pid, pcs, npcs) && !p->snap)
		snap_take(g, maps, st, p, pid);
	/*
	 * the creator's stack: what is above runtime.newproc (Go 1.19's
	 * frame-pointer chain skips newproc: above systemstack), without
	 * goexit; the return address it starts above, once named, is compared
	 */
	for (i = 1; i < npcs && i < 6; i++) {
		if (p->newproc_ret && pcs[i] == p->newproc_ret) {
			k = i;
			break;
		}
		if (p->sysstack_ret && pcs[i] == p->sysstack_ret)
			k = i;
	}
	for (i = 1; (k == SIZE_MAX || !p->newproc_ret) && i < npcs && i < 6; i++) {
		if (pcs[i] == p->sysstack_ret)
			continue;
		f = func_at(g, maps, pid, pcs[i], &m);
		if (f && !strcmp(f, "runtime.systemstack")) {
			p->sysstack_ret = pcs[i];
			k = i;
		}
		if (f && !strcmp(f, "runtime.newproc")) {
			p->newproc_ret = pcs[i];
			k = i;
			break;
		}
		if (f && strncmp(f, "runtime.", 8))
			break;
	}
	if (k != SIZE_MAX && c->cgoid > 0) { /* not the runtime's own start (rt0_go) */
		if (last > k + 1 && pcs[last - 1] != p->goexit_ret) {
			f = func_at(g, maps, pid, pcs[last - 1], &m);
			if (f && !strcmp(f, "runtime.goexit"))
				p->goexit_ret = pcs[last - 1];
		}
		if (last > k + 1 && pcs[last - 1] == p->goexit_ret)
			last--;
		for (i = k + 1; i < last; i++)
			add_cframe(g, maps, st, pid, pcs[i], true, &n);
	}
	/* its creator's own creators (in this order: a creator in the log wins over goid 1) */
	if (c->cgoid <= 0 || !pm_go_ptr_ok(c->cg)) { /* NOLINT(bugprone-branch-clone) */
		end = END_ROOT; /* made by the runtime outside any goroutine (rt0_go) */
	} else if ((ce = gent_find(g, pid, c->cg)) && ce->goid == c->cgoid) {
		parent = ce->node;
	} else if (c->cgoid == 1) {
		end = END_ROOT; /* the main goroutine, made by the runtime */
	} else if (p->state == 1) {
		/* a creator from before the probe: what the runtime recorded, if it still runs */
		uint8_t gb[G_READ_MAX];
		const struct pm_gor_layout *l = &p->l;

		if (l->g_size <= sizeof(gb) && !pm_gor_read1(g, pid, c->cg, gb, l->g_size) &&
		    (int64_t)pm_le64(gb + l->g_goid) == c->cgoid) {
			uint32_t tn = n;
			uint32_t save[MAX_CHAIN];

			memcpy(save, g->tmp, tn * sizeof(*save));
			parent = pre_entry(g, maps, st, pid, c->cg, c->cgoid, pm_le64(gb + l->g_gopc),
					   l->g_parent_goid ? (int64_t)pm_le64(gb + l->g_parent_goid)
							    : 0);
			memcpy(g->tmp, save, tn * sizeof(*save));
		}
	}
	if (c->stack_hi && pm_go_ptr_ok(c->stack_hi)) {
		struct gent *t = tab_slot(&g->tops, &g->tops_size, &g->tops_n,
					  created_key(pid, c->stack_hi), true);

		t->goid = (int64_t)c->newg; /* the g made with that stack */
	}
	{
		uint32_t node = n || end == END_ROOT
					? intern_node(g, intern_chain(g, g->tmp, n), parent, end)
					: 0;
		/*
		 * the log is the truth from here on, over an entry from the list
		 * too: made after the list was read, it is newer; made before,
		 * the list read this goroutine or a later one, whose own
		 * creation comes next (in time order, before any later sample)
		 */
		gent_put(g, pid, c->newg, c->goid, node,
			 pm_go_ptr_ok(c->stack_hi) ? c->stack_hi : 0, c->time);
	}
	g->st_created++;
	return 0;
}

uint64_t pm_gor_late_creations(const struct pm_gor *g)
{
	return g ? g->st_clate : 0;
}

void pm_gor_default_counts(const struct pm_gor *g, pid_t pid, uint64_t *all, uint64_t *unknown,
			   uint64_t *sys, uint64_t *root, uint64_t *bystack)
{
	uint64_t d[D_N] = { 0 };

	for (size_t i = 0; g && i < g->nprocs; i++)
		if (!pid || g->procs[i].pid == pid)
			for (size_t k = 0; k < D_N; k++)
				d[k] += g->procs[i].d[k];
	*all = d[D_ALL];
	*unknown = d[D_UNKNOWN];
	*sys = d[D_SYS];
	*root = d[D_ROOT];
	*bystack = d[D_BYSTACK];
}

void pm_gor_counts_zero(struct pm_gor *g)
{
	if (!g)
		return;
	memset(g->st_chain, 0, sizeof(g->st_chain));
	g->st_gunknown = g->st_lunknown = g->st_unwatched = g->st_clate = 0;
	g->st_labsets = g->st_labcut = 0;
	pm_gor_procs_zero(g);
}

void pm_gor_creator_counts(const struct pm_gor *g, uint64_t *complete, uint64_t *partial,
			   uint64_t *unknown, uint64_t *gor_unknown, uint64_t *labels_unknown)
{
	*complete = g ? g->st_chain[CH_COMPLETE] : 0;
	*partial = g ? g->st_chain[CH_PARTIAL] : 0;
	*unknown = g ? g->st_chain[CH_UNKNOWN] : 0;
	*gor_unknown = g ? g->st_gunknown : 0;
	*labels_unknown = g ? g->st_lunknown : 0;
}

/* Append the chain @cids (@nc frames; none when it does not fit) and the tag frame @tagv. */
static size_t append_chain_tag(struct pm_stacks *st, uint32_t *ids, size_t n, size_t cap,
			       const uint32_t *cids, size_t nc, uint32_t tagv)
{
	struct pm_stack_frame tf;

	if (n + 1 > cap)
		return n;
	if (n + nc + 1 > cap)
		nc = 0;
	if (nc)
		memcpy(ids + n, cids, nc * sizeof(*ids));
	n += nc;
	tf.map_id = PM_GOR_MAP_TAG;
	tf.is_return = false;
	tf.addr = tagv - 1;
	tf.vaddr = tagv - 1;
	ids[n++] = pm_stacks_frame(st, &tf);
	return n;
}

/*
 * A sample on the system stack whose goroutine has moved on: the
 * goroutine whose stack held @bp (the walk's BP where it switched off g0,
 * an address on that goroutine's stack at the sample).  Stacks are 2 KiB
 * aligned, 2 KiB to 512 KiB here: the g made (last, by the log: before the
 * sample) with a stack whose top is above @bp, whose stack is still that
 * one and holds @bp, and whose goroutine at the sample (the log's) is the
 * one it holds now and was made (or listed) with that very stack.  A
 * stack moves when it grows or shrinks, and a grown one is freed when its
 * goroutine exits: then another g's goroutine may have held it at the
 * sample, and the g is not taken (unknown).  Sets *gp, *goid (what the g
 * holds now) and g->labels_ptr.
 */
static struct gent *by_stack(struct pm_gor *g, struct gproc *p, pid_t pid, uint64_t bp,
			     uint64_t *gp, int64_t *goid, bool *dead)
{
	uint8_t gb[G_READ_MAX];
	uint64_t top = (bp | 2047) + 1;

	if (!pm_go_ptr_ok(bp) || p->state != 1 || p->l.g_size > sizeof(gb))
		return NULL;
	for (unsigned j = 0; j < 256; j++, top += 2048) {
		struct gent *t = tab_slot(&g->tops, &g->tops_size, &g->tops_n, created_key(pid, top),
					  false);
		struct gent *e;
		uint64_t cand;

		if (!t)
			continue;
		cand = (uint64_t)t->goid;
		e = entry_at(g, pid, cand, g->sample_time);
		if (!e || pm_gor_read1(g, pid, cand, gb, p->l.g_size))
			continue;
		/*
		 * the goroutine there at the sample is still on it, with the
		 * stack it was made (or listed) with: a g's stack leaves it
		 * (grown, freed by the GC) and comes back, and another g's
		 * goroutine may have held it at the sample meanwhile
		 */
		if (pm_le64(gb) <= bp && bp < pm_le64(gb + 8) && pm_le64(gb + 8) == top &&
		    e->hi == top && (int64_t)pm_le64(gb + p->l.g_goid) == e->goid) {
			*gp = cand;
			*goid = (int64_t)pm_le64(gb + p->l.g_goid);
			*dead = (pm_le32(gb + p->l.g_status) & ~0x1000u) == 6;
			g->labels_ptr = p->l.g_labels ? pm_le64(gb + p->l.g_labels) : 0;
			return e;
		}
	}
	return NULL;
}

/*
 * A sample of a process the probe watches: its goroutine is the one the
 * log says ran on its g, whatever that g holds now; its labels are read
 * only while the g still holds it (else those it had when last read, or
 * none: counted).  A sample on the system stack names the goroutine its m
 * runs when read (m.curg): trusted only when that g still holds the
 * goroutine the log says, else the goroutine is not known (counted).
 */
static size_t probed_sample(struct pm_gor *g, struct pm_stacks *st,
			    struct gproc *p, pid_t pid, struct pm_gor_info *gi, uint32_t *ids,
			    size_t n, size_t cap)
{
	struct gent *e = entry_at(g, pid, gi->g, g->sample_time);
	const struct chain *ch = NULL;
	uint32_t tagv = 0;
	int status = CH_UNKNOWN;
	size_t nc = 0;
	int64_t goid;

	/*
	 * a g neither the log nor the runtime's list knows at @time: not
	 * known (without the list, what the g holds now may have been made
	 * after the sample, with an id below those the probe saw: ids come
	 * in batches per P)
	 */
	/*
	 * on the system stack: m.curg, read now, is the goroutine served then
	 * only if the unwinder crossed to it and found it where the sample's
	 * copy says it switched (its saved BP)
	 */
	if ((!e && (g->unw_status & PM_UNW_SWITCHED)) ||
	    (e && gi->on_system_stack &&
	     (gi->goid != e->goid || (g->unw_status & PM_UNW_MOVED_ON) ||
	      !(g->unw_status & PM_UNW_SWITCHED)))) {
		uint64_t gp = 0;
		int64_t mgoid = 0;
		bool dead = false;
		struct gent *se = by_stack(g, p, pid, g->switch_bp, &gp, &mgoid, &dead);

		if (se) { /* found by the stack it switched from */
			g->st_bystack++;
			e = se;
			gi->g = gp;
			gi->goid = mgoid;
			gi->dead = dead;
			gi->on_system_stack = false;
		}
	}
	/*
	 * the probe closed since the log's entry was made (a budget): the g
	 * may have hosted a goroutine made unseen; the entry holds only while
	 * the g holds its goroutine now (goids are never reused)
	 */
	if (e && gi->goid != e->goid && !watched(g, pid, e->from ? e->from : e->made,
						 g->sample_time)) {
		g->st_unwatched++;
		e = NULL;
	}
	if (!e || (gi->on_system_stack &&
		   (gi->goid != e->goid || (g->unw_status & PM_UNW_MOVED_ON) ||
		    !(g->unw_status & PM_UNW_SWITCHED)))) {
		g->st_gunknown++;
		if (n + 2 > cap)
			return n;
		if (g->o.creators)
			ids[n++] = marker_frame(g, st, 2);
		return append_chain_tag(st, ids, n, cap, NULL, 0, intern_tag(g, 0, NULL, 0) + 1);
	}
	goid = e->goid;
	{
		struct centry *la = &g->last[mix(mix(mix(0, (uint64_t)pid), gi->g), (uint64_t)goid) &
					     g->cache_mask];

		if (gi->goid == goid && !gi->dead) {
			uint64_t hv = mix(mix(mix(mix(0, (uint64_t)pid), gi->g), (uint64_t)goid),
					  g->labels_ptr);
			struct centry *ce = &g->cache[hv & g->cache_mask];

			if (!(ce->pid == pid && ce->g == gi->g && ce->goid == goid &&
			      ce->labels_ptr == g->labels_ptr && ce->tag && !ce->anc_ptr)) {
				memset(ce, 0, sizeof(*ce));
				ce->pid = pid;
				ce->g = gi->g;
				ce->goid = goid;
				ce->labels_ptr = g->labels_ptr;
				g->anc_ptr = 0;
				pm_gor_read_extras(g, pid, &p->l, gi);
				ce->tag = intern_tag(g, goid, gi->labels, gi->nlabels) + 1;
			}
			*la = *ce;
			tagv = ce->tag;
		} else if (la->pid == pid && la->g == gi->g && la->goid == goid && la->tag) {
			tagv = la->tag; /* it exited or its g runs another: the labels it had */
		} else {
			g->st_lunknown++;
			tagv = intern_tag(g, goid, NULL, 0) + 1;
		}
	}
	if (g->o.creators) {
		ch = node_flat(g, st, e->node, &status);
		nc = ch->n;
		g->st_chain[status]++;
	}
	return append_chain_tag(st, ids, n, cap, ch ? g->chainpool + ch->off : NULL, nc, tagv);
}

/*
 * Without the probe: the creator chain (from the ancestors at g->anc_ptr,
 * or the go statements) and the tag frame (goid, the labels at
 * g->labels_ptr) of the goroutine @gi, read with its g, cached by g, goid
 * and labels; appended to @ids.  An exited goroutine's labels are cleared:
 * it keeps those it had alive.
 */
static size_t unprobed_tail(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st, pid_t pid,
			    const struct pm_gor_layout *l, struct pm_gor_info *gi, uint32_t *ids,
			    size_t n, size_t cap)
{
	bool parent_mode = l->g_parent_goid && !pm_go_ptr_ok(g->anc_ptr);
	uint64_t hv = mix(mix(mix(mix(0, (uint64_t)pid), gi->g), (uint64_t)gi->goid), g->labels_ptr);
	struct centry *e = &g->cache[hv & g->cache_mask];
	struct centry *la = &g->last[mix(mix(mix(0, (uint64_t)pid), gi->g), (uint64_t)gi->goid) &
				     g->cache_mask];
	const uint32_t *cids = g->tmp;
	uint32_t tagv = 0;
	size_t nc = 0;

	if (parent_mode && g->o.creators) { /* kept for the chains of its children */
		struct seen *s = seen_slot(g, seen_key(pid, gi->goid), true);
		s->gopc = gi->gopc;
		s->parent = gi->parent_goid;
	}
	if (!(e->pid == pid && e->g == gi->g && e->goid == gi->goid &&
	      e->labels_ptr == g->labels_ptr && e->anc_ptr == g->anc_ptr && e->tag)) {
		e->pid = pid;
		e->g = gi->g;
		e->goid = gi->goid;
		e->labels_ptr = g->labels_ptr;
		e->anc_ptr = g->anc_ptr;
		pm_gor_read_extras(g, pid, l, gi);
		e->tag = intern_tag(g, gi->goid, gi->labels, gi->nlabels) + 1;
		e->chain = 0;
		if (g->o.creators && !parent_mode) {
			nc = gi->nancestors ? chain_ancestors(g, maps, st, pid, gi)
					    : chain_gopc(g, maps, st, pid, gi);
			e->chain = intern_chain(g, g->tmp, nc) + 1;
		}
	}
	if (!gi->dead)
		*la = *e;
	else if (la->pid == pid && la->g == gi->g && la->goid == gi->goid && la->tag)
		tagv = la->tag;
	tagv = tagv ? tagv : e->tag;
	nc = 0;
	if (g->o.creators && parent_mode) {
		nc = chain_gopc(g, maps, st, pid, gi);
	} else if (e->chain) {
		cids = g->chainpool + g->chains[e->chain - 1].off;
		nc = g->chains[e->chain - 1].n;
	}
	return append_chain_tag(st, ids, n, cap, cids, nc, tagv);
}

/* The outermost function at return address @pc into @buf (@len), false when unknown. */
static bool outer_name(struct pm_gor *g, struct pm_maps *maps, pid_t pid, uint64_t pc, char *buf,
		       size_t len)
{
	const struct pm_map *m;
	const char *f = outer_func_at(g, maps, pid, pc, &m);

	if (!f)
		return false;
	snprintf(buf, len, "%s", f);
	return true;
}

/*
 * Did the walk start where the goroutine @gi started?  Its root (goexit's
 * caller, or runtime.main for the main goroutine) against the function at
 * g.startpc, read after the sample: another goroutine on the same g (or
 * the m's next one) starts elsewhere.  1 the same, 0 another, -1 cannot
 * tell (the walk did not reach a goroutine's bottom, no startpc, no
 * symbols).  Cached by (the two root pcs, startpc).
 */
static int root_matches(struct pm_gor *g, struct pm_maps *maps, pid_t pid,
			const struct pm_gor_info *gi, const uint64_t *pcs, size_t npcs)
{
	char rf[256], sf[256];
	uint64_t last, prev, h;
	struct rootck *c;

	if (!(g->unw_status & PM_UNW_COMPLETE) || npcs < 2 || !gi->startpc)
		return -1;
	last = pcs[npcs - 1];
	prev = pcs[npcs - 2];
	if (!g->rootck)
		g->rootck = xcalloc(ROOTCK_SLOTS, sizeof(*g->rootck));
	h = mix(mix(mix(mix(0, (uint64_t)pid), last), prev), gi->startpc);
	c = &g->rootck[h & (ROOTCK_SLOTS - 1)];
	if (c->root == last && c->prev == prev && c->start == gi->startpc)
		return c->same;
	c->root = last;
	c->prev = prev;
	c->start = gi->startpc;
	c->same = -1;
	if (!outer_name(g, maps, pid, last, rf, sizeof(rf)))
		return -1;
	if (!strcmp(rf, "runtime.goexit")) {
		if (npcs < 3 || !outer_name(g, maps, pid, prev, rf, sizeof(rf)))
			return -1;
	} else if (strcmp(rf, "runtime.main") != 0) {
		return -1; /* mstart, rt0_go: a thread's own stack */
	}
	if (!outer_name(g, maps, pid, gi->startpc + 1, sf, sizeof(sf)))
		return -1;
	c->same = strcmp(rf, sf) == 0;
	return c->same;
}

/*
 * Without the creation log, the goroutine of a sample is what its g (or
 * its m: m.curg) holds when read, after the sample: trusted only where
 * the sample agrees.  On the system stack, m.curg served the sample only
 * if the walk crossed to it through curg.sched with the kernel's
 * callchain agreeing (PM_UNW_SWITCHED, not PM_UNW_MOVED_ON) and the BP
 * where the sample switched off it (from the sample's copy) lies on its
 * stack and is the one it saved there; where the switch kept no BP (a
 * signal handler, the vDSO, 1.26's morestack), only a walk that reached
 * the goroutine's start function, the one its g started at.  So for a
 * goroutine that left its thread since, whose root the sample's copy did
 * not reach (gi->root_only), unless its g held it before the sample
 * (@since, held_since()); one whose root differs from the copy
 * (gi->stale) only then.  Any sample whose walk starts elsewhere than its
 * g did ran for another goroutine.
 */
enum { TRUST_OK, TRUST_ROOT, TRUST_STALE, TRUST_SYS };

static int default_trusted(struct pm_gor *g, struct pm_maps *maps, pid_t pid,
			   const struct pm_gor_info *gi, const uint64_t *pcs, size_t npcs,
			   uint64_t since)
{
	int root = root_matches(g, maps, pid, gi, pcs, npcs);
	uint64_t bp = g->switch_bp;

	if (root == 0)
		return TRUST_ROOT;
	if ((gi->stale || (gi->root_only && root != 1)) && since > g->sample_time)
		return TRUST_STALE;
	if (!gi->on_system_stack)
		return TRUST_OK;
	if (bp ? (g->unw_status & PM_UNW_SWITCHED) && !(g->unw_status & PM_UNW_MOVED_ON) &&
			 gi->stack_lo <= bp && bp < gi->stack_hi && bp == gi->sched_bp
	       : root == 1)
		return TRUST_OK;
	return TRUST_SYS;
}

/*
 * A goroutine sample whose goroutine is not known, counted: no goroutine
 * label, and with creators the "[goroutine unknown]" frame where they go
 * (without, the stack stays as Go's own profiles show it).
 */
static size_t unknown_tail(struct pm_gor *g, struct pm_stacks *st, uint32_t *ids, size_t n,
			   size_t cap)
{
	if (n + 2 > cap)
		return n;
	if (g->o.creators)
		ids[n++] = marker_frame(g, st, 2);
	return append_chain_tag(st, ids, n, cap, NULL, 0, intern_tag(g, 0, NULL, 0) + 1);
}

/*
 * Without the log: @gp held @goid with the stack topped at @hi when read
 * in this pass (goroutine-int.h).  A goroutine keeps its g for life and
 * goids are never reused: a g read twice with the same goid held that
 * goroutine all along in between.
 */
static void held_note(struct pm_gor *g, pid_t pid, uint64_t gp, int64_t goid, uint64_t hi)
{
	struct gent *e = tab_slot(&g->held, &g->held_size, &g->held_n, created_key(pid, gp), true);
	struct gent *t;

	if (e->goid == goid && e->hi == hi)
		return;
	if (e->goid != goid || !e->node)
		e->node = (uint32_t)g->pass; /* the goroutine, first read there */
	e->from = g->pass;                   /* ... with this stack */
	e->goid = goid;
	e->hi = hi;
	if (pm_go_ptr_ok(hi) &&
	    (t = tab_slot(&g->htops, &g->htops_size, &g->htops_n, created_key(pid, hi), true)))
		t->goid = (int64_t)gp;
}

/*
 * Since when @gp has held @goid (and, @hi not 0, that stack) at the
 * latest: the end of the pass that first read it there, or of any later
 * one; UINT64_MAX when not known (not read before, or in this pass only).
 */
static uint64_t held_since(struct pm_gor *g, pid_t pid, uint64_t gp, int64_t goid, uint64_t hi)
{
	struct gent *e = tab_slot(&g->held, &g->held_size, &g->held_n, created_key(pid, gp), false);
	uint64_t best = UINT64_MAX, first, p;

	if (!e || e->goid != goid || (hi && e->hi != hi))
		return UINT64_MAX;
	first = hi && e->from > e->node ? e->from : e->node;
	for (p = g->pass > HELD_PASSES ? g->pass - HELD_PASSES : 1; p < g->pass; p++)
		if (p >= first && g->pass_end[p % HELD_PASSES] < best)
			best = g->pass_end[p % HELD_PASSES];
	return best;
}

/*
 * A sample on the system stack whose m has moved on: the g whose stack
 * held @bp (the BP where it switched off g0, on the goroutine's stack at
 * the sample), found among the stacks read before (2 KiB aligned, up to
 * 512 KiB) and taken only if it has held the same goroutine and that
 * stack since before the sample.  Fills *gi from the g read now.
 */
static bool by_held_stack(struct pm_gor *g, struct gproc *p, pid_t pid, uint64_t bp,
			  struct pm_gor_info *gi)
{
	const struct pm_gor_layout *l = &p->l;
	uint8_t gb[G_READ_MAX];
	uint64_t top = (bp | 2047) + 1;

	if (!pm_go_ptr_ok(bp) || l->g_size > sizeof(gb))
		return false;
	for (unsigned j = 0; j < 256; j++, top += 2048) {
		struct gent *t = tab_slot(&g->htops, &g->htops_size, &g->htops_n,
					  created_key(pid, top), false);
		uint64_t cand;
		int64_t goid;

		if (!t || pm_gor_read1(g, pid, (cand = (uint64_t)t->goid), gb, l->g_size))
			continue;
		goid = (int64_t)pm_le64(gb + l->g_goid);
		if (!(pm_le64(gb) <= bp && bp < pm_le64(gb + 8) && pm_le64(gb + 8) == top))
			continue;
		if (goid <= 0 || held_since(g, pid, cand, goid, top) > g->sample_time)
			return false;
		memset(gi, 0, sizeof(*gi));
		gi->g = cand;
		gi->goid = goid;
		gi->gopc = pm_le64(gb + l->g_gopc);
		gi->startpc = l->g_startpc ? pm_le64(gb + l->g_startpc) : 0;
		gi->parent_goid = l->g_parent_goid ? (int64_t)pm_le64(gb + l->g_parent_goid) : 0;
		gi->dead = (pm_le32(gb + l->g_status) & ~0x1000u) == 6;
		gi->stack_lo = pm_le64(gb);
		gi->stack_hi = top;
		g->labels_ptr = l->g_labels ? pm_le64(gb + l->g_labels) : 0;
		g->anc_ptr = l->g_ancestors ? pm_le64(gb + l->g_ancestors) : 0;
		return true;
	}
	return false;
}

/*
 * A sample of a process without the creation probe (@rc, @gi: what the
 * inspection found): its goroutine where the sample agrees
 * (default_trusted), else the goroutine whose stack it switched from
 * (by_held_stack), else "[goroutine unknown]".
 */
/* A goroutine the sample's evidence confirmed: its tail, and pm_gor_last_g() says it. */
static size_t trusted_tail(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st,
			   struct gproc *p, pid_t pid, struct pm_gor_info *gi, uint32_t *ids,
			   size_t n, size_t cap)
{
	if (!gi->dead && gi->goid > 0) {
		g->last_g = gi->g;
		g->last_goid = gi->goid;
	}
	return unprobed_tail(g, maps, st, pid, &p->l, gi, ids, n, cap);
}

static size_t default_sample(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st,
			     struct gproc *p, pid_t pid, int rc, struct pm_gor_info *gi,
			     const uint64_t *pcs, size_t npcs, uint32_t *ids, size_t n, size_t cap)
{
	int why = TRUST_STALE;
	char rf[64];

	if (rc == -ENOENT && !(g->unw_status & PM_UNW_SWITCHED))
		return n; /* the scheduler, idle: no goroutine */
	if (rc != 0 && rc != -ENOENT) {
		/* nothing validates: unknown where the walk shows a goroutine's stack */
		if (!(g->unw_status & PM_UNW_COMPLETE) || !npcs ||
		    !outer_name(g, maps, pid, pcs[npcs - 1], rf, sizeof(rf)) ||
		    strcmp(rf, "runtime.goexit") != 0)
			return n;
		p->d[D_ALL]++;
		p->d[D_UNKNOWN]++;
		/*
		 * pm_gor_last(): the sample's own copy, to runtime.goexit, is a
		 * goroutine's stack: its thread served one (not idle), which is
		 * not known, as for one that left its thread (off-CPU keeps the
		 * time under the stack; a thread blocked in fsync read after it
		 * ran again lost it)
		 */
		if (!(g->unw_status & PM_UNW_SWITCHED))
			g->last_rc = -ESTALE;
		return unknown_tail(g, st, ids, n, cap);
	}
	p->d[D_ALL]++;
	if (rc == 0) {
		uint64_t since = held_since(g, pid, gi->g, gi->goid, 0);

		why = default_trusted(g, maps, pid, gi, pcs, npcs, since);
		held_note(g, pid, gi->g, gi->goid, gi->stack_hi);
		if (why == TRUST_OK)
			return trusted_tail(g, maps, st, p, pid, gi, ids, n, cap);
	}
	if ((rc != 0 || gi->on_system_stack) && by_held_stack(g, p, pid, g->switch_bp, gi) &&
	    root_matches(g, maps, pid, gi, pcs, npcs) != 0) {
		g->st_bystack++;
		p->d[D_BYSTACK]++;
		return trusted_tail(g, maps, st, p, pid, gi, ids, n, cap);
	}
	p->d[D_ROOT] += why == TRUST_ROOT;
	p->d[D_SYS] += why == TRUST_SYS;
	p->d[D_UNKNOWN]++; /* unknown_tail() below */
	g->st_stale += why == TRUST_STALE;
	/*
	 * pm_gor_last(): a goroutine's own stack, its goroutine not known, as
	 * before for one that left its thread; on the system stack, what the
	 * inspection found (off-CPU samples judge m.curg by its own times)
	 */
	if (rc == 0 && !gi->on_system_stack)
		g->last_rc = -ESTALE;
	return unknown_tail(g, st, ids, n, cap);
}

static size_t gor_sample(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st,
			 const struct pm_gor_walk *w, uint32_t *ids, size_t n, size_t cap)
{
	const pid_t pid = w->pid;
	const uint64_t r14 = w->r14, *pcs = w->pcs;
	const size_t npcs = w->npcs;
	struct gproc *p = pm_gor_proc_of(g, pid);
	struct pm_gor_info gi;
	int rc;

	if (!find_layout(p, maps, pid, pcs, npcs) ||
	    (p->gomap && !has_go_frame(maps, pid, pcs, npcs))) /* (a layout set by hand: no map) */
		return n;
	if (g->probes && !p->snap)
		snap_take(g, maps, st, p, pid);
	g->st_inspect++;
	/*
	 * R14 is a g the creation log knows (only user goroutines are made by
	 * newproc; g0 and gsignal are not): the sample ran on that g, so the
	 * goroutine is the log's, whatever the g, its m or its stack hold now
	 * (a g reused with a new stack fails the inspection's stack check, and
	 * its m's curg is another goroutine by then)
	 */
	if (g->probes && gent_find(g, pid, r14)) {
		uint8_t gb[G_READ_MAX];
		const struct pm_gor_layout *l = &p->l;

		memset(&gi, 0, sizeof(gi));
		gi.g = r14;
		gi.goid = -1;
		g->labels_ptr = g->anc_ptr = 0;
		if (l->g_size <= sizeof(gb) && !pm_gor_read1(g, pid, r14, gb, l->g_size)) {
			gi.goid = (int64_t)pm_le64(gb + l->g_goid);
			gi.dead = (pm_le32(gb + l->g_status) & ~0x1000u) == 6;
			g->labels_ptr = l->g_labels ? pm_le64(gb + l->g_labels) : 0;
		}
		g->st_inspect++;
		g->last_rc = 0;
		if (gi.goid > 0 && !gi.dead) {
			g->last_g = r14;
			g->last_goid = gi.goid;
		}
		return probed_sample(g, st, p, pid, &gi, ids, n, cap);
	}
	rc = pm_gor_inspect_g(g, pid, w->tid, r14, w->sp, w->stack, w->stack_len, &gi);
	g->last_rc = rc;
	g->last_sys = rc == 0 && gi.on_system_stack;
	if (!g->probes) {
		g->st_ok += rc == 0;
		g->st_enoent += rc == -ENOENT;
		g->st_einval += rc != 0 && rc != -ENOENT;
		return default_sample(g, maps, st, p, pid, rc, &gi, pcs, npcs, ids, n, cap);
	}
	switch (rc) {
	case 0:
		g->st_ok++;
		if (!gi.dead && gi.goid > 0) {
			g->last_g = gi.g;
			g->last_goid = gi.goid;
		}
		break;
	case -ENOENT:
		g->st_enoent++;
		if (!(g->unw_status & PM_UNW_SWITCHED))
			return n; /* the scheduler, idle: no goroutine */
		/* a goroutine's stack, its m runs none now: "[goroutine unknown]" */
		memset(&gi, 0, sizeof(gi));
		gi.goid = -1;
		return probed_sample(g, st, p, pid, &gi, ids, n, cap);
	case -ESTALE:
	default:
		if (rc != -ESTALE)
			g->st_einval++;
		/*
		 * the creation log knows R14's goroutine at the sample (a g only the
		 * log has seen is not a stray register value): its labels not
		 */
		if (g->probes && !gent_find(g, pid, r14) && !(g->unw_status & PM_UNW_SWITCHED))
			return n; /* the system stack alone (runtime start, the scheduler) */
		if (g->probes) { /* no goroutine known to the log: "[goroutine unknown]" */
			memset(&gi, 0, sizeof(gi));
			gi.g = gent_find(g, pid, r14) ? r14 : 0;
			gi.goid = -1;
			return probed_sample(g, st, p, pid, &gi, ids, n, cap);
		}
		return n;
	}
	return probed_sample(g, st, p, pid, &gi, ids, n, cap);
}

size_t pm_gor_sample(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st,
		     const struct pm_gor_walk *w, uint32_t *ids, size_t n, size_t cap)
{
	uint64_t t0 = g->stats ? pm_now_ns() : 0;

	g->unw_status = w->status;
	g->switch_bp = w->switch_bp;
	g->sample_time = w->time;
	g->last_rc = 1;
	g->last_sys = false;
	g->last_g = 0;
	g->last_goid = 0;
	g->copy_used = false;
	if (w->time > g->max_time)
		g->max_time = w->time;
	n = gor_sample(g, maps, st, w, ids, n, cap);
	if (g->stats)
		g->st_ns += pm_now_ns() - t0;
	return n;
}

int pm_gor_last(const struct pm_gor *g, bool *sys)
{
	if (sys)
		*sys = g && g->last_sys;
	return g ? g->last_rc : 1;
}

bool pm_gor_last_g(const struct pm_gor *g, uint64_t *gp, int64_t *goid)
{
	if (!g || !g->last_g)
		return false;
	*gp = g->last_g;
	*goid = g->last_goid;
	return true;
}

bool pm_gor_used_copy(const struct pm_gor *g)
{
	return g && g->copy_used;
}

uint64_t pm_gor_location(struct pm_gor *g, struct pm_profile *p, const struct pm_stack_frame *f,
			 bool all_frames)
{
	struct pm_prof_line lines[64];
	const struct cframe *c;
	uint64_t mid;
	size_t nf = 0, k;

	if (f->map_id != PM_GOR_MAP_CREATOR || f->addr >= g->ncf)
		return 0;
	c = &g->cframes[f->addr];
	mid = pm_prof_mapping(p, 0, 0, 0, PM_GOR_CREATORS_MAPPING, "");
	if (!c->m) { /* a marker: where the creators or the goroutine are not known */
		const char *name = c->vaddr == 1 ? PM_GOR_CREATOR_UNKNOWN : PM_GOR_GOROUTINE_UNKNOWN;

		lines[0].func_id = pm_prof_func(p, name, name, "", 0);
		lines[0].line = 0;
		return pm_prof_loc(p, mid, 0, lines, 1);
	}
	if (c->m->sym)
		nf = pm_sym_frames(c->m->sym, c->vaddr, g->fr, PM_ARRAY_SIZE(g->fr));
	if (!c->full && nf > 1)
		nf = 1;
	if (!all_frames && nf) { /* what Go's tracebacks (and its ancestors' traceback) hide */
		size_t kept = 0;

		for (k = 0; k < nf; k++) {
			bool cp = k && (g->fr[k - 1].kind & PM_GO_PANIC);

			if ((g->fr[k].kind & PM_GO_GOEXIT) || ((g->fr[k].kind & PM_GO_WRAPPER) && !cp))
				continue;
			g->fr[kept++] = g->fr[k];
		}
		if (!kept)
			return 0;
		nf = kept;
	}
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
	if (t->goid > 0) { /* 0: the goroutine is not known */
		out[k].key = "goroutine";
		out[k++].num = t->goid;
	}
	for (i = 0; i < t->nlab && k < max; i++, k++) {
		out[k].key = g->labpool[t->lab + i].key;
		out[k].str = g->labpool[t->lab + i].value;
	}
	return k;
}

/* ---- wall snapshots: goroutines read from the runtime's list, not from a sample ---- */

const struct pm_gor_layout *pm_gor_layout_of(struct pm_gor *g, struct pm_maps *maps, pid_t pid,
					     const uint64_t *pcs, size_t npcs, const char **path)
{
	struct gproc *p = pm_gor_proc_of(g, pid);

	if (!find_layout(p, maps, pid, pcs, npcs))
		return NULL;
	if (path)
		*path = p->gomap && p->gomap->sym ? pm_sym_path(p->gomap->sym) : NULL;
	return &p->l;
}

int pm_gor_all(struct pm_gor *g, pid_t pid, uint64_t **gs, size_t *n)
{
	struct gproc *p = pm_gor_proc_of(g, pid);

	if (p->state != 1)
		return -ENOENT;
	return pm_gor_allgs(g, pid, gs, n);
}

size_t pm_gor_frames_of(struct pm_gor *g, struct pm_maps *maps, struct pm_stacks *st, pid_t pid,
			uint64_t gp, const uint8_t *gb, uint64_t time, uint32_t *ids, size_t n,
			size_t cap)
{
	struct gproc *p = pm_gor_proc_of(g, pid);
	const struct pm_gor_layout *l = &p->l;
	struct pm_gor_info gi;

	if (p->state != 1)
		return n;
	memset(&gi, 0, sizeof(gi));
	gi.g = gp;
	gi.goid = (int64_t)pm_le64(gb + l->g_goid);
	gi.gopc = pm_le64(gb + l->g_gopc);
	gi.startpc = l->g_startpc ? pm_le64(gb + l->g_startpc) : 0;
	gi.parent_goid = l->g_parent_goid ? (int64_t)pm_le64(gb + l->g_parent_goid) : 0;
	g->labels_ptr = l->g_labels ? pm_le64(gb + l->g_labels) : 0;
	g->anc_ptr = l->g_ancestors ? pm_le64(gb + l->g_ancestors) : 0;
	if (gi.goid <= 0)
		return n;
	if (g->probes) {
		struct gent *ge;

		if (!p->snap)
			snap_take(g, maps, st, p, pid);
		ge = gent_find(g, pid, gp);
		/*
		 * the log's goroutine on this g is the one read: its chain; a
		 * creation not fed yet (the drain holds the newest back): the
		 * runtime's record below, as without the probe
		 */
		if (ge && ge->goid == gi.goid) {
			g->unw_status = 0;
			g->switch_bp = 0;
			/* read now, as the list was: the list's entry holds (its time may be later) */
			g->sample_time = ge->from > time ? ge->from : time;
			return probed_sample(g, st, p, pid, &gi, ids, n, cap);
		}
		g->anc_ptr = 0;
	}
	return unprobed_tail(g, maps, st, pid, l, &gi, ids, n, cap);
}
