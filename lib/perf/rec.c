/*
 * rec: decode PERF_RECORD_* bytes.  Every read goes through a cursor that
 * checks the remaining length first, so a hostile record can at worst be
 * rejected with -EINVAL.  Values are in host byte order, as the kernel
 * writes them.
 */
#include "perf/rec.h"

#include <errno.h>
#include <string.h>

struct cur {
	const uint8_t *b;
	size_t pos, end;
};

static int rd64(struct cur *c, uint64_t *v)
{
	if (c->end - c->pos < 8)
		return -EINVAL;
	memcpy(v, c->b + c->pos, 8);
	c->pos += 8;
	return 0;
}

/* Two u32 packed in one u64 slot ({pid, tid}, {cpu, res}). */
static int rd32x2(struct cur *c, uint32_t *a, uint32_t *b)
{
	if (c->end - c->pos < 8)
		return -EINVAL;
	memcpy(a, c->b + c->pos, 4);
	memcpy(b, c->b + c->pos + 4, 4);
	c->pos += 8;
	return 0;
}

static int skip(struct cur *c, uint64_t n)
{
	if (n > c->end - c->pos)
		return -EINVAL;
	c->pos += (size_t)n;
	return 0;
}

/* A NUL-terminated string starting at the cursor and ending before c->end. */
static int rdstr(struct cur *c, const char **s)
{
	const uint8_t *p = c->b + c->pos;
	const uint8_t *nul;

	if (c->pos >= c->end)
		return -EINVAL;
	nul = memchr(p, 0, c->end - c->pos);
	if (!nul)
		return -EINVAL;
	*s = (const char *)p;
	c->pos = c->end;
	return 0;
}

void pm_rec_layout_from_attr(struct pm_rec_layout *l, const struct perf_event_attr *attr)
{
	memset(l, 0, sizeof(*l));
	l->sample_type = attr->sample_type;
	l->regs_mask = attr->sample_regs_user;
	l->sample_id_all = attr->sample_id_all;
}

int pm_rec_reg_index(uint64_t regs_mask, unsigned reg)
{
	if (reg >= 64 || !((regs_mask >> reg) & 1))
		return -1;
	return __builtin_popcountll(regs_mask & ((1ULL << reg) - 1));
}

/* Sample fields this decoder walks over; anything else may only come after them. */
#define DECODED_BITS                                                                          \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |      \
	 PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |       \
	 PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER | \
	 PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT |            \
	 PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION)

static int decode_sample(struct cur *c, const struct pm_rec_layout *l, struct pm_rec *out)
{
	struct pm_rec_sample *s = &out->sample;
	uint64_t st = l->sample_type, v;

	/*
	 * READ needs read_format, which the layout does not carry; BRANCH_STACK
	 * needs branch_sample_type (hw_idx, counters).  pmuprof requests
	 * neither, so refuse them rather than guess.
	 */
	if (st & (PERF_SAMPLE_READ | PERF_SAMPLE_BRANCH_STACK))
		return -EINVAL;
	s->misc = out->misc;
	if ((st & PERF_SAMPLE_IDENTIFIER) && rd64(c, &s->id))
		return -EINVAL;
	if ((st & PERF_SAMPLE_IP) && rd64(c, &s->ip))
		return -EINVAL;
	if ((st & PERF_SAMPLE_TID) && rd32x2(c, &s->pid, &s->tid))
		return -EINVAL;
	if ((st & PERF_SAMPLE_TIME) && rd64(c, &s->time))
		return -EINVAL;
	if ((st & PERF_SAMPLE_ADDR) && rd64(c, &v))
		return -EINVAL;
	if ((st & PERF_SAMPLE_ID) && rd64(c, &s->id))
		return -EINVAL;
	if ((st & PERF_SAMPLE_STREAM_ID) && rd64(c, &v))
		return -EINVAL;
	if (st & PERF_SAMPLE_CPU) {
		uint32_t res;

		if (rd32x2(c, &s->cpu, &res))
			return -EINVAL;
	}
	if ((st & PERF_SAMPLE_PERIOD) && rd64(c, &s->period))
		return -EINVAL;
	if (st & PERF_SAMPLE_CALLCHAIN) {
		if (rd64(c, &s->nr) || s->nr > (c->end - c->pos) / 8)
			return -EINVAL;
		s->ips = (const uint64_t *)(const void *)(c->b + c->pos);
		c->pos += (size_t)s->nr * 8;
	}
	if (st & PERF_SAMPLE_RAW) {
		/* u32 size, then data; the kernel pads the pair to a multiple of 8 */
		size_t next;

		if (c->end - c->pos < 4)
			return -EINVAL;
		memcpy(&s->raw_size, c->b + c->pos, 4);
		c->pos += 4;
		if (s->raw_size > c->end - c->pos)
			return -EINVAL;
		s->raw = c->b + c->pos;
		next = (c->pos + s->raw_size + 7) & ~(size_t)7;
		if (next > c->end)
			return -EINVAL;
		c->pos = next;
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		if (rd64(c, &s->abi))
			return -EINVAL;
		/* no register words follow when abi is NONE (e.g. a kernel thread) */
		if (s->abi) {
			unsigned n = (unsigned)__builtin_popcountll(l->regs_mask);

			if (n > (c->end - c->pos) / 8)
				return -EINVAL;
			memcpy(s->regs, c->b + c->pos, (size_t)n * 8);
			c->pos += (size_t)n * 8;
			s->nregs = n;
		}
	}
	if (st & PERF_SAMPLE_STACK_USER) {
		if (rd64(c, &s->stack_size))
			return -EINVAL;
		/* data[size] and dyn_size are present only when size != 0 */
		if (s->stack_size) {
			s->stack = c->b + c->pos;
			if (skip(c, s->stack_size))
				return -EINVAL;
			if (rd64(c, &s->dyn_size))
				return -EINVAL;
			if (s->dyn_size > s->stack_size)
				s->dyn_size = s->stack_size;
		}
	}
	if ((st & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT)) && rd64(c, &v))
		return -EINVAL;
	if ((st & PERF_SAMPLE_DATA_SRC) && rd64(c, &v))
		return -EINVAL;
	if ((st & PERF_SAMPLE_TRANSACTION) && rd64(c, &v))
		return -EINVAL;
	/* When we walked every field, the record must end exactly here. */
	if (!(st & ~(uint64_t)DECODED_BITS) && c->pos != c->end)
		return -EINVAL;

	out->sid.pid = s->pid;
	out->sid.tid = s->tid;
	out->sid.time = s->time;
	out->sid.id = s->id;
	out->sid.cpu = s->cpu;
	return 0;
}

