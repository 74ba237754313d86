/*
 * push: the spooled intervals sent to Pyroscope, an OpenTelemetry
 * Collector and a directory, through libcurl's multi interface (push.h).
 */
#include "agent/push.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/outfile.h"
#include "base/util.h"

#ifndef PMUPROF_VERSION
#define PMUPROF_VERSION "0"
#endif

#define RETRY_AFTER_MAX_MS 900000ULL /* 15 min */
#define IDLE_POLL_MS 1000 /* a put without a kick is seen this late at most */
#define RESP_MAX 4096 /* the answer's bytes kept: a message, or a partial success */
#define TOLD_MAX 16

enum state { B_IDLE, B_BUSY, B_WAIT };
enum verdict { V_OK, V_RETRY, V_DROP };

/* A file of the dir backend, for its rotation. */
struct dirfile {
	uint64_t start;
	uint64_t size;
	char *name;
};

struct backend {
	enum pm_push_kind kind;
	char *target;
	char *url; /* the endpoint: the target and its path */
	uint64_t dir_max;
	pm_push_encode_fn encode;
	pm_push_answer_fn answer;
	bool told_partial; /* its partial successes said (once) */
	unsigned idx;
	CURL *easy;
	struct curl_slist *hdrs;
	enum state state;
	uint64_t wake_ms; /* B_WAIT: when to try again */
	unsigned attempts;
	struct pm_spool_item item; /* in flight */
	uint8_t *body;		   /* owned, in flight (otlp) */
	size_t blen;
	char resp[RESP_MAX]; /* the response's first bytes, for the message */
	size_t rlen;
	char errbuf[CURL_ERROR_SIZE];
	char causes[TOLD_MAX][24]; /* the causes of retries told in this outage */
	unsigned ncauses;	   /* 0 while delivering */
	long told[TOLD_MAX];	   /* the statuses of drops told */
	unsigned ntold;
	struct pm_push_stats st;
	struct dirfile *files; /* dir: its files, oldest first, once scanned */
	size_t nfiles, fcap;
	uint64_t dir_bytes;
	bool scanned;
};

struct pm_push {
	struct pm_spool *sp;
	struct pm_push_opts o;
	CURLM *multi;
	struct backend b[PM_SPOOL_MAX_BACKENDS];
	unsigned nb;
	pthread_mutex_t lock; /* the stats and the stop request */
	/*
	 * A fork (pm_push_fork_begin()): asked, the thread parks in a wait
	 * on @cond between two steps, holding no lock of the allocator's,
	 * libcurl's or stdio's, until the fork is done.  (Under @lock.)
	 */
	pthread_cond_t cond;
	bool fork_wanted, parked, exited;
	pthread_t thread;
	bool started, stopping;
	uint64_t stop_at_ms;
	uint64_t rng;
};

const char *pm_push_name(enum pm_push_kind kind)
{
	switch (kind) {
	case PM_PUSH_PYROSCOPE:
		return "pyroscope";
	case PM_PUSH_OTLP:
		return "otlp";
	case PM_PUSH_DIR:
		return "dir";
	}
	return "unknown";
}

static uint64_t now_ms(void)
{
	return pm_now_ns() / 1000000;
}

/* A random number in [0, n] (xorshift64*: the jitter needs no more). */
static uint64_t rnd(struct pm_push *p, uint64_t n)
{
	p->rng ^= p->rng >> 12;
	p->rng ^= p->rng << 25;
	p->rng ^= p->rng >> 27;
	return n ? (p->rng * 0x2545F4914F6CDD1DULL) % (n + 1) : 0;
}

/*
 * The wait before attempt @attempt + 1: full jitter, a uniform wait in
 * [0, min(cap, base * 2^(attempt - 1))] (AWS's "exponential backoff and
 * jitter": retries of many agents spread out instead of coming back in
 * waves), or the server's Retry-After (@retry_s) when that is longer.
 */
static uint64_t backoff_ms(struct pm_push *p, unsigned attempt, uint64_t retry_s)
{
	unsigned shift = attempt ? PM_MIN(attempt - 1, 30u) : 0;
	uint64_t ceil = PM_MIN((uint64_t)p->o.backoff_cap_ms,
			       (uint64_t)p->o.backoff_base_ms << shift);
	uint64_t wait = rnd(p, ceil);

	if (retry_s)
		wait = PM_MAX(wait, PM_MIN(retry_s * 1000, RETRY_AFTER_MAX_MS));
	return wait;
}

