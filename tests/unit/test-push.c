/*
 * Unit tests for lib/agent/push, against a local HTTP server
 * (tests/e2e/httpsink.py, forked on a free port): what each backend
 * receives (Pyroscope's query, OTLP's headers and gzip'd body, the
 * directory's files and rotation); an outage (503, connections closed)
 * then recovery: every interval arrives exactly once, in order, with one
 * line per backend and cause; a 400: one line, no retry; Retry-After
 * honoured; a hung backend does not hold the others; a restart of the
 * sender and spool pushes nothing twice.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "agent/meta.h"
#include "agent/push.h"
#include "agent/spool.h"
#include "base/util.h"
#include "test.h"

static char dir[] = "/tmp/pmuprof-test-push.XXXXXX";
static char err[256];
static pid_t sink_pid;
static int sink_port;
static char sink_dir[600];
static int sink_seen; /* records read by earlier tests */

/*
 * Fast backoff, so that the outages of the tests take seconds; a long
 * timeout, so that a loaded machine (a slow python3) times nothing out
 * but the hang test's requests, which have their own.
 */
static const struct pm_push_opts fast = { .backoff_base_ms = 100,
					  .backoff_cap_ms = 400,
					  .connect_timeout_ms = 10000,
					  .timeout_ms = 10000 };
static const struct pm_push_opts short_timeout = { .backoff_base_ms = 100,
						   .backoff_cap_ms = 400,
						   .connect_timeout_ms = 1000,
						   .timeout_ms = 1000 };

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int sink_start(void)
{
	const char *d = pm_test_tmp_path(dir, sizeof(dir), "sink");
	char port[700];

	if (!d || mkdir(d, 0700) < 0)
		return -1;
	snprintf(sink_dir, sizeof(sink_dir), "%s", d);
	snprintf(port, sizeof(port), "%s/port", sink_dir);
	sink_pid = fork();
	if (sink_pid == 0) {
		/* it goes with this test, however this test ends */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		/* Debian's: a python3 shim first on PATH (pyenv) takes ~2 s to start */
		if (access("/usr/bin/python3", X_OK) == 0)
			execl("/usr/bin/python3", "python3", "tests/e2e/httpsink.py", sink_dir,
			      (char *)NULL);
		execlp("python3", "python3", "tests/e2e/httpsink.py", sink_dir, (char *)NULL);
		_exit(127);
	}
	/* python3's start: ~50 ms idle, seconds on a loaded machine */
	for (int i = 0; i < 400; i++) {
		long v;

		if (pm_read_long(port, &v) == 0) {
			sink_port = (int)v;
			return 0;
		}
		int st;

		if (waitpid(sink_pid, &st, WNOHANG) == sink_pid) {
			sink_pid = 0;
			return WIFEXITED(st) && WEXITSTATUS(st) == 127 ? -2
								       : -1; /* -2: no python3 */
		}
		sleep_ms(50);
	}
	return -1;
}

static void sink_stop(void)
{
	if (sink_pid > 0) {
		kill(sink_pid, SIGTERM);
		waitpid(sink_pid, NULL, 0);
	}
}

/* GET /_control?@query: 0 when the sink took it. */
static int control(const char *query)
{
	char url[512];
	CURL *c = curl_easy_init();
	long status = 0;
	FILE *null = fopen("/dev/null", "w");

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/_control?%s", sink_port, query);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, null);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	fclose(null);
	return status == 200 ? 0 : -1;
}

static char *url(void)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "http://127.0.0.1:%d/", sink_port);
	return buf;
}

/* --- the sink's records --- */

struct rec {
	char path[64], query[1024], ctype[64], cenc[32];
	int status;
	double time;
	char *body;
	long blen;
};

