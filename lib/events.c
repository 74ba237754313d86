/*
 * events: perf's event names -> perf_event_attr, perf_event_open, and errno
 * turned into one line of cause and remedy.
 */
#include "events.h"

#include "elfimg.h"
#include "gopclntab.h"
#include "target.h"
#include "util.h"

#include <ctype.h>
#include <elf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

#define NAME_MAX_LEN 63 /* sizeof(spec.name) - 1 */

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

static void suggest_init(struct suggest *sg, const char *typed)
{
	size_t len = strlen(typed);

	memset(sg, 0, sizeof(*sg));
	sg->typed = typed;
	sg->limit = (unsigned)PM_MIN((size_t)3, (len + 1) / 2);
}

static void suggest_add_dist(struct suggest *sg, const char *cand, unsigned d)
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

static void suggest_add(struct suggest *sg, const char *cand)
{
	if (cand)
		suggest_add_dist(sg, cand, edit_distance(sg->typed, cand));
}

/* "'a', 'b' or 'c'" into @buf; "" when none. */
static const char *suggest_list(const struct suggest *sg, char *buf, size_t len)
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
		suggest_add(sg, events[i].name);
		suggest_add(sg, events[i].alias);
	}
	for (size_t i = PM_ARRAY_SIZE(events); (n = pm_evt_builtin(i, &k)); i++)
		suggest_add(sg, n);
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

/* ---- files: sysfs PMUs, tracefs ---- */

const char *pm_evt_sysfs(void)
{
	const char *v = getenv("PMUPROF_SYSFS");

	return v && *v ? v : "/sys/bus/event_source/devices";
}

static bool has_events_dir(const char *root)
{
	char p[4200];
	struct stat st;

	snprintf(p, sizeof(p), "%s/events", root);
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *pm_evt_tracefs(void)
{
	const char *v = getenv("PMUPROF_TRACEFS");

	if (v && *v)
		return has_events_dir(v) ? v : NULL;
	if (has_events_dir("/sys/kernel/tracing"))
		return "/sys/kernel/tracing";
	if (has_events_dir("/sys/kernel/debug/tracing"))
		return "/sys/kernel/debug/tracing";
	return NULL;
}

/* A path component from the user: letters, digits, '_', '-', '.', not "." or "..". */
static bool safe_component(const char *s, size_t len)
{
	if (!len || len > 255 || (s[0] == '.' && (len == 1 || (len == 2 && s[1] == '.'))))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
			return false;
	return true;
}

/* A small text file's first line, trailing whitespace removed.  0 or -errno. */
static int read_line(const char *path, char *buf, size_t len)
{
	char *data;
	int rc = pm_read_file(path, &data, 4096);
	size_t n;

	if (rc < 0)
		return rc;
	n = strcspn(data, "\n");
	while (n && isspace((unsigned char)data[n - 1]))
		n--;
	if (n >= len)
		n = len - 1;
	memcpy(buf, data, n);
	buf[n] = 0;
	free(data);
	return 0;
}

static int read_u64_file(const char *path, uint64_t *v)
{
	char line[64], *end;
	int rc = read_line(path, line, sizeof(line));

	if (rc)
		return rc;
	errno = 0;
	*v = strtoull(line, &end, 0);
	if (end == line || *end || errno)
		return -EINVAL;
	return 0;
}

/* ---- modifiers and terms ---- */

struct mods {
	bool u, k, any;
	unsigned precise;
};

static int parse_mods(const char *m, const char *text, struct mods *md, char *err, size_t errlen)
{
	memset(md, 0, sizeof(*md));
	if (!m)
		return 0;
	if (!*m) {
		pm_seterr(err, errlen, "empty modifier in '%s' (allowed: u, k, p)", text);
		return -EINVAL;
	}
	md->any = true;
	for (; *m; m++) {
		switch (*m) {
		case 'u':
			md->u = true;
			break;
		case 'k':
			md->k = true;
			break;
		case 'p':
			if (++md->precise > 3) {
				pm_seterr(err, errlen,
				       "too many 'p' modifiers in '%s' (at most 3: p, pp, ppp)", text);
				return -EINVAL;
			}
			break;
		default:
			if (isprint((unsigned char)*m))
				pm_seterr(err, errlen, "unknown modifier '%c' in '%s' (allowed: u, k, p)",
				       *m, text);
			else
				pm_seterr(err, errlen,
				       "unknown modifier byte 0x%02x in event '%s' (allowed: u, k, p)",
				       (unsigned char)*m, text);
			return -EINVAL;
		}
	}
	return 0;
}

static bool all_mod_chars(const char *m)
{
	if (!*m)
		return false;
	for (; *m; m++)
		if (*m != 'u' && *m != 'k' && *m != 'p')
			return false;
	return true;
}

/* A term value: decimal or 0x hex, the whole string.  0 or -EINVAL. */
static int term_value(const char *v, uint64_t *out)
{
	char *end;

	if (!*v || *v == '-' || *v == '+' || isspace((unsigned char)*v))
		return -EINVAL;
	errno = 0;
	*out = strtoull(v, &end, 0);
	return end == v || *end || errno ? -EINVAL : 0;
}

/*
 * A sysfs format line, "config:0-7", "config1:0-3,8-11" or "config:21",
 * applied to @val: its bits go into the ranges from the lowest up.
 * 0, -ERANGE when @val has more bits than the format, -EINVAL when the
 * format does not parse.
 */
static int apply_format(const char *fmt, uint64_t val, uint64_t cfg[3])
{
	const char *p;
	unsigned which, used = 0;
	uint64_t v = val, out = 0;

	if (!strncmp(fmt, "config1:", 8)) {
		which = 1;
		p = fmt + 8;
	} else if (!strncmp(fmt, "config2:", 8)) {
		which = 2;
		p = fmt + 8;
	} else if (!strncmp(fmt, "config:", 7)) {
		which = 0;
		p = fmt + 7;
	} else {
		return -EINVAL;
	}
	for (int r = 0; r < 64 && *p; r++) {
		char *end;
		unsigned long lo, hi;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		lo = strtoul(p, &end, 10);
		hi = lo;
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				return -EINVAL;
			hi = strtoul(end + 1, &end, 10);
		}
		if (lo > 63 || hi > 63 || hi < lo)
			return -EINVAL;
		for (unsigned long b = lo; b <= hi; b++) {
			out |= (v & 1) << b;
			v >>= 1;
			used++;
		}
		if (*end == ',')
			end++;
		else if (*end)
			return -EINVAL;
		p = end;
	}
	if (!used)
		return -EINVAL;
	if (v)
		return -ERANGE;
	/* the term owns its bits: a later value for the same term replaces them */
	cfg[which] |= out;
	return 0;
}

