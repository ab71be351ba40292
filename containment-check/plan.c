/*
 * plan.c -- which probes to run.  Every group of the scan is a table of
 * targets and ports here, so what the scanner touches is visible in one
 * place and bounded: the default scan is the gateway's 65535 TCP ports,
 * at most 256 neighbours on the guest's own subnet, and a few hundred
 * probes more (see docs/containment-check.8).
 */
#include <arpa/inet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cc.h"
#include "log.h"

#define SWEEP_TIMEOUT_MIN	100	/* ms; the gateway sweep's floor */
#define SWEEP_MAX_HOSTS		254

static const uint16_t common_ports[] = { 22, 80, 443, 445, 3389, 8080 };
static const uint16_t subnet_ports[] = { 22, 80, 443 };
static const uint16_t ll_gw_ports[] = { 22, 53, 80, 443, 3128 };
/* --quick: above 1024, the gateway's ports where services usually listen
 * (proxies, databases, exporters, management pages, remote shells). */
#define QUICK_LOW_PORTS		1024
static const uint16_t quick_high_ports[] = {
	1080, 1433, 1883, 2049, 2375, 2376, 2379, 3000, 3128, 3306, 3389,
	4000, 5000, 5353, 5432, 5900, 5985, 6000, 6379, 6443, 8000, 8008,
	8053, 8080, 8081, 8086, 8088, 8443, 8888, 9000, 9090, 9091, 9100,
	9200, 9300, 10000, 10250, 11211, 15672, 27017, 50000,
};

/* Addresses where hosts usually are: home and office routers, the
 * defaults of Docker, libvirt, QEMU user networking, Tailscale, cloud. */
static const char *const likely_hosts[] = {
	"10.0.0.1", "10.0.0.2", "10.0.0.138", "10.0.1.1", "10.1.1.1",
	"10.10.0.1", "10.0.2.2", "10.0.2.3", "10.88.0.1", "10.96.0.1",
	"172.16.0.1", "172.17.0.1", "172.18.0.1", "172.31.0.1",
	"192.168.0.1", "192.168.0.254", "192.168.1.1", "192.168.1.254",
	"192.168.2.1", "192.168.10.1", "192.168.100.1", "192.168.122.1",
	"100.64.0.1", "100.100.100.100",
};

static const struct metadata {
	const char	*addr;
	const char	*what;
} metadata[] = {
	{ "169.254.169.254", "cloud metadata (AWS, GCP, Azure, OpenStack)" },
	{ "100.100.100.200", "cloud metadata (Alibaba)" },
	{ "fd00:ec2::254",   "cloud metadata (AWS IPv6)" },
};

/* The same metadata endpoint spelt so that a naive URL or Host parser
 * misses it; only a proxy parses these, so they go through the proxy. */
static const char *const metadata_urls[] = {
	"http://169.254.169.254/latest/meta-data/",
	"http://2852039166/latest/meta-data/",
	"http://0xa9fea9fe/latest/meta-data/",
	"http://0251.0376.0251.0376/latest/meta-data/",
	"http://100.100.100.200/latest/meta-data/",
	"http://[fd00:ec2::254]/latest/meta-data/",
	"http://metadata.google.internal/computeMetadata/v1/",
};

static const char *const public_resolvers[] = {
	"9.9.9.9", "1.1.1.1", "8.8.8.8", "2620:fe::fe", "2606:4700:4700::1111",
};

static const char *const ula_samples[] = {
	"fd00::1", "fd00::2", "fdfd::1", "fc00::1",
};

/* --- the probe vector -------------------------------------------------- */

struct cc_probe *
probes_add(struct cc_probes *v)
{
	struct cc_probe *p;

	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 1024;
		v->v = xreallocarray(v->v, v->cap, sizeof(*v->v));
	}
	p = &v->v[v->n++];
	memset(p, 0, sizeof(*p));
	p->fd = -1;
	return p;
}

void
probes_free(struct cc_probes *v)
{
	size_t i;

	for (i = 0; i < v->n; i++) {
		free(v->v[i].payload);
		free(v->v[i].dns);
		free(v->v[i].rbuf);
		free(v->v[i].spoof);
	}
	free(v->v);
	memset(v, 0, sizeof(*v));
}

void
sockaddr_set(union cc_sockaddr *sa, socklen_t *len, const struct moat_addr *a,
    uint16_t port, unsigned scope)
{
	struct sockaddr_storage ss;

	*len = addr_to_sockaddr(a, port, &ss);
	memset(sa, 0, sizeof(*sa));
	memcpy(sa, &ss, *len);
	if (a->family == AF_INET6)
		sa->sin6.sin6_scope_id = scope;
}

static uint16_t
random16(void)
{
	uint16_t r = 0;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint16_t)engine_now_us();
	return r;
}

static struct cc_probe *
add(struct cc_probes *v, enum cc_class cls, enum cc_kind kind,
    enum cc_expect expect, const struct moat_addr *a, uint16_t port,
    unsigned scope, const char *what, unsigned timeout_ms)
{
	struct cc_probe *p = probes_add(v);

	p->cls = cls;
	p->kind = kind;
	p->expect = expect;
	p->what = what;
	p->timeout_ms = timeout_ms;
	p->fam = (sa_family_t)a->family;
	sockaddr_set(&p->dst, &p->dstlen, a, port, scope);
	return p;
}

/* A probe that speaks once connected (HTTP, TLS, DoH) waits for an answer
 * this many times as long as one that only connects: a TLS handshake in a
 * slow guest (an emulated CPU, a scan of thousands of ports at once) can
 * take longer than a connect, and silence after a connect counts against
 * the boundary (fail closed), so it must not come from our own slowness.
 * The connect itself keeps the plain timeout: silence before it is
 * filtered either way, and waiting longer for it only slows the scan. */
#define TALK_FACTOR	4

static void
set_payload(struct cc_probe *p, enum cc_app app, const void *buf, size_t len)
{
	if (p->app == A_NONE && (app == A_TLS || app == A_WEB ||
	    app == A_HTTP) &&
	    p->timeout_ms <= 30000 / TALK_FACTOR)
		p->talk_ms = p->timeout_ms * TALK_FACTOR;
	p->app = app;
	p->payload = xmalloc(len ? len : 1);
	memcpy(p->payload, buf, len);
	p->paylen = len;
}

/* A DNS query as the probe's payload; the name is checked by args.c. */
static void
set_dns(struct cc_probe *p, const char *name, uint16_t qtype)
{
	uint8_t buf[512];
	int n;

	p->dnsid = random16();
	if ((n = cc_dns_query(name, qtype, p->dnsid, buf, sizeof(buf))) < 0)
		fatalx("cannot build a DNS query for %s", name);
	set_payload(p, A_DNS, buf, (size_t)n);
}

/* The Host (and server name) a probe on an intercepted port names: the
 * name given, or the destination's address. */
static void
host_of(const struct cc_probe *p, const char *name, char *buf, size_t len)
{
	struct moat_addr a;
	char ab[INET6_ADDRSTRLEN];

	/* An IPv6 literal in a Host header is bracketed (RFC 3986). */
	if (name != NULL) {
		snprintf(buf, len, addr_parse(name, &a) == 0 &&
		    a.family == AF_INET6 ? "[%s]" : "%s", name);
		return;
	}
	if (addr_from_sockaddr((const struct sockaddr_storage *)(const void *)
	    &p->dst, &a) == -1)
		fatalx("plan: a probe without an address");
	addr_fmt(&a, ab, sizeof(ab));
	snprintf(buf, len, a.family == AF_INET6 ? "[%s]" : "%s", ab);
}

