/*
 * fuzz_register.c -- libFuzzer harness for the registration process's
 * request parser (gatewayd/register/register.c), which runs on lines any holder of
 * a pinned host key sends.  It must accept, ignore, end or refuse, never
 * crash; what it accepts must pass the shape check the parent applies
 * (ipc_check), or the parent would kill the registration process for a
 * host's line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../gatewayd/register/register.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static union {
		struct ipc_reg_req m;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	struct ipc_hdr h = { IPC_REG_REQ, 0, 0, 0 };
	char err[160], cerr[256];
	size_t mlen = 0;
	int rc;

	if (len > REG_LINE_MAX + 2)
		return 0;
	memset(&u, 0xa5, sizeof(u));	/* what a previous line left */
	rc = reg_parse((const char *)data, len, &u.m, sizeof(u.raw), &mlen, err,
	    sizeof(err));
	if (rc == 0) {
		memset(u.m.key, 0x42, sizeof(u.m.key));
		h.len = (uint32_t)mlen;
		if (ipc_check(&h, &u, mlen, cerr, sizeof(cerr)) != 0)
			abort();	/* the parent would refuse it */
	} else if (rc == -1 && (err[0] == '\0' || strchr(err, '\n') != NULL))
		abort();		/* the host gets one line */
	else if (rc != -1 && rc != REG_PARSE_QUIT && rc != REG_PARSE_EMPTY)
		abort();
	return 0;
}
