/*
 * parent_ctlreq.c -- one control request's reply, in the parent.  What a
 * handler replies is gathered here and sent to the control process in
 * IPC_CTL_REPLY chunks when the handler is done; the control process
 * writes them to the client.  The handlers (parent_ctl.c, parent_team.c,
 * parent_secret.c, parent_network.c) call this module; it calls none of
 * them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gatewayd.h"
#include "json.h"
#include "log.h"

void
ctl_req_open(struct ctl_req *r)
{
	r->reply_fd = -1;
	if ((r->out = open_memstream(&r->outbuf, &r->outlen)) == NULL)
		fatalx("out of memory");
}

int
ctl_send(struct gw *gw, uint32_t id, enum ipc_ctl_end end, const char *text,
    size_t len, int fd)
{
	static union {
		struct ipc_ctl_reply m;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	const size_t room = sizeof(u.raw) - sizeof(u.m);
	int ipc = gw->procs[PROC_CONTROL].ipc;
	size_t n;

	do {
		n = len > room ? room : len;
		memset(&u.m, 0, sizeof(u.m));
		u.m.end = (uint8_t)(n == len ? end : IPC_CTL_MORE);
		memcpy(u.m.text, text, n);
		/* A descriptor goes with the first chunk, which has text. */
		if (ipc == -1 || ipc_send_fds(ipc, IPC_CTL_REPLY, id, &u.m,
		    sizeof(u.m) + n, &fd, fd != -1 && n > 0) == -1)
			return -1;	/* the control process is gone */
		if (n > 0)
			fd = -1;
		text += n;
		len -= n;
	} while (len > 0);
	return 0;
}

void
ctl_req_attach_fd(struct ctl_req *r, int fd)
{
	if (r->reply_fd != -1)
		close(r->reply_fd);
	r->reply_fd = fd;
}

void
ctl_req_flush(struct ctl_req *r, enum ipc_ctl_end end)
{
	if (r->out == NULL)
		return;
	fclose(r->out);
	r->out = NULL;
	if (ctl_send(r->gw, r->id, end, r->outbuf, r->outlen,
	    r->reply_fd) == -1)
		log_warnx("control: a reply was lost: the control process "
		    "is gone");
	if (r->reply_fd != -1)
		close(r->reply_fd);
	r->reply_fd = -1;
	free(r->outbuf);
	r->outbuf = NULL;
	r->outlen = 0;
}

void
ctl_reply(struct ctl_req *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(r->out, fmt, ap);
	va_end(ap);
}

/* A JSON string (escaped), or null for NULL. */
void
ctl_reply_jstr(struct ctl_req *r, const char *s)
{
	char *e;

	if (s == NULL) {
		ctl_reply(r, "null");
		return;
	}
	e = json_escape(s);
	ctl_reply(r, "\"%s\"", e);
	free(e);
}

void
ctl_reply_errors(struct ctl_req *r, const char *errors)
{
	const char *p;
	size_t len;

	for (p = errors ? errors : ""; *p != '\0'; p += len) {
		len = strcspn(p, "\n");
		ctl_reply(r, "error: %.*s\n", (int)len, p);
		if (p[len] == '\n')
			len++;
	}
}

void
ctl_refuse(struct ctl_req *r, const char *sandbox, const char *fmt, ...)
{
	char uid[16], *msg;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		fatalx("out of memory");
	va_end(ap);
	snprintf(uid, sizeof(uid), "%u", (unsigned)r->uid);
	audit_event(r->gw, "control-refused", "uid", uid, "user", r->user,
	    "verb", r->argv[0], "sandbox", sandbox ? sandbox : "",
	    "reason", msg, NULL);
	ctl_reply(r, "error: %s\n", msg);
	free(msg);
}

bool
ctl_may_see(const struct ctl_req *r, const char *owner)
{
	return r->admin || (owner != NULL && strcmp(owner, r->user) == 0);
}
