/*
 * budget: a probe's hits held to a budget by watching part of the time
 * (budget.h).
 */
#include "sources/budget.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define PERIOD_NS 100000000ULL      /* at least */
#define MAX_PERIOD_NS 1000000000ULL /* at most */
#define MIN_ON_NS 20000000ULL       /* a window, at least (but in 1 s periods) */
#define MIN_FRACTION 0.05
#define KEEP 256UL /* periods remembered for the hits processed late (25 s at the least) */

struct period {
	uint64_t start;
	double w;
};

struct pm_budget {
	int64_t per_s;
	uint64_t rng;
	double f;                          /* this period's share */
	uint64_t pstart, pend, on_at, off_at, hits0;
	uint64_t first, on_total;          /* the first period's start; the windows' time so far */
	double over_rate;                  /* the first rate over the budget, 0 none */
	bool said;                         /* pm_budget_step() told it */
	struct period *per;                /* by start */
	size_t nper, cap;
};

struct pm_budget *pm_budget_new(int64_t per_s, uint64_t seed)
{
	struct pm_budget *b = xcalloc(1, sizeof(*b));

	b->per_s = per_s > 0 ? per_s : 1;
	b->rng = seed | 1;
	b->f = 1;
	return b;
}

void pm_budget_free(struct pm_budget *b)
{
	if (!b)
		return;
	free(b->per);
	free(b);
}

static uint64_t rnd(struct pm_budget *b)
{
	b->rng ^= b->rng << 13;
	b->rng ^= b->rng >> 7;
	b->rng ^= b->rng << 17;
	return b->rng;
}

static void push(struct pm_budget *b, uint64_t start, double w)
{
	if (b->nper == 2 * KEEP) { /* the oldest half forgotten */
		memmove(b->per, b->per + KEEP, KEEP * sizeof(*b->per));
		b->nper = KEEP;
	}
	PM_GROW(b->per, b->cap, b->nper + 1);
	b->per[b->nper++] = (struct period){ start, w };
}

/* A period from @now, its probes open for a share @f of it (1: all of it). */
static void new_period(struct pm_budget *b, uint64_t now, uint64_t hits, double f)
{
	uint64_t len = PERIOD_NS, on_len, slack;

	if (f < 1 && (double)MIN_ON_NS / f > (double)len)
		len = (uint64_t)((double)MIN_ON_NS / f);
	if (len > MAX_PERIOD_NS)
		len = MAX_PERIOD_NS;
	on_len = f < 1 ? (uint64_t)(f * (double)len) : len;
	if (!on_len)
		on_len = 1;
	slack = len - on_len;
	b->f = f;
	b->pstart = now;
	b->pend = now + len;
	b->hits0 = hits;
	b->on_at = now + (slack ? rnd(b) % slack : 0);
	b->off_at = b->on_at + on_len;
	b->on_total += on_len;
	push(b, now, (double)len / (double)on_len);
}

uint64_t pm_budget_tick(struct pm_budget *b, uint64_t now, uint64_t hits, bool *open)
{
	if (!b->pstart) {
		b->first = now;
		new_period(b, now, hits, 1);
	} else if (now >= b->pend) {
		double rate = (double)(hits - b->hits0) * 1e9 / (double)(now - b->pstart);
		double f = rate > 0 ? b->f * (double)b->per_s / rate : 1;

		if (f > 2 * b->f)
			f = 2 * b->f;
		if (f < MIN_FRACTION)
			f = MIN_FRACTION;
		if (f < 1 && !b->over_rate)
			b->over_rate = rate / b->f;
		new_period(b, now, hits, f < 1 ? f : 1);
	}
	*open = b->f >= 1 || (now >= b->on_at && now < b->off_at);
	if (b->f >= 1 || now >= b->off_at)
		return b->pend;
	return now < b->on_at ? b->on_at : b->off_at;
}

double pm_budget_weight(const struct pm_budget *b, uint64_t t)
{
	size_t lo = 0, hi = b->nper;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (b->per[mid].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? b->per[lo - 1].w : 1;
}

bool pm_budget_over(const struct pm_budget *b, double *rate)
{
	if (rate)
		*rate = b->over_rate;
	return b->over_rate > 0;
}

double pm_budget_watched(const struct pm_budget *b, uint64_t now)
{
	uint64_t all;

	if (!b->pstart || now <= b->first)
		return 1;
	all = PM_MAX(now, b->pend) - b->first;
	return all ? PM_MIN(1.0, (double)b->on_total / (double)all) : 1;
}

uint64_t pm_budget_step(struct pm_budget **b, int64_t per_s, uint64_t seed, uint64_t now,
			uint64_t hits, bool *open, double *first_over)
{
	uint64_t next;
	double rate;

	if (!*b)
		*b = pm_budget_new(per_s, seed);
	next = pm_budget_tick(*b, now, hits, open);
	*first_over = 0;
	if (!(*b)->said && pm_budget_over(*b, &rate)) {
		(*b)->said = true;
		*first_over = rate;
	}
	return next;
}
