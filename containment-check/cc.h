/*
 * cc.h -- containment-check: the types its modules share.
 *
 * The program runs in four steps, one module each:
 *   discover.c  what the guest can see of itself (addresses, routes, ...)
 *   plan.c      turns that and the options into a flat array of probes
 *   engine.c    runs the probes concurrently in epoll loops (one per
 *               thread; main.c runs the gateway sweep's in threads)
 *   report.c    judges every probe against its expectation and prints
 * local.c holds the checks that read the guest itself (no packets),
 * dns.c the DNS wire format (ldns): query builder and the pure reply parser,
 * spoof.c the anti-spoofing probe's frames and reply matching, intercept.c
 * the pure rule that tells the gateway's proxy from the far end, and tls.c
 * the TLS client (OpenSSL) that gathers its evidence.
 */
#ifndef CC_H
#define CC_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "exitcodes.h"
#include "ranges.h"

/* Where a probe belongs in the report, in report order. */
enum cc_class {
	C_CONTROL, C_GATEWAY, C_PRIVATE, C_METADATA, C_GUESTS, C_IPV6,
	C_DNSBYPASS, C_DNSPOLICY, C_SPOOF, C_HOST, C_NCLASS
};

/* What the network (or the guest, for local checks) said. */
enum cc_verdict {
	V_PENDING,
	V_REACHABLE,	/* connected, or a reply came back */
	V_CLOSED,	/* RST or port-unreachable: something is there */
	V_BLOCKED,	/* ICMP administratively prohibited */
	V_FILTERED,	/* no answer in time, or no route */
	V_PROXY,	/* the gateway's proxy answered in the far end's stead
			 * and refused (intercept.c) */
	V_CONNECTED,	/* connected on a port the proxy may answer, but
			 * nothing told the proxy from the far end */
	V_SKIPPED,	/* could not be run here */
	V_FOUND,	/* local check: the exposure exists */
	V_ABSENT	/* local check: it does not */
};

/* What the probe must show for the guest to count as contained. */
enum cc_expect {
	E_DENY,		/* reachable or closed is a breach */
	E_REACH,	/* positive control: must be reachable */
	E_UNREACH,	/* --expect none: reaching it is a breach */
	E_INFO,		/* reported, never judged */
	E_DNS_ANSWER,	/* control: a well-formed DNS reply must come */
	E_DNS_DENY,	/* must not resolve */
	E_DNS_ALLOW,	/* must resolve to public addresses */
	E_DNS_REBIND,	/* must not resolve to a private address */
	E_ABSENT	/* local check: found is a breach */
};

enum cc_outcome { O_OK, O_PASS, O_INFO, O_BREACH, O_FAILED };

enum cc_kind { K_TCP, K_UDP, K_ICMP6, K_LOCAL, K_SPOOF };

/* What a TCP or UDP probe sends once connected and how it reads the answer.
 * A_HTTP asks the explicit proxy; A_WEB (plain HTTP) and A_TLS (a TLS
 * handshake, then an HTTP request inside) talk to the destination itself
 * on a port the gateway's proxy may answer in its stead (intercept.c). */
enum cc_app { A_NONE, A_DNS, A_HTTP, A_RAW, A_WEB, A_TLS };

#define CC_DNS_MAXADDR	8

struct cc_dns_reply {
	uint16_t	id;
	int		rcode;
	bool		tc;
	size_t		nanswer;	/* all answer RRs */
	size_t		naddr;		/* A/AAAA kept, at most CC_DNS_MAXADDR */
	struct moat_addr addr[CC_DNS_MAXADDR];
};

/* A forged-source probe (spoof.c): what it claims to be and where its
 * frames go.  Addresses and ports in network order except sport, ipid. */
enum cc_spoof_kind {
	SP_IP,		/* own MAC, an unused address of the subnet */
	SP_MAC,		/* a forged MAC, own address */
	SP_ARP,		/* ARP who-has the gateway from the unused address */
	SP_IP6		/* own MAC, an unused address of the own IPv6 /64 */
};

struct cc_spoof {
	enum cc_spoof_kind kind;
	unsigned	ifindex;
	uint8_t		own_mac[6], src_mac[6], gw_mac[6];
	struct in_addr	src_ip;
	struct in6_addr	src6;		/* SP_IP6: the forged address */
	uint8_t		proto;		/* IPPROTO_UDP or _TCP; SP_ARP: 0 */
	uint16_t	sport, ipid;	/* sport: outside the ephemeral range */
	uint32_t	seq;
	bool		answer_arp;	/* claim src_ip for own_mac */
};

