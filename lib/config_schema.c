/*
 * config_schema.c -- what moat.conf may say: one table of {key, type,
 * required, setter, field} per group, the setters only one key needs,
 * and the loaders of one gateway, secret, sandbox or quota entry.
 * To add a key, add its row here; the generic setters and their range
 * and word tables live in config_validate.c.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "config_int.h"
#include "log.h"
#include "pathmatch.h"

/*
 * Bounded integers (set_int): the limits live here so that each key's
 * error says what it accepts; the field's width comes with them.
 */
#define LIMIT(name)	{ name, 0, 1000000, "", sizeof(long) }
const struct irange config_ranges[] = {
	{ "tcp_per_sandbox", 1, 1024, "", sizeof(unsigned) },
	{ "tcp_lifetime", 1, 3600, "", sizeof(unsigned) },
	{ "per_sandbox", 1, 65535, "", sizeof(unsigned) },
	{ "workers", 1, MOAT_PROXY_WORKERS_MAX, "", sizeof(unsigned) },
	{ "audit_max_kb", 64, 16777216, "", sizeof(unsigned) },
	{ "import_timeout", 10, 86400, "", sizeof(unsigned) },
	{ "interval", 1, 3600, " (seconds)", sizeof(unsigned) },
	{ "reverify_interval", 0, 604800, " (seconds; 0: never)",
	    sizeof(unsigned) },
	{ "cache_size", 4096, 1073741824, " bytes", sizeof(long) },
	{ "nflog_group", 0, 65535, "", sizeof(uint16_t) },
	/* Below 1,000/s the cap itself would silence refusals of one guest. */
	{ "global_rate", 1000, 10000000, " (ICMP errors per second)",
	    sizeof(uint32_t) },
	LIMIT("rate"), LIMIT("burst"), LIMIT("dns_rate"), LIMIT("dns_burst"),
	LIMIT("sandboxes"), LIMIT("cpus"), LIMIT("memory_mb"), LIMIT("disk_gb"),
	{ NULL, 0, 0, NULL, 0 }
};

/* Keys that name one of a few words (set_word). */
const struct kword config_words[] = {
	{ "proto", "tcp", IPPROTO_TCP },
	{ "proto", "udp", IPPROTO_UDP },
	{ "proto", "any", 0 },
	{ "egress", "open", EGRESS_OPEN },
	{ "egress", "allowlist", EGRESS_ALLOWLIST },
	{ "egress", "none", EGRESS_NONE },
	{ "max_egress", "open", EGRESS_OPEN },
	{ "max_egress", "allowlist", EGRESS_ALLOWLIST },
	{ "max_egress", "none", EGRESS_NONE },
	{ "host_access", "owners", HOST_ACCESS_OWNERS },
	{ "host_access", "root", HOST_ACCESS_ROOT },
	{ "host_access", "all", HOST_ACCESS_ALL },
	{ "member_max_egress", "open", EGRESS_OPEN },
	{ "member_max_egress", "allowlist", EGRESS_ALLOWLIST },
	{ "member_max_egress", "none", EGRESS_NONE },
	{ "uplink_mode", "nat66", V6_UPLINK_NAT66 },
	{ "uplink_mode", "routed", V6_UPLINK_ROUTED },
	{ NULL, NULL, 0 }
};

/* --- gateway ---------------------------------------------------------- */

static void
set_network(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	const char *v = config_setting_get_string(s);

	if (prefix_parse(v, &gw->network) == -1 ||
	    gw->network.addr.family != AF_INET || strchr(v, '/') == NULL) {
		serr(ld, s, "%s: network: expected an IPv4 network like "
		    "\"10.77.0.0/24\" with no host bits set, got \"%s\"", ctx, v);
		goto bad;
	}
	if (gw->network.plen < 8 || gw->network.plen > 29) {
		serr(ld, s, "%s: network: expected a prefix length from /8 to "
		    "/29, got /%d", ctx, gw->network.plen);
		goto bad;
	}
	/* A public sandbox network would make every guest look like the
	 * internet to whatever judges addresses by the private table. */
	if (!network_is_private(&gw->network)) {
		serr(ld, s, "%s: network: expected a private range such as "
		    "10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16, got \"%s\" "
		    "(public)", ctx, v);
		goto bad;
	}
	gw->address = gw->network.addr;
	gw->address.a[3] |= 1;		/* the first host address */
	return;
bad:
	memset(&gw->network, 0, sizeof(gw->network));
}

static void
set_treat(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;

	set_prefixes(ld, s, &gw->treat_as_public, &gw->ntreat_as_public, ctx,
	    k->name);
}

static void
set_upstream(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	const config_setting_t *e;
	const char *v;
	int i, n = config_setting_length(s);

	if (n == 0)
		serr(ld, s, "%s: upstream: expected at least one resolver "
		    "address", ctx);
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		v = config_setting_get_string(e);
		gw->upstream = xreallocarray(gw->upstream, gw->nupstream + 1,
		    sizeof(*gw->upstream));
		if (addr_parse(v, &gw->upstream[gw->nupstream]) == -1) {
			serr(ld, e, "%s: upstream: expected an IPv4 or IPv6 "
			    "address, got \"%s\"", ctx, v);
			continue;
		}
		gw->nupstream++;
	}
}

static const struct key dns_keys[] = {
	{ "upstream", K_STRLIST, 1, set_upstream, 0 },
	{ "tcp_per_sandbox", K_INT, 0, set_int,
	    offsetof(struct moat_gateway, dns_tcp_per_sandbox) },
	{ "tcp_lifetime", K_INT, 0, set_int,
	    offsetof(struct moat_gateway, dns_tcp_lifetime) },
	{ "rate", K_INT, 0, set_int, offsetof(struct moat_gateway, dns_rate) },
	{ "burst", K_INT, 0, set_int, offsetof(struct moat_gateway, dns_burst) },
	{ "cache_size", K_INT, 0, set_int,
	    offsetof(struct moat_gateway, dns_cache_size) },
};

static void
set_upstream_ca(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	const char *v = config_setting_get_string(s);
	struct stat st;

	if (v[0] != '/') {
		serr(ld, s, "%s: upstream_ca: expected an absolute path, got "
		    "\"%s\"", ctx, v);
		return;
	}
	if (!ld->normalised && (stat(v, &st) == -1 || !S_ISREG(st.st_mode))) {
		serr(ld, s, "%s: upstream_ca: expected a readable PEM file, "
		    "cannot use %s", ctx, v);
		return;
	}
	free(gw->proxy_upstream_ca);
	gw->proxy_upstream_ca = xstrdup(v);
}

static const struct key proxy_keys[] = {
	{ "port", K_INT, 0, set_port, offsetof(struct moat_gateway, proxy_port) },
	{ "upstream_ca", K_STR, 0, set_upstream_ca, 0 },
	{ "intercept", K_BOOL, 0, set_bool,
	    offsetof(struct moat_gateway, intercept) },
	{ "per_sandbox", K_INT, 0, set_int,
	    offsetof(struct moat_gateway, proxy_per_sandbox) },
	{ "workers", K_INT, 0, set_int,
	    offsetof(struct moat_gateway, proxy_workers) },
};

