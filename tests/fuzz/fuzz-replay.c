/*
 * libFuzzer target: arbitrary bytes as a capture, through the whole replay
 * that `pmuprof report -i FILE` runs (pm_record_replay: the capture reader,
 * maps, build-ID checks, the unwinders, goroutine reads from the memory
 * log, the stacks table, limits, the profile), then every writer of its
 * result (pprof encoding, the text report, folded stacks).  fuzz-datafile
 * covers the reader and record decoders alone; this one the glue between
 * them and the stages they feed, which trusts what the reader hands out.
 *
 * Binaries are opened by the paths the capture names, as report does: the
 * seeds name the golden fixtures' binaries (/tmp/pmuprof-golden/go/shares;
 * go/locks and go/alloc for the seeds golden-locks-* and golden-alloc-* of
 * --locks and --alloc; go/wallwait for wall and inuse-alone, --wall and
 * --inuse snapshots; scripts/fixtures.sh), so inputs that keep that
 * path are unwound and symbolized for real; other paths are missing and their frames stay
 * unnamed.  Run with -close_fd_mask=2 (fuzz-replay.flags): replay warns on
 * stderr for each missing binary or truncated capture.
 *
 * Checks: an error is one non-empty line; a profile encodes, decodes back
 * with the same samples, and renders in both report formats.
 */
#include "profile/pprof.h"
#include "profile/profile.h"
#include "session/record.h"
#include "output/report.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len);

static FILE *devnull;

static void check_profile(const struct pm_profile *p)
{
	struct pm_report_opts o = { 0, PM_SORT_SELF, -1, "fuzz" };
	struct pm_profile *back = NULL;
	uint8_t *enc = NULL;
	size_t enclen = 0;
	char err[256];

	if (pm_pprof_encode(p, &enc, &enclen))
		abort();
	if (pm_pprof_decode(enc, enclen, &back, err, sizeof(err)))
		abort(); /* pmuprof wrote a profile it cannot read */
	if (pm_prof_nsamples(back) != pm_prof_nsamples(p) ||
	    pm_prof_nlocs(back) != pm_prof_nlocs(p) ||
	    pm_prof_nsample_types(back) != pm_prof_nsample_types(p))
		abort();
	pm_prof_free(back);
	free(enc);
	if (pm_report_text(p, devnull, &o) || pm_report_folded(p, devnull, &o))
		abort();
	o.sort = PM_SORT_CUM;
	o.top = 5;
	if (pm_report_text(p, devnull, &o))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	struct pm_record_result res;
	struct pm_profile *p = NULL;
	char path[64];
	int fd;

	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	fd = memfd_create("fuzz-replay", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	if (len && write(fd, buf, len) != (ssize_t)len)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (pm_record_replay(path, &p, &res, false) == PM_REC_OK) {
		if (!p)
			abort();
		check_profile(p);
	} else {
		if (p || !res.msg[0] || strchr(res.msg, '\n'))
			abort(); /* an error is one line, and leaves no profile */
	}
	pm_prof_free(p);
	close(fd);
	return 0;
}
