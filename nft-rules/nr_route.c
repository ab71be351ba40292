/*
 * nr_route.c -- the IPv6 prefixes this host routes other than by its
 * default route, for the policy's set lan6.  A guest may reach over IPv6
 * only what the host would send out by its default route towards the
 * internet; a more specific route (another VLAN of the site behind the
 * LAN router, a subnet reached through the uplink's router other than
 * by default) names a network the host knows as its own site's, which
 * over IPv4 would be a private range.  Read from the kernel's main
 * table with one rtnetlink dump.
 */
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "nftrules.h"
#include "ranges.h"

#define NFTR_ROUTES6_MAX	4096

struct routes {
	const char	*bridge;
	const struct moat_rangeset *private;
	int		 seen;
	struct moat_prefix **v;
	size_t		*n;
};

static int
route_attr(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;

	if (mnl_attr_type_valid(a, RTA_MAX) < 0)
		return MNL_CB_OK;
	tb[mnl_attr_get_type(a)] = a;
	return MNL_CB_OK;
}

/* Wholly in private: its first and last addresses are (the blocks a
 * route names are never split by a public gap in practice). */
static bool
prefix_private(const struct moat_rangeset *private, const struct moat_prefix *p)
{
	struct moat_addr last = p->addr;
	int bit;

	for (bit = p->plen; bit < 128; bit++)
		last.a[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
	return rangeset_contains(private, &p->addr) &&
	    rangeset_contains(private, &last);
}

static int
route_cb(const struct nlmsghdr *nlh, void *data)
{
	struct routes *r = data;
	const struct rtmsg *rt = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[RTA_MAX + 1] = { NULL };
	struct moat_prefix p = { .addr = { .family = AF_INET6 } };
	char ifn[IF_NAMESIZE];
	uint32_t table;

	/* Unicast, and the unreachable, blackhole and prohibit routes a
	 * prefix-delegation client puts on the rest of a delegated prefix:
	 * the site's too. */
	if (nlh->nlmsg_type != RTM_NEWROUTE || rt->rtm_family != AF_INET6 ||
	    (rt->rtm_type != RTN_UNICAST && rt->rtm_type != RTN_UNREACHABLE &&
	    rt->rtm_type != RTN_BLACKHOLE && rt->rtm_type != RTN_PROHIBIT) ||
	    rt->rtm_dst_len == 0 || (rt->rtm_flags & RTM_F_CLONED))
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(*rt), route_attr, tb);
	table = tb[RTA_TABLE] ? mnl_attr_get_u32(tb[RTA_TABLE]) : rt->rtm_table;
	if (table != RT_TABLE_MAIN || tb[RTA_DST] == NULL ||
	    mnl_attr_get_payload_len(tb[RTA_DST]) != 16)
		return MNL_CB_OK;
	/* The guests' own network is the bridge's. */
	if (tb[RTA_OIF] && if_indextoname(mnl_attr_get_u32(tb[RTA_OIF]),
	    ifn) != NULL && strcmp(ifn, r->bridge) == 0)
		return MNL_CB_OK;
	memcpy(p.addr.a, mnl_attr_get_payload(tb[RTA_DST]), 16);
	p.plen = rt->rtm_dst_len;
	/* Link-local and multicast are private6's already. */
	if ((p.addr.a[0] == 0xfe && (p.addr.a[1] & 0xc0) == 0x80) ||
	    p.addr.a[0] == 0xff)
		return MNL_CB_OK;
	if (r->private != NULL && prefix_private(r->private, &p))
		return MNL_CB_OK;
	/* A host with a routing daemon's full table is no homelab host:
	 * past this many, lan6 would cost more than it keeps out. */
	if (++r->seen > NFTR_ROUTES6_MAX) {
		if (r->seen == NFTR_ROUTES6_MAX + 1)
			log_warnx("more than %d IPv6 routes: guests are kept "
			    "only from the first %d; list the site's prefixes "
			    "in gateway.ipv6.site_prefixes",
			    NFTR_ROUTES6_MAX, NFTR_ROUTES6_MAX);
		return MNL_CB_OK;
	}
	*r->v = xreallocarray(*r->v, *r->n + 1, sizeof(**r->v));
	(*r->v)[(*r->n)++] = p;
	return MNL_CB_OK;
}

int
nftr_routes6(const char *bridge, const struct moat_rangeset *private,
    struct moat_prefix **v, size_t *n)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct routes r = { bridge, private, 0, v, n };
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	struct rtmsg *rt;
	unsigned seq = (unsigned)time(NULL), port;
	ssize_t len;
	int ret = -1;

	if ((nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC)) == NULL)
		return -1;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) == -1)
		goto out;
	port = mnl_socket_get_portid(nl);
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = seq;
	rt = mnl_nlmsg_put_extra_header(nlh, sizeof(*rt));
	rt->rtm_family = AF_INET6;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) == -1)
		goto out;
	while ((len = mnl_socket_recvfrom(nl, buf, sizeof(buf))) > 0) {
		int cb = mnl_cb_run(buf, (size_t)len, seq, port, route_cb, &r);

		if (cb == MNL_CB_STOP) {
			ret = 0;
			break;
		}
		if (cb == MNL_CB_ERROR)
			break;
	}
out:
	mnl_socket_close(nl);
	return ret;
}
