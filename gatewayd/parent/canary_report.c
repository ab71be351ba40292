/*
 * canary_report.c -- what the canary's scan found, from its text report.
 *
 * The scanner runs as an unprivileged user in a namespace whose traffic
 * crosses the policy it tests, so its output is read as untrusted: one
 * line at a time, bounded, and only two kinds of line count.  A probe that
 * breached is listed as "  BREACH proto target verdict evidence", a control
 * that failed as "  FAILED ..."; the last line says "N probes in S s".
 * The first breach is kept, or else the first failed control.
 * The verdict itself is the scanner's exit status, not this text.
 */
#include <stdbool.h>
#include <string.h>

#include "canary_report.h"

/* Printable ASCII, runs of blanks folded into one space. */
static void
keep(const char *s, size_t n, char *out, size_t outlen)
{
	size_t i, o = 0;
	bool blank = false;

	for (i = 0; i < n && o + 1 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == ' ' || c == '\t') {
			blank = o > 0;
			continue;
		}
		if (c < 0x21 || c > 0x7e)
			c = '?';
		if (blank && o + 2 < outlen)
			out[o++] = ' ';
		blank = false;
		out[o++] = (char)c;
	}
	out[o] = '\0';
}

static bool
starts(const char *s, size_t n, const char *word)
{
	size_t w = strlen(word);

	return n >= w && memcmp(s, word, w) == 0;
}

static void
line(const char *s, size_t n, struct canary_report *r)
{
	bool breach, failed;

	breach = starts(s, n, "  BREACH ");
	failed = starts(s, n, "  FAILED ");
	if (breach || failed) {
		/* A breach names the scan's finding before any failed
		 * control does. */
		if (breach && r->breaches++ == 0)
			keep(s, n, r->first, sizeof(r->first));
		else if (failed && r->failed++ == 0 && r->breaches == 0)
			keep(s, n, r->first, sizeof(r->first));
		return;
	}
	if (n > 0 && s[0] >= '0' && s[0] <= '9' && memmem(s, n,
	    " probes in ", 11) != NULL)
		r->summary = 1;
}

void
canary_report_parse(const char *buf, size_t len, struct canary_report *r)
{
	const char *p = buf, *nl;
	size_t left = len;

	memset(r, 0, sizeof(*r));
	while (left > 0) {
		nl = memchr(p, '\n', left);
		line(p, nl != NULL ? (size_t)(nl - p) : left, r);
		if (nl == NULL)
			break;
		left -= (size_t)(nl - p) + 1;
		p = nl + 1;
	}
}
