/* gocode: the Go runtime's machine code and layout read from its binary (gocode.h). */
#include "goruntime/gocode.h"

#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "events/events.h"
#include "symbols/elfimg.h"
#include "symbols/gopclntab.h"

int pm_gocode_open(const char *path, int min_minor, struct pm_elf **e, struct pm_go **go,
		   int *minor, char *err, size_t errlen)
{
	const char *ver;

	*go = NULL;
	*e = pm_elf_open(path);
	if (!*e || pm_elf_machine(*e) != EM_X86_64 || pm_go_open(go, *e) != 0) {
		pm_seterr(err, errlen, "%s is not a Go program for x86-64", path);
		pm_elf_free(*e);
		*e = NULL;
		return -ENOEXEC;
	}
	ver = pm_go_version(*go);
	*minor = pm_go_version_minor(ver);
	if (*minor < min_minor) {
		pm_seterr(err, errlen, "Go version '%s' of %s is not known", ver ? ver : "", path);
		pm_go_free(*go);
		pm_elf_free(*e);
		*go = NULL;
		*e = NULL;
		return -ENOTSUP;
	}
	return 0;
}

const uint8_t *pm_gocode_bytes(const struct pm_elf *e, const struct pm_go *go, long idx, size_t max,
			       size_t *len)
{
	uint64_t entry = pm_go_func_entry(go, idx), end = pm_go_func_end(go, idx);

	if (end <= entry || end - entry > max)
		return NULL;
	*len = (size_t)(end - entry);
	return pm_elf_vaddr_bytes(e, entry, *len);
}

const uint8_t *pm_gocode_func(const struct pm_elf *e, const struct pm_go *go, const char *name,
			      uint64_t *entry, size_t *len)
{
	long idx = pm_go_func_by_name(go, name);

	if (idx < 0)
		return NULL;
	*entry = pm_go_func_entry(go, idx);
	return pm_gocode_bytes(e, go, idx, PM_GO_MAX_FUNC_LEN, len);
}

/* ---- calls ---- */

bool pm_gocode_call_at(const uint8_t *b, size_t len, size_t i, uint64_t va, uint64_t *to)
{
	if (i >= len || len - i < 5 || b[i] != 0xe8)
		return false;
	*to = va + i + 5 + (uint64_t)(int64_t)(int32_t)pm_le32(b + i + 1);
	return true;
}

unsigned pm_gocode_calls(const uint8_t *b, size_t len, uint64_t va, uint64_t callee, uint64_t *last)
{
	uint64_t to;
	unsigned hits = 0;

	for (size_t i = 0; b && i + 5 <= len; i++) {
		if (pm_gocode_call_at(b, len, i, va, &to) && to == callee) {
			*last = va + i;
			hits++;
		}
	}
	return hits;
}

uint64_t pm_gocode_call_once(const uint8_t *b, size_t len, uint64_t va, uint64_t callee)
{
	uint64_t site = 0;

	return pm_gocode_calls(b, len, va, callee, &site) == 1 ? site : 0;
}

/* ---- RIP-relative operands ---- */

bool pm_gocode_rip_at(const uint8_t *b, size_t len, size_t op, uint64_t va, uint64_t *at)
{
	if (op >= len || len - op < 6 || (b[op + 1] & 0xc7) != 0x05)
		return false;
	*at = va + op + 6 + (uint64_t)(int64_t)(int32_t)pm_le32(b + op + 2);
	return true;
}

uint64_t pm_gocode_mov_once(const uint8_t *b, size_t len, uint64_t va, bool wide)
{
	uint64_t found = 0, at;

	for (size_t i = 0; b && i + 7 <= len; i++) {
		bool rex = (b[i] & 0xf0) == 0x40, w = rex && (b[i] & 0x08);
		size_t o = rex ? i + 1 : i;

		if (w != wide || b[o] != 0x8b || !pm_gocode_rip_at(b, len, o, va, &at))
			continue;
		if (!rex && i > 0 && (b[i - 1] & 0xf0) == 0x40)
			continue; /* the opcode of an instruction with a REX prefix seen at i - 1 */
		if (found && found != at)
			return 0;
		found = at;
	}
	return found;
}

