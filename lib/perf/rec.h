/*
 * rec: decode PERF_RECORD_* bytes into typed structs.  Pure: no fds, no
 * files.  Every length is checked against the record's size first.
 */
#ifndef PM_REC_H
#define PM_REC_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PM_REC_MAX_REGS 64

/* What the event's attr asked for; decides the record layout. */
struct pm_rec_layout {
	uint64_t sample_type;
	uint64_t regs_mask;  /* sample_regs_user */
	bool sample_id_all;
};

void pm_rec_layout_from_attr(struct pm_rec_layout *l, const struct perf_event_attr *attr);

struct pm_rec_sample {
	uint16_t misc;
	uint64_t id;          /* PERF_SAMPLE_IDENTIFIER or ID */
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	uint64_t period;
	uint64_t nr;          /* callchain entries, context markers included */
	const uint64_t *ips;  /* points into the record */
	uint64_t abi;         /* PERF_SAMPLE_REGS_ABI_*; 0 = no registers */
	unsigned nregs;
	uint64_t regs[PM_REC_MAX_REGS]; /* in increasing bit order of regs_mask */
	uint64_t stack_size;
	const uint8_t *stack; /* dyn_size valid bytes */
	uint64_t dyn_size;
	uint32_t raw_size;
	const uint8_t *raw;
};

struct pm_rec_id {            /* the sample_id trailer of non-sample records */
	uint32_t pid, tid;
	uint64_t time, id;
	uint32_t cpu;
};

struct pm_rec_mmap {          /* MMAP and MMAP2 */
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t prot, flags;     /* 0 for MMAP */
	const char *filename;     /* NUL-terminated inside the record */
	/* MMAP2 only: one of the two variants of the union, by PERF_RECORD_MISC_MMAP_BUILD_ID */
	uint32_t maj, min;        /* 0 in the build-id variant */
	uint64_t ino, ino_generation;
	uint8_t build_id_size;    /* 0 unless the build-id variant; <= 20 */
	uint8_t build_id[20];
};

struct pm_rec_comm {
	uint32_t pid, tid;
	const char *comm;
	bool exec;                /* PERF_RECORD_MISC_COMM_EXEC */
};

struct pm_rec_task {          /* FORK and EXIT */
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct pm_rec_lost {          /* LOST (id, lost) and LOST_SAMPLES (lost) */
	uint64_t id, lost;
};

struct pm_rec_throttle {      /* THROTTLE and UNTHROTTLE */
	uint64_t time, id, stream_id;
};

/*
 * SWITCH (attr.context_switch, a per-thread event): no body; the thread in
 * sid, out when misc has PERF_RECORD_MISC_SWITCH_OUT (and _PREEMPT when it
 * stayed runnable), else in.
 */
struct pm_rec {
	uint32_t type;            /* PERF_RECORD_* */
	uint16_t misc;
	struct pm_rec_id sid;     /* valid when the layout has sample_id_all (non-samples) */
	union {
		struct pm_rec_sample sample;
		struct pm_rec_mmap mmap;
		struct pm_rec_comm comm;
		struct pm_rec_task task;
		struct pm_rec_lost lost;
		struct pm_rec_throttle throttle;
	};
};

/*
 * Decode the record at @h (8-byte aligned, h->size bytes valid).
 * 0: decoded; 1: a type this decoder does not know (out->type set, nothing
 * else); -EINVAL: malformed (a length that does not fit, a string without NUL).
 */
int pm_rec_decode(const struct perf_event_header *h, const struct pm_rec_layout *l,
		  struct pm_rec *out);

/* Index of x86_64 perf register @reg (PERF_REG_X86_*) inside s->regs, -1 if not sampled. */
int pm_rec_reg_index(uint64_t regs_mask, unsigned reg);

#endif
