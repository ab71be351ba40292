/*
 * conftext.c -- one setting of a configuration text changed in place
 * (conftext.h).  A pure function over the text, so the fuzzers and unit
 * tests drive it without files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* Where a top-level setting lies: its text from the name to its ';' or
 * ',' if it has one, and its value's. */
struct span {
	long	start, end;		/* the whole setting */
	long	vstart, vend;		/* its value */
};

/*
 * Find the top-level setting key: 1 with *sp its place; 0 if there is
 * none (sp->end is the end of the text); -1 if the text cannot be
 * scanned.
 */
static int
find(const char *s, const char *key, struct span *sp)
{
	size_t klen = strlen(key), nlen;
	long i = 0, v, vs;
	bool match;

	for (;;) {
		if ((i = skip_blank(s, i)) == -1)
			return -1;
		if (s[i] == '\0') {
			sp->end = i;
			return 0;
		}
		if (s[i] == ';' || s[i] == ',') {
			i++;
			continue;
		}
		if (strchr(NAME_FIRST, s[i]) == NULL)
			return -1;
		nlen = strspn(s + i, NAME_REST);
		if ((v = skip_blank(s, i + (long)nlen)) == -1 ||
		    (s[v] != '=' && s[v] != ':') ||
		    (vs = skip_blank(s, v + 1)) == -1 ||
		    (v = skip_value(s, vs)) == -1)
			return -1;
		match = nlen == klen && strncmp(s + i, key, klen) == 0;
		if (match) {
			sp->start = i;
			sp->vstart = vs;
			sp->vend = v;
		}
		v += (long)strspn(s + v, " \t");
		if (s[v] == ';' || s[v] == ',')
			v++;
		if (match) {
			sp->end = v;
			return 1;
		}
		i = v;
	}
}

char *
conftext_set(const char *text, const char *key, const char *value)
{
	struct span sp = { 0, 0, 0, 0 };
	char *out;
	int f;

	if ((f = find(text, key, &sp)) == -1)
		return NULL;
	if (f == 1)
		xasprintf(&out, "%.*s%s = %s;%s", (int)sp.start, text, key,
		    value, text + sp.end);
	else
		xasprintf(&out, "%s%s%s = %s;\n", text, sp.end > 0 &&
		    text[sp.end - 1] != '\n' ? "\n" : "", key, value);
	return out;
}

int
conftext_has(const char *text, const char *key)
{
	struct span sp;

	return find(text, key, &sp);
}

/* --- list edits ------------------------------------------------------ */

/* One entry of a list of strings: [start, end) its text (the strings
 * libconfig joins into one), value its contents unescaped. */
struct item {
	long	 start, end;
	char	*value;
	bool	 gone;
};

struct items {
	struct item	*v;
	size_t		 n;
};

static void
items_free(struct items *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].value);
	free(l->v);
}

/* The entry whose first string starts at s[i]: its end, or -1. */
static long
read_item(const char *s, long i, struct items *l)
{
	struct item *it;
	char *val = NULL;
	size_t len = 0;
	long start = i, j;
	FILE *fp;

	if ((fp = open_memstream(&val, &len)) == NULL)
		fatalx("out of memory");
	for (;;) {
		for (i++; s[i] != '"'; i++) {
			if (s[i] == '\0' || (s[i] == '\\' && s[++i] == '\0')) {
				fclose(fp);
				free(val);
				return -1;
			}
			fputc(s[i], fp);
		}
		i++;
		j = i + (long)strspn(s + i, " \t\r\n");
		if (s[j] != '"')
			break;
		i = j;
	}
	fclose(fp);
	l->v = xreallocarray(l->v, l->n + 1, sizeof(*l->v));
	it = &l->v[l->n++];
	it->start = start;
	it->end = i;
	it->value = val;
	it->gone = false;
	return i;
}

/* The entries of the array that opens at s[open] == '[': *close its ']'.
 * 0, or -1 if it is not an array of strings. */
static int
read_items(const char *s, long open, long *close, struct items *l)
{
	long i = open + 1;
	bool comma = true;

	for (;;) {
		if ((i = skip_blank(s, i)) == -1)
			return -1;
		if (s[i] == ']') {
			*close = i;
			return 0;
		}
		if (s[i] == ',' && !comma) {
			comma = true;
			i++;
		} else if (s[i] == '"' && comma) {
			if ((i = read_item(s, i, l)) == -1)
				return -1;
			comma = false;
		} else
			return -1;
	}
}

/* An entry's name is what comes before its first ':' ("NAME:tcp/22"). */
static size_t
entry_namelen(const char *e)
{
	return strcspn(e, ":");
}

