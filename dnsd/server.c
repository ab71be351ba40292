/*
 * server.c -- the resolver process: guests' queries in over UDP and TCP,
 * policy, cache, forwarding to the upstreams, set updates through the
 * privileged side, answers out.
 *
 * Life of a query:
 *   frontend (udp_cb / tcp_cb) -> handle_query: parse, who asks, rate,
 *   special names, policy, AAAA -> cache hit: deliver; miss: fwd_start,
 *   which coalesces identical questions and tries the upstreams in turn
 *   (UDP, TCP after TC) -> fwd_answer: da_parse checks and filters ->
 *   deliver to every waiter, then cache.
 *   deliver: for an allowlist sandbox with addresses in the answer, the
 *   answer is parked until the privileged side acknowledges the set
 *   update (IPC_SET_ACK); only then does the guest get it.
 */
#include <sys/socket.h>
#include <sys/signalfd.h>
#include <sys/epoll.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "dnsd.h"
#include "ev.h"
#include "ipc.h"
#include "json.h"
#include "mirror.h"
#include "log.h"
#include "msg.h"
#include "policy.h"
#include "tlist.h"

#define MAX_FWD		4096	/* distinct questions in flight */
#define MAX_WAITERS	64	/* guests waiting on one question */
#define MAX_TCP_CLIENTS	128
#define MAX_TCP_INFLIGHT 32
#define TCP_IDLE_MS	10000
#define TCP_WBUF_MAX	(256 * 1024)
#define UPSTREAM_TCP_MS	4000
#define UPSTREAM_HOLD_MS 10000	/* a silent upstream is skipped this long */
#define MAX_UPSTREAMS	8
#define SETADD_MS	2000
#define MIRROR_SLOTS	65536	/* (sandbox, address) pairs remembered */
#define SET_TIMEOUT_MIN	60	/* seconds: floor of a set element */
#define UDP_BATCH	64
#define FWD_BUCKETS	4096
#define LOG_PER_SEC	20

static const uint8_t uad_name[] = "\023use-application-dns\003net";

struct counters {
	uint64_t	 queries, udp, tcp, dropped, formerr, notimp;
	uint64_t	 unknown_src, ratelimited, refused, uad, aaaa_empty;
	uint64_t	 forwarded, coalesced, up_timeouts, up_bad, up_mismatch;
	uint64_t	 up_fail, up_tcp, servfail, rebind_removed;
	uint64_t	 set_adds, set_fail, set_skipped, tcp_refused, log_suppressed;
	uint64_t	 tcp_per_src_refused, tcp_expired;
};

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

struct client {			/* where one answer goes */
	struct tconn	*conn;	/* NULL: UDP */
	struct sockaddr_storage ss;
	socklen_t	 sslen;
	char		 sandbox[IPC_NAME_LEN];
	int		 allowlist;
	struct dq	 q;
};

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

struct pending {		/* an answer waiting for IPC_SET_ACK */
	struct tlink	 t;
	uint32_t	 id;
	struct client	 c;
	uint8_t		*wire;
	size_t		 len;
	uint64_t	 expires_ms;	/* its elements live at least until */
	size_t		 naddr;
	struct moat_addr addr[DNSD_MAX_ADDRS];
};

struct upstream {
	struct sockaddr_storage ss;
	socklen_t	 len;
	uint64_t	 hold_until;
};

static struct {
	const struct dnsd_opts *opts;
	struct moat_config *cfg;
	struct policy	*pol;
	struct cache	*cache;
	struct mirror	*mirror;	/* what the sets hold, until when */
	struct upstream	 ups[MAX_UPSTREAMS];
	unsigned	 nups, cur;
	int		 ipcfd;
	uint32_t	 ipc_id;
	struct ev	 udp, tcp, ipc, sig;
	struct fwd	*fwtab[FWD_BUCKETS];
	size_t		 nfwd;
	uint64_t	 fwseed;
	struct tlist	 fw_udp, fw_tcp, idle, pend, life;
	int		 ntcp;
	int		 stop;
	double		 log_tokens;
	uint64_t	 log_last;
	uint64_t	 drop_last;	/* last IPC_DNS_DROPPED round */
	struct counters	 c;
} S;

static void	fwd_attempt(struct fwd *, int tcp);
static void	fwd_next(struct fwd *, int hold);
static void	tconn_unref(struct tconn *);
static void	tconn_close(struct tconn *);

/* Lines about guests' queries are capped so a guest cannot flood the
 * log; what is suppressed is counted and reported with the stats. */
static int
log_budget(void)
{
	uint64_t now = ev_now();

	S.log_tokens += (double)(now - S.log_last) * LOG_PER_SEC / 1000.0;
	if (S.log_tokens > LOG_PER_SEC)
		S.log_tokens = LOG_PER_SEC;
	S.log_last = now;
	if (S.log_tokens < 1.0) {
		S.c.log_suppressed++;
		return 0;
	}
	S.log_tokens -= 1.0;
	return 1;
}

