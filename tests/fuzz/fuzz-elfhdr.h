/*
 * The ELF64 header the fuzz targets wrap their inputs in: a little-endian
 * x86_64 ET_EXEC with program headers right after it.
 */
#ifndef PM_FUZZ_ELFHDR_H
#define PM_FUZZ_ELFHDR_H

#include <elf.h>
#include <stdint.h>
#include <string.h>

static inline void fuzz_elf_header(Elf64_Ehdr *eh, uint64_t shoff, uint16_t phnum, uint16_t shnum,
				   uint16_t shstrndx)
{
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_shoff = shoff;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = phnum;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = shnum;
	eh->e_shstrndx = shstrndx;
}

#endif
