/*
 * registry: the processes, binaries and unwinders of a recording, and its
 * limits (registry.h).
 */
#include "session/registry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/datafile.h"
#include "base/idtab.h"
#include "symbols/maps.h"
#include "profile/stacks.h"
#include "symbols/symtab.h"
#include "unwind/unwind.h"
#include "base/util.h"

#define LIMIT_MAP (PM_STACKS_NO_MAP - 2) /* the "[limit]" frame */
#define MAX_STACKS_DEFAULT ((size_t)256 * 1024)  /* distinct stacks (PMUPROF_MAX_STACKS) */
#define MAX_DFRAMES_DEFAULT ((size_t)1024 * 1024) /* distinct frames (PMUPROF_MAX_FRAMES) */

/*
 * Unwinders, one per process (their caches are by pc), at most MAX_UNWS:
 * each holds ~360 KiB of caches and buffers, and a recording of a build
 * or a shell loop samples thousands of processes (3000 took 1.6 GB).  The
 * least recently used one is taken over (flushed) past that.
 */
#define MAX_UNWS 64

/* Replay: at most this many binaries get a warning line of their own. */
#define MAX_BIN_WARNINGS 8

struct unw_slot {
	pid_t pid;
	struct pm_unw *u;
	uint64_t bad_gen; /* r->bad_gen when its caches were last flushed */
	uint64_t used;    /* r->unw_tick at its last use */
};

/* A binary in the capture: its path and build ID, and what the replay found. */
struct bin_info {
	char *path;
	char build_id[256];
	unsigned flags;                 /* PM_DATA_BIN_* */
	bool warned;
};

struct pm_reg {
	bool replay;
	struct pm_maps *maps;
	struct unw_slot unws[MAX_UNWS];
	size_t nunws;
	uint64_t unw_tick;
	unsigned unw_cache_bits;        /* pm_unw_new_sized()'s; 0 = the default */
	/*
	 * Indexes (pm_hidx) hashed with a secret seed, so that a capture or a
	 * target cannot aim its paths at one chain: bins by path, and (replay)
	 * the paths of mappings whose binary the
	 * capture has not announced yet: pend[] holds the last such mapping of
	 * each path, pend_next[] (by mapping id) the one before it.
	 */
	uint64_t seed;
	struct pm_hidx bin_idx, pend_idx;
	uint32_t *pend, *pend_next;
	size_t npend, cappend, cappend_next;
	pid_t lookup_pid;               /* the pid of the walk in progress */
	struct bin_info *bins;          /* binaries announced (live) / expected (replay) */
	size_t nbins, capbins;
	struct pm_idtab bad;            /* replay: binaries whose frames are not trusted (by address) */
	size_t nbad;
	uint64_t bad_gen;               /* bumped by each distrust(): unwinders' caches are stale */
	size_t nwarned, unwarned;       /* replay: binaries warned about, and past the cap */
	bool warned_depth, warned_frames, warned_stacks;
	bool warned_maps, warned_bins;  /* the limits on mappings and binaries were reached */
};

struct pm_reg *pm_reg_new(bool replay)
{
	struct pm_reg *r = xcalloc(1, sizeof(*r));

	r->replay = replay;
	r->maps = pm_maps_new();
	return r;
}

void pm_reg_free(struct pm_reg *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nunws; i++)
		pm_unw_free(r->unws[i].u);
	pm_maps_free(r->maps);
	for (i = 0; i < r->nbins; i++)
		free(r->bins[i].path);
	free(r->bins);
	pm_idtab_free(&r->bad);
	pm_hidx_free(&r->bin_idx);
	pm_hidx_free(&r->pend_idx);
	free(r->pend);
	free(r->pend_next);
	free(r);
}

struct pm_maps *pm_reg_maps(struct pm_reg *r)
{
	return r->maps;
}

/*
 * Replay: a binary found at the capture's path but with another build ID
 * (or one the live session could not open) must not name or unwind
 * anything: its mappings keep their place but lose their pm_sym here.
 */
const struct pm_sym *pm_reg_map_sym(const struct pm_reg *r, const struct pm_map *m)
{
	int32_t v;

	if (!m || !m->sym)
		return NULL;
	if (r->nbad && pm_idtab_get(&r->bad, (uint64_t)(uintptr_t)m->sym, &v))
		return NULL;
	return m->sym;
}

static int reg_lookup(void *arg, uint64_t pc, struct pm_unw_func *out)
{
	struct pm_reg *r = arg;

	if (r->nbad && !pm_reg_map_sym(r, pm_maps_find(r->maps, r->lookup_pid, pc)))
		return -ENOENT;
	return pm_maps_unwind_lookup(r->maps, pc, out);
}

void pm_reg_set_pid(struct pm_reg *r, pid_t pid)
{
	pm_maps_set_unwind_pid(r->maps, pid);
	r->lookup_pid = pid;
}

static uint64_t reg_seed(struct pm_reg *r)
{
	if (!r->seed)
		r->seed = pm_hash_seed() | 1;
	return r->seed;
}

static uint64_t path_hash(struct pm_reg *r, const char *path)
{
	return pm_hash(path, strlen(path), reg_seed(r));
}

