/*
 * The recording loop.
 *
 * Events: one per online CPU, on the launched process with inherit, so
 * every thread it creates later is followed and writes into that CPU's
 * buffer (the kernel refuses mmap on inherited per-thread events).  They
 * open disabled with enable_on_exec: counting starts exactly at exec.
 *
 * Draining: records from the CPU buffers are merged by time within each
 * pass, so an MMAP2 on one CPU is applied before a later sample on another.
 * A sample is unwound at once (its stack copy lives only in the ring) and
 * aggregated as a stack of unsymbolized frames; names are looked up once
 * per distinct frame when the recording ends.
 */
#include "record.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <asm/perf_regs.h>

#include "events.h"
#include "maps.h"
#include "pprof.h"
#include "profile.h"
#include "rec.h"
#include "ring.h"
#include "stacks.h"
#include "symtab.h"
#include "target.h"
#include "unwind.h"
#include "util.h"

#define MAX_FRAMES 1024
#define MAX_FRAMES_SYM 64

struct unw_slot {
	pid_t pid;
	struct pm_unw *u;
};

struct session {
	const struct pm_record_cfg *cfg;
	struct pm_record_result *res;
	struct pm_evt_spec spec;
	struct perf_event_attr attr;
	struct pm_rec_layout layout;
	int *fds;
	struct pm_ring **rings;
	size_t nfds;
	struct pm_maps *maps;
	struct pm_stacks *stacks;
	struct unw_slot *unws;
	size_t nunws, capunws;
	int ip_idx, sp_idx, bp_idx;
	uint64_t pcs[MAX_FRAMES];
	uint32_t ids[MAX_FRAMES + 1];
	uint64_t chain[PERF_MAX_STACK_DEPTH + 8];
	uint32_t cut_frame;
	uint64_t complete, bad_records;
	uint64_t t_start;
};

static void set_err(struct pm_record_result *res, enum pm_record_err err, const char *fmt, ...)
	PM_PRINTF(3, 4);

static void set_err(struct pm_record_result *res, enum pm_record_err err, const char *fmt, ...)
{
	va_list ap;

	res->err = err;
	va_start(ap, fmt);
	vsnprintf(res->msg, sizeof(res->msg), fmt, ap);
	va_end(ap);
}

/* "0-3,5" -> list of CPU numbers. */
static int online_cpus(int **out)
{
	char *buf, *p;
	int *cpus = NULL;
	size_t n = 0, cap = 0;

	if (pm_read_file("/sys/devices/system/cpu/online", &buf, 4096) < 0) {
		long nc = sysconf(_SC_NPROCESSORS_ONLN);
		int i;
		if (nc < 1)
			nc = 1;
		cpus = xcalloc((size_t)nc, sizeof(int));
		for (i = 0; i < nc; i++)
			cpus[i] = i;
		*out = cpus;
		return (int)nc;
	}
	p = buf;
	while (*p && *p != '\n') {
		char *end;
		long a = strtol(p, &end, 10), b = a;
		if (end == p)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long c = a; c <= b && c < 65536; c++) {
			PM_GROW(cpus, cap, n + 1);
			cpus[n++] = (int)c;
		}
		p = *end == ',' ? end + 1 : end;
	}
	free(buf);
	*out = cpus;
	return (int)n;
}

/*
 * Can @path be created?  Checked before the command starts, by creating
 * and removing a probe file next to it.
 */
static int check_output(const char *path)
{
	char *copy, *dir, *probe;
	struct stat st;
	int fd, err = 0;

	if (strcmp(path, "-") == 0)
		return isatty(STDOUT_FILENO) ? -ENOTTY : 0;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return -EISDIR;
	copy = xstrdup(path);
	dir = dirname(copy);
	probe = xasprintf("%s/.pmuprof-probe-XXXXXX", dir);
	fd = mkstemp(probe);
	if (fd < 0)
		err = -errno;
	else {
		close(fd);
		unlink(probe);
	}
	free(probe);
	free(copy);
	return err;
}

static struct pm_unw *unwinder(struct session *s, pid_t pid)
{
	size_t i;

