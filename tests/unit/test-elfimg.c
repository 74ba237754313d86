/* Unit tests for lib/elfimg: this test binary itself, the Go fixtures, and damaged copies. */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/elfimg.h"
#include "test.h"
#include "base/util.h"

#define GO_TOOL "/usr/lib/go-1.19/bin/go"
#define LEFTHOOK "npm/node_modules/lefthook-linux-x64/bin/lefthook"

/* First line of `cmd`'s output that contains @key, the rest after it, into @out. */
static bool cmd_value(const char *cmd, const char *key, char *out, size_t outlen)
{
	char line[4096];
	FILE *p = popen(cmd, "r");
	bool found = false;

	if (!p)
		return false;
	while (!found && fgets(line, sizeof(line), p)) {
		char *k = strstr(line, key);

		if (!k)
			continue;
		k += strlen(key);
		k[strcspn(k, "\r\n")] = '\0';
		snprintf(out, outlen, "%s", k);
		found = true;
	}
	pclose(p);
	return found;
}

__attribute__((noinline)) int pm_test_elf_marker(int x);
__attribute__((noinline)) int pm_test_elf_marker(int x)
{
	return x * 3 + 1;
}

static int test_self(void)
{
	struct pm_elf *e = pm_elf_open("/proc/self/exe");
	uint64_t sym, bias, start = 0;
	const char *name;
	char want[512];

	CHECK(e != NULL);
#if defined(__x86_64__)
	CHECK_INT(pm_elf_machine(e), EM_X86_64);
#elif defined(__aarch64__)
	CHECK_INT(pm_elf_machine(e), EM_AARCH64);
#endif
	CHECK(pm_elf_type(e) == ET_DYN || pm_elf_type(e) == ET_EXEC);
	CHECK(pm_elf_section(e, ".text") != NULL);
	CHECK(pm_elf_section(e, ".no-such-section") == NULL);
	CHECK(pm_elf_nsegments(e) >= 2);

	/* GNU build ID, as readelf prints it. */
	{
		char self[4096], cmd[8192];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		CHECK(n > 0);
		self[n] = '\0';
		snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", self);
		if (access("/usr/bin/readelf", X_OK) == 0 &&
		    cmd_value(cmd, "Build ID: ", want, sizeof(want)))
			CHECK_STR(pm_elf_build_id(e), want);
	}

	/* Symbols: find the load bias through one symbol, then look up by address. */
	sym = pm_elf_symbol_addr(e, "pm_test_elf_marker");
	CHECK(sym != 0);
	bias = (uint64_t)(uintptr_t)&pm_test_elf_marker - sym;
	CHECK(pm_elf_type(e) == ET_DYN || bias == 0);
	name = pm_elf_symbol(e, sym + 2, &start);
	CHECK_STR(name, "pm_test_elf_marker");
	CHECK_INT(start, sym);
	name = pm_elf_symbol(e, pm_elf_symbol_addr(e, "main"), &start);
	CHECK_STR(name, "main");
	CHECK(pm_elf_symbol(e, 0, &start) == NULL);
	CHECK(pm_elf_symbol(e, UINT64_MAX - 1, &start) == NULL);
	CHECK_INT(pm_elf_symbol_addr(e, "no_such_symbol_anywhere"), 0);
	pm_elf_free(e);
	pm_elf_free(NULL);
	return PM_PASS;
}