union cc_sockaddr {
	struct sockaddr		sa;
	struct sockaddr_in	sin;
	struct sockaddr_in6	sin6;
};

struct cc_probe {
	enum cc_class	cls;
	enum cc_kind	kind;
	enum cc_app	app;
	enum cc_expect	expect;
	const char	*what;		/* static text: why this probe exists */
	sa_family_t	fam;		/* the family of the address it is
					 * about (a literal asked of the
					 * proxy, not the proxy's) */
	const char	*sni;		/* A_TLS: the server name, or NULL */
	union cc_sockaddr dst;
	socklen_t	dstlen;
	uint8_t		*payload;	/* owned; sent after connect */
	size_t		paylen;
	uint16_t	dnsid;
	unsigned	timeout_ms;	/* to connect, or to the first answer */
	unsigned	talk_ms;	/* a probe that speaks once connected:
					 * its whole budget from the start
					 * (0: timeout_ms) */

	/* filled in by the engine */
	enum cc_verdict	verdict;
	char		evidence[120];
	uint32_t	rtt_us;
	struct cc_dns_reply *dns;	/* owned; A_DNS replies only */
	struct cc_spoof	*spoof;		/* owned; K_SPOOF only */
	int		http_status;

	/* engine private */
	int		fd;
	uint8_t		state;
	uint16_t	rlen;
	uint8_t		*rbuf;
	uint64_t	t0;
	uint32_t	tq_next;
	struct cc_tls	*tls;		/* A_TLS: the handshake (tls.c) */

	enum cc_outcome	outcome;	/* set by report_judge */
};

struct cc_probes {
	struct cc_probe	*v;
	size_t		 n, cap;
};

/* What the guest learnt about itself. */
#define CC_MAXIF	8
#define CC_MAXNEIGH	64
#define CC_MAXNS	8

struct cc_iface {
	char		name[16];
	struct moat_addr addr;
	int		plen;
	unsigned	index;
};

struct cc_neigh {
	struct moat_addr addr;
	uint8_t		lladdr[6];
	bool		has_ll, router;
	unsigned	ifindex;
};

struct cc_disc {
	struct cc_iface	 v4[CC_MAXIF], v6[CC_MAXIF];
	size_t		 nv4, nv6;
	char		 nics[CC_MAXIF][16];	/* up, not loopback */
	size_t		 nnics;
	struct moat_addr gateway;		/* AF_UNSPEC when unknown */
	char		 gw_ifname[16];
	unsigned	 gw_ifindex;
	uint8_t		 gw_if_mac[6];		/* our MAC on that interface */
	bool		 has_if_mac;
	size_t		 ndefault4, ndefault6, nglobal6;
	char		 route6[64];		/* first global IPv6 route, for evidence */
	size_t		 nout6;			/* of those, beyond the link */
	struct moat_addr gw6;			/* first next hop; AF_UNSPEC: none */
	unsigned	 gw6_ifindex;
	struct moat_addr ns[CC_MAXNS];
	size_t		 nns;
	struct cc_neigh	 neigh[CC_MAXNEIGH];
	size_t		 nneigh;
};

#define CC_MAXLIST	64

struct cc_target {
	struct moat_addr addr;
	uint16_t	port;		/* 0: the common ports */
};

struct cc_hostport {
	char		host[256];
	uint16_t	port;
};

enum cc_mode { M_OPEN, M_ALLOWLIST, M_NONE };

struct cc_opts {
	struct moat_addr gateway;	/* AF_UNSPEC: discover */
	enum cc_mode	mode;
	const char	*allow[CC_MAXLIST], *deny[CC_MAXLIST], *rebind[CC_MAXLIST];
	size_t		nallow, ndeny, nrebind;
	struct cc_hostport internet[4];
	size_t		ninternet;
	struct cc_target targets[CC_MAXLIST];
	size_t		ntargets;
	/* From the targets file provision writes (--targets-file). */
	struct cc_target gwaddrs[CC_MAXLIST];	/* the gateway host's */
	size_t		ngwaddrs;
	struct cc_target closed[CC_MAXLIST];	/* exceptions not for us */
	size_t		nclosed;
	/* IPv6 networks the gateway routes other than by its default route
	 * (routed lines, --routed): a few hosts of each are probed. */
	struct moat_prefix routed[CC_MAXLIST];
	size_t		nrouted;
	const char	*targets_file;
	struct moat_addr resolvers[CC_MAXLIST];
	size_t		nresolvers;	/* 0: the built-in public resolvers */
	struct moat_prefix pub[CC_MAXLIST];
	size_t		npub;
	uint16_t	proxy_port;
	const char	*gateway_ca;	/* the proxy's CA certificate file */
	unsigned	timeout_ms;
	unsigned	concurrency;
	int		host_checks;	/* -1: decide from the namespace */
	bool		json, verbose, in_guest;
	bool		quick;		/* --quick: the bounded gateway sweep */
};

