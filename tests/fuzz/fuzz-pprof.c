/*
 * libFuzzer target: arbitrary bytes through pm_pprof_decode (gzip or raw
 * protobuf).  A profile that decodes is then rendered as the table and as
 * folded stacks, encoded again, and that encoding must decode back to a
 * profile of the same shape: anything the reader accepts, the writers must
 * handle.  The error text must be one non-empty line whenever decoding fails.
 *
 *   clang -fsanitize=fuzzer,address -Ilib tests/fuzz/fuzz-pprof.c build/san/libpmuprof.a \
 *         $(pkg-config --libs libelf libdw libprotobuf-c zlib)
 */
#include "profile/pprof.h"
#include "profile/profile.h"
#include "output/report.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len);

static FILE *devnull;

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	struct pm_profile *p = NULL, *q = NULL;
	struct pm_report_opts o = { 0, PM_SORT_SELF, -1, NULL };
	char err[256];
	uint8_t *enc;
	size_t enclen;

	if (!devnull)
		devnull = fopen("/dev/null", "w");
	if (pm_pprof_decode(buf, len, &p, err, sizeof(err)) != 0) {
		if (p || !err[0] || strchr(err, '\n'))
			abort();
		return 0;
	}
	if (!p)
		abort();
	if (devnull) {
		o.sort = (enum pm_report_sort)(len % 3);
		o.top = len % 5;
		pm_report_text(p, devnull, &o);
		pm_report_folded(p, devnull, &o);
	}
	if (pm_pprof_encode(p, &enc, &enclen) != 0)
		abort();
	if (pm_pprof_decode(enc, enclen, &q, err, sizeof(err)) != 0)
		abort();
	if (pm_prof_nsamples(q) != pm_prof_nsamples(p) || pm_prof_nlocs(q) != pm_prof_nlocs(p) ||
	    pm_prof_nfuncs(q) != pm_prof_nfuncs(p) ||
	    pm_prof_nmappings(q) != pm_prof_nmappings(p) ||
	    pm_prof_nsample_types(q) != pm_prof_nsample_types(p))
		abort();
	free(enc);
	pm_prof_free(q);
	pm_prof_free(p);
	return 0;
}
