/*
 * addr.h -- an IP address as moat handles it, and its conversions to and
 * from text and socket addresses: the one place for them.
 */
#ifndef MOAT_ADDR_H
#define MOAT_ADDR_H

#include <sys/socket.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct moat_addr {
	int	family;		/* AF_INET or AF_INET6 */
	uint8_t	a[16];		/* network byte order; IPv4 in a[0..3] */
};

/* "a.b.c.d" or an IPv6 address.  0, or -1 when s is neither. */
int	 addr_parse(const char *, struct moat_addr *);
/* The text of a, in buf; returns buf. */
char	*addr_fmt(const struct moat_addr *, char *buf, size_t len);
bool	 addr_eq(const struct moat_addr *, const struct moat_addr *);
/* The address of a struct sockaddr_in or sockaddr_in6; -1 for any other
 * family.  No unmapping is done. */
int	 addr_from_sockaddr(const struct sockaddr_storage *, struct moat_addr *);
/* a and port as a socket address in ss; returns its length. */
socklen_t addr_to_sockaddr(const struct moat_addr *, uint16_t port,
	    struct sockaddr_storage *ss);
/* The prefix length of a netmask (getifaddrs' ifa_netmask) of family;
 * -1 when there is none. */
int	 addr_mask_plen(const struct sockaddr *mask, int family);
/* If addr is IPv4-mapped IPv6, rewrite it as IPv4 and return true. */
bool	 addr_unmap(struct moat_addr *);
/* If addr is in NAT64's well-known prefix 64:ff9b::/96 (RFC 6052), the
 * IPv4 address its last 32 bits carry in v4, and true.  The local-use
 * 64:ff9b:1::/48 is not: its mapping is the operator's own. */
bool	 addr_nat64_v4(const struct moat_addr *, struct moat_addr *v4);

#endif
