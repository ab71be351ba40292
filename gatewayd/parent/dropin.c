/*
 * parent/dropin.c -- edit a sandbox drop-in's allow list in place and
 * write it back checked, through lib/cfgtxn.h (dropin.h).
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cfgtxn.h"
#include "config.h"
#include "dropin.h"
#include "log.h"

/* --- reading libconfig text --------------------------------------------- */

/* Past whitespace and comments (#, //, and C comments) from i; -1 on an
 * unterminated comment. */
static long
skip_blank(const char *t, long i)
{
	for (;;) {
		while (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' ||
		    t[i] == '\r')
			i++;
		if (t[i] == '#' || (t[i] == '/' && t[i + 1] == '/')) {
			while (t[i] != '\0' && t[i] != '\n')
				i++;
		} else if (t[i] == '/' && t[i + 1] == '*') {
			const char *e = strstr(t + i + 2, "*/");

			if (e == NULL)
				return -1;
			i = e - t + 2;
		} else
			return i;
	}
}

/* Past the string that starts at t[i] == '"'; its value, unescaped, into
 * out (if not NULL); -1 if unterminated or too long. */
static long
skip_string(const char *t, long i, char *out, size_t cap)
{
	size_t n = 0;

	for (i++; t[i] != '"'; i++) {
		if (t[i] == '\0')
			return -1;
		if (t[i] == '\\' && t[i + 1] != '\0')
			i++;
		if (out != NULL) {
			if (n + 1 >= cap)
				return -1;
			out[n++] = t[i];
		}
	}
	if (out != NULL)
		out[n] = '\0';
	return i + 1;
}

/* The top-level "allow" list: [*open, *close] the brackets' offsets.
 * 1 found, 0 not there, -1 unreadable. */
static int
find_allow(const char *t, long *open, long *close)
{
	long i = 0, j;
	int depth = 0;

	for (;;) {
		if ((i = skip_blank(t, i)) == -1)
			return -1;
		if (t[i] == '\0')
			return depth == 0 ? 0 : -1;
		if (t[i] == '"') {
			if ((i = skip_string(t, i, NULL, 0)) == -1)
				return -1;
			continue;
		}
		if (strchr("[({", t[i]) != NULL) {
			depth++;
			i++;
			continue;
		}
		if (strchr("])}", t[i]) != NULL) {
			if (--depth < 0)
				return -1;
			i++;
			continue;
		}
		if (depth == 0 && strncmp(t + i, "allow", 5) == 0 &&
		    (i == 0 || !(isalnum((unsigned char)t[i - 1]) ||
		    t[i - 1] == '_' || t[i - 1] == '-')) &&
		    !(isalnum((unsigned char)t[i + 5]) || t[i + 5] == '_' ||
		    t[i + 5] == '-')) {
			if ((j = skip_blank(t, i + 5)) == -1 ||
			    (t[j] != '=' && t[j] != ':') ||
			    (j = skip_blank(t, j + 1)) == -1 || t[j] != '[')
				return -1;
			*open = j;
			for (j++;;) {
				if ((j = skip_blank(t, j)) == -1)
					return -1;
				if (t[j] == ']')
					break;
				if (t[j] == '"') {
					if ((j = skip_string(t, j, NULL, 0)) ==
					    -1)
						return -1;
				} else if (t[j] == ',')
					j++;
				else
					return -1;
			}
			*close = j;
			return 1;
		}
		i++;
	}
}

/* --- editing -------------------------------------------------------------- */

struct names {
	char	**v;
	size_t	  n;
};

