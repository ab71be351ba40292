/*
 * parent/network.c -- the gateway's own plumbing.  With
 * gateway.manage_network (the default) gatewayd owns it the way libvirt
 * owns its default network: it creates the bridge if missing, brings it
 * up, puts the gateway address on it and turns on IPv4 forwarding on the
 * bridge and the uplink only.  Every step is idempotent and each change is
 * written to STATE_DIR/network.undo, which `gatewayd --teardown` (and
 * nothing else) replays backwards.  The ICMP rate-limit sysctls that fast
 * refusals change (parent/policy.c) are recorded there too.  Without manage_network, or for -n, the
 * same walk only checks and warns.  The uplink's default route is always
 * the admin's: it is only checked.
 *
 * With gateway.ipv6 the walk also puts the gateway's IPv6 address
 * (network::1/64) on the bridge and turns on IPv6 forwarding, which Linux
 * has only for the whole host (net.ipv6.conf.all.forwarding).  A host
 * that forwards ignores router advertisements where accept_ra is 1, and
 * turning it on drops the default routes learned from them at once; a
 * homelab host usually gets its own IPv6 default route that way.  So
 * before forwarding goes on, every interface (and "default", for those
 * that come later) whose accept_ra is 1 gets 2, "take them although
 * forwarding", each recorded to be set back.  The bridge gets 0: the
 * gateway takes no route from its guests.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <arpa/inet.h>

#include <dirent.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gw.h"
#include "commit.h"
#include "ctl.h"
#include "network.h"
#include "log.h"
#include "sysctl.h"
#include "rtnl.h"

struct walk {
	const struct moat_config *cfg;
	struct gw_net	*out;
	struct rtnl	*r;
	bool		 apply;
	char		 cidr[INET_ADDRSTRLEN + 4];
	char		 cidr6[INET6_ADDRSTRLEN + 4];
};

static void
item(struct walk *w, bool warn, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
item(struct walk *w, bool warn, const char *what, const char *fmt, ...)
{
	struct gw_net_item *it;
	va_list ap;

	if (w->out->n == GW_NET_MAX)
		return;
	it = &w->out->item[w->out->n++];
	snprintf(it->what, sizeof(it->what), "%s", what);
	va_start(ap, fmt);
	vsnprintf(it->state, sizeof(it->state), fmt, ap);
	va_end(ap);
	it->warn = warn;
	w->out->warnings += warn;
}

static char *
undo_path(const struct moat_config *cfg)
{
	char *p;

	xasprintf(&p, "%s/network.undo", cfg->gw.state_dir);
	return p;
}

static void
undo_add(const struct walk *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
undo_add(const struct walk *w, const char *fmt, ...)
{
	char *path = undo_path(w->cfg);
	va_list ap;
	FILE *fp;
	int fd;

	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
	    O_NOFOLLOW, 0600);
	if (fd == -1 || (fp = fdopen(fd, "a")) == NULL) {
		log_warn("%s: cannot record a network change", path);
		if (fd != -1)
			close(fd);
		free(path);
		return;
	}
	va_start(ap, fmt);
	vfprintf(fp, fmt, ap);
	va_end(ap);
	fputc('\n', fp);
	fclose(fp);
	free(path);
}

/* A one-digit sysctl under /proc/sys/net: its value, or -1. */
static int
knob_get(const char *path)
{
	long v;

	return sysctl_read(path, &v) == 0 && v >= 0 && v <= 9 ? (int)v : -1;
}

/* /proc/sys/net/<ipv4|ipv6>/conf/<ifname>/<key>; NULL for a name that
 * is not an interface's (a record read back is not trusted). */
static const char *
knob_path(char *buf, size_t len, const char *family, const char *ifname,
    const char *key)
{
	if (ifname[0] == '\0' || strlen(ifname) >= 16 ||
	    strchr(ifname, '/') != NULL || strcmp(ifname, ".") == 0 ||
	    strcmp(ifname, "..") == 0)
		return NULL;
	snprintf(buf, len, "/proc/sys/net/%s/conf/%s/%s", family, ifname, key);
	return buf;
}

