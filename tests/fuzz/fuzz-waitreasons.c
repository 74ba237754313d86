/*
 * libFuzzer target: the wait-reason table reader of --wall
 * (pm_wall_reason_names, src_wall.c): runtime.waitReasonStrings found by
 * its content in a Go binary's initialised data, its Go strings {ptr, len}
 * followed to their bytes.  The input becomes a minimal ELF:
 *
 *   [0] flags: bit 0: no read-only segment (the strings must lie in the
 *       data itself); bit 1: the data segment's file bytes cut by [1] * 8
 *       (its memory size stays: the rest is zero-filled, as .bss);
 *       bits 4-7: the room for names, 3 + 16 * (flags >> 4)
 *   [1] the cut
 *   [2..] the data, in a writable PT_LOAD at 0x600000 (the table) and in a
 *       read-only PT_LOAD at 0x500000 (strings its pointers may name).
 *
 * The seeds are the tables of Go 1.19 and Go 1.26 (their names, in their
 * order), laid out as the linker does.  Checked: no more names than room;
 * none, or at least "", "GC assist marking", "IO wait" first; every name
 * printable, shorter than 128 bytes.  FUZZ_WR_DEBUG=1 prints how many names
 * an input gave (to check a seed: build/fuzz/fuzz-waitreasons -runs=0 SEED).
 */
#include "fuzz-elfhdr.h"
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/elfimg.h"
#include "sources/src_wall.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RO_VA 0x500000u
#define RW_VA 0x600000u

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t insize)
{
	char *names[256];
	const uint8_t *d = in + 2;
	size_t n, ro_off, rw_off, len, cut, cap, got;
	unsigned nph, flags;
	uint8_t *img;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	struct pm_elf *e;

	if (insize < 2 || insize > (1u << 20))
		return 0;
	flags = in[0];
	n = insize - 2;
	cut = flags & 2 ? (size_t)in[1] * 8 : 0;
	if (cut > n)
		cut = n;
	cap = 3 + 16 * (size_t)(flags >> 4);
	if (cap > 256)
		cap = 256;
	nph = flags & 1 ? 1 : 2;
	ro_off = 4096;
	rw_off = (ro_off + n + 4095) & ~(size_t)4095;
	len = rw_off + n;
	img = calloc(1, len);
	if (!img)
		return 0;
	eh = (Elf64_Ehdr *)img;
	fuzz_elf_header(eh, 0, (uint16_t)nph, 0, 0);
	ph = (Elf64_Phdr *)(img + eh->e_phoff);
	ph[0].p_type = PT_LOAD;
	ph[0].p_flags = PF_R | PF_W;
	ph[0].p_offset = rw_off;
	ph[0].p_vaddr = ph[0].p_paddr = RW_VA;
	ph[0].p_filesz = n - cut;
	ph[0].p_memsz = n;
	ph[0].p_align = 4096;
	if (nph == 2) {
		ph[1].p_type = PT_LOAD;
		ph[1].p_flags = PF_R;
		ph[1].p_offset = ro_off;
		ph[1].p_vaddr = ph[1].p_paddr = RO_VA;
		ph[1].p_filesz = ph[1].p_memsz = n;
		ph[1].p_align = 4096;
	}
	memcpy(img + ro_off, d, n);
	memcpy(img + rw_off, d, n);
	e = pm_elf_open_mem(img, len);
	free(img);
	if (!e)
		abort(); /* the frame is always a valid ELF */
	got = pm_wall_reason_names(e, names, cap);
	if (getenv("FUZZ_WR_DEBUG"))
		fprintf(stderr, "names: %zu of room %zu, the last '%s'\n", got, cap,
			got ? names[got - 1] : "");
	if (got > cap || got == 1 || got == 2)
		abort();
	if (got && (strcmp(names[0], "") || strcmp(names[1], "GC assist marking") ||
		    strcmp(names[2], "IO wait")))
		abort();
	for (size_t i = 0; i < got; i++) {
		size_t l = strnlen(names[i], 128);

		if (l >= 128 || (i && !l))
			abort();
		for (size_t j = 0; j < l; j++)
			if ((unsigned char)names[i][j] < 0x20 || (unsigned char)names[i][j] > 0x7e)
				abort();
		free(names[i]);
	}
	pm_elf_free(e);
	return 0;
}
