/*
 * resolver.h -- what the parts of dnsd's resolver process share.
 *
 *   frontend.c  guests' sockets: UDP and TCP receive, answers out
 *   query.c     the life of one query: who asks, policy, cache, set
 *               updates through the privileged side, delivery
 *   upstream.c  forwarding the questions the cache cannot answer
 *   resolver.c  the process: its loop, timers, signals, IPC, reload
 *
 * Life of a query:
 *   frontend (udp_cb / tconn_cb) -> handle_query: parse, who asks, rate,
 *   special names, policy, AAAA -> cache hit: deliver; miss: fwd_start,
 *   which coalesces identical questions and tries the upstreams in turn
 *   (UDP, TCP after TC) -> fwd_answer: da_parse checks and filters ->
 *   deliver to every waiter, then cache.
 *   deliver: for an allowlist sandbox with addresses in the answer, the
 *   answer is parked until the privileged side acknowledges the set
 *   update (IPC_SET_ACK); only then does the guest get it.
 */
#ifndef DNSD_RESOLVER_H
#define DNSD_RESOLVER_H

#include <sys/socket.h>

#include <stdint.h>

#include "cache.h"
#include "dnsd.h"
#include "ipc.h"
#include "mirror.h"
#include "msg.h"
#include "policy.h"

struct counters {
	uint64_t	 queries, udp, tcp, dropped, formerr, notimp;
	uint64_t	 unknown_src, ratelimited, refused, uad, aaaa_empty;
	uint64_t	 forwarded, coalesced, up_timeouts, up_bad, up_mismatch;
	uint64_t	 up_fail, up_tcp, servfail, rebind_removed;
	uint64_t	 set_adds, set_fail, set_skipped, set_joined, tcp_refused, log_suppressed;
	uint64_t	 tcp_per_src_refused, tcp_expired, set_rejudged;
};

struct tconn;

struct client {			/* where one answer goes */
	struct tconn	*conn;	/* NULL: UDP */
	struct sockaddr_storage ss;
	socklen_t	 sslen;
	char		 sandbox[IPC_NAME_LEN];
	int		 allowlist;
	/* An allowlist name with ports of its own (admit_name_ports): its
	 * answers always go through the privileged side, with these. */
	bool		 named;
	bool		 plain;		/* also an entry without ports */
	uint8_t		 nports;
	struct moat_port ports[MOAT_NAME_PORTS_MAX];
	struct dq	 q;
};

/* What every part reads: the configuration and its products, the IPC
 * channel to the privileged side, and the counters. */
struct resolver {
	const struct dnsd_opts *opts;
	struct moat_config *cfg;
	struct policy	*pol;
	struct cache	*cache;
	struct mirror	*mirror;	/* what the sets hold, until when */
	int		 ipcfd;
	/* The gen of the allow lists in force: that of the last IPC_CONF or
	 * IPC_CONF_ALLOW taken, 0 for those dnsd started with.  Each set
	 * addition carries it (ipc_set_add.gen). */
	uint32_t	 gen;
	int		 stop;
	struct counters	 c;
};

extern struct resolver R;

/* frontend.c */
void	frontend_start(int udpfd, int tcpfd);
void	frontend_start6(int udpfd, int tcpfd);
void	client_move(struct client *to, struct client *from);
void	client_done(struct client *);
void	client_send(struct client *, const uint8_t *wire, size_t len);
void	respond(struct client *, ldns_pkt_rcode, uint16_t ede,
	    const char *text);
void	frontend_expire(uint64_t now);
uint64_t frontend_next(void);
void	frontend_close_all(void);

/* query.c */
void	query_init(void);
void	handle_query(struct client *, const uint8_t *buf, size_t len);
void	deliver(struct client *, const struct answer *, uint32_t age,
	    struct memo *);
void	setadd_acked(uint32_t id, int32_t status);
void	query_expire(uint64_t now);
uint64_t query_next(void);
void	query_close_all(void);

/* names.c: a name refused or resolved, for gatewayd's views. */
void	names_report(const char *sandbox, enum ipc_dns_name_kind,
	    enum ipc_dns_why, const struct dq *);
uint64_t names_dropped(void);

/* upstream.c */
void	upstream_init(const struct moat_config *);
void	upstreams_set(const struct moat_config *);
unsigned upstream_count(void);
void	fwd_start(struct client *);
void	upstream_expire(uint64_t now);
uint64_t upstream_next(void);
void	upstream_close_all(void);

#endif
