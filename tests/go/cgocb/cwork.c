#include <stdint.h>
#include "_cgo_export.h"

/* C between two Go frames: calls back into Go in slices */
__attribute__((noinline)) uint64_t cwork(long n)
{
	uint64_t acc = 0;

	for (int i = 0; i < 20; i++)
		acc += goBurn(n / 20);
	return acc;
}
