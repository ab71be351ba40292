/*
 * nftrules.h -- moat's packet policy as one nftables transaction.
 *
 * The packet policy (moat.conf(5): egress modes, PRIVATE RANGES) is compiled from a
 * struct moat_config into a ruleset object (nftr_build), which can be
 * rendered as nft syntax (nftr_render), applied as one acked netlink
 * batch (nftr_apply), compared with the kernel's state (nftr_verify) and
 * removed (nftr_flush).  Everything goes through libnftnl and libmnl; no
 * `nft` process is ever started.
 *
 * Ownership: moat owns exactly two tables, "inet moat" and "bridge moat",
 * and never reads or writes any other, except, on a box of an
 * active/standby pair (gateway.ha), the gate "inet moat_ha" (nr_ha.c).  nftables evaluates every base
 * chain registered at a hook: a drop in another table ends the packet (it
 * can only make us stricter), while an accept elsewhere merely passes the
 * packet on to our chain, so no other table can weaken this policy.
 *
 * Names inside "inet moat" that other programs rely on:
 *   set  allow_<sandbox>   ipv4_addr, flags timeout: addresses the
 *                          sandbox (egress "allowlist") may reach; filled
 *                          by dnsd through nftr_set_add().
 *   set  allowp_<sandbox>  ipv4_addr . inet_proto . inet_service, flags
 *                          timeout: an address with one port, for names
 *                          with ports of their own ("NAME:tcp/22"); filled
 *                          the same way (nftr_set_add_elems).  Only for a
 *                          sandbox with such an entry.
 *   set  allow6_<sandbox>, allowp6_<sandbox>
 *                          the same with ipv6_addr, for an allowlist
 *                          sandbox with IPv6 (gateway.ipv6): filled from
 *                          AAAA answers the same way.
 *   map  sandboxes         ipv4_addr : verdict, source address -> mode.
 *   set  exc_<n>           ipv4_addr: the sandboxes exception n applies to
 *   counter <reason>       one per refusal reason, see nftr_reasons().
 *   set  acct_out, acct_in ipv4_addr, one element per sandbox with a
 *                          counter: what its guest sent and received;
 *        acct_new_out, acct_new_in
 *                          the same for the first packets of connections
 *                          (entry not yet confirmed); see nftr_acct_read().
 *   set  budget_spent      ipv4_addr, flags timeout: sandboxes whose egress
 *                          budget is spent until their window ends (only
 *                          when some sandbox has egress_bytes_per_day);
 *                          filled by gatewayd through nftr_budget_set().
 *   set  acct6_*, budget_spent6
 *                          the same for guests' IPv6 addresses (only with
 *                          gateway.ipv6); nftr_acct_read() adds a guest's
 *                          two families up, nftr_budget_set() fills both.
 * Every refusal is logged to nflog group gateway.nflog_group with the
 * prefix "moat:<reason> ".
 *
 * Return values: 0 success, -1 failure with a message that
 * nftr_error(ctx) returns (or that was written to err for nftr_build).
 */
#ifndef MOAT_NFTRULES_H
#define MOAT_NFTRULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "ranges.h"

#define NFTR_TABLE		"moat"
#define NFTR_HA_TABLE		"moat_ha"
#define NFTR_ALLOW_PREFIX	"allow_"
#define NFTR_ALLOWP_PREFIX	"allowp_"
#define NFTR_ALLOW6_PREFIX	"allow6_"
#define NFTR_ALLOWP6_PREFIX	"allowp6_"
#define NFTR_LOG_PREFIX		"moat:"
#define NFTR_ACCT_OUT		"acct_out"
#define NFTR_ACCT_IN		"acct_in"
#define NFTR_ACCT_NEW_OUT	"acct_new_out"
#define NFTR_ACCT_NEW_IN	"acct_new_in"
#define NFTR_BUDGET_SPENT	"budget_spent"
#define NFTR_ACCT6_OUT		"acct6_out"
#define NFTR_ACCT6_IN		"acct6_in"
#define NFTR_ACCT6_NEW_OUT	"acct6_new_out"
#define NFTR_ACCT6_NEW_IN	"acct6_new_in"
#define NFTR_BUDGET_SPENT6	"budget_spent6"

