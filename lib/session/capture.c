/*
 * capture: the replayable capture of a recording (--raw), written live and
 * replayed (capture.h).
 *
 * Everything after the rings -- maps, unwinders, stacks, the sources,
 * the profile -- is fed by pm_ses_feed(), live from the drain or from a
 * capture file.  Live, feed() also appends each record it processed to the
 * capture, with what the session learnt from /proc on the way (maps
 * snapshots, the build ID of each binary it opened, attached event ids),
 * so that a replay walks the same path without a live process.  A
 * sample's stack copy is cut to what the unwinder needed: the slot of the
 * last return address it read, checked by walking the cut copy again (no
 * match: the full copy is kept).
 */
#include "session/capture.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "session/attach.h"
#include "capture/datafile.h"
#include "goruntime/goroutine.h"
#include "symbols/maps.h"
#include "capture/memlog.h"
#include "session/profbuild.h"
#include "capture/snaplog.h"
#include "session/source.h"

/*
 * How much of this sample's stack copy the capture keeps: up to the slot
 * of the last return address found in the copy (the unwinder reads return
 * addresses in address order), plus a margin; proven by walking the cut
 * copy again, as the replay will, and keeping everything on a difference.
 */
uint64_t pm_cap_keep(struct session *s, const struct pm_unw_input *in, pid_t pid,
			     size_t n, unsigned status)
{
	struct pm_unw_input t;
	uint64_t off = 0, keep, o, v;
	unsigned st2;
	size_t i, m;

	if (!in->stack || in->stack_len < 8)
		return UINT64_MAX;
	for (i = 1; i < n; i++) {
		for (o = off; o + 8 <= in->stack_len; o += 8) {
			memcpy(&v, in->stack + o, 8);
			if (v == s->pcs[i])
				break;
		}
		if (o + 8 > in->stack_len)
			break; /* the rest came from the callchain */
		off = o + 8;
	}
	keep = off + 64;
	if (keep >= in->stack_len)
		return UINT64_MAX;
	t = *in;
	t.stack_len = keep;
	t.read_mem = NULL;
	m = pm_unw_walk(pm_reg_unwinder(s->reg, pid), &t, s->vpcs, PM_REG_MAX_FRAMES, &st2);
	if (m != n || st2 != status || memcmp(s->vpcs, s->pcs, n * sizeof(*s->pcs)) != 0)
		return UINT64_MAX;
	return keep;
}

/*
 * Live, --raw: log a read (@buf NULL: it failed) where the replay will
 * look for it: the snapshot's log during a source's snapshot, else the
 * sample's.  False when it cannot be logged: the read must fail live too.
 */
static bool cap_log(struct session *s, pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	if (!s->cap)
		return true;
	if (s->snap)
		return pm_slog_log(s->snap, pid, addr, buf, len);
	return pm_mlog_log(s->mlog, pid, addr, buf, buf ? len : 0) && buf;
}

/*
 * Every read of the target while processing a sample or taking a
 * snapshot: live, from the process (and logged with --raw, failures too);
 * at replay, from the logged entries (memlog.h, snaplog.h).
 */
int pm_cap_read(struct session *s, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	if (!s->replay) {
		struct iovec l = { buf, len }, r = { (void *)(uintptr_t)addr, len };
		ssize_t got;

		if (addr == PM_GOR_CLOCK_ADDR && len == 8) { /* the clock, logged (goroutine.h) */
			uint64_t now = pm_now_ns();

			memcpy(buf, &now, 8);
			return cap_log(s, pid, addr, buf, len) ? 0 : -EFAULT;
		}
		if (addr == PM_GOR_WATCH_ADDR && len == 8) /* a value, logged as given (goroutine.h) */
			return cap_log(s, pid, addr, buf, len) ? 0 : -EFAULT;
		got = process_vm_readv(pid, &l, 1, &r, 1, 0);

		if (got < 0 || (size_t)got != len) {
			cap_log(s, pid, addr, NULL, len);
			return -EFAULT;
		}
		/* what cannot be logged did not happen: the replay could not have it */
		return cap_log(s, pid, addr, buf, len) ? 0 : -EFAULT;
	}
	if (s->snap)
		return pm_slog_read(s->snap, pid, addr, buf, len);
	return s->mlog ? pm_mlog_read(s->mlog, pid, addr, buf, len) : -EFAULT;
}

