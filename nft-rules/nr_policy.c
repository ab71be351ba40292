/*
 * nr_policy.c -- the packet policy as nftables objects.
 *
 * inet moat (the gateway, routed traffic)
 *   raw_pre   prerouting/raw: sandbox-network sources only from the
 *             bridge, only sandbox-network sources on the bridge, no IPv6;
 *             on a separate box "the bridge" is every sandbox-side
 *             interface (set sb_ifs: the bridge and the hosts' trunks),
 *             and a sandbox with a trunk only from that trunk; guests'
 *             DNS to the gateway accepted untracked right after the
 *             source checks (the DNS fast path, also first in input and
 *             output: dns_fast_pre)
 *   nat_pre   prerouting/dstnat: tcp 80/443 of open and allowlist guests
 *             to public addresses -> the proxy (when intercept is on)
 *   input     guests reach the gateway host only on DNS and the proxy
 *             port of its sandbox-side address; every other local address
 *             and port is refused (the input hook sees them all)
 *   forward   guests: conntrack, no hairpin back into the bridge, DNS/DoT
 *             only via the gateway, exceptions, private ranges refused,
 *             then one lookup in the "sandboxes" verdict map (source
 *             address -> accept / allowlist chain / refusal); towards
 *             guests only replies
 *   nat_post  masquerade out of the uplink (snat to gateway.ha.uplink_address
 *             when a pair shares one)
 *   acct_local output: what the gateway host itself sends each guest;
 *             with the end of raw_pre (what guests send), rules in
 *             guest_in and guest_fwd (connections they open) and in
 *             to_guest (what is forwarded to them), per-sandbox traffic,
 *             kept in the counters of four sets' elements keyed by guest
 *             address
 *   output    packets of the proxy's and dnsd's users: the proxy never
 *             reaches the host, the sandbox network or a private range
 *             (but exceptions), nor IPv6 unless gateway.ipv6 (then never
 *             a private or host-network one); dnsd only its upstreams
 *             on 53;
 *             new connections of the host's own users to guests only
 *             as gateway.host_access allows (root, owners to their own);
 *             with fast refusals, ICMP errors to anywhere but the sandbox
 *             side held to the kernel's default limits (icmp_out)
 * bridge moat (the guests' ports, layer 2)
 *   prerouting  (first: guests' DNS to the gateway, accepted by the
 *               anti-spoofing lookup, the DNS fast path) a guest port
 *               may send only IPv4 with its own MAC and address and
 *               ARP that says the same; no DHCP server replies, no
 *               IPv6 (hence no router advertisements); any
 *               other port may not claim a sandbox-network address
 *   forward     nothing is bridged from or to a guest port (port
 *               isolation enforced here too); with --host-only the
 *               trunk may reach guest ports, but with no sandbox-network
 *               source other than the gateway's (guests of other hosts)
 *   input       with --host-only: the sandbox network reaches the KVM
 *               host itself only at the gateway's address
 *
 * Per-packet cost does not depend on the number of sandboxes: every
 * per-sandbox decision is one set or map lookup.
 */
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <libnftnl/set.h>

#include <pwd.h>

#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "log.h"
#include "nr_int.h"
#include "ranges.h"

/* <linux/netfilter_bridge.h> clashes with <net/if.h>. */
#define NF_BR_PRE_ROUTING	0
#define NF_BR_LOCAL_IN		1
#define NF_BR_FORWARD		2

static const struct nftr_reason reasons[] = {
	{ "host", "inet", true, "to the gateway host other than DNS or proxy" },
	{ "guest", "inet", true, "to another guest through the gateway" },
	{ "dns", "inet", true, "DNS or DoT to a resolver other than the gateway" },
	{ "private", "inet", true, "to a private or non-public address" },
	{ "none", "inet", true, "egress \"none\": nothing beyond the gateway" },
	{ "allowlist", "inet", true, "not an address an allowed name resolved to" },
	{ "unknown", "inet", true, "source is not a configured sandbox" },
	{ "egress", "inet", true, "the proxy or dnsd towards what no guest "
	    "may reach" },
	{ "hostuser", "inet", true, "new connection from a host user to a "
	    "guest that gateway.host_access does not allow" },
	{ "spoof", "inet", false, "sandbox-network source on the wrong side" },
	{ "ipv6", "inet", false, "IPv6 from a guest" },
	{ "inbound", "inet", false, "new connection towards a guest" },
	{ "invalid", "inet", false, "packet conntrack cannot place" },
	{ "dnsreply", "inet", false, "UDP from port 53 to a guest, not sent "
	    "by dnsd" },
	{ "outside", "inet", true, "the guests' DNS or proxy from outside the "
	    "sandbox network" },
	{ "svcreply", "inet", false, "TCP from the proxy's port or port 53 "
	    "to a guest, not sent by the proxy or dnsd" },
	{ "budget", "inet", true, "egress budget spent: no new flow until "
	    "the window ends" },
	{ "spoof", "bridge", false, "frame with a MAC or address not the port's" },
	{ "ipv6", "bridge", false, "IPv6 from a guest port (includes RAs)" },
	{ "dhcp", "bridge", false, "DHCP server reply from a guest port" },
	{ "ra", "bridge", false, "IPv6 router advertisement, redirect or "
	    "DHCPv6 server packet from a guest port (with gateway.ipv6)" },
	{ "guest", "bridge", false, "frame bridged between guest ports" },
	{ "local", "bridge", false, "sandbox network to the KVM host itself" },
};

const struct nftr_reason *
nftr_reasons(size_t *n)
{
	*n = sizeof(reasons) / sizeof(reasons[0]);
	return reasons;
}

struct build {
	const struct moat_config *cfg;
	const struct nftr_opts	*opts;
	struct nftr_ruleset	*rs;
	char			*err;
	size_t			 errlen;
};

static void v6_nd_in(struct nr_table *, struct nr_chain *);
static void v6_guest_in(const struct moat_gateway *, struct nr_table *,
	    struct nr_chain *);
static void v6_guest_fwd(struct nr_table *, struct nr_chain *);
static void v6_proxy_in(struct build *, struct nr_table *, struct nr_chain *);

/*
 * Sets that hold one element per sandbox.  For an incremental updater
 * (gatewayd) they are not "constant": the kernel refuses to change the
 * elements of a constant set that a rule uses, so adding one sandbox
 * would mean rebuilding every sandbox's entries.
 */
static uint32_t
per_sandbox(const struct build *b, uint32_t flags)
{
	return b->opts->incremental ? flags & ~(uint32_t)NFT_SET_CONSTANT :
	    flags;
}

static const char *
per_sandbox_decl(const struct build *b, const char *decl)
{
	static const char cst[] = " flags constant;";
	static char buf[128];
	const char *c = strstr(decl, cst);

	if (!b->opts->incremental || c == NULL)
		return decl;
	snprintf(buf, sizeof(buf), "%.*s%s", (int)(c - decl), decl,
	    c + sizeof(cst) - 1);
	return buf;
}

/* Such a set, marked so: with "constant" or without it, it is the
 * policy, and verify accepts both. */
static struct nr_set *
sandbox_set(const struct build *b, struct nr_table *t, const char *name,
    uint32_t keytype, uint32_t keylen, uint32_t flags, const char *decl)
{
	struct nr_set *s = model_set(t, name, keytype, keylen,
	    per_sandbox(b, flags), per_sandbox_decl(b, decl));

	s->per_sandbox = true;
	return s;
}

/* Characters nft(8) accepts in an identifier after our prefixes. */
static bool
name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 200)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

