/*
 * Unit tests for lib/ring: the head/tail protocol over fake memory
 * (pm_ring_open_mem), and one live run on a cpu-clock event of this process.
 */
#include "perf/ring.h"

#include "events/events.h"
#include "perf/rec.h"
#include "base/util.h"

#include "test.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define CTL_SIZE 4096
#define DATA_SIZE 256

/* A fake perf mmap: control page, then DATA_SIZE bytes of data. */
static union {
	uint64_t w[(CTL_SIZE + DATA_SIZE) / 8];
	struct perf_event_mmap_page ctl;
} M;

static uint8_t *data(void)
{
	return (uint8_t *)M.w + CTL_SIZE;
}

static void fake_reset(uint64_t start)
{
	memset(&M, 0, sizeof(M));
	M.ctl.data_offset = CTL_SIZE;
	M.ctl.data_size = DATA_SIZE;
	M.ctl.data_head = start;
	M.ctl.data_tail = start;
}

/* Write a record of @size bytes at the head, as the kernel would: wrapping, then publish. */
static void fake_put(uint32_t type, uint16_t size, uint8_t fill)
{
	uint8_t rec[DATA_SIZE];
	struct perf_event_header h = { type, 0, size };
	uint64_t head = M.ctl.data_head;

	memset(rec, fill, sizeof(rec));
	memcpy(rec, &h, sizeof(h));
	for (uint16_t i = 0; i < size; i++)
		data()[(head + i) % DATA_SIZE] = rec[i];
	__atomic_store_n(&M.ctl.data_head, head + size, __ATOMIC_RELEASE);
}

static int check_rec(const struct perf_event_header *h, uint32_t type, uint16_t size, uint8_t fill)
{
	CHECK(h != NULL);
	CHECK_INT(((uintptr_t)h) & 7, 0);
	CHECK_INT(h->type, type);
	CHECK_INT(h->size, size);
	for (uint16_t i = sizeof(*h); i < size; i++)
		CHECK_INT(((const uint8_t *)h)[i], fill);
	return PM_PASS;
}

static int t_empty(void)
{
	struct pm_ring *r;

	fake_reset(0);
	CHECK_INT(pm_ring_open_mem(&r, M.w, CTL_SIZE, DATA_SIZE), 0);
	CHECK(pm_ring_next(r) == NULL);
	CHECK_INT(pm_ring_pending(r), 0);
	CHECK_INT(pm_ring_bad(r), 0);
	CHECK_INT(pm_ring_fd(r), -1);
	pm_ring_free(r);
	pm_ring_free(NULL);
	return PM_PASS;
}

static int t_sequence(void)
{
	struct pm_ring *r;

	fake_reset(0);
	CHECK_INT(pm_ring_open_mem(&r, M.w, CTL_SIZE, DATA_SIZE), 0);
	fake_put(9, 16, 0x11);
	fake_put(3, 40, 0x22);
	fake_put(1, 8, 0x33);
	CHECK_INT(pm_ring_pending(r), 64);
	if (check_rec(pm_ring_next(r), 9, 16, 0x11) || check_rec(pm_ring_next(r), 3, 40, 0x22))
		return PM_FAIL;
	/* not consumed yet: the kernel still sees the old tail */
	CHECK_INT(M.ctl.data_tail, 0);
	pm_ring_consume(r);
	CHECK_INT(M.ctl.data_tail, 56);
	if (check_rec(pm_ring_next(r), 1, 8, 0x33))
		return PM_FAIL;
	CHECK(pm_ring_next(r) == NULL);
	pm_ring_consume(r);
	CHECK_INT(M.ctl.data_tail, 64);
	CHECK_INT(pm_ring_pending(r), 0);
	CHECK_INT(pm_ring_bad(r), 0);
	pm_ring_free(r);
	return PM_PASS;
}

