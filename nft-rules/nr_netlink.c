/*
 * nr_netlink.c -- talking to nf_tables: batches, acks and dumps.  The
 * transactions built on them (probe, apply, flush, set_add) are in
 * nr_apply.c, which calls down into this file and never the reverse.
 *
 * A batch is sent with one sendmsg.  Only its last message asks for an
 * ack; the kernel reports every failing message anyway (and a failed
 * commit against the batch's first sequence number) before that ack, so
 * reading up to it tells "all committed" from "nothing changed".
 */
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <libnftnl/batch.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "nr_int.h"
#include "nr_nl.h"

#define BATCH_PAGE	(256 * 1024)
#define BATCH_OVERRUN	(64 * 1024)

void
nl_seterr(struct nftr_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx->err, sizeof(ctx->err), fmt, ap);
	va_end(ap);
}

struct nftr_ctx *
nftr_ctx_new(void)
{
	struct nftr_ctx *ctx = xcalloc(1, sizeof(*ctx));

	if ((ctx->nl = mnl_socket_open(NETLINK_NETFILTER)) == NULL ||
	    mnl_socket_bind(ctx->nl, 0, MNL_SOCKET_AUTOPID) == -1) {
		if (ctx->nl)
			mnl_socket_close(ctx->nl);
		free(ctx);
		return NULL;
	}
	ctx->portid = mnl_socket_get_portid(ctx->nl);
	ctx->seq = (uint32_t)time(NULL);
	return ctx;
}

void
nftr_ctx_free(struct nftr_ctx *ctx)
{
	if (ctx == NULL)
		return;
	mnl_socket_close(ctx->nl);
	free(ctx);
}

const char *
nftr_error(const struct nftr_ctx *ctx)
{
	return ctx->err[0] ? ctx->err : "no error";
}

/* ---- batches -------------------------------------------------------- */

struct nl_batch *
batch_new(struct nftr_ctx *ctx, bool ack_all)
{
	struct nl_batch *b = xcalloc(1, sizeof(*b));

	if ((b->b = nftnl_batch_alloc(BATCH_PAGE, BATCH_OVERRUN)) == NULL)
		fatalx("out of memory");
	b->ctx = ctx;
	b->ack_all = ack_all;
	b->first_seq = ctx->seq;
	nftnl_batch_begin(nftnl_batch_buffer(b->b), ctx->seq++);
	nftnl_batch_update(b->b);
	return b;
}

void
batch_free(struct nl_batch *b)
{
	size_t i;

	if (b == NULL)
		return;
	for (i = 0; i < b->ndesc; i++)
		free(b->desc[i]);
	free(b->desc);
	nftnl_batch_free(b->b);
	free(b);
}

/* Start a message; what describes it in error messages. */
struct nlmsghdr *
batch_msg(struct nl_batch *b, uint16_t type, int family, uint16_t flags,
    const char *what)
{
	struct nlmsghdr *nlh;

	if (b->ndesc == b->capdesc) {
		b->capdesc = b->capdesc ? b->capdesc * 2 : 64;
		b->desc = xreallocarray(b->desc, b->capdesc, sizeof(char *));
	}
	b->desc[b->ndesc++] = xstrdup(what);
	b->last_seq = b->ctx->seq;
	nlh = nftnl_nlmsg_build_hdr(nftnl_batch_buffer(b->b), type,
	    (uint16_t)family, flags | (b->ack_all ? NLM_F_ACK : 0),
	    b->ctx->seq++);
	b->last = nlh;
	return nlh;
}

void
batch_next(struct nl_batch *b)
{
	if (nftnl_batch_update(b->b) == -1)
		fatalx("out of memory");
}

static const char *
batch_desc(const struct nl_batch *b, uint32_t seq)
{
	if (seq == b->first_seq)
		return "the transaction (commit)";
	if (seq > b->first_seq && seq - b->first_seq - 1 < b->ndesc)
		return b->desc[seq - b->first_seq - 1];
	return "an unknown message";
}

static size_t
batch_size(struct nl_batch *b, struct iovec **iovp, int *niov)
{
	struct iovec *iov;
	size_t total = 0;
	int i, n = nftnl_batch_iovec_len(b->b);

	iov = xreallocarray(NULL, (size_t)n, sizeof(*iov));
	nftnl_batch_iovec(b->b, iov, (uint32_t)n);
	for (i = 0; i < n; i++)
		total += iov[i].iov_len;
	*iovp = iov;
	*niov = n;
	return total;
}

