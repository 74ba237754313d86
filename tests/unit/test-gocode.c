/*
 * Unit tests for lib/goruntime/gocode: the scans of Go machine code on
 * hand-made bytes (a call found once, none, twice; RIP-relative loads;
 * epilogues; every bound), the function table by name and the version's
 * minor, and on the fixtures (tests/go/alloc, each Go the suite builds
 * with) the addresses the scans find against the ELF symbols that name
 * them.
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "events/events.h"
#include "goruntime/gocode.h"
#include "symbols/elfimg.h"
#include "symbols/gopclntab.h"
#include "test.h"

#define VA 0x401000ULL

/* "call rel32" at @b[@at] to @to, as the code at VA would have it. */
static void put_call(uint8_t *b, size_t at, uint64_t to)
{
	int32_t rel = (int32_t)(to - (VA + at + 5));

	b[at] = 0xe8;
	memcpy(b + at + 1, &rel, 4);
}

static int t_call_once(void)
{
	uint8_t b[64];
	uint64_t to = 0;

	memset(b, 0x90, sizeof(b));
	CHECK_INT(pm_gocode_call_once(b, sizeof(b), VA, 0x400000), 0); /* none */
	put_call(b, 10, 0x400000);
	CHECK_INT(pm_gocode_call_once(b, sizeof(b), VA, 0x400000), VA + 10);
	CHECK(pm_gocode_call_at(b, sizeof(b), 10, VA, &to));
	CHECK_INT(to, 0x400000);
	CHECK(!pm_gocode_call_at(b, sizeof(b), 11, VA, &to));
	CHECK_INT(pm_gocode_call_once(b, sizeof(b), VA, 0x400001), 0); /* another callee */
	put_call(b, 20, 0x500000);				       /* forward, another */
	CHECK_INT(pm_gocode_call_once(b, sizeof(b), VA, 0x500000), VA + 20);
	CHECK_INT(pm_gocode_call_once(b, sizeof(b), VA, 0x400000), VA + 10);
	put_call(b, 40, 0x400000); /* twice: not known which one */
	CHECK_INT(pm_gocode_call_once(b, sizeof(b), VA, 0x400000), 0);
	CHECK_INT(pm_gocode_calls(b, sizeof(b), VA, 0x400000, &to), 2);
	CHECK_INT(to, VA + 40);
	CHECK_INT(pm_gocode_calls(b, sizeof(b), VA, 0x400002, &to), 0);
	CHECK_INT(pm_gocode_call_once(NULL, 0, VA, 0x400000), 0);
	return PM_PASS;
}

static int t_call_bounds(void)
{
	uint8_t b[16];
	uint64_t to = 0;

	memset(b, 0x90, sizeof(b));
	put_call(b, 11, 0x400000); /* its five bytes end at the buffer's end */
	CHECK_INT(pm_gocode_call_once(b, sizeof(b), VA, 0x400000), VA + 11);
	CHECK(pm_gocode_call_at(b, 16, 11, VA, &to));
	/* one byte short: the call is not in the bytes handed */
	CHECK_INT(pm_gocode_call_once(b, 15, VA, 0x400000), 0);
	CHECK(!pm_gocode_call_at(b, 15, 11, VA, &to));
	CHECK(!pm_gocode_call_at(b, 16, 16, VA, &to));
	CHECK(!pm_gocode_call_at(b, 16, SIZE_MAX, VA, &to));
	return PM_PASS;
}

/* A 64-bit "mov reg, [rip+disp]" (48 8b 05 disp32) at @b[@at] loading @what. */
static void put_mov(uint8_t *b, size_t at, bool wide, uint64_t what)
{
	size_t o = wide ? at + 1 : at;
	int32_t d = (int32_t)(what - (VA + o + 6));

	if (wide)
		b[at] = 0x48;
	b[o] = 0x8b;
	b[o + 1] = 0x05;
	memcpy(b + o + 2, &d, 4);
}

