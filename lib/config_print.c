/*
 * config_print.c -- write a loaded config back out: the normalised form
 * (libconfig syntax, defaults spelled out, sandboxes inline) and a short
 * human summary.  Secret values are never read here; only names, files
 * and placeholders appear.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"

static void
pstr(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', fp);
		fputc(*s, fp);
	}
	fputc('"', fp);
}

static void
pkv(FILE *fp, const char *indent, const char *key, const char *val)
{
	fprintf(fp, "%s%s = ", indent, key);
	pstr(fp, val);
	fputs(";\n", fp);
}

static void
plist(FILE *fp, const char *indent, const char *key,
    const struct moat_strlist *l)
{
	size_t i;

	fprintf(fp, "%s%s = [", indent, key);
	for (i = 0; i < l->n; i++) {
		fputs(i ? ", " : " ", fp);
		pstr(fp, l->v[i]);
	}
	fputs(l->n ? " ];\n" : " ];\n", fp);
}

static void
pprefixes(FILE *fp, const char *indent, const char *key,
    const struct moat_prefix *p, size_t n)
{
	char buf[64];
	size_t i;

	fprintf(fp, "%s%s = [", indent, key);
	for (i = 0; i < n; i++) {
		fputs(i ? ", " : " ", fp);
		pstr(fp, prefix_fmt(&p[i], buf, sizeof(buf)));
	}
	fputs(" ];\n", fp);
}

static const char *
proto_name(int proto)
{
	return proto == IPPROTO_TCP ? "tcp" : proto == IPPROTO_UDP ? "udp" :
	    "any";
}

static void
print_canary(FILE *fp, const struct moat_gateway *gw,
    const struct moat_sandbox *x)
{
	char buf[64];

	fputs("  canary: {\n", fp);
	pkv(fp, "    ", "address", addr_fmt(&x->address, buf, sizeof(buf)));
	snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", x->mac[0],
	    x->mac[1], x->mac[2], x->mac[3], x->mac[4], x->mac[5]);
	pkv(fp, "    ", "mac", buf);
	fprintf(fp, "    interval = %u;\n", gw->canary_interval);
	plist(fp, "    ", "allow", &x->allow);
	fputs("  };\n", fp);
}

static void
print_gateway(FILE *fp, const struct moat_gateway *gw,
    const struct moat_sandbox *canary)
{
	char buf[64];
	size_t i, j;

	fputs("gateway: {\n", fp);
	pkv(fp, "  ", "uplink", gw->uplink);
	pkv(fp, "  ", "network", prefix_fmt(&gw->network, buf, sizeof(buf)));
	pkv(fp, "  ", "bridge", gw->bridge);
	fputs("  dns: { upstream = [", fp);
	for (i = 0; i < gw->nupstream; i++) {
		fputs(i ? ", " : " ", fp);
		pstr(fp, addr_fmt(&gw->upstream[i], buf, sizeof(buf)));
	}
	fprintf(fp, " ]; tcp_per_sandbox = %u; tcp_lifetime = %u; rate = %ld;",
	    gw->dns_tcp_per_sandbox, gw->dns_tcp_lifetime, gw->dns_rate);
	if (gw->dns_burst >= 0)
		fprintf(fp, " burst = %ld;", gw->dns_burst);
	fprintf(fp, " cache_size = %ld; };\n", gw->dns_cache_size);
	fprintf(fp, "  proxy: { port = %u; intercept = %s; per_sandbox = %u;",
	    gw->proxy_port, gw->intercept ? "true" : "false",
	    gw->proxy_per_sandbox);
	if (gw->proxy_workers != 0)
		fprintf(fp, " workers = %u;", gw->proxy_workers);
	if (gw->proxy_upstream_ca != NULL) {
		fputs(" upstream_ca = ", fp);
		pstr(fp, gw->proxy_upstream_ca);
		fputc(';', fp);
	}
	fputs(" };\n", fp);
	pprefixes(fp, "  ", "treat_as_public", gw->treat_as_public,
	    gw->ntreat_as_public);
	fputs("  exceptions = (", fp);
	for (i = 0; i < gw->nexceptions; i++) {
		const struct moat_exception *x = &gw->exceptions[i];
		fprintf(fp, "%s\n    { to = ", i ? "," : "");
		pstr(fp, prefix_fmt(&x->to, buf, sizeof(buf)));
		fprintf(fp, "; proto = \"%s\"; ports = [", proto_name(x->proto));
		for (j = 0; j < x->nports; j++)
			fprintf(fp, "%s%u", j ? ", " : " ", x->ports[j]);
		fputs(" ];", fp);
		if (x->sandboxes_given) {
			fputs(" sandboxes = [", fp);
			for (j = 0; j < x->sandboxes.n; j++) {
				fputs(j ? ", " : " ", fp);
				pstr(fp, x->sandboxes.v[j]);
			}
			fputs(" ];", fp);
		}
		fputs(" }", fp);
	}
	fputs(gw->nexceptions ? "\n  );\n" : " );\n", fp);
	pkv(fp, "  ", "state_dir", gw->state_dir);
	fprintf(fp, "  nflog_group = %u;\n", gw->nflog_group);
	fprintf(fp, "  refusals: { fast = %s; global_rate = %u; };\n",
	    gw->fast_refusals ? "true" : "false", gw->refusal_rate);
	fprintf(fp, "  audit_max_kb = %u;\n", gw->audit_max_kb);
	if (gw->egress_budget > 0)
		fprintf(fp, "  egress_bytes_per_day = \"%lld\";\n",
		    gw->egress_budget);
	fprintf(fp, "  manage_network = %s;\n", gw->manage_network ? "true" :
	    "false");
	if (gw->ipv6) {
		fputs("  ipv6: { network = ", fp);
		pstr(fp, prefix_fmt(&gw->ipv6_network, buf, sizeof(buf)));
		fprintf(fp, "; uplink_mode = \"%s\";",
		    gw->ipv6_uplink == V6_UPLINK_ROUTED ? "routed" : "nat66");
		if (gw->nipv6_site > 0) {
			fputc('\n', fp);
			pprefixes(fp, "    ", "site_prefixes", gw->ipv6_site,
			    gw->nipv6_site);
			fputs("  };\n", fp);
		} else
			fputs(" };\n", fp);
	}
	if (gw->admin_group != NULL)
		pkv(fp, "  ", "admin_group", gw->admin_group);
	if (gw->member_allow.n > 0)
		plist(fp, "  ", "member_allow", &gw->member_allow);
	if (gw->member_max_egress != EGRESS_ALLOWLIST)
		pkv(fp, "  ", "member_max_egress",
		    egress_name(gw->member_max_egress));
	/* Only when changed: the defaults keep older golden dumps valid. */
	if (gw->guest_uid_first != MOAT_GUEST_UID_FIRST ||
	    gw->guest_uid_last != MOAT_GUEST_UID_LAST)
		fprintf(fp, "  guest_uids = \"%u-%u\";\n",
		    (unsigned)gw->guest_uid_first, (unsigned)gw->guest_uid_last);
	if (gw->host_access != HOST_ACCESS_OWNERS)
		pkv(fp, "  ", "host_access", host_access_name(gw->host_access));
	if (gw->import_timeout != 300)
		fprintf(fp, "  import_timeout = %u;\n", gw->import_timeout);
	if (gw->reg_listen != NULL) {
		fputs("  registration: { listen = ", fp);
		pstr(fp, gw->reg_listen);
		fputs("; cert = ", fp);
		pstr(fp, gw->reg_cert);
		fputs("; key = ", fp);
		pstr(fp, gw->reg_key);
		fputs("; };\n", fp);
	}
	if (gw->metrics_textfile != NULL || gw->metrics_listen != NULL) {
		fputs("  metrics: { ", fp);
		if (gw->metrics_textfile != NULL) {
			fputs("textfile = ", fp);
			pstr(fp, gw->metrics_textfile);
			fputs("; ", fp);
		}
		if (gw->metrics_listen != NULL) {
			fputs("listen = ", fp);
			pstr(fp, gw->metrics_listen);
			fputs("; ", fp);
		}
		for (i = 0; i < gw->nmetrics_allow; i++) {
			fputs(i == 0 ? "allow = [ " : ", ", fp);
			pstr(fp, prefix_fmt(&gw->metrics_allow[i], buf,
			    sizeof(buf)));
			if (i + 1 == gw->nmetrics_allow)
				fputs(" ]; ", fp);
		}
		fprintf(fp, "interval = %u; };\n", gw->metrics_interval);
	}
	if (gw->web_listen != NULL) {
		fputs("  web: { listen = ", fp);
		pstr(fp, gw->web_listen);
		if (gw->web_cert != NULL) {
			fputs("; cert = ", fp);
			pstr(fp, gw->web_cert);
			fputs("; key = ", fp);
			pstr(fp, gw->web_key);
		}
		fputs("; };\n", fp);
	}
	if (gw->verify_interval != 60 || !gw->verify_repair ||
	    gw->verify_repair_network)
		fprintf(fp, "  verify: { interval = %u; repair = %s; "
		    "repair_network = %s; };\n", gw->verify_interval,
		    gw->verify_repair ? "true" : "false",
		    gw->verify_repair_network ? "true" : "false");
	if (canary != NULL)
		print_canary(fp, gw, canary);
	if (gw->ha || gw->ha_uplink_address.family != 0 ||
	    gw->ha_peer != NULL) {
		fprintf(fp, "  ha: { enabled = %s; ", gw->ha ? "true" : "false");
		if (gw->ha_uplink_address.family != 0) {
			fputs("uplink_address = ", fp);
			pstr(fp, addr_fmt(&gw->ha_uplink_address, buf,
			    sizeof(buf)));
			fputs("; ", fp);
		}
		if (gw->ha_peer != NULL) {
			fputs("listen = ", fp);
			pstr(fp, gw->ha_listen);
			fputs("; peer = ", fp);
			pstr(fp, gw->ha_peer);
			fputs("; peer_key = \"sha256:", fp);
			for (size_t k = 0; k < 32; k++)
				fprintf(fp, "%02x", gw->ha_peer_key[k]);
			fputs("\"; cert = ", fp);
			pstr(fp, gw->ha_cert);
			fputs("; key = ", fp);
			pstr(fp, gw->ha_key);
			fputs("; ", fp);
		}
		fputs("};\n", fp);
	}
	fputs("};\n", fp);
}

