/*
 * conn.c -- guest connections: accept, first bytes, decision, resolution,
 * dialling exactly the checked address, TLS handshakes; then splice
 * (splice.c) or the HTTP engine (through the conn_app table).
 */
#include <sys/socket.h>
#include <arpa/inet.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>

#include "audit.h"
#include "conn.h"
#include "http.h"
#include "log.h"
#include "policy.h"
#include "kpath.h"
#include "sni.h"
#include "splice.h"
#include "tls.h"

/* linux/netfilter_ipv6/ip6_tables.h, whose other headers clash with
 * the C library's. */
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST	80
#endif

struct proxy proxy;
static struct conn *conns;
static const struct conn_app *app;

static void dial_start(struct conn *);
static void fb_stop(struct conn *);
static void on_connected(struct conn *);
static void splice_start(struct conn *);
static void splice_log(struct conn *);
static void uptls_start(struct conn *);

/* --- lifecycle ---------------------------------------------------------- */

void
conn_init(const struct conn_app *a)
{
	app = a;
}

static void
conn_free(void *arg)
{
	struct conn *c = arg;

	free(c);
}

void
conn_close(struct conn *c)
{
	if (c->closed)
		return;
	log_debug("%s: %s:%u: closed in state %d", c->src,
	    c->host[0] ? c->host : "-", c->port, c->st);
	c->closed = true;
	if (c->st == S_SPLICE)
		splice_log(c);
	dns_cancel(c->dns);
	dns_cancel(c->dns6);
	fb_stop(c);
	tls_wait_cancel(&c->leafwait);
	side_close(&c->g);
	side_close(&c->u);
	splice_close(&c->sp);
	if (c->h != NULL)
		app->free(c->h);
	c->h = NULL;
	if (c->prev)
		c->prev->next = c->next;
	else
		conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	proxy.nconns--;
	ev_defer(conn_free, c);
}

void
conn_set_deadline(struct conn *c, int seconds)
{
	c->deadline = (time_t)(ev_now() / 1000) + seconds;
}

void
conn_tick(void)
{
	struct conn *c, *next;
	time_t now = (time_t)(ev_now() / 1000);

	for (c = conns; c != NULL; c = next) {
		next = c->next;
		if (c->deadline > now)
			continue;
		if (c->st == S_SPLICE && splice_kernel_moved(&c->sp, &c->g,
		    &c->u)) {
			conn_set_deadline(c, TIMEOUT_IDLE_S);
			continue;
		}
		log_debug("%s: %s: timed out in state %d", c->src,
		    c->host[0] ? c->host : "-", c->st);
		conn_close(c);
	}
}

struct rebind {
	const struct moat_config *old;
	const struct moat_sandbox **to;	/* old index -> its new entry */
	signed char	*seen;		/* 0 not yet, 1 same, -1 gone, -2 changed */
	const char *const *changed;	/* sorted: gatewayd says so */
	size_t		 nchanged;
};

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void
pair(const struct moat_sandbox *o, const struct moat_sandbox *n, void *arg)
{
	struct rebind *r = arg;

	r->to[o - r->old->sandboxes] = n;
}

/* Old sandbox i's new entry when gatewayd did not say it changed, else
 * NULL; looked up once per sandbox, and only for those with
 * connections. */
static const struct moat_sandbox *
same_in(struct rebind *r, size_t i)
{
	const char *name = r->old->sandboxes[i].name;

	if (r->seen[i] == 0)
		r->seen[i] = r->to[i] == NULL ? -1 : r->nchanged > 0 &&
		    bsearch(&name, r->changed, r->nchanged,
		    sizeof(*r->changed), name_cmp) != NULL ? -2 : 1;
	return r->seen[i] == 1 ? r->to[i] : NULL;
}

int
conn_rebind(const struct moat_config *old, const struct moat_config *ncfg,
    bool keep, bool cut_read, const char *const *changed, size_t nchanged)
{
	struct rebind r = { old, xcalloc(old->nsandboxes + 1, sizeof(*r.to)),
	    xcalloc(old->nsandboxes + 1, sizeof(*r.seen)), changed,
	    nchanged };
	const struct moat_sandbox *nsb;
	struct conn *c, *next;
	const char *why;
	size_t i;
	int cut = 0;

	admit_pair_sandboxes(old, ncfg, pair, &r);
	for (c = conns; c != NULL; c = next) {
		next = c->next;
		if (c->sb == NULL)
			continue;
		i = (size_t)(c->sb - old->sandboxes);
		if (i >= old->nsandboxes)	/* never: every sb is old's */
			fatalx("connection of an unknown sandbox");
		if ((nsb = same_in(&r, i)) == NULL)
			why = r.seen[i] == -1 ? "sandbox removed" :
			    "sandbox changed";
		else if (c->dialled && !policy_addr_ok(ncfg, nsb, &proxy.host,
		    &c->dial, c->dialport, &why))
			;	/* the same check a new connection gets */
		else if (cut_read && (c->verdict == V_INTERCEPT || c->h != NULL))
			why = "secrets or settings changed";
		else {
			if (keep) {
				c->sb = nsb;
				c->sbname = nsb->name;
			}
			continue;
		}
		audit("cut", "sandbox", c->sbname, "src", c->src, "host",
		    c->host[0] ? c->host : "-", "reason", why, NULL);
		conn_close(c);
		cut++;
	}
	free(r.to);
	free(r.seen);
	return cut;
}

