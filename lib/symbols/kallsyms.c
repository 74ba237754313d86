/*
 * kallsyms: "ADDR TYPE NAME [MODULE]" lines, text types (t T w W) kept,
 * sorted by address; a lookup is a binary search for the last symbol at or
 * below the address.  There are no sizes, so a symbol is taken to run to
 * the next one, and the last one at most 1 MiB.
 */
#include "symbols/kallsyms.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define LAST_MAX (1u << 20)

struct ksym {
	uint64_t addr;
	char *name;
};

struct pm_ksyms {
	struct ksym *syms;
	size_t n;
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int pm_ksyms_load(struct pm_ksyms **out, const char *path)
{
	FILE *f = fopen(path ? path : "/proc/kallsyms", "re");
	struct pm_ksyms *k;
	char *line = NULL;
	size_t cap = 0, scap = 0, zero = 0, total = 0;

	*out = NULL;
	if (!f)
		return -errno;
	k = xcalloc(1, sizeof(*k));
	while (getline(&line, &cap, f) > 0) {
		char *end, *name, *tab;
		unsigned long long a = strtoull(line, &end, 16);
		char type;

		if (end == line || *end != ' ' || !end[1] || end[2] != ' ')
			continue;
		type = end[1];
		name = end + 3;
		name[strcspn(name, "\t\n ")] = '\0';
		tab = name;
		if (!*tab)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		total++;
		if (a == 0) {
			zero++;
			continue;
		}
		PM_GROW(k->syms, scap, k->n + 1);
		k->syms[k->n].addr = a;
		k->syms[k->n].name = xstrdup(name);
		k->n++;
	}
	free(line);
	fclose(f);
	if (k->n == 0) {
		pm_ksyms_free(k);
		return total && zero == total ? -EPERM : -ENOENT;
	}
	qsort(k->syms, k->n, sizeof(*k->syms), cmp_ksym);
	*out = k;
	return 0;
}

void pm_ksyms_free(struct pm_ksyms *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->n; i++)
		free(k->syms[i].name);
	free(k->syms);
	free(k);
}

const char *pm_ksyms_find(const struct pm_ksyms *k, uint64_t addr, uint64_t *start)
{
	size_t lo;

	if (!k || !k->n || addr < k->syms[0].addr)
		return NULL;
	/* the last symbol at or below addr */
	lo = pm_count_le_u64(k->syms, k->n, sizeof(*k->syms), offsetof(struct ksym, addr), addr) - 1;
	if (lo == k->n - 1 && addr - k->syms[lo].addr >= LAST_MAX)
		return NULL;
	if (start)
		*start = k->syms[lo].addr;
	return k->syms[lo].name;
}

void pm_ksyms_range(const struct pm_ksyms *k, uint64_t *lo, uint64_t *hi)
{
	*lo = k && k->n ? k->syms[0].addr : 0;
	*hi = k && k->n ? k->syms[k->n - 1].addr + LAST_MAX : 0;
}
