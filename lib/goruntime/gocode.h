/*
 * gocode: the Go runtime's machine code and layout read from its binary,
 * where the symbols do not say enough: a function's code by name, the one
 * direct call of a function in it, the RIP-relative loads that name a
 * variable of a stripped binary, the one epilogue of a function, the
 * structures of the runtime's DWARF compile unit, and which addresses can
 * be the target's.  x86-64 code; every scan stays inside the bytes it is
 * handed, and what is not found exactly once is not found (0): a probe or
 * a read at a wrong guess is worse than none.
 */
#ifndef PM_GOCODE_H
#define PM_GOCODE_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/util.h"

struct pm_elf;
struct pm_evt_spec;
struct pm_go;

/*
 * The longest function whose code is scanned: the runtime functions read
 * here are a few hundred bytes to a few kilobytes; a longer one is a bad
 * table, not a function.
 */
#define PM_GO_MAX_FUNC_LEN 65536

/*
 * Can @a be an address of the target's (a read there is worth trying)?
 * Not 0, and in user space with five-level page tables, the most a kernel
 * gives (a read that cannot succeed fails anyway: the rule only spares it).
 */
static inline bool pm_go_addr_ok(uint64_t a)
{
	return a && a < PM_USER_END_LA57;
}

/* A pointer of the Go runtime's: an address of the target's, 8-byte aligned. */
static inline bool pm_go_ptr_ok(uint64_t p)
{
	return pm_go_addr_ok(p) && !(p & 7);
}

/*
 * @path's ELF image and Go function table, for reading and probing its
 * code, and in *@minor the N of its "go1.N" (-1: unknown), at least
 * @min_minor: 0; else (*@e and *@go NULL, @err saying why) -ENOEXEC when
 * it is no Go program for x86-64, -ENOTSUP when its Go is older or
 * unknown.  The caller frees both (pm_go_free(), pm_elf_free()).
 */
int pm_gocode_open(const char *path, int min_minor, struct pm_elf **e, struct pm_go **go,
		   int *minor, char *err, size_t errlen);

/*
 * The code of function @idx of @go, its bytes in @e (*@len of them, from
 * its entry to the next function's): NULL when it is longer than @max
 * bytes, empty, or not all in the file.
 */
const uint8_t *pm_gocode_bytes(const struct pm_elf *e, const struct pm_go *go, long idx, size_t max,
			       size_t *len);
/* The same for the function named @name, with its entry in *@entry. */
const uint8_t *pm_gocode_func(const struct pm_elf *e, const struct pm_go *go, const char *name,
			      uint64_t *entry, size_t *len);

/*
 * A "call rel32" (e8) at @b[@i] of the @len code bytes at @va: true, with
 * its target in *@to, when its five bytes are all in @b.
 */
bool pm_gocode_call_at(const uint8_t *b, size_t len, size_t i, uint64_t va, uint64_t *to);
/*
 * The "call rel32"s to @callee in the @len code bytes at @va: how many,
 * the last one's address in *@last.  A byte scan (an e8 is not known to
 * start an instruction).
 */
unsigned pm_gocode_calls(const uint8_t *b, size_t len, uint64_t va, uint64_t callee,
			 uint64_t *last);
/*
 * The address of the one "call rel32" to @callee there; 0 when none or
 * several (a second match, true or not, makes the first one uncertain).
 */
uint64_t pm_gocode_call_once(const uint8_t *b, size_t len, uint64_t va, uint64_t callee);

/*
 * The instruction whose one-byte opcode is at @b[@op] (of the @len bytes
 * at @va) has a ModRM of disp32(RIP) and no immediate: true, with the
 * address it names in *@at, when its six bytes are all in @b.
 */
bool pm_gocode_rip_at(const uint8_t *b, size_t len, size_t op, uint64_t va, uint64_t *at);
/*
 * The one address the @len code bytes at @va load with a RIP-relative MOV
 * of @wide (64-bit: REX.W 8b; else 32-bit: 8b with no REX.W); 0 when none
 * or several.
 */
uint64_t pm_gocode_mov_once(const uint8_t *b, size_t len, uint64_t va, bool wide);
/*
 * A slice variable the @len code bytes at @va use (runtime.allgs in
 * runtime.allgadd): the first address A of their 64-bit RIP-relative
 * MOV, LEA, CMP, ADD and SUB (of the first 64) whose A+8 and A+16 (the
 * length and capacity) they use too; 0 when none.
 */
uint64_t pm_gocode_slice_var(const uint8_t *b, size_t len, uint64_t va);

/*
 * Length of "add rsp, imm; [pop rbp;] ret" (a Go frame's epilogue) at @b
 * (@left bytes there), 0 if not one.
 */
size_t pm_gocode_epilogue_len(const uint8_t *b, size_t left);
/*
 * The one epilogue of the function at @entry whose stack check's jbe ends
 * right before @probe_va (its entry probe, past the check): that jbe
 * jumps to the morestack call that the compiler puts right after the
 * function's last block, which ends with the epilogue; it must be the only
 * one in the function, else 0 (its returns are not all known).
 */
uint64_t pm_gocode_one_epilogue(const struct pm_elf *e, uint64_t entry, uint64_t probe_va);

/*
 * A uprobe (not yet defined) on Go binary @path at the one direct CALL of
 * Go function @callee in Go function @caller (amd64), or on the 5-byte NOP
 * right before it: where @callee's arguments are in registers, and no
 * instruction is single-stepped (one trap, or none where the kernel
 * optimizes probes on that NOP).
 * Fills out->path, symbol, name, config2; the binary's Go version into
 * @version.  0, or -ENOENT with one line in @err (not Go, no such function,
 * not one such call).
 */
int pm_gocode_probe_before_call(const char *path, const char *caller, const char *callee,
				struct pm_evt_spec *out, char *version, size_t vlen, char *err,
				size_t errlen);
/* DWARF walks: guards against a hostile or broken file's endless chains */
#define PM_GO_DWARF_MAX_CUS 100000   /* compile units walked */
#define PM_GO_DWARF_MAX_DIES 1000000 /* entries of the runtime's unit walked */
#define PM_GO_DWARF_MAX_MEMBERS 4096 /* members of one structure walked */

/*
 * Called with each named structure type of the runtime's compile unit (Go
 * names each unit after its package); true when it has found all it wants.
 */
typedef bool (*pm_go_struct_fn)(Dwarf_Die *d, const char *name, void *arg);
/* Walk the structures of @dw's runtime unit until @fn has found all; NULL is fine. */
void pm_gocode_runtime_structs(Dwarf *dw, pm_go_struct_fn fn, void *arg);

#endif
