/*
 * Unit tests for lib/profile: interning of strings, mappings, functions and
 * locations; merging of samples by (stack, labels); header fields; pointer
 * stability while growing; and the speed of pm_prof_add (printed only).
 */
#include "profile/profile.h"

#include "base/util.h"

#include "test.h"

#include <stdint.h>

static int test_header(void)
{
	struct pm_profile *p = pm_prof_new();

	CHECK_INT(pm_prof_nsample_types(p), 0);
	CHECK_INT(pm_prof_default_type(p), 0);
	CHECK(pm_prof_period_type(p) == NULL);
	pm_prof_add_sample_type(p, "samples", "count");
	pm_prof_add_sample_type(p, "cpu", "nanoseconds");
	CHECK_INT(pm_prof_nsample_types(p), 2);
	CHECK_INT(pm_prof_default_type(p), 1); /* the last one by default */
	CHECK_STR(pm_prof_sample_type(p, 0)->type, "samples");
	CHECK_STR(pm_prof_sample_type(p, 1)->unit, "nanoseconds");
	CHECK(pm_prof_sample_type(p, 2) == NULL);
	CHECK_INT(pm_prof_find_sample_type(p, "cpu"), 1);
	CHECK_INT(pm_prof_find_sample_type(p, "samples"), 0);
	CHECK_INT(pm_prof_find_sample_type(p, "wall"), -1);
	pm_prof_set_default_type(p, 0);
	CHECK_INT(pm_prof_default_type(p), 0);
	pm_prof_set_default_type(p, 7); /* out of range: back to the last */
	CHECK_INT(pm_prof_default_type(p), 1);
	pm_prof_set_period(p, "cpu", "nanoseconds", 10000000);
	CHECK(pm_prof_period_type(p) != NULL);
	CHECK_STR(pm_prof_period_type(p)->type, "cpu");
	CHECK_INT(pm_prof_period(p), 10000000);
	pm_prof_set_time(p, 1700000000000000000LL, 2030000000LL);
	CHECK_INT(pm_prof_time(p), 1700000000000000000LL);
	CHECK_INT(pm_prof_duration(p), 2030000000LL);
	pm_prof_add_comment(p, "lost 0 samples");
	pm_prof_add_comment(p, "second");
	CHECK_INT(pm_prof_ncomments(p), 2);
	CHECK_STR(pm_prof_comment(p, 0), "lost 0 samples");
	CHECK_STR(pm_prof_comment(p, 1), "second");
	CHECK(pm_prof_comment(p, 2) == NULL);
	pm_prof_free(p);
	pm_prof_free(NULL);
	return PM_PASS;
}

