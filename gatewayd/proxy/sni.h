/*
 * sni.h -- the server name from a TLS ClientHello, read without OpenSSL.
 *
 * Pure over (buffer, length): the proxy peeks at a guest's first bytes,
 * which may hold the ClientHello split over several TLS records.
 */
#ifndef MOAT_PROXY_SNI_H
#define MOAT_PROXY_SNI_H

#include <stddef.h>
#include <stdint.h>

#define SNI_MAX_HELLO	16384	/* bigger ClientHellos are refused */

enum sni_ret {
	SNI_FOUND,		/* name holds the lower-cased host name */
	SNI_ABSENT,		/* a complete ClientHello without server_name */
	SNI_INCOMPLETE,		/* a plausible prefix: read more */
	SNI_NOT_TLS,		/* the first byte is not a TLS handshake */
	SNI_MALFORMED,		/* broken, oversized, or an invalid name */
};

/* name must hold at least 256 bytes. */
enum sni_ret	sni_parse(const uint8_t *buf, size_t len, char *name,
		    size_t namelen);

#endif