int
nftr_set_name(const char *sandbox, char *buf, size_t len)
{
	int n;

	if (!name_ok(sandbox))
		return -1;
	n = snprintf(buf, len, "%s%s", NFTR_ALLOW_PREFIX, sandbox);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int
nftr_ports_set_name(const char *sandbox, char *buf, size_t len)
{
	int n;

	if (!name_ok(sandbox))
		return -1;
	n = snprintf(buf, len, "%s%s", NFTR_ALLOWP_PREFIX, sandbox);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int
nftr_set6_name(const char *sandbox, bool ports, char *buf, size_t len)
{
	int n;

	if (!name_ok(sandbox))
		return -1;
	n = snprintf(buf, len, "%s%s", ports ? NFTR_ALLOWP6_PREFIX :
	    NFTR_ALLOW6_PREFIX, sandbox);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* refuse_<reason> or drop_<reason>: count, log, refuse. */
static void
reason_chains(struct nr_table *t, uint16_t group, bool v6)
{
	struct nr_chain *c;
	struct nr_rb rb;
	char name[64], prefix[64];
	size_t i;

	for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
		const struct nftr_reason *r = &reasons[i];

		if (strcmp(r->family, t->fname) != 0 ||
		    (!v6 && strcmp(r->name, "ra") == 0))
			continue;
		model_counter(t, r->name);
		snprintf(name, sizeof(name), "%s_%s",
		    r->reject ? "refuse" : "drop", r->name);
		snprintf(prefix, sizeof(prefix), NFTR_LOG_PREFIX "%s ",
		    r->name);
		c = model_chain(t, name, NULL, 0, 0, NULL);
		rb_begin(&rb, t, c);
		rb_counter(&rb, r->name);
		rb_log(&rb, prefix, group);
		if (r->reject)
			rb_reject(&rb);
		else
			rb_verdict(&rb, NF_DROP, NULL);
		rb_end(&rb);
	}
}

static const char *
reason_chain(const char *fname, const char *reason)
{
	static char buf[64];
	size_t i;

	for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (strcmp(reasons[i].family, fname) == 0 &&
		    strcmp(reasons[i].name, reason) == 0)
			break;
	if (i == sizeof(reasons) / sizeof(reasons[0]))
		fatalx("%s: no reason %s/%s", __func__, fname, reason);
	snprintf(buf, sizeof(buf), "%s_%s",
	    reasons[i].reject ? "refuse" : "drop", reason);
	return buf;
}

/* ---- private ranges as interval sets -------------------------------- */

/* a += 1, big-endian; returns true on wrap-around past all ones. */
static bool
addr_inc(uint8_t *a, size_t len)
{
	size_t i = len;

	while (i-- > 0)
		if (++a[i] != 0)
			return false;
	return true;
}

/* a -= 1, big-endian (never called on all zeros). */
static void
addr_dec(uint8_t *a, size_t len)
{
	size_t i = len;

	while (i-- > 0)
		if (a[i]-- != 0)
			return;
}

/*
 * NAT64's well-known prefix 64:ff9b::/96 carries an IPv4 address in its
 * last 32 bits, and is judged by it: in private6 the /96 is replaced by
 * the private IPv4 intervals (private4's) mapped into it, so that
 * 64:ff9b::10.0.0.1 is refused as 10.0.0.1 is, and 64:ff9b::<a public
 * IPv4> is public.  One set, one lookup, as for every other range.
 */
static const uint8_t nat64_lo[16] = { 0, 0x64, 0xff, 0x9b };
static const uint8_t nat64_hi[16] = { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0,
    0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff };

static int
interval_cmp(const void *x, const void *y)
{
	return memcmp(((const struct moat_interval *)x)->lo.a,
	    ((const struct moat_interval *)y)->lo.a, 16);
}

/* The private IPv6 intervals with 64:ff9b::/96 judged by its IPv4 part,
 * sorted, in *out (freed by the caller); *n is updated. */
static const struct moat_interval *
nat64_private(const struct moat_config *cfg, const struct moat_interval *iv,
    size_t *n, struct moat_interval **out)
{
	const struct moat_interval *v4;
	struct moat_interval *o;
	size_t i, k = 0, n4;

	v4 = rangeset_intervals(cfg->private, AF_INET, &n4);
	o = xcalloc(*n * 2 + n4 + 1, sizeof(*o));
	for (i = 0; i < *n; i++) {
		struct moat_interval x = iv[i];

		if (memcmp(x.hi.a, nat64_lo, 16) < 0 ||
		    memcmp(x.lo.a, nat64_hi, 16) > 0) {
			o[k++] = x;
			continue;
		}
		if (memcmp(x.lo.a, nat64_lo, 16) < 0) {
			o[k] = x;
			memcpy(o[k].hi.a, nat64_lo, 16);
			addr_dec(o[k++].hi.a, 16);
		}
		if (memcmp(x.hi.a, nat64_hi, 16) > 0) {
			o[k] = x;
			memcpy(o[k].lo.a, nat64_hi, 16);
			addr_inc(o[k++].lo.a, 16);
		}
	}
	for (i = 0; i < n4; i++, k++) {
		o[k].lo.family = o[k].hi.family = AF_INET6;
		memcpy(o[k].lo.a, nat64_lo, 12);
		memcpy(o[k].hi.a, nat64_lo, 12);
		memcpy(o[k].lo.a + 12, v4[i].lo.a, 4);
		memcpy(o[k].hi.a + 12, v4[i].hi.a, 4);
	}
	qsort(o, k, sizeof(*o), interval_cmp);
	*n = k;
	*out = o;
	return o;
}

static void
private_set(struct nr_table *t, const struct moat_config *cfg, int af,
    const char *name)
{
	const struct moat_interval *iv;
	struct nr_set *s;
	size_t n, i, j, len = af == AF_INET ? 4 : 16;
	struct moat_interval *cut = NULL;
	char lo[64], hi[64], text[140];
	uint8_t end[16];

	s = model_set(t, name, af == AF_INET ? NR_TYPE_IPADDR : NR_TYPE_IP6ADDR,
	    (uint32_t)len, NFT_SET_INTERVAL | NFT_SET_CONSTANT,
	    af == AF_INET ? "type ipv4_addr; flags constant, interval;" :
	    "type ipv6_addr; flags constant, interval;");
	iv = rangeset_intervals(cfg->private, af, &n);
	if (af == AF_INET6)
		iv = nat64_private(cfg, iv, &n, &cut);
	for (i = 0; i < n; i = j) {
		/* Merge touching intervals: the kernel wants one start and
		 * one end per range, never an end equal to the next start. */
		memcpy(end, iv[i].hi.a, len);
		for (j = i + 1; j < n; j++) {
			uint8_t next[16];

			memcpy(next, end, len);
			if (addr_inc(next, len) ||
			    memcmp(next, iv[j].lo.a, len) != 0)
				break;
			memcpy(end, iv[j].hi.a, len);
		}
		addr_fmt(&iv[i].lo, lo, sizeof(lo));
		{
			struct moat_addr h = iv[i].lo;

			memcpy(h.a, end, len);
			addr_fmt(&h, hi, sizeof(hi));
		}
		if (strcmp(lo, hi) == 0)
			snprintf(text, sizeof(text), "%s", lo);
		else
			snprintf(text, sizeof(text), "%s-%s", lo, hi);
		model_set_elem(s, iv[i].lo.a, (uint32_t)len, 0, 0, NULL, text);
		if (!addr_inc(end, len))
			model_set_elem(s, end, (uint32_t)len,
			    NFT_SET_ELEM_INTERVAL_END, 0, NULL, NULL);
	}
	free(cut);
}

/* ---- inet moat ------------------------------------------------------ */

static void
fmt_ip(const struct moat_addr *a, char *buf, size_t len)
{
	addr_fmt(a, buf, len);
}

/* An allowed name may share its address with every other site of a CDN:
 * the address opens only the sandbox's allow_ports.  daddr: F_IP_DADDR
 * for allow_NAME, F_IP6_DADDR for allow6_NAME. */
static void
allow_port_rules(struct nr_table *t, struct nr_chain *c,
    const struct moat_sandbox *sb, const char *setname, enum nr_field daddr)
{
	struct nr_rb rb;
	size_t i;

	for (i = 0; i < sb->nallow_ports; i++) {
		rb_begin(&rb, t, c);
		rb_lookup(&rb, (enum nr_field[]){ daddr }, 1, setname,
		    false);
		rb_cmp_port(&rb, sb->allow_ports[i].proto == IPPROTO_TCP ?
		    F_TCP_DPORT : F_UDP_DPORT, sb->allow_ports[i].port);
		rb_verdict(&rb, NF_ACCEPT, NULL);
		rb_end(&rb);
	}
}

/* A name with ports of its own ("git.example.com:tcp/22") opens its
 * addresses for exactly those: elements address . protocol . port. */
static void
named_port_rule(struct nr_table *t, struct nr_chain *c,
    const struct moat_sandbox *sb, bool v6)
{
	enum nr_field key[] = { v6 ? F_IP6_DADDR : F_IP_DADDR, F_L4PROTO,
	    F_TH_DPORT };
	char setname[256];
	struct nr_rb rb;

	if (v6) {
		nftr_set6_name(sb->name, true, setname, sizeof(setname));
		model_set(t, setname, NR_CONCAT(NR_CONCAT(NR_TYPE_IP6ADDR,
		    NR_TYPE_INET_PROTO), NR_TYPE_INET_SERVICE), 24,
		    NFT_SET_TIMEOUT, "type ipv6_addr . inet_proto . "
		    "inet_service; flags timeout;");
	} else {
		nftr_ports_set_name(sb->name, setname, sizeof(setname));
		model_set(t, setname, NR_CONCAT(NR_CONCAT(NR_TYPE_IPADDR,
		    NR_TYPE_INET_PROTO), NR_TYPE_INET_SERVICE), 12,
		    NFT_SET_TIMEOUT, "type ipv4_addr . inet_proto . "
		    "inet_service; flags timeout;");
	}
	rb_begin(&rb, t, c);
	rb_lookup(&rb, key, 3, setname, false);
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
}

/* A sandbox with IPv6 (config_sandbox_addr6) has the same sets for the
 * AAAA answers of its allowed names, in the same chain: allow6_NAME, and
 * allowp6_NAME where some entry has ports of its own. */
static void
allow6_rules(const struct build *b, struct nr_table *t, struct nr_chain *c,
    const struct moat_sandbox *sb)
{
	char setname[256];
	struct moat_addr a6;

	if (!config_sandbox_addr6(b->cfg, sb, &a6))
		return;
	nftr_set6_name(sb->name, false, setname, sizeof(setname));
	model_set(t, setname, NR_TYPE_IP6ADDR, 16, NFT_SET_TIMEOUT,
	    "type ipv6_addr; flags timeout;");
	allow_port_rules(t, c, sb, setname, F_IP6_DADDR);
	if (config_allow_has_ports(&sb->allow))
		named_port_rule(t, c, sb, true);
}

static void
sandbox_map(struct build *b, struct nr_table *t)
{
	const struct moat_config *cfg = b->cfg;
	struct nr_set *map, *icpt;
	char setname[256], chain[256], ip[64], text[600];
	size_t i;

	icpt = sandbox_set(b, t, "intercept", NR_TYPE_IPADDR, 4,
	    NFT_SET_CONSTANT, "type ipv4_addr; flags constant;");
	map = sandbox_set(b, t, "sandboxes", NR_TYPE_IPADDR, 4,
	    NFT_SET_MAP | NFT_SET_CONSTANT, "type ipv4_addr : verdict; flags constant;");
	for (i = 0; i < cfg->nsandboxes; i++) {
		const struct moat_sandbox *sb = &cfg->sandboxes[i];
		struct nr_chain *c;
		struct nr_rb rb;

		fmt_ip(&sb->address, ip, sizeof(ip));
		switch (sb->egress) {
		case EGRESS_OPEN:
			snprintf(text, sizeof(text), "%s : accept", ip);
			model_set_elem(map, sb->address.a, 4, 0, NF_ACCEPT,
			    NULL, text);
			break;
		case EGRESS_NONE:
			snprintf(text, sizeof(text), "%s : goto %s", ip,
			    reason_chain("inet", "none"));
			model_set_elem(map, sb->address.a, 4, 0, NFT_GOTO,
			    reason_chain("inet", "none"), text);
			break;
		case EGRESS_ALLOWLIST:
			nftr_set_name(sb->name, setname, sizeof(setname));
			snprintf(chain, sizeof(chain), "sb_%s", sb->name);
			model_set(t, setname, NR_TYPE_IPADDR, 4,
			    NFT_SET_TIMEOUT, "type ipv4_addr; flags timeout;");
			c = model_chain(t, chain, NULL, 0, 0, NULL);
			allow_port_rules(t, c, sb, setname, F_IP_DADDR);
			/* Only where some name has ports of its own: the
			 * set and rule cost every other sandbox nothing. */
			if (config_allow_has_ports(&sb->allow))
				named_port_rule(t, c, sb, false);
			allow6_rules(b, t, c, sb);
			rb_begin(&rb, t, c);
			rb_verdict(&rb, NFT_GOTO,
			    reason_chain("inet", "allowlist"));
			rb_end(&rb);
			snprintf(text, sizeof(text), "%s : goto %s", ip, chain);
			model_set_elem(map, sb->address.a, 4, 0, NFT_GOTO,
			    chain, text);
			break;
		}
		if (sb->egress != EGRESS_NONE)
			model_set_elem(icpt, sb->address.a, 4, 0, 0, NULL, ip);
	}
}

/*
 * A separate box may have several sandbox-side interfaces: gateway.bridge
 * plus each KVM host's trunk (hosts[].trunk, a sandbox's trunk).  With
 * more than one, every "from or to the sandbox side" match is one lookup
 * in the set sb_ifs; with one it stays the plain iifname comparison.
 */
static bool
if_listed(char (*v)[IFNAMSIZ], size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], name) == 0)
			return true;
	return false;
}

/* The sandbox-side interfaces, bridge first, each once; returns the count. */
static size_t
sb_ifnames(const struct build *b, char (**out)[IFNAMSIZ])
{
	const struct moat_config *cfg = b->cfg;
	char (*v)[IFNAMSIZ] = xcalloc(1 + cfg->nhosts + cfg->nsandboxes,
	    IFNAMSIZ);
	size_t i, n = 0;

	snprintf(v[n++], IFNAMSIZ, "%s", cfg->gw.bridge);
	for (i = 0; i < cfg->nhosts; i++)
		if (cfg->hosts[i].trunk[0] &&
		    !if_listed(v, n, cfg->hosts[i].trunk))
			snprintf(v[n++], IFNAMSIZ, "%s", cfg->hosts[i].trunk);
	for (i = 0; i < cfg->nsandboxes; i++)
		if (cfg->sandboxes[i].trunk[0] &&
		    !if_listed(v, n, cfg->sandboxes[i].trunk))
			snprintf(v[n++], IFNAMSIZ, "%s",
			    cfg->sandboxes[i].trunk);
	*out = v;
	return n;
}

/* Trunks are in play: the box has hosts, or a sandbox names a trunk. */
static bool
has_trunks(const struct build *b)
{
	size_t i;

	if (b->cfg->nhosts > 0)
		return true;
	for (i = 0; i < b->cfg->nsandboxes; i++)
		if (b->cfg->sandboxes[i].trunk[0])
			return true;
	return false;
}

/* Match packets arriving on (F_IIFNAME) or leaving by (F_OIFNAME) the
 * sandbox side, or (neq) anywhere else. */
static void
rb_sandbox_side(const struct build *b, struct nr_rb *rb, enum nr_field f,
    bool neq)
{
	if (has_trunks(b))
		rb_lookup(rb, &f, 1, "sb_ifs", neq);
	else
		rb_cmp_str(rb, f, neq, b->cfg->gw.bridge);
}

/* sb_ifs; and for each sandbox with a trunk, its address in "trunked"
 * and (address . trunk) in "sb_trunk": raw_pre refuses a trunked
 * address that arrives on any other interface, so a KVM host cannot
 * send as another host's guests. */
static void
trunk_sets(struct build *b, struct nr_table *t)
{
	struct nr_set *ifs, *trunked, *pairs;
	char (*v)[IFNAMSIZ], text[128], a[64];
	uint8_t key[20];
	size_t i, n;

	if (!has_trunks(b))
		return;
	ifs = sandbox_set(b, t, "sb_ifs", NR_TYPE_IFNAME, 16,
	    NFT_SET_CONSTANT, "type ifname; flags constant;");
	n = sb_ifnames(b, &v);
	for (i = 0; i < n; i++) {
		memset(key, 0, sizeof(key));
		memcpy(key, v[i], strnlen(v[i], IFNAMSIZ - 1));
		snprintf(text, sizeof(text), "\"%s\"", v[i]);
		model_set_elem(ifs, key, 16, 0, 0, NULL, text);
	}
	free(v);
	trunked = sandbox_set(b, t, "trunked", NR_TYPE_IPADDR, 4,
	    NFT_SET_CONSTANT, "type ipv4_addr; flags constant;");
	pairs = sandbox_set(b, t, "sb_trunk", NR_CONCAT(NR_TYPE_IPADDR,
	    NR_TYPE_IFNAME), 20, NFT_SET_CONSTANT,
	    "type ipv4_addr . ifname; flags constant;");
	for (i = 0; i < b->cfg->nsandboxes; i++) {
		const struct moat_sandbox *sb = &b->cfg->sandboxes[i];

		if (sb->trunk[0] == '\0')
			continue;
		fmt_ip(&sb->address, a, sizeof(a));
		model_set_elem(trunked, sb->address.a, 4, 0, 0, NULL, a);
		memset(key, 0, sizeof(key));
		memcpy(key, sb->address.a, 4);
		memcpy(key + 4, sb->trunk, strnlen(sb->trunk, IFNAMSIZ - 1));
		snprintf(text, sizeof(text), "%s . \"%s\"", a, sb->trunk);
		model_set_elem(pairs, key, 20, 0, 0, NULL, text);
	}
}

/* raw_pre: a trunked sandbox's address only from its own trunk, and from
 * a trunk only trunked addresses: a KVM host cannot send as another
 * host's guest, nor as a sandbox on the box's own bridge. */
static void
trunk_rule(struct build *b, struct nr_table *t, struct nr_chain *c)
{
	static const enum nr_field k[] = { F_IP_SADDR, F_IIFNAME };
	struct nr_rb rb;

	if (!has_trunks(b))
		return;
	rb_begin(&rb, t, c);
	rb_lookup(&rb, k, 1, "trunked", false);
	rb_lookup(&rb, k, 2, "sb_trunk", true);
	rb_verdict(&rb, NFT_GOTO, reason_chain("inet", "spoof"));
	rb_end(&rb);
	rb_begin(&rb, t, c);
	rb_lookup(&rb, &k[1], 1, "sb_ifs", false);
	rb_cmp_str(&rb, F_IIFNAME, true, b->cfg->gw.bridge);
	rb_lookup(&rb, k, 1, "trunked", true);
	rb_verdict(&rb, NFT_GOTO, reason_chain("inet", "spoof"));
	rb_end(&rb);
}

