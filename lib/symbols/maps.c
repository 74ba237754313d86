#include "symbols/maps.h"

#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "symbols/symtab.h"
#include "base/util.h"

struct symcache_ent {
	char *path;
	struct pm_sym *sym; /* NULL: opening failed, do not retry */
};

/* The current mappings of one process, sorted by start, not overlapping. */
struct proc {
	pid_t pid;
	struct pm_map **v;
	size_t n, cap;
};

struct pm_maps {
	struct pm_map **all;      /* by id, owned */
	size_t nall, capall;
	struct proc *procs;
	size_t nprocs, capprocs;
	struct symcache_ent *syms;
	size_t nsyms, capsyms;
	/* indexes of procs by pid and syms by key, hashed with a secret seed */
	uint64_t seed;
	struct pm_hidx proc_idx, sym_idx;
	size_t max_maps, dropped; /* pm_maps_set_limit() */
	size_t nopened, unopened; /* binaries opened; not opened past PM_MAPS_MAX_BINARIES */
	pid_t unwind_pid;
	struct proc *last_proc;   /* lookup cache */
	const struct pm_map *last_map;
};

struct pm_maps *pm_maps_new(void)
{
	struct pm_maps *m = xcalloc(1, sizeof(struct pm_maps));

	m->seed = pm_hash_seed();
	m->max_maps = PM_MAPS_MAX_DEFAULT;
	return m;
}

void pm_maps_set_limit(struct pm_maps *m, size_t max_maps)
{
	m->max_maps = max_maps;
}

size_t pm_maps_dropped(const struct pm_maps *m)
{
	return m->dropped;
}

size_t pm_maps_unopened(const struct pm_maps *m)
{
	return m->unopened;
}

void pm_maps_free(struct pm_maps *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->nall; i++) {
		free((char *)m->all[i]->path);
		free(m->all[i]);
	}
	free(m->all);
	for (i = 0; i < m->nprocs; i++)
		free(m->procs[i].v);
	free(m->procs);
	for (i = 0; i < m->nsyms; i++) {
		pm_sym_free(m->syms[i].sym);
		free(m->syms[i].path);
	}
	free(m->syms);
	pm_hidx_free(&m->proc_idx);
	pm_hidx_free(&m->sym_idx);
	free(m);
}

static uint64_t pid_hash(const struct pm_maps *m, pid_t pid)
{
	return pm_hash_u64((uint64_t)(uint32_t)pid ^ m->seed);
}

static struct proc *find_proc(const struct pm_maps *m, pid_t pid)
{
	uint64_t hv = pid_hash(m, pid);
	size_t pos = SIZE_MAX;
	long i;

	while ((i = pm_hidx_next(&m->proc_idx, hv, &pos)) >= 0)
		if (m->procs[i].pid == pid)
			return &m->procs[i];
	return NULL;
}

static struct proc *get_proc(struct pm_maps *m, pid_t pid, bool create)
{
	struct proc *p;

	if (m->last_proc && m->last_proc->pid == pid)
		return m->last_proc;
	p = find_proc(m, pid);
	if (p) {
		m->last_proc = p;
		return p;
	}
	if (!create)
		return NULL;
	PM_GROW(m->procs, m->capprocs, m->nprocs + 1);
	m->procs[m->nprocs].pid = pid;
	pm_hidx_add(&m->proc_idx, pid_hash(m, pid), (uint32_t)m->nprocs);
	m->last_proc = &m->procs[m->nprocs++];
	m->last_map = NULL;
	return m->last_proc;
}

/* Pseudo-files and anonymous memory have no binary to read. */
static bool is_file(const char *path)
{
	return path[0] == '/' && strncmp(path, "/memfd:", 7) != 0 &&
	       strncmp(path, "//anon", 6) != 0;
}

static struct pm_sym *sym_cached(struct pm_maps *m, const char *key, bool *found)
{
	uint64_t hv = pm_hash(key, strlen(key), m->seed);
	size_t pos = SIZE_MAX;
	long i;

