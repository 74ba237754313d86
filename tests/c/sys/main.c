/*
 * A syscall-heavy C fixture: writes and fsyncs a file and reads
 * /dev/urandom in a loop, so most of its time is in the kernel.
 * Usage: sys DIR [SECONDS]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	char path[4096], buf[4096];
	double end = now() + (argc > 2 ? atof(argv[2]) : 2.0);
	int fd, rnd;

	if (argc < 2)
		return 2;
	snprintf(path, sizeof(path), "%s/sys-fixture.dat", argv[1]);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	rnd = open("/dev/urandom", O_RDONLY);
	if (fd < 0 || rnd < 0)
		return 1;
	while (now() < end) {
		if (read(rnd, buf, sizeof(buf)) < 0 || write(fd, buf, 4096) < 0)
			return 1;
		fsync(fd);
	}
	close(fd);
	close(rnd);
	unlink(path);
	return 0;
}
