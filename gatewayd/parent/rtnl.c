/*
 * parent/rtnl.c -- the few rtnetlink requests gatewayd makes for its own
 * network (libmnl): look up a link, create a bridge, bring a link up, find
 * and add an address, find and add a default route, delete a link; and a socket
 * told of every address the host gains or loses.  Each
 * request waits for the kernel's answer; errors come back in errno.  A
 * handle talks to the network namespace it was opened in.
 */
#include <sys/socket.h>

#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "rtnl.h"

struct rtnl {
	struct mnl_socket	*nl;
	unsigned		 portid;
	unsigned		 seq;
	char			 buf[32768];	/* one datagram of a dump */
};

struct rtnl *
rtnl_open(void)
{
	struct rtnl *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	if ((r->nl = mnl_socket_open(NETLINK_ROUTE)) == NULL ||
	    mnl_socket_bind(r->nl, 0, MNL_SOCKET_AUTOPID) == -1) {
		rtnl_close(r);
		return NULL;
	}
	r->portid = mnl_socket_get_portid(r->nl);
	r->seq = (unsigned)time(NULL);
	return r;
}

void
rtnl_close(struct rtnl *r)
{
	if (r == NULL)
		return;
	if (r->nl != NULL)
		mnl_socket_close(r->nl);
	free(r);
}

static struct nlmsghdr *
msg_new(struct rtnl *r, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(r->buf);

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = ++r->seq;
	return nlh;
}

/* Send, then run cb over every answer until the ack or the dump's end. */
static int
talk(struct rtnl *r, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	unsigned seq = nlh->nlmsg_seq;
	ssize_t n;
	int rc;

	if (mnl_socket_sendto(r->nl, nlh, nlh->nlmsg_len) < 0)
		return -1;
	do {
		if ((n = mnl_socket_recvfrom(r->nl, r->buf, sizeof(r->buf))) < 0)
			return -1;
		rc = mnl_cb_run(r->buf, (size_t)n, seq, r->portid, cb, data);
	} while (rc > MNL_CB_STOP);
	return rc < 0 ? -1 : 0;
}

/* --- links --- */

static int
link_attr(const struct nlattr *a, void *data)
{
	struct rtnl_link *l = data;

	if (mnl_attr_get_type(a) == IFLA_LINKINFO) {
		const struct nlattr *in;

		mnl_attr_for_each_nested(in, a)
			if (mnl_attr_get_type(in) == IFLA_INFO_KIND &&
			    strcmp(mnl_attr_get_str(in), "bridge") == 0)
				l->bridge = true;
	}
	return MNL_CB_OK;
}

static int
link_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	struct rtnl_link *l = data;

	l->index = ifi->ifi_index;
	l->up = (ifi->ifi_flags & IFF_UP) != 0;
	mnl_attr_parse(nlh, sizeof(*ifi), link_attr, l);
	return MNL_CB_OK;
}

int
rtnl_link_get(struct rtnl *r, const char *name, struct rtnl_link *l)
{
	struct nlmsghdr *nlh = msg_new(r, RTM_GETLINK, NLM_F_ACK);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));

	memset(l, 0, sizeof(*l));
	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	if (talk(r, nlh, link_cb, l) == -1)
		return errno == ENODEV ? 0 : -1;
	return l->index > 0 ? 1 : 0;
}

int
rtnl_bridge_add(struct rtnl *r, const char *name)
{
	struct nlmsghdr *nlh = msg_new(r, RTM_NEWLINK,
	    NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	struct nlattr *info;

	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "bridge");
	mnl_attr_nest_end(nlh, info);
	return talk(r, nlh, NULL, NULL);
}

int
rtnl_link_set_up(struct rtnl *r, int index, bool up)
{
	struct nlmsghdr *nlh = msg_new(r, RTM_NEWLINK, NLM_F_ACK);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));

	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = index;
	ifi->ifi_change = IFF_UP;
	ifi->ifi_flags = up ? IFF_UP : 0;
	return talk(r, nlh, NULL, NULL);
}

int
rtnl_link_del(struct rtnl *r, int index)
{
	struct nlmsghdr *nlh = msg_new(r, RTM_DELLINK, NLM_F_ACK);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));

	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = index;
	return talk(r, nlh, NULL, NULL);
}

/* --- addresses (IPv4 4 bytes, IPv6 16) --- */

static size_t
alen(int family)
{
	return family == AF_INET6 ? 16 : 4;
}

struct addr_find {
	int		 index;
	int		 family;
	const uint8_t	*addr;
	int		 plen;
	bool		 found;
};

