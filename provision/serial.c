/*
 * serial.c -- what provision takes from a guest's serial console: its
 * first-boot verdict.
 *
 * Everything on the serial console is written by the guest, so a verdict
 * is the guest's own claim, and is taken only in one shape: a whole line
 * "MOAT-VERDICT: WORD" (carriage returns allowed at its end) whose WORD
 * is one of the words below.  Anything else -- escape sequences, a
 * verdict inside another line, an unknown word -- is no verdict.  The
 * first verdict a guest reports is the one recorded: the check runs at
 * first boot, before anyone logs in, so what a guest prints later cannot
 * replace it.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "provision.h"

#define VERDICT_TAG	"MOAT-VERDICT: "

static const char *const words[] = {
	[VERDICT_CONTAINED] = "contained",
	[VERDICT_NOT_CONTAINED] = "NOT CONTAINED",
	[VERDICT_ERROR] = "error",
};

const char *
verdict_word(enum verdict v)
{
	return v > VERDICT_NONE && v < VERDICT_MAX ? words[v] : NULL;
}

/* A word of the table, exactly, or NONE. */
static enum verdict
verdict_of(const char *s, size_t len)
{
	int v;

	for (v = VERDICT_NONE + 1; v < VERDICT_MAX; v++)
		if (strlen(words[v]) == len && memcmp(words[v], s, len) == 0)
			return (enum verdict)v;
	return VERDICT_NONE;
}

enum verdict
verdict_line(const char *line, size_t len)
{
	const size_t tl = sizeof(VERDICT_TAG) - 1;

	while (len > 0 && line[len - 1] == '\r')
		len--;
	if (len <= tl || memcmp(line, VERDICT_TAG, tl) != 0)
		return VERDICT_NONE;
	return verdict_of(line + tl, len - tl);
}

/* Only a line's first bytes are kept: a verdict line is short, and a
 * longer one is not a verdict whatever it says. */
void
verdict_feed(struct verdict_scan *vs, const char *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n && vs->v == VERDICT_NONE; i++) {
		if (buf[i] == '\n') {
			if (!vs->over)
				vs->v = verdict_line(vs->line, vs->len);
			vs->len = 0;
			vs->over = false;
		} else if (vs->len < sizeof(vs->line))
			vs->line[vs->len++] = buf[i];
		else
			vs->over = true;
	}
}

/* The recorded verdict: the file holds one word of the table and a
 * newline, nothing else. */
enum verdict
verdict_file_read(const char *path)
{
	enum verdict v = VERDICT_NONE;
	size_t len;
	char *s;

	if ((s = read_small_file(path, 32, &len)) == NULL)
		return VERDICT_NONE;
	if (len > 0 && s[len - 1] == '\n')
		v = verdict_of(s, len - 1);
	free(s);
	return v;
}

/* A guest's console log from its start, at most max bytes: its first
 * verdict.  For guests whose verdict was never recorded on its own. */
enum verdict
verdict_log_scan(const char *path, size_t max)
{
	struct verdict_scan vs = { .v = VERDICT_NONE };
	struct stat st;
	char buf[4096];
	ssize_t r;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK)) == -1)
		return VERDICT_NONE;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		while (vs.v == VERDICT_NONE && max > 0 && (r = read(fd, buf,
		    max < sizeof(buf) ? max : sizeof(buf))) > 0) {
			verdict_feed(&vs, buf, (size_t)r);
			max -= (size_t)r;
		}
	close(fd);
	return vs.v;
}
