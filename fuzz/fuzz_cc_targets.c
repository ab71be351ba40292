/*
 * fuzz_cc_targets.c -- libFuzzer harness for containment-check's targets
 * file, one line at a time as main.c reads it: whatever a line holds, the
 * lists stay within their bounds, a refused line (bad or full) adds
 * nothing (a lan line that no longer fits adds none of its samples),
 * every target parsed is an IPv4 or IPv6 address, and every routed
 * network an IPv6 prefix of /8 to /120 without host bits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../containment-check/cc.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check_list(const struct cc_target *t, size_t n)
{
	size_t i;

	if (n > CC_MAXLIST)
		abort();
	for (i = 0; i < n; i++)
		if (t[i].addr.family != AF_INET &&
		    t[i].addr.family != AF_INET6)
			abort();
}

/* The entries in use differ (the slot past the end is scratch). */
static int
changed(const struct cc_target *a, size_t na, const struct cc_target *b,
    size_t nb)
{
	return na != nb || memcmp(a, b, na * sizeof(*a)) != 0;
}

static void
check_routed(const struct cc_opts *o)
{
	size_t i;
	int bit;

	if (o->nrouted > CC_MAXLIST)
		abort();
	for (i = 0; i < o->nrouted; i++) {
		const struct moat_prefix *p = &o->routed[i];

		if (p->addr.family != AF_INET6 || p->plen < 8 || p->plen > 120)
			abort();
		for (bit = p->plen; bit < 128; bit++)
			if (p->addr.a[bit / 8] & (0x80 >> (bit % 8)))
				abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static struct cc_opts o, before;
	char line[512];
	const uint8_t *p = data, *end = data + len, *nl;
	size_t n;
	int r;

	memset(&o, 0, sizeof(o));
	/* Lines as fgets would give them: at most sizeof(line) - 1 bytes. */
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		n = (size_t)((nl != NULL ? nl + 1 : end) - p);
		if (n > sizeof(line) - 1)
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = '\0';
		p += n;
		before = o;
		r = args_targets_line(line, &o);
		if (r != 0 && (changed(before.targets, before.ntargets,
		    o.targets, o.ntargets) || changed(before.gwaddrs,
		    before.ngwaddrs, o.gwaddrs, o.ngwaddrs) ||
		    changed(before.closed, before.nclosed, o.closed,
		    o.nclosed) || before.nrouted != o.nrouted))
			abort();	/* a refused line changed the lists */
		if (r < -2 || r > 0)
			abort();
		check_list(o.targets, o.ntargets);
		check_list(o.gwaddrs, o.ngwaddrs);
		check_list(o.closed, o.nclosed);
		check_routed(&o);
	}
	return 0;
}
