/*
 * engine.c -- runs probes concurrently with non-blocking sockets in one
 * epoll loop, and gives each one of the four verdicts.
 *
 * Who answered is learnt from the socket error queue (IP_RECVERR): an
 * ICMP error carries its type, code and sender, so admin-prohibited from
 * the gateway (blocked) is told apart from port-unreachable or a RST
 * (closed: something is there) and from silence (filtered).
 *
 * On a port the gateway's proxy may answer in the far end's stead, a TCP
 * probe speaks once connected (plain HTTP, or TLS through tls.c) and
 * intercept.c turns what came back into the verdict.
 *
 * Timeouts: every probe of one timeout value is started later than the
 * ones before it, so per timeout value the deadlines are in start order
 * and a FIFO per value is a priority queue.  There are only a few values.
 * A probe that speaks once connected has the plain timeout to connect;
 * connected by then, it moves to a queue of its longer talk timeout,
 * which it enters in the order of its first deadline, so that queue is in
 * order too.
 *
 * Replies are read before deadlines are looked at: a reply that came in
 * time is never judged silence because the loop was busy.
 *
 * Several loops, one per thread, may share a pool of probes
 * (engine_run_pool): each takes the next one through the pool's atomic
 * cursor, and a probe belongs to the loop that started it.  Nothing else
 * is shared between loops; TLS is only ever spoken by the main one.
 */
#include <errno.h>
#include <stdatomic.h>
#include <time.h>
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <netinet/icmp6.h>
#include <netinet/ip_icmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cc.h"
#include "log.h"

#define NQ		6
#define QNONE		UINT32_MAX
#define MAXEV		256
#define RBUF_MAX	4096
#define HARD_CAP_US	(60ULL * 1000 * 1000)	/* no scan runs longer */

enum { S_IDLE, S_CONNECT, S_AWAIT, S_TLS, S_DONE };

struct tq {
	unsigned	timeout_ms;
	bool		talk;		/* moved here once connected */
	uint32_t	head, tail;
};

struct engine {
	int		 ep;
	struct cc_probe	*p;
	struct cc_pool	*pool;		/* NULL: p[0..n) are this loop's */
	size_t		 n, next, done, inflight, maxfly;
	struct tq	 q[NQ];
	size_t		 nq;
	uint64_t	 hard_deadline;
};

struct kind_ops {
	void	(*start)(struct engine *, struct cc_probe *);
	void	(*io)(struct engine *, struct cc_probe *, uint32_t);
	void	(*expire)(struct engine *, struct cc_probe *);
};

uint64_t
engine_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void __attribute__((format(printf, 3, 4)))
evidence(struct cc_probe *p, bool append, const char *fmt, ...)
{
	size_t off = append ? strlen(p->evidence) : 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->evidence + off, sizeof(p->evidence) - off, fmt, ap);
	va_end(ap);
}

static void
finish(struct engine *e, struct cc_probe *p, enum cc_verdict v)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	if (p->state == S_DONE)
		return;
	if (p->verdict == V_PENDING || v != V_REACHABLE)
		p->verdict = v;
	p->rtt_us = (uint32_t)(engine_now_us() - p->t0);
	if (p->fd != -1) {
		/* An abortive close: a reached service sees a RST rather than
		 * a half-open connection it has to time out. */
		if (p->kind == K_TCP && p->verdict == V_REACHABLE)
			setsockopt(p->fd, SOL_SOCKET, SO_LINGER, &lg,
			    sizeof(lg));
		close(p->fd);
		p->fd = -1;
	}
	free(p->rbuf);
	p->rbuf = NULL;
	tls_free(p->tls);
	p->tls = NULL;
	p->state = S_DONE;
	e->inflight--;
	e->done++;
}

static int
watch(struct engine *e, struct cc_probe *p, int op, uint32_t events)
{
	struct epoll_event ev = { .events = events,
	    .data.u64 = (uint64_t)(p - e->p) };

	return epoll_ctl(e->ep, op, p->fd, &ev);
}

static void
fmt_sa(const struct sockaddr *sa, char *buf, size_t len)
{
	struct moat_addr a;

	if (addr_from_sockaddr((const struct sockaddr_storage *)(const void *)sa,
	    &a) == -1) {
		snprintf(buf, len, "?");
		return;
	}
	addr_fmt(&a, buf, len);
}

/* --- classifying errors ------------------------------------------------ */

