/*
 * ha_arp.h -- the split-brain watch's ARP reader (gatewayd/ha_arp/ha_arp.c):
 * the parent opens and binds the uplink's packet socket (ha_arp_socket),
 * the ha-arp process reads it (ha_arp_child), and ha_arp_parse, pure and
 * fuzzed, decides what a frame says.  The parent never reads ARP.
 */
#ifndef GATEWAYD_HA_ARP_H
#define GATEWAYD_HA_ARP_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "ipc.h"

struct ha_arp_watch {
	int		ifindex;	/* the uplink */
	uint8_t		mac[6];		/* its own hardware address */
	uint8_t		addr[4];	/* the pair's shared uplink address */
};

/* An ARP packet (no Ethernet header, as a SOCK_DGRAM packet socket gives
 * it): 0 and *out filled if it is an Ethernet/IPv4 reply from a unicast
 * sender claiming w->addr, else -1. */
int	ha_arp_parse(const void *buf, size_t len, const struct ha_arp_watch *w,
	    struct ipc_ha_arp *out);
/* In the parent: a non-blocking packet socket on the uplink that the
 * kernel gives only ARP replies for w->addr; -1 (logged) if it cannot. */
int	ha_arp_socket(const struct ha_arp_watch *w);
/* In the child: drop to moat-log, narrow, then read fd and send the
 * parent (on ipc) one IPC_HA_ARP per reply; send a probe for each
 * IPC_HA_PROBE.  Never returns. */
void	ha_arp_child(int fd, int ipc, const struct ha_arp_watch *w,
	    pid_t parent) __attribute__((noreturn));

#endif
