/*
 * metrics.c -- the metrics process: answers Prometheus scrapes on
 * gateway.metrics.listen with the latest text the parent rendered.
 *
 * It runs as its own user with no capabilities, no_new_privs and a
 * seccomp list without open() or socket(): it holds the listening socket
 * the parent bound on the management network and a read-only memory file
 * per rendering (IPC_METRICS), nothing else.  A scraper's bytes are read
 * only to find the end of its request head and what it asks for.
 *
 * No client can hold the process or keep a scraper out: every socket is
 * non-blocking on lib/ev; a source outside metrics.allow is closed as it
 * is accepted; one address holds at most METRICS_PER_SOURCE of the
 * METRICS_CLIENTS slots, the scrapers metrics.allow names one by one have
 * METRICS_RESERVED slots of their own, and a connection that has not sent
 * its request head within METRICS_HEAD_MS (or gives way to a newer one
 * when every slot is taken), or not taken its answer within
 * METRICS_DEADLINE_MS, is closed.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ev.h"
#include "../gatewayd.h"
#include "ipc.h"
#include "log.h"
#include "metrics.h"
#include "parent.h"
#include "privdrop.h"
#include "sandbox.h"

#define METRICS_HEAD_MS		2000	/* to send the request head */
#define METRICS_DEADLINE_MS	5000	/* for the whole exchange */
#define METRICS_ACCEPTS		64	/* per turn of the loop */
#define METRICS_BUF		8192

/* One rendering, shared by the answers still sending it. */
struct mtext {
	int		 fd;
	off_t		 size;
	unsigned	 refs;
};

struct mclient {
	struct ev	 ev;
	struct ev_timer	 timer;
	struct mtext	*text;		/* what it is being sent, or NULL */
	off_t		 textoff;	/* next byte of text to read */
	size_t		 len;		/* bytes in buf */
	size_t		 off;		/* of them, sent */
	char		 buf[METRICS_BUF];
};

static struct {
	struct ev	 listen, ipc;
	struct mtext	*text;		/* the latest rendering, or NULL */
	const struct moat_prefix *allow;
	size_t		 nallow;
	struct mslot	 slot[METRICS_CLIENTS];
	struct mclient	 c[METRICS_CLIENTS];
} M;

static void
text_put(struct mtext *t)
{
	if (t != NULL && --t->refs == 0) {
		close(t->fd);
		free(t);
	}
}

/* --- the request head ---------------------------------------------------- */

static bool
is_token(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] < 'A' || p[i] > 'Z')
			return false;
	return n > 0 && n <= 16;
}

/* A pure function of the bytes so far: the head ends at its first blank
 * line, and its first line is METHOD SP TARGET SP HTTP/1.x.  A head that
 * does not end within METRICS_HEAD_MAX is refused. */
enum mreq
metrics_request(const char *head, size_t len)
{
	const char *end, *eol, *sp1, *sp2, *path_end;
	size_t mlen, plen;

	if ((end = memmem(head, len, "\r\n\r\n", 4)) == NULL &&
	    (end = memmem(head, len, "\n\n", 2)) == NULL)
		return len >= METRICS_HEAD_MAX ? MREQ_BAD : MREQ_MORE;
	if ((size_t)(end - head) >= METRICS_HEAD_MAX)
		return MREQ_BAD;
	eol = memchr(head, '\n', len);	/* there is one, at end + 1 at most */
	if (eol > head && eol[-1] == '\r')
		eol--;
	if ((sp1 = memchr(head, ' ', (size_t)(eol - head))) == NULL ||
	    (sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1))) == NULL ||
	    sp2 == sp1 + 1 || eol - sp2 != 9 ||
	    memcmp(sp2 + 1, "HTTP/1.", 7) != 0 || sp2[8] < '0' || sp2[8] > '9' ||
	    !is_token(head, (size_t)(sp1 - head)) ||
	    memchr(sp1 + 1, '\0', (size_t)(sp2 - sp1 - 1)) != NULL)
		return MREQ_BAD;
	mlen = (size_t)(sp1 - head);
	if (!(mlen == 3 && memcmp(head, "GET", 3) == 0) &&
	    !(mlen == 4 && memcmp(head, "HEAD", 4) == 0))
		return MREQ_NOT_ALLOWED;
	if ((path_end = memchr(sp1 + 1, '?', (size_t)(sp2 - sp1 - 1))) == NULL)
		path_end = sp2;
	plen = (size_t)(path_end - sp1 - 1);
	if (plen != 8 || memcmp(sp1 + 1, "/metrics", 8) != 0)
		return MREQ_NOT_FOUND;
	return mlen == 3 ? MREQ_METRICS : MREQ_HEAD;
}

