/*
 * session: the shared state of a recording or replay, and feed(), the one
 * entry to processing (session.h).
 */
#include "session/session.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <asm/perf_regs.h>

#include "session/attach.h"
#include "session/capture.h"
#include "capture/datafile.h"
#include "goruntime/goroutine.h"
#include "symbols/maps.h"
#include "capture/memlog.h"
#include "session/source.h"

void pm_ses_err(struct pm_record_result *res, enum pm_record_err err, const char *fmt, ...)
{
	va_list ap;

	res->err = err;
	va_start(ap, fmt); /* one error style: pm_seterr()'s, sanitized where it is made */
	pm_vseterr(res->msg, sizeof(res->msg), fmt, ap);
	va_end(ap);
}

void pm_ses_layout(struct session *s)
{
	pm_rec_layout_from_attr(&s->layout, &s->attr[0]);
	s->ip_idx = pm_rec_reg_index(s->attr[0].sample_regs_user, PERF_REG_X86_IP);
	s->sp_idx = pm_rec_reg_index(s->attr[0].sample_regs_user, PERF_REG_X86_SP);
	s->bp_idx = pm_rec_reg_index(s->attr[0].sample_regs_user, PERF_REG_X86_BP);
	if (!s->replay && s->cfg->raw && !s->cap && !s->cap_err)
		pm_cap_begin(s);
}

void pm_ses_walk(struct session *s, const struct pm_rec_sample *smp, struct pm_walk *w)
{
	struct pm_unw_input *in = &w->in;
	size_t i, nchain = 0;
	pid_t pid = (pid_t)smp->pid;
	bool user = false, kctx = false;

	memset(w, 0, sizeof(*w));
	w->pid = pid;
	if (smp->abi != 0 && s->ip_idx >= 0 && s->sp_idx >= 0 && s->bp_idx >= 0) {
		in->ip = smp->regs[s->ip_idx];
		in->sp = smp->regs[s->sp_idx];
		in->bp = smp->regs[s->bp_idx];
		in->stack = smp->stack;
		in->stack_len = smp->dyn_size;
		/* frames: every register, for DWARF CFI */
		pm_unw_set_perf_regs(in, s->attr[0].sample_regs_user, smp->regs, smp->nregs);
		s->unw_pid = pid;
		/* replay: the process is gone: its memory is what the capture logged, if any */
		in->read_mem = s->mlog_on ? pm_cap_unw_read : s->replay ? NULL : pm_unw_read_pid;
		in->read_arg = s->mlog_on ? (void *)s : (void *)&s->unw_pid;
		user = true;
	}
	for (i = 0; i < smp->nr; i++) {
		uint64_t ip = smp->ips[i];
		if (ip >= PERF_CONTEXT_MAX) {
			user = user || ip == PERF_CONTEXT_USER;
			kctx = ip == PERF_CONTEXT_KERNEL;
			continue;
		}
		if (kctx) {
			/* frames: the kernel part (--kernel), leaf first, joined under the user stack */
			if (w->nk < PM_ARRAY_SIZE(s->kchain))
				s->kchain[w->nk++] = ip;
			continue;
		}
		if (nchain < PM_ARRAY_SIZE(s->chain))
			s->chain[nchain++] = ip;
	}
	in->chain = s->chain;
	in->chain_len = nchain;
	if (!user || !in->ip) {
		/* no user context (a kernel thread, or registers missing) */
		in->ip = smp->ip;
	}
	if (!s->replay && !pm_maps_known(s->maps, pid))
		pm_maps_load_proc(s->maps, pid);
	pm_reg_set_pid(s->reg, pid);
	/* frames: the runtime's offsets, to cross its stack switches */
	if (in->read_mem && s->gor && pm_gor_unw_abi(s->gor, s->maps, pid, NULL, 0, &w->goabi))
		in->go = &w->goabi;
	w->n = pm_unw_walk(pm_reg_unwinder(s->reg, pid), in, s->pcs, PM_REG_MAX_FRAMES,
			   &w->status);
	if ((w->status & PM_UNW_NEED_GO) && s->gor &&
	    pm_gor_unw_abi(s->gor, s->maps, pid, s->pcs, w->n, &w->goabi)) {
		/* the first sample of a Go process that needs them: walk again */
		in->go = &w->goabi;
		w->n = pm_unw_walk(pm_reg_unwinder(s->reg, pid), in, s->pcs, PM_REG_MAX_FRAMES,
				   &w->status);
	}
	w->switch_bp = pm_unw_switch_bp(pm_reg_unwinder(s->reg, pid));
}