/* The JSON string (or number, as text) of @key in @js, into @out; "" when absent. */
static void jget(const char *js, const char *key, char *out, size_t n)
{
	char pat[80];
	const char *p;
	size_t o = 0;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	out[0] = 0;
	p = strstr(js, pat);
	if (!p)
		return;
	p += strlen(pat);
	if (*p == '"')
		for (p++; *p && *p != '"' && o + 1 < n; p++)
			out[o++] = *p == '\\' && p[1] ? *++p : *p;
	else
		for (; *p && *p != ',' && *p != '}' && o + 1 < n; p++)
			out[o++] = *p;
	out[o] = 0;
}

/* The records since the last call (the sink outlives the tests), into @r; how many. */
static int records(struct rec *r, int max)
{
	int n = 0;

	for (; n < max; n++) {
		char path[700], *js = NULL, num[32];

		snprintf(path, sizeof(path), "%s/%06d.json", sink_dir, sink_seen + n + 1);
		if (pm_read_file(path, &js, 1 << 20) < 0)
			break;
		memset(&r[n], 0, sizeof(r[n]));
		jget(js, "path", r[n].path, sizeof(r[n].path));
		jget(js, "query", r[n].query, sizeof(r[n].query));
		jget(js, "content-type", r[n].ctype, sizeof(r[n].ctype));
		jget(js, "content-encoding", r[n].cenc, sizeof(r[n].cenc));
		jget(js, "status", num, sizeof(num));
		r[n].status = atoi(num);
		jget(js, "time", num, sizeof(num));
		r[n].time = atof(num);
		free(js);
		snprintf(path, sizeof(path), "%s/%06d.body", sink_dir, sink_seen + n + 1);
		r[n].blen = pm_read_file(path, &r[n].body, 1 << 20);
	}
	sink_seen += n;
	return n;
}

static void free_records(struct rec *r, int n)
{
	for (int i = 0; i < n; i++)
		free(r[i].body);
}

/* --- stderr, captured to count the lines told --- */

static int saved_fd = -1;

static void cap_begin(void)
{
	const char *path = pm_test_tmp_path(dir, sizeof(dir), "stderr");
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);

	fflush(stderr);
	saved_fd = dup(2);
	dup2(fd, 2);
	close(fd);
}

/* The text captured since cap_begin() (echoed to the real stderr); free() it. */
static char *cap_end(void)
{
	char *text = NULL;

	if (saved_fd < 0)
		return xstrdup("");
	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	saved_fd = -1;
	if (pm_read_file(pm_test_tmp_path(dir, sizeof(dir), "stderr"), &text, 1 << 20) < 0)
		return xstrdup("");
	fputs(text, stderr);
	return text;
}

/* The lines of @text that hold @a and (unless NULL) @b. */
static int count_lines(const char *text, const char *a, const char *b)
{
	int n = 0;

	for (const char *l = text; *l;) {
		const char *nl = strchr(l, '\n');
		char *line = nl ? xstrndup(l, (size_t)(nl - l)) : xstrdup(l);

		n += strstr(line, a) && (!b || strstr(line, b));
		free(line);
		l = nl ? nl + 1 : l + strlen(l);
	}
	return n;
}

/* --- intervals --- */

static void meta(struct pm_agent_meta *m, uint64_t seq, const char *service)
{
	memset(m, 0, sizeof(*m));
	m->pid = 4242;
	m->seq = seq;
	m->start_ns = (1765000000ULL + 10 * seq) * 1000000000ULL;
	m->duration_ns = 10000000000ULL;
	pm_meta_set(m->service, sizeof(m->service), service);
	pm_meta_set(m->exe_name, sizeof(m->exe_name), "srv");
	pm_meta_set(m->host, sizeof(m->host), "h1");
}

static int put(struct pm_spool *sp, uint64_t seq, const char *service, size_t len)
{
	struct pm_agent_meta m;
	char body[2048];

	meta(&m, seq, service);
	memset(body, 'z', sizeof(body));
	snprintf(body, sizeof(body), "PPROF-%" PRIu64 ";", seq);
	return pm_spool_put(sp, &m, body, PM_MIN(len, sizeof(body)), err, sizeof(err));
}

