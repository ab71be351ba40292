/*
 * fuzz_printers.c -- libFuzzer harness for how `ctl refused` and
 * `ctl names` print what a guest chose: seen_shown (a row's, a comment's
 * and a label's spelling of a name) and seen_as_allow (`--as-allow`).
 * The input is names separated by NUL bytes.  Checks what an operator
 * relies on: a shown name is printable ASCII in which no '"' ends a
 * string; the --as-allow text loads with libconfig as one setting,
 * `allow`, a list of names the config loader takes as allow entries.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libconfig.h>

#include "../gatewayd/parent/seen.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
shown_safe(const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s < ' ' || *s > '~' || *s == '"')
			abort();
		if (*s == '\\' && *++s == '\0')
			abort();
	}
}

static void
allow_loads(const char *text)
{
	const config_setting_t *root, *allow;
	char name[SEEN_WHAT_LEN];
	config_t cf;
	int i;

	for (const char *p = text; *p != '\0'; p++)
		if ((*p < ' ' && *p != '\n') || *p > '~')
			abort();
	config_init(&cf);
	if (config_read_string(&cf, text) != CONFIG_TRUE)
		abort();
	root = config_root_setting(&cf);
	if (config_setting_length(root) != 1 ||
	    (allow = config_setting_get_member(root, "allow")) == NULL ||
	    config_setting_type(allow) != CONFIG_TYPE_ARRAY)
		abort();
	for (i = 0; i < config_setting_length(allow); i++) {
		const char *v = config_setting_get_string_elem(allow, i);

		if (v == NULL || !seen_allow_name(v, name, sizeof(name)) ||
		    strcmp(v, name) != 0)
			abort();
	}
	config_destroy(&cf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char *buf = malloc(len + 1), *p, *out;
	const char *names[64];
	size_t n = 0;

	if (buf == NULL)
		return 0;
	memcpy(buf, data, len);
	buf[len] = '\0';
	for (p = buf; p <= buf + len && n < 64; p += strlen(p) + 1) {
		if (strlen(p) >= SEEN_WHAT_LEN)	/* what seen.h keeps */
			p[SEEN_WHAT_LEN - 1] = '\0';
		names[n++] = p;
		out = seen_shown(p);
		shown_safe(out);
		free(out);
	}
	out = seen_as_allow(names, n);
	allow_loads(out);
	free(out);
	free(buf);
	return 0;
}
