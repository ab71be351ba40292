/*
 * fuzz_ha_arp.c -- libFuzzer harness for the ha-arp process's parser
 * (gatewayd/ha_arp/ha_arp.c): anyone on the uplink segment chooses every byte
 * of the ARP it reads.  It must report or ignore, never crash or read
 * past the end, and what it reports must pass the parent's shape check.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../gatewayd/ha_arp/ha_arp.h"
#include "ipc.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const struct ha_arp_watch w = { 2, { 0x52, 0x54, 0, 0, 0, 1 },
		{ 203, 0, 113, 100 } };
	struct ipc_hdr h = { IPC_HA_ARP, 0, sizeof(struct ipc_ha_arp), 0 };
	struct ipc_ha_arp m;
	char err[128];
	uint8_t *p;

	/* An exact-size copy, so ASan sees any read past the frame. */
	if ((p = malloc(len ? len : 1)) == NULL)
		return 0;
	memcpy(p, data, len);
	if (ha_arp_parse(p, len, &w, &m) == 0 &&
	    ipc_check(&h, &m, sizeof(m), err, sizeof(err)) != 0)
		abort();
	free(p);
	return 0;
}
