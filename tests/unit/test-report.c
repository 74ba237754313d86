/*
 * Unit tests for lib/report: folded stacks of a hand-built profile (inline
 * expansion, merging, sorting, sanitising, address frames, zero counts,
 * value choice), the table's self/cum shares on a recursive stack, its
 * header, sorting and top, and write errors.
 */
#include "output/report.h"

#include "profile/profile.h"
#include "base/util.h"

#include "test.h"

#include <errno.h>
#include <stdint.h>

/* Render with @fn into a heap string. */
static char *render(int (*fn)(const struct pm_profile *, FILE *, const struct pm_report_opts *),
		    const struct pm_profile *p, const struct pm_report_opts *o, int *rc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		*rc = -errno;
		return NULL;
	}
	*rc = fn(p, f, o);
	fclose(f);
	return buf;
}

static struct pm_profile *folded_profile(bool with_samples)
{
	struct pm_profile *p = pm_prof_new();
	uint64_t m1, m2, frt, fmain, fwork, finl, fweird, L1, L2, L3, L4, L5, L6, L7;
	struct pm_prof_line ln[2];
	struct pm_prof_label lab = { "a", NULL, 1, NULL };
	uint64_t st[4];
	int64_t v[2];
	int k = with_samples ? 0 : 1;

	if (with_samples)
		pm_prof_add_sample_type(p, "samples", "count");
	pm_prof_add_sample_type(p, "cpu", "nanoseconds");
	m1 = pm_prof_mapping(p, 0x400000, 0x500000, 0, "/bin/prog", "");
	m2 = pm_prof_mapping(p, 0x7f0000000000ULL, 0x7f0000100000ULL, 0x28000,
			     "/usr/lib/x86_64-linux-gnu/libc.so.6", "");
	frt = pm_prof_func(p, "runtime.main", "runtime.main", "proc.go", 100);
	fmain = pm_prof_func(p, "main.main", "main.main", "main.go", 10);
	fwork = pm_prof_func(p, "main.work", "main.work", "main.go", 20);
	finl = pm_prof_func(p, "main.inl", "main.inl", "main.go", 5);
	fweird = pm_prof_func(p, "weird;name\nx", "", "", 0);
	ln[0] = (struct pm_prof_line){ finl, 5 };
	ln[1] = (struct pm_prof_line){ fwork, 20 };
	L1 = pm_prof_loc(p, m1, 0x401000, ln, 2);
	ln[0] = (struct pm_prof_line){ fmain, 10 };
	L2 = pm_prof_loc(p, m1, 0x401100, ln, 1);
	ln[0] = (struct pm_prof_line){ frt, 100 };
	L3 = pm_prof_loc(p, m1, 0x401200, ln, 1);
	L4 = pm_prof_loc(p, m2, 0x7f0000001234ULL, NULL, 0);
	L5 = pm_prof_loc(p, 0, 0xdeadbeef, NULL, 0);
	ln[0] = (struct pm_prof_line){ finl, 6 };
	ln[1] = (struct pm_prof_line){ fwork, 21 };
	L6 = pm_prof_loc(p, m1, 0x401010, ln, 2);
	ln[0] = (struct pm_prof_line){ fweird, 1 };
	L7 = pm_prof_loc(p, m1, 0x401300, ln, 1);

#define ADD(n, cnt, cpu, lp, nl)                               \
	do {                                                   \
		v[0] = (cnt), v[1] = (cpu);                    \
		pm_prof_add(p, st, (n), v + k, (lp), (nl));   \
	} while (0)
	st[0] = L1, st[1] = L2, st[2] = L3;
	ADD(3, 2, 20, NULL, 0);
	st[0] = L6; /* other address, same functions */
	ADD(3, 3, 30, &lab, 1);
	st[0] = L4, st[1] = L1, st[2] = L2, st[3] = L3;
	ADD(4, 1, 10, NULL, 0);
	st[0] = L5, st[1] = L3;
	ADD(2, 1, 10, NULL, 0);
	st[0] = L7, st[1] = L2, st[2] = L3;
	ADD(3, 4, 40, NULL, 0);
	st[0] = L2, st[1] = L3;
	ADD(2, 0, 5, NULL, 0);
	ADD(0, 7, 70, NULL, 0); /* an empty stack: no line */
#undef ADD
	return p;
}

