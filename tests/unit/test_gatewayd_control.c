/*
 * test_gatewayd_control.c -- the control process (gatewayd/control/control.c):
 * request lines become typed IPC_CTL_REQ messages; descriptors a client
 * attaches reach the parent with the request, and one the parent attaches
 * to a reply reaches the client.  Real socketpairs, no daemon.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../gatewayd/control/control.h"

static union {
	struct ipc_ctl_req m;
	char raw[IPC_MAX_PAYLOAD];
} u;

static int
parse(const char *in, size_t *mlen, char *err)
{
	static char buf[CTL_MAX_LINE];
	size_t n = strlen(in);

	memcpy(buf, in, n + 1);
	return ctl_parse(buf, n, false, &u.m, sizeof(u.raw), mlen, err, 256);
}

static void
parse_words(void **state)
{
	char err[256];
	size_t mlen;

	(void)state;
	assert_int_equal(parse("sandboxes --json\n", &mlen, err), 0);
	assert_int_equal(u.m.verb, CTL_SANDBOXES);
	assert_int_equal(u.m.json, 1);
	assert_int_equal(u.m.argc, 1);
	assert_string_equal(u.m.data, "sandboxes");
	/* percent-encoded words decode; the shape check accepts the result */
	assert_int_equal(parse("create --append a%20b%25 web\r\n", &mlen,
	    err), 0);
	assert_int_equal(u.m.argc, 4);
	assert_string_equal(u.m.data + strlen("create --append "), "a b%");
	{
		struct ipc_hdr h = { IPC_CTL_REQ, 0, (uint32_t)mlen, 1 };
		assert_int_equal(ipc_check(&h, &u, mlen, err, sizeof(err)), 0);
	}
	/* "secret set" waits for its value's line, then carries it */
	assert_int_equal(parse("secret set k --host a.test\n", &mlen, err), 1);
	assert_int_equal(parse("secret set k --host a.test\nVALUE\n", &mlen,
	    err), 0);
	assert_int_equal(u.m.bodylen, 6);
	assert_string_equal((char *)&u.m + mlen - 6, "VALUE");
}

static void
parse_refusals(void **state)
{
	char err[256], big[CTL_MAX_LINE];
	size_t mlen;

	(void)state;
	assert_int_equal(parse("\n", &mlen, err), -1);
	assert_string_equal(err, "error: empty request\n");
	assert_int_equal(parse("status%00\n", &mlen, err), -1);
	assert_string_equal(err, "error: malformed request\n");
	assert_int_equal(parse("status%4\n", &mlen, err), -1);
	assert_int_equal(parse("frobnicate\n", &mlen, err), -1);
	assert_non_null(strstr(err, "unknown command \"frobnicate\""));
	assert_int_equal(parse("status", &mlen, err), 1);	/* more to come */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(ctl_parse(big, sizeof(big) - 1, true, &u.m,
	    sizeof(u.raw), &mlen, err, sizeof(err)), -1);
	assert_string_equal(err, "error: request too long\n");
	big[0] = '\0';
	for (int i = 0; i < 70; i++)
		strcat(big, "x ");
	memcpy(big, "list", 4);
	strcat(big, "\n");
	assert_int_equal(parse(big, &mlen, err), -1);
	assert_string_equal(err, "error: too many arguments\n");
}

/* Send s with n descriptors attached. */
static void
send_with_fds(int sock, const char *s, const int *fds, size_t n)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 16)];
	} cm;
	struct iovec iov = { (void *)(uintptr_t)s, strlen(s) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (n > 0) {
		memset(&cm, 0, sizeof(cm));
		msg.msg_control = cm.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		CMSG_FIRSTHDR(&msg)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&msg)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&msg)->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&msg)), fds, sizeof(int) * n);
	}
	assert_int_equal(sendmsg(sock, &msg, 0), (ssize_t)strlen(s));
}

/* A client attaches two pipes to "create"; the parent gets them after the
 * connection, and writes through one.  Its reply carries a descriptor,
 * which reaches the client with the text. */