/* The stub OTLP encoder: "otlp pid=P seq=S\n" and the pprof bytes. */
static int stub_encode(const struct pm_agent_meta *m, const uint8_t *pprof, size_t len,
		       uint8_t **body, size_t *blen, char *e, size_t elen)
{
	char head[64];
	int n = snprintf(head, sizeof(head), "otlp pid=%" PRId32 " seq=%" PRIu64 "\n", m->pid,
			 m->seq);

	(void)e;
	(void)elen;
	*body = xmalloc((size_t)n + len);
	memcpy(*body, head, (size_t)n);
	memcpy(*body + n, pprof, len);
	*blen = (size_t)n + len;
	return 0;
}

/* @in gunzip'd into @out (@n bytes at most): its length, or -1. */
static long gunzip(const char *in, long len, char *out, size_t n)
{
	z_stream z;
	long got;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return -1;
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)out;
	z.avail_out = (uInt)n - 1;
	got = inflate(&z, Z_FINISH) == Z_STREAM_END ? (long)z.total_out : -1;
	inflateEnd(&z);
	if (got >= 0)
		out[got] = 0;
	return got;
}

/* The seq a record's body names (PPROF-S; or OTLP's "seq=S"), -1 when none. */
static long rec_seq(const struct rec *r)
{
	char plain[4096];
	const char *s = r->body;

	if (!s)
		return -1;
	if (!strcmp(r->cenc, "gzip")) {
		if (gunzip(r->body, r->blen, plain, sizeof(plain)) < 0)
			return -1;
		s = strstr(plain, "seq=");
		return s ? atol(s + 4) : -1;
	}
	return !strncmp(s, "PPROF-", 6) ? atol(s + 6) : -1;
}

static struct pm_spool *open_spool(const char *name, const struct pm_push_backend *b, unsigned n)
{
	const char *names[PM_SPOOL_MAX_BACKENDS];
	struct pm_spool *sp = NULL;

	for (unsigned i = 0; i < n; i++)
		names[i] = pm_push_name(b[i].kind);
	if (pm_spool_open(&sp, pm_test_tmp_path(dir, sizeof(dir), name), 0, names, n, err,
			  sizeof(err)))
		fprintf(stderr, "  %s\n", err);
	return sp;
}

