/*
 * fuzz_metrics.c -- the metrics endpoint's reading of a scraper's request
 * head and its choice of a slot, and the parent's taking of label values
 * from a child's event.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sys/socket.h>

#include "../gatewayd/metrics/metrics.h"

static struct metrics *m;

/* Slots, an allow list and a source made of the input's bytes: the pick
 * is a slot or -1, never a slot a non-scraper may not take, and a full
 * source is refused. */
static void
admit(const uint8_t *d, size_t len)
{
	struct mslot s[METRICS_CLIENTS];
	struct moat_prefix allow[2];
	struct moat_addr src;
	enum madmit why;
	size_t i, mine = 0;
	int k;

	if (len < 4 + 2 * 5 + METRICS_CLIENTS)
		return;
	memset(&src, 0, sizeof(src));
	src.family = AF_INET;
	memcpy(src.a, d, 4);
	d += 4;
	for (i = 0; i < 2; i++, d += 5) {
		memset(&allow[i], 0, sizeof(allow[i]));
		allow[i].addr.family = AF_INET;
		memcpy(allow[i].addr.a, d, 4);
		allow[i].plen = d[4] % 33;
	}
	for (i = 0; i < METRICS_CLIENTS; i++, d++) {
		s[i] = (struct mslot){ d[0] & 1, d[0] & 2, src, d[0] >> 2 };
		s[i].src.a[3] ^= (uint8_t)(d[0] & 4);
		mine += s[i].used && memcmp(s[i].src.a, src.a, 4) == 0;
	}
	k = metrics_admit(s, METRICS_CLIENTS, allow, 2, &src, &why);
	if (k < -1 || k >= METRICS_CLIENTS || (k == -1) != (why != MADMIT_OK) ||
	    (mine >= METRICS_PER_SOURCE && k != -1) ||
	    (k != -1 && s[k].used && !s[k].reading))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char out[64];

	if (m == NULL)
		m = metrics_new();
	(void)metrics_request((const char *)data, len);
	admit(data, len);
	metrics_label((const char *)data, len, "event", out, sizeof(out));
	if (strlen(out) >= sizeof(out))
		__builtin_trap();
	metrics_count(m, "fuzz", (const char *)data, len);
	if (metrics_nseries(m) > METRICS_MAX_SERIES)
		__builtin_trap();
	return 0;
}
