/*
 * audit.c -- audit events as JSON (see audit.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "ipc.h"
#include "log.h"

static int audit_fd = -1;

void
audit_init(int ipcfd)
{
	audit_fd = ipcfd;
}

/* Append s as a JSON string; anything outside printable ASCII becomes
 * \u00XX so the payload stays what lib/ipc.c accepts. */
static size_t
json_str(char *buf, size_t off, size_t cap, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	if (off + 2 >= cap)
		return off;
	buf[off++] = '"';
	for (; *s && off + 8 < cap; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\') {
			buf[off++] = '\\';
			buf[off++] = (char)ch;
		} else if (ch < 0x20 || ch >= 0x7f) {
			memcpy(buf + off, "\\u00", 4);
			buf[off + 4] = hex[ch >> 4];
			buf[off + 5] = hex[ch & 15];
			off += 6;
		} else
			buf[off++] = (char)ch;
	}
	buf[off++] = '"';
	return off;
}

void
audit(const char *event, ...)
{
	char buf[2048];
	const char *k, *v;
	size_t off = 0;
	va_list ap;

	off += (size_t)snprintf(buf, sizeof(buf), "{\"source\":\"proxy\","
	    "\"event\":");
	off = json_str(buf, off, sizeof(buf), event);
	va_start(ap, event);
	while ((k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, const char *);
		if (v == NULL || off + 8 >= sizeof(buf))
			continue;
		buf[off++] = ',';
		off = json_str(buf, off, sizeof(buf), k);
		buf[off++] = ':';
		/* A port is a number in every audit event, as in gatewayd's;
		 * so are a request's status, size and retry delay. */
		if ((strcmp(k, "port") == 0 || strcmp(k, "status") == 0 ||
		    strcmp(k, "bytes") == 0 || strcmp(k, "retry_after") == 0) &&
		    v[0] != '\0' &&
		    strspn(v, "0123456789") == strlen(v) && strlen(v) <= 20 &&
		    off + strlen(v) + 2 < sizeof(buf)) {
			memcpy(buf + off, v, strlen(v));
			off += strlen(v);
		} else
			off = json_str(buf, off, sizeof(buf), v);
	}
	va_end(ap);
	buf[off++] = '}';
	buf[off] = '\0';
	if (audit_fd >= 0 && ipc_send(audit_fd, IPC_AUDIT, 0, buf, off) == 0)
		return;
	log_info("audit %s", buf);
}
