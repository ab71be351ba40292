/*
 * upstream.c -- forwarding: one struct fwd per distinct question in
 * flight, every guest asking it waiting on it; a fresh socket per
 * attempt, the upstreams tried in turn, TCP after a truncated answer
 * (resolver.h).
 */
#include <sys/socket.h>
#include <sys/epoll.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ev.h"
#include "log.h"
#include "resolver.h"
#include "tlist.h"

#define MAX_FWD		4096	/* distinct questions in flight */
#define MAX_WAITERS	64	/* guests waiting on one question */
#define UPSTREAM_TCP_MS	4000
#define UPSTREAM_HOLD_MS 10000	/* a silent upstream is skipped this long */
#define MAX_UPSTREAMS	8
#define FWD_BUCKETS	4096

struct waiter {
	struct waiter	*next;
	struct client	 c;
};

struct fwd {			/* one question being asked upstream */
	struct ev	*h;		/* per attempt: stale events of an
					 * earlier socket can never reach
					 * the next one */
	struct tlink	 t;
	struct fwd	*hnext;
	uint64_t	 hash;
	uint8_t		 name[LDNS_MAX_DOMAINLEN + 1];
	struct dquestion dqn;
	struct waiter	*waiters;
	int		 nwaiters;
	unsigned	 up;		/* index into S.ups, modulo nups */
	int		 tries;
	int		 tcp;
	uint8_t		*qwire;
	size_t		 qlen;
	uint8_t		*rbuf;		/* TCP: 2 + answer */
	size_t		 rlen, woff;
};

struct upstream {
	struct sockaddr_storage ss;
	socklen_t	 len;
	uint64_t	 hold_until;
};

static struct {
	struct upstream	 ups[MAX_UPSTREAMS];
	unsigned	 nups, cur;
	struct fwd	*fwtab[FWD_BUCKETS];
	size_t		 nfwd;
	uint64_t	 fwseed;
	struct tlist	 fw_udp, fw_tcp;
} U;

static void	fwd_attempt(struct fwd *, int tcp);
static void	fwd_next(struct fwd *, int hold);

/* --- forwarding ------------------------------------------------------ */