/* A rule: [iifname BR] <match on dport> goto refuse/accept. */
static void
port_rule(struct nr_table *t, struct nr_chain *c, const struct moat_addr *dst,
    enum nr_field port_field, uint16_t port, int verdict, const char *to)
{
	struct nr_rb rb;

	rb_begin(&rb, t, c);
	if (dst) {
		struct moat_prefix p = { .addr = *dst, .plen = 32 };

		rb_cmp_prefix(&rb, F_IP_DADDR, false, &p);
	}
	rb_cmp_port(&rb, port_field, port);
	rb_verdict(&rb, verdict, to);
	rb_end(&rb);
}

static void
simple_rule(struct nr_table *t, struct nr_chain *c, int verdict,
    const char *to)
{
	struct nr_rb rb;

	rb_begin(&rb, t, c);
	rb_verdict(&rb, verdict, to);
	rb_end(&rb);
}

static void
ct_rule(struct nr_table *t, struct nr_chain *c, uint32_t mask,
    const char *text, int verdict, const char *to)
{
	struct nr_rb rb;

	rb_begin(&rb, t, c);
	rb_ct_state(&rb, mask, text);
	rb_verdict(&rb, verdict, to);
	rb_end(&rb);
}

#define CT_EST_REL	(NF_CT_STATE_BIT(IP_CT_ESTABLISHED) | \
			 NF_CT_STATE_BIT(IP_CT_RELATED))

/*
 * Traffic accounting: per sandbox, the bytes and packets its guest sends
 * and receives, and the connections opened either way.  Each is the
 * counter of the guest's element in one of four sets, updated by the
 * lookup that finds it: a packet costs at most one lookup per direction
 * whatever the number of sandboxes, and adding a sandbox adds four
 * elements and touches no other's counters.  What a guest sends is
 * counted at the end of raw_pre (every packet that passed the source
 * checks; the DNS fast path's rule counts the queries it accepts), in a
 * chain every packet walks anyway; the connections it opens
 * in guest_in and guest_fwd right after established traffic is accepted,
 * so that only packets that may open one are looked at: those whose
 * conntrack entry is not confirmed yet, the first of each connection (a
 * retransmitted SYN or a UDP flow's next datagrams find it confirmed; a
 * refused attempt's never is, so each try counts).  What a guest
 * receives, and connections towards it: forwarded, at the head of
 * to_guest (replies that masquerade translated back carry its address
 * there already), and from the gateway host itself (the proxy, dnsd, an
 * owner's ssh) in acct_local at output.  So a packet a guest sends to
 * the internet meets one accounting rule (in raw_pre), none looking for
 * a receiver.  The guest's side is counted, not the uplink: traffic
 * through the proxy and dnsd counts, and so do refused packets (also in
 * their reason's counter).
 */
enum { ACCT_OUT, ACCT_NEW_OUT, ACCT_IN, ACCT_NEW_IN };

static const struct {
	const char	*set, *set6;
	enum nr_field	 f, f6;
	bool		 new;
} acct[] = {
	[ACCT_OUT] = { NFTR_ACCT_OUT, NFTR_ACCT6_OUT, F_IP_SADDR, F_IP6_SADDR,
	    false },
	[ACCT_NEW_OUT] = { NFTR_ACCT_NEW_OUT, NFTR_ACCT6_NEW_OUT, F_IP_SADDR,
	    F_IP6_SADDR, true },
	[ACCT_IN] = { NFTR_ACCT_IN, NFTR_ACCT6_IN, F_IP_DADDR, F_IP6_DADDR,
	    false },
	[ACCT_NEW_IN] = { NFTR_ACCT_NEW_IN, NFTR_ACCT6_NEW_IN, F_IP_DADDR,
	    F_IP6_DADDR, true },
};

/* With gateway.ipv6, the same four sets for the guests' IPv6 addresses
 * (acct6_*): gatewayd adds a guest's two elements up, so a sandbox's
 * IPv6 counts towards what it sent as its IPv4 does. */
static void
acct6_sets(struct build *b, struct nr_table *t)
{
	struct nr_set *s;
	struct moat_addr a6;
	char ip[64];
	size_t i, k;

	for (k = 0; k < sizeof(acct) / sizeof(acct[0]); k++) {
		s = sandbox_set(b, t, acct[k].set6, NR_TYPE_IP6ADDR, 16,
		    NFT_SET_CONSTANT, "type ipv6_addr; flags constant; counter;");
		model_set_counter(s);
		for (i = 0; i < b->cfg->nsandboxes; i++) {
			if (!config_sandbox_addr6(b->cfg, &b->cfg->sandboxes[i],
			    &a6))
				continue;
			fmt_ip(&a6, ip, sizeof(ip));
			model_set_elem(s, a6.a, 16, 0, 0, NULL, ip);
		}
	}
}

static void
acct_sets(struct build *b, struct nr_table *t)
{
	struct nr_set *s;
	char ip[64];
	size_t i, k;

	for (k = 0; k < sizeof(acct) / sizeof(acct[0]); k++) {
		s = sandbox_set(b, t, acct[k].set, NR_TYPE_IPADDR, 4,
		    NFT_SET_CONSTANT, "type ipv4_addr; flags constant; counter;");
		model_set_counter(s);
		for (i = 0; i < b->cfg->nsandboxes; i++) {
			const struct moat_sandbox *sb = &b->cfg->sandboxes[i];

			fmt_ip(&sb->address, ip, sizeof(ip));
			model_set_elem(s, sb->address.a, 4, 0, 0, NULL, ip);
		}
	}
	if (b->cfg->gw.ipv6)
		acct6_sets(b, t);
}

static void
acct_lookup(struct nr_table *t, struct nr_chain *c, int k, bool v6)
{
	struct nr_rb rb;

	rb_begin(&rb, t, c);
	if (acct[k].new)
		rb_ct_unconfirmed(&rb);
	rb_lookup(&rb, v6 ? &acct[k].f6 : &acct[k].f, 1,
	    v6 ? acct[k].set6 : acct[k].set, false);
	rb_end(&rb);
}

/* Count the packet in its guest's element of acct[k], if it has one; no
 * verdict, the chain goes on.  Both families where the guests have IPv6
 * (outgoing IPv6 is counted in raw_pre by acct6_out's own rule). */
static void
acct_rule(struct nr_table *t, struct nr_chain *c, int k)
{
	acct_lookup(t, c, k, false);
	if (k != ACCT_OUT && model_find_set(t, acct[k].set6) != NULL)
		acct_lookup(t, c, k, true);
}

static void
acct_local(struct nr_table *t)
{
	struct nr_chain *c = model_chain(t, "acct_local", "filter",
	    NF_INET_LOCAL_OUT, 0, "filter");

	acct_rule(t, c, ACCT_IN);
	acct_rule(t, c, ACCT_NEW_IN);
}

/*
 * Egress budgets (egress_bytes_per_day): gatewayd counts what each guest
 * sends in acct_out and, once a sandbox has spent its budget, adds its
 * address to budget_spent with a timeout that ends with the budget's
 * window.  Right after established traffic is accepted in guest_in and
 * guest_fwd, a guest in the set is refused: every new connection, and
 * each DNS query (untracked, so never "established").  Flows admitted
 * before go on.  Only packets that may open a flow meet the lookup, and
 * only when some sandbox has a budget: established traffic pays nothing.
 */
static void
budget_set(struct build *b, struct nr_table *t)
{
	if (!config_any_egress_budget(b->cfg))
		return;
	model_set(t, NFTR_BUDGET_SPENT, NR_TYPE_IPADDR, 4,
	    NFT_SET_TIMEOUT, "type ipv4_addr; flags timeout;");
	/* A spent guest's IPv6 is refused too: IPv6 is no way around it. */
	if (b->cfg->gw.ipv6)
		model_set(t, NFTR_BUDGET_SPENT6, NR_TYPE_IP6ADDR, 16,
		    NFT_SET_TIMEOUT, "type ipv6_addr; flags timeout;");
}

static void
budget_rule(struct nr_table *t, struct nr_chain *c)
{
	static const struct { const char *set; enum nr_field f; } fam[] = {
		{ NFTR_BUDGET_SPENT, F_IP_SADDR },
		{ NFTR_BUDGET_SPENT6, F_IP6_SADDR },
	};
	struct nr_rb rb;
	size_t i;

	for (i = 0; i < sizeof(fam) / sizeof(fam[0]); i++) {
		if (model_find_set(t, fam[i].set) == NULL)
			continue;
		rb_begin(&rb, t, c);
		rb_lookup(&rb, &fam[i].f, 1, fam[i].set, false);
		rb_verdict(&rb, NFT_GOTO, reason_chain("inet", "budget"));
		rb_end(&rb);
	}
}

static void
guest_input(struct build *b, struct nr_table *t)
{
	const struct moat_gateway *gw = &b->cfg->gw;
	struct nr_chain *c = model_chain(t, "guest_in", NULL, 0, 0, NULL);

	ct_rule(t, c, CT_EST_REL, "established,related", NF_ACCEPT, NULL);
	acct_rule(t, c, ACCT_NEW_OUT);
	if (gw->ipv6)
		v6_nd_in(t, c);
	budget_rule(t, c);
	port_rule(t, c, &gw->address, F_UDP_DPORT, 53, NF_ACCEPT, NULL);
	port_rule(t, c, &gw->address, F_TCP_DPORT, 53, NF_ACCEPT, NULL);
	port_rule(t, c, &gw->address, F_TCP_DPORT, gw->proxy_port, NF_ACCEPT,
	    NULL);
	if (gw->ipv6) {
		v6_guest_in(gw, t, c);
		v6_proxy_in(b, t, c);
	}
	/* Nothing else, on any local address: a separate box's registration
	 * endpoint listens on its management network, never for guests. */
	simple_rule(t, c, NFT_GOTO, reason_chain("inet", "host"));
}

/* The sandboxes exception i applies to (admit_exception_applies) as a
 * set exc_<i>; NULL when it applies to none, or is IPv6 (guests have no
 * IPv6), so that no rule is made for it. */
static const char *
exception_set(struct build *b, struct nr_table *t, size_t i)
{
	static char name[32];
	const struct moat_exception *x = &b->cfg->gw.exceptions[i];
	struct nr_set *set = NULL;
	char ip[64];
	size_t k;

	if (x->to.addr.family != AF_INET)
		return NULL;
	snprintf(name, sizeof(name), "exc_%zu", i + 1);
	for (k = 0; k < b->cfg->nsandboxes; k++) {
		const struct moat_sandbox *sb = &b->cfg->sandboxes[k];

		if (!admit_exception_applies(x, sb))
			continue;
		if (set == NULL)
			set = sandbox_set(b, t, name, NR_TYPE_IPADDR, 4,
			    NFT_SET_CONSTANT, "type ipv4_addr; flags constant;");
		addr_fmt(&sb->address, ip, sizeof(ip));
		model_set_elem(set, sb->address.a, 4, 0, 0, NULL, ip);
	}
	return set ? name : NULL;
}

/* One exception's accept rules; src is a set of sources to match, or
 * NULL for any source (the proxy's own packets). */
static void
exception_rule(struct nr_table *t, struct nr_chain *c,
    const struct moat_exception *x, const char *src)
{
	static const struct { int proto; enum nr_field f; } l4[] = {
		{ IPPROTO_TCP, F_TCP_DPORT }, { IPPROTO_UDP, F_UDP_DPORT },
	};
	struct nr_rb rb;
	size_t k, p;

	if (x->proto == 0 && x->nports == 0) {
		rb_begin(&rb, t, c);
		if (src)
			rb_lookup(&rb, (enum nr_field[]){ F_IP_SADDR }, 1, src,
			    false);
		rb_cmp_prefix(&rb, F_IP_DADDR, false, &x->to);
		rb_verdict(&rb, NF_ACCEPT, NULL);
		rb_end(&rb);
		return;
	}
	for (k = 0; k < sizeof(l4) / sizeof(l4[0]); k++) {
		if (x->proto != 0 && x->proto != l4[k].proto)
			continue;
		for (p = 0; p < (x->nports ? x->nports : 1); p++) {
			rb_begin(&rb, t, c);
			if (src)
				rb_lookup(&rb, (enum nr_field[]){ F_IP_SADDR },
				    1, src, false);
			rb_cmp_prefix(&rb, F_IP_DADDR, false, &x->to);
			if (x->nports)
				rb_cmp_port(&rb, l4[k].f, x->ports[p]);
			else
				rb_l4proto(&rb, l4[k].proto);
			rb_verdict(&rb, NF_ACCEPT, NULL);
			rb_end(&rb);
		}
	}
}

/* Exceptions hold only for the sandboxes they apply to: never for
 * egress "none", by default only for open sandboxes. */