/* --- telling the user: one line per backend and cause --- */

static void stats_add(struct pm_push *p, uint64_t *field, uint64_t n)
{
	pthread_mutex_lock(&p->lock);
	*field += n;
	pthread_mutex_unlock(&p->lock);
}

/*
 * A retried failure of cause @key: told once per outage (from the first
 * failure to the next success), and again for a cause new in it.
 */
static void tell_retry(struct backend *b, const char *key, const char *what)
{
	for (unsigned i = 0; i < b->ncauses; i++)
		if (!strcmp(b->causes[i], key))
			return;
	if (b->ncauses == TOLD_MAX)
		return;
	snprintf(b->causes[b->ncauses++], sizeof(b->causes[0]), "%s", key);
	pm_warn("%s: '%s': %s: the intervals stay spooled, retrying with backoff",
		pm_push_name(b->kind), b->target, what);
}

/* A drop for HTTP status (or -errno) @status: told once per status for the run. */
static void tell_drop(struct backend *b, long status, const char *what)
{
	for (unsigned i = 0; i < b->ntold; i++)
		if (b->told[i] == status)
			return;
	if (b->ntold < TOLD_MAX)
		b->told[b->ntold++] = status;
	pm_error("%s: '%s': %s: dropping the intervals it refuses (told once)",
		 pm_push_name(b->kind), b->target, what);
}

/*
 * A 2xx: what its answer says was rejected anyway (OTLP partial success:
 * not to be retried) counted, and said once.
 */
static void accepted(struct pm_push *p, struct backend *b)
{
	char msg[256];
	int64_t n;

	if (!b->answer || b->rlen >= sizeof(b->resp) - 1) /* none, or cut: nothing known */
		return;
	n = b->answer((const uint8_t *)b->resp, b->rlen, msg, sizeof(msg));
	if (n <= 0)
		return;
	stats_add(p, &b->st.rejected, (uint64_t)n);
	if (!b->told_partial)
		pm_warn("%s: '%s': accepted with %" PRId64 " profiles rejected: %s (told once; "
			"counted)", pm_push_name(b->kind), b->target, n, msg[0] ? msg : "no reason given");
	b->told_partial = true;
}

/* --- the dir backend --- */

/* @s as a file name's part: [A-Za-z0-9._-], others '_', no leading '.', 64 bytes at most. */
static void file_part(char *dst, size_t n, const char *s)
{
	size_t o = 0;

	for (; *s && o + 1 < n && o < 64; s++) {
		char c = *s;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '-' || c == '_' || (c == '.' && o);

		dst[o++] = ok ? c : '_';
	}
	if (!o && n > 7)
		o = (size_t)snprintf(dst, n, "unknown");
	dst[o] = 0;
}

/* The Unix start of "SERVICE-PID-START.pb.gz", or -1 when @name is not one of ours. */
static long long dir_file_start(const char *name)
{
	size_t len = strlen(name), ext = strlen(".pb.gz");
	const char *end, *p;
	int dashes = 0;

	if (len <= ext || strcmp(name + len - ext, ".pb.gz") || name[0] == '.')
		return -1;
	end = name + len - ext;
	for (p = end; p > name && dashes < 2; p--) {
		if (p[-1] == '-')
			dashes++;
		else if (p[-1] < '0' || p[-1] > '9')
			return -1;
	}
	if (dashes < 2 || p[1] == '-' || end[-1] == '-')
		return -1;
	return strtoll(strrchr(name, '-') + 1, NULL, 10);
}

