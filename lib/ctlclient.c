/*
 * ctlclient.c -- see ctlclient.h.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctlclient.h"
#include "log.h"

#define CTLC_MAX_FDS	16

/* Space, '%' and control characters as %XX: a word never holds the
 * separator or the line's end. */
static void
encode_word(FILE *fp, const char *w)
{
	const unsigned char *p = (const unsigned char *)w;

	for (; *p; p++)
		if (*p <= ' ' || *p == '%' || *p == 0x7f)
			fprintf(fp, "%%%02X", *p);
		else
			fputc(*p, fp);
}

char *
ctlc_request(int argc, char *const argv[], size_t *len)
{
	char *req = NULL;
	FILE *fp;
	int i;

	for (i = 0; i < argc; i++)
		if (argv[i][0] == '\0')
			return NULL;
	if ((fp = open_memstream(&req, len)) == NULL)
		fatal("open_memstream");
	for (i = 0; i < argc; i++) {
		if (i > 0)
			fputc(' ', fp);
		encode_word(fp, argv[i]);
	}
	fputc('\n', fp);
	if (fclose(fp) != 0)
		fatal("open_memstream");
	return req;
}

int
ctlc_open(struct ctlc *c, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int e;

	memset(c, 0, sizeof(*c));
	c->fd = c->rfd = -1;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sun.sun_path, path);
	if ((c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(c->fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		e = errno;
		close(c->fd);
		c->fd = -1;
		errno = e;
		return -1;
	}
	return 0;
}

int
ctlc_send(struct ctlc *c, const char *req, size_t len, const int *fds,
    int nfds)
{
	union {
		char		buf[CMSG_SPACE(CTLC_MAX_FDS * sizeof(int))];
		struct cmsghdr	align;
	} cbuf;
	struct iovec iov;
	struct msghdr m;
	struct cmsghdr *cm;
	ssize_t n;

	if (nfds < 0 || nfds > CTLC_MAX_FDS) {
		errno = EINVAL;
		return -1;
	}
	while (len > 0) {
		iov = (struct iovec){ (void *)req, len };
		m = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1 };
		if (nfds > 0) {
			memset(&cbuf, 0, sizeof(cbuf));
			m.msg_control = cbuf.buf;
			m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
			cm = CMSG_FIRSTHDR(&m);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
			memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
		}
		if ((n = sendmsg(c->fd, &m, MSG_NOSIGNAL)) == -1 &&
		    errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		nfds = 0;		/* they went with the first byte */
		req += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A descriptor that came with the answer replaces any earlier one. */
static void
take_fds(struct ctlc *c, struct msghdr *m)
{
	struct cmsghdr *cm;
	size_t i, n;
	int fd;

	for (cm = CMSG_FIRSTHDR(m); cm != NULL; cm = CMSG_NXTHDR(m, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (c->rfd != -1)
				close(c->rfd);
			c->rfd = fd;
		}
	}
}

/* More of the answer into buf: bytes read, 0 at its end, -1. */
static ssize_t
fill(struct ctlc *c, int timeout_ms)
{
	union {
		char		buf[CMSG_SPACE(CTLC_MAX_FDS * sizeof(int))];
		struct cmsghdr	align;
	} cbuf;
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	struct iovec iov = { c->buf, sizeof(c->buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf) };
	ssize_t n;
	int r;

	while ((r = poll(&pfd, 1, timeout_ms)) == -1 && errno == EINTR)
		;
	c->timedout = r == 0;
	if (r <= 0)
		return -1;
	while ((n = recvmsg(c->fd, &m, MSG_CMSG_CLOEXEC)) == -1 &&
	    errno == EINTR)
		;
	if (n > 0)
		take_fds(c, &m);
	c->off = 0;
	c->len = n > 0 ? (size_t)n : 0;
	return n;
}

int
ctlc_getline(struct ctlc *c, int timeout_ms)
{
	size_t n = 0;
	char ch;

	for (;;) {
		if (c->off == c->len && fill(c, timeout_ms) <= 0) {
			if (n == 0)
				return -1;
			break;		/* a last line without its newline */
		}
		ch = c->buf[c->off++];
		if (n + 1 >= c->cap) {
			c->cap = c->cap ? c->cap * 2 : 256;
			c->line = xreallocarray(c->line, c->cap, 1);
		}
		if (ch == '\n')
			break;
		c->line[n++] = ch;
	}
	c->line[n] = '\0';
	return 0;
}

int
ctlc_answer(struct ctlc *c, void (*fn)(const char *, bool, bool, void *),
    void *arg)
{
	bool refused = false;
	int wait = c->first_ms > 0 ? c->first_ms : -1;

	while (ctlc_getline(c, wait) == 0) {
		wait = -1;
		if (strcmp(c->line, "ok") == 0)
			return CTLC_OK;
		/* An error may span lines (a configuration's FILE:LINE
		 * errors, one a line); gatewayd closes after the last. */
		if (strncmp(c->line, "error: ", 7) == 0) {
			refused = true;
			fn(c->line + 7, true, true, arg);
		} else
			fn(c->line, false, refused, arg);
	}
	if (wait != -1 && c->timedout)
		return CTLC_SILENT;
	return refused ? CTLC_REFUSED : CTLC_UNANSWERED;
}

void
ctlc_close(struct ctlc *c)
{
	if (c->fd != -1)
		close(c->fd);
	if (c->rfd != -1)
		close(c->rfd);
	free(c->line);
	c->fd = c->rfd = -1;
	c->line = NULL;
	c->cap = 0;
}
