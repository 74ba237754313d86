/*
 * Links libctor.so, whose constructor runs before main (see lib.c), then
 * calls its lib_step() argv[1] * 1e8 times: a loop whose samples land in
 * the PLT stub (its CFA is a DWARF expression) as well.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

uint64_t ctor_value(void);
uint64_t lib_step(uint64_t x);

int main(int argc, char **argv)
{
	long n = (long)((argc > 1 ? atof(argv[1]) : 0.0) * 100000000.0);
	uint64_t x = ctor_value();

	for (long i = 0; i < n; i++)
		x = lib_step(x);
	printf("%d\n", x != 1);
	return 0;
}