static int dirfile_cmp(const void *a, const void *b)
{
	const struct dirfile *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void dir_add(struct backend *b, const char *name, uint64_t start, uint64_t size)
{
	PM_GROW(b->files, b->fcap, b->nfiles + 1);
	b->files[b->nfiles++] = (struct dirfile){ start, size, xstrdup(name) };
	b->dir_bytes += size;
}

/* The files already there (a restart), once. */
static void dir_scan(struct backend *b)
{
	DIR *d = opendir(b->target);
	struct dirent *de;

	b->scanned = true;
	if (!d)
		return;
	while ((de = readdir(d))) {
		long long start = dir_file_start(de->d_name);
		struct stat st;

		if (start >= 0 && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			dir_add(b, de->d_name, (uint64_t)start, (uint64_t)st.st_size);
	}
	closedir(d);
	if (b->nfiles)
		qsort(b->files, b->nfiles, sizeof(*b->files), dirfile_cmp);
}

/* --dir-max: the oldest files go until the rest fit (the newest stays). */
static void dir_rotate(struct pm_push *p, struct backend *b)
{
	size_t drop = 0;

	while (b->dir_max && b->dir_bytes > b->dir_max && b->nfiles - drop > 1) {
		char *path = xasprintf("%s/%s", b->target, b->files[drop].name);

		unlink(path);
		free(path);
		b->dir_bytes -= b->files[drop].size;
		free(b->files[drop].name);
		drop++;
	}
	if (!drop)
		return;
	memmove(b->files, b->files + drop, (b->nfiles - drop) * sizeof(*b->files));
	b->nfiles -= drop;
	stats_add(p, &b->st.rotated, drop);
}

/* The interval in flight as a file of the directory: 0 or -errno. */
static int dir_write(struct pm_push *p, struct backend *b)
{
	const struct pm_agent_meta *m = &b->item.meta;
	uint64_t start = m->start_ns / 1000000000ULL;
	char svc[80], name[160], *path;
	struct pm_outfile f;
	int rc;

	if (!b->scanned)
		dir_scan(b);
	file_part(svc, sizeof(svc), m->service);
	snprintf(name, sizeof(name), "%s-%" PRId32 "-%" PRIu64 ".pb.gz", svc, m->pid, start);
	path = xasprintf("%s/%s", b->target, name);
	rc = pm_outfile_open(&f, path, NULL);
	free(path);
	if (!rc) {
		rc = pm_write_all(f.fd, b->item.data, b->item.len);
		if (rc)
			pm_outfile_abort(&f);
		else
			rc = pm_outfile_commit(&f);
	}
	if (rc)
		return rc;
	dir_add(b, name, start, b->item.len);
	if (b->nfiles > 1 && dirfile_cmp(&b->files[b->nfiles - 2], &b->files[b->nfiles - 1]) > 0)
		qsort(b->files, b->nfiles, sizeof(*b->files), dirfile_cmp);
	dir_rotate(p, b);
	return 0;
}

/* --- the HTTP backends --- */

/* @s as a Pyroscope label value: no ',', '{', '}', '=' (its key syntax), no spaces at the ends. */
static void label_value(char *dst, size_t n, const char *s)
{
	size_t o = 0;

	for (; *s && o + 1 < n; s++)
		dst[o++] = strchr(",{}= ", *s) ? '_' : *s;
	dst[o] = 0;
}

/* The Pyroscope application name: SERVICE{labels}, as its /ingest parses it. */
static char *pyroscope_name(const struct pm_agent_meta *m)
{
	char svc[80], host[PM_META_STR], exe[PM_META_STR], cid[PM_META_STR];

	file_part(svc, sizeof(svc), m->service);
	label_value(host, sizeof(host), m->host);
	label_value(exe, sizeof(exe), m->exe_name);
	label_value(cid, sizeof(cid), m->container_id);
	return xasprintf("%s{host_name=%s,process_pid=%" PRId32 ",process_executable_name=%s%s%s}",
			 svc, *host ? host : "unknown", m->pid, *exe ? exe : "unknown",
			 *cid ? ",container_id=" : "", cid);
}

static char *pyroscope_url(struct backend *b, const struct pm_agent_meta *m)
{
	char *name = pyroscope_name(m);
	char *esc = curl_easy_escape(b->easy, name, 0);
	uint64_t from = m->start_ns / 1000000000ULL;
	uint64_t until = (m->start_ns + m->duration_ns + 999999999ULL) / 1000000000ULL;
	char *url = xasprintf("%s?name=%s&from=%" PRIu64 "&until=%" PRIu64
			      "&format=pprof&spyName=pmuprof",
			      b->url, esc ? esc : "unknown", from, PM_MAX(until, from + 1));

	curl_free(esc);
	free(name);
	return url;
}

/* @len bytes gzip'd into *@out (malloc'd): 0 or -ENOMEM/-EIO. */
static int gzip_buf(const uint8_t *in, size_t len, uint8_t **out, size_t *olen)
{
	z_stream z;
	size_t cap;
	int rc;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, (uLong)len) + 32;
	*out = xmalloc(cap);
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)len;
	z.next_out = *out;
	z.avail_out = (uInt)cap;
	rc = deflate(&z, Z_FINISH);
	*olen = cap - z.avail_out;
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(*out);
		*out = NULL;
		return -EIO;
	}
	return 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct backend *b = arg;
	size_t n = size * nmemb, room = sizeof(b->resp) - 1 - b->rlen;

	memcpy(b->resp + b->rlen, data, PM_MIN(n, room));
	b->rlen += PM_MIN(n, room);
	b->resp[b->rlen] = 0;
	return n;
}

