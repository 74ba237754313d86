/*
 * Unit tests for lib/datafile: a capture written and read back (attr,
 * meta, kernel and pmuprof records, trailer), a sample whose stack copy is
 * cut, truncation at every length, and corrupt headers and records.
 */
#include "capture/datafile.h"

#include "perf/rec.h"
#include "base/util.h"

#include "test.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/pmuprof-test-datafile.XXXXXX";

static const char *tmp_path(const char *name)
{
	return pm_test_tmp_path(dir, sizeof(dir), name);
}

static void fill_attr(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->freq = 1;
	a->sample_freq = 997;
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME | PERF_SAMPLE_STACK_USER;
	a->sample_stack_user = 256;
	a->sample_id_all = 1;
}

/* A sample record: id, ip, pid/tid, time, stack of 256 bytes (dyn 200). */
static size_t make_sample(uint64_t *w)
{
	size_t i, n = 0;
	struct perf_event_header *h = (struct perf_event_header *)w;

	n = 1;
	w[n++] = 42;                   /* id */
	w[n++] = 0x401000;             /* ip */
	w[n++] = 7 | (8ULL << 32);     /* pid, tid */
	w[n++] = 1000;                 /* time */
	w[n++] = 256;                  /* stack size */
	for (i = 0; i < 32; i++)
		w[n++] = 0x1000 + i;
	w[n++] = 200;                  /* dyn size */
	h->type = PERF_RECORD_SAMPLE;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = (uint16_t)(n * 8);
	return n * 8;
}

static int write_capture(const char *path, bool finish)
{
	struct pm_data_writer *w;
	struct perf_event_attr a;
	struct pm_data_meta meta;
	struct pm_data_trailer t;
	uint64_t rec[64];
	struct perf_event_header *h = (struct perf_event_header *)rec;
	struct pm_rec r;
	struct pm_rec_layout l;

	fill_attr(&a);
	memset(&meta, 0, sizeof(meta));
	snprintf(meta.name, sizeof(meta.name), "cpu-clock");
	snprintf(meta.value_type, sizeof(meta.value_type), "cpu");
	snprintf(meta.value_unit, sizeof(meta.value_unit), "nanoseconds");
	meta.t0_wall_ns = 123;
	CHECK_INT(pm_data_create(&w, path, &a, 1, &meta, NULL), 0);
	CHECK_INT(pm_data_write_map(w, 7, 0x400000, 0x500000, 0, "/bin/true"), 0);
	CHECK_INT(pm_data_write_binary(w, "/bin/true", "0123abcd", 0), 0);
	CHECK_INT(pm_data_write_owner(w, 42, 8), 0);
	make_sample(rec);
	CHECK_INT(pm_data_write(w, h), 0);
	pm_rec_layout_from_attr(&l, &a);
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(pm_data_write_sample_cut(w, h, r.sample.stack, r.sample.stack_size,
					   r.sample.dyn_size, 60),
		  0);
	if (!finish) {
		pm_data_abort(w);
		return PM_PASS;
	}
	memset(&t, 0, sizeof(t));
	t.samples = 2;
	t.lost = 1;
	CHECK_INT(pm_data_finish(w, &t), 0);
	return PM_PASS;
}