static int test_folded(void)
{
	struct pm_profile *p = folded_profile(true);
	struct pm_report_opts o = { 0, PM_SORT_SELF, -1, NULL };
	char *out;
	int rc;

	out = render(pm_report_folded, p, &o, &rc);
	CHECK_INT(rc, 0);
	/* heaviest first, equal values by stack */
	CHECK_STR(out, "runtime.main;main.main;main.work;main.inl 5\n"
		       "runtime.main;main.main;weird:name?x 4\n"
		       "runtime.main;0xdeadbeef 1\n"
		       "runtime.main;main.main;main.work;main.inl;libc.so.6+0x29234 1\n");
	free(out);

	o.value_index = 1;
	out = render(pm_report_folded, p, &o, &rc);
	CHECK_INT(rc, 0);
	CHECK_STR(out, "runtime.main;main.main;main.work;main.inl 50\n"
		       "runtime.main;main.main;weird:name?x 40\n"
		       "runtime.main;0xdeadbeef 10\n"
		       "runtime.main;main.main;main.work;main.inl;libc.so.6+0x29234 10\n"
		       "runtime.main;main.main 5\n");
	free(out);

	o.value_index = 2;
	out = render(pm_report_folded, p, &o, &rc);
	CHECK_INT(rc, -EINVAL);
	free(out);
	pm_prof_free(p);

	/* no "samples" type: the default one */
	p = folded_profile(false);
	o.value_index = -1;
	out = render(pm_report_folded, p, &o, &rc);
	CHECK_INT(rc, 0);
	CHECK_STR(out, "runtime.main;main.main;main.work;main.inl 50\n"
		       "runtime.main;main.main;weird:name?x 40\n"
		       "runtime.main;0xdeadbeef 10\n"
		       "runtime.main;main.main;main.work;main.inl;libc.so.6+0x29234 10\n"
		       "runtime.main;main.main 5\n");
	free(out);
	pm_prof_free(p);

	/* an empty profile prints nothing */
	p = pm_prof_new();
	out = render(pm_report_folded, p, &o, &rc);
	CHECK_INT(rc, 0);
	CHECK_STR(out, "");
	free(out);
	out = render(pm_report_text, p, &o, &rc);
	CHECK_INT(rc, 0);
	CHECK(strstr(out, "Self%") != NULL);
	free(out);
	pm_prof_free(p);
	return PM_PASS;
}

static int test_folded_name(void)
{
	char buf[32];

	CHECK_STR(pm_report_folded_name("a;b\nc\td\x7f" "e f", buf, sizeof(buf)), "a:b?c?d?e f");
	CHECK_STR(pm_report_folded_name("main.(*T).m", buf, sizeof(buf)), "main.(*T).m");
	CHECK_STR(pm_report_folded_name("a;bcdef", buf, 3), "a:");
	CHECK_STR(pm_report_folded_name("x", buf, 1), "");
	buf[0] = 'Z';
	CHECK(pm_report_folded_name("x", buf, 0) == buf);
	CHECK_INT(buf[0], 'Z');
	CHECK_STR(pm_report_folded_name("h\xc3\xa9llo", buf, sizeof(buf)), "h\xc3\xa9llo");
	return PM_PASS;
}

