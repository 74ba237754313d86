/*
 * Unit tests for lib/gopclntab on real binaries: the Go 1.19 fixture
 * tests/go/symtest (normal, stripped, and cross-built for arm64), esbuild
 * (Go 1.26) and lefthook (Go 1.27) from npm, and corrupted copies.
 * Ground truth: `go tool nm` for entries, MARK comments in the fixture source
 * for lines.
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/elfimg.h"
#include "symbols/gopclntab.h"
#include "test.h"
#include "base/util.h"

#define GO_TOOL "/usr/lib/go-1.19/bin/go"
#define ESBUILD "npm/node_modules/@esbuild/linux-x64/bin/esbuild"
#define LEFTHOOK "npm/node_modules/lefthook-linux-x64/bin/lefthook"

static const char *go_tool(void)
{
	const char *g = getenv("GO");

	if (g && *g && access(g, X_OK) == 0)
		return g;
	return access(GO_TOOL, X_OK) == 0 ? GO_TOOL : NULL;
}

/* Entry of @sym as `go tool nm` prints it, 0 when unknown. */
static uint64_t nm_addr(const char *bin, const char *sym)
{
	const char *go = go_tool();
	char cmd[8192], line[1024];
	uint64_t addr = 0;
	FILE *p;

	if (!go)
		return 0;
	snprintf(cmd, sizeof(cmd), "%s tool nm '%s' 2>/dev/null", go, bin);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p)) {
		char name[900], type;
		unsigned long long a;

		if (sscanf(line, "%llx %c %899s", &a, &type, name) == 3 && strcmp(name, sym) == 0 &&
		    (type == 'T' || type == 't'))
			addr = a;
	}
	pclose(p);
	return addr;
}

/* Line number of the line holding "MARK:<mark>" in @src, 0 when absent. */
static int mark_line(const char *src, const char *mark)
{
	char want[128], line[1024];
	FILE *f = fopen(src, "r");
	int n = 0, found = 0;

	if (!f)
		return 0;
	snprintf(want, sizeof(want), "MARK:%s", mark);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, want)) {
			found = n;
			break;
		}
	}
	fclose(f);
	return found;
}

static long find_func(const struct pm_go *go, const char *name)
{
	for (size_t i = 0; i < pm_go_nfuncs(go); i++) {
		const char *n = pm_go_func_name(go, (long)i);

		if (n && strcmp(n, name) == 0)
			return (long)i;
	}
	return -1;
}

struct opened {
	struct pm_elf *e;
	struct pm_go *go;
};

static int open_go(struct opened *o, const char *path)
{
	o->go = NULL;
	o->e = pm_elf_open(path);
	if (!o->e)
		return -errno;
	return pm_go_open(&o->go, o->e);
}

static void close_go(struct opened *o)
{
	pm_go_free(o->go);
	pm_elf_free(o->e);
}

/* The fixture's source file: where the table says it was built, else the tree. */
static const char *fixture_source(const struct pm_go *go)
{
	static char path[4096];
	long i = find_func(go, "main.main");
	struct pm_go_frame fr[8];

	if (i >= 0 && pm_go_frames(go, pm_go_func_entry(go, i), fr, 8) &&
	    access(fr[0].file, R_OK) == 0) {
		snprintf(path, sizeof(path), "%s", fr[0].file);
		return path;
	}
	return "tests/go/symtest/main.go";
}

/* End of function @idx: the next entry, or the end of text for the last one. */
static uint64_t func_end(const struct pm_go *go, long idx)
{
	return (size_t)idx + 1 < pm_go_nfuncs(go) ? pm_go_func_entry(go, idx + 1)
						 : pm_go_text_end(go);
}

static const char *const fixture_funcs[] = {"main.main", "main.symCaller", "main.symFrame",
					    "main.symLeaf"};

