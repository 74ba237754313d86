/*
 * Unit tests of the profile sources through their context (srcctx.h): a
 * session made as a replay makes it (no target), its events claimed by
 * their sources, processing started with pm_ses_processing(), and records
 * handed to the sources by the same functions feed() and the loop use
 * (pm_src_sample(), pm_src_record(), pm_src_timers(), the profile hooks).
 * Each test checks what the source added to the aggregator -- its values
 * at its own offset, its own frames -- and to the profile it heads.
 */
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#include "base/util.h"
#include "profile/profile.h"
#include "profile/stacks.h"
#include "perf/attach.h"
#include "session/attach.h"
#include "session/session.h"
#include "session/source.h"
#include "session/srcctx.h"
#include "sources/src_alloc.h"
#include "sources/src_cpu.h"
#include "sources/src_offcpu.h"

struct fake {
	struct session s;
	struct pm_record_cfg cfg;
	struct pm_record_result res;
};

/*
 * A session of @nev events, the first @nuser the CPU source's, the others
 * claimed by name (names[e]) as a replay claims them; processing started.
 */
static void fake_start(struct fake *f, size_t nev, size_t nuser, const char *const *names)
{
	memset(f, 0, sizeof(*f));
	f->s.cfg = &f->cfg;
	f->s.res = &f->res;
	f->s.replay = true;
	f->s.att = pm_attach_new(false);
	f->s.nev = nev;
	f->s.nuser = nuser;
	for (size_t e = 0; e < nev; e++) {
		snprintf(f->s.spec[e].name, sizeof(f->s.spec[e].name), "%s", names[e]);
		snprintf(f->s.spec[e].value_type, sizeof(f->s.spec[e].value_type), "%s", names[e]);
		snprintf(f->s.spec[e].value_unit, sizeof(f->s.spec[e].value_unit), "count");
		f->s.attr[e].sample_period = 1;
		f->s.attr[e].sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
		f->s.attr[e].sample_id_all = 1;
		if (e >= nuser)
			pm_src_claim(&f->s, e, names[e]);
	}
	pm_ses_processing(&f->s);
	pm_ses_layout(&f->s);
}

static void fake_end(struct fake *f)
{
	pm_ses_release(&f->s);
}

/* A sample of @pid/@tid at @time: two kernel frames, no user registers. */
static void sample_of(struct pm_rec_sample *smp, uint32_t pid, uint64_t time, uint64_t *ips)
{
	memset(smp, 0, sizeof(*smp));
	smp->pid = smp->tid = pid;
	smp->time = time;
	smp->period = 1;
	ips[0] = (uint64_t)PERF_CONTEXT_KERNEL;
	ips[1] = 0xffffffff81000010ULL;
	ips[2] = 0xffffffff81000020ULL;
	smp->ips = ips;
	smp->nr = 3;
	smp->ip = ips[1];
}

/* The one stack the aggregator holds: its values (NULL unless exactly one). */
static const int64_t *only_stack(const struct fake *f, size_t *n)
{
	const int64_t *v = NULL;

	if (pm_stacks_count(f->s.stacks) != 1)
		return NULL;
	pm_stacks_at(f->s.stacks, 0, n, &v);
	return v;
}

static int test_cpu_sample(void)
{
	static const char *const names[] = { "cycles", "instructions" };
	struct fake f;
	struct pm_rec_sample smp;
	struct pm_profile *p;
	uint64_t ips[3];
	const int64_t *v;
	size_t n = 0;

	fake_start(&f, 2, 2, names);
	CHECK_INT(f.s.sctx[0].nvalues, 4); /* two per event, first */
	CHECK_INT(f.s.sctx[0].val_off, 0);
	sample_of(&smp, 100, 1000, ips);
	smp.period = 1234;
	pm_src_sample(&f.s, 1, &smp); /* the second event's */
	CHECK_INT(f.res.samples, 1);
	v = only_stack(&f, &n);
	CHECK(v);
	CHECK(n >= 2); /* the two kernel frames at least */
	CHECK_INT(v[0], 0);
	CHECK_INT(v[1], 0);
	CHECK_INT(v[2], 1);
	CHECK_INT(v[3], 1234);
	p = pm_prof_new();
	pm_src_profile_head(&f.s, p);
	CHECK_INT(pm_prof_nsample_types(p), 3); /* samples, then one per event */
	CHECK(pm_prof_find_sample_type(p, "cycles") == 1);
	CHECK(pm_prof_find_sample_type(p, "instructions") == 2);
	pm_prof_free(p);
	fake_end(&f);
	return PM_PASS;
}