/* Segments, section bytes, vaddr <-> offset agree with each other. */
static int test_layout(void)
{
	struct pm_elf *e = pm_elf_open(pm_test_fixture("go/symtest"));
	const struct pm_elf_section *t;
	size_t len;
	const uint8_t *bytes;

	if (!e)
		SKIP("fixture absent (run scripts/fixtures.sh)");
	CHECK_INT(pm_elf_type(e), ET_EXEC);
	bytes = pm_elf_bytes(e, &len);
	CHECK(bytes && len > 4096);
	CHECK(memcmp(bytes, ELFMAG, SELFMAG) == 0);
	t = pm_elf_section(e, ".text");
	CHECK(t && t->data && t->size > 0 && (t->flags & SHF_EXECINSTR));
	CHECK_INT(t->addr, 0x401000);
	CHECK(pm_elf_vaddr_bytes(e, t->addr, (size_t)t->size) == t->data);
	CHECK_INT(pm_elf_offset_to_vaddr(e, t->offset), t->addr);
	CHECK(pm_elf_section(e, ".bss")->data == NULL);
	CHECK(pm_elf_vaddr_bytes(e, pm_elf_section(e, ".bss")->addr, 8) == NULL);
	for (size_t i = 0; i < pm_elf_nsegments(e); i++) {
		const struct pm_elf_segment *g = pm_elf_segment_at(e, i);

		CHECK(g->data == bytes + g->offset);
		CHECK_INT(pm_elf_offset_to_vaddr(e, g->offset), g->vaddr);
		if (g->filesz > 1)
			CHECK_INT(pm_elf_offset_to_vaddr(e, g->offset + g->filesz - 1),
				  g->vaddr + g->filesz - 1);
		CHECK(pm_elf_vaddr_bytes(e, g->vaddr, (size_t)g->filesz) == g->data);
		CHECK(pm_elf_vaddr_bytes(e, g->vaddr, (size_t)g->filesz + 1) == NULL ||
		      g->vaddr + g->filesz == pm_elf_segment_at(e, i + 1)->vaddr);
	}
	CHECK(pm_elf_segment_at(e, pm_elf_nsegments(e)) == NULL);
	CHECK(pm_elf_section_at(e, pm_elf_nsections(e)) == NULL);
	CHECK_INT(pm_elf_offset_to_vaddr(e, (uint64_t)len + 100000), -1);
	/* Go's .symtab has main.main; the stripped build has no symbols. */
	CHECK(pm_elf_symbol_addr(e, "main.main") != 0);
	CHECK_STR(pm_elf_symbol(e, pm_elf_symbol_addr(e, "main.main") + 1, NULL), "main.main");
	pm_elf_free(e);
	e = pm_elf_open(pm_test_fixture("go/symtest-stripped"));
	CHECK(e != NULL);
	CHECK(pm_elf_symbol(e, 0x401000, NULL) == NULL);
	CHECK_INT(pm_elf_symbol_addr(e, "main.main"), 0);
	pm_elf_free(e);
	return PM_PASS;
}

/* Go binaries without a GNU note: the Go build ID string, as `go tool buildid` prints it. */
static int test_go_build_id(void)
{
	char bin[4096], cmd[8192], want[512];
	struct pm_elf *e;

	snprintf(bin, sizeof(bin), "%s", pm_test_fixture("go/symtest-stripped"));
	e = pm_elf_open(bin);
	if (!e)
		SKIP("fixture absent (run scripts/fixtures.sh)");
	CHECK(strlen(pm_elf_build_id(e)) > 20);
	CHECK(strchr(pm_elf_build_id(e), '/') != NULL);
	snprintf(cmd, sizeof(cmd), GO_TOOL " tool buildid '%s' 2>/dev/null", bin);
	if (access(GO_TOOL, X_OK) == 0 && cmd_value(cmd, "", want, sizeof(want)))
		CHECK_STR(pm_elf_build_id(e), want);
	pm_elf_free(e);

	/* lefthook has both notes: the GNU one wins. */
	snprintf(bin, sizeof(bin), "%s", pm_test_fixture(LEFTHOOK));
	e = pm_elf_open(bin);
	if (!e)
		return PM_PASS;
	CHECK_INT(strlen(pm_elf_build_id(e)), 40);
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", bin);
	if (access("/usr/bin/readelf", X_OK) == 0 &&
	    cmd_value(cmd, "Build ID: ", want, sizeof(want)))
		CHECK_STR(pm_elf_build_id(e), want);
	pm_elf_free(e);
	return PM_PASS;
}

/*
 * Size-0 and NOTYPE symbols extend to the next symbol (or the section end):
 * an object assembled here so the symbol table is exactly known.
 */