struct terms_ctx {
	const char *text;  /* the whole spec, for messages */
	const char *pmu;   /* PMU directory name, NULL for a non-PMU event */
	uint64_t cfg[3];
	uint64_t period, freq;
	int depth;         /* alias expansion depth */
};

static int parse_terms(struct terms_ctx *c, const char *terms, char *err, size_t errlen);

/* One term "key[=value]". */
static int parse_term(struct terms_ctx *c, char *term, char *err, size_t errlen)
{
	char *eq = strchr(term, '=');
	const char *key = term, *vs = "1";
	uint64_t val;
	char path[4600], fmt[256];
	int rc;

	if (eq) {
		*eq = 0;
		vs = eq + 1;
	}
	if (!*key) {
		pm_seterr(err, errlen, "empty term in '%s'", c->text);
		return -EINVAL;
	}
	if (!strcmp(key, "period") || !strcmp(key, "freq")) {
		if (!eq || term_value(vs, &val) || !val) {
			pm_seterr(err, errlen, "bad value for '%s' in '%s': a number above 0", key,
			       c->text);
			return -EINVAL;
		}
		if (key[0] == 'p')
			c->period = val;
		else
			c->freq = val;
		return 0;
	}
	if (!c->pmu) {
		pm_seterr(err, errlen, "unknown term '%s' in '%s' (allowed here: period=N, freq=N)",
		       key, c->text);
		return -EINVAL;
	}
	if (!strcmp(key, "config") || !strcmp(key, "config1") || !strcmp(key, "config2")) {
		if (term_value(vs, &val)) {
			pm_seterr(err, errlen, "bad value '%s' for '%s' in '%s'", vs, key, c->text);
			return -EINVAL;
		}
		c->cfg[key[6] ? key[6] - '0' : 0] |= val;
		return 0;
	}
	if (!safe_component(key, strlen(key))) {
		pm_seterr(err, errlen, "bad term name '%s' in '%s'", key, c->text);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "%s/%s/format/%s", pm_evt_sysfs(), c->pmu, key);
	if (read_line(path, fmt, sizeof(fmt)) == 0) {
		if (term_value(vs, &val)) {
			pm_seterr(err, errlen, "bad value '%s' for '%s' in '%s'", vs, key, c->text);
			return -EINVAL;
		}
		rc = apply_format(fmt, val, c->cfg);
		if (rc == -ERANGE)
			pm_seterr(err, errlen, "value %s is too large for '%s' (%s) in '%s'", vs, key,
			       fmt, c->text);
		else if (rc)
			pm_seterr(err, errlen, "cannot parse %s/format/%s: '%s'", c->pmu, key, fmt);
		return rc ? -EINVAL : 0;
	}
	/* an event alias of the PMU: SYSFS/PMU/events/NAME holds terms */
	snprintf(path, sizeof(path), "%s/%s/events/%s", pm_evt_sysfs(), c->pmu, key);
	if (!eq && c->depth == 0 && read_line(path, fmt, sizeof(fmt)) == 0) {
		c->depth++;
		rc = parse_terms(c, fmt, err, errlen);
		c->depth--;
		return rc;
	}
	{
		struct suggest sg;
		char list[400], dir[4300];
		DIR *d;
		struct dirent *de;

		suggest_init(&sg, key);
		for (int pass = 0; pass < 2; pass++) {
			snprintf(dir, sizeof(dir), "%s/%s/%s", pm_evt_sysfs(), c->pmu,
				 pass ? "events" : "format");
			d = opendir(dir);
			for (int n = 0; d && n < 10000 && (de = readdir(d)); n++)
				if (de->d_name[0] != '.')
					suggest_add(&sg, de->d_name);
			if (d)
				closedir(d);
		}
		if (sg.n)
			pm_seterr(err, errlen, "unknown term '%s' for PMU '%s' in '%s' (did you mean %s?)",
			       key, c->pmu, c->text, suggest_list(&sg, list, sizeof(list)));
		else
			pm_seterr(err, errlen,
			       "unknown term '%s' for PMU '%s' in '%s' (see %s/%s/format/)", key,
			       c->pmu, c->text, pm_evt_sysfs(), c->pmu);
	}
	return -EINVAL;
}

static int parse_terms(struct terms_ctx *c, const char *terms, char *err, size_t errlen)
{
	char buf[512], *save = NULL, *t;
	size_t len = strlen(terms);

	if (len >= sizeof(buf)) {
		pm_seterr(err, errlen, "terms too long in '%.40s...'", c->text);
		return -EINVAL;
	}
	memcpy(buf, terms, len + 1);
	if (!len || buf[0] == ',' || buf[len - 1] == ',' || strstr(buf, ",,")) {
		pm_seterr(err, errlen, "empty term in '%s'", c->text);
		return -EINVAL;
	}
	for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int rc = parse_term(c, t, err, errlen);

		if (rc)
			return rc;
	}
	return 0;
}

/* ---- tracepoints ---- */

static void tp_not_mounted(const char *text, char *err, size_t errlen)
{
	pm_seterr(err, errlen,
	       "cannot use tracepoint '%s': tracefs is not mounted; mount it with: "
	       "mount -t tracefs nodev /sys/kernel/tracing",
	       text);
}

