/*
 * stacks: the aggregator that runs while recording.  Interns unsymbolized
 * frames (mapping, address) into dense frame ids, and stacks of frame ids
 * (leaf first) into dense stack ids with summed values, in O(1) expected
 * time per sample.  Symbolization happens once per distinct frame, after
 * recording, from what is kept here.
 */
#ifndef PM_STACKS_H
#define PM_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PM_STACKS_NO_MAP UINT32_MAX

struct pm_stacks;

struct pm_stack_frame {
	uint32_t map_id;  /* PM_STACKS_NO_MAP when the address is in no mapping */
	bool is_return;   /* a return address: symbolize address - 1 */
	uint64_t addr;    /* runtime address */
	uint64_t vaddr;   /* ELF vaddr in the mapping's binary (addr when no mapping) */
};

struct pm_stacks *pm_stacks_new(size_t nvalues);
void pm_stacks_free(struct pm_stacks *s);

/* Dense id of this frame, 0-based. */
uint32_t pm_stacks_frame(struct pm_stacks *s, const struct pm_stack_frame *f);
size_t pm_stacks_nframes(const struct pm_stacks *s);
const struct pm_stack_frame *pm_stacks_frame_at(const struct pm_stacks *s, uint32_t id);

/* Add @values (nvalues entries) to the stack @frames (leaf first). */
void pm_stacks_add(struct pm_stacks *s, const uint32_t *frames, size_t n, const int64_t *values);
/*
 * The same, keyed on (pid, tid, stack): equal stacks of different threads
 * stay separate entries.  pm_stacks_add() is this with pid = tid = 0.
 */
void pm_stacks_add_tagged(struct pm_stacks *s, uint32_t pid, uint32_t tid, const uint32_t *frames,
			  size_t n, const int64_t *values);

size_t pm_stacks_count(const struct pm_stacks *s);
/*
 * Every stack's values back to 0, the frames and stacks kept (their ids
 * stay valid): an interval's profile built, the next one sums from 0.
 */
void pm_stacks_zero(struct pm_stacks *s);
/* Are stack @i's values all 0 (nothing added since pm_stacks_zero())? */
bool pm_stacks_is_zero(const struct pm_stacks *s, size_t i);
/* Stack @i: its frames (leaf first) and values; borrowed. */
const uint32_t *pm_stacks_at(const struct pm_stacks *s, size_t i, size_t *n,
			     const int64_t **values);
/* The (pid, tid) stack @i was added with. */
void pm_stacks_tags(const struct pm_stacks *s, size_t i, uint32_t *pid, uint32_t *tid);

/*
 * --- added for issue 8: bounded memory whatever the target does ---
 * Once @max_frames distinct frames exist, pm_stacks_frame() returns
 * @over_frame for every new one.  Once @max_stacks distinct stacks exist
 * (or their frame ids fill 64 * @max_stacks arena slots), the values of a
 * stack not seen before go to the one stack {over_frame} tagged (0, 0)
 * instead.  0 = no limit.  Nothing is dropped: every value is still counted.
 */
void pm_stacks_set_limits(struct pm_stacks *s, size_t max_frames, size_t max_stacks,
			  uint32_t over_frame);
uint64_t pm_stacks_frames_over(const struct pm_stacks *s); /* new frames refused */
uint64_t pm_stacks_stacks_over(const struct pm_stacks *s); /* additions folded */

#endif