static const struct icmp_map {
	int		 family;
	uint8_t		 type, code;
	enum cc_verdict	 v;
	const char	*what;
} icmp_map[] = {
	{ AF_INET, ICMP_DEST_UNREACH, ICMP_PKT_FILTERED, V_BLOCKED,
	    "admin-prohibited" },
	{ AF_INET, ICMP_DEST_UNREACH, ICMP_NET_ANO, V_BLOCKED,
	    "net-prohibited" },
	{ AF_INET, ICMP_DEST_UNREACH, ICMP_HOST_ANO, V_BLOCKED,
	    "host-prohibited" },
	{ AF_INET, ICMP_DEST_UNREACH, ICMP_PORT_UNREACH, V_CLOSED,
	    "port-unreachable" },
	{ AF_INET, ICMP_DEST_UNREACH, ICMP_PROT_UNREACH, V_CLOSED,
	    "protocol-unreachable" },
	{ AF_INET, ICMP_DEST_UNREACH, ICMP_NET_UNREACH, V_FILTERED,
	    "net-unreachable" },
	{ AF_INET, ICMP_DEST_UNREACH, ICMP_HOST_UNREACH, V_FILTERED,
	    "host-unreachable" },
	{ AF_INET6, ICMP6_DST_UNREACH, ICMP6_DST_UNREACH_ADMIN, V_BLOCKED,
	    "admin-prohibited" },
	{ AF_INET6, ICMP6_DST_UNREACH, 5 /* reject route */, V_BLOCKED,
	    "reject-route" },
	{ AF_INET6, ICMP6_DST_UNREACH, ICMP6_DST_UNREACH_NOPORT, V_CLOSED,
	    "port-unreachable" },
	{ AF_INET6, ICMP6_DST_UNREACH, ICMP6_DST_UNREACH_NOROUTE, V_FILTERED,
	    "no-route" },
	{ AF_INET6, ICMP6_DST_UNREACH, ICMP6_DST_UNREACH_ADDR, V_FILTERED,
	    "address-unreachable" },
};

static bool
is_local_sender(int fd, const struct sockaddr *from)
{
	union cc_sockaddr me;
	socklen_t len = sizeof(me);

	if (getsockname(fd, &me.sa, &len) == -1 ||
	    me.sa.sa_family != from->sa_family)
		return false;
	if (from->sa_family == AF_INET)
		return me.sin.sin_addr.s_addr ==
		    ((const struct sockaddr_in *)from)->sin_addr.s_addr;
	return memcmp(&me.sin6.sin6_addr,
	    &((const struct sockaddr_in6 *)from)->sin6_addr, 16) == 0;
}

/* Reads one error from the queue; 0 and a verdict if it was ICMP. */
static int
errqueue_verdict(struct cc_probe *p, enum cc_verdict *v)
{
	char cbuf[512], data[64], who[INET6_ADDRSTRLEN];
	struct iovec iov = { .iov_base = data, .iov_len = sizeof(data) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	const struct sock_extended_err *ee = NULL;
	const struct sockaddr *from;
	struct cmsghdr *c;
	size_t i;

	if (recvmsg(p->fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) == -1)
		return -1;
	for (c = CMSG_FIRSTHDR(&m); c != NULL; c = CMSG_NXTHDR(&m, c))
		if ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
		    (c->cmsg_level == SOL_IPV6 &&
		    c->cmsg_type == IPV6_RECVERR))
			ee = (const struct sock_extended_err *)CMSG_DATA(c);
	if (ee == NULL || (ee->ee_origin != SO_EE_ORIGIN_ICMP &&
	    ee->ee_origin != SO_EE_ORIGIN_ICMP6))
		return -1;
	from = SO_EE_OFFENDER(ee);
	fmt_sa(from, who, sizeof(who));
	for (i = 0; i < sizeof(icmp_map) / sizeof(icmp_map[0]); i++) {
		const struct icmp_map *im = &icmp_map[i];

		if (im->family != from->sa_family && from->sa_family !=
		    AF_UNSPEC)
			continue;
		if (im->type != ee->ee_type || im->code != ee->ee_code ||
		    (ee->ee_origin == SO_EE_ORIGIN_ICMP) !=
		    (im->family == AF_INET))
			continue;
		*v = im->v;
		/* Only a host-unreachable can be our own ARP/ND failure; the
		 * getsockname is skipped for the 65535 admin-prohibiteds. */
		if (im->v == V_FILTERED && is_local_sender(p->fd, from))
			evidence(p, false, "%s (local: no ARP/ND answer)",
			    im->what);
		else
			evidence(p, false, "%s from %s", im->what, who);
		return 0;
	}
	*v = V_FILTERED;
	evidence(p, false, "icmp type %u code %u from %s", ee->ee_type,
	    ee->ee_code, who);
	return 0;
}

