/*
 * srcctx: the session's services to the profile sources (srcctx.h), each
 * a function over the session's state, so that no source reads it.
 */
#include "session/srcctx.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/path.h"
#include "goruntime/goroutine.h"
#include "profile/stacks.h"
#include "session/attach.h"
#include "session/capture.h"
#include "session/registry.h"
#include "session/session.h"
#include "session/source.h"
#include "symbols/maps.h"

_Static_assert(PM_SC_MAX_FRAMES == PM_REG_MAX_FRAMES, "PM_SC_MAX_FRAMES");

const struct pm_record_cfg *pm_sc_cfg(const struct pm_srcctx *c)
{
	return c->ses->cfg;
}

bool pm_sc_replay(const struct pm_srcctx *c)
{
	return c->ses->replay;
}

bool pm_sc_attached(const struct pm_srcctx *c)
{
	return c->ses->attach;
}

bool pm_sc_capturing(const struct pm_srcctx *c)
{
	return c->ses->cap != NULL;
}

pid_t pm_sc_cmd_pid(const struct pm_srcctx *c)
{
	return c->ses->cmd_pid;
}

size_t pm_sc_nprocs(const struct pm_srcctx *c)
{
	return pm_att_nprocs(c->ses);
}

pid_t pm_sc_pid(const struct pm_srcctx *c, size_t i)
{
	return pm_att_pid(c->ses, i);
}

bool pm_sc_next_exe(const struct pm_srcctx *c, size_t *i, pid_t *pid, char **path, bool *dup)
{
	const struct session *s = c->ses;
	size_t n = s->attach ? pm_att_nprocs(s) : 1;

	if (*i >= n)
		return false;
	*pid = s->attach ? pm_att_pid(s, *i) : 0;
	if (s->attach) {
		char exe[64];

		snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)*pid);
		*path = realpath(exe, NULL);
	} else {
		*path = s->cfg->argv ? pm_path_resolve(s->cfg->argv[0]) : NULL;
	}
	*dup = false;
	for (size_t e = 0; *path && e < s->nev && !*dup; e++)
		*dup = s->src[e] == c->index && !strcmp(s->spec[e].path, *path);
	(*i)++;
	return true;
}

void pm_sc_err(const struct pm_srcctx *c, enum pm_record_err err, const char *fmt, ...)
{
	struct pm_record_result *res = c->ses->res;
	va_list ap;

	res->err = err;
	va_start(ap, fmt); /* as pm_ses_err() */
	pm_vseterr(res->msg, sizeof(res->msg), fmt, ap);
	va_end(ap);
}

const char *pm_sc_errmsg(const struct pm_srcctx *c)
{
	return c->ses->res->msg;
}

void pm_sc_count_sample(const struct pm_srcctx *c)
{
	c->ses->res->samples++;
}

void pm_sc_set_on(struct pm_srcctx *c)
{
	c->on = true;
}

bool pm_sc_break(struct pm_srcctx *c, uint64_t addr, void (*fn)(struct pm_srcctx *c, pid_t pid),
		 const char *what)
{
	struct session *s = c->ses;

	if (s->cmd_break)
		return false;
	s->cmd_break = addr;
	s->cmd_break_fn = fn;
	s->cmd_break_src = c;
	s->cmd_break_what = what;
	return true;
}

size_t pm_sc_nev(const struct pm_srcctx *c)
{
	return c->ses->nev;
}

size_t pm_sc_nuser(const struct pm_srcctx *c)
{
	return c->ses->nuser;
}

size_t pm_sc_event_room(const struct pm_srcctx *c)
{
	return PM_ARRAY_SIZE(c->ses->spec) - c->ses->nev;
}

bool pm_sc_owns(const struct pm_srcctx *c, size_t e)
{
	return e < c->ses->nev && c->ses->src[e] == c->index;
}

bool pm_sc_has_events(const struct pm_srcctx *c)
{
	for (size_t e = 0; e < c->ses->nev; e++)
		if (c->ses->src[e] == c->index)
			return true;
	return false;
}

const struct pm_evt_spec *pm_sc_spec(const struct pm_srcctx *c, size_t e)
{
	return &c->ses->spec[e];
}

const struct perf_event_attr *pm_sc_attr(const struct pm_srcctx *c, size_t e)
{
	return &c->ses->attr[e];
}

