/*
 * libFuzzer target: Go version detection (build info and the fallbacks)
 * through pm_go_open.  The input becomes the data of a minimal ELF around a
 * small valid Go 1.2-layout function table, so pm_go_open always gets past
 * the table and on to the version search:
 *   [0] flags: bit 0: a .go.buildinfo section over the data (else only the
 *       segment scan finds it); bit 1: data 16-byte misaligned in its segment
 *   [1..] the data, placed both in a writable PT_LOAD at 0x600000 (build info,
 *       runtime.buildVersion {ptr, len} pairs) and in the read-only PT_LOAD
 *       after the table at 0x500000 + 128 (strings the pointers may name).
 * Whatever comes back as the version must be a printable, terminated string
 * of fewer than 48 bytes.
 */
#include "fuzz-elfhdr.h"
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/elfimg.h"
#include "symbols/gopclntab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RO_VA 0x500000u
#define RW_VA 0x600000u
#define TXT_VA 0x401000u
#define TAB_LEN 128
static const char shstr[] = "\0.text\0.gopclntab\0.go.buildinfo\0.shstrtab";

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* Go 1.2 layout, pointer size 8, quantum 1, one function [TXT_VA, TXT_VA+0x100). */
static void make_table(uint8_t *t)
{
	memset(t, 0, TAB_LEN);
	put32(t, 0xfffffffb);
	t[6] = 1;
	t[7] = 8;
	put64(t + 8, 1);          /* nfunc */
	put64(t + 16, TXT_VA);    /* functab[0].entry */
	put64(t + 24, 48);        /* functab[0].funcoff */
	put64(t + 32, TXT_VA + 0x100); /* end pc */
	put32(t + 40, 44);        /* filetab offset */
	put32(t + 44, 0);         /* nfiletab */
	put64(t + 48, TXT_VA);    /* _func.entry */
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t insize)
{
	const uint8_t *d = in + 1;
	size_t n, mis, ro_off, rw_off, strs, sh, len;
	uint8_t *img;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	Elf64_Shdr *s;
	struct pm_elf *e;
	struct pm_go *go = NULL;
	unsigned nsec;

	if (insize < 1 || insize > (1u << 20))
		return 0;
	n = insize - 1;
	mis = in[0] & 2 ? 8 : 0;
	nsec = in[0] & 1 ? 5 : 4;
	strs = sizeof(Elf64_Ehdr) + 3 * sizeof(Elf64_Phdr);
	ro_off = 4096;
	rw_off = (ro_off + TAB_LEN + n + 4095) & ~(size_t)4095;
	sh = (rw_off + mis + n + 7) & ~(size_t)7;
	len = sh + nsec * sizeof(Elf64_Shdr);
	img = calloc(1, len);
	if (!img)
		return 0;
	eh = (Elf64_Ehdr *)img;
	fuzz_elf_header(eh, sh, 3, (uint16_t)nsec, (uint16_t)(nsec - 1));
	ph = (Elf64_Phdr *)(img + eh->e_phoff);
	/* text: no file bytes needed, just an executable segment */
	ph[0].p_type = PT_LOAD;
	ph[0].p_flags = PF_R | PF_X;
	ph[0].p_vaddr = ph[0].p_paddr = TXT_VA;
	ph[0].p_memsz = 0x100;
	ph[0].p_align = 4096;
	ph[1].p_type = PT_LOAD;
	ph[1].p_flags = PF_R;
	ph[1].p_offset = ro_off;
	ph[1].p_vaddr = ph[1].p_paddr = RO_VA;
	ph[1].p_filesz = ph[1].p_memsz = TAB_LEN + n;
	ph[1].p_align = 4096;
	ph[2].p_type = PT_LOAD;
	ph[2].p_flags = PF_R | PF_W;
	ph[2].p_offset = rw_off;
	ph[2].p_vaddr = ph[2].p_paddr = RW_VA;
	ph[2].p_filesz = ph[2].p_memsz = mis + n;
	ph[2].p_align = 4096;
	memcpy(img + strs, shstr, sizeof(shstr));
	make_table(img + ro_off);
	memcpy(img + ro_off + TAB_LEN, d, n);
	memcpy(img + rw_off + mis, d, n);

	s = (Elf64_Shdr *)(img + sh);
	s[1].sh_name = 1; /* .text */
	s[1].sh_type = SHT_NOBITS;
	s[1].sh_flags = SHF_ALLOC | SHF_EXECINSTR;
	s[1].sh_addr = TXT_VA;
	s[1].sh_size = 0x100;
	s[2].sh_name = 7; /* .gopclntab */
	s[2].sh_type = SHT_PROGBITS;
	s[2].sh_flags = SHF_ALLOC;
	s[2].sh_addr = RO_VA;
	s[2].sh_offset = ro_off;
	s[2].sh_size = TAB_LEN;
	if (nsec == 5) {
		s[3].sh_name = 18; /* .go.buildinfo */
		s[3].sh_type = SHT_PROGBITS;
		s[3].sh_flags = SHF_ALLOC | SHF_WRITE;
		s[3].sh_addr = RW_VA + mis;
		s[3].sh_offset = rw_off + mis;
		s[3].sh_size = n;
	}
	s[nsec - 1].sh_name = 32; /* .shstrtab */
	s[nsec - 1].sh_type = SHT_STRTAB;
	s[nsec - 1].sh_offset = strs;
	s[nsec - 1].sh_size = sizeof(shstr);

	e = pm_elf_open_mem(img, len);
	free(img);
	if (!e)
		abort(); /* the frame is always a valid ELF */
	if (pm_go_open(&go, e) != 0)
		abort(); /* and its table always validates */
	{
		const char *v = pm_go_version(go);
		size_t vl = strnlen(v, 48);

		if (vl >= 48)
			abort();
		for (size_t i = 0; i < vl; i++)
			if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7e)
				abort();
		if (vl && strncmp(v, "go", 2) != 0 && strncmp(v, "devel", 5) != 0)
			abort();
	}
	pm_go_free(go);
	pm_elf_free(e);
	return 0;
}