static void
set_dns(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	walk(ld, s, dns_keys, NKEYS(dns_keys), obj,
	    "gateway.dns");
}

static void
set_proxy(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	walk(ld, s, proxy_keys, NKEYS(proxy_keys), obj,
	    "gateway.proxy");
}

static void
set_exc_to(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_exception *x = obj;
	const char *v = config_setting_get_string(s);

	if (prefix_parse(v, &x->to) == -1) {
		serr(ld, s, "%s: to: expected an address or prefix like "
		    "\"192.168.1.50/32\" with no host bits set, got \"%s\"", ctx,
		    v);
		x->to.plen = -1;
	}
}

static void
set_exc_ports(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_exception *x = obj;
	const config_setting_t *e;
	long long v;
	int i, n = config_setting_length(s);

	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		v = config_setting_get_int64(e);
		if (v < 1 || v > 65535) {
			serr(ld, e, "%s: ports: expected ports from 1 to 65535, "
			    "got %lld", ctx, v);
			continue;
		}
		x->ports = xreallocarray(x->ports, x->nports + 1,
		    sizeof(*x->ports));
		x->ports[x->nports++] = (uint16_t)v;
	}
}

/* Names are checked against the sandboxes once every file is read
 * (check_exceptions): drop-ins come after the main file. */
static void
set_exc_sandboxes(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_exception *x = obj;
	const config_setting_t *e;
	int i, n = config_setting_length(s);

	x->sandboxes_given = true;
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		x->sandboxes.v = xreallocarray(x->sandboxes.v,
		    x->sandboxes.n + 1, sizeof(char *));
		x->sandbox_lines = xreallocarray(x->sandbox_lines,
		    x->sandboxes.n + 1, sizeof(int));
		x->sandbox_lines[x->sandboxes.n] =
		    config_setting_source_line(e);
		x->sandboxes.v[x->sandboxes.n++] =
		    xstrdup(config_setting_get_string(e));
	}
}

static const struct key exception_keys[] = {
	{ "to", K_STR, 1, set_exc_to, 0 },
	{ "proto", K_STR, 0, set_word, offsetof(struct moat_exception, proto) },
	{ "ports", K_INTLIST, 0, set_exc_ports, 0 },
	{ "sandboxes", K_STRLIST, 0, set_exc_sandboxes, 0 },
};

static void
set_exceptions(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	struct moat_exception *x;
	const config_setting_t *e;
	char c[64];
	int i, n = config_setting_length(s);

	gw->exceptions = xcalloc((size_t)n, sizeof(*gw->exceptions));
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		x = &gw->exceptions[gw->nexceptions++];
		where(ld, e, &x->where);
		snprintf(c, sizeof(c), "exception %d", i + 1);
		walk(ld, e, exception_keys, NKEYS(exception_keys), x, c);
		if (x->nports > 0 && x->proto == 0 &&
		    config_setting_get_member(e, "ports") != NULL)
			serr(ld, e, "%s: ports need proto = \"tcp\" or \"udp\"",
			    c);
		if (x->to.plen == 0)
			serr(ld, e, "%s: to: a /0 exception would open every "
			    "private range; name the hosts instead", c);
	}
}

/* "FIRST-LAST": the uids (and same-numbered gids) provision gives one
 * per guest.  Never 0, never (uid_t)-1, at least one. */
static void
set_guest_uids(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	const char *v = config_setting_get_string(s);
	unsigned long long a, b;
	int n = 0;

	(void)k;
	if (sscanf(v, "%llu-%llu%n", &a, &b, &n) != 2 || v[n] != '\0' ||
	    a < 1000 || b < a || b >= 0x7fffffffULL || !isdigit((unsigned char)v[0])) {
		serr(ld, s, "%s: guest_uids: expected \"FIRST-LAST\" with "
		    "1000 <= FIRST <= LAST < 2147483647, got \"%s\"", ctx, v);
		return;
	}
	gw->guest_uid_first = (uid_t)a;
	gw->guest_uid_last = (uid_t)b;
}

static void
set_state_dir(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	const char *v = config_setting_get_string(s);

	if (v[0] != '/' || strlen(v) >= PATH_MAX) {
		serr(ld, s, "%s: state_dir: expected an absolute path, got "
		    "\"%s\"", ctx, v);
		return;
	}
	free(gw->state_dir);
	gw->state_dir = xstrdup(v);
}

static void
set_admin_group(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	const char *v = config_setting_get_string(s);

	/* Group names follow the same rules as user names. */
	if (!username_valid(v)) {
		serr(ld, s, "%s: admin_group: expected a local group name, got "
		    "\"%s\"", ctx, v);
		return;
	}
	free(gw->admin_group);
	gw->admin_group = xstrdup(v);
}

static const struct key refusal_keys[] = {
	{ "fast", K_BOOL, 0, set_bool, offsetof(struct moat_gateway, fast_refusals) },
	{ "global_rate", K_INT, 0, set_int,
	    offsetof(struct moat_gateway, refusal_rate) },
};

static void
set_refusals(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	walk(ld, s, refusal_keys, NKEYS(refusal_keys),
	    obj, "gateway.refusals");
}

/* registration = { listen; cert; key; }: the TLS endpoint KVM hosts
 * register their sandboxes on (gatewayd/register/register.c). */
static void
set_reg_str(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	char **f = FIELD(obj, k, char *);
	const char *v = config_setting_get_string(s);

	if (strcmp(k->name, "listen") != 0 && v[0] != '/') {
		serr(ld, s, "%s: %s: expected an absolute path, got \"%s\"",
		    ctx, k->name, v);
		return;
	}
	if (strcmp(k->name, "listen") == 0 && strrchr(v, ':') == NULL) {
		serr(ld, s, "%s: listen: expected \"ADDRESS:PORT\", got \"%s\"",
		    ctx, v);
		return;
	}
	if (strcmp(k->name, "listen") == 0)
		where(ld, s, &((struct moat_gateway *)obj)->reg_where);
	free(*f);
	*f = xstrdup(v);
}

static const struct key registration_keys[] = {
	{ "listen", K_STR, 1, set_reg_str,
	    offsetof(struct moat_gateway, reg_listen) },
	{ "cert", K_STR, 1, set_reg_str, offsetof(struct moat_gateway, reg_cert) },
	{ "key", K_STR, 1, set_reg_str, offsetof(struct moat_gateway, reg_key) },
};

static void
set_registration(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	walk(ld, s, registration_keys, NKEYS(registration_keys), obj,
	    "gateway.registration");
}

/* metrics = { textfile; listen; allow; interval; }: Prometheus text for
 * node_exporter's textfile collector and/or a scrape endpoint on a
 * management address (gatewayd/metrics/metrics.c). */
static void
set_metrics_str(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	const char *v = config_setting_get_string(s);
	bool listen = strcmp(k->name, "listen") == 0;
	char **f = listen ? &gw->metrics_listen : &gw->metrics_textfile;

	if (!listen && (v[0] != '/' || strlen(v) < 7 ||
	    strcmp(v + strlen(v) - 5, ".prom") != 0)) {
		serr(ld, s, "%s: textfile: expected an absolute path ending in "
		    "\".prom\" (node_exporter's textfile collector reads only "
		    "those), got \"%s\"", ctx, v);
		return;
	}
	if (listen && strrchr(v, ':') == NULL) {
		serr(ld, s, "%s: listen: expected \"ADDRESS:PORT\", got \"%s\"",
		    ctx, v);
		return;
	}
	if (listen)
		where(ld, s, &gw->metrics_where);
	free(*f);
	*f = xstrdup(v);
}