/* On a port the gateway's proxy may answer, a TCP probe speaks, so that
 * the answer tells the proxy from the far end (intercept.c): a plain GET,
 * or a TLS handshake with one inside.  name: the host as the user gave it
 * (a control's), sent as Host and TLS server name; else the address. */
static void
speak(struct cc_probe *p, const char *name)
{
	char host[300], req[400];
	struct moat_addr lit;
	enum cc_app app;
	int len;

	if (p->kind != K_TCP || p->app != A_NONE ||
	    !cc_intercept_port(ntohs(p->dst.sin.sin_port), &app))
		return;
	host_of(p, name, host, sizeof(host));
	len = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: %s\r\n"
	    "Connection: close\r\n\r\n", host);
	set_payload(p, app, req, (size_t)len);
	/* A server name is a name: never an address literal (RFC 6066). */
	p->sni = app == A_TLS && name != NULL && addr_parse(name, &lit) == -1 ?
	    name : NULL;
}

/* DNS over HTTPS to addr: a TLS handshake (no server name, as a client
 * given only the address) and an RFC 8484 query for ". NS". */
static void
set_doh(struct cc_probe *p)
{
	uint8_t q[512];
	char host[64], req[1024];
	int n, len;

	p->dnsid = random16();
	host_of(p, NULL, host, sizeof(host));
	if ((n = cc_dns_query(".", 2, p->dnsid, q, sizeof(q))) < 0 ||
	    (len = cc_doh_request(q, (size_t)n, host, req, sizeof(req))) < 0)
		fatalx("cannot build a DoH query");
	set_payload(p, A_TLS, req, (size_t)len);
}

static void
parse_or_die(const char *s, struct moat_addr *a)
{
	if (addr_parse(s, a) == -1)
		fatalx("plan: bad built-in address %s", s);
}

/* On-link peers (the gateway, link-local neighbours) answer in far less
 * than a routed probe's timeout; a fifth of it, with a floor. */
static unsigned
onlink_timeout(const struct cc_opts *o)
{
	unsigned ms = o->timeout_ms / 5;

	if (ms < SWEEP_TIMEOUT_MIN)
		ms = SWEEP_TIMEOUT_MIN;
	return ms > o->timeout_ms ? o->timeout_ms : ms;
}

/* --- phase 1: DNS ---------------------------------------------------------- */

/* Names phase 2 needs resolved: the probe's `what` says which. */
static const char WHAT_GMETA[] = "resolve metadata.google.internal";

static void
dns_probe(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, enum cc_class cls, enum cc_expect ex,
    const char *name, uint16_t qtype, const char *what)
{
	struct cc_probe *p;

	p = add(v, cls, K_UDP, ex, &d->gateway, 53, 0, what, o->timeout_ms);
	set_dns(p, name, qtype);
}

void
plan_phase1(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d)
{
	struct moat_addr a;
	struct cc_probe *p;
	size_t i;

	if (d->gateway.family == AF_UNSPEC)
		return;
	dns_probe(v, o, d, C_CONTROL, E_DNS_ANSWER,
	    o->nallow ? o->allow[0] : ".", o->nallow ? 1 : 2,
	    "the gateway's resolver answers");
	for (i = 0; i < o->nallow; i++) {
		dns_probe(v, o, d, C_DNSPOLICY, E_DNS_ALLOW, o->allow[i], 1,
		    o->allow[i]);
		dns_probe(v, o, d, C_DNSPOLICY, E_DNS_ALLOW, o->allow[i], 28,
		    o->allow[i]);
	}
	for (i = 0; i < o->ndeny; i++) {
		dns_probe(v, o, d, C_DNSPOLICY, E_DNS_DENY, o->deny[i], 1,
		    o->deny[i]);
		dns_probe(v, o, d, C_DNSPOLICY, E_DNS_DENY, o->deny[i], 28,
		    o->deny[i]);
	}
	for (i = 0; i < o->nrebind; i++) {
		dns_probe(v, o, d, C_DNSPOLICY, E_DNS_REBIND, o->rebind[i], 1,
		    o->rebind[i]);
		dns_probe(v, o, d, C_DNSPOLICY, E_DNS_REBIND, o->rebind[i], 28,
		    o->rebind[i]);
	}
	for (i = 0; i < o->ninternet; i++)
		if (addr_parse(o->internet[i].host, &a) == -1)
			dns_probe(v, o, d, C_CONTROL, E_INFO,
			    o->internet[i].host, 1, o->internet[i].host);
	dns_probe(v, o, d, C_METADATA, E_DNS_REBIND,
	    "metadata.google.internal", 1, WHAT_GMETA);
	parse_or_die("ff02::1", &a);
	for (i = 0; i < d->nnics; i++) {
		p = add(v, C_IPV6, K_ICMP6, E_DENY, &a, 0,
		    if_nametoindex(d->nics[i]), "link-local all-nodes",
		    onlink_timeout(o));
		p->dnsid = random16();
	}
}

/* --- phase 2 --------------------------------------------------------------- */

/* The addresses phase 1 resolved for the probes whose `what` is `what`
 * (compared as a pointer: each name has its own). */
static size_t
resolved(const struct cc_probes *ph1, const char *what, struct moat_addr *out,
    size_t max)
{
	const struct cc_probe *p;
	size_t i, j, n = 0;

	for (i = 0; i < ph1->n; i++) {
		p = &ph1->v[i];
		if (p->what != what || p->dns == NULL)
			continue;
		for (j = 0; j < p->dns->naddr && n < max; j++)
			out[n++] = p->dns->addr[j];
	}
	return n;
}

/* An IPv6 control where the guest has no IPv6 way out (no global address,
 * or no route beyond its link): not run, and said so.  A guest that has
 * one must reach it: then it is judged like an IPv4 control. */
static void
v4_only_control(struct cc_probes *v, const struct moat_addr *a,
    uint16_t port)
{
	struct cc_probe *p;

	p = add(v, C_CONTROL, K_LOCAL, E_INFO, a, port, 0,
	    "the IPv6 internet is reachable", 0);
	p->verdict = V_SKIPPED;
	snprintf(p->evidence, sizeof(p->evidence),
	    "the guest is IPv4-only (no global or unique local IPv6 "
	    "address and route)");
}

static void
plan_controls(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, const struct cc_probes *ph1)
{
	struct moat_addr a[CC_DNS_MAXADDR];
	enum cc_expect ex = o->mode == M_NONE ? E_UNREACH : E_REACH;
	size_t i, j, n;

	for (i = 0; i < o->ninternet; i++) {
		if (addr_parse(o->internet[i].host, &a[0]) == 0)
			n = 1;
		else
			n = resolved(ph1, o->internet[i].host, a, 1);
		for (j = 0; j < n; j++) {
			if (a[j].family == AF_INET6 && !disc_has_v6(d)) {
				v4_only_control(v, &a[j], o->internet[i].port);
				continue;
			}
			speak(add(v, C_CONTROL, K_TCP, ex, &a[j],
			    o->internet[i].port, 0, o->mode == M_NONE ?
			    "the internet is NOT reachable (--expect none)" :
			    "the internet is reachable", o->timeout_ms),
			    o->internet[i].host);
		}
	}
}