enum nftr_mode {
	NFTR_MODE_GATEWAY = 0,	/* both tables: co-located gateway */
	NFTR_MODE_HOST_ONLY,	/* "bridge moat" only: a KVM host feeding a
				 * separate gateway box through a trunk port */
};

struct nftr_opts {
	enum nftr_mode	 mode;
	const char	*trunk;	/* host-only: port towards the gateway box;
				 * NULL means gateway.uplink */
	/* The users the proxy and dnsd run as: their own packets are held
	 * to what a guest may reach (chain "output").  has_* false: that
	 * user does not exist here, no rule for it. */
	bool		 has_proxy_uid, has_dns_uid;
	uint32_t	 proxy_uid, dns_uid;
	/* The uid of a sandbox's owner, for gateway.host_access "owners":
	 * 0 and *uid set, or -1 when the owner has no account here (no
	 * access).  NULL: the system's user database (getpwnam). */
	int		(*owner_uid)(const char *name, uint32_t *uid);
	/* With gateway.ipv6: the IPv6 networks of this host's interfaces
	 * other than the bridge (its LANs), which guests' IPv6 never
	 * reaches; malloc'ed into *v, 0 or -1.  NULL: this host's
	 * (getifaddrs). */
	int		(*lan6)(const char *bridge, struct moat_prefix **v,
			    size_t *n);
	/* For nftr_update(): the sets holding one element per sandbox are
	 * built without "constant", so one sandbox can change in place. */
	bool		 incremental;
};

/* This host's IPv6 networks as the policy's set lan6 holds them (the
 * default of nftr_opts.lan6): global and unique-local prefixes of every
 * interface but bridge, in the order getifaddrs gives them.  With the
 * default, lan6 also holds the prefixes of nftr_routes6(). */
int	nftr_lan6_host(const char *bridge, struct moat_prefix **v, size_t *n);
/* Append to v the destinations of the unicast IPv6 routes of the main
 * table other than default ones, link-local, multicast, the bridge's and
 * those wholly in private (the special-purpose blocks, which private6
 * refuses and judges on its own, NAT64 included; NULL: none): what the
 * host reaches other than by its default route.  0 or -1. */
struct moat_rangeset;
int	nftr_routes6(const char *bridge, const struct moat_rangeset *private,
	    struct moat_prefix **v, size_t *n);

#define NFTR_PROXY_USER	"moat-proxy"
#define NFTR_DNS_USER	"moat-dns"

/* Fill opts' uids from the system's moat-proxy and moat-dns users. */
void	nftr_opts_users(struct nftr_opts *);

/* Kernel features, as found by nftr_probe(). */
#define NFTR_F_OWNER	0x1	/* table flag "owner" (Linux 5.12) */
#define NFTR_F_PERSIST	0x2	/* table flag "persist" (Linux 6.9) */

struct nftr_ruleset;
struct nftr_ctx;

struct nftr_reason {
	const char	*name;		/* counter name and log prefix word */
	const char	*family;	/* "inet" or "bridge" */
	bool		 reject;	/* icmpx admin-prohibited, else drop */
	const char	*what;		/* one line for humans */
};

/* Build the policy; NULL (and a message in err) if the config cannot be
 * expressed, e.g. a sandbox name unusable as an nftables identifier. */
struct nftr_ruleset *nftr_build(const struct moat_config *,
	    const struct nftr_opts *, char *err, size_t errlen);
void	nftr_ruleset_free(struct nftr_ruleset *);
/* Deterministic nft syntax of the whole transaction ("nft -f" loads it). */
void	nftr_render(FILE *, const struct nftr_ruleset *);
/* Number of netlink messages apply would send (for tests, benchmarks). */
size_t	nftr_ruleset_nmsgs(const struct nftr_ruleset *);

/* The refusal reasons, for gatewayd's audit log and for tests. */
const struct nftr_reason *nftr_reasons(size_t *n);

/* The allowlist set of a sandbox: "allow_<name>".  -1 if it does not fit. */
int	nftr_set_name(const char *sandbox, char *buf, size_t len);
/* Its set of addresses with a port: "allowp_<name>". */
int	nftr_ports_set_name(const char *sandbox, char *buf, size_t len);
/* The same for IPv6: "allow6_<name>", with ports "allowp6_<name>". */
int	nftr_set6_name(const char *sandbox, bool ports, char *buf, size_t len);

