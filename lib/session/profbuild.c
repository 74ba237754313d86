/*
 * profbuild: the profile built at the end of a recording or replay
 * (profbuild.h).
 */
#include "session/profbuild.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/attach.h"
#include "goruntime/goroutine.h"
#include "symbols/kallsyms.h"
#include "symbols/maps.h"
#include "profile/profile.h"
#include "session/source.h"
#include "symbols/gopclntab.h"
#include "symbols/symtab.h"

#define MAX_FRAMES_SYM 64

/*
 * frames: a kernel frame, named from /proc/kallsyms, in one "[kernel.kallsyms]"
 * mapping (report's folded output marks frames of mappings named "[kernel..."
 * with "_[k]").  When the addresses are hidden (kptr_restrict), says so once.
 */
struct kstate {
	const struct pm_ksyms *ks;
	struct pm_ksyms *own; /* loaded here: freed with the profile built */
	const struct pm_ksyms *given; /* the config's: not loaded (NULL: load) */
	uint64_t map;
	bool tried;
};

/*
 * A frame's address in the profile: a return address less one, inside its
 * call instruction, as runtime/pprof writes them and the format says, so
 * that a sample that stopped at the instruction after a call (the same
 * address) is a location of its own, with its own lines.
 */
static uint64_t frame_addr(const struct pm_stack_frame *f)
{
	return f->addr && f->is_return ? f->addr - 1 : f->addr;
}

static uint64_t kernel_loc(struct pm_profile *p, const struct pm_stack_frame *f, struct kstate *k)
{
	struct pm_prof_line line;
	const char *name;
	uint64_t lo, hi;

	if (!k->tried) {
		int rc = k->given ? 0 : pm_ksyms_load(&k->own, NULL);

		k->ks = k->given ? k->given : k->own;
		k->tried = true;
		if (rc == -EPERM)
			pm_warn("kernel addresses are hidden (kernel.kptr_restrict): kernel frames "
				"stay unnamed; run as root or set kernel.kptr_restrict=0");
		else if (rc < 0)
			pm_warn("cannot read /proc/kallsyms: %s: kernel frames stay unnamed",
				strerror(-rc));
		pm_ksyms_range(k->ks, &lo, &hi);
		k->map = pm_prof_mapping(p, lo, hi ? hi : UINT64_MAX, 0, "[kernel.kallsyms]", "");
	}
	name = pm_ksyms_find(k->ks, frame_addr(f), NULL);
	if (!name)
		return pm_prof_loc(p, k->map, frame_addr(f), NULL, 0);
	line.func_id = pm_prof_func(p, name, name, "", 0);
	line.line = 0;
	return pm_prof_loc(p, k->map, frame_addr(f), &line, 1);
}

/*
 * The frames Go's tracebacks hide, hidden as runtime/pprof hides them
 * (gopclntab.h, enum pm_go_frame_kind), unless --all-frames: a wrapper
 * (line by line: one may be inlined) unless its callee is gopanic, sigpanic
 * or panicwrap; runtime.goexit.  A frame whose lines go in part gets a
 * location of its own lines left (@hid[0]; @hid[1] the one kept under a
 * panic where its innermost line is a wrapper); 0 where none is left.
 */
struct hide {
	uint64_t loc[2]; /* callee not a panic, a panic */
	bool panic;      /* the physical function is gopanic, sigpanic or panicwrap */
	bool differs;    /* loc[] is not the frame's own location */
};

static uint64_t hidden_loc(struct pm_profile *p, uint64_t mid, uint64_t full,
			   const struct pm_frame *fr, const struct pm_prof_line *lines, size_t nf,
			   bool callee_panic, bool *differs)
{
	struct pm_prof_line keep[MAX_FRAMES_SYM];
	size_t k, n = 0;

	for (k = 0; k < nf; k++) {
		/* the callee of line k: the line before it, or the frame below */
		bool cp = k ? (fr[k - 1].kind & PM_GO_PANIC) != 0 : callee_panic;

		if ((fr[k].kind & PM_GO_GOEXIT) || ((fr[k].kind & PM_GO_WRAPPER) && !cp))
			continue;
		keep[n++] = lines[k];
	}
	if (n == nf)
		return full;
	*differs = true;
	/* by its lines, not its address: the frame's own location has that address */
	return n ? pm_prof_loc(p, mid, 0, keep, n) : 0;
}