static void
exception_rules(struct build *b, struct nr_table *t, struct nr_chain *c)
{
	const struct moat_gateway *gw = &b->cfg->gw;
	const char *set;
	size_t i;

	for (i = 0; i < gw->nexceptions; i++)
		if ((set = exception_set(b, t, i)) != NULL)
			exception_rule(t, c, &gw->exceptions[i], set);
}

static void
guest_forward(struct build *b, struct nr_table *t)
{
	static const struct { enum nr_field f; uint16_t port; } dns[] = {
		{ F_UDP_DPORT, 53 }, { F_TCP_DPORT, 53 },
		{ F_TCP_DPORT, 853 }, { F_UDP_DPORT, 853 },
	};
	struct nr_chain *c = model_chain(t, "guest_fwd", NULL, 0, 0, NULL);
	struct nr_rb rb;
	size_t i;

	ct_rule(t, c, CT_EST_REL, "established,related", NF_ACCEPT, NULL);
	acct_rule(t, c, ACCT_NEW_OUT);
	budget_rule(t, c);
	ct_rule(t, c, NF_CT_STATE_INVALID_BIT, "invalid", NFT_GOTO,
	    reason_chain("inet", "invalid"));
	/* Port isolation stops guest-to-guest frames on the bridge, but
	 * not packets routed back into it through the host. */
	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_OIFNAME, false);
	rb_verdict(&rb, NFT_GOTO, reason_chain("inet", "guest"));
	rb_end(&rb);
	for (i = 0; i < sizeof(dns) / sizeof(dns[0]); i++)
		port_rule(t, c, NULL, dns[i].f, dns[i].port, NFT_GOTO,
		    reason_chain("inet", "dns"));
	exception_rules(b, t, c);
	rb_begin(&rb, t, c);
	rb_lookup(&rb, (enum nr_field[]){ F_IP_DADDR }, 1, "private4", false);
	rb_verdict(&rb, NFT_GOTO, reason_chain("inet", "private"));
	rb_end(&rb);
	rb_begin(&rb, t, c);
	rb_lookup(&rb, (enum nr_field[]){ F_IP6_DADDR }, 1, "private6", false);
	rb_verdict(&rb, NFT_GOTO, reason_chain("inet", "private"));
	rb_end(&rb);
	if (b->cfg->gw.ipv6)
		v6_guest_fwd(t, c);
	rb_begin(&rb, t, c);
	rb_vmap(&rb, F_IP_SADDR, "sandboxes");
	rb_end(&rb);
	simple_rule(t, c, NFT_GOTO, reason_chain("inet", "unknown"));

	c = model_chain(t, "to_guest", NULL, 0, 0, NULL);
	acct_rule(t, c, ACCT_IN);
	acct_rule(t, c, ACCT_NEW_IN);
	ct_rule(t, c, CT_EST_REL, "established,related", NF_ACCEPT, NULL);
	simple_rule(t, c, NFT_GOTO, reason_chain("inet", "inbound"));
}

/*
 * The guests' DNS fast path.  Queries to the gateway's resolver are most
 * of what a guest sends, and every rule a packet meets costs: a query and
 * dnsd's answer meet, in each base chain, the fast-path rule right after
 * the source checks, and that one rule decides what the rules it skips
 * would have decided.  Each one is exact:
 *   bridge   prerouting's first rule: the anti-spoofing lookup itself
 *            (dns_fast_bridge).
 *   raw_pre  from the sandbox side (trunk checks done before), a
 *            sandbox's address to the gateway's address, udp 53: no
 *            conntrack (with dnsd's user, as dns_notrack) and accept.
 *            The spoof and IPv6 rules it skips cannot match such a
 *            packet, and its last lookup, in acct_out, counts it as the
 *            last rule of raw_pre would (last, so that a packet that
 *            fails the rule is not counted twice).
 *   input    untracked, from the sandbox side, to the gateway's address,
 *            udp 53, from a guest whose egress budget is not spent (when
 *            any sandbox has one): accept, as guest_in does for it (its
 *            established-traffic and new-connection rules never match an
 *            untracked packet; its budget rule is the one left out).
 *   output   dnsd's untracked answers from the gateway's address, port
 *            53, to the sandbox network: accept (dns_out's only rule for
 *            them before; every rule ahead of it is for ICMP, TCP or
 *            another user).  Any other process's UDP from port 53 to a
 *            guest still meets the dnsreply drop.
 * Anything else, and DNS from a source that is no sandbox's, takes the
 * rules after them as before.
 */
static void
dns_fast_pre(struct build *b, struct nr_table *t, struct nr_chain *c)
{
	const struct moat_gateway *gw = &b->cfg->gw;
	struct moat_prefix me = { .addr = gw->address, .plen = 32 };
	struct nr_rb rb;

	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_IIFNAME, false);
	rb_cmp_prefix(&rb, F_IP_SADDR, false, &gw->network);
	rb_cmp_prefix(&rb, F_IP_DADDR, false, &me);
	rb_cmp_port(&rb, F_UDP_DPORT, 53);
	rb_lookup(&rb, (enum nr_field[]){ F_IP_SADDR }, 1, acct[ACCT_OUT].set,
	    false);
	if (b->opts->has_dns_uid)
		rb_notrack(&rb);
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
}

static void
dns_fast_in(struct build *b, struct nr_table *t, struct nr_chain *c)
{
	struct moat_prefix me = { .addr = b->cfg->gw.address, .plen = 32 };
	struct nr_rb rb;

	if (!b->opts->has_dns_uid)
		return;
	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_IIFNAME, false);
	rb_cmp_prefix(&rb, F_IP_DADDR, false, &me);
	rb_cmp_port(&rb, F_UDP_DPORT, 53);
	rb_ct_state(&rb, NF_CT_STATE_UNTRACKED_BIT, "untracked");
	/* A guest whose egress budget is spent takes the long way, to
	 * guest_in's budget rule: its queries are refused too. */
	if (model_find_set(t, NFTR_BUDGET_SPENT) != NULL)
		rb_lookup(&rb, (enum nr_field[]){ F_IP_SADDR }, 1,
		    NFTR_BUDGET_SPENT, true);
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
}

static void
dns_fast_out(struct build *b, struct nr_table *t, struct nr_chain *c)
{
	const struct moat_gateway *gw = &b->cfg->gw;
	struct moat_prefix me = { .addr = gw->address, .plen = 32 };
	struct nr_rb rb;

	rb_begin(&rb, t, c);
	rb_skuid(&rb, b->opts->dns_uid);
	rb_sandbox_side(b, &rb, F_OIFNAME, false);
	rb_cmp_prefix(&rb, F_IP_SADDR, false, &me);
	rb_cmp_prefix(&rb, F_IP_DADDR, false, &gw->network);
	rb_cmp_port(&rb, F_UDP_SPORT, 53);
	rb_ct_state(&rb, NF_CT_STATE_UNTRACKED_BIT, "untracked");
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
}

/*
 * Guests' UDP queries to the gateway's resolver and dnsd's replies to them
 * bypass conntrack: a guest asks from a new port each time, and an entry
 * made and looked up per query costs more than the answer.  Both sides
 * are exact: queries to the gateway's address and port 53 from the sandbox
 * side (the bridge or a KVM host's trunk; input's guest_in still decides
 * on them, as before); replies from that address and port to the sandbox network, sent by dnsd's user, which
 * dns_out accepts untracked.  Any other process's UDP from port 53 to the
 * sandbox network is dropped (inet_output).  Without a dnsd user nothing
 * is exempted: replies would make the entries anyway.
 */
static void
dns_notrack(struct build *b, struct nr_table *t, struct nr_chain *pre)
{
	const struct moat_gateway *gw = &b->cfg->gw;
	struct moat_prefix me = { .addr = gw->address, .plen = 32 };
	struct nr_chain *c;
	struct nr_rb rb;

	if (!b->opts->has_dns_uid)
		return;
	rb_begin(&rb, t, pre);
	rb_sandbox_side(b, &rb, F_IIFNAME, false);
	rb_cmp_prefix(&rb, F_IP_DADDR, false, &me);
	rb_cmp_port(&rb, F_UDP_DPORT, 53);
	rb_notrack(&rb);
	rb_end(&rb);
	c = model_chain(t, "raw_out", "filter", NF_INET_LOCAL_OUT, -300,
	    "raw");
	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_OIFNAME, false);
	rb_cmp_prefix(&rb, F_IP_SADDR, false, &me);
	rb_cmp_prefix(&rb, F_IP_DADDR, false, &gw->network);
	rb_cmp_port(&rb, F_UDP_SPORT, 53);
	rb_skuid(&rb, b->opts->dns_uid);
	rb_notrack(&rb);
	rb_end(&rb);
}

/* The guests' resolver and proxy serve guests: from any other interface
 * but loopback (a LAN or management host the gateway routes for) they are
 * refused, so that dnsd is no reflector for them and their queries do not
 * use up what dnsd may log for guests. */
static void
guests_only(struct build *b, struct nr_table *t, struct nr_chain *c)
{
	struct moat_prefix me = { .addr = b->cfg->gw.address, .plen = 32 };
	static const struct { enum nr_field f; int dns; } svc[] = {
		{ F_UDP_DPORT, 1 }, { F_TCP_DPORT, 1 }, { F_TCP_DPORT, 0 },
	};
	struct nr_rb rb;
	size_t i;

	for (i = 0; i < sizeof(svc) / sizeof(svc[0]); i++) {
		rb_begin(&rb, t, c);
		rb_cmp_str(&rb, F_IIFNAME, true, "lo");
		rb_cmp_prefix(&rb, F_IP_DADDR, false, &me);
		rb_cmp_port(&rb, svc[i].f, svc[i].dns ? 53 :
		    b->cfg->gw.proxy_port);
		rb_verdict(&rb, NFT_GOTO, reason_chain("inet", "outside"));
		rb_end(&rb);
	}
}

/* ---- guests' IPv6 (gateway.ipv6) ------------------------------------
 *
 * Only where gateway.ipv6 is set; without it not one of these rules or
 * sets exists and every IPv6 packet from a guest is dropped as before.
 * A sandbox has IPv6 when config_sandbox_addr6 gives it an address (open
 * egress, its ipv6 not false): that one address, from its own port and
 * MAC (bridge set guest_ip6), and link-local or unspecified sources for
 * ICMPv6 only (neighbour discovery with the gateway; port isolation keeps
 * it from other guests).  Routed, it goes where IPv4 may: nowhere private
 * (private6, which holds the guests' /64), nowhere on a network of the
 * host's own interfaces (lan6), never the host (guest_in), never back to
 * the sandbox side; then only the sources in guest6 are accepted.
 */
/* Neighbour discovery a guest sends the gateway: router solicitation,
 * neighbour solicitation and advertisement. */
static const uint8_t nd6_types[] = { 133, 135, 136 };

static struct moat_prefix
pfx(const char *s)
{
	struct moat_prefix p;

	if (prefix_parse(s, &p) == -1)
		fatalx("%s: %s", __func__, s);
	return p;
}

int
nftr_lan6_host(const char *bridge, struct moat_prefix **v, size_t *n)
{
	struct moat_hostif *ifs;
	size_t i, k;

	*v = NULL;
	*n = 0;
	if (config_host_read(&ifs, &k) == -1)
		return -1;
	for (i = 0; i < k; i++) {
		const struct moat_prefix *p = &ifs[i].net;

		/* Link-local and loopback are never routed to. */
		if (p->addr.family != AF_INET6 || p->plen == 0 ||
		    strcmp(ifs[i].name, bridge) == 0 ||
		    (p->addr.a[0] == 0xfe && (p->addr.a[1] & 0xc0) == 0x80) ||
		    p->plen == 128)
			continue;
		*v = xreallocarray(*v, *n + 1, sizeof(**v));
		(*v)[(*n)++] = *p;
	}
	free(ifs);
	return 0;
}

/* Whether v[i] is inside another element of v (or repeats an earlier
 * one): an interval set takes no overlapping elements, and the
 * interfaces' networks, their routes and site_prefixes overlap. */
static bool
lan6_covered(const struct moat_prefix *v, size_t n, size_t i)
{
	size_t j;

	for (j = 0; j < n; j++) {
		if (j == i || v[j].plen > v[i].plen ||
		    !prefix_contains(&v[j], &v[i].addr))
			continue;
		if (v[j].plen < v[i].plen || j < i)
			return true;
	}
	return false;
}

