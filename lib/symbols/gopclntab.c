/*
 * gopclntab: Go's pc-line table, read straight out of the mapped ELF image.
 *
 * The table is validated once at open (header offsets increasing and inside
 * the table, functab sorted, every _func repeats its functab entry); after
 * that lookups only bounds-check what they touch.  The functab is decoded
 * into a flat array of (entry, _func offset) so pm_go_find is one binary
 * search whatever the layout.  Strings are returned as pointers into the
 * table after checking that a NUL ends them inside their sub-table.
 */
#include <errno.h>
#include <stddef.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/elfimg.h"
#include "symbols/gopclntab.h"
#include "base/util.h"

#define MAGIC_12 0xfffffffbu
#define MAGIC_116 0xfffffffau
#define MAGIC_118 0xfffffff0u
#define MAGIC_120 0xfffffff1u

#define PCDATA_INLTREEINDEX 2
#define FUNCDATA_INLTREE 3

/*
 * State of a pcvalue program after some pair: the value, the pc (as an
 * offset from the entry) where it stops applying, and where the next pair
 * starts (offset into pctab).
 */
struct pc_ck {
	uint32_t pcoff;
	uint32_t val;
	uint32_t poff;
};

enum pc_kind { PC_SP, PC_FILE, PC_LN, PC_INL };
#define CK_EVERY 16

struct go_func {
	uint64_t entry;
	uint32_t off; /* of the _func record, from the table start */
};

struct pm_go {
	const struct pm_elf *e;
	const uint8_t *tab;
	size_t len;
	uint64_t va;
	uint32_t magic;
	unsigned ptrsize, quantum;
	uint64_t hdr_text; /* textStart word of the header (1.18+), may be 0 */

	/* Sub-tables as [off, end) from the table start. */
	size_t name_off, name_end, cu_off, cu_end, file_off, file_end, pc_off, pc_end;
	size_t pcln_off;
	uint32_t nfiletab; /* Go 1.2: entries of the filetab (index 0 is the count) */

	size_t nfunc;
	struct go_func *funcs; /* nfunc + 1; the last one is the end of text */
	size_t funcsz;	       /* fixed part of _func */
	size_t fbase;	       /* offset of nameoff in _func */
	size_t ftail;	       /* offset of funcID, flag, _, nfuncdata */

	uint64_t text_start, text_end;
	uint64_t moduledata; /* vaddr, 0 when not found */
	uint64_t gofunc;     /* vaddr of go:func.* (1.18+), 0 when unknown */
	int inl_funcdata;    /* FUNCDATA index of the inline tree, -1: do not expand */
	/*
	 * funcIDs as this binary numbers them (the enum changes between Go
	 * versions): of runtime.deferreturn (every version marks it as a
	 * wrapper, the value every compiler-made wrapper carries), of
	 * runtime.gopanic, sigpanic and panicwrap; 0 when unknown
	 */
	uint8_t fid_wrapper, fid_panic[3];

	/* Checkpoints into long pcvalue programs, per program kind (enum pc_kind). */
	struct pc_ck *ck;
	size_t nck;
	uint32_t *ck_start[4]; /* nfunc + 1 each: func i has [start[i], start[i+1]) */
	char version[48];
};

static uint64_t rd_ptr(const uint8_t *p, unsigned ptrsize)
{
	return ptrsize == 8 ? pm_le64(p) : pm_le32(p);
}

/* ----- validation and layout ------------------------------------------------- */

static bool new_layout(uint32_t magic)
{
	return magic == MAGIC_118 || magic == MAGIC_120;
}

/*
 * Parse and validate a candidate table of @len bytes at @va.  Fills @go's
 * layout and funcs on success; returns false (and allocates nothing that
 * outlives the call) when anything does not check out.
 */
