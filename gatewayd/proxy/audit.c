/*
 * audit.c -- audit events as JSON (see audit.h).
 *
 * The events of one turn of the event loop go to gatewayd together: one
 * IPC_AUDIT message holding them a line each, sent after the turn's
 * events are handled (ev_defer), or earlier when the next event would
 * not fit.  Under load a worker thus makes one send for many injected
 * requests, and gatewayd one wake-up and one write for them; an event is
 * never held past the turn that made it.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "ev.h"
#include "ipc.h"
#include "json.h"
#include "log.h"

static int audit_fd = -1;
static struct {
	char	buf[IPC_MAX_PAYLOAD];
	size_t	len;		/* bytes of whole lines in buf */
	bool	deferred;	/* audit_flush is queued for this turn */
} batch;

void
audit_init(int ipcfd)
{
	audit_fd = ipcfd;
}

/* A port is a number in every audit event, as in gatewayd's; so are a
 * request's status, size and retry delay. */
static bool
is_number(const char *k, const char *v)
{
	return (strcmp(k, "port") == 0 || strcmp(k, "status") == 0 ||
	    strcmp(k, "bytes") == 0 || strcmp(k, "retry_after") == 0) &&
	    v[0] != '\0' && strspn(v, "0123456789") == strlen(v) &&
	    strlen(v) <= 20;
}

/* What gatewayd did not take goes to the log, a line an event. */
static void
to_log(const char *lines, size_t len)
{
	const char *nl;

	while (len > 0) {
		nl = memchr(lines, '\n', len);
		log_info("audit %.*s", (int)(nl ? nl - lines : (long)len),
		    lines);
		if (nl == NULL)
			break;
		len -= (size_t)(nl - lines) + 1;
		lines = nl + 1;
	}
}

void
audit_flush(void)
{
	batch.deferred = false;
	if (batch.len == 0)
		return;
	if (ipc_send(audit_fd, IPC_AUDIT, 0, batch.buf, batch.len) != 0)
		to_log(batch.buf, batch.len);
	batch.len = 0;
}

static void
flush_cb(void *arg)
{
	(void)arg;
	audit_flush();
}

/* Queue one event (a JSON object) for this turn's message. */
static void
queue(const char *json, size_t len)
{
	if (batch.len > 0 && batch.len + 1 + len > sizeof(batch.buf))
		audit_flush();
	if (batch.len > 0)
		batch.buf[batch.len++] = '\n';
	memcpy(batch.buf + batch.len, json, len);
	batch.len += len;
	if (!batch.deferred) {
		batch.deferred = true;
		ev_defer(flush_cb, NULL);
	}
}

void
audit(const char *event, ...)
{
	struct json j = JSON_INIT;
	const char *k, *v;
	va_list ap;

	json_begin(&j);
	json_kstr(&j, "source", "proxy");
	json_kstr(&j, "event", event);
	va_start(ap, event);
	while ((k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, const char *);
		if (v == NULL)
			continue;
		if (is_number(k, v))
			json_kraw(&j, k, v);
		else
			json_kstr(&j, k, v);
	}
	va_end(ap);
	json_end(&j);
	if (audit_fd < 0 || j.len > IPC_MAX_PAYLOAD)
		log_info("audit %s", j.buf);
	else
		queue(j.buf, j.len);
	json_free(&j);
}
