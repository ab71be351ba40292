/*
 * test_gatewayd_pool.c -- the proxy workers' listening sockets
 * (gatewayd/parent/pool.c) against the real kernel, on loopback only:
 * every connection from one source address reaches the socket whose
 * index is that address modulo the number of sockets, whatever its
 * source port; re-steering over fewer sockets leaves the others idle; a
 * connection queued on a socket nobody accepts from waits there for the
 * next process that does.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../gatewayd/parent/gw.h"
#include "../../gatewayd/parent/proc.h"
#include "../../gatewayd/parent/reload.h"
#include "../../gatewayd/parent/dnsd.h"
#include "../../gatewayd/parent/proxy.h"
#include "../../gatewayd/parent/audit.h"
#include "../../gatewayd/parent/reg.h"
#include "../../gatewayd/parent/ctl.h"
#include "../../gatewayd/parent/team.h"
#include "../../gatewayd/parent/console.h"
#include "../../gatewayd/parent/policy.h"
#include "../../gatewayd/parent/refused.h"
#include "../../gatewayd/parent/grant.h"
#include "../../gatewayd/parent/network.h"
#include "../../gatewayd/parent/drift.h"
#include "../../gatewayd/parent/hostnet.h"
#include "../../gatewayd/parent/egress.h"
#include "../../gatewayd/parent/budgets.h"
#include "../../gatewayd/parent/metrics.h"
#include "../../gatewayd/parent/ha.h"

#define MAXN	4

static uint16_t
port_of(int fd)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);

	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
	return ntohs(sin.sin_port);
}

/* n sockets of one group on 127.0.0.1, steered over n. */
static void
group(int *fds, unsigned n)
{
	struct moat_addr lo;
	unsigned i;

	assert_int_equal(addr_parse("127.0.0.1", &lo), 0);
	for (i = 0; i < n; i++) {
		fds[i] = pool_socket(&lo, i ? port_of(fds[0]) : 0, i, n, false);
		assert_true(fds[i] >= 0);
		assert_int_equal(fcntl(fds[i], F_SETFL, O_NONBLOCK), 0);
	}
}

/* Connect from 127.0.0.src to port; the client socket. */
static int
dial(uint8_t src, uint16_t port)
{
	struct sockaddr_in from = { .sin_family = AF_INET }, to = from;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	from.sin_addr.s_addr = htonl(0x7f000000u | src);
	to.sin_addr.s_addr = htonl(0x7f000001u);
	to.sin_port = htons(port);
	assert_int_equal(bind(fd, (struct sockaddr *)&from, sizeof(from)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	return fd;
}

/* Which of the n listeners holds the one connection queued (waits for
 * it: the handshake has completed on connect, the accept queue is
 * filled in the same softirq). */
static int
which(const int *fds, unsigned n)
{
	struct pollfd pfd[MAXN];
	unsigned i;
	int c, got = -1;

	for (i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ fds[i], POLLIN, 0 };
	assert_int_equal(poll(pfd, n, 10000) > 0, 1);
	for (i = 0; i < n; i++)
		if ((c = accept(fds[i], NULL, NULL)) >= 0) {
			assert_int_equal(got, -1);	/* only one */
			got = (int)i;
			close(c);
		}
	return got;
}

static void
steer_n(unsigned n)
{
	int fds[MAXN], c;
	unsigned i, src, k;

	group(fds, n);
	for (src = 2; src < 20; src++)
		for (k = 0; k < 3; k++) {	/* new source ports each time */
			c = dial((uint8_t)src, port_of(fds[0]));
			assert_int_equal(which(fds, n),
			    (int)((0x7f000000u | src) % n));
			close(c);
		}
	for (i = 0; i < n; i++)
		close(fds[i]);
}

static void
steer_two(void **state)
{
	steer_n(2);
}

static void
steer_three(void **state)
{
	steer_n(3);
}

/* A reload to fewer workers re-steers the group; the sockets past it
 * stay in the group and get nothing. */
static void
steer_fewer(void **state)
{
	int fds[3], c;
	unsigned src;

	group(fds, 3);
	assert_int_equal(pool_steer(fds[0], 2), 0);
	for (src = 2; src < 14; src++) {
		c = dial((uint8_t)src, port_of(fds[0]));
		assert_int_equal(which(fds, 3), (int)((0x7f000000u | src) % 2));
		close(c);
	}
	close(fds[0]);
	close(fds[1]);
	close(fds[2]);
}

/* A connection queued on a socket whose worker is gone stays queued for
 * whoever accepts from that socket next (the parent keeps it). */
static void
queued_survives(void **state)
{
	int fds[2], c, a;
	uint8_t src = 3;		/* 0x7f000003 % 2 == 1 */
	char b;

	group(fds, 2);
	c = dial(src, port_of(fds[0]));
	assert_int_equal(write(c, "x", 1), 1);
	/* nobody accepts for a while; the other worker's socket never
	 * sees it; then a new worker accepts from the same socket */
	assert_int_equal(poll(&(struct pollfd){ fds[1], POLLIN, 0 }, 1,
	    10000), 1);
	assert_int_equal(accept(fds[0], NULL, NULL), -1);
	assert_int_equal(errno, EAGAIN);
	a = accept(fds[1], NULL, NULL);
	assert_true(a >= 0);
	assert_int_equal(read(a, &b, 1), 1);
	assert_int_equal(b, 'x');
	close(a);
	close(c);
	close(fds[0]);
	close(fds[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(steer_two),
		cmocka_unit_test(steer_three),
		cmocka_unit_test(steer_fewer),
		cmocka_unit_test(queued_survives),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