static const char *
qtype_str(uint16_t t, char *buf, size_t len)
{
	char *s = ldns_rr_type2str(t);

	snprintf(buf, len, "%s", s ? s : "?");
	free(s);
	return buf;
}

/* --- clients --------------------------------------------------------- */

static void
client_move(struct client *to, struct client *from)
{
	*to = *from;
	from->q.pkt = NULL;
	from->conn = NULL;
}

static void
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
		n = sendmmsg(S.udp.fd, OB.m + done, OB.n - done, MSG_DONTWAIT);
		if (n <= 0) {
			log_debug("udp sendmmsg: %s", strerror(errno));
			break;
		}
		done += (unsigned)n;
	}
	OB.n = 0;
}

static void
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
	if (sendto(S.udp.fd, wire, len, MSG_DONTWAIT,
	    (struct sockaddr *)&c->ss, c->sslen) == -1)
		log_debug("udp send: %s", strerror(errno));
}

static void
respond(struct client *c, ldns_pkt_rcode rcode, uint16_t ede,
    const char *text)
{
	uint8_t *wire;
	size_t len;

	if (rcode == LDNS_RCODE_SERVFAIL)
		S.c.servfail++;
	if ((wire = resp_build(&c->q, rcode, NULL, NULL, 0, ede, text,
	    &len)) != NULL) {
		client_send(c, wire, len);
		free(wire);
	}
	client_done(c);
}

/* --- set updates ----------------------------------------------------- */

/* The longest TTL the guest is told for an address of the answer. */
static uint32_t
answer_told_ttl(const struct answer *a, uint32_t age)
{
	uint32_t max = 0, t;
	size_t i;

	for (i = 0; i < ldns_rr_list_rr_count(a->an); i++) {
		const ldns_rr *rr = ldns_rr_list_rr(a->an, i);

		if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_A)
			continue;
		t = ldns_rr_ttl(rr);
		t = t > age ? t - age : 0;
		if (t > max)
			max = t;
	}
	return max;
}

/* The timeout of the answer's set elements. */
static uint32_t
answer_addr_ttl(const struct answer *a, uint32_t age)
{
	uint32_t max = answer_told_ttl(a, age);

	/* The element outlives every TTL the guest was told, so the guest
	 * asks again (and refreshes it) before it expires.  One second more:
	 * ages are whole seconds, so a later cache hit may be told up to a
	 * second more than the exact time left, and the element must still
	 * cover it. */
	if (max < SET_TIMEOUT_MIN)
		max = SET_TIMEOUT_MIN;
	max += 1;
	return max > DNSD_TTL_MAX ? DNSD_TTL_MAX : max;
}


/*
 * Are the answer's addresses already in the set for as long as the guest
 * will use them?  Then no round trip is needed.  Past half of the element's
 * timeout the answer goes through the parent again, which refreshes it
 * long before it can lapse under a guest that keeps asking.
 */
static bool
setadd_covered(const struct client *c, const struct answer *a, uint32_t age)
{
	uint64_t told = (uint64_t)answer_told_ttl(a, age) * 1000;
	uint64_t half = (uint64_t)answer_addr_ttl(a, age) * 1000 / 2;

	return mirror_covers(S.mirror, c->sandbox, a->addr, a->naddr,
	    ev_now() + (told > half ? told : half));
}

static int
setadd_send(const struct client *c, const struct answer *a, uint32_t age,
    uint32_t id)
{
	static union {
		struct ipc_set_add m;
		uint8_t raw[IPC_MAX_PAYLOAD];
	} u;
	size_t n = a->naddr;

	memset(&u.m, 0, sizeof(u.m));
	snprintf(u.m.sandbox, sizeof(u.m.sandbox), "%s", c->sandbox);
	u.m.timeout_ms = answer_addr_ttl(a, age) * 1000;
	u.m.naddr = (uint32_t)n;
	memcpy(u.m.addr, a->addr, n * sizeof(struct moat_addr));
	return ipc_send(S.ipcfd, IPC_SET_ADD, id, &u.m,
	    sizeof(u.m) + n * sizeof(struct moat_addr));
}

static void
pending_free(struct pending *p)
{
	tlist_del(&p->t);
	client_done(&p->c);
	free(p->wire);
	free(p);
}