/* allow = [ "192.168.100.5", "192.168.100.0/28" ]: the scrapers; a
 * connection from any other source is refused before it takes a slot. */
static void
set_metrics_allow(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;

	free(gw->metrics_allow);
	gw->metrics_allow = NULL;
	gw->nmetrics_allow = 0;
	where(ld, s, &gw->metrics_allow_where);
	if (config_setting_length(s) == 0)
		serr(ld, s, "%s: allow: expected at least one address or "
		    "network like \"192.168.100.5\" (leave the key out to let "
		    "any source on the management network scrape)", ctx);
	set_prefixes(ld, s, &gw->metrics_allow, &gw->nmetrics_allow, ctx,
	    k->name);
}

static const struct key metrics_keys[] = {
	{ "textfile", K_STR, 0, set_metrics_str, 0 },
	{ "listen", K_STR, 0, set_metrics_str, 0 },
	{ "allow", K_STRLIST, 0, set_metrics_allow, 0 },
	{ "interval", K_INT, 0, set_int,
	    offsetof(struct moat_gateway, metrics_interval) },
};

/* web = { listen; cert; key; }: the operator's web console (moat-web),
 * off unless listen is set; without cert and key it makes its own. */
static void
set_web_str(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	char **f = FIELD(obj, k, char *);
	const char *v = config_setting_get_string(s);
	bool listen = strcmp(k->name, "listen") == 0;

	if (!listen && v[0] != '/') {
		serr(ld, s, "%s: %s: expected an absolute path, got \"%s\"",
		    ctx, k->name, v);
		return;
	}
	if (listen && strrchr(v, ':') == NULL) {
		serr(ld, s, "%s: listen: expected \"ADDRESS:PORT\", got \"%s\"",
		    ctx, v);
		return;
	}
	free(*f);
	*f = xstrdup(v);
}

static const struct key web_keys[] = {
	{ "listen", K_STR, 0, set_web_str,
	    offsetof(struct moat_gateway, web_listen) },
	{ "cert", K_STR, 0, set_web_str,
	    offsetof(struct moat_gateway, web_cert) },
	{ "key", K_STR, 0, set_web_str,
	    offsetof(struct moat_gateway, web_key) },
};

static void
set_web(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;

	where(ld, s, &gw->web_where);
	walk(ld, s, web_keys, NKEYS(web_keys), obj, "gateway.web");
}

static void
set_metrics(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	walk(ld, s, metrics_keys, NKEYS(metrics_keys), obj, "gateway.metrics");
}

/* verify = { interval; repair; }: gatewayd's watch of its own tables.
 * interval 0 turns the timed comparison off (notifications still count). */
static void
set_verify_interval(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	long long v = config_setting_get_int64(s);

	if (v < 0 || v > 86400) {
		serr(ld, s, "%s: interval: expected 0 (off) to 86400 (seconds), "
		    "got %lld", ctx, v);
		return;
	}
	((struct moat_gateway *)obj)->verify_interval = (unsigned)v;
}

static const struct key verify_keys[] = {
	{ "interval", K_INT, 0, set_verify_interval, 0 },
	{ "repair", K_BOOL, 0, set_bool,
	    offsetof(struct moat_gateway, verify_repair) },
	{ "repair_network", K_BOOL, 0, set_bool,
	    offsetof(struct moat_gateway, verify_repair_network) },
};

static void
set_verify(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	walk(ld, s, verify_keys, NKEYS(verify_keys), obj, "gateway.verify");
}

/*
 * uplink_address: the pair's shared uplink address (keepalived's).  A
 * masquerade mapping is dropped by the kernel when its address leaves
 * the uplink, as it does on the old master at failover, and conntrackd
 * would carry that drop to the new master: snat to the shared address
 * keeps the mapping on both boxes.
 */
static void
set_ha_uplink(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	const char *v = config_setting_get_string(s);

	if (addr_parse(v, &gw->ha_uplink_address) == -1 ||
	    gw->ha_uplink_address.family != AF_INET) {
		serr(ld, s, "gateway.ha: uplink_address: expected an IPv4 "
		    "address like \"203.0.113.1\", got \"%s\"", v);
		memset(&gw->ha_uplink_address, 0,
		    sizeof(gw->ha_uplink_address));
	}
}

/* ha = { listen; peer; peer_key; cert; key; }: replication between the
 * two boxes of a pair (gatewayd/parent/harepl.c).  Their presence together is
 * checked once the group is read (check_ha). */
static void
set_ha_str(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	char **f = FIELD(obj, k, char *);
	const char *v = config_setting_get_string(s);
	bool addr = strcmp(k->name, "listen") == 0 ||
	    strcmp(k->name, "peer") == 0;
	const char *colon = strrchr(v, ':');

	if (!addr && v[0] != '/') {
		serr(ld, s, "%s: %s: expected an absolute path, got \"%s\"",
		    ctx, k->name, v);
		return;
	}
	if (addr && (colon == NULL || colon == v || colon[1] == '\0' ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))) {
		serr(ld, s, "%s: %s: expected \"ADDRESS:PORT\" on the link "
		    "between the two boxes, got \"%s\"", ctx, k->name, v);
		return;
	}
	if (strcmp(k->name, "listen") == 0)
		where(ld, s, &gw->ha_listen_where);
	free(*f);
	*f = xstrdup(v);
}

static void
set_ha_peer_key(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	const char *v = config_setting_get_string(s);
	unsigned int x;
	size_t i;

	if (strncmp(v, "sha256:", 7) != 0 || strlen(v) != 7 + 64 ||
	    strspn(v + 7, "0123456789abcdefABCDEF") != 64) {
		serr(ld, s, "%s: peer_key: expected \"sha256:\" and 64 hex "
		    "digits (the SHA-256 of the other box's certificate's "
		    "public key), got \"%s\"", ctx, v);
		return;
	}
	for (i = 0; i < 32; i++) {
		sscanf(v + 7 + 2 * i, "%2x", &x);
		gw->ha_peer_key[i] = (uint8_t)x;
	}
	gw->ha_has_peer_key = true;
}

static const struct key ha_keys[] = {
	{ "enabled", K_BOOL, 1, set_bool, offsetof(struct moat_gateway, ha) },
	{ "uplink_address", K_STR, 0, set_ha_uplink, 0 },
	{ "listen", K_STR, 0, set_ha_str,
	    offsetof(struct moat_gateway, ha_listen) },
	{ "peer", K_STR, 0, set_ha_str, offsetof(struct moat_gateway, ha_peer) },
	{ "peer_key", K_STR, 0, set_ha_peer_key, 0 },
	{ "cert", K_STR, 0, set_ha_str, offsetof(struct moat_gateway, ha_cert) },
	{ "key", K_STR, 0, set_ha_str, offsetof(struct moat_gateway, ha_key) },
};