static bool parse_table(struct pm_go *go, const uint8_t *tab, size_t len, uint64_t va)
{
	uint32_t magic;
	unsigned ps, q;
	uint64_t w[8];
	size_t hdrsize, ftab, entsz, nfunc, recs_min;
	struct go_func *funcs;

	if (len < 8 + 8 * 8)
		return false;
	magic = pm_le32(tab);
	if (magic != MAGIC_12 && magic != MAGIC_116 && magic != MAGIC_118 && magic != MAGIC_120)
		return false;
	ps = tab[7];
	q = tab[6];
	if (tab[4] || tab[5] || (ps != 4 && ps != 8) || (q != 1 && q != 2 && q != 4))
		return false;
	for (int k = 0; k < 8; k++)
		w[k] = rd_ptr(tab + 8 + (size_t)k * ps, ps);

	memset(go, 0, sizeof(*go));
	go->tab = tab;
	go->len = len;
	go->va = va;
	go->magic = magic;
	go->ptrsize = ps;
	go->quantum = q;

	if (magic == MAGIC_12) {
		uint64_t ft_end, fto;

		nfunc = w[0];
		ftab = 8 + ps;
		entsz = 2 * (size_t)ps;
		if (nfunc == 0 || nfunc > (len - ftab) / entsz)
			return false;
		ft_end = ftab + nfunc * entsz + ps; /* the end pc follows the pairs */
		if (ft_end + 4 > len)
			return false;
		fto = pm_le32(tab + ft_end);
		if (fto < ft_end + 4 || fto + 4 > len)
			return false;
		go->nfiletab = pm_le32(tab + fto);
		if (go->nfiletab > (len - fto) / 4)
			return false;
		go->file_off = fto;
		go->file_end = fto + 4 * (size_t)go->nfiletab;
		go->name_off = 0;
		go->name_end = len;
		go->pc_off = 0;
		go->pc_end = len;
		go->pcln_off = 0;
		go->fbase = ps;
		go->ftail = ps + 28;
		go->funcsz = ps + 32;
		recs_min = ft_end + 4;
	} else {
		uint64_t fn, cu, ft, pc, pl;

		nfunc = w[0];
		if (magic == MAGIC_116) {
			fn = w[2], cu = w[3], ft = w[4], pc = w[5], pl = w[6];
			hdrsize = 8 + 7 * (size_t)ps;
			entsz = 2 * (size_t)ps;
			go->fbase = ps;
			go->ftail = ps + 32;
			go->funcsz = ps + 36;
		} else {
			go->hdr_text = w[2];
			fn = w[3], cu = w[4], ft = w[5], pc = w[6], pl = w[7];
			hdrsize = 8 + 8 * (size_t)ps;
			entsz = 8;
			go->fbase = 4;
			go->ftail = magic == MAGIC_120 ? 40 : 36;
			go->funcsz = magic == MAGIC_120 ? 44 : 40;
		}
		if (!(hdrsize <= fn && fn < cu && cu < ft && ft < pc && pc < pl && pl < len))
			return false;
		if (nfunc == 0 || nfunc >= (len - pl) / entsz)
			return false;
		go->name_off = fn, go->name_end = cu;
		go->cu_off = cu, go->cu_end = ft;
		go->file_off = ft, go->file_end = pc;
		go->pc_off = pc, go->pc_end = pl;
		go->pcln_off = pl;
		ftab = pl;
		/* 1.16-1.17 end the functab with a lone end pc, 1.18+ with a full entry. */
		recs_min = pl + nfunc * entsz + (magic == MAGIC_116 ? ps : entsz);
	}

	if (nfunc > (1u << 26))
		return false;
	funcs = xmalloc((nfunc + 1) * sizeof(*funcs));
	for (size_t i = 0; i <= nfunc; i++) {
		const uint8_t *p = tab + ftab + i * entsz;
		uint64_t entry, foff;

		if (new_layout(magic)) {
			entry = pm_le32(p);
			foff = pm_le32(p + 4);
		} else {
			entry = rd_ptr(p, ps);
			foff = i < nfunc ? rd_ptr(p + ps, ps) : 0;
		}
		if (i && entry < funcs[i - 1].entry)
			goto bad;
		funcs[i].entry = entry;
		funcs[i].off = 0;
		if (i == nfunc)
			break;
		if (magic != MAGIC_12)
			foff += go->pcln_off;
		if (foff < recs_min || foff > len || go->funcsz > len - foff)
			goto bad;
		/* The record must repeat its entry. */
		if (new_layout(magic) ? pm_le32(tab + foff) != entry
				      : rd_ptr(tab + foff, ps) != entry)
			goto bad;
		funcs[i].off = (uint32_t)foff;
		if (funcs[i].off != foff)
			goto bad;
	}
	go->funcs = funcs;
	go->nfunc = nfunc;
	return true;
bad:
	free(funcs);
	return false;
}

/* ----- module data, text base, versions ------------------------------------- */

static uint64_t md_word(const struct pm_go *go, const uint8_t *md, unsigned k)
{
	return rd_ptr(md + (size_t)k * go->ptrsize, go->ptrsize);
}

static size_t md_size(const struct pm_go *go)
{
	return (size_t)44 * go->ptrsize;
}

/* Does @md (md_size bytes) look like the moduledata of this table? */
static bool md_check(const struct pm_go *go, const uint8_t *md)
{
	if (md_word(go, md, 0) != go->va)
		return false;
	if (go->magic == MAGIC_12)
		return md_word(go, md, 1) == go->va; /* pclntable slice */
	return md_word(go, md, 1) == go->va + go->name_off &&
	       md_word(go, md, 4) == go->va + go->cu_off &&
	       md_word(go, md, 7) == go->va + go->file_off;
}

static const uint8_t *md_scan(const struct pm_go *go, const uint8_t *p, size_t n, uint64_t va,
			      uint64_t *md_va)
{
	size_t ps = go->ptrsize, need = md_size(go);
	size_t skip = (size_t)((ps - (va % ps)) % ps);

	for (size_t i = skip; i + need <= n; i += ps) {
		if (rd_ptr(p + i, go->ptrsize) == go->va && md_check(go, p + i)) {
			*md_va = va + i;
			return p + i;
		}
	}
	return NULL;
}

static const uint8_t *find_moduledata(const struct pm_go *go, uint64_t *md_va)
{
	const struct pm_elf *e = go->e;
	const struct pm_elf_section *s;
	const uint8_t *md;
	uint64_t a;
	static const char *const secs[] = {".go.module", ".noptrdata", ".data"};

	a = pm_elf_symbol_addr(e, "runtime.firstmoduledata");
	if (a && (md = pm_elf_vaddr_bytes(e, a, md_size(go))) && md_check(go, md)) {
		*md_va = a;
		return md;
	}
	for (size_t i = 0; i < PM_ARRAY_SIZE(secs); i++) {
		s = pm_elf_section(e, secs[i]);
		if (s && s->data && (md = md_scan(go, s->data, s->size, s->addr, md_va)))
			return md;
	}
	for (size_t i = 0; i < pm_elf_nsegments(e); i++) {
		const struct pm_elf_segment *g = pm_elf_segment_at(e, i);

		if (!(g->flags & PF_W) || (g->flags & PF_X))
			continue;
		if ((md = md_scan(go, g->data, g->filesz, g->vaddr, md_va)))
			return md;
	}
	return NULL;
}

