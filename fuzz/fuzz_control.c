/*
 * fuzz_control.c -- libFuzzer harness for the control protocol's parser
 * (gatewayd/control/control.c), which runs in the control process on bytes any
 * member of group moat sends.  It must accept, ask for more or refuse,
 * never crash; and what it accepts must pass the shape check the parent
 * applies (ipc_check), or the parent would kill the control process for
 * a client's request.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../gatewayd/control/control.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static union {
		struct ipc_ctl_req m;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	struct ipc_hdr h = { IPC_CTL_REQ, 0, 0, 1 };
	char *buf, err[256], cerr[256];
	size_t mlen;
	int rc;

	if (len > CTL_MAX_LINE - 1)
		return 0;
	/* As the control process holds it: NUL after the bytes read. */
	if ((buf = malloc(len + 1)) == NULL)
		return 0;
	memcpy(buf, data, len);
	buf[len] = '\0';
	rc = ctl_parse(buf, len, len == CTL_MAX_LINE - 1, &u.m, sizeof(u.raw),
	    &mlen, err, sizeof(err));
	if (rc == 0) {
		h.len = (uint32_t)mlen;
		if (ipc_check(&h, &u, mlen, cerr, sizeof(cerr)) != 0)
			abort();	/* the parent would refuse it */
	} else if (rc == -1 && strncmp(err, "error: ", 7) != 0)
		abort();
	free(buf);
	return 0;
}
