/*
 * symtab: an ELF image plus its Go table.  What the unwinder asks for every
 * frame of every sample (pm_sym_func_info) is one binary search and one short
 * pcsp decode; the per-function unwind flags that come from names (goexit,
 * main.main, ...) are worked out once at open into a byte per function.
 *
 * Native code (C, libc, cgo) is described by libdw: the CFI row at a pc
 * (.eh_frame, else .debug_frame) is reduced to the rules the unwinder can
 * evaluate, and names, files and lines (inlined C functions included) come
 * from DWARF, in the binary or in its separate debug file found by build
 * ID under /usr/lib/debug/.build-id/.  libdw parses lazily and caches, so
 * opening costs little until a native pc is asked about.
 */
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/elfimg.h"
#include "symbols/gopclntab.h"
#include "symbols/symtab.h"
#include "base/util.h"

struct pm_sym {
	char *path;
	struct pm_elf *elf;
	struct pm_go *go;
	uint16_t *gflags; /* enum pm_unw_func_flags from names and _func flags, per Go func */
	struct pm_elf *debug; /* separate debug file (by build ID), or NULL */
	Dwarf *dw;            /* DWARF of the binary, else of the debug file; NULL when none */
	Dwarf_CFI *eh;        /* .eh_frame CFI (ours to end), or NULL */
	Dwarf_CFI *dbgcfi;    /* .debug_frame CFI (owned by dw), or NULL */
	bool dw_tried;        /* dw and dbgcfi looked for (need_dwarf()) */
	/*
	 * Without .debug_aranges (clang does not emit it; libdw 0.188 finds
	 * no CU then): each CU's address ranges, sorted, built on first need.
	 */
	struct cu_range *cur;
	size_t ncur;
	bool cur_built;
};

struct cu_range {
	uint64_t lo, hi;
	Dwarf_Off off; /* the CU's DIE */
};

#define MAX_CU_RANGES (1u << 20) /* a hostile DWARF gets this many at most */

#define DEBUG_ROOT "/usr/lib/debug/.build-id"

static bool cfi_section_sane(const struct pm_elf *e, const char *name, bool eh);


/* Bottoms of stacks, matched by name (funcIDs change between versions). */
static const char *const top_names[] = {
	"runtime.goexit", "runtime.mstart", "runtime.rt0_go",
};

/*
 * Switches to g0 whose goroutine waits in curg.sched; Go called from C;
 * the signal trampolines (TOPFRAME in the table, but the kernel's signal
 * frame above them leads on); the signal restorers (1.21+:
 * sigreturn__sigaction).
 */
static const char *const gswitch_names[] = {
	"runtime.systemstack", "runtime.mcall", "runtime.morestack",
};
static const char *const sigtramp_names[] = {
	"runtime.sigtramp", "runtime.cgoSigtramp", "runtime.sigprofNonGoWrapper",
};
static const char *const vdsocall_names[] = {
	"runtime.nanotime1", "runtime.walltime", "runtime.walltime1", "time.now",
};
static const char *const sigreturn_names[] = {
	"runtime.sigreturn", "runtime.sigreturn__sigaction",
};

/* Functions that switch stacks, for tables older than the _func flag byte (< 1.17). */
static const char *const spwrite_names[] = {
	"runtime.mcall", "runtime.morestack", "runtime.systemstack", "runtime.gogo",
	"runtime.asmcgocall", "runtime.morestack_noctxt",
};

static bool in_list(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, list[i]) == 0)
			return true;
	return false;
}

