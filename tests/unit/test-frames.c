/*
 * Symbolization against ground truth on real binaries: for a sample of PCs
 * in every Go function, pm_sym_frames' physical function and innermost
 * file:line must equal what `go tool addr2line` (Go 1.19) says, and the
 * innermost file:line what the binary's own DWARF line table says where it
 * has one.  Binaries: the Go 1.19 fixtures, stripped and not, amd64 and
 * arm64, and a PIE build of one of them.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/elfimg.h"
#include "symbols/gopclntab.h"
#include "symbols/symtab.h"
#include "test.h"
#include "base/util.h"

#define GO "/usr/lib/go-1.19/bin/go"
#define NPCS 600

struct sample {
	uint64_t pc;
	char func[512], fileline[1280];
};

/* Up to NPCS pcs spread over the Go functions of @path, each inside its function. */
static size_t pick_pcs(const char *path, struct sample *out)
{
	struct pm_elf *e = pm_elf_open(path);
	struct pm_go *go = NULL;
	size_t n = 0, nf;

	if (!e || pm_go_open(&go, e) != 0) {
		pm_elf_free(e);
		return 0;
	}
	nf = pm_go_nfuncs(go);
	for (size_t i = 0; i + 1 < nf && n < NPCS; i += nf / NPCS + 1) {
		uint64_t a = pm_go_func_entry(go, (long)i), b = pm_go_func_entry(go, (long)i + 1);
		uint64_t pc;

		if (b <= a)
			continue;
		pc = a + (i * 13) % (b - a);
		if (pm_go_find(go, pc) != (long)i)
			continue;
		out[n++].pc = pc;
	}
	pm_go_free(go);
	pm_elf_free(e);
	return n;
}

/* Run go tool addr2line on the pcs; fills func/fileline.  0 or -1. */
static int addr2line(const char *bin, struct sample *smp, size_t n)
{
	char in[] = "/tmp/pmuprof-a2l-XXXXXX", *cmd, fl[1024];
	int fd = mkstemp(in);
	FILE *f, *p;
	size_t i;

	if (fd < 0)
		return -1;
	f = fdopen(fd, "w");
	for (i = 0; i < n; i++)
		fprintf(f, "0x%" PRIx64 "\n", smp[i].pc);
	fclose(f);
	cmd = xasprintf("GOCACHE=/tmp/pmuprof-gocache " GO " tool addr2line '%s' < %s 2>/dev/null",
			bin, in);
	p = popen(cmd, "r");
	free(cmd);
	for (i = 0; p && i < n; i++) {
		if (!fgets(smp[i].func, sizeof(smp[i].func), p) || !fgets(fl, sizeof(fl), p))
			break;
		smp[i].func[strcspn(smp[i].func, "\n")] = '\0';
		fl[strcspn(fl, "\n")] = '\0';
		snprintf(smp[i].fileline, sizeof(smp[i].fileline), "%s", fl);
	}
	if (p)
		pclose(p);
	unlink(in);
	return i == n ? 0 : -1;
}

/*
 * The DWARF line row at @pc.  Go writes no .debug_aranges, so instead of
 * dwarf_addrdie every unit's line table is asked.
 */
static bool dwarf_line_at(Dwarf *dw, uint64_t pc, Dwarf_Die *cu, Dwarf_Line **ln)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	if (dwarf_addrdie(dw, pc, cu) && (*ln = dwarf_getsrc_die(cu, pc)))
		return true;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Addr lo, hi;

		if (dwarf_offdie(dw, off + hsize, cu) && dwarf_lowpc(cu, &lo) == 0 &&
		    dwarf_highpc(cu, &hi) == 0 && pc >= lo && pc < hi &&
		    (*ln = dwarf_getsrc_die(cu, pc)))
			return true;
		off = next;
	}
	return false;
}

