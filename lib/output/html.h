/*
 * html: a profile as one self-contained interactive HTML page, a flame
 * graph (icicle: root on top) drawn by the project's own script
 * (web/flame.js, embedded at build time).  No network, no external script
 * or font: the file opens offline in any browser.
 *
 * The page carries the merged call tree (frames expanded as report expands
 * them: an inlined function is a frame of its own), every sample type's
 * self value per node, each frame's name, file, start line and kind (Go,
 * Go runtime, native, kernel, creator, other), report's header per sample
 * type, and with a base profile the base's values per node (the diff view:
 * shares normalised by each profile's total).
 *
 * Pruning keeps the page small and fast: nodes whose total is under a
 * fraction of every sample type's total go into one "[pruned]" child of
 * their parent per parent, so totals stay exact; the page states the
 * fraction and what it merged.
 */
#ifndef PM_HTML_H
#define PM_HTML_H

#include <stddef.h>

struct pm_profile;

/* Nodes kept at most when the fraction is chosen automatically. */
#define PM_HTML_MAX_NODES 200000

struct pm_html_opts {
	long value_index;      /* sample type shown first, -1 = the profile's default */
	double node_fraction;  /* prune below this share of the total; < 0 = the smallest
				  of 0, 1e-6, 2e-6, 5e-6, 1e-5 ... that keeps at most
				  PM_HTML_MAX_NODES nodes */
	const char *title;     /* the profile's name (the input file); may be NULL */
	const char *base_title; /* the base's name; may be NULL */
};

/*
 * Render @p (with @base, the diff view against it; NULL for none) into a
 * heap buffer *@out of *@len bytes.  0, or -EINVAL with the reason in @err
 * (a value index out of range, a base sharing no sample type with @p).
 */
int pm_html_render(const struct pm_profile *p, const struct pm_profile *base,
		   const struct pm_html_opts *o, char **out, size_t *len, char *err,
		   size_t errlen);

#endif