static void
print_hosts(FILE *fp, const struct moat_config *cfg)
{
	const struct moat_host *h;
	char buf[64];
	size_t i, k;

	if (cfg->nhosts == 0)
		return;
	fputs("hosts = (\n", fp);
	for (i = 0; i < cfg->nhosts; i++) {
		h = &cfg->hosts[i];
		fputs("  { name = ", fp);
		pstr(fp, h->name);
		fputs("; key = \"sha256:", fp);
		for (k = 0; k < 32; k++)
			fprintf(fp, "%02x", h->key[k]);
		fprintf(fp, "\"; pool = \"%s\"; trunk = ",
		    prefix_fmt(&h->pool, buf, sizeof(buf)));
		pstr(fp, h->trunk);
		if (h->max_egress != EGRESS_ALLOWLIST)
			fprintf(fp, "; max_egress = \"%s\"",
			    egress_name(h->max_egress));
		for (k = 0; k < h->secrets.n; k++) {
			fputs(k ? ", " : "; secrets = [ ", fp);
			pstr(fp, h->secrets.v[k]);
		}
		if (h->secrets.n > 0)
			fputs(" ]", fp);
		fputs(i + 1 == cfg->nhosts ? "; }\n" : "; },\n", fp);
	}
	fputs(");\n", fp);
}