static uint64_t
fwd_hash(const uint8_t *name, size_t len, uint16_t qtype)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ U.fwseed ^ qtype;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= name[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static struct fwd *
fwd_find(const struct dq *q, uint64_t h)
{
	struct fwd *f;

	for (f = U.fwtab[h % FWD_BUCKETS]; f != NULL; f = f->hnext)
		if (f->hash == h && f->dqn.qtype == q->qtype &&
		    f->dqn.namelen == q->namelen &&
		    memcmp(f->name, q->name, q->namelen) == 0)
			return f;
	return NULL;
}

static void
fwd_close_fd(struct fwd *f)
{
	if (f->h != NULL) {
		int fd = f->h->fd;

		ev_del(f->h);
		if (fd != -1)
			close(fd);
		ev_defer(free, f->h);
		f->h = NULL;
	}
	free(f->rbuf);
	f->rbuf = NULL;
	f->rlen = f->woff = 0;
}

static void
fwd_free(struct fwd *f)
{
	struct fwd **pp;
	struct waiter *w;

	for (pp = &U.fwtab[f->hash % FWD_BUCKETS]; *pp; pp = &(*pp)->hnext)
		if (*pp == f) {
			*pp = f->hnext;
			break;
		}
	while ((w = f->waiters) != NULL) {
		f->waiters = w->next;
		client_done(&w->c);
		free(w);
	}
	tlist_del(&f->t);
	fwd_close_fd(f);
	free(f->qwire);
	U.nfwd--;
	ev_defer(free, f);	/* its ev may be in the current batch */
}

static void
fwd_fail(struct fwd *f)
{
	struct waiter *w;

	for (w = f->waiters; w != NULL; w = w->next)
		respond(&w->c, LDNS_RCODE_SERVFAIL, 0, NULL);
	fwd_free(f);
}

static void
fwd_answer(struct fwd *f, const uint8_t *buf, size_t len)
{
	struct answer a;
	struct waiter *w;
	enum da_status st;

	st = da_parse(buf, len, &f->dqn, R.cfg->private, &a);
	switch (st) {
	case DA_OK:
		break;
	case DA_MISMATCH:
		/* Over UDP, a stray or spoofed datagram: keep waiting for
		 * the real answer until the timeout. */
		R.c.up_mismatch++;
		if (!f->tcp)
			return;
		fwd_next(f, 0);
		return;
	case DA_TRUNCATED:
		if (!f->tcp) {
			R.c.up_tcp++;
			fwd_attempt(f, 1);
			return;
		}
		R.c.up_bad++;
		fwd_next(f, 0);
		return;
	case DA_BAD:
		R.c.up_bad++;
		log_debug("upstream answer malformed; trying the next");
		fwd_next(f, 0);
		return;
	case DA_FAIL:
		R.c.up_fail++;
		fwd_next(f, 0);
		return;
	}
	R.c.rebind_removed += a.removed;
	for (w = f->waiters; w != NULL; w = w->next)
		deliver(&w->c, &a, 0, NULL);
	cache_put(R.cache, f->name, f->dqn.namelen, f->dqn.qtype, &a,
	    ev_now() / 1000);
	answer_clear(&a);
	fwd_free(f);
}

static void
fwd_udp_read(struct fwd *f)
{
	static uint8_t buf[65536];
	struct ev *h = f->h;
	ssize_t n;
	int i;

	for (i = 0; i < 8; i++) {
		n = recv(h->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == -1) {
			if (errno != EAGAIN && errno != EINTR) {
				/* e.g. ICMP port unreachable */
				R.c.up_fail++;
				fwd_next(f, 1);
			}
			return;
		}
		fwd_answer(f, buf, (size_t)n);
		if (h->fd == -1)
			return;		/* answered, retried or freed */
	}
}

static void
fwd_tcp_write(struct fwd *f)
{
	int err = 0;
	socklen_t el = sizeof(err);
	ssize_t n;

	if (getsockopt(f->h->fd, SOL_SOCKET, SO_ERROR, &err, &el) == -1 ||
	    err != 0) {
		R.c.up_fail++;
		fwd_next(f, 1);
		return;
	}
	n = send(f->h->fd, f->qwire + f->woff, f->qlen - f->woff,
	    MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n == -1) {
		if (errno != EAGAIN && errno != EINTR)
			fwd_next(f, 1);
		return;
	}
	f->woff += (size_t)n;
	if (f->woff == f->qlen)
		ev_set(f->h, EPOLLIN);
}

static void
fwd_tcp_read(struct fwd *f)
{
	size_t need;
	ssize_t n;

	if (f->rbuf == NULL)
		f->rbuf = xmalloc(2 + 65535);
	need = f->rlen < 2 ? 2 :
	    2 + (size_t)((f->rbuf[0] << 8) | f->rbuf[1]);
	n = recv(f->h->fd, f->rbuf + f->rlen, need - f->rlen, MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		R.c.up_fail++;
		fwd_next(f, 0);
		return;
	}
	f->rlen += (size_t)n;
	if (f->rlen == 2 && need == 2)
		return;		/* length known; body on the next event */
	if (f->rlen == need && need > 2)
		fwd_answer(f, f->rbuf + 2, need - 2);
}

static void
fwd_cb(struct ev *h, uint32_t events)
{
	struct fwd *f = h->arg;

	if (!f->tcp) {
		fwd_udp_read(f);
		return;
	}
	if (events & EPOLLOUT)
		fwd_tcp_write(f);
	else if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		fwd_tcp_read(f);
}

static unsigned
upstream_pick(unsigned from)
{
	unsigned k, i;

	for (k = 0; k < U.nups; k++) {
		i = (from + k) % U.nups;
		if (U.ups[i].hold_until <= ev_now())
			return i;
	}
	return from % U.nups;
}

static int
fwd_socket(struct fwd *f, int tcp)
{
	const struct upstream *u = &U.ups[f->up % U.nups];
	int fd;

	fd = socket(u->ss.ss_family, (tcp ? SOCK_STREAM : SOCK_DGRAM) |
	    SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	/* A fresh socket per attempt: the kernel picks a random source
	 * port, and connect() makes it drop datagrams from anyone but
	 * this upstream. */
	if (connect(fd, (const struct sockaddr *)&u->ss, u->len) == -1 &&
	    errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

static void
fwd_attempt(struct fwd *f, int tcp)
{
	uint8_t *wire;
	size_t len;
	int fd;

	fwd_close_fd(f);
	free(f->qwire);
	f->qwire = NULL;
	f->tcp = tcp;
	f->dqn.id = (uint16_t)arc4random_uniform(65536);
	f->dqn.name = f->name;
	if ((wire = upq_build(&f->dqn, &len)) == NULL)
		goto fail;
	if (tcp) {
		f->qwire = xmalloc(len + 2);
		f->qwire[0] = (uint8_t)(len >> 8);
		f->qwire[1] = (uint8_t)len;
		memcpy(f->qwire + 2, wire, len);
		f->qlen = len + 2;
		free(wire);
	} else {
		f->qwire = wire;
		f->qlen = len;
	}
	if ((fd = fwd_socket(f, tcp)) == -1)
		goto fail;
	f->h = xcalloc(1, sizeof(*f->h));
	if (ev_add(f->h, fd, tcp ? EPOLLOUT : EPOLLIN, fwd_cb, f) == -1) {
		close(fd);
		goto fail;
	}
	if (!tcp && send(fd, f->qwire, f->qlen, MSG_DONTWAIT) == -1)
		goto fail;
	tlist_add(tcp ? &U.fw_tcp : &U.fw_udp, &f->t, ev_now() +
	    (tcp ? UPSTREAM_TCP_MS : R.opts->timeout_ms));
	return;
fail:
	log_debug("upstream attempt failed: %s", strerror(errno));
	R.c.up_fail++;
	fwd_next(f, 1);
}

/* The attempt failed: mark the upstream (hold: it did not answer at all)
 * and try the next one, or give up. */
static void
fwd_next(struct fwd *f, int hold)
{
	unsigned max = U.nups * 2 < 3 ? 3 : U.nups * 2;

	if (hold) {
		U.ups[f->up % U.nups].hold_until = ev_now() + UPSTREAM_HOLD_MS;
		if (U.cur == f->up % U.nups)
			U.cur = (U.cur + 1) % U.nups;
	}
	if (++f->tries >= (int)max) {
		fwd_fail(f);
		return;
	}
	f->up = upstream_pick(f->up + 1);
	fwd_attempt(f, 0);
}

void
fwd_start(struct client *c)
{
	uint64_t h = fwd_hash(c->q.name, c->q.namelen, c->q.qtype);
	struct fwd *f = fwd_find(&c->q, h);
	struct waiter *w;

	if (f != NULL && f->nwaiters >= MAX_WAITERS) {
		respond(c, LDNS_RCODE_SERVFAIL, 0, NULL);
		return;
	}
	if (f == NULL && (U.nfwd >= MAX_FWD || U.nups == 0)) {
		respond(c, LDNS_RCODE_SERVFAIL, 0, NULL);
		return;
	}
	w = xcalloc(1, sizeof(*w));
	client_move(&w->c, c);
	if (f != NULL) {
		R.c.coalesced++;
		w->next = f->waiters;
		f->waiters = w;
		f->nwaiters++;
		return;
	}
	R.c.forwarded++;
	f = xcalloc(1, sizeof(*f));
	f->hash = h;
	memcpy(f->name, w->c.q.name, w->c.q.namelen);
	f->dqn.namelen = w->c.q.namelen;
	f->dqn.qtype = w->c.q.qtype;
	f->dqn.qclass = w->c.q.qclass;
	f->waiters = w;
	f->nwaiters = 1;
	f->hnext = U.fwtab[h % FWD_BUCKETS];
	U.fwtab[h % FWD_BUCKETS] = f;
	U.nfwd++;
	f->up = upstream_pick(U.cur);
	fwd_attempt(f, 0);
}

void
upstreams_set(const struct moat_config *cfg)
{
	size_t i;

	U.nups = 0;
	for (i = 0; i < cfg->gw.nupstream && U.nups < MAX_UPSTREAMS; i++) {
		const struct moat_addr *a = &cfg->gw.upstream[i];
		struct upstream *u = &U.ups[U.nups++];

		memset(u, 0, sizeof(*u));
		u->len = addr_to_sockaddr(a, 53, &u->ss);
	}
	U.cur = 0;
}

void
upstream_init(const struct moat_config *cfg)
{
	arc4random_buf(&U.fwseed, sizeof(U.fwseed));
	upstreams_set(cfg);
}

unsigned
upstream_count(void)
{
	return U.nups;
}

/* An attempt that timed out holds its upstream back for a while. */
void
upstream_expire(uint64_t now)
{
	struct tlink *l;

	while ((l = U.fw_udp.head) != NULL && l->deadline <= now) {
		R.c.up_timeouts++;
		fwd_next(TL_ENTRY(l, struct fwd, t), 1);
	}
	while ((l = U.fw_tcp.head) != NULL && l->deadline <= now) {
		R.c.up_timeouts++;
		fwd_next(TL_ENTRY(l, struct fwd, t), 1);
	}
}

uint64_t
upstream_next(void)
{
	return tlist_next(&U.fw_udp, &U.fw_tcp);
}

void
upstream_close_all(void)
{
	for (size_t i = 0; i < FWD_BUCKETS; i++)
		while (U.fwtab[i] != NULL)
			fwd_free(U.fwtab[i]);
}