/* Nearest tracepoints: names in the subsystem, or subsystems. */
static void tp_unknown(const char *root, const char *sub, const char *name, char *err,
		       size_t errlen)
{
	char dir[4400], sdir[4700], typed[300], list[400], cand[600];
	struct suggest sg;
	struct dirent *de, *de2;
	DIR *d, *d2;
	bool have_sub;

	snprintf(dir, sizeof(dir), "%s/events/%s", root, sub);
	d = opendir(dir);
	have_sub = d != NULL;
	snprintf(typed, sizeof(typed), "%.140s:%.140s", sub, name);
	suggest_init(&sg, typed);
	if (d) {
		for (int n = 0; n < 100000 && (de = readdir(d)); n++)
			if (de->d_name[0] != '.' && strcmp(de->d_name, "enable") &&
			    strcmp(de->d_name, "filter")) {
				snprintf(cand, sizeof(cand), "%s:%s", sub, de->d_name);
				suggest_add(&sg, cand);
			}
		closedir(d);
	} else {
		/* the subsystem is wrong: the same event name in other subsystems, or near ones */
		snprintf(dir, sizeof(dir), "%s/events", root);
		d = opendir(dir);
		for (int n = 0; d && n < 10000 && (de = readdir(d)); n++) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(sdir, sizeof(sdir), "%s/%s", dir, de->d_name);
			d2 = opendir(sdir);
			for (int m = 0; d2 && m < 10000 && (de2 = readdir(d2)); m++) {
				if (de2->d_name[0] == '.')
					continue;
				snprintf(cand, sizeof(cand), "%s:%s", de->d_name, de2->d_name);
				if (!strcmp(de2->d_name, name))
					suggest_add_dist(&sg, cand, 0);
				else
					suggest_add(&sg, cand);
			}
			if (d2)
				closedir(d2);
		}
		if (d)
			closedir(d);
	}
	if (sg.n)
		pm_seterr(err, errlen, "unknown tracepoint '%s' (did you mean %s?)", typed,
		       suggest_list(&sg, list, sizeof(list)));
	else if (!have_sub)
		pm_seterr(err, errlen, "unknown tracepoint '%s': no subsystem '%s' in %s/events", typed,
		       sub, root);
	else
		pm_seterr(err, errlen, "unknown tracepoint '%s': see %s/events/%s/", typed, root, sub);
}

/* @name is "sub:event".  0 with *id, or -EINVAL with the message. */
static int parse_tracepoint(const char *name, uint64_t *id, char *err, size_t errlen)
{
	const char *colon = strchr(name, ':'), *root;
	char sub[256], ev[256], path[4700];
	size_t sl, el;

	sl = (size_t)(colon - name);
	el = strlen(colon + 1);
	if (!safe_component(name, sl) || !safe_component(colon + 1, el)) {
		pm_seterr(err, errlen, "bad tracepoint name '%s' (expected subsystem:name)", name);
		return -EINVAL;
	}
	root = pm_evt_tracefs();
	if (!root) {
		tp_not_mounted(name, err, errlen);
		return -EINVAL;
	}
	memcpy(sub, name, sl);
	sub[sl] = 0;
	memcpy(ev, colon + 1, el);
	ev[el] = 0;
	snprintf(path, sizeof(path), "%s/events/%s/%s/id", root, sub, ev);
	if (read_u64_file(path, id) == 0)
		return 0;
	if (access(path, F_OK) == 0 && errno != ENOENT) {
		pm_seterr(err, errlen, "cannot read the id of tracepoint '%s' (%s): run as root", name,
		       path);
		return -EINVAL;
	}
	tp_unknown(root, sub, ev, err, errlen);
	return -EINVAL;
}

