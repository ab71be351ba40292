/*
 * conftext.h -- change one setting in a configuration file's text and
 * keep everything else as it was written: the other settings, comments,
 * blank lines and order.  For the verbs that edit a drop-in an admin may
 * also have edited by hand (`gatewayd ctl secret set`).
 *
 * Only settings at the top level are seen (a drop-in is one object, its
 * settings at the top); the text is scanned for libconfig's strings,
 * comments and brackets, not parsed: the loader checks the result.
 */
#ifndef MOAT_CONFTEXT_H
#define MOAT_CONFTEXT_H

#include <stdbool.h>

/* text with the top-level setting key set to value (libconfig syntax,
 * such as "\"x\"" or "[ \"a\", \"b\" ]"): its first "key = ...;" is
 * replaced in place, or "key = value;" is added at the end.  malloc'ed;
 * NULL if text cannot be scanned (an unterminated string, comment or
 * bracket, or something other than settings at the top). */
char	*conftext_set(const char *text, const char *key, const char *value);
/* 1 if text has a top-level setting key, 0 if not, -1 as above. */
int	 conftext_has(const char *text, const char *key);

#endif
