/*
 * sni.c -- parse a TLS ClientHello far enough to find server_name.
 *
 * The handshake message is first reassembled from consecutive handshake
 * records (a ClientHello with many extensions may span two), then read
 * with a bounds-checked cursor: every length is checked against what is
 * left before it is used.
 */
#include <stdbool.h>
#include <string.h>

#include "sni.h"

struct cur {
	const uint8_t	*p;
	size_t		 left;
	bool		 bad;
};

static unsigned
get8(struct cur *c)
{
	if (c->left < 1) {
		c->bad = true;
		return 0;
	}
	c->left--;
	return *c->p++;
}

static unsigned
get16(struct cur *c)
{
	unsigned hi = get8(c);

	return (hi << 8) | get8(c);
}

static unsigned
get24(struct cur *c)
{
	unsigned hi = get8(c);

	return (hi << 16) | get16(c);
}

/* Take n bytes as a sub-cursor. */
static struct cur
take(struct cur *c, size_t n)
{
	struct cur s = { c->p, n, false };

	if (c->bad || c->left < n) {
		c->bad = true;
		s.left = 0;
		s.bad = true;
		return s;
	}
	c->p += n;
	c->left -= n;
	return s;
}

/* Concatenate handshake-record payloads into hs; returns the bytes
 * gathered, or -1 for something that is not a handshake record stream. */
static long
reassemble(const uint8_t *buf, size_t len, uint8_t *hs, size_t hscap)
{
	size_t off = 0, n = 0, rl;

	while (off + 5 <= len) {
		if (buf[off] != 0x16 || buf[off + 1] != 0x03)
			return -1;
		rl = ((size_t)buf[off + 3] << 8) | buf[off + 4];
		if (rl == 0 || rl > 16384)
			return -1;
		off += 5;
		if (rl > len - off)
			rl = len - off;		/* partial record */
		if (n + rl > hscap)
			return -1;
		memcpy(hs + n, buf + off, rl);
		n += rl;
		off += rl;
	}
	return (long)n;
}

static enum sni_ret
copy_name(struct cur *c, char *name, size_t namelen)
{
	unsigned n = get16(c), i;
	struct cur s = take(c, n);

	if (s.bad || n == 0 || n > 253 || n + 1 > namelen)
		return SNI_MALFORMED;
	for (i = 0; i < n; i++) {
		unsigned char ch = s.p[i];

		if (ch >= 'A' && ch <= 'Z')
			ch = (unsigned char)(ch + 32);
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		    ch == '-' || ch == '.' || ch == '_'))
			return SNI_MALFORMED;
		name[i] = (char)ch;
	}
	name[n] = '\0';
	if (name[n - 1] == '.')
		name[n - 1] = '\0';
	return name[0] ? SNI_FOUND : SNI_MALFORMED;
}

static enum sni_ret
server_name_ext(struct cur *c, char *name, size_t namelen)
{
	struct cur list = take(c, get16(c));

	while (!list.bad && list.left > 0) {
		if (get8(&list) == 0)		/* host_name */
			return copy_name(&list, name, namelen);
		take(&list, get16(&list));
	}
	return SNI_MALFORMED;
}

static enum sni_ret
client_hello(struct cur *c, char *name, size_t namelen)
{
	struct cur exts, e;
	unsigned type, cs, n;

	get16(c);				/* legacy_version */
	take(c, 32);				/* random */
	if ((n = get8(c)) > 32)
		return SNI_MALFORMED;
	take(c, n);				/* legacy_session_id */
	cs = get16(c);
	if (cs < 2 || cs % 2)
		return SNI_MALFORMED;
	take(c, cs);				/* cipher_suites */
	if ((n = get8(c)) < 1)
		return SNI_MALFORMED;
	take(c, n);				/* compression_methods */
	if (c->bad)
		return SNI_MALFORMED;
	if (c->left == 0)
		return SNI_ABSENT;		/* no extensions at all */
	exts = take(c, get16(c));
	while (!exts.bad && exts.left > 0) {
		type = get16(&exts);
		e = take(&exts, get16(&exts));
		if (e.bad)
			break;
		if (type == 0)
			return server_name_ext(&e, name, namelen);
	}
	return exts.bad || c->bad ? SNI_MALFORMED : SNI_ABSENT;
}

enum sni_ret
sni_parse(const uint8_t *buf, size_t len, char *name, size_t namelen)
{
	uint8_t hs[SNI_MAX_HELLO];
	struct cur c, body;
	unsigned hlen;
	long n;

	if (len == 0)
		return SNI_INCOMPLETE;
	if (buf[0] != 0x16)
		return SNI_NOT_TLS;
	if ((n = reassemble(buf, len, hs, sizeof(hs))) < 0)
		return SNI_MALFORMED;
	if (n < 4)
		return len >= SNI_MAX_HELLO ? SNI_MALFORMED : SNI_INCOMPLETE;
	c = (struct cur){ hs, (size_t)n, false };
	if (get8(&c) != 1)			/* ClientHello */
		return SNI_MALFORMED;
	hlen = get24(&c);
	if (hlen > SNI_MAX_HELLO - 4)
		return SNI_MALFORMED;
	if (hlen > c.left)
		return SNI_INCOMPLETE;
	body = take(&c, hlen);
	return client_hello(&body, name, namelen);
}
