/*
 * evfiles: the files behind events: sysfs PMUs (types, formats, aliases),
 * tracefs tracepoints (ids, the nearest ones), the uprobe PMU's type, and
 * uprobes defined in tracefs's uprobe_events so that new threads inherit
 * them.  One of the modules behind events.h, for them only: the rest of the
 * code includes events.h (pm_evt_sysfs(), pm_evt_tracefs(),
 * pm_evt_uprobe_define() and pm_evt_uprobe_undefine() are this module's).
 */
#ifndef PM_EVFILES_H
#define PM_EVFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events/events.h"

/* A path component from the user: letters, digits, '_', '-', '.', not "." or "..". */
bool pm_evt_safe_component(const char *s, size_t len);
/* A small text file's first line, trailing whitespace removed.  0 or -errno. */
int pm_evt_read_line(const char *path, char *buf, size_t len);
/* A file's first line as one number (decimal or 0x hex).  0, -errno or -EINVAL. */
int pm_evt_read_u64_file(const char *path, uint64_t *v);

/* Is @name (len bytes) a PMU directory in sysfs? */
bool pm_evt_is_pmu(const char *name, size_t len);
/* The uprobe PMU's type from sysfs.  0 or -EINVAL with the message. */
int pm_evt_uprobe_type(const char *text, uint32_t *type, char *err, size_t errlen);

/* @name is "sub:event".  0 with *id, or -EINVAL with the message. */
int pm_evt_parse_tracepoint(const char *name, uint64_t *id, char *err, size_t errlen);
/* Is @sub a tracepoint subsystem here? */
bool pm_evt_tp_subsystem(const char *sub, size_t len);

#endif