int pm_sc_kind(const struct pm_srcctx *c, size_t e)
{
	return c->ses->kind[e];
}

void pm_sc_set_kind(struct pm_srcctx *c, size_t e, int kind)
{
	c->ses->kind[e] = kind;
}

bool pm_sc_add_event(struct pm_srcctx *c, const struct pm_evt_spec *spec, int kind)
{
	struct session *s = c->ses;

	if (s->nev >= PM_ARRAY_SIZE(s->spec))
		return false;
	s->spec[s->nev] = *spec;
	s->kind[s->nev] = kind;
	s->src[s->nev++] = (uint8_t)c->index;
	return true;
}

int pm_sc_user_events(struct pm_srcctx *c)
{
	struct session *s = c->ses;

	pm_att_resolve_kernel(s); /* first: the hardware probes count what the events will */
	if (pm_att_resolve_hardware(s))
		return -1;
	s->nuser = s->nev;
	for (size_t e = 0; e < s->nev; e++)
		s->src[e] = (uint8_t)c->index;
	return 0;
}

bool pm_sc_is_cpuwide(const struct pm_srcctx *c, size_t e)
{
	return e < PM_ARRAY_SIZE(c->ses->cpuwide) && c->ses->cpuwide[e];
}

void pm_sc_set_cpuwide(struct pm_srcctx *c, size_t e)
{
	if (e < PM_ARRAY_SIZE(c->ses->cpuwide))
		c->ses->cpuwide[e] = true;
}

int pm_sc_cpuwide_open(struct pm_srcctx *c, size_t e, bool on)
{
	return pm_att_cpuwide(c->ses, e, on);
}

uint64_t pm_sc_cpuwide_hits(const struct pm_srcctx *c, size_t e)
{
	return pm_att_cpuwide_hits(c->ses, e);
}

int pm_sc_cpuwide_open_own(struct pm_srcctx *c, bool on)
{
	int rc = 0;

	for (size_t e = 0; e < pm_sc_nev(c); e++)
		if (pm_sc_owns(c, e) && pm_sc_cpuwide_open(c, e, on) < 0)
			rc = -1;
	return rc;
}

uint64_t pm_sc_cpuwide_hits_own(const struct pm_srcctx *c)
{
	uint64_t n = 0;

	for (size_t e = 0; e < pm_sc_nev(c); e++)
		if (pm_sc_owns(c, e))
			n += pm_sc_cpuwide_hits(c, e);
	return n;
}

struct pm_stacks *pm_sc_stacks(const struct pm_srcctx *c)
{
	return c->ses->stacks;
}

struct pm_maps *pm_sc_maps(const struct pm_srcctx *c)
{
	return c->ses->maps;
}

struct pm_gor *pm_sc_gor(const struct pm_srcctx *c)
{
	return c->ses->gor;
}

const struct pm_sym *pm_sc_map_sym(const struct pm_srcctx *c, const struct pm_map *m)
{
	return pm_reg_map_sym(c->ses->reg, m);
}

void pm_sc_load_maps(const struct pm_srcctx *c, pid_t pid)
{
	pm_cap_check(c->ses, pm_reg_load_maps(c->ses->reg, pid, c->ses->cap));
}

void pm_sc_lookup_pid(const struct pm_srcctx *c, pid_t pid)
{
	pm_reg_set_pid(c->ses->reg, pid);
}

void pm_sc_check_limits(const struct pm_srcctx *c, unsigned status)
{
	pm_reg_check_limits(c->ses->reg, c->ses->stacks, status);
}

const uint64_t *pm_sc_pcs(const struct pm_srcctx *c)
{
	return c->ses->pcs;
}

uint32_t *pm_sc_ids(const struct pm_srcctx *c)
{
	return c->ses->ids;
}

void pm_sc_walk(const struct pm_srcctx *c, const struct pm_rec_sample *smp, struct pm_walk *w)
{
	pm_ses_walk(c->ses, smp, w);
}

size_t pm_sc_stack_ids(const struct pm_srcctx *c, const struct pm_rec_sample *smp,
		       const struct pm_walk *w)
{
	return pm_ses_stack_ids(c->ses, smp, w);
}