/* --- who gets a slot ----------------------------------------------------- */

static bool
allowed(const struct moat_prefix *allow, size_t nallow,
    const struct moat_addr *src, bool *scraper)
{
	size_t i;
	bool in = false;

	*scraper = false;
	for (i = 0; i < nallow; i++) {
		if (!prefix_contains(&allow[i], src))
			continue;
		in = true;
		if (allow[i].plen == (src->family == AF_INET ? 32 : 128))
			*scraper = true;
	}
	return nallow == 0 || in;
}

int
metrics_admit(const struct mslot *s, size_t n, const struct moat_prefix *allow,
    size_t nallow, const struct moat_addr *src, enum madmit *why)
{
	size_t i, first, mine = 0;
	int pick = -1, oldest = -1;
	bool scraper;

	*why = MADMIT_OK;
	if (!allowed(allow, nallow, src, &scraper)) {
		*why = MADMIT_SOURCE;
		return -1;
	}
	for (i = 0; i < n; i++)
		if (s[i].used && addr_eq(&s[i].src, src))
			mine++;
	if (mine >= METRICS_PER_SOURCE) {
		*why = MADMIT_PER_SOURCE;
		return -1;
	}
	/* A scraper looks in its reserved slots first, so that the shared
	 * ones stay for everyone else. */
	first = n > METRICS_RESERVED ? n - METRICS_RESERVED : 0;
	for (i = 0; i < n; i++) {
		size_t k = scraper ? (first + i) % n : i;

		if (!scraper && k >= first)
			break;
		if (!s[k].used) {
			pick = (int)k;
			break;
		}
		if (s[k].reading && (oldest == -1 ||
		    s[k].since < s[oldest].since))
			oldest = (int)k;
	}
	if (pick == -1)
		pick = oldest;
	if (pick == -1)
		*why = MADMIT_FULL;
	return pick;
}

/* --- one client ----------------------------------------------------------- */

static void
client_close(struct mclient *c)
{
	size_t i = (size_t)(c - M.c);
	int fd = c->ev.fd;

	ev_del(&c->ev);
	ev_timer_del(&c->timer);
	if (fd != -1)
		close(fd);
	text_put(c->text);
	c->text = NULL;
	c->len = c->off = 0;
	M.slot[i].used = false;
}

static void
client_deadline(void *arg)
{
	client_close(arg);
}

/* Send what is in buf, then the text, as far as the socket takes it. */
static void
client_write(struct mclient *c)
{
	ssize_t n;

	for (;;) {
		if (c->off == c->len && c->text != NULL &&
		    c->textoff < c->text->size) {
			n = pread(c->text->fd, c->buf, sizeof(c->buf),
			    c->textoff);
			if (n <= 0)
				break;
			c->textoff += n;
			c->len = (size_t)n;
			c->off = 0;
		}
		if (c->off == c->len)
			break;
		n = write(c->ev.fd, c->buf + c->off, c->len - c->off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN) {
			ev_set(&c->ev, EPOLLOUT);
			return;
		}
		if (n <= 0)
			break;
		c->off += (size_t)n;
	}
	client_close(c);
}

static void
answer(struct mclient *c, enum mreq r)
{
	static const char *const status[] = {
		[MREQ_NOT_FOUND] = "404 Not Found",
		[MREQ_NOT_ALLOWED] = "405 Method Not Allowed",
		[MREQ_BAD] = "400 Bad Request",
	};
	static const char *const body[] = {
		[MREQ_NOT_FOUND] = "not found: try /metrics\n",
		[MREQ_NOT_ALLOWED] = "only GET /metrics\n",
		[MREQ_BAD] = "bad request\n",
	};
	int n;

	if ((r == MREQ_METRICS || r == MREQ_HEAD) && M.text == NULL)
		n = snprintf(c->buf, sizeof(c->buf), "HTTP/1.0 503 Service "
		    "Unavailable\r\nContent-Type: text/plain\r\nContent-Length: "
		    "17\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
		    "not rendered yet\n");
	else if (r == MREQ_METRICS || r == MREQ_HEAD) {
		n = snprintf(c->buf, sizeof(c->buf), "HTTP/1.0 200 OK\r\n"
		    "Content-Type: text/plain; version=0.0.4; charset=utf-8"
		    "\r\nContent-Length: %lld\r\nConnection: close\r\n\r\n",
		    (long long)M.text->size);
		if (r == MREQ_METRICS) {
			c->text = M.text;
			c->text->refs++;
			c->textoff = 0;
		}
	} else
		n = snprintf(c->buf, sizeof(c->buf), "HTTP/1.0 %s\r\n%s"
		    "Content-Type: text/plain\r\nContent-Length: %zu\r\n"
		    "Connection: close\r\n\r\n%s", status[r],
		    r == MREQ_NOT_ALLOWED ? "Allow: GET, HEAD\r\n" : "",
		    strlen(body[r]), body[r]);
	c->len = (size_t)n;
	c->off = 0;
	M.slot[c - M.c].reading = false;
	ev_timer_set(&c->timer, M.slot[c - M.c].since + METRICS_DEADLINE_MS,
	    client_deadline, c);
	client_write(c);
}

