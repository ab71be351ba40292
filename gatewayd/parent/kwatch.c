/*
 * parent_kwatch.c -- the kernel state beside moat's tables that keeps
 * guests apart, watched like the tables themselves.
 *
 * These are compared with what gatewayd set:
 *  - every port of the moat bridge must have port isolation on (the
 *    kernel then forwards no frame between two guests' ports).  The
 *    parent listens to rtnetlink link notifications: a port's flags
 *    changed by `ip link set ... type bridge_slave isolated off`, or a new
 *    port without isolation, is compared at once;
 *  - the moat bridge carries the gateway's addresses and no other: an
 *    address added to it, or the gateway's own taken away, is drift;
 *  - the main routing table sends nothing guests may reach out of
 *    another interface than the uplink: a route to addresses guests may
 *    send to (not a private range, not the sandbox network) by another
 *    link, a default route by another link, and the uplink's default
 *    route gone once it was there.  Addresses on other interfaces and
 *    routes by the uplink are the host's own life (leases renewed, IPv6
 *    temporary addresses); with gateway.ipv6 the host's other IPv6
 *    routes are followed by the policy itself (parent/hostnet.c).  The
 *    parent listens to the address and route notifications of both
 *    families and reads the addresses and routes whole on each burst;
 *  - IPv4 forwarding (net.ipv4.conf.all and on the bridge and the
 *    uplink), IPv6 forwarding where guests have IPv6, and the ICMP
 *    sysctls that keep refusals immediate.  The kernel tells no one of a
 *    sysctl written, so these are compared by the timed check
 *    (gateway.verify.interval) alone, with the values read after start-up
 *    as the reference.
 * Each object that differs is logged, audited ("policy-drift", naming it),
 * counted in moat_policy_drift and shown by ctl status; with
 * gateway.verify.repair_network (default false: an admin may have meant
 * it) a port's isolation, a sysctl and the gateway's own address are put
 * back and audited as "policy-repaired"; another's address or route is
 * reported and never touched.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <net/if.h>

#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "gw.h"
#include "audit.h"
#include "ctl.h"
#include "metrics.h"
#include "ev.h"
#include "log.h"
#include "sysctl.h"
#include "kwatch.h"
#include "kwatch_net.h"
#include "ranges.h"
#include "refusals.h"
#include "rtnl.h"

#define KW_MAX		16	/* objects reported at once */
#define KW_OBJLEN	160
#define KW_SYSCTLS	4
#define KW_GRACE	2	/* seconds a new port has to get isolated */

struct kw_sysctl {
	char	 path[96];	/* under /proc/sys */
	long	 want;		/* read after start-up; -1: none here */
};

struct kwatch {
	struct ev	 ev;		/* on events */
	struct gw	*gw;
	struct mnl_socket *events;	/* RTMGRP_LINK, or NULL */
	struct mnl_socket *req;		/* dumps and repairs */
	unsigned	 seq;
	struct kw_sysctl sysctl[KW_SYSCTLS];
	char		 bridge[IFNAMSIZ], uplink[IFNAMSIZ];
	struct kw_port {
		int	 index;
		time_t	 since;		/* first seen on the bridge */
	}		 ports[256];	/* the bridge's ports at the last look */
	size_t		 nports;
	char		 obj[KW_MAX][KW_OBJLEN];	/* what differs now */
	size_t		 nobj;
	bool		 dflt[2];	/* IPv4, IPv6 default route by the
					 * uplink seen: its going is drift */
	time_t		 since;
	uint64_t	 repairs;
	char		 buf[32768];
};

static struct kwatch *kw;

/* --- reading the state ---------------------------------------------- */

struct port {
	char	 name[IFNAMSIZ];
	int	 index;
	int	 master;
	int	 isolated;	/* -1: not a bridge port, or not told */
};

struct ports {
	struct port	 p[256];
	size_t		 n;
	int		 bridge;	/* the moat bridge's index, 0 */
	const char	*bridge_name;
};