static int
fwd_get(const char *ifname)
{
	char path[96];

	if (knob_path(path, sizeof(path), "ipv4", ifname, "forwarding") == NULL)
		return -1;
	return knob_get(path);
}

static int
fwd_set(const char *ifname, int on)
{
	char path[96];

	if (knob_path(path, sizeof(path), "ipv4", ifname, "forwarding") == NULL)
		return -1;
	return sysctl_write(path, on ? 1 : 0);
}

static int
v6_get(const char *ifname, const char *key)
{
	char path[96];

	if (knob_path(path, sizeof(path), "ipv6", ifname, key) == NULL)
		return -1;
	return knob_get(path);
}

static int
v6_set(const char *ifname, const char *key, int v)
{
	char path[96];

	if (knob_path(path, sizeof(path), "ipv6", ifname, key) == NULL)
		return -1;
	return sysctl_write(path, v);
}

static const char *
not_managed(const struct walk *w)
{
	return w->cfg->gw.manage_network ? "" :
	    " (gateway.manage_network is false: this is yours to set up)";
}

static void
walk_address(struct walk *w, int index, int family, const uint8_t *a,
    int plen, const char *cidr)
{
	const char *br = w->cfg->gw.bridge;
	char what[64];
	int n;

	snprintf(what, sizeof(what), "address %s", cidr);
	if ((n = rtnl_addr_has(w->r, index, family, a, plen)) == 1)
		item(w, false, what, "on %s", br);
	else if (n == 0 && w->apply && rtnl_addr_add(w->r, index, family, a,
	    plen) == 0) {
		undo_add(w, "address %s %s", br, cidr);
		item(w, false, what, "added to %s", br);
	} else
		item(w, true, what, "missing on %s%s", br, not_managed(w));
}

/* The bridge: exists (or is created), then up, then has the address. */
static void
walk_bridge(struct walk *w)
{
	const char *br = w->cfg->gw.bridge;
	const uint8_t *a = w->cfg->gw.address.a;
	int plen = w->cfg->gw.network.plen, n;
	struct rtnl_link l;
	char what[64];

	snprintf(what, sizeof(what), "bridge %s", br);
	if ((n = rtnl_link_get(w->r, br, &l)) == 0 && w->apply) {
		if (rtnl_bridge_add(w->r, br) == -1) {
			item(w, true, what, "missing, and creating it failed: %s",
			    strerror(errno));
			return;
		}
		undo_add(w, "bridge %s", br);
		n = rtnl_link_get(w->r, br, &l);
		item(w, false, what, "created");
	} else if (n == 1)
		item(w, false, what, "%s", l.bridge ? "present" :
		    "present (a plain interface)");
	if (n != 1) {
		item(w, true, what, "missing%s", n == 0 ? not_managed(w) : "");
		return;
	}
	snprintf(what, sizeof(what), "link %s", br);
	if (l.up)
		item(w, false, what, "up");
	else if (w->apply && rtnl_link_set_up(w->r, l.index, true) == 0)
		item(w, false, what, "brought up");
	else
		item(w, true, what, "down%s", not_managed(w));
	snprintf(what, sizeof(what), "address %s", w->cidr);
	/* In a pair keepalived moves it: on both boxes it would be twice. */
	if (w->cfg->gw.ha) {
		item(w, false, what, "left to keepalived (gateway.ha)");
		return;
	}
	walk_address(w, l.index, AF_INET, a, plen, w->cidr);
	if (w->cfg->gw.ipv6)
		walk_address(w, l.index, AF_INET6,
		    w->cfg->gw.ipv6_address.a, 64, w->cidr6);
}

/* IPv4 forwarding on the two interfaces the sandboxes' traffic crosses,
 * not on every interface of the host. */
static void
walk_forwarding(struct walk *w, const char *ifname)
{
	char what[64];
	int v = fwd_get(ifname);

	snprintf(what, sizeof(what), "forwarding %s", ifname);
	if (v == 1)
		item(w, false, what, "on");
	else if (v == 0 && w->apply && fwd_set(ifname, 1) == 0) {
		undo_add(w, "forwarding %s 0", ifname);
		item(w, false, what, "enabled");
	} else if (v == 0)
		item(w, true, what, "off: guests get only DNS and the proxy%s",
		    not_managed(w));
}