static void compute_flags(struct pm_sym *s)
{
	size_t n = pm_go_nfuncs(s->go);
	bool have_flags = false;

	s->gflags = xcalloc(n ? n : 1, sizeof(*s->gflags));
	for (size_t i = 0; i < n; i++) {
		unsigned ff = pm_go_func_flags(s->go, (long)i);
		uint16_t fl = PM_UNW_F_GO;

		if (ff)
			have_flags = true;
		if (ff & PM_GO_FUNC_TOPFRAME)
			fl |= PM_UNW_F_TOP;
		if (ff & PM_GO_FUNC_SPWRITE)
			fl |= PM_UNW_F_SPWRITE;
		s->gflags[i] = fl;
	}
	for (size_t i = 0; i < n; i++) {
		const char *name = pm_go_func_name(s->go, (long)i);

		if (name && in_list(name, vdsocall_names, PM_ARRAY_SIZE(vdsocall_names)))
			s->gflags[i] |= PM_UNW_F_VDSOCALL;
		if (!name || name[0] != 'r' || strncmp(name, "runtime.", 8) != 0) {
			if (name && strcmp(name, "main.main") == 0)
				s->gflags[i] |= PM_UNW_F_MAIN;
			continue;
		}
		if (in_list(name, top_names, PM_ARRAY_SIZE(top_names)))
			s->gflags[i] |= PM_UNW_F_TOP;
		if (!have_flags && in_list(name, spwrite_names, PM_ARRAY_SIZE(spwrite_names)))
			s->gflags[i] |= PM_UNW_F_SPWRITE;
		if (strcmp(name, "runtime.asmcgocall") == 0)
			s->gflags[i] |= PM_UNW_F_CGOCALL | PM_UNW_F_SPWRITE;
		if (in_list(name, gswitch_names, PM_ARRAY_SIZE(gswitch_names)))
			s->gflags[i] |= PM_UNW_F_GSWITCH | PM_UNW_F_SPWRITE;
		if (strcmp(name, "runtime.systemstack") == 0)
			s->gflags[i] |= PM_UNW_F_SYSTEMSTACK;
		if (strcmp(name, "runtime.mcall") == 0)
			s->gflags[i] |= PM_UNW_F_MCALL;
		if (strcmp(name, "runtime.schedule") == 0)
			s->gflags[i] |= PM_UNW_F_SCHEDULE;
		if (strcmp(name, "runtime.cgocallback") == 0)
			s->gflags[i] |= PM_UNW_F_CGOCALLBACK | PM_UNW_F_SPWRITE;
		if (strcmp(name, "runtime.systemstack_switch") == 0)
			s->gflags[i] |= PM_UNW_F_NOFRAME;
		if (in_list(name, sigreturn_names, PM_ARRAY_SIZE(sigreturn_names)))
			s->gflags[i] |= PM_UNW_F_SIGRETURN;
		if (in_list(name, sigtramp_names, PM_ARRAY_SIZE(sigtramp_names))) {
			s->gflags[i] |= PM_UNW_F_SIGTRAMP;
			s->gflags[i] &= (uint16_t)~PM_UNW_F_TOP;
		}
	}
}

