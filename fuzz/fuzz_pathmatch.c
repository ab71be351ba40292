/*
 * fuzz_pathmatch.c -- libFuzzer harness for the request-rule matcher
 * (lib/pathmatch.c).  The guest chooses the request target; the first
 * line of the input is taken as a rule (an operator's, but checked and
 * matched by the same code), the rest as the target.  The matcher must
 * accept or refuse, never crash; and whatever it accepts has no dot
 * segment, no empty segment and no encoded slash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pathmatch.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	const uint8_t *nl = memchr(data, '\n', len);
	size_t rl = nl ? (size_t)(nl - data) : 0, tl;
	char rule[512], path[PM_MAX_PATH], err[256], *t;
	const char *q;
	size_t ql;
	int n;

	if (nl == NULL || rl >= sizeof(rule))
		return 0;
	memcpy(rule, data, rl);
	rule[rl] = '\0';
	tl = len - rl - 1;
	if ((t = malloc(tl ? tl : 1)) == NULL)	/* exact size for ASan */
		return 0;
	memcpy(t, nl + 1, tl);
	(void)pm_rule_check(rule, err, sizeof(err));
	n = pm_normalise(t, tl, path, sizeof(path), &q, &ql);
	if (n >= 0) {
		if (strstr(path, "//") || strstr(path, "/../") ||
		    strstr(path, "/./") || strstr(path, "%2F") ||
		    (size_t)n != strlen(path))
			abort();
		(void)pm_rule_match(rule, "GET", 3, path, (size_t)n, q, ql);
	}
	free(t);
	return 0;
}