/* A secret's value changed: every connection whose requests the proxy
 * reads for a sandbox holding that secret is cut, so none goes on with the
 * old value; the others keep the generation they started with. */
int
conn_cut_secret(const char *name)
{
	struct conn *c, *next;
	size_t i;
	int cut = 0;

	for (c = conns; c != NULL; c = next) {
		next = c->next;
		if (c->sb == NULL || (c->verdict != V_INTERCEPT && c->h == NULL))
			continue;
		for (i = 0; i < c->sb->secrets.n; i++)
			if (strcmp(c->sb->secrets.v[i], name) == 0)
				break;
		if (i == c->sb->secrets.n)
			continue;
		audit("cut", "sandbox", c->sbname, "src", c->src, "host",
		    c->host[0] ? c->host : "-", "reason", "secret changed",
		    "secret", name, NULL);
		conn_close(c);
		cut++;
	}
	return cut;
}

/* A grant narrowed sb's allow list: its connections to a name the list
 * no longer covers are cut; the rest go on. */
int
conn_cut_allow(const struct moat_sandbox *sb)
{
	struct conn *c, *next;
	int cut = 0;

	for (c = conns; c != NULL; c = next) {
		next = c->next;
		if (c->sb != sb || sb->egress != EGRESS_ALLOWLIST ||
		    (c->host[0] != '\0' && !c->literal &&
		    policy_name_allowed(sb, c->host)))
			continue;
		audit("cut", "sandbox", c->sbname, "src", c->src, "host",
		    c->host[0] ? c->host : "-", "reason", "name no longer "
		    "allowed", NULL);
		conn_close(c);
		cut++;
	}
	return cut;
}

int
conn_count_sandbox(const struct moat_sandbox *sb)
{
	struct conn *c;
	int n = 0;

	for (c = conns; c != NULL; c = c->next)
		n += c->sb == sb;
	return n;
}

/* --- refusals ----------------------------------------------------------- */

void
conn_audit_refuse(struct conn *c, const char *reason)
{
	char port[8];

	snprintf(port, sizeof(port), "%u", c->port);
	audit("refuse", "sandbox", c->sbname, "src", c->src, "host",
	    c->host[0] ? c->host : NULL, "port", c->port ? port : NULL,
	    "reason", reason, NULL);
}

void
conn_refuse_http(struct conn *c, int code, const char *reason)
{
	conn_refuse_http_hdr(c, code, "", reason);
}

/* hdr: more header lines, each ending in CRLF, or "". */
void
conn_refuse_http_hdr(struct conn *c, int code, const char *hdr,
    const char *reason)
{
	buf_free(&c->g.out);		/* nothing half-sent goes after it */
	buf_printf(&c->g.out, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
	    "Content-Length: %zu\r\n%sConnection: close\r\nX-Moat-Refused: %s"
	    "\r\n\r\nmoat: %s\n", code, http_reason(code), strlen(reason) + 7,
	    hdr, reason, reason);
	c->st = S_DRAIN;
	conn_set_deadline(c, 5);
	side_flush(&c->g);
	if (c->g.out.len == 0 || c->g.err)
		conn_close(c);
	else
		side_interest(&c->g, false, true);
}

/* A guest that is mid-TLS (transparent, or after CONNECT's 200) gets a
 * fatal access_denied alert instead. */
static void
refuse_tls(struct conn *c)
{
	static const uint8_t alert[] = { 0x15, 0x03, 0x03, 0x00, 0x02, 0x02,
	    49 };

	(void)send(c->g.fd, alert, sizeof(alert), MSG_NOSIGNAL | MSG_DONTWAIT);
	conn_close(c);
}

static bool
guest_waits_http(const struct conn *c)
{
	if (c->g.ssl != NULL)
		return SSL_is_init_finished(c->g.ssl);
	return !c->tls;
}

void
conn_refuse(struct conn *c, int code, const char *reason)
{
	conn_audit_refuse(c, reason);
	if (guest_waits_http(c))
		conn_refuse_http(c, code, reason);
	else
		refuse_tls(c);
}

/* A refusal of the sandbox's policy.  Where it is a name the sandbox's
 * allow list lacks, or a port it does not open for the name, the guest
 * (an agent reading its own error) is told which sandbox, which name,
 * and who can change that. */
void
conn_refuse_policy(struct conn *c, const char *reason)
{
	/* Room for the whole command: twice a 253-character name and a
	 * 32-character sandbox name, and the reason. */
	char told[2 * 256 + 2 * 33 + 512];
	bool port;

	port = strstr(reason, "allow_ports") != NULL;
	if (c->sb == NULL || c->sb->egress != EGRESS_ALLOWLIST || c->literal ||
	    c->host[0] == '\0' || !hostname_valid(c->host) ||
	    (strstr(reason, "not on the allowlist") == NULL && !port)) {
		conn_refuse(c, 403, reason);
		return;
	}
	if (port)	/* an allowed name, another port */
		snprintf(told, sizeof(told), "sandbox %s may not reach %s on "
		    "port %u (%s); ask the operator: gatewayd ctl allow %s %s "
		    "--ports tcp/%u", c->sbname, c->host, c->port, reason,
		    c->sbname, c->host, c->port);
	else
		snprintf(told, sizeof(told), "sandbox %s may not reach %s (%s); "
		    "ask the operator: gatewayd ctl allow %s %s", c->sbname,
		    c->host, reason, c->sbname, c->host);
	conn_audit_refuse(c, reason);
	if (guest_waits_http(c))
		conn_refuse_http(c, 403, told);
	else
		refuse_tls(c);
}

