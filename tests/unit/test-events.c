/* Unit tests for lib/events: the name table, modifiers, attrs, errors. */
#include "events.h"

#include "util.h"

#include "test.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

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
		/* default: user space only */
		CHECK(!s.exclude_user);
		CHECK(s.exclude_kernel);
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
		{ "cycles:p", false, true, 1 },    { "cycles:pp", false, true, 2 },
		{ "cycles:ppp", false, true, 3 },  { "cycles:upp", false, true, 2 },
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
	    expect_error("foo", "unknown event 'foo'; run 'perf list' to see events") ||
	    expect_error("sched:sched_switch",
			 "unknown modifier 's' in 'sched:sched_switch' (allowed: u, k, p)") ||
	    expect_error("r", "unknown event 'r'; run 'perf list' to see events") ||
	    expect_error("rxyz", "unknown event 'rxyz'; run 'perf list' to see events") ||
	    expect_error("r12345678901234567",
			 "unknown event 'r12345678901234567'; run 'perf list' to see events") ||
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
	CHECK_INT(a.read_format, 0);
	CHECK_INT(a.freq, 1);
	CHECK_INT(a.sample_freq, 999);
	CHECK_INT(a.sample_regs_user, 0x4001c0);
	CHECK_INT(a.sample_stack_user, 8192);
	CHECK_INT(a.disabled, 1);
	CHECK_INT(a.inherit, 1);
	CHECK_INT(a.enable_on_exec, 1);
	CHECK_INT(a.exclude_user, 0);
	CHECK_INT(a.exclude_kernel, 1);
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

static const struct pm_test tests[] = {
	{ "names", t_names },
	{ "modifiers", t_modifiers },
	{ "errors", t_errors },
	{ "attr_default", t_attr_default },
	{ "attr_period_kernel", t_attr_period_kernel },
	{ "strerror", t_strerror },
	{ "unsupported", t_unsupported },
	{ "fail_open_hook", t_fail_open_hook },
	{ "live_hardware", t_live_hardware },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "events", tests);
}