static void
walk_uplink(struct walk *w)
{
	const char *up = w->cfg->gw.uplink;
	struct rtnl_link l;
	char what[64], def[IFNAMSIZ];
	int n;

	snprintf(what, sizeof(what), "uplink %s", up);
	if ((n = rtnl_link_get(w->r, up, &l)) != 1) {
		item(w, true, what, "missing");
		return;
	}
	walk_forwarding(w, up);
	if (!l.up)
		item(w, true, what, "down");
	else if ((n = rtnl_default_route_via(w->r, AF_INET, l.index)) == 1)
		item(w, false, what, "up, IPv4 default route");
	else if (config_host_default_if(def, sizeof(def)) == 0)
		item(w, true, what, "no IPv4 default route through it: "
		    "guests cannot reach the internet; the default route "
		    "leaves through %s: is that the uplink?", def);
	else
		item(w, true, what, "no IPv4 default route through it: "
		    "guests cannot reach the internet");
}

/* After IPv6 forwarding is on: turning it on drops the advertised
 * default routes of interfaces whose accept_ra stayed 1. */
static void
walk_uplink6(struct walk *w)
{
	const char *up = w->cfg->gw.uplink;
	struct rtnl_link l;

	if (rtnl_link_get(w->r, up, &l) == 1 && l.up &&
	    rtnl_default_route_via(w->r, AF_INET6, l.index) == 0)
		item(w, true, "uplink IPv6", "no IPv6 default route through "
		    "%s: guests cannot reach the IPv6 internet", up);
}

/* Before IPv6 forwarding goes on: accept_ra 1 becomes 2 wherever it is
 * (the host keeps taking its own routes from advertisements), and the
 * bridge's becomes 0 (none from guests).  The names changed, for the
 * walk's report. */
static void
keep_ras(struct walk *w, char *done, size_t len)
{
	const char *br = w->cfg->gw.bridge;
	struct dirent *d;
	size_t k, n;
	DIR *dir;
	int v;

	if ((dir = opendir("/proc/sys/net/ipv6/conf")) == NULL)
		return;
	while ((d = readdir(dir)) != NULL) {
		if (d->d_name[0] == '.' || strcmp(d->d_name, "all") == 0 ||
		    strcmp(d->d_name, "lo") == 0)
			continue;
		v = v6_get(d->d_name, "accept_ra");
		if (strcmp(d->d_name, br) == 0 ? v <= 0 : v != 1)
			continue;
		if (v6_set(d->d_name, "accept_ra", strcmp(d->d_name, br) == 0 ?
		    0 : 2) == -1)
			continue;
		undo_add(w, "accept_ra %s %d", d->d_name, v);
		k = strlen(done);
		n = strlen(d->d_name);
		if (k + n + 3 < len) {
			if (k > 0) {
				memcpy(done + k, ", ", 2);
				k += 2;
			}
			memcpy(done + k, d->d_name, n + 1);
		}
	}
	closedir(dir);
}

/* IPv6 forwarding, host-wide (Linux has no other switch for it). */
static void
walk_forwarding6(struct walk *w)
{
	char done[120] = "";
	int v = v6_get("all", "forwarding");

	if (v == -1) {
		item(w, true, "IPv6", "not available on this host (disabled "
		    "in the kernel?): guests get no IPv6");
		return;
	}
	if (v == 1) {
		item(w, false, "forwarding IPv6", "on");
		return;
	}
	if (!w->apply) {
		item(w, true, "forwarding IPv6", "off (net.ipv6.conf.all."
		    "forwarding): guests reach only the gateway over IPv6%s",
		    not_managed(w));
		return;
	}
	keep_ras(w, done, sizeof(done));
	if (done[0] != '\0')
		item(w, false, "accept_ra", "kept on %s (2: advertisements "
		    "taken with forwarding on; 0 on the bridge)", done);
	if (v6_set("all", "forwarding", 1) == 0) {
		undo_add(w, "forwarding6 all 0");
		item(w, false, "forwarding IPv6", "enabled");
	} else
		item(w, true, "forwarding IPv6", "cannot enable: %s",
		    strerror(errno));
}