static void
add_ports(struct cc_probes *v, enum cc_class cls, const struct moat_addr *a,
    unsigned scope, const uint16_t *ports, size_t nports, const char *what,
    unsigned timeout_ms)
{
	size_t i;

	for (i = 0; i < nports; i++)
		add(v, cls, K_TCP, E_DENY, a, ports[i], scope, what,
		    timeout_ms);
}

/* The UDP services a gateway might expose, each with a real request so
 * that a listening service answers rather than ignores it. */
static const uint8_t ntp_req[48] = { 0x23 };
static const uint8_t snmp_req[] = {	/* v2c get sysDescr.0, "public" */
	0x30, 0x26, 0x02, 0x01, 0x01, 0x04, 0x06, 'p', 'u', 'b', 'l', 'i',
	'c', 0xa0, 0x19, 0x02, 0x01, 0x01, 0x02, 0x01, 0x00, 0x02, 0x01,
	0x00, 0x30, 0x0e, 0x30, 0x0c, 0x06, 0x08, 0x2b, 0x06, 0x01, 0x02,
	0x01, 0x01, 0x01, 0x00, 0x05, 0x00,
};

static void
dhcp_discover(uint8_t *b, size_t len)
{
	static const uint8_t opts[] = { 99, 130, 83, 99, 53, 1, 1, 255 };

	memset(b, 0, len);
	b[0] = 1;		/* BOOTREQUEST */
	b[1] = 1;		/* ethernet */
	b[2] = 6;
	b[4] = 0x6d;		/* xid "moat" */
	b[5] = 0x6f;
	b[6] = 0x61;
	b[7] = 0x74;
	memcpy(b + 236, opts, sizeof(opts));
}

static void
plan_gateway(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d)
{
	struct cc_probe *p;
	uint8_t dhcp[300];

	p = add(v, C_GATEWAY, K_UDP, E_DENY, &d->gateway, 67, 0,
	    "DHCP on the gateway", o->timeout_ms);
	dhcp_discover(dhcp, sizeof(dhcp));
	set_payload(p, A_RAW, dhcp, sizeof(dhcp));
	p = add(v, C_GATEWAY, K_UDP, E_DENY, &d->gateway, 123, 0,
	    "NTP on the gateway", o->timeout_ms);
	set_payload(p, A_RAW, ntp_req, sizeof(ntp_req));
	p = add(v, C_GATEWAY, K_UDP, E_DENY, &d->gateway, 161, 0,
	    "SNMP on the gateway", o->timeout_ms);
	set_payload(p, A_RAW, snmp_req, sizeof(snmp_req));
	p = add(v, C_GATEWAY, K_UDP, E_DENY, &d->gateway, 5353, 0,
	    "mDNS on the gateway", o->timeout_ms);
	set_dns(p, "_services._dns-sd._udp.local", 12);
}

/* The gateway's every TCP port (with --quick, ports 1-1024, the proxy's
 * and the list above), with the short timeout: the gateway is
 * on-link, so a port that is there answers in far less than that.  It
 * needs nothing from phase 1, so it runs beside phases 1 and 2, and it
 * is reported after them. */
static bool
quick_high(unsigned port)
{
	size_t i;

	for (i = 0; i < sizeof(quick_high_ports) / sizeof(quick_high_ports[0]);
	    i++)
		if (quick_high_ports[i] == port)
			return true;
	return false;
}

void
plan_sweep(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d)
{
	unsigned port, sweep_ms = onlink_timeout(o);

	if (d->gateway.family != AF_INET && d->gateway.family != AF_INET6)
		return;
	for (port = 1; port <= 65535; port++) {
		bool allowed = port == 53 || port == o->proxy_port;

		if (o->quick && port > QUICK_LOW_PORTS && port !=
		    o->proxy_port && !quick_high(port))
			continue;

		add(v, C_GATEWAY, K_TCP, allowed ? E_INFO : E_DENY,
		    &d->gateway, (uint16_t)port, 0, allowed ?
		    "allowed service on the gateway" : "gateway TCP sweep",
		    sweep_ms);
	}
}

static bool
same_subnet(const struct cc_disc *d, const struct moat_addr *a)
{
	struct moat_prefix pf;
	size_t i;

	for (i = 0; i < d->nv4; i++) {
		pf.addr = d->v4[i].addr;
		pf.plen = d->v4[i].plen;
		if (a->family == AF_INET && pf.plen > 0 &&
		    ((ntohl(*(const uint32_t *)(const void *)a->a) ^
		    ntohl(*(const uint32_t *)(const void *)pf.addr.a)) >>
		    (32 - pf.plen)) == 0)
			return true;
	}
	return false;
}

static void
plan_private(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d)
{
	struct moat_addr a;
	size_t i;

	for (i = 0; i < sizeof(likely_hosts) / sizeof(likely_hosts[0]); i++) {
		parse_or_die(likely_hosts[i], &a);
		if (same_subnet(d, &a) || addr_cmp(&a, &d->gateway) == 0)
			continue;	/* the subnet sweep covers those */
		add_ports(v, C_PRIVATE, &a, 0, common_ports,
		    sizeof(common_ports) / sizeof(common_ports[0]),
		    "likely private host", o->timeout_ms);
	}
	for (i = 0; i < o->ntargets; i++) {
		if (o->targets[i].port != 0)
			add(v, C_PRIVATE, K_TCP, E_DENY, &o->targets[i].addr,
			    o->targets[i].port, 0, "--target", o->timeout_ms);
		else
			add_ports(v, C_PRIVATE, &o->targets[i].addr, 0,
			    common_ports, sizeof(common_ports) /
			    sizeof(common_ports[0]), "--target",
			    o->timeout_ms);
	}
}

static void
plan_metadata(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, const struct cc_probes *ph1)
{
	struct moat_addr a[CC_DNS_MAXADDR];
	struct cc_probe *p;
	char req[256];
	size_t i, n;
	int len;

	for (i = 0; i < sizeof(metadata) / sizeof(metadata[0]); i++) {
		parse_or_die(metadata[i].addr, &a[0]);
		add(v, C_METADATA, K_TCP, E_DENY, &a[0], 80, 0,
		    metadata[i].what, o->timeout_ms);
	}
	n = resolved(ph1, WHAT_GMETA, a, CC_DNS_MAXADDR);
	for (i = 0; i < n; i++)
		add(v, C_METADATA, K_TCP, E_DENY, &a[i], 80, 0,
		    "metadata.google.internal", o->timeout_ms);
	if (o->proxy_port == 0)
		return;
	for (i = 0; i < sizeof(metadata_urls) / sizeof(metadata_urls[0]);
	    i++) {
		const char *host = metadata_urls[i] + strlen("http://");

		len = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\n"
		    "Host: %.*s\r\nMetadata-Flavor: Google\r\n"
		    "Connection: close\r\n\r\n", metadata_urls[i],
		    (int)strcspn(host, "/"), host);
		p = add(v, C_METADATA, K_TCP, E_DENY, &d->gateway,
		    o->proxy_port, 0, metadata_urls[i], o->timeout_ms);
		if (host[0] == '[')
			p->fam = AF_INET6;
		set_payload(p, A_HTTP, req, (size_t)len);
	}
}