	for (i = 0; i < s->nunws; i++)
		if (s->unws[i].pid == pid)
			return s->unws[i].u;
	PM_GROW(s->unws, s->capunws, s->nunws + 1);
	s->unws[s->nunws].pid = pid;
	s->unws[s->nunws].u = pm_unw_new(pm_maps_unwind_lookup, s->maps);
	return s->unws[s->nunws++].u;
}

static void flush_unwinder(struct session *s, pid_t pid)
{
	size_t i;

	for (i = 0; i < s->nunws; i++)
		if (s->unws[i].pid == pid)
			pm_unw_flush(s->unws[i].u);
}

static void on_sample(struct session *s, const struct pm_rec_sample *smp)
{
	struct pm_unw_input in;
	unsigned status;
	size_t n, i, nchain = 0;
	int64_t values[2];
	pid_t pid = (pid_t)smp->pid;
	bool user = false;

	s->res->samples++;
	values[0] = 1;
	values[1] = (int64_t)smp->period;
	memset(&in, 0, sizeof(in));
	if (smp->abi != 0 && s->ip_idx >= 0 && s->sp_idx >= 0 && s->bp_idx >= 0) {
		in.ip = smp->regs[s->ip_idx];
		in.sp = smp->regs[s->sp_idx];
		in.bp = smp->regs[s->bp_idx];
		in.stack = smp->stack;
		in.stack_len = smp->dyn_size;
		user = true;
	}
	for (i = 0; i < smp->nr; i++) {
		uint64_t ip = smp->ips[i];
		if (ip >= PERF_CONTEXT_MAX) {
			user = user || ip == PERF_CONTEXT_USER;
			continue;
		}
		if (nchain < PM_ARRAY_SIZE(s->chain))
			s->chain[nchain++] = ip;
	}
	in.chain = s->chain;
	in.chain_len = nchain;
	if (!user || !in.ip) {
		/* no user context (a kernel thread, or registers missing) */
		in.ip = smp->ip;
	}
	if (!pm_maps_known(s->maps, pid))
		pm_maps_load_proc(s->maps, pid);
	pm_maps_set_unwind_pid(s->maps, pid);
	n = pm_unw_walk(unwinder(s, pid), &in, s->pcs, MAX_FRAMES, &status);
	for (i = 0; i < n; i++) {
		const struct pm_map *m = pm_maps_find(s->maps, pid, s->pcs[i]);
		struct pm_stack_frame f;

		f.map_id = m ? m->id : PM_STACKS_NO_MAP;
		f.is_return = i > 0;
		f.addr = s->pcs[i];
		f.vaddr = m && m->sym ? (uint64_t)((int64_t)s->pcs[i] - m->bias) : s->pcs[i];
		s->ids[i] = pm_stacks_frame(s->stacks, &f);
	}
	if (status & PM_UNW_COMPLETE) {
		s->complete++;
	} else {
		/* an honest marker at the root instead of a guessed caller */
		s->ids[n++] = s->cut_frame;
		s->res->cut++;
	}
	pm_stacks_add(s->stacks, s->ids, n, values);
}

static void on_record(struct session *s, const struct pm_rec *r)
{
	switch (r->type) {
	case PERF_RECORD_SAMPLE:
		on_sample(s, &r->sample);
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		if (r->type == PERF_RECORD_MMAP2 && !(r->mmap.prot & PROT_EXEC))
			break;
		if (r->misc & PERF_RECORD_MISC_MMAP_DATA)
			break;
		pm_maps_add(s->maps, (pid_t)r->mmap.pid, r->mmap.addr, r->mmap.len, r->mmap.pgoff,
			    r->mmap.filename);
		flush_unwinder(s, (pid_t)r->mmap.pid);
		break;
	case PERF_RECORD_COMM:
		if (r->comm.exec) {
			pm_maps_reset(s->maps, (pid_t)r->comm.pid);
			flush_unwinder(s, (pid_t)r->comm.pid);
		}
		break;
	case PERF_RECORD_FORK:
		if (r->task.pid != r->task.ppid)
			pm_maps_fork(s->maps, (pid_t)r->task.ppid, (pid_t)r->task.pid);
		break;
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		s->res->lost += r->lost.lost;
		break;
	case PERF_RECORD_THROTTLE:
		s->res->throttled++;
		break;
	default:
		break;
	}
}