/* Each backend receives what its server takes, in order; the spool empties. */
static int test_deliver(void)
{
	char out[600];
	struct pm_push_backend b[3] = {
		{ PM_PUSH_PYROSCOPE, url(), 0, NULL, NULL },
		{ PM_PUSH_OTLP, url(), 0, stub_encode, NULL },
		{ PM_PUSH_DIR, out, 0, NULL, NULL },
	};
	struct pm_spool *sp;
	struct pm_push *p;
	struct pm_push_stats st;
	struct rec r[16];
	char plain[4096], path[700];
	int n, npy = 0, notlp = 0;

	snprintf(out, sizeof(out), "%s", pm_test_tmp_path(dir, sizeof(dir), "out"));
	CHECK(control("reset=1") == 0);
	sp = open_spool("deliver", b, 3);
	CHECK(sp);
	CHECK_INT(pm_push_new(&p, sp, b, 3, &fast, err, sizeof(err)), 0);
	CHECK_INT(put(sp, 0, "checkout", 100), 0);
	CHECK_INT(put(sp, 1, "checkout", 100), 0);
	CHECK_INT(put(sp, 2, "a b/c{d}", 100), 0); /* hostile: a name, a label, a file */
	CHECK_INT(pm_push_run(p, 5000), 0);
	n = records(r, 16);
	CHECK_INT(n, 6);
	for (int i = 0; i < n; i++) {
		CHECK_INT(r[i].status, 200);
		if (!strcmp(r[i].path, "/ingest")) {
			char want[512];
			uint64_t from = 1765000000ULL + 10 * (uint64_t)npy;

			CHECK_STR(r[i].ctype, "application/octet-stream");
			CHECK_INT(r[i].blen, 100);
			CHECK_INT(rec_seq(&r[i]), npy);
			snprintf(want, sizeof(want),
				 "name=%s%%7Bhost_name%%3Dh1%%2Cprocess_pid%%3D4242%%2C"
				 "process_executable_name%%3Dsrv%%7D&from=%" PRIu64
				 "&until=%" PRIu64 "&format=pprof&spyName=pmuprof",
				 npy == 2 ? "a_b_c_d_" : "checkout", from, from + 10);
			CHECK_STR(r[i].query, want);
			npy++;
		} else {
			CHECK_STR(r[i].path, "/v1development/profiles");
			CHECK_STR(r[i].ctype, "application/x-protobuf");
			CHECK_STR(r[i].cenc, "gzip");
			CHECK_INT(gunzip(r[i].body, r[i].blen, plain, sizeof(plain)), 20 + 100);
			CHECK(!strncmp(plain, "otlp pid=4242 seq=", 18) &&
			      atol(plain + 18) == notlp);
			CHECK(!strncmp(plain + 20, "PPROF-", 6));
			notlp++;
		}
	}
	free_records(r, n);
	CHECK_INT(npy, 3);
	/* the directory: one file per interval, named by service, pid and start */
	CHECK_INT(pm_test_count_entries(out), 3);
	snprintf(path, sizeof(path), "%s/checkout-4242-1765000010.pb.gz", out);
	{
		char *data = NULL;

		CHECK_INT(pm_read_file(path, &data, 4096), 100);
		CHECK(!strncmp(data, "PPROF-1;", 8));
		free(data);
	}
	snprintf(path, sizeof(path), "%s/a_b_c_d_-4242-1765000020.pb.gz", out);
	CHECK(access(path, F_OK) == 0);
	for (unsigned i = 0; i < 3; i++) {
		pm_push_get_stats(p, i, &st);
		CHECK_INT(st.sent, 3);
		CHECK_INT(st.requests, 3);
		CHECK_INT(st.retries + st.dropped, 0);
	}
	CHECK_INT(pm_spool_pending(sp, -1), 0);
	CHECK_INT(pm_test_count_entries(pm_spool_dir(sp)), 0);
	pm_push_free(p);
	pm_spool_close(sp);
	return PM_PASS;
}

/* @n records of @path answered 200: their seqs strictly rising from 0, each once. */
static int check_once_in_order(const struct rec *r, int n, const char *path, int want)
{
	int got = 0;

	for (int i = 0; i < n; i++) {
		if (strcmp(r[i].path, path) || r[i].status != 200)
			continue;
		if (rec_seq(&r[i]) != got) {
			fprintf(stderr,
				"  %s: record %d has seq %ld, expected %d (%ld bytes: %.10s)\n",
				path, i, rec_seq(&r[i]), got, r[i].blen,
				r[i].body ? r[i].body : "");
			return -1;
		}
		got++;
	}
	if (got != want)
		fprintf(stderr, "  %s: %d delivered, expected %d\n", path, got, want);
	return got == want ? 0 : -1;
}

static int count_path(const struct rec *r, int n, const char *path, int status)
{
	int c = 0;

	for (int i = 0; i < n; i++)
		c += !strcmp(r[i].path, path) && r[i].status == status;
	return c;
}

/* Wait until backend @i has sent @want (or 10 s). */
static void wait_sent(struct pm_push *p, unsigned i, uint64_t want)
{
	struct pm_push_stats st;

	for (int k = 0; k < 200; k++) {
		pm_push_get_stats(p, i, &st);
		if (st.sent >= want)
			return;
		sleep_ms(50);
	}
}

