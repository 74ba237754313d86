/*
 * pprof: profile.proto (gzip-compressed) to and from a struct pm_profile,
 * through protobuf-c and zlib.
 */
#ifndef PM_PPROF_H
#define PM_PPROF_H

#include <stddef.h>
#include <stdint.h>

struct pm_profile;
struct pm_owner;

/*
 * Write @p to @path atomically (outfile.h: an unnamed file, fsync'd, then
 * named @path), given to @owner (may be NULL) where outfile.h says.  "-"
 * writes to stdout.  0 or -errno; on failure nothing is left at @path (a
 * previous file stays intact).
 */
int pm_pprof_write(const struct pm_profile *p, const char *path, const struct pm_owner *owner);

/* Serialize to a gzip'd buffer (owned, free()).  0 or -errno. */
int pm_pprof_encode(const struct pm_profile *p, uint8_t **out, size_t *len);

/*
 * Read a pprof file (gzip'd or raw protobuf).  On failure returns -errno
 * and writes one line saying what is wrong into @err (e.g. "not a gzip or
 * pprof file", "truncated gzip stream", "invalid profile: location 3 has no
 * mapping 7").
 */
int pm_pprof_read(const char *path, struct pm_profile **out, char *err, size_t errlen);
int pm_pprof_decode(const uint8_t *buf, size_t len, struct pm_profile **out, char *err,
		    size_t errlen);

#endif