static void build_checkpoints(struct pm_go *go);
static uint32_t func_pcdata(const struct pm_go *go, long idx, unsigned k);
static uint64_t func_funcdata(const struct pm_go *go, long idx, unsigned k);
static const char *name_at(const struct pm_go *go, uint32_t off);

/* Is @tree the inline tree of function @idx: entry 0 names a function and points inside it? */
static bool inl_tree_ok(const struct pm_go *go, long idx, uint64_t tree)
{
	size_t esz = go->magic == MAGIC_120 ? 16 : 20;
	const uint8_t *ent = pm_elf_vaddr_bytes(go->e, tree, esz);
	uint32_t nameoff;
	int32_t parentpc;
	const char *name;

	if (!ent)
		return false;
	nameoff = pm_le32(ent + (go->magic == MAGIC_120 ? 4 : 12));
	parentpc = (int32_t)pm_le32(ent + (go->magic == MAGIC_120 ? 8 : 16));
	name = name_at(go, nameoff);
	if (!name || !name[0] || (nameoff && name[-1] != '\0'))
		return false;
	return parentpc >= 0 &&
	       (uint64_t)parentpc < go->funcs[idx + 1].entry - go->funcs[idx].entry;
}

/*
 * Whether @cand works as go:func.* (the base of 1.18+ funcdata offsets):
 * the inline trees of a sample of functions must decode.  The moduledata
 * field moves between releases (1.27 changed the words after "types"), so
 * candidates are tried rather than trusted.
 */
static bool gofunc_ok(struct pm_go *go, uint64_t cand)
{
	size_t checked = 0, step = go->nfunc / 2048 + 1;
	bool ok = true;

	go->gofunc = cand;
	for (size_t i = 0; i < go->nfunc && checked < 32 && ok; i += step) {
		uint64_t tree;

		if (!func_pcdata(go, (long)i, PCDATA_INLTREEINDEX))
			continue;
		tree = func_funcdata(go, (long)i, FUNCDATA_INLTREE);
		if (!tree)
			continue;
		checked++;
		ok = inl_tree_ok(go, (long)i, tree);
	}
	go->gofunc = 0;
	return ok && checked > 0;
}

static void find_gofunc(struct pm_go *go, const uint8_t *md)
{
	uint64_t cand[16];
	size_t n = 0;
	const struct pm_elf_section *s = pm_elf_section(go->e, ".go.func");
	uint64_t a = pm_elf_symbol_addr(go->e, go->magic == MAGIC_120 ? "go:func.*" : "go.func.*");

	if (a)
		cand[n++] = a;
	if (md) {
		/*
		 * Documented slot first (1.18-1.19: word 38, 1.20-1.26: word 40), then
		 * its neighbours: Go 1.27 (lefthook) has it at word 43.
		 */
		static const unsigned w118[] = {38, 37, 39, 40, 41},
				      w120[] = {40, 43, 39, 41, 42, 44, 38, 45, 46};
		const unsigned *w = go->magic == MAGIC_118 ? w118 : w120;
		size_t nw = go->magic == MAGIC_118 ? PM_ARRAY_SIZE(w118) : PM_ARRAY_SIZE(w120);

		for (size_t i = 0; i < nw; i++)
			cand[n++] = md_word(go, md, w[i]);
	}
	if (s)
		cand[n++] = s->addr;
	for (size_t i = 0; i < n; i++) {
		if (cand[i] && gofunc_ok(go, cand[i])) {
			go->gofunc = cand[i];
			return;
		}
	}
}

static void find_text(struct pm_go *go)
{
	const struct pm_elf_section *text = pm_elf_section(go->e, ".text");
	uint64_t md_va = 0, md_text = 0;
	const uint8_t *md = find_moduledata(go, &md_va);

	if (md) {
		go->moduledata = md_va;
		md_text = md_word(go, md, 22);
	}
	if (!new_layout(go->magic)) {
		/* Entries are absolute. */
		go->text_start = md_text ? md_text : go->funcs[0].entry;
	} else if (go->hdr_text) {
		go->text_start = go->hdr_text;
	} else if (md_text) {
		go->text_start = md_text;
	} else {
		uint64_t a = pm_elf_symbol_addr(go->e, "runtime.text");

		go->text_start = a ? a : text ? text->addr : 0;
	}
	if (new_layout(go->magic)) {
		for (size_t i = 0; i <= go->nfunc; i++)
			go->funcs[i].entry += go->text_start;
		find_gofunc(go, md);
	}
	go->text_end = go->funcs[go->nfunc].entry;
}

static bool version_ok(const char *v, size_t n)
{
	if (n < 3 || n >= 48)
		return false;
	if (memcmp(v, "go", 2) != 0 && (n < 5 || memcmp(v, "devel", 5) != 0))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7e)
			return false;
	return true;
}

static void set_version(struct pm_go *go, const void *v, size_t n)
{
	memcpy(go->version, v, n);
	go->version[n] = '\0';
}