static void
print_secret(FILE *fp, const struct moat_secret *x, int last)
{
	fputs("  {\n", fp);
	pkv(fp, "    ", "name", x->name);
	pkv(fp, "    ", "file", x->file);
	plist(fp, "    ", "hosts", &x->hosts);
	pkv(fp, "    ", "header", x->header);
	pkv(fp, "    ", "placeholder", x->placeholder);
	if (x->owner)
		pkv(fp, "    ", "owner", x->owner);
	if (x->shared_with.n > 0)
		plist(fp, "    ", "shared_with", &x->shared_with);
	if (x->has_requests)
		plist(fp, "    ", "requests", &x->requests);
	if (x->per_minute || x->per_day) {
		fputs("    budget = {", fp);
		if (x->per_minute)
			fprintf(fp, " requests_per_minute = %ld;", x->per_minute);
		if (x->per_day)
			fprintf(fp, " requests_per_day = %ld;", x->per_day);
		fputs(" };\n", fp);
	}
	fputs(last ? "  }\n" : "  },\n", fp);
}

static void
print_quotas(FILE *fp, const struct moat_config *cfg)
{
	static const char *names[] = { "sandboxes", "cpus", "memory_mb",
	    "disk_gb" };
	const struct moat_quota *q;
	long v[4];
	size_t i, k;

	if (cfg->nquotas == 0)
		return;
	fputs("quotas = (\n", fp);
	for (i = 0; i < cfg->nquotas; i++) {
		q = &cfg->quotas[i];
		v[0] = q->sandboxes, v[1] = q->cpus, v[2] = q->memory_mb;
		v[3] = q->disk_gb;
		fputs("  { user = ", fp);
		pstr(fp, q->user);
		fputc(';', fp);
		for (k = 0; k < 4; k++)
			if (v[k] >= 0)
				fprintf(fp, " %s = %ld;", names[k], v[k]);
		fputs(i + 1 == cfg->nquotas ? " }\n" : " },\n", fp);
	}
	fputs(");\n", fp);
}