/* The interval in flight as a request on b->easy: 0, or -errno with @err (drop it). */
static int http_prepare(struct backend *b, char *err, size_t errlen)
{
	const uint8_t *body = b->item.data;
	size_t blen = b->item.len;
	char *url = NULL;

	if (b->kind == PM_PUSH_OTLP) {
		uint8_t *pb = NULL;
		size_t pblen = 0;
		int rc = b->encode(&b->item.meta, b->item.data, b->item.len, &pb, &pblen, err,
				   errlen);

		if (!rc)
			rc = gzip_buf(pb, pblen, &b->body, &b->blen);
		free(pb);
		if (rc)
			return rc;
		body = b->body;
		blen = b->blen;
	} else {
		url = pyroscope_url(b, &b->item.meta);
	}
	curl_easy_setopt(b->easy, CURLOPT_URL, url ? url : b->url);
	free(url); /* libcurl copies it */
	curl_easy_setopt(b->easy, CURLOPT_POSTFIELDS, (const char *)body);
	curl_easy_setopt(b->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
	b->rlen = 0;
	b->resp[0] = 0;
	b->errbuf[0] = 0;
	return 0;
}

/* --- one backend's cycle: next interval, push, verdict --- */

static void release_item(struct backend *b)
{
	pm_spool_item_release(&b->item);
	free(b->body);
	b->body = NULL;
	b->blen = 0;
}

/* The attempt at the interval in flight ended as @v (@retry_s: Retry-After). */
static void settle(struct pm_push *p, struct backend *b, enum verdict v, uint64_t retry_s)
{
	if (v == V_RETRY) {
		b->attempts++;
		b->state = B_WAIT;
		b->wake_ms = now_ms() + backoff_ms(p, b->attempts, retry_s);
		pthread_mutex_lock(&p->lock);
		b->st.retries++;
		b->st.failing = 1;
		pthread_mutex_unlock(&p->lock);
		release_item(b); /* read again from the spool: it may be dropped meanwhile */
		return;
	}
	pm_spool_done(p->sp, b->idx, &b->item.meta);
	pthread_mutex_lock(&p->lock);
	if (v == V_OK)
		b->st.sent++;
	else
		b->st.dropped++;
	b->st.failing = 0;
	pthread_mutex_unlock(&p->lock);
	if (v == V_OK && b->ncauses) {
		pm_info("%s: '%s': delivering again", pm_push_name(b->kind), b->target);
		b->ncauses = 0;
	}
	b->attempts = 0;
	b->state = B_IDLE;
	release_item(b);
}

/* A transfer ended: its verdict from curl's code and the HTTP status. */
static void finish(struct pm_push *p, struct backend *b, CURLcode code)
{
	long status = 0;
	curl_off_t retry = 0;
	char what[RESP_MAX + 64], key[32];

	curl_multi_remove_handle(p->multi, b->easy);
	if (code != CURLE_OK) {
		snprintf(key, sizeof(key), "curl %d", (int)code);
		tell_retry(b, key, b->errbuf[0] ? b->errbuf : curl_easy_strerror(code));
		settle(p, b, V_RETRY, 0);
		return;
	}
	curl_easy_getinfo(b->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 200 && status < 300) {
		accepted(p, b);
		settle(p, b, V_OK, 0);
		return;
	}
	/* the server's words, first line, for the one message */
	b->resp[strcspn(b->resp, "\r\n")] = 0;
	snprintf(what, sizeof(what), "HTTP %ld%s%s", status, b->rlen ? ": " : "", b->resp);
	if (status >= 400 && status < 500 && status != 408 && status != 429) {
		tell_drop(b, status, what);
		settle(p, b, V_DROP, 0);
		return;
	}
	curl_easy_getinfo(b->easy, CURLINFO_RETRY_AFTER, &retry);
	snprintf(key, sizeof(key), "http %ld", status);
	tell_retry(b, key, what);
	settle(p, b, V_RETRY, retry > 0 ? (uint64_t)retry : 0);
}

/* The dir backend's attempt, done here and now. */
static void push_dir(struct pm_push *p, struct backend *b)
{
	int rc = dir_write(p, b);
	char what[300], key[32];

	stats_add(p, &b->st.requests, 1);
	if (!rc) {
		settle(p, b, V_OK, 0);
		return;
	}
	/* a full disk or a directory gone is passing: retried */
	snprintf(what, sizeof(what), "cannot write: %s", strerror(-rc));
	snprintf(key, sizeof(key), "errno %d", -rc);
	tell_retry(b, key, what);
	settle(p, b, V_RETRY, 0);
}

/* An idle backend takes its next interval, if any. */
static void start_next(struct pm_push *p, struct backend *b)
{
	char err[256] = "";
	int rc;

	if (pm_spool_next(p->sp, b->idx, &b->item) != 1) {
		b->state = B_IDLE;
		return;
	}
	if (b->kind == PM_PUSH_DIR) {
		push_dir(p, b);
		return;
	}
	rc = http_prepare(b, err, sizeof(err));
	if (rc) {
		char what[300];

		snprintf(what, sizeof(what), "cannot encode an interval: %s",
			 err[0] ? err : strerror(-rc));
		tell_drop(b, rc, what);
		settle(p, b, V_DROP, 0);
		return;
	}
	stats_add(p, &b->st.requests, 1);
	curl_multi_add_handle(p->multi, b->easy);
	b->state = B_BUSY;
}

/* One pass: start what is due, drive the transfers, settle those done.  The ms to wait. */
static long step(struct pm_push *p)
{
	long wait = IDLE_POLL_MS;
	int running, left;
	CURLMsg *msg;
	uint64_t now = now_ms();

	for (unsigned i = 0; i < p->nb; i++) {
		struct backend *b = &p->b[i];

		/* a dir backend writes at once: several intervals in one pass, bounded */
		for (int k = 0;
		     k < 16 && (b->state == B_IDLE || (b->state == B_WAIT && now >= b->wake_ms));
		     k++) {
			start_next(p, b);
			if (b->kind != PM_PUSH_DIR || b->state != B_IDLE ||
			    !pm_spool_pending(p->sp, (int)b->idx))
				break;
		}
	}
	curl_multi_perform(p->multi, &running);
	while ((msg = curl_multi_info_read(p->multi, &left))) {
		struct backend *b = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&b);
		if (b)
			finish(p, b, msg->data.result);
	}
	for (unsigned i = 0; i < p->nb; i++) {
		struct backend *b = &p->b[i];

		if (b->state == B_WAIT)
			wait = PM_MIN(wait, b->wake_ms > now ? (long)(b->wake_ms - now) : 0);
		else if (b->state == B_IDLE && pm_spool_pending(p->sp, (int)b->idx))
			wait = 0; /* settled just now, more to take */
	}
	return wait;
}

