/*
 * fuzz_ipc.c -- libFuzzer harness for the shape check every internal
 * message passes (lib/ipc.c): the first bytes are the header, the rest
 * the payload.  A less privileged process (dnsd, the proxy, the signer's
 * client) chooses all of them; the check must accept or refuse, never
 * crash or read past the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ipc.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct ipc_hdr h;
	char err[256];
	uint8_t *p;

	if (len < sizeof(h))
		return 0;
	memcpy(&h, data, sizeof(h));
	len -= sizeof(h);
	/* An exact-size copy, aligned as the receive buffer is, so ASan
	 * sees any read past the payload. */
	if ((p = aligned_alloc(8, len ? (len + 7) & ~(size_t)7 : 8)) == NULL)
		return 0;
	memcpy(p, data + sizeof(h), len);
	(void)ipc_check(&h, p, len, err, sizeof(err));
	free(p);
	return 0;
}
