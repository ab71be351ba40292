/*
 * parent/audit.c -- the audit log: one JSON object per line, to a file (0640,
 * reopened on SIGUSR1 for rotation), to syslog, and to every control
 * client following it with "log -f".
 *
 * The file gets every line.  Syslog is for a person reading
 * /var/log/auth.log: the children's events (refusals, mostly) are
 * rate-limited there, with a count of what was left out, and read-only
 * control polls (status, sandboxes, list, counters) are not sent at all.
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

#include "gw.h"
#include "audit.h"
#include "refused.h"
#include "metrics.h"
#include "../metrics/metrics.h"
#include "json.h"
#include "log.h"

static void audit_rotate(struct gw *);
static void held_flush(struct gw *);

/*
 * The lines of one child's message (a proxy worker sends the events of a
 * turn of its loop together) are written to the file with one write:
 * while held.on, audit_write_to appends here, and held_flush writes it
 * out, before a rotation and at the message's end.
 */
static struct {
	char		*buf;
	size_t		 len, cap;
	uint64_t	 lines;
	bool		 on;
} held;

int
audit_open(struct gw *gw)
{
	struct stat st;

	if (audit_of(gw)->audit_path == NULL) {
		if (gw->opts.audit_path != NULL)
			audit_of(gw)->audit_path = xstrdup(gw->opts.audit_path);
		else {
			/* Where a Debian admin looks, rotated by the
			 * logrotate snippet `make install` puts in place. */
			audit_of(gw)->audit_path = xstrdup(GW_AUDIT_DEFAULT);
			if (mkdir(GW_AUDIT_DIR, 0750) == -1 && errno != EEXIST)
				log_warn("mkdir %s", GW_AUDIT_DIR);
		}
	}
	audit_of(gw)->auditfd = open(audit_of(gw)->audit_path, O_WRONLY | O_APPEND | O_CREAT |
	    O_CLOEXEC | O_NOFOLLOW, 0640);
	if (audit_of(gw)->auditfd == -1) {
		log_warn("audit log %s", audit_of(gw)->audit_path);
		return -1;
	}
	audit_of(gw)->audit.size = fstat(audit_of(gw)->auditfd, &st) == 0 ? st.st_size : 0;
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

	held_flush(gw);		/* the held lines belong to this file */
	xasprintf(&old, "%s.1", audit_of(gw)->audit_path);
	gone = count_lines(old);
	if (rename(audit_of(gw)->audit_path, old) == -1) {
		log_warn("audit log: rotate %s", audit_of(gw)->audit_path);
		free(old);
		return;
	}
	free(old);
	audit_of(gw)->audit.dropped += gone;
	audit_of(gw)->audit.rotations++;
	audit_reopen(gw);
	audit_of(gw)->audit.size = 0;
	snprintf(json, sizeof(json), "{\"event\":\"audit-rotated\","
	    "\"max_kb\":%u,\"rotations\":%llu,\"dropped_lines\":%llu,"
	    "\"suppressed\":%llu,\"lost\":%llu}", gw->cfg->gw.audit_max_kb,
	    (unsigned long long)audit_of(gw)->audit.rotations,
	    (unsigned long long)audit_of(gw)->audit.dropped,
	    (unsigned long long)audit_of(gw)->audit.suppressed,
	    (unsigned long long)audit_of(gw)->audit.lost);
	audit_write(gw, json);
}

/* Children report what their rate limits left out; keep the totals. */
static void
audit_count(struct gw *gw, const char *json)
{
	const char *p;
	unsigned long long n;

	if (strstr(json, "\"event\":\"refusals-lost\"") != NULL)
		audit_of(gw)->audit.lost++;
	if (strstr(json, "\"event\":\"refusals-suppressed\"") != NULL &&
	    (p = strstr(json, "\"count\":")) != NULL &&
	    sscanf(p + 8, "%llu", &n) == 1)
		audit_of(gw)->audit.suppressed += n;
}

char *
audit_counters(const struct gw *gw)
{
	char *s;

	/* Both sizes in KiB, the file's rounded up: a file with a line in
	 * it is never "0". */
	xasprintf(&s, "audit  lines %llu, size %lld of %u KiB, rotations "
	    "%llu, dropped lines %llu, refusals suppressed %llu, overruns "
	    "%llu\n", (unsigned long long)audit_of(gw)->audit.lines,
	    (long long)(audit_of(gw)->audit.size + 1023) / 1024, gw->cfg->gw.audit_max_kb,
	    (unsigned long long)audit_of(gw)->audit.rotations,
	    (unsigned long long)audit_of(gw)->audit.dropped,
	    (unsigned long long)audit_of(gw)->audit.suppressed,
	    (unsigned long long)audit_of(gw)->audit.lost);
	return s;
}