static void
fds_both_ways(void **state)
{
	static struct ctlproc st;
	int cli[2], ipc[2], p1[2], p2[2], p3[2], got[IPC_MAX_FDS], att[2];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} cm;
	struct ipc_hdr h;
	char err[256], text[64], rd[8];
	struct iovec iov = { text, sizeof(text) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
	size_t nfds;
	ssize_t n;
	int rfd;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, cli), 0);
	assert_int_equal(ipc_pair(ipc), 0);
	assert_int_equal(pipe(p1) | pipe(p2) | pipe(p3), 0);
	ctlproc_init(&st, -1, ipc[0]);
	st.c[0].fd = cli[0];
	st.c[0].cred = (struct ucred){ getpid(), 1000, 1000 };
	att[0] = p1[1];
	att[1] = p2[1];
	send_with_fds(cli[1], "create --image img web\n", att, 2);
	assert_int_equal(ctlproc_client_readable(&st, 0), 0);
	assert_int_equal(st.c[0].nfds, 0);	/* sent on, closed here */
	n = ipc_recv_fds(ipc[1], &h, u.raw, sizeof(u.raw), got, IPC_MAX_FDS,
	    &nfds, err, sizeof(err));
	assert_true(n > 0);
	assert_int_equal(h.type, IPC_CTL_REQ);
	assert_int_equal(u.m.uid, 1000);
	assert_int_equal(u.m.pid, getpid());
	assert_int_equal(u.m.verb, CTL_CREATE);
	assert_int_equal(u.m.nfds, 2);
	assert_int_equal(nfds, 3);
	/* got[0] is the client's connection, got[1] its first pipe */
	assert_int_equal(write(got[1], "x", 1), 1);
	assert_int_equal(read(p1[0], rd, 1), 1);
	assert_int_equal(write(got[0], "y", 1), 1);
	assert_int_equal(read(cli[1], rd, 1), 1);
	assert_int_equal(rd[0], 'y');
	/* the reply, with p3's write end for the client */
	{
		static union {
			struct ipc_ctl_reply m;
			char raw[64];
		} r;
		memset(&r, 0, sizeof(r));
		r.m.end = IPC_CTL_END;
		memcpy(r.m.text, "ok\n", 3);
		assert_int_equal(ipc_send_fds(ipc[1], IPC_CTL_REPLY, h.id, &r,
		    sizeof(r.m) + 3, &p3[1], 1), 0);
	}
	assert_int_equal(ctlproc_ipc_readable(&st), 0);
	assert_int_equal(st.c[0].fd, -1);	/* END: the client is done */
	n = recvmsg(cli[1], &msg, 0);
	assert_int_equal(n, 3);
	assert_memory_equal(text, "ok\n", 3);
	assert_non_null(CMSG_FIRSTHDR(&msg));
	assert_int_equal(CMSG_FIRSTHDR(&msg)->cmsg_type, SCM_RIGHTS);
	memcpy(&rfd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int));
	assert_int_equal(write(rfd, "z", 1), 1);
	assert_int_equal(read(p3[0], rd, 1), 1);
	assert_int_equal(rd[0], 'z');
	for (nfds = 0; nfds < 3; nfds++)
		close(got[nfds]);
	close(rfd);
	close(cli[1]);
	close(ipc[0]);
	close(ipc[1]);
}

/* More descriptors than a request may carry: refused, none kept. */
static void
too_many_fds(void **state)
{
	static struct ctlproc st;
	int cli[2], ipc[2], p[2], att[IPC_CTL_MAX_FDS + 1];
	char buf[128];
	ssize_t n;
	size_t i;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, cli), 0);
	assert_int_equal(ipc_pair(ipc), 0);
	assert_int_equal(pipe(p), 0);
	ctlproc_init(&st, -1, ipc[0]);
	st.c[0].fd = cli[0];
	for (i = 0; i < IPC_CTL_MAX_FDS + 1; i++)
		att[i] = p[1];
	send_with_fds(cli[1], "create web\n", att, IPC_CTL_MAX_FDS + 1);
	assert_int_equal(ctlproc_client_readable(&st, 0), 0);
	assert_int_equal(st.c[0].fd, -1);
	n = read(cli[1], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "error: too many descriptors attached\n");
	/* nothing reached the parent */
	assert_int_equal(recv(ipc[1], buf, sizeof(buf), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	close(cli[1]);
	close(ipc[0]);
	close(ipc[1]);
	close(p[0]);
	close(p[1]);
}

/* The parent's queue is full: the client is told, nothing blocks. */
static void
parent_busy(void **state)
{
	static struct ctlproc st;
	int cli[2], ipc[2];
	char buf[128];
	ssize_t n;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, cli), 0);
	assert_int_equal(ipc_pair(ipc), 0);
	assert_int_equal(fcntl(ipc[0], F_SETFL, O_NONBLOCK), 0);
	memset(&u, 0, sizeof(u));
	while (ipc_send(ipc[0], IPC_CTL_LOG, 0, u.raw, 8192) == 0)
		;
	assert_int_equal(errno, EAGAIN);
	ctlproc_init(&st, -1, ipc[0]);
	st.c[0].fd = cli[0];
	assert_int_equal(write(cli[1], "status\n", 7), 7);
	assert_int_equal(ctlproc_client_readable(&st, 0), 0);
	assert_int_equal(st.c[0].fd, -1);
	n = read(cli[1], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "error: gatewayd is busy; try again\n");
	close(cli[1]);
	close(ipc[0]);
	close(ipc[1]);
}

