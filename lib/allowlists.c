/*
 * allowlists.c -- named baseline lists: an allow entry "@NAME" stands for
 * the names in NAME.list, read from allow.d beside the main configuration
 * file (/etc/moat/allow.d, the admin's own) or else from the lists moat
 * ships (MOAT_DATADIR/allow.d, /usr/share/moat/allow.d when installed).
 *
 * A list has one name or "*.name" pattern a line, checked as an allow
 * entry in the configuration is; '#' starts a comment; lists do not name
 * other lists.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_int.h"
#include "log.h"

#ifndef MOAT_DATADIR
#define MOAT_DATADIR	"/usr/share/moat"
#endif
#define LIST_MAX_NAMES	1024

const char *
config_allow_datadir(void)
{
	return MOAT_DATADIR "/allow.d";
}

/* Open NAME.list: beside confpath first, then the shipped lists. */
static FILE *
list_open(const char *confpath, const char *name, char *path, size_t plen,
    char *err, size_t errlen)
{
	const char *slash = strrchr(confpath, '/');
	char mine[512];
	FILE *fp;

	if (slash == NULL)
		snprintf(mine, sizeof(mine), "allow.d/%s.list", name);
	else
		snprintf(mine, sizeof(mine), "%.*s/allow.d/%s.list",
		    (int)(slash - confpath), confpath, name);
	snprintf(path, plen, "%s", mine);
	if ((fp = fopen(path, "re")) != NULL || errno != ENOENT)
		goto done;
	snprintf(path, plen, "%s/%s.list", config_allow_datadir(), name);
	if ((fp = fopen(path, "re")) != NULL || errno != ENOENT)
		goto done;
	snprintf(err, errlen, "no list \"@%s\" (looked for %s and %s)", name,
	    mine, path);
	return NULL;
done:
	if (fp == NULL)
		snprintf(err, errlen, "list \"@%s\": %s: %s", name, path,
		    strerror(errno));
	return fp;
}

/* One line: its entry, comment and blanks cut; "" if none. */
static char *
line_entry(char *line)
{
	char *p = strchr(line, '#'), *e;

	if (p != NULL)
		*p = '\0';
	while (*line == ' ' || *line == '\t')
		line++;
	e = line + strlen(line);
	while (e > line && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' ||
	    e[-1] == '\r'))
		*--e = '\0';
	return line;
}

int
config_allow_list(const char *confpath, const char *ref,
    struct moat_strlist *out, char *err, size_t errlen)
{
	char path[600], why[384], *line = NULL, *v;
	size_t cap = 0, lineno = 0, i;
	FILE *fp;
	int rc = 0;

	if (ref[0] != '@' || !ident_valid(ref + 1, 32)) {
		snprintf(err, errlen, "\"%s\": a list is named \"@NAME\", NAME "
		    "1 to 32 of a-z, 0-9, '-', '_'", ref);
		return -1;
	}
	if ((fp = list_open(confpath, ref + 1, path, sizeof(path), err,
	    errlen)) == NULL)
		return -1;
	while (rc == 0 && getline(&line, &cap, fp) != -1) {
		lineno++;
		v = line_entry(line);
		if (*v == '\0')
			continue;
		if (*v == '@')
			snprintf(why, sizeof(why), "a list does not name "
			    "another list");
		else if (out->n >= LIST_MAX_NAMES)
			snprintf(why, sizeof(why), "more than %d names",
			    LIST_MAX_NAMES);
		else if (config_allow_entry(v, why, sizeof(why))) {
			for (i = 0; i < out->n; i++)
				if (strcmp(out->v[i], v) == 0)
					break;
			if (i == out->n) {
				out->v = xreallocarray(out->v, out->n + 1,
				    sizeof(*out->v));
				out->v[out->n++] = xstrdup(v);
			}
			continue;
		}
		snprintf(err, errlen, "list \"%s\": %s:%zu: %s", ref, path,
		    lineno, why);
		rc = -1;
	}
	free(line);
	fclose(fp);
	return rc;
}
