/*
 * fuzz_proxy_http.c -- the proxy's HTTP/1.1 request and response head
 * parsers, and the authority / absolute-URI splitters and the method
 * override / %00 check they feed.
 */
#include <stddef.h>
#include <stdint.h>

#include "../gatewayd/proxy/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct http_head h;
	const char *a, *p;
	size_t al, pl, i;
	char host[256];
	uint16_t port;

	if (http_parse_request((const char *)data, len, &h) == HTTP_OK) {
		if (h.headlen > len || h.nfields > HTTP_MAX_FIELDS)
			__builtin_trap();
		if (http_absolute(h.target, h.targetlen, &a, &al, &p, &pl) == 0)
			(void)http_authority(a, al, host, sizeof(host), &port, 80);
		(void)http_sidestep(&h, h.target, h.targetlen);
		for (i = 0; i < h.nfields; i++)
			(void)http_authority(h.fields[i].value,
			    h.fields[i].valuelen, host, sizeof(host), &port, 443);
	}
	(void)http_parse_response((const char *)data, len, len & 1, &h);
	return 0;
}