/* An outage (503 on one, connections closed on the other), then up: once each, in order. */
static int test_outage(void)
{
	struct pm_push_backend b[2] = {
		{ PM_PUSH_PYROSCOPE, url(), 0, NULL, NULL },
		{ PM_PUSH_OTLP, url(), 0, stub_encode, NULL },
	};
	struct pm_spool *sp;
	struct pm_push *p;
	struct pm_push_stats st;
	struct rec r[200];
	int n, lines[3];
	char *text;

	CHECK(control("reset=1") == 0);
	sp = open_spool("outage", b, 2);
	CHECK(sp);
	CHECK_INT(pm_push_new(&p, sp, b, 2, &fast, err, sizeof(err)), 0);
	cap_begin();
	for (int i = 0; i < 4; i++)
		put(sp, (uint64_t)i, "checkout", 300);
	/* the outage: 1.5 s from now, the first request the first to see it */
	CHECK(control("path=/ingest&status=503&for=1.5") == 0);
	CHECK(control("path=/v1development&drop=1&for=1.5") == 0);
	CHECK_INT(pm_push_start(p), 0);
	sleep_ms(500);
	for (int i = 4; i < 8; i++) {
		put(sp, (uint64_t)i, "checkout", 300);
		pm_push_kick(p);
	}
	wait_sent(p, 0, 8);
	wait_sent(p, 1, 8);
	pm_push_stop(p, 0);
	text = cap_end();
	lines[0] = count_lines(text, "pyroscope", "HTTP 503");
	lines[1] = count_lines(text, "otlp", "retrying");
	lines[2] = count_lines(text, "delivering again", NULL);
	free(text);
	CHECK_INT(lines[0], 1);
	/* closed connections: curl's "empty reply" or "recv failure", each told once */
	CHECK(lines[1] >= 1 && lines[1] <= 2);
	CHECK_INT(lines[2], 2);
	n = records(r, 200);
	CHECK(check_once_in_order(r, n, "/ingest", 8) == 0);
	CHECK(check_once_in_order(r, n, "/v1development/profiles", 8) == 0);
	CHECK(count_path(r, n, "/ingest", 503) >= 1);
	CHECK(count_path(r, n, "/v1development/profiles", 0) >= 1);
	/* backoff, not a storm: 1.5 s at >= 0..400 ms a try */
	CHECK(count_path(r, n, "/ingest", 503) < 40);
	pm_push_get_stats(p, 0, &st);
	CHECK_INT(st.sent, 8);
	CHECK_INT(st.retries, count_path(r, n, "/ingest", 503));
	CHECK_INT(st.failing, 0);
	free_records(r, n);
	CHECK_INT(pm_spool_pending(sp, -1), 0);
	pm_push_free(p);
	pm_spool_close(sp);
	return PM_PASS;
}

/* The answer's reader of the test: "R<n>" rejected n, anything else nothing. */
static int64_t stub_answer(const uint8_t *body, size_t len, char *msg, size_t msglen)
{
	snprintf(msg, msglen, "stub");
	return len >= 2 && body[0] == 'R' ? body[1] - '0' : 0;
}

/*
 * A 200 that says some items were rejected (OTLP's partial success): each
 * interval sent once, not retried, the rejected counted, one line.
 */
