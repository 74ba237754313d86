/*
 * report: render a profile as text.  A perf-style table of the hottest
 * functions (self and cumulative share), and folded stacks for flame-graph
 * tools (root first, frames joined by ';', a space, the count).
 */
#ifndef PM_REPORT_H
#define PM_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct pm_profile;
struct pm_prof_loc;

enum pm_report_sort { PM_SORT_SELF, PM_SORT_CUM, PM_SORT_NAME };

struct pm_report_opts {
	size_t top;               /* rows in the table, 0 = all */
	enum pm_report_sort sort;
	long value_index;         /* sample type index, -1 = the profile's default */
	const char *title;        /* shown in the header, e.g. the file name; may be NULL */
};

/* 0 or -errno (a write error on @out). */
int pm_report_text(const struct pm_profile *p, FILE *out, const struct pm_report_opts *o);
int pm_report_folded(const struct pm_profile *p, FILE *out, const struct pm_report_opts *o);

/*
 * The table's header alone ("# ..." lines: title, sample types, totals,
 * period, time, duration, the profile's comments such as lost samples).
 */
int pm_report_header(const struct pm_profile *p, FILE *out, const struct pm_report_opts *o);

/*
 * The name report gives a location without a function: "module+0x<file
 * offset>" when its mapping has a file, else "0x<address>".  Heap string.
 */
char *pm_report_addr_name(const struct pm_profile *p, const struct pm_prof_loc *l);

/*
 * Folded-frame name: @name with ';' replaced by ':' and newlines, tabs and
 * other control characters by '?', written into @buf.  Returns @buf.
 */
char *pm_report_folded_name(const char *name, char *buf, size_t len);

#endif