/* A GNU build ID is hex; Go's fallback build ID is not, and names no debug file. */
static bool is_hex_id(const char *id)
{
	size_t n = strlen(id);

	if (n < 4 || n > 128 || n % 2)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

/*
 * The binary's DWARF, else its debug file's, opened on first use: only
 * native code asks (names, lines and inlined frames, .debug_frame CFI), and
 * libdw inflates a Go binary's compressed .zdebug sections when it opens
 * them: a fifth of pmuprof's CPU in a short recording of a Go program.
 */
static void need_dwarf(const struct pm_sym *cs)
{
	struct pm_sym *s = (struct pm_sym *)cs; /* a cache filled on demand */
	const char *id;

	if (s->dw_tried)
		return;
	s->dw_tried = true;
	id = pm_elf_build_id(s->elf);
	s->dw = dwarf_begin_elf(pm_elf_libelf(s->elf), DWARF_C_READ, NULL);
	if (!s->dw && is_hex_id(id)) {
		char *path = xasprintf(DEBUG_ROOT "/%.2s/%s.debug", id, id + 2);

		if (access(path, R_OK) == 0)
			s->debug = pm_elf_open(path);
		free(path);
		if (s->debug)
			s->dw = dwarf_begin_elf(pm_elf_libelf(s->debug), DWARF_C_READ, NULL);
	}
	if (s->dw) {
		const struct pm_elf *de = s->debug ? s->debug : s->elf;

		s->dbgcfi = dwarf_getcfi(s->dw);
		if (s->dbgcfi && (pm_elf_section(de, ".zdebug_frame") ||
				  !cfi_section_sane(de, ".debug_frame", false)))
			s->dbgcfi = NULL; /* owned by dw */
	}
}

static struct pm_sym *sym_of_elf(const char *path, struct pm_elf *e)
{
	struct pm_sym *s;

	if (!e)
		return NULL;
	s = xcalloc(1, sizeof(*s));
	s->path = xstrdup(path);
	s->elf = e;
	/* A table that does not validate is treated as absent: ELF symbols still work. */
	if (pm_go_open(&s->go, e) == 0)
		compute_flags(s);
	else
		s->go = NULL;
	s->eh = dwarf_getcfi_elf(pm_elf_libelf(s->elf));
	if (s->eh && !cfi_section_sane(e, ".eh_frame", true)) {
		dwarf_cfi_end(s->eh);
		s->eh = NULL;
	}
	return s;
}

struct pm_sym *pm_sym_open(const char *path)
{
	return sym_of_elf(path, pm_elf_open(path));
}

struct pm_sym *pm_sym_open_mem(const char *name, const void *buf, size_t len)
{
	return sym_of_elf(name, pm_elf_open_mem(buf, len));
}

void pm_sym_free(struct pm_sym *s)
{
	if (!s)
		return;
	pm_go_free(s->go);
	if (s->eh)
		dwarf_cfi_end(s->eh);
	if (s->dw)
		dwarf_end(s->dw);
	pm_elf_free(s->debug);
	pm_elf_free(s->elf);
	free(s->cur);
	free(s->gflags);
	free(s->path);
	free(s);
}

const char *pm_sym_path(const struct pm_sym *s)
{
	return s->path;
}

const char *pm_sym_build_id(const struct pm_sym *s)
{
	return pm_elf_build_id(s->elf);
}

bool pm_sym_is_go(const struct pm_sym *s)
{
	return s->go != NULL;
}

const char *pm_sym_go_version(const struct pm_sym *s)
{
	return s->go ? pm_go_version(s->go) : "";
}

bool pm_sym_is_pie(const struct pm_sym *s)
{
	return pm_elf_type(s->elf) == ET_DYN;
}

int64_t pm_sym_offset_to_vaddr(const struct pm_sym *s, uint64_t off)
{
	return pm_elf_offset_to_vaddr(s->elf, off);
}

/* The ELF symbol at @pc: the binary's own tables, else its debug file's .symtab. */
static const char *native_symbol(const struct pm_sym *s, uint64_t pc, uint64_t *start)
{
	const char *name = NULL;
	uint64_t st = 0;

	need_dwarf(s); /* it finds the debug file */
	if (s->debug)
		name = pm_elf_symbol(s->debug, pc, &st);
	if (!name)
		name = pm_elf_symbol(s->elf, pc, &st);
	if (name && start)
		*start = st;
	return name;
}

/* The rule libdw gives for one register, reduced; false when not evaluable. */
static bool reg_rule(Dwarf_Frame *fr, int regno, uint8_t *rule, int32_t *off)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;
	int64_t v = 0;
	bool val = false;

	*rule = PM_UNW_R_UNDEF;
	*off = 0;
	if (dwarf_frame_register(fr, regno, mem, &ops, &nops) != 0)
		return false;
	if (nops == 0) {
		*rule = ops ? PM_UNW_R_UNDEF : PM_UNW_R_SAME;
		return true;
	}
	if (nops == 1 && (ops[0].atom == DW_OP_regx ||
			  (ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg31))) {
		uint64_t r = ops[0].atom == DW_OP_regx ? ops[0].number
						       : (uint64_t)(ops[0].atom - DW_OP_reg0);
		if (r >= PM_UNW_NREGS)
			return false;
		*rule = PM_UNW_R_REG;
		*off = (int32_t)r;
		return true;
	}
	if (ops[nops - 1].atom == DW_OP_stack_value) {
		val = true;
		nops--;
	}
	if (nops == 0 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if ((nops == 2 && ops[1].atom == DW_OP_plus_uconst) ||
	    (nops == 3 && ops[1].atom == DW_OP_consts && ops[2].atom == DW_OP_plus))
		v = (int64_t)ops[1].number;
	else if (nops != 1)
		return false;
	if (v < INT32_MIN || v > INT32_MAX)
		return false;
	*rule = val ? PM_UNW_R_VAL : PM_UNW_R_OFFSET;
	*off = (int32_t)v;
	return true;
}

/*
 * CFI that libdw may be given.  libdw 0.188 grows its table of register
 * rules to the highest register number an instruction names: one FDE
 * naming register 78 million made it realloc 1.88 GB (fuzz-symtab,
 * tests/fuzz/crashes/fuzz-symtab/).  So before a section's CFI is used,
 * the instructions of every CIE and FDE in it are walked (not run): a
 * register number past CFI_MAX_REG, an opcode or pointer encoding the walk
 * cannot size, or an entry libdw cannot read turns the whole section's
 * CFI off (frame pointers then, as for code without CFI).
 */
#define CFI_MAX_REG 127 /* x86_64's DWARF numbers stop below */
#define CFI_MAX_CIES 256

static bool leb128(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	unsigned shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			*v = r;
			return true;
		}
		if (shift > 70)
			return false;
	}
	return false;
}

static bool skip(const uint8_t **p, const uint8_t *end, uint64_t n)
{
	if (n > (uint64_t)(end - *p))
		return false;
	*p += n;
	return true;
}

/* A pointer in encoding @enc (DW_EH_PE_*): 0 for the variable-length ones, -1 when unknown. */
static int enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x00: return 8; /* absptr */
	case 0x01: case 0x09: return 0; /* uleb128, sleb128 */
	case 0x02: case 0x0a: return 2;
	case 0x03: case 0x0b: return 4;
	case 0x04: case 0x0c: return 8;
	default: return -1;
	}
}

static bool skip_ptr(const uint8_t **p, const uint8_t *end, uint8_t enc)
{
	int n = enc_size(enc);
	uint64_t v;

	if (n < 0)
		return false;
	return n ? skip(p, end, (uint64_t)n) : leb128(p, end, &v);
}

static bool reg_ok(const uint8_t **p, const uint8_t *end)
{
	uint64_t r;

	return leb128(p, end, &r) && r <= CFI_MAX_REG;
}

