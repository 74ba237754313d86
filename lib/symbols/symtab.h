/*
 * symtab: one binary as the symbolizer and the unwinder see it.  Go code
 * through gopclntab (names, files, lines, inlined frames, frame sizes),
 * everything else through the ELF symbol tables.  Addresses here are ELF
 * vaddrs (link-time); the address space (maps.h) removes load biases.
 */
#ifndef PM_SYMTAB_H
#define PM_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/unwind.h"

struct pm_sym;

/* One logical frame; strings borrowed from the pm_sym. */
struct pm_frame {
	const char *func;   /* never NULL when returned */
	const char *file;   /* "" when unknown */
	int32_t line;       /* 0 when unknown */
	int32_t start_line; /* 0 when unknown */
	unsigned kind;      /* Go: enum pm_go_frame_kind (gopclntab.h), what tracebacks hide */
};

/* Open @path.  NULL with errno set on failure. */
struct pm_sym *pm_sym_open(const char *path);
/* The same from an image in memory (copied), known as @name. */
struct pm_sym *pm_sym_open_mem(const char *name, const void *buf, size_t len);
void pm_sym_free(struct pm_sym *s);

const char *pm_sym_path(const struct pm_sym *s);
const char *pm_sym_build_id(const struct pm_sym *s); /* "" when none */
bool pm_sym_is_go(const struct pm_sym *s);
const char *pm_sym_go_version(const struct pm_sym *s); /* "" when not Go or unknown */
bool pm_sym_is_pie(const struct pm_sym *s);            /* ET_DYN */

/* ELF vaddr of file offset @off, -1 when not in a PT_LOAD. */
int64_t pm_sym_offset_to_vaddr(const struct pm_sym *s, uint64_t off);

/* For the unwinder: what is at vaddr @pc.  0 or -ENOENT. */
int pm_sym_func_info(const struct pm_sym *s, uint64_t pc, struct pm_unw_func *out);

/*
 * Frames at vaddr @pc, innermost first; at most @max; 0 when unknown.
 * (For a return address, pass retaddr - 1.)
 */
size_t pm_sym_frames(const struct pm_sym *s, uint64_t pc, struct pm_frame *out, size_t max);

#endif