static void
set_ha(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	where(ld, s, &((struct moat_gateway *)obj)->ha_where);
	walk(ld, s, ha_keys, NKEYS(ha_keys), obj, "gateway.ha");
}

/*
 * egress_bytes_per_day: "2G", "500M", "1024K" or a number of bytes, as a
 * string; K, M, G and T are powers of 1024.  A sandbox may also say
 * "unlimited" to have no budget where the gateway sets a default.
 */
static void
set_egress_budget(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	static const char units[] = "KMGT";
	const char *v = config_setting_get_string(s), *u;
	unsigned long long n = 0;
	size_t i, nd = strspn(v, "0123456789");

	if (strcmp(v, "unlimited") == 0 && strcmp(ctx, "gateway") != 0) {
		*FIELD(obj, k, long long) = 0;
		return;
	}
	if (nd > 0 && nd <= 13 && (v[nd] == '\0' || (v[nd + 1] == '\0' &&
	    (u = strchr(units, v[nd])) != NULL))) {
		for (i = 0; i < nd; i++)
			n = n * 10 + (unsigned long long)(v[i] - '0');
		if (v[nd] != '\0')
			n <<= 10 * (u - units + 1);
		if (n >= 1 && n <= 1ULL << 50) {
			*FIELD(obj, k, long long) = (long long)n;
			return;
		}
	}
	serr(ld, s, "%s: %s: expected a size from 1 byte to 1024T such as "
	    "\"500M\" or \"2G\" (K, M, G, T: powers of 1024)%s, got \"%s\"",
	    ctx, k->name, strcmp(ctx, "gateway") != 0 ? ", or \"unlimited\"" :
	    "", v);
}

/*
 * ipv6 = { network; uplink_mode; }: guests' IPv6.  The network is one /64,
 * a unique-local one (fc00::/7, for nat66) or a global one delegated to
 * this gateway; each guest's address is derived from its IPv4 one
 * (config_sandbox_addr6), the gateway's is the network's ::1.
 */
static void
set_v6_network(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	static const struct moat_prefix ula = { { AF_INET6, { 0xfc } }, 7 },
	    global = { { AF_INET6, { 0x20 } }, 3 };
	struct moat_gateway *gw = obj;
	const char *v = config_setting_get_string(s);
	struct moat_prefix p;

	where(ld, s, &gw->ipv6_where);
	if (prefix_parse(v, &p) == -1 || p.addr.family != AF_INET6 ||
	    strchr(v, '/') == NULL) {
		serr(ld, s, "%s: network: expected an IPv6 network like "
		    "\"fd77::/64\" with no host bits set, got \"%s\"", ctx, v);
		return;
	}
	if (p.plen != 64) {
		serr(ld, s, "%s: network: expected a /64 (guests' addresses "
		    "are derived within one), got /%d", ctx, p.plen);
		return;
	}
	if (!prefix_overlaps(&p, &ula) && !prefix_overlaps(&p, &global)) {
		serr(ld, s, "%s: network: expected a unique-local network "
		    "(fc00::/7) or a global one (2000::/3), got \"%s\"", ctx, v);
		return;
	}
	gw->ipv6_network = p;
	gw->ipv6_address = p.addr;
	gw->ipv6_address.a[15] = 1;
}

/* site_prefixes: the site's own global IPv6 prefixes (a delegated /56,
 * its other VLANs), refused to guests as the host's own networks are,
 * also where the host has no address or route in them. */
static void
set_v6_site(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	size_t i, n0 = gw->nipv6_site;

	set_prefixes(ld, s, &gw->ipv6_site, &gw->nipv6_site, ctx, k->name);
	for (i = n0; i < gw->nipv6_site; i++)
		if (gw->ipv6_site[i].addr.family != AF_INET6) {
			serr(ld, config_setting_get_elem(s, (unsigned)(i - n0)),
			    "%s: %s: expected IPv6 prefixes like "
			    "\"2001:db8:77::/48\", got an IPv4 one", ctx,
			    k->name);
			break;
		}
}

static const struct key ipv6_keys[] = {
	{ "network", K_STR, 1, set_v6_network, 0 },
	{ "site_prefixes", K_STRLIST, 0, set_v6_site, 0 },
	{ "uplink_mode", K_STR, 0, set_word,
	    offsetof(struct moat_gateway, ipv6_uplink) },
};

static void
set_ipv6(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	static const struct moat_prefix ula = { { AF_INET6, { 0xfc } }, 7 };
	struct moat_gateway *gw = obj;
	const config_setting_t *m;

	gw->ipv6 = true;
	walk(ld, s, ipv6_keys, NKEYS(ipv6_keys), obj, "gateway.ipv6");
	/* The internet routes no unique-local prefix back to the gateway. */
	if (gw->ipv6_uplink == V6_UPLINK_ROUTED &&
	    gw->ipv6_network.plen == 64 &&
	    prefix_overlaps(&gw->ipv6_network, &ula) &&
	    (m = config_setting_get_member(s, "uplink_mode")) != NULL)
		serr(ld, m, "gateway.ipv6: uplink_mode: \"routed\" needs a "
		    "global network (2000::/3) delegated to this gateway; a "
		    "unique-local one leaves only masqueraded, with \"nat66\"");
}

static void set_canary(struct loader *, const config_setting_t *, void *,
    const char *, const struct key *);

static const struct key gateway_keys[] = {
	{ "uplink", K_STR, 1, set_ifname, offsetof(struct moat_gateway, uplink) },
	{ "network", K_STR, 1, set_network, 0 },
	{ "bridge", K_STR, 0, set_ifname, offsetof(struct moat_gateway, bridge) },
	{ "dns", K_GROUP, 1, set_dns, 0 },
	{ "proxy", K_GROUP, 0, set_proxy, 0 },
	{ "treat_as_public", K_STRLIST, 0, set_treat, 0 },
	{ "exceptions", K_GROUPLIST, 0, set_exceptions, 0 },
	{ "state_dir", K_STR, 0, set_state_dir, 0 },
	{ "nflog_group", K_INT, 0, set_int,
	    offsetof(struct moat_gateway, nflog_group) },
	{ "admin_group", K_STR, 0, set_admin_group, 0 },
	{ "member_allow", K_STRLIST, 0, set_patterns,
	    offsetof(struct moat_gateway, member_allow) },
	{ "member_max_egress", K_STR, 0, set_word,
	    offsetof(struct moat_gateway, member_max_egress) },
	{ "refusals", K_GROUP, 0, set_refusals, 0 },
	{ "host_access", K_STR, 0, set_word,
	    offsetof(struct moat_gateway, host_access) },
	{ "audit_max_kb", K_INT, 0, set_int,
	    offsetof(struct moat_gateway, audit_max_kb) },
	{ "egress_bytes_per_day", K_STR, 0, set_egress_budget,
	    offsetof(struct moat_gateway, egress_budget) },
	{ "manage_network", K_BOOL, 0, set_bool,
	    offsetof(struct moat_gateway, manage_network) },
	{ "guest_uids", K_STR, 0, set_guest_uids, 0 },
	{ "import_timeout", K_INT, 0, set_int,
	    offsetof(struct moat_gateway, import_timeout) },
	{ "registration", K_GROUP, 0, set_registration, 0 },
	{ "metrics", K_GROUP, 0, set_metrics, 0 },
	{ "web", K_GROUP, 0, set_web, 0 },
	{ "verify", K_GROUP, 0, set_verify, 0 },
	{ "canary", K_GROUP, 0, set_canary, 0 },
	{ "ha", K_GROUP, 0, set_ha, 0 },
	{ "ipv6", K_GROUP, 0, set_ipv6, 0 },
};

