/* idtab: a uint64 -> int32 open-addressing table (idtab.h). */
#include "base/idtab.h"

#include <stdlib.h>

#include "base/util.h"

static void idtab_grow(struct pm_idtab *t)
{
	struct pm_idtab o = *t;
	size_t i;

	t->size = o.size ? o.size * 2 : 1024;
	t->seed = o.size ? o.seed : pm_hash_seed();
	t->keys = xcalloc(t->size, sizeof(*t->keys));
	t->vals = xcalloc(t->size, sizeof(*t->vals));
	t->n = 0;
	for (i = 0; i < o.size; i++)
		if (o.keys[i])
			pm_idtab_put(t, o.keys[i], o.vals[i]);
	free(o.keys);
	free(o.vals);
}

void pm_idtab_put(struct pm_idtab *t, uint64_t key, int32_t val)
{
	size_t h;

	if (!key)
		return;
	if ((t->n + 1) * 2 > t->size)
		idtab_grow(t);
	h = pm_hash_u64(key ^ t->seed) & (t->size - 1);
	while (t->keys[h] && t->keys[h] != key)
		h = (h + 1) & (t->size - 1);
	if (!t->keys[h])
		t->n++;
	t->keys[h] = key;
	t->vals[h] = val;
}

bool pm_idtab_get(const struct pm_idtab *t, uint64_t key, int32_t *val)
{
	size_t h;

	if (!key || !t->size)
		return false;
	h = pm_hash_u64(key ^ t->seed) & (t->size - 1);
	while (t->keys[h]) {
		if (t->keys[h] == key) {
			*val = t->vals[h];
			return true;
		}
		h = (h + 1) & (t->size - 1);
	}
	return false;
}

size_t pm_idtab_slots(const struct pm_idtab *t)
{
	return t->size;
}

bool pm_idtab_slot(const struct pm_idtab *t, size_t i, uint64_t *key, int32_t *val)
{
	if (i >= t->size || !t->keys[i])
		return false;
	*key = t->keys[i];
	*val = t->vals[i];
	return true;
}

void pm_idtab_free(struct pm_idtab *t)
{
	free(t->keys);
	free(t->vals);
}
