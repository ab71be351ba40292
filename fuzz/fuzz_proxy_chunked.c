/*
 * fuzz_proxy_chunked.c -- the chunked decoder, fed the input in pieces
 * whose sizes come from the input's first byte; decoded output never
 * exceeds what was fed.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../gatewayd/proxy/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct chunked c = { 0 };
	size_t step, off = 1, ol, used, total = 0;
	enum chunk_ret r = CHUNK_MORE;
	uint8_t *out;

	if (len < 1)
		return 0;
	step = (size_t)data[0] % 17 + 1;
	if ((out = malloc(len)) == NULL)
		return 0;
	while (off < len && r == CHUNK_MORE) {
		size_t n = len - off < step ? len - off : step;

		r = chunked_feed(&c, data + off, n, out + total, &ol, &used);
		if (used > n || ol > used)
			__builtin_trap();
		total += ol;
		off += used;
		if (used == 0 && r == CHUNK_MORE)
			__builtin_trap();	/* no progress */
	}
	free(out);
	return 0;
}
