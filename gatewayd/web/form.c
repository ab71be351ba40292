/*
 * form.c -- the little of a request moat-web reads itself: form fields
 * and the session cookie; and what the audit log gained between two
 * reads.  Pure functions over (buffer, length), fuzzed by
 * fuzz/fuzz_web_form.c; everything else of HTTP is libh2o's.
 */
#include <ctype.h>
#include <string.h>

#include "web.h"

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decode one value (percent escapes, '+' for space) into out. */
static int
decode(const char *v, size_t n, char *out, size_t room)
{
	size_t i, o = 0;
	int hi, lo, c;

	for (i = 0; i < n; i++) {
		c = (unsigned char)v[i];
		if (c == '+')
			c = ' ';
		else if (c == '%') {
			if (i + 2 >= n)
				return -1;
			hi = hexval((unsigned char)v[i + 1]);
			lo = hexval((unsigned char)v[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			c = hi << 4 | lo;
			i += 2;
		}
		if (c < 0x20 || c == 0x7f || o + 1 >= room)
			return -1;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

int
web_form_get(const char *body, size_t len, const char *name, char *out,
    size_t room)
{
	size_t nlen = strlen(name), i = 0, end, eq;

	if (room == 0)
		return -1;
	while (i < len) {
		const char *amp = memchr(body + i, '&', len - i);

		end = amp ? (size_t)(amp - body) : len;
		for (eq = i; eq < end && body[eq] != '='; eq++)
			;
		if (eq < end && eq - i == nlen &&
		    memcmp(body + i, name, nlen) == 0)
			return decode(body + eq + 1, end - eq - 1, out, room);
		i = end + 1;
	}
	return -1;
}

int
web_cookie_session(const char *hdr, size_t len, char out[65])
{
	static const char key[] = "moat_session=";
	size_t i = 0, k = sizeof(key) - 1, j;

	while (i < len) {
		while (i < len && (hdr[i] == ' ' || hdr[i] == ';'))
			i++;
		if (len - i >= k && memcmp(hdr + i, key, k) == 0) {
			i += k;
			for (j = 0; j < 64 && i + j < len &&
			    hexval((unsigned char)hdr[i + j]) >= 0; j++)
				out[j] = hdr[i + j];
			if (j != 64 || (i + j < len && hdr[i + j] != ';' &&
			    hdr[i + j] != ' '))
				return -1;
			out[64] = '\0';
			return 0;
		}
		while (i < len && hdr[i] != ';')
			i++;
	}
	return -1;
}

const char *
web_log_added(const char *old, const char *now, bool *all)
{
	size_t ol, nl, p;

	*all = true;
	if (old == NULL)
		return now;
	ol = strlen(old);
	nl = strlen(now);
	if (ol == 0) {			/* the page has no line yet */
		*all = false;
		return now;
	}
	/* The earliest line of old from which the rest of old begins now:
	 * the window moved on by the lines before it. */
	for (p = 0; p < ol; p++) {
		if (p > 0 && old[p - 1] != '\n')
			continue;
		if (ol - p > nl || memcmp(old + p, now, ol - p) != 0 ||
		    (now[ol - p] != '\0' && now[ol - p] != '\n'))
			continue;
		*all = false;
		now += ol - p;
		return *now == '\n' ? now + 1 : now;
	}
	return now;
}
