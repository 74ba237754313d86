/*
 * evuprobe: uprobe:BINARY:SYMBOL -> the binary's path and the file offset
 * of the symbol's entry (Go function table or ELF symbols).
 */
#include "events/evuprobe.h"

#include "symbols/elfimg.h"
#include "events/evnames.h"
#include "symbols/gopclntab.h"
#include "base/path.h"
#include "base/util.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- uprobes ---- */

/*
 * Go names as written by a user vs. as in gopclntab: Go 1.18+ tables spell
 * every instantiation "[...]" ("main.Map[...]", "main.(*List[...]).Push"),
 * so type arguments in brackets compare equal to "...".  Exact first.
 */
static void generic_key(const char *s, char *out, size_t len)
{
	size_t o = 0;
	int depth = 0;

	for (; *s && o + 5 < len; s++) {
		if (*s == '[') {
			if (depth++ == 0) {
				memcpy(out + o, "[...]", 5);
				o += 5;
			}
		} else if (*s == ']') {
			if (depth > 0)
				depth--;
		} else if (!depth) {
			out[o++] = *s;
		}
	}
	out[o] = 0;
}

const char pm_evt_retprobe_why[] =
	"return probes are refused: a uretprobe replaces the return address on the "
	"stack, which Go's stack copying and traceback do not expect (crashes, broken "
	"stacks); probe the function's entry with uprobe:BINARY:SYMBOL";

/* "did you mean" for a symbol: Go names ending in ".SYM" or holding it, else the nearest. */
static void sym_unknown(const char *bin, const char *sym, struct pm_go *go, char *err,
			size_t errlen)
{
	struct suggest sg;
	char list[600], tail[300];
	size_t n = go ? pm_go_nfuncs(go) : 0, slen = strlen(sym);

	pm_evt_suggest_init(&sg, sym);
	snprintf(tail, sizeof(tail), ".%s", sym);
	for (size_t i = 0; i < n && i < PM_GO_MAX_FUNCS; i++) {
		const char *f = pm_go_func_name(go, (long)i);
		size_t fl;

		if (!f)
			continue;
		fl = strlen(f);
		if (fl > strlen(tail) && !strcmp(f + fl - strlen(tail), tail))
			pm_evt_suggest_add_dist(&sg, f, 0);
		else if (slen >= 4 && strstr(f, sym))
			pm_evt_suggest_add_dist(&sg, f, 1);
		else if (fl <= NAME_MAX_LEN)
			pm_evt_suggest_add(&sg, f);
	}
	if (sg.n)
		pm_seterr(err, errlen, "no function '%s' in %s (did you mean %s?)", sym, bin,
		       pm_evt_suggest_list(&sg, list, sizeof(list)));
	else
		pm_seterr(err, errlen, "no function '%s' in %s (%s)", sym, bin,
		       go ? "neither in its Go function table nor its ELF symbols"
			  : "not in its ELF symbol tables");
}

/* @rest is "BINARY:SYMBOL" (after "uprobe:"). */
/*
 * Length of the stack-bound check that opens a Go function on amd64 (Go
 * 1.17+, g in R14), 0 when the entry does not start with one:
 *
 *   [lea r12, [rsp-N]]  cmp rsp|r12, [r14+0x10]  jbe morestack
 *
 * A call that grows the stack runs this check twice (morestack re-enters
 * the function from its entry), so a probe on the entry fires twice for
 * one call; right after the jbe it fires once.  The frame is not set up
 * there yet either (sp delta 0), so the unwinder sees the entry's stack.
 */
static size_t go_stack_check_len(const uint8_t *b)
{
	size_t i = 0;

	if (!b)
		return 0;
	if (b[0] == 0x4c && b[1] == 0x8d && b[2] == 0x64 && b[3] == 0x24)
		i = 5; /* lea r12, [rsp+disp8] */
	else if (b[0] == 0x4c && b[1] == 0x8d && b[2] == 0xa4 && b[3] == 0x24)
		i = 8; /* lea r12, [rsp+disp32] */
	if (b[i + 1] != 0x3b || b[i + 2] != 0x66 || b[i + 3] != 0x10 ||
	    b[i] != (i ? 0x4d : 0x49))
		return 0; /* cmp rsp|r12, [r14+0x10] */
	i += 4;
	if (b[i] == 0x76)
		return i + 2; /* jbe rel8 */
	if (b[i] == 0x0f && b[i + 1] == 0x86)
		return i + 6; /* jbe rel32 */
	return 0;
}