/* --- answering for the guests' IPv6 addresses ------------------------ */

/* /proc/sys/net/<ipv4|ipv6>/neigh/<ifname>/<key>, as knob_path. */
static const char *
neigh_path(char *buf, size_t len, const char *family, const char *ifname,
    const char *key)
{
	if (knob_path(buf, len, family, ifname, key) == NULL)
		return NULL;
	snprintf(buf, len, "/proc/sys/net/%s/neigh/%s/%s", family, ifname,
	    key);
	return buf;
}

/* A sysctl of one number, any width: its value, or -1. */
static long
num_get(const char *path)
{
	long v;

	return path != NULL && sysctl_read(path, &v) == 0 && v >= 0 ? v : -1;
}

static int
num_set(const char *path, long v)
{
	return path == NULL ? -1 : sysctl_write(path, v);
}

/* Whether a is a guest's IPv6 address under cfg. */
static bool
guest_addr6(const struct moat_config *cfg, const uint8_t *a)
{
	struct moat_addr x;
	size_t i;

	for (i = 0; i < cfg->nsandboxes; i++)
		if (config_sandbox_addr6(cfg, &cfg->sandboxes[i], &x) &&
		    memcmp(x.a, a, 16) == 0)
			return true;
	return false;
}

/* The proxy entries on the bridge inside the guests' /64 that cfg gives
 * no guest (cfg NULL: all of them in net) go; 0 or -1. */
static int
ndproxy_prune(struct rtnl *r, int index, const struct moat_prefix *net,
    const struct moat_config *cfg, size_t *removed)
{
	uint8_t (*have)[16] = NULL;
	struct moat_addr h = { .family = AF_INET6 };
	size_t i, n = 0;

	if (rtnl_proxy6_list(r, index, &have, &n) == -1)
		return -1;
	for (i = 0; i < n; i++) {
		memcpy(h.a, have[i], 16);
		if (!prefix_contains(net, &h) ||
		    (cfg != NULL && guest_addr6(cfg, h.a)))
			continue;
		if (rtnl_proxy6(r, index, h.a, false) == 0)
			(*removed)++;
	}
	free(have);
	return 0;
}

/* The bridge's neighbour proxy for family ("ipv6": proxy_ndp, "ipv4":
 * proxy_arp_pvlan) on and its proxy_delay 0, each change recorded in
 * network.undo (verbs knob, and delay_undo for the delay); *on and
 * *delay: what is in force after, -1 if unreadable. */
static void
proxy_knobs(struct walk *w, const char *family, const char *knob,
    const char *delay_undo, int *on, long *delay)
{
	const char *br = w->cfg->gw.bridge;
	char path[96];

	*on = knob_path(path, sizeof(path), family, br, knob) == NULL ? -1 :
	    knob_get(path);
	if (*on == 0 && w->apply && sysctl_write(path, 1) == 0) {
		undo_add(w, "%s %s 0", knob, br);
		*on = 1;
	}
	*delay = num_get(neigh_path(path, sizeof(path), family, br,
	    "proxy_delay"));
	if (*delay > 0 && w->apply && num_set(path, 0) == 0) {
		undo_add(w, "%s %s %ld", delay_undo, br, *delay);
		*delay = 0;
	}
}

/*
 * The bridge answers a guest's neighbour solicitation for another
 * guest's IPv6 address with the gateway's MAC (a proxy entry for each
 * guest's address, answered at once: proxy_ndp 1, proxy_delay 0), so
 * that what a guest sends another guest on its /64 reaches the policy,
 * which refuses it at once; port isolation would otherwise leave the
 * guest waiting for an answer that never comes.  The policy keeps the
 * guests' duplicate address detection and their solicitations sent to
 * another guest's address from the proxy (nft-rules, raw_pre).
 */
