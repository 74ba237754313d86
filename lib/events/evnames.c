/*
 * evnames: perf's built-in event names -> type and config: generic hardware
 * and software events, hardware cache events, raw rNNNN; the nearest names
 * for "did you mean".
 */
#include "events/evnames.h"

#include "events/evfiles.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct evdef {
	const char *name;  /* perf's canonical name (evsel__hw_names / sw_names) */
	const char *alias; /* or NULL */
	uint32_t type;
	uint64_t config;
};

static const struct evdef events[] = {
	{ "cycles", "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", "branch-instructions", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "stalled-cycles-frontend", "idle-cycles-frontend", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "stalled-cycles-backend", "idle-cycles-backend", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "ref-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
	{ "cpu-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "context-switches", "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "minor-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "alignment-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
	{ "dummy", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY },
};

/* Case-insensitive Levenshtein distance; both strings are at most NAME_MAX_LEN. */
static unsigned edit_distance(const char *a, const char *b)
{
	unsigned row[NAME_MAX_LEN + 2];
	size_t la = strlen(a), lb = strlen(b);

	if (la > NAME_MAX_LEN || lb > NAME_MAX_LEN)
		return ~0u;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];

		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned sub = diag + (tolower((unsigned char)a[i - 1]) !=
					       tolower((unsigned char)b[j - 1]));
			unsigned best = PM_MIN(up + 1, row[j - 1] + 1);

			row[j] = PM_MIN(best, sub);
			diag = up;
		}
	}
	return row[lb];
}

void pm_evt_suggest_init(struct suggest *sg, const char *typed)
{
	size_t len = strlen(typed);

	memset(sg, 0, sizeof(*sg));
	sg->typed = typed;
	sg->limit = (unsigned)PM_MIN((size_t)3, (len + 1) / 2);
}

void pm_evt_suggest_add_dist(struct suggest *sg, const char *cand, unsigned d)
{
	size_t k;

	if (!cand || d > sg->limit)
		return;
	for (k = 0; k < sg->n; k++)
		if (!strcmp(sg->pick[k], cand))
			return;
	/* insertion sort by distance, stable for candidate order */
	for (k = sg->n; k > 0 && sg->dist[k - 1] > d; k--) {
		if (k < 3) {
			memcpy(sg->pick[k], sg->pick[k - 1], sizeof(sg->pick[k]));
			sg->dist[k] = sg->dist[k - 1];
		}
	}
	if (k < 3) {
		snprintf(sg->pick[k], sizeof(sg->pick[k]), "%s", cand);
		sg->dist[k] = d;
		if (sg->n < 3)
			sg->n++;
	}
}

void pm_evt_suggest_add(struct suggest *sg, const char *cand)
{
	if (cand)
		pm_evt_suggest_add_dist(sg, cand, edit_distance(sg->typed, cand));
}

/* "'a', 'b' or 'c'" into @buf; "" when none. */
const char *pm_evt_suggest_list(const struct suggest *sg, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sg->n; i++) {
		const char *sep = i == 0 ? "" : i + 1 == sg->n ? " or " : ", ";
		int n = snprintf(buf + off, len - off, "%s'%s'", sep, sg->pick[i]);

		if (n > 0 && (size_t)n < len - off)
			off += (size_t)n;
	}
	return buf;
}

/* ---- hardware cache events: perf's type, op and result names ---- */

static const char *const cache_types[][5] = {
	{ "L1-dcache", "l1-d", "l1d", "L1-data", NULL },
	{ "L1-icache", "l1-i", "l1i", "L1-instruction", NULL },
	{ "LLC", "L2", NULL },
	{ "dTLB", "d-tlb", "Data-TLB", NULL },
	{ "iTLB", "i-tlb", "Instruction-TLB", NULL },
	{ "branch", "branches", "bpu", "btb", "bpc" },
	{ "node", NULL },
};
static const char *const cache_ops[][5] = {
	{ "load", "loads", "read", NULL },
	{ "store", "stores", "write", NULL },
	{ "prefetch", "prefetches", "speculative-read", "speculative-load", NULL },
};
static const char *const cache_results[][5] = {
	{ "refs", "Reference", "ops", "access", NULL },
	{ "misses", "miss", NULL },
};
/* which ops each cache has (bit per PERF_COUNT_HW_CACHE_OP_*), as perf's table */
static const unsigned cache_valid[] = { 7, 5, 7, 7, 1, 1, 7 };

#define NCACHE_TYPES PM_ARRAY_SIZE(cache_types)
#define NCACHE_OPS PM_ARRAY_SIZE(cache_ops)
#define NCACHE_RESULTS PM_ARRAY_SIZE(cache_results)

/* Canonical name as perf prints it: "L1-dcache-loads", "L1-dcache-load-misses". */
static void cache_name(unsigned t, unsigned op, unsigned res, char *buf, size_t len)
{
	if (res == PERF_COUNT_HW_CACHE_RESULT_ACCESS)
		snprintf(buf, len, "%s-%s", cache_types[t][0], cache_ops[op][1]);
	else
		snprintf(buf, len, "%s-%s-%s", cache_types[t][0], cache_ops[op][0],
			 cache_results[res][0]);
}

/*
 * Longest alias in @tab[i] that @s starts with, followed by '-' or the end.
 * The alias length, 0 when none.
 */
static size_t match_alias(const char *s, const char *const *aliases, size_t naliases)
{
	size_t best = 0;

	for (size_t a = 0; a < naliases && aliases[a]; a++) {
		size_t l = strlen(aliases[a]);

		if (l > best && !strncasecmp(s, aliases[a], l) && (s[l] == '-' || !s[l]))
			best = l;
	}
	return best;
}

