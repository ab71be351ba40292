/*
 * conftext.c -- one setting of a configuration text changed in place
 * (conftext.h).  A pure function over the text, so the fuzzers and unit
 * tests drive it without files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conftext.h"
#include "log.h"

#define NAME_FIRST	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ*"
#define NAME_REST	NAME_FIRST "0123456789_-"

/* Past white space and comments ('#', "//", C comments); -1 when a
 * comment does not end. */
static long
skip_blank(const char *s, long i)
{
	const char *e;

	for (;;) {
		if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')
			i++;
		else if (s[i] == '#' || (s[i] == '/' && s[i + 1] == '/'))
			i += (long)strcspn(s + i, "\n");
		else if (s[i] == '/' && s[i + 1] == '*') {
			if ((e = strstr(s + i + 2, "*/")) == NULL)
				return -1;
			i = e + 2 - s;
		} else
			return i;
	}
}

/* Past one quoted string starting at s[i] == '"'; -1 if it does not end. */
static long
skip_string(const char *s, long i)
{
	for (i++; s[i] != '"'; i++) {
		if (s[i] == '\0' || (s[i] == '\\' && s[++i] == '\0'))
			return -1;
	}
	return i + 1;
}

/* Past a value: a string (or several, which libconfig joins), a group,
 * list or array with everything nested in it, or a scalar. */
static long
skip_value(const char *s, long i)
{
	long depth = 0, j;

	while (s[i] == '"') {
		if ((i = skip_string(s, i)) == -1)
			return -1;
		j = i + (long)strspn(s + i, " \t\r\n");
		if (s[j] != '"')
			return i;
		i = j;
	}
	if (strchr("[({", s[i]) == NULL || s[i] == '\0') {
		j = i + (long)strcspn(s + i, " \t\r\n;,#/");
		return j > i ? j : -1;
	}
	do {
		if (s[i] == '"') {
			if ((i = skip_string(s, i)) == -1)
				return -1;
			continue;
		}
		if ((j = skip_blank(s, i)) == -1)
			return -1;
		if (j != i) {
			i = j;
			continue;
		}
		if (s[i] == '\0')
			return -1;
		if (strchr("[({", s[i]) != NULL)
			depth++;
		else if (strchr("])}", s[i]) != NULL)
			depth--;
		i++;
	} while (depth > 0);
	return i;
}

/*
 * Find the top-level setting key: 1 with [*start, *end) its text, from
 * the name to its ';' or ',' if it has one; 0 if there is none (*end is
 * the end of the text); -1 if the text cannot be scanned.
 */
static int
find(const char *s, const char *key, long *start, long *end)
{
	size_t klen = strlen(key), nlen;
	long i = 0, v;

	for (;;) {
		if ((i = skip_blank(s, i)) == -1)
			return -1;
		if (s[i] == '\0') {
			*end = i;
			return 0;
		}
		if (s[i] == ';' || s[i] == ',') {
			i++;
			continue;
		}
		if (strchr(NAME_FIRST, s[i]) == NULL)
			return -1;
		*start = i;
		nlen = strspn(s + i, NAME_REST);
		if ((v = skip_blank(s, i + (long)nlen)) == -1 ||
		    (s[v] != '=' && s[v] != ':') ||
		    (v = skip_blank(s, v + 1)) == -1 ||
		    (v = skip_value(s, v)) == -1)
			return -1;
		v += (long)strspn(s + v, " \t");
		if (s[v] == ';' || s[v] == ',')
			v++;
		if (nlen == klen && strncmp(s + i, key, klen) == 0) {
			*end = v;
			return 1;
		}
		i = v;
	}
}

char *
conftext_set(const char *text, const char *key, const char *value)
{
	long start = 0, end = 0;
	char *out;
	int f;

	if ((f = find(text, key, &start, &end)) == -1)
		return NULL;
	if (f == 1)
		xasprintf(&out, "%.*s%s = %s;%s", (int)start, text, key, value,
		    text + end);
	else
		xasprintf(&out, "%s%s%s = %s;\n", text, end > 0 &&
		    text[end - 1] != '\n' ? "\n" : "", key, value);
	return out;
}

int
conftext_has(const char *text, const char *key)
{
	long start, end;

	return find(text, key, &start, &end);
}