static int test_partial(void)
{
	struct pm_push_backend b[1] = { { PM_PUSH_OTLP, url(), 0, stub_encode, stub_answer } };
	struct pm_spool *sp;
	struct pm_push *p;
	struct pm_push_stats st;
	struct rec r[64];
	int n, lines;
	char *text;

	CHECK(control("reset=1") == 0);
	CHECK(control("path=/v1development&body=5232") == 0); /* "R2" */
	sp = open_spool("partial", b, 1);
	CHECK(sp);
	CHECK_INT(pm_push_new(&p, sp, b, 1, &fast, err, sizeof(err)), 0);
	for (int i = 0; i < 3; i++)
		put(sp, (uint64_t)i, "checkout", 100);
	cap_begin();
	CHECK_INT(pm_push_run(p, 5000), 0);
	text = cap_end();
	lines = count_lines(text, "2 profiles rejected", "stub");
	free(text);
	CHECK_INT(lines, 1);
	pm_push_get_stats(p, 0, &st);
	CHECK_INT(st.sent, 3);
	CHECK_INT(st.rejected, 6);
	CHECK_INT(st.retries, 0);
	n = records(r, 64);
	CHECK(check_once_in_order(r, n, "/v1development/profiles", 3) == 0);
	free_records(r, n);
	CHECK_INT(pm_spool_pending(sp, -1), 0);
	pm_push_free(p);
	pm_spool_close(sp);
	CHECK(control("reset=1") == 0);
	return PM_PASS;
}

/* A 400: one line per backend, each interval tried once, dropped and counted. */
static int test_reject(void)
{
	struct pm_push_backend b[2] = {
		{ PM_PUSH_PYROSCOPE, url(), 0, NULL, NULL },
		{ PM_PUSH_OTLP, url(), 0, stub_encode, NULL },
	};
	struct pm_spool *sp;
	struct pm_push *p;
	struct pm_push_stats st;
	struct rec r[64];
	int n, lines[3];
	char *text;

	CHECK(control("reset=1") == 0);
	CHECK(control("status=400") == 0);
	sp = open_spool("reject", b, 2);
	CHECK(sp);
	CHECK_INT(pm_push_new(&p, sp, b, 2, &fast, err, sizeof(err)), 0);
	for (int i = 0; i < 5; i++)
		put(sp, (uint64_t)i, "checkout", 100);
	cap_begin();
	CHECK_INT(pm_push_run(p, 5000), 0);
	text = cap_end();
	lines[0] = count_lines(text, "HTTP 400", "pyroscope");
	lines[1] = count_lines(text, "HTTP 400", "otlp");
	lines[2] = count_lines(text, "HTTP", NULL);
	free(text);
	CHECK_INT(lines[0], 1);
	CHECK_INT(lines[1], 1);
	CHECK_INT(lines[2], 2);
	n = records(r, 64);
	free_records(r, n);
	for (int i = 0; n != 10 && i < n; i++)
		fprintf(stderr, "  record %d: %s %d seq %ld\n", i, r[i].path, r[i].status,
			rec_seq(&r[i]));
	CHECK_INT(n, 10); /* no retry */
	CHECK_INT(count_path(r, n, "/ingest", 400), 5);
	for (unsigned i = 0; i < 2; i++) {
		pm_push_get_stats(p, i, &st);
		CHECK_INT(st.dropped, 5);
		CHECK_INT(st.sent + st.retries, 0);
	}
	CHECK_INT(pm_spool_pending(sp, -1), 0);
	pm_push_free(p);
	pm_spool_close(sp);
	return PM_PASS;
}

/* A 503 with Retry-After: 1 waits that second, though the backoff's base is 100 ms. */
static int test_retry_after(void)
{
	struct pm_push_backend b[1] = { { PM_PUSH_PYROSCOPE, url(), 0, NULL, NULL } };
	struct pm_spool *sp;
	struct pm_push *p;
	struct rec r[16];
	int n;

	CHECK(control("reset=1") == 0);
	CHECK(control("status=503&retry_after=1&times=1") == 0);
	sp = open_spool("retryafter", b, 1);
	CHECK(sp);
	CHECK_INT(pm_push_new(&p, sp, b, 1, &fast, err, sizeof(err)), 0);
	put(sp, 0, "checkout", 100);
	cap_begin();
	CHECK_INT(pm_push_run(p, 5000), 0);
	free(cap_end());
	n = records(r, 16);
	free_records(r, n);
	CHECK_INT(n, 2);
	CHECK_INT(r[0].status, 503);
	CHECK_INT(r[1].status, 200);
	CHECK(r[1].time - r[0].time >= 0.95);
	pm_push_free(p);
	pm_spool_close(sp);
	return PM_PASS;
}