static uint64_t rec_time(const struct pm_rec *r)
{
	return r->type == PERF_RECORD_SAMPLE ? r->sample.time : r->sid.time;
}

/*
 * One pass over every ring: a k-way merge on time of what each holds now.
 * Each ring's current record stays valid until its next pm_ring_next().
 */
static void drain(struct session *s)
{
	struct pm_rec *cur = xcalloc(s->nfds, sizeof(*cur));
	bool *have = xcalloc(s->nfds, sizeof(*have));
	size_t i;

	for (i = 0; i < s->nfds; i++) {
		const struct perf_event_header *h;
		while ((h = pm_ring_next(s->rings[i]))) {
			int rc = pm_rec_decode(h, &s->layout, &cur[i]);
			if (rc == 0) {
				have[i] = true;
				break;
			}
			if (rc < 0)
				s->bad_records++;
		}
	}
	for (;;) {
		size_t best = SIZE_MAX;
		const struct perf_event_header *h;

		for (i = 0; i < s->nfds; i++)
			if (have[i] && (best == SIZE_MAX || rec_time(&cur[i]) < rec_time(&cur[best])))
				best = i;
		if (best == SIZE_MAX)
			break;
		on_record(s, &cur[best]);
		have[best] = false;
		while ((h = pm_ring_next(s->rings[best]))) {
			int rc = pm_rec_decode(h, &s->layout, &cur[best]);
			if (rc == 0) {
				have[best] = true;
				break;
			}
			if (rc < 0)
				s->bad_records++;
		}
	}
	for (i = 0; i < s->nfds; i++)
		pm_ring_consume(s->rings[i]);
	free(cur);
	free(have);
}

static unsigned ring_pages(uint32_t stack_size)
{
	/* room for at least ~256 samples of this size, between 512 KiB and 8 MiB */
	uint64_t want = (uint64_t)(stack_size + 1024) * 256;
	unsigned pages = 128;

	while ((uint64_t)pages * 4096 < want && pages < 2048)
		pages *= 2;
	return pages;
}

static int open_events(struct session *s, pid_t pid)
{
	const struct pm_record_cfg *cfg = s->cfg;
	struct pm_evt_sampling smp;
	int *cpus, ncpu, i, err = 0;
	unsigned pages = ring_pages(cfg->stack_size);
	char buf[512];

	memset(&smp, 0, sizeof(smp));
	smp.freq = cfg->period ? 0 : (cfg->freq ? cfg->freq : PM_RECORD_DEFAULT_FREQ);
	smp.period = cfg->period;
	smp.stack_size = cfg->stack_size;
	smp.regs_mask = (1ULL << PERF_REG_X86_IP) | (1ULL << PERF_REG_X86_SP) |
			(1ULL << PERF_REG_X86_BP) | (1ULL << PERF_REG_X86_R14);
	smp.callchain = true;
	smp.kernel_callchain = false;
	smp.tracking = true;
	smp.enable_on_exec = true;
	smp.inherit = true;

	ncpu = online_cpus(&cpus);
	s->fds = xcalloc((size_t)ncpu, sizeof(int));
	s->rings = xcalloc((size_t)ncpu, sizeof(*s->rings));
	for (;;) {
		pm_evt_attr(&s->spec, &smp, &s->attr);
		s->attr.watermark = 1;
		s->attr.wakeup_watermark = pages * 4096 / 4;
		for (i = 0; i < ncpu; i++) {
			int fd = pm_evt_open(&s->attr, pid, cpus[i], -1);
			if (fd < 0) {
				err = fd;
				break;
			}
			s->fds[s->nfds++] = fd;
		}
		if (!err)
			break;
		while (s->nfds)
			close(s->fds[--s->nfds]);
		if (s->spec.hardware && pm_evt_err_unsupported(err)) {
			char e[256];
			pm_warn("%s is not supported here (no hardware PMU); falling back to cpu-clock",
				s->spec.name);
			if (pm_evt_parse("cpu-clock", &s->spec, e, sizeof(e)) < 0)
				break;
			err = 0;
			continue;
		}
		set_err(s->res, err == -EINVAL && smp.freq ? PM_REC_USAGE : PM_REC_ERR, "%s",
			pm_evt_strerror(err, &s->spec, &s->attr, buf, sizeof(buf)));
		free(cpus);
		return err;
	}
	free(cpus);
	for (i = 0; i < (int)s->nfds; i++) {
		err = pm_ring_open(&s->rings[i], s->fds[i], pages);
		if (err) {
			set_err(s->res, PM_REC_ERR,
				"cannot map the perf ring buffer (%u KiB): %s; raise ulimit -l or "
				"kernel.perf_event_mlock_kb",
				pages * 4, strerror(-err));
			return err;
		}
	}
	pm_rec_layout_from_attr(&s->layout, &s->attr);
	s->ip_idx = pm_rec_reg_index(s->attr.sample_regs_user, PERF_REG_X86_IP);
	s->sp_idx = pm_rec_reg_index(s->attr.sample_regs_user, PERF_REG_X86_SP);
	s->bp_idx = pm_rec_reg_index(s->attr.sample_regs_user, PERF_REG_X86_BP);
	return 0;
}

