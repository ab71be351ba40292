/*
 * fuzz_refused.c -- libFuzzer harness for what gatewayd's parent reads
 * into `ctl refused`: an audit event from a child (seen_parse_audit).
 * Checks what the callers rely on: every field it returns is terminated
 * within its buffer and printable.  (The edit `ctl allow` makes to a
 * sandbox's file is fuzzed with the other text edits, fuzz_conftext.c.)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../gatewayd/parent/seen.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
printable(const char *s, size_t cap)
{
	const char *nul = memchr(s, '\0', cap);

	if (nul == NULL)
		abort();
	for (; s < nul; s++)
		if (*s < ' ' || *s > '~')
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char *text = malloc(len + 1), sb[33], what[SEEN_WHAT_LEN];
	enum seen_source src;
	enum seen_why w;

	if (text == NULL)
		return 0;
	memcpy(text, data, len);
	text[len] = '\0';
	if (seen_parse_audit(text, sb, sizeof(sb), what, sizeof(what), &src,
	    &w)) {
		printable(sb, sizeof(sb));
		printable(what, sizeof(what));
		if ((unsigned)src >= SEEN_NSOURCES || (unsigned)w >= SEEN_WHY_MAX)
			abort();
	}
	free(text);
	return 0;
}
