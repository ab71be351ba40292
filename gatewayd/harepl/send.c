/*
 * harepl/send.c -- the sending end of replication (harepl.h).  User
 * moat-reg, no capabilities, seccomp without open(); forked by the
 * parent, which reads this box's certificate and key and hands them
 * over in memory.
 *
 * The parent sends each set addition the kernel took while this box is
 * master (IPC_SET_ADD), and each budgeted sandbox's egress total as it
 * grows (IPC_HA_SPENT), and each KVM host's registration it applied
 * (IPC_REG_REQ), never waiting: its end of the socket does not
 * block, and what does not fit is counted there as dropped).  This
 * process queues them, keeps one TLS connection to the other box, checks
 * that box's key against gateway.ha.peer_key before it sends a line, and
 * sends them one by one, each answered "ok" or "error REASON".  Every
 * step has a deadline (HAREPL_TIMEOUT_S).  The connection is kept up
 * whether or not anything waits, and a quiet one carries a "ping" every
 * HAREPL_PING_S: a link the other box closed, or that stopped answering,
 * is noticed then and made again at once, not when the next change needs
 * it.  Each new connection drops what waited of the state (elements,
 * flushes, totals: superseded; grants and registrations stay) and asks
 * the parent for the whole state first (IPC_HA_SNAP); while the other
 * box cannot be reached, lines wait (HAREPL_QUEUE_MAX, the oldest dropped
 * first) and a new connection is tried each second.  What happens to the
 * connection goes to the parent's audit log, once per change.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>
#include <openssl/ssl.h>

#include "ev.h"
#include "harepl.h"
#include "json.h"
#include "log.h"
#include "parent.h"
#include "privdrop.h"
#include "regclient.h"
#include "sandbox.h"

static struct {
	int		 ipc;
	SSL_CTX		*ctx;
	const char	*peer;
	uint8_t		 pin[32];
	struct regclient *rc;
	char		*q[HAREPL_QUEUE_MAX];
	int		 qt[HAREPL_QUEUE_MAX];	/* each line's IPC type */
	size_t		 head, n;
	uint64_t	 dropped, refused, sent;
	uint64_t	 next_try;	/* ev clock, ms */
	uint64_t	 last_io;	/* the last answer heard */
	uint64_t	 up_since;	/* the connection's */
	char		 said[160];	/* the last state audited */
	struct ev	 ipc_ev;
	struct ev_timer	 wake;		/* the next try, or the next ping */
} S;

/* One audit line for the parent, when the state it says is new. */
static void
say(const char *event, const char *reason)
{
	struct json j = JSON_INIT;
	char now[160];

	snprintf(now, sizeof(now), "%s %s", event, reason);
	if (strcmp(now, S.said) == 0)
		return;
	snprintf(S.said, sizeof(S.said), "%s", now);
	json_begin(&j);
	json_kstr(&j, "event", event);
	json_kstr(&j, "peer", S.peer);
	json_kstr(&j, "reason", reason);
	json_end(&j);
	if (j.len <= IPC_MAX_PAYLOAD)
		(void)ipc_send(S.ipc, IPC_AUDIT, 0, j.buf, j.len);
	json_free(&j);
}

static void
push(int type, const union harepl_msg *m)
{
	char line[REG_LINE_MAX + 1];
	size_t tail;

	if (harepl_format(type, m, line, sizeof(line)) == -1)
		return;
	if (S.n == HAREPL_QUEUE_MAX) {	/* the oldest goes */
		free(S.q[S.head]);
		S.head = (S.head + 1) % HAREPL_QUEUE_MAX;
		S.n--;
		S.dropped++;
	}
	tail = (S.head + S.n) % HAREPL_QUEUE_MAX;
	S.q[tail] = xstrdup(line);
	S.qt[tail] = type;
	S.n++;
}

/* A new connection: the whole state the parent sends next supersedes
 * what waited of it (elements, flushes, egress totals); grants,
 * quarantines and registrations stay, in order (a backup's are not in any state, and a
 * master's grant sent twice changes nothing). */
static void
supersede(void)
{
	size_t i, n = S.n, at, to;

	S.n = 0;
	for (i = 0; i < n; i++) {
		at = (S.head + i) % HAREPL_QUEUE_MAX;
		if (S.qt[at] != IPC_HA_GRANT && S.qt[at] != IPC_REG_REQ &&
		    S.qt[at] != IPC_HA_QUARANTINE) {
			free(S.q[at]);
			S.q[at] = NULL;
			continue;
		}
		to = (S.head + S.n++) % HAREPL_QUEUE_MAX;
		S.q[to] = S.q[at];
		S.qt[to] = S.qt[at];
		if (to != at)
			S.q[at] = NULL;
	}
}

static void
pop(void)
{
	free(S.q[S.head]);
	S.q[S.head] = NULL;
	S.head = (S.head + 1) % HAREPL_QUEUE_MAX;
	S.n--;
}