/* Nothing to push: every backend idle and lacking nothing. */
static bool all_idle(struct pm_push *p)
{
	for (unsigned i = 0; i < p->nb; i++)
		if (p->b[i].state != B_IDLE || pm_spool_pending(p->sp, (int)p->b[i].idx))
			return false;
	return true;
}

/* Abort the transfers in flight: their intervals stay spooled. */
static void abort_all(struct pm_push *p)
{
	for (unsigned i = 0; i < p->nb; i++) {
		struct backend *b = &p->b[i];

		if (b->state == B_BUSY)
			curl_multi_remove_handle(p->multi, b->easy);
		release_item(b);
		b->state = B_IDLE;
	}
}

/* Between two steps: parked while a fork is asked for (pm_push_fork_begin()). */
static void park_if_asked(struct pm_push *p)
{
	pthread_mutex_lock(&p->lock);
	if (p->fork_wanted) {
		p->parked = true;
		pthread_cond_broadcast(&p->cond);
		while (p->fork_wanted)
			pthread_cond_wait(&p->cond, &p->lock);
		p->parked = false;
	}
	pthread_mutex_unlock(&p->lock);
}

/* Push until @deadline_ms, or until nothing is pending when @until_idle. */
static bool run_loop(struct pm_push *p, bool until_idle, uint64_t deadline_ms)
{
	for (;;) {
		long wait;
		uint64_t now;
		bool stop;

		park_if_asked(p);
		wait = step(p);
		now = now_ms();

		pthread_mutex_lock(&p->lock);
		stop = p->stopping;
		if (stop)
			deadline_ms = PM_MIN(deadline_ms, p->stop_at_ms);
		pthread_mutex_unlock(&p->lock);
		if ((until_idle || stop) && all_idle(p))
			return true;
		if (now >= deadline_ms)
			return false;
		wait = PM_MIN((uint64_t)wait, deadline_ms - now);
		if (wait > 0)
			curl_multi_poll(p->multi, NULL, 0, (int)wait, NULL);
	}
}

