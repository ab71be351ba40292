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
	ev_timer_del(&sp->drain);
	sp->p_gu[0] = sp->p_gu[1] = sp->p_ug[0] = sp->p_ug[1] = -1;
	sp->in_gu = sp->in_ug = 0;
	sp->bulk_gu = sp->bulk_ug = false;
	sp->kernel = false;
	sp->gaveup = false;
	sp->drain_ms = 0;
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
    bool *bulk, bool kernel, struct kpath_dir *kd)
{
	uint8_t b[COPY_MAX];
	ssize_t n, w;

	n = read(src->fd, b, sizeof(b));
	/* A socket the kernel reads for can report an end (0, or EPIPE
	 * once this side is shut) with no FIN from its peer: only the
	 * connection's state says the peer is done. */
	if (kernel && (n == 0 || (n < 0 && errno != EAGAIN &&
	    errno != EINTR))) {
		if (!kpath_peer_done(src->fd)) {
			src->rd_ready = false;
			return false;
		}
		/* A FIN, or a reset (often right after the FIN, from a peer
		 * that closed with bytes unread): what came before is handed
		 * over in full before dst is shut down.  The count takes the
		 * end for a FIN either way: a stream reset without one may
		 * lose its last byte, as it lost whatever was in flight. */
		kd->fin = true;
	}
	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			src->eof = true;
		src->rd_ready = false;
		return n == 0;
	}
	/* Bytes the kernel left to the worker (kpath.h) are older than
	 * any it handed over itself: if some of those are already on dst,
	 * these would follow them, and the stream would be scrambled.  The
	 * tunnel ends instead. */
	if (kernel && kpath_overtaken(kd, dst->fd)) {
		log_warnx("%s: tunnel: the kernel passed on newer bytes than "
		    "the %zd the worker holds; ending it", src->who, n);
		dst->err = true;
		return false;
	}
	if (kernel) {
		kpath_copied(kd, (size_t)n);
		log_debug("%s: tunnel: the worker copies %zd bytes the kernel "
		    "left", src->who, n);
	}
	if ((size_t)n < sizeof(b))
		src->rd_ready = false;	/* drained: epoll says when more */
	else if (!kernel)
		*bulk = true;	/* (what the kernel left is all copied) */
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
/* The kernel still holds bytes src sent before its end (the pair's
 * handover runs after the socket's own receive). */
static bool
kernel_holds(const struct splice *sp, const struct kpath_dir *kd,
    const struct side *src, const struct side *dst)
{
	return sp->kernel && !sp->gaveup &&
	    kpath_pending(kd, src->fd, dst->fd, true) > 0;
}

static bool
splice_dir(struct splice *sp, struct kpath_dir *kd, struct side *src,
    struct side *dst, int p[2], size_t *inpipe, bool *bulk)
{
	unsigned fl = SPLICE_F_NONBLOCK | SPLICE_F_MOVE;
	bool moved = false;
	size_t want = PIPE_CAP - *inpipe;
	ssize_t n;