/* --- accept ------------------------------------------------------------- */

static void side_cb(struct ev *, uint32_t);

/* Mapped IPv4 is judged as the IPv4 it carries. */
static int
sockaddr_to_addr(const struct sockaddr_storage *ss, struct moat_addr *a)
{
	if (addr_from_sockaddr(ss, a) == -1)
		return -1;
	addr_unmap(a);
	return 0;
}

static struct conn *
conn_new(int fd, const struct sockaddr_storage *peer, enum ckind kind)
{
	struct conn *c = xcalloc(1, sizeof(*c));

	c->kind = kind;
	c->g.fd = fd;
	c->g.ev.fd = -1;
	c->u.fd = -1;
	c->u.ev.fd = -1;
	c->g.c = c->u.c = c;
	c->fbev.fd = -1;
	c->g.to_guest = true;
	c->g.who = c->u.who = c->src;
	splice_init(&c->sp);
	sockaddr_to_addr(peer, &c->srcaddr);
	addr_fmt(&c->srcaddr, c->src, sizeof(c->src));
	c->sb = config_sandbox_by_addr(proxy.cfg, &c->srcaddr);
	c->sbname = c->sb ? c->sb->name : "-";
	c->next = conns;
	if (conns)
		conns->prev = c;
	conns = c;
	proxy.nconns++;
	conn_set_deadline(c, TIMEOUT_HEAD_S);
	return c;
}

/* The port of a struct sockaddr_in or sockaddr_in6 (host order). */
static uint16_t
sockaddr_port(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6 ?
	    ((const struct sockaddr_in6 *)ss)->sin6_port :
	    ((const struct sockaddr_in *)ss)->sin_port);
}

/* nft-rules redirects guests' tcp 80/443 to the proxy port (IPv4 and
 * IPv6 alike), so one listener serves both: a connection whose original
 * destination (from conntrack) is not the listener's own address was
 * redirected. */
static enum ckind
classify(struct conn *c, enum ckind kind)
{
	struct sockaddr_storage local;
	struct moat_addr o, l;
	socklen_t sl = sizeof(c->odst), ll = sizeof(local);
	bool v6;

	if (getsockname(c->g.fd, (struct sockaddr *)&local, &ll) < 0)
		return kind == K_TRANSPARENT ? (enum ckind)-1 : K_EXPLICIT;
	v6 = local.ss_family == AF_INET6;
	if (getsockopt(c->g.fd, v6 ? SOL_IPV6 : SOL_IP, v6 ?
	    IP6T_SO_ORIGINAL_DST : SO_ORIGINAL_DST, &c->odst, &sl) < 0 ||
	    c->odst.ss_family != local.ss_family ||
	    addr_from_sockaddr(&c->odst, &o) < 0 ||
	    addr_from_sockaddr(&local, &l) < 0 ||
	    (addr_cmp(&o, &l) == 0 &&
	    sockaddr_port(&c->odst) == sockaddr_port(&local)))
		return kind == K_TRANSPARENT ? (enum ckind)-1 : K_EXPLICIT;
	c->port = sockaddr_port(&c->odst);
	return K_TRANSPARENT;
}

/* A source that is no sandbox -- a host the gateway routes for, on the
 * management network or the uplink -- is served nothing, so it holds
 * nothing either: closed at once, before it can take one of the
 * connections kept for guests.  Audited at most once a second, with how
 * many were closed, so that a flood of them cannot flood the audit log. */
static void
refuse_outsider(struct conn *c)
{
	static uint64_t last;
	static unsigned long n;
	uint64_t now = ev_now() / 1000;
	char count[24];

	n++;
	if (now != last) {
		snprintf(count, sizeof(count), "%lu", n);
		log_warnx("%s: source is not a sandbox: closed (%lu since the "
		    "last note)", c->src, n);
		audit("refuse", "sandbox", "-", "src", c->src, "reason",
		    "source is not a sandbox", "connections", count, NULL);
		last = now;
		n = 0;
	}
	conn_close(c);
}