static void progress(struct session *s, bool final)
{
	double t = (double)(pm_now_ns() - s->t_start) / 1e9;

	if (final) {
		fprintf(stderr, "\r\033[K");
		return;
	}
	fprintf(stderr, "\r\033[K[ pmuprof: %.1f s, %" PRIu64 " samples, %" PRIu64 " lost ]", t,
		s->res->samples, s->res->lost);
}

/* Symbolize every distinct frame once and build the pprof profile. */
static struct pm_profile *build_profile(struct session *s, uint64_t t0_wall, uint64_t dur)
{
	struct pm_profile *p = pm_prof_new();
	size_t nframes = pm_stacks_nframes(s->stacks), nmaps = pm_maps_count(s->maps), i;
	uint64_t *loc_of = xcalloc(nframes, sizeof(*loc_of));
	uint64_t *map_of = xcalloc(nmaps ? nmaps : 1, sizeof(*map_of));
	bool *map_unresolved = xcalloc(nmaps ? nmaps : 1, sizeof(bool));
	uint64_t *locs = xmalloc((MAX_FRAMES + 1) * sizeof(*locs));
	struct pm_frame fr[MAX_FRAMES_SYM];
	struct pm_prof_line lines[MAX_FRAMES_SYM];
	bool cpu = strcmp(s->spec.value_unit, "nanoseconds") == 0;
	char *c;

	pm_prof_add_sample_type(p, "samples", "count");
	pm_prof_add_sample_type(p, s->spec.value_type, s->spec.value_unit);
	pm_prof_set_default_type(p, 1);
	if (s->attr.freq) {
		int64_t per = cpu ? (int64_t)(1000000000ULL / s->attr.sample_freq) : 1;
		pm_prof_set_period(p, s->spec.value_type, s->spec.value_unit, per);
	} else {
		pm_prof_set_period(p, s->spec.value_type, s->spec.value_unit,
				   (int64_t)s->attr.sample_period);
	}
	pm_prof_set_time(p, (int64_t)t0_wall, (int64_t)dur);
	if (s->attr.freq)
		c = xasprintf("pmuprof record: event %s, %" PRIu64 " Hz, stack copy %u bytes",
			      s->spec.name, (uint64_t)s->attr.sample_freq, s->attr.sample_stack_user);
	else
		c = xasprintf("pmuprof record: event %s, period %" PRIu64 ", stack copy %u bytes",
			      s->spec.name, (uint64_t)s->attr.sample_period,
			      s->attr.sample_stack_user);
	pm_prof_add_comment(p, c);
	free(c);
	c = xasprintf("lost %" PRIu64 " samples", s->res->lost);
	pm_prof_add_comment(p, c);
	free(c);
	c = xasprintf("stacks cut: %" PRIu64 " of %" PRIu64, s->res->cut, s->res->samples);
	pm_prof_add_comment(p, c);
	free(c);