static bool cfa_insns_sane(const uint8_t *p, const uint8_t *end, uint8_t enc)
{
	uint64_t v;

	while (p < end) {
		uint8_t op = *p++;
		bool ok;

		if ((op >> 6) == 1 || (op >> 6) == 3) /* advance_loc, restore: no operand */
			continue;
		if ((op >> 6) == 2) { /* offset: register in the low bits, then an offset */
			if (!leb128(&p, end, &v))
				return false;
			continue;
		}
		switch (op) {
		case 0x00: case 0x0a: case 0x0b: /* nop, remember_state, restore_state */
			ok = true;
			break;
		case 0x01: /* set_loc */
			ok = skip_ptr(&p, end, enc);
			break;
		case 0x02: ok = skip(&p, end, 1); break;
		case 0x03: ok = skip(&p, end, 2); break;
		case 0x04: ok = skip(&p, end, 4); break;
		case 0x05: case 0x0c: case 0x11: case 0x12: case 0x14: case 0x15: case 0x2f:
			/* register, then an (s)leb128 */
			ok = reg_ok(&p, end) && leb128(&p, end, &v);
			break;
		case 0x09: /* register: two registers */
			ok = reg_ok(&p, end) && reg_ok(&p, end);
			break;
		case 0x06: case 0x07: case 0x08: case 0x0d: /* one register */
			ok = reg_ok(&p, end);
			break;
		case 0x0e: case 0x13: case 0x2e: /* an (s)leb128 */
			ok = leb128(&p, end, &v);
			break;
		case 0x0f: /* def_cfa_expression: a block */
			ok = leb128(&p, end, &v) && skip(&p, end, v);
			break;
		case 0x10: case 0x16: /* (val_)expression: a register and a block */
			ok = reg_ok(&p, end) && leb128(&p, end, &v) && skip(&p, end, v);
			break;
		default:
			ok = false;
			break;
		}
		if (!ok)
			return false;
	}
	return true;
}

/* A CIE's FDE pointer encoding ('R' in a "z" augmentation; absptr without). */
static bool cie_enc(const Dwarf_CIE *c, uint8_t *enc)
{
	const char *a = c->augmentation;
	const uint8_t *p = c->augmentation_data, *end;

	*enc = 0x00; /* absptr */
	if (!a)
		return false;
	if (a[0] != 'z') /* no augmentation data: "" (or old GCC's "eh") only */
		return !a[0] || strcmp(a, "eh") == 0;
	if (!p)
		return false;
	end = p + c->augmentation_data_size;
	for (a++; *a; a++) {
		switch (*a) {
		case 'L':
			if (!skip(&p, end, 1))
				return false;
			break;
		case 'P':
			if (p >= end)
				return false;
			{
				uint8_t penc = *p++;

				if (!skip_ptr(&p, end, penc))
					return false;
			}
			break;
		case 'R':
			if (p >= end)
				return false;
			*enc = *p++;
			break;
		case 'S':
		case 'B':
			break;
		default:
			return false;
		}
	}
	return true;
}

/* A pointer in encoding @enc at @p (the field at @at), absolute; false when unsupported. */
static bool read_enc(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t at,
		     uint64_t datarel, uint64_t *out)
{
	uint64_t v = 0;
	int n = enc_size(enc);

	if (enc == 0xff || n <= 0 || (uint64_t)(end - *p) < (uint64_t)n)
		return false;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)(*p)[i] << (8 * i);
	if ((enc & 0x08) && n < 8 && (v >> (8 * n - 1)) & 1) /* sdata: sign-extend */
		v |= ~0ULL << (8 * n);
	*p += n;
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += at; break;      /* pcrel */
	case 0x30: v += datarel; break; /* datarel */
	default: return false;
	}
	*out = v;
	return true;
}

/*
 * libdw finds an FDE through .eh_frame_hdr's table when there is one: every
 * entry must point at an FDE the walk checked (one in the middle of another
 * would be read as hostile instructions).
 */
static bool hdr_sane(const struct pm_elf *e, const struct pm_elf_section *eh,
		     const uint64_t *fdes, size_t nfdes)
{
	const struct pm_elf_section *h = pm_elf_section(e, ".eh_frame_hdr");
	const uint8_t *p, *end;
	uint64_t ptr, count, i;
	uint8_t penc, cenc, tenc;

	if (!h)
		return true; /* libdw walks .eh_frame itself */
	if (!h->data || h->size < 4 || h->data[0] != 1)
		return false;
	p = h->data + 4;
	end = h->data + h->size;
	penc = h->data[1];
	cenc = h->data[2];
	tenc = h->data[3];
	if (!read_enc(&p, end, penc, h->addr + 4, h->addr, &ptr) || ptr != eh->addr)
		return false;
	if (tenc == 0xff)
		return true; /* no table: libdw walks */
	if (!read_enc(&p, end, cenc, h->addr + (uint64_t)(p - h->data), h->addr, &count))
		return false;
	for (i = 0; i < count; i++) {
		uint64_t loc, fde, off;
		size_t k;

		if (!read_enc(&p, end, tenc, h->addr + (uint64_t)(p - h->data), h->addr, &loc) ||
		    !read_enc(&p, end, tenc, h->addr + (uint64_t)(p - h->data), h->addr, &fde))
			return false;
		off = fde - eh->addr;
		k = pm_count_le_u64(fdes, nfdes, sizeof(*fdes), 0, off);
		if (k == 0 || fdes[k - 1] != off)
			return false;
	}
	return true;
}