/* Is @sub a tracepoint subsystem here? */
static bool tp_subsystem(const char *sub, size_t len)
{
	const char *root = pm_evt_tracefs();
	char path[4400];
	struct stat st;

	if (!root || !safe_component(sub, len))
		return false;
	snprintf(path, sizeof(path), "%s/events/%.*s", root, (int)len, sub);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- uprobes ---- */

/*
 * Go names as written by a user vs. as in gopclntab: Go 1.18+ tables spell
 * every instantiation "[...]" ("main.Map[...]", "main.(*List[...]).Push"),
 * so type arguments in brackets compare equal to "...".  Exact first.
 */
static void generic_key(const char *s, char *out, size_t len)
{
	size_t o = 0;
	int depth = 0;

	for (; *s && o + 5 < len; s++) {
		if (*s == '[') {
			if (depth++ == 0) {
				memcpy(out + o, "[...]", 5);
				o += 5;
			}
		} else if (*s == ']') {
			if (depth > 0)
				depth--;
		} else if (!depth) {
			out[o++] = *s;
		}
	}
	out[o] = 0;
}

/* ELF vaddr -> file offset through the PT_LOAD that holds it; -1 when none. */
static int64_t vaddr_to_offset(const struct pm_elf *e, uint64_t vaddr)
{
	for (size_t i = 0; i < pm_elf_nsegments(e); i++) {
		const struct pm_elf_segment *sg = pm_elf_segment_at(e, i);

		if (vaddr >= sg->vaddr && vaddr - sg->vaddr < sg->filesz)
			return (int64_t)(vaddr - sg->vaddr + sg->offset);
	}
	return -1;
}

static const char retprobe_why[] =
	"return probes are refused: a uretprobe replaces the return address on the "
	"stack, which Go's stack copying and traceback do not expect (crashes, broken "
	"stacks); probe the function's entry with uprobe:BINARY:SYMBOL";

/* "did you mean" for a symbol: Go names ending in ".SYM" or holding it, else the nearest. */
static void sym_unknown(const char *bin, const char *sym, struct pm_go *go, char *err,
			size_t errlen)
{
	struct suggest sg;
	char list[600], tail[300];
	size_t n = go ? pm_go_nfuncs(go) : 0, slen = strlen(sym);

	suggest_init(&sg, sym);
	snprintf(tail, sizeof(tail), ".%s", sym);
	for (size_t i = 0; i < n && i < 2000000; i++) {
		const char *f = pm_go_func_name(go, (long)i);
		size_t fl;

		if (!f)
			continue;
		fl = strlen(f);
		if (fl > strlen(tail) && !strcmp(f + fl - strlen(tail), tail))
			suggest_add_dist(&sg, f, 0);
		else if (slen >= 4 && strstr(f, sym))
			suggest_add_dist(&sg, f, 1);
		else if (fl <= NAME_MAX_LEN)
			suggest_add(&sg, f);
	}
	if (sg.n)
		pm_seterr(err, errlen, "no function '%s' in %s (did you mean %s?)", sym, bin,
		       suggest_list(&sg, list, sizeof(list)));
	else
		pm_seterr(err, errlen, "no function '%s' in %s (%s)", sym, bin,
		       go ? "neither in its Go function table nor its ELF symbols"
			  : "not in its ELF symbol tables");
}

/* @rest is "BINARY:SYMBOL" (after "uprobe:"). */
/*
 * Length of the stack-bound check that opens a Go function on amd64 (Go
 * 1.17+, g in R14), 0 when the entry does not start with one:
 *
 *   [lea r12, [rsp-N]]  cmp rsp|r12, [r14+0x10]  jbe morestack
 *
 * A call that grows the stack runs this check twice (morestack re-enters
 * the function from its entry), so a probe on the entry fires twice for
 * one call; right after the jbe it fires once.  The frame is not set up
 * there yet either (sp delta 0), so the unwinder sees the entry's stack.
 */
static size_t go_stack_check_len(const uint8_t *b)
{
	size_t i = 0;

	if (!b)
		return 0;
	if (b[0] == 0x4c && b[1] == 0x8d && b[2] == 0x64 && b[3] == 0x24)
		i = 5; /* lea r12, [rsp+disp8] */
	else if (b[0] == 0x4c && b[1] == 0x8d && b[2] == 0xa4 && b[3] == 0x24)
		i = 8; /* lea r12, [rsp+disp32] */
	if (b[i + 1] != 0x3b || b[i + 2] != 0x66 || b[i + 3] != 0x10 ||
	    b[i] != (i ? 0x4d : 0x49))
		return 0; /* cmp rsp|r12, [r14+0x10] */
	i += 4;
	if (b[i] == 0x76)
		return i + 2; /* jbe rel8 */
	if (b[i] == 0x0f && b[i + 1] == 0x86)
		return i + 6; /* jbe rel32 */
	return 0;
}

static int parse_uprobe(const char *text, const char *rest, struct pm_evt_spec *out, char *err,
			size_t errlen)
{
	const char *colon = strrchr(rest, ':');
	char bin[4096], sym[256], key[300], fkey[300];
	char *real = NULL;
	struct pm_elf *e = NULL;
	struct pm_go *go = NULL;
	uint64_t vaddr = 0;
	int64_t off;
	size_t bl, sl;
	int rc = -EINVAL;

	if (!colon || colon == rest || !colon[1]) {
		pm_seterr(err, errlen, "bad uprobe '%s' (expected uprobe:BINARY:SYMBOL)", text);
		return -EINVAL;
	}
	bl = (size_t)(colon - rest);
	sl = strlen(colon + 1);
	if (bl >= sizeof(bin) || sl >= sizeof(sym)) {
		pm_seterr(err, errlen, "uprobe binary or symbol name too long in '%.60s...'", text);
		return -EINVAL;
	}
	memcpy(bin, rest, bl);
	bin[bl] = 0;
	memcpy(sym, colon + 1, sl + 1);
	if (sl > 7 && !strcmp(sym + sl - 7, "%return")) {
		pm_seterr(err, errlen, "cannot probe '%s': %s", text, retprobe_why);
		return -EINVAL;
	}
	real = strchr(bin, '/') ? realpath(bin, NULL) : pm_target_resolve(bin);
	if (!real) {
		pm_seterr(err, errlen, "cannot probe '%s': binary '%s': %s", text, bin,
		       strerror(errno ? errno : ENOENT));
		return -EINVAL;
	}
	if (strlen(real) >= sizeof(out->path)) {
		pm_seterr(err, errlen, "cannot probe '%s': path too long", text);
		goto out;
	}
	e = pm_elf_open(real);
	if (!e) {
		pm_seterr(err, errlen, "cannot probe '%s': %s: %s", text, real,
		       errno == ENOEXEC ? "not an ELF file" : strerror(errno));
		goto out;
	}
	if (pm_go_open(&go, e) == 0) {
		size_t n = pm_go_nfuncs(go);
		long hit = -1;

		generic_key(sym, key, sizeof(key));
		for (size_t i = 0; i < n && i < 2000000 && hit < 0; i++) {
			const char *f = pm_go_func_name(go, (long)i);

			if (f && !strcmp(f, sym))
				hit = (long)i;
		}
		for (size_t i = 0; i < n && i < 2000000 && hit < 0; i++) {
			const char *f = pm_go_func_name(go, (long)i);

			if (!f || !strchr(f, '['))
				continue;
			generic_key(f, fkey, sizeof(fkey));
			if (!strcmp(fkey, key))
				hit = (long)i;
		}
		if (hit >= 0)
			vaddr = pm_go_func_entry(go, hit);
		if (vaddr && pm_elf_machine(e) == EM_X86_64)
			vaddr += go_stack_check_len(pm_elf_vaddr_bytes(e, vaddr, 32));
	} else {
		go = NULL;
	}
	if (!vaddr)
		vaddr = pm_elf_symbol_addr(e, sym);
	if (!vaddr) {
		sym_unknown(bin, sym, go, err, errlen);
		goto out;
	}
	off = vaddr_to_offset(e, vaddr);
	if (off < 0) {
		pm_seterr(err, errlen, "cannot probe '%s': address 0x%llx of '%s' is not in the file",
		       text, (unsigned long long)vaddr, sym);
		goto out;
	}
	snprintf(out->path, sizeof(out->path), "%s", real);
	snprintf(out->symbol, sizeof(out->symbol), "%s", sym);
	snprintf(out->name, sizeof(out->name), "uprobe:%.56s", sym);
	out->config2 = (uint64_t)off;
	rc = 0;
out:
	pm_go_free(go);
	pm_elf_free(e);
	free(real);
	return rc;
}

/* The uprobe PMU's type from sysfs.  0 or -EINVAL with the message. */
static int uprobe_type(const char *text, uint32_t *type, char *err, size_t errlen)
{
	char path[4200];
	uint64_t v;

	snprintf(path, sizeof(path), "%s/uprobe/type", pm_evt_sysfs());
	if (read_u64_file(path, &v) || v > UINT32_MAX) {
		pm_seterr(err, errlen,
		       "cannot probe '%s': this kernel has no uprobe PMU (%s; needs "
		       "CONFIG_UPROBE_EVENTS, Linux 4.17+)",
		       text, path);
		return -EINVAL;
	}
	*type = (uint32_t)v;
	return 0;
}

/* ---- the whole spec ---- */

/* A named event without terms: generic, cache, raw or tracepoint.  Fills type/config/name/kind. */
static int parse_named(const char *name, const char *text, struct pm_evt_spec *out, char *err,
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
		rc = parse_tracepoint(name, &config, err, errlen);
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

		suggest_init(&sg, name);
		suggest_builtin(&sg);
		if (sg.n)
			pm_seterr(err, errlen, "unknown event '%s' (did you mean %s?)", name,
			       suggest_list(&sg, list, sizeof(list)));
		else
			pm_seterr(err, errlen,
			       "unknown event '%s'; run 'pmuprof list' to see the events here",
			       name);
		(void)text;
	}
	return -EINVAL;
}

