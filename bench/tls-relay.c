/*
 * tls-relay.c -- the simplest TLS-terminating relay, as a lower bound for
 * what an intercepting proxy costs a request (bench/proxy-bench.sh builds
 * it; `make` does not).  For each connection accepted: a thread that ends
 * the client's TLS with one leaf (CERT, KEY), opens TLS to TARGET (the
 * client's SNI sent on and verified against CAFILE), then waits in poll(2)
 * on both sockets and copies what one side's SSL_read gives to the other's
 * SSL_write.  TLS as moat-proxy sets it up (TLS 1.2 at least, the same
 * TLS 1.3 suites with AES-128-GCM first, no tickets to the client); no
 * HTTP parsing, no injection, no policy, no buffers of its own beyond one
 * 16 KiB array, no event loop shared with other connections.  What is left
 * is the kernel's cost of the second TCP connection, a hop through user
 * space, and decrypting and encrypting every record once more.  As each
 * connection ends it prints the CPU time its threads have used so far, all
 * connections together ("cpu_ns N"), which the bench reads.  It stops by
 * itself after LIFETIME_S seconds.
 *
 *   tls-relay LISTEN_ADDR PORT TARGET_ADDR TARGET_PORT CERT KEY CAFILE LIFETIME_S
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SUITES	"TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:" \
		"TLS_CHACHA20_POLY1305_SHA256"

static struct sockaddr_in target = { .sin_family = AF_INET };
static SSL_CTX *srv_ctx, *cli_ctx;
static unsigned long long cpu_total;	/* ns, connections that have ended */

static void
add_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	__atomic_add_fetch(&cpu_total, (unsigned long long)ts.tv_sec *
	    1000000000ULL + (unsigned long long)ts.tv_nsec, __ATOMIC_RELAXED);
}

/* Move what `from` has decrypted to `to`: 1 moved or nothing yet, 0 at
 * the end of the stream or on an error. */
static int
move(SSL *from, SSL *to)
{
	char buf[16384];
	int n, w, off;

	do {
		if ((n = SSL_read(from, buf, sizeof(buf))) <= 0)
			return SSL_get_error(from, n) == SSL_ERROR_WANT_READ;
		for (off = 0; off < n; off += w)
			if ((w = SSL_write(to, buf + off, n - off)) <= 0)
				return 0;
	} while (SSL_pending(from) > 0);
	return 1;
}

static void *
conn_main(void *arg)
{
	int g = (int)(intptr_t)arg, u = -1, one = 1;
	SSL *gs = NULL, *us = NULL;
	const char *sni;
	struct pollfd pf[2];

	setsockopt(g, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if ((gs = SSL_new(srv_ctx)) == NULL || SSL_set_fd(gs, g) != 1 ||
	    SSL_accept(gs) != 1)
		goto out;
	if ((sni = SSL_get_servername(gs, TLSEXT_NAMETYPE_host_name)) == NULL)
		goto out;
	if ((u = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    connect(u, (struct sockaddr *)&target, sizeof(target)) == -1)
		goto out;
	setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if ((us = SSL_new(cli_ctx)) == NULL || SSL_set_fd(us, u) != 1 ||
	    SSL_set_tlsext_host_name(us, sni) != 1 ||
	    SSL_set1_host(us, sni) != 1 || SSL_connect(us) != 1)
		goto out;
	/* A record with no data (a session ticket) returns WANT_READ
	 * instead of blocking for the next one: the other side may be the
	 * one with something to say. */
	SSL_clear_mode(gs, SSL_MODE_AUTO_RETRY);
	SSL_clear_mode(us, SSL_MODE_AUTO_RETRY);
	pf[0] = (struct pollfd){ .fd = g, .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = u, .events = POLLIN };
	for (;;) {
		if (poll(pf, 2, -1) == -1)
			break;
		if ((pf[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    !move(gs, us))
			break;
		if ((pf[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    !move(us, gs))
			break;
	}
out:
	ERR_clear_error();
	SSL_free(us);
	SSL_free(gs);
	if (u >= 0)
		close(u);
	close(g);
	add_cpu();
	fprintf(stderr, "cpu_ns %llu\n",
	    __atomic_load_n(&cpu_total, __ATOMIC_RELAXED));
	return NULL;
}

static SSL_CTX *
context(int server)
{
	SSL_CTX *c = SSL_CTX_new(server ? TLS_server_method() :
	    TLS_client_method());

	if (c == NULL || SSL_CTX_set_ciphersuites(c, SUITES) != 1)
		return NULL;
	SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
	SSL_CTX_set_options(c, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
	    (server ? SSL_OP_NO_TICKET | SSL_OP_CIPHER_SERVER_PREFERENCE |
	    SSL_OP_PRIORITIZE_CHACHA : 0));
	return c;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	pthread_attr_t at;
	pthread_t t;
	int lfd, fd, one = 1;

	if (argc != 9) {
		fprintf(stderr, "usage: tls-relay LISTEN_ADDR PORT TARGET_ADDR "
		    "TARGET_PORT CERT KEY CAFILE LIFETIME_S\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	alarm((unsigned)atoi(argv[8]));		/* stops by itself */
	if ((srv_ctx = context(1)) == NULL || (cli_ctx = context(0)) == NULL ||
	    SSL_CTX_use_certificate_chain_file(srv_ctx, argv[5]) != 1 ||
	    SSL_CTX_use_PrivateKey_file(srv_ctx, argv[6], SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_load_verify_locations(cli_ctx, argv[7], NULL) != 1) {
		ERR_print_errors_fp(stderr);
		return 1;
	}
	SSL_CTX_set_verify(cli_ctx, SSL_VERIFY_PEER, NULL);
	sin.sin_port = htons((uint16_t)atoi(argv[2]));
	target.sin_port = htons((uint16_t)atoi(argv[4]));
	if (inet_pton(AF_INET, argv[1], &sin.sin_addr) != 1 ||
	    inet_pton(AF_INET, argv[3], &target.sin_addr) != 1 ||
	    (lfd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(lfd, 4096) == -1) {
		perror("tls-relay");
		return 1;
	}
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 256 * 1024);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	for (;;) {
		if ((fd = accept(lfd, NULL, NULL)) == -1)
			continue;
		if (pthread_create(&t, &at, conn_main, (void *)(intptr_t)fd))
			close(fd);
	}
}
