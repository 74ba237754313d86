/*
 * evuprobe: uprobe:BINARY:SYMBOL resolved: the binary found (a path, or a
 * name on PATH), the symbol looked up in its Go function table (generic
 * instantiations match "[...]") or its ELF symbols, a Go entry moved past
 * the stack-bound check, and the file offset the uprobe PMU takes.  One of
 * the modules behind events.h, for them only: the rest of the code
 * includes events.h.
 */
#ifndef PM_EVUPROBE_H
#define PM_EVUPROBE_H

#include <stddef.h>

#include "events/events.h"

/* Why uretprobe: and SYMBOL%return are refused. */
extern const char pm_evt_retprobe_why[];

/*
 * @rest is "BINARY:SYMBOL" (after "uprobe:" in @text): fills out->path,
 * symbol, name and config2 (the file offset).  Reads the binary.  0, or
 * -EINVAL with one line in @err.
 */
int pm_evt_parse_uprobe(const char *text, const char *rest, struct pm_evt_spec *out, char *err,
		 size_t errlen);

#endif
