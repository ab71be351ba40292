/*
 * frontend.c -- the guests' side of dnsd: queries in over UDP (a batch
 * per recvmmsg) and TCP (length-prefixed, several in flight per
 * connection), answers out the way each came (resolver.h).
 */
#include <sys/socket.h>
#include <sys/epoll.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ev.h"
#include "log.h"
#include "resolver.h"
#include "tlist.h"

#define MAX_TCP_CLIENTS	128
#define MAX_TCP_INFLIGHT 32
#define TCP_IDLE_MS	10000
#define TCP_WBUF_MAX	(256 * 1024)
#define UDP_BATCH	64

struct tconn {
	struct ev	 h;
	struct tlink	 idle;
	struct tlink	 life;		/* absolute deadline, never extended */
	struct moat_addr peer;
	int		 refs;
	int		 inflight;
	int		 closed;
	uint8_t		*wbuf;
	size_t		 wlen, woff;
	size_t		 rlen;
	uint8_t		 rbuf[2 + 65535];
};

static struct {
	struct ev	 udp, tcp;
	struct ev	 udp6, tcp6;	/* the gateway's IPv6 address, if any */
	struct tlist	 idle, life;
	int		 ntcp;
} F;

static void	tconn_unref(struct tconn *);
static void	tconn_close(struct tconn *);

/* --- clients --------------------------------------------------------- */

void
client_move(struct client *to, struct client *from)
{
	*to = *from;
	from->q.pkt = NULL;
	from->conn = NULL;
}

void
client_done(struct client *c)
{
	dq_clear(&c->q);
	if (c->conn != NULL) {
		c->conn->inflight--;
		tconn_unref(c->conn);
		c->conn = NULL;
	}
}

static void tconn_flush(struct tconn *);

static void
tconn_write(struct tconn *t, const uint8_t *wire, size_t len)
{
	if (t->closed)
		return;
	if (t->wlen + 2 + len > TCP_WBUF_MAX) {
		log_debug("tcp client: output backlog too large, closing");
		tconn_close(t);
		return;
	}
	t->wbuf = xreallocarray(t->wbuf, 1, t->wlen + 2 + len);
	t->wbuf[t->wlen] = (uint8_t)(len >> 8);
	t->wbuf[t->wlen + 1] = (uint8_t)len;
	memcpy(t->wbuf + t->wlen + 2, wire, len);
	t->wlen += 2 + len;
	tconn_flush(t);
}

/* UDP answers produced while a batch of queries is read go out together
 * with one sendmmsg(2); the kernel's per-syscall cost dominates a cache
 * hit.  Answers produced later (forwarded, acknowledged) go one by one. */
static struct {
	int		 on;
	int		 fd;		/* the socket the batch came in on */
	unsigned	 n;
	struct mmsghdr	 m[UDP_BATCH];
	struct iovec	 iov[UDP_BATCH];
	struct sockaddr_storage ss[UDP_BATCH];
	uint8_t		 buf[UDP_BATCH][DNSD_EDNS_SIZE];
} OB;

static void
udp_flush(void)
{
	unsigned done = 0;
	int n;

	while (done < OB.n) {
		n = sendmmsg(OB.fd, OB.m + done, OB.n - done, MSG_DONTWAIT);
		if (n <= 0) {
			log_debug("udp sendmmsg: %s", strerror(errno));
			break;
		}
		done += (unsigned)n;
	}
	OB.n = 0;
}

void
client_send(struct client *c, const uint8_t *wire, size_t len)
{
	unsigned i;

	if (c->conn != NULL) {
		tconn_write(c->conn, wire, len);
		return;
	}
	if (OB.on && len <= DNSD_EDNS_SIZE) {
		if (OB.n == UDP_BATCH)
			udp_flush();
		i = OB.n++;
		memcpy(OB.buf[i], wire, len);
		OB.ss[i] = c->ss;
		OB.iov[i] = (struct iovec){ OB.buf[i], len };
		OB.m[i].msg_hdr = (struct msghdr){ .msg_name = &OB.ss[i],
		    .msg_namelen = c->sslen, .msg_iov = &OB.iov[i],
		    .msg_iovlen = 1 };
		return;
	}
	if (sendto(c->ss.ss_family == AF_INET6 ? F.udp6.fd : F.udp.fd, wire,
	    len, MSG_DONTWAIT, (struct sockaddr *)&c->ss, c->sslen) == -1)
		log_debug("udp send: %s", strerror(errno));
}

