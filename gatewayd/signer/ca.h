/*
 * ca.h -- the gateway CA: its key and certificate in state_dir, and the
 * leaf certificates signed with it.
 *
 * Only two processes ever hold the CA key: the root process that loads
 * (or first creates) it, for the moment it takes to fork the signer, and
 * the signer (signer.c), which holds nothing else.  The proxy that talks
 * to guests asks the signer for leaves and never sees the key.
 */
#ifndef MOAT_CA_H
#define MOAT_CA_H

#include <openssl/evp.h>
#include <openssl/x509.h>

#define CA_KEY_FILE	"proxy-ca.key"	/* in state_dir, 0600 */
#define CA_CERT_FILE	"proxy-ca.crt"	/* in state_dir, 0644: for guests */
#define CA_LEAF_VALID_S	(7 * 24 * 3600)

struct ca {
	EVP_PKEY	*key;
	X509		*cert;
};

/* Load the CA from state_dir, creating it (and state_dir, 0700) on first
 * use.  As root.  0, or -1 with a message logged. */
int	ca_open(const char *state_dir, struct ca *);
/* Free both; OpenSSL clears the private key's memory. */
void	ca_close(struct ca *);
/* Is host a name or address literal we would put in a certificate? */
int	ca_host_ok(const char *host);
/* A leaf for host carrying pub, signed by the CA; NULL on failure. */
X509	*ca_sign_leaf(const struct ca *, const char *host, EVP_PKEY *pub);

#endif
