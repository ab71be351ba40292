/*
 * admit_reg.h -- may a KVM host register this sandbox on a separate
 * gateway box?  The one decision the parent takes for every claim a
 * host makes over the registration endpoint (gatewayd/parent/register.c),
 * pure over the configuration so that it can be tested without a box.
 */
#ifndef MOAT_ADMIT_REG_H
#define MOAT_ADMIT_REG_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

#define REG_NAME_MAX	15	/* the name is also the tap's: IFNAMSIZ - 1 */
#define REG_ALLOW_MAX	64	/* names in one registration's allow list */

/* What a host asks for, as it sent it (strings, unchecked). */
struct reg_claim {
	const char	*name;
	const char	*address;	/* IPv4 */
	const char	*mac;		/* aa:bb:cc:dd:ee:ff */
	const char	*egress;	/* open | allowlist | none */
	const char	*allow;		/* NAME,NAME,... or "" */
	const char	*secrets;	/* NAME,NAME,... or "" */
};

/*
 * May host h register claim c?  Checks the name, that the address is in
 * h's pool and in gateway.network (not the gateway's, the network's or
 * the broadcast address), that the MAC is a well-formed unicast one, that
 * no other sandbox (static, or another host's) has the name, the address,
 * the MAC or the name as its tap, that the egress is no wider than h's
 * max_egress, the allow list well-formed and only with "allowlist", and
 * the secrets among h's.  The host's own sandbox of the same name (its
 * registered_by is h) is replaced, so it does not collide.  0, or -1 with
 * the reason in why.
 */
int	admit_registration(const struct moat_config *, const struct moat_host *,
	    const struct reg_claim *, char *why, size_t len);
/* Did host h register sandbox x? */
bool	reg_owned(const struct moat_sandbox *x, const struct moat_host *h);
/* The host with this key (SHA-256 of its SPKI), or NULL. */
const struct moat_host *admit_host_by_key(const struct moat_config *,
	    const unsigned char key[32]);
/* Is s a name a host may give a sandbox (and so a drop-in's file name)? */
bool	reg_name_valid(const char *s);
/* Is name in the comma-separated list? */
bool	reg_list_has(const char *list, const char *name);

#endif