/* 1: a cache event (*config, canonical @canon); 0: not one; -EINVAL: bad combination. */
static int parse_cache(const char *name, uint64_t *config, char *canon, size_t clen, char *err,
		       size_t errlen)
{
	unsigned type = 0, op = PERF_COUNT_HW_CACHE_OP_READ, res = PERF_COUNT_HW_CACHE_RESULT_ACCESS;
	bool have_op = false, have_res = false;
	const char *p = NULL;
	size_t best = 0;

	for (unsigned t = 0; t < NCACHE_TYPES; t++) {
		size_t l = match_alias(name, cache_types[t], 5);

		if (l > best) {
			best = l;
			type = t;
		}
	}
	if (!best)
		return 0;
	p = name + best;
	/* up to two more parts: an op and a result, in either order */
	for (int part = 0; part < 2 && *p == '-'; part++) {
		size_t l;
		bool found = false;

		p++;
		for (unsigned o = 0; o < NCACHE_OPS && !found; o++) {
			l = match_alias(p, cache_ops[o], 5);
			if (l && !have_op) {
				op = o;
				have_op = found = true;
				p += l;
			}
		}
		for (unsigned r = 0; r < NCACHE_RESULTS && !found; r++) {
			l = match_alias(p, cache_results[r], 5);
			if (l && !have_res) {
				res = r;
				have_res = found = true;
				p += l;
			}
		}
		if (!found)
			return 0;
	}
	if (*p || (!have_op && !have_res))
		return 0;
	if (!(cache_valid[type] & (1u << op))) {
		pm_seterr(err, errlen, "'%s' is not a cache event: %s has no %s counter", name,
		       cache_types[type][0], cache_ops[op][0]);
		return -EINVAL;
	}
	*config = type | (op << 8) | (res << 16);
	cache_name(type, op, res, canon, clen);
	return 1;
}

const char *pm_evt_builtin(size_t i, enum pm_evt_kind *kind)
{
	static char buf[64];
	size_t t, o, r;

	if (i < PM_ARRAY_SIZE(events)) {
		*kind = events[i].type == PERF_TYPE_HARDWARE ? PM_EVT_HW : PM_EVT_SW;
		return events[i].name;
	}
	i -= PM_ARRAY_SIZE(events);
	for (t = 0; t < NCACHE_TYPES; t++)
		for (o = 0; o < NCACHE_OPS; o++) {
			if (!(cache_valid[t] & (1u << o)))
				continue;
			for (r = 0; r < NCACHE_RESULTS; r++)
				if (i-- == 0) {
					cache_name((unsigned)t, (unsigned)o, (unsigned)r, buf,
						   sizeof(buf));
					*kind = PM_EVT_CACHE;
					return buf;
				}
		}
	return NULL;
}

static void suggest_builtin(struct suggest *sg)
{
	enum pm_evt_kind k;
	const char *n;

	for (size_t i = 0; i < PM_ARRAY_SIZE(events); i++) {
		pm_evt_suggest_add(sg, events[i].name);
		pm_evt_suggest_add(sg, events[i].alias);
	}
	for (size_t i = PM_ARRAY_SIZE(events); (n = pm_evt_builtin(i, &k)); i++)
		pm_evt_suggest_add(sg, n);
}

static bool parse_raw(const char *name, uint64_t *config)
{
	size_t n = strlen(name);

	if (n < 2 || n > 17 || name[0] != 'r')
		return false;
	for (size_t i = 1; i < n; i++)
		if (!isxdigit((unsigned char)name[i]))
			return false;
	*config = strtoull(name + 1, NULL, 16);
	return true;
}

/* A named event without terms: generic, cache, raw or tracepoint.  Fills type/config/name/kind. */
int pm_evt_parse_named(const char *name, const char *text, struct pm_evt_spec *out, char *err,
		size_t errlen)
{
	uint64_t config;
	char canon[64];
	int rc;

	for (size_t i = 0; i < PM_ARRAY_SIZE(events); i++) {
		if (!strcasecmp(name, events[i].name) ||
		    (events[i].alias && !strcasecmp(name, events[i].alias))) {
			snprintf(out->name, sizeof(out->name), "%s", events[i].name);
			out->type = events[i].type;
			out->config = events[i].config;
			out->kind = events[i].type == PERF_TYPE_HARDWARE ? PM_EVT_HW : PM_EVT_SW;
			return 0;
		}
	}
	rc = parse_cache(name, &config, canon, sizeof(canon), err, errlen);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		snprintf(out->name, sizeof(out->name), "%s", canon);
		out->type = PERF_TYPE_HW_CACHE;
		out->config = config;
		out->kind = PM_EVT_CACHE;
		return 0;
	}
	if (parse_raw(name, &config)) {
		snprintf(out->name, sizeof(out->name), "%s", name);
		out->type = PERF_TYPE_RAW;
		out->config = config;
		out->kind = PM_EVT_RAW;
		return 0;
	}
	if (strchr(name, ':')) {
		rc = pm_evt_parse_tracepoint(name, &config, err, errlen);
		if (rc)
			return rc;
		snprintf(out->name, sizeof(out->name), "%s", name);
		out->type = PERF_TYPE_TRACEPOINT;
		out->config = config;
		out->kind = PM_EVT_TRACEPOINT;
		return 0;
	}
	{
		struct suggest sg;
		char list[400];

		pm_evt_suggest_init(&sg, name);
		suggest_builtin(&sg);
		if (sg.n)
			pm_seterr(err, errlen, "unknown event '%s' (did you mean %s?)", name,
			       pm_evt_suggest_list(&sg, list, sizeof(list)));
		else
			pm_seterr(err, errlen,
			       "unknown event '%s'; run 'pmuprof list' to see the events here",
			       name);
		(void)text;
	}
	return -EINVAL;
}