int
batch_send(struct nl_batch *b)
{
	struct sockaddr_nl snl = { .nl_family = AF_NETLINK };
	struct msghdr msg = { 0 };
	struct iovec *iov;
	size_t total;
	int niov, fd = mnl_socket_get_fd(b->ctx->nl), sz;
	ssize_t r;

	total = batch_size(b, &iov, &niov);
	/* The kernel takes the whole batch as one skb. */
	sz = total + 65536 > (size_t)INT32_MAX / 2 ? INT32_MAX / 2 :
	    (int)(total + 65536);
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) == -1)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	msg.msg_name = &snl;
	msg.msg_namelen = sizeof(snl);
	msg.msg_iov = iov;
	msg.msg_iovlen = (size_t)niov;
	r = sendmsg(fd, &msg, 0);
	free(iov);
	if (r == -1) {
		nl_seterr(b->ctx, "netlink send (%zu bytes): %s", total,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* Read acks up to the one for the batch's last message. */
static int
batch_recv(struct nl_batch *b, int *firsterr)
{
	char buf[MNL_SOCKET_BUFFER_SIZE * 8];
	struct nftr_ctx *ctx = b->ctx;
	bool done = false;
	ssize_t n;

	*firsterr = 0;
	while (!done) {
		struct nlmsghdr *nlh;
		int len;

		n = mnl_socket_recvfrom(ctx->nl, buf, sizeof(buf));
		if (n == -1) {
			nl_seterr(ctx, "netlink receive: %s", strerror(errno));
			return -1;
		}
		len = (int)n;
		for (nlh = (struct nlmsghdr *)buf; mnl_nlmsg_ok(nlh, len);
		    nlh = mnl_nlmsg_next(nlh, &len)) {
			struct nlmsgerr *e;

			if (nlh->nlmsg_type != NLMSG_ERROR)
				continue;
			e = mnl_nlmsg_get_payload(nlh);
			if (e->error != 0 && *firsterr == 0) {
				*firsterr = -e->error;
				nl_seterr(ctx, "kernel refused %s: %s",
				    batch_desc(b, nlh->nlmsg_seq),
				    strerror(-e->error));
			}
			if (nlh->nlmsg_seq == b->last_seq)
				done = true;
		}
	}
	return *firsterr ? -1 : 0;
}

/* Send and wait.  commit=false leaves out the end marker: the kernel
 * then checks every message and throws the transaction away. */
int
batch_run(struct nl_batch *b, bool commit)
{
	int err;

	if (b->ndesc == 0)
		return 0;
	/* The last message must ask for an ack: that is how we know the
	 * kernel is done with the batch. */
	b->last->nlmsg_flags |= NLM_F_ACK;
	if (commit) {
		nftnl_batch_end(nftnl_batch_buffer(b->b), b->ctx->seq++);
		batch_next(b);
	}
	if (batch_send(b) == -1)
		return -1;
	if (batch_recv(b, &err) == -1) {
		if (err != 0)
			errno = err;	/* ENOENT: no such object */
		return -1;
	}
	return 0;
}

/* ---- dumps ---------------------------------------------------------- */

/* Send a GET request; call cb for each answer until NLMSG_DONE.  Returns
 * 0, or -1 with errno (ENOENT when the table does not exist). */
int
nl_dump(struct nftr_ctx *ctx, struct nlmsghdr *req,
    int (*cb)(const struct nlmsghdr *, void *), void *arg)
{
	char buf[MNL_SOCKET_BUFFER_SIZE * 8];
	uint32_t seq = req->nlmsg_seq;
	ssize_t n;
	int r;

	if (mnl_socket_sendto(ctx->nl, req, req->nlmsg_len) == -1) {
		nl_seterr(ctx, "netlink send: %s", strerror(errno));
		return -1;
	}
	for (;;) {
		n = mnl_socket_recvfrom(ctx->nl, buf, sizeof(buf));
		if (n == -1) {
			nl_seterr(ctx, "netlink receive: %s", strerror(errno));
			return -1;
		}
		r = mnl_cb_run(buf, (size_t)n, seq, ctx->portid, cb, arg);
		if (r == -1) {
			if (errno != ENOENT)
				nl_seterr(ctx, "netlink dump: %s",
				    strerror(errno));
			return -1;
		}
		if (r == MNL_CB_STOP)
			return 0;
	}
}

/* ---- probe ---------------------------------------------------------- */

/* Like batch_recv, but the first two messages are optional features and
 * the rest must all succeed. */
int
probe_recv(struct nl_batch *b, unsigned *features)
{
	char buf[MNL_SOCKET_BUFFER_SIZE * 8];
	struct nftr_ctx *ctx = b->ctx;
	bool done = false, bad = false;
	ssize_t n;

	*features = NFTR_F_OWNER | NFTR_F_PERSIST;
	while (!done) {
		struct nlmsghdr *nlh;
		int len;

		if ((n = mnl_socket_recvfrom(ctx->nl, buf, sizeof(buf))) == -1) {
			nl_seterr(ctx, "netlink receive: %s", strerror(errno));
			return -1;
		}
		len = (int)n;
		for (nlh = (struct nlmsghdr *)buf; mnl_nlmsg_ok(nlh, len);
		    nlh = mnl_nlmsg_next(nlh, &len)) {
			struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
			uint32_t i = nlh->nlmsg_seq - b->first_seq;

			if (nlh->nlmsg_type != NLMSG_ERROR)
				continue;
			if (nlh->nlmsg_seq == b->last_seq)
				done = true;
			if (e->error == 0)
				continue;
			if (i == 1)
				*features &= ~(unsigned)NFTR_F_OWNER;
			else if (i == 2)
				*features &= ~(unsigned)NFTR_F_PERSIST;
			else if (!bad) {
				bad = true;
				nl_seterr(ctx, "kernel lacks a feature for "
				    "%s: %s", batch_desc(b, nlh->nlmsg_seq),
				    strerror(-e->error));
			}
		}
	}
	return bad ? -1 : 0;
}