/* Park the answer until the privileged side has opened the addresses. */
static void
setadd_park(struct client *c, const struct answer *a, uint32_t age,
    uint8_t *wire, size_t len)
{
	struct pending *p;
	uint32_t id = ++S.ipc_id;

	if (setadd_send(c, a, age, id) == -1) {
		log_warn("sandbox %s: set update not sent", c->sandbox);
		S.c.set_fail++;
		free(wire);
		respond(c, LDNS_RCODE_SERVFAIL, 0, NULL);
		return;
	}
	S.c.set_adds++;
	p = xcalloc(1, sizeof(*p));
	p->id = id;
	/* The kernel starts the timeout when it adds the element, after
	 * this moment: measured from here it is never overestimated. */
	p->expires_ms = ev_now() + (uint64_t)answer_addr_ttl(a, age) * 1000;
	p->naddr = a->naddr;
	memcpy(p->addr, a->addr, a->naddr * sizeof(a->addr[0]));
	for (size_t i = 0; i < a->naddr; i++)
		mirror_sent(S.mirror, c->sandbox, &a->addr[i], id);
	client_move(&p->c, c);
	p->wire = wire;
	p->len = len;
	tlist_add(&S.pend, &p->t, ev_now() + SETADD_MS);
}

static void
setadd_acked(uint32_t id, int32_t status)
{
	struct tlink *l;
	struct pending *p;

	for (l = S.pend.head; l != NULL; l = l->next) {
		p = TL_ENTRY(l, struct pending, t);
		if (p->id != id)
			continue;
		if (status >= 0 && (size_t)status == p->naddr)
			for (size_t i = 0; i < p->naddr; i++)
				mirror_acked(S.mirror, p->c.sandbox,
				    &p->addr[i], id, p->expires_ms);
		if (status >= 0)
			client_send(&p->c, p->wire, p->len);
		else {
			/* Fail closed: an answer the firewall would not
			 * honour is worse than an honest SERVFAIL. */
			S.c.set_fail++;
			log_warnx("sandbox %s: set update refused; SERVFAIL",
			    p->c.sandbox);
			respond(&p->c, LDNS_RCODE_SERVFAIL, 0, NULL);
		}
		pending_free(p);
		return;
	}
	log_debug("set ack %u for nothing pending (timed out)", id);
}

/* What a rendering depends on besides the entry: its age, the client's
 * size limit and EDNS, and the header flags echoed from the query. */
static uint64_t
memo_key(const struct client *c, uint32_t age)
{
	return (uint64_t)age << 32 | (uint64_t)c->q.maxlen << 8 |
	    (uint64_t)c->q.edns << 2 | (uint64_t)ldns_pkt_rd(c->q.pkt) << 1 |
	    (uint64_t)ldns_pkt_cd(c->q.pkt);
}

static const ldns_rdf *
asked_name(const struct client *c)
{
	return ldns_rr_owner(ldns_rr_list_rr(ldns_pkt_question(c->q.pkt), 0));
}

/* A cache hit asked the same way as the last one in the same second is
 * answered from the last rendering with the client's ID patched in. */
static uint8_t *
memo_get(const struct memo *m, const struct client *c, uint32_t age,
    size_t *len)
{
	const ldns_rdf *n = asked_name(c);
	uint8_t *wire;

	if (m == NULL || m->wire == NULL || m->key != memo_key(c, age) ||
	    m->qlen != ldns_rdf_size(n) ||
	    memcmp(m->q, ldns_rdf_data(n), m->qlen) != 0 ||
	    (wire = malloc(m->len)) == NULL)
		return NULL;
	memcpy(wire, m->wire, m->len);
	LDNS_ID_SET(wire, c->q.id);
	*len = m->len;
	return wire;
}

static void
memo_put(struct memo *m, const struct client *c, uint32_t age,
    const uint8_t *wire, size_t len)
{
	const ldns_rdf *n = asked_name(c);

	if (m == NULL || len > DNSD_EDNS_SIZE ||
	    ldns_rdf_size(n) > sizeof(m->q))
		return;
	free(m->wire);
	m->wire = xmalloc(len);
	memcpy(m->wire, wire, len);
	m->len = len;
	m->key = memo_key(c, age);
	m->qlen = ldns_rdf_size(n);
	memcpy(m->q, ldns_rdf_data(n), m->qlen);
}

/* Hand an answer (fresh, or from the cache age seconds old with its memo)
 * to a guest. */
static void
deliver(struct client *c, const struct answer *a, uint32_t age,
    struct memo *memo)
{
	uint8_t *wire;
	size_t len;
	char name[LDNS_MAX_DOMAINLEN * 4 + 8];

