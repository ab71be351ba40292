/*
 * control.c -- the control process.  User moat-ctl, no capabilities,
 * no_new_privs, seccomp without open() or socket(); forked by the parent,
 * which binds the control socket (mode 0660, group moat) and hands it
 * over.  The control process accepts clients, notes their SO_PEERCRED,
 * reads and parses their request lines, and sends the parent one typed
 * IPC_CTL_REQ per request with the client's connection attached, so that
 * the parent can read the peer's credentials itself.  The parent decides
 * everything (who may see and act on what) and answers with IPC_CTL_REPLY
 * chunks, which go to the client here.  Writes never block: a client that
 * cannot keep up is dropped.  Nor can clients hold the process: each has
 * CTL_REQUEST_MS to send its request, and the slots are shared out per
 * uid with some kept for root (ctlproc_slot_for).
 *
 * Protocol: the client sends one line "VERB [--json] [ARGS]", words
 * percent-encoded (space, '%' and control characters as %XX); the answer
 * is body lines and one terminal line, "ok" or "error: MESSAGE".  "secret
 * set" is followed by one more line, the secret's value, which is wiped
 * from the buffer as soon as it is sent on.  A client may attach up to
 * IPC_CTL_MAX_FDS descriptors (SCM_RIGHTS) to its request; a reply may
 * carry one back.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ev.h"
#include "hex.h"
#include "control.h"
#include "parent.h"
#include "privdrop.h"
#include "sandbox.h"

/* --- parsing ------------------------------------------------------------ */

/* Decode %XX in place; -1 on a malformed escape or a decoded NUL. */
static int
word_decode(char *s)
{
	char *o = s;
	int hi, lo;

	for (; *s; s++) {
		if (*s != '%') {
			*o++ = *s;
			continue;
		}
		if ((hi = hex_digit(s[1])) == -1 || (lo = hex_digit(s[2])) == -1 ||
		    (hi | lo) == 0)
			return -1;
		*o++ = (char)(hi << 4 | lo);
		s += 2;
	}
	*o = '\0';
	return 0;
}

/* "secret set ..." is followed by the value's line. */
static bool
wants_body(const char *line)
{
	size_t n = strcspn(line, " \t");

	return n == 6 && strncmp(line, "secret", 6) == 0 &&
	    strncmp(line + 6, " set", 4) == 0;
}

/* The words of line into m->data: 0, or -1 with the reply in err. */
static int
split_words(char *line, struct ipc_ctl_req *m, size_t room, size_t *used,
    char *err, size_t errlen)
{
	char *tok, *save = NULL;
	size_t n;

	*used = 0;
	for (tok = strtok_r(line, " \t", &save); tok != NULL;
	    tok = strtok_r(NULL, " \t", &save)) {
		if (word_decode(tok) == -1) {
			snprintf(err, errlen, "error: malformed request\n");
			return -1;
		}
		if (strcmp(tok, "--json") == 0) {
			m->json = 1;
			continue;
		}
		n = strlen(tok) + 1;
		if (m->argc == IPC_CTL_MAX_ARGS || n > room - *used) {
			snprintf(err, errlen, "error: too many arguments\n");
			return -1;
		}
		memcpy(m->data + *used, tok, n);
		*used += n;
		m->argc++;
	}
	return 0;
}

int
ctl_parse(char *buf, size_t len, bool full, struct ipc_ctl_req *m,
    size_t room, size_t *mlen, char *err, size_t errlen)
{
	char *nl, *end = NULL, *body = NULL;
	size_t used, blen;

	memset(m, 0, sizeof(*m));
	room -= sizeof(*m);
	if ((nl = memchr(buf, '\n', len)) == NULL ||
	    (wants_body(buf) && (end = memchr(nl + 1, '\n',
	    len - (size_t)(nl + 1 - buf))) == NULL)) {
		if (!full)
			return 1;
		snprintf(err, errlen, "error: request too long\n");
		return -1;
	}
	/* A NUL would end a word or the value early: refuse it. */
	if (memchr(buf, '\0', (size_t)(nl - buf)) != NULL || (wants_body(buf) &&
	    memchr(nl + 1, '\0', (size_t)(end - nl - 1)) != NULL)) {
		snprintf(err, errlen, "error: malformed request\n");
		return -1;
	}
	if (wants_body(buf)) {
		*end = '\0';
		body = nl + 1;
	}
	*nl = '\0';
	if (nl > buf && nl[-1] == '\r')
		nl[-1] = '\0';
	if (split_words(buf, m, room, &used, err, errlen) == -1)
		return -1;
	if (m->argc == 0) {
		snprintf(err, errlen, "error: empty request\n");
		return -1;
	}
	if ((m->verb = (uint8_t)ipc_ctl_verb(m->data)) == 0) {
		snprintf(err, errlen, "error: unknown command \"%.64s\" (status, "
		    "sandboxes, list, create, start, stop, destroy, secret, "
		    "reload, counters, log, hosts)\n", m->data);
		return -1;
	}
	if (body != NULL) {
		if ((blen = strlen(body) + 1) > room - used) {
			snprintf(err, errlen, "error: request too long\n");
			return -1;
		}
		memcpy(m->data + used, body, blen);
		used += blen;
		m->bodylen = (uint16_t)blen;
	}
	*mlen = sizeof(*m) + used;
	return 0;
}

