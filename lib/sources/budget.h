/*
 * budget: a probe's hits per second held to a budget by watching part of
 * the time (--alloc-max-rate).  Time goes in periods (100 ms, longer when
 * the share is small, at most 1 s); in a period over the budget the probes
 * are open for a share f of it, at a random offset, and closed the rest (a
 * closed uprobe traps no more; a disabled one still would).  f follows the
 * hits the kernel counted in the last period (f * budget / hits, at most
 * doubling, never below 5 %).  A hit in a period weighs the period's
 * length over its window: 1 / f.  The caller opens and closes its probes
 * as pm_budget_tick() says and scales each hit by pm_budget_weight() at
 * its time (logging it in a capture, so that a replay weighs the same).
 *
 * (--locks' budget is its own, in src_locks.c: a wait is an entry and an
 * exit probe, the exits open past the window while a wait begun in it
 * goes on.)
 */
#ifndef PM_BUDGET_H
#define PM_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

struct pm_budget;

/* @per_s hits per second (> 0); @seed picks the windows' offsets. */
struct pm_budget *pm_budget_new(int64_t per_s, uint64_t seed);
void pm_budget_free(struct pm_budget *b); /* NULL is fine */
/*
 * Live, at @now (the events' clock): @hits the probes' hits so far, as
 * the kernel counts them.  *@open: whether the probes are to be open now.
 * Returns when to be called again.
 */
uint64_t pm_budget_tick(struct pm_budget *b, uint64_t now, uint64_t hits, bool *open);
/*
 * A source's timer, the same steps for each: *@b made at the first call
 * (@per_s, @seed), then pm_budget_tick().  *@first_over: the rate seen,
 * the first time the hits went over the budget (to be said once); else 0.
 */
uint64_t pm_budget_step(struct pm_budget **b, int64_t per_s, uint64_t seed, uint64_t now,
			uint64_t hits, bool *open, double *first_over);
/* The weight of a hit at @t: 1 / the share of its period watched (1 before any, or in full). */
double pm_budget_weight(const struct pm_budget *b, uint64_t t);
/* Was the budget ever exceeded (the probes then watched part of the time)?  The rate seen then. */
bool pm_budget_over(const struct pm_budget *b, double *rate);
/* The share of the time watched so far (1 when never over). */
double pm_budget_watched(const struct pm_budget *b, uint64_t now);

#endif
