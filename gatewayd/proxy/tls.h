/*
 * tls.h -- leaf certificates from the signer, and the two TLS contexts:
 * towards guests (we are the server, with a leaf for the host they asked
 * for) and towards upstreams (we verify the real chain and name).
 */
#ifndef MOAT_PROXY_TLS_H
#define MOAT_PROXY_TLS_H

#include <openssl/ssl.h>

/* signer: the socket to the signer process (signer.h), which holds the
 * CA key; upstream_ca: an extra trust anchor file, or NULL.  0 or -1. */
int	tls_init(int signer, const char *upstream_ca);
/* Has the signer gone away?  Then no new leaf can be made. */
int	tls_signer_lost(void);
void	tls_free(void);
/* A server-side SSL on fd presenting a leaf for host (name or address
 * literal); NULL on failure. */
SSL	*tls_guest_ssl(int fd, const char *host);
/* A client-side SSL on fd that verifies host (TLS 1.2+); NULL on failure. */
SSL	*tls_upstream_ssl(int fd, const char *host);
/* Why the last OpenSSL call failed, for logs (never secret material). */
const char *tls_errstr(void);

#endif