static int t_rip_mov(void)
{
	uint8_t b[64];
	uint64_t at = 0;

	memset(b, 0x90, sizeof(b));
	CHECK_INT(pm_gocode_mov_once(b, sizeof(b), VA, true), 0);
	put_mov(b, 4, true, 0x600000);
	CHECK(pm_gocode_rip_at(b, sizeof(b), 5, VA, &at));
	CHECK_INT(at, 0x600000);
	CHECK(!pm_gocode_rip_at(b, sizeof(b), 4, VA, &at)); /* the REX: no ModRM after it */
	CHECK_INT(pm_gocode_mov_once(b, sizeof(b), VA, true), 0x600000);
	CHECK_INT(pm_gocode_mov_once(b, sizeof(b), VA, false), 0); /* not 32-bit */
	put_mov(b, 20, true, 0x600000); /* the same again: still one address */
	CHECK_INT(pm_gocode_mov_once(b, sizeof(b), VA, true), 0x600000);
	put_mov(b, 40, false, 0x700000);
	CHECK_INT(pm_gocode_mov_once(b, sizeof(b), VA, false), 0x700000);
	put_mov(b, 30, true, 0x600008); /* another: none known */
	CHECK_INT(pm_gocode_mov_once(b, sizeof(b), VA, true), 0);
	/* a ModRM other than disp32(RIP): mov rax, [rbp+disp8] */
	memset(b, 0x90, sizeof(b));
	b[0] = 0x48, b[1] = 0x8b, b[2] = 0x45, b[3] = 0x08;
	CHECK_INT(pm_gocode_mov_once(b, sizeof(b), VA, true), 0);
	/* bounds: the last byte of its displacement cut off */
	memset(b, 0x90, sizeof(b));
	put_mov(b, 0, true, 0x600000);
	CHECK_INT(pm_gocode_mov_once(b, 7, VA, true), 0x600000);
	CHECK_INT(pm_gocode_mov_once(b, 6, VA, true), 0);
	CHECK(!pm_gocode_rip_at(b, 6, 1, VA, &at));
	return PM_PASS;
}

static int t_slice_var(void)
{
	uint8_t b[64];

	memset(b, 0x90, sizeof(b));
	put_mov(b, 0, true, 0x600010); /* the capacity */
	put_mov(b, 7, true, 0x600000); /* the pointer */
	CHECK_INT(pm_gocode_slice_var(b, sizeof(b), VA), 0);
	put_mov(b, 14, true, 0x600008); /* the length */
	CHECK_INT(pm_gocode_slice_var(b, sizeof(b), VA), 0x600000);
	CHECK_INT(pm_gocode_slice_var(b, 20, VA), 0); /* the length not in the bytes */
	CHECK_INT(pm_gocode_slice_var(NULL, 0, VA), 0);
	return PM_PASS;
}

static int t_epilogue(void)
{
	static const uint8_t pop[] = { 0x48, 0x83, 0xc4, 0x18, 0x5d, 0xc3 };
	static const uint8_t nopop[] = { 0x48, 0x83, 0xc4, 0x18, 0xc3 };
	static const uint8_t imm32[] = { 0x48, 0x81, 0xc4, 0x00, 0x01, 0x00, 0x00, 0x5d, 0xc3 };
	static const uint8_t sub[] = { 0x48, 0x83, 0xec, 0x18, 0x5d, 0xc3 };

	CHECK_INT(pm_gocode_epilogue_len(pop, sizeof(pop)), 6);
	CHECK_INT(pm_gocode_epilogue_len(nopop, sizeof(nopop)), 5);
	CHECK_INT(pm_gocode_epilogue_len(imm32, sizeof(imm32)), 9);
	CHECK_INT(pm_gocode_epilogue_len(sub, sizeof(sub)), 0);	    /* sub rsp: a prologue */
	CHECK_INT(pm_gocode_epilogue_len(pop, sizeof(pop) - 1), 0); /* its ret cut off */
	CHECK_INT(pm_gocode_epilogue_len(imm32, 6), 0);
	return PM_PASS;
}