static void
walk_ndproxy(struct walk *w)
{
	const struct moat_config *cfg = w->cfg;
	const char *br = cfg->gw.bridge;
	char what[64];
	uint8_t (*have)[16] = NULL;
	struct rtnl_link l;
	struct moat_addr a;
	size_t i, j, n = 0, want = 0, added = 0, removed = 0, missing = 0;
	long delay;
	int on;

	snprintf(what, sizeof(what), "neighbour proxy %s", br);
	if (rtnl_link_get(w->r, br, &l) != 1)
		return;		/* the bridge's own item says so */
	proxy_knobs(w, "ipv6", "proxy_ndp", "proxy_delay", &on, &delay);
	if (rtnl_proxy6_list(w->r, l.index, &have, &n) == -1) {
		item(w, true, what, "cannot list its entries: %s",
		    strerror(errno));
		return;
	}
	for (i = 0; i < cfg->nsandboxes; i++) {
		if (!config_sandbox_addr6(cfg, &cfg->sandboxes[i], &a))
			continue;
		want++;
		for (j = 0; j < n && memcmp(have[j], a.a, 16) != 0; j++)
			;
		if (j < n)
			continue;
		if (w->apply && rtnl_proxy6(w->r, l.index, a.a, true) == 0)
			added++;
		else
			missing++;
	}
	free(have);
	if (w->apply)
		ndproxy_prune(w->r, l.index, &cfg->gw.ipv6_network, cfg,
		    &removed);
	if (on != 1 || delay != 0 || missing > 0)
		item(w, true, what, "proxy_ndp %d, proxy_delay %ld, %zu of %zu "
		    "guests: IPv6 between guests waits, not refused%s", on,
		    delay, want - missing, want, not_managed(w));
	else if (added + removed > 0)
		item(w, false, what, "answers for %zu guests' addresses "
		    "(%zu added, %zu removed)", want, added, removed);
	else
		item(w, false, what, "answers for %zu guests' addresses", want);
}

/* --- answering for the guests' IPv4 addresses ------------------------ */

/*
 * The bridge answers a guest's ARP request for another guest's IPv4
 * address (any address of the sandbox network but the gateway's own,
 * which it answers anyway) with the gateway's MAC, at once: the bridge's
 * proxy_arp_pvlan 1 (the kernel's proxy ARP for a host on the same link,
 * as a private VLAN needs) and its IPv4 proxy_delay 0.  What a guest then
 * sends another guest reaches the policy, which refuses it at once; port
 * isolation would otherwise leave the guest waiting for an answer that
 * never comes.  The kernel answers no request whose sender address is
 * the same as its target (a gratuitous ARP) or is 0.0.0.0 (a guest's
 * RFC 5227 probe, answered only for the gateway's own addresses), so a
 * guest keeps the address it was given.  The redirect the kernel would
 * send the guest towards the other guest never leaves: its NAT drops
 * redirects about a flow whose translation is not done, as no refused
 * flow's is (the bridge's send_redirects alone could not stop it while
 * "all" says 1).
 */
static void
walk_arpproxy(struct walk *w)
{
	const char *br = w->cfg->gw.bridge;
	char what[64];
	struct rtnl_link l;
	long delay;
	int on;

	snprintf(what, sizeof(what), "ARP proxy %s", br);
	if (rtnl_link_get(w->r, br, &l) != 1)
		return;		/* the bridge's own item says so */
	proxy_knobs(w, "ipv4", "proxy_arp_pvlan", "proxy_delay4", &on, &delay);
	if (on != 1 || delay != 0)
		item(w, true, what, "proxy_arp_pvlan %d, proxy_delay %ld: "
		    "IPv4 between guests waits, not refused%s", on, delay,
		    not_managed(w));
	else
		item(w, false, what, "answers for the guests' addresses");
}

/* The config as gatewayd takes it: valid, and valid on this host (its
 * uplink here, its sandbox network not already in use here).  NULL with
 * errs, as config_load. */
struct moat_config *
net_config_load(const char *path, struct moat_errors *errs)
{
	struct moat_config *cfg = config_load(path, NULL, errs);
	struct moat_hostif *ifs = NULL;
	size_t n = 0;

	if (cfg == NULL)
		return NULL;
	if (config_host_read(&ifs, &n) == -1) {
		log_warn("cannot list this host's interfaces to check %s "
		    "against them", path);
		return cfg;
	}
	config_check_host(cfg, ifs, n, errs);
	free(ifs);
	if (errs->n == 0)
		return cfg;
	config_free(cfg);
	return NULL;
}