/* --- secrets ---------------------------------------------------------- */

static void
set_sec_file(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_secret *x = obj;
	const char *v = config_setting_get_string(s);
	struct stat st;

	if (v[0] != '/') {
		serr(ld, s, "%s: file: expected an absolute path, got \"%s\"",
		    ctx, v);
		return;
	}
	x->file = xstrdup(v);
	if (ld->normalised)	/* checked by the parent that sent it */
		return;
	if (lstat(v, &st) == -1 && errno == EACCES && geteuid() != 0) {
		addwarn(ld, sfile(ld, s), sline(s), "%s: file: %s is not "
		    "readable by uid %u; not checked (gatewayd reads it as "
		    "root)", ctx, v, (unsigned)geteuid());
		return;
	}
	if (lstat(v, &st) == -1) {
		serr(ld, s, "%s: file: cannot read %s: %s", ctx, v,
		    strerror(errno));
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		serr(ld, s, "%s: file: %s must be a regular file (not a "
		    "symbolic link or device)", ctx, v);
		return;
	}
	if (st.st_uid != 0 || (st.st_mode & 077) != 0)
		serr(ld, s, "%s: file: %s must be mode 0600 owned by root, "
		    "is %04o owned by uid %u", ctx, v,
		    (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
}

static void
set_sec_str(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	const char *v = config_setting_get_string(s);
	bool header = strcmp(k->name, "header") == 0;

	if (header ? !token_valid(v) : !placeholder_valid(v)) {
		if (header)
			serr(ld, s, "%s: header: expected an HTTP header name "
			    "like \"Authorization\", got \"%s\"", ctx, v);
		else
			serr(ld, s, "%s: placeholder: expected 8 to 256 "
			    "printable characters without spaces", ctx);
		return;
	}
	free(*FIELD(obj, k, char *));
	*FIELD(obj, k, char *) = xstrdup(v);
}

/* requests = [ "GET /repos/acme/x", ... ]: each rule checked by the
 * matcher that will apply it. */
static void
set_sec_requests(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_secret *x = obj;
	const config_setting_t *e;
	char err[512];
	int i, n = config_setting_length(s);

	if (n == 0 || n > 64) {
		serr(ld, s, "%s: requests: expected 1 to 64 rules like "
		    "\"GET /repos/acme/*\" (leave the key out to allow every "
		    "request)", ctx);
		return;
	}
	x->has_requests = true;
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		if (pm_rule_check(config_setting_get_string(e), err,
		    sizeof(err)) < 0) {
			serr(ld, e, "%s: requests: %s", ctx, err);
			continue;
		}
		x->requests.v = xreallocarray(x->requests.v, x->requests.n + 1,
		    sizeof(char *));
		x->requests.v[x->requests.n++] =
		    xstrdup(config_setting_get_string(e));
	}
}

static void
set_budget_n(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	long long v = config_setting_get_int64(s);

	if (v < 1 || v > 1000000000) {
		serr(ld, s, "%s: budget: %s: expected 1 to 1000000000 requests "
		    "(leave it out for no limit), got %lld", ctx, k->name, v);
		return;
	}
	*FIELD(obj, k, long) = (long)v;
}

static const struct key budget_keys[] = {
	{ "requests_per_minute", K_INT, 0, set_budget_n,
	    offsetof(struct moat_secret, per_minute) },
	{ "requests_per_day", K_INT, 0, set_budget_n,
	    offsetof(struct moat_secret, per_day) },
};

static void
set_sec_budget(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	if (config_setting_length(s) == 0)
		serr(ld, s, "%s: budget: expected requests_per_minute or "
		    "requests_per_day", ctx);
	walk(ld, s, budget_keys, NKEYS(budget_keys), obj, ctx);
}

static const struct key secret_keys[] = {
	{ "name", K_STR, 1, set_name, offsetof(struct moat_secret, name) },
	{ "file", K_STR, 1, set_sec_file, 0 },
	{ "hosts", K_STRLIST, 1, set_hosts,
	    offsetof(struct moat_secret, hosts) },
	{ "header", K_STR, 0, set_sec_str, offsetof(struct moat_secret, header) },
	{ "placeholder", K_STR, 1, set_sec_str,
	    offsetof(struct moat_secret, placeholder) },
	{ "owner", K_STR, 0, set_owner, offsetof(struct moat_secret, owner) },
	{ "shared_with", K_STRLIST, 0, set_users,
	    offsetof(struct moat_secret, shared_with) },
	{ "requests", K_STRLIST, 0, set_sec_requests, 0 },
	{ "budget", K_GROUP, 0, set_sec_budget, 0 },
};

/* --- sandboxes -------------------------------------------------------- */

static void
set_sb_mac(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_sandbox *x = obj;
	static const uint8_t zero[6];
	const char *v = config_setting_get_string(s);

	if (mac_parse(v, x->mac) == -1) {
		serr(ld, s, "%s: mac: expected a MAC address like "
		    "\"52:54:00:00:00:0a\", got \"%s\"", ctx, v);
		return;
	}
	if ((x->mac[0] & 1) || memcmp(x->mac, zero, 6) == 0)
		serr(ld, s, "%s: mac: expected a unicast, non-zero MAC address, "
		    "got \"%s\"", ctx, v);
}

static void
set_sb_address(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_sandbox *x = obj;
	const char *v = config_setting_get_string(s);

	if (addr_parse(v, &x->address) == -1 || x->address.family != AF_INET) {
		serr(ld, s, "%s: address: expected an IPv4 address like "
		    "\"10.77.0.10\", got \"%s\"", ctx, v);
		memset(&x->address, 0, sizeof(x->address));
	}
}

static void
set_sb_secrets(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_sandbox *x = obj;
	const config_setting_t *e;
	const char *v;
	size_t j;
	int i, n = config_setting_length(s);

	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		v = config_setting_get_string(e);
		for (j = 0; j < x->secrets.n; j++)
			if (strcmp(x->secrets.v[j], v) == 0)
				break;
		if (j < x->secrets.n) {
			serr(ld, e, "%s: secrets: \"%s\" is listed twice", ctx,
			    v);
			continue;
		}
		if (config_secret_by_name(ld->cfg, v) == NULL) {
			serr(ld, e, "%s: secrets: expected the name of a secret "
			    "defined in \"secrets\", got \"%s\"", ctx, v);
			continue;
		}
		x->secrets.v = xreallocarray(x->secrets.v, x->secrets.n + 1,
		    sizeof(char *));
		x->secrets.v[x->secrets.n++] = xstrdup(v);
	}
}

