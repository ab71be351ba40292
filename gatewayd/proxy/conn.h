/*
 * conn.h -- one guest connection through the proxy.
 *
 * A connection walks a small state machine: read the guest's first bytes
 * (an explicit-proxy request head, or a transparent ClientHello / request
 * head), decide (refuse, splice, intercept), resolve and check, dial
 * exactly the checked address, then either splice bytes through untouched
 * or terminate TLS and run the HTTP engine (struct conn_app).  A wait on
 * another process is a state of its own, so the worker's other
 * connections go on: the signer's leaf (S_SIGNING), gatewayd's answer to
 * a budget (S_BUDGET).  Each state has one event handler in a table.
 */
#ifndef MOAT_PROXY_CONN_H
#define MOAT_PROXY_CONN_H

#include <sys/socket.h>

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <openssl/ssl.h>

#include "config.h"
#include "dns.h"
#include "policy.h"
#include "secret.h"
#include "side.h"
#include "tls.h"
#include "splice.h"
#include "tls.h"

#define TIMEOUT_HEAD_S	15	/* first bytes / request head */
#define TIMEOUT_DIAL_S	10
#define TIMEOUT_IDLE_S	300
#define HE_RESOLVE_MS	50	/* one family answered: wait for the other */
#define HE_DELAY_MS	250	/* IPv6 not connected yet: try IPv4 too */

enum cstate {
	S_HEAD,		/* reading a request head before any upstream */
	S_PEEK,		/* waiting for a complete ClientHello */
	S_DIAL,		/* resolving or connecting */
	S_UPTLS,	/* handshake with the upstream */
	S_SIGNING,	/* waiting for the signer's leaf for host */
	S_GUESTTLS,	/* handshake with the guest */
	S_SPLICE,
	S_HTTP,
	S_BUDGET,	/* a request waits for gatewayd to charge a budget */
	S_TUNNEL,	/* after a 101 over TLS: bytes both ways */
	S_DRAIN,	/* flush a final answer, then close */
	S_NSTATES
};

enum ckind { K_EXPLICIT, K_TRANSPARENT };

/* What to do once the upstream TCP connection is up. */
enum after_dial { AD_CONNECT_OK, AD_GUEST_TLS, AD_HTTP };

struct http;
struct http_head;

struct conn {
	struct conn	*next, *prev;
	enum cstate	 st;
	enum ckind	 kind;
	bool		 closed;
	struct side	 g, u;			/* guest, upstream */
	struct moat_addr srcaddr;
	char		 src[64];
	const struct moat_sandbox *sb;
	const char	*sbname;
	char		 host[256];		/* "" when none */
	uint16_t	 port;
	bool		 literal;
	struct moat_addr lit;
	struct sockaddr_storage odst;		/* transparent only */
	bool		 tls;			/* guest speaks TLS */
	bool		 sni_ok;		/* its SNI named host */
	enum verdict	 verdict;
	enum after_dial	 after;
	struct dnsreq	*dns, *dns6;		/* A, and AAAA with IPv6 */
	struct moat_addr got4, got6;		/* the first checked of each */
	bool		 done4, done6, has4, has6;
	const char	*err4;			/* why A did not resolve */
	/* Happy eyeballs (RFC 8305): IPv6 is dialled first, and IPv4 once
	 * IPv6 fails or has not connected within HE_DELAY_MS; the first to
	 * connect wins.  The timer also bounds the wait for the other
	 * family's answer once one is in (HE_RESOLVE_MS). */
	struct ev_timer	 he;
	struct ev	 fbev;			/* the IPv4 attempt's socket */
	enum { FB_NONE, FB_WAIT, FB_DIAL, FB_FAILED } fb;
	struct moat_addr dial;
	uint16_t	 dialport;
	bool		 dialled;
	time_t		 deadline;
	struct splice	 sp;
	struct http	*h;
	struct tls_wait	 leafwait;	/* in S_SIGNING */
};

struct proxy {
	const struct moat_config *cfg;
	struct secrets	*secrets;
	int		 nconns;
	int		 maxconns;
	int		 sb_max;		/* per sandbox */
	bool		 draining;
	struct admit_host host;		/* the gateway host's addresses */
};

extern struct proxy proxy;

void	conn_accept(int lfd, enum ckind);
void	conn_tick(void);
void	conn_close(struct conn *);
int	conn_count_sandbox(const struct moat_sandbox *);
/* Secret name's value changed: close and audit ("cut") every connection
 * whose requests the proxy reads for a sandbox holding it.  The number. */
int	conn_cut_secret(const char *name);
/* A grant narrowed sb's allow list: close and audit ("cut") each of its
 * connections to a name the list no longer covers.  The number. */
int	conn_cut_allow(const struct moat_sandbox *sb);
/* A reload to ncfg: every connection whose sandbox is gone, or among the
 * changed ones gatewayd named (sorted names), or whose upstream address
 * ncfg would not admit, is closed and audited ("cut"); with cut_read (the
 * proxy drains and more than sandboxes changed), so is every one whose
 * requests the proxy reads (intercepted, or plain HTTP): the secrets,
 * bindings and rules it works by may be others now.  keep: ncfg's
 * sandboxes are about to replace old's, and the others move to their
 * sandbox's new entry.  The number closed. */
int	conn_rebind(const struct moat_config *old,
	    const struct moat_config *ncfg, bool keep, bool cut_read,
	    const char *const *changed, size_t nchanged);

/* The engine's request waits for gatewayd's budget answer (S_BUDGET):
 * neither side is read or written meanwhile.  conn_budget_answer, called
 * with the answer, gives the connection back to the engine, which goes on
 * from the request it holds. */
void	conn_budget_wait(struct conn *);
void	conn_budget_answer(struct conn *);

/* Answer the guest in plain HTTP (or inside its TLS) and close. */
void	conn_refuse_http(struct conn *, int code, const char *reason);
void	conn_refuse_http_hdr(struct conn *, int code, const char *hdr,
	    const char *reason);
void	conn_audit_refuse(struct conn *, const char *reason);
/* Route a request of the HTTP engine to host:port (re-dialling when the
 * upstream differs or is gone).  Returns 1 if ready now, 0 if dialling
 * (the engine resumes via http_resume), -1 refused (answered). */
int	conn_route(struct conn *, const char *host, uint16_t port);
void	conn_set_deadline(struct conn *, int seconds);
void	conn_refuse(struct conn *, int code, const char *reason);
/* The same for a policy refusal (403), telling the guest how to ask. */
void	conn_refuse_policy(struct conn *, const char *reason);

/*
 * What runs a connection once it carries HTTP: the engine (engine.h).
 * conn.c calls it only through this table, set once by main, so the
 * engine builds on the connection layer and never the other way round.
 */
struct conn_app {
	/* The request stream begins: with its first head when conn.c has
	 * parsed it (the explicit proxy's first request), else NULL. */
	void	(*start)(struct conn *, const struct http_head *);
	void	(*pump)(struct conn *);		/* S_HTTP: readiness */
	void	(*tunnel)(struct conn *);	/* S_TUNNEL: readiness */
	void	(*free)(struct http *);
};

void	conn_init(const struct conn_app *);

#endif