void
conn_accept(int lfd, enum ckind kind)
{
	struct sockaddr_storage ss;
	struct conn *c;
	socklen_t sl;
	int fd, i;

	for (i = 0; i < 64; i++) {
		sl = sizeof(ss);
		fd = accept4(lfd, (struct sockaddr *)&ss, &sl,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				log_warn("accept");
			return;
		}
		if (proxy.draining || proxy.nconns >= proxy.maxconns) {
			close(fd);
			continue;
		}
		/* Responses go out in several TLS records; without this the
		 * second waits for the guest's delayed ACK (about 40 ms). */
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 },
		    sizeof(int));
		c = conn_new(fd, &ss, kind);
		if (c->sb == NULL) {
			refuse_outsider(c);
			continue;
		}
		if (conn_count_sandbox(c->sb) > proxy.sb_max) {
			log_warnx("%s: sandbox %s has too many connections",
			    c->src, c->sbname);
			conn_close(c);
			continue;
		}
		if ((int)(c->kind = classify(c, kind)) < 0) {
			log_warnx("%s: no original destination", c->src);
			conn_close(c);
			continue;
		}
		c->st = c->kind == K_EXPLICIT ? S_HEAD : S_PEEK;
		if (ev_add(&c->g.ev, fd, EPOLLIN | (c->st == S_PEEK ?
		    EPOLLET : 0), side_cb, &c->g) < 0) {
			conn_close(c);
			continue;
		}
	}
}

/* --- explicit proxy: the first request head ------------------------------ */

static void
connect_request(struct conn *c, const struct http_head *h)
{
	const char *reason;

	if (http_authority(h->target, h->targetlen, c->host, sizeof(c->host),
	    &c->port, 0) < 0 || c->port == 0) {
		c->host[0] = '\0';
		conn_refuse(c, 400, "CONNECT needs host:port");
		return;
	}
	if (c->g.in.len != h->headlen) {
		conn_refuse(c, 400, "data sent before the CONNECT reply");
		return;
	}
	buf_consume(&c->g.in, h->headlen);
	c->verdict = policy_decide(proxy.cfg, c->sb, c->host, c->port, &c->literal,
	    &c->lit, &reason);
	if (c->verdict == V_REFUSE) {
		conn_refuse_policy(c, reason);
		return;
	}
	c->after = AD_CONNECT_OK;
	dial_start(c);
}

static void
h_head(struct conn *c, struct side *s, uint32_t events)
{
	struct http_head h;
	enum http_err e;

	if (s != &c->g)
		return;
	side_fill(&c->g);
	if (c->g.in.len == 0) {
		if (c->g.eof)
			conn_close(c);
		return;
	}
	e = http_parse_request((char *)c->g.in.d + c->g.in.off, c->g.in.len,
	    &h);
	if (e == HTTP_INCOMPLETE) {
		if (c->g.eof)
			conn_close(c);
		return;
	}
	if (e != HTTP_OK) {
		conn_refuse(c, e == HTTP_E_TOOBIG || e == HTTP_E_FIELDS ? 431 : 400,
		    http_strerror(e));
		return;
	}
	if (h.methodlen == 7 && memcmp(h.method, "CONNECT", 7) == 0) {
		connect_request(c, &h);
		return;
	}
	c->st = S_HTTP;		/* plain HTTP: the engine routes it */
	app->start(c, &h);
}

/* --- transparent and after-CONNECT: the ClientHello ------------------------ */

static void
peek_decide(struct conn *c, enum sni_ret r, const char *sni)
{
	const char *reason;

	if (r == SNI_FOUND)
		snprintf(c->host, sizeof(c->host), "%s", sni);
	c->tls = true;
	c->verdict = policy_decide(proxy.cfg, c->sb, c->host[0] ? c->host :
	    NULL, c->port, &c->literal, &c->lit, &reason);
	if (c->verdict == V_REFUSE) {
		conn_refuse_policy(c, reason);
		return;
	}
	c->after = AD_GUEST_TLS;
	dial_start(c);
}

/* After CONNECT's 200: the SNI, when there is one, must name the host the
 * CONNECT named, or a guest could tunnel to one name and speak to another
 * behind the same address. */
static void
peek_connect(struct conn *c, enum sni_ret r, const char *sni)
{
	c->tls = r != SNI_NOT_TLS;
	if (r == SNI_FOUND && !c->literal && strcmp(sni, c->host) != 0) {
		conn_refuse(c, 421, "TLS server name disagrees with CONNECT");
		return;
	}
	if (c->verdict == V_INTERCEPT && r == SNI_NOT_TLS) {
		conn_refuse(c, 403, "not TLS to a host that is intercepted");
		return;
	}
	if (c->verdict == V_INTERCEPT)
		uptls_start(c);
	else
		splice_start(c);
}

static void
h_peek(struct conn *c, struct side *s, uint32_t events)
{
	uint8_t buf[SNI_MAX_HELLO];
	char sni[256] = "";
	enum sni_ret r;
	ssize_t n;

	side_flush(&c->g);
	if (c->g.out.len > 0) {
		side_interest(&c->g, false, true);
		return;
	}
	if (s == &c->u && c->dialled) {
		/* the server speaks first (ssh, smtp): nothing to peek at */
		if (c->verdict == V_SPLICE)
			splice_start(c);
		return;
	}
	n = recv(c->g.fd, buf, sizeof(buf), MSG_PEEK);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		conn_close(c);
		return;
	}
	if (n < 0)
		return;
	r = sni_parse(buf, (size_t)n, sni, sizeof(sni));
	if (r != SNI_NOT_TLS)
		c->tls = true;		/* refusals become TLS alerts */
	c->sni_ok = r == SNI_FOUND && (c->dialled ? strcmp(sni, c->host) == 0 :
	    true);
	if (r == SNI_INCOMPLETE && (size_t)n < sizeof(buf))
		return;		/* edge-triggered: woken by the next bytes */
	if (r == SNI_MALFORMED || r == SNI_INCOMPLETE) {
		conn_refuse(c, 400, "malformed TLS ClientHello");
		return;
	}
	ev_set(&c->g.ev, 0);
	if (c->dialled)
		peek_connect(c, r, sni);
	else if (r == SNI_NOT_TLS) {
		c->st = S_HTTP;		/* transparent plain HTTP */
		app->start(c, NULL);
	} else
		peek_decide(c, r, sni);
}

