/*
 * conftext.h -- change one setting in a configuration file's text, or the
 * entries of one list, and keep everything else as it was written: the
 * other settings and entries, comments, blank lines and order.  For the
 * verbs that edit a drop-in an admin may also have edited by hand
 * (`gatewayd ctl secret set`, `attach`, `allow` and `unallow` for good).
 *
 * Only settings at the top level are seen (a drop-in is one object, its
 * settings at the top); the text is scanned for libconfig's strings,
 * comments and brackets, not parsed: the loader checks the result.
 */
#ifndef MOAT_CONFTEXT_H
#define MOAT_CONFTEXT_H

#include <stdbool.h>
#include <stddef.h>

/* text with the top-level setting key set to value (libconfig syntax,
 * such as "\"x\"" or "[ \"a\", \"b\" ]"): its first "key = ...;" is
 * replaced in place, or "key = value;" is added at the end.  malloc'ed;
 * NULL if text cannot be scanned (an unterminated string, comment or
 * bracket, or something other than settings at the top). */
char	*conftext_set(const char *text, const char *key, const char *value);
/* 1 if text has a top-level setting key, 0 if not, -1 as above. */
int	 conftext_has(const char *text, const char *key);

/*
 * text with the top-level array of strings key edited in place: the
 * entries in del taken out (found[i], if found is not NULL, says whether
 * del[i] was there), then those in add appended after the last entry
 * kept (one already there, in any case, is not added twice).  An entry's name is what comes before
 * its first ':' ("git.example.com:tcp/22"): a del without ':' takes every
 * entry of its name, with or without such a part; one with ':' only the
 * same entry.  Names compare in any case.  Everything else stays byte for
 * byte, comments between entries included; a text without key gets
 * "key = [ ... ];" at its end.  Malloc'ed; NULL as conftext_set, or if
 * key is not an array of strings.
 */
char	*conftext_list_edit(const char *text, const char *key,
	    const char *const *add, size_t nadd, const char *const *del,
	    size_t ndel, bool *found);

#endif
