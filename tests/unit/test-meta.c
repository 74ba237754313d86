/*
 * Unit tests for lib/agent/meta: an interval's resource as text and back,
 * hostile values (escapes, controls, '=' and newlines) kept on one line and
 * sanitized, bad text refused.
 */
#include <errno.h>
#include <string.h>

#include "agent/meta.h"
#include "base/util.h"
#include "test.h"

static void sample(struct pm_agent_meta *m)
{
	memset(m, 0, sizeof(*m));
	m->pid = 4242;
	m->seq = 7;
	m->start_ns = 1765000000000000000ULL;
	m->duration_ns = 10000000000ULL;
	pm_meta_set(m->service, sizeof(m->service), "checkout");
	pm_meta_set(m->exe_name, sizeof(m->exe_name), "srv");
	pm_meta_set(m->exe_path, sizeof(m->exe_path), "/opt/a=b%c/srv");
	pm_meta_set(m->comm, sizeof(m->comm), "srv");
	pm_meta_set(m->host, sizeof(m->host), "h1");
}

static int t_roundtrip(void)
{
	struct pm_agent_meta m, back;
	char *t;

	sample(&m);
	t = pm_meta_format(&m);
	CHECK_INT(pm_meta_parse(t, strlen(t), &back), 0);
	CHECK_INT(back.pid, 4242);
	CHECK_INT(back.seq, 7);
	CHECK(back.start_ns == m.start_ns && back.duration_ns == m.duration_ns);
	CHECK_STR(back.exe_path, "/opt/a=b%c/srv");
	CHECK_STR(back.service, "checkout");
	CHECK_STR(back.container_id, "");
	CHECK(memcmp(&m, &back, sizeof(m)) == 0);
	free(t);
	return PM_PASS;
}

static int t_hostile(void)
{
	struct pm_agent_meta m, back;
	char *t;

	sample(&m);
	pm_meta_set(m.comm, sizeof(m.comm), "a\nservice=evil\x1b[2J");
	CHECK(strchr(m.comm, '\n') == NULL && strchr(m.comm, 0x1b) == NULL);
	t = pm_meta_format(&m);
	CHECK_INT(pm_meta_parse(t, strlen(t), &back), 0);
	CHECK_STR(back.service, "checkout"); /* the comm did not make a line of its own */
	CHECK_STR(back.comm, m.comm);
	free(t);
	/* an escape written into the spool by hand comes back sanitized */
	CHECK_INT(pm_meta_parse("comm=x%1B%0Ay\n", 14, &back), 0);
	CHECK_STR(back.comm, "x??y");
	/* a long value is cut to its field */
	{
		static char big[3 * PM_META_STR];

		memset(big, 'a', sizeof(big) - 1);
		pm_meta_set(m.service, sizeof(m.service), big);
		CHECK_INT(strlen(m.service), PM_META_STR - 1);
	}
	return PM_PASS;
}

static int t_bad(void)
{
	struct pm_agent_meta m;

	CHECK_INT(pm_meta_parse("pid\n", 4, &m), -EINVAL);
	CHECK_INT(pm_meta_parse("pid=-1\n", 7, &m), -EINVAL);
	CHECK_INT(pm_meta_parse("pid=99999999999\n", 16, &m), -EINVAL);
	CHECK_INT(pm_meta_parse("seq=1x\n", 7, &m), -EINVAL);
	CHECK_INT(pm_meta_parse("comm=%4\n", 8, &m), -EINVAL);
	CHECK_INT(pm_meta_parse("comm=%zz\n", 9, &m), -EINVAL);
	CHECK_INT(pm_meta_parse("later_key=1\npid=3", 17, &m), 0);
	CHECK_INT(m.pid, 3);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "roundtrip", t_roundtrip },
	{ "hostile", t_hostile },
	{ "bad", t_bad },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "meta", tests);
}