/* --- clients ------------------------------------------------------------- */

void
ctlproc_init(struct ctlproc *st, int listen, int ipc)
{
	int i;

	memset(st, 0, sizeof(*st));
	st->listen = listen;
	st->ipc = ipc;
	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		st->c[i].fd = -1;
}

static void
close_client_fds(struct ctl_client *c)
{
	while (c->nfds > 0)
		close(c->fds[--c->nfds]);
}

/* The buffer may have held a secret's value: wipe it all, every time. */
void
ctlproc_drop(struct ctlproc *st, int slot)
{
	struct ctl_client *c = &st->c[slot];

	if (c->fd != -1)
		close(c->fd);
	close_client_fds(c);
	c->fd = -1;
	c->len = 0;
	c->id = 0;
	c->follow = false;
	explicit_bzero(c->buf, sizeof(c->buf));
}

/* Write all of s, with fd attached to the first byte if fd != -1. */
static void
client_write(struct ctlproc *st, int slot, const char *s, size_t n, int fd)
{
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct ctl_client *c = &st->c[slot];
	struct iovec iov;
	struct msghdr msg;
	ssize_t w;

	while (n > 0 && c->fd != -1) {
		iov = (struct iovec){ (void *)(uintptr_t)s, n };
		msg = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1 };
		if (fd != -1) {
			memset(&cm, 0, sizeof(cm));
			msg.msg_control = cm.buf;
			msg.msg_controllen = sizeof(cm.buf);
			CMSG_FIRSTHDR(&msg)->cmsg_level = SOL_SOCKET;
			CMSG_FIRSTHDR(&msg)->cmsg_type = SCM_RIGHTS;
			CMSG_FIRSTHDR(&msg)->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(CMSG_FIRSTHDR(&msg)), &fd, sizeof(int));
		}
		w = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0) {
			ctlproc_drop(st, slot);	/* gone, or too slow */
			return;
		}
		fd = -1;
		s += w;
		n -= (size_t)w;
	}
}

uint64_t
ctlproc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
ctlproc_slot_for(const struct ctlproc *st, uid_t uid)
{
	int i, free_slot = -1, others = 0, mine = 0;

	for (i = 0; i < CTL_MAX_CLIENTS; i++) {
		if (st->c[i].fd == -1) {
			if (free_slot == -1)
				free_slot = i;
			continue;
		}
		if (st->c[i].cred.uid != 0)
			others++;
		if (st->c[i].cred.uid == uid)
			mine++;
	}
	if (uid == 0 || free_slot == -1)
		return free_slot;
	return mine < CTL_PER_UID &&
	    others < CTL_MAX_CLIENTS - CTL_ROOT_RESERVE ? free_slot : -1;
}

void
ctlproc_accept(struct ctlproc *st)
{
	static const char full[] = "error: too many connections to gatewayd "
	    "from your user; try again when one is done\n";
	socklen_t len = sizeof(struct ucred);
	struct ucred cred;
	int fd, i;

	fd = accept4(st->listen, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd == -1)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) {
		close(fd);
		return;
	}
	if ((i = ctlproc_slot_for(st, cred.uid)) == -1) {
		(void)!send(fd, full, sizeof(full) - 1, MSG_NOSIGNAL |
		    MSG_DONTWAIT);
		close(fd);
		return;
	}
	ctlproc_drop(st, i);
	st->c[i].fd = fd;
	st->c[i].cred = cred;
	st->c[i].deadline = ctlproc_now_ms() + CTL_REQUEST_MS;
}

/* A client that has not yet handed over its request: the only state in
 * which one could hold a slot by saying nothing. */
static bool
owes_request(const struct ctl_client *c)
{
	return c->fd != -1 && c->id == 0 && !c->follow;
}

int
ctlproc_next_timeout(const struct ctlproc *st, uint64_t now)
{
	uint64_t first = UINT64_MAX;
	int i;

	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		if (owes_request(&st->c[i]) && st->c[i].deadline < first)
			first = st->c[i].deadline;
	if (first == UINT64_MAX)
		return -1;
	return first <= now ? 0 : (int)(first - now);
}

