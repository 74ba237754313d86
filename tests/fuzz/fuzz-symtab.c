/*
 * libFuzzer target: arbitrary bytes as a binary opened through symtab (the
 * path record and report use: ELF symbols, gopclntab, libdw CFI and line
 * tables), then pm_sym_frames / pm_sym_func_info over every segment.  The
 * bytes go into a memfd opened by its /proc/self/fd path, as pm_sym_open
 * wants a path.  Every frame handed out must carry a function name; file
 * names must be terminated strings.
 */
#include "symbols/symtab.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len);

static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	static int fd = -1;
	char path[64];
	struct pm_sym *s;

	if (len < 16 || len > (4u << 20))
		return 0;
	if (fd < 0) {
		fd = memfd_create("fuzz-symtab", 0);
		if (fd < 0)
			abort();
	}
	if (ftruncate(fd, 0) || pwrite(fd, buf, len, 0) != (ssize_t)len)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	s = pm_sym_open(path);
	if (!s)
		return 0;
	sink += strlen(pm_sym_build_id(s)) + strlen(pm_sym_go_version(s)) + pm_sym_is_go(s) +
		pm_sym_is_pie(s);
	/* Probe pcs at file offsets mapped through the PT_LOADs, and a few fixed ones. */
	for (uint64_t off = 0; off < len + 64; off += 1 + len / 97) {
		int64_t va = pm_sym_offset_to_vaddr(s, off);
		uint64_t pcs[3];

		pcs[0] = (uint64_t)va;
		pcs[1] = (uint64_t)va + 1;
		pcs[2] = off ^ 0x400000;
		for (int k = va < 0 ? 2 : 0; k < 3; k++) {
			struct pm_frame fr[8];
			struct pm_unw_func fi;
			size_t nf = pm_sym_frames(s, pcs[k], fr, 8);

			if (nf > 8)
				abort();
			for (size_t j = 0; j < nf; j++) {
				if (!fr[j].func || !fr[j].file)
					abort();
				sink += strlen(fr[j].func) + strlen(fr[j].file) + (size_t)fr[j].line;
			}
			if (pm_sym_func_info(s, pcs[k], &fi) == 0)
				sink += sizeof(fi);
		}
	}
	pm_sym_free(s);
	return 0;
}