static void
client_event(struct ev *e, uint32_t events)
{
	struct mclient *c = e->arg;
	enum mreq r;
	ssize_t n;

	if (!M.slot[c - M.c].reading) {
		client_write(c);
		return;
	}
	n = read(e->fd, c->buf + c->len, METRICS_HEAD_MAX - c->len);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(c);
		return;
	}
	c->len += (size_t)n;
	if ((r = metrics_request(c->buf, c->len)) != MREQ_MORE)
		answer(c, r);
	(void)events;
}

/* -1 when there is nothing more to accept. */
static int
accept_one(int lfd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct moat_addr src;
	enum madmit why;
	int fd, i;

	if ((fd = accept4(lfd, (struct sockaddr *)&ss, &sl,
	    SOCK_CLOEXEC | SOCK_NONBLOCK)) == -1)
		return errno == EINTR || errno == ECONNABORTED ? 0 : -1;
	if (addr_from_sockaddr(&ss, &src) == -1) {
		close(fd);
		return 0;
	}
	(void)addr_unmap(&src);
	if ((i = metrics_admit(M.slot, METRICS_CLIENTS, M.allow, M.nallow,
	    &src, &why)) == -1) {
		close(fd);
		return 0;
	}
	if (M.slot[i].used)		/* the oldest unfinished one gives way */
		client_close(&M.c[i]);
	if (ev_add(&M.c[i].ev, fd, EPOLLIN, client_event, &M.c[i]) == -1) {
		close(fd);
		return 0;
	}
	M.slot[i] = (struct mslot){ true, true, src, ev_now() };
	M.c[i].len = M.c[i].off = 0;
	ev_timer_set(&M.c[i].timer, ev_now() + METRICS_HEAD_MS,
	    client_deadline, &M.c[i]);
	return 0;
}

static void
listen_event(struct ev *e, uint32_t events)
{
	int i;

	(void)events;
	for (i = 0; i < METRICS_ACCEPTS; i++)
		if (accept_one(e->fd) == -1)
			break;
}

/* A new rendering: keep its descriptor; the old one goes once the
 * answers sending it are done. */
static void
ipc_event(struct ev *e, uint32_t events)
{
	struct ipc_hdr h;
	uint8_t buf[IPC_MAX_PAYLOAD];
	struct stat st;
	int fds[1];
	size_t nfds = 0;
	char err[128];
	ssize_t n;

	(void)events;
	n = ipc_recv_fds(e->fd, &h, buf, sizeof(buf), fds, 1, &nfds, err,
	    sizeof(err));
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == 0 && h.type == 0)
		_exit(0);	/* the parent is gone */
	if (n < 0 || h.type != IPC_METRICS || nfds != 1 ||
	    fstat(fds[0], &st) == -1) {
		if (nfds == 1)
			close(fds[0]);
		_exit(1);	/* a malformed message is fatal to us */
	}
	text_put(M.text);
	M.text = xcalloc(1, sizeof(*M.text));
	*M.text = (struct mtext){ fds[0], st.st_size, 1 };
}

void
metrics_main(int lfd, int ipc, pid_t parent, const struct moat_prefix *allow,
    size_t nallow)
{
	int fl, i;

	signal(SIGPIPE, SIG_IGN);
	M.allow = allow;	/* the parent's config, ours since the fork */
	M.nallow = nallow;
	for (i = 0; i < METRICS_CLIENTS; i++)
		M.c[i].ev.fd = -1;
	if ((fl = fcntl(lfd, F_GETFL)) == -1 ||
	    fcntl(lfd, F_SETFL, fl | O_NONBLOCK) == -1 || ev_init() == -1 ||
	    ev_add(&M.listen, lfd, EPOLLIN, listen_event, NULL) == -1 ||
	    ev_add(&M.ipc, ipc, EPOLLIN, ipc_event, NULL) == -1)
		_exit(1);
	if (privdrop(METRICS_USER) == -1)
		_exit(1);
	die_with_parent(parent);
	if (sandbox_narrow(SANDBOX_METRICS) == -1)
		_exit(1);
	for (;;)
		if (ev_run_once(-1) == -1)
			_exit(1);
}
