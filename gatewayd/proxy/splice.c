/*
 * splice.c -- bytes through, undecrypted: guest and upstream sockets
 * joined by two pipes and splice(2), so payload never enters user space
 * (splice.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
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

/* One direction.  Reading is asked for only while the pipe is empty: a
 * pipe can be out of slots before it is out of bytes, and level-triggered
 * readiness would then spin. */
static bool
splice_dir(struct side *src, struct side *dst, int p[2], size_t *inpipe)
{
	unsigned fl = SPLICE_F_NONBLOCK | SPLICE_F_MOVE;
	bool moved = false;
	size_t want = PIPE_CAP - *inpipe;
	ssize_t n;

	/* Top the pipe up whenever there is room, not only once it is
	 * empty, so reading overlaps writing; interest in reading is still
	 * asked for only while it is empty (splice_pump). */
	if (!src->eof && *inpipe < PIPE_CAP && src->rd_ready) {
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
		moved = splice_dir(g, u, sp->p_gu, &sp->in_gu);
		moved |= splice_dir(u, g, sp->p_ug, &sp->in_ug);
	} while (moved && !g->err && !u->err);
	if (g->err || u->err || (g->shut && u->shut))
		return -1;
	ev_set(&g->ev, (!g->eof && sp->in_gu == 0 ? EPOLLIN : 0) |
	    (sp->in_ug > 0 ? EPOLLOUT : 0));
	ev_set(&u->ev, (!u->eof && sp->in_ug == 0 ? EPOLLIN : 0) |
	    (sp->in_gu > 0 ? EPOLLOUT : 0));
	return 0;
}