static int t_roundtrip(void)
{
	const char *path = tmp_path("a.data");
	struct pm_data *d;
	const struct perf_event_header *h;
	struct pm_data_map m;
	struct pm_data_binary b;
	struct pm_data_owner o;
	struct pm_rec_layout l;
	struct pm_rec r;
	char err[256];

	CHECK(path);
	CHECK_INT(write_capture(path, true), PM_PASS);
	CHECK_INT(pm_data_open(&d, path, err, sizeof(err)), 0);
	CHECK_INT(pm_data_attr(d)->sample_freq, 997);
	CHECK_INT(pm_data_nattrs(d), 1);
	CHECK_STR(pm_data_meta(d)->name, "cpu-clock");
	CHECK_INT(pm_data_meta(d)->t0_wall_ns, 123);
	CHECK(!pm_data_truncated(d));
	CHECK(pm_data_trailer(d));
	CHECK_INT(pm_data_trailer(d)->samples, 2);
	CHECK_INT(pm_data_trailer(d)->records, 5);
	pm_rec_layout_from_attr(&l, pm_data_attr(d));

	CHECK_INT(pm_data_next(d, &h, err, sizeof(err)), 1);
	CHECK_INT(pm_data_decode_map(h, &m), 0);
	CHECK_INT(m.pid, 7);
	CHECK_INT(m.start, 0x400000);
	CHECK_INT(m.end, 0x500000);
	CHECK_STR(m.path, "/bin/true");
	CHECK_INT(pm_data_next(d, &h, err, sizeof(err)), 1);
	CHECK_INT(pm_data_decode_binary(h, &b), 0);
	CHECK_STR(b.build_id, "0123abcd");
	CHECK_STR(b.path, "/bin/true");
	CHECK_INT(pm_data_next(d, &h, err, sizeof(err)), 1);
	CHECK_INT(pm_data_decode_owner(h, &o), 0);
	CHECK_INT(o.id, 42);
	CHECK_INT(o.tid, 8);
	/* the sample as written */
	CHECK_INT(pm_data_next(d, &h, err, sizeof(err)), 1);
	CHECK_INT(h->type, PERF_RECORD_SAMPLE);
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.sample.stack_size, 256);
	CHECK_INT(r.sample.dyn_size, 200);
	/* the cut one: 64 bytes kept, the same fields otherwise */
	CHECK_INT(pm_data_next(d, &h, err, sizeof(err)), 1);
	CHECK_INT(pm_rec_decode(h, &l, &r), 0);
	CHECK_INT(r.sample.stack_size, 64);
	CHECK_INT(r.sample.dyn_size, 64);
	CHECK_INT(r.sample.pid, 7);
	CHECK_INT(r.sample.tid, 8);
	CHECK_INT(r.sample.ip, 0x401000);
	CHECK_INT(pm_le64(r.sample.stack + 56), 0x1007);
	CHECK_INT(pm_data_next(d, &h, err, sizeof(err)), 0);
	pm_data_close(d);
	unlink(path);
	return PM_PASS;
}

static int t_abort_leaves_nothing(void)
{
	const char *path = tmp_path("b.data");

	CHECK(path);
	unlink(path);
	CHECK_INT(write_capture(path, false), PM_PASS);
	CHECK(access(path, F_OK) != 0);
	return PM_PASS;
}

/* Every prefix of a good capture: opens as truncated or fails cleanly. */
static int t_truncated(void)
{
	const char *path = tmp_path("c.data");
	char *buf, err[256];
	long len, n;

	CHECK(path);
	CHECK_INT(write_capture(path, true), PM_PASS);
	len = pm_read_file(path, &buf, 1 << 20);
	CHECK(len > 0);
	for (n = 0; n < len; n++) {
		struct pm_data *d;
		const struct perf_event_header *h;
		int rc = pm_data_open_mem(&d, (const uint8_t *)buf, (size_t)n, err, sizeof(err));
		int recs = 0;

		if (rc) {
			CHECK_INT(rc, -EINVAL);
			CHECK(err[0]);
			continue;
		}
		CHECK(pm_data_truncated(d) || !pm_data_trailer(d));
		while ((rc = pm_data_next(d, &h, err, sizeof(err))) > 0)
			recs++;
		CHECK_INT(rc, 0);
		CHECK(recs <= 5);
		pm_data_close(d);
	}
	free(buf);
	unlink(path);
	return PM_PASS;
}