/* A switch record of @tid at @time, out or in. */
static void switch_of(struct pm_rec *r, uint32_t tid, uint64_t time, bool out)
{
	memset(r, 0, sizeof(*r));
	r->type = PERF_RECORD_SWITCH;
	r->misc = out ? PERF_RECORD_MISC_SWITCH_OUT : 0;
	r->sid.pid = r->sid.tid = tid;
	r->sid.time = time;
}

static int test_offcpu_switches(void)
{
	static const char *const names[] = { "context-switches" };
	struct fake f;
	struct pm_rec_sample smp;
	struct pm_rec r;
	struct pm_profile *p;
	uint64_t ips[3];
	const int64_t *v;
	size_t n = 0, off;

	fake_start(&f, 1, 0, names);
	CHECK_INT(f.s.src[0], pm_src_index(&pm_src_offcpu));
	CHECK(pm_src_takes_records(&f.s, 0));
	off = f.s.sctx[pm_src_index(&pm_src_offcpu)].val_off;
	sample_of(&smp, 200, 1000, ips);
	pm_src_sample(&f.s, 0, &smp); /* switched out: its stack now, its time at the switch-in */
	CHECK_INT(pm_stacks_count(f.s.stacks), 0);
	switch_of(&r, 200, 1100, true); /* the switch itself, after the sample's work */
	pm_src_record(&f.s, 0, &r);
	switch_of(&r, 200, 5100, false);
	pm_src_record(&f.s, 0, &r);
	v = only_stack(&f, &n);
	CHECK(v);
	CHECK_INT(v[off], 1);        /* once off CPU */
	CHECK_INT(v[off + 1], 4000); /* from the switch-out's time to the switch-in's */
	CHECK_INT(f.res.samples, 1);
	switch_of(&r, 200, 6000, false); /* a switch-in without its switch-out: nothing */
	pm_src_record(&f.s, 0, &r);
	CHECK_INT(pm_stacks_count(f.s.stacks), 1);
	/* the loop's timers: off-CPU's tick (the only timer on at a replay) */
	CHECK_INT(pm_src_timers(&f.s, 1000000), 1000000 + 5000000);
	p = pm_prof_new();
	pm_src_profile_head(&f.s, p);
	CHECK(pm_prof_find_sample_type(p, "off-cpu") == 0); /* alone: the default */
	pm_prof_free(p);
	fake_end(&f);
	return PM_PASS;
}

/* The loop calls no hook of a source that is off: no timer, no profile head. */
static int test_hooks_skipped_when_off(void)
{
	static const char *const names[] = { "cycles" };
	struct fake f;
	struct pm_profile *p;

	fake_start(&f, 1, 1, names); /* the CPU source alone */
	CHECK_INT(pm_src_timers(&f.s, 1000000), 0); /* off-CPU's tick not asked for */
	p = pm_prof_new();
	pm_src_profile_head(&f.s, p);
	CHECK(pm_prof_find_sample_type(p, "off-cpu") < 0);
	CHECK(pm_prof_find_sample_type(p, "alloc_space") < 0);
	CHECK(pm_prof_find_sample_type(p, "contentions") < 0);
	CHECK_INT(pm_prof_nsample_types(p), 2);
	pm_src_profile_tail(&f.s, p);
	CHECK_INT(pm_prof_ncomments(p), 1); /* the CPU source's head's line alone */
	pm_prof_free(p);
	fake_end(&f);
	return PM_PASS;
}

static void put64(uint8_t *b, uint64_t v)
{
	memcpy(b, &v, 8); /* (little-endian, as the kernel writes it here) */
}

