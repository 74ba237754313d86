/*
 * libFuzzer target: arbitrary bytes as a spooled pprof through
 * pm_otlp_add(), twice into one request (the second time as another
 * process), then pm_otlp_encode().  Whatever the add accepts must encode
 * to a request that protoc-c's unpack reads back, whose every index points
 * inside its table and whose every string is valid UTF-8; a refused add
 * leaves one line of error and the request unchanged.
 *
 *   clang -fsanitize=fuzzer,address -Ilib -Ibuild/gen tests/fuzz/fuzz-otlp.c \
 *         build/san/libpmuprof.a $(pkg-config --libs libelf libdw libprotobuf-c zlib)
 */
#include "agent/meta.h"
#include "agent/otlp.h"
#include "base/util.h"

#include <opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	Req;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len);

static bool in(int32_t i, size_t n)
{
	return i >= 0 && (size_t)i < n;
}

static bool utf8(const char *s)
{
	char *c = xstrdup(s);
	bool ok = strcmp(pm_sanitize(c), s) == 0;

	free(c);
	return ok;
}

static void check_dict(const Dict *d)
{
	size_t ns = d->n_string_table;

	if (!ns || *d->string_table[0] || !d->n_mapping_table || !d->n_location_table ||
	    !d->n_function_table || !d->n_link_table || !d->n_attribute_table || !d->n_stack_table)
		abort();
	for (size_t i = 0; i < ns; i++)
		if (!utf8(d->string_table[i]))
			abort();
	for (size_t i = 0; i < d->n_mapping_table; i++)
		if (!in(d->mapping_table[i]->filename_strindex, ns))
			abort();
	for (size_t i = 0; i < d->n_function_table; i++)
		if (!in(d->function_table[i]->name_strindex, ns))
			abort();
	for (size_t i = 0; i < d->n_location_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Location *l =
			d->location_table[i];

		if (!in(l->mapping_index, d->n_mapping_table))
			abort();
		for (size_t j = 0; j < l->n_lines; j++)
			if (!in(l->lines[j]->function_index, d->n_function_table))
				abort();
	}
	for (size_t i = 0; i < d->n_stack_table; i++)
		for (size_t j = 0; j < d->stack_table[i]->n_location_indices; j++)
			if (!in(d->stack_table[i]->location_indices[j], d->n_location_table))
				abort();
	for (size_t i = 1; i < d->n_attribute_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit *a =
			d->attribute_table[i];

		if (!in(a->key_strindex, ns) || !in(a->unit_strindex, ns) || !a->value ||
		    (a->value->value_case ==
			     OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE &&
		     !utf8(a->value->string_value)))
			abort();
	}
}

static void check(const uint8_t *raw, size_t len, size_t nprof)
{
	Req *r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, len, raw);
	size_t n = 0;

	if (!r || !r->dictionary)
		abort();
	check_dict(r->dictionary);
	for (size_t i = 0; i < r->n_resource_profiles; i++) {
		const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp =
			r->resource_profiles[i]->scope_profiles[0];

		for (size_t j = 0; j < sp->n_profiles; j++, n++)
			for (size_t k = 0; k < sp->profiles[j]->n_samples; k++) {
				const Opentelemetry__Proto__Profiles__V1development__Sample *s =
					sp->profiles[j]->samples[k];

				if (!in(s->stack_index, r->dictionary->n_stack_table) ||
				    s->n_values != 1)
					abort();
				for (size_t a = 0; a < s->n_attribute_indices; a++)
					if (!in(s->attribute_indices[a],
						r->dictionary->n_attribute_table))
						abort();
			}
	}
	if (n != nprof)
		abort();
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
		r, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	struct pm_otlp *o = pm_otlp_new();
	struct pm_agent_meta m;
	char err[256];
	uint8_t *raw;
	size_t rawlen;
	int rc;

	memset(&m, 0, sizeof(m));
	m.pid = 42;
	pm_meta_set(m.service, sizeof(m.service), "fuzz");
	rc = pm_otlp_add(o, buf, len, &m, err, sizeof(err));
	if (rc) {
		if (!err[0] || strchr(err, '\n') || pm_otlp_nprofiles(o) || pm_otlp_nresources(o))
			abort();
	} else {
		m.pid = 43;
		if (pm_otlp_add(o, buf, len, &m, err, sizeof(err)) ||
		    pm_otlp_nresources(o) != 2)
			abort();
	}
	pm_otlp_encode(o, &raw, &rawlen);
	check(raw, rawlen, pm_otlp_nprofiles(o));
	free(raw);
	pm_otlp_free(o);
	/* the same bytes as a collector's answer: a count >= 0 or an error, a clean message */
	if (pm_otlp_rejected(buf, len, err, sizeof(err)) >= 0 && !utf8(err))
		abort();
	return 0;
}