static int t_corrupt(void)
{
	const char *path = tmp_path("d.data");
	struct pm_data *d;
	const struct perf_event_header *h;
	char *buf, err[256];
	struct pm_data_header hd;
	long len;
	int rc;

	CHECK(path);
	CHECK_INT(write_capture(path, true), PM_PASS);
	len = pm_read_file(path, &buf, 1 << 20);
	CHECK(len > 0);
	/* bad magic */
	buf[0] ^= 1;
	CHECK_INT(pm_data_open_mem(&d, (uint8_t *)buf, (size_t)len, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "not a pmuprof capture"));
	buf[0] ^= 1;
	/* a newer version */
	memcpy(&hd, buf, sizeof(hd));
	hd.version = 99;
	memcpy(buf, &hd, sizeof(hd));
	CHECK_INT(pm_data_open_mem(&d, (uint8_t *)buf, (size_t)len, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "version 99"));
	hd.version = PM_DATA_VERSION;
	/* a section offset past the end */
	hd.meta_off = (uint64_t)len * 8;
	memcpy(buf, &hd, sizeof(hd));
	CHECK_INT(pm_data_open_mem(&d, (uint8_t *)buf, (size_t)len, err, sizeof(err)), -EINVAL);
	memcpy(&hd, buf, sizeof(hd));
	hd.meta_off = sizeof(hd) + 8 + 8 + ((sizeof(struct perf_event_attr) + 7) & ~7UL);
	memcpy(buf, &hd, sizeof(hd));
	CHECK_INT(pm_data_open_mem(&d, (uint8_t *)buf, (size_t)len, err, sizeof(err)), 0);
	pm_data_close(d);
	/* a record of size 12 inside a finished stream */
	buf[hd.stream_off + 6] = 12;
	buf[hd.stream_off + 7] = 0;
	CHECK_INT(pm_data_open_mem(&d, (uint8_t *)buf, (size_t)len, err, sizeof(err)), 0);
	rc = pm_data_next(d, &h, err, sizeof(err));
	CHECK_INT(rc, -EINVAL);
	CHECK(strstr(err, "corrupt capture"));
	pm_data_close(d);
	/* empty file, not a file */
	CHECK_INT(pm_data_open_mem(&d, (uint8_t *)buf, 0, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "empty"));
	CHECK(pm_data_open(&d, "/nonexistent/x", err, sizeof(err)) == -ENOENT);
	CHECK(pm_data_open(&d, "/tmp", err, sizeof(err)) == -EISDIR);
	free(buf);
	unlink(path);
	return PM_PASS;
}

static int t_own_records_bounds(void)
{
	uint64_t w[8];
	struct perf_event_header *h = (struct perf_event_header *)w;
	struct pm_data_map m;
	struct pm_data_binary b;

	memset(w, 'x', sizeof(w)); /* no NUL anywhere */
	h->type = PM_DATA_REC_MAP;
	h->size = 48;
	memset(w + 1, 0, 32);
	w[2] = 0x1000;
	w[3] = 0x2000;
	CHECK_INT(pm_data_decode_map(h, &m), -EINVAL);
	memset(w, 'x', sizeof(w));
	h->type = PM_DATA_REC_BINARY;
	h->misc = 0;
	h->size = 64;
	memset(w + 1, 0, 8);
	CHECK_INT(pm_data_decode_binary(h, &b), -EINVAL);
	h->size = 8;
	CHECK_INT(pm_data_decode_binary(h, &b), -EINVAL);
	CHECK_INT(pm_data_decode_map(h, &m), -EINVAL);
	return PM_PASS;
}

/*
 * The snapshots' records (SNAPMEM parts, WALL, INUSE) written and read
 * back, and every length in them checked: a part or a pid list that runs
 * past its record, a bad type, too many pids.
 */