/* Is @name (len bytes) a PMU directory in sysfs? */
static bool is_pmu(const char *name, size_t len)
{
	char path[4400];
	struct stat st;

	if (!safe_component(name, len))
		return false;
	snprintf(path, sizeof(path), "%s/%.*s/type", pm_evt_sysfs(), (int)len, name);
	return stat(path, &st) == 0;
}

/* The name of a CPU's core PMU in sysfs (x86, hybrid x86, arm64). */
static bool core_pmu_name(const char *name)
{
	return !strcmp(name, "cpu") || !strcmp(name, "cpu_core") || !strcmp(name, "cpu_atom") ||
	       !strncmp(name, "armv8_pmuv3", 11);
}

static int parse_spec(const char *text, struct pm_evt_spec *out, char *err, size_t errlen)
{
	const char *slash = strchr(text, '/'), *modstr = NULL;
	char name[NAME_MAX_LEN + 1];
	struct terms_ctx tc;
	struct mods md;
	size_t nlen;
	int rc;

	memset(&tc, 0, sizeof(tc));
	tc.text = text;
	if (!strncmp(text, "uprobe:", 7)) {
		rc = uprobe_type(text, &out->type, err, errlen);
		if (!rc)
			rc = parse_uprobe(text, text + 7, out, err, errlen);
		if (rc)
			return rc;
		out->kind = PM_EVT_UPROBE;
		out->default_period = 1;
		out->exclude_kernel = true;
		goto values;
	}
	if (!strncmp(text, "uretprobe:", 10)) {
		pm_seterr(err, errlen, "cannot probe '%s': %s", text, retprobe_why);
		return -EINVAL;
	}
	if (slash) {
		/* NAME/terms/[mods] */
		const char *last = strrchr(text, '/');
		char terms[512];
		size_t tl;

		nlen = (size_t)(slash - text);
		if (last == slash) {
			pm_seterr(err, errlen, "missing closing '/' in '%s' (expected NAME/terms/)",
			       text);
			return -EINVAL;
		}
		tl = (size_t)(last - slash - 1);
		if (tl >= sizeof(terms)) {
			pm_seterr(err, errlen, "terms too long in '%.40s...'", text);
			return -EINVAL;
		}
		memcpy(terms, slash + 1, tl);
		terms[tl] = 0;
		if (last[1])
			modstr = last[1] == ':' ? last + 2 : last + 1;
		if (!nlen) {
			pm_seterr(err, errlen, "empty event name in '%s'", text);
			return -EINVAL;
		}
		if (nlen > NAME_MAX_LEN) {
			pm_seterr(err, errlen, "event name too long: '%.*s...'", 32, text);
			return -EINVAL;
		}
		memcpy(name, text, nlen);
		name[nlen] = 0;
		if (!memchr(name, ':', nlen) && is_pmu(name, nlen)) {
			char path[4400];
			uint64_t type;

			if (!strcmp(name, "uprobe") || !strcmp(name, "kprobe")) {
				pm_seterr(err, errlen, "'%s': use uprobe:BINARY:SYMBOL for uprobes",
				       text);
				return -EINVAL;
			}
			snprintf(path, sizeof(path), "%s/%s/type", pm_evt_sysfs(), name);
			if (read_u64_file(path, &type) || type > UINT32_MAX) {
				pm_seterr(err, errlen, "cannot read the type of PMU '%s' (%s)", name,
				       path);
				return -EINVAL;
			}
			tc.pmu = name;
			rc = parse_terms(&tc, terms, err, errlen);
			if (rc)
				return rc;
			out->type = (uint32_t)type;
			out->config = tc.cfg[0];
			out->config1 = tc.cfg[1];
			out->config2 = tc.cfg[2];
			out->kind = PM_EVT_PMU;
			snprintf(out->name, sizeof(out->name), "%.*s", (int)(last + 1 - text),
				 text);
		} else if (core_pmu_name(name)) {
			/*
			 * the CPU's own PMU, absent here (a VM without one): a
			 * hardware event that falls back to cpu-clock as the
			 * others do; its terms cannot be checked without formats,
			 * only their spelling (the text becomes the event's name)
			 */
			for (size_t i = 0; terms[i]; i++)
				if (!isalnum((unsigned char)terms[i]) && !strchr("_=,.-", terms[i])) {
					pm_seterr(err, errlen, "bad term in '%s' (expected PMU/term=value,.../)",
						  text);
					return -EINVAL;
				}
			out->kind = PM_EVT_PMU;
			out->type = PERF_TYPE_HARDWARE;
			out->absent = true;
			snprintf(out->name, sizeof(out->name), "%.*s", (int)(last + 1 - text),
				 text);
		} else {
			rc = parse_named(name, text, out, err, errlen);
			if (rc)
				return rc;
			rc = parse_terms(&tc, terms, err, errlen);
			if (rc)
				return rc;
		}
	} else {
		const char *c1 = strchr(text, ':');

		nlen = c1 ? (size_t)(c1 - text) : strlen(text);
		if (c1) {
			/* "event:mods", or "subsystem:tracepoint[:mods]" */
			char head[NAME_MAX_LEN + 1];
			struct pm_evt_spec tmp;
			const char *c2 = strchr(c1 + 1, ':');

			if (nlen && nlen <= NAME_MAX_LEN) {
				memcpy(head, text, nlen);
				head[nlen] = 0;
			} else {
				head[0] = 0;
			}
			memset(&tmp, 0, sizeof(tmp));
			if ((head[0] && parse_named(head, text, &tmp, NULL, 0) == 0 &&
			     tmp.kind != PM_EVT_TRACEPOINT) ||
			    (!c2 && all_mod_chars(c1 + 1) && !tp_subsystem(text, nlen))) {
				modstr = c1 + 1;
			} else {
				nlen = c2 ? (size_t)(c2 - text) : strlen(text);
				modstr = c2 ? c2 + 1 : NULL;
			}
		}
		if (!nlen) {
			pm_seterr(err, errlen, "empty event name in '%s'", text);
			return -EINVAL;
		}
		if (nlen > NAME_MAX_LEN) {
			pm_seterr(err, errlen, "event name too long: '%.*s...'", 32, text);
			return -EINVAL;
		}
		memcpy(name, text, nlen);
		name[nlen] = 0;
		rc = parse_named(name, text, out, err, errlen);
		if (rc)
			return rc;
	}
	if (parse_mods(modstr, text, &md, err, errlen))
		return -EINVAL;
	out->period = tc.period;
	out->freq = tc.freq;
	if (tc.period && tc.freq) {
		pm_seterr(err, errlen, "'%s': period and freq are exclusive", text);
		return -EINVAL;
	}
	if (tc.freq) {
		long max = pm_evt_max_sample_rate();

		if (max > 0 && tc.freq > (uint64_t)max) {
			pm_seterr(err, errlen,
			       "frequency %llu in '%s' is above kernel.perf_event_max_sample_rate=%ld",
			       (unsigned long long)tc.freq, text, max);
			return -EINVAL;
		}
	}
	out->hardware = out->kind == PM_EVT_HW || out->kind == PM_EVT_CACHE ||
			out->kind == PM_EVT_RAW ||
			(out->kind == PM_EVT_PMU && out->type != PERF_TYPE_SOFTWARE &&
			 out->type != PERF_TYPE_TRACEPOINT && out->type != PERF_TYPE_BREAKPOINT);
	if (out->kind == PM_EVT_TRACEPOINT ||
	    (out->type == PERF_TYPE_SOFTWARE && (out->config == PERF_COUNT_SW_CONTEXT_SWITCHES ||
						 out->config == PERF_COUNT_SW_CPU_MIGRATIONS))) {
		/*
		 * the event fires in the kernel (the scheduler's regs are the
		 * kernel's): excluding it would drop every sample
		 */
		out->default_period = 1;
		out->exclude_user = md.k && !md.u;
		out->exclude_kernel = md.u && !md.k;
	} else {
		/* No u/k: user only, as perf ends up under the default paranoid level 2. */
		out->exclude_user = md.k && !md.u;
		out->exclude_kernel = !md.k;
	}
	out->precise = md.precise;
values:
	if (out->type == PERF_TYPE_SOFTWARE && (out->config == PERF_COUNT_SW_CPU_CLOCK ||
						out->config == PERF_COUNT_SW_TASK_CLOCK)) {
		snprintf(out->value_type, sizeof(out->value_type), "cpu");
		snprintf(out->value_unit, sizeof(out->value_unit), "nanoseconds");
	} else {
		snprintf(out->value_type, sizeof(out->value_type), "%s", out->name);
		snprintf(out->value_unit, sizeof(out->value_unit), "count");
	}
	return 0;
}

