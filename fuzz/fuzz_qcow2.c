/*
 * fuzz_qcow2.c -- libFuzzer harness for the qcow2 header check
 * (provision/qcow2.c).  A team member chooses every byte of the image; the
 * check must accept or refuse, never crash or read past the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../provision/qcow2.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	unsigned long long vsize;
	unsigned char *p = malloc(len ? len : 1);
	char why[256];

	if (p == NULL)
		return 0;
	memcpy(p, data, len);	/* exact size: ASan sees any overread */
	(void)qcow2_header_check(p, len, &vsize, why, sizeof(why));
	free(p);
	return 0;
}