static void
fail_errno(struct engine *e, struct cc_probe *p, int err)
{
	enum cc_verdict v;

	if (p->fd != -1 && errqueue_verdict(p, &v) == 0) {
		finish(e, p, v);
		return;
	}
	switch (err) {
	case ECONNREFUSED:
		evidence(p, false, p->kind == K_TCP ? "RST" :
		    "refused (port-unreachable)");
		finish(e, p, V_CLOSED);
		break;
	case EACCES:
	case EPERM:
		evidence(p, false, "refused by the guest's own firewall");
		finish(e, p, V_FILTERED);
		break;
	case ENETUNREACH:
		evidence(p, false, "no route from the guest");
		finish(e, p, V_FILTERED);
		break;
	default:
		evidence(p, false, "%s", strerror(err));
		finish(e, p, V_FILTERED);
		break;
	}
}

/* --- application payloads ---------------------------------------------- */

static void
app_dns_reply(struct cc_probe *p, const uint8_t *buf, size_t len)
{
	struct cc_dns_reply r;

	if (cc_dns_parse(buf, len, &r) == -1) {
		evidence(p, false, "malformed DNS reply (%zu bytes)", len);
		return;
	}
	if (r.id != p->dnsid) {
		evidence(p, false, "DNS reply with a wrong id");
		return;
	}
	if (p->dns == NULL)
		p->dns = xcalloc(1, sizeof(*p->dns));
	*p->dns = r;
	evidence(p, false, "%s, %zu answer%s", cc_dns_rcode_name(r.rcode),
	    r.nanswer, r.nanswer == 1 ? "" : "s");
}

/* "HTTP/1.x NNN" -- the status is all a proxy probe needs. */
static void
app_http_reply(struct cc_probe *p, const uint8_t *buf, size_t len)
{
	char line[64];
	size_t n = len < sizeof(line) - 1 ? len : sizeof(line) - 1;
	int st;

	memcpy(line, buf, n);
	line[n] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	if (sscanf(line, "HTTP/1.%*1[01] %3d", &st) == 1 && st >= 100 &&
	    st <= 599) {
		p->http_status = st;
		evidence(p, false, "proxy answered %d", st);
	} else
		evidence(p, false, "not an HTTP reply");
}

/* --- on ports the gateway's proxy may answer ------------------------------ */

/* The probe ends with what intercept.c makes of what it saw. */
static void
intercept_done(struct engine *e, struct cc_probe *p, bool timedout)
{
	enum cc_verdict v;

	v = cc_intercept_verdict(p->tls != NULL ? tls_seen(p->tls) : NULL,
	    p->rbuf, p->rbuf != NULL ? p->rlen : 0, p->dnsid, timedout,
	    p->evidence, sizeof(p->evidence));
	p->verdict = v;
	finish(e, p, v);
}

static bool
http_complete(const struct cc_probe *p)
{
	struct cc_http_reply r;

	return cc_http_reply_parse(p->rbuf, p->rlen, &r) == -1 || r.complete;
}

/* Handshake, the request, the reply: each step until it would block. */
static void
tls_drive(struct engine *e, struct cc_probe *p)
{
	int r;

	if (p->state == S_TLS) {
		if ((r = tls_handshake(p->tls)) != 1) {
			watch(e, p, EPOLL_CTL_MOD, r == 2 ? EPOLLOUT : EPOLLIN);
			return;
		}
		if (!tls_seen(p->tls)->done) {
			intercept_done(e, p, false);
			return;
		}
		if ((r = tls_write(p->tls, p->payload, p->paylen)) <= 0) {
			if (r == 0)
				intercept_done(e, p, false);
			else
				watch(e, p, EPOLL_CTL_MOD, r == -2 ? EPOLLOUT :
				    EPOLLIN);
			return;
		}
		p->state = S_AWAIT;
	}
	while (p->rlen < RBUF_MAX) {
		r = tls_read(p->tls, p->rbuf + p->rlen, RBUF_MAX - p->rlen);
		if (r < 0) {
			watch(e, p, EPOLL_CTL_MOD, r == -2 ? EPOLLOUT : EPOLLIN);
			return;
		}
		if (r == 0)
			break;
		p->rlen += (uint16_t)r;
		if (http_complete(p))
			break;
	}
	intercept_done(e, p, false);
}