void
ctlproc_expire(struct ctlproc *st, uint64_t now)
{
	static const char late[] = "error: no whole request within the time "
	    "allowed\n";
	int i;

	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		if (owes_request(&st->c[i]) && st->c[i].deadline <= now) {
			client_write(st, i, late, sizeof(late) - 1, -1);
			ctlproc_drop(st, i);
		}
}

/* Bytes, and any descriptors the client attached, into its buffer.
 * -1: the client is gone or broke the rules (it has been answered). */
static int
client_recv(struct ctlproc *st, int slot)
{
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int) * IPC_CTL_MAX_FDS)];
	} cm;
	struct ctl_client *c = &st->c[slot];
	struct iovec iov = { c->buf + c->len, sizeof(c->buf) - c->len - 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
	struct cmsghdr *h;
	size_t i, k;
	ssize_t n;
	int fd, bad = 0;

	n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	for (h = CMSG_FIRSTHDR(&msg); n > 0 && h != NULL;
	    h = CMSG_NXTHDR(&msg, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k; i++) {
			memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
			if (c->nfds < IPC_CTL_MAX_FDS && !c->follow)
				c->fds[c->nfds++] = fd;
			else {
				close(fd);
				bad = 1;
			}
		}
	}
	if (n <= 0) {
		ctlproc_drop(st, slot);
		return -1;
	}
	if (bad || (msg.msg_flags & MSG_CTRUNC)) {
		static const char e[] = "error: too many descriptors attached\n";
		client_write(st, slot, e, sizeof(e) - 1, -1);
		ctlproc_drop(st, slot);
		return -1;
	}
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	return 0;
}

/* Send the parent a parsed request, the connection and the client's
 * descriptors attached.  -1 if the parent is gone. */
static int
forward(struct ctlproc *st, int slot, struct ipc_ctl_req *m, size_t mlen)
{
	struct ctl_client *c = &st->c[slot];
	int fds[IPC_MAX_FDS];
	size_t i;
	int rc;

	m->uid = c->cred.uid;
	m->gid = c->cred.gid;
	m->pid = c->cred.pid;
	m->nfds = (uint8_t)c->nfds;
	fds[0] = c->fd;
	for (i = 0; i < c->nfds; i++)
		fds[1 + i] = c->fds[i];
	if (++st->last_id == 0)
		st->last_id = 1;
	c->id = st->last_id;
	rc = ipc_send_fds(st->ipc, IPC_CTL_REQ, c->id, m, mlen, fds,
	    1 + c->nfds);
	close_client_fds(c);
	return rc;
}