size_t pm_ses_gor_sample(struct session *s, const struct pm_rec_sample *smp,
			 const struct pm_walk *w, size_t npcs, size_t n)
{
	struct pm_gor_walk gw = {
		.pid = w->pid,
		.tid = (pid_t)smp->tid,
		.time = smp->time,
		.r14 = w->in.regs[PM_DW_R14],
		.sp = w->in.sp,
		.stack = w->in.stack,
		.stack_len = w->in.stack_len,
		.pcs = s->pcs,
		.npcs = npcs,
		.status = w->status,
		.switch_bp = w->switch_bp,
	};

	if (!s->gor || !(w->in.regs_valid & (1u << PM_DW_R14)))
		return n;
	n = pm_gor_sample(s->gor, s->maps, s->stacks, &gw, s->ids, n, PM_ARRAY_SIZE(s->ids));
	/* live with --raw: the inspector read the stack copy too, all of it kept */
	if (s->cap && pm_gor_used_copy(s->gor))
		s->keep = UINT64_MAX;
	return n;
}

size_t pm_ses_user_ids(struct session *s, const struct pm_walk *w, size_t from, uint32_t *ids,
		       size_t k)
{
	for (size_t i = from; i < w->n; i++) {
		const struct pm_map *m;
		struct pm_stack_frame f;

		/* recursion: a return address equal to the one below is the same frame */
		if (i > from + 1 && s->pcs[i] == s->pcs[i - 1]) {
			ids[k] = ids[k - 1];
			k++;
			continue;
		}
		m = pm_maps_find(s->maps, w->pid, s->pcs[i]);
		f.map_id = m ? m->id : PM_STACKS_NO_MAP;
		f.is_return = i > 0;
		f.addr = s->pcs[i];
		f.vaddr = m && m->sym ? (uint64_t)((int64_t)s->pcs[i] - m->bias) : s->pcs[i];
		ids[k++] = pm_stacks_frame(s->stacks, &f);
	}
	if (w->status & PM_UNW_COMPLETE) {
		s->complete++;
	} else {
		/* an honest marker at the root instead of a guessed caller */
		ids[k++] = s->cut_frame;
		s->res->cut++;
	}
	return k;
}

static size_t stack_ids(struct session *s, const struct pm_rec_sample *smp,
			const struct pm_walk *w)
{
	size_t nk = w->nk, i, n;

	for (i = 0; i < nk; i++) {
		struct pm_stack_frame f = { PM_SES_KERNEL_MAP, i > 0, s->kchain[i], s->kchain[i] };

		s->ids[i] = pm_stacks_frame(s->stacks, &f);
	}
	n = pm_ses_user_ids(s, w, 0, s->ids, nk);
	return pm_ses_gor_sample(s, smp, w, w->n, n);
}

size_t pm_ses_stack_ids(struct session *s, const struct pm_rec_sample *smp,
			const struct pm_walk *w)
{
	/* live with --raw: the stack copy's bytes the walk read, kept for the replay */
	if (s->cap)
		s->keep = pm_cap_keep(s, &w->in, w->pid, w->n, w->status);
	return stack_ids(s, smp, w);
}

/* The event of a record's id: its index (0 when there is one event, or the id is not known). */
static size_t event_of(struct session *s, uint64_t id)
{
	int32_t ev = 0;

	if (s->nev > 1 && (!pm_idtab_get(&s->ev_of, id, &ev) || ev < 0 || (size_t)ev >= s->nev))
		ev = 0;
	return (size_t)ev;
}

/* A sample: to the source of its event. */
static void on_sample(struct session *s, const struct pm_rec_sample *smp)
{
	size_t ev;

	if (!pm_att_accept(s, smp->id, smp->tid))
		return;
	ev = event_of(s, smp->id);
	pm_src_sample(s, ev, smp);
}