	if (!src->eof && *inpipe == 0 && !*bulk && src->rd_ready) {
		moved = copy_dir(src, dst, p, inpipe, bulk, sp->kernel, kd);
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
	if (src->eof && *inpipe == 0 && !dst->shut && !dst->err &&
	    !kernel_holds(sp, kd, src, dst)) {
		(void)shutdown(dst->fd, SHUT_WR);
		dst->shut = true;
	}
	return moved;
}

static void
drain_fire(void *arg)
{
	struct splice *sp = arg;

	sp->wake(sp->arg);
}

/* The kernel's handover takes microseconds, or as long as a slow reader
 * makes it: look again after 1 ms, then less often, and give up waiting
 * (shut down anyway) only after 10 s in which the sockets were given
 * nothing, which only a miscount would make. */
#define DRAIN_MAX_MS	50
#define DRAIN_GIVEUP_MS	10000

static void
drain_later(struct splice *sp, const struct side *g, const struct side *u)
{
	uint64_t now = ev_now(), w;

	if (sp->wake == NULL || sp->gaveup || sp->drain.slot != 0)
		return;
	w = kpath_written(g->fd) + kpath_written(u->fd) +
	    kpath_acked(g->fd) + kpath_acked(u->fd);
	if (sp->drain_ms == 0 || w != sp->drain_w) {
		sp->drain_ms = 1;
		sp->drain_since = now;
		sp->drain_w = w;
	} else if (sp->drain_ms < DRAIN_MAX_MS)
		sp->drain_ms *= 2;
	if (now - sp->drain_since > DRAIN_GIVEUP_MS) {
		log_warnx("tunnel: %s for 10 s at its end; ending it anyway",
		    g->shut && u->shut ? "no peer took its last bytes" :
		    "the kernel's byte count did not match");
		sp->gaveup = true;
	}
	ev_timer_set(&sp->drain, now + sp->drain_ms, drain_fire, sp);
}

/* Both ends are passed on, but a socket still holds bytes its peer has
 * not acknowledged.  Closing it now would leave them to a socket no
 * process owns, and the policy lets only the proxy's own user send from
 * its port to a guest: they would be refused and the guest would never
 * get them.  So the tunnel is closed once both are acknowledged. */
static bool
lingers(const struct splice *sp, const struct side *g, const struct side *u)
{
	return !sp->gaveup && sp->wake != NULL &&
	    (kpath_unacked(g->fd) || kpath_unacked(u->fd));
}

bool
splice_kernel(struct splice *sp, struct side *g, struct side *u,
    void (*wake)(void *), void *arg)
{
	sp->wake = wake;
	sp->arg = arg;
	if (sp->kernel || !kpath_on() || sp->in_gu != 0 || sp->in_ug != 0 ||
	    g->eof || u->eof || g->shut || u->shut)
		return sp->kernel;
	if (kpath_join(g->fd, u->fd, &sp->k_gu, &sp->k_ug) == -1)
		return false;
	sp->kernel = true;
	sp->seen = kpath_received(g->fd) + kpath_received(u->fd);
	/* Pipes are no longer needed: what the worker still copies is what
	 * was queued before the pair, a few bytes. */
	sp->bulk_gu = sp->bulk_ug = false;
	return true;
}

bool
splice_kernel_moved(struct splice *sp, const struct side *g,
    const struct side *u)
{
	uint64_t now;

	if (!sp->kernel)
		return false;
	now = kpath_received(g->fd) + kpath_received(u->fd);
	if (now == sp->seen)
		return false;
	sp->seen = now;
	return true;
}

void
splice_bytes(const struct splice *sp, const struct side *g,
    const struct side *u, uint64_t *out, uint64_t *in)
{
	bool gfin = sp->kernel ? sp->k_gu.fin : g->eof;
	bool ufin = sp->kernel ? sp->k_ug.fin : u->eof;
	uint64_t r;

	r = kpath_received(g->fd);
	*out = r > 0 && gfin ? r - 1 : r;	/* a FIN counts one */
	r = kpath_received(u->fd);
	*in = r > 0 && ufin ? r - 1 : r;
}

int
splice_pump(struct splice *sp, struct side *g, struct side *u)
{
	bool moved;

	do {
		moved = splice_dir(sp, &sp->k_gu, g, u, sp->p_gu, &sp->in_gu,
		    &sp->bulk_gu);
		moved |= splice_dir(sp, &sp->k_ug, u, g, sp->p_ug, &sp->in_ug,
		    &sp->bulk_ug);
	} while (moved && !g->err && !u->err);
	if (g->err || u->err)
		return -1;
	if (g->shut && u->shut) {
		if (!lingers(sp, g, u))
			return -1;
		drain_later(sp, g, u);
	} else if (sp->kernel && ((g->eof && !u->shut) ||
	    (u->eof && !g->shut)))
		drain_later(sp, g, u);
	ev_set(&g->ev, (!g->eof && sp->in_gu == 0 ? EPOLLIN : 0) |
	    (sp->in_ug > 0 ? EPOLLOUT : 0));
	ev_set(&u->ev, (!u->eof && sp->in_ug == 0 ? EPOLLIN : 0) |
	    (sp->in_gu > 0 ? EPOLLOUT : 0));
	return 0;
}