#define CAP_BATCH 1024 /* iovecs per process_vm_readv (IOV_MAX) */

void pm_cap_readv(struct session *s, pid_t pid, struct pm_cap_rd *r, size_t n)
{
	struct iovec lv[CAP_BATCH], rv[CAP_BATCH];
	size_t i = 0;

	if (s->replay) {
		for (i = 0; i < n; i++)
			r[i].ok = pm_cap_read(s, pid, r[i].addr, r[i].buf, r[i].len) == 0;
		return;
	}
	while (i < n) {
		size_t k = 0, j;
		ssize_t got;

		for (j = i; j < n && k < CAP_BATCH; j++, k++) {
			lv[k].iov_base = r[j].buf;
			lv[k].iov_len = r[j].len;
			rv[k].iov_base = (void *)(uintptr_t)r[j].addr;
			rv[k].iov_len = r[j].len;
			r[j].ok = false;
		}
		got = process_vm_readv(pid, lv, k, rv, k, 0);
		if (got < 0)
			got = 0;
		/* it stops at the first that faults: those before it were read whole */
		for (j = 0; j < k && (size_t)got >= r[i + j].len; j++) {
			r[i + j].ok = cap_log(s, pid, r[i + j].addr, r[i + j].buf, r[i + j].len);
			got -= (ssize_t)r[i + j].len;
		}
		if (j < k)
			cap_log(s, pid, r[i + j].addr, NULL, r[i + j].len);
		i += j < k ? j + 1 : k; /* skip the one that faulted */
	}
}

int pm_cap_value(struct session *s, pid_t pid, uint64_t key, void *buf, size_t len)
{
	if (!s->replay)
		return cap_log(s, pid, key, buf, len) ? 0 : -EFAULT;
	return pm_cap_read(s, pid, key, buf, len);
}

void pm_cap_snap_begin(struct session *s, struct pm_slog **log)
{
	if (!s->replay && !s->cap)
		return;
	if (!*log)
		*log = pm_slog_new();
	s->snap = *log;
	if (!s->replay) {
		pm_slog_start(*log);
		return;
	}
	/* a bad log serves nothing: every read of the snapshot fails */
	if (pm_slog_decode(*log, s->snap_buf, s->snap_len))
		s->bad_records++;
	s->snap_len = 0;
}

void pm_cap_snap_end(struct session *s, uint32_t type, uint32_t flags, uint64_t time,
		     const pid_t *pids, size_t npids)
{
	struct pm_data_snap sn;
	uint32_t pd[PM_DATA_SNAP_MAX_PIDS];
	uint64_t b0;
	uint8_t *enc;
	size_t len, off;

	if (!s->snap)
		return;
	if (s->replay || !s->cap) {
		s->snap = NULL;
		return;
	}
	b0 = pm_data_bytes(s->cap);
	pm_slog_encode(s->snap, &enc, &len);
	s->snap = NULL;
	for (off = 0; off < len; off += PM_DATA_SNAPMEM_MAX)
		pm_cap_check(s, pm_data_write_snapmem(s->cap, enc + off,
						      PM_MIN(len - off, (size_t)PM_DATA_SNAPMEM_MAX)));
	free(enc);
	memset(&sn, 0, sizeof(sn));
	sn.type = type;
	sn.flags = flags;
	sn.time = time;
	sn.npids = (uint32_t)PM_MIN(npids, (size_t)PM_DATA_SNAP_MAX_PIDS);
	for (size_t i = 0; i < sn.npids; i++)
		pd[i] = (uint32_t)pids[i];
	sn.pids = pd;
	pm_cap_check(s, pm_data_write_snap(s->cap, &sn));
	s->snap_bytes += pm_data_bytes(s->cap) - b0;
	s->snap_count++;
}