int pm_evt_parse(const char *text, struct pm_evt_spec *out, char *err, size_t errlen)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (!text || !*text) {
		pm_seterr(err, errlen, "empty event name in '%s'", text ? text : "");
		return -EINVAL;
	}
	if (strlen(text) > 8192) {
		pm_seterr(err, errlen, "event name too long: '%.*s...'", 32, text);
		return -EINVAL;
	}
	rc = parse_spec(text, out, err, errlen);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}

#define DEFAULT_FREQ 4000               /* perf record's default -F */
#define DEFAULT_BUFFER_BYTES (512 << 10) /* perf's default data area per buffer */

void pm_evt_attr(const struct pm_evt_spec *spec, const struct pm_evt_sampling *s,
		 struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = spec->type;
	attr->config = spec->config;
	attr->config1 = spec->config1;
	attr->config2 = spec->config2;
	if (spec->kind == PM_EVT_UPROBE && !spec->probe[0])
		attr->config1 = (uint64_t)(uintptr_t)spec->path; /* uprobe_path */
	attr->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			    PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	if (s->callchain)
		attr->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (s->regs_mask) {
		attr->sample_type |= PERF_SAMPLE_REGS_USER;
		attr->sample_regs_user = s->regs_mask;
	}
	if (s->stack_size) {
		attr->sample_type |= PERF_SAMPLE_STACK_USER;
		attr->sample_stack_user = s->stack_size;
	}
	if (spec->freq) {
		/* the event's own term wins over -F/-c */
		attr->freq = 1;
		attr->sample_freq = spec->freq;
	} else if (spec->period) {
		attr->sample_period = spec->period;
	} else if (s->rate_default && spec->default_period) {
		/* tracepoints, uprobes: every hit, as perf does */
		attr->sample_period = spec->default_period;
	} else if (s->freq || !s->period) {
		/* neither set: perf's default frequency */
		attr->freq = 1;
		attr->sample_freq = s->freq ? s->freq : DEFAULT_FREQ;
	} else {
		attr->sample_period = s->period;
	}
	attr->disabled = 1;
	attr->inherit = s->inherit;
	attr->enable_on_exec = s->enable_on_exec;
	attr->exclude_user = spec->exclude_user;
	attr->exclude_kernel = spec->exclude_kernel;
	attr->exclude_hv = 1;
	attr->exclude_callchain_kernel = !s->kernel_callchain;
	attr->exclude_callchain_user = s->no_user_callchain;
	attr->precise_ip = spec->precise & 3;
	attr->sample_id_all = 1;
	if (s->tracking) {
		attr->mmap = 1;
		attr->mmap2 = 1;
		attr->comm = 1;
		attr->comm_exec = 1;
		attr->task = 1;
	}
	attr->watermark = 1;
	attr->wakeup_watermark = DEFAULT_BUFFER_BYTES / 4;
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
}

