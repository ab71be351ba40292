/*
 * fuzz_kwnet.c -- libFuzzer harness for the kernel watch's reading of
 * address and route dumps (gatewayd/parent/kwatch_net.c): any bytes as a
 * run of netlink messages are read or passed over, never crash, and what
 * is reported stays within its bounds, NUL-terminated.
 */
#include <sys/socket.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libmnl/libmnl.h>

#include "config.h"
#include "../gatewayd/parent/kwatch_net.h"
#include "ranges.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct moat_config cfg;

static void
setup(void)
{
	struct moat_prefix pub, net;

	if (cfg.private != NULL)
		return;
	snprintf(cfg.gw.bridge, sizeof(cfg.gw.bridge), "moat0");
	snprintf(cfg.gw.uplink, sizeof(cfg.gw.uplink), "up0");
	prefix_parse("10.77.0.0/24", &cfg.gw.network);
	cfg.gw.address = cfg.gw.network.addr;
	cfg.gw.address.a[3] = 1;
	cfg.gw.ipv6 = true;
	prefix_parse("fd77::/64", &cfg.gw.ipv6_network);
	cfg.gw.ipv6_address = cfg.gw.ipv6_network.addr;
	cfg.gw.ipv6_address.a[15] = 1;
	prefix_parse("203.0.113.0/24", &pub);
	net = cfg.gw.network;
	if ((cfg.private = rangeset_new_deny(&pub, 1, &net, 1)) == NULL)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	const struct nlmsghdr *nlh;
	struct kwn nr;
	char *buf;
	size_t i, off = 0;

	setup();
	/* Netlink parsers read headers in place: give them aligned memory,
	 * with the padding a receive buffer has past a message's unaligned
	 * end (libmnl walks attributes to NLMSG_ALIGN(nlmsg_len)). */
	if ((buf = calloc(1, NLMSG_ALIGN(len) + NLMSG_ALIGNTO)) == NULL)
		return 0;
	memcpy(buf, data, len);
	memset(&nr, 0, sizeof(nr));
	nr.cfg = &cfg;
	nr.bridge = 1;		/* lo: always there */
	nr.uplink = 7;
	/* Whole messages only, as a dump delivers them (libmnl's own walk
	 * trusts a length past INT_MAX). */
	while (len - off >= sizeof(*nlh)) {
		nlh = (const struct nlmsghdr *)(buf + off);
		if (nlh->nlmsg_len < sizeof(*nlh) || nlh->nlmsg_len > len - off)
			break;
		(void)kwn_addr(nlh, &nr);
		(void)kwn_route(nlh, &nr);
		off += NLMSG_ALIGN(nlh->nlmsg_len);
		if (off > len)
			break;
	}
	if (nr.n > KWN_MAX)
		abort();
	for (i = 0; i < nr.n; i++)
		if (strnlen(nr.obj[i], KWN_OBJLEN) == KWN_OBJLEN)
			abort();
	free(buf);
	return 0;
}
