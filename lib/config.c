/*
 * config.c -- the configuration model's life after loading: freeing it
 * and looking things up in it.  Loading is config_load.c (see
 * config_int.h for how the loader is split).
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"

/* --- freeing ---------------------------------------------------------- */

static void
strlist_free(struct moat_strlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static void
sandbox_free_fields(struct moat_sandbox *x)
{
	free(x->name);
	free(x->owner);
	free(x->registered_by);
	strlist_free(&x->allow);
	strlist_free(&x->secrets);
	strlist_free(&x->bypass);
	free(x->allow_ports);
}

void
config_free_sandboxes(struct moat_config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->nsandboxes; i++)
		sandbox_free_fields(&cfg->sandboxes[i]);
	if (cfg->gw.canary != NULL) {
		sandbox_free_fields(cfg->gw.canary);
		free(cfg->gw.canary);
		cfg->gw.canary = NULL;
	}
	free(cfg->sandboxes);
	cfg->sandboxes = NULL;
	cfg->nsandboxes = 0;
}

void
config_free(struct moat_config *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
	config_free_sandboxes(cfg);
	for (i = 0; i < cfg->nsecrets; i++) {
		struct moat_secret *x = &cfg->secrets[i];
		free(x->name);
		free(x->file);
		free(x->header);
		free(x->placeholder);
		free(x->owner);
		strlist_free(&x->hosts);
		strlist_free(&x->shared_with);
		strlist_free(&x->requests);
	}
	for (i = 0; i < cfg->nquotas; i++)
		free(cfg->quotas[i].user);
	free(cfg->quotas);
	for (i = 0; i < cfg->nhosts; i++) {
		free(cfg->hosts[i].name);
		strlist_free(&cfg->hosts[i].secrets);
	}
	free(cfg->hosts);
	free(cfg->box.address);
	free(cfg->box.ca);
	free(cfg->box.cert);
	free(cfg->box.key);
	free(cfg->gw.reg_listen);
	free(cfg->gw.metrics_textfile);
	free(cfg->gw.metrics_listen);
	free(cfg->gw.web_listen);
	free(cfg->gw.web_cert);
	free(cfg->gw.web_key);
	free(cfg->gw.metrics_allow);
	free(cfg->gw.reg_cert);
	free(cfg->gw.reg_key);
	free(cfg->gw.ha_listen);
	free(cfg->gw.ha_peer);
	free(cfg->gw.ha_cert);
	free(cfg->gw.ha_key);
	free(cfg->gw.admin_group);
	strlist_free(&cfg->gw.member_allow);
	for (i = 0; i < cfg->gw.nexceptions; i++) {
		free(cfg->gw.exceptions[i].ports);
		strlist_free(&cfg->gw.exceptions[i].sandboxes);
		free(cfg->gw.exceptions[i].sandbox_lines);
	}
	for (i = 0; i < cfg->nfiles; i++)
		free(cfg->files[i]);
	free(cfg->gw.exceptions);
	free(cfg->gw.treat_as_public);
	free(cfg->gw.ipv6_site);
	free(cfg->gw.upstream);
	free(cfg->gw.state_dir);
	free(cfg->gw.proxy_upstream_ca);
	free(cfg->secrets);
	free(cfg->files);
	free(cfg->path);
	rangeset_free(cfg->private);
	free(cfg);
}

void
config_errors_free(struct moat_errors *e)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		free(e->msg[i]);
	free(e->msg);
	e->msg = NULL;
	e->n = 0;
	for (i = 0; i < e->nwarn; i++)
		free(e->warn[i]);
	free(e->warn);
	e->warn = NULL;
	e->nwarn = 0;
}

void
config_errors_print(FILE *fp, const struct moat_errors *e)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		fprintf(fp, "%s\n", e->msg[i]);
}

void
config_warnings_print(FILE *fp, const struct moat_errors *e)
{
	size_t i;

	for (i = 0; i < e->nwarn; i++)
		fprintf(fp, "%s\n", e->warn[i]);
}

/* --- lookups ---------------------------------------------------------- */

void
config_dns_rate(const struct moat_config *cfg, const struct moat_sandbox *sb,
    double *qps, double *burst)
{
	long r = cfg->gw.dns_rate, b = cfg->gw.dns_burst;

	if (sb != NULL && sb->dns_rate >= 0) {
		r = sb->dns_rate;
		b = -1;
	}
	if (sb != NULL && sb->dns_burst >= 0)
		b = sb->dns_burst;
	*qps = (double)r;
	*burst = b >= 0 ? (double)b : 2.0 * (double)r;
}

long long
config_egress_budget(const struct moat_config *cfg,
    const struct moat_sandbox *sb)
{
	return sb->egress_budget >= 0 ? sb->egress_budget :
	    cfg->gw.egress_budget;
}

unsigned
config_proxy_workers(const struct moat_config *cfg)
{
	long n;

	if (cfg->gw.proxy_workers != 0)
		return cfg->gw.proxy_workers;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 2 ? 2 : n > MOAT_PROXY_WORKERS_MAX ?
	    MOAT_PROXY_WORKERS_MAX : (unsigned)n;
}

