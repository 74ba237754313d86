/*
 * sink: the spool and the sender (sink.h).  (Interim: the spool alone.)
 */
#include "agent/sink.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "base/outfile.h"
#include "base/util.h"

struct pm_sink {
	const struct pm_agent_cfg *cfg;
};

int pm_sink_check(const struct pm_agent_cfg *cfg, char *err, size_t errlen)
{
	if (mkdir(cfg->spool, 0700) < 0 && errno != EEXIST) {
		pm_seterr(err, errlen, "cannot make spool '%s': %s", cfg->spool, strerror(errno));
		return -1;
	}
	return 0;
}

struct pm_sink *pm_sink_open_put(const struct pm_agent_cfg *cfg, char *err, size_t errlen)
{
	struct pm_sink *s = xcalloc(1, sizeof(*s));

	(void)err;
	(void)errlen;
	s->cfg = cfg;
	return s;
}

static int write_file(const char *path, const void *buf, size_t len)
{
	struct pm_outfile f;
	int rc = pm_outfile_open(&f, path, NULL);

	if (rc)
		return rc;
	rc = pm_write_all(f.fd, buf, len);
	if (rc) {
		pm_outfile_abort(&f);
		return rc;
	}
	return pm_outfile_commit(&f);
}

int pm_sink_put(struct pm_sink *s, const struct pm_agent_meta *m, const uint8_t *pprof,
		size_t len, char *err, size_t errlen)
{
	char *base = xasprintf("%s/%020" PRIu64 "-%d-%" PRIu64, s->cfg->spool, m->start_ns,
			       (int)m->pid, m->seq);
	char *mp = xasprintf("%s.meta", base), *pp = xasprintf("%s.pb.gz", base);
	char *text = pm_meta_format(m);
	int rc = write_file(mp, text, strlen(text));

	if (!rc)
		rc = write_file(pp, pprof, len);
	if (rc)
		pm_seterr(err, errlen, "cannot write the spool: %s", strerror(-rc));
	free(text);
	free(mp);
	free(pp);
	free(base);
	return rc ? -1 : 0;
}

void pm_sink_close(struct pm_sink *s)
{
	free(s);
}

int pm_sink_sender_main(const struct pm_agent_cfg *cfg)
{
	while (!(cfg->stop && *cfg->stop)) {
		struct timespec ts = { 0, 200000000L };

		nanosleep(&ts, NULL);
	}
	return 0;
}
