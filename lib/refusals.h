/*
 * refusals.h -- keep the kernel from turning refusals into silence.
 *
 * A refusal is an ICMP administratively-prohibited error sent by nft's
 * reject.  The kernel rate-limits ICMP errors per destination
 * (net.ipv4.icmp_ratelimit, 1 s with a burst of 6) and globally per
 * network namespace (net.ipv4.icmp_msgs_per_sec / icmp_msgs_burst, which
 * IPv6 shares).  At kernel defaults a guest's sixth refusal in a second
 * is dropped, and the guest waits for a TCP retransmission or timeout
 * instead of failing at once.  With fast refusals on, the per-destination
 * limit is lifted and the global cap is set from moat.conf: it stays as a
 * flood guard for the whole namespace.  The sysctls are the namespace's
 * (the host's, co-located), so the gateway's policy puts the kernel's
 * default limits back for ICMP errors leaving by any interface but the
 * sandbox side (nft-rules, chain icmp_out).
 */
#ifndef MOAT_REFUSALS_H
#define MOAT_REFUSALS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

struct refusal_sysctls {
	long	v4_ratelimit;	/* ms between errors to one host; 0: off */
	long	v6_ratelimit;	/* the same for IPv6; -1 without IPv6 */
	long	msgs_per_sec;	/* namespace-wide cap, both families */
	long	msgs_burst;
};

/* The values moat wants for a gateway config. */
void	refusals_want(const struct moat_gateway *, struct refusal_sysctls *);
/* Read the current namespace's values; -1 with err set on failure. */
int	refusals_read(struct refusal_sysctls *, char *err, size_t errlen);
/* Write the wanted values (only when fast refusals are on); -1 on error. */
int	refusals_apply(const struct moat_gateway *, char *err, size_t errlen);
/* Does the kernel's state give fast refusals?  why: what is wrong. */
bool	refusals_fast(const struct moat_gateway *,
	    const struct refusal_sysctls *, char *why, size_t whylen);

#endif
