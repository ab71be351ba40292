/*
 * harepl_send.c -- the sending end of replication (harepl.h).  User
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
 * step has a deadline (HAREPL_TIMEOUT_S); while the other box cannot be
 * reached, lines wait (HAREPL_QUEUE_MAX, the oldest dropped first) and a
 * new connection is tried each second.  What happens to the connection
 * goes to the parent's audit log, once per change.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
	size_t		 head, n;
	uint64_t	 dropped, refused, sent;
	time_t		 next_try;
	char		 said[160];	/* the last state audited */
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
	S.n++;
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
		    h.type != IPC_HA_SPENT && h.type != IPC_REG_REQ))
			_exit(n == 0 ? 0 : 1);
		push(h.type, &u);
	}
}

/* Send what waits, connecting first if need be. */
static void
send_all(void)
{
	char why[256];
	int r;

	if (S.n == 0)
		return;
	if (S.rc == NULL) {
		if (time(NULL) < S.next_try)
			return;
		S.rc = regclient_open_ctx(S.peer, S.pin, S.ctx,
		    HAREPL_TIMEOUT_S, why, sizeof(why));
		if (S.rc == NULL) {
			S.next_try = time(NULL) + 1;
			say("ha-peer-down", why);
			return;
		}
		say("ha-peer-up", "connected");
	}
	while (S.n > 0) {
		r = regclient_request(S.rc, S.q[S.head], NULL, NULL, why,
		    sizeof(why));
		if (r == REG_UNREACHABLE) {
			regclient_close(S.rc);
			S.rc = NULL;
			S.next_try = time(NULL) + 1;
			say("ha-peer-down", why);
			return;
		}
		if (r == REG_REFUSED) {
			S.refused++;
			say("ha-peer-refused", why);
		} else
			S.sent++;
		pop();
		take();		/* newer lines join the queue */
	}
}

void
harepl_send_main(int ipc, pid_t parent, struct reg_pem *pem,
    const char *peer, const uint8_t pin[32])
{
	unsigned char seed[16];
	struct pollfd p;
	int fl, timeout;

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
	if ((fl = fcntl(ipc, F_GETFL)) == -1 ||
	    fcntl(ipc, F_SETFL, fl | O_NONBLOCK) == -1)
		_exit(1);
	if (RAND_bytes(seed, sizeof(seed)) != 1 || privdrop(HAREPL_USER) == -1)
		_exit(1);
	die_with_parent(parent);
	if (sandbox_narrow(SANDBOX_HA_SEND) == -1)
		_exit(1);
	for (;;) {
		p = (struct pollfd){ .fd = ipc, .events = POLLIN };
		timeout = S.n > 0 ? 1000 : -1;
		if (poll(&p, 1, timeout) == -1 && errno != EINTR)
			_exit(1);
		take();
		send_all();
	}
}
