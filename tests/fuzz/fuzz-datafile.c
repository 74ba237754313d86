/*
 * libFuzzer target: arbitrary bytes as a capture, through the reader
 * (pm_data_open_mem, pm_data_next) and the decoders of every record it
 * hands out: pmuprof's own records and, under the capture's attr, the
 * kernel's (pm_rec_decode); the snapshots' parts, joined, through the
 * snapshot log's decoder (snaplog.h), each against the one before, and a
 * read of what it decoded.  Every byte a decoded record points at is read
 * back so that ASan sees any pointer that strays outside the record.  The
 * same bytes are then read as a file (a memfd: pm_data_open and its window)
 * and must give the same records, the same end and the same error.
 */
#include "capture/datafile.h"
#include "perf/rec.h"
#include "capture/snaplog.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len);

static volatile uint64_t sink;

static void touch(const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		sink += b[i];
}

/* The file reader against the memory reader, record by record. */
static void same_as_file(const uint8_t *buf, size_t len)
{
	struct pm_data *dm = NULL, *df = NULL;
	const struct perf_event_header *hm, *hf;
	char em[256], ef[256], path[64];
	int fd = memfd_create("fuzz-datafile", MFD_CLOEXEC), rm, rf, n = 0;

	if (fd < 0)
		return;
	if (write(fd, buf, len) != (ssize_t)len) {
		close(fd);
		return;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	em[0] = ef[0] = '\0';
	rm = pm_data_open_mem(&dm, buf, len, em, sizeof(em));
	rf = pm_data_open(&df, path, ef, sizeof(ef));
	if (rm != rf || strcmp(em, ef) != 0)
		abort();
	while (!rm && n++ < 100000) {
		rm = pm_data_next(dm, &hm, em, sizeof(em));
		rf = pm_data_next(df, &hf, ef, sizeof(ef));
		if (rm != rf || (rm < 0 && strcmp(em, ef) != 0) ||
		    (rm > 0 && (hm->size != hf->size || memcmp(hm, hf, hm->size) != 0)))
			abort();
		if (rm <= 0)
			break;
	}
	if (dm && df && pm_data_truncated(dm) != pm_data_truncated(df))
		abort();
	pm_data_close(dm);
	pm_data_close(df);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	struct pm_data *d;
	const struct perf_event_header *h;
	struct pm_rec_layout l;
	struct pm_slog *slog;
	uint8_t *joined = NULL;
	size_t njoin = 0;
	char err[256];
	int n = 0;

	same_as_file(buf, len);
	if (pm_data_open_mem(&d, buf, len, err, sizeof(err)))
		return 0;
	pm_rec_layout_from_attr(&l, pm_data_attr(d));
	touch(pm_data_meta(d), sizeof(struct pm_data_meta));
	slog = pm_slog_new();
	while (n++ < 100000 && pm_data_next(d, &h, err, sizeof(err)) > 0) {
		struct pm_data_map m;
		struct pm_data_binary b;
		struct pm_data_owner o;
		struct pm_data_event ev;
		struct pm_data_evid ei;
		struct pm_data_snap sn;
		const uint8_t *sp;
		size_t slen;
		struct pm_rec r;

		touch(h, h->size);
		if (pm_data_decode_map(h, &m) == 0)
			touch(m.path, strlen(m.path));
		if (pm_data_decode_binary(h, &b) == 0) {
			touch(b.path, strlen(b.path));
			touch(b.build_id, strlen(b.build_id));
		}
		if (pm_data_decode_owner(h, &o) == 0)
			sink += o.id;
		if (pm_data_decode_event(h, &ev) == 0) {
			touch(ev.name, strlen(ev.name));
			touch(ev.value_type, strlen(ev.value_type));
			touch(ev.value_unit, strlen(ev.value_unit));
			touch(pm_data_attr_at(d, ev.index), ev.index < pm_data_nattrs(d) ? 8 : 0);
		}
		if (pm_data_decode_evid(h, &ei) == 0)
			sink += ei.id + ei.index;
		if (pm_data_decode_snapmem(h, &sp, &slen) == 0 && slen <= (1u << 24) - njoin) {
			touch(sp, slen);
			joined = realloc(joined, njoin + slen + 1);
			memcpy(joined + njoin, sp, slen);
			njoin += slen;
		}
		if (pm_data_decode_snap(h, &sn) == 0) {
			uint8_t got[64];

			touch(sn.pids, 4 * (size_t)sn.npids);
			if (pm_slog_decode(slog, joined, njoin) == 0)
				for (int k = 0; k < 8; k++)
					sink += (uint64_t)pm_slog_read(slog, (int)(sn.npids ? sn.pids[0] : 0),
								       sn.time + 8 * (uint64_t)k, got, 8);
			free(joined);
			joined = NULL;
			njoin = 0;
		}
		if (h->type < PM_DATA_REC_BASE && pm_rec_decode(h, &l, &r) == 0 &&
		    r.type == PERF_RECORD_SAMPLE) {
			touch(r.sample.ips, r.sample.nr * 8);
			if (r.sample.stack)
				touch(r.sample.stack, r.sample.dyn_size);
		}
	}
	free(joined);
	pm_slog_free(slog);
	pm_data_close(d);
	return 0;
}