static int t_wrap(void)
{
	struct pm_ring *r;
	const struct perf_event_header *h;

	/* start near the end: the second record straddles the end of the data area */
	fake_reset(3 * DATA_SIZE + 200);
	CHECK_INT(pm_ring_open_mem(&r, M.w, CTL_SIZE, DATA_SIZE), 0);
	fake_put(9, 32, 0x44);  /* 200..232 */
	fake_put(9, 80, 0x55);  /* 232..312 -> wraps to 56 */
	fake_put(9, 24, 0x66);  /* 56..80 */
	h = pm_ring_next(r);
	if (check_rec(h, 9, 32, 0x44))
		return PM_FAIL;
	CHECK((const uint8_t *)h == data() + 200); /* contiguous: no copy */
	h = pm_ring_next(r);
	if (check_rec(h, 9, 80, 0x55))
		return PM_FAIL;
	CHECK((const uint8_t *)h < data() || (const uint8_t *)h >= data() + DATA_SIZE);
	h = pm_ring_next(r);
	if (check_rec(h, 9, 24, 0x66))
		return PM_FAIL;
	CHECK((const uint8_t *)h == data() + 56);
	CHECK(pm_ring_next(r) == NULL);
	pm_ring_consume(r);
	CHECK_INT(M.ctl.data_tail, 3 * DATA_SIZE + 336);
	CHECK_INT(pm_ring_bad(r), 0);
	pm_ring_free(r);

	/* a record that ends exactly at the end is not copied */
	fake_reset(DATA_SIZE - 48);
	CHECK_INT(pm_ring_open_mem(&r, M.w, CTL_SIZE, DATA_SIZE), 0);
	fake_put(9, 48, 0x77);
	h = pm_ring_next(r);
	if (check_rec(h, 9, 48, 0x77))
		return PM_FAIL;
	CHECK((const uint8_t *)h == data() + DATA_SIZE - 48);
	pm_ring_free(r);
	return PM_PASS;
}

static int t_corrupt(void)
{
	struct pm_ring *r;

	/* size below a header */
	fake_reset(0);
	CHECK_INT(pm_ring_open_mem(&r, M.w, CTL_SIZE, DATA_SIZE), 0);
	fake_put(9, 16, 0x11);
	fake_put(9, 4, 0x22);
	fake_put(9, 16, 0x33); /* lost with the corrupt one: nothing after it is trusted */
	if (check_rec(pm_ring_next(r), 9, 16, 0x11))
		return PM_FAIL;
	CHECK(pm_ring_next(r) == NULL);
	CHECK_INT(pm_ring_bad(r), 1);
	CHECK_INT(pm_ring_pending(r), 0);
	pm_ring_consume(r);
	CHECK_INT(M.ctl.data_tail, 36);
	/* the reader resumes with what comes next (back on 8-byte alignment via a copy) */
	fake_put(2, 24, 0x44);
	if (check_rec(pm_ring_next(r), 2, 24, 0x44))
		return PM_FAIL;
	CHECK(pm_ring_next(r) == NULL);
	CHECK_INT(pm_ring_bad(r), 1);
	pm_ring_free(r);

	/* size 0 (an unwritten area) */
	fake_reset(0);
	CHECK_INT(pm_ring_open_mem(&r, M.w, CTL_SIZE, DATA_SIZE), 0);
	fake_put(9, 0, 0);
	M.ctl.data_head = 64;
	CHECK(pm_ring_next(r) == NULL);
	CHECK_INT(pm_ring_bad(r), 1);
	pm_ring_free(r);

	/* size beyond what the head published */
	fake_reset(0);
	CHECK_INT(pm_ring_open_mem(&r, M.w, CTL_SIZE, DATA_SIZE), 0);
	fake_put(9, 64, 0x55);
	M.ctl.data_head = 32;
	CHECK(pm_ring_next(r) == NULL);
	CHECK_INT(pm_ring_bad(r), 1);
	pm_ring_free(r);

	/* head more than a lap ahead, head behind tail, head not covering a header */
	fake_reset(0);
	CHECK_INT(pm_ring_open_mem(&r, M.w, CTL_SIZE, DATA_SIZE), 0);
	M.ctl.data_head = DATA_SIZE + 8;
	CHECK(pm_ring_next(r) == NULL);
	M.ctl.data_head = 0; /* behind the skipped-to tail */
	CHECK(pm_ring_next(r) == NULL);
	CHECK_INT(pm_ring_bad(r), 2);
	M.ctl.data_head = 4;
	CHECK(pm_ring_next(r) == NULL);
	CHECK_INT(pm_ring_bad(r), 3);
	pm_ring_free(r);
	return PM_PASS;
}

