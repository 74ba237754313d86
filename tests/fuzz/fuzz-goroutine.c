/*
 * libFuzzer target: the goroutine inspector (lib/goruntime/goroutine.c) over a fake
 * target memory that the input decides: g -> m -> curg, goid, gopc,
 * parentGoid, pprof labels (map form <= 1.23, slice form 1.24+), and the
 * ancestors of GODEBUG=tracebackancestors, then what record does with them
 * (pm_gor_sample's creator chains and tag frames, pm_gor_location,
 * pm_gor_labels).  Reads go through the pm_gor_opts.read seam.
 *
 *  0     1          2        3      4                   100           124
 *  +-----+----------+--------+------+-------------------+-------------+---------
 *  | ver | creators | failat | nsmp | sample x 4 (24 B) | layout (24) | regions
 *
 * ver: a Go version of the offsets table (ver % 16 < 8), else the layout
 * bytes (12 little-endian u16 offsets: g.m, status, goid, parentGoid, gopc,
 * startpc, ancestors, labels, m.procid, gsignal, curg, labels kind) as a
 * layout pm_gor_set_layout() must vet.  failat: the read call number that
 * fails (a thread or mapping gone mid-inspection), 0 = none.  nsmp % 4 + 1
 * samples, each { u32 tid, u32 stack_len, u64 r14, u64 sp }; the sample's
 * stack copy is [sp, sp + stack_len) of the fake memory as far as one
 * region holds it.  Regions (at most 32): { u64 addr, u16 len, bytes }.
 *
 * Checked: at most PM_GOR_MAX_LABELS labels, each key non-empty and free
 * of control bytes; at most the creator levels asked of ancestors, each
 * with at most PM_GOR_MAX_ANC_PCS pcs; no frame id past the frames made.
 * Creator frames resolve through tests/.work/go/creators mapped where it
 * links (PMUPROF_FIXTURES overrides tests/.work), so runtime.newproc and
 * runtime.goexit pcs in an ancestor are recognised; without the fixture
 * every pc is unmapped.  FUZZ_GOR_DEBUG=1 prints what each sample found
 * (to check a seed: build/fuzz/fuzz-goroutine -runs=0 SEED).
 */
#include "goruntime/goroutine.h"
#include "symbols/maps.h"
#include "profile/profile.h"
#include "profile/stacks.h"
#include "base/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len);

#define PID 2000000000 /* past any pid_max: no /proc/PID of a real process */
#define HDR 124
#define MAX_REGIONS 32
#define MAX_STACK 16384

struct region {
	uint64_t addr;
	const uint8_t *b;
	size_t len;
};

struct fake {
	struct region r[MAX_REGIONS];
	size_t n;
	unsigned reads, failat;
};

static uint64_t le(const uint8_t *b, size_t n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | b[n];
	return v;
}

static const struct region *region_of(const struct fake *f, uint64_t addr, size_t len)
{
	for (size_t i = 0; i < f->n; i++)
		if (addr >= f->r[i].addr && addr - f->r[i].addr <= f->r[i].len &&
		    len <= f->r[i].len - (addr - f->r[i].addr))
			return &f->r[i];
	return NULL;
}

static int fake_read(void *arg, pid_t pid, uint64_t addr, void *out, size_t len)
{
	struct fake *f = arg;
	const struct region *r;

	if (pid != PID)
		abort();
	if (++f->reads == f->failat)
		return -EFAULT;
	r = region_of(f, addr, len);
	if (!r)
		return -EFAULT;
	if (len)
		memcpy(out, r->b + (addr - r->addr), len);
	return 0;
}

static struct pm_maps *fixture_maps(void)
{
	static struct pm_maps *maps;
	const char *fix = getenv("PMUPROF_FIXTURES");
	char path[4096], abs[PATH_MAX];

	if (maps)
		return maps;
	maps = pm_maps_new();
	snprintf(path, sizeof(path), "%s/go/creators", fix && *fix ? fix : "tests/.work");
	if (realpath(path, abs)) /* the text segment, where the Go 1.19 linker puts it */
		pm_maps_add(maps, PID, 0x400000, 0xa0000, 0, abs);
	return maps;
}

