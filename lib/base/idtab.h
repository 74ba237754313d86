/*
 * idtab: a uint64 -> int32 open-addressing table (event ids to their thread
 * or event index, threads to their chosen event set, binaries distrusted),
 * hashed with a secret seed.  Key 0 is not stored.  Layer 0.
 *
 * A value type, embedded where it is used (zeroed = empty): its slots are
 * walked in order with pm_idtab_slot(), as the capture writes them.
 */
#ifndef PM_IDTAB_H
#define PM_IDTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pm_idtab {
	uint64_t *keys;
	int32_t *vals;
	size_t size, n;
	uint64_t seed; /* a capture picks the keys in a replay: pm_hash_seed() */
};

void pm_idtab_put(struct pm_idtab *t, uint64_t key, int32_t val);
/* true and *val when present */
bool pm_idtab_get(const struct pm_idtab *t, uint64_t key, int32_t *val);
/* Slot @i of pm_idtab_slots(): true and its key and value when it holds one. */
size_t pm_idtab_slots(const struct pm_idtab *t);
bool pm_idtab_slot(const struct pm_idtab *t, size_t i, uint64_t *key, int32_t *val);
void pm_idtab_free(struct pm_idtab *t);

#endif