/* Structure checks shared by the amd64 and arm64 Go 1.19 builds. */
static int check_symtest(const char *bin, const char *nm_bin, unsigned quantum)
{
	struct opened o;
	const char *src;
	int rc = open_go(&o, bin), leaf_line, frame_line, body_line, call_line;
	bool inl_seen = false;
	long leaf, frame, caller;
	int32_t maxsp = 0;
	struct pm_go_frame fr[16];

	CHECK_INT(rc, 0);
	CHECK_INT(pm_go_magic(o.go), 0xfffffff0);
	CHECK_INT(pm_go_ptrsize(o.go), 8);
	CHECK_INT(pm_go_quantum(o.go), quantum);
	CHECK(strncmp(pm_go_version(o.go), "go1.19", 6) == 0);
	CHECK(pm_go_nfuncs(o.go) > 1000);

	/* Entries exactly as `go tool nm` prints them (from the unstripped build). */
	for (size_t i = 0; i < PM_ARRAY_SIZE(fixture_funcs); i++) {
		uint64_t want = nm_addr(nm_bin, fixture_funcs[i]);
		long idx = want ? pm_go_find(o.go, want) : find_func(o.go, fixture_funcs[i]);

		if (!want)
			fprintf(stderr, "  note: no go tool; entries not compared\n");
		CHECK(idx >= 0);
		CHECK_STR(pm_go_func_name(o.go, idx), fixture_funcs[i]);
		if (want)
			CHECK_INT(pm_go_func_entry(o.go, idx), want);
		/* The last byte of the function still maps to it. */
		CHECK_INT(pm_go_find(o.go, func_end(o.go, idx) - 1), idx);
	}
	{
		uint64_t rt = nm_addr(nm_bin, "runtime.text");

		if (rt)
			CHECK_INT(pm_go_text_start(o.go), rt);
		CHECK_INT(pm_go_text_start(o.go), pm_elf_section(o.e, ".text")->addr);
	}

	/* Lines at function entries. */
	src = fixture_source(o.go);
	leaf_line = mark_line(src, "symLeaf-body");
	frame_line = mark_line(src, "symFrame-start");
	body_line = mark_line(src, "inlAdd-body");
	call_line = mark_line(src, "symCaller-call");
	CHECK(leaf_line > 0 && frame_line > 0 && body_line > 0 && call_line > 0);
	leaf = find_func(o.go, "main.symLeaf");
	frame = find_func(o.go, "main.symFrame");
	caller = find_func(o.go, "main.symCaller");
	CHECK_INT(pm_go_frames(o.go, pm_go_func_entry(o.go, leaf), fr, 16), 1);
	CHECK_STR(fr[0].func, "main.symLeaf");
	CHECK_INT(fr[0].line, leaf_line);
	CHECK(strstr(fr[0].file, "symtest/main.go") != NULL);
	CHECK_INT(fr[0].start_line, 0); /* not recorded before 1.20 */
	CHECK_INT(pm_go_frames(o.go, pm_go_func_entry(o.go, frame), fr, 16), 1);
	CHECK_INT(fr[0].line, frame_line);

	/* The inlined call of inlAdd in symCaller expands into [callee, caller]. */
	for (uint64_t pc = pm_go_func_entry(o.go, caller); pc < func_end(o.go, caller);
	     pc += quantum) {
		size_t n = pm_go_frames(o.go, pc, fr, 16);

		if (n == 2 && strcmp(fr[0].func, "main.inlAdd") == 0) {
			CHECK_INT(fr[0].line, body_line);
			CHECK_STR(fr[1].func, "main.symCaller");
			CHECK_INT(fr[1].line, call_line);
			CHECK_STR(fr[0].file, fr[1].file);
			inl_seen = true;
		}
		/* With room for one frame only, the physical function is kept. */
		CHECK_INT(pm_go_frames(o.go, pc, fr, 1), 1);
		CHECK_STR(fr[0].func, "main.symCaller");
	}
	CHECK(inl_seen);

	/* spdelta: 0 at entry, the frame (a 512-byte array) inside. */
	CHECK_INT(pm_go_spdelta(o.go, frame, pm_go_func_entry(o.go, frame)), 0);
	for (uint64_t pc = pm_go_func_entry(o.go, frame); pc < func_end(o.go, frame);
	     pc += quantum)
		maxsp = PM_MAX(maxsp, pm_go_spdelta(o.go, frame, pc));
	CHECK(maxsp >= 512);
	CHECK_INT(pm_go_spdelta(o.go, -1, 0), -1);

	/* runtime.goexit is a TOPFRAME. */
	CHECK(pm_go_func_flags(o.go, find_func(o.go, "runtime.goexit")) & PM_GO_FUNC_TOPFRAME);
	CHECK(pm_go_func_flags(o.go, find_func(o.go, "runtime.mcall")) & PM_GO_FUNC_SPWRITE);

	/* Outside Go text. */
	CHECK_INT(pm_go_find(o.go, pm_go_text_start(o.go) - 1), -1);
	CHECK_INT(pm_go_find(o.go, pm_go_text_end(o.go)), -1);
	CHECK_INT(pm_go_frames(o.go, 0, fr, 16), 0);
	close_go(&o);
	return PM_PASS;
}