static struct unw_slot *find_unwinder(struct pm_reg *r, pid_t pid)
{
	for (size_t i = 0; i < r->nunws; i++)
		if (r->unws[i].pid == pid)
			return &r->unws[i];
	return NULL;
}

void pm_reg_unw_cache_bits(struct pm_reg *r, unsigned bits)
{
	r->unw_cache_bits = bits;
}

struct pm_unw *pm_reg_unwinder(struct pm_reg *r, pid_t pid)
{
	struct unw_slot *w = find_unwinder(r, pid);

	if (!w && r->nunws < MAX_UNWS) {
		w = &r->unws[r->nunws++];
		w->u = pm_unw_new_sized(reg_lookup, r, r->unw_cache_bits);
		w->pid = pid;
		w->bad_gen = r->bad_gen;
	} else if (!w) {
		w = &r->unws[0];
		for (size_t i = 1; i < r->nunws; i++)
			if (r->unws[i].used < w->used)
				w = &r->unws[i];
		pm_unw_flush(w->u);
		w->pid = pid;
		w->bad_gen = r->bad_gen;
	}
	w->used = ++r->unw_tick;
	if (w->bad_gen != r->bad_gen) { /* a binary was distrusted since: drop what it named */
		pm_unw_flush(w->u);
		w->bad_gen = r->bad_gen;
	}
	return w->u;
}

void pm_reg_flush(struct pm_reg *r, pid_t pid)
{
	struct unw_slot *w = find_unwinder(r, pid);

	if (w)
		pm_unw_flush(w->u);
}

/* A limit from the environment (a positive integer), else @def. */
static size_t env_limit(const char *name, size_t def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return def;
	errno = 0;
	n = strtoull(v, &end, 10);
	return errno || *end || n == 0 || n > SIZE_MAX / 64 ? def : (size_t)n;
}

void pm_reg_check_limits(struct pm_reg *r, struct pm_stacks *st, unsigned status)
{
	if ((status & PM_UNW_MAX) && !r->warned_depth) {
		r->warned_depth = true;
		pm_warn("a stack deeper than %d frames was cut at that depth (counted in "
			"'stacks cut', rooted at [truncated])",
			PM_REG_MAX_FRAMES);
	}
	if (pm_stacks_frames_over(st) && !r->warned_frames) {
		r->warned_frames = true;
		pm_warn("reached the limit of %zu distinct frames; new ones are shown as [limit]",
			pm_stacks_nframes(st));
	}
	if (pm_stacks_stacks_over(st) && !r->warned_stacks) {
		r->warned_stacks = true;
		pm_warn("reached the limit of %zu distinct stacks; samples of new stacks are "
			"counted under [limit]",
			pm_stacks_count(st) - 1);
	}
	if (pm_maps_dropped(r->maps) && !r->warned_maps) {
		r->warned_maps = true;
		pm_warn("reached the limit on mappings of code (%zu in all, %u at once in a "
			"process); frames in code mapped after it are left unnamed",
			env_limit("PMUPROF_MAX_MAPS", PM_MAPS_MAX_DEFAULT), PM_MAPS_MAX_PER_PROC);
	}
	if (pm_maps_unopened(r->maps) && !r->warned_bins) {
		r->warned_bins = true;
		pm_warn("reached the limit of %u binaries opened; frames in the binaries mapped "
			"after it are shown as module+offset",
			PM_MAPS_MAX_BINARIES);
	}
}

uint32_t pm_reg_setup_limits(struct pm_reg *r, struct pm_stacks *st)
{
	struct pm_stack_frame lim = { LIMIT_MAP, false, 0, 0 };
	uint32_t limit_frame = pm_stacks_frame(st, &lim);

	pm_stacks_set_limits(st, env_limit("PMUPROF_MAX_FRAMES", MAX_DFRAMES_DEFAULT),
			     env_limit("PMUPROF_MAX_STACKS", MAX_STACKS_DEFAULT), limit_frame);
	pm_maps_set_limit(r->maps, env_limit("PMUPROF_MAX_MAPS", PM_MAPS_MAX_DEFAULT));
	return limit_frame;
}

static struct bin_info *bin_find(struct pm_reg *r, const char *path)
{
	uint64_t hv = path_hash(r, path);
	size_t pos = SIZE_MAX;
	long i;

	while ((i = pm_hidx_next(&r->bin_idx, hv, &pos)) >= 0)
		if (strcmp(r->bins[i].path, path) == 0)
			return &r->bins[i];
	return NULL;
}

static struct bin_info *bin_add(struct pm_reg *r, const char *path)
{
	struct bin_info *b;

	PM_GROW(r->bins, r->capbins, r->nbins + 1);
	pm_hidx_add(&r->bin_idx, path_hash(r, path), (uint32_t)r->nbins);
	b = &r->bins[r->nbins++];
	memset(b, 0, sizeof(*b));
	b->path = xstrdup(path);
	return b;
}