static int t_open_mem_layout(void)
{
	struct pm_ring *r;

	fake_reset(0);
	M.ctl.data_size = 200; /* not a power of two */
	CHECK_INT(pm_ring_open_mem(&r, M.w, CTL_SIZE, DATA_SIZE), -EINVAL);
	M.ctl.data_size = 512; /* past the memory */
	CHECK_INT(pm_ring_open_mem(&r, M.w, CTL_SIZE, DATA_SIZE), -EINVAL);
	M.ctl.data_size = DATA_SIZE;
	M.ctl.data_offset = CTL_SIZE + 8;
	CHECK_INT(pm_ring_open_mem(&r, M.w, CTL_SIZE, DATA_SIZE), -EINVAL);
	M.ctl.data_offset = 8; /* inside the control page */
	CHECK_INT(pm_ring_open_mem(&r, M.w, CTL_SIZE, DATA_SIZE), -EINVAL);
	CHECK_INT(pm_ring_open_mem(&r, M.w, 64, DATA_SIZE), -EINVAL); /* page too small */
	CHECK_INT(pm_ring_open_mem(&r, (uint8_t *)M.w + 4, CTL_SIZE, DATA_SIZE - 8), -EINVAL);

	/* an old kernel: data_offset/data_size 0 -> data right after the control page */
	fake_reset(0);
	M.ctl.data_offset = 0;
	M.ctl.data_size = 0;
	CHECK_INT(pm_ring_open_mem(&r, M.w, CTL_SIZE, DATA_SIZE), 0);
	fake_put(9, 16, 0x11);
	if (check_rec(pm_ring_next(r), 9, 16, 0x11))
		return PM_FAIL;
	pm_ring_free(r);
	return PM_PASS;
}

/*
 * A writer that plays the kernel (respects the stored tail, drops when
 * full) against a reader that consumes in random batches, for many laps.
 */
static int t_stress(void)
{
	struct pm_ring *r;
	uint64_t seed = 12345, written = 0, read = 0;
	uint8_t next_fill = 0, want_fill = 0;

	fake_reset(0);
	CHECK_INT(pm_ring_open_mem(&r, M.w, CTL_SIZE, DATA_SIZE), 0);
	for (int round = 0; round < 20000; round++) {
		seed = pm_hash_u64(seed + 1);
		if (seed & 1) {
			uint16_t size = (uint16_t)(8 + 8 * ((seed >> 8) % 12));

			if (M.ctl.data_head + size - M.ctl.data_tail <= DATA_SIZE) {
				fake_put(9, size, next_fill++);
				written++;
			}
		} else {
			unsigned n = (unsigned)((seed >> 8) % 4);
			const struct perf_event_header *h;

			while (n-- && (h = pm_ring_next(r))) {
				CHECK_INT(h->type, 9);
				if (h->size > 8)
					CHECK_INT(((const uint8_t *)h)[h->size - 1], want_fill);
				CHECK_INT(((uintptr_t)h) & 7, 0);
				want_fill++;
				read++;
			}
			pm_ring_consume(r);
		}
	}
	while (pm_ring_next(r))
		read++;
	CHECK_INT(read, written);
	CHECK(written > 1000);
	CHECK(M.ctl.data_head > 50 * DATA_SIZE);
	CHECK_INT(pm_ring_bad(r), 0);
	pm_ring_free(r);
	return PM_PASS;
}

static pid_t my_tid(void)
{
	return (pid_t)gettid();
}

static volatile uint64_t sink;