/* args.c: option values (pure, unit-tested). 0 ok, -1 bad. */
int	 args_target(const char *, struct cc_target *);
int	 args_hostport(const char *, struct cc_hostport *);
int	 args_uint(const char *, unsigned lo, unsigned hi, unsigned *);
int	 args_mode(const char *, enum cc_mode *);
const char *args_mode_name(enum cc_mode);
/* One line of the targets file: "gateway IP[:PORT]", "exception
 * IP[:PORT]", "lan CIDR" (its first two hosts become --targets), "routed
 * CIDR" (an IPv6 network the gateway routes, args_routed), blank or "#"
 * comment.  0 ok, -1 bad line, -2 list full. */
int	 args_targets_line(const char *line, struct cc_opts *);
/* An IPv6 prefix of /8 to /120, no host bits: onto o->routed.  0 ok, -1
 * bad, -2 list full. */
int	 args_routed(const char *, struct cc_opts *);
#define CC_TARGETS_FILE	"/etc/moat/containment-targets"
/* Where provision installs the gateway proxy's CA certificate. */
#define CC_GATEWAY_CA	"/usr/local/share/ca-certificates/moat-gateway.crt"

/* discover.c */
void	 discover(struct cc_disc *, bool read_resolv);
void	 discover_neigh(struct cc_disc *);
bool	 disc_is_self(const struct cc_disc *, const struct moat_addr *);
bool	 disc_is_gateway(const struct cc_disc *, const struct moat_addr *);
/* A global IPv6 address and a route into 2000::/3: IPv6 is on. */
bool	 disc_has_v6(const struct cc_disc *);

/* plan.c: phase 1 is DNS (controls, policy, names the scan needs) and
 * the all-nodes echo, phase 2 everything else that uses what phase 1
 * found; the gateway's TCP sweep needs nothing and runs beside both. */
void	 plan_phase1(struct cc_probes *, const struct cc_opts *,
	    const struct cc_disc *);
void	 plan_phase2(struct cc_probes *, const struct cc_opts *,
	    const struct cc_disc *, const struct cc_probes *phase1);
void	 plan_sweep(struct cc_probes *, const struct cc_opts *,
	    const struct cc_disc *);
struct cc_probe *probes_add(struct cc_probes *);
void	 probes_free(struct cc_probes *);
void	 sockaddr_set(union cc_sockaddr *, socklen_t *,
	    const struct moat_addr *, uint16_t port, unsigned scope);

/* engine.c: runs every probe to a verdict; bounded by the probes'
 * timeouts and a hard deadline.  0 ok, -1 system error. */
int	 engine_run(struct cc_probe *, size_t n, unsigned concurrency);
uint64_t engine_now_us(void);
/* Probes several loops (threads) share: each takes the next unstarted one
 * when it has room, so the loops finish together whatever their CPU. */
struct cc_pool {
	struct cc_probe	*p;
	size_t		 n;
	_Atomic size_t	 next;
};
/* Descriptors for this many probes in flight, raising the limit:
 * what may be shared out among loops. */
size_t	 engine_budget(unsigned concurrency);
/* One loop over the pool with at most maxfly in flight; 0 ok, -1 error. */
int	 engine_run_pool(struct cc_pool *, size_t maxfly);

/* dns.c */
int	 cc_dns_query(const char *name, uint16_t qtype, uint16_t id,
	    uint8_t *buf, size_t len);
int	 cc_dns_parse(const uint8_t *buf, size_t len, struct cc_dns_reply *);
const char *cc_dns_rcode_name(int rcode);

/* spoof.c: pure; the engine sends and receives. */
#define SPOOF_NFILTER	16
#define SPOOF_FRAME_MAX	1514
enum spoof_rx { RX_NONE, RX_ARP_REQUEST, RX_REPLY };
struct spoof_peer {
	uint8_t		mac[6];
	struct in_addr	ip;
};
struct sock_filter;
size_t	 spoof_frame(const struct cc_spoof *, const struct sockaddr_in *dst,
	    const uint8_t *payload, size_t plen, uint8_t *, size_t);
