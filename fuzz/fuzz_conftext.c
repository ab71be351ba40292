/*
 * fuzz_conftext.c -- libFuzzer harness for one setting changed in a
 * drop-in's text (lib/conftext.c), the way `gatewayd ctl secret set`
 * edits a drop-in an admin may have written by hand.  The scanner must
 * accept or refuse, never crash or read past the text; what it writes
 * has the setting, and setting it again to the same value changes
 * nothing.  The same for the list edits of `ctl allow` and `unallow`
 * (conftext_list_edit): an edit that adds a name and takes one out
 * either refuses or yields text that the scanner reads again, with the
 * added name in the list (taking it out finds it) and the removed one
 * gone, and doing it again changes nothing.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conftext.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
list_edit(const char *text)
{
	const char *add[2] = { "fuzz.example", "ssh.example:tcp/22" };
	const char *del[1] = { "pypi.org" }, *again[1] = { "fuzz.example" };
	char *once, *twice, *back;
	bool found[1];

	if ((once = conftext_list_edit(text, "allow", add, 2, del, 1,
	    found)) == NULL)
		return;
	if (conftext_has(once, "allow") != 1)
		abort();
	if ((twice = conftext_list_edit(once, "allow", add, 2, del, 1,
	    found)) == NULL || strcmp(once, twice) != 0 || found[0])
		abort();
	/* Taking out what was added finds it. */
	if ((back = conftext_list_edit(once, "allow", NULL, 0, again, 1,
	    found)) == NULL || !found[0])
		abort();
	free(back);
	free(twice);
	free(once);
}

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
	list_edit(text);
	free(text);
	return 0;
}