int pm_evt_parse_uprobe(const char *text, const char *rest, struct pm_evt_spec *out, char *err,
		 size_t errlen)
{
	const char *colon = strrchr(rest, ':');
	char bin[4096], sym[256], key[300], fkey[300];
	char *real = NULL;
	struct pm_elf *e = NULL;
	struct pm_go *go = NULL;
	uint64_t vaddr = 0;
	int64_t off;
	size_t bl, sl;
	int rc = -EINVAL;

	if (!colon || colon == rest || !colon[1]) {
		pm_seterr(err, errlen, "bad uprobe '%s' (expected uprobe:BINARY:SYMBOL)", text);
		return -EINVAL;
	}
	bl = (size_t)(colon - rest);
	sl = strlen(colon + 1);
	if (bl >= sizeof(bin) || sl >= sizeof(sym)) {
		pm_seterr(err, errlen, "uprobe binary or symbol name too long in '%.60s...'", text);
		return -EINVAL;
	}
	memcpy(bin, rest, bl);
	bin[bl] = 0;
	memcpy(sym, colon + 1, sl + 1);
	if (sl > 7 && !strcmp(sym + sl - 7, "%return")) {
		pm_seterr(err, errlen, "cannot probe '%s': %s", text, pm_evt_retprobe_why);
		return -EINVAL;
	}
	real = strchr(bin, '/') ? realpath(bin, NULL) : pm_path_resolve(bin);
	if (!real) {
		pm_seterr(err, errlen, "cannot probe '%s': binary '%s': %s", text, bin,
		       strerror(errno ? errno : ENOENT));
		return -EINVAL;
	}
	if (strlen(real) >= sizeof(out->path)) {
		pm_seterr(err, errlen, "cannot probe '%s': path too long", text);
		goto out;
	}
	e = pm_elf_open(real);
	if (!e) {
		pm_seterr(err, errlen, "cannot probe '%s': %s: %s", text, real,
		       errno == ENOEXEC ? "not an ELF file" : strerror(errno));
		goto out;
	}
	if (pm_go_open(&go, e) == 0) {
		size_t n = pm_go_nfuncs(go);
		long hit = pm_go_func_by_name(go, sym);

		generic_key(sym, key, sizeof(key));
		for (size_t i = 0; i < n && i < PM_GO_MAX_FUNCS && hit < 0; i++) {
			const char *f = pm_go_func_name(go, (long)i);

			if (!f || !strchr(f, '['))
				continue;
			generic_key(f, fkey, sizeof(fkey));
			if (!strcmp(fkey, key))
				hit = (long)i;
		}
		if (hit >= 0)
			vaddr = pm_go_func_entry(go, hit);
		if (vaddr && pm_elf_machine(e) == EM_X86_64)
			vaddr += go_stack_check_len(pm_elf_vaddr_bytes(e, vaddr, 32));
	} else {
		go = NULL;
	}
	if (!vaddr)
		vaddr = pm_elf_symbol_addr(e, sym);
	if (!vaddr) {
		sym_unknown(bin, sym, go, err, errlen);
		goto out;
	}
	off = pm_elf_vaddr_to_offset(e, vaddr);
	if (off < 0) {
		pm_seterr(err, errlen, "cannot probe '%s': address 0x%llx of '%s' is not in the file",
		       text, (unsigned long long)vaddr, sym);
		goto out;
	}
	snprintf(out->path, sizeof(out->path), "%s", real);
	snprintf(out->symbol, sizeof(out->symbol), "%s", sym);
	snprintf(out->name, sizeof(out->name), "uprobe:%.56s", sym);
	out->config2 = (uint64_t)off;
	rc = 0;
out:
	pm_go_free(go);
	pm_elf_free(e);
	free(real);
	return rc;
}