int
ctlproc_client_readable(struct ctlproc *st, int slot)
{
	static union {
		struct ipc_ctl_req m;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	struct ctl_client *c = &st->c[slot];
	char err[256];
	size_t mlen;
	int rc;

	if (client_recv(st, slot) == -1)
		return 0;
	if (c->follow) {		/* followers only listen */
		c->len = 0;
		return 0;
	}
	rc = ctl_parse(c->buf, c->len, c->len == sizeof(c->buf) - 1, &u.m,
	    sizeof(u.raw), &mlen, err, sizeof(err));
	if (rc == 1)
		return 0;
	if (rc == -1) {
		client_write(st, slot, err, strlen(err), -1);
		ctlproc_drop(st, slot);
		return 0;
	}
	rc = forward(st, slot, &u.m, mlen);
	explicit_bzero(&u, sizeof(u));
	explicit_bzero(c->buf, sizeof(c->buf));
	c->len = 0;
	if (rc == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		static const char busy[] = "error: gatewayd is busy; try "
		    "again\n";
		client_write(st, slot, busy, sizeof(busy) - 1, -1);
		ctlproc_drop(st, slot);
		return 0;
	}
	return rc;
}

static int
find_id(const struct ctlproc *st, uint32_t id)
{
	int i;

	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		if (st->c[i].fd != -1 && id != 0 && st->c[i].id == id)
			return i;
	return -1;
}

static void
on_reply(struct ctlproc *st, uint32_t id, const struct ipc_ctl_reply *m,
    size_t len, int fd)
{
	int slot = find_id(st, id);

	if (slot == -1) {	/* the client left meanwhile */
		if (m->end == IPC_CTL_FOLLOW)
			(void)!ipc_send(st->ipc, IPC_CTL_GONE, id, NULL, 0);
		return;
	}
	client_write(st, slot, m->text, len - sizeof(*m), fd);
	if (st->c[slot].fd == -1 && m->end == IPC_CTL_FOLLOW)
		(void)!ipc_send(st->ipc, IPC_CTL_GONE, id, NULL, 0);
	else if (m->end == IPC_CTL_END)
		ctlproc_drop(st, slot);
	else if (m->end == IPC_CTL_FOLLOW)
		st->c[slot].follow = true;
}

static void
on_log(struct ctlproc *st, const char *line, size_t len)
{
	int i;
	uint32_t id;

	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		if (st->c[i].fd != -1 && st->c[i].follow) {
			id = st->c[i].id;
			client_write(st, i, line, len, -1);
			if (st->c[i].fd == -1)
				(void)!ipc_send(st->ipc, IPC_CTL_GONE, id, NULL, 0);
		}
}

int
ctlproc_ipc_readable(struct ctlproc *st)
{
	static union {
		struct ipc_ctl_reply m;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	struct ipc_hdr h;
	char err[256];
	size_t nfds;
	ssize_t n;
	int fd = -1;

	n = ipc_recv_fds(st->ipc, &h, u.raw, sizeof(u.raw), &fd, 1, &nfds,
	    err, sizeof(err));
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		return -1;	/* EOF, an error or a protocol violation */
	if (h.type == IPC_CTL_REPLY)
		on_reply(st, h.id, &u.m, (size_t)n, nfds ? fd : -1);
	else if (h.type == IPC_CTL_LOG && nfds == 0)
		on_log(st, u.raw, (size_t)n);
	else {
		if (nfds)
			close(fd);
		return -1;	/* not the parent's to send */
	}
	if (nfds)
		close(fd);
	return 0;
}

/* --- the process ----------------------------------------------------------- */

/* The loop's view of one descriptor: registered with lib/ev, and whether
 * it was readable in the last turn. */
struct ctl_watch {
	struct ev	 ev;
	bool		 ready;
};

static void
on_ready(struct ev *e, uint32_t events)
{
	((struct ctl_watch *)e->arg)->ready = true;
}

/* Make the registrations match the clients: those gone first (a number
 * closed and taken again by a new client in another slot must not be
 * removed after it was added), then the new ones.  A client whose
 * request the parent has is not read (a provision job may own its
 * socket), unless it only follows the log. */
static int
watch_sync(struct ctlproc *st, struct ctl_watch *w)
{
	int i;

	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		if (w[i].ev.fd != -1 && w[i].ev.fd != st->c[i].fd)
			ev_del(&w[i].ev);
	for (i = 0; i < CTL_MAX_CLIENTS; i++) {
		struct ctl_client *c = &st->c[i];

		if (c->fd == -1)
			continue;
		if (w[i].ev.fd == -1 && ev_add(&w[i].ev, c->fd, 0, on_ready,
		    &w[i]) == -1)
			return -1;
		ev_set(&w[i].ev, c->id == 0 || c->follow ? EPOLLIN : 0);
	}
	return 0;
}

/* Nothing is logged here: the filter allows no socket for syslog.  What
 * goes wrong ends the process, and the parent logs and restarts it. */
void
control_main(int listen, int ipc, pid_t parent)
{
	static struct ctlproc st;
	static struct ctl_watch w[CTL_MAX_CLIENTS], wipc, wlisten;
	int i;

	/* Never wait for the parent: while it sends us replies, a blocked
	 * send here would leave both waiting.  A full queue is "busy". */
	if (fcntl(ipc, F_SETFL, O_NONBLOCK) == -1 || privdrop(CTL_USER) == -1)
		_exit(1);
	die_with_parent(parent);
	/* The loop before the filter, which allows waiting on it but not
	 * making one. */
	if (ev_init() == -1)
		_exit(1);
	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		w[i].ev.fd = -1;
	if (sandbox_narrow(SANDBOX_CONTROL) == -1)
		_exit(1);
	ctlproc_init(&st, listen, ipc);
	if (ev_add(&wipc.ev, ipc, EPOLLIN, on_ready, &wipc) == -1 ||
	    ev_add(&wlisten.ev, listen, EPOLLIN, on_ready, &wlisten) == -1)
		_exit(1);
	for (;;) {
		if (watch_sync(&st, w) == -1)
			_exit(1);
		if (ev_run_once(ctlproc_next_timeout(&st, ctlproc_now_ms())) ==
		    -1 && errno != EINTR)
			_exit(1);
		ctlproc_expire(&st, ctlproc_now_ms());
		if (wipc.ready) {
			wipc.ready = false;
			if (ctlproc_ipc_readable(&st) == -1)
				_exit(0);	/* the parent is gone, or broken */
		}
		for (i = 0; i < CTL_MAX_CLIENTS; i++) {
			if (!w[i].ready)
				continue;
			w[i].ready = false;
			if (st.c[i].fd != -1 && st.c[i].fd == w[i].ev.fd &&
			    ctlproc_client_readable(&st, i) == -1)
				_exit(0);
		}
		if (wlisten.ready) {
			wlisten.ready = false;
			ctlproc_accept(&st);
		}
	}
}