static bool cfi_section_sane(const struct pm_elf *e, const char *name, bool eh)
{
	const struct pm_elf_section *sec = pm_elf_section(e, name);
	const uint8_t *img;
	struct {
		Dwarf_Off off;
		uint8_t enc;
		bool z;
	} cies[CFI_MAX_CIES];
	size_t ncies = 0, len, nfdes = 0, capfdes = 0;
	uint64_t *fdes = NULL; /* section offsets of the FDEs, increasing */
	Elf_Data d;
	Dwarf_Off off = 0, next;
	unsigned guard = 0;
	bool sane = false;

	if (!sec)
		/* libdw may still find .eh_frame through PT_GNU_EH_FRAME: unchecked, unused */
		return !eh;
	if (!sec->data || (sec->flags & SHF_COMPRESSED))
		return false; /* cannot be checked: not used */
	img = pm_elf_bytes(e, &len);
	if (!img || len < EI_NIDENT)
		return false;
	memset(&d, 0, sizeof(d));
	d.d_buf = (void *)(uintptr_t)sec->data;
	d.d_type = ELF_T_BYTE;
	d.d_size = sec->size;
	d.d_version = EV_CURRENT;
	while (off < sec->size) {
		Dwarf_CFI_Entry en;
		int rc = dwarf_next_cfi(img, &d, eh, off, &next, &en);

		if (rc == 1)
			break;
		if (rc != 0 || next <= off || ++guard > 1000000)
			goto out;
		if (dwarf_cfi_cie_p(&en)) {
			uint8_t enc;

			if (en.cie.return_address_register > CFI_MAX_REG || ncies == CFI_MAX_CIES ||
			    !cie_enc(&en.cie, &enc))
				goto out;
			if (!eh)
				enc = 0x00; /* .debug_frame: plain addresses */
			if (!cfa_insns_sane(en.cie.initial_instructions, en.cie.initial_instructions_end, enc))
				goto out;
			cies[ncies].off = off;
			cies[ncies].enc = enc;
			cies[ncies].z = en.cie.augmentation && en.cie.augmentation[0] == 'z';
			ncies++;
		} else {
			const uint8_t *p = en.fde.start, *end = en.fde.end;
			size_t k;
			uint64_t alen;

			for (k = 0; k < ncies && cies[k].off != en.fde.CIE_pointer; k++)
				;
			if (k == ncies || !p || !end || p > end)
				goto out; /* a CIE after its FDE, or none */
			if (!skip_ptr(&p, end, cies[k].enc) || !skip_ptr(&p, end, cies[k].enc & 0x0f))
				goto out;
			if (cies[k].z && (!leb128(&p, end, &alen) || !skip(&p, end, alen)))
				goto out;
			if (!cfa_insns_sane(p, end, cies[k].enc))
				goto out;
			PM_GROW(fdes, capfdes, nfdes + 1);
			fdes[nfdes++] = off;
		}
		off = next;
	}
	sane = !eh || hdr_sane(e, sec, fdes, nfdes);
out:
	free(fdes);
	return sane;
}

/*
 * Evaluate a CFA expression at @pc with the stack pointer at @rsp: the
 * few operations of position-only expressions (the PLT's "rsp + 8, +8
 * past the push": binutils' lazy PLT).  Registers but rsp and rip, memory
 * reads and branches are not evaluated.  false when it cannot be.
 */
#define EXPR_STACK 16

static bool expr_binop(uint8_t atom, int64_t a, int64_t b, int64_t *r)
{
	switch (atom) {
	case DW_OP_plus:  *r = (int64_t)((uint64_t)a + (uint64_t)b); return true;
	case DW_OP_minus: *r = (int64_t)((uint64_t)a - (uint64_t)b); return true;
	case DW_OP_mul:   *r = (int64_t)((uint64_t)a * (uint64_t)b); return true;
	case DW_OP_and:   *r = a & b; return true;
	case DW_OP_or:    *r = a | b; return true;
	case DW_OP_xor:   *r = a ^ b; return true;
	case DW_OP_shl:   *r = b < 64 && b >= 0 ? (int64_t)((uint64_t)a << b) : 0; return true;
	case DW_OP_shr:   *r = b < 64 && b >= 0 ? (int64_t)((uint64_t)a >> b) : 0; return true;
	case DW_OP_ge:    *r = a >= b; return true;
	case DW_OP_gt:    *r = a > b; return true;
	case DW_OP_le:    *r = a <= b; return true;
	case DW_OP_lt:    *r = a < b; return true;
	case DW_OP_eq:    *r = a == b; return true;
	case DW_OP_ne:    *r = a != b; return true;
	default:          return false;
	}
}

