/*
 * metrics.c -- the metrics process: answers Prometheus scrapes on
 * gateway.metrics.listen with the latest text the parent rendered.
 *
 * It runs as its own user with no capabilities, no_new_privs and a
 * seccomp list without open() or socket(): it holds the listening socket
 * the parent bound on the management network and a read-only memory file
 * per rendering (IPC_METRICS), nothing else.  A scraper's bytes are read
 * only to find the end of its request head and whether it asked for
 * /metrics; a slow or silent client is dropped after a few seconds, and
 * at most METRICS_CLIENTS are served at once.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gatewayd.h"
#include "ipc.h"
#include "log.h"
#include "metrics.h"
#include "parent.h"
#include "privdrop.h"
#include "sandbox.h"

#define METRICS_CLIENTS	16
#define METRICS_HEAD_MAX 2048
#define METRICS_DEADLINE_MS 5000

struct mclient {
	int	 fd;		/* -1: free */
	size_t	 len;
	char	 head[METRICS_HEAD_MAX];
	struct timespec since;
};

static struct {
	int	 textfd;	/* latest rendering, or -1 */
	struct mclient c[METRICS_CLIENTS];
} M = { -1, { { 0 } } };

static long
ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1000 +
	    (now.tv_nsec - t->tv_nsec) / 1000000;
}

/* The request head ends at its first blank line; a head that never ends
 * within METRICS_HEAD_MAX is refused. */
enum mreq
metrics_request(const char *head, size_t len)
{
	const char *end;

	if (len >= 4 && memcmp(head, "GET ", 4) != 0 &&
	    memcmp(head, "HEAD", 4) != 0)
		return MREQ_BAD;
	if ((end = memmem(head, len, "\r\n\r\n", 4)) == NULL &&
	    (end = memmem(head, len, "\n\n", 2)) == NULL)
		return len >= METRICS_HEAD_MAX ? MREQ_BAD : MREQ_MORE;
	if ((len >= 13 && (memcmp(head, "GET /metrics ", 13) == 0 ||
	    memcmp(head, "GET /metrics?", 13) == 0)) ||
	    (len >= 6 && memcmp(head, "GET / ", 6) == 0))
		return MREQ_METRICS;
	return MREQ_NOT_FOUND;
}

/* Write within the client's deadline: a scraper that reads slowly is cut
 * off, so it cannot hold this single process (blocking writes, each
 * bounded by SO_SNDTIMEO, and the whole by the deadline). */
