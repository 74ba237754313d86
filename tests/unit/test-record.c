/*
 * Unit tests for lib/record's replay (pm_record_replay) on captures made
 * here with the capture writer: what a crafted capture may not do to
 * `pmuprof report -i`.
 */
#include "session/record.h"

#include "capture/datafile.h"
#include "profile/profile.h"

#include "test.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

static char dir[] = "/tmp/pmuprof-test-record.XXXXXX";

/*
 * A capture of no samples with @n executable mappings in @npids processes,
 * each of its own missing binary when @distinct (else all of one), in a
 * scrambled address order, then a BINARY record for each path.
 */
static int write_capture(const char *path, uint32_t n, uint32_t npids, int distinct)
{
	struct perf_event_attr a;
	struct pm_data_meta meta;
	struct pm_data_trailer t;
	struct pm_data_writer *w;
	char p[64];

	memset(&a, 0, sizeof(a));
	memset(&meta, 0, sizeof(meta));
	memset(&t, 0, sizeof(t));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.freq = 1;
	a.sample_freq = 100;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
	snprintf(meta.name, sizeof(meta.name), "cpu-clock");
	snprintf(meta.value_type, sizeof(meta.value_type), "cpu");
	snprintf(meta.value_unit, sizeof(meta.value_unit), "nanoseconds");
	if (pm_data_create(&w, path, &a, 1, &meta, NULL))
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t k = ((uint64_t)i * 35761) % n; /* a permutation when n is 10^k */
		snprintf(p, sizeof(p), "/nonexistent/pmuprof-test/lib%u.so", distinct ? i : 0);
		pm_data_write_map(w, 1000 + i % npids, 0x10000000ULL + k * 0x2000,
				  0x10000000ULL + k * 0x2000 + 0x1000, 0, p);
	}
	for (uint32_t i = 0; i < (distinct ? n : 1); i++) {
		snprintf(p, sizeof(p), "/nonexistent/pmuprof-test/lib%u.so", i);
		pm_data_write_binary(w, p, "0123abcd", 0);
	}
	return pm_data_finish(w, &t) ? -1 : 0;
}

/* Replay @path with stderr into @errpath; its lines counted into *@lines. */
static int replay_counting(const char *path, const char *errpath, int *lines,
			   struct pm_profile **p, struct pm_record_result *res)
{
	int fd = open(errpath, O_RDWR | O_CREAT | O_TRUNC, 0600), saved = dup(2), rc;
	char buf[4096];
	ssize_t k;

	if (fd < 0 || saved < 0)
		return -1;
	fflush(stderr);
	dup2(fd, 2);
	rc = pm_record_replay(path, p, res, false);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	*lines = 0;
	lseek(fd, 0, SEEK_SET);
	while ((k = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < k; i++)
			*lines += buf[i] == '\n';
	close(fd);
	return rc;
}

/*
 * Write the capture of write_capture(@n, @npids, @distinct), replay it
 * under alarm(): it must give an empty profile with @want_lines lines on
 * stderr.
 */
static int replay_case(const char *name, uint32_t n, uint32_t npids, int distinct, int want_lines)
{
	char cap[300], errf[300];
	struct pm_profile *p = NULL;
	struct pm_record_result res;
	int lines = -1;

	snprintf(cap, sizeof(cap), "%s.data", pm_test_tmp_path(dir, sizeof(dir), name));
	snprintf(errf, sizeof(errf), "%s.err", pm_test_tmp_path(dir, sizeof(dir), name));
	CHECK(write_capture(cap, n, npids, distinct) == 0);
	alarm(60);
	CHECK_INT(replay_counting(cap, errf, &lines, &p, &res), PM_REC_OK);
	alarm(0);
	CHECK(p != NULL);
	CHECK_INT(pm_prof_nsamples(p), 0);
	CHECK_INT(lines, want_lines);
	pm_prof_free(p);
	unlink(cap);
	unlink(errf);
	return PM_PASS;
}

/*
 * 100000 mappings of 100000 binaries that are not there: 8 warnings of
 * their own and one line for the rest (not 100000 lines), and quick: with
 * a linear search per binary and per mapping this took minutes.
 */
static int t_many_binaries(void)
{
	return replay_case("binaries", 100000, 1, 1, 9);
}

/* 100000 mappings of one missing binary over 50000 processes: one warning. */
static int t_many_processes(void)
{
	return replay_case("processes", 100000, 50000, 0, 1);
}

static const struct pm_test tests[] = {
	{ "replay_many_binaries", t_many_binaries },
	{ "replay_many_processes", t_many_processes },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	int rc = pm_test_main(argc, argv, "record", tests);

	rmdir(dir);
	return rc;
}