static void
slave_data(const struct nlattr *a, struct port *p)
{
	const struct nlattr *in, *d;
	bool bridge = false;

	mnl_attr_for_each_nested(in, a) {
		if (mnl_attr_get_type(in) == IFLA_INFO_SLAVE_KIND)
			bridge = strcmp(mnl_attr_get_str(in), "bridge") == 0;
		if (mnl_attr_get_type(in) != IFLA_INFO_SLAVE_DATA || !bridge)
			continue;
		mnl_attr_for_each_nested(d, in)
			if (mnl_attr_get_type(d) == IFLA_BRPORT_ISOLATED &&
			    mnl_attr_get_payload_len(d) >= 1)
				p->isolated = mnl_attr_get_u8(d) != 0;
	}
}

static int
link_attr(const struct nlattr *a, void *data)
{
	struct port *p = data;

	switch (mnl_attr_get_type(a)) {
	case IFLA_IFNAME:
		if (mnl_attr_validate(a, MNL_TYPE_STRING) == 0)
			snprintf(p->name, sizeof(p->name), "%s",
			    mnl_attr_get_str(a));
		break;
	case IFLA_MASTER:
		if (mnl_attr_validate(a, MNL_TYPE_U32) == 0)
			p->master = (int)mnl_attr_get_u32(a);
		break;
	case IFLA_LINKINFO:
		slave_data(a, p);
		break;
	}
	return MNL_CB_OK;
}

static int
link_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	struct ports *ps = data;
	struct port p = { .isolated = -1 };

	if (nlh->nlmsg_type != RTM_NEWLINK)
		return MNL_CB_OK;
	p.index = ifi->ifi_index;
	mnl_attr_parse(nlh, sizeof(*ifi), link_attr, &p);
	if (strcmp(p.name, ps->bridge_name) == 0)
		ps->bridge = p.index;
	if (p.master != 0 && ps->n < sizeof(ps->p) / sizeof(ps->p[0]))
		ps->p[ps->n++] = p;
	return MNL_CB_OK;
}

static int
talk(struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	unsigned portid = mnl_socket_get_portid(kw->req), seq;
	ssize_t n;
	int rc;

	nlh->nlmsg_seq = seq = ++kw->seq;
	if (mnl_socket_sendto(kw->req, nlh, nlh->nlmsg_len) < 0)
		return -1;
	do {
		if ((n = mnl_socket_recvfrom(kw->req, kw->buf,
		    sizeof(kw->buf))) < 0)
			return -1;
		rc = mnl_cb_run(kw->buf, (size_t)n, seq, portid, cb, data);
	} while (rc > MNL_CB_STOP);
	return rc < 0 ? -1 : 0;
}