int pm_cap_unw_read(void *arg, uint64_t addr, void *buf, size_t len)
{
	struct session *s = arg;

	return pm_cap_read(s, s->unw_pid, addr, buf, len);
}

int pm_cap_gor_read(void *arg, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	return pm_cap_read(arg, pid, addr, buf, len);
}

/* Live: the sample's MEM records, in records of at most 64 KiB, before the sample. */
void pm_cap_write_mem(struct session *s)
{
	const uint8_t *p;
	size_t off = 0, len;

	while (pm_mlog_piece(s->mlog, &off, 65528 - 8, &p, &len))
		pm_cap_check(s, pm_data_write_mem(s->cap, p, len));
}

void pm_cap_check(struct session *s, int rc)
{
	if (rc && !s->cap_err)
		s->cap_err = rc;
}

/*
 * Start the capture once the attr is final: header, attr, the event, and
 * (attach) which event id was opened on which thread.
 */
void pm_cap_begin(struct session *s)
{
	struct pm_data_meta meta;
	uint64_t key;
	int32_t val;
	size_t i;
	int rc;

	memset(&meta, 0, sizeof(meta));
	meta.flags = (s->attach ? PM_DATA_ATTACH : 0) | (s->cfg->kernel ? PM_DATA_KERNEL : 0) |
		     (s->mlog_on ? PM_DATA_MEMORY : 0) |
		     (s->cfg->all_frames ? PM_DATA_ALL_FRAMES : 0);
	meta.creators = s->cfg->creators > 0 ? (uint32_t)s->cfg->creators : 0;
	meta.wall_hz = s->cfg->wall_hz;
	if (s->cfg->inuse)
		meta.flags |= PM_DATA_INUSE;
	meta.t0_wall_ns = s->t0_wall = pm_wall_ns();
	meta.type = s->spec[0].type;
	meta.config = s->spec[0].config;
	meta.stack_size = s->cfg->stack_size;
	meta.threads = s->res->threads;
	meta.events = s->res->events;
	meta.attach_us = (uint64_t)(s->res->attach_ms * 1000.0);
	meta.nuser = s->nuser ? s->nuser : PM_DATA_NUSER_NONE; /* --alloc alone: none */
	snprintf(meta.name, sizeof(meta.name), "%s", s->spec[0].name);
	snprintf(meta.value_type, sizeof(meta.value_type), "%s", s->spec[0].value_type);
	snprintf(meta.value_unit, sizeof(meta.value_unit), "%s", s->spec[0].value_unit);
	if (!s->nev) { /* no events (--inuse alone): a placeholder attr, the format wants one */
		struct perf_event_attr a;

		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_DUMMY;
		a.sample_period = 1;
		meta.flags |= PM_DATA_NO_EVENTS;
		meta.nuser = PM_DATA_NUSER_NONE;
		rc = pm_data_create(&s->cap, s->cfg->raw, &a, 1, &meta, s->owner);
	} else {
		rc = pm_data_create(&s->cap, s->cfg->raw, s->attr, s->nev, &meta, s->owner);
	}
	if (rc) {
		s->cap_err = rc;
		return;
	}
	for (i = 1; i < s->nev; i++) { /* several events: the others, and whose id is whose */
		struct pm_data_event ev;

		memset(&ev, 0, sizeof(ev));
		ev.index = (uint32_t)i;
		ev.type = s->spec[i].type;
		ev.config = s->spec[i].config;
		snprintf(ev.name, sizeof(ev.name), "%s", s->spec[i].name);
		snprintf(ev.value_type, sizeof(ev.value_type), "%s", s->spec[i].value_type);
		snprintf(ev.value_unit, sizeof(ev.value_unit), "%s", s->spec[i].value_unit);
		pm_cap_check(s, pm_data_write_event(s->cap, &ev));
	}
	for (i = 0; i < pm_idtab_slots(&s->ev_of); i++)
		if (pm_idtab_slot(&s->ev_of, i, &key, &val))
			pm_cap_check(s, pm_data_write_evid(s->cap, key, (uint32_t)val));
	for (i = 0; i < pm_idtab_slots(pm_attach_owners(s->att)); i++)
		if (pm_idtab_slot(pm_attach_owners(s->att), i, &key, &val))
			pm_cap_check(s, pm_data_write_owner(s->cap, key, (uint32_t)val));
}