static bool expr_operand(const Dwarf_Op *op, uint64_t pc, uint64_t rsp, int64_t *v)
{
	uint8_t a = op->atom;
	uint64_t reg = a == DW_OP_bregx ? op->number : (uint64_t)(a - DW_OP_breg0);
	int64_t off = a == DW_OP_bregx ? (int64_t)op->number2 : (int64_t)op->number;

	if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
		*v = a - DW_OP_lit0;
		return true;
	}
	if ((a >= DW_OP_breg0 && a <= DW_OP_breg31) || a == DW_OP_bregx) {
		if (reg != PM_DW_RSP && reg != PM_DW_RA)
			return false; /* DWARF register 16 is rip */
		*v = (int64_t)((reg == PM_DW_RSP ? rsp : pc) + (uint64_t)off);
		return true;
	}
	switch (a) {
	case DW_OP_const1u: case DW_OP_const2u: case DW_OP_const4u: case DW_OP_const8u:
	case DW_OP_const1s: case DW_OP_const2s: case DW_OP_const4s: case DW_OP_const8s:
	case DW_OP_constu: case DW_OP_consts:
		*v = (int64_t)op->number;
		return true;
	default:
		return false;
	}
}

static bool expr_eval(const Dwarf_Op *ops, size_t nops, uint64_t pc, uint64_t rsp, int64_t *out)
{
	int64_t st[EXPR_STACK], v;
	size_t n = 0;

	for (size_t i = 0; i < nops; i++) {
		if (expr_operand(&ops[i], pc, rsp, &v)) {
			if (n == EXPR_STACK)
				return false;
			st[n++] = v;
		} else if (ops[i].atom == DW_OP_plus_uconst && n >= 1) {
			st[n - 1] = (int64_t)((uint64_t)st[n - 1] + ops[i].number);
		} else if (n >= 2 && expr_binop(ops[i].atom, st[n - 2], st[n - 1], &v)) {
			st[--n - 1] = v;
		} else {
			return false;
		}
	}
	if (n != 1)
		return false;
	*out = st[0];
	return true;
}

/* A CFA expression at @pc that comes to rsp + a constant: *off. */
static bool expr_cfa_rsp(const Dwarf_Op *ops, size_t nops, uint64_t pc, int64_t *off)
{
	const uint64_t base = 1ull << 32;
	int64_t a, b;

	if (!expr_eval(ops, nops, pc, base, &a) || !expr_eval(ops, nops, pc, 2 * base, &b))
		return false;
	if ((uint64_t)b - (uint64_t)a != base)
		return false; /* not rsp plus what the position gives */
	*off = (int64_t)((uint64_t)a - base);
	return true;
}

/*
 * The row at @pc of @cfi into *out; 0, -1 when there is none, -2 when
 * there is one (an FDE covers @pc) that cannot be evaluated here.  *sig: the row is in a signal frame (the 'S'
 * augmentation of glibc's __restore_rt, whose CFA is an expression).
 */