/* --- what the proxy may dial, and what an exception opens ------------------ */

static const uint16_t proxy_ports[] = { 22, 80, 443 };

/* Ask the proxy for addr:port, explicitly (CONNECT) or as an absolute
 * URI: a 2xx or 3xx means it dialled, which is a breach (judge_http). */
static void
via_proxy(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, enum cc_class cls, const struct moat_addr *a,
    uint16_t port, bool connect, const char *what)
{
	struct cc_probe *p;
	char host[INET6_ADDRSTRLEN + 2], ab[INET6_ADDRSTRLEN], req[384];
	int len;

	if (o->proxy_port == 0 || d->gateway.family != AF_INET)
		return;
	addr_fmt(a, ab, sizeof(ab));
	snprintf(host, sizeof(host), a->family == AF_INET6 ? "[%s]" : "%s",
	    ab);
	if (connect)
		len = snprintf(req, sizeof(req), "CONNECT %s:%u HTTP/1.1\r\n"
		    "Host: %s:%u\r\n\r\n", host, port, host, port);
	else
		len = snprintf(req, sizeof(req), "GET http://%s:%u/ HTTP/1.1\r\n"
		    "Host: %s:%u\r\nConnection: close\r\n\r\n", host, port,
		    host, port);
	p = add(v, cls, K_TCP, E_DENY, &d->gateway, o->proxy_port, 0, what,
	    o->timeout_ms);
	p->fam = (sa_family_t)a->family;
	set_payload(p, A_HTTP, req, (size_t)len);
}

/* An origin-form request whose only destination is its Host header, an
 * IPv6 literal: a proxy that routes by Host must judge the literal. */
static void
via_proxy_host(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, enum cc_class cls, const struct moat_addr *a,
    const char *what)
{
	struct cc_probe *p;
	char ab[INET6_ADDRSTRLEN], req[256];
	int len;

	if (o->proxy_port == 0 || d->gateway.family != AF_INET ||
	    a->family != AF_INET6)
		return;
	addr_fmt(a, ab, sizeof(ab));
	len = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: [%s]\r\n"
	    "Connection: close\r\n\r\n", ab);
	p = add(v, cls, K_TCP, E_DENY, &d->gateway, o->proxy_port, 0, what,
	    o->timeout_ms);
	p->fam = AF_INET6;
	set_payload(p, A_HTTP, req, (size_t)len);
}

static const char WHAT_V6_LIT_PROXY[] =
    "IPv6 address through the proxy (CONNECT, absolute URI, Host)";

/* An IPv6 host the guest must not reach, asked of the proxy in each
 * spelling: CONNECT [a]:22 and [a]:443, GET http://[a]:80/, and an
 * origin-form GET with Host: [a]. */
static void
v6_via_proxy_as(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, enum cc_class cls, const struct moat_addr *a,
    const char *what)
{
	via_proxy(v, o, d, cls, a, 22, true, what);
	via_proxy(v, o, d, cls, a, 443, true, what);
	via_proxy(v, o, d, cls, a, 80, false, what);
	via_proxy_host(v, o, d, cls, a, what);
}

static void
v6_via_proxy(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, enum cc_class cls, const struct moat_addr *a)
{
	v6_via_proxy_as(v, o, d, cls, a, WHAT_V6_LIT_PROXY);
}

/* Transparent: tcp 80 to addr is redirected to the proxy; an answer the
 * proxy did not write means it fetched from addr (intercept.c). */
static void
via_redirect(struct cc_probes *v, const struct cc_opts *o,
    enum cc_class cls, const struct moat_addr *a, const char *what)
{
	struct cc_probe *p;
	char ab[INET6_ADDRSTRLEN], req[256];
	int len;

	if (a->family != AF_INET)
		return;
	addr_fmt(a, ab, sizeof(ab));
	len = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: %s\r\n"
	    "Connection: close\r\n\r\n", ab);
	p = add(v, cls, K_TCP, E_DENY, a, 80, 0, what, o->timeout_ms);
	set_payload(p, A_WEB, req, (size_t)len);
}

static const char WHAT_GWADDR[] = "an address of the gateway host";
static const char WHAT_GWADDR_CONNECT[] =
    "an address of the gateway host, CONNECT through the proxy";
static const char WHAT_GWADDR_URI[] =
    "an address of the gateway host, absolute URI through the proxy";
static const char WHAT_GWADDR_REDIR[] =
    "an address of the gateway host, transparent HTTP";
static const char WHAT_EXC[] = "an exception that does not apply here";
static const char WHAT_EXC_PROXY[] =
    "an exception that does not apply here, through the proxy";
static const char WHAT_V6_PROXY[] = "IPv6 literal through the proxy";
static const char WHAT_V6_HOST[] =
    "IPv6 literal as the Host of an origin-form request to the proxy";
static const char WHAT_NET_PROXY[] = "the sandbox network through the proxy";
static const char WHAT_ALLOW_PORT[] =
    "an allowlisted address on a port not in allow_ports";

static bool
is_linklocal6(const struct moat_addr *a)
{
	return a->family == AF_INET6 && a->a[0] == 0xfe &&
	    (a->a[1] & 0xc0) == 0x80;
}

/* A link-local address is reached through the gateway's interface (or
 * the IPv6 route's); any other needs no scope. */
static unsigned
link_scope(const struct cc_disc *d, const struct moat_addr *a)
{
	if (!is_linklocal6(a))
		return 0;
	if (d->gw_ifindex != 0)
		return d->gw_ifindex;
	return d->gw6_ifindex;
}

static void
plan_gwaddrs(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d)
{
	static const uint16_t direct[] = { 22, 53, 3128, 8080 };
	enum cc_class cls;
	unsigned scope;
	size_t i, k;

	for (i = 0; i < o->ngwaddrs; i++) {
		const struct cc_target *t = &o->gwaddrs[i];

		cls = t->addr.family == AF_INET6 ? C_IPV6 : C_GATEWAY;
		scope = link_scope(d, &t->addr);
		/* tcp 80 and 443 may be redirected to the proxy: judged by
		 * what the proxy answers, not by the connection. */
		if (t->port != 0 && t->port != 80 && t->port != 443)
			add(v, cls, K_TCP, E_DENY, &t->addr, t->port, scope,
			    WHAT_GWADDR, o->timeout_ms);
		if (t->port == 0)
			add_ports(v, cls, &t->addr, scope, direct,
			    sizeof(direct) / sizeof(direct[0]), WHAT_GWADDR,
			    o->timeout_ms);
		via_redirect(v, o, cls, &t->addr, WHAT_GWADDR_REDIR);
		for (k = 0; k < sizeof(proxy_ports) / sizeof(proxy_ports[0]);
		    k++)
			via_proxy(v, o, d, cls, &t->addr, proxy_ports[k], true,
			    WHAT_GWADDR_CONNECT);
		via_proxy(v, o, d, cls, &t->addr, 80, false, WHAT_GWADDR_URI);
		if (t->port != 0 && t->port != 80) {
			via_proxy(v, o, d, cls, &t->addr, t->port, true,
			    WHAT_GWADDR_CONNECT);
			via_proxy(v, o, d, cls, &t->addr, t->port, false,
			    WHAT_GWADDR_URI);
		}
	}
}

static const char WHAT_ROUTED[] =
    "a host of an IPv6 network the gateway routes (not by default)";
