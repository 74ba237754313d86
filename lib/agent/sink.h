/*
 * sink: a recording child's intervals to the agent, over a pipe of its
 * own: the child frames each interval (its meta as text, its gzip'd
 * pprof) and writes it whole; the agent reads the pipes of every child
 * without blocking, and hands each complete interval on (to the spool).
 * One owner of the spool, whatever the number of children: the children
 * never touch it.
 *
 * A frame: "PMAI", the meta's length and the profile's (32 bits each,
 * native order: both ends are this binary), the meta, the profile.  The
 * reader checks the magic and bounds every length (the children read
 * hostile targets: a corrupt frame ends that child's pipe, counted, not
 * the agent).
 */
#ifndef PM_SINK_H
#define PM_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/meta.h"

#define PM_SINK_MAX_PROFILE (256u << 20) /* bytes of one interval's profile, at most */

/* The child: one interval into @fd, whole.  0 or -errno. */
int pm_sink_send(int fd, const struct pm_agent_meta *m, const uint8_t *pprof, size_t len);

struct pm_sink_rx;

typedef void (*pm_sink_fn)(void *arg, const struct pm_agent_meta *m, const uint8_t *pprof,
			   size_t len);

/* The agent's end of one child's pipe @fd (made non-blocking; closed by pm_sink_rx_free()). */
struct pm_sink_rx *pm_sink_rx_new(int fd);
int pm_sink_rx_fd(const struct pm_sink_rx *rx);
/*
 * Read what the pipe holds now; each complete interval to @fn.  Returns 1
 * while the pipe is open, 0 at its end (the child closed it, or a
 * corrupt frame: then *@corrupt is set).
 */
int pm_sink_rx_read(struct pm_sink_rx *rx, pm_sink_fn fn, void *arg, bool *corrupt);
void pm_sink_rx_free(struct pm_sink_rx *rx);

#endif