static int t_snap_records(void)
{
	const char *path = tmp_path("snap.data");
	struct pm_data_writer *w;
	struct perf_event_attr a;
	struct pm_data_meta meta;
	struct pm_data_trailer t;
	struct pm_data_snap sn, got;
	struct pm_data *d;
	const struct perf_event_header *h;
	const uint8_t *p;
	uint8_t part[PM_DATA_SNAPMEM_MAX + 1];
	uint32_t pids[3] = { 101, 202, 303 };
	uint64_t buf[8];
	struct perf_event_header *bh = (struct perf_event_header *)buf;
	size_t len;
	char err[256];

	CHECK(path);
	fill_attr(&a);
	memset(&meta, 0, sizeof(meta));
	meta.wall_hz = 20;
	meta.flags = PM_DATA_INUSE;
	for (size_t i = 0; i < sizeof(part); i++)
		part[i] = (uint8_t)(i * 7);
	CHECK_INT(pm_data_create(&w, path, &a, 1, &meta, NULL), 0);
	CHECK_INT(pm_data_write_snapmem(w, part, 5), 0);
	CHECK_INT(pm_data_write_snapmem(w, part, PM_DATA_SNAPMEM_MAX), 0);
	CHECK_INT(pm_data_write_snapmem(w, part, PM_DATA_SNAPMEM_MAX + 1), -EINVAL);
	CHECK_INT(pm_data_write_snapmem(w, part, 0), 0);
	memset(&sn, 0, sizeof(sn));
	sn.type = PM_DATA_REC_WALL;
	sn.time = 123456789;
	sn.npids = 3;
	sn.pids = pids;
	CHECK_INT(pm_data_write_snap(w, &sn), 0);
	sn.type = PM_DATA_REC_INUSE;
	sn.flags = PM_DATA_SNAP_FINAL;
	sn.npids = 0;
	CHECK_INT(pm_data_write_snap(w, &sn), 0);
	sn.type = PM_DATA_REC_MEM;
	CHECK_INT(pm_data_write_snap(w, &sn), -EINVAL);
	sn.type = PM_DATA_REC_WALL;
	sn.npids = PM_DATA_SNAP_MAX_PIDS + 1;
	CHECK_INT(pm_data_write_snap(w, &sn), -EINVAL);
	memset(&t, 0, sizeof(t));
	CHECK_INT(pm_data_finish(w, &t), 0);

	CHECK_INT(pm_data_open(&d, path, err, sizeof(err)), 0);
	CHECK_INT((int)pm_data_meta(d)->wall_hz, 20);
	CHECK(pm_data_meta(d)->flags & PM_DATA_INUSE);
	CHECK_INT(pm_data_next(d, &h, err, sizeof(err)), 1);
	CHECK_INT(pm_data_decode_snapmem(h, &p, &len), 0);
	CHECK_INT((int)len, 5);
	CHECK(!memcmp(p, part, 5));
	CHECK_INT(pm_data_next(d, &h, err, sizeof(err)), 1);
	CHECK_INT(pm_data_decode_snapmem(h, &p, &len), 0);
	CHECK_INT((int)len, (int)PM_DATA_SNAPMEM_MAX);
	CHECK(!memcmp(p, part, len));
	CHECK_INT(pm_data_next(d, &h, err, sizeof(err)), 1);
	CHECK_INT(pm_data_decode_snapmem(h, &p, &len), 0);
	CHECK_INT((int)len, 0);
	CHECK_INT(pm_data_next(d, &h, err, sizeof(err)), 1);
	CHECK_INT(pm_data_decode_snap(h, &got), 0);
	CHECK_INT((int)got.type, PM_DATA_REC_WALL);
	CHECK(got.time == 123456789);
	CHECK_INT((int)got.npids, 3);
	CHECK_INT((int)got.pids[0], 101);
	CHECK_INT((int)got.pids[2], 303);
	CHECK_INT(pm_data_decode_snapmem(h, &p, &len), -EINVAL); /* not a part */
	CHECK_INT(pm_data_next(d, &h, err, sizeof(err)), 1);
	CHECK_INT(pm_data_decode_snap(h, &got), 0);
	CHECK_INT((int)got.type, PM_DATA_REC_INUSE);
	CHECK_INT((int)got.flags, PM_DATA_SNAP_FINAL);
	CHECK_INT((int)got.npids, 0);
	CHECK_INT(pm_data_next(d, &h, err, sizeof(err)), 0);
	pm_data_close(d);
	unlink(path);

	/* hostile lengths */
	memset(buf, 0, sizeof(buf));
	bh->type = PM_DATA_REC_SNAPMEM;
	bh->size = 24;
	buf[1] = 9; /* 9 bytes in a record with room for 8 */
	CHECK_INT(pm_data_decode_snapmem(bh, &p, &len), -EINVAL);
	buf[1] = 0; /* 0 bytes and 8 of padding: not what the writer pads */
	CHECK_INT(pm_data_decode_snapmem(bh, &p, &len), -EINVAL);
	buf[1] = 1;
	CHECK_INT(pm_data_decode_snapmem(bh, &p, &len), 0);
	bh->size = 8;
	CHECK_INT(pm_data_decode_snapmem(bh, &p, &len), -EINVAL);
	bh->type = PM_DATA_REC_WALL;
	bh->size = 16;
	CHECK_INT(pm_data_decode_snap(bh, &got), -EINVAL);
	bh->size = 32;
	buf[2] = (uint64_t)3 << 32; /* 3 pids, room for 2 */
	CHECK_INT(pm_data_decode_snap(bh, &got), -EINVAL);
	buf[2] = (uint64_t)2 << 32;
	CHECK_INT(pm_data_decode_snap(bh, &got), 0);
	buf[2] = (uint64_t)(PM_DATA_SNAP_MAX_PIDS + 1) << 32;
	bh->size = 64;
	CHECK_INT(pm_data_decode_snap(bh, &got), -EINVAL);
	bh->type = PM_DATA_REC_MAP;
	CHECK_INT(pm_data_decode_snap(bh, &got), -EINVAL);
	return PM_PASS;
}

