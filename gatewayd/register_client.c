/*
 * register_client.c -- `gatewayd register`: a KVM host's side of the
 * registration endpoint (register.c).  Sends one request with the host's
 * key pair, verifies the box against the CA file given, prints the answer
 * and exits 0 only on "ok".
 *
 *   gatewayd register --box ADDR:PORT --ca BOX.crt --cert HOST.crt
 *       --key HOST.key REQUEST...
 */
#include <sys/socket.h>

#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "gatewayd.h"

static int
usage(void)
{
	fputs("usage: gatewayd register --box ADDR:PORT --ca BOX.crt "
	    "--cert HOST.crt --key HOST.key\n"
	    "           (register NAME ADDRESS MAC EGRESS | remove NAME | list)\n",
	    stderr);
	return 2;
}

static int
connect_box(const char *box)
{
	char host[256], *colon;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct timeval tv = { 30, 0 };
	int fd;

	snprintf(host, sizeof(host), "%s", box);
	if ((colon = strrchr(host, ':')) == NULL)
		return -1;
	*colon = '\0';
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd != -1 && connect(fd, ai->ai_addr, ai->ai_addrlen) == -1) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd != -1) {
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	return fd;
}

static SSL_CTX *
client_ctx(const char *ca, const char *cert, const char *key)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (ctx == NULL ||
	    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
	    SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1 ||
	    SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		fprintf(stderr, "gatewayd register: cannot load %s, %s or %s\n",
		    ca, cert, key);
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	return ctx;
}

/* Send the request and "quit"; print the answer.  0 when it ends in ok. */
static int
exchange(SSL *ssl, int argc, char *argv[])
{
	char req[1024] = "", buf[512], last[512] = "";
	size_t n = 0;
	int i, r;

	for (i = 0; i < argc; i++) {
		strncat(req, argv[i], sizeof(req) - strlen(req) - 8);
		strncat(req, i + 1 < argc ? " " : "\nquit\n",
		    sizeof(req) - strlen(req) - 1);
	}
	if (SSL_write(ssl, req, (int)strlen(req)) <= 0)
		return 1;
	while ((r = SSL_read(ssl, buf + n, 1)) == 1) {
		if (buf[n] != '\n' && ++n < sizeof(buf) - 1)
			continue;
		buf[n + 1] = '\0';
		fputs(buf, stdout);
		snprintf(last, sizeof(last), "%s", buf);
		n = 0;
	}
	return strcmp(last, "ok\n") == 0 ? 0 : 1;
}

int
register_main(int argc, char *argv[])
{
	static const struct option lo[] = {
		{ "box", required_argument, NULL, 'b' },
		{ "ca", required_argument, NULL, 'a' },
		{ "cert", required_argument, NULL, 'c' },
		{ "key", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 }
	};
	const char *box = NULL, *ca = NULL, *cert = NULL, *key = NULL;
	SSL_CTX *ctx;
	SSL *ssl;
	int c, fd, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+", lo, NULL)) != -1) {
		switch (c) {
		case 'b': box = optarg; break;
		case 'a': ca = optarg; break;
		case 'c': cert = optarg; break;
		case 'k': key = optarg; break;
		default: return usage();
		}
	}
	if (!box || !ca || !cert || !key || optind >= argc)
		return usage();
	if ((ctx = client_ctx(ca, cert, key)) == NULL)
		return 1;
	if ((fd = connect_box(box)) == -1) {
		fprintf(stderr, "gatewayd register: cannot reach %s\n", box);
		return 3;
	}
	ssl = SSL_new(ctx);
	if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1) {
		fprintf(stderr, "gatewayd register: TLS with %s failed (is "
		    "--ca the box's certificate?)\n", box);
		rc = 1;
	} else
		rc = exchange(ssl, argc - optind, argv + optind);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return rc;
}