static void
v6_sets(struct build *b, struct nr_table *t)
{
	const struct moat_config *cfg = b->cfg;
	int (*lan)(const char *, struct moat_prefix **, size_t *) =
	    b->opts->lan6 ? b->opts->lan6 : nftr_lan6_host;
	struct moat_prefix *v = NULL;
	struct moat_addr a;
	struct nr_set *g, *l, *m;
	char ip[64], text[600], chain[256];
	uint8_t end[16];
	size_t i, n = 0;

	g = sandbox_set(b, t, "guest6", NR_TYPE_IP6ADDR, 16,
	    NFT_SET_CONSTANT, "type ipv6_addr; flags constant;");
	/* Allowlist sandboxes' IPv6 goes to their own chain (sb_NAME, the
	 * one their IPv4 takes), before guest6's accept. */
	m = sandbox_set(b, t, "sandboxes6", NR_TYPE_IP6ADDR, 16,
	    NFT_SET_MAP | NFT_SET_CONSTANT,
	    "type ipv6_addr : verdict; flags constant;");
	for (i = 0; i < cfg->nsandboxes; i++) {
		const struct moat_sandbox *sb = &cfg->sandboxes[i];

		if (!config_sandbox_addr6(cfg, sb, &a))
			continue;
		addr_fmt(&a, ip, sizeof(ip));
		model_set_elem(g, a.a, 16, 0, 0, NULL, ip);
		if (sb->egress != EGRESS_ALLOWLIST)
			continue;
		snprintf(chain, sizeof(chain), "sb_%s", sb->name);
		snprintf(text, sizeof(text), "%s : goto %s", ip, chain);
		model_set_elem(m, a.a, 16, 0, NFT_GOTO, chain, text);
	}
	/* Not constant: the networks may change while the policy stands. */
	l = model_set(t, "lan6", NR_TYPE_IP6ADDR, 16, NFT_SET_INTERVAL,
	    "type ipv6_addr; flags interval;");
	if (lan(cfg->gw.bridge, &v, &n) == -1)
		log_warn("cannot list this host's IPv6 networks");
	/* The host's routes, on a real host (a test's stub gives none).
	 * Without them lan6 still holds the interfaces' networks. */
	if (b->opts->lan6 == NULL &&
	    nftr_routes6(cfg->gw.bridge, cfg->private, &v, &n) == -1)
		log_warn("cannot list this host's IPv6 routes");
	/* The site's own prefixes, which the host may neither have nor
	 * route to (gateway.ipv6.site_prefixes). */
	for (i = 0; i < cfg->gw.nipv6_site; i++) {
		v = xreallocarray(v, n + 1, sizeof(*v));
		v[n++] = cfg->gw.ipv6_site[i];
	}
	for (i = 0; i < n; i++) {
		int bit;

		/* Inside the guests' own network: theirs, not the host's. */
		if ((prefix_overlaps(&v[i], &cfg->gw.ipv6_network) &&
		    v[i].plen >= cfg->gw.ipv6_network.plen) ||
		    lan6_covered(v, n, i))
			continue;
		prefix_fmt(&v[i], text, sizeof(text));
		model_set_elem(l, v[i].addr.a, 16, 0, 0, NULL, text);
		memcpy(end, v[i].addr.a, 16);
		for (bit = v[i].plen; bit < 128; bit++)
			end[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
		if (!addr_inc(end, 16))
			model_set_elem(l, end, 16, NFT_SET_ELEM_INTERVAL_END,
			    0, NULL, NULL);
	}
	free(v);
}

/*
 * The gateway answers a guest's neighbour solicitation for another
 * guest's address with its own MAC (gatewayd keeps a proxy entry on the
 * bridge for every guest's address, parent/network.c), so that what a
 * guest sends to another guest on its own /64 reaches guest_fwd and is
 * refused at once, instead of waiting for an answer that port isolation
 * keeps away.  Two kinds of neighbour discovery must not reach that
 * proxy, and are dropped here, neither counted nor logged:
 *  - duplicate address detection (a solicitation from ::) for a guest's
 *    address: the proxy would answer it, and the guest would give up the
 *    address it was given.  The gateway's own addresses are no guest's,
 *    and it still defends them;
 *  - solicitations and advertisements sent to a guest's address: the
 *    kernel would route them to the other guest (the answered MAC is the
 *    gateway's) and guest_fwd refuse them as "another guest".  A guest
 *    checking that a neighbour entry is still good gets no answer, and
 *    solicits anew by multicast, which the proxy answers.
 */
static void
v6_nd_proxied(struct build *b, struct nr_table *t, struct nr_chain *c)
{
	const struct moat_prefix none = pfx("::/128");
	struct nr_rb rb;
	size_t i;

	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_IIFNAME, false);
	rb_cmp_prefix(&rb, F_IP6_SADDR, false, &none);
	rb_cmp_u8(&rb, F_ICMP6_TYPE, 135);
	rb_lookup(&rb, (enum nr_field[]){ F_ND_TARGET }, 1, "guest6", false);
	rb_verdict(&rb, NF_DROP, NULL);
	rb_end(&rb);
	for (i = 0; i < 2; i++) {
		rb_begin(&rb, t, c);
		rb_sandbox_side(b, &rb, F_IIFNAME, false);
		rb_lookup(&rb, (enum nr_field[]){ F_IP6_DADDR }, 1, "guest6",
		    false);
		rb_cmp_u8(&rb, F_ICMP6_TYPE, i ? 136 : 135);
		rb_verdict(&rb, NF_DROP, NULL);
		rb_end(&rb);
	}
}

/* nd_out: no redirect to the sandbox side.  The kernel redirects a
 * guest that sends the gateway a packet for another guest on the same
 * link (before guest_fwd refuses it), naming the other guest's own MAC:
 * a guest that follows it would send there, where port isolation drops
 * it silently, and its next connection would time out instead of being
 * refused. */
static void
v6_nd_out(struct build *b, struct nr_table *t)
{
	struct nr_chain *c = model_chain(t, "nd_out", "filter",
	    NF_INET_LOCAL_OUT, -300, "raw");
	struct nr_rb rb;

	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_OIFNAME, false);
	rb_cmp_u8(&rb, F_ICMP6_TYPE, 137);
	rb_verdict(&rb, NF_DROP, NULL);
	rb_end(&rb);
}

/* raw_pre: the guests' /64 only from the sandbox side; from it, a
 * guest's own address, or ICMPv6 from link-local or :: (neighbour
 * discovery); anything else meets the IPv6 drop after. */
static void
v6_raw_pre(struct build *b, struct nr_table *t, struct nr_chain *c)
{
	const struct moat_gateway *gw = &b->cfg->gw;
	const struct moat_prefix ll = pfx("fe80::/10"), none = pfx("::/128");
	struct nr_rb rb;
	int i;

	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_IIFNAME, true);
	rb_cmp_prefix(&rb, F_IP6_SADDR, false, &gw->ipv6_network);
	rb_verdict(&rb, NFT_GOTO, reason_chain("inet", "spoof"));
	rb_end(&rb);
	v6_nd_proxied(b, t, c);
	/* What a guest sends over IPv6, counted before its accept. */
	acct_lookup(t, c, ACCT_OUT, true);
	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_IIFNAME, false);
	rb_lookup(&rb, (enum nr_field[]){ F_IP6_SADDR }, 1, "guest6", false);
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
	for (i = 0; i < 2; i++) {
		rb_begin(&rb, t, c);
		rb_sandbox_side(b, &rb, F_IIFNAME, false);
		rb_cmp_prefix(&rb, F_IP6_SADDR, false, i ? &none : &ll);
		rb_l4proto(&rb, IPPROTO_ICMPV6);
		rb_verdict(&rb, NF_ACCEPT, NULL);
		rb_end(&rb);
	}
	/* Link-local to link-local (the gateway's, as far as routing goes:
	 * the kernel forwards neither) goes on to guest_in, whose refusal
	 * answers at once, instead of the silent IPv6 drop. */
	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_IIFNAME, false);
	rb_cmp_prefix(&rb, F_IP6_SADDR, false, &ll);
	rb_cmp_prefix(&rb, F_IP6_DADDR, false, &ll);
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
}

/* guest_in, first after established traffic: neighbour discovery with
 * the gateway (router and neighbour solicitations, neighbour
 * advertisements), which conntrack places nowhere (untracked, never
 * "established").  It comes before the budget rule and every other
 * per-sandbox refusal: a spent budget refuses new flows, and the guest's
 * answer to the gateway's solicitation for it is none, so refusing it
 * would stall the flows that go on (the neighbour entry fails).  Hop
 * limit 255 is what RFC 4861 requires of every such message, so only a
 * packet sent on this link matches; its source was already held to the
 * guest's own address or link-local/:: with the guest's own MAC and port
 * (bridge from_guest, raw_pre). */
static void
v6_nd_in(struct nr_table *t, struct nr_chain *c)
{
	struct nr_rb rb;
	size_t i;

	for (i = 0; i < sizeof(nd6_types); i++) {
		rb_begin(&rb, t, c);
		rb_cmp_u8(&rb, F_ICMP6_TYPE, nd6_types[i]);
		rb_cmp_u8(&rb, F_IP6_HOPLIMIT, 255);
		rb_verdict(&rb, NF_ACCEPT, NULL);
		rb_end(&rb);
	}
}

/* guest_in: DNS (udp and tcp 53) to the gateway's IPv6 address, where
 * dnsd answers as on its IPv4 one; nothing else of a guest's IPv6 reaches
 * the host.  Only guests' own addresses get this far (raw_pre), and
 * link-local ones to a link-local address, which meet the refusal after
 * (the gateway's link-local address offers nothing to guests). */
static void
v6_guest_in(const struct moat_gateway *gw, struct nr_table *t,
    struct nr_chain *c)
{
	static const enum nr_field dns[] = { F_UDP_DPORT, F_TCP_DPORT };
	struct moat_prefix me = { .addr = gw->ipv6_address, .plen = 128 };
	struct nr_rb rb;
	size_t i;

	for (i = 0; i < sizeof(dns) / sizeof(dns[0]); i++) {
		rb_begin(&rb, t, c);
		rb_cmp_prefix(&rb, F_IP6_DADDR, false, &me);
		rb_cmp_port(&rb, dns[i], 53);
		rb_verdict(&rb, NF_ACCEPT, NULL);
		rb_end(&rb);
	}
}

/* guest_fwd, after the private ranges: the host's LANs, then the
 * guests with IPv6. */
static void
v6_guest_fwd(struct nr_table *t, struct nr_chain *c)
{
	struct nr_rb rb;

	rb_begin(&rb, t, c);
	rb_lookup(&rb, (enum nr_field[]){ F_IP6_DADDR }, 1, "lan6", false);
	rb_verdict(&rb, NFT_GOTO, reason_chain("inet", "private"));
	rb_end(&rb);
	rb_begin(&rb, t, c);
	rb_vmap(&rb, F_IP6_SADDR, "sandboxes6");
	rb_end(&rb);
	rb_begin(&rb, t, c);
	rb_lookup(&rb, (enum nr_field[]){ F_IP6_SADDR }, 1, "guest6", false);
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
}

/* ---- the proxy over guests' IPv6 (gateway.ipv6) ---------------------
 *
 * A guest with IPv6 reaches the proxy on the gateway's IPv6 address, as
 * on its IPv4 one; with intercept its tcp 80/443 to public IPv6 is
 * redirected there (what is not public meets guest_fwd's refusal); and
 * the proxy's own IPv6 goes where a guest's may: never private6 (which
 * holds the guests' /64) nor a network of the host's (lan6).
 */
static void
v6_proxy_in(struct build *b, struct nr_table *t, struct nr_chain *c)
{
	const struct moat_gateway *gw = &b->cfg->gw;
	struct moat_prefix me = { gw->ipv6_address, 128 };
	struct nr_rb rb;

	rb_begin(&rb, t, c);
	rb_cmp_prefix(&rb, F_IP6_DADDR, false, &me);
	rb_cmp_port(&rb, F_TCP_DPORT, gw->proxy_port);
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
}

static void
v6_intercept(struct build *b, struct nr_table *t, struct nr_chain *c)
{
	static const uint16_t web[] = { 80, 443 };
	struct nr_rb rb;
	size_t i;

	for (i = 0; i < 2; i++) {
		rb_begin(&rb, t, c);
		rb_sandbox_side(b, &rb, F_IIFNAME, false);
		rb_lookup(&rb, (enum nr_field[]){ F_IP6_SADDR }, 1, "guest6",
		    false);
		rb_lookup(&rb, (enum nr_field[]){ F_IP6_DADDR }, 1, "private6",
		    true);
		rb_lookup(&rb, (enum nr_field[]){ F_IP6_DADDR }, 1, "lan6",
		    true);
		rb_cmp_port(&rb, F_TCP_DPORT, web[i]);
		rb_redirect(&rb, b->cfg->gw.proxy_port);
		rb_end(&rb);
	}
}

static void
v6_proxy_out(struct nr_table *t, struct nr_chain *c, const char *refuse)
{
	static const char *const deny[] = { "private6", "lan6" };
	struct nr_rb rb;
	size_t i;

	for (i = 0; i < 2; i++) {
		rb_begin(&rb, t, c);
		rb_lookup(&rb, (enum nr_field[]){ F_IP6_DADDR }, 1, deny[i],
		    false);
		rb_verdict(&rb, NFT_GOTO, refuse);
		rb_end(&rb);
	}
}

/* Only the proxy's user answers guests' IPv6 from the proxy's port, as
 * over IPv4 (service_reply). */
static void
v6_proxy_reply(struct build *b, struct nr_table *t, struct nr_chain *c)
{
	struct nr_rb rb;

	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_OIFNAME, false);
	rb_cmp_prefix(&rb, F_IP6_DADDR, false, &b->cfg->gw.ipv6_network);
	rb_cmp_port(&rb, F_TCP_SPORT, b->cfg->gw.proxy_port);
	rb_verdict(&rb, NFT_GOTO, reason_chain("inet", "svcreply"));
	rb_end(&rb);
}

