/*
 * fuzz_allowentry.c -- libFuzzer harness for an allow entry with ports of
 * its own (lib/allowentry.c): the "NAME:tcp/22,udp/443" of moat.conf and
 * the --ports of `gatewayd ctl allow`, which a member's control client
 * sends to the root parent.  The parsers must accept or refuse, never
 * crash or read past the text; an accepted entry is normalised (loading
 * it again gives the same text) and its ports are what its text says.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
ports_roundtrip(const char *s, size_t len)
{
	struct moat_port p[MOAT_NAME_PORTS_MAX], q[MOAT_NAME_PORTS_MAX];
	char why[256], text[MOAT_NAME_PORTS_MAX * 10 + 1];
	int i, n;

	if ((n = config_ports_parse(s, len, p, why, sizeof(why))) < 0)
		return;
	if (n == 0 || n > MOAT_NAME_PORTS_MAX)
		abort();
	config_ports_fmt(p, (size_t)n, text, sizeof(text));
	if (config_ports_parse(text, strlen(text), q, why, sizeof(why)) != n)
		abort();
	for (i = 0; i < n; i++)
		if (p[i].proto != q[i].proto || p[i].port != q[i].port ||
		    p[i].port == 0)
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char *text, *again, why[384];
	struct moat_port p[MOAT_NAME_PORTS_MAX];

	if ((text = malloc(len + 1)) == NULL)	/* exact size for ASan */
		return 0;
	memcpy(text, data, len);
	text[len] = '\0';
	ports_roundtrip((const char *)data, len);
	if (memchr(data, '\0', len) == NULL && len < 1024 &&
	    config_allow_entry_ports(text, why, sizeof(why))) {
		if ((again = strdup(text)) == NULL)
			abort();
		if (!config_allow_entry_ports(again, why, sizeof(why)) ||
		    strcmp(again, text) != 0)
			abort();
		if (strchr(text, ':') != NULL &&
		    config_allow_ports(text, p) == 0)
			abort();
		free(again);
	}
	free(text);
	return 0;
}
