/*
 * meta: what the agent knows of one interval of one process, beside its
 * profile: who the process is (the resource, as OpenTelemetry's semantic
 * conventions name it) and which interval.  The spool keeps it as text
 * beside the profile (pm_meta_format(), pm_meta_parse()); the pushes read
 * it to name the resource (OTLP) or the application (Pyroscope).
 *
 * Every string came from the target (its path, comm, environment, cgroup)
 * and is stored sanitized (pm_sanitize(): printable, valid UTF-8), cut to
 * its field: safe for a terminal and for a protobuf string.
 */
#ifndef PM_META_H
#define PM_META_H

#include <stddef.h>
#include <stdint.h>

#define PM_META_STR 256
#define PM_META_PATH 1024

struct pm_agent_meta {
	int32_t pid;
	uint64_t seq;                     /* the interval's number for this process, from 0 */
	uint64_t start_ns;                /* the interval's start, Unix time in ns */
	uint64_t duration_ns;             /* its length */
	char service[PM_META_STR];        /* service.name: OTEL_SERVICE_NAME, else exe_name */
	char exe_name[PM_META_STR];       /* process.executable.name */
	char exe_path[PM_META_PATH];      /* process.executable.path */
	char comm[PM_META_STR];           /* the process's comm */
	char host[PM_META_STR];           /* host.name */
	char container_id[PM_META_STR];   /* container.id from the cgroup, "" when none */
};

/* Copy @src into @dst (size @n), cut and sanitized as above. */
void pm_meta_set(char *dst, size_t n, const char *src);
/*
 * @m as text, "key=value" lines, into a new string (free()); a value's
 * '%', '\n' and '=' bytes percent-encoded.
 */
char *pm_meta_format(const struct pm_agent_meta *m);
/*
 * Text of pm_meta_format() (@len bytes, not NUL-terminated) back into @m:
 * unknown keys skipped, values cut and sanitized again (the spool is on
 * disk: read as hostile).  -EINVAL when a line is not key=value or a
 * number does not parse, 0 otherwise.
 */
int pm_meta_parse(const char *text, size_t len, struct pm_agent_meta *m);

#endif
