/*
 * Unit tests for lib/sources/budget: a probe's hits held to a budget,
 * driven by a made-up clock and hit count: under the budget the probes stay
 * open and weigh 1; over it the share watched follows budget / rate, each
 * window sits inside its period, and a hit weighs the period's length over
 * its window, so that the hits seen, weighed, add up to all of them.
 */
#include "sources/budget.h"

#include "test.h"

#include <stdint.h>
#include <stdlib.h>

#define MS 1000000ULL

/*
 * Run @b for @secs of a steady @rate hits/s, stepping 1 ms: the hits seen
 * (those in open time) and their weighed sum into *@seen and *@weighed.
 */
static void run(struct pm_budget *b, uint64_t *now, uint64_t *hits, double rate, double secs,
		uint64_t *seen, double *weighed, unsigned *bad)
{
	uint64_t end = *now + (uint64_t)(secs * 1e9), next = 0;
	uint64_t acc = 0; /* thousandths of a hit */
	bool open = true;

	*seen = 0;
	*weighed = 0;
	for (; *now < end; *now += MS) {
		if (*now >= next)
			next = pm_budget_tick(b, *now, *hits, &open);
		if (next <= *now)
			(*bad)++; /* the tick must say a later time */
		acc += (uint64_t)rate;
		while (acc >= 1000) {
			acc -= 1000;
			if (!open)
				continue;
			(*hits)++;
			(*seen)++;
			*weighed += pm_budget_weight(b, *now);
		}
	}
}

static int t_under(void)
{
	struct pm_budget *b = pm_budget_new(1000, 42);
	uint64_t now = 1000 * MS, hits = 0, seen;
	double weighed, rate;
	unsigned bad = 0;

	run(b, &now, &hits, 500, 2, &seen, &weighed, &bad);
	CHECK_INT(bad, 0);
	CHECK_INT(seen, 1000); /* all of them */
	CHECK(weighed == 1000);
	CHECK(!pm_budget_over(b, &rate));
	CHECK(pm_budget_watched(b, now) == 1);
	pm_budget_free(b);
	return PM_PASS;
}

static int t_over(void)
{
	struct pm_budget *b = pm_budget_new(500, 7);
	uint64_t now = 1000 * MS, hits = 0, seen;
	double weighed, rate, w;
	unsigned bad = 0;

	run(b, &now, &hits, 10000, 1, &seen, &weighed, &bad); /* the budget learns the rate */
	run(b, &now, &hits, 10000, 20, &seen, &weighed, &bad);
	CHECK_INT(bad, 0);
	CHECK(pm_budget_over(b, &rate));
	CHECK(rate > 8000 && rate < 12000);
	/* about the budget's hits: 20 s at 500/s */
	CHECK(seen > 20 * 500 / 2 && seen < 20 * 500 * 2);
	/* weighed, all of them: 200 000 within 10 % (windows of whole ms) */
	CHECK(weighed > 180000 && weighed < 220000);
	w = pm_budget_weight(b, now - 1);
	CHECK(w > 10 && w <= 20.0 + 1e-9); /* 1 / the share, at least 5 % */
	CHECK(pm_budget_watched(b, now) > 0.03 && pm_budget_watched(b, now) < 0.1);
	/* before any period: 1 */
	CHECK(pm_budget_weight(b, 0) == 1);
	pm_budget_free(b);
	return PM_PASS;
}

/* The rate falls under the budget: the probes open in full again, weight 1. */
static int t_recovers(void)
{
	struct pm_budget *b = pm_budget_new(500, 9);
	uint64_t now = 1000 * MS, hits = 0, seen;
	double weighed;
	unsigned bad = 0;

	run(b, &now, &hits, 5000, 3, &seen, &weighed, &bad);
	run(b, &now, &hits, 100, 5, &seen, &weighed, &bad); /* (the share doubles a period) */
	run(b, &now, &hits, 100, 2, &seen, &weighed, &bad);
	CHECK_INT(bad, 0);
	CHECK_INT(seen, 200);
	CHECK(weighed == 200);
	pm_budget_free(b);
	return PM_PASS;
}

/* pm_budget_step(): made at the first call, the rate over the budget told once. */
static int t_step(void)
{
	struct pm_budget *b = NULL;
	uint64_t now = 1000 * MS, next = 0, hits = 0;
	unsigned told = 0;
	double first = 0, r;
	bool open = true;

	for (int i = 0; i < 5000; i++, now += MS) {
		if (open)
			hits += 10; /* 10 000 a second */
		if (now < next)
			continue;
		next = pm_budget_step(&b, 300, 5, now, hits, &open, &r);
		if (r > 0) {
			told++;
			first = r;
		}
	}
	CHECK(b != NULL);
	CHECK_INT(told, 1);
	CHECK(first > 8000 && first < 12000);
	pm_budget_free(b);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "under", t_under },
	{ "step", t_step },
	{ "over", t_over },
	{ "recovers", t_recovers },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "budget", tests);
}
