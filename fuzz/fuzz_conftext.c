/*
 * fuzz_conftext.c -- libFuzzer harness for one setting changed in a
 * drop-in's text (lib/conftext.c), the way `gatewayd ctl secret set`
 * edits a drop-in an admin may have written by hand.  The scanner must
 * accept or refuse, never crash or read past the text; what it writes
 * has the setting, and setting it again to the same value changes
 * nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conftext.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const char value[] = "[ \"api.example.test\" ]";
	char *text, *once, *twice;

	if ((text = malloc(len + 1)) == NULL)	/* exact size for ASan */
		return 0;
	memcpy(text, data, len);
	text[len] = '\0';
	(void)conftext_has(text, "budget");
	if ((once = conftext_set(text, "hosts", value)) != NULL) {
		if (conftext_has(once, "hosts") != 1)
			abort();
		if ((twice = conftext_set(once, "hosts", value)) == NULL ||
		    strcmp(once, twice) != 0)
			abort();
		free(twice);
	}
	free(once);
	free(text);
	return 0;
}