	while ((i = pm_hidx_next(&m->sym_idx, hv, &pos)) >= 0)
		if (strcmp(m->syms[i].path, key) == 0) {
			*found = true;
			return m->syms[i].sym;
		}
	*found = false;
	return NULL;
}

static void sym_remember(struct pm_maps *m, const char *key, struct pm_sym *s)
{
	PM_GROW(m->syms, m->capsyms, m->nsyms + 1);
	m->syms[m->nsyms].path = xstrdup(key);
	m->syms[m->nsyms].sym = s;
	pm_hidx_add(&m->sym_idx, pm_hash(key, strlen(key), m->seed), (uint32_t)m->nsyms);
	m->nsyms++;
}

/* The first of @p's mappings that ends after @addr (p->n when none). */
static size_t first_ending_after(const struct proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->v[mid]->end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool same_inode(const char *path, uint64_t ino)
{
	struct stat st;

	return stat(path, &st) == 0 && (uint64_t)st.st_ino == ino;
}

/*
 * The candidates of pm_maps_add_file(), first that opens wins.  Through
 * /proc the file is the one the process really maps, wherever the path
 * points now; the bare path is the last resort (a process that is gone).
 */
static struct pm_sym *sym_open_for(pid_t pid, uint64_t start, uint64_t end, const char *path,
				   const struct pm_map_file *f)
{
	char cand[PATH_MAX + 64];
	bool deleted = f && f->deleted, know_ino = f && f->ino;
	struct pm_sym *s;

	if (pid > 0) {
		snprintf(cand, sizeof(cand), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
			 start, end);
		s = pm_sym_open(cand);
		if (s)
			return s;
		if (know_ino) {
			snprintf(cand, sizeof(cand), "/proc/%d/exe", (int)pid);
			if (same_inode(cand, f->ino) && (s = pm_sym_open(cand)))
				return s;
		}
		if (snprintf(cand, sizeof(cand), "/proc/%d/root%s", (int)pid, path) <
			    (int)sizeof(cand) &&
		    (!deleted || (know_ino && same_inode(cand, f->ino))) && (s = pm_sym_open(cand)))
			return s;
	}
	if (deleted && !(know_ino && same_inode(path, f->ino)))
		return NULL;
	return pm_sym_open(path);
}

/*
 * The vDSO: the kernel maps the same image into every process (of one
 * ABI), so pmuprof's own is the target's.  Its start and end from
 * /proc/self/maps.
 */
static struct pm_sym *vdso_sym(void)
{
	char *maps, *line, *save = NULL;
	struct pm_sym *s = NULL;

	if (pm_read_file("/proc/self/maps", &maps, 1 << 22) < 0)
		return NULL;
	for (line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long lo, hi;
		size_t l = strlen(line);

		if (l > 6 && strcmp(line + l - 6, "[vdso]") == 0 &&
		    sscanf(line, "%llx-%llx", &lo, &hi) == 2 && hi > lo && hi - lo <= (1u << 20)) {
			s = pm_sym_open_mem("[vdso]", (const void *)(uintptr_t)lo, (size_t)(hi - lo));
			break;
		}
	}
	free(maps);
	return s;
}

static struct pm_sym *sym_get(struct pm_maps *m, pid_t pid, uint64_t start, uint64_t end,
			      const char *path, const struct pm_map_file *f)
{
	char key[PATH_MAX + 64];
	struct pm_sym *s;
	bool found, by_inode = f && f->ino;

	if (by_inode)
		snprintf(key, sizeof(key), "#%u:%u:%" PRIu64, f->maj, f->min, f->ino);
	else
		snprintf(key, sizeof(key), "%s", path);
	s = sym_cached(m, key, &found);
	if (found)
		return s;
	if (m->nopened >= PM_MAPS_MAX_BINARIES) {
		if (is_file(path))
			m->unopened++;
		sym_remember(m, key, NULL);
		return NULL;
	}
	s = is_file(path)		  ? sym_open_for(pid, start, end, path, f)
	    : !strcmp(path, "[vdso]") ? vdso_sym()
				  : NULL;
	/* a failure by identity may be passing (the mapping went away): retry next time */
	if (s || !by_inode)
		sym_remember(m, key, s);
	m->nopened += s != NULL;
	return s;
}

/*
 * Drop [start, end) from the current mappings of @p, splitting as needed;
 * past the limit (@split false) the tail of a split is dropped too.
 */
static void carve(struct pm_maps *m, struct proc *p, uint64_t start, uint64_t end, bool split)
{
	size_t i = first_ending_after(p, start);

	while (i < p->n) {
		struct pm_map *o = p->v[i];

		if (o->start >= end)
			break; /* sorted and disjoint: nothing later overlaps */
		if (o->start < start && o->end > end && !split) {
			o->end = start;
			return;
		}
		if (o->start < start && o->end > end) {
			/* split: keep the head in place, add the tail as a new mapping */
			struct pm_map *t = xcalloc(1, sizeof(*t));
			*t = *o;
			t->path = xstrdup(o->path);
			t->pgoff = o->pgoff + (end - o->start);
			t->start = end;
			t->id = (uint32_t)m->nall;
			PM_GROW(m->all, m->capall, m->nall + 1);
			m->all[m->nall++] = t;
			o->end = start;
			PM_GROW(p->v, p->cap, p->n + 1);
			memmove(p->v + i + 2, p->v + i + 1, (p->n - i - 1) * sizeof(*p->v));
			p->v[i + 1] = t;
			p->n++;
			return;
		}
		if (o->start >= start && o->end <= end) {
			memmove(p->v + i, p->v + i + 1, (p->n - i - 1) * sizeof(*p->v));
			p->n--;
			continue;
		}
		/* partial overlap: trimming changes an old mapping; retire a copy instead */
		if (o->start < start) {
			o->end = start;
		} else {
			o->pgoff += end - o->start;
			o->start = end;
		}
		i++;
	}
}

void pm_maps_add(struct pm_maps *m, pid_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		 const char *path)
{
	pm_maps_add_file(m, pid, start, len, pgoff, path, NULL);
}

void pm_maps_add_file(struct pm_maps *m, pid_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		      const char *kpath, const struct pm_map_file *f)
{
	struct proc *p;
	struct pm_map *n;
	struct pm_map_file fi;
	char path[PATH_MAX];
	size_t i, pl;

	if (len == 0 || start + len < start)
		return;
	memset(&fi, 0, sizeof(fi));
	if (f)
		fi = *f;
	snprintf(path, sizeof(path), "%s", kpath);
	pl = strlen(path);
	if (pl > 10 && strcmp(path + pl - 10, " (deleted)") == 0) {
		path[pl - 10] = '\0';
		fi.deleted = true;
	}
	p = get_proc(m, pid, true);
	/* the same mapping again (maps snapshot racing the records): nothing to do */
	i = first_ending_after(p, start);
	if (i < p->n) {
		struct pm_map *o = p->v[i];
		if (o->start == start && o->end == start + len && o->pgoff == pgoff &&
		    strcmp(o->path, path) == 0)
			return;
	}
	if (m->nall >= m->max_maps || p->n >= PM_MAPS_MAX_PER_PROC) {
		/* not kept, but what it covers is gone: no frame is named from a stale binary */
		carve(m, p, start, start + len, false);
		m->dropped++;
		m->last_map = NULL;
		return;
	}
	carve(m, p, start, start + len, true);
	n = xcalloc(1, sizeof(*n));
	n->id = (uint32_t)m->nall;
	n->pid = pid;
	n->start = start;
	n->end = start + len;
	n->pgoff = pgoff;
	n->path = xstrdup(path);
	n->sym = sym_get(m, pid, start, start + len, path, &fi);
	if (n->sym) {
		int64_t va = pm_sym_offset_to_vaddr(n->sym, pgoff);
		if (va < 0)
			n->sym = NULL;
		else
			n->bias = (int64_t)(start - (uint64_t)va);
	}
	PM_GROW(m->all, m->capall, m->nall + 1);
	m->all[m->nall++] = n;
	PM_GROW(p->v, p->cap, p->n + 1);
	i = first_ending_after(p, start); /* carved: the first that starts after it */
	memmove(p->v + i + 1, p->v + i, (p->n - i) * sizeof(*p->v));
	p->v[i] = n;
	p->n++;
	m->last_map = NULL;
}

void pm_maps_reset(struct pm_maps *m, pid_t pid)
{
	struct proc *p = get_proc(m, pid, false);

	if (p)
		p->n = 0;
	m->last_map = NULL;
}

void pm_maps_fork(struct pm_maps *m, pid_t parent, pid_t child)
{
	struct proc *pp, *c;
	size_t i;

	if (parent == child)
		return;
	c = get_proc(m, child, true);
	c->n = 0;
	pp = get_proc(m, parent, false);
	if (!pp)
		return;
	PM_GROW(c->v, c->cap, pp->n);
	for (i = 0; i < pp->n; i++)
		c->v[i] = pp->v[i];
	c->n = pp->n;
	m->last_map = NULL;
}

int pm_maps_load_proc(struct pm_maps *m, pid_t pid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	get_proc(m, pid, true);
	while (getline(&line, &cap, f) > 0) {
		uint64_t start, end, off, ino;
		unsigned maj, min;
		char perms[8];
		int name_at = 0;
		struct pm_map_file fi;
		char *name;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &start, &end, perms, &off, &maj, &min, &ino, &name_at) < 7 ||
		    name_at == 0 || end <= start)
			continue;
		if (perms[2] != 'x')
			continue;
		name = line + name_at;
		name[strcspn(name, "\n")] = '\0';
		if (!*name)
			continue;
		memset(&fi, 0, sizeof(fi));
		fi.maj = maj;
		fi.min = min;
		fi.ino = ino;
		pm_maps_add_file(m, pid, start, end - start, off, name, &fi);
	}
	free(line);
	fclose(f);
	return 0;
}