static int test_go119(void)
{
	char bin[4096];

	snprintf(bin, sizeof(bin), "%s", pm_test_fixture("go/symtest"));
	if (access(bin, R_OK) != 0)
		SKIP("%s absent (run scripts/fixtures.sh)", bin);
	return check_symtest(bin, bin, 1);
}

static int test_go119_stripped(void)
{
	char bin[4096], full[4096];

	snprintf(full, sizeof(full), "%s", pm_test_fixture("go/symtest"));
	snprintf(bin, sizeof(bin), "%s", pm_test_fixture("go/symtest-stripped"));
	if (access(bin, R_OK) != 0 || access(full, R_OK) != 0)
		SKIP("%s absent (run scripts/fixtures.sh)", bin);
	return check_symtest(bin, full, 1);
}

/* Normal and stripped builds give identical answers everywhere. */
static int test_stripped_identical(void)
{
	struct opened a, b;
	char p1[4096];

	snprintf(p1, sizeof(p1), "%s", pm_test_fixture("go/symtest"));
	if (access(p1, R_OK) != 0 || access(pm_test_fixture("go/symtest-stripped"), R_OK) != 0)
		SKIP("fixtures absent (run scripts/fixtures.sh)");
	CHECK_INT(open_go(&a, p1), 0);
	CHECK_INT(open_go(&b, pm_test_fixture("go/symtest-stripped")), 0);
	CHECK_INT(pm_go_nfuncs(a.go), pm_go_nfuncs(b.go));
	CHECK_INT(pm_go_text_start(a.go), pm_go_text_start(b.go));
	CHECK_INT(pm_go_text_end(a.go), pm_go_text_end(b.go));
	CHECK_STR(pm_go_version(a.go), pm_go_version(b.go));
	for (uint64_t pc = pm_go_text_start(a.go); pc < pm_go_text_end(a.go); pc += 3) {
		struct pm_go_frame fa[16], fb[16];
		size_t na = pm_go_frames(a.go, pc, fa, 16), nb = pm_go_frames(b.go, pc, fb, 16);
		long ia = pm_go_find(a.go, pc);

		CHECK_INT(na, nb);
		CHECK_INT(ia, pm_go_find(b.go, pc));
		CHECK_INT(pm_go_spdelta(a.go, ia, pc), pm_go_spdelta(b.go, ia, pc));
		for (size_t i = 0; i < na; i++) {
			CHECK_STR(fa[i].func, fb[i].func);
			CHECK_STR(fa[i].file, fb[i].file);
			CHECK_INT(fa[i].line, fb[i].line);
		}
	}
	close_go(&a);
	close_go(&b);
	return PM_PASS;
}