static void check_info(const struct pm_gor_info *gi, unsigned creators)
{
	if (gi->goid <= 0 || gi->nlabels > PM_GOR_MAX_LABELS || gi->nancestors > creators ||
	    gi->nancestors > PM_GOR_MAX_ANCESTORS)
		abort();
	for (size_t i = 0; i < gi->nlabels; i++) {
		const char *k = gi->labels[i].key, *v = gi->labels[i].value;

		if (!k || !v || !*k)
			abort();
		for (; *k; k++)
			if ((unsigned char)*k < 0x20 || *k == 0x7f)
				abort();
		for (; *v; v++)
			if ((unsigned char)*v < 0x20 || *v == 0x7f)
				abort();
		if (i && strcmp(gi->labels[i - 1].key, gi->labels[i].key) >= 0)
			abort(); /* sorted, each key once */
	}
	for (size_t i = 0; i < gi->nancestors; i++)
		if (gi->ancestors[i].npcs > PM_GOR_MAX_ANC_PCS)
			abort();
}

/* What record's build_profile does with the ids pm_gor_sample appended. */
static void use_ids(struct pm_gor *g, struct pm_stacks *st, struct pm_profile *prof,
		    const uint32_t *ids, size_t n)
{
	struct pm_prof_label lab[PM_GOR_MAX_LABELS + 2];
	size_t k = n, nl;

	for (size_t i = 0; i < n; i++) {
		const struct pm_stack_frame *f = pm_stacks_frame_at(st, ids[i]);

		if (!f)
			abort();
		if (pm_gor_is_frame(f))
			pm_gor_location(g, prof, f, (f->addr & 1) != 0);
	}
	nl = pm_gor_labels(g, st, ids, &k, lab, PM_ARRAY_SIZE(lab));
	if (nl > PM_ARRAY_SIZE(lab) || k > n || (nl && (k != n - 1 || !lab[0].key)))
		abort();
	for (size_t i = 1; i < nl; i++)
		if (!lab[i].key || !lab[i].str)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	static const char *const versions[] = { "go1.19.8", "go1.20.1", "go1.21.0", "go1.22.3",
						"go1.23.4", "go1.24.1", "go1.25.0", "go1.26.0" };
	static uint8_t stack[MAX_STACK];
	struct fake f;
	struct pm_gor_layout l;
	struct pm_gor_opts o;
	struct pm_gor *g;
	struct pm_stacks *st;
	struct pm_profile *prof;
	const uint8_t *p, *end = buf + len;
	unsigned nsmp;

	if (len < HDR)
		return 0;
	memset(&f, 0, sizeof(f));
	f.failat = buf[2];
	for (p = buf + HDR; f.n < MAX_REGIONS && end - p >= 10;) {
		size_t rl = (size_t)le(p + 8, 2);

		if (rl > (size_t)(end - p - 10))
			rl = (size_t)(end - p - 10);
		f.r[f.n++] = (struct region){ le(p, 8), p + 10, rl };
		p += 10 + rl;
	}
	memset(&o, 0, sizeof(o));
	o.creators = buf[1] % 40; /* past PM_GOR_MAX_ANCESTORS too */
	o.read = fake_read;
	o.read_arg = &f;
	g = pm_gor_new(&o);
	if (buf[0] % 16 < 8) {
		if (pm_gor_layout_version(versions[buf[0] % 16], &l) != 0 ||
		    pm_gor_set_layout(g, PID, &l) != 0)
			abort();
	} else {
		const uint8_t *b = buf + 100;

		memset(&l, 0, sizeof(l));
		l.g_m = (uint32_t)le(b, 2);
		l.g_status = (uint32_t)le(b + 2, 2);
		l.g_goid = (uint32_t)le(b + 4, 2);
		l.g_parent_goid = (uint32_t)le(b + 6, 2);
		l.g_gopc = (uint32_t)le(b + 8, 2);
		l.g_startpc = (uint32_t)le(b + 10, 2);
		l.g_ancestors = (uint32_t)le(b + 12, 2);
		l.g_labels = (uint32_t)le(b + 14, 2);
		l.m_procid = (uint32_t)le(b + 16, 2);
		l.m_gsignal = (uint32_t)le(b + 18, 2);
		l.m_curg = (uint32_t)le(b + 20, 2);
		l.labels = (enum pm_gor_labels_kind)(b[22] % 3);
		l.g_size = l.m_size = 8; /* wrong on purpose: the inspector computes them */
		if (pm_gor_set_layout(g, PID, &l) != 0) {
			struct pm_gor_info gi;

			if (pm_gor_inspect(g, PID, 1, 0x1000, 0x2000, NULL, 0, &gi) != -ENOTSUP)
				abort();
			pm_gor_free(g);
			return 0;
		}
	}
	st = pm_stacks_new(1);
	prof = pm_prof_new();
	nsmp = buf[3] % 4 + 1;
	for (unsigned i = 0; i < nsmp; i++) {
		const uint8_t *s = buf + 4 + 24 * i;
		pid_t tid = (pid_t)le(s, 4);
		size_t slen = (size_t)le(s + 4, 4) % (MAX_STACK + 1);
		uint64_t r14 = le(s + 8, 8), sp = le(s + 16, 8);
		const struct region *r = region_of(&f, sp, 0);
		uint64_t pcs[1] = { 0x401000 };
		uint32_t ids[64];
		struct pm_gor_info gi;
		size_t n;
		int rc;

		if (!r)
			slen = 0;
		else if (slen > r->len - (sp - r->addr))
			slen = r->len - (size_t)(sp - r->addr);
		if (slen)
			memcpy(stack, r->b + (sp - r->addr), slen);
		rc = pm_gor_inspect(g, PID, tid, r14, sp, slen ? stack : NULL, slen, &gi);
		if (getenv("FUZZ_GOR_DEBUG"))
			fprintf(stderr, "sample %u: %d goid %lld, %zu labels, %zu ancestors\n", i, rc,
				rc ? 0LL : (long long)gi.goid, rc ? 0 : gi.nlabels,
				rc ? 0 : gi.nancestors);
		if (rc == 0)
			check_info(&gi, o.creators);
		else if (rc != -ENOENT && rc != -EINVAL && rc != -ESTALE)
			abort();
		/* record's path: a few frames of its own first, as after an unwind */
		ids[0] = pm_stacks_frame(st, &(struct pm_stack_frame){ 0, false, 0x401000, 0x401000 });
		/*
		 * the creation log: when the input says so, a creation on this g
		 * (and its creator, from the stack's first words) before the sample
		 */
		if (s[3] & 1) {
			struct pm_gor_creation c = { r14, sp, (int64_t)le(s + 12, 4) - 8,
						     (int64_t)(s[2]) - 2, (sp | 8191) + 1, i };
			uint64_t cp[4] = { 0x401000, 0x401010, sp, r14 };

			pm_gor_created(g, fixture_maps(), st, PID, &c, cp, s[1] % 5);
		}
		/* the probe closed and opened by a budget, as the input says (gaps) */
		if (s[3] & 6)
			pm_gor_watching(g, i, (s[3] & 4) != 0);
		struct pm_gor_walk w = {
			.pid = PID, .tid = tid, .time = i, .r14 = r14, .sp = sp,
			.stack = slen ? stack : NULL, .stack_len = slen, .pcs = pcs, .npcs = 1,
			.status = (unsigned)s[0] << 4, .switch_bp = sp ^ r14,
		};

		n = pm_gor_sample(g, fixture_maps(), st, &w, ids, 1, PM_ARRAY_SIZE(ids) - 8 * i);
		if (n < 1 || n > PM_ARRAY_SIZE(ids) - 8 * i || ids[0] >= pm_stacks_nframes(st))
			abort();
		for (size_t k = 0; k < n; k++)
			if (ids[k] >= pm_stacks_nframes(st))
				abort();
		if (getenv("FUZZ_GOR_DEBUG"))
			fprintf(stderr, "  record: %zu frames of creators and tag\n", n - 1);
		use_ids(g, st, prof, ids, n);
	}
	pm_prof_free(prof);
	pm_stacks_free(st);
	pm_gor_free(g);
	return 0;
}