void
net_walk(const struct moat_config *cfg, bool apply, struct gw_net *out)
{
	struct walk w = { cfg, out, NULL, apply && cfg->gw.manage_network, "",
	    "" };
	char a[INET_ADDRSTRLEN];

	memset(out, 0, sizeof(*out));
	out->managed = cfg->gw.manage_network;
	addr_fmt(&cfg->gw.address, a, sizeof(a));
	snprintf(w.cidr, sizeof(w.cidr), "%s/%d", a, cfg->gw.network.plen);
	if (cfg->gw.ipv6) {
		char a6[INET6_ADDRSTRLEN];

		addr_fmt(&cfg->gw.ipv6_address, a6, sizeof(a6));
		snprintf(w.cidr6, sizeof(w.cidr6), "%s/64", a6);
	}
	if ((w.r = rtnl_open()) == NULL) {
		item(&w, true, "netlink", "cannot open rtnetlink: %s",
		    strerror(errno));
		return;
	}
	walk_bridge(&w);
	if (fwd_get(cfg->gw.bridge) != -1)
		walk_forwarding(&w, cfg->gw.bridge);
	walk_uplink(&w);
	walk_arpproxy(&w);
	if (cfg->gw.ipv6) {
		walk_forwarding6(&w);
		walk_uplink6(&w);
		walk_ndproxy(&w);
	}
	rtnl_close(w.r);
}

void
net_log(const struct gw_net *n)
{
	size_t i;

	for (i = 0; i < n->n; i++)
		if (n->item[i].warn)
			log_warnx("network: %s: %s", n->item[i].what,
			    n->item[i].state);
		else
			log_info("network: %s: %s", n->item[i].what,
			    n->item[i].state);
}

void
net_print_warnings(FILE *fp, const struct gw_net *n)
{
	size_t i;

	for (i = 0; i < n->n; i++)
		if (n->item[i].warn)
			fprintf(fp, "warning: network: %s: %s\n",
			    n->item[i].what, n->item[i].state);
}

void
net_status(struct ctl_req *r, const struct gw_net *n)
{
	size_t i;

	if (r->json) {
		ctl_reply(r, "\"network\":{\"managed\":%s,\"warnings\":%u,"
		    "\"steps\":[", n->managed ? "true" : "false", n->warnings);
		for (i = 0; i < n->n; i++)
			ctl_reply(r, "%s{\"what\":\"%s\",\"state\":\"%s\","
			    "\"warning\":%s}", i ? "," : "", n->item[i].what,
			    n->item[i].state, n->item[i].warn ? "true" : "false");
		ctl_reply(r, "]}");
		return;
	}
	ctl_reply(r, "network    %s\n", n->managed ? "managed by gatewayd "
	    "(undo with gatewayd --teardown)" : "checked only "
	    "(gateway.manage_network = false)");
	for (i = 0; i < n->n; i++)
		ctl_reply(r, "%-10s %s: %s\n", n->item[i].warn ? "WARNING" :
		    "", n->item[i].what, n->item[i].state);
}

void
net_undo_sysctl(const struct moat_config *cfg, const char *name, long old)
{
	struct walk w = { .cfg = cfg };

	undo_add(&w, "sysctl %s %ld", name, old);
}

/* --- teardown: replay network.undo ----------------------------------- */

/* The only sysctls a record may set back: the ones gatewayd changes. */
static const char *const undo_sysctls[] = {
	"net.ipv4.icmp_ratelimit", "net.ipv6.icmp.ratelimit",
	"net.ipv4.icmp_msgs_per_sec", "net.ipv4.icmp_msgs_burst",
};

