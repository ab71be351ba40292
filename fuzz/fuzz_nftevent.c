/*
 * fuzz_nftevent.c -- libFuzzer harness for the reading of nf_tables
 * notifications that gatewayd's watch of its tables does (nr_event.c):
 * any bytes as one netlink message must be read or refused, never crash,
 * and what is read names its table in a NUL-terminated string.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nftrules.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct nftr_event ev;
	char *buf;

	/* Netlink parsers read headers in place: give them aligned memory. */
	if ((buf = malloc(len ? len : 1)) == NULL)
		return 0;
	memcpy(buf, data, len);
	if (nftr_event_parse(buf, len, &ev) == 0) {
		if (ev.kind == NULL || strnlen(ev.table, sizeof(ev.table)) ==
		    sizeof(ev.table) || strnlen(ev.name, sizeof(ev.name)) ==
		    sizeof(ev.name))
			abort();
		(void)nftr_family_name(ev.family);
	}
	free(buf);
	return 0;
}