static const char WHAT_ROUTED_PROXY[] =
    "a host of an IPv6 network the gateway routes, through the proxy "
    "(CONNECT, absolute URI, Host)";

/* The IPv6 networks the gateway host routes other than by its default
 * route (another VLAN of the site, a subnet behind the LAN's router, the
 * site's own prefixes): the gateway refuses them as the LAN.  Hosts ::1,
 * ::2 and ::10 of the network's first /64 on 22, 80 and 443, and in a
 * network wider than a /64 also ::1 of its last /64 (a subnet of the
 * site other than the one numbered first); ::1 through the proxy too. */
/* In one of the guest's own /64s: the guests' network, sampled as such. */
static bool
in_own64(const struct cc_disc *d, const struct moat_addr *a)
{
	size_t i;

	for (i = 0; i < d->nv6; i++)
		if (memcmp(d->v6[i].addr.a, a->a, 8) == 0)
			return true;
	return false;
}

static void
plan_routed(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d)
{
	static const uint8_t hosts[] = { 1, 2, 0x10 };
	struct moat_addr a;
	size_t i, k;
	int bit;

	for (i = 0; i < o->nrouted; i++) {
		const struct moat_prefix *p = &o->routed[i];

		for (k = 0; k < sizeof(hosts); k++) {
			a = p->addr;
			a.a[15] = (uint8_t)(a.a[15] + hosts[k]);
			if (in_own64(d, &a))
				break;
			add_ports(v, C_PRIVATE, &a, 0, subnet_ports,
			    sizeof(subnet_ports) / sizeof(subnet_ports[0]),
			    WHAT_ROUTED, o->timeout_ms);
			if (k == 0)
				v6_via_proxy_as(v, o, d, C_PRIVATE, &a,
				    WHAT_ROUTED_PROXY);
		}
		if (p->plen >= 64)
			continue;
		a = p->addr;
		for (bit = p->plen; bit < 64; bit++)
			a.a[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
		a.a[15] = 1;
		if (!in_own64(d, &a))
			add_ports(v, C_PRIVATE, &a, 0, subnet_ports,
			    sizeof(subnet_ports) / sizeof(subnet_ports[0]),
			    WHAT_ROUTED, o->timeout_ms);
	}
}

static void
plan_admission(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, const struct cc_probes *ph1)
{
	/* The last is public: refused only to a guest without IPv6. */
	static const char *const v6[] = { "fd00::1", "fe80::1",
	    "2001:4860:4860::8888" };
	const size_t v6_public = 2;
	struct moat_addr a[CC_DNS_MAXADDR], net;
	size_t i, k, n;

	plan_gwaddrs(v, o, d);
	for (i = 0; i < o->nclosed; i++) {
		const struct cc_target *t = &o->closed[i];
		uint16_t port = t->port ? t->port : 22;

		add(v, C_PRIVATE, K_TCP, E_DENY, &t->addr, port, 0, WHAT_EXC,
		    o->timeout_ms);
		via_proxy(v, o, d, C_PRIVATE, &t->addr, port, true,
		    WHAT_EXC_PROXY);
	}
	for (i = 0; i < sizeof(v6) / sizeof(v6[0]); i++) {
		parse_or_die(v6[i], &a[0]);
		/* A guest with IPv6 may reach public IPv6 through the proxy
		 * as directly; one without may not reach it at all. */
		if (i == v6_public && disc_has_v6(d))
			continue;
		via_proxy(v, o, d, C_IPV6, &a[0], 443, true, WHAT_V6_PROXY);
		if (i + 1 < sizeof(v6) / sizeof(v6[0]))	/* not the public one */
			via_proxy_host(v, o, d, C_IPV6, &a[0], WHAT_V6_HOST);
	}
	for (i = 0; i < o->ntargets; i++)	/* the LAN's IPv6 hosts */
		if (o->targets[i].addr.family == AF_INET6)
			v6_via_proxy(v, o, d, C_PRIVATE, &o->targets[i].addr);
	if (d->gw6.family == AF_INET6 && !is_linklocal6(&d->gw6))
		v6_via_proxy(v, o, d, C_IPV6, &d->gw6);
	/* The gateway's own sandbox-side address and a neighbour of ours. */
	net = d->gateway;
	net.a[3] ^= 2;
	for (k = 0; d->gateway.family == AF_INET && k < 2; k++) {
		via_proxy(v, o, d, C_GUESTS, &d->gateway, proxy_ports[k], true,
		    WHAT_NET_PROXY);
		via_proxy(v, o, d, C_GUESTS, &net, proxy_ports[k], true,
		    WHAT_NET_PROXY);
	}
	if (o->mode != M_ALLOWLIST)
		return;
	for (i = 0; i < o->nallow; i++) {
		n = resolved(ph1, o->allow[i], a, CC_DNS_MAXADDR);
		for (k = 0; k < n; k++)
			if (a[k].family == AF_INET) {
				add(v, C_PRIVATE, K_TCP, E_DENY, &a[k], 8443, 0,
				    WHAT_ALLOW_PORT, o->timeout_ms);
				add(v, C_PRIVATE, K_TCP, E_DENY, &a[k], 22, 0,
				    WHAT_ALLOW_PORT, o->timeout_ms);
			}
	}
}

/* Other guests: every address of the guest's own /24 (or smaller subnet)
 * and everything in the neighbour table. */
static void
plan_guests(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d)
{
	struct moat_addr a;
	uint32_t self, base, mask, h, nhost;
	size_t i;
	int plen;

	if (d->nv4 > 0) {
		memcpy(&self, d->v4[0].addr.a, 4);
		self = ntohl(self);
		plen = d->v4[0].plen < 24 ? 24 : d->v4[0].plen;
		mask = plen >= 32 ? 0xffffffffu : ~(0xffffffffu >> plen);
		base = self & mask;
		nhost = ~mask;
		for (h = 1; h < nhost && h <= SWEEP_MAX_HOSTS; h++) {
			uint32_t x = htonl(base | h);

			a.family = AF_INET;
			memset(a.a, 0, sizeof(a.a));
			memcpy(a.a, &x, 4);
			if (disc_is_self(d, &a) ||
			    addr_cmp(&a, &d->gateway) == 0)
				continue;
			add_ports(v, C_GUESTS, &a, 0, subnet_ports,
			    sizeof(subnet_ports) / sizeof(subnet_ports[0]),
			    "own subnet sweep", o->timeout_ms);
		}
	}
	for (i = 0; i < d->nneigh; i++) {
		const struct cc_neigh *n = &d->neigh[i];

		if (disc_is_self(d, &n->addr) ||
		    addr_cmp(&n->addr, &d->gateway) == 0 ||
		    (n->addr.family == AF_INET && same_subnet(d, &n->addr)) ||
		    (n->addr.family == AF_INET6 && n->addr.a[0] == 0xfe))
			continue;	/* swept above, or IPv6 link-local */
		add_ports(v, C_GUESTS, &n->addr, n->ifindex, common_ports,
		    sizeof(common_ports) / sizeof(common_ports[0]),
		    "neighbour table entry", o->timeout_ms);
	}
}

/* fe80::/64 + modified EUI-64 of a MAC: Linux's default link-local. */
static void
eui64_ll(const uint8_t mac[6], struct moat_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET6;
	a->a[0] = 0xfe;
	a->a[1] = 0x80;
	a->a[8] = mac[0] ^ 0x02;
	a->a[9] = mac[1];
	a->a[10] = mac[2];
	a->a[11] = 0xff;
	a->a[12] = 0xfe;
	a->a[13] = mac[3];
	a->a[14] = mac[4];
	a->a[15] = mac[5];
}

/* Link-local IPv6 neighbours to probe: whoever answered the all-nodes
 * echo, IPv6 routers in the neighbour table, and the gateway's EUI-64
 * address derived from its MAC (answers nothing if it uses another). */
struct ll_set {
	struct moat_addr a[16];
	unsigned	 scope[16];
	size_t		 n;
};

static void
ll_add(struct ll_set *s, const struct moat_addr *a, unsigned scope)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (addr_cmp(&s->a[i], a) == 0)
			return;
	if (s->n < sizeof(s->a) / sizeof(s->a[0])) {
		s->a[s->n] = *a;
		s->scope[s->n++] = scope;
	}
}