bool pm_maps_known(const struct pm_maps *m, pid_t pid)
{
	const struct proc *p = find_proc(m, pid);

	return p && p->n > 0;
}

const struct pm_map *pm_maps_find(struct pm_maps *m, pid_t pid, uint64_t addr)
{
	struct proc *p;
	size_t lo;

	if (m->last_map && m->last_map->pid == pid && addr >= m->last_map->start &&
	    addr < m->last_map->end && m->last_proc && m->last_proc->pid == pid)
		return m->last_map;
	p = get_proc(m, pid, false);
	if (!p)
		return NULL;
	lo = first_ending_after(p, addr);
	if (lo < p->n && p->v[lo]->start <= addr) {
		m->last_map = p->v[lo];
		return p->v[lo];
	}
	return NULL;
}

size_t pm_maps_nprocs(const struct pm_maps *m)
{
	return m->nprocs;
}

size_t pm_maps_count(const struct pm_maps *m)
{
	return m->nall;
}

const struct pm_map *pm_maps_at(const struct pm_maps *m, uint32_t id)
{
	return id < m->nall ? m->all[id] : NULL;
}

void pm_maps_set_unwind_pid(struct pm_maps *m, pid_t pid)
{
	m->unwind_pid = pid;
}

int pm_maps_unwind_lookup(void *arg, uint64_t pc, struct pm_unw_func *out)
{
	struct pm_maps *m = arg;
	const struct pm_map *mp = pm_maps_find(m, m->unwind_pid, pc);
	int rc;

	if (!mp || !mp->sym)
		return -ENOENT;
	rc = pm_sym_func_info(mp->sym, (uint64_t)((int64_t)pc - mp->bias), out);
	if (rc == 0)
		out->entry = (uint64_t)((int64_t)out->entry + mp->bias);
	return rc;
}