static void
inet_base_chains(struct build *b, struct nr_table *t)
{
	const struct moat_gateway *gw = &b->cfg->gw;
	struct nr_chain *c;
	struct nr_rb rb;
	static const uint16_t web[] = { 80, 443 };
	size_t i;

	c = model_chain(t, "raw_pre", "filter", NF_INET_PRE_ROUTING, -300,
	    "raw");
	/* The host talking to its own sandbox-side address comes in on lo. */
	rb_begin(&rb, t, c);
	rb_cmp_str(&rb, F_IIFNAME, false, "lo");
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
	trunk_rule(b, t, c);
	dns_fast_pre(b, t, c);
	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_IIFNAME, true);
	rb_cmp_prefix(&rb, F_IP_SADDR, false, &gw->network);
	rb_verdict(&rb, NFT_GOTO, reason_chain("inet", "spoof"));
	rb_end(&rb);
	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_IIFNAME, false);
	rb_cmp_prefix(&rb, F_IP_SADDR, true, &gw->network);
	rb_verdict(&rb, NFT_GOTO, reason_chain("inet", "spoof"));
	rb_end(&rb);
	if (gw->ipv6)
		v6_raw_pre(b, t, c);
	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_IIFNAME, false);
	rb_nfproto_ipv6(&rb);
	rb_verdict(&rb, NFT_GOTO, reason_chain("inet", "ipv6"));
	rb_end(&rb);
	dns_notrack(b, t, c);
	acct_rule(t, c, ACCT_OUT);

	if (gw->intercept) {
		c = model_chain(t, "nat_pre", "nat", NF_INET_PRE_ROUTING,
		    -100, "dstnat");
		for (i = 0; i < 2; i++) {
			rb_begin(&rb, t, c);
			rb_sandbox_side(b, &rb, F_IIFNAME, false);
			rb_lookup(&rb, (enum nr_field[]){ F_IP_SADDR }, 1,
			    "intercept", false);
			rb_lookup(&rb, (enum nr_field[]){ F_IP_DADDR }, 1,
			    "private4", true);
			rb_cmp_port(&rb, F_TCP_DPORT, web[i]);
			rb_redirect(&rb, gw->proxy_port);
			rb_end(&rb);
		}
		if (gw->ipv6)
			v6_intercept(b, t, c);
	}

	c = model_chain(t, "input", "filter", NF_INET_LOCAL_IN, 0, "filter");
	dns_fast_in(b, t, c);
	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_IIFNAME, false);
	rb_verdict(&rb, NFT_GOTO, "guest_in");
	rb_end(&rb);
	guests_only(b, t, c);

	c = model_chain(t, "forward", "filter", NF_INET_FORWARD, 0, "filter");
	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_IIFNAME, false);
	rb_verdict(&rb, NFT_GOTO, "guest_fwd");
	rb_end(&rb);
	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_OIFNAME, false);
	rb_verdict(&rb, NFT_GOTO, "to_guest");
	rb_end(&rb);

	c = model_chain(t, "nat_post", "nat", NF_INET_POST_ROUTING, 100,
	    "srcnat");
	rb_begin(&rb, t, c);
	rb_cmp_str(&rb, F_OIFNAME, false, gw->uplink);
	rb_cmp_prefix(&rb, F_IP_SADDR, false, &gw->network);
	/* A pair's shared uplink address: see gateway.ha.uplink_address. */
	if (gw->ha_uplink_address.family == AF_INET)
		rb_snat4(&rb, &gw->ha_uplink_address);
	else
		rb_masquerade(&rb);
	rb_end(&rb);
	if (gw->ipv6 && gw->ipv6_uplink == V6_UPLINK_NAT66) {
		rb_begin(&rb, t, c);
		rb_cmp_str(&rb, F_OIFNAME, false, gw->uplink);
		rb_cmp_prefix(&rb, F_IP6_SADDR, false, &gw->ipv6_network);
		rb_masquerade(&rb);
		rb_end(&rb);
	}
}

/* The proxy and dnsd act for guests: their own packets obey the same
 * deny data as a guest's, so that a bug in either still cannot reach
 * the host, the LAN or another guest.  Replies to guests and flows
 * already admitted pass as established. */
static void
proxy_output(struct build *b, struct nr_table *t, struct nr_chain *c)
{
	const struct moat_gateway *gw = &b->cfg->gw;
	const char *refuse = reason_chain("inet", "egress");
	struct nr_rb rb;
	size_t i, k;

	ct_rule(t, c, CT_EST_REL, "established,related", NF_ACCEPT, NULL);
	/* The proxy resolves names itself, through the upstreams. */
	for (i = 0; i < gw->nupstream; i++)
		if (gw->upstream[i].family == AF_INET) {
			port_rule(t, c, &gw->upstream[i], F_UDP_DPORT, 53,
			    NF_ACCEPT, NULL);
			port_rule(t, c, &gw->upstream[i], F_TCP_DPORT, 53,
			    NF_ACCEPT, NULL);
		}
	if (gw->ipv6)
		v6_proxy_out(t, c, refuse);
	else {
		rb_begin(&rb, t, c);
		rb_nfproto_ipv6(&rb);
		rb_verdict(&rb, NFT_GOTO, refuse);
		rb_end(&rb);
	}
	rb_begin(&rb, t, c);
	rb_fib_daddr_local(&rb);
	rb_verdict(&rb, NFT_GOTO, refuse);
	rb_end(&rb);
	rb_begin(&rb, t, c);
	rb_cmp_prefix(&rb, F_IP_DADDR, false, &gw->network);
	rb_verdict(&rb, NFT_GOTO, refuse);
	rb_end(&rb);
	/* An exception that applies to some sandbox: the proxy checks
	 * which sandbox it acts for (admit_addr). */
	for (i = 0; i < gw->nexceptions; i++) {
		if (gw->exceptions[i].to.addr.family != AF_INET)
			continue;
		for (k = 0; k < b->cfg->nsandboxes; k++)
			if (admit_exception_applies(&gw->exceptions[i],
			    &b->cfg->sandboxes[k]))
				break;
		if (k < b->cfg->nsandboxes)
			exception_rule(t, c, &gw->exceptions[i], NULL);
	}
	rb_begin(&rb, t, c);
	rb_lookup(&rb, (enum nr_field[]){ F_IP_DADDR }, 1, "private4", false);
	rb_verdict(&rb, NFT_GOTO, refuse);
	rb_end(&rb);
}

/* dnsd talks to its configured upstreams on port 53, and to nothing
 * else. */
static void
dns_output(struct build *b, struct nr_table *t, struct nr_chain *c)
{
	const struct moat_gateway *gw = &b->cfg->gw;
	struct nr_rb rb;
	size_t i;
	int k;

	/* Its untracked replies to guests were accepted by the first rule
	 * of output (dns_fast_out). */
	ct_rule(t, c, CT_EST_REL, "established,related", NF_ACCEPT, NULL);
	for (i = 0; i < gw->nupstream; i++)
		for (k = 0; k < 2; k++) {
			struct moat_prefix p = { .addr = gw->upstream[i] };
			enum nr_field df = p.addr.family == AF_INET ?
			    F_IP_DADDR : F_IP6_DADDR;

			p.plen = p.addr.family == AF_INET ? 32 : 128;
			rb_begin(&rb, t, c);
			rb_cmp_prefix(&rb, df, false, &p);
			rb_cmp_port(&rb, k ? F_TCP_DPORT : F_UDP_DPORT, 53);
			rb_verdict(&rb, NF_ACCEPT, NULL);
			rb_end(&rb);
		}
	simple_rule(t, c, NFT_GOTO, reason_chain("inet", "egress"));
}

static int
owner_uid_sys(const char *name, uint32_t *uid)
{
	struct passwd *pw = getpwnam(name);

	if (pw == NULL)
		return -1;
	*uid = (uint32_t)pw->pw_uid;
	return 0;
}

/* host_owners: (uid . address) of each sandbox whose owner has an account
 * here.  A sandbox registered by a KVM host has its owner on that host:
 * the same name here may be someone else, so it gets no entry. */
static void
host_owner_set(struct build *b, struct nr_table *t)
{
	int (*lookup)(const char *, uint32_t *) = b->opts->owner_uid ?
	    b->opts->owner_uid : owner_uid_sys;
	struct nr_set *s;
	uint8_t key[8];
	char text[128], ip[64];
	uint32_t uid;
	size_t i;

	s = sandbox_set(b, t, "host_owners", NR_CONCAT(NR_TYPE_UID,
	    NR_TYPE_IPADDR), 8, NFT_SET_CONSTANT,
	    "type uid . ipv4_addr; flags constant;");
	for (i = 0; i < b->cfg->nsandboxes; i++) {
		const struct moat_sandbox *sb = &b->cfg->sandboxes[i];

		if (sb->owner == NULL || sb->registered_by != NULL ||
		    lookup(sb->owner, &uid) == -1 || uid == 0)
			continue;
		memcpy(key, &uid, 4);	/* meta skuid: host byte order */
		memcpy(key + 4, sb->address.a, 4);
		fmt_ip(&sb->address, ip, sizeof(ip));
		snprintf(text, sizeof(text), "%u . %s", uid, ip);
		model_set_elem(s, key, 8, 0, 0, NULL, text);
	}
}

/*
 * gateway.host_access: a guest's services are its owner's, not every
 * local user's (nor an escaped guest's, which runs as a uid of its own).
 * A new connection from the host to a guest passes only from root and,
 * with "owners", from the guest's owner; anything else is refused like a
 * guest's refusal (EHOSTUNREACH for the caller).  Only new connections
 * are judged: replies to guests' own connections and the errors the
 * kernel sends them are established or related.  The gateway's own
 * sandbox-side address is the host, not a guest.
 */
static void
host_access(struct build *b, struct nr_table *t, struct nr_chain *out)
{
	const struct moat_gateway *gw = &b->cfg->gw;
	struct moat_prefix me = { .addr = gw->address, .plen = 32 }, mcast6;
	static const enum nr_field k[] = { F_SKUID, F_IP_DADDR };
	struct nr_chain *c;
	struct nr_rb rb;

	if (gw->host_access == HOST_ACCESS_OWNERS)
		host_owner_set(b, t);
	c = model_chain(t, "host_out", NULL, 0, 0, NULL);
	rb_begin(&rb, t, c);
	rb_skuid(&rb, 0);
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
	if (gw->host_access == HOST_ACCESS_OWNERS) {
		rb_begin(&rb, t, c);
		rb_lookup(&rb, k, 2, "host_owners", false);
		rb_verdict(&rb, NF_ACCEPT, NULL);
		rb_end(&rb);
	}
	simple_rule(t, c, NFT_GOTO, reason_chain("inet", "hostuser"));

	rb_begin(&rb, t, out);
	rb_cmp_prefix(&rb, F_IP_DADDR, false, &gw->network);
	rb_cmp_prefix(&rb, F_IP_DADDR, true, &me);
	rb_ct_state(&rb, NF_CT_STATE_BIT(IP_CT_NEW), "new");
	rb_verdict(&rb, NFT_GOTO, "host_out");
	rb_end(&rb);
	/* A guest's kernel may still answer to its IPv6 link-local address
	 * (the bridge drops what it sends back, not what reaches it): IPv6
	 * unicast out of the sandbox side is root's only. */
	if (prefix_parse("ff00::/8", &mcast6) == -1)
		fatalx("%s: ff00::/8", __func__);
	rb_begin(&rb, t, out);
	rb_sandbox_side(b, &rb, F_OIFNAME, false);
	rb_cmp_prefix(&rb, F_IP6_DADDR, true, &mcast6);
	rb_ct_state(&rb, NF_CT_STATE_BIT(IP_CT_NEW), "new");
	rb_verdict(&rb, NFT_GOTO, "host_out");
	rb_end(&rb);
}

/*
 * Fast refusals lift the kernel's per-destination ICMP limit for the
 * whole network namespace, which on a co-located gateway is the host's:
 * without more, every closed UDP port of the host would answer a flood of
 * spoofed datagrams with as many errors, towards whoever the flood names.
 * The guests' refusals cannot be built where the kernel does not count
 * them (the bridge table's own rejects) on a gateway, since the decisions
 * are taken after routing; so the kernel's defaults come back here for
 * every ICMP error leaving by any other interface than the sandbox side
 * (and loopback, which the kernel never limits): per destination one a
 * second after a burst of six (net.ipv4.icmp_ratelimit and its burst),
 * and 1,000 a second after a burst of 50 in all (icmp_msgs_per_sec and
 * icmp_msgs_burst).  A destination's bucket lives a minute after its
 * last error; a table full of destinations leaves the cap in all.
 * Fragmentation needed and IPv6 packet too big are never limited: path
 * MTU discovery depends on them, and the kernel exempts them too.
 */
#define ICMP_PEER_RATE	1
#define ICMP_PEER_BURST	6
#define ICMP_ALL_RATE	1000
#define ICMP_ALL_BURST	50
#define ICMP_PEERS	65536
#define ICMP_PEER_MS	60000

