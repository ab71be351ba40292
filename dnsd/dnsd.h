/*
 * dnsd.h -- what dnsd's parts share: options and the entry points of
 * the resolver (resolver.c, with the parts resolver.h lists) and the
 * privileged parent of standalone mode (priv.c).  The resolver drops
 * privileges with lib/privdrop.c and narrows itself with lib/sandbox.c's
 * dnsd list.
 *
 * Process layout:
 *   standalone   dnsd -c FILE: a parent that keeps root (config reading,
 *                the nftables netlink socket) and forks the resolver,
 *                which drops to its own user and installs seccomp.  The
 *                two talk lib/ipc.h, exactly as gatewayd and dnsd do.
 *   under gatewayd  dnsd --ipc-fd N [--udp-fd U --tcp-fd T]: only the
 *                resolver; gatewayd is the privileged side.
 */
#ifndef DNSD_DNSD_H
#define DNSD_DNSD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define DNSD_USER_DEFAULT	"moat-dns"

#include "exitcodes.h"	/* EXIT_OK, EXIT_CONFIG, EXIT_USAGE, EXIT_SYSTEM */

struct dnsd_opts {
	const char	*conf;
	const char	*user;		/* NULL: do not change user */
	const char	*listen;	/* NULL: gateway.address */
	uint16_t	 port;
	int		 udp_fd, tcp_fd, ipc_fd;	/* -1: none given */
	int		 udp6_fd, tcp6_fd;	/* the gateway's IPv6; -1: none */
	int		 config_fd;	/* -1: read -c FILE */
	bool		 foreground;
	bool		 no_nft;	/* standalone: never touch nftables */
	size_t		 cache_bytes;
	double		 qps, burst;	/* per sandbox; qps 0 = unlimited */
	uint32_t	 timeout_ms;	/* one upstream attempt over UDP */
};

/* resolver.c: run the resolver until told to stop.  ipcfd may be -1 (no
 * set updates: allowlist answers are sent without opening anything).
 * Takes ownership of cfg.  Returns an exit status. */
int	resolver_run(const struct dnsd_opts *, struct moat_config *cfg,
	    int udpfd, int tcpfd, int ipcfd);

/* priv.c: standalone mode's privileged parent. */
int	priv_run(const struct dnsd_opts *, struct moat_config *cfg,
	    int udpfd, int tcpfd);

/* main.c: bind the UDP and TCP sockets for addr:port (IPv4, or IPv6:
 * IPv6 only, bound before the address may be on the bridge). */
int	bind_sockets(const char *addr, uint16_t port, const char *user,
	    int *udp, int *tcp);

#endif
