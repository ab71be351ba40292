/*
 * tls.h -- leaf certificates from the signer, and the two TLS contexts:
 * towards guests (we are the server, with a leaf for the host they asked
 * for) and towards upstreams (we verify the real chain and name).
 */
#ifndef MOAT_PROXY_TLS_H
#define MOAT_PROXY_TLS_H

#include <stdint.h>

#include <openssl/ssl.h>

/* signer: the socket to the signer process (signer.h), which holds the
 * CA key; upstream_ca: an extra trust anchor file, or NULL.  0 or -1. */
int	tls_init(int signer, const char *upstream_ca);
/* After ev_init: take the signer's answers as events.  0 or -1. */
int	tls_start(void);
/* Has the signer gone away?  Then no new leaf can be made. */
int	tls_signer_lost(void);
void	tls_free(void);
/* A connection waiting for a leaf: done(w, ok) is called once, from the
 * event loop, when the leaf is in the cache (ok) or cannot be had. */
struct tls_wait {
	struct tls_wait	 *next, **pprev;	/* pprev NULL: not waiting */
	void		(*done)(struct tls_wait *, int ok);
};
/* Is host's leaf cached (1)?  Else ask the signer, or join a request
 * for the same host already asked, and call w->done later (0); -1 when
 * no leaf can be had (signer gone, too many at once, or owner -- the
 * sandbox asking -- has too many new hosts being signed already). */
int	tls_leaf_want(const char *host, struct tls_wait *w, const char *owner);
/* Stop waiting (a connection closed meanwhile). */
void	tls_wait_cancel(struct tls_wait *);
/* A server-side SSL on fd presenting host's cached leaf (name or address
 * literal); NULL on failure or when it is not cached. */
SSL	*tls_guest_ssl(int fd, const char *host);
/* A client-side SSL on fd that verifies host (TLS 1.2+); NULL on failure.
 * key (or NULL: none): what its session may be resumed under -- a
 * session made under the same key is offered, and the one this handshake
 * makes is kept under it.  It must name the sandbox, the host and port,
 * and what is bound to them. */
SSL	*tls_upstream_ssl(int fd, const char *host, const char *key);
/* The upstream handshake ended (ok), or failed; counted. */
void	tls_upstream_done(SSL *, int ok);
/* The guest's handshake is done; counted. */
void	tls_guest_done(SSL *);
/* Forget every kept upstream session (the configuration changed). */
void	tls_sessions_flush(void);

/* Handshakes and their record layers since start. */
struct tls_stats {
	uint64_t	 resumed, full;		/* upstream handshakes */
	uint64_t	 conns;			/* TLS sides set up (both ways) */
	uint64_t	 ktls_send, ktls_recv;	/* of them, with kernel TLS */
	int		 ktls_kernel;		/* the kernel has TLS */
};
const struct tls_stats *tls_stats(void);
/* Who carries this connection's records, for logs: "kernel TLS" (both
 * ways), "kernel TLS sending" or "... receiving", "user-space TLS". */
const char *tls_ktls_name(SSL *);
/* "available", or "not available (fallback: user space)". */
const char *tls_kernel_state(void);
/* Why the last OpenSSL call failed, for logs (never secret material). */
const char *tls_errstr(void);

#endif
