/* Unit tests for lib/events: the name table, modifiers, attrs, errors. */
#include "events/events.h"

#include "base/util.h"

#include "test.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct {
	const char *text, *name;
	uint32_t type;
	uint64_t config;
} names[] = {
	{ "cycles", "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles", "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", "cache-references", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-instructions", "branches", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "ref-cycles", "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
	{ "stalled-cycles-frontend", "stalled-cycles-frontend", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "idle-cycles-frontend", "stalled-cycles-frontend", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "stalled-cycles-backend", "stalled-cycles-backend", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "idle-cycles-backend", "stalled-cycles-backend", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "cpu-clock", "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "minor-faults", "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "context-switches", "context-switches", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "migrations", "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "alignment-faults", "alignment-faults", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", "emulation-faults", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_EMULATION_FAULTS },
	{ "dummy", "dummy", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY },
	{ "CPU-Clock", "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "r1a8", "r1a8", PERF_TYPE_RAW, 0x1a8 },
	{ "r003C", "r003C", PERF_TYPE_RAW, 0x3c },
	{ "rffffffffffffffff", "rffffffffffffffff", PERF_TYPE_RAW, ~0ULL },
};

static int t_names(void)
{
	struct pm_evt_spec s;
	char err[256];

	for (size_t i = 0; i < PM_ARRAY_SIZE(names); i++) {
		err[0] = 0;
		if (pm_evt_parse(names[i].text, &s, err, sizeof(err))) {
			fprintf(stderr, "  %s: %s\n", names[i].text, err);
			return PM_FAIL;
		}
		CHECK_STR(s.name, names[i].name);
		CHECK_INT(s.type, names[i].type);
		CHECK_INT(s.config, names[i].config);
		CHECK_INT(s.hardware, names[i].type != PERF_TYPE_SOFTWARE);
		/* default: user and kernel, as perf (the fallback to user is the recording's) */
		CHECK(!s.exclude_user);
		CHECK(!s.exclude_kernel);
		CHECK(!s.ukmods);
		CHECK_INT(s.precise, 0);
		if (names[i].type == PERF_TYPE_SOFTWARE && names[i].config <= 1) {
			CHECK_STR(s.value_type, "cpu");
			CHECK_STR(s.value_unit, "nanoseconds");
		} else {
			CHECK_STR(s.value_type, names[i].name);
			CHECK_STR(s.value_unit, "count");
		}
	}
	return PM_PASS;
}

static int t_modifiers(void)
{
	static const struct {
		const char *text;
		bool xu, xk;
		unsigned p;
	} mods[] = {
		{ "cycles:u", false, true, 0 },    { "cycles:k", true, false, 0 },
		{ "cycles:uk", false, false, 0 },  { "cycles:ku", false, false, 0 },
		{ "cycles:p", false, false, 1 },   { "cycles:pp", false, false, 2 },
		{ "cycles:ppp", false, false, 3 }, { "cycles:upp", false, true, 2 },
		{ "cycles:pkp", true, false, 2 },  { "cpu-clock:uu", false, true, 0 },
		{ "r3c:kpu", false, false, 1 },
	};
	struct pm_evt_spec s;
	char err[256];

	for (size_t i = 0; i < PM_ARRAY_SIZE(mods); i++) {
		if (pm_evt_parse(mods[i].text, &s, err, sizeof(err))) {
			fprintf(stderr, "  %s: %s\n", mods[i].text, err);
			return PM_FAIL;
		}
		CHECK_INT(s.exclude_user, mods[i].xu);
		CHECK_INT(s.exclude_kernel, mods[i].xk);
		CHECK_INT(s.precise, mods[i].p);
		CHECK_INT(s.ukmods, mods[i].xu || mods[i].xk || strpbrk(strchr(mods[i].text, ':'), "uk") != NULL);
		CHECK(!strchr(s.name, ':'));
		CHECK(!strchr(s.value_type, ':'));
	}
	CHECK_INT(pm_evt_parse("cpu-cycles:pp", &s, err, sizeof(err)), 0);
	CHECK_STR(s.name, "cycles");
	CHECK_INT(pm_evt_parse("r1a8:u", &s, err, sizeof(err)), 0);
	CHECK_STR(s.name, "r1a8");
	CHECK_STR(s.value_type, "r1a8");
	return PM_PASS;
}

static int expect_error(const char *text, const char *want)
{
	struct pm_evt_spec s;
	char err[256] = "";

	CHECK_INT(pm_evt_parse(text, &s, err, sizeof(err)), -EINVAL);
	if (strcmp(err, want)) {
		fprintf(stderr, "  '%s': got \"%s\"\n   expected \"%s\"\n", text, err, want);
		return PM_FAIL;
	}
	return PM_PASS;
}

static int t_errors(void)
{
	struct pm_evt_spec s;
	char small[16];

	if (expect_error("cyclez", "unknown event 'cyclez' (did you mean 'cycles'?)") ||
	    expect_error("cpu-clok", "unknown event 'cpu-clok' (did you mean 'cpu-clock'?)") ||
	    expect_error("task-clocks:u",
			 "unknown event 'task-clocks' (did you mean 'task-clock'?)") ||
	    expect_error("bus-cycle", "unknown event 'bus-cycle' (did you mean 'bus-cycles'?)") ||
	    expect_error("abc-cycles",
			 "unknown event 'abc-cycles' (did you mean 'cpu-cycles', 'bus-cycles' or "
			 "'ref-cycles'?)") ||
	    expect_error("cache-mises",
			 "unknown event 'cache-mises' (did you mean 'cache-misses'?)") ||
	    expect_error("instrutions",
			 "unknown event 'instrutions' (did you mean 'instructions'?)") ||
	    expect_error("page-fault",
			 "unknown event 'page-fault' (did you mean 'page-faults'?)") ||
	    expect_error("foo", "unknown event 'foo'; run 'pmuprof list' to see the events here") ||
	    expect_error("r", "unknown event 'r'; run 'pmuprof list' to see the events here") ||
	    expect_error("rxyz", "unknown event 'rxyz'; run 'pmuprof list' to see the events here") ||
	    expect_error("r12345678901234567",
			 "unknown event 'r12345678901234567'; run 'pmuprof list' to see the events here") ||
	    expect_error("cycles:x", "unknown modifier 'x' in 'cycles:x' (allowed: u, k, p)") ||
	    expect_error("cycles:u:k", "unknown modifier ':' in 'cycles:u:k' (allowed: u, k, p)") ||
	    expect_error("cycles:", "empty modifier in 'cycles:' (allowed: u, k, p)") ||
	    expect_error("cycles:pppp",
			 "too many 'p' modifiers in 'cycles:pppp' (at most 3: p, pp, ppp)") ||
	    expect_error("", "empty event name in ''") ||
	    expect_error(":u", "empty event name in ':u'"))
		return PM_FAIL;
	/* long names are refused, not truncated */
	CHECK_INT(pm_evt_parse("cycles-cycles-cycles-cycles-cycles-cycles-cycles-cycles-cycles-x",
			       &s, NULL, 0),
		  -EINVAL);
	/* err is optional and bounded */
	CHECK_INT(pm_evt_parse("cyclez", &s, NULL, 0), -EINVAL);
	CHECK_INT(pm_evt_parse("cyclez", &s, small, sizeof(small)), -EINVAL);
	CHECK_INT(strlen(small), sizeof(small) - 1);
	return PM_PASS;
}

static int t_attr_default(void)
{
	struct pm_evt_spec spec;
	struct pm_evt_sampling s = { 0 };
	struct perf_event_attr a;

	CHECK_INT(pm_evt_parse("cpu-clock", &spec, NULL, 0), 0);
	/* the clocks' sample type says which modes they count */
	CHECK_STR(spec.value_type, "cpu");
	pm_evt_user_only(&spec);
	CHECK(spec.exclude_kernel);
	CHECK_STR(spec.value_type, "user_cpu");
	CHECK_INT(pm_evt_parse("task-clock:u", &spec, NULL, 0), 0);
	CHECK_STR(spec.value_type, "user_cpu");
	CHECK_INT(pm_evt_parse("cpu-clock:k", &spec, NULL, 0), 0);
	CHECK_STR(spec.value_type, "kernel_cpu");
	CHECK_INT(pm_evt_parse("cpu-clock", &spec, NULL, 0), 0);
	s.freq = 999;
	s.stack_size = 8192;
	s.regs_mask = 0x4001c0;
	s.callchain = true;
	s.tracking = true;
	s.enable_on_exec = true;
	s.inherit = true;
	memset(&a, 0xff, sizeof(a));
	pm_evt_attr(&spec, &s, &a);
	CHECK_INT(a.size, sizeof(a));
	CHECK_INT(a.type, PERF_TYPE_SOFTWARE);
	CHECK_INT(a.config, PERF_COUNT_SW_CPU_CLOCK);
	CHECK_INT(a.sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
					 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
					 PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_CALLCHAIN |
					 PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
	CHECK_INT(a.read_format, PERF_FORMAT_LOST); /* the kernel's lost count, read at the end */
	CHECK_INT(a.freq, 1);
	CHECK_INT(a.sample_freq, 999);
	CHECK_INT(a.sample_regs_user, 0x4001c0);
	CHECK_INT(a.sample_stack_user, 8192);
	CHECK_INT(a.disabled, 1);
	CHECK_INT(a.inherit, 1);
	CHECK_INT(a.enable_on_exec, 1);
	CHECK_INT(a.exclude_user, 0);
	CHECK_INT(a.exclude_kernel, 0);
	CHECK_INT(a.exclude_hv, 1);
	CHECK_INT(a.exclude_callchain_kernel, 1);
	CHECK_INT(a.exclude_callchain_user, 0);
	CHECK_INT(a.precise_ip, 0);
	CHECK_INT(a.sample_id_all, 1);
	CHECK_INT(a.mmap, 1);
	CHECK_INT(a.mmap2, 1);
	CHECK_INT(a.comm, 1);
	CHECK_INT(a.comm_exec, 1);
	CHECK_INT(a.task, 1);
	CHECK_INT(a.mmap_data, 0);
	CHECK_INT(a.watermark, 1);
	CHECK_INT(a.wakeup_watermark, 128 * 1024);
	CHECK_INT(a.use_clockid, 1);
	CHECK_INT(a.clockid, CLOCK_MONOTONIC);
	CHECK_INT(a.sample_max_stack, 0);
	CHECK_INT(a.pinned, 0);
	CHECK_INT(a.inherit_stat, 0);
	CHECK_INT(a.branch_sample_type, 0);
	CHECK_INT(a.config1, 0);
	return PM_PASS;
}

static int t_attr_period_kernel(void)
{
	struct pm_evt_spec spec;
	struct pm_evt_sampling s = { 0 };
	struct perf_event_attr a;

	CHECK_INT(pm_evt_parse("instructions:kpp", &spec, NULL, 0), 0);
	s.period = 100003;
	s.kernel_callchain = true;
	pm_evt_attr(&spec, &s, &a);
	CHECK_INT(a.type, PERF_TYPE_HARDWARE);
	CHECK_INT(a.config, PERF_COUNT_HW_INSTRUCTIONS);
	CHECK_INT(a.freq, 0);
	CHECK_INT(a.sample_period, 100003);
	CHECK_INT(a.sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
					 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
					 PERF_SAMPLE_IDENTIFIER);
	CHECK_INT(a.sample_regs_user, 0);
	CHECK_INT(a.sample_stack_user, 0);
	CHECK_INT(a.exclude_user, 1);
	CHECK_INT(a.exclude_kernel, 0);
	CHECK_INT(a.exclude_callchain_kernel, 0);
	CHECK_INT(a.precise_ip, 2);
	CHECK_INT(a.inherit, 0);
	CHECK_INT(a.enable_on_exec, 0);
	CHECK_INT(a.mmap, 0);
	CHECK_INT(a.mmap2, 0);
	CHECK_INT(a.comm, 0);
	CHECK_INT(a.task, 0);
	CHECK_INT(a.disabled, 1);

	/* both user and kernel; neither freq nor period: perf's default 4000 Hz */
	CHECK_INT(pm_evt_parse("r1a8:uk", &spec, NULL, 0), 0);
	memset(&s, 0, sizeof(s));
	pm_evt_attr(&spec, &s, &a);
	CHECK_INT(a.type, PERF_TYPE_RAW);
	CHECK_INT(a.config, 0x1a8);
	CHECK_INT(a.exclude_user, 0);
	CHECK_INT(a.exclude_kernel, 0);
	CHECK_INT(a.freq, 1);
	CHECK_INT(a.sample_freq, 4000);
	return PM_PASS;
}

static int t_strerror(void)
{
	struct pm_evt_spec cyc, clk;
	struct pm_evt_sampling s = { 0 };
	struct perf_event_attr a;
	char buf[512], want[512];
	long paranoid, max = pm_evt_max_sample_rate();

	CHECK(max > 0);
	CHECK_INT(pm_evt_parse("cycles", &cyc, NULL, 0), 0);
	CHECK_INT(pm_evt_parse("cpu-clock", &clk, NULL, 0), 0);
	s.freq = (uint64_t)max + 1;
	pm_evt_attr(&clk, &s, &a);

	CHECK_STR(pm_evt_strerror(-ENOENT, &cyc, &a, buf, sizeof(buf)),
		  "cannot open 'cycles': the CPU has no PMU counter for 'cycles' (common in VMs); "
		  "try -e cpu-clock");
	CHECK(strstr(pm_evt_strerror(-EOPNOTSUPP, &cyc, &a, buf, sizeof(buf)), "no PMU counter"));
	CHECK(strstr(pm_evt_strerror(-ENODEV, &cyc, &a, buf, sizeof(buf)), "try -e cpu-clock"));
	CHECK(!strstr(pm_evt_strerror(-ENOENT, &clk, &a, buf, sizeof(buf)), "PMU"));

	snprintf(want, sizeof(want),
		 "cannot open 'cpu-clock': frequency %ld Hz is above "
		 "kernel.perf_event_max_sample_rate=%ld; lower -F or raise the sysctl",
		 max + 1, max);
	CHECK_STR(pm_evt_strerror(-EINVAL, &clk, &a, buf, sizeof(buf)), want);
	a.sample_freq = 1000;
	CHECK(!strstr(pm_evt_strerror(-EINVAL, &clk, &a, buf, sizeof(buf)), "frequency"));

	if (pm_read_long("/proc/sys/kernel/perf_event_paranoid", &paranoid) == 0) {
		char lvl[64];

		snprintf(lvl, sizeof(lvl), "(kernel.perf_event_paranoid=%ld)", paranoid);
		CHECK(strstr(pm_evt_strerror(-EACCES, &clk, &a, buf, sizeof(buf)), lvl));
		CHECK(strstr(pm_evt_strerror(-EPERM, &clk, &a, buf, sizeof(buf)), "CAP_PERFMON"));
		if (paranoid >= 2) {
			a.exclude_kernel = 0;
			CHECK(strstr(pm_evt_strerror(-EACCES, &clk, &a, buf, sizeof(buf)),
				     "sysctl kernel.perf_event_paranoid=1"));
		}
	}
	CHECK_STR(pm_evt_strerror(-EMFILE, &clk, &a, buf, sizeof(buf)),
		  "cannot open 'cpu-clock': too many open files; raise ulimit -n");
	CHECK_STR(pm_evt_strerror(-EBUSY, &cyc, &a, buf, sizeof(buf)),
		  "cannot open 'cycles': the PMU is in use by another tool");
	CHECK_STR(pm_evt_strerror(-ESRCH, &clk, &a, buf, sizeof(buf)),
		  "cannot open 'cpu-clock': no such process");
	CHECK(strstr(pm_evt_strerror(-E2BIG, &clk, &a, buf, sizeof(buf)), "older"));
	CHECK(strstr(pm_evt_strerror(-ENOMEM, &clk, &a, buf, sizeof(buf)), "ulimit -l"));
	CHECK_STR(pm_evt_strerror(-EIO, &clk, &a, buf, sizeof(buf)),
		  "cannot open 'cpu-clock': Input/output error");
	/* NULL spec/attr, positive errno, tiny buffers */
	CHECK(strstr(pm_evt_strerror(EMFILE, NULL, NULL, buf, sizeof(buf)), "ulimit -n"));
	CHECK(strstr(pm_evt_strerror(-EINVAL, NULL, NULL, buf, sizeof(buf)), "rejected"));
	CHECK_INT(strlen(pm_evt_strerror(-EACCES, &clk, NULL, buf, 8)), 7);
	CHECK(!strchr(pm_evt_strerror(-EACCES, &clk, &a, buf, sizeof(buf)), '\n'));
	return PM_PASS;
}

static int t_unsupported(void)
{
	CHECK(pm_evt_err_unsupported(-ENOENT));
	CHECK(pm_evt_err_unsupported(-EOPNOTSUPP));
	CHECK(pm_evt_err_unsupported(-ENODEV));
	CHECK(!pm_evt_err_unsupported(-EINVAL));
	CHECK(!pm_evt_err_unsupported(-EACCES));
	CHECK(!pm_evt_err_unsupported(0));
	return PM_PASS;
}

static int t_fail_open_hook(void)
{
	static const struct {
		const char *v;
		int err;
	} inj[] = {
		{ "EACCES", EACCES }, { "EPERM", EPERM },       { "ENOENT", ENOENT },
		{ "EMFILE", EMFILE }, { "EINVAL", EINVAL },     { "E2BIG", E2BIG },
		{ "EOPNOTSUPP", EOPNOTSUPP }, { "ENODEV", ENODEV }, { "EBUSY", EBUSY },
		{ "24", 24 },
	};
	struct pm_evt_spec spec;
	struct pm_evt_sampling s = { 0 };
	struct perf_event_attr a;
	int fd;

	CHECK_INT(pm_evt_parse("cpu-clock", &spec, NULL, 0), 0);
	s.freq = 100;
	pm_evt_attr(&spec, &s, &a);
	for (size_t i = 0; i < PM_ARRAY_SIZE(inj); i++) {
		setenv("PMUPROF_FAIL_OPEN", inj[i].v, 1);
		CHECK_INT(pm_evt_open(&a, 0, -1, -1), -inj[i].err);
	}
	unsetenv("PMUPROF_FAIL_OPEN");
	fd = pm_evt_open(&a, 0, -1, -1);
	if (fd < 0) {
		char buf[512];

		SKIP("%s", pm_evt_strerror(fd, &spec, &a, buf, sizeof(buf)));
	}
	close(fd);
	return PM_PASS;
}

/* What this kernel says for a hardware event, checked against the classifier. */
static int t_live_hardware(void)
{
	struct pm_evt_spec spec;
	struct pm_evt_sampling s = { 0 };
	struct perf_event_attr a;
	char buf[512];
	int fd;

	CHECK_INT(pm_evt_parse("cycles", &spec, NULL, 0), 0);
	s.freq = 1000;
	pm_evt_attr(&spec, &s, &a);
	fd = pm_evt_open(&a, 0, -1, -1);
	if (fd >= 0) {
		close(fd);
		SKIP("this machine has a PMU; cycles opened");
	}
	printf("  cycles: %s\n", pm_evt_strerror(fd, &spec, &a, buf, sizeof(buf)));
	if (fd == -EACCES || fd == -EPERM)
		SKIP("perf_event_open refused: %s", buf);
	CHECK(pm_evt_err_unsupported(fd));
	CHECK(strstr(buf, "try -e cpu-clock"));
	return PM_PASS;
}


/* ---- issue 5: cache events, PMU terms, tracepoints, uprobes, per-event rates ---- */

static char fake_root[64];

static void put(const char *rel, const char *text)
{
	char path[256], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fake_root, rel);
	for (slash = strchr(path + strlen(fake_root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = 0;
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* A fake sysfs (cpu PMU with formats and an alias) and tracefs under /tmp. */
static void fake_dirs(void)
{
	char sys[128], tr[128];

	if (fake_root[0])
		return;
	snprintf(fake_root, sizeof(fake_root), "/tmp/pmuprof-test-events.XXXXXX");
	if (!mkdtemp(fake_root))
		return;
	put("sys/cpu/type", "4\n");
	put("sys/cpu/format/event", "config:0-7\n");
	put("sys/cpu/format/umask", "config:8-15\n");
	put("sys/cpu/format/edge", "config:18\n");
	put("sys/cpu/format/inv", "config:23\n");
	put("sys/cpu/format/cmask", "config:24-31\n");
	put("sys/cpu/format/split", "config1:0-3,8-11\n");
	put("sys/cpu/format/broken", "config:9-3\n");
	put("sys/cpu/events/cycles-t", "event=0x3c,in_tx=1\n");
	put("sys/cpu/events/mem-loads", "event=0xcd,umask=0x1\n");
	put("sys/software/type", "1\n");
	put("sys/uprobe/type", "8\n");
	put("sys/uprobe/format/retprobe", "config:0\n");
	put("trace/events/sched/sched_switch/id", "314\n");
	put("trace/events/sched/sched_wakeup/id", "316\n");
	put("trace/events/syscalls/sys_enter_read/id", "700\n");
	put("notrace/placeholder", "");
	snprintf(sys, sizeof(sys), "%s/sys", fake_root);
	snprintf(tr, sizeof(tr), "%s/trace", fake_root);
	setenv("PMUPROF_SYSFS", sys, 1);
	setenv("PMUPROF_TRACEFS", tr, 1);
}

static const struct {
	const char *text, *name;
	uint64_t config;
} caches[] = {
	{ "L1-dcache-load-misses", "L1-dcache-load-misses", 0x10000 },
	{ "L1-dcache-loads", "L1-dcache-loads", 0x0 },
	{ "L1-dcache-stores", "L1-dcache-stores", 0x100 },
	{ "L1-dcache-store-misses", "L1-dcache-store-misses", 0x10100 },
	{ "L1-dcache-prefetches", "L1-dcache-prefetches", 0x200 },
	{ "l1d-read-miss", "L1-dcache-load-misses", 0x10000 },
	{ "L1-data-misses-load", "L1-dcache-load-misses", 0x10000 },
	{ "L1-icache-load-misses", "L1-icache-load-misses", 0x10001 },
	{ "LLC-load-misses", "LLC-load-misses", 0x10002 },
	{ "LLC-loads", "LLC-loads", 0x2 },
	{ "LLC-misses", "LLC-load-misses", 0x10002 },
	{ "L2-store-misses", "LLC-store-misses", 0x10102 },
	{ "dTLB-load-misses", "dTLB-load-misses", 0x10003 },
	{ "dTLB-stores", "dTLB-stores", 0x103 },
	{ "Data-TLB-prefetch-misses", "dTLB-prefetch-misses", 0x10203 },
	{ "iTLB-loads", "iTLB-loads", 0x4 },
	{ "iTLB-load-misses", "iTLB-load-misses", 0x10004 },
	{ "branch-loads", "branch-loads", 0x5 },
	{ "branch-load-misses", "branch-load-misses", 0x10005 },
	{ "bpu-read-miss", "branch-load-misses", 0x10005 },
	{ "node-loads", "node-loads", 0x6 },
	{ "node-store-misses", "node-store-misses", 0x10106 },
	{ "node-speculative-read-miss", "node-prefetch-misses", 0x10206 },
};

static int t_cache(void)
{
	struct pm_evt_spec s;
	char err[256];

	for (size_t i = 0; i < PM_ARRAY_SIZE(caches); i++) {
		err[0] = 0;
		if (pm_evt_parse(caches[i].text, &s, err, sizeof(err))) {
			fprintf(stderr, "  %s: %s\n", caches[i].text, err);
			return PM_FAIL;
		}
		CHECK_STR(s.name, caches[i].name);
		CHECK_INT(s.type, PERF_TYPE_HW_CACHE);
		CHECK_INT(s.config, caches[i].config);
		CHECK_INT(s.kind, PM_EVT_CACHE);
		CHECK(s.hardware);
		CHECK_STR(s.value_type, caches[i].name);
	}
	CHECK_INT(pm_evt_parse("LLC-load-misses:pp", &s, err, sizeof(err)), 0);
	CHECK_INT(s.precise, 2);
	/* the generic events keep their meaning */
	CHECK_INT(pm_evt_parse("branch-misses", &s, err, sizeof(err)), 0);
	CHECK_INT(s.type, PERF_TYPE_HARDWARE);
	if (expect_error("L1-icache-stores",
			 "'L1-icache-stores' is not a cache event: L1-icache has no store counter") ||
	    expect_error("iTLB-prefetches",
			 "'iTLB-prefetches' is not a cache event: iTLB has no prefetch counter") ||
	    expect_error("LLC-load-mises",
			 "unknown event 'LLC-load-mises' (did you mean 'LLC-load-misses'?)") ||
	    expect_error("L1-dcache-lod-misses",
			 "unknown event 'L1-dcache-lod-misses' (did you mean 'L1-dcache-load-misses' or "
			 "'L1-icache-load-misses'?)") ||
	    expect_error("dTLB-misses-misses",
			 "unknown event 'dTLB-misses-misses'; run 'pmuprof list' to see the events here"))
		return PM_FAIL;
	return PM_PASS;
}

static int t_builtin_list(void)
{
	enum pm_evt_kind k;
	const char *n;
	size_t hw = 0, sw = 0, cache = 0;
	struct pm_evt_spec s;

	for (size_t i = 0; (n = pm_evt_builtin(i, &k)) && i < 1000; i++) {
		CHECK_INT(pm_evt_parse(n, &s, NULL, 0), 0);
		CHECK_STR(s.name, n);
		CHECK_INT(s.kind, k);
		hw += k == PM_EVT_HW;
		sw += k == PM_EVT_SW;
		cache += k == PM_EVT_CACHE;
	}
	CHECK_INT(hw, 10);
	CHECK_INT(sw, 10);
	/* perf's valid combinations: L1d 6, L1i 4, LLC 6, dTLB 6, iTLB 2, branch 2, node 6 */
	CHECK_INT(cache, 32);
	return PM_PASS;
}

static int t_pmu_terms(void)
{
	struct pm_evt_spec s;
	char err[256] = "";

	fake_dirs();
	CHECK_INT(pm_evt_parse("cpu/event=0x3c,umask=0x00/", &s, err, sizeof(err)), 0);
	CHECK_INT(s.type, 4);
	CHECK_INT(s.config, 0x3c);
	CHECK_INT(s.kind, PM_EVT_PMU);
	CHECK(s.hardware);
	CHECK_STR(s.name, "cpu/event=0x3c,umask=0x00/");
	CHECK(!s.exclude_kernel);
	CHECK_INT(pm_evt_parse("cpu/event=0xd1,umask=0x20,edge,inv,cmask=3/u", &s, err,
			       sizeof(err)), 0);
	CHECK_INT(s.config, 0x03000000 | 0x800000 | 0x40000 | 0x2000 | 0xd1);
	CHECK_INT(pm_evt_parse("cpu/event=0xc0,period=100003/pp", &s, err, sizeof(err)), 0);
	CHECK_INT(s.period, 100003);
	CHECK_INT(s.precise, 2);
	CHECK_INT(pm_evt_parse("cpu/event=1/:k", &s, err, sizeof(err)), 0);
	CHECK(s.exclude_user);
	CHECK(!s.exclude_kernel);
	/* split ranges fill from the low bits up */
	CHECK_INT(pm_evt_parse("cpu/split=0xab/", &s, err, sizeof(err)), 0);
	CHECK_INT(s.config1, 0xa0b);
	CHECK_INT(pm_evt_parse("cpu/config=0x1234,config1=5,config2=6/", &s, err, sizeof(err)), 0);
	CHECK_INT(s.config, 0x1234);
	CHECK_INT(s.config1, 5);
	CHECK_INT(s.config2, 6);
	/* an alias from events/ */
	CHECK_INT(pm_evt_parse("cpu/mem-loads/", &s, err, sizeof(err)), 0);
	CHECK_INT(s.config, 0x1cd);
	if (expect_error("cpu/event=0x100/",
			 "value 0x100 is too large for 'event' (config:0-7) in 'cpu/event=0x100/'") ||
	    expect_error("cpu/evnt=1/",
			 "unknown term 'evnt' for PMU 'cpu' in 'cpu/evnt=1/' (did you mean 'event'?)") ||
	    expect_error("cpu/event=zz/", "bad value 'zz' for 'event' in 'cpu/event=zz/'") ||
	    expect_error("cpu/event=1", "missing closing '/' in 'cpu/event=1' (expected NAME/terms/)") ||
	    expect_error("cpu//", "empty term in 'cpu//'") ||
	    expect_error("cpu/event=1,,umask=1/", "empty term in 'cpu/event=1,,umask=1/'") ||
	    expect_error("cpu/broken=1/", "cannot parse cpu/format/broken: 'config:9-3'") ||
	    expect_error("cpu/event=1/x", "unknown modifier 'x' in 'cpu/event=1/x' (allowed: u, k, p)") ||
	    expect_error("cpu/event=1,period=1,freq=2/",
			 "'cpu/event=1,period=1,freq=2/': period and freq are exclusive") ||
	    expect_error("uprobe/config=1/", "'uprobe/config=1/': use uprobe:BINARY:SYMBOL for uprobes") ||
	    expect_error("cpu/../", "bad term name '..' in 'cpu/../'"))
		return PM_FAIL;
	return PM_PASS;
}

static int t_event_terms(void)
{
	struct pm_evt_spec s;
	struct pm_evt_sampling smp = { 0 };
	struct perf_event_attr a;
	char err[256] = "";

	fake_dirs();
	CHECK_INT(pm_evt_parse("cpu-clock/period=250000/", &s, err, sizeof(err)), 0);
	CHECK_STR(s.name, "cpu-clock");
	CHECK_INT(s.period, 250000);
	smp.freq = 1000;
	pm_evt_attr(&s, &smp, &a);
	CHECK_INT(a.freq, 0);
	CHECK_INT(a.sample_period, 250000);
	CHECK_INT(pm_evt_parse("page-faults/freq=50/u", &s, err, sizeof(err)), 0);
	smp.freq = 0;
	smp.period = 7;
	pm_evt_attr(&s, &smp, &a);
	CHECK_INT(a.freq, 1);
	CHECK_INT(a.sample_freq, 50);
	CHECK_INT(pm_evt_parse("r003c/period=1000/", &s, err, sizeof(err)), 0);
	CHECK_INT(s.config, 0x3c);
	CHECK_INT(pm_evt_parse("LLC-load-misses/period=10007/", &s, err, sizeof(err)), 0);
	CHECK_INT(s.period, 10007);
	CHECK_INT(pm_evt_parse("sched:sched_switch/period=2/", &s, err, sizeof(err)), 0);
	CHECK_INT(s.period, 2);
	CHECK_INT(s.config, 314);
	if (expect_error("cycles/umask=1/",
			 "unknown term 'umask' in 'cycles/umask=1/' (allowed here: period=N, freq=N)") ||
	    expect_error("cycles/period=0/",
			 "bad value for 'period' in 'cycles/period=0/': a number above 0") ||
	    expect_error("cycles/period/",
			 "bad value for 'period' in 'cycles/period/': a number above 0"))
		return PM_FAIL;
	if (pm_evt_max_sample_rate() == 100000 &&
	    expect_error("cycles/freq=1000000000/",
			 "frequency 1000000000 in 'cycles/freq=1000000000/' is above "
			 "kernel.perf_event_max_sample_rate=100000"))
		return PM_FAIL;
	return PM_PASS;
}

static int t_tracepoint(void)
{
	struct pm_evt_spec s;
	struct pm_evt_sampling smp = { 0 };
	struct perf_event_attr a;
	char err[300] = "", dir[128];

	fake_dirs();
	CHECK_INT(pm_evt_parse("sched:sched_switch", &s, err, sizeof(err)), 0);
	CHECK_INT(s.type, PERF_TYPE_TRACEPOINT);
	CHECK_INT(s.config, 314);
	CHECK_INT(s.kind, PM_EVT_TRACEPOINT);
	CHECK(!s.hardware);
	CHECK_STR(s.name, "sched:sched_switch");
	CHECK_STR(s.value_type, "sched:sched_switch");
	CHECK_STR(s.value_unit, "count");
	/* fires in the kernel: nothing excluded by default */
	CHECK(!s.exclude_kernel);
	CHECK(!s.exclude_user);
	CHECK_INT(s.default_period, 1);
	/* every hit unless -F/-c or a term says otherwise */
	smp.freq = 1000;
	smp.rate_default = true;
	pm_evt_attr(&s, &smp, &a);
	CHECK_INT(a.freq, 0);
	CHECK_INT(a.sample_period, 1);
	CHECK_INT(a.exclude_kernel, 0);
	smp.rate_default = false;
	pm_evt_attr(&s, &smp, &a);
	CHECK_INT(a.freq, 1);
	CHECK_INT(a.sample_freq, 1000);
	CHECK_INT(pm_evt_parse("sched:sched_wakeup:u", &s, err, sizeof(err)), 0);
	CHECK_INT(s.config, 316);
	CHECK(s.exclude_kernel);
	CHECK_INT(pm_evt_parse("syscalls:sys_enter_read", &s, err, sizeof(err)), 0);
	CHECK_INT(s.config, 700);
	if (expect_error("sched:sched_swich",
			 "unknown tracepoint 'sched:sched_swich' (did you mean 'sched:sched_switch'?)") ||
	    expect_error("shed:sched_switch",
			 "unknown tracepoint 'shed:sched_switch' (did you mean 'sched:sched_switch'?)") ||
	    expect_error("sched:..", "bad tracepoint name 'sched:..' (expected subsystem:name)") ||
	    expect_error("sched:sched_switch:q",
			 "unknown modifier 'q' in 'sched:sched_switch:q' (allowed: u, k, p)"))
		return PM_FAIL;
	/* not mounted: the error says how */
	snprintf(dir, sizeof(dir), "%s/notrace", fake_root);
	setenv("PMUPROF_TRACEFS", dir, 1);
	if (expect_error("sched:sched_switch",
			 "cannot use tracepoint 'sched:sched_switch': tracefs is not mounted; "
			 "mount it with: mount -t tracefs nodev /sys/kernel/tracing")) {
		snprintf(dir, sizeof(dir), "%s/trace", fake_root);
		setenv("PMUPROF_TRACEFS", dir, 1);
		return PM_FAIL;
	}
	/* a typo with a modifier is still an unknown event, not a tracepoint */
	if (expect_error("cycels:u", "unknown event 'cycels' (did you mean 'cycles'?)"))
		return PM_FAIL;
	snprintf(dir, sizeof(dir), "%s/trace", fake_root);
	setenv("PMUPROF_TRACEFS", dir, 1);
	return PM_PASS;
}

/* A C function of this test binary: its file offset is where its bytes are. */
int pm_test_probe_target(int x);
__attribute__((noinline)) int pm_test_probe_target(int x)
{
	return x * 3 + 1;
}

static int t_uprobe(void)
{
	struct pm_evt_spec s;
	struct pm_evt_sampling smp = { 0 };
	struct perf_event_attr a;
	char err[600] = "", text[4200], self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *go = pm_test_fixture("go/shares");
	FILE *f;
	unsigned char want[16], got[16];

	fake_dirs();
	CHECK(n > 0);
	self[n] = 0;
	snprintf(text, sizeof(text), "uprobe:%s:pm_test_probe_target", self);
	if (pm_evt_parse(text, &s, err, sizeof(err))) {
		fprintf(stderr, "  %s\n", err);
		return PM_FAIL;
	}
	CHECK_INT(s.kind, PM_EVT_UPROBE);
	CHECK_INT(s.type, 8);
	CHECK(!s.hardware);
	CHECK_STR(s.path, self);
	CHECK_STR(s.symbol, "pm_test_probe_target");
	CHECK_STR(s.name, "uprobe:pm_test_probe_target");
	CHECK_INT(s.default_period, 1);
	CHECK(s.exclude_kernel);
	/* the bytes at the file offset are the function's code */
	memcpy(want, (const void *)(uintptr_t)pm_test_probe_target, sizeof(want));
	f = fopen(self, "rb");
	CHECK(f);
	CHECK_INT(fseek(f, (long)s.config2, SEEK_SET), 0);
	CHECK_INT(fread(got, 1, sizeof(got), f), sizeof(got));
	fclose(f);
	CHECK(!memcmp(want, got, sizeof(got)));
	smp.rate_default = true;
	smp.freq = 1000;
	pm_evt_attr(&s, &smp, &a);
	CHECK_INT(a.type, 8);
	CHECK(a.config1 == (uint64_t)(uintptr_t)s.path);
	CHECK_INT(a.config2, s.config2);
	CHECK_INT(a.config, 0); /* no retprobe bit */
	CHECK_INT(a.sample_period, 1);

	if (expect_error("uretprobe:/bin/true:main",
			 "cannot probe 'uretprobe:/bin/true:main': return probes are refused: a "
			 "uretprobe replaces the return address on the stack, which Go's stack "
			 "copying and traceback do not expect (crashes, broken stacks); probe the "
			 "function's entry with uprobe:BINARY:SYMBOL"))
		return PM_FAIL;
	snprintf(text, sizeof(text), "uprobe:%s:pm_test_probe_target%%return", self);
	CHECK_INT(pm_evt_parse(text, &s, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "return probes are refused"));
	if (expect_error("uprobe:/nonexistent/prog:main.main",
			 "cannot probe 'uprobe:/nonexistent/prog:main.main': binary "
			 "'/nonexistent/prog': No such file or directory") ||
	    expect_error("uprobe:main.main", "bad uprobe 'uprobe:main.main' (expected "
					     "uprobe:BINARY:SYMBOL)"))
		return PM_FAIL;
	snprintf(text, sizeof(text), "uprobe:%s:no_such_function_here", self);
	CHECK_INT(pm_evt_parse(text, &s, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "no function 'no_such_function_here' in "));

	/* Go names through gopclntab */
	if (access(go, R_OK))
		SKIP("fixture %s missing (scripts/fixtures.sh)", go);
	snprintf(text, sizeof(text), "uprobe:%s:main.burn4", go);
	if (pm_evt_parse(text, &s, err, sizeof(err))) {
		fprintf(stderr, "  %s\n", err);
		return PM_FAIL;
	}
	CHECK(s.config2 > 0);
	snprintf(text, sizeof(text), "uprobe:%s:main.main", go);
	CHECK_INT(pm_evt_parse(text, &s, err, sizeof(err)), 0);
	snprintf(text, sizeof(text), "uprobe:%s:burn4", go);
	CHECK_INT(pm_evt_parse(text, &s, err, sizeof(err)), -EINVAL);
	if (!strstr(err, "(did you mean 'main.burn4'")) {
		fprintf(stderr, "  %s\n", err);
		return PM_FAIL;
	}
	/* the uprobe PMU missing */
	setenv("PMUPROF_SYSFS", "/nonexistent", 1);
	CHECK_INT(pm_evt_parse(text, &s, err, sizeof(err)), -EINVAL);
	snprintf(text, sizeof(text), "%s/sys", fake_root);
	setenv("PMUPROF_SYSFS", text, 1);
	CHECK(strstr(err, "no uprobe PMU"));
	return PM_PASS;
}

/* -e a,b,c: the list, and what is not one */
static int t_list(void)
{
	struct pm_evt_spec s[PM_EVT_MAX];
	char err[600];
	size_t n = 99;
	static const struct {
		const char *text, *err;
	} bad[] = {
		{ "cpu-clock,,page-faults", "empty event name in 'cpu-clock,,page-faults'" },
		{ ",cpu-clock", "empty event name in ',cpu-clock'" },
		{ "cpu-clock,", "empty event name in 'cpu-clock,'" },
		{ "", "empty event name in ''" },
		{ "cpu-clock,cpu-clock", "event 'cpu-clock' given twice in 'cpu-clock,cpu-clock'" },
		{ "page-faults,faults", "event 'page-faults' given twice in 'page-faults,faults'" },
		{ "cpu-clock,task-clock,page-faults,minor-faults,major-faults,context-switches,"
		  "cpu-migrations,alignment-faults,emulation-faults",
		  "too many events in 'cpu-clock,task-clock,page-faults,minor-faults,major-faults,c"
		  "': at most 8 in one recording" },
		{ "cpu-clock,cyclez", "unknown event 'cyclez' (did you mean 'cycles'?)" },
	};

	fake_dirs();
	CHECK_INT(pm_evt_parse_list("cpu-clock", s, PM_EVT_MAX, &n, err, sizeof(err)), 0);
	CHECK_INT(n, 1);
	CHECK_STR(s[0].name, "cpu-clock");
	CHECK_INT(pm_evt_parse_list("instructions,cache-misses,branch-misses", s, PM_EVT_MAX, &n,
				    err, sizeof(err)),
		  0);
	CHECK_INT(n, 3);
	CHECK_STR(s[0].name, "instructions");
	CHECK_STR(s[1].name, "cache-misses");
	CHECK_STR(s[2].name, "branch-misses");
	/* commas inside a PMU's terms do not separate events */
	CHECK_INT(pm_evt_parse_list("cpu/event=0x3c,umask=0x00/,page-faults:u,cpu/event=1,edge/k", s,
				    PM_EVT_MAX, &n, err, sizeof(err)),
		  0);
	CHECK_INT(n, 3);
	CHECK_STR(s[0].name, "cpu/event=0x3c,umask=0x00/");
	CHECK_INT(s[0].config, 0x3c);
	CHECK_STR(s[1].name, "page-faults");
	CHECK(s[1].exclude_kernel);
	CHECK_INT(s[2].config, 1 | (1u << 18));
	CHECK(s[2].exclude_user);
	/* nor a per-event rate's */
	CHECK_INT(pm_evt_parse_list("cpu-clock/period=100000/,sched:sched_switch", s, PM_EVT_MAX,
				    &n, err, sizeof(err)),
		  0);
	CHECK_INT(n, 2);
	CHECK_INT(s[0].period, 100000);
	CHECK_INT(s[1].type, PERF_TYPE_TRACEPOINT);
	CHECK_INT(s[1].config, 314);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		CHECK_INT(pm_evt_parse_list(bad[i].text, s, PM_EVT_MAX, &n, err, sizeof(err)),
			  -EINVAL);
		CHECK_INT(n, 0);
		if (strcmp(err, bad[i].err)) {
			fprintf(stderr, "  '%s': got '%s', want '%s'\n", bad[i].text, err, bad[i].err);
			return PM_FAIL;
		}
	}
	/* the CPU's PMU absent (a VM): a hardware event that never opens here */
	{
		char dir[160];

		snprintf(dir, sizeof(dir), "%s/notrace", fake_root);
		setenv("PMUPROF_SYSFS", dir, 1);
		CHECK_INT(pm_evt_parse_list("cpu/event=0x3c,umask=0x00/,cpu_core/event=1/u", s,
					    PM_EVT_MAX, &n, err, sizeof(err)),
			  0);
		CHECK_INT(n, 2);
		CHECK_STR(s[0].name, "cpu/event=0x3c,umask=0x00/");
		CHECK(s[0].absent && s[0].hardware);
		CHECK(s[1].absent && s[1].hardware && s[1].exclude_kernel);
		/* ... whose terms are checked for their spelling (fuzz-evt found a newline) */
		CHECK_INT(pm_evt_parse("cpu/r\n/u", &s[0], err, sizeof(err)), -EINVAL);
		CHECK_STR(err, "bad term in 'cpu/r?/u' (expected PMU/term=value,.../)");
		CHECK_INT(pm_evt_parse("uncore/event=1/", &s[0], err, sizeof(err)), -EINVAL);
		CHECK_STR(err, "unknown event 'uncore'; run 'pmuprof list' to see the events here");
		snprintf(dir, sizeof(dir), "%s/sys", fake_root);
		setenv("PMUPROF_SYSFS", dir, 1);
		CHECK_INT(pm_evt_parse("cpu/event=0x3c/", &s[0], err, sizeof(err)), 0);
		CHECK(!s[0].absent);
	}
	/* a bracket in a Go generic's uprobe symbol keeps its comma (the symbol is unknown here) */
	CHECK_INT(pm_evt_parse_list("uprobe:/nonexistent/x:main.F[int,string],cpu-clock", s,
				    PM_EVT_MAX, &n, err, sizeof(err)),
		  -EINVAL);
	CHECK(strstr(err, "binary '/nonexistent/x'"));
	return PM_PASS;
}

/* A uprobe defined in (a fake) tracefs: the line written, the id read, the removal. */
static int t_uprobe_tracefs(void)
{
	struct pm_evt_spec s;
	char err[600] = "", text[4200], self[4096], path[256], want[4400], *data = NULL;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	uint64_t off;
	FILE *f;

	fake_dirs();
	CHECK(n > 0);
	self[n] = 0;
	snprintf(text, sizeof(text), "uprobe:%s:pm_test_probe_target", self);
	CHECK_INT(pm_evt_parse(text, &s, err, sizeof(err)), 0);
	off = s.config2;
	/* a probe left by a killed pmuprof (no such pid) is swept first */
	snprintf(path, sizeof(path), "%s/trace/uprobe_events", fake_root);
	f = fopen(path, "w");
	CHECK(f);
	fputs("p:pmuprof_999999999/p0 /bin/true:0x10\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "trace/events/pmuprof_%d/p1/id", (int)getpid());
	put(path, "1234\n");
	CHECK_INT(pm_evt_uprobe_define(&s, 1, err, sizeof(err)), 0);
	CHECK_INT(s.type, PERF_TYPE_TRACEPOINT);
	CHECK_INT(s.config, 1234);
	snprintf(want, sizeof(want), "pmuprof_%d/p1", (int)getpid());
	CHECK_STR(s.probe, want);
	pm_evt_uprobe_undefine(&s);
	CHECK_STR(s.probe, "");
	snprintf(path, sizeof(path), "%s/trace/uprobe_events", fake_root);
	CHECK(pm_read_file(path, &data, 1 << 16) > 0);
	snprintf(want, sizeof(want),
		 "p:pmuprof_999999999/p0 /bin/true:0x10\n-:pmuprof_999999999/p0\n"
		 "p:pmuprof_%d/p1 %s:0x%llx\n-:pmuprof_%d/p1\n",
		 (int)getpid(), self, (unsigned long long)off, (int)getpid());
	if (strcmp(data, want)) {
		fprintf(stderr, "  uprobe_events:\n%s  want:\n%s", data, want);
		free(data);
		return PM_FAIL;
	}
	free(data);
	unlink(path);
	/* other events: nothing to do */
	CHECK_INT(pm_evt_parse("cpu-clock", &s, err, sizeof(err)), 0);
	CHECK_INT(pm_evt_uprobe_define(&s, 0, err, sizeof(err)), 0);
	CHECK_INT(s.type, PERF_TYPE_SOFTWARE);
	/* no tracefs: -ENOENT, the PMU uprobe stays, and the reason says how to mount it */
	CHECK_INT(pm_evt_parse(text, &s, err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/notrace", fake_root);
	setenv("PMUPROF_TRACEFS", path, 1);
	CHECK_INT(pm_evt_uprobe_define(&s, 0, err, sizeof(err)), -ENOENT);
	snprintf(path, sizeof(path), "%s/trace", fake_root);
	setenv("PMUPROF_TRACEFS", path, 1);
	CHECK_STR(err, "tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)");
	CHECK_INT(s.type, 8);
	CHECK_STR(s.probe, "");
	/* tracefs refuses the probe (no uprobe_events here): the PMU uprobe stays */
	CHECK_INT(pm_evt_uprobe_define(&s, 0, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "cannot define it in "));
	CHECK_INT(s.type, 8);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "list", t_list },
	{ "uprobe_tracefs", t_uprobe_tracefs },
	{ "names", t_names },
	{ "modifiers", t_modifiers },
	{ "errors", t_errors },
	{ "attr_default", t_attr_default },
	{ "attr_period_kernel", t_attr_period_kernel },
	{ "strerror", t_strerror },
	{ "unsupported", t_unsupported },
	{ "fail_open_hook", t_fail_open_hook },
	{ "live_hardware", t_live_hardware },
	{ "cache", t_cache },
	{ "builtin_list", t_builtin_list },
	{ "pmu_terms", t_pmu_terms },
	{ "event_terms", t_event_terms },
	{ "tracepoint", t_tracepoint },
	{ "uprobe", t_uprobe },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "events", tests);
}
