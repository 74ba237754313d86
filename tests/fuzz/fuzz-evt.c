/*
 * libFuzzer target: arbitrary bytes as an event spec (-e TEXT) through
 * pm_evt_parse, then pm_evt_attr and pm_evt_strerror on what it returns.
 * A spec that parses must come back with a non-empty, terminated name and
 * value type; one that does not must leave exactly one non-empty line in
 * err.  The error buffer is sized from the input, so short buffers (down to
 * one byte) are exercised too.
 */
#include "events/events.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len);

static volatile size_t sink;

static void terminated(const char *s, size_t cap)
{
	if (!memchr(s, '\0', cap))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	static const int errs[] = {-EACCES, -EPERM, -ENOENT, -ENODEV, -EOPNOTSUPP, -EINVAL,
				   -EMFILE, -E2BIG, -EBUSY, -ENOSPC, -ESRCH, 0, -9999};
	struct pm_evt_spec spec;
	struct pm_evt_sampling s;
	struct perf_event_attr attr;
	size_t errlen;
	char *text, *err, msg[512];

	if (len < 1 || len > 4096)
		return 0;
	/* [0]: error buffer size and sampling flags; the rest: the spec */
	errlen = 1 + (buf[0] & 0x3f) * 4;
	text = malloc(len);
	err = malloc(errlen);
	memcpy(text, buf + 1, len - 1);
	text[len - 1] = '\0';
	memset(err, 'X', errlen);
	memset(&spec, 0xa5, sizeof(spec));
	if (pm_evt_parse(text, &spec, err, errlen) != 0) {
		terminated(err, errlen);
		if (strchr(err, '\n') || (errlen > 1 && !err[0]))
			abort();
	} else {
		terminated(spec.name, sizeof(spec.name));
		terminated(spec.value_type, sizeof(spec.value_type));
		terminated(spec.value_unit, sizeof(spec.value_unit));
		if (!spec.name[0] || !spec.value_type[0])
			abort();
		memset(&s, 0, sizeof(s));
		if (buf[0] & 0x40)
			s.freq = 1 + len * 97;
		else
			s.period = 1 + len;
		s.stack_size = (uint32_t)(len * 8) & 0xfff8;
		s.regs_mask = buf[0] & 0x80 ? 0x1c0 : 0;
		s.callchain = buf[0] & 1;
		s.kernel_callchain = buf[0] & 2;
		s.tracking = buf[0] & 4;
		s.inherit = buf[0] & 8;
		pm_evt_attr(&spec, &s, &attr);
		if (attr.type != spec.type || attr.config != spec.config ||
		    attr.size != sizeof(attr))
			abort();
		for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
			size_t ml = 1 + (len + i) % sizeof(msg);
			const char *m = pm_evt_strerror(errs[i], &spec, &attr, msg, ml);

			if (m == msg)
				terminated(m, ml);
			if (strchr(m, '\n'))
				abort();
			sink += strlen(m);
		}
		sink += pm_evt_err_unsupported(errs[len % 13]);
	}
	free(err);
	free(text);
	return 0;
}
