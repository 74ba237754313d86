#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static PM_NORETURN void oom(size_t n)
{
	fprintf(stderr, "pmuprof: out of memory (allocating %zu bytes)\n", n);
	exit(1);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom(n * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = xmalloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom(0);
	return p;
}

void pm_grow(void *pp, size_t *capp, size_t n, size_t esz)
{
	void **ptr = pp;
	size_t cap = *capp, ncap;

	if (n <= cap)
		return;
	ncap = cap ? cap : 8;
	while (ncap < n) {
		if (ncap > SIZE_MAX / 2 / esz)
			oom(SIZE_MAX);
		ncap *= 2;
	}
	*ptr = xrealloc(*ptr, ncap * esz);
	memset((char *)*ptr + cap * esz, 0, (ncap - cap) * esz);
	*capp = ncap;
}

void pm_sb_add(struct pm_sb *b, const char *s, size_t n)
{
	PM_GROW(b->s, b->cap, b->len + n + 1);
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void pm_sb_str(struct pm_sb *b, const char *s)
{
	pm_sb_add(b, s, strlen(s));
}

void pm_sb_printf(struct pm_sb *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(tmp)) { /* the common case: one format, one copy */
		pm_sb_add(b, tmp, (size_t)n);
		return;
	}
	PM_GROW(b->s, b->cap, b->len + (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* The length of the valid UTF-8 sequence at @p (1-4), 0 when it is not one. */
static size_t utf8_len(const unsigned char *p)
{
	unsigned char c = p[0];
	size_t n, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90; /* overlong */
	else if (c == 0xf4)
		hi = 0x8f; /* past U+10FFFF */
	for (i = 1; i < n; i++, lo = 0x80, hi = 0xbf)
		if (p[i] < lo || p[i] > hi)
			return 0;
	return n;
}

/* A decoded code point a terminal may act on: C0, DEL, C1, bidi overrides. */
static bool unsafe_cp(const unsigned char *p, size_t n)
{
	uint32_t cp;

	if (n == 1)
		return p[0] < 0x20 || p[0] == 0x7f;
	if (n == 2)
		return p[0] == 0xc2 && p[1] < 0xa0; /* U+0080..U+009F */
	if (n != 3 || p[0] != 0xe2)
		return false;
	cp = ((uint32_t)(p[1] & 0x3f) << 6) | (p[2] & 0x3f); /* U+2000 + cp */
	return (cp >= 0x2a && cp <= 0x2e) || (cp >= 0x66 && cp <= 0x69);
}

char *pm_sanitize(char *s)
{
	unsigned char *r = (unsigned char *)s, *w = r;

	if (!s)
		return s;
	while (*r) {
		size_t n = utf8_len(r);

		if (!n || unsafe_cp(r, n)) {
			*w++ = '?';
			r += n ? n : 1;
			continue;
		}
		while (n--)
			*w++ = *r++;
	}
	*w = '\0';
	return s;
}

__attribute__((format(printf, 2, 0)))
static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	fprintf(stderr, "pmuprof: %s%s\n", prefix, pm_sanitize(buf));
}

void pm_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void pm_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void pm_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void pm_vseterr(char *buf, size_t len, const char *fmt, va_list ap)
{
	if (!buf || !len)
		return;
	vsnprintf(buf, len, fmt, ap);
	pm_sanitize(buf);
}

void pm_seterr(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pm_vseterr(buf, len, fmt, ap);
	va_end(ap);
}

uint64_t pm_hash(const void *data, size_t len, uint64_t seed)
{
	const uint8_t *p = data;
	uint64_t h = seed ^ (len * 0x9e3779b97f4a7c15ULL);

	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		h = pm_hash_u64(h ^ v) + 0x9e3779b97f4a7c15ULL;
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t v = 0;
		memcpy(&v, p, len);
		h = pm_hash_u64(h ^ v ^ ((uint64_t)len << 56));
	}
	return pm_hash_u64(h);
}

uint64_t pm_hash_seed(void)
{
	uint64_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	return pm_hash_u64(pm_now_ns() ^ (uint64_t)(uintptr_t)&v);
}

static void hidx_put(struct pm_hidx *h, uint64_t hv, uint32_t slot)
{
	size_t i = hv & (h->size - 1);

	while (h->slot[i])
		i = (i + 1) & (h->size - 1);
	h->slot[i] = slot;
	h->hash[i] = hv;
	h->n++;
}

void pm_hidx_add(struct pm_hidx *h, uint64_t hv, uint32_t idx)
{
	if ((h->n + 1) * 2 > h->size) {
		struct pm_hidx o = *h;

		h->size = o.size ? o.size * 2 : 64;
		h->slot = xcalloc(h->size, sizeof(*h->slot));
		h->hash = xcalloc(h->size, sizeof(*h->hash));
		h->n = 0;
		for (size_t i = 0; i < o.size; i++)
			if (o.slot[i])
				hidx_put(h, o.hash[i], o.slot[i]);
		free(o.slot);
		free(o.hash);
	}
	hidx_put(h, hv, idx + 1);
}

long pm_hidx_next(const struct pm_hidx *h, uint64_t hv, size_t *pos)
{
	size_t i;

	if (!h->size)
		return -1;
	i = *pos == SIZE_MAX ? hv & (h->size - 1) : (*pos + 1) & (h->size - 1);
	for (; h->slot[i]; i = (i + 1) & (h->size - 1))
		if (h->hash[i] == hv) {
			*pos = i;
			return (long)h->slot[i] - 1;
		}
	return -1;
}

void pm_hidx_free(struct pm_hidx *h)
{
	free(h->slot);
	free(h->hash);
	memset(h, 0, sizeof(*h));
}

uint64_t pm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t pm_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

long pm_read_file(const char *path, char **out, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0, cap = 4096;
	char *buf;

	if (fd < 0)
		return -errno;
	buf = xmalloc(cap + 1);
	for (;;) {
		ssize_t n;

		if (len == cap) {
			if (cap >= max)
				break;
			cap *= 2;
			buf = xrealloc(buf, cap + 1);
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			int err = errno;
			if (err == EINTR)
				continue;
			close(fd);
			free(buf);
			return -err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	return (long)len;
}

int pm_read_long(const char *path, long *out)
{
	char *buf, *end;
	long n = pm_read_file(path, &buf, 64);

	if (n < 0)
		return (int)n;
	errno = 0;
	/* n >= 0: buf is set (a failed open() sets errno > 0, which the analyzer does not know) */
	*out = strtol(buf, &end, 10); /* NOLINT(clang-analyzer-core.CallAndMessage) */
	if (end == buf || errno) {
		free(buf);
		return -EINVAL;
	}
	free(buf);
	return 0;
}

int pm_open_regular(const char *path)
{
	struct stat st, fst;
	int fd;

	if (stat(path, &st) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -ENOEXEC;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	/* replaced between the two: not what was checked */
	if (fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode) || fst.st_dev != st.st_dev ||
	    fst.st_ino != st.st_ino) {
		close(fd);
		return -ENOEXEC;
	}
	return fd;
}

size_t pm_count_le_u64(const void *base, size_t n, size_t size, size_t off, uint64_t key)
{
	const unsigned char *b = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t v;

		memcpy(&v, b + mid * size + off, sizeof(v));
		if (v <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