static void
tls_begin(struct engine *e, struct cc_probe *p)
{
	if ((p->tls = tls_new(p->fd, p->sni)) == NULL) {
		/* Connected, and nothing to tell who answered: fail closed. */
		evidence(p, false, "connected; could not start TLS");
		p->verdict = V_CONNECTED;
		finish(e, p, V_CONNECTED);
		return;
	}
	p->rbuf = xmalloc(RBUF_MAX);
	p->rlen = 0;
	p->state = S_TLS;
	tls_drive(e, p);
}

/* --- TCP ----------------------------------------------------------------- */

static void
set_recverr(int fd, int family)
{
	int on = 1;

	if (family == AF_INET)
		setsockopt(fd, SOL_IP, IP_RECVERR, &on, sizeof(on));
	else
		setsockopt(fd, SOL_IPV6, IPV6_RECVERR, &on, sizeof(on));
}

static void
tcp_connected(struct engine *e, struct cc_probe *p)
{
	uint8_t buf[2 + 512];
	size_t len = p->paylen;
	const uint8_t *out = p->payload;

	p->verdict = V_REACHABLE;
	evidence(p, false, "connected");
	if (p->app == A_NONE) {
		finish(e, p, V_REACHABLE);
		return;
	}
	if (p->app == A_TLS) {
		tls_begin(e, p);
		return;
	}
	if (p->app == A_DNS) {		/* RFC 1035 4.2.2 length prefix */
		if (len > sizeof(buf) - 2) {
			finish(e, p, V_REACHABLE);
			return;
		}
		buf[0] = (uint8_t)(len >> 8);
		buf[1] = (uint8_t)len;
		memcpy(buf + 2, p->payload, len);
		out = buf;
		len += 2;
	}
	/* A fresh socket's send buffer takes a few hundred bytes at once. */
	if (send(p->fd, out, len, MSG_NOSIGNAL) != (ssize_t)len) {
		if (p->app == A_WEB) {
			intercept_done(e, p, false);
			return;
		}
		evidence(p, true, ", send failed");
		finish(e, p, V_REACHABLE);
		return;
	}
	p->rbuf = xmalloc(RBUF_MAX);
	p->rlen = 0;
	p->state = S_AWAIT;
	if (watch(e, p, EPOLL_CTL_MOD, EPOLLIN) == -1)
		finish(e, p, V_REACHABLE);
}

/* A non-blocking socket towards the probe's destination that reports ICMP
 * errors; on failure the probe is finished as skipped. */
static int
probe_socket(struct engine *e, struct cc_probe *p, int type)
{
	p->fd = socket(p->dst.sa.sa_family, type | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (p->fd == -1) {
		evidence(p, false, "socket: %s", strerror(errno));
		finish(e, p, V_SKIPPED);
		return -1;
	}
	set_recverr(p->fd, p->dst.sa.sa_family);
	return 0;
}

static void
tcp_start(struct engine *e, struct cc_probe *p)
{
	if (probe_socket(e, p, SOCK_STREAM) == -1)
		return;
	p->state = S_CONNECT;
	if (connect(p->fd, &p->dst.sa, p->dstlen) == 0) {
		if (watch(e, p, EPOLL_CTL_ADD, EPOLLOUT) == -1)
			fail_errno(e, p, errno);
		else
			tcp_connected(e, p);
	} else if (errno != EINPROGRESS)
		fail_errno(e, p, errno);
	else if (watch(e, p, EPOLL_CTL_ADD, EPOLLOUT) == -1)
		fail_errno(e, p, errno);
}

/* A reply is complete when the DNS length prefix is satisfied or the HTTP
 * status line has ended; the peer closing also ends it. */
static bool
tcp_reply_complete(const struct cc_probe *p)
{
	if (p->app == A_DNS)
		return p->rlen >= 2 &&
		    p->rlen >= 2 + ((p->rbuf[0] << 8) | p->rbuf[1]);
	if (p->app == A_WEB)
		return http_complete(p);
	return memchr(p->rbuf, '\n', p->rlen) != NULL;
}

static void
tcp_read(struct engine *e, struct cc_probe *p)
{
	ssize_t n;

	n = recv(p->fd, p->rbuf + p->rlen, RBUF_MAX - p->rlen, 0);
	if (n > 0)
		p->rlen += (uint16_t)n;
	if (n > 0 && !tcp_reply_complete(p) && p->rlen < RBUF_MAX)
		return;
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (p->app == A_WEB) {
		intercept_done(e, p, false);
		return;
	}
	if (p->rlen == 0)
		evidence(p, true, ", closed without a reply");
	else if (p->app == A_DNS && p->rlen > 2)
		app_dns_reply(p, p->rbuf + 2, p->rlen - 2);
	else if (p->app == A_HTTP)
		app_http_reply(p, p->rbuf, p->rlen);
	finish(e, p, V_REACHABLE);
}

static void
tcp_io(struct engine *e, struct cc_probe *p, uint32_t ev)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (p->app == A_TLS && (p->state == S_TLS || p->state == S_AWAIT)) {
		tls_drive(e, p);
		return;
	}
	if (p->state == S_AWAIT) {
		tcp_read(e, p);
		return;
	}
	if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err != 0)
		fail_errno(e, p, err);
	else if (ev & EPOLLOUT)
		tcp_connected(e, p);
}