static void
set_sb_ports(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_sandbox *x = obj;
	const config_setting_t *e;
	const char *v;
	char proto[4], tail;
	unsigned port;
	int i, n = config_setting_length(s);

	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		v = config_setting_get_string(e);
		if (sscanf(v, "%3[a-z]/%u%c", proto, &port, &tail) != 2 ||
		    (strcmp(proto, "tcp") != 0 && strcmp(proto, "udp") != 0) ||
		    port < 1 || port > 65535 || v[4] == '0') {
			serr(ld, e, "%s: allow_ports: expected \"tcp/PORT\" or "
			    "\"udp/PORT\" with a port from 1 to 65535, got "
			    "\"%s\"", ctx, v);
			continue;
		}
		x->allow_ports = xreallocarray(x->allow_ports,
		    x->nallow_ports + 1, sizeof(*x->allow_ports));
		x->allow_ports[x->nallow_ports].proto = proto[0] == 't' ?
		    IPPROTO_TCP : IPPROTO_UDP;
		x->allow_ports[x->nallow_ports++].port = (uint16_t)port;
	}
	if (n == 0)
		serr(ld, s, "%s: allow_ports: expected at least one port",
		    ctx);
}

static const struct key sandbox_keys[] = {
	{ "name", K_STR, 1, set_name, offsetof(struct moat_sandbox, name) },
	{ "mac", K_STR, 1, set_sb_mac, 0 },
	{ "address", K_STR, 1, set_sb_address, 0 },
	{ "tap", K_STR, 1, set_ifname, offsetof(struct moat_sandbox, tap) },
	{ "egress", K_STR, 1, set_word, offsetof(struct moat_sandbox, egress) },
	{ "allow", K_STRLIST, 0, set_allow,
	    offsetof(struct moat_sandbox, allow) },
	{ "secrets", K_STRLIST, 0, set_sb_secrets, 0 },
	{ "owner", K_STR, 0, set_owner, offsetof(struct moat_sandbox, owner) },
	{ "inspect", K_BOOL, 0, set_bool, offsetof(struct moat_sandbox, inspect) },
	{ "bypass", K_STRLIST, 0, set_patterns,
	    offsetof(struct moat_sandbox, bypass) },
	{ "dns_rate", K_INT, 0, set_int, offsetof(struct moat_sandbox, dns_rate) },
	{ "dns_burst", K_INT, 0, set_int,
	    offsetof(struct moat_sandbox, dns_burst) },
	{ "allow_ports", K_STRLIST, 0, set_sb_ports, 0 },
	{ "egress_bytes_per_day", K_STR, 0, set_egress_budget,
	    offsetof(struct moat_sandbox, egress_budget) },
	{ "trunk", K_STR, 0, set_ifname, offsetof(struct moat_sandbox, trunk) },
	{ "ipv6", K_BOOL, 0, set_bool, offsetof(struct moat_sandbox, ipv6) },
	{ "reverify_interval", K_INT, 0, set_int,
	    offsetof(struct moat_sandbox, reverify_interval) },
	{ "quarantine_on_breach", K_BOOL, 0, set_bool,
	    offsetof(struct moat_sandbox, quarantine_on_breach) },
};

/*
 * canary = { address; allow; interval; mac; }: the sandbox gatewayd keeps
 * for itself.  It is an ordinary allowlist sandbox named "canary" on the
 * port "mt-canary", so the policy, dnsd and the proxy treat it exactly
 * as a guest; the loader appends it after every other sandbox.
 */
static void
set_canary_interval(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	long long v = config_setting_get_int64(s);

	if (v < 0 || v > 86400) {
		serr(ld, s, "%s: interval: expected 0 (only after a commit "
		    "that narrows the policy) to 86400 (seconds), got %lld",
		    ctx, v);
		return;
	}
	ld->cfg->gw.canary_interval = (unsigned)v;
}

static const struct key canary_keys[] = {
	{ "address", K_STR, 1, set_sb_address, 0 },
	{ "allow", K_STRLIST, 1, set_allow,
	    offsetof(struct moat_sandbox, allow) },
	{ "mac", K_STR, 0, set_sb_mac, 0 },
	{ "interval", K_INT, 0, set_canary_interval, 0 },
};

static void
set_canary(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	struct moat_sandbox *x;
	size_t nerr = ld->errs->n;

	if (gw->canary == NULL)
		gw->canary = xcalloc(1, sizeof(*gw->canary));
	x = gw->canary;
	x->name = xstrdup(MOAT_CANARY_NAME);
	snprintf(x->tap, sizeof(x->tap), "%s", MOAT_CANARY_TAP);
	memcpy(x->mac, (const uint8_t[6]){ 0x52, 0x54, 0x00, 0xca, 0x4a,
	    0x01 }, 6);
	x->egress = EGRESS_ALLOWLIST;
	x->dns_rate = x->dns_burst = -1;
	x->egress_budget = -1;
	x->ipv6 = true;
	x->canary = true;
	where(ld, s, &x->where);
	walk(ld, s, canary_keys, NKEYS(canary_keys), x, "gateway.canary");
	if (ld->errs->n == nerr && x->allow.n == 0)
		serr(ld, s, "gateway.canary: allow: expected at least one name "
		    "the canary may reach");
	x->allow_ports = xcalloc(2, sizeof(*x->allow_ports));
	x->allow_ports[0] = (struct moat_port){ IPPROTO_TCP, 80 };
	x->allow_ports[1] = (struct moat_port){ IPPROTO_TCP, 443 };
	x->nallow_ports = 2;
}

/* After every other sandbox: the canary, which must be a sandbox like
 * theirs (inside gateway.network, none of the gateway's addresses). */
void
load_canary(struct loader *ld)
{
	struct moat_config *cfg = ld->cfg;
	struct moat_sandbox *x = cfg->gw.canary;
	const struct moat_gateway *gw = &cfg->gw;

	if (x == NULL)
		return;
	if (x->address.family == AF_INET && gw->network.addr.family ==
	    AF_INET && (!prefix_contains(&gw->network, &x->address) ||
	    addr_cmp(&x->address, &gw->address) == 0 ||
	    addr_cmp(&x->address, &gw->network.addr) == 0))
		adderr(ld, x->where.file, x->where.line, "gateway.canary: "
		    "address: expected a free host address inside "
		    "gateway.network, not the gateway's own");
	if (cfg->nsandboxes >= MOAT_MAX_SANDBOXES) {
		adderr(ld, x->where.file, x->where.line, "gateway.canary: too "
		    "many sandboxes (at most %d, the canary's included)",
		    MOAT_MAX_SANDBOXES);
		return;
	}
	cfg->gw.canary = NULL;
	cfg->sandboxes = xreallocarray(cfg->sandboxes, cfg->nsandboxes + 1,
	    sizeof(*cfg->sandboxes));
	cfg->sandboxes[cfg->nsandboxes++] = *x;
	free(x);
}

/* The host named by a drop-in's registration mark, or NULL. */
static char *
reg_mark_host(const char *line)
{
	size_t ml = strlen(MOAT_REG_MARK), n;
	char name[64];

	if (strncmp(line, MOAT_REG_MARK, ml) != 0)
		return NULL;
	n = strcspn(line + ml, "\n");
	if (n == 0 || n >= sizeof(name) || line[ml + n] != '\n')
		return NULL;
	memcpy(name, line + ml, n);
	name[n] = '\0';
	return config_username_valid(name) ? xstrdup(name) : NULL;
}