static int t_names_versions(void)
{
	CHECK_INT(pm_go_version_minor("go1.19.8"), 19);
	CHECK_INT(pm_go_version_minor("go1.21rc2"), 21);
	CHECK_INT(pm_go_version_minor("go1.27"), 27);
	CHECK_INT(pm_go_version_minor("go1."), -1);
	CHECK_INT(pm_go_version_minor("go2.1"), -1);
	CHECK_INT(pm_go_version_minor("devel go1.22-abc"), -1);
	CHECK_INT(pm_go_version_minor(""), -1);
	CHECK_INT(pm_go_version_minor(NULL), -1);
	CHECK(pm_go_addr_ok(PM_NULL_PAGE) && pm_go_addr_ok(PM_USER_END_LA57 - 1));
	CHECK(!pm_go_addr_ok(0) && !pm_go_addr_ok(PM_USER_END_LA57));
	CHECK(pm_go_ptr_ok(0x7f0000001000ULL) && !pm_go_ptr_ok(0x7f0000001004ULL));
	return PM_PASS;
}

/* The fixture's addresses the scans find, against the symbols that name them. */
static int check_fixture(const char *rel)
{
	char path[4096], text[4200], err[600] = "";
	struct pm_elf *e = NULL;
	struct pm_go *go = NULL;
	struct pm_evt_spec sp;
	const char *ls;
	const uint8_t *b;
	uint64_t entry = 0, site, ex;
	long fi, ci;
	int minor;
	size_t len = 0;
	int64_t probe;

	snprintf(path, sizeof(path), "%s", pm_test_fixture(rel));
	if (access(path, R_OK) != 0)
		return PM_SKIP;
	CHECK_INT(pm_gocode_open(path, 1000, &e, &go, &minor, err, sizeof(err)), -ENOTSUP);
	CHECK(!e && !go && strstr(err, "is not known"));
	CHECK_INT(pm_gocode_open(path, 17, &e, &go, &minor, err, sizeof(err)), 0);
	CHECK(minor >= 19);
	CHECK_INT(minor, pm_go_version_minor(pm_go_version(go)));
	fi = pm_go_func_by_name(go, "runtime.allgadd");
	CHECK(fi >= 0);
	CHECK_STR(pm_go_func_name(go, fi), "runtime.allgadd");
	CHECK_INT(pm_go_func_end(go, fi), pm_go_func_entry(go, fi + 1));
	CHECK_INT(pm_go_func_end(go, (long)pm_go_nfuncs(go) - 1), pm_go_text_end(go));
	CHECK_INT(pm_go_func_end(go, (long)pm_go_nfuncs(go)), 0);
	CHECK_INT(pm_go_func_by_name(go, "main.noSuchFunction"), -1);
	b = pm_gocode_func(e, go, "runtime.allgadd", &entry, &len);
	CHECK(b && entry == pm_go_func_entry(go, fi));
	CHECK_INT(len, pm_go_func_end(go, fi) - entry);
	CHECK_INT(pm_gocode_slice_var(b, len, entry), pm_elf_symbol_addr(e, "runtime.allgs"));
	CHECK(pm_elf_symbol_addr(e, "runtime.allgs") != 0);
	CHECK(!pm_gocode_bytes(e, go, fi, len - 1, &len)); /* longer than allowed */
	b = pm_gocode_func(e, go, "runtime.mProf_FlushLocked", &entry, &len);
	CHECK_INT(pm_gocode_mov_once(b, len, entry, true),
		  pm_elf_symbol_addr(e, "runtime.mbuckets"));
	b = pm_gocode_func(e, go, "runtime.mProf_Free", &entry, &len);
	CHECK_INT(pm_gocode_mov_once(b, len, entry, false),
		  pm_elf_symbol_addr(e, "runtime.mProfCycle"));
	/* newproc's closure calls runqput once (the probe of --creators) */
	fi = pm_go_func_by_name(go, "runtime.newproc.func1");
	ci = pm_go_func_by_name(go, "runtime.runqput");
	CHECK(fi >= 0 && ci >= 0);
	b = pm_gocode_bytes(e, go, fi, PM_GO_MAX_FUNC_LEN, &len);
	entry = pm_go_func_entry(go, fi);
	site = pm_gocode_call_once(b, len, entry, pm_go_func_entry(go, ci));
	CHECK(site > entry && site < entry + len && b[site - entry] == 0xe8);
	/* the probe there: on the call, or on the 5-byte NOP right before it */
	memset(&sp, 0, sizeof(sp));
	CHECK_INT(pm_gocode_probe_before_call(path, "runtime.newproc.func1", "runtime.runqput", &sp,
					      text, sizeof(text), err, sizeof(err)),
		  0);
	CHECK_STR(text, pm_go_version(go));
	probe = pm_elf_offset_to_vaddr(e, sp.config2);
	CHECK(probe == (int64_t)site || probe == (int64_t)site - 5);
	CHECK_INT(pm_elf_vaddr_to_offset(e, (uint64_t)probe), sp.config2);
	CHECK_INT(pm_gocode_probe_before_call(path, "runtime.schedule", "runtime.execute", &sp,
					      text, sizeof(text), err, sizeof(err)),
		  -ENOENT);
	CHECK(strstr(err, "calls of runtime.execute, not one"));
	/* lockSlow's one epilogue, past its entry probe as --locks places it */
	ls = "sync.(*Mutex).lockSlow";
	if (minor >= 24)
		ls = "internal/sync.(*Mutex).lockSlow";
	fi = pm_go_func_by_name(go, ls);
	CHECK(fi >= 0);
	entry = pm_go_func_entry(go, fi);
	snprintf(text, sizeof(text), "uprobe:%s:%s", path, ls);
	memset(&sp, 0, sizeof(sp));
	CHECK_INT(pm_evt_parse(text, &sp, err, sizeof(err)), 0);
	probe = pm_elf_offset_to_vaddr(e, sp.config2);
	CHECK(probe > (int64_t)entry);
	ex = pm_gocode_one_epilogue(e, entry, (uint64_t)probe);
	CHECK(ex > (uint64_t)probe && pm_go_find(go, ex) == fi);
	b = pm_elf_vaddr_bytes(e, ex, 16);
	CHECK(b && pm_gocode_epilogue_len(b, 16) > 0);
	CHECK_INT(pm_gocode_one_epilogue(e, entry, entry), 0); /* no stack check before it */
	pm_go_free(go);
	pm_elf_free(e);
	return PM_PASS;
}

