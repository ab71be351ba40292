/*
 * parent/kwatch_net.c -- the kernel watch's reading of the moat bridge's
 * addresses and the main table's routes (parent/kwatch.c): one message
 * of an rtnetlink dump at a time, judged against the configuration, with
 * no state of its own and no system call but if_indextoname.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <net/if.h>

#include <linux/rtnetlink.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <libmnl/libmnl.h>

#include "config.h"
#include "kwatch_net.h"
#include "ranges.h"

static void
add(struct kwn *nr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
add(struct kwn *nr, const char *fmt, ...)
{
	va_list ap;

	if (nr->n == KWN_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(nr->obj[nr->n++], KWN_OBJLEN, fmt, ap);
	va_end(ap);
}


/* Wholly in the ranges guests are refused: its first and last address
 * are (the blocks a route names are never split by a public gap in
 * practice). */
static bool
refused(const struct moat_config *cfg, int family, const uint8_t *a, int plen)
{
	struct moat_addr first = { .family = family }, last;
	int bits = family == AF_INET6 ? 128 : 32, bit;

	if (cfg->private == NULL)
		return false;
	memcpy(first.a, a, family == AF_INET6 ? 16 : 4);
	for (bit = plen; bit < bits; bit++)
		first.a[bit / 8] &= (uint8_t)~(0x80 >> (bit % 8));
	last = first;
	for (bit = plen; bit < bits; bit++)
		last.a[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
	return rangeset_contains(cfg->private, &first) &&
	    rangeset_contains(cfg->private, &last);
}

static bool
link_local6(const uint8_t *a)
{
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

static void
ifname(int index, char *out)
{
	if (index == 0 || if_indextoname((unsigned)index, out) == NULL)
		snprintf(out, IFNAMSIZ, "#%d", index);
}

static int
nl_attr(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;

	if (mnl_attr_type_valid(a, RTA_MAX) >= 0)
		tb[mnl_attr_get_type(a)] = a;
	return MNL_CB_OK;
}

/*
 * Every address on the moat bridge is the gateway's own: its IPv4
 * address, its IPv6 one with gateway.ipv6, and the link-local IPv6
 * addresses the kernel gives every link.  Another is someone else's
 * (guests would reach the host, or a network, by it).  Addresses on other
 * interfaces are the host's own life: leases renewed, IPv6 temporary
 * addresses, an interface coming up.
 */
int
kwn_addr(const struct nlmsghdr *nlh, void *data)
{
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[RTA_MAX + 1] = { NULL }, *at;
	struct kwn *nr = data;
	const struct moat_gateway *g = &nr->cfg->gw;
	char text[INET6_ADDRSTRLEN];
	const uint8_t *a;
	size_t len;

	if (nlh->nlmsg_type != RTM_NEWADDR ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(*ifa) || nr->bridge == 0 ||
	    (int)ifa->ifa_index != nr->bridge ||
	    (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6))
		return MNL_CB_OK;
	len = ifa->ifa_family == AF_INET6 ? 16 : 4;
	mnl_attr_parse(nlh, sizeof(*ifa), nl_attr, tb);
	/* IPv4: IFA_LOCAL is the address (IFA_ADDRESS a peer's, if any). */
	at = ifa->ifa_family == AF_INET && tb[IFA_LOCAL] ? tb[IFA_LOCAL] :
	    tb[IFA_ADDRESS];
	if (at == NULL || mnl_attr_get_payload_len(at) != len)
		return MNL_CB_OK;
	a = mnl_attr_get_payload(at);
	if (ifa->ifa_family == AF_INET6 && link_local6(a))
		return MNL_CB_OK;
	if (ifa->ifa_family == AF_INET && ifa->ifa_prefixlen ==
	    g->network.plen && memcmp(a, g->address.a, 4) == 0) {
		nr->gw4 = true;
		return MNL_CB_OK;
	}
	if (ifa->ifa_family == AF_INET6 && g->ipv6 &&
	    ifa->ifa_prefixlen == 64 && memcmp(a, g->ipv6_address.a, 16) == 0) {
		nr->gw6 = true;
		return MNL_CB_OK;
	}
	inet_ntop(ifa->ifa_family, a, text, sizeof(text));
	add(nr, "address %s/%d on bridge %s: not the gateway's", text,
	    ifa->ifa_prefixlen, g->bridge);
	return MNL_CB_OK;
}

/*
 * A route in the main table leads guests' traffic out of the uplink, or
 * to addresses they may not send to anyway: the ranges the policy refuses
 * (every private range, the sandbox network) are no one's concern here.
 * A unicast route to addresses guests may reach by another interface is
 * drift: their packets would leave by it, past the uplink's translation
 * (a route "for a new VLAN" with public addresses, a default route by
 * another interface).  With gateway.ipv6, every IPv6 route other than
 * the default and the bridge's is the policy's (set lan6, followed by the
 * host-networks watch): guests are refused what it names.  Without it
 * guests have no IPv6 and IPv6 routes do not concern them.
 */
static void
route_judge(struct kwn *nr, const struct rtmsg *rt,
    const uint8_t *dst, int oif, const char *gwtext)
{
	const struct moat_gateway *g = &nr->cfg->gw;
	char text[INET6_ADDRSTRLEN] = "default", dev[IFNAMSIZ];
	int fam = rt->rtm_family;

	if (oif == nr->uplink && nr->uplink != 0) {
		if (rt->rtm_dst_len == 0)
			nr->dflt[fam == AF_INET6] = true;
		return;
	}
	if (fam == AF_INET6 && (!g->ipv6 || link_local6(dst) ||
	    (rt->rtm_dst_len > 0 && oif != nr->bridge)))
		return;
	if (rt->rtm_dst_len > 0 && refused(nr->cfg, fam, dst, rt->rtm_dst_len))
		return;
	/* The guests' own IPv6 network is the bridge's. */
	if (fam == AF_INET6 && oif == nr->bridge && rt->rtm_dst_len == 64 &&
	    memcmp(dst, g->ipv6_network.addr.a, 8) == 0)
		return;
	ifname(oif, dev);
	if (rt->rtm_dst_len > 0) {
		inet_ntop(fam, dst, text, sizeof(text));
		add(nr, "route %s/%d%s%s dev %s: guests' traffic would not "
		    "leave by %s", text, rt->rtm_dst_len, gwtext[0] ? " via " :
		    "", gwtext, dev, g->uplink);
	} else
		add(nr, "default route (%s)%s%s dev %s: not by %s",
		    fam == AF_INET6 ? "IPv6" : "IPv4", gwtext[0] ? " via " : "",
		    gwtext, dev, g->uplink);
}

int
kwn_route(const struct nlmsghdr *nlh, void *data)
{
	const struct rtmsg *rt = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[RTA_MAX + 1] = { NULL };
	struct kwn *nr = data;
	uint8_t dst[16] = { 0 };
	char gwtext[INET6_ADDRSTRLEN] = "";
	size_t len;
	uint32_t table;

	if (nlh->nlmsg_type != RTM_NEWROUTE ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(*rt) ||
	    (rt->rtm_family != AF_INET &&
	    rt->rtm_family != AF_INET6) || rt->rtm_type != RTN_UNICAST ||
	    (rt->rtm_flags & RTM_F_CLONED))
		return MNL_CB_OK;
	len = rt->rtm_family == AF_INET6 ? 16 : 4;
	mnl_attr_parse(nlh, sizeof(*rt), nl_attr, tb);
	if ((tb[RTA_TABLE] && mnl_attr_validate(tb[RTA_TABLE], MNL_TYPE_U32)) ||
	    (tb[RTA_OIF] && mnl_attr_validate(tb[RTA_OIF], MNL_TYPE_U32)))
		return MNL_CB_OK;
	table = tb[RTA_TABLE] ? mnl_attr_get_u32(tb[RTA_TABLE]) : rt->rtm_table;
	if (table != RT_TABLE_MAIN)
		return MNL_CB_OK;
	if (tb[RTA_DST] != NULL && mnl_attr_get_payload_len(tb[RTA_DST]) != len)
		return MNL_CB_OK;
	if (rt->rtm_dst_len > len * 8 || (rt->rtm_dst_len > 0 &&
	    tb[RTA_DST] == NULL))
		return MNL_CB_OK;
	if (tb[RTA_DST] != NULL)
		memcpy(dst, mnl_attr_get_payload(tb[RTA_DST]), len);
	if (tb[RTA_GATEWAY] != NULL && mnl_attr_get_payload_len(
	    tb[RTA_GATEWAY]) == len)
		inet_ntop(rt->rtm_family, mnl_attr_get_payload(tb[RTA_GATEWAY]),
		    gwtext, sizeof(gwtext));
	if (tb[RTA_MULTIPATH] != NULL) {
		const struct rtnexthop *nh = mnl_attr_get_payload(
		    tb[RTA_MULTIPATH]);
		int left = (int)mnl_attr_get_payload_len(tb[RTA_MULTIPATH]);

		/* Every path counts: one of them may be another link. */
		while (left >= (int)sizeof(*nh) && nh->rtnh_len >= sizeof(*nh) &&
		    nh->rtnh_len <= left) {
			route_judge(nr, rt, dst, nh->rtnh_ifindex, "");
			left -= RTNH_ALIGN(nh->rtnh_len);
			nh = RTNH_NEXT(nh);
		}
		return MNL_CB_OK;
	}
	route_judge(nr, rt, dst, tb[RTA_OIF] ? (int)mnl_attr_get_u32(
	    tb[RTA_OIF]) : 0, gwtext);
	return MNL_CB_OK;
}