/*
 * Goroutine ids without the creation probe: read after the sample, kept
 * only where the sample agrees; the rest are "[goroutine unknown]".
 */
static void gor_comment(struct session *s, struct pm_profile *p, pid_t pid)
{
	uint64_t all, unk, sys, root, bystack;
	char *c;

	pm_gor_labels_cut(s->gor, &all, &unk);
	if (unk) {
		c = xasprintf("goroutines: %" PRIu64 " of %" PRIu64 " label sets read cut (over %d "
			      "labels: the first kept; a key over 128 or a value over 512 bytes: its "
			      "start kept; a string over 1 MB: left out)",
			      unk, all, PM_GOR_MAX_LABELS);
		pm_prof_add_comment(p, c);
		free(c);
	}
	pm_gor_default_counts(s->gor, pid, &all, &unk, &sys, &root, &bystack);
	if (!all)
		return;
	c = xasprintf("goroutines: %" PRIu64 " samples of goroutines, %.1f %% with the goroutine "
		      "unknown (%" PRIu64 "): %" PRIu64 " whose stack starts elsewhere than the "
		      "goroutine its g holds, %" PRIu64 " on the system stack with no sign that the "
		      "goroutine its thread ran when read ran at the sample, the rest read after "
		      "their g or thread had moved on; %" PRIu64 " on the system stack found by "
		      "the stack they switched from",
		      all, 100.0 * (double)unk / (double)all, unk, root, sys, bystack);
	pm_prof_add_comment(p, c);
	free(c);
}

/*
 * What the build keeps between its phases: each frame's location, symbolized
 * once, for every stack that holds it.
 */
struct build {
	struct session *s;
	struct pm_profile *p;
	size_t nframes, nmaps;
	uint64_t *loc_of;     /* each frame's location */
	struct hide *hid;     /* each frame's, hidden frames left out; NULL: --all-frames */
	uint64_t *map_of;     /* each mapping's in the profile, 0 until a frame names it */
	bool *map_unresolved; /* a frame of the mapping found no function */
	struct kstate ks;
};

/*
 * The recording's own figures: what was lost, throttled or cut, and the
 * attach.  With intervals, the interval's (res less what it was at the
 * cut); host-wide, the rings and the stacks cut are every process's
 * recorded (@pid's profile says so), the goroutines @pid's.
 */
static void comments(struct session *s, struct pm_profile *p, pid_t pid, uint64_t dur)
{
	const struct pm_record_result *r = s->res;
	const char *all = s->cfg->host ? " (of every process recorded: the rings are per CPU)" : "";
	uint64_t lost = r->lost - s->ivl0.lost, thr = r->throttled - s->ivl0.throttled;
	uint64_t smp = r->samples - s->ivl0.samples;
	char *c;

	c = xasprintf("lost %" PRIu64 " samples%s", lost, all);
	pm_prof_add_comment(p, c);
	free(c);
	if (r->lost_end) {
		c = xasprintf("lost %" PRIu64 " of them at the end: the rings full when the recording "
			      "stopped, counted by the kernel (PERF_FORMAT_LOST), never in a LOST record",
			      r->lost_end);
		pm_prof_add_comment(p, c);
		free(c);
	}
	if (r->lost_end_unknown)
		pm_prof_add_comment(p, "lost samples at the end not counted: this kernel has no "
				       "PERF_FORMAT_LOST (Linux 6.0); a ring full when the recording "
				       "stopped is not said");
	if (thr) {
		/* events: the kernel lowered the rate (kernel.perf_event_max_sample_rate) */
		double secs = dur ? (double)dur / 1e9 : 0;

		c = xasprintf("throttled %" PRIu64 " times: effective rate %.0f samples/s%s", thr,
			      secs > 0 ? (double)smp / secs : 0.0, all);
		pm_prof_add_comment(p, c);
		free(c);
	}
	c = xasprintf("stacks cut: %" PRIu64 " of %" PRIu64 "%s", r->cut - s->ivl0.cut, smp,
		      s->cfg->host ? " (of every process recorded)" : "");
	pm_prof_add_comment(p, c);
	free(c);
	gor_comment(s, p, pid);
	if (s->cfg->host) {
		c = xasprintf("host-wide: %" PRIu64 " events on every CPU for every process, %" PRIu64
			      " records of the processes not recorded dropped, state renewed %" PRIu64
			      " times",
			      r->events, r->foreign - s->ivl0.foreign, r->renewed);
		pm_prof_add_comment(p, c);
		free(c);
	} else if (s->attach) {
		c = xasprintf("attached: %" PRIu64 " threads, %" PRIu64 " events, %.1f ms",
			      r->threads, r->events, r->attach_ms);
		pm_prof_add_comment(p, c);
		free(c);
	}
}

