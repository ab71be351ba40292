/*
 * fuzz_proxy_sni.c -- the ClientHello / SNI parser; a found name is
 * always a valid lower-case host name.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../gatewayd/proxy/sni.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char name[256];
	size_t i;

	if (sni_parse(data, len, name, sizeof(name)) == SNI_FOUND) {
		for (i = 0; name[i]; i++)
			if (name[i] >= 'A' && name[i] <= 'Z')
				__builtin_trap();
		if (i == 0 || i > 253)
			__builtin_trap();
	}
	return 0;
}
