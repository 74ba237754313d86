/*
 * libFuzzer target: arbitrary bytes as the .gopclntab section of a minimal
 * ELF built around them (read-only PT_LOAD, .text, .gopclntab), then every
 * gopclntab lookup.  The first bytes are forced into a plausible header
 * (magic, quantum, pointer size) so the fuzzer reaches the validation and
 * lookup code instead of dying at the magic check.
 */
#include "fuzz-elfhdr.h"
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/elfimg.h"
#include "symbols/gopclntab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TAB_VA 0x500000u
static const char shstr[] = "\0.text\0.gopclntab\0.shstrtab";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t magics[] = {0xfffffffb, 0xfffffffa, 0xfffffff0, 0xfffffff1};
	static const uint8_t quanta[] = {1, 2, 4};
	size_t strs = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr);
	size_t tab = (strs + sizeof(shstr) + 15) & ~(size_t)15;
	size_t sh = (tab + size + 7) & ~(size_t)7;
	size_t len = sh + 4 * sizeof(Elf64_Shdr);
	uint8_t *img;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	Elf64_Shdr *s;
	struct pm_elf *e;
	struct pm_go *go = NULL;
	volatile size_t sink = 0;

	if (size < 8 || size > (1u << 24))
		return 0;
	img = calloc(1, len);
	if (!img)
		return 0;
	eh = (Elf64_Ehdr *)img;
	fuzz_elf_header(eh, sh, 1, 4, 3);
	ph = (Elf64_Phdr *)(img + eh->e_phoff);
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R;
	ph->p_offset = tab;
	ph->p_vaddr = ph->p_paddr = TAB_VA;
	ph->p_filesz = ph->p_memsz = size;
	ph->p_align = 16;
	memcpy(img + strs, shstr, sizeof(shstr));
	memcpy(img + tab, data, size);
	/* A plausible header from the first two bytes. */
	{
		uint32_t m = magics[data[0] % 4];

		memcpy(img + tab, &m, 4);
		img[tab + 4] = img[tab + 5] = 0;
		img[tab + 6] = quanta[data[1] % 3];
		img[tab + 7] = 8;
		/*
		 * Often also a header whose offsets increase and fit (1.18+ layout),
		 * so the functab and _func checks get exercised.
		 */
		if ((data[0] & 6) && (m == 0xfffffff0 || m == 0xfffffff1) && size >= 128) {
			uint64_t w[8];

			w[0] = 1 + data[2] % 8;
			w[1] = 1;
			w[2] = (data[0] & 8) ? 0x401000 : 0;
			w[3] = 72;
			w[4] = w[3] + 1 + data[3] % 16;
			w[5] = w[4] + 4 + data[4] % 16;
			w[6] = w[5] + 1 + data[5] % 16;
			w[7] = w[6] + 1 + data[6] % 32;
			if (w[7] + 8 * (w[0] + 1) < size)
				memcpy(img + tab + 8, w, sizeof(w));
		}
	}
	s = (Elf64_Shdr *)(img + sh);
	s[1].sh_name = 1; /* .text, empty: only its address matters */
	s[1].sh_type = SHT_PROGBITS;
	s[1].sh_flags = SHF_ALLOC | SHF_EXECINSTR;
	s[1].sh_addr = 0x401000;
	s[1].sh_offset = tab;
	s[2].sh_name = 7; /* .gopclntab */
	s[2].sh_type = SHT_PROGBITS;
	s[2].sh_flags = SHF_ALLOC;
	s[2].sh_addr = TAB_VA;
	s[2].sh_offset = tab;
	s[2].sh_size = size;
	s[3].sh_name = 18; /* .shstrtab */
	s[3].sh_type = SHT_STRTAB;
	s[3].sh_offset = strs;
	s[3].sh_size = sizeof(shstr);

	e = pm_elf_open_mem(img, len);
	free(img);
	if (!e)
		return 0;
	if (pm_go_open(&go, e) == 0) {
		struct pm_go_frame fr[16];
		uint64_t lo = pm_go_text_start(go), hi = pm_go_text_end(go);

		sink += strlen(pm_go_version(go)) + pm_go_magic(go) + pm_go_quantum(go);
		for (size_t i = 0; i < pm_go_nfuncs(go) && i < 512; i++) {
			uint64_t pc = pm_go_func_entry(go, (long)i);
			const char *n = pm_go_func_name(go, (long)i);

			if (n)
				sink += strlen(n);
			sink += pm_go_func_flags(go, (long)i);
			for (int k = 0; k < 4; k++, pc += 3) {
				size_t nf = pm_go_frames(go, pc, fr, 16);

				for (size_t j = 0; j < nf; j++)
					sink += strlen(fr[j].func) + strlen(fr[j].file) +
						(size_t)fr[j].line;
				sink += (size_t)pm_go_spdelta(go, pm_go_find(go, pc), pc);
			}
		}
		sink += (size_t)pm_go_find(go, lo - 1) + (size_t)pm_go_find(go, hi);
		pm_go_free(go);
	}
	(void)sink;
	pm_elf_free(e);
	return 0;
}
