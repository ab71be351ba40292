/*
 * fuzz_web_form.c -- what moat-web reads of a request itself: form fields
 * (and query strings) and the session cookie.  The rest of HTTP is
 * libh2o's.  A field found is NUL-terminated within its room and holds no
 * control character; a cookie found is 64 hex digits.  And the lines the
 * audit log gained between two reads (the input split in two at its first
 * NUL): a part of the new text, its end; the old text grown by lines is
 * never taken for a new log.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "web/web.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t len)
{
	static const char *const names[] = { "sandbox", "name", "for", "ports",
	    "t", "id", "" };
	char out[64], tok[65];
	size_t i, j, n;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		for (n = 1; n <= sizeof(out); n += 31)
			if (web_form_get((const char *)d, len, names[i], out,
			    n) == 0) {
				if (memchr(out, '\0', n) == NULL)
					abort();
				for (j = 0; out[j]; j++)
					if ((unsigned char)out[j] < 0x20 ||
					    out[j] == 0x7f)
						abort();
			}
	{
		char *a = malloc(len + 1), *b, *g;
		const char *add;
		bool all;
		size_t al;

		if (a == NULL)
			return 0;
		memcpy(a, d, len);
		a[len] = '\0';
		b = a + strlen(a) + (strlen(a) < len ? 1 : 0);
		add = web_log_added(a, b, &all);
		if (add < b || add > b + strlen(b))
			abort();
		/* a, then a line more: that line alone is new. */
		al = strlen(a);
		if ((g = malloc(al + 8)) == NULL)
			abort();
		memcpy(g, a, al);
		memcpy(g + al, al ? "\n{x}" : "{x}", al ? 5 : 4);
		add = web_log_added(a, g, &all);
		if (all || strcmp(add, "{x}") != 0)
			abort();
		free(g);
		free(a);
	}
	if (web_cookie_session((const char *)d, len, tok) == 0) {
		if (strlen(tok) != 64)
			abort();
		for (j = 0; j < 64; j++)
			if (!isxdigit((unsigned char)tok[j]))
				abort();
	}
	return 0;
}