static void
tcp_expire(struct engine *e, struct cc_probe *p)
{
	if (p->state == S_TLS || (p->state == S_AWAIT &&
	    (p->app == A_WEB || p->app == A_TLS))) {
		intercept_done(e, p, true);
		return;
	}
	if (p->state == S_AWAIT) {
		evidence(p, true, ", no reply in %u ms", p->timeout_ms);
		finish(e, p, V_REACHABLE);
		return;
	}
	evidence(p, false, "no answer in %u ms", p->timeout_ms);
	finish(e, p, V_FILTERED);
}

/* --- UDP ----------------------------------------------------------------- */

static void
udp_start(struct engine *e, struct cc_probe *p)
{
	if (probe_socket(e, p, SOCK_DGRAM) == -1)
		return;
	p->state = S_AWAIT;
	if (connect(p->fd, &p->dst.sa, p->dstlen) == -1 ||
	    send(p->fd, p->payload, p->paylen, 0) == -1 ||
	    watch(e, p, EPOLL_CTL_ADD, EPOLLIN) == -1)
		fail_errno(e, p, errno);
}

static void
udp_io(struct engine *e, struct cc_probe *p, uint32_t ev)
{
	uint8_t buf[RBUF_MAX];
	ssize_t n;

	if (ev & EPOLLERR) {
		n = recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == -1 && errno != EAGAIN) {
			fail_errno(e, p, errno);
			return;
		}
	} else
		n = recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n == -1) {
		if (errno != EAGAIN && errno != EINTR)
			fail_errno(e, p, errno);
		return;
	}
	if (p->app == A_DNS) {
		app_dns_reply(p, buf, (size_t)n);
		if (p->dns == NULL || p->dns->id != p->dnsid)
			return;		/* keep waiting for the real one */
	} else
		evidence(p, false, "%zd-byte reply", n);
	finish(e, p, V_REACHABLE);
}

static void
udp_expire(struct engine *e, struct cc_probe *p)
{
	evidence(p, false, "no reply in %u ms", p->timeout_ms);
	finish(e, p, V_FILTERED);
}

/* --- ICMPv6 echo to a multicast group (all-nodes) -------------------------- */

static void
icmp6_start(struct engine *e, struct cc_probe *p)
{
	struct icmp6_hdr h = { .icmp6_type = ICMP6_ECHO_REQUEST };
	struct icmp6_filter flt;
	int off = 0, hops = 1;

	/* A ping socket needs ping_group_range, a raw one CAP_NET_RAW. */
	p->fd = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    IPPROTO_ICMPV6);
	if (p->fd == -1) {
		p->fd = socket(AF_INET6, SOCK_RAW | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, IPPROTO_ICMPV6);
		if (p->fd != -1) {
			ICMP6_FILTER_SETBLOCKALL(&flt);
			ICMP6_FILTER_SETPASS(ICMP6_ECHO_REPLY, &flt);
			setsockopt(p->fd, IPPROTO_ICMPV6, ICMP6_FILTER, &flt,
			    sizeof(flt));
		}
	}
	if (p->fd == -1) {
		evidence(p, false, "no ICMPv6 socket (needs CAP_NET_RAW or "
		    "ping_group_range)");
		finish(e, p, V_SKIPPED);
		return;
	}
	setsockopt(p->fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &off, sizeof(off));
	setsockopt(p->fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops,
	    sizeof(hops));
	h.icmp6_id = htons(p->dnsid);
	h.icmp6_seq = htons(1);
	p->state = S_AWAIT;
	p->rlen = 0;
	if (sendto(p->fd, &h, sizeof(h), 0, &p->dst.sa, p->dstlen) == -1 ||
	    watch(e, p, EPOLL_CTL_ADD, EPOLLIN) == -1)
		fail_errno(e, p, errno);
}