static int test_intern(void)
{
	struct pm_profile *p = pm_prof_new();
	char name[32];
	uint64_t m1, m2, m3, f1, f2, f3, f4;
	const struct pm_prof_func *fa, *fb;
	const struct pm_prof_mapping *m;

	m1 = pm_prof_mapping(p, 0x400000, 0x500000, 0, "/bin/prog", "abcd");
	m2 = pm_prof_mapping(p, 0x7f0000, 0x7f1000, 0x1000, "/lib/libc.so.6", "");
	m3 = pm_prof_mapping(p, 0x400000, 0x500000, 0, "/bin/prog", "abcd");
	CHECK_INT(m1, 1);
	CHECK_INT(m2, 2);
	CHECK_INT(m3, 1);
	CHECK_INT(pm_prof_nmappings(p), 2);
	CHECK_INT(pm_prof_mapping(p, 0x400000, 0x500000, 0, "/bin/prog", NULL), 3);
	pm_prof_mapping_flags(p, m1, true, true, false, true);
	pm_prof_mapping_flags(p, 99, true, true, true, true); /* ignored */
	m = pm_prof_mapping_by_id(p, 1);
	CHECK(m && m->has_functions && m->has_filenames && !m->has_lines && m->has_inline);
	CHECK_STR(m->build_id, "abcd");
	CHECK_INT(m->offset, 0);
	CHECK_INT(pm_prof_mapping_by_id(p, 2)->offset, 0x1000);
	CHECK_STR(pm_prof_mapping_by_id(p, 3)->build_id, "");
	CHECK(pm_prof_mapping_by_id(p, 0) == NULL);
	CHECK(pm_prof_mapping_by_id(p, 4) == NULL);

	/* the same text given from different buffers interns to one string */
	snprintf(name, sizeof(name), "main.%s", "work");
	f1 = pm_prof_func(p, "main.work", "main.work", "/src/main.go", 10);
	f2 = pm_prof_func(p, name, name, "/src/main.go", 10);
	f3 = pm_prof_func(p, "main.work", "main.work", "/src/main.go", 11);
	f4 = pm_prof_func(p, "main.other", "main.other", "/src/main.go", 20);
	CHECK_INT(f1, 1);
	CHECK_INT(f2, 1);
	CHECK_INT(f3, 2);
	CHECK_INT(f4, 3);
	CHECK_INT(pm_prof_nfuncs(p), 3);
	fa = pm_prof_func_by_id(p, f1);
	fb = pm_prof_func_by_id(p, f4);
	CHECK(fa->name == fa->system_name);
	CHECK(fa->file == fb->file); /* interned once */
	CHECK(fa->name != name);
	CHECK_INT(fa->start_line, 10);
	CHECK(pm_prof_func_at(p, 0) == fa);
	CHECK(pm_prof_func_at(p, 3) == NULL);
	CHECK(pm_prof_func_by_id(p, 4) == NULL);
	/* NULL strings read back as "" */
	f1 = pm_prof_func(p, NULL, NULL, NULL, 0);
	CHECK_STR(pm_prof_func_by_id(p, f1)->name, "");
	CHECK_INT(pm_prof_func(p, "", "", "", 0), f1);
	pm_prof_free(p);
	return PM_PASS;
}

static int test_locations(void)
{
	struct pm_profile *p = pm_prof_new();
	uint64_t m = pm_prof_mapping(p, 0x400000, 0x500000, 0, "/bin/prog", "");
	uint64_t fa = pm_prof_func(p, "a", "a", "a.go", 1);
	uint64_t fb = pm_prof_func(p, "b", "b", "b.go", 1);
	struct pm_prof_line l1[2] = { { fa, 5 }, { fb, 7 } }, l2[1] = { { fb, 8 } };
	const struct pm_prof_loc *loc;
	uint64_t a, b, c, d, e, g;

	a = pm_prof_loc(p, m, 0x401000, l1, 2);
	b = pm_prof_loc(p, m, 0x401000, l2, 1); /* same address, other lines: another */
	c = pm_prof_loc(p, m, 0x401004, l2, 1);
	d = pm_prof_loc(p, 0, 0, l2, 1); /* no address: by the lines */
	e = pm_prof_loc(p, 0, 0, l2, 1);
	g = pm_prof_loc(p, 0, 0, l1, 2);
	CHECK_INT(a, 1);
	CHECK_INT(b, 2);
	CHECK_INT(c, 3);
	CHECK_INT(d, 4);
	CHECK_INT(e, 4);
	CHECK_INT(g, 5);
	CHECK_INT(pm_prof_loc(p, m, 0x401000, l1, 2), 1); /* same address and lines: the same */
	CHECK_INT(pm_prof_loc(p, m, 0x401000, l2, 1), 2);
	CHECK_INT(pm_prof_loc(p, 0, 0, l1, 1), 6); /* a prefix is not the same */
	CHECK_INT(pm_prof_loc(p, 0, 0, NULL, 0), 7);
	CHECK_INT(pm_prof_loc(p, 0, 0, NULL, 0), 7);
	CHECK_INT(pm_prof_loc(p, m, 0, NULL, 0), 8);
	CHECK_INT(pm_prof_loc(p, m, 0x401000, NULL, 0), 9);
	CHECK_INT(pm_prof_nlocs(p), 9);
	loc = pm_prof_loc_by_id(p, a);
	CHECK_INT(loc->nlines, 2);
	CHECK_INT(loc->lines[0].func_id, fa); /* inlined callee first, as given */
	CHECK_INT(loc->lines[1].line, 7);
	CHECK_INT(loc->mapping_id, m);
	CHECK_INT(loc->address, 0x401000);
	l1[0].line = 99; /* copied, not borrowed */
	CHECK_INT(loc->lines[0].line, 5);
	CHECK(pm_prof_loc_by_id(p, 10) == NULL);
	CHECK(pm_prof_loc_by_id(p, 0) == NULL);
	pm_prof_free(p);
	return PM_PASS;
}