	if (a->removed > 0 && log_budget())
		log_info("sandbox %s: %s: %zu private record(s) removed "
		    "(rebinding)", c->sandbox, dq_name(&c->q, name,
		    sizeof(name)), a->removed);
	if ((wire = memo_get(memo, c, age, &len)) == NULL) {
		wire = resp_build(&c->q, a->rcode, a->an, a->ns, age, a->ede,
		    a->ede ? "private address removed by moat" : NULL, &len);
		if (wire != NULL)
			memo_put(memo, c, age, wire, len);
	}
	if (wire == NULL) {
		respond(c, LDNS_RCODE_SERVFAIL, 0, NULL);
		return;
	}
	if (c->allowlist && a->naddr > 0 && S.ipcfd != -1) {
		if (!setadd_covered(c, a, age)) {
			setadd_park(c, a, age, wire, len);
			return;
		}
		S.c.set_skipped++;
	}
	client_send(c, wire, len);
	free(wire);
	client_done(c);
}

/* --- forwarding ------------------------------------------------------ */

static uint64_t
fwd_hash(const uint8_t *name, size_t len, uint16_t qtype)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ S.fwseed ^ qtype;
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

	for (f = S.fwtab[h % FWD_BUCKETS]; f != NULL; f = f->hnext)
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

	for (pp = &S.fwtab[f->hash % FWD_BUCKETS]; *pp; pp = &(*pp)->hnext)
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
	S.nfwd--;
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

	st = da_parse(buf, len, &f->dqn, S.cfg->private, &a);
	switch (st) {
	case DA_OK:
		break;
	case DA_MISMATCH:
		/* Over UDP, a stray or spoofed datagram: keep waiting for
		 * the real answer until the timeout. */
		S.c.up_mismatch++;
		if (!f->tcp)
			return;
		fwd_next(f, 0);
		return;
	case DA_TRUNCATED:
		if (!f->tcp) {
			S.c.up_tcp++;
			fwd_attempt(f, 1);
			return;
		}
		S.c.up_bad++;
		fwd_next(f, 0);
		return;
	case DA_BAD:
		S.c.up_bad++;
		log_debug("upstream answer malformed; trying the next");
		fwd_next(f, 0);
		return;
	case DA_FAIL:
		S.c.up_fail++;
		fwd_next(f, 0);
		return;
	}
	S.c.rebind_removed += a.removed;
	for (w = f->waiters; w != NULL; w = w->next)
		deliver(&w->c, &a, 0, NULL);
	cache_put(S.cache, f->name, f->dqn.namelen, f->dqn.qtype, &a,
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
				S.c.up_fail++;
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
		S.c.up_fail++;
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
		S.c.up_fail++;
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

	for (k = 0; k < S.nups; k++) {
		i = (from + k) % S.nups;
		if (S.ups[i].hold_until <= ev_now())
			return i;
	}
	return from % S.nups;
}

static int
fwd_socket(struct fwd *f, int tcp)
{
	const struct upstream *u = &S.ups[f->up % S.nups];
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
	tlist_add(tcp ? &S.fw_tcp : &S.fw_udp, &f->t, ev_now() +
	    (tcp ? UPSTREAM_TCP_MS : S.opts->timeout_ms));
	return;
fail:
	log_debug("upstream attempt failed: %s", strerror(errno));
	S.c.up_fail++;
	fwd_next(f, 1);
}

/* The attempt failed: mark the upstream (hold: it did not answer at all)
 * and try the next one, or give up. */
static void
fwd_next(struct fwd *f, int hold)
{
	unsigned max = S.nups * 2 < 3 ? 3 : S.nups * 2;

	if (hold) {
		S.ups[f->up % S.nups].hold_until = ev_now() + UPSTREAM_HOLD_MS;
		if (S.cur == f->up % S.nups)
			S.cur = (S.cur + 1) % S.nups;
	}
	if (++f->tries >= (int)max) {
		fwd_fail(f);
		return;
	}
	f->up = upstream_pick(f->up + 1);
	fwd_attempt(f, 0);
}

static void
fwd_start(struct client *c)
{
	uint64_t h = fwd_hash(c->q.name, c->q.namelen, c->q.qtype);
	struct fwd *f = fwd_find(&c->q, h);
	struct waiter *w;

	if (f != NULL && f->nwaiters >= MAX_WAITERS) {
		respond(c, LDNS_RCODE_SERVFAIL, 0, NULL);
		return;
	}
	if (f == NULL && (S.nfwd >= MAX_FWD || S.nups == 0)) {
		respond(c, LDNS_RCODE_SERVFAIL, 0, NULL);
		return;
	}
	w = xcalloc(1, sizeof(*w));
	client_move(&w->c, c);
	if (f != NULL) {
		S.c.coalesced++;
		w->next = f->waiters;
		f->waiters = w;
		f->nwaiters++;
		return;
	}
	S.c.forwarded++;
	f = xcalloc(1, sizeof(*f));
	f->hash = h;
	memcpy(f->name, w->c.q.name, w->c.q.namelen);
	f->dqn.namelen = w->c.q.namelen;
	f->dqn.qtype = w->c.q.qtype;
	f->dqn.qclass = w->c.q.qclass;
	f->waiters = w;
	f->nwaiters = 1;
	f->hnext = S.fwtab[h % FWD_BUCKETS];
	S.fwtab[h % FWD_BUCKETS] = f;
	S.nfwd++;
	f->up = upstream_pick(S.cur);
	fwd_attempt(f, 0);
}

