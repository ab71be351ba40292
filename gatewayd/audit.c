/*
 * audit.c -- the audit log: one JSON object per line, to a file (0640,
 * reopened on SIGUSR1 for rotation), to syslog, and to every control
 * client following it with "log -f".
 *
 * Callers never pass a secret value here; events name secrets only.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "gatewayd.h"
#include "log.h"

char *
json_escape(const char *s)
{
	char *out = xmalloc(strlen(s) * 6 + 1), *o = out;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			*o++ = '\\';
			*o++ = (char)c;
		} else if (c < 0x20 || c > 0x7e)
			o += sprintf(o, "\\u%04x", c);
		else
			*o++ = (char)c;
	}
	*o = '\0';
	return out;
}

static void audit_rotate(struct gw *);

int
audit_open(struct gw *gw)
{
	struct stat st;

	if (gw->audit_path == NULL) {
		if (gw->opts.audit_path != NULL)
			gw->audit_path = xstrdup(gw->opts.audit_path);
		else
			xasprintf(&gw->audit_path, "%s/audit.log",
			    gw->cfg->gw.state_dir);
	}
	gw->auditfd = open(gw->audit_path, O_WRONLY | O_APPEND | O_CREAT |
	    O_CLOEXEC | O_NOFOLLOW, 0640);
	if (gw->auditfd == -1) {
		log_warn("audit log %s", gw->audit_path);
		return -1;
	}
	gw->audit.size = fstat(gw->auditfd, &st) == 0 ? st.st_size : 0;
	return 0;
}

/* Lines in a file, to count what a rotation throws away. */
static uint64_t
count_lines(const char *path)
{
	char buf[65536];
	uint64_t n = 0;
	ssize_t r, i;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return 0;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		for (i = 0; i < r; i++)
			n += buf[i] == '\n';
	close(fd);
	return n;
}

/*
 * Nothing a guest does may fill the gateway's disk: past audit_max_kb the
 * file becomes FILE.1 (replacing the one before, whose lines are counted
 * as dropped) and a new file starts, so the log takes at most twice
 * audit_max_kb.  The new file opens with what was dropped so far.
 */
static void
audit_rotate(struct gw *gw)
{
	char *old, json[256];
	uint64_t gone;

	xasprintf(&old, "%s.1", gw->audit_path);
	gone = count_lines(old);
	if (rename(gw->audit_path, old) == -1) {
		log_warn("audit log: rotate %s", gw->audit_path);
		free(old);
		return;
	}
	free(old);
	gw->audit.dropped += gone;
	gw->audit.rotations++;
	audit_reopen(gw);
	gw->audit.size = 0;
	snprintf(json, sizeof(json), "{\"event\":\"audit-rotated\","
	    "\"max_kb\":%u,\"rotations\":%llu,\"dropped_lines\":%llu,"
	    "\"suppressed\":%llu,\"lost\":%llu}", gw->cfg->gw.audit_max_kb,
	    (unsigned long long)gw->audit.rotations,
	    (unsigned long long)gw->audit.dropped,
	    (unsigned long long)gw->audit.suppressed,
	    (unsigned long long)gw->audit.lost);
	audit_write(gw, json);
}

/* Children report what their rate limits left out; keep the totals. */
static void
audit_count(struct gw *gw, const char *json)
{
	const char *p;
	unsigned long long n;

	if (strstr(json, "\"event\":\"refusals-lost\"") != NULL)
		gw->audit.lost++;
	if (strstr(json, "\"event\":\"refusals-suppressed\"") != NULL &&
	    (p = strstr(json, "\"count\":")) != NULL &&
	    sscanf(p + 8, "%llu", &n) == 1)
		gw->audit.suppressed += n;
}

char *
audit_counters(const struct gw *gw)
{
	char *s;

	xasprintf(&s, "audit  lines %llu, size %lld of %u KiB, rotations "
	    "%llu, dropped lines %llu, refusals suppressed %llu, overruns "
	    "%llu\n", (unsigned long long)gw->audit.lines,
	    (long long)gw->audit.size, gw->cfg->gw.audit_max_kb,
	    (unsigned long long)gw->audit.rotations,
	    (unsigned long long)gw->audit.dropped,
	    (unsigned long long)gw->audit.suppressed,
	    (unsigned long long)gw->audit.lost);
	return s;
}

void
audit_reopen(struct gw *gw)
{
	int old = gw->auditfd;

	if (audit_open(gw) == -1) {
		gw->auditfd = old;	/* keep writing where we were */
		return;
	}
	if (old != -1)
		close(old);
	log_info("audit log reopened");
}

void
audit_close(struct gw *gw)
{
	if (gw->auditfd != -1)
		close(gw->auditfd);
	gw->auditfd = -1;
	free(gw->audit_path);
	gw->audit_path = NULL;
}

void
audit_write(struct gw *gw, const char *json)
{
	struct timespec ts;
	struct tm tm;
	char stamp[64], *line;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	/* Prepend the time to the object: {"time":"...",<rest of json>} */
	n = xasprintf(&line, "{\"time\":\"%s.%03ldZ\",%s\n", stamp,
	    ts.tv_nsec / 1000000, json + 1);
	audit_count(gw, json);
	if (gw->auditfd != -1 && gw->audit.size > 0 && gw->audit.size + n >
	    (off_t)gw->cfg->gw.audit_max_kb * 1024)
		audit_rotate(gw);
	if (gw->auditfd != -1 && write(gw->auditfd, line, (size_t)n) != n)
		log_warn("audit log write");
	else if (gw->auditfd != -1) {
		gw->audit.size += n;
		gw->audit.lines++;
	}
	syslog(LOG_NOTICE | LOG_AUTHPRIV, "audit %.*s", n - 1, line);
	control_broadcast_log(gw, line);
	free(line);
}

void
audit_event(struct gw *gw, const char *event, ...)
{
	va_list ap;
	const char *k, *v;
	char *buf = NULL, *ek, *ev, *tmp;

	xasprintf(&buf, "{\"event\":\"%s\"", event);
	va_start(ap, event);
	while ((k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, const char *);
		ek = json_escape(k);
		ev = json_escape(v ? v : "");
		xasprintf(&tmp, "%s,\"%s\":\"%s\"", buf, ek, ev);
		free(buf);
		free(ek);
		free(ev);
		buf = tmp;
	}
	va_end(ap);
	xasprintf(&tmp, "%s}", buf);
	free(buf);
	audit_write(gw, tmp);
	free(tmp);
}
