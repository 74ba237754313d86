/*
 * util: memory helpers that die on OOM, diagnostics on stderr, hashing,
 * growable arrays.  Layer 0: knows nothing of perf or Go.
 */
#ifndef PM_UTIL_H
#define PM_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PM_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define PM_MIN(a, b) ((a) < (b) ? (a) : (b))
#define PM_MAX(a, b) ((a) > (b) ? (a) : (b))

#if defined(__GNUC__)
#define PM_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define PM_NORETURN __attribute__((noreturn))
#define PM_UNUSED __attribute__((unused))
#else
#define PM_PRINTF(f, a)
#define PM_NORETURN
#define PM_UNUSED
#endif

/* Allocation never fails: on OOM these print one line and exit(1). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) PM_PRINTF(1, 2);

/*
 * Grow the array *pp (of *capp elements of size esz) so that it holds at
 * least n elements.  Capacity doubles; new memory is zeroed.
 */
void pm_grow(void *pp, size_t *capp, size_t n, size_t esz);
#define PM_GROW(ptr, cap, n) pm_grow(&(ptr), &(cap), (n), sizeof(*(ptr)))

/*
 * A growing string, NUL-terminated once anything is added (s NULL
 * before); zero-initialised = empty.  The caller owns s: free() it.
 */
struct pm_sb {
	char *s;
	size_t len, cap;
};
void pm_sb_add(struct pm_sb *b, const char *s, size_t n);
void pm_sb_str(struct pm_sb *b, const char *s);
void pm_sb_printf(struct pm_sb *b, const char *fmt, ...) PM_PRINTF(2, 3);

/* Sums of hostile values saturate instead of overflowing. */
static inline int64_t pm_add_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return a < 0 ? INT64_MIN : INT64_MAX;
	return r;
}

/*
 * Diagnostics, one line each on stderr, prefixed "pmuprof: " (errors) or
 * "pmuprof: warning: ".  No trailing newline in @fmt.  The whole line is
 * sanitized as pm_sanitize() does: a name a target chose, formatted into
 * it, cannot break the line or drive the terminal.
 */
void pm_error(const char *fmt, ...) PM_PRINTF(1, 2);
void pm_warn(const char *fmt, ...) PM_PRINTF(1, 2);

/*
 * Format a one-line error message into @buf (NULL or 0 length: nothing).
 * Sanitized as pm_sanitize(), so a hostile name echoed back cannot
 * break the line or the terminal.
 */
void pm_seterr(char *buf, size_t len, const char *fmt, ...) PM_PRINTF(3, 4);
void pm_vseterr(char *buf, size_t len, const char *fmt, va_list ap) PM_PRINTF(3, 0);

/*
 * Make @s safe to write to a terminal, in place: every C0 control, DEL,
 * C1 control (a raw byte or UTF-8 encoded), byte of invalid UTF-8 and
 * bidirectional override becomes '?'.  The string never grows.  Every
 * target-chosen string (comm, paths, function names, labels) goes through
 * it before it reaches stderr or a text output.  Returns @s.
 */
char *pm_sanitize(char *s);

/* One line on stderr, "pmuprof: " + @fmt, sanitized as pm_sanitize(). */
void pm_info(const char *fmt, ...) PM_PRINTF(1, 2);

/* 64-bit hashing (wyhash-style mixing), stable across runs. */
uint64_t pm_hash(const void *data, size_t len, uint64_t seed);
static inline uint64_t pm_hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/*
 * A secret hash seed, new for each call (getrandom, else the clock and an
 * address): tables keyed by what a target or a capture chose hash with it,
 * so that no input can be crafted to pile its keys into one probe chain.
 */
uint64_t pm_hash_seed(void);

/*
 * An index of the caller's array by 64-bit hash: open addressing over
 * index + 1, linear probing, load at most 1/2.  Entries may share a hash
 * (the caller compares keys); none is removed.  Zero-initialised = empty.
 */
struct pm_hidx {
	uint32_t *slot;
	uint64_t *hash;
	size_t size, n;
};
void pm_hidx_add(struct pm_hidx *h, uint64_t hv, uint32_t idx);
/* The candidates for @hv, one per call: *pos starts at SIZE_MAX; -1 at the end. */
long pm_hidx_next(const struct pm_hidx *h, uint64_t hv, size_t *pos);
void pm_hidx_free(struct pm_hidx *h);

/*
 * Where a user-space address of x86-64 can be: no program maps the first
 * page (vm.mmap_min_addr is 4096 at the least), and user space ends below
 * 1 << 47 with four-level page tables, below 1 << 56 with five.
 */
#define PM_NULL_PAGE 4096
#define PM_USER_END (1ULL << 47)
#define PM_USER_END_LA57 (1ULL << 56)

/* Little-endian loads from possibly unaligned bytes. */
static inline uint16_t pm_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t pm_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}
static inline uint64_t pm_le64(const uint8_t *p)
{
	return (uint64_t)pm_le32(p) | ((uint64_t)pm_le32(p + 4) << 32);
}

/* Monotonic clock in nanoseconds; wall clock in nanoseconds since the epoch. */
uint64_t pm_now_ns(void);
uint64_t pm_wall_ns(void);

/*
 * Read a whole small file (procfs, sysfs) into a NUL-terminated heap buffer.
 * Returns the length, or -errno.  *out is set only on success.
 */
long pm_read_file(const char *path, char **out, size_t max);

/* Read an integer from a procfs/sysfs file; -errno on failure. */
int pm_read_long(const char *path, long *out);

/*
 * In @n elements of @size bytes, sorted by the uint64_t at byte @off of
 * each: how many have that key <= @key (so the last of them, if any, is
 * element result - 1).  Binary search.
 */
size_t pm_count_le_u64(const void *base, size_t n, size_t size, size_t off, uint64_t key);

/*
 * Open @path for reading only if it is a regular file: the binaries a
 * target or a capture names may be a FIFO (open would block), a terminal
 * or a device whose open acts (a watchdog, a tape), so nothing but a
 * regular file is opened at all (stat first, then open without blocking
 * and check the same file).  A descriptor, or -errno (-ENOEXEC when it is
 * not a regular file, -EISDIR for a directory).
 */
int pm_open_regular(const char *path);

#endif