/* --- queries --------------------------------------------------------- */

static void
query_error(struct client *c, enum dq_status st, const uint8_t *buf,
    size_t len)
{
	static const ldns_pkt_rcode rc[] = {
		[DQ_FORMERR] = LDNS_RCODE_FORMERR,
		[DQ_NOTIMP] = LDNS_RCODE_NOTIMPL,
	};
	uint8_t *wire;
	size_t wlen;

	if (st == DQ_DROP) {
		S.c.dropped++;
		client_done(c);
		return;
	}
	if (st == DQ_BADVERS && c->q.pkt != NULL) {
		respond(c, (ldns_pkt_rcode)16, 0, NULL);	/* BADVERS */
		return;
	}
	if (st == DQ_NOTIMP && c->q.pkt != NULL) {
		S.c.notimp++;
		respond(c, LDNS_RCODE_NOTIMPL, 0, NULL);
		return;
	}
	S.c.formerr++;
	if ((wire = resp_error(buf, len, st == DQ_NOTIMP ? rc[DQ_NOTIMP] :
	    rc[DQ_FORMERR], &wlen)) != NULL) {
		client_send(c, wire, wlen);
		free(wire);
	}
	client_done(c);
}

/* Under gatewayd, refusals and rebinding removals also go to its audit
 * log. */
static void
audit(const char *event, const char *sandbox, const char *name,
    const char *qtype, const char *reason)
{
	struct json j = JSON_INIT;

	if (S.opts->ipc_fd == -1 || S.ipcfd == -1)
		return;
	json_begin(&j);
	json_kstr(&j, "event", event);
	json_kstr(&j, "sandbox", sandbox);
	json_kstr(&j, "name", name);
	json_kstr(&j, "qtype", qtype);
	json_kstr(&j, "reason", reason);
	json_end(&j);
	if (j.len <= IPC_MAX_PAYLOAD)
		(void)ipc_send(S.ipcfd, IPC_AUDIT, 0, j.buf, j.len);
	json_free(&j);
}

static void
refuse(struct client *c, const char *who, const char *reason)
{
	char name[LDNS_MAX_DOMAINLEN * 4 + 8], t[16];

	S.c.refused++;
	dq_name(&c->q, name, sizeof(name));
	qtype_str(c->q.qtype, t, sizeof(t));
	if (log_budget()) {
		log_info("sandbox %s: refused %s %s: %s", who, t, name,
		    reason);
		audit("dns-refused", who, name, t, reason);
	}
	respond(c, LDNS_RCODE_REFUSED, EDE_BLOCKED, reason);
}

/* --rate for every sandbox if given, else moat.conf's rate for this one. */
static bool
sandbox_ratelimit(struct sbpolicy *sb)
{
	double qps = S.opts->qps, burst = S.opts->burst;

	if (qps < 0)
		config_dns_rate(S.cfg, sb->sb, &qps, &burst);
	if (qps > 0 && burst < 1)
		burst = 1;
	return policy_ratelimit(sb, ev_now(), qps, burst);
}

