/*
 * parent/ctlreq.c -- one control request's reply, in the parent.  What a
 * handler replies is gathered here and sent to the control process in
 * IPC_CTL_REPLY chunks when the handler is done; the control process
 * writes them to the client.  The handlers (parent/ctl.c, parent/team.c,
 * parent/secret.c, parent/network.c) call this module; it calls none of
 * them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gw.h"
#include "audit.h"
#include "ctl.h"
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

bool
ctl_may_own(struct ctl_req *r, const char *sandbox)
{
	char name[40] = "";

	if (r->may_own)
		return true;
	if (!r->has_login) {
		ctl_refuse(r, sandbox, "uid %u has no login name on this host, "
		    "and only a named user can own a sandbox or secret; ask an "
		    "administrator", (unsigned)r->uid);
		return false;
	}
	/* A name too long for userbuf is held as "#UID": not shown. */
	if (r->user[0] != '#')
		snprintf(name, sizeof(name), " \"%s\"", r->user);
	ctl_refuse(r, sandbox, "your login name%s cannot own a sandbox or "
	    "secret: the configuration takes 1 to 32 letters, digits, '.', "
	    "'-' and '_'; ask an administrator", name);
	return false;
}

/* A drop-in (never the main file) that holds a sandbox or secret the
 * caller owns in the running configuration. */
static bool
owned_file(const struct ctl_req *r, const char *file, size_t len)
{
	const struct moat_config *cfg = r->gw->cfg;
	size_t i;

#define OWNED(x)	((x).owner != NULL && strcmp((x).owner, r->user) == 0 && \
	    (x).where.file != NULL && strlen((x).where.file) == len && \
	    strncmp((x).where.file, file, len) == 0)
	if (strlen(cfg->path) == len && strncmp(cfg->path, file, len) == 0)
		return false;
	for (i = 0; i < cfg->nsandboxes; i++)
		if (OWNED(cfg->sandboxes[i]))
			return true;
	for (i = 0; i < cfg->nsecrets; i++)
		if (OWNED(cfg->secrets[i]))
			return true;
#undef OWNED
	return false;
}

/* Is line ("file:line: message") about one of the caller's files, and
 * about no other file? */
static bool
line_is_mine(const struct ctl_req *r, const char *line, size_t len,
    const char *const *mine, size_t nmine)
{
	const char *colon = memchr(line, ':', len), *slash;
	size_t flen, dlen, i;
	bool ok = false;

	if (colon == NULL)
		return false;
	flen = (size_t)(colon - line);
	for (i = 0; i < nmine && !ok; i++)
		ok = strlen(mine[i]) == flen && strncmp(mine[i], line, flen) == 0;
	if (!ok && !owned_file(r, line, flen))
		return false;
	/* "(already used by ... other.conf:3)" names another's file. */
	slash = strrchr(r->gw->cfg->path, '/');
	dlen = slash ? (size_t)(slash - r->gw->cfg->path) + 1 : 0;
	for (i = flen; dlen > 0 && i + dlen <= len; i++)
		if (strncmp(line + i, r->gw->cfg->path, dlen) == 0)
			return false;
	return true;
}

void
ctl_reply_errors(struct ctl_req *r, const char *errors,
    const char *const *mine, size_t nmine)
{
	const char *line, *nl;
	size_t len, hidden = 0;

	for (line = errors; line != NULL && *line != '\0'; line = nl ? nl + 1 :
	    NULL) {
		nl = strchr(line, '\n');
		len = nl ? (size_t)(nl - line) : strlen(line);
		if (r->admin || line_is_mine(r, line, len, mine, nmine))
			ctl_reply(r, "error: %.*s\n", (int)len, line);
		else
			hidden++;
	}
	if (hidden > 0)
		ctl_reply(r, "error: the configuration is not valid in %zu place(s) "
		    "that are not yours; an administrator sees the details in "
		    "the journal\n", hidden);
}
