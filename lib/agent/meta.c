/*
 * meta: an interval's resource and times, as text for the spool (meta.h).
 */
#include "agent/meta.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

void pm_meta_set(char *dst, size_t n, const char *src)
{
	if (!n)
		return;
	snprintf(dst, n, "%s", src ? src : "");
	pm_sanitize(dst);
}

enum field_kind { F_I32, F_U64, F_STR };

struct field {
	const char *key;
	enum field_kind kind;
	size_t off, size;
};

#define STR(k, f) { k, F_STR, offsetof(struct pm_agent_meta, f), sizeof(((struct pm_agent_meta *)0)->f) }
#define U64(k, f) { k, F_U64, offsetof(struct pm_agent_meta, f), 8 }

static const struct field fields[] = {
	{ "pid", F_I32, offsetof(struct pm_agent_meta, pid), 4 },
	U64("seq", seq),
	U64("start_ns", start_ns),
	U64("duration_ns", duration_ns),
	STR("service", service),
	STR("exe_name", exe_name),
	STR("exe_path", exe_path),
	STR("comm", comm),
	STR("host", host),
	STR("container_id", container_id),
};

/* @s with '%', '\n', '=' and other controls as %XX, appended to @out at *@o. */
static void put_escaped(char *out, size_t *o, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '%' || c == '=' || c < 0x20 || c == 0x7f)
			*o += (size_t)sprintf(out + *o, "%%%02X", c);
		else
			out[(*o)++] = (char)c;
	}
}

char *pm_meta_format(const struct pm_agent_meta *m)
{
	size_t cap = 64, o = 0;
	char *out;

	for (size_t i = 0; i < PM_ARRAY_SIZE(fields); i++)
		cap += strlen(fields[i].key) + 3 * fields[i].size + 24;
	out = xmalloc(cap);
	for (size_t i = 0; i < PM_ARRAY_SIZE(fields); i++) {
		const struct field *f = &fields[i];
		const char *p = (const char *)m + f->off;

		o += (size_t)sprintf(out + o, "%s=", f->key);
		if (f->kind == F_I32)
			o += (size_t)sprintf(out + o, "%" PRId32, *(const int32_t *)(const void *)p);
		else if (f->kind == F_U64)
			o += (size_t)sprintf(out + o, "%" PRIu64, *(const uint64_t *)(const void *)p);
		else
			put_escaped(out, &o, p);
		out[o++] = '\n';
	}
	out[o] = 0;
	return out;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The value @v (@n bytes) unescaped into @dst (@size), cut there; -EINVAL on a bad %XX. */
static int get_escaped(char *dst, size_t size, const char *v, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = v[i];

		if (c == '%') {
			int hi = i + 2 < n ? hexval(v[i + 1]) : -1;
			int lo = i + 2 < n ? hexval(v[i + 2]) : -1;

			if (hi < 0 || lo < 0)
				return -EINVAL;
			c = (char)(hi << 4 | lo);
			i += 2;
		}
		if (o + 1 < size)
			dst[o++] = c ? c : '?';
	}
	dst[o] = 0;
	pm_sanitize(dst);
	return 0;
}

static int get_number(const struct field *f, char *dst, const char *v, size_t n)
{
	char tmp[32], *end;
	unsigned long long x;

	if (n == 0 || n >= sizeof(tmp) || v[0] == '-' || v[0] == '+' || v[0] == ' ')
		return -EINVAL;
	memcpy(tmp, v, n);
	tmp[n] = 0;
	errno = 0;
	x = strtoull(tmp, &end, 10);
	if (errno || *end)
		return -EINVAL;
	if (f->kind == F_I32) {
		int32_t i32 = (int32_t)x;

		if (x > INT32_MAX)
			return -EINVAL;
		memcpy(dst, &i32, sizeof(i32));
	} else {
		uint64_t u64 = x;

		memcpy(dst, &u64, sizeof(u64));
	}
	return 0;
}

static int parse_line(const char *l, size_t n, struct pm_agent_meta *m)
{
	const char *eq = memchr(l, '=', n);

	if (!eq)
		return -EINVAL;
	for (size_t i = 0; i < PM_ARRAY_SIZE(fields); i++) {
		const struct field *f = &fields[i];
		char *dst = (char *)m + f->off;
		const char *v = eq + 1;
		size_t vn = n - (size_t)(v - l);

		if (strlen(f->key) != (size_t)(eq - l) || memcmp(f->key, l, (size_t)(eq - l)) != 0)
			continue;
		return f->kind == F_STR ? get_escaped(dst, f->size, v, vn) : get_number(f, dst, v, vn);
	}
	return 0; /* a key of a later version: skipped */
}

int pm_meta_parse(const char *text, size_t len, struct pm_agent_meta *m)
{
	size_t i = 0;

	memset(m, 0, sizeof(*m));
	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (text + i)) : len - i;

		if (n && parse_line(text + i, n, m))
			return -EINVAL;
		i += n + 1;
	}
	return 0;
}
