/*
 * Unit tests for lib/html: the page of a hand-built profile holds the
 * frames with their kinds, the tree's values (divided by the types' common
 * period), report's header; hostile names cannot end the data's <script>
 * element; pruning merges small nodes into [pruned] and keeps the totals;
 * the diff view carries the base's values; bad arguments are refused.
 */
#include "output/html.h"

#include "goruntime/goroutine.h"
#include "profile/profile.h"
#include "base/util.h"

#include "test.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

/* main -> work (leaf, 3 samples), main -> [creator] -> creep (1), a kernel leaf (1), C (1) */
static struct pm_profile *profile(int64_t work, const char *odd)
{
	struct pm_profile *p = pm_prof_new();
	uint64_t mg = pm_prof_mapping(p, 0x400000, 0x500000, 0, "/bin/prog", "");
	uint64_t mk = pm_prof_mapping(p, 0, UINT64_MAX, 0, "[kernel.kallsyms]", "");
	uint64_t mc = pm_prof_mapping(p, 0, 0, 0, PM_GOR_CREATORS_MAPPING, "");
	uint64_t mn = pm_prof_mapping(p, 0x7f0000000000ULL, 0x7f0000100000ULL, 0, "/lib/libc.so.6", "");
	struct pm_prof_line ln;
	uint64_t lmain, lwork, lcre, lk, lrt, lc, lodd, st[4];
	int64_t v[2];

	pm_prof_add_sample_type(p, "samples", "count");
	pm_prof_add_sample_type(p, "cpu", "nanoseconds");
	pm_prof_set_period(p, "cpu", "nanoseconds", 1000000);
	pm_prof_add_comment(p, "lost 7 samples");
	ln = (struct pm_prof_line){ pm_prof_func(p, "main.main", "main.main", "main.go", 10), 11 };
	lmain = pm_prof_loc(p, mg, 0x401000, &ln, 1);
	ln = (struct pm_prof_line){ pm_prof_func(p, "main.work", "main.work", "main.go", 20), 21 };
	lwork = pm_prof_loc(p, mg, 0x401100, &ln, 1);
	ln = (struct pm_prof_line){ pm_prof_func(p, "main.go1 [creator]", "main.go1", "main.go", 5), 6 };
	lcre = pm_prof_loc(p, mc, 0, &ln, 1);
	ln = (struct pm_prof_line){ pm_prof_func(p, "do_syscall_64", "do_syscall_64", "", 0), 0 };
	lk = pm_prof_loc(p, mk, 0xffffffff81000000ULL, &ln, 1);
	ln = (struct pm_prof_line){ pm_prof_func(p, "runtime.mallocgc", "runtime.mallocgc", "malloc.go", 900), 901 };
	lrt = pm_prof_loc(p, mg, 0x401200, &ln, 1);
	ln = (struct pm_prof_line){ pm_prof_func(p, "memcpy", "memcpy", "", 0), 0 };
	lc = pm_prof_loc(p, mn, 0x7f0000001000ULL, &ln, 1);
	ln = (struct pm_prof_line){ pm_prof_func(p, odd, odd, "x.go", 1), 1 };
	lodd = pm_prof_loc(p, mg, 0x401300, &ln, 1);

	st[0] = lwork, st[1] = lmain;
	v[0] = work, v[1] = work * 1000000;
	pm_prof_add(p, st, 2, v, NULL, 0);
	st[0] = lrt, st[1] = lmain, st[2] = lcre;
	v[0] = 1, v[1] = 1000000;
	pm_prof_add(p, st, 3, v, NULL, 0);
	st[0] = lk, st[1] = lwork, st[2] = lmain;
	pm_prof_add(p, st, 3, v, NULL, 0);
	st[0] = lc, st[1] = lodd;
	pm_prof_add(p, st, 2, v, NULL, 0);
	return p;
}

static char *page(const struct pm_profile *p, const struct pm_profile *base, double frac, int *rc)
{
	struct pm_html_opts o = { -1, frac, "prof.pb.gz", "old.pb.gz" };
	char *out = NULL, err[200] = "";
	size_t len = 0;

	*rc = pm_html_render(p, base, &o, &out, &len, err, sizeof(err));
	if (!*rc && strlen(out) != len)
		*rc = -99;
	return out;
}