uint16_t spoof_sport(unsigned eph_lo, unsigned eph_hi, uint16_t rnd);
size_t	 spoof_arp(uint8_t *, size_t, uint16_t op, const uint8_t eth_dst[6],
	    const uint8_t sha[6], struct in_addr spa, const uint8_t tha[6],
	    struct in_addr tpa);
void	 spoof_filter(const struct cc_spoof *, struct sock_filter *);
enum spoof_rx spoof_classify(const struct cc_spoof *,
	    const struct sockaddr_in *dst, const uint8_t *, size_t, char *ev,
	    size_t evlen, struct spoof_peer *);
/* SP_IP6: a TCP SYN from src6; what came back (an answer to src6, or the
 * gateway's neighbour solicitation for it, is RX_REPLY). */
size_t	 spoof_frame6(const struct cc_spoof *, const struct sockaddr_in6 *dst,
	    uint8_t *, size_t);
void	 spoof_filter6(const struct cc_spoof *, struct sock_filter *);
enum spoof_rx spoof_classify6(const struct cc_spoof *,
	    const struct sockaddr_in6 *dst, const uint8_t *, size_t, char *ev,
	    size_t evlen);
/* An address of self's /64 that nobody has: its IID reads "moat". */
void	 spoof_pick6(const struct moat_addr *self, uint16_t rnd,
	    struct in6_addr *);
int	 spoof_pick(const struct moat_addr *self, int plen,
	    const struct moat_addr *gw, const struct moat_addr *taken,
	    size_t ntaken, struct in_addr *);

/* intercept.c: pure.  The gateway may redirect a port to its proxy
 * (moat.conf proxy.intercept), which then answers in the far end's stead;
 * a connection there proves nothing by itself.  What the probe saw: */
struct cc_tls_seen {
	bool		 server_hello;	/* a ServerHello arrived */
	bool		 certificate;	/* a Certificate message arrived */
	bool		 done;		/* the handshake completed */
	bool		 gateway_cert;	/* a certificate from the gateway's CA */
	bool		 not_tls;	/* a record header that is not TLS */
	int		 alert;		/* the first alert received; -1 none */
	char		 subject[40];	/* the leaf's CN, printable */
};
struct cc_http_reply {
	int		 status;	/* 0: not (yet) an HTTP reply */
	bool		 complete;	/* head and Content-Length body read */
	bool		 moat_refused;	/* X-Moat-Refused: the proxy wrote it */
	char		 reason[48];	/* its value, printable */
	size_t		 body, bodylen;	/* the body read so far */
};
#define CC_ALERT_ACCESS_DENIED	49
int	 cc_http_reply_parse(const uint8_t *, size_t, struct cc_http_reply *);
enum cc_verdict cc_intercept_verdict(const struct cc_tls_seen *tls,
	    const uint8_t *reply, size_t len, uint16_t dnsid, bool timedout,
	    char *ev, size_t evlen);
bool	 cc_intercept_port(uint16_t port, enum cc_app *);
int	 cc_doh_request(const uint8_t *query, size_t qlen, const char *host,
	    char *buf, size_t len);
const char *cc_tls_alert_name(int);

/* tls.c: the engine's TLS client; no verification: it gathers evidence. */
int	 tls_set_gateway_ca(const char *path);	/* 0 ok, -1 unreadable */
struct cc_tls *tls_new(int fd, const char *sni);
/* 1 done (handshake over: ok or not), 0 wants POLLIN, 2 wants POLLOUT */
int	 tls_handshake(struct cc_tls *);
/* > 0 bytes, 0 end of stream or error, -1 wants POLLIN, -2 POLLOUT */
int	 tls_write(struct cc_tls *, const void *, size_t);
int	 tls_read(struct cc_tls *, void *, size_t);
const struct cc_tls_seen *tls_seen(const struct cc_tls *);
void	 tls_free(struct cc_tls *);
void	 tls_cleanup(void);

/* local.c: host-exposure checks, one K_LOCAL probe each. */
void	 local_checks(struct cc_probes *, const struct cc_disc *, bool host);

/* report.c */
void	 report_judge(struct cc_probe *, size_t n,
	    const struct moat_rangeset *priv);
int	 report_human(const struct cc_probe *, size_t n,
	    const struct cc_disc *, const struct cc_opts *, uint64_t elapsed_us);
int	 report_json(const struct cc_probe *, size_t n,
	    const struct cc_disc *, const struct cc_opts *, uint64_t elapsed_us);
const char *verdict_name(enum cc_verdict);
const char *class_name(enum cc_class);
void	 probe_target(const struct cc_probe *, char *, size_t);

#endif