/* Every echo reply names one responder; the probe collects them until
 * its timeout, so rlen counts responders here. */
static void
icmp6_io(struct engine *e, struct cc_probe *p, uint32_t ev)
{
	struct icmp6_hdr h;
	struct sockaddr_in6 from;
	socklen_t flen = sizeof(from);
	char who[INET6_ADDRSTRLEN];

	while (recvfrom(p->fd, &h, sizeof(h), MSG_DONTWAIT | MSG_TRUNC,
	    (struct sockaddr *)&from, &flen) >= (ssize_t)sizeof(h)) {
		if (h.icmp6_type != ICMP6_ECHO_REPLY)
			continue;
		fmt_sa((struct sockaddr *)&from, who, sizeof(who));
		/* Kept for phase 2, which probes every responder's ports. */
		if (p->dns == NULL)
			p->dns = xcalloc(1, sizeof(*p->dns));
		if (p->dns->naddr < CC_DNS_MAXADDR) {
			struct moat_addr *a = &p->dns->addr[p->dns->naddr++];

			a->family = AF_INET6;
			memcpy(a->a, &from.sin6_addr, 16);
		}
		if (p->rlen++ < 2)
			evidence(p, p->rlen > 1, "%s%s", p->rlen > 1 ? ", " :
			    "echo reply from ", who);
		flen = sizeof(from);
	}
}

static void
icmp6_expire(struct engine *e, struct cc_probe *p)
{
	if (p->rlen == 0) {
		evidence(p, false, "no echo reply in %u ms", p->timeout_ms);
		finish(e, p, V_FILTERED);
		return;
	}
	if (p->rlen > 2)
		evidence(p, true, " and %u more", p->rlen - 2);
	finish(e, p, V_REACHABLE);
}

/* --- forged frames on a packet socket (anti-spoofing) --------------------- */

static int
spoof_send(struct cc_probe *p, const uint8_t *frame, size_t len,
    const uint8_t dmac[6])
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
	    .sll_ifindex = (int)p->spoof->ifindex, .sll_halen = 6 };

	memcpy(sll.sll_addr, dmac, 6);
	return sendto(p->fd, frame, len, 0, (struct sockaddr *)&sll,
	    sizeof(sll)) == (ssize_t)len ? 0 : -1;
}

/* The filter is attached before bind gives the socket a protocol, so no
 * frame reaches it unfiltered. */
static int
spoof_open(struct cc_probe *p)
{
	struct sock_filter f[SPOOF_NFILTER];
	struct sock_fprog prog = { .len = SPOOF_NFILTER, .filter = f };
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
	    .sll_protocol = htons(ETH_P_ALL),
	    .sll_ifindex = (int)p->spoof->ifindex };
	int one = 1;

	p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->fd == -1)
		return -1;
	if (p->spoof->kind == SP_IP6)
		spoof_filter6(p->spoof, f);
	else
		spoof_filter(p->spoof, f);
	if (setsockopt(p->fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
	    sizeof(prog)) == -1 ||
	    bind(p->fd, (struct sockaddr *)&sll, sizeof(sll)) == -1)
		return -1;
	/* Older kernels lack it; outgoing frames are skipped by type too. */
	setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one,
	    sizeof(one));
	return 0;
}

static void
spoof_start(struct engine *e, struct cc_probe *p)
{
	uint8_t frame[SPOOF_FRAME_MAX];
	size_t len;

	if (spoof_open(p) == -1) {
		evidence(p, false, "no packet socket: %s (needs CAP_NET_RAW)",
		    strerror(errno));
		finish(e, p, V_SKIPPED);
		return;
	}
	if (p->spoof->kind == SP_IP6)
		len = spoof_frame6(p->spoof, &p->dst.sin6, frame,
		    sizeof(frame));
	else
		len = spoof_frame(p->spoof, &p->dst.sin, p->payload,
		    p->paylen, frame, sizeof(frame));
	p->state = S_AWAIT;
	if (len == 0 || spoof_send(p, frame, len, p->spoof->gw_mac) == -1 ||
	    watch(e, p, EPOLL_CTL_ADD, EPOLLIN) == -1)
		fail_errno(e, p, errno);
}