/* A hung backend (timed out, retried) does not hold the others back. */
static int test_hang(void)
{
	struct pm_push_backend b[2] = {
		{ PM_PUSH_PYROSCOPE, url(), 0, NULL, NULL },
		{ PM_PUSH_OTLP, url(), 0, stub_encode, NULL },
	};
	struct pm_spool *sp;
	struct pm_push *p;
	struct pm_push_stats py, ot;
	struct rec r[64];
	char *text;
	int n;
	double t0;

	CHECK(control("reset=1") == 0);
	sp = open_spool("hang", b, 2);
	CHECK(sp);
	CHECK_INT(pm_push_new(&p, sp, b, 2, &short_timeout, err, sizeof(err)), 0);
	for (int i = 0; i < 3; i++)
		put(sp, (uint64_t)i, "checkout", 100);
	cap_begin();
	t0 = pm_wall_ns() / 1e9;
	CHECK(control("path=/v1development&hang=5&for=3") == 0);
	CHECK_INT(pm_push_start(p), 0);
	wait_sent(p, 0, 3);
	pm_push_get_stats(p, 0, &py);
	pm_push_get_stats(p, 1, &ot);
	CHECK_INT(py.sent, 3);
	/* while the other hung (3 s): it still has none */
	CHECK_INT(ot.sent, 0);
	CHECK(pm_wall_ns() / 1e9 < t0 + 3);
	wait_sent(p, 1, 3);
	pm_push_stop(p, 0);
	text = cap_end();
	n = count_lines(text, "otlp", "retrying");
	free(text);
	CHECK_INT(n, 1);
	pm_push_get_stats(p, 1, &ot);
	CHECK_INT(ot.sent, 3);
	CHECK(ot.retries >= 1);
	/* (the hung requests are answered, and recorded, later: no count of them here) */
	free_records(r, records(r, 64));
	pm_push_free(p);
	pm_spool_close(sp);
	return PM_PASS;
}

/* A sender stopped mid-outage and a spool reopened: nothing pushed twice, nothing lost. */
static int test_restart(void)
{
	struct pm_push_backend b[1] = { { PM_PUSH_PYROSCOPE, url(), 0, NULL, NULL } };
	struct pm_spool *sp;
	struct pm_push *p;
	struct rec r[64];
	int n, ok;

	CHECK(control("reset=1") == 0);
	sp = open_spool("restart", b, 1);
	CHECK(sp);
	CHECK_INT(pm_push_new(&p, sp, b, 1, &fast, err, sizeof(err)), 0);
	put(sp, 0, "checkout", 100);
	put(sp, 1, "checkout", 100);
	CHECK_INT(pm_push_run(p, 5000), 0);
	CHECK(control("status=503") == 0);
	put(sp, 2, "checkout", 100);
	put(sp, 3, "checkout", 100);
	cap_begin();
	CHECK_INT(pm_push_start(p), 0);
	sleep_ms(300);
	pm_push_stop(p, 0);
	free(cap_end());
	pm_push_free(p);
	pm_spool_close(sp);

	CHECK(control("reset=1") == 0);
	sp = open_spool("restart", b, 1);
	CHECK(sp);
	CHECK_INT(pm_spool_pending(sp, 0), 2);
	CHECK_INT(pm_push_new(&p, sp, b, 1, &fast, err, sizeof(err)), 0);
	CHECK_INT(pm_push_run(p, 5000), 0);
	n = records(r, 64);
	ok = check_once_in_order(r, n, "/ingest", 4) == 0;
	free_records(r, n);
	CHECK(ok);
	pm_push_free(p);
	pm_spool_close(sp);
	return PM_PASS;
}