/* ipc_send_fds / ipc_recv_fds: counts survive; over the receiver's
 * limit is a protocol violation and nothing is left open. */
static void
ipc_fds(void **state)
{
	int ipc[2], p[2], got[IPC_MAX_FDS], two[2];
	struct ipc_hdr h;
	char err[256];
	size_t nfds;
	int before, after;

	(void)state;
	assert_int_equal(ipc_pair(ipc), 0);
	assert_int_equal(pipe(p), 0);
	two[0] = p[0];
	two[1] = p[1];
	assert_int_equal(ipc_send_fds(ipc[0], IPC_CTL_GONE, 3, NULL, 0, two, 2),
	    0);
	assert_int_equal(ipc_recv_fds(ipc[1], &h, u.raw, sizeof(u.raw), got, 2,
	    &nfds, err, sizeof(err)), 0);
	assert_int_equal(h.type, IPC_CTL_GONE);
	assert_int_equal(nfds, 2);
	close(got[0]);
	close(got[1]);
	before = dup(0);	/* the lowest free descriptor */
	close(before);
	assert_int_equal(ipc_send_fds(ipc[0], IPC_CTL_GONE, 3, NULL, 0, two, 2),
	    0);
	assert_int_equal(ipc_recv_fds(ipc[1], &h, u.raw, sizeof(u.raw), got, 1,
	    &nfds, err, sizeof(err)), -2);
	assert_int_equal(nfds, 0);
	after = dup(0);
	close(after);
	assert_int_equal(after, before);	/* none was left open */
	/* plain ipc_recv refuses a message with descriptors */
	assert_int_equal(ipc_send_fds(ipc[0], IPC_CTL_GONE, 3, NULL, 0, two, 1),
	    0);
	assert_int_equal(ipc_recv(ipc[1], &h, u.raw, sizeof(u.raw), err,
	    sizeof(err)), -2);
	close(p[0]);
	close(p[1]);
	close(ipc[0]);
	close(ipc[1]);
}

/* The shape check the parent applies to IPC_CTL_REQ. */
static void
req_shapes(void **state)
{
	struct ipc_hdr h = { IPC_CTL_REQ, 0, 0, 1 };
	char err[256];
	size_t len;

	(void)state;
	memset(&u, 0, sizeof(u));
	u.m.verb = CTL_STOP;
	u.m.argc = 2;
	memcpy(u.m.data, "stop\0web\0", 9);
	len = sizeof(u.m) + 9;
	h.len = (uint32_t)len;
	assert_int_equal(ipc_check(&h, &u, len, err, sizeof(err)), 0);
	u.m.argc = 3;			/* more words than there are */
	assert_int_equal(ipc_check(&h, &u, len, err, sizeof(err)), -1);
	u.m.argc = 2;
	memcpy(u.m.data, "stat", 4);	/* argv[0] is not the verb */
	assert_int_equal(ipc_check(&h, &u, len, err, sizeof(err)), -1);
	memcpy(u.m.data, "stop", 4);
	u.m.bodylen = 4;		/* a body for a verb without one */
	assert_int_equal(ipc_check(&h, &u, len, err, sizeof(err)), -1);
	u.m.bodylen = 0;
	u.m.nfds = IPC_CTL_MAX_FDS + 1;
	assert_int_equal(ipc_check(&h, &u, len, err, sizeof(err)), -1);
	u.m.nfds = 0;
	u.m.verb = CTL_VERB_MAX;
	assert_int_equal(ipc_check(&h, &u, len, err, sizeof(err)), -1);
}

