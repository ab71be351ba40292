/*
 * admit.h -- the one admission decision: may traffic acting for a
 * sandbox reach an address?
 *
 * The policy compiler (nft-rules) takes from here which exceptions apply
 * to which sandbox and which ports an allowlisted address opens; the
 * proxy asks admit_addr() before every dial; gatewayd asks it when a
 * reload must cut the flows the new policy refuses.  One function, so the
 * kernel's policy and what acts for a guest cannot drift apart.
 */
#ifndef MOAT_ADMIT_H
#define MOAT_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* The gateway host's own addresses, every interface and family (see
 * hostaddr.h for learning them from the kernel). */
struct admit_host {
	struct moat_addr *v;
	size_t		  n, cap;
};

enum admit_why {
	ADMIT_OK = 0,
	ADMIT_NOT_SANDBOX,	/* source is not a configured sandbox */
	ADMIT_NONE,		/* egress "none" */
	ADMIT_SANDBOX_NET,	/* the sandbox network (guests, gateway) */
	ADMIT_HOST,		/* an address of the gateway host */
	ADMIT_IPV6,		/* guests have no IPv6 egress */
	ADMIT_PRIVATE,		/* private range, no exception for it */
	ADMIT_PORT,		/* allowlist: not one of allow_ports */
};

const char *admit_why_str(enum admit_why);

/* Does exception x apply to sandbox sb?  The sandboxes it names, or by
 * default every open sandbox; never a sandbox with egress "none". */
bool	admit_exception_applies(const struct moat_exception *,
	    const struct moat_sandbox *);
/* Does exception x cover a:port over proto (IPPROTO_TCP/UDP)? */
bool	admit_exception_covers(const struct moat_exception *,
	    const struct moat_addr *, int proto, uint16_t port);
/* Is proto/port one of an allowlist sandbox's allow_ports? */
bool	admit_port_allowed(const struct moat_sandbox *, int proto,
	    uint16_t port);

/* May something acting for sb (a guest's own packet, or the proxy for
 * it) open a connection to a:port over proto?  host may be NULL when the
 * caller's host addresses are enforced elsewhere (the kernel's input
 * chain).  IPv4-mapped IPv6 is judged as the IPv4 address it maps.
 * Allowlist sandboxes: the name check is the caller's; this checks the
 * address and the port. */
enum admit_why admit_addr(const struct moat_config *,
	    const struct moat_sandbox *, const struct admit_host *,
	    const struct moat_addr *, int proto, uint16_t port);

/* dnsd asks to open addresses for a sandbox: what may go into the set?
 * Copies the admissible addresses (public IPv4, outside the sandbox
 * network) to ok[] (room for n), returns how many, or -1 if the
 * sandbox may have no set at all (unknown, or not allowlist).
 * *timeout_ms is capped at ADMIT_SET_TIMEOUT_MAX_MS. */
#define ADMIT_SET_TIMEOUT_MAX_MS	(3600u * 1000u)
int	admit_set_add(const struct moat_config *, const char *sandbox,
	    const struct moat_addr *in, size_t n, struct moat_addr *ok,
	    uint32_t *timeout_ms);

/*
 * Does a reload keep sandbox old's allowlist set with its elements, new
 * being the sandbox of the same name in the new configuration (NULL: none)?
 * Yes when both are in allowlist mode and new allows every name old did:
 * an incremental update leaves such a set alone, and a whole replacement
 * carries its elements over with their remaining time.  Otherwise the set
 * is deleted (a new one, if any, starts empty) or, when the allow list
 * narrowed, gatewayd flushes it, so that no address of a name taken away
 * stays open.  gatewayd's record of what it promised and dnsd's mirror
 * both go by this.
 */
bool	admit_set_kept(const struct moat_sandbox *old,
	    const struct moat_sandbox *new);
/* Call fn(o, n, arg) for each sandbox o of old, n being new's sandbox of
 * the same name or NULL; O(n log n), for reloads of many sandboxes. */
void	admit_pair_sandboxes(const struct moat_config *old,
	    const struct moat_config *new,
	    void (*fn)(const struct moat_sandbox *o,
	    const struct moat_sandbox *n, void *arg), void *arg);

void	admit_host_add(struct admit_host *, const struct moat_addr *);
void	admit_host_del(struct admit_host *, const struct moat_addr *);
bool	admit_host_has(const struct admit_host *, const struct moat_addr *);
void	admit_host_free(struct admit_host *);

#endif
