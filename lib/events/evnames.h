/*
 * evnames: perf's built-in event names -> type and config (generic hardware
 * and software events with their aliases, hardware cache events as type,
 * op and result, raw rNNNN), and the nearest names for "did you mean".
 * One of the modules behind events.h, for them only: the rest of the code
 * includes events.h (pm_evt_builtin() is this module's).
 */
#ifndef PM_EVNAMES_H
#define PM_EVNAMES_H

#include <stddef.h>

#include "events/events.h"

#define NAME_MAX_LEN 63 /* sizeof(spec.name) - 1 */

/*
 * Nearest names: the closest candidates by edit distance, at most three,
 * none further than 3 edits (and no further than half the typed length,
 * so that "foo" does not suggest "cs").  Candidates are copied: some are
 * generated (cache event names).
 */
struct suggest {
	const char *typed;
	unsigned limit;
	size_t n;
	unsigned dist[3];
	char pick[3][128];
};

void pm_evt_suggest_init(struct suggest *sg, const char *typed);
/* @cand at distance @d: kept when among the three nearest within the limit. */
void pm_evt_suggest_add_dist(struct suggest *sg, const char *cand, unsigned d);
void pm_evt_suggest_add(struct suggest *sg, const char *cand);
/* "'a', 'b' or 'c'" into @buf; "" when none. */
const char *pm_evt_suggest_list(const struct suggest *sg, char *buf, size_t len);

/*
 * A named event without terms: generic, cache, raw or tracepoint.  Fills
 * type/config/name/kind.  0, or -EINVAL with one line in @err.
 */
int pm_evt_parse_named(const char *name, const char *text, struct pm_evt_spec *out, char *err,
		size_t errlen);

#endif