void
respond(struct client *c, ldns_pkt_rcode rcode, uint16_t ede,
    const char *text)
{
	uint8_t *wire;
	size_t len;

	if (rcode == LDNS_RCODE_SERVFAIL)
		R.c.servfail++;
	if ((wire = resp_build(&c->q, rcode, NULL, NULL, 0, ede, text,
	    &len)) != NULL) {
		client_send(c, wire, len);
		free(wire);
	}
	client_done(c);
}

/* --- UDP frontend ---------------------------------------------------- */

#define UDP_QMAX	4096	/* larger queries are not DNS queries */

static void
udp_cb(struct ev *h, uint32_t events)
{
	static uint8_t buf[UDP_BATCH][UDP_QMAX];
	static struct mmsghdr m[UDP_BATCH];
	static struct iovec iov[UDP_BATCH];
	static struct sockaddr_storage ss[UDP_BATCH];
	struct client c;
	int i, n;

	for (i = 0; i < UDP_BATCH; i++) {
		iov[i] = (struct iovec){ buf[i], sizeof(buf[i]) };
		m[i].msg_hdr = (struct msghdr){ .msg_name = &ss[i],
		    .msg_namelen = sizeof(ss[i]), .msg_iov = &iov[i],
		    .msg_iovlen = 1 };
	}
	if ((n = recvmmsg(h->fd, m, UDP_BATCH, MSG_DONTWAIT, NULL)) <= 0)
		return;
	OB.on = 1;
	OB.fd = h->fd;
	for (i = 0; i < n; i++) {
		R.c.udp++;
		if (m[i].msg_hdr.msg_flags & MSG_TRUNC) {
			R.c.dropped++;
			continue;
		}
		memset(&c, 0, sizeof(c));
		memcpy(&c.ss, &ss[i], sizeof(c.ss));
		c.sslen = m[i].msg_hdr.msg_namelen;
		handle_query(&c, buf[i], m[i].msg_len);
	}
	OB.on = 0;
	udp_flush();
}

/* --- TCP frontend ---------------------------------------------------- */

static void
tconn_unref(struct tconn *t)
{
	if (--t->refs > 0)
		return;
	free(t->wbuf);
	ev_defer(free, t);
}

static void
tconn_close(struct tconn *t)
{
	int fd;

	if (t->closed)
		return;
	t->closed = 1;
	tlist_del(&t->idle);
	tlist_del(&t->life);
	fd = t->h.fd;
	ev_del(&t->h);
	close(fd);
	F.ntcp--;
	tconn_unref(t);
}

static void
tconn_flush(struct tconn *t)
{
	ssize_t n;

	while (t->woff < t->wlen) {
		n = send(t->h.fd, t->wbuf + t->woff, t->wlen - t->woff,
		    MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR) {
				ev_set(&t->h, EPOLLIN | EPOLLOUT);
				return;
			}
			tconn_close(t);
			return;
		}
		t->woff += (size_t)n;
	}
	t->woff = t->wlen = 0;
	ev_set(&t->h, EPOLLIN);
	tlist_add(&F.idle, &t->idle, ev_now() + TCP_IDLE_MS);
}

/* Take every complete length-prefixed query out of the read buffer. */
static void
tconn_frames(struct tconn *t)
{
	size_t need, used = 0;
	struct client c;

	while (t->rlen - used >= 2) {
		need = (size_t)((t->rbuf[used] << 8) | t->rbuf[used + 1]);
		if (t->rlen - used < 2 + need)
			break;
		if (t->inflight >= MAX_TCP_INFLIGHT) {
			tconn_close(t);
			return;
		}
		memset(&c, 0, sizeof(c));
		c.conn = t;
		t->refs++;
		t->inflight++;
		c.sslen = sizeof(c.ss);
		if (getpeername(t->h.fd, (struct sockaddr *)&c.ss,
		    &c.sslen) == -1)
			c.ss.ss_family = AF_UNSPEC;
		R.c.tcp++;
		handle_query(&c, t->rbuf + used + 2, need);
		used += 2 + need;
		if (t->closed)
			return;
	}
	memmove(t->rbuf, t->rbuf + used, t->rlen - used);
	t->rlen -= used;
}

