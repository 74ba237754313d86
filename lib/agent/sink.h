/*
 * sink: where the agent's intervals go: put into the spool by the
 * recording children, pushed from it by the sender child to the backends
 * the options name (agent.h: otlp, pyroscope, dir).
 */
#ifndef PM_SINK_H
#define PM_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "agent/meta.h"

struct pm_agent_cfg;
struct pm_sink;

/* Before anything starts: the spool can be made and written, the URLs parse.  0 or -1 (@err). */
int pm_sink_check(const struct pm_agent_cfg *cfg, char *err, size_t errlen);
/* A recording child's handle on the spool; NULL with @err. */
struct pm_sink *pm_sink_open_put(const struct pm_agent_cfg *cfg, char *err, size_t errlen);
/* One interval: @pprof (@len bytes, gzip'd) with @m, into the spool.  0 or -1 (@err). */
int pm_sink_put(struct pm_sink *s, const struct pm_agent_meta *m, const uint8_t *pprof,
		size_t len, char *err, size_t errlen);
void pm_sink_close(struct pm_sink *s);
/*
 * The sender child: pushes the spool to the backends until *cfg->stop,
 * then one last pass.  0, or -1 when it cannot run.
 */
int pm_sink_sender_main(const struct pm_agent_cfg *cfg);

#endif