static void
plan_ipv6_neighbours(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, const struct cc_probes *ph1)
{
	struct ll_set s = { .n = 0 };
	struct moat_addr ll;
	size_t i, j;

	for (i = 0; i < ph1->n; i++) {
		const struct cc_probe *p = &ph1->v[i];

		if (p->kind != K_ICMP6 || p->dns == NULL)
			continue;
		for (j = 0; j < p->dns->naddr; j++)
			ll_add(&s, &p->dns->addr[j], p->dst.sin6.sin6_scope_id);
	}
	for (i = 0; i < d->nneigh; i++) {
		const struct cc_neigh *n = &d->neigh[i];

		if (n->addr.family == AF_INET &&
		    addr_cmp(&n->addr, &d->gateway) == 0 && n->has_ll) {
			eui64_ll(n->lladdr, &ll);
			ll_add(&s, &ll, n->ifindex);
		} else if (n->addr.family == AF_INET6 && n->router)
			ll_add(&s, &n->addr, n->ifindex);
	}
	for (i = 0; i < s.n; i++)
		/* The next hop's routable address is probed as such, where
		 * its resolver and proxy may answer (plan_gw6). */
		if (!disc_is_gateway(d, &s.a[i]))
			add_ports(v, C_IPV6, &s.a[i], s.scope[i],
			    ll_gw_ports,
			    sizeof(ll_gw_ports) / sizeof(ll_gw_ports[0]),
			    "IPv6 link-local neighbour (all-nodes reply, "
			    "router, gateway EUI-64)", o->timeout_ms);
}

/* NAT64 (RFC 6052 64:ff9b::/96, and the local-use 64:ff9b:1::/48 of RFC
 * 8215) carries an IPv4 address in its last 32 bits: a translator on the
 * way turns the probe into IPv4 to that address.  Private ones, the
 * metadata endpoint, the gateway's own IPv4 and every IPv4 --target
 * (the LAN) must stay as far as their IPv4 selves. */
static const char *const nat64_v4[] = {
	"10.0.0.1", "192.168.1.1", "169.254.169.254",
};
static const uint8_t nat64_wkp[12] = { 0, 0x64, 0xff, 0x9b };
static const uint8_t nat64_local[12] = { 0, 0x64, 0xff, 0x9b, 0, 1 };
static const char WHAT_NAT64[] = "NAT64-mapped private IPv4";
static const char WHAT_NAT64_PROXY[] =
    "NAT64-mapped private IPv4 through the proxy";

static const char WHAT_6TO4[] = "6to4-mapped private IPv4";
static const char WHAT_6TO4_PROXY[] =
    "6to4-mapped private IPv4 through the proxy";
static const char WHAT_TEREDO[] = "Teredo-mapped private IPv4";

/* One IPv6 address that carries the IPv4 address v4, probed on the
 * subnet ports directly and, as a literal, through the proxy. */
static void
embedded_one(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, const struct moat_addr *a, const char *what,
    const char *what_proxy)
{
	add_ports(v, C_IPV6, a, 0, subnet_ports,
	    sizeof(subnet_ports) / sizeof(subnet_ports[0]), what,
	    o->timeout_ms);
	if (what_proxy == NULL)
		return;
	via_proxy(v, o, d, C_IPV6, a, 443, true, what_proxy);
	via_proxy(v, o, d, C_IPV6, a, 80, false, what_proxy);
}

static void
nat64_one(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, const uint8_t pfx[12],
    const struct moat_addr *v4)
{
	struct moat_addr a;

	memset(&a, 0, sizeof(a));
	a.family = AF_INET6;
	memcpy(a.a, pfx, 12);
	memcpy(a.a + 12, v4->a, 4);
	embedded_one(v, o, d, &a, WHAT_NAT64, WHAT_NAT64_PROXY);
}

/* 6to4 (RFC 3056, 2002::/16) puts the IPv4 address of a site's relay in
 * bits 16-47: a relay on the way tunnels the probe to it.  Its router is
 * by convention ::1 of the site's /48. */
static void
sixtofour_one(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, const struct moat_addr *v4)
{
	struct moat_addr a;

	memset(&a, 0, sizeof(a));
	a.family = AF_INET6;
	a.a[0] = 0x20;
	a.a[1] = 0x02;
	memcpy(a.a + 2, v4->a, 4);
	a.a[15] = 1;
	embedded_one(v, o, d, &a, WHAT_6TO4, WHAT_6TO4_PROXY);
}

/* Teredo (RFC 4380, 2001::/32): the server's IPv4 address in bits 32-63
 * and the client's, inverted, in the last 32 bits; a relay sends the
 * probe to the client over IPv4.  Both are the private address here. */
static void
teredo_one(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, const struct moat_addr *v4)
{
	struct moat_addr a;
	int k;

	memset(&a, 0, sizeof(a));
	a.family = AF_INET6;
	a.a[0] = 0x20;
	a.a[1] = 0x01;
	memcpy(a.a + 4, v4->a, 4);
	for (k = 0; k < 4; k++)
		a.a[12 + k] = (uint8_t)~v4->a[k];
	embedded_one(v, o, d, &a, WHAT_TEREDO, NULL);
}

/* Every private IPv4 address the scan cares about, in each IPv6 form
 * that carries one. */
static void
embedded_v4(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, const struct moat_addr *v4)
{
	nat64_one(v, o, d, nat64_wkp, v4);
	sixtofour_one(v, o, d, v4);
}

static void
plan_nat64(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d)
{
	struct moat_addr a;
	size_t i;

	for (i = 0; i < sizeof(nat64_v4) / sizeof(nat64_v4[0]); i++) {
		parse_or_die(nat64_v4[i], &a);
		embedded_v4(v, o, d, &a);
	}
	parse_or_die(nat64_v4[0], &a);
	nat64_one(v, o, d, nat64_local, &a);
	teredo_one(v, o, d, &a);
	if (d->gateway.family == AF_INET)
		embedded_v4(v, o, d, &d->gateway);
	for (i = 0; i < o->ntargets; i++)
		if (o->targets[i].addr.family == AF_INET)
			embedded_v4(v, o, d, &o->targets[i].addr);
}

/* One address in each block of the IANA IPv6 special-purpose registry
 * that is not covered above (NAT64, 6to4, Teredo, ULA, link-local):
 * nothing is there on the internet, so an answer is a path that should
 * not exist. */