static void
icmp_err_chain(struct build *b, struct nr_table *t, int af)
{
	const char *set = af == AF_INET ? "icmp_peers4" : "icmp_peers6";
	struct nr_chain *c;
	struct nr_set *s;
	struct nr_rb rb;

	s = model_set(t, set, af == AF_INET ? NR_TYPE_IPADDR : NR_TYPE_IP6ADDR,
	    af == AF_INET ? 4 : 16, NFT_SET_TIMEOUT | NFT_SET_EVAL,
	    af == AF_INET ? "type ipv4_addr; size 65536; "
	    "flags dynamic,timeout; timeout 60s;" : "type ipv6_addr; "
	    "size 65536; flags dynamic,timeout; timeout 60s;");
	nftnl_set_set_u64(s->nl, NFTNL_SET_TIMEOUT, ICMP_PEER_MS);
	nftnl_set_set_u32(s->nl, NFTNL_SET_DESC_SIZE, ICMP_PEERS);
	c = model_chain(t, af == AF_INET ? "icmp_err4" : "icmp_err6", NULL,
	    0, 0, NULL);
	rb_begin(&rb, t, c);
	rb_meter_over(&rb, af == AF_INET ? F_IP_DADDR : F_IP6_DADDR, set,
	    ICMP_PEER_RATE, ICMP_PEER_BURST);
	rb_verdict(&rb, NF_DROP, NULL);
	rb_end(&rb);
	rb_begin(&rb, t, c);
	rb_limit_over(&rb, ICMP_ALL_RATE, ICMP_ALL_BURST);
	rb_verdict(&rb, NF_DROP, NULL);
	rb_end(&rb);
}

static void
icmp_limits(struct build *b, struct nr_table *t, struct nr_chain *out)
{
	static const uint8_t err4[] = { 3, 4, 11, 12 }, err6[] = { 1, 3, 4 };
	struct nr_chain *c;
	struct nr_rb rb;
	size_t i;
	int k;

	icmp_err_chain(b, t, AF_INET);
	icmp_err_chain(b, t, AF_INET6);
	c = model_chain(t, "icmp_out", NULL, 0, 0, NULL);
	rb_begin(&rb, t, c);
	rb_icmp_type_code(&rb, 3, 4);		/* fragmentation needed */
	rb_verdict(&rb, NFT_RETURN, NULL);
	rb_end(&rb);
	for (i = 0; i < sizeof(err4); i++) {
		rb_begin(&rb, t, c);
		rb_cmp_u8(&rb, F_ICMP_TYPE, err4[i]);
		rb_verdict(&rb, NFT_GOTO, "icmp_err4");
		rb_end(&rb);
	}
	for (i = 0; i < sizeof(err6); i++) {
		rb_begin(&rb, t, c);
		rb_cmp_u8(&rb, F_ICMP6_TYPE, err6[i]);
		rb_verdict(&rb, NFT_GOTO, "icmp_err6");
		rb_end(&rb);
	}
	for (k = 0; k < 2; k++) {
		rb_begin(&rb, t, out);
		rb_cmp_str(&rb, F_OIFNAME, true, "lo");
		rb_sandbox_side(b, &rb, F_OIFNAME, true);
		rb_l4proto(&rb, k == 0 ? IPPROTO_ICMP : IPPROTO_ICMPV6);
		rb_verdict(&rb, NFT_JUMP, "icmp_out");
		rb_end(&rb);
	}
}

/* TCP from port out of the sandbox side to a guest, by a process the
 * rules before did not send to its own chain, is refused. */
static void
service_reply(struct build *b, struct nr_table *t, struct nr_chain *c,
    uint16_t port)
{
	struct nr_rb rb;

	rb_begin(&rb, t, c);
	rb_sandbox_side(b, &rb, F_OIFNAME, false);	/* towards a guest */
	rb_cmp_prefix(&rb, F_IP_DADDR, false, &b->cfg->gw.network);
	rb_cmp_port(&rb, F_TCP_SPORT, port);
	rb_verdict(&rb, NFT_GOTO, reason_chain("inet", "svcreply"));
	rb_end(&rb);
}

static void
inet_output(struct build *b, struct nr_table *t)
{
	const struct nftr_opts *o = b->opts;
	struct nr_chain *c, *pc = NULL, *dc = NULL;
	struct nr_rb rb;

	if (!o->has_proxy_uid && !o->has_dns_uid &&
	    b->cfg->gw.host_access == HOST_ACCESS_ALL &&
	    !b->cfg->gw.fast_refusals)
		return;
	if (o->has_proxy_uid)
		proxy_output(b, t, pc = model_chain(t, "proxy_out", NULL, 0, 0,
		    NULL));
	if (o->has_dns_uid)
		dns_output(b, t, dc = model_chain(t, "dns_out", NULL, 0, 0,
		    NULL));
	c = model_chain(t, "output", "filter", NF_INET_LOCAL_OUT, 0, "filter");
	if (dc)
		dns_fast_out(b, t, c);
	if (b->cfg->gw.fast_refusals)
		icmp_limits(b, t, c);
	if (pc) {
		rb_begin(&rb, t, c);
		rb_skuid(&rb, o->proxy_uid);
		rb_verdict(&rb, NFT_GOTO, "proxy_out");
		rb_end(&rb);
		/* Only the proxy answers guests from its port: a local user
		 * who binds it while gatewayd is down (or first) must not
		 * serve the guests' proxy connections. */
		service_reply(b, t, c, b->cfg->gw.proxy_port);
		if (b->cfg->gw.ipv6)
			v6_proxy_reply(b, t, c);
	}
	if (dc) {
		rb_begin(&rb, t, c);
		rb_skuid(&rb, o->dns_uid);
		rb_verdict(&rb, NFT_GOTO, "dns_out");
		rb_end(&rb);
		/* Only dnsd answers guests from port 53: no other local
		 * process may slip a reply past their untracked queries. */
		rb_begin(&rb, t, c);
		rb_cmp_prefix(&rb, F_IP_DADDR, false, &b->cfg->gw.network);
		rb_cmp_port(&rb, F_UDP_SPORT, 53);
		rb_verdict(&rb, NFT_GOTO, reason_chain("inet", "dnsreply"));
		rb_end(&rb);
		service_reply(b, t, c, 53);	/* and DNS over TCP */
	}
	if (b->cfg->gw.host_access != HOST_ACCESS_ALL)
		host_access(b, t, c);
}

void
nftr_opts_users(struct nftr_opts *o)
{
	struct passwd *pw;

	if ((pw = getpwnam(NFTR_PROXY_USER)) != NULL) {
		o->has_proxy_uid = true;
		o->proxy_uid = (uint32_t)pw->pw_uid;
	}
	if ((pw = getpwnam(NFTR_DNS_USER)) != NULL) {
		o->has_dns_uid = true;
		o->dns_uid = (uint32_t)pw->pw_uid;
	}
}

static void
build_inet(struct build *b)
{
	struct nr_table *t = model_table(b->rs, NFPROTO_INET, "inet");

	private_set(t, b->cfg, AF_INET, "private4");
	private_set(t, b->cfg, AF_INET6, "private6");
	reason_chains(t, b->cfg->gw.nflog_group, b->cfg->gw.ipv6);
	trunk_sets(b, t);
	sandbox_map(b, t);
	if (b->cfg->gw.ipv6)
		v6_sets(b, t);
	acct_sets(b, t);
	budget_set(b, t);
	guest_input(b, t);
	guest_forward(b, t);
	inet_base_chains(b, t);
	inet_output(b, t);
	if (b->cfg->gw.ipv6)
		v6_nd_out(b, t);
	acct_local(t);
}

/* ---- bridge moat ---------------------------------------------------- */

static void
guest_sets(struct build *b, struct nr_table *t)
{
	struct nr_set *ports, *ip, *arp;
	uint8_t key[36];
	char text[200], mac[18], a[64];
	size_t i;

	ports = sandbox_set(b, t, "guest_ports", NR_TYPE_IFNAME, 16,
	    NFT_SET_CONSTANT, "type ifname; flags constant;");
	ip = sandbox_set(b, t, "guest_ip", NR_CONCAT(NR_CONCAT(NR_TYPE_IFNAME,
	    NR_TYPE_ETHERADDR), NR_TYPE_IPADDR), 28,
	    NFT_SET_CONSTANT, "type ifname . ether_addr . ipv4_addr; flags constant;");
	arp = sandbox_set(b, t, "guest_arp", NR_CONCAT(NR_CONCAT(NR_CONCAT(
	    NR_TYPE_IFNAME, NR_TYPE_ETHERADDR), NR_TYPE_ETHERADDR),
	    NR_TYPE_IPADDR), 36, NFT_SET_CONSTANT,
	    "type ifname . ether_addr . ether_addr . "
	    "ipv4_addr; flags constant;");
	for (i = 0; i < b->cfg->nsandboxes; i++) {
		const struct moat_sandbox *sb = &b->cfg->sandboxes[i];
		const uint8_t *m = sb->mac;

		snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x",
		    m[0], m[1], m[2], m[3], m[4], m[5]);
		addr_fmt(&sb->address, a, sizeof(a));
		memset(key, 0, sizeof(key));
		memcpy(key, sb->tap, strnlen(sb->tap, IFNAMSIZ - 1));
		snprintf(text, sizeof(text), "\"%s\"", sb->tap);
		model_set_elem(ports, key, 16, 0, 0, NULL, text);
		memcpy(key + 16, m, 6);
		memcpy(key + 24, sb->address.a, 4);
		snprintf(text, sizeof(text), "\"%s\" . %s . %s", sb->tap, mac,
		    a);
		model_set_elem(ip, key, 28, 0, 0, NULL, text);
		memcpy(key + 24, m, 6);
		memset(key + 30, 0, 2);
		memcpy(key + 32, sb->address.a, 4);
		snprintf(text, sizeof(text), "\"%s\" . %s . %s . %s", sb->tap,
		    mac, mac, a);
		model_set_elem(arp, key, 36, 0, 0, NULL, text);
	}
}

/* With gateway.ipv6: guest_ip6 (port . MAC . its one IPv6 address) and
 * guest_mac6 (port . MAC) of each sandbox with IPv6. */
static void
guest_sets6(struct build *b, struct nr_table *t)
{
	const struct moat_config *cfg = b->cfg;
	struct nr_set *ip, *mac;
	struct moat_addr a6;
	uint8_t key[40];
	char text[200], m[18], a[64];
	size_t i;

	ip = sandbox_set(b, t, "guest_ip6", NR_CONCAT(NR_CONCAT(
	    NR_TYPE_IFNAME, NR_TYPE_ETHERADDR), NR_TYPE_IP6ADDR), 40,
	    NFT_SET_CONSTANT,
	    "type ifname . ether_addr . ipv6_addr; flags constant;");
	mac = sandbox_set(b, t, "guest_mac6", NR_CONCAT(NR_TYPE_IFNAME,
	    NR_TYPE_ETHERADDR), 24, NFT_SET_CONSTANT,
	    "type ifname . ether_addr; flags constant;");
	for (i = 0; i < cfg->nsandboxes; i++) {
		const struct moat_sandbox *sb = &cfg->sandboxes[i];

		if (!config_sandbox_addr6(cfg, sb, &a6))
			continue;
		snprintf(m, sizeof(m), "%02x:%02x:%02x:%02x:%02x:%02x",
		    sb->mac[0], sb->mac[1], sb->mac[2], sb->mac[3], sb->mac[4],
		    sb->mac[5]);
		addr_fmt(&a6, a, sizeof(a));
		memset(key, 0, sizeof(key));
		memcpy(key, sb->tap, strnlen(sb->tap, IFNAMSIZ - 1));
		memcpy(key + 16, sb->mac, 6);
		snprintf(text, sizeof(text), "\"%s\" . %s", sb->tap, m);
		model_set_elem(mac, key, 24, 0, 0, NULL, text);
		memcpy(key + 24, a6.a, 16);
		snprintf(text, sizeof(text), "\"%s\" . %s . %s", sb->tap, m,
		    a);
		model_set_elem(ip, key, 40, 0, 0, NULL, text);
	}
}

/* from_guest with gateway.ipv6: what only a router or a DHCPv6 server
 * sends is dropped first (a guest's RA would make the others route
 * through it); then a guest's own address, or ICMPv6 from link-local or
 * :: with its own MAC (neighbour discovery; port isolation keeps it
 * between the guest and the gateway). */