/* A netlink socket to nf_tables in the caller's network namespace. */
struct nftr_ctx *nftr_ctx_new(void);
void	nftr_ctx_free(struct nftr_ctx *);
const char *nftr_error(const struct nftr_ctx *);

/* Check, with a transaction that is never committed, which optional
 * table flags the kernel has (*features, NFTR_F_*) and, if rs is not
 * NULL, that it accepts every object of the ruleset.  -1 names the first
 * object the kernel refused: callers must then refuse to run. */
int	nftr_probe(struct nftr_ctx *, const struct nftr_ruleset *rs,
	    unsigned *features);
/* Replace moat's tables with the ruleset in one acked transaction.  The
 * old tables are deleted and the new ones created in the same batch, so
 * no packet ever sees neither; if the kernel refuses any part, nothing
 * changes.  Addresses already in allow_* sets of sandboxes that are still
 * in allowlist mode are carried over with their remaining timeout. */
int	nftr_apply(struct nftr_ctx *, const struct nftr_ruleset *);
/* What nftr_update did. */
struct nftr_update_stats {
	bool		 full;	/* replaced everything, as nftr_apply */
	const char	*why;	/* if full: why no delta */
	size_t		 nmsgs;	/* messages sent; 0: nothing changed */
};
/* Move the kernel from old, the ruleset last applied through this
 * context, to new in one acked transaction holding only the difference:
 * objects of sandboxes that did not change are not touched (their
 * allowlist elements stay), and an unchanged ruleset sends nothing.
 * Where a delta cannot be computed safely (see nr_delta.c) or the kernel
 * refuses it, the whole ruleset is replaced as by nftr_apply.  Build
 * both with opts.incremental for one sandbox to change in place.  new
 * must stay allocated until the next update.  st may be NULL. */
int	nftr_update(struct nftr_ctx *, const struct nftr_ruleset *old,
	    const struct nftr_ruleset *new, struct nftr_update_stats *st);
/* Read moat's tables back and compare.  0 identical, 1 drift (a
 * "-expected / +found" diff is written to out if non-NULL), -1 error.
 * Elements of allow_* sets are runtime state and not compared. */
int	nftr_verify(struct nftr_ctx *, const struct nftr_ruleset *, FILE *out);
/* Watching moat's tables (nr_watch.c).  Every nf_tables notification
 * carries the netlink portid of the socket whose transaction made the
 * change (0: the kernel's own, such as an element timing out); this
 * context's is nftr_portid(). */
uint32_t nftr_portid(const struct nftr_ctx *);
struct nftr_event {
	uint32_t	 portid;	/* who made the change */
	int		 family;	/* NFPROTO_* */
	const char	*kind;		/* "table", "chain", "rule", "set",
					 * "element", "object", "flowtable",
					 * "generation" */
	bool		 deleted;
	bool		 gen;		/* the end of one transaction */
	char		 table[256];
	char		 name[256];	/* its chain, set or object; "" */
};
/* One nf_tables notification (one netlink message of len bytes at buf)
 * read into ev.  -1 if it is none or is malformed. */
int	nftr_event_parse(const void *buf, size_t len, struct nftr_event *ev);
const char *nftr_family_name(int family);	/* "inet", "ip", "bridge" */
/* Base chains of other tables that a packet meets on one of moat's
 * hooks before moat's own chain there (ip, ip6 and inet share hooks).
 * The first is described in what; returns how many, -1 on error. */
int	nftr_foreign_hooks(struct nftr_ctx *, const struct nftr_ruleset *,
	    char *what, size_t len);
/* Does a running program hold moat's tables (table flag owner; on this
 * gateway that is gatewayd)?  Then nothing else may change them.  1 yes,
 * 0 no (or no tables), -1 error. */
int	nftr_owned(struct nftr_ctx *);
/* Delete "inet moat" and "bridge moat" (whichever exist), atomically. */
int	nftr_flush(struct nftr_ctx *);
/* The gate of a box in an active/standby pair (table "inet moat_ha",
 * replaced in one transaction): open forwards as the policy says; shut
 * drops every forwarded packet and everything the proxy and dnsd users
 * of o send.  nftr_ha_remove deletes it (a box that is not in a pair). */