static bool buildinfo_at(struct pm_go *go, const uint8_t *p, size_t n)
{
	static const char magic[] = "\xff Go buildinf:";
	unsigned ps;

	if (n < 32 || memcmp(p, magic, 14) != 0)
		return false;
	ps = p[14];
	if (p[15] & 1) /* big-endian */
		return false;
	if (p[15] & 2) {
		/* 1.18+: uvarint length, then the bytes. */
		uint64_t l = 0;
		size_t i = 32;
		unsigned shift = 0;

		while (i < n && shift < 35) {
			l |= (uint64_t)(p[i] & 0x7f) << shift;
			shift += 7;
			if (!(p[i++] & 0x80))
				break;
		}
		if (l > n - i || !version_ok((const char *)p + i, (size_t)l))
			return false;
		set_version(go, p + i, (size_t)l);
		return true;
	}
	if (ps != 4 && ps != 8)
		return false;
	{
		/* Older: a pointer to a Go string header. */
		uint64_t sh = rd_ptr(p + 16, ps), sp, sl;
		const uint8_t *h = pm_elf_vaddr_bytes(go->e, sh, 2 * (size_t)ps), *s;

		if (!h)
			return false;
		sp = rd_ptr(h, ps);
		sl = rd_ptr(h + ps, ps);
		if (sl >= 48 || !(s = pm_elf_vaddr_bytes(go->e, sp, (size_t)sl)) ||
		    !version_ok((const char *)s, (size_t)sl))
			return false;
		set_version(go, s, (size_t)sl);
		return true;
	}
}

static bool find_buildinfo(struct pm_go *go)
{
	const struct pm_elf_section *s = pm_elf_section(go->e, ".go.buildinfo");

	if (s && s->data)
		return buildinfo_at(go, s->data, s->size);
	for (size_t i = 0; i < pm_elf_nsegments(go->e); i++) {
		const struct pm_elf_segment *g = pm_elf_segment_at(go->e, i);

		if (!(g->flags & PF_W) || (g->flags & PF_X))
			continue;
		for (size_t off = (size_t)((16 - g->vaddr % 16) % 16); off + 32 <= g->filesz;
		     off += 16)
			if (g->data[off] == 0xff &&
			    buildinfo_at(go, g->data + off, g->filesz - off))
				return true;
		return false; /* only the first writable segment */
	}
	return false;
}

/* Length of a "go1.N[.M][rcK|betaK]" at @p (at most @n bytes), 0 when none. */
static size_t goversion_len(const uint8_t *p, size_t n)
{
	size_t i = 4, d;

	if (n < 5 || memcmp(p, "go1.", 4) != 0)
		return 0;
	for (d = 0; i < n && p[i] >= '0' && p[i] <= '9' && d < 3; i++, d++)
		;
	if (!d)
		return 0;
	if (i + 1 < n && p[i] == '.' && p[i + 1] >= '0' && p[i + 1] <= '9') {
		for (i++, d = 0; i < n && p[i] >= '0' && p[i] <= '9' && d < 3; i++, d++)
			;
	} else if (i + 2 < n && (memcmp(p + i, "rc", 2) == 0 || memcmp(p + i, "beta", 4) == 0)) {
		i += p[i] == 'r' ? 2 : 4;
		for (d = 0; i < n && p[i] >= '0' && p[i] <= '9' && d < 3; i++, d++)
			;
	}
	return i;
}

/*
 * No build info (esbuild): runtime.buildVersion is a Go string {ptr, len}
 * in the data segment pointing at "go1.N.M" in rodata.  Look for such a
 * pair; failing that, take the first full "go1.N.M" in the read-only data.
 */
static void find_version_string(struct pm_go *go)
{
	const struct pm_elf *e = go->e;
	size_t ps = go->ptrsize; /* 4 or 8: parse_table() checked it */
	const uint8_t *best = NULL;
	size_t bestlen = 0;

	for (size_t i = 0; i < pm_elf_nsegments(e); i++) {
		const struct pm_elf_segment *g = pm_elf_segment_at(e, i);

		if (!(g->flags & PF_W) || (g->flags & PF_X) || g->filesz < 2 * ps)
			continue;
		for (size_t off = (size_t)((ps - g->vaddr % ps) % ps); off + 2 * ps <= g->filesz;
		     off += ps) {
			uint64_t l = rd_ptr(g->data + off + ps, go->ptrsize), a;
			const uint8_t *s;

			if (l < 6 || l > 24)
				continue;
			a = rd_ptr(g->data + off, go->ptrsize);
			s = pm_elf_vaddr_bytes(e, a, (size_t)l);
			if (s && s[0] == 'g' && goversion_len(s, (size_t)l) == l) {
				set_version(go, s, (size_t)l);
				return;
			}
		}
	}
	for (size_t i = 0; i < pm_elf_nsegments(e) && !best; i++) {
		const struct pm_elf_segment *g = pm_elf_segment_at(e, i);
		const uint8_t *p = g->data, *end = g->data + g->filesz;

		if ((g->flags & PF_W) || (g->flags & PF_X))
			continue;
		while (p < end && (p = memmem(p, (size_t)(end - p), "go1.", 4)) != NULL) {
			size_t l = goversion_len(p, (size_t)(end - p));

			if (l && memchr(p + 4, '.', l - 4)) {
				best = p;
				bestlen = l;
				break;
			}
			p += 4;
		}
	}
	if (best)
		set_version(go, best, bestlen);
}

