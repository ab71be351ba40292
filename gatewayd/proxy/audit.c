/*
 * audit.c -- audit events as JSON (see audit.h).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "ipc.h"
#include "json.h"
#include "log.h"

static int audit_fd = -1;

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
	if (audit_fd < 0 || j.len > IPC_MAX_PAYLOAD ||
	    ipc_send(audit_fd, IPC_AUDIT, 0, j.buf, j.len) != 0)
		log_info("audit %s", j.buf);
	json_free(&j);
}
