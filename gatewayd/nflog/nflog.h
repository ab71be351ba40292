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
	uint32_t indev;		/* ingress interface (a bridge's, in inet) */
	uint32_t physindev;	/* the bridge port it came in on, if known */
};

/* One netlink message from an NFNETLINK_LOG socket.  0 if it is a moat
 * refusal (prefix "moat:<reason> "), -1 otherwise. */
int	nflog_parse(const void *buf, size_t len, struct nflog_event *);
/* The rate-limit key of an event: what a guest cannot forge.  The bridge
 * port it arrived on; on the bridge itself (inet family, where the bridge
 * table has already checked port, MAC and address together) its source
 * address if that is in the sandbox network; else its ingress interface. */
void	nflog_event_key(const struct nflog_event *, uint32_t bridge_ifindex,
	    const struct moat_prefix *network, char *out, size_t len);
/* The audit JSON object for an event; the sandbox is found by source. */
int	nflog_event_json(const struct nflog_event *, const struct moat_config *,
	    char *out, size_t len);

/* The reader's socket, opened by the parent; the reader's own main. */

int	nflog_open(uint16_t group);		/* parent, privileged */
void	nflog_child(int nlfd, int ipc, const struct moat_config *, pid_t parent)
	    __attribute__((noreturn));

#endif