/* ----- open ------------------------------------------------------------------ */

static bool looks_like_go(const struct pm_elf *e)
{
	const char *bid = pm_elf_build_id(e);

	return pm_elf_nsections(e) == 0 || pm_elf_section(e, ".go.buildinfo") ||
	       pm_elf_section(e, ".note.go.buildid") || pm_elf_section(e, ".gopclntab") ||
	       (bid[0] && strchr(bid, '/'));
}

/* Scan the non-exec PT_LOADs (read-only ones first) for a header that validates. */
static int scan_segments(struct pm_go *go)
{
	const struct pm_elf *e = go->e;
	bool saw_magic = false;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < pm_elf_nsegments(e); i++) {
			const struct pm_elf_segment *g = pm_elf_segment_at(e, i);
			size_t skip = (size_t)((4 - g->vaddr % 4) % 4);

			if ((g->flags & PF_X) || !!(g->flags & PF_W) != (pass == 1))
				continue;
			for (size_t off = skip; off + 80 <= g->filesz; off += 4) {
				const uint8_t *p = g->data + off;

				if (p[1] != 0xff || p[2] != 0xff || p[3] != 0xff || p[4] || p[5])
					continue;
				if (p[0] != 0xfb && p[0] != 0xfa && p[0] != 0xf0 && p[0] != 0xf1)
					continue;
				saw_magic = true;
				if (parse_table(go, p, g->filesz - off, g->vaddr + off))
					return 0;
				go->e = e;
			}
		}
	}
	return saw_magic ? -EINVAL : -ENOENT;
}

static void find_funcids(struct pm_go *go);

int pm_go_open(struct pm_go **out, const struct pm_elf *e)
{
	struct pm_go *go = xcalloc(1, sizeof(*go));
	static const char *const names[] = {".gopclntab", ".data.rel.ro.gopclntab"};
	int err = -ENOENT;

	*out = NULL;
	for (size_t i = 0; i < PM_ARRAY_SIZE(names); i++) {
		const struct pm_elf_section *s = pm_elf_section(e, names[i]);

		if (!s || !s->data || s->size == 0)
			continue;
		if (parse_table(go, s->data, s->size, s->addr)) {
			err = 0;
			break;
		}
		err = -EINVAL;
	}
	go->e = e;
	if (err == -ENOENT && looks_like_go(e))
		err = scan_segments(go);
	go->e = e;
	if (err) {
		free(go);
		return err;
	}
	find_text(go);
	build_checkpoints(go);
	if (!find_buildinfo(go))
		find_version_string(go);
	go->inl_funcdata = FUNCDATA_INLTREE;
	find_funcids(go);
	if (go->magic == MAGIC_12) {
		/*
		 * Go 1.12-1.15 had FUNCDATA_RegPointerMaps at 2, which moved the
		 * inline tree to 4; older trees have another entry layout, and
		 * are not expanded.
		 */
		int minor = pm_go_version_minor(go->version);

		go->inl_funcdata = minor <= 0 || minor >= 12 ? 4 : -1;
	}
	*out = go;
	return 0;
}

void pm_go_free(struct pm_go *go)
{
	if (!go)
		return;
	free(go->funcs);
	free(go->ck);
	for (int k = 0; k < 4; k++)
		free(go->ck_start[k]);
	free(go);
}

const char *pm_go_version(const struct pm_go *go)
{
	return go->version;
}

int pm_go_version_minor(const char *version)
{
	char *end;
	long minor;

	if (!version || strncmp(version, "go1.", 4) != 0)
		return -1;
	minor = strtol(version + 4, &end, 10);
	if (end == version + 4 || minor < 0 || minor > 1000)
		return -1;
	return (int)minor;
}

uint32_t pm_go_magic(const struct pm_go *go)
{
	return go->magic;
}

unsigned pm_go_ptrsize(const struct pm_go *go)
{
	return go->ptrsize;
}

unsigned pm_go_quantum(const struct pm_go *go)
{
	return go->quantum;
}

uint64_t pm_go_text_start(const struct pm_go *go)
{
	return go->text_start;
}

uint64_t pm_go_text_end(const struct pm_go *go)
{
	return go->text_end;
}

size_t pm_go_nfuncs(const struct pm_go *go)
{
	return go->nfunc;
}

/* ----- lookups --------------------------------------------------------------- */

long pm_go_find(const struct pm_go *go, uint64_t pc)
{
	if (pc < go->funcs[0].entry || pc >= go->text_end)
		return -1;
	/* Last function with entry <= pc. */
	return (long)pm_count_le_u64(go->funcs, go->nfunc, sizeof(*go->funcs),
				     offsetof(struct go_func, entry), pc) - 1;
}

static bool valid_idx(const struct pm_go *go, long idx)
{
	return idx >= 0 && (size_t)idx < go->nfunc;
}

/* The _func record of @idx; funcsz bytes are known to be inside the table. */
static const uint8_t *func_rec(const struct pm_go *go, long idx)
{
	return go->tab + go->funcs[idx].off;
}

static uint32_t func_field(const struct pm_go *go, const uint8_t *f, size_t k)
{
	return pm_le32(f + go->fbase + k);
}

