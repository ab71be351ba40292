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
/* Send one request line (no newline) and read its answer.  Lines before
 * the final one (list's) go to each_line when it is not NULL. */
int	 regclient_request(struct regclient *, const char *line,
	    void (*each_line)(const char *, void *), void *arg,
	    char *why, size_t whylen);
/* Say "quit" and close; NULL is fine. */
void	 regclient_close(struct regclient *);

#endif
