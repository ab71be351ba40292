/*
 * fuzz_nflog.c -- libFuzzer harness for gatewayd's refusal-log parser:
 * any bytes as one netlink message (its payload is the start of a guest's
 * packet) must parse or be rejected, never crash; the JSON it yields for a
 * refusal is always a printable object.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "../gatewayd/nflog/nflog.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static struct moat_config cfg;	/* no sandboxes: lookups find none */
	struct nflog_event ev;
	char json[512], key[64], *buf;
	int n;

	/* Netlink parsers read headers in place: give them aligned memory. */
	if ((buf = malloc(len ? len : 1)) == NULL)
		return 0;
	memcpy(buf, data, len);
	if (nflog_parse(buf, len, &ev) == 0) {
		n = nflog_event_json(&ev, &cfg, json, sizeof(json));
		nflog_event_key(&ev, 3, &cfg.gw.network, key, sizeof(key));
		if (n < 2 || json[0] != '{' || json[n - 1] != '}')
			abort();
		for (int i = 0; i < n; i++)
			if (json[i] < 0x20 || json[i] > 0x7e)
				abort();
	}
	free(buf);
	return 0;
}