static int test_page(void)
{
	struct pm_profile *p = profile(3, "main.(*T).Odd");
	int rc;
	char *s = page(p, NULL, 0, &rc);

	CHECK_INT(rc, 0);
	CHECK(strncmp(s, "<!DOCTYPE html>", 15) == 0);
	/* kinds: Go 0, runtime 1, native 2, kernel 3, creator 4 */
	CHECK(strstr(s, "[\"main.work\",\"main.go\",20,0]"));
	CHECK(strstr(s, "[\"runtime.mallocgc\",\"malloc.go\",900,1]"));
	CHECK(strstr(s, "[\"memcpy\",\"\",0,2]"));
	CHECK(strstr(s, "[\"do_syscall_64\",\"\",0,3]"));
	CHECK(strstr(s, "[\"main.go1 [creator]\",\"main.go\",5,4]"));
	/* cpu's values are samples times the period: written once, scale 1e6 */
	CHECK(strstr(s, "{\"type\":\"cpu\",\"unit\":\"nanoseconds\",\"scale\":1000000}"));
	CHECK(strstr(s, "\"self\":[[0,0,3,"));
	CHECK(strstr(s, "],0]"));
	/* report's header, per type */
	CHECK(strstr(s, "\"lost 7 samples\""));
	CHECK(strstr(s, "\"total cpu: 6.00 ms\""));
	CHECK(strstr(s, "\"pruned\":0"));
	CHECK(!strstr(s, "\"bself\""));
	free(s);
	pm_prof_free(p);
	return PM_PASS;
}

static int test_hostile_names(void)
{
	struct pm_profile *p = profile(3, "</script><script>alert(1)</script>\"\\\n&");
	int rc;
	char *s = page(p, NULL, 0, &rc), *data, *end;

	CHECK_INT(rc, 0);
	data = strstr(s, "id=\"pmdata\">");
	CHECK(data);
	end = strstr(data, "</script>");
	CHECK(end);
	/* the name stays inside the data, escaped */
	CHECK(strstr(data, "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)") < end);
	CHECK(strstr(data, "\\\"\\\\\\u000a\\u0026"));
	free(s);
	pm_prof_free(p);
	return PM_PASS;
}

static int test_prune(void)
{
	struct pm_profile *p = profile(1000, "main.odd");
	int rc;
	char *s = page(p, NULL, 0.01, &rc);

	CHECK_INT(rc, 0);
	/* of 1003 samples, only main.main -> main.work (1001) stays; the rest goes to [pruned] */
	CHECK(strstr(s, "\"fraction\":0.01,"));
	CHECK(strstr(s, "[\"[pruned]\",\"\",0,5]"));
	/* only the frames of the nodes kept are written */
	CHECK(!strstr(s, "memcpy"));
	CHECK(!strstr(s, "do_syscall_64"));
	/* root, main.main, main.work; [pruned] under the root (2: creator, odd) and under
	 * main.work (the kernel leaf): self 1000 at main.work, 2 and 1 at the [pruned] */
	CHECK(strstr(s, "\"self\":[[0,0,1000,2,1],0]"));
	free(s);
	pm_prof_free(p);
	return PM_PASS;
}

static int test_diff(void)
{
	struct pm_profile *p = profile(6, "main.odd"), *b = profile(3, "main.odd");
	struct pm_profile *other = pm_prof_new();
	int rc;
	char *s = page(p, b, 0, &rc);

	CHECK_INT(rc, 0);
	CHECK(strstr(s, "\"bself\":[[0,0,3,"));
	CHECK(strstr(s, "\"base\":{\"title\":\"old.pb.gz\",\"has\":[1,1]}"));
	free(s);
	/* a base with none of the types */
	pm_prof_add_sample_type(other, "alloc_space", "bytes");
	s = page(p, other, 0, &rc);
	CHECK_INT(rc, -EINVAL);
	CHECK(!s);
	pm_prof_free(other);
	pm_prof_free(b);
	pm_prof_free(p);
	return PM_PASS;
}

static int test_errors(void)
{
	struct pm_profile *p = pm_prof_new(), *q = profile(1, "x");
	struct pm_html_opts o = { 5, 0, NULL, NULL };
	char *out = NULL, err[200] = "";
	size_t len = 0;

	CHECK_INT(pm_html_render(p, NULL, &o, &out, &len, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "no sample types"));
	CHECK_INT(pm_html_render(q, NULL, &o, &out, &len, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "no sample type 5"));
	CHECK(!out);
	pm_prof_free(p);
	pm_prof_free(q);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "page", test_page },
	{ "hostile_names", test_hostile_names },
	{ "prune", test_prune },
	{ "diff", test_diff },
	{ "errors", test_errors },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "html", tests);
}