/* Everything the parent sent so far; the parent gone ends the process. */
static void
take(void)
{
	static union harepl_msg u;
	struct ipc_hdr h;
	char err[256];
	ssize_t n;

	for (;;) {
		n = ipc_recv(S.ipc, &h, u.raw, sizeof(u.raw), err, sizeof(err));
		if (n == -1 && errno == EAGAIN)
			return;
		if (n <= 0 || (h.type != IPC_SET_ADD &&
		    h.type != IPC_HA_SPENT && h.type != IPC_REG_REQ &&
		    h.type != IPC_HA_FLUSH && h.type != IPC_HA_GRANT &&
		    h.type != IPC_HA_QUARANTINE))
			_exit(n == 0 ? 0 : 1);
		push(h.type, &u);
	}
}

/* A request may block for its deadline: read the clock afresh. */
static uint64_t
now_ms(void)
{
	return ev_now_update();
}

/* The link failed: close it and try again at once if it had been up a
 * while (the other box closed an idle connection, or restarted), else in
 * a second (a peer that takes connections and drops them gets no more). */
static void
lost(const char *why, bool was_up)
{
	uint64_t now = now_ms();

	regclient_close(S.rc);
	S.rc = NULL;
	S.next_try = now + (was_up && now >= S.up_since +
	    HAREPL_PING_S * 1000 ? 0 : 1000);
	say("ha-peer-down", why);
}

/* A new connection: what waited is superseded by the whole state, which
 * the parent sends next (if this box is master). */
static void
connect_peer(void)
{
	char why[256];

	if (now_ms() < S.next_try)
		return;
	S.rc = regclient_open_ctx(S.peer, S.pin, S.ctx, HAREPL_TIMEOUT_S,
	    why, sizeof(why));
	if (S.rc == NULL) {
		lost(why, false);
		return;
	}
	supersede();
	if (ipc_send(S.ipc, IPC_HA_SNAP, 0, NULL, 0) == -1)
		_exit(1);
	S.last_io = S.up_since = now_ms();
	say("ha-peer-up", "connected");
}

/* One line to the other box and its answer; false: the link is gone. */
static bool
request(const char *line)
{
	char why[256];
	int r;

	r = regclient_request(S.rc, line, NULL, NULL, why, sizeof(why));
	if (r == REG_UNREACHABLE) {
		lost(why, true);
		return false;
	}
	S.last_io = now_ms();
	if (r == REG_REFUSED) {
		S.refused++;
		say("ha-peer-refused", why);
	}
	return true;
}

/* Send what waits, connecting first if need be; a quiet link pings. */
static void
send_all(void)
{
	if (S.rc == NULL)
		connect_peer();
	if (S.rc == NULL)
		return;
	if (S.n == 0 && now_ms() >= S.last_io + HAREPL_PING_S * 1000) {
		if (!request("ping"))
			connect_peer();
		return;
	}
	while (S.n > 0 && S.rc != NULL) {
		if (!request(S.q[S.head])) {
			connect_peer();		/* at once: the state follows */
			return;
		}
		S.sent++;
		pop();
		take();		/* newer lines join the queue */
	}
}

/* Wake when the next try or the next ping is due. */
static void	woken(void *);

static void
arm(void)
{
	ev_timer_set(&S.wake, S.rc == NULL ? S.next_try :
	    S.last_io + HAREPL_PING_S * 1000, woken, NULL);
}

static void
woken(void *arg)
{
	(void)arg;
	send_all();
	arm();
}

static void
ipc_ready(struct ev *e, uint32_t events)
{
	(void)e;
	(void)events;
	take();
	send_all();
	arm();
}

void
harepl_send_main(int ipc, pid_t parent, struct reg_pem *pem,
    const char *peer, const uint8_t pin[32])
{
	unsigned char seed[16];
	int fl;

	OPENSSL_init_ssl(0, NULL);
	S.ctx = regclient_ctx_pem(pem->cert, pem->certlen, pem->key,
	    pem->keylen);
	reg_pem_wipe(pem);
	if (S.ctx == NULL) {
		log_warnx("ha replication: cannot use this box's certificate "
		    "and key");
		_exit(1);
	}
	signal(SIGPIPE, SIG_IGN);
	S.ipc = ipc;
	S.peer = peer;
	memcpy(S.pin, pin, sizeof(S.pin));
	/* The loop before the filter, which allows waiting on it but not
	 * making one. */
	if ((fl = fcntl(ipc, F_GETFL)) == -1 ||
	    fcntl(ipc, F_SETFL, fl | O_NONBLOCK) == -1 || ev_init() == -1 ||
	    ev_add(&S.ipc_ev, ipc, EPOLLIN, ipc_ready, NULL) == -1)
		_exit(1);
	if (RAND_bytes(seed, sizeof(seed)) != 1 || privdrop(HAREPL_USER) == -1)
		_exit(1);
	die_with_parent(parent);
	if (sandbox_narrow(SANDBOX_HA_SEND) == -1)
		_exit(1);
	send_all();
	arm();
	for (;;)
		if (ev_run_once(-1) == -1)
			_exit(1);
}
