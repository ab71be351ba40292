/*
 * fuzz_canary.c -- libFuzzer harness for the reader of the canary's
 * scan report (gatewayd/canary_report.c): the scanner runs where a guest
 * would, so its output is read as untrusted.  It must never crash or read
 * past the end, and what it keeps must be a short printable string.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../gatewayd/parent/canary_report.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct canary_report r;
	char *p;
	size_t i, n;

	if ((p = malloc(len ? len : 1)) == NULL)
		return 0;
	memcpy(p, data, len);
	canary_report_parse(p, len, &r);
	n = strnlen(r.first, sizeof(r.first));
	if (n == sizeof(r.first))
		abort();
	for (i = 0; i < n; i++)
		if (r.first[i] < 0x20 || r.first[i] > 0x7e)
			abort();
	free(p);
	return 0;
}
