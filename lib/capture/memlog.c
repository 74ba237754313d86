/* memlog: the target memory a sample read, logged live and served at replay. */
#include "capture/memlog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

struct pm_mlog {
	uint8_t *buf;
	size_t len, cap;
	/* replay: the sample's MEM records, in buf: offsets and lengths */
	size_t seg[PM_MLOG_MAX_RECORDS], seg_len[PM_MLOG_MAX_RECORDS], nseg;
	size_t cur_k, cur_off; /* the entry after the last one a read used */
};

struct pm_mlog *pm_mlog_new(void)
{
	return xcalloc(1, sizeof(struct pm_mlog));
}

void pm_mlog_free(struct pm_mlog *m)
{
	if (!m)
		return;
	free(m->buf);
	free(m);
}

void pm_mlog_reset(struct pm_mlog *m)
{
	m->len = m->nseg = m->cur_k = m->cur_off = 0;
}

static size_t entry_size(size_t n)
{
	return 16 + ((n + 7) & ~(size_t)7);
}

bool pm_mlog_log(struct pm_mlog *m, pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	const uint8_t *src = buf;
	size_t need = 0, l;

	if (!buf) {
		if (m->len + 16 > PM_MLOG_MAX + PM_MLOG_MARKS)
			return false;
		len = 0;
		need = 16;
	} else {
		for (l = len; l; l -= PM_MIN(l, (size_t)PM_MLOG_CHUNK))
			need += entry_size(PM_MIN(l, (size_t)PM_MLOG_CHUNK));
		if (m->len + need > PM_MLOG_MAX)
			return false;
		if (!len)
			return true; /* nothing to serve: a read of nothing never fails */
	}
	PM_GROW(m->buf, m->cap, m->len + need);
	do {
		size_t n = PM_MIN(len, (size_t)PM_MLOG_CHUNK), sz = entry_size(n);
		uint32_t hd[2] = { (uint32_t)pid, (uint32_t)n };
		uint8_t *e = m->buf + m->len;

		memset(e, 0, sz);
		memcpy(e, hd, 8);
		memcpy(e + 8, &addr, 8);
		if (n)
			memcpy(e + 16, src, n);
		m->len += sz;
		addr += n;
		if (src)
			src += n;
		len -= n;
	} while (len);
	return true;
}

bool pm_mlog_piece(const struct pm_mlog *m, size_t *off, size_t max, const uint8_t **p,
		   size_t *len)
{
	size_t end = *off;

	while (end < m->len) {
		size_t sz = entry_size(pm_le32(m->buf + end + 4));

		if (end + sz - *off > max)
			break;
		end += sz;
	}
	if (end == *off)
		return false; /* the end, or an entry over @max (entries are at most a chunk) */
	*p = m->buf + *off;
	*len = end - *off;
	*off = end;
	return true;
}

int pm_mlog_add_record(struct pm_mlog *m, const void *data, size_t len)
{
	if (len % 8 || m->nseg == PM_MLOG_MAX_RECORDS)
		return -EINVAL;
	PM_GROW(m->buf, m->cap, m->len + len);
	if (len)
		memcpy(m->buf + m->len, data, len);
	m->seg[m->nseg] = m->len;
	m->seg_len[m->nseg++] = len;
	m->len += len;
	return 0;
}

/* The entry at (*k, *off); false past the last.  A torn entry ends its record. */
static bool entry_at(const struct pm_mlog *m, size_t *k, size_t *off, const uint8_t **e,
		     uint32_t *elen, uint64_t *ea, size_t *sz)
{
	for (; *k < m->nseg; (*k)++, *off = 0) {
		const uint8_t *seg = m->buf + m->seg[*k];
		size_t slen = m->seg_len[*k];

		if (*off + 16 > slen)
			continue;
		*e = seg + *off;
		*elen = pm_le32(*e + 4);
		*ea = pm_le64(*e + 8);
		*sz = 16 + (size_t)(((uint64_t)*elen + 7) & ~7ULL);
		if (*sz > slen - *off)
			continue;
		return true;
	}
	return false;
}

/* The next entries, in order: 0, -EFAULT (failed live), 1 (not this read). */
static int read_next(struct pm_mlog *m, pid_t pid, uint64_t addr, uint8_t *out, size_t len)
{
	size_t k = m->cur_k, off = m->cur_off, sz, done = 0;
	const uint8_t *e;
	uint32_t elen;
	uint64_t ea;

	while (done < len) {
		if (!entry_at(m, &k, &off, &e, &elen, &ea, &sz) || (pid_t)pm_le32(e) != pid ||
		    ea != addr + done)
			return 1;
		if (elen == 0) { /* a failed read's mark */
			if (done)
				return 1;
			m->cur_k = k;
			m->cur_off = off + sz;
			return -EFAULT;
		}
		if (elen > len - done || (elen < PM_MLOG_CHUNK && elen != len - done))
			return 1; /* live read another length here */
		memcpy(out + done, e + 16, elen);
		done += elen;
		off += sz;
	}
	m->cur_k = k;
	m->cur_off = off;
	return 0;
}

int pm_mlog_read(struct pm_mlog *m, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	uint8_t *out = buf;
	int rc;

	if (!len)
		return 0;
	rc = read_next(m, pid, addr, out, len);
	if (rc <= 0)
		return rc;
	while (len) { /* any entry holding the address */
		size_t k, off, n = 0, sz;
		const uint8_t *e;
		uint32_t elen;
		uint64_t ea;

		for (k = 0, off = 0; !n && entry_at(m, &k, &off, &e, &elen, &ea, &sz); off += sz)
			if ((pid_t)pm_le32(e) == pid && addr >= ea && addr - ea < elen) {
				n = PM_MIN(elen - (size_t)(addr - ea), len);
				memcpy(out, e + 16 + (addr - ea), n);
			}
		if (!n)
			return -EFAULT;
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}