enum { F_NAME = 0, F_PCSP = 12, F_PCFILE = 16, F_PCLN = 20, F_NPCDATA = 24, F_CUOFF = 28,
       F_STARTLINE = 32 };

/* NUL-terminated string at @off of the sub-table [base, end), or NULL. */
static const char *str_at(const struct pm_go *go, size_t base, size_t end, uint64_t off)
{
	const uint8_t *p;

	if (off >= end - base)
		return NULL;
	p = go->tab + base + off;
	return memchr(p, 0, end - base - off) ? (const char *)p : NULL;
}

static const char *name_at(const struct pm_go *go, uint32_t off)
{
	return str_at(go, go->name_off, go->name_end, off);
}

/*
 * The funcIDs that say what Go's tracebacks hide, read off the functions
 * that carry them (only the few with a funcID are named).
 */
static void find_funcids(struct pm_go *go)
{
	static const char *const panics[] = { "runtime.gopanic", "runtime.sigpanic",
					      "runtime.panicwrap" };

	for (size_t i = 0; i < go->nfunc; i++) {
		const uint8_t *f = func_rec(go, (long)i);
		const char *name;

		if (!f || !f[go->ftail])
			continue;
		name = name_at(go, func_field(go, f, F_NAME));
		if (!name)
			continue;
		if (!strcmp(name, "runtime.deferreturn"))
			go->fid_wrapper = f[go->ftail];
		for (size_t k = 0; k < PM_ARRAY_SIZE(panics); k++)
			if (!strcmp(name, panics[k]))
				go->fid_panic[k] = f[go->ftail];
	}
}

uint64_t pm_go_func_entry(const struct pm_go *go, long idx)
{
	return valid_idx(go, idx) ? go->funcs[idx].entry : 0;
}

const char *pm_go_func_name(const struct pm_go *go, long idx)
{
	if (!valid_idx(go, idx))
		return NULL;
	return name_at(go, func_field(go, func_rec(go, idx), F_NAME));
}

long pm_go_func_by_name(const struct pm_go *go, const char *name)
{
	for (size_t i = 0; i < go->nfunc && i < PM_GO_MAX_FUNCS; i++) {
		const char *f = pm_go_func_name(go, (long)i);

		if (f && !strcmp(f, name))
			return (long)i;
	}
	return -1;
}

uint64_t pm_go_func_end(const struct pm_go *go, long idx)
{
	if (!valid_idx(go, idx))
		return 0;
	return (size_t)idx + 1 < go->nfunc ? go->funcs[idx + 1].entry : go->text_end;
}

unsigned pm_go_func_flags(const struct pm_go *go, long idx)
{
	if (!valid_idx(go, idx) || go->magic == MAGIC_12)
		return 0;
	return func_rec(go, idx)[go->ftail + 1] & 7;
}

static bool uvarint(const uint8_t **pp, const uint8_t *end, uint32_t *out)
{
	const uint8_t *p = *pp;
	uint32_t v = 0;

	for (unsigned shift = 0; shift < 35; shift += 7) {
		if (p >= end)
			return false;
		v |= (uint32_t)(*p & 0x7f) << shift;
		if (!(*p++ & 0x80)) {
			*pp = p;
			*out = v;
			return true;
		}
	}
	return false;
}

/*
 * Where to start decoding program @off of function @idx for @target: at the
 * last checkpoint that ends at or before @target, else at the beginning.
 */
static bool pc_seek(const struct pm_go *go, enum pc_kind kind, long idx, uint32_t off,
		    uint64_t target, const uint8_t **pp, uint32_t *v, uint64_t *pc, bool *first)
{
	uint64_t entry = go->funcs[idx].entry;

	if (off == 0 || off >= go->pc_end - go->pc_off)
		return false;
	*pp = go->tab + go->pc_off + off;
	*v = (uint32_t)-1;
	*pc = entry;
	*first = true;
	if (go->ck_start[kind]) {
		size_t lo = go->ck_start[kind][idx], hi = go->ck_start[kind][idx + 1];

		/* Last checkpoint with entry + pcoff <= target. */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (entry + go->ck[mid].pcoff <= target)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo > go->ck_start[kind][idx]) {
			const struct pc_ck *c = &go->ck[lo - 1];

			*pp = go->tab + go->pc_off + c->poff;
			*v = c->val;
			*pc = entry + c->pcoff;
			*first = false;
		}
	}
	return true;
}

/*
 * Value of the pcvalue program at @off (into pctab) of function @idx for
 * @target.  The program is (value delta, pc delta) varint pairs; a zero
 * value delta after the first pair ends it.
 */
static bool pcvalue(const struct pm_go *go, enum pc_kind kind, long idx, uint32_t off,
		    uint64_t target, int32_t *val)
{
	const uint8_t *p, *end = go->tab + go->pc_end;
	uint32_t v;
	uint64_t pc;
	bool first;

	if (!pc_seek(go, kind, idx, off, target, &p, &v, &pc, &first))
		return false;
	for (;; first = false) {
		uint32_t uv, pd;

		if (!uvarint(&p, end, &uv) || (uv == 0 && !first))
			return false;
		v += (uv & 1) ? ~(uv >> 1) : (uv >> 1);
		if (!uvarint(&p, end, &pd))
			return false;
		pc += (uint64_t)pd * go->quantum;
		if (target < pc) {
			*val = (int32_t)v;
			return true;
		}
	}
}