/* Live: the trailer, and the capture made whole; 0 or -errno. */
int pm_cap_finish(struct session *s)
{
	struct pm_record_result *res = s->res;
	struct pm_data_trailer tr;
	int rc;

	memset(&tr, 0, sizeof(tr));
	tr.samples = res->samples;
	tr.lost = res->lost;
	tr.throttled = res->throttled;
	/* the profile's own (the end of the recording), else now */
	tr.duration_ns = s->duration_ns ? s->duration_ns : pm_now_ns() - s->t_start;
	tr.exit_code = res->exit_code;
	res->raw_bytes = pm_data_bytes(s->cap) + sizeof(tr);
	res->raw_snap_bytes = s->snap_bytes;
	res->raw_snaps = s->snap_count;
	rc = s->cap_err ? s->cap_err : pm_data_finish(s->cap, &tr);
	if (s->cap_err)
		pm_data_abort(s->cap);
	s->cap = NULL;
	return rc;
}

/* One of pmuprof's own records of a capture. */
static int replay_own(struct session *s, const struct perf_event_header *h)
{
	struct pm_data_map mp;
	struct pm_data_binary bi;
	struct pm_data_owner ow;
	size_t first;

	switch (h->type) {
	case PM_DATA_REC_MAP:
		if (pm_data_decode_map(h, &mp))
			return -EINVAL;
		first = pm_maps_count(s->maps);
		pm_maps_add_file(s->maps, (pid_t)mp.pid, mp.start, mp.end - mp.start, mp.pgoff,
				 mp.path, NULL);
		pm_reg_flush(s->reg, (pid_t)mp.pid);
		pm_cap_check(s, pm_reg_maps_added(s->reg, first, s->cap));
		return 0;
	case PM_DATA_REC_BINARY:
		if (pm_data_decode_binary(h, &bi))
			return -EINVAL;
		pm_reg_binary(s->reg, bi.path, bi.build_id, bi.flags);
		return 0;
	case PM_DATA_REC_OWNER:
		if (pm_data_decode_owner(h, &ow))
			return -EINVAL;
		pm_attach_set_owner(s->att, ow.id, ow.tid);
		return 0;
	case PM_DATA_REC_MEM:
		/* copied: the reader's records last until its next one */
		if (!s->mlog)
			s->mlog = pm_mlog_new();
		if (h->size < 8 || pm_mlog_add_record(s->mlog, (const uint8_t *)h + 8, h->size - 8u))
			return -EINVAL;
		return 0;
	case PM_DATA_REC_EVENT: {
		struct pm_data_event ev;
		struct pm_evt_spec *sp;

		if (pm_data_decode_event(h, &ev) || ev.index >= s->nev)
			return -EINVAL;
		if (ev.index >= s->nuser) /* another source's (source.h) */
			pm_src_claim(s, ev.index, ev.name);
		sp = &s->spec[ev.index];
		sp->type = ev.type;
		sp->config = ev.config;
		snprintf(sp->name, sizeof(sp->name), "%s", ev.name);
		snprintf(sp->value_type, sizeof(sp->value_type), "%s", ev.value_type);
		snprintf(sp->value_unit, sizeof(sp->value_unit), "%s", ev.value_unit);
		return 0;
	}
	case PM_DATA_REC_SNAPMEM: {
		const uint8_t *p;
		size_t len;

		if (pm_data_decode_snapmem(h, &p, &len) || len > PM_SLOG_ENC_MAX - s->snap_len)
			return -EINVAL;
		PM_GROW(s->snap_buf, s->snap_cap, s->snap_len + len);
		if (len)
			memcpy(s->snap_buf + s->snap_len, p, len);
		s->snap_len += len;
		return 0;
	}
	case PM_DATA_REC_WALL:
	case PM_DATA_REC_INUSE: {
		struct pm_data_snap sn;

		if (pm_data_decode_snap(h, &sn))
			return -EINVAL;
		pm_src_snapshot(s, &sn);
		/* the parts are the snapshot's (kept for the read at the end: its source takes them then) */
		if (!(sn.flags & PM_DATA_SNAP_FINAL))
			s->snap_len = 0;
		return 0;
	}
	case PM_DATA_REC_EVID: {
		struct pm_data_evid ei;

		if (pm_data_decode_evid(h, &ei) || ei.index >= s->nev)
			return -EINVAL;
		pm_idtab_put(&s->ev_of, ei.id, (int32_t)ei.index);
		return 0;
	}
	default:
		return 0; /* a later version's record: skip */
	}
}