void
audit_reopen(struct gw *gw)
{
	int old = audit_of(gw)->auditfd;

	if (audit_open(gw) == -1) {
		audit_of(gw)->auditfd = old;	/* keep writing where we were */
		return;
	}
	if (old != -1)
		close(old);
	log_info("audit log reopened");
}

void
audit_close(struct gw *gw)
{
	if (audit_of(gw)->auditfd != -1)
		close(audit_of(gw)->auditfd);
	audit_of(gw)->auditfd = -1;
	free(audit_of(gw)->audit_path);
	audit_of(gw)->audit_path = NULL;
	free(held.buf);
	held.buf = NULL;
	held.cap = 0;
}

/* Syslog's share of the children's events: a token bucket. */
#define SYSLOG_RATE	10	/* lines per second */
#define SYSLOG_BURST	50

static struct {
	double		tokens;
	struct timespec	last;
	unsigned long	skipped;
} sl = { SYSLOG_BURST, { 0, 0 }, 0 };

static bool
syslog_take(void)
{
	struct timespec now;
	double dt;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (sl.last.tv_sec != 0) {
		dt = (double)(now.tv_sec - sl.last.tv_sec) +
		    (double)(now.tv_nsec - sl.last.tv_nsec) / 1e9;
		sl.tokens += dt * SYSLOG_RATE;
		if (sl.tokens > SYSLOG_BURST)
			sl.tokens = SYSLOG_BURST;
	}
	sl.last = now;
	if (sl.tokens < 1) {
		sl.skipped++;
		return false;
	}
	sl.tokens -= 1;
	if (sl.skipped > 0) {
		syslog(LOG_NOTICE | LOG_AUTHPRIV, "audit: %lu event(s) left "
		    "out of syslog (over %d a second); the audit file has "
		    "them all", sl.skipped, SYSLOG_RATE);
		sl.skipped = 0;
	}
	return true;
}

void
audit_write(struct gw *gw, const char *json)
{
	audit_write_to(gw, json, AUDIT_SYSLOG);
}

void
audit_write_to(struct gw *gw, const char *json, enum audit_syslog to)
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
	if (audit_of(gw)->auditfd != -1 && audit_of(gw)->audit.size > 0 && audit_of(gw)->audit.size + n >
	    (off_t)gw->cfg->gw.audit_max_kb * 1024)
		audit_rotate(gw);
	if (audit_of(gw)->auditfd != -1 && held.on) {
		if (held.len + (size_t)n > held.cap) {
			held.cap = (held.len + (size_t)n) * 2;
			held.buf = xreallocarray(held.buf, held.cap, 1);
		}
		memcpy(held.buf + held.len, line, (size_t)n);
		held.len += (size_t)n;
		held.lines++;
		audit_of(gw)->audit.size += n;
		audit_of(gw)->audit.lines++;
	} else if (audit_of(gw)->auditfd != -1 && write(audit_of(gw)->auditfd, line, (size_t)n) != n)
		log_warn("audit log write");
	else if (audit_of(gw)->auditfd != -1) {
		audit_of(gw)->audit.size += n;
		audit_of(gw)->audit.lines++;
	}
	if (to == AUDIT_SYSLOG || (to == AUDIT_SYSLOG_LIMITED && syslog_take()))
		syslog(LOG_NOTICE | LOG_AUTHPRIV, "audit %.*s", n - 1, line);
	if (audit_of(gw)->on_audit_line != NULL)
		audit_of(gw)->on_audit_line(gw, line);
	free(line);
}

/* Keys whose values are counts or ids: written as JSON numbers, so a
 * reader compares them as numbers ("uid":0, not "uid":"0"). */
static bool
numeric(const char *k, const char *v)
{
	static const char *const keys[] = { "uid", "exit", "errors",
	    "flows_cut", "restart_in_s", "count", "port", "pid", "worker",
	    "budget_bytes", "spent_bytes" };
	size_t i, n = strlen(v);

	if (n == 0 || n > 18 || strspn(v, "0123456789") != n ||
	    (n > 1 && v[0] == '0'))
		return false;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(k, keys[i]) == 0)
			return true;
	return false;
}

/* A read-only control request: kept in the file, not in syslog. */
static bool
is_read_only(const char *event, const char *k, const char *v)
{
	static const char *const polls[] = { "status", "sandboxes", "list",
	    "counters" };
	size_t i;

	if (strcmp(event, "control") != 0 || strcmp(k, "verb") != 0)
		return false;
	for (i = 0; i < sizeof(polls) / sizeof(polls[0]); i++)
		if (strcmp(v, polls[i]) == 0)
			return true;
	return false;
}