static uint32_t prog_off(const struct pm_go *go, enum pc_kind kind, long idx);

/*
 * Checkpoints every CK_EVERY pairs of the long programs, built once at open,
 * so that a lookup in a big function (esbuild has 60 KB ones) decodes at
 * most CK_EVERY pairs after a binary search.
 */
static void build_checkpoints(struct pm_go *go)
{
	size_t cap = 0;

	for (int kind = 0; kind < 4; kind++) {
		uint32_t *start = xmalloc((go->nfunc + 1) * sizeof(*start));

		for (size_t i = 0; i < go->nfunc; i++) {
			uint32_t off = prog_off(go, (enum pc_kind)kind, (long)i);
			const uint8_t *p, *p0, *end = go->tab + go->pc_end;
			uint32_t v = (uint32_t)-1;
			uint64_t pc = 0, size = go->funcs[i + 1].entry - go->funcs[i].entry;

			start[i] = (uint32_t)go->nck;
			if (off == 0 || off >= go->pc_end - go->pc_off)
				continue;
			p0 = p = go->tab + go->pc_off + off;
			for (size_t step = 1;; step++) {
				uint32_t uv, pd;

				if (!uvarint(&p, end, &uv) || (uv == 0 && step > 1))
					break;
				v += (uv & 1) ? ~(uv >> 1) : (uv >> 1);
				if (!uvarint(&p, end, &pd))
					break;
				pc += (uint64_t)pd * go->quantum;
				if (pc >= size || go->nck >= UINT32_MAX)
					break;
				if (step % CK_EVERY == 0) {
					PM_GROW(go->ck, cap, go->nck + 1);
					go->ck[go->nck].pcoff = (uint32_t)pc;
					go->ck[go->nck].val = v;
					go->ck[go->nck].poff =
						(uint32_t)(off + (size_t)(p - p0));
					go->nck++;
				}
			}
		}
		start[go->nfunc] = (uint32_t)go->nck;
		go->ck_start[kind] = start;
	}
}

int32_t pm_go_spdelta(const struct pm_go *go, long idx, uint64_t pc)
{
	int32_t v;

	if (!valid_idx(go, idx))
		return -1;
	if (!pcvalue(go, PC_SP, idx, func_field(go, func_rec(go, idx), F_PCSP), pc, &v) ||
	    v < 0)
		return -1;
	return v;
}

static const char *file_name(const struct pm_go *go, const uint8_t *f, int32_t fno)
{
	if (fno < 0)
		return NULL;
	if (go->magic == MAGIC_12) {
		uint32_t o;

		if (fno == 0 || (uint32_t)fno >= go->nfiletab)
			return NULL;
		o = pm_le32(go->tab + go->file_off + 4 * (size_t)fno);
		return str_at(go, 0, go->len, o);
	} else {
		uint64_t ci = (uint64_t)func_field(go, f, F_CUOFF) + (uint32_t)fno;
		uint32_t o;

		if (ci >= (go->cu_end - go->cu_off) / 4)
			return NULL;
		o = pm_le32(go->tab + go->cu_off + 4 * ci);
		if (o == 0xffffffffu)
			return NULL;
		return str_at(go, go->file_off, go->file_end, o);
	}
}

/* pcdata[k] of record @f, 0 when absent. */
static uint32_t func_pcdata(const struct pm_go *go, long idx, unsigned k)
{
	const uint8_t *f = func_rec(go, idx);
	uint32_t n = func_field(go, f, F_NPCDATA);
	size_t off = go->funcs[idx].off + go->funcsz + 4 * (size_t)k;

	if (k >= n || off + 4 > go->len)
		return 0;
	return pm_le32(go->tab + off);
}

static uint32_t prog_off(const struct pm_go *go, enum pc_kind kind, long idx)
{
	const uint8_t *f = func_rec(go, idx);

	switch (kind) {
	case PC_SP: return func_field(go, f, F_PCSP);
	case PC_FILE: return func_field(go, f, F_PCFILE);
	case PC_LN: return func_field(go, f, F_PCLN);
	case PC_INL: return func_pcdata(go, idx, PCDATA_INLTREEINDEX);
	}
	return 0;
}

/* vaddr of funcdata[k] of @idx, 0 when absent. */
static uint64_t func_funcdata(const struct pm_go *go, long idx, unsigned k)
{
	const uint8_t *f = func_rec(go, idx);
	uint32_t npc = func_field(go, f, F_NPCDATA);
	unsigned nfd = f[go->ftail + 3];
	uint64_t off = (uint64_t)go->funcs[idx].off + go->funcsz + 4 * (uint64_t)npc;

	if (k >= nfd)
		return 0;
	if (new_layout(go->magic)) {
		uint32_t v;

		off += 4 * (uint64_t)k;
		if (!go->gofunc || off + 4 > go->len)
			return 0;
		v = pm_le32(go->tab + off);
		return v == 0xffffffffu ? 0 : go->gofunc + v;
	}
	/* Pointers, aligned to the pointer size in memory. */
	if (go->ptrsize == 8 && ((go->va + off) & 4))
		off += 4;
	off += (uint64_t)k * go->ptrsize;
	if (off + go->ptrsize > go->len)
		return 0;
	return rd_ptr(go->tab + off, go->ptrsize);
}