/* What each source adds after the comments, and the records dropped as duplicates. */
static void tails(struct session *s, struct pm_profile *p)
{
	char *c;

	pm_src_profile_tail(s, p);
	if (pm_attach_dups(s->att)) {
		c = xasprintf("records from a second inherited event set dropped: %" PRIu64,
			      pm_attach_dups(s->att));
		pm_prof_add_comment(p, c);
		free(c);
	}
}

/*
 * Frame @i of a binary: its mapping (added at its first frame), the
 * functions and lines at its address (inlined ones too), and unless
 * --all-frames, its locations with the hidden ones left out.
 */
static void binary_loc(struct build *b, size_t i, const struct pm_stack_frame *f,
		       const struct pm_map *m)
{
	struct session *s = b->s;
	struct pm_profile *p = b->p;
	struct pm_frame fr[MAX_FRAMES_SYM];
	struct pm_prof_line lines[MAX_FRAMES_SYM];
	uint64_t mid = 0;
	size_t nf = 0, k;

	if (m) {
		const struct pm_sym *sym = pm_reg_map_sym(s->reg, m);
		const char *bid = pm_reg_capture_build_id(s->reg, m->path);

		if (!b->map_of[m->id])
			b->map_of[m->id] = pm_prof_mapping(p, m->start, m->end, m->pgoff, m->path,
							   sym ? pm_sym_build_id(sym)
							   : bid ? bid
								 : "");
		mid = b->map_of[m->id];
		if (sym)
			nf = pm_sym_frames(sym, f->vaddr - (f->is_return ? 1 : 0), fr,
					   MAX_FRAMES_SYM);
		if (!nf)
			b->map_unresolved[m->id] = true;
	}
	for (k = 0; k < nf; k++) {
		lines[k].func_id = pm_prof_func(p, fr[k].func, fr[k].func, fr[k].file,
						fr[k].start_line);
		lines[k].line = fr[k].line;
	}
	b->loc_of[i] = pm_prof_loc(p, mid, frame_addr(f), lines, nf);
	if (b->hid && nf) {
		struct hide *h = &b->hid[i];

		h->panic = (fr[nf - 1].kind & PM_GO_PANIC) != 0;
		h->loc[0] = hidden_loc(p, mid, b->loc_of[i], fr, lines, nf, false, &h->differs);
		h->loc[1] = hidden_loc(p, mid, b->loc_of[i], fr, lines, nf, true, &h->differs);
	}
}