void
load_sandbox(struct loader *ld, const config_setting_t *grp,
    const char *default_name)
{
	struct moat_config *cfg = ld->cfg;
	struct moat_sandbox *x;
	char ctx[96];
	size_t nerr;

	if (cfg->nsandboxes >= MOAT_MAX_SANDBOXES) {
		serr(ld, grp, "too many sandboxes (at most %d)",
		    MOAT_MAX_SANDBOXES);
		return;
	}
	cfg->sandboxes = xreallocarray(cfg->sandboxes, cfg->nsandboxes + 1,
	    sizeof(*cfg->sandboxes));
	x = &cfg->sandboxes[cfg->nsandboxes++];
	memset(x, 0, sizeof(*x));
	x->dns_rate = x->dns_burst = -1;
	x->egress_budget = -1;
	x->ipv6 = true;
	x->reverify_interval = MOAT_REVERIFY_DEFAULT;
	where(ld, grp, &x->where);
	nerr = ld->errs->n;
	load_entry(ld, grp, "sandbox", cfg->nsandboxes, default_name,
	    sandbox_keys, NKEYS(sandbox_keys), x,
	    &x->name, ctx, sizeof(ctx));
	check_sandbox(ld, grp, x, ctx, ld->errs->n == nerr);
	if (x->name != NULL && strcmp(x->name, MOAT_CANARY_NAME) == 0)
		serr(ld, grp, "%s: name \"%s\" is reserved for gateway.canary",
		    ctx, MOAT_CANARY_NAME);
	if (default_name != NULL)
		x->registered_by = reg_mark_host(ld->first_line);
	if (x->nallow_ports == 0 && x->egress == EGRESS_ALLOWLIST) {
		x->allow_ports = xcalloc(2, sizeof(*x->allow_ports));
		x->allow_ports[0] = (struct moat_port){ IPPROTO_TCP, 80 };
		x->allow_ports[1] = (struct moat_port){ IPPROTO_TCP, 443 };
		x->nallow_ports = 2;
	}
}

/* --- top level -------------------------------------------------------- */

static void
load_gateway(struct loader *ld, const config_setting_t *s)
{
	const config_setting_t *m;

	walk(ld, s, gateway_keys, NKEYS(gateway_keys),
	    &ld->cfg->gw, "gateway");
	if ((m = config_setting_get_member(s, "uplink")) != NULL)
		where(ld, m, &ld->cfg->gw.uplink_where);
	if ((m = config_setting_get_member(s, "network")) != NULL)
		where(ld, m, &ld->cfg->gw.network_where);
}

void
load_secret(struct loader *ld, const config_setting_t *e,
    const char *default_name)
{
	struct moat_config *cfg = ld->cfg;
	struct moat_secret *x;
	char ctx[96];

	if (cfg->nsecrets >= MOAT_MAX_SANDBOXES) {
		serr(ld, e, "too many secrets (at most %d)", MOAT_MAX_SANDBOXES);
		return;
	}
	cfg->secrets = xreallocarray(cfg->secrets, cfg->nsecrets + 1,
	    sizeof(*cfg->secrets));
	x = &cfg->secrets[cfg->nsecrets++];
	memset(x, 0, sizeof(*x));
	where(ld, e, &x->where);
	x->dropin = default_name != NULL;
	load_entry(ld, e, "secret", cfg->nsecrets, default_name, secret_keys,
	    NKEYS(secret_keys), x, &x->name, ctx,
	    sizeof(ctx));
	if (x->header == NULL)
		x->header = xstrdup("Authorization");
}

static void
load_secrets(struct loader *ld, const config_setting_t *s)
{
	int i, n = config_setting_length(s);

	for (i = 0; i < n; i++)
		load_secret(ld, config_setting_get_elem(s, (unsigned int)i),
		    NULL);
}

/* --- quotas ----------------------------------------------------------- */

static void
set_quota_user(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_quota *q = obj;
	const char *v = config_setting_get_string(s);

	if (strcmp(v, "*") != 0 && !username_valid(v)) {
		serr(ld, s, "%s: user: expected a local user name or \"*\", "
		    "got \"%s\"", ctx, v);
		return;
	}
	free(q->user);
	q->user = xstrdup(v);
}

static const struct key quota_keys[] = {
	{ "user", K_STR, 1, set_quota_user, 0 },
	{ "sandboxes", K_INT, 0, set_int,
	    offsetof(struct moat_quota, sandboxes) },
	{ "cpus", K_INT, 0, set_int, offsetof(struct moat_quota, cpus) },
	{ "memory_mb", K_INT, 0, set_int,
	    offsetof(struct moat_quota, memory_mb) },
	{ "disk_gb", K_INT, 0, set_int, offsetof(struct moat_quota, disk_gb) },
};

static void
load_quotas(struct loader *ld, const config_setting_t *s)
{
	struct moat_config *cfg = ld->cfg;
	struct moat_quota *q;
	const config_setting_t *e;
	char ctx[64];
	int i, n = config_setting_length(s);

	cfg->quotas = xcalloc((size_t)n, sizeof(*cfg->quotas));
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		q = &cfg->quotas[cfg->nquotas++];
		q->sandboxes = q->cpus = q->memory_mb = q->disk_gb = -1;
		where(ld, e, &q->where);
		snprintf(ctx, sizeof(ctx), "quota %d", i + 1);
		walk(ld, e, quota_keys, NKEYS(quota_keys), q, ctx);
	}
}

/* --- hosts (separate gateway box) ------------------------------------ */

static void
set_host_name(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_host *h = obj;
	const char *v = config_setting_get_string(s);

	if (!config_username_valid(v)) {
		serr(ld, s, "%s: name: expected letters, digits, '-' or '_', "
		    "got \"%s\"", ctx, v);
		return;
	}
	free(h->name);
	h->name = xstrdup(v);
}

static void
set_host_key(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_host *h = obj;
	const char *v = config_setting_get_string(s);
	unsigned int b;
	size_t i;

	if (strncmp(v, "sha256:", 7) != 0 || strlen(v) != 7 + 64)
		goto bad;
	for (i = 0; i < 32; i++) {
		if (!isxdigit((unsigned char)v[7 + 2 * i]) ||
		    !isxdigit((unsigned char)v[8 + 2 * i]) ||
		    sscanf(v + 7 + 2 * i, "%2x", &b) != 1)
			goto bad;
		h->key[i] = (uint8_t)b;
	}
	return;
bad:
	serr(ld, s, "%s: key: expected \"sha256:\" and 64 hex digits (the "
	    "SHA-256 of the host certificate's public key), got \"%s\"", ctx, v);
}

static void
set_host_pool(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_host *h = obj;
	const char *v = config_setting_get_string(s);

	if (prefix_parse(v, &h->pool) == -1 || h->pool.addr.family != AF_INET ||
	    strchr(v, '/') == NULL)
		serr(ld, s, "%s: pool: expected an IPv4 network like "
		    "\"10.77.0.64/26\", got \"%s\"", ctx, v);
}

/* The secrets a host's sandboxes may be bound to: names, checked
 * against secrets = once everything is read (check_hosts). */