/* del names entry: the same, in any case; a del without ':' also takes
 * the entries of its name that carry a ':' part of their own. */
static bool
del_match(const char *entry, const char *del)
{
	size_t n = entry_namelen(del);

	if (del[n] == ':')
		return strcasecmp(entry, del) == 0;
	return entry_namelen(entry) == n && strncasecmp(entry, del, n) == 0;
}

static void
put_string(FILE *fp, const char *v)
{
	fputc('"', fp);
	for (; *v; v++) {
		if (*v == '"' || *v == '\\')
			fputc('\\', fp);
		fputc(*v, fp);
	}
	fputc('"', fp);
}

/* What add brings that neither a kept entry nor an earlier add has. */
static bool
add_new(const struct items *l, const char *const *add, size_t j)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (!l->v[i].gone && strcasecmp(l->v[i].value, add[j]) == 0)
			return false;
	for (i = 0; i < j; i++)
		if (strcasecmp(add[i], add[j]) == 0)
			return false;
	return true;
}

static bool
blank(const char *s, long from, long to)
{
	return (long)strspn(s + from, " \t\r\n") >= to - from;
}

/*
 * The array's new text, from its '[' to its ']': what lies before the
 * first entry, each kept entry with what followed it (its comma, a
 * comment), the added ones after the last kept, then what followed the
 * last entry.  A removed entry takes its comma and what follows up to
 * the next entry with it.  An array with nothing but its entries
 * between the brackets that loses them all is written plain.
 */
static void
write_items(FILE *fp, const char *s, long open, long close,
    const struct items *l, const char *const *add, size_t nadd)
{
	long lead = l->n > 0 ? l->v[0].start : close;
	long tail = l->n > 0 ? l->v[l->n - 1].end : close;
	size_t i, j, kept = 0, last = 0;

	for (i = 0; i < l->n; i++)
		if (!l->v[i].gone) {
			kept++;
			last = i;
		}
	fputc('[', fp);
	if (kept == 0 && blank(s, open + 1, lead) && blank(s, tail, close)) {
		for (j = 0; j < nadd; j++)
			if (add_new(l, add, j)) {
				fputs(kept++ > 0 ? ", " : " ", fp);
				put_string(fp, add[j]);
			}
		fputs(" ]", fp);
		return;
	}
	fwrite(s + open + 1, 1, (size_t)(lead - open - 1), fp);
	for (i = 0; i < l->n; i++) {
		if (l->v[i].gone)
			continue;
		fwrite(s + l->v[i].start, 1, (size_t)(l->v[i].end -
		    l->v[i].start), fp);
		if (i != last)
			fwrite(s + l->v[i].end, 1, (size_t)(l->v[i + 1].start -
			    l->v[i].end), fp);
	}
	for (j = 0; j < nadd; j++)
		if (add_new(l, add, j)) {
			if (kept++ > 0)
				fputs(", ", fp);
			put_string(fp, add[j]);
		}
	fwrite(s + tail, 1, (size_t)(close + 1 - tail), fp);
}

char *
conftext_list_edit(const char *text, const char *key,
    const char *const *add, size_t nadd, const char *const *del, size_t ndel,
    bool *found)
{
	struct items l = { NULL, 0 };
	struct span sp = { 0, 0, 0, 0 };
	char *out = NULL;
	size_t len = 0, i, j;
	long close;
	FILE *fp;
	int f;

	if ((f = find(text, key, &sp)) == -1 || (f == 1 &&
	    (text[sp.vstart] != '[' ||
	    read_items(text, sp.vstart, &close, &l) == -1))) {
		items_free(&l);
		return NULL;
	}
	for (j = 0; j < ndel && found != NULL; j++)
		found[j] = false;
	for (i = 0; i < l.n; i++)
		for (j = 0; j < ndel; j++)
			if (del_match(l.v[i].value, del[j])) {
				l.v[i].gone = true;
				if (found != NULL)
					found[j] = true;
				break;
			}
	if ((fp = open_memstream(&out, &len)) == NULL)
		fatalx("out of memory");
	if (f == 1) {
		fwrite(text, 1, (size_t)sp.vstart, fp);
		write_items(fp, text, sp.vstart, close, &l, add, nadd);
		fputs(text + close + 1, fp);
	} else {
		fputs(text, fp);
		if (sp.end > 0 && text[sp.end - 1] != '\n')
			fputc('\n', fp);
		fprintf(fp, "%s = ", key);
		write_items(fp, "[]", 0, 1, &l, add, nadd);
		fputs(";\n", fp);
	}
	fclose(fp);
	items_free(&l);
	return out;
}
