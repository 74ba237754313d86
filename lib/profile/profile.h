/*
 * profile: the in-memory profile that every stage shares.  It has pprof's
 * shape (sample types, mappings, functions, locations, samples with
 * labels), interns everything it is given, and merges samples with the same
 * stack and labels by adding their values.  record builds one, the pprof
 * reader fills one, the writers render one.
 *
 * All strings are copied in; every pointer returned is borrowed and valid
 * until pm_prof_free().  Ids are 1-based and dense: mapping i, function i
 * and location i have id i + 1.
 */
#ifndef PM_PROFILE_H
#define PM_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pm_profile;

struct pm_prof_vtype {
	const char *type, *unit;
};

struct pm_prof_mapping {
	uint64_t id, start, limit, offset;
	const char *file, *build_id;
	bool has_functions, has_filenames, has_lines, has_inline;
};

struct pm_prof_func {
	uint64_t id;
	const char *name, *system_name, *file;
	int64_t start_line;
};

struct pm_prof_line {
	uint64_t func_id;
	int64_t line;
};

struct pm_prof_loc {
	uint64_t id, mapping_id, address;
	size_t nlines;                    /* inlined callee first, physical caller last */
	const struct pm_prof_line *lines;
};

struct pm_prof_label {
	const char *key;
	const char *str;      /* NULL for a numeric label */
	int64_t num;
	const char *num_unit; /* NULL when none */
};

struct pm_prof_sample {
	size_t nlocs;
	const uint64_t *loc_ids; /* leaf first */
	const int64_t *values;   /* pm_prof_nsample_types() values */
	size_t nlabels;
	const struct pm_prof_label *labels;
};

struct pm_profile *pm_prof_new(void);
/*
 * The same with its tables grown by 1 << @chunk_bits entries at a time
 * (0, or past the default of 512: the default): a fuzz target's few.
 */
struct pm_profile *pm_prof_new_sized(unsigned chunk_bits);
void pm_prof_free(struct pm_profile *p); /* NULL is fine */

/* Header.  Sample types must all be added before the first sample. */
void pm_prof_add_sample_type(struct pm_profile *p, const char *type, const char *unit);
void pm_prof_set_period(struct pm_profile *p, const char *type, const char *unit, int64_t period);
void pm_prof_set_time(struct pm_profile *p, int64_t time_nanos, int64_t duration_nanos);
void pm_prof_add_comment(struct pm_profile *p, const char *text);
/* Index of the default sample type (default: the last one). */
void pm_prof_set_default_type(struct pm_profile *p, size_t idx);

/* Interning: equal arguments give the same id. */
uint64_t pm_prof_mapping(struct pm_profile *p, uint64_t start, uint64_t limit, uint64_t offset,
			 const char *file, const char *build_id);
void pm_prof_mapping_flags(struct pm_profile *p, uint64_t id, bool functions, bool filenames,
			   bool lines, bool inl);
uint64_t pm_prof_func(struct pm_profile *p, const char *name, const char *system_name,
		      const char *file, int64_t start_line);
/*
 * Interned by (mapping_id, address, lines): one address with other lines
 * (a profile read in that has them) is another location, never the first
 * one's lines.
 */
uint64_t pm_prof_loc(struct pm_profile *p, uint64_t mapping_id, uint64_t address,
		     const struct pm_prof_line *lines, size_t nlines);

/*
 * Add values to the sample with this stack (leaf first) and these labels,
 * creating it if new.  @values has pm_prof_nsample_types() entries.
 * Label order does not matter.
 */
void pm_prof_add(struct pm_profile *p, const uint64_t *loc_ids, size_t nlocs,
		 const int64_t *values, const struct pm_prof_label *labels, size_t nlabels);

/* Access. */
size_t pm_prof_nsample_types(const struct pm_profile *p);
const struct pm_prof_vtype *pm_prof_sample_type(const struct pm_profile *p, size_t i);
/* Index of the sample type named @type, -1 when none. */
long pm_prof_find_sample_type(const struct pm_profile *p, const char *type);
size_t pm_prof_default_type(const struct pm_profile *p);
const struct pm_prof_vtype *pm_prof_period_type(const struct pm_profile *p); /* NULL if unset */
int64_t pm_prof_period(const struct pm_profile *p);
int64_t pm_prof_time(const struct pm_profile *p);
int64_t pm_prof_duration(const struct pm_profile *p);
size_t pm_prof_ncomments(const struct pm_profile *p);
const char *pm_prof_comment(const struct pm_profile *p, size_t i);

size_t pm_prof_nmappings(const struct pm_profile *p);
const struct pm_prof_mapping *pm_prof_mapping_at(const struct pm_profile *p, size_t i);
size_t pm_prof_nfuncs(const struct pm_profile *p);
const struct pm_prof_func *pm_prof_func_at(const struct pm_profile *p, size_t i);
size_t pm_prof_nlocs(const struct pm_profile *p);
const struct pm_prof_loc *pm_prof_loc_at(const struct pm_profile *p, size_t i);
size_t pm_prof_nsamples(const struct pm_profile *p);
const struct pm_prof_sample *pm_prof_sample_at(const struct pm_profile *p, size_t i);

/*
 * A copy of @in without the locations for which @drop returns true
 * (report --no-creators, --no-kernel); samples that become equal merge.
 * A sample all of whose locations go gets one location of a function
 * named @rest (such as "[kernel]"), or is kept with no stack when @rest is
 * NULL, so that the totals stay those of @in.
 */
struct pm_profile *pm_prof_without(const struct pm_profile *in,
				   bool (*drop)(const struct pm_profile *in,
						const struct pm_prof_loc *l, void *arg),
				   void *arg, const char *rest);

/* By id; NULL when out of range. */
const struct pm_prof_mapping *pm_prof_mapping_by_id(const struct pm_profile *p, uint64_t id);
const struct pm_prof_func *pm_prof_func_by_id(const struct pm_profile *p, uint64_t id);
const struct pm_prof_loc *pm_prof_loc_by_id(const struct pm_profile *p, uint64_t id);

#endif