static int
addr_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
	struct addr_find *f = data;
	const struct nlattr *a;
	/* IPv6 addresses carry IFA_ADDRESS only; IPv4 ones IFA_LOCAL too. */
	uint16_t type = f->family == AF_INET6 ? IFA_ADDRESS : IFA_LOCAL;

	if ((int)ifa->ifa_index != f->index || ifa->ifa_family != f->family ||
	    ifa->ifa_prefixlen != f->plen)
		return MNL_CB_OK;
	mnl_attr_for_each(a, nlh, sizeof(*ifa))
		if (mnl_attr_get_type(a) == type &&
		    mnl_attr_get_payload_len(a) == alen(f->family) &&
		    memcmp(mnl_attr_get_payload(a), f->addr,
		    alen(f->family)) == 0)
			f->found = true;
	return MNL_CB_OK;
}

int
rtnl_addr_has(struct rtnl *r, int index, int family, const uint8_t *addr,
    int plen)
{
	struct nlmsghdr *nlh = msg_new(r, RTM_GETADDR, NLM_F_DUMP);
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	struct addr_find f = { index, family, addr, plen, false };

	ifa->ifa_family = (uint8_t)family;
	if (talk(r, nlh, addr_cb, &f) == -1)
		return -1;
	return f.found ? 1 : 0;
}

static int
addr_req(struct rtnl *r, uint16_t type, uint16_t flags, int index,
    int family, const uint8_t *addr, int plen)
{
	struct nlmsghdr *nlh = msg_new(r, type, flags | NLM_F_ACK);
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));

	ifa->ifa_family = (uint8_t)family;
	ifa->ifa_prefixlen = (uint8_t)plen;
	ifa->ifa_index = (unsigned)index;
	/* The gateway's IPv6 address is usable at once: it is the guests'
	 * router, and duplicate detection would hold it back a second. */
	if (family == AF_INET6)
		ifa->ifa_flags = IFA_F_NODAD;
	else
		mnl_attr_put(nlh, IFA_LOCAL, alen(family), addr);
	mnl_attr_put(nlh, IFA_ADDRESS, alen(family), addr);
	return talk(r, nlh, NULL, NULL);
}

int
rtnl_addr_add(struct rtnl *r, int index, int family, const uint8_t *addr,
    int plen)
{
	return addr_req(r, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, index,
	    family, addr, plen);
}

int
rtnl_addr_del(struct rtnl *r, int index, int family, const uint8_t *addr,
    int plen)
{
	return addr_req(r, RTM_DELADDR, 0, index, family, addr, plen);
}

/* --- routes --- */

struct route_find {
	int	 index;
	int	 family;
	bool	 found;
};

static int
route_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
	struct route_find *f = data;
	const struct nlattr *a;

	if (rtm->rtm_family != f->family || rtm->rtm_dst_len != 0 ||
	    rtm->rtm_type != RTN_UNICAST)
		return MNL_CB_OK;
	mnl_attr_for_each(a, nlh, sizeof(*rtm))
		if (mnl_attr_get_type(a) == RTA_OIF &&
		    (int)mnl_attr_get_u32(a) == f->index)
			f->found = true;
	return MNL_CB_OK;
}

int
rtnl_default_route_via(struct rtnl *r, int family, int index)
{
	struct nlmsghdr *nlh = msg_new(r, RTM_GETROUTE, NLM_F_DUMP);
	struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	struct route_find f = { index, family, false };

	rtm->rtm_family = (uint8_t)family;
	if (talk(r, nlh, route_cb, &f) == -1)
		return -1;
	return f.found ? 1 : 0;
}

/* --- proxy neighbour entries (IPv6) --- */

struct proxy_list {
	int		 index;
	uint8_t		(*v)[16];
	size_t		 n;
};

static int
proxy_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ndmsg *ndm = mnl_nlmsg_get_payload(nlh);
	struct proxy_list *l = data;
	const struct nlattr *a;
	void *v;

	if (ndm->ndm_family != AF_INET6 || (ndm->ndm_flags & NTF_PROXY) == 0 ||
	    ndm->ndm_ifindex != l->index)
		return MNL_CB_OK;
	mnl_attr_for_each(a, nlh, sizeof(*ndm)) {
		if (mnl_attr_get_type(a) != NDA_DST ||
		    mnl_attr_get_payload_len(a) != 16)
			continue;
		if ((v = reallocarray(l->v, l->n + 1, sizeof(*l->v))) == NULL)
			return MNL_CB_ERROR;
		l->v = v;
		memcpy(l->v[l->n++], mnl_attr_get_payload(a), 16);
	}
	return MNL_CB_OK;
}