/* A record a source consumes (a thread's switch, or exit): to the source of its event. */
static void on_other(struct session *s, const struct pm_rec *r)
{
	size_t ev = event_of(s, r->sid.id);

	/* (accepting picks the thread's event set: only for a record that is used) */
	if (s->layout.sample_id_all && pm_src_takes_records(s, ev) &&
	    pm_att_accept(s, r->sid.id, r->sid.tid))
		pm_src_record(s, ev, r);
}

/*
 * Host-wide (record.h: want): is @r of a process recorded?  An exec or
 * the process's end told first, so that the caller judges it anew.
 */
static bool wanted(struct session *s, const struct pm_rec *r)
{
	const struct pm_record_cfg *cfg = s->cfg;
	uint32_t pid;

	switch (r->type) {
	case PERF_RECORD_SAMPLE:
		pid = r->sample.pid;
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		pid = r->mmap.pid;
		break;
	case PERF_RECORD_COMM:
		pid = r->comm.pid;
		/* an exec, or the process renamed (its comm is its main thread's) */
		if ((r->comm.exec || r->comm.tid == pid) && cfg->proc_news)
			cfg->proc_news(cfg->want_arg, (pid_t)pid, false);
		break;
	case PERF_RECORD_EXIT:
		pid = r->task.pid;
		if (r->task.tid == pid && cfg->proc_news)
			cfg->proc_news(cfg->want_arg, (pid_t)pid, true);
		break;
	case PERF_RECORD_FORK:
		pid = r->task.pid;
		break;
	default:
		return true;
	}
	if (cfg->want(cfg->want_arg, (pid_t)pid))
		return true;
	s->res->foreign++;
	return false;
}

static void on_record(struct session *s, const struct pm_rec *r)
{
	if (s->cfg->want && !wanted(s, r))
		return;
	switch (r->type) {
	case PERF_RECORD_SAMPLE:
		on_sample(s, &r->sample);
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		/* host-wide: a process first seen by a new mapping has its others in /proc */
		if (s->cfg->host && !pm_maps_known(s->maps, (pid_t)r->mmap.pid))
			pm_maps_load_proc(s->maps, (pid_t)r->mmap.pid);
		if (r->type == PERF_RECORD_MMAP2 && !(r->mmap.prot & PROT_EXEC))
			break;
		if (r->misc & PERF_RECORD_MISC_MMAP_DATA)
			break;
		{
			struct pm_map_file fi;

			memset(&fi, 0, sizeof(fi));
			if (r->type == PERF_RECORD_MMAP2 && !r->mmap.build_id_size) {
				fi.maj = r->mmap.maj;
				fi.min = r->mmap.min;
				fi.ino = r->mmap.ino;
			}
			/* replay: by path only; the build ID check says whether it is the same file */
			pm_maps_add_file(s->maps, (pid_t)r->mmap.pid, r->mmap.addr, r->mmap.len,
					 r->mmap.pgoff, r->mmap.filename, s->replay ? NULL : &fi);
		}
		pm_reg_flush(s->reg, (pid_t)r->mmap.pid);
		break;
	case PERF_RECORD_COMM:
		if (r->comm.exec) {
			pm_maps_reset(s->maps, (pid_t)r->comm.pid);
			pm_reg_flush(s->reg, (pid_t)r->comm.pid);
		}
		break;
	case PERF_RECORD_FORK:
		if (!pm_att_thread_born(s, r->sid.id, r->sid.tid))
			break;
		if (r->task.pid != r->task.ppid)
			pm_maps_fork(s->maps, (pid_t)r->task.ppid, (pid_t)r->task.pid);
		break;
	case PERF_RECORD_EXIT:
		pm_att_thread_gone(s, r->sid.id, r->sid.tid);
		on_other(s, r);
		break;
	case PERF_RECORD_LOST:
		if (r->lost.id == PM_SES_LOST_END)
			s->res->lost_end += r->lost.lost;
		else if (r->lost.id == PM_SES_LOST_END_UNKNOWN)
			s->res->lost_end_unknown = true;
		else
			s->lost_said += r->lost.lost;
		s->res->lost += r->lost.lost;
		break;
	case PERF_RECORD_LOST_SAMPLES: /* a PMU's own (AUX), not in PERF_FORMAT_LOST's count */
		s->res->lost += r->lost.lost;
		break;
	case PERF_RECORD_THROTTLE:
		s->res->throttled++;
		break;
	case PERF_RECORD_SWITCH:
		on_other(s, r);
		break;
	default:
		break;
	}
}