/* Several events: every attr, the other events' descriptions, whose id is whose. */
static int t_events(void)
{
	const char *path = tmp_path("ev.data");
	struct pm_data_writer *w;
	struct perf_event_attr a[3];
	struct pm_data_meta meta;
	struct pm_data_trailer t;
	struct pm_data_event ev, got;
	struct pm_data_evid ei;
	struct pm_data *d;
	const struct perf_event_header *h;
	char err[256];
	uint64_t buf[32];
	struct perf_event_header *bh = (struct perf_event_header *)buf;

	CHECK(path);
	for (int i = 0; i < 3; i++) {
		fill_attr(&a[i]);
		a[i].sample_freq = 100 + (uint64_t)i;
	}
	memset(&meta, 0, sizeof(meta));
	snprintf(meta.name, sizeof(meta.name), "cpu-clock");
	snprintf(meta.value_type, sizeof(meta.value_type), "cpu-clock");
	snprintf(meta.value_unit, sizeof(meta.value_unit), "nanoseconds");
	CHECK_INT(pm_data_create(&w, path, a, 0, &meta, NULL), -EINVAL);
	CHECK_INT(pm_data_create(&w, path, a, PM_DATA_MAX_ATTRS + 1, &meta, NULL), -EINVAL);
	CHECK_INT(pm_data_create(&w, path, a, 3, &meta, NULL), 0);
	memset(&ev, 0, sizeof(ev));
	ev.index = 2;
	ev.type = 1;
	ev.config = 3;
	snprintf(ev.name, sizeof(ev.name), "context-switches");
	snprintf(ev.value_type, sizeof(ev.value_type), "context-switches");
	snprintf(ev.value_unit, sizeof(ev.value_unit), "count");
	CHECK_INT(pm_data_write_event(w, &ev), 0);
	CHECK_INT(pm_data_write_evid(w, 77, 2), 0);
	memset(&t, 0, sizeof(t));
	CHECK_INT(pm_data_finish(w, &t), 0);

	CHECK_INT(pm_data_open(&d, path, err, sizeof(err)), 0);
	CHECK_INT(pm_data_nattrs(d), 3);
	CHECK_INT(pm_data_attr_at(d, 0)->sample_freq, 100);
	CHECK_INT(pm_data_attr_at(d, 2)->sample_freq, 102);
	CHECK(!pm_data_attr_at(d, 3));
	CHECK_INT(pm_data_next(d, &h, err, sizeof(err)), 1);
	CHECK_INT(pm_data_decode_event(h, &got), 0);
	CHECK_INT(got.index, 2);
	CHECK_INT(got.type, 1);
	CHECK_INT(got.config, 3);
	CHECK_STR(got.name, "context-switches");
	CHECK_STR(got.value_unit, "count");
	CHECK_INT(pm_data_decode_evid(h, &ei), -EINVAL);
	CHECK_INT(pm_data_next(d, &h, err, sizeof(err)), 1);
	CHECK_INT(pm_data_decode_evid(h, &ei), 0);
	CHECK_INT(ei.id, 77);
	CHECK_INT(ei.index, 2);
	CHECK_INT(pm_data_decode_event(h, &got), -EINVAL);
	CHECK_INT(pm_data_next(d, &h, err, sizeof(err)), 0);
	pm_data_close(d);
	unlink(path);

	/* bounds: an index past the attrs, event 0 (the meta's), names without a NUL */
	memset(buf, 'x', sizeof(buf));
	bh->type = PM_DATA_REC_EVID;
	bh->misc = 0;
	bh->size = 24;
	buf[2] = PM_DATA_MAX_ATTRS;
	CHECK_INT(pm_data_decode_evid(bh, &ei), -EINVAL);
	bh->type = PM_DATA_REC_EVENT;
	bh->size = 8 + 16 + 144;
	memset(buf + 1, 0, 8);
	CHECK_INT(pm_data_decode_event(bh, &got), -EINVAL); /* index 0 */
	buf[1] = 1;
	CHECK_INT(pm_data_decode_event(bh, &got), 0);
	CHECK_INT(strlen(got.name), 63);
	CHECK_INT(strlen(got.value_unit), 15);
	bh->size = 24;
	CHECK_INT(pm_data_decode_event(bh, &got), -EINVAL);
	return PM_PASS;
}