static int test_merge(void)
{
	struct pm_profile *p = pm_prof_new();
	uint64_t s1[3] = { 1, 2, 3 }, s2[3] = { 1, 2, 4 }, s3[2] = { 1, 2 };
	int64_t v1[2] = { 1, 10 }, v2[2] = { 2, 20 };
	struct pm_prof_label la[2] = { { "thread", "main", 0, NULL },
				       { "bytes", NULL, 64, "bytes" } };
	struct pm_prof_label lb[2] = { { "bytes", NULL, 64, "bytes" },
				       { "thread", "main", 0, NULL } };
	struct pm_prof_label lc[1] = { { "bytes", NULL, 64, NULL } };
	const struct pm_prof_sample *s;

	pm_prof_add_sample_type(p, "samples", "count");
	pm_prof_add_sample_type(p, "cpu", "nanoseconds");
	pm_prof_add(p, s1, 3, v1, NULL, 0);
	pm_prof_add(p, s1, 3, v2, NULL, 0);
	pm_prof_add(p, s2, 3, v1, NULL, 0);
	pm_prof_add(p, s3, 2, v1, NULL, 0); /* a prefix is another stack */
	CHECK_INT(pm_prof_nsamples(p), 3);
	s = pm_prof_sample_at(p, 0);
	CHECK_INT(s->nlocs, 3);
	CHECK_INT(s->loc_ids[2], 3);
	CHECK_INT(s->values[0], 3);
	CHECK_INT(s->values[1], 30);
	CHECK_INT(pm_prof_sample_at(p, 1)->values[1], 10);
	CHECK(pm_prof_sample_at(p, 3) == NULL);

	/* labels: order does not matter; different labels are different samples */
	pm_prof_add(p, s1, 3, v1, la, 2);
	pm_prof_add(p, s1, 3, v2, lb, 2);
	CHECK_INT(pm_prof_nsamples(p), 4);
	s = pm_prof_sample_at(p, 3);
	CHECK_INT(s->values[0], 3);
	CHECK_INT(s->nlabels, 2);
	pm_prof_add(p, s1, 3, v1, lc, 1); /* no unit: another label */
	pm_prof_add(p, s1, 3, v1, la, 1);
	CHECK_INT(pm_prof_nsamples(p), 6);
	s = pm_prof_sample_at(p, 4);
	CHECK_INT(s->nlabels, 1);
	CHECK_STR(s->labels[0].key, "bytes");
	CHECK(s->labels[0].str == NULL);
	CHECK_INT(s->labels[0].num, 64);
	CHECK(s->labels[0].num_unit == NULL);
	s = pm_prof_sample_at(p, 5);
	CHECK_STR(s->labels[0].str, "main");

	/* the empty stack is a sample too */
	pm_prof_add(p, NULL, 0, v1, NULL, 0);
	pm_prof_add(p, s1, 0, v1, NULL, 0);
	CHECK_INT(pm_prof_nsamples(p), 7);
	CHECK_INT(pm_prof_sample_at(p, 6)->values[0], 2);

	/* sample types after the first sample are refused (values would be short) */
	pm_prof_add_sample_type(p, "late", "count");
	CHECK_INT(pm_prof_nsample_types(p), 2);
	pm_prof_free(p);
	return PM_PASS;
}

