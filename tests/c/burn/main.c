/*
 * A plain C profiler fixture (no Go): main -> run -> work -> leaf_loop for
 * most of the time, and main -> run -> sort_some -> qsort (libc) -> cmp.
 * Built -O2 -fomit-frame-pointer -g by the test: only DWARF CFI unwinds it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t leaf_loop(uint64_t x, long n)
{
	for (long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

__attribute__((noinline)) static uint64_t work(long n)
{
	uint64_t acc = 0;

	for (int i = 0; i < 10; i++)
		acc += leaf_loop((uint64_t)i | 1, n / 10);
	return acc;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

__attribute__((noinline)) static void sort_some(long n)
{
	uint64_t *v = malloc((size_t)n * sizeof(*v));
	uint64_t x = 88172645463325252ULL;

	if (!v)
		return;
	for (long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v[i] = x;
	}
	qsort(v, (size_t)n, sizeof(*v), cmp);
	sink += v[n / 2];
	free(v);
}

__attribute__((noinline)) static void run(double scale)
{
	sink += work((long)(scale * 300000000.0));
	sort_some((long)(scale * 3000000.0));
}

int main(int argc, char **argv)
{
	run(argc > 1 ? atof(argv[1]) : 1.0);
	printf("%d\n", sink != 0);
	return 0;
}