static int test_zero_size_symbols(void)
{
	static const char asmsrc[] =
		"\t.text\n"
		"pad: .fill 16, 1, 0x90\n"
		"\t.globl f1\n\t.type f1,@function\nf1: .fill 8, 1, 0x90\n\t.size f1, 4\n"
		"g1: .fill 8, 1, 0x90\n"
		"\t.globl f2\n\t.type f2,@function\nf2: .fill 8, 1, 0x90\n"
		"\t.data\nd1: .quad 0\n";
	char dir[] = "/tmp/pm-elfimg-XXXXXX", *cmd;
	struct pm_elf *e;
	uint64_t start = 0;
	FILE *f;
	int rc;

	if (access("/usr/bin/cc", X_OK) != 0)
		SKIP("no cc to assemble the object");
	CHECK(mkdtemp(dir) != NULL);
	cmd = xasprintf("%s/t.s", dir);
	f = fopen(cmd, "w");
	CHECK(f != NULL);
	fputs(asmsrc, f);
	fclose(f);
	free(cmd);
	cmd = xasprintf("cc -c -o %s/t.o %s/t.s", dir, dir);
	rc = system(cmd);
	free(cmd);
	CHECK_INT(rc, 0);
	cmd = xasprintf("%s/t.o", dir);
	e = pm_elf_open(cmd);
	unlink(cmd);
	free(cmd);
	cmd = xasprintf("%s/t.s", dir);
	unlink(cmd);
	free(cmd);
	rmdir(dir);
	CHECK(e != NULL);
	CHECK_INT(pm_elf_type(e), ET_REL);
	/* .text starts at 0 in an object; pad is at 0 and is not taken. */
	CHECK_STR(pm_elf_symbol(e, 16, &start), "f1");
	CHECK_INT(start, 16);
	CHECK_STR(pm_elf_symbol(e, 19, &start), "f1");
	CHECK(pm_elf_symbol(e, 20, &start) == NULL); /* past f1's size, before g1 */
	CHECK_STR(pm_elf_symbol(e, 24, &start), "g1");
	CHECK_STR(pm_elf_symbol(e, 31, &start), "g1"); /* size 0: up to f2 */
	CHECK_STR(pm_elf_symbol(e, 32, &start), "f2");
	CHECK_STR(pm_elf_symbol(e, 39, &start), "f2"); /* size 0: to the end of .text */
	CHECK(pm_elf_symbol(e, 40, &start) == NULL);
	CHECK_INT(pm_elf_symbol_addr(e, "f2"), 32);
	pm_elf_free(e);
	return PM_PASS;
}

static int test_bad_input(void)
{
	uint8_t junk[4096];
	uint64_t seed = 12345;

	errno = 0;
	CHECK(pm_elf_open("/nonexistent/file") == NULL);
	CHECK_INT(errno, ENOENT);
	CHECK(pm_elf_open("/") == NULL);
	CHECK_INT(errno, EISDIR);
	CHECK(pm_elf_open("/proc/self/status") == NULL); /* not regular-sized ELF */
	/*
	 * A path a target or a capture names may be a FIFO (open would wait for
	 * a writer for ever) or a device (opening some acts): refused unopened.
	 */
	{
		char fifo[] = "/tmp/pmuprof-test-fifo.XXXXXX";
		int tfd = mkstemp(fifo);

		CHECK(tfd >= 0);
		close(tfd);
		unlink(fifo);
		CHECK_INT(mkfifo(fifo, 0600), 0);
		alarm(10); /* a hang fails the test instead of stalling the suite */
		errno = 0;
		CHECK(pm_elf_open(fifo) == NULL);
		CHECK_INT(errno, ENOEXEC);
		alarm(0);
		unlink(fifo);
		errno = 0;
		CHECK(pm_elf_open("/dev/null") == NULL);
		CHECK_INT(errno, ENOEXEC);
		CHECK_INT(pm_open_regular("/dev/tty"), -ENOEXEC);
		CHECK_INT(pm_open_regular("/nonexistent"), -ENOENT);
	}
	for (size_t i = 0; i < sizeof(junk); i++) {
		seed = seed * 6364136223846793005ull + 1;
		junk[i] = (uint8_t)(seed >> 56);
	}
	errno = 0;
	CHECK(pm_elf_open_mem(junk, sizeof(junk)) == NULL);
	CHECK_INT(errno, ENOEXEC);
	CHECK(pm_elf_open_mem(junk, 3) == NULL);
	CHECK(pm_elf_open_mem(NULL, 0) == NULL);
	/* An ELF header and nothing else. */
	memcpy(junk, ELFMAG, SELFMAG);
	junk[EI_CLASS] = ELFCLASS64;
	junk[EI_DATA] = ELFDATA2LSB;
	junk[EI_VERSION] = EV_CURRENT;
	{
		struct pm_elf *e = pm_elf_open_mem(junk, 64);

		if (e) {
			CHECK_STR(pm_elf_build_id(e), "");
			CHECK(pm_elf_symbol(e, 0x1000, NULL) == NULL);
			pm_elf_free(e);
		}
	}
	return PM_PASS;
}