uint64_t pm_gocode_slice_var(const uint8_t *b, size_t len, uint64_t va)
{
	uint64_t at[64];
	size_t nat = 0;

	for (size_t i = 0; b && i + 7 <= len && nat < PM_ARRAY_SIZE(at); i++) {
		uint8_t op = b[i + 1];

		if ((b[i] & 0xf8) != 0x48 || (op != 0x8b && op != 0x89 && op != 0x8d &&
					      op != 0x3b && op != 0x39 && op != 0x03 && op != 0x2b))
			continue;
		if (pm_gocode_rip_at(b, len, i + 1, va, &at[nat]))
			nat++;
	}
	for (size_t i = 0; i < nat; i++) {
		bool p8 = false, p16 = false;

		for (size_t j = 0; j < nat; j++) {
			p8 = p8 || at[j] == at[i] + 8;
			p16 = p16 || at[j] == at[i] + 16;
		}
		if (p8 && p16 && at[i])
			return at[i];
	}
	return 0;
}

/* ---- returns ---- */

size_t pm_gocode_epilogue_len(const uint8_t *b, size_t left)
{
	size_t i;

	if (left >= 4 && b[0] == 0x48 && b[1] == 0x83 && b[2] == 0xc4)
		i = 4;
	else if (left >= 7 && b[0] == 0x48 && b[1] == 0x81 && b[2] == 0xc4)
		i = 7;
	else
		return 0;
	if (i < left && b[i] == 0x5d)
		i++;
	return i < left && b[i] == 0xc3 ? i + 1 : 0;
}

uint64_t pm_gocode_one_epilogue(const struct pm_elf *e, uint64_t entry, uint64_t probe_va)
{
	const uint8_t *b;
	uint64_t target, hit = 0;
	unsigned hits = 0;

	if (probe_va < entry + 6 || probe_va - entry > 32)
		return 0;
	b = pm_elf_vaddr_bytes(e, probe_va - 6, 6);
	if (!b)
		return 0;
	if (b[0] == 0x0f && b[1] == 0x86) /* jbe rel32 */
		target = probe_va + (uint64_t)(int64_t)(int32_t)pm_le32(b + 2);
	else if (b[4] == 0x76) /* jbe rel8 */
		target = probe_va + (uint64_t)(int64_t)(int8_t)b[5];
	else
		return 0;
	if (target <= probe_va || target - probe_va > PM_GO_MAX_FUNC_LEN)
		return 0;
	b = pm_elf_vaddr_bytes(e, entry, (size_t)(target - entry));
	if (!b || b[target - entry - 1] != 0xc3)
		return 0;
	for (uint64_t i = probe_va - entry; i < target - entry; i++) {
		size_t l = pm_gocode_epilogue_len(b + i, (size_t)(target - entry - i));

		if (l && entry + i + l == target)
			hit = entry + i;
		hits += l != 0;
	}
	return hits == 1 ? hit : 0;
}

/* ---- probes ---- */

/*
 * The probe's address for the CALL at @call in function @fi: the 5-byte NOP
 * right before it where the compiler put one (aligning the call), else the
 * CALL.  Neither is single-stepped (the kernel emulates both), and since
 * Linux 6.18 a probe on that NOP becomes a call into the kernel, no trap.
 */
static uint64_t call_probe_site(const struct pm_elf *e, const struct pm_go *go, long fi,
				uint64_t call)
{
	static const uint8_t nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	const uint8_t *b = pm_elf_vaddr_bytes(e, call - 5, 5);

	if (b && !memcmp(b, nop5, 5) && pm_go_find(go, call - 5) == fi)
		return call - 5;
	return call;
}

/* The bytes of a caller scanned for its call at most: the runtime's callers probed are short. */
#define CALL_SCAN 4096

