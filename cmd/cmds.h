#ifndef PM_CMDS_H
#define PM_CMDS_H

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_list(int argc, char **argv);

#endif