void
audit_event(struct gw *gw, const char *event, ...)
{
	va_list ap;
	const char *k, *v;
	char *buf = NULL, *ek, *ev, *tmp;
	enum audit_syslog to = AUDIT_SYSLOG;

	xasprintf(&buf, "{\"event\":\"%s\"", event);
	va_start(ap, event);
	while ((k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, const char *);
		if (v != NULL && is_read_only(event, k, v))
			to = AUDIT_NO_SYSLOG;
		ek = json_escape(k);
		ev = json_escape(v ? v : "");
		xasprintf(&tmp, numeric(k, ev) ? "%s,\"%s\":%s" :
		    "%s,\"%s\":\"%s\"", buf, ek, ev);
		free(buf);
		free(ek);
		free(ev);
		buf = tmp;
	}
	va_end(ap);
	xasprintf(&tmp, "%s}", buf);
	free(buf);
	audit_write_to(gw, tmp, to);
	free(tmp);
}

static void
held_flush(struct gw *gw)
{
	ssize_t w;

	if (held.len == 0)
		return;
	w = audit_of(gw)->auditfd == -1 ? -1 : write(audit_of(gw)->auditfd, held.buf, held.len);
	if (w != (ssize_t)held.len) {
		log_warn("audit log write");
		audit_of(gw)->audit.size -= (off_t)held.len;
		audit_of(gw)->audit.lines -= held.lines;
	}
	held.len = 0;
	held.lines = 0;
}

/* Stamp the source so that a child cannot pass itself off as another: a
 * child's own "source" key is dropped when it names the child itself and
 * renamed otherwise. */
static void
audit_child_line(struct gw *gw, struct gw_proc *p, const char *json,
    size_t len)
{
	char self[64], stamp[64], *body, *line, *k;
	size_t n;

	/* A proxy worker's lines say which worker: "source":"proxy","worker":N */
	if (PROC_IS_PROXY(p - gw->procs))
		snprintf(stamp, sizeof(stamp), "\"%s\",\"worker\":%d", p->name,
		    (int)(p - gw->procs - PROC_PROXY));
	else
		snprintf(stamp, sizeof(stamp), "\"%s\"", p->name);
	n = (size_t)snprintf(self, sizeof(self), "{\"source\":\"%s\",", p->name);
	if (len > n && strncmp(json, self, n) == 0) {
		json += n - 1;		/* keep a "{" */
		len -= n - 1;
	}
	body = xmalloc(len + 1);
	memcpy(body, json, len);
	body[len] = '\0';
	while ((k = strstr(body, "\"source\":")) != NULL)
		memcpy(k + 1, "SOURCE", 6);	/* not ours to say */
	while ((k = strstr(body, "\"worker\":")) != NULL)
		memcpy(k + 1, "WORKER", 6);
	if (len <= 2)	/* "{}" */
		xasprintf(&line, "{\"source\":%s}", stamp);
	else
		xasprintf(&line, "{\"source\":%s,%s", stamp, body + 1);
	audit_write_to(gw, line, AUDIT_SYSLOG_LIMITED);	/* mostly refusals */
	if (metrics_of(gw)->metrics != NULL)
		metrics_count(metrics_of(gw)->metrics, p->name, body, len);
	refused_audit(gw, line);
	free(line);
	free(body);
}

static void
audit_init(void *state)
{
	struct gw_audit *st = state;

	st->auditfd = -1;
}

static int
audit_start(struct gw *gw)
{
	return audit_open(gw) == -1 ? -1 : 0;
}

static void
audit_stop(struct gw *gw)
{
	audit_event(gw, "stop", "policy", "left in place", NULL);
	audit_close(gw);
}

const struct gw_module audit_module = {
	.name = "audit",
	.size = sizeof(struct gw_audit),
	.init = audit_init,
	.start = audit_start,
	.stop = audit_stop,
};
/* A child's message: one event a line (see the IPC_AUDIT shape). */
void
audit_child(struct gw *gw, struct gw_proc *p, const char *json, size_t len)
{
	const char *nl;

	held.on = true;
	while ((nl = memchr(json, '\n', len)) != NULL) {
		audit_child_line(gw, p, json, (size_t)(nl - json));
		len -= (size_t)(nl - json) + 1;
		json = nl + 1;
	}
	audit_child_line(gw, p, json, len);
	held_flush(gw);
	held.on = false;
}
