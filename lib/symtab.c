/*
 * symtab: an ELF image plus its Go table.  What the unwinder asks for every
 * frame of every sample (pm_sym_func_info) is one binary search and one short
 * pcsp decode; the per-function unwind flags that come from names (goexit,
 * main.main, ...) are worked out once at open into a byte per function.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "elfimg.h"
#include "gopclntab.h"
#include "symtab.h"
#include "util.h"

struct pm_sym {
	char *path;
	struct pm_elf *elf;
	struct pm_go *go;
	uint8_t *gflags; /* enum pm_unw_func_flags from names and _func flags, per Go func */
};

/* Bottoms of stacks, matched by name (funcIDs change between versions). */
static const char *const top_names[] = {
	"runtime.goexit", "runtime.mstart", "runtime.rt0_go",
};

/* Functions that switch stacks, for tables older than the _func flag byte (< 1.17). */
static const char *const spwrite_names[] = {
	"runtime.mcall", "runtime.morestack", "runtime.systemstack", "runtime.gogo",
	"runtime.asmcgocall", "runtime.morestack_noctxt",
};

static bool in_list(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, list[i]) == 0)
			return true;
	return false;
}

static void compute_flags(struct pm_sym *s)
{
	size_t n = pm_go_nfuncs(s->go);
	bool have_flags = false;

	s->gflags = xcalloc(n ? n : 1, 1);
	for (size_t i = 0; i < n; i++) {
		unsigned ff = pm_go_func_flags(s->go, (long)i);
		uint8_t fl = PM_UNW_F_GO;

		if (ff)
			have_flags = true;
		if (ff & PM_GO_FUNC_TOPFRAME)
			fl |= PM_UNW_F_TOP;
		if (ff & PM_GO_FUNC_SPWRITE)
			fl |= PM_UNW_F_SPWRITE;
		s->gflags[i] = fl;
	}
	for (size_t i = 0; i < n; i++) {
		const char *name = pm_go_func_name(s->go, (long)i);

		if (!name || name[0] != 'r' || strncmp(name, "runtime.", 8) != 0) {
			if (name && strcmp(name, "main.main") == 0)
				s->gflags[i] |= PM_UNW_F_MAIN;
			continue;
		}
		if (in_list(name, top_names, PM_ARRAY_SIZE(top_names)))
			s->gflags[i] |= PM_UNW_F_TOP;
		if (!have_flags && in_list(name, spwrite_names, PM_ARRAY_SIZE(spwrite_names)))
			s->gflags[i] |= PM_UNW_F_SPWRITE;
	}
}

struct pm_sym *pm_sym_open(const char *path)
{
	struct pm_sym *s;
	struct pm_elf *e = pm_elf_open(path);

	if (!e)
		return NULL;
	s = xcalloc(1, sizeof(*s));
	s->path = xstrdup(path);
	s->elf = e;
	/* A table that does not validate is treated as absent: ELF symbols still work. */
	if (pm_go_open(&s->go, e) == 0)
		compute_flags(s);
	else
		s->go = NULL;
	return s;
}

void pm_sym_free(struct pm_sym *s)
{
	if (!s)
		return;
	pm_go_free(s->go);
	pm_elf_free(s->elf);
	free(s->gflags);
	free(s->path);
	free(s);
}

const char *pm_sym_path(const struct pm_sym *s)
{
	return s->path;
}

const char *pm_sym_build_id(const struct pm_sym *s)
{
	return pm_elf_build_id(s->elf);
}

bool pm_sym_is_go(const struct pm_sym *s)
{
	return s->go != NULL;
}

const char *pm_sym_go_version(const struct pm_sym *s)
{
	return s->go ? pm_go_version(s->go) : "";
}

bool pm_sym_is_pie(const struct pm_sym *s)
{
	return pm_elf_type(s->elf) == ET_DYN;
}

int64_t pm_sym_offset_to_vaddr(const struct pm_sym *s, uint64_t off)
{
	return pm_elf_offset_to_vaddr(s->elf, off);
}

int pm_sym_func_info(const struct pm_sym *s, uint64_t pc, struct pm_unw_func *out)
{
	uint64_t start;

	if (s->go) {
		long idx = pm_go_find(s->go, pc);

		if (idx >= 0) {
			out->entry = pm_go_func_entry(s->go, idx);
			out->spdelta = pm_go_spdelta(s->go, idx, pc);
			out->flags = s->gflags[idx];
			return 0;
		}
	}
	if (pm_elf_symbol(s->elf, pc, &start)) {
		out->entry = start;
		out->spdelta = -1;
		out->flags = 0;
		return 0;
	}
	return -ENOENT;
}

size_t pm_sym_frames(const struct pm_sym *s, uint64_t pc, struct pm_frame *out, size_t max)
{
	const char *name;

	if (max == 0)
		return 0;
	if (s->go) {
		struct pm_go_frame buf[64];
		size_t n = pm_go_frames(s->go, pc, buf, PM_MIN(max, PM_ARRAY_SIZE(buf)));

		if (n) {
			for (size_t i = 0; i < n; i++) {
				out[i].func = buf[i].func;
				out[i].file = buf[i].file ? buf[i].file : "";
				out[i].line = buf[i].line;
				out[i].start_line = buf[i].start_line;
			}
			return n;
		}
	}
	name = pm_elf_symbol(s->elf, pc, NULL);
	if (!name)
		return 0;
	out[0].func = name;
	out[0].file = "";
	out[0].line = 0;
	out[0].start_line = 0;
	return 1;
}
