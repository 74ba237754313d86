/*
 * elfimg: one ELF file opened read-only through libelf.  Sections, program
 * headers, the GNU build ID, and the .symtab/.dynsym function symbols.
 * Every offset and size read from the file is checked against the file size:
 * the file is chosen by the profiled program and is treated as hostile.
 */
#ifndef PM_ELFIMG_H
#define PM_ELFIMG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pm_elf;
struct Elf;

struct pm_elf_section {
	const char *name;    /* borrowed from the image */
	uint64_t addr;       /* sh_addr */
	uint64_t offset;     /* sh_offset */
	uint64_t size;       /* sh_size */
	uint32_t type;       /* sh_type */
	uint64_t flags;      /* sh_flags */
	const uint8_t *data; /* file bytes, NULL for SHT_NOBITS; size bytes valid */
};

struct pm_elf_segment {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags; /* PF_R | PF_W | PF_X */
	const uint8_t *data; /* filesz bytes valid */
};

/* Open @path.  Returns NULL and sets errno (ENOEXEC: not a valid ELF). */
struct pm_elf *pm_elf_open(const char *path);
/* The same from bytes in memory (tests, fuzzing).  @buf is copied. */
struct pm_elf *pm_elf_open_mem(const void *buf, size_t len);
void pm_elf_free(struct pm_elf *e); /* NULL is fine */

uint16_t pm_elf_machine(const struct pm_elf *e); /* EM_X86_64, EM_AARCH64, ... */
uint16_t pm_elf_type(const struct pm_elf *e);    /* ET_EXEC, ET_DYN */
uint64_t pm_elf_entry(const struct pm_elf *e);   /* e_entry: where the kernel or ld.so jumps in */
const uint8_t *pm_elf_bytes(const struct pm_elf *e, size_t *len);

/* Section by name, or NULL. */
const struct pm_elf_section *pm_elf_section(const struct pm_elf *e, const char *name);
size_t pm_elf_nsections(const struct pm_elf *e);
const struct pm_elf_section *pm_elf_section_at(const struct pm_elf *e, size_t i);

size_t pm_elf_nsegments(const struct pm_elf *e); /* PT_LOAD only */
const struct pm_elf_segment *pm_elf_segment_at(const struct pm_elf *e, size_t i);

/*
 * File bytes backing [vaddr, vaddr+len) of a PT_LOAD, or NULL when not
 * entirely inside one segment's file image.
 */
const uint8_t *pm_elf_vaddr_bytes(const struct pm_elf *e, uint64_t vaddr, size_t len);

/* ELF vaddr for a file offset (through the PT_LOAD that holds it); -1 when none. */
int64_t pm_elf_offset_to_vaddr(const struct pm_elf *e, uint64_t off);
/* The file offset of ELF vaddr @vaddr (through the PT_LOAD that holds it); -1 when none. */
int64_t pm_elf_vaddr_to_offset(const struct pm_elf *e, uint64_t vaddr);

/* The libelf handle, for libdw (CFI, DWARF lines); lives as long as @e. */
struct Elf *pm_elf_libelf(const struct pm_elf *e);

/* Hex NT_GNU_BUILD_ID (or the Go build ID note as fallback), "" when none. */
const char *pm_elf_build_id(const struct pm_elf *e);

/*
 * The function symbol containing @vaddr from .symtab, else .dynsym.
 * Returns its name (borrowed) and sets *start; NULL when none.
 */
const char *pm_elf_symbol(const struct pm_elf *e, uint64_t vaddr, uint64_t *start);
/* Address of the symbol named @name, 0 when absent. */
uint64_t pm_elf_symbol_addr(const struct pm_elf *e, const char *name);

#endif
