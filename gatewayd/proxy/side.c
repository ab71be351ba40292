/*
 * side.c -- one side of a proxied connection (guest or upstream): its
 * buffers, and reading and writing over a plain socket or TLS (side.h).
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>

#include "log.h"
#include "side.h"
#include "tls.h"

/* --- buffers ------------------------------------------------------------ */

void
buf_alloc(struct buf *b)
{
	if (b->d == NULL) {
		b->d = xmalloc(CONN_BUF);
		b->cap = CONN_BUF;
		b->off = b->len = 0;
	}
}

void
buf_free(struct buf *b)
{
	if (b->d != NULL) {
		/* request heads may have held a real secret */
		explicit_bzero(b->d, b->cap);
		free(b->d);
	}
	memset(b, 0, sizeof(*b));
}

static void
buf_compact(struct buf *b)
{
	if (b->off > 0) {
		memmove(b->d, b->d + b->off, b->len);
		explicit_bzero(b->d + b->len, b->off);
		b->off = 0;
	}
}

size_t
buf_room(struct buf *b)
{
	buf_alloc(b);
	/* perf: move the unread bytes down only when the buffer is full or
	 * at least as many bytes have been consumed in front of them: a
	 * body read in 16 KiB records and consumed in pieces was moved up
	 * to three times over, now at most once. */
	if (b->off > 0 && (b->off + b->len == b->cap ||
	    (b->off + b->len > b->cap / 2 && b->off >= b->len)))
		buf_compact(b);
	return b->cap - b->off - b->len;
}

/* Room for a piece that must go in whole: compacted if that makes it fit. */
static size_t
buf_room_for(struct buf *b, size_t n)
{
	size_t room = buf_room(b);

	if (room < n && b->off > 0) {
		buf_compact(b);
		room = b->cap - b->len;
	}
	return room;
}

void
buf_consume(struct buf *b, size_t n)
{
	b->off += n;
	b->len -= n;
	if (b->len == 0)
		b->off = 0;
}

int
buf_put(struct buf *b, const void *p, size_t n)
{
	if (buf_room_for(b, n) < n)
		return -1;
	memcpy(b->d + b->off + b->len, p, n);
	b->len += n;
	return 0;
}

/* perf: a header line "NAME: VALUE\r\n" put by copying, not formatted:
 * every intercepted request and response re-emits each of its fields,
 * and vfprintf showed in the profile of small requests.  Names and
 * values hold no NUL (the parser takes field octets only), so this puts
 * what "%.*s: %.*s\r\n" would. */
int
buf_field(struct buf *b, const char *name, size_t namelen, const char *value,
    size_t valuelen)
{
	size_t n = namelen + valuelen + 4;
	uint8_t *d;

	if (buf_room_for(b, n) < n)
		return -1;
	d = b->d + b->off + b->len;
	memcpy(d, name, namelen);
	d += namelen;
	*d++ = ':';
	*d++ = ' ';
	memcpy(d, value, valuelen);
	d += valuelen;
	*d++ = '\r';
	*d = '\n';
	b->len += n;
	return 0;
}

int
buf_printf(struct buf *b, const char *fmt, ...)
{
	size_t room = buf_room_for(b, b->cap);
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf((char *)b->d + b->off + b->len, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room)
		return -1;
	b->len += (size_t)n;
	return 0;
}

/* --- side I/O ----------------------------------------------------------- */

static ssize_t
ssl_result(struct side *s, int r, size_t n)
{
	if (r == 1)
		return (ssize_t)n;
	switch (SSL_get_error(s->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		s->want_r = true;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		s->want_w = true;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		log_debug("%s: TLS I/O: %s", s->who, strerror(errno));
		ERR_clear_error();
		return -2;
	default:
		log_debug("%s: TLS: %s", s->who, tls_errstr());
		return -2;
	}
}

ssize_t
side_read(struct side *s, void *p, size_t n)
{
	size_t got = 0;
	ssize_t r;

	int r1;

	if (s->ssl != NULL) {
		r1 = SSL_read_ex(s->ssl, p, n, &got);
		return ssl_result(s, r1, got);
	}
	if ((r = read(s->fd, p, n)) >= 0)
		return r;
	if (errno == EAGAIN || errno == EINTR) {
		s->want_r = true;
		return -1;
	}
	return -2;
}

ssize_t
side_write(struct side *s, const void *p, size_t n)
{
	size_t put = 0;
	ssize_t r;

	int r1;

	if (s->ssl != NULL) {
		r1 = SSL_write_ex(s->ssl, p, n, &put);
		return ssl_result(s, r1, put);
	}
	if ((r = send(s->fd, p, n, MSG_NOSIGNAL)) >= 0)
		return r;
	if (errno == EAGAIN || errno == EINTR) {
		s->want_w = true;
		return -1;
	}
	return -2;
}

bool
side_fill(struct side *s)
{
	size_t room;
	ssize_t n;

	if (s->eof || s->err || s->fd < 0 || (room = buf_room(&s->in)) == 0)
		return false;
	n = side_read(s, s->in.d + s->in.off + s->in.len, room);
	if (n > 0) {
		s->in.len += (size_t)n;
		return true;
	}
	if (n == 0 || n == -2) {
		s->eof = true;
		s->err = n == -2;
		return true;
	}
	return false;
}

/* Write s->out in pieces of whole multiples of `unit` bytes (1: all). */
static bool
flush_units(struct side *s, size_t unit)
{
	bool moved = false;
	ssize_t n;

	while (s->out.len >= unit && s->out.len > 0 && !s->err &&
	    s->fd >= 0) {
		n = side_write(s, s->out.d + s->out.off,
		    s->out.len - s->out.len % unit);
		if (n == -1)
			break;
		if (n <= 0) {
			s->err = true;
			return true;
		}
		/* the bytes sent may have been a real secret */
		if (!s->to_guest)
			explicit_bzero(s->out.d + s->out.off, (size_t)n);
		buf_consume(&s->out, (size_t)n);
		moved = true;
	}
	return moved;
}

bool
side_flush(struct side *s)
{
	return flush_units(s, 1);
}

bool
side_flush_records(struct side *s)
{
	return flush_units(s, s->ssl != NULL ? TLS_RECORD_MAX : 1);
}

void
side_interest(struct side *s, bool rd, bool wr)
{
	uint32_t w = 0;

	if (rd || s->want_r)
		w |= EPOLLIN;
	if (wr || s->want_w || s->out.len > 0)
		w |= EPOLLOUT;
	ev_set(&s->ev, w);
}

void
side_close(struct side *s)
{
	if (s->ssl != NULL) {
		SSL_free(s->ssl);
		s->ssl = NULL;
	}
	if (s->fd >= 0) {
		ev_del(&s->ev);
		close(s->fd);
		s->fd = -1;
	}
	buf_free(&s->in);
	buf_free(&s->out);
	s->eof = s->shut = s->err = s->want_r = s->want_w = false;
}
