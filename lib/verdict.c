/*
 * verdict.c -- a guest's verdict lines and the record kept of them (see
 * verdict.h).  Pure functions except verdict_rec_read.
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "verdict.h"

static const char *const words[] = {
	[VERDICT_CONTAINED] = "contained",
	[VERDICT_NOT_CONTAINED] = "NOT CONTAINED",
	[VERDICT_ERROR] = "error",
};

static const char *const reasons[] = {
	[VL_FORGED] = "forged", [VL_OVERLONG] = "overlong",
	[VL_ESCAPED] = "escaped",
};

const char *
verdict_word(enum verdict v)
{
	return v > VERDICT_NONE && v < VERDICT_MAX ? words[v] : NULL;
}

const char *
vline_reason(enum vline k)
{
	return VL_REJECTED(k) ? reasons[k] : NULL;
}

enum verdict
verdict_of(const char *s, size_t len)
{
	int v;

	for (v = VERDICT_NONE + 1; v < VERDICT_MAX; v++)
		if (strlen(words[v]) == len && memcmp(words[v], s, len) == 0)
			return (enum verdict)v;
	return VERDICT_NONE;
}

/* Printable ASCII only: no escape sequence, no other control byte. */
static bool
plain(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

enum vline
vline_classify(const char *line, size_t len, bool over, bool tag,
    enum verdict *v)
{
	const size_t tl = sizeof(VERDICT_TAG) - 1;

	*v = VERDICT_NONE;
	if (!tag)
		return VL_NONE;
	if (over)
		return VL_OVERLONG;
	while (len > 0 && line[len - 1] == '\r')
		len--;
	if (!plain(line, len))
		return VL_ESCAPED;
	if (len <= tl || memcmp(line, VERDICT_TAG, tl) != 0 ||
	    (*v = verdict_of(line + tl, len - tl)) == VERDICT_NONE)
		return VL_FORGED;
	return VL_VERDICT;
}

/* The tag's first byte appears nowhere else in it, so a mismatch starts
 * the match again at this byte alone. */
static void
tag_step(struct vline_scan *s, char c)
{
	const size_t tl = sizeof(VERDICT_TAG) - 1;

	if (s->tag)
		return;
	if (c == VERDICT_TAG[s->tagm])
		s->tagm++;
	else
		s->tagm = c == VERDICT_TAG[0];
	if (s->tagm == tl)
		s->tag = true;
}

size_t
vline_feed(struct vline_scan *s, const char *buf, size_t n, vline_fn fn,
    void *arg, const bool *stop)
{
	enum verdict v;
	enum vline k;
	size_t i;

	for (i = 0; i < n && (stop == NULL || !*stop); i++) {
		if (buf[i] == '\n') {
			k = vline_classify(s->line, s->len, s->over, s->tag,
			    &v);
			memset(s, 0, sizeof(*s));
			fn(arg, k, v);
			continue;
		}
		tag_step(s, buf[i]);
		if (s->len < sizeof(s->line))
			s->line[s->len++] = buf[i];
		else
			s->over = true;
	}
	return i;
}

int
verdict_rec_decode(const void *buf, size_t len, struct verdict_rec *out)
{
	if (len != sizeof(*out))
		return -1;
	memcpy(out, buf, sizeof(*out));
	if (out->magic != VERDICT_REC_MAGIC || out->verdict >= VERDICT_MAX ||
	    out->at < 0 || (out->verdict == VERDICT_NONE) != (out->at == 0))
		return -1;
	return 0;
}

int
verdict_rec_read(const char *path, struct verdict_rec *out)
{
	unsigned char buf[sizeof(*out) + 1];
	struct stat st;
	ssize_t r;
	int fd;

	memset(out, 0, sizeof(*out));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK)) == -1)
		return -1;
	r = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ?
	    pread(fd, buf, sizeof(buf), 0) : -1;
	close(fd);
	if (r < 0 || verdict_rec_decode(buf, (size_t)r, out) == -1) {
		memset(out, 0, sizeof(*out));
		return -1;
	}
	return 0;
}

void
verdict_rec_count(struct verdict_rec *r, enum vline k, enum verdict v,
    int64_t now)
{
	r->magic = VERDICT_REC_MAGIC;
	if (k == VL_VERDICT && v > VERDICT_NONE && v < VERDICT_MAX) {
		r->verdict = v;
		r->at = now > 0 ? now : 1;
		r->reports++;
	} else if (VL_REJECTED(k))
		r->rejected[k - VL_FORGED]++;
}
