/*
 * maps: the address spaces of the profiled processes.  Executable mappings
 * come from /proc/PID/maps and from the kernel's MMAP/MMAP2 records; each
 * names a binary, opened once per path (pm_sym) and shared.  A runtime
 * address becomes (mapping, ELF vaddr) here; the load bias is computed once
 * per mapping.
 *
 * Mappings are never freed before pm_maps_free(): one replaced by a later
 * mmap or an exec is retired but stays valid, so samples taken before the
 * change keep resolving through the binary they really ran.
 */
#ifndef PM_MAPS_H
#define PM_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind/unwind.h"

struct pm_maps;
struct pm_sym;

struct pm_map {
	uint32_t id;             /* dense, 0-based, unique for the pm_maps */
	pid_t pid;
	uint64_t start, end, pgoff;
	const char *path;        /* as the kernel named it */
	struct pm_sym *sym;      /* NULL when the file cannot be opened or parsed */
	int64_t bias;            /* vaddr = addr - bias; valid when sym */
};

struct pm_maps *pm_maps_new(void);
void pm_maps_free(struct pm_maps *m);

/*
 * At most this many mappings are kept (every one ever added, retired ones
 * too: a target that maps and unmaps code for hours must not grow the
 * profiler without bound), and at most PM_MAPS_MAX_PER_PROC current ones
 * in one process (4 times the kernel's default vm.max_map_count, for all
 * of a process's mappings; adding one costs up to a move of that many
 * pointers); later ones are dropped and counted, and their addresses
 * resolve to no mapping.  pm_maps_set_limit() changes the first.
 */
#define PM_MAPS_MAX_DEFAULT (1u << 20)
#define PM_MAPS_MAX_PER_PROC (1u << 18)
void pm_maps_set_limit(struct pm_maps *m, size_t max_maps);
/* Mappings dropped at the limit so far. */
size_t pm_maps_dropped(const struct pm_maps *m);
/*
 * At most this many binaries are opened (each costs ~150 KiB and a parse;
 * a real process maps a few hundred); the mappings of later ones are kept
 * with no pm_sym, and counted here.
 */
#define PM_MAPS_MAX_BINARIES 1024
size_t pm_maps_unopened(const struct pm_maps *m);

/* An executable mapping appeared (MMAP2 record or maps line). */
void pm_maps_add(struct pm_maps *m, pid_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		 const char *path);

/* What the kernel says about a mapped file (maps line, MMAP2 record). */
struct pm_map_file {
	uint32_t maj, min;       /* device; 0:0 when unknown */
	uint64_t ino;            /* 0 when unknown */
	bool deleted;            /* the path no longer names this file */
};

/*
 * pm_maps_add() with the file's identity.  The binary is opened, in this
 * order, through /proc/PID/map_files/START-END (the mapped file itself:
 * deleted or replaced binaries resolve; needs CAP_SYS_ADMIN or
 * CAP_CHECKPOINT_RESTORE), /proc/PID/exe when it is that file,
 * /proc/PID/root/PATH (the process's own filesystem: containers), then
 * PATH; a path candidate whose inode differs from @f->ino is refused when
 * the file is known deleted.  Binaries are shared by identity (device and
 * inode when known, else path).  The mapping keeps @path, the kernel's
 * name, with any " (deleted)" suffix removed.  @f may be NULL.
 */
void pm_maps_add_file(struct pm_maps *m, pid_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		      const char *path, const struct pm_map_file *f);
/* @pid exec'd (or exited): its current mappings are retired. */
void pm_maps_reset(struct pm_maps *m, pid_t pid);
/* Copy @parent's current mappings to @child (fork without exec). */
void pm_maps_fork(struct pm_maps *m, pid_t parent, pid_t child);
/*
 * Load the executable mappings of /proc/PID/maps (through
 * pm_maps_add_file()).  0 or -errno.
 */
int pm_maps_load_proc(struct pm_maps *m, pid_t pid);
/* True when @pid has any mapping (loaded or from records). */
bool pm_maps_known(const struct pm_maps *m, pid_t pid);

/* The current mapping of @pid holding @addr, or NULL. */
const struct pm_map *pm_maps_find(struct pm_maps *m, pid_t pid, uint64_t addr);
/* Every mapping ever added, by id. */
size_t pm_maps_count(const struct pm_maps *m);
/* The processes known (each one whose mappings were ever told, gone ones too). */
size_t pm_maps_nprocs(const struct pm_maps *m);
const struct pm_map *pm_maps_at(const struct pm_maps *m, uint32_t id);

/*
 * An unwinder lookup for one process: pm_unw_lookup_fn over @pid's current
 * mappings.  Set the pid before each walk with pm_maps_set_unwind_pid().
 */
int pm_maps_unwind_lookup(void *maps, uint64_t pc, struct pm_unw_func *out);
void pm_maps_set_unwind_pid(struct pm_maps *m, pid_t pid);

#endif
