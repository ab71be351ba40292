/*
 * fuzz_cc_http.c -- libFuzzer harness for containment-check's HTTP reply
 * parser and the verdict built on it: the bytes a far end (or the
 * gateway's proxy) sent to a probe on a port the proxy may answer.
 * Checks what the callers rely on: the body lies inside the buffer, the
 * reason is a terminated printable string, the evidence is terminated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../containment-check/cc.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct cc_tls_seen t = { .alert = -1, .done = true,
	    .gateway_cert = true };
	struct cc_http_reply r;
	char ev[120];
	size_t i;

	if (cc_http_reply_parse(data, len, &r) == 0) {
		if (r.body > len || r.bodylen > len - r.body)
			abort();
		if (strlen(r.reason) >= sizeof(r.reason))
			abort();
		for (i = 0; r.reason[i] != '\0'; i++)
			if (r.reason[i] < 0x20 || r.reason[i] >= 0x7f)
				abort();
	}
	(void)cc_intercept_verdict(NULL, data, len, 0x1234, false, ev,
	    sizeof(ev));
	if (memchr(ev, '\0', sizeof(ev)) == NULL)
		abort();
	(void)cc_intercept_verdict(&t, data, len, 0x1234, true, ev,
	    sizeof(ev));
	return 0;
}