	for (i = 0; i < nframes; i++) {
		const struct pm_stack_frame *f = pm_stacks_frame_at(s->stacks, (uint32_t)i);
		const struct pm_map *m = f->map_id == PM_STACKS_NO_MAP ? NULL
								   : pm_maps_at(s->maps, f->map_id);
		uint64_t mid = 0;
		size_t nf = 0, k;

		if (i == s->cut_frame) {
			lines[0].func_id = pm_prof_func(p, "[truncated]", "[truncated]", "", 0);
			lines[0].line = 0;
			loc_of[i] = pm_prof_loc(p, 0, 0, lines, 1);
			continue;
		}
		if (m) {
			if (!map_of[m->id])
				map_of[m->id] = pm_prof_mapping(p, m->start, m->end, m->pgoff, m->path,
								m->sym ? pm_sym_build_id(m->sym) : "");
			mid = map_of[m->id];
			if (m->sym)
				nf = pm_sym_frames(m->sym, f->vaddr - (f->is_return ? 1 : 0), fr,
						   MAX_FRAMES_SYM);
			if (!nf)
				map_unresolved[m->id] = true;
		}
		for (k = 0; k < nf; k++) {
			lines[k].func_id = pm_prof_func(p, fr[k].func, fr[k].func, fr[k].file,
							fr[k].start_line);
			lines[k].line = fr[k].line;
		}
		loc_of[i] = pm_prof_loc(p, mid, f->addr, lines, nf);
	}
	for (i = 0; i < nmaps; i++) {
		const struct pm_map *m = pm_maps_at(s->maps, (uint32_t)i);
		bool go;
		if (!map_of[i])
			continue;
		go = m->sym && pm_sym_is_go(m->sym);
		pm_prof_mapping_flags(p, map_of[i], !map_unresolved[i], go, go, go);
	}
	for (i = 0; i < pm_stacks_count(s->stacks); i++) {
		size_t n, k;
		const int64_t *v;
		const uint32_t *ids = pm_stacks_at(s->stacks, i, &n, &v);

		for (k = 0; k < n; k++)
			locs[k] = loc_of[ids[k]];
		pm_prof_add(p, locs, n, v, NULL, 0);
	}
	free(locs);
	free(loc_of);
	free(map_of);
	free(map_unresolved);
	return p;
}