/*
 * The sample_id trailer sits at the very end of a non-sample record and its
 * size follows from sample_type alone, so it is read from the end: the
 * variable-length part (a file name) then ends where the trailer begins.
 */
static int decode_trailer(struct cur *c, const struct pm_rec_layout *l, struct pm_rec_id *sid)
{
	uint64_t st = l->sample_type, v;
	size_t n;
	struct cur t;

	if (!l->sample_id_all)
		return 0;
	n = (size_t)__builtin_popcountll(st & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
					      PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
					      PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)) * 8;
	if (n > c->end - c->pos)
		return -EINVAL;
	c->end -= n;
	t.b = c->b;
	t.pos = c->end;
	t.end = c->end + n;
	if ((st & PERF_SAMPLE_TID) && rd32x2(&t, &sid->pid, &sid->tid))
		return -EINVAL;
	if ((st & PERF_SAMPLE_TIME) && rd64(&t, &sid->time))
		return -EINVAL;
	if ((st & PERF_SAMPLE_ID) && rd64(&t, &sid->id))
		return -EINVAL;
	if ((st & PERF_SAMPLE_STREAM_ID) && rd64(&t, &v))
		return -EINVAL;
	if (st & PERF_SAMPLE_CPU) {
		uint32_t res;

		if (rd32x2(&t, &sid->cpu, &res))
			return -EINVAL;
	}
	if ((st & PERF_SAMPLE_IDENTIFIER) && rd64(&t, &sid->id))
		return -EINVAL;
	return 0;
}

static int decode_mmap(struct cur *c, struct pm_rec *out, bool v2)
{
	struct pm_rec_mmap *m = &out->mmap;

	if (rd32x2(c, &m->pid, &m->tid) || rd64(c, &m->addr) || rd64(c, &m->len) ||
	    rd64(c, &m->pgoff))
		return -EINVAL;
	if (v2) {
		if (c->end - c->pos < 24)
			return -EINVAL;
		if (out->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			m->build_id_size = c->b[c->pos];
			if (m->build_id_size > sizeof(m->build_id))
				return -EINVAL;
			memcpy(m->build_id, c->b + c->pos + 4, m->build_id_size);
			c->pos += 24;
		} else if (rd32x2(c, &m->maj, &m->min) || rd64(c, &m->ino) ||
			   rd64(c, &m->ino_generation)) {
			return -EINVAL;
		}
		if (rd32x2(c, &m->prot, &m->flags))
			return -EINVAL;
	}
	return rdstr(c, &m->filename);
}

int pm_rec_decode(const struct perf_event_header *h, const struct pm_rec_layout *l,
		  struct pm_rec *out)
{
	static const struct pm_rec_layout none;
	struct cur c;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!l)
		l = &none;
	out->type = h->type;
	out->misc = h->misc;
	if (h->size < sizeof(*h))
		return -EINVAL;
	c.b = (const uint8_t *)h;
	c.pos = sizeof(*h);
	c.end = h->size;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		return decode_sample(&c, l, out);
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
	case PERF_RECORD_SWITCH:
		break;
	default:
		return 1;
	}

	if (decode_trailer(&c, l, &out->sid))
		return -EINVAL;
	switch (h->type) {
	case PERF_RECORD_MMAP:
		rc = decode_mmap(&c, out, false);
		break;
	case PERF_RECORD_MMAP2:
		rc = decode_mmap(&c, out, true);
		break;
	case PERF_RECORD_COMM:
		out->comm.exec = (h->misc & PERF_RECORD_MISC_COMM_EXEC) != 0;
		rc = rd32x2(&c, &out->comm.pid, &out->comm.tid) || rdstr(&c, &out->comm.comm)
			     ? -EINVAL
			     : 0;
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		rc = rd32x2(&c, &out->task.pid, &out->task.ppid) ||
				     rd32x2(&c, &out->task.tid, &out->task.ptid) ||
				     rd64(&c, &out->task.time)
			     ? -EINVAL
			     : 0;
		break;
	case PERF_RECORD_LOST:
		rc = rd64(&c, &out->lost.id) || rd64(&c, &out->lost.lost) ? -EINVAL : 0;
		break;
	case PERF_RECORD_LOST_SAMPLES:
		rc = rd64(&c, &out->lost.lost) ? -EINVAL : 0;
		break;
	case PERF_RECORD_SWITCH: /* no body: the thread's switch, in or out (misc), in sid */
		rc = 0;
		break;
	default: /* THROTTLE, UNTHROTTLE */
		rc = rd64(&c, &out->throttle.time) || rd64(&c, &out->throttle.id) ||
				     rd64(&c, &out->throttle.stream_id)
			     ? -EINVAL
			     : 0;
		break;
	}
	/* Fixed-size bodies must fill the space before the trailer exactly. */
	if (!rc && c.pos != c.end)
		rc = -EINVAL;
	return rc;
}
