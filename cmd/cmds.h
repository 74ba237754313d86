#ifndef PM_CMDS_H
#define PM_CMDS_H

#include <stddef.h>
#include <sys/types.h>

struct pm_record_cfg;

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_agent(int argc, char **argv);

/*
 * What to record and how it samples (-e, -F, -c, --stack-size, --kernel,
 * --no-callchain, --all-frames, --strict, the kinds): into @cfg.  0, -1
 * with the error printed, 1 when @key is none of them.
 */
int cmd_record_kind_opt(int key, const char *arg, struct pm_record_cfg *cfg, int *freq_given,
			int *count_given);

/* "1,2,3" appended to *@v (*@n of them); -1 (said) on anything but positive ids. */
int cmd_parse_ids(const char *arg, const char *what, pid_t **v, size_t *n);

#endif
