/*
 * kallsyms: the kernel's text symbols from /proc/kallsyms (or a copy), for
 * naming the kernel part of a callchain.  Module symbols keep their bare
 * name ("ext4_sync_file", not "ext4_sync_file [ext4]").
 */
#ifndef PM_KALLSYMS_H
#define PM_KALLSYMS_H

#include <stdint.h>

struct pm_ksyms;

/*
 * Load @path (NULL = /proc/kallsyms).  0, -EPERM when the addresses are
 * hidden (kernel.kptr_restrict: every address reads 0), -ENOENT when the
 * file has no text symbols, or -errno from opening it.
 */
int pm_ksyms_load(struct pm_ksyms **out, const char *path);
void pm_ksyms_free(struct pm_ksyms *k); /* NULL is fine */

/* The symbol holding @addr (borrowed) and its start; NULL when none. */
const char *pm_ksyms_find(const struct pm_ksyms *k, uint64_t addr, uint64_t *start);
/* Lowest and highest text symbol addresses. */
void pm_ksyms_range(const struct pm_ksyms *k, uint64_t *lo, uint64_t *hi);

#endif