int pm_gocode_probe_before_call(const char *path, const char *caller, const char *callee,
				struct pm_evt_spec *out, char *version, size_t vlen, char *err,
				size_t errlen)
{
	struct pm_elf *e = pm_elf_open(path);
	struct pm_go *go = NULL;
	uint64_t from, to, site = 0;
	const uint8_t *b;
	unsigned hits;
	size_t n = 0;
	long fi, ti;
	int64_t off;
	int rc = -ENOENT;

	if (!e) {
		pm_seterr(err, errlen, "%s: %s", path,
			  errno == ENOEXEC ? "not an ELF file" : strerror(errno));
		return -ENOENT;
	}
	if (pm_elf_machine(e) != EM_X86_64 || pm_go_open(&go, e) != 0) {
		pm_seterr(err, errlen, "%s is not a Go program for x86-64", path);
		goto out;
	}
	snprintf(version, vlen, "%s", pm_go_version(go) ? pm_go_version(go) : "");
	fi = pm_go_func_by_name(go, caller);
	ti = pm_go_func_by_name(go, callee);
	if (fi < 0 || ti < 0) {
		pm_seterr(err, errlen, "%s has no function %s", path, fi < 0 ? caller : callee);
		goto out;
	}
	from = pm_go_func_entry(go, fi);
	to = pm_go_func_entry(go, ti);
	/*
	 * CALL rel32 (E8) to @callee, each hit's five bytes inside the
	 * function; exactly one hit, or no probe (a false match would put the
	 * breakpoint inside an instruction)
	 */
	while (n < CALL_SCAN && pm_go_find(go, from + n + 4) == fi)
		n++;
	b = n ? pm_elf_vaddr_bytes(e, from, n + 4) : NULL;
	hits = pm_gocode_calls(b, n + 4, from, to, &site);
	if (hits != 1) {
		pm_seterr(err, errlen, "%s: %s has %u calls of %s, not one", path, caller, hits,
			  callee);
		goto out;
	}
	site = call_probe_site(e, go, fi, site);
	off = pm_elf_vaddr_to_offset(e, site);
	if (off < 0) {
		pm_seterr(err, errlen, "%s: address 0x%llx is not in the file", path,
			  (unsigned long long)site);
		goto out;
	}
	memset(out, 0, sizeof(*out));
	out->kind = PM_EVT_UPROBE;
	out->type = PERF_TYPE_TRACEPOINT;
	out->default_period = 1;
	snprintf(out->path, sizeof(out->path), "%s", path);
	snprintf(out->symbol, sizeof(out->symbol), "%s+0x%llx", caller,
		 (unsigned long long)(site - from));
	snprintf(out->name, sizeof(out->name), "uprobe:%.56s", out->symbol);
	snprintf(out->value_type, sizeof(out->value_type), "%s", "creations");
	snprintf(out->value_unit, sizeof(out->value_unit), "%s", "count");
	out->config2 = (uint64_t)off;
	rc = 0;
out:
	pm_go_free(go);
	pm_elf_free(e);
	return rc;
}

/* ---- DWARF ---- */

void pm_gocode_runtime_structs(Dwarf *dw, pm_go_struct_fn fn, void *arg)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	int guard = 0;
	bool done = false;

	while (dw && !done && guard++ < PM_GO_DWARF_MAX_CUS &&
	       dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, d;
		const char *name;
		int k = 0;

		if (!dwarf_offdie(dw, off + hsize, &cu))
			break;
		off = next;
		name = dwarf_diename(&cu);
		if (!name || strcmp(name, "runtime") != 0 || dwarf_child(&cu, &d) != 0)
			continue;
		do {
			const char *nm;

			if (dwarf_tag(&d) != DW_TAG_structure_type || !(nm = dwarf_diename(&d)))
				continue;
			done = fn(&d, nm, arg);
		} while (!done && dwarf_siblingof(&d, &d) == 0 && ++k < PM_GO_DWARF_MAX_DIES);
	}
}