const struct moat_sandbox *
config_canary(const struct moat_config *cfg)
{
	size_t i;

	for (i = cfg->nsandboxes; i > 0; i--)
		if (cfg->sandboxes[i - 1].canary)
			return &cfg->sandboxes[i - 1];
	return NULL;
}

const struct moat_sandbox *
config_sandbox_by_name(const struct moat_config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nsandboxes; i++)
		if (cfg->sandboxes[i].name &&
		    strcmp(cfg->sandboxes[i].name, name) == 0)
			return &cfg->sandboxes[i];
	return NULL;
}

const struct moat_sandbox *
config_sandbox_by_addr(const struct moat_config *cfg,
    const struct moat_addr *a)
{
	struct moat_addr a6;
	size_t i;

	/* An IPv6 source is the sandbox whose one IPv6 address it is. */
	if (a->family == AF_INET6) {
		if (!cfg->gw.ipv6 || !prefix_contains(&cfg->gw.ipv6_network, a))
			return NULL;
		for (i = 0; i < cfg->nsandboxes; i++)
			if (config_sandbox_addr6(cfg, &cfg->sandboxes[i], &a6) &&
			    addr_cmp(&a6, a) == 0)
				return &cfg->sandboxes[i];
		return NULL;
	}
	for (i = 0; i < cfg->nsandboxes; i++)
		if (addr_cmp(&cfg->sandboxes[i].address, a) == 0)
			return &cfg->sandboxes[i];
	return NULL;
}

bool
config_any_egress_budget(const struct moat_config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->nsandboxes; i++)
		if (config_egress_budget(cfg, &cfg->sandboxes[i]) > 0)
			return true;
	return false;
}

bool
config_sandbox_addr6(const struct moat_config *cfg,
    const struct moat_sandbox *x, struct moat_addr *out)
{
	const struct moat_gateway *gw = &cfg->gw;
	uint32_t host, m;

	/* An allowlist sandbox's IPv6 goes where its AAAA answers opened
	 * (allow6_NAME); an egress budget counts both families (acct6_out)
	 * and refuses both once spent (budget_spent6); the proxy takes
	 * guests' IPv6 as their IPv4, injecting secrets on either. */
	if (!gw->ipv6 || !x->ipv6 || x->egress == EGRESS_NONE ||
	    x->address.family != AF_INET || gw->network.plen <= 0)
		return false;
	m = gw->network.plen >= 32 ? 0 : ~0u >> gw->network.plen;
	memcpy(&host, x->address.a, 4);
	host = htonl(ntohl(host) & m);
	*out = gw->ipv6_network.addr;
	memcpy(&out->a[12], &host, 4);
	return true;
}

const struct moat_secret *
config_secret_by_name(const struct moat_config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nsecrets; i++)
		if (cfg->secrets[i].name &&
		    strcmp(cfg->secrets[i].name, name) == 0)
			return &cfg->secrets[i];
	return NULL;
}

const struct moat_quota *
config_quota_for(const struct moat_config *cfg, const char *user)
{
	const struct moat_quota *dflt = NULL;
	size_t i;

	for (i = 0; i < cfg->nquotas; i++) {
		if (cfg->quotas[i].user == NULL)
			continue;
		if (strcmp(cfg->quotas[i].user, user) == 0)
			return &cfg->quotas[i];
		if (strcmp(cfg->quotas[i].user, "*") == 0)
			dflt = &cfg->quotas[i];
	}
	return dflt;
}

bool
secret_usable_by(const struct moat_secret *x, const char *user)
{
	size_t i;

	if (x->owner != NULL && strcmp(x->owner, user) == 0)
		return true;
	for (i = 0; i < x->shared_with.n; i++)
		if (strcmp(x->shared_with.v[i], user) == 0)
			return true;
	return false;
}

const char *
egress_name(enum moat_egress e)
{
	static const char *names[] = {
		[EGRESS_OPEN] = "open",
		[EGRESS_ALLOWLIST] = "allowlist",
		[EGRESS_NONE] = "none",
	};
	return (unsigned)e < 3 ? names[e] : "?";
}

const char *
host_access_name(enum moat_host_access a)
{
	static const char *names[] = {
		[HOST_ACCESS_OWNERS] = "owners",
		[HOST_ACCESS_ROOT] = "root",
		[HOST_ACCESS_ALL] = "all",
	};
	return (unsigned)a < 3 ? names[a] : "?";
}

char *
config_errors_text(const struct moat_errors *e)
{
	char *buf = NULL;
	size_t len = 0, i;
	FILE *fp = open_memstream(&buf, &len);

	if (fp == NULL)
		fatalx("out of memory");
	for (i = 0; i < e->n; i++)
		fprintf(fp, "%s\n", e->msg[i]);
	if (fclose(fp) != 0)
		fatalx("out of memory");
	return buf;
}

bool
config_strlist_has(const struct moat_strlist *l, const char *s)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}
