/* pmuprof: command table, global --help and --version. */
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "base/util.h"

#ifndef PMUPROF_VERSION
#define PMUPROF_VERSION "0.1"
#endif

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "record", cmd_record, "run a command and sample it into a pprof profile" },
	{ "report", cmd_report, "print a profile: hottest functions or folded stacks" },
	{ "list", cmd_list, "list the events that open on this machine" },
	{ "agent", cmd_agent, "profile the host's Go processes, always on, pushed to backends" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: pmuprof [--version] [--help] COMMAND [ARGS]\n\n"
		   "A perf-style profiler for Go programs.\n\ncommands:\n");
	for (i = 0; i < PM_ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "  %-8s %s\n", "help", "show the help of a command");
	fprintf(f, "\nSee 'pmuprof COMMAND --help' and pmuprof(1).\n");
}

int main(int argc, char **argv)
{
	const char *cmd;
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("pmuprof %s\n", PMUPROF_VERSION);
		return 0;
	}
	if (strcmp(cmd, "help") == 0) {
		if (argc < 3) {
			usage(stdout);
			return 0;
		}
		for (i = 0; i < PM_ARRAY_SIZE(commands); i++)
			if (strcmp(argv[2], commands[i].name) == 0) {
				char *av[] = { argv[2], (char *)"--help", NULL };
				return commands[i].fn(2, av);
			}
		pm_error("unknown command '%s'; see 'pmuprof --help'", argv[2]);
		return 2;
	}
	for (i = 0; i < PM_ARRAY_SIZE(commands); i++)
		if (strcmp(cmd, commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	pm_error("unknown command '%s'; see 'pmuprof --help'", cmd);
	return 2;
}