int pm_record_run(const struct pm_record_cfg *cfg, struct pm_record_result *res)
{
	struct session s;
	struct pm_target *tgt = NULL;
	struct pm_profile *prof = NULL;
	struct pollfd *pfd = NULL;
	const char *output = cfg->output ? cfg->output : PM_RECORD_DEFAULT_OUTPUT;
	char err[256], *path = NULL;
	int rc, status = 0;
	uint64_t t0_wall, stop_at = 0, last_prog = 0;
	bool forwarded = false, killed = false;
	struct pm_stack_frame cut = { PM_STACKS_NO_MAP, false, 0, 0 };
	long maxrate;
	size_t i;

	memset(res, 0, sizeof(*res));
	memset(&s, 0, sizeof(s));
	s.cfg = cfg;
	s.res = res;

	if (pm_evt_parse(cfg->event ? cfg->event : "cycles", &s.spec, err, sizeof(err)) < 0) {
		set_err(res, PM_REC_USAGE, "%s", err);
		return res->err;
	}
	maxrate = pm_evt_max_sample_rate();
	if (cfg->freq && maxrate > 0 && cfg->freq > (uint64_t)maxrate) {
		set_err(res, PM_REC_USAGE,
			"invalid frequency '%" PRIu64
			"': must be 1..%ld (kernel.perf_event_max_sample_rate)",
			cfg->freq, maxrate);
		return res->err;
	}
	rc = check_output(output);
	if (rc) {
		set_err(res, PM_REC_ERR, "cannot write '%s': %s", output,
			rc == -ENOTTY ? "refusing to write binary pprof to a terminal"
				      : strerror(-rc));
		return res->err;
	}
	path = pm_target_resolve(cfg->argv[0]);
	if (!path) {
		if (errno == ENOENT)
			set_err(res, PM_REC_NOTFOUND, "cannot run '%s': command not found",
				cfg->argv[0]);
		else
			set_err(res, PM_REC_NOEXEC, "cannot run '%s': %s", cfg->argv[0],
				strerror(errno));
		return res->err;
	}
	rc = pm_target_spawn(&tgt, path, cfg->argv);
	if (rc) {
		set_err(res, PM_REC_ERR, "cannot start '%s': %s", cfg->argv[0], strerror(-rc));
		goto out;
	}
	s.maps = pm_maps_new();
	s.stacks = pm_stacks_new(2);
	s.cut_frame = pm_stacks_frame(s.stacks, &cut);
	if (open_events(&s, pm_target_pid(tgt)))
		goto out;

	t0_wall = pm_wall_ns();
	s.t_start = pm_now_ns();
	rc = pm_target_start(tgt);
	if (rc) {
		set_err(res, rc == -ENOENT ? PM_REC_NOTFOUND : PM_REC_NOEXEC, "cannot run '%s': %s",
			cfg->argv[0], strerror(-rc));
		goto out;
	}

	pfd = xcalloc(s.nfds, sizeof(*pfd));
	for (i = 0; i < s.nfds; i++) {
		pfd[i].fd = s.fds[i];
		pfd[i].events = POLLIN;
	}
	for (;;) {
		uint64_t now;

		poll(pfd, s.nfds, 100);
		drain(&s);
		now = pm_now_ns();
		if (cfg->stop && *cfg->stop && !forwarded) {
			pm_target_signal(tgt, *cfg->stop);
			forwarded = true;
			stop_at = now;
		}
		if (cfg->duration > 0 && !forwarded &&
		    (double)(now - s.t_start) / 1e9 >= cfg->duration) {
			pm_target_signal(tgt, SIGTERM);
			forwarded = true;
			stop_at = now;
		}
		if (pm_target_poll(tgt, &status) != 0)
			break;
		if (forwarded && !killed && now - stop_at > 3000000000ULL) {
			/* it ignored the signal: stop it for good, the profile is what matters */
			pm_target_signal(tgt, SIGKILL);
			killed = true;
		}
		if (cfg->progress && now - last_prog > 250000000ULL) {
			progress(&s, false);
			last_prog = now;
		}
	}
	for (i = 0; i < s.nfds; i++)
		ioctl(s.fds[i], PERF_EVENT_IOC_DISABLE, 0);
	drain(&s);
	if (cfg->progress)
		progress(&s, true);
	res->exit_code = pm_target_exit_code(status);
	res->seconds = (double)(pm_now_ns() - s.t_start) / 1e9;

	prof = build_profile(&s, t0_wall, pm_now_ns() - s.t_start);
	rc = pm_pprof_write(prof, output);
	if (rc) {
		set_err(res, PM_REC_ERR, "cannot write '%s': %s", output, strerror(-rc));
		goto out;
	}
	if (res->lost)
		pm_warn("lost %" PRIu64 " samples: the ring buffer overflowed; lower -F or "
			"--stack-size",
			res->lost);
	if (!cfg->quiet)
		fprintf(stderr,
			"pmuprof: wrote %s: %" PRIu64 " samples (%" PRIu64 " lost), %.1f s\n",
			output, res->samples, res->lost, res->seconds);
out:
	pm_prof_free(prof);
	free(pfd);
	for (i = 0; i < s.nfds; i++) {
		pm_ring_free(s.rings[i]);
		close(s.fds[i]);
	}
	free(s.rings);
	free(s.fds);
	for (i = 0; i < s.nunws; i++)
		pm_unw_free(s.unws[i].u);
	free(s.unws);
	pm_stacks_free(s.stacks);
	pm_maps_free(s.maps);
	if (tgt && !pm_target_exited(tgt) && res->err) {
		pm_target_signal(tgt, SIGKILL);
		pm_target_wait(tgt, &status);
	}
	pm_target_free(tgt);
	free(path);
	return res->err;
}
