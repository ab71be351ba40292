/*
 * secretfile.h -- read one secret's value from its file.
 *
 * Only gatewayd's root parent (and a stand-alone proxy, for tests) calls
 * this; under gatewayd the proxy gets the values over IPC.
 */
#ifndef MOAT_SECRETFILE_H
#define MOAT_SECRETFILE_H

#include <stddef.h>

#include "config.h"

#define SECRET_FILE_MAX	4096

/*
 * Read s->file into buf (at least SECRET_FILE_MAX + 2 bytes), not through
 * a symbolic link.  The value may end in one newline (dropped); CR, LF or
 * NUL inside, an empty value or one over SECRET_FILE_MAX is refused with a
 * message naming the secret, never the value.  0, or -1 with err filled.
 * The caller wipes buf.
 */
int	secret_file_read(const struct moat_secret *s, char *buf, size_t *len,
	    char *err, size_t errlen);

#endif
