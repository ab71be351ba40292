/*
 * pathmatch.h -- request rules of a secret: "METHOD /path/pattern[?query]".
 *
 * A pattern's path is a list of segments: "*" stands for exactly one
 * segment, "**" for any number of segments (none included), anything else
 * for itself, compared byte for byte (paths are case-sensitive).  The
 * method is an upper-case token or "*" for any.  A query in the pattern
 * must match the request's query, where "*" stands for any run of
 * characters; a pattern without one ignores the query.
 *
 * A request's path is matched only in normal form: percent-encoded
 * unreserved characters decoded, other escapes kept with upper-case hex.
 * A path the origin could read differently from the proxy (".", "..",
 * also with a ";param" after them, the ';' raw or encoded; an empty
 * segment from "//"; an encoded '/' or '\\', a raw '\\'; an encoded '%'
 * that starts another escape, as "%252e"; a malformed escape) has no
 * normal form and matches no rule.  The proxy
 * forwards the path the guest sent, so it refuses instead of rewriting.
 *
 * Everything here is pure over (buffer, length) and fuzzed.
 */
#ifndef MOAT_PATHMATCH_H
#define MOAT_PATHMATCH_H

#include <stdbool.h>
#include <stddef.h>

#define PM_MAX_PATH	2048	/* normalised path or query, bytes */
#define PM_MAX_SEGS	128
#define PM_MAX_METHOD	16

/* Normalise an origin-form target's path into out (cap bytes, NUL
 * added).  *query / *qlen get the raw query after '?' (NULL, 0 if
 * none).  Returns the path's length, or -1 if it has no normal form. */
int	pm_normalise(const char *target, size_t len, char *out, size_t cap,
	    const char **query, size_t *qlen);

/* Is rule a well-formed pattern, its path already in normal form?
 * 0, or -1 with a message (naming what was expected) in err. */
int	pm_rule_check(const char *rule, char *err, size_t errlen);

/* Does (method, normalised path, raw query) match rule?  A rule that
 * fails pm_rule_check matches nothing. */
bool	pm_rule_match(const char *rule, const char *method, size_t mlen,
	    const char *path, size_t plen, const char *query, size_t qlen);

#endif
