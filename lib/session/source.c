/*
 * source: what the loop does with the table of profile sources
 * (source.h): their contexts, and every call of a hook, each handed its
 * source's context (srcctx.h).
 */
#include "session/source.h"

#include <stdlib.h>
#include <string.h>

#include "capture/datafile.h"
#include "profile/profile.h"
#include "session/session.h"
#include "session/srcctx.h"

size_t pm_src_index(const struct pm_source *src)
{
	size_t i;

	for (i = 0; i < pm_nsources && pm_sources[i] != src; i++)
		;
	return i;
}

struct pm_srcctx *pm_src_ctx(struct session *s, size_t i)
{
	struct pm_srcctx *c;

	if (i >= pm_nsources)
		return NULL;
	c = &s->sctx[i];
	c->ses = s;
	c->index = i;
	c->map = PM_SES_SRC_MAP(i);
	if (!c->state && pm_sources[i]->state_size)
		c->state = xcalloc(1, pm_sources[i]->state_size);
	return c;
}

bool pm_src_has_events(const struct session *s, const struct pm_source *src)
{
	size_t i = pm_src_index(src);

	for (size_t e = 0; e < s->nev; e++)
		if (s->src[e] == i)
			return true;
	return false;
}

/*
 * Does source @i work in this session: it owns an event, or works without
 * (pm_sc_set_on())?  The hooks of one that does not are not called past
 * begin(): its timer, snapshots and profile hooks would find nothing.
 */
static bool src_on(const struct session *s, size_t i)
{
	return s->sctx[i].on || pm_src_has_events(s, pm_sources[i]);
}

bool pm_src_creations_logged(const struct session *s)
{
	for (size_t i = 0; i < pm_nsources; i++)
		if (pm_sources[i]->logs_creations && pm_src_has_events(s, pm_sources[i]))
			return true;
	return false;
}

int pm_src_configure(struct session *s)
{
	for (size_t i = 0; i < pm_nsources; i++)
		if (pm_sources[i]->configure && pm_sources[i]->configure(pm_src_ctx(s, i)))
			return -1;
	return 0;
}

int pm_src_add_events(struct session *s)
{
	for (size_t i = 0; i < pm_nsources; i++)
		if (pm_sources[i]->add_events && pm_sources[i]->add_events(pm_src_ctx(s, i)))
			return -1;
	return 0;
}

void pm_src_adjust_attr(struct session *s, size_t e, struct perf_event_attr *a)
{
	const struct pm_source *src = pm_sources[s->src[e]];

	if (src->adjust_attr) /* the source's own needs */
		src->adjust_attr(pm_src_ctx(s, s->src[e]), e, a);
}

void pm_src_claim(struct session *s, size_t e, const char *name)
{
	for (size_t i = 1; i < pm_nsources; i++)
		if (pm_sources[i]->claim && pm_sources[i]->claim(pm_src_ctx(s, i), e, name)) {
			s->src[e] = (uint8_t)i;
			return;
		}
}

void pm_src_begin(struct session *s)
{
	s->nvalues = 0;
	for (size_t i = 0; i < pm_nsources; i++) {
		const struct pm_source *src = pm_sources[i];
		struct pm_srcctx *c = pm_src_ctx(s, i);

		c->val_off = s->nvalues;
		c->nvalues = src->nvalues ? src->nvalues(c) : 0;
		s->nvalues += c->nvalues;
		if (s->nvalues > PM_SES_VALUES_MAX) { /* a source added values past the sum above */
			pm_error("internal error: %zu values per stack, at most %d", s->nvalues,
				 PM_SES_VALUES_MAX);
			exit(1);
		}
		if (src->begin)
			src->begin(c);
	}
}

void pm_src_end(struct session *s)
{
	for (size_t i = 0; i < pm_nsources; i++) {
		struct pm_srcctx *c = &s->sctx[i];

		if (pm_sources[i]->end && c->state)
			pm_sources[i]->end(c);
		free(c->state);
		memset(c, 0, sizeof(*c));
	}
}

void pm_src_sample(struct session *s, size_t e, const struct pm_rec_sample *smp)
{
	pm_sources[s->src[e]]->sample(pm_src_ctx(s, s->src[e]), e, smp);
}

bool pm_src_takes_records(const struct session *s, size_t e)
{
	return pm_sources[s->src[e]]->record != NULL;
}

void pm_src_record(struct session *s, size_t e, const struct pm_rec *r)
{
	if (pm_sources[s->src[e]]->record)
		pm_sources[s->src[e]]->record(pm_src_ctx(s, s->src[e]), e, r);
}

uint64_t pm_src_timers(struct session *s, uint64_t now)
{
	uint64_t next = 0;

	for (size_t i = 0; i < pm_nsources; i++)
		if (pm_sources[i]->timer && src_on(s, i)) {
			uint64_t t = pm_sources[i]->timer(pm_src_ctx(s, i), now);

			if (t && (!next || t < next))
				next = t;
		}
	return next;
}

void pm_src_snapshot(struct session *s, const struct pm_data_snap *sn)
{
	for (size_t i = 0; i < pm_nsources; i++)
		if (pm_sources[i]->snap_type == sn->type && pm_sources[i]->snapshot && src_on(s, i))
			pm_sources[i]->snapshot(pm_src_ctx(s, i), sn);
}

void pm_src_profile_head(struct session *s, struct pm_profile *p)
{
	for (size_t i = 0; i < pm_nsources; i++)
		if (pm_sources[i]->profile_head && src_on(s, i))
			pm_sources[i]->profile_head(pm_src_ctx(s, i), p);
}

void pm_src_profile_tail(struct session *s, struct pm_profile *p)
{
	for (size_t i = 0; i < pm_nsources; i++)
		if (pm_sources[i]->profile_tail && src_on(s, i))
			pm_sources[i]->profile_tail(pm_src_ctx(s, i), p);
}

void pm_src_cut(struct session *s)
{
	for (size_t i = 0; i < pm_nsources; i++)
		if (pm_sources[i]->cut && src_on(s, i))
			pm_sources[i]->cut(pm_src_ctx(s, i));
}

uint64_t pm_src_location(struct session *s, size_t i, struct pm_profile *p,
			 const struct pm_stack_frame *f)
{
	if (i >= pm_nsources || !pm_sources[i]->location || !src_on(s, i))
		return 0;
	return pm_sources[i]->location(pm_src_ctx(s, i), p, f);
}

size_t pm_src_stack_labels(struct session *s, const uint32_t *ids, size_t *n,
			   struct pm_prof_label *out, size_t max)
{
	size_t nlab = 0;

	for (size_t i = 0; i < pm_nsources; i++)
		if (pm_sources[i]->stack_labels && src_on(s, i))
			nlab += pm_sources[i]->stack_labels(pm_src_ctx(s, i), ids, n, out + nlab,
							    max - nlab);
	return nlab;
}

void pm_src_profile_stack(struct session *s, struct pm_profile *p, const uint64_t *locs, size_t n,
			  const int64_t *v, struct pm_prof_label *lab, size_t nlab)
{
	for (size_t i = 0; i < pm_nsources; i++)
		if (pm_sources[i]->profile_stack && src_on(s, i))
			pm_sources[i]->profile_stack(pm_src_ctx(s, i), p, locs, n,
						     v + s->sctx[i].val_off, lab, nlab);
}
