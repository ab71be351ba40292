/*
 * regclient.h -- a KVM host's client for a separate gateway box's
 * registration endpoint: TLS 1.3 with this host's certificate and key,
 * the box verified against its own pinned certificate (the CA file), then
 * one request line at a time, each answered "ok" or "error REASON"
 * (`list` sends "NAME ADDRESS" lines before its "ok").
 *
 * Used by `gatewayd register` and by provision.  Every step has a
 * deadline: a box that does not answer costs at most the timeout.
 */
#ifndef MOAT_REGCLIENT_H
#define MOAT_REGCLIENT_H

#include <stddef.h>
#include <stdint.h>

/* The longest request line, without its newline: the box reads no more. */
#define REG_REQUEST_MAX	1024

struct regclient;
struct ssl_ctx_st;

/* Results of regclient_request (and regclient_open's failures). */
enum {
	REG_OK = 0,		/* the box answered "ok" */
	REG_REFUSED = 1,	/* "error REASON": the reason is in why */
	REG_UNREACHABLE = -1,	/* no connection, no TLS, or no answer */
};

/* Connect to box ("ADDRESS:PORT") and finish the TLS handshake within
 * timeout_s.  The box is accepted if its certificate verifies against ca
 * (a PEM file: the box's own certificate) or, with ca NULL, if the
 * SHA-256 of its public key (SubjectPublicKeyInfo, DER) is pin.  NULL on
 * failure, with why said in why. */
struct regclient *regclient_open(const char *box, const char *ca,
	    const uint8_t pin[32], const char *cert, const char *key,
	    int timeout_s, char *why, size_t whylen);
/* The same with a client context made once (regclient_ctx_pem), so that
 * a process that may no longer read the key files can reconnect; the
 * box is accepted by its pin alone. */
struct regclient *regclient_open_ctx(const char *box, const uint8_t pin[32],
	    struct ssl_ctx_st *ctx, int timeout_s, char *why, size_t whylen);
/* A TLS 1.3 client context presenting cert (a PEM chain) and key. */
struct ssl_ctx_st *regclient_ctx_pem(const char *cert, size_t certlen,
	    const char *key, size_t keylen);
/* Put a PEM certificate chain and its key, in memory, on ctx: 0 or -1.
 * The registration and replication endpoints use it too. */
int	 regtls_use_pem(struct ssl_ctx_st *ctx, const char *cert,
	    size_t certlen, const char *key, size_t keylen);
/* Send one request line (no newline) and read its answer.  Lines before
 * the final one (list's) go to each_line when it is not NULL. */
int	 regclient_request(struct regclient *, const char *line,
	    void (*each_line)(const char *, void *), void *arg,
	    char *why, size_t whylen);
/* Say "quit" and close; NULL is fine. */
void	 regclient_close(struct regclient *);

#endif
