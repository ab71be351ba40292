/*
 * owner.h -- one gatewayd per network namespace.
 *
 * The nftables tables, the bridge, the HA gate and the sysctls gatewayd
 * manages belong to a network namespace, and only one daemon may change
 * them: a second one started by hand beside the service would apply its
 * own policy, shut a pair's gate, or undo the first one's records.  The
 * claim is an abstract unix socket, whose names live in the network
 * namespace and go away with the process that bound them, so a crashed
 * gatewayd never leaves a stale lock behind.
 */
#ifndef GATEWAYD_OWNER_H
#define GATEWAYD_OWNER_H

#include <stddef.h>

/* The abstract name (after its leading NUL) that marks the owner. */
#define GW_OWNER_NAME	"moat-gatewayd"

/* Claims this network namespace for the calling process (the claim lasts
 * until it exits; the descriptor is close-on-exec).  Returns 0, or -1 with
 * a sentence in err naming the pid that holds it when it can be found. */
int	owner_claim(char *err, size_t errlen);

#endif