static void
print_sandbox(FILE *fp, const struct moat_sandbox *x, int last)
{
	char buf[64];

	fputs("  {\n", fp);
	pkv(fp, "    ", "name", x->name);
	snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", x->mac[0],
	    x->mac[1], x->mac[2], x->mac[3], x->mac[4], x->mac[5]);
	pkv(fp, "    ", "mac", buf);
	pkv(fp, "    ", "address", addr_fmt(&x->address, buf, sizeof(buf)));
	pkv(fp, "    ", "tap", x->tap);
	pkv(fp, "    ", "egress", egress_name(x->egress));
	plist(fp, "    ", "allow", &x->allow);
	if (x->egress == EGRESS_ALLOWLIST) {
		size_t i;

		fputs("    allow_ports = [", fp);
		for (i = 0; i < x->nallow_ports; i++)
			fprintf(fp, "%s\"%s/%u\"", i ? ", " : " ",
			    proto_name(x->allow_ports[i].proto),
			    x->allow_ports[i].port);
		fputs(" ];\n", fp);
	}
	plist(fp, "    ", "secrets", &x->secrets);
	if (x->owner)
		pkv(fp, "    ", "owner", x->owner);
	if (x->trunk[0])
		pkv(fp, "    ", "trunk", x->trunk);
	if (!x->ipv6)
		fputs("    ipv6 = false;\n", fp);
	if (x->reverify_interval != MOAT_REVERIFY_DEFAULT)
		fprintf(fp, "    reverify_interval = %u;\n",
		    x->reverify_interval);
	if (x->quarantine_on_breach)
		fputs("    quarantine_on_breach = true;\n", fp);
	fprintf(fp, "    inspect = %s;\n", x->inspect ? "true" : "false");
	plist(fp, "    ", "bypass", &x->bypass);
	if (x->dns_rate >= 0)
		fprintf(fp, "    dns_rate = %ld;\n", x->dns_rate);
	if (x->dns_burst >= 0)
		fprintf(fp, "    dns_burst = %ld;\n", x->dns_burst);
	if (x->egress_budget == 0)
		pkv(fp, "    ", "egress_bytes_per_day", "unlimited");
	else if (x->egress_budget > 0)
		fprintf(fp, "    egress_bytes_per_day = \"%lld\";\n",
		    x->egress_budget);
	fputs(last ? "  }\n" : "  },\n", fp);
}

void
config_print(FILE *fp, const struct moat_config *cfg)
{
	const struct moat_sandbox *canary = config_canary(cfg);
	size_t i, n = cfg->nsandboxes - (canary != NULL), printed = 0;

	fputs("# moat normalised configuration\n", fp);
	print_gateway(fp, &cfg->gw, canary);
	fputs("secrets = (\n", fp);
	for (i = 0; i < cfg->nsecrets; i++)
		print_secret(fp, &cfg->secrets[i], i + 1 == cfg->nsecrets);
	fputs(");\nsandboxes = (\n", fp);
	/* The canary is printed as gateway.canary, from which it is made. */
	for (i = 0; i < cfg->nsandboxes; i++)
		if (!cfg->sandboxes[i].canary)
			print_sandbox(fp, &cfg->sandboxes[i], ++printed == n);
	fputs(");\n", fp);
	print_quotas(fp, cfg);
	print_hosts(fp, cfg);
	if (cfg->box.address != NULL) {
		fputs("box: { address = ", fp);
		pstr(fp, cfg->box.address);
		if (cfg->box.ca != NULL) {
			fputs("; ca = ", fp);
			pstr(fp, cfg->box.ca);
		} else {
			size_t k;

			fputs("; pin = \"sha256:", fp);
			for (k = 0; k < 32; k++)
				fprintf(fp, "%02x", cfg->box.pin[k]);
			fputc('"', fp);
		}
		fputs("; cert = ", fp);
		pstr(fp, cfg->box.cert);
		fputs("; key = ", fp);
		pstr(fp, cfg->box.key);
		if (cfg->box.has_pool) {
			char buf[64];

			fprintf(fp, "; pool = \"%s\"",
			    prefix_fmt(&cfg->box.pool, buf, sizeof(buf)));
		}
		fputs("; };\n", fp);
	}
}

