/*
 * Two open-addressing hash tables (linear probing, power-of-two sizes,
 * grown at 50 % load).  Stacks keep their frame ids in one arena, so a
 * sample that repeats a known stack costs one hash and one memcmp.
 */
#include "profile/stacks.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

struct stack {
	uint64_t hash;
	size_t off, n; /* into arena */
	uint32_t pid, tid;
};

struct pm_stacks {
	size_t nvalues;
	struct pm_stack_frame *frames;
	size_t nframes, capframes;
	uint32_t *ftab; /* frame hash table of id+1, 0 = empty */
	size_t ftab_size;
	struct stack *stacks;
	size_t nstacks, capstacks;
	int64_t *values;
	size_t capvalues;
	uint32_t *arena;
	size_t narena, caparena;
	uint32_t *stab; /* stack hash table of index+1 */
	size_t stab_size;
	size_t max_frames, max_stacks, max_arena; /* 0 = unlimited */
	uint32_t over_frame;
	bool in_over; /* adding the overflow stack itself */
	uint64_t frames_over, stacks_over;
	uint64_t seed; /* of both tables' hashes: pm_hash_seed() (the target picks the keys) */
};

struct pm_stacks *pm_stacks_new(size_t nvalues)
{
	struct pm_stacks *s = xcalloc(1, sizeof(*s));

	s->nvalues = nvalues;
	s->seed = pm_hash_seed();
	s->ftab_size = 1024;
	s->ftab = xcalloc(s->ftab_size, sizeof(*s->ftab));
	s->stab_size = 1024;
	s->stab = xcalloc(s->stab_size, sizeof(*s->stab));
	return s;
}

void pm_stacks_free(struct pm_stacks *s)
{
	if (!s)
		return;
	free(s->frames);
	free(s->ftab);
	free(s->stacks);
	free(s->values);
	free(s->arena);
	free(s->stab);
	free(s);
}

static uint64_t frame_hash(const struct pm_stacks *s, const struct pm_stack_frame *f)
{
	return pm_hash_u64(f->addr ^ ((uint64_t)f->map_id << 40) ^ ((uint64_t)f->is_return << 63) ^
			   s->seed);
}

static bool frame_eq(const struct pm_stack_frame *a, const struct pm_stack_frame *b)
{
	return a->addr == b->addr && a->map_id == b->map_id && a->is_return == b->is_return;
}

static void frame_rehash(struct pm_stacks *s)
{
	size_t size = s->ftab_size * 2, i;
	uint32_t *t = xcalloc(size, sizeof(*t));

	for (i = 0; i < s->nframes; i++) {
		size_t h = frame_hash(s, &s->frames[i]) & (size - 1);
		while (t[h])
			h = (h + 1) & (size - 1);
		t[h] = (uint32_t)i + 1;
	}
	free(s->ftab);
	s->ftab = t;
	s->ftab_size = size;
}

uint32_t pm_stacks_frame(struct pm_stacks *s, const struct pm_stack_frame *f)
{
	size_t h = frame_hash(s, f) & (s->ftab_size - 1);

	while (s->ftab[h]) {
		uint32_t id = s->ftab[h] - 1;
		if (frame_eq(&s->frames[id], f))
			return id;
		h = (h + 1) & (s->ftab_size - 1);
	}
	if (s->max_frames && s->nframes >= s->max_frames && s->over_frame < s->nframes) {
		s->frames_over++;
		return s->over_frame;
	}
	PM_GROW(s->frames, s->capframes, s->nframes + 1);
	s->frames[s->nframes] = *f;
	s->ftab[h] = (uint32_t)s->nframes + 1;
	s->nframes++;
	if (s->nframes * 2 > s->ftab_size)
		frame_rehash(s);
	return (uint32_t)s->nframes - 1;
}

size_t pm_stacks_nframes(const struct pm_stacks *s)
{
	return s->nframes;
}

const struct pm_stack_frame *pm_stacks_frame_at(const struct pm_stacks *s, uint32_t id)
{
	return id < s->nframes ? &s->frames[id] : NULL;
}

static void stack_rehash(struct pm_stacks *s)
{
	size_t size = s->stab_size * 2, i;
	uint32_t *t = xcalloc(size, sizeof(*t));

	for (i = 0; i < s->nstacks; i++) {
		size_t h = s->stacks[i].hash & (size - 1);
		while (t[h])
			h = (h + 1) & (size - 1);
		t[h] = (uint32_t)i + 1;
	}
	free(s->stab);
	s->stab = t;
	s->stab_size = size;
}