/*
 * Replay: the capture's records through pm_ses_feed(), as the live session
 * fed them, then the same pm_build_profile().
 */
int pm_record_replay(const char *path, struct pm_profile **out, struct pm_record_result *res,
		     bool all_frames)
{
	struct pm_record_cfg cfg;
	struct session s;
	struct pm_data *d = NULL;
	const struct pm_data_meta *meta;
	const struct pm_data_trailer *tr;
	const struct perf_event_header *h;
	char err[256];
	uint64_t t0 = pm_now_ns();
	size_t i;
	int rc;
	bool probed = false; /* the creation probe's events known */

	*out = NULL;
	memset(res, 0, sizeof(*res));
	memset(&s, 0, sizeof(s));
	memset(&cfg, 0, sizeof(cfg));
	cfg.all_frames = all_frames;
	s.cfg = &cfg;
	s.res = res;
	s.replay = true;
	err[0] = '\0';
	rc = pm_data_open(&d, path, err, sizeof(err));
	if (rc) {
		pm_ses_err(res, PM_REC_ERR, "%s", err[0] ? err : strerror(-rc));
		return res->err;
	}
	meta = pm_data_meta(d);
	s.nev = pm_data_nattrs(d) < PM_ARRAY_SIZE(s.attr) ? pm_data_nattrs(d) : PM_ARRAY_SIZE(s.attr);
	if (meta->flags & PM_DATA_NO_EVENTS)
		s.nev = 0;
	/* the snapshots' sources: their records are replayed (a later one's are skipped) */
	cfg.wall_hz = meta->wall_hz <= 1000 ? meta->wall_hz : 0;
	cfg.inuse = meta->flags & PM_DATA_INUSE;
	/* the probes on goroutine creation, after the user's events, are not replayed */
	s.nuser = meta->nuser == PM_DATA_NUSER_NONE		  ? 0
		  : meta->nuser && meta->nuser < s.nev ? (size_t)meta->nuser
						       : s.nev;
	if (s.nuser > PM_EVT_MAX)
		s.nuser = PM_EVT_MAX;
	/*
	 * which one: its EVENT record says; event 0 has none, its name is
	 * the capture's (a source's own event when there is no CPU event:
	 * --locks or --alloc alone)
	 */
	for (i = s.nuser; i < s.nev; i++)
		pm_src_claim(&s, i, i ? NULL : meta->name);
	/* what the recording read of the target, and so the goroutines, if it logged it */
	s.mlog_on = meta->flags & PM_DATA_MEMORY;
	if (s.mlog_on) {
		struct pm_gor_opts go = {
			.creators = meta->creators > PM_GOR_MAX_ANCESTORS ? PM_GOR_MAX_ANCESTORS
									  : meta->creators,
			.read = pm_cap_gor_read,
			.read_arg = &s,
			.replay = true,
		};

		if (!s.mlog)
			s.mlog = pm_mlog_new();
		s.gor = pm_gor_new(&go);
	}
	for (i = 0; i < s.nev; i++) {
		s.attr[i] = *pm_data_attr_at(d, i);
		if ((!s.attr[i].freq && !s.attr[i].sample_period) ||
		    (s.attr[i].freq && !s.attr[i].sample_freq)) {
			pm_ses_err(res, PM_REC_ERR, "corrupt capture: no sampling rate for event %zu", i);
			goto out;
		}
	}
	snprintf(s.spec[0].name, sizeof(s.spec[0].name), "%s", meta->name);
	snprintf(s.spec[0].value_type, sizeof(s.spec[0].value_type), "%s", meta->value_type);
	snprintf(s.spec[0].value_unit, sizeof(s.spec[0].value_unit), "%s", meta->value_unit);
	s.spec[0].type = meta->type;
	s.spec[0].config = meta->config;
	s.attach = meta->flags & PM_DATA_ATTACH;
	s.att = pm_attach_new(s.attach); /* the event sets: whose records count */
	cfg.all_frames = cfg.all_frames || (meta->flags & PM_DATA_ALL_FRAMES);
	res->threads = meta->threads;
	res->events = meta->events;
	res->attach_ms = (double)meta->attach_us / 1000.0;
	pm_ses_processing(&s);
	pm_ses_layout(&s);
	while ((rc = pm_data_next(d, &h, err, sizeof(err))) > 0) {
		struct pm_rec r;

		res->records++;
		if (h->type >= PM_DATA_REC_BASE) {
			if (replay_own(&s, h) < 0) {
				pm_ses_err(res, PM_REC_ERR, "corrupt capture: a bad pmuprof record (type %#x)",
					h->type);
				goto out;
			}
			continue;
		}
		/*
		 * the events' owners are known once their EVENT records are read
		 * (before the first record of the recording): the creation probe's
		 * claims every event without one
		 */
		if (!probed && s.gor && pm_src_creations_logged(&s))
			pm_gor_probed(s.gor);
		probed = true;
		rc = pm_rec_decode(h, &s.layout, &r);
		if (rc == 0)
			pm_ses_feed(&s, h, &r);
		else if (rc < 0)
			s.bad_records++;
	}
	if (rc < 0) {
		pm_ses_err(res, PM_REC_ERR, "%s", err);
		goto out;
	}
	for (i = 0; i < s.nuser; i++)
		if (!s.spec[i].value_type[0] || !s.spec[i].value_unit[0] || !s.spec[i].name[0]) {
			pm_ses_err(res, PM_REC_ERR, "corrupt capture: no description of event %zu", i);
			goto out;
		}
	if (pm_reg_unwarned(s.reg))
		pm_warn("%zu more binaries of the capture are missing or differ: their frames are "
			"shown as module+offset too",
			pm_reg_unwarned(s.reg));
	tr = pm_data_trailer(d);
	if (pm_data_truncated(d) || !tr)
		pm_warn("'%s' is truncated: processed the %" PRIu64 " samples it holds", path,
			res->samples);
	res->exit_code = tr ? (int)tr->exit_code : 0;
	res->seconds = (double)(pm_now_ns() - t0) / 1e9;
	*out = pm_build_profile(&s, 0, meta->t0_wall_ns, tr ? tr->duration_ns : 0);
out:
	pm_ses_release(&s);
	pm_data_close(d);
	return res->err;
}
