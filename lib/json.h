/*
 * json.h -- the one JSON writer of moat.
 *
 * Strings are escaped one way everywhere: '"' and '\' get a backslash,
 * a valid UTF-8 sequence becomes \uXXXX (a surrogate pair past U+FFFF),
 * and every other byte outside printable ASCII (control characters,
 * DEL, a stray byte of broken UTF-8) becomes \u00XX.  The output is
 * therefore plain printable ASCII: it fits lib/ipc.c's audit payloads,
 * syslog and terminals, and nothing is ever replaced or dropped.
 *
 * struct json builds one object in memory:
 *	struct json j = JSON_INIT;
 *	json_begin(&j); json_kstr(&j, "event", "x"); json_end(&j);
 *	... j.buf, j.len ...; json_free(&j);
 */
#ifndef MOAT_JSON_H
#define MOAT_JSON_H

#include <stddef.h>
#include <stdio.h>

struct json {
	char	*buf;		/* NUL-terminated after any call */
	size_t	 len, cap;
	int	 comma;		/* the next key needs a ',' first */
};

#define JSON_INIT	{ NULL, 0, 0, 0 }

/* The escaped body of s (no quotes), malloc'ed. */
char	*json_escape(const char *s);
/* s as a quoted JSON string on f; NULL is written null. */
void	 json_fputs(FILE *f, const char *s);

void	 json_begin(struct json *);		/* { */
void	 json_end(struct json *);		/* } */
void	 json_key(struct json *, const char *k);	/* [,]"k": */
void	 json_str(struct json *, const char *s);	/* "s", or null */
void	 json_raw(struct json *, const char *s);	/* s as it is */
void	 json_kstr(struct json *, const char *k, const char *v);
void	 json_kraw(struct json *, const char *k, const char *v);
void	 json_free(struct json *);

#endif
