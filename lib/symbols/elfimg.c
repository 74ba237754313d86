/*
 * elfimg: one ELF file through libelf.  The file is mapped privately (or
 * copied for pm_elf_open_mem) and handed to elf_memory(); libelf parses the
 * headers, we keep flat tables of sections, PT_LOAD segments and function
 * symbols so that lookups later are plain array walks or binary searches.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/elfimg.h"
#include "base/util.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif
#define PM_NT_GO_BUILDID 4

struct pm_elf_sym {
	uint64_t start, end; /* [start, end) */
	const char *name;
	unsigned char type; /* STT_* */
	unsigned char bind; /* STB_* */
};

struct pm_elf {
	uint8_t *buf;
	size_t len;
	bool mapped;
	Elf *elf;
	uint16_t machine, type;
	uint64_t entry;

	struct pm_elf_section *secs;
	size_t nsecs;
	struct pm_elf_segment *segs;
	size_t nsegs;

	struct pm_elf_sym *syms;
	size_t nsyms;
	Elf_Scn *symscn; /* the table the symbols came from, for pm_elf_symbol_addr */

	char build_id[256];
};

/* [off, off+size) inside a buffer of @len bytes, without overflow. */
static bool in_bounds(uint64_t off, uint64_t size, size_t len)
{
	return off <= len && size <= len - off;
}

static void load_sections(struct pm_elf *e)
{
	size_t shstrndx, n = 0, cap = 0;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(e->elf, &shstrndx) != 0)
		return;
	/* Bounded by the section count libelf validated against the file size. */
	while ((scn = elf_nextscn(e->elf, scn)) != NULL) {
		GElf_Shdr sh;
		struct pm_elf_section *s;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e->elf, shstrndx, sh.sh_name);
		PM_GROW(e->secs, cap, n + 1);
		s = &e->secs[n++];
		s->name = name ? name : "";
		s->addr = sh.sh_addr;
		s->offset = sh.sh_offset;
		s->size = sh.sh_size;
		s->type = sh.sh_type;
		s->flags = sh.sh_flags;
		s->data = NULL;
		if (sh.sh_type != SHT_NOBITS) {
			if (in_bounds(sh.sh_offset, sh.sh_size, e->len))
				s->data = e->buf + sh.sh_offset;
			else
				s->size = 0; /* lies about its extent: treat as empty */
		}
	}
	e->nsecs = n;
}