void pm_stacks_add(struct pm_stacks *s, const uint32_t *frames, size_t n, const int64_t *values)
{
	pm_stacks_add_tagged(s, 0, 0, frames, n, values);
}

void pm_stacks_add_tagged(struct pm_stacks *s, uint32_t pid, uint32_t tid, const uint32_t *frames,
			  size_t n, const int64_t *values)
{
	uint64_t seed = s->seed ^ pm_hash_u64(((uint64_t)pid << 32) | tid);
	uint64_t hash = pm_hash(frames, n * sizeof(*frames), seed);
	size_t h = hash & (s->stab_size - 1), i, idx;

	while (s->stab[h]) {
		const struct stack *st = &s->stacks[s->stab[h] - 1];
		if (st->hash == hash && st->n == n && st->pid == pid && st->tid == tid &&
		    memcmp(s->arena + st->off, frames, n * sizeof(*frames)) == 0) {
			int64_t *v = s->values + (size_t)(s->stab[h] - 1) * s->nvalues;
			/* hostile values (a capture's) saturate instead of overflowing */
			for (i = 0; i < s->nvalues; i++)
				if (__builtin_add_overflow(v[i], values[i], &v[i]))
					v[i] = values[i] < 0 ? INT64_MIN : INT64_MAX;
			return;
		}
		h = (h + 1) & (s->stab_size - 1);
	}
	if (s->max_stacks && !s->in_over && s->over_frame < s->nframes &&
	    (s->nstacks >= s->max_stacks || s->narena + n > s->max_arena)) {
		s->stacks_over++;
		s->in_over = true;
		pm_stacks_add_tagged(s, 0, 0, &s->over_frame, 1, values);
		s->in_over = false;
		return;
	}
	idx = s->nstacks;
	PM_GROW(s->stacks, s->capstacks, idx + 1);
	PM_GROW(s->values, s->capvalues, (idx + 1) * s->nvalues);
	PM_GROW(s->arena, s->caparena, s->narena + n);
	memcpy(s->arena + s->narena, frames, n * sizeof(*frames));
	s->stacks[idx].hash = hash;
	s->stacks[idx].off = s->narena;
	s->stacks[idx].n = n;
	s->stacks[idx].pid = pid;
	s->stacks[idx].tid = tid;
	s->narena += n;
	memcpy(s->values + idx * s->nvalues, values, s->nvalues * sizeof(*values));
	s->stab[h] = (uint32_t)idx + 1;
	s->nstacks++;
	if (s->nstacks * 2 > s->stab_size)
		stack_rehash(s);
}

size_t pm_stacks_count(const struct pm_stacks *s)
{
	return s->nstacks;
}

const uint32_t *pm_stacks_at(const struct pm_stacks *s, size_t i, size_t *n,
			     const int64_t **values)
{
	*n = s->stacks[i].n;
	*values = s->values + i * s->nvalues;
	return s->arena + s->stacks[i].off;
}

void pm_stacks_zero(struct pm_stacks *s)
{
	if (s->nstacks && s->nvalues)
		memset(s->values, 0, s->nstacks * s->nvalues * sizeof(*s->values));
}

bool pm_stacks_is_zero(const struct pm_stacks *s, size_t i)
{
	const int64_t *v = s->values + i * s->nvalues;

	for (size_t k = 0; k < s->nvalues; k++)
		if (v[k])
			return false;
	return true;
}

void pm_stacks_tags(const struct pm_stacks *s, size_t i, uint32_t *pid, uint32_t *tid)
{
	*pid = s->stacks[i].pid;
	*tid = s->stacks[i].tid;
}

void pm_stacks_set_limits(struct pm_stacks *s, size_t max_frames, size_t max_stacks,
			  uint32_t over_frame)
{
	s->max_frames = max_frames;
	s->max_stacks = max_stacks;
	s->max_arena = max_stacks > SIZE_MAX / 64 ? SIZE_MAX : max_stacks * 64;
	s->over_frame = over_frame;
}

uint64_t pm_stacks_frames_over(const struct pm_stacks *s)
{
	return s->frames_over;
}

uint64_t pm_stacks_stacks_over(const struct pm_stacks *s)
{
	return s->stacks_over;
}