int	nftr_ha_gate(struct nftr_ctx *, bool open, const struct nftr_opts *o);
int	nftr_ha_remove(struct nftr_ctx *);
/* Add IPv4 addresses to sandbox's allowlist set with a timeout, in one
 * acked transaction; addresses already present get their timeout
 * refreshed.  Non-IPv4 addresses are skipped (IPv6 from guests is
 * dropped).  Private addresses need no filtering here: the private-range
 * rule comes before the allowlist in the chain.  Returns the number of
 * addresses sent, or -1. */
int	nftr_set_add(struct nftr_ctx *, const char *sandbox,
	    const struct moat_addr *addrs, size_t n, uint32_t timeout_ms);
/* Call fn(elem, left_ms, arg) for each element of sandbox's allowlist
 * sets (allow_ and allowp_) that has a timeout, left_ms the time it has
 * left.  Returns the number of elements, 0 if the sets do not exist, -1
 * on error. */
struct admit_elem;
int	nftr_set_elems(struct nftr_ctx *, const char *sandbox,
	    void (*fn)(const struct admit_elem *, uint64_t left_ms, void *),
	    void *arg);
/* Empty sandbox's allowlist sets, allow_ and allowp_ (its allow list
 * narrowed), in one acked transaction.  0 or -1. */
int	nftr_set_flush(struct nftr_ctx *, const char *sandbox);
/* The same with timeouts_ms[i] for addrs[i] (each), or timeouts_ms[0]
 * for all. */
int	nftr_set_add_each(struct nftr_ctx *, const char *sandbox,
	    const struct moat_addr *addrs, size_t n, const uint32_t *timeouts_ms,
	    bool each);

/* Make budget_spent hold exactly addrs (their egress budget is spent),
 * each for timeouts_ms[i] (the rest of its window), in one acked
 * transaction: the guests at those addresses may open no new flow.  The
 * policy must have the set (some sandbox has a budget).  0 or -1. */
int	nftr_budget_set(struct nftr_ctx *, const struct moat_addr *addrs,
	    size_t n, const uint32_t *timeouts_ms);

/* One sandbox's traffic since its accounting elements were created (a
 * full replacement of the tables starts them again; nftr_update keeps
 * those of sandboxes whose address did not change).  out: sent by the
 * guest, in: sent to it.  conns_*: connections opened, counted at their
 * first packet (conntrack entry not yet confirmed), once each; an attempt
 * the policy refused is never confirmed, so each of its packets counts. */
struct nftr_acct {
	uint64_t	bytes_out, packets_out, conns_out;
	uint64_t	bytes_in, packets_in, conns_in;
};
/* Read every sandbox's counters from the kernel: out[i] for
 * cfg->sandboxes[i] (zero where the kernel has no element).  0 or -1. */
int	nftr_acct_read(struct nftr_ctx *, const struct moat_config *,
	    struct nftr_acct *out);

/* The one privileged decision on a resolver's set addition (nr_allow.c):
 * admit, respect frozen (the resolver judged the name by an allow list
 * from before the sandbox's last narrowing), raise each timeout to what p
 * already promised, add to the kernel's set (nft NULL: decide only),
 * record the promise.  The IPC_SET_ACK status: -1 refused, 0 nothing to
 * add, else the number added; st counts what was added and refused. */
#define NFTR_ALLOW_MAX	64	/* addresses in one request (IPC_SET_MAX_ADDRS) */
struct promises;
struct nftr_allow_stats {
	uint64_t	added, refused;
};
/* plain: open the addresses for the sandbox's allow_ports; ports: each
 * address with each of these (a name with ports of its own). */
int	nftr_allow_add(struct nftr_ctx *, struct promises *,
	    const struct moat_config *, const char *sandbox,
	    const struct moat_addr *addrs, size_t naddr, bool plain,
	    const struct moat_port *ports, size_t nports, uint32_t timeout_ms,
	    bool frozen, uint64_t now_ms, struct nftr_allow_stats *);
/* Add elements to sandbox's two sets (svc 0: allow_<sandbox>, else
 * allowp_<sandbox>) with timeouts_ms[i] each, in one acked transaction;
 * non-IPv4 skipped.  The number sent, or -1. */
int	nftr_set_add_elems(struct nftr_ctx *, const char *sandbox,
	    const struct admit_elem *, size_t n, const uint32_t *timeouts_ms);

#endif
