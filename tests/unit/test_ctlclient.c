/*
 * test_ctlclient.c -- lib/ctlclient.c, the control socket's client, over
 * a socketpair standing in for gatewayd: the request line's encoding,
 * descriptors sent with the request and received with "ok", an answer of
 * body and error lines, one that ends with neither, and a silent one
 * (bounded by the timeout).
 */
#include <sys/socket.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctlclient.h"

/* A connected client on one end; the scripted daemon on *peer. */
static void
pair(struct ctlc *c, int *peer)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	memset(c, 0, sizeof(*c));
	c->fd = sv[0];
	c->rfd = -1;
	*peer = sv[1];
}

/* Send s with fd (if not -1) on its first byte. */
static void
send_with(int sock, const char *s, int fd)
{
	union {
		char		buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr	align;
	} cb;
	struct iovec iov = { (void *)s, strlen(s) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	if (fd != -1) {
		memset(&cb, 0, sizeof(cb));
		m.msg_control = cb.buf;
		m.msg_controllen = sizeof(cb.buf);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	assert_int_equal(sendmsg(sock, &m, 0), (ssize_t)strlen(s));
}

static void
test_request_encoding(void **state)
{
	char *argv[] = { "secret", "set", "a b%", "x\n\x7f", "ü" };
	char *empty[] = { "create", "" };
	size_t len;
	char *req = ctlc_request(5, argv, &len);

	assert_string_equal(req, "secret set a%20b%25 x%0A%7F ü\n");
	assert_int_equal(len, strlen(req));
	free(req);
	assert_null(ctlc_request(2, empty, &len));
}

/* What a create does: the request with its files' descriptors; the
 * daemon gets both, the bytes in order and a descriptor it can read. */
static void
test_send_with_fds(void **state)
{
	char buf[64], got[8], cb[CMSG_SPACE(2 * sizeof(int))];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cb, .msg_controllen = sizeof(cb) };
	struct ctlc c;
	int peer, p[2], fds[2];
	ssize_t n;

	pair(&c, &peer);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "img", 3), 3);
	fds[0] = fds[1] = p[0];
	assert_int_equal(ctlc_send(&c, "create --image x g\n", 19, fds, 2), 0);
	n = recvmsg(peer, &m, 0);
	assert_int_equal(n, 19);
	assert_memory_equal(buf, "create --image x g\n", 19);
	assert_non_null(CMSG_FIRSTHDR(&m));
	assert_int_equal(CMSG_FIRSTHDR(&m)->cmsg_len, CMSG_LEN(2 * sizeof(int)));
	memcpy(fds, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(fds));
	assert_int_equal(read(fds[0], got, sizeof(got)), 3);
	close(fds[0]);
	close(fds[1]);
	close(p[0]);
	close(p[1]);
	close(peer);
	ctlc_close(&c);
}

struct seen {
	char	 text[256];
};

static void
note(const char *line, bool error, bool after_error, void *arg)
{
	struct seen *s = arg;
	size_t n = strlen(s->text);

	snprintf(s->text + n, sizeof(s->text) - n, "%s%s%s|",
	    error ? "E:" : "", after_error && !error ? "A:" : "", line);
}

static void
test_answer_ok(void **state)
{
	struct seen s = { "" };
	struct ctlc c;
	int peer;

	pair(&c, &peer);
	send_with(peer, "one\n\ntwo\nok\nnot read\n", -1);
	assert_int_equal(ctlc_answer(&c, note, &s), CTLC_OK);
	assert_string_equal(s.text, "one||two|");
	close(peer);
	ctlc_close(&c);
}

/* Errors span lines; gatewayd closes after the last.  A line after an
 * error is marked so `gatewayd ctl` sends it to stderr. */
static void
test_answer_refused(void **state)
{
	struct seen s = { "" };
	struct ctlc c;
	int peer;

	pair(&c, &peer);
	send_with(peer, "body\nerror: a.conf:3: bad\nerror: two\nmore\n", -1);
	close(peer);
	assert_int_equal(ctlc_answer(&c, note, &s), CTLC_REFUSED);
	assert_string_equal(s.text, "body|E:a.conf:3: bad|E:two|A:more|");
	ctlc_close(&c);
}

/* Neither "ok" nor an error: the daemon went away mid-answer.  A last
 * line without its newline is still shown. */
static void
test_answer_unanswered(void **state)
{
	struct seen s = { "" };
	struct ctlc c;
	int peer;

	pair(&c, &peer);
	send_with(peer, "half\npartial", -1);
	close(peer);
	assert_int_equal(ctlc_answer(&c, note, &s), CTLC_UNANSWERED);
	assert_string_equal(s.text, "half|partial|");
	ctlc_close(&c);
}

/* A daemon that takes the connection and says nothing (its control
 * process down): with first_ms set, the wait ends and says so. */
static void
test_answer_silent(void **state)
{
	struct seen s = { "" };
	struct ctlc c;
	int peer;

	pair(&c, &peer);
	c.first_ms = 100;
	assert_int_equal(ctlc_answer(&c, note, &s), CTLC_SILENT);
	assert_string_equal(s.text, "");
	/* An answer after the first line may take its time: no limit. */
	send_with(peer, "line\n", -1);
	send_with(peer, "ok\n", -1);
	assert_int_equal(ctlc_answer(&c, note, &s), CTLC_OK);
	close(peer);
	ctlc_close(&c);
}

/* A console: the descriptor comes with "ok" and is the caller's. */
static void
test_fd_with_ok(void **state)
{
	struct ctlc c;
	int peer, p[2];
	char b[4];

	pair(&c, &peer);
	assert_int_equal(pipe(p), 0);
	send_with(peer, "ok\n", p[1]);
	close(p[1]);
	assert_int_equal(ctlc_getline(&c, 1000), 0);
	assert_string_equal(c.line, "ok");
	assert_true(c.rfd >= 0);
	assert_int_equal(write(c.rfd, "hi", 2), 2);
	assert_int_equal(read(p[0], b, sizeof(b)), 2);
	close(p[0]);
	close(peer);
	ctlc_close(&c);		/* closes rfd too */
}

static void
test_timeout_and_absent(void **state)
{
	struct ctlc c;
	int peer;

	pair(&c, &peer);
	assert_int_equal(ctlc_getline(&c, 100), -1);
	close(peer);
	ctlc_close(&c);
	assert_int_equal(ctlc_open(&c, "/nonexistent/moat-test.sock"), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(c.fd, -1);
	ctlc_close(&c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_encoding),
		cmocka_unit_test(test_send_with_fds),
		cmocka_unit_test(test_answer_ok),
		cmocka_unit_test(test_answer_refused),
		cmocka_unit_test(test_answer_unanswered),
		cmocka_unit_test(test_answer_silent),
		cmocka_unit_test(test_fd_with_ok),
		cmocka_unit_test(test_timeout_and_absent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
