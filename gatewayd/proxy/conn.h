/*
 * conn.h -- one guest connection through the proxy.
 *
 * A connection walks a small state machine: read the guest's first bytes
 * (an explicit-proxy request head, or a transparent ClientHello / request
 * head), decide (refuse, splice, intercept), resolve and check, dial
 * exactly the checked address, then either splice bytes through untouched
 * or terminate TLS and run the HTTP engine (engine.c).  Each state has one
 * event handler in a table.
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
#include "ev.h"
#include "policy.h"
#include "secret.h"

#define CONN_BUF	(32 * 1024)
#define TIMEOUT_HEAD_S	15	/* first bytes / request head */
#define TIMEOUT_DIAL_S	10
#define TIMEOUT_IDLE_S	300

struct buf {
	uint8_t		*d;
	size_t		 off, len, cap;
};

struct conn;

struct side {
	struct ev	 ev;
	int		 fd;
	SSL		*ssl;
	struct buf	 in, out;
	bool		 eof;		/* peer finished sending */
	bool		 shut;		/* we finished sending */
	bool		 want_r, want_w; /* what SSL asked for */
	bool		 err;
	struct conn	*c;
};

enum cstate {
	S_HEAD,		/* reading a request head before any upstream */
	S_PEEK,		/* waiting for a complete ClientHello */
	S_DIAL,		/* resolving or connecting */
	S_UPTLS,	/* handshake with the upstream */
	S_GUESTTLS,	/* handshake with the guest */
	S_SPLICE,
	S_HTTP,
	S_TUNNEL,	/* after a 101 over TLS: bytes both ways */
	S_DRAIN,	/* flush a final answer, then close */
	S_NSTATES
};

enum ckind { K_EXPLICIT, K_TRANSPARENT };

/* What to do once the upstream TCP connection is up. */
enum after_dial { AD_CONNECT_OK, AD_GUEST_TLS, AD_HTTP };

struct http;

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
	struct dnsreq	*dns;
	struct moat_addr dial;
	uint16_t	 dialport;
	bool		 dialled;
	time_t		 deadline;
	int		 pipe_gu[2], pipe_ug[2];
	size_t		 inpipe_gu, inpipe_ug;
	struct http	*h;
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

/* Side I/O over a socket or TLS.  >0 bytes, 0 EOF, -1 would block (want_*
 * set), -2 error. */
ssize_t	side_read(struct side *, void *, size_t);
ssize_t	side_write(struct side *, const void *, size_t);
/* Fill s->in / flush s->out; true if any byte moved. */
bool	side_fill(struct side *);
bool	side_flush(struct side *);
void	side_interest(struct side *, bool rd, bool wr);

void	buf_alloc(struct buf *);
void	buf_free(struct buf *);
size_t	buf_room(struct buf *);		/* compacts first */
void	buf_consume(struct buf *, size_t);
int	buf_put(struct buf *, const void *, size_t);	/* 0 or -1 if no room */
int	buf_printf(struct buf *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

/* Answer the guest in plain HTTP (or inside its TLS) and close. */
void	conn_refuse_http(struct conn *, int code, const char *reason);
void	conn_audit_refuse(struct conn *, const char *reason);
/* Route a request of the HTTP engine to host:port (re-dialling when the
 * upstream differs or is gone).  Returns 1 if ready now, 0 if dialling
 * (the engine resumes via http_resume), -1 refused (answered). */
int	conn_route(struct conn *, const char *host, uint16_t port);
void	conn_set_deadline(struct conn *, int seconds);
void	conn_refuse(struct conn *, int code, const char *reason);

/* engine.c */
void	http_start(struct conn *);
void	http_pump(struct conn *);
void	http_free(struct http *);
void	tunnel_pump(struct conn *);

#endif