/*
 * A stream several times the reader's window, records of every size
 * straddling its edges: each comes back whole and in order; then the same
 * file cut in a record past the first window: every whole record before the
 * cut, and "truncated".
 */
static int t_window(void)
{
	const char *path = tmp_path("big.data");
	struct pm_data_writer *w;
	struct perf_event_attr a;
	struct pm_data_meta meta;
	struct pm_data_trailer t;
	struct pm_data *d;
	const struct perf_event_header *h;
	char err[256];
	static uint64_t rec[8192];
	struct perf_event_header *rh = (struct perf_event_header *)rec;
	uint64_t off = 0, cut = 0, i, n = 14000, whole = 0;
	struct pm_data_header dh;
	FILE *f;

	CHECK(path);
	fill_attr(&a);
	memset(&meta, 0, sizeof(meta));
	snprintf(meta.name, sizeof(meta.name), "cpu-clock");
	snprintf(meta.value_type, sizeof(meta.value_type), "cpu");
	snprintf(meta.value_unit, sizeof(meta.value_unit), "nanoseconds");
	CHECK_INT(pm_data_create(&w, path, &a, 1, &meta, NULL), 0);
	for (i = 0; i < n; i++) {
		size_t words = 3 + (i * 7919) % 400 + (i % 97 == 0 ? 7000 : 0);

		rh->type = PERF_RECORD_MAX + 1; /* not decoded: only carried */
		rh->misc = 0;
		rh->size = (uint16_t)(words * 8);
		rec[1] = i;
		rec[words - 1] = ~i;
		CHECK_INT(pm_data_write(w, rh), 0);
		off += words * 8;
		if (!cut && off > (6u << 20))
			cut = off - 16, whole = i; /* records 0..i-1 are before the cut */
	}
	memset(&t, 0, sizeof(t));
	CHECK_INT(pm_data_finish(w, &t), 0);

	CHECK_INT(pm_data_open(&d, path, err, sizeof(err)), 0);
	for (i = 0; pm_data_next(d, &h, err, sizeof(err)) == 1; i++) {
		const uint64_t *b = (const uint64_t *)h;
		size_t words = 3 + (i * 7919) % 400 + (i % 97 == 0 ? 7000 : 0);

		if (h->size != words * 8 || b[1] != i || b[words - 1] != ~i) {
			fprintf(stderr, "record %" PRIu64 ": size %u, first %" PRIu64 "\n", i, h->size,
				b[1]);
			pm_data_close(d);
			return PM_FAIL;
		}
	}
	CHECK_INT(i, n);
	CHECK(!pm_data_truncated(d));
	pm_data_close(d);

	/* the header's stream offset: the records start there */
	f = fopen(path, "rb");
	CHECK(f);
	CHECK(fread(&dh, sizeof(dh), 1, f) == 1);
	fclose(f);
	CHECK(truncate(path, (off_t)(dh.stream_off + cut)) == 0);
	CHECK_INT(pm_data_open(&d, path, err, sizeof(err)), 0);
	for (i = 0; pm_data_next(d, &h, err, sizeof(err)) == 1; i++)
		;
	CHECK_INT(i, whole);
	CHECK(pm_data_truncated(d));
	pm_data_close(d);
	unlink(path);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "events", t_events },
	{ "roundtrip", t_roundtrip },
	{ "window", t_window },
	{ "abort-leaves-nothing", t_abort_leaves_nothing },
	{ "truncated-every-length", t_truncated },
	{ "corrupt", t_corrupt },
	{ "own-records-bounds", t_own_records_bounds },
	{ "snap-records", t_snap_records },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	int rc = pm_test_main(argc, argv, "datafile", tests);

	rmdir(dir);
	return rc;
}
