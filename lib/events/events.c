/*
 * events: an event spec as perf spells it -> struct pm_evt_spec: the forms
 * (NAME[:MODS], SUBSYS:NAME, PMU/terms/, uprobe:BINARY:SYMBOL), modifiers
 * and terms, several events.  Names, files, uprobe symbols and opening are
 * in evnames.c, evfiles.c, evuprobe.c and evopen.c.
 */
#include "events/events.h"

#include "events/evfiles.h"
#include "events/evnames.h"
#include "events/evuprobe.h"
#include "base/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
	if (!pm_evt_safe_component(key, strlen(key))) {
		pm_seterr(err, errlen, "bad term name '%s' in '%s'", key, c->text);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "%s/%s/format/%s", pm_evt_sysfs(), c->pmu, key);
	if (pm_evt_read_line(path, fmt, sizeof(fmt)) == 0) {
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
	if (!eq && c->depth == 0 && pm_evt_read_line(path, fmt, sizeof(fmt)) == 0) {
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

		pm_evt_suggest_init(&sg, key);
		for (int pass = 0; pass < 2; pass++) {
			snprintf(dir, sizeof(dir), "%s/%s/%s", pm_evt_sysfs(), c->pmu,
				 pass ? "events" : "format");
			d = opendir(dir);
			for (int n = 0; d && n < 10000 && (de = readdir(d)); n++)
				if (de->d_name[0] != '.')
					pm_evt_suggest_add(&sg, de->d_name);
			if (d)
				closedir(d);
		}
		if (sg.n)
			pm_seterr(err, errlen, "unknown term '%s' for PMU '%s' in '%s' (did you mean %s?)",
			       key, c->pmu, c->text, pm_evt_suggest_list(&sg, list, sizeof(list)));
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

/* ---- the whole spec ---- */

/* The name of a CPU's core PMU in sysfs (x86, hybrid x86, arm64). */
static bool core_pmu_name(const char *name)
{
	return !strcmp(name, "cpu") || !strcmp(name, "cpu_core") || !strcmp(name, "cpu_atom") ||
	       !strncmp(name, "armv8_pmuv3", 11);
}

bool pm_evt_is_clock(const struct pm_evt_spec *spec)
{
	return spec->type == PERF_TYPE_SOFTWARE && (spec->config == PERF_COUNT_SW_CPU_CLOCK ||
						    spec->config == PERF_COUNT_SW_TASK_CLOCK);
}

/*
 * The sample type of a clock: Go's "cpu" where it counts user and kernel
 * time as Go's profiler does, else says which part it counts.
 */
static const char *clock_type(const struct pm_evt_spec *spec)
{
	return spec->exclude_kernel ? "user_cpu" : spec->exclude_user ? "kernel_cpu" : "cpu";
}

void pm_evt_user_only(struct pm_evt_spec *spec)
{
	spec->exclude_kernel = true;
	if (pm_evt_is_clock(spec))
		snprintf(spec->value_type, sizeof(spec->value_type), "%s", clock_type(spec));
}

void pm_evt_every_hit(struct pm_evt_spec *spec, const char *type, const char *unit)
{
	spec->period = 1;
	spec->freq = 0;
	if (type)
		snprintf(spec->value_type, sizeof(spec->value_type), "%s", type);
	if (unit)
		snprintf(spec->value_unit, sizeof(spec->value_unit), "%s", unit);
}

/*
 * The name of @text's event, its first @nlen bytes, into @name.  0, or
 * -EINVAL with the message (empty, or too long for a name).
 */
static int copy_name(const char *text, size_t nlen, char name[NAME_MAX_LEN + 1], char *err,
		     size_t errlen)
{
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
	return 0;
}

/* The value type and unit of a parsed event: the clocks' are Go's, the others' a count. */
static void set_values(struct pm_evt_spec *out)
{
	if (pm_evt_is_clock(out)) {
		snprintf(out->value_type, sizeof(out->value_type), "%s", clock_type(out));
		snprintf(out->value_unit, sizeof(out->value_unit), "nanoseconds");
	} else {
		snprintf(out->value_type, sizeof(out->value_type), "%s", out->name);
		snprintf(out->value_unit, sizeof(out->value_unit), "count");
	}
}

/* uprobe:BINARY:SYMBOL: user mode only, every hit; no modifiers or terms. */
static int parse_uprobe_spec(const char *text, struct pm_evt_spec *out, char *err, size_t errlen)
{
	int rc = pm_evt_uprobe_type(text, &out->type, err, errlen);

	if (!rc)
		rc = pm_evt_parse_uprobe(text, text + 7, out, err, errlen);
	if (rc)
		return rc;
	out->kind = PM_EVT_UPROBE;
	out->default_period = 1;
	out->exclude_kernel = true;
	set_values(out);
	return 0;
}

/*
 * PMU/terms/ for a PMU in sysfs (@name, its terms @terms): the type from
 * sysfs, the terms through its formats; @text up to its closing '/'
 * (@last) is the event's name.
 */
static int parse_sysfs_pmu(const char *text, const char *last, const char *name, const char *terms,
			   struct terms_ctx *tc, struct pm_evt_spec *out, char *err, size_t errlen)
{
	char path[4400];
	uint64_t type;
	int rc;

	if (!strcmp(name, "uprobe") || !strcmp(name, "kprobe")) {
		pm_seterr(err, errlen, "'%s': use uprobe:BINARY:SYMBOL for uprobes", text);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "%s/%s/type", pm_evt_sysfs(), name);
	if (pm_evt_read_u64_file(path, &type) || type > UINT32_MAX) {
		pm_seterr(err, errlen, "cannot read the type of PMU '%s' (%s)", name, path);
		return -EINVAL;
	}
	tc->pmu = name;
	rc = parse_terms(tc, terms, err, errlen);
	tc->pmu = NULL; /* @name is the caller's, on its stack: no pointer to it outlives it */
	if (rc)
		return rc;
	out->type = (uint32_t)type;
	out->config = tc->cfg[0];
	out->config1 = tc->cfg[1];
	out->config2 = tc->cfg[2];
	out->kind = PM_EVT_PMU;
	snprintf(out->name, sizeof(out->name), "%.*s", (int)(last + 1 - text), text);
	return 0;
}

/*
 * The CPU's own PMU, absent here (a VM without one): a hardware event that
 * falls back to cpu-clock as the others do; its terms cannot be checked
 * without formats, only their spelling (the text becomes the event's name).
 */
static int parse_absent_core_pmu(const char *text, const char *last, const char *terms,
				 struct pm_evt_spec *out, char *err, size_t errlen)
{
	for (size_t i = 0; terms[i]; i++)
		if (!isalnum((unsigned char)terms[i]) && !strchr("_=,.-", terms[i])) {
			pm_seterr(err, errlen, "bad term in '%s' (expected PMU/term=value,.../)",
				  text);
			return -EINVAL;
		}
	out->kind = PM_EVT_PMU;
	out->type = PERF_TYPE_HARDWARE;
	out->absent = true;
	snprintf(out->name, sizeof(out->name), "%.*s", (int)(last + 1 - text), text);
	return 0;
}

/*
 * NAME/terms/[mods], @slash its first '/': a PMU of sysfs, the CPU's own
 * PMU where it is absent, or a named event with per-event terms (period,
 * freq).  Sets *@modstr to the modifiers, if any.
 */
static int parse_slash_form(const char *text, const char *slash, struct terms_ctx *tc,
			    struct pm_evt_spec *out, const char **modstr, char *err, size_t errlen)
{
	const char *last = strrchr(text, '/');
	char name[NAME_MAX_LEN + 1], terms[512];
	size_t nlen = (size_t)(slash - text), tl;
	int rc;

	if (last == slash) {
		pm_seterr(err, errlen, "missing closing '/' in '%s' (expected NAME/terms/)", text);
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
		*modstr = last[1] == ':' ? last + 2 : last + 1;
	rc = copy_name(text, nlen, name, err, errlen);
	if (rc)
		return rc;
	if (!memchr(name, ':', nlen) && pm_evt_is_pmu(name, nlen))
		return parse_sysfs_pmu(text, last, name, terms, tc, out, err, errlen);
	if (core_pmu_name(name))
		return parse_absent_core_pmu(text, last, terms, out, err, errlen);
	rc = pm_evt_parse_named(name, text, out, err, errlen);
	if (rc)
		return rc;
	return parse_terms(tc, terms, err, errlen);
}

/*
 * NAME[:MODS] or SUBSYS:NAME[:MODS]: the first ':' ends the modifiers'
 * event where what comes before it is an event other than a tracepoint,
 * or where only modifier letters follow and no tracing subsystem has that
 * name; else it separates a tracepoint's subsystem from its name.  Sets
 * *@modstr to the modifiers, if any.
 */
static int parse_plain_form(const char *text, struct pm_evt_spec *out, const char **modstr,
			    char *err, size_t errlen)
{
	const char *c1 = strchr(text, ':');
	char name[NAME_MAX_LEN + 1];
	size_t nlen = c1 ? (size_t)(c1 - text) : strlen(text);
	int rc;

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
		if ((head[0] && pm_evt_parse_named(head, text, &tmp, NULL, 0) == 0 &&
		     tmp.kind != PM_EVT_TRACEPOINT) ||
		    (!c2 && all_mod_chars(c1 + 1) && !pm_evt_tp_subsystem(text, nlen))) {
			*modstr = c1 + 1;
		} else {
			nlen = c2 ? (size_t)(c2 - text) : strlen(text);
			*modstr = c2 ? c2 + 1 : NULL;
		}
	}
	rc = copy_name(text, nlen, name, err, errlen);
	if (rc)
		return rc;
	return pm_evt_parse_named(name, text, out, err, errlen);
}

/*
 * What the modifiers @md and the terms' rate @tc make of a parsed event:
 * its period or frequency (checked against the kernel's limit), whether
 * it needs a PMU, and the modes it counts.
 */
static int apply_mods(const char *text, const struct terms_ctx *tc, const struct mods *md,
		      struct pm_evt_spec *out, char *err, size_t errlen)
{
	out->period = tc->period;
	out->freq = tc->freq;
	if (tc->period && tc->freq) {
		pm_seterr(err, errlen, "'%s': period and freq are exclusive", text);
		return -EINVAL;
	}
	if (tc->freq) {
		long max = pm_evt_max_sample_rate();

		if (max > 0 && tc->freq > (uint64_t)max) {
			pm_seterr(err, errlen,
				  "frequency %llu in '%s' is above kernel.perf_event_max_sample_rate=%ld",
				  (unsigned long long)tc->freq, text, max);
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
		out->exclude_user = md->k && !md->u;
		out->exclude_kernel = md->u && !md->k;
	} else {
		/*
		 * No u/k: user and kernel, as perf counts them; where the kernel
		 * refuses its part (perf_event_paranoid >= 2 without CAP_PERFMON)
		 * the recording falls back to user mode with one warning, as perf
		 * does (pm_evt_user_only()).  An explicit :u or :k stays as given.
		 */
		out->ukmods = md->u || md->k;
		out->exclude_user = md->k && !md->u;
		out->exclude_kernel = md->u && !md->k;
	}
	out->precise = md->precise;
	return 0;
}

static int parse_spec(const char *text, struct pm_evt_spec *out, char *err, size_t errlen)
{
	const char *slash = strchr(text, '/'), *modstr = NULL;
	struct terms_ctx tc;
	struct mods md;
	int rc;

	memset(&tc, 0, sizeof(tc));
	tc.text = text;
	if (!strncmp(text, "uprobe:", 7))
		return parse_uprobe_spec(text, out, err, errlen);
	if (!strncmp(text, "uretprobe:", 10)) {
		pm_seterr(err, errlen, "cannot probe '%s': %s", text, pm_evt_retprobe_why);
		return -EINVAL;
	}
	if (slash)
		rc = parse_slash_form(text, slash, &tc, out, &modstr, err, errlen);
	else
		rc = parse_plain_form(text, out, &modstr, err, errlen);
	if (rc)
		return rc;
	if (parse_mods(modstr, text, &md, err, errlen))
		return -EINVAL;
	rc = apply_mods(text, &tc, &md, out, err, errlen);
	if (rc)
		return rc;
	set_values(out);
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