/* --- resolve, check, dial -------------------------------------------------- */

static int
tcp_connect(struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, one = 1;

	sl = addr_to_sockaddr(&c->dial, c->dialport, &ss);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0 &&
	    errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	c->u.fd = fd;
	if (ev_add(&c->u.ev, fd, EPOLLOUT, side_cb, &c->u) < 0) {
		close(fd);
		c->u.fd = -1;
		return -1;
	}
	return 0;
}

/* The IPv4 attempt of a race: stopped (its timer, its socket). */
static void
fb_stop(struct conn *c)
{
	int fd = c->fbev.fd;

	ev_timer_del(&c->he);
	if (fd >= 0) {
		ev_del(&c->fbev);
		close(fd);
		c->fbev.fd = -1;
	}
	c->fb = FB_NONE;
}

/* An attempt failed: the other one goes on, or, with none left, the
 * guest is told. */
static void
dial_failed(struct conn *c)
{
	if (c->u.fd < 0 && c->fb != FB_WAIT && c->fb != FB_DIAL)
		conn_refuse(c, 502, "upstream connection failed");
}

static void fb_start(void *);
static void resolve_delay(void *);

static void
dial_checked(struct conn *c, const struct moat_addr *a)
{
	char ab[64];

	c->dial = *a;
	c->dialport = c->port;
	c->st = S_DIAL;
	conn_set_deadline(c, TIMEOUT_DIAL_S);
	if (tcp_connect(c) < 0) {
		addr_fmt(a, ab, sizeof(ab));
		if (c->fb == FB_WAIT) {
			/* no IPv6 route (an uplink without IPv6, say): IPv4
			 * at once, and no warning for every connection */
			log_debug("%s: connect %s: %s", c->src, ab,
			    strerror(errno));
			fb_start(c);
			return;
		}
		log_warn("%s: connect %s", c->src, ab);
		conn_refuse(c, 502, "cannot connect upstream");
	}
}

static void
fb_connected(struct ev *e, uint32_t events)
{
	struct conn *c = e->arg;
	socklen_t sl = sizeof(int);
	int err = 0, fd = e->fd;

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0 || err) {
		log_debug("%s: connect %s:%u over IPv4: %s", c->src, c->host,
		    c->port, strerror(err));
		fb_stop(c);
		c->fb = FB_FAILED;
		dial_failed(c);
		return;
	}
	/* IPv4 won: the IPv6 attempt is dropped, IPv4's socket becomes the
	 * upstream. */
	ev_del(&c->fbev);
	c->fbev.fd = -1;
	c->fb = FB_NONE;
	side_close(&c->u);
	c->u.fd = fd;
	c->dial = c->got4;
	if (ev_add(&c->u.ev, fd, 0, side_cb, &c->u) < 0) {
		close(fd);
		c->u.fd = -1;
		conn_refuse(c, 502, "upstream connection failed");
		return;
	}
	log_debug("%s: %s:%u: IPv4 connected first", c->src, c->host, c->port);
	c->dialled = true;
	on_connected(c);
}

/* Timer or IPv6 failure: dial the checked IPv4 address alongside. */
static void
fb_start(void *arg)
{
	struct conn *c = arg;
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, one = 1;

	ev_timer_del(&c->he);
	if (c->fb != FB_WAIT)
		return;
	c->fb = FB_DIAL;
	sl = addr_to_sockaddr(&c->got4, c->port, &ss);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
	if (fd < 0 || (connect(fd, (struct sockaddr *)&ss, sl) < 0 &&
	    errno != EINPROGRESS) ||
	    ev_add(&c->fbev, fd, EPOLLOUT, fb_connected, c) < 0) {
		if (fd >= 0)
			close(fd);
		c->fbev.fd = -1;
		c->fb = FB_FAILED;
		dial_failed(c);
	}
}

/* Both answers in (or the resolution delay over): IPv6 first when the
 * sandbox has it, with IPv4 to follow; else IPv4. */
static void
resolved(struct conn *c)
{
	if (c->closed)
		return;
	if (!c->done4 || !c->done6) {
		if (c->has4 || c->has6)
			ev_timer_set(&c->he, ev_now() + HE_RESOLVE_MS,
			    resolve_delay, c);
		return;
	}
	ev_timer_del(&c->he);
	if (!c->has6 && !c->has4) {
		conn_refuse(c, 502, c->err4 ? c->err4 : "no address");
		return;
	}
	if (!c->has6) {
		dial_checked(c, &c->got4);
		return;
	}
	if (c->has4)
		c->fb = FB_WAIT;
	dial_checked(c, &c->got6);
	if (!c->closed && c->fb == FB_WAIT)
		ev_timer_set(&c->he, ev_now() + HE_DELAY_MS, fb_start, c);
}