/* Frame @i's location, by what it is: kernel, a source's, a creator, a marker, a binary's. */
static void frame_loc(struct build *b, size_t i)
{
	struct session *s = b->s;
	struct pm_profile *p = b->p;
	const struct pm_stack_frame *f = pm_stacks_frame_at(s->stacks, (uint32_t)i);
	const struct pm_map *m = f->map_id == PM_STACKS_NO_MAP ? NULL
							       : pm_maps_at(s->maps, f->map_id);

	if (f->map_id == PM_SES_KERNEL_MAP) {
		b->loc_of[i] = kernel_loc(p, f, &b->ks);
		return;
	}
	if (f->map_id <= PM_SES_SRC_MAP(0) &&
	    f->map_id > PM_SES_SRC_MAP(PM_SES_SRC_MAX)) { /* a source's own frames */
		size_t e = PM_SES_SRC_MAP(0) - f->map_id;

		b->loc_of[i] = pm_src_location(s, e, p, f);
		return;
	}
	if (pm_gor_is_frame(f)) { /* goroutines: creator frames */
		b->loc_of[i] = s->gor ? pm_gor_location(s->gor, p, f, s->cfg->all_frames) : 0;
		return;
	}
	if (i == s->cut_frame || i == s->limit_frame) {
		const char *mk = i == s->cut_frame ? "[truncated]" : "[limit]";
		struct pm_prof_line line;

		line.func_id = pm_prof_func(p, mk, mk, "", 0);
		line.line = 0;
		b->loc_of[i] = pm_prof_loc(p, 0, 0, &line, 1);
		return;
	}
	binary_loc(b, i, f, m);
}

/* Each mapping a frame named: whether its functions, files and lines are known. */
static void mapping_flags(struct build *b)
{
	struct session *s = b->s;

	for (size_t i = 0; i < b->nmaps; i++) {
		const struct pm_map *m = pm_maps_at(s->maps, (uint32_t)i);
		bool go;

		if (!b->map_of[i])
			continue;
		go = pm_reg_map_sym(s->reg, m) && pm_sym_is_go(m->sym);
		pm_prof_mapping_flags(b->p, b->map_of[i], !b->map_unresolved[i], go, go, go);
	}
}

/* The locations of the @n frames @ids into @locs, the hidden ones left out: how many. */
static size_t stack_locs(const struct build *b, const uint32_t *ids, size_t n, uint64_t *locs)
{
	size_t k, nl = 0;
	bool callee_panic = false;

	if (!b->hid) {
		for (k = 0; k < n; k++)
			locs[k] = b->loc_of[ids[k]];
		return n;
	}
	for (k = 0; k < n; k++) { /* leaf first: each frame's callee is the one before it */
		const struct hide *h = &b->hid[ids[k]];
		uint64_t l = h->differs ? h->loc[callee_panic] : b->loc_of[ids[k]];

		if (l)
			locs[nl++] = l;
		callee_panic = h->panic;
	}
	if (nl == 0) /* hidden frames alone (a goroutine at goexit): shown, not lost */
		for (k = 0; k < n; k++)
			locs[nl++] = b->loc_of[ids[k]];
	return nl;
}

/* Stack @i's samples, from each source, with its labels. */
static void add_stack(struct build *b, size_t i, uint64_t *locs)
{
	struct session *s = b->s;
	size_t n;
	const int64_t *v;
	const uint32_t *ids = pm_stacks_at(s->stacks, i, &n, &v);
	struct pm_prof_label lab[2 + 8 + PM_GOR_MAX_LABELS + 2];
	size_t nlab = 1;
	uint32_t pid, tid;

	pm_stacks_tags(s->stacks, i, &pid, &tid);
	memset(lab, 0, sizeof(lab));
	lab[0].key = "pid";
	lab[0].num = pid;
	if (tid) { /* 0: not a thread's (a goroutine read by a snapshot) */
		lab[1].key = "thread";
		lab[1].num = tid;
		nlab++;
	}
	/* labels in the sources' own root frames */
	nlab += pm_src_stack_labels(s, ids, &n, lab + nlab, PM_ARRAY_SIZE(lab) - 1 - nlab);
	if (s->gor) /* goroutines: the labels of the root tag frame */
		nlab += pm_gor_labels(s->gor, s->stacks, ids, &n, lab + nlab,
				      PM_ARRAY_SIZE(lab) - 1 - nlab);
	n = stack_locs(b, ids, n, locs);
	pm_src_profile_stack(s, b->p, locs, n, v, lab, nlab); /* each source's samples of it */
}