/*
 * One pass over the program at @off answering all @n targets (values -1
 * where the program has none).  Symbolizing one pc with inlining asks the
 * pcfile and pcln programs about every frame's pc; walking each program
 * once instead of once per frame is what keeps deep inlining cheap.
 */
static void pcvalue_multi(const struct pm_go *go, enum pc_kind kind, long idx, uint32_t off,
			  const uint64_t *targets, int32_t *vals, size_t n)
{
	const uint8_t *p, *end = go->tab + go->pc_end;
	uint32_t v;
	uint64_t pc, lowest = UINT64_MAX;
	size_t left = n;
	bool first;

	for (size_t i = 0; i < n; i++) {
		vals[i] = -1;
		lowest = PM_MIN(lowest, targets[i]);
	}
	if (!pc_seek(go, kind, idx, off, lowest, &p, &v, &pc, &first))
		return;
	for (; left; first = false) {
		uint32_t uv, pd;
		uint64_t prev = pc;

		if (!uvarint(&p, end, &uv) || (uv == 0 && !first))
			return;
		v += (uv & 1) ? ~(uv >> 1) : (uv >> 1);
		if (!uvarint(&p, end, &pd))
			return;
		pc += (uint64_t)pd * go->quantum;
		for (size_t i = 0; i < n; i++) {
			if (targets[i] >= prev && targets[i] < pc) {
				vals[i] = (int32_t)v;
				left--;
			}
		}
	}
}

/* What Go's tracebacks make of a frame of function @name with funcID @fid. */
static unsigned frame_kind(const struct pm_go *go, uint8_t fid, const char *name)
{
	unsigned k = 0;

	if (fid && fid == go->fid_wrapper)
		k |= PM_GO_WRAPPER;
	for (size_t i = 0; i < PM_ARRAY_SIZE(go->fid_panic); i++)
		if (fid && fid == go->fid_panic[i])
			k |= PM_GO_PANIC;
	if (!strcmp(name, "runtime.goexit"))
		k |= PM_GO_GOEXIT;
	return k;
}

size_t pm_go_frames(const struct pm_go *go, uint64_t pc, struct pm_go_frame *out, size_t max)
{
	long idx = pm_go_find(go, pc);
	const uint8_t *f;
	uint64_t entry, tree = 0, pcs[64];
	int32_t vals[64];
	uint32_t inlpc;
	size_t n = 0;
	const char *name;

	if (idx < 0 || max == 0)
		return 0;
	if (max > PM_ARRAY_SIZE(pcs))
		max = PM_ARRAY_SIZE(pcs);
	f = func_rec(go, idx);
	entry = go->funcs[idx].entry;
	name = name_at(go, func_field(go, f, F_NAME));
	if (!name)
		return 0;
	inlpc = func_pcdata(go, idx, PCDATA_INLTREEINDEX);
	if (inlpc && go->inl_funcdata >= 0)
		tree = func_funcdata(go, idx, (unsigned)go->inl_funcdata);
	if (tree) {
		size_t esz = go->magic == MAGIC_120 ? 16 : 20;
		int32_t ix;

		while (n + 1 < max) {
			const uint8_t *ent;
			uint32_t nameoff;
			int32_t parentpc, sl = 0;
			uint64_t npc;

			if (!pcvalue(go, PC_INL, idx, inlpc, pc, &ix) || ix < 0)
				break;
			ent = pm_elf_vaddr_bytes(go->e, tree + (uint64_t)ix * esz, esz);
			if (!ent)
				break;
			if (go->magic == MAGIC_120) {
				nameoff = pm_le32(ent + 4);
				parentpc = (int32_t)pm_le32(ent + 8);
				sl = (int32_t)pm_le32(ent + 12);
			} else {
				nameoff = pm_le32(ent + 12);
				parentpc = (int32_t)pm_le32(ent + 16);
			}
			out[n].func = name_at(go, nameoff);
			if (!out[n].func)
				break;
			/* the entry's funcID: 1.16+ (older entries may not have it) */
			out[n].kind = go->magic == MAGIC_12 ? 0
				      : frame_kind(go, ent[go->magic == MAGIC_120 ? 0 : 2], out[n].func);
			out[n].start_line = sl > 0 ? sl : 0;
			pcs[n++] = pc;
			npc = entry + (uint64_t)(int64_t)parentpc;
			if (parentpc < 0 || npc >= go->funcs[idx + 1].entry || npc == pc)
				break;
			pc = npc;
		}
	}
	out[n].func = name;
	out[n].kind = frame_kind(go, f[go->ftail], name);
	out[n].start_line = 0;
	if (go->magic == MAGIC_120) {
		int32_t sl = (int32_t)func_field(go, f, F_STARTLINE);

		out[n].start_line = sl > 0 ? sl : 0;
	}
	pcs[n++] = pc;

	/* Files and lines of all frames: the outer function's tables at each frame's pc. */
	pcvalue_multi(go, PC_FILE, idx, func_field(go, f, F_PCFILE), pcs, vals, n);
	for (size_t i = 0; i < n; i++) {
		out[i].file = vals[i] >= 0 ? file_name(go, f, vals[i]) : NULL;
		if (!out[i].file)
			out[i].file = "";
	}
	pcvalue_multi(go, PC_LN, idx, func_field(go, f, F_PCLN), pcs, vals, n);
	for (size_t i = 0; i < n; i++)
		out[i].line = vals[i] > 0 ? vals[i] : 0;
	return n;
}
