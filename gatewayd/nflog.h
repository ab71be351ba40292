/*
 * nflog.h -- parsing the kernel's refusal log (pure, fuzzed).
 */
#ifndef GATEWAYD_NFLOG_H
#define GATEWAYD_NFLOG_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define NFLOG_COPY_BYTES	128	/* enough for IP + transport headers */

struct nflog_event {
	char	 reason[32];
	char	 src[46], dst[46];
	uint8_t	 proto;
	uint16_t dport;
	uint8_t	 mac[6];	/* source MAC, if the kernel gave one */
	int	 has_mac;
};

/* One netlink message from an NFNETLINK_LOG socket.  0 if it is a moat
 * refusal (prefix "moat:<reason> "), -1 otherwise. */
int	nflog_parse(const void *buf, size_t len, struct nflog_event *);
/* The audit JSON object for an event; the sandbox is found by source. */
int	nflog_event_json(const struct nflog_event *, const struct moat_config *,
	    char *out, size_t len);

#endif