/*
 * Cross-build the fixture for arm64 into the fixture dir when it is missing
 * or older than its source.  0: there, 1: cannot build (no go tool or source),
 * -1: the build failed.
 */
static int build_arm64(const char *out)
{
	const char *go = go_tool();
	const char *src = "tests/go/symtest/main.go";
	struct stat so, sb;
	char *cmd, *dir;
	int rc;

	if (stat(src, &so) != 0 || !go)
		return access(out, R_OK) == 0 ? 0 : 1;
	if (stat(out, &sb) == 0 && sb.st_mtime >= so.st_mtime)
		return 0;
	dir = realpath(pm_test_fixture("."), NULL);
	if (!dir)
		return 1;
	cmd = xasprintf("GOOS=linux GOARCH=arm64 CGO_ENABLED=0 GO111MODULE=off GOFLAGS= "
			"GOCACHE='%s/gocache' '%s' build -o '%s' ./tests/go/symtest >&2",
			dir, go, out);
	rc = system(cmd);
	free(cmd);
	free(dir);
	return rc == 0 ? 0 : -1;
}

static int test_arm64(void)
{
	char bin[4096];
	struct opened o;
	int rc;

	snprintf(bin, sizeof(bin), "%s", pm_test_fixture("go/symtest-arm64"));
	rc = build_arm64(bin);
	if (rc > 0)
		SKIP("no arm64 build of symtest and no go tool to make one");
	CHECK_INT(rc, 0);
	CHECK_INT(open_go(&o, bin), 0);
	CHECK_INT(pm_elf_machine(o.e), EM_AARCH64);
	close_go(&o);
	return check_symtest(bin, bin, 4);
}

/* Structure checks on a Go 1.26+ binary from npm (no textStart in the header). */
static int check_npm(const char *rel, const char *ver)
{
	char bin[4096];
	struct opened o;
	const struct pm_elf_section *text;
	size_t named = 0, filed = 0, inl = 0, n;
	long mm;
	struct pm_go_frame fr[16];

	snprintf(bin, sizeof(bin), "%s", pm_test_fixture(rel));
	if (access(bin, R_OK) != 0)
		SKIP("%s absent (npm packages not installed)", bin);
	CHECK_INT(open_go(&o, bin), 0);
	CHECK_INT(pm_go_magic(o.go), 0xfffffff1);
	CHECK(strncmp(pm_go_version(o.go), ver, strlen(ver)) == 0);
	text = pm_elf_section(o.e, ".text");
	CHECK(text != NULL);
	CHECK_INT(text->addr, 0x401000);
	CHECK_INT(pm_go_text_start(o.go), text->addr);
	CHECK(pm_go_text_end(o.go) <= text->addr + text->size);
	n = pm_go_nfuncs(o.go);
	CHECK(n > 5000);
	for (size_t i = 0; i < n; i++) {
		uint64_t entry = pm_go_func_entry(o.go, (long)i);
		const char *name = pm_go_func_name(o.go, (long)i);
		size_t k;

		CHECK(entry >= text->addr && entry < text->addr + text->size);
		CHECK_INT(pm_go_find(o.go, entry), (long)i);
		if (name && name[0])
			named++;
		k = pm_go_frames(o.go, entry, fr, 16);
		if (k && fr[k - 1].file[0] && fr[k - 1].line > 0)
			filed++;
		/* A probe in the middle of the function for inlined frames. */
		k = pm_go_frames(o.go, entry + (func_end(o.go, (long)i) - entry) / 2, fr,
				 16);
		if (k > 1)
			inl++;
	}
	CHECK(named == n);
	CHECK(filed * 100 >= n * 99);
	CHECK(inl * 20 >= n); /* at least 5 % */
	mm = find_func(o.go, "main.main");
	CHECK(mm >= 0);
	CHECK_INT(pm_go_frames(o.go, pm_go_func_entry(o.go, mm), fr, 16), 1);
	CHECK(fr[0].start_line > 0 && fr[0].line >= fr[0].start_line);
	CHECK(strstr(fr[0].file, ".go") != NULL);
	CHECK_INT(pm_go_spdelta(o.go, mm, pm_go_func_entry(o.go, mm)), 0);
	CHECK(pm_go_func_flags(o.go, find_func(o.go, "runtime.goexit")) & PM_GO_FUNC_TOPFRAME);
	CHECK(find_func(o.go, "runtime.main") >= 0);
	close_go(&o);
	return PM_PASS;
}

