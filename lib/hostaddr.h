/*
 * hostaddr.h -- the gateway host's own addresses, learned from the
 * kernel over rtnetlink and followed as they change (RTM_NEWADDR and
 * RTM_DELADDR), for admit_addr().
 *
 * hostaddr_open() subscribes to the IPv4 and IPv6 address groups and
 * asks for a dump of every address; both the dump and later
 * notifications arrive on the one socket and are read by
 * hostaddr_read(), so the caller polls one descriptor.  Opening needs no
 * privilege; do it before a seccomp filter forbids bind().
 */
#ifndef MOAT_HOSTADDR_H
#define MOAT_HOSTADDR_H

#include "admit.h"

struct hostaddr;

struct hostaddr *hostaddr_open(void);
int	hostaddr_fd(const struct hostaddr *);
/* Apply what is waiting on the socket to h.  0, or -1 on a socket error
 * (an overrun is answered with a fresh dump, not an error). */
int	hostaddr_read(struct hostaddr *, struct admit_host *h);
void	hostaddr_close(struct hostaddr *);
/* The pure part: apply one rtnetlink message (for tests, fuzzing). */
void	hostaddr_msg(const void *buf, size_t len, struct admit_host *h);

#endif
