/*
 * fuzz_web_form.c -- what moat-web reads of a request itself: form fields
 * (and query strings) and the session cookie.  The rest of HTTP is
 * libh2o's.  A field found is NUL-terminated within its room and holds no
 * control character; a cookie found is 64 hex digits.
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
	if (web_cookie_session((const char *)d, len, tok) == 0) {
		if (strlen(tok) != 64)
			abort();
		for (j = 0; j < 64; j++)
			if (!isxdigit((unsigned char)tok[j]))
				abort();
	}
	return 0;
}