static void *thread_main(void *arg)
{
	struct pm_push *p = arg;

	run_loop(p, false, UINT64_MAX);
	abort_all(p);
	pthread_mutex_lock(&p->lock);
	p->exited = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

void pm_push_fork_begin(struct pm_push *p)
{
	if (!p || !p->started)
		return;
	pthread_mutex_lock(&p->lock);
	p->fork_wanted = true;
	pthread_mutex_unlock(&p->lock);
	curl_multi_wakeup(p->multi);
	pthread_mutex_lock(&p->lock);
	while (!p->parked && !p->exited)
		pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

void pm_push_fork_end(struct pm_push *p)
{
	if (!p || !p->started)
		return;
	pthread_mutex_lock(&p->lock);
	p->fork_wanted = false;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

int pm_push_start(struct pm_push *p)
{
	sigset_t all, old;
	int rc;

	if (p->started)
		return -EBUSY;
	/* the thread takes no signal: the agent's loop does */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&p->thread, NULL, thread_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	p->started = true;
	return 0;
}

void pm_push_kick(struct pm_push *p)
{
	curl_multi_wakeup(p->multi);
}

void pm_push_stop(struct pm_push *p, unsigned flush_ms)
{
	if (!p->started)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	p->stop_at_ms = now_ms() + flush_ms;
	pthread_mutex_unlock(&p->lock);
	curl_multi_wakeup(p->multi);
	pthread_join(p->thread, NULL);
	p->started = false;
	p->stopping = false;
}

int pm_push_run(struct pm_push *p, unsigned timeout_ms)
{
	bool idle;

	if (p->started)
		return -EBUSY;
	idle = run_loop(p, true, now_ms() + timeout_ms);
	abort_all(p);
	return idle ? 0 : -ETIMEDOUT;
}

void pm_push_get_stats(struct pm_push *p, unsigned i, struct pm_push_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (i >= p->nb)
		return;
	pthread_mutex_lock(&p->lock);
	*st = p->b[i].st;
	pthread_mutex_unlock(&p->lock);
}

/* --- setting up --- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* The endpoint of @t: the URL and the backend's path, unless it ends so already. */
static char *endpoint(const char *t, const char *path)
{
	size_t len = strlen(t), plen = strlen(path);

	while (len && t[len - 1] == '/')
		len--;
	if (len >= plen && !strncmp(t + len - plen, path, plen))
		return xstrndup(t, len);
	return xasprintf("%.*s%s", (int)len, t, path);
}

static int check_url(const char *url, char *err, size_t errlen)
{
	if (strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8)) {
		pm_seterr(err, errlen, "'%s': not an http:// or https:// URL", url);
		return -EINVAL;
	}
	for (const char *c = url; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f) {
			pm_seterr(err, errlen, "'%s': a URL without spaces or controls, please",
				  url);
			return -EINVAL;
		}
	return 0;
}

static int check_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		pm_seterr(err, errlen, "cannot make '%s': %s", dir, strerror(errno));
		return -errno;
	}
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK) < 0) {
		pm_seterr(err, errlen, "'%s': not a directory this user may write to", dir);
		return -ENOTDIR;
	}
	return 0;
}