/* The gateway asks who has the forged address: we do, at our own MAC. */
static void
spoof_answer_arp(struct cc_probe *p, const struct spoof_peer *peer)
{
	uint8_t frame[64];
	size_t len;

	if (!p->spoof->answer_arp)
		return;
	len = spoof_arp(frame, sizeof(frame), 2, peer->mac, p->spoof->own_mac,
	    p->spoof->src_ip, peer->mac, peer->ip);
	if (len > 0)
		(void)spoof_send(p, frame, len, peer->mac);
}

static void
spoof_io(struct engine *e, struct cc_probe *p, uint32_t ev)
{
	uint8_t buf[2048];
	struct sockaddr_ll from;
	socklen_t flen = sizeof(from);
	struct spoof_peer peer;
	ssize_t n;

	while ((n = recvfrom(p->fd, buf, sizeof(buf), MSG_DONTWAIT,
	    (struct sockaddr *)&from, &flen)) > 0) {
		flen = sizeof(from);
		if (from.sll_pkttype == PACKET_OUTGOING)
			continue;
		if (p->spoof->kind == SP_IP6) {
			if (spoof_classify6(p->spoof, &p->dst.sin6, buf,
			    (size_t)n, p->evidence, sizeof(p->evidence)) ==
			    RX_REPLY) {
				finish(e, p, V_REACHABLE);
				return;
			}
			continue;
		}
		switch (spoof_classify(p->spoof, &p->dst.sin, buf, (size_t)n,
		    p->evidence, sizeof(p->evidence), &peer)) {
		case RX_ARP_REQUEST:
			spoof_answer_arp(p, &peer);
			break;
		case RX_REPLY:
			finish(e, p, V_REACHABLE);
			return;
		case RX_NONE:
			break;
		}
	}
}

static void
spoof_expire(struct engine *e, struct cc_probe *p)
{
	char a[INET6_ADDRSTRLEN];

	if (p->spoof->kind == SP_IP6)
		inet_ntop(AF_INET6, &p->spoof->src6, a, sizeof(a));
	else
		inet_ntop(AF_INET, &p->spoof->src_ip, a, sizeof(a));
	evidence(p, false, "nothing back to %s in %u ms", a, p->timeout_ms);
	finish(e, p, V_FILTERED);
}

static const struct kind_ops kind_ops[] = {
	[K_TCP]   = { tcp_start,   tcp_io,   tcp_expire },
	[K_UDP]   = { udp_start,   udp_io,   udp_expire },
	[K_ICMP6] = { icmp6_start, icmp6_io, icmp6_expire },
	[K_SPOOF] = { spoof_start, spoof_io, spoof_expire },
};

/* --- the loop ------------------------------------------------------------- */

static struct tq *
queue_for(struct engine *e, unsigned timeout_ms, bool talk)
{
	size_t i;

	for (i = 0; i < e->nq; i++)
		if (e->q[i].timeout_ms == timeout_ms && e->q[i].talk == talk)
			return &e->q[i];
	if (e->nq == NQ)
		fatalx("engine: more than %d distinct timeouts", NQ);
	e->q[e->nq] = (struct tq){ timeout_ms, talk, QNONE, QNONE };
	return &e->q[e->nq++];
}

static void
enqueue(struct engine *e, struct tq *q, struct cc_probe *p)
{
	uint32_t idx = (uint32_t)(p - e->p);

	p->tq_next = QNONE;
	if (q->tail == QNONE)
		q->head = idx;
	else
		e->p[q->tail].tq_next = idx;
	q->tail = idx;
}

/* Connected and talking at its connect deadline: it gets its talk time. */
static bool
extend_talk(struct engine *e, struct cc_probe *p, uint64_t now)
{
	if (p->kind != K_TCP || p->talk_ms <= p->timeout_ms ||
	    (p->state != S_AWAIT && p->state != S_TLS) ||
	    now >= p->t0 + (uint64_t)p->talk_ms * 1000 ||
	    now >= e->hard_deadline)
		return false;
	p->timeout_ms = p->talk_ms;
	enqueue(e, queue_for(e, p->talk_ms, true), p);
	return true;
}

