/*
 * json.c -- JSON string escaping and a small object builder (json.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"

/* Length of the valid UTF-8 sequence at p (2..4) and its code point,
 * or 0 when p does not start one (overlong forms, surrogates and
 * values past U+10FFFF are not valid). */
static size_t
utf8_seq(const unsigned char *p, uint32_t *cp)
{
	size_t n, i;
	uint32_t c, min;

	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2; c = p[0] & 0x1f; min = 0x80;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3; c = p[0] & 0x0f; min = 0x800;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4; c = p[0] & 0x07; min = 0x10000;
	} else
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;	/* also stops at the NUL */
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* Escape one character (or sequence) at p into out (room for 12 bytes);
 * returns the bytes of s consumed and sets *olen. */
static size_t
escape_one(const unsigned char *p, char *out, size_t *olen)
{
	uint32_t cp;
	size_t n;

	if (*p == '"' || *p == '\\') {
		out[0] = '\\';
		out[1] = (char)*p;
		*olen = 2;
		return 1;
	}
	if (*p >= 0x20 && *p < 0x7f) {
		out[0] = (char)*p;
		*olen = 1;
		return 1;
	}
	if ((n = utf8_seq(p, &cp)) == 0) {
		*olen = (size_t)snprintf(out, 13, "\\u%04x", *p);
		return 1;
	}
	if (cp < 0x10000)
		*olen = (size_t)snprintf(out, 13, "\\u%04x", cp);
	else {
		cp -= 0x10000;
		*olen = (size_t)snprintf(out, 13, "\\u%04x\\u%04x",
		    0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
	}
	return n;
}

char *
json_escape(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	/* Every input byte grows to at most 6 output bytes. */
	char *out = xreallocarray(NULL, strlen(s) + 1, 6), *o = out;
	size_t n;

	while (*p != '\0') {
		p += escape_one(p, o, &n);
		o += n;
	}
	*o = '\0';
	return out;
}

void
json_fputs(FILE *f, const char *s)
{
	char *e;

	if (s == NULL) {
		fputs("null", f);
		return;
	}
	e = json_escape(s);
	fprintf(f, "\"%s\"", e);
	free(e);
}

static void
append(struct json *j, const char *s, size_t n)
{
	if (j->len + n + 1 > j->cap) {
		j->cap = (j->len + n + 1) * 2;
		j->buf = xreallocarray(j->buf, 1, j->cap);
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	j->buf[j->len] = '\0';
}

void
json_raw(struct json *j, const char *s)
{
	append(j, s, strlen(s));
	j->comma = 1;
}

void
json_str(struct json *j, const char *s)
{
	char *e;

	if (s == NULL) {
		json_raw(j, "null");
		return;
	}
	e = json_escape(s);
	append(j, "\"", 1);
	append(j, e, strlen(e));
	append(j, "\"", 1);
	free(e);
	j->comma = 1;
}

void
json_begin(struct json *j)
{
	if (j->comma)
		append(j, ",", 1);
	append(j, "{", 1);
	j->comma = 0;
}

void
json_end(struct json *j)
{
	append(j, "}", 1);
	j->comma = 1;
}

void
json_key(struct json *j, const char *k)
{
	if (j->comma)
		append(j, ",", 1);
	j->comma = 0;
	json_str(j, k);
	append(j, ":", 1);
	j->comma = 0;
}

void
json_kstr(struct json *j, const char *k, const char *v)
{
	json_key(j, k);
	json_str(j, v);
}

void
json_kraw(struct json *j, const char *k, const char *v)
{
	json_key(j, k);
	json_raw(j, v);
}

void
json_free(struct json *j)
{
	free(j->buf);
	j->buf = NULL;
	j->len = j->cap = 0;
	j->comma = 0;
}
