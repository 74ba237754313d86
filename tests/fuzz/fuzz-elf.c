/* libFuzzer target: arbitrary bytes as an ELF file through elfimg (and gopclntab on top). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "symbols/elfimg.h"
#include "symbols/gopclntab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pm_elf *e = pm_elf_open_mem(data, size);
	struct pm_go *go = NULL;
	volatile size_t sink = 0;

	if (!e)
		return 0;
	sink += strlen(pm_elf_build_id(e));
	for (size_t i = 0; i < pm_elf_nsections(e); i++) {
		const struct pm_elf_section *s = pm_elf_section_at(e, i);

		sink += strlen(s->name);
		if (s->data && s->size)
			sink += s->data[0] + s->data[s->size - 1];
	}
	for (size_t i = 0; i < pm_elf_nsegments(e); i++) {
		const struct pm_elf_segment *g = pm_elf_segment_at(e, i);
		const uint8_t *b;

		if (g->filesz)
			sink += g->data[g->filesz - 1];
		b = pm_elf_vaddr_bytes(e, g->vaddr, 8);
		if (b)
			sink += b[7];
		sink += (size_t)pm_elf_offset_to_vaddr(e, g->offset);
		for (uint64_t a = g->vaddr; a < g->vaddr + 4096 && a >= g->vaddr; a += 64) {
			const char *n = pm_elf_symbol(e, a, NULL);

			if (n)
				sink += strlen(n);
		}
	}
	sink += pm_elf_symbol_addr(e, "main.main");
	if (pm_go_open(&go, e) == 0) {
		struct pm_go_frame fr[8];

		for (size_t i = 0; i < pm_go_nfuncs(go) && i < 256; i++) {
			uint64_t pc = pm_go_func_entry(go, (long)i);
			size_t n = pm_go_frames(go, pc, fr, 8);

			for (size_t j = 0; j < n; j++)
				sink += strlen(fr[j].func) + strlen(fr[j].file);
			sink += (size_t)pm_go_spdelta(go, (long)i, pc);
		}
		pm_go_free(go);
	}
	(void)sink;
	pm_elf_free(e);
	return 0;
}