static const char *const special6[] = {
	"100::1",		/* discard-only, RFC 6666 */
	"2001:2::1",		/* benchmarking, RFC 5180 */
	"2001:20::1",		/* ORCHIDv2, RFC 7343 */
	"2001:db8::1",		/* documentation, RFC 3849 */
	"3fff::1",		/* documentation, RFC 9637 */
	"5f00::1",		/* SRv6 SIDs, RFC 9602 */
	"fec0::1",		/* site-local, deprecated by RFC 3879 */
};

static void
plan_special6(struct cc_probes *v, const struct cc_opts *o)
{
	struct moat_addr a;
	size_t i;

	for (i = 0; i < sizeof(special6) / sizeof(special6[0]); i++) {
		parse_or_die(special6[i], &a);
		add_ports(v, C_IPV6, &a, 0, subnet_ports,
		    sizeof(subnet_ports) / sizeof(subnet_ports[0]),
		    "IPv6 special-purpose block sample", o->timeout_ms);
	}
}

/* Other guests on the guest's own IPv6 prefixes (global and ULA): a /64
 * cannot be swept, so the numbers hosts are given by hand -- the first
 * few, and ours plus and minus one -- plus the neighbour table (in
 * plan_guests).  Addresses from SLAAC or privacy extensions cannot be
 * guessed; the neighbour table and the all-nodes echo find those. */
static const uint8_t own64_hosts[] = { 1, 2, 3, 0x10, 0x11, 0x64 };

/* One of the samples above already? */
static bool
own64_sampled(const struct moat_addr *a)
{
	static const uint8_t zero[7];

	return memcmp(a->a + 8, zero, 7) == 0 &&
	    memchr(own64_hosts, a->a[15], sizeof(own64_hosts)) != NULL;
}

static void
own64_add(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, const struct moat_addr *a)
{
	if (disc_is_self(d, a) || (d->gw6.family == AF_INET6 &&
	    addr_cmp(a, &d->gw6) == 0))
		return;		/* the next hop is probed as the gateway */
	add_ports(v, C_GUESTS, a, 0, subnet_ports,
	    sizeof(subnet_ports) / sizeof(subnet_ports[0]),
	    "own IPv6 /64 sample", o->timeout_ms);
}

static void
plan_own64(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d)
{
	struct moat_addr a;
	size_t i, k;
	int delta;

	for (i = 0; i < d->nv6; i++) {
		const struct moat_addr *self = &d->v6[i].addr;

		if ((self->a[0] & 0xe0) != 0x20 && (self->a[0] & 0xfe) != 0xfc)
			continue;	/* neither global nor ULA */
		for (k = 0; k < sizeof(own64_hosts); k++) {
			a = *self;
			memset(a.a + 8, 0, 8);
			a.a[15] = own64_hosts[k];
			own64_add(v, o, d, &a);
		}
		for (delta = -1; delta <= 1; delta += 2) {
			a = *self;
			a.a[15] = (uint8_t)(a.a[15] + delta);
			if (!own64_sampled(&a))
				own64_add(v, o, d, &a);
		}
		/* Our neighbour, through the proxy as a literal. */
		a = *self;
		a.a[15] = (uint8_t)(a.a[15] + 1);
		if (!disc_is_self(d, &a))
			v6_via_proxy(v, o, d, C_GUESTS, &a);
	}
}

/* The IPv6 route's next hop is the gateway host (or a router beside it):
 * the ports a host serves, directly.  On its global or unique-local
 * address the gateway's resolver and proxy may answer, as on its IPv4
 * one; on a link-local one nothing may. */
static void
plan_gw6(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d)
{
	static const uint16_t ports[] = { 22, 53, 80, 443, 3128, 8080 };
	bool ll = is_linklocal6(&d->gw6);
	size_t i;

	if (d->gw6.family != AF_INET6)
		return;
	for (i = 0; i < sizeof(ports) / sizeof(ports[0]); i++) {
		bool allowed = !ll && (ports[i] == 53 ||
		    ports[i] == o->proxy_port);

		add(v, C_IPV6, K_TCP, allowed ? E_INFO : E_DENY, &d->gw6,
		    ports[i], ll ? d->gw6_ifindex : 0, allowed ?
		    "allowed service on the gateway's IPv6 address" :
		    "the IPv6 route's next hop (the gateway host)",
		    o->timeout_ms);
	}
}

static void
plan_ipv6(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, const struct cc_probes *ph1)
{
	struct moat_addr a;
	size_t i;

	plan_ipv6_neighbours(v, o, d, ph1);
	plan_gw6(v, o, d);
	plan_nat64(v, o, d);
	plan_special6(v, o);
	plan_own64(v, o, d);
	for (i = 0; i < sizeof(ula_samples) / sizeof(ula_samples[0]); i++) {
		parse_or_die(ula_samples[i], &a);
		add_ports(v, C_IPV6, &a, 0, subnet_ports,
		    sizeof(subnet_ports) / sizeof(subnet_ports[0]),
		    "unique local address sample", o->timeout_ms);
	}
}

/* DNS that does not go through the gateway's resolver: plain DNS over
 * UDP and TCP and DoT to public resolvers and to any nameserver in
 * resolv.conf that is not the gateway; DoH and QUIC ports reported. */
static void
plan_bypass_one(struct cc_probes *v, const struct cc_opts *o,
    const struct moat_addr *a)
{
	static const uint8_t quic[64] = { 0xc3, 0, 0, 0, 1 };
	enum cc_expect doh = o->mode == M_OPEN ? E_INFO : E_DENY;
	struct cc_probe *p;

	p = add(v, C_DNSBYPASS, K_UDP, E_DENY, a, 53, 0,
	    "DNS over UDP past the gateway", o->timeout_ms);
	set_dns(p, ".", 2);
	p = add(v, C_DNSBYPASS, K_TCP, E_DENY, a, 53, 0,
	    "DNS over TCP past the gateway", o->timeout_ms);
	set_dns(p, ".", 2);
	add(v, C_DNSBYPASS, K_TCP, E_DENY, a, 853, 0, "DNS over TLS",
	    o->timeout_ms);
	p = add(v, C_DNSBYPASS, K_TCP, doh, a, 443, 0, "DNS over HTTPS (port)",
	    o->timeout_ms);
	set_doh(p);
	p = add(v, C_DNSBYPASS, K_UDP, doh, a, 443, 0, "QUIC / DoH3 (port)",
	    o->timeout_ms);
	set_payload(p, A_RAW, quic, sizeof(quic));
}

static void
plan_bypass(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d)
{
	struct moat_addr a;
	size_t i;

	if (o->nresolvers > 0) {
		for (i = 0; i < o->nresolvers; i++)
			plan_bypass_one(v, o, &o->resolvers[i]);
	} else {
		for (i = 0; i < sizeof(public_resolvers) /
		    sizeof(public_resolvers[0]); i++) {
			parse_or_die(public_resolvers[i], &a);
			plan_bypass_one(v, o, &a);
		}
	}
	for (i = 0; i < d->nns; i++) {
		/* Loopback is a stub resolver in the guest itself. */
		if (disc_is_gateway(d, &d->ns[i]) ||
		    (d->ns[i].family == AF_INET && d->ns[i].a[0] == 127))
			continue;
		plan_bypass_one(v, o, &d->ns[i]);
	}
}

/* --- anti-spoofing ---------------------------------------------------------- */

