/*
 * registry: what the recording session knows of the processes it profiles
 * -- their address spaces (maps.h), one unwinder per process (at most
 * PM_REG_MAX_UNWS, the least recently used taken over past that), the
 * binaries announced in a capture and, at replay, whether the ones found
 * are those (by build ID: a binary that differs is distrusted, its frames
 * left unnamed) -- and the limits that keep memory bounded whatever the
 * target's stacks look like (distinct frames and stacks, mappings,
 * binaries), each warned about once.
 *
 * Live with --raw, the mappings and binaries it learns are written to the
 * capture (the functions taking a writer; 0 or the first write's -errno).
 */
#ifndef PM_REGISTRY_H
#define PM_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PM_REG_MAX_FRAMES 1024 /* the deepest walk of a stack */

struct pm_reg;
struct pm_map;
struct pm_maps;
struct pm_stacks;
struct pm_sym;
struct pm_unw;
struct pm_data_writer;

/* @replay: processing a capture (binaries are checked against it). */
struct pm_reg *pm_reg_new(bool replay);
void pm_reg_free(struct pm_reg *r);
struct pm_maps *pm_reg_maps(struct pm_reg *r);

/* Unwinders made from now on cache 1 << @bits pcs (0: the default). */
void pm_reg_unw_cache_bits(struct pm_reg *r, unsigned bits);
/* The unwinder of @pid (its caches are by pc). */
struct pm_unw *pm_reg_unwinder(struct pm_reg *r, pid_t pid);
/* @pid's address space changed: its unwinder's caches are stale. */
void pm_reg_flush(struct pm_reg *r, pid_t pid);
/* The walk about to start is in @pid (the unwinders' lookups, maps). */
void pm_reg_set_pid(struct pm_reg *r, pid_t pid);
/* The binary of @m, or NULL when it is not trusted (replay: another build ID). */
const struct pm_sym *pm_reg_map_sym(const struct pm_reg *r, const struct pm_map *m);

/*
 * Mappings @first.. were just added.  Live, each new binary goes into the
 * capture @cap (when not NULL) with its build ID; at replay, each is
 * checked against the capture.
 */
int pm_reg_maps_added(struct pm_reg *r, size_t first, struct pm_data_writer *cap);
/* /proc/PID/maps into the maps, and into the capture @cap when not NULL. */
int pm_reg_load_maps(struct pm_reg *r, pid_t pid, struct pm_data_writer *cap);
/* Replay: a BINARY record; the mappings of it seen before are checked now. */
void pm_reg_binary(struct pm_reg *r, const char *path, const char *build_id, unsigned flags);
/* Replay: the build ID the capture recorded for @path, or NULL. */
const char *pm_reg_capture_build_id(struct pm_reg *r, const char *path);
/* Replay: binaries missing or different past the ones warned about. */
size_t pm_reg_unwarned(const struct pm_reg *r);

/*
 * The "[limit]" frame in @st, and the limits on distinct frames and stacks
 * (PMUPROF_MAX_FRAMES, PMUPROF_MAX_STACKS) and on mappings
 * (PMUPROF_MAX_MAPS).  Returns the frame's id.
 */
uint32_t pm_reg_setup_limits(struct pm_reg *r, struct pm_stacks *st);
/* One warning per limit, the first time it is reached (@status: the walk's). */
void pm_reg_check_limits(struct pm_reg *r, struct pm_stacks *st, unsigned status);

#endif