static void
resolve_delay(void *arg)
{
	struct conn *c = arg;

	if (!c->done4) {
		dns_cancel(c->dns);
		c->dns = NULL;
		c->done4 = true;
	}
	if (!c->done6) {
		dns_cancel(c->dns6);
		c->dns6 = NULL;
		c->done6 = true;
	}
	resolved(c);
}

/* Every answer is checked: one address the sandbox may not reach refuses
 * the name, which is what defeats DNS rebinding between check and
 * connect.  False when it refused. */
static bool
answer_ok(struct conn *c, const struct moat_addr *a, size_t n)
{
	const char *why;
	char msg[96];
	size_t i;

	for (i = 0; i < n; i++)
		if (!policy_addr_ok(proxy.cfg, c->sb, &proxy.host, &a[i],
		    c->port, &why)) {
			snprintf(msg, sizeof(msg), "name resolves to %s", why);
			conn_refuse(c, 403, msg);
			return false;
		}
	return true;
}

static void
dns_done(void *arg, const char *err, const struct moat_addr *a, size_t n)
{
	struct conn *c = arg;

	c->dns = NULL;
	c->done4 = true;
	c->err4 = err;
	if (err == NULL && !answer_ok(c, a, n))
		return;
	if ((c->has4 = err == NULL))
		c->got4 = a[0];
	resolved(c);
}

/* AAAA: no answer is no IPv6, not a refusal. */
static void
dns6_done(void *arg, const char *err, const struct moat_addr *a, size_t n)
{
	struct conn *c = arg;

	c->dns6 = NULL;
	c->done6 = true;
	if (err == NULL && !answer_ok(c, a, n))
		return;
	if ((c->has6 = err == NULL))
		c->got6 = a[0];
	resolved(c);
}

static void
dial_start(struct conn *c)
{
	struct moat_addr a;
	const char *why;

	fb_stop(c);
	c->st = S_DIAL;
	conn_set_deadline(c, TIMEOUT_DIAL_S);
	if (c->literal || c->host[0] == '\0') {
		if (c->literal)
			a = c->lit;
		else if (sockaddr_to_addr(&c->odst, &a) < 0) {
			conn_refuse(c, 400, "no destination");
			return;
		}
		if (!policy_addr_ok(proxy.cfg, c->sb, &proxy.host, &a,
		    c->port, &why)) {
			conn_refuse(c, 403, why);
			return;
		}
		dial_checked(c, &a);
		return;
	}
	/* AAAA only for a sandbox with IPv6: others never dial it. */
	c->has4 = c->has6 = c->done4 = false;
	c->done6 = !config_sandbox_addr6(proxy.cfg, c->sb, &a);
	c->err4 = NULL;
	c->dns = dns_lookup(c->host, false, dns_done, c);
	if (!c->closed && !c->done6)
		c->dns6 = dns_lookup(c->host, true, dns6_done, c);
}