void pm_ses_feed(struct session *s, const struct perf_event_header *h, const struct pm_rec *r)
{
	size_t first;

	if (s->cap && r->type == PERF_RECORD_SAMPLE && !pm_maps_known(s->maps, (pid_t)r->sample.pid))
		/* before the sample, in the capture too */
		pm_cap_check(s, pm_reg_load_maps(s->reg, (pid_t)r->sample.pid, s->cap));
	first = pm_maps_count(s->maps);
	s->keep = UINT64_MAX;
	if (!s->replay && s->mlog)
		pm_mlog_reset(s->mlog);
	on_record(s, r);
	if (s->replay && s->mlog && r->type == PERF_RECORD_SAMPLE)
		pm_mlog_reset(s->mlog); /* the MEM records before a sample are its own */
	if (s->cap) {
		if (r->type == PERF_RECORD_SAMPLE)
			pm_cap_write_mem(s);
		if (r->type == PERF_RECORD_SAMPLE && s->keep != UINT64_MAX)
			pm_cap_check(s, pm_data_write_sample_cut(s->cap, h, r->sample.stack,
								 r->sample.stack_size,
								 r->sample.dyn_size, s->keep));
		else
			pm_cap_check(s, pm_data_write(s->cap, h));
	}
	if (pm_maps_count(s->maps) != first)
		pm_cap_check(s, pm_reg_maps_added(s->reg, first, s->cap));
}

void pm_ses_lost_end(struct session *s, uint64_t n, bool unknown)
{
	/* header, id, lost, and a sample_id trailer of zeros as the layout has it */
	uint64_t b[1 + 2 + 8];
	struct perf_event_header h;
	struct pm_rec r;
	size_t tr = 0;

	if (s->layout.sample_id_all)
		tr = (size_t)__builtin_popcountll(
			     s->layout.sample_type & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
						      PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
						      PERF_SAMPLE_IDENTIFIER)) *
		     8;
	memset(b, 0, sizeof(b));
	h.type = PERF_RECORD_LOST;
	h.misc = 0;
	h.size = (uint16_t)(sizeof(h) + 16 + tr);
	memcpy(b, &h, sizeof(h));
	b[1] = unknown ? PM_SES_LOST_END_UNKNOWN : PM_SES_LOST_END;
	b[2] = unknown ? 0 : n;
	if (pm_rec_decode((const struct perf_event_header *)(void *)b, &s->layout, &r) == 0)
		pm_ses_feed(s, (const struct perf_event_header *)(void *)b, &r);
}

static void registry_new(struct session *s)
{
	s->reg = pm_reg_new(s->replay);
	pm_reg_unw_cache_bits(s->reg, s->cfg->small_tables);
	s->maps = pm_reg_maps(s->reg);
}

static void stacks_new(struct session *s)
{
	struct pm_stack_frame cut = { PM_STACKS_NO_MAP, false, 0, 0 };

	s->stacks = pm_stacks_new(s->nvalues);
	s->cut_frame = pm_stacks_frame(s->stacks, &cut);
	s->limit_frame = pm_reg_setup_limits(s->reg, s->stacks);
}

void pm_ses_processing(struct session *s)
{
	registry_new(s);
	pm_src_begin(s); /* (the values per stack) */
	stacks_new(s);
}

void pm_ses_renew(struct session *s)
{
	pm_gor_free(s->gor);
	s->gor = NULL;
	pm_stacks_free(s->stacks);
	pm_reg_free(s->reg);
	registry_new(s);
	stacks_new(s);
}

void pm_ses_release(struct session *s)
{
	pm_gor_free(s->gor);
	s->gor = NULL;
	pm_attach_free(s->att);
	s->att = NULL;
	pm_idtab_free(&s->ev_of);
	pm_mlog_free(s->mlog);
	s->mlog = NULL;
	free(s->snap_buf);
	s->snap_buf = NULL;
	s->snap = NULL;
	pm_stacks_free(s->stacks);
	s->stacks = NULL;
	pm_reg_free(s->reg);
	s->reg = NULL;
	s->maps = NULL;
	pm_src_end(s);
}