static void
handle_query(struct client *c, const uint8_t *buf, size_t len)
{
	struct moat_addr peer;
	struct sbpolicy *sb;
	struct centry *e;
	enum dq_status st;
	enum verdict v;
	uint64_t now_s = ev_now() / 1000;

	S.c.queries++;
	if ((st = dq_parse(buf, len, c->conn != NULL, &c->q)) != DQ_OK) {
		query_error(c, st, buf, len);
		return;
	}
	if (addr_from_sockaddr(&c->ss, &peer) == -1 ||
	    (sb = policy_sandbox(S.pol, &peer)) == NULL) {
		S.c.unknown_src++;
		refuse(c, "?", "source is not a sandbox");
		return;
	}
	snprintf(c->sandbox, sizeof(c->sandbox), "%s", sb->sb->name);
	c->allowlist = sb->egress == EGRESS_ALLOWLIST;
	if (!sandbox_ratelimit(sb)) {
		S.c.ratelimited++;
		sb->dropped++;
		client_done(c);
		return;
	}
	if (c->q.namelen == sizeof(uad_name) &&
	    memcmp(c->q.name, uad_name, sizeof(uad_name)) == 0) {
		/* Firefox's canary: NXDOMAIN turns its own DoH off. */
		S.c.uad++;
		respond(c, LDNS_RCODE_NXDOMAIN, 0, NULL);
		return;
	}
	if ((v = policy_check(sb, c->q.name, c->q.namelen)) != V_ALLOW) {
		refuse(c, c->sandbox, verdict_reason(v));
		return;
	}
	if (c->q.qtype == LDNS_RR_TYPE_AAAA) {
		/* Guests have no IPv6: an empty answer, at once, so that
		 * happy eyeballs does not wait for one. */
		S.c.aaaa_empty++;
		respond(c, LDNS_RCODE_NOERROR, 0, NULL);
		return;
	}
	if ((e = cache_get(S.cache, c->q.name, c->q.namelen, c->q.qtype,
	    now_s)) != NULL) {
		deliver(c, &e->a, (uint32_t)(now_s - e->stored), &e->memo);
		return;
	}
	fwd_start(c);
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
	for (i = 0; i < n; i++) {
		S.c.udp++;
		if (m[i].msg_hdr.msg_flags & MSG_TRUNC) {
			S.c.dropped++;
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
	S.ntcp--;
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
	tlist_add(&S.idle, &t->idle, ev_now() + TCP_IDLE_MS);
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
		S.c.tcp++;
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
	tlist_add(&S.idle, &t->idle, ev_now() + TCP_IDLE_MS);
	tconn_frames(t);
}

static bool
addr_same(const struct moat_addr *a, const struct moat_addr *b)
{
	return a->family == b->family && memcmp(a->a, b->a,
	    a->family == AF_INET ? 4 : 16) == 0;
}

/* TCP clients from this address.  Every open one is on the idle list; the
 * list is at most MAX_TCP_CLIENTS long. */
static unsigned
tcp_from(const struct moat_addr *a)
{
	const struct tlink *l;
	unsigned n = 0;

	for (l = S.idle.head; l != NULL; l = l->next)
		if (addr_same(&TL_ENTRY(l, struct tconn, idle)->peer, a))
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

	if (S.ntcp >= MAX_TCP_CLIENTS) {
		S.c.tcp_refused++;
		return false;
	}
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == -1 ||
	    addr_from_sockaddr(&ss, peer) == -1) {
		S.c.tcp_refused++;
		return false;
	}
	if (tcp_from(peer) >= S.cfg->gw.dns_tcp_per_sandbox) {
		S.c.tcp_per_src_refused++;
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
		S.ntcp++;
		tlist_add(&S.idle, &t->idle, ev_now() + TCP_IDLE_MS);
		tlist_add(&S.life, &t->life, ev_now() +
		    (uint64_t)S.cfg->gw.dns_tcp_lifetime * 1000);
	}
}

/* --- timers ---------------------------------------------------------- */

static void
expire(void)
{
	uint64_t now = ev_now();
	struct tlink *l;

	while ((l = S.fw_udp.head) != NULL && l->deadline <= now) {
		S.c.up_timeouts++;
		fwd_next(TL_ENTRY(l, struct fwd, t), 1);
	}
	while ((l = S.fw_tcp.head) != NULL && l->deadline <= now) {
		S.c.up_timeouts++;
		fwd_next(TL_ENTRY(l, struct fwd, t), 1);
	}
	while ((l = S.life.head) != NULL && l->deadline <= now) {
		S.c.tcp_expired++;
		tconn_close(TL_ENTRY(l, struct tconn, life));
	}
	while ((l = S.idle.head) != NULL && l->deadline <= now) {
		struct tconn *t = TL_ENTRY(l, struct tconn, idle);

		if (t->inflight > 0)
			tlist_add(&S.idle, l, now + TCP_IDLE_MS);
		else
			tconn_close(t);
	}
	while ((l = S.pend.head) != NULL && l->deadline <= now) {
		struct pending *p = TL_ENTRY(l, struct pending, t);

		S.c.set_fail++;
		log_warnx("sandbox %s: no set ack in %d ms; SERVFAIL",
		    p->c.sandbox, SETADD_MS);
		respond(&p->c, LDNS_RCODE_SERVFAIL, 0, NULL);
		pending_free(p);
	}
}

static int
next_timeout(void)
{
	const struct tlist *lists[] = { &S.fw_udp, &S.fw_tcp, &S.idle,
	    &S.pend, &S.life };
	uint64_t min = UINT64_MAX, now = ev_now();
	size_t i;

	for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		if (lists[i]->head && lists[i]->head->deadline < min)
			min = lists[i]->head->deadline;
	if (min == UINT64_MAX)
		return 1000;
	return min <= now ? 0 : (int)(min - now > 1000 ? 1000 : min - now);
}

/* --- config, stats, signals, IPC ------------------------------------- */

static void
upstreams_set(const struct moat_config *cfg)
{
	size_t i;

	S.nups = 0;
	for (i = 0; i < cfg->gw.nupstream && S.nups < MAX_UPSTREAMS; i++) {
		const struct moat_addr *a = &cfg->gw.upstream[i];
		struct upstream *u = &S.ups[S.nups++];

		memset(u, 0, sizeof(*u));
		if (a->family == AF_INET) {
			struct sockaddr_in *s = (struct sockaddr_in *)&u->ss;

			s->sin_family = AF_INET;
			s->sin_port = htons(53);
			memcpy(&s->sin_addr, a->a, 4);
			u->len = sizeof(*s);
		} else {
			struct sockaddr_in6 *s = (struct sockaddr_in6 *)&u->ss;

			s->sin6_family = AF_INET6;
			s->sin6_port = htons(53);
			memcpy(&s->sin6_addr, a->a, 16);
			u->len = sizeof(*s);
		}
	}
	S.cur = 0;
}

/* --cache-size, else gateway.dns.cache_size. */
static size_t
cache_bytes(const struct moat_config *cfg)
{
	return S.opts->cache_bytes > 0 ? S.opts->cache_bytes :
	    (size_t)cfg->gw.dns_cache_size;
}

/* Tell gatewayd, once a second, how many queries each sandbox had
 * dropped over its rate, for `gatewayd ctl counters`. */
static void
report_drops(void)
{
	struct ipc_dns_dropped m;
	struct sbpolicy *sb;
	uint64_t now = ev_now();
	size_t i;

	/* Only gatewayd counts them; dnsd's own privileged half does not. */
	if (S.opts->ipc_fd == -1 || S.ipcfd == -1 || now - S.drop_last < 1000)
		return;
	S.drop_last = now;
	for (i = 0; i < policy_nsandboxes(S.pol); i++) {
		sb = policy_sandbox_at(S.pol, i);
		if (sb->dropped == 0)
			continue;
		memset(&m, 0, sizeof(m));
		snprintf(m.sandbox, sizeof(m.sandbox), "%s", sb->sb->name);
		m.count = sb->dropped;
		if (ipc_send(S.ipcfd, IPC_DNS_DROPPED, 0, &m, sizeof(m)) == 0)
			sb->dropped = 0;
	}
}

static void
reload(void)
{
	struct moat_errors errs = { 0 };
	struct moat_config *cfg;

	if (S.opts->config_fd != -1) {
		/* gatewayd restarts us with its new configuration. */
		log_warnx("reload: the configuration comes from gatewayd; "
		    "ignored");
		return;
	}
	if ((cfg = config_load(S.opts->conf, NULL, &errs)) == NULL) {
		log_warnx("reload: %s is not valid; keeping the running "
		    "configuration", S.opts->conf);
		for (size_t i = 0; i < errs.n; i++)
			log_warnx("%s", errs.msg[i]);
		config_errors_free(&errs);
		return;
	}
	policy_free(S.pol);
	config_free(S.cfg);
	S.cfg = cfg;
	S.pol = policy_new(cfg);
	upstreams_set(cfg);
	/* The private table may have changed with treat_as_public. */
	cache_free(S.cache);
	S.cache = cache_new(cache_bytes(cfg));
	/* A reload may have emptied or replaced the sets. */
	mirror_clear(S.mirror);
	log_info("reloaded %s: %zu sandboxes", S.opts->conf, cfg->nsandboxes);
}

static void
stats_log(void)
{
	struct cache_stats cs;

	cache_stats(S.cache, &cs);
	log_info("stats: queries %llu (udp %llu tcp %llu) dropped %llu "
	    "formerr %llu notimp %llu refused %llu (unknown source %llu) "
	    "ratelimited %llu aaaa-empty %llu uad %llu",
	    (unsigned long long)S.c.queries, (unsigned long long)S.c.udp,
	    (unsigned long long)S.c.tcp, (unsigned long long)S.c.dropped,
	    (unsigned long long)S.c.formerr, (unsigned long long)S.c.notimp,
	    (unsigned long long)S.c.refused,
	    (unsigned long long)S.c.unknown_src,
	    (unsigned long long)S.c.ratelimited,
	    (unsigned long long)S.c.aaaa_empty, (unsigned long long)S.c.uad);
	log_info("stats: cache hits %llu misses %llu entries %zu bytes %zu "
	    "evictions %llu; forwarded %llu coalesced %llu timeouts %llu "
	    "bad %llu mismatched %llu failed %llu tcp-retries %llu "
	    "servfail %llu rebind-removed %llu set-adds %llu set-fail %llu "
	    "set-covered %llu log-suppressed %llu tcp-refused %llu "
	    "tcp-per-source-refused %llu tcp-expired %llu",
	    (unsigned long long)cs.hits, (unsigned long long)cs.misses,
	    cs.entries, cs.bytes, (unsigned long long)cs.evictions,
	    (unsigned long long)S.c.forwarded,
	    (unsigned long long)S.c.coalesced,
	    (unsigned long long)S.c.up_timeouts,
	    (unsigned long long)S.c.up_bad,
	    (unsigned long long)S.c.up_mismatch,
	    (unsigned long long)S.c.up_fail, (unsigned long long)S.c.up_tcp,
	    (unsigned long long)S.c.servfail,
	    (unsigned long long)S.c.rebind_removed,
	    (unsigned long long)S.c.set_adds,
	    (unsigned long long)S.c.set_fail,
	    (unsigned long long)S.c.set_skipped,
	    (unsigned long long)S.c.log_suppressed,
	    (unsigned long long)S.c.tcp_refused,
	    (unsigned long long)S.c.tcp_per_src_refused,
	    (unsigned long long)S.c.tcp_expired);
}

static void
sig_cb(struct ev *h, uint32_t events)
{
	struct signalfd_siginfo si;

	while (read(h->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			if (S.opts->ipc_fd != -1)
				reload();
			else
				log_info("SIGHUP: the parent reloads");
			break;
		case SIGUSR1:
			stats_log();
			break;
		default:
			S.stop = 1;
			break;
		}
	}
}

static void
ipc_cb(struct ev *h, uint32_t events)
{
	static union {
		struct ipc_set_ack ack;
		uint8_t raw[IPC_MAX_PAYLOAD];
	} u;
	struct ipc_hdr hdr;
	char err[256];
	ssize_t n;

	n = ipc_recv(h->fd, &hdr, u.raw, sizeof(u.raw), err, sizeof(err));
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == -2)
		fatalx("ipc: %s", err);	/* STYLE.md 4: fatal to us */
	if (n == -1)
		fatal("ipc");
	if (n == 0 && hdr.type == 0) {
		log_info("privileged side went away; exiting");
		S.stop = 1;
		return;
	}
	switch (hdr.type) {
	case IPC_SET_ACK:
		setadd_acked(hdr.id, u.ack.status);
		break;
	case IPC_RELOAD:
		reload();
		break;
	default:
		fatalx("ipc: unexpected %s message", ipc_type_name(hdr.type));
	}
}

