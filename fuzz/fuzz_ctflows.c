/*
 * fuzz_ctflows.c -- libFuzzer harness for the parent's reader of the
 * kernel's conntrack events (gatewayd/parent/ctflows.c).  The kernel
 * writes them, but every tuple in them comes from a packet a guest
 * chose; the reader must take or skip each message, never crash or
 * read past the end, and the list stays consistent (every entry it
 * holds can be walked and taken away again).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../gatewayd/parent/ctflows.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
drop(const struct nlattr *tuple, uint8_t family, void *arg)
{
	(void)family;
	(void)arg;
	ctflows_gone(tuple);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	uint8_t *p;

	/* An exact-size copy, 4-byte aligned as a read buffer is. */
	if ((p = aligned_alloc(4, (len + 3) & ~(size_t)3)) == NULL)
		return 0;
	memcpy(p, data, len);
	ctflows_events(p, len);
	ctflows_each(drop, NULL);
	if (ctflows_count() != 0 || ctflows_count_live() != 0)
		abort();
	free(p);
	return 0;
}