static void
start_one(struct engine *e, struct cc_probe *p)
{
	p->t0 = engine_now_us();
	p->fd = -1;
	p->tq_next = QNONE;
	e->inflight++;
	if (p->kind == K_LOCAL) {	/* judged already by local.c */
		p->state = S_DONE;
		e->inflight--;
		e->done++;
		return;
	}
	enqueue(e, queue_for(e, p->timeout_ms, false), p);
	kind_ops[p->kind].start(e, p);
}

/* Expires what is due; returns ms until the next deadline, -1 if none. */
static int
expire_due(struct engine *e, uint64_t now)
{
	uint64_t next = UINT64_MAX, dl;
	struct cc_probe *p;
	size_t i;

	/* A talk queue may be made while this walks: e->nq is read anew. */
	for (i = 0; i < e->nq; i++) {
		struct tq *q = &e->q[i];

		while (q->head != QNONE) {
			p = &e->p[q->head];
			dl = p->t0 + (uint64_t)p->timeout_ms * 1000;
			if (p->state != S_DONE && dl > now &&
			    now < e->hard_deadline) {
				if (dl < next)
					next = dl;
				break;
			}
			q->head = p->tq_next;
			if (q->head == QNONE)
				q->tail = QNONE;
			if (p->state != S_DONE && !extend_talk(e, p, now))
				kind_ops[p->kind].expire(e, p);
		}
	}
	if (next == UINT64_MAX)
		return -1;
	return (int)((next - now + 999) / 1000);
}

static size_t
fd_budget(size_t want)
{
	struct rlimit rl;

	/* Raise the soft limit as far as the hard one allows; keep some
	 * descriptors for stdio, netlink and the epoll instance. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return 64;
	if (rl.rlim_cur < rl.rlim_max && rl.rlim_cur < want + 64) {
		rl.rlim_cur = rl.rlim_max < want + 64 ? rl.rlim_max : want + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur <= 96)
		return 32;
	return rl.rlim_cur - 64 < want ? rl.rlim_cur - 64 : want;
}

/* The next probe to start: this loop's own, or the pool's next one. */
static struct cc_probe *
next_probe(struct engine *e)
{
	size_t i;

	if (e->pool == NULL)
		return e->next < e->n ? &e->p[e->next++] : NULL;
	i = atomic_fetch_add(&e->pool->next, 1);
	return i < e->pool->n ? &e->p[i] : NULL;
}

static int
engine_loop(struct engine *e)
{
	struct epoll_event evs[MAXEV];
	struct cc_probe *q;
	bool more = true;
	int i, nev, wait = 0, rc = 0;

	if ((e->ep = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		log_warn("epoll_create1");
		return -1;
	}
	e->hard_deadline = engine_now_us() + HARD_CAP_US;
	while (more || e->inflight > 0) {
		while (more && e->inflight < e->maxfly) {
			if ((q = next_probe(e)) == NULL)
				more = false;
			else
				start_one(e, q);
		}
		if (!more && e->inflight == 0)
			break;
		/* Everything that came in first, then the deadlines. */
		do {
			nev = epoll_wait(e->ep, evs, MAXEV, wait);
			if (nev == -1 && errno != EINTR) {
				log_warn("epoll_wait");
				rc = -1;
				goto out;
			}
			for (i = 0; i < nev; i++) {
				q = &e->p[evs[i].data.u64];
				if (q->state != S_DONE)
					kind_ops[q->kind].io(e, q,
					    evs[i].events);
			}
			wait = 0;
		} while (nev == MAXEV);
		wait = expire_due(e, engine_now_us());
		if (more && e->inflight < e->maxfly)
			wait = 0;
	}
out:
	close(e->ep);
	return rc;
}

int
engine_run(struct cc_probe *p, size_t n, unsigned concurrency)
{
	struct engine e = { .p = p, .n = n };

	e.maxfly = fd_budget(concurrency);
	if (engine_loop(&e) == -1)
		return -1;
	return e.done == e.n ? 0 : -1;
}

size_t
engine_budget(unsigned concurrency)
{
	return fd_budget(concurrency);
}

int
engine_run_pool(struct cc_pool *pool, size_t maxfly)
{
	struct engine e = { .p = pool->p, .pool = pool };

	e.maxfly = maxfly > 0 ? maxfly : 1;
	return engine_loop(&e);
}