static void
undo_sysctl(const char *name, const char *value, int *rc)
{
	char path[96], *p, *end;
	size_t i;
	long v;

	for (i = 0; i < sizeof(undo_sysctls) / sizeof(undo_sysctls[0]); i++)
		if (strcmp(name, undo_sysctls[i]) == 0)
			break;
	errno = 0;
	v = strtol(value, &end, 10);
	if (i == sizeof(undo_sysctls) / sizeof(undo_sysctls[0]) ||
	    errno != 0 || *end != '\0' || v < 0) {
		log_warnx("network.undo: ignored \"sysctl %s %s\"", name, value);
		return;
	}
	snprintf(path, sizeof(path), "/proc/sys/%s", name);
	for (p = path + strlen("/proc/sys/"); *p != '\0'; p++)
		if (*p == '.')
			*p = '/';
	if (sysctl_write(path, v) == -1) {
		if (errno != ENOENT) {	/* ENOENT: IPv6 is off here */
			log_warn("%s", path);
			*rc = -1;
		}
		return;
	}
	printf("%s set back to %ld\n", name, v);
}

static void
undo_line(struct rtnl *r, char *line, int *rc)
{
	char *verb = strtok(line, " \n"), *ifn = strtok(NULL, " \n"),
	    *arg = strtok(NULL, " \n"), *slash;
	struct rtnl_link l;
	uint8_t in[16];
	int family, v;

	if (verb == NULL || ifn == NULL)
		return;
	/* IPv6 knobs: interface accept_ra 0..2, forwarding of "all". */
	if ((strcmp(verb, "accept_ra") == 0 || (strcmp(verb, "forwarding6") ==
	    0 && strcmp(ifn, "all") == 0)) && arg != NULL) {
		if (arg[0] < '0' || arg[0] > '2' || arg[1] != '\0') {
			log_warnx("network.undo: ignored \"%s %s %s\"", verb,
			    ifn, arg);
			return;
		}
		v = arg[0] - '0';
		if (v6_set(ifn, verb[0] == 'a' ?
		    "accept_ra" : "forwarding", v) == -1)
			return;	/* a vanished interface has nothing to undo */
		printf("%s on %s set back to %d\n", verb[0] == 'a' ?
		    "accept_ra" : "IPv6 forwarding", ifn, v);
		return;
	}
	if (strcmp(verb, "sysctl") == 0 && arg != NULL) {
		undo_sysctl(ifn, arg, rc);
		return;
	}
	/* The bridge's ARP proxy: proxy_arp_pvlan 0..1, proxy_delay4. */
	if ((strcmp(verb, "proxy_arp_pvlan") == 0 || strcmp(verb,
	    "proxy_delay4") == 0) && arg != NULL) {
		bool pvlan = verb[6] == 'a';
		char path[96], *end;
		long nv;

		errno = 0;
		nv = strtol(arg, &end, 10);
		if (errno != 0 || *end != '\0' || nv < 0 || nv > 100000 ||
		    (pvlan && nv > 1) || (pvlan ? knob_path(path, sizeof(path),
		    "ipv4", ifn, "proxy_arp_pvlan") : neigh_path(path,
		    sizeof(path), "ipv4", ifn, "proxy_delay")) == NULL) {
			log_warnx("network.undo: ignored \"%s %s %s\"", verb,
			    ifn, arg);
			return;
		}
		if (num_set(path, nv) == 0)
			printf("%s on %s set back to %ld\n", pvlan ?
			    "proxy_arp_pvlan" : "IPv4 proxy_delay", ifn, nv);
		return;	/* a vanished interface has nothing to undo */
	}
	/* The bridge's neighbour proxy: proxy_ndp 0..1, proxy_delay. */
	if ((strcmp(verb, "proxy_ndp") == 0 || strcmp(verb, "proxy_delay") ==
	    0) && arg != NULL) {
		char path[96], *end;
		long nv;

		errno = 0;
		nv = strtol(arg, &end, 10);
		if (errno != 0 || *end != '\0' || nv < 0 || nv > 100000 ||
		    (verb[6] == 'n' && nv > 1) || (verb[6] == 'n' ?
		    knob_path(path, sizeof(path), "ipv6", ifn, "proxy_ndp") :
		    neigh_path(path, sizeof(path), "ipv6", ifn,
		    "proxy_delay")) == NULL) {
			log_warnx("network.undo: ignored \"%s %s %s\"", verb,
			    ifn, arg);
			return;
		}
		if (num_set(path, nv) == 0)
			printf("%s on %s set back to %ld\n", verb, ifn, nv);
		return;	/* a vanished interface has nothing to undo */
	}
	if (strcmp(verb, "forwarding") == 0 && arg != NULL) {
		if (fwd_set(ifn, atoi(arg)) == 0)
			printf("forwarding on %s set back to %s\n", ifn, arg);
		return;	/* a vanished interface has nothing to undo */
	}
	if (rtnl_link_get(r, ifn, &l) != 1)
		return;
	if (strcmp(verb, "address") == 0 && arg != NULL &&
	    (slash = strchr(arg, '/')) != NULL) {
		*slash = '\0';
		family = strchr(arg, ':') != NULL ? AF_INET6 : AF_INET;
		if (inet_pton(family, arg, in) == 1 && rtnl_addr_del(r,
		    l.index, family, in, atoi(slash + 1)) == 0)
			printf("removed %s/%s from %s\n", arg, slash + 1, ifn);
	} else if (strcmp(verb, "bridge") == 0) {
		if (rtnl_link_del(r, l.index) == 0)
			printf("deleted bridge %s\n", ifn);
		else {
			log_warn("delete bridge %s", ifn);
			*rc = -1;
		}
	}
}