/* A locally administered MAC that is nobody's NIC ("moat", then ours). */
static void
forged_mac(const uint8_t own[6], uint8_t out[6])
{
	static const uint8_t laa[5] = { 0x02, 0x6d, 0x6f, 0x61, 0x74 };

	memcpy(out, laa, 5);
	out[5] = own[5] ^ 0x5a;
}

static uint16_t
spoof_port(void)
{
	unsigned lo = 0, hi = 0;
	FILE *f;

	if ((f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re")) !=
	    NULL) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2)
			lo = hi = 0;
		fclose(f);
	}
	return spoof_sport(lo, hi ? hi : 65536, random16());
}

static struct cc_probe *
add_spoof(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_spoof *tmpl, enum cc_spoof_kind kind, uint8_t proto,
    const struct moat_addr *dst, uint16_t port, const char *what)
{
	struct cc_probe *p;

	p = add(v, C_SPOOF, K_SPOOF, E_DENY, dst, port, 0, what,
	    o->timeout_ms);
	p->spoof = xmalloc(sizeof(*p->spoof));
	*p->spoof = *tmpl;
	p->spoof->kind = kind;
	p->spoof->proto = proto;
	p->spoof->sport = spoof_port();
	p->spoof->ipid = random16();
	p->spoof->seq = (uint32_t)random16() << 16 | random16();
	if (kind == SP_MAC)
		forged_mac(tmpl->own_mac, p->spoof->src_mac);
	return p;
}

/* The gateway's MAC from the neighbour table (phase 1 talked to it). */
static const uint8_t *
gateway_mac(const struct cc_disc *d)
{
	size_t i;

	for (i = 0; i < d->nneigh; i++)
		if (d->neigh[i].has_ll &&
		    addr_cmp(&d->neigh[i].addr, &d->gateway) == 0)
			return d->neigh[i].lladdr;
	return NULL;
}

static const struct cc_iface *
gateway_iface(const struct cc_disc *d)
{
	size_t i;

	for (i = 0; i < d->nv4; i++)
		if (d->v4[i].index == d->gw_ifindex)
			return &d->v4[i];
	return NULL;
}

/* IPv6: a TCP SYN from an unused address of the guest's own /64 (global
 * or unique local) to the first IPv6 --internet control, else to the
 * IPv6 next hop's port 53; only where the guest has IPv6. */
static void
plan_spoof6(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, const struct cc_spoof *tmpl,
    const struct cc_probes *ph1)
{
	const struct moat_addr *self = NULL;
	struct moat_addr dst[CC_DNS_MAXADDR];
	struct cc_spoof t = *tmpl;
	uint16_t port = 53;
	bool have = false;
	size_t i;

	if (!disc_has_v6(d))
		return;
	for (i = 0; i < d->nv6 && self == NULL; i++)
		if (d->v6[i].index == d->gw_ifindex &&
		    ((d->v6[i].addr.a[0] & 0xe0) == 0x20 ||
		    (d->v6[i].addr.a[0] & 0xfe) == 0xfc))
			self = &d->v6[i].addr;
	for (i = 0; i < o->ninternet && !have; i++)
		if ((addr_parse(o->internet[i].host, dst) == 0 ||
		    resolved(ph1, o->internet[i].host, dst, 1) == 1) &&
		    dst[0].family == AF_INET6) {
			port = o->internet[i].port;
			have = true;
		}
	if (!have && d->gw6.family == AF_INET6) {
		dst[0] = d->gw6;
		have = true;
	}
	if (self == NULL || !have)
		return;
	memcpy(t.src_mac, t.own_mac, 6);
	t.answer_arp = false;
	spoof_pick6(self, random16(), &t.src6);
	add_spoof(v, o, &t, SP_IP6, IPPROTO_TCP, &dst[0], port,
	    "forged source IPv6 (own MAC)");
}

/* Frames forged at layer 2 towards two positive-control destinations (the
 * gateway's DNS and the first --internet address), plus a forged ARP.
 * Six probes at most (the sixth IPv6, plan_spoof6), one frame each (and
 * ARP answers), all bounded by the probe timeout.  A few frames; only the
 * DNS query carries data. */
static void
plan_spoof(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, const struct cc_probes *ph1)
{
	const struct cc_iface *f = gateway_iface(d);
	const uint8_t *gwmac = gateway_mac(d);
	struct moat_addr taken[CC_MAXNEIGH], inet[CC_DNS_MAXADDR];
	struct cc_spoof t;
	struct cc_probe *p;
	bool have_inet = false, forge_ip;
	size_t i, n = 0;

	if (d->gateway.family != AF_INET || f == NULL || gwmac == NULL ||
	    !d->has_if_mac)
		return;
	memset(&t, 0, sizeof(t));
	t.ifindex = d->gw_ifindex;
	memcpy(t.own_mac, d->gw_if_mac, 6);
	memcpy(t.gw_mac, gwmac, 6);
	for (i = 0; i < d->nneigh; i++)
		taken[n++] = d->neigh[i].addr;
	forge_ip = spoof_pick(&f->addr, f->plen, &d->gateway, taken, n,
	    &t.src_ip) == 0;
	if (o->ninternet > 0 && (addr_parse(o->internet[0].host, inet) == 0 ||
	    resolved(ph1, o->internet[0].host, inet, 1) == 1))
		have_inet = inet[0].family == AF_INET;
	if (forge_ip) {		/* our MAC, an unused address */
		memcpy(t.src_mac, t.own_mac, 6);
		t.answer_arp = true;
		p = add_spoof(v, o, &t, SP_IP, IPPROTO_UDP, &d->gateway, 53,
		    "forged source IPv4 (own MAC)");
		set_dns(p, ".", 2);
		if (have_inet)
			add_spoof(v, o, &t, SP_IP, IPPROTO_TCP, &inet[0],
			    o->internet[0].port, "forged source IPv4 (own MAC)");
		add_spoof(v, o, &t, SP_ARP, 0, &d->gateway, 0,
		    "forged ARP sender address (own MAC)");
	}
	memcpy(&t.src_ip, f->addr.a, 4);	/* our address, a forged MAC */
	t.answer_arp = false;
	p = add_spoof(v, o, &t, SP_MAC, IPPROTO_UDP, &d->gateway, 53,
	    "forged source MAC (own IPv4)");
	set_dns(p, ".", 2);
	if (have_inet)
		add_spoof(v, o, &t, SP_MAC, IPPROTO_TCP, &inet[0],
		    o->internet[0].port,
		    "forged source MAC (own IPv4)");
	plan_spoof6(v, o, d, &t, ph1);
}

void
plan_phase2(struct cc_probes *v, const struct cc_opts *o,
    const struct cc_disc *d, const struct cc_probes *ph1)
{
	size_t i;

	plan_controls(v, o, d, ph1);
	plan_spoof(v, o, d, ph1);
	plan_metadata(v, o, d, ph1);
	plan_admission(v, o, d, ph1);
	plan_private(v, o, d);
	plan_routed(v, o, d);
	plan_bypass(v, o, d);
	plan_ipv6(v, o, d, ph1);
	plan_guests(v, o, d);
	for (i = 0; i < v->n; i++)
		if (v->v[i].expect == E_DENY)
			speak(&v->v[i], NULL);
	if (d->gateway.family == AF_INET || d->gateway.family == AF_INET6)
		plan_gateway(v, o, d);
}