static int test_esbuild(void)
{
	return check_npm(ESBUILD, "go1.26.");
}

static int test_lefthook(void)
{
	return check_npm(LEFTHOOK, "go1.27.");
}

static int test_not_go(void)
{
	struct opened o;

	CHECK_INT(open_go(&o, "/proc/self/exe"), -ENOENT);
	CHECK(o.go == NULL);
	close_go(&o);
	return PM_PASS;
}

/* Load a fixture into memory; returns its bytes and the .gopclntab range. */
static uint8_t *load(const char *path, size_t *len, size_t *tab_off, size_t *tab_len)
{
	struct pm_elf *e = pm_elf_open(path);
	const struct pm_elf_section *s;
	const uint8_t *b;
	uint8_t *copy;

	if (!e)
		return NULL;
	s = pm_elf_section(e, ".gopclntab");
	b = pm_elf_bytes(e, len);
	copy = xmalloc(*len);
	memcpy(copy, b, *len);
	*tab_off = s ? s->offset : 0;
	*tab_len = s ? s->size : 0;
	pm_elf_free(e);
	return copy;
}

static int open_mem(const uint8_t *buf, size_t len, struct opened *o)
{
	o->go = NULL;
	o->e = pm_elf_open_mem(buf, len);
	if (!o->e)
		return -ENOEXEC;
	return pm_go_open(&o->go, o->e);
}

/* Everything a profiler would call, over all functions: must not crash. */
static void exercise(const struct pm_go *go)
{
	struct pm_go_frame fr[16];
	size_t n = pm_go_nfuncs(go);
	volatile size_t sink = 0;

	sink += strlen(pm_go_version(go));
	for (size_t i = 0; i < n; i++) {
		uint64_t e = pm_go_func_entry(go, (long)i);
		const char *nm = pm_go_func_name(go, (long)i);

		if (nm)
			sink += strlen(nm);
		for (uint64_t pc = e; pc < e + 64; pc += 16) {
			size_t k = pm_go_frames(go, pc, fr, 16);

			for (size_t j = 0; j < k; j++)
				sink += strlen(fr[j].func) + strlen(fr[j].file);
			sink += (size_t)pm_go_spdelta(go, (long)i, pc);
		}
	}
	(void)sink;
}