static void load_segments(struct pm_elf *e)
{
	size_t phnum, n = 0;

	if (elf_getphdrnum(e->elf, &phnum) != 0 || phnum == 0)
		return;
	e->segs = xcalloc(phnum, sizeof(*e->segs));
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		struct pm_elf_segment *s;

		if (!gelf_getphdr(e->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (!in_bounds(ph.p_offset, ph.p_filesz, e->len))
			continue;
		if (ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			continue;
		s = &e->segs[n++];
		s->vaddr = ph.p_vaddr;
		s->memsz = ph.p_memsz;
		s->offset = ph.p_offset;
		s->filesz = PM_MIN(ph.p_filesz, ph.p_memsz);
		s->flags = ph.p_flags;
		s->data = e->buf + ph.p_offset;
	}
	e->nsegs = n;
}

static void hex_id(char *out, size_t outlen, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t o = 0;

	for (size_t i = 0; i < n && o + 2 < outlen; i++) {
		out[o++] = digits[p[i] >> 4];
		out[o++] = digits[p[i] & 15];
	}
	out[o] = '\0';
}

/* Look at the notes in @d: GNU build ID wins, the Go one is kept in @go. */
static bool scan_notes(struct pm_elf *e, Elf_Data *d, char *go, size_t golen)
{
	size_t off = 0, next;
	GElf_Nhdr nh;
	size_t name_off, desc_off;

	if (!d || !d->d_buf)
		return false;
	while (off < d->d_size &&
	       (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0 && next > off) {
		const char *nm = (const char *)d->d_buf + name_off;
		const uint8_t *desc = (const uint8_t *)d->d_buf + desc_off;

		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(nm, "GNU", 4) == 0 &&
		    nh.n_descsz > 0) {
			hex_id(e->build_id, sizeof(e->build_id), desc, nh.n_descsz);
			return true;
		}
		if (nh.n_type == PM_NT_GO_BUILDID && (nh.n_namesz == 3 || nh.n_namesz == 4) &&
		    memcmp(nm, "Go", 3) == 0 &&
		    !go[0]) {
			size_t n = PM_MIN((size_t)nh.n_descsz, golen - 1);

			/* A string; stop at an embedded NUL or anything unprintable. */
			for (size_t i = 0; i < n; i++) {
				if (desc[i] < 0x20 || desc[i] > 0x7e) {
					n = i;
					break;
				}
			}
			memcpy(go, desc, n);
			go[n] = '\0';
		}
		off = next;
	}
	return false;
}

static void load_build_id(struct pm_elf *e)
{
	char go[sizeof(e->build_id)] = "";
	Elf_Scn *scn = NULL;
	bool found = false, had_note_sec = false;

	while (!found && (scn = elf_nextscn(e->elf, scn)) != NULL) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		if (!in_bounds(sh.sh_offset, sh.sh_size, e->len))
			continue;
		had_note_sec = true;
		found = scan_notes(e, elf_getdata(scn, NULL), go, sizeof(go));
	}
	if (!found && !had_note_sec) {
		/* No section headers: try PT_NOTE segments. */
		size_t phnum;

		if (elf_getphdrnum(e->elf, &phnum) == 0) {
			for (size_t i = 0; i < phnum && !found; i++) {
				GElf_Phdr ph;

				if (!gelf_getphdr(e->elf, (int)i, &ph) || ph.p_type != PT_NOTE ||
				    !in_bounds(ph.p_offset, ph.p_filesz, e->len))
					continue;
				Elf_Data *d = elf_getdata_rawchunk(e->elf, (int64_t)ph.p_offset,
								   ph.p_filesz, ELF_T_NHDR);

				found = scan_notes(e, d, go, sizeof(go));
			}
		}
	}
	if (!found)
		memcpy(e->build_id, go, sizeof(go));
}

static int sym_cmp(const void *a, const void *b)
{
	const struct pm_elf_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* Same address: the one we want to keep first (FUNC, then GLOBAL, then sized). */
	if (x->type != y->type)
		return x->type == STT_FUNC ? -1 : 1;
	if (x->bind != y->bind)
		return x->bind == STB_GLOBAL ? -1 : y->bind == STB_GLOBAL ? 1 : 0;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return 0;
}

static const struct pm_elf_section *exec_section_of(const struct pm_elf *e, uint64_t addr)
{
	for (size_t i = 0; i < e->nsecs; i++) {
		const struct pm_elf_section *s = &e->secs[i];

		if ((s->flags & SHF_EXECINSTR) && (s->flags & SHF_ALLOC) && addr >= s->addr &&
		    addr - s->addr < s->size)
			return s;
	}
	return NULL;
}

static bool load_symtab(struct pm_elf *e, uint32_t want)
{
	Elf_Scn *scn = NULL;
	size_t n = 0, cap = 0;

	while ((scn = elf_nextscn(e->elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t count;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != want || sh.sh_entsize == 0)
			continue;
		if (!in_bounds(sh.sh_offset, sh.sh_size, e->len))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		e->symscn = scn;
		count = sh.sh_size / sh.sh_entsize;
		for (size_t i = 1; i < count; i++) {
			GElf_Sym sym;
			const struct pm_elf_section *xs;
			const char *name;
			unsigned char type;
			struct pm_elf_sym *o;

			if (!gelf_getsym(d, (int)i, &sym))
				break;
			type = GELF_ST_TYPE(sym.st_info);
			if ((type != STT_FUNC && type != STT_NOTYPE) || sym.st_shndx == SHN_UNDEF ||
			    sym.st_value == 0)
				continue;
			xs = exec_section_of(e, sym.st_value);
			if (!xs && type == STT_NOTYPE)
				continue;
			name = elf_strptr(e->elf, sh.sh_link, sym.st_name);
			if (!name || !name[0])
				continue;
			PM_GROW(e->syms, cap, n + 1);
			o = &e->syms[n++];
			o->start = sym.st_value;
			o->end = sym.st_size && sym.st_value + sym.st_size > sym.st_value
					 ? sym.st_value + sym.st_size
					 : 0;
			o->name = name;
			o->type = type;
			o->bind = GELF_ST_BIND(sym.st_info);
		}
		break;
	}
	if (!n)
		return false;
	qsort(e->syms, n, sizeof(*e->syms), sym_cmp);
	/* Drop duplicates at one address (the best sorts first). */
	{
		size_t w = 0;

		for (size_t i = 0; i < n; i++) {
			if (w && e->syms[w - 1].start == e->syms[i].start)
				continue;
			e->syms[w++] = e->syms[i];
		}
		n = w;
	}
	/* Size-0 symbols extend to the next symbol or the end of their section. */
	for (size_t i = 0; i < n; i++) {
		struct pm_elf_sym *s = &e->syms[i];

		if (s->end == 0) {
			const struct pm_elf_section *xs = exec_section_of(e, s->start);
			uint64_t lim = xs ? xs->addr + xs->size : UINT64_MAX;

			s->end = i + 1 < n ? PM_MIN(e->syms[i + 1].start, lim) : lim;
			if (s->end <= s->start)
				s->end = s->start + 1;
		}
	}
	e->nsyms = n;
	return true;
}

static struct pm_elf *open_buf(uint8_t *buf, size_t len, bool mapped)
{
	struct pm_elf *e = xcalloc(1, sizeof(*e));
	GElf_Ehdr eh;

	e->buf = buf;
	e->len = len;
	e->mapped = mapped;
	if (elf_version(EV_CURRENT) == EV_NONE)
		goto bad;
	e->elf = elf_memory((char *)buf, len);
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF || !gelf_getehdr(e->elf, &eh))
		goto bad;
	e->machine = eh.e_machine;
	e->type = eh.e_type;
	e->entry = eh.e_entry;
	load_sections(e);
	load_segments(e);
	load_build_id(e);
	if (!load_symtab(e, SHT_SYMTAB))
		load_symtab(e, SHT_DYNSYM);
	return e;
bad:
	pm_elf_free(e);
	errno = ENOEXEC;
	return NULL;
}

struct pm_elf *pm_elf_open(const char *path)
{
	struct stat st;
	void *p;
	int fd, err;

	fd = pm_open_regular(path);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	if (fstat(fd, &st) != 0) {
		err = errno;
		close(fd);
		errno = err;
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < 16) {
		close(fd);
		errno = S_ISDIR(st.st_mode) ? EISDIR : ENOEXEC;
		return NULL;
	}
	/* Private and writable: should libelf convert anything in place, it is a private copy. */
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	err = errno;
	close(fd);
	if (p == MAP_FAILED) {
		errno = err;
		return NULL;
	}
	return open_buf(p, (size_t)st.st_size, true);
}

struct pm_elf *pm_elf_open_mem(const void *buf, size_t len)
{
	uint8_t *copy;

	if (!buf || len < 16) {
		errno = ENOEXEC;
		return NULL;
	}
	copy = xmalloc(len);
	memcpy(copy, buf, len);
	return open_buf(copy, len, false);
}

void pm_elf_free(struct pm_elf *e)
{
	if (!e)
		return;
	if (e->elf)
		elf_end(e->elf);
	if (e->mapped)
		munmap(e->buf, e->len);
	else
		free(e->buf);
	free(e->secs);
	free(e->segs);
	free(e->syms);
	free(e);
}

uint16_t pm_elf_machine(const struct pm_elf *e)
{
	return e->machine;
}

uint16_t pm_elf_type(const struct pm_elf *e)
{
	return e->type;
}

uint64_t pm_elf_entry(const struct pm_elf *e)
{
	return e->entry;
}

const uint8_t *pm_elf_bytes(const struct pm_elf *e, size_t *len)
{
	if (len)
		*len = e->len;
	return e->buf;
}

const struct pm_elf_section *pm_elf_section(const struct pm_elf *e, const char *name)
{
	for (size_t i = 0; i < e->nsecs; i++)
		if (strcmp(e->secs[i].name, name) == 0)
			return &e->secs[i];
	return NULL;
}

size_t pm_elf_nsections(const struct pm_elf *e)
{
	return e->nsecs;
}

const struct pm_elf_section *pm_elf_section_at(const struct pm_elf *e, size_t i)
{
	return i < e->nsecs ? &e->secs[i] : NULL;
}

size_t pm_elf_nsegments(const struct pm_elf *e)
{
	return e->nsegs;
}

const struct pm_elf_segment *pm_elf_segment_at(const struct pm_elf *e, size_t i)
{
	return i < e->nsegs ? &e->segs[i] : NULL;
}

const uint8_t *pm_elf_vaddr_bytes(const struct pm_elf *e, uint64_t vaddr, size_t len)
{
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct pm_elf_segment *s = &e->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr <= s->filesz &&
		    len <= s->filesz - (vaddr - s->vaddr))
			return s->data + (vaddr - s->vaddr);
	}
	return NULL;
}