/* One binary: pmuprof vs addr2line, and vs DWARF when it has lines. */
static int check_bin(const char *path, const char *label, bool a2l)
{
	static struct sample smp[NPCS];
	struct pm_sym *s;
	struct pm_frame fr[32];
	size_t n, ok = 0, dok = 0, dn = 0;
	Dwarf *dw = NULL;
	struct pm_elf *e;
	int fd = -1;

	if (access(path, R_OK) != 0)
		SKIP("fixture absent: %s (run scripts/fixtures.sh)", path);
	if (access(GO, X_OK) != 0)
		SKIP("no Go 1.19 toolchain");
	n = pick_pcs(path, smp);
	CHECK(n > 100);
	if (a2l && addr2line(path, smp, n) != 0)
		SKIP("go tool addr2line failed on %s", path);
	e = pm_elf_open(path);
	CHECK(e != NULL);
	if (!a2l) {
		/* no addr2line (it cannot read Go 1.19 PIEs): the ELF .symtab names the function */
		for (size_t i = 0; i < n; i++) {
			const char *nm = pm_elf_symbol(e, smp[i].pc, NULL);
			size_t l;

			/* padding past a symbol's size is the previous function's in gopclntab */
			if (!nm) {
				smp[i--] = smp[--n];
				continue;
			}
			snprintf(smp[i].func, sizeof(smp[i].func), "%s", nm);
			/* the linker's ABI0 wrappers' suffix is not part of the Go name */
			l = strlen(smp[i].func);
			if (l > 5 && strcmp(smp[i].func + l - 5, ".abi0") == 0)
				smp[i].func[l - 5] = '\0';
			smp[i].fileline[0] = '\0';
		}
	}
	s = pm_sym_open(path);
	CHECK(s != NULL);
	fd = open(path, O_RDONLY);
	if (fd >= 0)
		dw = dwarf_begin(fd, DWARF_C_READ);
	for (size_t i = 0; i < n; i++) {
		size_t nf = pm_sym_frames(s, smp[i].pc, fr, 32);
		char mine[1100];

		if (nf == 0) {
			fprintf(stderr, "  %s: 0x%" PRIx64 ": no frames\n", label, smp[i].pc);
			continue;
		}
		snprintf(mine, sizeof(mine), "%s:%d", fr[0].file, fr[0].line);
		/* addr2line prints a pc without line information as ":-1" */
		if (strcmp(smp[i].fileline, ":-1") == 0 && fr[0].line == 0 && !fr[0].file[0])
			snprintf(mine, sizeof(mine), ":-1");
		if (!a2l)
			snprintf(smp[i].fileline, sizeof(smp[i].fileline), "%s", mine);
		if (strcmp(fr[nf - 1].func, smp[i].func) == 0 && strcmp(mine, smp[i].fileline) == 0)
			ok++;
		else if (n - ok < 5 + (n - i))
			fprintf(stderr, "  %s: 0x%" PRIx64 ": pmuprof %s %s, addr2line %s %s\n", label,
				smp[i].pc, fr[nf - 1].func, mine, smp[i].func, smp[i].fileline);
		if (dw) {
			Dwarf_Die cu;
			Dwarf_Line *ln;
			int line;

			if (dwarf_line_at(dw, smp[i].pc, &cu, &ln) &&
			    dwarf_lineno(ln, &line) == 0 && dwarf_linesrc(ln, NULL, NULL)) {
				dn++;
				if (line == fr[0].line &&
				    strcmp(dwarf_linesrc(ln, NULL, NULL), fr[0].file) == 0)
					dok++;
			}
		}
	}
	printf("# %s: %zu/%zu pcs agree with %s", label, ok, n,
	       a2l ? "go tool addr2line" : "the ELF symbol table");
	if (dn)
		printf(", %zu/%zu with DWARF", dok, dn);
	printf("\n");
	if (dw)
		dwarf_end(dw);
	if (fd >= 0)
		close(fd);
	pm_sym_free(s);
	pm_elf_free(e);
	CHECK_INT(ok, n);
	CHECK(dok == dn);
	return PM_PASS;
}

static int test_symtest(void)
{
	return check_bin(pm_test_fixture("go/symtest"), "symtest", true);
}

static int test_symtest_stripped(void)
{
	return check_bin(pm_test_fixture("go/symtest-stripped"), "symtest-stripped", true);
}

static int test_symtest_arm64(void)
{
	return check_bin(pm_test_fixture("go/symtest-arm64"), "symtest-arm64", true);
}

static int test_inline(void)
{
	return check_bin(pm_test_fixture("go/inline"), "inline", true);
}

static int test_cgo(void)
{
	return check_bin(pm_test_fixture("go/cgo"), "cgo", true);
}

/* A PIE build (ET_DYN, vaddrs from 0) of the inline fixture, built here. */
static int test_pie(void)
{
	char out[] = "/tmp/pmuprof-pie-XXXXXX", *cmd, *bin;
	int rc;

	if (access(GO, X_OK) != 0 || access("tests/go/inline/main.go", R_OK) != 0)
		SKIP("no Go 1.19 toolchain or fixture source");
	if (!mkdtemp(out))
		return PM_FAIL;
	bin = xasprintf("%s/inline-pie", out);
	cmd = xasprintf("cd tests/go/inline && GOCACHE=/tmp/pmuprof-gocache GO111MODULE=off " GO
			" build -buildmode=pie -o %s . 2>&1",
			bin);
	rc = system(cmd);
	free(cmd);
	if (rc != 0) {
		free(bin);
		SKIP("cannot build a PIE");
	}
	{
		struct pm_sym *s = pm_sym_open(bin);
		CHECK(s != NULL);
		CHECK(pm_sym_is_pie(s));
		pm_sym_free(s);
	}
	rc = check_bin(bin, "inline-pie", false);
	unlink(bin);
	rmdir(out);
	free(bin);
	return rc;
}

static const struct pm_test tests[] = {
	{ "addr2line-symtest", test_symtest },
	{ "addr2line-symtest-stripped", test_symtest_stripped },
	{ "addr2line-symtest-arm64", test_symtest_arm64 },
	{ "addr2line-inline", test_inline },
	{ "addr2line-cgo", test_cgo },
	{ "addr2line-pie", test_pie },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "frames", tests);
}
