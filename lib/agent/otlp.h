/*
 * otlp: pprof profiles, each with its process's meta, into the bytes of one
 * OTLP ExportProfilesServiceRequest (opentelemetry.proto.collector.profiles.
 * v1development, proto/opentelemetry: tag v1.11.0), uncompressed; the
 * pusher gzips and POSTs it to /v1development/profiles.
 *
 * The request's shape:
 *   - one ResourceProfiles per process: the profiles added with equal
 *     resource attributes share one.  Resource attributes, as the semantic
 *     conventions name them: service.name (the meta's service, else
 *     "unknown_service"), process.pid (int), process.executable.name,
 *     process.executable.path, host.name, container.id; an empty value is
 *     left out.
 *   - one ScopeProfiles in it, scope "pmuprof" with pmuprof's version;
 *   - one Profile per sample type of each pprof (a v1.11.0 Profile holds
 *     one sample_type): its period type and period, time_unix_nano and
 *     duration_nano (the meta's interval, else the pprof's), a profile_id
 *     made from (pid, seq, start, sample type), so that a push tried again
 *     carries the same ids; a Sample per pprof sample whose value of that
 *     type is not 0: its stack, its labels as attributes, its one value.
 *   - one ProfilesDictionary for the whole request: string, mapping,
 *     location, function, link, attribute and stack tables, each with its
 *     zero entry first, each entry once.  A mapping's build ID is its
 *     attribute process.executable.build_id.gnu (hex) or .go (Go's build
 *     ID, which pmuprof takes when a binary has no GNU note).  Locations
 *     keep pmuprof's frames: address, mapping, lines with their functions
 *     (inlined callee first, as in the pprof) and line numbers.
 *
 * pprof labels to sample attributes (key, pprof kind -> attribute):
 *
 *   goroutine    num  goroutine.id          int
 *   thread       num  thread.id             int
 *   pid          num  process.pid           int, only where it is not the
 *                                           resource's pid (else left out)
 *   state        str  go.goroutine.state    --wall: running, runnable, ...
 *   wait_reason  str  go.wait_reason        --wall: the runtime's waitReason
 *   parked       num  go.goroutine.parked   --wall, unit "ns"
 *   cpu_sample_age_ms num pmuprof.cpu_sample_age  --wall, unit "ms"
 *   bytes        num  go.allocation.size    --alloc, --inuse: unit "By"
 *   event        str  pmuprof.event         the -e event of a sample
 *   mutex        str  go.mutex              --locks: the mutex's address
 *   any other    str  its own key           the goroutine's pprof labels
 *   any other    num  its own key           int, with its unit
 *
 * A numeric label's unit goes to the attribute's unit, in UCUM where pprof
 * spells a known one (nanoseconds "ns", microseconds "us", milliseconds
 * "ms", seconds "s", bytes "By").  A pprof label of the program's own with
 * one of pmuprof's keys (say "state") maps as pmuprof's: the pprof does not
 * tell them apart.  A sample's attribute keys are unique (OTLP's rule):
 * a second label whose key maps to one already there is dropped and
 * counted in the Profile's dropped_attributes_count.
 *
 * Every string is valid UTF-8 (a protobuf string that is not makes the
 * collector refuse the whole request): the pprof's names, files and labels
 * go through pm_sanitize(), cut to PM_OTLP_MAX_STR bytes first; the meta's
 * are cut to their fields and sanitized again.  Values and attribute
 * strings are copied: nothing of the caller's is kept.
 */
#ifndef PM_OTLP_H
#define PM_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "agent/meta.h"

struct pm_profile;

/* A request under construction: the dictionary and resources so far. */
struct pm_otlp;

/* The longest string kept, in bytes; a longer one is cut (then sanitized). */
#define PM_OTLP_MAX_STR 4096
/*
 * The most entries one table of a request's dictionary may hold (the
 * indices are int32): a profile whose entries could pass it is refused
 * (-E2BIG), and the request built so far stays as it was.
 */
#define PM_OTLP_MAX_ENTRIES (1u << 26)

struct pm_otlp *pm_otlp_new(void);
void pm_otlp_free(struct pm_otlp *o); /* NULL is fine */

/*
 * Add the profile of one interval of one process: @pprof (@len bytes, a
 * pprof file, gzip'd or not, read as hostile: pm_pprof_decode()) and @m,
 * its resource and interval (copied).  0, or -errno with one line in @err:
 * -EINVAL when @pprof is not a valid profile (pm_pprof_decode()'s error),
 * -E2BIG when the request has no room left for it (send what was built,
 * and add it to the next one).  On failure the request is unchanged.
 */
int pm_otlp_add(struct pm_otlp *o, const uint8_t *pprof, size_t len,
		const struct pm_agent_meta *m, char *err, size_t errlen);
/* The same with the profile already decoded (borrowed for the call). */
int pm_otlp_add_profile(struct pm_otlp *o, const struct pm_profile *p,
			const struct pm_agent_meta *m, char *err, size_t errlen);

/* The resources (processes) and profiles added so far. */
size_t pm_otlp_nresources(const struct pm_otlp *o);
size_t pm_otlp_nprofiles(const struct pm_otlp *o);

/*
 * The request as protobuf bytes (uncompressed) into @out (owned, free()),
 * @len bytes; @o is unchanged, and may be added to and encoded again.
 */
void pm_otlp_encode(const struct pm_otlp *o, uint8_t **out, size_t *len);

struct pm_otlp_item {
	const uint8_t *pprof; /* a pprof file's bytes, gzip'd or not */
	size_t len;
	const struct pm_agent_meta *meta;
};

/*
 * The request of @n items at once: pm_otlp_add() each, then
 * pm_otlp_encode().  0, or the first failure's -errno with @err saying
 * which item ("profile 2 (pid 4242): truncated gzip stream"); nothing is
 * returned in @out then.
 */
int pm_otlp_request(const struct pm_otlp_item *items, size_t n, uint8_t **out, size_t *len,
		    char *err, size_t errlen);

/*
 * A collector's answer to an accepted request (@len bytes of
 * ExportProfilesServiceResponse, read as hostile): the profiles it
 * rejected (partial_success), its message sanitized into @msg ("" when
 * none).  0 when the answer is empty or says nothing; -EINVAL when it
 * does not parse (nothing then is known to be rejected).
 */
int64_t pm_otlp_rejected(const uint8_t *resp, size_t len, char *msg, size_t msglen);

#endif