static void distrust(struct pm_reg *r, const struct pm_sym *sym)
{
	int32_t v;

	if (pm_idtab_get(&r->bad, (uint64_t)(uintptr_t)sym, &v))
		return;
	pm_idtab_put(&r->bad, (uint64_t)(uintptr_t)sym, 1);
	r->nbad++;
	r->bad_gen++; /* each unwinder flushes before its next walk (pm_reg_unwinder()) */
}

/* Replay: the pend[] slot of @path's mappings, or -1. */
static long pend_find(struct pm_reg *r, const char *path)
{
	uint64_t hv = path_hash(r, path);
	size_t pos = SIZE_MAX;
	long i;

	while ((i = pm_hidx_next(&r->pend_idx, hv, &pos)) >= 0)
		if (strcmp(pm_maps_at(r->maps, r->pend[i])->path, path) == 0)
			return i;
	return -1;
}

static void pend_add(struct pm_reg *r, const struct pm_map *m)
{
	long i = pend_find(r, m->path);

	PM_GROW(r->pend_next, r->cappend_next, (size_t)m->id + 1);
	if (i < 0) {
		PM_GROW(r->pend, r->cappend, r->npend + 1);
		pm_hidx_add(&r->pend_idx, path_hash(r, m->path), (uint32_t)r->npend);
		i = (long)r->npend++;
		r->pend_next[m->id] = UINT32_MAX;
	} else {
		r->pend_next[m->id] = r->pend[i];
	}
	r->pend[i] = m->id;
}

static bool bin_warn(struct pm_reg *r, struct bin_info *b)
{
	if (b->warned)
		return false;
	b->warned = true;
	if (r->nwarned < MAX_BIN_WARNINGS) {
		r->nwarned++;
		return true;
	}
	r->unwarned++;
	return false;
}

/* Replay: does the binary opened for @m match what the capture recorded? */
static void verify_map(struct pm_reg *r, const struct pm_map *m)
{
	struct bin_info *b = bin_find(r, m->path);
	const char *got;

	if (!b) { /* not announced (yet): checked when its record comes */
		pend_add(r, m);
		return;
	}
	if (b->flags & PM_DATA_BIN_UNOPENED) {
		if (m->sym)
			distrust(r, m->sym);
		return;
	}
	if (!m->sym) {
		if (bin_warn(r, b))
			pm_warn("cannot open '%s' (build ID %s) of the capture: its frames are "
				"shown as module+offset",
				m->path, b->build_id[0] ? b->build_id : "none");
		return;
	}
	got = pm_sym_build_id(m->sym);
	if (strcmp(got, b->build_id) != 0) {
		if (bin_warn(r, b))
			pm_warn("'%s' has build ID %s, the capture recorded %s: not the binary that "
				"ran; its frames are shown as module+offset",
				m->path, got[0] ? got : "none", b->build_id[0] ? b->build_id : "none");
		distrust(r, m->sym);
	}
}

int pm_reg_maps_added(struct pm_reg *r, size_t first, struct pm_data_writer *cap)
{
	size_t i, n = pm_maps_count(r->maps);
	int err = 0, rc;

	for (i = first; i < n; i++) {
		const struct pm_map *m = pm_maps_at(r->maps, (uint32_t)i);

		if (r->replay) {
			verify_map(r, m);
		} else if (cap && !bin_find(r, m->path)) {
			bin_add(r, m->path);
			rc = pm_data_write_binary(cap, m->path, m->sym ? pm_sym_build_id(m->sym) : "",
						  m->sym ? 0 : PM_DATA_BIN_UNOPENED);
			if (rc && !err)
				err = rc;
		}
	}
	return err;
}

int pm_reg_load_maps(struct pm_reg *r, pid_t pid, struct pm_data_writer *cap)
{
	size_t first = pm_maps_count(r->maps), i, n;
	int err = 0, rc;

	pm_maps_load_proc(r->maps, pid);
	n = pm_maps_count(r->maps);
	for (i = first; cap && i < n; i++) {
		const struct pm_map *m = pm_maps_at(r->maps, (uint32_t)i);

		if (m->pid != pid)
			continue;
		rc = pm_data_write_map(cap, (uint32_t)pid, m->start, m->end, m->pgoff, m->path);
		if (rc && !err)
			err = rc;
	}
	rc = pm_reg_maps_added(r, first, cap);
	return err ? err : rc;
}

void pm_reg_binary(struct pm_reg *r, const char *path, const char *build_id, unsigned flags)
{
	struct bin_info *b;
	uint32_t id;
	long i;

	if (bin_find(r, path))
		return; /* again: its mappings were checked the first time */
	b = bin_add(r, path);
	snprintf(b->build_id, sizeof(b->build_id), "%s", build_id);
	b->flags = flags;
	/* the mappings of it that came before its record */
	i = pend_find(r, path);
	for (id = i < 0 ? UINT32_MAX : r->pend[i]; id != UINT32_MAX; id = r->pend_next[id])
		verify_map(r, pm_maps_at(r->maps, id));
}

const char *pm_reg_capture_build_id(struct pm_reg *r, const char *path)
{
	const struct bin_info *b = r->replay ? bin_find(r, path) : NULL;

	return b ? b->build_id : NULL;
}

size_t pm_reg_unwarned(const struct pm_reg *r)
{
	return r->unwarned;
}
