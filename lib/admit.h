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
	uint8_t		 *plen;		/* of v[i]'s network; IPv6 only */
	size_t		  n, cap;
};

enum admit_why {
	ADMIT_OK = 0,
	ADMIT_NOT_SANDBOX,	/* source is not a configured sandbox */
	ADMIT_NONE,		/* egress "none" */
	ADMIT_SANDBOX_NET,	/* the sandbox network (guests, gateway) */
	ADMIT_HOST,		/* an address of the gateway host */
	ADMIT_IPV6,		/* the sandbox has no IPv6 egress */
	ADMIT_HOST_NET,		/* IPv6: on a network of the host's (a LAN) */
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
/* Does some allow entry of an allowlist sandbox open proto/port: one of
 * its allow_ports, or a port an entry with ports of its own names
 * ("git.example.com:tcp/22")?  The widest any of its names opens: what
 * the kernel's sets may hold for the sandbox. */
bool	admit_port_allowed(const struct moat_sandbox *, int proto,
	    uint16_t port);
/*
 * What an allowlist sandbox's list opens for the addresses of name: with
 * *plain, the sandbox's allow_ports (an entry without ports covers it);
 * and the ports returned (out, room for MOAT_NAME_PORTS_MAX), the union
 * of the entries with ports of their own that cover it.  Two entries
 * covering the same name both count: "*.example.com" and
 * "git.example.com:tcp/22" open git.example.com for allow_ports and 22.
 */
int	admit_name_ports(const struct moat_sandbox *, const char *name,
	    bool *plain, struct moat_port *out);
/* Does the list open name on proto/port (admit_name_ports)?  Always for
 * an open sandbox, never for one with egress "none". */
bool	admit_name_port(const struct moat_sandbox *, const char *name,
	    int proto, uint16_t port);

/*
 * One element of a sandbox's allowlist sets: an address alone (svc 0,
 * set allow_<sandbox>, opened for its allow_ports) or an address with
 * one port (svc ADMIT_SVC(proto, port), set allowp_<sandbox>).
 */
struct admit_elem {
	struct moat_addr addr;
	uint32_t	 svc;
};
#define ADMIT_SVC(proto, port)	((uint32_t)(proto) << 16 | (uint32_t)(port))
#define ADMIT_SVC_PROTO(svc)	((int)((svc) >> 16))
#define ADMIT_SVC_PORT(svc)	((uint16_t)((svc) & 0xffff))
/* The elements an answer with n addresses opens (plain: each address
 * alone; and each address with each of np ports), into out (room for
 * n * (1 + np)); returns how many. */
size_t	admit_elems(const struct moat_addr *a, size_t n, bool plain,
	    const struct moat_port *p, size_t np, struct admit_elem *out);
/* May a resolver's set addition for sandbox carry these ports (each one
 * that an entry with ports of its own names) and plain?  Something must
 * be asked: plain, or at least one port. */
bool	admit_set_ports(const struct moat_config *, const char *sandbox,
	    bool plain, const struct moat_port *p, size_t np);

/* May something acting for sb (a guest's own packet, or the proxy for
 * it) open a connection to a:port over proto?  host may be NULL when the
 * caller's host addresses are enforced elsewhere (the kernel's input
 * chain).  IPv4-mapped IPv6 is judged as the IPv4 address it maps; an
 * address in NAT64's well-known prefix 64:ff9b::/96 by the IPv4 address
 * its last 32 bits carry (private, the guests' network, the gateway and
 * the host's addresses refused), and as IPv6 for which sandbox may have it.
 * IPv6 only for a sandbox with an IPv6 address (config_sandbox_addr6),
 * and as the kernel judges a guest's own: public (not cfg->private),
 * outside the guests' /64 and every IPv6 network of the host's.
 * Allowlist sandboxes: the name check is the caller's; this checks the
 * address and the port. */
/* Is a private by the private rangeset?  ::ffff:a.b.c.d and
 * 64:ff9b::a.b.c.d are judged as a.b.c.d; every other special-purpose
 * block, 64:ff9b:1::/48 included, by the set itself. */
bool	admit_private(const struct moat_rangeset *, const struct moat_addr *);
enum admit_why admit_addr(const struct moat_config *,
	    const struct moat_sandbox *, const struct admit_host *,
	    const struct moat_addr *, int proto, uint16_t port);

/* dnsd asks to open addresses for a sandbox: what may go into the set?
 * Copies the admissible addresses (public IPv4, and public IPv6 for a
 * sandbox with an IPv6 address; outside the sandbox network) to ok[]
 * (room for n), returns how many, or -1 if the
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
/* An IPv6 address of the host's with its network's prefix length: the
 * network (a LAN, the uplink's) is refused to guests' IPv6 too. */
void	admit_host_add_net(struct admit_host *, const struct moat_addr *,
	    unsigned plen);
void	admit_host_del(struct admit_host *, const struct moat_addr *);
bool	admit_host_has(const struct admit_host *, const struct moat_addr *);
void	admit_host_free(struct admit_host *);

#endif
