/*
 * bench-server.c -- the HTTPS server the proxy benchmark measures against
 * (bench/proxy-bench.sh builds it; `make` does not).  A thread per
 * connection, HTTP/1.1 keep-alive, each response one SSL_write (head and
 * body together, TCP_NODELAY), so a small request costs one round trip and
 * no delayed ACK:
 *   GET /small        200, 13-byte body
 *   GET /big?n=BYTES  200, BYTES of zeros in 64 KiB records
 *   POST /v1/messages?n=BYTES
 *                     an API call (bench/agent-workload.sh): the request
 *                     body is read and dropped, the answer is BYTES of
 *                     JSON-like text in one write
 *   POST /v1/messages?n=BYTES&stream=EVENTS
 *                     the same as an SSE stream: EVENTS chunks of
 *                     "data: ...", one write each
 *   GET /stats        how the API calls' Authorization looked (below)
 * With KEYFILE, each API call's Authorization header is compared with
 * "Bearer " and the file's first line: GET /stats counts the calls that
 * carried the real key, the placeholder, no header or something else.
 * It stops by itself after --lifetime seconds.  CERT "-" serves plain
 * HTTP (the keep-alive request-rate rows of forward proxies).
 *
 *   bench-server ADDR PORT CERT KEY LIFETIME_S [KEYFILE [PLACEHOLDER]]
 */
#define _GNU_SOURCE		/* strcasestr */
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
static char text[65536];	/* API answers: printable, never a key */
static char want_auth[512];	/* "Bearer KEY", empty: not checked */
static const char *placeholder;
/* API calls by what their Authorization held: real key, placeholder,
 * none, anything else */
enum { AUTH_REAL, AUTH_PLACEHOLDER, AUTH_NONE, AUTH_OTHER, AUTH_N };
static unsigned long auth_count[AUTH_N];
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

static unsigned long long
query_num(const char *head, const char *key)
{
	const char *eol = strstr(head, "\r\n"), *q = strstr(head, key);

	return q != NULL && (eol == NULL || q < eol) ?
	    strtoull(q + strlen(key), NULL, 10) : 0;
}

static void
count_auth(const char *head)
{
	const char *h = strcasestr(head, "\r\nAuthorization:");
	char v[512];
	size_t n;
	int k;

	if (want_auth[0] == '\0')
		return;
	if (h == NULL)
		k = AUTH_NONE;
	else {
		h += 16;
		while (*h == ' ')
			h++;
		n = strcspn(h, "\r");
		snprintf(v, sizeof(v), "%.*s", (int)n, h);
		k = strcmp(v, want_auth) == 0 ? AUTH_REAL :
		    placeholder != NULL && strstr(v, placeholder) != NULL ?
		    AUTH_PLACEHOLDER : AUTH_OTHER;
	}
	__atomic_add_fetch(&auth_count[k], 1, __ATOMIC_RELAXED);
}

/* An API call: n bytes of text in one write, or as SSE events. */
static int
serve_api(SSL *s, const char *head)
{
	unsigned long long n = query_num(head, "n="), ev = query_num(head, "stream=");
	char out[65536 + 512];
	int hl;

	count_auth(head);
	if (n > sizeof(text))
		n = sizeof(text);
	if (ev == 0) {
		hl = snprintf(out, 512, "HTTP/1.1 200 OK\r\n"
		    "Content-Type: application/json\r\n"
		    "Content-Length: %llu\r\n\r\n", n);
		memcpy(out + hl, text, n);
		return send_all(s, out, (size_t)hl + n);
	}
	hl = snprintf(out, sizeof(out), "HTTP/1.1 200 OK\r\n"
	    "Content-Type: text/event-stream\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n");
	if (send_all(s, out, (size_t)hl) == -1)
		return -1;
	for (unsigned long long i = 0; i < ev; i++) {
		size_t d = n / ev > 16 ? n / ev - 16 : 1;

		hl = snprintf(out, sizeof(out), "%zx\r\ndata: %.*s\n\n\r\n",
		    d + 8, (int)d, text);
		if (send_all(s, out, (size_t)hl) == -1)
			return -1;
	}
	return send_all(s, "0\r\n\r\n", 5);
}

static int
serve_stats(SSL *s)
{
	char out[512], body[256];
	int bl, hl;

	bl = snprintf(body, sizeof(body), "real=%lu placeholder=%lu none=%lu "
	    "other=%lu\n", auth_count[AUTH_REAL], auth_count[AUTH_PLACEHOLDER],
	    auth_count[AUTH_NONE], auth_count[AUTH_OTHER]);
	hl = snprintf(out, sizeof(out), "HTTP/1.1 200 OK\r\n"
	    "Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s",
	    bl, body);
	return send_all(s, out, (size_t)hl);
}

/* One request head in buf[0..len); returns 0 to keep the connection. */
static int
serve(SSL *s, const char *head)
{
	if (strncmp(head, "POST /v1/", 9) == 0)
		return serve_api(s, head);
	if (strncmp(head, "GET /stats", 10) == 0)
		return serve_stats(s);
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

/* A request's Content-Length (its body is read and dropped), 0 if none. */
static size_t
body_len(const char *head)
{
	const char *h = strcasestr(head, "\r\nContent-Length:");

	return h != NULL ? (size_t)strtoull(h + 17, NULL, 10) : 0;
}

static void *
conn_main(void *arg)
{
	int fd = (int)(intptr_t)arg, one = 1, n;
	char buf[16384];
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
			size_t hl = (size_t)(end - buf) + 4, cl;

			*end = '\0';
			cl = body_len(buf);
			if (hl + cl >= sizeof(buf))
				goto out;	/* bodies must fit the buffer */
			if (len < hl + cl) {	/* the rest of the body is to come */
				*end = '\r';
				break;
			}
			if (serve(s, buf) == -1)
				goto out;
			len -= hl + cl;
			memmove(buf, buf + hl + cl, len + 1);
		}
		if (len >= sizeof(buf) - 1)
			break;
	}
out:
	SSL_free(s);
	close(fd);
	return NULL;
}

static int
load_key(const char *path)
{
	char line[400];
	FILE *f = fopen(path, "r");

	if (f == NULL || fgets(line, sizeof(line), f) == NULL) {
		perror(path);
		return -1;
	}
	fclose(f);
	line[strcspn(line, "\r\n")] = '\0';
	snprintf(want_auth, sizeof(want_auth), "Bearer %s", line);
	return 0;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	pthread_attr_t at;
	pthread_t t;
	int lfd, fd, one = 1;

	if (argc < 6 || argc > 8) {
		fprintf(stderr, "usage: bench-server ADDR PORT CERT KEY "
		    "LIFETIME_S [KEYFILE [PLACEHOLDER]]\n");
		return 2;
	}
	if (argc > 6 && load_key(argv[6]) == -1)
		return 1;
	placeholder = argc > 7 ? argv[7] : NULL;
	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = "abcdefghijklmnopqrstuvwxyz {}:,\"0123456789"[i % 42];
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