/* A running gatewayd would put it all back on its next reload. */
static bool
daemon_answers(const char *sock)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, rc;

	if (strlen(sock) >= sizeof(sun.sun_path) ||
	    (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return false;
	memcpy(sun.sun_path, sock, strlen(sock) + 1);
	rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	close(fd);
	return rc == 0;
}

int
net_teardown(const struct moat_config *cfg, const char *sock)
{
	char *path, **lines = NULL, buf[256];
	size_t n = 0;
	struct rtnl *r;
	FILE *fp;
	int rc = 0;

	if (daemon_answers(sock)) {
		log_warnx("gatewayd is running (%s answers): stop it first, "
		    "or it sets the network up again on its next reload", sock);
		return -1;
	}
	path = undo_path(cfg);
	if ((fp = fopen(path, "re")) == NULL) {
		printf("nothing to undo: %s is absent (gatewayd changed no "
		    "network here)\n", path);
		free(path);
		return 0;
	}
	while (fgets(buf, sizeof(buf), fp) != NULL) {
		lines = xreallocarray(lines, n + 1, sizeof(*lines));
		lines[n++] = xstrdup(buf);
	}
	fclose(fp);
	if ((r = rtnl_open()) == NULL) {
		log_warn("rtnetlink");
		rc = -1;
	}
	/* The proxy entries for guests' addresses, recorded nowhere: the
	 * configuration's /64 says which are ours. */
	if (r != NULL && cfg->gw.ipv6) {
		struct rtnl_link l;
		size_t removed = 0;

		if (rtnl_link_get(r, cfg->gw.bridge, &l) == 1 &&
		    ndproxy_prune(r, l.index, &cfg->gw.ipv6_network, NULL,
		    &removed) == 0 && removed > 0)
			printf("removed %zu neighbour proxy entries from %s\n",
			    removed, cfg->gw.bridge);
	}
	while (n > 0) {		/* newest change first */
		if (r != NULL)
			undo_line(r, lines[n - 1], &rc);
		free(lines[--n]);
	}
	rtnl_close(r);
	if (rc == 0 && unlink(path) == -1)
		log_warn("%s", path);
	free(lines);
	free(path);
	return rc;
}

/* The network after the policy: forwarding is never on unfiltered. */
static int
network_start(struct gw *gw)
{
	net_walk(gw->cfg, true, &network_of(gw)->net);
	net_log(&network_of(gw)->net);
	return 0;
}

/* After a change of the files: the bridge, addresses and forwarding as
 * the new configuration has them. */
static void
network_on_commit(struct gw *gw, const struct gw_commit *c)
{
	if (!c->file_changed)
		return;
	net_walk(c->new, true, &network_of(gw)->net);
	net_log(&network_of(gw)->net);
}

const struct gw_module network_module = {
	.on_commit = network_on_commit,
	.name = "network",
	.size = sizeof(struct gw_network),
	.start = network_start,
};