void pm_evt_count_attr(const struct pm_evt_spec *spec, struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = spec->type;
	attr->config = spec->config;
	attr->config1 = spec->kind == PM_EVT_UPROBE && !spec->probe[0]
				? (uint64_t)(uintptr_t)spec->path
				: spec->config1;
	attr->config2 = spec->config2;
	attr->disabled = 1;
	attr->exclude_user = spec->exclude_user;
	attr->exclude_kernel = spec->exclude_kernel;
	attr->exclude_hv = 1;
}

static const struct {
	const char *name;
	int err;
} errnames[] = {
	{ "EACCES", EACCES }, { "EPERM", EPERM },   { "ENOENT", ENOENT },
	{ "EMFILE", EMFILE }, { "EINVAL", EINVAL }, { "E2BIG", E2BIG },
	{ "EOPNOTSUPP", EOPNOTSUPP }, { "ENODEV", ENODEV }, { "EBUSY", EBUSY },
	{ "ESRCH", ESRCH },   { "ENOSYS", ENOSYS }, { "ENOMEM", ENOMEM },
};

/* Fault injection for the e2e tests: PMUPROF_FAIL_OPEN=EACCES (or a number). */
static int injected_error(void)
{
	const char *v = getenv("PMUPROF_FAIL_OPEN");
	char *end;
	long n;

	if (!v || !*v)
		return 0;
	for (size_t i = 0; i < PM_ARRAY_SIZE(errnames); i++)
		if (!strcmp(v, errnames[i].name))
			return -errnames[i].err;
	n = strtol(v, &end, 10);
	if (!*end && n > 0 && n < 4096)
		return (int)-n;
	return 0;
}