/* Borrowed pointers stay valid while the profile grows (ASan checks the reads). */
static int test_stable(void)
{
	struct pm_profile *p = pm_prof_new();
	const struct pm_prof_func *f0;
	const struct pm_prof_sample *s0;
	const char *name0;
	uint64_t st[1];
	int64_t v = 1;
	char buf[32];

	pm_prof_add_sample_type(p, "samples", "count");
	pm_prof_func(p, "first", "first", "f.go", 1);
	f0 = pm_prof_func_at(p, 0);
	name0 = f0->name;
	st[0] = 1;
	pm_prof_add(p, st, 1, &v, NULL, 0);
	s0 = pm_prof_sample_at(p, 0);
	for (int i = 0; i < 20000; i++) {
		snprintf(buf, sizeof(buf), "f%d", i);
		pm_prof_func(p, buf, buf, "f.go", i);
		st[0] = (uint64_t)i + 2;
		pm_prof_add(p, st, 1, &v, NULL, 0);
	}
	CHECK_INT(pm_prof_nfuncs(p), 20001);
	CHECK_INT(pm_prof_nsamples(p), 20001);
	CHECK(pm_prof_func_at(p, 0) == f0);
	CHECK(pm_prof_sample_at(p, 0) == s0);
	CHECK_STR(f0->name, "first");
	CHECK(f0->name == name0);
	CHECK_INT(s0->loc_ids[0], 1);
	CHECK_STR(pm_prof_func_by_id(p, 20001)->name, "f19999");
	st[0] = 1;
	pm_prof_add(p, st, 1, &v, NULL, 0);
	CHECK_INT(s0->values[0], 2);
	pm_prof_free(p);
	return PM_PASS;
}

/* The record hot path: 20-frame stacks, mostly repeats.  Rate printed, not asserted. */
static int test_add_rate(void)
{
	enum { NSTACKS = 4096, DEPTH = 20, CALLS = 2000000 };
	struct pm_profile *p = pm_prof_new();
	uint64_t *stacks = xmalloc(sizeof(uint64_t) * NSTACKS * DEPTH), t0, t1;
	int64_t v[2] = { 1, 10000000 };
	uint64_t x = 88172645463325252ULL;
	double secs;

	pm_prof_add_sample_type(p, "samples", "count");
	pm_prof_add_sample_type(p, "cpu", "nanoseconds");
	for (size_t i = 0; i < (size_t)NSTACKS * DEPTH; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		stacks[i] = 1 + x % 5000;
	}
	t0 = pm_now_ns();
	for (size_t i = 0; i < CALLS; i++) {
		size_t k = (i * 2654435761u) % NSTACKS;

		pm_prof_add(p, stacks + k * DEPTH, DEPTH, v, NULL, 0);
	}
	t1 = pm_now_ns();
	CHECK_INT(pm_prof_nsamples(p), NSTACKS);
	{
		int64_t sum = 0;

		for (size_t i = 0; i < pm_prof_nsamples(p); i++)
			sum += pm_prof_sample_at(p, i)->values[0];
		CHECK_INT(sum, CALLS);
	}
	secs = (double)(t1 - t0) / 1e9;
	printf("  pm_prof_add: %d calls of %d-frame stacks in %.3f s = %.2f M calls/s\n", CALLS,
	       DEPTH, secs, secs > 0 ? CALLS / secs / 1e6 : 0.0);
	free(stacks);
	pm_prof_free(p);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "header", test_header },
	{ "intern", test_intern },
	{ "locations", test_locations },
	{ "merge", test_merge },
	{ "stable-pointers", test_stable },
	{ "add-rate", test_add_rate },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "profile", tests);
}
