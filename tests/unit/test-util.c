/*
 * Unit tests for lib/base/util: the growing string (pm_sb_*) and the
 * saturating sum.
 */
#include "base/util.h"

#include "test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int t_sb_add(void)
{
	struct pm_sb b = { 0 };

	CHECK(b.s == NULL);
	pm_sb_add(&b, "abc", 2);
	CHECK_STR(b.s, "ab");
	pm_sb_str(&b, "cd");
	CHECK_STR(b.s, "abcd");
	CHECK_INT(b.len, 4);
	pm_sb_add(&b, "", 0);
	CHECK_STR(b.s, "abcd");
	free(b.s);
	return PM_PASS;
}

/* Formats past the first buffer (256 bytes) and many appends: each byte where it belongs. */
static int t_sb_printf(void)
{
	struct pm_sb b = { 0 };
	char want[1200];
	size_t i;

	pm_sb_printf(&b, "%d-%s", 42, "x");
	CHECK_STR(b.s, "42-x");
	memset(want, 'q', 1000);
	want[1000] = '\0';
	pm_sb_printf(&b, "[%s]", want);
	CHECK_INT(b.len, 4 + 1002);
	CHECK(b.s[4] == '[' && b.s[5] == 'q' && b.s[1004] == 'q' && b.s[1005] == ']');
	CHECK(b.s[b.len] == '\0');
	for (i = 0; i < 5000; i++)
		pm_sb_printf(&b, "%zu,", i % 10);
	CHECK_INT(b.len, 1006 + 10000);
	CHECK(!memcmp(b.s + b.len - 4, "8,9,", 4));
	free(b.s);
	return PM_PASS;
}

static int t_add_sat(void)
{
	CHECK(pm_add_sat(2, 3) == 5);
	CHECK(pm_add_sat(INT64_MAX, 1) == INT64_MAX);
	CHECK(pm_add_sat(INT64_MAX - 1, 1) == INT64_MAX);
	CHECK(pm_add_sat(INT64_MIN, -1) == INT64_MIN);
	CHECK(pm_add_sat(INT64_MIN, INT64_MAX) == -1);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "sb_add", t_sb_add },
	{ "sb_printf", t_sb_printf },
	{ "add_sat", t_add_sat },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "util", tests);
}