int
rtnl_proxy6_list(struct rtnl *r, int index, uint8_t (**v)[16], size_t *n)
{
	struct nlmsghdr *nlh = msg_new(r, RTM_GETNEIGH, NLM_F_DUMP);
	struct ndmsg *ndm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ndm));
	struct proxy_list l = { index, NULL, 0 };

	ndm->ndm_family = AF_INET6;
	ndm->ndm_flags = NTF_PROXY;	/* the proxy entries, not the cache */
	if (talk(r, nlh, proxy_cb, &l) == -1) {
		free(l.v);
		return -1;
	}
	*v = l.v;
	*n = l.n;
	return 0;
}

int
rtnl_proxy6(struct rtnl *r, int index, const uint8_t *addr, bool add)
{
	struct nlmsghdr *nlh = msg_new(r, add ? RTM_NEWNEIGH : RTM_DELNEIGH,
	    NLM_F_ACK | (add ? NLM_F_CREATE | NLM_F_REPLACE : 0));
	struct ndmsg *ndm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ndm));

	ndm->ndm_family = AF_INET6;
	ndm->ndm_ifindex = index;
	ndm->ndm_flags = NTF_PROXY;
	ndm->ndm_state = NUD_PERMANENT;
	mnl_attr_put(nlh, NDA_DST, 16, addr);
	return talk(r, nlh, NULL, NULL);
}

int
rtnl_default_route_add(struct rtnl *r, int family, const uint8_t *gw, int oif)
{
	struct nlmsghdr *nlh = msg_new(r, RTM_NEWROUTE,
	    NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK);
	struct rtmsg *rt = mnl_nlmsg_put_extra_header(nlh, sizeof(*rt));

	rt->rtm_family = (uint8_t)family;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_BOOT;
	rt->rtm_scope = RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_UNICAST;
	mnl_attr_put(nlh, RTA_GATEWAY, alen(family), gw);
	mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)oif);
	return talk(r, nlh, NULL, NULL);
}

/* --- following the host's addresses --- */

struct rtnl_watch {
	struct mnl_socket	*nl;
	char			 buf[16384];
};

struct rtnl_watch *
rtnl_watch_open(void)
{
	struct rtnl_watch *w = calloc(1, sizeof(*w));
	/* IPv6 only: the policy follows no IPv4 network of the host (every
	 * private IPv4 range is refused whatever the host has).  Addresses
	 * and routes: lan6 holds what the host reaches other than by its
	 * default route (nftr_lan6_host). */
	unsigned groups = 1u << (RTNLGRP_IPV6_IFADDR - 1) |
	    1u << (RTNLGRP_IPV6_ROUTE - 1);
	int fl;

	if (w == NULL)
		return NULL;
	if ((w->nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC)) == NULL ||
	    mnl_socket_bind(w->nl, groups, MNL_SOCKET_AUTOPID) == -1 ||
	    (fl = fcntl(mnl_socket_get_fd(w->nl), F_GETFL)) == -1 ||
	    fcntl(mnl_socket_get_fd(w->nl), F_SETFL, fl | O_NONBLOCK) == -1) {
		rtnl_watch_close(w);
		return NULL;
	}
	return w;
}

int
rtnl_watch_fd(const struct rtnl_watch *w)
{
	return w ? mnl_socket_get_fd(w->nl) : -1;
}

void
rtnl_watch_close(struct rtnl_watch *w)
{
	if (w == NULL)
		return;
	if (w->nl != NULL)
		mnl_socket_close(w->nl);
	free(w);
}

static int
watch_cb(const struct nlmsghdr *nlh, void *data)
{
	if (nlh->nlmsg_type == RTM_NEWADDR || nlh->nlmsg_type == RTM_DELADDR ||
	    nlh->nlmsg_type == RTM_NEWROUTE || nlh->nlmsg_type == RTM_DELROUTE)
		*(bool *)data = true;
	return MNL_CB_OK;
}

/* Read every pending notification.  An overrun socket lost some: that
 * counts as a change too, so the caller looks again. */
int
rtnl_watch_drain(struct rtnl_watch *w)
{
	bool changed = false;
	ssize_t n;

	for (;;) {
		n = recv(mnl_socket_get_fd(w->nl), w->buf, sizeof(w->buf), 0);
		if (n == -1 && errno == ENOBUFS) {
			changed = true;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		mnl_cb_run(w->buf, (size_t)n, 0, 0, watch_cb, &changed);
	}
	if (n == -1 && errno != EAGAIN)
		return -1;
	return changed ? 1 : 0;
}