static void
h_dial(struct conn *c, struct side *s, uint32_t events)
{
	socklen_t sl = sizeof(int);
	int err = 0;

	if (s != &c->u) {
		/* the guest hung up or sent early: look at it later */
		ev_set(&c->g.ev, 0);
		return;
	}
	if (getsockopt(c->u.fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0 || err) {
		errno = err;
		log_debug("%s: connect %s:%u: %s", c->src, c->host, c->port,
		    strerror(err));
		side_close(&c->u);
		if (c->fb == FB_WAIT)
			fb_start(c);	/* IPv6 failed: IPv4 at once */
		else
			dial_failed(c);
		return;
	}
	fb_stop(c);			/* the first to connect wins */
	c->dialled = true;
	ev_set(&c->u.ev, 0);
	on_connected(c);
}

static void
on_connected(struct conn *c)
{
	conn_set_deadline(c, TIMEOUT_IDLE_S);
	switch (c->after) {
	case AD_CONNECT_OK:
		buf_printf(&c->g.out, "HTTP/1.1 200 Connection established"
		    "\r\n\r\n");
		c->tls = true;	/* from now on refusals are TLS alerts */
		c->st = S_PEEK;
		conn_set_deadline(c, TIMEOUT_HEAD_S);
		side_flush(&c->g);
		ev_set(&c->g.ev, EPOLLIN | EPOLLET | (c->g.out.len ?
		    EPOLLOUT : 0));
		if (c->verdict == V_SPLICE)
			ev_set(&c->u.ev, EPOLLIN);
		break;
	case AD_GUEST_TLS:
		if (c->verdict == V_INTERCEPT)
			uptls_start(c);
		else
			splice_start(c);
		break;
	case AD_HTTP:
		if (c->g.ssl != NULL) {
			uptls_start(c);	/* intercepted: upstream is TLS too */
			break;
		}
		c->st = S_HTTP;
		app->pump(c);
		break;
	}
}

int
conn_route(struct conn *c, const char *host, uint16_t port)
{
	const char *reason;

	if (c->u.fd >= 0 && c->dialled && !c->u.eof && !c->u.err &&
	    (c->g.ssl == NULL || c->u.ssl != NULL) &&
	    strcmp(host, c->host) == 0 && port == c->port)
		return 1;
	side_close(&c->u);
	c->dialled = false;
	snprintf(c->host, sizeof(c->host), "%s", host);
	c->port = port;
	c->verdict = policy_decide(proxy.cfg, c->sb, c->host[0] ? c->host :
	    NULL, c->port, &c->literal, &c->lit, &reason);
	if (c->verdict == V_REFUSE) {
		conn_refuse_policy(c, reason);
		return -1;
	}
	c->after = AD_HTTP;
	dial_start(c);
	return c->closed ? -1 : 0;
}

/* --- TLS handshakes ------------------------------------------------------ */

static int
handshake(struct side *s)
{
	int r;

	s->want_r = s->want_w = false;
	if ((r = SSL_do_handshake(s->ssl)) == 1)
		return 1;
	switch (SSL_get_error(s->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		ev_set(&s->ev, EPOLLIN);
		return 0;
	case SSL_ERROR_WANT_WRITE:
		ev_set(&s->ev, EPOLLOUT);
		return 0;
	default:
		return -1;
	}
}

static void guesttls_start(struct conn *);

/*
 * What an upstream TLS session may be resumed under: the sandbox, the
 * host name (verified, and sent as the server name unless an address),
 * the port, and the secrets bound to that host for that sandbox.  NULL
 * (no resumption) without a sandbox, or when it does not fit.
 */
static const char *
session_key(const struct conn *c, char *buf, size_t size)
{
	const struct moat_config *cfg = proxy.cfg;
	size_t i, len;
	int n;

	if (c->sb == NULL || c->sbname == NULL)
		return NULL;
	n = snprintf(buf, size, "%s\n%s\n%u\n", c->sbname, c->host,
	    (unsigned)c->port);
	if (n < 0 || (size_t)n >= size)
		return NULL;
	len = (size_t)n;
	for (i = 0; cfg != NULL && i < cfg->nsecrets; i++) {
		if (!policy_secret_bound(c->sb, &cfg->secrets[i], c->host))
			continue;
		n = snprintf(buf + len, size - len, "%s,",
		    cfg->secrets[i].name);
		if (n < 0 || (size_t)n >= size - len)
			return NULL;
		len += (size_t)n;
	}
	return buf;
}

static void
uptls_start(struct conn *c)
{
	char key[640];

	ev_set(&c->g.ev, 0);
	c->st = S_UPTLS;
	conn_set_deadline(c, TIMEOUT_DIAL_S);
	if ((c->u.ssl = tls_upstream_ssl(c->u.fd, c->host,
	    session_key(c, key, sizeof(key)))) == NULL) {
		conn_refuse(c, 502, "cannot set up upstream TLS");
		return;
	}
	ev_set(&c->u.ev, EPOLLOUT);
}

static void
h_uptls(struct conn *c, struct side *s, uint32_t events)
{
	long v;
	int r;

	if (s != &c->u)
		return;
	if ((r = handshake(&c->u)) == 0)
		return;
	tls_upstream_done(c->u.ssl, r > 0);
	if (r < 0) {
		v = SSL_get_verify_result(c->u.ssl);
		log_info("%s: %s: upstream TLS failed: %s", c->src, c->host,
		    v != X509_V_OK ? X509_verify_cert_error_string(v) :
		    tls_errstr());
		conn_refuse(c, 502, v != X509_V_OK ? "upstream certificate not "
		    "verified" : "upstream TLS handshake failed");
		return;
	}
	log_debug("%s: %s: upstream TLS %s, %s", c->src, c->host,
	    SSL_session_reused(c->u.ssl) ? "resumed" : "in full",
	    tls_ktls_name(c->u.ssl));
	ev_set(&c->u.ev, 0);
	if (c->g.ssl == NULL)
		guesttls_start(c);
	else {
		c->st = S_HTTP;		/* a re-dial inside the engine */
		app->pump(c);
	}
}

static void
leaf_ready(struct tls_wait *w, int ok)
{
	struct conn *c = (struct conn *)((char *)w -
	    offsetof(struct conn, leafwait));

	if (c->closed)
		return;
	if (!ok) {
		log_warnx("%s: %s: no leaf from the signer", c->src, c->host);
		refuse_tls(c);
		return;
	}
	guesttls_start(c);
}

/* The guest's handshake needs the host's leaf: at once from the cache, or
 * later from the signer while this connection waits in S_SIGNING and the
 * others go on. */
static void
guesttls_start(struct conn *c)
{
	int r;

	c->st = S_GUESTTLS;
	conn_set_deadline(c, TIMEOUT_HEAD_S);
	c->leafwait.done = leaf_ready;
	if ((r = tls_leaf_want(c->host, &c->leafwait, c->sbname)) == 0) {
		c->st = S_SIGNING;
		ev_set(&c->g.ev, 0);
		return;
	}
	if (r < 0 || (c->g.ssl = tls_guest_ssl(c->g.fd, c->host)) == NULL) {
		log_warnx("%s: %s: cannot make a leaf: %s", c->src, c->host,
		    tls_errstr());
		refuse_tls(c);
		return;
	}
	ev_set(&c->g.ev, EPOLLIN);
}


static void
h_guesttls(struct conn *c, struct side *s, uint32_t events)
{
	int r;

	if (s != &c->g)
		return;
	if ((r = handshake(&c->g)) == 0)
		return;
	if (r < 0) {
		log_debug("%s: %s: guest TLS handshake failed: %s", c->src,
		    c->host, tls_errstr());
		conn_close(c);
		return;
	}
	tls_guest_done(c->g.ssl);
	log_debug("%s: %s: guest TLS, %s", c->src, c->host,
	    tls_ktls_name(c->g.ssl));
	c->st = S_HTTP;
	conn_set_deadline(c, TIMEOUT_IDLE_S);
	app->start(c, NULL);
}

/* --- splice: bytes through, undecrypted (splice.c) ------------------------ */

static void
splice_run(struct conn *c)
{
	if (splice_pump(&c->sp, &c->g, &c->u) < 0) {
		conn_close(c);
		return;
	}
	conn_set_deadline(c, TIMEOUT_IDLE_S);
}

static void
splice_wake(void *arg)
{
	struct conn *c = arg;

	if (!c->closed)
		splice_run(c);
}

static void
splice_start(struct conn *c)
{
	if (splice_open(&c->sp) < 0) {
		conn_close(c);
		return;
	}
	/* The head's buffers, once empty, are not needed again: an idle
	 * tunnel then costs its struct and two sockets. */
	if (c->g.in.len == 0)
		buf_free(&c->g.in);
	if (c->g.out.len == 0)
		buf_free(&c->g.out);
	if (c->u.in.len == 0)
		buf_free(&c->u.in);
	if (c->u.out.len == 0)
		buf_free(&c->u.out);
	c->st = S_SPLICE;
	c->g.rd_ready = c->u.rd_ready = true;
	conn_set_deadline(c, TIMEOUT_IDLE_S);
	splice_run(c);
	/* What was queued is through: the kernel takes the rest. */
	if (!c->closed && splice_kernel(&c->sp, &c->g, &c->u, splice_wake, c))
		log_debug("%s: %s:%u: tunnel in the kernel", c->src,
		    c->host[0] ? c->host : "-", c->port);
}

/* The bytes each way, counted by the sockets whichever path carried
 * them (the guest's include what it sent before the tunnel began). */
static void
splice_log(struct conn *c)
{
	uint64_t out, in;

	splice_bytes(&c->sp, &c->g, &c->u, &out, &in);
	log_debug("%s: %s:%u: tunnel closed (%s): %llu bytes out, %llu in",
	    c->src, c->host[0] ? c->host : "-", c->port,
	    c->sp.kernel ? "kernel" : "splice", (unsigned long long)out,
	    (unsigned long long)in);
}

static void
h_splice(struct conn *c, struct side *s, uint32_t events)
{
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		s->rd_ready = true;
	splice_run(c);
}

static void
h_http(struct conn *c, struct side *s, uint32_t events)
{
	app->pump(c);
}

void
conn_budget_wait(struct conn *c)
{
	c->st = S_BUDGET;
	ev_set(&c->g.ev, 0);
	ev_set(&c->u.ev, 0);
}

void
conn_budget_answer(struct conn *c)
{
	if (c->closed || c->st != S_BUDGET)
		return;
	c->st = S_HTTP;
	app->pump(c);
}

/* S_SIGNING and S_BUDGET: nothing to do until the other process answers,
 * and nothing is asked of either side, but a hangup or an error is still
 * reported (epoll always does), and would be again on every turn of the
 * loop.  A guest gone that way cannot take an answer: it closes.  An
 * upstream gone is closed; the request dials again when it goes on. */
static void
h_waiting(struct conn *c, struct side *s, uint32_t events)
{
	if (!(events & (EPOLLERR | EPOLLHUP)))
		return;
	if (s == &c->g) {
		conn_close(c);
		return;
	}
	side_close(&c->u);
	c->dialled = false;
}

static void
h_tunnel(struct conn *c, struct side *s, uint32_t events)
{
	app->tunnel(c);
}

static void
h_drain(struct conn *c, struct side *s, uint32_t events)
{
	if (s != &c->g)
		return;
	side_flush(&c->g);
	if (c->g.out.len == 0 || c->g.err)
		conn_close(c);
}

typedef void (*state_fn)(struct conn *, struct side *, uint32_t);

static const state_fn handlers[S_NSTATES] = {
	[S_HEAD] = h_head,
	[S_PEEK] = h_peek,
	[S_DIAL] = h_dial,
	[S_UPTLS] = h_uptls,
	[S_SIGNING] = h_waiting,
	[S_GUESTTLS] = h_guesttls,
	[S_SPLICE] = h_splice,
	[S_HTTP] = h_http,
	[S_BUDGET] = h_waiting,
	[S_TUNNEL] = h_tunnel,
	[S_DRAIN] = h_drain,
};

static void
side_cb(struct ev *e, uint32_t events)
{
	struct side *s = e->arg;
	struct conn *c = s->c;

	if (!c->closed)
		handlers[c->st](c, s, events);
}