int pm_evt_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd)
{
	int inj = injected_error();
	long fd;

	if (inj)
		return inj;
	fd = syscall(__NR_perf_event_open, attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	return (int)fd;
}

long pm_evt_max_sample_rate(void)
{
	long v;
	int rc = pm_read_long("/proc/sys/kernel/perf_event_max_sample_rate", &v);

	return rc ? rc : v;
}

/*
 * Measured on this project's machine (Linux 6.18 guest, no PMU): opening
 * PERF_TYPE_HARDWARE cycles, PERF_TYPE_HW_CACHE and PERF_TYPE_RAW all fail
 * with ENOENT, counting or sampling.  EOPNOTSUPP and ENODEV are what other
 * kernels/PMUs give (no sampling support, event not on this PMU).  EINVAL
 * is not included: it also means a bad attr (frequency, stack size).
 */
bool pm_evt_err_unsupported(int err)
{
	if (err < 0)
		err = -err;
	return err == ENOENT || err == EOPNOTSUPP || err == ENODEV;
}

/*
 * EACCES/EPERM.  Under paranoid 2 a user-only event on an own task is
 * allowed, so when the level does not explain the refusal say what else
 * might (another user's process, a container's seccomp profile).
 */
static void paranoid_hint(char *buf, size_t len, const char *what,
			  const struct perf_event_attr *attr)
{
	long level;
	bool kernel = attr && !attr->exclude_kernel;

	if (pm_read_long("/proc/sys/kernel/perf_event_paranoid", &level)) {
		snprintf(buf, len,
			 "%s: permission denied (kernel.perf_event_paranoid unreadable); run as "
			 "root or grant CAP_PERFMON",
			 what);
		return;
	}
	snprintf(buf, len,
		 "%s: permission denied (kernel.perf_event_paranoid=%ld); run as root, grant "
		 "CAP_PERFMON, or lower it: sysctl kernel.perf_event_paranoid=%d%s",
		 what, level, level > 1 ? 1 : -1,
		 kernel && level >= 2 ? " (or drop ':k' to profile user space only)"
		 : !kernel && level <= 2 ? " (or the target belongs to another user, or a "
					   "seccomp/container policy blocks perf_event_open)"
					 : "");
}

const char *pm_evt_strerror(int err, const struct pm_evt_spec *spec,
			    const struct perf_event_attr *attr, char *buf, size_t len)
{
	const char *name = spec && spec->name[0] ? spec->name : "event";
	bool hw = spec && spec->hardware;
	char what[96];

	if (!buf || !len)
		return "";
	if (err < 0)
		err = -err;
	snprintf(what, sizeof(what), "cannot open '%s'", name);

	switch (err) {
	case EACCES:
	case EPERM:
		paranoid_hint(buf, len, what, attr);
		break;
	case ENOENT:
	case EOPNOTSUPP:
	case ENODEV:
		if (hw && !(err == EOPNOTSUPP && spec->precise))
			snprintf(buf, len,
				 "%s: the CPU has no PMU counter for '%s' (common in VMs); try -e "
				 "cpu-clock",
				 what, name);
		else if (err == EOPNOTSUPP && spec && spec->precise)
			snprintf(buf, len,
				 "%s: precise sampling (%u 'p') is not supported; use fewer 'p' "
				 "modifiers",
				 what, spec->precise);
		else if (err == EOPNOTSUPP)
			snprintf(buf, len,
				 "%s: the event does not support sampling or the requested "
				 "user/kernel exclusion",
				 what);
		else
			snprintf(buf, len, "%s: the kernel does not know this event (%s)", what,
				 strerror(err));
		break;
	case EINVAL: {
		long max = pm_evt_max_sample_rate();

		if (attr && attr->freq && max > 0 && attr->sample_freq > (uint64_t)max)
			snprintf(buf, len,
				 "%s: frequency %llu Hz is above kernel.perf_event_max_sample_rate=%ld; "
				 "lower -F or raise the sysctl",
				 what, (unsigned long long)attr->sample_freq, max);
		else if (attr && (attr->sample_type & PERF_SAMPLE_STACK_USER) &&
			 (attr->sample_stack_user % 8 || attr->sample_stack_user > 65528))
			snprintf(buf, len,
				 "%s: user stack size %u is invalid (a multiple of 8, at most 65528)",
				 what, attr->sample_stack_user);
		else if (attr && attr->precise_ip)
			snprintf(buf, len,
				 "%s: invalid attributes; precise level %u may be unsupported, use "
				 "fewer 'p' modifiers",
				 what, (unsigned)attr->precise_ip);
		else
			snprintf(buf, len,
				 "%s: the kernel rejected the event attributes (invalid argument); "
				 "check -e, -F/-c and the call-graph options",
				 what);
		break;
	}
	case E2BIG:
		snprintf(buf, len,
			 "%s: this kernel is older than pmuprof's perf_event_attr (size %u)", what,
			 attr ? attr->size : (unsigned)sizeof(*attr));
		break;
	case EMFILE:
		snprintf(buf, len, "%s: too many open files; raise ulimit -n", what);
		break;
	case ENOMEM:
		snprintf(buf, len,
			 "%s: out of memory or locked memory; raise ulimit -l or "
			 "kernel.perf_event_mlock_kb, or use a smaller buffer",
			 what);
		break;
	case EBUSY:
		snprintf(buf, len, "%s: the PMU is in use by another tool", what);
		break;
	case ESRCH:
		snprintf(buf, len, "%s: no such process", what);
		break;
	case ENOSYS:
		snprintf(buf, len,
			 "%s: perf_event_open is unavailable (kernel without CONFIG_PERF_EVENTS, "
			 "a seccomp filter, or no user-stack sampling on this arch)",
			 what);
		break;
	default:
		snprintf(buf, len, "%s: %s", what, strerror(err));
		break;
	}
	return buf;
}

/* ---- several events ---- */

int pm_evt_parse_list(const char *text, struct pm_evt_spec *out, size_t max, size_t *n,
		      char *err, size_t errlen)
{
	const char *p = text ? text : "", *start = p;
	int depth = 0;
	bool terms = false;
	size_t cnt = 0;

	*n = 0;
	for (;; p++) {
		bool probe = !strncmp(start, "uprobe:", 7) || !strncmp(start, "uretprobe:", 10);
		char one[8200];
		size_t len;

		if (*p == '[' || *p == '(')
			depth++;
		else if ((*p == ']' || *p == ')') && depth > 0)
			depth--;
		else if (*p == '/' && !probe)
			terms = !terms; /* PMU/terms/ */
		if (*p && (*p != ',' || depth || terms))
			continue;
		len = (size_t)(p - start);
		if (!len) {
			pm_seterr(err, errlen, "empty event name in '%s'", text ? text : "");
			return -EINVAL;
		}
		if (cnt == max) {
			pm_seterr(err, errlen, "too many events in '%.60s': at most %zu in one recording",
				  text, max);
			return -EINVAL;
		}
		if (len >= sizeof(one)) {
			pm_seterr(err, errlen, "event name too long: '%.32s...'", start);
			return -EINVAL;
		}
		memcpy(one, start, len);
		one[len] = 0;
		if (pm_evt_parse(one, &out[cnt], err, errlen) < 0)
			return -EINVAL;
		for (size_t i = 0; i < cnt; i++)
			if (!strcmp(out[i].name, out[cnt].name)) {
				pm_seterr(err, errlen, "event '%s' given twice in '%.60s'",
					  out[cnt].name, text);
				return -EINVAL;
			}
		cnt++;
		if (!*p)
			break;
		start = p + 1;
	}
	*n = cnt;
	return 0;
}

/* ---- uprobes through tracefs, inherited by new threads ---- */

static int tracefs_write(const char *root, const char *line)
{
	char path[4200];
	size_t len = strlen(line);
	ssize_t w;
	int fd;

	snprintf(path, sizeof(path), "%s/uprobe_events", root);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	w = write(fd, line, len);
	if (w < 0 || (size_t)w != len) {
		int e = w < 0 ? errno : EIO;
		close(fd);
		return -e;
	}
	return close(fd) < 0 ? -errno : 0;
}

/* Remove the probes of groups pmuprof_PID whose pmuprof is gone (killed). */
static void uprobe_sweep(const char *root)
{
	char path[4200], *data, *line, *save = NULL;

	snprintf(path, sizeof(path), "%s/uprobe_events", root);
	if (pm_read_file(path, &data, 1 << 20) < 0)
		return;
	for (line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char cmd[128], pidbuf[32];
		int pid, ev;

		/* "p:pmuprof_PID/pN /path:0x..." */
		if (sscanf(line, "p:pmuprof_%d/p%d", &pid, &ev) != 2 || pid <= 0 || ev < 0)
			continue;
		snprintf(pidbuf, sizeof(pidbuf), "/proc/%d", pid);
		if (pid == getpid() || access(pidbuf, F_OK) == 0)
			continue;
		snprintf(cmd, sizeof(cmd), "-:pmuprof_%d/p%d\n", pid, ev);
		tracefs_write(root, cmd);
	}
	free(data);
}

int pm_evt_uprobe_define(struct pm_evt_spec *spec, unsigned idx, char *err, size_t errlen)
{
	const char *root;
	char line[4400], path[4400];
	uint64_t id;
	int rc;

	if (spec->kind != PM_EVT_UPROBE || spec->probe[0])
		return 0;
	root = pm_evt_tracefs();
	if (!root) {
		pm_seterr(err, errlen, "tracefs is not mounted (mount -t tracefs nodev "
				       "/sys/kernel/tracing)");
		return -ENOENT;
	}
	if (strpbrk(spec->path, " \t\n:")) {
		pm_seterr(err, errlen, "its path has a blank or ':', which uprobe_events cannot take");
		return -ENOENT;
	}
	uprobe_sweep(root);
	snprintf(spec->probe, sizeof(spec->probe), "pmuprof_%d/p%u", (int)getpid(), idx);
	snprintf(line, sizeof(line), "p:%s %s:0x%llx\n", spec->probe, spec->path,
		 (unsigned long long)spec->config2);
	rc = tracefs_write(root, line);
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/events/%s/id", root, spec->probe);
		rc = read_u64_file(path, &id);
		if (rc)
			pm_evt_uprobe_undefine(spec);
	}
	if (rc) {
		pm_seterr(err, errlen, "cannot define it in %s/uprobe_events: %s", root,
			  strerror(-rc));
		spec->probe[0] = 0;
		return -ENOENT;
	}
	spec->type = PERF_TYPE_TRACEPOINT;
	spec->config = id;
	spec->config1 = spec->config2 = 0;
	return 0;
}

void pm_evt_uprobe_undefine(struct pm_evt_spec *spec)
{
	const char *root = pm_evt_tracefs();
	char line[128];

	if (!spec->probe[0] || !root)
		return;
	snprintf(line, sizeof(line), "-:%s\n", spec->probe);
	tracefs_write(root, line);
	spec->probe[0] = 0;
}
