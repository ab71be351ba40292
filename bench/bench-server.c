/*
 * bench-server.c -- the HTTPS server the proxy benchmark measures against
 * (bench/proxy-bench.sh builds it; `make` does not).  A thread per
 * connection, HTTP/1.1 keep-alive, each response one SSL_write (head and
 * body together, TCP_NODELAY), so a small request costs one round trip and
 * no delayed ACK:
 *   GET /small        200, 13-byte body
 *   GET /big?n=BYTES  200, BYTES of zeros in 64 KiB records
 * It stops by itself after --lifetime seconds.  CERT "-" serves plain
 * HTTP (the keep-alive request-rate rows of forward proxies).
 *
 *   bench-server ADDR PORT CERT KEY LIFETIME_S
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static SSL_CTX *ctx;		/* NULL: plain HTTP */
static char zeros[65536];
static __thread int plain_fd;

static int
io_write(SSL *s, const char *buf, int len)
{
	return s != NULL ? SSL_write(s, buf, len) :
	    (int)write(plain_fd, buf, (size_t)len);
}

static int
io_read(SSL *s, char *buf, int len)
{
	return s != NULL ? SSL_read(s, buf, len) :
	    (int)read(plain_fd, buf, (size_t)len);
}

static int
send_all(SSL *s, const char *buf, size_t len)
{
	while (len > 0) {
		int n = io_write(s, buf, len > 65536 ? 65536 : (int)len);

		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One request head in buf[0..len); returns 0 to keep the connection. */
static int
serve(SSL *s, const char *head)
{
	char out[512];
	unsigned long long n = 0;
	const char *q;
	int hl;

	if (strncmp(head, "GET /big", 8) == 0) {
		if ((q = strstr(head, "n=")) != NULL)
			n = strtoull(q + 2, NULL, 10);
		hl = snprintf(out, sizeof(out), "HTTP/1.1 200 OK\r\n"
		    "Content-Type: application/octet-stream\r\n"
		    "Content-Length: %llu\r\n\r\n", n);
		if (send_all(s, out, (size_t)hl) == -1)
			return -1;
		while (n > 0) {
			size_t c = n > sizeof(zeros) ? sizeof(zeros) : n;

			if (send_all(s, zeros, c) == -1)
				return -1;
			n -= c;
		}
		return 0;
	}
	hl = snprintf(out, sizeof(out), "HTTP/1.1 200 OK\r\n"
	    "Content-Type: text/plain\r\nContent-Length: 13\r\n\r\n"
	    "hello, bench\n");
	return send_all(s, out, (size_t)hl);
}

static void *
conn_main(void *arg)
{
	int fd = (int)(intptr_t)arg, one = 1, n;
	char buf[8192];
	size_t len = 0;
	char *end;
	SSL *s = NULL;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	plain_fd = fd;
	if (ctx != NULL) {
		s = SSL_new(ctx);
		SSL_set_fd(s, fd);
		if (SSL_accept(s) != 1)
			goto out;
	}
	for (;;) {
		n = io_read(s, buf + len, (int)(sizeof(buf) - 1 - len));
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		while ((end = strstr(buf, "\r\n\r\n")) != NULL) {
			*end = '\0';
			if (serve(s, buf) == -1)
				goto out;
			end += 4;
			len -= (size_t)(end - buf);
			memmove(buf, end, len + 1);
		}
		if (len >= sizeof(buf) - 1)
			break;
	}
out:
	SSL_free(s);
	close(fd);
	return NULL;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	pthread_attr_t at;
	pthread_t t;
	int lfd, fd, one = 1;

	if (argc != 6) {
		fprintf(stderr, "usage: bench-server ADDR PORT CERT KEY "
		    "LIFETIME_S\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	alarm((unsigned)atoi(argv[5]));		/* stops by itself */
	if (strcmp(argv[3], "-") == 0)
		;	/* plain HTTP */
	else if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL ||
	    SSL_CTX_use_certificate_chain_file(ctx, argv[3]) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, argv[4], SSL_FILETYPE_PEM) != 1) {
		ERR_print_errors_fp(stderr);
		return 1;
	}
	sin.sin_port = htons((uint16_t)atoi(argv[2]));
	if (inet_pton(AF_INET, argv[1], &sin.sin_addr) != 1 ||
	    (lfd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(lfd, 4096) == -1) {
		perror("bench-server");
		return 1;
	}
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 128 * 1024);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	for (;;) {
		if ((fd = accept(lfd, NULL, NULL)) == -1)
			continue;
		if (pthread_create(&t, &at, conn_main, (void *)(intptr_t)fd))
			close(fd);
	}
}
