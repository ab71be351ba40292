/*
 * policy.h -- the one decision per connection: refuse, splice or
 * intercept, and whether an address may be dialled at all.
 */
#ifndef MOAT_PROXY_POLICY_H
#define MOAT_PROXY_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "admit.h"
#include "config.h"

enum verdict { V_REFUSE, V_SPLICE, V_INTERCEPT };

/* host: lower-case name, or NULL when the guest gave none (transparent
 * TLS without SNI); port: the TCP port asked for (an allowlist name opens
 * the sandbox's allow_ports, or its own: admit_name_port).  An address
 * literal in host is judged as an address: set *literal and fill *lit.
 * *reason is set on V_REFUSE. */
enum verdict	policy_decide(const struct moat_config *,
		    const struct moat_sandbox *, const char *host,
		    uint16_t port, bool *literal, struct moat_addr *lit,
		    const char **reason);
/* "a.b.c.d" in any inet_aton spelling ("127.1", "0x7f.1", "2130706433"),
 * or an IPv6 literal.  True if s is one. */
bool	policy_literal(const char *s, struct moat_addr *);
/* May the proxy connect to addr:port for sb?  Exactly what a guest of
 * sb could reach directly (admit_addr): never the gateway host (host:
 * its addresses), the sandbox network, IPv6, or a private range other
 * than an exception that applies to sb.  *why (if not NULL) says why. */
bool	policy_addr_ok(const struct moat_config *,
	    const struct moat_sandbox *, const struct admit_host *,
	    const struct moat_addr *, uint16_t port, const char **why);
bool	policy_name_allowed(const struct moat_sandbox *, const char *host);
/* Is the sandbox entitled to secret s for this host? */
bool	policy_secret_bound(const struct moat_sandbox *,
	    const struct moat_secret *, const char *host);

#endif