static void
bridge_from_guest6(struct nr_table *t, struct nr_chain *c)
{
	static const enum nr_field ipk[] = { F_IIFNAME, F_ETHER_SADDR,
	    F_IP6_SADDR };
	static const enum nr_field mk[] = { F_IIFNAME, F_ETHER_SADDR };
	static const uint8_t router[] = { 134, 137 };	/* RA, redirect */
	const struct moat_prefix ll = pfx("fe80::/10"), none = pfx("::/128");
	struct nr_rb rb;
	size_t i;

	for (i = 0; i < sizeof(router); i++) {
		rb_begin(&rb, t, c);
		rb_cmp_u8(&rb, F_ICMP6_TYPE, router[i]);
		rb_verdict(&rb, NFT_GOTO, reason_chain("bridge", "ra"));
		rb_end(&rb);
	}
	rb_begin(&rb, t, c);
	rb_ethertype(&rb, ETH_P_IPV6, "ip6");
	rb_cmp_port(&rb, F_UDP_SPORT, 547);
	rb_verdict(&rb, NFT_GOTO, reason_chain("bridge", "ra"));
	rb_end(&rb);
	rb_begin(&rb, t, c);
	rb_lookup(&rb, ipk, 3, "guest_ip6", false);
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
	for (i = 0; i < 2; i++) {
		rb_begin(&rb, t, c);
		rb_lookup(&rb, mk, 2, "guest_mac6", false);
		rb_cmp_prefix(&rb, F_IP6_SADDR, false, i ? &none : &ll);
		rb_l4proto(&rb, IPPROTO_ICMPV6);
		rb_verdict(&rb, NF_ACCEPT, NULL);
		rb_end(&rb);
	}
	/* Link-local to link-local with its own MAC, any protocol: the
	 * gateway's link-local address refuses it at once (guest_in), and
	 * port isolation keeps it from other guests. */
	rb_begin(&rb, t, c);
	rb_lookup(&rb, mk, 2, "guest_mac6", false);
	rb_cmp_prefix(&rb, F_IP6_SADDR, false, &ll);
	rb_cmp_prefix(&rb, F_IP6_DADDR, false, &ll);
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
	/* Any other IPv6 from a port with IPv6 claims what is not its own. */
	rb_begin(&rb, t, c);
	rb_ethertype(&rb, ETH_P_IPV6, "ip6");
	rb_lookup(&rb, mk, 2, "guest_mac6", false);
	rb_verdict(&rb, NFT_GOTO, reason_chain("bridge", "spoof"));
	rb_end(&rb);
}

/* A guest's neighbour discovery is flooded to the other guest ports
 * (solicitations go to multicast) and stops there, as every frame
 * between guests does, but it is no refusal of anything the guest
 * asked for: dropped without being counted or logged, so that `ctl
 * refused` does not list every solicitation as "another guest".  Over a
 * trunk it goes on (the gateway may be behind it). */
static void
bridge_nd_quiet(struct nr_table *t, struct nr_chain *c, const char *trunk)
{
	struct nr_rb rb;
	size_t i;

	for (i = 0; i < sizeof(nd6_types); i++) {
		rb_begin(&rb, t, c);
		rb_lookup(&rb, (enum nr_field[]){ F_IIFNAME }, 1,
		    "guest_ports", false);
		if (trunk)
			rb_cmp_str(&rb, F_OIFNAME, true, trunk);
		rb_cmp_u8(&rb, F_ICMP6_TYPE, nd6_types[i]);
		rb_verdict(&rb, NF_DROP, NULL);
		rb_end(&rb);
	}
}

/* A guest's ARP towards another guest's port (one without isolation):
 * dropped as that port's isolation would, neither counted nor logged.
 * Every request a guest broadcasts meets this, and the gateway answers
 * those for the other guests itself (gatewayd's ARP proxy). */
static void
bridge_arp_quiet(struct nr_table *t, struct nr_chain *c, const char *trunk)
{
	struct nr_rb rb;

	rb_begin(&rb, t, c);
	rb_lookup(&rb, (enum nr_field[]){ F_IIFNAME }, 1, "guest_ports",
	    false);
	if (trunk)
		rb_cmp_str(&rb, F_OIFNAME, true, trunk);
	rb_ethertype(&rb, ETH_P_ARP, "arp");
	rb_verdict(&rb, NF_DROP, NULL);
	rb_end(&rb);
}

static void
bridge_from_guest(struct build *b, struct nr_table *t)
{
	static const enum nr_field ipk[] = { F_IIFNAME, F_ETHER_SADDR,
	    F_IP_SADDR };
	static const enum nr_field arpk[] = { F_IIFNAME, F_ETHER_SADDR,
	    F_ARP_SHA, F_ARP_SPA };
	static const enum nr_field probek[] = { F_IIFNAME, F_ETHER_SADDR,
	    F_ARP_SHA, F_ARP_TPA };
	const struct moat_prefix any4 = pfx("0.0.0.0/32");
	struct nr_chain *c = model_chain(t, "from_guest", NULL, 0, 0, NULL);
	struct nr_rb rb;

	if (b->cfg->gw.ipv6)
		bridge_from_guest6(t, c);
	rb_begin(&rb, t, c);
	rb_ethertype(&rb, ETH_P_IPV6, "ip6");
	rb_verdict(&rb, NFT_GOTO, reason_chain("bridge", "ipv6"));
	rb_end(&rb);
	rb_begin(&rb, t, c);
	rb_cmp_port(&rb, F_UDP_SPORT, 67);
	rb_verdict(&rb, NFT_GOTO, reason_chain("bridge", "dhcp"));
	rb_end(&rb);
	rb_begin(&rb, t, c);
	rb_lookup(&rb, ipk, 3, "guest_ip", false);
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
	rb_begin(&rb, t, c);
	rb_lookup(&rb, arpk, 4, "guest_arp", false);
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
	/* A guest's RFC 5227 probe for its own address (sender 0.0.0.0,
	 * target the guest's address): the gateway answers such a probe
	 * only for its own addresses, never from its ARP proxy, so the
	 * guest finds its address free and keeps it; not spoofing. */
	rb_begin(&rb, t, c);
	rb_cmp_prefix(&rb, F_ARP_SPA, false, &any4);
	rb_lookup(&rb, probek, 4, "guest_arp", false);
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
	simple_rule(t, c, NFT_GOTO, reason_chain("bridge", "spoof"));
}

/*
 * The DNS fast path's first rule (see dns_fast_pre): a guest's UDP query
 * to the gateway's address, port 53, is accepted by the anti-spoofing
 * lookup itself, as from_guest would accept it: IPv4 (not its IPv6 drop),
 * not from port 67 (not its DHCP-server drop), the port, MAC and address
 * the guest's own (guest_ip, whose ports are all in guest_ports).
 */
static void
dns_fast_bridge(struct build *b, struct nr_table *t, struct nr_chain *c)
{
	static const enum nr_field ipk[] = { F_IIFNAME, F_ETHER_SADDR,
	    F_IP_SADDR };
	struct moat_prefix me = { .addr = b->cfg->gw.address, .plen = 32 };
	struct nr_rb rb;

	rb_begin(&rb, t, c);
	rb_cmp_prefix(&rb, F_IP_DADDR, false, &me);
	rb_cmp_port(&rb, F_UDP_DPORT, 53);
	rb_cmp_port_neq(&rb, F_UDP_SPORT, 67);
	rb_lookup(&rb, ipk, 3, "guest_ip", false);
	rb_verdict(&rb, NF_ACCEPT, NULL);
	rb_end(&rb);
}

/* The trunk's segment also carries the guests of other KVM hosts, whose
 * frames to ours would pass a plain switch: towards a guest port the
 * trunk may carry only the gateway's own sandbox-network address. */
static void
trunk_to_guest(struct build *b, struct nr_table *t, struct nr_chain *c,
    const char *trunk)
{
	const struct moat_gateway *gw = &b->cfg->gw;
	struct moat_prefix self = { .addr = gw->address, .plen = 32 };
	struct nr_rb rb;
	int i;

	for (i = 0; i < 2; i++) {
		enum nr_field f = i == 0 ? F_IP_SADDR : F_ARP_SPA;

		rb_begin(&rb, t, c);
		rb_cmp_str(&rb, F_IIFNAME, false, trunk);
		rb_lookup(&rb, (enum nr_field[]){ F_OIFNAME }, 1,
		    "guest_ports", false);
		rb_cmp_prefix(&rb, f, false, &gw->network);
		rb_cmp_prefix(&rb, f, true, &self);
		rb_verdict(&rb, NFT_GOTO, reason_chain("bridge", "guest"));
		rb_end(&rb);
	}
}

/* A KVM host without the gateway's part has nothing to offer the sandbox
 * network, and what its bridge passes up may be routed on (ip_forward):
 * up the stack only what is addressed to the gateway's address, which a
 * host holds only where it stands in for the gateway. */
static void
host_input(struct build *b, struct nr_table *t)
{
	const struct moat_gateway *gw = &b->cfg->gw;
	struct moat_prefix self = { .addr = gw->address, .plen = 32 };
	struct nr_chain *c;
	struct nr_rb rb;
	int i;

	c = model_chain(t, "input", "filter", NF_BR_LOCAL_IN, -200, "filter");
	for (i = 0; i < 2; i++) {
		rb_begin(&rb, t, c);
		rb_cmp_prefix(&rb, i == 0 ? F_IP_SADDR : F_ARP_SPA, false,
		    &gw->network);
		rb_cmp_prefix(&rb, i == 0 ? F_IP_DADDR : F_ARP_TPA, true,
		    &self);
		rb_verdict(&rb, NFT_GOTO, reason_chain("bridge", "local"));
		rb_end(&rb);
	}
}

static void
build_bridge(struct build *b)
{
	const struct moat_gateway *gw = &b->cfg->gw;
	const char *trunk = NULL;
	struct nr_table *t = model_table(b->rs, NFPROTO_BRIDGE, "bridge");
	struct nr_chain *c;
	struct nr_rb rb;
	int i;

	if (b->opts->mode == NFTR_MODE_HOST_ONLY)
		trunk = b->opts->trunk ? b->opts->trunk : gw->uplink;
	guest_sets(b, t);
	if (gw->ipv6)
		guest_sets6(b, t);
	reason_chains(t, gw->nflog_group, gw->ipv6);
	bridge_from_guest(b, t);

	c = model_chain(t, "prerouting", "filter", NF_BR_PRE_ROUTING, -200,
	    "filter");
	if (b->opts->mode == NFTR_MODE_GATEWAY)
		dns_fast_bridge(b, t, c);
	rb_begin(&rb, t, c);
	rb_lookup(&rb, (enum nr_field[]){ F_IIFNAME }, 1, "guest_ports", false);
	rb_verdict(&rb, NFT_GOTO, "from_guest");
	rb_end(&rb);
	/* Any other port (of any bridge here) claiming a sandbox address:
	 * only the trunk to a separate gateway box may. */
	for (i = 0; i < 2; i++) {
		rb_begin(&rb, t, c);
		if (trunk)
			rb_cmp_str(&rb, F_IIFNAME, true, trunk);
		rb_cmp_prefix(&rb, i == 0 ? F_IP_SADDR : F_ARP_SPA, false,
		    &gw->network);
		rb_verdict(&rb, NFT_GOTO, reason_chain("bridge", "spoof"));
		rb_end(&rb);
	}
	if (gw->ipv6) {
		rb_begin(&rb, t, c);
		if (trunk)
			rb_cmp_str(&rb, F_IIFNAME, true, trunk);
		rb_cmp_prefix(&rb, F_IP6_SADDR, false, &gw->ipv6_network);
		rb_verdict(&rb, NFT_GOTO, reason_chain("bridge", "spoof"));
		rb_end(&rb);
	}

	c = model_chain(t, "forward", "filter", NF_BR_FORWARD, -200,
	    "filter");
	if (gw->ipv6)
		bridge_nd_quiet(t, c, trunk);
	bridge_arp_quiet(t, c, trunk);
	for (i = 0; i < 2; i++) {
		rb_begin(&rb, t, c);
		rb_lookup(&rb, (enum nr_field[]){ i ? F_OIFNAME : F_IIFNAME },
		    1, "guest_ports", false);
		if (trunk)
			rb_cmp_str(&rb, i ? F_IIFNAME : F_OIFNAME, true, trunk);
		rb_verdict(&rb, NFT_GOTO, reason_chain("bridge", "guest"));
		rb_end(&rb);
	}
	if (trunk) {
		trunk_to_guest(b, t, c, trunk);
		host_input(b, t);
	}
}

/* ---- entry ---------------------------------------------------------- */

static int
check_names(struct build *b)
{
	size_t i;

	for (i = 0; i < b->cfg->nsandboxes; i++) {
		const struct moat_sandbox *sb = &b->cfg->sandboxes[i];

		if (!name_ok(sb->name)) {
			snprintf(b->err, b->errlen, "sandbox \"%s\": name "
			    "must be 1-200 of A-Z a-z 0-9 _ . -", sb->name);
			return -1;
		}
		if (sb->address.family != AF_INET) {
			snprintf(b->err, b->errlen, "sandbox \"%s\": address "
			    "must be IPv4", sb->name);
			return -1;
		}
	}
	if (b->cfg->gw.network.addr.family != AF_INET) {
		snprintf(b->err, b->errlen, "gateway.network must be IPv4");
		return -1;
	}
	return 0;
}

struct nftr_ruleset *
nftr_build(const struct moat_config *cfg, const struct nftr_opts *opts,
    char *err, size_t errlen)
{
	static const struct nftr_opts defaults = { .mode = NFTR_MODE_GATEWAY };
	struct build b = { cfg, opts ? opts : &defaults, NULL, err, errlen };

	if (check_names(&b) == -1)
		return NULL;
	b.rs = xcalloc(1, sizeof(*b.rs));
	b.rs->source = xstrdup(cfg->path ? cfg->path : "-");
	b.rs->nsandboxes = cfg->nsandboxes;
	b.rs->mode = b.opts->mode;
	if (b.opts->mode == NFTR_MODE_GATEWAY)
		build_inet(&b);
	build_bridge(&b);
	return b.rs;
}

void
nftr_ruleset_free(struct nftr_ruleset *rs)
{
	if (rs)
		model_free(rs);
}
