/*
 * fuzz_cc_spoof.c -- libFuzzer harness for containment-check's judgement
 * of the frames its anti-spoofing probes receive (spoof.c): whatever the
 * gateway or anyone on the link sends to a guest's packet socket, IPv4
 * and IPv6.  Checks what the callers rely on: the evidence is a
 * terminated string and the verdict one of the three.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../containment-check/cc.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check(enum spoof_rx rx, const char *ev, size_t len)
{
	if (rx != RX_NONE && rx != RX_ARP_REQUEST && rx != RX_REPLY)
		abort();
	if (memchr(ev, '\0', len) == NULL)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct cc_spoof s;
	struct sockaddr_in d4 = { .sin_family = AF_INET,
	    .sin_port = htons(53) };
	struct sockaddr_in6 d6 = { .sin6_family = AF_INET6,
	    .sin6_port = htons(80) };
	struct spoof_peer peer;
	struct moat_addr self;
	char ev[120];
	static const enum cc_spoof_kind kinds[] = { SP_IP, SP_MAC, SP_ARP };
	size_t i;

	memset(&s, 0, sizeof(s));
	inet_pton(AF_INET, "10.77.0.254", &s.src_ip);
	inet_pton(AF_INET, "10.77.0.1", &d4.sin_addr);
	inet_pton(AF_INET6, "2001:db8:cafe::80", &d6.sin6_addr);
	s.sport = 4242;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		s.kind = kinds[i];
		s.proto = s.kind == SP_ARP ? 0 : IPPROTO_UDP;
		ev[0] = '\0';
		check(spoof_classify(&s, &d4, data, len, ev, sizeof(ev),
		    &peer), ev, sizeof(ev));
	}
	s.kind = SP_IP6;
	s.proto = IPPROTO_TCP;
	if (addr_parse("fd77:0:0:1::a", &self) == 0)
		spoof_pick6(&self, 0x1234, &s.src6);
	ev[0] = '\0';
	check(spoof_classify6(&s, &d6, data, len, ev, sizeof(ev)), ev,
	    sizeof(ev));
	return 0;
}