/* --dir-max: the oldest files go, the newest stay; files not the backend's stay. */
static int test_dir_rotate(void)
{
	char out[600], path[700];
	struct pm_push_backend b[1] = { { PM_PUSH_DIR, out, 2500, NULL, NULL } };
	struct pm_spool *sp;
	struct pm_push *p;
	struct pm_push_stats st;
	FILE *f;

	snprintf(out, sizeof(out), "%s", pm_test_tmp_path(dir, sizeof(dir), "rot"));
	CHECK(mkdir(out, 0700) == 0);
	snprintf(path, sizeof(path), "%s/notes.txt", out);
	f = fopen(path, "w");
	CHECK(f);
	fputs("mine\n", f);
	fclose(f);
	sp = open_spool("rotate", b, 1);
	CHECK(sp);
	CHECK_INT(pm_push_new(&p, sp, b, 1, &fast, err, sizeof(err)), 0);
	for (int i = 0; i < 5; i++)
		put(sp, (uint64_t)i, "svc", 1000);
	CHECK_INT(pm_push_run(p, 5000), 0);
	pm_push_get_stats(p, 0, &st);
	CHECK_INT(st.sent, 5);
	CHECK_INT(st.rotated, 3);
	CHECK_INT(pm_test_count_entries(out), 3);
	CHECK(access(path, F_OK) == 0);
	snprintf(path, sizeof(path), "%s/svc-4242-1765000040.pb.gz", out);
	CHECK(access(path, F_OK) == 0);
	snprintf(path, sizeof(path), "%s/svc-4242-1765000030.pb.gz", out);
	CHECK(access(path, F_OK) == 0);
	pm_push_free(p);
	pm_spool_close(sp);
	return PM_PASS;
}

/* Targets checked at setup: a scheme curl would take but we do not, no encoder. */
static int test_setup_errors(void)
{
	struct pm_push_backend ftp[1] = { { PM_PUSH_PYROSCOPE, "ftp://x/", 0, NULL, NULL } };
	struct pm_push_backend noenc[1] = { { PM_PUSH_OTLP, "http://x/", 0, NULL, NULL } };
	struct pm_push *p;

	CHECK_INT(pm_push_new(&p, NULL, ftp, 1, NULL, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "http://"));
	CHECK_INT(pm_push_new(&p, NULL, noenc, 1, NULL, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "encoder"));
	return PM_PASS;
}

/* A test that fails while stderr is captured gets it back, with what it told. */
#define WRAP(fn)                   \
	static int wrap_##fn(void) \
	{                          \
		int rc = fn();     \
                                   \
		free(cap_end());   \
		return rc;         \
	}
WRAP(test_deliver)
WRAP(test_outage)
WRAP(test_reject)
WRAP(test_partial)
WRAP(test_retry_after)
WRAP(test_hang)
WRAP(test_restart)
WRAP(test_dir_rotate)
WRAP(test_setup_errors)

static const struct pm_test tests[] = {
	{ "deliver", wrap_test_deliver },
	{ "outage_once_in_order", wrap_test_outage },
	{ "reject_400_once", wrap_test_reject },
	{ "partial_success_counted", wrap_test_partial },
	{ "retry_after", wrap_test_retry_after },
	{ "hang_does_not_block", wrap_test_hang },
	{ "restart_no_duplicate", wrap_test_restart },
	{ "dir_rotate", wrap_test_dir_rotate },
	{ "setup_errors", wrap_test_setup_errors },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	char cmd[700];
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = sink_start();
	if (rc == -2) {
		printf("SKIP: push/all (no python3 for the test server)\n");
		return 0;
	}
	if (rc) {
		printf("FAIL: push/sink (tests/e2e/httpsink.py did not start)\n");
		sink_stop();
		return 1;
	}
	rc = pm_test_main(argc, argv, "push", tests);
	sink_stop();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (strcmp(dir + strlen(dir) - 6, "XXXXXX") != 0 && system(cmd) != 0)
		rc = 1;
	return rc;
}
