/*
 * proxy.h -- the parent's side of the proxy workers and their sockets
 * (proxy.c, pool.c).
 */
#ifndef GW_PARENT_PROXY_H
#define GW_PARENT_PROXY_H

#include "gw.h"
#include "ipc.h"

/* parent/proxy.c */
gw_dispatch_fn proxy_dispatch;
int	proxy_send_secrets(struct gw *, int fd);	/* at a worker's start */
/* Every worker, in place or drained, and every one still draining. */
void	proxy_reload(struct gw *, const struct gw_delta *);
/* A grant: every worker (and draining one) takes one sandbox's allow
 * list alone, or, if it does not fit a message, the configuration with
 * only that sandbox changed. */
void	proxy_allow(struct gw *, const char *sandbox);
void	proc_restart(struct gw *, enum gw_proc_id);	/* quietly, now */

/* --- the proxy's workers' listening sockets (parent/pool.c) --- */

/* Attach the steering program to a reuseport group: a connection goes
 * to socket (IPv4 source address) % n. */
int	pool_steer(int fd, unsigned n);
/* The same for an IPv6 group: (net4 | the IPv6 source's last 32 bits) % n,
 * the socket of the guest's IPv4 address. */
int	pool_steer6(int fd, unsigned n, const struct moat_addr *net4);
/* Socket i of n on a:port, SO_REUSEPORT, listening (the first steered).
 * freebind: a may not be on this host yet (a pair's backup). */
int	pool_socket(const struct moat_addr *, uint16_t port, unsigned i,
	    unsigned n, bool freebind);
/* v4->fds[0 .. n-1] (and v6's with gateway.ipv6), each group steered
 * over n workers. */
struct pool_group;
int	pool_sockets(const struct moat_gateway *, unsigned n,
	    struct pool_group *v4, struct pool_group *v6);
void	pool_close(struct pool_group *v4, struct pool_group *v6);
/* One reuseport group of the proxy's listening sockets (parent/pool.c):
 * socket i is worker i's. */
struct pool_group {
	int		 fds[GW_PROXY_MAX];
	unsigned	 n;
	unsigned	 steer;		/* workers the group steers over */
	struct moat_addr addr;		/* what its sockets are bound to */
};

/* One proxy worker process's TLS counters, as it last sent them. */
struct gw_proxy_tls {
	uint32_t	 pid;			/* 0: free */
	struct ipc_proxy_tls last;
};

struct gw_proxy {
	pid_t		 signer_pid[GW_PROXY_MAX];	/* each worker's */
	unsigned	 nworkers;	/* proxy workers wanted now */
	/* The proxy's listening sockets, bound by the parent; proxy6 on the
	 * gateway's IPv6 (gateway.ipv6). */
	struct pool_group proxy4, proxy6;
	struct gw_secret_id *secret_ids;	/* as the proxy workers have */
	size_t		 nsecret_ids;	/* their values (NULL: none) */
	/* TLS counters: the sum over every worker since gatewayd started,
	 * and each live or draining worker's last report. */
	struct ipc_proxy_tls tls;
	struct gw_proxy_tls tls_workers[2 * GW_PROXY_MAX];
};
static inline struct gw_proxy *proxy_of(const struct gw *gw)
{ return gw_mod(gw, MOD_PROXY); }

#endif
