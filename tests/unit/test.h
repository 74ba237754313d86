/*
 * A tiny unit-test harness.  Each tests/unit/test-<module>.c defines an
 * array of struct pm_test ending with {NULL, NULL} and calls
 * pm_test_main() from main().  Each test returns PM_PASS, PM_FAIL or
 * PM_SKIP; one line per test is printed ("PASS: file/name"), which
 * tests/run.sh counts.  Argument: a substring to select tests.
 *
 * Fixture paths: $PMUPROF_FIXTURES (default tests/.work) holds the Go
 * fixture binaries (go/<name>, go/<name>-stripped) and npm/ packages.
 */
#ifndef PM_TEST_H
#define PM_TEST_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PM_PASS = 0, PM_FAIL = 1, PM_SKIP = 77 };

struct pm_test {
	const char *name;
	int (*fn)(void);
};

#define CHECK(cond)                                                                    \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#cond);                                                \
			return PM_FAIL;                                                \
		}                                                                      \
	} while (0)

#define CHECK_INT(a, b)                                                                \
	do {                                                                           \
		long long a_ = (long long)(a), b_ = (long long)(b);                    \
		if (a_ != b_) {                                                        \
			fprintf(stderr, "  %s:%d: %s == %lld, expected %s == %lld\n",  \
				__FILE__, __LINE__, #a, a_, #b, b_);                   \
			return PM_FAIL;                                                \
		}                                                                      \
	} while (0)

#define CHECK_STR(a, b)                                                                \
	do {                                                                           \
		const char *a_ = (a), *b_ = (b);                                       \
		if (!a_ || !b_ || strcmp(a_, b_) != 0) {                               \
			fprintf(stderr, "  %s:%d: %s is \"%s\", expected \"%s\"\n",    \
				__FILE__, __LINE__, #a, a_ ? a_ : "(null)",            \
				b_ ? b_ : "(null)");                                   \
			return PM_FAIL;                                                \
		}                                                                      \
	} while (0)

#define SKIP(...)                                                                      \
	do {                                                                           \
		fprintf(stderr, "  skip: ");                                           \
		fprintf(stderr, __VA_ARGS__);                                          \
		fprintf(stderr, "\n");                                                 \
		return PM_SKIP;                                                        \
	} while (0)

/*
 * The inverse of pm_hash_u64 (util.h, a bijection): the key that hashes to
 * @h, to build inputs that pile into one probe chain of an unseeded table.
 */
static inline uint64_t pm_test_unhash(uint64_t h)
{
	/* the inverses of its two odd multipliers mod 2^64, by Newton's iteration */
	uint64_t c1 = 0xff51afd7ed558ccdULL, c2 = 0xc4ceb9fe1a85ec53ULL, i1 = c1, i2 = c2;

	for (int k = 0; k < 6; k++) {
		i1 *= 2 - c1 * i1;
		i2 *= 2 - c2 * i2;
	}
	h ^= h >> 33;
	h *= i2;
	h ^= h >> 33;
	h *= i1;
	h ^= h >> 33;
	return h;
}

/* Entries in directory @dir, "." and ".." aside; -1 when it cannot be read. */
static inline int pm_test_count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/*
 * @dir (a mkdtemp() template, such as "/tmp/pmuprof-test-x.XXXXXX", made
 * on first use) "/" @name, in a static buffer; NULL when it cannot be made.
 * Whether it was made is remembered, not read from the name: mkdtemp() may
 * end the name with an 'X' (1 in 62), and a second mkdtemp() of it fails.
 */
static inline const char *pm_test_tmp_path(char *dir, size_t dirsize, const char *name)
{
	static char buf[256];
	static const char *made;

	(void)dirsize;
	if (made != dir) {
		if (!mkdtemp(dir))
			return NULL;
		made = dir;
	}
	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

/* Path of a fixture under $PMUPROF_FIXTURES, in a static buffer. */
static inline const char *pm_test_fixture(const char *rel)
{
	static char buf[4096];
	const char *dir = getenv("PMUPROF_FIXTURES");

	snprintf(buf, sizeof(buf), "%s/%s", dir && *dir ? dir : "tests/.work", rel);
	return buf;
}

static inline int pm_test_main(int argc, char **argv, const char *suite,
			       const struct pm_test *tests)
{
	int failed = 0;

	for (const struct pm_test *t = tests; t->name; t++) {
		int rc;

		if (argc > 1 && !strstr(t->name, argv[1]))
			continue;
		fflush(stdout);
		rc = t->fn();
		printf("%s: %s/%s\n", rc == PM_PASS ? "PASS" : rc == PM_SKIP ? "SKIP" : "FAIL",
		       suite, t->name);
		if (rc != PM_PASS && rc != PM_SKIP)
			failed++;
	}
	return failed ? 1 : 0;
}

#endif
