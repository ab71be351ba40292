/*
 * fuzz_harepl.c -- libFuzzer harness for the replication line parser
 * (gatewayd/harepl/wire.c), which the replication process runs on lines
 * the other box of a pair sends.  It must accept or refuse, never crash;
 * what it accepts must pass the shape check the parent applies
 * (ipc_check, as an IPC_SET_ADD, IPC_HA_SPENT, IPC_HA_FLUSH or
 * IPC_REG_REQ; a ping carries none), and the line the sending end makes of
 * it must parse back to the same line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../gatewayd/harepl/harepl.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static union harepl_msg u, v;
	struct ipc_hdr h = { 0, 0, 0, 0 };
	char err[160], cerr[256], a[REG_LINE_MAX + 1], b[REG_LINE_MAX + 1];
	size_t mlen = 0, vlen = 0;
	int type = 0, vtype = 0, rc;

	if (len > REG_LINE_MAX + 2)
		return 0;
	memset(&u, 0xa5, sizeof(u));	/* what a previous line left */
	err[0] = '\0';
	rc = harepl_parse((const char *)data, len, &u, &type, &mlen, err,
	    sizeof(err));
	if (rc == HAREPL_PING)
		return 0;	/* answered by the receiving process */
	if (rc != 0) {
		if (rc != -1 || err[0] == '\0' || strchr(err, '\n') != NULL)
			abort();	/* the peer gets one line */
		return 0;
	}
	h.type = (uint16_t)type;
	h.len = (uint32_t)mlen;
	if (ipc_check(&h, &u, mlen, cerr, sizeof(cerr)) != 0)
		abort();		/* the parent would refuse it */
	if (harepl_format(type, &u, a, sizeof(a)) == -1)
		return 0;
	if (harepl_parse(a, strlen(a), &v, &vtype, &vlen, err,
	    sizeof(err)) != 0 || vlen != mlen || vtype != type ||
	    harepl_format(vtype, &v, b, sizeof(b)) == -1 || strcmp(a, b) != 0)
		abort();		/* the two ends disagree */
	return 0;
}