static unsigned drain(struct pm_ring *r, const struct pm_rec_layout *l, uintptr_t near_sp,
		      int *bad)
{
	static struct pm_rec rec;
	const struct perf_event_header *h;
	int ipx = pm_rec_reg_index(l->regs_mask, PERF_REG_X86_IP);
	int spx = pm_rec_reg_index(l->regs_mask, PERF_REG_X86_SP);
	unsigned n = 0;

	while ((h = pm_ring_next(r))) {
		int rc = pm_rec_decode(h, l, &rec);

		if (rc < 0) {
			fprintf(stderr, "  record type %u size %u does not decode\n", h->type,
				h->size);
			(*bad)++;
			continue;
		}
		if (rec.type != PERF_RECORD_SAMPLE)
			continue;
		n++;
		if (rec.sample.tid != (uint32_t)my_tid() || rec.sample.pid != (uint32_t)getpid() ||
		    rec.sample.abi != PERF_SAMPLE_REGS_ABI_64 || rec.sample.nregs != 3 ||
		    !rec.sample.ip || rec.sample.regs[ipx] != rec.sample.ip ||
		    rec.sample.stack_size != 1024 || !rec.sample.dyn_size ||
		    rec.sample.regs[spx] > near_sp || near_sp - rec.sample.regs[spx] > (1 << 20) ||
		    !rec.sample.period) {
			fprintf(stderr,
				"  bad sample: pid %u tid %u abi %llu nregs %u ip %#llx regip %#llx "
				"sp %#llx (near %#llx) stack %llu/%llu\n",
				rec.sample.pid, rec.sample.tid, (unsigned long long)rec.sample.abi,
				rec.sample.nregs, (unsigned long long)rec.sample.ip,
				(unsigned long long)rec.sample.regs[ipx],
				(unsigned long long)rec.sample.regs[spx],
				(unsigned long long)near_sp,
				(unsigned long long)rec.sample.dyn_size,
				(unsigned long long)rec.sample.stack_size);
			(*bad)++;
		}
	}
	pm_ring_consume(r);
	return n;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int t_live_cpu_clock(void)
{
	struct pm_evt_spec spec;
	struct pm_evt_sampling s = { 0 };
	struct perf_event_attr attr;
	struct pm_rec_layout l;
	struct pm_ring *r;
	char err[256], why[512];
	int fd, rc, bad = 0;
	unsigned samples = 0;
	uint64_t t0, c0, corrupt;
	double cpu_ms;
	uintptr_t near_sp = (uintptr_t)&fd;

	/* user mode: the sample's ip is the user registers' (in the kernel it is the kernel's) */
	CHECK_INT(pm_evt_parse("cpu-clock:u", &spec, err, sizeof(err)), 0);
	s.freq = 1000;
	s.stack_size = 1024;
	s.regs_mask = (1ULL << PERF_REG_X86_IP) | (1ULL << PERF_REG_X86_SP) |
		      (1ULL << PERF_REG_X86_BP);
	pm_evt_attr(&spec, &s, &attr);
	fd = pm_evt_open(&attr, 0, -1, -1);
	if (fd < 0)
		SKIP("%s", pm_evt_strerror(fd, &spec, &attr, why, sizeof(why)));
	rc = pm_ring_open(&r, fd, 16);
	if (rc) {
		close(fd);
		SKIP("mmap of the ring refused: %s", strerror(-rc));
	}
	CHECK_INT(pm_ring_fd(r), fd);
	CHECK_INT(pm_ring_open(&r, fd, 3), -EINVAL); /* not a power of two */
	pm_rec_layout_from_attr(&l, &attr);
	CHECK(pm_ring_next(r) == NULL); /* disabled until enabled */
	/*
	 * Busy until this thread has run 200 ms of CPU (whatever the load
	 * lets it have; wall time bounded at 20 s): cpu-clock at 1 kHz fires
	 * once per ms of the thread's own CPU time, so the truth to compare
	 * with is that CPU time, measured in the same run.
	 */
	CHECK_INT(ioctl(fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	c0 = thread_cpu_ns();
	t0 = pm_now_ns();
	while (thread_cpu_ns() - c0 < 200000000ULL && pm_now_ns() - t0 < 20000000000ULL) {
		for (int i = 0; i < 100000; i++)
			sink = sink * 31 + (uint64_t)i;
		samples += drain(r, &l, near_sp, &bad);
	}
	CHECK_INT(ioctl(fd, PERF_EVENT_IOC_DISABLE, 0), 0);
	cpu_ms = (double)(thread_cpu_ns() - c0) / 1e6;
	samples += drain(r, &l, near_sp, &bad);
	corrupt = pm_ring_bad(r);
	printf("  live: %u samples for %.1f ms of the thread's CPU, %d bad, %llu corrupt\n",
	       samples, cpu_ms, bad, (unsigned long long)corrupt);
	pm_ring_free(r);
	close(fd);
	CHECK_INT(bad, 0);
	CHECK_INT(corrupt, 0);
	/*
	 * The hrtimer gives one sample per full ms of CPU (less the drains of
	 * the last ms); half of that and 5 more is what a ring that loses
	 * nothing cannot miss, twice and 5 more what it cannot exceed (a
	 * record read twice).  Each bound still fails a ring that drops or
	 * repeats records wholesale.
	 */
	CHECK(cpu_ms >= 50); /* 20 s of wall for 50 ms of CPU: the host is not running us */
	CHECK(samples >= cpu_ms / 2 - 5);
	CHECK(samples <= cpu_ms * 2 + 5);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "empty", t_empty },
	{ "sequence", t_sequence },
	{ "wrap", t_wrap },
	{ "corrupt", t_corrupt },
	{ "open_mem_layout", t_open_mem_layout },
	{ "stress", t_stress },
	{ "live_cpu_clock", t_live_cpu_clock },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "ring", tests);
}