static int test_corrupt(void)
{
	size_t len, toff, tlen;
	uint8_t *orig, *buf;
	struct opened o;
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	orig = load(pm_test_fixture("go/symtest-stripped"), &len, &toff, &tlen);
	if (!orig)
		SKIP("fixture absent (run scripts/fixtures.sh)");
	CHECK(tlen > 4096);
	buf = xmalloc(len);

	/* Intact: opens. */
	CHECK_INT(open_mem(orig, len, &o), 0);
	close_go(&o);

	/* No section name to go by: found by scanning the read-only segments. */
	{
		size_t n0;
		uint8_t *nm = NULL;

		CHECK_INT(open_mem(orig, len, &o), 0);
		n0 = pm_go_nfuncs(o.go);
		close_go(&o);
		memcpy(buf, orig, len);
		for (size_t i = len - 11; i > 0 && !nm; i--)
			if (memcmp(buf + i, ".gopclntab", 11) == 0)
				nm = buf + i;
		CHECK(nm != NULL);
		nm[1] = 'x';
		CHECK_INT(open_mem(buf, len, &o), 0);
		CHECK(pm_elf_section(o.e, ".gopclntab") == NULL);
		CHECK_INT(pm_go_nfuncs(o.go), n0);
		CHECK(find_func(o.go, "main.main") >= 0);
		close_go(&o);
		/* ... and with the table damaged too: nothing valid to find. */
		buf[toff + 8 + 8 * 3] ^= 0x40;
		CHECK(open_mem(buf, len, &o) < 0);
		close_go(&o);
	}

	/* Header offsets out of the table / out of order. */
	memcpy(buf, orig, len);
	memset(buf + toff + 8 + 8 * 3, 0xff, 8); /* funcnameOffset */
	CHECK_INT(open_mem(buf, len, &o), -EINVAL);
	close_go(&o);
	memcpy(buf, orig, len);
	memcpy(buf + toff + 8 + 8 * 4, buf + toff + 8 + 8 * 6, 8); /* cuOffset = pctabOffset */
	CHECK_INT(open_mem(buf, len, &o), -EINVAL);
	close_go(&o);
	/* nfunc far too large. */
	memcpy(buf, orig, len);
	memset(buf + toff + 8, 0x7f, 4);
	CHECK_INT(open_mem(buf, len, &o), -EINVAL);
	close_go(&o);
	/* Bad magic, bad pointer size. */
	memcpy(buf, orig, len);
	buf[toff] = 0x12;
	CHECK_INT(open_mem(buf, len, &o), -EINVAL);
	close_go(&o);
	memcpy(buf, orig, len);
	buf[toff + 7] = 3;
	CHECK_INT(open_mem(buf, len, &o), -EINVAL);
	close_go(&o);
	/* functab out of order: swap two entries. */
	{
		uint64_t pcln = pm_le64(orig + toff + 8 + 8 * 7);
		uint8_t tmp[8];

		memcpy(buf, orig, len);
		memcpy(tmp, buf + toff + pcln + 8 * 10, 8);
		memcpy(buf + toff + pcln + 8 * 10, buf + toff + pcln + 8 * 11, 8);
		memcpy(buf + toff + pcln + 8 * 11, tmp, 8);
		CHECK_INT(open_mem(buf, len, &o), -EINVAL);
		close_go(&o);
		/* A _func whose entry does not match its functab entry. */
		memcpy(buf, orig, len);
		buf[toff + pcln + pm_le32(orig + toff + pcln + 8 * 20 + 4)] ^= 0x10;
		CHECK_INT(open_mem(buf, len, &o), -EINVAL);
		close_go(&o);
	}
	/* Truncated inside the table: the section lies about its size, no valid table. */
	{
		int rc = open_mem(orig, toff + tlen / 2, &o);

		CHECK(rc == -ENOEXEC || rc == -EINVAL || rc == -ENOENT);
		close_go(&o);
	}

	/* Random damage inside the table: any result, but no crash (ASan checks reads). */
	for (int round = 0; round < 300; round++) {
		int nflip = 1 + round % 8;

		memcpy(buf, orig, len);
		for (int k = 0; k < nflip; k++) {
			size_t at;

			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			/* Half the hits in the header and functab area, half anywhere. */
			at = (size_t)(seed >> 33) % ((round & 1) ? 4096 : tlen);
			buf[toff + at] ^= (uint8_t)(1u << ((seed >> 20) & 7));
		}
		if (open_mem(buf, len, &o) == 0)
			exercise(o.go);
		close_go(&o);
	}
	free(buf);
	free(orig);
	return PM_PASS;
}

int main(int argc, char **argv)
{
	static const struct pm_test tests[] = {
		{"go119", test_go119},
		{"go119_stripped", test_go119_stripped},
		{"stripped_identical", test_stripped_identical},
		{"arm64", test_arm64},
		{"esbuild_go126", test_esbuild},
		{"lefthook_go127", test_lefthook},
		{"not_go", test_not_go},
		{"corrupt", test_corrupt},
		{NULL, NULL},
	};

	return pm_test_main(argc, argv, "gopclntab", tests);
}