static int
signals_fd(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

static void
watch(struct ev *h, int fd, ev_cb cb)
{
	if (ev_add(h, fd, EPOLLIN, cb, NULL) == -1)
		fatal("epoll");
}

static void
resolver_cleanup(void)
{
	struct tlink *l;

	while ((l = S.pend.head) != NULL)
		pending_free(TL_ENTRY(l, struct pending, t));
	for (size_t i = 0; i < FWD_BUCKETS; i++)
		while (S.fwtab[i] != NULL)
			fwd_free(S.fwtab[i]);
	while ((l = S.idle.head) != NULL)
		tconn_close(TL_ENTRY(l, struct tconn, idle));
	ev_run_once(0);		/* run the deferred frees */
	cache_free(S.cache);
	mirror_free(S.mirror);
	policy_free(S.pol);
	config_free(S.cfg);
}

int
resolver_run(const struct dnsd_opts *opts, struct moat_config *cfg,
    int udpfd, int tcpfd, int ipcfd)
{
	int sfd;

	S.opts = opts;
	S.cfg = cfg;
	S.pol = policy_new(cfg);
	S.cache = cache_new(cache_bytes(cfg));
	S.mirror = mirror_new(MIRROR_SLOTS);
	S.ipcfd = ipcfd;
	arc4random_buf(&S.fwseed, sizeof(S.fwseed));
	upstreams_set(cfg);
	if (ev_init() == -1 || (sfd = signals_fd()) == -1)
		fatal("event loop");
	S.log_last = ev_now();
	if (fcntl(udpfd, F_SETFL, O_NONBLOCK) == -1 ||
	    fcntl(tcpfd, F_SETFL, O_NONBLOCK) == -1)
		fatal("sockets");
	watch(&S.udp, udpfd, udp_cb);
	watch(&S.tcp, tcpfd, tcp_accept_cb);
	watch(&S.sig, sfd, sig_cb);
	if (ipcfd != -1) {
		if (fcntl(ipcfd, F_SETFL, O_NONBLOCK) == -1)
			fatal("ipc fd");
		watch(&S.ipc, ipcfd, ipc_cb);
	}
	/* Everything is open: from here on only the syscalls of the loop. */
	/* Only a dnsd that re-reads its own file may open files. */
	sandbox_narrow(opts->ipc_fd != -1 && opts->config_fd == -1);
	log_info("resolving for %zu sandboxes, %u upstreams%s",
	    cfg->nsandboxes, S.nups, ipcfd == -1 ? " (no set updates)" : "");
	while (!S.stop) {
		if (ev_run_once(next_timeout()) == -1)
			fatal("epoll_wait");
		expire();
		report_drops();
	}
	stats_log();
	resolver_cleanup();
	return EXIT_OK;
}