static void
set_host_secrets(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_strlist *l = &((struct moat_host *)obj)->secrets;
	const config_setting_t *e;
	const char *v;
	int i, n = config_setting_length(s);

	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		v = config_setting_get_string(e);
		if (!ident_valid(v, 32)) {
			serr(ld, e, "%s: secrets: expected names of secrets, got "
			    "\"%s\"", ctx, v);
			continue;
		}
		l->v = xreallocarray(l->v, l->n + 1, sizeof(char *));
		l->v[l->n++] = xstrdup(v);
	}
}

static const struct key host_keys[] = {
	{ "name", K_STR, 1, set_host_name, 0 },
	{ "key", K_STR, 1, set_host_key, 0 },
	{ "pool", K_STR, 1, set_host_pool, 0 },
	{ "trunk", K_STR, 1, set_ifname, offsetof(struct moat_host, trunk) },
	{ "max_egress", K_STR, 0, set_word,
	    offsetof(struct moat_host, max_egress) },
	{ "secrets", K_STRLIST, 0, set_host_secrets, 0 },
};

static void
load_hosts(struct loader *ld, const config_setting_t *s)
{
	struct moat_config *cfg = ld->cfg;
	struct moat_host *h;
	const config_setting_t *e;
	char ctx[64];
	int i, n = config_setting_length(s);

	cfg->hosts = xcalloc((size_t)n, sizeof(*cfg->hosts));
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		h = &cfg->hosts[cfg->nhosts++];
		h->max_egress = EGRESS_ALLOWLIST;
		where(ld, e, &h->where);
		snprintf(ctx, sizeof(ctx), "host %d", i + 1);
		walk(ld, e, host_keys, NKEYS(host_keys), h, ctx);
	}
}

/* --- box (a KVM host's separate gateway box) -------------------------- */

static void
set_box_str(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	char **f = FIELD(obj, k, char *);
	const char *v = config_setting_get_string(s);
	const char *colon = strrchr(v, ':');

	if (strcmp(k->name, "address") == 0) {
		if (colon == NULL || colon == v || colon[1] == '\0' ||
		    strspn(colon + 1, "0123456789") != strlen(colon + 1)) {
			serr(ld, s, "%s: address: expected \"ADDRESS:PORT\" "
			    "(the box's registration endpoint), got \"%s\"",
			    ctx, v);
			return;
		}
	} else if (v[0] != '/') {
		serr(ld, s, "%s: %s: expected an absolute path, got \"%s\"",
		    ctx, k->name, v);
		return;
	}
	free(*f);
	*f = xstrdup(v);
}

/* The host's pool at the box (its hosts = entry): new sandboxes get
 * addresses from it, inside gateway.network. */
static void
set_box_pool(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_box *b = obj;
	const struct moat_prefix *net = &ld->cfg->gw.network;
	const char *v = config_setting_get_string(s);

	if (prefix_parse(v, &b->pool) == -1 || b->pool.addr.family != AF_INET ||
	    strchr(v, '/') == NULL || b->pool.plen > 30 ||
	    b->pool.plen < net->plen || !prefix_contains(net, &b->pool.addr)) {
		serr(ld, s, "%s: pool: expected an IPv4 network inside "
		    "gateway.network like \"10.77.0.64/26\", got \"%s\"",
		    ctx, v);
		return;
	}
	b->has_pool = true;
}

/* pin = "sha256:HEX": the box's public key typed in, instead of its
 * certificate file (the same form as a host's key at the box). */
static void
set_box_pin(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_box *b = obj;
	const char *v = config_setting_get_string(s);
	unsigned int x;
	size_t i;

	if (strncmp(v, "sha256:", 7) != 0 || strlen(v) != 7 + 64 ||
	    strspn(v + 7, "0123456789abcdefABCDEF") != 64) {
		serr(ld, s, "%s: pin: expected \"sha256:\" and 64 hex digits "
		    "(the SHA-256 of the box certificate's public key), got "
		    "\"%s\"", ctx, v);
		return;
	}
	for (i = 0; i < 32; i++) {
		sscanf(v + 7 + 2 * i, "%2x", &x);
		b->pin[i] = (uint8_t)x;
	}
	b->has_pin = true;
}

static const struct key box_keys[] = {
	{ "address", K_STR, 1, set_box_str, offsetof(struct moat_box, address) },
	{ "ca", K_STR, 0, set_box_str, offsetof(struct moat_box, ca) },
	{ "pin", K_STR, 0, set_box_pin, 0 },
	{ "cert", K_STR, 1, set_box_str, offsetof(struct moat_box, cert) },
	{ "key", K_STR, 1, set_box_str, offsetof(struct moat_box, key) },
	{ "pool", K_STR, 0, set_box_pool, 0 },
};

static void
load_box(struct loader *ld, const config_setting_t *s)
{
	struct moat_box *b = &ld->cfg->box;

	where(ld, s, &b->where);
	walk(ld, s, box_keys, NKEYS(box_keys), b, "box");
	if ((b->ca != NULL) == b->has_pin)
		serr(ld, s, "box: expected exactly one of ca (the box's "
		    "certificate file) and pin (its key's \"sha256:...\")");
}

static void
load_sandboxes(struct loader *ld, const config_setting_t *s)
{
	int i, n = config_setting_length(s);

	for (i = 0; i < n; i++)
		load_sandbox(ld, config_setting_get_elem(s, (unsigned int)i),
		    NULL);
}

const struct top_key config_top_keys[] = {
	{ "gateway", K_GROUP, 1, load_gateway },
	{ "secrets", K_GROUPLIST, 0, load_secrets },
	{ "sandboxes", K_GROUPLIST, 0, load_sandboxes },
	{ "quotas", K_GROUPLIST, 0, load_quotas },
	{ "hosts", K_GROUPLIST, 0, load_hosts },
	{ "box", K_GROUP, 0, load_box },
};

const size_t config_ntop_keys = NKEYS(config_top_keys);

/* --- defaults -------------------------------------------------------- */

void
set_defaults(struct moat_config *cfg)
{
	snprintf(cfg->gw.bridge, sizeof(cfg->gw.bridge), "moat0");
	cfg->gw.proxy_port = 3128;
	cfg->gw.intercept = true;
	cfg->gw.manage_network = true;
	cfg->gw.nflog_group = 77;
	cfg->gw.fast_refusals = true;
	cfg->gw.refusal_rate = 100000;
	cfg->gw.host_access = HOST_ACCESS_OWNERS;
	cfg->gw.audit_max_kb = 65536;
	cfg->gw.guest_uid_first = MOAT_GUEST_UID_FIRST;
	cfg->gw.guest_uid_last = MOAT_GUEST_UID_LAST;
	cfg->gw.import_timeout = 300;
	cfg->gw.metrics_interval = 15;
	cfg->gw.verify_interval = 60;
	cfg->gw.verify_repair = true;
	cfg->gw.canary_interval = 300;
	cfg->gw.dns_tcp_per_sandbox = 8;
	cfg->gw.dns_tcp_lifetime = 30;
	cfg->gw.proxy_per_sandbox = 64;
	cfg->gw.state_dir = xstrdup("/var/lib/moat");
	cfg->gw.dns_rate = 500;
	cfg->gw.dns_burst = -1;
	cfg->gw.dns_cache_size = 8L << 20;
	cfg->gw.member_max_egress = EGRESS_ALLOWLIST;
}