/* Slots: a member gets at most CTL_PER_UID; members together never take
 * the CTL_ROOT_RESERVE slots kept for root; root gets any free one. */
static void
slots_per_uid_and_root(void **state)
{
	static struct ctlproc st;
	int i, nul = open("/dev/null", O_RDONLY);
	uid_t uid;

	(void)state;
	assert_true(nul >= 0);
	ctlproc_init(&st, -1, -1);
	for (i = 0; i < CTL_PER_UID; i++) {
		assert_true(ctlproc_slot_for(&st, 1000) >= 0);
		st.c[i].fd = nul;
		st.c[i].cred.uid = 1000;
	}
	assert_int_equal(ctlproc_slot_for(&st, 1000), -1);
	assert_int_equal(ctlproc_slot_for(&st, 1001), CTL_PER_UID);
	/* Other members fill what members may have. */
	for (i = CTL_PER_UID, uid = 1001; i < CTL_MAX_CLIENTS -
	    CTL_ROOT_RESERVE; i++) {
		st.c[i].fd = nul;
		st.c[i].cred.uid = uid;
		if ((i + 1) % CTL_PER_UID == 0)
			uid++;
	}
	assert_int_equal(ctlproc_slot_for(&st, 2000), -1);
	for (i = 0; i < CTL_ROOT_RESERVE; i++) {
		assert_int_equal(ctlproc_slot_for(&st, 0),
		    CTL_MAX_CLIENTS - CTL_ROOT_RESERVE + i);
		st.c[CTL_MAX_CLIENTS - CTL_ROOT_RESERVE + i].fd = nul;
		st.c[CTL_MAX_CLIENTS - CTL_ROOT_RESERVE + i].cred.uid = 0;
	}
	assert_int_equal(ctlproc_slot_for(&st, 0), -1);	/* all taken */
	/* A member leaves: the slot is for anyone again. */
	st.c[0].fd = -1;
	assert_int_equal(ctlproc_slot_for(&st, 2000), 0);
	close(nul);
}

/* A client that says nothing is answered and dropped at its deadline;
 * one whose request the parent has, or a follower, is not. */
static void
idle_deadline(void **state)
{
	static struct ctlproc st;
	int idle[2], busy[2], slow[2];
	char buf[128];
	ssize_t n;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, idle), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, busy), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, slow), 0);
	ctlproc_init(&st, -1, -1);
	assert_int_equal(ctlproc_next_timeout(&st, 1000), -1);
	st.c[0] = (struct ctl_client){ .fd = idle[0], .deadline = 5000 };
	st.c[1] = (struct ctl_client){ .fd = busy[0], .deadline = 3000,
	    .id = 7 };
	st.c[2] = (struct ctl_client){ .fd = slow[0], .deadline = 9000 };
	assert_int_equal(ctlproc_next_timeout(&st, 1000), 4000);
	ctlproc_expire(&st, 4999);
	assert_int_equal(st.c[0].fd, idle[0]);
	assert_int_equal(ctlproc_next_timeout(&st, 6000), 0);
	ctlproc_expire(&st, 6000);
	assert_int_equal(st.c[0].fd, -1);
	assert_int_equal(st.c[1].fd, busy[0]);	/* the parent has it */
	assert_int_equal(st.c[2].fd, slow[0]);
	n = read(idle[1], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "error: no whole request"));
	assert_int_equal(read(idle[1], buf, sizeof(buf)), 0);	/* closed */
	assert_int_equal(ctlproc_next_timeout(&st, 6000), 3000);
	close(idle[1]);
	close(busy[0]);
	close(busy[1]);
	close(slow[0]);
	close(slow[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_words),
		cmocka_unit_test(parse_refusals),
		cmocka_unit_test(fds_both_ways),
		cmocka_unit_test(too_many_fds),
		cmocka_unit_test(ipc_fds),
		cmocka_unit_test(parent_busy),
		cmocka_unit_test(req_shapes),
		cmocka_unit_test(slots_per_uid_and_root),
		cmocka_unit_test(idle_deadline),
	};
	return cmocka_run_group_tests_name("gatewayd control", tests, NULL,
	    NULL);
}
