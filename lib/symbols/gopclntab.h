/*
 * gopclntab: Go's function table (runtime.pclntab) read from a binary.
 *
 * Supports the Go 1.2 (0xfffffffb), 1.16 (0xfffffffa), 1.18 (0xfffffff0) and
 * 1.20+ (0xfffffff1) layouts, amd64 and arm64.  Finds the table by section
 * name or, in binaries without one, by scanning for a header that
 * validates; finds the text base in the header or, for Go 1.26+ where the
 * header's textStart is 0, in the module data.  Every read is bounds-checked.
 */
#ifndef PM_GOPCLNTAB_H
#define PM_GOPCLNTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pm_elf;
struct pm_go;

/* One symbolized frame.  Strings are borrowed from the table. */
struct pm_go_frame {
	const char *func;
	const char *file;
	int32_t line;
	int32_t start_line; /* 0 when the format does not record it (< 1.20) */
	unsigned kind;      /* enum pm_go_frame_kind */
};

/*
 * What Go's own tracebacks (and so runtime/pprof) make of a frame
 * (runtime/traceback.go, tracebackPCs and elideWrapperCalling): they leave
 * out wrappers (the compiler's wrappers of go and defer statements and
 * method values, runtime.deferreturn: the funcID of runtime.deferreturn in
 * this binary), except one that called gopanic, sigpanic or panicwrap;
 * runtime/pprof leaves out runtime.goexit.
 */
enum pm_go_frame_kind {
	PM_GO_WRAPPER = 1 << 0, /* hidden, unless its callee is PM_GO_PANIC */
	PM_GO_PANIC = 1 << 1,   /* runtime.gopanic, sigpanic, panicwrap */
	PM_GO_GOEXIT = 1 << 2,  /* runtime.goexit: hidden */
};

/* _func flag bits (Go 1.17+) */
enum pm_go_func_flags {
	PM_GO_FUNC_TOPFRAME = 1 << 0,
	PM_GO_FUNC_SPWRITE = 1 << 1,
	PM_GO_FUNC_ASM = 1 << 2,
};

/*
 * Open the Go function table of @e.  Returns 0, -ENOENT when the binary has
 * no gopclntab (not Go), -EINVAL when one is there but does not validate.
 * @e must outlive *out.
 */
int pm_go_open(struct pm_go **out, const struct pm_elf *e);
void pm_go_free(struct pm_go *go); /* NULL is fine */

/* "go1.19.8" from the build info (or a version string in the binary); "" when unknown. */
const char *pm_go_version(const struct pm_go *go);
/* Table magic (0xfffffff1 ...), pointer size, pc quantum. */
uint32_t pm_go_magic(const struct pm_go *go);
unsigned pm_go_ptrsize(const struct pm_go *go);
unsigned pm_go_quantum(const struct pm_go *go);
uint64_t pm_go_text_start(const struct pm_go *go);
uint64_t pm_go_text_end(const struct pm_go *go);

size_t pm_go_nfuncs(const struct pm_go *go);

/*
 * The most functions a lookup by name walks: more than any real binary has
 * (a large one, ~200 000), so that a hostile table cannot make every lookup
 * of a probe's function walk billions of entries.
 */
#define PM_GO_MAX_FUNCS 2000000

/*
 * The N of a version "go1.N[...]" (pm_go_version()), -1 when @version is
 * NULL or not of that form.  Every "Go 1.N and later" check goes through it.
 */
int pm_go_version_minor(const char *version);

/*
 * Index of the function containing ELF vaddr @pc, or -1.  (Link-time
 * addresses: the caller removes the load bias of PIE binaries.)
 */
long pm_go_find(const struct pm_go *go, uint64_t pc);
uint64_t pm_go_func_entry(const struct pm_go *go, long idx);
const char *pm_go_func_name(const struct pm_go *go, long idx);
unsigned pm_go_func_flags(const struct pm_go *go, long idx); /* enum pm_go_func_flags */

/*
 * The index of the first function named exactly @name, among the first
 * PM_GO_MAX_FUNCS of the table; -1 when none.
 */
long pm_go_func_by_name(const struct pm_go *go, const char *name);
/*
 * Where function @idx ends: the next function's entry, the text's end for
 * the last one; 0 when @idx is not in the table.
 */
uint64_t pm_go_func_end(const struct pm_go *go, long idx);

/*
 * SP delta at @pc in function @idx: bytes the function has pushed below the
 * caller's SP, not counting the return address.  -1 when unknown.
 */
int32_t pm_go_spdelta(const struct pm_go *go, long idx, uint64_t pc);

/*
 * Frames for @pc, innermost (inlined callee) first, the physical function
 * last; at most @max.  Returns the number written, 0 when @pc is not in Go text.
 * For a return address pass retaddr-1.
 */
size_t pm_go_frames(const struct pm_go *go, uint64_t pc, struct pm_go_frame *out, size_t max);

#endif
