/*
 * push: the agent's sender.  For each backend, the oldest interval of the
 * spool (spool.h) it lacks is pushed, one at a time (so each backend gets
 * them in order), and marked done there on success.  Layer 9.
 *
 * Backends:
 *   pyroscope  POST URL/ingest?name=SERVICE{host_name=..,process_pid=..,
 *              process_executable_name=..[,container_id=..]}&from=S&until=S
 *              &format=pprof&spyName=pmuprof, the gzip'd pprof as the body
 *              (application/octet-stream; Pyroscope v1.6 takes it raw, and
 *              reads the profile types from the pprof).  Label names with
 *              '_' for OpenTelemetry's '.': Pyroscope wants Prometheus names.
 *   otlp       POST URL/v1development/profiles, the body the agent's
 *              encoder makes (an ExportProfilesServiceRequest), gzip'd here
 *              (Content-Encoding: gzip, application/x-protobuf).
 *   dir        DIR/SERVICE-PID-START.pb.gz (START: Unix seconds), written
 *              whole or not at all; with dir_max, the oldest such files go
 *              once they pass it.
 * A URL that already ends in the endpoint's path (/ingest,
 * /v1development/profiles) is taken as it is.  http and https only.
 *
 * Failures: a network error, a timeout (connect 5 s, whole request 30 s),
 * HTTP 408, 429 or 5xx (anything but 2xx and 4xx): the backend waits and
 * tries the same interval again, with exponential backoff and full jitter
 * (a random wait in [0, min(cap, base * 2^attempt)], base 1 s, cap 60 s)
 * or the server's Retry-After when longer (15 min at most); the interval
 * stays spooled meanwhile, the other backends go on.  Any other 4xx, or
 * the encoder's failure: that interval is dropped for that backend (marked
 * done, counted).  One line on stderr per backend and cause (an HTTP
 * status, a curl error), not per interval: a failing backend cannot flood
 * the log; after an outage, one line when it delivers again.
 *
 * Why a thread: the agent's loop polls the perf rings; a push waits on a
 * server for up to 30 s.  libcurl's multi interface keeps every backend's
 * request in flight at once in one thread of its own (curl_multi_poll()
 * on their sockets, woken by pm_push_kick() after a put), so a hung
 * backend delays neither the others nor the recording, and the agent's
 * loop needs no knowledge of sockets or timers.  The spool is its only
 * shared state (it has a lock); the thread blocks every signal (the
 * agent's loop takes them).  A blocking curl_easy_perform() per backend
 * would need a thread each; a forked sender would have to share the spool
 * through the directory alone.
 */
#ifndef PM_PUSH_H
#define PM_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "agent/meta.h"
#include "agent/spool.h"

enum pm_push_kind { PM_PUSH_PYROSCOPE, PM_PUSH_OTLP, PM_PUSH_DIR };

/*
 * The OTLP body of one interval: @m and its gzip'd pprof (@len bytes) into
 * *@body (malloc'd, *@blen bytes; the protobuf, not yet gzip'd; the pusher
 * frees it).  0, or -errno with the cause in @err: that interval is
 * dropped for the backend.
 */
typedef int (*pm_push_encode_fn)(const struct pm_agent_meta *m, const uint8_t *pprof, size_t len,
				 uint8_t **body, size_t *blen, char *err, size_t errlen);

/*
 * A 2xx answer's body (@len bytes, hostile) read: the items the server
 * says it rejected anyway (OTLP's partial_success), its words in @msg;
 * 0 none, < 0 an answer that does not parse.
 */
typedef int64_t (*pm_push_answer_fn)(const uint8_t *body, size_t len, char *msg, size_t msglen);

struct pm_push_backend {
	enum pm_push_kind kind;
	const char *target; /* the URL (pyroscope, otlp) or the directory (dir); copied */
	uint64_t dir_max;   /* dir: bytes of its files kept at most (--dir-max), 0: no bound */
	pm_push_encode_fn encode; /* otlp: required */
	pm_push_answer_fn answer; /* NULL: a 2xx is the whole story */
};

/* Timings, in ms; 0 takes the default (the tests shorten them). */
struct pm_push_opts {
	unsigned backoff_base_ms;    /* 1000 */
	unsigned backoff_cap_ms;     /* 60000 */
	unsigned connect_timeout_ms; /* 5000 */
	unsigned timeout_ms;	     /* 30000: the whole request */
};

struct pm_push_stats {
	uint64_t sent;	   /* intervals the backend has */
	uint64_t dropped;  /* intervals refused for good (4xx, encoder): not retried */
	uint64_t rejected; /* items a 2xx said it rejected (partial success): not retried */
	uint64_t retries;  /* attempts failed and tried again later */
	uint64_t requests; /* requests made (dir: files written) */
	uint64_t rotated;  /* dir: files removed by dir_max */
	int failing;	   /* 1 while its last attempt failed and it waits to retry */
};

struct pm_push;

/* "pyroscope", "otlp", "dir": the backend's name in the spool (pm_spool_open()) and in messages. */
const char *pm_push_name(enum pm_push_kind kind);

/*
 * A sender for @n backends @b, pushing from @sp: backend i is spool
 * backend i (open the spool with pm_push_name() of each, in this order).
 * @o may be NULL.  Checks each target (scheme, the directory made) and
 * starts nothing.  0, or -errno with the cause in @err.
 */
int pm_push_new(struct pm_push **out, struct pm_spool *sp, const struct pm_push_backend *b,
		unsigned n, const struct pm_push_opts *o, char *err, size_t errlen);

/* Start the sender's thread.  0 or -errno. */
int pm_push_start(struct pm_push *p);
/* After a put: the thread looks at the spool now (else within a second).  Any thread. */
void pm_push_kick(struct pm_push *p);
/*
 * Around a fork() of the thread's process: the thread parked between two
 * steps, holding no lock (allocator, libcurl, stdio) the child could
 * need.  NULL and a push not started are fine.
 */
void pm_push_fork_begin(struct pm_push *p);
void pm_push_fork_end(struct pm_push *p);
/*
 * Stop the thread: it pushes on while anything is pending, for up to
 * @flush_ms (0: stops at once), then aborts what is in flight (it stays
 * spooled, pushed again at the next start: a server that had it already
 * gets it twice) and is joined.
 */
void pm_push_stop(struct pm_push *p, unsigned flush_ms);

/*
 * Without the thread: push in the caller's thread until nothing is pending
 * or @timeout_ms passed (a one-shot flush, the tests).  0 when nothing is
 * pending, -ETIMEDOUT, -EBUSY while the thread runs.
 */
int pm_push_run(struct pm_push *p, unsigned timeout_ms);

/* Backend @i's counters, copied (any thread). */
void pm_push_get_stats(struct pm_push *p, unsigned i, struct pm_push_stats *st);
/* Stop if started, and free.  NULL is fine.  The spool stays the caller's. */
void pm_push_free(struct pm_push *p);

#endif
