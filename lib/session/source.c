/* source: what the loop does with the table of profile sources (source.h). */
#include "session/source.h"

#include <stdlib.h>
#include <string.h>

#include "session/session.h"
size_t pm_src_index(const struct pm_source *src)
{
	size_t i;

	for (i = 0; i < pm_nsources && pm_sources[i] != src; i++)
		;
	return i;
}

void *pm_src_state(const struct session *s, const struct pm_source *src)
{
	return s->src_state[pm_src_index(src)];
}

void pm_src_own(struct session *s, size_t first, const struct pm_source *src)
{
	for (size_t e = first; e < s->nev; e++)
		s->src[e] = (uint8_t)pm_src_index(src);
}

bool pm_src_add_event(struct session *s, const struct pm_source *src,
		      const struct pm_evt_spec *spec, int kind)
{
	if (s->nev >= PM_ARRAY_SIZE(s->spec))
		return false;
	s->spec[s->nev] = *spec;
	s->kind[s->nev] = kind;
	s->src[s->nev++] = (uint8_t)pm_src_index(src);
	return true;
}

bool pm_src_has_events(const struct session *s, const struct pm_source *src)
{
	size_t i = pm_src_index(src);

	for (size_t e = 0; e < s->nev; e++)
		if (s->src[e] == i)
			return true;
	return false;
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
		if (pm_sources[i]->configure && pm_sources[i]->configure(s))
			return -1;
	return 0;
}

int pm_src_add_events(struct session *s)
{
	for (size_t i = 0; i < pm_nsources; i++)
		if (pm_sources[i]->add_events && pm_sources[i]->add_events(s))
			return -1;
	return 0;
}

void pm_src_claim(struct session *s, size_t e, const char *name)
{
	for (size_t i = 1; i < pm_nsources; i++)
		if (pm_sources[i]->claim && pm_sources[i]->claim(s, e, name)) {
			s->src[e] = (uint8_t)i;
			return;
		}
}

void pm_src_begin(struct session *s)
{
	s->nvalues = 0;
	for (size_t i = 0; i < pm_nsources; i++) {
		const struct pm_source *src = pm_sources[i];

		if (!s->src_state[i]) /* (one that add_events() needed already kept) */
			s->src_state[i] = src->state_size ? xcalloc(1, src->state_size) : NULL;
		s->val_off[i] = s->nvalues;
		s->nvalues += src->nvalues ? src->nvalues(s) : 0;
		if (s->nvalues > PM_SES_VALUES_MAX) { /* a source added values past the sum above */
			pm_error("internal error: %zu values per stack, at most %d", s->nvalues,
				 PM_SES_VALUES_MAX);
			exit(1);
		}
		if (src->begin)
			src->begin(s);
	}
}

void pm_src_end(struct session *s)
{
	for (size_t i = 0; i < pm_nsources; i++) {
		if (pm_sources[i]->end && s->src_state[i])
			pm_sources[i]->end(s);
		free(s->src_state[i]);
		s->src_state[i] = NULL;
	}
}