/* Is stack @i in the profile of @pid (0: every process's), cut in intervals or not? */
static bool stack_in(const struct session *s, size_t i, pid_t pid)
{
	uint32_t p, tid;

	if (s->cfg->interval > 0 && pm_stacks_is_zero(s->stacks, i))
		return false;
	if (!pid)
		return true;
	pm_stacks_tags(s->stacks, i, &p, &tid);
	return p == (uint32_t)pid;
}

/*
 * Cut in intervals (record.h: interval), the stacks of earlier intervals
 * stay with their values 0; host-wide, a profile is one process's: the
 * frames of the profile's stacks, those alone symbolized and in it.
 * NULL: one profile, every frame.
 */
static bool *frames_used(const struct session *s, size_t nframes, pid_t pid)
{
	bool *used;

	if (!(s->cfg->interval > 0) && !pid)
		return NULL;
	used = xcalloc(nframes ? nframes : 1, sizeof(*used));
	for (size_t i = 0; i < pm_stacks_count(s->stacks); i++) {
		const int64_t *v;
		size_t n;
		const uint32_t *ids;

		if (!stack_in(s, i, pid))
			continue;
		ids = pm_stacks_at(s->stacks, i, &n, &v);
		for (size_t k = 0; k < n; k++)
			if (ids[k] < nframes)
				used[ids[k]] = true;
	}
	return used;
}

size_t pm_build_pids(const struct session *s, pid_t **out)
{
	pid_t *v = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < pm_stacks_count(s->stacks); i++) {
		uint32_t p, tid;
		size_t k;

		if (!stack_in(s, i, 0))
			continue;
		pm_stacks_tags(s->stacks, i, &p, &tid);
		for (k = 0; k < n && v[k] != (pid_t)p; k++)
			;
		if (k < n)
			continue;
		PM_GROW(v, cap, n + 1);
		v[n++] = (pid_t)p;
	}
	*out = v;
	return n;
}

/* Symbolize every distinct frame once and build the pprof profile. */
struct pm_profile *pm_build_profile(struct session *s, pid_t pid, uint64_t t0_wall, uint64_t dur)
{
	struct build b = {
		.s = s,
		.p = pm_prof_new_sized(s->cfg->small_tables),
		.ks = { NULL, NULL, s->cfg->ksyms, 0, false },
	};
	/* as many as a stack can hold: user + kernel frames, cut marker, creators, tag */
	uint64_t *locs = xmalloc(PM_ARRAY_SIZE(s->ids) * sizeof(*locs));
	bool *used;
	size_t i;

	pm_reg_check_limits(s->reg, s->stacks, 0); /* one reached after the last sample (mappings) */
	pm_src_profile_head(s, b.p); /* sample types, period, descriptions */
	/* (after the heads: a source may add its stacks there, --inuse's last read) */
	b.nframes = pm_stacks_nframes(s->stacks);
	b.nmaps = pm_maps_count(s->maps);
	b.loc_of = xcalloc(b.nframes ? b.nframes : 1, sizeof(*b.loc_of));
	b.hid = s->cfg->all_frames ? NULL : xcalloc(b.nframes ? b.nframes : 1, sizeof(*b.hid));
	b.map_of = xcalloc(b.nmaps ? b.nmaps : 1, sizeof(*b.map_of));
	b.map_unresolved = xcalloc(b.nmaps ? b.nmaps : 1, sizeof(bool));
	pm_prof_set_time(b.p, (int64_t)t0_wall, (int64_t)dur);
	comments(s, b.p, pid, dur);
	tails(s, b.p);

	used = frames_used(s, b.nframes, pid);
	for (i = 0; i < b.nframes; i++)
		if (!used || used[i])
			frame_loc(&b, i);
	mapping_flags(&b);
	for (i = 0; i < pm_stacks_count(s->stacks); i++)
		if (stack_in(s, i, pid))
			add_stack(&b, i, locs);
	free(used);
	free(locs);
	free(b.hid);
	free(b.loc_of);
	free(b.map_of);
	free(b.map_unresolved);
	pm_ksyms_free(b.ks.own);
	return b.p;
}
