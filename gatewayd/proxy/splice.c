/*
 * splice.c -- bytes through, undecrypted: guest and upstream sockets
 * joined by two pipes and splice(2), so payload never enters user space
 * (splice.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "pipes.h"
#include "splice.h"

void
splice_init(struct splice *sp)
{
	sp->p_gu[0] = sp->p_gu[1] = sp->p_ug[0] = sp->p_ug[1] = -1;
	sp->in_gu = sp->in_ug = 0;
	sp->bulk_gu = sp->bulk_ug = false;
}

/* Pipes come from the pool when bytes flow (pipes.h), not here: an idle
 * tunnel holds none. */
int
splice_open(struct splice *sp)
{
	splice_init(sp);
	return 0;
}

void
splice_close(struct splice *sp)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (sp->p_gu[i] >= 0)
			close(sp->p_gu[i]);
		if (sp->p_ug[i] >= 0)
			close(sp->p_ug[i]);
	}
	splice_init(sp);
}

/* Into the empty pipe p: the bytes a copy read that dst did not take.
 * An empty pipe holds at least COPY_MAX (splice.h). */
static bool
park(struct side *dst, int p[2], size_t *inpipe, const uint8_t *b, size_t n)
{
	ssize_t w;

	if (pipe_get(p) == -1) {
		log_warn("pipe2");
		dst->err = true;
		return false;
	}
	w = write(p[1], b, n);
	if (w < 0 || (size_t)w != n) {
		dst->err = true;
		return false;
	}
	*inpipe = n;
	return true;
}

/* perf: a small message is read into the stack and written at once:
 * read(2) and send(2) cost less than two splices for a few hundred bytes,
 * which is what an API call is.  A read that fills the buffer means bulk:
 * the direction turns to splice until a splice reads less than COPY_MAX.
 * What dst does not take goes into the direction's pipe, which then
 * drains first, so order is kept.  The bytes pass as they came (the
 * guest's TLS, or whatever it chose to send): no secret of the gateway's
 * is ever in them, so the buffer is not wiped, as pipe pages are not. */
static bool
copy_dir(struct side *src, struct side *dst, int p[2], size_t *inpipe,
    bool *bulk)
{
	uint8_t b[COPY_MAX];
	ssize_t n, w;

	n = read(src->fd, b, sizeof(b));
	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			src->eof = true;
		src->rd_ready = false;
		return n == 0;
	}
	if ((size_t)n == sizeof(b))
		*bulk = true;
	else
		src->rd_ready = false;	/* drained: epoll says when more */
	w = send(dst->fd, b, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w < 0) {
		if (errno != EAGAIN && errno != EINTR) {
			dst->err = true;
			return false;
		}
		w = 0;
	}
	if (w < n)
		return park(dst, p, inpipe, b + w, (size_t)(n - w));
	return true;
}

/* One direction.  Reading is asked for only while the pipe is empty: a
 * pipe can be out of slots before it is out of bytes, and level-triggered
 * readiness would then spin. */
static bool
splice_dir(struct side *src, struct side *dst, int p[2], size_t *inpipe,
    bool *bulk)
{
	unsigned fl = SPLICE_F_NONBLOCK | SPLICE_F_MOVE;
	bool moved = false;
	size_t want = PIPE_CAP - *inpipe;
	ssize_t n;

	if (!src->eof && *inpipe == 0 && !*bulk && src->rd_ready) {
		moved = copy_dir(src, dst, p, inpipe, bulk);
		if (dst->err)
			return false;
	} else if (!src->eof && *inpipe < PIPE_CAP && src->rd_ready) {
		/* Top the pipe up whenever there is room, not only once it
		 * is empty, so reading overlaps writing; interest in reading
		 * is still asked for only while it is empty (splice_pump). */
		if (p[0] < 0 && pipe_get(p) == -1) {
			log_warn("pipe2");
			dst->err = true;
			return false;
		}
		n = splice(src->fd, NULL, p[1], NULL, want, fl);
		if (n > 0)
			*inpipe += (size_t)n;
		else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			src->eof = true;
		/* short: the socket is drained (or the pipe out of slots);
		 * epoll says when there is more */
		if ((n >= 0 && (size_t)n < want) || (n < 0 && errno == EAGAIN))
			src->rd_ready = false;
		if (n >= 0 && (size_t)n < COPY_MAX)
			*bulk = false;	/* small again: copy the next read */
		moved = n >= 0;
	}
	while (*inpipe > 0) {
		n = splice(p[0], NULL, dst->fd, NULL, *inpipe, fl);
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				dst->err = true;
			break;
		}
		*inpipe -= (size_t)n;
		moved = true;
	}
	if (*inpipe == 0 && p[0] >= 0)
		pipe_put(p);	/* drained: an idle tunnel holds no pipe */
	if (src->eof && *inpipe == 0 && !dst->shut && !dst->err) {
		(void)shutdown(dst->fd, SHUT_WR);
		dst->shut = true;
	}
	return moved;
}

int
splice_pump(struct splice *sp, struct side *g, struct side *u)
{
	bool moved;

	do {
		moved = splice_dir(g, u, sp->p_gu, &sp->in_gu, &sp->bulk_gu);
		moved |= splice_dir(u, g, sp->p_ug, &sp->in_ug, &sp->bulk_ug);
	} while (moved && !g->err && !u->err);
	if (g->err || u->err || (g->shut && u->shut))
		return -1;
	ev_set(&g->ev, (!g->eof && sp->in_gu == 0 ? EPOLLIN : 0) |
	    (sp->in_ug > 0 ? EPOLLOUT : 0));
	ev_set(&u->ev, (!u->eof && sp->in_ug == 0 ? EPOLLIN : 0) |
	    (sp->in_gu > 0 ? EPOLLOUT : 0));
	return 0;
}
