/*
 * Unit tests for lib/memlog: a replay reads what each live read got, in
 * order -- the same address twice with other bytes, a failed read, a read
 * longer than a chunk -- and logs of older captures are served by address.
 */
#include <errno.h>
#include <string.h>

#include "capture/memlog.h"
#include "test.h"
#include "base/util.h"

/* The live log of @m as MEM records added to a fresh replay log. */
static struct pm_mlog *replay_of(const struct pm_mlog *m, size_t max)
{
	struct pm_mlog *r = pm_mlog_new();
	const uint8_t *p;
	size_t off = 0, len;

	while (pm_mlog_piece(m, &off, max, &p, &len))
		if (pm_mlog_add_record(r, p, len)) {
			pm_mlog_free(r);
			return NULL;
		}
	return r;
}

/*
 * The same address read twice, the target having changed it in between,
 * a read that failed live and a shorter one at the same address that did
 * not: each replay read gets what its live read got.  (Served by address
 * alone, the second read got the first one's bytes, and the failed one
 * succeeded: a replay that differed from its live run.)
 */
static int t_in_order(void)
{
	struct pm_mlog *m = pm_mlog_new(), *r;
	uint8_t a[24], b[24], got[64];

	memset(a, 0xaa, sizeof(a));
	memset(b, 0xbb, sizeof(b));
	CHECK(pm_mlog_log(m, 7, 0x1000, a, sizeof(a)));
	CHECK(pm_mlog_log(m, 7, 0x1000, b, sizeof(b)));
	CHECK(pm_mlog_log(m, 7, 0x2000, NULL, 64)); /* failed */
	CHECK(pm_mlog_log(m, 7, 0x2000, a, 16));   /* the shorter one got it */
	CHECK(pm_mlog_log(m, 7, 0x1ff0, b, 24));   /* overlaps the next */
	r = replay_of(m, 65520);
	CHECK(r);
	CHECK_INT(pm_mlog_read(r, 7, 0x1000, got, 24), 0);
	CHECK(memcmp(got, a, 24) == 0);
	CHECK_INT(pm_mlog_read(r, 7, 0x1000, got, 24), 0);
	CHECK(memcmp(got, b, 24) == 0);
	CHECK_INT(pm_mlog_read(r, 7, 0x2000, got, 64), -EFAULT);
	CHECK_INT(pm_mlog_read(r, 7, 0x2000, got, 16), 0);
	CHECK(memcmp(got, a, 16) == 0);
	CHECK_INT(pm_mlog_read(r, 7, 0x1ff0, got, 24), 0);
	CHECK(memcmp(got, b, 24) == 0);
	/* a new sample forgets them */
	pm_mlog_reset(r);
	CHECK_INT(pm_mlog_read(r, 7, 0x1000, got, 8), -EFAULT);
	pm_mlog_free(r);
	pm_mlog_free(m);
	return PM_PASS;
}

/* A read longer than a chunk is logged in several entries and read back whole. */
static int t_long_read(void)
{
	static uint8_t big[3 * PM_MLOG_CHUNK + 100], got[sizeof(big)];
	struct pm_mlog *m = pm_mlog_new(), *r;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + i / 251);
	CHECK(pm_mlog_log(m, 3, 0x7f0000, big, sizeof(big)));
	CHECK(pm_mlog_log(m, 3, 0x10, big, 8));
	r = replay_of(m, 65520);
	CHECK(r);
	CHECK_INT(pm_mlog_read(r, 3, 0x7f0000, got, sizeof(got)), 0);
	CHECK(memcmp(got, big, sizeof(big)) == 0);
	CHECK_INT(pm_mlog_read(r, 3, 0x10, got, 8), 0);
	/* out of order (another version's reads): served by address, across entries */
	CHECK_INT(pm_mlog_read(r, 3, 0x7f0000 + PM_MLOG_CHUNK - 8, got, 16), 0);
	CHECK(memcmp(got, big + PM_MLOG_CHUNK - 8, 16) == 0);
	/* another pid's memory is not this one's */
	CHECK_INT(pm_mlog_read(r, 4, 0x10, got, 8), -EFAULT);
	/* what was not read fails */
	CHECK_INT(pm_mlog_read(r, 3, 0x7f0000 + sizeof(big) - 8, got, 16), -EFAULT);
	CHECK_INT(pm_mlog_read(r, 3, 0x10, got, 0), 0);
	pm_mlog_free(r);
	pm_mlog_free(m);
	return PM_PASS;
}

/* A full log refuses the read (which then fails live too), and still marks failures. */
static int t_full(void)
{
	static uint8_t buf[PM_MLOG_CHUNK];
	struct pm_mlog *m = pm_mlog_new(), *r;
	size_t n = 0, marks = 0;

	while (pm_mlog_log(m, 1, 0x100000 + n * sizeof(buf), buf, sizeof(buf)))
		n++;
	CHECK(n > 0 && n * sizeof(buf) <= PM_MLOG_MAX);
	while (pm_mlog_log(m, 1, 0x8, buf, 8) && n < 100000)
		n++;
	CHECK(n < 100000);
	CHECK(!pm_mlog_log(m, 1, 0x10, buf, 8));
	while (pm_mlog_log(m, 1, 0x20, NULL, 8) && marks < 100000)
		marks++;
	CHECK(marks > 0 && marks < 100000);
	r = replay_of(m, 65520);
	CHECK(r);
	CHECK_INT(pm_mlog_read(r, 1, 0x10, buf, 8), -EFAULT);
	pm_mlog_free(r);
	pm_mlog_free(m);
	return PM_PASS;
}

/* Records of a hostile capture: torn entries, lengths past the record, too many records. */
static int t_hostile(void)
{
	struct pm_mlog *r = pm_mlog_new();
	uint64_t rec[6] = { 0 };
	uint8_t got[64];
	int i;

	/* an entry claiming 4 GiB of data in a 48-byte record */
	rec[0] = 9 | (0xffffffffULL << 32);
	rec[1] = 0x5000;
	CHECK_INT(pm_mlog_add_record(r, rec, sizeof(rec)), 0);
	CHECK_INT(pm_mlog_add_record(r, rec, 12), -EINVAL); /* not whole words */
	CHECK_INT(pm_mlog_read(r, 9, 0x5000, got, 8), -EFAULT);
	/* a length that ends exactly at the record, then one past it */
	rec[0] = 9 | (16ULL << 32);
	rec[2] = 0x1122334455667788ULL;
	rec[4] = 9 | (9ULL << 32);
	rec[5] = 0x6000;
	pm_mlog_reset(r);
	CHECK_INT(pm_mlog_add_record(r, rec, sizeof(rec)), 0);
	CHECK_INT(pm_mlog_read(r, 9, 0x5000, got, 16), 0);
	CHECK_INT(pm_mlog_read(r, 9, 0x6000, got, 1), -EFAULT);
	pm_mlog_reset(r);
	for (i = 0; i < PM_MLOG_MAX_RECORDS; i++)
		CHECK_INT(pm_mlog_add_record(r, rec, 0), 0);
	CHECK_INT(pm_mlog_add_record(r, rec, 8), -EINVAL);
	pm_mlog_free(r);
	return PM_PASS;
}

int main(int argc, char **argv)
{
	static const struct pm_test tests[] = {
		{ "in_order", t_in_order },
		{ "long_read", t_long_read },
		{ "full", t_full },
		{ "hostile", t_hostile },
		{ NULL, NULL },
	};

	return pm_test_main(argc, argv, "memlog", tests);
}