size_t pm_sc_gor_sample(const struct pm_srcctx *c, const struct pm_rec_sample *smp,
			const struct pm_walk *w, size_t npcs, size_t n)
{
	return pm_ses_gor_sample(c->ses, smp, w, npcs, n);
}

size_t pm_sc_user_ids(const struct pm_srcctx *c, const struct pm_walk *w, size_t from,
		      uint32_t *ids, size_t k)
{
	return pm_ses_user_ids(c->ses, w, from, ids, k);
}

uint32_t pm_sc_cut_frame(const struct pm_srcctx *c)
{
	return c->ses->cut_frame;
}

void pm_sc_keep(const struct pm_srcctx *c, uint64_t bytes)
{
	if (c->ses->cap)
		c->ses->keep = bytes;
}

void pm_sc_keep_walk(const struct pm_srcctx *c, const struct pm_walk *w, size_t n)
{
	struct session *s = c->ses;

	if (s->cap)
		s->keep = pm_cap_keep(s, &w->in, w->pid, n, w->status);
}

size_t pm_sc_unwind(const struct pm_srcctx *c, pid_t pid, struct pm_unw_input *in, uint64_t *pcs,
		    size_t max, unsigned *status)
{
	struct session *s = c->ses;

	s->unw_pid = pid; /* past the copy: read as the snapshot's reads are */
	in->read_mem = pm_cap_unw_read;
	in->read_arg = s;
	return pm_unw_walk(pm_reg_unwinder(s->reg, pid), in, pcs, max, status);
}

void pm_sc_add_stack(const struct pm_srcctx *c, uint32_t pid, uint32_t tid, const uint32_t *ids,
		     size_t n, const int64_t *v)
{
	struct session *s = c->ses;
	int64_t values[PM_SES_VALUES_MAX];

	memset(values, 0, s->nvalues * sizeof(values[0]));
	memcpy(values + c->val_off, v, c->nvalues * sizeof(values[0]));
	pm_stacks_add_tagged(s->stacks, pid, tid, ids, n, values);
}

struct pm_srcctx *pm_sc_peer(const struct pm_srcctx *c, const struct pm_source *src)
{
	return pm_src_ctx(c->ses, pm_src_index(src));
}

int pm_sc_read(const struct pm_srcctx *c, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	return pm_cap_read(c->ses, pid, addr, buf, len);
}

void pm_sc_readv(const struct pm_srcctx *c, pid_t pid, struct pm_cap_rd *r, size_t n)
{
	pm_cap_readv(c->ses, pid, r, n);
}

int pm_sc_value(const struct pm_srcctx *c, pid_t pid, uint64_t key, void *buf, size_t len)
{
	return pm_cap_value(c->ses, pid, key, buf, len);
}

int pm_sc_clock(const struct pm_srcctx *c, pid_t pid, uint64_t *now)
{
	if (c->ses->replay && !c->ses->mlog)
		return -1;
	return pm_cap_read(c->ses, pid, PM_GOR_CLOCK_ADDR, now, 8) ? -1 : 0;
}

void pm_sc_snap_begin(const struct pm_srcctx *c, struct pm_slog **log)
{
	pm_cap_snap_begin(c->ses, log);
}

void pm_sc_snap_end(const struct pm_srcctx *c, uint32_t type, uint32_t flags, uint64_t time,
		    const pid_t *pids, size_t npids)
{
	pm_cap_snap_end(c->ses, type, flags, time, pids, npids);
}

bool pm_sc_ours(struct pm_srcctx *ctx, const struct pm_rec_sample *smp, uint64_t key)
{
	pid_t pid = (pid_t)smp->pid;
	uint64_t v = 0;

	if (!pm_sc_replay(ctx)) {
		if (pm_sc_attached(ctx)) {
			for (size_t i = 0; i < pm_sc_nprocs(ctx) && !v; i++)
				v = pm_sc_pid(ctx, i) == pid;
		} else {
			v = pid == pm_sc_cmd_pid(ctx) ||
			    (!pm_sc_capturing(ctx) && pm_maps_find(pm_sc_maps(ctx), pid, smp->ip));
		}
	}
	if (pm_sc_value(ctx, pid, key, &v, sizeof(v)) < 0)
		v = pm_maps_find(pm_sc_maps(ctx), pid, smp->ip) != NULL; /* a capture without it */
	return v != 0;
}