static void
write_all(const struct mclient *c, const char *p, size_t n)
{
	int fd = c->fd;
	ssize_t w;

	while (n > 0) {
		if (ms_since(&c->since) > METRICS_DEADLINE_MS)
			return;
		if ((w = write(fd, p, n)) <= 0) {
			if (w == -1 && errno == EINTR)
				continue;
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

static void
answer(struct mclient *c, enum mreq r)
{
	static const char notfound[] = "HTTP/1.0 404 Not Found\r\n"
	    "Content-Type: text/plain\r\nContent-Length: 25\r\n"
	    "Connection: close\r\n\r\nnot found: try /metrics\n";
	static const char bad[] = "HTTP/1.0 400 Bad Request\r\n"
	    "Content-Length: 0\r\nConnection: close\r\n\r\n";
	char hdr[256], buf[8192];
	struct stat st;
	off_t off = 0;
	ssize_t n;
	int fl;

	/* Blocking from here: the answer is small, and a scraper that does
	 * not read it is cut by SO_SNDTIMEO. */
	if ((fl = fcntl(c->fd, F_GETFL)) != -1)
		(void)fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
	if (r == MREQ_BAD) {
		write_all(c, bad, sizeof(bad) - 1);
		return;
	}
	if (r == MREQ_NOT_FOUND || M.textfd == -1 ||
	    fstat(M.textfd, &st) == -1) {
		write_all(c, notfound, sizeof(notfound) - 1);
		return;
	}
	n = snprintf(hdr, sizeof(hdr), "HTTP/1.0 200 OK\r\nContent-Type: "
	    "text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: "
	    "%lld\r\nConnection: close\r\n\r\n", (long long)st.st_size);
	write_all(c, hdr, (size_t)n);
	while (off < st.st_size &&
	    (n = pread(M.textfd, buf, sizeof(buf), off)) > 0) {
		write_all(c, buf, (size_t)n);
		off += n;
	}
}

static void
client_close(struct mclient *c)
{
	close(c->fd);
	c->fd = -1;
	c->len = 0;
}

static void
client_read(struct mclient *c)
{
	enum mreq r;
	ssize_t n;

	n = read(c->fd, c->head + c->len, sizeof(c->head) - c->len);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(c);
		return;
	}
	c->len += (size_t)n;
	if ((r = metrics_request(c->head, c->len)) == MREQ_MORE)
		return;
	answer(c, r);
	client_close(c);
}

static void
accept_one(int lfd)
{
	struct timeval tv = { 1, 0 };	/* one write; the deadline caps all */
	int fd, i;

	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd == -1)
		return;
	for (i = 0; i < METRICS_CLIENTS && M.c[i].fd != -1; i++)
		;
	if (i == METRICS_CLIENTS) {	/* busy: the oldest keeps its slot */
		close(fd);
		return;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	M.c[i].fd = fd;
	M.c[i].len = 0;
	clock_gettime(CLOCK_MONOTONIC, &M.c[i].since);
}

/* A new rendering: keep its descriptor, drop the old one. */
static void
ipc_read(int ipc)
{
	struct ipc_hdr h;
	uint8_t buf[IPC_MAX_PAYLOAD];
	int fds[1];
	size_t nfds = 0;
	char err[128];
	ssize_t n;

	n = ipc_recv_fds(ipc, &h, buf, sizeof(buf), fds, 1, &nfds, err,
	    sizeof(err));
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == 0 && h.type == 0)
		_exit(0);	/* the parent is gone */
	if (n < 0 || h.type != IPC_METRICS || nfds != 1) {
		if (nfds == 1)
			close(fds[0]);
		_exit(1);	/* a malformed message is fatal to us */
	}
	if (M.textfd != -1)
		close(M.textfd);
	M.textfd = fds[0];
}

void
metrics_main(int lfd, int ipc, pid_t parent)
{
	struct pollfd pfd[2 + METRICS_CLIENTS];
	int i;

	signal(SIGPIPE, SIG_IGN);
	if (privdrop(METRICS_USER) == -1)
		_exit(1);
	die_with_parent(parent);
	if (sandbox_narrow(SANDBOX_METRICS) == -1)
		_exit(1);
	for (i = 0; i < METRICS_CLIENTS; i++)
		M.c[i].fd = -1;
	for (;;) {
		pfd[0] = (struct pollfd){ ipc, POLLIN, 0 };
		pfd[1] = (struct pollfd){ lfd, POLLIN, 0 };
		for (i = 0; i < METRICS_CLIENTS; i++)
			pfd[2 + i] = (struct pollfd){ M.c[i].fd, POLLIN, 0 };
		if (poll(pfd, 2 + METRICS_CLIENTS, 1000) == -1 &&
		    errno != EINTR)
			_exit(1);
		if (pfd[0].revents)
			ipc_read(ipc);
		if (pfd[1].revents & POLLIN)
			accept_one(lfd);
		for (i = 0; i < METRICS_CLIENTS; i++) {
			if (M.c[i].fd == -1)
				continue;
			if (pfd[2 + i].revents)
				client_read(&M.c[i]);
			if (M.c[i].fd != -1 &&
			    ms_since(&M.c[i].since) > METRICS_DEADLINE_MS)
				client_close(&M.c[i]);
		}
	}
}
