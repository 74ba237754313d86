/*
 * sink: intervals from a recording child to the agent over a pipe (sink.h).
 */
#include "agent/sink.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/outfile.h"
#include "base/util.h"

#define MAGIC 0x49414d50u /* "PMAI" */
#define MAX_META 65536u

struct frame_head {
	uint32_t magic, meta_len, pprof_len;
};

int pm_sink_send(int fd, const struct pm_agent_meta *m, const uint8_t *pprof, size_t len)
{
	char *meta = pm_meta_format(m);
	struct frame_head h = { MAGIC, (uint32_t)strlen(meta), (uint32_t)len };
	int rc;

	if (len > PM_SINK_MAX_PROFILE || h.meta_len > MAX_META) {
		free(meta);
		return -EFBIG;
	}
	rc = pm_write_all(fd, &h, sizeof(h));
	if (!rc)
		rc = pm_write_all(fd, meta, h.meta_len);
	if (!rc)
		rc = pm_write_all(fd, pprof, len);
	free(meta);
	return rc;
}

struct pm_sink_rx {
	int fd;
	uint8_t *buf;
	size_t len, cap;
};

struct pm_sink_rx *pm_sink_rx_new(int fd)
{
	struct pm_sink_rx *rx = xcalloc(1, sizeof(*rx));

	rx->fd = fd;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return rx;
}

int pm_sink_rx_fd(const struct pm_sink_rx *rx)
{
	return rx->fd;
}

/* The complete frames at the buffer's start, handed on: -1 on a corrupt one. */
static int frames(struct pm_sink_rx *rx, pm_sink_fn fn, void *arg)
{
	size_t off = 0;

	while (rx->len - off >= sizeof(struct frame_head)) {
		struct frame_head h;
		struct pm_agent_meta m;
		size_t need;

		memcpy(&h, rx->buf + off, sizeof(h));
		if (h.magic != MAGIC || h.meta_len > MAX_META || h.pprof_len > PM_SINK_MAX_PROFILE)
			return -1;
		need = sizeof(h) + h.meta_len + h.pprof_len;
		if (rx->len - off < need)
			break;
		if (pm_meta_parse((const char *)rx->buf + off + sizeof(h), h.meta_len, &m))
			return -1;
		fn(arg, &m, rx->buf + off + sizeof(h) + h.meta_len, h.pprof_len);
		off += need;
	}
	memmove(rx->buf, rx->buf + off, rx->len - off);
	rx->len -= off;
	return 0;
}

int pm_sink_rx_read(struct pm_sink_rx *rx, pm_sink_fn fn, void *arg, bool *corrupt)
{
	for (;;) {
		ssize_t n;

		PM_GROW(rx->buf, rx->cap, rx->len + 65536);
		n = read(rx->fd, rx->buf + rx->len, rx->cap - rx->len);
		if (n > 0) {
			rx->len += (size_t)n;
			if (frames(rx, fn, arg) < 0) {
				*corrupt = true;
				return 0;
			}
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 1;
		*corrupt = rx->len != 0; /* the end, in the middle of a frame */
		return 0;
	}
}

void pm_sink_rx_free(struct pm_sink_rx *rx)
{
	if (!rx)
		return;
	close(rx->fd);
	free(rx->buf);
	free(rx);
}