static int t_fixtures(void)
{
	static const char *const rel[] = { "go/alloc", "go126/alloc", "go127/alloc" };
	int seen = 0;

	for (size_t i = 0; i < PM_ARRAY_SIZE(rel); i++) {
		int rc = check_fixture(rel[i]);

		if (rc == PM_FAIL)
			fprintf(stderr, "  in %s\n", rel[i]);
		if (rc == PM_FAIL)
			return PM_FAIL;
		seen += rc == PM_PASS;
	}
	if (!seen)
		SKIP("fixtures absent (run scripts/fixtures.sh)");
	return PM_PASS;
}

static int t_not_go(void)
{
	struct pm_elf *e = (struct pm_elf *)1;
	struct pm_go *go = (struct pm_go *)1;
	char err[300] = "";
	int minor;

	CHECK_INT(pm_gocode_open("/nonexistent/pmuprof", 17, &e, &go, &minor, err, sizeof(err)),
		  -ENOEXEC);
	CHECK(!e && !go);
	CHECK_STR(err, "/nonexistent/pmuprof is not a Go program for x86-64");
	if (access("/bin/sh", R_OK) == 0) {
		e = (struct pm_elf *)1;
		go = (struct pm_go *)1;
		CHECK_INT(pm_gocode_open("/bin/sh", -1, &e, &go, &minor, err, sizeof(err)), -ENOEXEC);
		CHECK(!e && !go);
	}
	pm_gocode_runtime_structs(NULL, NULL, NULL); /* no DWARF: nothing walked */
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "call_once", t_call_once },
	{ "call_bounds", t_call_bounds },
	{ "rip_mov", t_rip_mov },
	{ "slice_var", t_slice_var },
	{ "epilogue", t_epilogue },
	{ "names_versions", t_names_versions },
	{ "fixtures", t_fixtures },
	{ "not_go", t_not_go },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "gocode", tests);
}