static int
ports_read(struct ports *ps, const char *bridge)
{
	char buf[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;

	memset(ps, 0, sizeof(*ps));
	ps->bridge_name = bridge;
	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	return talk(nlh, link_cb, ps);
}

static int
isolate(int index)
{
	char buf[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;
	struct nlattr *nest;

	nlh->nlmsg_type = RTM_SETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_BRIDGE;
	ifi->ifi_index = index;
	nest = mnl_attr_nest_start(nlh, IFLA_PROTINFO | NLA_F_NESTED);
	mnl_attr_put_u8(nlh, IFLA_BRPORT_ISOLATED, 1);
	mnl_attr_nest_end(nlh, nest);
	return talk(nlh, NULL, NULL);
}

/* A one-number sysctl under /proc/sys: its value, or -1. */
static long
sysctl_get(const char *path)
{
	char full[128];
	long v;

	snprintf(full, sizeof(full), "/proc/sys/%s", path);
	return sysctl_read(full, &v) == 0 && v >= 0 ? v : -1;
}

static int
sysctl_set(const char *path, long v)
{
	char full[128];

	snprintf(full, sizeof(full), "/proc/sys/%s", path);
	return sysctl_write(full, v);
}

/* The reference values: what start-up (or a reload that renamed the
 * bridge or the uplink) left in the kernel. */
static void
sysctls_take(const struct moat_gateway *g)
{
	size_t i;

	snprintf(kw->bridge, sizeof(kw->bridge), "%s", g->bridge);
	snprintf(kw->uplink, sizeof(kw->uplink), "%s", g->uplink);
	kw->dflt[0] = kw->dflt[1] = false;
	snprintf(kw->sysctl[0].path, sizeof(kw->sysctl[0].path),
	    "net/ipv4/conf/all/forwarding");
	snprintf(kw->sysctl[1].path, sizeof(kw->sysctl[1].path),
	    "net/ipv4/conf/%s/forwarding", g->bridge);
	snprintf(kw->sysctl[2].path, sizeof(kw->sysctl[2].path),
	    "net/ipv4/conf/%s/forwarding", g->uplink);
	snprintf(kw->sysctl[3].path, sizeof(kw->sysctl[3].path),
	    "net/ipv6/conf/all/forwarding");
	for (i = 0; i < KW_SYSCTLS; i++)
		kw->sysctl[i].want = sysctl_get(kw->sysctl[i].path);
	if (!g->ipv6)
		kw->sysctl[3].want = -1;
}

static void
dotted(const char *path, char *out, size_t len)
{
	size_t i;

	for (i = 0; path[i] != '\0' && i + 1 < len; i++)
		out[i] = path[i] == '/' ? '.' : path[i];
	out[i] = '\0';
}

/* --- one comparison --------------------------------------------------- */

struct found {
	char	 obj[KW_MAX][KW_OBJLEN];
	size_t	 n;
};

static void
add(struct found *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
add(struct found *f, const char *fmt, ...)
{
	va_list ap;

	if (f->n == KW_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(f->obj[f->n++], KW_OBJLEN, fmt, ap);
	va_end(ap);
}

/* Found, and about to be put back: reported all the same. */
static void
caught(struct gw *gw, const char *how, const char *what)
{
	log_warnx("policy drift (%s): %s; putting it back", how, what);
	audit_event(gw, "policy-drift", "object", what, "found", how, NULL);
}

/* When the port was first seen on the bridge (now: not before). */
static time_t
port_since(int index, time_t now)
{
	size_t i;

	for (i = 0; i < kw->nports; i++)
		if (kw->ports[i].index == index)
			return kw->ports[i].since;
	return now;
}

/*
 * A port that has just joined the bridge gets its isolation a moment
 * later (provision attaches a tap, then isolates it): on a notification
 * only ports there for KW_GRACE seconds count; a new one still without
 * isolation is found by the next timed check or notification.
 */
static void
ports_compare(struct gw *gw, struct found *f, bool repair, const char *how)
{
	char what[KW_OBJLEN];
	const struct moat_gateway *g = &gw->cfg->gw;
	struct ports *ps = xcalloc(1, sizeof(*ps));
	bool event = strcmp(how, "notification") == 0;
	struct kw_port seen[256];
	time_t now = time(NULL);
	/* Ports there before gatewayd started are no new ones. */
	time_t fresh = strcmp(how, "start") == 0 ? 0 : now;
	size_t i, nseen = 0;

	if (ports_read(ps, g->bridge) == -1)
		log_warn("kernel watch: the links could not be read");
	for (i = 0; ps->bridge != 0 && i < ps->n; i++) {
		const struct port *p = &ps->p[i];

		if (p->master != ps->bridge)
			continue;
		if (nseen < sizeof(seen) / sizeof(seen[0]))
			seen[nseen++] = (struct kw_port){ p->index,
			    port_since(p->index, fresh) };
		if (p->isolated != 0 || (event && now - port_since(p->index,
		    fresh) < KW_GRACE))
			continue;
		snprintf(what, sizeof(what), "bridge port %s of %s: isolation "
		    "off", p->name, g->bridge);
		if (repair)
			caught(gw, how, what);
		if (repair && isolate(p->index) == 0) {
			log_info("kernel watch: port isolation of %s on bridge "
			    "%s put back", p->name, g->bridge);
			audit_event(gw, "policy-repaired", "object", "bridge "
			    "port", "port", p->name, NULL);
			kw->repairs++;
			continue;
		}
		add(f, "%s", what);
	}
	memcpy(kw->ports, seen, nseen * sizeof(seen[0]));
	kw->nports = nseen;
	free(ps);
}

static void
sysctls_compare(struct gw *gw, struct found *f, bool repair, const char *how)
{
	const struct moat_gateway *g = &gw->cfg->gw;
	struct refusal_sysctls now;
	char name[96], why[140], what[KW_OBJLEN];
	long v;
	size_t i;

	for (i = 0; i < KW_SYSCTLS; i++) {
		if (kw->sysctl[i].want < 0 || (v = sysctl_get(
		    kw->sysctl[i].path)) < 0 || v == kw->sysctl[i].want)
			continue;
		dotted(kw->sysctl[i].path, name, sizeof(name));
		snprintf(what, sizeof(what), "sysctl %s = %ld, was %ld", name,
		    v, kw->sysctl[i].want);
		if (repair)
			caught(gw, how, what);
		if (repair && sysctl_set(kw->sysctl[i].path,
		    kw->sysctl[i].want) == 0) {
			log_info("kernel watch: %s set back to %ld", name,
			    kw->sysctl[i].want);
			audit_event(gw, "policy-repaired", "object", name, NULL);
			kw->repairs++;
			continue;
		}
		add(f, "%s", what);
	}
	if (!g->fast_refusals || refusals_read(&now, why, sizeof(why)) == -1 ||
	    refusals_fast(g, &now, why, sizeof(why)))
		return;
	snprintf(what, sizeof(what), "icmp sysctls: %s", why);
	if (repair)
		caught(gw, how, what);
	if (repair && refusals_apply(g, why, sizeof(why)) == 0) {
		log_info("kernel watch: the ICMP sysctls set back");
		audit_event(gw, "policy-repaired", "object", "icmp sysctls",
		    NULL);
		kw->repairs++;
		return;
	}
	add(f, "%s", what);
}

/* --- the host's addresses and routes ------------------------------------ */

static int
dump(uint16_t type, mnl_cb_t cb, void *data)
{
	char buf[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct rtgenmsg *g;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->rtgen_family = AF_UNSPEC;
	return talk(nlh, cb, data);
}

static void
gw_addr_missing(struct gw *gw, struct found *f, bool repair, const char *how,
    int bridge, int family)
{
	const struct moat_gateway *g = &gw->cfg->gw;
	const uint8_t *a = family == AF_INET6 ? g->ipv6_address.a :
	    g->address.a;
	int plen = family == AF_INET6 ? 64 : g->network.plen;
	char text[INET6_ADDRSTRLEN], what[KW_OBJLEN];
	struct rtnl *r;
	int rc = -1;

	inet_ntop(family, a, text, sizeof(text));
	snprintf(what, sizeof(what), "address %s/%d of the gateway: gone from "
	    "bridge %s", text, plen, g->bridge);
	if (repair) {
		caught(gw, how, what);
		if ((r = rtnl_open()) != NULL) {
			rc = rtnl_addr_add(r, bridge, family, a, plen);
			rtnl_close(r);
		}
	}
	if (rc == 0) {
		log_info("kernel watch: the gateway's address %s/%d put back on "
		    "%s", text, plen, g->bridge);
		audit_event(gw, "policy-repaired", "object", "gateway address",
		    "address", text, NULL);
		kw->repairs++;
		return;
	}
	add(f, "%s", what);
}

/*
 * The bridge's addresses and the main table's routes, read whole on
 * every notification (addresses and routes come and go in bursts; one
 * reading sees where they ended).  gatewayd's own addresses are expected,
 * its routes are the kernel's for them: neither is reported.
 */
static void
net_compare(struct gw *gw, struct found *f, bool repair, const char *how)
{
	const struct moat_gateway *g = &gw->cfg->gw;
	struct kwn *nr = xcalloc(1, sizeof(*nr));
	size_t i;

	nr->cfg = gw->cfg;
	nr->bridge = g->bridge[0] ? (int)if_nametoindex(g->bridge) : 0;
	nr->uplink = g->uplink[0] ? (int)if_nametoindex(g->uplink) : 0;
	if (dump(RTM_GETADDR, kwn_addr, nr) == -1)
		log_warn("kernel watch: the addresses could not be read");
	else if (nr->bridge != 0) {
		if (!nr->gw4)
			gw_addr_missing(gw, f, repair, how, nr->bridge, AF_INET);
		if (g->ipv6 && !nr->gw6)
			gw_addr_missing(gw, f, repair, how, nr->bridge,
			    AF_INET6);
	}
	if (dump(RTM_GETROUTE, kwn_route, nr) == -1) {
		log_warn("kernel watch: the routes could not be read");
		nr->dflt[0] = kw->dflt[0];
		nr->dflt[1] = kw->dflt[1];
	}
	for (i = 0; i < nr->n; i++)
		add(f, "%s", nr->obj[i]);
	/* A default route by the uplink, once there, is the guests' way
	 * out: its going is reported (a lease that moved it comes back). */
	for (i = 0; i < 2; i++) {
		if (i == 1 && !g->ipv6)
			continue;
		if (nr->dflt[i])
			kw->dflt[i] = true;
		else if (kw->dflt[i])
			add(f, "default route (%s) by %s: gone", i ? "IPv6" :
			    "IPv4", g->uplink);
	}
	free(nr);
}

static bool
listed(char (*v)[KW_OBJLEN], size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

void
kwatch_check(struct gw *gw, const char *how)
{
	const struct moat_gateway *g;
	struct found f = { .n = 0 };
	bool repair;
	size_t i;

	if (kw == NULL || kw->req == NULL)
		return;
	g = &gw->cfg->gw;
	repair = g->verify_repair_network;
	if (strcmp(kw->bridge, g->bridge) != 0 ||
	    strcmp(kw->uplink, g->uplink) != 0)
		sysctls_take(g);
	if (g->manage_network || g->bridge[0] != '\0')
		ports_compare(gw, &f, repair, how);
	sysctls_compare(gw, &f, repair, how);
	net_compare(gw, &f, repair, how);
	for (i = 0; i < f.n; i++) {
		if (listed(kw->obj, kw->nobj, f.obj[i]))
			continue;
		log_warnx("policy drift (%s): %s%s", how, f.obj[i], repair ?
		    "; could not be put back" : " (verify.repair_network is "
		    "off: left as it is)");
		audit_event(gw, "policy-drift", "object", f.obj[i], "found",
		    how, NULL);
	}
	for (i = 0; i < kw->nobj; i++) {
		if (listed(f.obj, f.n, kw->obj[i]))
			continue;
		log_info("policy drift: %s: as gatewayd set it again",
		    kw->obj[i]);
		audit_event(gw, "policy-drift-cleared", "object", kw->obj[i],
		    NULL);
	}
	if (kw->nobj == 0 && f.n > 0)
		kw->since = time(NULL);
	memcpy(kw->obj, f.obj, sizeof(f.obj));
	kw->nobj = f.n;
}

/* --- notifications ----------------------------------------------------- */

static void
on_events(struct ev *e, uint32_t events)
{
	struct kwatch *k = e->arg;

	(void)events;
	kwatch_readable(k->gw);
}

void
kwatch_start(struct gw *gw)
{
	/* Links (ports and their flags), both families' addresses and
	 * routes; a burst that overruns the socket costs one reading. */
	unsigned groups = 1u << (RTNLGRP_LINK - 1) |
	    1u << (RTNLGRP_IPV4_IFADDR - 1) | 1u << (RTNLGRP_IPV6_IFADDR - 1) |
	    1u << (RTNLGRP_IPV4_ROUTE - 1) | 1u << (RTNLGRP_IPV6_ROUTE - 1);
	int size = 1 << 20;

	kw = xcalloc(1, sizeof(*kw));
	kw->ev.fd = -1;
	kw->gw = gw;
	kw->seq = (unsigned)time(NULL);
	if ((kw->req = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC)) ==
	    NULL || mnl_socket_bind(kw->req, 0, MNL_SOCKET_AUTOPID) == -1) {
		log_warn("kernel watch: rtnetlink");
		if (kw->req != NULL)
			mnl_socket_close(kw->req);
		kw->req = NULL;
		return;
	}
	if ((kw->events = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC |
	    SOCK_NONBLOCK)) == NULL || mnl_socket_bind(kw->events, groups,
	    MNL_SOCKET_AUTOPID) == -1) {
		log_warn("link, address and route notifications: cannot follow "
		    "them; bridge ports, addresses and routes are compared by "
		    "the timed check alone");
		if (kw->events != NULL)
			mnl_socket_close(kw->events);
		kw->events = NULL;
	} else {
		(void)setsockopt(mnl_socket_get_fd(kw->events), SOL_SOCKET,
		    SO_RCVBUFFORCE, &size, sizeof(size));
		if (ev_add(&kw->ev, mnl_socket_get_fd(kw->events), EPOLLIN,
		    on_events, kw) == -1)
			log_warn("link, address and route notifications: "
			    "watching");
	}
	sysctls_take(&gw->cfg->gw);
	kwatch_check(gw, "start");
}

void
kwatch_stop(void)
{
	if (kw == NULL)
		return;
	ev_del(&kw->ev);
	if (kw->events != NULL)
		mnl_socket_close(kw->events);
	if (kw->req != NULL)
		mnl_socket_close(kw->req);
	free(kw);
	kw = NULL;
}

int
kwatch_fd(void)
{
	return kw != NULL && kw->events != NULL ?
	    mnl_socket_get_fd(kw->events) : -1;
}

/* Any link message may be a port's flags changed or a port added, any
 * address or route message a change that concerns guests: the comparison
 * is three dumps, cheap beside the notifications themselves. */
void
kwatch_readable(struct gw *gw)
{
	bool any = false, lost = false;
	ssize_t n;

	for (;;) {
		n = mnl_socket_recvfrom(kw->events, kw->buf, sizeof(kw->buf));
		if (n == -1 && errno == ENOBUFS) {
			lost = true;
			continue;
		}
		if (n <= 0)
			break;
		any = true;
	}
	if (any || lost)
		kwatch_check(gw, lost ? "notifications lost" : "notification");
}

bool
kwatch_drifting(void)
{
	return kw != NULL && kw->nobj > 0;
}

void
kwatch_status(struct ctl_req *r)
{
	size_t i;

	if (kw == NULL)
		return;
	for (i = 0; i < kw->nobj; i++)
		ctl_reply(r, "drift      %s (for %llds)\n", kw->obj[i],
		    (long long)(time(NULL) - kw->since));
	if (kw->repairs > 0)
		ctl_reply(r, "network    %llu put back by the kernel watch\n",
		    (unsigned long long)kw->repairs);
}

void
kwatch_status_json(struct ctl_req *r)
{
	size_t i;

	ctl_reply(r, "\"kernel_watch\":{\"repair\":%s,\"events\":%s,\"repairs\":"
	    "%llu,\"drift\":[", r->gw->cfg->gw.verify_repair_network ? "true" :
	    "false", kw != NULL && kw->events != NULL ? "true" : "false",
	    kw != NULL ? (unsigned long long)kw->repairs : 0ULL);
	for (i = 0; kw != NULL && i < kw->nobj; i++) {
		if (i > 0)
			ctl_reply(r, ",");
		ctl_reply_jstr(r, kw->obj[i]);
	}
	ctl_reply(r, "]},");
}

/* The metrics' kind of an object, from how it is named. */
static const char *
kind(const char *obj)
{
	if (strncmp(obj, "bridge port", 11) == 0)
		return "link";
	if (strncmp(obj, "address ", 8) == 0)
		return "address";
	if (strncmp(obj, "route ", 6) == 0 ||
	    strncmp(obj, "default route", 13) == 0)
		return "route";
	return "sysctl";
}

void
kwatch_metrics_objects(FILE *fp)
{
	size_t i;

	for (i = 0; kw != NULL && i < kw->nobj; i++) {
		fprintf(fp, "moat_policy_drift_object{kind=\"%s\",object=\"",
		    kind(kw->obj[i]));
		metrics_lvalue(fp, kw->obj[i]);
		fputs("\"} 1\n", fp);
	}
}

static int
kwatch_mod_start(struct gw *gw)
{
	kwatch_start(gw);
	return 0;
}

static void
kwatch_mod_stop(struct gw *gw)
{
	(void)gw;
	kwatch_stop();
}

const struct gw_module kwatch_module = {
	.name = "kwatch",
	.size = sizeof(char),
	.start = kwatch_mod_start,
	.stop = kwatch_mod_stop,
};
