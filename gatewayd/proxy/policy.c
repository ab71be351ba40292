/*
 * policy.c -- refuse, splice or intercept: a connection is refused unless
 * the sandbox could reach its destination directly, intercepted only for a
 * host a secret the sandbox holds is bound to, and spliced otherwise.
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <string.h>

#include "policy.h"

bool
policy_literal(const char *s, struct moat_addr *a)
{
	struct in_addr in;

	memset(a, 0, sizeof(*a));
	/* inet_aton, unlike inet_pton, takes every historic spelling: a
	 * name like "0x7f.1" must be judged as the address it dials. */
	if (inet_aton(s, &in) == 1) {
		a->family = AF_INET;
		memcpy(a->a, &in, 4);
		return true;
	}
	if (inet_pton(AF_INET6, s, a->a) == 1) {
		a->family = AF_INET6;
		return true;
	}
	return false;
}

static bool
pattern_match(const char *pat, const char *host)
{
	size_t pl, hl;

	if (strncmp(pat, "*.", 2) != 0)
		return strcmp(pat, host) == 0;
	pl = strlen(pat + 1);		/* ".x" */
	hl = strlen(host);
	return hl > pl && strcmp(host + hl - pl, pat + 1) == 0;
}

bool
policy_name_allowed(const struct moat_sandbox *sb, const char *host)
{
	struct moat_port p[MOAT_NAME_PORTS_MAX];
	bool plain;

	return admit_name_ports(sb, host, &plain, p) > 0 || plain;
}

static bool
in_list(const struct moat_strlist *l, const char *host)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (pattern_match(l->v[i], host))
			return true;
	return false;
}

bool
policy_secret_bound(const struct moat_sandbox *sb,
    const struct moat_secret *s, const char *host)
{
	size_t i;

	for (i = 0; i < sb->secrets.n; i++)
		if (strcmp(sb->secrets.v[i], s->name) == 0)
			break;
	if (i == sb->secrets.n)
		return false;
	for (i = 0; i < s->hosts.n; i++)
		if (strcmp(s->hosts.v[i], host) == 0)	/* exact, never a pattern */
			return true;
	return false;
}

static bool
entitled_any(const struct moat_config *cfg, const struct moat_sandbox *sb,
    const char *host)
{
	size_t i;

	for (i = 0; i < cfg->nsecrets; i++)
		if (policy_secret_bound(sb, &cfg->secrets[i], host))
			return true;
	return false;
}

/* Why an allowed name is refused a port: both say "allow_ports", the
 * phrase `gatewayd ctl refused` files port refusals under. */
static const char *
port_refusal(const struct moat_sandbox *sb, const char *host)
{
	struct moat_port p[MOAT_NAME_PORTS_MAX];
	bool plain;

	if (admit_name_ports(sb, host, &plain, p) == 0)
		return "a port not in the sandbox's allow_ports";
	return "a port not among the name's own ports (nor allow_ports, if "
	    "an entry without ports covers it)";
}

enum verdict
policy_decide(const struct moat_config *cfg, const struct moat_sandbox *sb,
    const char *host, uint16_t port, bool *literal, struct moat_addr *lit,
    const char **reason)
{
	*literal = host != NULL && policy_literal(host, lit);
	if (sb == NULL)
		return *reason = "source is not a sandbox", V_REFUSE;
	if (sb->egress == EGRESS_NONE)
		return *reason = "sandbox egress is none", V_REFUSE;
	if (sb->egress == EGRESS_ALLOWLIST) {
		if (host == NULL)
			return *reason = "no server name (allowlist needs one)",
			    V_REFUSE;
		if (*literal)
			return *reason = "address literal (allowlist needs a "
			    "name)", V_REFUSE;
		if (!policy_name_allowed(sb, host))
			return *reason = "name not on the allowlist", V_REFUSE;
		/* A name with ports of its own opens exactly those. */
		if (!admit_name_port(sb, host, IPPROTO_TCP, port))
			return *reason = port_refusal(sb, host), V_REFUSE;
	}
	if (host == NULL || *literal)
		return V_SPLICE;
	if (entitled_any(cfg, sb, host))
		return V_INTERCEPT;
	if (sb->inspect && !in_list(&sb->bypass, host))
		return V_INTERCEPT;
	return V_SPLICE;
}

/* The one admission function decides (lib/admit.c): the same rules the
 * kernel applies to the guest's own packets. */
bool
policy_addr_ok(const struct moat_config *cfg, const struct moat_sandbox *sb,
    const struct admit_host *host, const struct moat_addr *addr,
    uint16_t port, const char **why)
{
	enum admit_why w = admit_addr(cfg, sb, host, addr, IPPROTO_TCP, port);

	if (why != NULL)
		*why = admit_why_str(w);
	return w == ADMIT_OK;
}