/* pm_sanitize(): what a terminal could act on becomes '?', the rest of UTF-8 stays. */
static int test_sanitize(void)
{
	char b[64];

#define SAN(in, out)                              \
	do {                                      \
		strcpy(b, in);                    \
		CHECK_STR(pm_sanitize(b), out);   \
	} while (0)
	SAN("st\x1b[31mX", "st?[31mX");                 /* ESC */
	SAN("a\rb\nc\x7f", "a?b?c?");                  /* C0, DEL */
	SAN("x\x9b" "31m", "x?31m");                     /* raw C1 CSI: not UTF-8 */
	SAN("x\xc2\x9b" "31m", "x?31m");                 /* U+009B encoded */
	SAN("\xc2\xa0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\xc2\xa0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	SAN("a\xe2\x80\xae" "b\xe2\x81\xa6", "a?b?");     /* bidi overrides, isolates */
	SAN("\xc0\xaf\xe0\x80\xaf\xed\xa0\x80", "????????"); /* overlong, surrogate */
	SAN("\xe2\x82", "??");                            /* cut sequence */
	SAN("\xf5\x80\x80\x80", "????");                 /* past U+10FFFF */
	SAN("", "");
	CHECK(pm_sanitize(NULL) == NULL);
#undef SAN
	return PM_PASS;
}

/* main -> a -> b -> a (leaf) and main -> b (leaf): recursion counts once in cum. */
static struct pm_profile *recursive_profile(void)
{
	struct pm_profile *p = pm_prof_new();
	uint64_t fm, fa, fb, Lm, La, Lb, st[4];
	struct pm_prof_line ln;
	int64_t v[2];

	pm_prof_add_sample_type(p, "samples", "count");
	pm_prof_add_sample_type(p, "cpu", "nanoseconds");
	pm_prof_set_period(p, "cpu", "nanoseconds", 10000000);
	pm_prof_set_time(p, 1700000000000000000LL, 2500000000LL);
	pm_prof_add_comment(p, "lost 0 samples");
	fm = pm_prof_func(p, "main.main", "main.main", "", 0);
	fa = pm_prof_func(p, "main.a", "main.a", "/src/a.go", 3);
	fb = pm_prof_func(p, "main.b", "main.b", "/src/b.go", 0);
	ln = (struct pm_prof_line){ fm, 1 };
	Lm = pm_prof_loc(p, 0, 0x1000, &ln, 1);
	ln = (struct pm_prof_line){ fa, 4 };
	La = pm_prof_loc(p, 0, 0x2000, &ln, 1);
	ln = (struct pm_prof_line){ fb, 5 };
	Lb = pm_prof_loc(p, 0, 0x3000, &ln, 1);
	st[0] = La, st[1] = Lb, st[2] = La, st[3] = Lm;
	v[0] = 3, v[1] = 1500000000;
	pm_prof_add(p, st, 4, v, NULL, 0);
	st[0] = Lb, st[1] = Lm;
	v[0] = 1, v[1] = 530000000;
	pm_prof_add(p, st, 2, v, NULL, 0);
	return p;
}

static int test_text_recursive(void)
{
	struct pm_profile *p = recursive_profile();
	struct pm_report_opts o = { 0, PM_SORT_SELF, -1, "prof.pb.gz" };
	char *out, *t;
	int rc;

	out = render(pm_report_text, p, &o, &rc);
	CHECK_INT(rc, 0);
	CHECK(strncmp(out, "# pmuprof report: prof.pb.gz\n", 29) == 0);
	CHECK(strstr(out, "\n# sample types: samples/count, cpu/nanoseconds (shown)\n"));
	CHECK(strstr(out, "\n# total samples: 4\n"));
	CHECK(strstr(out, "\n# total cpu: 2.03 s\n"));
	CHECK(strstr(out, "\n# period: 10.00 ms of cpu\n"));
	CHECK(strstr(out, "\n# time: 2023-11-14 22:13:20 UTC\n"));
	CHECK(strstr(out, "\n# duration: 2.50 s\n"));
	CHECK(strstr(out, "\n# lost 0 samples\n#\n"));
	t = strstr(out, "   Self%");
	CHECK(t != NULL);
	CHECK_STR(t, "   Self%     Cum%   Samples  Function   File:Line\n"
		     "  73.89%   73.89%         3  main.a     /src/a.go:3\n"
		     "  26.11%  100.00%         1  main.b     /src/b.go\n"
		     "   0.00%  100.00%         0  main.main\n");
	free(out);

	o.sort = PM_SORT_CUM;
	o.top = 2;
	out = render(pm_report_text, p, &o, &rc);
	CHECK_INT(rc, 0);
	t = strstr(out, "   Self%");
	CHECK(t != NULL);
	CHECK_STR(t, "   Self%     Cum%   Samples  Function   File:Line\n"
		     "  26.11%  100.00%         1  main.b     /src/b.go\n"
		     "   0.00%  100.00%         0  main.main\n");
	free(out);

	/* by the sample count, sorted by name */
	o.sort = PM_SORT_NAME;
	o.top = 0;
	o.value_index = 0;
	o.title = NULL;
	out = render(pm_report_text, p, &o, &rc);
	CHECK_INT(rc, 0);
	CHECK(strncmp(out, "# pmuprof report\n", 17) == 0);
	CHECK(strstr(out, "\n# total samples: 4\n"));
	t = strstr(out, "   Self%");
	CHECK(t != NULL);
	CHECK_STR(t, "   Self%     Cum%   Samples  Function   File:Line\n"
		     "  75.00%   75.00%         3  main.a     /src/a.go:3\n"
		     "  25.00%  100.00%         1  main.b     /src/b.go\n"
		     "   0.00%  100.00%         0  main.main\n");
	free(out);

	o.value_index = 2;
	out = render(pm_report_text, p, &o, &rc);
	CHECK_INT(rc, -EINVAL);
	free(out);
	pm_prof_free(p);
	return PM_PASS;
}

/* Inlined frames are rows of their own; unsymbolized addresses are named rows. */
static int test_text_inline(void)
{
	struct pm_profile *p = folded_profile(true);
	struct pm_report_opts o = { 0, PM_SORT_SELF, 0, NULL };
	char *out;
	int rc;

	out = render(pm_report_text, p, &o, &rc);
	CHECK_INT(rc, 0);
	/* total 18 samples (7 of them with an empty stack) */
	CHECK(strstr(out, "\n# total samples: 18\n"));
	CHECK(strstr(out, "  27.78%   33.33%         5  main.inl           main.go:5\n"));
	CHECK(strstr(out, "   0.00%   33.33%         0  main.work          main.go:20\n"));
	CHECK(strstr(out, "   5.56%    5.56%         1  libc.so.6+0x29234\n"));
	CHECK(strstr(out, "   5.56%    5.56%         1  0xdeadbeef\n"));
	CHECK(strstr(out, "  22.22%   22.22%         4  weird;name?x\n"));
	CHECK(strstr(out, "   0.00%   61.11%         0  runtime.main       proc.go:100\n"));
	free(out);
	pm_prof_free(p);
	return PM_PASS;
}

static int test_units(void)
{
	static const struct {
		const char *unit;
		int64_t v;
		const char *want;
	} cases[] = {
		{ "nanoseconds", 999, "999 ns" },
		{ "nanoseconds", 1500, "1.50 us" },
		{ "nanoseconds", 2500000, "2.50 ms" },
		{ "microseconds", 2030000, "2.03 s" },
		{ "bytes", 1000, "1000 B" },
		{ "bytes", 3 << 20, "3.00 MiB" },
		{ "count", 42, "42" },
		{ "widgets", 7, "7 widgets" },
	};

	for (size_t i = 0; i < PM_ARRAY_SIZE(cases); i++) {
		struct pm_profile *p = pm_prof_new();
		struct pm_report_opts o = { 0, PM_SORT_SELF, -1, NULL };
		uint64_t f, l;
		struct pm_prof_line ln;
		char want[64], *out;
		int rc;

		pm_prof_add_sample_type(p, "v", cases[i].unit);
		f = pm_prof_func(p, "f", "f", "", 0);
		ln = (struct pm_prof_line){ f, 1 };
		l = pm_prof_loc(p, 0, 0, &ln, 1);
		pm_prof_add(p, &l, 1, &cases[i].v, NULL, 0);
		out = render(pm_report_text, p, &o, &rc);
		CHECK_INT(rc, 0);
		snprintf(want, sizeof(want), "\n# total v: %s\n", cases[i].want);
		if (!strstr(out, want)) {
			fprintf(stderr, "  want \"%s\" in:\n%s", want + 1, out);
			free(out);
			return PM_FAIL;
		}
		CHECK(strstr(out, "\n# distinct stacks: 1\n"));
		free(out);
		pm_prof_free(p);
	}
	return PM_PASS;
}

static int test_write_error(void)
{
	struct pm_profile *p = recursive_profile();
	struct pm_report_opts o = { 0, PM_SORT_SELF, -1, NULL };
	FILE *f = fopen("/dev/full", "w");

	if (!f)
		SKIP("no /dev/full");
	CHECK_INT(pm_report_text(p, f, &o), -ENOSPC);
	clearerr(f);
	CHECK_INT(pm_report_folded(p, f, &o), -ENOSPC);
	fclose(f);
	pm_prof_free(p);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "folded", test_folded },
	{ "folded-name", test_folded_name },
	{ "sanitize", test_sanitize },
	{ "text-recursive", test_text_recursive },
	{ "text-inline", test_text_inline },
	{ "units", test_units },
	{ "write-error", test_write_error },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "report", tests);
}
