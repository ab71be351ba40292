/*
 * fuzz_cc_dns.c -- libFuzzer harness for containment-check's DNS reply
 * parser, the one place the scanner reads bytes a hostile resolver chose.
 * Checks what the callers rely on: never more addresses than the array
 * holds, each of a real family.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../containment-check/cc.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct cc_dns_reply r;
	size_t i;

	if (cc_dns_parse(data, len, &r) != 0)
		return 0;
	if (r.naddr > CC_DNS_MAXADDR || r.naddr > r.nanswer)
		abort();
	for (i = 0; i < r.naddr; i++)
		if (r.addr[i].family != AF_INET && r.addr[i].family != AF_INET6)
			abort();
	(void)cc_dns_rcode_name(r.rcode);
	return 0;
}
