/*
 * signer.c -- the signer process (see signer.h).
 *
 * Order: fork, close every inherited descriptor but the one socket, drop
 * to the signer's user, ask to die with the parent, sign one throw-away
 * leaf so OpenSSL has done its lazy loading, then install seccomp and
 * serve.  Nothing is logged once the filter is in: syslog would need a
 * socket.  The proxy logs what the signer refused.
 */
#include <sys/socket.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509.h>

#include "ipc.h"
#include "log.h"
#include "parent.h"
#include "privdrop.h"
#include "sandbox.h"
#include "signer.h"

/* One request, one answer.  A refused request gets status -1. */
static void
answer(int fd, const struct ca *ca, const struct ipc_hdr *h,
    const struct ipc_sign_req *req)
{
	static union {
		struct ipc_sign_cert m;
		uint8_t raw[IPC_MAX_PAYLOAD];
	} out;
	const unsigned char *p = req->key;
	unsigned char *w;
	EVP_PKEY *pub;
	X509 *leaf = NULL;
	int ll = 0, cl = 0;
	size_t room = sizeof(out.raw) - sizeof(out.m);

	memset(&out.m, 0, sizeof(out.m));
	out.m.status = -1;
	if ((pub = d2i_PUBKEY(NULL, &p, req->keylen)) != NULL &&
	    p == req->key + req->keylen)
		leaf = ca_sign_leaf(ca, req->host, pub);
	if (leaf != NULL && (ll = i2d_X509(leaf, NULL)) > 0 &&
	    (cl = i2d_X509(ca->cert, NULL)) > 0 && (size_t)ll + cl <= room) {
		w = out.m.der;
		i2d_X509(leaf, &w);
		i2d_X509(ca->cert, &w);
		out.m.status = 0;
		out.m.leaflen = (uint16_t)ll;
		out.m.calen = (uint16_t)cl;
	}
	EVP_PKEY_free(pub);
	X509_free(leaf);
	ERR_clear_error();
	if (ipc_send(fd, IPC_SIGN_CERT, h->id, &out, sizeof(out.m) +
	    (out.m.status == 0 ? (size_t)ll + cl : 0)) == -1)
		_exit(0);	/* the proxy is gone */
}

static void __attribute__((noreturn))
serve(int fd, const struct ca *ca, const char *user, pid_t parent)
{
	static union {
		struct ipc_sign_req m;
		uint8_t raw[IPC_MAX_PAYLOAD];
	} in;
	struct ipc_hdr h;
	char err[256];
	EVP_PKEY *probe;
	X509 *x;
	ssize_t n;

	if (privdrop(user) == -1 && privdrop("nobody") == -1)
		_exit(1);
	die_with_parent(parent);
	/* OpenSSL loads what it needs on first use: do that before the
	 * filter, which allows no open(). */
	if ((probe = EVP_EC_gen("P-256")) == NULL ||
	    (x = ca_sign_leaf(ca, "signer.invalid", probe)) == NULL)
		fatalx("signer: cannot sign");
	X509_free(x);
	EVP_PKEY_free(probe);
	if (sandbox_narrow(SANDBOX_SIGNER) == -1)
		fatalx("signer: cannot install its seccomp filter");
	for (;;) {
		n = ipc_recv(fd, &h, in.raw, sizeof(in.raw), err, sizeof(err));
		if (n == 0 || (n == -1 && errno != EINTR))
			_exit(0);	/* the proxy closed its end */
		if (n == -2 || (n > 0 && h.type != IPC_SIGN_REQ))
			_exit(1);	/* a protocol violation is fatal */
		if (n > 0)
			answer(fd, ca, &h, &in.m);
	}
}

/* In the child: keep only fd (moved to 3) and stderr's neighbours. */
static int
only_fd(int fd)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (dup2(fd, 3) == -1)
		return -1;
	close_range(4, ~0U, 0);
	return 3;
}

static pid_t
fork_common(int *fd, int sv[2])
{
	pid_t pid;

	if (ipc_pair(sv) == -1) {
		log_warn("signer: socketpair");
		return -1;
	}
	if ((pid = fork()) == -1) {
		log_warn("signer: fork");
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid > 0) {
		close(sv[1]);
		*fd = sv[0];
	}
	return pid;
}

pid_t
signer_fork(struct ca *ca, const char *user, int *fd)
{
	pid_t parent = getpid(), pid;
	int sv[2];

	if ((pid = fork_common(fd, sv)) != 0)
		return pid;
	serve(only_fd(sv[1]), ca, user, parent);
}

pid_t
signer_fork_load(const char *state_dir, const char *user, int *fd)
{
	pid_t parent = getpid(), pid;
	struct ca ca;
	int sv[2], s;

	if ((pid = fork_common(fd, sv)) != 0)
		return pid;
	s = only_fd(sv[1]);
	if (ca_open(state_dir, &ca) == -1)
		_exit(1);
	serve(s, &ca, user, parent);
}