static int cfi_from(Dwarf_CFI *cfi, uint64_t pc, struct pm_unw_cfi *out, bool *sig)
{
	Dwarf_Frame *fr = NULL;
	Dwarf_Op *ops;
	size_t nops;
	uint64_t reg;
	int64_t off;
	int rc = -1;
	bool signalp = false;

	if (!cfi || dwarf_cfi_addrframe(cfi, pc, &fr) != 0)
		return -1;
	if (dwarf_frame_info(fr, NULL, NULL, &signalp) >= 0 && signalp)
		*sig = true;
	if (dwarf_frame_cfa(fr, &ops, &nops) != 0 || nops < 1)
		goto out;
	if (nops > 1) {
		if (!expr_cfa_rsp(ops, nops, pc, &off))
			goto out; /* stack realignment, a signal frame */
		reg = PM_DW_RSP;
	} else if (ops[0].atom == DW_OP_bregx) {
		reg = ops[0].number;
		off = (int64_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = (uint64_t)(ops[0].atom - DW_OP_breg0);
		off = (int64_t)ops[0].number;
	} else {
		goto out;
	}
	if (reg >= PM_DW_RA || off < INT32_MIN || off > INT32_MAX)
		goto out;
	memset(out, 0, sizeof(*out));
	out->cfa_reg = (uint8_t)reg;
	out->cfa_off = (int32_t)off;
	for (int i = 0; i < PM_UNW_NREGS; i++) {
		if (!reg_rule(fr, i, &out->rule[i], &out->off[i])) {
			if (i == PM_DW_RA)
				goto out;
			out->rule[i] = PM_UNW_R_UNDEF;
		}
	}
	if (out->rule[PM_DW_RA] == PM_UNW_R_UNDEF)
		out->outermost = 1;
	else if (out->rule[PM_DW_RA] != PM_UNW_R_OFFSET)
		goto out;
	out->valid = 1;
	rc = 0;
out:
	free(fr);
	if (rc) {
		memset(out, 0, sizeof(*out));
		rc = -2;
	}
	return rc;
}

/* The CFI row at native @pc: .eh_frame first (what the code ships), else .debug_frame. */
static int cfi_row(const struct pm_sym *s, uint64_t pc, struct pm_unw_cfi *out, bool *sig)
{
	int rc = cfi_from(s->eh, pc, out, sig);

	if (rc != -1)
		return rc ? -1 : 0; /* .eh_frame covers it: .debug_frame says the same */
	need_dwarf(s);
	return cfi_from(s->dbgcfi, pc, out, sig) ? -1 : 0;
}

/*
 * @pc lies in the binary's entry stub: from e_entry up to the first code
 * with CFI, at most ENTRY_STUB_MAX bytes.  The kernel (or ld.so) jumps
 * there with no return address, so it is the bottom of the stack, CFI or
 * not: ld.so's _start and _dl_start_user have none (glibc's RTLD_START).
 */
#define ENTRY_STUB_MAX 256

static bool in_entry_stub(const struct pm_sym *s, uint64_t pc)
{
	uint64_t e = pm_elf_entry(s->elf);

	if (!e || !s->eh || pc < e || pc - e >= ENTRY_STUB_MAX)
		return false;
	for (uint64_t a = e; a <= pc; a++) {
		Dwarf_Frame *fr = NULL;

		if (dwarf_cfi_addrframe(s->eh, a, &fr) == 0) {
			free(fr);
			return false;
		}
	}
	return true;
}

int pm_sym_func_info(const struct pm_sym *s, uint64_t pc, struct pm_unw_func *out)
{
	uint64_t start;
	bool sig = false;

	if (s->go) {
		long idx = pm_go_find(s->go, pc);

		if (idx >= 0) {
			out->entry = pm_go_func_entry(s->go, idx);
			out->spdelta = pm_go_spdelta(s->go, idx, pc);
			out->flags = s->gflags[idx];
			return 0;
		}
	}
	memset(&out->cfi, 0, sizeof(out->cfi));
	/*
	 * What the unwinder needs of native code is its CFI row and where
	 * the function starts: not the separate debug file (opening it,
	 * libdw decompresses its sections: 0.5 s in the recording's loop for
	 * glibc's, seen with libc6-dbg installed) while .eh_frame is there.
	 */
	if (s->eh) {
		/*
		 * A row of .eh_frame, or none in a binary that has .eh_frame
		 * (code written without CFI: a new thread's first instructions
		 * in clone3, which .debug_frame, from the same directives,
		 * lacks too).  The function's start from the binary's own
		 * symbols, else @pc (as for code without a symbol); neither a
		 * row nor a symbol: not known.  The same answer whether or not
		 * frames were named (the debug file opened) before: a source
		 * that names frames during the recording (--inuse) changes no
		 * later walk.
		 */
		uint64_t st = 0;
		bool named = pm_elf_symbol(s->elf, pc, &st) && st <= pc;

		bool row = cfi_from(s->eh, pc, &out->cfi, &sig) != -1;
		bool stub = !row && !sig && in_entry_stub(s, pc);

		if (!row && !named && !sig && !stub)
			return -ENOENT;
		out->entry = named ? st : stub ? pm_elf_entry(s->elf) : pc;
		out->spdelta = -1;
		out->flags = sig ? PM_UNW_F_SIGRETURN : stub ? PM_UNW_F_TOP : 0;
		return 0;
	}
	if (native_symbol(s, pc, &start)) {
		out->entry = start;
		out->spdelta = -1;
		out->flags = 0;
		cfi_row(s, pc, &out->cfi, &sig);
		if (sig)
			out->flags = PM_UNW_F_SIGRETURN;
		return 0;
	}
	/* code without a symbol (static functions of a stripped library) still has CFI */
	if (cfi_row(s, pc, &out->cfi, &sig) == 0 || sig) {
		out->entry = pc;
		out->spdelta = -1;
		out->flags = sig ? PM_UNW_F_SIGRETURN : 0;
		return 0;
	}
	return -ENOENT;
}

static int cmp_cu_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void build_cu_ranges(struct pm_sym *s)
{
	Dwarf_Off off = 0, next;
	size_t hsize, cap = 0;
	unsigned guard = 0;

	s->cur_built = true;
	while (s->ncur < MAX_CU_RANGES && guard++ < MAX_CU_RANGES &&
	       dwarf_nextcu(s->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Addr base, lo, hi;
		ptrdiff_t r = 0;
		unsigned steps = 0;

		if (dwarf_offdie(s->dw, off + hsize, &cu)) {
			while (s->ncur < MAX_CU_RANGES && steps++ < 65536 &&
			       (r = dwarf_ranges(&cu, r, &base, &lo, &hi)) > 0) {
				if (lo >= hi)
					continue;
				PM_GROW(s->cur, cap, s->ncur + 1);
				s->cur[s->ncur++] = (struct cu_range){ lo, hi, off + hsize };
			}
		}
		if (next <= off)
			break;
		off = next;
	}
	if (s->ncur)
		qsort(s->cur, s->ncur, sizeof(*s->cur), cmp_cu_range);
}

/* The CU holding @pc: .debug_aranges through libdw, else the CUs' own ranges. */
static bool cu_of(const struct pm_sym *cs, uint64_t pc, Dwarf_Die *cu)
{
	struct pm_sym *s = (struct pm_sym *)cs; /* a cache filled on demand */
	size_t lo, k;

	if (dwarf_addrdie(s->dw, pc, cu))
		return true;
	if (!s->cur_built)
		build_cu_ranges(s);
	/* the last range starting at or below pc, then a few before it (CUs can nest ranges) */
	lo = pm_count_le_u64(s->cur, s->ncur, sizeof(*s->cur), offsetof(struct cu_range, lo), pc);
	for (k = 0; k < 8 && lo > k; k++) {
		const struct cu_range *r = &s->cur[lo - 1 - k];

		if (pc >= r->lo && pc < r->hi)
			return dwarf_offdie(s->dw, r->off, cu) != NULL;
	}
	return false;
}

/*
 * Native frames from DWARF: the line table for the innermost, then one
 * frame per inlined_subroutine scope out to the subprogram, each caller at
 * the inlined call's DW_AT_call_file/line.  The physical function keeps
 * its ELF symbol name when it has one.
 */
static size_t dwarf_frames(const struct pm_sym *s, uint64_t pc, struct pm_frame *out, size_t max)
{
	Dwarf_Die cu, *scopes = NULL;
	Dwarf_Line *ln;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0, n = 0;
	const char *file = NULL, *sym;
	int line = 0, ns;

	if (!cu_of(s, pc, &cu))
		return 0;
	ln = dwarf_getsrc_die(&cu, pc);
	if (ln) {
		file = dwarf_linesrc(ln, NULL, NULL);
		if (dwarf_lineno(ln, &line) != 0)
			line = 0;
	}
	ns = dwarf_getscopes(&cu, pc, &scopes);
	for (int i = 0; i < ns && n < max; i++) {
		int tag = dwarf_tag(&scopes[i]);
		const char *name;
		int decl = 0;
		Dwarf_Attribute a;
		Dwarf_Word w;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		name = dwarf_diename(&scopes[i]);
		if (tag == DW_TAG_subprogram && (sym = native_symbol(s, pc, NULL)))
			name = sym;
		if (dwarf_decl_line(&scopes[i], &decl) != 0)
			decl = 0;
		out[n].func = name ? name : "??";
		out[n].file = file ? file : "";
		out[n].line = line;
		out[n].start_line = decl;
		out[n].kind = 0;
		n++;
		if (tag == DW_TAG_subprogram)
			break;
		/* the caller's position: where this inlined body was called */
		line = 0;
		file = NULL;
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &w) == 0 &&
		    w <= INT32_MAX)
			line = (int)w;
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &w) == 0 &&
		    (files || dwarf_getsrcfiles(&cu, &files, &nfiles) == 0) && w < nfiles)
			file = dwarf_filesrc(files, w, NULL, NULL);
	}
	free(scopes);
	return n;
}

size_t pm_sym_frames(const struct pm_sym *s, uint64_t pc, struct pm_frame *out, size_t max)
{
	const char *name;

	if (max == 0)
		return 0;
	if (s->go) {
		struct pm_go_frame buf[64];
		size_t n = pm_go_frames(s->go, pc, buf, PM_MIN(max, PM_ARRAY_SIZE(buf)));

		if (n) {
			for (size_t i = 0; i < n; i++) {
				out[i].func = buf[i].func;
				out[i].file = buf[i].file ? buf[i].file : "";
				out[i].line = buf[i].line;
				out[i].start_line = buf[i].start_line;
				out[i].kind = buf[i].kind;
			}
			return n;
		}
	}
	need_dwarf(s);
	if (s->dw) {
		size_t n = dwarf_frames(s, pc, out, max);
		if (n)
			return n;
	}
	name = native_symbol(s, pc, NULL);
	if (!name)
		return 0;
	out[0].func = name;
	out[0].file = "";
	out[0].line = 0;
	out[0].start_line = 0;
	out[0].kind = 0;
	return 1;
}
