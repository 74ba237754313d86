/*
 * bench-time OUT CMD [ARGS...]: scripts/bench.sh's inner timer, built
 * static by bench.sh so that the recorder under test sees one small binary
 * instead of an interpreter.  Runs CMD, then writes one line to OUT:
 *   elapsed_s  cmd_cpu_s  cmd_maxrss_kb  self_cpu_s
 * (the format of bench-time.py).  Exits with CMD's status.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double tv(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	struct timespec a, b;
	struct rusage ru, me;
	int status;
	pid_t pid;
	FILE *f;

	if (argc < 3)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pid = fork();
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	if (pid < 0 || wait4(pid, &status, 0, &ru) < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	getrusage(RUSAGE_SELF, &me);
	f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f, "%.6f %.6f %ld %.6f\n",
		(double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9,
		tv(ru.ru_utime) + tv(ru.ru_stime), ru.ru_maxrss, tv(me.ru_utime) + tv(me.ru_stime));
	fclose(f);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