void
config_summary(FILE *fp, const struct moat_config *cfg)
{
	char net[64], gw[64], a[64];
	size_t i, j;

	fprintf(fp, "config %s: OK\n", cfg->path);
	fprintf(fp, "gateway %s on %s (network %s), uplink %s, proxy port %u%s\n",
	    addr_fmt(&cfg->gw.address, gw, sizeof(gw)), cfg->gw.bridge,
	    prefix_fmt(&cfg->gw.network, net, sizeof(net)), cfg->gw.uplink,
	    cfg->gw.proxy_port, cfg->gw.intercept ? ", intercept on" : "");
	fprintf(fp, "%zu exception(s), %zu range(s) treated as public\n",
	    cfg->gw.nexceptions, cfg->gw.ntreat_as_public);
	fprintf(fp, "secrets (%zu):", cfg->nsecrets);
	for (i = 0; i < cfg->nsecrets; i++)
		fprintf(fp, " %s", cfg->secrets[i].name);
	fprintf(fp, "\nsandboxes (%zu):\n", cfg->nsandboxes);
	for (i = 0; i < cfg->nsandboxes; i++) {
		const struct moat_sandbox *x = &cfg->sandboxes[i];
		fprintf(fp, "  %-16s %-15s %-9s", x->name,
		    addr_fmt(&x->address, a, sizeof(a)), egress_name(x->egress));
		if (x->egress == EGRESS_ALLOWLIST)
			fprintf(fp, " allow=%zu", x->allow.n);
		if (x->secrets.n) {
			fputs(" secrets=", fp);
			for (j = 0; j < x->secrets.n; j++)
				fprintf(fp, "%s%s", j ? "," : "", x->secrets.v[j]);
		}
		if (x->owner)
			fprintf(fp, " owner=%s", x->owner);
		fputc('\n', fp);
	}
}

char *
config_text_but_sandboxes_secrets(const struct moat_config *cfg)
{
	struct moat_config c = *cfg;	/* shallow: only read */
	char *buf = NULL;
	size_t len = 0;
	FILE *fp;

	/* Only the canary, which is printed in the gateway group. */
	c.sandboxes = (struct moat_sandbox *)config_canary(cfg);
	c.nsandboxes = c.sandboxes != NULL;
	c.nsecrets = 0;
	if ((fp = open_memstream(&buf, &len)) == NULL)
		fatalx("out of memory");
	config_print(fp, &c);
	if (fclose(fp) != 0)
		fatalx("out of memory");
	return buf;
}

bool
config_secret_same(const struct moat_secret *a, const struct moat_secret *b)
{
	char *ta = NULL, *tb = NULL;
	size_t la = 0, lb = 0;
	FILE *fa, *fb;
	bool same;

	if ((fa = open_memstream(&ta, &la)) == NULL ||
	    (fb = open_memstream(&tb, &lb)) == NULL)
		fatalx("out of memory");
	print_secret(fa, a, 1);
	print_secret(fb, b, 1);
	if (fclose(fa) != 0 || fclose(fb) != 0)
		fatalx("out of memory");
	same = strcmp(ta, tb) == 0;
	free(ta);
	free(tb);
	return same;
}

static char *
sandbox_text(const struct moat_sandbox *x)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp;

	if ((fp = open_memstream(&buf, &len)) == NULL)
		fatalx("out of memory");
	print_sandbox(fp, x, 1);
	if (fclose(fp) != 0)
		fatalx("out of memory");
	return buf;
}

bool
config_sandbox_same(const struct moat_sandbox *a, const struct moat_sandbox *b)
{
	char *ta = sandbox_text(a), *tb = sandbox_text(b);
	bool same = strcmp(ta, tb) == 0;

	free(ta);
	free(tb);
	return same;
}
