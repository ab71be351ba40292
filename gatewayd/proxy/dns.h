/*
 * dns.h -- asynchronous A and AAAA lookups for the proxy, sent with ldns to the
 * configured upstream resolver (never the system resolver), with a small
 * TTL-bounded cache.  The caller checks every address it gets.
 */
#ifndef MOAT_PROXY_DNS_H
#define MOAT_PROXY_DNS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

#define DNS_MAX_ADDRS	8

/* err is NULL on success (n >= 1), or why the name did not resolve. */
typedef void (*dns_cb)(void *arg, const char *err,
    const struct moat_addr *addrs, size_t n);

struct dnsreq;

/* servers: the upstream addresses (port 53 unless port is given). */
void	dns_init(const struct moat_addr *servers, size_t n, uint16_t port);
/* Starts a lookup of name's A records (v6: its AAAA records); the
 * callback may run before this returns (cache hit).  Returns a handle
 * for dns_cancel, NULL if the callback already ran. */
struct dnsreq *dns_lookup(const char *name, bool v6, dns_cb, void *arg);
void	dns_cancel(struct dnsreq *);
void	dns_tick(void);		/* retries and timeouts, once a second */

#endif