int64_t pm_elf_vaddr_to_offset(const struct pm_elf *e, uint64_t vaddr)
{
	for (size_t i = 0; i < pm_elf_nsegments(e); i++) {
		const struct pm_elf_segment *sg = pm_elf_segment_at(e, i);

		if (vaddr >= sg->vaddr && vaddr - sg->vaddr < sg->filesz)
			return (int64_t)(vaddr - sg->vaddr + sg->offset);
	}
	return -1;
}

int64_t pm_elf_offset_to_vaddr(const struct pm_elf *e, uint64_t off)
{
	/* Exact containment first, then the page-aligned start a mapping would use. */
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct pm_elf_segment *s = &e->segs[i];

		if (off >= s->offset && off - s->offset < PM_MAX(s->filesz, 1))
			return (int64_t)(s->vaddr + (off - s->offset));
	}
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct pm_elf_segment *s = &e->segs[i];
		uint64_t pgoff = s->offset & ~(uint64_t)0xfff;

		if (off >= pgoff && off < s->offset && s->vaddr >= s->offset - off)
			return (int64_t)(s->vaddr - (s->offset - off));
	}
	return -1;
}

struct Elf *pm_elf_libelf(const struct pm_elf *e)
{
	return e->elf;
}

const char *pm_elf_build_id(const struct pm_elf *e)
{
	return e->build_id;
}

