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

/*
 * The secret whose placeholder the value v (len bytes) holds, or NULL.  A
 * value may hold no placeholder, its own or another's: it would ask for
 * that secret where the proxy injects it, past the other secret's request
 * rules and budget.  `gatewayd ctl secret set`, the configuration's load
 * in gatewayd and the proxy's own load all refuse such a value.
 */
const struct moat_secret *secret_value_placeholder(
	    const struct moat_config *cfg, const char *v, size_t len);

/* The environment variable a guest gets a secret's placeholder in: the
 * name tools look for (OPENAI_API_KEY for "openai"), else NAME_API_KEY. */
const char *secret_env_name(const char *secret, char *buf, size_t len);

#endif