static void
names_add(struct names *l, const char *s)
{
	l->v = xreallocarray(l->v, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = xstrdup(s);
}

static void
names_free(struct names *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

/* The strings between the brackets, in order. */
static int
read_list(const char *t, long open, long close, struct names *l)
{
	char buf[512];
	long j = open + 1;

	while ((j = skip_blank(t, j)) != -1 && j < close) {
		if (t[j] == ',') {
			j++;
			continue;
		}
		if ((j = skip_string(t, j, buf, sizeof(buf))) == -1)
			return -1;
		names_add(l, buf);
	}
	return j == -1 ? -1 : 0;
}

static bool
same_name(const char *a, const char *b)
{
	return strcasecmp(a, b) == 0;
}

/* A name to remove takes every entry of that name, whatever ports of its
 * own it has ("git.example.com" removes "git.example.com:tcp/22"). */
static bool
del_match(const char *entry, const char *del)
{
	size_t n = strlen(del);

	if (strchr(del, ':') != NULL)
		return same_name(entry, del);
	return strncasecmp(entry, del, n) == 0 &&
	    (entry[n] == '\0' || entry[n] == ':');
}

static void
print_list(FILE *fp, const struct names *l)
{
	size_t i;
	const char *p;

	fputc('[', fp);
	for (i = 0; i < l->n; i++) {
		fputs(i ? ", \"" : " \"", fp);
		for (p = l->v[i]; *p; p++) {
			if (*p == '"' || *p == '\\')
				fputc('\\', fp);
			fputc(*p, fp);
		}
		fputc('"', fp);
	}
	fputs(" ]", fp);
}

char *
dropin_allow_edit(const char *text, const char *const *add, size_t nadd,
    const char *const *del, size_t ndel, bool *found, char *why,
    size_t whylen)
{
	struct names l = { NULL, 0 }, keep = { NULL, 0 };
	long open = -1, close = -1;
	char *out = NULL;
	size_t len = 0, i, j;
	FILE *fp;
	int rc;

	if ((rc = find_allow(text, &open, &close)) == -1 ||
	    (rc == 1 && read_list(text, open, close, &l) == -1)) {
		snprintf(why, whylen, "cannot read it as a sandbox's file "
		    "(an unterminated string, comment or list, or an allow "
		    "that is not a list of strings)");
		names_free(&l);
		return NULL;
	}
	for (j = 0; j < ndel; j++)
		found[j] = false;
	for (i = 0; i < l.n; i++) {
		for (j = 0; j < ndel; j++)
			if (del_match(l.v[i], del[j]))
				break;
		if (j < ndel)
			found[j] = true;
		else
			names_add(&keep, l.v[i]);
	}
	for (j = 0; j < nadd; j++) {
		for (i = 0; i < keep.n; i++)
			if (same_name(keep.v[i], add[j]))
				break;
		if (i == keep.n)
			names_add(&keep, add[j]);
	}
	if ((fp = open_memstream(&out, &len)) == NULL)
		fatalx("out of memory");
	if (rc == 1) {
		fwrite(text, 1, (size_t)open, fp);
		print_list(fp, &keep);
		fputs(text + close + 1, fp);
	} else {
		fputs(text, fp);
		if (text[0] != '\0' && text[strlen(text) - 1] != '\n')
			fputc('\n', fp);
		fputs("allow = ", fp);
		print_list(fp, &keep);
		fputs(";\n", fp);
	}
	fclose(fp);
	names_free(&l);
	names_free(&keep);
	return out;
}

/* --- writing, checked ---------------------------------------------------- */

/* The loader's check, keeping what it loaded for the caller. */
static int
check_keep(void *arg, const char *conf_path, char **errors)
{
	struct moat_config **keep = arg;
	struct moat_errors errs;

	if ((*keep = config_load(conf_path, NULL, &errs)) == NULL) {
		*errors = config_errors_text(&errs);
		config_errors_free(&errs);
		return -1;
	}
	config_errors_free(&errs);
	return 0;
}

/* Through the one journaled writer (lib/cfgtxn.h), like every verb that
 * writes the configuration: a gatewayd killed halfway is undone at its
 * next start. */
int
dropin_replace_checked(const char *mainconf, const char *path,
    const char *text, char **errors, struct moat_config **loaded)
{
	struct moat_config *cfg = NULL;
	struct cfgtxn *t;
	struct stat st;
	int rc = -1;

	*errors = NULL;
	if (lstat(path, &st) == -1) {
		xasprintf(errors, "%s: cannot write it: %s\n", path,
		    strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		xasprintf(errors, "%s: cannot write it: not a regular file\n",
		    path);
		return -1;
	}
	t = cfgtxn_begin(mainconf);
	if (cfgtxn_stage_write(t, path, text, strlen(text), st.st_mode & 07777,
	    st.st_uid, st.st_gid) == -1)
		xasprintf(errors, "%s: cannot write it: %s\n", path,
		    strerror(errno));
	else if (cfgtxn_commit_and_check(t, check_keep, &cfg, errors) == 0)
		rc = 0;
	cfgtxn_end(t);
	if (rc == 0 && loaded != NULL)
		*loaded = cfg;
	else
		config_free(cfg);
	return rc;
}