static int test_alloc_sample(void)
{
	static const char *const names[] = { "uprobe:runtime.mProf_Malloc" };
	struct fake f;
	struct pm_rec_sample smp;
	struct pm_prof_label lab[4];
	struct pm_profile *p;
	uint8_t raw[40];
	uint64_t ips[3];
	const uint32_t *ids;
	const int64_t *v;
	size_t n = 0, off, nlab;
	uint32_t alloc = (uint32_t)pm_src_index(&pm_src_alloc);

	fake_start(&f, 1, 0, names);
	CHECK_INT(f.s.src[0], alloc);
	off = f.s.sctx[alloc].val_off;
	sample_of(&smp, 300, 1000, ips);
	memset(raw, 0, sizeof(raw));
	put64(raw + 24, 4096); /* the object's size */
	put64(raw + 32, 1);    /* MemProfileRate 1: every allocation, no scaling */
	smp.raw = raw;
	smp.raw_size = sizeof(raw);
	pm_src_sample(&f.s, 0, &smp);
	v = only_stack(&f, &n);
	CHECK(v);
	CHECK_INT(v[off], 1);           /* samples */
	CHECK_INT(v[off + 1], 4096);    /* bytes */
	CHECK_INT(v[off + 2], 1000);    /* objects, in thousandths */
	CHECK_INT(v[off + 3], 4096);    /* space */
	ids = pm_stacks_at(f.s.stacks, 0, &n, &v);
	/* its root frame is its own, the size: the label bytes */
	CHECK(n > 0);
	CHECK_INT(pm_stacks_frame_at(f.s.stacks, ids[n - 1])->map_id, PM_SES_SRC_MAP(alloc));
	memset(lab, 0, sizeof(lab));
	nlab = pm_src_stack_labels(&f.s, ids, &n, lab, PM_ARRAY_SIZE(lab));
	CHECK_INT(nlab, 1);
	CHECK_STR(lab[0].key, "bytes");
	CHECK_INT(lab[0].num, 4096);
	smp.raw_size = 16; /* too short: counted unreadable, nothing added */
	pm_src_sample(&f.s, 0, &smp);
	CHECK_INT(pm_stacks_count(f.s.stacks), 1);
	CHECK_INT(f.res.samples, 1);
	p = pm_prof_new();
	pm_src_profile_head(&f.s, p);
	CHECK(pm_prof_find_sample_type(p, "alloc_objects") == 0);
	CHECK(pm_prof_find_sample_type(p, "alloc_space") == 1);
	pm_prof_free(p);
	fake_end(&f);
	return PM_PASS;
}

/* The targets' executables, once each, the ones a source probes already said. */
static int test_next_exe(void)
{
	static const char *const names[] = { "uprobe:runtime.mProf_Malloc" };
	char *argv[] = { (char *)"/bin/sh", NULL };
	struct fake f;
	struct pm_srcctx *c;
	char *path = NULL;
	size_t i = 0;
	pid_t pid = -1;
	bool dup = true;

	fake_start(&f, 1, 0, names);
	f.cfg.argv = argv;
	f.s.replay = false; /* (launched: the command's binary) */
	c = pm_src_ctx(&f.s, pm_src_index(&pm_src_offcpu));
	CHECK(pm_sc_next_exe(c, &i, &pid, &path, &dup));
	CHECK(path);
	CHECK_INT(pid, 0);
	CHECK(!dup);
	CHECK(!pm_sc_next_exe(c, &i, &pid, &path, &dup)); /* one command */
	/* the alloc source probes it already (its event's path): a duplicate to it */
	snprintf(f.s.spec[0].path, sizeof(f.s.spec[0].path), "%s", path);
	free(path);
	i = 0;
	CHECK(pm_sc_next_exe(pm_src_ctx(&f.s, pm_src_index(&pm_src_alloc)), &i, &pid, &path, &dup));
	free(path);
	CHECK(dup);
	i = 0;
	CHECK(pm_sc_next_exe(c, &i, &pid, &path, &dup)); /* not to another source */
	free(path);
	CHECK(!dup);
	f.s.replay = true;
	fake_end(&f);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "cpu_sample", test_cpu_sample },
	{ "offcpu_switches", test_offcpu_switches },
	{ "hooks_skipped_when_off", test_hooks_skipped_when_off },
	{ "alloc_sample", test_alloc_sample },
	{ "next_exe", test_next_exe },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "sources", tests);
}