/* Damaged headers, section and program header tables: any result, no crash. */
static int test_corrupt(void)
{
	struct pm_elf *e = pm_elf_open(pm_test_fixture("go/symtest"));
	const uint8_t *orig;
	uint8_t *buf;
	size_t len;
	uint64_t seed = 0xfeedface, shoff, phoff;

	if (!e)
		SKIP("fixture absent (run scripts/fixtures.sh)");
	orig = pm_elf_bytes(e, &len);
	shoff = pm_le64(orig + 0x28);
	phoff = pm_le64(orig + 0x20);
	buf = xmalloc(len);
	for (int round = 0; round < 400; round++) {
		struct pm_elf *c;
		volatile size_t sink = 0;

		memcpy(buf, orig, len);
		for (int k = 0; k < 1 + round % 6; k++) {
			size_t at;

			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			switch (round % 4) {
			case 0: at = (size_t)(seed >> 40) % 64; break;
			case 1: at = (size_t)(phoff + (seed >> 40) % (56 * 8)); break;
			case 2: at = (size_t)(shoff + (seed >> 40) % (64 * 24)); break;
			default: at = (size_t)(seed >> 33) % len; break;
			}
			if (at < len)
				buf[at] ^= (uint8_t)(1u << ((seed >> 20) & 7));
		}
		c = pm_elf_open_mem(buf, round % 5 == 4 ? len / 2 : len);
		if (!c)
			continue;
		sink += strlen(pm_elf_build_id(c));
		for (size_t i = 0; i < pm_elf_nsections(c); i++) {
			const struct pm_elf_section *s = pm_elf_section_at(c, i);

			sink += strlen(s->name);
			if (s->data && s->size)
				sink += s->data[s->size - 1];
		}
		for (size_t i = 0; i < pm_elf_nsegments(c); i++) {
			const struct pm_elf_segment *g = pm_elf_segment_at(c, i);

			if (g->filesz)
				sink += g->data[g->filesz - 1];
		}
		for (uint64_t a = 0x401000; a < 0x490000; a += 0x1000) {
			const char *n = pm_elf_symbol(c, a, NULL);

			if (n)
				sink += strlen(n);
		}
		sink += pm_elf_symbol_addr(c, "main.main") != 0;
		(void)sink;
		pm_elf_free(c);
	}
	free(buf);
	pm_elf_free(e);
	return PM_PASS;
}

int main(int argc, char **argv)
{
	static const struct pm_test tests[] = {
		{"self", test_self},
		{"layout", test_layout},
		{"go_build_id", test_go_build_id},
		{"zero_size_symbols", test_zero_size_symbols},
		{"bad_input", test_bad_input},
		{"corrupt", test_corrupt},
		{NULL, NULL},
	};

	return pm_test_main(argc, argv, "elfimg", tests);
}