const char *pm_elf_symbol(const struct pm_elf *e, uint64_t vaddr, uint64_t *start)
{
	/* Last symbol with start <= vaddr. */
	size_t lo = pm_count_le_u64(e->syms, e->nsyms, sizeof(*e->syms),
				    offsetof(struct pm_elf_sym, start), vaddr);

	if (lo == 0)
		return NULL;
	if (vaddr >= e->syms[lo - 1].end)
		return NULL;
	if (start)
		*start = e->syms[lo - 1].start;
	return e->syms[lo - 1].name;
}

uint64_t pm_elf_symbol_addr(const struct pm_elf *e, const char *name)
{
	GElf_Shdr sh;
	Elf_Data *d;
	size_t count;

	if (!e->symscn || !gelf_getshdr(e->symscn, &sh) || sh.sh_entsize == 0)
		return 0;
	d = elf_getdata(e->symscn, NULL);
	if (!d)
		return 0;
	count = sh.sh_size / sh.sh_entsize;
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		const char *nm;

		if (!gelf_getsym(d, (int)i, &sym))
			break;
		if (sym.st_shndx == SHN_UNDEF || sym.st_name == 0)
			continue;
		nm = elf_strptr(e->elf, sh.sh_link, sym.st_name);
		if (nm && strcmp(nm, name) == 0)
			return sym.st_value;
	}
	return 0;
}
