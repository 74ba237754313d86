/*
 * gorlayout: the runtime's layouts per Go version: the offsets of the
 * fields of runtime.g and runtime.m the goroutine inspector reads, from the
 * binary's DWARF when present, else from a table per Go version (1.19 ..
 * 1.27).  One of the modules behind goroutine.h, which declares
 * pm_gor_layout_version() and pm_gor_layout_dwarf(); this header is for
 * the inspector's other modules only.
 */
#ifndef PM_GORLAYOUT_H
#define PM_GORLAYOUT_H

#include <stdbool.h>

#include "goruntime/goroutine.h"

/* the most bytes of a runtime.g and of a runtime.m read at once */
#define G_READ_MAX 1024
#define M_READ_MAX 1024

/*
 * Compute @l's g_size and m_size: up to the end of the last field.  False
 * when a field lies beyond what one read takes: such a layout is never used.
 */
bool pm_gor_finish_layout(struct pm_gor_layout *l);

#endif
