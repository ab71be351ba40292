/*
 * fuzz_metrics.c -- the metrics endpoint's reading of a scraper's request
 * head, and the parent's taking of label values from a child's event.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "metrics.h"

static struct metrics *m;

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char out[64];

	if (m == NULL)
		m = metrics_new();
	(void)metrics_request((const char *)data, len);
	metrics_label((const char *)data, len, "event", out, sizeof(out));
	if (strlen(out) >= sizeof(out))
		__builtin_trap();
	metrics_count(m, "fuzz", (const char *)data, len);
	if (metrics_nseries(m) > METRICS_MAX_SERIES)
		__builtin_trap();
	return 0;
}