/* The curl handle of an HTTP backend, its headers and timeouts. */
static int setup_http(struct pm_push *p, struct backend *b, char *err, size_t errlen)
{
	bool otlp = b->kind == PM_PUSH_OTLP;

	b->easy = curl_easy_init();
	if (!b->easy) {
		pm_seterr(err, errlen, "libcurl: cannot make a handle");
		return -ENOMEM;
	}
	b->url = endpoint(b->target, otlp ? "/v1development/profiles" : "/ingest");
	b->hdrs = curl_slist_append(NULL, otlp ? "Content-Type: application/x-protobuf"
					       : "Content-Type: application/octet-stream");
	if (otlp)
		b->hdrs = curl_slist_append(b->hdrs, "Content-Encoding: gzip");
	/* no "Expect: 100-continue" wait before a large body */
	b->hdrs = curl_slist_append(b->hdrs, "Expect:");
	curl_easy_setopt(b->easy, CURLOPT_PRIVATE, (char *)b);
	curl_easy_setopt(b->easy, CURLOPT_HTTPHEADER, b->hdrs);
	curl_easy_setopt(b->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(b->easy, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(b->easy, CURLOPT_ERRORBUFFER, b->errbuf);
	curl_easy_setopt(b->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(b->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(b->easy, CURLOPT_USERAGENT, "pmuprof/" PMUPROF_VERSION);
	curl_easy_setopt(b->easy, CURLOPT_CONNECTTIMEOUT_MS, (long)p->o.connect_timeout_ms);
	curl_easy_setopt(b->easy, CURLOPT_TIMEOUT_MS, (long)p->o.timeout_ms);
	return 0;
}

static int setup_backend(struct pm_push *p, struct backend *b, const struct pm_push_backend *c,
			 char *err, size_t errlen)
{
	int rc;

	b->kind = c->kind;
	b->target = xstrdup(c->target ? c->target : "");
	b->dir_max = c->dir_max;
	b->encode = c->encode;
	b->answer = c->answer;
	if (c->kind == PM_PUSH_DIR)
		return check_dir(b->target, err, errlen);
	if (c->kind != PM_PUSH_PYROSCOPE && c->kind != PM_PUSH_OTLP) {
		pm_seterr(err, errlen, "unknown backend kind %d", (int)c->kind);
		return -EINVAL;
	}
	if (c->kind == PM_PUSH_OTLP && !c->encode) {
		pm_seterr(err, errlen, "otlp: no encoder");
		return -EINVAL;
	}
	rc = check_url(b->target, err, errlen);
	return rc ? rc : setup_http(p, b, err, errlen);
}

static void default_opts(struct pm_push_opts *o, const struct pm_push_opts *given)
{
	if (given)
		*o = *given;
	if (!o->backoff_base_ms)
		o->backoff_base_ms = 1000;
	if (!o->backoff_cap_ms)
		o->backoff_cap_ms = 60000;
	if (!o->connect_timeout_ms)
		o->connect_timeout_ms = 5000;
	if (!o->timeout_ms)
		o->timeout_ms = 30000;
}

int pm_push_new(struct pm_push **out, struct pm_spool *sp, const struct pm_push_backend *b,
		unsigned n, const struct pm_push_opts *o, char *err, size_t errlen)
{
	struct pm_push *p;
	int rc = 0;

	*out = NULL;
	if (n > PM_SPOOL_MAX_BACKENDS) {
		pm_seterr(err, errlen, "at most %d backends", PM_SPOOL_MAX_BACKENDS);
		return -EINVAL;
	}
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK) {
		pm_seterr(err, errlen, "libcurl: %s", curl_easy_strerror(curl_init_rc));
		return -EIO;
	}
	p = xcalloc(1, sizeof(*p));
	p->sp = sp;
	default_opts(&p->o, o);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->rng = pm_hash_seed() | 1;
	p->multi = curl_multi_init();
	if (!p->multi) {
		pm_seterr(err, errlen, "libcurl: cannot make a multi handle");
		rc = -ENOMEM;
	}
	for (unsigned i = 0; i < n && !rc; i++) {
		p->b[i].idx = i;
		p->nb = i + 1;
		rc = setup_backend(p, &p->b[i], &b[i], err, errlen);
	}
	if (rc) {
		pm_push_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void pm_push_free(struct pm_push *p)
{
	if (!p)
		return;
	pm_push_stop(p, 0);
	abort_all(p);
	for (unsigned i = 0; i < p->nb; i++) {
		struct backend *b = &p->b[i];

		if (b->easy)
			curl_easy_cleanup(b->easy);
		curl_slist_free_all(b->hdrs);
		for (size_t k = 0; k < b->nfiles; k++)
			free(b->files[k].name);
		free(b->files);
		free(b->target);
		free(b->url);
	}
	if (p->multi)
		curl_multi_cleanup(p->multi);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}
