/*
 * A shared library whose constructor burns CPU ($CTOR_SCALE): ld.so runs
 * it from _dl_init, called by its entry stub (_start, _dl_start_user: code
 * without CFI), before the program's main.  Its stacks end at ld.so's
 * entry, which is their root.  lib_step() is the program's call through
 * the PLT (main.c).
 */
#include <stdint.h>
#include <stdlib.h>

volatile uint64_t ctor_sink;

__attribute__((noinline)) static uint64_t ctor_loop(uint64_t x, long n)
{
	for (long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

__attribute__((constructor)) static void ctor_burn(void)
{
	const char *s = getenv("CTOR_SCALE");

	ctor_sink += ctor_loop(1, (long)((s ? atof(s) : 0.0) * 300000000.0));
}

uint64_t ctor_value(void)
{
	return ctor_sink;
}

uint64_t lib_step(uint64_t x)
{
	return x * 3 + 1;
}