static void
tconn_cb(struct ev *h, uint32_t events)
{
	struct tconn *t = h->arg;
	ssize_t n;

	if (events & EPOLLOUT)
		tconn_flush(t);
	if (t->closed || !(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	n = recv(h->fd, t->rbuf + t->rlen, sizeof(t->rbuf) - t->rlen,
	    MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		tconn_close(t);
		return;
	}
	t->rlen += (size_t)n;
	tlist_add(&F.idle, &t->idle, ev_now() + TCP_IDLE_MS);
	tconn_frames(t);
}

/* TCP clients from this address.  Every open one is on the idle list; the
 * list is at most MAX_TCP_CLIENTS long. */
static unsigned
tcp_from(const struct moat_addr *a)
{
	const struct tlink *l;
	unsigned n = 0;

	for (l = F.idle.head; l != NULL; l = l->next)
		if (addr_eq(&TL_ENTRY(l, struct tconn, idle)->peer, a))
			n++;
	return n;
}

/* One guest must not hold the TCP side of DNS from the others: each
 * source gets gateway.dns.tcp_per_sandbox clients, and each client
 * gateway.dns.tcp_lifetime seconds however busy it keeps its socket. */
static bool
tcp_admit(int fd, struct moat_addr *peer)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (F.ntcp >= MAX_TCP_CLIENTS) {
		R.c.tcp_refused++;
		return false;
	}
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == -1 ||
	    addr_from_sockaddr(&ss, peer) == -1) {
		R.c.tcp_refused++;
		return false;
	}
	if (tcp_from(peer) >= R.cfg->gw.dns_tcp_per_sandbox) {
		R.c.tcp_per_src_refused++;
		return false;
	}
	return true;
}

static void
tcp_accept_cb(struct ev *h, uint32_t events)
{
	struct moat_addr peer;
	struct tconn *t;
	int fd;

	while ((fd = accept4(h->fd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) != -1) {
		if (!tcp_admit(fd, &peer)) {
			close(fd);
			continue;
		}
		t = xcalloc(1, sizeof(*t));
		t->refs = 1;
		t->peer = peer;
		if (ev_add(&t->h, fd, EPOLLIN, tconn_cb, t) == -1) {
			close(fd);
			free(t);
			continue;
		}
		F.ntcp++;
		tlist_add(&F.idle, &t->idle, ev_now() + TCP_IDLE_MS);
		tlist_add(&F.life, &t->life, ev_now() +
		    (uint64_t)R.cfg->gw.dns_tcp_lifetime * 1000);
	}
}

void
frontend_start(int udpfd, int tcpfd)
{
	if (fcntl(udpfd, F_SETFL, O_NONBLOCK) == -1 ||
	    fcntl(tcpfd, F_SETFL, O_NONBLOCK) == -1)
		fatal("sockets");
	if (ev_add(&F.udp, udpfd, EPOLLIN, udp_cb, NULL) == -1 ||
	    ev_add(&F.tcp, tcpfd, EPOLLIN, tcp_accept_cb, NULL) == -1)
		fatal("epoll");
	F.udp6.fd = -1;
}

/* The same on the gateway's IPv6 address: answers go back on the socket
 * their query came in on. */
void
frontend_start6(int udpfd, int tcpfd)
{
	if (fcntl(udpfd, F_SETFL, O_NONBLOCK) == -1 ||
	    fcntl(tcpfd, F_SETFL, O_NONBLOCK) == -1)
		fatal("IPv6 sockets");
	if (ev_add(&F.udp6, udpfd, EPOLLIN, udp_cb, NULL) == -1 ||
	    ev_add(&F.tcp6, tcpfd, EPOLLIN, tcp_accept_cb, NULL) == -1)
		fatal("epoll");
}

/* A client is cut at its lifetime however busy; an idle one only when
 * it has no query in flight. */
void
frontend_expire(uint64_t now)
{
	struct tlink *l;

	while ((l = F.life.head) != NULL && l->deadline <= now) {
		R.c.tcp_expired++;
		tconn_close(TL_ENTRY(l, struct tconn, life));
	}
	while ((l = F.idle.head) != NULL && l->deadline <= now) {
		struct tconn *t = TL_ENTRY(l, struct tconn, idle);

		if (t->inflight > 0)
			tlist_add(&F.idle, l, now + TCP_IDLE_MS);
		else
			tconn_close(t);
	}
}

uint64_t
frontend_next(void)
{
	return tlist_next(&F.idle, &F.life);
}

void
frontend_close_all(void)
{
	struct tlink *l;

	while ((l = F.idle.head) != NULL)
		tconn_close(TL_ENTRY(l, struct tconn, idle));
}
